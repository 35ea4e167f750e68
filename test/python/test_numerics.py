"""Float32 results bit for bit as JAX 0.10.2 computes them on the CPU:
`log` as XLA evaluates it, JAX's forms of derivatives, transformations
outside `jit` without FMAs fused across operations (JAX runs them op by op),
dots accumulating with FMAs (`test/data/numerics/rounding.py`; design.md,
"Rounding as JAX")."""

from helpers import assert_prints_recorded

# Cases that still differ in the last bit: under jit XLA simplifies the
# derivatives of atanh and sqrt in ways Ember does not; JAX's arctan is a
# jitted function, so its derivative fuses 1 + x*x into an FMA even outside
# jit, where Ember fuses nothing.
DIFFERING = {"grad atan", "jit grad atanh", "jit grad sqrt"}


def test_rounding_equals_jax():
    assert_prints_recorded("numerics", "rounding", DIFFERING)


def test_cumulative_extremes_tie_as_jax():
    # Gradients and JVPs of cummax/cummin where elements tie: JAX's
    # associative-scan rule (the tangent shared in the scan tree's
    # proportions), also reversed, along each axis, under jit and vmap, with
    # NaN and infinities (test/data/numerics/cumulative.py).
    assert_prints_recorded("numerics", "cumulative", set())

"""`pl.estimate_cost`: JAX's Pallas cost estimates, the numbers JAX 0.10.2
gives for the same functions (recorded with its `pl.estimate_cost`)."""

import ember as jax
import ember.numpy as jnp
from ember.experimental import pallas as pl

S = jax.ShapeDtypeStruct
_INNER = jax.jit(lambda x, y: jnp.tanh(x @ y) + 1.0)

# (function, argument specs, JAX 0.10.2's (flops, transcendentals, bytes accessed))
CASES = [
    (lambda x, y: jnp.tanh(x @ y) + 1.0, (S((4, 8), jnp.float32), S((8, 16), jnp.float32)),
     (1088, 64, 896)),
    (lambda x: jnp.exp(-x) * x ** 3 - jnp.floor(x), (S((128, 256), jnp.float32),),
     (229376, 32768, 262144)),
    # relu's compare and select, and the sum, have no rule.
    (lambda x, w: jax.nn.relu(jnp.einsum("bij,bjk->bik", x, w)).sum(),
     (S((3, 4, 5), jnp.float32), S((3, 5, 6), jnp.float32)), (720, 0, 604)),
    # A jitted function counts once per call.
    (lambda x, y: _INNER(x, y) * 2 + _INNER(x, y) / jnp.sqrt(jnp.abs(x).sum()),
     (S((4, 8), jnp.float32), S((8, 16), jnp.float32)), (2368, 129, 896)),
]


def test_estimates_equal_jax():
    for fun, specs, want in CASES:
        c = pl.estimate_cost(fun, *specs)
        assert (c.flops, c.transcendentals, c.bytes_accessed) == want


def test_estimate_feeds_a_pallas_call():
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.exp(x_ref[...])

    x = jnp.ones((8, 128), jnp.float32)
    cost = pl.estimate_cost(jnp.exp, x)
    assert (cost.flops, cost.transcendentals, cost.bytes_accessed) == (0, 1024, 8192)
    out = pl.pallas_call(kernel, out_shape=S(x.shape, x.dtype), cost_estimate=cost,
                         interpret=True)(x)
    assert float(out[0, 0]) == float(jnp.exp(1.0))


def test_small_helpers():
    # JAX 0.10.2's pl.align_to, pl.strides_from_shape, pl.delay.
    assert pl.align_to(8, 4) == 8 and pl.align_to(5, 4) == 8
    assert int(pl.align_to(jnp.int32(5), 4)) == 8
    assert pl.strides_from_shape((2, 3, 4)) == (12, 4, 1)

    def kernel(o_ref):
        pl.delay(100)
        o_ref[...] = jnp.ones(o_ref.shape)

    assert float(pl.pallas_call(kernel, out_shape=S((8, 128), jnp.float32),
                                interpret=True)().sum()) == 1024.0

"""Float32 results bit for bit: one line per case with the values' bit
patterns. Run with IMPORT=jax (in a JAX venv) to record `rounding.jax.txt`
(JAX 0.10.2 on the CPU), with IMPORT=ember to compare (test_numerics.py).

The cases are the places where Ember computes what JAX computes in the same
f32 operations (design.md, "Rounding as JAX"): `log` as XLA's CPU backend
evaluates it, JAX's forms of the derivatives (`div(g, x)` for log, ...),
transformations outside `jit` evaluated without fusing products into sums
(JAX runs them op by op) and under `jit` with them (XLA contracts), and dots
that accumulate with FMAs, and subnormals flushed to zero as XLA's CPU code
flushes them (on input and output)."""
import numpy as np
from cases import jax, jnp, shows


def bits(v):
    a = np.asarray(v, np.float32).ravel()
    return " ".join(f"{int(b):08x}" for b in a.view(np.uint32))


show = shows(bits)


rng = np.random.default_rng(7)
x = jnp.asarray(rng.uniform(0.05, 3.0, 64).astype(np.float32))
u = jnp.asarray(rng.uniform(-0.95, 0.95, 64).astype(np.float32))
wide = jnp.asarray(np.concatenate([rng.standard_normal(48) * 20,
                                   [0.0, 1.0, 2.0, 0.5, 1e-30, 3e38]]).astype(np.float32))

show("log", lambda: jnp.log(jnp.abs(wide)))
show("log jit", lambda: jax.jit(jnp.log)(x))
show("log1p", lambda: jnp.log1p(u))
for name, fn, arg in [("log", jnp.log, x), ("log1p", jnp.log1p, u), ("tanh", jnp.tanh, u * 3),
                      ("atan", jnp.arctan, u * 4), ("atanh", jnp.arctanh, u),
                      ("erf", jax.scipy.special.erf, u * 2), ("cbrt", jnp.cbrt, x),
                      ("sqrt", jnp.sqrt, x), ("logistic", jax.nn.sigmoid, u * 5),
                      ("exp", jnp.exp, u), ("sin", jnp.sin, u * 3)]:
    def elementwise_grad(v, fn=fn):
        return jax.vmap(jax.grad(fn))(v)
    show(f"grad {name}", lambda fn=fn, arg=arg: elementwise_grad(arg, fn))
    show(f"jit grad {name}", lambda fn=fn, arg=arg: jax.jit(elementwise_grad)(arg))
show("grad2 tanh", lambda: jax.grad(jax.grad(jnp.tanh))(2.0))
show("grad3 tanh", lambda: jax.grad(jax.grad(jax.grad(jnp.tanh)))(2.0))
show("grad div", lambda: jax.grad(lambda a, b: a / b, argnums=(0, 1))(x[3], x[7]))
show("grad div vec", lambda: jax.grad(lambda a, b: jnp.sum(a / b), argnums=(0, 1))(x, u + 2))

# JAX's logistic-regression example (automatic-differentiation tutorial).
inputs = jnp.array([[0.52, 1.12, 0.77], [0.88, -1.08, 0.15],
                    [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])
W = jnp.asarray(np.array([0.3, -0.7, 1.1], np.float32))
b = jnp.float32(-0.4)


def loss(W, b):
    p = 0.5 * (jnp.tanh((jnp.dot(inputs, W) + b) / 2) + 1)
    return -jnp.sum(jnp.log(p * targets + (1 - p) * (1 - targets)))


show("lr loss", lambda: loss(W, b))
show("lr grad", lambda: jax.grad(loss, argnums=(0, 1))(W, b))
show("lr jit grad", lambda: jax.jit(jax.grad(loss, argnums=(0, 1)))(W, b))
show("lr vjp", lambda: jax.vjp(loss, W, b)[1](jnp.float32(1.0)))
A = jnp.asarray(rng.standard_normal((7, 5)).astype(np.float32))
B = jnp.asarray(rng.standard_normal((5, 9)).astype(np.float32))
v = jnp.asarray(rng.standard_normal(7).astype(np.float32))
show("dot", lambda: (v @ A, A @ B, jnp.dot(inputs, W)))
show("grad dot", lambda: jax.grad(lambda a: jnp.sum(jnp.tanh(v @ a) ** 2))(A))
show("jit grad dot", lambda: jax.jit(jax.grad(lambda a: jnp.sum(jnp.tanh(v @ a) ** 2)))(A))

tiny = jnp.asarray(np.array([1e-39, -3e-40, 1.2e-38, 0.0], np.float32))
show("subnormals", lambda: (tiny * 2, tiny + jnp.float32(1.2e-38), jnp.log(jnp.abs(tiny)),
                            (tiny == 0).astype(jnp.float32), jnp.sum(tiny),
                            jax.jit(lambda v: v * 0.5)(tiny)))
show("subnormal nextafter", lambda: jnp.nextafter(jnp.float32(0), jnp.float32(1)))

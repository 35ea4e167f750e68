"""Unreduced and reduced values in shard_map (JAX's manual mode): in_specs
and out_specs with `unreduced=`/`reduced=`, `pcast` to 'unreduced' and
'reduced', psum of an unreduced value, the types in the body, and
gradients through them (reduced weights get unreduced gradients). Run with
IMPORT=jax (in a JAX venv) to record `unreduced_manual.jax.txt` (JAX
0.10.2), with IMPORT=ember to compare (test_parallel.py)."""
import os

if os.environ["IMPORT"] == "jax":
    import jax; jax.config.update("jax_num_cpu_devices", 2)
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P
else:
    import ember as jax; jax.config.update("jax_num_cpu_devices", 2); import ember.numpy as jnp
    from ember.sharding import PartitionSpec as P
import numpy as np


def show(*v):
    print(*[np.asarray(a).round(4).tolist() for a in v])


jax.set_mesh(jax.make_mesh((2,), ("X",)))
a = jax.device_put(jnp.arange(4.).reshape(2, 2), P(None, "X"))
b = jax.device_put(jnp.arange(4., 8.).reshape(2, 2), P("X", None))


@jax.shard_map(in_specs=(P(None, "X"), P("X", None)), out_specs=P(None, None, unreduced={"X"}))
def matmul_partial(a, b):
    out = a @ b
    o = jax.lax.pcast(out, "X", to="unreduced")
    print("body", jax.typeof(out), jax.typeof(o))
    return o


c = matmul_partial(a, b)
print(jax.typeof(c))
show(jax.reshard(c, P()))


def matmul_loss(a, b):
    return jnp.sum(jax.reshard(matmul_partial(a, b), P(None, None)) ** 2)


ga, gb = jax.grad(matmul_loss, argnums=(0, 1))(a, b)
print(jax.typeof(ga), jax.typeof(gb))
show(ga, gb)
show(*jax.jit(jax.grad(matmul_loss, argnums=(0, 1)))(a, b))
x = jax.device_put(jnp.arange(8 * 4.).reshape(8, 4) / 10, P("X", None))
w = jax.device_put(jnp.arange(4 * 2.).reshape(4, 2) / 10., P(None, None))
w_r = jax.reshard(w, P(None, None, reduced={"X"}))


@jax.shard_map(in_specs=(P("X", None), P(None, None, reduced={"X"})), out_specs=P("X", None))
def apply_layer(x, w):
    print("w in body", jax.typeof(w))
    return jnp.tanh(x @ w)


dw = jax.grad(lambda w, x: jnp.sum(apply_layer(x, w) ** 2))(w_r, x)
print(jax.typeof(dw))
show(jax.reshard(dw, P()), jax.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2))(w, x))


@jax.shard_map(in_specs=(P("X"), P()), out_specs=P())
def g(x, w):
    wr = jax.lax.pcast(w, "X", to="reduced")
    y = jnp.sum(x @ wr, axis=0)
    u = jax.lax.pcast(y, "X", to="unreduced")
    s = jax.lax.psum(u, "X")
    print("wr", jax.typeof(wr), "y", jax.typeof(y), "u", jax.typeof(u), "s", jax.typeof(s))
    return s


show(g(x, w), jax.grad(lambda w: g(x, w).sum())(w), jax.jit(g)(x, w))
xs = jax.device_put(jnp.arange(8.), P("X"))
xu = jnp.einsum("i,i->", xs, xs, out_sharding=P(unreduced={"X"}))
xr = jax.reshard(jnp.arange(4.), P(reduced={"X"}))


@jax.shard_map(in_specs=(P("X"), P(), P(unreduced={"X"}), P(reduced={"X"})),
               out_specs=(P("X"), P(unreduced={"X"}), P(reduced={"X"})))
def f(a, b, c, d):
    print(jax.typeof(a), jax.typeof(b), jax.typeof(c), jax.typeof(d))
    return a, c + c, d


ra, rc, rd = f(xs, jnp.arange(4.), xu, xr)
print(jax.typeof(ra), jax.typeof(rc), jax.typeof(rd))
show(ra, jax.reshard(rc, P()), rd)

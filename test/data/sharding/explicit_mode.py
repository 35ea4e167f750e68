"""Shardings in types (JAX's Explicit mode), auto_axes, abstract meshes and
`out_sharding=`: one line per case. Run with IMPORT=jax (in a JAX venv) to
record `explicit_mode.jax.txt` (JAX 0.10.2), with IMPORT=ember to compare
(test_parallel.py)."""
import os, sys
if os.environ["IMPORT"] == "jax":
    import jax; jax.config.update("jax_num_cpu_devices", 8)
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P, NamedSharding, AxisType, auto_axes, explicit_axes
else:
    import ember as jax; jax.config.update("jax_num_cpu_devices", 8); import ember.numpy as jnp
    from ember.sharding import PartitionSpec as P, NamedSharding, AxisType, auto_axes, explicit_axes
import numpy as np
def show(f):
    try: print(f())
    except Exception as e: print(type(e).__name__, str(e).split("\n")[0])
mesh = jax.make_mesh((2, 4), ("X", "Y"))
jax.set_mesh(mesh)
x = jax.device_put(jnp.arange(32.).reshape(8, 4), P("X", "Y"))
show(lambda: jax.typeof(x))
show(lambda: jax.typeof(x).sharding)
show(lambda: jax.typeof(jnp.sin(x).T))
show(lambda: jax.typeof(jnp.exp(x) * 2 + x))
show(lambda: (jax.typeof(x.sum(0)), jax.typeof(x.max(1)), jax.typeof(x.sum())))
show(lambda: jax.typeof(jnp.argmax(x, axis=1)))
show(lambda: jax.typeof(x.astype(jnp.int32)))
show(lambda: jax.typeof(jnp.where(x > 3, x, 0.)))
show(lambda: jax.typeof(x[None]))
show(lambda: jax.typeof(x.reshape(32)))
show(lambda: jax.typeof(x.reshape(2, 4, 4)))
show(lambda: jax.typeof(x.reshape(4, 8)))
show(lambda: x @ x.T)
show(lambda: jax.typeof(jnp.dot(x, x.T, out_sharding=P("X", None))))
show(lambda: jax.typeof(jnp.einsum("ij,kj->ik", x, x, out_sharding=P(None, "X"))))
y = jax.device_put(jnp.ones((4, 6)), P())
show(lambda: jax.typeof(x @ y))
z = jax.device_put(jnp.ones((8, 4)), P("Y", None))
show(lambda: x + z)
a0 = jax.device_put(np.arange(4).reshape(4, 1), P("X", None))
a1 = jax.device_put(np.arange(8).reshape(1, 8), P(None, "Y"))
show(lambda: jax.typeof(a0 + a1))
b0 = jax.device_put(np.arange(16).reshape(4, 4), P("X", None))
b1 = jax.device_put(np.arange(16).reshape(4, 4), P(None, "X"))
show(lambda: b0 + b1)
@jax.jit
def f(v):
    w = jnp.sin(v)
    print("in jit:", jax.typeof(w), jax.typeof(w.T))
    return w.T
show(lambda: jax.typeof(f(x)))
show(lambda: f(x).sharding)
show(lambda: jax.typeof(f(jnp.ones((8, 4)))))
show(lambda: jax.typeof(f(x)))
show(lambda: jax.typeof(jax.random.normal(jax.random.key(0), (8, 4), out_sharding=P("X", "Y"))))
show(lambda: np.asarray(jax.random.normal(jax.random.key(0), (4,), out_sharding=P("X"))).round(4).tolist())
show(lambda: jax.typeof(jax.jit(lambda v: jax.reshard(v * 2, P(None, "X")))(x)))
@auto_axes
def add2(u, v):
    print("auto mesh:", jax.sharding.get_abstract_mesh())
    return u + v
show(lambda: jax.typeof(add2(b0, b1, out_sharding=P("X", None))))
show(lambda: jax.sharding.get_abstract_mesh())
am = jax.sharding.AbstractMesh((8,), ("A",), (AxisType.Explicit,))
show(lambda: am)
@jax.jit
def g(v):
    with jax.sharding.use_abstract_mesh(am):
        return jax.reshard(v, P("A", None)) * 2
show(lambda: jax.typeof(g(x)))
show(lambda: jax.typeof(jax.vmap(jnp.sin)(x)))
show(lambda: jax.typeof(jax.vmap(jnp.sum)(x)))
show(lambda: jax.typeof(jax.vmap(jnp.sin, in_axes=1)(x)))
show(lambda: jax.typeof(jax.vmap(lambda r: r * 2, in_axes=1, out_axes=1)(x)))
show(lambda: jax.typeof(jax.vmap(lambda r, s: r + s, in_axes=(0, None))(x, jnp.ones(4))))
show(lambda: jax.typeof(jax.grad(lambda v: jnp.sum(v ** 2))(x)))
show(lambda: jax.typeof(jax.jit(jax.grad(lambda v: jnp.sum(jnp.sin(v) * v)))(x)))
show(lambda: jax.typeof(jax.vmap(jax.grad(lambda r: jnp.sum(r ** 3)))(x)))
show(lambda: jax.typeof(x.reshape(4, 8, out_sharding=P("X"))))
show(lambda: jax.typeof(jax.lax.reshape(x, (4, 8), out_sharding=P(None, "Y"))))
show(lambda: jax.config.update("jax_num_cpu_devices", 4))
# 19th session: joins, pads, cumulative ops, sorts, gathers, *_like
jax.set_mesh(mesh)
x = jax.device_put(jnp.arange(32.).reshape(8, 4), P("X", "Y"))
y = jax.device_put(jnp.arange(32.).reshape(8, 4), P("X", None))
show(lambda: (jax.typeof(jnp.concatenate([x, x], 0)), jax.typeof(jnp.concatenate([y, y], 1))))
show(lambda: jax.typeof(jnp.stack([x, x])))
show(lambda: jnp.concatenate([x, y], 1))
show(lambda: (jax.typeof(jnp.pad(x, ((1, 1), (0, 0)))), jax.typeof(jnp.pad(y, ((0, 0), (2, 2))))))
show(lambda: jnp.cumsum(x, 0))
show(lambda: jax.lax.cumsum(y, 0, reverse=True))
show(lambda: (jax.typeof(jnp.cumsum(y, 1)), jax.typeof(jnp.sort(y, 1)), jax.typeof(jnp.argsort(y, 1))))
show(lambda: jax.typeof(jax.lax.top_k(y, 2)[0]))
show(lambda: (jax.typeof(jnp.take(y, jnp.array([0, 2]), axis=1)), jax.typeof(y[:, jnp.array([1, 2])])))
show(lambda: (jax.typeof(jnp.flip(x, 0)), jax.typeof(jnp.roll(y, 1, 1))))
show(lambda: (jax.typeof(jnp.tile(y, (1, 2))), jax.typeof(jnp.repeat(y, 2, axis=1))))
show(lambda: (jax.typeof(jnp.broadcast_to(y[None], (3, 8, 4))), jax.typeof(jnp.zeros_like(x))))
show(lambda: jnp.ones_like(x).sharding.spec)
show(lambda: [jax.typeof(a) for a in jnp.split(x, 2, axis=0)])
show(lambda: jax.typeof(jax.jit(lambda v: jnp.sort(jnp.cumsum(v, 1), 1))(y)))
# 21st session: gathers and scatters into sharded dimensions (JAX asks for out_sharding=)
x = jax.device_put(jnp.arange(32.).reshape(8, 4), P("X", None))
y = jax.device_put(jnp.arange(32.).reshape(8, 4), P(None, "Y"))
i = jnp.array([0, 3, 5])
show(lambda: x[i])
show(lambda: jax.jit(lambda v, j: v[j])(x, i))
show(lambda: (jax.typeof(x[:, jnp.array([0, 2])]), jax.typeof(y[i])))
show(lambda: y[:, jnp.array([0, 2])])
show(lambda: jnp.take(x, i, axis=0))
show(lambda: jax.typeof(x.at[i].get(out_sharding=P(None, None))))
show(lambda: jax.typeof(x.at[i].get(out_sharding=P(None, "Y"))))
show(lambda: x.at[i].set(1.0))
show(lambda: x.at[i].add(jnp.ones((3, 4))))
show(lambda: jax.typeof(x.at[i].set(1.0, out_sharding=P("X", None))))
show(lambda: jax.typeof(y.at[i].set(1.0)))
show(lambda: jax.typeof(jax.jit(lambda v: v.at[i].multiply(2.0))(y)))
show(lambda: y.at[:, jnp.array([0, 2])].set(1.0))
show(lambda: (jax.typeof(jax.lax.dynamic_slice_in_dim(x, 2, 4, 0)),
              jax.typeof(jax.lax.dynamic_slice_in_dim(y, 2, 4, 0))))
show(lambda: jax.lax.dynamic_update_slice_in_dim(x, jnp.ones((2, 4)), 2, 0))
show(lambda: jax.typeof(jax.lax.dynamic_update_slice_in_dim(
    x, jax.device_put(jnp.ones((2, 4)), P("X", None)), 2, 0)))
show(lambda: x[3])
show(lambda: x[2:6])
show(lambda: (jax.typeof(y[3]), jax.typeof(y[2:6]), jax.typeof(x[:, 1:3])))
show(lambda: jax.typeof(jax.jit(lambda v: v[2:6])(x)))
show(lambda: y[jax.device_put(jnp.arange(8), P("X"))])
show(lambda: jax.typeof(jnp.take_along_axis(x, jnp.zeros((8, 1), jnp.int32), axis=1)))
show(lambda: jnp.take_along_axis(x, jnp.zeros((1, 4), jnp.int32), axis=0))
show(lambda: x[jnp.argsort(x[:, 0])])
# 21st session: selects, scans and convolutions (JAX's rules and errors)
a = jax.device_put(jnp.ones((8, 4)), P("X"))
b = jax.device_put(jnp.ones((8, 4)), P(None, "Y"))
c = jnp.ones((8, 4)) > 0
show(lambda: jnp.where(c, a, a))
show(lambda: jnp.where(c, a, b))
show(lambda: jnp.where(True, a, b))
show(lambda: (jax.typeof(jnp.where(a > 0, a, 0.)), jax.typeof(jnp.where(a > 0, 1., 0.)),
              jax.typeof(jnp.where(a > 0, a, jnp.ones(4)))))
show(lambda: jax.lax.select(c, a, a))
show(lambda: [jax.typeof(v) for v in jax.lax.scan(lambda k, _: (k * 2, k.sum(1)), a, None,
                                                    length=3)])
show(lambda: jax.lax.map(lambda r: r * 2, a))
show(lambda: jax.typeof(jax.lax.map(lambda r: r * 2, b)))
show(lambda: (jax.typeof(jax.lax.fori_loop(0, 3, lambda i, v: v * 2, a)),
              jax.typeof(jax.lax.cond(True, lambda v: v * 2, lambda v: v, a))))
xc = jax.device_put(jnp.ones((8, 3, 16, 16)), P("X"))
show(lambda: jax.typeof(jax.lax.conv(xc, jnp.ones((4, 3, 3, 3)), (1, 1), "SAME")))
show(lambda: jax.typeof(jax.lax.conv_general_dilated(xc, jnp.ones((4, 3, 3, 3)), (2, 2), "VALID")))
show(lambda: jax.lax.conv(xc, jax.device_put(jnp.ones((4, 3, 3, 3)), P("Y")), (1, 1), "SAME"))
show(lambda: jax.lax.conv(jax.device_put(jnp.ones((8, 4, 16, 16)), P(None, "Y")),
                          jnp.ones((4, 4, 3, 3)), (1, 1), "SAME"))
show(lambda: jax.typeof(jax.jit(lambda v, w: jax.lax.conv(v, w, (1, 1), "SAME"))(
    xc, jnp.ones((4, 3, 3, 3)))))

"""Unreduced and reduced shardings (JAX's sharding-in-AD states) in
Explicit mode: PartitionSpec's new fields, types, the rules of ops on them
and JAX's errors, products asked for unreduced results, reshards, the
cotangent map under `grad`, and a microbatch accumulation step. One line
per case. Run with IMPORT=jax (in a JAX venv) to record `unreduced.jax.txt`
(JAX 0.10.2), with IMPORT=ember to compare (test_parallel.py). Cases where
JAX 0.10.2 lacks a rule Ember has (negation, subtraction, reshapes of
unreduced arrays) are tested in test_parallel.py instead."""
import os

if os.environ["IMPORT"] == "jax":
    import jax; jax.config.update("jax_num_cpu_devices", 4)
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P
else:
    import ember as jax; jax.config.update("jax_num_cpu_devices", 4); import ember.numpy as jnp
    from ember.sharding import PartitionSpec as P
import numpy as np


def show(name, f):
    try:
        print(name, "->", f())
    except Exception as e:
        print(name, "->", type(e).__name__, str(e).split("\n")[0])


jax.set_mesh(jax.make_mesh((2, 2), ("X", "Y")))
show("spec repr", lambda: (P(unreduced={"X"}), P("X", reduced={"Y"}),
                           P(None, "X", unreduced={"Y"})))
show("spec fields", lambda: (P(unreduced={"X"}).unreduced, P().reduced,
                             P("X", None, reduced={"Y"}).partitions))
show("spec eq", lambda: (P(unreduced={"X"}) == P(), P(reduced={"X"}) == P(reduced={"X"}),
                         hash(P(reduced={"X"})) == hash(P(reduced={"X"}))))
show("spec overlap", lambda: P("X", unreduced={"X"}))
show("spec overlap ur", lambda: P(unreduced={"X"}, reduced={"X"}))
show("spec type", lambda: P(unreduced=("X",)))
x = jax.device_put(jnp.arange(16.).reshape(4, 4), P())
xs = jax.device_put(jnp.arange(16.).reshape(4, 4) / 4, P("X"))
u = jax.reshard(x, P(unreduced={"X"}))
uy = jax.reshard(x, P(unreduced={"Y"}))
r = jax.reshard(x, P(reduced={"X"}))
ry = jax.reshard(x, P(reduced={"Y"}))
rxy = jax.reshard(x, P(reduced={"X", "Y"}))
show("typeof u", lambda: jax.typeof(u))
show("typeof r", lambda: jax.typeof(r))
show("typeof r sharding", lambda: jax.typeof(r).sharding)
show("u sharding", lambda: u.sharding)
show("repr u", lambda: repr(u))
show("replicated", lambda: (u.sharding.is_fully_replicated, r.sharding.is_fully_replicated))
show("uxy", lambda: jax.typeof(jax.reshard(x, P(unreduced={"X", "Y"}))))
show("rxy", lambda: jax.typeof(rxy))
show("P(X, R Y)", lambda: jax.typeof(jax.reshard(x, P("X", reduced={"Y"}))))
show("P(X, U Y)", lambda: jax.typeof(jax.reshard(x, P("X", unreduced={"Y"}))))
show("device_put u", lambda: jax.typeof(jax.device_put(x, P(unreduced={"X"}))))
show("u shards", lambda: [np.asarray(s.data).sum() for s in u.addressable_shards])
cases = {
    "r+r": lambda: r + r, "r*2": lambda: r * 2., "r+1": lambda: r + 1, "sin r": lambda: jnp.sin(r),
    "exp r": lambda: jnp.exp(r), "r>0": lambda: r > 0, "r.T": lambda: r.T, "r.sum": lambda: r.sum(),
    "r+ones(())": lambda: r + jnp.ones(()), "zeros_like r": lambda: jnp.zeros_like(r),
    "r+x": lambda: r + x, "r+xs": lambda: r + xs,
    "xs@r": lambda: xs @ r, "r@x": lambda: r @ x, "r@r": lambda: r @ r,
    "scan over r": lambda: jax.lax.scan(lambda c, w: (c + w.sum(), None), 0., r)[0],
    "u+u": lambda: u + u, "u+u.T": lambda: u + u.T, "u+uy": lambda: u + uy, "u*r": lambda: u * r,
    "r*u": lambda: r * u, "u*2r": lambda: u * (2 * r), "u*ry": lambda: u * ry,
    "u+x": lambda: u + x, "u+r": lambda: u + r, "u*x": lambda: u * x, "u*u": lambda: u * u,
    "u.sum": lambda: u.sum(), "u.sum0": lambda: u.sum(0), "sum(u)": lambda: jnp.sum(u),
    "u.T": lambda: u.T, "u.astype": lambda: u.astype(jnp.float16),
    "expand_dims": lambda: jnp.expand_dims(u, 0), "concat": lambda: jnp.concatenate([u, u]),
    "bcast": lambda: jnp.broadcast_to(u, (3, 4, 4)), "where": lambda: jnp.where(x > 0, u, u),
    "where r": lambda: jnp.where(r > 0, u, u),
    "u@x": lambda: u @ x, "u@r": lambda: u @ r, "xs@u": lambda: xs @ u,
    "jit u+u": lambda: jax.jit(lambda a, b: a + b)(u, u),
    "reshard u P()": lambda: jax.reshard(u, P()), "reshard u P(X)": lambda: jax.reshard(u, P("X")),
    "reshard u R": lambda: jax.reshard(u, P(reduced={"X"})),
    "reshard r U": lambda: jax.reshard(r, P(unreduced={"X"})),
    "reshard xs U": lambda: jax.reshard(xs, P(unreduced={"X"})),
    "reshard xs R": lambda: jax.reshard(xs, P(reduced={"X"})),
}
for k, f in cases.items():
    show(k, lambda: jax.typeof(f()))
try:  # (the error's text prints two sets, in no fixed order)
    r + ry
except Exception as e:
    print("r+ry ->", type(e).__name__, str(e).split(" Got")[0])
show("u values", lambda: np.asarray(jax.reshard(u + u, P())).sum())
show("einsum U", lambda: jnp.einsum("ij,jk->ik", jax.reshard(x, P(None, "Y")), xs,
                                    out_sharding=P(unreduced={"X"})))
ac = jax.reshard(x, P(None, "X"))
c = jnp.einsum("ij,jk->ik", ac, xs, out_sharding=P(None, None, unreduced={"X"}))
show("einsum2", lambda: jax.typeof(c))
show("einsum2 value", lambda: jax.reshard(c, P()))
show("einsum3", lambda: jnp.einsum("ij,jk->ik", x, x, out_sharding=P(unreduced={"X"})))
show("dot U", lambda: jax.typeof(jnp.dot(ac, xs, out_sharding=P(unreduced={"X"}))))
show("c+c2", lambda: jax.typeof(c + jnp.einsum("ij,jk->ik", 2. * ac, xs,
                                               out_sharding=P(None, None, unreduced={"X"}))))

# The cotangent map under grad: reduced <-> unreduced.
w = jax.device_put(jnp.arange(8.).reshape(4, 2) / 10., P())
xb = jax.device_put(jnp.arange(32.).reshape(8, 4), P("X", None))


def loss2(w, x):
    w = jax.reshard(w, P(None, None, reduced={"X"}))
    return jnp.sum((x @ w) ** 2)


show("grad via reduced", lambda: (jax.typeof(jax.grad(loss2)(w, xb)),
                                  np.asarray(jax.grad(loss2)(w, xb)).round(1).tolist()))
wr = jax.reshard(w, P(reduced={"X"}))
show("grad of reduced", lambda: jax.typeof(jax.grad(lambda w: jnp.sum((xb @ w) ** 2))(wr)))
show("grad of reduced value", lambda: np.asarray(jax.reshard(
    jax.grad(lambda w: jnp.sum((xb @ w) ** 2))(wr), P())).round(1).tolist())
show("grad of unreduced", lambda: jax.typeof(jax.grad(lambda v: jax.reshard(v, P()).sum())(u)))


def predict(stacked_ws, xs):
    def apply_layer(xs, w):
        return jnp.tanh(xs @ w), None
    final_xs, _ = jax.lax.scan(apply_layer, xs, stacked_ws)
    return final_xs


def loss3(stacked_ws, batch):
    return jnp.sum(predict(stacked_ws, batch) ** 2)


@jax.jit
def step(stacked_ws, xs):
    def microbatch_step(grad_acc, xs_mb):
        grads = jax.grad(loss3)(stacked_ws, xs_mb)
        assert jax.typeof(grads).sharding.spec.unreduced == {"X"}
        return grad_acc + grads, None
    grad_acc = jax.reshard(jnp.zeros_like(stacked_ws), P(unreduced={"X"}))
    grad_acc, _ = jax.lax.scan(microbatch_step, grad_acc, xs)
    grads = jax.reshard(grad_acc, P())
    ws = jax.reshard(stacked_ws, P())
    return ws - 0.01 * grads


stacked = jax.device_put(jnp.stack([jnp.eye(4) / 2 + 0.1 * k for k in range(3)]),
                         P(reduced={"X"}))
xmb = jax.device_put(jnp.arange(40.).reshape(5, 2, 4) / 40, P(None, "X", None))
new_ws = step(stacked, xmb)
show("step", lambda: (jax.typeof(new_ws), np.round(np.asarray(new_ws), 5).tolist()))

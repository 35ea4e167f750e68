"""Run under `mpirun -n N` (test_mpi.py launches it): each process joins
with ember.distributed.initialize(), and the programs below must give every
process the same results as one process computing all lanes."""

import sys

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax
from ember.experimental import multihost_utils
from ember.sharding import AxisType
from ember.sharding import PartitionSpec as P

ember.distributed.initialize()
rank, size = ember.process_index(), ember.process_count()
local = ember.local_device_count()
n = size * local
assert len(ember.devices()) == n and all(d.process_index == rank for d in ember.local_devices())
mesh = ember.make_mesh((n,), ("i",), axis_types=(AxisType.Auto,))
checks = []


def check(name, got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol, err_msg=name)
    checks.append(name)


x = jnp.arange(2.0 * n) + 1
xn = np.asarray(x)
blocks = xn.reshape(n, 2)

f = ember.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())
check("psum", f(x), blocks.sum(0))
f = ember.shard_map(lambda v: lax.pmean(v, "i") + lax.pmax(v, "i") - lax.pmin(v, "i"),
                    mesh=mesh, in_specs=P("i"), out_specs=P())
check("pmean/pmax/pmin", f(x), blocks.mean(0) + blocks.max(0) - blocks.min(0))
f = ember.shard_map(lambda v: v * 0 + lax.axis_index("i"), mesh=mesh, in_specs=P("i"),
                    out_specs=P("i"))
check("axis_index", f(x), np.repeat(np.arange(n), 2))
f = ember.shard_map(lambda v: lax.all_gather(v, "i", tiled=True) * lax.axis_size("i"),
                    mesh=mesh, in_specs=P("i"), out_specs=P(), check_vma=False)
check("all_gather", f(x), xn * n)
f = ember.jit(ember.shard_map(lambda v: lax.all_gather(v, "i"), mesh=mesh, in_specs=P("i"),
                              out_specs=P("i")))
check("all_gather under jit", f(x), np.tile(blocks, (n, 1)).reshape(n * n, 2))

# ppermute (a ring all-reduce, item 6), psum_scatter and all_to_all across
# processes.
def ring(v):
    acc = cur = v
    for _ in range(n - 1):
        cur = lax.ppermute(cur, "i", [(j, (j + 1) % n) for j in range(n)])
        acc = acc + cur
    return acc


f = ember.jit(ember.shard_map(ring, mesh=mesh, in_specs=P("i"), out_specs=P("i")))
check("ring all-reduce with ppermute", f(x), np.tile(blocks.sum(0), n))
f = ember.shard_map(lambda v: lax.ppermute(v, "i", [(0, n - 1)]), mesh=mesh, in_specs=P("i"),
                    out_specs=P("i"))
check("partial ppermute", f(x), np.concatenate([np.zeros(2 * n - 2), blocks[0]]))
m = jnp.arange(n * n * 3.0).reshape(n * n, 3)
mb = np.asarray(m).reshape(n, n, 3)
f = ember.shard_map(lambda v: lax.psum_scatter(v, "i", tiled=True), mesh=mesh, in_specs=P("i"),
                    out_specs=P("i"))
check("psum_scatter", f(m), mb.sum(0))
f = ember.shard_map(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True), mesh=mesh,
                    in_specs=P("i"), out_specs=P("i"))
check("all_to_all", f(m), mb.transpose(1, 0, 2).reshape(n * n, 3))
g = ember.grad(lambda v: (ember.shard_map(ring, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(v)
                          * jnp.arange(2.0 * n)).sum())(x)
check("grad through ppermute", g, np.tile(np.arange(2.0 * n).reshape(n, 2).sum(0), n))


# The exchanges across processes (point-to-point ppermute, MPI_Alltoall,
# MPI_Reduce_scatter_block) against the same collectives over in-process
# lanes (vmap with an axis name), values and gradients.
def like_vmap(name, fn, arg):
    per_lane = jnp.reshape(arg, (n, arg.shape[0] // n) + arg.shape[1:])
    want = np.asarray(ember.vmap(fn, axis_name="i")(per_lane))
    across = ember.shard_map(fn, mesh=mesh, in_specs=P("i"), out_specs=P("i"))
    got = across(arg)
    check(name, got, want.reshape(got.shape))
    weights = jnp.arange(float(want.size)).reshape(want.shape) / want.size
    g_want = ember.grad(lambda a: (ember.vmap(fn, axis_name="i")(a) * weights).sum())(per_lane)
    g = ember.grad(lambda a: (across(a) * weights.reshape(got.shape)).sum())(arg)
    check(name + " (grad)", g, np.asarray(g_want).reshape(g.shape))


sq = jnp.arange(n * n * 3.0).reshape(n * n, 3) / 7 - 1
wide = jnp.arange(4.0 * n * n).reshape(2 * n, 2 * n) / 5
like_vmap("ppermute by two", lambda v: lax.ppermute(v, "i", [(j, (j + 2) % n) for j in range(n)]),
          sq)
like_vmap("ppermute swapping the ends",
          lambda v: lax.ppermute(v, "i", [(0, n - 1), (n - 1, 0)]) * 2, sq)
like_vmap("all_to_all split 0 concat 1", lambda v: lax.all_to_all(v, "i", 0, 1), sq)
like_vmap("all_to_all tiled split 1 concat 0",
          lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True), wide)
like_vmap("psum_scatter", lambda v: jnp.sin(lax.psum_scatter(v, "i")), sq)
like_vmap("psum_scatter tiled along 1",
          lambda v: lax.psum_scatter(v * v, "i", scatter_dimension=1, tiled=True), wide)

# Gradients: a replicated parameter's gradient is summed over every device
# (check_vma), psum transposes to pvary; with check_vma=False, vmap semantics.
w = jnp.float32(2.0)
g = ember.shard_map(lambda w, v: ember.grad(lambda w: (w * v).sum())(w), mesh=mesh,
                    in_specs=(P(), P("i")), out_specs=P())(w, x)
check("grad of a replicated parameter", g, xn.sum())
g = ember.shard_map(lambda v: ember.grad(lambda u: lax.psum((u ** 2).sum(), "i"))(v),
                    mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)
check("grad through psum (check_vma)", g, 2 * xn)
g = ember.shard_map(lambda v: ember.grad(lambda u: lax.psum((u ** 2).sum(), "i"))(v),
                    mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=False)(x)
check("grad through psum (vmap semantics)", g, 2 * n * xn)
g = ember.grad(lambda v: ember.shard_map(lambda u: lax.psum(u ** 2, "i"), mesh=mesh,
                                         in_specs=P("i"), out_specs=P())(v).sum())(x)
check("grad of the whole shard_map", g, 2 * xn)
g = ember.grad(lambda v: ember.shard_map(lambda u: lax.all_gather(u, "i", tiled=True),
                                         mesh=mesh, in_specs=P("i"), out_specs=P(),
                                         check_vma=False)(v)[1] * 5.0)(x)
check("grad through all_gather", g, np.eye(2 * n)[1] * 5.0)

# Data-parallel training of a small MLP: the same losses as one device.
rng = np.random.default_rng(0)
xs = jnp.asarray(rng.normal(size=(8 * n, 6)).astype(np.float32))
ys = jnp.asarray(rng.normal(size=(8 * n, 2)).astype(np.float32))
params = [jnp.asarray(rng.normal(size=(6, 16)).astype(np.float32) / 3),
          jnp.asarray(rng.normal(size=(16, 2)).astype(np.float32) / 4)]


def loss(p, x, y):
    return jnp.mean((jnp.tanh(x @ p[0]) @ p[1] - y) ** 2)


loss_dp = ember.shard_map(lambda p, x, y: lax.pmean(loss(p, x, y), "i"), mesh=mesh,
                          in_specs=(P(), P("i"), P("i")), out_specs=P())


@ember.jit
def step(p, x, y):
    value, g = ember.value_and_grad(loss_dp)(p, x, y)
    return [a - 0.2 * b for a, b in zip(p, g)], value


@ember.jit
def step1(p, x, y):
    value, g = ember.value_and_grad(loss)(p, x, y)
    return [a - 0.2 * b for a, b in zip(p, g)], value


p, p1 = params, params
for _ in range(4):
    p, v = step(p, xs, ys)
    p1, v1 = step1(p1, xs, ys)
    check("data-parallel loss", v, float(v1))

# Colocated Python: each process runs the function on its own block.
from ember.experimental.colocated_python import colocated_python  # noqa: E402
from ember.sharding import NamedSharding  # noqa: E402


@colocated_python
def tag(v):
    return np.asarray(v) * 0 + ember.process_index()


xs_sharded = ember.device_put(x, NamedSharding(mesh, P("i")))
check("colocated_python on each process's block", tag(xs_sharded),
      np.repeat(np.arange(size), 2 * local))
only0 = ember.device_put(x, ember.local_devices(process_index=0)[0])
check("colocated_python on process 0's device", tag(only0) if size > 1 else tag(x),
      np.zeros(2 * n))

# multihost_utils
check("process_allgather", multihost_utils.process_allgather(np.float32(rank)),
      np.arange(size, dtype=np.float32))
check("broadcast_one_to_all", multihost_utils.broadcast_one_to_all(np.float32(rank + 7)), 7.0)
multihost_utils.sync_global_devices("done")
print(f"rank {rank}/{size}: {len(checks)} checks passed", flush=True)
sys.exit(0)

"""Run under `mpirun -n N` (test_mpi.py launches it): jitted functions on
arrays split over the processes' mesh (Auto mode, no shard_map) are
partitioned by MLIR (`ember-partition`, collectives through the `mpi`
dialect); each must give the whole result that NumPy and the replicated
program (config.ember_mpi_partition off) give, and be compiled the way
named ("spmd": partitioned; "gathered": arguments gathered first)."""

import collections
import importlib.util
import os
import sys

import numpy as np

import ember
import ember.numpy as jnp
from ember._src import spmd
from ember.sharding import AxisType, NamedSharding
from ember.sharding import PartitionSpec as P

ember.distributed.initialize()
rank, size = ember.process_index(), ember.process_count()
assert ember.local_device_count() == 1, "one device per process (the mesh's devices: processes)"
mesh = ember.make_mesh((size,), ("i",), axis_types=(AxisType.Auto,))
rng = np.random.default_rng(0)
checks = []


def split(a, spec=None):
    spec = P("i") if spec is None else spec
    return ember.device_put(jnp.asarray(a), NamedSharding(mesh, spec))


def check(name, f, args, want, kind, tol=1e-5):
    before = dict(spmd.compiled)
    got = ember.jit(f)(*args)
    after = dict(spmd.compiled)
    grew = [k for k in after if after[k] > before.get(k, 0)]
    assert grew == [kind], (name, grew, kind)
    ember.config.update("ember_mpi_partition", False)
    try:
        replicated = ember.jit(f)(*args)
    finally:
        ember.config.update("ember_mpi_partition", True)
    for g, r, w in zip(ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(replicated),
                       ember.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol, err_msg=name)
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=tol, atol=tol,
                                   err_msg=name + " (against the replicated program)")
        assert np.asarray(g).dtype == np.asarray(r).dtype, name
    checks.append(name)


n = 4 * size
x = rng.normal(size=(n, 48)).astype(np.float32)
w = rng.normal(size=(48, 32)).astype(np.float32)
xs = split(x)

check("elementwise and column sum", lambda a: (jnp.tanh(a) * 2.0).sum(0), [xs],
      (np.tanh(x) * 2.0).sum(0), "spmd")
check("product of a row block", lambda a, b: jnp.exp(-(a @ b) ** 2), [xs, jnp.asarray(w)],
      np.exp(-(x @ w) ** 2), "spmd", tol=1e-4)
check("contraction over the split rows", lambda a: a.T @ a, [xs], x.T @ x, "spmd", tol=1e-3)
check("max over the split rows", lambda a: a.max(0) - a.min(), [xs], x.max(0) - x.min(), "spmd")
c = rng.normal(size=(6, 8 * size)).astype(np.float32)
check("columns split", lambda a: jnp.sum(a * a, axis=1), [split(c, P(None, "i"))],
      (c * c).sum(1), "spmd")
k = rng.integers(-50, 50, size=(n, 5)).astype(np.int32)
check("int32 sums", lambda a: (a * 3).sum(0), [split(k)], (k * 3).sum(0), "spmd")
check("bool rows", lambda a: jnp.logical_not(a > 0), [split(k)], ~(k > 0), "spmd")
check("a sort along the split rows (gathered)", lambda a: jnp.sort(a, axis=0), [xs],
      np.sort(x, axis=0), "gathered")
z = (x[:, :3] + 1j * x[:, 3:6]).astype(np.complex64)
check("complex rows (gathered)", lambda a: jnp.cumsum(a * a, axis=0), [split(z)],
      np.cumsum(z * z, axis=0), "gathered", tol=1e-4)

# A data-parallel training step: the same losses and parameters as the
# replicated program, the gradients combined with MPI_Allreduce.
sizes = [48, 64, 10]
params = [(rng.normal(size=(i, o)).astype(np.float32) / np.sqrt(i), np.zeros(o, np.float32))
          for i, o in zip(sizes[:-1], sizes[1:])]
labels = rng.integers(0, 10, n).astype(np.int32)


def loss(p, a, y):
    h = jnp.tanh(a @ p[0][0] + p[0][1])
    logits = h @ p[1][0] + p[1][1]
    return -jnp.mean(jnp.sum(ember.nn.log_softmax(logits) * ember.nn.one_hot(y, 10), axis=1))


def step(p, a, y):
    value, g = ember.value_and_grad(loss)(p, a, y)
    return ember.tree_util.tree_map(lambda u, v: u - 0.1 * v, p, g), value


def numpy_step(p, a, y):
    h = np.tanh(a @ p[0][0] + p[0][1])
    logits = h @ p[1][0] + p[1][1]
    m = logits.max(1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(1, keepdims=True)
    onehot = np.eye(10, dtype=np.float32)[y]
    value = np.mean(np.log(s[:, 0]) + m[:, 0] - (logits * onehot).sum(1))
    d = (e / s - onehot) / len(a)
    g1 = (h.T @ d, d.sum(0))
    dh = (d @ p[1][0].T) * (1 - h * h)
    g0 = (a.T @ dh, dh.sum(0))
    return [(p[0][0] - 0.1 * g0[0], p[0][1] - 0.1 * g0[1]),
            (p[1][0] - 0.1 * g1[0], p[1][1] - 0.1 * g1[1])], value


want = numpy_step(params, x, labels)
check("MLP value_and_grad step", step, [params, xs, split(labels)], want, "spmd", tol=1e-4)

# The corpus test_partition.py compiles: each program, its first argument
# split by rows and by columns, against the replicated program.
spec = importlib.util.spec_from_file_location(
    "partition_corpus", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                                     "partition_corpus.py"))
corpus = importlib.util.module_from_spec(spec)
spec.loader.exec_module(corpus)
kinds = collections.Counter()
for name, f, args in corpus.CORPUS:
    for pspec in (P("i"), P(None, "i")):
        before = dict(spmd.compiled)
        got = ember.jit(f)(split(args[0], pspec), *args[1:])
        kinds.update({k: v - before.get(k, 0) for k, v in spmd.compiled.items()})
        ember.config.update("ember_mpi_partition", False)
        want = ember.jit(f)(*args)
        ember.config.update("ember_mpi_partition", True)
        for g, r in zip(ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(want)):
            g, r = np.asarray(g), np.asarray(r)
            assert g.dtype == r.dtype and g.shape == r.shape, name
            tol = 2e-2 if g.dtype in (jnp.float16, jnp.bfloat16) else 1e-4
            np.testing.assert_allclose(g.astype(np.float64) if g.dtype.kind == "V" else g,
                                       r.astype(np.float64) if r.dtype.kind == "V" else r,
                                       rtol=tol, atol=tol, err_msg=f"{name} {pspec}")
assert kinds["spmd"] >= 40 and kinds["gathered"] >= 20, kinds
checks.append("partition corpus")

# A 2-D mesh (data x model) over 4 processes is not partitioned (the calls
# keep the replicated program, design.md).
if size == 4:
    mesh2 = ember.make_mesh((2, 2), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
    x2 = ember.device_put(jnp.asarray(x), NamedSharding(mesh2, P("a", "b")))
    before = dict(spmd.compiled)
    got = ember.jit(lambda a: jnp.tanh(a).sum(1))(x2)
    np.testing.assert_allclose(np.asarray(got), np.tanh(x).sum(1), rtol=1e-5)
    assert dict(spmd.compiled) == before
checks.append("2-D mesh (replicated program)")

# A function closing over a Ref keeps the replicated program (and updates
# the Ref).
counter = ember.new_ref(jnp.zeros((), jnp.float32))


def counted(a):
    counter[...] += 1.0
    return a.sum(0)


before = dict(spmd.compiled)
for _ in range(2):
    got = ember.jit(counted)(xs)
np.testing.assert_allclose(np.asarray(got), x.sum(0), rtol=1e-5)
assert float(counter[...]) == 2.0 and dict(spmd.compiled) == before
checks.append("closed-over Ref (replicated program)")

# Calls that are not partitioned keep the replicated program: a mesh whose
# device order is not the processes' order.
rev = ember.sharding.Mesh(np.array(ember.devices()[::-1]), ("i",), (AxisType.Auto,))
before = dict(spmd.compiled)
got = ember.jit(lambda a: a.sum(0))(ember.device_put(jnp.asarray(x), NamedSharding(rev, P("i"))))
np.testing.assert_allclose(np.asarray(got), x.sum(0), rtol=1e-5)
assert dict(spmd.compiled) == before
checks.append("reversed mesh (replicated program)")

print(f"rank {rank}/{size}: {len(checks)} checks passed", flush=True)
sys.exit(0)

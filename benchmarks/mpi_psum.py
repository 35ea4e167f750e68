"""psum across MPI processes against a bare MPI_Allreduce (#22).

    mpirun -n 2 .venv/bin/python benchmarks/mpi_psum.py [--mb 4] [--repeat 30]
    mpirun -n 2 .venv/bin/python benchmarks/mpi_psum.py --what ppermute

(the second: a ring ppermute of the buffer against a bare MPI_Sendrecv)

Each process owns one device; `ember.shard_map` over the processes' mesh
axis sums a float32 buffer of --mb megabytes per device with `lax.psum`
under `jit`, and mpi4py's `Allreduce` sums the same buffer. The two are
timed alternately in rounds; rank 0 prints the medians and the spread.

    mpirun -n 2 .venv/bin/python benchmarks/mpi_psum.py --what mlp
    mpirun -n 1 .venv/bin/python benchmarks/mpi_psum.py --what mlp

(weak scaling) times a data-parallel MLP training step on 256 examples per
process: 2 processes should take about as long as 1.

    mpirun -n 2 .venv/bin/python benchmarks/mpi_psum.py --what mlp-auto

is the same step written without shard_map: plain `jit` on examples put
with NamedSharding(mesh, P("i")) (Auto mode), which MLIR's
sharding-propagation and shard-partition split over the processes
(`ember-partition`); `--no-partition` times the replicated program every
process computed before.
"""

import argparse
import time

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax
from ember.sharding import AxisType
from ember.sharding import PartitionSpec as P


def timed(f, repeat):
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--what", choices=["psum", "ppermute", "mlp", "mlp-auto"], default="psum")
    ap.add_argument("--no-partition", action="store_true")
    args = ap.parse_args()
    ember.distributed.initialize()
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    n = ember.process_count()
    mesh = ember.make_mesh((n,), ("i",), axis_types=(AxisType.Auto,))
    if args.what in ("psum", "ppermute"):
        size = int(args.mb * 2 ** 20 / 4)
        x = jnp.ones((n * size,), jnp.float32)
        buf = np.ones(size, np.float32)
        out = np.empty_like(buf)
        if args.what == "psum":
            f = ember.jit(ember.shard_map(lambda v: lax.psum(v, "i"), mesh=mesh,
                                          in_specs=P("i"), out_specs=P()))
            bare, bare_name = (lambda: comm.Allreduce(buf, out)), "MPI_Allreduce"
        else:  # each process's block to the next process; one element of it comes back
            ring = [(j, (j + 1) % n) for j in range(n)]
            f = ember.jit(ember.shard_map(lambda v: lax.ppermute(v, "i", ring)[:1], mesh=mesh,
                                          in_specs=P("i"), out_specs=P("i")))
            rank = comm.rank

            def bare():
                comm.Sendrecv(buf, dest=(rank + 1) % n, recvbuf=out, source=(rank - 1) % n)
            bare_name = "MPI_Sendrecv"
        f(x).block_until_ready()
        ember_t, mpi_t = [], []
        for _ in range(args.rounds):
            comm.Barrier()
            ember_t += timed(lambda: f(x).block_until_ready(), args.repeat)
            comm.Barrier()
            mpi_t += timed(bare, args.repeat)
        if comm.rank == 0:
            e, m = np.median(ember_t) * 1e3, np.median(mpi_t) * 1e3
            print(f"{args.what} of {args.mb:g} MB across {n} processes: Ember {e:.2f} ms "
                  f"(p10-p90 {np.percentile(ember_t, 10) * 1e3:.2f}-"
                  f"{np.percentile(ember_t, 90) * 1e3:.2f}), {bare_name} {m:.2f} ms "
                  f"(p10-p90 {np.percentile(mpi_t, 10) * 1e3:.2f}-"
                  f"{np.percentile(mpi_t, 90) * 1e3:.2f}); ratio {e / m:.2f}")
        return
    rng = np.random.default_rng(0)
    per = 256
    xs = jnp.asarray(rng.normal(size=(per * n, 784)).astype(np.float32))
    ys = jnp.asarray(rng.normal(size=(per * n, 10)).astype(np.float32))
    params = [jnp.asarray(rng.normal(size=(784, 512)).astype(np.float32) / 28),
              jnp.asarray(rng.normal(size=(512, 10)).astype(np.float32) / 22)]

    def loss(p, x, y):
        return jnp.mean((jnp.tanh(x @ p[0]) @ p[1] - y) ** 2)

    loss_dp = ember.shard_map(lambda p, x, y: lax.pmean(loss(p, x, y), "i"), mesh=mesh,
                              in_specs=(P(), P("i"), P("i")), out_specs=P())
    if args.what == "mlp-auto":
        from ember.sharding import NamedSharding

        loss_dp = loss
        xs, ys = (ember.device_put(a, NamedSharding(mesh, P("i"))) for a in (xs, ys))
        ember.config.update("ember_mpi_partition", not args.no_partition)

    @ember.jit
    def step(p, x, y):
        value, g = ember.value_and_grad(loss_dp)(p, x, y)
        return [a - 0.1 * b for a, b in zip(p, g)], value

    p, v = step(params, xs, ys)
    v.block_until_ready()
    ts = []
    for _ in range(args.rounds):
        comm.Barrier()
        ts += timed(lambda: step(params, xs, ys)[1].block_until_ready(), args.repeat)
    if comm.rank == 0:
        print(f"data-parallel MLP step ({args.what}), {per} examples per process, "
              f"{n} process(es): "
              f"{np.median(ts) * 1e3:.2f} ms (p10-p90 {np.percentile(ts, 10) * 1e3:.2f}-"
              f"{np.percentile(ts, 90) * 1e3:.2f})")


if __name__ == "__main__":
    main()

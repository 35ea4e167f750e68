"""Pallas Mosaic-GPU (`plgpu`) kernels, run by Ember's interpreter on the
CPU with its race checks:

- `collective_smem_reuse`: the blocks of a 2-block cluster multicast each
  step's tile into one SMEM buffer; a ClusterBarrier keeps the next step's
  copy from landing while the other block still reads the buffer;
- `pipelined_matmul`: a Hopper-style matmul, K tiles streamed through a ring
  of SMEM slots by TMA-style copies into wgmma;
- `hopper_matmul_kernel`: the same in bf16 as the GPU runs it (swizzled
  SMEM, wgmma accumulating in registers, a TMA store), interpreted and
  compiled for sm_90a;
- `blackwell_matmul_kernel`: a bf16 tcgen05 matmul accumulating in TMEM,
  interpreted and compiled for sm_100a;
- `blackwell_pair_matmul_kernel`: the same on a 2-CTA pair (cta_group::2):
  leader-tracked copies, the leader's MMAs into both blocks' collective
  TMEM, interpreted and compiled for sm_100a;
- `blackwell_collective_matmul`: a 2-CTA collective tcgen05 matmul into
  TMEM, warp specialized, with a ClusterBarrier guarding TMEM reuse.

With `guarded=False` the first and last drop their ClusterBarrier, and the
interpreter reports the race (`plgpu.InterpretError`) with the kernel's
lines. `collective_smem_reuse`, `hopper_matmul_kernel` and
`blackwell_matmul_kernel` also compile for the GPU (`.lower(x,
chip="sm_90a").as_text("ptx")`, sm_100a for the last). Run the file to see
all of it:

    .venv/bin/python examples/pallas_gpu_kernels.py
"""

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax
from ember.experimental import pallas as pl
from ember.experimental.pallas import mosaic_gpu as plgpu


def _sds(shape, dtype=np.float32):
    return ember.ShapeDtypeStruct(shape, dtype)


def collective_smem_reuse(guarded, steps=4):
    """Two blocks of a cluster multicast step k's tile into one SMEM buffer
    each and read it; the next step's copy overwrites that buffer in both
    blocks, so each block must know the other finished reading it: a
    ClusterBarrier between the steps."""

    def body(x_ref, o_ref, smem, bar, cluster_bar):
        b = lax.axis_index("cl")
        acc = jnp.zeros((8, 16), jnp.float32)
        for k in range(steps):
            plgpu.copy_gmem_to_smem(x_ref.at[k], smem, bar, collective_axes="cl")
            plgpu.barrier_wait(bar)
            acc = acc + smem[...] * (b + 1).astype(jnp.float32)
            if guarded:
                plgpu.barrier_arrive(cluster_bar)
                plgpu.barrier_wait(cluster_bar)
        o_ref[b] = acc

    return plgpu.kernel(body, out_type=_sds((2, 8, 16)), cluster=(2,), cluster_names=("cl",),
                        scratch_types=[plgpu.SMEM((8, 16), np.float32), plgpu.Barrier(1),
                                       plgpu.ClusterBarrier(("cl",))])


def _tile_fetcher(a_ref, b_ref, a_smem, b_smem, bars, i, j, bm, bn, bk, slots):
    """`fetch(s)`: TMA copies of step s's A and B tiles of output tile (i, j)
    into slot s % slots, completing on that slot's barrier."""

    def fetch(s):
        slot = s % slots
        plgpu.copy_gmem_to_smem(a_ref.at[pl.ds(i * bm, bm), pl.ds(s * bk, bk)],
                                a_smem.at[slot], bars.at[slot])
        plgpu.copy_gmem_to_smem(b_ref.at[pl.ds(s * bk, bk), pl.ds(j * bn, bn)],
                                b_smem.at[slot], bars.at[slot])

    return fetch


def _store_tile(value, o_smem, o_ref, i, j, bm, bn):
    """Output tile (i, j) written back through SMEM by a TMA copy."""
    o_smem[...] = value.astype(o_smem.dtype)
    plgpu.commit_smem()
    plgpu.copy_smem_to_gmem(o_smem, o_ref.at[pl.ds(i * bm, bm), pl.ds(j * bn, bn)])
    plgpu.wait_smem_to_gmem(0)


def _tiled_matmul(body, m, n, dtype, bm, bn, bk, slots, transforms, scratch):
    """The kernel of a matmul over (bm, bn) output tiles: `body(a, b, o,
    a_slots, b_slots, o_tile, loaded, *scratch)`."""
    return plgpu.kernel(
        body, out_type=_sds((m, n), dtype), grid=(m // bm, n // bn), grid_names=("m", "n"),
        scratch_types=[plgpu.SMEM((slots, bm, bk), dtype, transforms=transforms),
                       plgpu.SMEM((slots, bk, bn), dtype, transforms=transforms),
                       plgpu.SMEM((bm, bn), dtype, transforms=transforms),
                       plgpu.Barrier(num_arrivals=2, num_barriers=slots), *scratch])


def pipelined_matmul(a, b, bm=64, bn=64, bk=32, slots=2):
    """A Hopper-style matmul (see `hopper_matmul_kernel`), interpreted."""
    (m, k), n = a.shape, b.shape[1]
    return hopper_matmul_kernel(m, n, k, a.dtype, bm, bn, bk, slots)(a, b)


def hopper_matmul_kernel(m, n, k, dtype, bm=128, bn=128, bk=64, slots=2):
    """A Hopper-style matmul: per output tile, K tiles stream through a ring
    of `slots` SMEM buffers per operand (TMA copies, one barrier per slot)
    into wgmma accumulating in registers (`plgpu.ACC`); the result goes back
    through SMEM by a TMA copy. bf16/f16 tiles are 128-byte swizzled (TMA's
    and the tensor cores' layout). `hopper_matmul_kernel(...)(a, b)`
    interprets it; for bf16/f16, `.lower(a, b, chip="sm_90a")` compiles it."""
    steps = k // bk
    swizzle = 128
    elems = swizzle // np.dtype(dtype).itemsize
    transforms = ((plgpu.TilingTransform((8, elems)), plgpu.SwizzleTransform(swizzle))
                  if np.dtype(dtype).itemsize == 2 else ())

    def body(a_ref, b_ref, o_ref, a_smem, b_smem, o_smem, bars, acc):
        i, j = lax.axis_index("m"), lax.axis_index("n")
        fetch = _tile_fetcher(a_ref, b_ref, a_smem, b_smem, bars, i, j, bm, bn, bk, slots)
        for s in range(min(slots, steps)):
            fetch(s)

        @pl.loop(0, steps)
        def _(s):
            slot = s % slots
            plgpu.barrier_wait(bars.at[slot])
            plgpu.wgmma(acc, a_smem.at[slot], b_smem.at[slot])
            plgpu.wgmma_wait(0)

            @pl.when(s + slots < steps)
            def _():
                fetch(s + slots)

        _store_tile(acc[...], o_smem, o_ref, i, j, bm, bn)

    return _tiled_matmul(body, m, n, dtype, bm, bn, bk, slots, transforms,
                         [plgpu.ACC((bm, bn), np.float32)])


def blackwell_matmul_kernel(m, n, k, dtype, bm=128, bn=128, bk=64, slots=2):
    """A Blackwell (tcgen05) matmul in one block per output tile: K tiles
    stream through `slots` swizzled SMEM buffers per operand (TMA copies,
    `loaded` barriers); one thread issues the tensor-core MMAs into a TMEM
    accumulator, whose completion (`tcgen05` commit on `consumed`) lets the
    slot be refilled; the warpgroup then reads the accumulator from TMEM and
    writes it back through SMEM by TMA. `(...)(a, b)` interprets it;
    `.lower(a, b, chip="sm_100a")` compiles it."""
    steps = k // bk
    elems = 128 // np.dtype(dtype).itemsize
    transforms = (plgpu.TilingTransform((8, elems)), plgpu.SwizzleTransform(128))

    def body(a_ref, b_ref, o_ref, a_smem, b_smem, o_smem, loaded, consumed, done, acc):
        i, j = lax.axis_index("m"), lax.axis_index("n")
        fetch = _tile_fetcher(a_ref, b_ref, a_smem, b_smem, loaded, i, j, bm, bn, bk, slots)
        for s in range(min(slots, steps)):
            fetch(s)

        @pl.loop(0, steps)
        def _(s):
            slot = s % slots
            plgpu.barrier_wait(loaded.at[slot])
            plgpu.tcgen05_mma(acc, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],
                              accumulate=s > 0)

            @pl.when(s + slots < steps)
            def _():
                plgpu.barrier_wait(consumed.at[slot])  # the MMA read the slot
                fetch(s + slots)

        plgpu.tcgen05_commit_arrive(done.at[0])
        plgpu.barrier_wait(done.at[0])
        value = plgpu.async_load_tmem(acc)
        plgpu.wait_load_tmem()
        _store_tile(value, o_smem, o_ref, i, j, bm, bn)

    return _tiled_matmul(body, m, n, dtype, bm, bn, bk, slots, transforms,
                         [plgpu.Barrier(num_barriers=slots, orders_tensor_core=True),
                          plgpu.Barrier(orders_tensor_core=True),
                          plgpu.TMEM((bm, bn), np.float32)])


def blackwell_pair_matmul_kernel(m, n, k, dtype, bn=128, bk=64, slots=2):
    """A 2-CTA (cta_group::2) Blackwell matmul: a cluster of two blocks
    computes a 256 x `bn` output tile. Each block streams its 128 rows of A
    and its `bn / 2` columns of B into its own SMEM by leader-tracked
    copies (both halves counted on the leader's `loaded` barrier); the
    leader alone issues the pair's MMAs, which read both blocks' SMEM and
    accumulate each block's 128 x `bn` rows in its own TMEM (collective
    TMEM); their commit arrives on both blocks' `consumed` and `done`
    barriers, so each block refills its slots and reads its TMEM out.
    `(...)(a, b)` interprets it; `.lower(a, b, chip="sm_100a")` compiles it."""
    steps = k // bk
    elems = 128 // np.dtype(dtype).itemsize
    transforms = (plgpu.TilingTransform((8, elems)), plgpu.SwizzleTransform(128))
    pair = plgpu.CopyPartition.PARTITIONED

    def body(a_ref, b_ref, o_ref, a_smem, b_smem, o_smem, loaded, consumed, done, acc):
        i, j, p = lax.axis_index("m"), lax.axis_index("n"), lax.axis_index("pair")

        def fetch(s):
            slot = s % slots
            plgpu.copy_gmem_to_smem(a_ref.at[pl.ds(i * 256, 256), pl.ds(s * bk, bk)],
                                    a_smem.at[slot], loaded.at[slot], collective_axes="pair",
                                    leader_tracked=pair(0))
            plgpu.copy_gmem_to_smem(b_ref.at[pl.ds(s * bk, bk), pl.ds(j * bn, bn)],
                                    b_smem.at[slot], loaded.at[slot], collective_axes="pair",
                                    leader_tracked=pair(1))

        for s in range(min(slots, steps)):
            fetch(s)

        @pl.loop(0, steps)
        def _(s):
            slot = s % slots

            @pl.when(p == 0)
            def _():
                plgpu.barrier_wait(loaded.at[slot])  # both blocks' tiles landed
                plgpu.tcgen05_mma(acc, a_smem.at[slot], b_smem.at[slot], consumed.at[slot],
                                  accumulate=s > 0, collective_axis="pair")

            @pl.when(s + slots < steps)
            def _():
                plgpu.barrier_wait(consumed.at[slot])  # the pair's MMA read the slot
                fetch(s + slots)

        @pl.when(p == 0)
        def _():
            plgpu.tcgen05_commit_arrive(done.at[0], collective_axis="pair")

        plgpu.barrier_wait(done.at[0])
        value = plgpu.async_load_tmem(acc)
        plgpu.wait_load_tmem()
        _store_tile(value, o_smem, o_ref, 2 * i + p, j, 128, bn)

    return plgpu.kernel(
        body, out_type=_sds((m, n), dtype), grid=(m // 256, n // bn), grid_names=("m", "n"),
        cluster=(2,), cluster_names=("pair",),
        scratch_types=[plgpu.SMEM((slots, 128, bk), dtype, transforms=transforms),
                       plgpu.SMEM((slots, bk, bn // 2), dtype, transforms=transforms),
                       plgpu.SMEM((128, bn), dtype, transforms=transforms),
                       plgpu.Barrier(num_arrivals=2, num_barriers=slots),
                       plgpu.Barrier(num_barriers=slots, orders_tensor_core=True),
                       plgpu.Barrier(orders_tensor_core=True),
                       plgpu.TMEM((128, bn), np.float32, collective=True)])


def blackwell_collective_matmul(a, b, guarded, bk=32, bn=64):
    """A 2-CTA collective tcgen05 matmul over output column tiles, warp
    specialized: thread group 0 streams A/B tiles into SMEM and issues the
    pair's MMA into TMEM; group 1 (the epilogue) reads TMEM out. The next
    tile's MMA overwrites both blocks' TMEM, so the MMA issuer must know
    both epilogues finished reading it: a ClusterBarrier (`tmem_free`)."""
    m, k = a.shape
    n = b.shape[1]
    assert m == 256
    tiles, steps = n // bn, k // bk

    def body(a_ref, b_ref, o_ref, a_smem, b_smem, acc, bars, ready, mma_bar, acc_ready,
             tmem_free):
        blk, wg = lax.axis_index("cl"), lax.axis_index("wg")
        rows = pl.ds(blk * 128, 128)
        if int(wg) == 0:
            for t in range(tiles):
                if guarded and t > 0:
                    plgpu.barrier_wait(tmem_free)
                for s in range(steps):
                    plgpu.copy_gmem_to_smem(a_ref.at[rows, pl.ds(s * bk, bk)], a_smem, bars)
                    plgpu.copy_gmem_to_smem(
                        b_ref.at[pl.ds(s * bk, bk), pl.ds(t * bn + blk * (bn // 2), bn // 2)],
                        b_smem, bars)
                    plgpu.barrier_wait(bars)
                    # Both blocks' tiles must have landed before the pair's MMA.
                    plgpu.barrier_arrive(ready)
                    plgpu.barrier_wait(ready)
                    plgpu.tcgen05_mma(acc, a_smem, b_smem, accumulate=s > 0,
                                      collective_axis="cl")
                    plgpu.tcgen05_commit_arrive(mma_bar, collective_axis="cl")
                    plgpu.barrier_wait(mma_bar)
                plgpu.barrier_arrive(acc_ready)
        else:
            for t in range(tiles):
                plgpu.barrier_wait(acc_ready)
                o_ref[rows, pl.ds(t * bn, bn)] = plgpu.async_load_tmem(acc)
                plgpu.wait_load_tmem()
                if guarded:
                    plgpu.barrier_arrive(tmem_free)

    return plgpu.kernel(
        body, out_type=_sds((m, n)), cluster=(2,), cluster_names=("cl",), num_threads=2,
        thread_name="wg",
        scratch_types=[plgpu.SMEM((128, bk), np.float32), plgpu.SMEM((bk, bn // 2), np.float32),
                       plgpu.TMEM((128, bn), np.float32), plgpu.Barrier(2),
                       plgpu.ClusterBarrier(("cl",)), plgpu.Barrier(1), plgpu.Barrier(1),
                       plgpu.ClusterBarrier(("cl",))])(a, b)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8, 16)).astype(np.float32)
    out = collective_smem_reuse(True)(x)
    print("collective SMEM reuse, guarded: max error",
          float(np.abs(np.asarray(out) - np.stack([x.sum(0), 2 * x.sum(0)])).max()))
    try:
        collective_smem_reuse(False)(x)
    except plgpu.InterpretError as e:
        print("without the ClusterBarrier:", e)
    # The same kernel compiled for a Hopper GPU (nothing runs: PTX only).
    ptx = collective_smem_reuse(True).lower(x, chip="sm_90a").as_text("ptx")
    print(f"collective SMEM reuse, compiled for sm_90a: {len(ptx.splitlines())} lines of PTX, "
          f"{ptx.count('cp.async.bulk.tensor')} TMA copies, "
          f"{ptx.count('mbarrier.arrive.release.cluster')} remote barrier arrivals")
    a = rng.standard_normal((256, 64)).astype(np.float32)
    b = rng.standard_normal((64, 128)).astype(np.float32)
    p, q = rng.standard_normal((2, 128, 128)).astype(np.float32)
    print("pipelined wgmma matmul: max error",
          float(np.abs(np.asarray(pipelined_matmul(p, q)) - p @ q).max()))
    a16 = rng.standard_normal((256, 256)).astype(jnp.bfloat16)
    b16 = rng.standard_normal((256, 256)).astype(jnp.bfloat16)
    mm = hopper_matmul_kernel(256, 256, 256, jnp.bfloat16)
    ref = a16.astype(np.float32) @ b16.astype(np.float32)
    print("Hopper bf16 matmul (swizzled SMEM, wgmma), interpreted: max relative error",
          float(np.abs(np.asarray(mm(a16, b16)).astype(np.float32) - ref).max()
                / np.abs(ref).max()))
    ptx = mm.lower(a16, b16, chip="sm_90a").as_text("ptx")
    print(f"  compiled for sm_90a: {len(ptx.splitlines())} lines of PTX, "
          f"{ptx.count('wgmma.mma_async')} wgmma instructions, "
          f"{ptx.count('cp.async.bulk.tensor')} TMA copies")
    bw = blackwell_matmul_kernel(256, 256, 256, jnp.bfloat16)
    print("Blackwell bf16 matmul (tcgen05, TMEM), interpreted: max relative error",
          float(np.abs(np.asarray(bw(a16, b16)).astype(np.float32) - ref).max()
                / np.abs(ref).max()))
    ptx = bw.lower(a16, b16, chip="sm_100a").as_text("ptx")
    print(f"  compiled for sm_100a: {len(ptx.splitlines())} lines of PTX, "
          f"{ptx.count('tcgen05.mma.cta_group::1')} tcgen05 MMAs, "
          f"{ptx.count('tcgen05.ld.sync')} TMEM loads")
    print("Blackwell collective matmul: max error",
          float(np.abs(np.asarray(blackwell_collective_matmul(a, b, True)) - a @ b).max()))
    try:
        blackwell_collective_matmul(a, b, False)
    except plgpu.InterpretError as e:
        print("without the TMEM guard:", e)

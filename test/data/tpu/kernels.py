"""Pallas TPU kernel programs, written once against the module passed in, so that
the same programs run under JAX (`jax`, `jax.numpy`, `jax.experimental.pallas`,
`jax.experimental.pallas.tpu`) and under Ember (its counterparts).

`tools/tpu/jax_mosaic_check.py` lowers each program with JAX for TPU and compares
JAX's Mosaic kernels with Ember's. Only full-block ref reads and writes are used.
"""

import importlib.util
import pathlib

import numpy as np


def _races():
    """races.py, beside this file (kernels with and without races)."""
    spec = importlib.util.spec_from_file_location(
        "tpu_races", pathlib.Path(__file__).with_name("races.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def programs(jax, jnp, pl, pltpu):
    """Returns [(name, fn, args)]: `fn` calls `pl.pallas_call`, `args` are concrete
    arrays made with `jnp`."""
    return _build(jax, jnp, pl, pltpu)[0]


def benchmarks(jax, jnp, pl, pltpu):
    """Returns [(name, fn, make_args, flops)]: larger instances of the programs'
    kernels, timed on a TPU by `tools/tpu/tpu_run.py` (`make_args()` makes the
    arguments; `flops` is None for memory-bound programs)."""
    _, k = _build(jax, jnp, pl, pltpu)
    ramp = k["ramp"]
    n = 4096
    return [
        ("bench_matmul_bf16", lambda x, y: k["matmul"](x, y, bm=512, bk=1024, bn=1024),
         lambda: (ramp((n, n), jnp.bfloat16, mod=17), ramp((n, n), jnp.bfloat16, mod=11)),
         2 * n**3),
        ("bench_guide_matmul_f32", lambda x, y: k["guide_matmul"](x, y, b=512),
         lambda: (ramp((2048, 2048), jnp.float32, scale=3000, mod=19),
                  ramp((2048, 2048), jnp.float32, scale=3000, mod=23)),
         2 * 2048**3),
        ("bench_flash_attention", k["flash_attention"],
         lambda: (ramp((n, 128), jnp.float32, scale=3000, mod=37),
                  ramp((n, 128), jnp.float32, scale=3000, mod=41),
                  ramp((n, 128), jnp.float32, scale=100, mod=29)),
         4 * n * n * 128),
        ("bench_add_exp", lambda x, y: k["two_operand_rows"](k["add_exp_kernel"], x, y, rows=512),
         lambda: (ramp((8192, 1024), jnp.float32), ramp((8192, 1024), jnp.float32, scale=1000)),
         None),
        ("bench_kernel_pipeline", k["kernel_pipeline_split"],
         lambda: (ramp((8192, 1024), jnp.float32),), None),
    ]


def _build(jax, jnp, pl, pltpu):
    """The programs, and the kernels `benchmarks` reuses by name."""

    def ramp(shape, dtype, scale=100, mod=None):
        """A deterministic array: 0, 1, 2, ... (mod `mod`) / `scale`, reshaped."""
        v = jnp.arange(int(np.prod(shape)), dtype=jnp.int32)
        if mod is not None:
            v = v % mod
        return (v.reshape(shape).astype(jnp.float32) / scale).astype(dtype)

    # (a) x + exp(y) * 2 over (16, 128) in (8, 128) blocks.
    def add_exp_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + jnp.exp(y_ref[...]) * 2

    def two_operand_rows(kernel, x, y, rows=8):
        """`kernel` on 2-D operands in blocks of `rows` whole rows."""
        spec = pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // rows,),
            in_specs=[spec, spec],
            out_specs=spec,
        )(x, y)

    def add_exp(x, y):
        return two_operand_rows(add_exp_kernel, x, y)

    # (a2) integer powers (JAX's integer_pow: products, and 1 / x^2).
    def powers_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] ** 3 + (y_ref[...] + 1.0) ** -2

    def powers(x, y):
        return two_operand_rows(powers_kernel, x, y)

    # (b) Blocked bf16 matmul with an f32 VMEM accumulator.
    def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...].astype(o_ref.dtype)

    def matmul(x, y, bm=128, bk=128, bn=128):
        m, k = x.shape
        n = y.shape[1]
        return pl.pallas_call(
            matmul_kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
            grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=("parallel", "parallel", "arbitrary")),
        )(x, y)

    # (c) Row softmax over (64, 256) in (8, 256) blocks.
    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        e = jnp.exp(x - jnp.max(x, axis=1, keepdims=True))
        o_ref[...] = e / jnp.sum(e, axis=1, keepdims=True)

    def softmax(x):
        spec = pl.BlockSpec((8, 256), lambda i: (i, 0))
        return pl.pallas_call(
            softmax_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // 8,),
            in_specs=[spec],
            out_specs=spec,
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        )(x)

    # (d) iota, where, a fori_loop carrying a block and a transpose, on one block.
    def loop_kernel(x_ref, o_ref):
        x = x_ref[...]
        row = jax.lax.broadcasted_iota(jnp.int32, x.shape, 0)
        col = jax.lax.broadcasted_iota(jnp.int32, x.shape, 1)
        lower = jnp.where(row >= col, x, jnp.zeros_like(x))

        def body(i, acc):
            return jnp.tanh(acc * 0.5 + i.astype(jnp.float32))

        acc = jax.lax.fori_loop(0, 4, body, lower)
        o_ref[...] = acc.T + jnp.maximum(x, 0.25)

    def loop(x):
        return pl.pallas_call(
            loop_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        )(x)

    # (e) Scalar prefetch: an int32 array of block indices picks the input block
    # (the kernel body itself does not read the prefetched ref).
    def gather_kernel(idx_ref, x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2 + 1

    def gather_blocks(idx, x):
        grid_spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(idx.shape[0],),
            in_specs=[pl.BlockSpec((8, 128), lambda i, idx_ref: (idx_ref[i], 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i, idx_ref: (i, 0)),
        )
        return pl.pallas_call(
            gather_kernel,
            out_shape=jax.ShapeDtypeStruct((idx.shape[0] * 8, 128), x.dtype),
            grid_spec=grid_spec,
        )(idx, x)

    # (f) int32 add, multiply and max.
    def int_kernel(a_ref, b_ref, o_ref):
        a = a_ref[...]
        b = b_ref[...]
        o_ref[...] = jnp.maximum(a * b + a, b + 7)

    def int_ops(a, b):
        spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
        return pl.pallas_call(
            int_kernel,
            out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype),
            grid=(a.shape[0] // 8, a.shape[1] // 128),
            in_specs=[spec, spec],
            out_specs=spec,
        )(a, b)

    # (g) Two outputs.
    def two_out_kernel(x_ref, y_ref, s_ref, p_ref):
        x = x_ref[...]
        y = y_ref[...]
        s_ref[...] = x + y
        p_ref[...] = x * y

    def two_outputs(x, y):
        spec = pl.BlockSpec((16, 128), lambda i: (0, i))
        out = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return pl.pallas_call(
            two_out_kernel,
            out_shape=(out, out),
            grid=(x.shape[1] // 128,),
            in_specs=[spec, spec],
            out_specs=(spec, spec),
        )(x, y)

    # (h) An input whose block is the whole array at block (0, 0) at every step (JAX
    # marks its window `pipeline_mode = #tpu.pipeline_mode<synchronous>`).
    def scale_kernel(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[...] * w_ref[...] + 1

    def resident_weight(x, w):
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(
            scale_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // 8,),
            in_specs=[spec, pl.BlockSpec(w.shape, lambda i: (0, 0))],
            out_specs=spec,
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        )(x, w)

    def flash_kernel(q_ref, k_ref, v_ref, o_ref):
        # Online softmax over key/value blocks read at run-time offsets.
        bq, d = q_ref.shape
        bk = 128
        q = q_ref[...]

        def body(j, carry):
            m, s_sum, acc = carry
            k = k_ref[pl.ds(j * bk, bk), :]
            v = v_ref[pl.ds(j * bk, bk), :]
            s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                    preferred_element_type=jnp.float32)
            m_new = jnp.maximum(m, jnp.max(s, axis=1, keepdims=True))
            p = jnp.exp(s - m_new)
            alpha = jnp.exp(m - m_new)
            s_sum = alpha * s_sum + jnp.sum(p, axis=1, keepdims=True)
            acc = acc * alpha + jnp.dot(p, v, preferred_element_type=jnp.float32)
            return m_new, s_sum, acc

        m0 = jnp.full((bq, 1), -1e30, jnp.float32)
        l0 = jnp.zeros((bq, 1), jnp.float32)
        a0 = jnp.zeros((bq, d), jnp.float32)
        _, s_sum, acc = jax.lax.fori_loop(0, k_ref.shape[0] // bk, body, (m0, l0, a0))
        o_ref[...] = acc / s_sum

    def flash_attention(q, k, v):
        bq = 128
        return pl.pallas_call(
            flash_kernel,
            out_shape=jax.ShapeDtypeStruct(q.shape, jnp.float32),
            grid=(q.shape[0] // bq,),
            in_specs=[pl.BlockSpec((bq, q.shape[1]), lambda i: (i, 0)),
                      pl.BlockSpec(k.shape, lambda i: (0, 0)),
                      pl.BlockSpec(v.shape, lambda i: (0, 0))],
            out_specs=pl.BlockSpec((bq, q.shape[1]), lambda i: (i, 0)),
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        )(q, k, v)

    def rows_kernel(x_ref, o_ref):
        # Row windows written one by one in a loop.
        def body(i, c):
            rows = x_ref[pl.ds(i * 8, 8), :]
            o_ref[pl.ds(i * 8, 8), :] = rows * 2.0 + c
            return c + 1.0

        jax.lax.fori_loop(0, x_ref.shape[0] // 8, body, jnp.float32(0.0))

    def row_windows(x):
        return pl.pallas_call(
            rows_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    def norm_kernel(x_ref, g_ref, o_ref):
        x = x_ref[...]
        mean = jnp.mean(x, axis=1, keepdims=True)
        var = jnp.mean((x - mean) ** 2, axis=1, keepdims=True)
        o_ref[...] = (x - mean) * jax.lax.rsqrt(var + 1e-5) * g_ref[...]

    def layer_norm(x, g):
        return pl.pallas_call(
            norm_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // 8,),
            in_specs=[pl.BlockSpec((8, x.shape[1]), lambda i: (i, 0)),
                      pl.BlockSpec(g.shape, lambda i: (0, 0))],
            out_specs=pl.BlockSpec((8, x.shape[1]), lambda i: (i, 0)),
        )(x, g)

    def double_buffer_kernel(x_hbm, o_ref, buf, sem):
        # Rows of an HBM array copied in (8, 128) windows into two VMEM
        # slots, the next copy started before the current one is waited for.
        n = x_hbm.shape[0] // 8

        def copy(i, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(i * 8, 8)], buf.at[slot],
                                         sem.at[slot])

        copy(0, 0).start()

        def body(i, c):
            slot = jax.lax.rem(i, 2)

            @pl.when(i + 1 < n)
            def _():
                copy(i + 1, 1 - slot).start()

            copy(i, slot).wait()
            o_ref[pl.ds(i * 8, 8), :] = buf[slot] * 2.0 + c
            return c + 1.0

        jax.lax.fori_loop(0, n, body, jnp.float32(0.0))

    def double_buffer(x):
        return pl.pallas_call(
            double_buffer_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            scratch_shapes=[pltpu.VMEM((2, 8, 128), jnp.float32),
                            pltpu.SemaphoreType.DMA((2,))],
        )(x)

    def dma_out_kernel(x_ref, o_hbm, buf, sem):
        # A block computed in VMEM, then copied out to HBM by a DMA.
        buf[...] = jnp.tanh(x_ref[...])
        c = pltpu.make_async_copy(buf, o_hbm.at[pl.ds(pl.program_id(0) * 8, 8)], sem)
        c.start()
        c.wait()

    def dma_out(x):
        return pl.pallas_call(
            dma_out_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // 8,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
            out_specs=pl.BlockSpec(memory_space=pl.ANY),
            scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA],
        )(x)

    def guide_matmul_kernel(x_ref, y_ref, z_ref):
        # JAX's TPU matmul guide: accumulate into the output block.
        @pl.when(pl.program_id(2) == 0)
        def _():
            z_ref[...] = jnp.zeros_like(z_ref)

        z_ref[...] += x_ref[...] @ y_ref[...]

    def guide_matmul(x, y, b=128):
        bm = bk = bn = b
        m, k = x.shape
        n = y.shape[1]
        return pl.pallas_call(
            guide_matmul_kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                      pl.BlockSpec((bk, bn), lambda i, j, k: (k, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
            grid=(m // bm, n // bn, k // bk),
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=("parallel", "parallel", "arbitrary")),
        )(x, y)

    def fused_kernel(x_ref, y_ref, z_ref, acc_ref, *, nsteps):
        # The guide's fused-activation matmul with a transposed right side.
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += jax.lax.dot_general(x_ref[...], y_ref[...], (((1,), (1,)), ((), ())),
                                            preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == nsteps - 1)
        def _():
            z_ref[...] = jnp.maximum(acc_ref[...], 0.0).astype(z_ref.dtype)

    def fused_matmul(x, yt):
        bm = bk = bn = 128
        m, k = x.shape
        n = yt.shape[0]

        def kernel(x_ref, y_ref, z_ref, acc_ref):
            fused_kernel(x_ref, y_ref, z_ref, acc_ref, nsteps=k // bk)

        return pl.pallas_call(
            kernel,
            grid_spec=pltpu.PrefetchScalarGridSpec(
                num_scalar_prefetch=0,
                in_specs=[pl.BlockSpec((bm, bk), lambda i, j, k: (i, k)),
                          pl.BlockSpec((bn, bk), lambda i, j, k: (j, k))],
                out_specs=pl.BlockSpec((bm, bn), lambda i, j, k: (i, j)),
                scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
                grid=(m // bm, n // bn, k // bk)),
            out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=("parallel", "parallel", "arbitrary")),
        )(x, yt)

    def semaphore_kernel(x_ref, o_ref, sem):
        # A regular semaphore: signal, read, wait.
        pltpu.semaphore_signal(sem, 2)
        n = pltpu.semaphore_read(sem)
        pltpu.semaphore_wait(sem, 2)
        o_ref[...] = x_ref[...] + n.astype(jnp.float32)

    def regular_semaphore(x):
        return pl.pallas_call(
            semaphore_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            scratch_shapes=[pltpu.SemaphoreType.REGULAR])(x)

    def shuffle_kernel(x_ref, o_ref, bits_ref):
        # pltpu.roll and a same-width pltpu.bitcast.
        x = x_ref[...]
        o_ref[...] = pltpu.roll(x, 3, 1) + pltpu.roll(x, 5, 0)
        bits_ref[...] = pltpu.bitcast(x, jnp.int32)

    def shuffles(x):
        return pl.pallas_call(
            shuffle_kernel,
            out_shape=(jax.ShapeDtypeStruct(x.shape, x.dtype),
                       jax.ShapeDtypeStruct(x.shape, jnp.int32)))(x)

    def smem_kernel(x_ref, o_ref, acc):
        # A scalar accumulator in SMEM scratch, kept across grid steps.
        @pl.when(pl.program_id(0) == 0)
        def _():
            acc[0] = 0.0

        acc[0] += jnp.sum(x_ref[...])
        o_ref[...] = jnp.full(o_ref.shape, acc[0], jnp.float32)

    def smem_accumulator(x):
        return pl.pallas_call(
            smem_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32),
            grid=(x.shape[0] // 8,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
            scratch_shapes=[pltpu.SMEM((1,), jnp.float32)])(x)

    def causal_kernel(q_ref, o_ref):
        # A causal mask from program ids and iotas, summed over key blocks.
        qi = pl.program_id(0)

        def body(j, acc):
            rows = jax.lax.broadcasted_iota(jnp.int32, (8, 128), 0) + qi * 8
            cols = jax.lax.broadcasted_iota(jnp.int32, (8, 128), 1) + j * 128
            return acc + jnp.where(cols <= rows, q_ref[...], 0.0)

        o_ref[...] = jax.lax.fori_loop(0, 2, body, jnp.zeros((8, 128), jnp.float32))

    def causal_mask(x):
        return pl.pallas_call(
            causal_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32),
            grid=(x.shape[0] // 8,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))(x)

    def alias_kernel(x_ref, y_ref, o_ref):
        # The output reuses the second operand's buffer (input_output_aliases):
        # an update in place. (The kernel reads y_ref: an output block's VMEM
        # buffer is not loaded from HBM on a TPU, aliased or not, so reading
        # o_ref first would read undefined values; the TPU run showed it.)
        o_ref[...] = y_ref[...] + x_ref[...] * 2.0

    def aliased(x, y):
        return pl.pallas_call(
            alias_kernel, out_shape=jax.ShapeDtypeStruct(y.shape, y.dtype),
            input_output_aliases={1: 0})(x, y)

    def squeezed_kernel(x_ref, o_ref):
        # The blocks' leading dimension is squeezed (None): the kernel sees
        # (8, 128) blocks of (4, 16, 128) arrays.
        o_ref[...] = x_ref[...] * 3.0 + 1.0

    def squeezed(x):
        spec = pl.BlockSpec((None, 8, 128), lambda b, i: (b, i, 0))
        return pl.pallas_call(
            squeezed_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0], x.shape[1] // 8), in_specs=[spec], out_specs=spec)(x)

    # pltpu.emit_pipeline inside a kernel over HBM refs: JAX's add-one
    # example, and a blocked matmul whose output blocks stay in VMEM over
    # the k steps (initialised at k == 0 through the pipeline's program ids).
    hbm = pl.BlockSpec(memory_space=pl.ANY)

    def add_one_body(x_vmem, o_vmem):
        o_vmem[...] = x_vmem[...] + 1

    def add_one_kernel(x_hbm, o_hbm):
        pltpu.emit_pipeline(
            add_one_body, grid=(x_hbm.shape[0] // 8, x_hbm.shape[1] // 128),
            in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
            out_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))])(x_hbm, o_hbm)

    def pipeline_add_one(x):
        return pl.pallas_call(add_one_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              in_specs=[hbm], out_specs=hbm)(x)

    def pipeline_matmul_body(x, y, o):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o[...] = jnp.zeros_like(o)

        o[...] += jnp.dot(x[...], y[...], preferred_element_type=jnp.float32)

    def pipeline_matmul_kernel(x_hbm, y_hbm, o_hbm):
        pltpu.emit_pipeline(
            pipeline_matmul_body, grid=(2, 2, 2),
            in_specs=[pl.BlockSpec((128, 128), lambda i, j, k: (i, k)),
                      pl.BlockSpec((128, 128), lambda i, j, k: (k, j))],
            out_specs=[pl.BlockSpec((128, 128), lambda i, j, k: (i, j))])(x_hbm, y_hbm, o_hbm)

    def pipeline_matmul(x, y):
        return pl.pallas_call(pipeline_matmul_kernel,
                              out_shape=jax.ShapeDtypeStruct((256, 256), jnp.float32),
                              in_specs=[hbm, hbm], out_specs=hbm)(x, y)

    # A pipeline inside an outer grid: squeezed block dimensions, a scratch
    # passed to the body, program ids of the pipeline's own grid.
    def nested_body(x, w, o, acc):
        acc[...] = x[...] * w[...]
        o[...] = acc[...] + pl.program_id(0).astype(jnp.float32)

    def nested_kernel(x_hbm, w_hbm, o_hbm, acc):
        r = pl.program_id(0)
        pltpu.emit_pipeline(
            nested_body, grid=(2,),
            in_specs=[pl.BlockSpec((None, 8, 128), lambda j: (r, j, 0)),
                      pl.BlockSpec((8, 128), lambda j: (j, 0))],
            out_specs=[pl.BlockSpec((None, 8, 128), lambda j: (r, j, 0))])(
                x_hbm, w_hbm, o_hbm, scratches=[acc])

    def pipeline_nested(x, w):
        return pl.pallas_call(nested_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0],), in_specs=[hbm, hbm], out_specs=hbm,
                              scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)])(x, w)

    # pl.Buffered: a pallas_call window fetched synchronously (one buffer)
    # or double-buffered, and an emit_pipeline with three input buffers and
    # one output buffer.
    def buffered_kernel(x_ref, w_ref, o_ref):
        o_ref[...] = x_ref[...] * w_ref[...] + 1.0

    def buffered_windows(x, w):
        return pl.pallas_call(
            buffered_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(4,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(1)),
                      pl.BlockSpec((8, 128), lambda i: (0, 0), pipeline_mode=pl.Buffered(2))],
            out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0),
                                   pipeline_mode=pl.Buffered(1, revisit=pl.RevisitMode.ANY)))(x, w)

    def buffered_pipeline_kernel(x_hbm, o_hbm):
        pltpu.emit_pipeline(
            add_one_body, grid=(x_hbm.shape[0] // 8,),
            in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0), pipeline_mode=pl.Buffered(3))],
            out_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0),
                                    pipeline_mode=pl.Buffered(1))])(x_hbm, o_hbm)

    def buffered_pipeline(x):
        return pl.pallas_call(buffered_pipeline_kernel,
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              in_specs=[hbm], out_specs=hbm)(x)

    # The hardware PRNG: seeded per grid step, raw bits and a stateful
    # uniform sample. The bits differ by TPU generation (JAX's interpreter
    # draws zeros), so the output only takes what every draw agrees on:
    # min(bits & 1, 0) and floor(u) are 0.
    def prng_kernel(x_ref, o_ref):
        pltpu.prng_seed(42, pl.program_id(0))
        bits = pltpu.prng_random_bits(o_ref.shape)
        u = pltpu.stateful_uniform(shape=o_ref.shape, minval=0.0, maxval=1.0)
        o_ref[...] = (x_ref[...] + jnp.minimum(bits & 1, 0).astype(jnp.float32)
                      + jnp.floor(u))

    def prng(x):
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(prng_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // 8,), in_specs=[spec], out_specs=spec)(x)

    # pl.run_scoped: a VMEM buffer and a DMA semaphore live for one call.
    def scoped_kernel(x_ref, o_hbm):
        def scoped(buf, sem):
            buf[...] = jnp.tanh(x_ref[...]) * 2.0
            c = pltpu.make_async_copy(buf, o_hbm.at[pl.ds(pl.program_id(0) * 8, 8)], sem)
            c.start()
            c.wait()

        pl.run_scoped(scoped, pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA)

    def run_scoped_dma(x):
        return pl.pallas_call(
            scoped_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            grid=(x.shape[0] // 8,), in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
            out_specs=hbm)(x)

    # Under shard_map over 4 devices: one kernel per device on its block, in
    # a manual computation (the mesh is made when called: 4 devices).
    def per_device_kernel(x_ref, w_ref, o_ref):
        d = jax.lax.axis_index("x").astype(jnp.float32)  # the device's index
        o_ref[...] = jnp.tanh(x_ref[...]) * w_ref[...] + d

    def shard_mapped(x, w):
        mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
        P = jax.sharding.PartitionSpec

        def body(xb, w):
            spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
            return pl.pallas_call(
                per_device_kernel, out_shape=jax.ShapeDtypeStruct(xb.shape, xb.dtype),
                grid=(xb.shape[0] // 8,), in_specs=[spec, pl.BlockSpec((8, 128), lambda i: (0, 0))],
                out_specs=spec)(xb, w)

        return jax.shard_map(body, mesh=mesh, in_specs=(P("x"), P()), out_specs=P("x"),
                             check_vma=False)(x, w)

    # Remote DMAs: the double-buffered ring all-reduce over the 4 devices of
    # races.py (each copies its running block to its right neighbour after
    # the neighbour's "ready" signal; its race-checked variants are there).
    ring_kernel, ring_scratch = _races().kernels(jax, jnp, pl, pltpu)["ring_every_step"]

    def on_devices(kernel, x, **kw):
        """`kernel` on each of 4 devices' row blocks of `x` (shard_map)."""
        mesh = jax.make_mesh((4,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
        P = jax.sharding.PartitionSpec

        def per_device(block):
            return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(block.shape,
                                                                         block.dtype), **kw)(block)

        return jax.shard_map(per_device, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                             check_vma=False)(x)

    def ring_all_reduce(x):  # x: (32, 128) float32
        return on_devices(ring_kernel, x, scratch_shapes=ring_scratch)

    # The barrier semaphore: each device signals both neighbours and waits
    # for their two signals before it writes (collective_id given).
    def barrier_kernel(x_ref, o_ref):
        me = jax.lax.axis_index("x")
        barrier = pltpu.get_barrier_semaphore()
        for other in (jax.lax.rem(me + 3, 4), jax.lax.rem(me + 1, 4)):
            pltpu.semaphore_signal(barrier, 1, device_id=(other,),
                                   device_id_type=pltpu.DeviceIdType.MESH)
        pltpu.semaphore_wait(barrier, 2)
        o_ref[...] = x_ref[...] * 3.0

    def barrier_handshake(x):
        return on_devices(barrier_kernel, x,
                          compiler_params=pltpu.CompilerParams(collective_id=0))

    # (z) Op coverage, for the run on a real TPU (`make tpu-check`): each
    # kernel uses many of the ops `ember-tpu-kernel` emits, so that Mosaic's
    # compiler sees them (its dialect's verifier accepts ops its layout
    # passes cannot compile).
    def math_kernel(x_ref, o_ref):
        x = x_ref[...]
        a = jnp.abs(x) + 0.5
        o_ref[...] = (jnp.log(a) + jnp.sqrt(a) + jax.lax.rsqrt(a) + jnp.tanh(x)
                      + jnp.sin(x) * jnp.cos(x) + jnp.floor(x) - jnp.ceil(x)
                      + jnp.exp2(x * 0.1) + jnp.log1p(a)
                      + jnp.where(x > 0.3, x, -x) + jnp.maximum(x, 0.1) * jnp.minimum(x, 0.2)
                      + jax.nn.sigmoid(x) + jnp.round(x) + a ** 1.5 + jnp.sign(x) / a)

    def casts_kernel(x_ref, i_ref, f_ref, n_ref):
        x = x_ref[...]
        i = i_ref[...]
        f_ref[...] = (x.astype(jnp.bfloat16).astype(jnp.float32) + i.astype(jnp.float32)
                      + (x * 10).astype(jnp.int32).astype(jnp.float32))
        n_ref[...] = (((i >> 2) ^ (i << 1)) | (i & 7)) + jnp.where(x > 1.0, i // 3, i % 5)

    def reduce_kernel(x_ref, o_ref):
        x = x_ref[...]
        rows = jnp.sum(x, axis=1, keepdims=True)
        cols = jnp.max(x, axis=0, keepdims=True)
        o_ref[...] = x - rows / x.shape[1] + cols * jnp.min(x, axis=1, keepdims=True)

    def bf16_kernel(x_ref, o_ref, s_ref):
        # 16-bit elements (packed sublanes): arithmetic, a max and a
        # widening for an f32 row sum.
        x = x_ref[...]
        y = jnp.maximum(x * x, x + jnp.asarray(1, jnp.bfloat16))
        o_ref[...] = y
        s_ref[...] = jnp.sum(y.astype(jnp.float32), axis=1, keepdims=True)

    def dot_t_kernel(x_ref, y_ref, o_ref):
        # x^T y: a product contracting both operands' first dimensions.
        o_ref[...] = jax.lax.dot_general(x_ref[...], y_ref[...], (((0,), (0,)), ((), ())),
                                         preferred_element_type=jnp.float32)

    def strided_kernel(x_ref, o_ref):
        # Strided windows (Mosaic's strided_load and strided_store): the even
        # rows doubled into the first half, the odd rows into the second
        # half's odd rows, at a run-time offset from the grid.
        i = pl.program_id(0)
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)
        o_ref[pl.ds(0, 8), :] = x_ref[pl.ds(0, 8, stride=2), :] * 2.0
        o_ref[pl.ds(9, 4, stride=2), :] = x_ref[pl.ds(i + 1, 4, stride=2), :] + 1.0

    def masked_store_kernel(x_ref, o_ref):
        # pltpu.store with a mask (a masked vector_store): the lanes left of
        # a diagonal keep what was there, the others take x + 1.
        o_ref[...] = x_ref[...] * -1.0
        rows = jax.lax.broadcasted_iota(jnp.int32, x_ref.shape, 0)
        cols = jax.lax.broadcasted_iota(jnp.int32, x_ref.shape, 1)
        pltpu.store(o_ref, x_ref[...] + 1.0, mask=cols >= rows * 8)

    def dot_precision_kernel(x_ref, y_ref, hi_ref, lo_ref):
        # The same f32 product at HIGHEST precision (Mosaic's fp32) and at
        # the default (on a TPU, bf16 passes: the outputs differ there).
        hi_ref[...] = jnp.dot(x_ref[...], y_ref[...], precision=jax.lax.Precision.HIGHEST,
                              preferred_element_type=jnp.float32)
        lo_ref[...] = jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    def whole(kernel, outs, *args):
        return pl.pallas_call(kernel, out_shape=outs)(*args)

    signed = ramp((16, 256), jnp.float32, scale=37, mod=211) - 2.5
    ints_a = jnp.arange(16 * 256, dtype=jnp.int32).reshape(16, 256) % 97 - 40
    # pl.core_map over the TensorCores of one device (one on a TPU v5e; the
    # interpreters and the lowering take any number): refs made with
    # jax.new_ref, per-core VMEM scratch and a DMA semaphore from
    # run_scoped; each core copies its column slice in, computes and
    # copies it out (JAX's core_map guide without the exchange between
    # cores, which needs two).
    tc_mesh = pltpu.create_tensorcore_mesh("core", num_cores=1)
    n_cores = len(tc_mesh.devices)

    def core_slices_kernel(x_hbm, o_hbm, buf, sem):
        c = jax.lax.axis_index("core")
        w = x_hbm.shape[1] // jax.lax.axis_size("core")
        slc = pl.ds(c * w, w)
        pltpu.async_copy(x_hbm.at[:, slc], buf, sem).wait()
        buf[...] = jnp.tanh(buf[...]) * 2.0 + c.astype(jnp.float32)
        pltpu.async_copy(buf, o_hbm.at[:, slc], sem).wait()

    @jax.jit  # (JAX's refs outside jit have no .at)
    def core_map_slices(x):
        x_ref = jax.new_ref(x)
        o_ref = jax.new_ref(jnp.zeros_like(x))

        @pl.core_map(tc_mesh)
        def per_core():
            pl.run_scoped(lambda buf, sem: core_slices_kernel(x_ref, o_ref, buf, sem),
                          pltpu.VMEM((x.shape[0], x.shape[1] // n_cores), x.dtype),
                          pltpu.SemaphoreType.DMA)
        return o_ref[...]

    # The guide's exchange between cores: a barrier signal and a remote copy
    # to the next core (`device_id={'core': c}`: Mosaic's core_id), which
    # with one core is this core itself.
    def exchange_kernel(x_hbm, o_hbm, in_vmem, recv_vmem, out_vmem, sem, send_sem, recv_sem):
        c = jax.lax.axis_index("core")
        cores = jax.lax.axis_size("core")
        w = x_hbm.shape[1] // cores
        slc = pl.ds(c * w, w)
        pltpu.async_copy(x_hbm.at[:, slc], in_vmem, sem).wait()
        other = (c + 1) % cores
        barrier = pltpu.get_barrier_semaphore()
        pl.semaphore_signal(barrier, 1, device_id={"core": other})
        pl.semaphore_wait(barrier, 1)
        copy = pltpu.make_async_remote_copy(in_vmem, recv_vmem, send_sem, recv_sem,
                                            device_id={"core": other})
        copy.start()
        copy.wait()
        out_vmem[...] = recv_vmem[...] * 2
        pltpu.async_copy(out_vmem, o_hbm.at[:, slc], sem).wait()

    def kernel_exchange(x):
        block = pltpu.VMEM((x.shape[0], x.shape[1] // n_cores), x.dtype)
        return pl.kernel(exchange_kernel, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
                         mesh=tc_mesh, scratch_types=[block] * 3 + [pltpu.SemaphoreType.DMA] * 3,
                         compiler_params=pltpu.CompilerParams(collective_id=0))(x)

    # pl.kernel (core_map, output refs and scratch in one) running
    # emit_pipeline over HBM operands, as the guide's add_one; and with
    # sync_copy of an offset into SMEM scratch that the index maps read
    # (the guide's indexed_add_one: a window of columns from the offset).
    def kernel_pipeline(x):
        return pl.kernel(add_one_kernel, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
                         mesh=tc_mesh)(x)

    def split_add_one_kernel(x_hbm, o_hbm):
        # (The guide's: the PARALLEL dimension split among the cores.)
        pltpu.emit_pipeline(
            add_one_body, grid=(x_hbm.shape[0] // 8, x_hbm.shape[1] // 128),
            in_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
            out_specs=[pl.BlockSpec((8, 128), lambda i, j: (i, j))],
            core_axis_name="core",
            dimension_semantics=(pltpu.PARALLEL, pltpu.ARBITRARY))(x_hbm, o_hbm)

    def kernel_pipeline_split(x):
        return pl.kernel(split_add_one_kernel, out_type=jax.ShapeDtypeStruct(x.shape, x.dtype),
                         mesh=tc_mesh)(x)

    def indexed_add_one_kernel(x_hbm, i_hbm, o_hbm, i_smem):
        pltpu.sync_copy(i_hbm, i_smem)
        rows = x_hbm.shape[0] // jax.lax.axis_size("core")
        first = jax.lax.axis_index("core") * rows // 8
        pltpu.emit_pipeline(
            add_one_body, grid=(rows // 8, o_hbm.shape[1] // 128),
            in_specs=[pl.BlockSpec((8, 128), lambda i, j: (first + i, i_smem[0] // 128 + j))],
            out_specs=[pl.BlockSpec((8, 128), lambda i, j: (first + i, j))])(x_hbm, o_hbm)

    def kernel_indexed(x, index):
        return pl.kernel(indexed_add_one_kernel,
                         out_type=jax.ShapeDtypeStruct((x.shape[0], x.shape[1] // 2), x.dtype),
                         mesh=tc_mesh, scratch_types=[pltpu.SMEM((1,), jnp.int32)])(x, index)

    ints_b = jnp.arange(16 * 256, dtype=jnp.int32).reshape(16, 256) % 13 - 6
    # Under grad: a custom_vjp whose fwd and bwd call kernels (how JAX's
    # Pallas TPU kernels are differentiated, flash attention among them):
    # d/dx (x + 2 exp(y)) = 1, d/dy = 2 exp(y).
    def mul_exp_kernel(g_ref, y_ref, o_ref):
        o_ref[...] = g_ref[...] * jnp.exp(y_ref[...]) * 2

    def mul_exp(g, y):
        return two_operand_rows(mul_exp_kernel, g, y)

    @jax.custom_vjp
    def add_exp_vjp(x, y):
        return add_exp(x, y)

    add_exp_vjp.defvjp(lambda x, y: (add_exp(x, y), y),
                       lambda y, g: (g, mul_exp(g, y)))

    def add_exp_loss(x, y):
        return jnp.sum(add_exp_vjp(x, y) ** 2)

    return [
        ("grad_custom_vjp_kernels", jax.grad(add_exp_loss, argnums=(0, 1)),
         (ramp((16, 128), jnp.float32, mod=31), ramp((16, 128), jnp.float32, scale=1000))),
        ("add_exp", add_exp, (ramp((16, 128), jnp.float32),
                              ramp((16, 128), jnp.float32, scale=1000))),
        ("powers", powers, (ramp((16, 128), jnp.float32, scale=500),
                            ramp((16, 128), jnp.float32, scale=900))),
        ("matmul_bf16", matmul, (ramp((256, 256), jnp.bfloat16, mod=17),
                                 ramp((256, 256), jnp.bfloat16, mod=11))),
        ("softmax", softmax, (ramp((64, 256), jnp.float32, mod=301),)),
        ("iota_loop_transpose", loop, (ramp((128, 128), jnp.float32, scale=1000),)),
        ("scalar_prefetch", gather_blocks, (jnp.array([2, 0, 3, 1, 1], dtype=jnp.int32),
                                            ramp((32, 128), jnp.float32))),
        ("int32_ops", int_ops, (ints_a, ints_b)),
        ("two_outputs", two_outputs, (ramp((16, 256), jnp.bfloat16, mod=23),
                                      ramp((16, 256), jnp.bfloat16, scale=50, mod=7))),
        ("resident_weight", resident_weight, (ramp((32, 128), jnp.float32),
                                              ramp((8, 128), jnp.float32, scale=500))),
        ("flash_attention", flash_attention, (ramp((256, 128), jnp.float32, scale=3000, mod=37),
                                              ramp((512, 128), jnp.float32, scale=3000, mod=41),
                                              ramp((512, 128), jnp.float32, scale=100, mod=29))),
        ("row_windows", row_windows, (ramp((64, 128), jnp.float32),)),
        ("layer_norm", layer_norm, (ramp((32, 256), jnp.float32, mod=53),
                                    ramp((1, 256), jnp.float32, scale=300))),
        ("double_buffer", double_buffer, (ramp((64, 128), jnp.float32),)),
        ("dma_out", dma_out, (ramp((32, 128), jnp.float32, scale=700),)),
        ("guide_matmul", guide_matmul, (ramp((256, 256), jnp.float32, scale=3000, mod=19),
                                        ramp((256, 256), jnp.float32, scale=3000, mod=23))),
        ("fused_matmul_bf16", fused_matmul, (ramp((256, 256), jnp.bfloat16, scale=300, mod=13),
                                             ramp((256, 256), jnp.bfloat16, scale=-300,
                                                  mod=11))),
        ("regular_semaphore", regular_semaphore, (ramp((8, 128), jnp.float32),)),
        ("roll_bitcast", shuffles, (ramp((16, 128), jnp.float32),)),
        ("smem_accumulator", smem_accumulator, (ramp((32, 128), jnp.float32, scale=1000),)),
        ("causal_mask", causal_mask, (ramp((32, 128), jnp.float32),)),
        ("aliased_output", aliased, (ramp((8, 128), jnp.float32),
                                     ramp((8, 128), jnp.float32, scale=7))),
        ("squeezed_block", squeezed, (ramp((4, 16, 128), jnp.float32),)),
        ("emit_pipeline_add_one", pipeline_add_one, (ramp((32, 256), jnp.float32),)),
        ("emit_pipeline_matmul", pipeline_matmul,
         (ramp((256, 256), jnp.float32, scale=3000, mod=19),
          ramp((256, 256), jnp.float32, scale=3000, mod=23))),
        ("run_scoped_dma", run_scoped_dma, (ramp((32, 128), jnp.float32, scale=700),)),
        ("emit_pipeline_nested", pipeline_nested, (ramp((2, 16, 128), jnp.float32),
                                                   ramp((16, 128), jnp.float32, scale=300))),
        # Under vmap (JAX's pallas_call batching rule: the batch is a leading
        # "parallel" grid dimension, batched windows gain a squeezed one).
        ("vmap_add_exp", jax.vmap(add_exp, in_axes=(0, None)),
         (ramp((3, 16, 128), jnp.float32), ramp((16, 128), jnp.float32, scale=1000))),
        ("vmap_vmap_add_exp", jax.vmap(jax.vmap(add_exp)),
         (ramp((2, 3, 16, 128), jnp.float32, mod=89),
          ramp((2, 3, 16, 128), jnp.float32, scale=1000, mod=97))),
        ("vmap_matmul_bf16", jax.vmap(matmul, in_axes=(None, 0)),
         (ramp((256, 256), jnp.bfloat16, mod=17), ramp((2, 256, 256), jnp.bfloat16, mod=11))),
        ("vmap_scalar_prefetch", jax.vmap(gather_blocks, in_axes=(None, 0)),
         (jnp.array([2, 0, 3, 1, 1], dtype=jnp.int32), ramp((2, 32, 128), jnp.float32))),
        ("vmap_aliased_output", jax.vmap(aliased),
         (ramp((2, 8, 128), jnp.float32), ramp((2, 8, 128), jnp.float32, scale=7))),
        # JAX's rule first broadcasts an unbatched operand aliased to an
        # output, and batches prefetched indices by a loop over the examples.
        ("shard_map_kernel", shard_mapped, (ramp((64, 128), jnp.float32, scale=500),
                                            ramp((8, 128), jnp.float32, scale=300))),
        ("ring_all_reduce", ring_all_reduce, (ramp((32, 128), jnp.float32, scale=64),)),
        ("barrier_handshake", barrier_handshake, (ramp((32, 128), jnp.float32, scale=64),)),
        ("vmap_unbatched_alias", jax.vmap(aliased, in_axes=(0, None)),
         (ramp((3, 8, 128), jnp.float32), ramp((8, 128), jnp.float32, scale=7))),
        ("buffered_windows", buffered_windows, (ramp((32, 128), jnp.float32),
                                                ramp((8, 128), jnp.float32, scale=50))),
        ("buffered_pipeline", buffered_pipeline, (ramp((48, 128), jnp.float32),)),
        ("hardware_prng", prng, (ramp((16, 128), jnp.float32),)),
        ("ops_math", lambda x: whole(math_kernel, jax.ShapeDtypeStruct(x.shape, x.dtype), x),
         (signed,)),
        ("ops_casts", lambda x, i: whole(
            casts_kernel, (jax.ShapeDtypeStruct(x.shape, jnp.float32),
                           jax.ShapeDtypeStruct(x.shape, jnp.int32)), x, i),
         (signed, ints_a)),
        ("ops_reductions", lambda x: whole(reduce_kernel, jax.ShapeDtypeStruct(x.shape, x.dtype),
                                           x), (signed,)),
        ("ops_bf16", lambda x: whole(
            bf16_kernel, (jax.ShapeDtypeStruct(x.shape, x.dtype),
                          jax.ShapeDtypeStruct((x.shape[0], 1), jnp.float32)), x),
         (ramp((32, 256), jnp.bfloat16, scale=50, mod=101),)),
        ("ops_dot_transposed", lambda x, y: whole(
            dot_t_kernel, jax.ShapeDtypeStruct((x.shape[1], y.shape[1]), jnp.float32), x, y),
         (ramp((128, 128), jnp.float32, scale=3000, mod=19),
          ramp((128, 256), jnp.float32, scale=3000, mod=23))),
        # (Mosaic's strided_load and strided_store need buffers 128 wide.)
        ("ops_strided", lambda x: pl.pallas_call(
            strided_kernel, out_shape=jax.ShapeDtypeStruct((2, 16, 128), jnp.float32),
            grid=(2,), in_specs=[pl.BlockSpec((16, 128), lambda i: (0, i))],
            out_specs=pl.BlockSpec((None, 16, 128), lambda i: (i, 0, 0)))(x), (signed,)),
        ("ops_masked_store", lambda x: whole(
            masked_store_kernel, jax.ShapeDtypeStruct(x.shape, x.dtype), x), (signed,)),
        ("core_map_slices", core_map_slices, (ramp((16, 256), jnp.float32),)),
        ("kernel_pipeline", kernel_pipeline, (ramp((32, 256), jnp.float32),)),
        ("kernel_pipeline_split", kernel_pipeline_split, (ramp((32, 256), jnp.float32),)),
        ("kernel_exchange", kernel_exchange, (ramp((8, 256), jnp.float32),)),
        ("kernel_indexed", kernel_indexed, (ramp((32, 512), jnp.float32),
                                            jnp.array([256], dtype=jnp.int32))),
        ("dot_precision", lambda x, y: whole(
            dot_precision_kernel, [jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32)] * 2,
            x, y),
         (ramp((128, 256), jnp.float32, scale=3001, mod=97),
          ramp((256, 128), jnp.float32, scale=2999, mod=89))),
        ("vmap_batched_prefetch", jax.vmap(gather_blocks),
         (jnp.array([[2, 0, 3, 1, 1], [0, 0, 1, 3, 2]], dtype=jnp.int32),
          ramp((2, 32, 128), jnp.float32))),
    ], {"ramp": ramp, "matmul": matmul, "guide_matmul": guide_matmul,
        "flash_attention": flash_attention, "two_operand_rows": two_operand_rows,
        "add_exp_kernel": add_exp_kernel, "kernel_pipeline_split": kernel_pipeline_split,
        "exchange_kernel": exchange_kernel}

"""Pallas TPU kernels on Ember: run in the checked interpreter, lowered for
TPU as Mosaic custom calls, and (for the collective) run over simulated
devices.

    EMBER_NUM_CPU_DEVICES=4 .venv/bin/python examples/pallas_tpu_kernels.py

Nothing here runs on a TPU: the kernels are interpreted on the CPU (with
`pltpu.InterpretParams()`, DMAs asynchronous and races reported), and the
artifact a TPU consumes, StableHLO with `tpu_custom_call`s carrying the
serialized Mosaic kernels, is what lowering for "tpu" produces.
"""

import functools

import numpy as np

import ember as jax
import ember.numpy as jnp
from ember.experimental import pallas as pl
from ember.experimental.pallas import tpu as pltpu

CHECKED = pltpu.InterpretParams()


# -- a double-buffered manual-DMA kernel ---------------------------------
def double_buffer_kernel(x_hbm, o_ref, buf, sem):
    """Rows of an HBM array in (8, 128) windows, the next copy started
    before the current one is waited for."""
    n = x_hbm.shape[0] // 8

    def copy(i, slot):
        return pltpu.make_async_copy(x_hbm.at[pl.ds(i * 8, 8)], buf.at[slot], sem.at[slot])

    copy(0, 0).start()

    def body(i, carry):
        slot = jax.lax.rem(i, 2)

        @pl.when(i + 1 < n)
        def _():
            copy(i + 1, 1 - slot).start()

        copy(i, slot).wait()
        o_ref[pl.ds(i * 8, 8), :] = buf[slot] * 2.0
        return carry

    jax.lax.fori_loop(0, n, body, 0)


def double_buffer(x, interpret=False):
    return pl.pallas_call(
        double_buffer_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM((2, 8, 128), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
        interpret=interpret)(x)


# -- flash attention forward ---------------------------------------------
def flash_kernel(q_ref, k_ref, v_ref, o_ref, *, block_k):
    q = q_ref[...]

    def body(j, carry):
        m, s_sum, acc = carry
        k = k_ref[pl.ds(j * block_k, block_k), :]
        v = v_ref[pl.ds(j * block_k, block_k), :]
        s = jax.lax.dot_general(q, k, (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32)
        m_new = jnp.maximum(m, jnp.max(s, axis=1, keepdims=True))
        p = jnp.exp(s - m_new)
        alpha = jnp.exp(m - m_new)
        return (m_new, alpha * s_sum + jnp.sum(p, axis=1, keepdims=True),
                acc * alpha + jnp.dot(p, v, preferred_element_type=jnp.float32))

    bq, d = q_ref.shape
    init = (jnp.full((bq, 1), -1e30, jnp.float32), jnp.zeros((bq, 1), jnp.float32),
            jnp.zeros((bq, d), jnp.float32))
    _, s_sum, acc = jax.lax.fori_loop(0, k_ref.shape[0] // block_k, body, init)
    o_ref[...] = acc / s_sum


def flash_attention(q, k, v, interpret=False, block_q=128, block_k=128):
    return pl.pallas_call(
        functools.partial(flash_kernel, block_k=block_k),
        out_shape=jax.ShapeDtypeStruct(q.shape, jnp.float32), grid=(q.shape[0] // block_q,),
        in_specs=[pl.BlockSpec((block_q, q.shape[1]), lambda i: (i, 0)),
                  pl.BlockSpec(k.shape, lambda i: (0, 0)),
                  pl.BlockSpec(v.shape, lambda i: (0, 0))],
        out_specs=pl.BlockSpec((block_q, q.shape[1]), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        interpret=interpret)(q, k, v)


# -- a blocked matmul with emit_pipeline (interpreted only) --------------
def pipelined_matmul(a, b, interpret=False, bm=32, bk=32, bn=32):
    m, k = a.shape
    n = b.shape[1]

    def body(x, y, o):
        o[...] += jnp.dot(x[...], y[...], preferred_element_type=jnp.float32)

    def kernel(a_hbm, b_hbm, z_hbm, o_hbm):
        pltpu.emit_pipeline(
            body, grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=[pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j))])(a_hbm, b_hbm, o_hbm)

    hbm = pl.BlockSpec(memory_space=pl.ANY)
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
                          in_specs=[hbm] * 3, out_specs=hbm, input_output_aliases={2: 0},
                          interpret=interpret)(a, b, jnp.zeros((m, n), jnp.float32))


# -- a ring all-reduce over devices (interpreted only) -------------------
def ring_all_reduce(x, mesh):
    n = mesh.shape["x"]

    def kernel(x_ref, o_ref, buf, send_sem, recv_sem):
        right = jax.lax.rem(jax.lax.axis_index("x") + 1, n)
        o_ref[...] = x_ref[...]
        buf[0] = x_ref[...]
        for step in range(n - 1):
            s = step % 2
            copy = pltpu.make_async_remote_copy(buf.at[s], buf.at[1 - s], send_sem, recv_sem,
                                                device_id=(right,),
                                                device_id_type=pltpu.DeviceIdType.MESH)
            copy.start()
            copy.wait()
            o_ref[...] += buf[1 - s]

    def per_device(block):
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(block.shape, block.dtype),
            scratch_shapes=[pltpu.VMEM((2, *block.shape), block.dtype),
                            pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA])(block)

    spec = jax.sharding.PartitionSpec("x")
    return jax.shard_map(per_device, mesh=mesh, in_specs=spec, out_specs=spec,
                         check_vma=False)(x)


def tpu_kernels(f, *args):
    """The number of `tpu_custom_call`s in `f`'s StableHLO for TPU, and its
    length."""
    text = jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",)).as_text("stablehlo")
    return text.count('"tpu_custom_call"'), len(text)


def main():
    x = jnp.arange(64 * 128, dtype=jnp.float32).reshape(64, 128) / 100
    got = double_buffer(x, interpret=CHECKED)
    np.testing.assert_allclose(np.asarray(got), np.asarray(x) * 2)
    print("double-buffered DMA: checked run ok; TPU custom calls, StableHLO characters:",
          tpu_kernels(double_buffer, x))

    q = jnp.sin(jnp.arange(256 * 128, dtype=jnp.float32).reshape(256, 128) / 300)
    k = jnp.cos(jnp.arange(512 * 128, dtype=jnp.float32).reshape(512, 128) / 300)
    v = jnp.sin(jnp.arange(512 * 128, dtype=jnp.float32).reshape(512, 128) / 700)
    s = np.asarray(q) @ np.asarray(k).T
    p = np.exp(s - s.max(axis=1, keepdims=True))
    want = (p / p.sum(axis=1, keepdims=True)) @ np.asarray(v)
    np.testing.assert_allclose(np.asarray(flash_attention(q, k, v, interpret=CHECKED)), want,
                               rtol=1e-4, atol=1e-5)
    print("flash attention: checked run ok; TPU custom calls, StableHLO characters:",
          tpu_kernels(flash_attention, q, k, v))

    a = jnp.arange(64 * 64, dtype=jnp.float32).reshape(64, 64) / 1000
    b = jnp.cos(a)
    np.testing.assert_allclose(np.asarray(pipelined_matmul(a, b, interpret=CHECKED)),
                               np.asarray(a) @ np.asarray(b), rtol=1e-4, atol=1e-4)
    print("emit_pipeline matmul: checked run ok (not lowered for TPU yet)")

    devices = jax.devices()
    if len(devices) >= 4:
        mesh = jax.sharding.Mesh(np.array(devices[:4]), ("x",))
        xs = jnp.arange(4 * 8 * 128, dtype=jnp.float32).reshape(32, 128) / 64
        total = np.asarray(xs).reshape(4, 8, 128).sum(0)
        np.testing.assert_allclose(np.asarray(ring_all_reduce(xs, mesh)),
                                   np.tile(total, (4, 1)), rtol=1e-6)
        print("ring all-reduce over 4 devices: equals the sum (interpreted, not lowered)")
    else:
        print("ring all-reduce: needs 4 devices (EMBER_NUM_CPU_DEVICES=4)")


if __name__ == "__main__":
    main()

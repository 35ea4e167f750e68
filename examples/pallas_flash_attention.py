"""Flash-attention forward as a Pallas kernel (`pl.pallas_call`).

Each grid point owns one block of queries of one (batch, head); it streams
the keys and values block by block, keeping the running maximum, the
softmax denominator and the output accumulator (the online softmax), so the
full attention matrix never exists. The same kernel compiles for NVIDIA
GPUs (`flash_attention_call(...).lower(q, k, v)`: products on the CUDA
cores, online softmax with warp shuffles). Run it to compare with the plain
formula:

    .venv/bin/python examples/pallas_flash_attention.py
"""

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax
from ember.experimental import pallas as pl


def flash_attention(q, k, v, *, block_q=64, block_k=64, causal=False):
    """softmax(q k^T / sqrt(d)) v for q, k, v of shape [batch, heads, seq, d]."""
    return flash_attention_call(q.shape, q.dtype, block_q=block_q, block_k=block_k,
                                causal=causal)(q, k, v)


def flash_attention_call(shape, dtype, *, block_q=64, block_k=64, causal=False):
    """The `pallas_call` of `flash_attention` for arrays of `shape`: call it
    on q, k, v, or compile it for a GPU with `.lower(q, k, v)`."""
    b, h, s, d = shape
    scale = 1.0 / np.sqrt(d)
    kv_blocks = s // block_k

    def kernel(q_ref, k_ref, v_ref, o_ref):
        qi = pl.program_id(2)
        q_blk = q_ref[...].astype(jnp.float32) * scale
        m0 = jnp.full((block_q,), -jnp.inf, jnp.float32)
        l0 = jnp.zeros((block_q,), jnp.float32)
        acc0 = jnp.zeros((block_q, d), jnp.float32)

        def body(j, carry):
            m, l_sum, acc = carry
            k_blk = k_ref[pl.ds(j * block_k, block_k), :].astype(jnp.float32)
            v_blk = v_ref[pl.ds(j * block_k, block_k), :].astype(jnp.float32)
            s_blk = q_blk @ k_blk.T
            if causal:
                rows = qi * block_q + lax.broadcasted_iota(jnp.int32, s_blk.shape, 0)
                cols = j * block_k + lax.broadcasted_iota(jnp.int32, s_blk.shape, 1)
                s_blk = jnp.where(cols <= rows, s_blk, -jnp.inf)
            m_new = jnp.maximum(m, s_blk.max(axis=1))
            p = jnp.exp(s_blk - m_new[:, None])
            alpha = jnp.exp(m - m_new)
            return m_new, alpha * l_sum + p.sum(axis=1), alpha[:, None] * acc + p @ v_blk

        last = (qi + 1) * block_q // block_k if causal else kv_blocks
        _, l_sum, acc = lax.fori_loop(0, last, body, (m0, l0, acc0))
        o_ref[...] = (acc / l_sum[:, None]).astype(o_ref.dtype)

    q_spec = pl.BlockSpec((None, None, block_q, d), lambda bi, hi, qi: (bi, hi, qi, 0))
    kv_spec = pl.BlockSpec((None, None, s, d), lambda bi, hi, qi: (bi, hi, 0, 0))
    return pl.pallas_call(
        kernel, out_shape=ember.ShapeDtypeStruct(shape, dtype), grid=(b, h, s // block_q),
        in_specs=[q_spec, kv_spec, kv_spec], out_specs=q_spec)


def reference(q, k, v, causal=False):
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhqk,bhkd->bhqd", p / p.sum(-1, keepdims=True), v)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 2, 256, 64)).astype(np.float32) for _ in range(3))
    for causal in (False, True):
        attend = ember.jit(flash_attention, static_argnames=("causal",))
        out = attend(q, k, v, causal=causal)
        err = np.abs(np.asarray(out) - reference(q, k, v, causal)).max()
        print(f"causal={causal}: max |error| vs the plain formula = {err:.2e}")
        # The same kernel compiled for a Hopper GPU (PTX only: nothing runs).
        ptx = flash_attention_call(q.shape, q.dtype, causal=causal).lower(
            q, k, v, chip="sm_90a").as_text("ptx")
        print(f"causal={causal}: compiled for sm_90a, {len(ptx.splitlines())} lines of PTX")

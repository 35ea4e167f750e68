"""`jax.scipy.cluster.vq`: assign observations to their nearest code."""

import ember.numpy as jnp

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
    """Assign codes from `code_book` (K, N) to the observations `obs` (M, N)
    by least Euclidean distance (1-D arguments are length-1 vectors).

    Returns (code, dist): the index of each observation's nearest code (the
    first one on ties), int32, and the distance to it. `check_finite` is
    unused, as in JAX."""
    obs = jnp.asarray(obs)
    code_book = jnp.asarray(code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError("ndim different than 1 or 2 are not supported")
    dt = jnp.result_type(obs, code_book)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.result_type(float)
    diff = obs.astype(dt)[:, None, :] - code_book.astype(dt)[None, :, :]
    sq = jnp.real(diff * jnp.conj(diff)) if jnp.iscomplexobj(diff) else diff * diff
    dist = jnp.sqrt(jnp.sum(sq, axis=-1))
    code = jnp.argmin(dist, axis=-1).astype(jnp.int32)
    return code, jnp.min(dist, axis=-1)

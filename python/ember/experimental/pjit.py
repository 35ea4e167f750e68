"""`ember.experimental.pjit`: JAX's deprecated `pjit`, which is `jit` with
`in_shardings`/`out_shardings`."""

from ember._src import api

__all__ = ["pjit"]


def pjit(fun=None, in_shardings=None, out_shardings=None, static_argnums=None,
         static_argnames=None, donate_argnums=None, donate_argnames=None, keep_unused=False,
         device=None, backend=None, inline=False, compiler_options=None):
    """`ember.jit(fun, in_shardings=..., out_shardings=..., ...)`."""
    return api.jit(fun, in_shardings=in_shardings, out_shardings=out_shardings,
                   static_argnums=() if static_argnums is None else static_argnums,
                   static_argnames=() if static_argnames is None else static_argnames,
                   donate_argnums=() if donate_argnums is None else donate_argnums,
                   donate_argnames=() if donate_argnames is None else donate_argnames,
                   keep_unused=keep_unused, device=device, backend=backend, inline=inline)

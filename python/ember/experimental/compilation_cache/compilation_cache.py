"""JAX's `jax.experimental.compilation_cache.compilation_cache`: the
persistent compilation cache's directory (`jax_compilation_cache_dir`)."""

from ember._src.config import config as _config


def set_cache_dir(path):
    """Sets the persistent compilation cache's directory (as
    `jax.config.update("jax_compilation_cache_dir", path)`)."""
    _config.update("jax_compilation_cache_dir", None if path is None else str(path))


def reset_cache():
    """Forgets the cache's directory (JAX's reset of its cache object; the
    entries on disk stay)."""
    _config.update("jax_compilation_cache_dir", None)


__all__ = ["reset_cache", "set_cache_dir"]

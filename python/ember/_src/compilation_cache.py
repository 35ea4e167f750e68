"""The persistent compilation cache (`jax_compilation_cache_dir`): object
code of compiled programs on disk, so a second process compiles nothing.

An entry is keyed by a SHA-256 of everything the code depends on: the cache
format, Ember's version, the target, its stage pipelines, the optimization
level, the host CPU and its features (`Target.cache_key`), and the traced
program's text with its argument and result types. The file holds the magic
`EMBERCC1`, the SHA-256 of the object code, then the object code: a corrupt
or truncated entry fails the digest and is recompiled (and rewritten), never
loaded. Entries are written to a temporary file and renamed into place, so
processes writing the same entry at once leave one whole file.
"""

import hashlib
import os
import tempfile
import time

from .config import config

_MAGIC = b"EMBERCC1"
_FORMAT = "1"


def directory():
    return (config.jax_compilation_cache_dir or os.environ.get("JAX_COMPILATION_CACHE_DIR")
            or os.environ.get("EMBER_COMPILATION_CACHE_DIR"))


def enabled(target):
    return target.load_object is not None and bool(directory())


def key(target, text, in_avals, out_avals, opt_level):
    import importlib

    version = importlib.import_module("ember").__version__
    parts = [_FORMAT, version, target.name, repr(target.stages), str(opt_level),
             target.cache_key(), repr([(a.shape, str(a.dtype)) for a in in_avals]),
             repr([(a.shape, str(a.dtype)) for a in out_avals]), text]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _path(k):
    return os.path.join(directory(), f"ember-{k}.bin")


def load(k):
    """The object code of entry `k`, or None (missing, corrupt, truncated)."""
    try:
        with open(_path(k), "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < 40 or data[:8] != _MAGIC or hashlib.sha256(data[40:]).digest() != data[8:40]:
        return None
    return data[40:]


def store(k, object_file, seconds):
    """Stores the object code written to `object_file` as entry `k`, when
    the compilation took at least `jax_persistent_cache_min_compile_time_secs`
    and the entry is at least `jax_persistent_cache_min_entry_size_bytes`."""
    try:
        with open(object_file, "rb") as f:
            obj = f.read()
    except OSError:
        return
    if seconds < config.jax_persistent_cache_min_compile_time_secs:
        return
    if len(obj) < max(config.jax_persistent_cache_min_entry_size_bytes, 1):
        return
    d = directory()
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".ember-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + hashlib.sha256(obj).digest() + obj)
        os.replace(tmp, _path(k))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def object_file():
    """A fresh path for the JIT to write object code to."""
    fd, path = tempfile.mkstemp(prefix="ember-obj-", suffix=".o")
    os.close(fd)
    return path


def load_or_compile(k, load_object, compile):
    """Entry `k`'s code loaded by `load_object(bytes)`, or (no entry, an
    unusable one, or `k` None: no cache) `compile(object_path)`'s, whose
    object code is stored as entry `k` (object_path is "" without a key).
    Returns (kernel, whether it was loaded)."""
    if k is not None:
        obj = load(k)
        if obj is not None:
            try:
                return load_object(obj), True
            except RuntimeError:
                pass  # an unusable entry: compiled again and rewritten below
    start = time.perf_counter()
    path = object_file() if k is not None else ""
    try:
        kernel = compile(path)
        if k is not None:
            store(k, path, time.perf_counter() - start)
    finally:
        if path:
            os.unlink(path)
    return kernel, False


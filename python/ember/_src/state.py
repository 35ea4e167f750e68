"""Mutable array references inside a trace (Pallas kernels, `run_state`).

A `Ref` is a Python cell holding the current traced value of an array;
reading (`ref[idx]`) slices that value and writing (`ref[idx] = v`) replaces
it with an updated copy. Nothing mutable reaches the IR: a kernel over refs
traces to ordinary value semantics ("discharging" the state, as JAX does for
Pallas' interpret mode), so it composes with every transformation.

Refs live in scopes (a kernel invocation, `run_scoped`). Control flow traced
while refs are live (`cond`, `while_loop`, `fori_loop`, `scan`, `pl.when`,
`pl.loop`) threads their values through the region as extra operands and
results, so a write inside a loop body is seen by the next iteration and
after the loop: `control_flow` asks `live_refs()` and wraps its callables
with `stateful`.
"""

import numpy as np

from . import core, dtypes, lax
from .core import as_value
from .numpy import lax_numpy as jnp

_scopes = []


def live_refs():
    """Every ref of the enclosing scopes, outermost first."""
    return [r for scope in _scopes for r in scope]


class scope:
    """Makes `refs` live for the duration of a `with` block."""

    def __init__(self, refs):
        self.refs = list(refs)

    def __enter__(self):
        _scopes.append(self.refs)
        return self.refs

    def __exit__(self, *exc):
        _scopes.pop()


def values(refs):
    return [r._value for r in refs]


def bind(refs, vals):
    for r, v in zip(refs, vals):
        r._value = v


def stateful(fun, refs):
    """The pure form of `fun`, which may read and write `refs`:
    `pure(ref_values, *args) -> (new_ref_values, fun's result)`. The refs
    hold their previous values again when `pure` returns (it may be traced
    more than once, e.g. probed for result types)."""

    def pure(vals, *args):
        saved = values(refs)
        bind(refs, list(vals))
        try:
            out = fun(*args)
            return values(refs), out
        finally:
            bind(refs, saved)

    return pure


class Slice:
    """`pl.ds(start, size, stride)`: `size` elements from `start` (which may
    be traced), every `stride`-th."""

    def __init__(self, start, size, stride=1):
        self.start, self.size, self.stride = start, int(size), int(stride)
        if self.size < 0 or self.stride < 1:
            raise ValueError(
                f"pl.ds: size must be >= 0 and stride >= 1, got size={size} "
                f"stride={stride} (at {core.where()})"
            )

    def __repr__(self):
        return f"Slice(start={self.start}, size={self.size}, stride={self.stride})"


def ds(start, size=None, stride=None):
    if start is None:
        return slice(None)
    if size is None:
        # pl.ds(n): n elements from the first (every `stride`-th).
        if isinstance(start, int):
            return Slice(0, start, stride) if stride not in (None, 1) else slice(start)
        raise ValueError(f"pl.ds: a traced start needs a static size (at {core.where()})")
    return Slice(start, size, 1 if stride is None else stride)


def uninitialized(shape, dtype):
    """What an unwritten buffer holds in interpret mode (JAX's choice): NaN
    for floats, the smallest integer, False."""
    dtype = np.dtype(dtype)
    if dtypes.is_float(dtype) or dtypes.is_complex(dtype):
        fill = np.nan
    elif dtypes.is_bool(dtype):
        fill = False
    else:
        fill = np.iinfo(dtype).min
    return lax.full(tuple(shape), fill, dtype)


def _static_int(v):
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, core.Array) and v.ndim == 0:
        return int(v)
    return None


def _normalize(shape, idx, what):
    """Index -> one entry per dimension: ("at", i) drops the dimension,
    ("ds", Slice) keeps `size` of it, ("gather", array) is an integer array."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(i is None for i in idx):
        raise IndexError(f"{what}: None (newaxis) is not an index of a ref (at {core.where()})")
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError(f"{what}: an index can only have a single ellipsis (at {core.where()})")
    if n_ell:
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (len(shape) - len(idx) + 1) + idx[k + 1 :]
    if len(idx) > len(shape):
        raise IndexError(
            f"{what}: too many indices for a ref of shape {tuple(shape)}: "
            f"{len(idx)} (at {core.where()})"
        )
    idx = idx + (slice(None),) * (len(shape) - len(idx))
    out = []
    for d, (n, i) in enumerate(zip(shape, idx)):
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            size = max(0, -(-(stop - start) // step)) if step > 0 else None
            if size is None:
                raise IndexError(
                    f"{what}: negative slice steps are not supported on refs (at {core.where()})"
                )
            out.append(("ds", Slice(start, size, step)))
        elif isinstance(i, Slice):
            out.append(("ds", i))
        else:
            s = _static_int(i)
            if s is not None:
                if not -n <= s < n:
                    raise IndexError(
                        f"{what}: index {s} is out of bounds for axis {d} with "
                        f"size {n} (at {core.where()})"
                    )
                out.append(("at", s % n))
                continue
            v = as_value(i)
            if not dtypes.is_int(v.dtype):
                raise IndexError(
                    f"{what}: indices must be integers, got {v.aval.str_short()} "
                    f"(at {core.where()})"
                )
            out.append(("at", v) if v.ndim == 0 else ("gather", v))
    return out


def _is_windowed(norm):
    return all(k != "gather" and (k == "at" or s.stride == 1) for k, s in norm)


def _window(norm):
    starts = [s if k == "at" else s.start for k, s in norm]
    sizes = [1 if k == "at" else s.size for k, s in norm]
    return starts, sizes


def _advanced(norm):
    """The same index for jnp's `x[...]` / `x.at[...]` (strided or array
    indices): each dimension an index array, broadcast as an outer product."""
    arrays, rank = [], sum(1 for k, _ in norm if k == "ds")
    pos = 0
    for k, s in norm:
        if k == "ds":
            a = as_value(s.start) + s.stride * jnp.arange(s.size, dtype=np.int32)
            shape = [1] * rank
            shape[pos] = s.size
            arrays.append(jnp.reshape(a, shape))
            pos += 1
        else:
            arrays.append(s)
    return tuple(arrays)


def _pad_for(x, sizes):
    """x padded at the end of every dimension by the window size, so that a
    window starting in bounds is never shifted back by dynamic_slice's
    clamping (masked accesses at the edge of an array)."""
    return lax.pad(x, _fill(x.dtype), [(0, s, 0) for s in sizes])


def _fill(dtype):
    return uninitialized((), dtype)


def _resolve(ref, idx, what):
    """(the underlying Ref, the index normalized against it)."""
    if not isinstance(ref, _RefBase):
        raise TypeError(f"{what}: expected a ref, got {type(ref).__name__} (at {core.where()})")
    base, norm = (ref.base if isinstance(ref, RefView) else ref), ref.compose(idx, what)
    # A ref may watch its accesses (the plgpu interpreter's race checks).
    if (hook := getattr(base, "_access", None)) is not None:
        hook("load" if what == "load" else "store", norm)
    return base, norm


def load(ref, idx=(), mask=None, other=None):
    ref, norm = _resolve(ref, idx, "load")
    x = ref._value
    if _is_windowed(norm):
        starts, sizes = _window(norm)
        src = _pad_for(x, sizes) if mask is not None else x
        out = lax.dynamic_slice(src, starts, sizes)
        out = jnp.reshape(out, [s.size for k, s in norm if k == "ds"])
    else:
        out = x[_advanced(norm)]
    if mask is not None:
        fill = other if other is not None else _fill(out.dtype)
        out = jnp.where(mask, out, jnp.asarray(fill, out.dtype))
    return out


def _as_stored(ref, val, shape, what):
    v = as_value(val)
    if v.dtype != ref.dtype:
        if not v.weak_type:
            raise TypeError(
                f"{what}: the value's dtype {v.dtype} does not match the ref's "
                f"{ref.dtype} (at {core.where()})"
            )
    v = lax.convert_element_type(v, ref.dtype)
    if tuple(v.shape) != tuple(shape):
        try:
            v = jnp.broadcast_to(v, shape)
        except (TypeError, ValueError):
            raise ValueError(
                f"{what}: a value of shape {tuple(v.shape)} does not fit the "
                f"indexed ref of shape {tuple(shape)} (at {core.where()})"
            ) from None
    return v


def store(ref, idx, val, mask=None):
    ref, norm = _resolve(ref, idx, "store")
    x = ref._value
    if _is_windowed(norm):
        starts, sizes = _window(norm)
        shape = [s.size for k, s in norm if k == "ds"]
        v = _as_stored(ref, val, shape, "store")
        if mask is None:
            ref._value = lax.dynamic_update_slice(x, jnp.reshape(v, sizes), starts)
            return
        padded = _pad_for(x, sizes)
        old = jnp.reshape(lax.dynamic_slice(padded, starts, sizes), shape)
        new = jnp.where(mask, v, old)
        padded = lax.dynamic_update_slice(padded, jnp.reshape(new, sizes), starts)
        ref._value = lax.slice(padded, [0] * x.ndim, x.shape)
    else:
        index = _advanced(norm)
        shape = jnp.zeros(x.shape, np.bool_)[index].shape
        v = _as_stored(ref, val, shape, "store")
        if mask is not None:
            v = jnp.where(mask, v, x[index])
        ref._value = x.at[index].set(v)


def _view_shape(norm):
    return tuple(s.size for k, s in norm if k == "ds")


def _compose(norm, inner):
    """The index `inner` (normalized against the view) in the coordinates of
    the view's base."""
    out, it = [], iter(inner)
    for k, s in norm:
        if k != "ds":
            out.append((k, s))
            continue
        k2, s2 = next(it)
        if k2 == "ds":
            out.append(("ds", Slice(s.start + s2.start * s.stride, s2.size, s.stride * s2.stride)))
        else:
            out.append((k2, s.start + s2 * s.stride))
    return out


class _At:
    def __init__(self, ref):
        self.ref = ref

    def __getitem__(self, idx):
        base = self.ref.base if isinstance(self.ref, RefView) else self.ref
        return RefView(base, self.ref.compose(idx, "ref.at"))


class _RefBase:
    """What refs and their views share: `ref[idx]` reads, `ref[idx] = v`
    writes, `ref.at[idx]` is a view. Subclasses give `shape`, `dtype` and
    `compose(idx, what)` (the index in the underlying ref's coordinates)."""

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def at(self):
        return _At(self)

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, idx):
        return load(self, idx)

    def __setitem__(self, idx, val):
        store(self, idx, val)

    def __jax_array__(self):
        return load(self, ())

    def __repr__(self):
        aval = core.ShapedArray(self.shape, self.dtype).str_short()
        return f"{type(self).__name__}{{{aval}}}"


class RefView(_RefBase):
    """`ref.at[idx]`: a window of a ref, read and written through it."""

    def __init__(self, base, norm):
        if any(k == "gather" for k, _ in norm):
            raise NotImplementedError(
                f"ref.at[...] with integer-array indices is not supported (at {core.where()})"
            )
        self.base, self.norm = base, norm

    def compose(self, idx, what):
        return _compose(self.norm, _normalize(self.shape, idx, what))

    @property
    def shape(self):
        return _view_shape(self.norm)

    @property
    def dtype(self):
        return self.base.dtype


class Ref(_RefBase):
    """A mutable array: `ref[idx]` reads, `ref[idx] = v` writes, `ref[...]`
    is all of it; `ref.at[idx]` is a view of a window of it."""

    def __init__(self, value):
        v = as_value(value)
        if v.weak_type:
            v = lax.convert_element_type(v, v.dtype)
        self._value = v

    @property
    def shape(self):
        return tuple(self._value.shape)

    @property
    def dtype(self):
        return self._value.dtype

    def compose(self, idx, what):
        return _normalize(self.shape, idx, what)

    def get(self, idx=()):
        return load(self, idx)

    def set(self, val, idx=()):
        store(self, idx, val)

    def swap(self, val, idx=()):
        old = load(self, idx)
        store(self, idx, val)
        return old


def run_state(f):
    """JAX's `run_state`: `run_state(f)(init)` runs `f` on refs holding the
    pytree `init` and returns their final values."""
    from . import tree_util
    from .api import eager

    def run(init):
        leaves, tree = tree_util.tree_flatten(init)
        refs = [Ref(x) for x in leaves]
        with scope(refs):
            f(tree_util.tree_unflatten(tree, refs))
        return tree_util.tree_unflatten(tree, values(refs))

    def call(init):
        return eager(run, (init,)) if not core._trace_stack else run(init)

    return call

"""Mutable array references: Pallas kernels' refs, `run_state`, and JAX's
`Ref`s (`new_ref`, `freeze`, `ref.get/swap/addupdate`).

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

Every trace knows the refs it may use (`Trace.refs`): those created in it
and those threaded into it. A ref from outside used in a `jit` function (an
argument or closed over) is *lifted*: its value becomes an extra argument
and its final value an extra result, which the caller writes back after the
call, so the caller sees the update (`core.trace_function`). A function
traced for a transformation lifts the same way (`core.trace_subfunction`).
A loop or branch body cannot grow operands once its op is being built: a
ref it uses that is not threaded raises `UnthreadedRef`, and the control-flow
op (`retry`) removes what it emitted, threads the ref and traces again.
"""

import contextlib
import threading

import numpy as np

from ember._mlir import ir

from . import core, dtypes, lax
from .core import as_value
from .numpy import lax_numpy as jnp


class UnthreadedRef(Exception):
    """A loop or branch body used a ref that is not threaded through it
    (caught by `retry`)."""

    def __init__(self, ref):
        super().__init__("a ref used in a region it is not threaded through")
        self.ref = ref


def live_refs():
    """The refs the current trace may use, in the order they became usable."""
    trace = core.current_trace()
    return [] if trace is None else list(trace.refs.values())


def _register(trace, refs):
    if trace is not None:
        for r in refs:
            trace.refs[id(r)] = r


class scope:
    """Makes `refs` usable in the current trace for a `with` block (a
    kernel's refs: not threaded through loops after it)."""

    def __init__(self, refs):
        self.refs = list(refs)

    def __enter__(self):
        self.trace = core.current_trace()
        _register(self.trace, self.refs)
        return self.refs

    def __exit__(self, *exc):
        if self.trace is not None:
            for r in self.refs:
                self.trace.refs.pop(id(r), None)


def values(refs):
    return [r._value for r in refs]


def bind(refs, vals):
    for r, v in zip(refs, vals):
        r._value = v


def bind_written(refs, vals):
    """`bind`, for refs a transformation op wrote (its results)."""
    bind(refs, vals)
    if (trace := core.current_trace()) is not None:
        trace.written.update(id(r) for r in refs)


def stateful(fun, refs):
    """The pure form of `fun`, which may read and write `refs`:
    `pure(ref_values, *args) -> (new_ref_values, fun's result)`. The refs
    hold their previous values again when `pure` returns (it may be traced
    more than once, e.g. probed for result types)."""

    def pure(vals, *args):
        saved = values(refs)
        bind(refs, list(vals))
        trace = core.current_trace()
        _register(trace, refs)
        try:
            out = fun(*args)
            # A ref written here is written by the op being built around
            # this body (in the trace one up), so that a transformation
            # tracing that op returns its final value (`core._finish_refs`).
            parent = getattr(trace, "parent", None)
            if parent is not None:
                parent.written.update(id(r) for r in refs if id(r) in trace.written)
            return values(refs), out
        finally:
            bind(refs, saved)

    return pure


def _mark(trace):
    """What `retry` needs to undo an attempt: how many ops the trace's block
    and the module's top level hold (ops are only appended to both), and
    the values of the refs usable here."""
    return (len(trace.block.operations), len(trace.module.body.operations),
            {k: (r, r._value) for k, r in trace.refs.items()})


def _undo(trace, mark):
    n_block, n_module, refs = mark
    for block, keep in ((trace.block, n_block), (trace.module.body, n_module)):
        ops = block.operations
        for i in range(len(ops) - 1, keep - 1, -1):
            ops[i].operation.erase()
    for r, v in refs.values():
        r._value = v


def undone_on(exc, run):
    """`run()`; where it raises `exc`, None, with what it emitted into the
    current trace removed (as `retry` removes an attempt)."""
    trace = core.current_trace()
    mark = _mark(trace) if trace is not None else None
    try:
        return run()
    except exc:
        if mark is not None:
            _undo(trace, mark)
        return None


def retry(run):
    """Runs `run()` (which emits one control-flow op into the current trace)
    until no body in it uses a ref that is not threaded: each time one does,
    what was emitted is removed, the ref is made usable here (lifted when
    this trace is a function) and the op is traced again. A ref this trace
    cannot reach either goes up to the enclosing control-flow op."""
    trace = core.current_trace()
    while True:
        mark = _mark(trace)
        try:
            return run()
        except UnthreadedRef as e:
            _undo(trace, mark)
            if id(e.ref) in mark[2]:
                raise  # usable here already: an enclosing op must thread it
            _accessible(e.ref, trace)


def _lift(ref, trace):
    """Makes the value of `ref` (usable in the parent trace, or concrete for
    the root) an extra argument of the function `trace` builds."""
    outer = ref._value
    with trace.ctx:
        arg = trace.block.add_argument(core.mlir_type(outer.aval),
                                       ir.Location.unknown(trace.ctx))
    if trace.parent is not None:
        trace._capture_args[("ref", id(ref))] = arg
        trace.captured.append(outer)
    src = core._source(outer) if trace.concrete else None
    ref._value = core.Tracer(trace, arg, outer.aval, src)
    trace.lifted.append((ref, outer))
    trace.refs[id(ref)] = ref


def _accessible(ref, trace):
    """Makes `ref` usable in `trace` (see the module's docstring) or raises
    UnthreadedRef for the control-flow op that must thread it."""
    if trace is None or id(ref) in trace.refs:
        return
    if isinstance(trace, core.RegionTrace):
        raise UnthreadedRef(ref)
    if trace.parent is None:
        if isinstance(ref._value, core.Tracer):
            raise core.type_error("a mutable array reference (Ref) created in a transformed "
                                  "function was used after that function returned")
        if id(ref) in getattr(trace, "arg_refs", ()):
            fun = getattr(trace, "traced_fun", None)
            name = f"{core.describe_function(fun)} " if fun is not None else ""
            path = trace.arg_refs[id(ref)]
            raise core.type_error(
                f"when tracing {name}for jit, a mutable array reference of type "
                f"{type_str(ref)} was both closed over and passed as "
                f"{f'the argument {path}' if path else 'an argument'}")
        _lift(ref, trace)
        return
    _accessible(ref, trace.parent)
    _lift(ref, trace)


def check_access(ref, write=False):
    """Every read and write of a ref goes through here."""
    if getattr(ref, "_frozen", False):
        raise core.type_error(f"{ref!r} was frozen (jax.freeze): it cannot be used again")
    trace = core.current_trace()
    if trace is None:
        if isinstance(ref._value, core.Tracer):
            raise core.type_error("a mutable array reference (Ref) created in a transformed "
                                  "function was used after that function returned")
        return
    _accessible(ref, trace)
    if write:
        trace.written.add(id(ref))


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
    check_access(base, write=what != "load")
    # A ref may watch its accesses (the plgpu interpreter's race checks).
    if (hook := getattr(base, "_access", None)) is not None:
        hook("load" if what == "load" else "store", norm)
    return base, norm


# Reads and writes of a kernel's buffers traced for the TPU target that
# Mosaic has ops for (strided windows, masked stores): set by
# pallas/tpu_kernel.py, called for refs with a `_tpu_buffer` number; returns
# the value read (the buffer's new value for "store"), or None for the
# general path.
kernel_access = None


def load(ref, idx=(), mask=None, other=None):
    ref, norm = _resolve(ref, idx, "load")
    if kernel_access is not None and getattr(ref, "_tpu_buffer", None) is not None \
            and not _is_windowed(norm) \
            and (out := kernel_access("load", ref, norm, None, mask)) is not None:
        return out
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


def _covers(norm, shape):
    return all(k == "ds" and s.start is not None and isinstance(s.start, int) and s.start == 0
               and s.size == n and s.stride == 1 for (k, s), n in zip(norm, shape))


class _Masks(threading.local):
    def __init__(self):
        self.stack = []


# Lane masks (`masked`): a conditional body run on every lane of a named
# axis whose lanes exchange data (the devices or cores of a Pallas kernel),
# its writes kept only where the condition holds.
_masks = _Masks()


@contextlib.contextmanager
def masked(condition):
    """Runs a block whose ref writes take effect only on the lanes where
    `condition` holds (pl.when over lanes: a remote operation inside must
    still reach lanes whose own condition is false, which a conditional
    op, taken per lane, cannot do)."""
    outer = _masks.stack[-1] if _masks.stack else None
    cond = as_value(condition).astype(np.bool_)
    _masks.stack.append(cond if outer is None else (outer & cond))
    try:
        yield
    finally:
        _masks.stack.pop()


def lane_mask():
    """The condition of the innermost `masked` block (None outside)."""
    return _masks.stack[-1] if _masks.stack else None


@contextlib.contextmanager
def unmasked():
    """A block whose writes are not masked: what another lane sent here."""
    saved, _masks.stack = _masks.stack, []
    try:
        yield
    finally:
        _masks.stack = saved


def _set_value(ref, new):
    mask = lane_mask()
    ref._value = new if mask is None else jnp.where(mask, new, ref._value)


def store(ref, idx, val, mask=None):
    ref, norm = _resolve(ref, idx, "store")
    if kernel_access is not None and getattr(ref, "_tpu_buffer", None) is not None and \
            (mask is not None or not _is_windowed(norm)):
        shape = [s.size for k, s in norm if k == "ds"]
        v = _as_stored(ref, val, shape, "store")
        if (new := kernel_access("store", ref, norm, v, mask)) is not None:
            _set_value(ref, new)
            return
    x = ref._value
    if _is_windowed(norm):
        starts, sizes = _window(norm)
        shape = [s.size for k, s in norm if k == "ds"]
        v = _as_stored(ref, val, shape, "store")
        if mask is None:
            new = lax.dynamic_update_slice(x, jnp.reshape(v, sizes), starts)
            if getattr(ref, "_array_ref", False) and _covers(norm, x.shape):
                # A whole new value: the ref takes its weak type (as JAX's).
                new = lax.convert_element_type(new, ref.dtype, as_value(val).weak_type)
            _set_value(ref, new)
            return
        padded = _pad_for(x, sizes)
        old = jnp.reshape(lax.dynamic_slice(padded, starts, sizes), shape)
        new = jnp.where(mask, v, old)
        padded = lax.dynamic_update_slice(padded, jnp.reshape(new, sizes), starts)
        _set_value(ref, lax.slice(padded, [0] * x.ndim, x.shape))
    else:
        index = _advanced(norm)
        shape = jnp.zeros(x.shape, np.bool_)[index].shape
        v = _as_stored(ref, val, shape, "store")
        if mask is not None:
            v = jnp.where(mask, v, x[index])
        _set_value(ref, x.at[index].set(v))


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


def type_str(ref):
    """A ref's type as JAX prints it (`Ref{float32[3]}`)."""
    return f"Ref{{{ref._value.aval.str_short()}}}"


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
    is all of it; `ref.at[idx]` is a view of a window of it. `jax.new_ref`
    makes one (`array_ref=True`: JAX's `Ref`, which is not an array and
    keeps a weak type); Pallas makes them for a kernel's operands."""

    _is_ref = True

    def __init__(self, value, *, array_ref=False):
        v = as_value(value)
        if v.weak_type and not array_ref:
            v = lax.convert_element_type(v, v.dtype)
        self._value = v
        self._array_ref = array_ref
        self._frozen = False
        self._home = core.current_trace()
        _register(self._home, [self])

    @property
    def shape(self):
        return tuple(self._value.shape)

    @property
    def dtype(self):
        return self._value.dtype

    @property
    def weak_type(self):
        return self._value.weak_type

    @property
    def aval(self):
        return self._value.aval

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

    def unsafe_buffer_pointer(self):
        """The address of the ref's buffer (JAX's method): a jitted function
        that writes the ref updates that buffer in place on the CPU."""
        if isinstance(self._value, core.Tracer) or self._frozen:
            raise TypeError(f"unsafe_buffer_pointer: {self!r} has no buffer here: it is "
                            f"traced or frozen (at {core.where()})")
        return self._value.unsafe_buffer_pointer()

    def __jax_array__(self):
        if self._array_ref:
            raise TypeError(
                f"a mutable array reference {self!r} is not an array: read its value with "
                f"ref[...] first (at {core.where()})")
        return load(self, ())

    def __repr__(self):
        if not self._array_ref:
            return super().__repr__()
        aval = core.ShapedArray(self.shape, self.dtype, self.weak_type)
        if isinstance(self._value, core.Tracer) or self._frozen:
            return f"Ref{{{aval.str_short()}}}"
        # (Continuation lines are indented as an Array's, as JAX prints them.)
        body = np.array2string(np.asarray(self._value), separator=", ", prefix="Array(")
        weak = ", weak_type=True" if self.weak_type else ""
        return f"Ref({body}, dtype={self.dtype.name}{weak})"

    def __str__(self):
        return repr(self)

    def __iter__(self):
        if self._array_ref:
            raise TypeError(f"iteration over a mutable array reference {self!r} is not "
                            f"supported (at {core.where()})")
        return (self[i] for i in range(len(self)))


def _check_ref(ref, what):
    if not isinstance(ref, _RefBase):
        raise TypeError(f"{what}: expected a Ref, got {type(ref).__name__} (at {core.where()})")


def new_ref(init_val, *, memory_space=None, kind=None):
    """JAX's `jax.new_ref`: a new mutable array holding `init_val`."""
    if isinstance(init_val, _RefBase):
        raise TypeError(f"new_ref: refs of refs are not supported (at {core.where()})")
    return Ref(init_val, array_ref=True)


def empty_ref(ty, *, memory_space=None):
    """JAX's `jax.empty_ref`: a new mutable array of the shape and dtype of
    `ty` (a ShapeDtypeStruct or an array); its contents are unspecified
    (Ember fills it as an unwritten Pallas buffer: NaN, int-min, False)."""
    return Ref(uninitialized(tuple(ty.shape), dtypes.canonicalize_dtype(ty.dtype)),
               array_ref=True)


def freeze(ref):
    """JAX's `jax.freeze`: the final value of `ref`, which cannot be used
    afterwards; only in the scope (function or top level) that created it."""
    _check_ref(ref, "freeze")
    base = ref.base if isinstance(ref, RefView) else ref
    if base._home is not core.current_trace():
        raise core.type_error(
            f"jax.freeze: {base!r} can only be frozen in the scope that created it "
            "(not in a function it was passed to or closed over by)")
    value = load(ref, ())
    base._frozen = True
    if base._home is not None:
        base._home.refs.pop(id(base), None)
    return value


def ref_get(ref, idx=()):
    """`jax.ref.get(ref, idx)`: `ref[idx]`."""
    _check_ref(ref, "ref.get")
    return load(ref, idx)


def ref_set(ref, idx, value):
    """`jax.ref.set(ref, idx, value)`: `ref[idx] = value`."""
    _check_ref(ref, "ref.set")
    store(ref, idx, value)


def ref_swap(ref, idx, value):
    """`jax.ref.swap(ref, idx, value)`: writes `value` at `idx` and returns
    what was there."""
    _check_ref(ref, "ref.swap")
    old = load(ref, idx)
    store(ref, idx, value)
    return old


def ref_addupdate(ref, idx, value):
    """`jax.ref.addupdate(ref, idx, value)`: `ref[idx] += value`."""
    _check_ref(ref, "ref.addupdate")
    store(ref, idx, load(ref, idx) + as_value(value))

"""NumPy-style indexing (`x[idx]`) and the `.at[]` update API."""

import builtins
import functools
import operator

import numpy as np

from .. import core, dtypes, lax, shape_poly
from .. import sharding_rules as _sharding_rules
from ..config import config
from ..core import Array, Tracer, Value
from ..errors import NonConcreteBooleanIndexError
from . import lax_numpy as jnp


def _is_int_array(x):
    if isinstance(x, (Value, np.ndarray)):
        return np.dtype(x.dtype).kind in "iu"
    return bool(isinstance(x, (list, tuple)) and x
                and all(isinstance(i, (int, np.integer)) for i in x))


def _is_bool_array(x):
    if isinstance(x, (Value, np.ndarray)):
        return np.dtype(x.dtype) == np.bool_
    return bool(isinstance(x, list) and x and all(isinstance(i, (bool, np.bool_)) for i in x))


def _is_scalar_false(idx):
    if isinstance(idx, tuple):
        return len(idx) == 1 and _is_scalar_false(idx[0])
    if isinstance(idx, (bool, np.bool_)):
        return not idx
    return (isinstance(idx, (Value, np.ndarray)) and not isinstance(idx, Tracer)
            and idx.ndim == 0 and np.dtype(idx.dtype) == np.bool_ and not bool(idx))


def _normalize(x, idx):
    """Expands the index into (per-dim entries, inserted None positions)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    # Boolean masks become integer arrays (static masks only).
    out = []
    for k, i in enumerate(idx):
        if isinstance(i, (bool, np.bool_)) or (isinstance(i, (Value, np.ndarray))
                                               and i.ndim == 0 and np.dtype(i.dtype) == np.bool_):
            if isinstance(i, Tracer):
                # (A concrete trace, such as grad's outside jit, knows it.)
                i = i.concrete()
                if i is None:
                    raise NonConcreteBooleanIndexError(core.below_location(
                        "Array boolean indices must be concrete"))
            if not bool(i) and len(idx) > 1:
                raise IndexError("a scalar False is supported only as the whole index")
            out.append(None)  # x[True] adds an axis of size 1 (x[False]: of size 0)
        elif _is_bool_array(i):
            if isinstance(i, Tracer):
                known = i.concrete()  # (the value a concrete trace knows)
                if known is None:
                    raise NonConcreteBooleanIndexError(core.below_location(
                        f"Array boolean indices must be concrete; got {i.aval.str_short()}"))
                i = known
            m = np.asarray(i)
            _check_mask(x, idx, k, m.shape)
            out.extend(Array(a.astype(dtypes.default_int())) for a in np.nonzero(m))
        elif isinstance(i, (list, tuple)) and not isinstance(i, tuple):
            out.append(core.asarray_concrete(np.asarray(i)))
        else:
            out.append(i)
    idx = out
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if sum(1 for i in idx if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_real > x.ndim:
        raise IndexError(f"Too many indices: {x.ndim}-dimensional array indexed with "
                         f"{n_real} regular indices.")
    expanded = []
    for i in idx:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (x.ndim - n_real))
        else:
            expanded.append(i)
    if not any(i is Ellipsis for i in idx):
        expanded.extend([slice(None)] * (x.ndim - n_real))
    return expanded


def _check_mask(x, idx, k, shape):
    """JAX's IndexError for the boolean mask `idx[k]` of `shape` when it does
    not match the dimensions of `x` it indexes (a mask dimension may also
    be 0)."""
    def dims(e):
        if e is None or e is Ellipsis or isinstance(e, (bool, np.bool_)):
            return 0
        return np.ndim(e) if _is_bool_array(e) else 1
    pos = sum(dims(e) for e in idx[:k])
    if any(e is Ellipsis for e in idx[:k]):
        pos += x.ndim - sum(dims(e) for e in idx)
    expected = list(x.shape[pos:pos + len(shape)])
    if len(expected) != len(shape) or not all(m in (0, n) for m, n in zip(shape, expected)):
        raise IndexError(f"boolean index did not match shape of indexed array in index {k}: "
                         f"got {tuple(shape)}, expected {expected}")


def _slice_indices(e, n):
    """`slice.indices(n)`, also for a symbolic size (bounds as dimension
    expressions, clamped with `max`/`min` of dimensions)."""
    if not any(isinstance(v, shape_poly.DimExpr) for v in (n, e.start, e.stop)):
        return e.indices(n)
    step = 1 if e.step is None else operator.index(e.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    lo, hi = (0, n) if step > 0 else (-1, n - 1)

    def bound(v, default):
        if v is None:
            return default
        if not isinstance(v, shape_poly.DimExpr):
            v = operator.index(v)
        if v < 0:  # decided by the bounds (or raises JAX's inconclusive error)
            return shape_poly.dim_max(v + n, lo)
        return shape_poly.dim_min(v, hi)

    if step > 0:
        return bound(e.start, 0), bound(e.stop, n), step
    return bound(e.start, n - 1), bound(e.stop, -1), step


def _in_bounds(e, n):
    """Whether int index `e` is within a dimension of size `n`; None when a
    symbolic size cannot decide it (the index is then clamped at run time,
    as JAX's gathers do)."""
    try:
        return bool(-n <= e < n)
    except shape_poly.InconclusiveDimensionOperation:
        return None


def _is_ds(e):
    """A `jax.ds`/`pl.ds` Slice (state.Slice; checked by shape, as state
    imports this package)."""
    return not isinstance(e, slice) and all(hasattr(e, a) for a in ("start", "size", "stride"))


def _dynamic_slices(x, entries):
    """`x[ds(start, size, stride)]` (JAX takes `jax.ds` as an index): each
    such entry becomes a dynamic slice of its dimension (the start clamped
    as lax.dynamic_slice clamps it) and then a full `:`."""
    if not any(_is_ds(e) for e in entries):
        return x, entries
    out, dim = [], 0
    for e in entries:
        if e is not None and _is_ds(e):
            span = (e.size - 1) * e.stride + 1 if e.size else 0
            x = lax.dynamic_slice_in_dim(x, e.start, span, dim) if span else \
                lax.slice_in_dim(x, 0, 0, axis=dim)
            if e.stride > 1:
                x = lax.slice_in_dim(x, 0, span, e.stride, dim)
            e = slice(None)
        out.append(e)
        dim += e is not None
    return x, out


def getitem(x, idx, mode=None, fill_value=None):
    """x[idx]. mode=None is Python indexing (static out-of-bounds ints raise,
    dynamic indices are clamped); 'clip' clamps every index; 'fill'/'drop' let
    out-of-bounds gathers produce the gather fill value (JAX's default for
    the dtype, or `fill_value`)."""
    x = core.as_value(x)
    if _is_scalar_false(idx):
        return getitem(x, None)[:0]
    entries = _normalize(x, idx)
    x, entries = _dynamic_slices(x, entries)
    _sharding_rules.check_indexing(x, entries, _split(x))
    # 1. Basic indexing: slices, ints and None, with advanced entries kept.
    starts, limits, strides, rev_dims = [], [], [], []
    out_shape_ops = []  # per entry: 'keep', 'drop', 'new', ('adv', array)
    dim = 0
    for e in entries:
        if e is None:
            out_shape_ops.append("new")
            continue
        n = x.shape[dim]
        if isinstance(e, slice):
            try:
                s, stop, st = _slice_indices(e, n)
            except (core.ConcretizationTypeError, TypeError):
                if not any(isinstance(v, Tracer) for v in (e.start, e.stop, e.step)):
                    raise
                # (A traced bound: JAX's IndexError.)
                raise IndexError(f"Slice entries must be static integers. Got {e} at position "
                                 f"{dim}") from None
            if st > 0:
                starts.append(s)
                limits.append(shape_poly.dim_max(stop, s))
                strides.append(st)
            else:
                # Negative step: reverse then slice.
                rev_dims.append(dim)
                length = shape_poly.dim_max((s - stop - st - 1) // -st, 0)
                s2 = n - 1 - s
                starts.append(s2)
                limits.append(s2 + (length - 1) * (-st) + 1 if length else s2)
                strides.append(-st)
            out_shape_ops.append("keep")
        elif isinstance(e, (int, np.integer)) and not isinstance(e, bool):
            e = int(e)
            inside = _in_bounds(e, n)
            if inside is None or (not inside and n > 0):
                # JAX clamps an out-of-bounds index (as a gather does).
                e = Array(np.asarray(e, dtypes.default_int()))
                starts.append(0)
                limits.append(n)
                strides.append(1)
                out_shape_ops.append(("dyn", e))
                dim += 1
                continue
            if not inside:
                raise IndexError(f"index {e} is out of bounds for axis {dim} with size {n}")
            e = e + n if e < 0 else e
            starts.append(e)
            limits.append(e + 1)
            strides.append(1)
            out_shape_ops.append("drop")
        elif isinstance(e, Value) and e.ndim == 0 and dtypes.is_int(e.dtype):
            starts.append(0)
            limits.append(n)
            strides.append(1)
            out_shape_ops.append(("dyn", e))
        elif isinstance(e, (Value, np.ndarray)) and _is_int_array(e):
            starts.append(0)
            limits.append(n)
            strides.append(1)
            out_shape_ops.append(("adv", core.as_value(e)))
        elif isinstance(e, (Value, np.ndarray, float, complex, np.floating)):
            raise TypeError(f"Indexer must have integer or boolean type, got indexer with "
                            f"type {np.result_type(e)} at position {dim}")
        else:
            raise IndexError(f"Indexing with {type(e).__name__} is not supported: only "
                             "integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             "(`None`) and integer or boolean arrays are valid indices")
        dim += 1
    if rev_dims:
        x = lax.rev(x, rev_dims)
    if x.ndim and (any(s != 0 for s in starts) or any(lim != n for lim, n in zip(limits, x.shape))
                   or any(s != 1 for s in strides)):
        x = lax.slice(x, starts, limits, strides)
    # Dynamic scalar indices and integer arrays: one gather over those dims.
    adv = [(i, op[1]) for i, op in enumerate([o for o in out_shape_ops if o != "new"])
           if isinstance(op, tuple)]
    real_ops = [o for o in out_shape_ops if o != "new"]
    if adv:
        idx_arrays = []
        for d, arr in adv:
            n = x.shape[d]
            arr = jnp.asarray(arr)
            arr = jnp.where(arr < 0, arr + n, arr)
            idx_arrays.append(arr)
        bshape = jnp.broadcast_shapes(*[a.shape for a in idx_arrays])
        idx = jnp.stack([jnp.broadcast_to(a.astype(np.int32), bshape) for a in idx_arrays], -1)
        adv_dims = [d for d, _ in adv]
        padding = [(0, int(d in adv_dims and n == 0), 0) for d, n in enumerate(x.shape)]
        padded = any(x.shape[d] == 0 for d in adv_dims)
        unpadded_shape = x.shape
        if padded:
            # A gather takes one element per index along these dims, so an
            # empty dim gets one padding element (read only by out-of-bounds
            # indices; an empty mask's index arrays read nothing).
            x = lax.pad(x, lax.full((), 0, x.dtype), padding)
        slice_sizes = [1 if d in adv_dims else n for d, n in enumerate(x.shape)]
        # NumPy's rule: with an integer array in the index, the integers
        # count as advanced indices too; advanced indices apart (a slice
        # between them) put the broadcast dimensions first.
        arrays = builtins.any(isinstance(o, tuple) and o[0] == "adv" for o in real_ops)
        places = [i for i, o in enumerate(real_ops)
                  if isinstance(o, tuple) or (arrays and o == "drop")]
        contiguous = places == list(range(places[0], places[0] + len(places)))
        pos = adv_dims[0] if contiguous else 0
        nb = len(bshape)
        rest = [d for d in range(x.ndim) if d not in adv_dims]
        offset_dims = [i if i < pos else i + nb for i in range(len(rest))]
        dn = lax.GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                        collapsed_slice_dims=tuple(adv_dims),
                                        start_index_map=tuple(adv_dims))
        if mode in (None, "promise_in_bounds") and _reverse_mode():
            # JAX's default: the forward pass clamps, its transpose (a
            # scatter-add) drops out-of-bounds indices: the clamped value
            # without a derivative where the index is out of bounds.
            ones = lax.full(x.shape, 1, np.int8)
            valid = lax.eq(lax.gather(ones, idx, dn, slice_sizes, mode="fill"),
                           lax.full((), 1, np.int8))
            x = lax.select(valid, lax.gather(x, idx, dn, slice_sizes, mode="fill"),
                           lax.stop_gradient(lax.gather(x, idx, dn, slice_sizes, mode="clip")))
        elif mode in ("fill", "drop") and fill_value is not None and padded:
            # (the padding element is out of bounds: a gather of ones, padded
            # with zero, tells which windows are in)
            ones = lax.pad(lax.full(unpadded_shape, 1, np.int8), lax.full((), 0, np.int8),
                           padding)
            valid = lax.eq(lax.gather(ones, idx, dn, slice_sizes, mode="fill"),
                           lax.full((), 1, np.int8))
            out = lax.gather(x, idx, dn, slice_sizes, mode="fill")
            x = lax.select(valid, out, lax.full(out.shape, fill_value, out.dtype))
        else:
            x = lax.gather(x, idx, dn, slice_sizes,
                           mode="fill" if mode in ("fill", "drop") else "clip",
                           fill_value=fill_value if mode in ("fill", "drop") else None)
        # Now fix up dropped ints and new axes around the gathered dims.
        new_ops = []
        placed = False
        for o in real_ops:
            if isinstance(o, tuple):
                if not placed:
                    new_ops.append(("batch", nb))
                    placed = True
            else:
                new_ops.append(o)
        if not contiguous:
            new_ops = [("batch", nb)] + [o for o in new_ops if o != ("batch", nb)]
        # Rebuild shape: x dims = [rest dims with batch at pos].
        shape = list(x.shape)
        final, xi = [], 0
        it = iter(out_shape_ops)
        ops_seq = []
        for o in out_shape_ops:
            if o == "new":
                ops_seq.append("new")
            elif isinstance(o, tuple):
                if ("batch",) not in ops_seq and contiguous:
                    ops_seq.append(("batch",))
            else:
                ops_seq.append(o)
        if not contiguous:
            ops_seq = [("batch",)] + ops_seq
        del it
        for o in ops_seq:
            if o == "new":
                final.append(1)
            elif o == ("batch",):
                final.extend(shape[xi:xi + nb])
                xi += nb
            elif o == "drop":
                xi += 1
            else:
                final.append(shape[xi])
                xi += 1
        return lax.reshape(x, final)
    final = []
    xi = 0
    for o in out_shape_ops:
        if o == "new":
            final.append(1)
        elif o == "drop":
            xi += 1
        else:
            final.append(x.shape[xi])
            xi += 1
    return lax.reshape(x, final)


# Indexing outside traces, as JAX's: an index holding integer arrays is one
# program, compiled once per index structure and shapes (jit over the
# arrays, the ints, slices, None and Ellipsis static), where op by op it was
# one compile per primitive (seven for `x[1:, ::2, i]`, thirteen for an
# `.at[i].set`). Anything else (boolean masks, lists, tracers, sharded
# arrays) runs as written.
_ARRAY = "<array>"  # (an array's place in an index structure)


def _outside_traces(x):
    return (not core._trace_stack and not config.jax_disable_jit
            and ((type(x) is Array and x.aval.sharding is None) or type(x) is core.GpuArray))


def _split_index(idx):
    """The static structure of `idx` and its integer arrays, or None when an
    entry needs its value in Python or is no index at all."""
    entries = idx if type(idx) is tuple else (idx,)
    structure, arrays = [], []
    for e in entries:
        if e is None or e is Ellipsis or type(e) is int:
            structure.append(e)
        elif type(e) is slice:
            if not all(v is None or type(v) is int for v in (e.start, e.stop, e.step)):
                return None
            structure.append(("slice", e.start, e.stop, e.step))
        elif ((type(e) is Array and e.aval.sharding is None) or type(e) is np.ndarray
              or type(e) is core.GpuArray) and np.dtype(e.dtype).kind in "iu":
            structure.append(_ARRAY)
            arrays.append(e)
        else:
            return None
    return (type(idx) is tuple, tuple(structure)), arrays


def _join_index(structure, arrays):
    is_tuple, entries = structure
    it = iter(arrays)
    idx = tuple(next(it) if e is _ARRAY else slice(*e[1:]) if type(e) is tuple else e
                for e in entries)
    return idx if is_tuple else idx[0]


def getitem_method(x, idx):
    """`x[idx]`."""
    if _outside_traces(x):
        split = _split_index(idx)
        if split is not None and not split[1]:
            split = _dynamic_ints(x, *split)
        if split is not None and split[1]:
            structure, arrays = split
            return core.call_compiled(
                lambda x, *arrays: getitem(x, _join_index(structure, arrays)),
                ("getitem", structure), [x] + [core.as_value(a) for a in arrays])
    return getitem(x, idx)


def _dynamic_ints(x, structure, arrays):
    """An index of ints, slices, None and Ellipsis with its in-bounds ints
    made operands (0-d int32 arrays, which `getitem` gathers by), as JAX
    does: `x[i]` in a Python loop compiles once, not once per `i`. An int out
    of bounds stays static (the IndexError); None when there is no int."""
    is_tuple, entries = structure
    real = sum(1 for e in entries if e is not None and e is not Ellipsis)
    out, ints, dim = [], [], 0
    for e in entries:
        if e is Ellipsis:
            dim += x.ndim - real
        elif type(e) is int and dim < x.ndim and -x.shape[dim] <= e < x.shape[dim]:
            out.append(_ARRAY)
            ints.append(jnp._scalar_array(e))
            dim += 1
            continue
        elif e is not None:
            dim += 1
        out.append(e)
    return ((is_tuple, tuple(out)), ints) if ints else None


def _at_method(method):
    """An `.at[idx]` method that, outside traces, runs as one program."""
    name = method.__name__

    @functools.wraps(method)
    def _jit_dispatch(self, *args, **kwargs):
        for k in kwargs:
            # (the update methods' keywords: JAX's TypeError for others, such
            # as get's fill_value)
            if k not in ("mode", "out_sharding", "indices_are_sorted", "unique_indices") and \
                    not (name == "get" and k == "fill_value"):
                raise TypeError(f"_IndexUpdateRef.{name}() got an unexpected keyword "
                                f"argument '{k}'")
        if _outside_traces(self.x) and kwargs.get("out_sharding") is None:
            split = _split_index(self.idx)
            ready = split is not None and all(jnp._compilable_operand(a) for a in args)
            try:
                kw = tuple(sorted(kwargs.items()))
                hash(kw)
            except TypeError:
                ready = False
            if ready:
                structure, arrays = split
                k = len(arrays)

                def call(x, *xs):
                    ref = _IndexUpdateRef(x, _join_index(structure, xs[:k]))
                    return getattr(ref, name)(*xs[k:], **dict(kw))
                return core.call_compiled(
                    call, ("at", name, structure, kw, len(args)),
                    [self.x] + [core.as_value(jnp._scalar_array(a)) for a in (*arrays, *args)])
        return method(self, *args, **kwargs)
    return _jit_dispatch


def _split(x):
    """Whether `x` is a concrete array split over several devices (JAX
    indexes it by gathers, not slices)."""
    sh = x.aval.sharding
    return isinstance(x, Array) and getattr(sh, "num_devices", 1) > 1


def _has_index_array(idx):
    """Whether an index holds an integer array (which may repeat a position)."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    return any(isinstance(e, (Value, np.ndarray, list)) and not _is_bool_array(e)
               and np.ndim(e) > 0 for e in entries)


def _reverse_mode():
    """Whether a backward pass may be built for what is traced now (only a
    transpose gives repeated updates a cotangent each; the forward pass,
    and forward mode, need no mask)."""
    from .. import ad

    return ad.transposing()


def _winners_only(vals, pos, size):
    """`vals` whose derivative reaches only the update a repeated position
    keeps (the last one, as the scatter writes them in order; JAX's
    gradient of `.at[].set`); the values themselves are unchanged."""
    ids = jnp.arange(vals.size, dtype=np.int32).reshape(vals.shape)
    flat_pos = pos.reshape(-1, 1)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    last = lax.scatter(jnp.full((size,), -1, np.int32), flat_pos, ids.reshape(-1), dn,
                       mode="fill")
    won = jnp.take(last, pos.reshape(-1), mode="fill", fill_value=-1).reshape(vals.shape) == ids
    return jnp.where(won, vals, lax.stop_gradient(vals))


def _flat_positions(x, idx, end):
    """For an index of one integer array (or int) per dimension of `x`: the
    row-major position of each indexed element, `end` where an index is out
    of bounds (negative ones counting from the end), computed from the
    indices (the general path gathers a table of positions instead). None
    for other indices."""
    entries = idx if isinstance(idx, tuple) else (idx,)
    if len(entries) != x.ndim or x.ndim == 0 or isinstance(x.size, shape_poly.DimExpr) or \
            x.size >= 2**31 - 1 or not builtins.all(
                (isinstance(e, (Value, np.ndarray)) and _is_int_array(e)) or
                (isinstance(e, (int, np.integer)) and not isinstance(e, bool)) for e in entries):
        return None
    arrays = [jnp.asarray(e).astype(np.int32) for e in entries]
    shape = jnp.broadcast_shapes(*[a.shape for a in arrays])
    pos = jnp.zeros(shape, np.int32)
    valid = jnp.ones(shape, bool)
    for a, n in zip(arrays, x.shape):
        a = jnp.where(a < 0, a + n, a)
        valid = valid & (a >= 0) & (a < n)
        pos = pos * n + a
    return jnp.where(valid, pos, end)


class _IndexUpdateRef:
    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    @_at_method
    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False, unique_indices=False,
            out_sharding=None):
        if out_sharding is not None:
            with _sharding_rules.output_given(out_sharding):
                out = self.get(mode=mode, fill_value=fill_value)
            return core.with_out_sharding(out, out_sharding)
        if mode in ("fill", "drop"):
            fv = jnp._default_fill(core.as_value(self.x).dtype) if fill_value is None \
                else fill_value
            return getitem(self.x, self.idx, mode="fill", fill_value=fv)
        # (None and promise_in_bounds: clamped, out-of-bounds indices without
        # a derivative, as JAX's; clip: clamped both ways.)
        return getitem(self.x, self.idx, mode="clip" if mode == "clip" else "promise_in_bounds")

    def _scatter(self, kind, values, mode=None, x=None, out_sharding=None):
        if out_sharding is not None:
            with _sharding_rules.output_given(out_sharding):
                out = self._scatter(kind, values, mode, x)
            return core.with_out_sharding(out, out_sharding)
        x = self.x if x is None else x
        if mode in ("clip", "promise_in_bounds"):
            flat_pos = jnp.arange(x.size, dtype=np.int32).reshape(x.shape)
            pos = getitem(flat_pos, self.idx, mode="clip")
        elif mode in (None, "fill", "drop"):
            end = (np.int32(x.size) if not isinstance(x.size, shape_poly.DimExpr) else
                   lax.convert_element_type(core.as_value(x.size), np.int32))
            pos = _flat_positions(x, self.idx, end)
            if pos is None:
                flat_pos = jnp.arange(1, x.size + 1, dtype=np.int32).reshape(x.shape)
                pos = getitem(flat_pos, self.idx, mode="fill")
                # 0 marks an out-of-bounds index: send it past the end so it is dropped.
                pos = jnp.where(pos > 0, pos - 1, end)
        else:
            raise ValueError(f"Invalid mode {mode!r} for an indexed update")
        # JAX's sharding errors for updates into sharded dimensions; else the
        # result keeps x's sharding (the flat scatter below would drop it).
        sh = _sharding_rules.check_indexing(self.x, _normalize(self.x, self.idx), True,
                                            core.ShapedArray(pos.shape, x.dtype))
        vals = jnp.broadcast_to(jnp.asarray(values).astype(x.dtype), pos.shape)
        if kind == "replace" and dtypes.is_inexact(x.dtype) and _has_index_array(self.idx) \
                and _reverse_mode():
            vals = _winners_only(vals, pos, x.size)
        flat = x.reshape(-1)
        dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
        fn = {"replace": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
              "min": lax.scatter_min, "max": lax.scatter_max}[kind]
        out = fn(flat, pos.reshape(-1, 1), vals.reshape(-1), dn, mode="fill").reshape(x.shape)
        return out if sh is None else core.with_out_sharding(out, sh)

    @_at_method
    def set(self, values, *, mode=None, out_sharding=None, **kw):
        return self._scatter("replace", values, mode, out_sharding=out_sharding)

    @_at_method
    def add(self, values, *, mode=None, out_sharding=None, **kw):
        return self._scatter("add", values, mode, out_sharding=out_sharding)

    @_at_method
    def subtract(self, values, *, mode=None, out_sharding=None, **kw):
        return self._scatter("add", jnp.negative(jnp.asarray(values).astype(self.x.dtype)), mode,
                             out_sharding=out_sharding)

    @_at_method
    def multiply(self, values, *, mode=None, out_sharding=None, **kw):
        return self._scatter("mul", values, mode, out_sharding=out_sharding)

    mul = multiply

    @_at_method
    def divide(self, values, *, mode=None, **kw):
        # As JAX: x / (ones.at[idx].multiply(values)).
        return jnp.divide(self.x, self._scatter("mul", values, mode, x=jnp.ones_like(self.x)))

    @_at_method
    def power(self, values, *, mode=None, **kw):
        # As JAX: x ** (ones.at[idx].multiply(values)).
        return jnp.power(self.x, self._scatter("mul", values, mode, x=jnp.ones_like(self.x)))

    @_at_method
    def min(self, values, *, mode=None, out_sharding=None, **kw):
        return self._scatter("min", values, mode, out_sharding=out_sharding)

    @_at_method
    def max(self, values, *, mode=None, out_sharding=None, **kw):
        return self._scatter("max", values, mode, out_sharding=out_sharding)

    def apply(self, func, *, mode=None, **kw):
        """func applied at the indexed elements, once per occurrence of an
        index (JAX's: an element indexed three times gets func(func(func(x))))."""
        from .. import control_flow

        vals = self.get(mode=mode)
        counts = _IndexUpdateRef(jnp.zeros(self.x.shape, np.int32), self.idx).add(1, mode=mode)
        times = _IndexUpdateRef(counts, self.idx).get(mode=mode)
        rounds = jnp.max(times) if times.size else 0

        def again(k, v):
            return jnp.where(times > k, func(v), v)

        return self.set(control_flow.fori_loop(0, rounds, again, vals), mode=mode)


class _IndexUpdateHelper:
    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.x, idx)

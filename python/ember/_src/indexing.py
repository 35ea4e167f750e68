"""Array operators, methods, NumPy-style indexing and the .at[] update API."""

import numpy as np

from . import core, dtypes
from . import lax
from .core import Array, Tracer, Value


def _jnp():
    import ember.numpy as jnp
    return jnp


def _is_int_array(x):
    if isinstance(x, (Value, np.ndarray)):
        return np.dtype(x.dtype).kind in "iu"
    if isinstance(x, (list, tuple)) and x and all(isinstance(i, (int, np.integer)) for i in x):
        return True
    return False


def _is_bool_array(x):
    if isinstance(x, (Value, np.ndarray)):
        return np.dtype(x.dtype) == np.bool_
    if isinstance(x, list) and x and all(isinstance(i, (bool, np.bool_)) for i in x):
        return True
    return False


def _normalize(x, idx):
    """Expands the index into (per-dim entries, inserted None positions)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    # Boolean masks become integer arrays (static masks only).
    out = []
    for i in idx:
        if _is_bool_array(i) and not isinstance(i, (bool, np.bool_)):
            if isinstance(i, Tracer):
                raise core.NonConcreteBooleanIndexError(
                    f"Array boolean indices must be concrete; got {i.aval.str_short()} "
                    f"(at {core.where()})")
            m = np.asarray(i)
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


def getitem(x, idx):
    jnp = _jnp()
    x = core.as_value(x)
    entries = _normalize(x, idx)
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
            s, stop, st = e.indices(n)
            if st > 0:
                starts.append(s)
                limits.append(max(stop, s))
                strides.append(st)
            else:
                # Negative step: reverse then slice.
                rev_dims.append(dim)
                length = len(range(s, stop, st))
                s2 = n - 1 - s
                starts.append(s2)
                limits.append(s2 + (length - 1) * (-st) + 1 if length else s2)
                strides.append(-st)
            out_shape_ops.append("keep")
        elif isinstance(e, (int, np.integer)) and not isinstance(e, bool):
            e = int(e)
            if not -n <= e < n:
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
        else:
            raise IndexError(f"Indexing with {type(e).__name__} is not supported: only "
                             "integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             "(`None`) and integer or boolean arrays are valid indices")
        dim += 1
    if rev_dims:
        x = lax.rev(x, rev_dims)
    if x.ndim and (any(s != 0 for s in starts) or any(l != n for l, n in zip(limits, x.shape))
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
        slice_sizes = [1 if d in adv_dims else n for d, n in enumerate(x.shape)]
        contiguous = adv_dims == list(range(adv_dims[0], adv_dims[0] + len(adv_dims)))
        pos = adv_dims[0] if contiguous else 0
        nb = len(bshape)
        rest = [d for d in range(x.ndim) if d not in adv_dims]
        offset_dims = [i if i < pos else i + nb for i in range(len(rest))]
        dn = lax.GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                        collapsed_slice_dims=tuple(adv_dims),
                                        start_index_map=tuple(adv_dims))
        x = lax.gather(x, idx, dn, slice_sizes, mode="clip")
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


class _IndexUpdateRef:
    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def get(self, *, mode=None, fill_value=None, indices_are_sorted=False, unique_indices=False):
        return getitem(self.x, self.idx)

    def _scatter(self, kind, values, mode=None):
        jnp = _jnp()
        x = self.x
        flat_pos = jnp.arange(x.size, dtype=np.int32).reshape(x.shape)
        pos = getitem(flat_pos, self.idx)
        vals = jnp.broadcast_to(jnp.asarray(values).astype(x.dtype), pos.shape)
        flat = x.reshape(-1)
        dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
        fn = {"replace": lax.scatter, "add": lax.scatter_add, "mul": lax.scatter_mul,
              "min": lax.scatter_min, "max": lax.scatter_max}[kind]
        out = fn(flat, pos.reshape(-1, 1), vals.reshape(-1), dn, mode="fill")
        return out.reshape(x.shape)

    def set(self, values, **kw):
        return self._scatter("replace", values)

    def add(self, values, **kw):
        return self._scatter("add", values)

    def subtract(self, values, **kw):
        return self._scatter("add", -_jnp().asarray(values))

    def multiply(self, values, **kw):
        return self._scatter("mul", values)

    mul = multiply

    def divide(self, values, **kw):
        jnp = _jnp()
        return self._scatter("mul", jnp.reciprocal(jnp.asarray(values).astype(self.x.dtype)))

    def power(self, values, **kw):
        jnp = _jnp()
        cur = self.get()
        return self.set(jnp.power(cur, values))

    def min(self, values, **kw):
        return self._scatter("min", values)

    def max(self, values, **kw):
        return self._scatter("max", values)

    def apply(self, func, **kw):
        return self.set(func(self.get()))


class _IndexUpdateHelper:
    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.x, idx)


def install():
    jnp = _jnp()

    def binop(fn, reflected=False):
        if reflected:
            return lambda self, other: fn(other, self)
        return lambda self, other: fn(self, other)

    ops = {
        "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "truediv": jnp.true_divide,
        "floordiv": jnp.floor_divide, "mod": jnp.remainder, "pow": jnp.power,
        "matmul": jnp.matmul, "and": jnp.bitwise_and, "or": jnp.bitwise_or,
        "xor": jnp.bitwise_xor, "lshift": jnp.left_shift, "rshift": jnp.right_shift,
        "divmod": jnp.divmod,
    }
    for name, fn in ops.items():
        setattr(Value, f"__{name}__", binop(fn))
        setattr(Value, f"__r{name}__", binop(fn, True))
    for name, fn in {"eq": jnp.equal, "ne": jnp.not_equal, "lt": jnp.less, "le": jnp.less_equal,
                     "gt": jnp.greater, "ge": jnp.greater_equal}.items():
        setattr(Value, f"__{name}__", binop(fn))
    Value.__neg__ = lambda self: jnp.negative(self)
    Value.__pos__ = lambda self: self
    Value.__abs__ = lambda self: jnp.abs(self)
    Value.__invert__ = lambda self: jnp.invert(self)
    Value.__getitem__ = getitem
    Value.__iter__ = lambda self: (getitem(self, i) for i in range(len(self)))
    Value.at = property(lambda self: _IndexUpdateHelper(self))
    Value.T = property(lambda self: jnp.transpose(self))
    Value.mT = property(lambda self: jnp.matrix_transpose(self))
    Value.real = property(lambda self: jnp.real(self))
    Value.imag = property(lambda self: jnp.imag(self))

    def method(fn):
        return lambda self, *a, **k: fn(self, *a, **k)

    for name in ["sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all",
                 "any", "cumsum", "cumprod", "ravel", "transpose", "squeeze", "clip", "round",
                 "sort", "argsort", "conj", "conjugate", "dot", "take", "nonzero", "ptp",
                 "trace", "diagonal", "repeat", "swapaxes", "flatten", "astype", "nansum",
                 "searchsorted"]:
        if name == "flatten":
            setattr(Value, name, method(jnp.ravel))
        elif name == "transpose":
            setattr(Value, name, lambda self, *axes: jnp.transpose(
                self, axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list))
                else (axes or None)))
        else:
            setattr(Value, name, method(getattr(jnp, name)))
    Value.reshape = lambda self, *shape, order="C": jnp.reshape(
        self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape)
    Value.copy = lambda self: self
    Value.view = lambda self, dtype=None: self if dtype is None else lax.bitcast_convert_type(self, dtype)


class NonConcreteBooleanIndexError(IndexError):
    pass


core.NonConcreteBooleanIndexError = NonConcreteBooleanIndexError

"""jax.numpy functions on Ember's ops: array construction and manipulation,
index helpers, function application, bit packing, dtype names."""

import builtins
import functools as _functools
import math as _math
import operator as _operator
import re as _re

import ml_dtypes as _ml_dtypes
import numpy as _np

from .. import core as _core
from .. import dtypes as _dt
from .. import lax
from ..batching import vmap as _vmap
from ..core import Value as _Value
from . import lax_numpy as jnp

__all__ = [
    # function application
    "vectorize", "apply_along_axis", "apply_over_axes", "piecewise", "fromfunction",
    "ufunc", "frompyfunc",
    # sorting
    "argpartition", "partition",
    # indexed updates and selection
    "choose", "put", "put_along_axis", "place", "fill_diagonal", "insert", "delete",
    # shapes
    "resize", "rollaxis", "block", "dsplit",
    # index helpers
    "ix_", "mgrid", "ogrid", "r_", "c_", "s_", "index_exp", "unravel_index",
    "ravel_multi_index", "diag_indices_from", "mask_indices",
    # products
    "matvec", "vecmat", "einsum_path",
    # bits
    "packbits", "unpackbits",
    # comparison, copies, printing
    "array_equiv", "array_repr", "array_str", "copy", "get_printoptions",
    "set_printoptions", "printoptions", "iterable",
    # I/O
    "frombuffer", "fromstring", "fromiter", "fromfile", "load", "save", "savez",
    # dtype and type names
    "double", "single", "cdouble", "csingle", "uint", "object_", "character", "flexible",
    "ComplexWarning",
    "int1", "int2", "int4", "uint1", "uint2", "uint4",
    "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
    "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu",
]

_v = _core.as_value


def _concrete(x, what):
    """`x`'s value as a NumPy array: a traced value must have one (outside
    jit), or JAX's ConcretizationTypeError names `what`."""
    if isinstance(x, _core.Tracer):
        x = x._concrete_or_raise(what)
    return _np.asarray(x)


def _index(x, what):
    """`x` as a Python int (a concrete scalar array counts)."""
    if isinstance(x, _core.Tracer):
        x = x._concrete_or_raise(what)
    return _operator.index(x)


def _check_arraylike(name, *args):
    for i, a in enumerate(args):
        if not (isinstance(a, (_Value, _np.ndarray, _np.generic, builtins.bool, int, float,
                               complex)) or hasattr(a, "__jax_array__")):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(a)} at "
                            f"position {i}. (at {_core.where()})")


# --------------------------------------------------------------------------
# dtype and type names
# --------------------------------------------------------------------------

double = jnp.float64
single = jnp.float32
cdouble = jnp.complex128
csingle = jnp.complex64
uint = jnp.uint64
object_ = _np.object_
character = _np.character
flexible = _np.flexible
ComplexWarning = _np.exceptions.ComplexWarning


class _StorageScalarMeta(jnp._ScalarMeta):
    """The scalar type of an ml_dtypes dtype that Ember's compiler does not
    compute in: the name stands for its dtype (np.dtype, finfo, `==`), but
    making an array of it raises."""

    def __call__(cls, x):
        raise TypeError(f"Ember does not support {cls.dtype.name} arrays: jnp.{cls.__name__} "
                        f"names the dtype only (at {_core.where()})")


def _storage_type(np_type):
    name = _np.dtype(np_type).name
    if _np.dtype(np_type) in _dt._SUPPORTED:  # (should Ember's compiler grow one)
        return jnp._scalar_type(np_type)
    return _StorageScalarMeta(name, (object,), {"dtype": _np.dtype(np_type)})


int1 = _storage_type(_ml_dtypes.int1)
int2 = _storage_type(_ml_dtypes.int2)
int4 = _storage_type(_ml_dtypes.int4)
uint1 = _storage_type(_ml_dtypes.uint1)
uint2 = _storage_type(_ml_dtypes.uint2)
uint4 = _storage_type(_ml_dtypes.uint4)
float4_e2m1fn = _storage_type(_ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _storage_type(_ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _storage_type(_ml_dtypes.float6_e3m2fn)
float8_e3m4 = _storage_type(_ml_dtypes.float8_e3m4)
float8_e4m3 = _storage_type(_ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = _storage_type(_ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _storage_type(_ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _storage_type(_ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _storage_type(_ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _storage_type(_ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _storage_type(_ml_dtypes.float8_e8m0fnu)


# --------------------------------------------------------------------------
# vectorize
# --------------------------------------------------------------------------

_DIM = r"\w+"
_CORE_DIMS = fr"(?:{_DIM}(?:,{_DIM})*)?"
_ARG = fr"\({_CORE_DIMS}\)"
_ARGS = fr"{_ARG}(?:,{_ARG})*"
_SIGNATURE = fr"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature):
    if not _re.match(_SIGNATURE, signature):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = ([tuple(_re.findall(_DIM, arg)) for arg in _re.findall(_ARG, side)]
                 for side in signature.split("->"))
    return ins, outs


def _bind_dims(sizes, shape, dims, context, is_input):
    if is_input and len(shape) < len(dims):
        raise ValueError(f"input with shape {shape!r} does not have enough dimensions for all "
                         f"core dimensions {dims!r} {context}")
    if not is_input and len(shape) != len(dims):
        raise ValueError(f"output shape {shape!r} does not match core dimensions {dims!r} "
                         f"{context}")
    for d, n in zip(dims, shape[len(shape) - len(dims):]):
        if sizes.setdefault(d, n) != n:
            raise ValueError(f"inconsistent size for core dimension {d!r}: {n!r} vs "
                             f"{sizes[d]!r} {context}")


def _bind_excluded(func, excluded, args, kwargs):
    """`func` with its excluded arguments bound, and the remaining ones."""
    if not excluded:
        return func, list(args), kwargs
    fixed = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int))
             if i < len(args)]
    fixed_kw = {k: v for k, v in kwargs.items() if k in excluded}

    def bound(*rest, **kw):
        rest = list(rest)
        for i, a in fixed:
            rest.insert(i, a)
        return func(*rest, **kw, **fixed_kw)
    return (bound, [a for i, a in enumerate(args) if i not in excluded],
            {k: v for k, v in kwargs.items() if k not in excluded})


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    if builtins.any(not isinstance(e, (str, int)) for e in excluded):
        raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, "
                        f"but excluded={excluded!r}")
    if builtins.any(isinstance(e, int) and e < 0 for e in excluded):
        raise ValueError(f"excluded={excluded!r} contains negative numbers")

    @_functools.wraps(pyfunc)
    def wrapped(*args, **kwargs):
        context = f"on vectorized function with excluded={excluded!r} and signature={signature!r}"
        func, args, kwargs = _bind_excluded(pyfunc, excluded, args, kwargs)
        if signature is not None:
            in_dims, out_dims = _parse_signature(signature)
        else:
            in_dims, out_dims = [()] * len(args), None
        nones = {i for i, a in enumerate(args) if a is None}
        if nones:
            if builtins.any(in_dims[i] != () for i in nones):
                raise ValueError(f"Cannot pass None at locations {nones} with {signature=}")
            func, args, _ = _bind_excluded(func, nones, args, {})
            in_dims = [d for i, d in enumerate(in_dims) if i not in nones]
        if len(args) != len(in_dims):
            raise TypeError(f"wrong number of positional arguments: expected {len(in_dims)!r}, "
                            f"got {len(args)!r} {context}")
        args = [jnp.asarray(a) for a in args]
        sizes = {}
        loop_shapes = []
        for a, dims in zip(args, in_dims):
            _bind_dims(sizes, a.shape, dims, context, True)
            loop_shapes.append(a.shape[:a.ndim - len(dims)])
        loop_shape = jnp.broadcast_shapes(*loop_shapes)

        if out_dims is not None:
            inner = func

            def func(*xs, **kw):
                out = inner(*xs, **kw)
                if len(out_dims) > 1 and not isinstance(out, tuple):
                    raise TypeError("output must be a tuple when multiple outputs are expected, "
                                    f"got: {out!r}\n{context}")
                outs = out if isinstance(out, tuple) else (out,)
                if len(outs) != len(out_dims):
                    raise TypeError(f"wrong number of output arguments: expected "
                                    f"{len(out_dims)!r}, got {len(outs)!r} {context}")
                known = dict(sizes)
                for o, dims in zip(outs, out_dims):
                    _bind_dims(known, _np.shape(o) if not isinstance(o, _Value) else o.shape,
                               dims, context, False)
                return out

        # Size-1 loop dimensions are squeezed and left to vmap's in_axes=None
        # (no broadcast copies), then restored on the result.
        squeezed, rev_shapes = [], []
        for a, ls in zip(args, loop_shapes):
            n = len(loop_shape) - len(ls)
            rev_shapes.append(((1,) * n + ls)[::-1])
            squeezed.append(jnp.squeeze(a, axis=tuple(i for i, s in enumerate(ls) if s == 1)))
        vfunc = func if not kwargs else _functools.partial(func, **kwargs)
        expand = []
        for neg, sizes_here in enumerate(zip(*rev_shapes)):
            in_axes = tuple(None if s == 1 else 0 for s in sizes_here)
            if builtins.all(ax is None for ax in in_axes):
                expand.append(len(loop_shape) - 1 - neg)
            else:
                vfunc = _vmap(vfunc, in_axes)
        out = vfunc(*squeezed)
        if not expand:
            return out
        if isinstance(out, tuple):
            return tuple(jnp.expand_dims(o, tuple(expand)) for o in out)
        return jnp.expand_dims(out, tuple(expand))
    return wrapped


# --------------------------------------------------------------------------
# Function application
# --------------------------------------------------------------------------


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    _check_arraylike("apply_along_axis", arr)
    nd = _np.ndim(arr) if not isinstance(arr, _Value) else arr.ndim
    axis = jnp._axis(axis, nd)

    def func(a):
        return func1d(a, *args, **kwargs)
    for i in range(1, nd - axis):
        func = _vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = _vmap(func, in_axes=0, out_axes=0)
    return func(jnp.asarray(arr))


def _pad_func(a, pad_width, func, kwargs):
    """`jnp.pad` with a callable mode, as JAX's: the array padded with zeros,
    then `func(vector, pad_width[axis], axis, kwargs)` applied along each
    axis in turn (it returns the padded vector)."""
    padded = jnp.pad(a, pad_width)
    for axis in range(padded.ndim):
        padded = apply_along_axis(func, axis, padded, tuple(pad_width[axis]), axis, kwargs)
    return padded


jnp.pad_func_hook = _pad_func


def apply_over_axes(func, a, axes):
    _check_arraylike("apply_over_axes", a)
    a = jnp.asarray(a)
    for axis in axes:
        b = func(a, axis)
        if b.ndim == a.ndim:
            a = b
        elif b.ndim == a.ndim - 1:
            a = jnp.expand_dims(b, axis)
        else:
            raise ValueError("function is not returning an array of the correct shape "
                             f"(at {_core.where()})")
    return a


def piecewise(x, condlist, funclist, *args, **kw):
    _check_arraylike("piecewise", x)
    x = jnp.asarray(x)
    nc, nf = len(condlist), len(funclist)
    if nf == nc + 1:
        funclist = list(funclist[-1:]) + list(funclist[:-1])
    elif nf == nc:
        funclist = [0] + list(funclist)
    else:
        raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                         f"expected; got {nf}")
    conds = jnp.asarray(condlist, dtype=_np.bool_)
    # Which piece each element takes: the last true condition, else the default.
    which = jnp.argmax(jnp.cumsum(jnp.concatenate([jnp.zeros_like(conds[:1]), conds], 0), 0), 0)
    dtype = x.dtype
    out = None
    for i, f in enumerate(funclist):
        piece = (jnp.asarray(f(x, *args, **kw)).astype(dtype) if callable(f)
                 else jnp.asarray(f, dtype=dtype))
        piece = jnp.broadcast_to(piece, x.shape)
        out = piece if out is None else jnp.where(jnp.equal(which, i), piece, out)
    return out


def fromfunction(function, shape, *, dtype=float, **kwargs):
    shape = tuple(_index(s, "shape argument of jnp.fromfunction()") for s in
                  ((shape,) if isinstance(shape, int) else shape))
    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        function = _vmap(function, in_axes=tuple(in_axes[::-1]))
    return function(*(jnp.arange(s, dtype=dtype) for s in shape), **kwargs)


# --------------------------------------------------------------------------
# ufunc
# --------------------------------------------------------------------------

_AT_INPLACE = (
    "Because JAX arrays are immutable, jnp.ufunc.at() cannot operate inplace like\n"
    "np.ufunc.at(). Instead, you can pass inplace=False and capture the result; e.g.\n"
    ">>> arr = jnp.add.at(arr, ind, val, inplace=False)\n")


class ufunc:
    """JAX's `jnp.ufunc`: a scalar function `func` of `nin` arguments made
    elementwise (by `vectorize`), with NumPy's ufunc methods."""

    def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
                 reduce=None, accumulate=None, at=None, reduceat=None):
        self.__doc__ = func.__doc__
        self.__name__ = name or func.__name__
        self.__props = {"func": func, "nin": _operator.index(nin), "nout": _operator.index(nout),
                        "nargs": _operator.index(nargs or nin), "identity": identity,
                        "call": call, "reduce": reduce, "accumulate": accumulate, "at": at,
                        "reduceat": reduceat}

    _func = property(lambda self: self.__props["func"])
    nin = property(lambda self: self.__props["nin"])
    nout = property(lambda self: self.__props["nout"])
    nargs = property(lambda self: self.__props["nargs"])
    identity = property(lambda self: self.__props["identity"])

    def _key(self):
        return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

    def __hash__(self):
        return hash(self._key())

    def __eq__(self, other):
        return isinstance(other, ufunc) and self._key() == other._key()

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __call__(self, *args, out=None, where=None):
        jnp._check_arraylike(self.__name__, *args)
        if out is not None:
            raise NotImplementedError(f"out argument of {self}")
        if where is not None:
            raise NotImplementedError(f"where argument of {self}")
        call = self.__props["call"] or vectorize(self._func)
        return call(*args)

    def _binary(self, method):
        if self.nin != 2:
            raise ValueError(f"{method} only supported for binary ufuncs")
        if self.nout != 1:
            raise ValueError(f"{method} only supported for functions returning a single value")

    def _dtype(self, *xs):
        ones = [jnp.ones((), x.dtype) for x in xs]
        return jnp.asarray(self._func(*ones)).dtype

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
               where=None):
        jnp._check_arraylike(f"{self.__name__}.reduce", a)
        self._binary("reduce")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
        if where is not None:
            if self.identity is None and initial is None:
                raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                                 "identity, so to use a where mask one has to specify 'initial'.")
            if jnp.asarray(where).dtype != _np.bool_:
                raise ValueError(f"where argument must have dtype=bool; got "
                                 f"dtype={jnp.asarray(where).dtype}")
        if self.__props["reduce"] is not None:
            return self.__props["reduce"](a, axis=axis, dtype=dtype, keepdims=keepdims,
                                          initial=initial, where=where)
        return self._reduce_loop(a, axis, dtype, keepdims, initial, where)

    def _reduce_loop(self, a, axis, dtype, keepdims, initial, where):
        from ..control_flow import fori_loop
        a = jnp.asarray(a)
        initial = self.identity if initial is None else initial
        dtype = self._dtype(a, a) if dtype is None else _np.dtype(dtype)
        if where is not None:
            where = jnp.broadcast_to(where, a.shape)
        if isinstance(axis, tuple):
            raise NotImplementedError("tuple of axes")
        if axis is None:
            final = (1,) * a.ndim if keepdims else ()
            a = jnp.ravel(a)
            where = None if where is None else jnp.ravel(where)
            axis = 0
        else:
            axis = jnp._axis(axis, a.ndim)
            final = a.shape[:axis] + ((1,) if keepdims else ()) + a.shape[axis + 1:]
        a = jnp.moveaxis(a, axis, 0)
        where = None if where is None else jnp.moveaxis(where, axis, 0)
        if a.shape[0] == 0:
            if initial is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            return jnp.full(final, initial, dtype)

        def body(i, acc):
            new = self(acc, a[i].astype(dtype))
            return new if where is None else jnp.where(where[i], new, acc)
        start, init = (1, a[0]) if initial is None else (0, initial)
        init = jnp.broadcast_to(jnp.asarray(init).astype(dtype), a.shape[1:])
        return jnp.reshape(fori_loop(start, a.shape[0], body, init), final)

    def accumulate(self, a, axis=0, dtype=None, out=None):
        self._binary("accumulate")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
        if self.__props["accumulate"] is not None:
            return self.__props["accumulate"](a, axis=axis, dtype=dtype)
        from ..control_flow import scan
        jnp._check_arraylike(f"{self.__name__}.accumulate", a)
        a = jnp.asarray(a)
        dtype = self._dtype(a, a) if dtype is None else _np.dtype(dtype)
        if axis is None or isinstance(axis, tuple):
            raise ValueError("accumulate does not allow multiple axes")
        axis = jnp._axis(axis, a.ndim)
        if a.size == 0:
            return jnp.zeros(a.shape, dtype)
        a = jnp.moveaxis(a, axis, 0)
        first = a[0].astype(dtype)

        def step(acc, x):
            y = self(acc, x.astype(dtype)).astype(dtype)
            return y, y
        _, rest = scan(step, first, a[1:])
        return jnp.moveaxis(jnp.concatenate([first[None], rest], 0), 0, axis)

    def at(self, a, indices, b=None, /, *, inplace=True):
        if inplace:
            raise NotImplementedError(_AT_INPLACE)
        if self.__props["at"] is not None:
            at = self.__props["at"]
            return at(a, indices) if b is None else at(a, indices, b)
        from ..control_flow import scan
        args = () if b is None else (b,)
        jnp._check_arraylike(f"{self.__name__}.at", a, *args)
        a = jnp.asarray(a)
        args = tuple(jnp.asarray(x) for x in args)
        dtype = self._dtype(a, *args)
        a = a.astype(dtype)
        args = tuple(x.astype(dtype) for x in args)
        idx = indices if isinstance(indices, tuple) else (indices,)
        if not idx:
            return a
        idx = tuple(i if isinstance(i, slice) or i is None or i is Ellipsis
                    else jnp.asarray(i) for i in idx)
        shapes = [i.shape for i in idx if isinstance(i, _Value)]
        shape = jnp.broadcast_shapes(*shapes) if shapes else ()
        if not shape:
            return a.at[idx].set(self(a.at[idx].get(), *args))
        n = _math.prod(shape)
        if args:
            x = args[0]
            args = (jnp.reshape(jnp.broadcast_to(x, (*shape, *x.shape[len(shape):])),
                                (n, *x.shape[len(shape):])),)
        flat = tuple(jnp.ravel(jnp.broadcast_to(i, shape)) if isinstance(i, _Value) else i
                     for i in idx)
        # One element at a time, so that repeated indices accumulate.
        xs = (tuple(i for i in flat if isinstance(i, _Value)), args)

        def step(acc, x):
            ind, arg = x
            it = iter(ind)
            where_ = tuple(next(it) if isinstance(i, _Value) else i for i in flat)
            return acc.at[where_].set(self(acc.at[where_].get(), *arg)), None
        out, _ = scan(step, a, xs)
        return out

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        self._binary("reduceat")
        if out is not None:
            raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
        if self.__props["reduceat"] is not None:
            return self.__props["reduceat"](a, indices, axis=axis, dtype=dtype)
        from ..control_flow import fori_loop
        a = jnp.asarray(a)
        indices = jnp.asarray(indices)
        if a.ndim == 0:
            raise ValueError(f"reduceat: a must have 1 or more dimension, got {a.shape=}")
        if indices.ndim != 1:
            raise ValueError(f"reduceat: indices must be one-dimensional, got {indices.shape=}")
        if axis is None or isinstance(axis, (tuple, list)):
            raise ValueError("reduceat requires a single integer axis.")
        dtype = a.dtype if dtype is None else dtype
        axis = jnp._axis(axis, a.ndim)
        res = jnp.take(a, indices, axis=axis).astype(dtype)
        n = a.shape[axis]
        bounds = jnp.append(indices, n)
        others = tuple(d for d in range(res.ndim) if d != axis)
        start = jnp.expand_dims(bounds[:-1], others)
        end = jnp.expand_dims(bounds[1:], others)

        def body(i, acc):
            row = jnp.take(a, jnp.reshape(i, (1,)), axis=axis).astype(dtype)
            return jnp.where((i > start) & (i < end), self(acc, row), acc)
        return fori_loop(0, n, body, res)

    def outer(self, A, B, /):
        self._binary("outer")
        jnp._check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = jnp.asarray(A), jnp.asarray(B)
        res = _vmap(_vmap(self, (None, 0)), (0, None))(jnp.ravel(A), jnp.ravel(B))
        return jnp.reshape(res, A.shape + B.shape)


def jnp_ufuncs():
    """JAX's ufunc objects of `jax.numpy` (`jnp.add.outer`, `.reduce`, ...):
    the elementwise functions wrapped, with their reductions, cumulative
    forms and `.at` updates by Ember's own ops where JAX has them."""
    def red(f):
        def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
            kw = {} if initial is None else {"initial": initial}
            if where is not None:
                kw["where"] = where
            return f(a, axis=axis, dtype=dtype, keepdims=keepdims, **kw)
        return reduce

    def red_nodtype(f):
        def reduce(a, axis=0, dtype=None, keepdims=False, initial=None, where=None):
            kw = {} if initial is None else {"initial": initial}
            if where is not None:
                kw["where"] = where
            out = f(a, axis=axis, keepdims=keepdims, **kw)
            return out if dtype is None else out.astype(dtype)
        return reduce

    def acc(f):
        return lambda a, axis=0, dtype=None: f(a, axis=axis, dtype=dtype)

    def at(method):
        return lambda a, indices, b: getattr(jnp.asarray(a).at[indices], method)(b)

    specs = {
        "add": dict(identity=0, reduce=red(jnp.sum), accumulate=acc(jnp.cumsum), at=at("add")),
        "subtract": dict(),
        "multiply": dict(identity=1, reduce=red(jnp.prod), accumulate=acc(jnp.cumprod),
                         at=at("multiply")),
        "maximum": dict(reduce=red_nodtype(jnp.max), at=at("max")),
        "minimum": dict(reduce=red_nodtype(jnp.min), at=at("min")),
        "bitwise_and": dict(identity=-1), "bitwise_or": dict(identity=0),
        "bitwise_xor": dict(identity=0),
        "logical_and": dict(identity=True, reduce=red_nodtype(jnp.all)),
        "logical_or": dict(identity=False, reduce=red_nodtype(jnp.any)),
        "logical_xor": dict(identity=False),
        "logaddexp": dict(identity=-_np.inf), "logaddexp2": dict(identity=-_np.inf),
    }
    out = {}
    for name, kw in specs.items():
        f = getattr(jnp, name)
        out[name] = ufunc(f, 2, 1, name=name, call=f, **kw)
    out["negative"] = ufunc(jnp.negative, 1, 1, name="negative", call=jnp.negative)
    return out


def frompyfunc(func, /, nin, nout, *, identity=None):
    return ufunc(func, nin, nout, identity=identity)


# --------------------------------------------------------------------------
# Partial sorts
# --------------------------------------------------------------------------


def _partition_prep(name, a, kth, axis):
    a = jnp.asarray(a)
    if _dt.is_complex(a.dtype):
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    axis = jnp._axis(axis, a.ndim)
    n = a.shape[axis]
    if not -n <= kth < n:
        raise ValueError(f"axis {kth} is out of bounds for array of dimension {n} "
                         f"(at {_core.where()})")
    return jnp.swapaxes(a, axis, -1), kth % n, axis


def _low_keys(a):
    """Keys whose largest are `a`'s smallest (negation; uint: complement)."""
    return jnp.bitwise_not(a) if _dt.is_unsigned(a.dtype) else jnp.negative(a)


def partition(a, kth, axis=-1):
    a, kth, axis = _partition_prep("partition", a, kth, axis)
    if _dt.is_bool(a.dtype):
        a = a.astype(_np.int32)
        low = jnp.negative(lax.top_k(jnp.negative(a), kth + 1)[0])
        high = lax.top_k(a, a.shape[-1] - kth - 1)[0]
        return jnp.swapaxes(jnp.concatenate([low, high], -1).astype(_np.bool_), -1, axis)
    low = _low_keys(lax.top_k(_low_keys(a), kth + 1)[0])
    high = lax.top_k(a, a.shape[-1] - kth - 1)[0]
    return jnp.swapaxes(jnp.concatenate([low, high], -1), -1, axis)


def argpartition(a, kth, axis=-1):
    a, kth, axis = _partition_prep("argpartition", a, kth, axis)
    if _dt.is_bool(a.dtype):
        a = a.astype(_np.int32)
    low = lax.top_k(_low_keys(a), kth + 1)[1]
    # The rest: the positions not among `low` (a 0/1 proxy keeps duplicates apart).
    n = a.shape[-1]
    chosen = jnp.any(jnp.equal(low[..., :, None], jnp.arange(n, dtype=low.dtype)), axis=-2)
    proxy = jnp.where(chosen, 0.0, 1.0).astype(_np.float32)
    high = lax.top_k(proxy, n - kth - 1)[1]
    return jnp.swapaxes(jnp.concatenate([low, high], -1), -1, axis)


# --------------------------------------------------------------------------
# Selection and indexed updates
# --------------------------------------------------------------------------


def choose(a, choices, out=None, mode="raise"):
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    _check_arraylike("choose", a, *choices)
    a = jnp.asarray(a)
    choices = [jnp.asarray(c) for c in choices]
    if not _dt.is_int(a.dtype):
        raise ValueError("`a` array must be integer typed")
    n = len(choices)
    if mode == "raise":
        arr = _concrete(a, "jnp.choose with mode='raise' (use mode='wrap' or mode='clip' "
                           "under jit)")
        if _np.any((arr < 0) | (arr >= n)):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        a = jnp.remainder(a, n)
    elif mode == "clip":
        a = jnp.clip(a, 0, n - 1)
    else:
        raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
    a, *choices = jnp.broadcast_arrays(a, *choices)
    stacked = jnp.stack(choices) if choices else jnp.zeros((0,) + a.shape)
    stacked = jnp._to(stacked, stacked.dtype)  # (as jnp.array(choices): strongly typed)
    return jnp.take_along_axis(stacked, a[None], axis=0, mode="clip")[0]


def _tile_to_size(arr, size):
    if arr.size < size:
        arr = jnp.tile(arr, -(-size // arr.size))
    return arr[:size] if arr.size > size else arr


def put(a, ind, v, mode=None, *, inplace=True):
    if inplace:
        raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    _check_arraylike("put", a, ind, v)
    a = jnp.asarray(a)
    ind = jnp.ravel(jnp.asarray(ind))
    v = jnp.ravel(jnp.asarray(v))
    if not a.size or not ind.size or not v.size:
        return a
    v = _tile_to_size(v, ind.size)
    if mode is None:
        scatter_mode = "drop"
    elif mode == "clip":
        ind = jnp.clip(ind, 0, a.size - 1)
        scatter_mode = "promise_in_bounds"
    elif mode == "wrap":
        ind = jnp.remainder(ind, a.size)
        scatter_mode = "promise_in_bounds"
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise ValueError(f"mode should be one of 'wrap' or 'clip'; got {mode=}")
    return a.at[unravel_index(ind, a.shape)].set(v, mode=scatter_mode)


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    if inplace:
        raise ValueError(
            "jax.numpy.put_along_axis cannot modify arrays in-place, because JAX arrays"
            "are immutable. Pass inplace=False to instead return an updated array.")
    _check_arraylike("put_along_axis", arr, indices, values)
    arr, indices, values = jnp.asarray(arr), jnp.asarray(indices), jnp.asarray(values)
    shape = arr.shape
    if axis is None:
        arr, axis = jnp.ravel(arr), 0
    if arr.ndim != indices.ndim:
        raise ValueError("put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                         f"Got {arr.ndim=} and {indices.ndim=}.")
    try:
        values = jnp.broadcast_to(values, indices.shape)
    except ValueError:
        raise ValueError("put_along_axis argument 'values' must be broadcastable to 'indices'. "
                         f"Got {values.shape=} and {indices.shape=}.") from None
    axis = jnp._axis(axis, arr.ndim)
    idx = list(jnp.indices(arr.shape, sparse=True))
    idx[axis] = indices
    return jnp.reshape(arr.at[tuple(idx)].set(values, mode=mode), shape)


def place(arr, mask, vals, *, inplace=True):
    _check_arraylike("place", arr, mask, vals)
    data, mask, vals = jnp.asarray(arr), jnp.asarray(mask), jnp.ravel(jnp.asarray(vals))
    if inplace:
        raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are "
                         "immutable. Pass inplace=False to instead return an updated array.")
    if data.size != mask.size:
        raise ValueError("place: arr and mask must be the same size")
    if not vals.size:
        raise ValueError("Cannot place values from an empty array")
    if not data.size:
        return data
    idx = jnp.where(jnp.ravel(mask), size=mask.size, fill_value=mask.size)[0]
    vals = _tile_to_size(vals, idx.shape[0])
    return jnp.reshape(jnp.ravel(data).at[idx].set(vals, mode="drop"), data.shape)


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    _check_arraylike("fill_diagonal", a, val)
    a, val = jnp.asarray(a), jnp.asarray(val)
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    if a.ndim > 2 and not builtins.all(n == a.shape[0] for n in a.shape[1:]):
        raise ValueError("All dimensions of input must be of equal length")
    n = builtins.min(a.shape)
    idx = jnp.diag_indices(n, a.ndim)
    return a.at[idx].set(val if val.ndim == 0 else _tile_to_size(jnp.ravel(val), n))


def insert(arr, obj, values, axis=None):
    _check_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj, values)
    a = jnp.asarray(arr)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    axis = jnp._axis(_index(axis, "axis argument of jnp.insert()"), a.ndim)
    if isinstance(obj, slice):
        idx = jnp.arange(*obj.indices(a.shape[axis]))
    else:
        idx = jnp.asarray(obj)
    if idx.ndim > 1:
        raise ValueError("jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                         f"scalar; got {obj}")
    if not _dt.is_int(idx.dtype):
        if idx.size == 0 and not isinstance(obj, _Value):
            idx = idx.astype(_dt.default_int())
        else:
            raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
    vals = jnp.array(values, ndmin=a.ndim, dtype=a.dtype, copy=False)
    if idx.size == 1:
        first = jnp.ravel(idx)[0]
        if idx.ndim == 0:
            vals = jnp.moveaxis(vals, 0, axis)
        idx = jnp.full(vals.shape[axis], first)
    n_in = a.shape[axis]
    n_new = jnp.broadcast_shapes(idx.shape, (vals.shape[axis],))[0]
    out_shape = list(a.shape)
    out_shape[axis] += n_new
    idx = jnp.clip(jnp.where(idx < 0, idx + n_in, idx), 0, n_in)
    # Where the new values land: each index, shifted by the values placed before it.
    new_pos = idx.at[jnp.argsort(idx)].add(jnp.arange(n_new, dtype=idx.dtype))
    keep = jnp.ones(n_in + n_new, dtype=_np.bool_).at[new_pos].set(False)
    old_pos = jnp.where(keep, size=n_in)[0]
    lead = (slice(None),) * axis
    out = jnp.zeros(tuple(out_shape), a.dtype)
    out = out.at[lead + (new_pos,)].set(vals)
    return out.at[lead + (old_pos,)].set(a)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    _check_arraylike("delete", arr)
    a = jnp.asarray(arr)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    axis = jnp._axis(axis, a.ndim)
    lead = (slice(None),) * axis
    n = a.shape[axis]
    if isinstance(obj, (int, _np.integer)) and not isinstance(obj, (builtins.bool, _np.bool_)):
        i = jnp._axis(int(obj), n)
        return jnp.concatenate([a[lead + (slice(0, i),)], a[lead + (slice(i + 1, None),)]],
                               axis=axis)
    if isinstance(obj, slice):
        obj = jnp.arange(n)[obj]
        assume_unique_indices = True
    _check_arraylike("delete", a, obj)
    if isinstance(obj, _Value) and _dt.is_int(obj.dtype) and assume_unique_indices:
        idx = jnp.ravel(obj)
        idx = jnp.sort(jnp.clip(jnp.where(idx < 0, idx + n, idx), 0, n))
        idx = idx - jnp.arange(idx.shape[0], dtype=idx.dtype)
        keep = jnp.arange(n - idx.shape[0], dtype=idx.dtype)
        keep = keep + jnp.sum(keep[None, :] >= idx[:, None], axis=0, dtype=keep.dtype)
        return a[lead + (keep,)]
    idx = _concrete(obj, "'obj' array argument of jnp.delete()")
    if _np.issubdtype(idx.dtype, _np.integer):
        mask = _np.ones(n, dtype=bool)
        mask[idx] = False
    elif idx.dtype == bool:
        if idx.shape != (n,):
            raise ValueError("np.delete(arr, obj): for boolean indices, obj must be "
                             "one-dimensional with length matching specified axis.")
        mask = ~idx
    else:
        raise ValueError(f"np.delete(arr, obj): got obj.dtype={idx.dtype}; must be integer or "
                         "bool.")
    return a[lead + (_np.nonzero(mask)[0].astype(_np.int32),)]


# --------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------


def resize(a, new_shape):
    _check_arraylike("resize", a)
    new_shape = (new_shape,) if isinstance(new_shape, (int, _np.integer)) else tuple(new_shape)
    new_shape = tuple(_index(d, "new_shape argument of jnp.resize()") for d in new_shape)
    if builtins.any(d < 0 for d in new_shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    arr = jnp.ravel(a)
    size = _math.prod(new_shape)
    if arr.size == 0 or size == 0:
        return jnp.zeros(new_shape, arr.dtype)
    return jnp.reshape(jnp.tile(arr, -(-size // arr.size))[:size], new_shape)


def rollaxis(a, axis, start=0):
    _check_arraylike("rollaxis", a)
    a = jnp.asarray(a)
    start = _index(start, "'start' argument of jnp.rollaxis()")
    nd = a.ndim
    axis = jnp._axis(axis, nd)
    if not -nd <= start <= nd:
        raise ValueError(f"{start=} must satisfy {-nd}<=start<={nd}")
    if start < 0:
        start += nd
    if start > axis:
        start -= 1
    return jnp.moveaxis(a, axis, start)


def _block(xs):
    if isinstance(xs, tuple):
        raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
    if isinstance(xs, list):
        if not xs:
            raise ValueError("jax.numpy.block does not allow empty list arguments")
        parts, depths = zip(*[_block(x) for x in xs])
        if builtins.any(d != depths[0] for d in depths[1:]):
            raise ValueError("Mismatched list depths in jax.numpy.block")
        rank = builtins.max(depths[0], builtins.max(p.ndim for p in parts))
        parts = [jnp.reshape(p, (1,) * (rank - p.ndim) + p.shape) for p in parts]
        return jnp.concatenate(parts, axis=-depths[0]), depths[0] + 1
    return jnp.asarray(xs), 1


def block(arrays):
    return _block(arrays)[0]


def dsplit(ary, indices_or_sections):
    ary = jnp.asarray(ary)
    if ary.ndim < 3:
        raise ValueError(f"axis 2 is out of bounds for array of dimension {ary.ndim} "
                         f"(at {_core.where()})")
    return jnp.split(ary, indices_or_sections, axis=2)


# --------------------------------------------------------------------------
# Index helpers
# --------------------------------------------------------------------------


def ix_(*args):
    _check_arraylike("ix", *args)
    args = [jnp.asarray(a) for a in args]
    n = len(args)
    out = []
    for i, a in enumerate(args):
        if a.ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                             f"{a.shape}")
        if a.dtype == _np.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * n
        shape[i] = a.shape[0]
        if a.size == 0:
            out.append(jnp.zeros(shape, _dt.default_int()))  # (NumPy's intp, canonicalized)
        else:
            out.append(lax.broadcast_in_dim(a, tuple(shape), (i,)))
    return tuple(out)


def _grid_1d(s, op):
    def static(x, what):
        if isinstance(x, _core.Tracer):
            x = x._concrete_or_raise(f"slice {what} of jnp.{op}")
        return x.item() if isinstance(x, (_Value, _np.ndarray, _np.generic)) else x
    start = static(s.start, "start") or 0
    stop = static(s.stop, "stop")
    step = static(s.step, "step") or 1
    if _np.iscomplex(step):
        return jnp.linspace(start, stop, int(builtins.abs(step)))
    return jnp.arange(start, stop, step)


class _Mgrid:
    """`mgrid[a:b:s, ...]`: the dense grid of the ranges (a complex step `nj`
    asks for n points, endpoints included)."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "mgrid")
        if not key:
            return jnp.arange(0)
        parts = jnp._promote_dtype(*[_grid_1d(k, "mgrid") for k in key])
        return jnp.stack(jnp.meshgrid(*parts, indexing="ij", sparse=False), 0)


class _Ogrid:
    """`ogrid[a:b:s, ...]`: the open (sparse) grid of the ranges."""

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, "ogrid")
        parts = jnp._promote_dtype(*[_grid_1d(k, "ogrid") for k in key]) if key else []
        return jnp.meshgrid(*parts, indexing="ij", sparse=True)


class _AxisConcat:
    """NumPy's `r_`/`c_`: concatenation by index syntax (slices are ranges,
    a leading string is a directive "axis,ndmin,trans1d" or "r"/"c")."""

    def __init__(self, axis, ndmin, trans1d, name):
        self.axis, self.ndmin, self.trans1d, self.name = axis, ndmin, trans1d, name

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        params = [self.axis, self.ndmin, self.trans1d, -1]
        if key and isinstance(key[0], str):
            directive, key = key[0], key[1:]
            if directive == "r":
                params[-1] = 0
            elif directive == "c":
                params[-1] = 1
            else:
                vec = directive.split(",")
                vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
                try:
                    params = [int(p) for p in vec]
                except ValueError as err:
                    raise ValueError(f"could not understand directive {directive!r}") from err
        axis, ndmin, trans1d, matrix = params
        out = []
        for item in key:
            if isinstance(item, slice):
                obj, item_ndim = _grid_1d(item, self.name), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            else:
                obj = jnp.array(item, copy=False)
                item_ndim = obj.ndim
            obj = jnp.array(obj, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                order = tuple(range(ndmin))
                shift = ndmin - builtins.abs(ndmin + trans1d + 1) % ndmin
                obj = jnp.transpose(obj, order[shift:] + order[:shift])
            out.append(obj)
        res = jnp.concatenate(out, axis=axis)
        if matrix != -1 and res.ndim == 1:
            res = jnp.expand_dims(res, matrix)
        return res

    def __len__(self):
        return 0


mgrid = _Mgrid()
ogrid = _Ogrid()
r_ = _AxisConcat(0, 1, -1, "r_")
c_ = _AxisConcat(-1, 2, 0, "c_")
s_ = _np.s_
index_exp = _np.index_exp


def unravel_index(indices, shape):
    _check_arraylike("unravel_index", indices)
    idx = jnp.asarray(indices)
    try:
        shape = list(shape)
    except TypeError:
        shape = [shape]
    if builtins.any(_np.ndim(s) != 0 for s in shape):
        raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
    outs = [0] * len(shape)
    for i in reversed(range(len(shape))):
        idx, outs[i] = jnp.divmod(idx, shape[i])
    too_big = idx > 0
    too_small = jnp.asarray(False) if _dt.is_unsigned(idx.dtype) else idx < -1
    return tuple(jnp.where(too_big, s - 1, jnp.where(too_small, 0, o))
                 for s, o in zip(shape, outs))


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    if len(multi_index) != len(dims):
        raise AssertionError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
    dims = tuple(_index(d, "in `dims` argument of ravel_multi_index().") for d in dims)
    _check_arraylike("ravel_multi_index", *multi_index)
    idx = [jnp.asarray(i) for i in multi_index]
    if dtype is None:
        dtype = jnp._result(0, *idx)[0]  # (JAX's result_type(int, ...): `int` weak)
    else:
        dtype = _dt.check_user_dtype(dtype, "ravel_multi_index")
    if not _dt.is_int(dtype):
        raise ValueError(f"{dtype=} is not an integer type.")
    if _math.prod(dims) - 1 > _np.iinfo(dtype).max:
        raise ValueError(f"jnp.ravel_multi_index: {dtype=} not large enough to hold flattened "
                         f"index for {dims=}. Use the dtype argument to pass a suitable dtype "
                         "(e.g. dtype=np.min_scalar_type(prod(dims))).")
    for i in idx:
        if not _dt.is_int(i.dtype):
            raise TypeError("only int indices permitted")
    if mode == "raise":
        for i, d in zip(idx, dims):
            v = _concrete(i, "ravel_multi_index with mode='raise' (use mode='wrap' or "
                             "mode='clip' under jit)")
            if _np.any((v < 0) | (v >= d)):
                raise ValueError("invalid entry in coordinates array")
    elif mode == "clip":
        idx = [jnp.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [jnp.remainder(i, d) for i, d in zip(idx, dims)]
    elif mode != "ignore":
        raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'.")
    if order == "F":
        strides = _np.cumprod((1,) + dims[:-1])
    elif order == "C":
        strides = _np.cumprod((1,) + dims[1:][::-1])[::-1]
    else:
        raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
    out = jnp.zeros((), dtype)
    for i, s in zip(idx, strides):
        out = out + i.astype(dtype) * int(s)
    return out


def diag_indices_from(arr):
    _check_arraylike("diag_indices_from", arr)
    shape = _np.shape(arr) if not isinstance(arr, _Value) else arr.shape
    if len(shape) < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return jnp.diag_indices(shape[0], ndim=len(shape))


def mask_indices(n, mask_func, k=0, *, size=None):
    i, j = jnp.nonzero(mask_func(jnp.ones((n, n)), k), size=size)
    return i, j


# --------------------------------------------------------------------------
# Products
# --------------------------------------------------------------------------


def matvec(x1, x2, /):
    _check_arraylike("matvec", x1, x2)
    return vectorize(jnp.matmul, signature="(n,m),(m)->(n)")(x1, x2)


def vecmat(x1, x2, /):
    _check_arraylike("vecmat", x1, x2)
    return vectorize(jnp.matmul, signature="(n),(n,m)->(m)")(jnp.conj(x1), x2)


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order, from NumPy's `einsum_path` on the operands'
    shapes (JAX asks opt_einsum, which Ember does not need): the path as a
    list of tuples, as JAX's, and NumPy's printable report."""
    ops = [_np.broadcast_to(_np.zeros((), _np.float32), o.shape if isinstance(o, _Value)
                            else _np.shape(o)) for o in operands]
    n = len(ops)
    if optimize is False:  # (JAX's unoptimized path: left to right)
        _, info = _np.einsum_path(subscripts, *ops, optimize="greedy")
        return ([(0, 1)] * (n - 1) if n > 1 else [(0,)]), info
    if optimize is True or optimize == "auto":
        optimize = "optimal" if n <= 4 else "greedy"  # (as opt_einsum's "auto")
    path, info = _np.einsum_path(subscripts, *ops, optimize=optimize)
    return [tuple(p) for p in path[1:]], info


# --------------------------------------------------------------------------
# Bits
# --------------------------------------------------------------------------


def packbits(a, axis=None, bitorder="big"):
    _check_arraylike("packbits", a)
    a = jnp.asarray(a)
    if not (_dt.is_int(a.dtype) or _dt.is_bool(a.dtype)):
        raise TypeError("Expected an input array of integer or boolean data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = jnp.arange(8, dtype=_np.uint8)
    if bitorder == "big":
        bits = bits[::-1]
    a = jnp.not_equal(a, 0).astype(_np.uint8)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    a = jnp.swapaxes(a, axis, -1)
    rem = a.shape[-1] % 8
    if rem:
        a = lax.pad(a, _np.uint8(0), [(0, 0, 0)] * (a.ndim - 1) + [(0, 8 - rem, 0)])
    a = jnp.reshape(a, a.shape[:-1] + (a.shape[-1] // 8, 8))
    packed = jnp.sum(jnp.left_shift(a, bits), axis=-1).astype(_np.uint8)
    return jnp.swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    _check_arraylike("unpackbits", a)
    a = jnp.asarray(a)
    if a.dtype != _np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    if bitorder not in ("little", "big"):
        raise ValueError("'order' must be either 'little' or 'big'")
    bits = jnp.left_shift(jnp.ones((), _np.uint8), jnp.arange(8, dtype=_np.uint8))
    if bitorder == "big":
        bits = bits[::-1]
    if axis is None:
        a, axis = jnp.ravel(a), 0
    a = jnp.swapaxes(a, axis, -1)
    out = jnp.greater(jnp.bitwise_and(a[..., None], bits), 0).astype(_np.uint8)
    out = jnp.reshape(out, out.shape[:-2] + (-1,))
    if count is not None:
        if count > out.shape[-1]:
            out = jnp.pad(out, [(0, 0)] * (out.ndim - 1) + [(0, count - out.shape[-1])])
        else:
            out = out[..., :count]
    return jnp.swapaxes(out, axis, -1)


# --------------------------------------------------------------------------
# Comparison, copies, printing, I/O
# --------------------------------------------------------------------------


def array_equiv(a1, a2):
    _check_arraylike("array_equiv", a1, a2)
    a1, a2 = jnp.asarray(a1), jnp.asarray(a2)
    try:
        jnp.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:  # (JAX's: shapes that do not broadcast are not equivalent)
        return jnp.asarray(False)
    eq = jnp.equal(a1, a2)
    return jnp.all(eq)


def copy(a, order=None):
    _check_arraylike("copy", a)
    return jnp.array(a, copy=True, order=order)


array_repr = _np.array_repr
array_str = _np.array_str
get_printoptions = _np.get_printoptions
set_printoptions = _np.set_printoptions
printoptions = _np.printoptions
iterable = _np.iterable
save = _np.save
savez = _np.savez


def load(file, *args, **kwargs):
    """NumPy's `load`, as an Ember array where its dtype allows (bfloat16
    data, which NumPy saves as 2-byte voids, comes back as bfloat16)."""
    out = _np.load(file, *args, **kwargs)
    if isinstance(out, _np.ndarray):
        if out.dtype == "V2":
            out = out.view(_dt.bfloat16)
        try:
            out = jnp.asarray(out)
        except (TypeError, AssertionError):
            pass
    return out


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    return jnp.asarray(_np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    return jnp.asarray(_np.fromstring(string=string, dtype=dtype, count=count, sep=sep))


def _impure(name, what):
    def f(*args, **kwargs):
        raise NotImplementedError(
            f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe for "
            f"use with JIT and other JAX transformations. Consider using "
            f"jnp.asarray(np.{name}(...)) instead, although care should be taken if "
            f"np.{name} is used within a jax transformations because of its potential "
            f"side-effect of consuming the {what} object; for more information see "
            "https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html#pure-functions")
    f.__name__ = f.__qualname__ = name
    return f


fromfile = _impure("fromfile", "file")
fromiter = _impure("fromiter", "iterable")

"""The jax.numpy API on ember primitives (re-exported by `ember.numpy`).

Array operators and methods are installed on `Value` by `array_methods`,
indexing lives in `indexing`, einsum in `einsum`, and linalg in `linalg`.
"""

import builtins
import collections as _collections
import functools as _functools
import inspect as _inspect
import itertools as _itertools
import math as _math

import numpy as _np

from .. import core as _core
from .. import dtypes as _dt
from .. import lax as lax
from .. import prng as _prng
from .. import shape_poly
from .. import sharding_rules as _sharding_rules
from .. import tree_util as _tree_util
from ..config import config as _config
from ..core import Value as _Value
from ..core import as_value as _v
from ..shape_poly import DimExpr, InconclusiveDimensionOperation

ndarray = _core.Array


class _ScalarMeta(type):
    """JAX's scalar types: `jnp.float32(x)` makes an array of that dtype from
    x, traced or not; the type itself stands for its dtype (np.dtype,
    `dtype=` arguments, issubdtype, finfo) and compares equal to NumPy's."""

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == getattr(other, "dtype", other) or (
            isinstance(other, type) and other is cls.dtype.type)

    def __ne__(cls, other):
        return not _ScalarMeta.__eq__(cls, other)

    def __call__(cls, x):
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)


def _scalar_type(np_type, name=None):
    return _ScalarMeta(name or _np.dtype(np_type).name, (object,),
                       {"dtype": _np.dtype(np_type)})


bool_ = _scalar_type(_np.bool_, "bool")
bool = bool_  # noqa: A001  (the Array API's and JAX's name)
int8, int16, int32, int64 = (_scalar_type(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64))
uint8, uint16, uint32, uint64 = (
    _scalar_type(t) for t in (_np.uint8, _np.uint16, _np.uint32, _np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (_np.float16, _np.float32, _np.float64))
bfloat16 = _scalar_type(_dt.bfloat16)
complex64, complex128 = _scalar_type(_np.complex64), _scalar_type(_np.complex128)
inexact, floating, integer, signedinteger, unsignedinteger, number, complexfloating = (
    _np.inexact, _np.floating, _np.integer, _np.signedinteger, _np.unsignedinteger,
    _np.number, _np.complexfloating)
generic = _np.generic
pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None
dtype = _np.dtype
iinfo = _dt.iinfo
finfo = _dt.finfo
float_ = float64
int_ = int64
complex_ = complex128


def _shape_arg(shape):
    """A creation function's `shape` argument as a tuple (an int, or a 0-d
    array, is one dimension)."""
    if isinstance(shape, (int, _np.integer)) or (isinstance(shape, _Value) and shape.ndim == 0):
        return (shape,)
    return tuple(shape)


def _on_keys(fn):
    """`fn`, or the function of the same name in `prng` when a key array is
    among its arguments (key arrays' shape operations, `where`, `stack`)."""
    on_keys = getattr(_prng, fn.__name__)

    @_functools.wraps(fn)
    def _key_dispatch(*args, **kwargs):  # (a name sharding_rules._user_called skips)
        if _prng.has_key(*args, *kwargs.values()):
            return on_keys(*args, **kwargs)
        return fn(*args, **kwargs)
    return _key_dispatch


def issubdtype(a, b):
    keys = _prng.issubdtype(a, b)
    if keys is not None:
        return keys
    if a == bfloat16 or (isinstance(a, _np.dtype) and a == _dt.bfloat16):
        return b in (bfloat16, _np.floating, _np.inexact, _np.number, _np.generic)
    kinds = _ml_dtype_kinds(a)
    if kinds is not None:
        # ml_dtypes' narrow floats and integers are NumPy void types: their
        # category by name, as JAX places them.
        if builtins.any(b is k for k in kinds):
            return True
        try:
            return _np.dtype(b) == _np.dtype(a)
        except TypeError:
            return False
    return _np.issubdtype(a, b)


def _ml_dtype_kinds(a):
    """The NumPy abstract types an ml_dtypes type belongs under, or None."""
    try:
        d = _np.dtype(a)
    except TypeError:
        return None
    if d.kind != "V" or d.names is not None:
        return None
    base = (_np.number, _np.generic)
    if d.name.startswith("float"):
        return (_np.floating, _np.inexact) + base
    if d.name.startswith("uint"):
        return (_np.unsignedinteger, _np.integer) + base
    if d.name.startswith("int"):
        return (_np.signedinteger, _np.integer) + base
    return None


def isdtype(dtype, kind):
    # (NumPy's, with the extended floats (bfloat16, 8- and 4-bit floats)
    # counted as real floats.)
    d = _np.dtype(dtype)
    if d.kind == "V" and (d == _dt.bfloat16 or d in _dt.NARROW_FLOATS):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        return builtins.any(k in ("real floating", "numeric") or
                            (not isinstance(k, str) and _np.dtype(k) == d) for k in kinds)
    return _np.isdtype(d, kind)


def promote_types(a, b):
    return _dt.promote_types_uncanonical(a, b)


def result_type(*args):
    return _result(*args)[0]


def _result(*args):
    pairs = []
    for a in args:
        if isinstance(a, _Value):
            pairs.append((a.dtype, a.weak_type))
        elif a is builtins.int or a is builtins.float or a is builtins.complex:
            # Python's scalar types are weak, as their values are (JAX).
            pairs.append((_v(a(0)).dtype, True))
        elif (isinstance(a, (_np.dtype, type)) and not isinstance(a, builtins.bool)
              or isinstance(a, str)):
            pairs.append((_np.dtype(a), False))
        else:
            v = _v(a)
            pairs.append((v.dtype, v.weak_type))
    return _dt.result_type_weak(*pairs)


def can_cast(f, t, casting="safe"):
    return _np.can_cast(f, t, casting)


# --------------------------------------------------------------------------
# Conversion and broadcasting helpers
# --------------------------------------------------------------------------


def _to(x, dtype, weak=False):
    x = _v(x)
    if _dt.is_complex(x.dtype) and _np.dtype(dtype) == bool_:
        return lax.ne(x, lax.full_like(x, 0))  # (NumPy's: either part nonzero)
    return lax.convert_element_type(x, dtype, weak)


def broadcast_shapes(*shapes):
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dims = [s[i - ndim + len(s)] for s in shapes if i - ndim + len(s) >= 0]
        sizes = {x for x in dims if x != 1}  # 1 stretches to any size, 0 included
        if len(sizes) > 1:
            raise _core.value_error(
                f"Incompatible shapes for broadcasting: {tuple(map(tuple, shapes))}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


@_on_keys
def broadcast_to(x, shape):
    x = _v(x)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if x.shape == shape:
        return x
    if len(shape) < x.ndim:
        raise _core.value_error(f"cannot broadcast {x.shape} to {shape}")
    nd = len(shape) - x.ndim
    for i, n in enumerate(x.shape):
        if n != 1 and n != shape[nd + i]:
            raise _core.value_error(f"Incompatible shapes for broadcasting: {x.shape} and {shape}")
    return lax.broadcast_in_dim(x, shape, tuple(range(nd, len(shape))))


def broadcast_arrays(*args):
    vals = [_v(a) for a in args]
    shape = broadcast_shapes(*[a.shape for a in vals])
    return [broadcast_to(a, shape) for a in vals]


def _promote(*args, to_inexact=False):
    args = [a if isinstance(a, _Value) else _v(a) for a in args]  # convert once
    dtype, weak = _result(*args)
    if to_inexact:
        dtype = _dt.to_inexact(dtype)
    vals = [_to(a, dtype, weak) for a in args]
    shapes = [a.shape for a in vals]
    if shapes.count(shapes[0]) == len(shapes):  # (`all` here is jnp.all)
        return vals
    shape = broadcast_shapes(*shapes)
    return [broadcast_to(a, shape) for a in vals]


def _promote_dtype(*args, to_inexact=False):
    """Converts to the common dtype without broadcasting."""
    dtype, weak = _result(*args)
    if to_inexact:
        dtype = _dt.to_inexact(dtype)
    return [_to(a, dtype, weak) for a in args]


def _check_binary_shapes(name, x, y):
    try:
        broadcast_shapes(_v(x).shape, _v(y).shape)
    except ValueError:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        f"{_v(x).shape}, {_v(y).shape} (at {_core.where()})") from None


def _check_arraylike(name, *args):
    """JAX's rule: array functions take arrays and scalars, not Python lists
    or tuples (`jnp.asarray` converts those)."""
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)):
            raise _core.type_error(f"{name} requires ndarray or scalar arguments, got "
                                   f"{type(a)} at position {i}.")


def _eager_jit(f):
    """`f` (an elementwise function of arrays) that, called outside any
    trace, runs as one jitted program through jit's C++ dispatch (as JAX's
    jnp functions are jitted): promotion, broadcasting and the op are one
    compiled call instead of one per primitive."""
    jitted = None

    @_functools.wraps(f)
    def g(*args):
        nonlocal jitted
        if _core._trace_stack or _config.jax_disable_jit:
            return f(*args)
        if jitted is None:
            jitted = _core.jit_hook(f)
        # Python scalars as (weakly typed) arrays, so that jit's C++ path
        # serves the call.
        return jitted(*[a if type(a) is ndarray else _scalar_array(a) for a in args])
    return g


def _jit_outside_traces(*static_argnames):
    """JAX's `partial(jit, static_argnames=...)` on a jnp function of several
    primitives: called outside any trace with arrays, Python or NumPy
    scalars and None for its other arguments, it runs as one program
    (`core.call_compiled`: compiled once per shapes and static arguments, in
    tiers) instead of one eager program per primitive (`jnp.take` was nine
    compiles). Inside traces, and with any other argument (a list, a key
    array, a sharded array, an unhashable static), `f` runs as written, op
    by op; so only functions whose Python does not read their arrays'
    values take it."""
    def deco(f):
        sig = _inspect.signature(f).parameters.values()
        params = [p.name for p in sig if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        keywords = {p.name for p in sig if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

        @_functools.wraps(f)
        def _jit_dispatch(*args, **kwargs):  # (a name sharding_rules._user_called skips)
            if _core._trace_stack or _config.jax_disable_jit or len(args) > len(params):
                return f(*args, **kwargs)
            if kwargs.get("device") is not None:
                # (Placed after the program, which runs where its operands
                # are or on the default device: a `device=` inside it is a
                # traced device_put, which does not move its result.)
                device = kwargs["device"]
                out = _jit_dispatch(*args, **dict(kwargs, device=None))
                return _tree_util.tree_map(
                    lambda x: _core.on_device(x, device) if isinstance(x, _core.Value) else x,
                    out)
            named = [(params[i], a) for i, a in enumerate(args)]
            for k in kwargs:
                if k not in keywords:
                    return f(*args, **kwargs)
            static, arrays = [], []
            for k, a in named + list(kwargs.items()):
                if k in static_argnames or a is None:
                    static.append((k, a))
                elif _compilable_operand(a):
                    static.append((k, _ARRAY))
                    arrays.append(_v(_scalar_array(a)))
                else:
                    return f(*args, **kwargs)
            static = tuple(static)
            try:
                hash(static)
            except TypeError:
                return f(*args, **kwargs)
            n = len(args)

            def call(*xs):
                it = iter(xs)
                vals = [next(it) if v is _ARRAY else v for _, v in static]
                return f(*vals[:n], **{k: v for (k, _), v in zip(static[n:], vals[n:])})
            return _core.call_compiled(call, (f, static), arrays)
        return _jit_dispatch
    return deco


_ARRAY = "<array>"  # (an array argument's place among static ones)


def _compilable_operand(a):
    """Whether `a` can be an operand of a program compiled outside traces
    (`_jit_outside_traces`): an unsharded array, an array on a GPU, a NumPy
    array or scalar, a Python scalar."""
    return (type(a) in (int, float, bool, complex)
            or (type(a) is ndarray and a.aval.sharding is None)
            or type(a) is _core.GpuArray
            or (isinstance(a, (_np.ndarray, _np.generic)) and a.dtype.kind in "biufc"))


_scalar_arrays = {}


def _scalar_array(x):
    """The weakly typed array of a Python scalar (a few hundred kept, as the
    same constants recur); anything else unchanged."""
    if type(x) not in (int, float, bool, complex):
        return x
    key = (type(x), repr(x), _config.jax_enable_x64)
    a = _scalar_arrays.get(key)
    if a is None:
        if len(_scalar_arrays) >= 512:
            _scalar_arrays.clear()
        a = _scalar_arrays[key] = _v(x)
    return a


def _binop(prim_fn, name, inexact=False):
    def f(x, y, /):
        _check_arraylike(name, x, y)
        _check_binary_shapes(name, x, y)
        return prim_fn(*_promote(x, y, to_inexact=inexact))
    f.__name__ = f.__qualname__ = name
    return _eager_jit(f)


def _unop(prim_fn, name, inexact=False):
    def f(x, /):
        _check_arraylike(name, x)
        x = _v(x)
        if inexact and not _dt.is_inexact(x.dtype):
            x = _to(x, _dt.to_inexact(x.dtype), x.weak_type)
        return prim_fn(x)
    f.__name__ = f.__qualname__ = name
    return _eager_jit(f)


add = _binop(lax.add, "add")
subtract = _binop(lax.sub, "subtract")
multiply = _binop(lax.mul, "multiply")
true_divide = divide = _binop(lax.div, "true_divide", inexact=True)
maximum = _binop(lax.max, "maximum")
minimum = _binop(lax.min, "minimum")
arctan2 = _binop(lax.atan2, "arctan2", inexact=True)
nextafter = _binop(lax.nextafter, "nextafter", inexact=True)
bitwise_and = _binop(lax.bitwise_and, "bitwise_and")
bitwise_or = _binop(lax.bitwise_or, "bitwise_or")
bitwise_xor = _binop(lax.bitwise_xor, "bitwise_xor")
def logical_and(x, y):
    return bitwise_and(_to(x, bool_), _to(y, bool_))


def logical_or(x, y):
    return bitwise_or(_to(x, bool_), _to(y, bool_))


def logical_xor(x, y):
    return bitwise_xor(_to(x, bool_), _to(y, bool_))


def logical_not(x):
    return lax.bitwise_not(_to(x, bool_))


def bitwise_not(x):
    return lax.bitwise_not(_v(x))


invert = bitwise_not
bitwise_invert = bitwise_not


def left_shift(x, y):
    return lax.shift_left(*_promote(x, y))


def right_shift(x, y):
    x, y = _promote(x, y)
    if _dt.is_unsigned(x.dtype):
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)


bitwise_left_shift = left_shift
bitwise_right_shift = right_shift


def _cmp(fn, name):
    def f(x, y, /):
        _check_binary_shapes(name, x, y)
        return fn(*_promote(x, y))
    return f


equal, not_equal = _cmp(lax.eq, "equal"), _cmp(lax.ne, "not_equal")
less, less_equal = _cmp(lax.lt, "less"), _cmp(lax.le, "less_equal")
greater, greater_equal = _cmp(lax.gt, "greater"), _cmp(lax.ge, "greater_equal")

negative = _unop(lax.neg, "negative")


def positive(x):
    return _v(x)


sign = _unop(lax.sign, "sign")
exp = _unop(lax.exp, "exp", True)
exp2 = _unop(lax.exp2, "exp2", True)
log = _unop(lax.log, "log", True)
log1p = _unop(lax.log1p, "log1p", True)
expm1 = _unop(lax.expm1, "expm1", True)
tanh = _unop(lax.tanh, "tanh", True)
sin, cos, tan = (_unop(getattr(lax, n), n, True) for n in ["sin", "cos", "tan"])
arcsin, arccos, arctan = (_unop(getattr(lax, n), "arc" + n[1:], True)
                          for n in ["asin", "acos", "atan"])
sinh, cosh = _unop(lax.sinh, "sinh", True), _unop(lax.cosh, "cosh", True)
arcsinh, arccosh, arctanh = (_unop(getattr(lax, n), "arc" + n[1:], True)
                             for n in ["asinh", "acosh", "atanh"])
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
atan2 = arctan2
sqrt = _unop(lax.sqrt, "sqrt", True)
cbrt = _unop(lax.cbrt, "cbrt", True)
conjugate = conj = lambda x: lax.conj(_v(x)) if iscomplexobj(x) else _v(x)


def abs(x, /):
    _check_arraylike("absolute", x)
    x = _v(x)
    if _dt.is_unsigned(x.dtype) or _dt.is_bool(x.dtype):
        return x
    if _dt.is_complex(x.dtype):
        return lax.abs_complex(x)
    return lax.abs(x)


absolute = abs


def _real_only(name, *xs, error=TypeError):
    """JAX's error for a function that has no meaning for complex numbers."""
    for x in xs:
        if x is not None and _dt.is_complex(_v(x).dtype):
            raise error(f"{name} does not support complex-valued inputs "
                        f"(got {_v(x).dtype}) (at {_core.where()})")


def fabs(x):
    _real_only("fabs", x)
    return abs(_to(x, _dt.to_inexact(_v(x).dtype)))


def _float_only(fn):
    def f(x, /, *a, **k):
        x = _v(x)
        if _dt.is_int(x.dtype) or _dt.is_bool(x.dtype):
            return x
        return fn(x)
    return f


floor = _float_only(lax.floor)
ceil = _float_only(lax.ceil)


def trunc(x):
    return where(less(x, 0), ceil(x), floor(x)) if _dt.is_inexact(_v(x).dtype) else _v(x)


fix = trunc
def rint(x, /):
    x = _v(x)
    if not _dt.is_inexact(x.dtype):  # (JAX's: ints and bools become floats)
        return _to(x, _dt.default_float())
    return lax.round(x, 1)


@_jit_outside_traces("decimals", "out")
def round(a, decimals=0, out=None):
    a = _v(a)
    if _dt.is_bool(a.dtype):
        raise _core.value_error(f"data type {_np.bool_} not inexact")
    if not _dt.is_inexact(a.dtype):
        if decimals >= 0:
            return a
        # (NumPy's; JAX raises NotImplementedError here.)
        # Round half to even, like NumPy.
        f = _to(10 ** (-decimals), a.dtype, True)
        q = floor_divide(a, f)
        r2 = multiply(subtract(a, multiply(q, f)), 2)
        up = logical_or(greater(r2, f), logical_and(equal(r2, f), equal(remainder(q, 2), 1)))
        return multiply(where(up, add(q, 1), q), f)
    if decimals == 0:
        return lax.round(a, 1)
    f = _to(10.0 ** decimals, a.dtype)
    return divide(lax.round(multiply(a, f), 1), f)


around = round_ = round


def square(x):
    x = _v(x)
    if _dt.is_bool(x.dtype):
        x = lax.convert_element_type(x, _dt.canonicalize_dtype(_np.int64))
    return lax.square(x)


def reciprocal(x):
    x = _v(x)
    return divide(_to(1, x.dtype, True), x)


def _concrete_int(y):
    """`y` as a Python int when it is a concrete integer scalar (a Python
    int or bool, a NumPy integer, a 0-d integer array outside traces)."""
    if isinstance(y, (int, _np.integer, _np.bool_)):
        return int(y)
    if type(y) is _core.Array and y.ndim == 0 and (_dt.is_int(y.dtype) or _dt.is_bool(y.dtype)):
        return int(y)
    return None


def power(x, y):
    """JAX's cases: a concrete integer exponent is `lax.integer_pow` (exact
    for floats, differentiable at 0); integer and boolean operands are
    computed by binary exponentiation over the exponent's low 6 bits (as
    JAX's, whose result beyond that is implementation-defined); an inexact
    base with an integer exponent array is `lax.pow` of the two as they
    are; anything else `lax.pow` of the promoted operands."""
    _check_arraylike("power", x, y)
    n = _concrete_int(y)
    if n is not None:
        x = _v(x)
        if _dt.is_bool(x.dtype):
            x = _to(x, _np.int32)  # (JAX's to_numeric_dtype, also with x64)
        return lax.integer_pow(x, n)
    xp, yp = _promote_numeric(x, y)
    if _dt.is_int(xp.dtype):
        return _pow_int_int(xp, yp)
    xv, yv = _v(x), _v(y)
    if _dt.is_inexact(xv.dtype) and _dt.is_int(yv.dtype):
        shape = broadcast_shapes(xv.shape, yv.shape)
        return lax.pow(broadcast_to(xv, shape), broadcast_to(yv, shape))
    return lax.pow(xp, yp)


def _pow_int_int(x, y):
    """x ** y of integers by squaring, over the low 6 bits of y (a larger
    power overflows anyway), y shifted logically: JAX's algorithm, so
    negative and huge exponents give JAX's values."""
    zero, one = _to(0, y.dtype), _to(1, y.dtype)
    acc = where(logical_and(equal(x, _to(0, x.dtype)), not_equal(y, zero)),
                _to(0, x.dtype), _to(1, x.dtype))
    acc = broadcast_to(acc, broadcast_shapes(x.shape, y.shape))
    for _ in range(6):
        acc = where(not_equal(lax.bitwise_and(y, one), zero), multiply(acc, x), acc)
        x = multiply(x, x)
        y = lax.shift_right_logical(y, one)
    return acc


pow = power


def float_power(x, y):
    return lax.pow(*_promote(x, y, to_inexact=True))


def _promote_numeric(x, y):
    """JAX's `promote_args_numeric`: booleans compute as int32 (also with
    x64: JAX's `to_numeric_dtype`)."""
    x, y = _promote(x, y)
    if _dt.is_bool(x.dtype):
        x, y = _to(x, _np.int32), _to(y, _np.int32)
    return x, y


def floor_divide(x, y):
    x, y = _promote_numeric(x, y)
    if _dt.is_unsigned(x.dtype):
        return lax.div(x, y)
    if _dt.is_int(x.dtype):
        q = lax.div(x, y)
        r = lax.rem(x, y)
        # (JAX's test, sign(x) != sign(y) with a remainder, which also fixes
        # what x // 0 gives: -1 - 1 where x != 0; written without `sign`,
        # which TPU kernels cannot lower for integers.)
        fix_ = logical_and(not_equal(r, 0), logical_or(
            not_equal(less(x, 0), less(y, 0)), equal(y, 0)))
        return where(fix_, subtract(q, 1), q)
    if _dt.is_complex(x.dtype):
        raise _core.type_error("floor_divide does not support complex-valued inputs")
    return _float_divmod(x, y)[0]


def _float_divmod(x, y):
    """Floor division and the remainder of floats as CPython's float_divmod
    computes them (JAX's too): the quotient of x - fmod(x, y), stepped down
    where the remainder's sign is not y's, then rounded, so that 1.0 // 0.1
    is 9 (floor(1.0 / 0.1) is 10: the division rounds up to an integer)."""
    mod = lax.rem(x, y)
    div = lax.div(where(equal(y, 0), x, lax.sub(x, mod)), y)
    fix_ = logical_and(not_equal(mod, 0), not_equal(lax.sign(y), lax.sign(mod)))
    mod = where(fix_, lax.add(mod, y), mod)
    div = where(fix_, lax.sub(div, _to(1, div.dtype)), div)
    return _to(lax.round(div), x.dtype, x.weak_type), _to(mod, x.dtype, x.weak_type)


def remainder(x, y):
    x, y = _promote_numeric(x, y)
    if _dt.is_int(x.dtype):
        # x % 0 is 0, as JAX's (it divides by 1 there).
        y = _to(where(equal(y, 0), ones_like(y), y), y.dtype, y.weak_type)
    r = lax.rem(x, y)
    if _dt.is_unsigned(x.dtype):
        return r
    fix_ = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(y, 0)))
    return where(fix_, lax.add(r, y), r)


mod = remainder


def fmax(x1, x2):
    x1, x2 = _promote(x1, x2)
    return where(logical_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1, x2):
    x1, x2 = _promote(x1, x2)
    return where(logical_or(less(x1, x2), isnan(x2)), x1, x2)


def fmod(x, y):
    x, y = _promote_numeric(x, y)
    if _dt.is_int(x.dtype):  # fmod(x, 0) is 0, as JAX's (it divides by 1 there)
        y = _to(where(equal(y, 0), ones_like(y), y), y.dtype, y.weak_type)
    return lax.rem(x, y)


def divmod(x, y):
    x, y = _promote_numeric(x, y)
    if _dt.is_int(x.dtype) or _dt.is_bool(x.dtype) or _dt.is_complex(x.dtype):
        return floor_divide(x, y), remainder(x, y)
    return _float_divmod(x, y)


def hypot(x, y):
    _real_only("hypot", x, y, error=ValueError)
    x, y = _promote(x, y, to_inexact=True)
    return lax.hypot_parts(x, y)  # no overflow of the squares, as JAX's


def _log_base(x, base):
    x = _promote(x, to_inexact=True)[0]
    if _dt.is_complex(x.dtype):  # part by part: log2(0) is -inf + 0j
        return lax._scale(log(x), 1 / _math.log(base))
    return divide(log(x), _to(_math.log(base), x.dtype))


def log2(x):
    return _log_base(x, 2)


def log10(x):
    return _log_base(x, 10)


def _softplus_safe(t):
    """log(1 + exp(t)) as a select of two branches that are each smooth and
    overflow-free, so that its derivative is sigmoid(t) everywhere (also at 0,
    where max/abs formulations give JAX's tie conventions instead)."""
    pos = greater(t, 0)
    tp = where(pos, t, zeros_like(t))
    tn = where(pos, zeros_like(t), t)
    return where(pos, add(tp, log1p(exp(negative(tp)))), log1p(exp(tn)))


def logaddexp(x, y):
    x, y = _promote(x, y, to_inexact=True)
    if _dt.is_complex(x.dtype):
        # The larger (lexicographically) plus log1p(exp(other - larger)).
        big = maximum(x, y)
        return add(big, log1p(exp(subtract(add(x, y), add(big, big)))))
    d = subtract(x, y)
    r = where(greater(x, y), add(x, _softplus_safe(negative(d))), add(y, _softplus_safe(d)))
    # (weakly typed when the operands promote weakly, as JAX's)
    return _to(where(isnan(d), add(x, y), r), x.dtype, x.weak_type)


def logaddexp2(x1, x2, /):
    # (JAX's result is weakly typed only when both operands are.)
    weak = _v(x1).weak_type and _v(x2).weak_type
    x1, x2 = _promote(x1, x2, to_inexact=True)
    ln2 = _to(_math.log(2), x1.dtype, True)
    return _to(divide(logaddexp(multiply(x1, ln2), multiply(x2, ln2)), ln2), x1.dtype, weak)


def sinc(x):
    x = _promote(x, to_inexact=True)[0]
    px = multiply(x, pi)
    zero = equal(x, 0)
    safe = where(zero, _to(1, x.dtype), px)
    # At 0 the Maclaurin series of sin(u)/u (in u = pi x), whose value is 1
    # and whose derivatives are sinc's to high order (JAX's derivatives at
    # 0: the second is -pi^2/3, where a constant branch gave 0).
    u2 = multiply(where(zero, px, _to(0, x.dtype)), where(zero, px, _to(0, x.dtype)))
    series = _to(0, x.dtype)
    for k in range(10, -1, -1):
        term = (-1) ** k / _math.factorial(2 * k + 1)
        series = add(multiply(series, u2), _to(term, x.dtype))
    return where(zero, series, divide(sin(safe), safe))


def i0(x):
    x = _promote(x, to_inexact=True)[0]
    if _dt.is_complex(x.dtype):
        raise ValueError(f"Unsupported input type to jax.numpy.i0: {x.dtype}")
    # exp(|x|) i0e(x) with |x| as x * sign(x), whose derivative sign(x) is 0 at
    # 0 (abs'(0) is 1, as in JAX), so that i0'(0) = i1(0) = 0.
    return multiply(exp(multiply(x, sign(x))), lax.bessel_i0e(x))


def deg2rad(x):
    return multiply(_promote(x, to_inexact=True)[0], pi / 180)


def rad2deg(x):
    return multiply(_promote(x, to_inexact=True)[0], 180 / pi)


radians, degrees = deg2rad, rad2deg


def copysign(x, y):
    _real_only("copysign", x, y)
    x, y = _promote(x, y, to_inexact=True)
    neg = signbit(y)
    return where(neg, negative(abs(x)), abs(x))


def signbit(x):
    x = _v(x)
    if _dt.is_complex(x.dtype):
        raise ValueError(f"jax.numpy.signbit is not well defined for {x.dtype} "
                         f"(at {_core.where()})")
    if _dt.is_int(x.dtype):
        return less(x, 0)
    if _dt.is_bool(x.dtype):
        return zeros_like(x, bool_)
    return lax.sign_bit(x)


def isnan(x):
    x = _v(x)
    if not _dt.is_inexact(x.dtype):
        return zeros_like(x, bool_)
    if _dt.is_complex(x.dtype):
        return logical_or(isnan(lax.real(x)), isnan(lax.imag(x)))
    return lax.ne(x, x)


def isinf(x):
    x = _v(x)
    if not _dt.is_inexact(x.dtype):
        return zeros_like(x, bool_)
    return equal(abs(x), inf)


def isfinite(x):
    x = _v(x)
    if not _dt.is_inexact(x.dtype):
        return ones_like(x, bool_)
    return lax.is_finite(x)


def isposinf(x):
    return equal(x, inf)


def isneginf(x):
    return equal(x, -inf)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _v(x)
    if not _dt.is_inexact(x.dtype):
        return x
    if _dt.is_complex(x.dtype):  # (part by part, as JAX's)
        return lax.complex(nan_to_num(lax.real(x), copy, nan, posinf, neginf),
                           nan_to_num(lax.imag(x), copy, nan, posinf, neginf))
    fi = finfo(x.dtype)
    posinf = fi.max if posinf is None else posinf
    neginf = fi.min if neginf is None else neginf
    x = where(isnan(x), _to(nan, x.dtype), x)
    x = where(isposinf(x), _to(posinf, x.dtype), x)
    return where(isneginf(x), _to(neginf, x.dtype), x)


def real(x):
    x = _v(x)
    return lax.real(x) if _dt.is_complex(x.dtype) else x


def imag(x):
    x = _v(x)
    return lax.imag(x) if _dt.is_complex(x.dtype) else zeros_like(x)


def angle(z, deg=False):
    """The counterclockwise angle of z from the positive real axis."""
    z = _v(z)
    z = _to(z, _dt.to_inexact(z.dtype))
    a = arctan2(imag(z), real(z))
    return rad2deg(a) if deg else a


def iscomplexobj(x):
    return _dt.is_complex(_v(x).dtype)


def isreal(x):
    x = _v(x)
    return equal(imag(x), 0) if _dt.is_complex(x.dtype) else ones_like(x, bool_)


def iscomplex(x):
    x = _v(x)
    return not_equal(imag(x), 0) if _dt.is_complex(x.dtype) else zeros_like(x, bool_)


def isrealobj(x):
    return not iscomplexobj(x)


def heaviside(x1, x2):
    _real_only("heaviside", x1, x2)
    x1, x2 = _promote(x1, x2, to_inexact=True)
    # (NaN stays NaN: neither below nor above zero.)
    return _to(where(less(x1, 0), zeros_like(x1),
                     where(greater(x1, 0), ones_like(x1), where(isnan(x1), x1, x2))),
               x1.dtype, x1.weak_type)


@_on_keys
def where(condition, x=None, y=None, *, size=None, fill_value=None):
    _check_arraylike("where", condition, x, y)
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    c = _to(condition, bool_)
    given = (_v(y), _v(x))  # (before broadcasting: broadcast operands are not checked)
    x, y = _promote(x, y)
    shape = broadcast_shapes(c.shape, x.shape)
    _sharding_rules.check_select(c, given, shape, _sharding_rules.WHERE)
    return lax.select(broadcast_to(c, shape), broadcast_to(x, shape), broadcast_to(y, shape))


def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise _core.value_error("condlist must have length equal to choicelist "
                                f"({len(condlist)} vs {len(choicelist)})")
    if not len(condlist):
        raise _core.value_error("condlist must be non-empty")
    out = _v(default)
    for c, v in reversed(list(zip(condlist, choicelist))):
        out = where(c, v, out)
    return out


def clip(arr=None, min=None, max=None, *, a=None, a_min=None, a_max=None):
    _check_arraylike("clip", arr, min, max)
    x = _v(arr if arr is not None else a)
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    if builtins.any(v is not None and iscomplexobj(v) for v in (x, lo, hi)):
        raise ValueError("Clip received a complex value either through the input or the "
                         "min/max keywords. Complex values have no ordering and cannot be "
                         f"clipped. Please convert to a real value or array by taking the real "
                         f"or imaginary components via jax.numpy.real/imag respectively. "
                         f"(at {_core.where()})")
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return x


# --------------------------------------------------------------------------
# Creation
# --------------------------------------------------------------------------


def _canon_dtype(dtype, default, name=None):
    """A user's `dtype=` of `name` (JAX's check and warning), or `default`."""
    return _dt.canonicalize_dtype(default) if dtype is None else _dt.check_user_dtype(dtype, name)


@_on_keys
def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None):
    return _core.on_device(_array(object, dtype, ndmin), device)


def _array(object, dtype, ndmin):
    if object is None:
        raise ValueError("None is not a valid value for jnp.array")
    if dtype is not None:
        dtype = _dt.check_user_dtype(dtype, "array")
    if isinstance(object, DimExpr):  # a symbolic dimension's value
        object = _core.dimension_as_value(object)
    if isinstance(object, _Value):
        out = object if dtype is None else _to(object, _dt.canonicalize_dtype(dtype))
    elif isinstance(object, (list, tuple)) and builtins.any(
            isinstance(e, (_core.Tracer, DimExpr)) for e in _flatten_seq(object)):
        out = (stack([array(o) for o in object]) if object
               else _core.asarray_concrete(_np.array(object)))
        # (A list is strongly typed even of weak values, as JAX's.)
        out = _to(out, out.dtype if dtype is None else _dt.canonicalize_dtype(dtype))
    elif isinstance(object, (list, tuple)) and builtins.any(
            isinstance(e, _Value) for e in _flatten_seq(object)):
        leaves = [_np.asarray(e) for e in _flatten_seq(object)]
        dt, _ = _result(*[_v(e) if not isinstance(e, _Value) else e for e in _flatten_seq(object)])
        _check_int_bounds(object, dt if dtype is None else dtype)
        out = _core.asarray_concrete(_np.array(_nest_np(object)).astype(dt))
        del leaves
        if dtype is not None:
            out = _to(out, _dt.canonicalize_dtype(dtype))
    else:
        if isinstance(object, (builtins.bool, int, float, complex)) \
                and not isinstance(object, _np.generic):
            # As JAX: a Python scalar stays weakly typed unless a dtype is given.
            out = _core.asarray_concrete(object, dtype)
        else:
            arr = _np.asarray(object)
            if arr.dtype.kind == "O" and not isinstance(object, _np.ndarray):
                raise TypeError(f"cannot convert {type(object).__name__} to an Ember array")
            if isinstance(object, (list, tuple)) and arr.dtype.kind in "iu" and arr.size:
                _check_int_bounds(object, dtype if dtype is not None else
                                  _dt.canonicalize_dtype(arr.dtype))
            if arr.dtype == _np.float64 and dtype is None and not isinstance(object, _np.ndarray):
                arr = arr.astype(_dt.default_float())
            elif arr.dtype == _np.int64 and dtype is None and not isinstance(object, _np.ndarray):
                arr = arr.astype(_dt.default_int())
            out = _core.asarray_concrete(arr, dtype)
    if out.ndim < ndmin:
        out = reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def _check_int_bounds(object, dtype):
    """JAX's OverflowError for a Python (or NumPy scalar) integer of a list
    outside the range of the integer dtype it becomes."""
    dtype = _np.dtype(dtype)
    if dtype.kind not in "iu":
        return
    info = _np.iinfo(dtype)
    for e in _flatten_seq(object):
        if isinstance(e, (int, _np.integer)) and not isinstance(e, (builtins.bool, _np.bool_)) \
                and not info.min <= int(e) <= info.max:
            raise OverflowError(f"Python integer {e} out of bounds for {dtype.name}")


def _known(x):
    """A traced `x` whose value the trace knows (a concrete trace: `grad`
    and the other transformations outside `jit`) as that value, as JAX's
    concrete primals are; anything else as it is."""
    if isinstance(x, _core.Tracer):
        v = x.concrete()
        if v is not None:
            return _core.Array(_np.asarray(v), weak_type=x.weak_type)
    return x


def _flatten_seq(x):
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _flatten_seq(y)
    else:
        yield x


def _nest_np(x):
    if isinstance(x, (list, tuple)):
        return [_nest_np(y) for y in x]
    return _np.asarray(x)


@_on_keys
def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    if isinstance(a, _Value) and dtype is None:
        return _core.on_device(a, device)
    if dtype is not None:
        dtype = _dt.check_user_dtype(dtype, "asarray")
    return array(a, dtype=dtype, device=device)


def zeros(shape, dtype=None, *, device=None):
    shape = _shape_arg(shape)
    return _core.on_device(lax.full(shape, 0, _canon_dtype(dtype, _dt.default_float(), "zeros")),
                           device)


def ones(shape, dtype=None, *, device=None):
    shape = _shape_arg(shape)
    return _core.on_device(lax.full(shape, 1, _canon_dtype(dtype, _dt.default_float(), "ones")),
                           device)


def empty(shape, dtype=None, *, device=None):
    return zeros(shape, dtype, device=device)


def full(shape, fill_value, dtype=None, *, device=None):
    shape = _shape_arg(shape)
    if dtype is None:
        fv = _v(fill_value)
        dtype = fv.dtype
        if fv.weak_type:
            return _core.on_device(broadcast_to(_to(fv, dtype, True), shape), device)
    out = broadcast_to(_to(fill_value, _dt.check_user_dtype(dtype, "full")), shape)
    return _core.on_device(out, device)


def zeros_like(a, dtype=None, shape=None, *, device=None):
    return full_like(a, 0, dtype, shape, device=device)


def ones_like(a, dtype=None, shape=None, *, device=None):
    return full_like(a, 1, dtype, shape, device=device)


def empty_like(prototype, dtype=None, shape=None, *, device=None):
    return zeros_like(prototype, dtype, shape, device=device)


@_on_keys
def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    a = _v(a)
    dtype = a.dtype if dtype is None else _dt.check_user_dtype(dtype, "full_like")
    out = lax.full_like(a, fill_value, dtype, shape)
    sh = _core.named_sharding(a.aval)
    if sh is not None and device is None and (shape is None or tuple(shape) == a.shape):
        out = _core.with_out_sharding(out, sh)  # (JAX's: sharded as `a`)
    return _core.on_device(out, device)


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    return _core.on_device(_arange(start, stop, step, dtype), device)


def _arange(start, stop, step, dtype):
    if dtype is None and builtins.all(isinstance(v, (builtins.bool, _np.bool_))
                                      for v in (start, stop, step) if v is not None):
        raise _core.type_error("iota does not accept dtype bool. Accepted dtypes are "
                               "subtypes of integer, floating, complexfloating.")
    if stop is None:  # (one bound: the stop, with any step, as NumPy)
        start, stop = 0, start
    step = 1 if step is None else step
    start, stop, step = (_known(v) for v in (start, stop, step))
    for v in (start, stop, step):
        if isinstance(v, _core.Tracer):
            raise _core.ConcretizationTypeError(
                f"arange needs concrete bounds, got a traced value (at {_core.where()})")
    if dtype is None:
        # The bounds' promoted type (JAX's): Python numbers weakly, arrays
        # and NumPy scalars (an int8 bound gives int8) as they are.
        typed = [v for v in (start, stop, step)
                 if isinstance(v, (_core.Array, _np.generic, _np.ndarray))]
        inexact = builtins.any(isinstance(v, float) for v in (start, stop, step))
        dtype = _dt.default_float() if inexact else _dt.default_int()
        if typed:
            weak = [float(v) if isinstance(v, float) else 0 for v in (start, stop, step)
                    if isinstance(v, (int, float)) and not isinstance(v, bool)]
            dtype = _dt.canonicalize_dtype(result_type(*typed, *weak))
    start, stop, step = (v.item() if isinstance(v, (_core.Array, _np.generic, _np.ndarray))
                         else v for v in (start, stop, step))
    dtype = _dt.check_user_dtype(dtype, "arange")
    if _dt.is_bool(dtype):
        raise _core.type_error("iota does not accept dtype bool. Accepted dtypes are "
                               "subtypes of integer, floating, complexfloating.")
    if builtins.any(isinstance(v, DimExpr) for v in (start, stop, step)):
        # A symbolic bound (`arange(x.shape[0])`): integer steps only, as in JAX.
        if not builtins.all(isinstance(v, (int, DimExpr)) for v in (start, stop, step)) \
                or isinstance(step, DimExpr) or step == 0:
            raise InconclusiveDimensionOperation(
                f"arange with symbolic dimensions needs integer start and step, got "
                f"start={start}, stop={stop}, step={step}")
        n = shape_poly.dim_max((stop - start + step - (1 if step > 0 else -1)) // step, 0)
        return _stepped_iota(dtype, n, start, step)
    n = builtins.max(_math.ceil((stop - start) / step), 0)
    if n == 0:
        return _core.Array(_np.zeros((0,), dtype))
    return _stepped_iota(dtype, n, start, step)


def _stepped_iota(dtype, n, start, step):
    """start + step * iota(n), without the product by a step of 1 or the sum
    with a start of 0 (JAX's `arange(n)` is one iota)."""
    out = lax.iota(dtype, n)
    if not (isinstance(step, (int, float)) and step == 1):
        out = multiply(out, _to(step, dtype))
    if not (isinstance(start, (int, float)) and start == 0):
        out = add(out, _to(start, dtype))
    return out


@_jit_outside_traces("num", "endpoint", "retstep", "dtype", "axis", "device")
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    out = _linspace(start, stop, num, endpoint, dtype, axis)
    return (_core.on_device(out[0], device), out[1]) if retstep else _core.on_device(
        out[0], device)


def _linspace(start, stop, num, endpoint, dtype, axis):
    # (Without dtype=, the inexact type of start and stop, as JAX's.)
    inferred = _dt.to_inexact(result_type(start, stop))
    dt = _canon_dtype(dtype, inferred, "linspace")
    if num < 0:
        raise _core.value_error(f"Number of samples, {num}, must be non-negative.")
    cdt = dt if _dt.is_inexact(dt) else _dt.default_float()
    start, stop = _to(start, cdt), _to(stop, cdt)
    bshape = broadcast_shapes(start.shape, stop.shape)
    start, stop = broadcast_to(start, bshape), broadcast_to(stop, bshape)
    div_ = (num - 1) if endpoint else num
    if div_ > 0:
        # As JAX computes it: each point start * (1 - f) + stop * f for the
        # fractions f = i / div (the rounding JAX's values have), the stop
        # itself appended with `endpoint`.
        step = divide(subtract(stop, start), _to(div_, cdt))
        rdt = _dt.default_float() if _dt.is_complex(cdt) else cdt
        frac = _to(divide(lax.iota(rdt, div_), _to(div_, rdt)), cdt)
        if start.ndim:
            frac = reshape(frac, (div_,) + (1,) * start.ndim)
        out = add(multiply(start, subtract(_to(1, cdt), frac)), multiply(stop, frac))
        if endpoint:
            out = concatenate([out, expand_dims(stop, 0)])
    else:
        step = full_like(start, _np.nan) if endpoint or num == 0 else subtract(stop, start)
        out = expand_dims(start, 0) if num == 1 else zeros((0,) + start.shape, cdt)
    if axis != 0 and out.ndim > 1:
        out = moveaxis(out, 0, axis)
    if not _dt.is_inexact(dt):
        out = floor(out)
    return _to(out, dt), step


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    y = linspace(start, stop, num, endpoint, dtype=None, axis=axis)
    out = power(_to(base, y.dtype), y)
    return _to(out, _dt.check_user_dtype(dtype, "logspace")) if dtype else out


@_jit_outside_traces("num", "endpoint", "dtype", "axis")
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    # (JAX's: the logspace of the endpoints divided by the start's sign, so
    # negative and complex endpoints work; opposite signs or 0 give NaN.)
    dt = _canon_dtype(dtype, _dt.to_inexact(result_type(start, stop)), "geomspace")
    cdt = _dt.to_inexact(dt)
    start, stop = _to(start, cdt), _to(stop, cdt)
    s = sign(start)
    out = logspace(log10(divide(start, s)), log10(divide(stop, s)), num, endpoint, 10.0, cdt,
                   0)
    out = multiply(s, out)
    if axis != 0 and out.ndim > 1:
        out = moveaxis(out, 0, axis)
    return _to(out, dt)


def eye(N, M=None, k=0, dtype=None, *, device=None):
    if (isinstance(N, int) and N < 0) or (isinstance(M, int) and M < 0):
        raise _core.value_error(f"negative dimensions are not allowed, got {N} and {M}")
    M = N if M is None else M
    dt = _canon_dtype(dtype, _dt.default_float(), "eye")
    r = lax.broadcasted_iota(_np.int32, (N, M), 0)
    c = lax.broadcasted_iota(_np.int32, (N, M), 1)
    return _core.on_device(_to(equal(add(r, k), c), dt), device)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    M = N if M is None else M
    dt = _canon_dtype(dtype, _dt.default_float(), "tri")
    r = lax.broadcasted_iota(_np.int32, (N, M), 0)
    c = lax.broadcasted_iota(_np.int32, (N, M), 1)
    return _to(greater_equal(add(r, k), c), dt)


@_jit_outside_traces("k")
def tril(m, k=0):
    m = _v(m)
    if m.ndim < 2:
        raise _core.value_error("Argument to jax.numpy.tril must be at least 2D")
    mask = tri(m.shape[-2], m.shape[-1], k, bool_)
    return where(mask, m, zeros_like(m))


@_jit_outside_traces("k")
def triu(m, k=0):
    m = _v(m)
    if m.ndim < 2:
        raise _core.value_error("Argument to jax.numpy.triu must be at least 2D")
    mask = tri(m.shape[-2], m.shape[-1], k - 1, bool_)
    return where(mask, zeros_like(m), m)


@_jit_outside_traces("k")
def diag(v, k=0):
    v = _v(v)
    if v.ndim == 1:
        n = v.shape[0] + builtins.abs(k)
        out = zeros((n, n), v.dtype)
        rows = arange(v.shape[0]) + builtins.max(-k, 0)
        cols = arange(v.shape[0]) + builtins.max(k, 0)
        return out.at[rows, cols].set(v)
    if v.ndim != 2:
        raise _core.value_error("diag input must be 1d or 2d")
    return diagonal(v, k)


def diagonal(a, offset=0, axis1=0, axis2=1):
    a = _v(a)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = a.shape[-2], a.shape[-1]
    size = builtins.max(builtins.min(n + builtins.min(offset, 0), m - builtins.max(offset, 0)), 0)
    rows = arange(size) + builtins.max(-offset, 0)
    cols = arange(size) + builtins.max(offset, 0)
    return a[..., rows, cols]


def diagflat(v, k=0):
    return diag(ravel(v), k)


@_jit_outside_traces("offset", "axis1", "axis2", "dtype")
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def meshgrid(*xi, indexing="xy", sparse=False, copy=True):
    shapes = [_np.shape(x) for x in xi]
    if builtins.any(len(sh) != 1 for sh in shapes):
        raise _core.value_error("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                                f"{shapes}")
    xi = [ravel(x) for x in xi]
    n = len(xi)
    shape = [x.shape[0] for x in xi]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xi):
        d = i
        if indexing == "xy" and n >= 2 and i < 2:
            d = 1 - i
        if sparse:
            s = [1] * n
            s[d] = x.shape[0]
            out.append(reshape(x, s))
        else:
            out.append(lax.broadcast_in_dim(x, shape, (d,)))
    return out


def indices(dimensions, dtype=None, sparse=False):
    dt = _canon_dtype(dtype, _dt.default_int(), "indices")
    dimensions = tuple(dimensions)
    if sparse:
        nd = len(dimensions)
        return tuple(lax.broadcasted_iota(dt, tuple(n if j == i else 1 for j in range(nd)), i)
                     for i, n in enumerate(dimensions))
    if not dimensions:
        return zeros((0,), dt)
    return stack([lax.broadcasted_iota(dt, dimensions, i) for i in range(len(dimensions))])


# --------------------------------------------------------------------------
# Shape manipulation
# --------------------------------------------------------------------------


def _axis(a, ndim):
    if not -ndim <= a < builtins.max(ndim, 1) and not (ndim == 0 and a in (0, -1)):
        # (NumPy's AxisError: a ValueError and an IndexError, as JAX raises both.)
        raise _np.exceptions.AxisError(_core.below_location(
            f"axis {a} is out of bounds for array of dimension {ndim}"))
    return a + ndim if a < 0 else a


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, _np.integer)):
        axis = (int(axis),)
    out = tuple(_axis(int(a), ndim) for a in axis)
    if len(set(out)) != len(out):
        raise _core.value_error(f"repeated axis in {axis}")
    return out


@_on_keys
def reshape(a, shape=None, order="C", *, newshape=None, copy=None, out_sharding=None):
    if out_sharding is not None:
        with _sharding_rules.output_given(out_sharding):
            out = reshape(a, shape, order, newshape=newshape)
        return _core.with_out_sharding(out, out_sharding)
    a = _v(a)
    shape = newshape if shape is None else shape
    shape = ((shape,) if isinstance(shape, (int, _np.integer, DimExpr)) else
             _core.canonicalize_shape(shape))
    if shape.count(-1) > 1:
        raise _core.value_error("can only specify one unknown dimension")
    if -1 in shape:
        known = _core.shape_size([s for s in shape if not (isinstance(s, int) and s == -1)])
        if isinstance(known, DimExpr) or isinstance(a.size, DimExpr):
            rem = a.size % known if isinstance(a.size, DimExpr) else 0
            if isinstance(known, DimExpr) and not isinstance(a.size, DimExpr):
                rem = 1
            if not (isinstance(rem, int) and rem == 0):
                raise InconclusiveDimensionOperation(
                    f"Cannot divide evenly the sizes of shapes {a.shape} and {shape}. The "
                    f"remainder {rem} should be 0.")
        elif known == 0 or a.size % known:
            raise TypeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into "
                            f"shape {shape} (at {_core.where()})")
        shape = tuple(a.size // known if isinstance(s, int) and s == -1 else s for s in shape)
    if order == "F":
        if _core.shape_size(shape) != a.size:
            raise TypeError(f"cannot reshape array of shape {a.shape} (size {a.size}) into "
                            f"shape {shape} (at {_core.where()})")
        return transpose(lax.reshape(transpose(a), shape[::-1]))
    if order not in ("C", "A"):
        raise ValueError(f"reshape: unsupported order {order!r}")
    return lax.reshape(a, shape)


@_on_keys
def ravel(a, order="C"):
    if order == "F":
        return reshape(transpose(_v(a)), (-1,))
    return reshape(a, (-1,))


@_on_keys
def transpose(a, axes=None):
    a = _v(a)
    axes = tuple(reversed(range(a.ndim))) if axes is None else tuple(_axis(x, a.ndim) for x in axes)
    return lax.transpose(a, axes)


def permute_dims(a, axes):
    return transpose(a, axes)


def matrix_transpose(x):
    x = _v(x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={x.ndim}")
    return swapaxes(x, -1, -2)


@_on_keys
def moveaxis(a, source, destination):
    a = _v(a)
    src = _axes(source, a.ndim)
    dst = _axes(destination, a.ndim)
    if len(src) != len(dst):
        raise _core.value_error(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
    order = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


@_on_keys
def swapaxes(a, axis1, axis2):
    a = _v(a)
    perm = list(range(a.ndim))
    i, j = _axis(axis1, a.ndim), _axis(axis2, a.ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return transpose(a, perm)


@_on_keys
def squeeze(a, axis=None):
    a = _v(a)
    if axis is None:
        axes = [i for i, n in enumerate(a.shape) if n == 1]
    else:
        axes = _axes(axis, a.ndim)
        for i in axes:
            if a.shape[i] != 1:
                raise _core.value_error(
                    f"cannot select an axis to squeeze out which has size not equal to one, "
                    f"got shape={a.shape} and dimensions={axes}")
    return reshape(a, [n for i, n in enumerate(a.shape) if i not in axes])


@_on_keys
def expand_dims(a, axis):
    a = _v(a)
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = a.ndim + len(axis)
    axis = sorted(_axis(x, nd) for x in axis)
    if len(set(axis)) != len(axis):
        raise _core.value_error(f"repeated axis in lax.expand_dims: {tuple(axis)}")
    shape = list(a.shape)
    for x in axis:
        shape.insert(x, 1)
    return reshape(a, shape)


def atleast_1d(*arys):
    _check_arraylike("atleast_1d", *arys)
    out = [_v(a) if _v(a).ndim >= 1 else reshape(a, (1,)) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    _check_arraylike("atleast_2d", *arys)
    out = []
    for a in arys:
        a = _v(a)
        out.append(a if a.ndim >= 2 else reshape(a, (1,) * (2 - a.ndim) + a.shape))
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    _check_arraylike("atleast_3d", *arys)
    out = []
    for a in arys:
        a = _v(a)
        if a.ndim == 0:
            a = reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


@_on_keys
def concatenate(arrays, axis=0, dtype=None):
    arrays = [_v(a) for a in arrays]
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    if not arrays:
        raise _core.value_error("need at least one array to concatenate")
    if builtins.any(a.ndim == 0 for a in arrays):
        raise _core.value_error("zero-dimensional arrays cannot be concatenated")
    dt, weak = _result(*arrays)
    if dtype is not None:
        dt, weak = _dt.check_user_dtype(dtype, "concatenate"), False
    arrays = [_to(a, dt, weak) for a in arrays]
    axis = _axis(axis, arrays[0].ndim)
    for a in arrays:
        if a.ndim != arrays[0].ndim:
            raise _core.value_error("all the input arrays must have same number of dimensions")
    return lax.concatenate(arrays, axis)


concat = concatenate


@_on_keys
def stack(arrays, axis=0, dtype=None):
    arrays = [_v(a) for a in arrays]
    if not arrays:
        raise _core.value_error("need at least one array to stack")
    shape0 = arrays[0].shape
    for a in arrays:
        if a.shape != shape0:
            raise _core.value_error("all input arrays must have the same shape")
    axis = _axis(axis, arrays[0].ndim + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis, dtype)


def hstack(tup, dtype=None):
    _check_arraylike("hstack", *tup)
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, 0 if arrs[0].ndim == 1 else 1, dtype)


def vstack(tup, dtype=None):
    _check_arraylike("vstack", *tup)
    return concatenate([atleast_2d(a) for a in tup], 0, dtype)


row_stack = vstack


def dstack(tup, dtype=None):
    _check_arraylike("dstack", *tup)
    return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def column_stack(tup):
    arrs = [_v(a) for a in tup]
    arrs = [reshape(a, (-1, 1)) if a.ndim < 2 else a for a in arrs]
    return concatenate(arrs, 1)


def split(ary, indices_or_sections, axis=0):
    ary = _v(ary)
    axis = _axis(axis, ary.ndim)
    n = ary.shape[axis]
    if isinstance(indices_or_sections, _Value) and indices_or_sections.ndim == 0:
        indices_or_sections = int(indices_or_sections)  # (a 0-d array counts sections)
    if isinstance(indices_or_sections, (int, _np.integer)):
        if n % indices_or_sections:
            raise _core.value_error("array split does not result in an equal division")
        step = n // indices_or_sections
        points = [step * i for i in range(1, int(indices_or_sections))]
    else:
        points = [int(p) for p in indices_or_sections]
        sizes = _np.diff([0] + points + [n]) if isinstance(n, int) else []
        if builtins.any(d < 0 for d in sizes):
            raise _core.value_error(f"Sizes passed to split must be nonnegative, got "
                                    f"{[int(d) for d in sizes]}")
    bounds = [0] + points + [n]
    lo, hi = shape_poly.dim_min, shape_poly.dim_max
    return [lax.slice_in_dim(ary, lo(a, n), lo(hi(a, b), n), 1, axis)
            for a, b in _itertools.pairwise(bounds)]


def array_split(ary, indices_or_sections, axis=0):
    ary = _v(ary)
    n = ary.shape[_axis(axis, ary.ndim)]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        points = list(_np.cumsum(sizes)[:-1])
        return split(ary, points, axis)
    return split(ary, indices_or_sections, axis)


def hsplit(a, i):
    return split(a, i, 1 if _v(a).ndim > 1 else 0)


def vsplit(a, i):
    return split(a, i, 0)


def tile(A, reps):
    A = _v(A)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    nd = builtins.max(A.ndim, len(reps))
    A = reshape(A, (1,) * (nd - A.ndim) + A.shape)
    reps = (1,) * (nd - len(reps)) + reps
    shape = []
    dims = []
    for i, (r, n) in enumerate(zip(reps, A.shape)):
        shape += [r, n]
        dims.append(2 * i + 1)
    b = lax.broadcast_in_dim(A, shape, dims)
    return reshape(b, [r * n for r, n in zip(reps, A.shape)])


def repeat(a, repeats, axis=None, total_repeat_length=None):
    a = _v(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim)
    if isinstance(repeats, int) and (total_repeat_length is None
                                     or total_repeat_length == a.shape[axis] * repeats):
        shape = list(a.shape)
        shape.insert(axis + 1, repeats)
        b = lax.broadcast_in_dim(a, shape, [i if i <= axis else i + 1 for i in range(a.ndim)])
        new = list(a.shape)
        new[axis] *= repeats
        return reshape(b, new)
    if isinstance(repeats, _core.Tracer) or (isinstance(repeats, _Value)
                                             and total_repeat_length is not None):
        if total_repeat_length is None:
            raise _core.ConcretizationTypeError(
                "jnp.repeat with a traced repeats array needs a static total_repeat_length= "
                f"(at {_core.where()})")
        r = broadcast_to(_to(repeats, _dt.default_int()), (a.shape[axis],))
        excl = subtract(cumsum(r), r)
        pos = arange(total_repeat_length, dtype=_dt.default_int())
        idx = subtract(searchsorted(excl, pos, side="right"), 1)
        return take(a, idx, axis=axis, mode="clip")
    reps = _np.broadcast_to(_np.asarray(repeats), (a.shape[axis],))
    idx = _np.repeat(_np.arange(a.shape[axis]), reps)
    if total_repeat_length is not None:
        idx = _np.concatenate([idx, _np.full((builtins.max(total_repeat_length - len(idx), 0),),
                                             a.shape[axis] - 1)])[:total_repeat_length]
    return take(a, _core.Array(idx.astype(_np.int32)), axis=axis, mode="clip")


def flip(m, axis=None):
    m = _v(m)
    return lax.rev(m, _axes(axis, m.ndim))


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def rot90(m, k=1, axes=(0, 1)):
    m = _v(m)
    if len(axes) != 2:
        raise _core.value_error(f"not enough values to unpack (expected 2, got {len(axes)})")
    if _axis(axes[0], m.ndim) == _axis(axes[1], m.ndim):
        raise _core.value_error("Axes must be different")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, axes[0]), axes[1])
    perm = list(range(m.ndim))
    perm[axes[0]], perm[axes[1]] = perm[axes[1]], perm[axes[0]]
    if k == 1:
        return transpose(flip(m, axes[1]), perm)
    return flip(transpose(m, perm), axes[1])


@_jit_outside_traces("axis")
def roll(a, shift, axis=None):
    a = _v(a)
    if axis is None:
        # (Several shifts of the flattened array add up, as NumPy's.)
        if isinstance(shift, (tuple, list)):
            shift = builtins.sum(shift)
        elif isinstance(shift, _Value) and shift.ndim == 1:
            shift = sum(shift)
        return reshape(roll(ravel(a), shift, 0), a.shape)
    if isinstance(shift, _Value) and shift.ndim == 0:
        shift = shift if isinstance(shift, _core.Tracer) else int(shift)
    shifts = (shift,) if isinstance(shift, (int, _np.integer, _core.Tracer)) else tuple(shift)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    # (Shifts and axes broadcast against each other, as NumPy's and JAX's.)
    if len(shifts) == 1:
        shifts = shifts * len(axes)
    elif len(axes) == 1:
        axes = axes * len(shifts)
    elif len(shifts) != len(axes):
        raise _core.value_error(f"shape mismatch: objects cannot be broadcast to a single "
                                f"shape ({len(shifts)} shifts, {len(axes)} axes)")
    for s, ax in zip(shifts, axes):
        ax = _axis(ax, a.ndim)
        n = a.shape[ax]
        if n == 0:
            continue
        if isinstance(s, _core.Tracer) or isinstance(n, DimExpr):
            # A traced shift or a symbolic size: the rotation is a dynamic slice.
            s = remainder(_to(s, _dt.default_int()), n)
            a2 = concatenate([a, a], ax)
            a = lax.dynamic_slice_in_dim(a2, subtract(n, s), n, ax)
            continue
        s = int(s) % n
        if s:
            a = concatenate([lax.slice_in_dim(a, n - s, n, 1, ax),
                             lax.slice_in_dim(a, 0, n - s, 1, ax)], ax)
    return a


# A callable `mode` of `pad` (set by extras_array.py, a higher layer: it
# applies the function along each axis with `apply_along_axis`).
pad_func_hook = None


def pad(array, pad_width, mode="constant", constant_values=0, **kwargs):
    a = _v(array)
    pw = _np.broadcast_to(_np.asarray(pad_width, dtype=_np.int64), (a.ndim, 2)).tolist()
    if builtins.any(w < 0 for row in pw for w in row):
        raise _core.value_error("index can't contain negative values")
    if callable(mode):
        # (JAX's: zeros around the array, then the function along each axis,
        # given (vector, the axis's pad widths, the axis, kwargs).)
        return pad_func_hook(a, pw, mode, kwargs)
    if a.ndim == 0:  # (nothing to pad, as JAX's)
        return a
    if mode == "constant":
        cv = _np.broadcast_to(_np.asarray(constant_values), (a.ndim, 2)).tolist() \
            if not isinstance(constant_values, _Value) else None
        if cv is None or builtins.all(c == cv[0][0] for row in cv for c in row):
            val = constant_values if cv is None else cv[0][0]
            return lax.pad(a, _to(val, a.dtype), [(lo, hi, 0) for lo, hi in pw])
        for ax in range(a.ndim):
            cfg = [(0, 0, 0)] * a.ndim
            lo, hi = pw[ax]
            cfg[ax] = (lo, 0, 0)
            a = lax.pad(a, _to(cv[ax][0], a.dtype), cfg)
            cfg[ax] = (0, hi, 0)
            a = lax.pad(a, _to(cv[ax][1], a.dtype), cfg)
        return a
    if mode == "empty":
        return lax.pad(a, _to(0, a.dtype), [(lo, hi, 0) for lo, hi in pw])
    if mode not in ("edge", "reflect", "symmetric", "wrap", "maximum", "minimum", "mean",
                    "median", "linear_ramp"):
        raise ValueError(f"Unimplemented padding mode {mode!r} for np.pad.")
    if a.size == 0 and builtins.any(lo or hi for lo, hi in pw):
        raise ValueError(f"can't extend empty axis using mode {mode!r}")
    stat = kwargs.get("stat_length")
    stat = None if stat is None else _np.broadcast_to(_np.asarray(stat, _np.int64), (a.ndim, 2))
    ends = _np.broadcast_to(_np.asarray(kwargs.get("end_values", 0)), (a.ndim, 2))
    odd = kwargs.get("reflect_type", "even") == "odd"
    for ax in range(a.ndim):
        lo, hi = pw[ax]
        if not (lo or hi):
            continue
        if mode in ("reflect", "symmetric"):
            a = _pad_reflect_axis(a, ax, lo, hi, mode == "symmetric", odd)
            continue
        n = a.shape[ax]
        if mode == "wrap":
            idx = [(i % n) for i in range(-lo, n + hi)]
            a = take(a, _core.Array(_np.asarray(idx, _np.int32)), axis=ax)
            continue
        left = lax.slice_in_dim(a, 0, 1, 1, ax)
        right = lax.slice_in_dim(a, n - 1, n, 1, ax)
        if mode in ("maximum", "minimum", "mean", "median"):
            red = {"maximum": max, "minimum": min, "mean": mean, "median": median}[mode]

            def _stat(part, red=red, ax=ax, a=a):
                v = red(part, axis=ax, keepdims=True)
                if _dt.is_inexact(a.dtype) or mode in ("maximum", "minimum"):
                    return _to(v, a.dtype)
                return _to(round(v), a.dtype)
            ls = n if stat is None else builtins.max(builtins.min(int(stat[ax][0]), n), 1)
            rs = n if stat is None else builtins.max(builtins.min(int(stat[ax][1]), n), 1)
            left = _stat(lax.slice_in_dim(a, 0, ls, 1, ax))
            right = _stat(lax.slice_in_dim(a, n - rs, n, 1, ax))
        parts = []
        if mode == "linear_ramp":
            ct = _dt.to_inexact(a.dtype)
            bshape = [1] * a.ndim
            if lo:
                bshape[ax] = lo
                t = reshape(divide(arange(lo, dtype=ct), _to(lo, ct)), tuple(bshape))
                e = _to(ends[ax][0], ct)
                parts.append(add(e, multiply(subtract(_to(left, ct), e), t)))
            parts.append(_to(a, ct))
            if hi:
                bshape[ax] = hi
                t = reshape(divide(arange(hi - 1, -1, -1, dtype=ct), _to(hi, ct)), tuple(bshape))
                e = _to(ends[ax][1], ct)
                parts.append(add(e, multiply(subtract(_to(right, ct), e), t)))
            out = concatenate(parts, ax)
            if not _dt.is_inexact(a.dtype):
                out = trunc(out)
            a = _to(out, a.dtype)
            continue
        if lo:
            parts.append(repeat(left, lo, ax))
        parts.append(a)
        if hi:
            parts.append(repeat(right, hi, ax))
        a = concatenate(parts, ax)
    return a


def _pad_reflect_axis(a, ax, lo, hi, symmetric, odd):
    n = a.shape[ax]
    if n == 1 and not symmetric:
        parts = [repeat(a, lo, ax)] if lo else []
        parts.append(a)
        if hi:
            parts.append(repeat(a, hi, ax))
        return concatenate(parts, ax)
    step = n if symmetric else n - 1
    off = 0 if symmetric else 1
    while lo or hi:
        if lo:
            k = builtins.min(lo, step)
            chunk = flip(lax.slice_in_dim(a, off, off + k, 1, ax), ax)
            if odd:
                edge = lax.slice_in_dim(a, 0, 1, 1, ax)
                chunk = subtract(multiply(edge, _to(2, a.dtype, True)), chunk)
            a = concatenate([chunk, a], ax)
            lo -= k
        if hi:
            m = a.shape[ax]
            k = builtins.min(hi, step)
            chunk = flip(lax.slice_in_dim(a, m - off - k, m - off, 1, ax), ax)
            if odd:
                edge = lax.slice_in_dim(a, m - 1, m, 1, ax)
                chunk = subtract(multiply(edge, _to(2, a.dtype, True)), chunk)
            a = concatenate([a, chunk], ax)
            hi -= k
    return a


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------


def _reduction(kind, a, axis, dtype, keepdims, initial=None, where_=None, promote_int=False,
               bool_ok=True):
    _check_arraylike({"or": "any", "and": "all"}.get(kind, kind), a)
    a = _v(a)
    axes = _axes(axis, a.ndim)
    if dtype is not None:
        a = _to(a, _dt.check_user_dtype(dtype, kind))
    elif promote_int and (_dt.is_bool(a.dtype) or (
            _dt.is_int(a.dtype) and a.dtype.itemsize < _np.dtype(_dt.default_int()).itemsize)):
        # (JAX's: narrower integers sum in the default integer type.)
        wide = _np.dtype(_dt.default_int())
        a = _to(a, _np.dtype(f"uint{wide.itemsize * 8}") if _dt.is_unsigned(a.dtype) else wide)
    if where_ is not None:
        ident = {"sum": 0, "prod": 1, "or": False, "and": True}.get(kind)
        if ident is None:
            if initial is None:
                raise ValueError("reduction with where= needs initial")
            ident = initial
        a = where(where_, a, _to(ident, a.dtype))
    for ax in axes:
        if kind in ("max", "min") and a.shape[ax] == 0 and initial is None:
            raise _core.value_error(
                f"zero-size array to reduction operation {kind} which has no identity")
    low = a.dtype in (_dt.float16, _dt.bfloat16) and kind in ("sum", "prod")
    r = getattr(lax, f"reduce_{kind}")(_to(a, _np.float32) if low else a, axes)
    if low:
        r = _to(r, a.dtype)
    if initial is not None and kind in ("max", "min", "sum", "prod"):
        fn = {"max": maximum, "min": minimum, "sum": add, "prod": multiply}[kind]
        r = _to(fn(r, initial), r.dtype)
    if keepdims:
        r = reshape(r, [1 if i in axes else n for i, n in enumerate(a.shape)])
    return r


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
    return _reduction("sum", a, axis, dtype, keepdims, initial, where,
                      promote_int=promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
    return _reduction("prod", a, axis, dtype, keepdims, initial, where,
                      promote_int=promote_integers)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _reduction("max", a, axis, None, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    return _reduction("min", a, axis, None, keepdims, initial, where)


amax, amin = max, min


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    return _reduction("and", _to(a, bool_), axis, None, keepdims, None, where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    return _reduction("or", _to(a, bool_), axis, None, keepdims, None, where)


def _count(a, axis, keepdims, where_=None):
    a = _v(a)
    axes = _axes(axis, a.ndim)
    if where_ is not None:
        return sum(broadcast_to(where_, a.shape), axis=axis, keepdims=keepdims, dtype=None)
    n = 1
    for ax in axes:
        n *= a.shape[ax]
    return n


def _upcast_half(dtype):
    """The dtype a mean or variance of `dtype` is computed in: f16 and bf16
    in f32, rounded once at the end (as JAX does)."""
    return _np.dtype(_np.float32) if dtype in (_dt.float16, _dt.bfloat16) else dtype


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _check_arraylike("mean", a)
    a = _v(a)
    dtype = (_dt.canonicalize_dtype(_dt.to_inexact(a.dtype))
             if dtype is None else _dt.check_user_dtype(dtype, "mean"))
    s = sum(_to(a, _upcast_half(dtype)), axis, keepdims=keepdims, where=where)
    n = _count(a, axis, keepdims, where)
    return _to(divide(s, _to(n, s.dtype) if isinstance(n, _Value) else n), dtype)


_mean = mean  # (var's `mean` keyword hides the function there)


@_jit_outside_traces("axis", "dtype", "out", "ddof", "keepdims", "correction")
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None, mean=None):
    _check_arraylike("var", a)
    a = _v(a)
    if correction is not None:
        ddof = correction
    dt = _dt.canonicalize_dtype(
        dtype or _dt.to_inexact(a.dtype))
    a = _to(a, _upcast_half(dt))
    # (`mean`: the mean given, with the reduced axes kept, as JAX's)
    m = _mean(a, axis, keepdims=True, where=where) if mean is None else _to(mean, a.dtype)
    d = subtract(a, m)
    d2 = real(multiply(d, conj(d))) if _dt.is_complex(d.dtype) else multiply(d, d)
    s = sum(d2, axis, keepdims=keepdims, where=where)
    n = _count(a, axis, keepdims, where)
    dof = subtract(n, ddof) if isinstance(n, _Value) else n - ddof
    v = divide(s, dof if isinstance(dof, _Value) else builtins.max(dof, 0))
    # No degrees of freedom left (ddof >= n): NaN, as JAX's.
    v = where_(less_equal(dof, 0), _to(_np.nan, v.dtype), v)
    return _to(v, _np.finfo(dt).dtype if _dt.is_complex(dt) else dt)


@_jit_outside_traces("axis", "dtype", "out", "ddof", "keepdims", "correction")
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None, mean=None):
    return sqrt(var(a, axis, dtype, out, ddof, keepdims, where=where, correction=correction,
                    mean=mean))


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    if weights is None:
        r = mean(a, axis, keepdims=keepdims)
        w = _to(_count(a, axis, keepdims), r.dtype)
        return (r, broadcast_to(w, r.shape)) if returned else r
    a, w = _promote_dtype(_v(a), _v(weights), to_inexact=True)
    if w.shape != a.shape:
        # JAX's rule: 1-D weights along the one axis averaged over.
        if axis is None:
            raise ValueError("Axis must be specified when shapes of a and weights differ.")
        if not isinstance(axis, (int, _np.integer)):
            raise ValueError("Single axis expected when shapes of a and weights differ")
        if w.ndim != 1:
            raise ValueError("1D weights expected when shapes of a and weights differ.")
        ax = _axis(axis, a.ndim)
        if w.shape[0] != a.shape[ax]:
            raise ValueError("Length of weights not compatible with specified axis.")
        w = broadcast_to(reshape(w, tuple(-1 if d == ax else 1 for d in range(a.ndim))), a.shape)
    s = sum(multiply(a, w), axis, keepdims=keepdims)
    ws = sum(w, axis, keepdims=keepdims)
    return (divide(s, ws), ws) if returned else divide(s, ws)


def ptp(a, axis=None, keepdims=False):
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def count_nonzero(a, axis=None, keepdims=False):
    return sum(not_equal(a, 0), axis, keepdims=keepdims, dtype=_dt.default_int())


def argmax(a, axis=None, out=None, keepdims=False):
    _check_arraylike("argmax", a)
    a = _v(a)
    if axis is None:
        r = argmax(ravel(a), 0)
        return reshape(r, (1,) * a.ndim) if keepdims else r
    axis = _axis(axis, a.ndim)
    if a.shape[axis] == 0:
        raise _core.value_error("attempt to get argmax of an empty sequence")
    r = lax.argmax(a if not _dt.is_bool(a.dtype) else _to(a, _np.int32), axis, _dt.default_int())
    return expand_dims(r, axis) if keepdims else r


def argmin(a, axis=None, out=None, keepdims=False):
    _check_arraylike("argmin", a)
    a = _v(a)
    if axis is None:
        r = argmin(ravel(a), 0)
        return reshape(r, (1,) * a.ndim) if keepdims else r
    axis = _axis(axis, a.ndim)
    if a.shape[axis] == 0:
        raise _core.value_error("attempt to get argmin of an empty sequence")
    r = lax.argmin(a if not _dt.is_bool(a.dtype) else _to(a, _np.int32), axis, _dt.default_int())
    return expand_dims(r, axis) if keepdims else r


def _cum(kind):
    def cumulative(a, axis=None, dtype=None, out=None):
        _check_arraylike(f"cum{kind}", a)
        a = _v(a)
        if axis is None:
            a, axis = ravel(a), 0
        if dtype is not None:
            a = _to(a, _dt.check_user_dtype(dtype, f"cum{kind}"))
        elif kind in ("sum", "prod") and _dt.is_bool(a.dtype):
            a = _to(a, _dt.default_int())  # JAX promotes bools only, not small ints
        if _dt.is_bool(a.dtype):
            # Booleans saturate: a running sum is a running OR, a product an
            # AND (computed in bytes, which the op takes).
            op = {"sum": "max", "prod": "min"}.get(kind, kind)
            out = getattr(lax, f"cum{op}")(_to(a, _np.int8), _axis(axis, a.ndim))
            return _to(out, _np.bool_)
        return getattr(lax, f"cum{kind}")(a, _axis(axis, a.ndim))
    return cumulative


cumsum, cumprod = _cum("sum"), _cum("prod")


def _cumulative(kind):
    cum = cumsum if kind == "sum" else cumprod

    def f(x, /, *, axis=None, dtype=None, include_initial=False):
        x = _v(x)
        if axis is None:
            if x.ndim > 1:
                raise ValueError(f"cumulative_{kind}: axis must be specified for arrays with "
                                 f"ndim > 1; got shape {x.shape}")
            axis = 0
        x = atleast_1d(x)
        axis = _axis(axis, x.ndim)
        out = cum(x, axis=axis, dtype=dtype)
        if include_initial:
            shape = list(out.shape)
            shape[axis] = 1
            init = full(tuple(shape), 0 if kind == "sum" else 1, out.dtype)
            out = concatenate([init, out], axis)
        return out
    f.__name__ = f"cumulative_{kind}"
    return f


cumulative_sum, cumulative_prod = _cumulative("sum"), _cumulative("prod")


def _nan_to(a, v):
    a = _v(a)
    if not _dt.is_inexact(a.dtype):
        return a
    return where(isnan(a), _to(v, a.dtype), a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return sum(_nan_to(a, 0), axis, dtype, keepdims=keepdims, initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    return prod(_nan_to(a, 1), axis, dtype, keepdims=keepdims, initial=initial, where=where)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    a = _v(a)
    r = max(_nan_to(a, -inf), axis, keepdims=keepdims, initial=initial, where=where)
    allnan = all(logical_or(isnan(a), _not_where(where, a)), axis, keepdims=keepdims)
    if initial is not None:  # (an initial value stands where all are NaN)
        return r
    return where_(allnan, _to(nan, r.dtype), r)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    a = _v(a)
    r = min(_nan_to(a, inf), axis, keepdims=keepdims, initial=initial, where=where)
    allnan = all(logical_or(isnan(a), _not_where(where, a)), axis, keepdims=keepdims)
    if initial is not None:
        return r
    return where_(allnan, _to(nan, r.dtype), r)


def _not_where(where, a):
    """The elements a `where=` mask leaves out (none without one)."""
    if where is None:
        return zeros(a.shape, bool_)
    return broadcast_to(logical_not(_v(where)), a.shape)


where_ = where


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    a = _v(a)
    if not _dt.is_inexact(a.dtype):  # (no NaNs: JAX's mean)
        return mean(a, axis, dtype, keepdims=keepdims, where=where)
    dt = _dt.to_inexact(a.dtype) if dtype is None else _dt.check_user_dtype(dtype, "nanmean")
    a = _to(a, dt) if a.dtype != dt else a
    keep = logical_and(logical_not(isnan(a)), logical_not(_not_where(where, a)))
    n = sum(keep, axis, keepdims=keepdims, dtype=dt)
    return divide(nansum(a, axis, keepdims=keepdims, where=where), n)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    a = _v(a)
    dt = _dt.to_inexact(a.dtype) if dtype is None else _dt.check_user_dtype(dtype, "nanvar")
    a = _to(a, dt) if a.dtype != dt else a
    m = nanmean(a, axis, keepdims=True, where=where)
    d = _nan_to(subtract(a, m), 0)
    keep = logical_and(logical_not(isnan(a)), logical_not(_not_where(where, a)))
    n = sum(keep, axis, keepdims=keepdims, dtype=dt)
    dof = subtract(n, ddof)
    v = divide(sum(multiply(d, d), axis, keepdims=keepdims, where=where), dof)
    return where_(less_equal(dof, 0), _to(_np.nan, v.dtype), v)  # (as var's)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None):
    return sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where))


def nanargmax(a, axis=None, keepdims=False):
    return _nan_arg(argmax, a, -inf, axis, keepdims)


def nanargmin(a, axis=None, keepdims=False):
    return _nan_arg(argmin, a, inf, axis, keepdims)


def _nan_arg(arg, a, fill, axis, keepdims):
    """JAX's nanargmax/nanargmin: NaNs skipped; -1 where all are NaN."""
    a = _v(a)
    i = arg(_nan_to(a, fill), axis, keepdims=keepdims)
    if not _dt.is_inexact(a.dtype):
        return i
    return where(all(isnan(a), axis, keepdims=keepdims), _to(-1, i.dtype), i)


def nancumsum(a, axis=None, dtype=None):
    return cumsum(_nan_to(a, 0), axis, dtype)


def nancumprod(a, axis=None, dtype=None):
    return cumprod(_nan_to(a, 1), axis, dtype)


@_jit_outside_traces("axis", "kind", "order", "stable", "descending")
def sort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    a = _v(a)
    if axis is not None and a.ndim == 0:
        raise _core.value_error(f"axis {axis} is out of bounds for array of dimension 0")
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim)
    r = lax.sort(a, axis)
    return flip(r, axis) if descending else r


@_jit_outside_traces("axis", "kind", "order", "stable", "descending")
def argsort(a, axis=-1, kind=None, order=None, stable=True, descending=False):
    a = _v(a)
    if axis is not None and a.ndim == 0:
        raise _core.value_error(f"axis {axis} is out of bounds for array of dimension 0")
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim)
    idx = lax.broadcasted_iota(_dt.default_int(), a.shape, axis)
    if not descending:
        return lax.sort((a, idx), axis, True, 1)[1]
    # Descending and stable (equal keys keep their order), for every dtype
    # (negating keys breaks unsigned, bool and the most negative integer):
    # sort the reversed array ascending, then reverse the result and map the
    # positions back.
    n = a.shape[axis]
    rev = lax.sort((lax.rev(a, (axis,)), idx), axis, True, 1)[1]
    return lax.rev(subtract(_to(n - 1, idx.dtype), rev), (axis,))


def _quantile(a, q, axis, keepdims, method, ignore_nan=False, weights=None):
    if method not in ("linear", "lower", "higher", "nearest", "midpoint", "inverted_cdf"):
        raise ValueError(f"quantile: unsupported method {method!r}")
    a = _v(a)
    a = _to(a, _dt.to_inexact(a.dtype))
    nd = a.ndim
    axes = tuple(range(nd)) if axis is None else _axes(axis, nd)
    keep = [d for d in range(nd) if d not in axes]
    if weights is not None:
        weights = _quantile_weights(a, weights, axes, method)
        a = _to(a, weights.dtype)
        weights = reshape(transpose(weights, tuple(keep) + tuple(axes)),
                          tuple(a.shape[d] for d in keep) + (-1,))
    a = transpose(a, tuple(keep) + tuple(axes))
    batch = a.shape[:len(keep)]
    n = int(_np.prod([a.shape[len(keep) + i] for i in range(len(axes))], dtype=_np.int64))
    a = reshape(a, batch + (n,))
    q = _to(q, a.dtype)
    qs = q.shape
    k = int(_np.prod(qs, dtype=_np.int64))
    qf = reshape(q, (1,) * len(batch) + (k,))
    if ignore_nan:
        cnt = _to(sum(logical_not(isnan(a)), axis=-1, keepdims=True), a.dtype)
    else:
        cnt = _to(n, a.dtype)
    if method == "inverted_cdf":
        v = _inverted_cdf(a, weights, qf, cnt, ignore_nan)
        return _quantile_layout(v, batch, qs, axes, nd, keepdims)
    s = sort(a, axis=-1)  # NaNs sort to the end
    pos = multiply(qf, subtract(cnt, 1))
    pos = broadcast_to(pos, batch + (k,))
    lo, hi = floor(pos), ceil(pos)
    if method == "lower":
        hi = lo
    elif method == "higher":
        lo = hi
    elif method == "nearest":
        # (Ties to the lower element, as JAX's.)
        lo = hi = ceil(subtract(pos, _to(0.5, pos.dtype)))
    last = builtins.max(n - 1, 0)
    loi = _to(clip(lo, 0, last), _np.int32)
    hii = _to(clip(hi, 0, last), _np.int32)
    vlo = take_along_axis(s, loi, axis=-1)
    vhi = take_along_axis(s, hii, axis=-1)
    if method == "linear":
        v = add(vlo, multiply(subtract(vhi, vlo), subtract(pos, lo)))
    elif method == "midpoint":
        v = multiply(add(vlo, vhi), _to(0.5, a.dtype, True))
    else:
        v = vlo
    if not ignore_nan:
        v = where(any(isnan(a), axis=-1, keepdims=True), _to(nan, v.dtype), v)
    return _quantile_layout(v, batch, qs, axes, nd, keepdims)


def _quantile_layout(v, batch, qs, axes, nd, keepdims):
    """Quantiles computed as (batch..., k) in the quantiles' shape first,
    then the kept axes (as size-1 dimensions with `keepdims`)."""
    v = reshape(v, batch + qs)
    v = moveaxis(v, tuple(range(len(batch), v.ndim)), tuple(range(len(qs)))) if qs else v
    if keepdims:
        out_shape = [1 if d in axes else None for d in range(nd)]
        it = iter(batch)
        out_shape = tuple(1 if d is not None else next(it) for d in out_shape)
        v = reshape(v, qs + out_shape)
    return v


def _quantile_weights(a, weights, axes, method):
    """`weights` of a quantile (JAX's checks) in `a`'s shape, in the inexact
    dtype both promote to."""
    w = _v(weights)
    if _dt.is_complex(w.dtype):
        raise _core.value_error("Weights cannot be complex types.")
    if method != "inverted_cdf":
        raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                  f"'inverted_cdf' supports weights.")
    dt = _dt.to_inexact(_dt.promote_types(a.dtype, w.dtype))
    w = _to(w, dt)
    if w.shape != a.shape:
        reduced = tuple(a.shape[d] for d in axes)
        if w.shape != reduced:
            raise _core.value_error(f"Weights shape {w.shape} must match reduction axes "
                                    f"{reduced}")
        w = lax.broadcast_in_dim(w, a.shape, axes)
    return w


def _inverted_cdf(a, weights, qf, cnt, ignore_nan):
    """The inverted-CDF quantiles (NumPy's and JAX's `method='inverted_cdf'`)
    of the rows of `a` (batch..., n), optionally weighted: the first sorted
    element whose cumulative weight reaches q times the total (NaN data
    weigh nothing; a negative or NaN weight makes the row's result NaN)."""
    w = full_like(a, 1) if weights is None else weights
    s, sw = lax.sort((a, w), a.ndim - 1, True, 1)  # (NaNs sort to the end)
    bad = logical_or(less(sw, 0), isnan(sw))
    nan_data = isnan(s)
    cum = cumsum(where(logical_or(bad, nan_data), _to(0, sw.dtype), sw), axis=-1)
    target = multiply(qf, cum[..., -1:])  # (batch..., k)
    idx = sum(less(expand_dims(cum, -2), expand_dims(target, -1)), axis=-1,
              dtype=_np.int32)
    idx = clip(idx, 0, maximum(_to(cnt, _np.int32) - 1, 0))
    v = take_along_axis(s, idx, axis=-1)
    force = any(bad, axis=-1, keepdims=True)
    force = logical_or(force, all(nan_data, axis=-1, keepdims=True) if ignore_nan
                       else any(nan_data, axis=-1, keepdims=True))
    return where(force, _to(nan, v.dtype), v)


@_jit_outside_traces("axis", "out", "overwrite_input", "method", "keepdims")
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
    _check_arraylike("quantile", a, q)
    return _quantile(a, q, axis, keepdims, method, weights=weights)


@_jit_outside_traces("axis", "out", "overwrite_input", "method", "keepdims")
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
    _check_arraylike("percentile", a, q)
    return _quantile(a, divide(q, 100.0), axis, keepdims, method, weights=weights)


@_jit_outside_traces("axis", "out", "overwrite_input", "keepdims")
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return quantile(a, 0.5, axis=axis, keepdims=keepdims)


@_jit_outside_traces("axis", "out", "overwrite_input", "method", "keepdims")
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    return _quantile(a, q, axis, keepdims, method, ignore_nan=True, weights=weights)


@_jit_outside_traces("axis", "out", "overwrite_input", "method", "keepdims")
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    return _quantile(a, divide(q, 100.0), axis, keepdims, method, ignore_nan=True,
                     weights=weights)


@_jit_outside_traces("axis", "out", "overwrite_input", "keepdims")
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return nanquantile(a, 0.5, axis=axis, keepdims=keepdims)


# --------------------------------------------------------------------------
# Linear algebra basics
# --------------------------------------------------------------------------


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    if out_sharding is not None:
        with _sharding_rules.output_given(out_sharding):
            out = matmul(a, b, precision=precision, preferred_element_type=preferred_element_type)
        return _core.with_out_sharding(out, out_sharding)
    a, b = _v(a), _v(b)
    if a.ndim == 0 or b.ndim == 0:
        raise _core.value_error("matmul: inputs must be at least 1-d")
    dt, weak = _result(a, b)
    a, b = _to(a, dt, weak), _to(b, dt, weak)
    a1, b1 = a.ndim == 1, b.ndim == 1
    ka, kb = a.shape[-1], b.shape[0 if b1 else -2]
    if ka != kb:
        raise TypeError(f"dot_general requires contracting dimensions to have the same shape, "
                        f"got {a.shape} and {b.shape} (at {_core.where()})")
    if a1 or b1:
        # A vector side contracts as it is (JAX's product: no reshape, so
        # the result and what differentiation saves have the vector's shape).
        return lax.dot_general(a, b, (([a.ndim - 1], [0 if b1 else b.ndim - 2]), ([], [])),
                               precision=precision,
                               preferred_element_type=preferred_element_type or dt)
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a, batch + a.shape[-2:])
    b = broadcast_to(b, batch + b.shape[-2:])
    nb = len(batch)
    return lax.dot_general(a, b, (([nb + 1], [nb]), (list(range(nb)), list(range(nb)))),
                           precision=precision,
                           preferred_element_type=preferred_element_type or dt)


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    if out_sharding is not None:
        with _sharding_rules.output_given(out_sharding):
            out = dot(a, b, precision=precision, preferred_element_type=preferred_element_type)
        return _core.with_out_sharding(out, out_sharding)
    a, b = _v(a), _v(b)
    if a.ndim == 0 or b.ndim == 0:
        # (JAX: a product with no contraction, computed in the result type.)
        if preferred_element_type is not None:
            a, b = a.astype(preferred_element_type), b.astype(preferred_element_type)
        return multiply(a, b)
    if b.ndim == 1 or a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, precision=precision, preferred_element_type=preferred_element_type)
    dt, weak = _result(a, b)
    a, b = _to(a, dt, weak), _to(b, dt, weak)
    return lax.dot_general(a, b, (([a.ndim - 1], [b.ndim - 2]), ([], [])),
                           precision=precision,
                           preferred_element_type=preferred_element_type or dt)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    return dot(ravel(conj(a)), ravel(b), precision=precision,
               preferred_element_type=preferred_element_type)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """sum(conj(x1) * x2) over `axis`, in the operands' common dtype (a dot:
    no widening of small integers, unlike `sum`)."""
    x1, x2 = _v(x1), _v(x2)
    n1, n2 = (x.shape[_axis(axis, x.ndim)] if x.ndim else None for x in (x1, x2))
    if n1 is None or n2 is None or n1 != n2:
        raise _core.value_error(
            f"axes must match; got shapes {x1.shape} and {x2.shape} with axis={axis}")
    dt = preferred_element_type or result_type(x1, x2)
    return sum(multiply(conj(x1), x2), axis=axis, dtype=dt)


def inner(a, b, *, precision=None, preferred_element_type=None):
    a, b = _v(a), _v(b)
    if a.ndim == 0 or b.ndim == 0:
        # (JAX: a product with no contraction, computed in the result type.)
        if preferred_element_type is not None:
            a, b = a.astype(preferred_element_type), b.astype(preferred_element_type)
        return multiply(a, b)
    dt, weak = _result(a, b)
    return lax.dot_general(_to(a, dt, weak), _to(b, dt, weak),
                           (([a.ndim - 1], [b.ndim - 1]), ([], [])), precision=precision,
                           preferred_element_type=preferred_element_type or dt)


@_jit_outside_traces()
def outer(a, b, out=None):
    a, b = ravel(a), ravel(b)
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None, out_sharding=None):
    a, b = _v(a), _v(b)
    if isinstance(axes, int):
        ax_a = list(range(a.ndim - axes, a.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, int) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, int) else list(ax_b)
    ax_a = [_axis(x, a.ndim) for x in ax_a]
    ax_b = [_axis(x, b.ndim) for x in ax_b]
    dt, weak = _result(a, b)
    return lax.dot_general(_to(a, dt, weak), _to(b, dt, weak), ((ax_a, ax_b), ([], [])),
                           precision=precision,
                           preferred_element_type=preferred_element_type or dt)


def kron(a, b):
    a, b = _v(a), _v(b)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ea = reshape(a, [x for n in a.shape for x in (n, 1)])
    eb = reshape(b, [x for n in b.shape for x in (1, n)])
    return reshape(multiply(ea, eb), [x * y for x, y in zip(a.shape, b.shape)])


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's cross product of 3-element (or 2-element: z taken as 0)
    vectors along `axisa`/`axisb` (`axis` for all three); two 2-element
    vectors give the z component only."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _promote_dtype(_v(a), _v(b))
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("Dimension must be either 2 or 3 for cross product")
    if a.shape[-1] == 2 and b.shape[-1] == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    zero = zeros_like(a[..., 0]) if a.shape[-1] == 2 else zeros_like(b[..., 0])
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if a.shape[-1] == 3 else zero
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if b.shape[-1] == 3 else zero
    c = stack(broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), -1)
    return moveaxis(c, -1, axisc)


# --------------------------------------------------------------------------
# Indexing
# --------------------------------------------------------------------------


def _default_fill(dtype):
    """JAX's fill for out-of-bounds gathers, as a NumPy scalar of `dtype`
    (a Python int would be read as a weak int32: uint32's max overflows)."""
    if _dt.is_inexact(dtype):
        return _np.asarray(nan, dtype)
    if _dt.is_bool(dtype):
        return _np.asarray(True)
    info = _np.iinfo(dtype)
    return _np.asarray(info.max if _dt.is_unsigned(dtype) else info.min, dtype)


def _check_mode(mode):
    if mode not in (None, "fill", "clip", "wrap", "promise_in_bounds", "drop"):
        raise ValueError(f"Invalid mode {mode!r}: expected one of 'fill', 'clip', 'wrap', "
                         "'promise_in_bounds'")


@_on_keys
@_jit_outside_traces("axis", "mode", "unique_indices", "indices_are_sorted")
def take(a, indices, axis=None, mode=None, fill_value=None, unique_indices=False,
         indices_are_sorted=False):
    if mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.take is not supported.")
    _check_mode(mode)
    a = _v(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim)
    idx = _v(indices)
    if not (_dt.is_int(idx.dtype) or (idx.weak_type and _dt.is_int(idx.dtype))):
        raise TypeError(f"take: indices must be integers, got {idx.dtype}")
    n = a.shape[axis]
    if isinstance(n, int) and n == 0:
        # (No slice to gather: JAX's error, or the empty result.)
        if not (isinstance(idx.size, int) and idx.size == 0):
            raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
        return zeros(a.shape[:axis] + idx.shape + a.shape[axis + 1:], a.dtype)
    if mode == "wrap":
        idx = remainder(idx, _to(builtins.max(n, 1), idx.dtype))
    elif mode != "clip":  # clip clamps negative indices to 0, like NumPy
        idx = where(less(idx, 0), add(idx, _to(n, idx.dtype)), idx)
    valid = None
    if mode in (None, "fill", "drop"):
        valid = logical_and(greater_equal(idx, 0), less(idx, n))
    offset_dims = tuple(d + (idx.ndim if d >= axis else 0) for d in range(a.ndim - 1))
    slice_sizes = list(a.shape)
    slice_sizes[axis] = 1
    dn = lax.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=(axis,),
                                    start_index_map=(axis,))
    out = lax.gather(a, expand_dims(idx, -1), dn, slice_sizes, mode="clip")
    if valid is not None:
        fv = _default_fill(a.dtype) if fill_value is None else fill_value
        valid = expand_dims(valid, tuple(range(axis)) + tuple(range(axis + idx.ndim, out.ndim)))
        out = where(valid, out, _to(fv, a.dtype))
    return out


@_jit_outside_traces("axis", "mode", "wrap_negative_indices")
def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
    _check_mode(mode)
    arr, idx = _v(arr), _v(indices)
    if axis is None:
        arr, idx, axis = ravel(arr), ravel(idx), 0
    axis = _axis(axis, arr.ndim)
    if idx.ndim != arr.ndim:
        raise _core.value_error(
            f"take_along_axis: indices and arr must have the same number of dimensions; "
            f"got {idx.shape} and {arr.shape}")
    n = arr.shape[axis]
    if mode == "wrap":
        idx = remainder(idx, _to(builtins.max(n, 1), idx.dtype))
    elif wrap_negative_indices is None or wrap_negative_indices:
        idx = where(less(idx, 0), add(idx, _to(n, idx.dtype)), idx)
    # (else a negative index is out of bounds: filled, as JAX's)
    shape = broadcast_shapes(*[tuple(1 if i == axis else s for i, s in enumerate(x.shape))
                               for x in (arr, idx)])
    idx = broadcast_to(idx, tuple(idx.shape[i] if i == axis else shape[i] for i in range(arr.ndim)))
    arr = broadcast_to(arr, tuple(arr.shape[i] if i == axis else shape[i] for i in range(arr.ndim)))
    # The other dimensions are batching dimensions of the gather (as JAX's:
    # their shardings carry through, where index arrays over them would not).
    others = tuple(d for d in range(arr.ndim) if d != axis)
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                    start_index_map=(axis,), operand_batching_dims=others,
                                    start_indices_batching_dims=others)
    out = lax.gather(arr, expand_dims(_to(idx, _np.int32), -1), dn, [1] * arr.ndim,
                     mode="clip")
    if mode in (None, "fill", "drop"):
        fv = _default_fill(arr.dtype) if fill_value is None else fill_value
        valid = logical_and(greater_equal(idx, 0), less(idx, n))
        out = where(valid, out, _to(fv, arr.dtype))
    return out


def nonzero(a, *, size=None, fill_value=None):
    a = _v(a)
    if size is None:
        a = _known(a)
        if isinstance(a, _core.Tracer):
            raise _core.ConcretizationTypeError(
                f"nonzero needs a static size= inside jit (at {_core.where()})")
        res = _np.nonzero(_np.asarray(a))
        return tuple(_core.Array(r.astype(_dt.default_int())) for r in res)
    flat = ravel(not_equal(a, 0))
    n = flat.shape[0]
    pos = arange(n, dtype=_dt.default_int())
    key = where(flat, zeros_like(pos), ones_like(pos))
    _, order = lax.sort((key, pos), 0, True, 1)
    sel = order[:size] if size <= n else concatenate([order, zeros((size - n,), order.dtype)])
    count = sum(flat, dtype=_dt.default_int())
    valid = less(arange(size, dtype=_dt.default_int()), count)
    outs = []
    rem_ = sel
    strides = _np.cumprod((1,) + a.shape[::-1])[::-1][1:]
    for d, st in enumerate(strides):
        coord = floor_divide(rem_, int(st)) if a.ndim else rem_
        rem_ = remainder(rem_, int(st)) if a.ndim else rem_
        fv = fill_value
        if fill_value is None:
            fv = 0
        elif isinstance(fill_value, (tuple, list)):
            fv = fill_value[d]
        outs.append(where(valid, coord, _to(fv, coord.dtype)))
    return tuple(outs)


def flatnonzero(a, *, size=None, fill_value=None):
    return nonzero(ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    a = _v(a)
    if a.ndim == 0:
        # (A 0-d array has one element and no coordinates: JAX's (k, 0).)
        count = (1 if bool(a) else 0) if size is None else size
        return zeros((count, 0), _dt.default_int())
    r = nonzero(a, size=size, fill_value=fill_value)
    return stack(r, -1) if r else zeros((0, 0), _dt.default_int())


def _sort_order_key(x):
    """A key whose integer order is the sort order of `x`: floats in IEEE
    total order with -0.0 equal to 0.0 and every NaN equal and last (JAX's
    sort comparator); other values as they are."""
    if not _dt.is_float(x.dtype):
        return x
    x = where(x == 0, _to(0, x.dtype), x)
    x = where(isnan(x), _to(_np.nan, x.dtype), x)
    bits = lax.bitcast_convert_type(x, {2: _np.int16, 4: _np.int32, 8: _np.int64}[x.dtype.itemsize])
    top = _np.iinfo(bits.dtype).max
    return where(bits < 0, bitwise_xor(bits, _to(top, bits.dtype)), bits)


@_jit_outside_traces("side", "method")
def searchsorted(a, v, side="left", sorter=None, method=None):
    """Where to insert `v` into the sorted 1-D `a`: a binary search per
    query, log2(len(a)) vectorized steps (JAX's default "scan" method), or
    with method="compare_all" a count of the smaller elements."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    a, v = _v(a), _v(v)
    if a.ndim != 1:
        raise ValueError(f"searchsorted: a must be 1-D, got shape {a.shape} (at {_core.where()})")
    if sorter is not None:
        a = take(a, sorter)
    dt, _ = _result(a, v)
    ka, kv = _sort_order_key(_to(a, dt)), _sort_order_key(_to(v, dt))
    cmp = less_equal if side == "right" else less
    # (JAX's: int32 unless the array is longer than int32 can count.)
    out = _np.int32 if a.shape[0] <= _np.iinfo(_np.int32).max else _dt.default_int()
    if method == "compare_all":
        return sum(cmp(expand_dims(ka, tuple(range(1, kv.ndim + 1))), kv), axis=0, dtype=out)
    n = a.shape[0]
    lo, hi = zeros(kv.shape, out), full(kv.shape, n, out)
    # Invariant: the answer is in [lo, hi]; each step halves the interval.
    for _ in range(_math.ceil(_math.log2(n + 1)) if n else 0):
        mid = lax.div(lo + hi, _to(2, out))
        go_right = logical_and(lo < hi, cmp(take(ka, clip(mid, 0, builtins.max(n - 1, 0))), kv))
        lo = where(go_right, mid + 1, lo)
        hi = where(go_right | (lo >= hi), hi, mid)
    return lo


def digitize(x, bins, right=False, *, method=None):
    """NumPy's `digitize`: the bin of each `x` (bins increasing or
    decreasing), through `searchsorted`."""
    _check_arraylike("digitize", x, bins)
    x, bins = _v(x), _v(bins)
    if bins.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape "
                         f"{bins.shape} (at {_core.where()})")
    if bins.shape[0] == 0:
        return zeros(x.shape, _dt.default_int())
    side = "left" if right else "right"
    up = searchsorted(bins, x, side=side, method=method)
    down = bins.shape[0] - searchsorted(bins[::-1], x, side=side, method=method)
    return where(bins[-1] >= bins[0], up, down)


_UniqueAllResult = _collections.namedtuple(
    "_UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
_UniqueCountsResult = _collections.namedtuple("_UniqueCountsResult", ["values", "counts"])
_UniqueInverseResult = _collections.namedtuple("_UniqueInverseResult",
                                               ["values", "inverse_indices"])


def unique_all(x, /, *, size=None, fill_value=None):
    """The Array API's `unique_all`: values, first indices, inverse indices
    and counts."""
    return _UniqueAllResult(*unique(x, True, True, True, size=size, fill_value=fill_value))


def unique_counts(x, /, *, size=None, fill_value=None):
    return _UniqueCountsResult(*unique(x, return_counts=True, size=size,
                                       fill_value=fill_value))


def unique_inverse(x, /, *, size=None, fill_value=None):
    return _UniqueInverseResult(*unique(x, return_inverse=True, size=size,
                                        fill_value=fill_value))


def unstack(x, /, *, axis=0):
    """The slices of `x` along `axis`, as a tuple."""
    x = _v(x)
    axis = _axis(axis, x.ndim)
    return tuple(take(x, i, axis=axis) for i in range(x.shape[axis]))


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from a DLPack-exporting object (through NumPy: Ember arrays
    live in host memory)."""
    return asarray(_np.from_dlpack(x))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, size=None, fill_value=None, equal_nan=True, sorted=True):
    # (`sorted=False` lets JAX return any order: sorted is one.)
    if axis is not None:
        return _unique_along(_v(ar), axis, return_index, return_inverse, return_counts,
                             size, fill_value, equal_nan)
    arr = _v(ar)
    ar = ravel(arr)
    if size is None:
        ar = _known(ar)
        if isinstance(ar, _core.Tracer):
            raise _core.ConcretizationTypeError(
                f"unique needs a static size= inside jit (at {_core.where()})")
        res = _np.unique(_np.asarray(ar), return_index, return_inverse, return_counts,
                         equal_nan=equal_nan)
        if isinstance(res, tuple):
            out = [_core.Array(res[0])]
            for r in res[1:]:
                out.append(_core.Array(r.astype(_dt.default_int())))
            if return_inverse:
                k = 1 + int(return_index)
                out[k] = reshape(out[k], arr.shape)
            return tuple(out)
        return _core.Array(res)
    n = ar.shape[0]
    ity = _dt.default_int()
    if n == 0:
        vals = full((size,), 0 if fill_value is None else fill_value, ar.dtype)
        extra = [zeros((size,), ity)] * int(return_index)
        extra += [zeros(arr.shape, ity)] * int(return_inverse)
        extra += [zeros((size,), ity)] * int(return_counts)
        return tuple([vals] + extra) if extra else vals
    perm = argsort(ar)
    s = take(ar, perm)
    if n > 1:
        differ = not_equal(s[1:], s[:-1])
        if equal_nan and _dt.is_inexact(s.dtype):
            differ = logical_and(differ, logical_not(logical_and(isnan(s[1:]), isnan(s[:-1]))))
        first = concatenate([ones((1,), bool_), differ])
    else:
        first = ones((1,), bool_)
    fv = min(s) if fill_value is None else fill_value
    vals, extras = _unique_of_sorted(s, perm, first, size, _to(fv, s.dtype), return_index,
                                     return_inverse, return_counts)
    if return_inverse:
        k = int(return_index)
        extras[k] = reshape(extras[k], arr.shape)
    return tuple([vals] + extras) if extras else vals


def _unique_of_sorted(s, perm, first, size, fill, return_index, return_inverse,
                      return_counts):
    """The `size` unique entries (along the first axis) of `s`, sorted by
    `perm`, whose first occurrences `first` marks, with `fill` after them;
    and the requested indices, inverse (flat, one per entry) and counts."""
    n = first.shape[0]
    ity = _dt.default_int()
    ind = nonzero(first, size=size, fill_value=0)[0]
    valid = less(arange(size, dtype=ity), sum(first, dtype=ity))
    vals = where(reshape(valid, (size,) + (1,) * (s.ndim - 1)),
                 take(s, ind, axis=0, mode="clip"), fill)
    extras = []
    if return_index:
        extras.append(take(perm, ind, mode="clip"))
    if return_inverse:
        imask = subtract(cumsum(first, dtype=ity), 1)
        extras.append(zeros((n,), ity).at[perm].set(imask))
    if return_counts:
        idx = nonzero(first, size=size + 1, fill_value=0)[0]
        idx = concatenate([idx[:1], where(greater(idx[1:], 0), idx[1:], _to(n, ity))])
        extras.append(diff(idx))
    return vals, extras


def _unique_along(arr, axis, return_index, return_inverse, return_counts, size, fill_value,
                  equal_nan):
    """`unique` of the slices of `arr` along `axis`, in lexicographic order
    (JAX's `axis=`): the slices are rows of a matrix sorted by its columns,
    first column first; rows equal to the one before them are dropped (NaNs
    equal with `equal_nan`). Without `size` (outside jit) the result has as
    many slices as there are distinct ones."""
    axis = _axis(axis, arr.ndim)
    x = moveaxis(arr, axis, 0)
    n, rest = x.shape[0], x.shape[1:]
    if size is None and isinstance(x, _core.Tracer):
        raise _core.ConcretizationTypeError(
            f"unique needs a static size= inside jit (at {_core.where()})")
    ity = _dt.default_int()
    rows = reshape(x, (n, -1))
    m = rows.shape[1]
    if n == 0:
        count = size if size is not None else 0
        vals = full((count,) + rest, 0 if fill_value is None else fill_value, arr.dtype)
        extra = [zeros((count,), ity)] * int(return_index)
        extra += [zeros((0,), ity)] * int(return_inverse)
        extra += [zeros((count,), ity)] * int(return_counts)
        vals = moveaxis(vals, 0, axis)
        return tuple([vals] + extra) if extra else vals
    perm = lexsort([rows[:, j] for j in reversed(range(m))]) if m else arange(n, dtype=ity)
    s = take(rows, perm, axis=0)
    if n > 1 and m:
        ne = not_equal(s[1:], s[:-1])
        if equal_nan and _dt.is_inexact(s.dtype):
            ne = logical_and(ne, logical_not(logical_and(isnan(s[1:]), isnan(s[:-1]))))
        first = concatenate([ones((1,), bool_), any(ne, axis=1)])
    else:
        first = concatenate([ones((1,), bool_), zeros((n - 1,), bool_)])
    out_size = size if size is not None else int(sum(first))
    fv = s[:1] if fill_value is None else _to(fill_value, s.dtype)
    vals, extras = _unique_of_sorted(s, perm, first, out_size, fv, return_index,
                                     return_inverse, return_counts)
    vals = moveaxis(reshape(vals, (out_size,) + rest), 0, axis)
    return tuple([vals] + extras) if extras else vals


def unique_values(x):
    return unique(x)


def bincount(x, weights=None, minlength=0, *, length=None):
    x = _v(x)
    if length is None:
        if isinstance(x, _core.Tracer):
            raise _core.ConcretizationTypeError("bincount needs length= inside jit")
        xs = _np.asarray(x)
        length = builtins.max(int(xs.max()) + 1 if xs.size else 0, minlength)
    w = ones_like(x, _dt.default_int()) if weights is None else _v(weights)
    # (Negative values count as 0, as JAX's clip makes them.)
    return zeros((length,), w.dtype).at[clip(x, 0)].add(w, mode="drop")


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """NumPy's bin edges: `bins` equal bins over `range` (the data's extent
    by default, widened by 0.5 on each side when it is a single value), or
    the given edges."""
    _check_arraylike("histogram_bin_edges", a)
    a = _v(a)
    dt = _dt.to_inexact(a.dtype)
    if not isinstance(bins, int):
        return _to(_v(bins), dt)
    if bins < 1:
        raise ValueError(f"histogram: `bins` must be positive, got {bins}")
    if range is None:
        lo, hi = min(a), max(a)
    else:
        lo, hi = _to(range[0], dt), _to(range[1], dt)
    lo, hi = _to(lo, dt), _to(hi, dt)
    same = lo == hi
    lo = where(same, lo - 0.5, lo)
    hi = where(same, hi + 0.5, hi)
    return linspace(lo, hi, bins + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):
    """NumPy's `histogram`: counts (or weight sums) per bin, a value on the
    last edge in the last bin, values outside the edges ignored; with
    `density`, normalized to integrate to 1. Returns (hist, bin_edges)."""
    _check_arraylike("histogram", a)
    a = ravel(_v(a))
    edges = histogram_bin_edges(a, bins, range)
    w = ones(a.shape, edges.dtype) if weights is None else _to(ravel(_v(weights)), edges.dtype)
    idx = searchsorted(edges, _to(a, edges.dtype), side="right")
    idx = where(_to(a, edges.dtype) == edges[-1], edges.shape[0] - 1, idx)
    counts = zeros((edges.shape[0] + 1,), edges.dtype).at[idx].add(w)[1:-1]
    if density:
        widths = diff(edges)
        counts = counts / widths / sum(counts)
    return counts, edges


# --------------------------------------------------------------------------
# Misc
# --------------------------------------------------------------------------


def astype(x, dtype, copy=False, device=None):
    return _to(x, _dt.check_user_dtype(dtype, "astype"))


def shape(a):
    return _v(a).shape


def ndim(a):
    return _v(a).ndim


def size(a, axis=None):
    a = _v(a)
    return a.size if axis is None else a.shape[axis]


def isscalar(x):
    return _np.isscalar(x) or (isinstance(x, _Value) and x.ndim == 0)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return all(isclose(a, b, rtol, atol, equal_nan))


@_jit_outside_traces("equal_nan")
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    a, b = _promote(a, b, to_inexact=True)
    r = less_equal(abs(subtract(a, b)), add(atol, multiply(rtol, abs(b))))
    # An infinity is close only to itself (inf - -inf is within inf*rtol).
    r = logical_and(r, logical_not(logical_or(isinf(a), isinf(b))))
    r = logical_or(r, equal(a, b))
    if equal_nan:
        r = logical_or(r, logical_and(isnan(a), isnan(b)))
    return r


def array_equal(a1, a2, equal_nan=False):
    a1, a2 = _v(a1), _v(a2)
    if a1.shape != a2.shape:
        return _core.asarray_concrete(False)
    same = equal(a1, a2)
    if equal_nan:
        same = logical_or(same, logical_and(isnan(a1), isnan(a2)))
    return all(same)


def diff(a, n=1, axis=-1, prepend=None, append=None):
    a = _v(a)
    if n < 0:
        raise _core.value_error(f"order must be non-negative but got {n}")
    axis = _axis(axis, a.ndim)
    if prepend is not None:
        p = broadcast_to(_v(prepend), tuple(1 if i == axis else s for i, s in enumerate(a.shape))) \
            if _v(prepend).ndim == 0 else _v(prepend)
        a = concatenate([p, a], axis)
    if append is not None:
        p = broadcast_to(_v(append), tuple(1 if i == axis else s for i, s in enumerate(a.shape))) \
            if _v(append).ndim == 0 else _v(append)
        a = concatenate([a, p], axis)
    # (Booleans differ where they change: not_equal, as JAX's.)
    op = not_equal if _dt.is_bool(a.dtype) else subtract
    for _ in range(n):
        m = a.shape[axis]
        if m == 0:
            break
        a = op(lax.slice_in_dim(a, 1, m, 1, axis), lax.slice_in_dim(a, 0, m - 1, 1, axis))
    return a


def ediff1d(ary, to_end=None, to_begin=None):
    r = diff(ravel(ary))
    if to_begin is not None:
        r = concatenate([ravel(to_begin), r])
    if to_end is not None:
        r = concatenate([r, ravel(to_end)])
    return r


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    return _convolve(a, v, mode, "convolve", preferred_element_type)


def _convolve(a, v, mode, op, preferred_element_type=None):
    _check_arraylike(op, a, v)
    a, v = _v(a), _v(v)
    if a.ndim != 1 or v.ndim != 1:
        raise _core.value_error(f"{op}() only support 1-dimensional inputs.")
    if mode not in ("full", "same", "valid"):
        raise _core.value_error("mode must be one of ['full', 'same', 'valid']")
    if preferred_element_type is None:
        # (JAX computes in the inexact type: integers and booleans give floats.)
        a, v = _promote_dtype(a, v, to_inexact=True)
    else:
        # The inputs' common type, computed in the type asked for.
        a, v = _promote_dtype(a, v)
        pet = _dt.canonicalize_dtype(preferred_element_type)
        _check_preferred_type(a.dtype, pet)
        a, v = _to(a, pet), _to(v, pet)
    n, m = a.shape[0], v.shape[0]
    if n == 0 or m == 0:
        raise _core.value_error(f"{op}: inputs cannot be empty, got shapes {a.shape} and "
                                f"{v.shape}.")
    # A correlation's 'same' window of a shorter first operand is centred
    # the other way (NumPy's and JAX's: the swapped correlation reversed).
    late = op == "correlate" and n < m
    if op == "correlate":
        v = flip(conj(v))
    if n < m:
        a, v, n, m = v, a, m, n
    vr = flip(v)
    ap = lax.pad(a, _to(0, a.dtype), [(m - 1, m - 1, 0)])
    out_n = n + m - 1
    idx = add(reshape(arange(out_n), (-1, 1)), reshape(arange(m), (1, -1)))
    win = take(ap, idx)
    full_ = sum(multiply(win, vr), axis=1)
    if mode == "full":
        return full_
    if mode == "same":
        start = m // 2 if late else (m - 1) // 2
        return full_[start:start + n]
    return full_[m - 1:n]


def _check_preferred_type(dtype, pet):
    """JAX's rules for a `preferred_element_type`: the same kind as the
    input (or a float for integers), signed for signed, not narrower."""
    if not (issubdtype(dtype, _np.integer) and issubdtype(pet, _np.floating)):
        # (`any` here is jnp.any)
        if [t for t in (_np.integer, _np.floating, _np.complexfloating)
                if issubdtype(dtype, t) and not issubdtype(pet, t)]:
            raise _core.type_error(
                "Input type is incompatible with `preferred_element_type`. The compatible "
                "combinations of (input_type, preferred_element_type) are (integral, "
                "integral), (integral, floating), (floating, floating), (complex, complex.")
        if issubdtype(dtype, _np.signedinteger) and not issubdtype(pet, _np.signedinteger):
            raise _core.type_error("`preferred_element_type` must have the same signedness "
                                   "as the original type.")
    if _np.dtype(pet).itemsize < _np.dtype(dtype).itemsize:
        raise _core.type_error("`preferred_element_type` must not be narrower than the "
                               "original type.")


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    return _convolve(a, v, mode, "correlate", preferred_element_type)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation (NumPy's, with JAX's `'extrapolate'`
    for `left`/`right`; with `period`, x and xp are taken modulo it and the
    ends wrap around, `left`/`right` unused)."""
    _check_arraylike("interp", x, xp, fp)
    x, xp, fp = _v(x), _v(xp), _v(fp)
    if _dt.is_complex(x.dtype):
        raise ValueError("jnp.interp: complex x values not supported.")
    for name, v in (("left", left), ("right", right)):
        if isinstance(v, str) and v != "extrapolate":
            raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', "
                             f"but got: {v!r}")
    dt = _result(x, xp, fp, 1.0)[0]
    x, xp, fp = _to(x, dt), _to(xp, dt), _to(fp, dt)
    if period is not None:
        if _np.ndim(period) != 0:
            raise ValueError(f"period must be a scalar; got {period}")
        p = abs(_to(_v(period), dt))
        x, xp = remainder(x, p), remainder(xp, p)
        xp, fp = lax.sort((xp, fp), 0, True, 1)
        # One point before the first and one after the last, a period away.
        xp = concatenate([subtract(xp[-1:], p), xp, add(xp[:1], p)])
        fp = concatenate([fp[-1:], fp, fp[:1]])
    i = clip(searchsorted(xp, x, side="right"), 1, xp.shape[0] - 1)
    x0, x1 = take(xp, i - 1), take(xp, i)
    y0, y1 = take(fp, i - 1), take(fp, i)
    dx = subtract(x1, x0)
    # Coincident points: the left value (no 0/0, and no NaN gradient).
    flat = less_equal(abs(dx), _np.spacing(_np.finfo(_np.dtype(dt)).eps))
    t = divide(subtract(x, x0), where(flat, ones_like(dx), dx))
    r = where(flat, y0, add(y0, multiply(t, subtract(y1, y0))))
    if period is None:
        if not isinstance(left, str):
            r = where(less(x, xp[0]), fp[0] if left is None else _to(_v(left), dt), r)
        if not isinstance(right, str):
            r = where(greater(x, xp[-1]), fp[-1] if right is None else _to(_v(right), dt), r)
    return r


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(arr), ravel(values)])
    return concatenate([arr, values], axis)


def compress(condition, a, axis=None, *, size=None, fill_value=0):
    """The slices of `a` along `axis` where `condition` (1-D, shorter is
    padded with False) holds. With `size` the result has that many slices
    (the rest `fill_value`), so `condition` may be traced (jit, vmap)."""
    a = _v(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _axis(axis, a.ndim)
    n = a.shape[axis]
    if size is None:
        cond = _np.asarray(_known(condition)).astype(builtins.bool)
        idx = _np.nonzero(cond[:n])[0]
        return take(a, _core.Array(idx.astype(_np.int32)), axis=axis)
    if not 0 <= size <= n:
        raise _core.value_error("size must be positive and not greater than the size of the "
                                f"array axis; got size={size} for a.shape[axis]={n}")
    cond = ravel(_v(condition)).astype(bool_)
    k = cond.shape[0]
    cond = cond[:n] if k >= n else concatenate([cond, zeros((n - k,), bool_)])
    idx = nonzero(cond, size=size, fill_value=n)[0]  # (n: past the end, filled)
    return take(a, idx, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size=None, fill_value=0):
    return compress(ravel(condition), ravel(arr), size=size, fill_value=fill_value)


def lexsort(keys, axis=-1):
    keys = [_v(k) for k in keys]
    if not keys:
        raise _core.type_error("need sequence of keys with len > 0 in lexsort")
    k0 = keys[0]
    axis = _axis(axis, k0.ndim)
    idx = lax.broadcasted_iota(_dt.default_int(), k0.shape, axis)
    ops = tuple(reversed(keys)) + (idx,)
    return lax.sort(ops, axis, True, len(keys))[-1]


def tril_indices(n, k=0, m=None):
    r, c = _np.tril_indices(n, k, m)
    return _core.Array(r.astype(_dt.default_int())), _core.Array(c.astype(_dt.default_int()))


def triu_indices(n, k=0, m=None):
    r, c = _np.triu_indices(n, k, m)
    return _core.Array(r.astype(_dt.default_int())), _core.Array(c.astype(_dt.default_int()))


def tril_indices_from(arr, k=0):
    arr = _v(arr)
    if arr.ndim != 2:
        raise _core.value_error("Only 2-D inputs are accepted")
    return tril_indices(arr.shape[-2], k, arr.shape[-1])


def triu_indices_from(arr, k=0):
    arr = _v(arr)
    if arr.ndim != 2:
        raise _core.value_error("Only 2-D inputs are accepted")
    return triu_indices(arr.shape[-2], k, arr.shape[-1])


def diag_indices(n, ndim=2):
    i = arange(n)
    return (i,) * ndim


def cumulative_max(a, axis=0):
    return lax.cummax(a, axis)


def logical(x):
    return x


"""JAX's dtype rules: the promotion lattice with weak types, x64 canonicalization."""

import sys
import warnings

import ml_dtypes
import numpy as np

from .config import config

bfloat16 = np.dtype(ml_dtypes.bfloat16)
bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)
# ml_dtypes' narrow floats, as JAX has them ({dtype: MLIR's type name}):
# stored one per byte; arithmetic on them is done in f32 and rounded back
# (XLA:CPU's), and they promote with nothing but themselves and weak types.
NARROW_FLOATS = {np.dtype(getattr(ml_dtypes, n)): m for n, m in (
    ("float8_e4m3fn", "f8E4M3FN"), ("float8_e5m2", "f8E5M2"),
    ("float8_e4m3b11fnuz", "f8E4M3B11FNUZ"), ("float8_e4m3fnuz", "f8E4M3FNUZ"),
    ("float8_e5m2fnuz", "f8E5M2FNUZ"), ("float8_e3m4", "f8E3M4"), ("float8_e4m3", "f8E4M3"),
    ("float8_e8m0fnu", "f8E8M0FNU"), ("float4_e2m1fn", "f4E2M1FN"))}

# ... and the narrow integers ({dtype: MLIR's type name}): one per byte, the
# value in the low bits; they too promote with nothing but weak types.
NARROW_INTS = {np.dtype(getattr(ml_dtypes, n)): m for n, m in (
    ("int4", "i4"), ("uint4", "ui4"), ("int2", "i2"), ("uint2", "ui2"))}

_SUPPORTED = {bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64, complex64, complex128, *NARROW_FLOATS,
              *NARROW_INTS}

_NARROW = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


def canonicalize_dtype(dtype):
    dtype = np.dtype(dtype)
    if dtype not in _SUPPORTED:
        raise TypeError(f"dtype {dtype} is not a valid Ember array type")
    if not config.jax_enable_x64:
        return _NARROW.get(dtype, dtype)
    return dtype


def check_user_dtype(dtype, fun_name=None):
    """The dtype of a user's `dtype=` argument, as JAX's
    `check_and_canonicalize_user_dtype`: Python's scalar types give the
    default dtypes; a 64-bit dtype with x64 off gives its 32-bit
    counterpart, with JAX's UserWarning at the user's line."""
    if isinstance(dtype, type) and dtype in (bool, int, float, complex):
        return {bool: bool_, int: default_int(), float: default_float(),
                complex: complex128 if config.jax_enable_x64 else complex64}[dtype]
    requested = np.dtype(dtype)
    canonical = canonicalize_dtype(requested)
    if canonical != requested:
        where = f" requested in {fun_name}" if fun_name else ""
        warnings.warn(
            f"Explicitly requested dtype {requested}{where} is not available, and will be "
            f"truncated to dtype {canonical.name}. To enable more dtypes, set the "
            "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment "
            "variable. See https://github.com/jax-ml/jax#current-gotchas for more.",
            UserWarning, stacklevel=_user_stacklevel())
    return canonical


def _user_stacklevel():
    """`warnings.warn`'s stacklevel, from its caller, of the first frame
    outside the ember package."""
    frame, level = sys._getframe(2), 2
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != "ember" and not module.startswith("ember."):
            return level
        frame, level = frame.f_back, level + 1
    return 1


def default_int():
    return int64 if config.jax_enable_x64 else int32


def default_float():
    return float64 if config.jax_enable_x64 else float32


def to_inexact(d):
    """JAX's `to_inexact_dtype`: a bool or an integer of up to 32 bits
    becomes float32, a 64-bit one float64 (then canonicalized); inexact
    types stay."""
    d = np.dtype(d)
    if is_inexact(d):
        return d
    return canonicalize_dtype(float64 if d.itemsize == 8 else float32)


def default_complex():
    return complex128 if config.jax_enable_x64 else complex64


def is_float(d):
    d = np.dtype(d)
    return d.kind == "f" or d == bfloat16 or d in NARROW_FLOATS


def is_complex(d):
    return np.dtype(d).kind == "c"


def is_inexact(d):
    return is_float(d) or is_complex(d)


def is_int(d):
    d = np.dtype(d)
    return d.kind in "iu" or d in NARROW_INTS


def is_unsigned(d):
    d = np.dtype(d)
    return d.kind == "u" or d in NARROW_INTS and d.name.startswith("u")


def is_bool(d):
    return np.dtype(d) == bool_


# The lattice: each node lists the nodes directly above it.
_I, _F, _C = "i*", "f*", "c*"
_UP = {
    bool_: [_I],
    _I: [uint8, int8, *NARROW_INTS],
    **{t: [] for t in NARROW_INTS},
    uint8: [uint16, int16], uint16: [uint32, int32], uint32: [uint64, int64], uint64: [_F],
    int8: [int16], int16: [int32], int32: [int64], int64: [_F],
    _F: [float16, bfloat16, _C, *NARROW_FLOATS],
    **{t: [] for t in NARROW_FLOATS},
    float16: [float32], bfloat16: [float32], float32: [float64, complex64],
    float64: [complex128],
    _C: [complex64], complex64: [complex128], complex128: [],
}


def _upper_set(node):
    seen, todo = set(), [node]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo.extend(_UP[n])
    return seen


_UPPER = {n: _upper_set(n) for n in _UP}


def _lub(nodes):
    common = set.intersection(*(_UPPER[n] for n in nodes))
    # The least element: the one whose upper set contains all the others.
    for c in common:
        if common <= _UPPER[c]:
            return c
    narrow = [n for n in nodes if n in NARROW_FLOATS or n in NARROW_INTS]
    if narrow:
        names = tuple(n.name if isinstance(n, np.dtype) else n for n in nodes)
        what = (f"{itemsize_bits(narrow[0])}-bit floats" if narrow[0] in NARROW_FLOATS else
                "1-bit, 2-bit and 4-bit integers")
        raise TypePromotionError(
            f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
            f"unintended promotion, {what} do not support implicit promotion. If you'd like "
            "your inputs to be promoted to another type, you can do so explicitly using e.g. "
            "x.astype('float32')")
    raise TypeError(f"no common type for {nodes}")


def _node(dtype, weak):
    dtype = np.dtype(dtype)
    if weak:
        if is_bool(dtype):
            return bool_
        if is_int(dtype):
            return _I
        if is_float(dtype):
            return _F
        return _C
    return dtype


def result_type_weak(*pairs):
    """Promotes (dtype, weak) pairs; returns (dtype, weak)."""
    # (Inputs canonicalized first, as JAX's: without x64 uint64 and int64
    # are uint32 and int32, whose join is int64, then int32.)
    nodes = [_node(canonicalize_dtype(d), w) for d, w in pairs]
    r = _lub(nodes)
    if r == _I:
        return default_int(), True
    if r == _F:
        return default_float(), True
    if r == _C:
        return default_complex(), True
    return canonicalize_dtype(r), False


def promote_types(a, b):
    return result_type_weak((np.dtype(a), False), (np.dtype(b), False))[0]


def promote_types_uncanonical(a, b):
    """JAX's `jnp.promote_types`: without x64 the join is narrowed to 32
    bits (int32 and uint32 give int32) unless an operand is a 64-bit type
    (uint32 and int64 give int64, uint64 and int8 float64), as JAX's."""
    a, b = np.dtype(a), np.dtype(b)
    if max(a.itemsize, b.itemsize) < 8 or config.jax_enable_x64:
        return promote_types(a, b)
    r = _lub([_node(a, False), _node(b, False)])
    return np.dtype({_I: int64, _F: float64, _C: complex128}.get(r, r))


_MLIR_NAMES = {
    bool_: "i1", int8: "i8", int16: "i16", int32: "i32", int64: "i64",
    uint8: "ui8", uint16: "ui16", uint32: "ui32", uint64: "ui64",
    float16: "f16", bfloat16: "bf16", float32: "f32", float64: "f64",
    complex64: "complex<f32>", complex128: "complex<f64>", **NARROW_FLOATS, **NARROW_INTS,
}


def mlir_name(dtype):
    return _MLIR_NAMES[np.dtype(dtype)]


_FROM_MLIR = {v: np.dtype(k) for k, v in _MLIR_NAMES.items()}


def from_mlir_name(name):
    """The dtype of an MLIR element type's text ("f32", "ui8", "complex<f64>")."""
    return _FROM_MLIR[str(name)]


def finfo(dtype):
    return ml_dtypes.finfo(dtype)


# (`jnp.iinfo` is JAX's class: NumPy's limits, and the narrow integers'.)
iinfo = ml_dtypes.iinfo


# JAX's dtype of the tangents of integer and boolean values (`jax.dtypes.float0`).
float0 = np.dtype([("float0", np.void, 0)])


class TypePromotionError(ValueError):
    """Dtypes with no implicit promotion path (JAX's `jax.dtypes.TypePromotionError`)."""


def itemsize_bits(dtype):
    """The number of bits of one element of `dtype` (4 for int4, 8 for bool)."""
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d is None or d == float0 or d.kind not in "biufcV":
        raise ValueError(f"unexpected input: {dtype=}")
    if d.kind == "b":
        return 8
    if d.kind in "iu" or d.name in ("int2", "int4", "uint2", "uint4"):
        return ml_dtypes.iinfo(d).bits
    if d.kind == "c":
        return 8 * d.itemsize
    try:
        return ml_dtypes.finfo(d).bits
    except (TypeError, ValueError):
        raise ValueError(f"unexpected input: {dtype=}") from None


def scalar_type_of(x):
    """The Python scalar type (bool, int, float or complex) of a value's or
    a type's dtype."""
    if isinstance(x, type) and x in (bool, int, float, complex):
        return x
    if type(x) in (bool, int, float, complex):
        return type(x)
    dt = None if isinstance(x, (type, np.dtype, str)) else getattr(x, "dtype", None)
    if dt is None:
        try:
            dt = np.dtype(x)
        except TypeError:
            raise TypeError(f"Cannot determine dtype of {x}") from None
    if not isinstance(dt, np.dtype):
        raise TypeError(f"Cannot determine dtype of {dt}")
    if dt.kind == "b":
        return bool
    if dt.kind in "iu" or dt.name in ("int2", "int4", "uint2", "uint4"):
        return int
    if dt.kind == "c":
        return complex
    if dt.kind == "f" or is_float(dt):
        return float
    raise TypeError(f"Invalid scalar value {x}")

"""Tracing straight into MLIR: abstract values, `Array` and `Tracer`, traces and
primitives.

A traced function becomes one `func.func @main` of `ember` ops, built through the
MLIR Python bindings as the user's code runs on `Tracer`s. Outside a trace every
primitive runs eagerly by compiling a one-op function (cached per signature)
with `compiler`.
"""

import collections
import contextlib
import copy
import functools
import io
import os
import sys
import threading
import weakref

import numpy as np

from ember._mlir import ir

from . import compiler, devices, dtypes, shape_poly, tree_util
from .compiler import Executable
from .config import config, on_change
from .context import context
from .devices import SingleDeviceSharding, cpu_device
from .errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from .mesh import Shard, shard_data, shard_indices
from .shape_poly import DimExpr

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_lock = threading.RLock()


# --------------------------------------------------------------------------
# Abstract values
# --------------------------------------------------------------------------


_aval_hooks = {}  # set by the modules above this one (shard_map.py)


class ShapedArray:
    """Shape, dtype and weak type; inside `shard_map` (with check_vma) also
    `vma`, the mesh axes the value varies over, and for an argument that was
    placed with a NamedSharding its `sharding` (shardings are not propagated
    through ops). Neither is part of equality: JAX's type errors for
    mismatched varying axes or shardings are not reproduced."""

    __slots__ = ("shape", "dtype", "weak_type", "vma", "sharding")

    def __init__(self, shape, dtype, weak_type=False, vma=frozenset(), sharding=None):
        self.shape = canonicalize_shape(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self.vma = vma
        self.sharding = sharding

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return shape_size(self.shape)

    def _key(self):
        return (self.shape, self.dtype, self.weak_type)

    def __eq__(self, other):
        return isinstance(other, ShapedArray) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def update(self, shape=None, dtype=None, weak_type=None, vma=None, sharding=None):
        # A new shape drops the sharding (it described the old one).
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type,
                           self.vma if vma is None else vma,
                           sharding if sharding is not None else
                           self.sharding if shape is None else None)

    @property
    def manual_axis_type(self):
        return _ManualAxisType(self.vma)

    # The hijax type interface (`hitypes.py`): an array type lowers to
    # itself, and maps over one of its axes (a spec is an axis or None).
    def lo_ty(self):
        return [self]

    def lower_val(self, x):
        return [x]

    def raise_val(self, x):
        return x

    def to_tangent_aval(self):
        # (Inside programs the cotangent of an integer array is integer
        # zeros; what `vjp`/`grad`/`jvp` return for one is float0.)
        return self.update(weak_type=False)

    def dec_rank(self, size, spec):
        if spec is None:
            return self
        return self.update(shape=self.shape[:spec] + self.shape[spec + 1:])

    def inc_rank(self, size, spec):
        if spec is None:
            return self
        return self.update(shape=self.shape[:spec] + (size,) + self.shape[spec:])

    # shard_map's per-device type of an argument (`shard`) and the global
    # type of a result (`unshard`), by a PartitionSpec (shard_map.py).
    def shard(self, mesh, manual_axes, check_vma, spec):
        return _aval_hooks["shard"](self, mesh, manual_axes, check_vma, spec)

    def unshard(self, mesh, check_vma, spec):
        return _aval_hooks["unshard"](self, mesh, check_vma, spec)

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        name = "bfloat16" if self.dtype == dtypes.bfloat16 else self.dtype.name
        if short_dtypes:  # JAX's `f32`, `i32`, `u8`, `c64`, `bf16`
            name = (name.replace("float", "f").replace("uint", "u").replace("int", "i")
                    .replace("complex", "c"))
        vma = "".join(_axes_tag(kind, axes) for kind, axes in (
            ("V", self.vma), ("U", getattr(getattr(self.sharding, "spec", None), "unreduced", ())),
            ("R", getattr(getattr(self.sharding, "spec", None), "reduced", ()))))
        explicit = self._explicit_axes()
        if explicit is not None:
            return f"{name}[{','.join(explicit)}]{vma}"
        return f"{name}[{','.join(map(str, self.shape))}]{vma}"

    def __repr__(self):
        return f"ShapedArray({self.str_short()}{', weak_type=True' if self.weak_type else ''})"

    def __str__(self):
        return f"{'~' if self.weak_type else ''}{self.str_short()}"  # (JAX's)

    def _explicit_axes(self):
        """`8@X`-style dims when sharded over Explicit mesh axes, else None."""
        sh = self.sharding
        if sh is None or not hasattr(sh, "spec"):
            return None
        explicit = {n for n, t in zip(sh.mesh.axis_names, sh.mesh.axis_types)
                    if t.name == "Explicit"}
        if not explicit:
            return None
        dims = []
        for d, n in enumerate(self.shape):
            axes = [a for a in sh.spec.axes(d) if a in explicit]
            dims.append(f"{n}@{axes[0]}" if len(axes) == 1 else
                        f"{n}@({','.join(axes)})" if axes else str(n))
        return dims


def _axes_tag(kind, axes):
    """JAX's `{V:X}`, `{U:(X,Y)}`: a type's mesh axes of one kind (varying,
    unreduced, reduced)."""
    names = sorted(axes, key=str)
    if not names:
        return ""
    return "{" + kind + ":" + (names[0] if len(names) == 1 else "(" + ",".join(names) + ")") + "}"


def named_sharding(aval):
    """The aval's sharding when it is a NamedSharding (on a mesh: results
    of ops follow it, `sharding_rules.py`), else None. (A NamedSharding is
    recognized by its `spec`; mesh.py sits above this module.)"""
    sh = aval.sharding
    # (`typeof` gives unsharded arrays JAX's sharding on the empty mesh.)
    return sh if sh is not None and hasattr(sh, "spec") and sh.mesh.axis_names else None


def canonicalize_dim(d):
    """An int, or a `DimExpr` (a symbolic dimension of an export)."""
    if isinstance(d, DimExpr):
        return d
    return int(d)


def canonicalize_shape(shape):
    """A shape's dimensions canonicalized; a traced dimension is JAX's
    `TypeError` (with the user's line)."""
    given = shape
    if isinstance(shape, Value) and shape.ndim == 0:
        # One dimension given as a 0-d array (`x.reshape(jnp.prod(...))`).
        shape, given = (shape,), [shape]
    try:
        return tuple(canonicalize_dim(d) for d in shape)
    except ConcretizationTypeError:
        raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                        f"got {given if isinstance(given, list) else tuple(shape)}.\n"
                        f"The shape was given at {where()}.") from None


def shape_size(shape):
    n = 1
    for d in shape:
        n = n * d
    return n if isinstance(n, DimExpr) else int(n)


def is_symbolic_shape(shape):
    return any(isinstance(d, DimExpr) for d in shape)


class _ManualAxisType:
    def __init__(self, vma):
        self.varying = set(vma)


class ShapeDtypeStruct:
    def __init__(self, shape, dtype, weak_type=False, *, sharding=None):
        if dtype is None:
            raise ValueError("ShapeDtypeStruct: dtype must be specified.")
        self.shape = tuple(shape)
        # (an extended dtype, key<fry>, is kept as it is)
        self.dtype = dtype if getattr(dtype, "extended", False) else np.dtype(dtype)
        self.weak_type = weak_type
        # JAX's keyword; Ember's programs run on one device per process
        # layout, so the sharding is kept for the caller, not compiled in.
        self.sharding = sharding

    @classmethod
    def like(cls, x):
        """The shape, dtype and weak type of array-like `x`."""
        if not (hasattr(x, "shape") and hasattr(x, "dtype")):
            x = np.asarray(x)
        return cls(x.shape, x.dtype, getattr(x, "weak_type", False))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return shape_size(self.shape)

    def update(self, **kwargs):
        """A copy with the fields given (`shape`, `dtype`, `weak_type`,
        `sharding`) replaced, as JAX's."""
        fields = {"shape": self.shape, "dtype": self.dtype, "weak_type": self.weak_type,
                  "sharding": self.sharding}
        for k in kwargs:
            if k not in fields:
                raise TypeError(f"ShapeDtypeStruct.update() got an unexpected keyword "
                                f"argument '{k}'")
        fields.update(kwargs)
        return ShapeDtypeStruct(fields["shape"], fields["dtype"], fields["weak_type"],
                                sharding=fields["sharding"])

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))


# --------------------------------------------------------------------------
# Errors that point at the user's line
# --------------------------------------------------------------------------


def _verify_emitted(op, name):
    """An op its verifier rejects is never built: the primitives check the
    dtypes they accept, and this is the net behind them (TypeError at the
    user's line, never invalid IR reaching a pipeline)."""
    try:
        op.verify()
    except ir.MLIRError as e:
        op.erase()
        detail = " ".join(str(d.message) for d in e.error_diagnostics) or str(e)
        raise type_error(f"{name.removeprefix('ember.')} does not accept these operands: "
                         f"{detail}") from None


def user_frame():
    """The innermost stack frame outside the ember package."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_EMBER_DIR) and "<frozen" not in fn:
            return f
        f = f.f_back
    return None


def describe_function(fun):
    """JAX's `name at file:line` of a function (its name alone when it has
    no code)."""
    name = getattr(fun, "__name__", "function")
    code = getattr(fun, "__code__", None)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def user_position():
    """(file, line, column, code) of the expression the innermost frame
    outside Ember is evaluating (the column as Python reports it), or
    None."""
    f = user_frame()
    if f is None:
        return None
    code = f.f_code
    positions = _code_positions(code)
    at = f.f_lasti // 2
    line, col = f.f_lineno, 0
    if at < len(positions) and positions[at][0] is not None:
        line, col = positions[at][0], positions[at][2] or 0
    return code.co_filename, line, col, code


@functools.lru_cache(maxsize=4096)
def _code_positions(code):
    """(line, end line, column, end column) of each code unit of `code`
    (Python 3.11+; none before)."""
    return tuple(code.co_positions()) if hasattr(code, "co_positions") else ()


def where():
    f = user_frame()
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f else "<unknown>"


def below_location(msg):
    """`msg` (JAX's text, whole on its first line) and the user's line below."""
    return f"{msg}\n(at {where()})"


def type_error(msg):
    return TypeError(below_location(msg))


def value_error(msg):
    return ValueError(below_location(msg))


# --------------------------------------------------------------------------
# MLIR types
# --------------------------------------------------------------------------

_type_cache = {}


def _witness_shape(shape):
    """The concrete shape a symbolic one has in the MLIR of the trace (the
    scope's witness values; `ember.sym_*` annotations keep the expressions)."""
    out = []
    for d in shape:
        if isinstance(d, DimExpr):
            scope = d._scope
            w = getattr(scope, "_witness_env", None)
            if w is None:
                w = scope._witness_env = scope.witness()
            d = d._eval(w)
        out.append(int(d))
    return tuple(out)


def sym_spec(shape):
    """The annotation text of a shape with symbolic dims ("" for a static
    one): the dims' expressions separated by ';'."""
    if not is_symbolic_shape(shape):
        return ""
    return ";".join(str(d) for d in shape) or "-"


class _SymAttrs(threading.local):
    """Attributes made from symbolic values, by id, until the op using them
    is emitted: (attribute, annotation text); per thread, as traces are."""

    def __init__(self):
        self.pending = {}


_sym_attrs_tls = _SymAttrs()


def _annotate(op, result_avals, attributes):
    """Records the symbolic dims of an op's results and attributes as
    `ember.sym_results` / `ember.sym_attr.<name>` (see shape_poly.py)."""
    specs = [sym_spec(a.shape) for a in result_avals]
    if any(specs):
        op.attributes["ember.sym_results"] = ir.ArrayAttr.get(
            [ir.StringAttr.get(x) for x in specs])
    pending = _sym_attrs_tls.pending
    if pending and attributes:
        for k, v in attributes.items():
            hit = pending.get(id(v))
            if hit is not None and hit[0] is v:
                op.attributes[f"ember.sym_attr.{k}"] = ir.StringAttr.get(hit[1])


def annotate_block_args(op, avals_per_region):
    """`ember.sym_block_args`: for each region of `op`, the specs of its
    entry block's arguments (when any is symbolic)."""
    specs = [[sym_spec(a.shape) for a in avals] for avals in avals_per_region]
    if any(any(x) for x in specs):
        op.attributes["ember.sym_block_args"] = ir.ArrayAttr.get(
            [ir.ArrayAttr.get([ir.StringAttr.get(x) for x in r]) for r in specs])


def dimension_as_value(d):
    """A dimension as a traced int scalar (JAX's `core.dimension_as_value`)."""
    if not isinstance(d, DimExpr):
        return int(d)
    trace = current_trace()
    if trace is None:
        raise TypeError(f"the symbolic dimension {d} is a value only inside a traced "
                        "function")
    aval = ShapedArray((), dtypes.default_int(), weak_type=True)
    w = _witness_shape((d,))[0]
    out = trace.emit("ember.constant", [], [aval],
                     {"value": dense_attr(np.asarray(w), aval)})[0]
    with trace.ctx:
        out.value.owner.attributes["ember.sym_value"] = ir.StringAttr.get(str(d))
    return out


def mlir_type(aval):
    if is_symbolic_shape(aval.shape):
        aval = ShapedArray(_witness_shape(aval.shape), aval.dtype)
    key = (aval.shape, aval.dtype)
    t = _type_cache.get(key)
    if t is None:
        elem = ir.Type.parse(dtypes.mlir_name(aval.dtype), context())
        t = ir.RankedTensorType.get(list(aval.shape), elem, loc=ir.Location.unknown(context()))
        _type_cache[key] = t
    return t


def i64_array_attr(values):
    values = list(values)
    if is_symbolic_shape(values):
        attr = ir.DenseI64ArrayAttr.get(list(_witness_shape(values)), context=context())
        _sym_attrs_tls.pending[id(attr)] = (attr, sym_spec(values))
        return attr
    return ir.DenseI64ArrayAttr.get([int(v) for v in values], context=context())


def i64_attr(v):
    if isinstance(v, DimExpr):
        attr = ir.IntegerAttr.get(ir.IntegerType.get_signless(64, context()),
                                  _witness_shape((v,))[0])
        _sym_attrs_tls.pending[id(attr)] = (attr, str(v))
        return attr
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64, context()), int(v))


def bool_attr(v):
    return ir.BoolAttr.get(bool(v), context())


def enum_attr(text):
    return ir.Attribute.parse(text, context())


def dense_attr(np_value, aval):
    arr = np.ascontiguousarray(np.asarray(np_value, dtype=aval.dtype).reshape(aval.shape))
    t = mlir_type(aval)
    if aval.dtype == dtypes.bfloat16:
        arr = arr.view(np.uint16)
    elif aval.dtype == dtypes.float16:
        arr = arr.view(np.uint16)
    elif aval.dtype == dtypes.bool_:
        arr = np.packbits(arr.reshape(-1), bitorder="little")
    return ir.DenseElementsAttr.get(arr, type=t, context=context())


# --------------------------------------------------------------------------
# Arrays and tracers
# --------------------------------------------------------------------------


class Value:
    """What Array and Tracer share; their operators and array methods are set
    by `numpy.array_methods.install` (called when ember.numpy is imported)."""

    __array_priority__ = 100
    __slots__ = ()

    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return len(self.aval.shape)

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    def __len__(self):
        if not self.aval.shape:
            raise TypeError("len() of unsized object")
        return self.aval.shape[0]

    def __setitem__(self, key, value):
        # JAX's error: arrays are immutable, `.at[]` makes updated copies.
        raise TypeError(
            "JAX arrays are immutable and do not support in-place item assignment. Instead of "
            "x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
            "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")


shape_poly.register_value_hook(Value, dimension_as_value)


class TypedNdArray(np.ndarray):
    """JAX's host-side array of `float0` zeros (`jax.dtypes.float0`): the
    tangent or cotangent of an integer or boolean value, which carries no
    number and which no program computes; transformations pass it through
    their outputs as it is (api_util.flatten_fun). Prints as JAX's."""

    def __repr__(self):
        prefix, tail = "TypedNdArray(", f"dtype={self.dtype.name})"
        if self.size == 0:
            body = f"[], shape={self.shape}"
        else:
            body = np.array2string(np.asarray(self), prefix=prefix, suffix=",",
                                   separator=", ")
        width = np.get_printoptions()["linewidth"]
        last = len(body) - body.rfind("\n") + 1
        sep = " " * len(prefix) if last + len(tail) + 1 > width else " "
        return f"{prefix}{body},{sep}{tail}"


def float0_zeros(shape):
    """The float0 (co)tangent of an integer or boolean value of `shape`."""
    return np.zeros(shape, dtypes.float0).view(TypedNdArray)


def is_float0(x):
    return isinstance(x, np.ndarray) and x.dtype == dtypes.float0


class Array(Value):
    """A concrete array on the CPU, backed by an immutable NumPy buffer."""

    __slots__ = ("_value", "aval", "_sig", "__weakref__")

    def __init__(self, value, weak_type=False):
        given = value
        value = np.asarray(value)
        if not value.flags.c_contiguous or (value is given and value.flags.writeable):
            # Compiled code reads C-ordered buffers; and the caller's NumPy
            # array stays theirs to write (as JAX copies it to the device),
            # so the array takes a copy of it.
            value = value.copy(order="C")
        value.flags.writeable = False
        self._value = value
        self.aval = ShapedArray(value.shape, value.dtype, weak_type)
        # The jit fast path keys its cache on these signatures (in C++).
        self._sig = (value.shape, value.dtype, bool(weak_type))

    @classmethod
    def with_sharding(cls, value, weak_type, sharding):
        """An array whose blocks are placed by `sharding` (mesh.py): on a
        mesh or committed to a device. Results of computations follow the
        sharding, so it is part of the signature jit's fast path dispatches
        on."""
        out = cls(value, weak_type)
        out.aval = out.aval.update(sharding=sharding)
        out._sig = out._sig + (sharding,)
        return out

    @property
    def committed(self):
        """Placed on a device or mesh by `device_put` (or computed from such
        an array): JAX's committed arrays, which computations may not mix
        across devices."""
        return self.aval.sharding is not None

    def __array__(self, dtype=None, copy=None):
        if dtype is not None:
            return self._value.astype(dtype)
        return self._value if not copy else self._value.copy()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        kw = {"stream": stream}
        if max_version is not None:
            kw["max_version"] = max_version
        if dl_device is not None:
            kw["dl_device"] = dl_device
        if copy is not None:
            kw["copy"] = copy
        try:
            return self._value.__dlpack__(**kw)
        except BufferError:
            # Arrays are immutable, so their host buffers are read-only, which
            # DLPack before 1.0 cannot say: such consumers get a copy (unless
            # they asked for none).
            if copy is False:
                raise
            return self._value.copy().__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()

    def unsafe_buffer_pointer(self):
        """The address of the array's buffer (JAX's method; a ref updated in
        place by a jitted function keeps its address)."""
        return self._value.ctypes.data

    def block_until_ready(self):
        return self

    def is_ready(self):
        """Computed already (a CPU array's value is there when it exists)."""
        return True

    def clone(self):
        """A copy of the array (JAX's `Array.clone`)."""
        return Array(np.array(self._value), self.weak_type)

    def tobytes(self, order="C"):
        return self._value.tobytes(order)

    def platform(self):
        return next(iter(self.sharding.device_set)).platform

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if not dtypes.is_int(self.dtype) and not dtypes.is_bool(self.dtype):
            raise TypeError("only integer arrays can be used as an index")
        return int(self._value)

    def __hash__(self):
        raise TypeError("unhashable type: 'Array'")

    def __repr__(self):
        sh = self.aval.sharding
        if getattr(getattr(sh, "spec", None), "unreduced", None):
            # JAX's form for an array of partial sums: no values.
            name = "bfloat16" if self.dtype == dtypes.bfloat16 else self.dtype.name
            return f"Array(shape={self.shape}, dtype={name}, sharding={sh})"
        # JAX's form: the dtype always, the shape when the data shows none;
        # a dtype that would overflow the last line is set off by the
        # prefix's width of spaces instead of one (JAX's layout, no newline).
        name = "bfloat16" if self.dtype == dtypes.bfloat16 else self.dtype.name
        dtype = f"dtype={name}" + (", weak_type=True" if self.weak_type else "")
        width = np.get_printoptions()["linewidth"]
        if self.size == 0:
            s = f"[], shape={self.shape}"
        else:
            s = np.array2string(self._value, separator=", ", prefix="Array(", suffix=",",
                                max_line_width=width)
        last = len(s) - s.rfind("\n") + 1
        sep = " " * len("Array(") if last + len(dtype) + 2 > width else " "
        return f"Array({s},{sep}{dtype})"

    def __str__(self):
        return str(self._value)

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self._value.item(), spec)
        if spec:  # (a number format of an n-d array: NumPy's and JAX's error)
            return format(self._value, spec)
        return format(str(self), spec)

    def __reduce__(self):
        return (Array, (np.array(self._value), self.weak_type))

    def devices(self):
        return set(self.sharding.device_set)

    @property
    def device(self):
        devs = self.sharding.device_set
        if len(devs) != 1:
            raise ValueError("Length of devices is greater than 1. Please use `.devices()`.")
        return next(iter(devs))

    def to_device(self, device, *, stream=None):
        """This array on `device` (a Device or a sharding), as `device_put`."""
        del stream  # one host stream: nothing to order against
        return on_device(self, device)

    def copy_to_host_async(self):
        pass

    def is_deleted(self):
        """Ember never frees an array behind its back (`donate_argnums` is
        accepted and ignored), so never."""
        return False

    def on_device_size_in_bytes(self):
        return int(self.nbytes)

    def addressable_data(self, index):
        """The data of the `index`-th addressable shard."""
        return self.addressable_shards[index].data

    @property
    def sharding(self):
        s = self.aval.sharding
        return s if s is not None else SingleDeviceSharding(cpu_device)

    @property
    def addressable_shards(self):
        sh = self.sharding
        return [Shard(dev, index, replica, Array(shard_data(sh, self._value, dev, index)))
                for dev, index, replica in shard_indices(sh, self.shape)]

    @property
    def global_shards(self):
        return self.addressable_shards

    @property
    def is_fully_addressable(self):
        return True

    @property
    def is_fully_replicated(self):
        return self.sharding.is_fully_replicated

    def __array_namespace__(self, *, api_version=None):
        """The Array API namespace of this array: `ember.numpy`."""
        import importlib

        return importlib.import_module("ember.numpy")




_host_value = Array.__dict__["_value"]  # the slot under GpuArray's property


class GpuArray(Array):
    """An array in a GPU's memory (#17): a `DeviceBuffer` of the CUDA runtime
    (lib/Runtime/Cuda.cpp), committed to that GPU (`device_put`). A jitted
    function called on it runs on the GPU and gives GpuArrays without
    copying, returning before the GPU finishes (asynchronous dispatch); any
    host use (NumPy, printing, CPU computations) waits, copies it back once,
    on first use, and keeps that copy."""

    __slots__ = ("_buffer",)

    def __init__(self, buffer, aval):
        _host_value.__set__(self, None)
        self._buffer = buffer
        self.aval = aval
        self._sig = (aval.shape, aval.dtype, bool(aval.weak_type), aval.sharding)

    @classmethod
    def from_array(cls, x, device):
        """A device copy of the concrete array `x` on the GPU `device`."""
        from ember._mlir._mlir_libs import _ember_runtime

        if isinstance(x, GpuArray) and x.device == device:
            return x
        buf = _ember_runtime.DeviceBuffer.from_host(x._value)
        return cls(buf, x.aval.update(sharding=SingleDeviceSharding(device)))

    @property
    def _value(self):
        host = _host_value.__get__(self)
        if host is None:
            host = self._buffer.to_host().view(self.aval.dtype).reshape(self.aval.shape)
            host.flags.writeable = False
            _host_value.__set__(self, host)
        return host

    def __reduce__(self):
        return (Array, (np.array(self._value), self.weak_type))

    def unsafe_buffer_pointer(self):
        """The address of the array's buffer in the GPU's memory."""
        return self._buffer.pointer

    def block_until_ready(self):
        """Waits for the GPU work that computes this array (jitted calls on
        GPU arrays return with their kernels in flight, as JAX's dispatch
        is asynchronous); raises the GPU's first error."""
        if _host_value.__get__(self) is None:
            from ember._mlir._mlir_libs import _ember_runtime

            _ember_runtime.cuda_synchronize()
        return self


class Tracer(Value):
    """A traced value. Outside `jit` (a concrete trace, see `trace_function`)
    it also knows how to compute its value: `src` is ("value", Array),
    ("same", another Value) or ("op", primitive, args, params, out_avals,
    index), evaluated on demand by `concrete()` (Python control flow on
    values under transformations outside `jit`); None inside `jit`."""

    __slots__ = ("aval", "value", "_trace", "src")

    def __init__(self, trace, value, aval, src=None):
        self._trace = trace
        self.value = value
        self.aval = aval
        self.src = src

    def concrete(self):
        """This tracer's value as an Array, or None when it has none (inside
        `jit`, a batched value, the result of a region op)."""
        return _concretize(self)

    def __repr__(self):
        # JAX's form; `~` marks a weak type. In a vmap's body, a value that
        # depends on a mapped argument is JAX's VmapTracer; in a shard_map
        # body outside jit, each device's value (lanes_repr_hook).
        if lanes_repr_hook is not None and (text := lanes_repr_hook(self)) is not None:
            return text
        lanes = getattr(self._trace, "vmap_lanes", None)
        if lanes is not None and self._depends_on_arguments(lanes[1]):
            batched = self.aval.update(shape=(lanes[0],) + tuple(self.aval.shape))
            return f"VmapTracer(aval={self.aval.str_short()}, batched={batched.str_short()})"
        return f"JitTracer({'~' if self.aval.weak_type else ''}{self.aval.str_short()})"

    def _depends_on_arguments(self, count, through_regions=True):
        """Whether this value is computed from the first `count` arguments
        of its trace's function (def-use chains in the traced IR; the
        arguments after them are values it closes over). An op with regions
        may read the arguments inside them: with `through_regions` only its
        operands count, otherwise it is taken to depend on them."""
        block = getattr(self._trace, "block", None)
        seen, stack = set(), [self.value]
        while stack:
            v = stack.pop()
            if v is None or id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(v, ir.BlockArgument):
                if v.owner == block and v.arg_number < count:
                    return True
                continue
            op = v.owner if isinstance(v.owner, ir.Operation) else v.owner.operation
            if len(op.regions) and not through_regions:
                return True
            stack.extend(op.operands)
        return False

    def _concretization_error(self, what, cls=ConcretizationTypeError):
        # JAX's first line, then where and why.
        shape = self.aval.str_short()
        first = {"bool()": f"Attempted boolean conversion of traced array with shape {shape}.",
                 "__index__": f"The __index__() method was called on traced array with "
                              f"shape {shape}"}.get(
            what, f"Abstract tracer value encountered where concrete value is expected: "
                  f"traced array with shape {shape}")
        return cls(
            f"{first}\nThe problem arose with {what} at {where()}: the value depends on a "
            f"traced function argument; use lax.cond/lax.select for data-dependent control "
            f"flow, or mark the argument static with static_argnums.")

    def _concrete_or_raise(self, what, cls=ConcretizationTypeError):
        v = self.concrete()
        if v is None:
            raise self._concretization_error(what, cls)
        return v

    def __bool__(self):
        return bool(self._concrete_or_raise("bool()", TracerBoolConversionError))

    def __int__(self):
        return int(self._concrete_or_raise("int()"))  # (JAX: ConcretizationTypeError)

    def __index__(self):
        return self._concrete_or_raise("__index__", TracerIntegerConversionError).__index__()

    def __float__(self):
        return float(self._concrete_or_raise("float()"))

    def __complex__(self):
        return complex(self._concrete_or_raise("complex()"))

    def item(self, *a):
        return self._concrete_or_raise("item()").item(*a)

    def tolist(self):
        return self._concrete_or_raise("tolist()").tolist()

    def __array__(self, *a, **k):
        raise TracerArrayConversionError(
            f"The numpy.ndarray conversion method __array__() was called on a traced "
            f"array {self.aval.str_short()} (at {where()}). NumPy cannot see values "
            f"inside a traced function; use ember.numpy instead of numpy there.")

    def __hash__(self):
        raise TypeError("unhashable type: 'Tracer'")

    def block_until_ready(self):
        return self


# Set by shard_map.py: the per-device text of a value in an eager
# shard_map's body, or None.
lanes_repr_hook = None


def _concretize(x):
    """The concrete Array of a Value, evaluating the primitives recorded in
    tracers' `src` (memoized, without recursion); None if it has none."""
    if not isinstance(x, Tracer):
        return x
    stack = [x]
    while stack:
        t = stack[-1]
        src = t.src
        if src is None:
            return None
        if src[0] == "value":
            stack.pop()
            continue
        if src[0] in ("lanes", "fn"):
            return None  # values per device lane (shard_map._lanes_value)
        deps = [src[1]] if src[0] == "same" else src[2]
        waiting = [d for d in deps if isinstance(d, Tracer) and
                   (d.src is None or d.src[0] != "value")]
        if any(d.src is None for d in waiting):
            t.src = None  # not computable: remember, for the next question
            return None
        if waiting:
            stack.extend(waiting)
            continue
        stack.pop()
        if src[0] == "same":
            t.src = ("value", _concrete_of(src[1]))
            continue
        _, prim, args, params, out_avals, index = src
        try:
            outs = eager_apply(prim, [_concrete_of(a) for a in args], params, out_avals)
        except Exception:  # noqa: BLE001 (an op that cannot run alone: no value)
            t.src = None
            return None
        t.src = ("value", outs[index])
    return x.src[1]


def _concrete_of(v):
    return v.src[1] if isinstance(v, Tracer) else v


# --------------------------------------------------------------------------
# Traces
# --------------------------------------------------------------------------

class _ThreadStack(threading.local):
    """The stack of active traces, one per Python thread (as JAX keeps its
    trace state): threads trace and call compiled functions independently.
    Behaves as the list it holds."""

    def __init__(self):
        self.items = []

    def append(self, x):
        self.items.append(x)

    def pop(self):
        return self.items.pop()

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    def __bool__(self):
        return bool(self.items)

    def __iter__(self):
        return iter(self.items)


_trace_stack = _ThreadStack()


class Trace:
    """Builds one func.func of ember ops.

    A sub-trace (``parent`` given) builds a private function in its parent's
    module, the callee of a transformation op; tracers of enclosing traces that
    it uses become extra arguments (closure conversion), listed in ``captured``.
    """

    def __init__(self, name="main", parent=None, concrete=False):
        self.ctx = context()
        self.parent = parent
        # Whether values are concrete here (outside `jit`): results of
        # primitives record how to compute them. A sub-trace is concrete in a
        # concrete parent, or (`concrete`) when its arguments are values
        # known before the enclosing trace began (the primals of a `vjp` or
        # `linearize` taken outside `jit`, replayed under it).
        self.concrete = concrete if parent is None else parent.concrete or concrete
        self.captured = []  # outer tracers, in the order of the extra arguments
        self._capture_args = {}
        _init_ref_state(self)
        if parent is None:
            self.name = name
            with self.ctx, ir.Location.unknown():
                self.module = ir.Module.create()
            self.root = self
            self._counter = 0
        else:
            self.root = parent.root
            self.module = parent.module
            self.root._counter += 1
            self.name = f"{name}_{self.root._counter}"
        self.block = None
        self.func_op = None

    def begin(self, in_avals, sources=None):
        """The argument tracers; `sources` (in a concrete trace) gives the
        Value each argument equals, or None."""
        in_types = [mlir_type(a) for a in in_avals]
        with self.ctx, ir.Location.unknown():
            attrs = {"sym_name": ir.StringAttr.get(self.name),
                     "function_type": ir.TypeAttr.get(ir.FunctionType.get(in_types, []))}
            if self.parent is not None:
                attrs["sym_visibility"] = ir.StringAttr.get("private")
            self.func_op = ir.Operation.create(
                "func.func", regions=1, attributes=attrs,
                ip=ir.InsertionPoint(self.module.body))
            self.block = self.func_op.regions[0].blocks.append(*in_types)
        self.arg_specs = [sym_spec(a.shape) for a in in_avals]
        sources = sources if self.concrete and sources else [None] * len(in_avals)
        return [Tracer(self, self.block.arguments[i], a, _source(s))
                for i, (a, s) in enumerate(zip(in_avals, sources))]

    # Set on the trace of a function `checkpoint` applies a policy to: ops
    # whose results the policy saves are marked `ember.saveable`.
    remat_policy = None

    def location(self):
        """The user's line: `"file":line:col` (the column of the expression,
        as Python reports it) named by the function's qualified name."""
        where = user_position()
        if where is None:
            return ir.Location.unknown(self.ctx)
        file, line, col, code = where
        return ir.Location.name(getattr(code, "co_qualname", code.co_name),
                                ir.Location.file(file, line, col, self.ctx), self.ctx)

    def emit(self, name, operands, result_avals, attributes=None, regions=0):
        with self.ctx, self.location() as loc:
            op = ir.Operation.create(
                name, results=[mlir_type(a) for a in result_avals],
                operands=list(operands), attributes=attributes or {}, loc=loc,
                regions=regions, ip=ir.InsertionPoint(self.block))
            if not regions:
                _verify_emitted(op, name)
            _annotate(op, result_avals, attributes)
            _sym_attrs_tls.pending.clear()
        return [Tracer(self, op.results[i], a) for i, a in enumerate(result_avals)]

    def _is_ancestor(self, trace):
        t = self.parent
        while t is not None:
            if t is trace:
                return True
            t = t.parent
        return False

    def to_value(self, x):
        """An ir.Value for an operand of this trace (embedding constants and
        capturing tracers of enclosing traces as extra arguments)."""
        if isinstance(x, Tracer):
            if x._trace is self:
                return x.value
            if self._is_ancestor(x._trace) or (
                    getattr(self, "capture_active", False) and
                    any(x._trace is t for t in _trace_stack)):
                arg = self._capture_args.get(id(x))
                if arg is None:
                    with self.ctx:
                        arg = self.block.add_argument(mlir_type(x.aval),
                                                      ir.Location.unknown(self.ctx))
                    self._capture_args[id(x)] = arg
                    self.captured.append(x)
                    if self.func_op is not None:
                        self.arg_specs.append(sym_spec(x.aval.shape))
                return arg
            raise UnexpectedTracerError(below_location(
                "Encountered an unexpected tracer: a traced value escaped from the function "
                "that created it (leaked tracer)"))
        return self.emit("ember.constant", [], [x.aval],
                         {"value": dense_attr(x._value, x.aval)})[0].value

    def finish(self, outs):
        vals = [self.to_value(o) for o in outs]
        with self.ctx, ir.Location.unknown():
            ir.Operation.create("func.return", operands=vals, ip=ir.InsertionPoint(self.block))
            ftype = ir.FunctionType.get([a.type for a in self.block.arguments],
                                        [v.type for v in vals])
            self.func_op.attributes["function_type"] = ir.TypeAttr.get(ftype)
            specs = getattr(self, "arg_specs", [])
            if any(specs) and len(specs) == len(self.block.arguments):
                self.func_op.attributes["ember.sym_args"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get(x) for x in specs])
        return self.module


class RegionTrace(Trace):
    """Traces into a block of a region op (e.g. the body of ember.while).
    Regions are not isolated: values of enclosing traces are used directly
    (through the parent, which captures them if it is a function). Their
    arguments are abstract, as in JAX (a loop body runs many times)."""

    def __init__(self, parent, block):
        if (refuse := getattr(parent, "refuse_region", None)) is not None:
            refuse()  # a trace that builds its control flow otherwise
        self.ctx = context()
        self.parent = parent
        self.concrete = parent.concrete
        self.root = parent.root
        self.module = parent.module
        self.name = parent.name
        self.block = block
        self.func_op = None
        self.captured = []
        self._capture_args = {}
        # A checkpoint's policy marks ops in its loops too (ember-autodiff
        # keeps those of counted loops for every iteration).
        self.remat_policy = getattr(parent, "remat_policy", None)
        _init_ref_state(self)

    def to_value(self, x):
        if isinstance(x, Tracer) and x._trace is not self and self._is_ancestor(x._trace):
            return self.parent.to_value(x)
        return super().to_value(x)

    def finish(self, outs):
        raise TypeError("region traces end with a terminator, not a return")


def _init_ref_state(trace):
    """Mutable refs (`state`) a trace can use: `refs` created or threaded
    here (by id), `lifted` the (ref, value outside) pairs that became extra
    arguments of this function, `written` the ids of refs written here."""
    # Weakly: a ref nobody can reach any more is not threaded through loops.
    trace.refs = weakref.WeakValueDictionary()
    trace.lifted = []
    trace.written = set()


def _finish_refs(trace, outs, ref_outs):
    """Ends the refs lifted into `trace`: with `ref_outs` (a list), the final
    values of those written here become extra results (the refs are listed
    in it; the caller binds them to the call's results); the refs hold their
    outside values again either way."""
    extra = []
    for ref, _ in trace.lifted:
        if ref_outs is not None and id(ref) in trace.written:
            ref_outs.append(ref)
            extra.append(as_value(ref._value))
    return list(outs) + extra


def _restore_refs(trace):
    for ref, saved in reversed(trace.lifted):
        ref._value = saved


def _check_outputs(outs, what):
    for o in outs:
        if getattr(o, "_is_ref", False):
            raise type_error(f"{what} returned a mutable array reference of type {o!r}, "
                             "but mutable array references cannot be returned")


def _source(v):
    """The `src` of a tracer equal to `v` (None when `v` has no value)."""
    if v is None:
        return None
    if isinstance(v, Tracer):
        return None if v.src is None else ("same", v)
    return ("value", v)


def trace_region(block, fun, arg_avals, terminator="ember.yield"):
    """Traces `fun` on the block's arguments and terminates the block with
    `terminator` on its results. Returns the result avals."""
    trace = RegionTrace(current_trace(), block)
    _trace_stack.append(trace)
    try:
        args = [Tracer(trace, block.arguments[i], a) for i, a in enumerate(arg_avals)]
        outs = [as_value(o) for o in fun(*args)]
        vals = [trace.to_value(o) for o in outs]
        with trace.ctx, ir.Location.unknown():
            ir.Operation.create(terminator, operands=vals, ip=ir.InsertionPoint(block))
    finally:
        _trace_stack.pop()
    return [o.aval for o in outs]


def current_trace():
    return _trace_stack[-1] if _trace_stack else None


# Per thread: the trace stacks `ensure_compile_time_eval` blocks set aside
# (innermost last; see `compile_time_eval`).
_hidden = threading.local()


def find_trace(args):
    """The trace an op on `args` belongs to: the innermost active trace when
    any argument is traced (outer tracers are captured by it), else None.
    Inside an `ensure_compile_time_eval` block, a tracer of a trace the block
    set aside stages the op into that stack's innermost trace."""
    found = False
    for a in args:
        if isinstance(a, Tracer):
            if not any(a._trace is t for t in _trace_stack):
                for saved in reversed(getattr(_hidden, "stacks", ())):
                    if any(a._trace is t for t in saved) and not _trace_stack.items:
                        return saved[-1]
                raise UnexpectedTracerError(below_location(
                    "Encountered an unexpected tracer: a traced value was used outside the "
                    "function that created it (leaked tracer)"))
            found = True
    return _trace_stack[-1] if found else None


@contextlib.contextmanager
def compile_time_eval():
    """The thread's trace stack set aside for the block, so that ops on
    concrete values run at once as outside any trace, while ops on the
    set-aside traces' tracers are still staged into them (`find_trace`)."""
    saved = _trace_stack.items
    stacks = _hidden.__dict__.setdefault("stacks", [])
    stacks.append(saved)
    _trace_stack.items = []
    try:
        yield
    finally:
        _trace_stack.items = saved
        stacks.pop()


# --------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------


class Primitive:
    """An ember op with a Python shape rule and an emitter."""

    def __init__(self, name, abstract_eval, emit=None, multiple_results=False):
        self.name = name
        self.abstract_eval = abstract_eval
        self._emit = emit
        self.multiple_results = multiple_results

    def __repr__(self):
        return self.name

    def bind(self, *args, **params):
        args = [as_value(a) for a in args]
        vma = None
        if any(a.aval.vma for a in args):
            # Inside shard_map: values the same on every lane meet varying
            # ones through an explicit pvary (summed in reverse mode).
            args, vma = match_vma(args)
        out_avals = self.abstract_eval(*[a.aval for a in args], **params)
        if not isinstance(out_avals, (list, tuple)):
            out_avals = [out_avals]
        if vma is not None:
            out_avals = [a.update(vma=vma) for a in out_avals]
        if any(a.aval.sharding is not None for a in args):
            from .sharding_rules import propagate

            out_avals = propagate(self, args, out_avals, params)
        trace = find_trace(args) or current_trace()
        if trace is None:
            outs = eager_apply(self, args, params, out_avals)
        else:
            vals = [trace.to_value(a) for a in args]
            if self._emit is not None:
                outs = self._emit(trace, vals, out_avals, **params)
            else:
                outs = trace.emit("ember." + self.name, vals, out_avals)
            if trace.remat_policy is not None:
                _mark_saveable(trace, self, args, params, outs)
            if trace.concrete and all(not isinstance(a, Tracer) or a.src is not None
                                      for a in args):
                for i, o in enumerate(outs):
                    o.src = ("op", self, args, params, out_avals, i)
        result = outs if self.multiple_results else outs[0]
        if bind_hooks and not getattr(_hooks_off, "depth", 0):
            for hook in bind_hooks:
                hook(self, args, params, result)
        return result


# Called after every primitive application with (primitive, arguments,
# params, result): checkify's automatic checks (checkify.py).
bind_hooks = []
_hooks_off = threading.local()


class machinery:
    """A `with` block of ops Ember's own machinery applies (a scan reading
    row i of its `xs`): not the user's, so `bind_hooks` do not see them."""

    def __enter__(self):
        _hooks_off.depth = getattr(_hooks_off, "depth", 0) + 1

    def __exit__(self, *exc):
        _hooks_off.depth -= 1


def in_machinery():
    """Whether ops are being applied by Ember's machinery (`machinery`)."""
    return getattr(_hooks_off, "depth", 0) > 0


def _mark_saveable(trace, prim, args, params, outs):
    """Marks the ops defining `outs` `ember.saveable` when the checkpoint
    policy of `trace` saves this application of `prim` (JAX's policy
    signature: prim, input avals, params)."""
    if not policy_saves(trace.remat_policy(prim, *[a.aval for a in args], **params)):
        return
    for o in outs:
        if isinstance(o.value, ir.OpResult):
            o.value.owner.attributes["ember.saveable"] = ir.UnitAttr.get(trace.ctx)


class _RematCase:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


# What a policy may return besides a bool (`jax.ad_checkpoint`).
Saveable = _RematCase("Saveable")
Recompute = _RematCase("Recompute")


class Offloadable(collections.namedtuple("Offloadable", ["src", "dst"])):
    """Saved in another memory (`save_and_offload_only_these_names`); Ember
    has one memory per device, so it is saved."""


def policy_saves(decision):
    if decision is Recompute:
        return False
    return decision is Saveable or isinstance(decision, Offloadable) or bool(decision)


def match_vma(args):
    """`args` with every value varying over the union of their varying mesh
    axes (installed by `parallel`, which owns pvary), and that union."""
    return _match_vma_hook(args)


_match_vma_hook = None

# `jit`, installed by api.py (which owns it; core is below it): what the
# elementwise jnp functions run through outside any trace.
jit_hook = None


def on_device(x, device):
    """`x` placed as a `device=` argument asks, through `device_put`
    (installed by `api`, which owns it). None: the default device, when it is
    a GPU (`default_device(gpu)`, or the GPU named first in JAX_PLATFORMS),
    for a new concrete array; otherwise where it is."""
    if device is None:
        if not isinstance(x, Array) or isinstance(x, GpuArray):
            return x
        device = devices.default_gpu()
        if device is None:
            return x
    return device_put_hook(x, device)


device_put_hook = None


def with_out_sharding(x, sharding):
    """`x` with the sharding an `out_sharding=` argument asked for
    (installed by `api`, which owns device_put)."""
    return _out_sharding_hook(x, sharding)


_out_sharding_hook = None


def as_value(x):
    if isinstance(x, (Array, Tracer)):
        return x
    if hasattr(x, "__jax_array__"):
        # JAX's protocol for array-like objects (a Pallas ref reads as its
        # whole value).
        return as_value(x.__jax_array__())
    if isinstance(x, DimExpr):
        return dimension_as_value(x)
    return asarray_concrete(x)


def asarray_concrete(x, dtype=None):
    """A concrete Array from Python/NumPy data with JAX's dtype rules."""
    weak = False
    if isinstance(x, (bool, np.bool_)) and not isinstance(x, np.ndarray):
        arr = np.asarray(x, dtype=np.bool_)
    elif isinstance(x, int) and not isinstance(x, np.integer):
        weak = True
        if dtype is None:
            dt = dtypes.default_int()
            info = np.iinfo(dt)
            if not info.min <= x <= info.max:
                raise OverflowError(f"Python int {x} too large to convert to {dt.name}")
        else:
            # In the target type (a uint32 holds 2**31; NumPy's OverflowError
            # for a value it cannot hold, as JAX's).
            dt = dtypes.canonicalize_dtype(dtype)
        arr = np.asarray(x, dtype=dt)
    elif isinstance(x, float) and not isinstance(x, np.generic):  # (np.float64: strong)
        weak = True
        arr = np.asarray(x, dtype=dtypes.default_float())
    elif isinstance(x, complex) and not isinstance(x, np.generic):
        weak = True
        arr = np.asarray(x, dtype=dtypes.default_complex())
    else:
        arr = np.asarray(x)
        if arr.dtype == object:
            raise TypeError(f"cannot convert {type(x).__name__} to an Ember array")
        if arr.dtype.kind in "US":
            raise TypeError(f"strings are not valid Ember array data: {x!r}")
        arr = arr.astype(dtypes.canonicalize_dtype(arr.dtype), copy=False)
    if dtype is not None:
        arr = arr.astype(dtypes.canonicalize_dtype(dtype))
        weak = False
    return Array(arr, weak_type=weak)


# --------------------------------------------------------------------------
# Tracing whole functions
# --------------------------------------------------------------------------


def trace_subfunction(fun, in_avals, name="f", sources=None, ref_outs=None,
                      differentiated=False, policy=None, concrete=False):
    """Traces `fun` (flat args -> flat outputs) into a private function of the
    current module; `sources`: the Values the caller passes (their concrete
    values are the arguments' outside `jit`). Returns (symbol name,
    out_avals, captured outer tracers). Refs of enclosing traces that `fun`
    writes are appended to `ref_outs` (when given), their final values being
    the last results. `policy`: a checkpoint policy marking the ops whose
    results it saves. `concrete`: the sources' values count as concrete even
    under an abstract parent (see `Trace`)."""
    parent = current_trace()
    trace = Trace(name, parent, concrete=concrete)
    # Traced for jvp/vjp: custom derivative rules inside are needed (see
    # `ad.differentiating`).
    trace.differentiated = differentiated
    trace.n_inputs = len(in_avals)  # (the values it closes over come after)
    trace.remat_policy = policy
    _trace_stack.append(trace)
    try:
        args = trace.begin(in_avals, sources)
        outs = fun(*args)
        _check_outputs(outs, f"a function traced for a transformation ({name})")
        outs = _finish_refs(trace, [as_value(o) for o in outs], ref_outs)
        trace.finish(outs)
    finally:
        _trace_stack.pop()
        _restore_refs(trace)
    return trace.name, [o.aval for o in outs], list(trace.captured)


def find_function(name):
    """The func.func `name` of the module being traced (a sub-trace's)."""
    for op in current_trace().root.module.body.operations:
        op = op.operation
        if op.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    raise KeyError(name)


def trace_function(fun, in_avals, concrete=None, lifted=None, captured=None):
    """Traces `fun` (flat args -> flat outputs) into a module; returns (module,
    out_avals). With `concrete` (the argument Arrays; transformations outside
    `jit`), tracers know their values, so Python control flow on them works
    and the module records the path taken. Refs from outside that `fun` uses
    become extra arguments after `in_avals` (their values on entry) and
    extra results (their values on exit); they are appended to `lifted`,
    which must be given when `fun` may use refs. With `captured` (a list),
    tracers of the active traces that `fun` closes over become arguments
    after those (appended to `captured`; the module is then evaluated on
    them inside those traces, as `sparsify` does)."""
    trace = Trace(concrete=concrete is not None)
    trace.capture_active = captured is not None
    _trace_stack.append(trace)
    ref_outs = []
    try:
        args = trace.begin(in_avals, concrete)
        outs = fun(*args)
        _check_outputs(outs, "a function traced for jit")
        outs = [as_value(o) for o in outs]
        outs += [as_value(ref._value) for ref, _ in trace.lifted]
        module = trace.finish(outs)
        ref_outs = [ref for ref, _ in trace.lifted]
    finally:
        _trace_stack.pop()
        _restore_refs(trace)
    if ref_outs and lifted is None:
        raise type_error("a mutable array reference (Ref) from outside was used by a "
                         "function that cannot update it here")
    if lifted is not None:
        lifted.extend(ref_outs)
    if captured is not None:
        captured.extend(trace.captured)
    return module, [o.aval for o in outs]


# Compiled code by program: the traced module's text (ops, types and
# constants; not locations) with its input avals, and the same entries by
# the module's bytecode (which has the locations). Transformations outside
# `jit` trace a new function object on every call, so this is what makes a
# repeated `grad(f)(x)` compile nothing. Bounded (least recently used goes
# first); entries hold no reference to the user's functions.
_program_cache = collections.OrderedDict()
_bytecode_index = collections.OrderedDict()


def compile_function(fun, in_avals, concrete=None, lifted=None, opt_level=None,
                     fp_contract=True, target=None, ref_args=None, partition=None):
    """The Executable of `fun` traced on `in_avals` (see `trace_function`;
    refs appended to `lifted` are extra arguments and results), its code
    optimized at `opt_level`, FMAs contracted with `fp_contract` (see
    `Executable`). `ref_args` (the positions of `in_avals` that are Ref
    arguments, whose final values `fun` returns after its own results):
    compiled for the CPU, the Ref arguments and the lifted refs become
    `!ember.ref` arguments updated in place (`refs_in_place`), and the
    Executable's `ref_weak_types` is set. `partition` (an `spmd.Plan`):
    the program of this process of an MPI job, which takes its blocks of
    the arguments (unless `fun` uses Refs from outside, which `lifted`
    then shows: the program takes the whole arrays)."""
    refs = []
    module, out_avals = trace_function(fun, in_avals, concrete, refs)
    if refs:
        partition = None  # (Refs from outside: the replicated program.)
    whole = None
    if partition is not None:
        if partition.threads:
            with context():
                whole = (ir.Module.parse(module.operation.get_asm(enable_debug_info=True)),
                         in_avals)
        out_splits = partition.out_splits(out_avals)
        partition.annotate(module, out_splits)
        in_avals = partition.local_avals(in_avals)
    if refs:
        if lifted is None:
            raise type_error("a mutable array reference (Ref) from outside was used by a "
                             "function that cannot update it here")
        lifted.extend(refs)
        in_avals = list(in_avals) + [r._value.aval for r in refs]
    ref_weak_types = None
    if ref_args is not None and (ref_args or refs) and target is None:
        positions = list(ref_args) + list(range(len(in_avals) - len(refs), len(in_avals)))
        if all(in_avals[i].sharding is None for i in positions):
            ref_weak_types = tuple(a.weak_type for a in out_avals[-len(positions):])
            refs_in_place(module, positions)
            out_avals = out_avals[:-len(positions)]
    # First by MLIR bytecode, five times cheaper to write than the text but
    # with the locations (a program traced again from the same lines); then
    # by the text (the same program from other lines).
    buf = io.BytesIO()
    module.operation.write_bytecode(buf)
    avals = tuple(in_avals)
    if opt_level is not None and opt_level != compiler.OPT_LEVEL:
        avals += (("opt_level", opt_level),)
    if not fp_contract:
        avals += (("fp_contract", False),)
    if target is not None:
        avals += (("target", target.name),)
    exe = _lru_get(_bytecode_index, (buf.getvalue(), avals))
    if exe is None:
        text = str(module)
        exe = _lru_get(_program_cache, (text, avals))
        if exe is None:
            local_out = out_avals if partition is None else \
                [a.update(shape=partition.local_aval(a, s).shape)
                 for a, s in zip(out_avals, out_splits)]
            exe = Executable(module, in_avals, local_out, text=text, opt_level=opt_level,
                             fp_contract=fp_contract, target=target)
            if partition is not None:
                exe.out_avals, exe.out_splits = list(out_avals), out_splits
                exe.partition_kind = partition.record(module)
                if whole is not None and exe.partition_kind == "gathered":
                    # (On the devices' threads the program would gather the
                    # arguments and every device compute the whole: the
                    # one program instead.)
                    exe = Executable(whole[0], whole[1], out_avals, opt_level=opt_level,
                                     fp_contract=fp_contract, target=target)
            _lru_put(_program_cache, (text, avals), exe)
        _lru_put(_bytecode_index, (buf.getvalue(), avals), exe)
    if ref_weak_types is not None:
        exe = copy.copy(exe)
        exe.ref_weak_types = ref_weak_types
    if [(a.sharding, a.weak_type) for a in exe.out_avals] != \
            [(a.sharding, a.weak_type) for a in out_avals]:
        # One program, traced again with other result shardings or weak
        # types (neither is in the IR: `x * 2.0` and `x * float32(2.0)` are
        # one program whose result is weak in one trace only): the same code
        # with this trace's result types.
        exe = copy.copy(exe)
        exe.out_avals = list(out_avals)
    return exe


def refs_in_place(module, positions):
    """Makes the arguments at `positions` of the traced function `!ember.ref`
    arguments: their values on entry are one `ember.ref_get`, and the last
    len(positions) results (their values on exit, in the same order) become
    `ember.ref_set`s where they changed. The codegen then updates each
    ref's buffer in place (docs/spec.md, "Refs")."""
    with context(), ir.Location.unknown():
        func = module.body.operations[0]
        block = func.regions[0].blocks[0]
        ret = list(block.operations)[-1]
        gets = []
        for pos in positions:
            arg = block.arguments[pos]
            tensor_type = arg.type
            arg.set_type(ir.Type.parse(f"!ember.ref<{tensor_type}>"))
            get = ir.Operation.create("ember.ref_get", results=[tensor_type], operands=[arg],
                                      ip=ir.InsertionPoint.at_block_begin(block))
            arg.replace_all_uses_except(get.result, get)
            gets.append((arg, get.result))
        values = list(ret.operands)
        keep, finals = values[:len(values) - len(positions)], values[len(values) - len(positions):]
        for (arg, entry), final in zip(gets, finals):
            if final != entry:
                ir.Operation.create("ember.ref_set", operands=[arg, final],
                                    ip=ir.InsertionPoint(ret))
        ir.Operation.create("func.return", operands=keep, ip=ir.InsertionPoint(ret))
        ret.erase()
        ftype = ir.FunctionType.get([a.type for a in block.arguments], [v.type for v in keep])
        func.attributes["function_type"] = ir.TypeAttr.get(ftype)


def _lru_get(cache, key):
    exe = cache.get(key)
    if exe is not None:
        cache.move_to_end(key)
    return exe


def _lru_put(cache, key, exe):
    cache[key] = exe
    while len(cache) > max(config.ember_program_cache_size, 0):
        cache.popitem(last=False)


# One-op programs of eager primitives, by (primitive, avals, parameters),
# and programs of jnp functions run outside traces (`call_compiled`):
# bounded like the program cache (indexing arrays of ever new shapes would
# otherwise keep a program per shape). Their code is compiled in tiers, as
# JITs do, where that cannot change a result: a program that computes the
# same bits at every LLVM level (data movement, sorts, comparisons, integer
# arithmetic: `compiler.exact_at_any_level`) is first compiled without
# LLVM's optimizer (three to six times faster to compile; its loops run up
# to ten times slower) and, called `_TIER_UP_CALLS` times, compiled again at
# the full level. Others (float products and reductions, whose FMAs and
# partial sums the levels do differently) compile at the full level at once,
# as do programs on more than `_LARGE_ELEMENTS` elements (their run time
# outweighs the compile); programs on at most `_SMALL_ELEMENTS` stay in the
# first tier (the difference is below a dispatch's cost). design.md, "Eager
# ops".
_eager_cache = collections.OrderedDict()
# call_compiled's functions run on the GPU: a `jit` of each, by key; and
# single primitives there (eager_apply): their executables.
_gpu_programs = collections.OrderedDict()
_TIER_UP_CALLS = 8
_SMALL_ELEMENTS = 64
_LARGE_ELEMENTS = 1 << 16


@on_change
def _clear_caches():
    _eager_cache.clear()
    _gpu_programs.clear()
    _type_cache.clear()
    _program_cache.clear()
    _bytecode_index.clear()


def _param_key(params):
    items = []
    for k, v in sorted(params.items()):
        if isinstance(v, list):
            v = tuple(v)
        if isinstance(v, np.dtype):
            v = ("dtype", v.str, v.name)
        items.append((k, v))
    return tuple(items)


class _EagerProgram:
    """An eager program's compiled code, what its builder returned with it,
    and its calls until it tiers up (-1: it never does, or did)."""

    __slots__ = ("exe", "info", "calls")

    def __init__(self, exe, info, calls):
        self.exe, self.info, self.calls = exe, info, calls


def _tiered(key, in_avals, build):
    """The `_EagerProgram` of `key`, built by `build(opt_level)` -> (Executable,
    info) in the tiers described above."""
    entry = _lru_get(_eager_cache, key)
    if entry is None:
        size = max([_aval_size(a) for a in in_avals], default=0)
        tiered = compiler.OPT_LEVEL > 0 and size <= _LARGE_ELEMENTS
        exe, info = build(compiler.FIRST_TIER if tiered else None)
        size = max([size] + [_aval_size(a) for a in exe.out_avals])
        tiered = exe.opt_level == 0 and compiler.OPT_LEVEL > 0
        if tiered and size > _LARGE_ELEMENTS:  # (small inputs, large results)
            (exe, info), tiered = build(None), False
        entry = _EagerProgram(exe, info, 0 if tiered and size > _SMALL_ELEMENTS else -1)
        _lru_put(_eager_cache, key, entry)
    elif entry.calls >= 0:
        entry.calls += 1
        if entry.calls >= _TIER_UP_CALLS:
            entry.exe, entry.info = build(None)
            entry.calls = -1
    return entry


def _runs_on_gpu(arrays):
    """Whether an eager computation on `arrays` runs on the GPU: one of them
    is there, or the GPU is the default device (as in JAX)."""
    return any(isinstance(a, GpuArray) for a in arrays) or devices.default_gpu() is not None


def _eager_on_gpu(prim, args, params):
    """`prim` applied to `args` as a program compiled for the GPU, its
    results left there; None when the cuda target cannot compile it
    (NotImplementedError: a runtime entry it does not provide yet), which is
    remembered, and the CPU computes it. Compiled and run directly (not
    through `jit`): also under `disable_jit`, and inside a trace asking for
    a tracer's concrete value."""
    key = ("eager", prim.name, tuple(a.aval for a in args), _param_key(params))
    exe = _lru_get(_gpu_programs, key)
    if exe is False:
        return None
    if exe is None:
        def fun(*xs):
            r = prim.bind(*xs, **params)
            return list(r) if prim.multiple_results else [r]
        try:
            exe = gpu_compile_hook(fun, [a.aval for a in args])
        except NotImplementedError:
            exe = False
        _lru_put(_gpu_programs, key, exe)
        if exe is False:
            return None
    return gpu_run_hook(exe, args)


# Installed by api.py (which owns the GPU executables): compiles a flat
# function for the GPU the arrays' avals say, and runs such a program.
gpu_compile_hook = None
gpu_run_hook = None


def eager_apply(prim, args, params, out_avals):
    if _runs_on_gpu(args):
        # One primitive on the GPU, as JAX runs it: a program compiled for
        # the GPU, whose results stay in device memory.
        outs = _eager_on_gpu(prim, args, params)
        if outs is not None:
            # (Weak types as the primitive gives them, e.g. of Python scalars'
            # results; a compiled program's results are strongly typed.)
            outs = [o if o.aval.weak_type == a.weak_type else
                    GpuArray(o._buffer, o.aval.update(weak_type=a.weak_type))
                    for o, a in zip(outs, out_avals)]
            if config.jax_debug_nans or config.jax_debug_infs:
                check_special(prim.name, [np.asarray(o) for o in outs])
            return outs
    avals = tuple(a.aval for a in args)

    def build(opt_level):
        def fun(*xs):
            r = prim.bind(*xs, **params)
            return list(r) if prim.multiple_results else [r]
        return compile_function(fun, avals, opt_level=opt_level), None

    exe = _tiered((prim.name, avals, _param_key(params)), avals, build).exe
    outs = exe([a._value for a in args])
    if config.jax_debug_nans or config.jax_debug_infs:
        check_special(prim.name, outs)
    return [Array(o, weak_type=a.weak_type) if a.sharding is None else
            Array.with_sharding(o, a.weak_type, a.sharding) for o, a in zip(outs, out_avals)]


def call_compiled(fun, key, arrays):
    """`fun(*arrays)` for concrete, unsharded or GPU `arrays` (a pytree of
    arrays out), run as one eager program compiled in tiers, or on the GPU
    (an operand there, or the default device) as one jitted program; `key`
    names `fun` with whatever it closes over (its static arguments). How
    jnp's functions of several primitives run outside traces."""
    if _runs_on_gpu(arrays):
        # On the GPU (an operand there, or the default device): one jitted
        # program there, as JAX's jitted jnp functions.
        jitted = _lru_get(_gpu_programs, key)
        if jitted is None:
            jitted = jit_hook(fun)
            _lru_put(_gpu_programs, key, jitted)
        return jitted(*arrays)
    avals = tuple(a.aval for a in arrays)

    def build(opt_level):
        trees = []

        def flat(*xs):
            leaves, tree = tree_util.tree_flatten(fun(*xs))
            trees.append(tree)
            return leaves
        return compile_function(flat, avals, opt_level=opt_level), trees[-1]

    entry = _tiered((key, avals), avals, build)
    outs = entry.exe([a._value for a in arrays])
    if config.jax_debug_nans or config.jax_debug_infs:
        check_special(getattr(fun, "__name__", "fun"), outs)
    return tree_util.tree_unflatten(entry.info, [
        Array(o, weak_type=a.weak_type) for o, a in zip(outs, entry.exe.out_avals)])


def _aval_size(aval):
    """Elements of `aval` (symbolic dimensions count as large)."""
    n = 1
    for d in aval.shape:
        if not isinstance(d, int):
            return _LARGE_ELEMENTS + 1
        n *= d
    return n


def special_kind(values):
    """"nan" or "inf" when `jax_debug_nans`/`jax_debug_infs` asks and a
    floating-point value among `values` (NumPy arrays) is one, else None."""
    for v in values:
        v = np.asarray(v)
        if v.dtype.kind not in "fcV":  # (ml_dtypes' bfloat16 and float8s are "V")
            continue
        f = v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
        if config.jax_debug_nans and np.isnan(f).any():
            return "nan"
        if config.jax_debug_infs and np.isinf(f).any():
            return "inf"
    return None


def check_special(name, values):
    """JAX's debug_nans/debug_infs check of an op's results."""
    kind = special_kind(values)
    if kind is not None:
        raise FloatingPointError(f"invalid value ({kind}) encountered in {name}")

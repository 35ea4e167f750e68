"""`jax.ffi` for Ember: foreign functions written against XLA's FFI
(handlers compiled with the headers `xla/ffi/api/*.h`, called by XLA with an
`XLA_FFI_CallFrame`) run from Ember programs.

Ember is the XLA runtime here: it builds the call frame (arguments and
results as `XLA_FFI_Buffer`s, attributes sorted by name as the C API
requires) and gives the handler an `XLA_FFI_Api` table whose functions are
written below. The handler runs as a host callback (`callback.py`), so it
works eagerly, under `jit`, in loops and under `vmap` (per `vmap_method`),
and is not differentiable (JAX's rule: wrap it in `custom_jvp`/`custom_vjp`).
The C structures below restate the layout of XLA's stable FFI C API
(`xla/ffi/api/c_api.h`, API version 0.3) with ctypes; design.md, "FFI".
"""

import ctypes as C
import importlib.util
import os
import threading

import numpy as np

from . import callback, core, dtypes
from .errors import JaxRuntimeError

# --------------------------------------------------------------------------
# The C API's structures (field order and types as in c_api.h)
# --------------------------------------------------------------------------

API_MAJOR, API_MINOR = 0, 3


def _size(struct, last):
    """A struct's `struct_size` as the C API defines it: up to the end of
    the last field its version knows (`XLA_FFI_STRUCT_SIZE`), which need not
    be the struct's last field (the call frame's is `attrs`)."""
    field = getattr(struct, last)
    return field.offset + field.size


class _ByteSpan(C.Structure):
    _fields_ = [("ptr", C.c_void_p), ("len", C.c_size_t)]


class _ApiVersion(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("major_version", C.c_int), ("minor_version", C.c_int)]


class _Buffer(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("dtype", C.c_int), ("data", C.c_void_p), ("rank", C.c_int64),
                ("dims", C.POINTER(C.c_int64))]


class _List(C.Structure):  # XLA_FFI_Args and XLA_FFI_Rets
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("size", C.c_int64), ("types", C.POINTER(C.c_int)),
                ("items", C.POINTER(C.c_void_p))]


class _Attrs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("size", C.c_int64), ("types", C.POINTER(C.c_int)),
                ("names", C.POINTER(C.POINTER(_ByteSpan))), ("attrs", C.POINTER(C.c_void_p))]


class _CallFrame(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("api", C.c_void_p), ("ctx", C.c_void_p), ("stage", C.c_int),
                ("args", _List), ("rets", _List), ("attrs", _Attrs), ("future", C.c_void_p)]


class _Scalar(C.Structure):
    _fields_ = [("dtype", C.c_int), ("value", C.c_void_p)]


class _Array(C.Structure):
    _fields_ = [("dtype", C.c_int), ("size", C.c_size_t), ("data", C.c_void_p)]


class _ErrorCreateArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("message", C.c_char_p), ("errc", C.c_int)]


class _ErrorArgs(C.Structure):  # GetMessage (with `message`) and Destroy
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("error", C.c_void_p), ("message", C.c_void_p)]


class _CtxArgs(C.Structure):
    """The common head of the argument structs of the context functions
    (Stream_Get, ThreadPool_*, RunId_Get, DeviceOrdinal_Get, ...)."""
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("ctx", C.c_void_p)]


class _ScheduleArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("ctx", C.c_void_p), ("task", C.CFUNCTYPE(None, C.c_void_p)),
                ("data", C.c_void_p)]


class _NumThreadsArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("ctx", C.c_void_p), ("num_threads", C.POINTER(C.c_int64))]


class _RunIdArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("ctx", C.c_void_p), ("run_id", C.c_int64)]


class _OrdinalArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("ctx", C.c_void_p), ("device_ordinal", C.c_int32)]


_API_FUNCTIONS = ("Error_Create", "Error_GetMessage", "Error_Destroy", "Handler_Register",
                  "Stream_Get", "Type_Register", "ExecutionContext_Get", "State_Set",
                  "State_Get", "DeviceMemory_Allocate", "DeviceMemory_Free",
                  "ThreadPool_Schedule", "ThreadPool_NumThreads", "Future_Create",
                  "Future_SetAvailable", "Future_SetError", "RunId_Get", "DeviceOrdinal_Get")


class _Api(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("api_version", _ApiVersion), ("internal_api", C.c_void_p)] + \
        [(name, C.c_void_p) for name in _API_FUNCTIONS]


# Stages, argument/result/attribute kinds and error codes of the C API.
_EXECUTE = 3
_BUFFER = 1
_ATTR_ARRAY, _ATTR_DICT, _ATTR_SCALAR, _ATTR_STRING = 1, 2, 3, 4
_ERROR_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")

# XLA's element types (xla_data.proto's PrimitiveType numbers).
_DTYPES = {np.dtype(np.bool_): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3,
           np.dtype(np.int32): 4, np.dtype(np.int64): 5, np.dtype(np.uint8): 6,
           np.dtype(np.uint16): 7, np.dtype(np.uint32): 8, np.dtype(np.uint64): 9,
           np.dtype(np.float16): 10, np.dtype(np.float32): 11, np.dtype(np.float64): 12,
           np.dtype(dtypes.bfloat16): 16, np.dtype(np.complex64): 15,
           np.dtype(np.complex128): 18}


def _xla_dtype(dtype):
    dt = np.dtype(dtype)
    if dt not in _DTYPES:
        raise TypeError(f"ffi_call: the element type {dt.name} has no XLA FFI type")
    return _DTYPES[dt]


# --------------------------------------------------------------------------
# The API table the handlers call back into
# --------------------------------------------------------------------------


class _Errors:
    """The XLA_FFI_Error objects handlers create: an id standing for the
    pointer, the code and the message (kept alive for GetMessage)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.next = 1
        self.live = {}

    def create(self, code, message):
        with self.lock:
            handle = self.next
            self.next += 1
            self.live[handle] = (code, C.create_string_buffer(message))
        return handle


_errors = _Errors()


def _error_create(args):
    a = args.contents
    message = C.string_at(a.message) if a.message else b""
    return _errors.create(int(a.errc), message)


def _error_get_message(args):
    a = args.contents
    entry = _errors.live.get(a.error)
    a.message = C.cast(entry[1], C.c_void_p).value if entry else None


def _error_destroy(args):
    with _errors.lock:
        _errors.live.pop(args.contents.error, None)


def _unsupported(what):
    def fn(_args):
        return _errors.create(12, f"Ember's XLA FFI runtime does not provide {what} "
                                  "(CPU handlers without state or futures are supported)"
                              .encode())
    return fn


def _schedule(args):
    # No background pool of Ember's runs handler tasks: each runs at once,
    # in the calling thread (allowed: XLA's pool may run it at any time).
    a = args.contents
    a.task(a.data)
    return None


def _num_threads(args):
    args.contents.num_threads[0] = 1
    return None


def _run_id(args):
    args.contents.run_id = 0
    return None


def _device_ordinal(args):
    args.contents.device_ordinal = 0
    return None


_ERR_FN = C.CFUNCTYPE(C.c_void_p, C.POINTER(_ErrorCreateArgs))
_VOID_FN = C.CFUNCTYPE(None, C.POINTER(_ErrorArgs))


def _ctx_fn(struct):
    return C.CFUNCTYPE(C.c_void_p, C.POINTER(struct))


_IMPLS = {
    "Error_Create": _ERR_FN(_error_create),
    "Error_GetMessage": _VOID_FN(_error_get_message),
    "Error_Destroy": _VOID_FN(_error_destroy),
    "ThreadPool_Schedule": _ctx_fn(_ScheduleArgs)(_schedule),
    "ThreadPool_NumThreads": _ctx_fn(_NumThreadsArgs)(_num_threads),
    "RunId_Get": _ctx_fn(_RunIdArgs)(_run_id),
    "DeviceOrdinal_Get": _ctx_fn(_OrdinalArgs)(_device_ordinal),
}
for _name in _API_FUNCTIONS:
    if _name not in _IMPLS:
        _IMPLS[_name] = _ctx_fn(_CtxArgs)(_unsupported(_name.replace("_", "::")))

_API = _Api(struct_size=_size(_Api, "DeviceOrdinal_Get"), extension_start=None,
            api_version=_ApiVersion(_size(_ApiVersion, "minor_version"), None, API_MAJOR,
                                    API_MINOR),
            internal_api=None,
            **{name: C.cast(_IMPLS[name], C.c_void_p).value for name in _API_FUNCTIONS})


# --------------------------------------------------------------------------
# Registration (jax.ffi.register_ffi_target, pycapsule, include_dir)
# --------------------------------------------------------------------------

_HANDLER = C.CFUNCTYPE(C.c_void_p, C.POINTER(_CallFrame))
_targets = {}  # (name, platform) -> the execute handler
_capsule_pointer = C.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = C.c_void_p
_capsule_pointer.argtypes = (C.py_object, C.c_char_p)
_capsule_name = C.pythonapi.PyCapsule_GetName
_capsule_name.restype = C.c_char_p
_capsule_name.argtypes = (C.py_object,)


def pycapsule(funcptr):
    """A ctypes function pointer (`ctypes.CDLL(...).Handler`) as a PyCapsule,
    what `register_ffi_target` takes (as JAX's)."""
    destructor = C.CFUNCTYPE(None, C.py_object)
    new = C.pythonapi.PyCapsule_New
    new.restype = C.py_object
    new.argtypes = (C.c_void_p, C.c_char_p, destructor)
    return new(C.cast(funcptr, C.c_void_p), None, destructor(0))


def _handler_of(fn):
    if type(fn).__name__ != "PyCapsule":
        raise TypeError(f"register_ffi_target: fn must be a PyCapsule (jax.ffi.pycapsule) "
                        f"or a dict of them by stage, got {type(fn).__name__}")
    ptr = _capsule_pointer(fn, _capsule_name(fn))
    return _HANDLER(ptr)


def register_ffi_target(name, fn, platform="cpu", api_version=1, **kwargs):
    """Registers an XLA FFI handler as the target `name` for `platform`: a
    PyCapsule of the handler, or {"execute": capsule, ...} by stage."""
    if api_version != 1:
        raise NotImplementedError(
            f"register_ffi_target: api_version={api_version} (XLA's legacy custom calls); "
            "Ember runs typed FFI handlers (api_version=1)")
    if kwargs:
        raise NotImplementedError(f"register_ffi_target: options {sorted(kwargs)}")
    if isinstance(fn, dict):
        extra = set(fn) - {"execute", "instantiate", "prepare", "initialize"}
        if extra or "execute" not in fn:
            raise ValueError(f"register_ffi_target: the stages must include 'execute' and be "
                             f"among instantiate/prepare/initialize/execute, got {sorted(fn)}")
        if set(fn) != {"execute"}:
            raise NotImplementedError("register_ffi_target: handlers of stages other than "
                                      "'execute' (stateful handlers)")
        fn = fn["execute"]
    _targets[(str(name), platform.lower())] = (_handler_of(fn), fn)


def register_ffi_type_id(name, obj, platform="cpu"):
    raise ValueError("register_ffi_type_id is not supported after jaxlib version 381.")


def register_ffi_type(name, type_registration, platform="cpu"):
    raise NotImplementedError("register_ffi_type: user types of stateful FFI handlers")


def register_ffi_target_as_batch_partitionable(name):
    """A no-op: Ember runs a call over a batch on the devices' lanes."""


def include_dir():
    """The directory holding XLA's FFI headers (`xla/ffi/api/ffi.h`), which
    handlers compile against: EMBER_FFI_INCLUDE_DIR, else the `include`
    directory of an installed jaxlib (not imported: one MLIR per process)."""
    env = os.environ.get("EMBER_FFI_INCLUDE_DIR")
    if env:
        return env
    spec = importlib.util.find_spec("jaxlib")
    if spec is not None and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "include")
        if os.path.isdir(os.path.join(path, "xla", "ffi", "api")):
            return path
    raise FileNotFoundError(
        "include_dir: XLA's FFI headers (xla/ffi/api/ffi.h) ship with jaxlib, which is not "
        "installed here; install jaxlib (its headers only are used) or set "
        "EMBER_FFI_INCLUDE_DIR")


# --------------------------------------------------------------------------
# ffi_call
# --------------------------------------------------------------------------


def _attribute(value, keep):
    """(kind, pointer) of one attribute, as XLA passes MLIR attributes:
    Python and NumPy scalars as scalars (int: s64, float: f64, bool: pred),
    NumPy arrays as arrays, strings as byte spans, dicts as nested
    attributes. `keep` holds what the pointers point into."""
    if isinstance(value, (str, bytes)):
        raw = value.encode() if isinstance(value, str) else value
        buf = C.create_string_buffer(raw, len(raw) or 1)
        span = _ByteSpan(C.cast(buf, C.c_void_p).value, len(raw))
        keep += [buf, span]
        return _ATTR_STRING, C.addressof(span)
    if isinstance(value, dict):
        attrs = _attributes(value, keep)
        keep.append(attrs)
        return _ATTR_DICT, C.addressof(attrs)
    if isinstance(value, (np.ndarray, list, tuple)):
        arr = np.ascontiguousarray(np.asarray(value))
        if arr.ndim != 1:
            raise TypeError(f"ffi_call: array attributes must be one-dimensional, got shape "
                            f"{arr.shape}")
        out = _Array(_xla_dtype(arr.dtype), arr.size, arr.ctypes.data)
        keep += [arr, out]
        return _ATTR_ARRAY, C.addressof(out)
    if isinstance(value, (bool, np.bool_)):
        arr = np.array(value, np.bool_)
    elif isinstance(value, int) and not isinstance(value, np.integer):
        arr = np.array(value, np.int64)
    elif isinstance(value, float):
        arr = np.array(value, np.float64)
    elif isinstance(value, complex):
        arr = np.array(value, np.complex128)
    elif isinstance(value, np.generic):
        arr = np.array(value)
    else:
        raise TypeError(f"ffi_call: unsupported attribute type {type(value).__name__}")
    scalar = _Scalar(_xla_dtype(arr.dtype), arr.ctypes.data)
    keep += [arr, scalar]
    return _ATTR_SCALAR, C.addressof(scalar)


def _attributes(values, keep):
    names = sorted(values)
    n = len(names)
    types = (C.c_int * max(n, 1))()
    spans = (C.POINTER(_ByteSpan) * max(n, 1))()
    ptrs = (C.c_void_p * max(n, 1))()
    for i, k in enumerate(names):
        raw = k.encode()
        buf = C.create_string_buffer(raw, len(raw) or 1)
        span = _ByteSpan(C.cast(buf, C.c_void_p).value, len(raw))
        keep += [buf, span]
        spans[i] = C.pointer(span)
        types[i], ptrs[i] = _attribute(values[k], keep)
    keep += [types, spans, ptrs]
    return _Attrs(_size(_Attrs, "attrs"), None, n, types, spans, ptrs)


def _buffers(arrays, keep):
    n = len(arrays)
    types = (C.c_int * max(n, 1))(*([_BUFFER] * n))
    ptrs = (C.c_void_p * max(n, 1))()
    for i, a in enumerate(arrays):
        dims = (C.c_int64 * max(a.ndim, 1))(*a.shape)
        buf = _Buffer(_size(_Buffer, "dims"), None, _xla_dtype(a.dtype), a.ctypes.data, a.ndim,
                      dims)
        keep += [dims, buf]
        ptrs[i] = C.addressof(buf)
    keep += [types, ptrs]
    return _List(_size(_List, "items"), None, n, types, ptrs)


def _invoke(name, handler, args, out_avals, attrs, layouts, aliases):
    """Runs `handler` on NumPy arrays: the results, as NumPy arrays."""
    keep = []
    in_layouts, out_layouts = layouts
    ins = []
    for a, lay in zip(args, in_layouts):
        a = np.asarray(a)
        # A buffer in the major-to-minor order `lay` (its dims the logical
        # ones): the data permuted, as XLA lays it out for the handler.
        ins.append((np.ascontiguousarray(a.transpose(lay) if lay else a), a.shape))
    outs = []
    for k, (aval, lay) in enumerate(zip(out_avals, out_layouts)):
        shape = tuple(aval.shape)
        phys = tuple(shape[d] for d in lay) if lay else shape
        src = next((i for i, o in aliases if o == k), None)
        outs.append(((ins[src][0].copy() if src is not None else
                      np.empty(phys, aval.dtype)), shape))
    frame = _CallFrame()
    frame.struct_size = _size(_CallFrame, "attrs")
    frame.api = C.addressof(_API)
    frame.stage = _EXECUTE
    frame.args = _buffers([_Logical(d, s) for d, s in ins], keep)
    frame.rets = _buffers([_Logical(d, s) for d, s in outs], keep)
    frame.attrs = _attributes(attrs, keep)
    err = handler(C.byref(frame))
    if err:
        code, message = _errors.live.pop(err, (2, C.create_string_buffer(b"")))
        error = JaxRuntimeError(
            f"{_ERROR_CODES[code] if code < len(_ERROR_CODES) else code}: "
            f"{message.value.decode(errors='replace')} (in the FFI target '{name}')")
        error.from_runtime = True  # (XLA's status: raised as it is, callback.py)
        raise error
    results = []
    for (data, shape), lay in zip(outs, out_layouts):
        if lay:
            inverse = np.argsort(lay)
            data = data.transpose(inverse)
        results.append(np.ascontiguousarray(data).reshape(shape))
    return results


class _Logical:
    """A buffer's data with its logical dims (the data may be laid out in
    another order: `input_layouts`/`output_layouts`)."""

    def __init__(self, data, shape):
        self.data, self.shape = data, tuple(shape)
        self.ndim, self.dtype = len(self.shape), data.dtype
        self.ctypes = data.ctypes


def _layouts(given, avals, what):
    if given is None:
        return [None] * len(avals)
    if len(given) != len(avals):
        raise ValueError(f"The number of {what} ({len(avals)}) must equal the number of "
                         f"{what.split()[0]} layouts ({len(given)}).")
    out = []
    for lay, a in zip(given, avals):
        if lay is None:
            out.append(None)
            continue
        if not isinstance(lay, (list, tuple)):
            raise NotImplementedError(f"ffi_call: layouts as {type(lay).__name__}; Ember "
                                      "takes sequences of axes (major to minor)")
        lay = tuple(int(d) for d in lay)
        if sorted(lay) != list(range(len(a.shape))):
            raise ValueError(f"ffi_call: the layout {lay} is not a permutation of the "
                             f"{len(a.shape)} axes of {a.str_short()}")
        out.append(None if lay == tuple(range(len(lay))) else lay)
    return out


_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None)


def ffi_call(target_name, result_shape_dtypes, *, has_side_effect=False, vmap_method=None,
             input_layouts=None, output_layouts=None, input_output_aliases=None,
             custom_call_api_version=4, legacy_backend_config=None):
    """JAX's `jax.ffi.ffi_call`: a function of arrays that calls the FFI
    target `target_name` (registered for the CPU), keyword arguments as its
    attributes."""
    if vmap_method not in _VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(_VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    if custom_call_api_version != 4:
        raise NotImplementedError(f"ffi_call: custom_call_api_version={custom_call_api_version} "
                                  "(XLA's legacy custom calls); Ember calls typed FFI handlers")
    if legacy_backend_config is not None:
        raise ValueError("The use of the legacy_backend_config parameter requires "
                         f"custom_call_api_version < 4; got {custom_call_api_version}.")
    multiple = isinstance(result_shape_dtypes, (list, tuple))
    results = list(result_shape_dtypes) if multiple else [result_shape_dtypes]
    # The handler's results have the requested types; the arrays returned
    # have Ember's (a float64 result is float32 without jax_enable_x64).
    buffers = [core.ShapedArray(tuple(r.shape), np.dtype(r.dtype)) for r in results]
    out_avals = [b.update(dtype=dtypes.canonicalize_dtype(b.dtype)) for b in buffers]

    def wrapped(*args, **kwargs):
        vals = [core.as_value(a) for a in args]
        key = (str(target_name), "cpu")
        if key not in _targets:
            raise JaxRuntimeError(f"NOT_FOUND: No FFI handler registered for {target_name} on "
                                  f"the platform cpu (register_ffi_target) (at {core.where()})")
        handler = _targets[key][0]
        in_avals = [v.aval for v in vals]
        lays = (_layouts(input_layouts, in_avals, "input arguments"),
                _layouts(output_layouts if multiple or output_layouts is None
                         else (output_layouts,), out_avals, "outputs"))
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if i >= len(vals) or o >= len(out_avals):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' outside "
                                 f"the {len(vals)} inputs or {len(out_avals)} outputs")
            a, b = in_avals[i], out_avals[o]
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' "
                                 f"referring to an input with abstract value {a} and an "
                                 f"output with a different abstract value {b}.")
            aliases.append((i, o))
        attrs = dict(kwargs)
        for v in attrs.values():  # (checked now, at the user's line)
            _attribute(v, [])

        def host(*arrays):
            # Under vmap with "expand_dims"/"broadcast_all" the arrays come
            # with leading batch dimensions, and so must the results (the
            # layouts keep the batch dimensions major, as JAX's rule).
            k = max([np.ndim(a) - v.ndim for a, v in zip(arrays, in_avals)] + [0])
            lead = np.broadcast_shapes(*[np.shape(a)[:np.ndim(a) - v.ndim]
                                         for a, v in zip(arrays, in_avals)]) if k else ()

            def shifted(lay, extra):
                return lay if lay is None or not extra else \
                    tuple(range(extra)) + tuple(d + extra for d in lay)
            lays_here = ([shifted(lay, np.ndim(a) - v.ndim)
                          for lay, a, v in zip(lays[0], arrays, in_avals)],
                         [shifted(lay, k) for lay in lays[1]])
            bufs = [b.update(shape=tuple(lead) + tuple(b.shape)) for b in buffers]
            outs = _invoke(target_name, handler, arrays, bufs, attrs, lays_here, aliases)
            return [o.astype(a.dtype, copy=False) for o, a in zip(outs, out_avals)]

        specs = [core.ShapeDtypeStruct(a.shape, a.dtype) for a in out_avals]
        if has_side_effect:
            outs = callback.io_callback(host, specs, *vals)
        else:
            outs = callback.pure_callback(host, specs, *vals, vmap_method=vmap_method)
        outs = list(outs)
        return (tuple(outs) if isinstance(result_shape_dtypes, tuple) else outs) \
            if multiple else outs[0]

    return wrapped


def build_ffi_lowering_function(*args, **kwargs):
    raise NotImplementedError("build_ffi_lowering_function: Ember has no XLA lowering rules "
                              "to register; call targets with ffi_call")


def ffi_lowering(*args, **kwargs):
    raise NotImplementedError("ffi_lowering: Ember has no XLA lowering rules to register; "
                              "call targets with ffi_call")


__all__ = ["ffi_call", "ffi_lowering", "include_dir", "pycapsule", "register_ffi_target",
           "register_ffi_target_as_batch_partitionable", "register_ffi_type",
           "register_ffi_type_id", "build_ffi_lowering_function"]

"""Host callbacks: `pure_callback`, `io_callback`, `debug.callback`, `debug.print`.

Inside a trace, a callback is staged out as one `ember.host_callback` op that
names a Python function by an integer id. Compiled code reaches the runtime
entry point `ember_host_callback` (registered with the JIT by
`_ember_runtime`), which calls `_handle` below with the addresses of a
signature record and of the operand and result buffers. The record says the
shapes and element types the code actually has (after `ember-batch`, for
instance), so the handler never relies on trace-time shapes.

Outside any trace the callback simply runs.
"""

import contextlib
import ctypes
import itertools
import math
import string
import traceback

import numpy as np

from ember._mlir import ir
from ember._mlir._mlir_libs import _ember_runtime

from . import core, dtypes, parallel, tree_util
from .core import Array, Tracer
from .errors import JaxRuntimeError

# Element type codes of the signature record: EMBER_TYPE_CODE in
# include/ember/Runtime/Runtime.def, which the lowering uses too.
_CODES = {code: np.dtype(dtypes.bfloat16 if name == "bfloat16" else name)
          for code, name in _ember_runtime.runtime_tables()["type_codes"].items()}

_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized")

_registry = {}
_ids = itertools.count()


class _Callback:
    """What a callback id stands for: a function of flat NumPy arrays that
    returns flat results (or None)."""

    def __init__(self, fun, name, in_place=False):
        self.fun = fun
        self.name = name
        # In place: fun(arguments, results) gets NumPy views of the compiled
        # code's buffers (not copies) and fills the results itself.
        self.in_place = in_place


def _register(fun, name, in_place=False):
    cid = next(_ids)
    _registry[cid] = _Callback(fun, name, in_place)
    return cid


def _buffer(addr, dtype, shape):
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return np.zeros(shape, dtype)
    raw = (ctypes.c_char * nbytes).from_address(addr)
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _decode(sig, pos, count):
    out = []
    for _ in range(count):
        code, rank = int(sig[pos]), int(sig[pos + 1])
        shape = tuple(int(d) for d in sig[pos + 2:pos + 2 + rank])
        out.append((_CODES[code], shape))
        pos += 2 + rank
    return out, pos


_error_classes = {}


def callback_error(e):
    """The JaxRuntimeError for exception `e` raised by a host callback (an
    error an XLA FFI handler returned is already one: `ffi.py`)."""
    if getattr(e, "from_runtime", False):
        return e
    cls = type(e)
    sub = _error_classes.get(cls)
    if sub is None and not issubclass(cls, Exception):
        sub = JaxRuntimeError  # (never a SystemExit: it would end the program)
    if sub is None:
        try:
            sub = type("JaxRuntimeError", (JaxRuntimeError, cls), {
                "__module__": JaxRuntimeError.__module__, "__doc__": JaxRuntimeError.__doc__,
                "__init__": RuntimeError.__init__, "__str__": RuntimeError.__str__})
        except TypeError:  # (a class whose layout cannot be combined)
            sub = JaxRuntimeError
        _error_classes[cls] = sub
    text = "INTERNAL: CpuCallback error calling callback: " + "".join(
        traceback.format_exception(e)).rstrip("\n")
    try:
        return sub(text)
    except Exception:  # noqa: BLE001 (a class whose __new__ wants other arguments)
        return JaxRuntimeError(text)


@contextlib.contextmanager
def _runtime_errors():
    """What a callback raises inside becomes JAX's JaxRuntimeError
    (`callback_error`); SystemExit too, as in JAX; KeyboardInterrupt stays."""
    try:
        yield
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 (SystemExit too, as JAX)
        raise callback_error(e) from e


def _handle(sig_addr, sig_len, args_addr, results_addr):
    """Called by compiled code (through `ember_host_callback`)."""
    with _runtime_errors():
        _handle_call(sig_addr, sig_len, args_addr, results_addr)


def _handle_call(sig_addr, sig_len, args_addr, results_addr):
    sig = (ctypes.c_int64 * sig_len).from_address(sig_addr)
    cid, nin, nout = int(sig[0]), int(sig[1]), int(sig[2])
    ins, pos = _decode(sig, 3, nin)
    outs, _ = _decode(sig, pos, nout)
    arg_ptrs = (ctypes.c_int64 * max(nin, 1)).from_address(args_addr)
    res_ptrs = (ctypes.c_int64 * max(nout, 1)).from_address(results_addr)
    cb = _registry[cid]
    if cb.in_place:
        cb.fun([_buffer(arg_ptrs[i], dt, shape) for i, (dt, shape) in enumerate(ins)],
               [_buffer(res_ptrs[i], dt, shape) for i, (dt, shape) in enumerate(outs)])
        return
    args = [_buffer(arg_ptrs[i], dt, shape).copy() for i, (dt, shape) in enumerate(ins)]
    results = cb.fun(args)
    if nout == 0:
        return
    results = list(results)
    if len(results) != nout:
        raise RuntimeError(f"{cb.name}: the callback returned {len(results)} values, "
                           f"expected {nout}")
    for i, (r, (dt, shape)) in enumerate(zip(results, outs)):
        r = np.asarray(r)
        if r.shape != shape:
            raise RuntimeError(f"{cb.name}: incorrect output shape for return value {i}: "
                               f"expected {shape}, got {r.shape}")
        if r.dtype != dt:
            raise RuntimeError(f"{cb.name}: incorrect output dtype for return value {i}: "
                               f"expected {dt.name}, got {r.dtype.name}")
        _buffer(res_ptrs[i], dt, shape)[...] = r


_ember_runtime.set_host_callback_handler(_handle)


def _as_ember(leaves):
    return [Array(np.asarray(x)) for x in leaves]


def _is_traced(leaves):
    return core.current_trace() is not None or any(isinstance(x, Tracer) for x in leaves)


def _stage(cid, leaves, out_avals, has_side_effect, vmap_method):
    """Emits the host_callback op on `leaves` (array-like) in the current trace."""
    vals = [core.as_value(x) for x in leaves]
    trace = core.find_trace(vals) or core.current_trace()
    operands = [trace.to_value(v) for v in vals]
    ctx = core.context()
    attrs = {"callback_id": ir.IntegerAttr.get(ir.IntegerType.get_signless(64, ctx), cid),
             "vmap_method": ir.StringAttr.get(vmap_method, ctx)}
    if has_side_effect:
        attrs["has_side_effect"] = ir.UnitAttr.get(ctx)
    if vmap_method == "none" and (axes := parallel.device_axes()):
        # Inside shard_map/pmap each device calls it (ember-batch runs the
        # lanes' calls in turn); a vmap of the user's still may not.
        attrs["device_axes"] = ir.ArrayAttr.get([ir.StringAttr.get(str(a), ctx) for a in axes],
                                                ctx)
    return trace.emit("ember.host_callback", operands, out_avals, attrs)


def in_place_callback(fun, out_avals, operands, name="callback", vmap_method="sequential"):
    """A host callback, in a trace, whose `fun(arguments, results)` reads
    the compiled code's argument buffers and writes its result buffers
    directly (views, no copies; for runtime services such as MPI calls)."""
    cid = _register(fun, name, in_place=True)
    return _stage(cid, operands, out_avals, False, vmap_method)


def _result_avals(result_shape_dtypes):
    leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
    avals = []
    for x in leaves:
        if not hasattr(x, "shape") or not hasattr(x, "dtype"):
            raise TypeError("result_shape_dtypes leaves must have `shape` and `dtype` "
                            f"attributes (e.g. ShapeDtypeStruct), got {x!r}")
        dt = np.dtype(x.dtype)
        if dtypes.canonicalize_dtype(dt) != dt:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        avals.append(core.ShapedArray(tuple(x.shape), dt))
    return avals, tree


def _canonical(x):
    dt = dtypes.canonicalize_dtype(x.dtype)
    return x if dt == x.dtype else x.astype(dt)


def _split_static(args, kwargs):
    """Flattens (args, kwargs); array leaves become operands, others stay in
    Python. Returns (operands, rebuild) with rebuild(arrays) -> (args, kwargs)."""
    leaves, tree = tree_util.tree_flatten((args, kwargs))
    dynamic = [i for i, x in enumerate(leaves)
               if isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float,
                                 complex))]

    def rebuild(arrays):
        full = list(leaves)
        for i, a in zip(dynamic, arrays):
            full[i] = a
        return tree_util.tree_unflatten(tree, full)

    return [leaves[i] for i in dynamic], rebuild


def _callback(kind, callback, result_shape_dtypes, args, kwargs, has_side_effect,
              vmap_method):
    avals, out_tree = _result_avals(result_shape_dtypes)
    operands, rebuild = _split_static(args, kwargs)

    def run(arrays):
        a, k = rebuild(_as_ember(arrays))
        out = callback(*a, **k)
        out_leaves, tree = tree_util.tree_flatten(out)
        if tree != out_tree:
            raise RuntimeError(f"{kind}: the callback returned a value of structure "
                               f"{tree}, expected {out_tree}")
        # (64-bit results become their 32-bit types without x64, as JAX
        # canonicalizes them: a Python float, NumPy's float64.)
        return [_canonical(np.asarray(x)) for x in out_leaves]

    if not _is_traced(operands):
        # (A debug.callback runs as a plain call outside traces, as JAX's.)
        with contextlib.nullcontext() if kind == "debug.callback" else _runtime_errors():
            flat = run([np.asarray(x) for x in operands])
        # Check against the declared shapes, as compiled code would.
        for i, (r, av) in enumerate(zip(flat, avals)):
            if r.shape != av.shape or r.dtype != av.dtype:
                raise RuntimeError(
                    f"{kind}: incorrect output for return value {i}: expected "
                    f"{av.str_short()}, got {r.dtype.name}{list(r.shape)}")
        return tree_util.tree_unflatten(out_tree, [Array(r) for r in flat])
    cid = _register(run, kind)
    outs = _stage(cid, operands, avals, has_side_effect, vmap_method)
    return tree_util.tree_unflatten(out_tree, outs)


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None,
                  vectorized=None, **kwargs):
    """Calls a pure Python function on the host, from traced code as well.

    `callback` gets Ember arrays and returns arrays matching
    `result_shape_dtypes`. Under `vmap`, `vmap_method` decides: "sequential"
    calls it once per example, "expand_dims" once with unbatched inputs given a
    leading dimension of 1, "broadcast_all" once with every input batched,
    "legacy_vectorized" once with the unbatched inputs as they are (what
    JAX's older `vectorized=True` meant, which it still accepts); without
    one, batching raises an error (as in JAX).
    """
    del sharding
    if vectorized is not None:
        if vmap_method is not None:
            raise ValueError("pure_callback: pass vmap_method or vectorized, not both")
        vmap_method = "legacy_vectorized" if vectorized else "sequential"
    if vmap_method is not None and vmap_method not in _VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of {_VMAP_METHODS}, "
                         f"got {vmap_method!r}")
    method = {None: "none", "sequential_unrolled": "sequential"}.get(vmap_method, vmap_method)
    return _callback("pure_callback", callback, result_shape_dtypes, args, kwargs,
                     False, method)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False,
                **kwargs):
    """Calls an impure Python function on the host; never removed or merged,
    and run in program order. Batched sequentially under `vmap`, except an
    `ordered` one, which cannot be (JAX's ValueError)."""
    del sharding
    return _callback("io_callback", callback, result_shape_dtypes, args, kwargs, True,
                     "ordered" if ordered else "sequential")


def debug_callback(callback, *args, ordered=False, **kwargs):
    """Calls `callback(*args, **kwargs)` on the host for its effect (no
    results); under `vmap` once per example, under `grad` on primal values."""
    del ordered

    def effect(*a, **k):
        callback(*a, **k)

    _callback("debug.callback", effect, None, args, kwargs, True, "sequential")


def _check_format(fmt, args, kwargs):
    """Raises at trace time for fields that name missing arguments."""
    auto = 0
    for _, field, _, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        name = field.split(".")[0].split("[")[0]
        if name == "":
            if auto >= len(args):
                raise IndexError(f"debug.print: format string {fmt!r} has more "
                                 f"positional fields than the {len(args)} arguments")
            auto += 1
        elif name.isdigit():
            if int(name) >= len(args):
                raise IndexError(f"debug.print: field {{{field}}} of {fmt!r} is out of range")
        elif name not in kwargs:
            raise KeyError(f"debug.print: format string {fmt!r} names {name!r}, "
                           "which is not a keyword argument")


def debug_print(fmt, *args, ordered=False, **kwargs):
    """Prints `fmt.format(*args, **kwargs)` with the runtime values, from
    compiled code too (like `jax.debug.print`)."""
    _check_format(fmt, args, kwargs)

    def show(*a, **k):
        print(fmt.format(*a, **k))

    debug_callback(show, *args, ordered=ordered, **kwargs)

"""Top-level jax names on Ember's machinery: scopes, guards and caches,
array builders, custom gradients."""

import contextlib
import functools
import gc
import inspect
import platform
import sys
import threading

import numpy as np

from . import ad, api, core, devices, dtypes, lax_linalg, mesh, tree_util
from .api_util import Traced
from .config import _RUNTIME_ONLY, _State, _validators, config
from .numpy import linalg as _np_linalg
from .state import ds as ds

__all__ = [
    "check_tracer_leaks", "checking_leaks", "clear_caches", "closure_convert",
    "copy_to_host_async", "custom_gradient", "debug_key_reuse", "default_matmul_precision",
    "enable_checks", "ensure_compile_time_eval", "explain_cache_misses", "float0",
    "host_count", "host_id", "host_ids", "live_arrays", "log_compiles",
    "make_array_from_callback", "make_array_from_process_local_data",
    "make_array_from_single_device_arrays", "named_call", "named_scope",
    "numpy_dtype_promotion", "numpy_rank_promotion", "print_environment_info",
    "process_indices", "transfer_guard", "transfer_guard_device_to_device",
    "transfer_guard_device_to_host", "transfer_guard_host_to_device",
    "allow_f16_reductions", "array_garbage_collection_guard", "auto_pcast",
    "default_prng_impl", "ds", "enable_custom_prng", "legacy_prng_key", "no_execution",
    "no_tracing", "remove_size_one_mesh_axis_from_type", "softmax_custom_jvp",
    "thread_guard", "threefry_partitionable",
]

# `lax.linalg.eig` is `jnp.linalg`'s eig (a layer above lax_linalg).
lax_linalg._eig_impl = _np_linalg._eig


# --------------------------------------------------------------------------
# Name scopes
# --------------------------------------------------------------------------

# The active scope names of this thread, outermost first. Ember's IR carries
# the user's source lines, not a name stack, so the names are only recorded
# here (`current_name_stack`) for tools that want them.
_names = threading.local()


def current_name_stack():
    """The names of the `named_scope`s entered in this thread, joined by "/"."""
    return "/".join(getattr(_names, "stack", ()))


@contextlib.contextmanager
def _name_scope(name):
    stack = _names.__dict__.setdefault("stack", [])
    stack.append(name)
    try:
        yield
    finally:
        stack.pop()


def named_scope(name):
    """`jax.named_scope`: a context manager (also a decorator) naming the
    operations traced in its body. Values are unaffected."""
    if not isinstance(name, str):
        raise TypeError("named_scope name argument must be a string.")
    return _name_scope(name)


def named_call(fun, *, name=None):
    """`jax.named_call`: `fun` run inside `named_scope(name or fun.__name__)`."""
    if name is None:
        name = fun.__name__

    @functools.wraps(fun)
    def named(*args, **kwargs):
        with _name_scope(name):
            return fun(*args, **kwargs)
    return named


# --------------------------------------------------------------------------
# ensure_compile_time_eval
# --------------------------------------------------------------------------

def ensure_compile_time_eval():
    """`jax.ensure_compile_time_eval`: inside the block, operations whose
    inputs are all concrete run at once (also while `jit` traces), so their
    results are concrete arrays usable in Python control flow. Operations on
    traced values are still staged into the enclosing trace
    (`core.compile_time_eval`)."""
    return core.compile_time_eval()


# --------------------------------------------------------------------------
# Caches and live arrays
# --------------------------------------------------------------------------


def clear_caches():
    """`jax.clear_caches`: drops every in-memory compilation cache (the
    programs of jitted functions, eager ops and transformations, the MLIR
    types). The persistent compilation cache on disk is kept, as in JAX."""
    api._clear_jit_caches()
    core._clear_caches()


def live_arrays(platform=None):
    """`jax.live_arrays`: the arrays alive in this process (on `platform`,
    default the default backend), found among the objects the garbage
    collector tracks."""
    name = devices.default_backend() if platform is None else platform
    gpu = name in ("gpu", "cuda")
    out = []
    for obj in gc.get_objects():
        if isinstance(obj, core.Array) and not isinstance(obj, core.Tracer):
            if isinstance(obj, core.GpuArray) == gpu:
                out.append(obj)
    return out


def copy_to_host_async(x):
    """`jax.copy_to_host_async`: calls `copy_to_host_async()` on the leaves
    of `x` that have it (Ember's CPU arrays are in host memory: none need
    to) and returns `x`."""
    for leaf in tree_util.tree_leaves(x):
        fn = getattr(leaf, "copy_to_host_async", None)
        if fn is not None:
            fn()
    return x


# --------------------------------------------------------------------------
# Configuration states Ember records
# --------------------------------------------------------------------------


_NO_VALUE = object()


class _RecordedState(_State):
    """A JAX configuration state that `config.update` and the context
    manager set (checked as JAX checks it); `.value` reads it. `default`
    is what the context manager sets when called without a value (if
    any)."""

    def __init__(self, name, initial, parse, default=_NO_VALUE):
        super().__init__(name)
        self._default = default
        if not hasattr(config, name):
            setattr(config, name, initial)
        _RUNTIME_ONLY.add(name)  # (no compiled code depends on it)
        _validators.setdefault(name, parse)
        self._parse = parse

    def __call__(self, value=_NO_VALUE):
        if value is _NO_VALUE:
            if self._default is _NO_VALUE:
                raise TypeError(f"Context manager for {self._name} config option requires "
                                "an argument representing the new value for the config "
                                f"option (at {core.where()})")
            value = self._default
        self._parse(value)
        return super().__call__(value)


def _bool_option(name):
    def parse(v):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"{name}: a bool is required, got {v!r} (at {core.where()})")
    return parse


def _enum_option(name, values, optional):
    def parse(v):
        if optional and v is None:
            return
        if type(v) is not str or v not in values:
            none = "None or " if optional else ""
            raise ValueError(f"new enum value must be {none}in {list(values)}, got {v} of "
                             f"type {type(v)} (at {core.where()})")
    return parse


_MATMUL_PRECISIONS = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")
_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")


def _bool_state(name):
    return _RecordedState(name, False, _bool_option(name), default=True)


def _optional_enum_state(name, values):
    return _RecordedState(name, None, _enum_option(name, values, True))


# Recorded only: Ember's compiler does not read them (it has no transfer
# guards, leak or key-reuse checker, and jnp promotes dtypes and ranks as
# with their defaults).
# (The default precision of products is read when a program is traced,
# `lax.canonicalize_precision`, and written on its products; compiled CPU
# code is kept when it changes, since the CPU computes f32 products in f32
# whatever it says: clearing every cache at each `with` would recompile.)
default_matmul_precision = _optional_enum_state("jax_default_matmul_precision",
                                                _MATMUL_PRECISIONS)
log_compiles = _bool_state("jax_log_compiles")
explain_cache_misses = _bool_state("jax_explain_cache_misses")
check_tracer_leaks = _bool_state("jax_check_tracer_leaks")
checking_leaks = functools.partial(check_tracer_leaks, True)
debug_key_reuse = _bool_state("jax_debug_key_reuse")
enable_checks = _bool_state("jax_enable_checks")
numpy_rank_promotion = _RecordedState(
    "jax_numpy_rank_promotion", "allow",
    _enum_option("jax_numpy_rank_promotion", ("allow", "warn", "raise"), False))
numpy_dtype_promotion = _RecordedState(
    "jax_numpy_dtype_promotion", "standard",
    _enum_option("jax_numpy_dtype_promotion", ("standard", "strict"), False))
transfer_guard_host_to_device = _optional_enum_state("jax_transfer_guard_host_to_device",
                                                     _GUARD_LEVELS)
transfer_guard_device_to_device = _optional_enum_state("jax_transfer_guard_device_to_device",
                                                       _GUARD_LEVELS)
transfer_guard_device_to_host = _optional_enum_state("jax_transfer_guard_device_to_host",
                                                     _GUARD_LEVELS)
_transfer_guard_all = _optional_enum_state("jax_transfer_guard", _GUARD_LEVELS)

# More recorded-only states (JAX 0.10.2's defaults; Ember's compiler reads
# none of them: its threefry2x32 has JAX's default partitionable bits,
# softmax is differentiated as written, f16 reductions are allowed).
softmax_custom_jvp = _bool_state("jax_softmax_custom_jvp")
# The default PRNG (`ember.random` reads it for raw keys and `key(seed)`):
# traced programs depend on it, so changing it clears compiled code, as x64.
default_prng_impl = _RecordedState(
    "jax_default_prng_impl", "threefry2x32",
    _enum_option("jax_default_prng_impl", ("threefry2x32", "threefry4x32", "rbg",
                                           "unsafe_rbg", "philox2x32", "philox4x32"), False))
_RUNTIME_ONLY.discard("jax_default_prng_impl")
threefry_partitionable = _RecordedState("jax_threefry_partitionable", True,
                                        _bool_option("jax_threefry_partitionable"),
                                        default=True)
legacy_prng_key = _RecordedState(
    "jax_legacy_prng_key", "allow",
    _enum_option("jax_legacy_prng_key", ("allow", "warn", "error"), False))
enable_custom_prng = _bool_state("jax_enable_custom_prng")
no_tracing = _bool_state("jax_no_tracing")
no_execution = _bool_state("jax_no_execution")
thread_guard = _bool_state("jax_thread_guard")
allow_f16_reductions = _RecordedState("jax_allow_f16_reductions", True,
                                      _bool_option("jax_allow_f16_reductions"), default=True)
array_garbage_collection_guard = _optional_enum_state(
    "jax_array_garbage_collection_guard", ("allow", "log", "fatal"))
remove_size_one_mesh_axis_from_type = _bool_state("jax_remove_size_one_mesh_axis_from_type")
auto_pcast = _RecordedState("jax_auto_pcast", True, _bool_option("jax_auto_pcast"),
                            default=True)


@contextlib.contextmanager
def transfer_guard(new_val):
    """`jax.transfer_guard`: sets the three transfer guard levels (and
    `jax_transfer_guard`) for its body. Recorded only: Ember's arrays live
    in host memory, so no transfer is guarded."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(transfer_guard_host_to_device(new_val))
        stack.enter_context(transfer_guard_device_to_device(new_val))
        stack.enter_context(transfer_guard_device_to_host(new_val))
        stack.enter_context(_transfer_guard_all(new_val))
        yield


# JAX's dtype of the tangents of integer and boolean values.
float0 = dtypes.float0


# --------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------


def host_count(backend=None):
    """`jax.host_count`: the number of processes (`process_count`)."""
    return devices.process_count(backend)


def host_id(backend=None):
    """`jax.host_id`: this process's index (`process_index`)."""
    return devices.process_index(backend)


def process_indices(backend=None):
    """`jax.process_indices`: the indices of every process."""
    return list(range(devices.process_count(backend)))


def host_ids(backend=None):
    """`jax.host_ids`: `process_indices`."""
    return process_indices(backend)


def print_environment_info(return_string=False):
    """`jax.print_environment_info`: versions, devices and processes (the
    report to attach to a bug), printed, or returned with `return_string`."""
    ember = sys.modules.get("ember")
    version = getattr(ember, "__version__", "unknown")
    devs = devices.devices()
    lines = [
        f"ember:    {version}",
        f"numpy:    {np.__version__}",
        f"python:   {sys.version}",
        f"device info: {devs[0].device_kind if devs else 'none'}-{len(devs)}, "
        f"{devices.local_device_count()} local devices",
        f"process_count: {devices.process_count()}",
        f"platform: {platform.uname()}",
    ]
    text = "\n".join(lines) + "\n"
    if return_string:
        return text
    print(text)
    return None


# --------------------------------------------------------------------------
# Building arrays from blocks
# --------------------------------------------------------------------------


def _index_map(sharding, shape):
    if isinstance(sharding, mesh.NamedSharding):
        return sharding.devices_indices_map(tuple(shape))
    if isinstance(sharding, devices.SingleDeviceSharding):
        (dev,) = sharding.device_set
        return {dev: tuple(slice(None) for _ in shape)}
    raise TypeError(f"a sharding is required, got {sharding!r} (at {core.where()})")


def _shard_shape(index, shape):
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))


def _host(value, what):
    if isinstance(value, core.Tracer):
        raise core.type_error(f"jax.{what} cannot be called within a traced context.")
    return np.asarray(value)


def _assemble(shape, sharding, blocks, dtype, what):
    """The array of `shape` placed by `sharding` from `blocks` ((index,
    data) pairs covering it)."""
    if not blocks:
        if dtype is None:
            raise ValueError("If the Array has no addressable shards, `dtype` must be "
                             f"provided via the `dtype` argument to `jax.{what}`.")
    else:
        first = blocks[0][1].dtype
        if dtype is not None and np.dtype(dtype) != first:
            raise ValueError(f"If `dtype` is provided to `jax.{what}`, it must match the "
                             f"dtype of the addressable shards. Got dtype={np.dtype(dtype)} "
                             f"and shard dtype={first}`.")
        dtype = first
    dtype = dtypes.canonicalize_dtype(dtype)
    out = np.zeros(shape, dtype)
    for index, data in blocks:
        expected = _shard_shape(index, shape)
        if data.dtype != blocks[0][1].dtype:
            raise ValueError("Input buffers to `Array` must have matching dtypes. Got "
                             f"{data.dtype}, expected {blocks[0][1].dtype} for buffer: {data}")
        if data.shape != expected:
            raise ValueError(f"Expected shard shape {expected} doesn't match the single "
                             f"device array shape {data.shape}. Shape of Array is "
                             f"{np.dtype(dtype).name}{list(shape)} with sharding {sharding}")
        out[index] = data
    return api.device_put(core.Array(out), sharding)


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """`jax.make_array_from_callback`: the array of `shape` placed by
    `sharding` whose block at each device's index is `data_callback(index)`
    (called once with full slices when the sharding replicates)."""
    shape = tuple(core.canonicalize_shape(shape))
    index_map = _index_map(sharding, shape)
    if getattr(sharding, "is_fully_replicated", False) or len(index_map) == 1:
        full = tuple(slice(None) for _ in shape)
        blocks = [(full, _host(data_callback(full), "make_array_from_callback"))]
    else:
        blocks = [(idx, _host(data_callback(idx), "make_array_from_callback"))
                  for idx in index_map.values()]
    return _assemble(shape, sharding, blocks, dtype, "make_array_from_callback")


def _device_of(x):
    s = getattr(getattr(x, "aval", None), "sharding", None)
    if isinstance(s, devices.SingleDeviceSharding):
        return next(iter(s.device_set))
    return None


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """`jax.make_array_from_single_device_arrays`: the array of `shape`
    placed by `sharding` from one array per device (matched to the devices
    they are committed to, else taken in the order of the sharding's
    devices)."""
    shape = tuple(core.canonicalize_shape(shape))
    index_map = _index_map(sharding, shape)
    arrays = list(arrays)
    if len(arrays) != len(index_map):
        raise ValueError(f"Expected {len(index_map)} single device arrays (one per device of "
                         f"{sharding}), got {len(arrays)} (at {core.where()})")
    order = list(index_map)
    blocks = []
    for i, a in enumerate(arrays):
        dev = _device_of(a)
        idx = index_map[dev] if dev in index_map else index_map[order[i]]
        blocks.append((idx, _host(a, "make_array_from_single_device_arrays")))
    return _assemble(shape, sharding, blocks, dtype, "make_array_from_single_device_arrays")


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """`jax.make_array_from_process_local_data`: in one process the local
    data is the whole array, placed by `sharding`."""
    data = _host(local_data, "make_array_from_process_local_data")
    if global_shape is not None and tuple(global_shape) != data.shape:
        raise ValueError(f"global_shape {tuple(global_shape)} differs from the shape of the "
                         f"local data {data.shape}, which in a single process is the whole "
                         f"array (at {core.where()})")
    return _assemble(data.shape, sharding, [(tuple(slice(None) for _ in data.shape), data)],
                     None, "make_array_from_process_local_data")


# --------------------------------------------------------------------------
# Closure conversion and custom_gradient
# --------------------------------------------------------------------------


def _perturbable(x):
    """JAX's `_maybe_perturbed`: a traced value that may carry a tangent
    (inexact)."""
    return isinstance(x, core.Tracer) and dtypes.is_inexact(x.aval.dtype)


def _flat_avals(leaves):
    return [core.as_value(x).aval for x in leaves]


def closure_convert(fun, *example_args):
    """`jax.closure_convert`: `(converted, consts)` where `consts` are the
    traced (inexact) values `fun` closes over when applied to arguments like
    `example_args`, and `converted(*args, *consts)` computes `fun(*args)`
    with those values taken from its last arguments. Outside traces nothing
    is closed over that could be differentiated: `consts` is empty."""
    leaves, in_tree = tree_util.tree_flatten((example_args, {}))
    if not core._trace_stack:
        def converted(*args):
            _check_tree(in_tree, args)
            return fun(*args)
        return converted, []
    out_store = {}

    def flat(*xs):
        args, kwargs = tree_util.tree_unflatten(in_tree, list(xs))
        out, out_store["tree"] = tree_util.tree_flatten(fun(*args, **kwargs))
        return out

    t = Traced(flat, _flat_avals(leaves))
    hoisted = [c for c in t.captured if _perturbable(c)]
    kept = [c for c in t.captured if not _perturbable(c)]
    positions = [i for i, c in enumerate(t.captured) if _perturbable(c)]
    name, out_avals, n_out, out_tree = t.name, t.out_avals, t.n_out, out_store["tree"]

    def converted(*args_and_consts):
        n = len(args_and_consts) - len(hoisted)
        args, consts = args_and_consts[:n], list(args_and_consts[n:])
        flat_args = _check_tree(in_tree, args)
        captured, it, rest = [], iter(consts), iter(kept)
        for i in range(len(t.captured)):
            captured.append(next(it) if i in positions else next(rest))
        outs = ad._call(name, [core.as_value(x) for x in flat_args] + captured, out_avals)
        return tree_util.tree_unflatten(out_tree, outs[:n_out])
    return converted, hoisted


def _check_tree(in_tree, args):
    flat, tree = tree_util.tree_flatten((tuple(args), {}))
    if tree != in_tree:
        raise TypeError("The inputs to the closure produced by closure_convert must have the "
                        "same Pytree structure as the example arguments passed when "
                        f"closure_convert was called. Expected {in_tree}, but got {tree} "
                        f"(at {core.where()})")
    return flat


def custom_gradient(fun):
    """`jax.custom_gradient`: `fun(*args)` returns `(value, vjp_fn)`; the
    result is a function returning `value` whose reverse-mode derivative
    applies `vjp_fn` to the output cotangent (one cotangent per positional
    argument, or a single one for a single argument). Built on custom_vjp:
    `vjp_fn` is traced in the forward pass, and the values it closes over
    are its residuals."""
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        sig = None
    # The latest forward pass's traced rule: (symbol, result avals, result
    # tree, cotangent tree); custom_vjp traces bwd right after fwd.
    rules = {}

    def positional(args, kwargs):
        if not kwargs:
            return args
        if sig is None:
            raise TypeError(f"custom_gradient: keyword arguments need a function with a "
                            f"signature (at {core.where()})")
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.args + tuple(bound.kwargs.values())

    @ad.custom_vjp
    def primal(*args):
        return fun(*args)[0]

    def fwd(*args):
        ans, rule = fun(*args)
        leaves, tree = tree_util.tree_flatten(ans)
        store = {}

        def flat_rule(*cts):
            out = rule(tree_util.tree_unflatten(tree, list(cts)))
            flat_out, store["tree"] = tree_util.tree_flatten(out)
            return flat_out

        t = Traced(flat_rule, _flat_avals(leaves))
        rules["last"] = (t.name, t.out_avals[:t.n_out], store["tree"], tree)
        return ans, list(t.captured)

    def bwd(res, ct):
        name, out_avals, rule_tree, tree = rules["last"]
        cts = tree_util.tree_leaves(ct)
        outs = ad._call(name, [core.as_value(c) for c in cts] + list(res), out_avals)
        out = tree_util.tree_unflatten(rule_tree, outs)
        if tree_util.treedef_is_leaf(rule_tree):
            out = (out,)
        return tuple(out)

    primal.defvjp(fwd, bwd)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        return primal(*positional(args, kwargs))
    return wrapped

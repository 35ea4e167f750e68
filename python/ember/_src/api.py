"""jit and friends."""

import collections
import functools
import inspect
import logging
import os
import sys
import types
import weakref

import numpy as np

from ember._mlir import ir
from ember._mlir._mlir_libs import _ember_runtime

from . import compiler, core, cost, dtypes, hitypes, spmd, state, targets, tree_util
from . import devices as devices_lib
from .api_util import argument_paths, flatten_args, flatten_fun
from .config import config as _config
from .config import on_change
from .core import Array, as_value
from .targets import get_target

# Every live jit object, weakly: the configuration's changes clear their
# caches, and a dead one (transformations outside `jit` make one per call)
# is not kept alive.
_jit_objects = weakref.WeakSet()


class _JitCache(dict):
    """A function's compiled programs by call signature. All of them together
    are bounded by `config.ember_program_cache_size`, least recently used
    out first (`_jit_lru`); evicting an entry clears the C++ fast paths of
    the jit objects using this cache (`users`), which learn their
    signatures again on their next call."""

    def __init__(self):
        super().__init__()
        self.users = weakref.WeakSet()

    def lookup(self, key):
        entry = self.get(key)
        if entry is not None:
            _jit_lru[(id(self), key)] = weakref.ref(self)
            _jit_lru.move_to_end((id(self), key))
        return entry

    def store(self, key, entry):
        self[key] = entry
        _jit_lru[(id(self), key)] = weakref.ref(self)
        while len(_jit_lru) > max(_config.ember_program_cache_size, 1):
            (_, old_key), ref = _jit_lru.popitem(last=False)
            cache = ref()
            if cache is not None and cache.pop(old_key, None) is not None:
                for j in list(cache.users):
                    j._forget_signatures()


# Every jit cache's entries, least recently used first (see _JitCache).
_jit_lru = collections.OrderedDict()

# The compiled programs of the jit objects of one function, by the jit
# options that change them: `jit(f)(x)` twice traces `f` once, as JAX keys
# its cache by the function (weakly), so `f` reading a global sees the value
# of the first trace (JAX's "pure functions" gotcha).
_shared_caches = weakref.WeakKeyDictionary()


def _shared_cache(fun, options):
    try:
        return _shared_caches.setdefault(fun, {}).setdefault(options, _JitCache())
    except TypeError:  # not weakly referable or not hashable: its own cache
        return _JitCache()


@on_change
def _clear_jit_caches():
    # (Also the shared caches of functions with no live jit object: a later
    # `jit(f)` must not find programs traced under the old configuration.)
    for per_fun in list(_shared_caches.values()):
        for cache in per_fun.values():
            cache.clear()
    _jit_lru.clear()
    for j in list(_jit_objects):
        j.cache.clear()
        j._forget_signatures()


def _is_array_leaf(x):
    return isinstance(x, (core.Value, np.ndarray, np.generic, int, float, complex, bool))


def _ref_leaves(leaves, name, paths=None):
    """Positions of the `Ref` arguments among `leaves` (each ref at most once,
    as JAX requires). `paths()`: the leaves' argument names (for errors),
    which each Ref keeps as `_arg_path` for the trace's errors."""
    pos, seen = [], {}
    names = None
    for i, x in enumerate(leaves):
        if isinstance(x, state.Ref):
            if names is None:
                names = paths() if paths is not None else []
                if len(names) != len(leaves):  # (names only where they line up)
                    names = [None] * len(leaves)
            if id(x) in seen:
                both = (f"at both {names[seen[id(x)]]} and {names[i]}"
                        if names[i] is not None else "twice")
                raise core.type_error(
                    f"only one reference to a mutable array may be passed as an argument to "
                    f"a function, but when tracing {name} for jit the mutable array "
                    f"reference of type {state.type_str(x)} appeared {both}.")
            seen[id(x)] = i
            x._arg_path = names[i]
            pos.append(i)
    return pos


def _with_ref_args(flat_fun, ref_pos, actual):
    """`flat_fun` taking the values of its `Ref` arguments (at `ref_pos`) and
    returning their final values after its results: inside, each is a ref
    again. `actual`: the caller's refs (closing over one of them as well is
    an error)."""
    if not ref_pos:
        return flat_fun

    def f(*xs):
        xs = list(xs)
        trace = core.current_trace()
        trace.arg_refs = {id(r): getattr(r, "_arg_path", None) for r in actual}
        trace.traced_fun = getattr(flat_fun, "fun", None)
        refs = []
        for i, a in zip(ref_pos, actual):
            r = state.Ref(xs[i], array_ref=True)
            r._home = None  # an argument: only its creator may freeze it
            r._arg_path = getattr(a, "_arg_path", None)
            xs[i] = r
            refs.append(r)
        outs = flat_fun(*xs)
        return list(outs) + [r._value for r in refs]
    return f


def _gpu_of(avals):
    """The GPU a computation on `avals` runs on: the one arguments committed
    to a GPU are on, else the `default_device(...)` if it is a GPU (None:
    the CPU)."""
    for a in avals:
        s = getattr(a, "sharding", None)
        if isinstance(s, devices_lib.SingleDeviceSharding):
            (dev,) = s.device_set
            if dev.platform == "gpu":
                return dev
    return devices_lib.default_gpu()


def _run_on_gpu(exe, vals, device):
    """Calls the cuda executable `exe` on device buffers (arguments not on
    the GPU are copied there); its results stay on the GPU."""
    bufs = [core.GpuArray.from_array(v, device)._buffer for v in vals]
    # (The results' avals on `device`, made once per executable and device.)
    cache = exe.__dict__.setdefault("_gpu_out_avals", {})
    avals = cache.get(device)
    if avals is None:
        sharding = devices_lib.SingleDeviceSharding(device)
        avals = cache[device] = [a.update(sharding=sharding) for a in exe.out_avals]
    return [core.GpuArray(b, a) for b, a in zip(exe.kernel.call_device(bufs), avals)]


def _run(exe, vals, refs, lifted, ref_pos=()):
    """Calls `exe` on `vals` and the lifted refs' values; writes the final
    values of `refs` (the Ref arguments, at `ref_pos` of `vals`) and
    `lifted` back, or has them updated in place (`_run_in_place`); returns
    the function's own results."""
    for r in lifted:
        state.check_access(r)  # frozen since it was compiled in, say
    if exe.target.name == "cuda":
        # (The refs' new values stay on the GPU, as the results do.)
        arrays = _run_on_gpu(exe, list(vals) + [r._value for r in lifted],
                             _gpu_of([v.aval for v in vals]))
    elif getattr(exe, "ref_weak_types", None) is not None:
        return _run_in_place(exe, vals, ref_pos, refs, lifted)
    else:
        outs = exe([v._value for v in vals] + [r._value._value for r in lifted])
        arrays = [Array(o, a.weak_type) if a.sharding is None else
                  Array.with_sharding(o, a.weak_type, a.sharding)
                  for o, a in zip(outs, exe.out_avals)]
    n = len(arrays) - len(refs) - len(lifted)
    for r, a in zip(list(refs) + list(lifted), arrays[n:]):
        r._value = a
    return arrays[:n]


def _run_blocks(exe, vals, plan):
    """Calls the program of this process of an MPI job (`spmd.Plan`) on its
    blocks of `vals`, or each in-process device's (`spmd.ThreadsPlan`) on
    its blocks, on a thread each; the results are whole (assembled from
    the devices' blocks where they are split)."""
    values = [v._value for v in vals]
    if plan.threads:
        shared = plan.shared_results(exe.out_splits, exe.out_avals)
        per_device = exe.call_on_devices(plan.device_blocks(values), shared, exe.out_avals)
        outs = plan.assemble(per_device, exe.out_splits, exe.out_avals, shared)
    else:
        outs = exe(plan.blocks(values))
    return [Array(o, a.weak_type) if a.sharding is None else
            Array.with_sharding(o, a.weak_type, a.sharding)
            for o, a in zip(outs, exe.out_avals)]


# EMBER_REFS_IN_PLACE=0: jitted functions take their refs' values and
# return their new ones instead (docs/design.md, "Mutable array refs").
_refs_in_place = os.environ.get("EMBER_REFS_IN_PLACE", "1") != "0"


def _own_buffer(ref, held):
    """The NumPy buffer of `ref`'s array, for compiled code to update in
    place: the array's own unless something besides the ref (and `held`
    references of the caller) holds the array or its buffer (a value read
    from the ref, a NumPy view of it), in which case the ref takes a copy
    first, so that what was read keeps its value."""
    arr = ref._value
    buf = arr._value
    # A view of a view of the memory NumPy makes a view of the array owning
    # it, so that array is counted too (a compiled result is a view of the
    # runtime's buffer).
    owner = buf.base if isinstance(buf.base, np.ndarray) else None
    # (References counted: the ref's (`buf.base` for the owner), `arr`/`buf`/
    # `owner` here, getrefcount's own.)
    if type(arr) is not Array or sys.getrefcount(arr) > 3 + held or \
            sys.getrefcount(buf) > 3 or (owner is not None and sys.getrefcount(owner) > 3):
        buf = np.array(buf, copy=True)
        buf.flags.writeable = False
        ref._value = Array(buf, arr.aval.weak_type)
    return buf


def _run_in_place(exe, vals, ref_pos, refs, lifted):
    """Calls `exe`, compiled with its refs as `!ember.ref` arguments
    (`core.refs_in_place`: the Ref arguments at `ref_pos` of `vals`, then
    the lifted refs), on the refs' own buffers, which it updates in place;
    returns the function's results."""
    args = [v._value for v in vals]
    for i, r in zip(ref_pos, refs):
        args[i] = None  # (else `args` holds the buffer once more)
        args[i] = _own_buffer(r, held=1)  # (`vals` holds the array too)
    args += [_own_buffer(r, held=0) for r in lifted]
    outs = exe(args)
    for r, weak in zip(list(refs) + list(lifted), exe.ref_weak_types):
        if r._value.aval.weak_type != weak:
            r._value = Array(r._value._value, weak)
    return [Array(o, a.weak_type) if a.sharding is None else
            Array.with_sharding(o, a.weak_type, a.sharding)
            for o, a in zip(outs, exe.out_avals)]


class ArgInfo:
    """JAX's `jax.stages.ArgInfo`: one argument leaf of a stage, its abstract
    value and whether it is donated."""

    __slots__ = ("_aval", "donated")

    def __init__(self, _aval, donated):
        self._aval, self.donated = _aval, bool(donated)

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype

    def __eq__(self, other):
        return (isinstance(other, ArgInfo) and self._aval == other._aval
                and self.donated == other.donated)

    def __hash__(self):
        return hash((self._aval, self.donated))

    def __repr__(self):
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


class _StageArgs:
    """What JAX's stages say of their arguments: `args_info` (the pytree of
    (args, kwargs), static arguments left out, of ArgInfo), `in_avals`
    (the same tree of abstract values) and `donate_argnums` (the donated
    leaves' flat indices)."""

    @property
    def in_tree(self):
        """The treedef of (args, kwargs), static arguments left out."""
        return self._in_tree

    @property
    def args_info(self):
        return tree_util.tree_unflatten(self._in_tree, [
            ArgInfo(a, d) for a, d in zip(self._in_avals, self._donated)])

    @property
    def in_avals(self):
        return tree_util.tree_unflatten(self._in_tree, list(self._in_avals))

    @property
    def donate_argnums(self):
        return tuple(i for i, d in enumerate(self._donated) if d)


class Lowered(_StageArgs):
    def __init__(self, jitted, module_text, exe_factory, platform="cpu", source=None):
        self._text = module_text
        # The same module with its locations (the user's lines), which the
        # stages compile so that their errors point at user code.
        self._source = source or module_text
        self._factory = exe_factory
        self._target = get_target(platform)

    def as_text(self, stage="ember"):
        """The IR of `stage`: "ember" (as traced), "transforms" (every
        grad/vmap/custom rule expanded), "stablehlo" (the transformed
        program as StableHLO, generic form), "optimize", then the target's
        codegen stages ("llvm" on the CPU, also called "cpu-codegen";
        "gpu", "nvvm", "binary" and the kernels' "ptx" for cuda)."""
        if stage == "ember":
            return self._text
        return compiler.stage_text(self._source, stage, self._target)

    def compiler_ir(self, dialect=None):
        """The traced program as an MLIR module: the `ember` dialect, or
        with `dialect="stablehlo"` its StableHLO translation (parsed in a
        context of its own with the StableHLO dialects unregistered, since
        Ember's MLIR does not carry them)."""
        if dialect == "stablehlo":
            ctx = ir.Context()
            ctx.allow_unregistered_dialects = True
            with ctx:
                return ir.Module.parse(self.as_text("stablehlo"))
        if dialect not in (None, "ember"):
            raise ValueError(f"compiler_ir: Ember's IR is the 'ember' dialect or 'stablehlo', "
                             f"not {dialect!r}")
        with core.context():
            return ir.Module.parse(self._text)

    def cost_analysis(self):
        """Estimated flops, transcendentals and bytes accessed (`cost.py`)."""
        return cost.cost_analysis(self.as_text("optimize"))

    def compile(self):
        if self._target.name != "cpu":
            return self._compile_for_target()
        compiled = Compiled(self._factory())
        compiled._lowered = self
        compiled._in_tree, compiled._in_avals = self._in_tree, self._in_avals
        compiled._donated = self._donated
        return compiled


    def _compile_for_target(self):
        """Compiled for another target than the CPU: every stage compiled
        (errors surface at the user's lines), then loaded (on the GPU for
        cuda; the tpu target says it cannot run)."""
        from .targets import cuda

        self.as_text(self._target.stages[-1][0])
        if self._target is not cuda.CUDA:  # (it says why it cannot run)
            self._target.load(None, 0, [], [])
        cuda.require_gpu()
        out_tree = tree_util.tree_structure(self.out_info)
        if out_tree.num_leaves != len(self._out_avals):
            raise NotImplementedError("Ref arguments of a function compiled for cuda are not "
                                      "supported")
        with core.context():
            module = ir.Module.parse(self._source)
        exe = compiler.Executable(module, self._in_avals, self._out_avals, target=self._target,
                                  text=self._text)
        compiled = Compiled((exe, out_tree))
        compiled._lowered = self
        compiled._in_tree, compiled._in_avals = self._in_tree, self._in_avals
        compiled._donated = self._donated
        return compiled


class Traced(_StageArgs):
    """`jit(f).trace(*args)`: the traced program, before lowering."""

    def __init__(self, jitted, module_text, exe_factory, out_info, source=None):
        self._jitted = jitted
        self._text = module_text
        self._source = source
        self._factory = exe_factory
        self.out_info = out_info
        # The platform traced for, and, where the program has branches of
        # `platform_dependent`, a trace for another platform.
        self._platform = "cpu"
        self._retrace = None
        self._export = None

    @property
    def jaxpr(self):
        """The traced program in jaxpr form (transformations expanded)."""
        from .jaxpr import closed_jaxpr_of

        return closed_jaxpr_of(self._text, self._in_avals, self._out_avals)

    def lower(self, *, lowering_platforms=None):
        """Lowered for `lowering_platforms` ("cpu", "cuda"/"gpu", "tpu"); by
        default the CPU. For several platforms, JAX's multi-platform module
        (its first argument the platform index), made as an export for
        them makes it; only a single platform's lowering compiles."""
        platforms = tuple(lowering_platforms or ("cpu",))
        if len(platforms) != 1:
            return _SymbolicLowered(self._export(platforms), self.out_info)
        name = get_target(platforms[0]).name
        if name != self._platform and self._retrace is not None:
            # (`platform_dependent` chose the traced platform's branches)
            return self._retrace(name).lower(lowering_platforms=platforms)
        low = Lowered(self._jitted, self._text, self._factory, platforms[0], self._source)
        low._in_tree, low.out_info = self._in_tree, self.out_info
        low._in_avals, low._out_avals = self._in_avals, self._out_avals
        low._donated = self._donated
        return low


class Compiled(_StageArgs):
    """A compiled function for the argument signature it was lowered with."""

    def __init__(self, entry, static=()):
        self._entry = entry
        # (The refs the function closes over, when compiled for the CPU.)
        self._exe, self._out_tree, *lifted = entry
        self._lifted = lifted[0] if lifted else []
        self._static = static

    def cost_analysis(self):
        """Estimated flops, transcendentals and bytes accessed (`cost.py`)."""
        return cost.cost_analysis(self.as_text("optimize"))

    def memory_analysis(self):
        """Argument and output sizes; temporaries as an upper bound (`cost.py`)."""
        return cost.memory_analysis(self.as_text("optimize"), self._exe.in_avals,
                                    self._exe.out_avals)

    @property
    def out_tree(self):
        return self._out_tree

    def as_text(self, stage="llvm"):
        stage = self._exe.target.stage_name(stage)
        if stage in self._exe.stages:
            return self._exe.stages[stage]
        return compiler.stage_text(self._exe.ember_text, stage, self._exe.target)

    def __call__(self, *args, **kwargs):
        leaves = tree_util.tree_leaves_lo((list(args), kwargs))
        ref_pos = _ref_leaves(leaves, "a compiled function")
        refs = [leaves[i] for i in ref_pos]
        for r in refs:
            state.check_access(r)
        vals = [x._value if i in ref_pos else as_value(x) for i, x in enumerate(leaves)]
        avals = [v.aval for v in vals] + [r._value.aval for r in self._lifted]
        if avals != list(self._exe.in_avals):
            raise TypeError("Compiled function called with arguments of different types than "
                            f"it was compiled for (at {core.where()})")
        if refs or self._lifted:
            outs = _run(self._exe, vals, refs, self._lifted, ref_pos)
        else:
            outs = [Array(o, a.weak_type)
                    for o, a in zip(self._exe([v._value for v in vals]), self._exe.out_avals)]
        return tree_util.tree_unflatten(self._out_tree, outs)


# `export.export(jitted)(*args, **kwargs)`, set by export.py (a higher
# layer): `jit(f).trace` of symbolic specs traces as export does.
symbolic_trace_hook = None
# export._PolymorphicJit: jit(f, polymorphic_shapes=...).
polymorphic_jit_hook = None


class _SymbolicTraced:
    """`jit(f).trace(*args)` with symbolic dimensions in the arguments'
    shapes (`export.symbolic_shape`): the program traced as
    `export(jit(f))` traces it. It lowers to StableHLO with `?` dimensions
    (`as_text()`, as JAX's shape-polymorphic lowering); `compile()` gives
    one program for every size (beyond JAX)."""

    def __init__(self, exported):
        self._exported = exported
        self.out_info = tree_util.tree_unflatten(
            exported.out_tree, [core.ShapeDtypeStruct(a.shape, a.dtype)
                                for a in exported.out_avals])
        self.in_avals = exported.in_avals
        self._retrace = self._export = None

    def lower(self, *, lowering_platforms=None):
        """Lowered for one platform (its branches of `platform_dependent`,
        its kernels); only the CPU's compiles here."""
        platforms = tuple(lowering_platforms or ("cpu",))
        if len(platforms) != 1:
            return _SymbolicLowered(self._export(platforms), self.out_info)
        name = get_target(platforms[0]).name
        exported = self._exported if name == "cpu" else self._retrace(name)
        return _SymbolicLowered(exported, self.out_info)


class _SymbolicLowered:
    """`jit(f).trace(...).lower()` of a shape-polymorphic trace, or for
    several platforms at once (JAX's multi-platform module: an export)."""

    def __init__(self, exported, out_info):
        self._exported = exported
        self.out_info = out_info
        self.in_tree = exported.in_tree

    def as_text(self, stage="stablehlo"):
        """"stablehlo" (the default here, as JAX's): `?` dimensions, the
        variables read from the arguments; "ember": the traced program with
        its `ember.sym_*` annotations. The later stages need the sizes."""
        if stage == "stablehlo":
            return self._exported.mlir_module()
        if stage == "ember":
            return self._exported.ember_module()
        raise NotImplementedError(
            f"as_text({stage!r}) of a program with symbolic dimensions: the stages after "
            "'stablehlo' are built for concrete sizes or, by compile(), for every size")

    def compiler_ir(self, dialect="stablehlo"):
        if dialect != "stablehlo":
            raise NotImplementedError("compiler_ir of a program with symbolic dimensions: "
                                      "only dialect='stablehlo'")
        ctx = ir.Context()
        ctx.allow_unregistered_dialects = True
        with ctx:
            return ir.Module.parse(self.as_text("stablehlo"))

    def compile(self):
        """Beyond JAX (whose compile needs concrete shapes): one program for
        every size of the variables (design.md, "One compile for every
        size"), compiled here; where it cannot be built, each call's set of
        sizes compiles on first use (the reason: `dynamic_reason`)."""
        if len(self._exported.platforms) != 1:
            raise NotImplementedError(
                f"compile() of a program lowered for several platforms "
                f"{self._exported.platforms}: lower it for one "
                "(`lower(lowering_platforms=(p,))`) to compile it")
        if self._exported.platforms != ("cpu",):
            raise NotImplementedError(
                f"compile() of a program with symbolic dimensions lowered for "
                f"{self._exported.platforms[0]}: Ember runs those on the CPU only")
        self._exported._dynamic_executable()
        return _SymbolicCompiled(self._exported, self.out_info)


class _SymbolicCompiled:
    """`jit(f).trace(symbolic specs).lower().compile()`: callable with
    arguments of any sizes the symbolic shapes allow (JAX's shape errors
    otherwise)."""

    def __init__(self, exported, out_info):
        self._exported = exported
        self.out_info = out_info
        self.in_tree = exported.in_tree
        self.dynamic_reason = exported._dynamic_reason

    def __call__(self, *args, **kwargs):
        return self._exported.call(*args, **kwargs)


class _AbstractArg:
    """A `ShapeDtypeStruct` argument of `jit(f).trace`/`.lower`: only its
    aval is used."""

    def __init__(self, spec):
        self.aval = core.ShapedArray(spec.shape, dtypes.canonicalize_dtype(spec.dtype),
                                     bool(getattr(spec, "weak_type", False)))


_miss_logger = logging.getLogger("ember.jit")


def _parameter_name(fun, k):
    """A static argument's name: a keyword's, or its position's parameter."""
    if isinstance(k, str):
        return k
    try:
        params = [p.name for p in inspect.signature(fun).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[k] if k < len(params) else f"argument {k}"
_callsites_with_misses = set()


def _explain_cache_miss(jitted, key, args, kwargs):
    """`jax_explain_cache_misses`: why a call of a user's function traces it
    again, compared with the closest of the calls before (JAX's order of
    causes: the arguments' structure, the static arguments, their types),
    logged as a warning as JAX logs it."""
    fun = jitted.fun
    code = getattr(fun, "__code__", None)
    if code is None or code.co_filename.startswith(core._EMBER_DIR):
        return  # (only users' functions, as JAX)
    where = core.user_position()
    site = f"{where[0]}:{where[1]}:{where[2]} ({where[3].co_name})" if where else "<unknown>"
    name = getattr(fun, "__name__", "fun")
    defined = f" defined at {code.co_filename}:{code.co_firstlineno}"
    lines = [f"TRACING CACHE MISS at {site}:"]
    if not jitted.cache:
        lines.append(f"  never seen function:\n    {name} id={id(fun)}{defined}")
        if site in _callsites_with_misses:
            lines.append("  but seen another function defined on the same line; maybe the "
                         "function is\n  being re-defined repeatedly, preventing caching?")
        _callsites_with_misses.add(site)
        _miss_logger.warning("\n".join(lines))
        return
    lines.append(f"  for {name}{defined}")
    lines.append("  all previously seen cache keys differ. For the closest previous key:")
    static_names = jitted.static_argnames
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
    paths = [p for p, _ in argument_paths(fun, args, dyn_kwargs, jitted.static_argnums)]

    def diff(old):
        static, treedef, avals = key[0], key[1], key[2]
        if treedef != old[1]:
            return 1, 1, ("different input pytree:\n"
                          f"  * now {treedef} and before {old[1]}")
        if static != old[0]:
            # (A static argument's type counts: 3 and 3.0 trace differently.)
            new_s = {k: (t, v) for k, t, v in static}
            old_s = {k: (t, v) for k, t, v in old[0]}
            missing = (None, "<not given>")
            items = [f"  * at {_parameter_name(fun, k)}, now {new_s.get(k, missing)[1]!r} "
                     f"and before {old_s.get(k, missing)[1]!r}"
                     for k in sorted(set(new_s) | set(old_s), key=str)
                     if new_s.get(k, missing) != old_s.get(k, missing)]
            return 2, len(items), "different static arguments:\n" + "\n".join(items)
        items, weak = [], False
        for i, (new, prev) in enumerate(zip(avals, old[2])):
            if new == prev:
                continue
            new_str, old_str = new.str_short(True), prev.str_short(True)
            if new.weak_type != prev.weak_type:
                weak = True
                new_str += f"{{weak_type={new.weak_type}}}"
                old_str += f"{{weak_type={prev.weak_type}}}"
            items.append(f"  * at {paths[i] if i < len(paths) else f'argument {i}'}, now "
                         f"{new_str} and before {old_str}")
        if items:
            text = "different input types:\n" + "\n".join(items)
            if weak:
                text += "https://docs.jax.dev/en/latest/type_promotion.html#weak-types"
            return 3, len(items), text
        return 4, 0, "cache miss explanation unavailable"

    lines.append("  " + min(diff(old) for old in jitted.cache)[-1])
    _miss_logger.warning("\n".join(lines))


def _prepare_args(fun, static_argnums, static_argnames, args, kwargs, abstract_ok=False):
    """Splits a call's arguments into the static ones ((position or name,
    value) pairs), the treedef of the others and their flat Values, with the
    positions of Ref leaves and the Refs."""
    static = []
    dyn_args = []
    for i, a in enumerate(args):
        if i in static_argnums:
            static.append((i, a))
        else:
            dyn_args.append(a)
    dyn_kwargs = {}
    for k, v in kwargs.items():
        if k in static_argnames:
            static.append((k, v))
        else:
            dyn_kwargs[k] = v
    try:
        hash(tuple(static))
    except TypeError:
        raise ValueError("Non-hashable static arguments are not supported; "
                         f"got {static}") from None
    leaves, treedef = flatten_args(dyn_args, dyn_kwargs)
    ref_pos = _ref_leaves(leaves, core.describe_function(fun), lambda: [
        p for p, _ in argument_paths(fun, args, dyn_kwargs, static_argnums)])
    refs = [leaves[i] for i in ref_pos]
    vals = []
    for x in leaves:
        if isinstance(x, state.Ref):
            state.check_access(x)
            vals.append(x._value)
            continue
        if abstract_ok and isinstance(x, core.ShapeDtypeStruct):
            vals.append(_AbstractArg(x))
            continue
        if not _is_array_leaf(x):
            raise _invalid_argument(fun, static_argnums, args, kwargs, x)
        vals.append(as_value(x))
    return static, treedef, vals, ref_pos, refs


def _invalid_argument(fun, static_argnums, args, kwargs, leaf):
    """JAX's TypeError for a non-array leaf `leaf` of a jitted call's
    dynamic arguments, naming its path (the parameter, then keys)."""
    path = next((p for p, v in argument_paths(fun, args, kwargs, static_argnums)
                 if v is leaf), "args")
    if isinstance(leaf, core.ShapeDtypeStruct):
        return core.type_error(
            f"Argument '{path}' of shape {core.ShapedArray(leaf.shape, leaf.dtype).str_short()} "
            f"of type {type(leaf)} is not a valid JAX type.")
    return core.type_error(
        f"Error interpreting argument to {fun!r} as an abstract array. The problematic value "
        f"is of type {type(leaf)} and was passed to the function at path {path}.\nThis "
        "typically means that a jit-wrapped function was called with a non-array argument, "
        "and this argument was not marked as static using the static_argnums or "
        "static_argnames parameters of jax.jit.")


def _check_devices(fun, sig, args, kwargs, static_argnums, static_argnames):
    """JAX's error for arguments committed to different devices (or to
    meshes over different devices), named as JAX names them."""
    def name_of(pos):
        params = list(sig.parameters) if sig is not None else []
        return params[pos] if pos < len(params) else f"args[{pos}]"

    seen = None
    named = [(name_of(i), a) for i, a in enumerate(args) if i not in static_argnums] + \
        [(k, v) for k, v in kwargs.items() if k not in static_argnames]
    for pname, arg in named:
        for path, leaf in tree_util.tree_flatten_with_path(arg)[0]:
            if not isinstance(leaf, Array) or leaf.aval.sharding is None:
                continue
            sh = leaf.aval.sharding
            ids = ([d.id for d in sh.mesh.devices.flat] if hasattr(sh, "mesh")
                   else [d.id for d in sh.device_set])
            what = (f"argument {pname}{tree_util.keystr(path)} of "
                    f"{getattr(fun, '__qualname__', None) or getattr(fun, '__name__', 'fun')} "
                    f"with shape {leaf.aval.str_short()} and "
                    f"with device ids {ids} on platform CPU")
            if seen is None:
                seen = (set(ids), what)
            elif set(ids) != seen[0]:
                raise ValueError("Received incompatible devices for jitted computation. Got "
                                 f"{seen[1]} and {what}")


def _validate_static_args(sig, static_argnums, static_argnames):
    """JAX's checks of `jit`'s static arguments against the signature: an
    index past the positional parameters (without *args), a name that is no
    parameter (without **kwargs)."""
    kinds = [p.kind for p in sig.parameters.values()]
    P = inspect.Parameter
    if P.VAR_POSITIONAL not in kinds:
        n = sum(k in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD) for k in kinds)
        for i in static_argnums:
            if not -n <= i < n:
                raise ValueError(f"Jitted function has static_argnums={tuple(static_argnums)}, "
                                 f"but only accepts {n} positional arguments.")
    if P.VAR_KEYWORD not in kinds:
        names = {k for k, p in sig.parameters.items()
                 if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY)}
        bad = set(static_argnames) - names
        if bad:
            raise ValueError(f"Jitted function has invalid argnames {bad} in static_argnames. "
                             "Function does not take these args.")


class JitWrapped:
    def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
                 donate_argnames=()):
        functools.update_wrapper(self, fun)
        # (What the function carries in its __dict__ does not hide the jit
        # object's own methods: a pallas_call's GPU `lower`, say.)
        for name in [n for n in vars(self) if not n.startswith("__") and hasattr(type(self), n)]:
            del self.__dict__[name]
        self.fun = fun
        if isinstance(static_argnums, int):
            static_argnums = (static_argnums,)
        if isinstance(static_argnames, str):
            static_argnames = (static_argnames,)
        self.static_argnums = tuple(static_argnums)
        self.static_argnames = tuple(static_argnames)
        try:
            self.sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self.sig = None
        if self.sig is not None:
            _validate_static_args(self.sig, self.static_argnums, self.static_argnames)
            params = list(self.sig.parameters)
            for n in self.static_argnames:
                if n in params and params.index(n) not in self.static_argnums:
                    self.static_argnums += (params.index(n),)
            for i in self.static_argnums:
                if i < len(params) and params[i] not in self.static_argnames:
                    self.static_argnames += (params[i],)
            donate = (donate_argnums,) if isinstance(donate_argnums, int) else donate_argnums
            both = {params[i] for i in donate if 0 <= i < len(params)} & \
                set(self.static_argnames)
            if both:
                raise ValueError("static_argnames and donate_argnames cannot intersect. "
                                 f"Argument names {both} appear in both static_argnames and "
                                 "donate_argnames")
        donate = (donate_argnums,) if isinstance(donate_argnums, int) else donate_argnums
        self.donate_argnums = tuple(int(i) for i in donate)
        self.donate_argnames = ((donate_argnames,) if isinstance(donate_argnames, str)
                                else tuple(donate_argnames))
        self.cache = _shared_cache(fun, (self.static_argnums, self.static_argnames))
        self._fast = _ember_runtime.FastJit(Array)
        # Calls with pytrees of Arrays (a training step's parameters), or
        # pytree results: the arguments' tree -> (a FastJit keyed by the
        # leaves' signatures, the output tree) (_register_fast).
        self._tree_fast = {}
        # The GPU's fast path: GpuArray arguments' signatures -> (executable,
        # output tree, device) (_register_gpu_fast).
        self._gpu_fast = {}
        self.cache.users.add(self)
        _jit_objects.add(self)

    def clear_cache(self):
        """JAX's: forgets this function's compiled programs."""
        self.cache.clear()
        self._forget_signatures()

    def _prepare(self, args, kwargs, abstract_ok=False):
        return _prepare_args(self.fun, self.static_argnums, self.static_argnames, args,
                             kwargs, abstract_ok)

    def _make(self, static, treedef, avals, ref_pos=(), refs=(), plan=None):
        flat_fun, out_tree = flatten_fun(self.fun, treedef, static, traced_for="jit")
        lifted = []
        # (The computation follows its data.)
        target = _cuda_target() if _gpu_of(avals) is not None else None
        with targets.lowering_platforms((target.name if target else "cpu",)):
            exe = core.compile_function(_with_ref_args(flat_fun, ref_pos, refs), avals,
                                        lifted=lifted, target=target,
                                        ref_args=ref_pos if _refs_in_place else None,
                                        partition=plan)
        return exe, out_tree(), lifted

    def __call__(self, *args, **kwargs):
        if _config.jax_debug_nans or _config.jax_debug_infs:
            return self._call_checked(args, kwargs)
        if not _config.jax_disable_jit and (
                not devices_lib._defaults_set or devices_lib.set_default_device() is None):
            out = self._fast(*args, **kwargs)
            if out is not None:
                return out
            if self._tree_fast and not kwargs:
                leaves, tree = tree_util.tree_flatten(args)
                entry = self._tree_fast.get(tree)
                if entry is not None and (out := entry[0](*leaves)) is not None:
                    return tree_util.tree_unflatten(entry[1], out)
        if self._gpu_fast and not kwargs and not _config.jax_disable_jit and \
                not core._trace_stack:
            sigs = tuple(a._sig if type(a) is core.GpuArray else None for a in args)
            hit, leaves = self._gpu_fast.get(sigs), args
            if hit is None and None in sigs:  # (pytrees of GpuArrays: by tree)
                leaves, tree = tree_util.tree_flatten(args)
                if all(type(v) is core.GpuArray for v in leaves):
                    hit = self._gpu_fast.get((tree, tuple(v._sig for v in leaves)))
            if hit is not None:
                exe, out_tree, device = hit
                return tree_util.tree_unflatten(out_tree, _run_on_gpu(exe, leaves, device))
        return self._call_slow(args, kwargs)

    def _forget_signatures(self):
        self._fast.clear()
        self._tree_fast.clear()
        self._gpu_fast.clear()

    def _register_gpu_fast(self, args, kwargs, static, vals, exe, out_tree):
        """The GPU's fast path learns a call's signature when it can serve it:
        positional arguments that are GpuArrays or pytrees of them (committed
        to the GPU the program runs on: the computation follows them), the
        program's operands in their flattened order, no Refs."""
        if kwargs or static or not all(type(v) is core.GpuArray for v in vals):
            return
        if len(vals) == len(args) and all(a is v for a, v in zip(args, vals)):
            key = tuple(v._sig for v in vals)
        else:
            leaves, tree = tree_util.tree_flatten(args)
            if len(leaves) != len(vals) or any(a is not v for a, v in zip(leaves, vals)):
                return
            key = (tree, tuple(v._sig for v in vals))
        device = _gpu_of([v.aval for v in vals])
        if any(v.aval.sharding.device_set != {device} for v in vals):
            return
        self._gpu_fast[key] = (exe, out_tree, device)

    def _call_slow(self, args, kwargs):
        if _config.jax_disable_jit:
            return self.fun(*args, **kwargs)
        static, treedef, vals, ref_pos, refs = self._prepare(args, kwargs)
        if core.find_trace(vals) is not None or core._trace_stack:
            # Inside another trace: inline (the outer jit compiles everything),
            # the function seeing its non-static arguments as arrays (a
            # Python scalar weakly typed), as under JAX's jit.
            if ref_pos:
                return self.fun(*args, **kwargs)
            flat_fun, out_tree = flatten_fun(self.fun, treedef, static, traced_for="jit")
            flat = flat_fun(*vals)
            return tree_util.tree_unflatten(out_tree(), flat)
        # (A static argument's type is part of the key, as JAX's: 3 and 3.0
        # are equal and hash alike, but trace differently.)
        key = (tuple((k, type(v), v) for k, v in static), treedef,
               tuple(v.aval for v in vals), tuple(ref_pos))
        gpu = _gpu_of([v.aval for v in vals])
        if gpu is not None:
            key += (gpu,)  # (also a default_device GPU's computation)
        shardings = tuple(v.aval.sharding for v in vals)
        if any(s is not None for s in shardings):
            key += (shardings,)  # (the results' shardings follow them)
            distinct = set(shardings) - {None}
            if len(distinct) > 1 and len({frozenset(s.device_set) for s in distinct}) > 1:
                _check_devices(self.fun, self.sig, args, kwargs, self.static_argnums,
                               self.static_argnames)
        # Arrays split over the processes of an MPI job: this process's
        # program, on its blocks (spmd.py).
        plan = None
        if not (ref_pos or refs or gpu is not None) and any(s is not None for s in shardings):
            plan = spmd.plan_for([v.aval for v in vals])
            if plan is not None:
                key += (plan.key,)
        entry = self.cache.lookup(key)
        if entry is None:
            if _config.jax_explain_cache_misses:
                _explain_cache_miss(self, key, args, kwargs)
            entry = self._make(static, treedef, [v.aval for v in vals], ref_pos, refs, plan)
            self.cache.store(key, entry)
        exe, out_tree, lifted = entry
        if plan is not None and not lifted and getattr(exe, "partition_kind", None) is not None:
            return tree_util.tree_unflatten(out_tree, _run_blocks(exe, vals, plan))
        result = tree_util.tree_unflatten(out_tree, _run(exe, vals, refs, lifted, ref_pos))
        if not (refs or lifted) and exe.target.name == "cpu":
            self._register_fast(args, kwargs, static, vals, exe, out_tree)
        elif not (refs or lifted) and exe.target.name == "cuda":
            self._register_gpu_fast(args, kwargs, static, vals, exe, out_tree)
        return result

    def _call_checked(self, args, kwargs):
        """A call under `jax_debug_nans`/`jax_debug_infs` (JAX's protocol):
        a NaN or Inf in the results runs the function again without this
        `jit` (its ops then raise FloatingPointError naming the op that made
        the value), else reports that only the compiled function made it."""
        out = self._call_slow(args, kwargs)
        if _config.jax_disable_jit or core._trace_stack:
            return out
        kind = core.special_kind([np.asarray(v) for v in tree_util.tree_leaves(out)
                                  if isinstance(v, Array)])
        if kind is None:
            return out
        name = getattr(self.fun, "__name__", "fun")
        print("Invalid nan value encountered in the output of a jax.jit function. Calling "
              "the de-optimized version.")
        try:
            self.fun(*args, **kwargs)
        except (FloatingPointError, ZeroDivisionError) as e:
            raise e from None
        raise FloatingPointError(
            f"invalid value ({kind}) encountered in jit({name}). Because "
            "jax_config.debug_nans.value and/or config.jax_debug_infs is set, the "
            "de-optimized function (i.e., the function as if the `jit` decorator were "
            "removed) was called in an attempt to get a more precise error message. However, "
            "the de-optimized function did not produce invalid values during its execution. "
            "This behavior can result from `jit` optimizations causing the invalid value to "
            "be produced. It may also arise from having nan/inf literals as inputs or "
            "outputs, like `jax.jit(lambda ...: jax.numpy.nan)(...)`.")

    def _register_fast(self, args, kwargs, static, vals, exe, out_tree):
        """Teaches the C++ dispatch path this signature when it can serve it:
        positional arguments that are Arrays or pytrees of them. Flat Array
        arguments with one output or a flat tuple go straight to `_fast`;
        otherwise the leaves go to the FastJit of the arguments' tree
        (`_tree_fast`), whose results are put in `out_tree` (one output tree
        for every signature of an argument tree: a signature whose call
        built another one is left to the slow path)."""
        if kwargs or static or _config.jax_disable_jit:
            return
        out_avals = tuple(exe.out_avals)
        out_sigs = tuple((a.shape, a.dtype, a.weak_type) if a.sharding is None else
                         (a.shape, a.dtype, a.weak_type, a.sharding) for a in out_avals)
        descrs = tuple(a.dtype for a in out_avals)
        if len(vals) == len(args) and all(type(a) is Array for a in args):
            single = out_tree == tree_util.tree_structure(0)
            flat_tuple = out_tree == tree_util.tree_structure((0,) * len(out_avals))
            if single or flat_tuple:
                self._fast.insert(tuple(a._sig for a in args), exe.kernel, out_avals,
                                  out_sigs, descrs, single)
                return
        leaves, tree = tree_util.tree_flatten(args)
        if len(leaves) != len(vals) or any(
                type(a) is not Array or a is not v for a, v in zip(leaves, vals)):
            return
        entry = self._tree_fast.get(tree)
        if entry is None:
            entry = self._tree_fast[tree] = (_ember_runtime.FastJit(Array), out_tree)
        elif entry[1] != out_tree:
            return
        entry[0].insert(tuple(a._sig for a in leaves), exe.kernel, out_avals, out_sigs,
                        descrs, False)

    def __get__(self, obj, objtype=None):
        # A jitted function in a class body is a method, as in JAX.
        return self if obj is None else types.MethodType(self, obj)

    def lower(self, *args, **kwargs):
        return self.trace(*args, **kwargs).lower()

    def trace(self, *args, **kwargs):
        if any(isinstance(x, core.ShapeDtypeStruct) and core.is_symbolic_shape(x.shape)
               for x in tree_util.tree_leaves((args, kwargs))):
            # (Symbolic shapes come from ember.export, which set the hook.)
            traced = _SymbolicTraced(symbolic_trace_hook(self, args, kwargs))
            traced._retrace = lambda p: symbolic_trace_hook(self, args, kwargs, platforms=(p,))
            traced._export = lambda ps: symbolic_trace_hook(self, args, kwargs, platforms=ps)
            return traced
        return self._trace(args, kwargs)

    def _trace(self, args, kwargs, platform="cpu"):
        """`trace` for `platform`, whose branches of `platform_dependent`
        the program takes (`Traced.lower` traces again for another platform
        when the program has such branches)."""
        static, treedef, vals, ref_pos, refs = self._prepare(args, kwargs, abstract_ok=True)
        avals = [v.aval for v in vals]
        flat, out_tree = flatten_fun(self.fun, treedef, static, traced_for="jit")
        calls = targets.lowering.calls
        with targets.lowering_platforms((platform,)):
            module, out_avals = core.trace_function(_with_ref_args(flat, ref_pos, refs), avals,
                                                    lifted=[])
        leaves = [core.ShapeDtypeStruct(a.shape, a.dtype) for a in out_avals]
        out_info = tree_util.tree_unflatten(out_tree(), leaves[:out_tree().num_leaves])
        traced = Traced(self, str(module),
                        lambda: self._make(static, treedef, avals, ref_pos, refs),
                        out_info, module.operation.get_asm(enable_debug_info=True))
        traced._in_tree, traced._in_avals, traced._out_avals = treedef, avals, out_avals
        traced._donated = self._donated_leaves(args, kwargs)
        traced._platform = platform
        if targets.lowering.calls != calls:
            traced._retrace = lambda p: self._trace(args, kwargs, p)
        # (Several platforms: an export for them, as JAX's multi-platform
        # lowering.)
        traced._export = lambda ps: symbolic_trace_hook(self, args, kwargs, platforms=ps)
        return traced

    def _donated_leaves(self, args, kwargs):
        """Per dynamic argument leaf, whether it is donated (`donate_argnums`,
        `donate_argnames`; JAX's ArgInfo.donated)."""
        nums, names = set(self.donate_argnums), set(self.donate_argnames)
        params = list(self.sig.parameters) if self.sig is not None else []
        names |= {params[i] for i in nums if i < len(params)}
        nums |= {params.index(n) for n in names if n in params}
        flags = []
        for i, a in enumerate(args):
            if i not in self.static_argnums:
                flags += [i in nums] * len(tree_util.tree_leaves(a))
        for k, v in kwargs.items():
            if k not in self.static_argnames:
                flags += [k in names] * len(tree_util.tree_leaves(v))
        return flags

    def eval_shape(self, *args, **kwargs):
        return eval_shape(self.fun, *args, **kwargs)


def jit(fun=None, *, static_argnums=(), static_argnames=(), donate_argnums=(),
        donate_argnames=(), inline=False, keep_unused=False, device=None, backend=None,
        in_shardings=None, out_shardings=None, polymorphic_shapes=None):
    """`in_shardings` are accepted (arguments are in one address space);
    `out_shardings` are recorded on the results of calls outside traces.
    `polymorphic_shapes` (Ember's, beyond JAX: design.md, "One compile for
    every size"): the arguments' shapes with dimension variables, as
    `export.symbolic_args_specs` takes them (`["b, 784", None]`; a static
    argument's entry is ignored); the function is compiled once for every
    value of the variables (per set of static arguments)."""
    def make(f):
        j = JitWrapped(f, static_argnums, static_argnames, donate_argnums, donate_argnames)
        if polymorphic_shapes is not None:
            j = polymorphic_jit_hook(j, polymorphic_shapes)
        if out_shardings is None:
            return j
        return _ShardedOutputs(j, out_shardings)
    return make if fun is None else make(fun)


core.jit_hook = jit


def _cuda_target():
    """The cuda target, once a GPU is known to be there."""
    from .targets import cuda

    cuda.require_gpu()
    return cuda.CUDA


core.gpu_compile_hook = lambda flat_fun, avals: core.compile_function(
    flat_fun, avals, target=_cuda_target())
core.gpu_run_hook = lambda exe, arrays: _run(exe, arrays, (), ())


class _ShardedOutputs:
    """A jitted function whose results take `out_shardings`."""

    def __init__(self, jitted, out_shardings):
        functools.update_wrapper(self, jitted.fun)
        self._jitted = jitted
        self._out_shardings = out_shardings

    def __call__(self, *args, **kwargs):
        out = self._jitted(*args, **kwargs)
        if core._trace_stack:
            return out
        return with_sharding_constraint(out, self._out_shardings)

    def __getattr__(self, name):
        return getattr(self._jitted, name)


def eval_shape(fun, *args, **kwargs):
    leaves, treedef = flatten_args(args, kwargs)
    avals = []
    for x in leaves:
        if hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, core.Value):
            avals.append(core.ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype),
                                          getattr(x, "weak_type", False)))
        else:
            avals.append(as_value(x).aval)
    flat, out_tree = flatten_fun(fun, treedef)
    _, out_avals = core.trace_function(flat, avals, lifted=[])
    tree = out_tree()
    leaves = [core.ShapeDtypeStruct(a.shape, a.dtype, a.weak_type)
              for a in out_avals[:tree.num_leaves]]
    # An array-like hi value (a key array) is one ShapeDtypeStruct of its own dtype.
    for start, count, (ty, _) in reversed(tree_util.hi_node_spans(tree)):
        if hitypes.is_array_like(ty):
            leaves[start:start + count] = [core.ShapeDtypeStruct(ty.shape, ty.dtype)]
    tree = tree_util.replace_hi_nodes(
        tree, lambda aux: tree_util._LEAF if hitypes.is_array_like(aux[0]) else
        hitypes.retyped_node(aux, aux[0]))
    return tree_util.tree_unflatten(tree, leaves)


def eager(fun, args, static_positions=(), fp_contract=True, static_objects=False):
    """Runs `fun(*args)` compiled, outside of any trace (how transformations
    called outside `jit` run). The trace is concrete: Python control flow on
    values works as in JAX, and the compiled program is the path taken
    (cached by its text, so a repeated path compiles nothing). Products are
    fused with sums into FMAs with `fp_contract` (see `eager_transform`).
    It runs where `jit` would: on the GPU its arguments are on, or the
    default device when that is a GPU (Ref arguments keep it on the CPU)."""
    # Also under `disable_jit`: the transformations still need a trace (as in
    # JAX, `disable_jit` turns off `jit`, not `grad`); control flow checks
    # for `disable_jit` itself before coming here.
    static, treedef, vals, ref_pos, refs = _prepare_args(fun, tuple(static_positions), (),
                                                         args, {})
    if core.find_trace(vals) is not None or core._trace_stack:
        return fun(*args)
    flat_fun, out_tree = flatten_fun(fun, treedef, static, static_objects)
    lifted = []
    avals = [v.aval for v in vals]
    target = None
    if not ref_pos and _gpu_of(avals) is not None:
        # As `jit`: the computation follows its data, or the default device.
        from .targets import cuda

        cuda.require_gpu()
        target = cuda.CUDA
    exe = core.compile_function(_with_ref_args(flat_fun, ref_pos, refs), avals,
                                concrete=vals, lifted=lifted, fp_contract=fp_contract,
                                target=target, ref_args=ref_pos if _refs_in_place else None)
    return tree_util.tree_unflatten(out_tree(), _run(exe, vals, refs, lifted, ref_pos))


def eager_transform(fun, args, static_positions=()):
    """`eager` for `grad`, `vjp`, `jvp`, `vmap` and friends called outside
    `jit`: without FMA contraction, as JAX evaluates them op by op (no
    product is fused with a sum there; control flow outside jit is one XLA
    computation in JAX, so `eager` keeps contraction for it). Output leaves
    that are Python objects, not arrays (a `has_aux` string), come back as
    they are, as JAX returns them outside jit."""
    return eager(fun, args, static_positions, fp_contract=False, static_objects=True)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """`x` on `device`: a Device, a platform name, or a sharding (then the
    array records it; the data stays one host buffer, see mesh.py). A pytree
    of shardings matches a pytree `x`."""
    from .mesh import NamedSharding, PartitionSpec, sharding_of

    def put(v, dev):
        ty = hitypes.hi_typeof(v)
        if hitypes.is_array_like(ty):  # (a key array: its data, placed)
            return ty.raise_val(*[put(lo, dev) for lo in ty.lower_val(v)])
        dev = sharding_of(dev)
        v = as_value(v) if not isinstance(v, core.Value) else v
        if isinstance(dev, NamedSharding):
            dev.shard_shape(v.shape)  # JAX's divisibility checks
            if isinstance(v, core.Tracer):
                have = v.aval.sharding
                if have is not None and core._trace_stack and \
                        set(have.device_set) != set(dev.device_set):
                    ids = sorted(d.id for d in have.device_set)
                    raise ValueError(
                        "Received incompatible devices for jitted computation. Got a value "
                        f"with shape {v.aval.str_short()} and with device ids {ids} on "
                        "platform CPU and device_put inside jit with device ids "
                        f"{[d.id for d in dev.mesh.devices.flat]} on platform CPU "
                        f"(at {core.where()})")
                return core.Tracer(v._trace, v.value, v.aval.update(sharding=dev), ("same", v))
            return core.Array.with_sharding(v._value, v.weak_type, dev)
        if isinstance(dev, devices_lib.SingleDeviceSharding):
            dev = next(iter(dev.device_set))
        if dev is None:
            return v
        dev = devices_lib.check_device(dev)
        if isinstance(v, core.Tracer):
            return v
        if dev.platform == "gpu":  # into the GPU's memory
            return core.GpuArray.from_array(v, dev)
        # Committed to the device (`Array.committed`), also the default one.
        return core.Array.with_sharding(v._value, v.weak_type,
                                        devices_lib.SingleDeviceSharding(dev))

    if device is None or isinstance(device, (str, devices_lib.Device, NamedSharding,
                                             PartitionSpec, devices_lib.SingleDeviceSharding)):
        return tree_util.tree_map(lambda v: put(v, device), x)
    return tree_util.tree_map(put, x, device)


def with_sharding_constraint(x, shardings):
    """The value of `x`, laid out by `shardings`: arrays record it; inside
    traces the traced value carries it (its type over Explicit axes; the
    layout a jitted function's result takes). The data stays one buffer
    (mesh.py)."""
    from .mesh import NamedSharding, PartitionSpec, sharding_of

    def one(v, s):
        s = sharding_of(s, "with_sharding_constraint")
        if isinstance(s, NamedSharding):
            s.shard_shape(as_value(v).shape)
            spec = s.spec
            if (spec.unreduced or spec.reduced) and len(spec) < as_value(v).ndim:
                # (JAX's spec of an unreduced or reduced array: one entry per
                # dimension.)
                s = s.with_spec(spec.update(
                    partitions=tuple(spec) + (None,) * (as_value(v).ndim - len(spec))))
        if isinstance(v, core.Tracer):
            if isinstance(s, NamedSharding):
                if all(t.name == "Auto" for t in s.mesh.axis_types):
                    # A hint to the compiler, whose chosen layout has no
                    # trailing unsplit dimensions (JAX's `P('X',)`).
                    s = NamedSharding(s.mesh, s.spec.update(partitions=s.spec._normalized()))
                return core.Tracer(v._trace, v.value, v.aval.update(sharding=s), ("same", v))
            return v
        return device_put(v, s)
    if isinstance(shardings, (NamedSharding, PartitionSpec, devices_lib.SingleDeviceSharding)):
        return tree_util.tree_map(lambda v: one(v, shardings), x)
    return tree_util.tree_map(one, x, shardings)


core._out_sharding_hook = with_sharding_constraint
core.device_put_hook = device_put


def reshard(x, out_shardings):
    return with_sharding_constraint(x, out_shardings)


def typeof(x):
    """The abstract value of `x` (`jax.typeof`): shape, dtype, weak type,
    the mesh axes it varies over inside shard_map, and for an array with a
    NamedSharding its type-level sharding (`float32[8@X,4@Y]`): on the
    mesh's AbstractMesh, with None where the axes are of Auto type (the
    array's own `.sharding` keeps them, as JAX)."""
    from .mesh import AxisType, NamedSharding, PartitionSpec, get_abstract_mesh

    hi = hitypes.hi_typeof(x)
    if hi is not None:
        return hi
    aval = as_value(x).aval
    sh = aval.sharding
    if not isinstance(sh, NamedSharding):
        # JAX's type of an array placed on no mesh: replicated on the mesh
        # in context (the empty one when there is none).
        return aval.update(sharding=NamedSharding(get_abstract_mesh(),
                                                  PartitionSpec(*[None] * aval.ndim)))
    hidden = set(sh.mesh.auto_axes)
    entries = []
    for d in range(aval.ndim):
        axes = tuple(a for a in sh.spec.axes(d) if a not in hidden)
        entries.append(None if not axes else axes[0] if len(axes) == 1 else axes)
    if AxisType.Auto not in sh.mesh.axis_types:  # (one entry per dimension, as JAX's)
        entries = [sh.spec[d] if d < len(sh.spec) else None for d in range(aval.ndim)]
    spec = PartitionSpec(*entries, unreduced=sh.spec.unreduced, reduced=sh.spec.reduced)
    return aval.update(sharding=NamedSharding(sh.mesh.abstract_mesh, spec))


def _retyped(x, mesh):
    """`x` with its sharding's spec on `mesh` (the same devices, other axis
    types): a type change, the data stays."""
    from .mesh import NamedSharding

    def one(v):
        v = as_value(v)
        sh = v.aval.sharding
        if not isinstance(sh, NamedSharding):
            return v
        sh = NamedSharding(mesh, sh.spec)
        if isinstance(v, core.Tracer):
            return core.Tracer(v._trace, v.value, v.aval.update(sharding=sh), ("same", v))
        return core.Array.with_sharding(v._value, v.weak_type, sh)
    return tree_util.tree_map(one, x)


def _switched_mesh(axes, axis_type, what):
    from .mesh import AxisType, current_mesh, use_mesh

    mesh = current_mesh()
    if mesh is None:
        raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to enter "
                         f"into a mesh context when using `{what}` API.")
    names = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) else axes
    if any(t == AxisType.Manual for n, t in zip(mesh.axis_names, mesh.axis_types)
           if n in names):
        raise ValueError(f"`{what}` cannot switch Manual mesh axes (inside shard_map); "
                         f"the context mesh is {mesh}")
    new = mesh.update_axis_types({n: axis_type for n in names})
    return mesh, new, use_mesh(new)


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """JAX's `auto_axes`: `f` runs with `axes` (default: all) of the mesh in
    context switched to Auto, so no sharding errors arise inside; its result
    takes `out_sharding` (given here or as a keyword of each call)."""
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        out_s = _fixed_or_keyword(out_sharding, kwargs, "out_sharding")
        _, new, scope = _switched_mesh(axes, _axis_type("Auto"), "auto_axes")
        with scope:
            out = f(*_retyped(args, new), **kwargs)
        return reshard(out, out_s)
    return wrapped


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """JAX's `explicit_axes`: `f` runs with `axes` (default: all) of the mesh
    in context switched to Explicit, its arguments resharded to
    `in_sharding` (given here or as a keyword of each call); its result is
    retyped back to the caller's mesh."""
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        in_s = _fixed_or_keyword(in_sharding, kwargs, "in_sharding")
        old, new, scope = _switched_mesh(axes, _axis_type("Explicit"), "explicit_axes")
        with scope:
            out = f(*reshard(_retyped(args, new), in_s), **kwargs)
        return _retyped(out, old)
    return wrapped


def _fixed_or_keyword(value, kwargs, name):
    """A decorator's argument, else the call's keyword `name` (required)."""
    if value is not None:
        return value
    if name not in kwargs:
        raise TypeError(f"Missing required keyword argument: '{name}'")
    return kwargs.pop(name)


def _axis_type(name):
    from .mesh import AxisType

    return AxisType[name]


def device_get(x):
    return tree_util.tree_map(lambda v: np.asarray(v) if isinstance(v, Array) else v, x)


def block_until_ready(x):
    """Waits until every array of the pytree `x` is computed (GPU arrays:
    their queued work) and returns `x`."""
    for leaf in tree_util.tree_leaves(x):
        if isinstance(leaf, core.GpuArray):
            leaf.block_until_ready()
    return x


def effects_barrier():
    """JAX's wait for the side effects (callbacks, `debug.print`) of calls
    already made. Ember runs a compiled call, its callbacks included, to the
    end before returning, so there is never one pending: nothing to wait
    for."""


class disable_jit:
    def __init__(self, disable=True):
        self.disable = disable

    def __enter__(self):
        self.prev = _config.jax_disable_jit
        _config.jax_disable_jit = self.disable

    def __exit__(self, *a):
        _config.jax_disable_jit = self.prev


"""Compilation and execution: a target's stages over a traced module, and the
compiled kernel its runtime produces.

`run_pipeline` verifies a module of `ember` ops and lowers it in place through
the stages of a target (`targets/`), mapping pass diagnostics that report a
user's mistake to Python exceptions; `Executable` wraps the compiled kernel. Tracing lives
above this layer (`core`), which hands it finished modules.
"""

import importlib.util
import os
import re

import numpy as np

from ember._mlir import ir, passmanager
from ember._mlir._mlir_libs import _ember_runtime

from . import compilation_cache
from .context import compile_lock, context
from .errors import EmberInternalError
from .pass_errors import user_error as _user_error
from .targets import SHARED_STAGES, get_target

# What the runtime's linear algebra calls (lib/Runtime/Linalg.cpp).
LAPACK_FUNCTIONS = [t + f for f in ("potrf", "getrf", "trsm", "geqrf", "gesdd")
                    for t in "sdcz"] + [
    "ssyevd", "dsyevd", "cheevd", "zheevd", "sorgqr", "dorgqr", "cungqr", "zungqr"]


def _use_openblas():
    """Points the runtime's GEMM, Cholesky and triangular-solve entry points
    at scipy-openblas32 (the OpenBLAS build NumPy and SciPy ship), when it
    is installed; otherwise they run the runtime's plain loops."""
    # This OpenBLAS is Ember's own copy (NumPy's is scipy-openblas64), so
    # OPENBLAS_CORETYPE, NumPy's setting, does not choose its kernels: it
    # detects the CPU when it loads (importing the package loads it, reading
    # the variable then), unless EMBER_OPENBLAS_CORETYPE names a core type.
    # See docs/decisions.md.
    saved = os.environ.pop("OPENBLAS_CORETYPE", None)
    if os.environ.get("EMBER_OPENBLAS_CORETYPE"):
        os.environ["OPENBLAS_CORETYPE"] = os.environ["EMBER_OPENBLAS_CORETYPE"]
    try:
        import ctypes

        import scipy_openblas32

        lib = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(),
                                       f"lib{scipy_openblas32.get_library()}.so"))
    except ImportError:
        return False
    finally:
        os.environ.pop("OPENBLAS_CORETYPE", None)
        if saved is not None:
            os.environ["OPENBLAS_CORETYPE"] = saved
    # OpenBLAS's parallel work on the runtime's threads (one pool for both;
    # set before any other OpenBLAS call, as OpenBLAS asks), unless
    # EMBER_OPENBLAS_OWN_THREADS=1 keeps OpenBLAS's own.
    setter = getattr(lib, "scipy_openblas_set_threads_callback_function", None)
    if setter is not None and os.environ.get("EMBER_OPENBLAS_OWN_THREADS") != "1":
        _ember_runtime.use_for_openblas(ctypes.cast(setter, ctypes.c_void_p).value)
    # (One OpenBLAS thread per product while the pool's threads run a
    # parallel job's pieces.)
    _ember_runtime.set_openblas_thread_control(
        *[ctypes.cast(getattr(lib, f"scipy_openblas_{k}et_num_threads"), ctypes.c_void_p).value
          for k in "gs"])
    addr = [ctypes.cast(getattr(lib, f"scipy_cblas_{k}gemm"), ctypes.c_void_p).value
            for k in "sd"]
    _ember_runtime.set_cblas_gemm(*addr)
    for name in LAPACK_FUNCTIONS:
        prefix = "scipy_cblas_" if name.endswith("trsm") else "scipy_LAPACKE_"
        _ember_runtime.set_lapack_function(
            name, ctypes.cast(getattr(lib, prefix + name), ctypes.c_void_p).value)
    # No scan of every input for NaNs (2% of a 512 x 512 Cholesky solve): a
    # factorization of NaNs fails and gives NaNs anyway.
    lib.scipy_LAPACKE_set_nancheck(0)
    _use_openblas.lib = lib  # keep it loaded
    return True


_HAVE_BLAS = _use_openblas()


def _use_scipy_fft():
    """Points the runtime's FFT entry points (`ember.fft`) at SciPy's
    pocketfft (`scipy.fft`, f32 kept f32), through a C callback into this
    process's Python; without SciPy they compute each DFT directly."""
    import ctypes

    if importlib.util.find_spec("scipy") is None:
        return False
    workers = os.cpu_count() or 1

    def run(kind, double, batch, ndims, lengths, src, dst):
        import scipy.fft as sfft  # (imported at the first transform)

        kinds = (sfft.fftn, sfft.ifftn, sfft.rfftn, sfft.irfftn)
        n = tuple(lengths[i] for i in range(ndims))
        real, cplx = (np.float64, np.complex128) if double else (np.float32, np.complex64)
        half = n[:-1] + (n[-1] // 2 + 1,)
        in_shape, in_type = ((batch,) + (half if kind == 3 else n),
                             real if kind == 2 else cplx)
        out_shape, out_type = ((batch,) + (half if kind == 2 else n),
                               real if kind == 3 else cplx)

        def view(addr, shape, dtype):
            size = int(np.prod(shape)) * np.dtype(dtype).itemsize
            if size == 0:
                return np.zeros(shape, dtype)
            return np.frombuffer((ctypes.c_char * size).from_address(addr),
                                 dtype).reshape(shape)

        x = view(src, in_shape, in_type)
        axes = tuple(range(1, ndims + 1))
        if x.size == 0 or 0 in n:
            view(dst, out_shape, out_type)[...] = 0
            return
        kw = {"s": n} if kind == 3 else {}
        y = kinds[kind](x, axes=axes, workers=workers, **kw)
        np.copyto(view(dst, out_shape, out_type), y, casting="unsafe")

    proto = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64,
                             ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), ctypes.c_void_p,
                             ctypes.c_void_p)
    _use_scipy_fft.callback = proto(run)  # kept alive as long as the module
    _ember_runtime.set_fft_function(
        ctypes.cast(_use_scipy_fft.callback, ctypes.c_void_p).value)
    return True


_HAVE_FFT = _use_scipy_fft()


def set_threads(n):
    """Distributed runs give each process its share of the cores: the threads
    of OpenBLAS products and of the rows of large loop nests
    (`ember_parallel_for`), each unless its own variable
    (OPENBLAS_NUM_THREADS, EMBER_NUM_THREADS) is set."""
    lib = getattr(_use_openblas, "lib", None)
    if lib is not None and "OPENBLAS_NUM_THREADS" not in os.environ:
        lib.scipy_openblas_set_num_threads(int(n))
    if "EMBER_NUM_THREADS" not in os.environ:
        _ember_runtime.set_num_threads(int(n))

OPT_LEVEL = int(os.environ.get("EMBER_OPT_LEVEL", "2"))
_dump_dir = os.environ.get("EMBER_DUMP_DIR")
# With EMBER_DUMP_DIR, also lower every compiled program for these targets
# (comma-separated, e.g. "cuda") and dump their stages: how the PTX of whole
# programs (the benchmarks) is checked without a GPU.
_dump_targets = [t for t in os.environ.get("EMBER_DUMP_TARGETS", "").split(",") if t]


# See Executable: LLVM's level for an eager program's first compile.
FIRST_TIER = "first-tier"

# LLVM-dialect ops whose results may depend on LLVM's optimization level: a
# float multiplication (which O2's code generator contracts with an add into
# an FMA, where O0's does not).
_FLOAT_PRODUCTS = frozenset(["llvm.fmul", "llvm.intr.fma", "llvm.intr.fmuladd",
                             "llvm.intr.vector.reduce.fmul"])


def exact_at_any_level(module):
    """Whether a module lowered to the LLVM dialect computes the same bits
    at every LLVM optimization level: no float multiplication (contracted
    into FMAs at O2 only) and no float op that may be reassociated (float
    reductions, which O2 vectorizes into several partial sums). Moving
    data, comparing, sorting, selecting, integer arithmetic and plain float
    additions qualify."""
    exact = [True]

    def visit(op):
        if op.name in _FLOAT_PRODUCTS or (
                "fastmathFlags" in op.attributes
                and "reassoc" in str(op.attributes["fastmathFlags"])):
            exact[0] = False
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return exact[0]


# JAX's algorithm presets (lax.DotAlgorithmPreset) the CPU computes, as
# XLA:CPU does; a product with another is JAX's error when compiled here.
CPU_DOT_PRESETS = frozenset({"DEFAULT", "F16_F16_F16", "BF16_BF16_F32", "BF16_BF16_F32_X3",
                             "BF16_BF16_F32_X6", "F32_F32_F32", "F64_F64_F64"})


def unsupported_precision(name):
    return ValueError(f"The precision '{name}' is not supported by dot_general on CPU")


def check_cpu_precisions(text):
    """JAX's error for a product whose algorithm preset the CPU does not
    compute, from the program's text (one name in `precision`)."""
    if 'precision = ["' not in text:
        return
    for name in re.findall(r'precision = \["(\w+)"\]', text):
        if name not in CPU_DOT_PRESETS:
            raise unsupported_precision(name)


class Executable:
    """A compiled function: the C++ kernel plus the avals it was built for."""

    def __init__(self, module, in_avals, out_avals, target=None, text=None, opt_level=None,
                 fp_contract=True):
        """`opt_level`: LLVM's level (EMBER_OPT_LEVEL's by default), or
        FIRST_TIER: 0 when that computes the same bits as the default level
        (`exact_at_any_level`), else the default (an eager program's first
        compile, core._tiered). `self.opt_level` is the level used (None
        when loaded from the persistent cache). Without `fp_contract`,
        products and sums are not fused into FMAs (a transformation called
        outside jit, which JAX evaluates op by op: design.md, "Eager ops")."""
        target = target or get_target()
        opt_level = OPT_LEVEL if opt_level is None else opt_level
        self.opt_level = None
        self.target = target
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)
        self.ember_text = text if text is not None else str(module)
        if target.name == "cpu":
            check_cpu_precisions(self.ember_text)
        self._views = [(a.dtype, a.shape) for a in self.out_avals]
        if _dump_dir and _dump_targets:
            _dump_other_targets(module.operation.get_asm(enable_debug_info=True))
        # The persistent cache (not while dumping every stage).
        key = None
        if compilation_cache.enabled(target) and not _dump_dir:
            key = compilation_cache.key(target, self.ember_text, self.in_avals,
                                        self.out_avals,
                                        opt_level if fp_contract else f"{opt_level}-nofma")

        def compile(obj_path):
            with compile_lock, context():
                fn = module.body.operations[0]
                fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
                self.stages = run_pipeline(module, target, text=self.ember_text,
                                           keep_last=False)
                level = opt_level
                if level == FIRST_TIER:
                    level = 0 if exact_at_any_level(module) else OPT_LEVEL
                self.opt_level = level
                if not fp_contract and target.name == "cpu":
                    module.operation.attributes["ember.fp_contract"] = ir.BoolAttr.get(False)
                try:
                    if obj_path:
                        return target.load(module, level, self.in_avals, self.out_avals,
                                           object_path=obj_path)
                    return target.load(module, level, self.in_avals, self.out_avals)
                except RuntimeError as e:
                    raise EmberInternalError(f"{e} (a bug in Ember)") from None

        self.kernel, loaded = compilation_cache.load_or_compile(
            key, lambda obj: target.load_object(obj, self.in_avals, self.out_avals), compile)
        if loaded:
            self.stages = {"ember": self.ember_text}

    # How spmd.Plan partitioned the program ("spmd", "gathered", "cached"),
    # None when it is not partitioned.
    partition_kind = None

    def __call__(self, arrays):
        """The outputs, read-only: an Array takes them without a copy (it
        copies a writeable NumPy array, which its caller could change)."""
        return self._typed(self.kernel(arrays))

    def call_on_devices(self, per_device, shared=None, whole_avals=None):
        """A program partitioned over the in-process devices (spmd.
        ThreadsPlan), run by each device on its own thread on its arguments
        `per_device[i]`: each device's outputs. `shared[j]` (None, or the
        whole result's bytes and each device's byte offset): result j is
        one buffer the devices write their blocks into, each device's
        output j that whole array (of `whole_avals[j]`)."""
        shared = shared or [None] * len(self._views)
        views = [v if s is None else (a.dtype, a.shape)
                 for v, s, a in zip(self._views, shared, whole_avals or self.out_avals)]
        return [self._typed(outs, views)
                for outs in self.kernel.call_on_devices(per_device, shared)]

    def _typed(self, results, views=None):
        outs = []
        for r, (dt, shape) in zip(results, views or self._views):
            r.flags.writeable = False
            outs.append(r.view(dt).reshape(shape))
        return outs


def _dump_other_targets(source):
    """Lowers a traced module for each of EMBER_DUMP_TARGETS into
    EMBER_DUMP_DIR; a failure is written there too (as `<n>.<target>.error`)
    instead of stopping the program, which runs on the CPU."""
    for name in _dump_targets:
        try:
            with context():
                module = ir.Module.parse(source)
                module.body.operations[0].attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
                run_pipeline(module, get_target(name), keep_text=True)
        except Exception as e:  # noqa: BLE001 (reported in the dump, not raised)
            n = len(os.listdir(_dump_dir))
            with open(os.path.join(_dump_dir, f"{n:04d}.{name}.error"), "w") as f:
                f.write(f"{type(e).__name__}: {e}\n")


# An 8- or 4-bit float or a 2- or 4-bit integer element type in IR text.
_NARROW_FLOAT = re.compile(r"\b(f8E\w+|f4E2M1FN|u?i[24])\b")


def run_pipeline(module, target=None, upto=None, keep_text=None, text=None, keep_last=True):
    """Verifies and lowers `module` in place through the stages of `target`
    (all of them, or up to the stage `upto`); returns the IR text of the
    traced module (`text` when the caller has it), of the last stage run
    (unless `keep_last` is false) and, with `keep_text` (the default when
    EMBER_DUMP_DIR is set), of every stage. (Printing a large program's LLVM
    dialect costs a tenth of its compile time, so `Executable` keeps no
    text: `Compiled.as_text` lowers the traced text again when asked.)"""
    with compile_lock:
        return _run_pipeline(module, target, upto, keep_text, text, keep_last)


def _run_pipeline(module, target, upto, keep_text, text, keep_last):
    target = target or get_target()
    keep_text = bool(_dump_dir) if keep_text is None else keep_text
    stages = {"ember": str(module) if text is None else text}
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise EmberInternalError(f"Ember produced invalid IR (a bug in Ember): {e}") from None
    ran = target.stages if upto is None else target.stages[
        :[n for n, _ in target.stages].index(upto) + 1]
    if target.name != "cpu" and len(ran) > len(SHARED_STAGES) and \
            _NARROW_FLOAT.search(stages["ember"]):
        raise NotImplementedError(
            f"8- and 4-bit floats (float8_*, float4_e2m1fn) and 2- and 4-bit integers on "
            f"the {target.name} target: Ember computes on them on the CPU only")
    for k, (name, pipeline) in enumerate(ran):
        try:
            if callable(pipeline):  # a stage written in Python
                with context():
                    pipeline(module)
            else:
                pm = passmanager.PassManager.parse(f"builtin.module({pipeline})", context())
                pm.run(module.operation)
        except ir.MLIRError as e:
            user = _user_error(e)
            if user is not None:
                raise user from None
            raise EmberInternalError(
                f"the {target.name} pipeline failed in stage {name!r} (a bug in Ember): {e}"
            ) from None
        if keep_text or (keep_last and k == len(ran) - 1):
            stages[name] = str(module)
    if _dump_dir:
        os.makedirs(_dump_dir, exist_ok=True)
        n = len(os.listdir(_dump_dir))
        for k, (name, v) in enumerate(stages.items()):
            with open(os.path.join(_dump_dir, f"{n:04d}.{k}.{name}.mlir"), "w") as f:
                f.write(v)
    return stages


def stage_text(ember_text, stage, target=None, **stablehlo):
    """The IR of `stage` for a traced module's text: the module is parsed
    again and run through the stages up to that one. (`stablehlo`: more
    options of `to_stablehlo`, for that stage.)"""
    target = target or get_target()
    if stage == "stablehlo":
        from .stablehlo_out import to_stablehlo

        def translate(text, transformed=True, **kw):
            kw = {**kw, **stablehlo}
            with context():
                module = ir.Module.parse(text)
                if transformed:
                    # `ember-transforms`, keeping shard_map's device vmaps
                    # (written as manual computations over the devices).
                    from .stablehlo_out import keep_device_vmaps

                    keep_device_vmaps(module)
                return to_stablehlo(module, **kw)

        if target.stablehlo is not None:
            return target.stablehlo(ember_text, translate)
        return translate(ember_text)
    stage = target.stage_name(stage)
    if stage == "ember":
        return ember_text
    if stage in target.views:
        source, view = target.views[stage]
        return view(stage_text(ember_text, source, target))
    with context():
        module = ir.Module.parse(ember_text)
        fn = module.body.operations[0]
        fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        return run_pipeline(module, target, upto=stage)[stage]

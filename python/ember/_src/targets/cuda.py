"""NVIDIA GPUs: `ember-cuda-gpu` maps the bufferized program onto gpu.launch
kernels, `ember-cuda-nvvm` lowers kernels to NVVM and host code to the LLVM
dialect, `ember-cuda-binary` serializes the kernels (PTX by default) into a
gpu.binary. `as_text("ptx")` is the PTX of every kernel module.

Compiling needs no GPU and no CUDA toolkit except libdevice (the math
library kernels link), which the `nvidia-nvvm` wheel provides; `ptxas` (from
`nvidia-cuda-nvcc`) checks the PTX. `Lowered.compile()` runs the program
on GPU 0 through the runtime of lib/Runtime/Cuda.cpp (the CUDA driver
loaded at run time), its arguments and results copied to and from the GPU
on each call (docs/design.md, "CUDA runtime").
"""

import collections
import glob
import os
import re
import sys

from ..._mlir import ir
from ..._mlir.passmanager import PassManager
from . import Target, register

CHIP = os.environ.get("EMBER_CUDA_CHIP", "sm_90a")
# The PTX ISA each architecture needs: MLIR's default (6.0) is too old for
# the `a` variants, and a kernel's parameters may take more than 4352 bytes
# (a fusion group reading many buffers) only from PTX 8.1 on.
_PTX_FEATURES = {"sm_90a": "+ptx81", "sm_100a": "+ptx86", "sm_120a": "+ptx87"}


def _site_dirs():
    return [p for p in sys.path if os.path.isdir(p)]


def find_cuda_file(*relative):
    """A file of the CUDA toolkit: from the `nvidia-*` wheels in this
    environment first, then CUDA_HOME/CUDA_PATH/CUDA_ROOT, then
    /usr/local/cuda*."""
    roots = []
    for d in _site_dirs():
        roots += sorted(glob.glob(os.path.join(d, "nvidia", "cu*")), reverse=True)
        roots += sorted(glob.glob(os.path.join(d, "nvidia", "cuda_nvcc")))
        roots += sorted(glob.glob(os.path.join(d, "nvidia", "cublas")))
    roots += [os.environ[k] for k in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") if k in os.environ]
    roots += ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for r in roots:
        p = os.path.join(r, *relative)
        if os.path.exists(p):
            return p
    return None


def libdevice():
    return find_cuda_file("nvvm", "libdevice", "libdevice.10.bc") or ""


def ptxas():
    return find_cuda_file("bin", "ptxas")


def options(chip=None):
    """The CUDA stages' options for `chip` (default EMBER_CUDA_CHIP);
    EMBER_CUDA_CUBLAS=0 compiles products as kernels instead of cuBLAS
    calls, EMBER_CUDA_VECTORIZE=0 large elementwise kernels without vector
    loads and stores, EMBER_CUDA_MERGE=0 every kernel its own launch."""
    chip = chip or CHIP
    features = _PTX_FEATURES.get(chip, "+ptx81")
    opts = f"chip={chip} features={features}"
    if os.environ.get("EMBER_CUDA_CUBLAS", "1").lower() in ("0", "false", "no"):
        opts += " cublas=false"
    if os.environ.get("EMBER_CUDA_VECTORIZE", "1").lower() in ("0", "false", "no"):
        opts += " vectorize=false"
    if os.environ.get("EMBER_CUDA_MERGE", "1").lower() in ("0", "false", "no"):
        opts += " merge=false"
    lib = libdevice()
    if lib and " " not in lib:
        opts += f" libdevice={lib}"
    return opts


_BINARY = re.compile(r'gpu\.binary @([\w$.]+)\s+\[.*?assembly = "((?:[^"\\]|\\.)*)"')


def _unescape(s):
    # MLIR prints string attributes with \XX hex escapes and \\ / \" .
    return re.sub(r'\\([0-9A-Fa-f]{2}|\\|")',
                  lambda m: m.group(1) if len(m.group(1)) == 1 else chr(int(m.group(1), 16)),
                  s)


def ptx_modules(binary_text):
    """{kernel module name: its PTX} from the `binary` stage's text."""
    modules = {m.group(1): _unescape(m.group(2)) for m in _BINARY.finditer(binary_text)}
    if not modules:
        raise ValueError("the module holds no PTX (was it serialized with format=isa?)")
    return modules


def ptx_of(binary_text):
    """The PTX of every kernel module in the `binary` stage's text, each
    after a `// gpu.module @name` line (each is a separate PTX module)."""
    return "\n".join(f"// gpu.module @{name}\n{ptx}"
                     for name, ptx in ptx_modules(binary_text).items())


# On a private function holding a `pallas_call`'s interpreter (or a plgpu
# kernel's host callback): the key of its kernel compiled for the GPU (see
# register_kernel).
KERNEL_ATTR = "ember_gpu.kernel_module"


def kernel_pipeline_error(e):
    """An error of the kernel pipeline (an Ember bug), with its locations."""
    from ..errors import EmberInternalError

    notes = "; ".join(f"{d.location}: {d.message}" for d in e.error_diagnostics)
    return EmberInternalError(f"compiling a GPU kernel failed (a bug in Ember): {notes or e}")


def outline(kernel_text):
    """The kernel form (text) after `ember-gpu-kernel`, as a module: the host
    function `<name>_host` launching the kernel of `gpu.module @<name>`. On
    the outlined kernel: its cluster shape (PTX's `.reqnctapercluster`, from
    `nvvm.cluster_dim`). (Its shared buffers are views of its dynamic shared
    memory, 1024-byte aligned: KernelCompiler._dynamic_shared_memory.)"""
    module = ir.Module.parse(kernel_text)
    try:
        PassManager.parse("builtin.module(ember-gpu-kernel)").run(module.operation)
    except ir.MLIRError as e:
        raise kernel_pipeline_error(e) from None
    attrs = module.operation.attributes
    cluster = attrs["ember_gpu.cluster"] if "ember_gpu.cluster" in attrs else None
    for op in module.body.operations:
        if op.operation.name != "gpu.module":
            continue
        for f in op.regions[0].blocks[0].operations:
            if f.operation.name != "gpu.func":
                continue
            if cluster is not None:
                f.attributes["nvvm.cluster_dim"] = cluster
    return module


OUTLINED_ATTR = "ember_gpu.kernel_outlined"

# KERNEL_ATTR names an entry here: a function giving the kernel form,
# called only when a program is lowered for cuda (compiling every traced
# kernel for the GPU would double the trace time of CPU programs). The key
# is the kernel's identity and avals, so retracing an unchanged program
# gives the same text (and hits the program caches). Bounded: an evicted
# entry leaves its call's generic kernels.
_KERNEL_FORMS = collections.OrderedDict()
_MAX_KERNEL_FORMS = 1024


def register_kernel(key, make):
    """Records `make()` (-> kernel-form text) under `key`; returns the key."""
    _KERNEL_FORMS[key] = make
    _KERNEL_FORMS.move_to_end(key)
    while len(_KERNEL_FORMS) > _MAX_KERNEL_FORMS:
        _KERNEL_FORMS.popitem(last=False)
    return key


def _kernel_form(key):
    """The kernel form of a registered kernel, or None (evicted, or a
    kernel the compiler refuses)."""
    make = _KERNEL_FORMS.get(key)
    if make is None:
        return None
    if callable(make):
        try:
            make = make()
        except Exception:  # noqa: BLE001 - refused: the call keeps its body
            make = ""
        _KERNEL_FORMS[key] = make
    return make or None


def _marked(module, attr):
    return [op.operation for op in module.body.operations
            if op.operation.name == "func.func" and attr in op.operation.attributes]


class _KernelsPrepareStage:
    """A codegen stage in Python, before `gpu`: each private function
    marked with KERNEL_ATTR whose signature still matches its kernel (its
    inputs, then its outputs; a function transformed by vmap, say, does
    not) gets the kernel compiled (`ember-gpu-kernel`, kept as
    OUTLINED_ATTR) and its body replaced by empty results, since the
    `kernels` stage replaces it by the kernel's launch (a plgpu kernel's
    body, a host callback, could not be compiled for the GPU anyway). The
    others keep their bodies: the generic kernels compute them."""

    def __repr__(self):  # part of the compilation cache's key
        return "ember-cuda-kernels-prepare(python)"

    def __call__(self, module):
        for fn in _marked(module, KERNEL_ATTR):
            form = _kernel_form(ir.StringAttr(fn.attributes[KERNEL_ATTR]).value)
            del fn.attributes[KERNEL_ATTR]
            if form is None:
                continue
            kernel = outline(form)
            stub = _stub_text(fn, kernel)
            if stub is None:
                continue
            stub_module = ir.Module.parse(stub)  # (alive while `new` moves)
            new = stub_module.body.operations[0].operation
            new.attributes[OUTLINED_ATTR] = ir.StringAttr.get(
                kernel.operation.get_asm(print_generic_op_form=True))
            new.move_before(fn)
            fn.erase()


def _symbol(name):
    """`name` as a symbol reference in IR text (quoted where it needs it: a
    kernel named after a lambda is `<lambda>...`)."""
    return str(ir.FlatSymbolRefAttr.get(name))


def _stub_text(fn, kernel):
    """`fn` with a body of empty results, when its signature matches the
    kernel's buffers; else None."""
    host = [o.operation for o in kernel.body.operations if o.operation.name == "func.func"][0]
    buffers = list(ir.FunctionType(ir.TypeAttr(host.attributes["function_type"]).value)
                   .inputs)[:-1]
    fn_t = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    tensors = list(fn_t.inputs) + list(fn_t.results)
    if len(tensors) != len(buffers) or any(
            ir.RankedTensorType(t).shape != ir.MemRefType(b).shape
            or ir.RankedTensorType(t).element_type != ir.MemRefType(b).element_type
            for t, b in zip(tensors, buffers)):
        return None
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(fn_t.inputs))
    lines = [f"func.func private {_symbol(name)}({args}) -> "
             f"({', '.join(map(str, fn_t.results))}) {{"]
    for i, t in enumerate(fn_t.results):
        lines.append(f"  %r{i} = tensor.empty() : {t}")
    lines.append(f"  return {', '.join(f'%r{i}' for i in range(len(fn_t.results)))} : "
                 f"{', '.join(map(str, fn_t.results))}")
    lines.append("}")
    return "module {\n" + "\n".join(lines) + "\n}"


class _KernelsStage:
    """A codegen stage in Python, after `gpu`: each function the `kernels-
    prepare` stage stubbed (bufferized now: its inputs, then its outputs as
    buffers) becomes a call of its kernel's host function, which launches
    it; the kernel's gpu.module joins the program and the generic kernels
    of the old bodies go."""

    def __repr__(self):  # part of the compilation cache's key
        return "ember-cuda-kernels(python)"

    def __call__(self, module):
        from ..errors import EmberInternalError

        marked = _marked(module, OUTLINED_ATTR)
        for fn in marked:
            kernel = ir.Module.parse(ir.StringAttr(fn.attributes[OUTLINED_ATTR]).value)
            text = _launch_text(fn, kernel)
            if text is None:
                raise EmberInternalError(
                    "the cuda pipeline changed the signature of a function whose kernel it "
                    f"launches (a bug in Ember): {fn.attributes['function_type']}")
            spliced = ir.Module.parse(text)
            have = {ir.StringAttr(o.operation.attributes["sym_name"]).value
                    for o in module.body.operations if "sym_name" in o.operation.attributes}
            for op in list(spliced.body.operations):
                name = op.operation.attributes["sym_name"] \
                    if "sym_name" in op.operation.attributes else None
                if name is not None and ir.StringAttr(name).value == "ember_cuda_tensor_map" \
                        and "ember_cuda_tensor_map" in have:
                    continue  # (declared by another kernel's launch)
                op.operation.move_before(fn)
            fn.erase()
        if marked:
            _drop_unlaunched(module)


def _launched(op):
    """The gpu.module names that gpu.launch_func ops under `op` launch."""
    names = set()

    def visit(o):
        if o.name == "gpu.launch_func":
            names.add(str(o.attributes["kernel"]).split("::")[0].lstrip("@"))
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return names


def _drop_unlaunched(module):
    """Removes the kernels of the replaced function bodies."""
    live = _launched(module.operation)
    for op in list(module.body.operations):
        if op.operation.name == "gpu.module" and \
                ir.StringAttr(op.operation.attributes["sym_name"]).value not in live:
            op.operation.erase()


def _launch_text(fn, kernel):
    """The text of the kernel's gpu.module, its host function (private) and
    `fn` rewritten to call it; None when `fn` does not match the kernel."""
    ops = {o.operation.name: o.operation for o in kernel.body.operations}
    host, gmod = ops["func.func"], ops["gpu.module"]
    host_t = ir.FunctionType(ir.TypeAttr(host.attributes["function_type"]).value)
    fn_t = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
    buffers = list(host_t.inputs)[:-1]  # inputs, outputs, then the descriptors
    if fn_t.results or list(map(str, fn_t.inputs)) != list(map(str, buffers)):
        return None
    name = ir.StringAttr(fn.attributes["sym_name"]).value
    host_name = ir.StringAttr(host.attributes["sym_name"]).value
    host.attributes["sym_visibility"] = ir.StringAttr.get("private")
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(buffers))
    operands = ", ".join([f"%a{i}" for i in range(len(buffers))] + ["%tma"])
    build, free, decl = _tma_descriptors_text(kernel, buffers)
    return "\n".join([
        "module attributes {gpu.container_module} {", str(gmod), str(host), *decl,
        f"func.func private {_symbol(name)}({args}) {{", *build,
        f"  func.call {_symbol(host_name)}({operands}) : "
        f"({', '.join(map(str, host_t.inputs))}) -> ()",
        *free, "  return", "}", "}"])


# CUtensorMapDataType of each element type a TMA copy moves.
_TMA_DTYPES = {"uint8": 0, "int8": 0, "bool": 0, "uint16": 1, "int16": 1, "uint32": 2,
               "int32": 3, "uint64": 4, "int64": 5, "float16": 6, "float32": 7, "float64": 8,
               "bfloat16": 9}
_TMA_BYTES = 128  # one CUtensorMap


def _tma_descriptors_text(kernel, buffers):
    """Host code (lines) that builds the kernel's TMA descriptors into a
    device buffer `%tma` points at, 128 bytes each, through the runtime's
    `ember_cuda_tensor_map` (cuTensorMapEncodeTiled) on the operands'
    device addresses; the lines that free it after the launch; and the
    runtime function's declaration. Without descriptors `%tma` is null."""
    descs = list(ir.ArrayAttr(kernel.operation.attributes["ember_gpu.tma_descriptors"]))
    if not descs:
        return ["  %tma = llvm.mlir.zero : !llvm.ptr"], [], []
    n = len(descs) * _TMA_BYTES
    lines = [f"  %tma_host = memref.alloca() {{alignment = 64 : i64}} : memref<{n}xi8>",
             "  %tma_host_i = memref.extract_aligned_pointer_as_index %tma_host : "
             f"memref<{n}xi8> -> index",
             "  %tma_host_a = arith.index_cast %tma_host_i : index to i64"]
    for k, d in enumerate(descs):
        d = ir.DictAttr(d)
        op = ir.IntegerAttr(d["operand"]).value
        box = list(ir.DenseI64ArrayAttr(d["box"]))
        dtype = ir.StringAttr(d["dtype"]).value
        swizzle = ir.IntegerAttr(d["swizzle"]).value
        shape = ir.MemRefType(buffers[op]).shape
        if len(shape) != len(box) or not 1 <= len(box) <= 5 or dtype not in _TMA_DTYPES:
            raise NotImplementedError(
                f"a TMA copy of a {dtype} operand of shape {tuple(shape)} with box "
                f"{tuple(box)}: not supported by the host runtime")
        pad = [1] * (5 - len(box))
        ints = [_TMA_DTYPES[dtype], len(box), *shape, *pad, *box, *pad, swizzle]
        lines += [
            f"  %g{k}_i = memref.extract_aligned_pointer_as_index %a{op} : {buffers[op]} -> "
            "index",
            f"  %g{k}_a = arith.index_cast %g{k}_i : index to i64",
            f"  %g{k} = llvm.inttoptr %g{k}_a : i64 to !llvm.ptr",
            f"  %c{k}_off = arith.constant {k * _TMA_BYTES} : i64",
            f"  %d{k}_a = arith.addi %tma_host_a, %c{k}_off : i64",
            f"  %d{k} = llvm.inttoptr %d{k}_a : i64 to !llvm.ptr"]
        consts = [f"%v{k}_{j}" for j in range(len(ints))]
        lines += [f"  {c} = arith.constant {v} : i64" for c, v in zip(consts, ints)]
        lines.append(f"  func.call @ember_cuda_tensor_map(%d{k}, {consts[0]}, {consts[1]}, "
                     f"%g{k}, {', '.join(consts[2:])}) : (!llvm.ptr, i64, i64, !llvm.ptr, "
                     f"{', '.join(['i64'] * 11)}) -> ()")
    lines += [f"  %tma_dev = gpu.alloc () : memref<{n}xi8>",
              f"  gpu.memcpy %tma_dev, %tma_host : memref<{n}xi8>, memref<{n}xi8>",
              "  %tma_dev_i = memref.extract_aligned_pointer_as_index %tma_dev : "
              f"memref<{n}xi8> -> index",
              "  %tma_dev_a = arith.index_cast %tma_dev_i : index to i64",
              "  %tma = llvm.inttoptr %tma_dev_a : i64 to !llvm.ptr"]
    decl = ["func.func private @ember_cuda_tensor_map(!llvm.ptr, i64, i64, !llvm.ptr, "
            f"{', '.join(['i64'] * 11)})"]
    return lines, [f"  gpu.dealloc %tma_dev : memref<{n}xi8>"], decl


def require_gpu():
    """Raises unless the runtime found a CUDA driver and a GPU."""
    from ember._mlir._mlir_libs import _ember_runtime as rt

    if rt.cuda_device_count() == 0:
        raise RuntimeError("Unable to run on backend 'cuda': "
                           f"{rt.cuda_unavailable_reason()}")


def cublas_library():
    """cuBLAS from the `nvidia-cublas` wheel in this environment (CUDA 13's
    or 12's), the toolkit's, or None."""
    for name in ("libcublas.so.13", "libcublas.so.12"):
        path = find_cuda_file("lib", name) or find_cuda_file("lib64", name)
        if path:
            return path
    return None


def _load(module, opt_level, in_avals, out_avals):
    """Host code JIT-compiled for the CPU, kernels loaded by the CUDA driver
    (lib/Runtime/Cuda.cpp); a call copies its arguments to the GPU and its
    results back. Products call cuBLAS, which the runtime loads from
    EMBER_CUBLAS at the first one: pointed here at the wheel's library."""
    from ember._mlir._mlir_libs import _ember_runtime as rt

    if not os.environ.get("EMBER_CUBLAS") and (lib := cublas_library()):
        os.environ["EMBER_CUBLAS"] = lib

    return rt.CudaKernel(
        module, opt_level, [a.shape for a in in_avals], [a.dtype.itemsize for a in in_avals],
        [a.shape for a in out_avals], [a.dtype.itemsize for a in out_avals])


CUDA = register(Target(
    name="cuda",
    codegen_stages=(("kernels-prepare", _KernelsPrepareStage()),
                    ("gpu", f"ember-cuda-gpu{{{options()}}}"),
                    ("kernels", _KernelsStage()),
                    ("nvvm", f"ember-cuda-nvvm{{{options()}}}"),
                    ("binary", f"ember-cuda-binary{{{options()}}}")),
    load=_load,
    aliases={"cuda-codegen": "binary"},
    views={"ptx": ("binary", ptx_of)}))

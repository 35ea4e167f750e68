"""NVIDIA GPUs: `ember-cuda-gpu` maps the bufferized program onto gpu.launch
kernels, `ember-cuda-nvvm` lowers kernels to NVVM and host code to the LLVM
dialect, `ember-cuda-binary` serializes the kernels (PTX by default) into a
gpu.binary. `as_text("ptx")` is the PTX of every kernel module.

Compiling needs no GPU and no CUDA toolkit except libdevice (the math
library kernels link), which the `nvidia-nvvm` wheel provides; `ptxas` (from
`nvidia-cuda-nvcc`) checks the PTX. Running compiled code on a GPU is not
implemented yet (docs/design.md, "CUDA target").
"""

import glob
import os
import re
import sys

from ..._mlir import ir
from . import Target, register

CHIP = os.environ.get("EMBER_CUDA_CHIP", "sm_90a")
# The PTX ISA each architecture needs: MLIR's default (6.0) is too old for
# the `a` variants.
_PTX_FEATURES = {"sm_90a": "+ptx80", "sm_100a": "+ptx86", "sm_120a": "+ptx87"}


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
    """The CUDA stages' options for `chip` (default EMBER_CUDA_CHIP)."""
    chip = chip or CHIP
    features = _PTX_FEATURES.get(chip, "+ptx80")
    opts = f"chip={chip} features={features}"
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


# On a private function holding a `pallas_call`'s interpreter: the kernel
# compiled for the GPU, in the form `mosaic_gpu_compile.outline` takes.
KERNEL_ATTR = "ember_gpu.kernel_module"


class _KernelsStage:
    """A codegen stage in Python, after `gpu`: each private function marked
    with KERNEL_ATTR (bufferized: its inputs, then its outputs as buffers)
    becomes a call of its compiled kernel's host function, which launches
    it; the kernel's gpu.module joins the program. A function whose
    signature no longer matches its kernel (transformed by vmap, say) keeps
    its body: the generic kernels compute it."""

    def __repr__(self):  # part of the compilation cache's key
        return "ember-cuda-kernels(python)"

    def __call__(self, module):
        from ..pallas import mosaic_gpu_compile

        marked = [op.operation for op in module.body.operations
                  if op.operation.name == "func.func" and KERNEL_ATTR in op.operation.attributes]
        for fn in marked:
            kernel = mosaic_gpu_compile.outline(ir.StringAttr(fn.attributes[KERNEL_ATTR]).value)
            text = _launch_text(fn, kernel)
            if text is None:
                continue
            spliced = ir.Module.parse(text)
            for op in list(spliced.body.operations):
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
    attrs = kernel.operation.attributes
    if len(ir.ArrayAttr(attrs["ember_gpu.tma_descriptors"])):
        return None  # TMA descriptors are built by a host runtime: not yet
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
    return "\n".join([
        "module attributes {gpu.container_module} {", str(gmod), str(host),
        f"func.func private @{name}({args}) {{",
        "  %tma = llvm.mlir.zero : !llvm.ptr",
        f"  func.call @{host_name}({operands}) : ({', '.join(map(str, host_t.inputs))}) -> ()",
        "  return", "}", "}"])


def _load(module, opt_level, in_avals, out_avals):
    raise NotImplementedError(
        "running compiled code on a CUDA GPU is not implemented yet; the cuda target "
        "compiles (jit(f).trace(...).lower(lowering_platforms=('cuda',)).as_text('ptx'))")


CUDA = register(Target(
    name="cuda",
    codegen_stages=(("gpu", f"ember-cuda-gpu{{{options()}}}"),
                    ("kernels", _KernelsStage()),
                    ("nvvm", f"ember-cuda-nvvm{{{options()}}}"),
                    ("binary", f"ember-cuda-binary{{{options()}}}")),
    load=_load,
    aliases={"cuda-codegen": "binary"},
    views={"ptx": ("binary", ptx_of)}))

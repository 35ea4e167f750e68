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


def _load(module, opt_level, in_avals, out_avals):
    raise NotImplementedError(
        "running compiled code on a CUDA GPU is not implemented yet; the cuda target "
        "compiles (jit(f).trace(...).lower(lowering_platforms=('cuda',)).as_text('ptx'))")


CUDA = register(Target(
    name="cuda",
    codegen_stages=(("gpu", f"ember-cuda-gpu{{{options()}}}"),
                    ("nvvm", f"ember-cuda-nvvm{{{options()}}}"),
                    ("binary", f"ember-cuda-binary{{{options()}}}")),
    load=_load,
    aliases={"cuda-codegen": "binary"},
    views={"ptx": ("binary", ptx_of)}))

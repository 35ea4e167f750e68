"""The host CPU: `ember-cpu-codegen` lowers to the LLVM dialect, which the
runtime's ORC JIT (lib/Runtime/Jit.cpp) compiles; `_ember_runtime.Kernel`
calls it through the C++ fast path."""

from ember._mlir._mlir_libs import _ember_runtime

from . import Target, register


def _load(module, opt_level, in_avals, out_avals, object_path=""):
    return _ember_runtime.Kernel(
        module, opt_level, [a.shape for a in in_avals], [a.dtype.itemsize for a in in_avals],
        [a.shape for a in out_avals], [a.dtype.itemsize for a in out_avals], object_path)


def _load_object(data, in_avals, out_avals):
    return _ember_runtime.Kernel(
        data, [a.shape for a in in_avals], [a.dtype.itemsize for a in in_avals],
        [a.shape for a in out_avals], [a.dtype.itemsize for a in out_avals])


CPU = register(Target(name="cpu", codegen_stages=(("llvm", "ember-cpu-codegen"),),
                      load=_load, aliases={"cpu-codegen": "llvm"},
                      load_object=_load_object, cache_key=_ember_runtime.host_cpu))

# lit configuration of Ember's IR tests (test/Dialect, test/Conversion, ...).
import os

import lit.formats
from lit.llvm import llvm_config

config.name = "EMBER"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ember_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "python", "cmake"]

sp = config.site_packages
llvm_bin = os.path.join(sp, "llvm", "bin")
mlir_bin = os.path.join(sp, "mlir", "bin")
mlir_lib = os.path.join(sp, "mlir", "lib")
llvm_config.with_environment("PATH", config.ember_tools_dir, append_path=True)
llvm_config.with_environment("PATH", llvm_bin, append_path=True)
llvm_config.with_environment("PATH", mlir_bin, append_path=True)

config.substitutions.append(("%c_runner_utils", os.path.join(mlir_lib, "libmlir_c_runner_utils.so")))
config.substitutions.append(("%runner_utils", os.path.join(mlir_lib, "libmlir_runner_utils.so")))
config.substitutions.append(("%PYTHON", config.python_executable))
llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(["ember-opt", "mlir-runner"], [config.ember_tools_dir, mlir_bin])

# libdevice for the CUDA target's kernels (the nvidia-nvvm wheel, else a
# CUDA toolkit): %libdevice.
import glob  # noqa: E402

_libdevice = sorted(glob.glob(os.path.join(sp, "nvidia", "cu*", "nvvm", "libdevice", "libdevice.10.bc")))
_libdevice += sorted(glob.glob("/usr/local/cuda*/nvvm/libdevice/libdevice.10.bc"))
config.substitutions.append(("%libdevice", _libdevice[0] if _libdevice else ""))

"""The install tree exports a CMake package that another MLIR project can use."""

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build", "dev")
BIN = os.path.dirname(sys.executable)


def _tool(name):
    path = os.path.join(BIN, name)
    return path if os.path.exists(path) else shutil.which(name)


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "build.ninja")),
                    reason="needs the CMake build directory build/dev (make build)")
def test_find_package_ember_builds_and_runs_a_consumer(tmp_path):
    cmake = _tool("cmake")
    prefix = tmp_path / "install"
    subprocess.run([cmake, "--install", BUILD, "--prefix", str(prefix),
                    "--component", "Unspecified"], check=True, capture_output=True)
    assert (prefix / "lib" / "cmake" / "ember" / "EmberConfig.cmake").exists()
    site = sysconfig.get_path("purelib")
    args = [cmake, "-G", "Ninja", "-S", os.path.join(ROOT, "test", "cmake", "consumer"),
            "-B", str(tmp_path / "build"), f"-DEmber_DIR={prefix}/lib/cmake/ember",
            f"-DMLIR_DIR={site}/mlir/lib/cmake/mlir", f"-DLLVM_DIR={site}/llvm/lib/cmake/llvm",
            "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}"]
    if shutil.which("ld.lld"):
        args.append("-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld")
    subprocess.run(args, check=True, capture_output=True)
    subprocess.run([cmake, "--build", str(tmp_path / "build")], check=True,
                   capture_output=True)
    out = subprocess.run([str(tmp_path / "build" / "consumer")], check=True,
                         capture_output=True, text=True)
    assert "lowered to LLVM dialect, main present" in out.stdout

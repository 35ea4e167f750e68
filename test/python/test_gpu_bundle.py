"""`make gpu-bundle`'s recipe (tools/gpu/bundle.py): the binding modules'
compile and link commands read from this build, with every absolute path
replaced by a placeholder that tools/gpu/build_bindings.py fills on the GPU
machine. Packing and rebuilding take minutes (xz, 21 compiles), so the
suite checks the recipe; the full rehearsal is in docs/design.md."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "gpu"))

pytestmark = pytest.mark.skipif(
    not os.path.exists(os.path.join(ROOT, "build", "dev", "build.ninja")),
    reason="needs the CMake build directory build/dev (make build)")


def test_recipe_is_complete_and_relocatable():
    import bundle

    compiles, links, carry = bundle.recipe()
    assert len(links) == 5
    outputs = [link[link.index("-o") + 1] for link in links]
    assert outputs == ["{OUT}/libnanobind-ember.so", "{OUT}/libMLIRPythonSupport-ember.so",
                       "{OUT}/_site_initialize_0{EXT}", "{OUT}/_ember_runtime{EXT}",
                       "{OUT}/_mlir{EXT}"]
    sources = [c[c.index("-c") + 1] for c in compiles]
    assert "{R}/python/bindings/EmberRuntimeModule.cpp" in sources
    assert any(s.startswith("{B}/mlir/src/python/") for s in sources)
    # Nothing of this machine's paths is left; every carried file exists.
    args = [a for cmd in compiles + links for a in cmd]
    absolute = [a for a in args if a.removeprefix("-I").startswith("/")
                or ROOT in a]
    assert not absolute, absolute[:3]
    assert all(os.path.isfile(src) for src in carry.values())
    assert "lib/libLLVMSupport.a" in carry
    assert any(name.startswith("mlir/include/mlir-c/") for name in carry)

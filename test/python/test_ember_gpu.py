"""The ember_gpu kernel dialect without a GPU: kernels written in it lower
through `ember-gpu-to-nvvm` and the CUDA stages to PTX that ptxas accepts
for sm_90a and sm_100a, and a kernel that breaks a verifier rule is reported
as a diagnostic, not a crash."""

import pathlib

import pytest
from test_cuda_target import PTXAS, ptxas_check

from ember._mlir import ir, passmanager
from ember._src.context import context

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONVERSION = ROOT / "test" / "Conversion"
KERNELS = CONVERSION / "ember-gpu-to-nvvm.mlir"
FEATURES = {"sm_90a": "+ptx81", "sm_100a": "+ptx86"}


def lower(text, chip):
    opts = f"chip={chip} features={FEATURES[chip]}"
    with context():
        module = ir.Module.parse(text)
        pm = passmanager.PassManager.parse(
            f"builtin.module(ember-cuda-nvvm{{{opts}}},ember-cuda-binary{{{opts}}})")
        pm.run(module.operation)
        return str(module)


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("chip", ["sm_90a", "sm_100a"])
def test_tma_mbarrier_cluster_kernel_passes_ptxas(chip, tmp_path):
    modules = ptxas_check(lower(KERNELS.read_text(), chip), tmp_path, chip)
    ptx = modules["k"]
    for instr in ["mbarrier.init.shared.b64", "barrier.cluster.wait.aligned",
                  "cp.async.bulk.tensor.2d.shared::cluster.global.tile",
                  ".multicast::cluster", "cp.async.bulk.tensor.2d.global.shared::cta",
                  "fence.proxy.async.shared::cta", ".reqnctapercluster 2, 1, 1"]:
        assert instr in ptx, instr


@pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
@pytest.mark.parametrize("name,chip,instrs", [
    ("ember-gpu-to-nvvm-sm100.mlir", "sm_100a",
     ["tcgen05.alloc.cta_group::2", "tcgen05.mma.cta_group::2.kind::f16",
      "tcgen05.commit.cta_group::2", "tcgen05.ld.sync.aligned.32x32b.x4.b32",
      ".global.tile.mbarrier::complete_tx::bytes.cta_group::2"]),
    ("ember-gpu-to-nvvm-wgmma.mlir", "sm_90a",
     ["wgmma.fence.sync.aligned", "wgmma.wait_group.sync.aligned"]),
])
def test_tensor_core_kernels_pass_ptxas(name, chip, instrs, tmp_path):
    ptx = ptxas_check(lower((CONVERSION / name).read_text(), chip), tmp_path, chip)["k"]
    for instr in instrs:
        assert instr in ptx, instr


def test_verifier_failure_is_a_diagnostic():
    bad = """
    func.func @f(%bars: memref<2xi64>, %i: index) {
      ember_gpu.barrier_arrive %bars[%i] : memref<2xi64>
      return
    }"""
    with context(), pytest.raises(ir.MLIRError, match="barrier_c1"):
        ir.Module.parse(bad)


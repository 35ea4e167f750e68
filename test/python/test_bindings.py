"""ember._mlir: MLIR's Python bindings with the ember dialect registered."""

import numpy as np
import pytest

from ember._mlir import ir, passmanager
from ember._mlir.dialects import ember as E
from ember._mlir.dialects import func


def test_generated_op_classes_build_verified_ir():
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.create()
        f32 = ir.F32Type.get()
        t = ir.RankedTensorType.get([4], f32)
        with ir.InsertionPoint(module.body):
            @func.FuncOp.from_py_func(t, t)
            def main(a, b):
                s = E.AddOp(a, b).result
                return E.TanhOp(s).result
        assert module.operation.verify()
        text = str(module)
        assert "ember.add" in text and "ember.tanh" in text


def test_enum_attributes_are_exposed():
    assert hasattr(E, "ComparisonDirection") and hasattr(E, "ReduceKind")


def test_pipeline_diagnostics_raise_a_python_exception():
    src = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = ember.slice %a, start = [0], limit = [2], strides = [1]
          : (tensor<4xf32>) -> tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    with ir.Context():
        with pytest.raises(ir.MLIRError, match="slice"):
            ir.Module.parse(src)


def test_cpu_pipeline_from_python_lowers_to_llvm():
    src = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = ember.exp %a : tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    with ir.Context():
        m = ir.Module.parse(src)
        passmanager.PassManager.parse("builtin.module(ember-cpu-pipeline)").run(m.operation)
        assert "llvm.func @main" in str(m)
    np.testing.assert_equal(1, 1)

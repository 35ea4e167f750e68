"""`precision=` of products (JAX's `lax.Precision`, its string aliases, a
pair, and `jax.default_matmul_precision`): kept on `ember.dot_general` (and
on the products `grad` and `vmap` make of it) and written as StableHLO's
`precision_config`, which is what a TPU computes f32 products in (its
default is one bf16 pass). The CPU computes f32 products in f32 whatever
it says, so values do not change here; the TPU run (`make tpu-check`,
whole program `precision_highest`) checks them there."""

import json
import os
import re
import subprocess

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import export, lax

A = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
B = np.arange(6, dtype=np.float32).reshape(3, 2) / 5


def _configs(f, *args, platform="tpu"):
    text = ember.jit(f).trace(*args).lower(lowering_platforms=(platform,)).as_text("stablehlo")
    return re.findall(r"precision_config = \[#stablehlo<precision (\w+)>, "
                      r"#stablehlo<precision (\w+)>\]", text), text.count("dot_general")


@pytest.mark.parametrize("precision,want", [
    (lax.Precision.HIGHEST, ("HIGHEST", "HIGHEST")), ("highest", ("HIGHEST", "HIGHEST")),
    ("float32", ("HIGHEST", "HIGHEST")), ("tensorfloat32", ("HIGH", "HIGH")),
    ("bfloat16", ("DEFAULT", "DEFAULT")), (lax.Precision.HIGH, ("HIGH", "HIGH")),
    ((lax.Precision.HIGHEST, lax.Precision.DEFAULT), ("HIGHEST", "DEFAULT")),
    (("high", "highest"), ("HIGH", "HIGHEST"))])
def test_precision_is_written_on_the_product(precision, want):
    for f in (lambda a, b: jnp.dot(a, b, precision=precision),
              lambda a, b: jnp.matmul(a, b, precision=precision),
              lambda a, b: jnp.einsum("ij,jk->ik", a, b, precision=precision),
              lambda a, b: jnp.tensordot(a, b, 1, precision=precision),
              lambda a, b: lax.dot(a, b, precision=precision),
              lambda a, b: lax.dot_general(a, b, (([1], [0]), ([], [])), precision=precision)):
        configs, n = _configs(f, A, B)
        assert configs == [want] and n == 1
        np.testing.assert_allclose(np.asarray(ember.jit(f)(A, B)), A @ B, rtol=1e-6)


def _stablehlo(f):
    return ember.jit(f).trace(A, B).lower(lowering_platforms=("tpu",)).as_text("stablehlo")


def test_without_precision_the_target_default():
    configs, n = _configs(lambda a, b: a @ b, A, B)
    assert configs == [] and n == 1


def test_derived_products_keep_it():
    def loss(a, b):
        return jnp.sum(jnp.tanh(jnp.dot(a, b, precision="highest")))

    # The forward product and both transposed products of the gradient.
    configs, n = _configs(ember.grad(loss, argnums=(0, 1)), A, B)
    assert n == 3 and configs == [("HIGHEST", "HIGHEST")] * 3
    # vmap: one batched product; jvp: the tangent products too.
    configs, n = _configs(ember.vmap(lambda b: jnp.dot(A, b, precision="high"), in_axes=1),
                          np.stack([B, B], axis=1))
    assert n == 1 and configs == [("HIGH", "HIGH")]
    configs, n = _configs(lambda a, b, ta: ember.jvp(
        lambda x: jnp.dot(x, b, precision="highest"), (a,), (ta,)), A, B, A)
    assert n >= 2 and configs == [("HIGHEST", "HIGHEST")] * n


def test_default_matmul_precision_config():
    f = ember.jit(lambda a, b: a @ b)
    assert _configs(f, A, B)[0] == []
    with ember.default_matmul_precision("float32"):
        assert _configs(lambda a, b: a @ b, A, B)[0] == [("HIGHEST", "HIGHEST")]
        # A product's own precision wins over the default.
        assert _configs(lambda a, b: jnp.dot(a, b, precision="bfloat16"), A, B)[0] == [
            ("DEFAULT", "DEFAULT")]
        np.testing.assert_allclose(np.asarray(f(A, B)), A @ B, rtol=1e-6)
    assert _configs(lambda a, b: a @ b, A, B)[0] == []
    with ember.default_matmul_precision("BF16_BF16_F32"):  # (an algorithm preset)
        configs, text = _configs(lambda a, b: a @ b, A, B)[0], _stablehlo(lambda a, b: a @ b)
        assert configs == [("DEFAULT", "DEFAULT")] and "lhs_precision_type = bf16" in text


def test_bad_precision_is_a_clear_error():
    with pytest.raises(ValueError, match="Precision argument must be one of"):
        jnp.dot(A, B, precision="float64")
    with pytest.raises(ValueError, match="a pair has two entries"):
        jnp.dot(A, B, precision=("highest",))


def test_exports_and_imports_keep_it():
    exp = export.export(ember.jit(lambda a, b: jnp.dot(a, b, precision="highest")))(A, B)
    assert "precision_config = [#stablehlo<precision HIGHEST>" in exp.mlir_module()
    back = export.deserialize(exp.serialize())
    np.testing.assert_allclose(np.asarray(back.call(A, B)), A @ B, rtol=1e-6)
    # A module from JAX's text: its precision_config read back.
    again = export.from_stablehlo(exp.mlir_module())
    text = ember.jit(again.call).trace(A, B).lower(lowering_platforms=("tpu",)).as_text(
        "stablehlo")
    assert "precision_config = [#stablehlo<precision HIGHEST>" in text


_JAX_CONFIGS = """
import json, re
import jax, jax.numpy as jnp
a, b = jnp.ones((4, 3)), jnp.ones((3, 2))
progs = {
    "highest": lambda a, b: jnp.dot(a, b, precision=jax.lax.Precision.HIGHEST),
    "pair": lambda a, b: jnp.dot(a, b, precision=("highest", "high")),
    "grad": jax.grad(lambda a, b: jnp.sum(jnp.tanh(jnp.dot(a, b, precision="highest")))),
}
out = {}
for name, f in progs.items():
    text = jax.jit(f).trace(a, b).lower(lowering_platforms=("tpu",)).as_text()
    # (JAX prints the pretty form: precision = [HIGHEST, HIGHEST].)
    out[name] = re.findall(r"precision = \\[(\\w+), (\\w+)\\]", text)
print(json.dumps(out))
"""


def test_precision_configs_are_jaxs():
    jax_python = os.environ.get("EMBER_JAX_PYTHON", "")
    if not (jax_python and os.path.exists(jax_python)):
        pytest.skip("no JAX Python (set EMBER_JAX_PYTHON; make test does)")
    run = subprocess.run([jax_python, "-c", _JAX_CONFIGS], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    theirs = json.loads(run.stdout.strip().splitlines()[-1])
    ours = {
        "highest": _configs(lambda a, b: jnp.dot(a, b, precision=lax.Precision.HIGHEST),
                            A, B)[0],
        "pair": _configs(lambda a, b: jnp.dot(a, b, precision=("highest", "high")), A, B)[0],
        "grad": _configs(ember.grad(lambda a, b: jnp.sum(jnp.tanh(
            jnp.dot(a, b, precision="highest")))), A, B)[0],
    }
    for name in ours:
        assert [tuple(c) for c in theirs[name]] == ours[name], name


def test_make_jaxpr_shows_it_as_jax():
    text = str(ember.make_jaxpr(lambda a, b: jnp.dot(a, b, precision="highest"))(A, B))
    assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in text  # (JAX 0.10.2's text)
    assert "precision" not in str(ember.make_jaxpr(lambda a, b: a @ b)(A, B))


def test_in_tpu_kernels_only_the_products_own_precision():
    # Inside a Pallas TPU kernel HIGHEST is Mosaic's fp32 contraction; the
    # default_matmul_precision config does not reach kernels (JAX's kernel
    # lowering reads the product's own precision only).
    from ember.experimental import pallas as pl

    def kernel(x_ref, y_ref, o_ref, p_ref):
        o_ref[...] = jnp.dot(x_ref[...], y_ref[...])
        p_ref[...] = jnp.dot(x_ref[...], y_ref[...], precision="highest")

    x = np.ones((8, 128), np.float32)
    y = np.ones((128, 128), np.float32)

    def f(x, y):
        out = ember.ShapeDtypeStruct((8, 128), np.float32)
        return pl.pallas_call(kernel, out_shape=[out, out])(x, y)

    def matmuls(text):
        return [ln for ln in text.splitlines() if "ember_tpu.matmul" in ln]

    for config in (None, "float32"):
        with ember.default_matmul_precision(config):
            text = ember.jit(f).trace(x, y).lower(lowering_platforms=("tpu",)).as_text("mosaic")
        plain, highest = matmuls(text)
        assert "contract_precision" not in plain
        assert "precision = #ember_tpu.contract_precision<fp32>" in highest
    with pytest.raises(NotImplementedError, match="per-operand dot precision"):
        ember.jit(lambda x, y: pl.pallas_call(
            lambda a, b, o: o.__setitem__(Ellipsis, jnp.dot(a[...], b[...],
                                                           precision=("highest", "default"))),
            out_shape=ember.ShapeDtypeStruct((8, 128), np.float32))(x, y)).trace(x, y).lower(
                lowering_platforms=("tpu",)).as_text("mosaic")


def test_changing_the_default_recompiles_nothing(compiles):
    # The CPU computes f32 products in f32 whatever the precision says:
    # code compiled before a `with default_matmul_precision(...)` is kept
    # (JAX's programs would be cached per configuration; clearing Ember's
    # caches at each `with` would recompile every call in such a loop).
    f = ember.jit(lambda a, b: jnp.tanh(a @ b))
    want = np.asarray(f(A, B))
    n = compiles[0]
    for _ in range(3):
        with ember.default_matmul_precision("float32"):
            np.testing.assert_array_equal(np.asarray(f(A, B)), want)
    assert compiles[0] == n


# JAX's algorithm presets (lax.DotAlgorithmPreset, or a preset's name).
_M = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)


def test_algorithm_presets_compute_as_jax_does_on_the_cpu():
    m = jnp.asarray(_M)
    # Sums of the products recorded from JAX 0.10.2 on the CPU.
    want = {"DEFAULT": -6.971652373671532, "F32_F32_F32": -6.971652373671532,
            "BF16_BF16_F32": -6.971652373671532, "F64_F64_F64": -6.971652578562498,
            "F16_F16_F16": -6.97210693359375}
    for name, total in want.items():
        for p in (name, getattr(lax.DotAlgorithmPreset, name)):
            r = jnp.dot(m, m, precision=p)
            assert r.dtype == np.float32
            assert float(np.asarray(r, np.float64).sum()) == total, name
    # F64_F64_F64 is the f64 product, rounded to f32.
    np.testing.assert_array_equal(
        np.asarray(jnp.dot(m, m, precision="F64_F64_F64")),
        (_M.astype(np.float64) @ _M.astype(np.float64)).astype(np.float32))
    # Operands of a type the preset does not take are converted (f16 to bf16).
    h = m.astype(jnp.float16)
    r = jnp.dot(h, h, precision="BF16_BF16_F32")
    assert r.dtype == np.float16 and float(np.asarray(r, np.float64).sum()) == -6.948333740234375
    # Under grad, jit and the default-precision config too.
    g = ember.grad(lambda x: jnp.dot(x, x, precision=lax.DotAlgorithmPreset.F64_F64_F64).sum())(m)
    assert float(np.asarray(g, np.float64).sum()) == -34.05721026659012
    with ember.default_matmul_precision("F64_F64_F64"):
        r = ember.jit(lambda x: x @ x)(m)
    assert float(np.asarray(r, np.float64).sum()) == -6.971652578562498
    # A product of booleans (counted in int32) takes one too (JAX's values).
    b = jnp.array([[True, False], [True, True]])
    np.testing.assert_array_equal(jnp.dot(b, b, precision="F32_F32_F32"),
                                  [[True, False], [True, True]])
    assert repr(lax.DotAlgorithmPreset.F64_F64_F64) == "DotAlgorithmPreset.F64_F64_F64"
    assert str(lax.DotAlgorithmPreset.BF16_BF16_F32) == "BF16_BF16_F32"


def test_presets_the_cpu_lacks_are_jaxs_error():
    m = jnp.asarray(_M)
    for name in ("TF32_TF32_F32", "F16_F16_F32", "BF16_BF16_BF16", "BF16_BF16_F32_X9",
                 "ANY_F8_ANY_F8_F32"):
        with pytest.raises(ValueError, match=f"The precision '{name}' is not supported by "
                                             "dot_general on CPU"):
            ember.jit(lambda x, n=name: jnp.dot(x, x, precision=n))(m)
    with pytest.raises(ValueError, match="The precision 'DotAlgorithm.* is not supported"):
        jnp.dot(m, m, precision=lax.DotAlgorithm(np.float32, np.float32, np.float32))


def test_presets_in_jaxpr_and_stablehlo():
    m = jnp.asarray(_M)
    assert "precision=F64_F64_F64" in str(
        ember.make_jaxpr(lambda x: jnp.dot(x, x, precision="F64_F64_F64"))(m))
    # As JAX writes it (its text for BF16_BF16_F32 on f32 operands).
    text = ember.jit(lambda x: jnp.dot(x, x, precision="BF16_BF16_F32")).trace(m).lower(
        lowering_platforms=("tpu",)).as_text("stablehlo")
    assert ("algorithm = #stablehlo.dot_algorithm<lhs_precision_type = bf16, "
            "rhs_precision_type = bf16, accumulation_type = f32, lhs_component_count = 1, "
            "rhs_component_count = 1, num_primitive_operations = 1, "
            "allow_imprecise_accumulation = false>") in text
    # Read back from StableHLO: the preset again.
    exp = export.export(ember.jit(lambda x: jnp.dot(x, x, precision="BF16_BF16_F32_X3")))(m)
    again = export.from_stablehlo(exp.mlir_module())
    assert "precision=BF16_BF16_F32_X3" in str(ember.make_jaxpr(again.call)(m))
    out = again.call(m)
    out = out[0] if isinstance(out, (list, tuple)) else out
    np.testing.assert_allclose(np.asarray(out), _M @ _M, rtol=1e-5)

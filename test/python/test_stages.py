"""Every stage of the pipeline is visible from Python, in EMBER_DUMP_DIR, and
pass errors that are the user's reach Python as the exception their id names."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._mlir._mlir_libs import _ember_runtime


def _f(x):
    return jnp.sum(jnp.sin(x) * 2.0)


def test_lower_shows_every_stage(cpu_platform):
    lowered = ember.jit(ember.grad(_f)).lower(jnp.ones(4))
    assert "ember.vjp" in lowered.as_text("ember")
    transformed = lowered.as_text("transforms")
    assert "ember.vjp" not in transformed and "ember.cos" in transformed
    assert "ember." in lowered.as_text("optimize")
    llvm = lowered.as_text("llvm")
    assert "llvm.func @main" in llvm and "ember." not in llvm
    assert lowered.as_text("cpu-codegen") == llvm
    compiled = lowered.compile()
    assert compiled.as_text("transforms") == transformed
    assert compiled.as_text() == llvm
    np.testing.assert_allclose(np.asarray(compiled(jnp.ones(4))), 2 * np.cos(np.ones(4)),
                               rtol=1e-6)


def test_unknown_stage_is_a_value_error():
    with pytest.raises(ValueError, match="unknown stage 'bogus'.*transforms"):
        ember.jit(_f).lower(jnp.ones(3)).as_text("bogus")


def test_dump_dir_holds_every_stage(tmp_path, cpu_platform):
    code = ("import ember, ember.numpy as jnp\n"
            "print(ember.jit(lambda x: jnp.sin(x) + 1)(jnp.ones(3)))\n")
    env = dict(os.environ, EMBER_DUMP_DIR=str(tmp_path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    names = sorted(p.name for p in tmp_path.iterdir())
    stages = [n.split(".")[2] for n in names if n.startswith("0000.")]
    assert stages == ["ember", "transforms", "optimize", "llvm"]


def test_runtime_tables_are_the_shared_declarations():
    tables = _ember_runtime.runtime_tables()
    assert "ember_gemm_f32" in tables["entry_points"]
    assert "ember_host_callback" in tables["entry_points"]
    assert tables["type_codes"][3] == "float32"
    assert tables["error_kinds"]["not-differentiable"] == "ValueError"


def test_user_error_id_maps_to_its_exception():
    def f(x):
        y = ember.pure_callback(np.sin, ember.ShapeDtypeStruct(x.shape, x.dtype), x)
        return jnp.sum(y)

    with pytest.raises(ValueError, match="Pure callbacks do not support JVP") as info:
        ember.grad(f)(jnp.ones(3))
    assert "[ember:" not in str(info.value)
    assert "test_stages.py" in str(info.value)


def test_cost_and_memory_analysis_and_stage_attributes():
    # XLA counts 1055 flops and 32 transcendentals for this program (JAX
    # 0.10.2, recorded): 2*8*4*16 for the product, 31 adds for the sum.
    f = ember.jit(lambda a, b: jnp.tanh(a @ b).sum())
    lowered = f.lower(jnp.ones((8, 16)), jnp.ones((16, 4)))
    cost = lowered.cost_analysis()
    assert (cost["flops"], cost["transcendentals"]) == (1055.0, 32.0)
    assert cost["bytes accessed"] > 768
    compiled = lowered.compile()
    assert compiled.cost_analysis()["flops"] == 1055.0
    mem = compiled.memory_analysis()
    assert (mem.argument_size_in_bytes, mem.output_size_in_bytes) == (768, 4)
    assert mem.temp_size_in_bytes >= 128
    assert str(lowered.in_tree) == "PyTreeDef(((*, *), {}))"
    assert lowered.out_info.shape == () and "ember.dot_general" in str(lowered.compiler_ir())
    assert "tanh" in str(f.trace(jnp.ones((8, 16)), jnp.ones((16, 4))).jaxpr)
    # A counted loop counts its body trip_count times.
    g = ember.jit(lambda x: ember.lax.fori_loop(0, 10, lambda i, c: jnp.sin(c) * 2, x))
    assert g.lower(jnp.ones(4)).cost_analysis()["transcendentals"] == 40.0


def test_args_info_in_avals_donate_argnums():
    # JAX's ArgInfo pytree of (args, kwargs) without the static arguments,
    # donated leaves marked (donate_argnums or donate_argnames), on every
    # stage; the texts are JAX 0.10.2's for the same calls.
    import ember.stages

    f = ember.jit(lambda x, n, y=1.0: x * n + y, static_argnums=1, donate_argnums=0)
    args = (np.ones(3, np.float32), 2)
    kwargs = {"y": np.float32(3)}
    traced = f.trace(*args, **kwargs)
    lowered = traced.lower()
    compiled = lowered.compile()
    want = ("((ArgInfo(_aval=ShapedArray(float32[3]), donated=True),), "
            "{'y': ArgInfo(_aval=ShapedArray(float32[]), donated=False)})")
    for stage in (traced, lowered, compiled):
        assert repr(stage.args_info) == want
        assert repr(stage.in_avals) == "((ShapedArray(float32[3]),), {'y': ShapedArray(float32[])})"
        assert str(stage.in_tree) == "PyTreeDef(((*,), {'y': *}))"
        assert stage.donate_argnums == (0,)
    info = lowered.args_info[0][0]
    assert isinstance(info, ember.stages.ArgInfo) and info.shape == (3,)
    assert info.dtype == np.float32 and info.donated
    g = ember.jit(lambda a, b: a["u"] + b, donate_argnames="b")
    assert repr(g.lower({"u": np.ones(2, np.float32)}, np.ones(2, np.float32)).args_info) == (
        "(({'u': ArgInfo(_aval=ShapedArray(float32[2]), donated=False)}, "
        "ArgInfo(_aval=ShapedArray(float32[2]), donated=True)), {})")

"""`ember.export`: export a jitted function, serialize it, load it (also in
a fresh process) and call it, under jit, grad and vmap; its VJP; clear
errors for bad calls and for damaged or foreign files (a seeded fuzz)."""

import hashlib
import json
import os
import random
import struct
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import export, lax


def _model(x, w):
    h = jnp.tanh(x @ w)
    return {"y": h, "n": lax.fori_loop(0, 3, lambda i, c: c * 0.5, jnp.sum(h))}


SPECS = (ember.ShapeDtypeStruct((4, 3), jnp.float32), ember.ShapeDtypeStruct((3, 2), jnp.float32))
X = jnp.arange(12.0).reshape(4, 3) / 10
W = jnp.arange(6.0).reshape(3, 2) / 7


def _exported():
    return export.export(ember.jit(_model))(*SPECS)


def test_export_attributes_and_round_trip():
    exp = _exported()
    assert exp.platforms == ("cpu",) and exp.nr_devices == 1
    assert [a.shape for a in exp.in_avals] == [(4, 3), (3, 2)]
    assert [a.shape for a in exp.out_avals] == [(), (4, 2)]
    assert "ember.dot_general" in exp.ember_module()
    assert '"stablehlo.dot_general"' in exp.mlir_module()
    back = export.deserialize(exp.serialize())
    want = _model(X, W)
    got = back.call(X, W)
    np.testing.assert_allclose(np.asarray(got["y"]), np.asarray(want["y"]), rtol=1e-6)
    np.testing.assert_allclose(float(got["n"]), float(want["n"]), rtol=1e-6)


def test_exported_call_under_transformations():
    back = export.deserialize(_exported().serialize())
    np.testing.assert_allclose(
        np.asarray(ember.jit(lambda x, w: back.call(x, w)["y"] * 2)(X, W)),
        2 * np.asarray(_model(X, W)["y"]), rtol=1e-6)
    g = ember.grad(lambda w: back.call(X, w)["n"])(W)
    want = ember.grad(lambda w: _model(X, w)["n"])(W)
    np.testing.assert_allclose(np.asarray(g), np.asarray(want), rtol=1e-5)
    xs = jnp.stack([X, X + 1])
    got = ember.vmap(lambda x: back.call(x, W)["y"])(xs)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(_model(X + 1, W)["y"]),
                               rtol=1e-6)


def test_exported_vjp():
    exp = _exported()
    v = export.deserialize(exp.vjp().serialize())
    ct_n, ct_y = jnp.ones(()), jnp.ones((4, 2))
    gx, gw = v.call(X, W, ct_n, ct_y)
    _, pull = ember.vjp(_model, X, W)
    wx, ww = pull({"n": ct_n, "y": ct_y})
    np.testing.assert_allclose(np.asarray(gx), np.asarray(wx), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gw), np.asarray(ww), rtol=1e-5)


def test_served_in_a_fresh_process(tmp_path):
    path = tmp_path / "model.ember"
    path.write_bytes(bytes(_exported().serialize()))
    code = (
        "import numpy as np, ember.numpy as jnp\n"
        "from ember import export\n"
        f"e = export.deserialize(open({str(path)!r}, 'rb').read())\n"
        "x = jnp.arange(12.0).reshape(4, 3) / 10; w = jnp.arange(6.0).reshape(3, 2) / 7\n"
        "print(repr(np.asarray(e.call(x, w)['y']).tolist()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    np.testing.assert_allclose(np.array(eval(out)), np.asarray(_model(X, W)["y"]), rtol=1e-6)


def test_call_errors():
    exp = _exported()
    with pytest.raises(ValueError, match="float32\\[5,3\\]"):
        exp.call(jnp.ones((5, 3)), W)
    with pytest.raises(ValueError, match="int32"):
        exp.call(X.astype(jnp.int32), W)
    with pytest.raises(TypeError, match="structure"):
        exp.call((X, W))
    with pytest.raises(TypeError, match="jax.jit"):
        export.export(_model)
    with pytest.raises(NotImplementedError, match="targets for cpu, cuda, tpu"):
        export.export(ember.jit(_model), platforms=("rocm",))(*SPECS)
    with pytest.raises(ValueError, match="distinct"):
        export.export(ember.jit(_model), platforms=("cpu", "cpu"))(*SPECS)


def _reseal(body):
    return b"EMBEREXP" + hashlib.sha256(body).digest() + body


def _parts(blob):
    data = bytes(blob)[40:]
    (n,) = struct.unpack("<I", data[:4])
    return json.loads(data[4:4 + n]), data[4 + n:]


def test_newer_format_and_bad_headers_are_rejected():
    header, body = _parts(_exported().serialize())
    newer = dict(header, format_version=99)
    h = json.dumps(newer).encode()
    with pytest.raises(ValueError, match="format version 99"):
        export.deserialize(_reseal(struct.pack("<I", len(h)) + h + body))
    for bad in ({**header, "in_avals": [[["x"], "float32", False]]},
                {**header, "in_avals": header["in_avals"][:1]},
                {**header, "out_tree": {"tuple": ["*"]}},
                {k: v for k, v in header.items() if k != "fun_name"}):
        h = json.dumps(bad).encode()
        with pytest.raises(ValueError):
            export.deserialize(_reseal(struct.pack("<I", len(h)) + h + body))


def test_fuzzed_files_give_value_errors():
    blob = bytes(_exported().serialize())
    rng = random.Random(0)
    for _ in range(300):
        b = bytearray(blob)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        if rng.random() < 0.3:
            b = b[:rng.randrange(len(b))]
        if bytes(b) == blob:
            continue
        with pytest.raises(ValueError):
            export.deserialize(bytes(b))


def test_crafted_bytecode_with_a_valid_checksum_gives_value_errors():
    """Byte changes in the module's bytecode, resealed with a valid checksum:
    MLIR's reader aborts the process on some of them (an assertion, LLVM's
    fatal errors) and leaves its context unusable after others (an error
    message that is not UTF-8: the next multi-threaded pass pipeline waited
    forever); `deserialize` reads the bytecode in a forked child, so each is
    a ValueError (or a module that loads) and this process lives on and
    compiles."""
    header, body = _parts(_exported().serialize())
    h = json.dumps(header).encode()
    rng = random.Random(1)
    aborted = 0
    for _ in range(150):
        b = bytearray(body)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        blob = _reseal(struct.pack("<I", len(h)) + h + bytes(b))
        try:
            export.deserialize(blob)
        except ValueError as e:
            aborted += "aborts on it" in str(e)
    assert aborted >= 1  # (4 of these 150 abort MLIR's reader)
    cuda = export.export(ember.jit(_model), platforms=["cuda"])(*SPECS)  # (a threaded pipeline)
    assert cuda.platforms == ("cuda",)
    np.testing.assert_allclose(ember.jit(lambda x: jnp.tanh(x) * 2)(X), np.tanh(X) * 2,
                               rtol=1e-6)


def test_export_module_constants_and_shape_dtype_struct_sharding():
    assert export.default_export_platform() == "cpu"
    assert (export.minimum_supported_calling_convention_version,
            export.maximum_supported_calling_convention_version) == (9, 10)
    spec = ember.ShapeDtypeStruct((4,), jnp.float32, sharding=None)
    assert spec.sharding is None and spec.shape == (4,)
    exp = export.export(ember.jit(lambda x: 2 * x * x))(
        ember.ShapeDtypeStruct((), np.float32))
    import re

    assert re.search(r".*@main.*", exp.mlir_module()).group(0).strip().startswith(
        "func.func public @main(")


def test_exports_for_other_platforms():
    """JAX's cross-platform export: lowered for each platform at export (an
    op a target cannot compile is the error now), called only where it was
    exported for unless the platform check is disabled (JAX's error text),
    which survives serialization; the module of a TPU export carries its
    Pallas kernels as Mosaic custom calls."""
    exp = export.export(ember.jit(lax.cos), platforms=["tpu"])(1.0)
    assert exp.platforms == ("tpu",)
    with pytest.raises(ValueError, match=r"Function 'cos' was lowered for platforms "
                                         r"'\('tpu',\)' but it is used on '\('cpu',\)'"):
        exp.call(1.0)
    unsafe = export.export(ember.jit(lax.cos), platforms=["tpu"],
                           disabled_checks=[export.DisabledSafetyCheck.platform()])(1.0)
    np.testing.assert_allclose(unsafe.call(1.0), np.cos(1.0), rtol=1e-6)
    loaded = export.deserialize(unsafe.serialize())
    assert loaded.disabled_safety_checks == (export.DisabledSafetyCheck.platform(),)
    np.testing.assert_allclose(loaded.call(2.0), np.cos(2.0), rtol=1e-6)
    multi = export.export(ember.jit(_model), platforms=["tpu", "cpu", "cuda"])(*SPECS)
    np.testing.assert_allclose(multi.call(X, W)["y"], np.tanh(np.asarray(X) @ np.asarray(W)),
                               rtol=1e-5)
    assert "stablehlo.tanh" in multi.mlir_module()
    with pytest.raises(TypeError, match="DisabledSafetyCheck"):
        export.export(ember.jit(lax.cos), disabled_checks=["platform"])(1.0)
    # A host callback has no StableHLO form for XLA:TPU: exporting for TPU
    # fails now, for the CPU it works.
    def cb(x):
        return ember.pure_callback(np.sin, ember.ShapeDtypeStruct((), np.float32), x)
    with pytest.raises(NotImplementedError):
        export.export(ember.jit(cb), platforms=["tpu"])(1.0)
    np.testing.assert_allclose(export.export(ember.jit(cb), platforms=["cpu", "cuda"])(1.0)
                               .call(1.0), np.sin(1.0), rtol=1e-6)


def test_tpu_export_keeps_its_kernels():
    import importlib.util
    import os

    from ember.experimental import pallas as pl
    from ember.experimental.pallas import tpu as pltpu

    path = os.path.join(os.path.dirname(__file__), "..", "data", "tpu", "kernels.py")
    spec = importlib.util.spec_from_file_location("tpu_kernels_export", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    name, fn, args = mod.programs(ember, jnp, pl, pltpu)[0]
    exp = export.export(ember.jit(fn), platforms=["tpu"])(*args)
    text = exp.mlir_module()
    assert 'call_target_name = "tpu_custom_call"' in text
    assert export.deserialize(exp.serialize()).mlir_module() == text
    # For the TPU and the CPU: one module, each kernel a case on the
    # platform index (here the TPU's is 0) between its loops and Mosaic's
    # call (test_stablehlo.py runs such a module under XLA).
    both = export.export(ember.jit(fn), platforms=["tpu", "cpu"])(*args)
    multi = both.mlir_module()
    kernels = text.count('"tpu_custom_call"')
    assert multi.count('"tpu_custom_call"') == kernels
    assert multi.count('"stablehlo.case"') == kernels, multi
    assert '"stablehlo.compare"(%arg0, %1)' in multi and "dense<0> : tensor<i32>" in multi
    assert export.deserialize(both.serialize()).mlir_module() == multi
    want = ember.jit(fn)(*args)
    np.testing.assert_allclose(both.call(*args), want, rtol=1e-6)


_TPU_DECOMPOSITIONS = """
import json, re, sys
import jax, jax.numpy as jnp
x = jnp.ones((2, 4, 3), jnp.float32)
out = {}
for name, f in [("qr", jnp.linalg.qr), ("eigh", lambda a: jax.lax.linalg.eigh(a[:, :3, :3])),
                ("lu", jax.lax.linalg.lu), ("svd", jnp.linalg.svd)]:
    text = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text()
    out[name] = sorted(re.findall(r"custom_call @(\\w+)\\(.*\\{(.*?)\\}", text))
print(json.dumps(out))
"""


def test_tpu_exports_decompositions_as_xla_tpu_calls():
    # For TPU, qr/eigh/lu are XLA:TPU's own custom calls (JAX's lowering),
    # not LAPACK's CPU ones (which a TPU cannot run: the 43rd session ran
    # these on a TPU v5e, `make tpu-check`); svd, which XLA:TPU lacks, is
    # computed as JAX computes it there, from a polar decomposition (QDWH:
    # Qr and Householder products, Cholesky steps) and an Eigh.
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3) % 5 + np.eye(4, 3, dtype=np.float32)
    fns = {"qr": jnp.linalg.qr, "eigh": lambda a: lax.linalg.eigh(a[:, :3, :3]),
           "lu": lax.linalg.lu}
    import re

    ours = {}
    for name, f in fns.items():
        text = export.export(ember.jit(f), platforms=["tpu"])(x).mlir_module()
        assert "lapack" not in text
        calls = re.findall(r'"stablehlo.custom_call"\(.*?\) <\{(.*?)\}>', text)
        ours[name] = sorted((re.search(r'call_target_name = "(\w+)"', p).group(1), p)
                            for p in calls)
        assert "lapack_" in export.export(ember.jit(f))(x).mlir_module()
    assert [t for t, _ in ours["qr"]] == ["ProductOfElementaryHouseholderReflectors", "Qr"]
    assert 'backend_config = "1,1,100,1e-6"' in ours["eigh"][0][1]
    assert "api_version = 2 : i32" in ours["lu"][0][1]
    svd = export.export(ember.jit(jnp.linalg.svd), platforms=["tpu"])(x).mlir_module()
    assert "lapack" not in svd and "gesdd" not in svd
    svd_targets = set(re.findall(r'call_target_name = "(\w+)"', svd))
    assert svd_targets == {"Qr", "ProductOfElementaryHouseholderReflectors", "Eigh"}
    assert "stablehlo.cholesky" in svd and "stablehlo.while" in svd
    # (Its products in full f32, as JAX's TPU SVD computes them.)
    assert "precision_config = [#stablehlo<precision HIGHEST>" in svd
    # Results on the CPU are unchanged by a TPU export beside it.
    both = export.export(ember.jit(fns["lu"]), platforms=["cpu", "tpu"])(x)
    np.testing.assert_allclose(both.call(x)[0], lax.linalg.lu(x)[0], rtol=1e-6)
    jax_python = os.environ.get("EMBER_JAX_PYTHON", "")
    if jax_python and os.path.exists(jax_python):  # JAX's targets and configs
        run = subprocess.run([jax_python, "-c", _TPU_DECOMPOSITIONS], capture_output=True,
                             text=True, timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        theirs = json.loads(run.stdout.strip().splitlines()[-1])
        for name in fns:
            targets = sorted(t for t, _ in theirs[name])
            assert targets == [t for t, _ in ours[name]], name
            for (t, cfg), (_, props) in zip(sorted(theirs[name]), ours[name]):
                want = re.search(r'backend_config = "([^"]*)"', cfg).group(1)
                assert f'backend_config = "{want}"' in props, (name, t)
                assert ("api_version = 2" in cfg) == ("api_version = 2" in props), (name, t)
        assert {t for t, _ in theirs["svd"]} == svd_targets


def test_sharded_exports(devices8):
    """JAX's device-polymorphic exports: the arguments' shardings (on an
    AbstractMesh or a concrete one) fix `nr_devices` and
    `in_shardings_jax`; a call needs that many devices (JAX's error) and
    places its results on the call's devices as the export sharded them;
    the shardings survive serialization."""
    from ember.sharding import AbstractMesh, Mesh, NamedSharding
    from ember.sharding import PartitionSpec as P

    amesh = AbstractMesh((4,), ("a",))
    exp = export.export(ember.jit(lambda x: x.T))(
        ember.ShapeDtypeStruct((32,), np.int32, sharding=NamedSharding(amesh, P("a"))))
    assert exp.nr_devices == 4 and str(exp.in_avals) == "(ShapedArray(int32[32]),)"
    assert exp.in_shardings_jax(amesh) == (NamedSharding(amesh, P("a")),)
    assert exp.out_shardings_jax(amesh) == (None,)  # (Auto axes: the compiler's choice)
    devs = ember.local_devices()
    other = Mesh(np.array(devs[2:6]).reshape(2, 2), ("b", "c"))
    res = exp.call(ember.device_put(jnp.arange(32), NamedSharding(other, P("b"))))
    assert [f"{s.device} {s.index}" for s in res.addressable_shards[:2]] == \
        ["cpu:2 (slice(0, 8, None),)", "cpu:3 (slice(8, 16, None),)"]
    np.testing.assert_array_equal(res, np.arange(32))
    with pytest.raises(ValueError, match="exported for 4 devices and is called in a context "
                                         "with 1 devices"):
        exp.call(jnp.arange(32))
    with pytest.raises(ValueError, match="4 devices"):
        exp.in_shardings_jax(AbstractMesh((2,), ("a",)))
    loaded = export.deserialize(exp.serialize())
    assert loaded.nr_devices == 4
    assert loaded.in_shardings_jax(amesh) == exp.in_shardings_jax(amesh)
    # Explicit axes: the results' types are sharded, and reported.
    mesh = ember.make_mesh((2,), ("X",), devices=devs[:2])
    with ember.set_mesh(mesh):
        x = ember.device_put(jnp.arange(8.0), P("X"))
        e = export.export(ember.jit(lambda x: jnp.sin(x) * 2))(x)
        assert e.out_shardings_jax(mesh) == (NamedSharding(mesh, P("X")),)
        r = e.call(x)
        assert str(ember.typeof(r)) == "float32[8@X]"
        np.testing.assert_allclose(r, np.sin(np.arange(8.0)) * 2, rtol=1e-6)


def test_stablehlo_module_names_arguments_and_results():
    """As JAX's exported modules: each argument's location is its path
    (`x`, `y[0]`, `rest[0]`, a keyword's name) and each result has its
    `jax.result_info` path (texts from JAX 0.10.2's; JAX also drops unused
    arguments, Ember keeps them); serialized with the export."""
    import re

    exp = export.export(ember.jit(lambda x: 2 * x * x))(ember.ShapeDtypeStruct((), np.float32))
    assert re.search(r".*@main.*", exp.mlir_module()).group(0).strip() == (
        'func.func public @main(%arg0: tensor<f32> loc("x")) -> '
        '(tensor<f32> {jax.result_info = "result"}) {')

    def f(x, y, *rest, k=None):
        return {"a": x * 2, "b": (y[0] + k.sum(), rest)}
    exp = export.export(ember.jit(f))(jnp.ones(2), (jnp.ones(3), jnp.ones(1)), jnp.ones(4),
                                      k=jnp.ones(5))
    head = re.search(r".*@main.*", export.deserialize(exp.serialize()).mlir_module()).group(0)
    for name in ['loc("x")', 'loc("y[0]")', 'loc("y[1]")', 'loc("rest[0]")', 'loc("k")',
                 'jax.result_info = "result[\'a\']"', 'jax.result_info = "result[\'b\'][0]"',
                 'jax.result_info = "result[\'b\'][1][0]"']:
        assert name in head, name


def test_calling_convention_versions():
    # JAX 0.10.2 exports with version 10 by default, 9 when configured; the
    # version travels through serialize, and others are JAX's ValueError.
    f = ember.jit(jnp.sin)
    spec = ember.ShapeDtypeStruct((3,), np.float32)
    exp = export.export(f)(spec)
    assert exp.calling_convention_version == 10
    assert export.deserialize(exp.serialize()).calling_convention_version == 10
    ember.config.update("jax_export_calling_convention_version", 9)
    try:
        exp9 = export.export(f)(spec)
        assert exp9.calling_convention_version == 9
        back = export.deserialize(exp9.serialize())
        assert back.calling_convention_version == 9
        np.testing.assert_allclose(np.asarray(back.call(jnp.ones(3))), np.sin(1.0), rtol=1e-6)
        ember.config.update("jax_export_calling_convention_version", 11)
        with pytest.raises(ValueError, match=r"version 11 is outside the range of supported "
                                             r"versions \[9\.\.10\]"):
            export.export(f)(spec)
    finally:
        ember.config.update("jax_export_calling_convention_version", 10)


def test_serialize_with_vjp_order_stays_differentiable():
    # JAX's export guide: serialize(vjp_order=3) keeps three orders of
    # derivatives; Ember's serialized program is differentiated by Ember
    # itself, to any order.
    def f(x):
        return 7 * x ** 3

    blob = export.export(ember.jit(f))(1.).serialize(vjp_order=3)
    g = export.deserialize(blob).call
    np.testing.assert_allclose(float(g(0.1)), 7 * 0.1 ** 3, rtol=1e-6)
    np.testing.assert_allclose(float(ember.grad(g)(0.1)), 21 * 0.1 ** 2, rtol=1e-5)
    np.testing.assert_allclose(float(ember.grad(ember.grad(g))(0.1)), 42 * 0.1, rtol=1e-5)
    np.testing.assert_allclose(float(ember.grad(ember.grad(ember.grad(g)))(0.1)), 42.0,
                               rtol=1e-5)
    assert export.deserialize(blob).has_vjp()
    with pytest.raises(ValueError, match="vjp_order must be a non-negative int"):
        export.export(ember.jit(f))(1.).serialize(vjp_order=-1)

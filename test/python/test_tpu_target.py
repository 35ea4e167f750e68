"""The TPU target: Pallas TPU kernels lowered to Mosaic custom calls
(`targets/tpu.py`, `ember-tpu-kernel`), checked against JAX's own lowering
of the same kernels and jaxlib's Mosaic dialect in the JAX virtual
environment (`tools/tpu/jax_mosaic_check.py`; EMBER_JAX_PYTHON, which
`make test` sets)."""

import importlib.util
import json
import os
import subprocess

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember.experimental import pallas as pl
from ember.experimental.pallas import tpu as pltpu

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
JAX_PYTHON = os.environ.get("EMBER_JAX_PYTHON", "")


def _bf16_matmul(x, y):
    f32 = np.float32
    return np.asarray(jnp.asarray(x.astype(f32) @ y.astype(f32)).astype(jnp.bfloat16)
                      .astype(jnp.float32))


# Programs JAX 0.10.2's TPU interpret mode cannot check, with their values:
# it has no semaphore_read on the CPU (the kernel adds the count it read,
# 2), and it fails on a vmapped kernel with dimension_semantics (its grid
# grows, the semantics do not).
_JAX_INTERPRET_GAPS = {
    "regular_semaphore": (lambda x: x + 2, 1e-6),
    # (Under the tool's force_tpu_interpret_mode JAX gives NaN for the
    # ring's remote DMAs; JAX's pltpu.InterpretParams() run of the same
    # program gives the sum, which is checked.)
    "ring_all_reduce": (lambda x: np.tile(x.reshape(4, 8, 128).sum(0), (4, 1)), 1e-5),
    "vmap_matmul_bf16": (lambda x, ys: np.stack([_bf16_matmul(x, y) for y in ys]), 1e-2),
    # (No prng_random_bits in JAX's interpret mode on the CPU; the kernel's
    # output is its input whatever the bits.)
    "hardware_prng": (lambda x: x, 0),
    # (No remote copies between cores in JAX's interpret mode on the CPU;
    # with one core the kernel's exchange is with itself.)
    "kernel_exchange": (lambda x: x * 2, 0),
}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _programs():
    return _load("test/data/tpu/kernels.py", "tpu_kernels").programs(jax, jnp, pl, pltpu)


@pytest.mark.skipif(not (JAX_PYTHON and os.path.exists(JAX_PYTHON)),
                    reason="no JAX Python for the Mosaic cross-check (set EMBER_JAX_PYTHON; "
                    "make test does)")
def test_kernels_match_jax_and_verify_under_mosaic(tmp_path, devices8):
    rec = _load("tools/tpu/ember_record.py", "ember_record")
    for name, fn, args in _programs():
        r = rec.record(fn, args)
        r["name"] = name
        (tmp_path / f"{name}.json").write_text(json.dumps(r))
    run = subprocess.run([JAX_PYTHON, os.path.join(ROOT, "tools/tpu/jax_mosaic_check.py"),
                          str(tmp_path)], capture_output=True, text=True, timeout=600)
    results = {}
    for line in run.stdout.splitlines():
        if line.startswith("OK "):
            results[line[3:].strip()] = "OK"
        elif line.startswith("FAIL "):
            results[line[5:].split(":", 1)[0]] = line
    names = [n for n, _, _ in _programs()]
    assert set(results) == set(names), run.stdout + run.stderr
    for n in names:
        assert results[n] == "OK", results[n]


@pytest.mark.skipif(not (JAX_PYTHON and os.path.exists(JAX_PYTHON)),
                    reason="no JAX Python for JAX's interpret-mode results (set "
                    "EMBER_JAX_PYTHON; make test does)")
def test_kernels_compute_what_jax_interprets(tmp_path, devices8):
    # Ember's interpreter (the CPU program the kernels also compile to)
    # against JAX 0.10.2's TPU interpret mode, program by program.
    npz = tmp_path / "values.npz"
    subprocess.run([JAX_PYTHON, os.path.join(ROOT, "tools/tpu/jax_mosaic_check.py"),
                    "--values", str(npz)], check=True, capture_output=True, timeout=600)
    want = np.load(npz)
    for name, fn, args in _programs():
        got = jax.tree_util.tree_leaves(fn(*args))
        if name in _JAX_INTERPRET_GAPS:
            ref, tol = _JAX_INTERPRET_GAPS[name]
            g = got[0].astype(jnp.float32) if got[0].dtype == jnp.bfloat16 else got[0]
            np.testing.assert_allclose(np.asarray(g), ref(*[
                np.asarray(a.astype(jnp.float32) if a.dtype == jnp.bfloat16 else a)
                for a in args]), rtol=tol, atol=tol, err_msg=name)
            continue
        assert f"{name}/0" in want, name
        for k, g in enumerate(got):
            g = np.asarray(g.astype(jnp.float32) if g.dtype == jnp.bfloat16 else g)
            w = want[f"{name}/{k}"]
            tol = 1e-2 if "bf16" in name or name == "two_outputs" else 1e-5
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{name} output {k}")


def test_custom_call_form():
    name, fn, args = _programs()[0]
    text = jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",)).as_text("stablehlo")
    assert '"stablehlo.custom_call"' in text
    assert 'call_target_name = "tpu_custom_call"' in text
    assert "kernel_name = " in text and "kernel_metadata" in text
    mosaic = jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert "ember_tpu.vector_store" in mosaic and "window_params" in mosaic


def test_interpreter_unchanged():
    # The kernels still run on the CPU (the interpreter is now a function of
    # its own that the TPU target replaces).
    x = jnp.arange(16 * 128, dtype=jnp.float32).reshape(16, 128) / 1000

    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2 + jnp.exp(x_ref[...])

    f = pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct((16, 128), jnp.float32), grid=(2,),
                       in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                       out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)))
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(x) * 2 + np.exp(np.asarray(x)),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), np.asarray(f(x)), rtol=1e-6)
    g = jax.grad(lambda x: jnp.sum(jnp.sin(x)))(x)
    assert g.shape == x.shape


def _hbm_dma_kernel(x):
    """Twice the first 8 rows of `x`, which stays in HBM: the kernel copies
    them to VMEM itself (no grid, no windows)."""
    def k(x_hbm, o_ref, buf, sem):
        c = pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8)], buf, sem)
        c.start()
        c.wait()
        o_ref[...] = buf[...] * 2

    return pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
                          scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32),
                                          pltpu.SemaphoreType.DMA])(x)


def test_kernel_on_the_differentiated_path_is_an_error_for_tpu():
    # (A custom_vjp whose fwd and bwd call kernels lowers: the program
    # grad_custom_vjp_kernels of test/data/tpu/kernels.py.)
    def double(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    k = pl.pallas_call(double, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32))
    x = jnp.ones((8, 128), jnp.float32)
    g = jax.grad(lambda x: jnp.sum(k(x) ** 2))
    np.testing.assert_allclose(np.asarray(g(x)), 8.0)  # the CPU differentiates the interpreter
    with pytest.raises(NotImplementedError, match=r"a pallas_call on the differentiated path "
                       r"has no derivative rule(.|\n)*test_tpu_target\.py"):
        jax.jit(g).trace(x).lower(lowering_platforms=("tpu",)).as_text("stablehlo")


def test_dma_kernel_lowers_and_unsupported_kernels_raise():
    f = _hbm_dma_kernel
    x = jnp.ones((16, 128), jnp.float32)
    np.testing.assert_allclose(np.asarray(f(x)), 2.0)  # interprets on the CPU
    low = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",))
    mosaic = low.as_text("mosaic")
    assert "ember_tpu.enqueue_dma" in mosaic and "ember_tpu.wait_dma2" in mosaic
    assert "tpu_custom_call" in low.as_text("stablehlo")
    with pytest.raises(NotImplementedError, match="running on a TPU is not supported"):
        low.compile()

    def direct(x_hbm, o_ref):
        o_ref[...] = x_hbm[pl.ds(0, 8), :] + 1  # HBM is only reached by DMAs

    g = pl.pallas_call(direct, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                       in_specs=[pl.BlockSpec(memory_space=pl.ANY)])
    np.testing.assert_allclose(np.asarray(g(x)), 2.0)
    with pytest.raises(NotImplementedError,
                       match=r"test_tpu_target\.py.*reads or writes a buffer in HBM"):
        jax.jit(g).trace(x).lower(lowering_platforms=("tpu",)).as_text("stablehlo")

    def regular(x_ref, o_ref, sem):
        o_ref[...] = x_ref[...]

    h = pl.pallas_call(regular, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                       scratch_shapes=[pltpu.SemaphoreType.BARRIER])
    with pytest.raises(NotImplementedError, match="barrier semaphores are not supported"):
        jax.jit(h).trace(x[:8]).lower(lowering_platforms=("tpu",)).as_text("stablehlo")


def test_layouts_shown_and_wide_vectors_rejected(x64):
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    def f(x):
        return pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    x = jnp.ones((16, 128), jnp.bfloat16)
    mosaic = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    # bf16 in 8-row tiles at offset 0, as Mosaic lays them out on a v5e.
    assert "#ember_tpu.layout<16, {0, 0}, (8, 128)>" in mosaic
    stablehlo = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text("stablehlo")
    assert "tpu_custom_call" in stablehlo
    x = jnp.ones((8, 128), jnp.float64)
    np.testing.assert_allclose(np.asarray(f(x)), 2.0)  # fine on the CPU
    with pytest.raises(NotImplementedError, match=r"test_tpu_target\.py.*layout_c3: TPU vector "
                                                  r"registers hold elements of at most 32 bits"):
        jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text("stablehlo")


def test_vmap_of_kernels_for_tpu():
    # vmap batches the kernel as JAX does (the cross-check above compares the
    # grids and windows with JAX's); what JAX batches otherwise is an error
    # when lowering for TPU only, the CPU still interprets it.
    kern = _load("test/data/tpu/kernels.py", "tpu_kernels")
    progs = {n: (f, a) for n, f, a in kern.programs(jax, jnp, pl, pltpu)}
    f, (x, y) = progs["vmap_add_exp"]
    mosaic = jax.jit(f).trace(x, y).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert "iteration_bounds = array<i64: 3, 2>" in mosaic
    assert "dimension_semantics<parallel>, #ember_tpu.dimension_semantics<arbitrary>" in mosaic
    assert "memref<1x8x128xf32" in mosaic and "ember_tpu.memref_squeeze" in mosaic
    # The CPU program under vmap is the same as before (values).
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x, y)),
                               np.asarray(x) + np.exp(np.asarray(y)) * 2, rtol=1e-6)

    # Batched prefetched indices: a counted loop over the examples calling
    # the unbatched kernel (JAX's explicit loop), on the CPU and for TPU.
    f, (idxs, data) = progs["vmap_batched_prefetch"]
    gather = progs["scalar_prefetch"][0]
    text = jax.jit(f).trace(idxs, data).lower(lowering_platforms=("tpu",)).as_text("stablehlo")
    assert text.count('"tpu_custom_call"') == 1 and "stablehlo.while" in text
    want = [np.asarray(gather(i, d)) for i, d in zip(idxs, data)]
    np.testing.assert_allclose(np.asarray(f(idxs, data)), np.stack(want), rtol=1e-6)
    # A batch of one keeps the batched grid: the indices lose their batch.
    one = jax.jit(f).trace(idxs[:1], data[:1]).lower(lowering_platforms=("tpu",)).as_text(
        "mosaic")
    assert "iteration_bounds = array<i64: 1, 5>" in one
    np.testing.assert_allclose(np.asarray(f(idxs[:1], data[:1])), want[0][None], rtol=1e-6)
    # An unbatched operand aliased to the output is broadcast first.
    f, (x, y) = progs["vmap_unbatched_alias"]
    mosaic = jax.jit(f).trace(x, y).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert "iteration_bounds = array<i64: 3>" in mosaic
    np.testing.assert_allclose(np.asarray(f(x, y)), np.asarray(y) + np.asarray(x) * 2,
                               rtol=1e-6)

    add_exp = progs["add_exp"][0]
    with pytest.raises(NotImplementedError, match="on the differentiated path"):
        jax.jit(jax.grad(lambda x: jnp.sum(add_exp(x, x)))).trace(x[0]).lower(
            lowering_platforms=("tpu",)).as_text("stablehlo")


def test_vmap_of_a_kernel_reading_hbm():
    # The kernel copies its input from HBM itself (no windows): batching it
    # would need its DMAs rewritten, so lowering for TPU says so; the CPU
    # interprets it.
    f = _hbm_dma_kernel
    xs = jnp.arange(2 * 16 * 128, dtype=jnp.float32).reshape(2, 16, 128)
    np.testing.assert_allclose(np.asarray(jax.vmap(f)(xs)), np.asarray(xs)[:, :8] * 2)
    with pytest.raises(NotImplementedError, match=r"stays in HBM \(memory space ANY\)"):
        jax.jit(jax.vmap(f)).trace(xs).lower(lowering_platforms=("tpu",)).as_text("stablehlo")


def test_kernel_under_shard_map_for_tpu(devices8):
    # A kernel under shard_map: a manual computation over the 4 devices
    # calling it once per device, its metadata naming the mesh axes (JAX's
    # text), the device's index from ember_tpu.device_id.
    progs = {n: (f, a) for n, f, a in _programs()}
    f, args = progs["shard_map_kernel"]
    text = jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",)).as_text("stablehlo")
    assert '"sdy.manual_computation"' in text and "mhlo.num_partitions = 4" in text
    assert 'kernel_metadata = "{\\0A\\22mesh_axes\\22:\\22[\\5C\\22x\\5C\\22]\\22\\0A}"' in text
    mosaic = jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert "ember_tpu.device_id : i32" in mosaic
    x, w = (np.asarray(a) for a in args)
    want = np.tanh(x) * np.tile(w, (8, 1)) + np.repeat(np.arange(4.0), 16)[:, None]
    np.testing.assert_allclose(np.asarray(f(*args)), want, rtol=1e-5, atol=1e-6)


def test_roll_and_concatenate_lower_to_mosaic_ops():
    # pltpu.roll is Mosaic's dynamic_rotate and jnp.concatenate its
    # concatenate, as JAX lowers them: on a real TPU (43rd session) Mosaic
    # rejected the vector.insert_strided_slice they used to become.
    def k(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = (pltpu.roll(x, 3, 1) + pltpu.roll(x, 1, 1, stride=2, stride_axis=0)
                      + jnp.concatenate([x[8:], x[:8]], axis=0))

    x = jnp.arange(16 * 128, dtype=jnp.float32).reshape(16, 128) / 100
    f = pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))
    mosaic = jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert mosaic.count("ember_tpu.dynamic_rotate") == 2
    assert "stride = 2 : si32, stride_dimension = 0 : si32" in mosaic
    assert "ember_tpu.concatenate" in mosaic and "insert_strided_slice" not in mosaic
    xn = np.asarray(x)
    strided = np.stack([np.roll(xn[i], 1 + 2 * i) for i in range(16)])
    want = np.roll(xn, 3, 1) + strided + np.roll(xn, 8, 0)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x)), want, rtol=1e-6)


def test_tpu_records_for_the_tpu_run(tmp_path):
    # `make tpu-records` writes what `make tpu-check` runs on a TPU: Ember's
    # module, its CPU outputs and the arguments (dtypes kept), and the
    # benchmark programs' modules.
    import subprocess
    import sys

    run = subprocess.run([sys.executable, os.path.join(ROOT, "tools/tpu/ember_record.py"),
                          "--values", "--bench", "--whole", str(tmp_path), "matmul_bf16",
                          "bench_add_exp"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    rec = json.loads((tmp_path / "matmul_bf16.json").read_text())
    assert rec["arg_dtypes"] == ["bfloat16", "bfloat16"] and len(rec["custom_calls"]) == 1
    with np.load(tmp_path / "matmul_bf16.args.npz") as z:
        a = z["arr_0"].view(jnp.bfloat16)
    progs = {n: (f, args) for n, f, args in _programs()}
    np.testing.assert_array_equal(a.astype(np.float32),
                                  np.asarray(progs["matmul_bf16"][1][0]).astype(np.float32))
    assert (tmp_path / "matmul_bf16.values.npz").exists()
    bench = json.loads((tmp_path / "bench_add_exp.json").read_text())
    assert "tpu_custom_call" in bench["stablehlo"] and "8192x1024xf32" in bench["stablehlo"]
    assert not (tmp_path / "bench_add_exp.values.npz").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "bench_add_exp.json", "matmul_bf16.args.npz", "matmul_bf16.json",
        "matmul_bf16.values.npz", "whole"]
    # Whole programs exported for TPU: decompositions as XLA:TPU's calls
    # (svd from a polar decomposition and an Eigh), the test's raw
    # decomposition programs left to tpu_decompositions (unique vectors).
    whole = tmp_path / "whole"
    text = (whole / "tpu_decompositions.mlir").read_text()
    assert 'call_target_name = "Qr"' in text and "lapack" not in text
    assert 'call_target_name = "Eigh"' in text and "gesdd" not in text
    assert not any(whole.glob("decompositions.*")) and not any(whole.glob("*.skip"))
    assert (whole / "mlp_step.in.npz").exists() and (whole / "mlp_step.values.npz").exists()
    # Algorithm presets as StableHLO's dot algorithms (run on a v5e).
    text = (whole / "precision_presets.mlir").read_text()
    assert text.count("lhs_precision_type = bf16") == 3 and "num_primitive_operations = 3" in text


def test_strided_windows_and_masked_stores_lower_to_mosaic_ops():
    # JAX's forms: a strided ref read is Mosaic's strided_load, a strided
    # write strided_store, pltpu.store with a mask a masked vector_store
    # (programs ops_strided and ops_masked_store are also cross-checked
    # against JAX above).
    progs = {n: (f, a) for n, f, a in _programs()}
    f, args = progs["ops_strided"]
    text = jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert text.count("ember_tpu.strided_load") == 2, text
    assert "ember_tpu.strided_store" in text and "gather" not in text, text
    f, args = progs["ops_masked_store"]
    text = jax.jit(f).trace(*args).lower(lowering_platforms=("tpu",)).as_text("mosaic")
    assert "masked" in text and text.count("ember_tpu.vector_store") == 2, text
    x = jnp.ones((16, 128), jnp.float32)

    def lower(kernel, out=(16, 128), **kw):
        f = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(out, jnp.float32), **kw)
        return jax.jit(f).trace(x).lower(lowering_platforms=("tpu",)).as_text("mosaic")

    # A masked strided store: Mosaic's strided_store has no mask.
    def masked_strided(x_ref, o_ref):
        pltpu.store(o_ref.at[pl.ds(0, 8, stride=2)], x_ref[pl.ds(0, 8)],
                    mask=x_ref[pl.ds(0, 8)] > 0)

    with pytest.raises(NotImplementedError, match=r"a masked store of a strided window "
                                                  r"\(at .*test_tpu_target\.py:\d+\)"):
        lower(masked_strided)

    # A strided read of SMEM scratch: kernels reach SMEM element by element.
    def smem_strided(x_ref, o_ref, s_ref):
        s_ref[0] = jnp.int32(1)
        o_ref[...] = x_ref[...] + s_ref[pl.ds(0, 4, stride=2)].sum().astype(jnp.float32)

    with pytest.raises(NotImplementedError, match="SMEM buffer by strided or masked windows"):
        lower(smem_strided, scratch_shapes=[pltpu.SMEM((8,), jnp.int32)])

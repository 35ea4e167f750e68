"""Writes Ember's TPU lowering of every program of `test/data/tpu/kernels.py`
as `DIR/NAME.json` (`{"name", "custom_calls": [{"backend_config",
"kernel_name"}], "stablehlo"}`), the input of `jax_mosaic_check.py`:

    .venv/bin/python tools/tpu/ember_record.py [--values] [--bench] [--whole] DIR [NAME...]

`--values` also writes Ember's outputs of each program on the CPU
(`DIR/NAME.values.npz`, arr_0, ...), and `--bench` records the benchmark
programs (`benchmarks()` of the same file) too; `--whole` writes whole
programs without kernels (the StableHLO-out programs of
`test/python/test_stablehlo.py`) exported for TPU, as `DIR/whole/NAME.mlir`
with their inputs (`NAME.in.npz`) and Ember's CPU outputs
(`NAME.values.npz`): the input of `tpu_run.py`, which runs them on a TPU
(`make tpu-records`, then `make tpu-check` there).
"""

import argparse
import importlib.util
import json
import os

import numpy as np

os.environ.setdefault("EMBER_NUM_CPU_DEVICES", "8")  # the programs under shard_map

import ember as jax  # noqa: E402
from ember._mlir import ir  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def _load(relpath, name):
    """The module at `relpath` (from the repository's root)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relpath))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def programs():
    """[(name, fn, args)] of test/data/tpu/kernels.py under Ember (loaded
    by the TPU example, which runs some of them)."""
    example = _load("examples/pallas_tpu_kernels.py", "pallas_tpu_kernels")
    return [(name, f, args) for name, (f, args) in example.cross_check_programs().items()]


def benchmarks():
    """[(name, fn, make_args, flops)] of test/data/tpu/kernels.py's benchmarks under Ember."""
    import ember.numpy as jnp
    from ember.experimental import pallas as pl
    from ember.experimental.pallas import tpu as pltpu

    return _load("test/data/tpu/kernels.py", "tpu_kernels").benchmarks(jax, jnp, pl, pltpu)


def record(fn, args):
    lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",))
    text = lowered.as_text("stablehlo")
    calls = []
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True

    def walk(op):
        # (Calls inside loops too: a vmap over prefetched indices loops.)
        if op.name == "stablehlo.custom_call":
            a = op.attributes
            calls.append({"backend_config": ir.StringAttr(a["backend_config"]).value,
                          "kernel_name": ir.StringAttr(a["kernel_name"]).value})
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    walk(child.operation)

    with ctx:
        module = ir.Module.parse(text)
        walk(module.operation)
    return {"custom_calls": calls, "stablehlo": text}


def whole_programs(out):
    """Writes the StableHLO-out programs exported for TPU to `out` (see the
    module's doc); returns their names."""
    from ember import export

    mod = _load("test/python/test_stablehlo.py", "stablehlo_programs")
    os.makedirs(out, exist_ok=True)
    # The decompositions, real and complex, are run in `tpu_decompositions`
    # below, their vectors made unique first (XLA:TPU's and LAPACK's differ
    # by a sign or phase per vector).
    names, programs = [], {k: v for k, v in mod.PROGRAMS.items()
                           if k not in ("decompositions", "complex_decompositions")}
    lin, jnp = jax.numpy.linalg, jax.numpy

    def eigh(x):
        # Eigenvectors are unique up to a sign (a phase): each column scaled
        # so that its first component is real and positive.
        w, v = lin.eigh(x)
        first = v[..., :1, :]
        return w, v * (jnp.conj(first) / jnp.abs(first))

    def svd(x, full_matrices=True):
        # (u, s, vh), each pair of singular vectors scaled by one phase so
        # that u's column starts real and positive (vh's row by its inverse).
        u, s, vh = lin.svd(x, full_matrices=full_matrices)
        k = s.shape[-1]
        first = u[..., :1, :k]
        phase = jnp.conj(first) / jnp.abs(first)
        u = jnp.concatenate([u[..., :k] * phase, u[..., k:]], axis=-1)
        vh = jnp.concatenate([vh[..., :k, :] * jnp.swapaxes(jnp.conj(phase), -1, -2),
                              vh[..., k:, :]], axis=-2)
        return u, s, vh

    programs["tpu_decompositions"] = (
        lambda a, t, b, c: [*jax.lax.linalg.lu(a), *jax.lax.linalg.lu(t), *eigh(a),
                            *lin.qr(t), *lin.qr(t, mode="complete"), *lin.qr(b),
                            *eigh(c @ jnp.conj(c.T)), *lin.qr(c), lin.cholesky(a),
                            lin.svd(t, compute_uv=False), *svd(t, full_matrices=False),
                            *svd(a), *svd(b, full_matrices=False), *svd(c, full_matrices=False)],
        mod.PROGRAMS["decompositions"][1] + (mod.C64,))
    # Products at HIGHEST precision (`precision=`, and the products `grad`
    # and `vmap` make of them): f32 on the TPU too, so within the tight
    # tolerance (XLA:TPU's default, one bf16 pass, is 1e-2 off).
    hi = "highest"
    programs["precision_highest"] = (
        lambda a, b, c: [jnp.dot(a, b, precision=hi),
                         jax.grad(lambda x: jnp.sum(jnp.tanh(jnp.dot(x, b, precision=hi))))(a),
                         jax.vmap(lambda r: jnp.matmul(r, b, precision=hi))(c),
                         jnp.einsum("ij,jk->ik", a, b, precision=hi)],
        (mod.RNG.normal(size=(64, 96)).astype(np.float32),
         mod.RNG.normal(size=(96, 32)).astype(np.float32),
         mod.RNG.normal(size=(5, 7, 96)).astype(np.float32)))
    # Products with JAX's algorithm presets (`precision=`), written as the
    # product's StableHLO `algorithm`: BF16_BF16_F32_X3 and _X6 (three and
    # six bf16 passes) are within the f32 tolerance on the TPU, whose
    # XLA rejects F32_F32_F32 on a v5e (JAX's too); the CPU computes them in
    # f32.
    programs["precision_presets"] = (
        lambda a, b: [jnp.dot(a, b, precision="BF16_BF16_F32_X3"),
                      jnp.dot(a, b, precision=jax.lax.DotAlgorithmPreset.BF16_BF16_F32_X6),
                      jax.grad(lambda x: jnp.sum(jnp.tanh(
                          jnp.dot(x, b, precision="BF16_BF16_F32_X6"))))(a)],
        (mod.RNG.normal(size=(64, 96)).astype(np.float32),
         mod.RNG.normal(size=(96, 32)).astype(np.float32)))
    # One module for the CPU and the TPU (JAX's multi-platform module): a
    # Pallas kernel and decompositions, each a case on the platform index
    # (its TPU form a Mosaic kernel, XLA:TPU's), run with the TPU's index.
    from ember.experimental import pallas as pl

    def scaled_exp(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + 2 * jnp.exp(y_ref[...])

    def multi_platform(x, y, a):
        block = pl.BlockSpec((8, 128), lambda i: (i, 0))
        z = pl.pallas_call(scaled_exp, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                           grid=(x.shape[0] // 8,), in_specs=[block, block],
                           out_specs=block)(x, y)
        return [z, *eigh(a), *jax.lax.linalg.lu(a)]

    multi = {"multi_platform": (multi_platform, (
        mod.RNG.normal(size=(16, 128)).astype(np.float32),
        mod.RNG.normal(size=(16, 128)).astype(np.float32),
        mod.PROGRAMS["decompositions"][1][0]))}
    for name, (fn, args) in {**programs, **multi}.items():
        specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), args)
        platforms = ["cpu", "tpu"] if name in multi else ["tpu"]
        try:
            text = export.export(jax.jit(fn), platforms=platforms)(*specs).mlir_module()
        except NotImplementedError as e:  # (reported by the TPU run)
            with open(os.path.join(out, f"{name}.skip"), "w") as f:
                f.write(str(e).splitlines()[0])
            continue
        with open(os.path.join(out, f"{name}.mlir"), "w") as f:
            f.write(text)
        index = [np.int32(platforms.index("tpu"))] if len(platforms) > 1 else []
        np.savez(os.path.join(out, f"{name}.in.npz"), *index, *jax.tree_util.tree_leaves(args))
        np.savez(os.path.join(out, f"{name}.values.npz"),
                 *[np.asarray(x) for x in jax.tree_util.tree_leaves(jax.jit(fn)(*args))])
        names.append(name)
    return names


def main():
    ap = argparse.ArgumentParser(description="Ember's TPU lowering of the Pallas TPU programs.")
    ap.add_argument("--values", action="store_true", help="also write Ember's CPU outputs")
    ap.add_argument("--bench", action="store_true", help="also record the benchmark programs")
    ap.add_argument("--whole", action="store_true",
                    help="also write whole programs exported for TPU to OUT/whole")
    ap.add_argument("out")
    ap.add_argument("only", nargs="*")
    opts = ap.parse_args()
    os.makedirs(opts.out, exist_ok=True)
    todo = [(name, fn, lambda args=args: args, True) for name, fn, args in programs()]
    if opts.bench:
        todo += [(name, fn, make_args, False) for name, fn, make_args, _ in benchmarks()]
    for name, fn, make_args, small in todo:
        if opts.only and name not in opts.only:
            continue
        args = make_args()
        rec = record(fn, args)
        rec["name"] = name
        if opts.values and small:
            outs = [np.asarray(x) for x in jax.tree.leaves(fn(*args))]
            np.savez(os.path.join(opts.out, f"{name}.values.npz"), *outs)
            # The arguments too, with their dtypes (bfloat16 is saved as raw
            # bytes): the TPU run uses these, not its own, so that both sides
            # compute on the same bits.
            flat = [np.asarray(a) for a in args]
            np.savez(os.path.join(opts.out, f"{name}.args.npz"), *flat)
            rec["arg_dtypes"] = [a.dtype.name for a in flat]
        with open(os.path.join(opts.out, f"{name}.json"), "w") as f:
            json.dump(rec, f)
        print("wrote", name, flush=True)
    if opts.whole:
        for name in whole_programs(os.path.join(opts.out, "whole")):
            print("wrote whole program", name, flush=True)


if __name__ == "__main__":
    main()

"""Records programs exported by JAX as StableHLO for Ember's import tests
(`test/python/test_stablehlo_in.py`); run it with a Python that has JAX:

    build/jaxvenv/bin/python tools/stablehlo/record_jax_exports.py \\
        ../shared/conformance test/data/stablehlo

For each program, writes NAME.mlir.gz (`jax.export` of `jax.jit(f)`, its
`mlir_module()` in MLIR's generic form without locations) and NAME.npz
(`in_K`: the arguments, `out_K`: JAX's results). The programs are the
conformance cases that JAX runs without an exception (traced under `jit`,
so their inputs are constants) and the programs with arguments below; the
`mp_` programs are exported for several platforms (`platforms` in their
NAME.npz; their modules take JAX's platform index first); the
`sym_` programs are exported with symbolic dimensions (`jax.export`'s shape
polymorphism) and run for two sizes (`in_K`/`out_K` and `bin_K`/`bout_K`),
one of them for several platforms too.
"""

import gzip
import importlib.util
import os
import sys

import numpy as np


def programs(jax, jnp):
    lax = jax.lax
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    w = rng.normal(size=(6, 3)).astype(np.float32)
    i = rng.integers(-9, 9, size=(4, 6)).astype(np.int32)
    params = [(rng.normal(size=(8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32)),
              (rng.normal(size=(16, 4)).astype(np.float32) * 0.3, np.zeros(4, np.float32))]
    bx = rng.normal(size=(32, 8)).astype(np.float32)
    by = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=32)]

    def loss(p, xb, yb):
        h = jnp.tanh(xb @ p[0][0] + p[0][1])
        logits = h @ p[1][0] + p[1][1]
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * yb, axis=-1))

    def step(p, xb, yb):
        val, g = jax.value_and_grad(loss)(p, xb, yb)
        return val, jax.tree.map(lambda a, b: a - 0.1 * b, p, g)

    return {
        "args_elementwise": (lambda a, b: (jnp.sin(a) * jnp.exp(-a * a) + jnp.tanh(a) / 3,
                                           jnp.where(a > 0, jnp.sqrt(jnp.abs(a)), a ** 2),
                                           jnp.maximum(a, 0.1) - jnp.clip(a, -1, 1),
                                           jax.nn.gelu(a), jax.scipy.special.erf(a),
                                           jnp.logaddexp(a, b)), (x, x[::-1].copy())),
        "args_matmul_reduce": (lambda a, b: (a @ b, jnp.sum(a, 0), jnp.max(a, 1),
                                             jnp.argmax(a, 1), jnp.argmin(a, 0),
                                             jnp.mean(a @ b), jnp.cumsum(a, 1),
                                             jax.nn.softmax(a @ b)), (x, w)),
        "args_indexing": (lambda a, k: (a[k[0, 0] % 4], a[:, 1:5:2], a[k % 4, k % 6],
                                        a.at[k % 4, 2].add(1.0), jnp.take(a, k[0] * 2, axis=1),
                                        jnp.sort(a, 1), jnp.argsort(a[0]),
                                        lax.dynamic_slice(a, (k[0, 1], 2), (2, 3))), (x, i)),
        "args_control_flow": (lambda a, k: (lax.fori_loop(0, 4, lambda j, c: c * 0.5 + j, a),
                                            lax.cond(k[0, 0] > 0, jnp.sin, jnp.cos, a),
                                            lax.scan(lambda c, r: (c + r, c * r), a[0], a)[1],
                                            lax.while_loop(lambda c: c[0] < 20,
                                                           lambda c: (c[0] + 3, c[1] * 1.5),
                                                           (k[0, 0], a[0]))[1],
                                            lax.switch(k[1, 1] % 3,
                                                       [jnp.sin, jnp.cos, jnp.tanh], a)), (x, i)),
        "args_integers": (lambda k: (k // 3, k % 5, k << 2, k >> 1, k & 7, k | 8, k ^ 5,
                                     lax.population_count(k), jnp.abs(k), -k,
                                     k.astype(jnp.float32) / 2, (k > 0).astype(jnp.uint8)), (i,)),
        "args_random": (lambda key: (jax.random.normal(jax.random.wrap_key_data(key), (5,)),
                                     jax.random.uniform(jax.random.wrap_key_data(key), (3, 2)),
                                     jax.random.bits(jax.random.wrap_key_data(key), (4,))),
                        (np.array([0, 7], np.uint32),)),
        "args_qr": (lambda a, b, c: (*jnp.linalg.qr(a), *jnp.linalg.qr(a, mode="complete"),
                                     *jnp.linalg.qr(b), *jnp.linalg.qr(b, mode="complete"),
                                     *jnp.linalg.qr(c)),
                    (rng.normal(size=(5, 3)).astype(np.float32),
                     rng.normal(size=(3, 5)).astype(np.float32),
                     rng.normal(size=(2, 4, 3)).astype(np.float32))),
        "args_mlp_loss": (loss, (params, bx, by)),
        "args_mlp_step": (step, (params, bx, by)),
    }


def symbolic_programs(jax, jnp):
    """name -> (f, the arguments' symbolic shapes, arguments of two sizes)."""
    lax = jax.lax
    rng = np.random.default_rng(4)

    def f32(*shape):
        return rng.normal(size=shape).astype(np.float32)

    params = [(f32(8, 16) * 0.3, np.zeros(16, np.float32)), (f32(16, 4) * 0.3,
                                                              np.zeros(4, np.float32))]

    def loss(p, xb, yb):
        h = jnp.tanh(xb @ p[0][0] + p[0][1])
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(h @ p[1][0] + p[1][1]) * yb, axis=-1))

    def onehot(n):
        return np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=n)]

    return {
        "sym_mlp_step": (jax.value_and_grad(loss), (None, "b, 8", "b, 4"),
                         [(params, f32(1, 8), onehot(1)), (params, f32(7, 8), onehot(7))]),
        "sym_reshape": (lambda x: (x.reshape(-1, 2).sum(1), x.reshape(2, -1) * 2),
                        ("2*b",), [(f32(2),), (f32(10),)]),
        "sym_iota_slices": (lambda x: (x * jnp.arange(x.shape[0]) + x[1:].sum(),
                                       x[::-1], x[:-1] - x[1:], jnp.zeros_like(x) + 1),
                            ("b",), [(f32(1),), (f32(6),)]),
        "sym_two_variables": (lambda x, y: (jnp.concatenate([x, y])[::-1],
                                            jnp.outer(x, y).sum(0) / x.shape[0]),
                              ("b", "n"), [(f32(2), f32(3)), (f32(5), f32(1))]),
        "sym_reductions": (lambda x: (jax.nn.log_softmax(x) - jnp.mean(x, axis=0),
                                      jnp.max(x, axis=0), jnp.argmax(x, axis=1),
                                      lax.cumsum(x, axis=0)),
                           ("b, 5",), [(f32(1, 5),), (f32(9, 5),)]),
        # (for several platforms: the platform index first, then the
        # dimension variables)
        "sym_mp_platform_dependent": (
            lambda x: lax.platform_dependent(x, cpu=lambda v: jnp.sin(v) + x.shape[0],
                                             tpu=lambda v: v * 3, default=lambda v: v),
            ("b, 4",), [(f32(1, 4),), (f32(6, 4),)], ("tpu", "cuda", "cpu")),
    }


def multiplatform_programs(jax, jnp):
    """{name: (function, platforms, arguments)}: exported for several
    platforms, so their modules take JAX's platform index first; the CPU
    is not the first platform of either."""
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)

    def per_platform(v):
        return jax.lax.platform_dependent(v, cpu=lambda v: jnp.sin(v) + 1,
                                          tpu=lambda v: v * 3, default=lambda v: v)

    return {
        "mp_platform_dependent": (per_platform, ("tpu", "cuda", "cpu"), (x,)),
        "mp_plain": (lambda v: (v * 2).sum(0), ("tpu", "cpu"), (x,)),
    }


def _write_gz(path, text):
    # mtime 0: the same program records to the same bytes.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as fh:
        fh.write(text.encode())


def generic(exported):
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        module = ir.Module.parse(exported.mlir_module())
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)


def main(conformance, out):
    import jax
    import jax.numpy as jnp

    os.makedirs(out, exist_ok=True)
    done = 0
    cases = os.path.join(conformance, "cases")
    for fn in sorted(os.listdir(cases)):
        if not fn.endswith(".py") or fn.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(fn[:-3], os.path.join(cases, fn))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        if getattr(mod, "EXPECT", None):
            continue
        f = jax.jit(lambda mod=mod: mod.case(jax, jnp, np))
        try:
            exp = jax.export.export(f)()
            outs = jax.tree.leaves(f())
        except Exception as e:  # noqa: BLE001 - not exportable under jit
            print(f"skip {fn[:-3]}: {type(e).__name__}")
            continue
        name = "conf_" + fn[:-3]
        _write_gz(os.path.join(out, name + ".mlir.gz"), generic(exp))
        np.savez_compressed(os.path.join(out, name + ".npz"),
                 **{f"out_{k}": np.asarray(o) for k, o in enumerate(outs)})
        done += 1
    for name, (f, args) in programs(jax, jnp).items():
        leaves = jax.tree.leaves(args)
        specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), args)
        exp = jax.export.export(jax.jit(f))(*specs)
        outs = jax.tree.leaves(jax.jit(f)(*args))
        _write_gz(os.path.join(out, name + ".mlir.gz"), generic(exp))
        arrays = {f"in_{k}": np.asarray(a) for k, a in enumerate(leaves)}
        arrays.update({f"out_{k}": np.asarray(o) for k, o in enumerate(outs)})
        np.savez_compressed(os.path.join(out, name + ".npz"), **arrays)
        done += 1
    for name, (f, platforms, args) in multiplatform_programs(jax, jnp).items():
        specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), args)
        exp = jax.export.export(jax.jit(f), platforms=platforms)(*specs)
        outs = jax.tree.leaves(jax.jit(f)(*args))
        _write_gz(os.path.join(out, name + ".mlir.gz"), generic(exp))
        arrays = {f"in_{k}": np.asarray(a) for k, a in enumerate(jax.tree.leaves(args))}
        arrays.update({f"out_{k}": np.asarray(o) for k, o in enumerate(outs)})
        np.savez_compressed(os.path.join(out, name + ".npz"), platforms=np.array(platforms),
                            **arrays)
        done += 1
    for name, (f, shapes, runs, *platforms) in symbolic_programs(jax, jnp).items():
        scope = jax.export.SymbolicScope()
        specs = []
        for spec, arg in zip(shapes, runs[0]):
            if spec is None:
                specs.append(jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), arg))
            else:
                shape = jax.export.symbolic_shape(spec, scope=scope)
                specs.append(jax.ShapeDtypeStruct(shape, arg.dtype))
        exp = jax.export.export(jax.jit(f), platforms=platforms[0] if platforms else None)(
            *specs)
        _write_gz(os.path.join(out, name + ".mlir.gz"), generic(exp))
        arrays = {"platforms": np.array(platforms[0])} if platforms else {}
        for prefix, args in zip(("", "b"), runs):
            outs = jax.tree.leaves(exp.call(*args))
            arrays.update({f"{prefix}in_{k}": np.asarray(a)
                           for k, a in enumerate(jax.tree.leaves(args))})
            arrays.update({f"{prefix}out_{k}": np.asarray(o) for k, o in enumerate(outs)})
        np.savez_compressed(os.path.join(out, name + ".npz"), **arrays)
        done += 1
    print(f"{done} programs recorded with JAX {jax.__version__}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

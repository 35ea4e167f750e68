"""The CUDA target without a GPU: every program lowers through
`ember-cuda-*` to PTX that `ptxas -arch=sm_90a` accepts.

ptxas comes from the nvidia-cuda-nvcc wheel the project's set-up installs
(`make deps`); set EMBER_REQUIRE_PTXAS=1 (as `make test` does) to fail
instead of skipping when it is missing.
"""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax, random
from ember._mlir import ir
from ember._src import compiler
from ember._src.context import context
from ember._src.targets import cuda, get_target

PTXAS = cuda.ptxas()
if PTXAS is None and os.environ.get("EMBER_REQUIRE_PTXAS"):
    raise RuntimeError("ptxas not found (pip install nvidia-cuda-nvcc; make deps does)")
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="ptxas not installed")
ROOT = pathlib.Path(__file__).resolve().parents[2]


def ptxas_check(binary_text, tmp_path, chip="sm_90a"):
    """ptxas accepts each kernel module of a `binary` stage. A program whose
    only work is runtime calls (cuBLAS products, LAPACK on host copies) has
    no kernel module."""
    if "gpu.binary @" not in binary_text:
        assert "llvm.call @ember_" in binary_text, binary_text[-3000:]
        return {}
    modules = cuda.ptx_modules(binary_text)
    for name, ptx in modules.items():
        assert f".target {chip}" in ptx and ".entry" in ptx
        src = tmp_path / f"{name}.ptx"
        src.write_text(ptx)
        r = subprocess.run([PTXAS, f"-arch={chip}", str(src), "-o", os.devnull],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{name}: {r.stderr[-3000:]}"
    return modules


def lower_cuda(f, *args):
    return ember.jit(f).trace(*args).lower(lowering_platforms=("cuda",))


x = np.linspace(-2, 2, 4096, dtype=np.float32).reshape(64, 64)
v = np.linspace(-1, 1, 64, dtype=np.float32)
wide = np.ones((16, 1024), np.float32)
long = np.random.default_rng(0).random((4, 1 << 18), dtype=np.float32)
odd = np.random.default_rng(1).standard_normal((1000, 333), dtype=np.float32)


def _weighted_sum(*xs):
    acc = xs[0]
    for i, a in enumerate(xs[1:]):
        acc = acc + a * float(i + 2)
    return acc


def mlp_loss(params, xb, yb):
    h = xb
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return jnp.mean((h @ w + b - yb) ** 2)


def _params():
    k = np.random.default_rng(0)
    return [(k.normal(size=(64, 64)).astype(np.float32), np.zeros(64, np.float32))
            for _ in range(3)]


def _scan_rnn(h, xs):
    def step(h, xt):
        h = jnp.tanh(h * 0.5 + xt)
        return h, h.sum()
    return lax.scan(step, h, xs)


def _scan_rnn_grad(w, xs):
    # Counters, the scan index as a residual (also reversed), dynamic
    # slices at host-computed offsets.
    def loss(w):
        def step(h, xt):
            h = jnp.tanh(h @ w + xt)
            return h, h.sum()
        h, ys = lax.scan(step, jnp.zeros(w.shape[0], w.dtype), xs)
        _, zs = lax.scan(step, h, xs, reverse=True)
        return ys.sum() + (zs * jnp.arange(zs.shape[0])).sum()
    return ember.grad(loss)(w)


def _while(n):
    return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.5), (0, 1.0))


def _while_grad(w, n):
    # Reverse mode through a run-time trip count: run-time stacks.
    return ember.grad(lambda w: lax.while_loop(
        lambda c: c[0] < n, lambda c: (c[0] + 1, jnp.tanh(c[1] @ w)), (0, w))[1].sum())(w)


PROGRAMS = {
    "elementwise": (lambda a: jnp.tanh(a) * 2.0 + jnp.exp(-a), (x,)),
    # Four points a thread; the last block's points guarded (333000 is not
    # a multiple of 1024).
    "long_elementwise": (lambda a: jnp.tanh(a) * 2.0 + jnp.exp(-a), (odd,)),
    "f64_math": (lambda a: jnp.sin(a) + jnp.log1p(a * a), (x.astype(np.float64),)),
    # (x + 0.5: x's values cancel in its sum, which is then rounding noise
    # that differs between the GPU's tree and the CPU's order.)
    "reductions": (lambda a: (a.sum(), a.max(axis=0), jnp.argmax(a, axis=1), a.mean(1)),
                   (x + 0.5,)),
    # Few outputs over many elements: each output's elements split over
    # many blocks, partial results combined by a second kernel.
    "long_reductions": (lambda a: (a.sum(), a.max(), jnp.min(a, axis=1),
                                   (a * 100).astype(jnp.int32).sum(axis=1)), (long,)),
    # One fused kernel reading 70 buffers: 5.4 KB of parameters, more than
    # PTX before 8.1 allows (the H200 refused such kernels).
    "many_operands": (_weighted_sum, tuple(np.full((2, 3, 4), i, np.float32)
                                           for i in range(70))),
    "matmul": (lambda a, b: a @ b, (x, x)),
    "bf16": (lambda a: (a.astype(jnp.bfloat16) * 3).astype(jnp.float32), (x,)),
    # Integer powers (math.ipowi, a function outlined into the kernel).
    "int_power": (lambda a, b: (a ** b, a ** 3),
                  (np.arange(-3, 5, dtype=np.int32), np.arange(8, dtype=np.int32) % 4)),
    "ints_bool": (lambda a: ((a.astype(jnp.int32) * 7) % 5 > 2).sum(), (x,)),
    "grad_mlp": (ember.grad(mlp_loss), (_params(), x, x)),
    "per_example_grads": (ember.vmap(ember.grad(lambda w, xi: jnp.tanh(xi @ w).sum()),
                                     in_axes=(None, 0)), (x, x)),
    "scan_rnn": (_scan_rnn, (v, x)),
    "scan_rnn_grad": (_scan_rnn_grad, (x * 0.02, x[:16])),
    "while": (_while, (np.int32(10),)),
    "cond": (lambda p, a: lax.cond(p > 0, jnp.sin, jnp.cos, a), (np.float32(1), x)),
    "random": (lambda k: random.normal(k, (128,)), (random.PRNGKey(0),)),
    "gather_scatter": (lambda a, i: a[i].at[0].add(1.0), (x, np.array([3, 1, 2], np.int32))),
    "cumsum_sort": (lambda a: (jnp.cumsum(a, axis=0), jnp.sort(a[0])), (x,)),
    # A host callback between kernels, and a bf16 product into f32 (cuBLAS).
    "callback_bf16_dot": (lambda a: jnp.dot(
        ember.pure_callback(np.cos, ember.ShapeDtypeStruct(a.shape, a.dtype), jnp.tanh(a))
        .astype(jnp.bfloat16), a.astype(jnp.bfloat16), preferred_element_type=jnp.float32),
        (x,)),
    # LAPACK on host copies of device buffers, between kernels.
    "linalg": (lambda a: jnp.linalg.solve(a @ a.T + 64 * jnp.eye(64), a[:, :3]) * 2.0, (x,)),
    "while_grad": (_while_grad, (x * 0.05, np.int32(3))),
}


@needs_ptxas
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_ptx(name, tmp_path):
    f, args = PROGRAMS[name]
    ptxas_check(lower_cuda(f, *args).as_text("binary"), tmp_path)


def test_products_without_cublas_are_kernels_ptxas_accepts(tmp_path):
    """EMBER_CUDA_CUBLAS=0 compiles products as kernels (the cuda target's
    `cublas=false`): ptxas accepts them; by default they call cuBLAS."""
    assert "call @ember_cuda_gemm" in lower_cuda(lambda a, b: a @ b, x, x).as_text("gpu")
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import ember
        x = np.ones((64, 64), np.float32)
        lowered = ember.jit(lambda a, b: (a @ b, a.T @ b)).trace(x, x).lower(
            lowering_platforms=("cuda",))
        assert "ember_cuda_gemm" not in lowered.as_text("gpu")
        sys.stdout.write(lowered.as_text("binary"))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, EMBER_CUDA_CUBLAS="0"), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(ptxas_check(r.stdout, tmp_path)) >= 1


def _gpu_count():
    from ember._mlir._mlir_libs import _ember_runtime as rt

    return rt.cuda_device_count()


needs_gpu = pytest.mark.skipif(_gpu_count() == 0, reason="needs a CUDA GPU (make gpu-check)")


@needs_gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_runs_on_gpu(name):
    """Each program compiled for cuda and run on the GPU gives the CPU's
    results (to float tolerance; random bits and integers exactly)."""
    f, args = PROGRAMS[name]
    on_gpu = lower_cuda(f, *args).compile()(*args)
    on_cpu = ember.jit(f)(*args)
    got, want = ember.tree_util.tree_leaves(on_gpu), ember.tree_util.tree_leaves(on_cpu)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(w.dtype, np.floating):
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=2e-4, atol=2e-4, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)


@needs_gpu
def test_refs_on_gpu():
    """Ref arguments and closed-over Refs of a function run on the GPU are
    written back (their new values stay on the GPU), as on the CPU."""
    gpu = ember.devices("gpu")[0]

    @ember.jit
    def add_to(r, v):
        r[...] = r[...] + v

    a = ember.new_ref(ember.device_put(jnp.ones(3), gpu))
    add_to(a, ember.device_put(jnp.full(3, 2.0), gpu))
    add_to(a, ember.device_put(jnp.full(3, 1.0), gpu))
    np.testing.assert_allclose(np.asarray(a[...]), [4.0, 4.0, 4.0])
    counter = ember.new_ref(ember.device_put(jnp.zeros(()), gpu))

    def w(x):
        def body(i, c):
            counter[...] += 1.0
            return c * 2
        return lax.fori_loop(0, 3, body, x)

    out = ember.jit(w)(ember.device_put(jnp.ones(()), gpu))
    assert float(out) == 8.0 and float(counter[...]) == 3.0


@needs_gpu
def test_eager_primitives_on_gpu_arrays():
    """Single primitives outside jit on GPU arrays run on the GPU (a jitted
    program each, cached) and give GPU arrays, as in JAX."""
    gpu = ember.devices("gpu")[0]
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    g = ember.device_put(a, gpu)
    cases = [(lambda t: t.sum(), a.sum()), (lambda t: lax.add(t, t), a + a),
             (lambda t: t.T, a.T), (lambda t: t @ t.T, a @ a.T),
             (lambda t: t.astype(jnp.int32), a.astype(np.int32)), (lambda t: -t[1], -a[1]),
             (lambda t: jnp.sin(t) * 2, np.sin(a) * 2)]
    for f, want in cases:
        r = f(g)
        assert isinstance(r, ember.Array) and r.devices() == {gpu}
        assert type(r).__name__ == "GpuArray"
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-5, atol=1e-6)


def test_counted_loops_keep_their_counters_on_the_host():
    """A scan's counters and its index (a residual of its gradient) are host
    scalars in the cuda program, and deallocation's bookkeeping is host
    memory: the program copies nothing from the device to the host."""
    f, args = PROGRAMS["scan_rnn_grad"]
    gpu = lower_cuda(f, *args).as_text("gpu")
    host = [ln for ln in gpu.splitlines() if "gpu.memcpy" in ln]
    assert host and not [ln for ln in host if "gpu.memcpy  %alloca" in ln], host
    helper = [ln for ln in gpu.splitlines() if "func.func private @dealloc_helper" in ln]
    assert helper and "attributes {ember.host}" in helper[0]
    assert "memref.alloc() {ember.host} : memref<" in gpu


def test_stages_and_views():
    lowered = ember.jit(lambda a: jnp.tanh(a).sum(axis=1)).trace(wide).lower(
        lowering_platforms=("gpu",))
    gpu = lowered.as_text("gpu")
    assert "gpu.launch_func" in gpu and re.search(r"gpu\.all_reduce +add", gpu)
    assert "llvm.func @main" in lowered.as_text("nvvm")
    assert "gpu.binary" in lowered.as_text("binary")
    ptx = lowered.as_text("ptx")
    # One kernel: the reduction's initial fill is folded into it.
    assert ptx.count(".entry") == 1 and "// gpu.module @main_kernel\n" in ptx
    with pytest.raises(ValueError, match="unknown stage 'llvm' for target 'cuda'"):
        lowered.as_text("llvm")


def test_reduction_kernel_shape():
    """A long reduction is a block per output (shuffles in the PTX); an
    elementwise op is 256-thread blocks over the elements."""
    text = ember.jit(lambda a: a.sum(axis=1)).trace(wide).lower(
        lowering_platforms=("cuda",)).as_text("gpu")
    assert re.search(r"gpu\.all_reduce +add", text)
    ew = ember.jit(lambda a: a * 2.0).trace(x).lower(
        lowering_platforms=("cuda",)).as_text("gpu")
    assert re.search(r"threads in \(%c256", ew), ew


def test_broadcast_kernels_index_in_i32_with_constant_sizes():
    """An outer product's kernel (the per-example gradient's shape) knows
    its sizes as constants (sunk into the kernel, not parameters) and finds
    each point's indices with 32-bit division: 64-bit division by a run-time
    size made such kernels three times slower than JAX's on an H200."""
    a, b = np.ones((8, 1, 96), np.float32), np.ones((8, 1, 64), np.float32)
    text = lower_cuda(lambda p, q: p.transpose(0, 2, 1) * q, a, b).as_text("gpu")
    kernel = text[text.index("gpu.func"):]
    kernel = kernel[:kernel.index("gpu.return")]
    assert "%c64_i32" in kernel and "%c96_i32" in kernel, kernel
    assert re.search(r"arith\.divui %\w+, %c64_i32 : i32", kernel), kernel
    assert not re.search(r"arith\.(div|rem)ui [^\n]*: index", kernel), kernel
    header = kernel.splitlines()[0]
    assert ": index" not in header, header


def test_compile_runs_on_the_gpu_or_says_why_not():
    """With a GPU the compiled program runs there (its result checked);
    without one, compile() names what is missing (test_cuda_runtime.py runs
    the runtime against a stand-in driver)."""
    from ember._mlir._mlir_libs import _ember_runtime as rt

    lowered = ember.jit(lambda a: jnp.tanh(a) * 2.0 + a.sum()).trace(x).lower(
        lowering_platforms=("cuda",))
    if rt.cuda_device_count() == 0:
        with pytest.raises(RuntimeError, match="Unable to run on backend 'cuda': "):
            lowered.compile()
        return
    xn = np.asarray(x)
    np.testing.assert_allclose(np.asarray(lowered.compile()(x)),
                               np.tanh(xn) * 2.0 + xn.sum(), rtol=1e-5, atol=1e-5)


def test_unknown_platform():
    with pytest.raises(ValueError, match="unknown target 'rocm'"):
        ember.jit(lambda a: a).trace(x).lower(lowering_platforms=("rocm",))


def _execution_programs():
    return sorted((ROOT / "test" / "Execution").glob("*.mlir"))


def _with_host_printers_defined(text):
    """An execution test with the runtime's printers (external functions,
    which the cuda target cannot call) replaced by empty functions: the
    printed values are still computed, by kernels."""
    def define(m):
        return f"func.func @{m.group(1)}(%arg0: {m.group(2)}) {{\n  return\n}}"
    return re.sub(r"func\.func private @(printMemref\w+)\((tensor<[^>]*>)\)[^\n]*", define, text)


# The benchmark scripts at small sizes, one timed run each.
BENCHMARKS = {
    "elementwise": ["elementwise.py", "--size", "4096"],
    "reduce_sum": ["reduce.py", "--size", "4096"],
    "reduce_max": ["reduce.py", "--op", "max", "--size", "4096"],
    "matmul": ["matmul.py", "--n", "64"],
    "mlp_step": ["mlp_step.py", "--batch", "8"],
    "per_example_grads": ["per_example_grads.py", "--batch", "8"],
    "scan_rnn": ["scan_rnn.py", "--steps", "5", "--hidden", "32"],
    "scan_rnn_grad": ["scan_rnn.py", "--steps", "5", "--hidden", "32", "--grad"],
    "dispatch": ["dispatch.py"],
    "compile_time": ["compile_time.py", "--layers", "2", "--width", "16", "--fresh", "1"],
}


@needs_ptxas
@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_benchmark_programs_ptx(name, tmp_path):
    """Every program a benchmark compiles, lowered for cuda as well
    (EMBER_DUMP_TARGETS): ptxas accepts all their kernels."""
    script, *args = BENCHMARKS[name]
    dump = tmp_path / "dump"
    env = dict(os.environ, EMBER_DUMP_DIR=str(dump), EMBER_DUMP_TARGETS="cuda")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--module", "ember",
                        "--reps", "1", "--warmup", "1", "-q", *args],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    errors = sorted(dump.glob("*.cuda.error"))
    assert not errors, errors[0].read_text()
    binaries = sorted(dump.glob("*.binary.mlir"))
    assert binaries
    for b in binaries:
        ptxas_check(b.read_text(), tmp_path)


@needs_ptxas
@pytest.mark.parametrize("path", _execution_programs(), ids=lambda p: p.stem)
def test_execution_tests_ptx(path, tmp_path):
    """The programs of test/Execution (run on the CPU by lit) through the
    CUDA pipeline: ptxas accepts their kernels."""
    text = _with_host_printers_defined(path.read_text())
    target = get_target("cuda")
    with context():
        module = ir.Module.parse(text)
        stages = compiler.run_pipeline(module, target)
    ptxas_check(stages["binary"], tmp_path)


@needs_ptxas
def test_host_callbacks_compile_for_cuda(tmp_path):
    """Host callbacks (pure_callback, debug.print) on device buffers call
    the runtime's ember_cuda_host_callback, which stages them through host
    memory (test_cuda_runtime.py runs them); the kernels around them pass
    ptxas."""
    def f(a):
        ember.debug.print("{}", a[0, 0])
        return ember.pure_callback(np.sin, ember.ShapeDtypeStruct(a.shape, a.dtype), a * 2) + 1
    binary = lower_cuda(f, x).as_text("binary")
    assert "llvm.call @ember_cuda_host_callback" in binary
    assert "@ember_host_callback(" not in binary.replace("llvm.func @ember_host_callback(", "")
    ptxas_check(binary, tmp_path)


@needs_ptxas
def test_runtime_entries_staged_through_the_host_compile(tmp_path):
    """The LAPACK-backed ops and the run-time stacks (reverse mode through a
    while_loop with a run-time trip count) call the CPU runtime on host
    copies of their device buffers (ember-linalg-to-gpu stages them;
    test_cuda_runtime.py runs one); the kernels around them pass ptxas."""
    a = np.eye(4, dtype=np.float32) * 2 + 0.1
    programs = [jnp.linalg.cholesky, jnp.linalg.inv, jnp.linalg.eigh, jnp.linalg.svd,
                lambda m: jnp.linalg.qr(m)[1], lambda m: jnp.linalg.solve(m, m[:, :2])]

    def loop(w, n):
        return lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, jnp.tanh(c[1] * w)),
                              (0, w))[1].sum()
    for k, f in enumerate(programs):
        binary = lower_cuda(f, a).as_text("binary")
        assert "memref" not in binary and "llvm.call @ember_" in binary, k
        ptxas_check(binary, tmp_path)
    binary = lower_cuda(ember.grad(loop), a, np.int32(3)).as_text("binary")
    assert "llvm.call @ember_stack_push" in binary
    ptxas_check(binary, tmp_path)


@needs_ptxas
def test_pallas_call_program_ptx(tmp_path):
    # A Pallas kernel (a blocked matmul accumulating over the grid) is
    # ordinary Ember ops after tracing, so the cuda target compiles it (as
    # generic kernels; the ember_gpu dialect is not used for it yet).
    from ember.experimental import pallas as pl

    def kernel(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += x_ref[...] @ y_ref[...]

    def mm(x, y):
        return pl.pallas_call(
            kernel, out_shape=ember.ShapeDtypeStruct((32, 32), np.float32), grid=(4,),
            in_specs=[pl.BlockSpec((32, 16), lambda i: (0, i)),
                      pl.BlockSpec((16, 32), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((32, 32), lambda i: (0, 0)))(x, y)

    lowered = lower_cuda(mm, np.ones((32, 64), np.float32), np.ones((64, 32), np.float32))
    assert len(ptxas_check(lowered.as_text("binary"), tmp_path)) > 0

"""The CUDA runtime (lib/Runtime/Cuda.cpp) without a GPU: a stand-in driver
over host memory (test/cuda/MockCudaDriver.cpp, built as
build/dev/lib/libEmberMockCudaDriver.so) takes the driver's place through
EMBER_CUDA_DRIVER, and for cuBLAS through EMBER_CUBLAS. It records what the
runtime asks of the driver; kernels do not run (that needs a GPU:
test_cuda_target.py runs them there), but products through cuBLAS do, so
these tests check the runtime's side: modules loaded once, one launch per
gpu.launch_func with the IR's grid, the caching allocator, the copies,
errors named as CUDA names them, and a missing driver. Each case runs in a
fresh process (the driver is loaded once per process)."""

import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MOCK = os.path.join(ROOT, "build", "dev", "lib", "libEmberMockCudaDriver.so")

pytestmark = pytest.mark.skipif(not os.path.exists(MOCK),
                                reason="needs the build directory's mock driver (make build)")

PRELUDE = """
import ctypes, os, re
import numpy as np
import ember, ember.numpy as jnp
from ember._mlir._mlir_libs import _ember_runtime as rt
if os.path.exists(os.environ["EMBER_CUDA_DRIVER"]):
    mock = ctypes.CDLL(os.environ["EMBER_CUDA_DRIVER"])
    mock.mock_cuda_log.restype = ctypes.c_char_p
    mock.mock_cuda_live_blocks.restype = ctypes.c_size_t
def log():
    return mock.mock_cuda_log().decode().splitlines()
"""


def run(code, driver=MOCK, **env):
    # The stand-in library also stands in for cuBLAS.
    # Device memory the host cannot touch (EMBER_MOCK_CUDA_OPAQUE): a host
    # access to a device buffer crashes here as it does on a GPU.
    full = dict(os.environ, EMBER_CUDA_DRIVER=driver, EMBER_CUBLAS=MOCK,
                EMBER_MOCK_CUDA_OPAQUE="1")
    full.pop("EMBER_PLATFORMS", None)
    full.pop("JAX_PLATFORMS", None)
    full.update(env)
    r = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], env=full,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_program_runs_through_the_driver():
    out = run("""
        def f(x, y):
            return jnp.sin(x) @ y + jnp.sum(x)
        x = jnp.ones((64, 64))
        lowered = ember.jit(f).trace(x, x).lower(lowering_platforms=("cuda",))
        binary = lowered.as_text("binary")
        compiled = lowered.compile()
        loaded = log()
        r = compiled(x, x)
        print("result", r.shape, r.dtype)
        calls = log()[len(loaded):]
        print("modules", binary.count("gpu.binary @"),
              sum(l.startswith("cuModuleLoadDataEx O3") for l in loaded))
        grids = re.findall(r"gpu.launch_func .*?blocks in \\((%\\w+), (%\\w+), (%\\w+)\\)", binary)
        print("launches", len(grids), sum(l.startswith("cuLaunchKernel") for l in calls))
        print("copies", [l for l in calls if l.startswith("cuMemcpyAsync")])
        print("stats1", rt.cuda_allocator_stats())
        compiled(x, x)
        print("stats2", rt.cuda_allocator_stats())
        print("lookups", sum(l.startswith("cuModuleGetFunction") for l in log()))
        del compiled, lowered
        import gc; gc.collect()
        print("unloads", sum(l == "cuModuleUnload" for l in log()))
    """)
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert lines["result"] == "(64, 64) float32"
    modules, loads = lines["modules"].split()
    assert int(modules) == int(loads) >= 2  # each kernel module loaded once, PTX at O3
    ir_launches, launches = lines["launches"].split()
    assert int(ir_launches) == int(launches) >= 2
    # two 16 KiB arguments in, one 16 KiB result out
    assert lines["copies"] == str(["cuMemcpyAsync 16384"] * 3)
    allocations, cached = eval(lines["stats1"])
    assert allocations >= 3 and cached > 0
    assert eval(lines["stats2"]) == (allocations, cached)  # the second call allocates nothing
    assert int(lines["lookups"]) == int(modules)  # functions cached
    assert int(lines["unloads"]) == int(modules)


def test_grids_follow_the_ir():
    out = run("""
        x = jnp.ones((1000, 3000))
        lowered = ember.jit(lambda a: a * 2.0).trace(x).lower(lowering_platforms=("cuda",))
        lowered.compile()(x)
        print([l for l in log() if l.startswith("cuLaunchKernel")])
    """)
    # 3,000,000 elements in 256-thread blocks of 4 elements a thread
    assert "grid 2930,1,1 block 256,1,1" in out


@pytest.mark.parametrize("program,fails,error", [
    ("lambda a: a + 1.0", "cuLaunchKernel", "CUDA_ERROR_LAUNCH_FAILED (719) in cuLaunchKernel"),
    ("lambda a: a @ a", "cublasLtMatmul",
     "CUBLAS_STATUS_EXECUTION_FAILED (13) in cublasLtMatmul"),
    # Without a cuBLASLt algorithm for the shape, cublasGemmStridedBatchedEx
    ("lambda a: a @ a", "cublasLtMatmulAlgoGetHeuristic,cublasGemmStridedBatchedEx",
     "CUBLAS_STATUS_EXECUTION_FAILED (13) in cublasGemmStridedBatchedEx")])
def test_errors_name_the_cuda_error(program, fails, error):
    out = run(f"""
        x = jnp.ones((64, 64))
        compiled = ember.jit({program}).trace(x).lower(lowering_platforms=("cuda",)).compile()
        os.environ["EMBER_MOCK_CUDA_FAIL"] = "{fails}"
        try:
            compiled(x)
        except RuntimeError as e:
            print("error:", e)
        os.environ["EMBER_MOCK_CUDA_FAIL"] = ""
        print("again", compiled(x).shape)
    """)
    assert f"error: CUDA error running the program: {error}" in out
    assert "again (64, 64)" in out  # the error was taken; the next call runs


def test_bad_ptx_reports_the_jit_log():
    out = run("""
        x = jnp.ones(8)
        lowered = ember.jit(lambda a: a + 1.0).trace(x).lower(lowering_platforms=("cuda",))
        try:
            lowered.compile()
        except RuntimeError as e:
            print("error:", e)
    """, EMBER_MOCK_CUDA_FAIL="cuModuleLoadDataEx")
    assert "CUDA_ERROR_INVALID_PTX (218) in cuModuleLoadDataEx (PTX JIT: mock: no .entry" in out


def test_out_of_memory_releases_the_cache_and_retries():
    out = run("""
        x = jnp.ones(1 << 16)
        compiled = ember.jit(lambda a: a * 3.0).trace(x).lower(
            lowering_platforms=("cuda",)).compile()
        compiled(x)
        before = mock.mock_cuda_live_blocks()
        rt.cuda_release_cache()
        print("released", before, mock.mock_cuda_live_blocks())
        os.environ["EMBER_MOCK_CUDA_FAIL"] = "cuMemAlloc_v2"
        try:
            compiled(x)
        except RuntimeError as e:
            print("error:", e)
    """)
    before, after = re.search(r"released (\d+) (\d+)", out).groups()
    assert int(before) >= 2 and int(after) == 0
    assert "error: CUDA error allocating device memory: CUDA_ERROR_LAUNCH_FAILED (719) in " \
           "cuMemAlloc" in out


def test_missing_driver():
    out = run("""
        print(rt.cuda_device_count(), rt.cuda_unavailable_reason())
        x = jnp.ones(8)
        lowered = ember.jit(lambda a: a + 1.0).trace(x).lower(lowering_platforms=("cuda",))
        assert "ptx" in lowered.as_text("ptx").lower()  # compiling needs no driver
        try:
            lowered.compile()
        except RuntimeError as e:
            print("error:", e)
        print(float(ember.jit(lambda a: a.sum())(x)))  # the CPU is unaffected
    """, driver="/nonexistent/libcuda.so.1")
    assert out.startswith("0 the CUDA driver (/nonexistent/libcuda.so.1) could not be loaded")
    assert "error: Unable to run on backend 'cuda': the CUDA driver" in out
    assert out.strip().endswith("8.0")


def test_no_gpu_and_failing_init():
    out = run("""
        print(rt.cuda_device_count(), "|", rt.cuda_unavailable_reason())
    """, EMBER_MOCK_CUDA_DEVICES="0")
    assert out.strip() == "0 | the CUDA driver reports no GPU"
    out = run("""
        print(rt.cuda_device_count(), "|", rt.cuda_unavailable_reason())
    """, EMBER_MOCK_CUDA_FAIL="cuInit")
    assert out.strip() == "0 | cuInit failed: CUDA_ERROR_LAUNCH_FAILED"


def test_devices_list_the_drivers_gpu():
    out = run("""
        print(ember.devices("gpu"), ember.devices("gpu")[0].device_kind)
    """)
    assert out.strip() == "[CudaDevice(id=0)] Ember mock GPU"


def test_arrays_in_device_memory():
    """device_put onto the GPU keeps the array in device memory; a jitted
    function called on it runs there and its results stay there (chained
    calls copy nothing); NumPy gets a copy back once."""
    out = run("""
        gpu = ember.devices("gpu")[0]
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        x = ember.device_put(a, gpu)
        print("placed", type(x).__name__, x.devices(), x.committed)
        print("round trip", np.array_equal(np.asarray(x), a),
              np.array_equal(np.asarray(ember.device_put(x, ember.devices("cpu")[0])), a))
        f = ember.jit(lambda v: jnp.tanh(v) * 2.0)
        mock.mock_cuda_clear_log()
        y = f(f(x))
        print("chained", type(y).__name__, y.device, y.shape, y.dtype,
              [l for l in log() if l.startswith("cuMemcpyAsync")])
        np.asarray(y)
        np.asarray(y)
        print("read back", [l for l in log() if l.startswith("cuMemcpyAsync")])
        mock.mock_cuda_clear_log()
        z = ember.jit(lambda u, v: u + v)(y, a)  # a host argument is copied in
        print("mixed", type(z).__name__, [l for l in log() if l.startswith("cuMemcpyAsync")])
    """)
    assert "placed GpuArray {CudaDevice(id=0)} True" in out
    assert "round trip True True" in out
    assert "chained GpuArray cuda:0 (3, 4) float32 []" in out
    assert "read back ['cuMemcpyAsync 48']" in out  # once, kept
    assert "mixed GpuArray ['cuMemcpyAsync 48']" in out


def test_dispatch_is_asynchronous():
    """Jitted calls on GPU arrays return with their work queued on the
    stream (the host waits for nothing, products included); reading a
    result or block_until_ready waits, and an error of queued work is raised
    there."""
    out = run("""
        gpu = ember.devices("gpu")[0]
        x = ember.device_put(np.ones((64, 64), np.float32), gpu)
        f = ember.jit(lambda v: jnp.tanh(v @ v) * 2.0)
        f(x)  # compiled and loaded
        mock.mock_cuda_clear_log()
        y = f(f(x))
        calls = log()
        print("queued", sum(l.startswith("cuLaunchKernel") for l in calls) >= 2,
              sum(l.startswith("cublasLtMatmul ") for l in calls),
              sum(l == "cuStreamSynchronize" for l in calls))
        print("ready", y.block_until_ready() is y,
              ember.block_until_ready({"y": y})["y"] is y,
              sum(l == "cuStreamSynchronize" for l in log()))
        mock.mock_cuda_clear_log()
        np.asarray(y)
        print("read", sum(l == "cuStreamSynchronize" for l in log()))
        z = f(x)
        os.environ["EMBER_MOCK_CUDA_FAIL"] = "cuStreamSynchronize"
        try:
            z.block_until_ready()
        except RuntimeError as e:
            print("error:", e)
    """)
    assert "queued True 2 0" in out
    assert "ready True True 2" in out
    assert "read 1" in out
    assert ("error: CUDA error running on the GPU: CUDA_ERROR_LAUNCH_FAILED (719) in "
            "cuStreamSynchronize") in out


def test_default_device_gpu_runs_computations_there():
    out = run("""
        f = ember.jit(lambda v: v * 2.0 + 1.0)
        a = np.arange(4, dtype=np.float32)
        print("before", type(f(a)).__name__)
        with ember.default_device(ember.devices("gpu")[0]):
            print("inside", type(f(a)).__name__, f(a).devices(),
                  type(jnp.sin(jnp.ones(3))).__name__)
        print("after", type(f(a)).__name__)
    """)
    assert "before Array" in out and "after Array" in out
    assert "inside GpuArray {CudaDevice(id=0)} GpuArray" in out


def test_repeated_gpu_calls_take_the_fast_path():
    """A jitted function called again on GPU arrays of the same signature
    runs its program without tracing or looking up its cache by pytree
    (its GPU fast path); another signature, a CPU argument, or a cleared
    cache go through the full path again, with the right results' types."""
    out = run("""
        from ember._src import api
        gpu = ember.devices("gpu")[0]
        traces = []
        def g(v, w):
            traces.append(v.shape)
            return {"s": v * 2.0 + w, "t": (v,)}
        f = ember.jit(g)
        x = ember.device_put(np.ones((4, 4), np.float32), gpu)
        f(x, x)
        calls = []
        slow = api.JitWrapped._call_slow
        api.JitWrapped._call_slow = lambda self, *a: calls.append(1) or slow(self, *a)
        mock.mock_cuda_clear_log()
        r = f(x, x)
        print("fast", len(calls), len(traces), sorted(r), type(r["t"][0]).__name__,
              r["s"].devices(), sum(l.startswith("cuLaunchKernel") for l in log()) > 0)
        f(ember.device_put(np.ones((2, 4), np.float32), gpu), x[:1])
        f(np.ones((4, 4), np.float32), x)
        print("slow", len(calls), len(traces))
        ember.clear_caches()
        f(x, x)
        f(x, x)
        print("cleared", len(calls), len(traces))
        # Pytrees of GpuArrays (a training step's parameters) too.
        h = ember.jit(lambda ps, v: [(w * v, b + 1.0) for w, b in ps])
        ps = [(x, x), (x, x)]
        h(ps, x)
        n = len(calls)
        r = h(ps, x)
        print("tree", len(calls) - n, type(r[1][1]).__name__, len(r))
    """)
    assert "fast 0 1 ['s', 't'] GpuArray {CudaDevice(id=0)} True" in out, out
    # (The mixed call is a signature of its own: a third trace.)
    assert "slow 2 3" in out, out
    assert "cleared 3 4" in out, out
    assert "tree 0 GpuArray 2" in out, out


def test_single_primitives_on_gpu_arrays_run_on_the_gpu():
    """Outside jit, a primitive on a GPU array (or with the GPU as the
    default device) launches a kernel and gives a GPU array, also under
    disable_jit; nothing is copied back to the host."""
    out = run("""
        gpu = ember.devices("gpu")[0]
        x = ember.device_put(np.ones((8, 8), np.float32), gpu)
        x.sum()
        mock.mock_cuda_clear_log()
        r = [x.sum(), x.T, -x, x.astype(jnp.int32), ember.lax.add(x, x)]
        with ember.disable_jit():
            r.append(x * 3.0)
        calls = log()
        print("ran", [type(a).__name__ for a in r] == ["GpuArray"] * 6,
              sum(l.startswith("cuLaunchKernel") for l in calls) >= 6,
              sum(l.startswith("cuMemcpyDtoH") for l in calls))
    """)
    assert "ran True True 0" in out, out


def test_tma_descriptors_built_for_a_plgpu_kernel_in_jit():
    """A plgpu kernel with TMA copies inside a jit program for cuda: the
    host code builds its descriptors (cuTensorMapEncodeTiled: dimensions and
    boxes innermost first, byte strides, 128-byte swizzle) on the operands'
    device addresses before launching it."""
    out = run("""
        import sys
        sys.path.insert(0, os.path.join(os.environ["EMBER_ROOT"], "examples"))
        import ml_dtypes
        from pallas_gpu_kernels import hopper_matmul_kernel
        kern = hopper_matmul_kernel(256, 256, 128, jnp.bfloat16)
        a = np.ones((256, 128), ml_dtypes.bfloat16)
        b = np.ones((128, 256), ml_dtypes.bfloat16)
        c = ember.jit(lambda a, b: kern(a, b) * 2.0).trace(a, b).lower(
            lowering_platforms=("cuda",)).compile()
        mock.mock_cuda_clear_log()
        c(a, b)
        for line in log():
            if line.startswith(("cuTensorMapEncodeTiled", "cuLaunchKernel plgpu",
                                "cuFuncSetAttribute")):
                print(line)
    """, EMBER_ROOT=ROOT)
    lines = out.strip().splitlines()
    # a: 256 x 128 bf16 (9), copied in 128 x 64 strips; b: 128 x 256 in 64 x 64
    # strips; the result: 256 x 256 in 128 x 64 strips
    assert lines[:3] == [
        "cuTensorMapEncodeTiled dtype 9 dims 128 256 strides 256 box 64 128 swizzle 3",
        "cuTensorMapEncodeTiled dtype 9 dims 256 128 strides 512 box 64 64 swizzle 3",
        "cuTensorMapEncodeTiled dtype 9 dims 256 256 strides 512 box 64 128 swizzle 3"]
    # Its 96 KiB of buffers are dynamic shared memory, opted in above 48 KiB.
    # (three buffers of tiles; the barriers and the staging area, each
    # rounded to 1024 bytes; 1024 bytes of slack for the run-time alignment)
    smem = 3 * 32768 + 3 * 1024
    assert lines[3] == f"cuFuncSetAttribute 8 {smem}"
    assert re.fullmatch(rf"cuLaunchKernel plgpu_body_\d+_gpu grid 2,2,1 block 128,1,1 smem {smem}",
                        lines[4])


@pytest.mark.parametrize("lt", ["1", "0"])
def test_products_call_cublas_with_the_results_numpy_gives(lt):
    # Products whose only device work is the product run for real on the
    # stand-in cuBLAS (column-major, as cuBLAS defines it): the runtime's
    # mapping of row-major operands, transposes, batches and types is checked
    # by the numbers, through cuBLASLt (its plans) and, with
    # EMBER_CUBLASLT=0, through cublasGemmStridedBatchedEx.
    out = run("""
        import ml_dtypes
        rng = np.random.default_rng(0)
        def check(name, f, *args, rtol=1e-5):
            lowered = ember.jit(f).trace(*args).lower(lowering_platforms=("cuda",))
            gpu_text = lowered.as_text("gpu")
            assert "call @ember_cuda_gemm" in gpu_text, gpu_text
            mock.mock_cuda_clear_log()
            got = np.asarray(lowered.compile()(*args), np.float64)
            # NumPy in f64 on the operands as the program got them
            want = np.asarray(f(*[np.asarray(a).astype(np.float64) for a in args]))
            err = np.max(np.abs(got - want)) / np.max(np.abs(want))
            gemms = [l for l in log() if l.startswith(("cublasGemm", "cublasLtMatmul "))]
            print(name, err < rtol, gemms[0].split(" ", 1)[1])
        a = rng.standard_normal((48, 40)).astype(np.float32)
        b = rng.standard_normal((40, 72)).astype(np.float32)
        check("nn", lambda x, y: x @ y, a, b)
        # Contracting dimensions that make an operand a transposed matrix:
        def dg(lc, rc):
            def f(x, y):
                if isinstance(x, np.ndarray):
                    return np.tensordot(x, y, ((lc,), (rc,)))
                return ember.lax.dot_general(x, y, (((lc,), (rc,)), ((), ())))
            return f
        check("tn", dg(0, 0), a.T.copy(), b)
        check("nt", dg(1, 1), a, b.T.copy())
        check("tt", dg(0, 1), a.T.copy(), b.T.copy())
        ba = rng.standard_normal((3, 32, 40)).astype(np.float32)
        bb = rng.standard_normal((3, 40, 24)).astype(np.float32)
        check("batched", lambda x, y: jnp.einsum("bij,bjk->bik", x, y)
              if not isinstance(x, np.ndarray) else np.einsum("bij,bjk->bik", x, y), ba, bb)
        bf = ml_dtypes.bfloat16
        check("bf16", lambda x, y: x @ y, a.astype(bf), b.astype(bf), rtol=1e-2)
        check("f16", lambda x, y: x @ y, a.astype(np.float16), b.astype(np.float16), rtol=2e-3)
        # bf16 operands into an f32 result: accumulated and written in f32
        check("bf16_f32", lambda x, y: jnp.dot(x, y, preferred_element_type=jnp.float32)
              if not isinstance(x, np.ndarray) else x @ y, a.astype(bf), b.astype(bf), rtol=1e-5)
        ember.config.update("jax_enable_x64", True)
        check("f64", lambda x, y: x @ y, a.astype(np.float64), b.astype(np.float64), rtol=1e-12)
        print("calls", sum(l.startswith("cublasLtMatmul ") for l in log()),
              sum(l.startswith("cublasGemm") for l in log()))
    """, EMBER_CUBLASLT=lt)
    lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
    assert lines["calls"] == ("1 0" if lt == "1" else "0 1")
    # Row-major C = A B is column-major C^T = B^T A^T: B first, m and n swapped.
    tail = "batch=1 types=0,0,0 compute=68" + (" algo=-1" if lt == "0" else "")
    assert lines["nn"] == f"True NN m=72 n=48 k=40 lda=72 ldb=40 ldc=72 {tail}"
    assert lines["tn"] == f"True NT m=72 n=48 k=40 lda=72 ldb=48 ldc=72 {tail}"
    assert lines["nt"] == f"True TN m=72 n=48 k=40 lda=40 ldb=40 ldc=72 {tail}"
    assert lines["tt"] == f"True TT m=72 n=48 k=40 lda=40 ldb=48 ldc=72 {tail}"
    assert lines["batched"] == ("True NN m=24 n=32 k=40 lda=24 ldb=40 ldc=24 batch=3 "
                                f"{tail.split(' ', 1)[1]}")
    for name, types in (("f64", "types=1,1,1 compute=70"),
                        ("bf16", "types=14,14,14 compute=68"),
                        ("f16", "types=2,2,2 compute=68"),
                        ("bf16_f32", "types=14,14,0 compute=68")):
        assert lines[name].startswith("True NN m=72 n=48 k=40") and types in lines[name], name


def test_missing_cublas_is_a_clear_error():
    out = run("""
        x = jnp.ones((64, 64))
        compiled = ember.jit(lambda a: a @ a).trace(x).lower(lowering_platforms=("cuda",)).compile()
        try:
            compiled(x)
        except RuntimeError as e:
            print("error:", e)
    """, EMBER_CUBLAS="/nonexistent/libcublas.so.13")
    assert "cuBLAS could not be loaded (/nonexistent/libcublas.so.13" in out
    assert "nvidia-cublas" in out


def test_host_callbacks_run_on_the_host():
    """A host callback in a program for cuda gets its operands copied from
    the device after the work before it, and its results copied back;
    errors are JAX's, raised after the call; GPU arrays work too."""
    out = run("""
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        def f(a):
            ember.debug.print("host sees {v}", v=a)
            return ember.pure_callback(lambda v: np.sin(v) * 10,
                                       ember.ShapeDtypeStruct(a.shape, a.dtype), a)
        c = ember.jit(f).trace(x).lower(lowering_platforms=("cuda",)).compile()
        print("values", np.allclose(np.asarray(c(x)), np.sin(x) * 10))
        gpu = ember.devices("gpu")[0]
        y = ember.jit(f)(ember.device_put(x, gpu))
        print("on the gpu", type(y).__name__, np.allclose(np.asarray(y), np.sin(x) * 10))
        def bad(v):
            raise ValueError("boom")
        g = ember.jit(lambda a: ember.pure_callback(
            bad, ember.ShapeDtypeStruct(a.shape, a.dtype), a))
        try:
            g.trace(x).lower(lowering_platforms=("cuda",)).compile()(x)
        except Exception as e:
            print("error", type(e).__name__, isinstance(e, ValueError), "boom" in str(e))
    """)
    assert "host sees [[0. 1. 2.]\n [3. 4. 5.]]" in out
    assert "values True" in out
    assert "on the gpu GpuArray True" in out
    assert "error JaxRuntimeError True True" in out


def test_platforms_naming_the_gpu_first_make_it_the_default():
    """JAX_PLATFORMS=cuda,cpu: the GPU is the default backend; new arrays
    and computations go to GPU 0 (as inside `default_device(gpu)`), a
    `default_device(cpu)` context still runs on the CPU; cpu,cuda keeps the
    CPU the default."""
    out = run("""
        print("backend", ember.default_backend(), ember.devices()[0])
        x = jnp.ones((2, 3))
        print("created", type(x).__name__, x.devices(), type(jnp.arange(3)).__name__)
        f = ember.jit(lambda a: a @ a.T)
        print("computed", type(f(np.ones((64, 64), np.float32))).__name__)
        with ember.default_device(ember.devices("cpu")[0]):
            print("cpu context", type(f(np.ones((64, 64), np.float32))).__name__,
                  type(jnp.zeros(2)).__name__)
    """, JAX_PLATFORMS="cuda,cpu")
    assert "backend gpu cuda:0" in out
    assert "created GpuArray {CudaDevice(id=0)} GpuArray" in out
    assert "computed GpuArray" in out
    assert "cpu context Array Array" in out
    out = run("""
        print("backend", ember.default_backend(), type(jnp.ones(2)).__name__)
    """, JAX_PLATFORMS="cpu,cuda")
    assert "backend cpu Array" in out


def test_lapack_calls_run_on_host_copies():
    """A LAPACK-backed op in a program for cuda: its device buffers are
    copied to the host for the CPU runtime's call and back (values against
    NumPy)."""
    out = run("""
        from ember import lax
        a = np.array([[4., 2., 0.], [2., 5., 1.], [0., 1., 3.]], np.float32)
        f = ember.jit(lambda m: lax.linalg.cholesky(m, symmetrize_input=False))
        c = f.trace(a).lower(lowering_platforms=("cuda",)).compile()
        print("cholesky", np.allclose(np.asarray(c(a)), np.linalg.cholesky(a)))
        y = f(ember.device_put(a, ember.devices("gpu")[0]))
        print("gpu array", type(y).__name__, np.allclose(np.asarray(y), np.linalg.cholesky(a)))
    """)
    assert "cholesky True" in out
    assert "gpu array GpuArray True" in out


def test_transformations_outside_jit_run_on_the_default_gpu():
    """With the GPU the default (JAX_PLATFORMS=cuda,cpu), `vjp`, its backward
    function and `vmap` called outside `jit` compile for cuda and leave
    their results on GPU 0, as `jit` does; their products run on the
    stand-in cuBLAS, so the values are NumPy's."""
    out = run("""
        rng = np.random.default_rng(1)
        a = rng.standard_normal((48, 40)).astype(np.float32)
        b = rng.standard_normal((40, 72)).astype(np.float32)
        ct = rng.standard_normal((48, 72)).astype(np.float32)
        y, f_vjp = ember.vjp(lambda p, q: p @ q, a, b)
        ga, gb = f_vjp(ct)
        print("vjp", type(y).__name__, np.allclose(np.asarray(y), a @ b, atol=1e-4))
        print("backward", type(ga).__name__, np.allclose(np.asarray(ga), ct @ b.T, atol=1e-4),
              np.allclose(np.asarray(gb), a.T @ ct, atol=1e-4))
        ba = rng.standard_normal((3, 32, 40)).astype(np.float32)
        z = ember.vmap(lambda p: p @ b)(ba)
        print("vmap", type(z).__name__, z.devices(), np.allclose(np.asarray(z), ba @ b, atol=1e-4))
        g = ember.grad(lambda p: jnp.sum(p * 2.0))(a)
        print("grad", type(g).__name__)
        with ember.default_device(ember.devices("cpu")[0]):
            print("cpu context", type(ember.grad(lambda p: jnp.sum(p * 2.0))(a)).__name__)
    """, JAX_PLATFORMS="cuda,cpu")
    assert "vjp GpuArray True" in out
    assert "backward GpuArray True True" in out
    assert "vmap GpuArray {CudaDevice(id=0)} True" in out
    assert "grad GpuArray" in out and "cpu context Array" in out


def test_eager_pallas_call_of_a_lambda_on_the_gpu():
    """A pallas_call whose kernel is a lambda, called outside jit with the
    GPU as the default device: its function is named `<lambda>...`, a
    symbol the cuda stages must quote in the IR text they build (the H200's
    run of the suite found it unquoted: 'expected (')."""
    out = run("""
        from ember.experimental import pallas as pl
        f = pl.pallas_call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...] * 2.0),
                           out_shape=ember.ShapeDtypeStruct((64, 128), np.float32))
        r = f(jnp.ones((64, 128)))
        print("result", r.shape, type(r).__name__)
        print([l.split()[1] for l in log() if l.startswith("cuLaunchKernel")])
    """, JAX_PLATFORMS="cuda")
    assert "result (64, 128) GpuArray" in out
    assert "plgpu_" in out  # the compiled kernel was launched


def test_long_host_loops_keep_the_stack():
    """A loop of 100,000 launches: each launch's parameter array is stack
    taken where the launch is, and before the JIT moved such fixed-size
    slots to the function's entry every iteration took new stack, until a
    loop of some 30,000 launches overflowed it (a segmentation fault:
    scipy.special.hyp2f1 in float64 on the H200)."""
    out = run("""
        from ember import lax
        f = ember.jit(lambda x: lax.fori_loop(0, 100000, lambda i, v: v * 1.5, x))
        print("result", f(jnp.ones(40)).shape)
        print(sum(l.startswith("cuLaunchKernel") for l in log()))
    """, JAX_PLATFORMS="cuda")
    assert "result (40,)" in out
    assert int(out.split()[-1]) >= 100000


def test_refs_of_a_function_run_on_the_gpu():
    """A Ref argument and a closed-over Ref of a jitted function run on the
    GPU: compiled for cuda, launched, and their new values kept on the GPU
    (values need a GPU: test_cuda_target.py's test_refs_on_gpu)."""
    out = run("""
        @ember.jit
        def put(r, v):
            r[...] = v
        a = ember.new_ref(np.zeros(3, np.float32))
        put(a, np.arange(3.0, dtype=np.float32))
        rr = ember.new_ref(np.zeros(4, np.float32))
        w = ember.jit(lambda x: (rr.__setitem__(..., x * 2.0), x)[1])
        print("result", w(np.ones(4, np.float32)).shape)
        print("values", type(a._value).__name__, type(rr._value).__name__)
        print(sum(l.startswith("cuLaunchKernel") for l in log()))
    """, JAX_PLATFORMS="cuda")
    assert "result (4,)" in out and "values GpuArray GpuArray" in out
    assert int(out.split()[-1]) >= 2


def test_jnp_functions_of_gpu_arrays_are_one_program_there():
    """jnp functions of several primitives (`take`, `.at[].set`, indexing
    with arrays) called outside jit on GPU arrays run as one jitted program
    on the GPU, as JAX's jitted jnp functions (they ran op by op, the
    results coming back as host arrays with a GPU sharding)."""
    out = run("""
        from ember._src import core
        x = jnp.ones((3, 4))
        i = jnp.asarray(np.array([0, 2], np.int32))
        for _ in range(2):
            a = jnp.take(x, i, axis=1)
            b = x.at[0, i].set(2.0)
            c = x[i]
        print("types", type(a).__name__, type(b).__name__, type(c).__name__)
        print("programs", len(core._gpu_programs))
    """, JAX_PLATFORMS="cuda")
    assert "types GpuArray GpuArray GpuArray" in out
    assert "programs 3" in out


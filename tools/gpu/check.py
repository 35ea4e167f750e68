"""`make gpu-check` (#17, item 5): on a GPU machine, builds Ember's Python
modules for that machine's Python from the carried bundle
(tools/gpu/build_bindings.py; the bundle comes from `make gpu-bundle` and
travels as build/gpu-bundle.tar.xz), runs the GPU tests (the programs of
test_cuda_target.py and the Pallas kernels of test_gpu_kernels.py), the GPU
benchmarks (Ember and JAX alternating, each in its own process; medians and
ratios), then the whole test suite with the GPU as the default device in the
time left, and writes a report to $OUT/gpu-report.md (or
build/gpu-report.md), with the logs beside it.
Each step has a time limit so that the whole stays under 8 minutes.
A copy of JAX files the tests read may travel in .jaxsrc/ (git-ignored).

    python3 tools/gpu/check.py
"""
import collections
import csv
import glob
import importlib.util
import io
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.environ.get("OUT") or os.path.join(ROOT, "build")
START = time.perf_counter()
BENCH_ROUNDS = int(os.environ.get("EMBER_GPU_CHECK_BENCH_ROUNDS", 3))
# The suite stops this many seconds into the check (EMBER_GPU_CHECK_SUITE_END).
SUITE_END = float(os.environ.get("EMBER_GPU_CHECK_SUITE_END", 330))
# The workloads whose kernels ncu times (EMBER_GPU_CHECK_PROFILE; empty: none).
PROFILE = os.environ.get("EMBER_GPU_CHECK_PROFILE", "mlp_step,per_example_grads")
# Variants of Ember timed once more on some workloads (with --host), each
# switching one thing off: (title, log, environment variable set to "0",
# EMBER_GPU_CHECK_<NAME> naming the workloads (empty: none), default).
# Products as Ember's kernels (how much of a call cuBLAS's host side takes),
# elementwise kernels without vector loads and stores, every kernel its own
# launch, products through cublasGemm*Ex instead of cuBLASLt's kept plans.
VARIANTS = [
    (title, log, var, os.environ.get(f"EMBER_GPU_CHECK_{name}", default))
    for title, log, var, name, default in [
        ("Ember without cuBLAS", "no_cublas", "EMBER_CUDA_CUBLAS", "NO_CUBLAS",
         "matmul_small,mlp_step,per_example_grads"),
        ("Ember without vector loads and stores", "no_vectorize", "EMBER_CUDA_VECTORIZE",
         "NO_VECTORIZE", ""),
        ("Ember with every kernel its own launch", "no_merge", "EMBER_CUDA_MERGE",
         "NO_MERGE", "scan_rnn_grad,mlp_step"),
        ("Ember with cublasGemmStridedBatchedEx", "no_cublaslt", "EMBER_CUBLASLT",
         "NO_CUBLASLT", "matmul_small,mlp_step,per_example_grads")]]
report = []


def step(title, argv, timeout, env=None, log=None, append=False, quiet=False):
    """Runs argv (in a process group of its own, all killed at `timeout`:
    pytest-xdist's workers too); its output goes to `log` and to the report
    (`quiet`: only its end)."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=env, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        code = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        code = "timeout"
    if log:
        with open(os.path.join(OUT, log), "a" if append else "w") as f:
            f.write(out)
    tail = out[-(600 if quiet else 3000):]
    report.append(f"## {title}\n\n`{' '.join(argv)}`: exit {code}, "
                  f"{time.perf_counter() - t:.0f} s\n\n```\n{tail}\n```\n")
    print(f"[{time.perf_counter() - START:5.0f} s] {title}: exit {code}", flush=True)
    return code, out


def main():
    os.makedirs(OUT, exist_ok=True)
    py = sys.executable
    # Ember, and the packages the bundle carries (build_bindings.py unpacks
    # them into build/gpu/site).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([
        os.path.join(ROOT, "python"), os.path.join(ROOT, "build", "gpu", "site")]),
        PYTHONUNBUFFERED="1")
    # A plain copy of the jax-ml/jax files the tests read (JAX's
    # FlashAttention-3), where one travelled with the tree.
    if os.path.isdir(os.path.join(ROOT, ".jaxsrc")):
        env.setdefault("EMBER_JAX_SNAPSHOT", os.path.join(ROOT, ".jaxsrc"))
    env.pop("JAX_PLATFORMS", None)
    if shutil.which("nvidia-smi"):
        step("GPU", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                     "--format=csv"], 60)
    code = 0
    if not os.path.exists(os.path.join(ROOT, "python", "ember", "_mlir")):
        code, _ = step("Ember's Python modules for this Python", [
            py, "tools/gpu/build_bindings.py"], 240, log="build_bindings.log")
    if code != 0:
        return finish()
    step("Ember sees the GPU", [py, "-c",
         "from ember._mlir._mlir_libs import _ember_runtime as rt; "
         "print('GPUs:', rt.cuda_device_count(), rt.cuda_unavailable_reason()); "
         "from ember._src.targets import cuda; "
         "print('libdevice:', cuda.libdevice(), 'ptxas:', cuda.ptxas()); "
         "from ember._src import compiler; print('OpenBLAS:', compiler._HAVE_BLAS)"], 60, env=env)
    # The programs of test_cuda_target.py and the Pallas kernels of
    # test_gpu_kernels.py on the GPU, against the CPU and NumPy; pytest-xdist
    # and pytest-timeout where that machine has them (a kernel that hangs
    # costs its worker, not the run).
    tests = ["test/python/test_cuda_target.py", "test/python/test_devices.py",
             "test/python/test_gpu_kernels.py", "-k",
             "gpu or compile_runs or test_gpu_kernels or device_put"]
    extra = []
    if importlib.util.find_spec("xdist"):
        extra += ["-n", "8"]
    if importlib.util.find_spec("pytest_timeout"):
        extra += ["--timeout", "150"]
    _, out = step("GPU tests", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rfEs",
                                "--durations", "15", *extra, *tests], 270, env=env,
                  log="gpu_tests.log")
    # The first failing kernel again under compute-sanitizer's memcheck.
    failed = re.findall(r"^FAILED (test/python/test_gpu_kernels.py::\S+)", out, re.M)
    if failed and shutil.which("compute-sanitizer") and time.perf_counter() - START < 300:
        step("compute-sanitizer on " + failed[0], [
            "compute-sanitizer", "--tool", "memcheck", "--print-limit", "20", py, "-m",
            "pytest", "-q", "-p", "no:cacheprovider", "-x", failed[0]], 90, env=env,
            log="sanitizer.log")
    # The benchmarks, Ember and JAX alternating (the machine's speed
    # drifts), then each workload's median over the rounds and the ratio.
    times = {"ember": {}, "jax": {}}
    host = {"ember": {}, "jax": {}}
    for r in range(BENCH_ROUNDS):
        for module in ("ember", "jax"):
            if time.perf_counter() - START > 240:
                report.append(f"## benchmarks ({module}, round {r + 1})\n\nskipped: out of time\n")
                continue
            _, out = step(f"GPU benchmarks ({module}, round {r + 1})", [
                py, "benchmarks/gpu/gpu_bench.py", "--module", module, "--reps", "10",
                "--host"], 100, env=env, log=f"bench_{module}.log", append=True)
            for name, value in re.findall(r"^(\w+) ([0-9.]+)$", out, re.M):
                times[module].setdefault(name, []).append(float(value))
            for name, value in re.findall(r"^(\w+) host ([0-9.]+)$", out, re.M):
                host[module].setdefault(name, []).append(float(value))
    rows = ["| workload | Ember (ms) | JAX (ms) | Ember / JAX | rounds |", "|---|---|---|---|---|"]
    for name, ts in times["ember"].items():
        e = statistics.median(ts) * 1e3
        j = times["jax"].get(name)
        jm = statistics.median(j) * 1e3 if j else None
        spread = f"{min(ts) * 1e3:.3f}-{max(ts) * 1e3:.3f}"
        rows.append(f"| {name} | {e:.3f} ({spread}) | {f'{jm:.3f}' if jm else '-'} | "
                    f"{f'{e / jm:.2f}' if jm else '-'} | {len(ts)} |")
    report.append("## Benchmark medians\n\n" + "\n".join(rows) + "\n")
    # How long a call takes to return (before its result is ready).
    rows = ["| workload | Ember call returns (ms) | JAX (ms) |", "|---|---|---|"]
    for name, ts in host["ember"].items():
        j = host["jax"].get(name)
        rows.append(f"| {name} | {statistics.median(ts) * 1e3:.3f} | "
                    f"{f'{statistics.median(j) * 1e3:.3f}' if j else '-'} |")
    report.append("## Host time of a call (medians)\n\n" + "\n".join(rows) + "\n")
    for title, log, var, workloads in VARIANTS:
        if workloads and time.perf_counter() - START < 260:
            step(f"{title} ({workloads})", [
                py, "benchmarks/gpu/gpu_bench.py", "--module", "ember", "--reps", "10",
                "--host", "--only", workloads], 60, env=dict(env, **{var: "0"}),
                log=f"bench_ember_{log}.log")
    # Where the time of the small workloads goes: each kernel's GPU time
    # under Nsight Compute (one pass, clocks left alone), Ember and JAX.
    ncu = shutil.which("ncu") or next(iter(sorted(glob.glob(
        "/opt/nvidia/nsight-compute/*/ncu"))), None)
    if ncu and PROFILE and time.perf_counter() - START < 260:
        for module in ("ember", "jax"):
            # (XLA's autotuner would launch hundreds of trial kernels under
            # ncu: JAX picks its cuBLAS algorithms by heuristics, as Ember.)
            menv = dict(env, XLA_FLAGS="--xla_gpu_autotune_level=0")
            code, out = step(f"Kernel times under ncu ({module}: {PROFILE})", [
                ncu, "--clock-control", "none", "--csv", "--print-units", "base",
                "--metrics", "gpu__time_duration.sum", py, "benchmarks/gpu/gpu_bench.py",
                "--module", module, "--only", PROFILE, "--reps", "1", "--size", "1024",
                "--n", "256"],
                60, env=menv,
                log=f"ncu_{module}.log", quiet=True)
            report.append(kernel_summary(out))
    # The whole test suite with the GPU as the default device
    # (JAX_PLATFORMS=cuda,cpu), in the time left: what passes, what fails.
    left = SUITE_END - (time.perf_counter() - START)
    if left > 40:
        suite_env = dict(env, JAX_PLATFORMS="cuda,cpu", EMBER_TEST_FAILURE_LOG=os.path.join(
            OUT, "suite_failures.log"))
        extra = ["-n", "16", "--timeout", "60"] if importlib.util.find_spec("xdist") else []
        _, out = step("The test suite with the GPU as the default device", [
            py, "-m", "pytest", "-v", "-rN", "-p", "no:cacheprovider", *extra, "test/python"],
            left, env=suite_env, log="suite_gpu.log")
        counts = collections.Counter(re.findall(r"\b(PASSED|FAILED|ERROR|SKIPPED|XFAIL)\b "
                                                r"test/", out))
        failed = sorted(set(re.findall(r"(?:FAILED|ERROR) (test/\S+)", out)))
        report.append("## The test suite on the GPU: counts\n\n" + ", ".join(
            f"{k} {v}" for k, v in sorted(counts.items())) + "\n\n" + "\n".join(
            f"- {t}" for t in failed[:150]) + "\n")
    return finish()


def kernel_summary(out):
    """Each kernel's launches and total GPU time from ncu's CSV, longest
    first (the workload ran twice: warm-up and one timed call)."""
    total = collections.defaultdict(float)
    count = collections.Counter()
    for row in csv.reader(io.StringIO(out)):
        if len(row) > 14 and row[-3] == "gpu__time_duration.sum":
            name = f"{row[4][:60]} {row[8]}"  # (Ember's kernels: main_kernel)
            try:
                total[name] += float(row[-1].replace(",", "")) / 1e3
            except ValueError:
                continue
            count[name] += 1
    rows = [f"| {n} | {count[n]} | {t:.1f} |" for n, t in
            sorted(total.items(), key=lambda kv: -kv[1])[:40]]
    return ("| kernel | launches | total us |\n|---|---|---|\n" + "\n".join(rows) +
            f"\n\nkernels: {sum(count.values())}, GPU time: {sum(total.values()):.1f} us\n")


def finish():
    with open(os.path.join(OUT, "gpu-report.md"), "w") as f:
        f.write(f"# make gpu-check ({time.perf_counter() - START:.0f} s)\n\n" + "\n".join(report))
    print(f"report: {os.path.join(OUT, 'gpu-report.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Platforms and devices as JAX reports them, on a machine with or without a
GPU (CUDA devices are listed when a driver reports one; computation stays on
the CPU)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src import devices as devices_lib


def run_with(env_platforms, code):
    env = dict(os.environ)
    env.pop("EMBER_PLATFORMS", None)
    env["JAX_PLATFORMS"] = env_platforms
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=120)
    return r


def test_cpu_device_api(cpu_platform):
    (d,) = ember.devices("cpu")
    assert d.platform == "cpu" and d.id == 0 and d.device_kind == "cpu"
    assert repr(d) == "CpuDevice(id=0)"
    assert ember.default_backend() == "cpu"
    assert ember.devices()[0] is d
    assert ember.local_device_count() == 1 and ember.device_count() == 1
    assert ember.local_devices() == [d]
    assert ember.process_index() == 0 and ember.process_count() == 1
    x = ember.device_put(np.arange(3.0), d)
    assert x.devices() == {d} and x.device is d
    y = jnp.sin(x)
    assert y.devices() == {d}


def test_default_device_context():
    d = ember.devices("cpu")[0]
    with ember.default_device(d):
        assert devices_lib.current_default_device() is d
        assert float(jnp.ones(2).sum()) == 2.0
    with pytest.raises(TypeError, match="expected a Device"):
        with ember.default_device(3):
            pass


def test_device_put_rejects_non_devices():
    with pytest.raises(TypeError, match="expected a Device"):
        ember.device_put(np.ones(2), 3)


def test_gpu_without_gpu():
    if "cuda" in devices_lib.backends():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError,
                       match="Unknown backend: 'gpu' requested.*Platforms present are: cpu"):
        ember.devices("gpu")


def test_platforms_cpu_loads_no_cuda():
    r = run_with("cpu", """
        import ember, ember.numpy as jnp
        print(ember.devices(), ember.default_backend(), float(jnp.ones(3).sum()))
        print("libcuda" in open("/proc/self/maps").read())
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["[CpuDevice(id=0)] cpu 3.0", "False"]


def test_platforms_cuda_required():
    r = run_with("cuda", """
        import ember
        try:
            print(ember.devices("gpu"))
        except RuntimeError as e:
            print("error:", e)
    """)
    assert r.returncode == 0, r.stderr
    if "cuda" in devices_lib.backends():
        assert "CudaDevice(id=0)" in r.stdout
    else:
        assert "error: Unable to initialize backend 'cuda'" in r.stdout


def test_unknown_platform_name():
    r = run_with("tpu", "import ember; ember.devices()")
    assert r.returncode != 0
    assert "Unknown platform 'tpu'" in r.stderr


def test_gpu_device_put_round_trip():
    """On a GPU machine (make gpu-check) an array put on the GPU lives in
    its memory and comes back intact; test_cuda_runtime.py checks the same
    against a stand-in driver everywhere."""
    if "cuda" not in devices_lib.backends():
        pytest.skip("needs a GPU")
    a = np.arange(10.0, dtype=np.float32)
    x = ember.device_put(a, ember.devices("gpu")[0])
    assert x.devices() == {ember.devices("gpu")[0]}
    np.testing.assert_array_equal(np.asarray(ember.jit(lambda v: v * 2.0)(x)), a * 2)


def test_jax_shard_name():
    import ember
    import ember.numpy as jnp

    assert isinstance(jnp.ones(2).addressable_shards[0], ember.Shard)  # jax.Shard

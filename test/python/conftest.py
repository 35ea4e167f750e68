import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402

import ember  # noqa: E402


@pytest.fixture
def devices8(monkeypatch):
    """Eight CPU devices for the test (the platform list is read again), the
    CPU the only platform: also where the GPU is the default device
    (`make gpu-check` runs the suite so), these tests are about CPU meshes."""
    from ember._src import devices as devices_lib

    monkeypatch.setenv("EMBER_NUM_CPU_DEVICES", "8")
    monkeypatch.setenv("EMBER_PLATFORMS", "cpu")
    devices_lib._backends = None
    yield ember.devices()
    devices_lib._backends = None
    ember.set_mesh(None)


@pytest.fixture
def cpu_platform(monkeypatch):
    """The CPU as the only platform for the test (the platform list is read
    again): for tests of CPU behaviour (its stage names, its eager tiers)
    also where the suite runs with the GPU as the default device."""
    from ember._src import devices as devices_lib

    monkeypatch.setenv("EMBER_PLATFORMS", "cpu")
    devices_lib._backends = None
    yield
    devices_lib._backends = None


@pytest.fixture
def x64():
    """Runs the test with jax_enable_x64 on (restored afterwards)."""
    old = ember.config.jax_enable_x64
    ember.config.update("jax_enable_x64", True)
    yield
    ember.config.update("jax_enable_x64", old)


@pytest.fixture
def compiles(monkeypatch):
    """Counts the programs compiled while the test runs (the program cache
    starts empty)."""
    from ember._src import core

    count = [0]
    real = core.Executable

    def counting(*a, **k):
        count[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(core, "Executable", counting)
    core._program_cache.clear()
    core._bytecode_index.clear()
    return count


def pytest_runtest_logreport(report):
    """With EMBER_TEST_FAILURE_LOG set (`make gpu-check`, whose suite may be
    stopped at its time limit before pytest prints its failures), each
    failure's report is appended to that file as it happens."""
    path = os.environ.get("EMBER_TEST_FAILURE_LOG")
    if path and report.failed:
        with open(path, "a") as f:
            f.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext[-3000:]}\n\n")

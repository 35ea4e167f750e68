"""Runs test/data/tpu/races.py's kernels under JAX's checked TPU interpreter
(`pltpu.InterpretParams(detect_races=True)`, 4 CPU devices) and prints
{kernel name: whether JAX found a race} as JSON. Run in a JAX virtual
environment (one MLIR per process); test_tpu_interpret.py compares it with
Ember's verdicts."""

import functools
import importlib.util
import json
import os
import pathlib
import sys
import warnings

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
warnings.simplefilter("ignore")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ipc  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import tpu as pltpu  # noqa: E402

path = pathlib.Path(__file__).resolve().parents[2] / "test" / "data" / "tpu" / "races.py"
spec = importlib.util.spec_from_file_location("races", path)
races = importlib.util.module_from_spec(spec)
spec.loader.exec_module(races)

x = jnp.arange(32 * 128, dtype=jnp.float32).reshape(32, 128) / 64
found = {}
for name, (kernel, scratch) in races.kernels(jax, jnp, pl, pltpu).items():
    f = races.on_devices(jax, functools.partial(
        pl.pallas_call, interpret=pltpu.InterpretParams(detect_races=True)), kernel, scratch)
    stdout, sys.stdout = sys.stdout, open(os.devnull, "w")  # (JAX prints each race)
    try:
        ipc.reset_tpu_interpret_mode_state()
        jax.block_until_ready(f(x))
    finally:
        sys.stdout = stdout
    found[name] = bool(ipc.races is not None and ipc.races.races_found)
print(json.dumps(found))

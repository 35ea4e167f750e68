"""Runs StableHLO modules with XLA (jaxlib's CPU client); run it with a
Python that has JAX installed, never beside Ember (one MLIR per process).

    python xla_run.py DIR

For every `DIR/NAME.mlir` (StableHLO, generic or pretty form) with inputs
`DIR/NAME.in.npz` (arrays arr_0, arr_1, ... in argument order), writes the
results to `DIR/NAME.out.npz` (arr_0, ...) or the error to `DIR/NAME.err`.
"""

import os
import sys
import traceback

import numpy as np


def main(folder):
    import jax
    import jax.extend
    from jax._src import compiler
    from jax._src.lib import lapack
    from jax._src.lib import xla_client as xc

    # The LAPACK custom calls (lapack_*_ffi) find LAPACK through SciPy once
    # this has run (JAX runs it when it first lowers a decomposition).
    lapack._lapack.initialize()

    backend = jax.extend.backend.get_backend("cpu")
    devices = xc.DeviceList(tuple(jax.devices("cpu")[:1]))
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".mlir"):
            continue
        stem = os.path.join(folder, name[:-5])
        try:
            with open(stem + ".mlir") as f:
                text = f.read()
            args = []
            if os.path.exists(stem + ".in.npz"):
                with np.load(stem + ".in.npz") as z:
                    args = [z[f"arr_{k}"] for k in range(len(z.files))]
            exe = backend.compile_and_load(text, devices, options)
            outs = exe.execute_sharded([jax.device_put(a) for a in args])
            arrays = [np.asarray(o[0]) for o in outs.disassemble_into_single_device_arrays()]
            np.savez(stem + ".out.npz", *arrays)
        except Exception:  # noqa: BLE001 - reported per module
            with open(stem + ".err", "w") as f:
                f.write(traceback.format_exc())


if __name__ == "__main__":
    main(sys.argv[1])

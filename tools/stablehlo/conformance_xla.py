"""The conformance programs (../shared/conformance) as StableHLO under XLA:
each case is traced under `jit` (its inputs become constants), exported as
StableHLO, run by XLA in a JAX process, and compared with Ember's result.

    python tools/stablehlo/conformance_xla.py CONFORMANCE_DIR JAX_PYTHON

Prints one line per case that does not pass and the counts.
"""

import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np

import ember
import ember.numpy as jnp
from ember import export


def _load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(conformance, jax_python):
    cases = sorted(f for f in os.listdir(os.path.join(conformance, "cases"))
                   if f.endswith(".py") and not f.startswith("_"))
    folder = tempfile.mkdtemp(prefix="stablehlo-conf-")
    want, status = {}, {}
    for fn in cases:
        name = fn[:-3]
        mod = _load(os.path.join(conformance, "cases", fn))
        if getattr(mod, "EXPECT", None):
            status[name] = "raises in JAX (skipped)"
            continue
        jitted = ember.jit(lambda mod=mod: mod.case(ember, jnp, np))
        try:
            text = export.export(jitted)().mlir_module()
            want[name] = [np.asarray(x) for x in ember.tree_util.tree_leaves(jitted())]
        except Exception as e:  # noqa: BLE001 - reported per case
            status[name] = f"not exported: {type(e).__name__}: {str(e).splitlines()[0][:150]}"
            continue
        with open(os.path.join(folder, name + ".mlir"), "w") as f:
            f.write(text)
    subprocess.run([jax_python, os.path.join(os.path.dirname(__file__), "xla_run.py"), folder],
                   check=True)
    for name, ref in want.items():
        err = os.path.join(folder, name + ".err")
        if os.path.exists(err):
            with open(err) as f:
                status[name] = "XLA failed: " + f.read().strip().splitlines()[-1][:200]
            continue
        with np.load(os.path.join(folder, name + ".out.npz")) as z:
            got = [z[f"arr_{k}"] for k in range(len(z.files))]
        ok = len(got) == len(ref)
        for r, g in zip(ref, got):
            if g.dtype.kind == "V" and g.dtype.itemsize == r.dtype.itemsize:
                g = g.view(r.dtype)  # npz stores bfloat16 as raw bytes
            if r.shape != g.shape or r.dtype != g.dtype:
                ok = False
            elif r.dtype.kind in "fc":
                tol = {np.dtype(np.float16): 1e-3}.get(r.dtype, 2e-5)
                ok &= bool(np.allclose(g, r, rtol=tol, atol=tol, equal_nan=True))
            elif str(r.dtype) == "bfloat16":
                ok &= bool(np.allclose(g.astype(np.float32), r.astype(np.float32), 1e-2, 1e-2,
                                       equal_nan=True))
            else:
                ok &= bool(np.array_equal(g, r))
        status[name] = "pass" if ok else "differs from Ember's result"
    counts = {}
    for name in sorted(status):
        kind = status[name].split(":")[0]
        counts[kind] = counts.get(kind, 0) + 1
        if status[name] != "pass":
            print(f"{name}: {status[name]}")
    print(counts)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

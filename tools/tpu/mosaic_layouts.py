"""Records the vector layouts Mosaic's compiler infers for Ember's Pallas TPU
kernels; run it on a machine with a TPU and JAX, never beside Ember (one MLIR
per process):

    python3 tools/tpu/mosaic_layouts.py DIR OUT.json

DIR comes from `make tpu-records` (`tools/tpu/ember_record.py`). The tool
sets libtpu's `--xla_mosaic_dump_to`, compiles each program's StableHLO
module (its kernels as `tpu_custom_call`s) with XLA:TPU, one program at a
time, and keeps, per kernel, the text Mosaic received (`original`) and the
text after its `infer-vector-layout` pass (`layouts`). The dump files a
compilation writes belong to the program compiled: they are written while it
compiles. `tools/tpu/layouts_table.py` turns OUT.json into the table
`test/test_tpu_layouts.py` compares `ember-tpu-infer-layout` with.
"""

import json
import os
import sys
import tempfile


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    folder, out = argv[0], argv[1]
    dump = tempfile.mkdtemp(prefix="mosaic-dump-")
    os.environ["LIBTPU_INIT_ARGS"] = (
        os.environ.get("LIBTPU_INIT_ARGS", "") + f" --xla_mosaic_dump_to={dump}")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from tpu_run import SkipProgram, TpuModule

    seen = set()
    result = {}
    names = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".json"))
    for name in names:
        with open(os.path.join(folder, f"{name}.json")) as f:
            rec = json.load(f)
        if not rec.get("custom_calls"):
            continue
        try:
            TpuModule(rec["stablehlo"])
        except SkipProgram as e:
            print(f"SKIP {name}: {e}", flush=True)
            continue
        fresh = sorted(set(os.listdir(dump)) - seen)
        seen.update(fresh)
        kernels = {}
        for fname in fresh:
            stem, _, rest = fname.partition("-")
            if rest.startswith("0001-") or "post-infer-vector-layout" in rest:
                with open(os.path.join(dump, fname)) as f:
                    key = "original" if rest.startswith("0001-") else "layouts"
                    kernels.setdefault(stem, {})[key] = f.read()
        result[name] = [k for _, k in sorted(kernels.items()) if len(k) == 2]
        print(f"{name}: {len(result[name])} kernel(s)", flush=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()

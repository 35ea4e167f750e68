"""Writes Ember's TPU lowering of every program of `test/data/tpu/kernels.py`
as `DIR/NAME.json` (`{"name", "custom_calls": [{"backend_config",
"kernel_name"}], "stablehlo"}`), the input of `jax_mosaic_check.py`:

    .venv/bin/python tools/tpu/ember_record.py DIR [NAME...]
"""

import importlib.util
import json
import os
import sys

import ember as jax
from ember._mlir import ir


def programs():
    """[(name, fn, args)] of test/data/tpu/kernels.py under Ember (loaded
    by the TPU example, which runs some of them)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "pallas_tpu_kernels.py")
    spec = importlib.util.spec_from_file_location("pallas_tpu_kernels", os.path.normpath(path))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return [(name, f, args) for name, (f, args) in example.cross_check_programs().items()]


def record(fn, args):
    lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=("tpu",))
    text = lowered.as_text("stablehlo")
    calls = []
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = True

    def walk(op):
        # (Calls inside loops too: a vmap over prefetched indices loops.)
        if op.name == "stablehlo.custom_call":
            a = op.attributes
            calls.append({"backend_config": ir.StringAttr(a["backend_config"]).value,
                          "kernel_name": ir.StringAttr(a["kernel_name"]).value})
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    walk(child.operation)

    with ctx:
        module = ir.Module.parse(text)
        walk(module.operation)
    return {"custom_calls": calls, "stablehlo": text}


def main():
    out = sys.argv[1]
    only = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    for name, fn, args in programs():
        if only and name not in only:
            continue
        rec = record(fn, args)
        rec["name"] = name
        with open(os.path.join(out, f"{name}.json"), "w") as f:
            json.dump(rec, f)
        print("wrote", name)


if __name__ == "__main__":
    main()

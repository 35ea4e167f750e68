"""Turns what `tools/tpu/mosaic_layouts.py` recorded on a TPU into the table
`test/python/test_tpu_layouts.py` compares `ember-tpu-infer-layout` with:

    python3 tools/tpu/layouts_table.py OUT.json test/data/tpu/mosaic_layouts.json

Per program and kernel: the kernel as Mosaic received it (Ember's serialized
kernel, deserialized by libtpu: `tpu.*` names) and, per op of Mosaic's
module after `infer-vector-layout` that has a vector operand or result, its
name (Mosaic's canonical names mapped back to the ones Ember writes), the
last vector type on its line, and its operand and result layouts as Mosaic
prints them (`32,{0,*},(8,128),-1`; `none` for scalars and buffers).
Needs no JAX: the texts are parsed with regular expressions. The parsing
helpers are shared with the test.
"""

import json
import re
import sys

# Mosaic's canonical forms of the ops Ember writes (canonicalize-mosaic).
MOSAIC_NAMES = {
    "tpu.vector_load": "vector.load",
    "tpu.reshape": "vector.shape_cast",
    "tpu.extf": "arith.extf",
    "tpu.truncf": "arith.truncf",
    "tpu.sitofp": "arith.sitofp",
    "tpu.fptosi": "arith.fptosi",
}
# Ops Mosaic adds on its way (no counterpart in Ember's kernel).
MOSAIC_ONLY = {"tpu.reinterpret_cast", "tpu.assume_layout", "tpu.relayout"}

_OP = re.compile(r"^\s*(?:%[\w#:, %]+ = )?\"?([a-z_]+\.[a-z_0-9]+)\"?")
_VEC = re.compile(r"vector<[^>]*>")


def _layout_list(line, key):
    m = re.search(key + r" = \[([^\]]*)\]", line)
    if not m:
        return None
    return [_canonical(x) for x in re.findall(r"#[\w.]+<[^>]*>|unit", m.group(1))]


def _canonical(text):
    """A layout as Mosaic prints its string: `32,{0,*},(8,128)[,-1]`."""
    m = re.match(r'#tpu\.vpad<"([^"]*)">', text)
    if m:
        return m.group(1)
    m = re.match(r"#ember_tpu\.layout<(.*)>", text)
    if m:
        return m.group(1).replace(" ", "")
    return "none"


def ops_with_layouts(text, mosaic):
    """[name, last vector type, in layouts, out layouts] per op of `text`
    (Mosaic's module after layout inference, or Ember's after
    `ember-tpu-infer-layout`) with a vector layout; Mosaic's names mapped
    to Ember's, `ember_tpu.` written `tpu.`."""
    rows = []
    for line in text.splitlines():
        m = _OP.match(line)
        if not m:
            continue
        name = m.group(1).replace("ember_tpu.", "tpu.")
        if mosaic:
            if name in MOSAIC_ONLY:
                continue
            name = MOSAIC_NAMES.get(name, name)
        ins = _layout_list(line, "in_layouts?")
        outs = _layout_list(line, "out_layouts?")
        if not any(x != "none" for x in (ins or []) + (outs or [])):
            continue
        vecs = _VEC.findall(line)
        rows.append([name, vecs[-1] if vecs else "", ins or [], outs or []])
    return rows


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        recorded = json.load(f)
    table = {}
    for program, kernels in sorted(recorded.items()):
        table[program] = [{"kernel": k["original"],
                           "mosaic": ops_with_layouts(k["layouts"], True)}
                          for k in kernels]
    with open(argv[1], "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

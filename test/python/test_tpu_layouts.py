"""`ember-tpu-infer-layout` against the layouts Mosaic's compiler infers on a
TPU v5e for Ember's own kernels (recorded by `tools/tpu/mosaic_layouts.py`
on the device, tabled by `tools/tpu/layouts_table.py` into
test/data/tpu/mosaic_layouts.json): each recorded kernel, as Mosaic received
it, goes through Ember's pass, and every op the two modules share (aligned
by name and vector type, in order: Mosaic's canonicalization rewrites bf16
arithmetic on a v5e into f32 and adds casts, which have no counterpart) must
have the operand and result layouts Mosaic gave it."""

import difflib
import importlib.util
import json
import os
import re

import pytest

from ember._mlir import ir
from ember._mlir.passmanager import PassManager
from ember._src.context import context

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TABLE = os.path.join(ROOT, "test", "data", "tpu", "mosaic_layouts.json")

_spec = importlib.util.spec_from_file_location(
    "layouts_table", os.path.join(ROOT, "tools", "tpu", "layouts_table.py"))
layouts_table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(layouts_table)


def _table():
    with open(TABLE) as f:
        return json.load(f)


def ember_layouts(kernel):
    """Ember's layouts for a kernel in Mosaic's text (`tpu.` names)."""
    text = re.sub(r"(?<![\w.])tpu\.", "ember_tpu.", kernel)
    with context():
        module = ir.Module.parse(text)
        PassManager.parse("builtin.module(ember-tpu-infer-layout)").run(module.operation)
        module.operation.verify()
        asm = module.operation.get_asm(enable_debug_info=False)
    return layouts_table.ops_with_layouts(asm, False), asm


def _splat(row):
    """Whether a row makes a vector of one value: Mosaic folds a broadcast
    scalar constant into a splat `arith.constant` and hoists it, so splats
    are compared as a set, not in order."""
    if row[0] == "arith.constant":
        return True
    return row[0] == "vector.broadcast" and all(x == "none" for x in row[2])


def compare(ember_rows, mosaic_rows):
    """(ops compared, [differences]) of two op lists: ops aligned by name
    and type, in order; each of Mosaic's constants against Ember's splats
    of its type."""

    def vectors(layouts):
        # Mosaic writes "none" for every scalar operand; Ember writes no
        # list for an op without vector operands.
        return layouts if any(x != "none" for x in layouts) else []

    ember_ops = [r for r in ember_rows if not _splat(r)]
    mosaic_ops = [r for r in mosaic_rows if not _splat(r)]
    key = lambda r: (r[0], r[1])  # noqa: E731
    sm = difflib.SequenceMatcher(None, [key(r) for r in ember_ops],
                                 [key(r) for r in mosaic_ops], autojunk=False)
    compared, diffs = 0, []
    for a, b, n in sm.get_matching_blocks():
        for k in range(n):
            e, m = ember_ops[a + k], mosaic_ops[b + k]
            compared += 1
            if (vectors(e[2]) != vectors(m[2])) or (vectors(e[3]) != vectors(m[3])):
                diffs.append((e[0], e[1], e[2], m[2], e[3], m[3]))
    splats = {}
    for r in ember_rows:
        if _splat(r):
            splats.setdefault(r[1], set()).add(tuple(r[3]))
    for m in mosaic_rows:
        if _splat(m) and m[1] in splats:
            compared += 1
            if tuple(m[3]) not in splats[m[1]]:
                diffs.append(("splat", m[1], [], [], sorted(splats[m[1]]), m[3]))
    return compared, diffs


PROGRAMS = sorted(_table())


@pytest.mark.parametrize("program", PROGRAMS)
def test_layouts_equal_mosaics(program):
    for kernel in _table()[program]:
        rows, asm = ember_layouts(kernel["kernel"])
        compared, diffs = compare(rows, kernel["mosaic"])
        assert compared > 0 or not kernel["mosaic"]
        assert not diffs, "\n".join(
            f"{d[0]} {d[1]}: in {d[2]} (Mosaic {d[3]}), out {d[4]} (Mosaic {d[5]})"
            for d in diffs)


def test_table_covers_the_programs():
    """The table holds the cross-check's kernels and most of Mosaic's ops
    with vector layouts are compared."""
    table = _table()
    assert len(table) >= 50
    total = compared = 0
    for kernels in table.values():
        for kernel in kernels:
            rows, _ = ember_layouts(kernel["kernel"])
            n, _ = compare(rows, kernel["mosaic"])
            compared += n
            total += len(kernel["mosaic"])
    # 593 of 612 when recorded (libtpu with JAX 0.10.2, TPU v5e): the rest
    # are the v5e's f32 forms of bf16 arithmetic and ops Mosaic's
    # canonicalization adds (docs/design.md, "Vector layouts checked").
    assert compared >= 0.95 * total, (compared, total)

"""ember-partition (#22) on a corpus of programs: each traced program, its
first argument split over a grid (rows, or columns, over 2 or 4 processes),
goes through the CPU pipeline in `ember-opt` (a subprocess: upstream's
partitioning asserts on IR it does not cover, which Ember must keep it
from seeing) and must come out partitioned ("spmd") or on gathered arrays
("gathered"), never an error or a crash. The values are checked under
`mpirun` (test_mpi.py, test/mpi/spmd_programs.py)."""

import pathlib
import re
import subprocess

import pytest

import ember

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPT = ROOT / "build" / "dev" / "bin" / "ember-opt"


def _load_corpus():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "partition_corpus", ROOT / "test" / "data" / "partition_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CORPUS


CORPUS = _load_corpus()


def _split_module(text, axes, grid):
    """The traced module with its first argument split (`axes` per
    dimension) over a grid of `grid` processes."""
    text = re.sub(r"(func\.func @main\(%arg0: tensor<[^>]*>)",
                  lambda m: m.group(1) + " {ember.split_axes = " + axes + "}", text, count=1)
    return re.sub(r"^module( attributes \{[^\n]*\})? \{",
                  lambda m: m.group(0) + f"\n  shard.grid @grid(shape = {grid})", text,
                  count=1, flags=re.M)


@pytest.mark.skipif(not OPT.exists(), reason="ember-opt not built")
@pytest.mark.parametrize("axes,grid", [("[[0]]", 2), ("[[0]]", 4), ("[[], [0]]", 2)])
def test_partition_corpus(tmp_path, axes, grid):
    modules = []
    for name, f, args in CORPUS:
        text = ember.jit(f).trace(*args).lower().as_text("optimize")
        modules.append(f"// {name}\n" + _split_module(text, axes, grid))
    path = tmp_path / "corpus.mlir"
    path.write_text("\n// -----\n".join(modules))
    r = subprocess.run([str(OPT), str(path), "--split-input-file", "--ember-cpu-codegen"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    kinds = re.findall(r'ember\.partition = "(\w+)"', r.stdout)
    # (Each module's entry point and its C interface wrapper carry it.)
    assert len(kinds) >= len(CORPUS), (len(kinds), r.stdout[-2000:])
    assert set(kinds) <= {"spmd", "gathered"}
    spmd = {name for (name, _, _), out in zip(CORPUS, r.stdout.split("// -----"))
            if 'ember.partition = "spmd"' in out}
    # What MLIR partitions: elementwise ops, reductions, products, their
    # gradients.
    if axes == "[[0]]":
        assert {"elementwise", "sum rows", "sum cols", "max min", "matmul", "gram",
                "keepdims", "softmax", "mlp grad"} <= spmd, sorted(spmd)

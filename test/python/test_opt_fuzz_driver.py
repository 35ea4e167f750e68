"""The coverage-guided fuzzing of ember-opt (#21, `make fuzz-opt`): the
driver (tools/ember-opt-fuzz) runs every pass of Ember's alone besides the
pipelines, and the seed corpus reaches each pass through the lit tests that
run it. (The campaign itself needs clang and libFuzzer: `make fuzz-opt`.)"""

import importlib.util
import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def _corpus_tool():
    spec = importlib.util.spec_from_file_location(
        "opt_fuzz_corpus", os.path.join(ROOT, "tools", "fuzz", "opt_fuzz_corpus.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_driver_runs_every_registered_pass():
    td = open(os.path.join(ROOT, "dialects", "EmberPasses.td")).read()
    registered = re.findall(r'Pass<"([a-z0-9-]+)"', td)
    pipelines, passes = _corpus_tool().driver_lists()
    assert sorted(passes) == sorted(registered)
    assert pipelines[0] == "" and "ember-cpu-pipeline" in pipelines


def test_seeds_pick_the_passes_their_tests_run(tmp_path):
    tool = _corpus_tool()
    out, dct = tmp_path / "seeds", tmp_path / "ember.dict"
    import sys

    argv = sys.argv
    sys.argv = ["opt_fuzz_corpus.py", "--out", str(out), "--dict", str(dct),
                "--tests", os.path.join(ROOT, "test")]
    try:
        tool.main()
    finally:
        sys.argv = argv
    picks = set()
    for name in os.listdir(out):
        head, _, module = (out / name).read_text().partition("\n")
        assert head.isdigit() and module.strip()
        picks.add(int(head))
    n = len(tool.PIPELINES)
    # The passes that lit tests run alone each get seeds.
    for p in ("ember-autodiff", "ember-batch", "ember-to-linalg", "ember-linalg-to-gpu",
              "ember-tpu-kernel", "ember-lower-copies", "ember-avoid-buffer-copies"):
        assert n + tool.PASSES.index(p) in picks, p
    assert '"ember.add"' in dct.read_text().splitlines()

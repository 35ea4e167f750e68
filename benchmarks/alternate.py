#!/usr/bin/env python3
"""Run one benchmark alternately under Ember and JAX, one process at a time,
and print both medians and the ratio (> 1: Ember is better). Alternating keeps
a noisy machine's slow phases from falling on one side only.

    python benchmarks/alternate.py --jax-python /work/jaxvenv/bin/python \\
        --repeat 5 scan_rnn.py --grad
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
THROUGHPUT = ("matmul.py", "elementwise.py", "ref_update.py")  # these print a rate, not a time

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
ap.add_argument("--jax-python", required=True, help="a Python with jax installed")
ap.add_argument("--ember-python", default=sys.executable)
ap.add_argument("--repeat", type=int, default=3)
ap.add_argument("script")
ap.add_argument("args", nargs=argparse.REMAINDER)
a = ap.parse_args()


def run(python, module):
    cmd = [python, os.path.join(HERE, a.script), "--module", module, "-q", *a.args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[-1])


ember, jax = [], []
for _ in range(a.repeat):
    ember.append(run(a.ember_python, "ember"))
    jax.append(run(a.jax_python, "jax"))
e, j = statistics.median(ember), statistics.median(jax)
ratio = e / j if a.script in THROUGHPUT else j / e
print(f"{a.script} {' '.join(a.args)}: ember {e:.4g} {ember}  jax {j:.4g} {jax}  ratio {ratio:.2f}")

"""Unpacks build/gpu-bundle.tar.xz (tools/gpu/bundle.py) and builds Ember's
Python extension modules for this machine's Python, so that Ember runs on
a machine that has none of its build dependencies (the GPU machine of
`make gpu-check`). Standard library only; needs a C++ compiler.

    python3 tools/gpu/build_bindings.py [--bundle build/gpu-bundle.tar.xz]
                                        [--dest build/gpu]

Afterwards `PYTHONPATH=<dest>/python:python` imports this checkout's Ember
with the rebuilt `ember._mlir` (python/ember/_mlir is pointed at it).
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _numpy_include():
    import numpy

    return numpy.get_include()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", default=os.path.join(ROOT, "build", "gpu-bundle.tar.xz"))
    ap.add_argument("--dest", default=os.path.join(ROOT, "build", "gpu"))
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    args = ap.parse_args()
    start = time.perf_counter()
    dest = os.path.abspath(args.dest)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    with tarfile.open(args.bundle) as tar:
        tar.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") \
            else tar.extractall(dest)
    with open(os.path.join(dest, "recipe.json")) as f:
        recipe = json.load(f)
    out_dir = os.path.join(dest, "python", "ember", "_mlir", "_mlir_libs")
    ext = sysconfig.get_config_var("EXT_SUFFIX")
    places = {"{B}": dest, "{R}": ROOT, "{PY}": sysconfig.get_paths()["include"],
              "{NP}": _numpy_include(), "{OUT}": out_dir, "{EXT}": ext}

    def fill(argv):
        out = []
        for a in argv:
            for k, v in places.items():
                a = a.replace(k, v)
            out.append(a)
        return [args.cxx if a == "{CXX}" else a for a in out]

    work = os.path.join(dest, "work")
    os.makedirs(work)

    def run(argv):
        if "-o" in argv:
            os.makedirs(os.path.dirname(os.path.join(work, argv[argv.index("-o") + 1])),
                        exist_ok=True)
        r = subprocess.run(argv, cwd=work, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"build_bindings.py: failed:\n{' '.join(argv)}\n{r.stderr[-4000:]}")

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        list(pool.map(run, [fill(c) for c in recipe["compiles"]]))
    for link in recipe["links"]:  # in order: the later ones link the earlier
        run(fill(link))
    # The libraries' names as the modules were linked against (a versioned
    # soname with an empty version ends in a dot).
    link = os.path.join(ROOT, "python", "ember", "_mlir")
    if os.path.islink(link) or os.path.exists(link):
        if os.path.isdir(link) and not os.path.islink(link):
            raise SystemExit(f"build_bindings.py: {link} is a directory; not replacing it")
        os.unlink(link)
    os.symlink(os.path.join(dest, "python", "ember", "_mlir"), link)
    print(f"build_bindings.py: {len(recipe['compiles'])} compiles and {len(recipe['links'])} "
          f"links for Python {sys.version.split()[0]} ({ext}) in "
          f"{time.perf_counter() - start:.0f} s; python/ember/_mlir -> {dest}/python/ember/_mlir")


if __name__ == "__main__":
    sys.exit(main())

"""Packs what `make gpu-check` needs on a GPU machine into build/gpu-bundle.tar.xz
(#17, item 5; `make gpu-bundle` runs this after `make build`).

The GPU machine has another Python (3.12) and none of Ember's build
dependencies, so Ember's compiled parts travel as follows:

- Ember's C API library (libEmberPythonCAPI.so: MLIR, Ember's passes and
  runtime) and the libLLVM.so it links, stripped: they do not depend on
  Python's version.
- The five nanobind modules that do (`_mlir`, `_site_initialize_0`,
  `_ember_runtime`, libMLIRPythonSupport-ember, libnanobind-ember) are built
  again there by tools/gpu/build_bindings.py for that machine's Python. Its
  recipe (recipe.json) is this build's own compile and link commands (read
  from ninja), with paths replaced by placeholders; the headers they read
  (every header ninja recorded for the compiles), the sources, and
  the two LLVM static libraries they link travel in the bundle. Python's
  and NumPy's headers are the GPU machine's own.
- The pure-Python part of the `ember._mlir` package (links resolved).
- scipy-openblas32 (site/), which the GPU machine's Python lacks.

    .venv/bin/python tools/gpu/bundle.py [--out build/gpu-bundle.tar.xz]
"""

import argparse
import io
import json
import os
import shlex
import subprocess
import sys
import sysconfig
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build", "dev")
LIBS = os.path.join(BUILD, "python_packages", "ember", "_mlir", "_mlir_libs")
SITE = sysconfig.get_path("purelib")
EXT = sysconfig.get_config_var("EXT_SUFFIX")
TARGETS = ["libnanobind-ember.so", "libMLIRPythonSupport-ember.so",
           f"_site_initialize_0{EXT}", f"_ember_runtime{EXT}", f"_mlir{EXT}"]


def _numpy_include():
    import numpy

    return numpy.get_include()


# Absolute prefixes of this build -> placeholders (longest first). {B} is the
# unpacked bundle, {R} the repository, {PY}/{NP} the target's Python and
# NumPy headers, {OUT} the package's _mlir_libs directory there.
def _prefixes():
    return sorted({
        os.path.join(SITE, "llvm", "include"): "{B}/llvm/include",
        os.path.join(SITE, "mlir", "include"): "{B}/mlir/include",
        os.path.join(SITE, "mlir", "src", "python"): "{B}/mlir/src/python",
        os.path.join(SITE, "nanobind"): "{B}/nanobind",
        BUILD: "{B}/ember-build",
        ROOT: "{R}",
        sysconfig.get_paths()["include"]: "{PY}",
        _numpy_include(): "{NP}",
        LIBS: "{OUT}",
    }.items(), key=lambda kv: -len(kv[0]))


def _placeholder(path, prefixes):
    for prefix, ph in prefixes:
        if path == prefix or path.startswith(prefix + "/"):
            return ph + path[len(prefix):]
    return None


def _ninja_commands(target):
    out = subprocess.run([os.path.join(ROOT, ".venv", "bin", "ninja"), "-C", BUILD, "-t",
                          "commands", os.path.relpath(os.path.join(LIBS, target), BUILD)],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def recipe():
    """(compile commands, link commands, files to carry {bundle path: source})."""
    prefixes = _prefixes()
    carry = {}
    compiles, links, seen = [], [], set()

    def rewrite(arg):
        for flag in ("-I", "-isystem"):
            if arg.startswith(flag) and len(arg) > len(flag):
                return flag + rewrite(arg[len(flag):])
        if arg.startswith("/"):
            ph = _placeholder(arg, prefixes)
            if ph is None:
                raise SystemExit(f"bundle.py: no placeholder for {arg}")
            if ph.startswith("{B}/") and os.path.isfile(arg):
                carry[ph[4:]] = arg
            return ph
        return arg

    for target in TARGETS:
        for line in _ninja_commands(target):
            argv = shlex.split(line.replace(": && ", "").replace(" && :", ""))
            if "-o" not in argv:
                continue
            if argv[0].endswith("ccache"):
                argv = argv[1:]
            produced = argv[argv.index("-o") + 1]
            ours = produced.startswith(("python/CMakeFiles/nanobind-ember.dir/",
                                        "python/CMakeFiles/EmberPythonModules.extension."))
            if not ours and os.path.basename(produced) not in TARGETS:
                continue  # (the C API library and what it needs: carried built)
            if produced in seen:
                continue
            seen.add(produced)
            if "-c" in argv:  # a compile: carry the headers it read
                obj = produced
                deps = subprocess.run(
                    [os.path.join(ROOT, ".venv", "bin", "ninja"), "-C", BUILD, "-t", "deps", obj],
                    capture_output=True, text=True, check=True).stdout.splitlines()[1:]
                deps = [d.strip() for d in deps if d.strip()]
                for d in deps:
                    d = os.path.normpath(os.path.join(BUILD, d))
                    ph = _placeholder(d, prefixes)
                    if ph and ph.startswith("{B}/"):
                        carry[ph[4:]] = d
                argv = [a for a in argv if a not in ("-MD",)]
                if "-MT" in argv:
                    i = argv.index("-MT")
                    del argv[i:i + 2]
                if "-MF" in argv:
                    i = argv.index("-MF")
                    del argv[i:i + 2]
                compiles.append(["{CXX}"] + [rewrite(a) for a in argv[1:]])
                continue
            argv = [a for a in argv if a != "-fuse-ld=lld"]
            fixed = ["{CXX}"]
            for a in argv[1:]:
                if a.startswith("-Wl,-rpath,"):
                    fixed.append("-Wl,-rpath,$ORIGIN")
                elif a.startswith("-Wl,-rpath-link,"):
                    continue
                elif a.endswith(".a") and a.startswith("/"):
                    name = os.path.basename(a)
                    carry[f"lib/{name}"] = a
                    fixed.append("{B}/lib/" + name)
                elif a.startswith("python_packages/ember/_mlir/_mlir_libs/"):
                    fixed.append("{OUT}/" + os.path.basename(a).replace(EXT, "{EXT}"))
                else:
                    fixed.append(rewrite(a))
            links.append(fixed)
    return compiles, links, carry


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "gpu-bundle.tar.xz"))
    args = ap.parse_args()
    compiles, links, carry = recipe()
    pkg = os.path.join(BUILD, "python_packages", "ember", "_mlir")
    tmp = args.out[:-len(".xz")] if args.out.endswith(".xz") else args.out + ".tar"
    with tarfile.open(tmp, "w", dereference=True) as tar:
        def add_bytes(name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        add_bytes("recipe.json", json.dumps(
            {"compiles": compiles, "links": links, "build_ext_suffix": EXT}, indent=1).encode())
        for name, src in sorted(carry.items()):
            tar.add(src, name)
        for dirpath, dirnames, filenames in os.walk(pkg, followlinks=True):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for fn in filenames:
                if fn.endswith(".so") or ".so." in fn or fn.endswith(".so."):
                    continue
                full = os.path.join(dirpath, fn)
                tar.add(full, "python/ember/_mlir/" + os.path.relpath(full, pkg))
        # scipy-openblas32 (pure Python around one library): Ember's BLAS
        # and LAPACK there as here (without it the runtime's plain loops
        # run, and complex eigh and SVD give NaNs).
        blas = os.path.join(SITE, "scipy_openblas32")
        for dirpath, dirnames, filenames in os.walk(blas):
            dirnames[:] = [d for d in dirnames if d not in ("__pycache__", "include")]
            for fn in filenames:
                full = os.path.join(dirpath, fn)
                tar.add(full, "site/" + os.path.relpath(full, SITE))
        # The Python-independent libraries, stripped.
        for lib in ("libEmberPythonCAPI.so.",
                    os.path.join(SITE, "llvm", "lib", "libLLVM.so")):
            src = os.path.join(LIBS, lib) if not lib.startswith("/") else lib
            stripped = os.path.join(os.path.dirname(args.out), os.path.basename(src) + "stripped")
            subprocess.run(["strip", "--strip-unneeded", "-o", stripped, src], check=True)
            tar.add(stripped, "python/ember/_mlir/_mlir_libs/" + os.path.basename(src))
            os.unlink(stripped)
    subprocess.run(["xz", "-T0", "-6", "-f", tmp], check=True)  # (-> tmp + ".xz")
    os.replace(tmp + ".xz", args.out)
    print(f"{args.out}: {os.path.getsize(args.out) / 2**20:.1f} MiB, {len(compiles)} compiles, "
          f"{len(links)} links, {len(carry)} files carried")


if __name__ == "__main__":
    sys.exit(main())

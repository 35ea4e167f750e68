"""Runs the code cells of a MyST notebook (JAX's docs) one by one, under JAX
or under Ember with the import changed, and prints each cell's output (or
its exception's type and first line) between markers, so that the two runs
can be compared with diff:

    python tools/tutorials/run_cells.py --module ember shard_map.md > ember.txt
    /path/to/jax/python tools/tutorials/run_cells.py --module jax shard_map.md > jax.txt
    diff jax.txt ember.txt

With `--module ember`, `import jax...` imports `ember...` (a meta-path
alias), which is what "changing the import" means for a user.
"""

import argparse
import contextlib
import importlib
import importlib.abc
import importlib.util
import io
import re
import sys
import traceback


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`jax` and `jax.x.y` load `ember` and `ember.x.y`."""

    def find_spec(self, name, path=None, target=None):
        if name == "jax" or name.startswith("jax."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("ember" + spec.name[3:])

    def exec_module(self, module):
        pass


def cells(text):
    """The sources of the ```{code-cell} blocks (MyST front-matter lines
    starting with ':' dropped)."""
    out = []
    for m in re.finditer(r"```\{code-cell\}[^\n]*\n(.*?)```", text, re.S):
        # IPython magics and shell escapes (`%timeit ...`, `!pip ...`) are
        # dropped line by line; a cell of nothing else is skipped.
        lines = [ln for ln in m.group(1).splitlines()
                 if not ln.startswith(":") and not ln.lstrip().startswith(("%", "!"))]
        out.append("\n".join(lines))
    return out


def run(sources, env):
    for i, src in enumerate(sources):
        print(f"=== cell {i}")
        if not any(ln.strip() and not ln.lstrip().startswith("#") for ln in src.splitlines()):
            print("(shell or magic cell skipped)")
            continue
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                code = compile(src, f"<cell {i}>", "exec")
                # The value of a last expression is shown, as in a notebook.
                tree = compile(src, f"<cell {i}>", "exec", flags=0x400)  # PyCF_ONLY_AST
                last = tree.body[-1] if tree.body else None
                import ast

                if isinstance(last, ast.Expr):
                    head = ast.Module(body=tree.body[:-1], type_ignores=[])
                    exec(compile(head, f"<cell {i}>", "exec"), env)
                    value = eval(compile(ast.Expression(last.value), f"<cell {i}>", "eval"), env)
                    if value is not None:
                        print(repr(value))
                else:
                    exec(code, env)
        except Exception as e:  # noqa: BLE001 - every error is part of the output
            first = (str(e).splitlines() or [""])[0]
            buf.write(f"!! {type(e).__name__}: {first}\n")
            if env.get("__verbose__"):
                traceback.print_exc()
        sys.stdout.write(buf.getvalue())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module", choices=["jax", "ember"], required=True)
    p.add_argument("--verbose", action="store_true")
    p.add_argument("notebook")
    args = p.parse_args()
    if args.module == "ember":
        sys.meta_path.insert(0, _Alias())
    with open(args.notebook) as f:
        sources = cells(f.read())
    run(sources, {"__name__": "__main__", "__verbose__": args.verbose})


if __name__ == "__main__":
    main()

"""The layering of the Python package, read from the source with `ast`.

`ember._src` is a layer under the public modules: no module under it imports a
public one (any `ember` module outside `_src`, except the compiled `ember._mlir`),
and its modules import each other without cycles. Every import statement
counts, wherever it is (module level, inside a function, under a condition),
relative ones resolved; importing `a.b.c` also runs the packages `a.b` and `a`
unless the importer already lives in them, so those count as imported too.
"""

import ast
import pathlib

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2] / "python" / "ember"
SRC = "ember._src"
COMPILED = "ember._mlir"


def _module_names(root, name):
    """{module name: (path, is_package)} for the .py files under `root`
    (the package `name`), skipping the compiled `_mlir` package."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "_mlir":
            continue
        parts = [name, *rel.with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (path, is_package)
    return modules


def _within(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def _ancestors(name):
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imported(module, is_package, node, known):
    """The modules of the package that one import statement imports."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".")
            if not is_package:
                base.pop()
            if node.level > 1:
                base = base[:len(base) - (node.level - 1)]
            base = ".".join(base + ([node.module] if node.module else []))
        else:
            base = node.module
        targets = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            # `from pkg import name` imports the submodule pkg.name if there is one.
            targets.append(sub if sub in known else base)
    out = set()
    own = set(_ancestors(module)) | ({module} if is_package else set())
    for t in targets:
        for name in [*_ancestors(t), t]:
            if _within(name, "ember") and name not in own and name != module:
                out.add(name)
    return out


def import_graph(root=None, name="ember"):
    """{module: {imported module: first line}} for every module of the package
    (edges into `ember._mlir` included, other packages left out)."""
    modules = _module_names(root or PACKAGE_DIR, name)
    graph = {}
    for module, (path, is_package) in modules.items():
        edges = {}
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _imported(module, is_package, node, modules):
                    if target in modules or _within(target, COMPILED):
                        edges.setdefault(target, node.lineno)
        graph[module] = edges
    return graph


def public_imports(graph):
    """Edges from a module under `ember._src` to a public module."""
    return sorted((m, t, line) for m, edges in graph.items() if _within(m, SRC)
                  for t, line in edges.items()
                  if not _within(t, SRC) and not _within(t, COMPILED))


def src_cycles(graph):
    """One cycle (a list of modules, first repeated last) per strongly
    connected component of the `ember._src` subgraph that has one, with the
    component's modules: [(cycle, sorted modules)]."""
    nodes = sorted(m for m in graph if _within(m, SRC))
    succ = {m: sorted(t for t in graph[m] if _within(t, SRC) and t in graph) for m in nodes}
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []

    def visit(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1 or v in succ[v]:
                sccs.append(set(scc))

    for v in nodes:
        if v not in index:
            visit(v)
    cycles = []
    for scc in sccs:
        start = min(scc)
        # Shortest path back to `start` inside the component (breadth first).
        parent, todo, found = {start: None}, [start], None
        while todo and found is None:
            nxt = []
            for v in todo:
                for w in succ[v]:
                    if w == start:
                        found = v
                        break
                    if w in scc and w not in parent:
                        parent[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            todo = nxt
        path, v = [], found
        while v is not None:
            path.append(v)
            v = parent[v]
        cycles.append((path[::-1] + [start], sorted(scc)))
    return cycles


def _describe_cycle(graph, cycle):
    return " -> ".join(
        f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert "ember._src.core" in graph and "ember.numpy" in graph
    assert "ember._src.core" in graph["ember._src.lax"]
    assert "ember._src.numpy.lax_numpy" in graph["ember.numpy"]
    assert not any(_within(m, COMPILED) for m in graph)


def test_src_imports_no_public_module():
    graph = import_graph()
    bad = public_imports(graph)
    assert not bad, (
        "ember._src must not import public modules (only ember._src.*, ember._mlir and "
        "third-party packages); offending imports:\n" + "\n".join(
            f"  {m} -> {t}  ({graph_path(m)}:{line})" for m, t, line in bad))


def test_src_has_no_import_cycles():
    graph = import_graph()
    cycles = src_cycles(graph)
    assert not cycles, (
        "import cycles among ember._src modules (function-level imports count too; "
        "move code to the right layer or register a hook from the higher one):\n"
        + "\n".join(f"  {_describe_cycle(graph, c)}\n    (all of {', '.join(scc)} are on "
                    "cycles with each other)" for c, scc in cycles))


def graph_path(module):
    return _module_names(PACKAGE_DIR, "ember")[module][0].relative_to(PACKAGE_DIR.parents[1])


def test_the_checks_catch_cycles_and_public_imports(tmp_path):
    """The checker itself, on a small package with each kind of violation."""
    root = tmp_path / "ember"
    files = {
        "__init__.py": "from ember import numpy\n",
        "numpy.py": "from ember._src import a\n",
        "_src/__init__.py": "",
        "_src/a.py": "from . import b\n",
        "_src/b.py": "def f():\n    from .c import g\n",
        "_src/c.py": "import ember._src.a\nfrom ember._mlir import ir\n",
        "_src/d.py": "def f():\n    import ember.numpy as jnp\n",
        "_src/pkg/__init__.py": "from . import low\n",
        "_src/pkg/low.py": "from .. import e\n",
        "_src/e.py": "from .pkg import other\n",
        "_src/pkg/other.py": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    graph = import_graph(root, "ember")
    assert public_imports(graph) == [("ember._src.d", "ember.numpy", 2)]
    cycles = sorted(c for c, _ in src_cycles(graph))
    assert cycles == [
        ["ember._src.a", "ember._src.b", "ember._src.c", "ember._src.a"],
        # importing pkg.other runs pkg/__init__, which imports low, which imports e
        ["ember._src.e", "ember._src.pkg", "ember._src.pkg.low", "ember._src.e"],
    ]
    assert "(line 2)" in _describe_cycle(graph, cycles[0])

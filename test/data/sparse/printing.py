"""How the sparse scripts print a case: its name, then its leaves (arrays as
dtype, shape and values to `digits` significant digits; strings as they are)
or the type of the error it raised."""

import numpy as np


def text(v, digits):
    if isinstance(v, str):
        return v
    a = np.asarray(v)
    if a.dtype.kind in "fc":
        return (f"{a.dtype.name}{list(a.shape)} "
                + " ".join(f"{x:.{digits}g}" for x in a.ravel()))
    return f"{a.dtype.name}{list(a.shape)} " + " ".join(str(x) for x in a.ravel())


def shower(jax, digits):
    """show(name, f): prints case `name`, the leaves of f() or its error."""
    def show(name, f):
        try:
            out = f()
            leaves = jax.tree_util.tree_leaves(out, is_leaf=lambda x: isinstance(x, str))
            print(name, "->", " | ".join(text(v, digits) for v in leaves))
        except Exception as e:  # noqa: BLE001 (the error's type is the case)
            print(name, "!!", type(e).__name__)
    return show

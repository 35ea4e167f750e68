"""JAX's `jax.experimental.jet`: Taylor-mode higher-order differentiation.

`jet(fun, primals, series)` gives the derivatives of `fun` along the curve
`x(t) = x0 + x1 t + x2 t^2 / 2! + ...` (the primals and their series) at
t = 0: `fun(x(0))` and `d^k/dt^k fun(x(t))` for k = 1..K.

JAX propagates truncated Taylor polynomials through each primitive with a
rule per primitive. Ember computes the same numbers with its forward mode:
the k-th term is k nested `jvp`s of `t -> fun(x(t))` in the scalar t, so
every function Ember differentiates has a jet, without a second table of
rules. The cost grows as 2^K evaluations (K is small in practice: jet's
uses are ODE solvers' Taylor steps and regularizers of order 2 to 4).
docs/design.md ("jet") says why."""

import math

import numpy as np

from . import ad, core, tree_util


def jet(fun, primals, series, factorial_scaled=True, **_):
    """JAX's `jet`: `(fun(*primals), series_out)`, where `series` holds, for
    each primal, its K terms (pytrees shaped as the primal) and
    `series_out` the output's K terms (the output's pytree with a list of
    K terms at each leaf, a list for a single array). With
    `factorial_scaled=False` the terms in and out are Taylor coefficients
    (the k-th divided by k!) instead of derivatives."""
    primals, series = tuple(primals), tuple(tuple(s) for s in series)
    if len(series) != len(primals):
        raise ValueError(f"jet: {len(primals)} primals but {len(series)} series")
    orders = {len(s) for s in series}
    if len(orders) != 1:
        raise ValueError(f"jet terms have inconsistent lengths for different arguments "
                         f"(got {sorted(orders)})")
    order = orders.pop() if orders else 0
    for k, (x, terms) in enumerate(zip(primals, series)):
        tree = tree_util.tree_structure(x)
        for term in terms:
            if tree_util.tree_structure(term) != tree:
                raise ValueError(f"jet: a term of argument {k} is shaped "
                                 f"{tree_util.tree_structure(term)}, its primal {tree}")
            for a, b in zip(tree_util.tree_leaves(x), tree_util.tree_leaves(term)):
                if np.shape(a) != np.shape(b):
                    raise ValueError(f"jet: a term of argument {k} has shape {np.shape(b)}, "
                                     f"its primal {np.shape(a)} (at {core.where()})")
    def scaled(tree, k, op):  # the k-th term times or over k!
        f = math.factorial(k)
        return tree_util.tree_map(lambda c: op(c, f), tree)

    if not factorial_scaled:  # coefficients to derivatives
        series = tuple(tuple(scaled(t, j + 1, lambda c, f: c * f) for j, t in enumerate(terms))
                       for terms in series)
    from .numpy import lax_numpy as jnp

    primals = tree_util.tree_map(jnp.asarray, primals)

    def along(t):
        # x(t) for every primal, then fun of it.
        args = []
        for x, terms in zip(primals, series):
            def point(x0, *ts):
                out = x0
                for j, tj in enumerate(ts):
                    out = out + tj * (t ** (j + 1) / math.factorial(j + 1))
                return out
            args.append(tree_util.tree_map(point, x, *terms))
        return fun(*args)

    # t is a weakly typed scalar: the path keeps the primals' dtypes.
    derivatives = [along]
    for _ in range(order):
        derivatives.append(lambda t, d=derivatives[-1]: ad.jvp(d, (t,), (1.0,))[1])
    t0 = 0.0
    primal_out = fun(*primals)
    terms = [derivatives[k](t0) for k in range(1, order + 1)]
    if not factorial_scaled:
        terms = [scaled(term, k + 1, lambda d, f: d / f) for k, term in enumerate(terms)]
    out_tree = tree_util.tree_structure(primal_out)
    columns = [tree_util.tree_leaves(term) for term in terms]
    series_out = tree_util.tree_unflatten(
        out_tree, [list(ts) for ts in zip(*columns)] if columns else
        [[] for _ in range(out_tree.num_leaves)])
    return primal_out, series_out

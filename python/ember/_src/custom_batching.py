"""`jax.custom_batching`: custom_vmap and sequential_vmap.

Ember's `vmap` traces the function once per example (unbatched) and the
compiler batches the traced program (`ember.vmap`, expanded in C++), so a
user's rule cannot be attached to a function called somewhere inside a
vmapped function without compiler support. What is done here:

* `vmap(f)` of a `custom_vmap` function `f` itself (any nesting of vmaps
  around it) calls the user's rule with the batched arguments, as JAX does
  (`batching._vmap_traced` asks a function for its `vmap_with_rule`).
* Called inside a function that vmap batches, `f` is a call that the
  compiler batches by the rule (`batching.call_with_rule`: the rule is
  traced for the enclosing vmap's size with every argument batched, and
  `ember-batch` calls it in place of batching `f`'s ops).
"""

import functools

from . import batching, control_flow, core, tree_util
from .api_util import resolve_kwargs
from .core import as_value
from .numpy import lax_numpy as jnp

__all__ = ["custom_vmap", "sequential_vmap"]


class custom_vmap:
    """`jax.custom_batching.custom_vmap`: a function with a user-defined
    vmap rule `rule(axis_size, in_batched, *args) -> (out, out_batched)`."""

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    def __getattr__(self, name):
        return getattr(self.fun, name)

    def def_vmap(self, vmap_rule):
        self.vmap_rule = vmap_rule
        return vmap_rule

    def _positional(self, args, kwargs):
        return resolve_kwargs(self.fun, args, kwargs, "custom_vmap")

    def _check_rule(self):
        if not self.vmap_rule:
            raise AttributeError("No batching rule defined for custom_vmap function "
                                 f"{getattr(self.fun, '__name__', 'fun')} using def_vmap.")

    def __call__(self, *args, **kwargs):
        self._check_rule()
        args = self._positional(args, kwargs)
        if batching.enclosing_vmap() is None:
            return self.fun(*args)
        # Inside a vmapped function: a call that vmap batches by the rule
        # (with the arguments that vary over the lanes flagged batched), as
        # JAX's vmap applies it there.
        leaves, treedef = tree_util.tree_flatten(args)
        if not all(isinstance(x, core.Value) for x in leaves):
            return self.fun(*args)
        store = {}

        def plain(*xs):
            out = self.fun(*tree_util.tree_unflatten(treedef, list(xs)))
            out_leaves, store["tree"] = tree_util.tree_flatten(out)
            return out_leaves

        def rule(axis_data, batched, *xs):
            out_leaves, _, flags = _rule_outputs(self, axis_data.size, treedef,
                                                 batched, list(xs))
            return [batching.to_leading(x, 0 if b else None, axis_data.size)
                    for x, b in zip(out_leaves, flags)]

        outs = batching.call_with_rule(
            plain, leaves, rule, f"custom_vmap {getattr(self.fun, '__name__', 'fun')}")
        return tree_util.tree_unflatten(store["tree"], outs)

    def vmap_with_rule(self, in_axes, out_axes, axis_size, args, kwargs):
        return _apply_rule(self, in_axes, out_axes, axis_size, args, kwargs)


def _apply_rule(f, in_axes, out_axes, axis_size, args, kwargs):
    """`vmap(f, in_axes, out_axes, axis_size)(*args, **kwargs)` by f's rule."""
    f._check_rule()
    args = f._positional(args, kwargs)
    if isinstance(in_axes, tuple) and len(in_axes) < len(args):
        in_axes = in_axes + (0,) * (len(args) - len(in_axes))  # (resolved keywords)
    leaves, treedef = tree_util.tree_flatten(args)
    axes = batching._axes_for(in_axes, args, "in_axes")
    sizes = {as_value(x).shape[ax] for x, ax in zip(leaves, axes) if ax is not None}
    if axis_size is not None:
        sizes.add(axis_size)
    if len(sizes) != 1:
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped: "
                         f"{sorted(sizes)} (at {core.where()})" if sizes else
                         "vmap must have at least one non-None value in in_axes")
    n = sizes.pop()
    moved = [x if ax is None else jnp.moveaxis(as_value(x), ax, 0) for x, ax in
             zip(leaves, axes)]
    out_leaves, out_tree, flags = _rule_outputs(f, n, treedef,
                                                [ax is not None for ax in axes], moved)
    out = tree_util.tree_unflatten(out_tree, out_leaves)
    oaxes = batching._axes_for(out_axes, out, "out_axes", n)
    final = []
    for x, b, ax in zip(out_leaves, flags, oaxes):
        x = as_value(x)
        if ax is None:
            if b:
                raise ValueError("vmap has mapped output but out_axes is None")
            final.append(x)
            continue
        if not b:
            x = jnp.broadcast_to(x, (n,) + tuple(x.shape))
        final.append(jnp.moveaxis(x, 0, ax % x.ndim) if ax % x.ndim else x)
    return tree_util.tree_unflatten(out_tree, final)


def _rule_outputs(f, n, treedef, batched, args):
    """The rule of `f` on `args` (flat, rebuilt by `treedef`) for `n` lanes:
    (its flat results, their tree, whether each is batched), with JAX's
    error for a batching specification of another structure."""
    in_batched = list(tree_util.tree_unflatten(treedef, batched))
    out, out_batched = f.vmap_rule(n, in_batched, *tree_util.tree_unflatten(treedef, args))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    flags = tree_util.tree_leaves(out_batched)
    if len(flags) != len(out_leaves):
        raise ValueError("structure of output value and output batching specification "
                         "returned by custom vmap rule "
                         f"({getattr(f.vmap_rule, '__name__', 'rule')}) do not match: "
                         f"{out_tree} and {tree_util.tree_structure(out_batched)} "
                         f"(at {core.where()})")
    return out_leaves, out_tree, flags


def sequential_vmap(f):
    """`jax.custom_batching.sequential_vmap`: `f` as a custom_vmap whose
    rule maps it over the batch with a loop (`lax.map`)."""
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        del axis_size
        flags, treedef = tree_util.tree_flatten(list(in_batched))
        leaves = tree_util.tree_leaves(list(args))
        mapped = [x for x, b in zip(leaves, flags) if b]

        def one(xs):
            it = iter(xs)
            full = [next(it) if b else x for x, b in zip(leaves, flags)]
            return f(*tree_util.tree_unflatten(treedef, full))

        out = control_flow.map(one, mapped)
        return out, tree_util.tree_map(lambda _: True, out)
    return f

"""Flattening pytree functions for tracing, shared by `jit` and every
transformation (grad, vjp, jvp, vmap, custom_jvp/custom_vjp, ...)."""

import inspect

import numpy as np

from ember._mlir import ir

from . import core, hitypes, tree_util
from .core import as_value


def flatten_args(args, kwargs=None):
    """The leaves of `(args, kwargs)` and their treedef, the `in_tree` of `flatten_fun`."""
    return tree_util.tree_flatten_lo((tuple(args), dict(kwargs or {})))


class _StaticLeaf:
    """An output of a traced function that is a Python object, not an array
    (a transformation's `has_aux` string): a pytree node without children
    that unflattens to the object."""

    def __init__(self, value):
        self.value = value


tree_util.register_pytree_node(_StaticLeaf, lambda s: ((), s.value), lambda v, _: v)


def _static_object(v):
    """Whether output leaf `v` is a Python object a transformation returns
    as it is (JAX returns `has_aux` values it never traced unchanged)."""
    if isinstance(v, (str, bytes)):
        return True
    return not (isinstance(v, (core.Value, np.ndarray, np.generic, bool, int, float, complex))
                or hitypes.is_hi(v) or getattr(v, "_is_ref", False)
                or hasattr(v, "__jax_array__"))


def float0_static(out, static_objects=False):
    """`out` with its float0 leaves (JAX's (co)tangents of integer values,
    which no program computes), and with `static_objects` its Python objects
    (`_static_object`), as nodes that unflatten to them."""
    if not static_objects and not any(core.is_float0(v) for v in tree_util.tree_leaves(out)):
        return out
    return tree_util.tree_map(lambda v: _StaticLeaf(v) if core.is_float0(v) or (
        static_objects and _static_object(v)) else v, out)


def flatten_fun(fun, in_tree=None, static=(), static_objects=False,
                traced_for="a transformation"):
    """`fun` as a function of flat array leaves, for tracing.

    `in_tree` is the treedef of `(args, kwargs)` of the arguments passed as
    leaves (see `flatten_args`), or None when the leaves are the positional
    arguments themselves. `static` lists `(key, value)` pairs of static
    arguments, put back before each call: an int key is a position among the
    positional arguments, a str key a keyword argument.

    Returns `(flat_fun, out_tree)`: `flat_fun(*leaves)` calls `fun` and returns
    the leaves of its output as values; `out_tree()` is the treedef of the
    output of the latest call. With `static_objects` (transformations), leaves
    that are Python objects rather than arrays stay in the treedef instead.
    """
    positional = sorted((s for s in static if isinstance(s[0], int)), key=lambda s: s[0])
    keywords = [(k, v) for k, v in static if isinstance(k, str)]
    store = {}

    def flat_fun(*leaves):
        if in_tree is None:
            args, kwargs = list(leaves), {}
        else:
            dyn_args, dyn_kwargs = tree_util.tree_unflatten(in_tree, list(leaves))
            args, kwargs = list(dyn_args), dict(dyn_kwargs)
        for i, v in positional:
            args.insert(i, v)
        for k, v in keywords:
            kwargs[k] = v
        out = fun(*args, **kwargs)
        # float0 (co)tangents (`grad` with `allow_int`) are no program's
        # values: they stay in the treedef, as `has_aux` objects do.
        # (One pass: a _StaticLeaf unflattens to its object.)
        out = float0_static(out, static_objects)
        out_leaves, store["tree"] = tree_util.tree_flatten_lo(out)
        for x in out_leaves:
            if getattr(x, "_is_ref", False):
                path = getattr(x, "_arg_path", None)
                raise core.type_error(
                    f"function {core.describe_function(fun)} traced for {traced_for} "
                    "returned a mutable array "
                    f"reference of type {x!r}, but mutable array references cannot be "
                    "returned." + (f"\n\nThe returned mutable array was passed in as the "
                                   f"argument {path}." if path else ""))
        return [as_value(x) for x in out_leaves]

    flat_fun.fun = fun

    def out_tree():
        return store["tree"]

    return flat_fun, out_tree


class Traced:
    """A function traced as a private MLIR function of the current module (the
    callee of a transformation op); `fun`, `in_tree`, `static` and
    `static_objects` (outputs that are Python objects, for `has_aux`) as for
    `flatten_fun`."""

    def __init__(self, fun, in_avals, in_tree=None, static=(), sources=None, refs_ok=None,
                 differentiated=False, policy=None, concrete=False, static_objects=False):
        flat, out_tree = flatten_fun(fun, in_tree, static, static_objects)
        # Refs from outside that the function writes: their final values are
        # the last results (`n_out` are the function's own), which only a
        # transformation that can update them (`refs_ok`) accepts.
        self.ref_outs = []
        self.name, self.out_avals, self.captured = core.trace_subfunction(
            flat, in_avals, sources=sources, ref_outs=self.ref_outs,
            differentiated=differentiated, policy=policy, concrete=concrete)
        self.out_tree = out_tree()
        self.n_out = len(self.out_avals) - len(self.ref_outs)
        if self.ref_outs and refs_ok is not True:
            raise core.type_error(refs_ok or (
                "a mutable array reference (Ref) from outside this function was written "
                "inside it, which this transformation does not support; pass the ref's "
                "value in and return its new value instead"))
        if self.ref_outs and differentiated:
            self._check_plumbing_refs(len(in_avals))

    def _check_plumbing_refs(self, n_args):
        """JAX's error for a value that depends on the differentiated
        arguments written into a ref from outside the function (a ref that
        is not differentiated): found by following the traced function's
        def-use chains from its float arguments (ops with a zero derivative
        and integer results stop them; a loop's carries and a conditional's
        results are followed one by one, so that a ref counting iterations
        beside a differentiated carry is not reported). The same analysis as
        `markActive` in ember-autodiff, which checks IR that passes refs."""
        trace = core.current_trace()
        func = next(op.operation for op in trace.module.body.operations
                    if op.operation.name == "func.func"
                    and ir.StringAttr(op.operation.attributes["sym_name"]).value == self.name)
        block = func.regions[0].blocks[0]
        active = {a for a in list(block.arguments)[:n_args] if _is_inexact(a.type)}
        stops = {"ember.stop_gradient", "ember.floor", "ember.ceil", "ember.sign",
                 "ember.round_nearest_afz", "ember.round_nearest_even"}

        def mark(v):
            if _is_inexact(v.type) and v not in active:
                active.add(v)
                return True
            return False

        def uses_active(op):
            if any(v in active for v in op.operands):
                return True
            return any(uses_active(inner.operation) for region in op.regions
                       for b in region.blocks for inner in b.operations)

        def visit_block(b):
            for op in b.operations:
                op = op.operation
                if op.name != "func.return":
                    visit(op)

        def visit(op):
            if op.name == "ember.while":
                cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]

                def carry(i):
                    mark(cond.arguments[i])
                    return mark(body.arguments[i])

                for i, v in enumerate(op.operands):
                    if v in active:
                        carry(i)
                grew = True
                while grew:
                    visit_block(body)
                    grew = False
                    for i, v in enumerate(list(body.operations)[-1].operands):
                        if v in active:
                            grew |= carry(i)
                for i, r in enumerate(op.results):
                    if body.arguments[i] in active:
                        mark(r)
            elif op.name == "ember.case":
                for region in op.regions:
                    b = region.blocks[0]
                    visit_block(b)
                    for i, v in enumerate(list(b.operations)[-1].operands):
                        if v in active:
                            mark(op.results[i])
            elif op.name not in stops and uses_active(op):
                for r in op.results:
                    mark(r)

        visit_block(block)
        ret = list(block.operations)[-1].operation
        for ref, v in zip(self.ref_outs, list(ret.operands)[self.n_out:]):
            if v in active:
                raise core.type_error(
                    "performing a set/swap operation with a differentiated value on a "
                    f"non-differentiated array reference of type Ref{{{ref.aval.str_short()}}}. "
                    "Move the array reference to be an argument of the differentiated function?")


def _is_inexact(t):
    elt = str(ir.RankedTensorType(t).element_type)
    return elt.startswith(("f", "bf", "complex"))


def with_dynamic(fun, args, positions):
    """`fun` as a function of the arguments at `positions` only, the others
    fixed to their values in `args` (static arguments of a transformation)."""
    def dynamic(*dyn):
        full = list(args)
        for i, v in zip(positions, dyn):
            full[i] = v
        return fun(*full)
    return dynamic


def static_positions(args, dynamic):
    """Positions of arguments that are not array data (functions, strings,
    Python scalars that are not differentiated): they stay Python values."""
    out = []
    for i, a in enumerate(args):
        if i in dynamic or isinstance(a, (core.Value, np.ndarray, np.generic)):
            continue
        if getattr(a, "_is_ref", False):
            continue  # a Ref argument (see api._with_ref_args)
        if hitypes.is_hi(a):
            continue  # a hijax value
        leaves = tree_util.tree_leaves_lo(a)
        if leaves and all(isinstance(x, (core.Value, np.ndarray, np.generic, int, float,
                                         complex, bool)) for x in leaves) and \
                not isinstance(a, (int, float, complex, bool)):
            continue  # a pytree of array data
        try:
            hash(a)
        except TypeError:
            continue
        out.append(i)
    return out


def argument_paths(fun, args, kwargs, skip=()):
    """JAX's names of the leaves of a call's arguments, in the order
    `flatten_args` flattens them (keywords sorted): [(path, leaf)], the path
    being the parameter's name then the leaf's keys (`x`, `y[0]`,
    `rest[1]['a']`, a keyword's name). Positions in `skip` (static
    arguments) are left out."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), "args")
    named = [(positional[i] if i < len(positional) else f"{star}[{i - len(positional)}]", a)
             for i, a in enumerate(args) if i not in skip]
    named += [(k, kwargs[k]) for k in sorted(kwargs)]
    return [(name + tree_util.keystr(path), leaf) for name, a in named
            for path, leaf in tree_util.tree_flatten_with_path(a)[0]]


def resolve_kwargs(fun, args, kwargs, what):
    """`args` and `kwargs` of a call of `fun` as positional arguments, its
    defaults filled in (as JAX resolves the arguments of `custom_jvp`,
    `custom_vjp` and `custom_vmap` functions, whose rules take positional
    arguments only)."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        if not kwargs and isinstance(e, ValueError):
            return tuple(args)  # no signature to read: the arguments as given
        raise TypeError(f"The input arguments to the {what}-decorated function "
                        f"{getattr(fun, '__name__', 'fun')} could not be resolved to "
                        f"positional-only arguments. Binding failed with the error:\n{e}"
                        ) from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"The input arguments to the {what}-decorated function "
                        f"{getattr(fun, '__name__', 'fun')} could not be resolved to "
                        f"positional-only arguments: keyword-only arguments "
                        f"{sorted(bound.kwargs)}")
    return bound.args

"""`jax.checkpoint` / `jax.remat`, its policies, `checkpoint_name` and the
report of saved residuals (`jax.ad_checkpoint`).

A checkpointed function is staged as an `ember.custom_vjp_call` marked
`ember.remat` whose callee is traced with the policy: each primitive applied
there asks the policy (JAX's signature: the primitive, the input avals, the
primitive's params) and the ops whose results it saves are marked
`ember.saveable`. ember-autodiff keeps those values in the forward pass and
recomputes the rest in the backward pass (docs/decisions.md, "Checkpoint").
"""

import dataclasses
import functools
import inspect

import numpy as np

from ember._mlir import ir

from . import compiler, core, tree_util
from .ad import custom_vjp, vjp
from .api_util import flatten_args, with_dynamic
from .core import Offloadable, Recompute, Saveable, as_value
from .jaxpr import _type_str

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "print_saved_residuals", "remat"]


# --------------------------------------------------------------------------
# checkpoint_name
# --------------------------------------------------------------------------


def _name_emit(trace, vals, avals, name):
    return trace.emit("ember.checkpoint_name", vals, avals,
                      {"name": ir.StringAttr.get(name, trace.ctx)})


# JAX's primitive is `name`; policies compare `prim.name` with it.
name_p = core.Primitive("name", lambda x, name: x, _name_emit)


def checkpoint_name(x, name):
    """Names the arrays of `x` (a pytree) for checkpoint policies such as
    `save_only_these_names`; otherwise the identity."""
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name expects a str name, got {type(name).__name__} "
                        f"(at {core.where()})")
    return tree_util.tree_map(lambda v: name_p.bind(as_value(v), name=name), x)


# --------------------------------------------------------------------------
# Policies
# --------------------------------------------------------------------------


def _is_dot(prim):
    return getattr(prim, "name", None) == "dot_general"


def _no_batch_dims(params):
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


def _named(prim, params):
    return params.get("name") if getattr(prim, "name", None) == "name" else None


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
    saveable_names: frozenset

    def __call__(self, prim, *_, **params):
        return _named(prim, params) in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
    names: frozenset

    def __call__(self, prim, *_, **params):
        name = _named(prim, params)
        return name is not None and name not in self.names


class checkpoint_policies:
    """JAX's rematerialization policies: callables `(prim, *avals, **params)`
    deciding whether the forward pass may keep a primitive's results."""

    @staticmethod
    def everything_saveable(*_, **__):
        return True

    @staticmethod
    def nothing_saveable(*_, **__):
        return False

    @staticmethod
    def dots_saveable(prim, *_, **__):
        return _is_dot(prim)

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *_, **params):
        return _is_dot(prim) and _no_batch_dims(params)

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src, offload_dst):
        def policy(prim, *_, **params):
            if _is_dot(prim) and _no_batch_dims(params):
                return Offloadable(offload_src, offload_dst)
            return Recompute
        return policy

    @staticmethod
    def save_only_these_names(*names_which_can_be_saved):
        return SaveOnlyTheseNames(frozenset(names_which_can_be_saved))

    @staticmethod
    def save_any_names_but_these(*names_not_to_save):
        return SaveAnyNamesButThese(frozenset(names_not_to_save))

    @staticmethod
    def save_anything_except_these_names(*names_not_to_save):
        names = frozenset(names_not_to_save)

        def policy(prim, *_, **params):
            return _named(prim, params) not in names
        return policy

    @staticmethod
    def save_from_both_policies(policy_1, policy_2):
        def policy(prim, *avals, **params):
            return (core.policy_saves(policy_1(prim, *avals, **params))
                    or core.policy_saves(policy_2(prim, *avals, **params)))
        return policy

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                          names_which_can_be_offloaded, offload_src,
                                          offload_dst):
        saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
        if saved & offloaded:
            raise ValueError(
                "The names should be exclusive and should not intersect in "
                "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
                f"names_which_can_be_saved={saved}, names_which_can_be_offloaded="
                f"{offloaded} and the intersection={saved & offloaded}")

        def policy(prim, *_, **params):
            name = _named(prim, params)
            if name in saved:
                return Saveable
            if name in offloaded:
                return Offloadable(offload_src, offload_dst)
            return Recompute
        return policy


# --------------------------------------------------------------------------
# checkpoint
# --------------------------------------------------------------------------


def checkpoint(fun=None, *, prevent_cse=True, policy=None, static_argnums=()):
    """`jax.checkpoint` / `jax.remat`: the function's residuals are not kept
    for the backward pass but recomputed from its inputs there, except the
    values `policy` saves. Staged as an `ember.custom_vjp_call` marked
    `ember.remat`; ember-autodiff transposes it to the VJP of the function
    on its inputs, closed-over values and saved values (so the rest of its
    forward pass runs again) and differentiates it directly in forward mode."""
    if fun is None:
        return lambda f: checkpoint(f, prevent_cse=prevent_cse, policy=policy,
                                    static_argnums=static_argnums)
    if policy is checkpoint_policies.nothing_saveable:
        policy = None
    static = set(static_argnums if isinstance(static_argnums, (tuple, list))
                 else (static_argnums,))

    @functools.wraps(fun)
    def rematted(*args, **kwargs):
        if not core._trace_stack or policy is checkpoint_policies.everything_saveable:
            # Nothing is differentiated here, or everything is kept: the
            # function itself, on arrays and giving arrays (JAX binds its
            # remat primitive, so Python scalars come back as arrays).
            args = [a if i in static else tree_util.tree_map(_array, a)
                    for i, a in enumerate(args)]
            return tree_util.tree_map(_array, fun(*args, **kwargs))
        # Keyword arguments (a layer's `train=`) are closed over: arrays
        # among them are differentiated as closed-over values are.
        f = functools.partial(fun, **kwargs) if kwargs else fun
        positions = [i for i in range(len(args)) if i not in static]
        dynamic = with_dynamic(f, args, positions)
        call = custom_vjp(dynamic)
        call.defvjp(lambda *dyn: (dynamic(*dyn), dyn),
                    lambda dyn, ct: vjp(dynamic, *dyn)[1](ct))
        call._remat = (policy, prevent_cse)
        return call(*[args[i] for i in positions])

    return rematted


remat = checkpoint


def _array(v):
    """A Python or NumPy scalar or array as an array; anything else as is."""
    if isinstance(v, (bool, int, float, complex, np.generic, np.ndarray)):
        return as_value(v)
    return v


# --------------------------------------------------------------------------
# Saved residuals
# --------------------------------------------------------------------------


def _argument_names(f, args, kwargs):
    """JAX's names of the leaves of `(args, kwargs)`: the parameter's name
    with the leaf's key path (`params[0]`, `b['k']`)."""
    try:
        sig = inspect.signature(f)
        bound = sig.bind(*args, **kwargs)
        names = list(bound.arguments)
        positional = names[:len(args)]
    except (TypeError, ValueError):
        positional = [None] * len(args)
    out = []
    for i, a in enumerate(args):
        for path, _ in tree_util.tree_flatten_with_path(a)[0]:
            base = positional[i] if i < len(positional) and positional[i] else f"args[{i}]"
            out.append(base + tree_util.keystr(path))
    for k in kwargs:
        for path, _ in tree_util.tree_flatten_with_path(kwargs[k])[0]:
            out.append(k + tree_util.keystr(path))
    return out


def saved_residuals(f, *args, **kwargs):
    """[(aval text, description)] of the values the forward pass of
    `vjp(f, *args, **kwargs)` keeps for the backward pass, as Ember's
    ember-autodiff computes them (arguments first, then values in program
    order)."""
    leaves, in_tree = flatten_args(args, kwargs)
    vals = [as_value(x) for x in leaves]
    names = _argument_names(f, args, kwargs)

    def flat(*xs):
        a, k = tree_util.tree_unflatten(in_tree, list(xs))
        return f(*a, **k)

    def pulled(*xs):
        out, pull = vjp(flat, *xs)
        cts = tree_util.tree_map(lambda o: as_value(o) * 0 + 1, out)
        return tree_util.tree_leaves(pull(cts))

    module, _ = core.trace_function(pulled, [v.aval for v in vals])
    with core.context():
        main = module.body.operations[0]
        for op in main.regions[0].blocks[0].operations:
            if op.operation.name == "ember.vjp":
                op.attributes["ember.record_residuals"] = ir.UnitAttr.get()
        target = compiler.get_target()
        compiler.run_pipeline(module, target, upto=target.stages[0][0], keep_last=False)
        attrs = module.operation.attributes
        entries = attrs["ember.residuals"] if "ember.residuals" in attrs else []
        out = []
        for e in entries:
            e = ir.DictAttr(e)
            aval = _type_str(ir.TypeAttr(e["type"]).value)
            if "argument" in e:
                i = ir.IntegerAttr(e["argument"]).value
                what = (f"from the argument {names[i]}" if i < len(names)
                        else "from a value closed over")
            elif "constant" in e:
                what = "from a constant"
            elif "name" in e:
                what = (f"named '{ir.StringAttr(e['name']).value}' from "
                        f"{ir.StringAttr(e['loc']).value}")
            else:
                what = (f"output of {ir.StringAttr(e['op']).value} from "
                        f"{ir.StringAttr(e['loc']).value}")
            out.append((aval, what))
    return out


def print_saved_residuals(f, *args, **kwargs):
    """Prints `saved_residuals(f, *args, **kwargs)`, one value per line."""
    for aval, what in saved_residuals(f, *args, **kwargs):
        print(aval, what)

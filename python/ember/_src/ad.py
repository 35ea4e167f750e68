"""Differentiation API: grad, value_and_grad, vjp, jvp, linearize, jacfwd,
jacrev, hessian, custom_jvp, custom_vjp (stop_gradient is a lax primitive;
checkpoint is in ad_checkpoint.py).

Each transformation traces the function into a private MLIR function and emits
an `ember.jvp` / `ember.vjp` op that references it by symbol; the
`ember-expand-transforms` pass (C++) expands those ops, innermost first, when the
enclosing function is compiled. Outside any trace, the whole transformed call
is compiled and run like a jitted function.
"""

import functools
import threading

import numpy as np

from ember._mlir import ir

from . import api as _api
from . import core, dtypes, hitypes, lax, state, tree_util
from .api import eager_transform
from .api_util import Traced, flatten_args, resolve_kwargs, static_positions, with_dynamic
from .batching import vmap
from .core import as_value
from .mesh import cotangent_sharding
from .numpy import lax_numpy as jnp

# --------------------------------------------------------------------------
# Emitting transformation ops
# --------------------------------------------------------------------------


def _emit(name, operands, result_avals, attributes):
    trace = core.current_trace()
    vals = [trace.to_value(v) for v in operands]
    return trace.emit(name, vals, result_avals, attributes)


def _call(callee, operands, out_avals):
    return _emit("func.call", operands, out_avals,
                 {"callee": ir.FlatSymbolRefAttr.get(callee, core.context())})


def _transform(kind, callee, primals, extra, wrt, result_avals, effects=0):
    ctx = core.context()
    attrs = {"callee": ir.FlatSymbolRefAttr.get(callee, ctx),
             "wrt": core.i64_array_attr(wrt),
             "operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(primals), len(extra)], ctx)}
    if effects:
        attrs["effects"] = core.i64_attr(effects)
    return _emit(f"ember.{kind}", list(primals) + list(extra), result_avals, attrs)


# Backward-pass effects (refs a custom_vjp's bwd writes, e.g. JAX's
# `stash_grads`): each function traced for `vjp` collects, in forward
# order, (trace, refs) of the custom_vjp calls made in it; its ember.vjp
# returns their new values (`effects`), which are bound to the refs.
class _EffectFrames(threading.local):
    def __init__(self):
        self.frames = []


_effect_frames = _EffectFrames()


# custom_vjp forward passes of a `vjp` taken outside `jit`, kept for its
# backward function (JAX runs `fwd` once, when `vjp` is called, and `bwd`
# when the backward function is; Ember's backward program traces the
# function again, and takes each custom_vjp call's `fwd` from here instead
# of running the user's Python `fwd` a second time).
class _FwdCache(threading.local):
    def __init__(self):
        self.recording = None  # a list the calls append to, while recording
        self.replaying = None  # (entries, [next index]) while replaying


_fwd_cache = _FwdCache()


def _function_texts(name):
    """The text of function `name` of the module being traced, with the
    functions it calls (transitively), as one module."""
    import re

    funcs = {}
    for op in core.current_trace().root.module.body.operations:
        op = op.operation
        if op.name == "func.func":
            funcs[ir.StringAttr(op.attributes["sym_name"]).value] = op
    out, todo, seen = [], [name], set()
    while todo:
        n = todo.pop()
        if n in seen or n not in funcs:
            continue
        seen.add(n)
        text = funcs[n].get_asm(enable_debug_info=False)
        out.append(text)
        todo.extend(re.findall(r"@([\w$.]+)", text))
    return "module {\n" + "\n".join(out) + "\n}", sorted(seen)


def _import_functions(text, names, main):
    """Adds the functions of `text` to the module being traced under fresh
    names; returns `main`'s new name."""
    root = core.current_trace().root
    fresh = {}
    for n in names:
        root._counter += 1
        fresh[n] = f"{n}_r{root._counter}"
    with core.context():
        module = ir.Module.parse(text)
        for op in module.body.operations:
            old = ir.SymbolTable.get_symbol_name(op.operation).value
            ir.SymbolTable.replace_all_symbol_uses(old, fresh[old], module.operation)
            ir.SymbolTable.set_symbol_name(op.operation, fresh[old])
        at = ir.InsertionPoint(root.module.body)
        for op in module.body.operations:
            op.operation.clone(ip=at)
    return fresh[main]


class _Replayed:
    """A custom_vjp's `fwd` imported from the forward pass (as a Traced)."""

    def __init__(self, name, out_avals):
        self.name, self.out_avals, self.captured = name, out_avals, []


def _replayed_fwd(rule, avals, store):
    """The call's `fwd` from the forward pass when replaying it (its store
    filled in as tracing it would), or None."""
    if _fwd_cache.replaying is None or rule._remat:
        return None
    entries, at = _fwd_cache.replaying
    if at[0] >= len(entries):
        _fwd_cache.replaying = None
        return None
    entry = entries[at[0]]
    at[0] += 1
    if entry is None or entry["rule"] is not rule or entry["avals"] != \
            [(tuple(a.shape), a.dtype, a.weak_type) for a in avals]:
        _fwd_cache.replaying = None  # (another path: trace from here on)
        return None
    store.update(entry["store"])
    name = _import_functions(entry["text"], entry["names"], entry["main"])
    return _Replayed(name, entry["out_avals"])


def _record_fwd(rule, avals, fw, store):
    if _fwd_cache.recording is None or rule._remat:
        return
    if fw.captured or store.get("res_refs"):
        _fwd_cache.recording.append(None)  # (closes over values: traced again)
        return
    text, names = _function_texts(fw.name)
    _fwd_cache.recording.append({
        "rule": rule, "avals": [(tuple(a.shape), a.dtype, a.weak_type) for a in avals],
        "text": text, "names": names, "main": fw.name, "out_avals": list(fw.out_avals),
        "store": dict(store)})


def _is_float(aval):
    return dtypes.is_inexact(aval.dtype)


def _zeros(aval):
    return lax.full(aval.shape, 0, aval.dtype)


def _plain_leaves(treedef):
    """Per leaf of `treedef` (hi values expanded): whether it is an array of
    its own rather than part of a hi value."""
    out = []

    def walk(t, hi):
        if t.kind is None:
            out.append(not hi)
        for c in t.children:
            walk(c, hi or t.kind is tree_util.HiNode)

    walk(treedef, False)
    return out


# --------------------------------------------------------------------------
# vjp / grad
# --------------------------------------------------------------------------


class _ForwardOnly(str):
    """The `differentiated` mark ("vjp") of a function traced for `vjp`
    whose backward pass this program never builds (`vjp`'s forward half
    outside `jit`): custom_vjp rules inside trace `fwd` but not `bwd`, which
    JAX traces only when a cotangent arrives."""


def _vjp_traced(fun, primals, has_aux, replay=False, forward_only=False):
    """(out, vjp_fun, aux, out_tree) of `fun` at `primals` (a tuple of
    arguments). `vjp_fun(ct, want=None)`: `want` (a bool per argument) leaves
    out the gradients nobody wants (None in their place). `replay`: the
    forward pass was run already (a backward pass compiled on its own), so
    the refs it writes keep the values they have; the primals are the
    concrete values `vjp` was called with outside `jit`, so Python control
    flow on them also works when the backward function is called under `jit`
    (as JAX's, which holds residuals, not `fun`)."""
    # (Hi values: their arrays and tangent carriers, `hitypes.py`.)
    leaves, treedef = hitypes.with_carriers(*tree_util.tree_flatten_lo(primals))
    vals = [as_value(x) for x in leaves]
    in_tree = tree_util.PyTreeDef(tuple, None, [treedef, tree_util.tree_structure({})])
    frame = []
    _effect_frames.frames.append(frame)
    try:
        traced = Traced(fun, [v.aval for v in vals], in_tree, sources=vals, refs_ok=True,
                        differentiated=_ForwardOnly("vjp") if forward_only else "vjp",
                        concrete=replay, static_objects=has_aux)
    finally:
        _effect_frames.frames.pop()
    effects = []  # (ref, the aval of its new value)
    for trace, refs in frame:
        if trace.name != traced.name:
            raise NotImplementedError(
                "a custom_vjp whose backward pass writes a ref is supported in the "
                "differentiated function itself, not inside a nested jit, loop, cond or "
                f"transformation yet (at {core.where()})")
        effects += refs
    effect_refs = [r for r, _ in effects]
    callee_primals = vals + traced.captured
    all_outs = _call(traced.name, callee_primals, traced.out_avals)
    call_state = {"trace": core.current_trace(),
                  "op": all_outs[0].value.owner if all_outs else None}
    # Refs the function writes take their final values (not differentiated).
    if not replay:
        state.bind_written(traced.ref_outs, all_outs[traced.n_out:])
    outs = all_outs[:traced.n_out]
    full = tree_util.tree_unflatten(traced.out_tree, outs)
    if has_aux:
        if not (isinstance(full, (tuple, list)) and len(full) == 2):
            raise TypeError("has_aux=True requires the function to return a pair "
                            f"(output, aux) (at {core.where()})")
        out, aux = full
        n_main = len(tree_util.tree_leaves(out))
    else:
        out, aux = full, None
        n_main = len(outs)
    out_tree = tree_util.tree_structure(out)
    wrt = [i for i, v in enumerate(vals) if _is_float(v.aval)]
    plain = _plain_leaves(treedef)

    def vjp_fun(ct, want=None):
        ct_leaves = tree_util.tree_leaves(ct)
        if len(ct_leaves) != n_main:
            raise ValueError(f"vjp cotangent has {len(ct_leaves)} leaves, the output has "
                             f"{n_main} (at {core.where()})")
        cts = []
        weak_cts = True
        for c, a in zip(ct_leaves, traced.out_avals[:n_main]):
            # (JAX's float0 cotangent of an integer or boolean output.)
            c = _zeros(a) if core.is_float0(c) and not _is_float(a) else as_value(c)
            weak_cts = weak_cts and c.weak_type
            if c.shape != a.shape:
                raise ValueError(f"vjp cotangent shape {c.shape} does not match the output "
                                 f"shape {a.shape} (at {core.where()})")
            cts.append(lax.convert_element_type(c, a.dtype))
        cts += [_zeros(a) for a in traced.out_avals[n_main:]]
        main_out = traced.out_avals[:n_main]
        if not core._trace_stack:
            # Called outside a trace: compile the backward pass on its own.
            return eager_transform(lambda p, c: _vjp_traced(fun, p, has_aux, True)[1](c, want),
                         (primals, ct))
        wanted = wrt
        if want is not None:
            ends = np.cumsum([c.num_leaves for c in treedef.children])
            wanted = [i for i in wrt if want[int(np.searchsorted(ends, i, side="right"))]]
        res = _transform("vjp", traced.name, callee_primals, cts, wanted,
                         traced.out_avals + [vals[i].aval.update(
                                             weak_type=_weak_gradient(vals[i].aval,
                                                                      weak_cts, main_out),
                                             sharding=cotangent_sharding(vals[i].aval.sharding))
                                             for i in wanted]
                         + [a for _, a in effects], effects=len(effects))
        _reuse_primal_outputs(call_state, all_outs, res[:len(traced.out_avals)])
        if effect_refs:
            # The backward passes ran in reverse forward order: the first
            # call's write is the last (bound last).
            n_eff = len(effect_refs)
            state.bind_written(effect_refs[::-1], res[-n_eff:][::-1])
            res = res[:-n_eff]
        grads = res[len(traced.out_avals):]
        by_index = dict(zip(wanted, grads))
        # An integer or boolean argument's cotangent is JAX's float0 zeros
        # (one inside a hi value stays zeros of its type).
        leaves_out = [by_index[i] if i in by_index else
                      core.float0_zeros(v.shape) if plain[i] and not _is_float(v.aval)
                      else _zeros(v.aval) for i, v in enumerate(vals)]
        out = tree_util.tree_unflatten(hitypes.tangent_treedef(treedef), leaves_out)
        if want is not None:
            out = tuple(g if w else None for g, w in zip(out, want))
        return out

    vjp_fun.traced_name, vjp_fun.n_args = traced.name, len(vals)
    return out, vjp_fun, aux, out_tree


def _weak_gradient(primal, weak_cts, outs):
    """Whether the gradient of `primal` is weakly typed, as JAX's weak-type
    propagation through the backward pass makes it: the gradient of a weak
    primal is weak, unless the outputs are weak too (no promotion to a
    strong type on the way, whose transpose would make it weak again) and a
    cotangent is strong, or a complex primal reaches real outputs (`real`,
    `abs`: their transposes build strong complex values)."""
    if not primal.weak_type:
        return False
    if dtypes.is_complex(primal.dtype) and not all(dtypes.is_complex(a.dtype) for a in outs):
        return False
    return weak_cts or not all(a.weak_type for a in outs)


def _reuse_primal_outputs(state, outs, primal_results):
    """The vjp op computes the primal outputs too: when nothing has used the
    separate call's results yet (value_and_grad), the outputs become the vjp's
    and the call goes away, so the forward pass (and any callback in it) runs
    once."""
    op = state["op"]
    if op is None or core.current_trace() is not state["trace"]:
        return
    if any(True for r in op.results for _ in r.uses):
        return
    for t, r in zip(outs, primal_results):
        t.value = r.value
    op.erase()
    state["op"] = None


def vjp(fun, *primals, has_aux=False, reduce_axes=()):
    refs = {i: p for i, p in enumerate(primals) if isinstance(p, state.Ref)}
    if not refs:
        return _vjp_object(fun, primals, has_aux, None, False)
    # A Ref argument (JAX's refs guide): differentiated with respect to the
    # value it holds when `fun` starts (`fun` gets a ref of the traced
    # function holding it, whose last value the caller's Ref then takes);
    # the gradient can only be accumulated into a ref (`with_refs`).
    def through_refs(*vals):
        inner = {i: state.new_ref(vals[i]) for i in refs}
        args = [inner.get(i, v) for i, v in enumerate(vals)]
        out = fun(*args)
        for i, r in refs.items():  # (what `fun` left in it, as an effect)
            r[...] = lax.stop_gradient(inner[i][...])
        return out

    through_refs.__name__ = getattr(fun, "__name__", "fun")
    values = tuple(refs[i][...] if i in refs else p for i, p in enumerate(primals))
    res = _vjp_object(through_refs, values, has_aux, None, False)
    res[1]._grad_refs = tuple(refs)
    return res


def _vjp_object(fun, primals, has_aux, diff, single):
    """(out, VJPFunction[, aux]) of `fun` at `primals`, differentiated with
    respect to the positions `diff` (None: all)."""
    pick, wrt = _wrt(fun, primals, diff)
    if not core._trace_stack:
        recorded = []
        _fwd_cache.recording = recorded
        try:
            out_aux = eager_transform(lambda *p: _vjp_pair(pick, p, has_aux), wrt)
        finally:
            _fwd_cache.recording = None
        f = VJPFunction(fun, primals, has_aux, None, diff, single)
        f._fwd_entries = recorded
        if has_aux:
            return out_aux[0], f, out_aux[1]
        return out_aux, f
    out, call, aux, _ = _vjp_traced(pick, wrt, has_aux)
    f = VJPFunction(fun, primals, has_aux, call, diff, single)
    return (out, f, aux) if has_aux else (out, f)


def _wrt(fun, args, diff):
    """`fun` as a function of the arguments at the positions `diff` (None:
    all of them), the others fixed at their values in `args`; and those
    arguments."""
    if diff is None:
        return fun, tuple(args)
    return with_dynamic(fun, args, diff), tuple(args[i] for i in diff)


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
    """JAX's `fwd_and_bwd`: `fwd(*args)` gives `(out, residuals)` (with `aux`
    third under `has_aux`) and `bwd(residuals, ct)` the cotangents of the
    arguments at `argnums` (one array for an int); jitted by default, so a
    training loop compiles each once. The residuals are a `VJPFunction`
    (a pytree of the arguments; see `VJPFunction`)."""
    from .api import jit

    def fwd(*args):
        single, nums = _check_argnums(argnums, len(args))
        return _vjp_object(fun, args, has_aux, nums, single)

    def bwd(residuals, ct):
        if not isinstance(residuals, VJPFunction):
            raise TypeError(f"fwd_and_bwd: bwd takes the residuals fwd returned, got "
                            f"{type(residuals).__name__} (at {core.where()})")
        return residuals(ct)

    return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)


# Functions being transposed whose first n arguments are linear (their
# traces and n): a user's primitive applied to values depending on them
# is transposed by its own transpose rule (primitive.py).
_linear_frames = threading.local()


def linear_frame():
    frames = getattr(_linear_frames, "stack", ())
    return frames[-1] if frames else None


class linear_inputs:
    """Marks the function being traced as linear in its first `n`
    arguments while its body is traced."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        _linear_frames.stack = getattr(_linear_frames, "stack", ()) + (
            (core.current_trace(), self.n),)

    def __exit__(self, *exc):
        _linear_frames.stack = _linear_frames.stack[:-1]


def linear_transpose(fun, *primals, reduce_axes=()):
    """JAX's `linear_transpose`: for a linear `fun`, the function mapping an
    output cotangent to the tuple of input cotangents. `primals` give the
    input shapes and dtypes (arrays or ShapeDtypeStructs); the transpose is
    the VJP of `fun` taken at zero (the same everywhere for a linear
    function)."""
    leaves, treedef = tree_util.tree_flatten(primals)
    leaves = [x if hasattr(x, "dtype") and hasattr(x, "shape") else as_value(x)
              for x in leaves]
    for x in leaves:
        if not dtypes.is_inexact(np.dtype(x.dtype)):
            raise TypeError(f"linear_transpose only supports [float or complex] -> [float or "
                            f"complex], got {np.dtype(x.dtype).name} (at {core.where()})")
    zeros = tree_util.tree_unflatten(
        treedef, [lax.full(tuple(x.shape), 0, np.dtype(x.dtype)) for x in leaves])

    def linear(*args):
        with linear_inputs(len(leaves)):
            return fun(*args)

    def transposed(out_cotangent):
        return vjp(linear, *zeros)[1](out_cotangent)

    return transposed


class _Marker:
    def __repr__(self):
        return f"{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


class GradValue(_Marker):
    """`with_refs` entry: return this argument's gradient as a value."""


class DontWant(_Marker):
    """`with_refs` entry: do not compute this argument's gradient."""


class GradRef(_Marker):
    """What the VJP returns for a gradient accumulated into a ref."""


class DidntWant(_Marker):
    """What the VJP returns for a gradient that was not wanted."""


for _cls in (GradValue, DontWant, GradRef, DidntWant):
    tree_util.register_pytree_node(_cls, lambda m: ((), None), lambda _, c, cls=_cls: cls())


class VJPFunction:
    """The backward function `jax.vjp` returns: `f(ct)` gives one gradient per
    argument; `f.with_refs(*entries)` is the same with, per argument, a Ref
    (pytree) to accumulate the gradient into (`+=`), `GradValue()` or
    `DontWant()` (the gradient is not computed).

    As JAX's `VJP` it is a pytree, so it can be returned from a jitted
    forward function and passed to a jitted backward one. Its leaves are
    `args_res`, the arguments it was taken at: Ember differentiates programs
    in MLIR after tracing, so it holds no residuals of its own. Called in the
    trace it was made in, the backward pass shares that trace's forward
    pass; rebuilt from its leaves (or after `args_res` is changed) it runs
    the forward pass again from them, as a checkpointed function would
    (docs/design.md, "VJP objects")."""

    def __init__(self, fun, primals, has_aux, traced_call, diff=None, single=False):
        self.fun = fun
        self.args_res = list(primals)
        self._has_aux = has_aux
        self._diff = diff
        self._single = single
        # (The backward pass of the trace it was made in, and the arguments
        # it belongs to.)
        self._traced = (traced_call, tuple(primals)) if traced_call is not None else None
        self._nargs = len(primals) if diff is None else len(diff)
        self._n_args = len(primals)
        # (A `vjp` taken outside `jit`: its custom_vjp calls' forward passes,
        # for the backward function at these arguments.)
        self._fwd_entries, self._fwd_args = None, tuple(primals)
        # (Positions of Ref arguments: their gradients go into refs only.)
        self._grad_refs = ()

    def __repr__(self):
        return f"VJP(fun={getattr(self.fun, '__name__', self.fun)!r}, nargs={self._nargs})"

    def replace(self, *, args_res):
        """A copy taken at the arguments `args_res` (JAX's `VJP.replace`)."""
        return VJPFunction(self.fun, args_res, self._has_aux, None, self._diff, self._single)

    def _call(self, ct, want):
        args = tuple(self.args_res)
        if len(args) != self._n_args:
            raise ValueError(f"args_res must hold the {self._n_args} arguments the VJP was "
                             f"taken at, got {len(args)} (at {core.where()})")
        if self._traced is not None and all(a is b for a, b in zip(args, self._traced[1])):
            grads = self._traced[0](ct, want)
        else:
            diff, has_aux = self._diff, self._has_aux

            entries = self._fwd_entries if all(
                a is b for a, b in zip(args, self._fwd_args)) else None

            def backward(p, c):
                # (The custom_vjp calls' `fwd`s come from the forward pass.)
                _fwd_cache.replaying = (entries, [0]) if entries else None
                try:
                    return _vjp_traced(*_wrt(self.fun, p, diff), has_aux, True)[1](c, want)
                finally:
                    _fwd_cache.replaying = None

            # (JAX's float0 cotangents of integer outputs: zeros, which the
            # backward pass casts to the output's dtype.)
            ct = tree_util.tree_map(
                lambda c: np.zeros(c.shape, np.bool_) if core.is_float0(c) else c, ct)
            grads = eager_transform(backward, (args, ct)) if not core._trace_stack else \
                backward(args, ct)
        return grads[0] if self._single else grads

    def __call__(self, ct):
        if self._grad_refs:
            raise ValueError(
                f"the gradient of argument {self._grad_refs[0]}, a mutable array reference, "
                "must be accumulated into a ref: call the VJP function through "
                f"`with_refs(...)`, with a Ref for that argument (at {core.where()})")
        return self._call(ct, None)

    def with_refs(self, *entries):
        if len(entries) != self._nargs:
            raise TypeError(f"with_refs takes one entry per argument of the differentiated "
                            f"function ({self._nargs}), got {len(entries)} "
                            f"(at {core.where()})")

        def is_ref(x):
            return isinstance(x, state.Ref)

        for e in entries:
            if not isinstance(e, (GradValue, DontWant)) and not all(
                    is_ref(x) for x in tree_util.tree_leaves(e)):
                raise TypeError(f"with_refs entries are Refs, GradValue() or DontWant(); got "
                                f"{e!r} (at {core.where()})")

        def apply(ct):
            if not core._trace_stack:
                # One program: the backward pass and the accumulations.
                return eager_transform(traced, (ct,))
            return traced(ct)

        def traced(ct):  # (apply calling itself would be a reference cycle)
            want = [not isinstance(e, DontWant) for e in entries]
            grads = self._call(ct, want)
            out = []
            for e, g in zip(entries, grads):
                if isinstance(e, DontWant):
                    out.append(DidntWant())
                elif isinstance(e, GradValue):
                    out.append(g)
                else:
                    tree_util.tree_map(lambda r, v: state.ref_addupdate(r, ..., v), e, g)
                    out.append(GradRef())
            return tuple(out)

        return apply


def _vjp_unflatten(aux, children):
    f = VJPFunction(aux[0], children[0], aux[1], None, aux[2], aux[3])
    f._grad_refs = aux[4]
    return f


tree_util.register_pytree_node(
    VJPFunction,
    lambda f: ((list(f.args_res),), (f.fun, f._has_aux, f._diff, f._single, f._grad_refs)),
    _vjp_unflatten)


def _vjp_pair(fun, primals, has_aux):
    out, _, aux, _ = _vjp_traced(fun, primals, has_aux, forward_only=True)
    return (out, aux) if has_aux else out


def _check_argnums(argnums, n, jacobian=False):
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    for a in nums:
        if not -n <= a < n and jacobian:  # (JAX's jacfwd/jacrev/hessian error)
            raise ValueError(
                "Positional argument indices, e.g. for `static_argnums`, must have value "
                "greater than or equal to -len(args) and less than len(args), but got value "
                f"{a} for len(args) == {n}.")
        if not -n <= a < n:
            raise TypeError(f"differentiating with respect to argnums={argnums} requires at "
                            f"least {max(a + 1 if a >= 0 else -a for a in nums)} positional "
                            f"arguments to be passed by the caller, but got only {n} "
                            "positional arguments.")
    return single, tuple(a % n for a in nums)


def value_and_grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False,
                   reduce_axes=()):
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        single, nums = _check_argnums(argnums, len(args))
        if not core._trace_stack:
            static = static_positions(args, nums)
            return eager_transform(lambda *a: _value_and_grad_traced(
                fun, a, kwargs, single, nums, has_aux, allow_int, holomorphic), args, static)
        return _value_and_grad_traced(fun, args, kwargs, single, nums, has_aux, allow_int,
                                      holomorphic)
    return wrapped


def _check_callbacks_differentiable(name, n_args):
    """JAX's error for a host callback with results that depends on one of
    the first `n_args` arguments of the traced function `name` (found by
    following def-use chains; an op's regions count as depending on what
    its operands depend on)."""
    body = core.find_function(name).regions[0].blocks[0]
    reached = {hash(a) for a in list(body.arguments)[:n_args]}

    def visit(block):
        for op in block.operations:
            op = op.operation
            if any(hash(v) in reached for v in op.operands):
                if op.name == "ember.host_callback" and len(op.results):
                    raise ValueError(core.below_location(
                        "IO callbacks do not support JVP." if "has_side_effect" in
                        op.attributes else "Pure callbacks do not support JVP. Please use "
                        "`jax.custom_jvp` to use callbacks while taking gradients."))
                reached.update(hash(r) for r in op.results)
                for region in op.regions:
                    for b in region.blocks:
                        reached.update(hash(a) for a in b.arguments)
            for region in op.regions:
                for b in region.blocks:
                    visit(b)

    visit(body)


def _check_in_dtype(name, dtype, holomorphic, allow_int, forward=False):
    """JAX's input dtype rules of grad/jacrev (inexact, or any with
    allow_int) and jacfwd (`forward`: real floating only), complex only
    with holomorphic=True."""
    if holomorphic:
        if not dtypes.is_complex(dtype):
            raise core.type_error(f"{name} with holomorphic=True requires inputs with "
                                  f"complex dtype, but got {dtype.name}.")
    elif forward:
        if not dtypes.is_inexact(dtype) or dtypes.is_complex(dtype):
            raise core.type_error(
                f"{name} requires real-valued inputs (input dtype that is a sub-dtype of "
                f"np.floating), but got {dtype.name}. For holomorphic differentiation, pass "
                "holomorphic=True. For differentiation of non-holomorphic functions "
                "involving complex inputs or integer inputs, use jax.jvp directly.")
    elif not dtypes.is_inexact(dtype) and not allow_int:
        raise core.type_error(
            f"{name} requires real- or complex-valued inputs (input dtype that is a "
            f"sub-dtype of np.inexact), but got {dtype.name}. If you want to use "
            "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def _check_out_dtype(name, dtype, holomorphic, forward=False):
    """JAX's output dtype rules: real floating for grad/jacrev, any for
    jacfwd, complex only with holomorphic=True."""
    if holomorphic:
        if not dtypes.is_complex(dtype):
            raise core.type_error(f"{name} with holomorphic=True requires outputs with "
                                  f"complex dtype, but got {dtype.name}.")
    elif not forward and (not dtypes.is_inexact(dtype) or dtypes.is_complex(dtype)):
        raise core.type_error(
            f"{name} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dtype.name}. " + (
                "For holomorphic differentiation, pass holomorphic=True. For differentiation "
                "of non-holomorphic functions involving complex outputs, use jax.vjp "
                "directly." if dtypes.is_complex(dtype) else "For differentiation of "
                "functions with integer outputs, use jax.vjp directly."))


def _value_and_grad_traced(fun, args, kwargs, single, nums, has_aux, allow_int,
                           holomorphic=False):
    diff = tuple(args[i] for i in nums)
    for leaf in tree_util.tree_leaves(diff):
        if hitypes.is_hi(leaf):
            continue  # (differentiated in its tangent type)
        _check_in_dtype("grad", as_value(leaf).dtype, holomorphic, allow_int)

    def partial(*d):
        full = list(args)
        for i, v in zip(nums, d):
            full[i] = v
        return fun(*full, **kwargs)

    out, vjp_fun, aux, out_tree = _vjp_traced(partial, diff, has_aux)
    leaves = tree_util.tree_leaves(out)
    if len(leaves) != 1 or as_value(leaves[0]).shape != ():
        # JAX differentiates while it traces, so an opaque callback on the
        # differentiated path is its error before the output's shape is.
        _check_callbacks_differentiable(vjp_fun.traced_name, vjp_fun.n_args)
        raise core.type_error(
            "Gradient only defined for scalar-output functions. " +
            (f"Output had shape: {as_value(leaves[0]).shape}." if len(leaves) == 1 else
             f"Output was {out!r}."))
    y = as_value(leaves[0])
    _check_out_dtype("grad", y.dtype, holomorphic)
    # (The seed is weakly typed where the output is, as JAX's ones_like.)
    seed = core.Array(np.ones((), y.dtype), weak_type=y.weak_type)
    g = vjp_fun(tree_util.tree_unflatten(out_tree, [seed]))
    g = g[0] if single else tuple(g)
    return ((out, aux), g) if has_aux else (out, g)


def grad(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False, reduce_axes=()):
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        r = vg(*args, **kwargs)
        if has_aux:
            (_, aux), g = r
            return g, aux
        return r[1]
    return wrapped


# --------------------------------------------------------------------------
# jvp / linearize / jacobians
# --------------------------------------------------------------------------


def jvp(fun, primals, tangents, has_aux=False):
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; "
                        f"found {type(primals).__name__} and {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; got {len(primals)} primals and {len(tangents)} tangents")
    # JAX's float0 tangents of integer primals (not differentiated): zeros.
    tangents = tree_util.tree_map(
        lambda t: np.zeros(t.shape, np.bool_) if getattr(t, "dtype", None) == dtypes.float0
        else t, tuple(tangents))
    p_leaves, p_def = tree_util.tree_flatten(tuple(primals))
    t_leaves, t_def = tree_util.tree_flatten(tangents)
    if p_def == t_def:
        for p, t in zip(p_leaves, t_leaves):
            pd, td = as_value(p).dtype, as_value(t).dtype
            if dtypes.is_inexact(pd) and pd != td:
                raise core.type_error(
                    "primal and tangent arguments to jax.jvp do not match; dtypes must be "
                    "equal, or in case of int/bool primal dtype the tangent dtype must be "
                    f"float0. Got primal dtype {pd.name} and so expected tangent dtype "
                    f"{pd.name}, but got tangent dtype {td.name} instead.")
    if not core._trace_stack:
        return eager_transform(lambda p, t: _jvp_traced(fun, p, t, has_aux),
                     (tuple(primals), tuple(tangents)))
    return _jvp_traced(fun, tuple(primals), tuple(tangents), has_aux)


def _jvp_traced(fun, primals, tangents, has_aux, concrete=False):
    leaves, treedef = tree_util.tree_flatten(primals)
    t_leaves, t_def = tree_util.tree_flatten(tangents)
    if t_def != treedef:
        raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                        f"structure; primals have tree structure {treedef} whereas tangents "
                        f"have tree structure {t_def}")
    vals = [as_value(x) for x in leaves]
    for v, t in zip(vals, t_leaves):
        if as_value(t).shape != v.shape:
            raise ValueError(f"jvp tangent shape {as_value(t).shape} does not match the "
                             f"primal shape {v.shape} (at {core.where()})")
    traced = Traced(fun, [v.aval for v in vals], flatten_args(primals)[1], sources=vals,
                    refs_ok=True, differentiated="jvp", concrete=concrete,
                    static_objects=has_aux)
    wrt = [i for i, v in enumerate(vals) if _is_float(v.aval)]
    ts = [lax.convert_element_type(t_leaves[i], vals[i].dtype) for i in wrt]
    res = _transform("jvp", traced.name, vals + traced.captured, ts, wrt,
                     traced.out_avals + traced.out_avals)
    n, k = len(traced.out_avals), traced.n_out
    state.bind_written(traced.ref_outs, res[k:n])
    out = tree_util.tree_unflatten(traced.out_tree, res[:k])
    # An integer or boolean output's tangent is JAX's float0 zeros.
    plain = _plain_leaves(traced.out_tree)
    tan = tree_util.tree_unflatten(traced.out_tree, [
        core.float0_zeros(a.shape) if p and not _is_float(a) else t
        for t, a, p in zip(res[n:n + k], traced.out_avals[:k], plain)])
    if has_aux:
        return out[0], tan[0], out[1]
    return out, tan


def linearize(fun, *primals, has_aux=False):
    """`(fun(*primals), f_jvp)` (with `aux` third under `has_aux`):
    `f_jvp(*tangents)` is the JVP of `fun` at `primals`."""
    out = fun(*primals)
    if has_aux:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError("linearize with has_aux=True requires the function to return a "
                            f"pair (output, aux) (at {core.where()})")
        out, aux = out
    outside = not core._trace_stack

    def f_jvp(*tangents):
        if outside and core._trace_stack:
            # Under `jit` now, at primals known before it: `fun` is traced at
            # their concrete values (Python control flow on them works, as
            # with JAX's linearized function, which does not run `fun`).
            return _jvp_traced(fun, tuple(primals), tuple(tangents), has_aux,
                               concrete=True)[1]
        return jvp(fun, primals, tangents, has_aux=has_aux)[1]
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


def _std_basis(x):
    """The standard basis of x's space as one array [x.size, *x.shape]."""
    x = as_value(x)
    n = x.size
    eye = lax.broadcasted_iota(np.int32, (n, n), 0) == lax.broadcasted_iota(np.int32, (n, n), 1)
    return lax.reshape(lax.convert_element_type(eye, x.dtype, weak_type=x.weak_type),
                       (n,) + tuple(x.shape))


def _push_basis(fn, x):
    """vmap of fn over the standard basis of x: fn's output leaves, each with
    a leading axis of size x.size (a single batched transformation, no
    per-element loop)."""
    return vmap(fn)(_std_basis(x))


def _main_and_aux(f, has_aux):
    """For has_aux=True, splits `f` returning (out, aux) into the function
    to differentiate and the function giving aux (JAX returns (jac, aux))."""
    if not has_aux:
        return f, None

    def pair(*d):
        r = f(*d)
        if not (isinstance(r, (tuple, list)) and len(r) == 2):
            raise TypeError("has_aux=True requires the function to return a pair "
                            f"(output, aux) (at {core.where()})")
        return r

    return (lambda *d: pair(*d)[0]), (lambda *d: pair(*d)[1])


def jacfwd(fun, argnums=0, has_aux=False, holomorphic=False):
    """Forward-mode Jacobian: vmap of jvp over the standard basis of each
    input. The result nests the input structure inside the output structure."""

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        single, nums = _check_argnums(argnums, len(args), jacobian=True)
        diff = tuple(args[i] for i in nums)
        # (keyword arguments are not differentiated, as in JAX)
        g = functools.partial(fun, **kwargs) if kwargs else fun
        f, aux_of = _main_and_aux(with_dynamic(g, args, nums), has_aux)

        def run(*d):
            in_leaves, in_tree = tree_util.tree_flatten(d)
            in_leaves = [as_value(x) for x in in_leaves]
            for x in in_leaves:
                _check_in_dtype("jacfwd", x.dtype, holomorphic, False, forward=True)
            out_leaves, out_tree = tree_util.tree_flatten(f(*d))
            out_avals = [as_value(v).aval for v in out_leaves]
            for a in out_avals:
                _check_out_dtype("jacfwd", a.dtype, holomorphic, forward=True)
            per_in = []  # per input leaf: the Jacobian blocks of every output leaf
            for m, x in enumerate(in_leaves):
                if x.size == 0:
                    per_in.append([jnp.zeros(a.shape + x.shape, a.dtype) for a in out_avals])
                    continue

                def push(e, m=m):
                    tangents = [e if j == m else jnp.zeros_like(v)
                                for j, v in enumerate(in_leaves)]
                    return tree_util.tree_leaves(
                        jvp(f, d, tree_util.tree_unflatten(in_tree, tangents))[1])

                cols = _push_basis(push, x)  # each [x.size, *out.shape]
                per_in.append([jnp.moveaxis(c, 0, -1).reshape(a.shape + x.shape)
                               for c, a in zip(cols, out_avals)])
            result = []
            for k in range(len(out_avals)):
                jin = tree_util.tree_unflatten(in_tree, [blocks[k] for blocks in per_in])
                result.append(jin[0] if single else jin)
            jac = tree_util.tree_unflatten(out_tree, result)
            return (jac, aux_of(*d)) if has_aux else jac

        if not core._trace_stack:
            return eager_transform(run, diff)
        return run(*diff)
    return wrapped


def jacrev(fun, argnums=0, has_aux=False, holomorphic=False, allow_int=False):
    """Reverse-mode Jacobian: vmap of the VJP over the standard basis of each
    output. The result nests the input structure inside the output structure."""

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        single, nums = _check_argnums(argnums, len(args), jacobian=True)
        diff = tuple(args[i] for i in nums)
        # (keyword arguments are not differentiated, as in JAX)
        f = with_dynamic(functools.partial(fun, **kwargs) if kwargs else fun, args, nums)

        def run(*d):
            in_leaves, in_tree = tree_util.tree_flatten(d)
            in_leaves = [as_value(x) for x in in_leaves]
            for x in in_leaves:
                _check_in_dtype("jacrev", x.dtype, holomorphic, allow_int)
            if has_aux:
                out, vjp_fun, aux = vjp(f, *d, has_aux=True)
            else:
                out, vjp_fun = vjp(f, *d)
            out_leaves, out_tree = tree_util.tree_flatten(out)
            out_leaves = [as_value(y) for y in out_leaves]
            for y in out_leaves:
                _check_out_dtype("jacrev", y.dtype, holomorphic)
            result = []
            for k, y in enumerate(out_leaves):
                if y.size == 0:
                    rows = [jnp.zeros((0,) + x.shape, x.dtype) for x in in_leaves]
                else:
                    def pull(e, k=k):
                        cts = [e if j == k else jnp.zeros_like(o)
                               for j, o in enumerate(out_leaves)]
                        # (JAX's jacrev gives an integer argument zeros
                        # of its dtype, not float0.)
                        return [jnp.zeros(g.shape, x.dtype) if core.is_float0(g) else g
                                for g, x in zip(tree_util.tree_leaves(
                                    vjp_fun(tree_util.tree_unflatten(out_tree, cts))),
                                    in_leaves)]

                    rows = _push_basis(pull, y)  # each [y.size, *x.shape]
                per_in = [r.reshape(y.shape + x.shape) for r, x in zip(rows, in_leaves)]
                jin = tree_util.tree_unflatten(in_tree, per_in)
                result.append(jin[0] if single else jin)
            jac = tree_util.tree_unflatten(out_tree, result)
            return (jac, aux) if has_aux else jac

        if not core._trace_stack:
            return eager_transform(run, diff)
        return run(*diff)
    return wrapped


jacobian = jacrev


def hessian(fun, argnums=0, has_aux=False, holomorphic=False):
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


_IMPURE_REMAT = ("jax.checkpoint / jax.remat cannot be applied to an impure function: it "
                 "writes a mutable array reference (Ref) from outside it, and recomputing "
                 "it would write again; draw keys (e.g. StatefulPRNG.key()) outside the "
                 "checkpointed function and pass them in")


# --------------------------------------------------------------------------
# Custom derivative rules
# --------------------------------------------------------------------------


def _split_nondiff(args, nondiff_argnums):
    nondiff = {i: args[i] for i in nondiff_argnums}
    diff = [a for i, a in enumerate(args) if i not in nondiff]
    return nondiff, diff


def _rebuild(nondiff, diff, n):
    full, it = [], iter(diff)
    for i in range(n):
        full.append(nondiff[i] if i in nondiff else next(it))
    return full


def _custom_call(name, symbols, operands, segments, out_avals, extra=None):
    ctx = core.context()
    attrs = {k: ir.FlatSymbolRefAttr.get(v, ctx) for k, v in symbols.items()}
    attrs["segments"] = core.i64_array_attr(segments)
    attrs.update(extra or {})
    return _emit(f"ember.{name}", operands, out_avals, attrs)


def _differentiation_depth():
    """How many enclosing traces are differentiated (2 under `hessian`)."""
    return sum(1 for t in core._trace_stack if getattr(t, "differentiated", False))


def differentiation_kind():
    """"vjp" or "jvp": how the innermost differentiated trace around the
    current one is differentiated (None when none is), which ember-autodiff
    applies first."""
    for t in reversed(core._trace_stack.items):
        kind = getattr(t, "differentiated", False)
        if kind:
            return kind
    return None


def forward_mode_enclosing():
    """Whether a function traced for forward mode (`jvp`) encloses the
    current trace, at any depth."""
    return any(getattr(t, "differentiated", False) == "jvp" for t in core._trace_stack.items)


def may_depend_on_differentiated(vals):
    """Whether any of `vals` may depend on the arguments of the innermost
    function traced for differentiation (False: its derivative is surely
    zero, and JAX would not differentiate what computes it). Values of
    functions traced inside that one count as depending."""
    for t in reversed(core._trace_stack.items):
        if getattr(t, "differentiated", False):
            break
    else:
        return False
    n = getattr(t, "n_inputs", None)
    for v in vals:
        if not isinstance(v, core.Tracer) or t._is_ancestor(v._trace):
            continue
        if n is None or v._trace is not t or v._depends_on_arguments(n, through_regions=False):
            return True
    return False


def differentiating():
    """Whether the current trace is inside a function traced for `jvp` or
    `vjp` (and what is built on them): only there are custom rules traced,
    as JAX traces them only when something differentiates."""
    return any(getattr(t, "differentiated", False) for t in core._trace_stack)


def transposing():
    """Whether a backward pass may be built for the current trace: it is
    inside a function traced for `vjp` whose backward pass some program
    builds (custom_vjp's `bwd` is traced only then; under `jvp` alone the
    pass reports forward mode through a custom_vjp)."""
    return any(getattr(t, "differentiated", False) == "vjp"
               and not isinstance(t.differentiated, _ForwardOnly) for t in core._trace_stack)


class custom_jvp:
    """`jax.custom_jvp`: a function with a user-defined JVP rule. The rule is
    traced into its own function and referenced by an `ember.custom_jvp_call`
    op, so it is used by forward and reverse mode and batched with the
    function by vmap."""

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp = None

    def defjvp(self, jvp, symbolic_zeros=False):
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps):
        def jvp(primals, tangents):
            out = self.fun(*primals)
            total = None
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                contrib = rule(t, out, *primals)
                total = contrib if total is None else tree_util.tree_map(
                    lambda a, b: a + b, total, contrib)
            if total is None:
                total = tree_util.tree_map(lambda o: as_value(o) * 0, out)
            return out, total
        self.jvp = jvp

    _tracing_rule = 0

    def __call__(self, *args, **kwargs):
        args = resolve_kwargs(self.fun, args, kwargs, "custom_jvp")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} "
                                 "using defjvp.")
        if (self._tracing_rule >= _differentiation_depth()
                or (core._trace_stack and not differentiating())):
            # Where nothing differentiates it (JAX traces the rule only then),
            # or called from inside its own rule (JAX's documented pattern)
            # once as many rules are nested as derivatives are taken (JAX
            # traces each rule when it differentiates, one order at a time;
            # Ember when the function is called): the primal function.
            return self.fun(*args)
        if not core._trace_stack:
            return eager_transform(lambda *a: self(*a), args, static_positions(args, ()))
        nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
        leaves, treedef = tree_util.tree_flatten_lo(diff)
        vals = [as_value(x) for x in leaves]
        avals = [v.aval for v in vals]
        n = len(vals)
        rule_out = {}

        def rule(*xs):
            p = tree_util.tree_unflatten(treedef, list(xs[:n]))
            t = tree_util.tree_unflatten(treedef, list(xs[n:]))
            nd = [nondiff[i] for i in sorted(nondiff)]
            out, tan = self.jvp(*nd, tuple(p), tuple(t))
            outs, rule_out["tree"] = tree_util.tree_flatten_lo(out)
            touts = tree_util.tree_leaves_lo(tan)
            if len(touts) != len(outs):
                raise TypeError("custom_jvp rule must return tangents with the structure of "
                                f"the primal output (at {core.where()})")
            for tt, o in zip(touts, outs):
                ov, tv = as_value(o), as_value(tt)
                if dtypes.is_inexact(ov.dtype) and not tv.weak_type and (
                        tv.dtype != ov.dtype or tv.shape != ov.shape):
                    raise core.type_error(
                        "Custom JVP rule must produce primal and tangent outputs with "
                        "corresponding shapes and dtypes. Expected "
                        f"{ov.aval.str_short()} (tangent type of {ov.aval.str_short()}) but "
                        f"got {tv.aval.str_short()}.")
            touts = [lax.convert_element_type(as_value(tt), as_value(o).dtype)
                     if dtypes.is_inexact(as_value(o).dtype) else as_value(o) * 0
                     for tt, o in zip(touts, outs)]
            return list(outs) + touts

        self._tracing_rule += 1
        try:
            j = Traced(rule, avals + avals, sources=vals + [None] * n)
        finally:
            self._tracing_rule -= 1
        n_out = len(j.out_avals) // 2

        def primal(*xs):
            # The function itself is the rule's primal half at zero tangents,
            # so differentiating traces only the rule, as JAX does (the
            # function runs once, where the rule calls it).
            zeros = [lax.full(a.shape, 0, a.dtype) for a in avals]
            return _call(j.name, list(xs) + zeros + j.captured, j.out_avals)[:n_out]

        f = Traced(primal, avals, sources=vals)
        res = _custom_call("custom_jvp_call", {"callee": f.name, "jvp": j.name},
                           vals + f.captured + j.captured,
                           [n, len(f.captured), len(j.captured)], f.out_avals)
        return tree_util.tree_unflatten(rule_out["tree"], res)


def _remat_attributes(remat):
    """The attributes marking a checkpoint's custom_vjp_call: `remat` is
    (policy, prevent_cse), or None for a user's custom_vjp."""
    if not remat:
        return None
    _, prevent_cse = remat
    ctx = core.context()
    attrs = {"ember.remat": ir.UnitAttr.get(ctx)}
    if not prevent_cse:
        attrs["ember.remat_no_barrier"] = ir.UnitAttr.get(ctx)
    return attrs


def _cotangent_leaves(arg, ct):
    """The leaves of cotangent `ct` for argument `arg`, None (a zero) for
    each leaf of `arg` under a None in `ct` (JAX's bwd may put None for any
    subtree)."""
    if ct is None:
        return [None] * len(tree_util.tree_leaves_lo(arg))
    node, cnode = tree_util._children(arg), tree_util._children(ct)
    if node is None or node[0] is type(None) or cnode is None or node[0] is not cnode[0] \
            or len(node[2]) != len(cnode[2]):
        return tree_util.tree_leaves_lo(ct)
    return [x for a, c in zip(node[2], cnode[2]) for x in _cotangent_leaves(a, c)]


class custom_vjp:
    """`jax.custom_vjp`: a function with user-defined forward and backward
    passes, referenced by an `ember.custom_vjp_call` op; reverse mode
    transposes through the user's bwd, and vmap batches fwd and bwd."""

    def __init__(self, fun, nondiff_argnums=()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd = self.bwd = None

    def defvjp(self, fwd, bwd, symbolic_zeros=False, optimize_remat=False):
        self.fwd, self.bwd = fwd, bwd

    _tracing_rule = 0
    # Set by checkpoint to (policy or None, prevent_cse): bwd recomputes fun,
    # keeping what the policy saves (ad_checkpoint.py).
    _remat = None

    def __call__(self, *args, **kwargs):
        args = resolve_kwargs(self.fun, args, kwargs, "custom_vjp")
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} "
                                 "using defvjp.")
        if self._tracing_rule or not differentiating():
            # Nothing differentiates it (outside any trace too): the function
            # itself, as JAX calls it.
            return self.fun(*args)
        nondiff, diff = _split_nondiff(args, self.nondiff_argnums)
        leaves, treedef = tree_util.tree_flatten_lo(diff)
        # Ref arguments are passed to fun and fwd as themselves (their
        # cotangent from bwd is None, as in JAX).
        arg_refs = {i: x for i, x in enumerate(leaves) if isinstance(x, state.Ref)}
        if arg_refs and self._remat:
            arg_refs = {}  # (checkpoint reports refs as its own error)
        vals = [as_value(x) for i, x in enumerate(leaves) if i not in arg_refs]
        avals = [v.aval for v in vals]
        nargs = len(args)

        def full(xs):
            it = iter(xs)
            flat = [arg_refs[i] if i in arg_refs else next(it) for i in range(len(leaves))]
            return _rebuild(nondiff, tree_util.tree_unflatten(treedef, flat), nargs)

        if self._remat:
            # checkpoint: the function itself, its ops marked by the policy
            # (traced first: its refs are checkpoint's error to report)
            f = Traced(self.fun, avals, flatten_args(diff)[1], static=nondiff.items(),
                       sources=vals, refs_ok=_IMPURE_REMAT, policy=self._remat[0])
        store = {}

        def fwd(*xs):
            out, res = self.fwd(*full(xs))
            out_leaves, store["out_tree"] = tree_util.tree_flatten_lo(out)
            res_leaves, store["res_tree"] = tree_util.tree_flatten_lo(res)
            # Refs among the residuals (JAX's `stash_grads`) reach bwd as
            # themselves: what bwd writes into them is an effect of the
            # backward pass (`bwd_effects`).
            store["res_refs"] = {i: r for i, r in enumerate(res_leaves)
                                 if isinstance(r, state.Ref)}
            res_leaves = [r for r in res_leaves if not isinstance(r, state.Ref)]
            store["res_avals"] = [as_value(r).aval for r in res_leaves]
            return out_leaves + res_leaves

        fw = _replayed_fwd(self, avals, store)
        if fw is None:
            self._tracing_rule += 1
            try:
                fw = Traced(fwd, avals, sources=vals)
            finally:
                self._tracing_rule -= 1
            _record_fwd(self, avals, fw, store)
        res_avals = store["res_avals"]
        nout = len(fw.out_avals) - len(res_avals)
        if not self._remat:
            # The function is fwd's output half, so differentiating traces
            # fwd and bwd only, as JAX does (the function runs once, where
            # fwd calls it).
            f = Traced(lambda *xs: _call(fw.name, list(xs) + fw.captured,
                                         fw.out_avals)[:nout], avals, sources=vals)
            f.out_tree = store["out_tree"]

        def bwd(*xs):
            if not needs_bwd:
                # No backward pass is built here (see `transposing`): a
                # placeholder of bwd's types, never run.
                return [_zeros(v.aval) for v in vals]
            given, refs = iter(xs[:len(res_avals)]), store["res_refs"]
            res = tree_util.tree_unflatten(store["res_tree"], [
                refs[i] if i in refs else next(given)
                for i in range(len(res_avals) + len(refs))])
            ct = tree_util.tree_unflatten(f.out_tree, list(xs[len(res_avals):]))
            nd = [nondiff[i] for i in sorted(nondiff)]
            cts = self.bwd(*nd, res, ct)
            if not isinstance(cts, (tuple, list)):
                raise TypeError("custom_vjp bwd function must produce a tuple of cotangents, "
                                f"one per differentiable argument (at {core.where()})")
            if len(cts) != len(diff):
                raise TypeError(
                    "Custom VJP bwd rule must produce an output with the same container "
                    "(pytree) structure as the args tuple of the primal function, and in "
                    "particular must produce a tuple of length equal to the number of "
                    "arguments to the primal function, but got bwd output structure "
                    f"{tree_util.tree_structure(tuple(cts))} for primal input structure "
                    f"{tree_util.tree_structure(tuple(diff))} (at {core.where()})")
            flat = []
            for k, (arg, c) in enumerate(zip(diff, cts)):
                arg_leaves = tree_util.tree_leaves_lo(arg)
                c_leaves = _cotangent_leaves(arg, c)
                if len(c_leaves) != len(arg_leaves):
                    raise TypeError(
                        f"custom_vjp bwd function produced a cotangent of structure "
                        f"{tree_util.tree_structure(c)} for an argument of structure "
                        f"{tree_util.tree_structure(arg)} (at {core.where()})")
                for a, cl in zip(arg_leaves, c_leaves):
                    if isinstance(a, state.Ref):
                        if cl is not None:
                            raise TypeError(
                                "custom_vjp bwd function must return None as the "
                                f"cotangent of a Ref argument (at {core.where()})")
                        continue
                    a = as_value(a)
                    # (`.shape` first: a float0 cotangent, JAX's zeros of an
                    # integer argument, is no Ember array.)
                    shape = getattr(cl, "shape", None)
                    if cl is not None and tuple(
                            as_value(cl).shape if shape is None else shape) != tuple(a.shape):
                        raise ValueError(
                            "Custom VJP bwd rule must produce an output with the same type "
                            "as the args tuple of the primal function, but at output"
                            f"[{k}] the bwd rule produced an output of type "
                            f"{as_value(cl).aval.str_short()} corresponding to an input of "
                            f"type {a.aval.str_short()}, so the shapes do not match "
                            f"(at {core.where()})")
                    flat.append(_zeros(a.aval) if cl is None or core.is_float0(cl) else
                                lax.convert_element_type(as_value(cl), a.dtype))
            return flat

        needs_bwd = transposing()
        self._tracing_rule += 1
        try:
            bw = Traced(bwd, res_avals + f.out_avals, refs_ok=True if store["res_refs"] else None)
        finally:
            self._tracing_rule -= 1
        extra = _remat_attributes(self._remat)
        if bw.ref_outs:
            if not _effect_frames.frames:
                raise NotImplementedError(
                    f"custom_vjp: the backward rule of {self.__name__} writes a ref, which only "
                    f"reverse-mode differentiation (grad, vjp) supports (at {core.where()})")
            # (The new values are strongly typed, as JAX's refs are after
            # a backward pass writes a cotangent into them.)
            _effect_frames.frames[-1].append((core.current_trace(), [
                (r, a.update(weak_type=False))
                for r, a in zip(bw.ref_outs, bw.out_avals[bw.n_out:])]))
            extra = {**(extra or {}), "bwd_effects": core.i64_attr(len(bw.ref_outs))}
        res = _custom_call("custom_vjp_call",
                           {"callee": f.name, "fwd": fw.name, "bwd": bw.name},
                           vals + f.captured + fw.captured + bw.captured,
                           [len(vals), len(f.captured), len(fw.captured), len(bw.captured),
                            len(res_avals)], f.out_avals[:nout], extra)
        return tree_util.tree_unflatten(f.out_tree, res)


# JAX's `jax._src.api` also holds the transformations (its primitives
# tutorial calls `api.grad`, `api.jvp`, `api.vmap`): registered there from
# here, the layer above it.
for _f in (grad, jvp, vjp, value_and_grad, linear_transpose, vmap):
    setattr(_api, _f.__name__, _f)
del _f

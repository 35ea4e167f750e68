"""Users' primitives (JAX's `jax.extend.core.Primitive` with the rule tables
of `jax.interpreters.ad`, `batching` and `mlir`; JAX's "How primitives
work" tutorial). Ember traces Python straight into its dialect, so a
primitive has no op of its own: applied to values outside any trace it
runs its `impl`; traced, it checks its `abstract_eval` and is replaced by
its lowering rule, whose values are Ember tracers (`mlir.lower_fun`'s
function, or a rule building StableHLO ops through `hlo`'s builders, which
make Ember ops). The rules are used as JAX uses them:

- differentiated in forward mode (at any depth, so also for a Hessian's
  forward over reverse), the application is an `ember.custom_jvp_call`
  whose rule is the primitive's JVP rule;
- differentiated in reverse mode only, it is an `ember.custom_vjp_call`
  whose backward pass transposes the JVP rule's tangent map (Ember's
  reverse mode of that map; inside it, the primitive applied to tangents
  is a custom_vjp whose backward pass is the primitive's transpose rule,
  as JAX transposes it);
- applied to values that cannot depend on the differentiated arguments,
  it is its lowering, no rule used;
- inside a `vmap`, applied to batched values where nothing differentiates
  the program, it is a call that `ember-batch` batches by the primitive's
  batching rule (`batching.call_with_rule`).

A missing rule is JAX's NotImplementedError where the rule is needed
(docs/design.md, "Users' primitives")."""

import threading

import numpy as np

from . import ad, batching, core, dtypes, lax, tree_util
from .core import ShapedArray, as_value
from .hijax import Zero, instantiate_zeros

primitive_jvps = {}
primitive_transposes = {}
primitive_batchers = {}
_lowerings = {}  # primitive -> {platform or None: rule}

# How many custom calls' functions or rules are being traced in this
# thread (see `_rules_only`).
_rules = threading.local()


def _rule_depth():
    return getattr(_rules, "depth", 0)


class _rules_only:
    """While a primitive's lowering or one of its rules is traced for a
    custom call: the primitives it applies are lowered as they are (the
    call's own rules differentiate it)."""

    def __enter__(self):
        _rules.depth = _rule_depth() + 1

    def __exit__(self, *exc):
        _rules.depth = _rule_depth() - 1


def _plainly(fn):
    def run(*args):
        with _rules_only():
            return fn(*args)
    return run


class UndefinedPrimal:
    """A linear argument of a transpose rule (JAX's `UndefinedPrimal`)."""

    def __init__(self, aval):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x):
    return type(x) is UndefinedPrimal


def _where(msg):
    return core.below_location(msg)


class Primitive:
    """JAX's `jax.extend.core.Primitive`."""

    multiple_results = False

    def __init__(self, name):
        self.name = name
        self.impl = None
        self.abstract_eval = None

    def __repr__(self):
        return self.name

    def def_impl(self, impl):
        self.impl = impl
        return impl

    def def_abstract_eval(self, abstract_eval):
        self.abstract_eval = abstract_eval
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval):
        def abstract_eval(*avals, **params):
            return effectful_abstract_eval(*avals, **params)[0]
        self.abstract_eval = abstract_eval
        return effectful_abstract_eval

    def bind(self, *args, **params):
        if not core._trace_stack:
            if self.impl is None:
                raise NotImplementedError(_where(
                    f"Evaluation rule for '{self.name}' not implemented"))
            return self.impl(*args, **params)
        return _traced(self, args, params)


def _avals_out(prim, vals, params):
    if prim.abstract_eval is None:
        raise NotImplementedError(_where(
            f"Abstract evaluation for '{prim.name}' not implemented"))
    out = prim.abstract_eval(*[v.aval for v in vals], **params)
    outs = list(out) if prim.multiple_results else [out]
    avals = []
    for a in outs:
        if not (hasattr(a, "shape") and hasattr(a, "dtype")):
            raise TypeError(_where(
                f"the abstract evaluation rule of '{prim.name}' returned {a!r}, not a "
                "ShapedArray"))
        avals.append(ShapedArray(tuple(a.shape), np.dtype(a.dtype),
                                 bool(getattr(a, "weak_type", False))))
    return avals


class LoweringRuleContext:
    """What a lowering rule gets besides its operands (a part of JAX's)."""

    def __init__(self, primitive, avals_in, avals_out, platform):
        self.primitive = primitive
        self.avals_in = tuple(avals_in)
        self.avals_out = list(avals_out)
        self.platforms = None
        self.module_context = _ModuleContext((platform,))

    def __repr__(self):
        return (f"LoweringRuleContext(primitive={self.primitive}, avals_in={self.avals_in}, "
                f"avals_out={self.avals_out})")


class _ModuleContext:
    def __init__(self, platforms):
        self.platforms = platforms


def register_lowering(prim, rule, platform=None):
    """JAX's `mlir.register_lowering`: `rule(ctx, *operands, **params)`
    returns the results' values (a sequence)."""
    _lowerings.setdefault(prim, {})[platform] = rule
    return rule


def lower_fun(fun, multiple_results=True):
    """JAX's `mlir.lower_fun`: a lowering rule that traces `fun`."""
    def rule(ctx, *args, **params):
        out = fun(*args, **params)
        return out if multiple_results else [out]
    return rule


def _lowering(prim):
    rules = _lowerings.get(prim, {})
    rule = rules.get("cpu", rules.get(None))
    if rule is None:
        raise NotImplementedError(_where(
            f"MLIR translation rule for primitive '{prim.name}' not found for platform cpu"))
    return rule


def _lowered(prim, params, avals_in, avals_out):
    """`f(*operands) -> [results]`: the primitive's lowering rule traced on
    Ember values, checked against its abstract evaluation."""
    rule = _lowering(prim)

    def f(*xs):
        ctx = LoweringRuleContext(prim, avals_in, avals_out, "cpu")
        with _rules_only():
            out = rule(ctx, *xs, **params)
        if isinstance(out, (core.Value, np.ndarray)) or np.isscalar(out):
            out = [out]
        outs = [as_value(getattr(o, "result", o)) for o in out]
        got = [o.aval for o in outs]
        if len(got) != len(avals_out) or any(
                tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype
                for g, w in zip(got, avals_out)):
            raise TypeError(_where(
                f"the lowering rule of '{prim.name}' gives values of types "
                f"{[g.str_short() for g in got]} where its abstract evaluation says "
                f"{[w.str_short() for w in avals_out]}"))
        return [o if g.weak_type == w.weak_type else
                lax.convert_element_type(o, w.dtype) for o, g, w in zip(outs, got, avals_out)]
    return f


def _result(prim, outs):
    return list(outs) if prim.multiple_results else outs[0]


def _traced(prim, args, params):
    vals = [as_value(a) for a in args]
    avals_in = [v.aval for v in vals]
    avals_out = _avals_out(prim, vals, params)
    lowered = _lowered(prim, params, avals_in, avals_out)
    if _rule_depth():
        return _result(prim, _batched_or_lowered(prim, vals, params, lowered))
    frame = ad.linear_frame()
    if frame is not None and (frame[0] is core.current_trace()
                              or core.current_trace()._is_ancestor(frame[0])):
        linear = [_depends_on_inputs(frame, v) for v in vals]
        if any(linear):
            return _result(prim, _linear_application(prim, vals, linear, params, lowered))
        return _result(prim, _batched_or_lowered(prim, vals, params, lowered))
    kind = ad.differentiation_kind()
    if kind is None or not ad.may_depend_on_differentiated(vals):
        # (No tangent reaches it: JAX uses no rule of it either.)
        return _result(prim, _batched_or_lowered(prim, vals, params, lowered))
    rule = primitive_jvps.get(prim)
    if rule is None:
        raise NotImplementedError(_where(
            f"Differentiation rule for '{prim.name}' not implemented"))
    if kind == "jvp" or ad.forward_mode_enclosing():
        # (Forward mode, also around a reverse one, as for a Hessian: the
        # JVP rule itself, which ember-autodiff transposes for reverse mode;
        # a custom_vjp has no forward mode.)
        return _result(prim, _forward(prim, vals, params, lowered, rule))
    return _result(prim, _reverse(prim, vals, params, lowered, rule))


def _batched_or_lowered(prim, vals, params, lowered):
    found = batching.enclosing_vmap()
    if found is None or all(batching._unbatched_in(found[0], v) for v in vals):
        return lowered(*vals)
    if _rule_depth() or ad.differentiating():
        # (A call batched by a rule cannot be differentiated: where the
        # program may be, ember-batch maps the lowering op by op.)
        return lowered(*vals)
    batcher = primitive_batchers.get(prim)
    if batcher is None:
        raise NotImplementedError(_where(
            f"Batching rule for '{prim.name}' not implemented"))

    def rule(axis_data, batched, *xs):
        dims = [0 if b else None for b in batched]
        with _rules_only():
            out, out_dims = batcher(list(xs), dims, **params)
        outs = list(out) if prim.multiple_results else [out]
        if not prim.multiple_results:
            out_dims = [out_dims]
        if len(out_dims) != len(outs):
            raise ValueError(_where(
                f"the batching rule of '{prim.name}' returned {len(outs)} results and "
                f"{len(out_dims)} batch dimensions"))
        return [batching.to_leading(x, d, axis_data.size) for x, d in zip(outs, out_dims)]

    return batching.call_with_rule(lowered, vals, rule, f"'{prim.name}'")


def _tangent_args(vals):
    """Positions of the operands with tangents (inexact dtypes); the others'
    tangents are `Zero`s."""
    return [i for i, v in enumerate(vals) if dtypes.is_inexact(v.dtype)]


def _with_zeros(vals, pos, ts):
    out = [Zero(v.aval.update(weak_type=False)) for v in vals]
    for i, t in zip(pos, ts):
        out[i] = t
    return out


def _call_jvp_rule(prim, rule, primals, tangents, params):
    out, tan = rule(tuple(primals), tuple(tangents), **params)
    outs = list(out) if prim.multiple_results else [out]
    tans = list(tan) if prim.multiple_results else [tan]
    tans = [instantiate_zeros(t) for t in tans]
    return outs, [lax.convert_element_type(as_value(t), as_value(o).dtype)
                  for t, o in zip(tans, outs)]


def _forward(prim, vals, params, lowered, rule):
    pos = _tangent_args(vals)

    def fun(*xs):
        return lowered(*xs)

    def jvp(primals, tangents):
        with _rules_only():
            return _call_jvp_rule(
                prim, rule, primals, _with_zeros(vals, pos, [tangents[i] for i in pos]),
                params)

    f = ad.custom_jvp(_plainly(fun))
    f.defjvp(jvp)
    return f(*vals)


def _reverse(prim, vals, params, lowered, rule):
    pos = _tangent_args(vals)

    def fun(*xs):
        return lowered(*xs)

    def fwd(*xs):
        return lowered(*xs), list(xs)

    def bwd(xs, cts):
        def tangent_map(*ts):
            with ad.linear_inputs(len(ts)):
                return _call_jvp_rule(prim, rule, xs, _with_zeros(vals, pos, ts), params)[1]
        zeros = [lax.full(tuple(xs[i].shape), 0, xs[i].dtype) for i in pos]
        got = ad.vjp(tangent_map, *zeros)[1](list(cts))
        out = [None] * len(vals)
        for i, c in zip(pos, got):
            out[i] = c
        return tuple(out)

    f = ad.custom_vjp(_plainly(fun))
    f.defvjp(_plainly(fwd), bwd)
    return f(*vals)


def _depends_on_inputs(frame, v):
    """Whether `v` may depend on the first `n` arguments of the function
    traced by `trace` (its linear inputs): def-use chains within it; a value
    of a function traced inside it, or made by an op with regions, may."""
    trace, n = frame
    if not isinstance(v, core.Tracer) or trace._is_ancestor(v._trace):
        return False
    if v._trace is not trace:
        return True
    return v._depends_on_arguments(n, through_regions=False)


def _linear_application(prim, vals, linear, params, lowered):
    """The primitive applied to linear values inside a function being
    transposed: a custom_vjp of its linear operands whose backward pass is
    the primitive's transpose rule."""
    rule = primitive_transposes.get(prim)
    if rule is None:
        raise NotImplementedError(_where(
            f"Transpose rule (for reverse-mode differentiation) for '{prim.name}' not "
            "implemented"))
    pos = [i for i, lin in enumerate(linear) if lin]

    def full(ls):
        xs = list(vals)
        for i, x in zip(pos, ls):
            xs[i] = x
        return xs

    def fun(*ls):
        return lowered(*full(ls))

    def fwd(*ls):
        return lowered(*full(ls)), None

    def bwd(_, cts):
        args = list(vals)
        for i in pos:
            args[i] = UndefinedPrimal(vals[i].aval.update(weak_type=False))
        ct = list(cts) if prim.multiple_results else cts[0]
        got = rule(ct, *args, **params)
        if not isinstance(got, (tuple, list)) or len(got) != len(vals):
            raise TypeError(_where(
                f"the transpose rule of '{prim.name}' must return one cotangent per "
                f"operand ({len(vals)}), or None"))
        out = []
        for i in pos:
            c = got[i]
            out.append(None if c is None or isinstance(c, Zero) else c)
        return tuple(out)

    f = ad.custom_vjp(_plainly(fun))
    f.defvjp(_plainly(fwd), _plainly(bwd))
    return f(*[vals[i] for i in pos])


# --------------------------------------------------------------------------
# The helpers JAX's modules offer for writing rules
# --------------------------------------------------------------------------


def defjvp(prim, *jvprules):
    """JAX's `ad.defjvp`: one rule per operand, `rule(g, *primals,
    **params)` giving that operand's contribution to the output tangent
    (None: the operand has none)."""
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        total = None
        for r, t in zip(jvprules, tangents):
            if r is None or type(t) is Zero:
                continue
            c = r(t, *primals, **params)
            total = c if total is None else tree_util.tree_map(lambda a, b: a + b, total, c)
        if total is None:
            total = tree_util.tree_map(lambda o: lax.full_like(o, 0), out)
        return out, total
    primitive_jvps[prim] = jvp


def defjvp_zero(prim):
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        return out, tree_util.tree_map(lambda o: lax.full_like(o, 0), out)
    primitive_jvps[prim] = jvp


def deflinear2(prim, transpose_rule):
    """JAX's `ad.deflinear2`: a primitive linear in all its operands,
    `transpose_rule(ct, *args, **params)`."""
    def jvp(primals, tangents, **params):
        return (prim.bind(*primals, **params),
                prim.bind(*[instantiate_zeros(t) for t in tangents], **params))
    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose_rule


def deflinear(prim, transpose_rule):
    """JAX's `ad.deflinear`: as `deflinear2` with `transpose_rule(ct,
    **params)`."""
    deflinear2(prim, lambda ct, *args, **params: transpose_rule(ct, **params))


def defbilinear(prim, lhs_rule, rhs_rule):
    """JAX's `ad.defbilinear`: `lhs_rule(ct, x, y, **params)` is the
    cotangent of `x` when `x` is the linear operand (and likewise `y`)."""
    def jvp(primals, tangents, **params):
        x, y = primals
        tx, ty = tangents
        out = prim.bind(x, y, **params)
        parts = []
        if type(tx) is not Zero:
            parts.append(prim.bind(tx, y, **params))
        if type(ty) is not Zero:
            parts.append(prim.bind(x, ty, **params))
        tan = parts[0] if parts else lax.full_like(out, 0)
        for p in parts[1:]:
            tan = tan + p
        return out, tan

    def transpose(ct, x, y, **params):
        if is_undefined_primal(x):
            return lhs_rule(ct, x, y, **params), None
        return None, rhs_rule(ct, x, y, **params)
    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose


def defvectorized(prim):
    """JAX's `batching.defvectorized`: the primitive applies to batched
    operands as it is (all batched along the same axis)."""
    def batcher(args, dims, **params):
        d = next(d for d in dims if d is not None)
        args = [a if e is None or e == d else _moveaxis(a, e, d) for a, e in zip(args, dims)]
        return prim.bind(*args, **params), d
    primitive_batchers[prim] = batcher


def defbroadcasting(prim):
    """JAX's `batching.defbroadcasting`: operands batched along their
    leading axis broadcast against the unbatched ones."""
    def batcher(args, dims, **params):
        rank = max(np.ndim(a) - (d is not None) for a, d in zip(args, dims))
        moved = []
        for a, d in zip(args, dims):
            a = as_value(a)
            if d is None:
                moved.append(lax.expand_dims(a, (0,)) if a.ndim else a)
            else:
                a = _moveaxis(a, d, 0)
                extra = rank - (a.ndim - 1)
                moved.append(lax.expand_dims(a, tuple(range(1, 1 + extra))) if extra else a)
        return prim.bind(*moved, **params), 0
    primitive_batchers[prim] = batcher


def _moveaxis(x, src, dst):
    x = as_value(x)
    perm = [i for i in range(x.ndim) if i != src % x.ndim]
    perm.insert(dst % x.ndim, src % x.ndim)
    return lax.transpose(x, tuple(perm))

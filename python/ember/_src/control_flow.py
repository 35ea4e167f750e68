"""lax control flow.

`cond`/`switch` stage an `ember.case` region op: only the chosen branch runs,
and reverse mode differentiates only that branch; forward mode and vmap turn
it into all branches plus a select (as JAX does for a batched predicate).
`while_loop` stages `ember.while`; `scan`, `map` and `fori_loop` with static
bounds stage a counted `ember.while` (`trip_count`). The compiled forward pass
and reverse mode keep loops (reverse mode saves the residuals of a counted
loop in [trip_count, ...] buffers, of other loops on a run-time stack); vmap
keeps a counted loop whole, batching only the carries that need it. Under
`disable_jit` outside a trace, control flow runs as Python control flow.
"""

import functools

import numpy as np

from ember._mlir import ir

from . import core, dtypes, hitypes, lax, state, tree_util
from .api import eager as _eager
from .api_util import flatten_fun
from .config import config as _config
from .core import as_value
from .numpy import lax_numpy as jnp


def _pred_scalar(pred, what):
    p = as_value(pred)
    if p.shape != ():
        raise TypeError(f"{what}: pred must be a scalar, got shape {p.shape} "
                        f"(at {core.where()})")
    if not dtypes.is_bool(p.dtype):
        p = lax.ne(p, lax.full((), 0, p.dtype))
    return p


def _python_mode():
    """Under `disable_jit` outside any trace, control flow runs as Python
    control flow on concrete values (JAX's semantics)."""
    return _config.jax_disable_jit and not core._trace_stack


def _concrete_pred(p, what):
    p = as_value(p)
    if p.shape != ():
        raise TypeError(f"{what}: pred must be a scalar, got shape {p.shape} (at {core.where()})")
    return bool(p)


def _with_refs(fun, refs=None):
    """`fun`, a callable of a control-flow op, in its pure form over `refs`
    (by default the live refs, `state`): `pure(ref_values, *args) ->
    (ref_values, result)`."""
    return state.stateful(fun, state.live_refs() if refs is None else refs)


# Traces that build control flow their own way (a GPU kernel being
# compiled, pallas/mosaic_gpu_compile.py): each hook has `fori_loop`, `cond`,
# `switch` and `while_loop` methods returning the result or NotImplemented.
control_flow_hooks = []


def _hooked(what, *args):
    for hook in control_flow_hooks:
        out = getattr(hook, what)(*args)
        if out is not NotImplemented:
            return out
    return NotImplemented


_NO_OPERAND = object()


def cond(pred, true_fun, false_fun, *operands, operand=_NO_OPERAND):
    if operand is not _NO_OPERAND:  # (JAX's older keyword form)
        if operands:
            raise TypeError("if `operand` is passed as a keyword argument, `operands` must "
                            "be empty")
        operands = (operand,)
    if (out := _hooked("cond", pred, true_fun, false_fun, operands)) is not NotImplemented:
        return out
    if _python_mode():
        return (true_fun if _concrete_pred(pred, "cond") else false_fun)(*operands)
    if not core._trace_stack:
        return _eager(lambda p, *ops: cond(p, true_fun, false_fun, *ops),
                      (pred,) + tuple(operands))
    return state.retry(lambda: _cond_refs(pred, true_fun, false_fun, operands))


def _cond_refs(pred, true_fun, false_fun, operands):
    if refs := state.live_refs():
        vals, out = _cond_traced(pred, _with_refs(true_fun), _with_refs(false_fun),
                                 (state.values(refs),) + operands)
        state.bind(refs, vals)
        return out
    return _cond_traced(pred, true_fun, false_fun, operands)


def _cond_traced(pred, true_fun, false_fun, operands):
    p = _pred_scalar(pred, "cond")
    index = lax.convert_element_type(p, np.int32)
    return _case(index, [false_fun, true_fun], operands, "cond",
                 ["false_fun", "true_fun"])


def _case(index, branches, operands, what, names):
    """Stages an `ember.case` on the 0-d int32 `index`: each branch is traced
    into its own region, so only the chosen one runs."""
    trace = core.find_trace([index, *tree_util.tree_leaves(operands)]) or core.current_trace()
    idx = trace.to_value(index)
    # The branches see Python scalar operands as arrays (weakly typed), as
    # JAX's cond and switch trace them.
    operands = tree_util.tree_map(
        lambda v: as_value(v) if isinstance(v, (bool, int, float, complex, np.generic))
        else v, operands)
    ctx = core.context()
    # The result types are known only after tracing: trace into a holder op,
    # then move the regions into the real op.
    with ctx, trace.location():
        holder = ir.Operation.create("ember.case", results=[], operands=[idx],
                                     regions=len(branches), ip=ir.InsertionPoint(trace.block))
    try:
        outs = []
        for k, fun in enumerate(branches):
            block = holder.regions[k].blocks.append()
            flat, out_tree = flatten_fun(functools.partial(fun, *operands))
            avals = core.trace_region(block, flat, [])
            outs.append((out_tree(), avals))
        tree0, avals0 = outs[0]
        for k, (tk, ak) in enumerate(outs[1:], 1):
            if tk != tree0:
                raise TypeError(f"{what}: {names[k]} and {names[0]} outputs must have "
                                f"identical pytree structure, got {tk} and {tree0} "
                                f"(at {core.where()})")
            for j, (a, b) in enumerate(zip(avals0, ak)):
                if a.shape != b.shape or a.dtype != b.dtype:
                    raise TypeError(f"{what}: {names[k]} and {names[0]} outputs must have "
                                    f"identical types, got leaf {j}: {b.str_short()} vs "
                                    f"{a.str_short()} (at {core.where()})")
        # (The results' weak types are the first branch's, as JAX's cond
        # takes its result types from branch 0.)
        avals = list(avals0)
        with ctx, trace.location():
            op = ir.Operation.create("ember.case", results=[core.mlir_type(a) for a in avals],
                                     operands=[idx], regions=len(branches),
                                     ip=ir.InsertionPoint(holder))
        with ctx:
            core._annotate(op, avals, None)
        for k in range(len(branches)):
            holder.regions[k].blocks[0].append_to(op.regions[k])
    finally:
        holder.erase()
    results = [core.Tracer(trace, op.results[i], a) for i, a in enumerate(avals)]
    return tree_util.tree_unflatten(tree0, results)


def switch(index, branches, *operands):
    branches = list(branches)
    if not branches:
        raise ValueError("switch: branches must be a non-empty sequence of callables")
    if (out := _hooked("switch", index, branches, operands)) is not NotImplemented:
        return out
    if _python_mode():
        return branches[min(max(int(as_value(index)), 0), len(branches) - 1)](*operands)
    if not core._trace_stack:
        return _eager(lambda i, *ops: switch(i, branches, *ops), (index,) + tuple(operands))
    return state.retry(lambda: _switch_refs(index, branches, operands))


def _switch_refs(index, branches, operands):
    if refs := state.live_refs():
        vals, out = _switch_traced(index, [_with_refs(b) for b in branches],
                                   (state.values(refs),) + operands)
        state.bind(refs, vals)
        return out
    return _switch_traced(index, branches, operands)


def _switch_traced(index, branches, operands):
    i = as_value(index)
    if i.shape != () or not dtypes.is_int(i.dtype):
        raise TypeError(f"switch: index must be a scalar integer, got {i.aval.str_short()} "
                        f"(at {core.where()})")
    # As JAX's: converted to int32 first (an unsigned index clipped in its
    # own type wrapped -1 to its largest value: always the last branch),
    # then clamped to [0, len(branches) - 1] by ember.case itself.
    i = lax.convert_element_type(i, np.int32)
    return _case(i, branches, operands, "switch",
                 [f"branch {k}" for k in range(len(branches))])


def select_n(which, *cases):
    return lax.select_n(which, *cases)


def _carry_check(init, new, what="scan"):
    li, ti = tree_util.tree_flatten_lo(init)
    ln, tn = tree_util.tree_flatten_lo(new)
    if ti != tn:
        raise TypeError(f"{what} body function carry input and carry output must have the same "
                        f"pytree structure, got {ti} and {tn} (at {core.where()})")
    for k, (a, b) in enumerate(zip(li, ln)):
        a, b = as_value(a), as_value(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            raise TypeError(f"{what} body function carry input and carry output must have "
                            f"equal types, but leaf {k} is {a.aval.str_short()} on input and "
                            f"{b.aval.str_short()} on output (at {core.where()})")


def _promotes(a, b):
    """Whether the weakly typed carry `a` takes the body's type `b` (only
    where the weak value promotes to it: a weak float carry made int32 is
    JAX's error, not a conversion)."""
    return a.weak_type and a.shape == b.shape and a.dtype != b.dtype and \
        dtypes.result_type_weak((a.dtype, True), (b.dtype, False))[0] == b.dtype


def _promote_carry(init, new):
    """Weakly typed initial carries take the type the body produces (JAX)."""
    def one(a, b):
        a, b = as_value(a), as_value(b)
        return lax.convert_element_type(a, b.dtype) if _promotes(a, b) else a
    li, ti = tree_util.tree_flatten_lo(init)
    ln, tn = tree_util.tree_flatten_lo(new)
    if ti != tn:
        return init  # (`_carry_check` reports it)
    return tree_util.tree_unflatten(ti, [one(a, b) for a, b in zip(li, ln)])


def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
    if isinstance(length, (int, np.integer)) and not isinstance(length, bool) and length < 0:
        raise ValueError(f"scan got a negative length: {length}")
    f = _returns_pair(f)
    if _python_mode():
        return _scan_python(f, init, xs, length, reverse)
    if not core._trace_stack:
        return _eager(lambda c, x: scan(f, c, x, length, reverse), (init, xs))
    return state.retry(lambda: _scan_refs(f, init, xs, length, reverse))


def _returns_pair(f):
    """`f`, checked to return a (carry, output) pair as JAX's scan does."""
    @functools.wraps(f)
    def checked(c, x):
        out = f(c, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"scan body output must be a pair, got {out!r} "
                            f"(at {core.where()})")
        return out

    return checked


def _scan_refs(f, init, xs, length, reverse):
    if refs := state.live_refs():
        def body(c, x):
            vals, (new, y) = _with_refs(f, refs)(c[0], c[1], x)
            return (vals, new), y
        (vals, carry), ys = _scan_traced(body, (state.values(refs), init), xs, length, reverse)
        state.bind(refs, vals)
        return carry, ys
    return _scan_traced(f, init, xs, length, reverse)


def _scan_traced(f, init, xs, length, reverse):
    """A counted ember.while: the carry, plus one [n, ...] buffer per output
    leaf that iteration i writes at its index (xs are read with dynamic
    slices). The body is traced once, as JAX's (the buffers' types come from
    that trace), or twice when a weakly typed initial carry must take the
    type the body gives it (JAX retraces then too). Batching unrolls it
    (trip_count); the compiled forward pass and reverse mode keep the loop."""
    x_leaves, x_tree = tree_util.tree_flatten_lo(xs)
    x_leaves = [as_value(x) for x in x_leaves]
    # Hi values are scanned along their type's leading axis (each lowered
    # array's own axis, `hitypes.unstack_leading`), so only arrays say n.
    spans = tree_util.hi_node_spans(x_tree)
    in_hi = {k for start, count, _ in spans for k in range(start, start + count)}
    plain = [x for k, x in enumerate(x_leaves) if k not in in_hi]
    _check_scanned_sharding(plain)
    lengths = {x.shape[0] for x in plain if x.ndim}
    # (array-like hi values, key arrays, scan along their own first axis)
    lengths |= {ty.shape[0] for _, _, (ty, _) in spans if hitypes.is_array_like(ty) and ty.shape}
    if any(x.ndim == 0 for x in plain):
        raise ValueError("scan got value with no leading axis to scan over")
    if length is not None:
        lengths.add(core.canonicalize_dim(length))
    if len(lengths) > 1:
        raise ValueError(f"scan got values with different leading axis sizes: "
                         f"{sorted(lengths, key=str)}")
    if not lengths:
        raise ValueError("scan got no values to scan over and `length` not provided")
    n = lengths.pop()
    if spans:
        x_leaves, x_tree = hitypes.unstack_leading(x_leaves, x_tree, n)
    c_leaves, c_tree = tree_util.tree_flatten_lo(init)
    carry = tree_util.tree_unflatten(c_tree, [as_value(c) for c in c_leaves])
    if isinstance(n, int) and n == 0:
        return _scan_empty(f, carry, x_leaves, x_tree)
    trace = core.current_trace()
    mark = state._mark(trace)
    try:
        carry, ys = _emit_scan(f, carry, x_leaves, x_tree, n, reverse, True)
    except _WeakCarry as e:
        state._undo(trace, mark)
        leaves, tree = tree_util.tree_flatten_lo(carry)
        carry = tree_util.tree_unflatten(tree, [
            lax.convert_element_type(c, d) if c.weak_type and c.dtype != d else c
            for c, d in zip(leaves, e.dtypes)])
        carry, ys = _emit_scan(f, carry, x_leaves, x_tree, n, reverse, False)
    return carry, hitypes.stack_leading(ys, n)


def _scan_empty(f, carry, x_leaves, x_tree):
    """A scan of length 0: nothing runs; the body is traced (in a probe
    function, then dropped) for the types of the empty outputs."""
    c_leaves, c_tree = tree_util.tree_flatten(carry)
    nc = len(c_leaves)
    store = {}

    def probe(*a):
        new, y = f(tree_util.tree_unflatten(c_tree, list(a[:nc])),
                   tree_util.tree_unflatten(x_tree, list(a[nc:])))
        y_leaves, store["y_tree"] = tree_util.tree_flatten(y)
        store["n_new"] = len(tree_util.tree_leaves(new))
        return tree_util.tree_leaves(new) + y_leaves

    x_avals = [core.ShapedArray(x.shape[1:], x.dtype) for x in x_leaves]

    def types(c_leaves):
        name, out_avals, _ = core.trace_subfunction(
            probe, [c.aval for c in c_leaves] + x_avals, "scan_probe")
        _erase_function(name)
        return out_avals[:store["n_new"]], out_avals[store["n_new"]:]

    new_avals, y_avals = types(c_leaves)
    if len(new_avals) != len(c_leaves):
        raise TypeError("scan body function carry input and carry output must have the same "
                        f"pytree structure (at {core.where()})")
    new = tree_util.tree_unflatten(c_tree, [jnp.zeros(a.shape, a.dtype) for a in new_avals])
    promoted = _promote_carry(carry, new)
    _carry_check(promoted, new)  # (JAX checks the types though nothing runs)
    if any(a is not b for a, b in zip(tree_util.tree_leaves(promoted), c_leaves)):
        # A weak carry the body promotes: the outputs' types are those of a
        # trace from the promoted carry (JAX traces again too).
        carry = promoted
        new_avals, y_avals = types(tree_util.tree_leaves(carry))
    # The final carry has the body's output types (a weak initial carry the
    # body makes strong is strong, a strong one it makes weak weak), as the
    # loop's results would.
    leaves = [as_value(c) for c in tree_util.tree_leaves(carry)]
    carry = tree_util.tree_unflatten(c_tree, [
        lax.convert_element_type(c, a.dtype, a.weak_type)
        if c.weak_type != a.weak_type and c.dtype == a.dtype else c
        for c, a in zip(leaves, new_avals)])
    ys0 = [jnp.zeros((0,) + tuple(a.shape), a.dtype) for a in y_avals]
    ys0 = [lax.convert_element_type(y, a.dtype, True) if a.weak_type else y
           for y, a in zip(ys0, y_avals)]
    return carry, tree_util.tree_unflatten(store["y_tree"], ys0)


def _stacked_sharding(aval):
    """The sharding of a scan's stacked output: the step's, the stacking
    dimension unsharded (JAX's)."""
    from .mesh import NamedSharding

    sh = aval.sharding
    if not isinstance(sh, NamedSharding):
        return None
    return NamedSharding(sh.mesh, sh.spec.update(partitions=(None,) + tuple(sh.spec)))


def _check_scanned_sharding(x_leaves):
    """JAX's error for xs split over an Explicit mesh axis along the scanned
    dimension."""
    from .mesh import NamedSharding, PartitionSpec

    for x in x_leaves:
        sh = x.aval.sharding
        if isinstance(sh, NamedSharding) and x.ndim and any(
                a in sh.mesh.explicit_axes for a in sh.spec.axes(0)):
            entries = [sh.spec[k] if k < len(sh.spec) else None for k in range(x.ndim)]
            raise ValueError(core.below_location(
                f"0th dimension of all xs should be replicated. Got {PartitionSpec(*entries)!r}"))


def _emit_scan(f, carry, x_leaves, x_tree, n, reverse, promote):
    """Traces the body into a holder op's region (adding one block argument
    per output buffer once `f`'s outputs are known), then the condition, then
    emits the ember.while on (0, carry, zero buffers) and moves the regions
    into it."""
    c_leaves, c_tree = tree_util.tree_flatten_lo(carry)
    trace = core.current_trace()
    ctx = core.context()
    avals = [core.ShapedArray((), np.int32)] + [c.aval for c in c_leaves]
    with ctx, trace.location():
        holder = ir.Operation.create("ember.while", results=[], operands=[], regions=2,
                                     ip=ir.InsertionPoint(trace.block))
    try:
        with ctx, ir.Location.unknown():
            body_block = holder.regions[1].blocks.append(*[core.mlir_type(a) for a in avals])
        store = {}

        def body(i, *cs):
            with core.machinery():  # (row idx of xs: in bounds, not the user's op)
                idx = (n - 1) - i if reverse else i
                x = tree_util.tree_unflatten(
                    x_tree, [lax.dynamic_index_in_dim(leaf, idx, 0, keepdims=False)
                             for leaf in x_leaves])
            c = tree_util.tree_unflatten(c_tree, list(cs))
            new, y = f(c, x)
            _carry_check(_promote_carry(c, new), new)
            new_leaves = [as_value(v) for v in tree_util.tree_leaves_lo(new)]
            if promote and any(a.weak_type and a.shape == b.shape and a.dtype != b.dtype
                               for a, b in zip(c_leaves, new_leaves)):
                raise _WeakCarry([b.dtype for b in new_leaves])
            store["new_weak"] = [b.weak_type for b in new_leaves]
            store["new_sharding"] = [b.aval.sharding for b in new_leaves]
            y_leaves, store["y_tree"] = tree_util.tree_flatten_lo(y)
            rt = core.current_trace()
            ys, store["y_avals"] = [], []
            for v in [as_value(v) for v in y_leaves]:
                a = core.ShapedArray((n,) + tuple(v.shape), v.dtype, v.weak_type,
                                     sharding=_stacked_sharding(v.aval))
                with rt.ctx:
                    arg = body_block.add_argument(core.mlir_type(a), ir.Location.unknown(rt.ctx))
                buf = core.Tracer(rt, arg, a)
                with core.machinery():
                    ys.append(lax.dynamic_update_index_in_dim(
                        buf, lax.convert_element_type(v, buf.dtype), idx, 0))
                store["y_avals"].append(a)
            return [i + 1] + new_leaves + ys

        core.trace_region(body_block, body, avals)
        full = avals + store["y_avals"]
        with ctx, ir.Location.unknown():
            cond_block = holder.regions[0].blocks.append(*[core.mlir_type(a) for a in full])
        core.trace_region(cond_block, lambda i, *rest: [i < n], full)
        ys0 = [jnp.zeros(a.shape, a.dtype) for a in store["y_avals"]]
        init = [jnp.asarray(0, np.int32)] + c_leaves + ys0
        # The final carries' weak types are the body's, as in JAX (a weak
        # initial carry that the body makes strong comes out strong, with
        # no second trace: the types are the same; a strong one that the
        # body replaces by a weak value comes out weak); an initial carry
        # placed on no mesh takes the body's sharding.
        out = [full[0]] + [a.update(weak_type=w,
                                    sharding=sh if a.sharding is None else None)
                           for a, w, sh in zip(full[1:], store["new_weak"],
                                               store["new_sharding"])] + full[1 + len(c_leaves):]
        results = trace.emit("ember.while", [trace.to_value(v) for v in init], out,
                             regions=2)
        op = results[0].value.owner
        for k in range(2):
            holder.regions[k].blocks[0].append_to(op.regions[k])
        with ctx:
            core.annotate_block_args(op, [full, full])
            op.attributes["trip_count"] = core.i64_attr(n)
            if isinstance(n, core.DimExpr):
                op.attributes["ember.sym_attr.trip_count"] = ir.StringAttr.get(str(n))
    finally:
        holder.erase()
    nc = len(c_leaves)
    carry = tree_util.tree_unflatten(c_tree, results[1:1 + nc])
    return carry, tree_util.tree_unflatten(store["y_tree"], results[1 + nc:])


def _scan_python(f, init, xs, length, reverse):
    x_leaves, x_tree = tree_util.tree_flatten(xs)
    x_leaves = [as_value(x) for x in x_leaves]
    n = int(length) if length is not None else (x_leaves[0].shape[0] if x_leaves else 0)
    if n == 0:
        # Nothing runs; the compiled path knows the (empty) outputs' types.
        return _eager(lambda c, x: _scan_traced(f, c, x, length, reverse), (init, xs))
    carry, ys = init, []
    for i in (reversed(range(n)) if reverse else range(n)):
        carry, y = f(carry, tree_util.tree_unflatten(x_tree, [x[i] for x in x_leaves]))
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, tree_util.tree_map(lambda *v: jnp.stack(v), *ys)


def map(f, xs, *, batch_size=None):
    """JAX's `lax.map`: `f` over the leading axis of `xs` (pytrees), as a
    scan. With `batch_size`, the scan runs over groups of that many
    elements, `f` vmapped over each group, and the elements left over
    (fewer than a group) go through one more vmapped call, as JAX does;
    `batch_size=0` (or one larger than the axis) is a plain vmap."""
    if batch_size is None:
        return scan(lambda _, x: (None, f(x)), None, xs)[1]
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 0:
        raise ValueError(f"lax.map: batch_size must be a non-negative integer, got "
                         f"{batch_size!r} (at {core.where()})")
    from . import batching

    leaves, tree = tree_util.tree_flatten(xs)
    fv = batching.vmap(f)
    if not leaves:
        return scan(lambda _, x: (None, f(x)), None, xs)[1]
    leaves = [as_value(x) for x in leaves]
    n = leaves[0].shape[0] if leaves[0].ndim else 0
    groups, left = divmod(n, int(batch_size)) if batch_size else (0, n)
    if groups == 0:
        return fv(xs)
    cut = groups * int(batch_size)
    grouped = tree_util.tree_unflatten(tree, [
        jnp.reshape(x[:cut], (groups, int(batch_size)) + x.shape[1:]) for x in leaves])
    ys = scan(lambda _, x: (None, fv(x)), None, grouped)[1]
    ys = tree_util.tree_map(lambda y: jnp.reshape(y, (-1,) + y.shape[2:]), ys)
    if left:
        rest = fv(tree_util.tree_unflatten(tree, [x[cut:] for x in leaves]))
        ys = tree_util.tree_map(lambda a, b: jnp.concatenate([a, b], axis=0), ys, rest)
    return ys


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
    if (out := _hooked("fori_loop", lower, upper, body_fun, init_val)) is not NotImplemented:
        return out
    if _python_mode():
        # (The index is a Python int, as JAX's Python loop gives it; an
        # array of the bounds' type in a kernel a Pallas interpreter runs.)
        lo, hi = as_value(lower), as_value(upper)
        dt = dtypes.result_type_weak((lo.dtype, lo.weak_type), (hi.dtype, hi.weak_type))[0]
        val = init_val
        for i in range(int(lo), int(hi)):
            val = body_fun(jnp.asarray(i, dt) if _config.ember_interpreting_kernel else i, val)
        return val
    if not core._trace_stack:
        # The bounds are concrete here: closed over, the loop is counted.
        return _eager(lambda v: fori_loop(lower, upper, body_fun, v), (init_val,))
    return state.retry(lambda: _fori_refs(lower, upper, body_fun, init_val))


def _fori_refs(lower, upper, body_fun, init_val):
    if refs := state.live_refs():
        def body(i, c):
            return _with_refs(body_fun, refs)(c[0], i, c[1])
        vals, out = _fori_loop(lower, upper, body, (state.values(refs), init_val))
        state.bind(refs, vals)
        return out
    return _fori_loop(lower, upper, body_fun, init_val)


def _fori_loop(lower, upper, body_fun, init_val):
    lo, hi = as_value(lower), as_value(upper)
    if isinstance(lo, core.Tracer) or isinstance(hi, core.Tracer):
        # Traced bounds only occur inside a trace.
        return _while_traced(lambda c: c[0] < hi, lambda c: (c[0] + 1, body_fun(c[0], c[1])),
                             (lo, init_val))[1]
    lo_i, hi_i = int(lo), int(hi)
    dt, weak = dtypes.result_type_weak((lo.dtype, lo.weak_type), (hi.dtype, hi.weak_type))

    def run(init):
        # Static bounds: a counted loop, like scan. (The index is weakly
        # typed for Python int bounds, as JAX's.)
        i0 = lax.convert_element_type(lo_i, dt, weak_type=weak)
        end = lax.convert_element_type(hi_i, dt, weak_type=weak)
        return _while_traced(lambda c: c[0] < end, lambda c: (c[0] + 1, body_fun(c[0], c[1])),
                             (i0, init), trip_count=max(hi_i - lo_i, 0))[1]
    if not core._trace_stack:
        return _eager(run, (init_val,))
    return run(init_val)


def independent_loop(n, body_fun, init_val):
    """Ember's own (not JAX's): `fori_loop(0, n, body_fun, init_val)` whose
    iterations the caller promises are independent (spec rule while_c5):
    each reads of the carried arrays only the parts it writes, and no two
    write the same element. The loop is marked `parallel`; the CPU runs its
    iterations on its threads when what it carries is written in place.
    Inside a trace only."""
    if _python_mode() or n < 2:
        return fori_loop(0, n, body_fun, init_val)
    i0, end = jnp.int32(0), jnp.int32(n)
    return _while_traced(lambda c: c[0] < end, lambda c: (c[0] + 1, body_fun(c[0], c[1])),
                         (i0, init_val), trip_count=n, parallel=True)[1]


def while_loop(cond_fun, body_fun, init_val):
    if (out := _hooked("while_loop", cond_fun, body_fun, init_val)) is not NotImplemented:
        return out
    if _python_mode():
        # (Python's loop on arrays: JAX converts the initial value and each
        # new one with lax.asarray.)
        def arrays(v):
            return tree_util.tree_map(as_value, v)

        val = arrays(init_val)
        while _concrete_pred(cond_fun(val), "while_loop"):
            val = arrays(body_fun(val))
        return val
    if not core._trace_stack:
        return _eager(lambda v: while_loop(cond_fun, body_fun, v), (init_val,))
    return state.retry(lambda: _while_refs(cond_fun, body_fun, init_val))


def _while_refs(cond_fun, body_fun, init_val):
    if refs := state.live_refs():
        vals, out = _while_traced(lambda c: _with_refs(cond_fun, refs)(c[0], c[1])[1],
                                  lambda c: _with_refs(body_fun, refs)(c[0], c[1]),
                                  (state.values(refs), init_val))
        state.bind(refs, vals)
        return out
    return _while_traced(cond_fun, body_fun, init_val)


def _erase_function(name):
    """Removes the private function `name` (a probe trace) from the module."""
    for op in core.current_trace().module.body.operations:
        if "sym_name" in op.attributes and op.attributes["sym_name"].value == name:
            op.erase()
            return


class _WeakCarry(Exception):
    """A weakly typed initial carry that the body gives another dtype: the
    loop is traced again from that dtype (JAX's weak-carry promotion)."""

    def __init__(self, dtypes):
        super().__init__("weak carry")
        self.dtypes = dtypes


def _while_traced(cond_fun, body_fun, init_val, trip_count=None, parallel=False):
    """Emits an ember.while whose regions hold the traced cond and body
    (with `trip_count`, a loop known to run exactly that many times). The
    body is traced once, as JAX's, unless a weakly typed initial value must
    take the dtype the body produces: then what was emitted is removed and
    the loop is traced again from the promoted values."""
    leaves, tree = tree_util.tree_flatten_lo(init_val)
    vals = [as_value(x) for x in leaves]
    trace = core.current_trace()
    mark = state._mark(trace)
    try:
        return _emit_while(cond_fun, body_fun, tree, vals, trip_count, True, parallel)
    except _WeakCarry as e:
        state._undo(trace, mark)
        vals = [lax.convert_element_type(v, d) if v.weak_type and v.dtype != d else v
                for v, d in zip(vals, e.dtypes)]
        return _emit_while(cond_fun, body_fun, tree, vals, trip_count, False, parallel)


def _emit_while(cond_fun, body_fun, tree, vals, trip_count, promote, parallel=False):
    avals = [v.aval for v in vals]
    trace = core.current_trace()
    results = trace.emit("ember.while", [trace.to_value(v) for v in vals], avals, regions=2)
    op = results[0].value.owner if results else None
    if op is None:
        raise ValueError("while_loop needs at least one carried value")
    types = [core.mlir_type(a) for a in avals]
    with core.context(), ir.Location.unknown():
        cond_block = op.regions[0].blocks.append(*types)
        body_block = op.regions[1].blocks.append(*types)
        core.annotate_block_args(op, [avals, avals])

    def cond(*xs):
        p = cond_fun(tree_util.tree_unflatten(tree, list(xs)))
        p = as_value(p)
        if p.shape != () or not dtypes.is_bool(p.dtype):
            raise TypeError("while_loop cond_fun must return a boolean scalar, but got output "
                            f"type(s) {p.aval.str_short()} (at {core.where()})")
        return [p]

    def body(*xs):
        new = body_fun(tree_util.tree_unflatten(tree, list(xs)))
        new_leaves, new_tree = tree_util.tree_flatten_lo(new)
        if new_tree != tree:
            raise TypeError("while_loop body_fun output and input must have the same pytree "
                            f"structure (at {core.where()})")
        new_vals = [as_value(x) for x in new_leaves]
        carried = tree_util.tree_unflatten(tree, list(xs))
        _carry_check(_promote_carry(carried, new) if promote else carried, new, "while_loop")
        if promote and any(_promotes(a, n) for a, n in zip(avals, new_vals)):
            raise _WeakCarry([n.dtype for n in new_vals])
        new_weak[:] = [n.weak_type for n in new_vals]
        return new_vals

    new_weak = [a.weak_type for a in avals]

    core.trace_region(cond_block, cond, avals)
    core.trace_region(body_block, body, avals)
    # (The results' weak types are the body's, as JAX's loop results have
    # the body's output types.)
    results = [r if r.aval.weak_type == w else core.Tracer(trace, r.value,
                                                           r.aval.update(weak_type=w))
               for r, w in zip(results, new_weak)]
    if trip_count is not None:
        with core.context():
            op.attributes["trip_count"] = core.i64_attr(core.canonicalize_dim(trip_count))
            if isinstance(trip_count, core.DimExpr):
                op.attributes["ember.sym_attr.trip_count"] = ir.StringAttr.get(
                    str(trip_count))
            if parallel:
                op.attributes["parallel"] = ir.UnitAttr.get()
    return tree_util.tree_unflatten(tree, results)


def associative_scan(fn, elems, reverse=False, axis=0):
    """Inclusive scan with an associative `fn` by recursive doubling
    (Hillis-Steele): log2(n) rounds of whole-array combines. `fn` sees the
    elements with the scan axis where it is (`axis`), as JAX's does."""
    leaves, tree = tree_util.tree_flatten(elems)
    leaves = [as_value(x) for x in leaves]
    if not leaves:
        raise ValueError("associative_scan needs at least one array to scan")
    ndim = leaves[0].ndim
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    axis %= ndim
    if len({x.shape[axis] if x.ndim > axis else None for x in leaves}) != 1:
        raise ValueError("Array inputs to associative_scan must have the same first "
                         f"dimension. (saw: {[x.shape for x in leaves]})")
    if reverse:
        leaves = [jnp.flip(x, axis) for x in leaves]
    n = leaves[0].shape[axis]

    def part(x, start, stop):
        return lax.slice_in_dim(x, start, stop, axis=axis)

    offset = 1
    while offset < n:
        a = tree_util.tree_unflatten(tree, [part(x, 0, n - offset) for x in leaves])
        b = tree_util.tree_unflatten(tree, [part(x, offset, n) for x in leaves])
        c = [as_value(y) for y in tree_util.tree_leaves(fn(a, b))]
        for x, y in zip(leaves, c):
            if x.dtype != y.dtype:
                raise TypeError("lax.concatenate requires arguments to have the same "
                                f"dtypes, got {x.dtype}, {y.dtype}.")
        leaves = [lax.concatenate([part(x, 0, offset), y], axis) for x, y in zip(leaves, c)]
        offset *= 2
    if reverse:
        leaves = [jnp.flip(x, axis) for x in leaves]
    return tree_util.tree_unflatten(tree, leaves)


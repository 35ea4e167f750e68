"""vmap: the function is traced per example into a private MLIR function and
an `ember.vmap` op marks which inputs carry the batch dimension; the
`ember-expand-transforms` pass (C++) rewrites the body with each op's batching rule."""

import functools
import threading

import numpy as np

from ember._mlir import ir

from . import api_util, core, dtypes, hitypes, lax, parallel, state, tree_util
from .api import eager_transform
from .api_util import Traced, static_positions
from .core import as_value
from .numpy import lax_numpy as jnp


def _is_axis_leaf(x):
    return x is None or isinstance(x, int)


class _HiPending:
    """The axes of a hi value's lowered arrays, known once the mapped size
    is (`_resolve_hi`): its type and mapping spec."""

    def __init__(self, ty, spec):
        self.ty, self.spec = ty, spec


def _hi_axes(prefix, x, what, size):
    ty = hitypes.hi_typeof(x)
    count = len(tree_util.tree_leaves_lo(x))
    if prefix is None:
        return [None] * count
    if not isinstance(prefix, hitypes.MappingSpec) and \
            not (hitypes.is_array_like(ty) and isinstance(prefix, int)):
        raise ValueError(f"vmap {what} entry for a value of hijax type "
                         f"{hitypes._type_str(ty)} must be a MappingSpec of its type or None, "
                         f"got {prefix!r}")
    if getattr(x, "carrier", None) is not None:
        raise NotImplementedError("vmap of a function of a differentiated hijax value "
                                  f"(of type {hitypes._type_str(ty)}) is not built")
    if size is None:
        return [_HiPending(ty, prefix)] * count
    if hitypes.is_array_like(ty):  # (its type is read from results batched on their first axis)
        ty = ty.dec_rank(size, 0)
    return hitypes.lo_axes(ty, prefix, size)


def _resolve_hi(axes, n):
    """`axes` with each hi value's placeholders replaced by its arrays'
    axes; also the per-example type of each hi value, in order."""
    out, elems, k = [], [], 0
    while k < len(axes):
        p = axes[k]
        if not isinstance(p, _HiPending):
            out.append(p)
            k += 1
            continue
        elem = p.ty.dec_rank(n, p.spec)
        lo = hitypes.lo_axes(elem, p.spec, n, batched=p.ty)
        out.extend(lo)
        elems.append(elem)
        k += len(lo)
    return out, elems


def _axes_for(prefix, tree, what, size=None):
    """Broadcasts an in_axes/out_axes prefix over `tree`; returns one axis
    (int or None) per leaf of `tree`, a hi value counting as its lowered
    arrays (`size`: the mapped size, None while it is not known)."""
    if hitypes.is_hi(tree):
        return _hi_axes(prefix, tree, what, size)
    if _is_axis_leaf(prefix) or isinstance(prefix, hitypes.MappingSpec):
        leaves = tree_util.tree_leaves(tree)
        if not isinstance(prefix, hitypes.MappingSpec) and \
                not any(hitypes.is_hi(x) for x in leaves):
            return [prefix] * len(leaves)
        node = tree_util._children(tree)
        if node is None:
            raise ValueError(f"vmap {what} entry {prefix!r} is a MappingSpec, for values of "
                             "a hijax type, but the value is an array")
        return [a for c in node[2] for a in _axes_for(prefix, c, what, size)]
    node = tree_util._children(tree)
    pnode = tree_util._children(prefix)
    if node is None or pnode is None or node[0] is not pnode[0] or \
            len(node[2]) != len(pnode[2]) or (node[0] is dict and node[1] != pnode[1]):
        raise ValueError(f"vmap {what} specification must be a tree prefix of the "
                         f"corresponding value, got specification {prefix} for value tree "
                         f"{tree_util.tree_structure(tree)}.")
    out = []
    for p, t in zip(pnode[2], node[2]):
        out.extend(_axes_for(p, t, what, size))
    return out


def vmap(fun, in_axes=0, out_axes=0, axis_name=None, axis_size=None, spmd_axis_name=None):
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (_is_axis_leaf(in_axes) or isinstance(in_axes, (tuple, dict, hitypes.MappingSpec))):
        raise TypeError("vmap in_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {in_axes}.")
    # (An axis is an int, not a bool or a float: JAX's TypeErrors.)
    if isinstance(in_axes, (bool, float)):
        raise TypeError("vmap in_axes must be an int, None, or a tuple of entries "
                        "corresponding to the positional arguments passed to the function, "
                        f"but got {in_axes}.")
    if any(isinstance(a, (bool, float)) for a in tree_util.tree_leaves(out_axes)):
        raise TypeError("vmap out_axes must be an int, None, or (nested) container with those "
                        f"types as leaves, but got {out_axes}.")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                             "corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        if not core._trace_stack:
            dynamic = [i for i, a in enumerate(args)
                       if not (isinstance(in_axes, tuple) and in_axes[i] is None)]
            static = static_positions(args, dynamic)
            return eager_transform(
                lambda *a: _vmap_traced(fun, in_axes, out_axes, axis_size, a, kwargs, axis_name),
                args, static)
        return _vmap_traced(fun, in_axes, out_axes, axis_size, args, kwargs, axis_name)
    return wrapped


def _vmap_traced(fun, in_axes, out_axes, axis_size, args, kwargs, axis_name=None,
                 check_vma=False, processes=1, devices=False, shared_refs=False):
    rule = getattr(fun, "vmap_with_rule", None)
    if rule is not None and axis_name is None and not check_vma and processes == 1:
        # A function with its own batching rule (custom_batching.custom_vmap)
        # mapped directly.
        return rule(in_axes, out_axes, axis_size, args, kwargs)
    leaves, treedef = tree_util.tree_flatten_lo(args)
    axes = _axes_for(in_axes, args, "in_axes")
    if any(isinstance(a, _HiPending) for a in axes):
        # Hi values: their arrays' axes follow from the mapped size.
        known = [(x.shape if isinstance(x, state.Ref) else as_value(x).shape)[a]
                 for x, a in zip(leaves, axes)
                 if a is not None and not isinstance(a, _HiPending)]
        known += [a.ty.shape[a.spec] for a in axes  # (array-like: an int axis of its shape)
                  if isinstance(a, _HiPending) and hitypes.is_array_like(a.ty) and -len(a.ty.shape)
                  <= a.spec < len(a.ty.shape)]
        n_hi = axis_size if axis_size is not None else known[0] if known else None
        if n_hi is None:
            raise ValueError("vmap over a value of a hijax type needs axis_size= "
                             "(no array argument gives the mapped size)")
        axes, elems = _resolve_hi(axes, n_hi)
        it = iter(elems)
        treedef = tree_util.replace_hi_nodes(
            treedef, lambda aux: hitypes.retyped_node(aux, next(it)))
    kw_leaves, kw_def = tree_util.tree_flatten(kwargs)
    leaves, axes = leaves + kw_leaves, axes + [0] * len(kw_leaves)
    sizes, moved = [], []
    ref_args = []  # (position, the caller's Ref, its axis)
    for i, (x, ax) in enumerate(zip(leaves, axes)):
        if isinstance(x, state.Ref):
            state.check_access(x)
            ref_args.append((i, x, ax))
            x = x._value
        if ax is None:
            moved.append(x)
            continue
        x = as_value(x)
        if not -x.ndim <= ax < max(x.ndim, 1) or x.ndim == 0:
            rank = ax + 1 if ax >= 0 else -ax
            raise ValueError(f"vmap was requested to map its argument along axis {ax}, which "
                             f"implies that its rank should be at least {rank}, "
                             f"but is only {x.ndim} (its shape is {x.shape})")
        ax = ax % x.ndim
        sizes.append((i, x.shape[ax], ax, x.shape))
        moved.append(jnp.moveaxis(x, ax, 0) if ax else x)
    distinct = {s for _, s, _, _ in sizes}
    if axis_size is not None:
        distinct.add(axis_size)
    if len(distinct) > 1:
        lines = "\n".join(f"  argument {i} has shape {shape} and axis {ax} is to be mapped"
                          for i, _, ax, shape in sizes)
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n" + lines)
    if not distinct:
        raise ValueError("vmap must have at least one non-None value in in_axes")
    n = distinct.pop()
    batched_idx = [i for i, ax in enumerate(axes) if ax is not None]
    if axis_name is None:
        example_avals, batch_sharding = _split_batch_shardings(
            [moved[i].aval for i in batched_idx])
    else:
        # Lanes of a named axis (shard_map, pmap): per-device blocks, whose
        # types carry the varying axes instead of a sharding.
        example_avals = [moved[i].aval.update(shape=moved[i].shape[1:], sharding=None)
                         for i in batched_idx]
        batch_sharding = None
    n_args = treedef.num_leaves

    store = {}

    def per_example(*xs):
        # (Printing a value of this body shows JAX's VmapTracer when it
        # depends on a mapped argument: core.Tracer.__repr__.)
        if not devices:  # (shard_map/pmap bodies are not vmaps to JAX)
            core.current_trace().vmap_lanes = (n, len(batched_idx))
            core.current_trace().vmap_axis_name = axis_name
        if devices and core.current_trace().concrete:
            # Lanes of devices outside jit (eager shard_map): an argument's
            # value is the outer value's lane along this axis, so that JAX's
            # per-device printing can compute it (shard_map._lanes_repr).
            for x, i in zip(xs, batched_idx):
                if isinstance(x, core.Tracer) and x.src is None:
                    x.src = ("lanes", moved[i], axis_name)
        full = list(moved)
        for i, x in zip(batched_idx, xs):
            full[i] = x
        # A Ref argument is a ref again inside (one element of it when mapped).
        refs = []
        for i, _, _ in ref_args:
            full[i] = state.Ref(full[i], array_ref=True)
            full[i]._home = None
            refs.append(full[i])
        a = tree_util.tree_unflatten(treedef, full[:n_args])
        k = tree_util.tree_unflatten(kw_def, full[n_args:])
        tokens = [(h, h.enter()) for h in body_hooks]
        try:
            if axis_name is None:
                out = fun(*a, **k)
            else:
                with parallel.bind_axis(axis_name, n, check_vma, processes, devices):
                    out = fun(*a, **k)
        finally:
            extras = [(h, t, h.exit(t)) for h, t in reversed(tokens)]
        # (float0 results, `grad`'s of integer values, stay in the tree.)
        out = api_util.float0_static(out)
        leaves_out, store["tree"] = tree_util.tree_flatten_lo(out)
        store["extras"] = [(h, t, len(vals)) for h, t, vals in extras]
        return leaves_out + [r._value for r in refs] + [v for _, _, vals in extras
                                                        for v in vals]

    # `shared_refs`: the lanes are cores sharing the memory behind the refs
    # they close over (a TPU core_map), so their writes are merged below.
    traced = Traced(per_example, example_avals, refs_ok=True if shared_refs else (
        "performing a set/swap operation with vmapped value on an unbatched array "
        "reference: a Ref closed over by a vmapped function cannot be written; move "
        "the array reference to be an argument to the vmapped function"))
    operands = [moved[i] for i in batched_idx] + traced.captured
    flags = [True] * len(batched_idx) + [False] * len(traced.captured)
    trace = core.current_trace()
    ctx = core.context()
    attrs = {"callee": ir.FlatSymbolRefAttr.get(traced.name, ctx),
             "batched": ir.DenseBoolArrayAttr.get(flags, ctx),
             "batch_size": core.i64_attr(n)}
    if axis_name is not None:
        # Any hashable names an axis in JAX; the IR spells it as text.
        attrs["axis_name"] = ir.StringAttr.get(str(axis_name), ctx)
    if devices and processes == 1:
        # The lanes are devices (shard_map, pmap): StableHLO out writes the
        # vmap as a manual computation over them.
        attrs["ember.device_axis"] = ir.UnitAttr.get(ctx)
    # The lanes of a named axis become the batch dimension: the results no
    # longer vary over that axis (shard_map's check_vma types).
    res = trace.emit("ember.vmap", [trace.to_value(v) for v in operands],
                     [_with_batch_sharding(a.update(vma=a.vma - {axis_name}), n, batch_sharding)
                      for a in traced.out_avals], attrs)
    if traced.ref_outs:
        # (Only with shared_refs: the closed-over refs' final values per lane.)
        k = len(res) - len(traced.ref_outs)
        state.bind_written(traced.ref_outs, [_merge_lanes(core.as_value(r._value), v)
                                             for r, v in zip(traced.ref_outs, res[k:])])
        res = res[:k]
    # Values the body hooks added (checkify's checks), batched: theirs.
    for h, token, count in reversed(store["extras"]):
        if count:
            h.finish(token, res[len(res) - count:])
            res = res[:len(res) - count]
        else:
            h.finish(token, [])
    mapped = None
    if ref_args:
        mapped = _mapped_outputs(trace, traced.name, len(batched_idx), len(res), axis_name)
        _write_ref_args(ref_args, res[len(res) - len(ref_args):],
                        mapped[len(res) - len(ref_args):] if mapped else None)
        res = res[:len(res) - len(ref_args)]
    out = tree_util.tree_unflatten(store["tree"], res)
    oaxes = _axes_for(out_axes, out, "out_axes", n)
    if mapped is None and any(ax is None for ax in oaxes):
        mapped = _mapped_outputs(trace, traced.name, len(batched_idx), len(res), axis_name)
    final = []
    for k, (r, ax) in enumerate(zip(res, oaxes)):
        if ax is None:
            if mapped is not None and mapped[k]:
                raise ValueError("vmap has mapped output but out_axes is None")
            final.append(r[0])
        else:
            if not -r.ndim <= ax < r.ndim:
                raise ValueError(f"vmap out_axes specification {ax} is out of bounds for an "
                                 f"output of rank {r.ndim} (shape {r.shape}, including the "
                                 f"mapped axis)")
            final.append(jnp.moveaxis(r, 0, ax % r.ndim) if ax % r.ndim else r)
    result = tree_util.tree_unflatten(_batched_hi_tree(store["tree"], out, out_axes, n), final)
    return _batched_float0(result, out_axes, n)


def _batched_float0(out, out_axes, n):
    """The float0 leaves of vmap's result (`grad`'s of integer values, no
    program's values) with the mapped axis where out_axes puts it."""
    def fix(ax, sub):
        def one(v):
            if not core.is_float0(v) or ax is None:
                return v
            at = ax % (v.ndim + 1)
            return core.float0_zeros(v.shape[:at] + (n,) + v.shape[at:])
        return tree_util.tree_map(one, sub)

    if not any(core.is_float0(v) for v in tree_util.tree_leaves(out)):
        return out
    if out_axes is None or isinstance(out_axes, int):
        return fix(out_axes, out)
    return tree_util.tree_map(fix, out_axes, out, is_leaf=lambda x: x is None)


# Hooks around the body of a `vmap` (checkify's checks in it): `enter()`
# when its trace begins returns a token; `exit(token)` when it ends returns
# extra values the body returns; `finish(token, batched)` gets them with
# their batch axis, in the caller's trace.
body_hooks = []


def _batched_hi_tree(tree, out, out_axes, n):
    """The output treedef with each hi value's per-example type replaced by
    its mapped type (`inc_rank` by its out_axes spec)."""
    if not tree_util.hi_node_spans(tree):
        return tree
    specs = hitypes.prefix_entries(out_axes, out)
    it = iter(specs)

    def node(aux):
        spec = next(it)
        return hitypes.retyped_node(aux, aux[0] if spec is None else aux[0].inc_rank(n, spec))
    return tree_util.replace_hi_nodes(tree, node)


def _split_batch_shardings(avals):
    """The per-example avals of batched arguments (a NamedSharding loses its
    first, mapped, dimension), and (mesh, that dimension's spec entry) of
    the first argument whose mapped dimension is sharded, else None: the
    results' mapped dimension keeps it, as in JAX."""
    from .mesh import NamedSharding

    out, batch = [], None
    for a in avals:
        sh = core.named_sharding(a)
        if sh is None:
            out.append(a.update(shape=a.shape[1:]))
            continue
        entries = [sh.spec[d] if d < len(sh.spec) else None for d in range(a.ndim)]
        spec = sh.spec.update(partitions=entries[1:])
        out.append(a.update(shape=a.shape[1:], sharding=NamedSharding(sh.mesh, spec)))
        if batch is None and entries[0] is not None:
            batch = (sh.mesh, entries[0])
    return out, batch


def _with_batch_sharding(aval, n, batch):
    """`aval` of one example as the stacked result: the mapped dimension in
    front, sharded as the arguments' (when no other dimension uses those
    mesh axes)."""
    from .mesh import NamedSharding, PartitionSpec

    sh = core.named_sharding(aval)
    out = aval.update(shape=(n,) + aval.shape)
    if sh is None and batch is None:
        return out
    mesh = sh.mesh if sh is not None else batch[0]
    rest = [sh.spec[d] if d < len(sh.spec) else None for d in range(aval.ndim)] if sh else \
        [None] * aval.ndim
    first = None
    if batch is not None and batch[0] == mesh:
        used = set(PartitionSpec(*rest).all_axes())
        first = batch[1] if not used & set(PartitionSpec(batch[1]).all_axes()) else None
    spec = PartitionSpec(first, *rest) if sh is None else \
        sh.spec.update(partitions=[first] + rest)
    return out.update(sharding=NamedSharding(mesh, spec))


def _merge_lanes(old, lanes):
    """A shared buffer after lanes that each wrote a copy of it (cores of
    one TPU device writing its memory): every element a lane changed takes
    that lane's value (the last such lane's, were several to write it);
    "changed" compares bits, so that writing -0.0 over 0.0 or a NaN counts.
    Elements a lane wrote with their old bits are the same either way."""
    if dtypes.is_float(old.dtype):
        width = np.dtype(old.dtype).itemsize * 8
        as_bits = lambda v: lax.bitcast_convert_type(v, np.dtype(f"uint{width}"))  # noqa: E731
    else:
        as_bits = lambda v: v  # noqa: E731
    out, old_bits = old, as_bits(old)
    for i in range(lanes.shape[0]):
        lane = lanes[i]
        out = jnp.where(as_bits(lane) != old_bits, lane, out)
    return out


def _write_ref_args(ref_args, finals, mapped):
    """The final values of vmap's Ref arguments (`finals`, mapped on axis 0)
    written back: a mapped ref takes them on its axis; an unmapped one takes
    the one value, which must not depend on the mapped inputs."""
    trace = core.current_trace()
    for (_, ref, ax), r, m in zip(ref_args, finals, mapped or [True] * len(finals)):
        trace.written.add(id(ref))
        if ax is None:
            if m:
                raise core.type_error(
                    "performing a set/swap operation with vmapped value on an unbatched "
                    f"array reference of type {ref!r}; move the array reference to be an "
                    "argument to the vmapped function and map it")
            ref._value = r[0]
        else:
            ax = ax % r.ndim
            ref._value = jnp.moveaxis(r, 0, ax) if ax else r


def _mapped_outputs(trace, name, n_batched, n_out, axis_name=None):
    """Which results of the traced per-example function `name` depend on its
    first `n_batched` (batched) arguments, by forward dataflow over its body
    (values used inside an op's regions count as that op's operands).
    Collectives over `axis_name` make values the same on every lane
    (reductions, gathers) or different (axis_index, permutations).
    Returns None when the function cannot be found."""
    func = None
    for op in trace.module.body.operations:
        attrs = op.operation.attributes
        if "sym_name" in attrs and ir.StringAttr(attrs["sym_name"]).value == name:
            func = op.operation
            break
    if func is None:
        return None
    block = func.regions[0].blocks[0]
    dep = {block.arguments[i] for i in range(n_batched)}

    def own(op):
        return axis_name is not None and op.name in parallel.COLLECTIVES and \
            ir.StringAttr(op.attributes["axis"]).value == str(axis_name)

    def uses_dep(op):
        if own(op):
            return op.name not in parallel.SAME_ON_LANES
        if any(v in dep for v in op.operands):
            return True
        return any(uses_dep(inner.operation) for region in op.regions
                   for b in region.blocks for inner in b.operations)

    ret = None
    for op in block.operations:
        op = op.operation
        if uses_dep(op):
            dep.update(op.results)
        ret = op
    return [v in dep for v in ret.operands][:n_out]


# --------------------------------------------------------------------------
# Users' batching rules inside vmapped functions
# --------------------------------------------------------------------------


class AxisData:
    """JAX's `AxisData`: the mapped axis a batching rule runs for."""

    def __init__(self, name, size, spmd_name=None):
        self.name, self.size, self.spmd_name = name, size, spmd_name

    def __repr__(self):
        return f"AxisData(name={self.name!r}, size={self.size}, spmd_name={self.spmd_name!r})"


class _Ruled(threading.local):
    frames = ()  # vmap bodies whose batching rules are being traced


_ruled = _Ruled()


def enclosing_vmap():
    """(size, axis name) of the innermost user vmap whose body the current
    code is traced in (not counting one whose rule is being traced), or
    None. shard_map and pmap lanes are devices, which run a call each."""
    for t in reversed(core._trace_stack.items):
        lanes = getattr(t, "vmap_lanes", None)
        if lanes and not any(t is f for f in _ruled.frames):
            return t, lanes[0], getattr(t, "vmap_axis_name", None)
    return None


def _unbatched_in(frame, v):
    """Whether `v` is surely the same on every lane of the vmap whose body
    `frame` traces: a constant, a value from outside the body, or a value
    of the body computed without its mapped arguments (def-use chains
    through ops without regions; a closed-over value is an argument after
    the mapped ones)."""
    if not isinstance(v, core.Tracer) or frame._is_ancestor(v._trace):
        return True  # (a value from outside the body: closed over)
    if v._trace is not frame:
        return False
    # (An op with regions may read mapped values from above in them.)
    return not v._depends_on_arguments(frame.vmap_lanes[1], through_regions=False)


def call_with_rule(fun, vals, rule, what):
    """`fun(*vals)` (flat arrays to flat arrays) traced as a call that
    `ember-batch` batches with `rule` instead of batching `fun`'s ops:
    `rule(axis_data, batched, *xs)` takes the arguments flagged batched
    (those that may differ between lanes) with a new leading axis of the
    enclosing vmap's size, the others as they are (JAX's `None` batch
    dimension), and returns the results batched along a leading axis
    (spec.md, "Batching rules on calls"). Outside a vmap, or when `fun`
    closes over traced values, `fun(*vals)` itself."""
    found = enclosing_vmap()
    if found is None:
        return fun(*vals)
    frame, n, name = found
    flags = [not _unbatched_in(frame, v) for v in vals]
    vals = [as_value(v) for v in vals]
    avals = [v.aval.update(vma=frozenset()) for v in vals]
    f = Traced(lambda *xs: list(fun(*xs)), avals, sources=vals)
    if f.captured or f.ref_outs or any(a.vma for a in avals):
        return fun(*vals)
    _ruled.frames = _ruled.frames + (frame,)
    try:
        b = Traced(lambda *xs: list(rule(AxisData(name, n), list(flags), *xs)),
                   [core.ShapedArray((n,) + tuple(a.shape), a.dtype, a.weak_type) if fl
                    else core.ShapedArray(a.shape, a.dtype, a.weak_type)
                    for a, fl in zip(avals, flags)])
    finally:
        _ruled.frames = _ruled.frames[:-1]
    want = [(n,) + tuple(a.shape) for a in f.out_avals]
    got = [tuple(a.shape) for a in b.out_avals]
    if b.captured or b.ref_outs or got != want or \
            [a.dtype for a in b.out_avals] != [a.dtype for a in f.out_avals]:
        raise ValueError(
            f"the batching rule of {what} gives results of shapes "
            f"{[a.str_short() for a in b.out_avals]} for a batch of {n}, not the "
            f"results' {[a.str_short() for a in f.out_avals]} with a leading axis of "
            f"{n} (and it may not close over traced values) (at {core.where()})")
    trace = core.current_trace()
    ctx = core.context()
    attrs = {"callee": ir.FlatSymbolRefAttr.get(f.name, ctx),
             "ember.batch_rule": ir.FlatSymbolRefAttr.get(b.name, ctx),
             "ember.batch_size": core.i64_attr(n)}
    return trace.emit("func.call", [trace.to_value(v) for v in vals], f.out_avals, attrs)


def to_leading(x, d, n):
    """A rule's result `x`, batched along `d` (None: not batched), with the
    batch leading."""
    x = as_value(x)
    if d is None:
        return jnp.broadcast_to(x, (n,) + tuple(x.shape))
    if not -x.ndim <= d < x.ndim:
        raise ValueError(f"a batching rule returned a result of type {x.aval.str_short()} "
                         f"batched along axis {d}, which it does not have "
                         f"(at {core.where()})")
    return jnp.moveaxis(x, d, 0) if d % x.ndim else x

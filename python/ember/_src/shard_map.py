"""`shard_map` and `pmap` on named vmaps (the collectives are in
`parallel.py`).

`shard_map` splits each argument into the blocks of its `in_specs`, maps the
function over the manual mesh axes with one named `vmap` per axis (mesh
order, outermost first), and reassembles the results by `out_specs`; with
`check_vma` the blocks are typed as varying over the axes they are split
over. `pmap` is a named vmap under `jit`, one lane per device.
"""

import functools
import math
import threading

import numpy as np

from . import core, hitypes, parallel, tree_util
from .api_util import with_dynamic
from .core import as_value
from .parallel import _retype_vma, _retyped


def pmap(fun=None, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
    """JAX's pmap over Ember's devices: the mapped axis is a named vmap (one
    lane per device; at most as many lanes as devices), compiled with jit."""
    if fun is None:
        return lambda f: pmap(f, axis_name, in_axes=in_axes, out_axes=out_axes,
                              static_broadcasted_argnums=static_broadcasted_argnums,
                              devices=devices, backend=backend, axis_size=axis_size)
    from . import batching
    from . import devices as devices_lib
    from .api import jit

    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    available = len(devices) if devices is not None else devices_lib.device_count(backend)

    @functools.wraps(fun)
    def mapped(*args):
        dyn = [a for i, a in enumerate(args) if i not in static_broadcasted_argnums]
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        if isinstance(in_axes, (tuple, list)):
            axes = [ax for i, ax in enumerate(in_axes) if i not in static_broadcasted_argnums]
        sizes = {as_value(leaf).shape[ax] for a, ax in zip(dyn, axes) if ax is not None
                 for leaf in tree_util.tree_leaves_lo(a)}
        n = sizes.pop() if len(sizes) == 1 else axis_size
        if n is not None and n > available:
            raise ValueError(f"compiling computation that requires {n} logical devices, but "
                             f"only {available} XLA devices are available (num_replicas={n})")
        return _pmapped(*args)

    def per_call(*args):
        dyn_pos = [i for i in range(len(args)) if i not in static_broadcasted_argnums]
        inner = with_dynamic(fun, args, dyn_pos)
        axes = in_axes
        if isinstance(in_axes, (tuple, list)):
            axes = tuple(in_axes[i] for i in dyn_pos)
        # (Under jit, so traced: the named vmap whose lanes are devices; an
        # unnamed pmap's axis gets a name no user code can spell.)
        name = axis_name if axis_name is not None else _UnnamedPmapAxis()
        return batching._vmap_traced(inner, axes, out_axes, axis_size,
                                     tuple(args[i] for i in dyn_pos), {}, name,
                                     devices=True)

    _pmapped = jit(per_call, static_argnums=tuple(static_broadcasted_argnums))
    return mapped


class _UnnamedPmapAxis:
    """The axis of a `pmap` without `axis_name` (hashable by identity)."""

    def __str__(self):
        return f"<pmap axis {id(self):x}>"


def shard_map(f=None, /, *, out_specs, in_specs=None, mesh=None, axis_names=frozenset(),
              check_vma=True, check_rep=None):
    """JAX's shard_map: `f` runs on each block of its arguments (split over
    the mesh axes by `in_specs`), collectives combine blocks, and the
    results are assembled by `out_specs`."""
    if check_rep is not None:
        check_vma = check_rep
    if f is None:
        return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma)
    from .api import eager

    @functools.wraps(f)
    def wrapped(*args):
        if not core._trace_stack:
            m = _mesh_of(mesh)
            _check_explicit_inputs(args, in_specs, m)
            manual = [a for a in m.axis_names if not axis_names or a in axis_names]
            _eager_bodies.meshes.append((m, manual))
            try:
                out = eager(lambda *a: _shard_map_traced(f, a, m, in_specs, out_specs,
                                                         axis_names, check_vma), args)
            finally:
                _eager_bodies.meshes.pop()
            return _record_shardings(out, out_specs, m)
        _check_explicit_inputs(args, in_specs, _mesh_of(mesh))
        return _shard_map_traced(f, args, mesh, in_specs, out_specs, axis_names, check_vma)
    return wrapped


class _EagerBodies(threading.local):
    def __init__(self):
        self.meshes = []  # (mesh, manual axes) of eager shard_map bodies


_eager_bodies = _EagerBodies()


def _lanes_value(t, memo):
    """(axes, array) of a value in an eager shard_map body: `array` holds
    one value per device lane, with a leading dimension per axis of `axes`
    (outermost first); None when it cannot be computed (an op with regions,
    a value of a jitted function)."""
    if not isinstance(t, core.Tracer):
        return (), t
    if id(t) in memo:
        return memo[id(t)]
    src = t.src
    if src is None:
        out = None
    elif src[0] == "value":
        out = (), src[1]
    elif src[0] == "same":
        out = _lanes_value(src[1], memo)
    elif src[0] == "lanes":
        outer = _lanes_value(src[1], memo)
        out = None if outer is None else (outer[0] + (src[2],), outer[1])
    elif src[0] == "fn":  # a collective (parallel._emit)
        deps = [_lanes_value(a, memo) for a in src[2]]
        out = None if any(d is None for d in deps) else _apply_lanes(src[1], deps)
    else:
        _, prim, args, params, out_avals, index = src
        deps = [_lanes_value(a, memo) for a in args]
        if any(d is None for d in deps):
            out = None
        elif not any(d[0] for d in deps):
            try:
                out = (), core.eager_apply(prim, [d[1] for d in deps], params, out_avals)[index]
            except Exception:  # noqa: BLE001 (an op that cannot run alone)
                out = None
        else:
            def apply(*a):
                res = prim.bind(*a, **params)
                return res[index] if prim.multiple_results else res
            out = _apply_lanes(apply, deps)
    memo[id(t)] = out
    return out


def _apply_lanes(fn, deps):
    """`fn` applied lane by lane (nested named vmaps, so collectives see
    their axes), outside any trace."""
    from . import batching

    axes = max((d[0] for d in deps), key=len, default=())
    mesh, manual = _eager_bodies.meshes[-1]
    if not axes:  # (a collective of values the same on every device)
        axes = tuple(manual)
    counts = [len(d[0]) for d in deps]

    def build(level):
        if level == len(axes):
            return fn
        in_axes = tuple(0 if c > level else None for c in counts)
        return batching.vmap(build(level + 1), in_axes=in_axes, axis_name=axes[level],
                             axis_size=mesh.shape[axes[level]])

    try:
        with core.compile_time_eval():
            return axes, build(0)(*[d[1] for d in deps])
    except Exception:  # noqa: BLE001 (not computable lane by lane: no per-device text)
        return None


def _lanes_repr(t):
    """JAX's text for a value printed in a shard_map body outside jit: each
    device's value under its mesh coordinates."""
    if not _eager_bodies.meshes or not isinstance(t, core.Tracer):
        return None
    mesh, manual = _eager_bodies.meshes[-1]
    if list(manual) != list(mesh.axis_names):
        return None
    val = _lanes_value(t, {})
    if val is None or any(a not in mesh.axis_names for a in val[0]):
        return None
    axes, arr = val
    arr = np.asarray(arr)
    names = "(" + "".join(f"{a}, " for a in mesh.axis_names).rstrip(" ") + ")"
    parts = []
    for coords in np.ndindex(*mesh.devices.shape):
        idx = tuple(coords[list(mesh.axis_names).index(a)] for a in axes)
        dev = mesh.devices[coords]
        parts.append(f"On {dev.platform}:{dev.id} at mesh coordinates {names} = "
                     f"{tuple(int(c) for c in coords)}:\n{arr[idx] if idx else arr}\n")
    return "\n".join(parts)


core.lanes_repr_hook = _lanes_repr


def _mesh_of(mesh):
    from .mesh import current_mesh

    mesh = mesh if mesh is not None else current_mesh()
    if mesh is None:
        raise ValueError("shard_map requires a mesh: pass mesh= or set one with jax.set_mesh")
    return mesh


def _check_explicit_inputs(args, in_specs, mesh):
    """On a mesh with Explicit axes an argument's sharding must be its
    in_spec (JAX's check; in Ember only arrays placed with a sharding, and
    jit arguments made from them, carry one)."""
    from .mesh import AxisType, NamedSharding, PartitionSpec

    if in_specs is None or AxisType.Explicit not in mesh.axis_types:
        return
    leaves = tree_util.tree_leaves_lo(args)
    specs = _spec_leaves(in_specs, tuple(args), "in_specs", "shard_map")
    for x, spec in zip(leaves, specs):
        if not isinstance(spec, PartitionSpec):
            continue
        x = as_value(x)
        s = x.aval.sharding
        have = s.spec if isinstance(s, NamedSharding) else PartitionSpec(*([None] * x.ndim))
        explicit = [n for n, t in zip(mesh.axis_names, mesh.axis_types)
                    if t == AxisType.Explicit]
        want = [a for a in spec.all_axes() if a in explicit]
        if want != [a for a in have.all_axes() if a in explicit] or \
                spec._normalized() != have._normalized() and want:
            raise ValueError(
                f"in_specs passed to shard_map: {spec!r} does not match the specs of the "
                f"input: {have!r} for arg: {x.aval.str_short()}. `in_specs` is an optional "
                f"argument so you can omit specifying it and shard_map will infer the "
                f"in_specs from the arguments. If you want to reshard your inputs, you can "
                f"use `jax.reshard` on the arguments and then pass those args to shard_map.")


def _record_shardings(out, out_specs, mesh):
    from .mesh import NamedSharding

    leaves, tree = tree_util.tree_flatten_lo(out)
    specs = _spec_leaves(out_specs, out, "out_specs", "shard_map")
    put = []
    for x, spec in zip(leaves, specs):
        if isinstance(x, core.Array):
            x = core.Array.with_sharding(x._value, x.weak_type, NamedSharding(mesh, spec))
        put.append(x)
    return tree_util.tree_unflatten(tree, put)


def _spec_leaves(specs, tree, what, fname):
    """One PartitionSpec per leaf of `tree` from the prefix `specs` (per
    lowered array of a hi value, from its `HiPspec`)."""
    from .mesh import PartitionSpec

    def is_leaf(s):
        return s is None or isinstance(s, PartitionSpec)
    if hitypes.is_hi(tree):
        n = len(hitypes.lo_types(hitypes.hi_typeof(tree)))
        if hitypes.is_array_like(hitypes.hi_typeof(tree)) and is_leaf(specs):
            return [specs]  # (a key array: its spec is its data's, words unsharded)
        if not isinstance(specs, hitypes.HiPspec):
            raise TypeError(f"shard_map {what} entry for a value of hijax type "
                            f"{hitypes._type_str(hitypes.hi_typeof(tree))} must be a HiPspec "
                            f"of its type, got {specs!r}")
        lo = list(specs.to_lo())
        if len(lo) != n:
            raise TypeError(f"{specs!r}.to_lo() gives {len(lo)} PartitionSpecs for the {n} "
                            "lowered arrays of its type")
        return lo
    if is_leaf(specs) or isinstance(specs, hitypes.HiPspec):
        leaves = tree_util.tree_leaves(tree)
        if not any(hitypes.is_hi(x) for x in leaves):
            if isinstance(specs, hitypes.HiPspec):
                raise TypeError(f"shard_map {what} entry {specs!r} is a HiPspec, for values "
                                "of a hijax type, but the value is an array")
            return [specs] * len(leaves)
        return [s for c in tree_util._children(tree)[2]
                for s in _spec_leaves(specs, c, what, fname)]
    out = []
    node = tree_util._children(tree)
    snode = tree_util._children(specs)
    if node is None or snode is None or node[0] is not snode[0] or \
            len(node[2]) != len(snode[2]):
        raise ValueError(f"shard_map applied to the function '{fname}' was given {what} "
                         f"{specs!r}, which is not a tree prefix of the "
                         f"{'arguments' if what == 'in_specs' else 'outputs'} "
                         f"{tree_util.tree_structure(tree)}")
    for s, t in zip(snode[2], node[2]):
        out.extend(_spec_leaves(s, t, what, fname))
    return out


def _shard_map_traced(f, args, mesh, in_specs, out_specs, axis_names, check_vma):
    from .mesh import NamedSharding, PartitionSpec, check_spec
    from .numpy import lax_numpy as jnp

    fname = getattr(f, "__name__", repr(f))
    mesh = _mesh_of(mesh)
    manual = [a for a in mesh.axis_names if not axis_names or a in axis_names]
    sizes = mesh.shape
    leaves, treedef = tree_util.tree_flatten_lo(args)
    leaves = [as_value(x) for x in leaves]
    if tree_util.hi_node_spans(treedef):
        # Hi values: each device sees its shard's type (`HiType.shard`).
        his = iter(hitypes.prefix_entries(in_specs, tuple(args)))
        treedef = tree_util.replace_hi_nodes(treedef, lambda aux: hitypes.retyped_node(
            aux, aux[0].shard(mesh, frozenset(manual), check_vma, next(his))))
    if in_specs is None:  # inferred from the arguments' shardings
        specs = [x.aval.sharding.spec if isinstance(x.aval.sharding, NamedSharding)
                 else PartitionSpec() for x in leaves]
    else:
        specs = _spec_leaves(in_specs, tuple(args), "in_specs", fname)
    for x, spec in zip(leaves, specs):
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"shard_map in_specs entries must be PartitionSpecs, got {spec!r}")
        check_spec(spec, mesh, x.shape, f"shard_map applied to the function '{fname}' in_specs")
        for n in spec.all_axes() + sorted(spec.unreduced | spec.reduced):
            if n not in manual:
                raise NotImplementedError(f"shard_map: in_specs name the mesh axis '{n}', "
                                          "which is not manual (axis_names); Ember does not "
                                          "mix manual and automatic axes")

    procs = _process_split(mesh, manual)
    # Each argument as [mesh axes it is split over (in mesh order)..., block].
    prepared, uses = [], []
    for x, spec in zip(leaves, specs):
        shape, order = [], []
        lead = sorted(spec.unreduced | spec.reduced, key=manual.index)
        if lead and procs > 1:
            raise NotImplementedError("shard_map over several processes: unreduced and "
                                      "reduced in_specs are not supported yet")
        if lead:  # (the data, without the type's rules for unreduced values)
            x = _retyped(x, x.aval.vma, frozenset(), frozenset())
        for n in reversed(lead):
            # One block per device along the axis: a reduced argument's copy,
            # an unreduced one's partial sums (its value on the first device,
            # zeros on the others).
            one = jnp.expand_dims(x, 0)
            if n in spec.reduced:
                x = jnp.broadcast_to(one, (sizes[n],) + x.shape)
            else:
                x = jnp.concatenate([one, jnp.zeros((sizes[n] - 1,) + x.shape, x.dtype)])
        for n in lead:
            order.append((n, len(shape)))
            shape.append(sizes[n])
        for d in range(x.ndim - len(lead)):
            axes = spec.axes(d)
            block = x.shape[len(lead) + d] // math.prod(sizes[n] for n in axes)
            for n in axes:
                order.append((n, len(shape)))
                shape.append(sizes[n])
            order.append((None, len(shape)))
            shape.append(block)
        y = jnp.reshape(x, tuple(shape)) if tuple(shape) != x.shape else x
        mesh_dims = sorted([(manual.index(n), pos) for n, pos in order if n is not None])
        perm = [pos for _, pos in mesh_dims] + [pos for n, pos in order if n is None]
        if perm != list(range(len(perm))):
            y = jnp.transpose(y, perm)
        if procs > 1 and manual[0] in spec.all_axes():
            # This process's lanes of the first (process-split) axis.
            y = parallel.cross_process.own_lanes(y, sizes[manual[0]] // procs)
        prepared.append(y)
        uses.append({n for n, _ in order if n is not None})

    store = {}

    def body(*blocks):
        vals = []
        for b, spec in zip(blocks, specs):
            if check_vma:
                varying = frozenset(spec.all_axes())
                b = as_value(b)
                if varying:
                    b = _retype_vma(b, varying)
                if spec.unreduced or spec.reduced:
                    b = _retyped(b, b.aval.vma, spec.unreduced, spec.reduced)
            vals.append(b)
        out = f(*tree_util.tree_unflatten(treedef, vals))
        out_leaves, store["tree"] = tree_util.tree_flatten_lo(out)
        out_leaves = [as_value(o) for o in out_leaves]
        ospecs = _spec_leaves(out_specs, out, "out_specs", fname)
        if tree_util.hi_node_spans(store["tree"]):
            his = iter(hitypes.prefix_entries(out_specs, out))
            store["tree"] = tree_util.replace_hi_nodes(
                store["tree"], lambda aux: hitypes.retyped_node(
                    aux, aux[0].unshard(mesh, check_vma, next(his))))
        store["specs"] = ospecs
        for o, spec in zip(out_leaves, ospecs):
            if not isinstance(spec, PartitionSpec):
                raise TypeError(f"shard_map out_specs entries must be PartitionSpecs, "
                                f"got {spec!r}")
            if len(spec) > o.ndim:
                raise ValueError(
                    f"shard_map applied to the function '{fname}' was given an out_specs entry "
                    f"which is too long to be compatible with the corresponding output value "
                    f"from the function:\n\nout_specs is {spec!r} which has length "
                    f"{len(spec)}, but {fname}(*args) has shape "
                    f"{o.aval.update(vma=frozenset()).str_short()}, which "
                    f"has rank {o.ndim} (and {o.ndim} < {len(spec)})")
            check_spec(spec, mesh, None, "out_specs")
            if procs > 1 and (spec.unreduced or spec.reduced):
                raise NotImplementedError("shard_map over several processes: unreduced and "
                                          "reduced out_specs are not supported yet")
            if check_vma:
                have = o.aval.sharding.spec.unreduced if hasattr(o.aval.sharding, "spec") \
                    else frozenset()
                for n in sorted(spec.unreduced - have):
                    raise ValueError(
                        f"shard_map applied to the function '{fname}' was given out_specs "
                        f"{spec!r}, which declare the output unreduced over mesh axis {n!r}, "
                        f"but the output {o.aval.str_short()} is not unreduced over it: cast "
                        f"it with jax.lax.pcast(x, {n!r}, to='unreduced')")
                for n in sorted(have - spec.unreduced):
                    raise ValueError(
                        f"shard_map applied to the function '{fname}' was given out_specs "
                        f"{spec!r} for an output {o.aval.str_short()} unreduced over mesh axis "
                        f"{n!r}: reduce it with jax.lax.psum or declare it unreduced in "
                        f"out_specs")
                missing = [n for n in manual if n in o.aval.vma and n not in spec.all_axes()]
                if missing:
                    raise ValueError(
                        f"shard_map applied to the function '{fname}' was given out_specs "
                        f"which require replication which can't be statically inferred given "
                        f"the mesh:\n\nThe mesh given has shape {mesh.axis_sizes} "
                        f"with corresponding axis names {tuple(mesh.axis_names)}.\n\nout_specs "
                        f"is {spec!r} which implies that the corresponding output value is "
                        f"replicated across mesh axis {missing[0]!r}, but could not infer "
                        f"replication over any axes\n\nCheck if these output values are meant "
                        f"to be replicated over those mesh axes. If not, consider revising the "
                        f"corresponding out_specs entries. If so, consider disabling the check "
                        f"by passing the check_vma=False argument to `jax.shard_map`.")
        return out_leaves

    g = body
    for k in reversed(range(len(manual))):
        n = sizes[manual[k]]
        split = procs if k == 0 else 1
        g = _level(g, manual[k], n // split, [manual[k] in u for u in uses], check_vma, split)
    with parallel.manual_mesh(mesh):
        outs = g(*prepared)
    if procs > 1:
        # Every process gets every lane's results. A result replicated over
        # the process axis (checked invariant) is this process's own first
        # lane: the same value, and reverse mode gives it the cotangent here.
        outs = [o if check_vma and manual[0] not in spec.all_axes() else
                parallel.cross_process.gather_outputs(o)
                for o, spec in zip(outs, store["specs"])]

    final = []
    for o, spec in zip(outs, store["specs"]):
        # o is [every manual axis (mesh order)..., block]; an axis the spec
        # does not name is replicated: its first lane.
        keep = [n for n in manual if n in spec.all_axes()]
        summed = tuple(k for k, n in enumerate(manual) if n in spec.unreduced)
        if summed:  # an unreduced result: its value is its partial sums' sum
            o = jnp.sum(o, axis=summed, keepdims=True)
        if len(keep) != len(manual):
            o = o[tuple(slice(None) if n in keep else 0 for n in manual)]
        m = len(keep)
        block_rank = o.ndim - m
        perm, shape = [], []
        for d in range(block_rank):
            for n in spec.axes(d):
                perm.append(keep.index(n))
            perm.append(m + d)
            shape.append(o.shape[m + d] * math.prod(sizes[n] for n in spec.axes(d)))
        if perm != list(range(len(perm))):
            o = jnp.transpose(o, perm)
        if tuple(shape) != o.shape:
            o = jnp.reshape(o, tuple(shape))
        if isinstance(o, core.Tracer):
            # The result's type is sharded by its spec (JAX's, one entry per
            # dimension), also as a `jit` result.
            entries = [spec[i] if i < len(spec) else None for i in range(o.ndim)]
            sh = NamedSharding(mesh, spec.update(partitions=entries))
            o = core.Tracer(o._trace, o.value, o.aval.update(sharding=sh), ("same", o))
        final.append(o)
    return tree_util.tree_unflatten(store["tree"], final)


def _level(g, name, size, mapped, check_vma, processes):
    """`g` mapped over mesh axis `name` (leading dimension of the arguments
    in `mapped`; `size` lanes in this process, of `processes`)."""
    from . import batching

    def h(*xs):
        in_axes = tuple(0 if m else None for m in mapped)
        return batching._vmap_traced(lambda *a: g(*a), in_axes, 0, size, xs, {}, name,
                                     check_vma, processes, devices=True)
    return h


def _process_split(mesh, manual):
    """The number of MPI processes the mesh's first axis is split over (1
    when the mesh is in this process). Each process must own a contiguous
    block of that axis and everything along the other axes."""
    owners = {d.process_index for d in mesh.devices.flat}
    if len(owners) == 1:
        return 1
    cross = parallel.cross_process
    first = mesh.axis_names[0]
    n = mesh.shape[first]
    if cross is None or len(owners) != cross.size or not manual or manual[0] != first or \
            n % cross.size:
        raise NotImplementedError(
            "shard_map over devices of several processes needs distributed.initialize() "
            "and a mesh whose first axis is manual and split evenly over the processes")
    lanes = n // cross.size
    for k in range(n):
        if any(d.process_index != k // lanes for d in np.asarray(mesh.devices[k]).flat):
            raise NotImplementedError(
                "shard_map over several processes: each process must own a contiguous block "
                f"of the first mesh axis '{first}' and every device along the other axes")
    return cross.size


def _shard_aval(aval, mesh, manual_axes, check_vma, spec):
    """An array type's per-device type in shard_map (`HiType.shard` of a hi
    type delegates to it): the block's shape, replicated on the mesh with
    the manual axes Manual, varying over the spec's axes."""
    from .mesh import AxisType, NamedSharding, PartitionSpec

    sizes = mesh.shape
    shape = tuple(d // math.prod(sizes[a] for a in spec.axes(i))
                  for i, d in enumerate(aval.shape))
    abstract = mesh.abstract_mesh.update_axis_types({a: AxisType.Manual for a in manual_axes})
    vma = frozenset(a for a in spec.all_axes() if a in manual_axes) if check_vma else frozenset()
    return core.ShapedArray(shape, aval.dtype, aval.weak_type, vma=vma,
                            sharding=NamedSharding(abstract, PartitionSpec(*[None] * len(shape))))


def _unshard_aval(aval, mesh, check_vma, spec):
    """An array type's global type from its per-device type in shard_map."""
    from .mesh import NamedSharding, PartitionSpec

    sizes = mesh.shape
    shape = tuple(d * math.prod(sizes[a] for a in spec.axes(i))
                  for i, d in enumerate(aval.shape))
    entries = [spec[i] if i < len(spec) else None for i in range(len(shape))]
    return core.ShapedArray(shape, aval.dtype, aval.weak_type,
                            sharding=NamedSharding(mesh.abstract_mesh, PartitionSpec(*entries)))


core._aval_hooks.update(shard=_shard_aval, unshard=_unshard_aval)

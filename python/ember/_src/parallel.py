"""Named axes and collectives: the axis environment of `vmap(axis_name=)`,
`pmap` and `shard_map` (`shard_map.py`), and `lax.psum`/`pmean`/`pmax`/
`pmin`/`all_gather`/`psum_scatter`/`ppermute`/`pshuffle`/`all_to_all`/
`axis_index`/`axis_size`/`pvary`.

A named axis is bound by an `ember.vmap ... axis "name"`: its lanes are the
slices the vmap maps over. Collectives are ops of the `ember` dialect that
name the axis (docs/spec.md, "Collectives"); `ember-batch` rewrites them
into ops over the batch dimension when it expands the vmap, and
`ember-autodiff` transposes them.

With `check_vma=True` (shard_map's default) values carry the mesh axes they
vary over (`ShapedArray.vma`, JAX's "varying manual axes"): psum makes a
value invariant, an invariant value meeting a varying one goes through
`ember.pvary`, and reverse mode sums the cotangents of invariant values over
the lanes (psum transposes to pvary and pvary to psum), as in JAX.
"""

import contextlib
import math
import threading

from ember._mlir import ir

from . import core, tree_util
from . import lax as _lax
from .core import as_value

COLLECTIVES = frozenset({
    "ember.psum", "ember.pmax", "ember.pmin", "ember.pvary", "ember.all_gather",
    "ember.reduce_scatter", "ember.ppermute", "ember.all_to_all", "ember.axis_index"})
# Collectives whose result is the same on every lane of their axis.
SAME_ON_LANES = frozenset({"ember.psum", "ember.pmax", "ember.pmin", "ember.all_gather"})


# --------------------------------------------------------------------------
# The axis environment: the named axes bound while their vmap body traces
# --------------------------------------------------------------------------


class _Env(threading.local):
    def __init__(self):
        # (name, lanes here, check_vma, processes the axis is split over)
        self.frames = []
        # The names among them whose lanes are devices (shard_map, pmap).
        self.device_axes = []
        # Axes of a kernel being traced for a target, whose index is a grid
        # index (a core_map's cores in a Mosaic kernel): {name: (index, size)}.
        self.kernel_axes = {}


_env = _Env()


# The MPI halves of collectives over an axis split over processes (set by
# distributed.initialize; this module sits below it).
cross_process = None


@contextlib.contextmanager
def bind_axis(name, size, check_vma=False, processes=1, devices=False):
    """Binds `name` to `size` lanes while the vmap body traces; with
    `processes` > 1 the axis has size * processes lanes, `size` of them in
    this process (distributed.py). `devices`: the lanes are devices
    (shard_map, pmap) rather than a user's vmap."""
    if not _hashable(name):
        raise TypeError(f"axis_name must be hashable, got {name!r}")
    _env.frames.append((name, int(size), bool(check_vma), int(processes)))
    _env.device_axes.append(name if devices else None)
    try:
        yield
    finally:
        _env.frames.pop()
        _env.device_axes.pop()


@contextlib.contextmanager
def kernel_axis(name, index, size):
    """While a kernel is traced for a target, `axis_index(name)` is `index`
    (a 0-d int32 of the kernel's trace) and `axis_size(name)` is `size`."""
    saved = _env.kernel_axes.get(name)
    _env.kernel_axes[name] = (index, int(size))
    try:
        yield
    finally:
        if saved is None:
            _env.kernel_axes.pop(name, None)
        else:
            _env.kernel_axes[name] = saved


def device_axes():
    """The names of the bound axes whose lanes are devices, outermost first."""
    return [n for n in _env.device_axes if n is not None]


def _hashable(x):
    try:
        hash(x)
        return True
    except TypeError:
        return False


def _frame_full(name):
    if name in _env.kernel_axes:
        return _env.kernel_axes[name][1], False, 1
    for n, size, check, procs in reversed(_env.frames):
        if n == name:
            return size, check, procs
    raise NameError(f"unbound axis name: {name} (at {core.where()})")


def _frame(name):
    """(lanes in this process, check_vma) of the axis `name`."""
    return _frame_full(name)[:2]


def _split(name):
    """Whether the axis `name` is split over MPI processes (distributed.py)."""
    return _frame_full(name)[2] > 1


def is_bound(name):
    return name in _env.kernel_axes or any(f[0] == name for f in _env.frames)


def _names(axis_name):
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


class _Groups:
    """`axis_index_groups` over one device axis (pmap, shard_map): each
    lane's group, its position in it, and the groups' members. JAX checks
    that they cover the axis exactly once; all_gather and psum_scatter need
    groups of one size."""

    def __init__(self, groups, axis_name, what, equal=False):
        import numpy as np

        names = _names(axis_name)
        if len(names) != 1:
            raise NotImplementedError(f"{what}: axis_index_groups over several axes at once "
                                      f"(got {axis_name!r})")
        self.name = name = names[0]
        if name not in device_axes():
            raise NotImplementedError("axis_index_groups not supported in vmap collectives "
                                      f"(as in JAX; pmap and shard_map axes take them) "
                                      f"(at {core.where()})")
        if _split(name):
            raise NotImplementedError(f"{what}: axis_index_groups over an axis split over MPI "
                                      "processes")
        size = axis_size(name)
        self.groups = [[int(i) for i in g] for g in groups]
        if sorted(i for g in self.groups for i in g) != list(range(size)):
            raise ValueError("axis_index_groups must cover all indices exactly once")
        if equal and len({len(g) for g in self.groups}) != 1:
            raise ValueError(f"{what}: axis_index_groups must all have the same size, got "
                             f"{self.groups}")
        self.gid = np.zeros(size, np.int32)
        self.pos = np.zeros(size, np.int32)
        for k, g in enumerate(self.groups):
            for p, i in enumerate(g):
                self.gid[i], self.pos[i] = k, p
        self.same = self.gid[:, None] == self.gid[None, :]  # [lane, lane]
        self.count = np.array([len(self.groups[k]) for k in self.gid], np.int32)

    def here(self, table):
        """This lane's entry of a per-lane table (a NumPy array)."""
        from .numpy import lax_numpy as jnp

        return jnp.asarray(table)[axis_index(self.name)]

    def gathered(self, v):
        """Every lane's `v`, stacked: [lanes, ...]."""
        return all_gather(v, self.name)

    def members(self):
        """This lane's group's members, in order (groups of one size)."""
        import numpy as np

        return self.here(np.array(self.groups, np.int32)[self.gid])


def _grouped_reduction(op, v, groups):
    """psum/pmax/pmin within each lane's group: the gathered lanes of its
    group combined (sums of the others' zeros, extrema over the others'
    identities)."""
    import numpy as np

    from .numpy import lax_numpy as jnp

    v = _to_numeric(v)
    g = groups.gathered(v)
    mask = jnp.reshape(groups.here(groups.same), (g.shape[0],) + (1,) * v.ndim)
    if op == "ember.psum":
        return jnp.sum(jnp.where(mask, g, jnp.zeros((), v.dtype)), axis=0)
    dt = np.dtype(v.dtype)
    if dt.kind in "fc":
        fill = -np.inf if op == "ember.pmax" else np.inf
    else:
        fill = np.iinfo(dt).min if op == "ember.pmax" else np.iinfo(dt).max
    fill = jnp.asarray(fill, v.dtype)
    pick = jnp.max if op == "ember.pmax" else jnp.min
    return pick(jnp.where(mask, g, fill), axis=0)


# --------------------------------------------------------------------------
# Emitting collective ops
# --------------------------------------------------------------------------


def _emit(name, x, out_aval, axis, size, **extra):
    """One collective op over `axis` on `x` (None for axis_index)."""
    operands = [] if x is None else [x]
    trace = core.find_trace(operands) or core.current_trace()
    ctx = core.context()
    attrs = {"axis": ir.StringAttr.get(str(axis), ctx), "axis_size": core.i64_attr(size)}
    for k, v in extra.items():
        if v is True:
            attrs[k] = ir.UnitAttr.get(ctx)
        elif isinstance(v, (list, tuple)):
            attrs[k] = ir.DenseI64ArrayAttr.get(list(v), ctx)
        elif v is not False and v is not None:
            attrs[k] = core.i64_attr(v)
    vals = [trace.to_value(v) for v in operands]
    out = trace.emit(name, vals, [out_aval], attrs)[0]
    if trace.concrete and all(not isinstance(v, core.Tracer) or v.src is not None
                              for v in operands):
        # How to compute it again lane by lane (per-device printing in an
        # eager shard_map: shard_map._lanes_value).
        out.src = ("fn", lambda *a: _emit(name, a[0] if a else None, out_aval, axis, size,
                                          **extra), operands)
    return out


def _pvary1(x, name):
    """`x` marked as varying over `name` (a checked axis it does not vary
    over yet)."""
    size, _ = _frame(name)
    out = _emit("ember.pvary", x, x.aval.update(vma=x.aval.vma | {name}), name, size)
    if _split(name):
        out = _retype_vma(cross_process.pvary(out), out.aval.vma)
    return out


def _varying(x, name):
    """`x`, made varying over `name` if that axis is checked (collectives
    other than the reductions take and give varying values)."""
    _, check = _frame(name)
    if check and name not in x.aval.vma:
        return _pvary1(x, name)
    return x


def _match_vma(args):
    union = frozenset().union(*(a.aval.vma for a in args))
    out = []
    for a in args:
        for name in sorted(union - a.aval.vma, key=str):
            # A reduced value is already one per device: a free cast.
            a = _cast(a, name, "reduced", "varying") if name in _ur(a, "reduced") else \
                _pvary1(a, name)
        out.append(a)
    return out, union


# Unreduced and reduced values in shard_map (JAX's manual-mode states; the
# type is in the value's sharding, the vma holds the varying axes). Both are
# held one per device (mapped lanes): an unreduced value as its partial
# sums, a reduced one as copies of its value, so that reverse mode leaves
# its cotangent per device (unreduced) instead of summing it. Casts between
# varying, unreduced and reduced move no data and are their own transposes;
# a cast of an invariant value to reduced is a pvary (its transpose the
# psum), and a psum of an unreduced value reduces it.


def _ur(x, what):
    spec = getattr(x.aval.sharding, "spec", None)
    return getattr(spec, what, frozenset())


class _ManualMeshes(threading.local):
    def __init__(self):
        self.stack = []  # the meshes of the shard_maps whose bodies trace


_manual_meshes = _ManualMeshes()


@contextlib.contextmanager
def manual_mesh(mesh):
    """While a shard_map body over `mesh` traces (the mesh its unreduced and
    reduced values are typed on)."""
    _manual_meshes.stack.append(mesh)
    try:
        yield
    finally:
        _manual_meshes.stack.pop()


def _retyped(x, vma, unreduced, reduced):
    """`x` with the type (vma, unreduced, reduced): the data stays."""
    from .mesh import AxisType, NamedSharding, PartitionSpec, get_abstract_mesh

    sh = x.aval.sharding
    if isinstance(sh, NamedSharding):
        sh = sh.with_spec(sh.spec.update(unreduced=unreduced, reduced=reduced))
    elif unreduced or reduced:
        mesh = (_manual_meshes.stack[-1] if _manual_meshes.stack
                else get_abstract_mesh()).abstract_mesh
        mesh = mesh.update_axis_types({n: AxisType.Manual for n in device_axes()
                                       if n in mesh.axis_names})
        sh = NamedSharding(mesh, PartitionSpec(*[None] * x.ndim, unreduced=unreduced,
                                               reduced=reduced))
    aval = core.ShapedArray(x.aval.shape, x.aval.dtype, x.aval.weak_type, vma=vma, sharding=sh)
    if isinstance(x, core.Tracer):
        return core.Tracer(x._trace, x.value, aval, ("same", x))
    return core.Array.with_sharding(x._value, x.weak_type, sh) if sh is not None else x


def _cast(x, name, frm, to):
    """The free cast of `x` over axis `name` from one state ("varying",
    "unreduced", "reduced") to another."""
    states = {"varying": set(x.aval.vma), "unreduced": set(_ur(x, "unreduced")),
              "reduced": set(_ur(x, "reduced"))}
    states[frm].discard(name)
    states[to].add(name)
    return _retyped(x, frozenset(states["varying"]), frozenset(states["unreduced"]),
                    frozenset(states["reduced"]))


core._match_vma_hook = _match_vma


def _to_numeric(x):
    from .numpy import lax_numpy as jnp

    x = as_value(x)
    if x.dtype == bool:
        return jnp.asarray(x, dtype=jnp.int32)
    return x


def _reduce(op, x, name):
    size, check = _frame(name)
    x = _to_numeric(x)
    if name in _ur(x, "unreduced"):
        if op != "ember.psum":
            raise NotImplementedError(
                f"{op[len('ember.'):]} of a value unreduced over '{name}' is not defined: "
                f"its partial sums are not its values; psum reduces it (at {core.where()})")
        x = _cast(x, name, "unreduced", "varying")  # (the partial sums, summed)
    if check and name not in x.aval.vma:
        x = _pvary1(x, name)
    out = x.aval.update(vma=x.aval.vma - {name}) if check else x.aval
    y = _emit(op, x, out, name, size, invariant=check)
    if _split(name):
        y = _retype_vma(cross_process.allreduce(y, op[len("ember.p"):], check), out.vma)
    return y


def _reduction(op, x, axis_name, groups):
    """`op` over each named axis in turn, on every leaf of `x`."""
    if groups is not None:
        grouped = _Groups(groups, axis_name, op[len("ember."):])
        return tree_util.tree_map(lambda v: _grouped_reduction(op, as_value(v), grouped), x)
    names = _names(axis_name)

    def one(v):
        for n in names:
            v = _reduce(op, v, n)
        return v
    return tree_util.tree_map(one, x)


def psum(x, axis_name, *, axis_index_groups=None):
    return _reduction("ember.psum", x, axis_name, axis_index_groups)


def pmax(x, axis_name, *, axis_index_groups=None):
    return _extremum("ember.pmax", x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
    return _extremum("ember.pmin", x, axis_name, axis_index_groups)


def _extremum(op, x, axis_name, groups):
    """pmax/pmin; of complex values the lexicographic extremum (JAX's: real
    parts first, then the imaginary parts of the lanes holding it), of
    booleans a boolean, both through real collectives."""
    def one(v):
        v = as_value(v)
        if v.dtype.kind == "c":
            re, im = _lax.real(v), _lax.imag(v)
            best = _reduction(op, re, axis_name, groups)
            fill = -math.inf if op == "ember.pmax" else math.inf
            cand = _lax.select(_lax.eq(re, best), im, _lax.full_like(im, fill))
            return _lax.complex(best, _reduction(op, cand, axis_name, groups))
        if v.dtype == bool:
            wide = _reduction(op, _lax.convert_element_type(v, "int32"), axis_name, groups)
            return _lax.convert_element_type(wide, bool)
        return _reduction(op, v, axis_name, groups)
    return tree_util.tree_map(one, x)


def pmean(x, axis_name, *, axis_index_groups=None):
    from .numpy import lax_numpy as jnp

    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    if axis_index_groups is not None:  # (the lane's own group's size)
        groups = _Groups(axis_index_groups, axis_name, "pmean")
        n = groups.here(groups.count)
    else:
        n = axis_size(axis_name)
    return tree_util.tree_map(lambda v: jnp.true_divide(v, n), total)


def axis_size(axis_name):
    return math.prod(_frame_full(n)[0] * _frame_full(n)[2] for n in _names(axis_name))


def axis_index(axis_name):
    """The lane's index along `axis_name` (row-major over a tuple of names)."""
    idx = None
    for n in _names(axis_name):
        size, check, procs = _frame_full(n)
        if n in _env.kernel_axes:
            one = _env.kernel_axes[n][0]
            idx = one if idx is None else idx * size + one
            continue
        one = _emit("ember.axis_index", None,
                    core.ShapedArray((), "int32", vma=frozenset({n}) if check else frozenset()),
                    n, size)
        if procs > 1:  # this process's lanes come after those of lower ranks
            one = one + cross_process.rank * size
        idx = one if idx is None else idx * size * procs + one
    return idx


def pvary(x, axis_name):
    """Marks `x` as varying over the named (checked) axes; the identity
    otherwise."""
    names = _names(axis_name)

    def one(v):
        v = as_value(v)
        for n in names:
            _, check = _frame(n)
            if check and n not in v.aval.vma:
                v = _pvary1(v, n)
        return v
    return tree_util.tree_map(one, x)


def pcast(x, axis_name, *, to):
    """JAX's casts between the states of a value over named axes in
    shard_map: `to="varying"` (from invariant: `pvary`; from unreduced or
    reduced: free), `to="unreduced"` (from varying: free, the values are
    declared partial sums) and `to="reduced"` (from invariant: each device
    holds its copy, and the cotangent stays unreduced)."""
    if to not in ("varying", "unreduced", "reduced"):
        raise ValueError(f"pcast: `to` must be 'varying', 'unreduced' or 'reduced', got {to!r}")
    names = _names(axis_name)

    def one(v):
        v = as_value(v)
        for n in names:
            _, check = _frame(n)
            state = "unreduced" if n in _ur(v, "unreduced") else \
                "reduced" if n in _ur(v, "reduced") else \
                "varying" if n in v.aval.vma else "invariant"
            if state == to:
                continue
            if to == "varying":
                v = _cast(v, n, state, "varying") if state != "invariant" else \
                    (_pvary1(v, n) if check else v)
            elif to == "unreduced" and state == "varying":
                v = _cast(v, n, state, "unreduced")
            elif to == "unreduced" and not check:
                v = _cast(v, n, "varying", "unreduced")
            elif to == "reduced" and state == "invariant":
                v = _cast(_pvary1(v, n) if check else v, n, "varying", "reduced")
            else:
                raise TypeError(
                    f"pcast(to={to!r}) over '{n}' takes "
                    f"{'a varying' if to == 'unreduced' else 'an invariant'} value, got "
                    f"{v.aval.str_short()}, which is {state} over it (at {core.where()})")
        return v
    return tree_util.tree_map(one, x)


def _canon_axis(axis, rank, what, ndim=None):
    """`axis` in [0, rank) (`rank` may exceed the operand's `ndim` by one
    where a dimension is inserted)."""
    if not -rank <= axis < rank:
        raise ValueError(f"{what} {axis} is out of bounds for an operand of rank "
                         f"{rank if ndim is None else ndim}")
    return axis % rank


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False):
    from .numpy import lax_numpy as jnp

    if axis_index_groups is not None:
        groups = _Groups(axis_index_groups, axis_name, "all_gather", equal=True)
        return tree_util.tree_map(lambda v: _grouped_gather(as_value(v), groups, axis, tiled), x)
    names = _names(axis_name)

    def one(v):
        v = as_value(v)
        if tiled and v.ndim == 0:
            raise ValueError("all_gather with tiled=True needs an operand of rank >= 1")
        d = _canon_axis(axis, v.ndim + (0 if tiled else 1), "all_gather axis", v.ndim)
        total = 1
        for n in reversed(names):  # major axis gathered last
            size, _ = _frame(n)
            v = _varying(v, n)
            shape = list(v.shape)
            if tiled:
                shape[d] *= size
            else:
                shape.insert(d, size)
            v = _emit("ember.all_gather", v,
                      v.aval.update(shape=tuple(shape), vma=v.aval.vma), n, size,
                      dimension=d, tiled=True if tiled else False)
            if _split(n):
                v = _retype_vma(cross_process.allgather(v, d), v.aval.vma)
                size *= cross_process.size
            if not tiled:
                total *= size
                if total != size:  # merge with the axes gathered before
                    shape = list(v.shape)
                    merged = shape[:d] + [shape[d] * shape[d + 1]] + shape[d + 2:]
                    v = jnp.reshape(v, merged)
        return v
    return tree_util.tree_map(one, x)


def _grouped_gather(v, groups, axis, tiled):
    """all_gather within the lane's group: its members' values, stacked
    (or concatenated, `tiled`) along `axis`."""
    from .numpy import lax_numpy as jnp

    if tiled and v.ndim == 0:
        raise ValueError("all_gather with tiled=True needs an operand of rank >= 1")
    d = _canon_axis(axis, v.ndim + (0 if tiled else 1), "all_gather axis", v.ndim)
    mine = jnp.take(groups.gathered(v), groups.members(), axis=0)  # [k, ...]
    return _stacked_at(mine, d, tiled)


def _stacked_at(parts, d, tiled):
    """`parts` ([k, ...]: one part per member) stacked at dimension `d`,
    or concatenated along it (`tiled`), in the members' order."""
    from .numpy import lax_numpy as jnp

    parts = jnp.moveaxis(parts, 0, d)  # [..., k, n_d, ...]
    if not tiled:
        return parts
    shape = list(parts.shape)
    return jnp.reshape(parts, tuple(shape[:d] + [shape[d] * shape[d + 1]] + shape[d + 2:]))


def _check_scatter_size(v, d, n, tiled, what):
    """psum_scatter's check of the scattered dimension against the `n` lanes
    it is split over."""
    if tiled and v.shape[d] % n:
        raise ValueError(f"psum_scatter: dimension {d} of size {v.shape[d]} is not divisible "
                         f"by the {what} {n}")
    if not tiled and v.shape[d] != n:
        raise ValueError(f"psum_scatter: dimension {d} of size {v.shape[d]} must equal the "
                         f"{what} {n} (or use tiled=True)")


def _grouped_scatter(v, groups, d, tiled):
    """psum_scatter within the lane's group: the group's sum, of which the
    lane keeps the block at its position in the group."""
    from . import lax as lax_mod

    k = len(groups.groups[0])
    _check_scatter_size(v, d, k, tiled, "group size")
    total = _grouped_reduction("ember.psum", v, groups)
    p = groups.here(groups.pos)
    if not tiled:
        return lax_mod.dynamic_index_in_dim(total, p, d, keepdims=False)
    block = v.shape[d] // k
    return lax_mod.dynamic_slice_in_dim(total, p * block, block, d)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    from .numpy import lax_numpy as jnp

    if axis_index_groups is not None:
        groups = _Groups(axis_index_groups, axis_name, "psum_scatter", equal=True)
        return tree_util.tree_map(lambda v: _grouped_scatter(
            _to_numeric(v), groups,
            _canon_axis(scatter_dimension, as_value(v).ndim, "psum_scatter scatter_dimension"),
            tiled), x)
    names = _names(axis_name)

    def one(v):
        v = _to_numeric(v)
        d = _canon_axis(scatter_dimension, v.ndim, "psum_scatter scatter_dimension")
        sizes = [axis_size(n) for n in names]
        total = math.prod(sizes)
        _check_scatter_size(v, d, total, tiled, "axis size")
        if not tiled and len(names) > 1:
            v = jnp.reshape(v, v.shape[:d] + tuple(sizes) + v.shape[d + 1:])
        for n, size in zip(names, sizes):
            if _split(n):
                v = _psum_scatter_across(v, n, size, d, tiled)
                continue
            v = _varying(v, n)
            shape = list(v.shape)
            if tiled:
                shape[d] //= size
            else:
                del shape[d]
            v = _emit("ember.reduce_scatter", v, v.aval.update(shape=tuple(shape)), n, size,
                      dimension=d, tiled=True if tiled else False)
        return v
    return tree_util.tree_map(one, x)


def _psum_scatter_across(v, name, size, d, tiled):
    """psum_scatter over an axis split over MPI processes: the sum over this
    process's lanes, then MPI_Reduce_scatter_block, which leaves each
    process the total of its lanes' blocks only, then this lane's block."""
    from .numpy import lax_numpy as jnp

    lanes, check = _frame(name)
    v = _varying(v, name)
    out = v.aval.update(vma=v.aval.vma - {name}) if check else v.aval
    here = _emit("ember.psum", v, out, name, lanes, invariant=check)
    k = v.shape[d] // size
    rows = cross_process.reduce_scatter(jnp.moveaxis(here, d, 0), lanes)  # [lanes * k, ...]
    rows = jnp.reshape(rows, (lanes, k) + rows.shape[1:])
    mine = _my_row(rows, name, v.aval.vma)  # [k, ...]
    return jnp.moveaxis(mine, 0, d) if tiled else jnp.squeeze(mine, 0)


def _single(axis_name, what):
    names = _names(axis_name)
    if len(names) != 1:
        raise NotImplementedError(f"{what} over several axes at once is not supported by Ember "
                                  f"(got {axis_name!r}); nest one per axis")
    return names[0]


def ppermute(x, axis_name, perm):
    name = _single(axis_name, "ppermute")
    size = axis_size(name)
    pairs = [(int(s), int(d)) for s, d in perm]
    srcs, dsts = [s for s, _ in pairs], [d for _, d in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
    for s, d in pairs:
        if not (0 <= s < size and 0 <= d < size):
            raise ValueError(f"ppermute perm {perm} has an index out of range for axis "
                             f"'{name}' of size {size}")
    flat = [i for p in pairs for i in p]
    if _split(name):
        return tree_util.tree_map(lambda v: _ppermute_across(as_value(v), name, size, pairs), x)

    def one(v):
        v = _varying(as_value(v), name)
        return _emit("ember.ppermute", v, v.aval, name, size, pairs=flat)
    return tree_util.tree_map(one, x)


def _local_rows(v, name):
    """The values of this process's lanes of `name` stacked ([lanes, ...],
    the same on every lane): the in-process half of an exchange across
    processes."""
    lanes, _ = _frame(name)
    v = _varying(v, name)
    return _emit("ember.all_gather", v, v.aval.update(shape=(lanes,) + v.shape), name, lanes,
                 dimension=0)


def _my_row(rows, name, vma):
    """This lane's row of `rows` ([lanes, ...]), varying over `vma`."""
    lanes, check = _frame(name)
    if lanes == 1:  # (one device per process: no lane to choose)
        return _retype_vma(rows, vma)[0]
    i = _emit("ember.axis_index", None,
              core.ShapedArray((), "int32", vma=frozenset({name}) if check else frozenset()),
              name, lanes)
    return _lax.dynamic_index_in_dim(_retype_vma(rows, vma), i, 0, keepdims=False)


def _ppermute_across(v, name, size, pairs):
    """ppermute over an axis split over MPI processes: this process's lanes
    stacked, then rows sent point to point to the lanes of other processes
    (only the rows that cross processes travel)."""
    lanes, _ = _frame(name)
    v = _varying(v, name)
    rows = cross_process.ppermute(_local_rows(v, name), pairs, lanes)
    return _my_row(rows, name, v.aval.vma)


def pshuffle(x, axis_name, perm):
    """Lane i gets lane perm[i]'s value."""
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, [(int(src), dst) for dst, src in enumerate(perm)])


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    if axis_index_groups is not None:
        groups = _Groups(axis_index_groups, axis_name, "all_to_all", equal=True)
        return tree_util.tree_map(
            lambda v: _grouped_all_to_all(as_value(v), groups, split_axis, concat_axis, tiled),
            x)
    name = _single(axis_name, "all_to_all")
    size = axis_size(name)

    def one(v):
        v = as_value(v)
        s = _canon_axis(split_axis, v.ndim, "all_to_all split_axis")
        c = _canon_axis(concat_axis, v.ndim, "all_to_all concat_axis")
        if _split(name):
            return _all_to_all_across(v, name, size, s, c, tiled)
        v = _varying(v, name)
        shape = list(v.shape)
        if tiled:
            if shape[s] % size:
                raise ValueError(f"all_to_all: split_axis {s} of size {shape[s]} is not "
                                 f"divisible by the axis size {size}")
            shape[s] //= size
            shape[c] *= size
        else:
            if shape[s] != size:
                raise ValueError(f"all_to_all: split_axis {s} has size {shape[s]}, which must "
                                 f"equal the size of axis '{name}' ({size})")
            del shape[s]
            shape.insert(c, size)
        return _emit("ember.all_to_all", v, v.aval.update(shape=tuple(shape)), name, size,
                     split=s, concat=c, tiled=True if tiled else False)
    return tree_util.tree_map(one, x)


def _grouped_all_to_all(v, groups, split_axis, concat_axis, tiled):
    """all_to_all within the lane's group (JAX's replica groups): `v` is
    cut along `split_axis` into one chunk per member, and the lane at
    position p of its group receives chunk p of every member, in the
    group's order, stacked (or concatenated, `tiled`) along `concat_axis`.
    Composed from all_gather and indexing, as the other grouped
    collectives are (`_Groups`)."""
    from . import lax
    from .numpy import lax_numpy as jnp

    k = len(groups.groups[0])
    s = _canon_axis(split_axis, v.ndim, "all_to_all split_axis")
    c = _canon_axis(concat_axis, v.ndim, "all_to_all concat_axis")
    if tiled and v.shape[s] % k:
        raise ValueError(f"all_to_all: split_axis {s} of size {v.shape[s]} is not divisible "
                         f"by the group size {k}")
    if not tiled and v.shape[s] != k:
        raise ValueError(f"all_to_all: split_axis {s} has size {v.shape[s]}, which must equal "
                         f"the size of the axis_index_groups ({k})")
    mine = jnp.take(groups.gathered(v), groups.members(), axis=0)  # [k, ...v]
    p = groups.here(groups.pos)
    if not tiled:
        return _stacked_at(jnp.take(mine, p, axis=s + 1), c, False)  # [k, ...v without s]
    n = v.shape[s] // k
    return _stacked_at(lax.dynamic_slice_in_dim(mine, p * n, n, axis=s + 1), c, True)


def _all_to_all_across(v, name, size, s, c, tiled):
    """all_to_all over an axis split over MPI processes: each lane's value
    cut into one block per receiving lane, this process's lanes stacked, and
    the blocks exchanged by one MPI_Alltoall (each block travels once)."""
    from .numpy import lax_numpy as jnp

    if (v.shape[s] % size) if tiled else (v.shape[s] != size):
        raise ValueError(f"all_to_all: split_axis {s} has size {v.shape[s]}, which does not "
                         f"match the size of axis '{name}' ({size})")
    lanes, _ = _frame(name)
    v = _varying(v, name)
    k = v.shape[s] // size
    # [receiver, ...] with dimension s cut to the receiver's k entries
    blocks = jnp.moveaxis(jnp.reshape(v, v.shape[:s] + (size, k) + v.shape[s + 1:]), s, 0)
    got = cross_process.all_to_all(_local_rows(blocks, name), lanes)  # [lanes, sender, ...]
    mine = _my_row(got, name, v.aval.vma)  # [sender, ..., k at s + 1, ...]
    if tiled:
        mine = jnp.moveaxis(mine, 0, c)
        shape = mine.shape[:c] + (mine.shape[c] * mine.shape[c + 1],) + mine.shape[c + 2:]
        return jnp.reshape(mine, shape)
    return jnp.moveaxis(jnp.squeeze(mine, s + 1), 0, c)


def _axis_index_provider(name):
    return axis_index(name) if all(is_bound(n) for n in _names(name)) else None


# `lax.axis_index` asks its providers (it sits below this module).
_lax.axis_index_providers.insert(0, _axis_index_provider)


def _retype_vma(x, vma):
    """`x` (an argument block inside shard_map) typed as varying over `vma`."""
    if isinstance(x, core.Tracer):
        t = core.Tracer(x._trace, x.value, x.aval.update(vma=x.aval.vma | vma), x.src)
        return t
    return x

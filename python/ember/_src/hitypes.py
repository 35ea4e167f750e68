"""Hijax types (`jax.experimental.hijax`): user-defined types whose values
lower to lists of arrays (`HiType.lo_ty`, `lower_val`, `raise_val`).

Ember's transformations are MLIR passes over arrays, so a hi value is
lowered wherever a program crosses a transformation boundary: `jit`'s
arguments and results, `grad`, `vmap` and the loops flatten their operands
with `tree_util.tree_flatten_lo`, which expands each hi value into a
`HiNode` holding its lowered arrays; inside traced code the value is a
`HiTracer` (its type and arrays), which only hijax primitives
(`hijax.VJPHiPrimitive`) take apart. Outside any trace a hi value is the
user's own class (what `register_hitype` registered).

A type whose tangent type is not its lowered arrays' own tangents (the
quantized array: int8 values and f32 scales, with f32 tangents of the full
shape) gets a *tangent carrier* in differentiated code: arrays of the
tangent type's lowered types, zero in the forward pass, that the type's
primitives' VJP rules route cotangents through (`hijax.py`).
"""

from . import core, lax, tree_util
from .core import ShapedArray

_typeof_fns = {}  # registered value class -> its typeof function


def _must_override(ty, method, needed_for):
    raise NotImplementedError(f"{needed_for} requires {type(ty).__name__} to implement "
                              f"the `{method}` method")


class HiType:
    """JAX's `HiType`: subclass it (hashable and comparable, e.g. a frozen
    dataclass) and implement `lo_ty`, `lower_val` and `raise_val`; the rest
    is needed only by the transformations that use it.

    Ember's own array-like hi types (`prng.KeyTy`) set `array_like`: their
    values are the value class inside traced code too (around tracers), and
    `vmap` maps them by integer axes (their `inc_rank`/`dec_rank` specs)."""

    is_high = True
    array_like = False

    def lo_ty(self):
        _must_override(self, "lo_ty", "lowering (e.g. under jit)")

    def lower_val(self, hi_val, /):
        _must_override(self, "lower_val", "lowering values (e.g. under jit)")

    def raise_val(self, *lo_vals):
        _must_override(self, "raise_val", "raising lowered values (e.g. under jit)")

    def to_tangent_aval(self):
        _must_override(self, "to_tangent_aval", "autodiff")

    def to_ct_aval(self):
        return self.to_tangent_aval()

    def vspace_zero(self):
        _must_override(self, "vspace_zero", "use as a tangent/cotangent type")

    def vspace_add(self, x, y):
        _must_override(self, "vspace_add", "use as a tangent/cotangent type")

    def dec_rank(self, size, spec):
        _must_override(self, "dec_rank", "vmap")

    def inc_rank(self, size, spec):
        _must_override(self, "inc_rank", "vmap")

    def leading_axis_spec(self):
        _must_override(self, "leading_axis_spec", "scan")

    def shard(self, mesh, manual_axes, check_vma, spec):
        _must_override(self, "shard", "shard_map")

    def unshard(self, mesh, check_vma, spec):
        _must_override(self, "unshard", "shard_map")

    def nospec(self, mesh, check_vma, all_names):
        _must_override(self, "nospec", "autodiff through shard_map")

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return repr(self)


class MappingSpec:
    """Base of a hi type's mapping specs (`vmap`'s in_axes/out_axes
    entries for values of that type)."""


class HiPspec:
    """Base of a hi type's partition specs (`shard_map`'s in/out specs)."""

    def to_lo(self):
        raise NotImplementedError(f"{type(self).__name__} must implement `to_lo`")

    def to_tangent_spec(self):
        raise NotImplementedError(f"{type(self).__name__} must implement `to_tangent_spec`")

    def to_ct_spec(self):
        return self.to_tangent_spec()


def register_hitype(val_cls, typeof_fn):
    """Values of `val_cls` are hi values; `typeof_fn(value)` is their type."""
    _typeof_fns[val_cls] = typeof_fn


class HiTracer:
    """A hi value inside traced code: its type, its lowered arrays (`lo`)
    and, in differentiated code, its tangent carrier (None when the type
    has none). Opaque: only hijax primitives read it."""

    __slots__ = ("ty", "lo", "carrier")

    def __init__(self, ty, lo, carrier=None):
        self.ty, self.lo, self.carrier = ty, list(lo), carrier

    def __getattr__(self, name):
        raise AttributeError(
            f"a traced value of hijax type {_type_str(self.ty)} has no attribute {name!r}: "
            "inside traced code hi values are used through hijax primitives only (their "
            "`expand` sees the value class)")

    def __repr__(self):
        return f"JitTracer({_type_str(self.ty)})"

    def __jax_array__(self):
        raise TypeError(f"a value of hijax type {_type_str(self.ty)} is not an array; "
                        "pass it to a hijax primitive")

    @property
    def aval(self):
        return self.ty


def _type_str(ty):
    try:
        return ty.str_short()
    except Exception:  # noqa: BLE001 (a user's type that cannot print)
        return type(ty).__name__


def is_hi(x):
    return type(x) is HiTracer or type(x) in _typeof_fns


def hi_typeof(x):
    """The hi type of a hi value, else None."""
    if type(x) is HiTracer:
        return x.ty
    fn = _typeof_fns.get(type(x))
    return None if fn is None else fn(x)


def is_array_like(ty):
    """Whether values of hi type `ty` stay their class in traced code and map
    by integer axes (`HiType.array_like`: key arrays)."""
    return getattr(ty, "array_like", False)


def is_hi_type(ty):
    return isinstance(ty, HiType)


def lo_types(ty):
    return list(ty.lo_ty())


def lower(ty, v):
    """The lowered arrays of `v` (a HiTracer, a value of the user's class
    or, for an array type, an array) as of type `ty`."""
    if type(v) is HiTracer:
        return list(v.lo)
    if isinstance(ty, ShapedArray):
        return [core.as_value(v)]
    return [core.as_value(x) for x in ty.lower_val(v)]


def raise_value(ty, lo, carrier=None):
    """A value of type `ty` from its lowered arrays: an array type's array,
    else a HiTracer (with `carrier`) inside a trace and the user's class
    outside."""
    if isinstance(ty, ShapedArray):
        return lo[0]
    if is_array_like(ty):
        return ty.raise_val(*lo)  # (key arrays: the value class around tracers too)
    if core._trace_stack or any(isinstance(v, core.Tracer) for v in lo):
        return HiTracer(ty, lo, carrier)
    return ty.raise_val(*lo)


def expand_value(ty, v):
    """`v` as `expand` sees it: the user's class holding (possibly traced)
    arrays."""
    if type(v) is HiTracer:
        return ty.raise_val(*v.lo)
    return v


def needs_carrier(ty):
    """Whether the tangent type of `ty` is not its lowered arrays' own
    tangents (so cotangents travel in a carrier)."""
    if not is_hi_type(ty):
        return False
    try:
        tan = lo_types(ty.to_tangent_aval())
    except NotImplementedError:
        return False  # (no tangent type: differentiating it raises where it is needed)
    los = [t.to_tangent_aval() for t in lo_types(ty)]
    return len(tan) != len(los) or any(
        a.shape != b.shape or a.dtype != b.dtype for a, b in zip(tan, los))


def tangent_types(ty):
    return lo_types(ty.to_tangent_aval())


def zero_carrier(ty):
    return [lax.full(t.shape, 0, t.dtype) for t in tangent_types(ty)]


def _children(x):
    if type(x) is HiTracer:
        carrier = x.carrier
        return (x.ty, carrier is not None), list(x.lo) + list(carrier or [])
    ty = _typeof_fns[type(x)](x)
    lo = ty.lower_val(x)
    if not is_array_like(ty) and any(isinstance(v, core.Tracer) for v in lo):
        raise TypeError(
            f"a {type(x).__name__} holding traced arrays was built outside a hijax "
            f"primitive (at {core.where()}): inside traced code, values of hijax type "
            f"{_type_str(ty)} are made and taken apart only by hijax primitives, whose "
            "`expand` may use the value class")
    return (ty, False), list(lo)


def _build(aux, kids):
    ty, has_carrier = aux
    n = len(lo_types(ty))
    return raise_value(ty, list(kids[:n]), list(kids[n:]) if has_carrier else None)


tree_util.register_hi_hooks(is_hi, _children, _build)


# --------------------------------------------------------------------------
# Tangents
# --------------------------------------------------------------------------


def with_carriers(leaves, treedef):
    """(leaves, treedef) with a zero tangent carrier added to every hi value
    of a carrier-needing type that has none (the arguments of a
    differentiated function)."""
    spans = tree_util.hi_node_spans(treedef)
    if not any(not c and needs_carrier(ty) for _, _, (ty, c) in spans):
        return leaves, treedef
    out, pos = [], 0
    for start, count, (ty, c) in spans:
        out.extend(leaves[pos:start + count])
        pos = start + count
        if not c and needs_carrier(ty):
            out.extend(zero_carrier(ty))
    out.extend(leaves[pos:])

    return out, tree_util.replace_hi_nodes(
        treedef, lambda aux: retyped_node((aux[0], aux[1] or needs_carrier(aux[0])), aux[0]))


class _TangentNode:
    """The node kind of a hi value's cotangent in a gradient's treedef."""


def _build_tangent(aux, kids):
    ty, has_carrier = aux
    tan = ty.to_tangent_aval()
    ts = kids[len(lo_types(ty)):] if has_carrier else kids
    return raise_value(tan, list(ts))


tree_util.register_pytree_node(_TangentNode, None, _build_tangent)


def tangent_treedef(treedef):
    """The treedef that builds gradients from the cotangents of the leaves
    of `treedef`: a hi value's gradient is of its tangent type (from its
    carrier's cotangents, or its arrays' when it has none)."""
    return tree_util.replace_hi_nodes(treedef, lambda aux: tree_util.PyTreeDef(
        _TangentNode, aux, [tree_util._LEAF] * (
            len(lo_types(aux[0])) + (len(tangent_types(aux[0])) if aux[1] else 0))))


# --------------------------------------------------------------------------
# Mapping specs: which axis of each lowered array a spec maps
# --------------------------------------------------------------------------

_PROBE = 7919  # an axis size no real dimension is expected to have


def lo_axes(elem, spec, size, batched=None):
    """The axis (or None) of each lowered array of `elem.inc_rank(size,
    spec)` that the mapping adds, found by comparing the lowered types of
    `elem` with those of `elem` mapped over a probe size."""
    if spec is None:
        return [None] * len(lo_types(elem))
    base = lo_types(elem)
    probe = lo_types(elem.inc_rank(_PROBE, spec))
    real = lo_types(batched if batched is not None else elem.inc_rank(size, spec))
    if not len(base) == len(probe) == len(real):
        raise TypeError(f"mapping {_type_str(elem)} by {spec!r} changes the number of its "
                        "lowered arrays")
    out = []
    for b, p, r in zip(base, probe, real):
        if len(p.shape) == len(b.shape):
            out.append(None)
            continue
        axes = [i for i, d in enumerate(p.shape) if d == _PROBE
                and p.shape[:i] + p.shape[i + 1:] == b.shape]
        if len(axes) != 1 or r.shape != b.shape[:axes[0]] + (size,) + b.shape[axes[0]:]:
            raise TypeError(f"cannot tell which axis of the lowered type {b.str_short()} of "
                            f"{_type_str(elem)} the mapping spec {spec!r} maps")
        out.append(axes[0])
    return out


def unstack_leading(leaves, treedef, n):
    """The leaves of scanned-over values with every hi value's arrays moved
    so that its type's leading axis (`leading_axis_spec`) is their first,
    and `treedef` with the hi values' per-step types."""
    leaves = list(leaves)
    elems = []
    for start, _, (ty, carrier) in tree_util.hi_node_spans(treedef):
        if carrier:
            raise NotImplementedError("scan over a differentiated hijax value is not built")
        spec = ty.leading_axis_spec()
        elem = ty.dec_rank(n, spec)
        for k, ax in enumerate(lo_axes(elem, spec, n, batched=ty)):
            if ax is None:
                raise TypeError(f"the leading axis of {_type_str(ty)} does not map its "
                                f"lowered array {k}")
            if ax:
                leaves[start + k] = _moveaxis(leaves[start + k], ax, 0)
        elems.append(elem)
    it = iter(elems)
    return leaves, tree_util.replace_hi_nodes(treedef, lambda aux: retyped_node(aux, next(it)))


def stack_leading(ys, n):
    """Stacked scan outputs: each hi value (of its per-step type, holding
    its arrays stacked on their first axis) becomes a value of the type
    stacked along its leading axis."""
    def one(y):
        if type(y) is not HiTracer:
            return y
        spec = y.ty.leading_axis_spec()
        batched = y.ty.inc_rank(n, spec)
        lo = [_moveaxis(v, 0, ax) if ax else v
              for v, ax in zip(y.lo, lo_axes(y.ty, spec, n, batched=batched))]
        return HiTracer(batched, lo)
    return tree_util.tree_map(one, ys, is_leaf=is_hi)


def _moveaxis(x, src, dst):
    perm = list(range(x.ndim))
    perm.insert(dst, perm.pop(src))
    return lax.transpose(x, perm)


def prefix_entries(prefix, tree):
    """The entry of the prefix tree `prefix` (vmap's axes, shard_map's
    specs) that applies to each hi value of `tree`, in order."""
    out = []
    _prefix_entries(prefix, tree, out)
    return out


def _prefix_entries(prefix, x, out):
    if is_hi(x):
        out.append(prefix)
        return
    node = tree_util._children(x)
    if node is None:
        return
    pnode = tree_util._children(prefix)
    if pnode is None or len(pnode[2]) != len(node[2]):
        for c in node[2]:  # a leaf of the prefix applies to the whole subtree
            _prefix_entries(prefix, c, out)
        return
    for p, c in zip(pnode[2], node[2]):
        _prefix_entries(p, c, out)


def retyped_node(aux, ty):
    """A HiNode treedef for a value of type `ty` in place of `aux`'s."""
    _, carrier = aux
    n = len(lo_types(ty)) + (len(tangent_types(ty)) if carrier else 0)
    return tree_util.PyTreeDef(tree_util.HiNode, (ty, carrier), [tree_util._LEAF] * n)

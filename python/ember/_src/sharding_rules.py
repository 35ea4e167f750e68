"""Shardings through ops: the sharding of an op's result from its
operands' shardings. Over Explicit mesh axes the sharding is part of the
type (JAX's Explicit mode: `jax.typeof` prints `float32[8@X,4@Y]`) and an
op whose result sharding is ambiguous raises JAX's `ShardingTypeError`;
over Auto axes the same rules run without errors (an ambiguous result is
unsharded there). Ember runs every array in one address space, so a
sharding places blocks (`Array.sharding`) and types values; no op computes
differently for it.

Rules (docs/design.md, "Parallelism"): an op whose operands and result have
one shape (elementwise ops, and ops along one dimension such as cumulative
sums, which JAX refuses along a sharded dimension and Ember does not) keeps
the dimensions' mesh axes, and operands that disagree on a dimension are
JAX's error; `transpose` permutes, `broadcast_in_dim` maps operand
dimensions to result dimensions (new ones unsharded), reductions drop the
reduced dimensions, `dot_general` keeps batch and free dimensions and
refuses contracting dimensions sharded on both sides (JAX's error asking for
`out_sharding`), `reshape` keeps, splits or merges dimensions' axes
(`_reshape`; JAX's error only for a user's own reshape), `slice` and
`dynamic_slice` keep the operand's (`_sliced`). A mesh axis on two
dimensions of a result is JAX's "illegally sharded result". Other ops give a
result unsharded on the operands' mesh; arrays committed to one device give
their results that device.
"""

import contextlib
import math
import sys
import threading

import numpy as np

from .errors import ShardingTypeError
from .mesh import NamedSharding, PartitionSpec, get_abstract_mesh, indivisible_type_error


class _Given(threading.local):
    depth = 0
    unreduced = frozenset()  # of the innermost `out_sharding=` given


_given = _Given()


@contextlib.contextmanager
def output_given(out_sharding=None):
    """Inside: the caller gives the result's sharding (`out_sharding=`), so a
    product over sharded contracting dimensions is not an error (its result
    is unsharded until the caller's sharding is applied; a product asked to
    be unreduced is checked against its contracting dimensions)."""
    spec = getattr(out_sharding, "spec", out_sharding)
    before = _given.unreduced
    _given.depth += 1
    _given.unreduced = getattr(spec, "unreduced", frozenset())
    try:
        yield
    finally:
        _given.depth -= 1
        _given.unreduced = before


class _Kind(threading.local):
    # The axis type the rules run over: "Explicit" (strict: JAX's errors),
    # then "Auto" (an ambiguous result is unsharded over those axes).
    value = "Explicit"


_kind = _Kind()


def _spec_dims(aval):
    """(mesh, per-dimension axes tuples over the axes of the current kind)
    of an aval with a NamedSharding."""
    sh = aval.sharding
    if not isinstance(sh, NamedSharding):
        return None, None
    names = {n for n, t in zip(sh.mesh.axis_names, sh.mesh.axis_types)
             if t.name == _kind.value}
    if not names:
        return None, None
    return sh.mesh, [tuple(a for a in sh.spec.axes(d) if a in names)
                     for d in range(len(aval.shape))]


def _sharding(mesh, dims, unreduced=frozenset(), reduced=frozenset()):
    entries = [None if not a else a[0] if len(a) == 1 else a for a in dims]
    if unreduced or reduced:  # (JAX's spec then has an entry per dimension)
        used = {x for a in dims for x in a}
        return NamedSharding(mesh, PartitionSpec(*entries, unreduced=unreduced - used,
                                                 reduced=reduced - used))
    while entries and entries[-1] is None:
        entries.pop()
    return NamedSharding(mesh, PartitionSpec(*entries))


def _entry(axes):
    """A dimension's axes as a PartitionSpec entry (JAX's error texts)."""
    return None if not axes else axes[0] if len(axes) == 1 else tuple(axes)


def _specs(avals):
    return ", ".join(str(tuple(_entry(a) for a in (_spec_dims(v)[1] or [()] * len(v.shape))))
                     for v in avals)


def propagate(prim, args, out_avals, params):
    """`out_avals` with the shardings `prim` gives its results: over the
    Explicit axes by the rules (JAX's errors where they give none), over
    the Auto axes by the same rules where they give one (else unsharded
    there: the choice is the compiler's, and Ember's is no split). Results
    of ops without a rule are unsharded on the operands' mesh."""
    avals = [a.aval for a in args]
    meshes = {a.sharding.mesh for a in avals if isinstance(a.sharding, NamedSharding)}
    if not meshes:
        # Committed to one device: so are the results.
        single = {a.sharding for a in avals if a.sharding is not None}
        return [o.update(sharding=next(iter(single))) for o in out_avals] \
            if len(single) == 1 else out_avals
    if len(meshes) != 1 or len(out_avals) == 0:
        return out_avals
    mesh = next(iter(meshes))
    rank = len(out_avals[0].shape)
    if any(len(o.shape) != rank for o in out_avals[1:]):
        return out_avals
    dims = [()] * rank
    for kind in ("Explicit", "Auto"):
        if all(t.name != kind for t in mesh.axis_types):
            continue
        _kind.value = kind
        try:
            found = _rule(prim, avals, out_avals, params, mesh)
        except ShardingTypeError:
            if kind == "Explicit":
                raise
            found = None
        finally:
            _kind.value = "Explicit"
        if found is not None:
            dims = [a + b for a, b in zip(dims, found)]
            if kind == "Explicit":
                for o in out_avals:
                    _check_divisibility(mesh, found, o.shape)
    unreduced, reduced = _unreduced_reduced(prim.name, avals, out_avals, params)
    sh = _sharding(mesh, dims, unreduced, reduced)
    return [o.update(sharding=sh) for o in out_avals]


def _check_divisibility(mesh, dims, shape):
    """JAX's check of a result type's Explicit sharding: each split
    dimension's size a multiple of its axes' devices (an rfft's halved
    dimension may not be)."""
    for d, (axes, size) in enumerate(zip(dims, shape)):
        if axes and size % math.prod(mesh.shape[a] for a in axes):
            spec = PartitionSpec(*(None if not a else a[0] if len(a) == 1 else tuple(a)
                                   for a in dims))
            raise indivisible_type_error(mesh, spec, d, shape)


# Unreduced and reduced mesh axes (JAX's sharding-in-AD states; design.md,
# "Unreduced and reduced"). Ember holds an unreduced array as its reduced
# value, so these rules type programs and change no data: only ops linear
# in their unreduced operands take them.
_UNREDUCED_LINEAR = {"neg", "convert", "transpose", "broadcast_in_dim", "reshape", "slice",
                     "dynamic_slice", "reverse", "real", "imag", "conj", "complex",
                     "optimization_barrier", "name", "stop_gradient", "gather"}
_ELEMENTWISE_JOINS = {"add", "sub", "select", "concatenate", "dynamic_update_slice"}


def _ur(aval, what):
    sh = aval.sharding
    return getattr(sh.spec, what) if isinstance(sh, NamedSharding) else frozenset()


def _unreduced_reduced(name, avals, out_avals, params):
    """(unreduced, reduced) axes of `name`'s results: JAX's rules and errors
    for unreduced operands (sums of partial sums stay partial sums; a
    product needs its other factor reduced on those axes; ops that are not
    linear have no rule) and for reduced ones (kept by ops on replicated
    data, which must not mix them with replicated or sharded operands; a
    product drops them)."""
    us = [_ur(a, "unreduced") for a in avals]
    rs = [_ur(a, "reduced") for a in avals]
    reduced = _reduced_rule(name, avals, out_avals, us, rs)
    unreduced = _unreduced_rule(name, avals, us, rs, params) if any(us) else frozenset()
    return unreduced, reduced - unreduced


def _reduced_rule(name, avals, out_avals, us, rs):
    if name == "dot_general" or not any(rs):
        return frozenset()
    if not all(a.shape == out_avals[0].shape or a.shape == () for a in avals):
        # Ops of another shape (reductions, slices, gathers, ...): the
        # first operand's.
        return rs[0]
    reduced = frozenset()

    # Scalars and values placed on no mesh (constants, Python scalars that
    # Ember broadcast to the operands' shape) are exempt, as JAX's literals.
    def exempt(a):
        return not a.shape or a.sharding is None
    for r in rs:
        if r:
            if reduced and r != reduced:
                raise ShardingTypeError(
                    "All inputs should be reduced across the same mesh axes. Got specs: "
                    "{" + ", ".join(sorted(repr(x) for x in set(rs) if x)) + "}")
            reduced = r
    for a, u, r in zip(avals, us, rs):
        if exempt(a) or r == reduced or reduced <= u:
            continue
        _, d = _spec_dims(a)
        if d and reduced & {x for axes in d for x in axes}:
            raise ShardingTypeError(
                "Inputs cannot be sharded/varying on the same axes that another input is "
                "reduced on. Reshard the input which is reduced to be sharded on the mesh axes "
                "it is reduced on via `jax.sharding.reshard(inp, jax.P(...))`. Got input type: "
                f"{a.str_short()} and reduced spec: {reduced}")
        raise ShardingTypeError(
            "Inputs cannot be replicated on the same axes that another input is reduced on. "
            f"Got input type: {a.str_short()} and reduced spec: {reduced}")
    return reduced


def _unreduced_rule(name, avals, us, rs, params):
    if name == "dot_general":
        raise ShardingTypeError(
            f"lhs or rhs passed to dot_general cannot be unreduced. Got lhs={avals[0]!r} and "
            f"rhs={avals[1]!r}")
    if name in _UNREDUCED_LINEAR or (name in ("reduce", "cumulative") and
                                     params.get("kind") == "sum"):
        if any(us[1:]) and name != "complex":
            raise ShardingTypeError(f"{name} takes an unreduced array as its first operand only")
        if name == "complex" and us[0] != us[1]:
            raise ShardingTypeError(
                f"lhs and rhs to `complex` must be unreduced along the same mesh axes. Got "
                f"lhs={us[0]}, rhs={us[1]}")
        return us[0]
    if name in _ELEMENTWISE_JOINS:
        cases = list(zip(avals, us))[1:] if name == "select" else list(zip(avals, us))
        if name == "select" and us[0]:
            raise ShardingTypeError("the predicate of select cannot be unreduced")
        if name == "dynamic_update_slice":
            cases = cases[:2]  # (the start indices are integers)
        joined = {u for _, u in cases}
        if len(joined) > 1 and frozenset() not in joined:
            raise ShardingTypeError(
                f"lhs and rhs to `{name}` must be unreduced along the same mesh axes. Got "
                f"lhs={cases[0][1]}, rhs={cases[1][1]}")
        if len(joined) > 1:
            side = "lhs" if cases[0][1] else "rhs"
            other = "rhs" if side == "lhs" else "lhs"
            raise ShardingTypeError(
                f"{side} is unreduced while {other} is not. `{name}` operation does not allow "
                "this because there will be implicit communication. Please reduce "
                f"{side} via `reshard` before calling `{name}`.")
        return cases[0][1]
    if name in ("mul", "div"):
        if us[0] and us[1]:
            raise ShardingTypeError(
                f"lhs and rhs to `{name}` cannot be unreduced since {name} is bilinear. Got "
                f"lhs={us[0]}, rhs={us[1]}")
        k = 0 if us[0] else 1
        if name == "div" and k == 1:
            raise NotImplementedError("unreduced rule for div (an unreduced divisor) is not "
                                      "implemented: the quotient is not linear in it")
        if rs[1 - k] != us[k]:
            side, oside = ("LHS", "RHS") if k == 0 else ("RHS", "LHS")
            raise ShardingTypeError(
                f"{oside} should be reduced along the same axes {side} is unreduced on. Got "
                f"lhs={avals[0].str_short()} and rhs={avals[1].str_short()}")
        return us[k]
    kind = params.get("kind")
    shown = f"{name}_{kind}" if name in ("reduce", "cumulative") and kind else name
    raise NotImplementedError(f"unreduced rule for {shown} is not implemented: only ops linear "
                              "in their unreduced operands (sums, products with a reduced "
                              "factor, reshapes, ...) take unreduced arrays; reshard the "
                              "array to a sharding without unreduced axes (its reduction) "
                              "first")


def _rule(prim, avals, out_avals, params, mesh):
    name = prim.name
    dims = None
    if name == "transpose":
        _, d = _spec_dims(avals[0])
        if d is not None:
            dims = [d[p] for p in params["permutation"]]
    elif name == "broadcast_in_dim":
        _, d = _spec_dims(avals[0])
        if d is not None:
            dims = [()] * len(out_avals[0].shape)
            for src, dst in enumerate(params["broadcast_dimensions"]):
                if avals[0].shape[src] == out_avals[0].shape[dst]:
                    dims[dst] = d[src]
    elif name in ("reduce", "argmax", "argmin"):
        _, d = _spec_dims(avals[0])
        if d is not None:
            axes = params.get("axes", (params.get("axis"),))
            dims = [a for k, a in enumerate(d) if k not in axes]
    elif name in ("slice", "dynamic_slice"):
        _, d = _spec_dims(avals[0])
        if d is not None:
            dims = _sliced(avals[0], d, out_avals[0].shape, mesh)
    elif name == "dot_general":
        dims = _dot_general(avals, params)
    elif name in ("pad", "reverse", "fft"):
        # (fft: JAX keeps the operand's spec, also on a transformed
        # dimension whose size changes: an rfft's halved one.)
        _, d = _spec_dims(avals[0])
        dims = d
    elif name == "concatenate":
        dims = _concatenate(avals, len(out_avals[0].shape))
    elif name in ("cumulative", "sort"):
        dims = _along_axis(name, avals, params)
    elif name == "gather":
        dims = _gather(avals[0], avals[1], params, len(out_avals[0].shape))
    elif name == "scatter":
        dims = _scatter(avals[0], params)
    elif name == "dynamic_update_slice":
        _check_update_sharding(avals[0], avals[1])
        # An update sharded as the operand, or updating whole extents of the
        # sharded dimensions, keeps them.
        _, d = _spec_dims(avals[0])
        if d is not None:
            dims = d if _spec_dims(avals[1])[1] == d or all(
                not axes or avals[1].shape[k] == avals[0].shape[k]
                for k, axes in enumerate(d)) else [()] * len(d)
    elif name == "reshape":
        if _spec_dims(avals[0])[1] is not None and not _given.depth:
            try:
                dims = _reshape(avals[0], out_avals[0].shape)
            except _Unsharded:
                dims = [()] * len(out_avals[0].shape)
    elif all(a.shape == out_avals[0].shape or a.shape == () for a in avals):
        dims = _same_shape(name, avals, len(out_avals[0].shape))
    if dims is None:
        return None
    used = [x for axes in dims for x in axes]
    if len(used) != len(set(used)):
        # JAX's check after every rule: a mesh axis may split one dimension.
        out = out_avals[0].update(sharding=_sharding(mesh, [()] * len(dims)))
        shown = out.str_short(short_dtypes=True).split("[", 1)[0] + "[" + ",".join(
            f"{n}@{a[0]}" if len(a) == 1 else f"{n}@({','.join(a)})" if a else str(n)
            for n, a in zip(out.shape, dims)) + "]"
        raise ShardingTypeError(
            f"{name} operation with inputs: "
            f"{', '.join(a.str_short(short_dtypes=True) for a in avals)} produces an "
            f"illegally sharded result: {shown}")
    return dims


def _check_update_sharding(operand, update):
    """JAX's error for a user's `dynamic_update_slice` whose update is not
    sharded as its operand (over the Explicit axes)."""
    d = _spec_dims(operand)[1] or [()] * len(operand.shape)
    du = _spec_dims(update)[1] or [()] * len(update.shape)
    if d == du or _given.depth or not _user_called(_UPDATE_SLICES):
        return

    def typed(aval):
        mesh = aval.sharding.mesh if isinstance(aval.sharding, NamedSharding) else \
            operand.sharding.mesh
        kinds = {}
        for n, t in zip(mesh.axis_names, mesh.axis_types):
            kinds.setdefault(t.name, []).append(n)
        return aval.str_short() + "({" + ", ".join(
            f"{k}: {tuple(v)!r}" for k, v in kinds.items()) + "})"
    raise ShardingTypeError(
        "dynamic_update_slice operand sharding must be equal to update sharding, got operand "
        f"sharding {typed(operand)} and update sharding {typed(update)}.")


def _same_shape(name, avals, rank):
    dims = [()] * rank
    for a in avals:
        _, d = _spec_dims(a)
        if d is None or not d:
            continue
        for k, axes in enumerate(d):
            if axes and dims[k] and axes != dims[k]:
                raise ShardingTypeError(
                    f"{name} got incompatible shardings for broadcasting: "
                    f"{_specs([a for a in avals if a.shape])}.")
            dims[k] = dims[k] or axes
    return dims


def _concatenate(avals, rank):
    """Operands sharded alike give their sharding (also along the joined
    dimension); JAX's error for others, when the user's code joins them
    (inside Ember's own functions the result is unsharded there)."""
    specs = [_spec_dims(a)[1] or [()] * rank for a in avals]
    if all(d == specs[0] for d in specs[1:]):
        return specs[0]
    if not _user_called(_CONCATENATES):
        return [()] * rank
    raise ShardingTypeError(
        "All operands should have the same sharding. Got shardings "
        + ", ".join(repr(NamedSharding(a.sharding.mesh.abstract_mesh, PartitionSpec(
            *[_entry(x) for x in d]))) for a, d in zip(avals, specs)
            if isinstance(a.sharding, NamedSharding)))


def _along_axis(name, avals, params):
    """Cumulative ops and sorts keep the operand's sharding; the axis they
    run along must be unsharded (JAX's errors, from the user's own calls;
    inside Ember's functions that axis is made unsharded)."""
    _, d = _spec_dims(avals[0])
    if d is None:
        return None
    axis = params["axis"] if name == "cumulative" else params["dimension"]
    if not d[axis]:
        return d
    calls = _CUMULATIVES if name == "cumulative" else _SORTS
    if not _user_called(calls):
        return [() if k == axis else a for k, a in enumerate(d)]
    if name == "cumulative":
        raise ShardingTypeError(
            "Input should be unsharded over the axis being reduced. Got input "
            f"type={avals[0].str_short()} and axis={axis}")
    raise ShardingTypeError(
        "Arguments to sort must be unsharded over the sorting dimension. Got arg "
        f"sharding={NamedSharding(avals[0].sharding.mesh.abstract_mesh, avals[0].sharding.spec)!r}"
        f" and sorting dimension={axis}")


def _gather(operand, indices, params, rank):
    """JAX's gather rule: the operand's dimensions sliced into (start_index_map)
    must be unsharded or taken whole, batching dimensions must agree with the
    indices', and the indices must be unsharded elsewhere; then the offset
    dimensions keep the operand's axes and the others take the indices'.
    Otherwise JAX's error asking for `.at[...].get(out_sharding=)` when the
    user indexed (inside Ember's own functions, and with `out_sharding=`
    given, the result is unsharded)."""
    _, d = _spec_dims(operand)
    _, di = _spec_dims(indices)
    if d is None and di is None:
        return None
    d = d or [()] * len(operand.shape)
    di = di or [()] * len(indices.shape)
    sizes = params["slice_sizes"]
    obd = params["operand_batching_dims"]
    ibd = params["start_indices_batching_dims"]
    ok = all(sizes[k] == operand.shape[k] or not d[k] for k in params["start_index_map"])
    ok = ok and all(not d[o] or not di[i] or d[o] == di[i] for o, i in zip(obd, ibd))
    ok = ok and all(not a for i, a in enumerate(di) if i not in ibd)
    if not ok:
        if _given.depth or not _user_called(_GATHERS):
            return [()] * rank
        raise gather_error(operand, indices)
    idx = list(di[:-1])
    for o, i in zip(obd, ibd):
        idx[i] = idx[i] or d[o]
    dropped = set(params["collapsed_slice_dims"]) | set(obd)
    window = iter(k for k in range(len(d)) if k not in dropped)
    batch = iter(idx)
    dims = []
    for pos in range(rank):
        if pos in params["offset_dims"]:
            k = next(window)
            dims.append(d[k] if sizes[k] == operand.shape[k] else ())
        else:
            dims.append(next(batch, ()))
    return dims


def check_select(which, cases, shape, names):
    """JAX's select sharding errors, for a user's call of one of `names`:
    the cases of the result's shape must be sharded alike (over Explicit
    axes), and a `which` of that shape as they are. Operands broadcast to
    the shape (scalars) are not checked. An array placed on no mesh counts
    as replicated on the mesh in context (JAX's arrays take that mesh), and
    is not checked without one."""
    if _given.depth or not _user_called(names):
        return
    context = get_abstract_mesh()

    def dims(aval):
        if isinstance(aval.sharding, NamedSharding):
            return _spec_dims(aval)[1] or [()] * len(aval.shape)
        return [()] * len(aval.shape) if context.explicit_axes else None

    def shown(aval):
        sh = aval.sharding
        if not isinstance(sh, NamedSharding):
            return NamedSharding(context, PartitionSpec(*[None] * len(aval.shape)))
        return NamedSharding(sh.mesh.abstract_mesh, PartitionSpec(
            *[sh.spec[k] if k < len(sh.spec) else None for k in range(len(aval.shape))]))

    full = [c.aval for c in cases if c.aval.shape == tuple(shape) and c.aval.shape]
    known = [(a, d) for a in full if (d := dims(a)) is not None]
    if any(d != known[0][1] for _, d in known[1:]):
        raise ShardingTypeError(
            "select cases must have the same shardings, got "
            f"[{', '.join(repr(shown(a)) for a in full)}].")
    w = which.aval
    if known and w.shape == tuple(shape) and w.shape and dims(w) is not None and \
            dims(w) != known[0][1]:
        raise ShardingTypeError(
            "select `which` must be scalar or have the same sharding as cases, got `which` "
            f"sharding {shown(w)!r} but case sharding {shown(known[0][0])!r}.")


def conv_sharding(lhs, rhs, feature_dim, out_shape):
    """JAX's convolution rule: with the kernel replicated and the input's
    feature dimension unsharded (over Explicit axes), the result takes the
    input's sharding (dimension by dimension; a dimension whose size changes
    must still split evenly); otherwise JAX's error asking for
    `out_sharding`, for the user's own calls (elsewhere: None, unsharded)."""
    sh = lhs.sharding
    _, dl = _spec_dims(lhs)
    _, dr = _spec_dims(rhs)
    if not any(dr or ()) and not (dl and dl[feature_dim]):
        if not isinstance(sh, NamedSharding):
            return None
        sizes = sh.mesh.shape
        for k, (n, m) in enumerate(zip(lhs.shape, out_shape)):
            split = 1
            for a in sh.spec.axes(k):
                split *= sizes[a]
            if n != m and m % split:
                if not _user_called(_CONVS):
                    return None
                raise ShardingTypeError(
                    f"conv_general_dilated on sharded dims where out dim ({m}) is not "
                    f"divisible by mesh axes ({split}) with spec ({sh.spec[k]}) is not "
                    f"implemented. Got input type={lhs.str_short(short_dtypes=True)} and "
                    f"output shape={tuple(out_shape)}")
        return sh
    if _given.depth or not _user_called(_CONVS):
        return None
    raise ShardingTypeError("Please specify the output sharding via `out_sharding` parameter "
                            "of `conv_general_dilated`")


def _full(e, n):
    """Whether slice `e` takes all of a dimension of size `n`."""
    if e.step not in (None, 1):
        return False
    try:
        return e.indices(n) == (0, n, 1)
    except TypeError:  # (a symbolic size)
        return e.start in (None, 0) and e.stop is None


def gather_error(operand, indices):
    return ShardingTypeError(
        "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
        "indexing as out sharding could not be resolved unambiguously (or would require "
        f"collectives on inputs). Got operand={operand!r}, indices={indices!r}")


def check_indexing(x, entries, split, update=None):
    """JAX's sharding errors for indexing `x` by normalized `entries` (one
    per dimension: slices, ints, index arrays): a gather (`update` None) or
    an indexed update (`update`: the updates' aval) into dimensions sharded
    over Explicit axes, or with sharded index arrays, when the user's own
    code indexed. A gather's int and partial-slice entries count only for a
    concrete array split over devices (`split`; JAX slices otherwise); an
    update's always do. Returns `x`'s NamedSharding (for an update's
    result), else None."""
    sh = x.aval.sharding
    if not isinstance(sh, NamedSharding) or not sh.mesh.explicit_axes or \
            _given.depth or not _user_called(_GATHERS | _SCATTERS):
        return sh if isinstance(sh, NamedSharding) else None
    _, d = _spec_dims(x.aval)
    basic = update is not None or split
    real = [e for e in entries if e is not None]
    arrays = [e for e in real if getattr(e, "ndim", 0) > 0]

    def indexed(k, e):
        if getattr(e, "ndim", 0) > 0:
            return True
        if isinstance(e, slice):
            return basic and not _full(e, x.shape[k])
        return basic  # an int or a 0-d index

    hit = any(d[k] and indexed(k, e) for k, e in enumerate(real))
    hit = hit or any(any(_spec_dims(a.aval)[1] or ()) for a in arrays if hasattr(a, "aval"))
    if not hit:
        return sh
    count = sum(1 for k, e in enumerate(real) if not (isinstance(e, slice) and
                                                      _full(e, x.shape[k])))
    if arrays:
        bshape = tuple(np.broadcast_shapes(*[a.shape for a in arrays]))
        first = arrays[0].aval if hasattr(arrays[0], "aval") else None
        spec = _spec_dims(first)[1] if first is not None and first.shape == bshape else None
        shown = x.aval.update(shape=bshape + (len(arrays),), dtype=np.dtype(np.int32)) \
            if first is None else first.update(shape=bshape + (len(arrays),))
        if spec and any(spec):
            shown = shown.update(sharding=_sharding(first.sharding.mesh, list(spec) + [()]))
    else:
        shown = x.aval.update(shape=(count,), dtype=np.dtype(np.int32))
    if update is None:
        raise gather_error(x.aval, shown)
    raise ShardingTypeError(
        "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
        "the scatter update as out sharding could not be resolved unambiguously (or would "
        f"require collectives on inputs). Got operand={x.aval!r}, indices={shown!r}, "
        f"updates={update!r}")


def _scatter(operand, params):
    """A scatter into unsharded dimensions keeps the operand's sharding;
    into sharded ones the result is unsharded (JAX asks for
    `out_sharding=`: not reproduced)."""
    _, d = _spec_dims(operand)
    if d is None:
        return None
    indexed = set(params["scatter_dims_to_operand_dims"]) | set(params["operand_batching_dims"])
    if any(axes and k in indexed for k, axes in enumerate(d)):
        return [()] * len(d)
    return d


def _sliced(aval, d, out_shape, mesh):
    """A slice keeps the operand's axes where the result's dimension still
    splits evenly over them, and is unsharded elsewhere. (JAX raises for an
    uneven one; Ember's own functions slice where JAX's use other
    primitives, such as the FFT's radix-2 steps, so here it is not an
    error: decision.)"""
    sizes = mesh.shape
    dims = list(d)
    for k, (n, m) in enumerate(zip(aval.shape, out_shape)):
        if n != m and d[k]:
            k_size = 1
            for a in d[k]:
                k_size *= sizes[a]
            if m % k_size:
                dims[k] = ()
    return dims


def _dot_general(avals, params):
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    if _given.depth:
        if _given.unreduced:
            _check_unreduced_product(avals, lc, rc, _given.unreduced)
        return None
    _, ld = _spec_dims(avals[0])
    _, rd = _spec_dims(avals[1])
    ld = ld or [()] * len(avals[0].shape)
    rd = rd or [()] * len(avals[1].shape)
    lspec = tuple(_entry(ld[k]) for k in lc)
    rspec = tuple(_entry(rd[k]) for k in rc)
    for a, b in zip(lb, rb):
        if ld[a] and rd[b] and ld[a] != rd[b]:
            raise ShardingTypeError(
                "dot_general requires lhs batch dimensions and rhs batch dimensions to have "
                f"the consistent sharding, got {tuple(_entry(ld[k]) for k in lb)} and "
                f"{tuple(_entry(rd[k]) for k in rb)}.")
    if any(ld[a] and rd[b] and ld[a] != rd[b] for a, b in zip(lc, rc)):
        raise ShardingTypeError("dot_general requires contracting dimensions to have "
                                f"consistent sharding, got {lspec} and {rspec}.")
    if any(ld[a] and rd[b] for a, b in zip(lc, rc)):
        raise ShardingTypeError(
            "Contracting dimensions are sharded and it is ambiguous how the output should be "
            "sharded. Please specify the output sharding via the `out_sharding` parameter. "
            f"Got lhs_contracting_spec={lspec} and rhs_contracting_spec={rspec}")
    dims = [ld[a] or rd[b] for a, b in zip(lb, rb)]
    dims += [ld[k] for k in range(len(ld)) if k not in lc and k not in lb]
    dims += [rd[k] for k in range(len(rd)) if k not in rc and k not in rb]
    return dims


def _check_unreduced_product(avals, lc, rc, unreduced):
    """JAX's checks of a product asked for an unreduced result: both sides'
    contracting dimensions sharded alike, over exactly those axes."""
    ld = _spec_dims(avals[0])[1] or [()] * len(avals[0].shape)
    rd = _spec_dims(avals[1])[1] or [()] * len(avals[1].shape)
    lspec = tuple(_entry(ld[k]) for k in lc)
    rspec = tuple(_entry(rd[k]) for k in rc)
    if lspec != rspec:
        raise ShardingTypeError(
            "lhs and rhs contracting dims should be sharded identically when out_sharding "
            "provided to dot_general mentions unreduced_axes. Got "
            f"lhs_contracting_spec={lspec}, rhs_contracting_spec={rspec}")
    if {x for k in lc for x in ld[k]} != set(unreduced):
        raise ShardingTypeError(
            "out_sharding's unreduced axes should be equal to the contracting specs. Got "
            f"unreduced axes={frozenset(unreduced)} and contracting spec={lspec}")


class _Unsharded(Exception):
    """A reshape with no rule inside one of Ember's own functions."""


# The functions through which a user calls a primitive whose sharding
# errors are JAX's (elsewhere Ember's own functions use it where JAX's use
# other primitives).
_NP, _LAX = "ember._src.numpy.lax_numpy", "ember._src.lax"
_RESHAPES = {(_NP, "reshape"), (_NP, "ravel"), (_LAX, "reshape"),
             ("ember._src.numpy.array_methods", "<lambda>")}
_CONCATENATES = {(_NP, "concatenate"), (_NP, "stack"), (_NP, "hstack"), (_NP, "vstack"),
                 (_LAX, "concatenate")}
_CUMULATIVES = {(_NP, "cumulative"), (_NP, "cumulative_sum"), (_NP, "cumulative_prod"),
                (_LAX, "cumulative"), (_LAX, "cumlogsumexp")}
_SORTS = {(_NP, "sort"), (_NP, "argsort"), (_LAX, "sort"), (_LAX, "sort_key_val")}
_UPDATE_SLICES = {(_LAX, "dynamic_update_slice"), (_LAX, "dynamic_update_slice_in_dim"),
                  (_LAX, "dynamic_update_index_in_dim")}
_CONV = "ember._src.convolution"
_CONVS = {(_CONV, "conv_general_dilated"), (_CONV, "conv"),
          (_CONV, "conv_with_general_padding")}
WHERE = {(_NP, "where")}
LAX_SELECTS = {(_LAX, "select"), (_LAX, "select_n")}
_IDX = "ember._src.numpy.indexing"
_GATHERS = {(_IDX, "getitem"), (_IDX, "get"), (_NP, "take"), (_NP, "take_along_axis"),
            (_LAX, "gather")}
_SCATTERS = {(_IDX, name) for name in ("set", "add", "subtract", "multiply", "divide",
                                      "power", "min", "max", "apply")}


# Ember's wrappers around the functions in `_GATHERS`/`_SCATTERS` and the
# like (key-array dispatch, programs compiled outside traces, `x[i]`).
_WRAPPERS = ("_key_dispatch", "_jit_dispatch", "getitem_method")


def _user_called(names):
    """Whether the user's code called one of `names` itself (JAX's error),
    not a function of Ember's that uses the primitive inside (the FFT's
    radix-2 steps, say, where JAX has one primitive)."""
    frame, callee = sys._getframe(1), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != "ember" and not module.startswith("ember."):
            return callee is not None and (callee.f_globals.get("__name__"),
                                           callee.f_code.co_name) in names
        if frame.f_code.co_name not in _WRAPPERS:
            callee = frame
        frame = frame.f_back
    return True


def _reshape(aval, new_shape):
    """Dimensions grouped into runs of equal products: a run of one
    dimension to one keeps its axes; a dimension split into several gives
    its axes, major first, to the new dimensions (each axis's size must
    divide what is left of its dimension); dimensions merged into one give
    it their axes in order (the unsharded ones only after the sharded). Any
    other sharded run is JAX's error asking for `out_sharding`. (JAX allows
    one split or merge per reshape; several independent ones work here.)"""
    _, d = _spec_dims(aval)
    old = aval.shape

    def error():
        if not _user_called(_RESHAPES):
            raise _Unsharded
        raise ShardingTypeError(
            "This reshape is not supported. Please specify the sharding of the output via "
            "the `out_sharding` argument of jax.lax.reshape. Got operand type: "
            f"{aval.str_short()}, new sizes: {tuple(new_shape)}")

    sizes = aval.sharding.mesh.shape
    olds = [(k, n) for k, n in enumerate(old) if n != 1]
    news = [(k, n) for k, n in enumerate(new_shape) if n != 1]
    dims = [()] * len(new_shape)
    i = j = 0
    while i < len(olds) or j < len(news):
        gi, gj = [olds[i]], [news[j]]
        i, j = i + 1, j + 1
        po, pn = gi[0][1], gj[0][1]
        while po != pn:
            if po < pn:
                gi.append(olds[i])
                po *= olds[i][1]
                i += 1
            else:
                gj.append(news[j])
                pn *= news[j][1]
                j += 1
        axes = [a for k, _ in gi for a in d[k]]
        if not axes:
            continue
        if len(gi) > 1 and len(gj) > 1:
            error()
        if len(gi) > 1:
            # merge: no unsharded dimension before a sharded one.
            seen_unsharded = False
            for k, _ in gi:
                if not d[k]:
                    seen_unsharded = True
                elif seen_unsharded:
                    error()
        left = list(axes)
        for k, n in gj:
            took = []
            while left and n > 1:
                n, rem = divmod(n, sizes[left[0]])
                if rem:
                    error()
                took.append(left.pop(0))
            dims[k] = tuple(took)
        if left:
            error()
    return dims

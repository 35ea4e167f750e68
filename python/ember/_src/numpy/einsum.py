"""einsum by pairwise dot_general contractions (left to right)."""

from .. import core as _core
from .. import lax, sharding_rules
from . import lax_numpy as jnp


def einsum(subscripts, *operands, optimize=None, precision=None, preferred_element_type=None,
           out_sharding=None):
    if not isinstance(subscripts, str):
        # The interleaved form: einsum(x, [0, 1], y, [1, 2], [0, 2]).
        subscripts, operands = _from_sublists((subscripts,) + operands)
    if out_sharding is None:
        return _einsum(subscripts, *operands, precision=precision,
                       preferred_element_type=preferred_element_type)
    with sharding_rules.output_given(out_sharding):
        out = _einsum(subscripts, *operands, precision=precision,
                      preferred_element_type=preferred_element_type)
    return _core.with_out_sharding(out, out_sharding)


def _from_sublists(args):
    """(subscripts, operands) of einsum's interleaved form: operands each
    followed by a list of axis labels (ints, or Ellipsis), then optionally
    the output's list."""
    args = list(args)
    out = args.pop() if len(args) % 2 else None
    ops, lists = args[0::2], args[1::2]
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

    def word(labels):
        chars = []
        for x in labels:
            if x is Ellipsis:
                chars.append("...")
            elif isinstance(x, int) and 0 <= x < len(letters):
                chars.append(letters[x])
            else:
                raise ValueError(f"einsum: subscript labels must be integers from 0 to "
                                 f"{len(letters) - 1} or Ellipsis, got {x!r}")
        return "".join(chars)

    subscripts = ",".join(word(x) for x in lists)
    if out is not None:
        subscripts += "->" + word(out)
    return subscripts, tuple(ops)


def _parse(subscripts, n):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins, out = subscripts, None
    ins = ins.split(",")
    if len(ins) != n:
        raise ValueError(f"einsum: {len(ins)} subscripts for {n} operands")
    if out is None:
        counts = {}
        for s in ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c, k in counts.items() if k == 1))
    return ins, out


def _reduce_single(x, s, keep):
    # Diagonals: repeated letters in one operand.
    while len(set(s)) != len(s):
        for c in s:
            if s.count(c) > 1:
                i = s.index(c)
                j = s.index(c, i + 1)
                x = jnp.diagonal(x, axis1=i, axis2=j)
                s = s[:i] + s[i + 1:j] + s[j + 1:] + c
                break
    drop = [i for i, c in enumerate(s) if c not in keep]
    if drop:
        x = jnp.sum(x, axis=tuple(drop), dtype=x.dtype)  # (in its own type, as JAX's)
        s = "".join(c for c in s if c in keep)
    return x, s


def _expand_ellipsis(subscripts, ops):
    """Rewrites '...' into fresh letters (right-aligned, broadcast like NumPy)."""
    subscripts = subscripts.replace(" ", "")
    if "..." not in subscripts:
        return subscripts, ops
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins, out = subscripts, None
    ins = ins.split(",")
    if len(ins) != len(ops):
        raise ValueError(f"einsum: {len(ins)} subscripts for {len(ops)} operands")
    used = set(subscripts)
    pool = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    nell = 0
    for s, o in zip(ins, ops):
        if "..." in s:
            nell = max(nell, o.ndim - (len(s) - 3))
    letters = pool[:nell]
    bshape = [1] * nell
    for s, o in zip(ins, ops):
        if "..." in s:
            k = o.ndim - (len(s) - 3)
            i = s.index("...")
            for j, n in enumerate(o.shape[i:i + k]):
                d = nell - k + j
                if n != 1:
                    if bshape[d] not in (1, n):
                        raise ValueError(f"einsum: operands could not be broadcast together "
                                         f"with shapes {[tuple(x.shape) for x in ops]}")
                    bshape[d] = n
    new_ins, new_ops = [], []
    for s, o in zip(ins, ops):
        if "..." in s:
            k = o.ndim - (len(s) - 3)
            i = s.index("...")
            ell = letters[nell - k:]
            target = list(o.shape)
            target[i:i + k] = bshape[nell - k:]
            if tuple(target) != o.shape:
                o = jnp.broadcast_to(o, tuple(target))
            s = s.replace("...", "".join(ell))
        new_ins.append(s)
        new_ops.append(o)
    if out is None:
        counts = {}
        for s in ins:
            for c in s.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = "".join(letters) + "".join(sorted(c for c, k in counts.items() if k == 1))
    else:
        out = out.replace("...", "".join(letters))
    return ",".join(new_ins) + "->" + out, new_ops


def _einsum(subscripts, *operands, precision=None, preferred_element_type=None):
    ops = [jnp.asarray(o) for o in operands]
    subscripts, ops = _expand_ellipsis(subscripts, ops)
    ins, out = _parse(subscripts, len(ops))
    for s, o in zip(ins, ops):
        if len(s) != o.ndim:
            raise ValueError(f"einsum: subscripts {s!r} do not match operand of shape {o.shape}")
    # A label of size 1 in one operand broadcasts against its size in the
    # others (NumPy's and JAX's einsum).
    sizes = {}
    for s, o in zip(ins, ops):
        for c, n in zip(s, o.shape):
            if n != 1:
                if sizes.get(c, n) != n:
                    raise ValueError(f"einsum: size of label {c!r} differs between operands: "
                                     f"{sizes[c]} and {n}")
                sizes[c] = n
    ops = [o if all(n != 1 or sizes.get(c, 1) == 1 for c, n in zip(s, o.shape)) else
           jnp.broadcast_to(o, tuple(sizes.get(c, 1) if n == 1 else n for c, n in zip(s, o.shape)))
           for s, o in zip(ins, ops)]
    dt = jnp.result_type(*ops) if preferred_element_type is None else preferred_element_type
    ops = [o.astype(dt) for o in ops]
    x, s = ops[0], ins[0]
    rest = list(zip(ins[1:], ops[1:]))
    def needed_later(k):
        return set(out).union(*[set(t) for t, _ in rest[k:]])
    x, s = _reduce_single(x, s, needed_later(0))
    for k, (t, y) in enumerate(rest):
        keep = needed_later(k + 1)
        y, t = _reduce_single(y, t, keep | set(s))
        x, s = _reduce_single(x, s, keep | set(t))
        batch = [c for c in s if c in t and c in keep]
        contract = [c for c in s if c in t and c not in keep]
        dn = (([s.index(c) for c in contract], [t.index(c) for c in contract]),
              ([s.index(c) for c in batch], [t.index(c) for c in batch]))
        x = lax.dot_general(x, y, dn, precision=precision, preferred_element_type=dt)
        s = "".join(batch) + "".join(c for c in s if c not in batch and c not in contract) + \
            "".join(c for c in t if c not in batch and c not in contract)
    x, s = _reduce_single(x, s, set(out))
    return jnp.transpose(x, [s.index(c) for c in out]) if s != out else x

"""einsum by pairwise dot_general contractions (left to right)."""

import ember.numpy as jnp
from ember._src import lax


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
        x = jnp.sum(x, axis=tuple(drop))
        s = "".join(c for c in s if c in keep)
    return x, s


def einsum(subscripts, *operands):
    ops = [jnp.asarray(o) for o in operands]
    ins, out = _parse(subscripts, len(ops))
    if any("." in s for s in ins):
        raise NotImplementedError("einsum with ellipsis")
    dt = jnp.result_type(*ops)
    ops = [o.astype(dt) for o in ops]
    x, s = ops[0], ins[0]
    rest = list(zip(ins[1:], ops[1:]))
    needed_later = lambda k: set(out).union(*[set(t) for t, _ in rest[k:]])  # noqa: E731
    x, s = _reduce_single(x, s, needed_later(0))
    for k, (t, y) in enumerate(rest):
        keep = needed_later(k + 1)
        y, t = _reduce_single(y, t, keep | set(s))
        x, s = _reduce_single(x, s, keep | set(t))
        batch = [c for c in s if c in t and c in keep]
        contract = [c for c in s if c in t and c not in keep]
        dn = (([s.index(c) for c in contract], [t.index(c) for c in contract]),
              ([s.index(c) for c in batch], [t.index(c) for c in batch]))
        x = lax.dot_general(x, y, dn, preferred_element_type=dt)
        s = "".join(batch) + "".join(c for c in s if c not in batch and c not in contract) + \
            "".join(c for c in t if c not in batch and c not in contract)
    x, s = _reduce_single(x, s, set(out))
    return jnp.transpose(x, [s.index(c) for c in out]) if s != out else x

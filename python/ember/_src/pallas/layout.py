"""CuTe-style layout algebra (NVIDIA CUTLASS CuTe's `Layout`), in pure Python.

A `Layout` pairs a shape with a congruent stride, both (nested) tuples of ints,
written ``(shape):(stride)``, e.g. ``(4,(2,3)):(1,(4,8))``. It maps a coordinate
to the offset ``sum(c_i * d_i)`` over the leaves. Conventions follow CuTe:

* Coordinates are colexicographic (column-major): a 1-D index is split into a
  natural coordinate with the leftmost mode varying fastest, and the default
  stride is the compact column-major one (CuTe's ``LayoutLeft``), so
  ``Layout((4, 2))`` is ``(4,2):(1,4)``.
* A 1-D index past ``size()`` spills into the last mode, which is unbounded (as
  in CuTe's ``crd2idx``); composition relies on this extension.
* A "tiler" is a Layout (composed as a 1-D function), an int ``n`` (``n:1``),
  or a tuple of tilers applied mode by mode (``None`` leaves a mode alone).
* The algebra (composition, complement, divides, products, inverses) assumes
  non-negative strides; inputs outside its admissible domain raise ValueError.
"""

import math
import operator

__all__ = [
    "Layout",
    "blocked_product",
    "ceil_div",
    "coalesce",
    "complement",
    "composition",
    "crd2idx",
    "filter_layout",
    "flat_divide",
    "flatten",
    "idx2crd",
    "left_inverse",
    "logical_divide",
    "logical_product",
    "make_layout",
    "prefix_product",
    "raked_product",
    "right_inverse",
    "shape_div",
    "shape_mod",
    "tiled_divide",
    "tiled_product",
    "zipped_divide",
    "zipped_product",
]


# ---------------------------------------------------------------------------
# Int-tuple helpers
# ---------------------------------------------------------------------------


def _normalize(x, what):
    """Nested lists/tuples of ints -> nested tuples of Python ints."""
    if isinstance(x, (tuple, list)):
        return tuple(_normalize(e, what) for e in x)
    if isinstance(x, bool):
        raise TypeError(f"{what} must be an int or a nested tuple of ints, got {x!r}")
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{what} must be an int or a nested tuple of ints, got {x!r}") from None


def _product(x):
    if isinstance(x, tuple):
        return math.prod(_product(e) for e in x)
    return x


def _leaves(x):
    if isinstance(x, tuple):
        for e in x:
            yield from _leaves(e)
    else:
        yield x


def _congruent(a, b):
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(_congruent, a, b))
    return not isinstance(b, tuple)


def _fmt(x):
    if isinstance(x, tuple):
        return "(" + ",".join(_fmt(e) for e in x) + ")"
    return str(x)


def flatten(x):
    """Flattens a nested int tuple to a flat tuple (an int stays an int); a
    Layout is flattened to depth <= 1."""
    if isinstance(x, Layout):
        return Layout(flatten(x.shape), flatten(x.stride))
    if isinstance(x, tuple):
        return tuple(_leaves(x))
    return x


def prefix_product(shape, init=1):
    """Exclusive colexicographic prefix products, congruent with `shape`:
    the compact column-major strides, e.g. ``(4,(2,3)) -> (1,(4,8))``."""
    shape = _normalize(shape, "shape")
    if isinstance(shape, tuple):
        out = []
        for s in shape:
            out.append(prefix_product(s, init))
            init *= _product(s)
        return tuple(out)
    return init


def ceil_div(a, b):
    """Ceiling division of ints (element-wise for congruent tuples)."""
    if isinstance(a, tuple):
        if not isinstance(b, tuple) or len(a) != len(b):
            raise ValueError(f"ceil_div: {a!r} and {b!r} are not congruent")
        return tuple(map(ceil_div, a, b))
    return -(-a // b)


def shape_div(a, b):
    """Divides the shape `a` by `b`, consuming `b` from the left (colexicographic
    order): ``(3,6,2,8) / 6 -> (1,3,2,8)``. Each int step needs one of the two
    operands to divide the other (the stride divisibility condition)."""
    if isinstance(a, tuple):
        if isinstance(b, tuple):
            if len(a) != len(b):
                raise ValueError(f"shape_div: {a!r} and {b!r} are not congruent")
            return tuple(map(shape_div, a, b))
        out = []
        for ai in a:
            out.append(shape_div(ai, b))
            b = shape_div(b, _product(ai))
        return tuple(out)
    if isinstance(b, tuple):
        b = _product(b)
    if a % b == 0:
        return a // b
    if b % a == 0:
        return 1
    raise ValueError(
        f"shape_div: divisibility condition fails, neither of {a} and {b} divides the other"
    )


def shape_mod(a, b):
    """Keeps the first `b` elements of the shape `a`, from the left:
    ``(3,6,2,8) % 9 -> (3,3,1,1)``. A mode smaller than what remains must
    divide it (the shape divisibility condition)."""
    if isinstance(a, tuple):
        out = []
        for ai in a:
            out.append(shape_mod(ai, b))
            b = ceil_div(b, _product(ai))
        return tuple(out)
    if a >= b:
        return b
    if b % a == 0:
        return a
    raise ValueError(f"shape_mod: divisibility condition fails, {a} does not divide {b}")


def crd2idx(coord, shape, stride=None):
    """Offset of `coord` in the layout `shape:stride` (default stride: compact
    column-major). An int coordinate into a tuple mode is split
    colexicographically; the last mode takes whatever is left."""
    shape = _normalize(shape, "shape")
    stride = prefix_product(shape) if stride is None else _normalize(stride, "stride")
    return _crd2idx(_normalize(coord, "coordinate"), shape, stride)


def _crd2idx(coord, shape, stride):
    if isinstance(coord, tuple):
        if not isinstance(shape, tuple) or len(coord) != len(shape):
            raise ValueError(f"coordinate {_fmt(coord)} is not compatible with shape {_fmt(shape)}")
        return sum(map(_crd2idx, coord, shape, stride))
    if isinstance(shape, tuple):
        result = 0
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == len(shape) - 1:
                result += _crd2idx(coord, s, d)
            else:
                n = _product(s)
                result += _crd2idx(coord % n, s, d)
                coord //= n
        return result
    return coord * stride


def idx2crd(idx, shape):
    """The natural (hierarchical, colexicographic) coordinate of the 1-D index
    `idx` in `shape`; the last mode is unbounded."""
    shape = _normalize(shape, "shape")
    return _idx2crd(operator.index(idx), shape)


def _idx2crd(idx, shape):
    if isinstance(shape, tuple):
        out = []
        for i, s in enumerate(shape):
            if i == len(shape) - 1:
                out.append(_idx2crd(idx, s))
            else:
                n = _product(s)
                out.append(_idx2crd(idx % n, s))
                idx //= n
        return tuple(out)
    return idx


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------


class Layout:
    """An immutable ``(shape):(stride)`` pair of congruent nested int tuples."""

    __slots__ = ("_shape", "_stride")

    def __init__(self, shape, stride=None):
        shape = _normalize(shape, "shape")
        for s in _leaves(shape):
            if s < 1:
                raise ValueError(f"shape extents must be positive, got {_fmt(shape)}")
        if stride is None:
            stride = prefix_product(shape)
        else:
            stride = _normalize(stride, "stride")
            if not _congruent(shape, stride):
                raise ValueError(f"stride {_fmt(stride)} is not congruent with shape {_fmt(shape)}")
        object.__setattr__(self, "_shape", shape)
        object.__setattr__(self, "_stride", stride)

    def __setattr__(self, name, value):
        raise AttributeError("Layout is immutable")

    def __delattr__(self, name):
        raise AttributeError("Layout is immutable")

    @property
    def shape(self):
        return self._shape

    @property
    def stride(self):
        return self._stride

    @property
    def rank(self):
        """Number of top-level modes (1 for an integral shape)."""
        return len(self._shape) if isinstance(self._shape, tuple) else 1

    @property
    def depth(self):
        """Nesting depth of the shape: 0 for an int, 1 for a flat tuple, ..."""

        def d(x):
            if isinstance(x, tuple):
                return 1 + max((d(e) for e in x), default=0)
            return 0

        return d(self._shape)

    def size(self):
        """Size of the domain: the product of the shape."""
        return _product(self._shape)

    def cosize(self):
        """Size of the codomain: one past the largest offset."""
        return 1 + sum(
            max(0, (s - 1) * d) for s, d in zip(_leaves(self._shape), _leaves(self._stride))
        )

    def __call__(self, *coord):
        """The offset of a 1-D index or a (nested) coordinate; ``layout(i, j)``
        is ``layout((i, j))``."""
        c = coord[0] if len(coord) == 1 else coord
        return _crd2idx(_normalize(c, "coordinate"), self._shape, self._stride)

    def __getitem__(self, i):
        """Mode `i` (or a slice of modes) as a Layout; an integral layout is its
        own only mode."""
        if not isinstance(self._shape, tuple):
            if isinstance(i, slice):
                return make_layout(self)[i]
            if operator.index(i) in (0, -1):
                return self
            raise IndexError(f"mode {i} out of range for rank-1 layout {self}")
        return Layout(self._shape[i], self._stride[i])

    def __iter__(self):
        for i in range(self.rank):
            yield self[i]

    def __len__(self):
        return self.rank

    def __eq__(self, other):
        if not isinstance(other, Layout):
            return NotImplemented
        return self._shape == other._shape and self._stride == other._stride

    def __hash__(self):
        return hash((Layout, self._shape, self._stride))

    def __str__(self):
        return f"{_fmt(self._shape)}:{_fmt(self._stride)}"

    def __repr__(self):
        return f"Layout({self._shape!r}, {self._stride!r})"

    @staticmethod
    def parse(text):
        """Parses CuTe's printed form, e.g. ``"(4,(2,3)):(1,(4,8))"``; the stride
        may be omitted (compact column-major) and CuTe's ``_`` prefix for static
        integers is accepted."""
        src = "".join(text.split())
        pos = 0

        def fail(msg):
            raise ValueError(f"cannot parse layout {text!r}: {msg} at position {pos}")

        def tup():
            nonlocal pos
            if pos < len(src) and src[pos] == "(":
                pos += 1
                items = [tup()]
                while pos < len(src) and src[pos] == ",":
                    pos += 1
                    items.append(tup())
                if pos >= len(src) or src[pos] != ")":
                    fail("expected ')'")
                pos += 1
                return tuple(items)
            start = pos
            if pos < len(src) and src[pos] == "_":
                pos += 1
                start = pos
            if pos < len(src) and src[pos] == "-":
                pos += 1
            while pos < len(src) and src[pos].isdigit():
                pos += 1
            if pos == start or src[start:pos] == "-":
                fail("expected an integer")
            return int(src[start:pos])

        shape = tup()
        stride = None
        if pos < len(src) and src[pos] == ":":
            pos += 1
            stride = tup()
        if pos != len(src):
            fail("unexpected trailing text")
        return Layout(shape, stride)


def _as_layout(x, what="layout"):
    if isinstance(x, Layout):
        return x
    if isinstance(x, (int, tuple, list)) and not isinstance(x, bool):
        return Layout(x)
    raise TypeError(f"{what} must be a Layout or a shape, got {x!r}")


def make_layout(*layouts):
    """Concatenates layouts as the modes of a new layout: (L0, L1, ...)."""
    for x in layouts:
        if not isinstance(x, Layout):
            raise TypeError(f"make_layout takes Layouts, got {x!r}")
    return Layout(tuple(x.shape for x in layouts), tuple(x.stride for x in layouts))


def filter_layout(layout):
    """Drops the size-1 and stride-0 modes and flattens (1:0 if nothing is
    left); the result has the same image as `layout`."""
    modes = [
        (s, d) for s, d in zip(_leaves(layout.shape), _leaves(layout.stride)) if s != 1 and d != 0
    ]
    return coalesce(_from_modes(modes))


def _from_modes(modes):
    """A flat Layout from (shape, stride) pairs; 1:0 when empty, integral when
    a single mode."""
    if not modes:
        return Layout(1, 0)
    if len(modes) == 1:
        return Layout(*modes[0])
    return Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))


def _flat_modes(layout):
    return list(zip(_leaves(layout.shape), _leaves(layout.stride)))


# ---------------------------------------------------------------------------
# Coalesce
# ---------------------------------------------------------------------------


def coalesce(layout, profile=None):
    """Simplifies `layout` without changing it as a function of 1-D indices:
    flattens it, drops size-1 modes and merges ``s0:d0 ++ s1:(s0*d0)`` into
    ``(s0*s1):d0``. With a tuple `profile`, coalesces mode by mode (down to the
    int leaves of the profile) and keeps the rank."""
    if isinstance(profile, (tuple, list)):
        if len(profile) > layout.rank:
            raise ValueError(f"coalesce profile {profile!r} has more modes than {layout}")
        modes = [
            coalesce(layout[i], profile[i]) if i < len(profile) else layout[i]
            for i in range(layout.rank)
        ]
        return make_layout(*modes)
    out = []
    for s, d in _flat_modes(layout):
        if s == 1:
            continue
        if out and out[-1][0] * out[-1][1] == d:
            out[-1] = (out[-1][0] * s, out[-1][1])
        else:
            out.append((s, d))
    return _from_modes(out)


# ---------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------


def _compose_leaf(modes, s, d):
    """(A o s:d) for the flat, coalesced modes of A; returns (shape, stride)."""
    if s == 1:
        return 1, 0
    if d == 0:
        return s, 0
    if d < 0:
        raise ValueError(f"composition with a negative stride {s}:{d} is not supported")
    # Divide out d: skip the first d elements of A (stride divisibility).
    rest = []
    r = d
    for i, (a, b) in enumerate(modes):
        if r == 1:
            rest.append((a, b))
        elif i == len(modes) - 1:
            rest.append((None, b * r))  # the last mode is unbounded
            r = 1
        elif a % r == 0:
            rest.append((a // r, b * r))
            r = 1
        elif r % a == 0:
            r //= a
        else:
            raise ValueError(
                f"composition: stride divisibility condition fails, stride {d} "
                f"does not divide into the shape {_fmt(tuple(m[0] for m in modes))} "
                f"(neither of {a} and {r} divides the other)"
            )
    # Mod out s: keep the first s elements of what remains (shape divisibility).
    out = []
    m = s
    for i, (a, b) in enumerate(rest):
        if m == 1:
            break
        if a is None or i == len(rest) - 1 or a >= m:
            out.append((m, b))
            m = 1
        elif m % a == 0:
            out.append((a, b))
            m //= a
        else:
            raise ValueError(
                f"composition: shape divisibility condition fails, shape {s} (stride {d}) "
                f"does not fit the modes {_fmt(tuple(x[0] for x in rest))} "
                f"({a} does not divide {m})"
            )
    result = coalesce(_from_modes(out))
    return result.shape, result.stride


def _extension_modes(a):
    """The flat modes of `a`, coalesced as a function of *all* non-negative
    1-D indices (the last mode is unbounded): like `coalesce`, but the last
    mode is kept even when its extent is 1."""
    flat = _flat_modes(a)
    modes = []
    for k, (s, d) in enumerate(flat):
        if s == 1 and k != len(flat) - 1:
            continue
        if modes and modes[-1][0] * modes[-1][1] == d:
            modes[-1] = (modes[-1][0] * s, modes[-1][1])
        else:
            modes.append((s, d))
    return modes


def _check_no_carry(a, modes, b):
    """A o (B0, B1, ...) == (A o B0, A o B1, ...) needs A(x + y) == A(x) + A(y)
    for the offsets of different leaves of B: adding them must not carry across
    a boundary between the modes of A. Every admissible leaf stride d is
    comparable with each boundary P (one divides the other), so the largest
    residue of the leaf's offsets modulo P is known in closed form."""
    leaves = [(s, d) for s, d in _flat_modes(b) if s > 1 and d > 0]
    if len(leaves) < 2:
        return
    boundary = 1
    for extent, _ in modes[:-1]:
        boundary *= extent
        total = 0
        for s, d in leaves:
            if d % boundary != 0:  # then d divides the boundary
                total += min(d * (s - 1), boundary - d)
        if total >= boundary:
            raise ValueError(
                f"composition: {a} o {b} is not a layout: the modes of {b} overlap, so "
                f"adding their offsets carries across the mode boundary {boundary} of {a}"
            )


def _compose_layout(a, b):
    modes = _extension_modes(a)

    def walk(shape, stride):
        if isinstance(shape, tuple):
            pairs = [walk(s, d) for s, d in zip(shape, stride)]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        return _compose_leaf(modes, shape, stride)

    result = Layout(*walk(b.shape, b.stride))
    _check_no_carry(a, modes, b)
    return result


def composition(a, b):
    """Functional composition ``R = A o B``, ``R(c) = A(B(c))``, with R
    compatible with B (same hierarchical shape structure).

    `b` is a Layout (composed as a 1-D function), an int n (``n:1``), or a tuple
    ("tiler") whose entries are composed with the corresponding modes of `a`
    (``None`` keeps the mode); modes of `a` beyond the tiler are kept."""
    a = _as_layout(a)
    if isinstance(b, Layout):
        return _compose_layout(a, b)
    if isinstance(b, (tuple, list)):
        return _by_mode(composition, a, b, "composition")
    return _compose_layout(a, _as_layout(b, "tiler"))


def _by_mode(fn, a, tiler, name):
    if len(tiler) > a.rank:
        raise ValueError(f"{name}: tiler {tiler!r} has more modes than the layout {a}")
    modes = []
    for i in range(a.rank):
        t = tiler[i] if i < len(tiler) else None
        modes.append(a[i] if t is None else fn(a[i], t))
    return make_layout(*modes)


# ---------------------------------------------------------------------------
# Complement and inverses
# ---------------------------------------------------------------------------


def complement(layout, cotarget=None):
    """The layout R of the "rest" of `layout` within ``[0, size(cotarget))``:
    R is ordered (strictly increasing), its image meets the image of `layout`
    only at 0, and ``make_layout(layout, R)`` is a bijection onto
    ``[0, N)`` with ``N >= size(cotarget)``. Stride-0 modes are ignored (the
    complement depends only on the image); `cotarget` defaults to
    ``cosize(layout)`` and may be an int or a shape."""
    layout = _as_layout(layout)
    if cotarget is None:
        cotarget = layout.cosize()
    target = _product(_normalize(cotarget, "cotarget"))
    modes = [(s, d) for s, d in _flat_modes(layout) if s != 1 and d != 0]
    if any(d < 0 for _, d in modes):
        raise ValueError(f"complement of {layout}: negative strides are not supported")
    modes.sort(key=lambda m: (m[1], m[0]))
    out = []
    current = 1
    for s, d in modes:
        if d % current != 0:
            raise ValueError(
                f"complement of {layout} does not exist: mode {s}:{d} overlaps or "
                f"interleaves with the modes of smaller stride, which span {current} "
                "(the layout is not injective, or its image has no layout complement)"
            )
        out.append((d // current, current))
        current = s * d
    out.append((ceil_div(target, current), current))
    return coalesce(_from_modes(out))


def right_inverse(layout):
    """A layout R with ``layout(R(i)) == i`` for all ``i < size(R)``, covering
    the largest contiguous prefix ``[0, size(R))`` of the codomain that this
    construction reaches (1:0 when it is just {0})."""
    layout = _as_layout(layout)
    flat = coalesce(layout)
    shapes = [s for s, _ in _flat_modes(flat)]
    domain = prefix_product(tuple(shapes))
    modes = sorted(((d, s, k) for (s, d), k in zip(_flat_modes(flat), domain) if d > 0 and s > 1))
    out = []
    current = 1
    for d, s, k in modes:
        if d != current:
            break
        out.append((s, k))
        current *= s
    return coalesce(_from_modes(out))


def left_inverse(layout):
    """A layout R with ``R(layout(i)) == i`` for all ``i < size(layout)``;
    `layout` must be injective and have a complement."""
    layout = _as_layout(layout)
    if any(s > 1 and d == 0 for s, d in _flat_modes(layout)):
        raise ValueError(f"left_inverse: {layout} is not injective (it has a stride-0 mode)")
    return right_inverse(make_layout(layout, complement(layout)))


# ---------------------------------------------------------------------------
# Divide and product
# ---------------------------------------------------------------------------


def logical_divide(a, tiler):
    """``A / B = A o (B, B*)`` with B* the complement of B in ``size(A)``: mode 0
    is the tile, mode 1 enumerates the tiles. A tuple tiler divides by mode."""
    a = _as_layout(a)
    if isinstance(tiler, (tuple, list)):
        return _by_mode(logical_divide, a, tiler, "logical_divide")
    b = _as_layout(tiler, "tiler")
    return composition(a, make_layout(b, complement(b, a.size())))


def logical_product(a, tiler):
    """``A * B = (A, A* o B)`` with A* the complement of A in
    ``size(A) * cosize(B)``: mode 0 is A, mode 1 repeats A as laid out by B.
    A tuple tiler multiplies by mode."""
    a = _as_layout(a)
    if isinstance(tiler, (tuple, list)):
        return _by_mode(logical_product, a, tiler, "logical_product")
    b = _as_layout(tiler, "tiler")
    return make_layout(a, composition(complement(a, a.size() * b.cosize()), b))


def _rearrange(result, tiler, kind):
    """Regroups ((T0,R0),(T1,R1),...,L...) for the zipped/tiled/flat forms."""
    if isinstance(tiler, (tuple, list)):
        if any(t is None for t in tiler):
            raise ValueError(f"{kind} does not accept None in the tiler {tiler!r}")
        n = len(tiler)
        tiles = [result[i][0] for i in range(n)]
        rests = [result[i][1] for i in range(n)]
        others = [result[i] for i in range(n, result.rank)]
    elif kind == "zipped":
        return result  # a Layout tiler already gives (Tile, Rest)
    else:
        tiles, rests, others = [result[0]], list(result[1]), []
    if kind == "zipped":
        return make_layout(make_layout(*tiles), make_layout(*rests, *others))
    if kind == "tiled":
        tile = make_layout(*tiles) if isinstance(tiler, (tuple, list)) else tiles[0]
        return make_layout(tile, *rests, *others)
    return make_layout(*tiles, *rests, *others)


def zipped_divide(a, tiler):
    """``((TileM,TileN,...), (RestM,RestN,...,L,...))``; mode 0 is
    ``composition(a, tiler)``."""
    return _rearrange(logical_divide(a, tiler), tiler, "zipped")


def tiled_divide(a, tiler):
    """``((TileM,TileN,...), RestM, RestN, ..., L, ...)``."""
    return _rearrange(logical_divide(a, tiler), tiler, "tiled")


def flat_divide(a, tiler):
    """``(TileM, TileN, ..., RestM, RestN, ..., L, ...)``."""
    return _rearrange(logical_divide(a, tiler), tiler, "flat")


def zipped_product(a, tiler):
    """``((M,N,...), (TileM,TileN,...,L,...))`` from a by-mode logical_product."""
    return _rearrange(logical_product(a, tiler), tiler, "zipped")


def tiled_product(a, tiler):
    """``((M,N,...), TileM, TileN, ..., L, ...)`` from a by-mode logical_product."""
    return _rearrange(logical_product(a, tiler), tiler, "tiled")


def _append_modes(layout, rank):
    if layout.rank >= rank:
        return layout
    return make_layout(*layout, *([Layout(1, 0)] * (rank - layout.rank)))


def _rank_product(a, b, raked):
    a, b = _as_layout(a), _as_layout(b, "tiler")
    rank = max(a.rank, b.rank)
    lp = logical_product(_append_modes(a, rank), _append_modes(b, rank))
    block, tiles = lp[0], lp[1]
    if raked:
        modes = [make_layout(tiles[i], block[i]) for i in range(rank)]
    else:
        modes = [make_layout(block[i], tiles[i]) for i in range(rank)]
    return coalesce(make_layout(*modes), (1,) * rank)


def blocked_product(a, b):
    """Tiles the block `a` as arranged by `b`, pairing like modes: mode i is
    ``(A_i, B_i)`` (coalesced by mode), so each block stays contiguous in the
    coordinate space. `a` and `b` are padded with 1:0 modes to equal rank."""
    return _rank_product(a, b, raked=False)


def raked_product(a, b):
    """Like `blocked_product` with mode i ``(B_i, A_i)``: the elements of the
    block are interleaved ("raked", a cyclic distribution) across the tiles."""
    return _rank_product(a, b, raked=True)

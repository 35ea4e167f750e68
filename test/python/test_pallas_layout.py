"""CuTe-style layout algebra: the worked examples of CuTe's layout documentation,
and brute-force checks of the definitions on small random layouts."""

import itertools
import random

import pytest

from ember._src.pallas.layout import (
    Layout,
    blocked_product,
    ceil_div,
    coalesce,
    complement,
    composition,
    crd2idx,
    flat_divide,
    flatten,
    idx2crd,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    prefix_product,
    raked_product,
    right_inverse,
    shape_div,
    shape_mod,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)

L = Layout.parse
POW2 = (1, 2, 4)


def values(layout):
    return [layout(i) for i in range(layout.size())]


def leaves(x):
    if isinstance(x, tuple):
        for e in x:
            yield from leaves(e)
    else:
        yield x


def size_of(x):
    n = 1
    for e in leaves(x):
        n *= e
    return n


def refines(b_shape, r_shape):
    """Every coordinate of B is a coordinate of R: R's shape has B's tuple
    structure, with each int leaf of B replaced by a shape of the same size."""
    if isinstance(b_shape, tuple):
        return (
            isinstance(r_shape, tuple)
            and len(b_shape) == len(r_shape)
            and all(map(refines, b_shape, r_shape))
        )
    return size_of(r_shape) == b_shape


# ---------------------------------------------------------------------------
# Random layouts
# ---------------------------------------------------------------------------


def nest(rng, items):
    """Groups a flat list into a random nested tuple (or a bare item)."""
    if len(items) == 1 and rng.random() < 0.5:
        return items[0]
    out = []
    i = 0
    while i < len(items):
        k = rng.randint(1, len(items) - i)
        if k > 1 and k < len(items) and rng.random() < 0.5:
            out.append(nest(rng, items[i : i + k]))
            i += k
        else:
            out.append(items[i])
            i += 1
    return tuple(out)


def from_modes(rng, modes):
    """A (randomly nested) layout with the given flat (shape, stride) modes."""
    idx = nest(rng, list(range(len(modes))))

    def build(x, k):
        if isinstance(x, tuple):
            return tuple(build(e, k) for e in x)
        return modes[x][k]

    return Layout(build(idx, 0), build(idx, 1))


def random_layout(rng, max_rank=3, shapes=(1, 2, 3, 4), strides=tuple(range(0, 13))):
    n = rng.randint(1, max_rank)
    return from_modes(rng, [(rng.choice(shapes), rng.choice(strides)) for _ in range(n)])


def random_pow2_layout(rng, max_rank=3, zero=True):
    n = rng.randint(1, max_rank)
    strides = [0] if zero else []
    strides += [1, 2, 4, 8, 16]
    return from_modes(rng, [(rng.choice((1, 2, 4, 8)), rng.choice(strides)) for _ in range(n)])


def random_injective(rng, max_rank=3, shapes=(1, 2, 3, 4), gaps=(1, 1, 2, 3)):
    """An injective layout whose sorted modes leave gaps (complementable)."""
    n = rng.randint(1, max_rank)
    modes = []
    current = 1
    for _ in range(n):
        s = rng.choice(shapes)
        d = current * rng.choice(gaps)
        modes.append((s, d))
        current = s * d
    rng.shuffle(modes)
    return from_modes(rng, modes)


# ---------------------------------------------------------------------------
# Layout basics
# ---------------------------------------------------------------------------


def test_default_stride_is_column_major():
    assert Layout((4, 2)) == Layout((4, 2), (1, 4))
    assert Layout((4, (2, 3))).stride == (1, (4, 8))
    assert Layout(8).stride == 1
    assert prefix_product((4, (2, 3))) == (1, (4, 8))
    assert prefix_product((2, 3), init=5) == (5, 10)


def test_str_parse_roundtrip():
    for text in ["(4,(2,3)):(1,(4,8))", "8:1", "(4):(1)", "((2,2),3):((24,2),8)", "1:0"]:
        assert str(L(text)) == text
    assert L("( _4 , 2 ) : ( 2 , _1 )") == Layout((4, 2), (2, 1))
    assert L("(4,2)") == Layout((4, 2))
    assert L("4:-1").stride == -1
    assert repr(L("(4,2):(2,1)")) == "Layout((4, 2), (2, 1))"
    for bad in ["(4,2", "(4,2):(1)", "4:1:2", "(,2)", "x", "4:"]:
        with pytest.raises(ValueError):
            L(bad)


def test_properties():
    layout = L("(4,(2,3)):(1,(4,8))")
    assert layout.rank == 2
    assert layout.depth == 2
    assert Layout(5).rank == 1 and Layout(5).depth == 0
    assert L("(4,2):(1,4)").depth == 1
    assert layout.size() == 24
    assert layout.cosize() == 24
    assert L("(2,3):(5,1)").cosize() == 8
    assert L("(4,2):(0,1)").cosize() == 2
    assert layout[0] == Layout(4, 1)
    assert layout[1] == L("(2,3):(4,8)")
    assert layout[-1] == layout[1]
    assert Layout(6, 2)[0] == Layout(6, 2)
    assert list(layout) == [layout[0], layout[1]]
    assert len(layout) == 2
    with pytest.raises(IndexError):
        Layout(6, 2)[1]


def test_eq_hash_immutable():
    a, b = L("(4,2):(1,4)"), Layout((4, 2))
    assert a == b and hash(a) == hash(b)
    assert a != L("(4,2):(2,1)")
    assert a != L("8:1")  # equal as functions, different layouts
    assert len({a, b, L("8:1")}) == 2
    with pytest.raises(AttributeError):
        a.shape = (8,)
    assert Layout([4, [2, 3]], [1, [4, 8]]) == L("(4,(2,3)):(1,(4,8))")


def test_invalid_layouts():
    with pytest.raises(ValueError, match="congruent"):
        Layout((4, 2), (1,))
    with pytest.raises(ValueError, match="congruent"):
        Layout((4, 2), 1)
    with pytest.raises(ValueError, match="positive"):
        Layout((4, 0))
    with pytest.raises(TypeError):
        Layout((4, 2.0))


def test_call():
    layout = L("(4,(2,3)):(1,(4,8))")
    assert layout(5) == 4 + 1
    assert layout((1, (1, 2))) == 1 + 4 + 16
    assert layout(1, (1, 2)) == 21
    assert layout(1, 5) == layout((1, (1, 2)))  # int coordinate into a tuple mode
    assert values(L("(2,3):(3,1)")) == [0, 3, 1, 4, 2, 5]
    # Past size(), a 1-D index spills into the (unbounded) last mode.
    assert L("(2,3):(1,10)")(7) == 1 + 30
    with pytest.raises(ValueError):
        layout((1, 2, 3))


def test_crd2idx_idx2crd():
    shape = (4, (2, 3))
    assert idx2crd(13, shape) == (1, (1, 1))
    assert crd2idx((1, (1, 1)), shape) == 13
    assert crd2idx((1, (1, 1)), shape, (3, (1, 12))) == 3 + 1 + 12
    assert crd2idx(13, shape, (3, (1, 12))) == 3 + 1 + 12
    for i in range(24):
        c = idx2crd(i, shape)
        assert crd2idx(c, shape) == i
        assert L("(4,(2,3)):(5,(1,30))")(c) == L("(4,(2,3)):(5,(1,30))")(i)
    assert idx2crd(30, (4, 6)) == (2, 7)  # the last mode is unbounded


def test_flatten():
    assert flatten((4, (2, (3,)))) == (4, 2, 3)
    assert flatten(5) == 5
    assert flatten(L("(4,(2,3)):(1,(4,8))")) == L("(4,2,3):(1,4,8)")


def test_make_layout():
    assert make_layout(Layout(4, 1), L("(2,3):(4,8)")) == L("(4,(2,3)):(1,(4,8))")
    assert make_layout(Layout(4, 1)) == L("(4):(1)")
    with pytest.raises(TypeError):
        make_layout(4)


# ---------------------------------------------------------------------------
# Worked examples from CuTe's documentation
# ---------------------------------------------------------------------------


def test_shape_div_mod_examples():
    assert shape_div((6, 2), 2) == (3, 2)
    assert shape_div((6, 2), 3) == (2, 2)
    assert shape_div((6, 2), 6) == (1, 2)
    assert shape_div((6, 2), 12) == (1, 1)
    assert shape_div((3, 6, 2, 8), 6) == (1, 3, 2, 8)
    assert shape_div((3, 6, 2, 8), 9) == (1, 2, 2, 8)
    assert shape_div((42, 16, 3), 2) == (21, 16, 3)
    assert shape_div((42, 16, 3), 6) == (7, 16, 3)
    with pytest.raises(ValueError, match="divisibility"):
        shape_div((6, 2), 4)
    assert shape_mod((6, 2), 2) == (2, 1)
    assert shape_mod((6, 2), 3) == (3, 1)
    assert shape_mod((6, 2), 6) == (6, 1)
    assert shape_mod((6, 2), 12) == (6, 2)
    assert shape_mod((3, 6, 2, 8), 6) == (3, 2, 1, 1)
    assert shape_mod((3, 6, 2, 8), 9) == (3, 3, 1, 1)
    assert shape_mod((1, 2, 2, 8), 2) == (1, 2, 1, 1)
    assert shape_mod((1, 2, 2, 8), 16) == (1, 2, 2, 4)
    with pytest.raises(ValueError, match="divisibility"):
        shape_mod((4, 3), 6)
    assert ceil_div(7, 2) == 4 and ceil_div((7, 8), (2, 4)) == (4, 2)


def test_coalesce_examples():
    a = L("(2,(1,6)):(1,(6,2))")
    assert coalesce(a) == L("12:1")
    assert coalesce(a, (1, 1)) == L("(2,6):(1,2)")
    assert coalesce(a, (1, 1)) == make_layout(coalesce(a[0]), coalesce(a[1]))
    assert coalesce(L("(2,4):(1,2)")) == L("8:1")
    assert coalesce(L("(1,1):(3,5)")) == L("1:0")
    assert coalesce(L("(4,3):(0,0)")) == L("12:0")
    assert coalesce(L("(2,4):(4,1)")) == L("(2,4):(4,1)")


def test_composition_example():
    a, b = L("(6,2):(8,2)"), L("(4,3):(3,1)")
    r = composition(a, b)
    assert r == L("((2,2),3):((24,2),8)")
    assert values(r) == [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42]


def test_composition_reshape_examples():
    assert composition(L("20:2"), L("(5,4):(4,1)")) == L("(5,4):(8,2)")
    assert composition(L("(10,2):(16,4)"), L("(5,4):(1,5)")) == L("(5,(2,2)):(16,(80,4))")


def test_composition_by_mode_examples():
    a = L("(12,(4,8)):(59,(13,1))")
    r = composition(a, (Layout(3, 4), Layout(8, 2)))
    assert r == L("(3,(2,4)):(236,(26,1))")
    assert r == make_layout(composition(a[0], Layout(3, 4)), composition(a[1], Layout(8, 2)))
    # A shape is a tiler of stride-1 layouts.
    assert composition(a, (3, 8)) == L("(3,(4,2)):(59,(13,1))")
    assert composition(a, (None, 8)) == L("(12,(4,2)):(59,(13,1))")
    assert composition(a, 6) == L("6:59")  # a Layout or int composes 1-D
    with pytest.raises(ValueError, match="more modes"):
        composition(a, (3, 8, 2))


def test_composition_divisibility_errors():
    with pytest.raises(ValueError, match="stride divisibility"):
        composition(L("(6,2):(1,7)"), L("2:4"))
    with pytest.raises(ValueError, match="shape divisibility"):
        composition(L("(4,3):(1,5)"), L("6:1"))
    # A prefix that fits in the first mode is fine without divisibility.
    assert composition(L("(4,3):(1,5)"), L("3:1")) == L("3:1")


def test_complement_examples():
    assert complement(L("4:1"), 24) == L("6:4")
    assert complement(L("6:4"), 24) == L("4:1")
    assert complement(L("(4,6):(1,4)"), 24) == L("1:0")
    assert complement(L("4:2"), 24) == L("(2,3):(1,8)")
    assert complement(L("(2,4):(1,6)"), 24) == L("3:2")
    assert complement(L("(2,2):(1,6)"), 24) == L("(3,2):(2,12)")
    # The cotarget may be a shape; only its size matters.
    assert complement(L("4:2"), (4, 6)) == L("(2,3):(1,8)")
    # Default cotarget: the cosize of the layout.
    assert complement(L("4:2")) == L("2:1")
    # Stride-0 modes do not change the image.
    assert complement(L("(4,3):(1,0)"), 8) == L("2:4")


def test_complement_errors():
    with pytest.raises(ValueError, match="not injective"):
        complement(L("(2,2):(1,1)"), 8)
    with pytest.raises(ValueError, match="not injective"):
        complement(L("(4,2):(1,2)"), 16)
    with pytest.raises(ValueError, match="no layout complement"):
        complement(L("(2,3):(3,2)"), 12)
    with pytest.raises(ValueError, match="negative"):
        complement(L("4:-1"), 8)


def test_logical_divide_1d_example():
    a = L("(4,2,3):(2,1,8)")
    b = L("4:2")
    assert complement(b, a.size()) == L("(2,3):(1,8)")
    assert make_layout(b, complement(b, a.size())) == L("(4,(2,3)):(2,(1,8))")
    assert logical_divide(a, b) == L("((2,2),(2,3)):((4,1),(2,8))")


def test_logical_divide_2d_example():
    a = L("(9,(4,8)):(59,(13,1))")
    tiler = (L("3:3"), L("(2,4):(1,8)"))
    ld = logical_divide(a, tiler)
    assert ld == make_layout(logical_divide(a[0], tiler[0]), logical_divide(a[1], tiler[1]))
    assert ld == L("((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))")
    assert [size_of(s) for s in ld.shape[0]] == [3, 3]
    assert [size_of(s) for s in ld.shape[1]] == [8, 4]
    # Each mode of the divide is a permutation of that mode of A.
    for m in range(2):
        assert sorted(values(ld[m])) == sorted(values(a[m]))
    zd = zipped_divide(a, tiler)
    assert [size_of(s) for s in zd.shape[0]] == [3, 8]
    assert [size_of(s) for s in zd.shape[1]] == [3, 4]
    assert zd[0] == composition(a, tiler)
    assert zd == L("((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))")
    assert tiled_divide(a, tiler) == L("((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))")
    assert flat_divide(a, tiler) == L("(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))")
    # The offset of tile (1, 2), and of element (i, j) within it.
    for i, j in itertools.product(range(3), range(8)):
        # Rows: 3:3 with rest 3:1; columns: (2,4):(1,8) with rest 4:2.
        assert zd((i, j), (1, 2)) == a(3 * i + 1, (j % 2) + 8 * (j // 2) + 2 * 2)


def test_divide_with_layout_tiler_shapes():
    a = L("(4,2,3):(2,1,8)")
    assert zipped_divide(a, L("4:2")) == logical_divide(a, L("4:2"))
    assert tiled_divide(a, L("4:2")) == L("((2,2),2,3):((4,1),2,8)")
    # An int tiler is n:1.
    assert logical_divide(Layout(24), 4) == L("(4,6):(1,4)")
    assert zipped_divide(Layout((8, 6)), (4, 3)) == L("((4,3),(2,2)):((1,8),(4,24))")


def test_logical_product_1d_example():
    a = L("(2,2):(4,1)")
    assert complement(a, 24) == L("(2,3):(2,8)")
    assert logical_product(a, L("6:1")) == L("((2,2),(2,3)):((4,1),(2,8))")
    # B = (4,2):(2,1): 8 tiles in a different order.
    r = logical_product(a, L("(4,2):(2,1)"))
    assert r == L("((2,2),(4,2)):((4,1),(8,2))")
    assert sorted(values(r)) == list(range(32))


def test_logical_product_2d_and_blocked_raked_examples():
    a = L("(2,5):(5,1)")  # a 2x5 row-major block
    b = L("(3,4):(1,3)")  # tiled across a 3x4 column-major arrangement
    by_mode = logical_product(a, (L("3:5"), L("4:6")))
    assert by_mode == L("((2,3),(5,4)):((5,10),(1,30))")
    blocked = blocked_product(a, b)
    assert blocked == L("(6,(5,4)):(5,(1,30))")  # mode 0 coalesced
    assert values(blocked) == values(by_mode)
    raked = raked_product(a, b)
    assert raked == L("((3,2),(4,5)):((10,5),(30,1))")
    for m, n in itertools.product(range(6), range(20)):
        # Blocked: block (m // 2, n // 5) holds element (m % 2, n % 5).
        assert blocked(m, n) == 10 * (m // 2) + 30 * (n // 5) + 5 * (m % 2) + n % 5
        # Raked: tile (m % 3, n % 4) holds element (m // 3, n // 4).
        assert raked(m, n) == 10 * (m % 3) + 30 * (n % 4) + 5 * (m // 3) + n // 4


def test_zipped_tiled_product():
    a = L("(2,5):(5,1)")
    tiler = (L("3:5"), L("4:6"))
    assert zipped_product(a, tiler) == L("((2,5),(3,4)):((5,1),(10,30))")
    assert tiled_product(a, tiler) == L("((2,5),3,4):((5,1),10,30)")


def test_products_of_different_ranks():
    r = blocked_product(L("(2,2):(1,2)"), L("3:1"))
    assert r.rank == 2
    assert sorted(values(r)) == list(range(12))
    r = raked_product(L("4:1"), L("(2,3):(1,2)"))
    assert r.rank == 2
    assert sorted(values(r)) == list(range(24))


def test_inverses_examples():
    assert right_inverse(L("(4,2):(2,1)")) == L("(2,4):(4,1)")
    assert right_inverse(L("(4,2):(1,4)")) == L("8:1")
    assert right_inverse(L("4:2")) == L("1:0")
    assert right_inverse(L("(2,4):(1,3)")) == L("2:1")
    assert left_inverse(L("4:2")) == L("(2,4):(4,1)")
    assert left_inverse(L("(4,2):(2,1)")) == L("(2,4):(4,1)")
    with pytest.raises(ValueError, match="not injective"):
        left_inverse(L("(4,2):(1,0)"))
    with pytest.raises(ValueError):
        left_inverse(L("(2,2):(1,1)"))


# ---------------------------------------------------------------------------
# Properties checked by brute force
# ---------------------------------------------------------------------------


def check_composition(a, b):
    r = composition(a, b)
    assert refines(b.shape, r.shape), (a, b, r)
    for i in range(b.size()):
        assert r(i) == a(b(i)), (a, b, r, i)
    return r


def test_composition_property_random():
    rng = random.Random(0)
    ok = 0
    for _ in range(3000):
        a = random_layout(rng)
        b = random_layout(rng, strides=tuple(range(0, 7)))
        try:
            check_composition(a, b)
        except ValueError:
            continue
        ok += 1
    assert ok > 600


def test_composition_property_powers_of_two():
    # With power-of-two shapes and strides the divisibility conditions hold;
    # with an injective B no two modes of B interact.
    rng = random.Random(1)
    for _ in range(1500):
        b = random_injective(rng, shapes=POW2, gaps=POW2)
        if rng.random() < 0.3:
            b = make_layout(b, Layout(rng.choice(POW2), 0))  # broadcast mode
        check_composition(random_pow2_layout(rng), b)
        check_composition(random_pow2_layout(rng), random_pow2_layout(rng, 1))


def test_composition_overlapping_modes():
    # B's modes overlap: adding their offsets carries across A's modes.
    with pytest.raises(ValueError, match="carries across"):
        composition(L("(8,4):(8,16)"), L("(4,8):(2,2)"))
    with pytest.raises(ValueError, match="carries across"):
        composition(L("(2,2):(1,10)"), L("(2,2):(1,1)"))
    # They may overlap where A is linear: no carry across a mode boundary.
    check_composition(L("(4,2):(1,100)"), L("(2,2):(1,1)"))
    check_composition(L("12:3"), L("(5,4):(2,3)"))


def test_composition_by_mode_property():
    rng = random.Random(2)
    for _ in range(300):
        a = make_layout(random_pow2_layout(rng, 2), random_pow2_layout(rng, 2))
        t0 = random_injective(rng, 2, shapes=POW2, gaps=POW2)
        t1 = random_injective(rng, 2, shapes=POW2, gaps=POW2)
        r = composition(a, (t0, t1))
        assert r[0] == composition(a[0], t0)
        assert r[1] == composition(a[1], t1)
        for i, j in itertools.product(range(t0.size()), range(t1.size())):
            assert r(i, j) == a[0](t0(i)) + a[1](t1(j))


def test_coalesce_property_random():
    rng = random.Random(3)
    for _ in range(2000):
        a = random_layout(rng, max_rank=5)
        c = coalesce(a)
        assert c.size() == a.size()
        assert c.depth <= 1
        assert values(c) == values(a), (a, c)
        assert coalesce(c) == c
        profile = (1,) * a.rank
        cp = coalesce(a, profile)
        assert cp.rank == a.rank
        assert values(cp) == values(a)
        for m in range(a.rank):
            assert values(cp[m]) == values(a[m])


def check_complement(a, cotarget):
    c = complement(a, cotarget)
    vals = values(c)
    assert all(x < y for x, y in zip(vals, vals[1:])), (a, c)  # ordered
    assert set(vals[1:]).isdisjoint(values(a)), (a, c)  # disjoint
    n = a.size() * c.size()
    joint = make_layout(a, c)
    assert sorted(values(joint)) == list(range(n)), (a, c)  # bijection onto [0, n)
    assert n >= cotarget
    assert joint.cosize() == n
    return c


def test_complement_property_injective():
    rng = random.Random(4)
    for _ in range(2000):
        a = random_injective(rng)
        cotarget = rng.randint(1, 2 * a.cosize() + 3)
        check_complement(a, cotarget)
        # A cotarget that the layout tiles exactly is covered exactly.
        c = check_complement(a, a.cosize() * 3) if a.size() == a.cosize() else None
        if c is not None:
            assert a.size() * c.size() == a.cosize() * 3


def test_complement_property_random():
    rng = random.Random(5)
    ok = 0
    for _ in range(3000):
        a = random_layout(rng)
        image = values(a)
        support = [(s, d) for s, d in zip(leaves(a.shape), leaves(a.stride)) if d != 0]
        injective_on_support = len(set(image)) == size_of(tuple(s for s, _ in support) or 1)
        cotarget = rng.randint(1, 40)
        try:
            c = complement(a, cotarget)
        except ValueError:
            continue
        ok += 1
        assert injective_on_support, (a, c)
        vals = values(c)
        assert all(x < y for x, y in zip(vals, vals[1:]))
        assert set(vals[1:]).isdisjoint(image)
        joint = make_layout(coalesce(a), c)
        n = size_of(tuple(s for s, _ in support) or 1) * c.size()
        assert set(values(joint)) == set(range(n))
        assert n >= cotarget
    assert ok > 500


def test_logical_divide_property():
    rng = random.Random(6)
    ok = 0
    for _ in range(2000):
        a = random_layout(rng, shapes=(1, 2, 4), strides=(0, 1, 2, 3, 4, 8, 16))
        b = random_injective(rng, max_rank=2)
        try:
            ld = logical_divide(a, b)
        except ValueError:
            continue
        ok += 1
        full = make_layout(b, complement(b, a.size()))
        assert ld == composition(a, full)
        assert ld.rank == 2
        assert refines(b.shape, ld.shape[0])
        assert ld[0] == composition(a, b)
        for i in range(full.size()):
            assert ld(i) == a(full(i))
        assert ld.size() >= a.size()
    assert ok > 500


def test_logical_product_property():
    rng = random.Random(7)
    ok = 0
    for k in range(3000):
        shapes = (1, 2, 3, 4) if k % 2 else POW2
        a = random_injective(rng, max_rank=2, shapes=shapes, gaps=shapes)
        b = random_injective(rng, max_rank=2, shapes=shapes, gaps=shapes)
        try:
            lp = logical_product(a, b)
        except ValueError:
            assert shapes != POW2  # powers of two are always admissible
            continue
        ok += 1
        assert lp[0] == a
        assert refines(b.shape, lp.shape[1])
        cplt = complement(a, a.size() * b.cosize())
        for j in range(b.size()):
            assert lp[1](j) == cplt(b(j))
        vals = values(lp)
        assert len(set(vals)) == len(vals)  # injective A and B: injective product
    assert ok > 2000


def test_blocked_raked_property():
    rng = random.Random(8)
    ok = 0
    for _ in range(500):
        s0, s1 = rng.choice((1, 2, 4)), rng.choice((1, 2, 4))
        g0, g1 = rng.choice((1, 2, 4)), rng.choice((1, 2, 4))
        a = Layout((s0, s1), (g0, s0 * g0 * g1))  # injective, gaps of width g
        if rng.random() < 0.5:
            a = Layout((s1, s0), (s0 * g0 * g1, g0))
        n0, n1 = rng.randint(1, 4), rng.randint(1, 4)
        b = Layout((n0, n1)) if rng.random() < 0.5 else Layout((n0, n1), (n1, 1))
        try:
            lp = logical_product(a, b)
        except ValueError:  # e.g. a 3 across the power-of-two complement of a
            assert 3 in (n0, n1)
            continue
        ok += 1
        blocked, raked = blocked_product(a, b), raked_product(a, b)
        (a0, a1), (b0, b1) = (a[0].size(), a[1].size()), (b[0].size(), b[1].size())
        for i0, i1, j0, j1 in itertools.product(range(a0), range(a1), range(b0), range(b1)):
            want = lp((i0, i1), (j0, j1))
            assert blocked(i0 + a0 * j0, i1 + a1 * j1) == want
            assert raked(j0 + b0 * i0, j1 + b1 * i1) == want
    assert ok > 300


def test_right_inverse_property():
    rng = random.Random(9)
    for _ in range(2000):
        a = random_layout(rng, max_rank=4, strides=(0, 1, 2, 3, 4, 6, 8))
        r = right_inverse(a)
        for i in range(r.size()):
            assert a(r(i)) == i, (a, r, i)
    for _ in range(500):
        # A permuted compact layout is a bijection: its right inverse is total.
        shapes = [rng.randint(1, 4) for _ in range(rng.randint(1, 4))]
        order = list(range(len(shapes)))
        rng.shuffle(order)
        strides = [0] * len(shapes)
        current = 1
        for k in order:
            strides[k] = current
            current *= shapes[k]
        a = from_modes(rng, list(zip(shapes, strides)))
        r = right_inverse(a)
        assert r.size() == a.size()
        assert [a(r(i)) for i in range(a.size())] == list(range(a.size()))
        assert [r(a(i)) for i in range(a.size())] == list(range(a.size()))


def test_left_inverse_property():
    rng = random.Random(10)
    for _ in range(1500):
        a = random_injective(rng)
        r = left_inverse(a)
        for i in range(a.size()):
            assert r(a(i)) == i, (a, r, i)

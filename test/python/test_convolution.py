"""lax.conv_general_dilated & friends vs a direct NumPy reference."""

import itertools

import numpy as np
import pytest

import ember as jax
import ember.lax as lax
import ember.numpy as jnp

# --------------------------------------------------------------------------
# NumPy reference (written straight from the XLA ConvGeneralDilated definition)
# --------------------------------------------------------------------------


def _perms(dn, ndim):
    if dn is None:
        iota = tuple(range(ndim))
        return iota, iota, iota
    lhs_s, rhs_s, out_s = dn
    rhs_sp = [c for c in rhs_s if c not in "OI"]
    lp = (lhs_s.index("N"), lhs_s.index("C")) + tuple(lhs_s.index(c) for c in rhs_sp)
    rp = (rhs_s.index("O"), rhs_s.index("I")) + tuple(rhs_s.index(c) for c in rhs_sp)
    op = (out_s.index("N"), out_s.index("C")) + tuple(out_s.index(c) for c in rhs_sp)
    return lp, rp, op


def _ref_pads(in_sp, eff_k, strides, padding):
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    if padding == "VALID":
        return [(0, 0)] * len(in_sp)
    pads = []
    for n, k, s in zip(in_sp, eff_k, strides):
        out = -(-n // s)
        tot = max((out - 1) * s + k - n, 0)
        lo = tot // 2 if padding == "SAME" else tot - tot // 2
        pads.append((lo, tot - lo))
    return pads


def ref_conv(x, w, strides, padding, lhs_dil=None, rhs_dil=None, dn=None, fgc=1, bgc=1):
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    nd = x.ndim - 2
    lp, rp, op = _perms(dn, x.ndim)
    x = x.transpose(lp)      # N C sp..
    w = w.transpose(rp)      # O I sp..
    lhs_dil = lhs_dil or (1,) * nd
    rhs_dil = rhs_dil or (1,) * nd
    eff_k = [(k - 1) * r + 1 for k, r in zip(w.shape[2:], rhs_dil)]
    pads = _ref_pads(x.shape[2:], eff_k, strides, padding)
    # lhs dilation
    dshape = x.shape[:2] + tuple((n - 1) * d + 1 for n, d in zip(x.shape[2:], lhs_dil))
    xd = np.zeros(dshape)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dil)] = x
    # padding, possibly negative
    for i, (lo, hi) in enumerate(pads):
        ax = i + 2
        xd = np.pad(xd, [(0, 0)] * ax + [(max(lo, 0), max(hi, 0))]
                    + [(0, 0)] * (xd.ndim - ax - 1))
        n = xd.shape[ax]
        xd = np.take(xd, np.arange(max(-lo, 0), n - max(-hi, 0)), axis=ax)
    N, C = xd.shape[:2]
    O, I = w.shape[:2]  # noqa: E741 (the dimension letters of the specs)
    out_sp = [max(0, (p - k) // s + 1) if p >= k else 0
              for p, k, s in zip(xd.shape[2:], eff_k, strides)]
    Nb, Ob, Og = N // bgc, O // bgc, O // fgc
    out = np.zeros((Nb, O) + tuple(out_sp))
    for pos in itertools.product(*(range(n) for n in out_sp)):
        win = xd[(slice(None), slice(None)) + tuple(
            slice(p * s, p * s + k, r) for p, s, k, r in zip(pos, strides, eff_k, rhs_dil))]
        for o in range(O):
            g, b = o // Og, o // Ob
            xs = win[b * Nb:(b + 1) * Nb, g * I:(g + 1) * I]
            out[(slice(None), o) + pos] = np.tensordot(
                xs, w[o], axes=(list(range(1, xs.ndim)), list(range(w.ndim - 1))))
    return out.transpose(np.argsort(op))


def _rand(r, shape, dtype=np.float32):
    return r.standard_normal(shape).astype(dtype)


def _check(got, want, tol=1e-4):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# --------------------------------------------------------------------------
# Forward
# --------------------------------------------------------------------------

# (lhs shape NC..., rhs shape OI..., strides, padding, lhs_dil, rhs_dil, fgc, bgc)
FWD = [
    # 1-D
    ((2, 3, 10), (4, 3, 3), (1,), "VALID", None, None, 1, 1),
    ((2, 3, 10), (4, 3, 3), (2,), "SAME", None, None, 1, 1),
    ((2, 3, 11), (4, 3, 4), (3,), "SAME_LOWER", None, None, 1, 1),
    ((1, 2, 7), (2, 2, 3), (1,), [(2, 1)], (2,), (2,), 1, 1),
    ((1, 4, 9), (6, 2, 3), (1,), [(-1, 2)], None, None, 2, 1),
    # 2-D
    ((2, 3, 7, 8), (5, 3, 3, 2), (1, 1), "VALID", None, None, 1, 1),
    ((2, 3, 7, 8), (5, 3, 3, 2), (2, 3), "SAME", None, None, 1, 1),
    ((1, 2, 9, 9), (3, 2, 3, 3), (2, 2), "SAME", None, (2, 2), 1, 1),
    ((1, 2, 6, 5), (3, 2, 2, 3), (1, 2), [(2, 1), (0, 3)], None, None, 1, 1),
    ((1, 2, 6, 5), (3, 2, 3, 3), (1, 1), [(-1, -2), (1, -1)], None, None, 1, 1),
    ((1, 2, 4, 5), (3, 2, 3, 2), (1, 1), [(1, 1), (2, 0)], (2, 3), None, 1, 1),
    ((1, 2, 4, 5), (3, 2, 3, 2), (2, 1), [(0, -1), (1, 2)], (3, 2), (2, 1), 1, 1),
    ((2, 6, 6, 6), (6, 1, 3, 3), (1, 1), "SAME", None, None, 6, 1),    # depthwise
    ((2, 6, 6, 6), (12, 1, 3, 3), (2, 1), "VALID", None, None, 6, 1),  # multiplier 2
    ((2, 6, 5, 5), (4, 3, 2, 2), (1, 1), "SAME", None, None, 2, 1),    # grouped
    ((4, 3, 5, 5), (6, 3, 3, 3), (1, 1), "VALID", None, None, 1, 2),   # batch groups
    ((1, 1, 3, 3), (2, 1, 5, 5), (1, 1), "VALID", None, None, 1, 1),   # empty output
    ((3, 2, 1, 1), (4, 2, 1, 1), (1, 1), "SAME", None, None, 1, 1),    # 1x1
    # 3-D
    ((1, 2, 5, 6, 4), (3, 2, 2, 3, 2), (1, 2, 1), "SAME", None, None, 1, 1),
    ((2, 2, 5, 5, 5), (2, 2, 3, 2, 2), (2, 1, 2), [(1, 0), (0, 1), (-1, 1)], (1, 2, 1),
     (2, 1, 1), 1, 1),
    ((1, 4, 4, 4, 4), (4, 2, 2, 2, 2), (1, 1, 1), "VALID", None, (1, 2, 1), 2, 1),
]


@pytest.mark.parametrize("cfg", FWD, ids=[str(i) for i in range(len(FWD))])
def test_conv_general_dilated_nchw(cfg):
    ls, rs, st, pad, ld, rd, fgc, bgc = cfg
    r = np.random.RandomState(hash(str(cfg)) % 2**31)
    x, w = _rand(r, ls), _rand(r, rs)
    got = lax.conv_general_dilated(x, w, st, pad, ld, rd, feature_group_count=fgc,
                                   batch_group_count=bgc)
    assert got.dtype == np.float32
    _check(got, ref_conv(x, w, st, pad, ld, rd, None, fgc, bgc))


LAYOUTS = [
    ("NHWC", "HWIO", "NHWC"),
    ("NCHW", "OIHW", "NHWC"),
    ("NHWC", "OIHW", "NCHW"),
    ("CHWN", "IOWH", "WNCH"),   # rhs spatial order W,H -> strides apply to W first
]


@pytest.mark.parametrize("dn", LAYOUTS, ids=["-".join(d) for d in LAYOUTS])
@pytest.mark.parametrize("fgc", [1, 2])
def test_conv_layouts(dn, fgc):
    r = np.random.RandomState(3)
    sizes = dict(N=2, C=4, H=7, W=6)
    ksizes = dict(O=6, I=4 // fgc, H=3, W=2)
    x = _rand(r, [sizes[c] for c in dn[0]])
    w = _rand(r, [ksizes[c] for c in dn[1]])
    st, pad, rd = (2, 1), [(1, 0), (2, 1)], (1, 2)
    got = lax.conv_general_dilated(x, w, st, pad, rhs_dilation=rd, dimension_numbers=dn,
                                   feature_group_count=fgc)
    _check(got, ref_conv(x, w, st, pad, None, rd, dn, fgc))
    got = lax.conv_general_dilated(x, w, st, "SAME", dimension_numbers=dn,
                                   feature_group_count=fgc)
    _check(got, ref_conv(x, w, st, "SAME", None, None, dn, fgc))


def test_conv_dimension_numbers():
    dn = lax.conv_dimension_numbers((1, 5, 6, 3), (2, 2, 3, 4), ("NHWC", "HWIO", "NHWC"))
    assert isinstance(dn, lax.ConvDimensionNumbers)
    assert tuple(dn) == ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    dn2 = lax.conv_dimension_numbers((1, 5, 6, 3), (2, 2, 3, 4), None)
    assert tuple(dn2) == ((0, 1, 2, 3),) * 3
    assert lax.conv_dimension_numbers((1,) * 4, (1,) * 4, dn) is dn
    dn3 = lax.conv_dimension_numbers((1,) * 4, (1,) * 4, ("NCHW", "OIWH", "NHWC"))
    assert tuple(dn3) == ((0, 1, 3, 2), (0, 1, 2, 3), (0, 3, 2, 1))
    with pytest.raises(TypeError):
        lax.conv_dimension_numbers((1,) * 4, (1,) * 4, ("NHWC", "HWIO"))
    with pytest.raises(TypeError):
        lax.conv_dimension_numbers((1,) * 4, (1,) * 4, ("NHWX", "HWIO", "NHWC"))


def test_conv_with_explicit_dimension_numbers_object():
    r = np.random.RandomState(4)
    x, w = _rand(r, (1, 5, 6, 3)), _rand(r, (2, 2, 3, 4))
    dns = ("NHWC", "HWIO", "NHWC")
    dn = lax.conv_dimension_numbers(x.shape, w.shape, dns)
    got = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)
    _check(got, ref_conv(x, w, (1, 1), "SAME", dn=dns))


def test_conv_and_general_padding_wrappers():
    r = np.random.RandomState(5)
    x, w = _rand(r, (2, 3, 8, 7)), _rand(r, (4, 3, 3, 3))
    _check(lax.conv(x, w, (1, 2), "SAME"), ref_conv(x, w, (1, 2), "SAME"))
    _check(lax.conv(x, w, (2, 2), "VALID"), ref_conv(x, w, (2, 2), "VALID"))
    _check(lax.conv_with_general_padding(x, w, (1, 1), [(1, 2), (0, -1)], (2, 1), (1, 2)),
           ref_conv(x, w, (1, 1), [(1, 2), (0, -1)], (2, 1), (1, 2)))
    _check(lax.conv_with_general_padding(x, w, (2, 1), "SAME", None, (2, 2)),
           ref_conv(x, w, (2, 1), "SAME", None, (2, 2)))


def test_conv_jit_and_int():
    r = np.random.RandomState(6)
    x, w = _rand(r, (1, 2, 6, 6)), _rand(r, (3, 2, 3, 3))
    f = jax.jit(lambda x, w: lax.conv_general_dilated(x, w, (2, 2), "SAME", rhs_dilation=(1, 2)))
    _check(f(x, w), ref_conv(x, w, (2, 2), "SAME", None, (1, 2)))
    xi = r.randint(-4, 5, (1, 2, 5, 5)).astype(np.int32)
    wi = r.randint(-4, 5, (3, 2, 2, 2)).astype(np.int32)
    got = lax.conv_general_dilated(xi, wi, (1, 1), "VALID")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), ref_conv(xi, wi, (1, 1), "VALID"))


def test_conv_errors():
    x, w = np.ones((1, 4, 5, 5), np.float32), np.ones((6, 2, 3, 3), np.float32)
    with pytest.raises(ValueError):   # C/G != I
        lax.conv_general_dilated(x, w, (1, 1), "SAME")
    with pytest.raises(ValueError):   # O not a multiple of G
        lax.conv_general_dilated(x, np.ones((3, 1, 3, 3), np.float32), (1, 1), "SAME",
                                 feature_group_count=4)
    with pytest.raises(ValueError):   # string padding + lhs dilation
        lax.conv_general_dilated(x, w, (1, 1), "SAME", lhs_dilation=(2, 2),
                                 feature_group_count=2)
    with pytest.raises(ValueError):   # too-negative padding
        lax.conv_general_dilated(x, w, (1, 1), [(-3, -3), (0, 0)], feature_group_count=2)
    with pytest.raises(ValueError):   # both group counts
        lax.conv_general_dilated(np.ones((2, 4, 5, 5), np.float32), w, (1, 1), "SAME",
                                 feature_group_count=2, batch_group_count=2)
    with pytest.raises(TypeError):    # mixed dtypes
        lax.conv_general_dilated(x, np.ones((6, 2, 3, 3), np.int32), (1, 1), "SAME",
                                 feature_group_count=2)


# --------------------------------------------------------------------------
# conv_transpose
# --------------------------------------------------------------------------


def _doc_transpose_pads(k, s, padding):
    # jax.lax.conv_transpose's documented padding for 'SAME' / 'VALID'
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
    else:
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    return pad_a, pad_len - pad_a


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("strides,rd,ks", [((2, 2), None, (3, 3)), ((1, 3), None, (2, 4)),
                                           ((2, 1), (2, 1), (3, 2)), ((3, 3), None, (2, 2))])
def test_conv_transpose_definition(padding, strides, rd, ks):
    r = np.random.RandomState(7)
    x, w = _rand(r, (2, 5, 4, 3)), _rand(r, ks + (3, 2))   # NHWC, HWIO
    dn = ("NHWC", "HWIO", "NHWC")
    got = lax.conv_transpose(x, w, strides, padding, rhs_dilation=rd)
    rdil = rd or (1, 1)
    pads = [_doc_transpose_pads((k - 1) * d + 1, s, padding)
            for k, s, d in zip(ks, strides, rdil)]
    want = ref_conv(x, w, (1, 1), pads, strides, rdil, dn)
    _check(got, want)
    if padding == "SAME":
        assert got.shape[1:3] == (5 * strides[0], 4 * strides[1])
    # explicit pairs are the transposed conv's own padding
    got2 = lax.conv_transpose(x, w, strides, pads, rhs_dilation=rd)
    _check(got2, want)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv_transpose_kernel_is_conv_gradient(padding):
    # With transpose_kernel=True, conv_transpose is the lhs-VJP of the forward conv.
    r = np.random.RandomState(8)
    strides = (2, 2)
    w = _rand(r, (3, 3, 4, 5))                                 # HWIO of the forward conv
    dn = ("NHWC", "HWIO", "NHWC")
    in_sp = (8, 8) if padding == "SAME" else (9, 9)
    xf = _rand(r, (2,) + in_sp + (4,))
    def fwd(x):
        return lax.conv_general_dilated(x, w, strides, padding, dimension_numbers=dn)
    y, vjp = jax.vjp(fwd, xf)
    g = _rand(r, y.shape)
    (want,) = vjp(g)
    got = lax.conv_transpose(g, w, strides, padding, dimension_numbers=dn,
                             transpose_kernel=True)
    _check(got, np.asarray(want))


def test_conv_transpose_1d_3d_defaults_and_consistent_padding():
    r = np.random.RandomState(9)
    x, w = _rand(r, (2, 5, 3)), _rand(r, (3, 3, 4))           # NHC, HIO
    got = lax.conv_transpose(x, w, (2,), "SAME")
    assert got.shape == (2, 10, 4)
    _check(got, ref_conv(x, w, (1,), [_doc_transpose_pads(3, 2, "SAME")], (2,), None,
                         ("NHC", "HIO", "NHC")))
    x3, w3 = _rand(r, (1, 3, 2, 3, 2)), _rand(r, (2, 2, 3, 2, 3))   # NHWDC, HWDIO
    got = lax.conv_transpose(x3, w3, (2, 1, 2), "VALID")
    pads = [_doc_transpose_pads(k, s, "VALID") for k, s in zip((2, 2, 3), (2, 1, 2))]
    _check(got, ref_conv(x3, w3, (1, 1, 1), pads, (2, 1, 2), None,
                         ("NHWDC", "HWDIO", "NHWDC")))
    # use_consistent_padding: explicit pairs are the forward conv's padding
    got = lax.conv_transpose(x, w, (2,), [(1, 0)], use_consistent_padding=True)
    _check(got, ref_conv(x, w, (1,), [(3 - 1 - 1, 3 - 0 - 1)], (2,), None,
                         ("NHC", "HIO", "NHC")))


# --------------------------------------------------------------------------
# Differentiation and batching
# --------------------------------------------------------------------------

GRAD = [
    ((2, 3, 6, 6), (4, 3, 3, 3), (2, 2), "SAME", None, None, None, 1),
    ((1, 4, 7, 5), (4, 2, 2, 3), (1, 2), [(1, -1), (2, 0)], (2, 1), (1, 2), None, 2),
    ((2, 5, 6, 4), (2, 3, 4, 5), (2, 1), "VALID", None, (2, 1),
     ("NHWC", "HWIO", "NHWC"), 1),
    ((1, 2, 9), (3, 2, 3), (3,), "SAME_LOWER", None, None, None, 1),
    ((1, 2, 4, 3, 4), (2, 2, 2, 2, 2), (1, 1, 2), "SAME", None, None, None, 1),
]


@pytest.mark.parametrize("cfg", GRAD, ids=[str(i) for i in range(len(GRAD))])
def test_conv_grad_finite_differences(cfg, x64):
    ls, rs, st, pad, ld, rd, dn, fgc = cfg
    r = np.random.RandomState(10)
    x, w = r.standard_normal(ls), r.standard_normal(rs)
    def conv(x, w):
        return lax.conv_general_dilated(x, w, st, pad, ld, rd, dn, fgc)
    def f(x, w):
        return jnp.sum(jnp.sin(conv(x, w)))
    def fr(x, w):
        return np.sum(np.sin(ref_conv(x, w, st, pad, ld, rd, dn, fgc)))
    gx, gw = jax.grad(f, (0, 1))(x, w)
    assert np.asarray(gx).dtype == np.float64
    eps = 1e-6
    for _ in range(2):
        vx, vw = r.standard_normal(ls), r.standard_normal(rs)
        fd_x = (fr(x + eps * vx, w) - fr(x - eps * vx, w)) / (2 * eps)
        fd_w = (fr(x, w + eps * vw) - fr(x, w - eps * vw)) / (2 * eps)
        np.testing.assert_allclose(np.sum(np.asarray(gx) * vx), fd_x, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.sum(np.asarray(gw) * vw), fd_w, rtol=1e-6, atol=1e-6)
    # forward mode agrees too
    _, t = jax.jvp(f, (x, w), (vx, vw))
    np.testing.assert_allclose(float(t), fd_x + fd_w, rtol=1e-6, atol=1e-6)


def test_conv_grad_float32_loose():
    r = np.random.RandomState(11)
    x, w = _rand(r, (2, 2, 6, 6)), _rand(r, (3, 2, 3, 3))
    def f(x, w):
        return jnp.sum(lax.conv_general_dilated(x, w, (2, 1), "SAME") ** 2)
    gx, gw = jax.grad(f, (0, 1))(x, w)
    def fr(x, w):
        return np.sum(ref_conv(x, w, (2, 1), "SAME") ** 2)
    eps = 1e-3
    vx, vw = r.standard_normal(x.shape), r.standard_normal(w.shape)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    fd_x = (fr(x64 + eps * vx, w64) - fr(x64 - eps * vx, w64)) / (2 * eps)
    fd_w = (fr(x64, w64 + eps * vw) - fr(x64, w64 - eps * vw)) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(gx) * vx), fd_x, rtol=1e-3)
    np.testing.assert_allclose(np.sum(np.asarray(gw) * vw), fd_w, rtol=1e-3)


def test_conv_transpose_grad(x64):
    r = np.random.RandomState(12)
    x, w = r.standard_normal((1, 4, 3, 2)), r.standard_normal((3, 2, 2, 3))
    def f(x, w):
        return jnp.sum(jnp.cos(lax.conv_transpose(x, w, (2, 2), "SAME")))
    pads = [_doc_transpose_pads(3, 2, "SAME"), _doc_transpose_pads(2, 2, "SAME")]
    def fr(x, w):
        return np.sum(np.cos(ref_conv(x, w, (1, 1), pads, (2, 2), None,
                                      ("NHWC", "HWIO", "NHWC"))))
    gx, gw = jax.grad(f, (0, 1))(x, w)
    eps = 1e-6
    vx, vw = r.standard_normal(x.shape), r.standard_normal(w.shape)
    fd_x = (fr(x + eps * vx, w) - fr(x - eps * vx, w)) / (2 * eps)
    fd_w = (fr(x, w + eps * vw) - fr(x, w - eps * vw)) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(gx) * vx), fd_x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.sum(np.asarray(gw) * vw), fd_w, rtol=1e-6, atol=1e-6)


def test_conv_vmap():
    r = np.random.RandomState(13)
    xs, w = _rand(r, (3, 2, 4, 7, 6)), _rand(r, (6, 2, 3, 2))
    ws = _rand(r, (3, 6, 2, 3, 2))
    def conv(x, w):
        return lax.conv_general_dilated(x, w, (2, 1), [(1, 1), (0, -1)],
                                        rhs_dilation=(1, 2), feature_group_count=2)
    def ref(x, w):
        return ref_conv(x, w, (2, 1), [(1, 1), (0, -1)], None, (1, 2), None, 2)
    _check(jax.vmap(conv, in_axes=(0, None))(xs, w), np.stack([ref(x, w) for x in xs]))
    _check(jax.vmap(conv)(xs, ws), np.stack([ref(x, wi) for x, wi in zip(xs, ws)]))
    _check(jax.vmap(conv, in_axes=(None, 0))(xs[0], ws), np.stack([ref(xs[0], wi) for wi in ws]))
    # batch axis not leading, NHWC layout, under jit
    dn = ("NHWC", "HWIO", "NHWC")
    x_nhwc = _rand(r, (2, 6, 3, 5, 4))                      # batch axis 2
    w_hwio = _rand(r, (3, 2, 4, 5))
    f = jax.jit(jax.vmap(lambda x: lax.conv_general_dilated(x, w_hwio, (1, 1), "SAME",
                                                            dimension_numbers=dn),
                         in_axes=2))
    want = np.stack([ref_conv(x_nhwc[:, :, i], w_hwio, (1, 1), "SAME", dn=dn)
                     for i in range(3)])
    _check(f(x_nhwc), want)


def test_conv_vmap_of_grad():
    r = np.random.RandomState(14)
    xs, w = _rand(r, (3, 1, 2, 5, 5)), _rand(r, (2, 2, 3, 3))
    g = jax.vmap(jax.grad(lambda x: jnp.sum(lax.conv(x, w, (1, 1), "SAME") ** 2)))(xs)
    gj = jax.jit(jax.grad(lambda x: jnp.sum(lax.conv(x, w, (1, 1), "SAME") ** 2)))
    g_loop = np.stack([np.asarray(gj(x)) for x in xs])
    _check(g, g_loop)


# --------------------------------------------------------------------------
# jnp.convolve / jnp.correlate
# --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("na,nv", [(7, 3), (6, 4), (3, 5), (4, 4), (1, 3)])
def test_jnp_convolve_correlate(mode, na, nv):
    r = np.random.RandomState(na * 10 + nv)
    a, v = _rand(r, (na,)), _rand(r, (nv,))
    _check(jnp.convolve(a, v, mode=mode), np.convolve(a, v, mode=mode))
    _check(jnp.correlate(a, v, mode=mode), np.correlate(a, v, mode=mode))


def test_conv_complex_and_preferred_element_type():
    r = np.random.RandomState(15)
    xc = (r.standard_normal((1, 2, 5, 4))
          + 1j * r.standard_normal((1, 2, 5, 4))).astype(np.complex64)
    wc = (r.standard_normal((3, 2, 2, 3))
          + 1j * r.standard_normal((3, 2, 2, 3))).astype(np.complex64)
    def R(a, b):
        return ref_conv(a, b, (2, 1), "SAME")
    want = (R(xc.real, wc.real) - R(xc.imag, wc.imag)
            + 1j * (R(xc.real, wc.imag) + R(xc.imag, wc.real)))
    got = lax.conv_general_dilated(xc, wc, (2, 1), "SAME")
    assert got.dtype == np.complex64
    _check(got, want)
    xi = r.randint(-5, 5, (1, 2, 5, 5)).astype(np.int8)
    wi = r.randint(-5, 5, (3, 2, 3, 3)).astype(np.int8)
    got = lax.conv_general_dilated(xi, wi, (1, 1), "SAME", preferred_element_type=jnp.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), ref_conv(xi, wi, (1, 1), "SAME"))
    xh, wh = _rand(r, (1, 2, 5, 5), np.float16), _rand(r, (3, 2, 3, 3), np.float16)
    got = lax.conv_general_dilated(xh, wh, (1, 1), "VALID", preferred_element_type=jnp.float32)
    assert got.dtype == np.float32
    _check(got, ref_conv(xh, wh, (1, 1), "VALID"), tol=1e-2)

"""`ember.scipy.fft` and `ember.scipy.signal` against SciPy (float32 inputs,
float64 references), JAX's dtypes and errors, and `jit`/`grad`/`vmap`."""

import warnings

import numpy as np
import pytest

sfft = pytest.importorskip("scipy.fft")
ssig = pytest.importorskip("scipy.signal")

import ember  # noqa: E402
import ember.numpy as jnp  # noqa: E402
import ember.scipy.fft as efft  # noqa: E402
import ember.scipy.signal as esig  # noqa: E402

RNG = np.random.default_rng(0)
X47 = RNG.standard_normal((4, 7)).astype(np.float32)
SIG = RNG.standard_normal(50).astype(np.float32)
SIG2 = RNG.standard_normal(50).astype(np.float32)
A56 = RNG.standard_normal((5, 6)).astype(np.float32)
B23 = RNG.standard_normal((2, 3)).astype(np.float32)


def close(got, want, rtol=1e-4, atol=None):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale if atol is None else atol)


def f64(x):
    return np.asarray(x).astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def finite_diff(fn, x, eps=1e-6):
    x = f64(x)
    e = np.eye(x.size).reshape((x.size,) + x.shape)
    return np.array([(fn(x + eps * d) - fn(x - eps * d)) / (2 * eps) for d in e]).reshape(x.shape)


# --------------------------------------------------------------------------
# ember.scipy.fft
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dct", "idct"])
@pytest.mark.parametrize("norm", [None, "ortho"])
def test_dct_matches_scipy(name, norm):
    ours, ref = getattr(efft, name), getattr(sfft, name)
    for n, axis in [(None, -1), (3, -1), (9, -1), (None, 0), (6, 0)]:
        got = ours(X47, n=n, axis=axis, norm=norm)
        assert got.dtype == np.float32
        close(got, ref(f64(X47), n=n, axis=axis, norm=norm), 1e-5)
    close(ours(X47, norm="backward" if norm is None else norm),
          ref(f64(X47), norm=norm), 1e-5)


@pytest.mark.parametrize("name", ["dctn", "idctn"])
def test_dctn_matches_scipy(name):
    ours, ref = getattr(efft, name), getattr(sfft, name)
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    for kw in [{}, {"axes": (0, 2)}, {"s": (6, 2)}, {"s": (2, 3), "axes": (2, 0)},
               {"axes": 1, "norm": "ortho"}, {"s": 7, "norm": "ortho"}]:
        close(ours(x, **kw), ref(f64(x), **kw), 1e-5)


def test_dct_fft_path(monkeypatch):
    # Long axes go through jnp.fft instead of the DCT matrix: force it for short ones.
    monkeypatch.setattr(efft, "_MATRIX_MAX", 0)
    for n in (1, 5, 8):
        x = RNG.standard_normal((2, n)).astype(np.float32)
        for norm in (None, "ortho"):
            close(efft.dct(x, norm=norm), sfft.dct(f64(x), norm=norm), 1e-5)
            close(efft.idct(x, norm=norm), sfft.idct(f64(x), norm=norm), 1e-5)


def test_dct_dtypes_and_complex():
    # As JAX: integers and float16 compute in float32, complex stays complex.
    assert efft.dct(np.arange(6)).dtype == np.float32
    assert efft.dct(np.ones(4, np.float16)).dtype == np.float32
    close(efft.dct(np.arange(6)), sfft.dct(np.arange(6.0)), 1e-5)
    z = (X47 + 1j * X47[::-1]).astype(np.complex64)
    got = efft.idct(z, norm="ortho")
    assert got.dtype == np.complex64
    close(got, sfft.idct(f64(z), norm="ortho"), 1e-5)
    close(efft.dctn(z, axes=(0,)), sfft.dctn(f64(z), axes=(0,)), 1e-5)


def test_dctn_size_axis_pairing_as_jax():
    # JAX pairs the i-th size with the i-th axis; axes without a size keep theirs.
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    close(efft.dctn(x, s=[2], axes=[0, 1]), sfft.dct(sfft.dct(f64(x)[:2], axis=0), axis=1))
    close(efft.dctn(x, s=[2, 2], axes=[0]), sfft.dct(f64(x)[:2], axis=0))


def test_dct_errors():
    for t in (1, 3, 4):
        with pytest.raises(NotImplementedError, match="Only DCT type 2"):
            efft.dct(X47, type=t)
        with pytest.raises(NotImplementedError):
            efft.idctn(X47, type=t)
    with pytest.raises(ValueError, match="norm='forward' is not implemented"):
        efft.dct(X47, norm="forward")
    with pytest.raises(ValueError, match="not implemented"):
        efft.idctn(X47, norm="bad")
    with pytest.raises(ValueError, match="out of bounds"):
        efft.dct(X47, axis=2)
    with pytest.raises(ValueError, match="out of bounds"):
        efft.dct(np.float32(3.0))
    with pytest.raises(ValueError, match="repeated axis"):
        efft.dctn(X47, axes=[0, -2])
    with pytest.raises(ValueError):
        efft.dct(X47, n=0)


def test_dct_jit_grad_vmap():
    x = X47[0]
    close(ember.jit(lambda v: efft.idct(efft.dct(v)))(x), x, 1e-5)
    # The ortho DCT is orthogonal: the gradient of <w, dct(x)> is idct(w).
    w = np.arange(7.0, dtype=np.float32)
    g = ember.grad(lambda v: jnp.sum(efft.dct(v, norm="ortho") * w))(x)
    close(g, sfft.idct(f64(w), norm="ortho"), 1e-5)
    g = ember.grad(lambda v: jnp.sum(efft.idctn(v) ** 2))(X47)
    close(g, finite_diff(lambda v: np.sum(sfft.idctn(v) ** 2), X47), 1e-3)
    close(ember.vmap(efft.dct)(X47), sfft.dct(f64(X47)), 1e-5)


# --------------------------------------------------------------------------
# Convolution and correlation
# --------------------------------------------------------------------------

MODES = ["full", "same", "valid"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["direct", "fft"])
def test_convolve_correlate_1d(mode, method):
    a, b = SIG[:9], SIG2[:4]
    for x, y in [(a, b), (b, a)]:
        for name in ("convolve", "correlate"):
            got = getattr(esig, name)(x, y, mode=mode, method=method)
            assert got.dtype == np.float32
            close(got, getattr(ssig, name)(f64(x), f64(y), mode=mode))


@pytest.mark.parametrize("mode", MODES)
def test_convolve_correlate_nd(mode):
    for x, y in [(A56, B23), (B23, A56)]:
        close(esig.convolve(x, y, mode), ssig.convolve(f64(x), f64(y), mode))
        close(esig.correlate(x, y, mode), ssig.correlate(f64(x), f64(y), mode))
        close(esig.convolve2d(x, y, mode), ssig.convolve2d(f64(x), f64(y), mode))
        # correlate2d's "same" window differs from correlate's for even kernels.
        close(esig.correlate2d(x, y, mode), ssig.correlate2d(f64(x), f64(y), mode))
    x3 = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    y3 = RNG.standard_normal((2, 3, 2)).astype(np.float32)
    close(esig.correlate(x3, y3, mode), ssig.correlate(f64(x3), f64(y3), mode))


def test_convolve_complex_and_dtypes():
    ac = (A56 + 1j * A56[::-1]).astype(np.complex64)
    bc = (B23 - 2j * B23).astype(np.complex64)
    for mode in MODES:
        got = esig.correlate(ac, bc, mode)
        assert got.dtype == np.complex64
        close(got, ssig.correlate(f64(ac), f64(bc), mode))
        close(esig.correlate(ac, bc, mode, method="fft"), ssig.correlate(f64(ac), f64(bc), mode))
        # (SciPy's, and JAX's, correlate2d conjugates a swapped "valid" result.)
        close(esig.correlate2d(bc, ac, mode), ssig.correlate2d(f64(bc), f64(ac), mode))
    # JAX's docstring examples: integer inputs give float32.
    x, y = np.array([1, 2, 3, 2, 1]), np.array([1, 1, 1])
    got = esig.convolve(x, y, mode="same")
    assert got.dtype == np.float32
    close(got, [3.0, 6.0, 7.0, 6.0, 3.0])
    close(esig.correlate(x, np.array([1, 3, 2]), mode="valid"), [13.0, 15.0, 11.0])
    assert esig.convolve(np.ones(3, np.float16), np.ones(2, np.float16)).dtype == np.float16
    close(esig.convolve(np.float32(2), np.float32(3)), 6.0)


@pytest.mark.parametrize("mode", MODES)
def test_fftconvolve(mode):
    got = esig.fftconvolve(A56, B23, mode)
    assert got.dtype == np.float32
    close(got, ssig.fftconvolve(f64(A56), f64(B23), mode))
    close(esig.fftconvolve(B23, A56, mode), ssig.fftconvolve(f64(B23), f64(A56), mode))
    c = A56[:, :4]
    close(esig.fftconvolve(A56, c, mode, axes=1), ssig.fftconvolve(f64(A56), f64(c), mode, axes=1))
    close(esig.fftconvolve(A56, c, mode, axes=[-1]),
          ssig.fftconvolve(f64(A56), f64(c), mode, axes=[-1]))
    zc = (A56 + 0.5j).astype(np.complex64)
    close(esig.fftconvolve(zc, B23, mode), ssig.fftconvolve(f64(zc), f64(B23), mode))


def test_convolution_errors():
    with pytest.raises(ValueError, match="mode must be one of"):
        esig.convolve(SIG, SIG2, mode="foo")
    with pytest.raises(ValueError, match="mode must be one of"):
        esig.correlate2d(A56, B23, mode="foo")
    with pytest.raises(ValueError, match="mode must be one of"):
        esig.fftconvolve(SIG, SIG2, mode="foo")
    with pytest.raises(ValueError, match="expected 'auto', 'fft', or 'direct'"):
        esig.convolve(SIG, SIG2, method="foo")
    with pytest.raises(ValueError, match="same number of dimensions"):
        esig.correlate(A56, SIG)
    with pytest.raises(ValueError, match="same dimensionality"):
        esig.fftconvolve(A56, SIG)
    with pytest.raises(ValueError, match="zero-size"):
        esig.convolve(np.zeros(0), SIG)
    with pytest.raises(ValueError, match="smaller than the other in every dimension"):
        esig.convolve(np.ones((2, 5)), np.ones((3, 2)), mode="valid")
    with pytest.raises(ValueError, match="at least as large"):
        esig.fftconvolve(np.ones((2, 5)), np.ones((3, 2)), mode="valid")
    with pytest.raises(ValueError, match="mapped axes must have same shape"):
        esig.fftconvolve(np.ones((2, 5)), np.ones((1, 3)), axes=[1])
    with pytest.raises(ValueError, match="2-dimensional"):
        esig.convolve2d(SIG, SIG2)
    with pytest.raises(NotImplementedError, match="boundary='fill'"):
        esig.convolve2d(A56, B23, boundary="wrap")
    with pytest.raises(NotImplementedError, match="fillvalue=0"):
        esig.correlate2d(A56, B23, fillvalue=1)


def test_convolve_jit_grad():
    k = SIG2[:5]
    f = ember.jit(lambda x, y: esig.convolve(x, y, mode="same"))
    close(f(SIG, k), ssig.convolve(f64(SIG), f64(k), mode="same"))
    for name, kw in [("convolve", {"mode": "same"}), ("correlate", {"mode": "valid"}),
                     ("fftconvolve", {"mode": "full"})]:
        ours, ref = getattr(esig, name), getattr(ssig, name)
        g = ember.grad(lambda x, ours=ours, kw=kw: jnp.sum(ours(x, k, **kw) ** 2))(SIG[:20])
        want = finite_diff(lambda x, ref=ref, kw=kw: np.sum(ref(x, f64(k), **kw) ** 2), SIG[:20])
        close(g, want, 1e-3)
    g = ember.grad(lambda y: jnp.sum(esig.correlate2d(A56, y, "same") ** 2))(B23)
    close(g, finite_diff(lambda y: np.sum(ssig.correlate2d(f64(A56), y, "same") ** 2), B23),
          1e-3)
    got = ember.vmap(lambda r: esig.convolve(r, k))(A56)
    close(got, np.stack([ssig.convolve(f64(r), f64(k)) for r in A56]))


# --------------------------------------------------------------------------
# detrend
# --------------------------------------------------------------------------


def test_detrend_matches_scipy():
    d = RNG.standard_normal((3, 20)).astype(np.float32) + np.arange(20, dtype=np.float32)
    for kw in [{}, {"type": "constant"}, {"bp": [5, 19]}, {"bp": 7}, {"bp": np.array([20, 3])},
               {"axis": 0}, {"axis": 0, "type": "constant"}, {"bp": [0, 20]}]:
        got = esig.detrend(d, **kw)
        assert got.dtype == np.float32
        close(got, ssig.detrend(f64(d), **kw), 1e-4, atol=1e-4)
    z = np.arange(5) * (1 + 2j) + np.array([0, 1, 0, 1, 0])
    close(esig.detrend(z.astype(np.complex64)), ssig.detrend(z), atol=1e-5)
    assert esig.detrend(np.arange(5)).dtype == np.float32
    close(esig.detrend(np.array([3.0])), [0.0])


def test_detrend_errors():
    with pytest.raises(ValueError, match="Trend type must be 'linear' or 'constant'"):
        esig.detrend(SIG, type="foo")
    with pytest.raises(ValueError, match="Breakpoints must be non-negative"):
        esig.detrend(SIG, bp=[51])
    with pytest.raises(NotImplementedError, match="overwrite_data"):
        esig.detrend(SIG, overwrite_data=True)


def test_detrend_grad():
    g = ember.grad(lambda x: jnp.sum(esig.detrend(x, bp=[10]) ** 3))(SIG[:30])
    close(g, finite_diff(lambda x: np.sum(ssig.detrend(x, bp=[10]) ** 3), SIG[:30]), 1e-3)


# --------------------------------------------------------------------------
# Windows, STFT, inverse STFT, Welch and CSD
# --------------------------------------------------------------------------


def test_windows_match_scipy():
    names = ["hann", "hamming", "blackman", "blackmanharris", "nuttall", "flattop", "boxcar",
             "bartlett", "triang", "cosine", "bohman", "parzen", "barthann", "tukey",
             ("tukey", 0.3), ("tukey", 1.0), ("kaiser", 7.5), ("gaussian", 2.5),
             ("general_hamming", 0.6), "hann", "rect", "blk"]
    for w in names:
        for n in (1, 2, 7, 16):
            np.testing.assert_allclose(esig._get_window(w, n), ssig.get_window(w, n),
                                       atol=1e-12, err_msg=str(w))


STFT_CASES = [
    {"nperseg": 16},
    {},  # nperseg 256 > 50: shortened, with a warning
    {"nperseg": 16, "boundary": "even"},
    {"nperseg": 16, "boundary": "odd"},
    {"nperseg": 16, "boundary": "constant"},
    {"nperseg": 16, "boundary": None, "padded": False},
    {"nperseg": 16, "nfft": 21, "noverlap": 5, "window": "hamming"},
    {"nperseg": 16, "return_onesided": False, "detrend": "linear"},
    {"nperseg": 15, "window": ("tukey", 0.3), "fs": 3.0, "noverlap": 0},
]


@pytest.mark.parametrize("kw", STFT_CASES, ids=[str(i) for i in range(len(STFT_CASES))])
def test_stft_matches_scipy(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = esig.stft(SIG, **kw), ssig.stft(f64(SIG), **kw)
    assert [g.dtype for g in got] == [np.float32, np.float32, np.complex64]
    for g, w in zip(got, want):
        close(g, w, 1e-4, atol=1e-5)


def test_stft_axes_windows_detrend():
    x3 = RNG.standard_normal((2, 40, 3)).astype(np.float32)
    for axis in (1, -2):
        close(esig.stft(x3, nperseg=8, axis=axis)[2],
              ssig.stft(f64(x3), nperseg=8, axis=axis)[2], atol=1e-5)
    win = np.hanning(17)[:16]
    close(esig.stft(SIG, window=win, nperseg=None)[2],
          ssig.stft(f64(SIG), window=win, nperseg=None)[2], atol=1e-5)
    close(esig.welch(SIG, window=win)[1], ssig.welch(f64(SIG), window=win)[1])
    close(esig.stft(SIG, window=jnp.asarray(win), nperseg=16)[2],
          ssig.stft(f64(SIG), window=win, nperseg=16)[2], atol=1e-5)
    got = esig.stft(SIG, nperseg=16, detrend=lambda d: d - jnp.mean(d, axis=-1, keepdims=True))
    close(got[2], ssig.stft(f64(SIG), nperseg=16, detrend="constant")[2], atol=1e-5)
    z = (SIG + 1j * SIG2).astype(np.complex64)
    with pytest.warns(UserWarning, match="complex"):
        got = esig.stft(z, nperseg=16)
    close(got[2], ssig.stft(f64(z), nperseg=16, return_onesided=False)[2], atol=1e-5)
    got = esig.stft(np.arange(20), nperseg=8)
    assert got[2].dtype == np.complex64
    close(got[2], ssig.stft(np.arange(20.0), nperseg=8)[2], atol=1e-5)
    with pytest.warns(UserWarning, match="greater than input length"):
        esig.stft(SIG, nperseg=64)


PSD_CASES = [
    {"nperseg": 16},
    {},
    {"nperseg": 16, "scaling": "spectrum"},
    {"nperseg": 16, "average": "median"},
    {"nperseg": 16, "return_onesided": False, "fs": 4.0},
    {"nperseg": 16, "nfft": 21, "detrend": "linear", "window": "blackman"},
    {"nperseg": 16, "detrend": False, "noverlap": 10},
]


@pytest.mark.parametrize("kw", PSD_CASES, ids=[str(i) for i in range(len(PSD_CASES))])
def test_welch_csd_match_scipy(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f, p = esig.welch(SIG, **kw)
        wf, wp = ssig.welch(f64(SIG), **kw)
        assert (f.dtype, p.dtype) == (np.float32, np.float32)
        close(f, wf)
        close(p, wp)
        f, p = esig.csd(SIG, SIG2, **kw)
        wf, wp = ssig.csd(f64(SIG), f64(SIG2), **kw)
        assert (f.dtype, p.dtype) == (np.float32, np.complex64)
        close(f, wf)
        close(p, wp)
        f, p = esig.csd(SIG, None, **kw)  # y=None: the real PSD (JAX)
        assert p.dtype == np.float32
        close(p, ssig.welch(f64(SIG), **kw)[1])


def test_welch_csd_shapes():
    x3 = RNG.standard_normal((2, 40, 3)).astype(np.float32)
    close(esig.welch(x3, nperseg=8, axis=1)[1], ssig.welch(f64(x3), nperseg=8, axis=1)[1])
    # Different lengths are zero-padded, outer shapes broadcast.
    close(esig.csd(SIG, SIG2[:40], nperseg=16)[1],
          ssig.csd(f64(SIG), f64(SIG2[:40]), nperseg=16)[1])
    y = np.stack([SIG2, SIG])
    close(esig.csd(SIG[None], y, nperseg=16)[1], ssig.csd(f64(SIG[None]), f64(y), nperseg=16)[1])
    z = (SIG + 1j * SIG2).astype(np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(esig.welch(z, nperseg=16)[1], ssig.welch(f64(z), nperseg=16)[1])
        close(esig.csd(z, SIG, nperseg=16, average="median")[1],
              ssig.csd(f64(z), f64(SIG), nperseg=16, average="median")[1])
    f, p = esig.welch(np.zeros(0, np.float32), nperseg=16)
    assert f.shape == p.shape == (0,)


ISTFT_CASES = [
    ({"nperseg": 16}, {}),
    ({"nperseg": 16, "nfft": 20}, {"nperseg": 16, "nfft": 20}),
    ({"nperseg": 15}, {"nperseg": 15}),
    ({"nperseg": 16, "boundary": None}, {"boundary": False}),
    ({"nperseg": 16, "return_onesided": False}, {"input_onesided": False}),
    ({"nperseg": 16, "window": "hamming", "noverlap": 12}, {"window": "hamming", "noverlap": 12}),
    ({"nperseg": 16, "noverlap": 0, "window": "boxcar"}, {"noverlap": 0, "window": "boxcar"}),
]


@pytest.mark.filterwarnings("ignore:NOLA condition failed")
@pytest.mark.parametrize("kw,ikw", ISTFT_CASES, ids=[str(i) for i in range(len(ISTFT_CASES))])
def test_istft_matches_scipy(kw, ikw):
    z = ssig.stft(f64(SIG), **kw)[2]
    t, x = esig.istft(z.astype(np.complex64), **ikw)
    wt, wx = ssig.istft(z, **ikw)
    assert t.dtype == np.float32
    assert x.dtype == (np.complex64 if ikw.get("input_onesided") is False else np.float32)
    close(t, wt)
    close(x, wx, 1e-4, atol=1e-5)


def test_istft_axes_and_roundtrip():
    x3 = RNG.standard_normal((2, 40, 3)).astype(np.float32)
    z = ssig.stft(f64(x3), nperseg=8, axis=1)[2]  # (2, 5 freqs, 3, 11 segments)
    for ta, fa in [(-1, 1), (0, 1), (1, -1)]:
        zt = np.moveaxis(z, (1, 3), (fa, ta))
        got = esig.istft(zt.astype(np.complex64), time_axis=ta, freq_axis=fa)
        want = ssig.istft(zt, time_axis=ta, freq_axis=fa)
        close(got[0], want[0])
        close(got[1], want[1], atol=1e-5)
    _, _, zz = esig.stft(SIG, nperseg=16, window="hamming")
    close(esig.istft(zz, window="hamming")[1][:50], SIG, atol=1e-5)
    close(esig.istft(zz, window=np.hamming(17)[:16], fs=2.0)[0], np.arange(56) / 2.0)


@pytest.mark.filterwarnings("ignore:nperseg = 256 is greater")
def test_spectral_errors():
    with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
        esig.stft(SIG, nperseg=16, noverlap=16)
    with pytest.raises(ValueError, match="nfft must be greater than or equal to nperseg"):
        esig.welch(SIG, nperseg=16, nfft=10)
    with pytest.raises(ValueError, match="nperseg must be a positive integer"):
        esig.stft(SIG, nperseg=0)
    with pytest.raises(ValueError, match="Unknown boundary option"):
        esig.stft(SIG, nperseg=16, boundary="foo")
    with pytest.raises(ValueError, match="Unknown scaling"):
        esig.welch(SIG, scaling="foo")
    with pytest.raises(ValueError, match="average must be"):
        esig.csd(SIG, SIG2, average="foo")
    with pytest.raises(ValueError, match="Trend type"):
        esig.welch(SIG, detrend="foo")
    with pytest.raises(ValueError, match="different from length of window"):
        esig.stft(SIG, nperseg=16, window=np.ones(15))
    with pytest.raises(ValueError, match="window must be 1-D"):
        esig.welch(SIG, window=np.ones((4, 4)))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        esig.csd(np.ones((2, 50)), np.ones((3, 50)))
    with pytest.raises(ValueError, match="at least 2d"):
        esig.istft(np.ones(9, np.complex64))
    with pytest.raises(ValueError, match="differing time and frequency axes"):
        esig.istft(np.ones((9, 8), np.complex64), time_axis=0, freq_axis=-2)
    with pytest.raises(ValueError, match="noverlap must be less than nperseg"):
        esig.istft(np.ones((9, 8), np.complex64), noverlap=16)
    with pytest.raises(ValueError, match="window must have length"):
        esig.istft(np.ones((9, 8), np.complex64), window=np.ones(15))


def test_spectral_jit_grad_vmap():
    f = ember.jit(lambda x, fs: esig.welch(x, fs=fs, nperseg=16))
    got, want = f(SIG, 2.0), ssig.welch(f64(SIG), fs=2.0, nperseg=16)
    close(got[0], want[0])
    close(got[1], want[1])
    x = SIG[:40]
    g = ember.grad(lambda v: jnp.sum(jnp.abs(esig.stft(v, nperseg=8)[2]) ** 2))(x)
    close(g, finite_diff(lambda v: np.sum(np.abs(ssig.stft(v, nperseg=8)[2]) ** 2), x), 1e-3)
    g = ember.grad(lambda v: jnp.sum(esig.csd(v, SIG2[:40], nperseg=16)[1].real))(x)
    want = finite_diff(lambda v: np.sum(ssig.csd(v, f64(SIG2[:40]), nperseg=16)[1].real), x)
    close(g, want, 1e-3)
    # istft(stft(x)) is the identity on the signal: its gradient passes w through.
    w = np.arange(40.0, dtype=np.float32)
    g = ember.grad(lambda v: jnp.sum(esig.istft(esig.stft(v, nperseg=8)[2])[1][:40] * w))(x)
    close(g, w, 1e-4)
    x2 = np.stack([SIG, SIG2])
    close(ember.vmap(lambda r: esig.stft(r, nperseg=8)[2])(x2),
          ssig.stft(f64(x2), nperseg=8)[2], atol=1e-5)

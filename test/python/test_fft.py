"""`ember.numpy.fft` against NumPy: power-of-two and other lengths, real and
Hermitian transforms, n-dimensional forms, norms, and derivatives (finite
differences)."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp

RNG = np.random.default_rng(0)


def _c(shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def _close(got, want, tol=2e-6):
    got = np.asarray(got)
    scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, atol=tol * scale * 4, rtol=0)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7, 8, 12, 64, 100, 127])
def test_fft_ifft_lengths(n):
    x = _c((2, n))
    _close(jnp.fft.fft(x), np.fft.fft(x))
    _close(jnp.fft.ifft(x), np.fft.ifft(x))
    assert jnp.fft.fft(x).dtype == np.complex64


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_norms_axes_and_sizes(norm):
    x = _c((4, 6))
    _close(jnp.fft.fft(x, axis=0, norm=norm), np.fft.fft(x, axis=0, norm=norm))
    _close(jnp.fft.ifft(x, n=9, norm=norm), np.fft.ifft(x, n=9, norm=norm))
    _close(jnp.fft.fft(x, n=4, norm=norm), np.fft.fft(x, n=4, norm=norm))
    with pytest.raises(ValueError, match="norm"):
        jnp.fft.fft(x, norm="sideways")


def test_real_and_hermitian():
    r = RNG.standard_normal((3, 10)).astype(np.float32)
    _close(jnp.fft.rfft(r), np.fft.rfft(r))
    spec = np.fft.rfft(r).astype(np.complex64)
    _close(jnp.fft.irfft(spec), np.fft.irfft(spec))
    _close(jnp.fft.irfft(spec, 9), np.fft.irfft(spec, 9))
    _close(jnp.fft.hfft(spec[0]), np.fft.hfft(spec[0]))
    _close(jnp.fft.ihfft(r[0]), np.fft.ihfft(r[0]))
    assert jnp.fft.rfft(jnp.arange(4)).dtype == np.complex64
    with pytest.raises(ValueError, match="real"):
        jnp.fft.rfft(_c(4))


def test_nd():
    m = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    _close(jnp.fft.fft2(m), np.fft.fft2(m))
    _close(jnp.fft.ifft2(m), np.fft.ifft2(m))
    _close(jnp.fft.fftn(m), np.fft.fftn(m))
    _close(jnp.fft.ifftn(m, axes=(0, 2)), np.fft.ifftn(m, axes=(0, 2)))
    _close(jnp.fft.rfftn(m), np.fft.rfftn(m))
    _close(jnp.fft.rfft2(m, s=(4, 8)), np.fft.rfft2(m, s=(4, 8)))
    spec = np.fft.rfftn(m).astype(np.complex64)
    _close(jnp.fft.irfftn(spec, m.shape), m)
    _close(jnp.fft.irfft2(np.fft.rfft2(m).astype(np.complex64), m.shape[1:]), m)


def test_helpers():
    np.testing.assert_array_equal(np.asarray(jnp.fft.fftshift(jnp.arange(5))),
                                  np.fft.fftshift(np.arange(5)))
    np.testing.assert_array_equal(np.asarray(jnp.fft.ifftshift(jnp.arange(6).reshape(2, 3))),
                                  np.fft.ifftshift(np.arange(6).reshape(2, 3)))
    np.testing.assert_allclose(np.asarray(jnp.fft.fftfreq(5, 0.5)), np.fft.fftfreq(5, 0.5))
    np.testing.assert_allclose(np.asarray(jnp.fft.rfftfreq(8)), np.fft.rfftfreq(8))


def test_transformations():
    r = RNG.standard_normal(12).astype(np.float32)

    def power(v):
        return jnp.sum(jnp.abs(jnp.fft.rfft(v)) ** 2)

    g = np.asarray(ember.grad(power)(r), np.float64)
    d = RNG.standard_normal(12)
    eps = 1e-3
    fd = (float(power((r + eps * d).astype(np.float32))) -
          float(power((r - eps * d).astype(np.float32)))) / (2 * eps)
    np.testing.assert_allclose(np.sum(g * d), fd, rtol=2e-3)
    xs = _c((3, 16))
    _close(ember.vmap(jnp.fft.fft)(xs), np.fft.fft(xs))
    _close(ember.jit(lambda v: jnp.fft.ifft(jnp.fft.fft(v)))(xs), xs)

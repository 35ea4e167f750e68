"""`ember.numpy.fft` against NumPy: power-of-two and other lengths, real and
Hermitian transforms, n-dimensional forms, norms, and derivatives (finite
differences)."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp

from helpers import fd_grad

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


@pytest.mark.parametrize("n", [8, 9])
def test_derivatives_of_every_kind_match_finite_differences(n):
    # The op's JVP and transpose rules (C++), in f64: FFT, IFFT, RFFT and
    # IRFFT (even and odd lengths), one and two dimensions, through norms.
    with ember.enable_x64():
        x = RNG.standard_normal((3, n))
        w = RNG.standard_normal((3, n // 2 + 1)) + 1j * RNG.standard_normal((3, n // 2 + 1))
        k = np.arange(n)
        cases = [
            (lambda v, m: m.sum(m.real(m.fft.fft(v) * k))),
            (lambda v, m: m.sum(m.imag(m.fft.ifft(v, norm="ortho") * k))),
            (lambda v, m: m.sum(m.real(m.fft.rfft(v) * w))),
            (lambda v, m: m.sum(m.fft.irfft(m.fft.rfft(v) * w, n) * k)),
            (lambda v, m: m.sum(m.real(m.fft.fft2(v) * m.fft.fft2(v)))),
            (lambda v, m: m.sum(m.fft.irfft2(m.fft.rfft2(v) * w, (3, n)) * k)),
        ]
        for f in cases:
            g = np.asarray(ember.grad(lambda v, f=f: f(v, jnp))(x))
            np.testing.assert_allclose(g, fd_grad(lambda v, f=f: f(v, np), x),
                                       rtol=1e-6, atol=1e-7)
            # Forward mode against the same differences.
            t = RNG.standard_normal(x.shape)
            _, d = ember.jvp(lambda v, f=f: f(v, jnp), (x,), (t,))
            np.testing.assert_allclose(float(d), float(np.sum(g * t)), rtol=1e-6)


def test_vmap_jit_and_many_axes():
    x = RNG.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    _close(jnp.fft.fftn(x), np.fft.fftn(x), 1e-5)
    _close(jnp.fft.rfftn(x), np.fft.rfftn(x), 1e-5)
    spec = np.fft.rfftn(x).astype(np.complex64)
    _close(jnp.fft.irfftn(spec, x.shape), x, 1e-5)
    _close(ember.vmap(ember.jit(jnp.fft.rfft2), in_axes=2)(x),
           np.moveaxis(np.fft.rfft2(np.moveaxis(x, 2, 0)), 0, 0), 1e-5)
    # JAX's errors.
    with pytest.raises(ValueError, match="RFFT input must be float32 or float64"):
        jnp.fft.rfft(jnp.ones(8, jnp.float16))
    with pytest.raises(ValueError, match="only real valued inputs"):
        jnp.fft.rfft(_c(8))


def test_runtime_reference_when_no_fft_is_registered():
    # Without SciPy's FFT registered (the C API's case), the runtime computes
    # each DFT directly: the same values.
    import ctypes

    from ember._mlir._mlir_libs import _ember_runtime
    from ember._src import compiler

    x = RNG.standard_normal((2, 6, 10)).astype(np.float32)
    c = _c((3, 7))
    programs = [(lambda v: jnp.fft.rfft2(v), x, np.fft.rfft2(x)),
                (lambda v: jnp.fft.irfft(jnp.fft.rfft(v), 10), x, x),
                (lambda v: jnp.fft.ifft(v), c, np.fft.ifft(c)),
                (lambda v: jnp.fft.fft(v, axis=0), c, np.fft.fft(c, axis=0))]
    _ember_runtime.set_fft_function(0)
    try:
        for f, a, want in programs:
            _close(ember.jit(f)(a), want, 1e-5)
    finally:
        _ember_runtime.set_fft_function(
            ctypes.cast(compiler._use_scipy_fft.callback, ctypes.c_void_p).value)
    _close(ember.jit(programs[0][0])(x), programs[0][2], 1e-5)

"""Large f32/f64 contractions go through the runtime's GEMM: its own
single-core kernels for products up to 2^21 multiply-adds, OpenBLAS above
that when scipy-openblas32 is installed, a loop nest on CPUs without AVX2.
Every operand layout must give NumPy's result."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember._mlir._mlir_libs import _ember_runtime
from ember._src import compiler

rng = np.random.default_rng(0)

# (lhs shape, rhs shape, dimension_numbers, einsum equivalent)
CASES = [
    ((64, 40), (40, 48), (((1,), (0,)), ((), ())), "mk,kn->mn"),
    ((64, 40), (48, 40), (((1,), (1,)), ((), ())), "mk,nk->mn"),
    ((40, 64), (40, 48), (((0,), (0,)), ((), ())), "km,kn->mn"),
    ((40, 64), (48, 40), (((0,), (1,)), ((), ())), "km,nk->mn"),
    ((3, 32, 40), (3, 40, 36), (((2,), (1,)), ((0,), (0,))), "bmk,bkn->bmn"),
    ((32, 3, 40), (40, 36, 3), (((2,), (0,)), ((1,), (2,))), "mbk,knb->bmn"),
    ((2, 8, 8, 30), (30, 2, 40), (((3,), (0,)), ((0,), (1,))), "bxyk,kbn->bxyn"),
    ((4, 6, 20, 10), (20, 10, 50), (((2, 3), (0, 1)), ((), ())), "abkl,kln->abn"),
]


def _check(lhs, rhs, dn, eq, dtype, rtol):
    a = rng.standard_normal(lhs).astype(dtype)
    b = rng.standard_normal(rhs).astype(dtype)
    f = jax.jit(lambda x, y: jax.lax.dot_general(x, y, dn))
    got = np.asarray(f(a, b))
    want = np.einsum(eq, a.astype(np.float64), b.astype(np.float64))
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())


@pytest.mark.parametrize("lhs,rhs,dn,eq", CASES)
def test_gemm_layouts_f32(lhs, rhs, dn, eq):
    _check(lhs, rhs, dn, eq, np.float32, 1e-5)


@pytest.mark.parametrize("lhs,rhs,dn,eq", CASES[:5])
def test_gemm_layouts_f64(lhs, rhs, dn, eq, x64):
    _check(lhs, rhs, dn, eq, np.float64, 1e-12)


# (m, n, k): row tails of the 8-row blocks, column tails of the 2-vector strips
# (f32: 32 columns, f64: 16), one-vector strips, k = 1, and products large
# enough for OpenBLAS.
SIZES = [(1, 1, 32), (7, 33, 40), (9, 17, 64), (32, 256, 256), (45, 100, 70),
         (33, 48, 1), (200, 64, 300), (100, 31, 129), (300, 300, 300)]


@pytest.mark.parametrize("m,n,k", SIZES)
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True),
                                   (True, True)])
def test_gemm_sizes_f32(m, n, k, ta, tb):
    lhs, rhs = (k, m) if ta else (m, k), (n, k) if tb else (k, n)
    dn = (((0 if ta else 1,), (1 if tb else 0,)), ((), ()))
    _check(lhs, rhs, dn, ("km" if ta else "mk") + "," + ("nk" if tb else "kn") + "->mn",
           np.float32, 1e-5)


@pytest.mark.parametrize("m,n,k", SIZES[:6])
def test_gemm_sizes_f64(m, n, k, x64):
    _check((m, k), (n, k), (((1,), (1,)), ((), ())), "mk,nk->mn", np.float64, 1e-12)


def test_gemm_without_blas():
    # Without CBLAS the runtime's own kernels (or its loop nest) compute the
    # same products, large ones included.
    try:
        _ember_runtime.set_cblas_gemm(0, 0)
        for lhs, rhs, dn, eq in CASES[:4]:
            _check(lhs, rhs, dn, eq, np.float32, 1e-5)
        _check((300, 300), (300, 300), (((1,), (0,)), ((), ())), "mk,kn->mn",
               np.float32, 1e-5)
    finally:
        compiler._use_openblas()


def test_matmul_grad_and_vmap_through_gemm():
    w = rng.standard_normal((64, 48)).astype(np.float32)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    g = jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w)))(w)
    want = x.T @ (1 - np.tanh(x @ w) ** 2)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4, atol=1e-4)
    per = jax.vmap(lambda xi: xi @ w)(x)
    np.testing.assert_allclose(np.asarray(per), x @ w, rtol=1e-5, atol=1e-4)


def test_openblas_is_used_when_installed():
    pytest.importorskip("scipy_openblas32")
    assert compiler._HAVE_BLAS


def _openblas_core(env):
    code = ("import ctypes, os, ember\n"
            "from ember._src import compiler\n"
            "f = compiler._use_openblas.lib.scipy_openblas_get_corename\n"
            "f.restype = ctypes.c_char_p\n"
            "print(f().decode(), os.environ.get('OPENBLAS_CORETYPE'))\n")
    env = {k: v for k, v in os.environ.items() if "OPENBLAS_CORETYPE" not in k} | env
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    return out[0], out[1]


def test_openblas_kernels_follow_ember_openblas_coretype_only():
    """Ember's OpenBLAS copy detects the CPU whatever NumPy's
    OPENBLAS_CORETYPE says (which stays set for NumPy), and takes the core
    type from EMBER_OPENBLAS_CORETYPE."""
    pytest.importorskip("scipy_openblas32")
    detected, _ = _openblas_core({})
    assert _openblas_core({"OPENBLAS_CORETYPE": "Prescott"}) == (detected, "Prescott")
    assert _openblas_core({"EMBER_OPENBLAS_CORETYPE": "Haswell"}) == ("Haswell", "None")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_products_accumulate_in_f32(dtype):
    # JAX (XLA) sums f16/bf16 products in f32 and rounds once: the error is
    # one rounding of the result, not one per term (640 terms here).
    import ember.numpy as jnp

    rng = np.random.default_rng(0)
    a = jnp.asarray(rng.uniform(size=(64, 640)).astype(np.float32), dtype)
    b = jnp.asarray(rng.uniform(size=(640, 32)).astype(np.float32), dtype)
    exact = np.asarray(a.astype(jnp.float32)) @ np.asarray(b.astype(jnp.float32))
    got = np.asarray((a @ b).astype(jnp.float32))
    ulp = 2.0 ** (np.floor(np.log2(exact)) - (10 if dtype == "float16" else 7))
    assert np.all(np.abs(got - exact) <= 0.5 * ulp + 1e-3)

"""`jax.experimental.sparse.linalg`: `spsolve` (values, derivatives, `jit`,
JAX's errors) and `lobpcg_standard` (eigenvalues to 4 digits, residuals,
JAX's errors). Run with IMPORT=jax (in a JAX venv) to record
`linalg.jax.txt` (JAX 0.10.2), with IMPORT=ember to compare
(test_sparse_linalg.py). LOBPCG's iteration counts are not printed: Ember's
LOBPCG is its own, and reaches the same eigenpairs in its own number of
steps."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "numerics"))
from cases import jax, jnp  # noqa: E402
from printing import shower  # noqa: E402

if os.environ["IMPORT"] == "jax":
    from jax.experimental.sparse import linalg as sl
else:
    from ember.experimental.sparse import linalg as sl


show = shower(jax, 4)


rng = np.random.default_rng(11)


def csr_system(n, density, shift):
    """A well-conditioned random (n, n) system in CSR form, and a right side."""
    dense = rng.normal(size=(n, n)) * (rng.uniform(size=(n, n)) < density)
    dense += shift * np.eye(n)
    rows, cols = np.nonzero(dense)
    indptr = np.searchsorted(rows, np.arange(n + 1)).astype(np.int32)
    data = dense[rows, cols].astype(np.float32)
    return data, cols.astype(np.int32), indptr, rng.normal(size=n).astype(np.float32)


data, indices, indptr, b = csr_system(12, 0.3, 5.0)
show("spsolve", lambda: sl.spsolve(data, indices, indptr, b))
show("spsolve jit", lambda: jax.jit(sl.spsolve)(data, indices, indptr, b))
show("spsolve reorder0", lambda: sl.spsolve(data, indices, indptr, b, reorder=0))
d2, i2, p2, b2 = csr_system(40, 0.1, 3.0)
show("spsolve 40", lambda: sl.spsolve(d2, i2, p2, b2))
show("spsolve grad b", lambda: jax.grad(
    lambda v: jnp.sum(jnp.sin(sl.spsolve(data, indices, indptr, v))))(b))
show("spsolve jvp b", lambda: jax.jvp(
    lambda v: sl.spsolve(data, indices, indptr, v), (b,), (jnp.ones_like(b),)))
show("spsolve jvp data", lambda: jax.jvp(
    lambda d: sl.spsolve(d, indices, indptr, b), (data,), (jnp.ones_like(data),))[1])
show("spsolve grad data", lambda: jax.grad(
    lambda d: jnp.sum(sl.spsolve(d, indices, indptr, b)))(data))
show("spsolve vmap", lambda: jax.vmap(
    lambda v: sl.spsolve(data, indices, indptr, v))(np.stack([b, 2 * b])))
show("spsolve dtype", lambda: sl.spsolve(data, indices, indptr, b.astype(np.int32)))
show("spsolve float index", lambda: sl.spsolve(data, indices.astype(np.float32), indptr, b))
show("spsolve 2d", lambda: sl.spsolve(data, indices, indptr, b[:, None]))
show("spsolve sizes", lambda: sl.spsolve(data, indices, indptr[:-1], b))
show("spsolve reorder", lambda: sl.spsolve(data, indices, indptr, b, reorder=7))


def top(theta, U, i, A):
    """The eigenvalues and whether each pair's residual is small."""
    A = np.asarray(A(np.eye(U.shape[0], dtype=np.float32)) if callable(A) else A)
    U, theta = np.asarray(U), np.asarray(theta)
    resid = np.linalg.norm(A @ U - U * theta, axis=0)
    return [theta, (resid < 1e-3 * np.abs(theta).max()).astype(np.int32),
            np.int32(abs(np.linalg.norm(U, axis=0) - 1).max() < 1e-4)]


diag = np.diag(np.arange(1, 61, dtype=np.float32))
X0 = rng.normal(size=(60, 4)).astype(np.float32)
show("lobpcg diag", lambda: top(*sl.lobpcg_standard(diag, X0), diag))
G = rng.normal(size=(80, 80)).astype(np.float32)
spd = (G @ G.T / 80).astype(np.float32)
X1 = rng.normal(size=(80, 6)).astype(np.float32)
show("lobpcg spd", lambda: top(*sl.lobpcg_standard(spd, X1, m=300), spd))
show("lobpcg callable", lambda: top(*sl.lobpcg_standard(lambda v: spd @ v, X1, m=300),
                                    lambda v: spd @ v))
sym = ((G + G.T) / 2).astype(np.float32)
show("lobpcg indefinite", lambda: top(*sl.lobpcg_standard(sym, X1[:, :3], m=400), sym))
show("lobpcg jit", lambda: top(*jax.jit(sl.lobpcg_standard, static_argnames="m")(
    diag, X0, m=100), diag))
show("lobpcg k0", lambda: sl.lobpcg_standard(diag, X0[:, :0]))
show("lobpcg k large", lambda: sl.lobpcg_standard(diag, rng.normal(size=(60, 12)).astype(
    np.float32)))
show("lobpcg int matrix", lambda: top(*sl.lobpcg_standard(diag.astype(np.int32), X0), diag))
show("lobpcg dtype", lambda: sl.lobpcg_standard(lambda v: (diag @ v).astype(np.float16), X0))
show("lobpcg shape", lambda: sl.lobpcg_standard(lambda v: v[:-1], X0))

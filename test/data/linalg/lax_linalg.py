"""Records JAX's `lax.linalg` hessenberg, tridiagonal and qdwh on fixed
matrices (float64) into lax_linalg.jax.json, which test_lax_linalg_more.py
compares Ember's results with. Run with JAX's Python:

    build/jaxvenv/bin/python test/data/linalg/lax_linalg.py
"""
import json
import pathlib

import jax
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", True)


def matrices():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    c = rng.standard_normal((4, 4)) + 1j * rng.standard_normal((4, 4))
    tall = rng.standard_normal((5, 3))
    return {"A": a, "S": a + a.T, "C": c, "H": c + c.conj().T, "B": tall}


def encode(x):
    x = np.asarray(x)
    return {"re": np.real(x).tolist(), "im": np.imag(x).tolist()} if np.iscomplexobj(x) \
        else x.tolist()


if __name__ == "__main__":
    m = matrices()
    out = {
        "hessenberg_A": lax.linalg.hessenberg(m["A"]),
        "hessenberg_C": lax.linalg.hessenberg(m["C"]),
        "tridiagonal_S_lower": lax.linalg.tridiagonal(m["S"], lower=True),
        "tridiagonal_S_upper": lax.linalg.tridiagonal(m["S"], lower=False),
        "tridiagonal_H_lower": lax.linalg.tridiagonal(m["H"], lower=True),
        "tridiagonal_H_upper": lax.linalg.tridiagonal(m["H"], lower=False),
        "qdwh_A": lax.linalg.qdwh(m["A"]),
        "qdwh_S": lax.linalg.qdwh(m["S"], is_hermitian=True),
        "qdwh_B": lax.linalg.qdwh(m["B"]),
    }
    path = pathlib.Path(__file__).with_suffix(".jax.json")
    record = {k: [encode(x) for x in v] for k, v in out.items()}
    record["inputs"] = {k: encode(x) for k, x in m.items()}
    path.write_text(json.dumps(record))

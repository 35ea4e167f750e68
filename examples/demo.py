"""Ember demo: a JAX program that runs by changing one import.

A jitted function is traced into the `ember` MLIR dialect, lowered through
linalg to LLVM, JIT-compiled for this CPU and called on NumPy data.
"""

import time

import numpy as np

import ember as jax
import ember.numpy as jnp


@jax.jit
def predict(w, b, x):
    """A two-layer MLP with a softmax output."""
    h = jnp.tanh(x @ w[0] + b[0])
    logits = h @ w[1] + b[1]
    return jax.nn.softmax(logits, axis=-1)


def main():
    rng = np.random.default_rng(0)
    w = [rng.normal(size=(8, 16)).astype(np.float32) / 3,
         rng.normal(size=(16, 3)).astype(np.float32) / 4]
    b = [np.zeros(16, np.float32), np.zeros(3, np.float32)]
    x = rng.normal(size=(4, 8)).astype(np.float32)

    t0 = time.perf_counter()
    p = predict(w, b, x)
    t1 = time.perf_counter()
    p = predict(w, b, x)
    t2 = time.perf_counter()

    print("probabilities (Ember):")
    print(np.asarray(p))
    print("rows sum to one:", np.allclose(np.asarray(p).sum(-1), 1.0, atol=1e-6))

    # The same computation in NumPy, for comparison.
    h = np.tanh(x @ w[0] + b[0])
    z = h @ w[1] + b[1]
    ref = np.exp(z - z.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    print("max |Ember - NumPy|:", float(np.abs(np.asarray(p) - ref).max()))
    print(f"first call (trace + compile): {1e3 * (t1 - t0):.1f} ms, "
          f"second call: {1e6 * (t2 - t1):.0f} us")

    print("\nThe traced Ember IR:")
    print(predict.lower(w, b, x).as_text())


if __name__ == "__main__":
    main()

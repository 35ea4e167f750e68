"""Programs for ember-partition (#22): each is (name, function, arguments),
its first argument the one split over the processes (rows, 8 of them, or
columns, 12: both divide among 2 and 4 processes). test_partition.py
compiles them all with `ember-opt`; test/mpi/spmd_programs.py runs them
under `mpirun` against the replicated program."""

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax

rng = np.random.default_rng(0)
X = rng.normal(size=(8, 12)).astype(np.float32)
W = rng.normal(size=(12, 6)).astype(np.float32)
I = rng.integers(-5, 5, size=(8, 12)).astype(np.int32)


def _mlp(x, w):
    def loss(w):
        return jnp.mean(ember.nn.log_softmax(jnp.tanh(x @ w)) ** 2)
    return ember.value_and_grad(loss)(w)


CORPUS = [
    ("elementwise", lambda x: jnp.sin(x) * 2 + jnp.exp(-x), [X]),
    ("sum rows", lambda x: x.sum(0), [X]),
    ("sum cols", lambda x: x.sum(1), [X]),
    ("sum all", lambda x: x.sum(), [X]),
    ("mean var", lambda x: (x.mean(0), x.var(1)), [X]),
    ("max min", lambda x: (x.max(0), x.min(1), x.max()), [X]),
    ("prod", lambda x: jnp.prod(x, 0), [X]),
    ("argmax", lambda x: jnp.argmax(x, 0), [X]),
    ("keepdims", lambda x: x - x.max(1, keepdims=True), [X]),
    ("softmax", lambda x: ember.nn.softmax(x, axis=1), [X]),
    ("logsumexp", lambda x: ember.nn.logsumexp(x, axis=0), [X]),
    ("matmul", lambda x, w: x @ w, [X, W]),
    ("gram", lambda x: x.T @ x, [X]),
    ("outer", lambda x: x[:, :, None] * x[:, None, :], [X]),
    ("batched", lambda x: jnp.einsum("ij,ik->ijk", x, x).sum(0), [X]),
    ("transpose", lambda x: x.T * 2, [X]),
    ("reshape", lambda x: x.reshape(4, 24).sum(1), [X]),
    ("slice", lambda x: x[1:5, ::2], [X]),
    ("concat", lambda x: jnp.concatenate([x, x * 2], 0), [X]),
    ("pad", lambda x: jnp.pad(x, 1), [X]),
    ("reverse", lambda x: x[::-1], [X]),
    ("cumsum", lambda x: jnp.cumsum(x, 0), [X]),
    ("sort", lambda x: jnp.sort(x, 0), [X]),
    ("where", lambda x: jnp.where(x > 0, x, -x), [X]),
    ("take", lambda x: jnp.take(x, jnp.array([3, 1, 7]), axis=0), [X]),
    ("gather rows", lambda x: x[jnp.array([0, 5])], [X]),
    ("scatter", lambda x: x.at[2].set(0.0), [X]),
    ("iota", lambda x: x * jnp.arange(12.0), [X]),
    ("one_hot", lambda x: ember.nn.one_hot(jnp.argmax(x, 1), 12) * x, [X]),
    ("int", lambda i: (i * 3 % 7).sum(0), [I]),
    ("bool", lambda i: jnp.any(i > 2, axis=0), [I]),
    ("convert", lambda i: i.astype(jnp.float32).mean(0), [I]),
    ("f16", lambda x: x.astype(jnp.float16).sum(0), [X]),
    ("bf16 product", lambda x, w: x.astype(jnp.bfloat16) @ w.astype(jnp.bfloat16), [X, W]),
    ("complex", lambda x: jnp.abs(jnp.fft.fft(x, axis=1)), [X]),
    ("scan", lambda x: lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(12), x), [X]),
    ("while", lambda x: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 2, c[1] + 1),
                                       (x, 0))[0], [X]),
    ("cond", lambda x: lax.cond(x.sum() > 0, lambda: x, lambda: -x), [X]),
    ("mlp grad", _mlp, [X, W]),
    ("conv", lambda x: lax.conv(x[None, None], jnp.ones((1, 1, 3, 3)), (1, 1), "SAME"), [X]),
]



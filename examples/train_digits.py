"""Train an MLP classifier on scikit-learn's bundled 8x8 digits with Ember.

    python examples/train_digits.py [--epochs 18] [--batch-size 64] [--lr 1e-3]

The model is written with ``ember.example_libraries.stax`` and trained with
``optimizers.adam``; one jitted step computes ``value_and_grad`` of the mean
cross-entropy and applies the Adam update. The data set ships with scikit-learn
(1797 images, 10 classes), so nothing is downloaded. Prints per epoch the mean
training loss and the test accuracy, and at the end the final test accuracy.
"""

import argparse
import sys
import time

import numpy as np
from sklearn.datasets import load_digits

import ember as jax
import ember.numpy as jnp
from ember.example_libraries import optimizers, stax


def load_data(seed=0, test_fraction=0.2):
    """Standardized features and integer labels, split into train and test."""
    digits = load_digits()
    x = digits.data.astype(np.float32)
    y = digits.target.astype(np.int32)
    perm = np.random.default_rng(seed).permutation(len(x))
    n_test = round(len(x) * test_fraction)
    test_idx, train_idx = perm[:n_test], perm[n_test:]
    mean = x[train_idx].mean(axis=0)
    std = x[train_idx].std(axis=0)
    std[std == 0] = 1.0  # constant (always-blank) border pixels
    x = (x - mean) / std
    return x[train_idx], y[train_idx], x[test_idx], y[test_idx]


def progress_bar(done, total, width=30):
    filled = int(width * done / total)
    return "[" + "=" * filled + ">" * (filled < width) + "." * (width - filled - 1) + "]"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=18)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_data(args.seed)
    num_classes = 10
    print(f"digits: {len(x_train)} train / {len(x_test)} test, "
          f"{x_train.shape[1]} features, {num_classes} classes")

    init_fun, predict = stax.serial(
        stax.Dense(128), stax.Relu,
        stax.Dense(64), stax.Relu,
        stax.Dense(num_classes), stax.LogSoftmax)
    _, params = init_fun(jax.random.PRNGKey(args.seed), (-1, x_train.shape[1]))

    opt_init, opt_update, get_params = optimizers.adam(args.lr)
    opt_state = opt_init(params)

    def loss_fn(params, x, y_onehot):
        log_probs = predict(params, x)
        return -jnp.mean(jnp.sum(log_probs * y_onehot, axis=-1))

    @jax.jit
    def train_step(i, opt_state, x, y_onehot):
        loss, grads = jax.value_and_grad(loss_fn)(get_params(opt_state), x, y_onehot)
        return loss, opt_update(i, grads, opt_state)

    @jax.jit
    def predict_classes(params, x):
        return jnp.argmax(predict(params, x), axis=-1)

    def accuracy(params):
        return float(np.mean(np.asarray(predict_classes(params, x_test)) == y_test))

    eye = np.eye(num_classes, dtype=np.float32)
    rng = np.random.default_rng(args.seed + 1)
    batches_per_epoch = len(x_train) // args.batch_size  # drop the ragged last batch
    step = 0
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        perm = rng.permutation(len(x_train))
        losses = []
        for b in range(batches_per_epoch):
            idx = perm[b * args.batch_size:(b + 1) * args.batch_size]
            loss, opt_state = train_step(step, opt_state, x_train[idx], eye[y_train[idx]])
            losses.append(loss)
            step += 1
            if sys.stdout.isatty():
                print(f"\repoch {epoch:2d} {progress_bar(b + 1, batches_per_epoch)}",
                      end="", flush=True)
        mean_loss = float(np.mean([float(v) for v in losses]))
        acc = accuracy(get_params(opt_state))
        print(f"\repoch {epoch:2d} {progress_bar(1, 1)} loss {mean_loss:.4f}  "
              f"test acc {acc:6.2%}  ({time.perf_counter() - t0:.2f}s)", flush=True)

    print(f"final test accuracy: {acc:.2%} ({time.perf_counter() - start:.1f}s total)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

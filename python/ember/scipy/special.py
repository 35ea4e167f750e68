"""ember.scipy.special: jax.scipy.special (implemented in `ember._src.scipy_special`,
where `ember.lax`'s special functions share it)."""

from ember import nn as _nn
from ember._src.scipy_special import *  # noqa: F403
from ember._src.scipy_special import __all__ as _names
from ember._src.scipy_special import (
    _float,  # noqa: F401  (scipy.stats uses it)
    _strong,
)
from ember.nn import logsumexp as logsumexp


def softmax(x, axis=None):
    """SciPy's softmax: over every axis by default (jax.nn's is the last)."""
    return _nn.softmax(_strong(x), axis=axis)


def log_softmax(x, axis=None):
    """SciPy's log_softmax: over every axis by default."""
    return _nn.log_softmax(_strong(x), axis=axis)


__all__ = [*_names, "log_softmax", "logsumexp", "softmax"]

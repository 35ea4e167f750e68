"""ember.scipy.special: jax.scipy.special (implemented in `ember._src.scipy_special`,
where `ember.lax`'s special functions share it)."""

from ember._src.scipy_special import *  # noqa: F403
from ember._src.scipy_special import __all__ as _names
from ember._src.scipy_special import _float  # noqa: F401  (scipy.stats uses it)
from ember.nn import log_softmax as log_softmax
from ember.nn import logsumexp as logsumexp
from ember.nn import softmax as softmax

__all__ = [*_names, "log_softmax", "logsumexp", "softmax"]

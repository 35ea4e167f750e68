"""ember.scipy: jax.scipy's modules that Ember provides."""

from ember.scipy import (
    fft,  # noqa: F401
    linalg,  # noqa: F401
    signal,  # noqa: F401
    special,  # noqa: F401
)

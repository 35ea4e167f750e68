"""ember.scipy: the small subset of jax.scipy that Ember provides."""

from ember.scipy import (
    linalg,  # noqa: F401
    special,  # noqa: F401
)

"""ember.scipy.spatial: the jax.scipy.spatial API (`transform`: `Rotation`
and `Slerp`)."""

from ember.scipy.spatial import transform  # noqa: F401

"""`ember.debug`: printing and callbacks from compiled code (like `jax.debug`)."""

from ember._src.callback import debug_callback as callback  # noqa: F401
from ember._src.callback import debug_print as print  # noqa: F401
from ember._src.debugger import breakpoint  # noqa: F401, A004


def visualize_array_sharding(arr, **kwargs):
    """Prints which devices hold which block of a 1-D or 2-D array."""
    import builtins

    from ember._src.mesh import visualize

    builtins.print(visualize(arr.shape, arr.sharding))


def visualize_sharding(shape, sharding, **kwargs):
    import builtins

    from ember._src.mesh import visualize

    builtins.print(visualize(shape, sharding))

"""`ember.debug`: printing and callbacks from compiled code (like `jax.debug`)."""

from ember._src.callback import debug_callback as callback  # noqa: F401
from ember._src.callback import debug_print as print  # noqa: F401
from ember._src.debugger import breakpoint  # noqa: F401, A004


def visualize_array_sharding(arr, **kwargs):
    """Prints which devices hold which block of a 1-D or 2-D array (JAX's
    picture; `scale`, `min_width`, `max_width` as JAX's, colours not drawn)."""
    visualize_sharding(arr.shape, arr.sharding, **kwargs)


def visualize_sharding(shape, sharding, *, use_color=True, scale=1.0, min_width=9,
                       max_width=80, color_map=None):
    """Prints which devices hold which block of an array of `shape` placed
    by `sharding` (JAX's picture without colours)."""
    import builtins

    from ember._src.mesh import visualize

    del use_color, color_map  # (a picture in text; JAX's colours need a terminal)
    builtins.print(visualize(shape, sharding, scale=scale, min_width=min_width,
                             max_width=max_width))


def inspect_array_sharding(value, *, callback):  # noqa: F811  (JAX's keyword)
    """Calls `callback` with the sharding of each array of the pytree
    `value`: at once for arrays, and at trace time under `jit` with the traced
    value's sharding (its NamedSharding when placed on a mesh, else the
    default device's SingleDeviceSharding)."""
    from ember._src import core, devices, tree_util

    def inspect(x):
        if isinstance(x, core.Tracer):
            sharding = x.aval.sharding
            if sharding is None:
                sharding = devices.SingleDeviceSharding(devices.devices()[0])
        else:
            sharding = x.sharding
        callback(sharding)

    tree_util.tree_map(inspect, value)


def log(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False,
        **kwargs):
    """`jax.debug.log`: as `print`, but the message goes to the logging
    module (logger "ember._src.debugging", level INFO, with the caller's file
    and line). Without `fmt`, returns the function that takes it
    (`log(ordered=True)("x={x}", x=x)`)."""
    import copy
    import inspect
    import logging
    import string

    from ember._src.callback import _check_format, debug_callback

    del partitioned
    logger = logging.getLogger("ember._src.debugging")

    def _log(fmt, *c_args, **c_kwargs):
        frame = inspect.stack()[2 if fmt_given else 1]
        record = logger.makeRecord(logger.name, logging.INFO, frame.filename, frame.lineno,
                                   "", (), None)
        del frame
        if not skip_format_check:
            _check_format(fmt, c_args, c_kwargs)
        field = fmt and next(iter(string.Formatter().parse(fmt)))[1]

        def emit(*a, **k):
            if field is not None:
                msg = fmt.format(*a, **k)
            else:
                msg = " ".join((fmt, *(str(v) for v in a)))
            rec = copy.copy(record)
            rec.msg = msg
            logger.handle(rec)

        debug_callback(emit, *c_args, ordered=ordered, **c_kwargs)

    fmt_given = fmt is not None
    if fmt_given:
        _log(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_print received unexpected arguments in the two-call form:"
                        f" {args=} {kwargs=}")
    return _log

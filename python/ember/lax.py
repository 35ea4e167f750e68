"""ember.lax: the primitives of the ember dialect."""

import builtins as _builtins  # noqa: E402
import enum as _enum  # noqa: E402
import functools as _functools  # noqa: E402
import sys as _sys  # noqa: E402

import numpy as _np  # noqa: E402

from ember._src import core as _core  # noqa: E402
from ember._src import lax as _lax_src  # noqa: E402
from ember._src import lax_linalg as linalg  # noqa: F401,E402
from ember._src.api import with_sharding_constraint  # noqa: F401
from ember._src.control_flow import (  # noqa: F401
    associative_scan,
    cond,
    fori_loop,
    map,
    scan,
    switch,
    while_loop,
)
from ember._src.control_flow import associative_scan as _associative_scan  # noqa: E402
from ember._src.convolution import *  # noqa: F401,F403
from ember._src.lax import *  # noqa: F401,F403
from ember._src.lax import abs, complex, max, min, pow, round, slice  # noqa: F401
from ember._src.lax_extras import *  # noqa: F401,F403
from ember._src.numpy import lax_numpy as _jnp  # noqa: E402
from ember._src.parallel import (  # noqa: F401
    all_gather,
    all_to_all,
    axis_size,
    pcast,
    pmax,
    pmean,
    pmin,
    ppermute,
    pshuffle,
    psum,
    psum_scatter,
    pvary,
)


class Precision(_enum.Enum):
    """Precision of a product on accelerators (`precision=` of `dot_general`
    and friends). Ember's CPU products are always full f32 precision."""

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        names = {"default": cls.DEFAULT, "fastest": cls.DEFAULT, "bfloat16": cls.DEFAULT,
                 "high": cls.HIGH, "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
                 "highest": cls.HIGHEST, "float32": cls.HIGHEST}
        return names.get(value) if isinstance(value, str) else None

    def __repr__(self):
        return f"Precision.{self.name}"

    __str__ = __repr__


def collapse(operand, start_dimension, stop_dimension=None):
    """`operand` with the dimensions [start_dimension, stop_dimension) merged
    into one."""
    x = _core.as_value(operand)
    lo = start_dimension % x.ndim if x.ndim else 0
    hi = x.ndim if stop_dimension is None else (
        stop_dimension + x.ndim if stop_dimension < 0 else stop_dimension)
    if not 0 <= lo <= hi <= x.ndim:
        raise ValueError(f"collapse: dimensions [{start_dimension}, {stop_dimension}) are out of "
                         f"range for a rank-{x.ndim} operand")
    size = 1
    for d in x.shape[lo:hi]:
        size *= d
    return _jnp.reshape(x, x.shape[:lo] + (size,) + x.shape[hi:])


def cumlogsumexp(operand, axis=0, reverse=False):
    """log(cumsum(exp(operand))) along `axis`, without overflow (a parallel
    prefix of `logaddexp`)."""
    return _associative_scan(_jnp.logaddexp, operand, reverse=reverse, axis=axis)



def _jax_typed(x):
    """A Python or NumPy scalar as JAX's lax takes it: an array of its own
    default dtype (weakly typed for Python scalars), which the operation
    then requires to equal the other operands' (JAX 0.10.2's lax promotes
    nothing: `lax.add(f32_array, 2)` is its TypeError; jnp promotes)."""
    if isinstance(x, (bool, int, float, _builtins.complex, _np.generic, _np.ndarray)):
        return _core.asarray_concrete(x)
    return x


# What JAX's arithmetic accepts at each position (Ember's own code adds
# and multiplies booleans through the internal functions).
_KINDS = {"add": "num", "sub": "num", "mul": "num", "div": "num", "rem": "intfloat"}


def _same_dtypes(fn):
    name = fn.__name__

    @_functools.wraps(fn)
    def f(*args, **kwargs):
        args = [_jax_typed(a) for a in args]
        if name in _KINDS:
            _lax_src._check_accepts(name, _KINDS[name], *[_core.as_value(a).aval for a in args])
        return fn(*args, **kwargs)

    f._ember_lax = fn  # (lax.reduce and reduce_window recognize it)
    return f


# The binary and ternary elementwise functions (`pow` takes an integer
# exponent, as JAX's; comparisons too need equal dtypes).
for _name in ["add", "sub", "mul", "div", "rem", "max", "min", "atan2", "nextafter",
              "bitwise_and", "bitwise_or", "bitwise_xor", "shift_left",
              "shift_right_logical", "shift_right_arithmetic", "eq", "ne", "lt", "le",
              "gt", "ge", "complex", "clamp"]:
    globals()[_name] = _same_dtypes(globals()[_name])
del _name


# `import jax.lax.linalg` (this module is not a package: the submodule is
# registered under its dotted name, which the import system looks up first).
_sys.modules[__name__ + ".linalg"] = linalg

# JAX's primitive objects (`exp_p`, `add_p`, ...), which the equations of
# `make_jaxpr`'s view name.
from ember._src.lax_primitives import NAMES as _PRIMITIVE_NAMES  # noqa: E402

globals().update(_PRIMITIVE_NAMES)

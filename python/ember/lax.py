"""ember.lax: the primitives of the ember dialect."""

from ember._src.control_flow import (  # noqa: F401
    associative_scan,
    cond,
    fori_loop,
    map,
    scan,
    switch,
    while_loop,
)
from ember._src.convolution import *  # noqa: F401,F403
from ember._src.lax import *  # noqa: F401,F403
from ember._src.lax import abs, complex, max, min, pow, round, slice  # noqa: F401

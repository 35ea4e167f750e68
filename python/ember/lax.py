"""ember.lax: the primitives of the ember dialect."""

from ember._src.lax import *  # noqa: F401,F403
from ember._src.lax import round, max, min, abs, pow, complex, slice  # noqa: F401
from ember._src.control_flow import (  # noqa: F401
    cond, switch, scan, map, fori_loop, while_loop, associative_scan,
)
from ember._src.convolution import *  # noqa: F401,F403

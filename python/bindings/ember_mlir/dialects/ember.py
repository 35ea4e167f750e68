"""Generated Python op classes of the ``ember`` dialect."""

from ._ember_enum_gen import *  # noqa: F401,F403
from ._ember_ops_gen import *  # noqa: F401,F403

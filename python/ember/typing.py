"""ember.typing: type aliases as in jax.typing."""

from collections.abc import Sequence
from typing import Any

import numpy as np

from ember._src.core import Array

ArrayLike = Array | np.ndarray | np.bool_ | np.number | bool | int | float | complex
DTypeLike = str | type | np.dtype | Any
ShapeLike = Sequence[int]

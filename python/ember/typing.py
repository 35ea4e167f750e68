"""ember.typing: type aliases as in jax.typing."""

from typing import Any, Sequence, Union

import numpy as np

from ember._src.core import Array

ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
DTypeLike = Union[str, type, np.dtype, Any]
ShapeLike = Sequence[int]

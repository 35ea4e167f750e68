"""ember.numpy.linalg: the jax.numpy.linalg API (implemented in `ember._src.numpy.linalg`)."""

from ember._src.numpy.linalg import (
    cholesky as cholesky,
)
from ember._src.numpy.linalg import (
    cond as cond,
)
from ember._src.numpy.linalg import (  # noqa: E402  (the Array API's names)
    cross as cross,
)
from ember._src.numpy.linalg import (
    det as det,
)
from ember._src.numpy.linalg import (
    diagonal as diagonal,
)
from ember._src.numpy.linalg import (
    eig as eig,
)
from ember._src.numpy.linalg import (
    eigh as eigh,
)
from ember._src.numpy.linalg import (
    eigvals as eigvals,
)
from ember._src.numpy.linalg import (
    eigvalsh as eigvalsh,
)
from ember._src.numpy.linalg import (
    inv as inv,
)
from ember._src.numpy.linalg import (
    lstsq as lstsq,
)
from ember._src.numpy.linalg import (
    matmul as matmul,
)
from ember._src.numpy.linalg import (
    matrix_norm as matrix_norm,
)
from ember._src.numpy.linalg import (
    matrix_power as matrix_power,
)
from ember._src.numpy.linalg import (
    matrix_rank as matrix_rank,
)
from ember._src.numpy.linalg import (
    matrix_transpose as matrix_transpose,
)
from ember._src.numpy.linalg import (
    multi_dot as multi_dot,
)
from ember._src.numpy.linalg import (
    norm as norm,
)
from ember._src.numpy.linalg import (
    outer as outer,
)
from ember._src.numpy.linalg import (
    pinv as pinv,
)
from ember._src.numpy.linalg import (
    qr as qr,
)
from ember._src.numpy.linalg import (
    slogdet as slogdet,
)
from ember._src.numpy.linalg import (
    solve as solve,
)
from ember._src.numpy.linalg import (
    svd as svd,
)
from ember._src.numpy.linalg import (
    svdvals as svdvals,
)
from ember._src.numpy.linalg import (
    tensordot as tensordot,
)
from ember._src.numpy.linalg import (
    tensorinv as tensorinv,
)
from ember._src.numpy.linalg import (
    tensorsolve as tensorsolve,
)
from ember._src.numpy.linalg import (
    trace as trace,
)
from ember._src.numpy.linalg import (
    vecdot as vecdot,
)
from ember._src.numpy.linalg import (
    vector_norm as vector_norm,
)

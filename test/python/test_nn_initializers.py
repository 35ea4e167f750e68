"""`ember.nn.initializers` and `random.orthogonal`: the same keys give the
values JAX 0.10.2 gives (recorded)."""

import numpy as np
import pytest

from ember import random
from ember.nn import initializers as init

KEY = random.key(0)


@pytest.mark.parametrize("make,shape,want", [
    (init.glorot_normal(), (3, 2), [[1.0468423, 1.2329134], [-0.29671577, -0.05394943],
                                    [0.12079362, -0.65617436]]),
    (init.lecun_uniform(), (2, 2), [[1.0965558, 1.1722765], [-0.4108003, -0.07674628]]),
    (init.he_uniform(), (4, 3), [[1.0965558, 1.1722765, -0.4108003],
                                 [-0.07674628, 0.1711917, -0.81934696],
                                 [-0.46492636, 0.46413067, 0.6044522],
                                 [-0.8058465, 1.1888692, -1.1628153]]),
    (init.normal(0.5), (3,), [0.8113211, 1.0126324, -0.21679722]),
    (init.truncated_normal(0.1), (4,), [0.14559592, 0.17147487, -0.04126754, -0.00750334]),
    (init.uniform(2.0), (3,), [1.895334, 1.9571598, 0.66458297]),
    (init.orthogonal(), (3, 3), [[0.9554101, 0.29413575, 0.02599558],
                                 [-0.04628982, 0.23614088, -0.9706156],
                                 [-0.29163137, 0.9261326, 0.23922686]]),
    (init.orthogonal(2.0, column_axis=0), (2, 3), [[1.9216733, -0.51350003, 0.20854208],
                                                   [0.37209678, 0.6376224, -1.858758]]),
    (init.delta_orthogonal(), (3, 2, 2), [[[0.0, 0.0], [0.0, 0.0]],
                                          [[0.9661029577, 0.2581572533],
                                           [-0.2581572533, 0.9661028981]],
                                          [[0.0, 0.0], [0.0, 0.0]]]),
    (init.delta_orthogonal(2.0), (2, 3, 2, 3),
     [[[[0.0] * 3] * 2, [[1.9216732979, -0.5135000348, 0.2085420787],
                         [0.3720967770, 0.6376224160, -1.8587580919]], [[0.0] * 3] * 2],
      [[[0.0] * 3] * 2] * 3]),
    (init.constant(2.0), (2,), [2.0, 2.0]),
    (init.zeros, (2,), [0.0, 0.0]),
])
def test_matches_jax(make, shape, want):
    np.testing.assert_allclose(np.asarray(make(KEY, shape)), want, rtol=2e-6, atol=2e-7)


def test_variance_scaling_convolution_fans():
    got = np.asarray(init.variance_scaling(0.5, "fan_out", "normal")(KEY, (3, 3, 2, 2)))
    np.testing.assert_allclose(got.ravel()[:6], [0.27044037, 0.33754414, -0.07226574,
                                                 -0.01310289, 0.02934848, -0.16201487],
                               rtol=2e-6)
    with pytest.raises(ValueError, match="invalid mode"):
        init.variance_scaling(1.0, "fan_sideways", "normal")(KEY, (2, 2))
    with pytest.raises(ValueError, match="at least 2D"):
        init.glorot_normal()(KEY, (3,))


def test_random_orthogonal():
    q = np.asarray(random.orthogonal(KEY, 3, (2,)))
    np.testing.assert_allclose(q.ravel()[:5], [0.9554101, 0.29413575, 0.02599558,
                                               -0.04628982, 0.23614088], rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(q[1] @ q[1].T, np.eye(3), atol=1e-5)
    wide = np.asarray(random.orthogonal(KEY, 2, m=4))
    assert wide.shape == (2, 4)
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-5)


def test_delta_orthogonal_errors():
    # JAX's ValueErrors: rank 3 to 5, fan-in at most fan-out.
    with pytest.raises(ValueError, match="requires a 3D, 4D or 5D shape"):
        init.delta_orthogonal()(KEY, (3, 3))
    with pytest.raises(ValueError, match="`fan_in` must be less or equal than `fan_out`"):
        init.delta_orthogonal()(KEY, (3, 3, 2))

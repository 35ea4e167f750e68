"""`ember.extend.random` and `ember.extend.backend` (JAX's `jax.extend`);
the hashes are JAX 0.10.2's values."""

import numpy as np

import ember
import ember.numpy as jnp
from ember.extend import backend, random


def test_threefry_2x32_is_jaxs():
    got = random.threefry_2x32((np.uint32(1), np.uint32(2)), jnp.arange(5, dtype=jnp.uint32))
    np.testing.assert_array_equal(
        got, [2052595727, 3504730591, 2527474599, 1880214352, 1914734168])
    got = random.threefry_2x32(jnp.array([7, 9], dtype=jnp.uint32),
                               jnp.arange(6, dtype=jnp.uint32).reshape(2, 3))
    np.testing.assert_array_equal(got, [[1292300866, 1497733052, 533071927],
                                        [3767477245, 761891235, 1243716603]])
    # under jit too
    np.testing.assert_array_equal(
        ember.jit(lambda c: random.threefry_2x32((np.uint32(1), np.uint32(2)), c))(
            jnp.arange(5, dtype=jnp.uint32))[:2], [2052595727, 3504730591])


def test_seed_with_impl():
    k = random.seed_with_impl(random.rbg_prng_impl, 3)
    assert str(k.dtype) == "key<rbg>"
    np.testing.assert_array_equal(ember.random.key_data(k), [0, 3, 0, 3])
    assert str(random.seed_with_impl(random.threefry_prng_impl, 0).dtype) == "key<fry>"


def test_backend():
    b = backend.get_backend()
    assert b.platform == "cpu"
    assert b.device_count() == len(ember.devices())
    assert b.local_devices() == ember.local_devices()
    assert "cpu" in backend.backends()
    assert backend.get_default_device() == ember.devices()[0]
    backend.clear_backends()
    assert float(ember.jit(lambda x: x + 1)(1.0)) == 2.0

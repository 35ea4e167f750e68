"""Top-level jax names and small public modules (ember._src.api_extras,
ember.image, ember.custom_batching, ember.custom_derivatives,
ember.profiler, ember.monitoring, ember.stages, ember.dlpack), checked
against JAX 0.10.2's behaviour and values recorded from it."""

import gzip
import json
import os

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import custom_batching, custom_derivatives, dlpack, image, monitoring, profiler, stages

# ---------------------------------------------------------------------------
# Values recorded from JAX 0.10.2 (jax.image on the CPU):
#   img = ((np.arange(12) * 7 % 12) / 11).reshape(3, 4).astype(np.float32)
# ---------------------------------------------------------------------------

IMG = ((np.arange(12) * 7 % 12) / 11).reshape(3, 4).astype(np.float32)

RESIZE = {
    ('nearest', (5, 6), True): [
        0, 0.6363636, 0.6363636, 0.1818182, 0.8181818, 0.8181818, 0, 0.6363636, 0.6363636,
        0.1818182, 0.8181818, 0.8181818, 0.3636364, 1, 1, 0.5454546, 0.09090909, 0.09090909,
        0.7272727, 0.2727273, 0.2727273, 0.9090909, 0.4545455, 0.4545455, 0.7272727, 0.2727273,
        0.2727273, 0.9090909, 0.4545455, 0.4545455
    ],
    ('nearest', (2, 3), True): [0, 0.1818182, 0.8181818, 0.7272727, 0.9090909, 0.4545455],
    ('nearest', (2, 3), False): [0, 0.1818182, 0.8181818, 0.7272727, 0.9090909, 0.4545455],
    ('linear', (5, 6), True): [
        0, 0.3181818, 0.560606, 0.2575757, 0.5, 0.8181818, 0.1454546, 0.4636364, 0.7060606,
        0.4030302, 0.4272727, 0.5272727, 0.3636364, 0.6818182, 0.9242424, 0.6212121, 0.3181818,
        0.09090909, 0.5818182, 0.5727273, 0.5969697, 0.7303031, 0.5363637, 0.309091, 0.7272727,
        0.5, 0.3787879, 0.8030304, 0.6818182, 0.4545455
    ],
    ('linear', (2, 3), True): [0.3272728, 0.5454546, 0.4772728, 0.5772728, 0.659091, 0.4545455],
    ('linear', (2, 3), False): [0.1969697, 0.5, 0.5757576, 0.6060606, 0.6363637, 0.4393939],
    ('cubic', (5, 6), True): [
        -0.06931011, 0.298759, 0.582714, 0.1748618, 0.5081224, 0.9203532, 0.06618244, 0.4633251,
        0.7725953, 0.3469206, 0.3977971, 0.5635042, 0.3217705, 0.6898397, 0.9873739, 0.6338384,
        0.2780749, 0.06100478, 0.6207421, 0.5672441, 0.5763041, 0.7955866, 0.5462528, 0.2613191,
        0.790038, 0.4597923, 0.2785403, 0.8701165, 0.7381699, 0.4520855
    ],
    ('cubic', (2, 3), True): [0.309249, 0.5586088, 0.4576646, 0.5820588, 0.6841013, 0.4358397],
    ('cubic', (2, 3), False): [0.1414101, 0.4965162, 0.6181105, 0.6333637, 0.6478102, 0.4287446],
    ('lanczos3', (5, 6), True): [
        -0.09465514, 0.3014118, 0.5511603, 0.153192, 0.5141518, 0.9900846, -0.002881589, 0.4817273,
        0.8261586, 0.3397935, 0.343618, 0.5836215, 0.2920678, 0.6854857, 1.030087, 0.6811047,
        0.2358302, 0.06200236, 0.6618547, 0.5615516, 0.5992908, 0.848111, 0.5452435, 0.200335,
        0.8288903, 0.412315, 0.2359638, 0.8594185, 0.7942782, 0.4575687
    ],
    ('lanczos3', (2, 3), True): [0.3297922, 0.5766211, 0.4133331, 0.5749295, 0.7086301, 0.4322137],
    ('lanczos3', (2, 3), False): [
        0.1489613, 0.5262869, 0.5880308, 0.6350275, 0.6857026, 0.4207957
    ],
    ('lanczos5', (5, 6), True): [
        -0.1035322, 0.33135, 0.5244842, 0.1614436, 0.5031377, 1.023085, -0.05858993, 0.4971042,
        0.8644943, 0.3331608, 0.2936955, 0.6164243, 0.2898288, 0.6617905, 1.062549, 0.7068009,
        0.2135058, 0.07353283, 0.7085075, 0.5449938, 0.6157563, 0.886802, 0.5507092, 0.1542302,
        0.8335474, 0.3898516, 0.2206283, 0.8377668, 0.8171033, 0.4584728
    ],
    ('lanczos5', (2, 3), True): [0.3422832, 0.5845189, 0.3869807, 0.5665385, 0.7192037, 0.4320949],
    ('lanczos5', (2, 3), False): [0.1566926, 0.5485974, 0.559402, 0.6335782, 0.7168527, 0.4190268],
    ('cubic-pytorch', (5, 6), True): [
        -0.06931011, 0.298759, 0.582714, 0.1748618, 0.5081224, 0.9203532, 0.06618244, 0.4633251,
        0.7725953, 0.3469206, 0.3977971, 0.5635042, 0.3217705, 0.6898397, 0.9873739, 0.6338384,
        0.2780749, 0.06100478, 0.6207421, 0.5672441, 0.5763041, 0.7955866, 0.5462528, 0.2613191,
        0.790038, 0.4597923, 0.2785403, 0.8701165, 0.7381699, 0.4520855
    ],
    ('cubic-pytorch', (5, 6), False): [
        -0.09014896, 0.3258864, 0.5785925, 0.1588618, 0.4748409, 0.9523306, 0.05285104, 0.522341,
        0.8116683, 0.3671497, 0.3532954, 0.5283154, 0.3083965, 0.7244318, 0.9978956, 0.6611951,
        0.2755682, 0.05145212, 0.6150781, 0.5767499, 0.6182137, 0.8093313, 0.5476137, 0.2148161,
        0.8107298, 0.4130682, 0.268613, 0.8673872, 0.7862046, 0.4499976
    ],
    ('cubic-pytorch', (2, 3), True): [
        0.309249, 0.5586088, 0.4576646, 0.5820588, 0.6841013, 0.4358397
    ],
    ('cubic-pytorch', (2, 3), False): [
        0.1749937, 0.524636, 0.5762098, 0.6211497, 0.6716531, 0.4240879
    ],
    ('area', (5, 6), True): [
        0, 0.3181818, 0.6363636, 0.1818182, 0.5000001, 0.8181818, 0.1212121, 0.439394, 0.7575758,
        0.3030303, 0.439394, 0.5757576, 0.3636364, 0.6818182, 1, 0.5454546, 0.3181818, 0.09090909,
        0.6060607, 0.5606061, 0.5151514, 0.7878789, 0.5606061, 0.3333334, 0.7272727, 0.5,
        0.2727273, 0.9090909, 0.6818181, 0.4545455
    ],
    ('area', (2, 3), True): [0.2803031, 0.530303, 0.5075758, 0.5833334, 0.6515152, 0.4469697],
    ('area', (2, 3), False): [0.2803031, 0.530303, 0.5075758, 0.5833334, 0.6515152, 0.4469697],
}
SAT = {
    'linear': [
        0.2319347, 0.4640152, 0.5936639, 0.474359, 0.6382576, 0.2741047, 0.5699301, 0.6420455,
        0.3760331, 0.6048951, 0.6022727, 0.5578513
    ],
    'cubic': [
        0.2037072, 0.4492028, 0.6297949, 0.4820597, 0.675285, 0.1734028, 0.5864871, 0.6699358,
        0.3204992, 0.5957484, 0.5971531, 0.5888156
    ],
    'lanczos3': [
        0.2102618, 0.4561084, 0.599528, 0.4950396, 0.6614485, 0.1264833, 0.6139695, 0.6771642,
        0.2901272, 0.5558549, 0.5830464, 0.6559337
    ],
    'area': [
        0.1272727, 0.3863637, 0.7692307, 0.4909091, 0.7500001, 0.1258742, 0.5636364, 0.6863636,
        0.3076924, 0.6363637, 0.6227273, 0.4895106
    ],
}
U8_BILINEAR = [0, 31.25, 68.75, 100, 75, 106.25, 143.75, 175, 150, 181.25, 218.75, 250]  # float32
TRILINEAR = [
    0.01020408, 0.07142857, 0.1326531, 0.2142857, 0.3571429, 0.5, 0.4183673, 0.6428571, 0.8673469
]


# ---------------------------------------------------------------------------
# jax.image
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", list(RESIZE), ids=lambda k: f"{k[0]}-{k[1]}-{k[2]}")
def test_resize_matches_jax(key):
    method, shape, antialias = key
    out = image.resize(IMG, shape, method, antialias=antialias)
    assert out.shape == shape and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out).ravel(), RESIZE[key], rtol=2e-6, atol=2e-6)


def test_resize_method_names_and_enum():
    assert [m.value for m in image.ResizeMethod] == [0, 1, 2, 3, 4, 5, 6]
    assert image.ResizeMethod.from_string("bicubic") is image.ResizeMethod.CUBIC
    assert image.ResizeMethod.from_string("trilinear") is image.ResizeMethod.LINEAR
    a = image.resize(IMG, (5, 6), "bilinear")
    b = image.resize(IMG, (5, 6), image.ResizeMethod.LINEAR)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="Unknown resize method"):
        image.resize(IMG, (5, 6), "bogus")
    with pytest.raises(ValueError, match="shape must have length"):
        image.resize(IMG, (5,), "linear")


def test_resize_dtypes_and_3d():
    u8 = np.array([[0, 50, 100], [150, 200, 250]], np.uint8)
    out = image.resize(u8, (3, 4), "bilinear")
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out).ravel(), U8_BILINEAR, rtol=1e-6)
    near = image.resize(u8, (4, 6), "nearest")
    assert near.dtype == np.uint8 and near.shape == (4, 6)
    vol = (np.arange(8).reshape(2, 2, 2) ** 2 / 49).astype(np.float32)
    np.testing.assert_allclose(np.asarray(image.resize(vol, (3, 3, 1), "trilinear")).ravel(),
                               TRILINEAR, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("method", list(SAT))
def test_scale_and_translate_matches_jax(method):
    out = image.scale_and_translate(IMG, (4, 3), (0, 1), jnp.array([1.5, 0.6]),
                                    jnp.array([-0.5, 0.25]), method)
    np.testing.assert_allclose(np.asarray(out).ravel(), SAT[method], rtol=2e-6, atol=2e-6)


def test_resize_under_jit_and_grad():
    f = jax.jit(lambda x: image.resize(x, (5, 6), "linear"))
    np.testing.assert_allclose(np.asarray(f(IMG)).ravel(), RESIZE[("linear", (5, 6), True)],
                               rtol=2e-6, atol=2e-6)
    # Resizing is linear: the gradient of the sum is the weights' row sums.
    g = jax.grad(lambda x: image.resize(x, (6, 8), "linear").sum())(jnp.asarray(IMG))
    np.testing.assert_allclose(np.asarray(g), np.full((3, 4), 4.0), rtol=1e-5)
    with pytest.raises(ValueError, match="Nearest neighbor"):
        image.scale_and_translate(IMG, (4, 3), (0, 1), jnp.ones(2), jnp.zeros(2), "nearest")


# ---------------------------------------------------------------------------
# custom_gradient and closure_convert
# ---------------------------------------------------------------------------


def _fd(f, x, eps=1e-3):
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def test_custom_gradient_true_gradient_matches_finite_differences():
    @jax.custom_gradient
    def f(x):
        y = jnp.sin(x) * x
        return y, lambda g: (g * (jnp.cos(x) * x + jnp.sin(x)),)

    for x in (0.3, 1.7, -2.2):
        assert float(f(x)) == pytest.approx(np.sin(x) * x, rel=1e-6)
        fd = _fd(lambda v: np.sin(v) * v, x)
        assert float(jax.grad(f)(x)) == pytest.approx(fd, rel=1e-4)
        assert float(jax.jit(jax.grad(f))(x)) == pytest.approx(fd, rel=1e-4)


def test_custom_gradient_replaces_derivative():
    @jax.custom_gradient
    def clip_gradient(x):
        return x, lambda g: jnp.clip(g, -1.0, 1.0)  # a single cotangent, not a tuple

    assert float(jax.grad(lambda x: 5.0 * clip_gradient(x))(2.0)) == 1.0
    assert float(jax.grad(lambda x: -5.0 * clip_gradient(x))(2.0)) == -1.0
    assert float(jax.grad(lambda x: 0.5 * clip_gradient(x))(2.0)) == 0.5


def test_custom_gradient_several_arguments_closures_and_vmap():
    @jax.custom_gradient
    def mul(x, y):
        return x * y, lambda g: (g * y, 3.0 * g * x)

    gx, gy = jax.grad(mul, argnums=(0, 1))(2.0, 5.0)
    assert (float(gx), float(gy)) == (5.0, 6.0)
    # y = x**2: d/dx = y + 3 x * 2x = 4 + 24
    assert float(jax.jit(jax.grad(lambda x: mul(x, x * x)))(2.0)) == 28.0
    xs = jnp.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(jax.vmap(jax.grad(lambda x: mul(x, 2.0)))(xs)),
                               [2.0, 2.0, 2.0])
    assert float(mul(3.0, y=4.0)) == 12.0


def test_closure_convert():
    def outer(c):
        def f(x):
            return jnp.sin(c * x)
        conv, consts = jax.closure_convert(f, 1.0)
        return conv, consts

    conv, consts = outer(2.0)  # outside traces: nothing to hoist
    assert consts == []
    assert float(conv(0.5)) == pytest.approx(np.sin(1.0), rel=1e-6)

    def loss(c):
        conv, consts = outer(c)
        assert len(consts) == 1
        return conv(0.5, *consts)
    assert float(jax.grad(loss)(2.0)) == pytest.approx(0.5 * np.cos(1.0), rel=1e-5)
    assert float(jax.jit(loss)(2.0)) == pytest.approx(np.sin(1.0), rel=1e-6)
    assert custom_derivatives.closure_convert is jax.closure_convert
    assert custom_derivatives.custom_gradient is jax.custom_gradient
    assert custom_derivatives.custom_vjp is jax.custom_vjp


# ---------------------------------------------------------------------------
# Scopes, compile-time evaluation, caches
# ---------------------------------------------------------------------------


def test_named_scope_and_named_call():
    @jax.jit
    def f(x):
        with jax.named_scope("layer"):
            return x * 2

    assert float(f(3.0)) == 6.0
    with pytest.raises(TypeError, match="must be a string"):
        jax.named_scope(3)

    @jax.named_scope("deco")
    def g(x):
        return x + 1
    assert float(g(1.0)) == 2.0
    h = jax.named_call(lambda x: x * x, name="sq")
    assert float(jax.jit(h)(3.0)) == 9.0
    assert jax.named_call(g).__name__ == "g"


def test_ensure_compile_time_eval_inside_jit(cpu_platform):
    seen = []

    @jax.jit
    def f(x):
        with jax.ensure_compile_time_eval():
            y = jnp.sin(3.0)
            z = jnp.arange(4).sum()
            w = x * 2  # a traced value stays traced
            positive = y > 0
        seen.append((type(y).__name__, int(z), type(w).__name__))
        if positive:  # concrete: Python control flow works
            return jnp.sin(x) + w
        return jnp.cos(x)

    assert float(f(1.0)) == pytest.approx(np.sin(1.0) + 2.0, rel=1e-6)
    assert seen[0][0] == "Array" and seen[0][1] == 6 and seen[0][2] != "Array"
    with jax.ensure_compile_time_eval():  # outside traces too
        assert float(jnp.cos(0.0)) == 1.0


def test_clear_caches_then_recompile(compiles):
    f = jax.jit(lambda x: x * 3 + 1)
    assert float(f(2.0)) == 7.0
    n = compiles[0]
    assert float(f(2.0)) == 7.0 and compiles[0] == n
    jax.clear_caches()
    assert float(f(2.0)) == 7.0
    assert compiles[0] == n + 1  # compiled again


def test_live_arrays_and_copy_to_host_async():
    a = jnp.arange(5.0) + 1
    live = jax.live_arrays()
    assert any(x is a for x in live)
    assert jax.copy_to_host_async(a) is a
    tree = {"a": a, "b": 3}
    assert jax.copy_to_host_async(tree) is tree


# ---------------------------------------------------------------------------
# Configuration states, float0, processes
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,value", [
    ("log_compiles", True), ("explain_cache_misses", True), ("check_tracer_leaks", True),
    ("debug_key_reuse", True), ("enable_checks", True), ("numpy_rank_promotion", "raise"),
    ("numpy_dtype_promotion", "strict"), ("default_matmul_precision", "highest"),
    ("transfer_guard_host_to_device", "disallow"),
    ("transfer_guard_device_to_device", "log"), ("transfer_guard_device_to_host", "allow"),
])
def test_config_states(name, value):
    state = getattr(jax, name)
    option = "jax_" + name
    old = state.value
    with state(value):
        assert state.value == value and getattr(jax.config, option) == value
        assert float(jax.jit(lambda x: x + 1)(1.0)) == 2.0
    assert state.value == old
    jax.config.update(option, value)
    try:
        assert state.value == value
    finally:
        jax.config.update(option, old)


def test_every_jax_option_is_accepted():
    """Each of JAX 0.10.2's configuration options can be set (a program
    for JAX may set any; most are recorded only), type-checked by default."""
    from ember._src.jax_options import RECORDED

    assert len(RECORDED) >= 100 and "jax_remat3" in RECORDED
    for name, default in RECORDED.items():
        assert getattr(jax.config, name) == default
    jax.config.update("jax_remat3", True)
    jax.config.update("jax_traceback_filtering", "off")
    try:
        assert jax.config.jax_remat3 is True
        assert float(jax.jit(lambda x: x * 2)(2.0)) == 4.0
    finally:
        jax.config.update("jax_remat3", False)
        jax.config.update("jax_traceback_filtering", "auto")
    with pytest.raises(TypeError, match="a bool is required"):
        jax.config.update("jax_remat3", "yes")
    with pytest.raises(TypeError, match="an int is required"):
        jax.config.update("jax_captured_constants_warn_bytes", True)
    with pytest.raises(AttributeError, match="Unrecognized config option"):
        jax.config.update("jax_no_such_option", 1)


def test_config_default_device_and_platforms(tmp_path):
    cpu = jax.devices("cpu")[0]
    jax.config.update("jax_default_device", cpu)
    try:
        assert jax.config.jax_default_device is cpu
        assert float(jax.jit(lambda x: x + 1)(1.0)) == 2.0
        jax.config.update("jax_default_device", "cpu")
        assert (jnp.ones(2) + 1).devices() == {cpu}
    finally:
        jax.config.update("jax_default_device", None)
    with pytest.raises(RuntimeError, match="Unknown backend"):
        jax.config.update("jax_default_device", "tpu")
    assert jax.config.jax_default_device is None
    # jax_platforms, set before the first use of a device (a fresh process).
    import subprocess
    import sys
    code = ("import ember as jax\njax.config.update('jax_platforms', 'cpu')\n"
            "print(jax.default_backend(), len(jax.devices()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split()[0] == "cpu", out.stderr
    code = "import ember as jax\njax.config.update('jax_platforms', 'tpu')\njax.devices()\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "Unknown platform 'tpu'" in out.stderr


def test_config_state_validation_and_defaults():
    with pytest.raises(ValueError, match="new enum value"):
        jax.numpy_rank_promotion("sometimes")
    with pytest.raises(ValueError):
        jax.config.update("jax_default_matmul_precision", "fastest")
    with pytest.raises(TypeError, match="requires an argument"):
        jax.numpy_rank_promotion()
    assert jax.numpy_rank_promotion.value == "allow"
    assert jax.default_matmul_precision.value is None
    with jax.enable_checks():  # bool states default to True
        assert jax.enable_checks.value is True
    with jax.checking_leaks():
        assert jax.check_tracer_leaks.value is True
    assert jax.check_tracer_leaks.value is False
    with jax.transfer_guard("disallow"):
        assert jax.transfer_guard_host_to_device.value == "disallow"
        assert jax.transfer_guard_device_to_host.value == "disallow"
    assert jax.transfer_guard_device_to_device.value is None

    @jax.numpy_rank_promotion("warn")
    def f():
        return jax.numpy_rank_promotion.value
    assert f() == "warn" and jax.numpy_rank_promotion.value == "allow"


def test_float0_and_processes():
    assert jax.float0 == np.dtype([("float0", "V")])
    assert jax.float0.itemsize == 0
    assert np.zeros((2, 3), jax.float0).shape == (2, 3)
    assert jax.host_count() == jax.process_count() == 1
    assert jax.host_id() == jax.process_index() == 0
    assert jax.host_ids() == jax.process_indices() == [0]
    text = jax.print_environment_info(return_string=True)
    assert "ember" in text and "numpy" in text and "process_count: 1" in text


# ---------------------------------------------------------------------------
# Building arrays from blocks
# ---------------------------------------------------------------------------


def test_make_array_from_callback(devices8):
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    sharding = jax.NamedSharding(mesh, jax.P("x", "y"))
    data = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    calls = []

    def cb(index):
        calls.append(index)
        return data[index]

    arr = jax.make_array_from_callback((8, 6), sharding, cb)
    assert arr.shape == (8, 6) and arr.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(arr), data)
    assert arr.sharding == sharding
    assert len(calls) == 8 and all(data[i].shape == (2, 3) for i in calls)

    replicated = jax.NamedSharding(mesh, jax.P())
    calls.clear()
    arr = jax.make_array_from_callback((8, 6), replicated, cb)
    np.testing.assert_array_equal(np.asarray(arr), data)
    assert len(calls) == 1
    with pytest.raises(ValueError, match="Expected shard shape"):
        jax.make_array_from_callback((8, 6), sharding, lambda i: np.zeros((1, 1), np.float32))
    with pytest.raises(ValueError, match="must match the dtype"):
        jax.make_array_from_callback((8, 6), sharding, cb, dtype=np.int32)


def test_make_array_from_single_device_arrays_and_process_local_data(devices8):
    mesh = jax.make_mesh((8,), ("x",))
    sharding = jax.NamedSharding(mesh, jax.P("x"))
    data = np.arange(16, dtype=np.int32).reshape(8, 2)
    index_map = sharding.devices_indices_map((8, 2))
    pieces = [jax.device_put(data[idx], d) for d, idx in index_map.items()]
    arr = jax.make_array_from_single_device_arrays((8, 2), sharding, pieces[::-1])
    np.testing.assert_array_equal(np.asarray(arr), data)  # matched by device
    assert arr.sharding == sharding
    arr = jax.make_array_from_process_local_data(sharding, data)
    np.testing.assert_array_equal(np.asarray(arr), data)
    assert arr.sharding == sharding
    with pytest.raises(ValueError, match="global_shape"):
        jax.make_array_from_process_local_data(sharding, data, (16, 2))


# ---------------------------------------------------------------------------
# custom_batching
# ---------------------------------------------------------------------------


def test_custom_vmap_rule_applies_under_vmap():
    @custom_batching.custom_vmap
    def f(x, y):
        return x + y

    @f.def_vmap
    def rule(axis_size, in_batched, x, y):
        rule.calls.append((axis_size, list(in_batched)))
        out = x + y + 100.0  # distinguishable from batching f
        return out, any(in_batched)
    rule.calls = []

    assert float(f(1.0, 2.0)) == 3.0
    xs = jnp.arange(3.0)
    out = jax.vmap(f, in_axes=(0, None))(xs, 1.0)
    np.testing.assert_allclose(np.asarray(out), [101.0, 102.0, 103.0])
    assert rule.calls[-1] == (3, [True, False])
    out = jax.jit(jax.vmap(f))(xs, xs)
    np.testing.assert_allclose(np.asarray(out), [100.0, 102.0, 104.0])
    out = jax.vmap(f, in_axes=(1, None), out_axes=1)(jnp.ones((2, 3)), 0.0)
    assert out.shape == (2, 3)

    @custom_batching.custom_vmap
    def g(x):
        return x
    with pytest.raises(AttributeError, match="No batching rule"):
        g(1.0)


def test_custom_vmap_unbatched_output_is_broadcast():
    @custom_batching.custom_vmap
    def f(x):
        return jnp.sum(x) * 0.0

    @f.def_vmap
    def rule(axis_size, in_batched, x):
        return jnp.float32(7.0), False

    out = jax.vmap(f)(jnp.ones((4, 2)))
    np.testing.assert_allclose(np.asarray(out), [7.0] * 4)


def test_custom_vmap_rule_applies_inside_vmapped_functions():
    """The rule is applied where the function is called inside a vmapped
    function, as JAX's vmap applies it: under jit, in nested vmaps, in a
    scan body (values recorded from JAX 0.10.2, whose rule here computes
    cos where the function computes sin)."""
    @custom_batching.custom_vmap
    def f(x):
        return jnp.sin(x)

    @f.def_vmap
    def rule(n, in_batched, x):
        return jnp.cos(x), True

    def g(x):
        return f(x) * 2
    xs = jnp.arange(3.0)
    want = [2.0, 1.0806046, -0.8322937]
    np.testing.assert_allclose(jax.vmap(g)(xs), want, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.vmap(g))(xs), want, rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(jax.vmap(g))(jnp.arange(6.0).reshape(2, 3)),
                               [want, [-1.979985, -1.3072872, 0.5673244]], rtol=1e-6)
    np.testing.assert_allclose(g(xs), [0.0, 1.6829419, 1.8185948], rtol=1e-6)
    scanned = jax.vmap(lambda x: jax.lax.scan(lambda c, t: (c + f(t), None), 0.0, x)[0])
    np.testing.assert_allclose(scanned(jnp.arange(6.0).reshape(2, 3)),
                               [1.1241554, -1.3599739], rtol=1e-6)

    # Inside a custom_vjp's rules under vmap of grad: the rules' calls are
    # batched by the rule too (JAX 0.10.2: cos, not sin).
    @jax.custom_vjp
    def h(x):
        return f(x)
    h.defvjp(lambda x: (f(x), x), lambda res, g: (g * f(res),))
    np.testing.assert_allclose(jax.vmap(jax.grad(h))(xs), [1.0, 0.5403023, -0.41614684],
                               rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.value_and_grad(h)))(xs)[1],
                               [1.0, 0.5403023, -0.41614684], rtol=1e-6)
    np.testing.assert_allclose(jax.grad(h)(1.0), np.sin(1.0), rtol=1e-6)
    # On the differentiated path, the function itself is differentiated
    # (JAX refuses to differentiate a custom_vmap function).
    np.testing.assert_allclose(jax.vmap(jax.grad(lambda x: f(x) * 2))(xs), 2 * np.cos(xs),
                               rtol=1e-6)

    @custom_batching.custom_vmap
    def bad(x):
        return x

    @bad.def_vmap
    def bad_rule(n, in_batched, x):
        return x[0], True  # drops the batch axis
    with pytest.raises(ValueError, match="batching rule returned a result of type"):
        jax.vmap(lambda x: bad(x) + 1)(xs)

    @custom_batching.custom_vmap
    def bad2(x):
        return x

    @bad2.def_vmap
    def bad2_rule(n, in_batched, x):
        return jnp.stack([x, x]), True  # a batch of 2 where vmap has 3
    with pytest.raises(ValueError, match="batching rule of custom_vmap bad2"):
        jax.vmap(lambda x: bad2(x) + 1)(xs)


def test_sequential_vmap():
    @custom_batching.sequential_vmap
    def f(x, y):
        return jnp.sum(x) * y

    xs = jnp.arange(6.0).reshape(3, 2)
    out = jax.vmap(f, in_axes=(0, None))(xs, 2.0)
    np.testing.assert_allclose(np.asarray(out), [2.0, 10.0, 18.0])
    assert float(f(jnp.ones(2), 3.0)) == 6.0


# ---------------------------------------------------------------------------
# profiler, monitoring, stages, dlpack
# ---------------------------------------------------------------------------


def test_profiler_trace(tmp_path):
    @profiler.annotate_function
    def work(x):
        return x + 1

    with profiler.trace(str(tmp_path)):
        with profiler.TraceAnnotation("outer", tag=1):
            work(jnp.ones(3))
        with profiler.StepTraceAnnotation("step", step_num=3):
            pass
    files = [os.path.join(d, f) for d, _, fs in os.walk(tmp_path) for f in fs]
    assert len(files) == 1 and files[0].endswith(".trace.json.gz")
    with gzip.open(files[0], "rt") as fh:
        events = json.load(fh)["traceEvents"]
    names = [e["name"] for e in events]
    assert "outer" in names and "step" in names and any("work" in n for n in names)
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    profiler.start_trace(str(tmp_path))
    with pytest.raises(RuntimeError, match="already been started"):
        profiler.start_trace(str(tmp_path))
    profiler.stop_trace()
    assert gzip.decompress(profiler.device_memory_profile()) == b""
    profiler.save_device_memory_profile(str(tmp_path / "mem.prof"))
    assert (tmp_path / "mem.prof").exists()


def test_monitoring_listeners():
    got = []

    def on_event(event, **kw):
        got.append(("event", event, kw))

    def on_duration(event, duration, **kw):
        got.append(("duration", event, duration))

    monitoring.register_event_listener(on_event)
    monitoring.register_event_duration_secs_listener(on_duration)
    try:
        monitoring.record_event("/my/event", k="v")
        monitoring.record_event_duration_secs("/my/duration", 0.5)
    finally:
        monitoring.unregister_event_listener(on_event)
        monitoring.unregister_event_duration_listener(on_duration)
    monitoring.record_event("/my/event")
    assert got == [("event", "/my/event", {"k": "v"}), ("duration", "/my/duration", 0.5)]


def test_stages_types():
    f = jax.jit(lambda x: x * 2)
    assert isinstance(f, stages.Wrapped)
    traced = f.trace(1.0)
    assert isinstance(traced, stages.Traced)
    lowered = traced.lower()
    assert isinstance(lowered, stages.Lowered)
    compiled = lowered.compile()
    assert isinstance(compiled, stages.Compiled)


def test_dlpack():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = dlpack.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(y), x)
    assert dlpack.is_supported_dtype(np.float32) and dlpack.is_supported_dtype("bfloat16")
    assert not dlpack.is_supported_dtype(np.dtype("V8"))
    with pytest.raises(TypeError):
        dlpack.is_supported_dtype(None)


def test_custom_vmap_rule_inside_vmap_gets_unbatched_flags():
    # Inside a vmapped function the rule is told which arguments vary over
    # the lanes (JAX's in_batched): a closed-over value, a constant and a
    # value computed from them only are not batched.
    @custom_batching.custom_vmap
    def f(x, w):
        return x * w

    @f.def_vmap
    def rule(n, in_batched, x, w):
        rule.calls.append(list(in_batched))
        assert x.ndim == (2 if in_batched[0] else 1) and w.ndim == (2 if in_batched[1] else 1)
        return x * w + 1.0, True
    rule.calls = []

    w = jnp.arange(3.0)
    xs = jnp.ones((4, 3))
    out = jax.jit(jax.vmap(lambda x: f(x, jnp.cos(w) * 2.0) * 1.0))(xs)
    np.testing.assert_allclose(np.asarray(out), np.ones((4, 1)) * (np.cos(np.arange(3.0)) * 2)
                               + 1.0, rtol=1e-6)
    assert rule.calls[-1] == [True, False]
    out = jax.vmap(lambda x, w: f(w, x), in_axes=(0, None))(xs, w)
    assert rule.calls[-1] == [False, True]
    np.testing.assert_allclose(np.asarray(out), np.ones((4, 1)) * np.arange(3.0) + 1.0)

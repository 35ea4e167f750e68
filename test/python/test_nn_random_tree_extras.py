"""jax.nn's activations and dot_product_attention, nn.initializers.Initializer,
random.binomial/multinomial/key_dtype, the tree_util additions, jax.errors'
and jax.dtypes' missing names, stax's transposed convolutions and jax.export's
helpers. Expected values were recorded from JAX 0.10.2 (CPU) unless noted."""

import collections
import dataclasses

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import export, nn, random, tree_util
from ember.example_libraries import stax

NAN, INF = float("nan"), float("inf")

# Recorded from JAX 0.10.2 (CPU), rounded to 9 significant digits.
R = {'mish': [-0.252501458, -0.30340144, -0.220743775, 0.0, 0.375245243, 0.865098476, 1.943959],
     'squareplus': [0.414213538, 0.618034005, 0.780776381, 1.0, 1.28077638, 1.61803401, 2.41421366],
     'sparse_plus': [0.0, 0.0, 0.0625, 0.25, 0.5625, 1.0, 2.0],
     'sparse_sigmoid': [0.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.0],
     'identity': [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0],
     'squareplus_b1': [0.118034005, 0.207106769, 0.309017003, 0.5, 0.809017003, 1.20710683,
                       2.11803389],
     'grad_mish': [-0.10835509, 0.0592167526, 0.289510667, 0.600000024, 0.886424422, 1.04903615,
                   1.06931782],
     'log1mexp': [-6.90825558, -2.35216856, -0.693194389, -0.458675146, -0.0067607495,
                  -9.35762291e-14],
     'grad_log1mexp': [999.500183, 9.50833321, 1.00009441, 0.581976712, 0.00678365491,
                       9.35762359e-14],
     'lme_all': 2.42392826,
     'lme_ax1': [0.56838131, 1.9017148, 3.23504829],
     'lme_ax0k': [[1.85554695, 2.18888021, 2.5222137, 2.85554695]],
     'lme_where': [NAN, 1.9017148, 3.23504829],
     'dpa_gqa': [[[[0.8276214, 0.89021039], [0.859474778, 0.841929853], [-0.82259047, -0.865098298],
                   [-0.711023271, -0.858774722]],
                  [[0.767436445, 0.885112345], [0.895198464, 0.831795931],
                   [-0.881478608, -0.878167987], [-0.642385244, -0.827846169]],
                  [[0.736815453, 0.873819292], [0.901525557, 0.844384134],
                   [-0.885814965, -0.887822509], [-0.635460377, -0.818872929]]],
                 [[[-0.609983504, -0.331142128], [-0.220649153, 0.105695352],
                   [0.371497154, 0.0543316081], [0.763795018, 0.537351012]],
                  [[-0.695367515, -0.437268257], [-0.178061008, 0.155681193],
                   [0.337880343, 0.0108498959], [0.790359855, 0.577280283]],
                  [[-0.679301262, -0.421589166], [-0.258604646, 0.0704292357],
                   [0.41440922, 0.0980411395], [0.721962929, 0.491388202]]]],
     'dpa_bias_mask': [[[0.8790043, 0.925088286, -0.864012778, -0.696472704],
                        [0.84479022, 0.904500604, -0.941893756, -0.800432146],
                        [0.650141358, 0.871779025, -0.845899701, -0.486374587]],
                       [[-0.585190535, -0.311231613, 0.48667559, 0.811181068],
                        [-0.679622531, -0.00609611953, 0.113839135, 0.650699079],
                        [-0.817842066, -0.299300879, 0.448743522, 0.862956762]]],
     'dpa_causal_seqlen': [[[0.909297407, 0.909297407, -0.969500721, -0.969500721],
                            [0.964327037, 0.943019807, -0.97862184, -0.984065235],
                            [0.0, 0.0, -0.0, -0.0]],
                           [[0.183035731, 0.183035731, -0.00248080795, -0.00248080795],
                            [-0.0428825319, 0.044576548, 0.13386558, 0.211922303],
                            [-0.250474185, -0.110968515, 0.283174664, 0.374873966]]],
     'dpa_window': [[0.697277725, 0.776956141, 0.942658722],
                    [0.526155591, 0.397190541, 0.0396872126]],
     'dpa_residual': [[[2.89630604, 0.484159648, 0.496859014, 2.71043015],
                       [2.44959641, 1.28574038, 1.31067955, 2.03120685],
                       [1.59628356, 2.20937443, 2.2373333, 1.10084152]],
                      [[2.6617589, 0.938147128, 0.911701381, 2.46802378],
                       [2.11297131, 1.78351736, 1.75595033, 1.71107447],
                       [1.25081468, 2.46473885, 2.45247912, 0.832053185]]],
     'dpa_3d': [[-0.0715871379, 0.688408971], [0.206935912, -0.508534074],
                [-0.0377975777, 0.496187329]],
     'dpa_grad': [[0.0, 0.0, 0.0], [-0.0401225165, -0.0219074637, -0.00072735548],
                  [-0.119546548, -0.0809163153, -0.03133443]],
     'dpa_vmap': [[0.8276214, 0.767436445, 0.736815453],
                  [-0.609983504, -0.695367515, -0.679301262]],
     'dpa_bf16': [[0.828125, 0.890625, 0.83203125], [0.765625, 0.8828125, 0.8828125],
                  [0.734375, 0.875, 0.890625]],
     'ct_shape': [1, 6, 6, 2],
     'ct_w': [0.37836495, -0.342850268, -0.284416854, -0.437880248, -0.329971373, 0.224675432],
     'ct_out': [[0.119164877, -0.132672429], [0.0742838308, -0.082528241]],
     'c1t_shape': [2, 6, 3],
     'c1t_out': [-0.134824708, -1.32666481, 0.378008127, 1.96299779, 0.35734275, -0.246047884],
     'gct_shape': [1, 5, 6, 2],
     'gct_out': [-0.157104507, -0.383148164, -0.00562624075, 0.225711301, -0.233068362],
     'b1': [2.0, 5.0, 2.0, 2.0, 4.0, 3.0, 2.0, 3.0],
     'b2': [3.0, 18.0, 185.0, 17.0, 2.0, 0.0],
     'b3': [[50.0, 40.0, 40.0, 40.0], [41.0, 51.0, 38.0, 42.0], [48.0, 50.0, 48.0, 58.0]],
     'b4': [3.0, NAN, INF, NAN],
     'b5': [19.0, 22.0, 18.0, 20.0, 22.0],
     'b6': [[4.0, 3.0, 4.0], [2.0, 6.0, 2.0], [3.0, 6.0, 7.0]],
     'm1': [4.0, 4.0, 12.0],
     'm2': [[1.0, 0.0, 9.0], [25.0, 29.0, 46.0]],
     'm3': [[13.0, 16.0, 21.0], [8.0, 16.0, 26.0]]}

X = np.array([-2., -1., -0.5, 0, 0.5, 1., 2.], np.float32)


def close(a, b, rtol=2e-5, atol=2e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


# --------------------------------------------------------------------------
# activations
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name,expected", [
    ("mish", R["mish"]),
    ("squareplus", R["squareplus"]),
    ("sparse_plus", R["sparse_plus"]),
    ("sparse_sigmoid", R["sparse_sigmoid"]),
    ("identity", R["identity"]),
])
def test_activations(name, expected):
    fn = getattr(nn, name)
    close(fn(X), expected)
    close(ember.jit(fn)(X), expected)
    close(ember.vmap(fn)(X), expected)


def test_activation_details():
    close(nn.squareplus(X, 1.0), R["squareplus_b1"])
    close(ember.grad(lambda x: nn.mish(x).sum())(X), R["grad_mish"])
    close(ember.grad(lambda x: nn.sparse_plus(x).sum())(X), R["sparse_sigmoid"])
    assert nn.identity(X).dtype == np.float32
    with pytest.raises(TypeError, match="requires ndarray or scalar"):
        nn.mish([1.0, 2.0])


def test_log1mexp_and_its_derivative():
    y = np.array([1e-3, 0.1, 0.6931, 1.0, 5.0, 30.0], np.float32)
    close(nn.log1mexp(y), R["log1mexp"])
    close(ember.grad(lambda x: nn.log1mexp(x).sum())(y), R["grad_log1mexp"])
    close(ember.jit(nn.log1mexp)(y), R["log1mexp"])


def test_logmeanexp():
    m = np.arange(12., dtype=np.float32).reshape(3, 4) / 3
    close(nn.logmeanexp(m), R["lme_all"])
    close(nn.logmeanexp(m, axis=1), R["lme_ax1"])
    close(nn.logmeanexp(m, axis=0, keepdims=True), R["lme_ax0k"])
    close(nn.logmeanexp(m, axis=1, where=m > 1), R["lme_where"])
    close(ember.jit(lambda m: nn.logmeanexp(m, axis=1))(m), R["lme_ax1"])


# --------------------------------------------------------------------------
# dot_product_attention
# --------------------------------------------------------------------------


def _arr(shape, seed):
    n = int(np.prod(shape))
    return jnp.asarray(np.sin(np.arange(n) * 0.37 + seed).reshape(shape).astype(np.float32))


Q, K, V = _arr((2, 3, 4, 8), 0.), _arr((2, 5, 2, 8), 1.), _arr((2, 5, 2, 8), 2.)


def test_attention_grouped_query():
    out = nn.dot_product_attention(Q, K, V)
    assert out.shape == (2, 3, 4, 8) and out.dtype == np.float32
    close(out[:, :, :, :2], R["dpa_gqa"])
    close(nn.dot_product_attention(Q, K, V, implementation="xla")[:, :, :, :2], R["dpa_gqa"])


def test_attention_bias_mask_scale():
    bias = _arr((1, 4, 3, 5), 3.)
    mask = jnp.asarray((np.arange(30).reshape(2, 1, 3, 5) % 3) != 0)
    close(nn.dot_product_attention(Q, K, V, bias, mask, scale=0.5)[:, :, :, 0],
          R["dpa_bias_mask"])


def test_attention_causal_seq_lengths_window_residual():
    kvl, ql = jnp.array([3, 5], jnp.int32), jnp.array([2, 3], jnp.int32)
    f = ember.jit(lambda q, k, v: nn.dot_product_attention(
        q, k, v, is_causal=True, query_seq_lengths=ql, key_value_seq_lengths=kvl))
    close(f(Q, K, V)[:, :, :, 0], R["dpa_causal_seqlen"])
    close(nn.dot_product_attention(Q, K, V, local_window_size=(1, 0))[:, :, 1, 1],
          R["dpa_window"])
    out, res = nn.dot_product_attention(Q, K, V, return_residual=True)
    assert res.shape == (2, 3, 4)
    close(res, R["dpa_residual"])


def test_attention_3d_grad_vmap_bf16():
    q3, k3 = _arr((3, 2, 4), 5.), _arr((4, 2, 4), 6.)
    close(nn.dot_product_attention(q3, k3, k3)[:, :, 0], R["dpa_3d"])
    g = ember.grad(lambda q: nn.dot_product_attention(q, K, V, is_causal=True).sum())(Q)
    close(g[0, :, 0, :3], R["dpa_grad"], atol=1e-5)
    close(ember.vmap(nn.dot_product_attention)(Q, K, V)[:, :, 0, 0], R["dpa_vmap"])
    bf = [t.astype(jnp.bfloat16) for t in (Q, K, V)]
    ob = nn.dot_product_attention(*bf)
    assert ob.dtype == jnp.bfloat16
    close(ob[0, :, 0, :3].astype(jnp.float32), R["dpa_bf16"], rtol=1e-2, atol=1e-2)


def test_attention_errors():
    with pytest.raises(ValueError, match="Unsupported implementation option: foo"):
        nn.dot_product_attention(Q, K, V, implementation="foo")
    with pytest.raises(RuntimeError, match="cuDNN is not detected"):
        nn.dot_product_attention(Q, K, V, implementation="cudnn")
    with pytest.raises(ValueError, match="must be a multiple of key/value heads"):
        nn.dot_product_attention(_arr((2, 3, 3, 8), 0.), K, V)
    with pytest.raises(ValueError, match="mask dtype should be bool"):
        nn.dot_product_attention(Q, K, V, mask=jnp.ones((1, 1, 3, 5)))
    with pytest.raises(ValueError, match="query_seq_lengths dtype should be int32"):
        nn.dot_product_attention(Q, K, V, query_seq_lengths=jnp.ones(2))


# --------------------------------------------------------------------------
# block-scaled matmul
# --------------------------------------------------------------------------


def test_scaled_matmul_and_dot_general():
    a = jnp.array([1., 2, 3]).reshape((1, 1, 3))
    b = jnp.array([4., 5, 6]).reshape((1, 1, 3))
    s = jnp.full((1, 1, 1), 0.5)
    close(nn.scaled_matmul(a, b, s, s), [[[8.]]])  # JAX's documented example
    rng = np.random.RandomState(0)
    lhs, rhs = rng.randn(2, 3, 8).astype(np.float32), rng.randn(2, 4, 8).astype(np.float32)
    ls, rs = rng.rand(2, 3, 2).astype(np.float32), rng.rand(2, 4, 2).astype(np.float32)
    want = np.einsum("bmk,bnk->bmn", lhs * np.repeat(ls, 4, -1), rhs * np.repeat(rs, 4, -1))
    close(nn.scaled_matmul(lhs, rhs, ls, rs), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="3-dimensional"):
        nn.scaled_matmul(a[0], b, s, s)
    # Without configs: lax.dot_general (recorded from JAX: [[[32.]]]).
    close(nn.scaled_dot_general(a, b, (((2,), (2,)), ((0,), (0,)))), [[[32.]]])
    cfg = nn.get_scaled_dot_general_config("mxfp8")
    assert (cfg.mode, cfg.block_size, cfg.data_type, cfg.scale_type, cfg.global_scale,
            cfg.infer_only) == ("mxfp8", 32, ml_dtypes.float8_e4m3fn,
                                ml_dtypes.float8_e8m0fnu, None, False)
    cfg = nn.get_scaled_dot_general_config("nvfp4")
    assert (cfg.block_size, cfg.data_type) == (16, ml_dtypes.float4_e2m1fn)
    close(cfg.global_scale, [1.0])
    with pytest.raises(ValueError, match="Unsupported mode: x"):
        nn.get_scaled_dot_general_config("x")


def test_initializer_protocol():
    from ember.nn import initializers
    assert nn.initializers is initializers
    assert isinstance(initializers.zeros, initializers.Initializer)
    assert isinstance(initializers.glorot_normal(), initializers.Initializer)
    assert not isinstance(3, initializers.Initializer)


# --------------------------------------------------------------------------
# random
# --------------------------------------------------------------------------


def test_binomial_matches_jax():
    k = random.PRNGKey(42)
    close(random.binomial(k, 10., 0.3, (8,)), R["b1"], rtol=0, atol=0)
    close(random.binomial(k, jnp.array([5., 50., 200., 1000., 3., 0.]),
                          jnp.array([0.5, 0.3, 0.9, 0.02, 0.7, 0.5])), R["b2"], rtol=0, atol=0)
    close(random.binomial(random.key(1), 100., 0.45, (3, 4)), R["b3"], rtol=0, atol=0)
    close(random.binomial(k, jnp.array([5., -1., jnp.inf, 4.]),
                          jnp.array([0.5, 0.3, 0.3, jnp.nan])), R["b4"], rtol=0, atol=0)
    close(ember.jit(lambda k: random.binomial(k, 30., 0.6, (5,)))(k), R["b5"], rtol=0, atol=0)
    close(ember.vmap(lambda k: random.binomial(k, 20., 0.2, (3,)))(random.split(k, 3)),
          R["b6"], rtol=0, atol=0)
    assert random.binomial(k, 5, 0.5, dtype=jnp.float16).dtype == np.float16
    with pytest.raises(ValueError, match="must be a float dtype"):
        random.binomial(k, 5, 0.5, dtype=jnp.int32)


def test_multinomial_matches_jax():
    k = random.PRNGKey(42)
    close(random.multinomial(k, 20., jnp.array([0.2, 0.3, 0.5])), R["m1"], rtol=0, atol=0)
    close(random.multinomial(random.PRNGKey(3), jnp.array([10., 100.]),
                             jnp.array([[0.1, 0.2, 0.7], [0.25, 0.25, 0.5]])), R["m2"],
          rtol=0, atol=0)
    close(random.multinomial(k, 50., jnp.array([0.2, 0.3, 0.5]), shape=(2, 3)), R["m3"],
          rtol=0, atol=0)


def test_key_dtype():
    assert random.key_dtype() == random.key(0).dtype
    assert random.key_dtype("threefry2x32") == random.key(0).dtype
    assert str(random.key_dtype()) == "key<fry>"
    with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
        random.key_dtype("foo")


# --------------------------------------------------------------------------
# tree_util
# --------------------------------------------------------------------------


def test_flatten_one_level_and_is_tree_node():
    assert tree_util.flatten_one_level({"a": 1, "b": [2, 3]}) == ((1, [2, 3]), ("a", "b"))
    assert tree_util.flatten_one_level((1, 2)) == ((1, 2), None)
    assert tree_util.flatten_one_level(None) == ((), None)
    with pytest.raises(ValueError, match="can't tree-flatten type: <class 'float'>"):
        tree_util.flatten_one_level(1.0)
    kids, aux = tree_util.flatten_one_level_with_keys({"a": 1, "b": [2, 3]})
    assert kids == ((tree_util.DictKey("a"), 1), (tree_util.DictKey("b"), [2, 3]))
    assert tree_util.flatten_one_level_with_keys([4, 5])[0] == (
        (tree_util.SequenceKey(0), 4), (tree_util.SequenceKey(1), 5))
    assert [tree_util.is_tree_node(t) for t in (list, int, type(None),
                                                collections.OrderedDict)] == [
        True, False, True, True]
    assert tree_util.default_registry.flatten_one_level(1.0) is None
    assert tree_util.default_registry.is_node(dict)
    assert str(tree_util.KeyEntry) == "~KeyEntry"
    assert tree_util.KeyPath == tuple[tree_util.KeyEntry, ...]


def test_tree_broadcast_reduce_associative_treedef_tuple():
    assert tree_util.tree_broadcast((1, [2]), ((3, 4), [{"a": 5, "b": 6}])) == (
        (1, 1), [{"a": 2, "b": 2}])
    with pytest.raises(ValueError, match="different types at key path"):
        tree_util.tree_broadcast([1, 2], (3, 4))
    assert tree_util.tree_reduce_associative(lambda a, b: f"({a}+{b})", [1, 2, 3, 4, 5]) == (
        "((1+2)+(3+(4+5)))")
    with pytest.raises(TypeError, match="Must specify identity"):
        tree_util.tree_reduce_associative(lambda a, b: a + b, [])
    assert tree_util.tree_reduce_associative(lambda a, b: a + b, [], identity=0) == 0
    t = tree_util.treedef_tuple([tree_util.tree_structure([1, 2]), tree_util.tree_structure(3)])
    assert str(t) == "PyTreeDef(([*, *], *))" and t.num_leaves == 3
    assert t == tree_util.tree_structure(([1, 2], 3))
    assert ember.tree.broadcast(1, [2, 3]) == [1, 1]
    assert ember.tree.reduce_associative(lambda a, b: a + b, [1, 2, 3]) == 6


def test_tree_namespace_has_jax_names():
    names = ["all", "broadcast", "flatten", "flatten_with_path", "leaves", "leaves_with_path",
             "map", "map_with_path", "reduce", "reduce_associative", "static", "structure",
             "transpose", "unflatten"]  # dir(jax.tree) in JAX 0.10.2
    assert all(hasattr(ember.tree, n) for n in names)


def test_register_static_and_with_keys_class():
    @tree_util.register_static
    class StaticStr(str):
        pass

    f = ember.jit(lambda x, s: x + 1 if s == "add" else x - 1)
    assert int(f(1, StaticStr("add"))) == 2 and int(f(1, StaticStr("sub"))) == 0
    assert tree_util.tree_leaves([StaticStr("a"), 1]) == [1]

    @tree_util.register_pytree_with_keys_class
    class Special:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def tree_flatten_with_keys(self):
            return (((tree_util.GetAttrKey("x"), self.x), (tree_util.GetAttrKey("y"), self.y)),
                    None)

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    paths = tree_util.tree_flatten_with_path(Special(1, 2))[0]
    assert [tree_util.keystr(p) for p, _ in paths] == [".x", ".y"]
    assert tree_util.tree_map(lambda a: a * 10, Special(1, 2)).y == 20

    @dataclasses.dataclass
    class D:
        x: object
        op: str = ember.tree.static(default="add")

    tree_util.register_dataclass(D)
    assert ember.tree.leaves(D(3)) == [3]


# --------------------------------------------------------------------------
# errors, dtypes
# --------------------------------------------------------------------------


def test_error_hierarchy():
    e = ember.errors
    assert issubclass(e.JAXTypeError, TypeError) and issubclass(e.JAXIndexError, IndexError)
    for name in ("ConcretizationTypeError", "TracerArrayConversionError",
                 "TracerIntegerConversionError", "UnexpectedTracerError", "KeyReuseError"):
        assert issubclass(getattr(e, name), e.JAXTypeError), name
    assert issubclass(e.TracerBoolConversionError, e.ConcretizationTypeError)
    assert issubclass(e.NonConcreteBooleanIndexError, e.JAXIndexError)
    assert issubclass(e.JaxprTypeError, TypeError)
    assert not issubclass(e.JaxprTypeError, e.JAXTypeError)
    assert e.InconclusiveDimensionOperation is export.InconclusiveDimensionOperation
    with pytest.raises(e.InconclusiveDimensionOperation):
        a, b = export.symbolic_shape("a, b")
        bool(a >= b)


def test_dtypes_additions():
    d = ember.dtypes
    assert d.float0 is ember.float0 and d.float0 == np.dtype([("float0", np.void, 0)])
    assert issubclass(d.TypePromotionError, ValueError)
    assert [d.itemsize_bits(t) for t in (np.float32, "bfloat16", ml_dtypes.int4, np.bool_,
                                         ml_dtypes.float8_e4m3fn, np.complex64)] == [
        32, 16, 4, 8, 8, 64]
    with pytest.raises(ValueError, match="unexpected input"):
        d.itemsize_bits(d.float0)
    with pytest.raises(ValueError, match="dtype cannot be None"):
        d.itemsize_bits(None)
    cases = [(np.float32, float), ("bfloat16", float), (np.bool_, bool), (np.int8, int),
             (np.uint32, int), (np.complex64, complex), (1, int), (1.0, float), (True, bool),
             (1j, complex), (np.float32(1), float), (jnp.ones(2), float), (np.int8(1), int),
             (jnp.ones(2, jnp.bfloat16), float)]
    assert [d.scalar_type_of(x) for x, _ in cases] == [t for _, t in cases]
    with pytest.raises(TypeError, match="Invalid scalar value"):
        d.scalar_type_of(d.float0)


# --------------------------------------------------------------------------
# stax transposed convolutions
# --------------------------------------------------------------------------


def test_stax_conv_transpose():
    k = random.PRNGKey(0)
    x = random.normal(random.PRNGKey(1), (1, 3, 3, 2))
    init, apply = stax.ConvTranspose(2, (2, 2), strides=(2, 2), padding="SAME")
    shape, params = init(k, x.shape)
    assert tuple(shape) == tuple(R["ct_shape"])
    close(params[0].ravel()[:6], R["ct_w"])
    close(apply(params, x)[0, :2, :2, 0], R["ct_out"])
    init, apply = stax.Conv1DTranspose(3, (3,), padding="VALID")
    x1 = random.normal(random.PRNGKey(2), (2, 4, 2))
    shape, params = init(k, x1.shape)
    assert tuple(shape) == tuple(R["c1t_shape"])
    close(apply(params, x1)[1, :, 0], R["c1t_out"])
    init, apply = stax.GeneralConvTranspose(("NCHW", "OIHW", "NHWC"), 2, (3, 2), strides=(1, 2))
    x2 = random.normal(random.PRNGKey(3), (1, 2, 3, 3))
    shape, params = init(k, x2.shape)
    assert tuple(shape) == tuple(R["gct_shape"])
    close(apply(params, x2)[0, :, 0, 1], R["gct_out"])


# --------------------------------------------------------------------------
# export
# --------------------------------------------------------------------------


def test_export_helpers():
    a, _ = export.symbolic_shape("a, b")
    assert export.is_symbolic_dim(a) and not export.is_symbolic_dim(3)
    p = export.DisabledSafetyCheck.platform()
    assert str(p) == "platform" and p.is_custom_call() is None
    c = export.DisabledSafetyCheck.custom_call("foo")
    assert c.is_custom_call() == "foo" and c == export.DisabledSafetyCheck.custom_call("foo")
    assert len({p, export.DisabledSafetyCheck.platform()}) == 1

    P = collections.namedtuple("P", "x y")
    assert export.register_namedtuple_serialization(P, serialized_name="test_extras.P") is P
    with pytest.raises(ValueError, match="Duplicate serialization registration for type"):
        export.register_namedtuple_serialization(P, serialized_name="test_extras.P2")
    with pytest.raises(ValueError, match="Use `jax.export.register_pytree_node_serialization`"):
        export.register_namedtuple_serialization(dict, serialized_name="test_extras.d")

    class Node:
        pass

    with pytest.raises(ValueError, match="If `from_children` is not present"):
        export.register_pytree_node_serialization(
            Node, serialized_name="test_extras.Node", serialize_auxdata=lambda a: b"",
            deserialize_auxdata=lambda b: None)
    tree_util.register_pytree_node(Node, lambda n: ((), None), lambda a, c: Node())
    assert export.register_pytree_node_serialization(
        Node, serialized_name="test_extras.Node", serialize_auxdata=lambda a: b"",
        deserialize_auxdata=lambda b: None) is Node
    with pytest.raises(ValueError, match="Duplicate serialization registration for "
                                         "serialized_name"):
        export.register_pytree_node_serialization(
            P.__class__, serialized_name="test_extras.Node", serialize_auxdata=lambda a: b"",
            deserialize_auxdata=lambda b: None, from_children=lambda a, c: None)

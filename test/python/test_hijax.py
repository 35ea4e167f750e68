"""Hijax: user-defined types (`ember.experimental.hijax`): values of a hi
type lower to arrays at every transformation boundary; `VJPHiPrimitive`s
make and take them apart, with their own VJP rules and tangent types;
mapping specs say how `vmap` and `scan` map them."""

import dataclasses

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.experimental.hijax import (
    HiPspec,
    HiType,
    MappingSpec,
    ShapedArray,
    VJPHiPrimitive,
    Zero,
    instantiate_zeros,
    register_hitype,
    vjp_from_jvp,
)
from ember.sharding import PartitionSpec as P

from helpers import assert_prints_recorded


def test_programs_print_what_jax_prints():
    """Eager use, `jit` with hi arguments, results and intermediates, tangent
    types under `grad` (a straight-through quantizer, gradients with respect
    to a quantized argument, a mixed dense-quantized product), `scan` with a
    hi carry and stacked hi outputs, nested pair types holding other hi
    types, JAX's errors, and shardings in hi types: each line as JAX 0.10.2
    printed it (`test/data/hijax/hijax_programs.py`)."""
    assert_prints_recorded("hijax", "hijax_programs", cpu_meshes=True)


# A quantized array: int8 values, one f32 scale per row (of the last axis).
@dataclasses.dataclass(frozen=True)
class QArray:
    qvalue: object
    scale: object


@dataclasses.dataclass(frozen=True)
class QSpec(MappingSpec):
    pass  # mapped along the leading axis


@dataclasses.dataclass(frozen=True)
class QTy(HiType):
    shape: tuple

    def lo_ty(self):
        return [ShapedArray(self.shape, np.int8), ShapedArray(self.shape[:-1], np.float32)]

    def lower_val(self, q):
        return [q.qvalue, q.scale]

    def raise_val(self, qvalue, scale):
        return QArray(qvalue, scale)

    def to_tangent_aval(self):
        return ShapedArray(self.shape, np.float32)

    def dec_rank(self, size, spec):
        assert isinstance(spec, QSpec) and self.shape[0] == size
        return QTy(self.shape[1:])

    def inc_rank(self, size, spec):
        return QTy((size, *self.shape))

    def leading_axis_spec(self):
        return QSpec()

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return f"q8[{','.join(map(str, self.shape))}]"


register_hitype(QArray, lambda q: QTy(tuple(q.qvalue.shape)))


class Quantize(VJPHiPrimitive):
    def __init__(self, x):
        self.in_avals = (x,)
        self.out_aval = QTy(x.shape)
        self.params = {}
        super().__init__()

    def expand(self, x):
        scale = jnp.max(jnp.abs(x), axis=-1) / 127.0
        return QArray(jnp.round(x / scale[..., None]).astype(jnp.int8), scale)

    def vjp_fwd(self, nzs, x):
        return self(x), None

    def vjp_bwd_retval(self, res, g):
        return (g,)


class Dequantize(VJPHiPrimitive):
    def __init__(self, q):
        self.in_avals = (q,)
        self.out_aval = ShapedArray(q.shape, np.float32)
        self.params = {}
        super().__init__()

    def expand(self, q):
        return q.qvalue.astype(jnp.float32) * q.scale[..., None]

    def vjp_fwd(self, nzs, q):
        return self(q), None

    def vjp_bwd_retval(self, res, g):
        return (g,)


class Rows(VJPHiPrimitive):
    """The int8 values only, without a VJP rule."""

    def __init__(self, q):
        self.in_avals = (q,)
        self.out_aval = ShapedArray(q.shape, np.int8)
        self.params = {}
        super().__init__()

    def expand(self, q):
        return q.qvalue


def quantize(x):
    return Quantize(ember.typeof(x))(x)


def dequantize(q):
    return Dequantize(ember.typeof(q))(q)


def np_quantize(x):
    scale = np.abs(x).max(-1) / np.float32(127.0)
    return np.round(x / scale[..., None]).astype(np.int8), scale.astype(np.float32)


def np_dequantize(qv, scale):
    return qv.astype(np.float32) * scale[..., None]


XS = np.sin(np.arange(24.0) * 0.7).astype(np.float32).reshape(4, 2, 3)


def test_vmap_maps_hi_values_by_their_mapping_spec():
    qs = ember.vmap(quantize, out_axes=QSpec())(XS)
    assert isinstance(qs, QArray)
    assert str(ember.typeof(qs).str_short()) == "q8[4,2,3]"
    qv, scale = np_quantize(XS)
    np.testing.assert_array_equal(np.asarray(qs.qvalue), qv)
    np.testing.assert_allclose(np.asarray(qs.scale), scale, rtol=1e-6)
    back = ember.vmap(dequantize, in_axes=QSpec(), axis_size=4)(qs)
    np.testing.assert_allclose(np.asarray(back), np_dequantize(qv, scale), rtol=1e-6)
    jitted = ember.vmap(ember.jit(dequantize), in_axes=QSpec(), axis_size=4)(qs)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(back))
    # Mixed: a mapped hi value and a mapped array (the size from the array).
    out = ember.vmap(lambda q, y: dequantize(q) * y, in_axes=(QSpec(), 0))(qs, XS)
    np.testing.assert_allclose(np.asarray(out), np_dequantize(qv, scale) * XS, rtol=1e-6)
    # An unmapped hi value beside a mapped array.
    q0 = quantize(XS[0])
    out = ember.vmap(lambda q, y: dequantize(q) + y, in_axes=(None, 0))(q0, XS)
    np.testing.assert_allclose(np.asarray(out), np_dequantize(*np_quantize(XS[0])) + XS,
                               rtol=1e-6, atol=1e-6)


def test_vmap_of_grad_through_the_straight_through_rules():
    def norm_q(x):
        return jnp.sum(dequantize(quantize(x)) ** 2)

    g = ember.vmap(ember.grad(norm_q))(XS)
    np.testing.assert_allclose(np.asarray(g), 2 * np_dequantize(*np_quantize(XS)), rtol=1e-5)


def test_grad_with_respect_to_a_hi_value_is_of_its_tangent_type():
    q = quantize(XS[0])
    g = ember.grad(lambda q: jnp.sum(jnp.sin(dequantize(q))))(q)
    assert ember.typeof(g).str_short() == "float32[2,3]"
    np.testing.assert_allclose(np.asarray(g), np.cos(np_dequantize(*np_quantize(XS[0]))),
                               rtol=1e-5)
    # In the IR: the primitives are custom_vjp calls with tangent carriers.
    text = ember.jit(ember.grad(lambda q: jnp.sum(dequantize(q)))).lower(q).as_text("ember")
    assert "ember.custom_vjp_call" in text


def test_grad_through_a_primitive_without_vjp_rule_is_jax_error():
    q = quantize(XS[0])
    with pytest.raises(NotImplementedError, match="must implement `vjp_fwd`"):
        ember.grad(lambda q: jnp.sum(Rows(ember.typeof(q))(q).astype(jnp.float32)))(q)
    # Without differentiation it is expanded where it is used.
    r = ember.jit(lambda q: Rows(ember.typeof(q))(q))(q)
    np.testing.assert_array_equal(np.asarray(r), np_quantize(XS[0])[0])


def test_scan_over_stacked_hi_values_and_stacking_them():
    qs = ember.vmap(quantize, out_axes=QSpec())(XS)
    total, () = ember.lax.scan(lambda t, q: (t + jnp.sum(dequantize(q)), ()), 0.0, qs,
                               length=4)
    np.testing.assert_allclose(float(total), np_dequantize(*np_quantize(XS)).sum(), rtol=1e-5)
    with pytest.raises(ValueError, match="length"):
        ember.lax.scan(lambda t, q: (t, ()), 0.0, qs)

    def step(qt, x):
        return quantize(dequantize(qt) + x), quantize(2 * x)

    qt, qys = ember.lax.scan(step, quantize(jnp.ones((2, 3), jnp.float32)), XS)
    assert ember.typeof(qt).str_short() == "q8[2,3]"
    assert ember.typeof(qys).str_short() == "q8[4,2,3]"
    qv, scale = np_quantize(2 * XS)
    np.testing.assert_array_equal(np.asarray(qys.qvalue), qv)
    carry = np.ones((2, 3), np.float32)
    for x in XS:
        carry = np_dequantize(*np_quantize(np_dequantize(*np_quantize(carry)) + x))
    np.testing.assert_allclose(np.asarray(dequantize(qt)), carry, rtol=1e-5)


# A pair with one mapping entry per component.
@dataclasses.dataclass(frozen=True)
class Tup:
    elts: tuple


@dataclasses.dataclass(frozen=True)
class TupSpec(MappingSpec):
    val: tuple


@dataclasses.dataclass(frozen=True)
class TupTy(HiType):
    tys: tuple

    def lo_ty(self):
        return [lo for t in self.tys for lo in t.lo_ty()]

    def lower_val(self, tup):
        return [lo for t, e in zip(self.tys, tup.elts) for lo in t.lower_val(e)]

    def raise_val(self, *los):
        out, k = [], 0
        for t in self.tys:
            n = len(t.lo_ty())
            out.append(t.raise_val(*los[k:k + n]))
            k += n
        return Tup(tuple(out))

    def to_tangent_aval(self):
        return TupTy(tuple(t.to_tangent_aval() for t in self.tys))

    def dec_rank(self, size, spec):
        return TupTy(tuple(t.dec_rank(size, s) for t, s in zip(self.tys, spec.val)))

    def inc_rank(self, size, spec):
        return TupTy(tuple(t.inc_rank(size, s) for t, s in zip(self.tys, spec.val)))

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return "Tup{" + ",".join(t.str_short(short_dtypes) for t in self.tys) + "}"


register_hitype(Tup, lambda t: TupTy(tuple(ember.typeof(e) for e in t.elts)))


class MakeTup(VJPHiPrimitive):
    def __init__(self, avals):
        self.in_avals = tuple(avals)
        self.out_aval = TupTy(tuple(avals))
        self.params = {}
        super().__init__()

    def expand(self, *elts):
        return Tup(elts)


class GetElt(VJPHiPrimitive):
    def __init__(self, t, idx):
        self.in_avals = (t,)
        self.out_aval = t.tys[idx]
        self.params = dict(idx=idx)
        super().__init__()

    def expand(self, t):
        return t.elts[self.idx]


def make_tup(*elts):
    return MakeTup([ember.typeof(e) for e in elts])(*elts)


def get(t, i):
    return GetElt(ember.typeof(t), i)(t)


def swap(t):
    return make_tup(get(t, 1), get(t, 0))


def test_per_component_mapping_specs():
    tup = make_tup(jnp.arange(3.0), 5.0)
    out = ember.vmap(swap, in_axes=TupSpec((0, None)), out_axes=TupSpec((None, 0)),
                     axis_size=3)(tup)
    assert ember.typeof(out).str_short() == "Tup{float32[],float32[3]}"
    np.testing.assert_array_equal(np.asarray(out.elts[1]), [0.0, 1.0, 2.0])
    assert float(out.elts[0]) == 5.0
    # A component mapped along its second axis: [2, 3] mapped by axis 1 of
    # size 3 (the probe tells the axes of a square array apart).
    m = jnp.arange(9.0).reshape(3, 3)
    t = make_tup(m, jnp.ones(2))
    got = ember.vmap(lambda t: get(t, 0) * 10 + jnp.sum(get(t, 1)), in_axes=TupSpec((1, None)),
                     axis_size=3)(t)
    np.testing.assert_array_equal(np.asarray(got), np.arange(9.0).reshape(3, 3).T * 10 + 2)
    back = ember.vmap(lambda t: t, in_axes=TupSpec((1, None)), out_axes=TupSpec((1, None)),
                      axis_size=3)(t)
    np.testing.assert_array_equal(np.asarray(back.elts[0]), np.asarray(m))
    # An output mapped where the spec says unmapped: JAX's error.
    with pytest.raises(ValueError, match="out_axes is None"):
        ember.vmap(lambda t: t, in_axes=TupSpec((0, None)), out_axes=TupSpec((None, None)),
                   axis_size=3)(tup)


def test_nested_tuples_and_gradients_through_their_arrays():
    nested = make_tup(make_tup(1.0, 2.0), jnp.arange(2.0))
    assert ember.typeof(nested).str_short() == "Tup{Tup{float32[],float32[]},float32[2]}"
    assert float(ember.jit(lambda t: get(get(t, 0), 1))(nested)) == 2.0
    # TupTy's tangent type is its components' (no carrier): the gradient is
    # a Tup of the components' gradients.
    g = ember.grad(lambda t: get(get(t, 0), 0) * 3.0 + jnp.sum(get(t, 1) ** 2))(nested)
    assert isinstance(g, Tup)
    assert float(g.elts[0].elts[0]) == 3.0 and float(g.elts[0].elts[1]) == 0.0
    np.testing.assert_array_equal(np.asarray(g.elts[1]), [0.0, 2.0])


def test_vmap_errors():
    tup = make_tup(jnp.arange(3.0), 5.0)
    with pytest.raises(ValueError, match="axis_size"):
        ember.vmap(swap, in_axes=TupSpec((0, None)), out_axes=TupSpec((None, 0)))(tup)
    with pytest.raises(ValueError, match="MappingSpec"):
        ember.vmap(swap, in_axes=0, axis_size=3)(tup)
    with pytest.raises(ValueError, match="MappingSpec"):
        ember.vmap(jnp.sin, in_axes=QSpec())(jnp.ones(3))


def test_hi_values_are_leaves_of_public_tree_functions():
    tup = make_tup(jnp.arange(3.0), 5.0)
    assert ember.tree_util.tree_leaves([tup, 1]) == [tup, 1]


def test_primitive_declared_type_is_checked_under_differentiation():
    class Bad(VJPHiPrimitive):
        def __init__(self, x):
            self.in_avals = (x,)
            self.out_aval = QTy((5,))
            self.params = {}
            super().__init__()

        def expand(self, x):
            return quantize(x)

        def vjp_fwd(self, nzs, x):
            return self(x), None

        def vjp_bwd_retval(self, res, g):
            return (g,)

    x = jnp.ones((2, 3))
    with pytest.raises(TypeError, match="out_aval declares q8\\[5\\]"):
        ember.grad(lambda x: jnp.sum(dequantize(Bad(ember.typeof(x))(x))))(x)


class Logistic(VJPHiPrimitive):
    """Forward-mode rule only; reverse mode transposes it (vjp_from_jvp)."""

    def __init__(self, a):
        self.in_avals = (a,)
        self.out_aval = a
        self.params = {}
        super().__init__()

    def expand(self, x):
        return 1 / (1 + jnp.exp(-x))

    def jvp(self, primals, tangents):
        (x,), (xd,) = primals, tangents
        y = self(x)
        return y, y * (1 - y) * xd

    vjp_fwd, vjp_bwd_retval = vjp_from_jvp


def logistic(x):
    return Logistic(ember.typeof(x))(x)


def test_jvp_rule_serves_forward_and_reverse_mode_and_vmap():
    v = np.array([0.5, -1.0, 2.0], np.float32)
    sig = 1 / (1 + np.exp(-v))
    dsig = sig * (1 - sig)
    y, t = ember.jvp(logistic, (jnp.asarray(v),), (jnp.ones(3),))
    np.testing.assert_allclose(np.asarray(y), sig, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(t), dsig, rtol=1e-5)
    g = ember.jit(ember.grad(lambda v: jnp.sum(logistic(v) ** 2)))(v)
    np.testing.assert_allclose(np.asarray(g), 2 * sig * dsig, rtol=1e-5)
    # jacfwd maps the rule (no batch rule needed: ember-batch maps it).
    np.testing.assert_allclose(np.asarray(ember.jacfwd(logistic)(v)), np.diag(dsig),
                               rtol=1e-5)
    text = ember.jit(ember.grad(logistic)).lower(1.0).as_text("ember")
    assert "ember.custom_jvp_call" in text


def test_zero_and_accumulators():
    z = Zero(ShapedArray((2,), np.float32))
    np.testing.assert_array_equal(np.asarray(instantiate_zeros(z)), [0.0, 0.0])
    assert instantiate_zeros(3.0) == 3.0

    class Twice(VJPHiPrimitive):
        def __init__(self, a):
            self.in_avals = (a, a)
            self.out_aval = a
            self.params = {}
            super().__init__()

        def expand(self, x, y):
            return 2 * x * y

        def vjp_fwd(self, nzs, x, y):
            return self(x, y), (x, y)

        def vjp_bwd(self, res, g, x_acc, y_acc):
            x, y = res
            x_acc.accum(g * y)  # accumulated twice: 2 * g * y
            x_acc.accum(g * y)
            y_acc.accum(Zero(ember.typeof(y)))  # a symbolic zero adds nothing
            y_acc.accum(2 * x * g)

    gx, gy = ember.grad(lambda x, y: Twice(ember.typeof(x))(x, y), (0, 1))(3.0, 5.0)
    assert (float(gx), float(gy)) == (10.0, 6.0)
    with pytest.raises(AttributeError, match="should not override both"):
        class Both(Twice):
            def vjp_bwd_retval(self, res, g):
                return (g, g)
        Both(ember.typeof(1.0))


def test_shard_map_with_hi_partition_specs_outside_jit(devices8):
    mesh = ember.make_mesh((4,), ("i",))
    rows = np.arange(24.0, dtype=np.float32).reshape(8, 3)
    placed = ember.device_put(rows, ember.sharding.NamedSharding(mesh, P("i")))

    @dataclasses.dataclass(frozen=True)
    class QP(HiPspec):
        spec: object

        def to_lo(self):
            return (self.spec, self.spec)

    def q_shard(self, mesh, manual, check, spec):
        return QTy(ShapedArray(self.shape, np.int8).shard(mesh, manual, check, spec.spec).shape)

    def q_unshard(self, mesh, check, spec):
        return QTy(ShapedArray(self.shape, np.int8).unshard(mesh, check, spec.spec).shape)

    QTy.shard, QTy.unshard = q_shard, q_unshard
    try:
        seen = []

        def per_shard(x):
            seen.append(ember.typeof(x).shape)
            return quantize(x)

        with ember.sharding.use_mesh(mesh):
            q = ember.shard_map(per_shard, in_specs=P("i"), out_specs=QP(P("i")))(placed)
            back = ember.shard_map(dequantize, in_specs=QP(P("i")), out_specs=P("i"))(q)
        assert seen == [(2, 3)]
        assert ember.typeof(q).str_short() == "q8[8,3]"
        qv, scale = np_quantize(rows)  # per-row scales: shard by shard = global
        np.testing.assert_array_equal(np.asarray(q.qvalue), qv)
        np.testing.assert_allclose(np.asarray(back), np_dequantize(qv, scale), rtol=1e-6)
        with pytest.raises(TypeError, match="must be a HiPspec"):
            with ember.sharding.use_mesh(mesh):
                ember.shard_map(dequantize, in_specs=P("i"), out_specs=P("i"))(q)
    finally:
        del QTy.shard, QTy.unshard


def test_jvp_through_a_type_with_its_own_tangents_is_not_built():
    class QuantizeJvp(Quantize):
        def jvp(self, primals, tangents):
            return self(*primals), tangents[0]

    with pytest.raises(NotImplementedError, match="not built"):
        ember.jvp(lambda x: dequantize(QuantizeJvp(ember.typeof(x))(x)), (XS[0],), (XS[0],))


def test_hi_values_through_cond_while_and_fori():
    tup = make_tup(jnp.arange(3.0), 5.0)

    def bump(t):
        return make_tup(get(t, 0) + 1, get(t, 1) * 2)

    out = ember.jit(lambda t, p: ember.lax.cond(p, bump, lambda t: t, t))(tup, True)
    np.testing.assert_array_equal(np.asarray(out.elts[0]), [1.0, 2.0, 3.0])
    out = ember.lax.while_loop(lambda t: get(t, 1) < 100, bump, tup)
    assert float(out.elts[1]) == 160.0
    out = ember.lax.fori_loop(0, 3, lambda i, t: bump(t), tup)
    np.testing.assert_array_equal(np.asarray(out.elts[0]), [3.0, 4.0, 5.0])
    q = ember.lax.fori_loop(0, 2, lambda i, q: quantize(dequantize(q) * 2), quantize(XS[0]))
    np.testing.assert_allclose(np.asarray(dequantize(q)), 4 * XS[0], rtol=0.02, atol=0.02)


class MatmulQ(VJPHiPrimitive):
    """f32[m, k] @ q8[k, n]: the per-row scales fold into the dense operand."""

    def __init__(self, x, q):
        if len(x.shape) != 2 or x.shape[1] != q.shape[0]:
            raise TypeError(f"matmul_q: {x} @ {q.str_short()}")
        self.in_avals = (x, q)
        self.out_aval = ShapedArray((x.shape[0], q.shape[1]), np.float32)
        self.params = {}
        super().__init__()

    def expand(self, x, q):
        return (x * q.scale) @ q.qvalue.astype(jnp.float32)

    def vjp_fwd(self, nzs, x, q):
        return self(x, q), (x, q)

    def vjp_bwd_retval(self, res, g):
        x, q = res
        w = dequantize(q)
        return g @ w.T, x.T @ g


def matmul_q(x, q):
    return MatmulQ(ember.typeof(x), ember.typeof(q))(x, q)


def test_dense_times_quantized_matmul_under_jit_grad_and_vmap():
    rng = np.random.RandomState(0)
    xs = rng.randn(5, 2, 3).astype(np.float32)
    ws = rng.randn(5, 3, 4).astype(np.float32)
    w = np.asarray(dequantize(quantize(ws[0])))
    q = quantize(ws[0])
    np.testing.assert_allclose(np.asarray(ember.jit(matmul_q)(xs[0], q)), xs[0] @ w,
                               rtol=1e-5, atol=1e-5)
    # grad with respect to both operands: the weights' gradient is f32[3, 4].
    gx, gq = ember.jit(ember.grad(lambda x, q: jnp.sum(matmul_q(x, q) ** 2), (0, 1)))(xs[0], q)
    y = xs[0] @ w
    np.testing.assert_allclose(np.asarray(gx), 2 * y @ w.T, rtol=1e-4, atol=1e-5)
    assert ember.typeof(gq).str_short() == "float32[3,4]"
    np.testing.assert_allclose(np.asarray(gq), 2 * xs[0].T @ y, rtol=1e-4, atol=1e-5)
    # vmap over the activations (weights shared), then over both.
    out = ember.vmap(lambda x: matmul_q(x, q))(xs)
    np.testing.assert_allclose(np.asarray(out), xs @ w, rtol=1e-5, atol=1e-5)
    qs = ember.vmap(quantize, out_axes=QSpec())(ws)
    wq = np_dequantize(*np_quantize(ws))
    out = ember.vmap(matmul_q, in_axes=(0, QSpec()))(xs, qs)
    np.testing.assert_allclose(np.asarray(out), xs @ wq, rtol=1e-5, atol=1e-5)
    # per-example gradients with respect to the activations
    g = ember.vmap(ember.grad(lambda x, q: jnp.sum(matmul_q(x, q))), in_axes=(0, QSpec()))(xs, qs)
    np.testing.assert_allclose(np.asarray(g), np.broadcast_to(wq.sum(-1)[:, None, :], xs.shape),
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(TypeError, match="matmul_q"):
        matmul_q(xs[0].T, q)


def test_type_without_tangent_type_is_fine_until_differentiated():
    @dataclasses.dataclass(frozen=True)
    class Box:
        v: object

    @dataclasses.dataclass(frozen=True)
    class BoxTy(HiType):
        shape: tuple

        def lo_ty(self):
            return [ShapedArray(self.shape, np.float32)]

        def lower_val(self, b):
            return [b.v]

        def raise_val(self, v):
            return Box(v)

    register_hitype(Box, lambda b: BoxTy(tuple(b.v.shape)))

    class Scale(VJPHiPrimitive):
        def __init__(self, b, x):
            self.in_avals, self.out_aval, self.params = (b, x), x, {}
            super().__init__()

        def expand(self, b, x):
            return b.v * x

        def vjp_fwd(self, nzs, b, x):
            return self(b, x), b

        def vjp_bwd_retval(self, b, g):
            return None, Unbox(ember.typeof(b))(b) * g

    class Unbox(VJPHiPrimitive):
        def __init__(self, b):
            self.in_avals, self.out_aval, self.params = (b,), ShapedArray(b.shape, np.float32), {}
            super().__init__()

        def expand(self, b):
            return b.v

    box = Box(jnp.array([2.0, 3.0]))
    g = ember.grad(lambda x: jnp.sum(Scale(ember.typeof(box), ember.typeof(x))(box, x)))(
        jnp.ones(2))
    np.testing.assert_array_equal(np.asarray(g), [2.0, 3.0])
    with pytest.raises(NotImplementedError, match="to_tangent_aval"):
        ember.grad(lambda b: jnp.sum(Unbox(ember.typeof(b))(b)))(box)


def test_batch_rule_gets_none_for_unbatched_arguments():
    # JAX's new custom-derivatives guide (its MatVec cell): a primitive's
    # `batch` rule sees batch dimension None for an argument that does not
    # vary over the lanes, and computes the whole batch with a kernel of
    # its own (JAX 0.10.2's values).
    seen = []

    class MatVec(VJPHiPrimitive):
        def __init__(self, a_aval, x_aval):
            self.in_avals = (a_aval, x_aval)
            self.out_aval = ShapedArray((a_aval.shape[0],), a_aval.dtype)
            self.params = {}
            super().__init__()

        def expand(self, a, x):
            return a @ x

        def batch(self, axis_data, args, dims):
            a, xs = args
            seen.append(dims)
            xs = jnp.moveaxis(xs, dims[1], 0)
            if dims[0] is None:
                return xs @ a.T, 0
            return jnp.einsum("bij,bj->bi", jnp.moveaxis(a, dims[0], 0), xs), 0

    def matvec(a, x):
        return MatVec(ember.typeof(a), ember.typeof(x))(a, x)

    a = jnp.arange(6.0).reshape(2, 3)
    xs = jnp.arange(12.0).reshape(4, 3)
    want = [[5.0, 14.0], [14.0, 50.0], [23.0, 86.0], [32.0, 122.0]]
    np.testing.assert_array_equal(np.asarray(ember.vmap(matvec, in_axes=(None, 0))(a, xs)), want)
    np.testing.assert_array_equal(
        np.asarray(ember.jit(ember.vmap(lambda x: matvec(a * 1.0, x)))(xs)), want)
    assert seen[-1] == (None, 0)
    # Both batched: both dimensions 0.
    out = ember.vmap(matvec)(jnp.stack([a] * 4), xs)
    np.testing.assert_array_equal(np.asarray(out), want)
    assert seen[-1] == (0, 0)

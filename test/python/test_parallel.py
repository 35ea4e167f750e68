"""Named axes, collectives, shard_map, pmap, meshes and shardings (#22).

Expected values come from NumPy, finite differences, or were recorded from
JAX 0.10.2 with 4 or 8 CPU devices (--xla_force_host_platform_device_count)
running the same programs."""

import re

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src import devices as devices_lib
from ember.sharding import AxisType, NamedSharding
from ember.sharding import PartitionSpec as P
from ember.test_util import check_grads

from helpers import assert_prints_recorded

Auto = AxisType.Auto


def vm(f, x, name="i"):
    return np.asarray(ember.vmap(f, axis_name=name)(x))


# ---------------------------------------------------------------- collectives


def test_reductions_under_named_vmap():
    x = np.array([[1.0, -2.0], [3.0, 5.0], [2.0, 0.5], [-1.0, 4.0]], np.float32)
    np.testing.assert_allclose(vm(lambda v: lax.psum(v, "i"), x), np.tile(x.sum(0), (4, 1)))
    np.testing.assert_allclose(vm(lambda v: lax.pmean(v, "i"), x), np.tile(x.mean(0), (4, 1)))
    np.testing.assert_allclose(vm(lambda v: lax.pmax(v, "i"), x), np.tile(x.max(0), (4, 1)))
    np.testing.assert_allclose(vm(lambda v: lax.pmin(v, "i"), x), np.tile(x.min(0), (4, 1)))
    # A value that is the same on every lane sums to size * value (JAX: [4 4 4 4]).
    np.testing.assert_allclose(vm(lambda v: lax.psum(1.0, "i"), x), [4.0] * 4)
    assert vm(lambda v: lax.axis_size("i") + 0 * v[0], x).tolist() == [4.0] * 4
    assert vm(lambda v: lax.axis_index("i"), x).tolist() == [0, 1, 2, 3]
    # Pytrees and booleans.
    out = ember.vmap(lambda v: lax.psum({"a": v, "b": v > 0}, "i"), axis_name="i")(x)
    np.testing.assert_allclose(out["a"], np.tile(x.sum(0), (4, 1)))
    assert np.asarray(out["b"]).tolist() == [[3, 3]] * 4


def test_gathers_scatters_permutations():
    x = np.arange(4.0, dtype=np.float32) * 2 + 1
    np.testing.assert_allclose(vm(lambda v: lax.all_gather(v, "i"), x), np.tile(x, (4, 1)))
    m = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    # psum_scatter: lane i gets sum over lanes of entry i (JAX: [24 28 32 36]).
    np.testing.assert_allclose(vm(lambda v: lax.psum_scatter(v, "i"), m), m.sum(0))
    m8 = np.arange(32.0, dtype=np.float32).reshape(4, 8)
    np.testing.assert_allclose(vm(lambda v: lax.psum_scatter(v, "i", tiled=True), m8),
                               m8.sum(0).reshape(4, 2))
    np.testing.assert_allclose(vm(lambda v: lax.all_to_all(v, "i", 0, 0), m), m.T)
    np.testing.assert_allclose(vm(lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True), m), m.T)
    g = ember.vmap(lambda v: lax.all_gather(v, "i", axis=1, tiled=True),
                   axis_name="i")(np.arange(8.0).reshape(4, 1, 2))
    assert g.shape == (4, 1, 8)
    np.testing.assert_allclose(g[2, 0], np.arange(8.0))
    # A cyclic shift, a partial permutation (lanes nobody sends to get
    # zeros) and pshuffle.
    np.testing.assert_allclose(
        vm(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]), x), np.roll(x, 1))
    np.testing.assert_allclose(vm(lambda v: lax.ppermute(v, "i", [(0, 2)]), x),
                               [0, 0, x[0], 0])
    np.testing.assert_allclose(vm(lambda v: lax.pshuffle(v, "i", [3, 2, 1, 0]), x), x[::-1])


def test_all_to_all_general_axes():
    x = np.arange(4 * 3 * 4 * 2, dtype=np.float32).reshape(4, 3, 4, 2)
    out = vm(lambda v: lax.all_to_all(v, "i", split_axis=1, concat_axis=0), x)
    # Lane i: out[i][j, a, b] = x[j][a, i, b].
    expect = np.stack([np.stack([x[j][:, i, :] for j in range(4)]) for i in range(4)])
    np.testing.assert_allclose(out, expect)
    out = vm(lambda v: lax.all_to_all(v, "i", split_axis=0, concat_axis=1, tiled=True),
             np.arange(4 * 8 * 2, dtype=np.float32).reshape(4, 8, 2))
    xs = np.arange(4 * 8 * 2, dtype=np.float32).reshape(4, 8, 2)
    expect = np.stack([np.concatenate([xs[j][2 * i:2 * i + 2] for j in range(4)], axis=1)
                       for i in range(4)])
    np.testing.assert_allclose(out, expect)


def test_nested_named_axes():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)

    def f(v):
        return lax.psum(v, ("a", "b")), lax.axis_index(("a", "b")), \
            lax.all_gather(v, ("a", "b"), tiled=True), lax.psum(v, "a")
    s, idx, g, sa = ember.vmap(ember.vmap(f, axis_name="b"), axis_name="a")(x)
    np.testing.assert_allclose(s[1, 2], x.sum((0, 1)))
    assert np.asarray(idx).tolist() == [[0, 1, 2], [3, 4, 5]]
    np.testing.assert_allclose(g[0, 1], x.reshape(24))
    np.testing.assert_allclose(sa[0, 2], x[:, 2].sum(0))


def test_collectives_errors():
    x = jnp.arange(4.0)
    with pytest.raises(NameError, match="unbound axis name: j"):
        ember.vmap(lambda v: lax.psum(v, "j"), axis_name="i")(x)
    with pytest.raises(NameError, match="unbound axis name"):
        lax.psum(x, "i")
    with pytest.raises(ValueError, match="sources and destinations must be unique"):
        ember.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (1, 1)]), axis_name="i")(x)
    with pytest.raises(ValueError, match="out of range"):
        ember.vmap(lambda v: lax.ppermute(v, "i", [(0, 7)]), axis_name="i")(x)
    with pytest.raises(ValueError, match="must equal the axis size"):
        ember.vmap(lambda v: lax.psum_scatter(jnp.ones(3), "i"), axis_name="i")(x)
    # As in JAX, pmax and pmin are not differentiable.
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'pmax'"):
        ember.vmap(ember.grad(lambda v: lax.pmax(v, "i")), axis_name="i")(x)


def test_collective_gradients_vmap_semantics():
    """Under vmap(axis_name) a psum transposes to a psum (JAX 0.10.2:
    vmap(grad(psum(x**2))) = 2 * size * x)."""
    x = jnp.array([1.0, 3.0, 2.0, 3.0])
    g = ember.vmap(ember.grad(lambda v: lax.psum(v ** 2, "i")), axis_name="i")(x)
    np.testing.assert_allclose(g, 8 * np.asarray(x))
    g = ember.grad(lambda v: ember.vmap(lambda u: lax.psum(u ** 2, "i"),
                                        axis_name="i")(v).sum())(x)
    np.testing.assert_allclose(g, 8 * np.asarray(x))
    g = ember.vmap(ember.grad(lambda v: lax.psum(v, "i") * v), axis_name="i")(x)
    np.testing.assert_allclose(g, [18.0] * 4)


@pytest.mark.parametrize("which", ["all_gather", "all_gather_tiled", "psum_scatter",
                                   "ppermute", "all_to_all", "pmean"])
def test_collective_gradients_finite_differences(which):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 4, 3)).astype(np.float32)
    w = rng.normal(size=(4, 4, 3)).astype(np.float32)
    ops = {
        "all_gather": lambda v: lax.all_gather(v, "i"),
        "all_gather_tiled": lambda v: lax.all_gather(v, "i", axis=1, tiled=True),
        "psum_scatter": lambda v: lax.psum_scatter(v, "i"),
        "ppermute": lambda v: lax.ppermute(v, "i", [(0, 1), (1, 3), (3, 0)]),
        "all_to_all": lambda v: lax.all_to_all(v, "i", 0, 1),
        "pmean": lambda v: lax.pmean(v, "i"),
    }

    def f(x):
        y = ember.vmap(lambda v: jnp.sin(ops[which](v * 1.5)), axis_name="i")(x)
        # A fixed weighting of the outputs, so that lanes and entries differ.
        return (y * jnp.cos(jnp.arange(y.size).reshape(y.shape))).sum() + (x * w).sum()
    check_grads(f, (x,), order=2, modes=["fwd", "rev"], atol=2e-2, rtol=2e-2)


# ----------------------------------------------------------------- shardings


def test_devices_and_meshes(devices8):
    assert len(ember.devices()) == 8 and ember.device_count() == 8
    assert [str(d) for d in ember.devices()[:2]] == ["cpu:0", "cpu:1"]
    mesh = ember.make_mesh((4, 2), ("x", "y"))
    assert str(mesh) == "Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit))"
    assert repr(mesh) == ("Mesh(axis_sizes=(4, 2), axis_names=('x', 'y'), "
                          "axis_types=(Explicit, Explicit))")
    assert mesh.shape == {"x": 4, "y": 2} and mesh.size == 8
    m1 = ember.make_mesh((2,), ("i",), axis_types=(Auto,))
    assert str(m1) == "Mesh('i': 2, axis_types=(Auto,))"
    with pytest.raises(ValueError, match="must be >= the product"):
        ember.make_mesh((16,), ("i",))
    assert repr(P("x", None)) == "P('x', None)" and repr(P("i")) == "P('i',)"
    assert repr(P()) == "P()"


def test_device_put_shards_and_typeof(devices8):
    mesh = ember.make_mesh((4, 2), ("X", "Y"))
    ember.set_mesh(mesh)
    x = ember.device_put(jnp.arange(32.0).reshape(8, 4), P("X", "Y"))
    assert str(ember.typeof(x)) == "float32[8@X,4@Y]"
    assert repr(x.sharding) == ("NamedSharding(mesh=Mesh('X': 4, 'Y': 2, axis_types=(Explicit, "
                                "Explicit)), spec=P('X', 'Y'), memory_kind=device)")
    shards = x.addressable_shards
    assert len(shards) == 8
    assert str(shards[1].device) == "cpu:1"
    np.testing.assert_allclose(shards[1].data, [[2.0, 3.0], [6.0, 7.0]])
    assert ember.device_put(x).sharding == x.sharding
    y = ember.device_put(x, NamedSharding(mesh, P("X", None)))
    assert [s.replica_id for s in y.addressable_shards][:2] == [0, 1]
    np.testing.assert_allclose(y.addressable_shards[1].data, np.arange(8.0).reshape(2, 4))
    # JAX 0.10.2's texts: Explicit axes fail as the array's type, Auto ones
    # as the sharding's shard shape.
    with pytest.raises(ValueError, match=re.escape(
            "Sharding spec ('X',) implies that array axis 0 is partitioned 4 times, but does "
            "not evenly divide the dimension size 6. Got shape: (6,) and sharding "
            "NamedSharding(mesh=AbstractMesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit), "
            "device_kind=cpu, num_cores=None, platform=cpu), spec=P('X',))")):
        ember.device_put(jnp.ones(6), P("X"))
    auto = ember.make_mesh((4,), ("a",), axis_types=(Auto,), devices=ember.devices()[:4])
    with pytest.raises(ValueError, match=re.escape(
            "NamedSharding(mesh=Mesh('a': 4, axis_types=(Auto,)), spec=P(None, 'a'), "
            "memory_kind=device) implies that array axis 1 is partitioned 4 times, but the "
            "dimension size is 6 (full shape: (8, 6), per-dimension tiling factors: [1, 4] "
            "should evenly divide the shape)")) as e:
        ember.device_put(np.ones((8, 6)), NamedSharding(auto, P(None, "a")))
    assert type(e.value).__name__ == "IndivisibleError"
    with pytest.raises(ValueError, match="not found in mesh"):
        ember.device_put(jnp.ones(8), P("Z"))
    ember.set_mesh(None)
    with pytest.raises(ValueError, match="no mesh set"):
        ember.device_put(jnp.ones(8), P("X"))


def test_visualize_array_sharding(devices8, capsys):
    mesh = ember.make_mesh((4, 2), ("x", "y"))
    x = ember.device_put(jnp.zeros((8, 4)), NamedSharding(mesh, P("x", "y")))
    ember.debug.visualize_array_sharding(x)
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "\u2502 CPU 0 \u2502 CPU 1 \u2502" and len(lines) == 9
    ember.debug.visualize_array_sharding(ember.device_put(x, NamedSharding(mesh, P("y"))))
    assert capsys.readouterr().out.splitlines()[2] == "\u2502CPU 0,2,4,6\u2502"
    with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
        ember.debug.visualize_sharding((2, 2, 2), NamedSharding(mesh, P()))


def test_ffts_of_sharded_arrays_print_what_jax_prints():
    """FFTs keep the operand's Explicit sharding in their type (an rfft's
    halved dimension too, with JAX's divisibility error where the devices
    do not divide it): each line as JAX 0.10.2 printed it."""
    assert_prints_recorded("sharding", "fft", cpu_meshes=True)


def test_visualize_sharding_draws_what_jax_draws():
    # JAX 0.10.2's pictures (drawn with rich, without colours) character
    # for character: cell sizes from the shape's aspect ratio, paddings,
    # `scale`/`min_width`/`max_width`, a picture wider than the console.
    assert_prints_recorded("sharding", "visualize", cpu_meshes=True)


def test_shard_map_matmul_and_specs(devices8):
    mesh = ember.make_mesh((4, 2), ("x", "y"))
    ember.set_mesh(mesh)
    a = ember.device_put(jnp.arange(8 * 16.0).reshape(8, 16), P("x", "y"))
    b = ember.device_put(jnp.arange(16 * 4.0).reshape(16, 4), P("y", None))

    @ember.shard_map(in_specs=(P("x", "y"), P("y", None)), out_specs=P("x", None))
    def matmul_basic(a_block, b_block):
        assert a_block.shape == (2, 8) and b_block.shape == (8, 4)
        return lax.psum(jnp.dot(a_block, b_block), "y")

    c = matmul_basic(a, b)
    np.testing.assert_allclose(c, np.asarray(a) @ np.asarray(b))
    assert c.sharding.spec == P("x", None)
    # Under jit, and with in_specs inferred from the arguments' shardings.
    c2 = ember.jit(ember.shard_map(lambda a, b: lax.psum(a @ b, "y"),
                                   out_specs=P("x", None)))(a, b)
    np.testing.assert_allclose(c2, c)
    # The transposed layout: out_specs may name other axes than in_specs.
    m = jnp.arange(32.0).reshape(4, 8)
    mesh2 = ember.make_mesh((2, 2), ("a", "b"), axis_types=(Auto, Auto))
    t = ember.shard_map(lambda v: v.T, mesh=mesh2, in_specs=P("a", "b"),
                        out_specs=P("b", "a"))(m)
    mn = np.asarray(m)
    # Block (a=i, b=j) is m[2i:2i+2, 4j:4j+4]; its transpose lands at (j, i).
    np.testing.assert_allclose(t, np.block([[mn[0:2, 0:4].T, mn[2:4, 0:4].T],
                                            [mn[0:2, 4:8].T, mn[2:4, 4:8].T]]))
    # Replication: out_specs P(None, ...) takes one copy; in_specs () closes over x.
    with ember.set_mesh(mesh2):
        x = jnp.array([[3.0]])
        z = ember.shard_map(lambda: x, in_specs=(), out_specs=P("a", "b"))()
        np.testing.assert_allclose(z, np.tile(np.asarray(x), (2, 2)))


def test_shard_map_check_vma(devices8):
    """check_vma=True: the gradient of a replicated argument is summed over
    the devices and psum transposes to pvary; check_vma=False: vmap
    semantics. Values from JAX 0.10.2 on 4 devices."""
    mesh = ember.make_mesh((4,), ("i",), axis_types=(Auto,))
    x = jnp.arange(8.0)
    w = jnp.float32(2.0)
    expect = {True: (28.0, 2 * np.arange(8.0), 56.0), False: (1.0, 8 * np.arange(8.0), 56.0)}
    for cv in (True, False):
        f = ember.shard_map(lambda w, x: ember.grad(lambda w: (w * x).sum())(w), mesh=mesh,
                            in_specs=(P(), P("i")), out_specs=P(), check_vma=cv)
        assert float(f(w, x)) == expect[cv][0]
        f = ember.shard_map(lambda x: ember.grad(lambda v: lax.psum((v ** 2).sum(), "i"))(x),
                            mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=cv)
        np.testing.assert_allclose(f(x), expect[cv][1])
        f = ember.shard_map(
            lambda x: ember.grad(lambda v: (lax.psum(v.sum(), "i") * v).sum())(x),
            mesh=mesh, in_specs=P("i"), out_specs=P("i"), check_vma=cv)
        np.testing.assert_allclose(f(x), [expect[cv][2]] * 8)
    seen = []

    @ember.shard_map(mesh=mesh, in_specs=P("i"), out_specs=P())
    def typed(v):
        seen.append(str(ember.typeof(v)))
        y = lax.psum(v, "i")
        seen.append(str(ember.typeof(y)))
        return y
    np.testing.assert_allclose(typed(x), np.asarray(x).reshape(4, 2).sum(0))
    assert seen == ["float32[2]{V:i}", "float32[2]"]
    # The same for an argument placed with the sharding (its blocks' types
    # carry the varying axis, not the sharding).
    seen.clear()
    typed(ember.device_put(x, NamedSharding(mesh, P("i"))))
    assert seen == ["float32[2]{V:i}", "float32[2]"]
    # On a mesh of Explicit axes (make_mesh's default, JAX's shard_map
    # tutorial) the varying axes show too.
    explicit = ember.make_mesh((4,), ("i",))
    seen.clear()
    ember.shard_map(typed.__wrapped__, mesh=explicit, in_specs=P("i"), out_specs=P())(
        ember.device_put(x, NamedSharding(explicit, P("i"))))
    assert seen == ["float32[2]{V:i}", "float32[2]"]
    with pytest.raises(ValueError, match="require replication"):
        ember.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P())(x)
    np.testing.assert_allclose(
        ember.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P(),
                        check_vma=False)(x), [0.0, 2.0])
    np.testing.assert_allclose(
        ember.shard_map(lambda x: lax.psum(1.0, "i") + x, mesh=mesh, in_specs=P("i"),
                        out_specs=P("i"))(x), np.arange(8.0) + 4)
    # Results outside shard_map vary over no mesh axis.
    y = ember.shard_map(lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)
    np.testing.assert_allclose(ember.jit(lambda x: ember.shard_map(
        lambda v: v * 2, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x) * x)(x),
        np.asarray(y) * np.asarray(x))
    # Differentiating through the whole shard_map.
    g = ember.grad(lambda x: ember.shard_map(lambda v: lax.psum(v ** 2, "i"), mesh=mesh,
                                             in_specs=P("i"), out_specs=P())(x).sum())(x)
    np.testing.assert_allclose(g, 2 * np.arange(8.0))


def test_shard_map_errors(devices8):
    mesh = ember.make_mesh((2,), ("i",))
    ember.set_mesh(mesh)
    x = jnp.arange(6.0)
    # Explicit mesh: the argument's sharding must be the in_spec (JAX's text).
    with pytest.raises(ValueError, match=r"in_specs passed to shard_map: P\('i',\) does not "
                                         r"match the specs of the input: P\(None,\)"):
        ember.shard_map(lambda v: v, in_specs=P("i"), out_specs=P("i"))(x)
    xs = ember.device_put(x, P("i"))
    with pytest.raises(ValueError, match="which has rank 0"):
        ember.shard_map(lambda v: v.sum(), in_specs=P("i"), out_specs=P("i"))(xs)
    with pytest.raises(ValueError, match="should be divisible by 4"):
        ember.shard_map(lambda v: v, mesh=ember.make_mesh((4,), ("j",), axis_types=(Auto,)),
                        in_specs=P("j"), out_specs=P("j"))(x)
    ember.set_mesh(None)
    with pytest.raises(ValueError, match="requires a mesh"):
        ember.shard_map(lambda v: v, in_specs=P("i"), out_specs=P("i"))(x)


def test_ring_allreduce_and_pmap(devices8):
    mesh = ember.make_mesh((8,), ("i",), axis_types=(Auto,))

    def ring(v):
        n = lax.axis_size("i")
        acc = cur = v
        for _ in range(n - 1):
            cur = lax.ppermute(cur, "i", [(j, (j + 1) % n) for j in range(n)])
            acc = acc + cur
        return acc
    x = jnp.arange(16.0)
    out = ember.jit(ember.shard_map(ring, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x)
    np.testing.assert_allclose(out, np.tile(np.asarray(x).reshape(8, 2).sum(0), 8))
    pm = ember.pmap(lambda v: lax.psum(v, "k") * lax.axis_index("k"), axis_name="k")
    np.testing.assert_allclose(pm(jnp.arange(4.0)), [0.0, 6.0, 12.0, 18.0])
    with pytest.raises(ValueError, match="requires 9 logical devices, but only 8"):
        ember.pmap(lambda v: v)(jnp.arange(9.0))
    np.testing.assert_allclose(ember.pmap(jnp.sin)(jnp.arange(3.0)), np.sin(np.arange(3.0)))
    # Any hashable names an axis.
    np.testing.assert_allclose(vm(lambda v: lax.psum(v, 7), np.ones(3), name=7), [3.0] * 3)


def test_callback_per_device_in_shard_map_and_pmap(devices8, capsys):
    """A pure_callback without vmap_method runs once per device inside
    shard_map and pmap (JAX's callbacks guide: "one callback per device"),
    while a vmap of the user's still rejects it, inside shard_map too."""
    def host(x):
        print(f"callback received shape {x.shape}")
        return np.asarray(x) * 2

    def f(x):
        return ember.pure_callback(host, ember.ShapeDtypeStruct.like(x), x)

    mesh = ember.make_mesh((4,), ("i",), axis_types=(Auto,))
    x = jnp.arange(8.0)
    out = ember.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)
    np.testing.assert_allclose(out, 2 * np.arange(8.0))
    assert capsys.readouterr().out == "callback received shape (2,)\n" * 4
    out = ember.pmap(f)(jnp.arange(6.0).reshape(3, 2))
    np.testing.assert_allclose(out, 2 * np.arange(6.0).reshape(3, 2))
    assert capsys.readouterr().out == "callback received shape (2,)\n" * 3
    with pytest.raises(NotImplementedError, match="has no vmap_method"):
        ember.vmap(f)(x)
    with pytest.raises(NotImplementedError, match="has no vmap_method"):
        ember.shard_map(ember.vmap(f), mesh=mesh, in_specs=P("i"),
                        out_specs=P("i"))(x.reshape(8, 1))
    with pytest.raises(NotImplementedError, match="has no vmap_method"):
        ember.vmap(ember.shard_map(f, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(
            x.reshape(2, 4))


def test_data_parallel_training_matches_one_device(devices8):
    """The MLP's data-parallel step on 8 devices (shard_map, pmean of the
    gradients) follows the single-device loss curve."""
    rng = np.random.default_rng(1)
    xs = jnp.asarray(rng.normal(size=(64, 16)).astype(np.float32))
    ys = jnp.asarray(rng.normal(size=(64, 4)).astype(np.float32))
    params = [(jnp.asarray(rng.normal(size=(16, 32)).astype(np.float32) / 4), jnp.zeros(32)),
              (jnp.asarray(rng.normal(size=(32, 4)).astype(np.float32) / 6), jnp.zeros(4))]

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        w, b = params[-1]
        return jnp.mean((x @ w + b - y) ** 2)

    @ember.jit
    def step(params, x, y):
        g = ember.grad(loss)(params, x, y)
        return ember.tree.map(lambda p, d: p - 0.1 * d, params, g), loss(params, x, y)

    mesh = ember.make_mesh((8,), ("batch",), axis_types=(Auto,))

    # JAX's tutorial form: the loss averaged with pmean inside shard_map,
    # differentiated outside.
    loss_dp = ember.shard_map(lambda p, x, y: lax.pmean(loss(p, x, y), "batch"), mesh=mesh,
                              in_specs=(P(), P("batch"), P("batch")), out_specs=P())

    @ember.jit
    def step_dp(params, x, y):
        value, g = ember.value_and_grad(loss_dp)(params, x, y)
        return ember.tree.map(lambda p, d: p - 0.1 * d, params, g), value

    # Gradients taken per device. With check_vma=False they are per-device
    # gradients to average; with check_vma (the default) the gradient of the
    # replicated parameters is already summed over the devices (as in JAX).
    def local_step(check_vma, scale):
        def local(params, x, y):
            value, g = ember.value_and_grad(loss)(params, x, y)
            return ember.tree.map(lambda d: lax.pmean(d, "batch") * scale, g), \
                lax.pmean(value, "batch")

        @ember.jit
        def run(params, x, y):
            g, value = ember.shard_map(local, mesh=mesh,
                                       in_specs=(P(), P("batch"), P("batch")),
                                       out_specs=(P(), P()), check_vma=check_vma)(params, x, y)
            return ember.tree.map(lambda p, d: p - 0.1 * d, params, g), value
        return run

    steps = [step_dp, local_step(False, 1.0), local_step(True, 1 / 8)]
    p1, l1s = params, []
    ps, ls = [params] * len(steps), [[] for _ in steps]
    for _ in range(5):
        p1, l1 = step(p1, xs, ys)
        l1s.append(float(l1))
        for k, st in enumerate(steps):
            ps[k], lk = st(ps[k], xs, ys)
            ls[k].append(float(lk))
    for curve in ls:
        np.testing.assert_allclose(curve, l1s, rtol=1e-5)
    assert l1s[-1] < l1s[0]


def test_collectives_inside_control_flow():
    x = jnp.arange(8.0).reshape(4, 2)
    s = np.asarray(x).sum(0)
    shift = [(j, (j + 1) % 4) for j in range(4)]

    def ring(v):
        def body(i, carry):
            acc, cur = carry
            cur = lax.ppermute(cur, "i", shift)
            return acc + cur, cur
        return lax.fori_loop(0, 3, body, (v, v))[0]
    np.testing.assert_allclose(vm(ring, x), np.tile(s, (4, 1)))
    np.testing.assert_allclose(ember.grad(lambda x: ember.vmap(ring, axis_name="i")(x).sum())(x),
                               np.full((4, 2), 4.0))

    def w(v):
        return lax.while_loop(lambda c: c[1] < 3,
                              lambda c: (c[0] + lax.psum(c[0], "i"), c[1] + 1), (v, 0))[0]
    np.testing.assert_allclose(vm(w, x), np.asarray(x) + 31 * s)
    np.testing.assert_allclose(
        vm(lambda v: lax.scan(lambda c, _: (c + lax.axis_index("i"), None), v, None,
                              length=2)[0], x), np.asarray(x) + 2 * np.arange(4)[:, None])
    np.testing.assert_allclose(
        vm(lambda v: lax.cond(v[0] > 2, lambda: lax.psum(v, "i"), lambda: v), x),
        [[0, 1], [2, 3], s, s])


def test_colocated_python_in_one_process(devices8):
    from ember.experimental.colocated_python import colocated_python, colocated_python_class

    calls = []

    @colocated_python
    def double(x):
        calls.append(type(x).__name__)
        return x * 2
    x = ember.device_put(jnp.arange(4.0), ember.devices()[3])
    assert x.device is ember.devices()[3] and x.devices() == {ember.devices()[3]}
    np.testing.assert_allclose(double(x), [0.0, 2.0, 4.0, 6.0])
    assert calls == ["Array"]
    spec = double.specialize(out_specs_fn=lambda x: ember.ShapeDtypeStruct((4,), jnp.float32))
    np.testing.assert_allclose(spec(x), [0.0, 2.0, 4.0, 6.0])
    bad = double.specialize(out_specs_fn=lambda x: ember.ShapeDtypeStruct((5,), jnp.float32))
    with pytest.raises(ValueError, match="out_specs_fn says"):
        bad(x)
    with pytest.raises(TypeError, match="outside jit"):
        ember.jit(double)(x)

    @colocated_python_class
    class Counter:
        def __init__(self):
            self.total = 0.0

        def add(self, v):
            self.total += float(np.asarray(v).sum())
            return np.float32(self.total)
    c = Counter()
    c.add(x)
    assert float(c.add(x)) == 12.0


# ------------------------------------------------- shardings in types (Explicit)


def test_explicit_mode_programs_print_what_jax_prints():
    """Sharding propagation through elementwise ops, transposes, reductions,
    reshapes (splits and merges), broadcasting and products, JAX's errors
    (sharded contracting dimensions, incompatible and illegal shardings,
    unsupported reshapes), `jit` results, `out_sharding=` on dot/einsum and
    random draws, `reshard` inside `jit`, `auto_axes`, `use_abstract_mesh`
    and `jax_num_cpu_devices`; joins, pads, cumulative ops and sorts (JAX's
    errors for sharded joined-in-one and along-axis dimensions), gathers of
    whole sharded extents, `*_like`: each line as JAX 0.10.2 printed it."""
    assert_prints_recorded("sharding", "explicit_mode", cpu_meshes=True)


def test_shardings_follow_ops_and_jit_caches_by_sharding(devices8):
    mesh = ember.make_mesh((2, 4), ("X", "Y"))
    x = ember.device_put(jnp.arange(32.0).reshape(8, 4), NamedSharding(mesh, P("X", "Y")))
    f = ember.jit(lambda v: jnp.cos(v) + 1)
    # The same program for an unsharded argument, then a sharded one, then
    # again unsharded: the results' types follow the arguments' (the fast
    # path keys on the sharding too).
    for arg, want in [(jnp.ones((8, 4)), "float32[8,4]"), (x, "float32[8@X,4@Y]"),
                      (jnp.ones((8, 4)), "float32[8,4]"), (x, "float32[8@X,4@Y]")]:
        assert str(ember.typeof(f(arg))) == want
    np.testing.assert_allclose(f(x), np.cos(np.arange(32.0).reshape(8, 4)) + 1, atol=1e-6)
    # Auto axes are not in the type, but the array's sharding follows them.
    auto = ember.make_mesh((2, 4), ("X", "Y"), (Auto, Auto))
    a = ember.device_put(jnp.arange(8.0), NamedSharding(auto, P("X")))
    b = jnp.sin(a)
    assert str(ember.typeof(b)) == "float32[8]"
    assert b.sharding == NamedSharding(auto, P("X"))
    assert ember.typeof(b).sharding.spec == P(None)
    # An ambiguous result over Auto axes is unsharded there, not an error.
    m = ember.device_put(jnp.ones((8, 8)), NamedSharding(auto, P(None, "X")))
    assert (m @ m).sharding.spec == P(None, "X")
    assert (m @ m.T).sharding.spec == P()
    # A function's result sharding set by a constraint inside `jit`.
    g = ember.jit(lambda v: lax.with_sharding_constraint(v * 2, NamedSharding(auto, P("Y"))))
    assert g(a).sharding == NamedSharding(auto, P("Y"))
    # Gradients and vmap run on sharded arguments (values as unsharded).
    gx = ember.grad(lambda v: jnp.sum(jnp.sin(v) * v))(x)
    xv = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    np.testing.assert_allclose(gx, np.cos(xv) * xv + np.sin(xv), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ember.vmap(jnp.sum)(x), xv.sum(1))


def test_explicit_axes_switches_the_mesh(devices8):
    from ember.sharding import explicit_axes, get_abstract_mesh

    auto = ember.make_mesh((4, 2), ("X", "Y"), (Auto, Auto))
    seen = []

    @explicit_axes
    def g(y):
        seen.append((str(get_abstract_mesh()), str(ember.typeof(y)), str(ember.typeof(y * 2))))
        return y * 2

    @ember.jit
    def f(v):
        seen.append(str(get_abstract_mesh()))
        return g(jnp.sin(v), in_sharding=P("X", "Y")) + 1

    with ember.set_mesh(auto):
        v = ember.device_put(np.arange(16.0, dtype=np.float32).reshape(4, 4), P("X", "Y"))
        out = f(v)
    np.testing.assert_allclose(out, np.sin(np.arange(16.0).reshape(4, 4)) * 2 + 1, rtol=1e-6)
    # (JAX 0.10.2's texts, from JAX's explicit sharding tutorial.)
    assert seen[0] == ("AbstractMesh('X': 4, 'Y': 2, axis_types=(Auto, Auto), "
                       "device_kind=cpu, num_cores=None, platform=cpu)")
    assert seen[1] == ("AbstractMesh('X': 4, 'Y': 2, axis_types=(Explicit, Explicit), "
                       "device_kind=cpu, num_cores=None, platform=cpu)",
                       "float32[4@X,4@Y]", "float32[4@X,4@Y]")
    with pytest.raises(TypeError, match="in_sharding"):
        g(v)
    with pytest.raises(ValueError, match="Context mesh cannot be empty"):
        g(v, in_sharding=P("X"))
    manual = ember.make_mesh((8,), ("M",), (AxisType.Manual,))
    with ember.set_mesh(manual), pytest.raises(ValueError, match="cannot switch Manual"):
        ember.sharding.auto_axes(lambda a: a, out_sharding=P())(v)


def test_committed_arrays_and_incompatible_devices(devices8):
    """JAX's placement rules (texts recorded from JAX 0.10.2): `device_put`
    commits an array to its device, results of committed arrays stay there,
    and a computation over arrays committed to different devices is an
    error naming both arguments."""
    devs = ember.devices()
    x = jnp.arange(3.0)
    y = ember.device_put(x, devs[1])
    assert not x.committed and y.committed and not ember.device_put(x).committed
    assert ember.device_put(x, devs[0]).committed
    assert not (x + 1).committed and (y + 1).committed
    assert (y + x).sharding == devices_lib.SingleDeviceSharding(devs[1])
    assert ember.jit(lambda a: a * 2)(y).sharding == devices_lib.SingleDeviceSharding(devs[1])
    with pytest.raises(ValueError, match=re.escape(
            "Received incompatible devices for jitted computation. Got argument x of add with "
            "shape float32[3] and with device ids [1] on platform CPU and argument y of add "
            "with shape float32[3] and with device ids [2] on platform CPU")):
        y + ember.device_put(x, devs[2])
    with pytest.raises(ValueError, match=re.escape(
            "Got argument a of test_committed_arrays_and_incompatible_devices.<locals>.f with "
            "shape float32[3] and with device ids [1] on platform CPU and argument b['k'] of")):
        def f(a, b):
            return a * b["k"]
        ember.jit(f)(y, {"k": ember.device_put(x, devs[2])})
    np.testing.assert_allclose(y * x, np.arange(3.0) ** 2)


def test_device_put_to_another_mesh_inside_jit(devices8):
    devs = ember.devices()
    mesh_a = ember.make_mesh((4,), ("x",), devices=devs[:4])
    mesh_b = ember.make_mesh((4,), ("x",), devices=devs[4:])
    xa = ember.device_put(np.arange(8.0), NamedSharding(mesh_a, P("x")))
    with pytest.raises(ValueError, match=re.escape(
            "with shape float32[8@x] and with device ids [0, 1, 2, 3] on platform CPU and "
            "device_put inside jit with device ids [4, 5, 6, 7]")):
        ember.jit(lambda v: ember.device_put(v, NamedSharding(mesh_b, P("x"))) * 2)(xa)
    # Onto the same devices inside jit: the result takes that sharding.
    out = ember.jit(lambda v: ember.device_put(v, NamedSharding(mesh_a, P())) * 2)(xa)
    assert str(ember.typeof(out)) == "float32[8]"
    np.testing.assert_allclose(out, np.arange(8.0) * 2)
    # Outside jit the array moves.
    assert ember.device_put(xa, NamedSharding(mesh_b, P("x"))).sharding.mesh == mesh_b


def test_library_functions_on_explicitly_sharded_arrays(devices8):
    """Ember's own functions reshape and slice where JAX's have one
    primitive (the FFT's radix-2 steps): no sharding error from inside them,
    while a user's own unsupported reshape keeps JAX's error. Slices keep
    the operand's axes where the result still splits evenly (JAX's types)."""
    mesh = ember.make_mesh((2, 4), ("X", "Y"))
    x = ember.device_put(jnp.arange(64.0).reshape(16, 4), NamedSharding(mesh, P("X", "Y")))
    xv = np.arange(64.0).reshape(16, 4)
    np.testing.assert_allclose(jnp.fft.fft(x, axis=1), np.fft.fft(xv, axis=1), atol=1e-4)
    with pytest.raises(TypeError, match="This reshape is not supported"):
        x.reshape(16, 2, 2)
    with pytest.raises(TypeError, match="This reshape is not supported"):
        ember.jit(lambda v: jnp.reshape(v, (16, 2, 2)))(x)
    assert str(ember.typeof(lax.slice(x, (2, 0), (8, 4)))) == "float32[6@X,4@Y]"
    assert str(ember.typeof(lax.slice(x, (0, 1), (16, 3)))) == "float32[16@X,2]"
    assert str(ember.typeof(lax.dynamic_slice(x, (jnp.int32(2), 0), (4, 4)))) == \
        "float32[4@X,4@Y]"
    np.testing.assert_allclose(lax.slice(x, (2, 0), (8, 4)), xv[2:8])


def test_printing_in_eager_shard_map_shows_each_device(devices8, capsys):
    """JAX's shard_map guide: a value printed in a shard_map body called
    outside jit shows each device's block under its mesh coordinates (text
    recorded from JAX 0.10.2); under jit it stays a tracer."""
    mesh2d = ember.make_mesh((2, 2), ("i", "j"), axis_types=(Auto, Auto))

    def f2(x_block):
        print("BEFORE:\n", x_block)
        y_block = lax.psum(x_block, "i")
        print("AFTER:\n", y_block)
        return y_block

    g = ember.shard_map(f2, mesh=mesh2d, in_specs=P("i", "j"), out_specs=P(None, "j"))
    y = g(jnp.arange(16).reshape(4, 4))
    np.testing.assert_array_equal(y, [[8, 10, 12, 14], [16, 18, 20, 22]])
    blocks = {(0, 0): "[[0 1]\n [4 5]]", (0, 1): "[[2 3]\n [6 7]]",
              (1, 0): "[[ 8  9]\n [12 13]]", (1, 1): "[[10 11]\n [14 15]]"}
    sums = {(0, 0): "[[ 8 10]\n [16 18]]", (0, 1): "[[12 14]\n [20 22]]",
            (1, 0): "[[ 8 10]\n [16 18]]", (1, 1): "[[12 14]\n [20 22]]"}

    def text(vals):
        return "\n".join(f"On cpu:{2 * a + b} at mesh coordinates (i, j,) = ({a}, {b}):\n"
                         f"{vals[a, b]}\n" for a in range(2) for b in range(2))
    assert capsys.readouterr().out == (f"BEFORE:\n {text(blocks)}\nAFTER:\n {text(sums)}\n")
    # A replicated argument: every device shows the whole value.
    mesh = ember.make_mesh((2,), ("i",), axis_types=(Auto,))
    ember.shard_map(lambda x: print(x) or 2 * x, mesh=mesh, in_specs=P(), out_specs=P())(
        jnp.arange(3.0))
    assert capsys.readouterr().out == (
        "On cpu:0 at mesh coordinates (i,) = (0,):\n[0. 1. 2.]\n\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n[0. 1. 2.]\n\n")
    ember.jit(ember.shard_map(lambda x: print(x) or x, mesh=mesh, in_specs=P("i"),
                              out_specs=P("i")))(jnp.arange(4.0))
    assert capsys.readouterr().out == "JitTracer(float32[2]{V:i})\n"


# ------------------------------------------ unreduced and reduced shardings


def test_unreduced_and_reduced_programs_print_what_jax_prints():
    """PartitionSpec's `unreduced`/`reduced`, their types (`{U:X}`, `{R:X}`),
    the rules of ops on them with JAX's errors, products asked for
    unreduced results, reshards, the cotangent map under `grad` and JAX's
    microbatch accumulation step: each line as JAX 0.10.2 printed it."""
    assert_prints_recorded("sharding", "unreduced", cpu_meshes=True)


def _ur_setup():
    ember.set_mesh(ember.make_mesh((2,), ("X",)))
    x = ember.device_put(jnp.arange(8.0).reshape(2, 4), P())
    return x, ember.reshard(x, P(unreduced={"X"})), ember.reshard(x, P(reduced={"X"}))


def test_unreduced_linear_ops_beyond_jax(devices8):
    """Negation, subtraction, reshapes, indexing and division by a reduced
    divisor are linear in an unreduced operand: Ember types them (JAX
    0.10.2 has no rule and raises); the values are the reduced ones."""
    x, u, r = _ur_setup()
    for f, want in [(lambda: -u, -x), (lambda: u - u, 0 * x), (lambda: u.reshape(8), x.reshape(8)),
                    (lambda: u[1], x[1]), (lambda: u[:, :2], x[:, :2]), (lambda: u / r, x / x),
                    (lambda: jnp.cumsum(u, axis=1), jnp.cumsum(x, axis=1))]:
        v = f()
        assert ember.typeof(v).sharding.spec.unreduced == {"X"}
        np.testing.assert_allclose(ember.reshard(v, P()), want, rtol=1e-6)
    for f in [lambda: jnp.sin(u), lambda: u.max(), lambda: jnp.exp(u) + 1, lambda: r / u]:
        with pytest.raises(NotImplementedError, match="unreduced rule for"):
            f()
    # Reduced arrays keep the state through ops of another shape.
    for f in [lambda: r[0], lambda: r.reshape(8), lambda: r.max(), jnp.argmax, jnp.sort]:
        v = f(r) if f in (jnp.argmax, jnp.sort) else f()
        assert ember.typeof(v).sharding.spec.reduced == {"X"}


def test_unreduced_arrays_hold_the_reduced_value(devices8):
    """An unreduced array is held as its reduced value: its device pieces
    are that value on the first device along the axes and zeros elsewhere
    (partial sums adding up to it), and it prints without values, as JAX's."""
    x, u, r = _ur_setup()
    shards = u.addressable_shards
    np.testing.assert_array_equal(shards[0].data, x)
    np.testing.assert_array_equal(shards[1].data, np.zeros((2, 4)))
    assert sum(np.asarray(s.data) for s in shards).tolist() == np.asarray(x).tolist()
    assert repr(u).startswith("Array(shape=(2, 4), dtype=float32, sharding=NamedSharding(")
    assert "unreduced={'X'}" in repr(u)
    assert [np.asarray(s.data).tolist() for s in r.addressable_shards] == \
        [np.asarray(x).tolist()] * 2
    # The types are part of jit's cache key.
    f = ember.jit(lambda v: v * 2)
    assert ember.typeof(f(r)).sharding.spec.reduced == {"X"}
    assert not ember.typeof(f(x)).sharding.spec.reduced


def test_gradients_through_reduced_weights_match_replicated_ones(devices8):
    """The cotangent map (reduced <-> unreduced) changes types only: the
    gradient of a data-parallel loss through a reduced cast, of reduced
    weights, and a microbatch accumulation of unreduced gradients equal the
    plain gradients (finite differences for the plain one)."""
    ember.set_mesh(ember.make_mesh((2,), ("X",)))
    rng = np.random.default_rng(0)
    w = ember.device_put(jnp.asarray(rng.normal(size=(4, 3)), jnp.float32), P())
    xb = ember.device_put(jnp.asarray(rng.normal(size=(8, 4)), jnp.float32), P("X", None))

    def loss(w):
        return jnp.sum(jnp.tanh(xb @ w) ** 2)

    def loss_reduced(w):
        return loss(ember.reshard(w, P(reduced={"X"})))

    want = ember.grad(loss)(w)
    check_grads(loss, (w,), order=1, modes=["rev"], atol=1e-2, rtol=1e-2)
    got = ember.grad(loss_reduced)(w)
    assert ember.typeof(got).sharding.spec == P(None, None)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    wr = ember.reshard(w, P(reduced={"X"}))
    g = ember.jit(ember.grad(loss))(wr)
    assert ember.typeof(g).sharding.spec.unreduced == {"X"}
    np.testing.assert_allclose(ember.reshard(g, P()), want, rtol=1e-5)

    @ember.jit
    def accumulate(w, xs):
        def one(acc, x):
            g = ember.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w)
            return acc + g, None
        acc = ember.reshard(jnp.zeros_like(w), P(unreduced={"X"}))
        acc, _ = lax.scan(one, acc, xs)
        return ember.reshard(acc, P())

    xs = ember.device_put(jnp.asarray(rng.normal(size=(3, 8, 4)), jnp.float32),
                          P(None, "X", None))
    total = accumulate(wr, xs)
    expect = sum(ember.grad(lambda w, k=k: jnp.sum(jnp.tanh(xs[k] @ w) ** 2))(w)
                 for k in range(3))
    np.testing.assert_allclose(total, expect, rtol=1e-5)
    assert ember.typeof(total).sharding.spec == P(None, None)


def test_unreduced_and_reduced_in_shard_map_print_what_jax_prints():
    """shard_map's unreduced/reduced in_specs and out_specs, `pcast` to
    'unreduced' and 'reduced', psum of an unreduced value, the body's types
    and gradients (reduced weights get unreduced gradients, equal to the
    plain ones): each line as JAX 0.10.2 printed it."""
    assert_prints_recorded("sharding", "unreduced_manual", cpu_meshes=True)


def test_unreduced_in_shard_map_errors(devices8):
    mesh = ember.make_mesh((2,), ("X",))
    ember.set_mesh(mesh)
    xs = ember.device_put(jnp.arange(8.0), P("X"))

    def run(body, out_specs=None):
        out_specs = P("X") if out_specs is None else out_specs
        return ember.shard_map(body, in_specs=P("X"), out_specs=out_specs)(xs)

    # pcast to unreduced takes a varying value; to reduced an invariant one.
    with pytest.raises(TypeError, match="takes a varying value"):
        run(lambda a: lax.pcast(lax.psum(a, "X"), "X", to="unreduced"), out_specs=P())
    with pytest.raises(TypeError, match="takes an invariant value"):
        run(lambda a: lax.pcast(a, "X", to="reduced"))
    with pytest.raises(ValueError, match="must be 'varying'"):
        run(lambda a: lax.pcast(a, "X", to="sideways"))
    # out_specs must agree with the output's unreduced axes.
    with pytest.raises(ValueError, match="not unreduced over it"):
        run(lambda a: a.sum(), out_specs=P(unreduced={"X"}))
    with pytest.raises(ValueError, match="reduce it with jax.lax.psum"):
        run(lambda a: lax.pcast(a.sum(), "X", to="unreduced"), out_specs=P())
    # Only linear ops and psum take unreduced values.
    with pytest.raises(NotImplementedError, match="pmax of a value unreduced"):
        run(lambda a: lax.pmax(lax.pcast(a.sum(), "X", to="unreduced"), "X"), out_specs=P())
    with pytest.raises(NotImplementedError, match="unreduced rule for exp"):
        run(lambda a: jnp.exp(lax.pcast(a, "X", to="unreduced")),
            out_specs=P(unreduced={"X"}))
    # A reduced value meeting a varying one is a free cast: the gradient of
    # a reduced weight stays one per device until the outer reduction.
    w = ember.device_put(jnp.arange(4.0), P())

    def f(w):
        def body(a, w):
            return a * lax.pcast(w, "X", to="reduced")
        y = ember.shard_map(body, in_specs=(P("X"), P()), out_specs=P("X"))(xs, w)
        return jnp.sum(y ** 2)
    np.testing.assert_allclose(ember.grad(f)(w), 2 * np.arange(4.0) * (
        np.arange(4.0) ** 2 + np.arange(4.0, 8.0) ** 2), rtol=1e-6)


# ------------------------------------------------------------ axis_index_groups


def test_axis_index_groups_match_jax(devices8):
    """Collectives within groups of a pmap or shard_map axis (values recorded
    from JAX 0.10.2's pmap on 4 CPU devices); JAX's errors for groups that
    do not cover the axis, and for a user's vmap."""
    x = jnp.arange(4.0)
    g = [[0, 1], [2, 3]]

    def pm(f, v=x):
        return np.asarray(ember.pmap(f, axis_name="i")(v))

    np.testing.assert_array_equal(pm(lambda v: lax.psum(v, "i", axis_index_groups=g)),
                                  [1, 1, 5, 5])
    np.testing.assert_array_equal(
        pm(lambda v: lax.pmax(v, "i", axis_index_groups=[[0, 2], [1, 3]])), [2, 3, 2, 3])
    np.testing.assert_array_equal(
        pm(lambda v: lax.pmin(v, "i", axis_index_groups=[[3, 0], [1, 2]])), [0, 1, 1, 0])
    np.testing.assert_array_equal(
        pm(lambda v: lax.pmean(v, "i", axis_index_groups=[[0, 3], [1, 2]])), [1.5] * 4)
    np.testing.assert_array_equal(
        pm(lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1, 2], [3]])), [3] * 4)
    np.testing.assert_array_equal(pm(lambda v: lax.all_gather(v, "i", axis_index_groups=g)),
                                  [[0, 1], [0, 1], [2, 3], [2, 3]])
    np.testing.assert_array_equal(
        pm(lambda v: lax.all_gather(v, "i", axis_index_groups=[[0, 2], [1, 3]], tiled=True),
           jnp.arange(8.0).reshape(4, 2)),
        [[0, 1, 4, 5], [2, 3, 6, 7], [0, 1, 4, 5], [2, 3, 6, 7]])
    np.testing.assert_array_equal(
        pm(lambda v: lax.psum_scatter(jnp.stack([v, 2 * v]), "i", axis_index_groups=g)),
        [1, 2, 5, 10])
    np.testing.assert_array_equal(
        pm(lambda v: lax.psum_scatter(v, "i", axis_index_groups=[[0, 2], [1, 3]], tiled=True),
           jnp.arange(16.0).reshape(4, 4)), [[8, 10], [16, 18], [12, 14], [20, 22]])
    bools = jnp.array([True, False, True, True])
    got = pm(lambda v: lax.psum(v, "i", axis_index_groups=g), bools)
    assert got.tolist() == [1, 1, 2, 2] and got.dtype == np.int32
    grad = ember.grad(lambda y: ember.pmap(
        lambda v: lax.psum(v * v, "i", axis_index_groups=g), axis_name="i")(y).sum())(x)
    np.testing.assert_array_equal(grad, [0, 4, 8, 12])
    # In shard_map (typed: the group's sum varies over the axis).
    mesh = ember.make_mesh((4,), ("i",))
    xs = ember.device_put(x, NamedSharding(mesh, P("i")))
    out = ember.jit(ember.shard_map(lambda v: lax.psum(v, "i", axis_index_groups=g),
                                    mesh=mesh, in_specs=P("i"), out_specs=P("i")))(xs)
    np.testing.assert_array_equal(out, [1, 1, 5, 5])
    for bad in ([[0, 1], [1, 3]], [[0, 1]], [[0, 5], [1, 2]]):
        with pytest.raises(ValueError, match="cover all indices exactly once"):
            pm(lambda v, b=bad: lax.psum(v, "i", axis_index_groups=b))
    with pytest.raises(ValueError, match="same size"):
        pm(lambda v: lax.all_gather(v, "i", axis_index_groups=[[0, 1, 2], [3]]))
    with pytest.raises(NotImplementedError, match="not supported in vmap collectives"):
        ember.vmap(lambda v: lax.psum(v, "i", axis_index_groups=g), axis_name="i")(x)
    # all_to_all within groups (38th session; values from JAX 0.10.2's pmap).
    x3 = jnp.arange(24.0).reshape(4, 2, 3)
    np.testing.assert_array_equal(
        pm(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=[[0, 2], [1, 3]]), x3),
        [[[0, 1, 2], [12, 13, 14]], [[6, 7, 8], [18, 19, 20]], [[3, 4, 5], [15, 16, 17]],
         [[9, 10, 11], [21, 22, 23]]])
    np.testing.assert_array_equal(
        pm(lambda v: lax.all_to_all(v, "i", 0, 1, axis_index_groups=[[3, 0], [1, 2]]), x3),
        [[[21, 3], [22, 4], [23, 5]], [[6, 12], [7, 13], [8, 14]], [[9, 15], [10, 16], [11, 17]],
         [[18, 0], [19, 1], [20, 2]]])
    np.testing.assert_array_equal(
        pm(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True, axis_index_groups=g),
           jnp.arange(32.0).reshape(4, 2, 4)),
        [[[0, 1], [4, 5], [8, 9], [12, 13]], [[2, 3], [6, 7], [10, 11], [14, 15]],
         [[16, 17], [20, 21], [24, 25], [28, 29]], [[18, 19], [22, 23], [26, 27], [30, 31]]])
    w = jnp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(
        ember.pmap(ember.grad(lambda v: jnp.sum(lax.all_to_all(
            v, "i", 0, 0, axis_index_groups=[[0, 2], [1, 3]]) * w)), axis_name="i")(x3),
        [[[0, 1, 2], [0, 1, 2]], [[0, 1, 2], [0, 1, 2]], [[3, 4, 5], [3, 4, 5]],
         [[3, 4, 5], [3, 4, 5]]])
    with pytest.raises(ValueError, match="must equal the size of the axis_index_groups"):
        pm(lambda v: lax.all_to_all(v, "i", 1, 0, axis_index_groups=g), x3)


def test_unreduced_shard_map_with_a_mesh_argument(devices8):
    """A shard_map given `mesh=` (none set) types its unreduced values on
    that mesh."""
    mesh = ember.make_mesh((2,), ("X",))
    x = ember.device_put(jnp.arange(4.0), NamedSharding(mesh, P("X")))
    f = ember.shard_map(lambda a: lax.pcast(a.sum(), "X", to="unreduced"), mesh=mesh,
                        in_specs=P("X"), out_specs=P(unreduced={"X"}))
    out = f(x)
    assert str(ember.typeof(out)) == "float32[]{U:X}"
    np.testing.assert_allclose(ember.reshard(out, NamedSharding(mesh, P())), 6.0)


def test_colocated_cpu_devices():
    # JAX's colocated-Python guide: a CPU device is its own colocated CPU
    # device, and the guide's first cells run on them.
    from ember.experimental import colocated_python

    devs = ember.devices()
    cpus = colocated_python.colocated_cpu_devices(devs)
    assert cpus == devs
    mesh = ember.sharding.Mesh(cpus, ["x"])
    x = ember.device_put(1, ember.sharding.NamedSharding(mesh, ember.P()))
    assert int(ember.jit(lambda v: v + 1)(x)) == 2
    y = colocated_python.colocated_python(lambda v: v + 1)(x)
    assert int(y) == 2 and y.sharding == x.sharding

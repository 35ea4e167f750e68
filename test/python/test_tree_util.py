"""ember.tree_util: flatten/unflatten, map, registration, transpose."""

import collections
import dataclasses
import gc
import weakref

import numpy as np
import pytest

import ember as jax
from ember import tree_util as tu

from helpers import jnp

Point = collections.namedtuple("Point", ["x", "y"])


def test_flatten_unflatten_builtin_containers():
    tree = {"b": [1, (2, 3)], "a": 4, "c": None}
    leaves, treedef = tu.tree_flatten(tree)
    assert leaves == [4, 1, 2, 3]  # dict keys are sorted, None is an empty node
    assert tu.tree_unflatten(treedef, leaves) == tree
    assert treedef.num_leaves == 4
    assert tu.tree_unflatten(treedef, [10, 11, 12, 13]) == {"b": [11, (12, 13)], "a": 10, "c": None}


def test_none_and_leaf():
    assert tu.tree_leaves(None) == []
    assert tu.tree_leaves([None, 1, None]) == [1]
    leaves, treedef = tu.tree_flatten(5)
    assert leaves == [5] and tu.treedef_is_leaf(treedef)
    assert tu.tree_map(lambda x: x, None) is None
    assert tu.tree_structure((None,)) != tu.tree_structure((1,))


def test_namedtuple():
    p = Point(1, [2, 3])
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 2, 3]
    out = tu.tree_unflatten(treedef, [4, 5, 6])
    assert isinstance(out, Point) and out == Point(4, [5, 6])


def test_tree_map_multiple_trees_and_is_leaf():
    a = {"x": 1, "y": (2, 3)}
    b = {"x": 10, "y": (20, 30)}
    assert tu.tree_map(lambda u, v: u + v, a, b) == {"x": 11, "y": (22, 33)}
    out = tu.tree_map(lambda t: len(t), {"p": (1, 2), "q": (3,)},
                      is_leaf=lambda t: isinstance(t, tuple))
    assert out == {"p": 2, "q": 1}
    with pytest.raises((ValueError, TypeError)):
        tu.tree_map(lambda u, v: u, {"x": 1}, {"y": 1})


def test_tree_map_arrays():
    tree = {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}
    out = jax.tree_util.tree_map(lambda t: t * 2 + 1, tree)
    np.testing.assert_array_equal(np.asarray(out["w"]), np.full((2, 2), 3.0))
    np.testing.assert_array_equal(np.asarray(out["b"]), np.ones(2))
    assert jax.tree.map(lambda t: t.shape, tree) == {"w": (2, 2), "b": (2,)}
    assert len(jax.tree.leaves(tree)) == 2
    assert jax.tree_leaves(tree)[0].shape == (2,)


def test_structure_equality_and_repr():
    s1 = tu.tree_structure({"a": 1, "b": [2]})
    s2 = tu.tree_structure({"a": 5, "b": [7]})
    assert s1 == s2 and hash(s1) == hash(s2)
    assert s1 != tu.tree_structure({"a": 1, "b": (2,)})
    assert "PyTreeDef" in repr(s1)
    assert len(tu.treedef_children(s1)) == 2


def test_transpose():
    outer = tu.tree_structure([0, 0, 0])
    inner = tu.tree_structure((0, 0))
    tree = [(1, 2), (3, 4), (5, 6)]
    assert tu.tree_transpose(outer, inner, tree) == ([1, 3, 5], [2, 4, 6])
    assert jax.tree.transpose(outer, inner, tree) == ([1, 3, 5], [2, 4, 6])
    with pytest.raises((ValueError, TypeError)):
        tu.tree_transpose(outer, inner, [(1, 2), (3, 4)])


def test_reduce_and_all():
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)], 10) == 16
    assert tu.tree_all([True, (True,)])
    assert not tu.tree_all([True, (False,)])


class Box:
    def __init__(self, a, b, name):
        self.a, self.b, self.name = a, b, name


tu.register_pytree_node(Box, lambda bx: ((bx.a, bx.b), bx.name),
                        lambda name, kids: Box(kids[0], kids[1], name))


def test_register_pytree_node():
    leaves, treedef = tu.tree_flatten(Box(1, [2, 3], "n"))
    assert leaves == [1, 2, 3]
    out = tu.tree_unflatten(treedef, [7, 8, 9])
    assert isinstance(out, Box) and out.a == 7 and out.b == [8, 9] and out.name == "n"
    assert tu.tree_structure(Box(1, 2, "x")) != tu.tree_structure(Box(1, 2, "y"))


@tu.register_pytree_node_class
class Pair:
    def __init__(self, left, right):
        self.l, self.r = left, right

    def tree_flatten(self):
        return (self.l, self.r), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def test_register_pytree_node_class_through_jit():
    f = jax.jit(lambda p: Pair(p.r * 2, p.l + 1))
    out = f(Pair(jnp.ones(2), jnp.arange(2.0)))
    assert isinstance(out, Pair)
    np.testing.assert_array_equal(np.asarray(out.l), [0.0, 2.0])
    np.testing.assert_array_equal(np.asarray(out.r), [2.0, 2.0])


@dataclasses.dataclass
class Params:
    w: object
    b: object
    tag: str = "p"


tu.register_dataclass(Params, data_fields=["w", "b"], meta_fields=["tag"])


def test_register_dataclass():
    p = Params(1, 2, "t")
    leaves, treedef = tu.tree_flatten(p)
    assert leaves == [1, 2]
    out = tu.tree_unflatten(treedef, [3, 4])
    assert out == Params(3, 4, "t")
    g = jax.jit(lambda q: Params(q.w + q.b, q.b, q.tag))
    r = g(Params(jnp.ones(2), jnp.ones(2), "k"))
    assert r.tag == "k"
    np.testing.assert_array_equal(np.asarray(r.w), [2.0, 2.0])


def test_partial_is_a_pytree():
    import operator
    p = tu.Partial(operator.add, jnp.ones(2))
    leaves = tu.tree_leaves(p)
    assert len(leaves) == 1
    np.testing.assert_array_equal(np.asarray(p(1.0)), [2.0, 2.0])


def test_results_are_freed_without_the_garbage_collector():
    """Flattening and unflattening make no reference cycles: a program's
    pytree results (hundreds of megabytes, say) go when the last reference
    goes, not at the next collection."""
    f = jax.jit(lambda x: {"a": [x * 2, (x + 1,)], "b": x})
    x = jnp.ones(1000)
    f(x)
    gc.collect()
    gc.disable()
    try:
        out = f(x)
        refs = [weakref.ref(leaf) for leaf in tu.tree_leaves(out)]
        del out
        assert all(r() is None for r in refs)
        g = jax.grad(lambda p: jnp.sum(p["w"] * p["v"][0]))(
            {"w": x, "v": [x]})
        refs = [weakref.ref(leaf) for leaf in tu.tree_leaves(g)]
        del g
        assert all(r() is None for r in refs)
        m = tu.tree_map(lambda a, b: a + b, {"k": [x]}, {"k": [x]})
        ref = weakref.ref(m["k"][0])
        del m
        assert ref() is None
    finally:
        gc.enable()


def test_register_pytree_node_returns_none():
    """As JAX's (the custom pytrees tutorial shows the cell's value)."""
    class Box:
        pass

    assert tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: Box()) is None


def test_jax_tree_is_a_module():
    # `import jax.tree` works in JAX: ember.tree is a module too.
    import importlib

    t = importlib.import_module("ember.tree")
    import ember

    assert ember.tree is t
    assert t.map(lambda x: x * 2, {"a": 1, "b": [2]}) == {"a": 2, "b": [4]}
    assert t.leaves([1, (2, None)]) == [1, 2] and t.all([True, [True]])

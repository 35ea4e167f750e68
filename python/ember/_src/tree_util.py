"""Pytrees: JAX's tree_util API (flatten, unflatten, map, registration)."""

import collections
import dataclasses
import functools
import json
import typing

_registry = {}
_key_registry = {}  # node type -> the keys of a node's children (key paths)


class _Children(tuple):
    """A node's subtrees: a tuple, which `treedef.children()` also calls
    for JAX's list of them."""

    __slots__ = ()

    def __call__(self):
        return list(self)


def _hashable(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        return repr(aux)


class PyTreeDef:
    __slots__ = ("kind", "aux", "children", "num_leaves", "_k")

    def __init__(self, kind, aux, children):
        self.kind, self.aux, self.children = kind, aux, _Children(children)
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)
        self._k = None

    def _key(self):
        # The structure as nested tuples, made when first compared or hashed
        # and kept (trees are never changed): CPython's tuples then hash and
        # compare it, for the jit call that looks its arguments' tree up on
        # every call.
        k = self._k
        if k is None:
            k = self._k = (self.kind, _hashable(self.aux),
                           tuple(c._key() for c in self.children))
        return k

    def __eq__(self, other):
        return self is other or (isinstance(other, PyTreeDef) and self._key() == other._key())

    def __hash__(self):
        return hash(self._key())

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)

    def node_data(self):
        """JAX's: (the root node's type, its auxiliary data; a dict's keys
        as a list), None for a leaf."""
        if self.kind is None:
            return None
        return (self.kind, list(self.aux) if self.kind is dict else self.aux)

    def flatten_up_to(self, tree):
        """JAX's: the subtrees of `tree` at this structure's leaves (`tree`
        must have this structure down to them)."""
        return _flatten_up_to(self, tree)

    def compose(self, inner):
        """JAX's: this structure with `inner` at each of its leaves."""
        if self.kind is None:
            return inner
        return PyTreeDef(self.kind, self.aux, [c.compose(inner) for c in self.children])

    def __repr__(self):
        return f"PyTreeDef({_repr(self)})"


_LEAF = PyTreeDef(None, None, ())  # every leaf's (PyTreeDefs are not changed)


def _repr(t):
    if t.kind is None:
        return "*"
    inner = ", ".join(_repr(c) for c in t.children)
    if t.kind is tuple:
        return f"({inner}{',' if len(t.children) == 1 else ''})"
    if t.kind is list:
        return f"[{inner}]"
    if t.kind is dict:
        return "{" + ", ".join(f"{k!r}: {_repr(c)}" for k, c in zip(t.aux, t.children)) + "}"
    if t.kind is type(None):
        return "None"
    if t.kind is collections.OrderedDict:
        return f"CustomNode(OrderedDict[{t.aux!r}], [{inner}])"
    if t.kind is collections.defaultdict:
        return f"CustomNode(defaultdict[({t.aux[0]!r}, {t.aux[1]!r})], [{inner}])"
    name = getattr(t.kind, "__name__", t.kind)
    if isinstance(t.kind, type) and issubclass(t.kind, tuple) and hasattr(t.kind, "_fields"):
        return f"CustomNode(namedtuple[{name}], [{inner}])"
    return f"CustomNode({name}[{t.aux}], [{inner}])"


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """Registers `nodetype` as a pytree node (returns None, as JAX's does;
    a second registration of a type is JAX's ValueError)."""
    if nodetype in _registry:
        raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
    _registry[nodetype] = (flatten_func, unflatten_func)
    _leaf_types.discard(nodetype)


def register_pytree_node_class(cls):
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    def flat(x):
        kids, aux = flatten_with_keys(x)
        return [c for _, c in kids], aux
    register_pytree_node(nodetype, flatten_func or flat, unflatten_func)
    _key_registry[nodetype] = lambda x: [k for k, _ in flatten_with_keys(x)[0]]


def register_dataclass(nodetype, data_fields=None, meta_fields=None, drop_fields=()):
    if data_fields is None:
        data_fields = [f.name for f in dataclasses.fields(nodetype)
                       if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in dataclasses.fields(nodetype)
                       if f.metadata.get("static", False)]
    meta_fields = list(meta_fields or ())

    def flatten(x):
        return ([getattr(x, n) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten(aux, children):
        kw = dict(zip(data_fields, children))
        kw.update(zip(meta_fields, aux))
        return nodetype(**kw)

    register_pytree_node(nodetype, flatten, unflatten)
    _key_registry[nodetype] = lambda x: [GetAttrKey(n) for n in data_fields]
    return nodetype


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


# Types seen to be leaves (every test below depends on the type alone), so
# that arrays skip them; registering a node type takes it out.
_leaf_types = set()


class HiNode:
    """The node kind of a hijax value flattened into its lowered arrays
    (`tree_flatten_lo`); aux is what `hitypes` needs to raise it again."""


# hitypes' (is_hi, children, build) once it is imported; `_expand_hi` > 0
# while a transformation boundary flattens (elsewhere hi values are leaves,
# as in JAX).
_hi_hooks = None
_expand_hi = 0


def register_hi_hooks(is_hi, children, build):
    global _hi_hooks
    _hi_hooks = (is_hi, children, build)


def tree_flatten_lo(tree, is_leaf=None):
    """`tree_flatten` with hijax values expanded into their lowered arrays
    (a `HiNode` each): what `jit`, `grad`, `vmap` and the loops pass through
    the program, where public tree functions keep hi values as leaves."""
    global _expand_hi
    _expand_hi += 1
    try:
        return tree_flatten(tree, is_leaf)
    finally:
        _expand_hi -= 1


def tree_leaves_lo(tree):
    return tree_flatten_lo(tree)[0]


def hi_node_spans(treedef):
    """[(first leaf, number of leaves, aux)] of the HiNodes of `treedef` in
    leaf order."""
    out = []
    _hi_spans(treedef, 0, out)
    return out


def _hi_spans(t, start, out):
    if t.kind is HiNode:
        out.append((start, t.num_leaves, t.aux))
        return
    for c in t.children:
        _hi_spans(c, start, out)
        start += c.num_leaves


def replace_hi_nodes(treedef, fn):
    """`treedef` with each HiNode replaced by `fn(aux)`, a PyTreeDef (in
    order)."""
    if treedef.kind is HiNode:
        return fn(treedef.aux)
    if not treedef.children:
        return treedef
    return PyTreeDef(treedef.kind, treedef.aux,
                     [replace_hi_nodes(c, fn) for c in treedef.children])


def _children(x):
    """(kind, aux, children) or None for a leaf."""
    t = type(x)
    if _expand_hi and _hi_hooks is not None and _hi_hooks[0](x):
        aux, kids = _hi_hooks[1](x)
        return HiNode, aux, kids
    if t in _leaf_types:
        return None
    if t in _registry:
        kids, aux = _registry[t][0](x)
        return t, aux, list(kids)
    if x is None:
        return type(None), None, []
    if t is tuple:
        return tuple, None, list(x)
    if t is list:
        return list, None, list(x)
    if t is dict:
        keys = _sorted_keys(x)
        return dict, tuple(keys), [x[k] for k in keys]
    if isinstance(x, collections.OrderedDict):
        keys = tuple(x.keys())
        return collections.OrderedDict, keys, [x[k] for k in keys]
    if isinstance(x, collections.defaultdict):
        keys = _sorted_keys(x)
        return collections.defaultdict, (x.default_factory, tuple(keys)), [x[k] for k in keys]
    if _is_namedtuple(x):
        return t, None, list(x)
    _leaf_types.add(t)
    return None


def _sorted_keys(d):
    """A dict's keys in JAX's order (sorted; keys that do not compare are an
    error, as in JAX)."""
    try:
        return sorted(d.keys())
    except TypeError:
        raise ValueError("Comparator raised exception while sorting pytree dictionary "
                         "keys.") from None


# The recursive walks are module-level functions: a nested function that
# calls itself is a reference cycle (its closure holds it), which would keep
# the leaves it saw (a program's results) alive until the garbage collector.
def tree_flatten(tree, is_leaf=None):
    leaves = []
    return leaves, _flatten(tree, is_leaf, leaves)


def _flatten(x, is_leaf, leaves):
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    node = _children(x)
    if node is None:
        leaves.append(x)
        return _LEAF
    kind, aux, kids = node
    return PyTreeDef(kind, aux, [_flatten(c, is_leaf, leaves) for c in kids])


def tree_unflatten(treedef, leaves):
    leaves = list(leaves)
    n = treedef.num_leaves
    if len(leaves) < n:
        raise ValueError(f"Too few leaves for PyTreeDef; expected {n}, got {len(leaves)}")
    if len(leaves) > n:
        raise ValueError(f"Too many leaves for PyTreeDef; expected {n}.")
    return _unflatten(treedef, iter(leaves))


def _unflatten(t, it):
    if t.kind is None:
        return next(it)
    return _build(t, [_unflatten(c, it) for c in t.children])


def _build(t, kids):
    k = t.kind
    if k in _registry:
        return _registry[k][1](t.aux, tuple(kids))  # (a tuple, as JAX passes)
    if k is HiNode:
        return _hi_hooks[2](t.aux, kids)
    if k is type(None):
        return None
    if k is tuple:
        return tuple(kids)
    if k is list:
        return list(kids)
    if k is dict:
        return dict(zip(t.aux, kids))
    if k is collections.OrderedDict:
        return collections.OrderedDict(zip(t.aux, kids))
    if k is collections.defaultdict:
        return collections.defaultdict(t.aux[0], zip(t.aux[1], kids))
    return k(*kids)


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(f, tree, *rest, is_leaf=None):
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [_flatten_up_to(treedef, r) for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def _flatten_up_to(treedef, tree):
    out = []
    _flatten_up_to_rec(treedef, tree, treedef, tree, out)
    return out


def _flatten_up_to_rec(t, x, treedef, tree, out):
    if t.kind is None:
        out.append(x)
        return
    node = _children(x)
    if node is None or node[0] is not t.kind or len(node[2]) != len(t.children):
        raise ValueError(f"Tree structures do not match: {treedef} vs {tree_structure(tree)}")
    if t.kind is dict and node[1] != t.aux:
        raise ValueError(f"Dict key mismatch in tree_map: {t.aux} vs {node[1]}")
    if t.kind in (collections.OrderedDict, collections.defaultdict) and node[1] != t.aux:
        # (an OrderedDict's keys in another order: other metadata, as JAX's)
        raise ValueError(f"pytree structure error: different pytree metadata: {t.aux} vs "
                         f"{node[1]}")
    for c, k in zip(t.children, node[2]):
        _flatten_up_to_rec(c, k, treedef, tree, out)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    if inner_treedef is None:  # (JAX's: the structure of the first subtree)
        inner_treedef = tree_structure(
            _flatten_up_to(outer_treedef, pytree_to_transpose)[0])
    got = tree_structure(pytree_to_transpose)
    expected = outer_treedef.compose(inner_treedef)
    if got != expected:
        raise TypeError(f"Mismatch\n{got}\n != \n{expected}")
    flat = _flatten_up_to(outer_treedef, pytree_to_transpose)
    inner = [_flatten_up_to(inner_treedef, x) for x in flat]
    n = inner_treedef.num_leaves
    cols = [tree_unflatten(outer_treedef, [row[i] for row in inner]) for i in range(n)]
    return tree_unflatten(inner_treedef, cols)


_NO_INITIALIZER = object()


def tree_reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:  # (None is an initializer, as in JAX)
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree, *, is_leaf=None):
    return all(tree_leaves(tree, is_leaf))


def treedef_children(treedef):
    return list(treedef.children)


def treedef_is_leaf(treedef):
    return treedef.num_nodes == 1  # (JAX's: None's and ()'s structures too)


def all_leaves(iterable, is_leaf=None):
    """Whether every element of `iterable` is a leaf (with `is_leaf`: the
    elements are what flattening the list with it gives)."""
    if is_leaf is None:
        return all(_children(x) is None for x in iterable)
    items = list(iterable)
    return items == tree_leaves(items, is_leaf)


class _PartialShim:
    """A `functools.partial` given to `Partial`, callable and compared by
    its function and arguments, so that they stay static (JAX's: without it
    `functools.partial` would merge them into the outer Partial's leaves)."""

    def __init__(self, p):
        self.p = p

    def __call__(self, *args, **kwargs):
        return self.p(*args, **kwargs)

    def __eq__(self, other):
        return isinstance(other, _PartialShim) and self.p == other.p

    def __hash__(self):
        return hash(self.p)


class Partial(functools.partial):
    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            func = _PartialShim(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(Partial, lambda p: (list(p.args) + list(p.keywords.values()),
                                         (p.func, len(p.args), tuple(p.keywords))),
                     lambda aux, kids: Partial(aux[0], *kids[:aux[1]],
                                               **dict(zip(aux[2], kids[aux[1]:]))))


# --------------------------------------------------------------------------
# Key paths
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    idx: int

    def __str__(self):
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class DictKey:
    key: object

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    name: str

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    key: int

    def __str__(self):
        return f"[<flat index {self.key}>]"


def _child_keys(x, kind, aux, kids):
    """The key of each child of the node `x` (JAX's key kinds)."""
    if kind in _key_registry:
        return _key_registry[kind](x)
    if kind in (dict, collections.OrderedDict):
        return [DictKey(k) for k in aux]
    if kind is collections.defaultdict:
        return [DictKey(k) for k in aux[1]]
    if kind in (tuple, list):
        return [SequenceKey(i) for i in range(len(kids))]
    if _is_namedtuple(x):
        return [GetAttrKey(f) for f in type(x)._fields]
    return [FlattenedIndexKey(i) for i in range(len(kids))]


def tree_flatten_with_path(tree, is_leaf=None):
    """([(key path, leaf), ...], treedef)."""
    out = []
    _flatten_with_path(tree, (), is_leaf, out)
    return out, tree_structure(tree, is_leaf)


def _flatten_with_path(x, path, is_leaf, out):
    if is_leaf is not None and is_leaf(x):
        out.append((path, x))
        return
    node = _children(x)
    if node is None:
        out.append((path, x))
        return
    kind, aux, kids = node
    for k, c in zip(_child_keys(x, kind, aux, kids), kids):
        _flatten_with_path(c, path + (k,), is_leaf, out)


def tree_leaves_with_path(tree, is_leaf=None):
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(f, tree, *rest, is_leaf=None):
    pairs, treedef = tree_flatten_with_path(tree, is_leaf)
    others = [_flatten_up_to(treedef, r) for r in rest]
    return tree_unflatten(treedef, [f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def keystr(keys, *, simple=False, separator=""):
    """A key path as text: `['a'][0].b` (or `a/0/b` with simple=True and
    separator="/")."""
    if not simple:
        return separator.join(str(k) for k in keys)
    def one(k):
        for attr in ("idx", "key", "name"):
            if hasattr(k, attr):
                return str(getattr(k, attr))
        return str(k)
    return separator.join(one(k) for k in keys)



# --------------------------------------------------------------------------
# One-level flattening, broadcasting, registry (jax.tree_util 0.10.2)
# --------------------------------------------------------------------------

KeyEntry = typing.TypeVar("KeyEntry", bound=typing.Any)
KeyPath = tuple[KeyEntry, ...]


def flatten_one_level(tree):
    """(children, aux data) of one pytree node; a leaf is a ValueError."""
    node = _children(tree)
    if node is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    _, aux, kids = node
    return tuple(kids), aux


def flatten_one_level_with_keys(tree):
    """(((key, child), ...), aux data) of one pytree node."""
    node = _children(tree)
    if node is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    kind, aux, kids = node
    return tuple(zip(_child_keys(tree, kind, aux, kids), kids)), aux


_BUILTIN_NODES = (tuple, list, dict, type(None), collections.OrderedDict,
                  collections.defaultdict)


def is_tree_node(typ):
    """Whether the type `typ` is a pytree node type (built in or registered)."""
    if typ in _registry or typ in _BUILTIN_NODES:
        return True
    return isinstance(typ, type) and issubclass(typ, tuple) and hasattr(typ, "_fields")


def register_pytree_with_keys_class(cls):
    """Registers a class with `tree_flatten_with_keys` (and optionally
    `tree_flatten`) methods and a `tree_unflatten` classmethod."""
    flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                              flatten)
    return cls


def register_static(cls):
    """Registers `cls` as a pytree node with no children (its instances are
    the aux data: static under transformations)."""
    register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _children: obj)
    return cls


def treedef_tuple(treedefs):
    """The treedef of a tuple whose children have the given treedefs."""
    return PyTreeDef(tuple, None, list(treedefs))


def _prefix_error(path, prefix, full, is_leaf):
    """A text saying where `prefix` is not a prefix of `full` (None if it is)."""
    if tree_structure(prefix, is_leaf).kind is None:
        return None
    where = keystr(path) or " "
    if type(prefix) is not type(full):
        return (f"pytree structure error: different types at key path\n    {where}\n"
                f"At that key path, the prefix pytree has a subtree of type\n"
                f"    {type(prefix)}\nbut at the same key path the full pytree has a subtree "
                f"of different type\n    {type(full)}.")
    pk, pa = flatten_one_level_with_keys(prefix)
    fk, fa = flatten_one_level_with_keys(full)
    if len(pk) != len(fk) or [k for k, _ in pk] != [k for k, _ in fk] or pa != fa:
        return (f"pytree structure error: different node structure at key path\n    {where}\n"
                f"At that key path, the prefix pytree has a subtree with {len(pk)} children "
                f"(metadata {pa!r}),\nbut the full pytree has a subtree with {len(fk)} "
                f"children (metadata {fa!r}).")
    for (k, p), (_, f) in zip(pk, fk):
        err = _prefix_error(path + (k,), p, f, is_leaf)
        if err is not None:
            return err
    return None


def broadcast_prefix(prefix_tree, full_tree, is_leaf=None):
    """Each leaf of `prefix_tree` repeated once per leaf of the subtree of
    `full_tree` it stands for."""
    out = []
    try:
        tree_map(lambda x, sub: out.extend([x] * tree_structure(sub).num_leaves),
                 prefix_tree, full_tree, is_leaf=is_leaf)
    except ValueError:
        err = _prefix_error((), prefix_tree, full_tree, is_leaf)
        raise ValueError(err or "pytree structure error: prefix_tree is not a prefix of "
                         "full_tree") from None
    return out


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """`full_tree`'s structure with each leaf replaced by the `prefix_tree`
    leaf above it."""
    return tree_unflatten(tree_structure(full_tree),
                          broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf))


class _Unspecified:
    pass


_UNSPECIFIED = _Unspecified()


def _parallel_reduce(seq, op, identity):
    if not seq:
        if isinstance(identity, _Unspecified):
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    if len(seq) == 1:
        return seq[0]
    half = len(seq) // 2
    return op(_parallel_reduce(seq[:half], op, identity),
              _parallel_reduce(seq[half:], op, identity))


def tree_reduce_associative(operation, tree, *, identity=_UNSPECIFIED, is_leaf=None):
    """Reduces the leaves with an associative `operation` as a balanced tree
    of calls (JAX's order)."""
    return _parallel_reduce(tree_leaves(tree, is_leaf), operation, identity)


def static(**kwargs):
    """A dataclass field marked static (`metadata={"static": True}`), as
    `register_dataclass` reads it (`jax.tree.static`)."""
    kwargs["metadata"] = {"static": True, **(kwargs.pop("metadata", {}) or {})}
    return dataclasses.field(**kwargs)


class PyTreeRegistry:
    """JAX's `default_registry` (a `PyTreeRegistry`): the registry the
    tree functions use."""

    def flatten(self, tree, leaf_predicate=None):
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree):
        return None if _children(tree) is None else flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree):
        return None if _children(tree) is None else flatten_one_level_with_keys(tree)

    def flatten_with_path(self, tree, leaf_predicate=None):
        return tree_flatten_with_path(tree, leaf_predicate)

    def is_node(self, typ):
        return is_tree_node(typ)

    def register_node(self, type_, to_iterable, from_iterable, to_iterable_with_keys=None):
        if to_iterable_with_keys is None:
            register_pytree_node(type_, to_iterable, from_iterable)
        else:
            register_pytree_with_keys(type_, to_iterable_with_keys, from_iterable, to_iterable)

    def register_dataclass_node(self, type_, data_fields, meta_fields, drop_fields=()):
        register_dataclass(type_, data_fields, meta_fields, drop_fields)


default_registry = PyTreeRegistry()


# --------------------------------------------------------------------------
# Serialization registrations of custom nodes (`jax.export`'s): the
# exporter's trees name a registered node by `serialized_name`.
# --------------------------------------------------------------------------

_serialization_registry = {}    # node type -> (serialized_name, serialize_auxdata)
_deserialization_registry = {}  # serialized_name -> (type, deserialize_auxdata, from_children)


def _register_pytree_node_serialization(nodetype, *, serialized_name, serialize_auxdata,
                                        deserialize_auxdata, from_children=None):
    if nodetype in _serialization_registry:
        raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. "
                         "Previous registration was with serialized_name "
                         f"`{_serialization_registry[nodetype][0]}`.")
    if serialized_name in _deserialization_registry:
        raise ValueError("Duplicate serialization registration for serialized_name "
                         f"`{serialized_name}`. Previous registration was for type "
                         f"`{_deserialization_registry[serialized_name][0]}`.")
    if from_children is None:
        if nodetype not in _registry:
            raise ValueError("If `from_children` is not present, you must call first"
                             f"`jax.tree_util.register_pytree_node` for `{nodetype}`")
        from_children = _registry[nodetype][1]
    _serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
    _deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
    return nodetype


def _register_namedtuple_serialization(nodetype, *, serialized_name):
    if not (isinstance(nodetype, type) and issubclass(nodetype, tuple)
            and hasattr(nodetype, "_fields")):
        raise ValueError("Use `jax.export.register_pytree_node_serialization` for types other "
                         "than `collections.namedtuple`.")

    def serialize_auxdata(aux_data):
        return json.dumps(nodetype._fields).encode("utf-8")

    def deserialize_auxdata(data):
        return json.loads(data.decode("utf-8"))

    def from_children(aux_data, children):
        return nodetype(**dict(zip(aux_data, children)))

    return _register_pytree_node_serialization(
        nodetype, serialized_name=serialized_name, serialize_auxdata=serialize_auxdata,
        deserialize_auxdata=deserialize_auxdata, from_children=from_children)

"""Typed PRNG key arrays (`jax.random.key`): arrays of dtype `key<fry>`
(threefry2x32), `key<rbg>` (rbg), `key<urbg>` (unsafe_rbg), `key<phx2>`
(philox2x32), `key<phx4>` (philox4x32) or `key<fry4>` (threefry4x32).

A key array of shape S is a `PRNGKeyArray` holding its key data, a
`uint32[*S, W]` array (or tracer) of its implementation's W words (2 for
threefry2x32, 4 for the rbg ones, ...), and the implementation (`Impl`: its
name, tag and W; `ember.random` holds the algorithms). It is a hi value
(`hitypes`) of type `KeyTy(S)`, lowered to that one array wherever a program
crosses a transformation boundary (`jit`'s arguments and results, `vmap`,
`grad`, the loops), so the dialect and its passes see only uint32 arrays.
Unlike a user's hijax type a key array is *array-like*: inside traced code
it is still a `PRNGKeyArray` (around a tracer), so its shape methods and
indexing work there as in JAX, and `vmap` maps it by integer axes.

Every shape operation on keys is the same operation on the data with the
trailing words axis kept last; arithmetic is a `TypeError`, and NumPy
conversion raises JAX's error pointing at `key_data`.
"""

from dataclasses import dataclass

import numpy as np

from . import core, hitypes, lax


@dataclass(frozen=True)
class Impl:
    """A PRNG implementation as key arrays see it: JAX's name, the tag of
    its dtype (`key<tag>`) and the uint32 words of one key."""

    name: str
    tag: str
    words: int

    def __repr__(self):  # (printed as JAX's name)
        return repr(self.name)

    def __str__(self):
        return self.name


THREEFRY = Impl("threefry2x32", "fry", 2)
RBG = Impl("rbg", "rbg", 4)
UNSAFE_RBG = Impl("unsafe_rbg", "urbg", 4)
PHILOX2 = Impl("philox2x32", "phx2", 1)
PHILOX4 = Impl("philox4x32", "phx4", 2)
THREEFRY4 = Impl("threefry4x32", "fry4", 4)
IMPLS = {i.name: i for i in (THREEFRY, RBG, UNSAFE_RBG, PHILOX2, PHILOX4, THREEFRY4)}


class extended(np.generic):  # noqa: N801 (JAX's name)
    """The scalar class of extended dtypes (`jax.dtypes.extended`)."""


class prng_key(extended):  # noqa: N801 (JAX's name)
    """The scalar class of PRNG key dtypes (`jax.dtypes.prng_key`)."""


class KeyDType:
    """The dtype `key<tag>` of an implementation's key arrays."""

    type = prng_key
    kind = "V"
    extended = True

    def __init__(self, impl=THREEFRY):
        self._impl = impl

    @property
    def impl(self):
        return self._impl

    @property
    def name(self):
        return f"key<{self._impl.tag}>"

    @property
    def itemsize(self):
        return 4 * self._impl.words

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDType) and other._impl == self._impl

    def __hash__(self):
        return hash((KeyDType, self._impl))


KEY_FRY = KeyDType()
_DTYPES = {i: (KEY_FRY if i is THREEFRY else KeyDType(i)) for i in IMPLS.values()}


def issubdtype(a, b):
    """`jnp.issubdtype` where either side is a key dtype; None when neither is."""
    if not isinstance(a, KeyDType) and not isinstance(b, KeyDType):
        return None
    if isinstance(b, KeyDType):
        return isinstance(a, KeyDType)
    return isinstance(b, type) and issubclass(prng_key, b)


@dataclass(frozen=True)
class KeyTy(hitypes.HiType):
    """The type of a key array of shape `shape` (`ShapedArray(key<fry>[...])`)."""

    shape: tuple
    impl: Impl = THREEFRY

    array_like = True  # traced values stay PRNGKeyArrays; vmap maps by int axes

    @property
    def dtype(self):
        return _DTYPES[self.impl]

    @property
    def ndim(self):
        return len(self.shape)

    def lo_ty(self):
        return [core.ShapedArray(self.shape + (self.impl.words,), np.uint32)]

    def lower_val(self, hi_val, /):
        return [hi_val._base]

    def raise_val(self, *lo_vals):
        return PRNGKeyArray(lo_vals[0], self.impl)

    def to_tangent_aval(self):
        return self.lo_ty()[0].to_tangent_aval()  # (JAX's float0; Ember's integer zeros)

    def _axis(self, spec, rank, what):
        if not isinstance(spec, int) or not -rank <= spec < rank:
            raise ValueError(f"vmap {what} axis {spec!r} is out of bounds for a key array "
                             f"of rank {rank} (shape {self.shape})")
        return spec % rank

    def dec_rank(self, size, spec):
        ax = self._axis(spec, self.ndim, "in_axes")
        return KeyTy(self.shape[:ax] + self.shape[ax + 1:], self.impl)

    def inc_rank(self, size, spec):
        ax = self._axis(spec, self.ndim + 1, "out_axes")
        return KeyTy(self.shape[:ax] + (size,) + self.shape[ax:], self.impl)

    def leading_axis_spec(self):
        return 0

    def shard(self, mesh, manual_axes, check_vma, spec):
        return KeyTy(self.lo_ty()[0].shard(mesh, manual_axes, check_vma, spec).shape[:-1],
                     self.impl)

    def unshard(self, mesh, check_vma, spec):
        return KeyTy(self.lo_ty()[0].unshard(mesh, check_vma, spec).shape[:-1], self.impl)

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return f"key<{self.impl.tag}>[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self):
        return f"ShapedArray({self.str_short()})"

    def __str__(self):  # (JAX prints a key type as its short form)
        return self.str_short()


def _not_array(name):
    def op(self, *args, **kwargs):
        kinds = ", ".join([self.dtype.name] + [_dtype_name(a) for a in args])
        raise TypeError(f"{name} does not accept dtypes {kinds}.")
    return op


def _dtype_name(x):
    if isinstance(x, PRNGKeyArray):
        return x.dtype.name
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int32"
    if isinstance(x, float):
        return "float32"
    return str(getattr(x, "dtype", type(x).__name__))


class PRNGKeyArray:
    """An array of keys of one implementation (dtype `key<tag>`) over its
    key data."""

    __slots__ = ("_base", "_impl", "__weakref__")
    __array_priority__ = 200

    def __init__(self, base, impl=THREEFRY):
        base = core.as_value(base)
        if base.dtype != np.uint32 or not base.ndim or base.shape[-1] != impl.words:
            raise TypeError(f"key data must be a uint32 array with trailing dimension "
                            f"{impl.words}, got {base.dtype}{list(base.shape)}")
        self._base = base
        self._impl = impl

    def _like(self, base):
        """Keys of this array's implementation over `base`."""
        return PRNGKeyArray(base, self._impl)

    # -- array properties ---------------------------------------------------
    @property
    def shape(self):
        return tuple(self._base.shape[:-1])

    @property
    def ndim(self):
        return self._base.ndim - 1

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self):
        return _DTYPES[self._impl]

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def aval(self):
        return KeyTy(self.shape, self._impl)

    @property
    def sharding(self):
        return self._base.sharding

    @property
    def device(self):
        return self._base.device

    def devices(self):
        return self._base.devices()

    def block_until_ready(self):
        self._base.block_until_ready()
        return self

    def copy(self):
        return self

    def __len__(self):
        if not self.ndim:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        raise TypeError("key array cannot be converted to boolean.")

    def __array__(self, *args, **kwargs):
        raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. "
                        "Use jax.random.key_data(arr) if you wish to extract the underlying "
                        "integer array.")

    def __hash__(self):
        raise TypeError("unhashable type: 'PRNGKeyArray'")

    def __repr__(self):
        if isinstance(self._base, core.Tracer):
            kind = repr(self._base).split("(", 1)[0]
            return f"{kind}({self.aval.str_short()})"
        return (f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n"
                f"{np.asarray(self._base)}")

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self) if not spec else format(repr(self), spec)

    # -- shape operations: the same on the data, words axis last ------------
    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        if any(isinstance(i, PRNGKeyArray) for i in idx):
            raise TypeError("key arrays cannot index arrays")
        return self._like(self._base[idx + (slice(None),)])

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
            shape = tuple(self.size // max(known, 1) if d == -1 else d for d in shape)
        return self._like(self._base.reshape(shape + (self._impl.words,), order=order))

    def ravel(self, order="C"):
        return self.reshape((self.size,), order=order)

    flatten = ravel

    def squeeze(self, axis=None):
        if axis is None:
            axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        return self._like(self._base.squeeze(tuple(_norm(a, self.ndim) for a in axes)))

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        axes = tuple(range(self.ndim))[::-1] if axes in ((), None) else tuple(axes)
        perm = tuple(_norm(a, self.ndim) for a in axes)
        return self._like(lax.transpose(self._base, perm + (self.ndim,)))

    @property
    def T(self):  # noqa: N802 (NumPy's name)
        return self.transpose()

    def swapaxes(self, axis1, axis2):
        perm = list(range(self.ndim))
        a, b = _norm(axis1, self.ndim), _norm(axis2, self.ndim)
        perm[a], perm[b] = perm[b], perm[a]
        return self.transpose(perm)

    def take(self, indices, axis=None, **kwargs):
        src = self.ravel() if axis is None else self
        ax = 0 if axis is None else _norm(axis, self.ndim)
        return self._like(src._base.take(indices, axis=ax, **kwargs))

    @property
    def at(self):
        return _KeyAt(self)

    # -- comparisons: equal when both words are ----------------------------
    def __eq__(self, other):
        if not isinstance(other, PRNGKeyArray) or other._impl != self._impl:
            _not_array("equal")(self, other)
        return (self._base == other._base).all(axis=-1)

    def __ne__(self, other):
        if not isinstance(other, PRNGKeyArray) or other._impl != self._impl:
            _not_array("not_equal")(self, other)
        return (self._base != other._base).any(axis=-1)


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
              "or", "xor", "lshift", "rshift", "lt", "le", "gt", "ge"):
    _op = _not_array({"truediv": "div", "floordiv": "floor_divide", "mod": "rem",
                      "and": "and", "or": "or", "xor": "xor", "lshift": "shift_left",
                      "rshift": "shift_right"}.get(_name, _name))
    setattr(PRNGKeyArray, f"__{_name}__", _op)
    if _name not in ("lt", "le", "gt", "ge"):
        setattr(PRNGKeyArray, f"__r{_name}__", _op)
for _name in ("neg", "pos", "abs", "invert"):
    setattr(PRNGKeyArray, f"__{_name}__", _not_array(_name))
del _name, _op


class _KeyAt:
    __slots__ = ("_keys",)

    def __init__(self, keys):
        self._keys = keys

    def __getitem__(self, idx):
        return _KeyAtIndex(self._keys, idx if isinstance(idx, tuple) else (idx,))


class _KeyAtIndex:
    __slots__ = ("_keys", "_idx")

    def __init__(self, keys, idx):
        self._keys, self._idx = keys, idx

    def get(self, **kwargs):
        return self._keys[self._idx]

    def set(self, values, **kwargs):
        values = _keys_only("set", [values])[0]
        _keys_only("set", [self._keys, values])
        base = self._keys._base.at[self._idx + (slice(None),)].set(values._base, **kwargs)
        return self._keys._like(base)


def _norm(axis, rank):
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of bounds for a key array of rank {rank}")
    return axis % rank


def _keys_only(name, values):
    """`values`, all key arrays of one implementation (else JAX's errors:
    keys of two implementations do not promote)."""
    for v in values:
        if not isinstance(v, PRNGKeyArray):
            raise TypeError(f"{name} does not accept dtypes "
                            f"{', '.join(_dtype_name(x) for x in values)}.")
    if any(v._impl != values[0]._impl for v in values):
        raise ValueError(f"dtype={values[0].dtype} is not a valid dtype for JAX type "
                         "promotion.")
    return list(values)


def is_key(x):
    return isinstance(x, PRNGKeyArray)


def has_key(*args):
    """Whether a key array is among `args` (or in a list/tuple among them)."""
    for a in args:
        if isinstance(a, PRNGKeyArray):
            return True
        if isinstance(a, (list, tuple)) and any(isinstance(x, PRNGKeyArray) for x in a):
            return True
    return False


# jnp's functions on key arrays (lax_numpy dispatches here when a key is given)


def asarray(a, dtype=None, *args, **kwargs):
    if dtype is not None and dtype != a.dtype:
        raise TypeError(f"cannot convert a key array to dtype {dtype}; use "
                        "jax.random.key_data to read its data")
    return a


def array(object, dtype=None, *args, **kwargs):  # noqa: A002 (NumPy's name)
    if isinstance(object, (list, tuple)):
        return stack([array(o) for o in object])
    return asarray(object, dtype)


def stack(arrays, axis=0, dtype=None):
    keys = _keys_only("stack", arrays)
    ax = _norm(axis, keys[0].ndim + 1)
    bases = [lax.expand_dims(k._base, (ax,)) for k in keys]
    return keys[0]._like(lax.concatenate(bases, ax))


def concatenate(arrays, axis=0, dtype=None):
    keys = _keys_only("concatenate", arrays)
    if axis is None:
        keys, axis = [k.ravel() for k in keys], 0
    return keys[0]._like(lax.concatenate([k._base for k in keys], _norm(axis, keys[0].ndim)))


def where(condition, x=None, y=None, **kwargs):
    if x is None or y is None:
        raise TypeError("jnp.where of a key array needs both x and y")
    x, y = _keys_only("select_n", [x, y])
    cond = core.as_value(condition)
    if isinstance(condition, PRNGKeyArray) or cond.dtype != np.bool_:
        cond = cond != 0
    shape = tuple(np.broadcast_shapes(cond.shape, x.shape, y.shape))
    full = shape + (x._impl.words,)
    c = lax.broadcast_in_dim(cond, full, tuple(range(len(shape) - cond.ndim, len(shape))))

    def data(k):
        return lax.broadcast_in_dim(k._base, full,
                                    tuple(range(len(full) - k._base.ndim, len(full))))
    return x._like(lax.select(c, data(x), data(y)))


def select(pred, on_true, on_false):
    return where(pred, on_true, on_false)


def select_n(which, *cases):
    """`lax.select_n` of key arrays: on their key data, `which` broadcast
    over the key's words."""
    cases = _keys_only("select_n", cases)
    w = core.as_value(which)
    full = cases[0]._base.shape
    w = lax.broadcast_in_dim(w, full, tuple(range(w.ndim))) if w.ndim else w
    return cases[0]._like(lax.select_n(w, *(k._base for k in cases)))


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """`jnp.full_like` (and `zeros_like`, `ones_like`, `empty_like`) of a key
    array: keys whose data words are all `fill_value`, as JAX's; another
    `dtype` gives an array of it."""
    shape = a.shape if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    if dtype is not None and not isinstance(dtype, KeyDType):
        return lax.full(shape, fill_value, np.dtype(dtype))
    impl = dtype.impl if dtype is not None else a._impl
    return PRNGKeyArray(lax.full(shape + (impl.words,), fill_value, np.dtype(np.uint32)), impl)


def broadcast_to(x, shape):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    base = x._base
    dims = tuple(range(len(shape) + 1 - base.ndim, len(shape) + 1))
    return x._like(lax.broadcast_in_dim(base, shape + (x._impl.words,), dims))


def expand_dims(a, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    rank = a.ndim + len(axes)
    return a._like(lax.expand_dims(a._base, tuple(_norm(x, rank) for x in axes)))


def reshape(a, shape=None, order="C", **kwargs):
    return a.reshape(shape if shape is not None else kwargs["newshape"], order=order)


def ravel(a, order="C"):
    return a.ravel(order)


def squeeze(a, axis=None):
    return a.squeeze(axis)


def transpose(a, axes=None):
    return a.transpose(axes)


def swapaxes(a, axis1, axis2):
    return a.swapaxes(axis1, axis2)


def moveaxis(a, source, destination):
    perm = list(range(a.ndim))
    perm.insert(_norm(destination, a.ndim), perm.pop(_norm(source, a.ndim)))
    return a.transpose(perm)


def take(a, indices, axis=None, **kwargs):
    return a.take(indices, axis=axis, **kwargs)


def _typeof(keys):
    """The hi type of a key array (registered with hitypes)."""
    return KeyTy(keys.shape, keys._impl)


hitypes.register_hitype(PRNGKeyArray, _typeof)

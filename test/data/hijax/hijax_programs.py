"""Hijax types and primitives (jax.experimental.hijax): one line per case.
Run with IMPORT=jax (in a JAX venv) to record `hijax_programs.jax.txt`
(JAX 0.10.2), with IMPORT=ember to compare (test_hijax.py). Mapping specs
(vmap) are not in JAX 0.10.2: test_hijax.py checks them against NumPy."""
import dataclasses
import os

import numpy as np

if os.environ["IMPORT"] == "jax":
    import jax
    jax.config.update("jax_num_cpu_devices", 8)
    import jax.numpy as jnp
    from jax.experimental.hijax import (HiPspec, HiType, ShapedArray, VJPHiPrimitive,
                                        register_hitype)
else:
    import ember as jax
    jax.config.update("jax_num_cpu_devices", 8)
    import ember.numpy as jnp
    from ember.experimental.hijax import (HiPspec, HiType, ShapedArray, VJPHiPrimitive,
                                          register_hitype)


def fmt(v):
    # arrays rounded (types, which have a dtype too, printed as they are)
    return np.round(np.asarray(v), 4) if hasattr(v, "dtype") and not hasattr(
        v, "str_short") else v


def show(f):
    try:
        r = f()
        if isinstance(r, tuple):
            print(*[fmt(v) for v in r])
        else:
            print(fmt(r))
    except Exception as e:  # noqa: BLE001
        print(type(e).__name__)


# A per-column int8 quantization: codes int8[m, n], one f32 step per column.
@dataclasses.dataclass(frozen=True)
class Codes:
    code: object
    step: object


@dataclasses.dataclass(frozen=True)
class CodesTy(HiType):
    shape: tuple
    sharding: object

    def lo_ty(self):
        col = self.sharding.update(spec=jax.P(self.sharding.spec[1]))
        return [ShapedArray(self.shape, jnp.dtype("int8"), sharding=self.sharding),
                ShapedArray(self.shape[1:], jnp.dtype("float32"), sharding=col)]

    def lower_val(self, c):
        return [c.code, c.step]

    def raise_val(self, code, step):
        return Codes(code, step)

    def to_tangent_aval(self):
        return ShapedArray(self.shape, jnp.dtype("float32"), sharding=self.sharding)

    def leading_axis_spec(self):
        raise NotImplementedError

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        dims = [str(d) if p is None else f"{d}@{p}" for d, p in zip(self.shape, self.sharding.spec)]
        return "codes[" + ",".join(dims) + "]"

    __repr__ = str_short


register_hitype(Codes, lambda c: CodesTy(c.code.shape, jax.typeof(c.code).sharding))


class Encode(VJPHiPrimitive):
    def __init__(self, a):
        self.in_avals = (a,)
        self.out_aval = CodesTy(a.shape, a.sharding)
        self.params = {}
        super().__init__()

    def expand(self, x):
        step = jnp.maximum(jnp.max(jnp.abs(x), axis=0), 1e-6) / 100.0
        return Codes(jnp.round(x / step).astype(jnp.int8), step)

    def vjp_fwd(self, nzs, x):
        return self(x), None

    def vjp_bwd_retval(self, res, g):
        return (g,)


class Decode(VJPHiPrimitive):
    def __init__(self, t):
        self.in_avals = (t,)
        self.out_aval = ShapedArray(t.shape, jnp.dtype("float32"), sharding=t.sharding)
        self.params = {}
        super().__init__()

    def expand(self, c):
        return c.code.astype(jnp.float32) * c.step

    def vjp_fwd(self, nzs, c):
        return self(c), None

    def vjp_bwd_retval(self, res, g):
        return (g,)


class CodesVec(VJPHiPrimitive):
    """codes[m, n] @ f32[n]: the step folds into the vector."""

    def __init__(self, t, v):
        if t.shape[1] != v.shape[0]:
            raise TypeError(f"codes_vec: {t} @ {v}")
        self.in_avals = (t, v)
        self.out_aval = ShapedArray(t.shape[:1], jnp.dtype("float32"))
        self.params = {}
        super().__init__()

    def expand(self, c, v):
        return c.code.astype(jnp.float32) @ (c.step * v)

    def vjp_fwd(self, nzs, c, v):
        return self(c, v), (c, v)

    def vjp_bwd_retval(self, res, g):
        c, v = res
        w = decode(c)
        return jnp.outer(g, v), w.T @ g


def encode(x):
    return Encode(jax.typeof(x))(x)


def decode(c):
    return Decode(jax.typeof(c))(c)


def codes_vec(c, v):
    return CodesVec(jax.typeof(c), jax.typeof(v))(c, v)


# A pair of any values, taken apart by an index given as a parameter.
@dataclasses.dataclass(frozen=True)
class Pair:
    a: object
    b: object


@dataclasses.dataclass(frozen=True)
class PairTy(HiType):
    a: object
    b: object

    def lo_ty(self):
        return [*self.a.lo_ty(), *self.b.lo_ty()]

    def lower_val(self, p):
        return [*self.a.lower_val(p.a), *self.b.lower_val(p.b)]

    def raise_val(self, *lo):
        k = len(self.a.lo_ty())
        return Pair(self.a.raise_val(*lo[:k]), self.b.raise_val(*lo[k:]))

    def to_tangent_aval(self):
        return PairTy(self.a.to_tangent_aval(), self.b.to_tangent_aval())

    def str_short(self, short_dtypes=False, mesh_axis_types=False):
        return f"<{self.a.str_short(short_dtypes)} | {self.b.str_short(short_dtypes)}>"

    __repr__ = str_short


register_hitype(Pair, lambda p: PairTy(jax.typeof(p.a), jax.typeof(p.b)))


class MakePair(VJPHiPrimitive):
    def __init__(self, a, b):
        self.in_avals = (a, b)
        self.out_aval = PairTy(a, b)
        self.params = {}
        super().__init__()

    def expand(self, a, b):
        return Pair(a, b)


class Part(VJPHiPrimitive):
    def __init__(self, t, which):
        self.in_avals = (t,)
        self.out_aval = t.a if which == 0 else t.b
        self.params = dict(which=which)
        super().__init__()

    def expand(self, p):
        return p.a if self.which == 0 else p.b


def pair(a, b):
    return MakePair(jax.typeof(a), jax.typeof(b))(a, b)


def part(p, which):
    return Part(jax.typeof(p), which)(p)


x = jnp.array([[1.0, -2.0, 0.5], [3.0, 4.0, -6.0]], dtype=jnp.float32)
c = encode(x)
show(lambda: jax.typeof(c))
show(lambda: (c.code, c.step))
show(lambda: decode(c))
show(lambda: jax.jit(lambda x: decode(encode(x)))(x))
show(lambda: jax.typeof(jax.jit(encode)(x)))
show(lambda: jax.jit(decode)(c))
show(lambda: jax.jit(lambda c: c.code)(c))
v = jnp.array([0.5, -1.0, 2.0], dtype=jnp.float32)
show(lambda: codes_vec(c, v))
show(lambda: jax.jit(codes_vec)(c, v))
show(lambda: jax.grad(lambda x: jnp.sum(decode(encode(x)) ** 2))(x))
show(lambda: jax.grad(lambda c: jnp.sum(jnp.sin(decode(c))))(c))
show(lambda: jax.typeof(jax.grad(lambda c: jnp.sum(decode(c)))(c)))
show(lambda: jax.grad(lambda c, v: jnp.sum(codes_vec(c, v) ** 2), argnums=(0, 1))(c, v))
show(lambda: jax.jit(jax.grad(lambda x, v: jnp.sum(jnp.tanh(codes_vec(encode(x), v))),
                              argnums=(0, 1)))(x, v))
show(lambda: jax.value_and_grad(lambda x: jnp.sum(decode(encode(x * 3.0))))(x))
show(lambda: CodesVec(jax.typeof(c), jax.typeof(x)))


def body(t, xi):
    return encode(decode(t) + xi), codes_vec(t, xi[0])


xs = jnp.asarray(np.sin(np.arange(24.0) * 1.3).astype(np.float32).reshape(4, 2, 3))
tot, ys = jax.lax.scan(body, encode(jnp.zeros((2, 3), jnp.float32)), xs)
show(lambda: (jax.typeof(tot), decode(tot), ys))

p = pair(jnp.arange(3.0), 2.0)
show(lambda: jax.typeof(p))
show(lambda: (part(p, 0), part(p, 1)))
nested = pair(pair(1.0, jnp.ones(2)), c)
show(lambda: jax.typeof(nested))
show(lambda: jax.jit(lambda n: part(part(n, 0), 1) * 2)(nested))
show(lambda: jax.typeof(jax.jit(lambda n: part(n, 1))(nested)))
show(lambda: jax.jit(lambda n: decode(part(n, 1)))(nested))
show(lambda: jax.jit(lambda a, b: part(pair(b, a), 0) + 1)(jnp.ones(2), jnp.zeros(2)))

mesh = jax.make_mesh((4,), ("i",))
jax.set_mesh(mesh)
rows = jax.device_put(jnp.arange(24.0, dtype=jnp.float32).reshape(8, 3), jax.P("i"))
cr = encode(rows)
show(lambda: jax.typeof(cr))
show(lambda: jax.typeof(decode(cr)))
show(lambda: jax.typeof(jax.jit(encode)(rows)))
show(lambda: jax.typeof(jax.jit(lambda r: decode(encode(r)))(rows)))
show(lambda: jax.typeof(pair(rows, jnp.float32(1.0))))


# shard_map: partition specs of hi types.
@dataclasses.dataclass(frozen=True)
class PairP(HiPspec):
    a: object
    b: object

    def to_lo(self):
        return (self.a, self.b)


@dataclasses.dataclass(frozen=True)
class CodesP(HiPspec):
    rows: object

    def to_lo(self):
        return (self.rows, jax.P())


PairTy.shard = lambda self, mesh, manual, check, spec: PairTy(
    self.a.shard(mesh, manual, check, spec.a), self.b.shard(mesh, manual, check, spec.b))
PairTy.unshard = lambda self, mesh, check, spec: PairTy(
    self.a.unshard(mesh, check, spec.a), self.b.unshard(mesh, check, spec.b))


def codes_shard(self, mesh, manual, check, spec):
    t = self.lo_ty()[0].shard(mesh, manual, check, spec.rows)
    return CodesTy(t.shape, t.sharding)


CodesTy.shard = codes_shard
seen = []


def swap_scale(p):
    seen.append(jax.typeof(p))
    return pair(part(p, 1) * 2, part(p, 0))


sm = jax.shard_map(swap_scale, in_specs=PairP(jax.P("i"), jax.P()),
                   out_specs=PairP(jax.P(), jax.P("i")))
out = jax.jit(sm)(pair(rows, jnp.float32(3.0)))
show(lambda: (seen[-1].a.shape, seen[-1].b.shape))
show(lambda: jax.typeof(out))
show(lambda: (part(out, 0), part(out, 1)))
dec = jax.jit(jax.shard_map(lambda c: decode(c) + 0 * jnp.float32(len(seen.append(jax.typeof(c).shape) or [])),
                            in_specs=CodesP(jax.P("i")), out_specs=jax.P("i")))
codes_all = jax.device_put(encode(jnp.arange(24.0, dtype=jnp.float32).reshape(8, 3)).code, jax.P("i"))
cs = Codes(codes_all, jnp.array([0.5, 0.25, 2.0], jnp.float32))
show(lambda: (dec(cs), seen[-1]))
show(lambda: jax.typeof(dec(cs)))


# Primitives on arrays: forward-mode rules, accumulators, Python control
# flow on values in rules outside `jit`. (Mapping a primitive without a
# batch rule, or reverse mode from a JVP rule, JAX 0.10.2 refuses and Ember
# does: test_hijax.py.)
class Scaled(VJPHiPrimitive):
    def __init__(self, a, b):
        self.in_avals = (a, b)
        self.out_aval = a
        self.params = {}
        super().__init__()

    def expand(self, x, y):
        return x * jnp.exp(y)

    def vjp_fwd(self, nzs, x, y):
        e = jnp.exp(y)
        return self(x, y), (x, e)

    def vjp_bwd_retval(self, res, g):
        x, e = res
        return (e * g, x * e * g)

    def jvp(self, primals, tangents):
        (x, y), (xd, yd) = primals, tangents
        return self(x, y), jnp.exp(y) * xd + x * jnp.exp(y) * yd


def scaled(x, y):
    return Scaled(jax.typeof(x), jax.typeof(y))(x, y)


jax.set_mesh(jax.make_mesh((1,), ("k",)))
show(lambda: jax.jvp(scaled, (1.5, 0.3), (1.0, 2.0)))
show(lambda: jax.jit(lambda t: jax.jvp(scaled, (1.5, 0.3), (t, 2.0)))(1.0))
show(lambda: jax.grad(scaled, (0, 1))(1.5, 0.3))
show(lambda: jax.jacrev(lambda v: scaled(v, v * v))(jnp.array([0.5, 1.0, -2.0])))


class Unary(VJPHiPrimitive):
    def __init__(self, a):
        self.in_avals = (a,)
        self.out_aval = a
        self.params = {}
        super().__init__()


class Cubed(Unary):
    def expand(self, x):
        return x * x * x

    def vjp_fwd(self, nzs, x):
        return self(x), x

    def vjp_bwd(self, x, g, x_acc):
        x_acc.accum(3 * x * x * g)


def cubed(x):
    return Cubed(jax.typeof(x))(x)


show(lambda: (jax.grad(cubed)(2.0), jax.jit(jax.grad(cubed))(-1.5)))


class Branchy(Unary):
    def expand(self, x):
        return jnp.sin(x) if x > 0 else jnp.cos(x)

    def vjp_fwd(self, nzs, x):
        return self(x), x

    def vjp_bwd_retval(self, x, g):
        return (2 * g,) if x > 0 else (3 * g,)


show(lambda: (jax.grad(lambda x: Branchy(jax.typeof(x))(x))(1.0),
              jax.grad(lambda x: Branchy(jax.typeof(x))(x))(-1.0)))


class Softplus(Unary):
    def expand(self, x):
        return jnp.log1p(jnp.exp(x))

    def jvp(self, primals, tangents):
        (x,), (xd,) = primals, tangents
        return self(x), xd / (1 + jnp.exp(-x))


def softplus(x):
    return Softplus(jax.typeof(x))(x)


show(lambda: (softplus(0.5), *jax.jvp(softplus, (0.5,), (2.0,))))

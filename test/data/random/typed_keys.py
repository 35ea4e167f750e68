"""Typed PRNG key arrays (`random.key`, dtype key<fry>): one line per case.
Run with IMPORT=jax (in a JAX venv) to record `typed_keys.jax.txt` (JAX
0.10.2), with IMPORT=ember to compare (test_random.py)."""
import os

import numpy as np

if os.environ["IMPORT"] == "jax":
    import jax
    import jax.numpy as jnp
    from jax import lax, random
else:
    import ember as jax
    import ember.numpy as jnp
    from ember import lax, random


def show(name, f):
    try:
        r = f()
        if isinstance(r, (jax.Array, np.ndarray)) and not jnp.issubdtype(
                r.dtype, jax.dtypes.prng_key) and jnp.issubdtype(r.dtype, jnp.floating):
            r = np.round(np.asarray(r), 4)
        print(name, "->", repr(r).replace("\n", "\\n"))
    except Exception as e:  # noqa: BLE001 (the error's type and first line are the case)
        print(name, "!!", type(e).__name__, str(e).split("\n")[0][:160])


k = random.key(0)
ks = random.split(k, 4)
show("key", lambda: k)
show("str", lambda: str(k))
show("format", lambda: f"{k}")
show("split", lambda: random.split(k))
show("split shape", lambda: random.split(k, (2, 3)))
show("split empty", lambda: random.split(k, 0))
show("attrs", lambda: (k.shape, k.ndim, k.size, str(k.dtype), k.dtype.name, k.itemsize))
show("issubdtype", lambda: (jnp.issubdtype(k.dtype, jax.dtypes.prng_key),
                            jnp.issubdtype(k.dtype, jax.dtypes.extended),
                            jnp.issubdtype(k.dtype, jnp.integer),
                            jnp.issubdtype(jnp.float32, jax.dtypes.prng_key)))
show("key_data", lambda: random.key_data(ks))
show("key_data raw", lambda: random.key_data(random.PRNGKey(0)))
show("wrap_key_data", lambda: random.wrap_key_data(jnp.array([1, 2], jnp.uint32)))
show("key_impl", lambda: str(random.key_impl(k)))
show("fold_in", lambda: random.fold_in(k, 3))
show("clone", lambda: random.clone(k))
show("uint seed", lambda: random.key(np.uint32(5)))
show("array seed", lambda: random.key(jnp.arange(3)))
show("raw stays raw", lambda: random.split(random.PRNGKey(1)))
show("same draws", lambda: bool((random.normal(random.key(7), (3,)) ==
                                 random.normal(random.PRNGKey(7), (3,))).all()))
show("getitem", lambda: ks[1])
show("slice", lambda: ks[1:3])
show("ellipsis", lambda: ks.reshape(2, 2)[..., 1])
show("iter", lambda: list(ks)[3])
show("len", lambda: len(ks))
show("iter 0-d", lambda: list(k))
show("bool", lambda: bool(k))
show("reshape", lambda: ks.reshape(2, 2).shape)
show("ravel", lambda: ks.reshape(2, 2).ravel())
show("T", lambda: ks.reshape(2, 2).T)
show("squeeze", lambda: ks[None].squeeze(0).shape)
show("take", lambda: jnp.take(ks, jnp.array([0, 2])))
show("take method", lambda: ks.take(jnp.array([3])))
show("eq", lambda: ks == ks)
show("ne", lambda: ks[0] != ks[1])
show("stack", lambda: jnp.stack([k, ks[1]]))
show("stack axis", lambda: jnp.stack([ks, ks], axis=-1).shape)
show("concatenate", lambda: jnp.concatenate([ks[:1], ks[3:]]))
show("where", lambda: jnp.where(jnp.array([True, False]), ks[:2], ks[2:]))
show("broadcast_to", lambda: jnp.broadcast_to(k, (3,)))
show("expand_dims", lambda: jnp.expand_dims(ks, -1).shape)
show("jnp.reshape", lambda: jnp.reshape(ks, (2, 2)).shape)
show("asarray", lambda: jnp.asarray(k))
show("at set", lambda: ks.at[0].set(k))
show("np.asarray", lambda: np.asarray(k))
show("add", lambda: k + 1)
show("hash", lambda: hash(k))
show("typeof", lambda: jax.typeof(k))
show("batched key", lambda: random.normal(ks))
show("normal", lambda: random.normal(k, (2,)))
show("bits", lambda: random.bits(k, (2,)))
show("jit", lambda: jax.jit(lambda k: random.normal(k))(k))
show("jit tracer", lambda: jax.jit(lambda k: print(repr(k)) or k)(ks))
show("jit returns keys", lambda: jax.jit(lambda k: random.split(k))(k))
show("jit shape", lambda: jax.jit(lambda k: k[1:].reshape(3, 1).T)(ks))
show("jit dict", lambda: jax.jit(lambda d: {"a": random.split(d["k"], 3)[2]})({"k": k}))
show("vmap", lambda: jax.vmap(lambda k: random.normal(k))(ks))
show("vmap out_axes", lambda: jax.vmap(lambda k: random.split(k), out_axes=1)(ks).shape)
show("vmap out -1", lambda: jax.vmap(lambda k: random.split(k, 3), out_axes=-1)(ks).shape)
show("vmap in_axes 1", lambda: jax.vmap(lambda k: random.uniform(k), in_axes=1)(
    ks.reshape(2, 2)))
show("vmap key", lambda: jax.vmap(random.key)(jnp.arange(3)))
show("vmap key_data", lambda: jax.vmap(random.key_data)(ks))
show("vmap tree", lambda: jax.vmap(lambda p: p[0] * random.normal(p[1]))(
    (jnp.arange(4.0), ks)))
show("scan carry", lambda: lax.scan(lambda c, _: (random.split(c)[0], random.uniform(c)), k,
                                    None, length=3))
show("scan keys out", lambda: lax.scan(lambda c, _: (random.split(c)[0], c), k, None,
                                       length=3)[1])
show("scan over keys", lambda: lax.scan(lambda c, kk: (c + random.normal(kk), None), 0.0,
                                        ks)[0])
show("fori_loop", lambda: lax.fori_loop(0, 3, lambda i, c: random.fold_in(c, i), k))
show("while_loop", lambda: lax.while_loop(lambda s: s[1] < 2,
                                          lambda s: (random.split(s[0])[1], s[1] + 1),
                                          (k, 0))[0])
show("cond", lambda: lax.cond(True, lambda a: a, lambda a: random.split(a)[0], k))
show("switch", lambda: lax.switch(1, [lambda a: a, lambda a: random.fold_in(a, 1)], k))
show("grad", lambda: jax.grad(lambda x, k: x * random.normal(k))(1.0, k))
show("grad dropout", lambda: jax.grad(
    lambda w, k: jnp.sum(w * random.bernoulli(k, 0.5, (4,))))(jnp.ones(4), k))
show("value_and_grad jit", lambda: jax.jit(jax.value_and_grad(
    lambda w, k: jnp.sum(w * random.normal(k, (2,)))))(jnp.ones(2), k))
show("tree leaves", lambda: jax.tree.leaves({"a": k}))
show("tree map", lambda: jax.tree.map(lambda x: x, {"a": k}))
show("tree split", lambda: jax.tree.map(lambda x: random.split(x, 2)[1], [k, ks[1]]))
show("eval_shape", lambda: jax.eval_shape(lambda: random.split(random.key(0), 3)))
show("initializer", lambda: jax.nn.initializers.glorot_normal()(k, (2, 2)))
show("checkpoint", lambda: jax.grad(jax.checkpoint(lambda x, k: x * random.normal(k)))(1.0, k))
show("hessian", lambda: jax.hessian(lambda x, k: x ** 2 * random.normal(k))(1.0, k))


@jax.custom_vjp
def scaled_noise(x, k):
    return x * random.normal(k)


scaled_noise.defvjp(lambda x, k: (scaled_noise(x, k), k),
                    lambda k, g: (g * random.normal(k), None))
show("custom_vjp", lambda: jax.grad(scaled_noise)(1.0, k))
show("pmap", lambda: jax.pmap(lambda k: random.normal(k))(ks[:1]))
mesh = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
show("shard_map", lambda: jax.jit(jax.shard_map(
    lambda k: random.split(k[0], 1), mesh=mesh, in_specs=jax.P("x"),
    out_specs=jax.P("x")))(ks[:1]))
show("device_put", lambda: jax.device_put(ks[:2]))
show("device_get", lambda: jax.device_get(k))
show("zeros_like", lambda: (jnp.zeros_like(ks), random.key_data(jnp.zeros_like(ks))))
show("ones_like", lambda: (jnp.ones_like(ks[:2]), jnp.full_like(ks, 3).shape))
show("empty_like", lambda: jnp.empty_like(ks).shape)
show("jit zeros_like", lambda: random.key_data(jax.jit(jnp.zeros_like)(ks)))
show("select_n", lambda: jax.lax.select_n(jnp.array([True, False, True, False])[:len(ks)],
                                          ks, random.split(random.key(1), len(ks))))
show("select_n int", lambda: random.key_data(jax.lax.select_n(
    jnp.array(1), ks[:2], random.split(random.key(2), 2))))

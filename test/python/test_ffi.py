"""`ember.ffi` (JAX's `jax.ffi`): handlers written against XLA's FFI headers
(test/data/ffi/handlers.cc, compiled here against the headers jaxlib ships,
from the JAX venv `make test` builds) registered and called eagerly, under
`jit`, in loops and under `vmap`, with attributes of every kind, result
aliasing and layouts; their errors; the cross-check with JAX running the
same library."""

import ctypes
import glob
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

HERE = os.path.dirname(__file__)
SOURCE = os.path.join(HERE, "..", "data", "ffi", "handlers.cc")
JAX_PYTHON = os.environ.get("EMBER_JAX_PYTHON")


def _include_dir():
    if os.environ.get("EMBER_FFI_INCLUDE_DIR"):
        return os.environ["EMBER_FFI_INCLUDE_DIR"]
    if JAX_PYTHON:
        venv = os.path.dirname(os.path.dirname(JAX_PYTHON))
        found = glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "jaxlib",
                                       "include"))
        if found:
            return found[0]
    return None


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    include = _include_dir()
    compiler = shutil.which("c++") or shutil.which("g++")
    if include is None or compiler is None:
        pytest.skip("no XLA FFI headers (a JAX venv: EMBER_JAX_PYTHON, make test sets it) "
                    "or no C++ compiler")
    out = str(tmp_path_factory.mktemp("ffi") / "libhandlers.so")
    subprocess.run([compiler, "-std=c++17", "-O1", "-w", "-shared", "-fPIC", f"-I{include}",
                    SOURCE, "-o", out], check=True)
    lib = ctypes.cdll.LoadLibrary(out)
    for name, sym in [("row_rms_norm", lib.RowRmsNorm), ("affine", lib.Affine),
                      ("accumulate", lib.Accumulate), ("first_column", lib.FirstColumn),
                      ("row_rms_norm_fwd", lib.RowRmsNormFwd),
                      ("row_rms_norm_bwd", lib.RowRmsNormBwd)]:
        ember.ffi.register_ffi_target(name, ember.ffi.pycapsule(sym), platform="cpu")
    return out


def _rms_ref(x, eps=1e-5):
    x = np.asarray(x, np.float32)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def _rms(x, eps=1e-5, **kw):
    return ember.ffi.ffi_call("row_rms_norm", ember.ShapeDtypeStruct(x.shape, x.dtype),
                              **kw)(x, eps=np.float32(eps))


X = (jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4) - 5.5) / 2


def test_calls_eagerly_under_jit_and_in_loops(library):
    np.testing.assert_allclose(_rms(X), _rms_ref(X), rtol=1e-6)
    np.testing.assert_allclose(ember.jit(_rms)(X), _rms_ref(X), rtol=1e-6)

    def body(c, row):
        y = _rms(row[None, :] * c)
        return c + 1.0, y[0]
    _, ys = ember.jit(lambda xs: lax.scan(body, jnp.float32(1.0), xs))(X)
    want = np.stack([_rms_ref(np.asarray(X[i]) * (1.0 + i)) for i in range(3)])
    np.testing.assert_allclose(ys, want, rtol=1e-5)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all",
                                    "legacy_vectorized"])
def test_vmap_methods(library, method):
    f = ember.vmap(lambda r: _rms(r, vmap_method=method))
    np.testing.assert_allclose(f(X), _rms_ref(X), rtol=1e-6)
    np.testing.assert_allclose(ember.jit(f)(X), _rms_ref(X), rtol=1e-6)


def test_attributes_of_every_kind_and_two_results(library):
    call = ember.ffi.ffi_call("affine", (ember.ShapeDtypeStruct((3, 4), np.float32),
                                         ember.ShapeDtypeStruct((), np.float64)))
    offsets = np.array([1.0, 2.0], np.float32)
    y, total = call(X, repeat=2, scale=0.5, offsets=offsets, mode="sub", cfg={"bias": 10.0})
    x = np.asarray(X).reshape(-1)
    want = -2 * (x * 0.5 + offsets[np.arange(12) % 2])
    np.testing.assert_allclose(np.asarray(y).reshape(-1), want, rtol=1e-6)
    # (a float64 result is float32 without jax_enable_x64, as Ember's arrays)
    assert total.dtype == np.float32
    np.testing.assert_allclose(total, want.sum() + 10.0, rtol=1e-6)
    assert isinstance(call(X, repeat=1, scale=1.0, offsets=offsets, mode="add",
                           cfg={"bias": 0.0}), tuple)


def test_aliasing_and_layouts(library):
    acc = jnp.ones((3, 4), jnp.float32)
    out = ember.ffi.ffi_call("accumulate", ember.ShapeDtypeStruct((3, 4), jnp.float32),
                             input_output_aliases={1: 0})(X, acc)
    np.testing.assert_allclose(out, np.asarray(X) + 1)
    m = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3)
    col = ember.ffi.ffi_call("first_column", ember.ShapeDtypeStruct((2,), jnp.float32),
                             input_layouts=[(1, 0)])
    np.testing.assert_allclose(col(m), [0.0, 3.0])  # (column-major: m[:, 0])
    np.testing.assert_allclose(ember.jit(col)(m), [0.0, 3.0])
    with pytest.raises(ValueError, match="different abstract value"):
        ember.ffi.ffi_call("accumulate", ember.ShapeDtypeStruct((4,), jnp.float32),
                           input_output_aliases={1: 0})(X, acc)
    with pytest.raises(ValueError, match="not a permutation"):
        ember.ffi.ffi_call("first_column", ember.ShapeDtypeStruct((2,), jnp.float32),
                           input_layouts=[(0, 0)])(m)


def test_errors(library):
    # The handler's own error, with XLA's code, eagerly and under jit.
    for f in (_rms, ember.jit(_rms)):
        with pytest.raises(ember.errors.JaxRuntimeError,
                           match="INVALID_ARGUMENT: row_rms_norm needs an array"):
            f(jnp.float32(2.0))
    # An attribute of the wrong type: XLA's decoding diagnostics.
    with pytest.raises(ember.errors.JaxRuntimeError,
                       match="Wrong scalar data type: expected F32 but got F64"):
        ember.ffi.ffi_call("row_rms_norm", ember.ShapeDtypeStruct(X.shape, X.dtype))(X, eps=1e-5)
    with pytest.raises(ember.errors.JaxRuntimeError, match="NOT_FOUND: No FFI handler "
                                                           "registered for nope"):
        ember.ffi.ffi_call("nope", ember.ShapeDtypeStruct((), np.float32))(X)
    with pytest.raises(NotImplementedError, match="vmap_method"):
        ember.vmap(_rms)(X)
    with pytest.raises(ValueError, match="do not support JVP"):
        ember.grad(lambda x: _rms(x).sum())(X)
    with pytest.raises(ValueError, match="vmap_method must be"):
        ember.ffi.ffi_call("row_rms_norm", ember.ShapeDtypeStruct((), np.float32),
                           vmap_method="sideways")
    with pytest.raises(TypeError, match="PyCapsule"):
        ember.ffi.register_ffi_target("bad", 42)
    with pytest.raises(NotImplementedError, match="api_version=0"):
        ember.ffi.register_ffi_target("legacy", ember.ffi.pycapsule(ctypes.c_void_p(1)),
                                      api_version=0)
    with pytest.raises(TypeError, match="unsupported attribute type"):
        ember.ffi.ffi_call("row_rms_norm", ember.ShapeDtypeStruct(X.shape, X.dtype))(
            X, eps=object())


def test_differentiated_through_custom_vjp(library):
    """JAX's recipe: an FFI call is differentiated by a custom rule."""
    @ember.custom_vjp
    def rms(x):
        return _rms(x)

    def fwd(x):
        return _rms(x), x

    def bwd(x, ct):
        _, pullback = ember.vjp(lambda v: v / jnp.sqrt(jnp.mean(v * v, -1, keepdims=True) +
                                                       1e-5), x)
        return pullback(ct)

    rms.defvjp(fwd, bwd)
    g = ember.grad(lambda x: (rms(x) * jnp.arange(4.0)).sum())(X)
    want = ember.grad(lambda x: (x / jnp.sqrt(jnp.mean(x * x, -1, keepdims=True) + 1e-5) *
                                 jnp.arange(4.0)).sum())(X)
    np.testing.assert_allclose(g, want, rtol=1e-5)


def test_include_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_FFI_INCLUDE_DIR", str(tmp_path))
    assert ember.ffi.include_dir() == str(tmp_path)


_JAX_SIDE = r"""
import ctypes, json, sys
import numpy as np
import jax, jax.numpy as jnp
lib = ctypes.cdll.LoadLibrary(sys.argv[1])
jax.ffi.register_ffi_target("row_rms_norm", jax.ffi.pycapsule(lib.RowRmsNorm), platform="cpu")
jax.ffi.register_ffi_target("affine", jax.ffi.pycapsule(lib.Affine), platform="cpu")
x = (jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4) - 5.5) / 2
y = jax.ffi.ffi_call("row_rms_norm", jax.ShapeDtypeStruct(x.shape, x.dtype))(
    x, eps=np.float32(1e-5))
a, t = jax.ffi.ffi_call("affine", (jax.ShapeDtypeStruct((3, 4), np.float32),
                                   jax.ShapeDtypeStruct((), np.float64)))(
    x, repeat=3, scale=0.25, offsets=np.array([1.0, -2.0, 0.5], np.float32), mode="add",
    cfg={"bias": 1.5})
print(json.dumps([np.asarray(y).tolist(), np.asarray(a).tolist(), float(t)]))
"""


@pytest.mark.skipif(not (JAX_PYTHON and os.path.exists(JAX_PYTHON)),
                    reason="no JAX Python for the cross-check (EMBER_JAX_PYTHON; make test "
                    "sets it)")
def test_same_library_gives_jax_results(library, tmp_path):
    script = tmp_path / "jax_side.py"
    script.write_text(_JAX_SIDE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    out = subprocess.run([JAX_PYTHON, str(script), library], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    y, a, t = json.loads(out.stdout.strip().splitlines()[-1])
    np.testing.assert_array_equal(np.asarray(_rms(X)), np.array(y, np.float32))
    ours = ember.ffi.ffi_call("affine", (ember.ShapeDtypeStruct((3, 4), np.float32),
                                         ember.ShapeDtypeStruct((), np.float64)))(
        X, repeat=3, scale=0.25, offsets=np.array([1.0, -2.0, 0.5], np.float32), mode="add",
        cfg={"bias": 1.5})
    np.testing.assert_array_equal(np.asarray(ours[0]), np.array(a, np.float32))
    np.testing.assert_allclose(float(ours[1]), t, rtol=1e-7)


def test_hijax_primitive_with_a_batch_rule(library):
    """JAX's FFI tutorial: an FFI call wrapped in a hijax primitive whose
    `batch` rule calls the handler on the whole batch (the handler treats
    leading axes as batch axes), so `vmap` needs no `vmap_method`; also
    inside `jit`, nested vmaps and a scan."""
    from ember.experimental.hijax import VJPHiPrimitive

    calls = []

    class RowRms(VJPHiPrimitive):
        def __init__(self, aval):
            self.in_avals, self.out_aval, self.params = (aval,), aval, {}
            super().__init__()

        def expand(self, x):
            return ember.ffi.ffi_call("row_rms_norm", self.out_aval)(x, eps=np.float32(1e-5))

        def batch(self, axis_data, args, dims):
            calls.append(axis_data.size)
            (x,), (d,) = args, dims
            return row_rms(jnp.moveaxis(x, d, 0)), 0

    def row_rms(x):
        return RowRms(ember.typeof(x))(x)

    xs = jnp.linspace(-0.5, 0.5, 96, dtype=jnp.float32).reshape(3, 8, 4)
    np.testing.assert_allclose(row_rms(xs[0]), _rms_ref(xs[0]), rtol=1e-6)
    np.testing.assert_allclose(ember.vmap(row_rms)(xs), _rms_ref(xs), rtol=1e-6)
    np.testing.assert_allclose(ember.jit(ember.vmap(row_rms))(xs), _rms_ref(xs), rtol=1e-6)
    np.testing.assert_allclose(ember.vmap(ember.vmap(row_rms))(xs.reshape(3, 2, 4, 4)),
                               _rms_ref(xs.reshape(3, 2, 4, 4)), rtol=1e-6)
    summed = ember.vmap(lambda x: lax.scan(lambda c, r: (c + row_rms(r[None]), None),
                                           jnp.zeros((1, 4)), x)[0])(xs)
    np.testing.assert_allclose(summed[:, 0], _rms_ref(xs).sum(axis=1), rtol=1e-5)
    assert calls and set(calls) <= {3, 2, 8}


def test_hijax_ffi_primitive_composes_with_grad_and_vmap(library):
    """JAX's FFI tutorial, "Composing transformations": an FFI call in a
    hijax primitive with VJP and JVP rules that call two more FFI targets,
    each wrapped in a primitive with a `batch` rule, so that `vmap` of
    `grad`, `jvp` and `vmap` all run the handlers (checked against the
    same computation in jnp)."""
    from ember.experimental.hijax import VJPHiPrimitive

    def ref(x):
        return x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-5)

    def to_front(a, d, n):
        return jnp.broadcast_to(a, (n, *a.shape)) if d is None else jnp.moveaxis(a, d, 0)

    class Fwd(VJPHiPrimitive):
        def __init__(self, aval):
            self.in_avals = (aval,)
            self.out_aval = (aval, aval.update(shape=aval.shape[:-1]))
            self.params = {}
            super().__init__()

        def expand(self, x):
            return ember.ffi.ffi_call("row_rms_norm_fwd", self.out_aval)(x, eps=np.float32(1e-5))

        def batch(self, axis_data, args, dims):
            return fwd(to_front(args[0], dims[0], axis_data.size)), (0, 0)

    class Bwd(VJPHiPrimitive):
        def __init__(self, *avals):
            self.in_avals, self.out_aval, self.params = avals, avals[1], {}
            super().__init__()

        def expand(self, res, x, ct):
            return ember.ffi.ffi_call("row_rms_norm_bwd", self.out_aval)(res, x, ct)

        def batch(self, axis_data, args, dims):
            return bwd(*[to_front(a, d, axis_data.size) for a, d in zip(args, dims)]), 0

    def fwd(x):
        return Fwd(ember.typeof(x))(x)

    def bwd(res, x, ct):
        return Bwd(ember.typeof(res), ember.typeof(x), ember.typeof(ct))(res, x, ct)

    class Rms(VJPHiPrimitive):
        def __init__(self, aval):
            self.in_avals, self.out_aval, self.params = (aval,), aval, {}
            super().__init__()

        def expand(self, x):
            return ember.ffi.ffi_call("row_rms_norm", self.out_aval)(x, eps=np.float32(1e-5))

        def vjp_fwd(self, nzs_in, x):
            y, res = fwd(x)
            return y, (res, x)

        def vjp_bwd_retval(self, res, ct):
            return (bwd(res[0], res[1], ct),)

        def jvp(self, primals, tangents):
            y, res = fwd(primals[0])
            return y, bwd(res, primals[0], tangents[0])  # (a symmetric Jacobian)

        def batch(self, axis_data, args, dims):
            return rms(to_front(args[0], dims[0], axis_data.size)), 0

    def rms(x):
        return Rms(ember.typeof(x))(x)

    x = jnp.linspace(-0.5, 0.5, 32, dtype=jnp.float32).reshape(8, 4)
    xs = jnp.linspace(-0.5, 0.5, 96, dtype=jnp.float32).reshape(3, 8, 4)
    w = jnp.arange(4.0, dtype=jnp.float32)
    loss = lambda f: (lambda v: jnp.sum(f(v) * w))  # noqa: E731
    np.testing.assert_allclose(rms(x), ref(x), rtol=1e-5)
    np.testing.assert_allclose(ember.grad(loss(rms))(x), ember.grad(loss(ref))(x),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ember.jvp(rms, (x,), (jnp.ones_like(x),))[1],
                               ember.jvp(ref, (x,), (jnp.ones_like(x),))[1], rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(ember.vmap(rms)(xs), ref(xs), rtol=1e-5)
    for f in (ember.vmap(ember.grad(loss(rms))), ember.jit(ember.vmap(ember.grad(loss(rms))))):
        np.testing.assert_allclose(f(xs), ember.vmap(ember.grad(loss(ref)))(xs), rtol=1e-4,
                                   atol=1e-6)

"""jax.lax functions on Ember's ops beyond the primitives of lax.py.

Each is composed from existing primitives (so jit, grad and vmap apply to
it), with custom derivative rules where JAX defines the derivative other
than by differentiating the computation: `custom_linear_solve` and
`custom_root` (implicit differentiation; the functions they are given are
traced into private functions whose closed-over values become explicit
arguments of a `custom_vjp`), and `reduce_precision` (the tangent is rounded
too). The special functions are series and continued fractions evaluated to
a fixed depth; `fft` is the `ember.fft` op (the runtime's FFT).
"""

import builtins
import enum
import functools
import itertools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from . import (
    ad,
    control_flow,
    core,
    custom_batching,
    dtypes,
    lax,
    lax_linalg,
    parallel,
    prng,
    scipy_special,
    targets,
    tree_util,
)
from .api_util import Traced
from .convolution import ConvDimensionNumbers, conv_dimension_numbers, conv_general_dilated
from .core import as_value
from .errors import EmberInternalError
from .lax import DotAlgorithm, DotAlgorithmPreset
from .numpy import fft as numpy_fft
from .numpy import lax_numpy as jnp

__all__ = [
    # types and enums
    "AccuracyMode", "ConvGeneralDilatedDimensionNumbers", "DotAlgorithm", "DotAlgorithmPreset",
    "DotDimensionNumbers", "FftType", "PrecisionLike", "RaggedDotDimensionNumbers",
    "RandomAlgorithm", "Tolerance",
    # special functions
    "betainc", "igamma", "igamma_grad_a", "igammac", "polygamma", "random_gamma_grad", "zeta",
    # solvers
    "custom_linear_solve", "custom_root",
    # products, shapes, indexing
    "select_n",
    "approx_max_k", "approx_min_k", "batch_matmul", "broadcast_like", "broadcast_shapes",
    "broadcast_to_rank", "index_take", "mulhi", "ragged_dot", "ragged_dot_general",
    "reduce_precision", "reduce_window_shape_tuple", "scatter_apply", "scatter_sub", "split",
    "stack", "tile", "unstack",
    # convolutions, fft
    "conv_general_dilated_local", "conv_general_dilated_patches", "fft",
    # random bits
    "rng_bit_generator", "rng_uniform",
    # misc
    "after_all", "composite", "create_token", "dtype", "empty", "platform_dependent",
    "shape_as_value", "pbroadcast", "pswapaxes",
]


def _where():
    return f"(at {core.where()})"


# --------------------------------------------------------------------------
# Types and enums JAX exports (precision/algorithm arguments are accepted and
# ignored by Ember's CPU products)
# --------------------------------------------------------------------------


class AccuracyMode(enum.Enum):
    """The accuracy requested of a transcendental function's implementation."""
    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """Error bounds (absolute, relative, in ulps) for an accuracy request."""

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError(f"Tolerances must be non-negative {_where()}")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError(f"At least one of atol, rtol or ulps must be set {_where()}")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps

    def __repr__(self):
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None
PrecisionLike = (None | str | enum.Enum | tuple[str, str] | tuple[enum.Enum, enum.Enum]
                 | DotAlgorithm | DotAlgorithmPreset)


class RaggedDotDimensionNumbers(NamedTuple):
    """The dimensions of a ragged dot: `dot_dimension_numbers` as for
    dot_general, the lhs dimensions that are ragged, and the rhs dimensions
    that index the groups."""
    dot_dimension_numbers: Any
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]


class RandomAlgorithm(enum.IntEnum):
    """The bit generator of `rng_bit_generator`."""
    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


class FftType(enum.IntEnum):
    """The transform `fft` computes."""
    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


# --------------------------------------------------------------------------
# Special functions
# --------------------------------------------------------------------------


def _same_float(name, *xs):
    """The operands as arrays; lax-level: one float dtype for all (Python
    scalars take the arrays'), broadcast where they are rank 0."""
    vals = [x for x in xs if isinstance(x, core.Value)]
    dt = vals[0].dtype if vals else dtypes.canonicalize_dtype(np.float64)
    xs = [x if isinstance(x, core.Value) else core.asarray_concrete(x, dt) for x in xs]
    for x in xs:
        if not dtypes.is_float(x.dtype):
            raise TypeError(f"{name} does not accept dtype {np.dtype(x.dtype).name}. Accepted "
                            f"dtypes are subtypes of floating {_where()}")
    if len({np.dtype(x.dtype) for x in xs}) > 1:
        names = ", ".join(np.dtype(x.dtype).name for x in xs)
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{names} {_where()}")
    return jnp.broadcast_arrays(*xs) if len(xs) > 1 else xs


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = _same_float("igamma", a, x)
    return scipy_special.gammainc(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    a, x = _same_float("igammac", a, x)
    return scipy_special.gammaincc(a, x)


def _dp_da(a, x):
    return ad.jvp(lambda a_: scipy_special.gammainc(a_, x), (a,), (jnp.ones_like(a),))[1]


def igamma_grad_a(a, x):
    """dP(a, x)/da."""
    a, x = _same_float("igamma_grad_a", a, x)
    return _dp_da(a, x)


def random_gamma_grad(a, x):
    """d sample / d a for a Gamma(a, 1) sample `x` (implicit reparameterization):
    -(dP/da) / (dP/dx)."""
    a, x = _same_float("random_gamma_grad", a, x)
    log_density = (a - 1) * jnp.log(x) - x - lax.lgamma(a)
    return -_dp_da(a, x) / jnp.exp(log_density)


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    a, b, x = _same_float("betainc", a, b, x)
    return scipy_special.betainc(a, b, x)


def zeta(x, q):
    """The Hurwitz zeta function sum_k (q + k)^-x."""
    x, q = _same_float("zeta", x, q)
    return scipy_special.zeta(x, q)


def polygamma(m, x):
    """The m-th derivative of digamma (m a float holding a non-negative
    integer)."""
    m, x = _same_float("polygamma", m, x)
    whole = (m >= 0) & (m == jnp.floor(m))
    out = scipy_special.polygamma(jnp.where(whole, m, 0).astype(np.int32), x)
    return jnp.where(whole, out, np.nan).astype(x.dtype)


# --------------------------------------------------------------------------
# custom_linear_solve and custom_root
# --------------------------------------------------------------------------


def _closure_convert(fun, example):
    """`fun` (pytree -> pytree) as `g(consts, x)` with the traced values it
    closes over (`consts`, returned) made explicit: `g` runs `fun` again in
    the current trace with each of them read as the corresponding entry of
    the `consts` it is given (so the ops are inlined: no call op, which
    vmap could not batch)."""
    leaves, tree = tree_util.tree_flatten(example)
    vals = [as_value(v) for v in leaves]
    t = Traced(lambda *xs: fun(tree_util.tree_unflatten(tree, list(xs))),
               [v.aval for v in vals])
    captured = list(t.captured)

    def converted(consts, x):
        trace = core.current_trace()
        table = trace._capture_args
        saved = {}
        try:
            for outer, inner in zip(captured, consts):
                if outer is not inner and id(outer) not in saved:
                    saved[id(outer)] = table.get(id(outer))
                    table[id(outer)] = trace.to_value(as_value(inner))
            return fun(x)
        finally:
            for key, arg in saved.items():
                if arg is None:
                    table.pop(key, None)
                else:
                    table[key] = arg

    return converted, captured


def _tree_scale(c, tree):
    return tree_util.tree_map(lambda v: v * c, tree)


def _check_solve_tree(what, got, want):
    if tree_util.tree_structure(got) != tree_util.tree_structure(want):
        raise TypeError(f"custom_linear_solve: {what} output must have the same structure as "
                        f"b: {tree_util.tree_structure(got)} vs "
                        f"{tree_util.tree_structure(want)} {_where()}")
    for g, w in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(want)):
        g, w = as_value(g), as_value(w)
        if g.shape != w.shape:
            raise TypeError(f"custom_linear_solve: {what} output shape {g.shape} differs from "
                            f"b's {w.shape} {_where()}")


def _split_aux(out, has_aux):
    return out if has_aux else (out, None)


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False,
                        has_aux=False):
    """x = solve(matvec, b) for the linear map `matvec`, differentiated
    implicitly: the derivative wrt `b` and wrt the values `matvec` closes
    over is another solve (reverse mode through `transpose_solve`, or `solve`
    if `symmetric`), never a differentiation of `solve` itself."""
    b_vals = tree_util.tree_map(as_value, b)
    _check_solve_tree("matvec", matvec(b_vals), b_vals)
    if not ad.differentiating():
        x, aux = _split_aux(solve(matvec, b_vals), has_aux)
        _check_solve_tree("solve", x, b_vals)
        return (x, aux) if has_aux else x

    mv, mv_consts = _closure_convert(matvec, b_vals)

    def run_solve(bb, consts):
        return _split_aux(solve(lambda y: mv(consts, y), bb), has_aux)[0]

    sol, sol_consts = _closure_convert(lambda bb: run_solve(bb, mv_consts), b_vals)
    n_mv = len(mv_consts)

    def transposed_solve(consts, x, ct):
        mcon = consts[:n_mv]
        if symmetric:
            return sol(consts[n_mv:], ct)
        if transpose_solve is None:
            raise TypeError("transpose_solve required for reverse-mode differentiation "
                            f"of a non-symmetric custom_linear_solve {_where()}")
        vecmat = ad.linear_transpose(lambda y: mv(mcon, y), x)
        return _split_aux(transpose_solve(lambda y: vecmat(y)[0], ct), has_aux)[0]

    # x = A^-1 b: dx = A^-1 (db - dA x), dA through matvec's constants.
    @ad.custom_jvp
    def full_solve(bb, consts):
        return sol(consts[n_mv:], bb)

    @full_solve.defjvp
    def full_solve_jvp(primals, tangents):
        bb, consts = primals
        dbb, dconsts = tangents
        x = full_solve(bb, consts)
        _, da_x = ad.jvp(lambda c: mv(c, x), (list(consts[:n_mv]),),
                         (list(dconsts[:n_mv]),))
        rhs = tree_util.tree_map(lambda u, v: u - v, dbb, da_x)
        return x, sol(consts[n_mv:], rhs)

    # Reverse mode through the custom_vjp (fwd: the solve; bwd: the
    # transposed solve), forward mode through the custom_jvp (Ember does
    # not transpose a custom_vjp inside a JVP rule).
    @ad.custom_vjp
    def rev_solve(bb, consts):
        return sol(consts[n_mv:], bb)

    def rev_fwd(bb, consts):
        x = sol(consts[n_mv:], bb)
        return x, (x, consts)

    def rev_bwd(res, ct):
        x, consts = res
        ct = tree_util.tree_map(lax.stop_gradient, ct)
        u = transposed_solve(consts, x, ct)
        _, pull = ad.vjp(lambda c: mv(c, x), list(consts[:n_mv]))
        d_mcon = pull(_tree_scale(-1, u))[0]
        return u, list(d_mcon) + [jnp.zeros_like(v) for v in consts[n_mv:]]

    rev_solve.defvjp(rev_fwd, rev_bwd)
    run = rev_solve if ad.differentiation_kind() == "vjp" else full_solve
    x = run(b_vals, list(mv_consts) + list(sol_consts))
    if has_aux:
        aux = solve(matvec, b_vals)[1]
        return x, lax.stop_gradient(aux)
    return x


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """solve(f, initial_guess), a root of `f`, differentiated implicitly wrt
    the values `f` closes over: d root = -(df/dx)^-1 (df/dtheta dtheta),
    with the linear system solved by `tangent_solve(g, y)` (g the linear map
    of df/dx, or its transpose in reverse mode)."""
    guess = tree_util.tree_map(as_value, initial_guess)
    if not ad.differentiating():
        root, aux = _split_aux(solve(f, guess), has_aux)
        return (root, aux) if has_aux else root

    fc, consts = _closure_convert(f, guess)

    def run_solve(g):
        return _split_aux(solve(lambda y: fc(consts, y), g), has_aux)[0]

    solver, s_consts = _closure_convert(run_solve, guess)
    n_f = len(consts)

    @ad.custom_vjp
    def root_of(g, cs):
        return solver(cs[n_f:], g)

    def fwd(g, cs):
        r = solver(cs[n_f:], g)
        return r, (r, cs)

    def bwd(res, ct):
        r, cs = res
        fcon = cs[:n_f]
        ct = tree_util.tree_map(lambda v: lax.stop_gradient(v), ct)
        # The transpose of y -> (df/dx) y at the root, solved for ct.
        _, pull_x = ad.vjp(lambda y: fc(fcon, y), r)
        u = tangent_solve(lambda v: pull_x(v)[0], ct)
        _, pull_c = ad.vjp(lambda c: fc(c, r), list(fcon))
        d_fcon = pull_c(_tree_scale(-1, u))[0]
        zeros_g = tree_util.tree_map(jnp.zeros_like, r)
        return zeros_g, list(d_fcon) + [jnp.zeros_like(v) for v in cs[n_f:]]

    root_of.defvjp(fwd, bwd)

    @ad.custom_jvp
    def root_fwd_mode(g, cs):
        return solver(cs[n_f:], g)

    @root_fwd_mode.defjvp
    def root_jvp(primals, tangents):
        g, cs = primals
        _, dcs = tangents
        r = root_fwd_mode(g, cs)
        fcon = list(cs[:n_f])
        _, df = ad.jvp(lambda c: fc(c, r), (fcon,), (list(dcs[:n_f]),))
        u = tangent_solve(lambda y: ad.jvp(lambda x: fc(fcon, x), (r,), (y,))[1], df)
        return r, _tree_scale(-1, u)

    run = root_of if ad.differentiation_kind() == "vjp" else root_fwd_mode
    root = run(guess, list(consts) + list(s_consts))
    if has_aux:
        aux = solve(f, guess)[1]
        return root, lax.stop_gradient(aux)
    return root


# --------------------------------------------------------------------------
# Shapes, stacking, splitting
# --------------------------------------------------------------------------


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (numpy's rules), as a tuple."""
    shapes = [tuple(s) for s in shapes]
    if not shapes:
        return ()
    rank = builtins.max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + s for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_to_rank(x, rank):
    """`x` with leading unit dimensions added up to `rank`."""
    x = as_value(x)
    if x.ndim >= rank:
        return x
    return lax.reshape(x, (1,) * (rank - x.ndim) + x.shape)


def broadcast_like(arr, like_arr):
    """`arr` broadcast (numpy's rules) to the shape of `like_arr`."""
    return jnp.broadcast_to(as_value(arr), as_value(like_arr).shape)


def split(operand, sizes, axis=0):
    """`operand` cut along `axis` into consecutive pieces of the given sizes."""
    x = as_value(operand)
    axis = _canon_axis(axis, x.ndim, "split")
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or builtins.sum(sizes) != x.shape[axis]:
        raise ValueError(f"Sum of sizes {builtins.sum(sizes)} must be equal to dimension "
                         f"{x.shape[axis]} of the operand shape {x.shape} {_where()}")
    out, start = [], 0
    for s in sizes:
        out.append(lax.slice_in_dim(x, start, start + s, 1, axis))
        start += s
    return out


def _canon_axis(axis, ndim, what):
    if not -ndim <= axis < builtins.max(ndim, 1):
        raise ValueError(f"{what}: axis {axis} is out of bounds for a rank-{ndim} operand "
                         f"{_where()}")
    return axis % ndim if ndim else 0


def tile(operand, reps):
    """`operand` repeated reps[i] times along each dimension i (len(reps) =
    operand's rank)."""
    x = as_value(operand)
    reps = tuple(int(r) for r in reps)
    if len(reps) != x.ndim:
        raise ValueError(f"reps length must be equal to the ndim of x, got len(reps)="
                         f"{len(reps)} and x.ndim={x.ndim}.")
    # broadcast to (r0, d0, r1, d1, ...) then merge pairs
    shape = tuple(v for r, d in zip(reps, x.shape) for v in (r, d))
    y = lax.broadcast_in_dim(x, shape, tuple(range(1, 2 * x.ndim, 2)))
    return lax.reshape(y, tuple(r * d for r, d in zip(reps, x.shape)))


def stack(operands, axis=0):
    """The operands (same shape and dtype) stacked along a new `axis`."""
    xs = [as_value(x) for x in operands]
    if not xs:
        raise ValueError("stack requires at least one operand")
    axis = axis % (xs[0].ndim + 1)
    xs = [lax.expand_dims(x, (axis,)) for x in xs]
    return lax.concatenate(xs, axis)


def unstack(x, axis=0):
    """The slices of `x` along `axis`, as a tuple."""
    x = as_value(x)
    axis = _canon_axis(axis, x.ndim, "unstack")
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(x.shape[axis]))


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
    """The result shape of a reduce_window (padding as (lo, hi) pairs)."""
    n = len(operand_shape)
    base_dilation = base_dilation or (1,) * n
    window_dilation = window_dilation or (1,) * n
    out = []
    for d, w, s, (lo, hi), bd, wd in zip(operand_shape, window_dimensions, window_strides,
                                         padding, base_dilation, window_dilation):
        d = (d - 1) * bd + 1 if d else 0
        w = (w - 1) * wd + 1
        size = d + lo + hi - w
        out.append(size // s + 1 if size >= 0 else 0)
    return tuple(out)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product: the leading dimensions are batch dimensions
    (equal), the last two multiplied."""
    lhs, rhs = as_value(lhs), as_value(rhs)
    if lhs.ndim < 2 or rhs.ndim < 2 or lhs.ndim != rhs.ndim:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D and of the same rank,"
                         f" got {lhs.ndim}D and {rhs.ndim}D {_where()}")
    nb = lhs.ndim - 2
    if lhs.shape[:nb] != rhs.shape[:nb]:
        raise ValueError(f"batch_matmul: batch dimensions differ: {lhs.shape} and "
                         f"{rhs.shape} {_where()}")
    batch = tuple(range(nb))
    return lax.dot_general(lhs, rhs, (((nb + 1,), (nb,)), (batch, batch)),
                           precision=precision)


def index_take(src, idxs, axes):
    """src[idxs[:, 0], idxs[:, 1], ...] along `axes` (the rest kept, after a
    leading dimension of len(idxs))."""
    src, idxs = as_value(src), as_value(idxs)
    axes = tuple(int(a) for a in axes)
    if idxs.ndim != 2 or idxs.shape[1] != len(axes):
        raise ValueError(f"index_take: idxs must be (n, {len(axes)}), got {idxs.shape} "
                         f"{_where()}")
    offset = tuple(range(1, 1 + src.ndim - len(axes)))
    dn = lax.GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=axes,
                                    start_index_map=axes)
    sizes = tuple(1 if i in axes else d for i, d in enumerate(src.shape))
    return lax.gather(src, idxs, dn, sizes, mode="clip")


def mulhi(x, y, /):
    """The high half of the double-width product of two integers (as the
    operands' dtype): from the products of the half-width parts."""
    x, y = lax._promote_scalars(x, y)
    x, y = as_value(x), as_value(y)
    if x.dtype != y.dtype or not dtypes.is_int(x.dtype):
        raise TypeError(f"mulhi requires integer operands of one dtype, got "
                        f"{np.dtype(x.dtype).name} and {np.dtype(y.dtype).name} {_where()}")
    dt = np.dtype(x.dtype)
    bits = dt.itemsize * 8
    udt = np.dtype(f"uint{bits}")
    h = bits // 2
    ux, uy = lax.bitcast_convert_type(x, udt), lax.bitcast_convert_type(y, udt)
    mask = lax.full_like(ux, (1 << h) - 1)
    sh = lax.full_like(ux, h)
    xl, xh = lax.bitwise_and(ux, mask), lax.shift_right_logical(ux, sh)
    yl, yh = lax.bitwise_and(uy, mask), lax.shift_right_logical(uy, sh)
    ll, hl, lh, hh = lax.mul(xl, yl), lax.mul(xh, yl), lax.mul(xl, yh), lax.mul(xh, yh)
    cross = lax.add(lax.add(lax.shift_right_logical(ll, sh), lax.bitwise_and(hl, mask)), lh)
    high = lax.add(lax.add(hh, lax.shift_right_logical(hl, sh)),
                   lax.shift_right_logical(cross, sh))
    if dtypes.is_unsigned(dt):
        return high
    # Signed: subtract y where x < 0 and x where y < 0 (two's complement).
    zero = lax.full_like(x, 0)
    high = lax.sub(high, lax.select(lax.lt(x, zero), uy, lax.full_like(uy, 0)))
    high = lax.sub(high, lax.select(lax.lt(y, zero), ux, lax.full_like(ux, 0)))
    return lax.bitcast_convert_type(high, dt)


def scatter_sub(operand, scatter_indices, updates, dimension_numbers, *,
                indices_are_sorted=False, unique_indices=False, mode=None):
    """scatter_add of the negated updates."""
    return lax.scatter_add(operand, scatter_indices, lax.neg(as_value(updates)),
                           dimension_numbers, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode)


def scatter_apply(operand, scatter_indices, func, dimension_numbers, *, update_shape=(),
                  indices_are_sorted=False, unique_indices=False, mode=None):
    """`operand` with the elementwise `func` applied at the scattered
    positions, once per occurrence of a position (JAX's: twice where an
    index repeats), as a loop over the largest count."""
    operand = as_value(operand)
    count = lax.scatter_add(jnp.zeros(operand.shape, np.int32), scatter_indices,
                            jnp.ones(update_shape, np.int32), dimension_numbers,
                            indices_are_sorted=indices_are_sorted,
                            unique_indices=unique_indices, mode=mode)

    def body(carry):
        i, x = carry
        return i + 1, lax.select(lax.lt(i, count), as_value(func(x)), x)

    return control_flow.while_loop(lambda c: c[0] < jnp.max(count), body,
                                   (jnp.int32(0), operand))[1]


# --------------------------------------------------------------------------
# ragged_dot
# --------------------------------------------------------------------------


def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
    """A dot_general in which each group of consecutive rows along the lhs's
    ragged (non-contracting) dimension, of group_sizes[g] rows, is multiplied
    by group g of the rhs (its group dimension); rows after the groups give
    zeros. Only that case (a ragged lhs non-contracting dimension, rank-1
    group_sizes) is implemented."""
    if group_offset is not None:
        raise NotImplementedError("ragged_dot_general: group_offset is not supported "
                                  f"{_where()}")
    lhs, rhs, gs = as_value(lhs), as_value(rhs), as_value(group_sizes)
    dn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    lc, rc, lb, rb = (tuple(int(i) for i in s) for s in (lc, rc, lb, rb))
    ragged, groups = tuple(dn.lhs_ragged_dimensions), tuple(dn.rhs_group_dimensions)
    if len(ragged) != 1 or len(groups) != 1 or ragged[0] in lc or ragged[0] in lb \
            or gs.ndim != 1:
        raise NotImplementedError(
            "ragged_dot_general: only a ragged lhs non-contracting dimension with one rhs "
            f"group dimension and rank-1 group_sizes is supported {_where()}")
    rd, gd = ragged[0] % lhs.ndim, groups[0] % rhs.ndim
    if gd in rc or gd in rb:
        raise ValueError(f"ragged_dot_general: the rhs group dimension {gd} must not be a "
                         f"contracting or batch dimension {_where()}")
    ng = rhs.shape[gd]
    if gs.shape[0] != ng:
        raise ValueError(f"ragged_dot_general: group_sizes has {gs.shape[0]} groups, the rhs "
                         f"{ng} {_where()}")
    full = lax.dot_general(lhs, rhs, ((lc, rc), (lb, rb)),
                           preferred_element_type=preferred_element_type)
    lhs_free = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rhs_free = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    row_pos = len(lb) + lhs_free.index(rd)
    grp_pos = len(lb) + len(lhs_free) + rhs_free.index(gd)
    # group of each row: the number of group ends at or before it
    ends = jnp.cumsum(gs.astype(dtypes.int32))
    rows = jnp.arange(lhs.shape[rd], dtype=dtypes.int32)
    gid = jnp.sum((ends[None, :] <= rows[:, None]).astype(dtypes.int32), axis=1)
    onehot = gid[:, None] == jnp.arange(ng, dtype=dtypes.int32)[None, :]
    mask = lax.broadcast_in_dim(onehot, full.shape, (row_pos, grp_pos))
    picked = lax.select(mask, full, lax.full_like(full, 0))
    return jnp.sum(picked, axis=grp_pos)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
    """lhs (m, k) times rhs (g, k, n) by groups of consecutive lhs rows:
    rows of group i (group_sizes[i] of them) use rhs[i]; -> (m, n)."""
    dn = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))
    return ragged_dot_general(lhs, rhs, group_sizes, dn, precision=precision,
                              preferred_element_type=preferred_element_type,
                              group_offset=group_offset)


# --------------------------------------------------------------------------
# reduce_precision
# --------------------------------------------------------------------------


def _reduce_precision_bits(x, exponent_bits, mantissa_bits):
    fi = dtypes.finfo(x.dtype)
    src_m, src_e = int(fi.nmant), int(fi.nexp)
    bits = np.dtype(x.dtype).itemsize * 8
    udt = np.dtype(f"uint{bits}")
    xi = lax.bitcast_convert_type(x, udt)

    def c(v):
        return lax.broadcast(jnp.asarray(np.array(v, udt)), xi.shape)

    if mantissa_bits < src_m:
        drop = src_m - mantissa_bits
        last = 1 << drop
        # round to nearest even: add half an ulp less one, plus the kept last bit
        last_bit = lax.shift_right_logical(lax.bitwise_and(xi, c(last)), c(drop))
        xi = lax.add(xi, lax.add(last_bit, c((last >> 1) - 1)))
        xi = lax.bitwise_and(xi, c(((1 << bits) - 1) ^ (last - 1)))
    if exponent_bits < src_e:
        exp_mask = ((1 << src_e) - 1) << src_m
        bias = (1 << (src_e - 1)) - 1
        reduced_bias = (1 << (exponent_bits - 1)) - 1
        xe = lax.bitwise_and(xi, c(exp_mask))
        overflow = lax.gt(xe, c((bias + reduced_bias) << src_m))
        underflow = lax.le(xe, c((bias - reduced_bias) << src_m))
        signed_zero = lax.bitwise_and(xi, c(1 << (bits - 1)))
        signed_inf = lax.bitwise_or(signed_zero, c(exp_mask))
        xi = lax.select(overflow, signed_inf, lax.select(underflow, signed_zero, xi))
    out = lax.bitcast_convert_type(xi, x.dtype)
    return lax.select(lax.ne(x, x), x, out)


def _reduce_precision_jvp(exponent_bits, mantissa_bits, primals, tangents):
    (x,), (t,) = primals, tangents
    return (_reduce_precision_bits(x, exponent_bits, mantissa_bits),
            _reduce_precision_bits(t, exponent_bits, mantissa_bits))


def reduce_precision(operand, exponent_bits, mantissa_bits):
    """`operand` rounded (to nearest even) to a float format with the given
    exponent and mantissa bits, still in its dtype: overflow to inf, values
    below the format's normal range to zero; NaN kept."""
    x = as_value(operand) if isinstance(operand, core.Value) else core.asarray_concrete(
        operand, dtypes.canonicalize_dtype(np.float64))
    exponent_bits, mantissa_bits = int(exponent_bits), int(mantissa_bits)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision: exponent_bits must be >= 1 and mantissa_bits >= 0,"
                         f" got {exponent_bits} and {mantissa_bits} {_where()}")
    if not dtypes.is_float(x.dtype):
        raise TypeError(f"reduce_precision does not accept dtype {np.dtype(x.dtype).name}. "
                        f"Accepted dtypes are subtypes of floating {_where()}")
    fi = dtypes.finfo(x.dtype)
    if exponent_bits >= int(fi.nexp) and mantissa_bits >= int(fi.nmant):
        return x
    # The map is its own derivative and transpose (JAX's linear rule): a
    # custom_vjp in reverse mode, a custom_jvp in forward mode (the
    # rounding of a tangent is not transposable op by op).
    if ad.differentiation_kind() == "vjp":
        f = ad.custom_vjp(_reduce_precision_bits, nondiff_argnums=(1, 2))
        f.defvjp(lambda x_, e, m: (_reduce_precision_bits(x_, e, m), None),
                 lambda e, m, _, ct: (_reduce_precision_bits(ct, e, m),))
    else:
        f = ad.custom_jvp(_reduce_precision_bits, nondiff_argnums=(1, 2))
        f.defjvp(_reduce_precision_jvp)
    return f(x, exponent_bits, mantissa_bits)


# --------------------------------------------------------------------------
# Convolution patches
# --------------------------------------------------------------------------


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
    """The patches a convolution with a `filter_shape` window multiplies: the
    feature dimension of the result holds, for each input channel c and
    window offset s (row-major), c * prod(filter_shape) + s."""
    lhs = as_value(lhs)
    filter_shape = tuple(int(d) for d in filter_shape)
    nd = lhs.ndim - 2
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(
        lhs.shape, (1, 1) + filter_shape, dimension_numbers)
    k = math.prod(filter_shape)
    c = lhs.shape[lhs_spec[1]]
    # One-hot kernels: out feature (c, s) picks window offset s of channel c.
    eye = np.eye(k, dtype=np.dtype(lhs.dtype)).reshape((k, 1) + filter_shape)
    kern = np.tile(eye, (c,) + (1,) * (nd + 1))  # (c*k, 1, *filter): O, I, spatial
    kern = np.transpose(kern, np.argsort(rhs_spec))  # to the rhs layout
    out = conv_general_dilated(lhs, jnp.asarray(kern), window_strides, padding,
                               lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                               dimension_numbers=dimension_numbers, feature_group_count=c,
                               preferred_element_type=preferred_element_type)
    return out


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
    """An unshared (locally connected) convolution: each output position has
    its own kernel. rhs is (out features, in features * prod(filter_shape),
    *output spatial) in the layout of dimension_numbers' rhs spec."""
    lhs, rhs = as_value(lhs), as_value(rhs)
    patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                           lhs_dilation, rhs_dilation, dimension_numbers)
    _, rhs_spec, out_spec = conv_dimension_numbers(
        lhs.shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    # both to (N or O, features, spatial...) canonical order
    p = lax.transpose(patches, tuple(out_spec))
    r = lax.transpose(rhs, tuple(rhs_spec))
    nd = p.ndim - 2
    sp = tuple(range(2, 2 + nd))
    # out[n, o, s] = sum_i p[n, i, s] r[o, i, s]: spatial dims as batch
    prod = lax.dot_general(p, r, (((1,), (1,)), (sp, sp)))  # (s..., n, o)
    canon = lax.transpose(prod, (nd, nd + 1) + tuple(range(nd)))
    return lax.transpose(canon, tuple(np.argsort(out_spec)))


# --------------------------------------------------------------------------
# approx top-k
# --------------------------------------------------------------------------


def _approx_k(operand, k, reduction_dimension, largest):
    x = as_value(operand)
    d = _canon_axis(reduction_dimension, x.ndim, "approx_max_k")
    if not 0 <= k <= x.shape[d]:
        raise ValueError(f"approx_max_k: k={k} is out of range for dimension size "
                         f"{x.shape[d]} {_where()}")
    last = x.ndim - 1
    xt = jnp.moveaxis(x, d, last)
    if largest:
        vals, idx = lax.top_k(xt, k)
    elif dtypes.is_unsigned(x.dtype) or dtypes.is_bool(x.dtype):
        vals, idx = lax.top_k(lax.bitwise_not(xt), k)
        vals = lax.bitwise_not(vals)
    else:
        vals, idx = lax.top_k(lax.neg(xt), k)
        vals = lax.neg(vals)
    return jnp.moveaxis(vals, last, d), jnp.moveaxis(idx, last, d)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The k largest values along `reduction_dimension` and their indices
    (exact: recall 1)."""
    return _approx_k(operand, k, reduction_dimension, True)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
    """The k smallest values along `reduction_dimension` and their indices
    (exact: recall 1)."""
    return _approx_k(operand, k, reduction_dimension, False)


# --------------------------------------------------------------------------
# fft
# --------------------------------------------------------------------------


def fft(x, fft_type, fft_lengths):
    """The DFT over the trailing len(fft_lengths) dimensions (1 to 3): FFT
    and IFFT complex to complex (IFFT scaled by 1/n), RFFT real to the
    n//2 + 1 non-negative frequencies of the last dimension, IRFFT back."""
    if isinstance(fft_type, str):
        fft_type = FftType[fft_type.upper()]
    fft_type = FftType(fft_type)
    lengths = tuple(int(n) for n in fft_lengths)
    x = as_value(x)
    if not 1 <= len(lengths) <= 3 or len(lengths) > x.ndim:
        raise ValueError(f"fft: fft_lengths must have 1 to 3 entries, at most the operand's "
                         f"rank; got {lengths} for shape {x.shape} {_where()}")
    nd = len(lengths)
    if fft_type == FftType.RFFT:
        if not dtypes.is_inexact(x.dtype):
            x = lax.convert_element_type(x, dtypes.to_inexact(x.dtype))  # (as JAX's)
        if dtypes.is_complex(x.dtype):
            raise TypeError(f"fft: RFFT needs a real operand, got {x.dtype} {_where()}")
        if x.dtype not in (np.float32, np.float64):
            raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
        if x.shape[-nd:] != lengths:
            raise ValueError(f"fft: RFFT operand's trailing dims {x.shape[-nd:]} must equal "
                             f"fft_lengths {lengths} {_where()}")
        return lax_linalg.fft(x, "RFFT", lengths)
    if not dtypes.is_complex(x.dtype):
        # (JAX's: a real or integer operand is taken as complex.)
        x = lax.convert_element_type(x, numpy_fft._complex_dtype(dtypes.to_inexact(x.dtype)))
    if fft_type == FftType.IRFFT:
        n = lengths[-1]
        want = lengths[:-1] + (n // 2 + 1,)
        if x.shape[-nd:] != want:
            raise ValueError(f"fft: IRFFT operand's trailing dims {x.shape[-nd:]} must be "
                             f"{want} {_where()}")
        return lax_linalg.fft(x, "IRFFT", lengths)
    if x.shape[-nd:] != lengths:
        raise ValueError(f"fft: operand's trailing dims {x.shape[-nd:]} must equal "
                         f"fft_lengths {lengths} {_where()}")
    return lax_linalg.fft(x, fft_type.name, lengths)


# --------------------------------------------------------------------------
# Random bits
# --------------------------------------------------------------------------


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
    """(new key, random bits of `shape` and unsigned `dtype`) from a uint32
    key of 4 words, bit for bit as XLA's CPU `RngBitGenerator` computes
    them (docs/design.md, "rng_bit_generator"): the key is XLA's u64[2]
    state (words 0-1 the generator's key, 2-3 its counter); RNG_DEFAULT is
    XLA:CPU's Philox4x32-10, RNG_THREE_FRY Threefry2x32 over counters laid
    out as XLA lays them; 8- and 16-bit results are 32-bit ones truncated."""
    key = as_value(key)
    shape = tuple(int(d) for d in shape)
    dt = np.dtype(dtypes.canonicalize_dtype(dtype))
    if dt not in (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32),
                  np.dtype(np.uint64)):
        raise TypeError(f"rng_bit_generator: unsupported dtype {np.dtype(dtype)} {_where()}")
    if key.dtype != np.uint32 or key.shape != (4,):
        raise TypeError(f"rng_bit_generator: key must be uint32 of shape (4,), got "
                        f"{key.dtype} {key.shape} {_where()}")
    return _bit_generator(shape, dt.name, algorithm != RandomAlgorithm.RNG_THREE_FRY)(key)


@functools.lru_cache(maxsize=256)
def _bit_generator(shape, dtype_name, philox):
    """The generator of `shape` bits as a function of the key, with JAX's
    batching rule: a batch of keys draws a batch of bits from the first key
    alone, and only that key advances (XLA's generator takes one state)."""
    dt = np.dtype(dtype_name)
    nbits = dt.itemsize * 8

    def generate(key):
        if philox:  # RNG_DEFAULT and RNG_PHILOX: XLA:CPU's default is Philox
            new_key, out = _philox_bits(key, math.prod(shape), nbits)
            out = lax.reshape(out, shape)
        else:
            new_key, out = _threefry_bits(key, shape, nbits)
        if out.dtype != dt:
            out = lax.convert_element_type(out, dt)
        return new_key, out

    gen = custom_batching.custom_vmap(generate)

    @gen.def_vmap
    def rule(axis_size, in_batched, keys):
        if not in_batched[0]:
            return gen(keys), (False, False)
        new_key, bits = _bit_generator((axis_size, *shape), dtype_name, philox)(keys[0])
        new_keys = lax.concatenate([lax.reshape(new_key, (1, 4)), keys[1:]], 0)
        return (new_keys, bits), (True, True)

    return gen


def _u32(v):
    return lax.full((), np.uint32(v & 0xFFFFFFFF), np.uint32)


def _add64(lo, hi, dlo, dhi):
    """(lo, hi) + (dlo, dhi) as 64-bit numbers of two uint32 words."""
    nlo = lo + dlo
    return nlo, hi + dhi + lax.convert_element_type(nlo < lo, np.uint32)


def _philox4x32(w, k0, k1):
    """Philox4x32 with 10 rounds of the counters `w` (4 uint32 arrays)."""
    k0, k1 = lax.broadcast(k0, w[0].shape), lax.broadcast(k1, w[0].shape)
    return list(lax.philox4x32(k0, k1, *w))


def _philox_bits(key, n, nbits):
    """XLA's Philox generator on a u64[2] state: the state reversed is the
    128-bit counter (its high half the key), one 4-word block per counter,
    the blocks' words taken in turn; the state's second word advances by
    the number of blocks."""
    n32 = n * (2 if nbits == 64 else 1)
    blocks = -(-n32 // 4)
    i = jnp.arange(blocks, dtype=np.uint32)
    zero = lax.full_like(i, 0)
    k3 = lax.broadcast(key[3], (blocks,))
    w0, w1 = _add64(lax.broadcast(key[2], (blocks,)), k3, i, zero)
    # (Adding less than 2^32 carries out of the low 64 bits exactly when
    # their high word wrapped below where it was.)
    carry = lax.convert_element_type(w1 < k3, np.uint32)
    w2, w3 = _add64(lax.broadcast(key[0], (blocks,)), lax.broadcast(key[1], (blocks,)),
                    carry, zero)
    out = _philox4x32([w0, w1, w2, w3], key[0], key[1])
    nlo, nhi = _add64(key[2], key[3], _u32(blocks), _u32(0))
    new_key = lax.concatenate([key[:2], lax.reshape(nlo, (1,)), lax.reshape(nhi, (1,))], 0)
    if nbits == 64:
        wide = [lax.convert_element_type(o, np.uint64) for o in out]
        s32 = lax.full((), 32, np.uint64)
        pairs = [wide[0] | lax.shift_left(wide[1], s32), wide[2] | lax.shift_left(wide[3], s32)]
        words = lax.reshape(lax.concatenate([p[:, None] for p in pairs], 1), (2 * blocks,))
    else:
        words = lax.reshape(lax.concatenate([o[:, None] for o in out], 1), (4 * blocks,))
    return new_key, words[:n]


def _threefry_bits(key, shape, nbits):
    """XLA's Threefry generator on a u64[2] state (key, counter): 32-bit
    results hash counters over half the shape (a dimension halved, the
    first even one or else the largest) and interleave the hash's two words
    along it; 64-bit ones hash one counter per element and join the words.
    The counter advances by the number of counters hashed."""
    if nbits == 64:
        half, split = shape, None
    elif not shape:
        half, split = (1,), None
    else:
        split = next((d for d, s in enumerate(shape) if s % 2 == 0), None)
        if split is None:
            split = max(range(len(shape)), key=lambda d: (shape[d], -d))
        half = tuple(-(-s // 2) if d == split else s for d, s in enumerate(shape))
    m = math.prod(half)
    i = jnp.arange(m, dtype=np.uint32)
    lo, hi = _add64(lax.broadcast(key[2], (m,)), lax.broadcast(key[3], (m,)), i,
                    lax.full_like(i, 0))
    y0, y1 = lax.threefry2x32(lax.broadcast(key[0], (m,)), lax.broadcast(key[1], (m,)), lo, hi)
    nlo, nhi = _add64(key[2], key[3], _u32(m), _u32(0))
    new_key = lax.concatenate([key[:2], lax.reshape(nlo, (1,)), lax.reshape(nhi, (1,))], 0)
    if nbits == 64:
        s32 = lax.full((), 32, np.uint64)
        out = (lax.convert_element_type(y0, np.uint64)
               | lax.shift_left(lax.convert_element_type(y1, np.uint64), s32))
        return new_key, lax.reshape(out, shape)
    if not shape:
        return new_key, lax.reshape(y0, ())
    y0, y1 = lax.reshape(y0, half), lax.reshape(y1, half)
    both = lax.concatenate([lax.expand_dims(y0, (split + 1,)), lax.expand_dims(y1, (split + 1,))],
                           split + 1)
    full = tuple(2 * s if d == split else s for d, s in enumerate(half))
    out = lax.reshape(both, full)
    if full != shape:
        out = lax.slice_in_dim(out, 0, shape[split], axis=split)
    return new_key, out


def rng_uniform(a, b, shape):
    """Uniform samples in [a, b) of `shape` (a stateless generator: a fixed
    key, as XLA's stateful RngUniform gives no reproducibility either)."""
    a, b = as_value(a), as_value(b)
    _, bits = rng_bit_generator(jnp.asarray(np.array([0, 42, 0, 0], np.uint32)), shape)
    if dtypes.is_int(a.dtype):
        span = lax.convert_element_type(b - a, np.uint32)
        return a + lax.convert_element_type(lax.rem(bits, lax.broadcast(span, bits.shape)),
                                            a.dtype)
    f = lax.convert_element_type(lax.shift_right_logical(bits, lax.full_like(bits, 8)),
                                 np.float32) * np.float32(2.0 ** -24)
    f = lax.convert_element_type(f, a.dtype)
    return a + (b - a) * f


# --------------------------------------------------------------------------
# Miscellany
# --------------------------------------------------------------------------


def empty(shape, dtype, *, out_sharding=None):
    """An array of `shape` and `dtype` with unspecified contents (zeros)."""
    return lax.full(tuple(shape), 0, dtypes.canonicalize_dtype(dtype))


def dtype(x):
    """The canonical dtype of `x` (Python scalars: the default dtypes)."""
    if isinstance(x, bool):
        return np.dtype(np.bool_)
    if isinstance(x, int):
        return dtypes.canonicalize_dtype(np.int64)
    if isinstance(x, float):
        return dtypes.canonicalize_dtype(np.float64)
    if isinstance(x, complex):
        return dtypes.canonicalize_dtype(np.complex128)
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = np.result_type(x)
    return dtypes.canonicalize_dtype(dt)


def shape_as_value(shape):
    """The dimensions of `shape` as an int array."""
    return jnp.asarray(np.array([int(d) for d in shape], dtype=np.int32))


def platform_dependent(*args, default=None, **per_platform):
    """The branch of the platform the program runs on, applied to `args`
    (`default` for a platform without one): the "cpu" branch (Ember runs on
    the CPU), or, in an export for several platforms, a `switch` on the
    platform index over the distinct branches, as JAX lowers it."""
    state = targets.lowering.state
    platforms, index = state if state is not None else (("cpu",), None)
    branches = [default, *per_platform.values()]
    if any(fn is not branches[0] for fn in branches):
        targets.lowering.calls += 1  # (the program depends on its platform)
    fns = []
    for p in platforms:
        fn = per_platform.get(p, default)
        if fn is None:
            raise NotImplementedError(f"platform_dependent: no branch for platform {p} and "
                                      f"no default {_where()}")
        fns.append(fn)
    distinct = []
    for fn in fns:
        if not any(fn is d for d in distinct):
            distinct.append(fn)
    if len(distinct) == 1:
        return distinct[0](*args)
    if index is None:  # (every trace for several platforms passes its index)
        raise EmberInternalError(
            f"platform_dependent: traced for the platforms {platforms} without a platform "
            f"index {_where()}")
    which = [next(k for k, d in enumerate(distinct) if d is fn) for fn in fns]
    branch = index if which == list(range(len(fns))) else \
        jnp.asarray(np.array(which, np.int32))[index]
    return control_flow.switch(branch, distinct, *args)


def select_n(which, *cases):
    """`lax.select_n`, of key arrays too (on their key data)."""
    if prng.has_key(*cases):
        return prng.select_n(which, *cases)
    return lax.select_n(which, *cases)


def composite(decomposition, name, version=0):
    """`decomposition`, wrapped: a composite op is its decomposition here."""
    def wrapped(*args, **kwargs):
        return decomposition(*args, **kwargs)
    wrapped.__name__ = getattr(decomposition, "__name__", name)
    wrapped.__doc__ = getattr(decomposition, "__doc__", None)
    return wrapped


def create_token(_=None):
    """A token ordering side effects: an empty array (Ember orders effects
    itself)."""
    return jnp.zeros((0,), dtypes.bool_)


def after_all(*operands):
    """A token after the given tokens: an empty array."""
    return jnp.zeros((0,), dtypes.bool_)


def pbroadcast(x, axis_name, source):
    """Each instance along `axis_name` gets the value of instance `source`."""
    def one(v):
        return parallel.all_gather(v, axis_name)[source]
    return tree_util.tree_map(one, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swaps the named axis with positional `axis` (all_to_all, tiled)."""
    return parallel.all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups,
                               tiled=True)


def _same_shape_operands(flat, what):
    """The operand leaves of a reduction as values, which must share a shape."""
    xs = [as_value(x) for x in flat]
    if any(x.shape != xs[0].shape for x in xs):
        raise TypeError(f"{what}: operands must have the same shape, got "
                        f"{[x.shape for x in xs]}")
    return xs


def _combiner(computation, tree, xs, what):
    """`computation` on flat leaves: (acc leaves, x leaves) -> acc leaves,
    the operands' pytree and dtypes kept."""
    k = len(xs)

    def combine(*ab):
        out = computation(tree_util.tree_unflatten(tree, list(ab[:k])),
                          tree_util.tree_unflatten(tree, list(ab[k:])))
        leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"{what}: computation returned {out_tree}, not the operands' "
                            f"structure {tree}")
        return [lax.convert_element_type(as_value(v), x.dtype) for v, x in zip(leaves, xs)]
    return combine


def _reduce_by_fold(flat_ops, flat_init, tree, computation, dimensions):
    """`lax.reduce` with a computation of the user's: the reduced elements
    (in row-major order of `dimensions`) folded one at a time into the init
    values, `computation(acc, x)`, as XLA's CPU backend evaluates a reduce,
    so a computation that is not associative gives XLA's result too. Each
    step applies `computation` to scalars (vmapped over the kept
    elements), as JAX traces it."""
    from .batching import vmap
    from .control_flow import scan

    xs = _same_shape_operands(flat_ops, "lax.reduce")
    shape = xs[0].shape
    nd = len(shape)
    dims = sorted({int(d) % builtins.max(nd, 1) for d in dimensions})
    kept = [d for d in range(nd) if d not in dims]
    out_shape = tuple(shape[d] for d in kept)
    n, m = math.prod(shape[d] for d in dims), math.prod(out_shape)
    rows = [lax.reshape(lax.transpose(x, dims + kept), (n, m)) for x in xs]
    inits = [lax.broadcast(lax.convert_element_type(as_value(i), x.dtype), (m,))
             for i, x in zip(flat_init, xs)]
    step = vmap(_combiner(computation, tree, xs, "lax.reduce"))
    acc, _ = scan(lambda acc, row: (step(*acc, *row), None), inits, rows)
    return tree_util.tree_unflatten(tree, [lax.reshape(a, out_shape) for a in acc])


def _reduce_window_by_fold(operand, init_value, computation, window_dimensions,
                           window_strides, padding, base_dilation, window_dilation):
    """`lax.reduce_window` in general: operand pytrees, a computation of the
    user's, base and window dilations. The operands are dilated and padded
    with the init values; each window element (in row-major order of the
    window) is a strided slice, folded into the init values one at a time,
    `computation(acc, x)` vmapped over the output elements; padding and
    the holes of base dilation are skipped. (A computation that is not
    associative can differ from XLA's CPU backend, which does not always
    take a window's elements in row-major order.)"""
    from .batching import vmap

    flat, tree = tree_util.tree_flatten(operand)
    inits, init_tree = tree_util.tree_flatten(init_value)
    if tree != init_tree:
        raise TypeError(f"lax.reduce_window: operands {tree} and init values {init_tree} "
                        "must have the same structure")
    xs = _same_shape_operands(flat, "lax.reduce_window")
    shape = xs[0].shape
    nd = len(shape)
    wdims = tuple(int(w) for w in window_dimensions)
    strides = tuple(int(s) for s in (window_strides or (1,) * nd))
    bdil = tuple(int(d) for d in (base_dilation or (1,) * nd))
    wdil = tuple(int(d) for d in (window_dilation or (1,) * nd))
    if not len(wdims) == len(strides) == len(bdil) == len(wdil) == nd:
        raise TypeError(f"lax.reduce_window: window dimensions, strides and dilations need "
                        f"one entry per operand dimension ({nd})")
    if isinstance(padding, str):  # (JAX's: the dilated window on the undilated operand)
        padding = lax.padtype_to_pads(shape, [(w - 1) * d + 1 for w, d in zip(wdims, wdil)],
                                      strides, padding)
    padding = [tuple(int(p) for p in pd) for pd in padding]
    inits = [lax.convert_element_type(as_value(i), x.dtype) for i, x in zip(inits, xs)]
    config = [(lo, hi, b - 1) for (lo, hi), b in zip(padding, bdil)]
    padded = [lax.pad(x, i, config) for x, i in zip(xs, inits)]
    # Padding and the holes of base dilation are no elements of a window:
    # the fold skips them (XLA's CPU backend does; it matters when the init
    # value is not the computation's identity).
    present = lax.pad(lax.full(shape, True, np.bool_), np.bool_(False), config)
    full = padded[0].shape
    out = tuple(builtins.max(0, (p - (w - 1) * d - 1) // s + 1)
                for p, w, d, s in zip(full, wdims, wdil, strides))
    n = math.prod(out)
    step = vmap(_combiner(computation, tree, xs, "lax.reduce_window"))
    acc = [lax.broadcast(i, (n,)) for i in inits]
    for offs in itertools.product(*[range(w) for w in wdims]):
        starts = [o * d for o, d in zip(offs, wdil)]
        limits = [st + (m - 1) * s + 1 if m else st for st, m, s in zip(starts, out, strides)]
        rows = [lax.reshape(lax.slice(p, starts, limits, strides), (n,)) for p in padded]
        keep = lax.reshape(lax.slice(present, starts, limits, strides), (n,))
        acc = [lax.select(keep, new, old) for new, old in zip(step(*acc, *rows), acc)]
    return tree_util.tree_unflatten(tree, [lax.reshape(a, out) for a in acc])


# (lax.py cannot import scan and vmap: this module provides its folds.)
lax.reduce_by_fold = _reduce_by_fold
lax.reduce_window_by_fold = _reduce_window_by_fold

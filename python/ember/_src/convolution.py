"""lax convolutions, composed from existing ember primitives.

There is no convolution op in the ember dialect.  ``conv_general_dilated`` is
lowered here, in Python, to primitives that already have JVP, transpose and
batching rules (pad, strided slice, reshape, concatenate, transpose,
dot_general), so grad / vjp / jvp / vmap of a convolution come for free.

Algorithm (an im2col):

1. transpose lhs to (N, spatial..., C) and rhs to (spatial..., I, O);
2. one ``lax.pad`` applies lhs dilation (interior padding) and the explicit
   (possibly negative) low/high padding to the spatial dims;
3. for each spatial dim i and kernel offset j take the strided slice starting
   at ``j * rhs_dilation[i]`` with step ``window_strides[i]``; concatenating
   and splitting turns that dim into (k_i, out_i), so after all dims the
   patches are (N, k1, o1, ..., kn, on, C) -- sum(k_i) slices, not prod(k_i);
4. one ``dot_general`` contracts (k1..kn, C) against the kernel (k.., I, O);
   feature groups / batch groups become a dot_general batch dimension;
5. transpose to the requested output layout.
"""

import builtins
import operator
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from . import api, core, dtypes, lax, sharding_rules
from .config import config

__all__ = [
    "ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations",
    "conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
    "conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
]


class ConvDimensionNumbers(NamedTuple):
    """Batch, feature and spatial dimensions of a convolution.

    lhs_spec: (batch dim, feature dim, spatial dims...)
    rhs_spec: (out feature dim, in feature dim, spatial dims...)
    out_spec: (batch dim, feature dim, spatial dims...)
    """
    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


# --------------------------------------------------------------------------
# Dimension numbers
# --------------------------------------------------------------------------


def conv_general_permutations(dimension_numbers):
    """(lhs_perm, rhs_perm, out_perm) for a ('NCHW', 'OIHW', 'NCHW')-style triple.

    Spatial dims are ordered as their characters appear in the rhs spec.
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"}
            == set(out_spec) - {"N", "C"}):
        raise TypeError("convolution dimension_numbers elements must each have the same "
                        f"set of spatial characters, got {tuple(dimension_numbers)}.")

    def perm(spec, pair, is_rhs):
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        if not is_rhs:
            spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

    return (perm(lhs_spec, charpairs[0], False), perm(rhs_spec, charpairs[1], True),
            perm(out_spec, charpairs[2], False))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """Converts ``dimension_numbers`` (None, 3 strings, or ConvDimensionNumbers)
    to a ConvDimensionNumbers."""
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError("convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, (list, tuple)):
        if len(dimension_numbers) != 3:
            raise TypeError("convolution dimension_numbers list/tuple must be length 3, "
                            f"got {len(dimension_numbers)}.")
        if not all(isinstance(e, str) for e in dimension_numbers):
            if all(isinstance(e, (list, tuple)) for e in dimension_numbers):
                return ConvDimensionNumbers(*(tuple(int(i) for i in e)
                                              for e in dimension_numbers))
            raise TypeError("convolution dimension_numbers elements must be strings, got "
                            f"{tuple(map(type, dimension_numbers))}.")
        for i, e in enumerate(dimension_numbers):
            if len(e) != len(lhs_shape):
                raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to "
                                f"the ndim of lhs and rhs, got {len(e)} for lhs and rhs "
                                f"shapes {tuple(lhs_shape)} and {tuple(rhs_shape)}.")
        return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))
    raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")


# --------------------------------------------------------------------------
# Shapes and padding
# --------------------------------------------------------------------------


def _dilate_dim(d, r):
    return 0 if d == 0 else 1 + r * (d - 1)


def padtype_to_pads_conv(in_shape, window_shape, window_strides, padding):
    """'SAME' / 'SAME_LOWER' / 'VALID' -> explicit (lo, hi) pairs."""
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME' or "
                           f"'SAME_LOWER', got {padding}.")
    pads = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        out = -(-n // s)
        total = builtins.max((out - 1) * s + w - n, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if kind == "SAME" else (big, small))
    return pads


def _stride_dim(d, w, s):
    return builtins.max(0, (d - w) // s + 1) if d >= w else 0


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """Shape of a conv given shapes in canonical (N, C, spatial...) order."""
    if isinstance(pads, str):
        pads = padtype_to_pads_conv(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError("Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [n + lo + hi for n, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={tuple(pads)} for "
                         f"lhs_shape[2:]={tuple(lhs_shape[2:])}")
    space = tuple(_stride_dim(p, k, s) for p, k, s in zip(padded, rhs_shape[2:], strides))
    n0 = lhs_shape[0] // batch_group_count
    return (n0, rhs_shape[0]) + space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                           window_strides, padding)
    return tuple(int(v) for v in np.take(out, np.argsort(out_perm)))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t = np.take(lhs_shape, lhs_perm)
    rhs_t = np.take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding)
                   for k, s in zip(rhs_t[2:], window_strides)]
    space = [(i - 1) * s - k + 2 + lo + hi
             for i, k, s, (lo, hi) in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
    out = (lhs_t[0], rhs_t[0]) + tuple(space)
    return tuple(int(v) for v in np.take(out, np.argsort(out_perm)))


def _int_tuple(xs, n, name):
    xs = tuple(operator.index(x) for x in xs)
    if len(xs) != n:
        raise ValueError(f"conv_general_dilated {name} must have {n} entries (one per "
                         f"spatial dimension), got {xs}")
    return xs


# --------------------------------------------------------------------------
# conv_general_dilated
# --------------------------------------------------------------------------


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """General n-dimensional convolution with optional dilation (XLA ConvGeneralDilated).

    See ``jax.lax.conv_general_dilated``; ``precision`` is accepted and ignored.
    """
    lhs, rhs = core.as_value(lhs), core.as_value(rhs)
    if lhs.ndim != rhs.ndim:
        raise ValueError("conv_general_dilated lhs and rhs must have the same number of "
                         f"dimensions, but got {lhs.shape} and {rhs.shape}.")
    if lhs.ndim < 2:
        raise ValueError(f"conv_general_dilated needs rank >= 2 operands, got {lhs.shape}")
    dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    lhs_spec, rhs_spec, out_spec = (tuple(int(i) for i in s) for s in dnums)
    nd = lhs.ndim - 2
    for name, spec in (("lhs", lhs_spec), ("rhs", rhs_spec), ("out", out_spec)):
        if sorted(spec) != list(range(lhs.ndim)):
            raise ValueError(f"conv_general_dilated {name}_spec {spec} is not a permutation "
                             f"of range({lhs.ndim})")
    window_strides = _int_tuple(window_strides, nd, "window_strides")
    if lhs_dilation is None:
        lhs_dilation = (1,) * nd
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise ValueError("String padding is not implemented for transposed convolution "
                         "using this op. Please either exactly specify the required padding "
                         "or use conv_transpose.")
    lhs_dilation = _int_tuple(lhs_dilation, nd, "lhs_dilation")
    rhs_dilation = _int_tuple((1,) * nd if rhs_dilation is None else rhs_dilation, nd,
                              "rhs_dilation")
    for name, vals in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                       ("rhs_dilation", rhs_dilation)):
        if any(v < 1 for v in vals):
            raise ValueError(f"conv_general_dilated {name} must be positive, got {vals}")

    lhs_sp = tuple(lhs.shape[i] for i in lhs_spec[2:])
    k_sp = tuple(rhs.shape[i] for i in rhs_spec[2:])
    eff_k = tuple(_dilate_dim(k, r) for k, r in zip(k_sp, rhs_dilation))
    if isinstance(padding, str):
        padding = padtype_to_pads_conv(lhs_sp, eff_k, window_strides, padding)
    else:
        try:
            padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
        except (ValueError, TypeError) as e:
            raise ValueError("padding argument to conv_general_dilated should be a string "
                             f"or a sequence of (low, high) pairs, got {padding}") from e
        if len(padding) != nd:
            raise ValueError(f"conv_general_dilated padding must have {nd} (low, high) "
                             f"pairs, got {padding}")

    # ---- shape / group checks (mirroring the XLA shape rule) --------------
    G, B = int(feature_group_count), int(batch_group_count)
    N, C = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    O, I = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]  # noqa: E741 (the docstring's letters)
    if G < 1:
        raise ValueError(f"conv_general_dilated feature_group_count must be a positive "
                         f"integer, got {G}.")
    if B < 1:
        raise ValueError(f"conv_general_dilated batch_group_count must be a positive "
                         f"integer, got {B}.")
    if G > 1 and B > 1:
        raise ValueError("At most one of batch_group_count and feature_group_count may be "
                         f"> 1, got batch_group_count={B} and feature_group_count={G}")
    if C % G:
        raise ValueError("conv_general_dilated feature_group_count must divide lhs feature "
                         f"dimension size, but {G} does not divide {C}.")
    if C // G != I:
        raise ValueError("conv_general_dilated lhs feature dimension size divided by "
                         "feature_group_count must equal the rhs input feature dimension "
                         f"size, but {C} // {G} != {I}.")
    if O % G:
        raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of feature_group_count, but {O} is not a multiple of {G}.")
    if B > 1 and N % B:
        raise ValueError("conv_general_dilated batch_group_count must divide lhs batch "
                         f"dimension size, but {B} does not divide {N}.")
    if O % B:
        raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                         f"multiple of batch_group_count, but {O} is not a multiple of {B}.")
    if lhs.dtype != rhs.dtype:
        raise TypeError("lax.conv_general_dilated requires arguments to have the same "
                        f"dtypes, got {lhs.dtype} and {rhs.dtype}.")

    dil_sp = tuple(_dilate_dim(n, d) for n, d in zip(lhs_sp, lhs_dilation))
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(dil_sp, padding))
    if any(p < 0 for p in padded):
        raise ValueError("Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={padding} for lhs_shape[2:]={dil_sp}")
    out_sp = tuple(_stride_dim(p, k, s) for p, k, s in zip(padded, eff_k, window_strides))
    out_dtype = dtypes.canonicalize_dtype(preferred_element_type or lhs.dtype)
    out_canon = (N // B, O) + out_sp              # (N, O, spatial...)
    out_perm = np.argsort(out_spec)
    out_shape = tuple(out_canon[j] for j in out_perm)

    # JAX's sharding rule (or `out_sharding`), applied to the composed result.
    sharding = out_sharding if out_sharding is not None else \
        sharding_rules.conv_sharding(lhs.aval, rhs.aval, lhs_spec[1], out_shape)
    with sharding_rules.output_given(out_sharding):
        out = _conv_composed(lhs, rhs, lhs_spec, rhs_spec, out_spec, window_strides, padding,
                             lhs_dilation, rhs_dilation, G, B, preferred_element_type,
                             out_shape, out_dtype, k_sp, I)
    return out if sharding is None else core.with_out_sharding(out, sharding)


def _conv_composed(lhs, rhs, lhs_spec, rhs_spec, out_spec, window_strides, padding,
                   lhs_dilation, rhs_dilation, G, B, preferred_element_type, out_shape,
                   out_dtype, k_sp, I):  # noqa: E741 (the docstring's letters)
    K = int(np.prod(k_sp, dtype=np.int64))
    if builtins.min(out_shape, default=1) == 0 or K == 0 or I == 0:
        return lax.full(out_shape, 0, out_dtype)

    static = (lhs_spec, rhs_spec, out_spec, window_strides, tuple(padding), lhs_dilation,
              rhs_dilation, G, B, None if preferred_element_type is None else
              dtypes.canonicalize_dtype(preferred_element_type))
    if (core.current_trace() is None and core.find_trace([lhs, rhs]) is None
            and not config.jax_disable_jit):
        # Eagerly, compile the whole composition once (per signature) instead of
        # dispatching its dozens of ops one by one.
        fn = _eager_fns.get(static)
        if fn is None:
            fn = _eager_fns[static] = api.jit(
                lambda lhs, rhs: _conv_impl(lhs, rhs, *static))
        return fn(lhs, rhs)
    return _conv_impl(lhs, rhs, *static)


_eager_fns = {}


def _conv_impl(lhs, rhs, lhs_spec, rhs_spec, out_spec, window_strides, padding,
               lhs_dilation, rhs_dilation, G, B, preferred_element_type):
    if np.issubdtype(lhs.dtype, np.complexfloating):
        # Ember's dot_general does not lower complex operands: use 4 real convs.
        pet = None if preferred_element_type is None else \
            np.finfo(preferred_element_type).dtype
        args = (lhs_spec, rhs_spec, out_spec, window_strides, padding, lhs_dilation,
                rhs_dilation, G, B, pet)
        xr, xi, wr, wi = lax.real(lhs), lax.imag(lhs), lax.real(rhs), lax.imag(rhs)
        re = lax.sub(_conv_impl(xr, wr, *args), _conv_impl(xi, wi, *args))
        im = lax.add(_conv_impl(xr, wi, *args), _conv_impl(xi, wr, *args))
        return lax.complex(re, im)
    nd = lhs.ndim - 2
    N, C = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    O, I = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]  # noqa: E741 (the docstring's letters)
    k_sp = tuple(rhs.shape[i] for i in rhs_spec[2:])
    lhs_sp = tuple(lhs.shape[i] for i in lhs_spec[2:])
    eff_k = tuple(_dilate_dim(k, r) for k, r in zip(k_sp, rhs_dilation))
    dil_sp = tuple(_dilate_dim(n, d) for n, d in zip(lhs_sp, lhs_dilation))
    padded = tuple(n + lo + hi for n, (lo, hi) in zip(dil_sp, padding))
    out_sp = tuple(_stride_dim(p, k, s) for p, k, s in zip(padded, eff_k, window_strides))
    out_perm = np.argsort(out_spec)
    out_dtype = dtypes.canonicalize_dtype(preferred_element_type or lhs.dtype)

    # ---- canonical layouts -------------------------------------------------
    x = lax.transpose(lhs, (lhs_spec[0],) + lhs_spec[2:] + (lhs_spec[1],))  # N, sp.., C
    w = lax.transpose(rhs, rhs_spec[2:] + (rhs_spec[1], rhs_spec[0]))       # sp.., I, O

    # ---- lhs dilation + padding -------------------------------------------
    cfg = [(0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in zip(padding, lhs_dilation)] \
        + [(0, 0, 0)]
    if any(c != (0, 0, 0) for c in cfg):
        x = lax.pad(x, np.zeros((), x.dtype), cfg)

    # ---- patches: (N, k1, o1, k2, o2, ..., C) ------------------------------
    # One spatial dim at a time: the k_i strided slices of that dim are
    # concatenated and split into (k_i, o_i).  This costs sum(k_i) slices
    # rather than prod(k_i), which keeps compile times (and AD graphs) small.
    patches = x
    for i in range(nd):
        ax = 1 + 2 * i                      # the (still unsplit) spatial axis i
        k, r, s, o = k_sp[i], rhs_dilation[i], window_strides[i], out_sp[i]
        shape = patches.shape
        pieces = []
        for j in range(k):
            starts = [0] * len(shape)
            limits = list(shape)
            strides = [1] * len(shape)
            starts[ax], limits[ax], strides[ax] = j * r, j * r + (o - 1) * s + 1, s
            pieces.append(lax.slice(patches, starts, limits, strides))
        patches = lax.concatenate(pieces, ax) if k > 1 else pieces[0]
        patches = lax.reshape(patches, shape[:ax] + (k, o) + shape[ax + 1:])
    k_axes = tuple(1 + 2 * i for i in range(nd))
    c_ax = 2 * nd + 1
    w_k = tuple(range(nd))

    # ---- contraction ----------------------------------------------------
    kw = dict(preferred_element_type=preferred_element_type)
    if G == 1 and B == 1:
        y = lax.dot_general(patches, w, ((k_axes + (c_ax,), w_k + (nd,)), ((), ())), **kw)
        # y: (N, out_sp.., O)
    elif G > 1:
        Cg, Og = I, O // G
        p = lax.reshape(patches, patches.shape[:-1] + (G, Cg))
        w2 = lax.reshape(w, k_sp + (Cg, G, Og))
        y = lax.dot_general(p, w2, ((k_axes + (c_ax + 1,), w_k + (nd,)), ((c_ax,), (nd + 1,))),
                            **kw)
        # y: (G, N, out_sp.., Og) -> (N, out_sp.., G, Og) -> (N, out_sp.., O)
        y = lax.transpose(y, tuple(range(1, nd + 2)) + (0, nd + 2))
        y = lax.reshape(y, (N,) + out_sp + (O,))
    else:
        Nb, Ob = N // B, O // B
        p = lax.reshape(patches, (B, Nb) + patches.shape[1:])
        w2 = lax.reshape(w, k_sp + (C, B, Ob))
        y = lax.dot_general(p, w2, ((tuple(a + 1 for a in k_axes) + (c_ax + 1,), w_k + (nd,)),
                                    ((0,), (nd + 1,))), **kw)
        # y: (B, Nb, out_sp.., Ob) -> (Nb, out_sp.., B, Ob) -> (Nb, out_sp.., O)
        y = lax.transpose(y, tuple(range(1, nd + 2)) + (0, nd + 2))
        y = lax.reshape(y, (Nb,) + out_sp + (O,))

    # ---- output layout ------------------------------------------------------
    # canonical index j (N, O, sp0, ..) lives at axis c2y[j] of y.
    c2y = (0, nd + 1) + tuple(range(1, nd + 1))
    y = lax.transpose(y, tuple(c2y[j] for j in out_perm))
    if y.dtype != out_dtype:
        y = lax.convert_element_type(y, out_dtype)
    return y


# --------------------------------------------------------------------------
# Convenience wrappers
# --------------------------------------------------------------------------


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """conv_general_dilated with NCHW/OIHW layouts and no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """conv_general_dilated with NCHW/OIHW layouts."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
    """(before, after) padding of one dim of a transposed convolution."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
    elif padding == "VALID":
        pad_len = k + s - 2 + builtins.max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, (tuple, list)):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return pad_a, pad_len - pad_a


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """N-d transposed (fractionally strided) convolution, as ``jax.lax.conv_transpose``.

    Default layouts are TensorFlow's ('NHWC', 'HWIO', 'NHWC').  'SAME'/'VALID' are
    interpreted as the padding of the corresponding forward conv; explicit pairs are the
    padding of the transposed conv unless ``use_consistent_padding``.
    """
    lhs, rhs = core.as_value(lhs), core.as_value(rhs)
    if not (lhs.ndim == rhs.ndim and lhs.ndim >= 2):
        raise ValueError("conv_transpose needs lhs and rhs of equal rank >= 2, got "
                         f"{lhs.shape} and {rhs.shape}")
    ndims = lhs.ndim
    one = (1,) * (ndims - 2)
    if dimension_numbers is None:
        defaults = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                    4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}
        if ndims not in defaults:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = defaults[ndims]
    dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    k_sdims = [rhs.shape[i] for i in dn.rhs_spec[2:]]
    if rhs_dilation is None:
        rhs_dilation = one
    if use_consistent_padding or (isinstance(padding, str) and padding in {"SAME", "VALID"}):
        eff_k = [_dilate_dim(k, r) for k, r in zip(k_sdims, rhs_dilation)]
        rep = [padding] * len(strides) if isinstance(padding, str) else \
            [tuple(p) for p in padding]
        pads = tuple(_conv_transpose_padding(k, s, p) for k, s, p in zip(eff_k, strides, rep))
    else:
        pads = padding
    if transpose_kernel:
        rhs = lax.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(ndims))
        o, i = dn.rhs_spec[0], dn.rhs_spec[1]
        perm[o], perm[i] = perm[i], perm[o]
        rhs = lax.transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, one, pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)

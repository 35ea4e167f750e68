"""`ember.experimental.sparse`: JAX's batched-COO (`BCOO`) and batched-CSR
(`BCSR`) sparse arrays and their operations.

A BCOO array of shape `batch + sparse + dense` stores `data` of shape
`batch + (nse,) + dense` and `indices` of shape `batch + (nse, n_sparse)`
(JAX's layout); duplicate indices add up, and an index equal to the sparse
dimension's size marks a padding entry (read as zero, dropped when
scattered). Every operation here is written with Ember's own `jnp`/`lax`
functions on `data` and `indices` (gathers with `mode='fill'`, scatters with
`mode='drop'`, sorts, products), nested `vmap`s over the batch dimensions,
so `jit`, `grad` and `vmap` apply to them with no rules of their own
(design.md, "Sparse arrays"). The number of stored elements is static: an
operation whose output size depends on values (`fromdense`,
`sum_duplicates` without `nse=`) needs concrete values, with JAX's error
otherwise.
"""

import math
import operator

import numpy as np

from . import core, lax, tree_util
from .batching import vmap
from .errors import ConcretizationTypeError
from .numpy import lax_numpy as jnp

_TRACED_NSE = ("The error arose for the nse argument of bcoo_fromdense. In order for "
               "BCOO.fromdense() to be used in traced/compiled code, you must pass a "
               "concrete value to the nse (number of stored elements) argument.")


class SparseEfficiencyError(ValueError):
    pass


class SparseEfficiencyWarning(UserWarning):
    pass


def _concrete_int(x, why):
    try:
        return operator.index(int(x) if not isinstance(x, int) else x)
    except (TypeError, ConcretizationTypeError):
        raise ConcretizationTypeError(why) from None


def _nfold_vmap(f, n, in_axes=0, out_axes=0):
    for _ in range(n):
        f = vmap(f, in_axes=in_axes, out_axes=out_axes)
    return f


class JAXSparse:
    """JAX's base class of sparse arrays."""

    __hash__ = None
    __array_priority__ = 2000

    def __init__(self, args, *, shape):
        self.shape = tuple(operator.index(s) for s in shape)

    def __len__(self):
        return self.shape[0]

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def T(self):
        return self.transpose()

    def block_until_ready(self):
        for a in self._bufs:
            a.block_until_ready()
        return self

    @property
    def dtype(self):
        return self.data.dtype

    def _repr_extra(self):
        extra = ""
        if getattr(self, "n_batch", 0):
            extra += f", n_batch={self.n_batch}"
        if getattr(self, "n_dense", 0):
            extra += f", n_dense={self.n_dense}"
        return extra

    def __repr__(self):
        name = type(self).__name__
        try:
            text = f"{name}({self.dtype}{list(self.shape)}, nse={self.nse}{self._repr_extra()})"
        except Exception:
            text = f"{name}(<invalid>)"
        if isinstance(self.data, core.Tracer):
            text = f"JitTracer[{text}]"
        return text


def _props(indices, shape, data=None):
    """(n_batch, n_sparse, n_dense, nse) of a BCOO layout, checked as JAX."""
    shape = tuple(shape)
    if not np.issubdtype(indices.dtype, np.integer):
        raise TypeError(f"BCOO indices must be integers, got {indices.dtype}")
    if indices.ndim < 2:
        raise ValueError(f"BCOO indices must have at least two dimensions, got {indices.shape}")
    nse, n_sparse = indices.shape[-2:]
    n_batch = indices.ndim - 2
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0:
        raise ValueError(f"Invalid indices.shape={indices.shape} for shape={shape}")
    if any(s1 not in (1, s2) for s1, s2 in zip(indices.shape[:n_batch], shape[:n_batch])):
        raise ValueError(f"indices batch dimensions not compatible for "
                         f"indices.shape={indices.shape}, shape={shape}")
    if data is not None:
        if any(s1 not in (1, s2) for s1, s2 in zip(data.shape[:n_batch], shape[:n_batch])):
            raise ValueError(f"data batch dimensions not compatible for "
                             f"data.shape={data.shape}, shape={shape}")
        if tuple(data.shape[n_batch:]) != (nse,) + shape[n_batch + n_sparse:]:
            raise ValueError(f"Invalid data.shape={data.shape} for nse={nse}, "
                             f"n_batch={n_batch}, n_dense={n_dense}")
    return n_batch, n_sparse, n_dense, nse


def _common_batch(data, indices, shape, n_batch):
    """data and indices broadcast to the full batch shape (JAX lets either
    have size 1 in a batch dimension)."""
    batch = tuple(shape[:n_batch])
    if tuple(data.shape[:n_batch]) != batch:
        data = jnp.broadcast_to(data, batch + tuple(data.shape[n_batch:]))
    if tuple(indices.shape[:n_batch]) != batch:
        indices = jnp.broadcast_to(indices, batch + tuple(indices.shape[n_batch:]))
    return data, indices


def _columns(indices):
    return tuple(indices[:, k] for k in range(indices.shape[-1]))


def _sparse_fill(shape, dtype):
    return jnp.asarray(np.array(shape, dtype=np.dtype(dtype)))


# -- todense / fromdense / extract ------------------------------------------


def bcoo_todense(mat):
    """The dense array of a BCOO array."""
    return _todense(mat.data, mat.indices, mat.shape)


def _todense(data, indices, shape):
    n_batch, n_sparse, _, _ = _props(indices, shape, data)
    data, indices = _common_batch(data, indices, shape, n_batch)
    inner = tuple(shape[n_batch:])

    def one(d, i):
        if n_sparse == 0:
            return d.sum(0, dtype=d.dtype)
        out = jnp.zeros(inner, d.dtype)
        return out.at[_columns(i)].add(d, mode="drop")

    return _nfold_vmap(one, n_batch)(data, indices)


def _count_stored(mat, n_batch, n_dense):
    mask = mat != 0
    if n_dense:
        mask = mask.any(tuple(range(mat.ndim - n_dense, mat.ndim)))
    counts = mask.sum(tuple(range(n_batch, mask.ndim)))
    return jnp.max(counts, initial=0)


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
    """A BCOO array of a dense array (its nonzero entries in row-major
    order; `nse` padded with zeros at out-of-bounds indices)."""
    mat = jnp.asarray(mat)
    n_sparse = mat.ndim - n_batch - n_dense
    if n_sparse < 0 or n_batch < 0 or n_dense < 0:
        raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for "
                         f"shape={mat.shape}")
    if nse is None:
        nse = _count_stored(mat, n_batch, n_dense)
    nse = _concrete_int(nse, _TRACED_NSE)
    index_dtype = np.dtype(index_dtype)
    sparse_shape = tuple(mat.shape[n_batch:n_batch + n_sparse])

    def one(m):
        mask = m != 0
        if n_dense:
            mask = mask.any(tuple(range(n_sparse, m.ndim)))
        if n_sparse == 0:
            idx = jnp.zeros((nse, 0), index_dtype)
            data = jnp.broadcast_to(m[None], (nse,) + m.shape)
        else:
            cols = jnp.nonzero(mask, size=nse, fill_value=sparse_shape)
            idx = jnp.stack([c.astype(index_dtype) for c in cols], axis=1)
            data = m.at[tuple(cols)].get(mode="fill", fill_value=0)
        count = mask.sum() if n_sparse else mask.astype(np.int32)
        keep = lax.broadcasted_iota(np.int32, (nse,), 0) < count
        keep = keep.reshape((nse,) + (1,) * n_dense)
        return jnp.where(keep, data, jnp.zeros((), m.dtype)), idx

    data, indices = _nfold_vmap(one, n_batch)(mat)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def _first_occurrences(indices, shape):
    """True at the first of each set of equal in-bound index rows."""
    lin = _linear(indices, shape)
    perm = jnp.argsort(lin, stable=True)
    s = lin[perm]
    first = jnp.concatenate([jnp.ones((1,), bool), s[1:] != s[:-1]]) if s.shape[0] else s == 0
    return jnp.zeros(lin.shape, bool).at[perm].set(first)


def bcoo_extract(sparr, arr, *, assume_unique=None):
    """A BCOO array with `sparr`'s indices and the values of dense `arr`
    there."""
    if not isinstance(sparr, BCOO):
        raise TypeError(f"First argument to bcoo_extract should be a BCOO array. "
                        f"Got type(sparr)={type(sparr)}")
    a = jnp.asarray(arr)
    if a.shape != sparr.shape:
        raise ValueError(f"shape mismatch: sparr.shape={sparr.shape} a.shape={a.shape}")
    if assume_unique is None:
        assume_unique = sparr.unique_indices
    data = _extract(sparr.indices, a, assume_unique)
    return BCOO((data, sparr.indices), shape=sparr.shape, indices_sorted=sparr.indices_sorted,
                unique_indices=sparr.unique_indices)


def _extract(indices, arr, assume_unique=True):
    n_batch, n_sparse, n_dense, nse = _props(indices, arr.shape)
    if tuple(indices.shape[:n_batch]) != tuple(arr.shape[:n_batch]):
        indices = jnp.broadcast_to(indices, tuple(arr.shape[:n_batch]) + (nse, n_sparse))
    sparse_shape = tuple(arr.shape[n_batch:n_batch + n_sparse])

    def one(i, a):
        if n_sparse == 0:
            vals = jnp.broadcast_to(a[None], (nse,) + a.shape)
            if not assume_unique:
                vals = jnp.where((lax.broadcasted_iota(np.int32, (nse,), 0) == 0)
                                 .reshape((nse,) + (1,) * n_dense), vals, 0)
            return vals
        vals = a.at[_columns(i)].get(mode="fill", fill_value=0)
        if not assume_unique:
            first = _first_occurrences(i, sparse_shape).reshape((nse,) + (1,) * n_dense)
            vals = jnp.where(first, vals, jnp.zeros((), a.dtype))
        return vals

    return _nfold_vmap(one, n_batch)(indices, arr)


# -- sorting and duplicates ---------------------------------------------------


def _linear(indices, shape):
    """Row-major positions of index rows; out-of-bounds rows map to the
    size of the sparse shape (after every in-bound row)."""
    shape = tuple(shape[:indices.shape[-1]])
    total = math.prod(shape)
    if total >= 2**31 - 1:
        raise NotImplementedError(f"sparse dimensions {shape} of more than 2**31 - 1 elements")
    idx = indices.astype(np.int32)
    lin = jnp.zeros(idx.shape[:-1], np.int32)
    inb = jnp.ones(idx.shape[:-1], bool)
    for k, s in enumerate(shape):
        col = idx[..., k]
        inb = inb & (col >= 0) & (col < s)
        lin = lin * s + col
    return jnp.where(inb, lin, total)


def _unravel(lin, shape, dtype):
    total = math.prod(shape)
    cols, rest = [], lin
    for s in reversed(shape):
        cols.append(rest % s)
        rest = rest // s
    cols = cols[::-1]
    oob = lin >= total
    cols = [jnp.where(oob, s, c) for c, s in zip(cols, shape)]
    return jnp.stack(cols, axis=-1).astype(dtype) if cols else \
        jnp.zeros(lin.shape + (0,), dtype)


def bcoo_sort_indices(mat):
    """`mat` with its entries in lexicographic order of their indices."""
    n_batch, n_sparse, _, _ = _props(mat.indices, mat.shape, mat.data)
    if n_sparse == 0:
        return BCOO((mat.data, mat.indices), shape=mat.shape, indices_sorted=True,
                    unique_indices=mat.unique_indices)
    data, indices = _common_batch(mat.data, mat.indices, mat.shape, n_batch)

    def one(d, i):
        perm = jnp.lexsort(tuple(i[:, k] for k in reversed(range(n_sparse))))
        return d[perm], i[perm]

    data, indices = _nfold_vmap(one, n_batch)(data, indices)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
                unique_indices=mat.unique_indices)


def _unique_count(indices, shape):
    lin = _linear(indices, shape)
    s = jnp.sort(lin, axis=-1)
    total = math.prod(shape[:indices.shape[-1]])
    if s.shape[-1] == 0:
        return 0
    new = jnp.concatenate([jnp.ones(s.shape[:-1] + (1,), bool), s[..., 1:] != s[..., :-1]],
                          axis=-1)
    return jnp.max(jnp.sum(new & (s != total), axis=-1), initial=0)


def bcoo_sum_duplicates(mat, nse=None):
    """`mat` with the entries of equal indices summed, in lexicographic
    order; out-of-bounds entries dropped and the rest padded to `nse`."""
    n_batch, n_sparse, n_dense, _ = _props(mat.indices, mat.shape, mat.data)
    sparse_shape = tuple(mat.shape[n_batch:n_batch + n_sparse])
    if nse is None:
        nse = 1 if n_sparse == 0 else _unique_count(mat.indices, sparse_shape)
        nse = _concrete_int(nse, "The error arose for the nse argument of "
                            "bcoo_sum_duplicates: pass a concrete nse under tracing.")
    nse = operator.index(nse)
    data, indices = _common_batch(mat.data, mat.indices, mat.shape, n_batch)
    total = math.prod(sparse_shape)

    def one(d, i):
        if n_sparse == 0:
            out = jnp.zeros((nse,) + d.shape[1:], d.dtype)
            return out.at[0].add(d.sum(0, dtype=d.dtype)) if nse else out, \
                jnp.zeros((nse, 0), i.dtype)
        lin = _linear(i, sparse_shape)
        perm = jnp.argsort(lin, stable=True)
        s = lin[perm]
        new = jnp.concatenate([jnp.ones((1,), bool), s[1:] != s[:-1]]) if s.shape[0] \
            else s == 0
        seg = jnp.cumsum(new.astype(np.int32)) - 1
        seg = jnp.where(s == total, nse, seg)  # (out-of-bounds entries are dropped)
        uniq = jnp.full((nse,), total, np.int32).at[seg].set(s, mode="drop")
        where = jnp.zeros(lin.shape, np.int32).at[perm].set(seg)
        out = jnp.zeros((nse,) + d.shape[1:], d.dtype).at[where].add(d, mode="drop")
        return out, _unravel(uniq, sparse_shape, i.dtype)

    data, indices = _nfold_vmap(one, n_batch)(data, indices)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_eliminate_zeros(mat, nse=None):
    """`sum_duplicates` after dropping entries whose data is zero."""
    n_batch, n_sparse, n_dense, _ = _props(mat.indices, mat.shape, mat.data)
    data, indices = _common_batch(mat.data, mat.indices, mat.shape, n_batch)
    zero = (data == 0).all(tuple(range(n_batch + 1, data.ndim))) if n_dense else data == 0
    fill = _sparse_fill(mat.shape[n_batch:n_batch + n_sparse], indices.dtype)
    indices = jnp.where(zero[..., None], fill, indices)
    return bcoo_sum_duplicates(BCOO((data, indices), shape=mat.shape), nse=nse)


def _set_nse(mat, nse):
    """`mat` with `nse` entries (cut, or padded with out-of-bounds zeros)."""
    if mat.nse == nse:
        return mat
    nb = mat.n_batch
    if nse < mat.nse:
        data = mat.data[(slice(None),) * nb + (slice(0, nse),)]
        indices = mat.indices[..., :nse, :]
    else:
        pad = nse - mat.nse
        data = jnp.concatenate(
            [mat.data, jnp.zeros(mat.data.shape[:nb] + (pad,) + mat.data.shape[nb + 1:],
                                 mat.dtype)], axis=nb)
        fill = jnp.broadcast_to(_sparse_fill(mat.shape[nb:nb + mat.n_sparse], mat.indices.dtype),
                                mat.indices.shape[:nb] + (pad, mat.n_sparse))
        indices = jnp.concatenate([mat.indices, fill], axis=nb)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


# -- layout ---------------------------------------------------------------------


def bcoo_update_layout(mat, *, n_batch=None, n_dense=None, on_inefficient="error"):
    """`mat` stored with another number of batch and dense dimensions."""
    import warnings

    n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
    n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
    if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
        return mat
    n_sparse = mat.ndim - n_batch - n_dense
    if on_inefficient not in ("error", "warn", None):
        raise ValueError(f"on_inefficient={on_inefficient!r}; expected one of "
                         "['error', 'warn', None].")
    if n_batch < 0:
        raise ValueError(f"n_batch must be non-negative; got {n_batch}")
    if n_dense < 0:
        raise ValueError(f"n_dense must be non-negative; got {n_dense}")
    if n_sparse < 0:
        raise ValueError(f"sum of n_batch={n_batch} and n_dense={n_dense} cannot be larger "
                         f"than mat.ndim={mat.ndim}.")
    # JAX's inefficiency checks and texts (dense dimensions first).
    grown = []
    if n_dense > mat.n_dense and any(d > 1 for d in mat.shape[mat.ndim - n_dense:
                                                             mat.ndim - mat.n_dense]):
        grown.append(("n_dense", mat.n_dense, n_dense))
    if n_batch > mat.n_batch and any(d > 1 for d in mat.shape[mat.n_batch:n_batch]):
        grown.append(("n_batch", mat.n_batch, n_batch))
    for what, old, new in grown:
        if on_inefficient is None:
            break
        msg = (f"For matrix of shape {tuple(mat.shape)}, increasing {what} from {old} to "
               f"{new} results in inefficient storage.")
        if on_inefficient == "error":
            raise SparseEfficiencyError(msg + " To disable this error, set the on_inefficient "
                                        "argument of bcoo_update_layout to 'warn' or None.")
        warnings.warn(msg + " To disable this warning, set the on_inefficient argument of "
                      "bcoo_update_layout to None.", category=SparseEfficiencyWarning,
                      stacklevel=2)
    data, indices = _common_batch(mat.data, mat.indices, mat.shape, mat.n_batch)
    shape, nb, nd = mat.shape, mat.n_batch, mat.n_dense
    if n_dense < nd:  # trailing dense dimensions become sparse columns
        k = nd - n_dense
        data, indices = _nfold_vmap(lambda d, i: _dense_to_sparse(d, i, k), nb + 1)(data,
                                                                                   indices)
        data = data.reshape(data.shape[:nb] + (data.shape[nb] * data.shape[nb + 1],) +
                            data.shape[nb + 2:])
        indices = indices.reshape(indices.shape[:nb] +
                                  (indices.shape[nb] * indices.shape[nb + 1],) +
                                  indices.shape[nb + 2:])
        nd = n_dense
    if n_batch < nb:  # trailing batch dimensions become leading sparse columns
        k = nb - n_batch
        data, indices = _nfold_vmap(lambda d, i: _batch_to_sparse(d, i, k), n_batch)(
            data, indices)
        nb = n_batch
    if n_dense > nd:  # trailing sparse columns become dense dimensions
        k, dense = n_dense - nd, tuple(shape[len(shape) - n_dense:])

        def to_dense(d, i):
            out = jnp.zeros(dense, d.dtype)
            return out.at[tuple(i[-k:])].set(d, mode="drop"), i[:-k]

        data, indices = _nfold_vmap(to_dense, nb + 1)(data, indices)
        nd = n_dense
    if n_batch > nb:  # leading sparse columns become batch dimensions
        k = n_batch - nb
        new_batch = tuple(shape[nb:n_batch])

        def to_batch(d, i):
            nse = i.shape[0]
            where = tuple(i[:, j] for j in range(k)) + (jnp.arange(nse),)
            out = jnp.zeros(new_batch + (nse,) + d.shape[1:], d.dtype)
            return out.at[where].set(d, mode="drop"), \
                jnp.broadcast_to(i[:, k:], new_batch + (nse, i.shape[1] - k))

        data, indices = _nfold_vmap(to_batch, nb)(data, indices)
    return BCOO((data, indices), shape=shape)


def _dense_to_sparse(d, i, k):
    """One stored element's trailing k dense dimensions as sparse columns:
    an entry per dense point."""
    outer = d.shape[:k]
    n = math.prod(outer)
    grids = [g.ravel() for g in jnp.meshgrid(*(jnp.arange(s, dtype=i.dtype) for s in outer),
                                             indexing="ij")]
    cols = [jnp.broadcast_to(i, (n, i.shape[0]))] + [g[:, None] for g in grids]
    return d.reshape((n,) + d.shape[k:]), jnp.concatenate(cols, axis=1)


def _batch_to_sparse(d, i, k):
    """The leading k batch dimensions as leading sparse columns."""
    nse = i.shape[k]
    grids = jnp.meshgrid(*(jnp.arange(s, dtype=i.dtype) for s in (*i.shape[:k], nse)),
                         indexing="ij")
    flat_i = i.reshape((math.prod(i.shape[:k + 1]),) + i.shape[k + 1:])
    cols = [g.ravel()[:, None] for g in grids[:-1]] + [flat_i]
    return d.reshape((math.prod(d.shape[:k + 1]),) + d.shape[k + 1:]), \
        jnp.concatenate(cols, axis=1)


# -- shape operations -----------------------------------------------------------


def bcoo_transpose(mat, *, permutation):
    """The transpose of a BCOO array (batch, sparse and dense dimensions
    each permuted among themselves)."""
    if not isinstance(permutation, (tuple, list, np.ndarray)):
        raise TypeError(f"transpose permutation must be a tuple/list/ndarray, got "
                        f"{type(permutation)}.")
    permutation = tuple(int(p) for p in permutation)
    if tuple(sorted(permutation)) != tuple(range(mat.ndim)):
        raise TypeError("transpose permutation isn't a permutation of operand dimensions, "
                        f"got permutation {permutation} for shape {mat.shape}.")
    nb, ns, nd, _ = _props(mat.indices, mat.shape, mat.data)
    bperm = permutation[:nb]
    sperm = [p - nb for p in permutation[nb:nb + ns]]
    dperm = [p - nb - ns for p in permutation[nb + ns:]]
    if nb and tuple(sorted(bperm)) != tuple(range(nb)):
        raise NotImplementedError("transpose permutation cannot permute batch axes with "
                                  f"non-batch axes; got permutation {permutation}, with "
                                  f"n_batch={nb}.")
    if nd and tuple(sorted(dperm)) != tuple(range(nd)):
        raise NotImplementedError("transpose permutation cannot permute dense axes with "
                                  f"non-dense axes; got permutation {permutation}, with "
                                  f"n_dense={nd}.")
    data = jnp.transpose(mat.data, (*bperm, nb, *(nb + 1 + d for d in dperm)))
    indices = jnp.transpose(mat.indices, (*bperm, nb, nb + 1))
    if ns:
        indices = indices[..., np.array(sperm, dtype=np.int32)]
    shape = tuple(mat.shape[p] for p in permutation)
    sorted_ = mat.indices_sorted and tuple(sperm) == tuple(range(ns))
    return BCOO((data, indices), shape=shape, indices_sorted=sorted_,
                unique_indices=mat.unique_indices)


def bcoo_reshape(mat, *, new_sizes, dimensions=None, sharding=None):
    """A reshape that keeps the batch and dense dimensions and reshapes the
    sparse ones (JAX reshapes within each group)."""
    if dimensions is not None:
        raise NotImplementedError("bcoo_reshape with dimensions")
    new_sizes = tuple(operator.index(s) for s in new_sizes)
    if math.prod(new_sizes) != mat.size:
        raise TypeError(f"cannot reshape array of shape {mat.shape} into shape {new_sizes}")
    nb, ns, nd, nse = _props(mat.indices, mat.shape, mat.data)
    batch, dense = tuple(mat.shape[:nb]), tuple(mat.shape[nb + ns:])
    # batch dimensions: reshape among themselves when they lead unchanged
    if tuple(new_sizes[:nb]) != batch and nb:
        nbp = _prefix_split(new_sizes, math.prod(batch))
        if nbp is None:
            raise ValueError("bcoo_reshape: new shape cannot split batch dimensions from "
                             f"sparse ones: {mat.shape} -> {new_sizes}")
        data, indices = _common_batch(mat.data, mat.indices, mat.shape, nb)
        data = data.reshape(tuple(new_sizes[:nbp]) + data.shape[nb:])
        indices = indices.reshape(tuple(new_sizes[:nbp]) + indices.shape[nb:])
        rest = BCOO((data, indices), shape=tuple(new_sizes[:nbp]) + mat.shape[nb:])
        return bcoo_reshape(rest, new_sizes=new_sizes)
    if nd and tuple(new_sizes[len(new_sizes) - nd:]) != dense:
        raise NotImplementedError("bcoo_reshape of dense dimensions: "
                                  f"{mat.shape} -> {new_sizes}, n_dense={nd}")
    new_sparse = tuple(new_sizes[nb:len(new_sizes) - nd])
    old_sparse = tuple(mat.shape[nb:nb + ns])
    if new_sparse == old_sparse:
        return mat
    lin = _linear(mat.indices, old_sparse) if ns else jnp.zeros(mat.indices.shape[:-1], np.int32)
    indices = _unravel(lin, new_sparse, mat.indices.dtype)
    return BCOO((mat.data, indices), shape=new_sizes, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def _prefix_split(sizes, n):
    p = 1
    for k, s in enumerate(sizes):
        if p == n:
            return k
        p *= s
    return len(sizes) if p == n else None


def bcoo_squeeze(arr, *, dimensions):
    """`arr` without the given dimensions of size 1."""
    dims = sorted({d % arr.ndim if arr.ndim else d for d in dimensions})
    if any(arr.shape[d] != 1 for d in dims):
        raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={arr.shape} and dimensions={tuple(dimensions)}")
    nb, ns, nd, nse = _props(arr.indices, arr.shape, arr.data)
    data, indices = arr.data, arr.indices
    bdims = [d for d in dims if d < nb]
    sdims = [d - nb for d in dims if nb <= d < nb + ns]
    ddims = [d - nb - ns for d in dims if d >= nb + ns]
    if sdims:
        # entries out of bounds in a dropped column stay out of bounds
        drop = jnp.zeros(indices.shape[:-1], bool)
        for k in sdims:
            drop = drop | (indices[..., k] != 0)
        keep = [k for k in range(ns) if k not in sdims]
        indices = indices[..., np.array(keep, dtype=np.int32)]
        fill = _sparse_fill([arr.shape[nb + k] for k in keep], indices.dtype)
        indices = jnp.where(drop[..., None], fill, indices)
        data = jnp.where(drop.reshape(drop.shape + (1,) * nd), jnp.zeros((), data.dtype), data)
    if ddims:
        data = data.squeeze(tuple(nb + 1 + d for d in ddims))
    if bdims:
        data = data.squeeze(tuple(bdims))
        indices = indices.squeeze(tuple(bdims))
    shape = tuple(s for i, s in enumerate(arr.shape) if i not in dims)
    return BCOO((data, indices), shape=shape, indices_sorted=arr.indices_sorted,
                unique_indices=arr.unique_indices)


def bcoo_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
    """`lax.broadcast_in_dim` of a BCOO array: new and size-1 dimensions
    before the sparse ones become batch dimensions, after them dense ones;
    new sparse dimensions must have size 1."""
    shape = tuple(operator.index(s) for s in shape)
    bdims = tuple(operator.index(d) for d in broadcast_dimensions)
    if len(bdims) != mat.ndim:
        raise ValueError(f"broadcast_dimensions {bdims} do not match the rank of {mat.shape}")
    for d, s in zip(bdims, mat.shape):
        if s not in (1, shape[d]):
            raise ValueError(f"cannot broadcast {mat.shape} to {shape} with "
                             f"broadcast_dimensions={bdims}")
    nb, ns, nd, nse = _props(mat.indices, mat.shape, mat.data)
    # the new layout: dimensions before the first sparse one's image are
    # batch dimensions, those after the last sparse one's image dense
    if ns:
        new_nb, last = bdims[nb], bdims[nb + ns - 1]
        new_ns = last - new_nb + 1
        if any(shape[d] != 1 for d in range(new_nb, last + 1) if d not in bdims):
            raise NotImplementedError("bcoo_broadcast_in_dim: new sparse dimensions of "
                                      "size larger than 1")
    else:
        new_nb, new_ns = (bdims[nb - 1] + 1 if nb else 0), 0
    data_dims = [bdims[i] for i in range(nb)] + [new_nb] + \
        [bdims[i] - new_ns + 1 for i in range(nb + ns, mat.ndim)]
    data = lax.broadcast_in_dim(mat.data, shape[:new_nb] + (nse,) + shape[new_nb + new_ns:],
                                data_dims)
    pos = {bdims[nb + k]: k for k in range(ns)}
    zero = jnp.zeros(mat.indices.shape[:-1], mat.indices.dtype)
    cols = [mat.indices[..., pos[d]] if d in pos else zero
            for d in range(new_nb, new_nb + new_ns)]
    ind = jnp.stack(cols, axis=-1) if cols else \
        jnp.zeros(mat.indices.shape[:-1] + (0,), mat.indices.dtype)
    ind = lax.broadcast_in_dim(ind, tuple(shape[:new_nb]) + (nse, new_ns),
                               [bdims[i] for i in range(nb)] + [new_nb, new_nb + 1])
    return BCOO((data, ind), shape=shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def bcoo_concatenate(operands, *, dimension):
    """Concatenation of BCOO arrays along `dimension`."""
    operands = list(operands)
    if not operands:
        raise ValueError("bcoo_concatenate: need at least one array")
    if not all(isinstance(o, BCOO) for o in operands):
        raise ValueError("bcoo_concatenate: expected operands to be a sequence of BCOO "
                         f"arrays. Got {operands}")
    ref = operands[0]
    dim = operator.index(dimension)
    layouts = {(o.n_batch, o.n_sparse, o.n_dense) for o in operands}
    if len(layouts) > 1:
        raise ValueError("bcoo_concatenate requires inputs to have matching nse "
                         f"dimensions. got n_batch, n_sparse, n_dense = {sorted(layouts)}")
    for o in operands:
        if o.ndim != ref.ndim or any(a != b for i, (a, b) in
                                     enumerate(zip(o.shape, ref.shape)) if i != dim):
            raise TypeError("Cannot concatenate arrays with shapes that differ in "
                            f"dimensions other than the one being concatenated: "
                            f"{[o.shape for o in operands]}")
    nb, ns = ref.n_batch, ref.n_sparse
    shape = list(ref.shape)
    shape[dim] = sum(o.shape[dim] for o in operands)
    shape = tuple(shape)
    if dim < nb:
        nse = max(o.nse for o in operands)
        ops = [_set_nse(o, nse) for o in operands]
        ops = [BCOO(_common_batch(o.data, o.indices, o.shape, nb), shape=o.shape) for o in ops]
        data = jnp.concatenate([o.data for o in ops], axis=dim)
        indices = jnp.concatenate([o.indices for o in ops], axis=dim)
        return BCOO((data, indices), shape=shape)
    if dim < nb + ns:
        offset, datas, idxs = 0, [], []
        k = dim - nb
        full_batch = tuple(shape[:nb])
        for o in operands:
            d, i = _common_batch(o.data, o.indices, o.shape, nb)
            col = i[..., k]
            col = jnp.where(col >= o.shape[dim], shape[dim], col + offset)
            i = i.at[..., k].set(col.astype(i.dtype))
            # other columns' out-of-bounds entries stay out of bounds
            datas.append(jnp.broadcast_to(d, full_batch + d.shape[nb:]))
            idxs.append(i)
            offset += o.shape[dim]
        return BCOO((jnp.concatenate(datas, axis=nb), jnp.concatenate(idxs, axis=nb)),
                    shape=shape)
    # dense dimension: the operands must share their indices
    nse = ref.nse
    if any(o.nse != nse for o in operands):
        raise NotImplementedError("bcoo_concatenate along dense dimensions requires "
                                  "arrays with equal nse")
    data = jnp.concatenate([o.data for o in operands], axis=dim - ns + 1)
    return BCOO((data, ref.indices), shape=shape)


def bcoo_rev(operand, dimensions):
    """`lax.rev` of a BCOO array."""
    nb, ns, nd, _ = _props(operand.indices, operand.shape, operand.data)
    data, indices = operand.data, operand.indices
    bd = tuple(d for d in dimensions if d < nb)
    sd = [d - nb for d in dimensions if nb <= d < nb + ns]
    dd = tuple(d - ns + 1 for d in dimensions if d >= nb + ns)
    if bd:
        data, indices = _common_batch(data, indices, operand.shape, nb)
        data, indices = jnp.flip(data, bd), jnp.flip(indices, bd)
    if dd:
        data = jnp.flip(data, dd)
    for k in sd:
        n = operand.shape[nb + k]
        col = indices[..., k]
        indices = indices.at[..., k].set(jnp.where(col < n, n - 1 - col, col).astype(col.dtype))
    return BCOO((data, indices), shape=operand.shape)


def bcoo_slice(mat, *, start_indices, limit_indices, strides=None):
    """`lax.slice` of a BCOO array (entries outside the window become
    out-of-bounds padding; nse unchanged)."""
    start = tuple(operator.index(s) for s in start_indices)
    limit = tuple(operator.index(s) for s in limit_indices)
    strides = (1,) * mat.ndim if strides is None else tuple(operator.index(s) for s in strides)
    if not (len(start) == len(limit) == len(strides) == mat.ndim):
        raise ValueError(f"bcoo_slice: start_indices, limit_indices and strides must have "
                         f"length {mat.ndim}")
    if any(not 0 <= s <= e <= n for s, e, n in zip(start, limit, mat.shape)):
        raise ValueError(f"bcoo_slice: invalid indices start_indices={start}, "
                         f"limit_indices={limit} for shape {mat.shape}")
    if any(st <= 0 for st in strides):
        raise ValueError(f"bcoo_slice: strides must be positive, got {strides}")
    shape = tuple(-(-(e - s) // st) for s, e, st in zip(start, limit, strides))
    return _window(mat, list(start), shape, strides)


def _window(mat, start, shape, strides):
    nb, ns, nd, nse = _props(mat.indices, mat.shape, mat.data)
    data, indices = _common_batch(mat.data, mat.indices, mat.shape, nb)
    sl = tuple(slice(s, s + (n - 1) * st + 1 if n else s, st) if isinstance(s, int) else None
               for s, n, st in zip(start, shape, strides))
    if nb:
        if all(isinstance(s, int) for s in start[:nb]):
            data = data[sl[:nb]]
            indices = indices[sl[:nb]]
        else:
            data = lax.dynamic_slice(data, list(start[:nb]) + [0] * (data.ndim - nb),
                                     list(shape[:nb]) + list(data.shape[nb:]))
            indices = lax.dynamic_slice(indices, list(start[:nb]) + [0, 0],
                                        list(shape[:nb]) + list(indices.shape[nb:]))
    if nd:
        ds = start[nb + ns:]
        if all(isinstance(s, int) for s in ds):
            data = data[(slice(None),) * (nb + 1) + sl[nb + ns:]]
        else:
            data = lax.dynamic_slice(data, [0] * (nb + 1) + list(ds),
                                     list(data.shape[:nb + 1]) + list(shape[nb + ns:]))
    if ns:
        oob = jnp.zeros(indices.shape[:-1], bool)
        cols = []
        for k in range(ns):
            s, n, st = start[nb + k], shape[nb + k], strides[nb + k]
            col = indices[..., k] - s
            bad = (col < 0) | (col >= n * st) | (col % st != 0 if st != 1 else False)
            oob = oob | bad
            cols.append(col // st if st != 1 else col)
        fill = [shape[nb + k] for k in range(ns)]
        indices = jnp.stack([jnp.where(oob, f, c).astype(mat.indices.dtype)
                             for c, f in zip(cols, fill)], axis=-1)
        data = jnp.where(oob.reshape(oob.shape + (1,) * nd), jnp.zeros((), data.dtype), data)
        room = math.prod(shape[nb:nb + ns])
        if nse > room:  # (JAX's: a window holds at most its size in entries)
            return bcoo_sum_duplicates(BCOO((data, indices), shape=tuple(shape)), nse=room)
    return BCOO((data, indices), shape=tuple(shape))


def bcoo_dynamic_slice(mat, start_indices, slice_sizes):
    """`lax.dynamic_slice` of a BCOO array (starts clamped as lax does)."""
    sizes = tuple(operator.index(s) for s in slice_sizes)
    if len(start_indices) != mat.ndim or len(sizes) != mat.ndim:
        raise ValueError(f"bcoo_dynamic_slice: start_indices and slice_sizes must have "
                         f"length {mat.ndim}")
    if any(not 0 <= z <= n for z, n in zip(sizes, mat.shape)):
        raise TypeError(f"slice slice_sizes must be less than or equal to operand shape, "
                        f"got slice_sizes {sizes} for operand shape {mat.shape}")
    starts = []
    nb, ns = mat.n_batch, mat.n_sparse
    for k, (s, z, n) in enumerate(zip(start_indices, sizes, mat.shape)):
        wrap = nb <= k < nb + ns  # (JAX wraps negative starts of sparse dimensions)
        if isinstance(s, (int, np.integer)):
            s = int(s) + (n if wrap and int(s) < 0 else 0)
            starts.append(int(min(max(s, 0), n - z)))
        else:
            s = jnp.asarray(s).astype(np.int32)
            if wrap:
                s = jnp.where(s < 0, s + n, s)
            starts.append(jnp.clip(s, 0, n - z))
    return _window(mat, starts, sizes, (1,) * mat.ndim)


def bcoo_reduce_sum(mat, *, axes):
    """The sum of a BCOO array over `axes` (a BCOO array; duplicates kept)."""
    nb, ns, nd, nse = _props(mat.indices, mat.shape, mat.data)
    axes = sorted({operator.index(a) % max(mat.ndim, 1) for a in axes})
    data, indices = _common_batch(mat.data, mat.indices, mat.shape, nb)
    dense_axes = tuple(a - ns + 1 for a in axes if a >= nb + ns)
    if dense_axes:
        data = data.sum(dense_axes)
    nd2 = nd - len(dense_axes)
    if ns:
        fill = _sparse_fill(mat.shape[nb:nb + ns], indices.dtype)
        inb = jnp.all(indices < fill, -1)
        data = jnp.where(inb.reshape(inb.shape + (1,) * nd2), data, jnp.zeros((), data.dtype))
    keep = [k for k in range(ns) if nb + k not in axes]
    indices = indices[..., np.array(keep, dtype=np.int32)] if keep else \
        jnp.zeros(indices.shape[:-1] + (0,), indices.dtype)
    bax = [a for a in axes if a < nb]
    if bax:
        rest = [i for i in range(nb) if i not in bax]
        new_nse = nse * math.prod(data.shape[a] for a in bax)
        perm_d = rest + bax + list(range(nb, data.ndim))
        perm_i = rest + bax + list(range(nb, indices.ndim))
        data = jnp.transpose(data, perm_d).reshape(
            tuple(data.shape[i] for i in rest) + (new_nse,) + data.shape[nb + 1:])
        indices = jnp.transpose(indices, perm_i).reshape(
            tuple(indices.shape[i] for i in rest) + (new_nse,) + indices.shape[nb + 1:])
    shape = tuple(s for i, s in enumerate(mat.shape) if i not in axes)
    return BCOO((data, indices), shape=shape)


# -- products ----------------------------------------------------------------------


def bcoo_multiply_dense(sp_mat, v):
    """The data of the elementwise product of a BCOO array and a dense
    array broadcast to its shape (JAX returns the data)."""
    v = jnp.asarray(v)
    shape = sp_mat.shape
    if v.ndim == 0:
        return sp_mat.data * v
    if jnp.broadcast_shapes(v.shape, shape) != tuple(shape):
        raise NotImplementedError(
            "multiplication between sparse and dense is only implemented for cases where "
            f"the output shape matches the sparse matrix shape. Got shape={shape}, "
            f"v.shape={v.shape}")
    vb = jnp.broadcast_to(v, shape)
    return sp_mat.data * _extract(sp_mat.indices, vb)


def bcoo_multiply_sparse(lhs, rhs):
    """The elementwise product of two BCOO arrays (every pair of entries
    with equal indices: nse = lhs.nse * rhs.nse, as JAX)."""
    if lhs.ndim != rhs.ndim:
        raise TypeError("bcoo_multiply_sparse: arrays must have same number of dimensions, "
                        f"got {lhs.shape}, {rhs.shape}")
    if lhs.shape != rhs.shape:
        raise NotImplementedError("bcoo_multiply_sparse of arrays of different shapes: "
                                  f"{lhs.shape}, {rhs.shape}")
    if lhs.n_dense != rhs.n_dense:
        raise NotImplementedError("bcoo_multiply_sparse: arrays with differing numbers of "
                                  f"dense dimensions: {lhs}, {rhs}")
    nb = min(lhs.n_batch, rhs.n_batch)
    lhs = bcoo_update_layout(lhs, n_batch=nb, on_inefficient=None)
    rhs = bcoo_update_layout(rhs, n_batch=nb, on_inefficient=None)
    ld, li = _common_batch(lhs.data, lhs.indices, lhs.shape, nb)
    rd, ri = _common_batch(rhs.data, rhs.indices, rhs.shape, nb)
    ns = lhs.n_sparse
    sp_shape = tuple(lhs.shape[nb:nb + ns])
    nse = lhs.nse * rhs.nse

    def one(ld, li, rd, ri):
        a, b = _linear(li, sp_shape), _linear(ri, sp_shape)
        total = math.prod(sp_shape)
        match = (a[:, None] == b[None, :]) & (a[:, None] < total)
        il, ir = jnp.nonzero(match, size=nse, fill_value=(li.shape[0], ri.shape[0]))
        data = ld.at[il].get(mode="fill", fill_value=0) * rd.at[ir].get(mode="fill",
                                                                         fill_value=0)
        fill = max(sp_shape, default=0)  # (JAX's padding: the largest dimension)
        idx = jnp.where((il < li.shape[0])[:, None],
                        li.at[il].get(mode="fill", fill_value=0), fill)
        return data, idx.astype(li.dtype)

    data, indices = _nfold_vmap(one, nb)(ld, li, rd, ri)
    return BCOO((data, indices), shape=lhs.shape)


def _dot_shape(lhs_shape, rhs_shape, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    lc, rc, lb, rb = (tuple(operator.index(d) for d in x) for x in (lc, rc, lb, rb))
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError("dot_general requires equal numbers of lhs and rhs contracting "
                        f"and batch dimensions, got {dimension_numbers}")
    for a, b in zip(lc + lb, rc + rb):
        if lhs_shape[a] != rhs_shape[b]:
            raise TypeError("dot_general requires contracting/batch dimensions to have the "
                            f"same shape, got {lhs_shape[a]} and {rhs_shape[b]}.")
    lf = [i for i in range(len(lhs_shape)) if i not in lc + lb]
    rf = [i for i in range(len(rhs_shape)) if i not in rc + rb]
    shape = tuple(lhs_shape[i] for i in lb) + tuple(lhs_shape[i] for i in lf) + \
        tuple(rhs_shape[i] for i in rf)
    return shape, (lc, rc, lb, rb)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
    """`lax.dot_general` with a BCOO operand: dense result, or BCOO when
    both are sparse."""
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        return _spspdot(lhs, rhs, dimension_numbers, preferred_element_type)
    if isinstance(lhs, BCOO):
        return _spdot(lhs, jnp.asarray(rhs), dimension_numbers, preferred_element_type)
    if isinstance(rhs, BCOO):
        lhs = jnp.asarray(lhs)
        (lc, rc), (lb, rb) = dimension_numbers
        out = _spdot(rhs, lhs, ((rc, lc), (rb, lb)), preferred_element_type)
        nbt = len(lb)
        n_rfree = rhs.ndim - len(rc) - len(rb)
        perm = (*range(nbt), *range(nbt + n_rfree, out.ndim), *range(nbt, nbt + n_rfree))
        return jnp.transpose(out, perm)
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)


def _out_dtype(pet, lhs, rhs):
    if pet is not None:
        return np.dtype(pet)
    return np.dtype(jnp.result_type(lhs.dtype, rhs.dtype))


def _spdot(lhs, rhs, dimension_numbers, pet):
    shape, (lc, rc, lb, rb) = _dot_shape(lhs.shape, rhs.shape, dimension_numbers)
    nb, ns, nd, nse = _props(lhs.indices, lhs.shape, lhs.data)
    if lb and max(lb) >= nb:
        raise NotImplementedError(
            "bcoo_dot_general batch dimensions must be among the batch dimensions in the "
            f"sparse representation.\ngot lhs_batch={lb}, n_batch={nb}")
    if any(d >= nb + ns for d in lc):
        raise NotImplementedError("bcoo_dot_general: contracting over dense dimensions.")
    out_dtype = _out_dtype(pet, lhs, rhs)
    data, indices = _common_batch(lhs.data, lhs.indices, lhs.shape, nb)
    # batch dims of lhs in the order: dot batch, free, contracted
    lcb = [c for c in lc if c < nb]
    rcb = [rc[lc.index(c)] for c in lcb]
    free_b = [i for i in range(nb) if i not in lb and i not in lcb]
    bperm = list(lb) + free_b + lcb
    data = jnp.transpose(data, bperm + list(range(nb, data.ndim)))
    indices = jnp.transpose(indices, bperm + [nb, nb + 1])
    # rhs: dot-batch dims, then contracted-batch dims, then contracted
    # sparse dims, then its free dims
    lcs = [c for c in lc if c >= nb]
    rcs = [rc[lc.index(c)] for c in lcs]
    rfree = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    rhs = jnp.transpose(rhs, list(rb) + rcb + rcs + rfree)
    sp_free = [k for k in range(ns) if nb + k not in lcs]
    sp_con = [c - nb for c in lcs]
    sparse_shape = tuple(lhs.shape[nb:nb + ns])
    free_shape = tuple(sparse_shape[k] for k in sp_free)
    dense_shape = tuple(lhs.shape[nb + ns:])

    def core_(d, i, r):
        # d: (nse, *dense), i: (nse, ns), r: (*contracted sparse, *rfree)
        con = tuple(i[:, k] for k in sp_con)
        g = r.at[con].get(mode="fill", fill_value=0) if con else \
            jnp.broadcast_to(r[None], (i.shape[0],) + r.shape)
        prod = lax.dot_general(d.astype(out_dtype) if d.dtype != out_dtype else d,
                               g.astype(out_dtype) if g.dtype != out_dtype else g,
                               (((), ()), ((0,), (0,))), preferred_element_type=out_dtype)
        # prod: (nse, *dense, *rfree)
        if sp_free:
            out = jnp.zeros(free_shape + dense_shape + prod.shape[1 + nd:], out_dtype)
            return out.at[tuple(i[:, k] for k in sp_free)].add(prod, mode="drop")
        return prod.sum(0, dtype=out_dtype)

    f = core_
    # contracted batch dims (innermost vmaps): summed over
    for _ in lcb:
        f = (lambda g: lambda d, i, r: vmap(g, in_axes=(0, 0, 0))(d, i, r).sum(0))(f)
    # free batch dims: rhs not mapped
    for _ in free_b:
        f = vmap(f, in_axes=(0, 0, None))
    # dot batch dims: rhs mapped on its leading axes
    for _ in lb:
        f = vmap(f, in_axes=(0, 0, 0))
    out = f(data, indices, rhs)
    assert out.shape == shape, (out.shape, shape)
    return out


def _spspdot(lhs, rhs, dimension_numbers, pet):
    shape, (lc, rc, lb, rb) = _dot_shape(lhs.shape, rhs.shape, dimension_numbers)
    if lhs.n_dense or rhs.n_dense:
        raise NotImplementedError("bcoo_spdot_general with dense dimensions.")
    if lhs.n_batch or rhs.n_batch or lb or rb:
        return _spspdot_batched(lhs, rhs, shape, (lc, rc, lb, rb), pet)
    out_dtype = _out_dtype(pet, lhs, rhs)
    lfree = [k for k in range(lhs.ndim) if k not in lc]
    rfree = [k for k in range(rhs.ndim) if k not in rc]
    nse = (lhs.nse if lfree else 1) * (rhs.nse if rfree else 1)
    nse = min(nse, math.prod(shape))
    lcon = _linear(lhs.indices[:, np.array(lc, dtype=np.int32)], [lhs.shape[c] for c in lc]) \
        if lc else jnp.zeros((lhs.nse,), np.int32)
    rcon = _linear(rhs.indices[:, np.array(rc, dtype=np.int32)], [rhs.shape[c] for c in rc]) \
        if rc else jnp.zeros((rhs.nse,), np.int32)
    ltot = math.prod(lhs.shape[c] for c in lc)
    match = (lcon[:, None] == rcon[None, :]) & (lcon[:, None] < ltot)
    linb = jnp.all(lhs.indices < _sparse_fill(lhs.shape, lhs.indices.dtype), -1)
    rinb = jnp.all(rhs.indices < _sparse_fill(rhs.shape, rhs.indices.dtype), -1)
    match = match & linb[:, None] & rinb[None, :]
    data = jnp.where(match, lhs.data.astype(out_dtype)[:, None] *
                     rhs.data.astype(out_dtype)[None, :], jnp.zeros((), out_dtype)).ravel()
    it = jnp.promote_types(lhs.indices.dtype, rhs.indices.dtype)
    li = jnp.broadcast_to(lhs.indices[:, None, np.array(lfree, dtype=np.int32)]
                          if lfree else jnp.zeros((lhs.nse, 1, 0), it),
                          (lhs.nse, rhs.nse, len(lfree)))
    ri = jnp.broadcast_to(rhs.indices[None, :, np.array(rfree, dtype=np.int32)]
                          if rfree else jnp.zeros((1, rhs.nse, 0), it),
                          (lhs.nse, rhs.nse, len(rfree)))
    indices = jnp.concatenate([li.astype(it), ri.astype(it)], axis=-1)
    indices = indices.reshape(lhs.nse * rhs.nse, len(lfree) + len(rfree))
    return bcoo_sum_duplicates(BCOO((data, indices), shape=shape), nse=nse)


def _spspdot_batched(lhs, rhs, shape, dims, pet):
    """A product of two BCOO arrays with batch dimensions, laid out as JAX
    lays it out (the result's batch dimensions: the product's batch ones,
    then each operand's other batch dimensions): the unbatched product
    mapped with `vmap` over the buffers' batch dimensions, the product's
    batch dimensions mapped in both operands, the others in one."""
    lc, rc, lb, rb = dims
    lnb, rnb = lhs.n_batch, rhs.n_batch
    if (lb and max(lb) >= lnb) or (rb and max(rb) >= rnb):
        raise NotImplementedError("bcoo_spdot_general: batch_dims must correspond to batch "
                                  "dimensions of the sparse representation.")
    if any(not lnb <= c < lnb + lhs.n_sparse for c in lc) or \
            any(not rnb <= c < rnb + rhs.n_sparse for c in rc):
        raise NotImplementedError("bcoo_spdot_general only supports contraction of sparse "
                                  "indices.")
    if rnb > len(rb) and lhs.n_sparse > len(lc):
        raise ValueError("bcoo_spdot_general: cannot have unused batch dims on rhs with "
                         "unused sparse dims on lhs.")
    lfree = [i for i in range(lnb) if i not in lb]
    rfree = [i for i in range(rnb) if i not in rb]

    def buffers(mat, nb, order):
        data, indices = _common_batch(mat.data, mat.indices, mat.shape, nb)
        return (jnp.transpose(data, list(order) + list(range(nb, data.ndim))),
                jnp.transpose(indices, list(order) + [nb, nb + 1]))

    lshape, rshape = tuple(lhs.shape[lnb:]), tuple(rhs.shape[rnb:])
    core_dims = ((tuple(c - lnb for c in lc), tuple(c - rnb for c in rc)), ((), ()))

    def core(ld, li, rd, ri):
        out = _spspdot(BCOO((ld, li), shape=lshape), BCOO((rd, ri), shape=rshape),
                       core_dims, pet)
        return out.data, out.indices

    f = core
    for _ in rfree:
        f = vmap(f, in_axes=(None, None, 0, 0))
    for _ in lfree:
        f = vmap(f, in_axes=(0, 0, None, None))
    for _ in lb:
        f = vmap(f, in_axes=(0, 0, 0, 0))
    data, indices = f(*buffers(lhs, lnb, list(lb) + lfree), *buffers(rhs, rnb, list(rb) + rfree))
    return BCOO((data, indices), shape=shape)


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
    """The entries of `dot_general(A, B)` at the given BCOO indices."""
    out = lax.dot_general(jnp.asarray(A), jnp.asarray(B), dimension_numbers)
    return _extract(jnp.asarray(indices), out)


def bcoo_gather(operand, start_indices, dimension_numbers, slice_sizes, *,
                unique_indices=False, indices_are_sorted=False, mode=None, fill_value=None):
    """`lax.gather` of a BCOO array (JAX's construction: a dynamic slice per
    start index, mapped with `vmap`, its collapsed dimensions squeezed; the
    index vector is the last dimension of `start_indices`; starts are
    clamped into the array, as a dynamic slice clamps them)."""
    start_indices = jnp.asarray(start_indices)
    dn = dimension_numbers
    offset_dims = tuple(dn.offset_dims)
    collapsed = tuple(dn.collapsed_slice_dims)
    start_map = tuple(dn.start_index_map)
    if tuple(getattr(dn, "operand_batching_dims", ()) or ()):
        raise NotImplementedError("bcoo_gather with operand batching dimensions")
    if mode is not None and str(mode).lower().split(".")[-1] not in (
            "clip", "promise_in_bounds", "0", "1"):
        raise NotImplementedError(f"bcoo_gather: mode={mode} not yet supported.")
    batch_shape = tuple(start_indices.shape[:-1])
    flat = start_indices.reshape((math.prod(start_indices.shape[:-1]), start_indices.shape[-1]))
    sizes = list(operand.shape)
    for j in start_map:
        sizes[j] = slice_sizes[j]
    zero = jnp.zeros((flat.shape[0],), flat.dtype)
    starts = [zero] * operand.ndim
    for k, j in enumerate(start_map):
        starts[j] = flat[:, k]

    def one(st):
        window = bcoo_dynamic_slice(operand, st, sizes)
        return bcoo_squeeze(window, dimensions=collapsed) if collapsed else window

    result = vmap(one)(starts)
    result = bcoo_reshape(result, new_sizes=batch_shape + tuple(result.shape[1:]))
    # the offset dimensions go where `offset_dims` puts them
    n_out = len(batch_shape) + len(result.shape) - len(batch_shape)
    gather_batch = [d for d in range(n_out) if d not in offset_dims]
    perm = [0] * n_out
    for src, dst in enumerate(gather_batch + list(offset_dims)):
        perm[dst] = src
    if perm != list(range(n_out)):
        if sorted(perm[:result.n_batch]) != list(range(result.n_batch)):
            result = bcoo_update_layout(result, n_batch=0, on_inefficient=None)
        result = bcoo_transpose(result, permutation=perm)
    return result


def bcoo_conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation=None,
                              rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                              batch_group_count=1, precision=None, preferred_element_type=None,
                              out_sharding=None):
    """`lax.conv_general_dilated` of BCOO (or dense) operands, in the cases
    JAX's sparse convolution takes: one spatial dimension, leading
    dimensions (1, 1), unit strides, dilations and group counts. Each pair
    of stored entries (one per operand) contributes its product at output
    position lhs index + low padding - rhs index (a correlation, as the
    dense op); JAX's layout (n_batch 2, nse the product of the nses)."""
    from .api import eval_shape
    from .convolution import conv_general_dilated, padtype_to_pads_conv

    # (The dense op's checks and result shape.)
    out = eval_shape(lambda a, b: conv_general_dilated(
        a, b, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
        feature_group_count, batch_group_count, precision, preferred_element_type),
        core.ShapeDtypeStruct(lhs.shape, lhs.dtype), core.ShapeDtypeStruct(rhs.shape, rhs.dtype))
    n = len(lhs.shape) - 2
    if lhs_dilation is not None and tuple(lhs_dilation) != (1,) * n:
        raise NotImplementedError("bcoo convolution with lhs_dilation.")
    if rhs_dilation is not None and tuple(rhs_dilation) != (1,) * n:
        raise NotImplementedError("bcoo convolution with lhs_dilation.")
    if tuple(window_strides) != (1,) * n:
        raise NotImplementedError("bcoo convolution with non-unit window_strides.")
    if batch_group_count != feature_group_count != 1:
        raise NotImplementedError("bcoo convolution with non-unit group counts.")
    if tuple(lhs.shape[:2]) != tuple(rhs.shape[:2]) != (1, 1):
        raise NotImplementedError("bcoo convolution with leading dimensions other than (1, 1)")
    if n != 1:
        raise NotImplementedError("bcoo convolution with other than one spatial dimension")
    if isinstance(padding, str):
        padding = padtype_to_pads_conv(lhs.shape[2:], rhs.shape[2:], (1,), padding)
    (low, high), = [tuple(int(p) for p in pads) for pads in padding]
    index_dtype = next((m.indices.dtype for m in (lhs, rhs) if isinstance(m, BCOO)), np.int32)
    ld, li = _entries_1d(lhs, index_dtype)
    rd, ri = _entries_1d(rhs, index_dtype)
    data = (ld[:, None] * rd[None, :]).ravel()
    pos = (li[:, None] + (low - ri)[None, :]).ravel()
    # (Positions before the output's start: zero entries at 0. Those past
    # its end are out of bounds, which BCOO reads as padding.)
    data = jnp.where(pos < 0, jnp.zeros((), data.dtype), data)
    pos = jnp.where(pos < 0, jnp.zeros((), pos.dtype), pos)
    size = max(0, lhs.shape[2] + low + high - rhs.shape[2] + 1)
    assert (1, 1, size) == tuple(out.shape), (size, out.shape)
    return BCOO((data.astype(out.dtype)[None, None], pos[None, None, :, None]),
                shape=(1, 1, size))


def _entries_1d(mat, index_dtype):
    """The stored values and positions of a (1, 1, n) operand: a BCOO
    array's (entries at padding positions zeroed), every element of a dense
    one."""
    if isinstance(mat, BCOO):
        mat = bcoo_update_layout(mat, n_batch=2, n_dense=0)
        data, idx = mat.data[0, 0], mat.indices[0, 0, :, 0]
        return jnp.where(idx < mat.shape[-1], data, jnp.zeros((), data.dtype)), idx
    if isinstance(mat, (np.ndarray, core.Array)) or hasattr(mat, "shape"):
        data = jnp.asarray(mat)[0, 0]
        return data, jnp.arange(data.shape[0], dtype=index_dtype)
    raise TypeError(f"bcoo_conv_general_dilated: input of type {type(mat)} not recognized.")


def _mapped_shape(shape, data, indices, name, trailing):
    """The shape of a sparse array rebuilt from its buffers: `shape` itself,
    or, where `vmap` took batch dimensions off the buffers or put new ones
    on (JAX's vmappable sparse arrays map over batch dimensions), `shape`'s
    sparse and dense dimensions after the buffers' batch shape."""
    if not (hasattr(data, "ndim") and hasattr(indices, "ndim")):
        return shape
    n_batch = indices.ndim - trailing
    old_batch = len(shape) - (indices.shape[-1] if trailing == 2 else 2) - \
        (data.ndim - indices.ndim + (1 if trailing == 2 else 0))
    if n_batch == old_batch:
        return shape
    if n_batch < 0 or old_batch < 0:
        raise ValueError(f"Cannot map in_axis=0 for {name} array with n_batch={old_batch}. "
                         f"in_axes for batched {name} operations must correspond to a batch "
                         "dimension.")
    batch = tuple(max(a, b) for a, b in zip(data.shape[:n_batch], indices.shape[:n_batch]))
    return batch + tuple(shape[old_batch:])


# -- the class -------------------------------------------------------------------------


@tree_util.register_pytree_node_class
class BCOO(JAXSparse):
    """JAX's batched-COO sparse array: `BCOO((data, indices), shape=...)`."""

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        data, indices = args
        self.data, self.indices = jnp.asarray(data), jnp.asarray(indices)
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        super().__init__(args, shape=shape)
        _props(self.indices, self.shape, self.data)

    @property
    def _bufs(self):
        return (self.data, self.indices)

    @property
    def nse(self):
        return self.indices.shape[-2]

    @property
    def n_batch(self):
        return self.indices.ndim - 2

    @property
    def n_sparse(self):
        return self.indices.shape[-1]

    @property
    def n_dense(self):
        return self.data.ndim - 1 - self.n_batch


    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
        mat = mat.tocoo()
        indices = np.column_stack((mat.row, mat.col)).astype(index_dtype or np.int32)
        return cls((jnp.asarray(mat.data), jnp.asarray(indices)), shape=mat.shape)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        shape = tuple(shape)
        n_sparse = len(shape) - n_dense - n_batch
        if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
            raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, "
                             f"n_batch={n_batch}, nse={nse}")
        batch, sp, dense = shape[:n_batch], shape[n_batch:n_batch + n_sparse], \
            shape[n_batch + n_sparse:]
        data = jnp.zeros((*batch, nse, *dense), dtype)
        indices = jnp.broadcast_to(_sparse_fill(sp, np.dtype(index_dtype)),
                                   (*batch, nse, n_sparse))
        return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
        if n_batch or n_dense:
            return cls.fromdense(jnp.eye(N, M, k, dtype=dtype), n_batch=n_batch,
                                 n_dense=n_dense, index_dtype=index_dtype)
        size = min(N, M - k) if k > 0 else min(N + k, M)
        if size <= 0:
            return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
        i = np.arange(size)
        rows, cols = (i, i + k) if k >= 0 else (i - k, i)
        indices = np.stack([rows, cols], axis=1).astype(np.dtype(index_dtype))
        return cls((jnp.ones(size, dtype), jnp.asarray(indices)), shape=(N, M),
                   indices_sorted=True, unique_indices=True)

    def update_layout(self, *, n_batch=None, n_dense=None, on_inefficient="error"):
        return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense,
                                  on_inefficient=on_inefficient)

    def sum_duplicates(self, nse=None, remove_zeros=True):
        if remove_zeros:
            return bcoo_eliminate_zeros(self, nse=nse)
        return bcoo_sum_duplicates(self, nse=nse)

    def sort_indices(self):
        return bcoo_sort_indices(self)

    def todense(self):
        return bcoo_todense(self)

    def transpose(self, axes=None):
        perm = list(range(self.ndim))[::-1] if axes is None else list(axes)
        return bcoo_transpose(self, permutation=perm)

    def tree_flatten(self):
        return (self.data, self.indices), {"shape": self.shape,
                                           "indices_sorted": self.indices_sorted,
                                           "unique_indices": self.unique_indices}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        if aux_data.keys() != {"shape", "indices_sorted", "unique_indices"}:
            raise ValueError(f"BCOO.tree_unflatten: invalid aux_data={aux_data}")
        obj.__dict__.update(**aux_data)
        obj.shape = _mapped_shape(obj.shape, obj.data, obj.indices, "BCOO", 2)
        return obj


# -- BCSR ---------------------------------------------------------------------------------


def _csr_to_coo(indices, indptr):
    """The row of each stored element of a CSR layout."""
    nse = indices.shape[-1]
    pos = jnp.arange(nse, dtype=indptr.dtype)
    return (jnp.searchsorted(indptr[1:], pos, side="right")).astype(indices.dtype)


@tree_util.register_pytree_node_class
class BCSR(JAXSparse):
    """JAX's batched-CSR sparse array: `BCSR((data, indices, indptr),
    shape=...)`, two sparse dimensions (rows compressed)."""

    def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
        data, indices, indptr = args
        self.data, self.indices, self.indptr = map(jnp.asarray, (data, indices, indptr))
        self.indices_sorted = bool(indices_sorted)
        self.unique_indices = bool(unique_indices)
        super().__init__(args, shape=shape)
        nb = self.indices.ndim - 1
        if self.ndim - nb - self.n_dense < 2 or self.indptr.shape[-1] != self.shape[nb] + 1:
            raise ValueError(f"Invalid BCSR layout: data {self.data.shape}, indices "
                             f"{self.indices.shape}, indptr {self.indptr.shape} for shape "
                             f"{self.shape}")

    @property
    def _bufs(self):
        return (self.data, self.indices, self.indptr)

    @property
    def nse(self):
        return self.indices.shape[-1]

    @property
    def n_batch(self):
        return self.indices.ndim - 1

    @property
    def n_sparse(self):
        return 2

    @property
    def n_dense(self):
        return self.data.ndim - self.indices.ndim


    def _to_bcoo(self):
        nb = self.n_batch
        rows = _nfold_vmap(_csr_to_coo, nb)(self.indices, self.indptr) if nb else \
            _csr_to_coo(self.indices, self.indptr)
        idx = jnp.stack([rows, self.indices], axis=-1)
        return BCOO((self.data, idx), shape=self.shape, indices_sorted=self.indices_sorted,
                    unique_indices=self.unique_indices)

    @classmethod
    def _from_bcoo(cls, mat):
        if mat.n_sparse != 2:
            raise ValueError(f"BCSR needs two sparse dimensions, got n_sparse={mat.n_sparse}")
        mat = mat if mat.indices_sorted else bcoo_sort_indices(mat)
        nb = mat.n_batch
        nrows = mat.shape[nb]

        def ptr(i):
            counts = jnp.zeros((nrows + 1,), np.int32).at[i[:, 0]].add(1, mode="drop")
            return jnp.concatenate([jnp.zeros((1,), np.int32), jnp.cumsum(counts[:nrows])]) \
                .astype(i.dtype)

        data, indices = _common_batch(mat.data, mat.indices, mat.shape, nb)
        indptr = _nfold_vmap(ptr, nb)(indices)
        return cls((data, indices[..., 1], indptr), shape=mat.shape, indices_sorted=True,
                   unique_indices=mat.unique_indices)

    from_bcoo = _from_bcoo

    def to_bcoo(self):
        return self._to_bcoo()

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        if n_dense != 0 or n_batch != 0:
            raise NotImplementedError("BCSR.fromscipy with nonzero n_dense/n_batch")
        mat = mat.tocsr()
        it = index_dtype or np.int32
        return cls((jnp.asarray(mat.data), jnp.asarray(mat.indices.astype(it)),
                    jnp.asarray(mat.indptr.astype(it))), shape=mat.shape)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        return cls._from_bcoo(BCOO._empty(shape, dtype=dtype, index_dtype=index_dtype,
                                          n_dense=n_dense, n_batch=n_batch, nse=nse))

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
        return cls._from_bcoo(BCOO._eye(N, M, k, dtype=dtype, index_dtype=index_dtype,
                                        n_batch=n_batch, n_dense=n_dense))

    def todense(self):
        return bcsr_todense(self)

    def sum_duplicates(self, nse=None, remove_zeros=True):
        return bcsr_sum_duplicates(self, nse=nse)

    def transpose(self, *args, **kwargs):
        raise NotImplementedError("Tranpose is not implemented.")

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), {
            "shape": self.shape, "indices_sorted": self.indices_sorted,
            "unique_indices": self.unique_indices}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.__dict__.update(**aux_data)
        obj.shape = _mapped_shape(obj.shape, obj.data, obj.indices, "BCSR", 1)
        return obj


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
    """A BCSR array of a dense array."""
    mat = jnp.asarray(mat)
    if mat.ndim - n_batch - n_dense != 2:
        raise ValueError("bcsr_fromdense: BCSR arrays have two sparse dimensions; got "
                         f"shape {mat.shape} with n_batch={n_batch}, n_dense={n_dense}")
    return BCSR._from_bcoo(bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                          index_dtype=index_dtype))


def bcsr_todense(mat):
    """The dense array of a BCSR array."""
    return bcoo_todense(mat._to_bcoo())


def bcsr_extract(indices, indptr, mat):
    """The values of dense `mat` at a CSR layout's positions."""
    mat = jnp.asarray(mat)
    nb = jnp.asarray(indices).ndim - 1
    rows = _nfold_vmap(_csr_to_coo, nb)(indices, indptr) if nb else _csr_to_coo(indices, indptr)
    return _extract(jnp.stack([rows, jnp.asarray(indices)], axis=-1), mat)


def bcsr_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
    """`lax.dot_general` with BCSR operands (through their BCOO form)."""
    conv = lambda x: x._to_bcoo() if isinstance(x, BCSR) else x  # noqa: E731
    out = bcoo_dot_general(conv(lhs), conv(rhs), dimension_numbers=dimension_numbers,
                           preferred_element_type=preferred_element_type)
    return BCSR._from_bcoo(out) if isinstance(out, BCOO) else out


def bcsr_sum_duplicates(mat, nse=None):
    return BCSR._from_bcoo(bcoo_sum_duplicates(mat._to_bcoo(), nse=nse))


def bcsr_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
    return BCSR._from_bcoo(bcoo_broadcast_in_dim(mat._to_bcoo(), shape=shape,
                                                 broadcast_dimensions=broadcast_dimensions))


def bcsr_concatenate(operands, *, dimension):
    return BCSR._from_bcoo(bcoo_concatenate([o._to_bcoo() for o in operands],
                                            dimension=dimension))


# -- COO, CSR and CSC (JAX's reference formats: 2-d, no batching) ------------------


def _matrix_nse(mat, nse):
    if nse is None:
        nse = (mat != 0).sum()
    return _concrete_int(nse, "The error arose for the nse argument of fromdense: pass a "
                         "concrete nse under tracing.")


def _nonzeros(mat, nse):
    """(data, row, col) of a matrix's first `nse` nonzeros in row-major
    order; unused slots are (0, 0, 0), as JAX's COO and CSR pad."""
    if mat.ndim != 2:
        raise ValueError(f"expected a matrix, got shape {mat.shape}")
    row, col = jnp.nonzero(mat, size=nse)
    keep = jnp.arange(nse) < (mat != 0).sum()
    return jnp.where(keep, mat[row, col], jnp.zeros((), mat.dtype)), row, col, keep


def _matrix_matmul(self, other, as_bcoo):
    if isinstance(other, JAXSparse):
        raise NotImplementedError("matmul between two sparse objects.")
    other = jnp.asarray(other)
    if other.ndim not in (1, 2):
        raise NotImplementedError(f"matmul with object of shape {other.shape}")
    dt = jnp.promote_types(self.dtype, other.dtype)
    m = as_bcoo()
    m = BCOO((m.data.astype(dt), m.indices), shape=m.shape)
    return bcoo_dot_general(m, other.astype(dt), dimension_numbers=(((1,), (0,)), ((), ())))


def _matrix_unflatten(cls, names, aux_data, children):
    obj = object.__new__(cls)
    for n, c in zip(names, children):
        setattr(obj, n, c)
    if set(aux_data) - {"shape", "rows_sorted", "cols_sorted"}:
        raise ValueError(f"{cls.__name__}.tree_unflatten: invalid aux_data={aux_data}")
    obj.shape = tuple(aux_data["shape"])
    obj._rows_sorted = aux_data.get("rows_sorted", False)
    obj._cols_sorted = aux_data.get("cols_sorted", False)
    return obj


@tree_util.register_pytree_node_class
class COO(JAXSparse):
    """JAX's reference COO matrix: `COO((data, row, col), shape=)`."""

    def __init__(self, args, *, shape, rows_sorted=False, cols_sorted=False):
        self.data, self.row, self.col = map(jnp.asarray, args)
        self._rows_sorted, self._cols_sorted = rows_sorted, cols_sorted
        super().__init__(args, shape=shape)

    @property
    def _bufs(self):
        return (self.data, self.row, self.col)

    @property
    def nse(self):
        return self.data.size

    def _bcoo(self):
        return BCOO((self.data, jnp.stack([self.row, self.col], axis=1)), shape=self.shape)

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        mat = jnp.asarray(mat)
        data, row, col, _ = _nonzeros(mat, _matrix_nse(mat, nse))
        return cls((data, row.astype(index_dtype), col.astype(index_dtype)), shape=mat.shape,
                   rows_sorted=True)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        shape = tuple(shape)
        if len(shape) != 2:
            raise ValueError(f"COO must have ndim=2; got shape={shape}")
        idx = jnp.zeros((0,), index_dtype)
        return cls((jnp.zeros((0,), dtype), idx, idx), shape=shape, rows_sorted=True,
                   cols_sorted=True)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        e = BCOO._eye(N, M, k, dtype=dtype, index_dtype=index_dtype)
        if e.nse == 0:
            return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
        return cls((e.data, e.indices[:, 0], e.indices[:, 1]), shape=(N, M),
                   rows_sorted=True, cols_sorted=True)

    def _sort_indices(self):
        if self._rows_sorted:
            return self
        perm = jnp.lexsort((self.col, self.row))
        return COO((self.data[perm], self.row[perm], self.col[perm]), shape=self.shape,
                   rows_sorted=True)

    def todense(self):
        return bcoo_todense(self._bcoo())

    def transpose(self, axes=None):
        if axes is not None:
            raise NotImplementedError("axes argument to transpose()")
        return COO((self.data, self.col, self.row), shape=self.shape[::-1],
                   rows_sorted=self._cols_sorted, cols_sorted=self._rows_sorted)

    def __matmul__(self, other):
        return _matrix_matmul(self, other, self._bcoo)

    def tree_flatten(self):
        return (self.data, self.row, self.col), {"shape": self.shape,
                                                 "rows_sorted": self._rows_sorted,
                                                 "cols_sorted": self._cols_sorted}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return _matrix_unflatten(cls, ("data", "row", "col"), aux_data, children)


def _compressed(mat, nse, index_dtype):
    """(data, indices, indptr) of JAX's CSR form of a matrix."""
    data, row, col, keep = _nonzeros(mat, nse)
    m = mat.shape[0]
    row = jnp.where(keep, row, m)
    counts = jnp.zeros((m + 1,), np.int32).at[row].add(1)[:m]
    indptr = jnp.concatenate([jnp.zeros((1,), np.int32), jnp.cumsum(counts)])
    return data, col.astype(index_dtype), indptr.astype(index_dtype)


class _CompressedMatrix(JAXSparse):
    """CSR and CSC: `(data, indices, indptr)` over rows (CSR) or columns."""

    def __init__(self, args, *, shape):
        self.data, self.indices, self.indptr = map(jnp.asarray, args)
        super().__init__(args, shape=shape)

    @property
    def _bufs(self):
        return (self.data, self.indices, self.indptr)

    @property
    def nse(self):
        return self.data.size

    def _rows_bcoo(self, shape):
        """The BCOO array of the compressed form read as rows of `shape`."""
        rows = _csr_to_coo(self.indices, self.indptr)
        return BCOO((self.data, jnp.stack([rows, self.indices], axis=1)), shape=shape)

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), {"shape": self.shape}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return _matrix_unflatten(cls, ("data", "indices", "indptr"), aux_data, children)


@tree_util.register_pytree_node_class
class CSR(_CompressedMatrix):
    """JAX's reference CSR matrix: `CSR((data, indices, indptr), shape=)`."""

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        mat = jnp.asarray(mat)
        return cls(_compressed(mat, _matrix_nse(mat, nse), index_dtype), shape=mat.shape)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        shape = tuple(shape)
        if len(shape) != 2:
            raise ValueError(f"CSR must have ndim=2; got shape={shape}")
        return cls((jnp.zeros((0,), dtype), jnp.zeros((0,), index_dtype),
                    jnp.zeros((shape[0] + 1,), index_dtype)), shape=shape)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        e = BCSR._eye(N, M, k, dtype=dtype, index_dtype=index_dtype)
        return cls((e.data, e.indices, e.indptr), shape=(N, M))

    def todense(self):
        return bcoo_todense(self._rows_bcoo(self.shape))

    def transpose(self, axes=None):
        assert axes is None
        return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def __matmul__(self, other):
        return _matrix_matmul(self, other, lambda: self._rows_bcoo(self.shape))


@tree_util.register_pytree_node_class
class CSC(_CompressedMatrix):
    """JAX's reference CSC matrix: `CSC((data, indices, indptr), shape=)`
    (the CSR form of its transpose)."""

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        mat = jnp.asarray(mat)
        return CSR.fromdense(mat.T, nse=nse, index_dtype=index_dtype).T

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        return CSR._empty(tuple(shape)[::-1], dtype=dtype, index_dtype=index_dtype).T

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T

    def todense(self):
        return self.T.todense().T

    def transpose(self, axes=None):
        assert axes is None
        return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    def __matmul__(self, other):
        return _matrix_matmul(self, other,
                              lambda: self._rows_bcoo(self.shape[::-1]).transpose())


# -- api ------------------------------------------------------------------------------------


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    pass


def coo_fromdense(mat, *, nse=None, index_dtype=np.int32):
    """A COO matrix of a dense one."""
    return COO.fromdense(mat, nse=nse, index_dtype=index_dtype)


def coo_todense(mat):
    """The dense form of a COO matrix."""
    return mat.todense()


def _matrix_product(mat, other, transpose, ndim):
    other = jnp.asarray(other)
    if other.ndim != ndim:
        raise ValueError(f"expected a {ndim}-d operand, got shape {other.shape}")
    return (mat.T if transpose else mat) @ other


def coo_matvec(mat, v, transpose=False):
    """COO matrix (or its transpose) times a vector."""
    return _matrix_product(mat, v, transpose, 1)


def coo_matmat(mat, B, *, transpose=False):
    """COO matrix (or its transpose) times a matrix."""
    return _matrix_product(mat, B, transpose, 2)


def csr_fromdense(mat, *, nse=None, index_dtype=np.int32):
    """A CSR matrix of a dense one."""
    return CSR.fromdense(mat, nse=nse, index_dtype=index_dtype)


def csr_todense(mat):
    """The dense form of a CSR matrix."""
    return mat.todense()


def csr_matvec(mat, v, transpose=False):
    """CSR matrix (or its transpose) times a vector."""
    return _matrix_product(mat, v, transpose, 1)


def csr_matmat(mat, B, *, transpose=False):
    """CSR matrix (or its transpose) times a matrix."""
    return _matrix_product(mat, B, transpose, 2)


_FORMATS = {"bcoo": BCOO, "bcsr": BCSR, "coo": COO, "csr": CSR, "csc": CSC}


def todense(arr):
    """The dense form of a sparse array (dense arrays pass through)."""
    if isinstance(arr, JAXSparse):
        return arr.todense()
    return arr


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """An all-zero sparse array."""
    cls = _FORMATS.get(sparse_format)
    if cls is None:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized")
    return cls._empty(shape, dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A sparse identity matrix (ones on the k-th diagonal)."""
    cls = _FORMATS.get(sparse_format)
    if cls is None:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized")
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    return cls._eye(N, M, operator.index(k), dtype=dtype, index_dtype=index_dtype, **kwds)


# -- sparse-aware differentiation -------------------------------------------------------


def _is_sparse(x):
    return isinstance(x, JAXSparse)


def _sparse_ad(transform, fun, argnums, **kw):
    """`transform` (grad, value_and_grad, jacfwd, jacrev) taken with respect
    to the data of sparse arguments: the result for a sparse argument is a
    sparse array of its sparsity pattern (JAX's sparse AD)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def wrapped(*args, **kwargs):
        parts = []  # per argument: (sparse?, its leaves, tree)
        flat_args, flat_nums = [], []
        for i, a in enumerate(args):
            leaves, tree = tree_util.tree_flatten(a, is_leaf=_is_sparse)
            parts.append((leaves, tree))
            for leaf in leaves:
                if _is_sparse(leaf):
                    kids, aux = leaf.tree_flatten()
                    if i in nums:
                        flat_nums.append(len(flat_args))
                    flat_args.extend(kids)
                else:
                    if i in nums:
                        flat_nums.append(len(flat_args))
                    flat_args.append(leaf)

        def rebuild(flat):
            it, out = iter(flat), []
            for leaves, tree in parts:
                new = []
                for leaf in leaves:
                    if _is_sparse(leaf):
                        kids, aux = leaf.tree_flatten()
                        new.append(type(leaf).tree_unflatten(aux, [next(it) for _ in kids]))
                    else:
                        new.append(next(it))
                out.append(tree_util.tree_unflatten(tree, new))
            return out

        def flat_fun(*flat):
            return fun(*rebuild(flat), **kwargs)

        result = transform(flat_fun, argnums=tuple(flat_nums), **kw)(*flat_args)

        def post(grads):
            it, out = iter(grads), []
            for i, (leaves, tree) in enumerate(parts):
                if i not in nums:
                    continue
                new = []
                for leaf in leaves:
                    g = next(it)
                    if _is_sparse(leaf):
                        kids, aux = leaf.tree_flatten()

                        def make(gd, kids=kids, aux=aux, leaf=leaf):
                            return type(leaf).tree_unflatten(aux, [gd, *kids[1:]])

                        for _ in range(g.ndim - kids[0].ndim):
                            make = vmap(make)
                        new.append(make(g))
                    else:
                        new.append(g)
                out.append(tree_util.tree_unflatten(tree, new))
            return out[0] if isinstance(argnums, int) else tuple(out)

        has_aux = kw.get("has_aux", False)
        if transform.__name__ == "value_and_grad":
            (val, grads) = result
            return val, post(grads)
        if has_aux:
            return post(result[0]), result[1]
        return post(result)

    return wrapped


def grad(fun, argnums=0, has_aux=False, **kwargs):
    """Sparse-aware `grad`: with respect to a sparse array, the gradient on
    its sparsity pattern."""
    from . import ad

    return _sparse_ad(ad.grad, fun, argnums, has_aux=has_aux, **kwargs)


def value_and_grad(fun, argnums=0, has_aux=False, **kwargs):
    """Sparse-aware `value_and_grad`."""
    from . import ad

    return _sparse_ad(ad.value_and_grad, fun, argnums, has_aux=has_aux, **kwargs)


def jacfwd(fun, argnums=0, has_aux=False, **kwargs):
    """Sparse-aware `jacfwd`."""
    from . import ad

    return _sparse_ad(ad.jacfwd, fun, argnums, has_aux=has_aux, **kwargs)


def jacrev(fun, argnums=0, has_aux=False, **kwargs):
    """Sparse-aware `jacrev`."""
    from . import ad

    return _sparse_ad(ad.jacrev, fun, argnums, has_aux=has_aux, **kwargs)


jacobian = jacrev

"""`sparsify`: JAX's transformation that runs a function written for dense
arrays on sparse (`BCOO`, `BCSR`) arguments.

JAX interprets the function's jaxpr with a sparse rule per primitive. Ember's
traced program is MLIR, so `sparsify(f)(*args)` traces `f` with each sparse
argument standing in as a dense array of its shape, expands the
transformations (`ember-transforms`, so `grad` inside `f` is plain ops), and
evaluates that program op by op inside a `jit` trace: an op with no sparse
operand is copied as it is (regions and all); an op with a sparse operand
goes through its sparse rule (written with `ember.experimental.sparse`'s
functions, so the result is sparse, or dense where JAX's rule gives a dense
array); an op with no rule raises JAX's `NotImplementedError` (design.md,
"Sparse arrays").
"""

import functools

import numpy as np

from ember._mlir import ir

from . import api, compiler, core, export, sparse, tree_util
from .numpy import lax_numpy as jnp

# JAX's zero-preserving unary primitives, by their ember op names
# (nonlinear ones first sum duplicate indices, as JAX's rule does).
# (JAX's list, and the zero-preserving erf, erf_inv, round, floor, ceil.)
_UNARY_NONLINEAR = {"abs", "asin", "asinh", "atan", "atanh", "bessel_i1e", "expm1", "log1p",
                    "sign", "sin", "sinh", "sqrt", "tan", "tanh", "integer_pow", "erf",
                    "erf_inv", "round", "floor", "ceil"}
_UNARY_LINEAR = {"neg", "convert", "bitcast_convert", "real", "imag", "conj", "copy",
                 "reduce_precision"}
# Ops whose result would be dense for a sparse operand (JAX's wording).
_DENSIFYING = {"acos", "acosh", "atan2", "cos", "cosh", "exp", "exp2", "log", "logistic",
               "eq", "ne", "ge", "gt", "le", "lt", "pow", "rsqrt", "max", "min",
               "select", "select_n", "and", "or", "xor", "rem", "nextafter", "cbrt",
               "is_finite", "not"}


def _layout(x):
    """What a branch result's type is made of: None for a dense array; for a
    sparse one its buffers' types, shape and index flags."""
    if not isinstance(x, sparse.BCOO):
        return None
    return ((x.data.shape, str(x.data.dtype), x.indices.shape, str(x.indices.dtype)),
            x.shape, x.indices_sorted, x.unique_indices)


def _from_layout(lay, data, indices):
    _, shape, sorted_, unique = lay
    return sparse.BCOO((data, indices), shape=shape, indices_sorted=sorted_,
                       unique_indices=unique)


def _tensor_type(shape, dtype):
    return core.mlir_type(core.ShapedArray(tuple(shape), np.dtype(dtype)))


def _layouts_text(layouts):
    return [None if lay is None else f"BCOO(data {lay[0][0]}, indices {lay[0][2]})"
            for lay in layouts]


class _GatherDims:
    def __init__(self, offset_dims, collapsed_slice_dims, start_index_map,
                 operand_batching_dims):
        self.offset_dims = tuple(offset_dims)
        self.collapsed_slice_dims = tuple(collapsed_slice_dims)
        self.start_index_map = tuple(start_index_map)
        self.operand_batching_dims = tuple(operand_batching_dims or ())


def _prim_name(op):
    """JAX's primitive name for an ember op (`ember.reduce` of kind sum is
    reduce_sum, `ember.compare` GT is gt, ...)."""
    name = op.name.split(".", 1)[-1]
    if name == "reduce":
        return "reduce_" + str(op.attributes["kind"]).rstrip(">").split()[-1]
    if name == "compare":
        return str(op.attributes["comparison_direction"]).rstrip(">").split()[-1].lower()
    return name


def _unimplemented(prim):
    if prim in _DENSIFYING:
        return NotImplementedError(
            f"sparse rule for {prim} is not implemented because it would result in dense "
            "output. If this is your intent, use sparse.todense() to convert your arguments "
            "to dense matrices.")
    return NotImplementedError(f"sparse rule for {prim} is not implemented.")


def _ints(op, name):
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    try:
        return [int(x) for x in ir.DenseI64ArrayAttr(attr)]
    except (TypeError, ValueError):
        pass
    try:
        return [int(x) for x in ir.DenseIntElementsAttr(attr)]
    except (TypeError, ValueError):
        pass
    try:
        return [ir.IntegerAttr(x).value for x in ir.ArrayAttr(attr)]
    except (TypeError, ValueError):
        return None


def _int(op, name):
    return ir.IntegerAttr(op.attributes[name]).value


def _shape(v):
    return tuple(ir.RankedTensorType(v.type).shape)


def _elt(v):
    return ir.RankedTensorType(v.type).element_type


def _unique(x):
    if x.unique_indices or (x.n_sparse == 0 and x.nse == 1):
        return x
    return sparse.bcoo_sum_duplicates(x, nse=x.nse)


class _Evaluator:
    def __init__(self, trace):
        self.trace = trace
        self.sparse = {}  # old value -> BCOO
        # values broadcast from a scalar (JAX's jaxprs keep such operands
        # scalars; its rules tell them apart)
        self.from_scalar = set()

    def tracer(self, v):
        return core.Tracer(self.trace, v, export._aval_of(v))

    def value(self, x):
        return self.trace.to_value(jnp.asarray(x))

    def operand(self, v):
        return self.sparse[v] if v in self.sparse else self.tracer(v)

    def set_result(self, old, new):
        if isinstance(new, sparse.BCOO):
            self.sparse[old] = new
            return
        new = jnp.asarray(new)
        if new.dtype != export._aval_of(old).dtype:
            new = new.astype(export._aval_of(old).dtype)
        old.replace_all_uses_with(self.value(new))

    def run(self, block, args):
        for old, new in zip(block.arguments, args):
            self.set_result(old, new)
        return self._ops(block)

    def _ops(self, block):
        """Evaluates the block's ops; returns its terminator's operands."""
        for op in list(block.operations):
            op = op.operation
            operands = list(op.operands)
            if op.name == "func.return" or (not op.results and op.name.endswith("yield")):
                return [self.operand(v) for v in operands]
            if op.regions and (self._uses_sparse(op) or
                               any(v in self.sparse for v in operands)):
                for old_r, new in zip(op.results, self._region_op(op)):
                    if isinstance(new, sparse.BCOO):
                        self.sparse[old_r] = new
                    else:
                        old_r.replace_all_uses_with(new)
                continue
            if any(v in self.sparse for v in operands):
                outs = self.rule(op, [self.operand(v) for v in operands])
                for old_r, new in zip(op.results, outs):
                    self.set_result(old_r, new)
                continue
            new = export.emit_copy(self.trace, op, operands)
            if op.name == "ember.broadcast_in_dim" and not _shape(operands[0]):
                self.from_scalar.add(new.results[0])
            for old_r, new_r in zip(op.results, new.results):
                old_r.replace_all_uses_with(new_r)
        raise AssertionError("a block without a terminator")

    def _uses_sparse(self, op):
        found = []

        def visit(inner):
            if any(v in self.sparse for v in inner.operands):
                found.append(inner.name)
            return ir.WalkResult.ADVANCE

        for region in op.regions:
            for b in region.blocks:
                for inner in b.operations:
                    inner.operation.walk(visit)
        return bool(found)

    def _region_op(self, op):
        """A copy of an op with regions that sees sparse arrays: a loop or
        branch closing over one, or a `while` carrying one. Each region is
        evaluated into the copy's, sparse rules and all; a sparse carry is
        its data and indices (operands, block arguments, results), and the
        body must give it back in the same layout; branches (`ember.case`)
        may give sparse arrays, as JAX's cond rule allows, when they agree
        on their layouts. Returns the new results, by old result."""
        carried = [_layout(self.sparse.get(v)) for v in op.operands]
        if any(carried) and op.name != "ember.while":
            raise _unimplemented(_prim_name(op))
        flat = []
        for v in op.operands:
            x = self.sparse.get(v)
            flat += [self.value(x.data), self.value(x.indices)] if x is not None else [v]
        holder = export.emit_copy(self.trace, op, flat, result_types=[], move_regions=False)
        branch_layouts = None
        for k, region in enumerate(op.regions):
            for old_block in list(region.blocks):
                args = list(old_block.arguments)
                lays = carried if len(args) == len(carried) else [None] * len(args)
                with self.trace.ctx, ir.Location.unknown():
                    block = holder.regions[k].blocks.append(*[
                        t for a, lay in zip(args, lays)
                        for t in ((_tensor_type(*lay[0][:2]), _tensor_type(*lay[0][2:]))
                                  if lay else (a.type,))])
                sub = core.RegionTrace(self.trace, block)
                core._trace_stack.append(sub)
                try:
                    inner = _Evaluator(sub)
                    inner.sparse, inner.from_scalar = self.sparse, self.from_scalar
                    new_args = iter(block.arguments)
                    for old_a, lay in zip(args, lays):
                        if lay is None:
                            old_a.replace_all_uses_with(next(new_args))
                        else:
                            data, indices = inner.tracer(next(new_args)), \
                                inner.tracer(next(new_args))
                            self.sparse[old_a] = _from_layout(lay, data, indices)
                    term = list(old_block.operations)[-1].operation
                    outs = inner._ops(old_block)
                    layout = [_layout(o) for o in outs]
                    if op.name == "ember.while" and k == 1 and [
                            lay and lay[0] for lay in layout] != [c and c[0] for c in carried]:
                        raise TypeError(
                            "a sparse array carried by a loop must keep its layout, got "
                            f"{_layouts_text(carried)} in and {_layouts_text(layout)} out")
                    if op.name == "ember.case":
                        if branch_layouts is not None and layout != branch_layouts:
                            raise TypeError(
                                "sparsified branches of cond must give sparse arrays of the "
                                f"same layouts, got {_layouts_text(branch_layouts)} and "
                                f"{_layouts_text(layout)}")
                        branch_layouts = layout
                    flat_outs = [v for o in outs for v in (
                        (o.data, o.indices) if isinstance(o, sparse.BCOO) else (o,))]
                    vals = [sub.to_value(jnp.asarray(o)) for o in flat_outs]
                    with sub.ctx, ir.Location.unknown():
                        ir.Operation.create(term.name, operands=vals,
                                            attributes={n: term.attributes[n]
                                                        for n in term.attributes},
                                            ip=ir.InsertionPoint(block))
                finally:
                    core._trace_stack.pop()
        lays = carried if op.name == "ember.while" else (branch_layouts or [])
        if not any(lays):
            lays = [None] * len(op.results)
            types = [r.type for r in op.results]
        elif op.name == "ember.while":
            types = [v.type for v in flat]
        else:
            types = [v.type for v in list(holder.regions[0].blocks[0].operations)[-1].operands]
        new = export.emit_copy(self.trace, holder, flat, result_types=types)
        holder.erase()
        results, it = [], iter(new.results)
        for lay in lays:
            if lay is None:
                results.append(next(it))
            else:
                data, indices = self.tracer(next(it)), self.tracer(next(it))
                results.append(_from_layout(lay, data, indices))
        return results

    def _unary(self, op, x):
        operand = self.value(x.data)
        with self.trace.ctx, ir.Location.unknown():
            ty = ir.RankedTensorType.get(list(x.data.shape), _elt(op.results[0]))
        data = self.tracer(export.emit_copy(self.trace, op, [operand], [ty]).results[0])
        return sparse.BCOO((data, x.indices), shape=x.shape, indices_sorted=x.indices_sorted,
                           unique_indices=x.unique_indices)

    def rule(self, op, args):
        name = _prim_name(op)
        sp = [isinstance(a, sparse.BCOO) for a in args]
        out_shape = _shape(op.results[0]) if op.results else None
        if name in _UNARY_LINEAR or name in _UNARY_NONLINEAR:
            (x,) = args
            if name == "integer_pow" and _int(op, "y") <= 0:
                raise NotImplementedError(
                    f"sparse rule for integer_pow with non-positive exponent {_int(op, 'y')} "
                    "is not implemented because it would result in dense output. If this is "
                    "your intent, use sparse.todense() to convert your argument to a dense "
                    "array.")
            return [self._unary(op, x if name in _UNARY_LINEAR else _unique(x))]
        if name == "mul":
            x, y = args
            if sp[0] and sp[1]:
                if x.indices is y.indices and x.unique_indices:
                    return [sparse.BCOO((x.data * y.data, x.indices), shape=x.shape,
                                        indices_sorted=x.indices_sorted, unique_indices=True)]
                return [sparse.bcoo_multiply_sparse(x, y)]
            if sp[1]:
                x, y = y, x
            return [sparse.BCOO((sparse.bcoo_multiply_dense(x, y), x.indices), shape=x.shape,
                                indices_sorted=x.indices_sorted,
                                unique_indices=x.unique_indices)]
        if name == "div":
            x, y = args
            if sp[1]:
                raise NotImplementedError(
                    "Division by a sparse array is not implemented because it would result "
                    "in dense output. If this is your intent, use sparse.todense() to "
                    "convert your arguments to a dense array.")
            return [sparse.BCOO((sparse.bcoo_multiply_dense(x, 1.0 / y), x.indices),
                                shape=x.shape, indices_sorted=x.indices_sorted,
                                unique_indices=x.unique_indices)]
        if name in ("add", "sub"):
            x, y = args
            if name == "sub":
                if not (sp[0] and sp[1]):
                    raise NotImplementedError("Subtraction between sparse and dense array.")
                y = sparse.BCOO((-y.data, y.indices), shape=y.shape,
                                indices_sorted=y.indices_sorted, unique_indices=y.unique_indices)
            if sp[0] and sp[1]:
                if x.shape != y.shape:
                    raise NotImplementedError("Addition between sparse matrices of different "
                                              "shapes.")
                if x.indices is y.indices:
                    return [sparse.BCOO((x.data + y.data, x.indices), shape=x.shape,
                                        indices_sorted=x.indices_sorted,
                                        unique_indices=x.unique_indices)]
                if x.indices.ndim != y.indices.ndim or x.data.ndim != y.data.ndim:
                    raise NotImplementedError("Addition between sparse matrices with "
                                              "different batch/dense dimensions.")
                nb = x.n_batch
                return [sparse.BCOO((jnp.concatenate([x.data, y.data], axis=nb),
                                     jnp.concatenate([x.indices, y.indices], axis=nb)),
                                    shape=x.shape)]
            if sp[1]:
                x, y = y, x
            if tuple(y.shape) != tuple(out_shape) or \
                    any(v in self.from_scalar for v in op.operands):
                raise NotImplementedError(
                    "Addition between a sparse array X and a dense array Y is not implemented "
                    "when the output shape is larger than Y.shape. This is to prevent silent "
                    "densification of a large sparse array. If this is your intent, you can "
                    "explicitly cast the sparse array to a dense matrix.")
            return [x.todense() + y]
        if name == "dot_general":
            lc, rc, lb, rb = (_ints(op, f"{side}_{what}_dimensions")
                              for what in ("contracting", "batching") for side in ("lhs", "rhs"))
            out_dtype = export._aval_of(op.results[0]).dtype
            return [sparse.bcoo_dot_general(args[0], args[1],
                                            dimension_numbers=((lc, rc), (lb or [], rb or [])),
                                            preferred_element_type=out_dtype)]
        if name == "reduce_sum":
            (x,) = args
            axes = _ints(op, "dimensions")
            out = sparse.bcoo_reduce_sum(x, axes=axes)
            if out.shape == ():
                return [out.data.sum()]
            return [out]
        if name == "transpose":
            return [sparse.bcoo_transpose(args[0], permutation=_ints(op, "permutation"))]
        if name == "reshape":
            x = args[0]
            old = [d for d in x.shape if d != 1]
            if old == [d for d in out_shape if d != 1] and len(out_shape) > x.ndim:
                # inserting dimensions of size 1 (jnp's expand_dims): JAX's
                # broadcast_in_dim
                dims, k = [], 0
                for d in range(len(out_shape)):
                    if k < x.ndim and (out_shape[d] == x.shape[k]) and \
                            (out_shape[d] != 1 or _is_kept_one(x.shape, out_shape, k, d)):
                        dims.append(d)
                        k += 1
                if len(dims) == x.ndim:
                    return [sparse.bcoo_broadcast_in_dim(x, shape=out_shape,
                                                         broadcast_dimensions=dims)]
            if old == [d for d in out_shape if d != 1] and len(out_shape) < x.ndim and \
                    all(d != 1 for d in out_shape):
                return [sparse.bcoo_squeeze(
                    x, dimensions=[i for i, d in enumerate(x.shape) if d == 1])]
            return [sparse.bcoo_reshape(x, new_sizes=out_shape)]
        if name == "broadcast_in_dim":
            return [sparse.bcoo_broadcast_in_dim(
                args[0], shape=out_shape, broadcast_dimensions=_ints(op, "broadcast_dimensions"))]
        if name == "slice":
            return [sparse.bcoo_slice(args[0], start_indices=_ints(op, "start_indices"),
                                      limit_indices=_ints(op, "limit_indices"),
                                      strides=_ints(op, "strides"))]
        if name == "dynamic_slice":
            return [sparse.bcoo_dynamic_slice(args[0], [a for a in args[1:]],
                                              _ints(op, "slice_sizes"))]
        if name == "gather":
            x, idx = args
            ivd = _int(op, "index_vector_dim")
            if ivd == idx.ndim:
                idx = idx[..., None]
            elif ivd != idx.ndim - 1:
                idx = jnp.moveaxis(idx, ivd, -1)
            dn = _GatherDims(_ints(op, "offset_dims"), _ints(op, "collapsed_slice_dims"),
                             _ints(op, "start_index_map"), _ints(op, "operand_batching_dims"))
            mode = str(op.attributes["mode"]).rstrip(">").split()[-1]
            out = sparse.bcoo_gather(x, idx, dn, _ints(op, "slice_sizes"), mode=mode)
            return [out if tuple(out.shape) == tuple(out_shape)
                    else sparse.bcoo_reshape(out, new_sizes=out_shape)]
        if name == "concatenate":
            if not all(sp):
                raise NotImplementedError("sparse rule for concatenate of sparse and dense "
                                          "arrays is not implemented.")
            return [sparse.bcoo_concatenate(args, dimension=_int(op, "dimension"))]
        if name == "reverse":
            return [sparse.bcoo_rev(args[0], _ints(op, "dimensions"))]
        if name == "squeeze":
            return [sparse.bcoo_squeeze(args[0], dimensions=_ints(op, "dimensions"))]
        raise _unimplemented(name)


def _is_kept_one(old_shape, new_shape, k, d):
    """Whether the size-1 dimension k of `old_shape` lands at d of
    `new_shape` (the size-1 dimensions left after it fit after d)."""
    return sum(1 for s in old_shape[k:] if s == 1) <= sum(1 for s in new_shape[d:] if s == 1) \
        and sum(1 for s in old_shape[k:] if s != 1) == sum(1 for s in new_shape[d:] if s != 1)


def _is_sparse(x):
    return isinstance(x, sparse.JAXSparse)


def sparsify(f, use_tracer=False):
    """JAX's `sparsify`: `f` taking sparse arrays where it took dense ones."""

    @functools.wraps(f)
    def wrapped(*args, **kwargs):
        leaves, treedef = tree_util.tree_flatten((args, kwargs), is_leaf=_is_sparse)
        if not any(_is_sparse(x) for x in leaves):
            return f(*args, **kwargs)
        # BCSR arrays are evaluated as BCOO arrays; results stay BCOO (as JAX's
        # BCSR rules give for most ops).
        for x in leaves:
            if _is_sparse(x) and not isinstance(x, (sparse.BCOO, sparse.BCSR)):
                raise NotImplementedError(f"sparsify of {type(x).__name__} arrays: "
                                          "convert them to BCOO or BCSR first")
        leaves = [x._to_bcoo() if isinstance(x, sparse.BCSR) else x for x in leaves]
        stand_in = [core.ShapeDtypeStruct(x.shape, x.dtype) if _is_sparse(x) else x
                    for x in leaves]
        out_tree = []

        def flat(*dense_leaves):
            a, k = tree_util.tree_unflatten(treedef, list(dense_leaves))
            out = f(*a, **k)
            o, t = tree_util.tree_flatten(out)
            out_tree.append(t)
            return o

        avals = [core.ShapedArray(x.shape, x.dtype) if isinstance(x, core.ShapeDtypeStruct)
                 else core.as_value(x).aval for x in stand_in]
        captured = []  # (tracers of enclosing traces that f closes over)
        module, _ = core.trace_function(flat, avals, captured=captured)
        text = str(module)
        bufs, specs = [], []
        for x in leaves:
            if _is_sparse(x):
                kids, aux = x.tree_flatten()
                specs.append((type(x), aux, len(kids)))
                bufs.extend(kids)
            else:
                specs.append(None)
                bufs.append(x)
        out_specs = []

        def run(*flat_bufs):
            it = iter(flat_bufs)
            vals = []
            for s in specs:
                if s is None:
                    vals.append(next(it))
                else:
                    cls, aux, n = s
                    vals.append(cls.tree_unflatten(aux, [next(it) for _ in range(n)]))
            trace = core.current_trace()
            with core.context():
                mod = ir.Module.parse(text)
                from .stablehlo_out import transformation_ops

                if transformation_ops(mod):
                    compiler.run_pipeline(mod, upto="transforms")
            export.adopt_functions(mod, trace)
            main = mod.body.operations[0].operation
            outs = _Evaluator(trace).run(main.regions[0].blocks[0], vals + list(it))
            out_specs.append([type(o) if _is_sparse(o) else None for o in outs])
            return outs

        outs = api.jit(run)(*bufs, *captured)
        return tree_util.tree_unflatten(out_tree[0], outs)

    return wrapped


def _swap(f):
    return lambda a, b: f(b, a)


def _install_methods():
    from .numpy import lax_numpy as np_

    def _sum(self, *a, **k):
        return sparsify(lambda x: x.sum(*a, **k))(self)

    def _reshape(self, *a, **k):
        return sparsify(lambda x: x.reshape(*a, **k))(self)

    def _astype(self, *a, **k):
        return sparsify(lambda x: x.astype(*a, **k))(self)

    def _getitem(self, idx):
        return sparsify(lambda x: x[idx])(self)

    def _pow(self, y):
        return sparsify(lambda x: np_.power(x, y))(self)

    methods = {
        "sum": _sum, "reshape": _reshape, "astype": _astype, "__getitem__": _getitem,
        "__abs__": sparsify(np_.abs), "__neg__": sparsify(np_.negative),
        "__pos__": sparsify(np_.positive), "__matmul__": sparsify(np_.matmul),
        "__rmatmul__": sparsify(_swap(np_.matmul)), "__mul__": sparsify(np_.multiply),
        "__rmul__": sparsify(_swap(np_.multiply)), "__truediv__": sparsify(np_.divide),
        "__rtruediv__": sparsify(_swap(np_.divide)), "__add__": sparsify(np_.add),
        "__radd__": sparsify(_swap(np_.add)), "__sub__": sparsify(np_.subtract),
        "__rsub__": sparsify(_swap(np_.subtract)), "__pow__": _pow,
        "__iter__": lambda self: iter(self[i] for i in range(self.shape[0])),
        "__gt__": sparsify(np_.greater), "__ge__": sparsify(np_.greater_equal),
        "__lt__": sparsify(np_.less), "__le__": sparsify(np_.less_equal),
        "__eq__": sparsify(np_.equal), "__ne__": sparsify(np_.not_equal),
    }
    for name, impl in methods.items():
        setattr(sparse.BCOO, name, impl)
    for name in ("__matmul__", "__rmatmul__", "__getitem__"):
        setattr(sparse.BCSR, name, methods[name])


_install_methods()

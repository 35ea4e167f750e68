"""One compiled program for every size of a symbolic export (#20 item 2;
design.md, "One compile for every size").

The `ember` dialect is statically shaped (a trace builds every type at its
witness sizes: design.md, "Symbolic dimensions"), so dynamic shapes enter
after `ember-to-linalg`, where the program is upstream ops that take `?`
dimensions. `DynamicExecutable` lowers the program to linalg at three sets
of sizes (distinct primes, so that no lowering specializes for a divisor or
a size of one); `generalize` checks that the lowered programs are the same
but for their sizes, fits each size and constant that differs as an affine
function of the dimension variables, and rewrites the first program:

- a value whose shape varies gets `?` in those dimensions (results, block
  arguments, function types);
- ops that take the sizes of their result (`tensor.empty`, `memref.alloc`,
  a splat constant) get them as operands, `tensor.expand_shape` its output
  shape, slices their offsets, sizes and strides;
- a constant that varies (a loop bound, a size passed to the runtime's
  GEMM, the count of a mean, a bound of a gather) becomes its expression;
- a `linalg.generic` input read at an offset that varies (a reverse) is
  read in the body with `tensor.extract`;
- each function reads the variables from its arguments (`tensor.dim`).

`outputs_as_arguments` gives `main` the runtime's calling convention, the
rest of the CPU pipeline (fusion, bufferization, loops, LLVM) runs on the
dynamic program, and the runtime calls it with each call's shapes
(`Kernel.call_shaped`). Anything else that differs between the lowered
programs (an attribute, a non-affine size, a function without an argument
of a variable's size) is a `NotImplementedError` saying what;
`Exported.call` then compiles per set of sizes, as before.
"""

import math

from ember._mlir import ir, passmanager

from . import compilation_cache, compiler, shape_poly
from .context import compile_lock, context

# Sizes the program is lowered at: distinct primes (no divisor, no size of
# one) from 1009 up, or the largest ones a bounded variable allows.
_LEAST = 1009
_DYNAMIC = ir.ShapedType.get_dynamic_size()


def _is_prime(n):
    return n >= 2 and all(n % d for d in range(2, math.isqrt(n) + 1))


def _primes(lo, hi, count, largest, skip):
    """`count` primes in [lo, hi] not in `skip`, the largest or the
    smallest, or None."""
    out = []
    n = hi if largest else lo
    while lo <= n <= hi and len(out) < count:
        if n not in skip and _is_prime(n):
            out.append(n)
        n += -1 if largest else 1
    return out if len(out) == count else None


def sample_envs(scope):
    """The variables' names and the sizes to lower at: [base, base with
    variable i moved (one per variable), check], each variable's three
    values distinct primes: from 1009 up (the first variable 1009, 1013,
    ...), above its lower bound if that is higher, or the largest below an
    upper bound (at least 5: sizes this small may lower differently, which
    the fit then finds). NotImplementedError where that cannot be done
    (bounds too tight, constraints the samples break)."""
    names = list(scope.vars)
    if any("==" in c for c in scope._constraint_texts):
        raise NotImplementedError("equality constraints between the dimension variables")
    taken, values = set(), {}
    for v in names:
        lo, hi = scope.bounds.get(v, (1, math.inf))
        vals = (_primes(max(int(lo), _LEAST), 2 ** 31, 3, False, taken) if math.isinf(hi)
                else _primes(max(int(lo), 5), int(hi), 3, True, taken))
        if vals is None:
            raise NotImplementedError(f"the bounds of the dimension variable {v!r}")
        taken.update(vals)
        values[v] = vals
    base = {v: values[v][0] for v in names}
    moved = [{**base, v: values[v][1]} for v in names]
    check = {v: values[v][2] for v in names}
    envs = [base, *moved, check]
    for c in scope.constraints:
        if any(shape_poly.evaluate(c, env) < 0 for env in envs):
            raise NotImplementedError("the scope's constraints")
    return names, envs


class _Affine:
    """c0 + sum(coefs[v] * v) over the variables."""

    def __init__(self, c0, coefs):
        self.c0, self.coefs = c0, coefs

    def is_var(self):
        """The variable this is, or None."""
        nz = [v for v, a in self.coefs.items() if a]
        return nz[0] if self.c0 == 0 and len(nz) == 1 and self.coefs[nz[0]] == 1 else None


class _Fitter:
    def __init__(self, names, envs):
        self.names, self.envs = names, envs

    def fit(self, values, what):
        """The int all `values` are (one per env), or their _Affine."""
        v0 = values[0]
        if all(v == v0 for v in values):
            return v0
        if not all(isinstance(v, int) for v in values):
            raise NotImplementedError(f"{what} varies with the sizes and is not an integer")
        base = self.envs[0]
        coefs = {}
        for i, n in enumerate(self.names):
            step = self.envs[1 + i][n] - base[n]
            moved = values[1 + i] - v0
            if moved % step:
                raise NotImplementedError(f"{what} is not an affine function of the sizes")
            coefs[n] = moved // step
        c0 = v0 - sum(a * base[n] for n, a in coefs.items())
        check = self.envs[-1]
        if c0 + sum(a * check[n] for n, a in coefs.items()) != values[-1]:
            raise NotImplementedError(f"{what} is not an affine function of the sizes")
        return _Affine(c0, coefs)


def _shape(t):
    """The shape of a ranked tensor or memref type, else None."""
    return list(t.shape) if isinstance(t, (ir.RankedTensorType, ir.MemRefType)) else None


def _with_dims(t, dims):
    """`t` with `?` where `dims` has an _Affine."""
    shape = [_DYNAMIC if isinstance(d, _Affine) else d for d in dims]
    if isinstance(t, ir.RankedTensorType):
        rt = ir.RankedTensorType(t)
        return ir.RankedTensorType.get(shape, rt.element_type, rt.encoding)
    mt = ir.MemRefType(t)
    return ir.MemRefType.get(shape, mt.element_type, mt.layout, mt.memory_space)


# The static parts of a slice's offsets, sizes and strides (the op's last
# three operand segments hold their dynamic parts).
_MIXED = ("static_offsets", "static_sizes", "static_strides")


def _walk(op):
    """`op` and every op nested in it, in order."""
    yield op
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from _walk(inner.operation)


def _blocks(op):
    return [b for r in op.regions for b in r.blocks]


class _Rewriter:
    """Collects, then applies, the rewrite of the first lowered module."""

    def __init__(self, fitter):
        self.fitter = fitter
        self.retype = []  # (value, new type)
        self.constants = []  # (op, fit of each element)
        self.sized = []  # (op, result dims, splat value's fit): ops that take their sizes
        self.expands = []  # (op, output dims)
        self.fn_args = {}  # function name -> its arguments' dims
        self.mixed = []  # (op, {static_offsets/sizes/strides: fits})
        self.maps = []  # (linalg.generic, {input: [(dim coefs, offset fit)]})

    def type_dims(self, types, what):
        shapes = [_shape(t) for t in types]
        if shapes[0] is None:
            if any(str(t) != str(types[0]) for t in types):
                raise NotImplementedError(f"{what}: types {types[0]} and {types[1]}")
            return None
        if any(s is None or len(s) != len(shapes[0]) for s in shapes):
            raise NotImplementedError(f"{what}: types of different ranks")
        dims = [self.fitter.fit([s[k] for s in shapes], what) for k in range(len(shapes[0]))]
        if not any(isinstance(d, _Affine) for d in dims):
            if any(str(t) != str(types[0]) for t in types):
                raise NotImplementedError(f"{what}: types {types[0]} and {types[1]}")
            return None
        # The rest of the type (element type, layout) must not vary.
        texts = {str(_with_dims(t, dims)) for t in types}
        if len(texts) != 1:
            raise NotImplementedError(f"{what}: a layout that varies with the sizes")
        return dims

    def value(self, values, what):
        dims = self.type_dims([v.type for v in values], what)
        if dims is not None:
            self.retype.append((values[0], _with_dims(values[0].type, dims)))
        return dims

    def visit(self, ops):
        op = ops[0]
        name = op.name
        if any(o.name != name or len(o.results) != len(op.results)
               or len(o.operands) != len(op.operands) or len(o.regions) != len(op.regions)
               for o in ops[1:]):
            raise NotImplementedError(
                f"the program lowers differently at different sizes ({name})")
        what = f"a result of {name}"
        rdims = [self.value([o.results[k] for o in ops], what) for k in range(len(op.results))]
        blocks = [_blocks(o) for o in ops]
        if any(len(b) != len(blocks[0]) for b in blocks):
            raise NotImplementedError(f"the regions of {name} differ with the sizes")
        for j, block in enumerate(blocks[0]):
            if any(len(b[j].arguments) != len(block.arguments) for b in blocks):
                raise NotImplementedError(f"the blocks of {name} differ with the sizes")
            dims = [self.value([b[j].arguments[k] for b in blocks], f"an argument of {name}")
                    for k in range(len(block.arguments))]
            if name == "func.func" and j == 0:
                self.fn_args[_sym(op)] = dims
        varying = [n for n in (str(a) for a in op.attributes)
                   if len({str(o.attributes[n]) if n in o.attributes else None
                           for o in ops}) > 1]
        if name == "func.func":
            varying = [n for n in varying if n != "function_type"]
        if name == "arith.constant" and varying:
            self.constant(ops, rdims[0])
            varying = []
        elif name.endswith(".expand_shape") and varying == ["static_output_shape"]:
            self.expands.append((op, rdims[0]))
            varying = []
        elif name == "linalg.generic" and varying == ["indexing_maps"]:
            self.generic_maps(ops)
            varying = []
        elif varying and set(varying) <= set(_MIXED) and "operandSegmentSizes" in op.attributes:
            # Offsets, sizes or strides of a slice that vary with the sizes.
            fits = {}
            for n in _MIXED:
                rows = [list(ir.DenseI64ArrayAttr(o.attributes[n])) for o in ops]
                fits[n] = [self.fitter.fit([r[j] for r in rows], f"{n} of {name}")
                           for j in range(len(rows[0]))]
            self.mixed.append((op, fits))
            varying = []
        if varying:
            raise NotImplementedError(
                f"the attribute {varying[0]} of {name} varies with the sizes")
        if name in ("tensor.empty", "memref.alloc", "memref.alloca") and rdims[0]:
            self.sized.append((op, rdims[0], None))

    def generic_maps(self, ops):
        """A linalg.generic reading an input at offsets that vary with the
        sizes (a reverse: `d0 -> n - 1 - d0`): each such input is read in
        the body with `tensor.extract` at the offsets computed from the
        sizes, as linalg's maps cannot take values."""
        op = ops[0]
        n_in = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]
        maps = [[ir.AffineMapAttr(m).value for m in ir.ArrayAttr(o.attributes["indexing_maps"])]
                for o in ops]
        reads = {}
        for k in range(len(maps[0])):
            if len({str(m[k]) for m in maps}) == 1:
                continue
            if k >= n_in:
                raise NotImplementedError("an output map of linalg.generic varies with the sizes")
            forms = [[_linear(e) for e in m[k].results] for m in maps]
            if any(f is None for row in forms for f in row) or any(
                    [f[0] for f in row] != [f[0] for f in forms[0]] for row in forms):
                raise NotImplementedError("an indexing map that varies is not affine")
            reads[k] = [(forms[0][r][0], self.fitter.fit([row[r][1] for row in forms],
                                                         "an offset of an indexing map"))
                        for r in range(len(forms[0]))]
        self.maps.append((op, reads))

    def constant(self, ops, dims):
        """An arith.constant whose value varies with the sizes: a scalar or
        a small array of integers (a size, a bound, a count) whose every
        element is affine in the variables, or a splat of a symbolic shape
        (whose one value may vary too)."""
        op = ops[0]
        values = [_elements(o.attributes["value"]) for o in ops]
        if dims is not None:  # a splat of a symbolic shape
            if not all(ir.DenseElementsAttr(o.attributes["value"]).is_splat for o in ops):
                raise NotImplementedError("a constant array of a symbolic shape")
            first = [v[0] for v in values]
            fit = None if len(set(first)) == 1 else self.fitter.fit(first, "a constant")
            self.sized.append((op, dims, fit))
            return
        if len(values[0]) > 256 or any(len(v) != len(values[0]) for v in values):
            raise NotImplementedError("a large constant array varies with the sizes")
        fits = [self.fitter.fit([v[j] for v in values], "a constant")
                for j in range(len(values[0]))]
        if not all(isinstance(f, (int, _Affine)) for f in fits):
            raise NotImplementedError("a constant array of integers and other values varies")
        self.constants.append((op, fits))


def _elements(attr):
    """The values of a constant (integral ones as ints), row-major."""
    if isinstance(attr, ir.DenseElementsAttr):
        n = math.prod(ir.ShapedType(attr.type).shape)
        if attr.is_splat:
            return [_number(attr.get_splat_value())] * n
        if n > 256:
            return [None] * n
        return [_number(attr[j]) for j in range(n)]
    return [_number(attr)]


def _number(a):
    if isinstance(a, ir.IntegerAttr):
        return ir.IntegerAttr(a).value
    if isinstance(a, ir.FloatAttr) and float(ir.FloatAttr(a).value).is_integer():
        return int(ir.FloatAttr(a).value)
    if isinstance(a, (int, float)) and float(a).is_integer():
        return int(a)
    return str(a)  # compared, never fitted (a non-integral value that varies fails)


class _Builder:
    """Index arithmetic for the sizes, inserted into one function."""

    def __init__(self, fn):
        self.fn = fn
        self.vars = {}

    def find_sources(self, dims_of_args):
        block = self.fn.regions[0].blocks[0]
        for arg, dims in zip(block.arguments, dims_of_args):
            for k, d in enumerate(dims or ()):
                v = d.is_var() if isinstance(d, _Affine) else None
                if v is not None:
                    self.vars[v] = (arg, k, 1, 0)
        # Else from a dimension a * v + c0 of one variable (the caller
        # solved the variables, so the division is exact).
        for arg, dims in zip(block.arguments, dims_of_args):
            for k, d in enumerate(dims or ()):
                if isinstance(d, _Affine):
                    nz = [(v, a) for v, a in d.coefs.items() if a]
                    if len(nz) == 1 and nz[0][1] > 0 and nz[0][0] not in self.vars:
                        self.vars[nz[0][0]] = (arg, k, nz[0][1], d.c0)

    def _op(self, name, operands, result, attrs=None):
        return ir.Operation.create(name, results=[result], operands=operands,
                                   attributes=attrs or {}).result

    def const(self, n, t=None):
        t = t or ir.IndexType.get()
        return self._op("arith.constant", [], t, {"value": ir.IntegerAttr.get(t, n)})

    def var(self, v):
        if v not in self.vars:
            raise NotImplementedError(
                f"a function whose arguments do not give the dimension variable {v!r}")
        src = self.vars[v]
        if not isinstance(src, tuple):
            return src
        arg, k, a, c0 = src
        block = self.fn.regions[0].blocks[0]
        ops = list(block.operations)
        ip = ir.InsertionPoint(ops[0]) if ops else ir.InsertionPoint(block)
        index = ir.IndexType.get()
        with ip:
            kind = "tensor.dim" if isinstance(arg.type, ir.RankedTensorType) else "memref.dim"
            value = self._op(kind, [arg, self.const(k)], index)
            if c0:
                value = self._op("arith.subi", [value, self.const(c0)], index)
            if a != 1:
                value = self._op("arith.divsi", [value, self.const(a)], index)
        self.vars[v] = value
        return value

    def scalar(self, e, elt):
        """`e` as a value of the scalar type `elt` (an integer or a float)."""
        v = self.expr(e)
        if isinstance(elt, ir.IntegerType):
            return self._op("arith.index_cast", [v], elt)
        if not isinstance(elt, ir.IndexType):  # a float
            v = self._op("arith.index_cast", [v], ir.IntegerType.get_signless(64))
            return self._op("arith.sitofp", [v], elt)
        return v

    def expr(self, e):
        """`e` (an int or _Affine) as an index value at the insertion point."""
        if not isinstance(e, _Affine):
            return self.const(e)
        index = ir.IndexType.get()
        acc = None
        for v, a in e.coefs.items():
            if not a:
                continue
            term = self.var(v)
            if a != 1:
                term = self._op("arith.muli", [term, self.const(a)], index)
            acc = term if acc is None else self._op("arith.addi", [acc, term], index)
        if e.c0:
            acc = self._op("arith.addi", [acc, self.const(e.c0)], index)
        return acc


def _linear(e):
    """({dim: coefficient}, constant) of an affine expression that is
    linear in the dims, else None."""
    if isinstance(e, ir.AffineConstantExpr):
        return {}, e.value
    if isinstance(e, ir.AffineDimExpr):
        return {e.position: 1}, 0
    if isinstance(e, ir.AffineAddExpr):
        a, b = _linear(e.lhs), _linear(e.rhs)
        if a is None or b is None:
            return None
        coefs = dict(a[0])
        for d, c in b[0].items():
            coefs[d] = coefs.get(d, 0) + c
        return coefs, a[1] + b[1]
    if isinstance(e, ir.AffineMulExpr):
        a, b = _linear(e.lhs), _linear(e.rhs)
        if a is None or b is None or (a[0] and b[0]):
            return None
        (f, k) = (a, b[1]) if a[0] else (b, a[1])
        return {d: c * k for d, c in f[0].items()}, f[1] * k
    return None


def _read_in_body(op, reads, b):
    """Rewrites the inputs `reads` of a linalg.generic as reads in its
    body (see _Rewriter.generic_maps); their maps become constant (0, ...)
    and canonicalization drops the unused operands."""
    index = ir.IndexType.get()
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    block = op.regions[0].blocks[0]
    first = list(block.operations)[0]
    for k, rows in reads.items():
        with ir.InsertionPoint(op):
            offsets = [b.expr(c) for _, c in rows]
        with ir.InsertionPoint(first):
            dims = {}
            idx = []
            for (coefs, _), off in zip(rows, offsets):
                acc = off
                for d, c in sorted(coefs.items()):
                    if not c:
                        continue
                    if d not in dims:
                        dims[d] = b._op("linalg.index", [], index, {
                            "dim": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d)})
                    term = dims[d] if c == 1 else b._op("arith.muli", [dims[d], b.const(c)], index)
                    acc = b._op("arith.addi", [acc, term], index)
                idx.append(acc)
            value = b._op("tensor.extract", [op.operands[k], *idx], block.arguments[k].type)
        block.arguments[k].replace_all_uses_with(value)
        maps[k] = ir.AffineMap.get(maps[k].n_dims, 0,
                                   [ir.AffineConstantExpr.get(0)] * len(maps[k].results))
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


def _sym(fn):
    return ir.StringAttr(fn.attributes["sym_name"]).value


def _function_of(op):
    while op is not None and op.name != "func.func":
        op = op.parent
    return op


def _replace(old, new):
    old.results[0].replace_all_uses_with(new)
    old.erase()


def generalize(modules, names, envs):
    """Rewrites `modules[0]` (lowered to linalg at `envs[0]`; the others at
    the other envs) into one program for every size; returns it."""
    with ir.Location.unknown():
        return _generalize(modules, names, envs)


def _generalize(modules, names, envs):
    rw = _Rewriter(_Fitter(names, envs))
    walks = [list(_walk(m.operation)) for m in modules]
    if any(len(w) != len(walks[0]) for w in walks):
        raise NotImplementedError("the program lowers differently at different sizes")
    for ops in zip(*walks):
        rw.visit(list(ops))
    for value, t in rw.retype:
        value.set_type(t)
    builders = {}

    def builder(op):
        fn = _function_of(op)
        if _sym(fn) not in builders:
            builders[_sym(fn)] = _Builder(fn)
            builders[_sym(fn)].find_sources(rw.fn_args[_sym(fn)])
        return builders[_sym(fn)]

    for op, fits in rw.constants:
        b = builder(op)
        t = op.results[0].type
        with ir.InsertionPoint(op):
            elt = t.element_type if isinstance(t, ir.RankedTensorType) else t
            vs = [b.scalar(e, elt) for e in fits]
            v = b._op("tensor.from_elements", vs, t) if isinstance(
                t, ir.RankedTensorType) else vs[0]
        _replace(op, v)
    for op, dims, fit in rw.sized:
        b = builder(op)
        t = op.results[0].type
        with ir.InsertionPoint(op):
            # The sizes of the `?` dimensions in order: computed where a
            # size varies, the op's own operands where it was dynamic
            # already (an allocation's run-time size; symbol operands after).
            ndyn = sum(d == _DYNAMIC for d in dims)
            own, symbols = list(op.operands)[:ndyn], list(op.operands)[ndyn:]
            sizes = [b.expr(d) if isinstance(d, _Affine) else own.pop(0)
                     for d in dims if isinstance(d, _Affine) or d == _DYNAMIC]
            if op.name == "arith.constant":
                elt = ir.RankedTensorType(t).element_type
                if fit is None:
                    splat = ir.DenseElementsAttr(op.attributes["value"]).get_splat_value()
                    scalar = b._op("arith.constant", [], elt, {"value": splat})
                else:
                    scalar = b.scalar(fit, elt)
                new = b._op("tensor.splat", [scalar, *sizes], t)
            elif op.name == "tensor.empty":
                new = b._op("tensor.empty", sizes, t)
            else:  # memref.alloc/alloca: sizes, then symbol operands
                attrs = {"operandSegmentSizes": ir.DenseI32ArrayAttr.get(
                    [len(sizes), len(symbols)])}
                if "alignment" in op.attributes:
                    attrs["alignment"] = op.attributes["alignment"]
                new = b._op(op.name, sizes + symbols, t, attrs)
        _replace(op, new)
    for op, dims in rw.expands:
        b = builder(op)
        with ir.InsertionPoint(op):
            own = list(op.operands)[1:]  # output sizes dynamic already
            sizes = [b.expr(d) if isinstance(d, _Affine) else own.pop(0)
                     for d in dims if isinstance(d, _Affine) or d == _DYNAMIC]
            static = [_DYNAMIC if isinstance(d, _Affine) else d for d in dims]
            new = b._op(op.name, [op.operands[0], *sizes], op.results[0].type, {
                "reassociation": op.attributes["reassociation"],
                "static_output_shape": ir.DenseI64ArrayAttr.get(static)})
        _replace(op, new)
    for op, reads in rw.maps:
        _read_in_body(op, reads, builder(op))
    for op, fits in rw.mixed:
        b = builder(op)
        segs = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        operands = list(op.operands)
        head = sum(segs[:-3])
        new_operands, new_segs = operands[:head], segs[:-3]
        at = head
        attrs = {n: op.attributes[n] for n in (str(a) for a in op.attributes)}
        with ir.InsertionPoint(op):
            for n, count in zip(_MIXED, segs[-3:]):
                old_dyn = operands[at:at + count]
                at += count
                static, dyn = [], []
                for d in fits[n]:
                    if isinstance(d, _Affine):
                        static.append(_DYNAMIC)
                        dyn.append(b.expr(d))
                    else:
                        static.append(d)
                        if d == _DYNAMIC:
                            dyn.append(old_dyn.pop(0))
                attrs[n] = ir.DenseI64ArrayAttr.get(static)
                new_operands += dyn
                new_segs.append(len(dyn))
            attrs["operandSegmentSizes"] = ir.DenseI32ArrayAttr.get(new_segs)
            new = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                      operands=new_operands, attributes=attrs)
        for old_r, new_r in zip(op.results, new.results):
            old_r.replace_all_uses_with(new_r)
        op.erase()
    refresh_function_types(modules[0])
    try:
        modules[0].operation.verify()
    except ir.MLIRError as e:
        raise NotImplementedError(f"the program with dynamic sizes does not verify: {e}") \
            from None
    return modules[0]


def refresh_function_types(module):
    """Sets each function's type from its arguments and returned values
    (after their types changed)."""
    for fn in module.body.operations:
        fn = fn.operation
        if fn.name != "func.func" or not fn.regions[0].blocks:
            continue
        block = fn.regions[0].blocks[0]
        ret = list(block.operations)[-1].operation
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [a.type for a in block.arguments], [v.type for v in ret.operands]))


def outputs_as_arguments(module):
    """`main` writes its results into arguments appended after its inputs
    (`bufferization.materialize_in_destination`): the runtime's calling
    convention, which `buffer-results-to-out-params` gives static programs
    but cannot give results of a dynamic shape (it would allocate them)."""
    fn = next(op.operation for op in module.body.operations
              if op.operation.name == "func.func" and _sym(op.operation) == "main")
    block = fn.regions[0].blocks[0]
    ret = list(block.operations)[-1].operation
    with ir.Location.unknown():
        outs = []
        for v in ret.operands:
            t = v.type
            outs.append(block.add_argument(
                ir.MemRefType.get(t.shape, t.element_type), ir.Location.unknown()))
        with ir.InsertionPoint(ret):
            for v, out in zip(list(ret.operands), outs):
                ir.Operation.create(
                    "bufferization.materialize_in_destination", results=[],
                    operands=[v, out], attributes={"restrict": ir.UnitAttr.get(),
                                                   "writable": ir.UnitAttr.get()})
            ir.Operation.create("func.return", results=[], operands=[])
        ret.erase()
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
            [a.type for a in block.arguments], []))
        if "arg_attrs" in fn.attributes:
            attrs = list(ir.ArrayAttr(fn.attributes["arg_attrs"]))
            fn.attributes["arg_attrs"] = ir.ArrayAttr.get(
                attrs + [ir.DictAttr.get({})] * len(outs))
        if "res_attrs" in fn.attributes:
            del fn.attributes["res_attrs"]


class DynamicExecutable:
    """A symbolic export's program compiled once for every size of its
    dimension variables (CPU only): called with the arrays and the sizes of
    the results (the caller evaluates the output avals)."""

    def __init__(self, text, refine, scope, in_avals, out_avals, target):
        """`text`: the symbolic program (the persistent compilation cache's
        key); `refine(env)`: that program at the sizes `env`."""
        if target.name != "cpu":
            raise NotImplementedError(f"dynamic sizes on {target.name}")
        names, envs = sample_envs(scope)
        ins, outs = [_ones(a) for a in in_avals], [_ones(a) for a in out_avals]
        key = None
        if compilation_cache.enabled(target):
            key = compilation_cache.key(target, "dynamic\0" + text, in_avals, out_avals,
                                        compiler.OPT_LEVEL)
        self.kernel, _ = compilation_cache.load_or_compile(
            key, lambda obj: target.load_object(obj, ins, outs),
            lambda obj_path: self._compile(refine, names, envs, ins, outs, target, obj_path))

    def _compile(self, refine, names, envs, ins, outs, target, obj_path):
        ((_, codegen),) = target.codegen_stages
        with compile_lock, context():
            modules = []
            for env in envs:
                try:
                    module = refine(env)
                    compiler.run_pipeline(module, target, upto="optimize", keep_last=False)
                    _run(module, "ember-to-linalg")
                except Exception as e:  # noqa: BLE001 (compiled per size then)
                    raise NotImplementedError(f"lowering at sample sizes failed: {e}") from None
                modules.append(module)
            try:
                module = generalize(modules, names, envs)
            except NotImplementedError:
                raise
            except Exception as e:  # noqa: BLE001 (an IR this rewrite does not know)
                raise NotImplementedError(
                    f"rewriting the program for dynamic sizes failed: {type(e).__name__}: {e}"
                ) from None
            outputs_as_arguments(module)
            fn = next(op.operation for op in module.body.operations
                      if _sym(op.operation) == "main")
            fn.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
            try:
                # The helpers returning arrays of a dynamic size (the GEMM
                # calls) are inlined: only `main` can take its results as
                # arguments. `ember-to-linalg` again finds nothing to do.
                _run(module, "inline")
                _run(module, codegen)
            except ir.MLIRError as e:
                raise NotImplementedError(f"the dynamic program does not lower: {e}") from None
            try:
                return target.load(module, compiler.OPT_LEVEL, ins, outs, object_path=obj_path)
            except RuntimeError as e:
                raise NotImplementedError(f"the dynamic program does not compile: {e}") \
                    from None

    def __call__(self, arrays, out_avals):
        raw = self.kernel.call_shaped(arrays, [list(a.shape) for a in arrays],
                                      [list(a.shape) for a in out_avals])
        outs = []
        for r, a in zip(raw, out_avals):
            r.flags.writeable = False
            outs.append(r.view(a.dtype).reshape(a.shape))
        return outs


def _ones(aval):
    return aval.update(shape=(1,) * len(aval.shape))


def _run(module, pipeline):
    passmanager.PassManager.parse(f"builtin.module({pipeline})", context()).run(
        module.operation)

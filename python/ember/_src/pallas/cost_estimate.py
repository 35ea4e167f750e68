"""`pl.estimate_cost(fun, *args)`: JAX's Pallas cost estimate of a function
(the `cost_estimate=` a `pallas_call` takes), by JAX's rules: a binary
elementwise op costs a flop per output element, `neg`/`floor`/`ceil`/
`round`/`not` one per element, a transcendental (`exp`, `tanh`, `sqrt`, ...)
one transcendental per element, `integer_pow` floor(log2 y) + popcount(y)
flops per element, `dot_general` 2 x the contraction x the other dimensions;
everything else nothing, and jitted calls what their body costs. Bytes
accessed are the arguments' and the results'. Counted on the traced
program (the `ember` stage), whose ops have JAX's primitive names."""

import functools
import math

import numpy as np

from ..._mlir import ir
from .. import tree_util
from ..api import jit
from ..context import context
from .core import CostEstimate

_BINARY = {"add", "mul", "sub", "div", "min", "max", "or", "and", "xor"}
_UNARY = {"neg", "floor", "ceil", "round", "not"}
_TRANSCENDENTAL = {"cos", "sin", "tan", "sinh", "cosh", "tanh", "acos", "asin", "atan", "exp",
                   "log", "logistic", "sqrt"}


def _size(t):
    return math.prod(ir.RankedTensorType(t).shape)


def _bytes(aval):
    return math.prod(aval.shape) * np.dtype(aval.dtype).itemsize


def _ints(attr):
    return [int(v) for v in ir.DenseI64ArrayAttr(attr)]


def _op_cost(op):
    """(flops, transcendentals) of one op by JAX's rules."""
    kind = op.name.split(".", 1)[1] if op.name.startswith("ember.") else None
    if kind in _BINARY:
        return _size(op.results[0].type), 0
    if kind in _UNARY:
        return _size(op.operands[0].type), 0
    if kind in _TRANSCENDENTAL:
        return 0, _size(op.operands[0].type)
    if kind == "integer_pow":
        y = abs(ir.IntegerAttr(op.attributes["y"]).value)
        per = 0 if y in (0, 1) else int(math.floor(math.log2(y))) + bin(y).count("1")
        return _size(op.operands[0].type) * per, 0
    if kind == "dot_general":
        lhs = ir.RankedTensorType(op.operands[0].type).shape
        rhs = ir.RankedTensorType(op.operands[1].type).shape
        lc = _ints(op.attributes["lhs_contracting_dimensions"])
        rc = _ints(op.attributes["rhs_contracting_dimensions"])
        rb = _ints(op.attributes["rhs_batching_dimensions"])
        flops = 2 * math.prod(lhs[d] for d in lc)
        flops *= math.prod(n for d, n in enumerate(lhs) if d not in lc)
        flops *= math.prod(n for d, n in enumerate(rhs) if d not in rc and d not in rb)
        return flops, 0
    return 0, 0


def estimate_cost(fun, *args, **kwargs):
    """JAX's `pl.estimate_cost`: a `CostEstimate` of `fun` at `args`
    (arrays or `ShapeDtypeStruct`s)."""
    traced = jit(functools.partial(fun, **kwargs)).trace(*args)
    text = traced.lower().as_text("ember")
    leaves = tree_util.tree_leaves(args) + tree_util.tree_leaves(traced.out_info)
    io = sum(_bytes(a) for a in leaves)
    with context():
        module = ir.Module.parse(text)
        funcs = {ir.StringAttr(op.attributes["sym_name"]).value: op
                 for op in module.body.operations if op.operation.name == "func.func"}

        def body_cost(fn):
            flops = trans = 0
            for op in fn.regions[0].blocks[0].operations:
                op = op.operation
                if op.name in ("func.call", "ember.call") and "callee" in op.attributes:
                    f, t = body_cost(funcs[ir.FlatSymbolRefAttr(op.attributes["callee"]).value])
                else:
                    f, t = _op_cost(op)
                flops, trans = flops + f, trans + t
            return flops, trans

        flops, trans = body_cost(funcs["main"])
    return CostEstimate(flops=flops, transcendentals=trans, bytes_accessed=io)

"""Cost and memory estimates of a program for the stages API
(`Lowered.cost_analysis()`, `Compiled.cost_analysis()`,
`Compiled.memory_analysis()`), counted over the `ember` ops after the
`optimize` stage the way XLA counts over HLO: a product is 2·M·N·K flops, a
reduction n - 1, other arithmetic one per result element, transcendental
functions apart; "bytes accessed" sums every op's operands and results. Ops
in a counted loop count `trip_count` times; a loop with a run-time trip count
counts once. Estimates, not measurements: fusion and buffer reuse make the
compiled code touch less memory."""

import dataclasses
import math

from ember._mlir import ir

_TRANSCENDENTAL = {
    "exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "sin", "cos", "tan", "asin",
    "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc",
    "erf_inv", "pow", "sqrt", "rsqrt", "cbrt", "lgamma", "digamma", "bessel_i0e",
    "bessel_i1e"}
_FREE = {
    "constant", "reshape", "transpose", "broadcast_in_dim", "slice", "dynamic_slice",
    "concatenate", "convert", "bitcast_convert", "iota", "reverse", "pad", "gather",
    "dynamic_update_slice", "yield", "return", "optimization_barrier", "squeeze",
    "expand_dims"}


def _elements(t):
    try:
        shaped = ir.ShapedType(t)
    except (TypeError, ValueError):
        return 1
    return math.prod(shaped.shape) if shaped.has_static_shape else 0


def _bytes(t):
    try:
        shaped = ir.ShapedType(t)
    except (TypeError, ValueError):
        return 0
    width = shaped.element_type
    bits = 1
    for cast in (ir.FloatType, ir.IntegerType):
        try:
            bits = cast(width).width
            break
        except (TypeError, ValueError):
            continue
    else:
        if str(width).startswith("complex<f64"):
            bits = 128
        elif str(width).startswith("complex"):
            bits = 64
    return _elements(t) * max(bits, 8) // 8


def _count(block, scale, acc):
    for op in block.operations:
        op = op.operation
        name = op.name.split(".", 1)[-1] if op.name.startswith("ember.") else op.name
        inner = scale
        if op.name == "ember.while" and "trip_count" in op.attributes:
            inner = scale * max(ir.IntegerAttr(op.attributes["trip_count"]).value, 0)
        for region in op.regions:
            for b in region.blocks:
                _count(b, inner, acc)
        if name in ("func.return",) or name in _FREE:
            continue
        out = sum(_elements(r.type) for r in op.results)
        if name == "dot_general":
            lhs = ir.ShapedType(op.operands[0].type)
            dims = ir.DenseI64ArrayAttr(op.attributes["lhs_contracting_dimensions"])
            k = math.prod(lhs.shape[d] for d in dims)
            acc["flops"] += scale * 2 * out * k
        elif name.startswith("reduce") or name in ("argmax", "argmin"):
            n_in = sum(_elements(v.type) for v in op.operands[:1])
            acc["flops"] += scale * max(n_in - out, 0)
        elif name in _TRANSCENDENTAL:
            acc["transcendentals"] += scale * out
        elif name == "integer_pow":
            # XLA counts the products (and the division) it expands it to.
            y = abs(ir.IntegerAttr(op.attributes["y"]).value)
            ops = y.bit_length() - 1 + bin(y).count("1") - 1 + (
                ir.IntegerAttr(op.attributes["y"]).value < 0)
            acc["flops"] += scale * out * max(ops, 0)
            per = _bytes(op.results[0].type)
            acc["bytes accessed"] += scale * 3 * per * max(ops, 1)
            continue
        else:
            acc["flops"] += scale * out
        acc["bytes accessed"] += scale * (sum(_bytes(v.type) for v in op.operands)
                                          + sum(_bytes(r.type) for r in op.results))


def cost_analysis(optimized_text):
    """{"flops", "transcendentals", "bytes accessed"} of the module."""
    acc = {"flops": 0.0, "transcendentals": 0.0, "bytes accessed": 0.0}
    from .context import context

    with context():
        module = ir.Module.parse(optimized_text)
        for op in module.body.operations:
            for region in op.operation.regions:
                for b in region.blocks:
                    _count(b, 1, acc)
    return acc


@dataclasses.dataclass(frozen=True)
class CompiledMemoryStats:
    """JAX's memory statistics: arguments and outputs exactly; temporaries
    as an upper bound (every intermediate result of the optimized program,
    before buffer reuse); code size unknown (0, as JAX reports on CPUs)."""

    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    generated_code_size_in_bytes: int = 0
    host_generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0


def memory_analysis(optimized_text, in_avals, out_avals):
    def size(a):
        return math.prod(a.shape) * a.dtype.itemsize

    temp = 0
    from .context import context

    with context():
        module = ir.Module.parse(optimized_text)

        def walk(block):
            nonlocal temp
            for op in block.operations:
                op = op.operation
                if op.name not in ("func.return", "ember.constant"):
                    temp += sum(_bytes(r.type) for r in op.results)
                for region in op.regions:
                    for b in region.blocks:
                        walk(b)

        for op in module.body.operations:
            for region in op.operation.regions:
                for b in region.blocks:
                    walk(b)
    return CompiledMemoryStats(sum(size(a) for a in in_avals), sum(size(a) for a in out_avals),
                               0, temp)

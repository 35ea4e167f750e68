"""StableHLO op builders for users' lowering rules (`jax._src.lib.mlir.
dialects.hlo`, as JAX's primitives tutorial uses them): a rule's operands
are Ember values, and each builder makes the Ember op of the StableHLO op
of its name. Both spellings of StableHLO's Python bindings work: op classes
(`hlo.AddOp(x, y).result`) and functions (`hlo.add(x, y)`). Only ops whose
operands are all values are offered; a rule needing others (types,
attributes) is written with `mlir.lower_fun` instead."""

from .... import lax as _lax

# StableHLO op name: (class name, Ember function).
_OPS = {
    "add": ("AddOp", _lax.add),
    "subtract": ("SubtractOp", _lax.sub),
    "multiply": ("MulOp", _lax.mul),
    "divide": ("DivOp", _lax.div),
    "remainder": ("RemOp", _lax.rem),
    "power": ("PowOp", _lax.pow),
    "maximum": ("MaxOp", _lax.max),
    "minimum": ("MinOp", _lax.min),
    "atan2": ("Atan2Op", _lax.atan2),
    "and": ("AndOp", _lax.bitwise_and),
    "or": ("OrOp", _lax.bitwise_or),
    "xor": ("XorOp", _lax.bitwise_xor),
    "negate": ("NegOp", _lax.neg),
    "abs": ("AbsOp", _lax.abs),
    "sign": ("SignOp", _lax.sign),
    "not": ("NotOp", _lax.bitwise_not),
    "exponential": ("ExpOp", _lax.exp),
    "exponential_minus_one": ("Expm1Op", _lax.expm1),
    "log": ("LogOp", _lax.log),
    "log_plus_one": ("Log1pOp", _lax.log1p),
    "logistic": ("LogisticOp", _lax.logistic),
    "tanh": ("TanhOp", _lax.tanh),
    "sqrt": ("SqrtOp", _lax.sqrt),
    "rsqrt": ("RsqrtOp", _lax.rsqrt),
    "cbrt": ("CbrtOp", _lax.cbrt),
    "sine": ("SineOp", _lax.sin),
    "cosine": ("CosineOp", _lax.cos),
    "tan": ("TanOp", _lax.tan),
    "floor": ("FloorOp", _lax.floor),
    "ceil": ("CeilOp", _lax.ceil),
    "round_nearest_even": ("RoundNearestEvenOp", lambda x: _lax.round(
        x, _lax.RoundingMethod.TO_NEAREST_EVEN)),
    "round_nearest_afz": ("RoundOp", _lax.round),
    "select": ("SelectOp", _lax.select),
}


def _value(x):
    """An operand: a value, or a built op standing for its result (as
    StableHLO's bindings take an op of one result)."""
    return x.result if isinstance(x, _Op) else x


class _Op:
    """A built op: its value is `.result` (`.results` a list of it)."""

    def __init__(self, *operands, loc=None, ip=None):
        self.result = self._fn(*map(_value, operands))
        self.results = [self.result]


def _function(fn):
    def build(*operands, loc=None, ip=None):
        return fn(*map(_value, operands))
    return build


for _name, (_cls, _fn) in _OPS.items():
    globals()[_cls] = type(_cls, (_Op,), {"_fn": staticmethod(_fn)})
    globals()[_name + ("_" if _name in ("and", "or", "not") else "")] = _function(_fn)


def __getattr__(name):
    raise AttributeError(
        f"Ember's hlo builders have no {name!r}: they offer the StableHLO ops whose "
        "operands are all values (add, multiply, exponential, select, ...); write the "
        "lowering rule with mlir.lower_fun for the others")

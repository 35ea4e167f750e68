"""Symbolic dimensions (JAX's shape polymorphism): `symbolic_shape`, the
dimension expressions that flow through tracing in place of ints, and the
decision procedure for comparing them.

A `DimExpr` is a polynomial with integer coefficients over atoms: dimension
variables (`b`) and the non-polynomial forms JAX has, `floordiv(e, k)`,
`mod(e, k)`, `max(e1, e2)`, `min(e1, e2)`. Expressions are kept normalized,
so that equality is syntactic after subtraction (JAX's rule: `b == 1` is
False, not an error); an inequality is decided from lower and upper bounds
(every variable is >= 1, narrowed by the scope's constraints) and raises
`InconclusiveDimensionOperation` when the bounds cannot decide it.

A traced program keeps these expressions in Python (in avals, shapes and
attributes); its MLIR gets a witness value for each variable (a valid
static program) and the expressions as `ember.sym_*` annotations, which
`refine` (in export.py) evaluates for the dimension values of a call.
"""

import math
import re

import numpy as np

__all__ = ["DimExpr", "InconclusiveDimensionOperation", "SymbolicScope", "UnexpectedDimVar",
           "symbolic_shape",
           "is_symbolic_dim", "parse_dim"]


class UnexpectedDimVar(Exception):
    """A program uses a dimension variable the arguments' shapes do not
    determine (JAX's exception)."""


class InconclusiveDimensionOperation(Exception):
    """A comparison or conversion of symbolic dimensions that holds for some
    values of the variables and not for others (JAX's exception)."""


_DOC = "https://docs.jax.dev/en/latest/export/shape_poly.html"


def _inconclusive(lhs, op, rhs):
    return InconclusiveDimensionOperation(
        f"Symbolic dimension comparison '{lhs}' {op} '{rhs}' is inconclusive.\n"
        "This error arises for comparison operations with shapes that are non-constant, "
        "and the result of the operation cannot be represented as a boolean value for all "
        f"values of the symbolic dimensions involved.\n\nPlease see {_DOC}"
        "#comparison-of-symbolic-dimensions-is-partially-supported for more details.")


class SymbolicScope:
    """The variables one `symbolic_shape` call (or several sharing `scope=`)
    creates, with their constraints. Expressions of different scopes do not
    mix (JAX's rule)."""

    def __init__(self, constraints=()):
        self.constraints = []  # expressions known to be >= 0
        # Equality constraints `monomial == expr`: the monomial is rewritten
        # to the expression wherever it occurs (JAX's normalization rule).
        self.rewrites = []  # (monomial as {atom: power}, expression, text)
        self.bounds = {}  # var -> (lo, hi)
        self.vars = []
        self._constraint_texts = tuple(constraints)
        for c in constraints:
            self._add_constraint(c)

    def __repr__(self):
        return f"SymbolicScope(constraints={list(self._constraint_texts)})"

    def _var(self, name):
        if name not in self.vars:
            self.vars.append(name)
            self.bounds.setdefault(name, (1, math.inf))
        return DimExpr._atom(name, self)

    def _add_constraint(self, text):
        m = re.fullmatch(r"(.*?)(>=|<=|==)(.*)", text.strip())
        if not m:
            raise ValueError(f"Invalid symbolic constraint {text!r}: it must have the form "
                             "'e1 >= e2', 'e1 <= e2' or 'e1 == e2'")
        lhs, op, rhs = (_Parser(m.group(1), self).expr_only(),
                        m.group(2), _Parser(m.group(3), self).expr_only())
        if op == "==":
            if not (isinstance(lhs, DimExpr) and len(lhs._terms) == 1 and
                    lhs._terms[0][1] == 1 and all(isinstance(a, str)
                                                  for a, _ in lhs._terms[0][0])):
                raise ValueError(f"Invalid equality constraint {text!r}: its left side must "
                                 "be a product of dimension variables")
            self.rewrites.append((dict(lhs._terms[0][0]), rhs, text.strip()))
            return
        diff = lhs - rhs if op != "<=" else rhs - lhs
        if isinstance(diff, int):
            if diff < 0:
                raise ValueError(f"Unsatisfiable symbolic constraint {text!r}")
            return
        # A bound on one variable (`b >= 16`, `b <= 64`, `2*b >= 8`) narrows it.
        terms = diff._terms
        var_terms = [(m, c) for m, c in terms if m]
        const = sum(c for m, c in terms if not m)
        if len(var_terms) == 1 and len(var_terms[0][0]) == 1:
            (atom, power), coeff = var_terms[0][0][0], var_terms[0][1]
            if isinstance(atom, str) and power == 1:
                lo, hi = self.bounds[atom]
                if coeff > 0:  # coeff*v + const >= 0  ->  v >= ceil(-const/coeff)
                    lo = max(lo, -(const // coeff))
                else:  # -|c|*v + const >= 0  ->  v <= floor(const/|c|)
                    hi = min(hi, const // -coeff)
                if lo > hi:
                    raise ValueError(f"Unsatisfiable symbolic constraint {text!r}")
                self.bounds[atom] = (lo, hi)
                return
        self.constraints.append(diff)

    def witness(self):
        """A value for each variable that satisfies the bounds and the
        constraints: the sizes of the valid static program kept beside the
        symbolic annotations (small, not 1, so no dimension broadcasts)."""
        primes = [3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47]
        env = {}
        for i, v in enumerate(self.vars):
            lo, hi = self.bounds[v]
            guess = max(lo, primes[i % len(primes)])
            env[v] = int(min(guess, hi))
        for _ in range(64):
            # Equalities: solved for a variable of the right side that enters
            # it linearly (`d` in `a*b == c + d`).
            for mono, rhs, _ in self.rewrites:
                lhs_val = math.prod(env[a] ** p for a, p in mono.items())
                for v in (rhs.variables() if isinstance(rhs, DimExpr) else []):
                    if v in mono:
                        continue
                    base = rhs._eval({**env, v: 0})
                    coeff = rhs._eval({**env, v: 1}) - base
                    if coeff and rhs._eval({**env, v: 2}) - base == 2 * coeff and \
                            (lhs_val - base) % coeff == 0 and (lhs_val - base) // coeff >= 1:
                        env[v] = (lhs_val - base) // coeff
                        break
            bad = [c for c in self.constraints if c._eval(env) < 0]
            bad_eq = [r for r in self.rewrites
                      if math.prod(env[a] ** p for a, p in r[0].items()) != _eval_dim(r[1], env)]
            if not bad and not bad_eq:
                return env
            # Raise the variables a violated constraint grows with.
            for c in bad:
                for v in c.variables():
                    lo, hi = self.bounds[v]
                    if c._eval({**env, v: env[v] + 1}) > c._eval(env) and env[v] < hi:
                        env[v] = int(min(hi, env[v] - c._eval(env) + env[v]))
                        break
            for mono, _, _ in bad_eq:
                v = next(iter(mono))
                env[v] = int(min(self.bounds[v][1], env[v] * 2))
        raise ValueError(f"could not find values satisfying the symbolic constraints "
                         f"{list(self._constraint_texts)}")


def _mono_key(mono):
    return tuple((a if isinstance(a, str) else "~" + str(a[0]) + repr(a[1:]), p)
                 for a, p in mono)


# (value type, dimension_as_value), registered by core (the layer above) so
# that a dimension combined with a traced value becomes a traced value.
_value_hook = None


def register_value_hook(value_type, as_value):
    global _value_hook
    _value_hook = (value_type, as_value)


class DimExpr:
    """A symbolic dimension: use it as an int in shapes and shape arithmetic.
    `int()` of a non-constant expression and undecidable comparisons raise
    `InconclusiveDimensionOperation`."""

    __slots__ = ("_terms", "_scope", "_hash")

    def __init__(self, terms, scope):
        # terms: tuple of (monomial, coeff), monomial a sorted tuple of (atom, power)
        self._terms = terms
        self._scope = scope
        self._hash = None

    @property
    def scope(self):
        return self._scope

    # ---- construction and normalization
    @staticmethod
    def _atom(atom, scope):
        return DimExpr((((((atom, 1),), 1),)), scope)

    @staticmethod
    def _normalize(acc, scope):
        if scope is not None and scope.rewrites:
            acc = DimExpr._rewrite(acc, scope)
        items = tuple(sorted(((m, c) for m, c in acc.items() if c != 0),
                             key=lambda mc: _mono_key(mc[0])))
        if not items:
            return 0
        if len(items) == 1 and items[0][0] == ():
            return items[0][1]
        return DimExpr(items, scope)

    @staticmethod
    def _rewrite(acc, scope):
        """Applies the scope's equality constraints to a term map: a term
        containing a constraint's monomial becomes the rest of the term times
        the constraint's right side."""
        for mono, rhs, _ in scope.rewrites:
            for m, c in list(acc.items()):
                powers = dict(m)
                if c == 0 or any(powers.get(a, 0) < p for a, p in mono.items()):
                    continue
                for a, p in mono.items():
                    powers[a] -= p
                rest = tuple(sorted(((a, p) for a, p in powers.items() if p),
                                    key=lambda ap: _mono_key(((ap[0], 1),))))
                del acc[m]
                term = DimExpr(((rest, c),), scope) if rest else c
                for m2, c2 in DimExpr._lift(term * rhs, scope):
                    acc[m2] = acc.get(m2, 0) + c2
        return acc

    @staticmethod
    def _lift(x, scope):
        if isinstance(x, DimExpr):
            if scope is not None and x._scope is not scope:
                raise ValueError("Invalid mixing of symbolic scopes: symbolic dimensions "
                                 "from different `symbolic_shape` calls cannot be combined "
                                 "(pass scope= to share one)")
            return x._terms
        return (((), int(x)),) if int(x) else ()

    def _value_op(self, other, op, reflected=False):
        """`self op other` for an operand that is not a dimension (a float,
        an array): the dimension's value takes part (JAX's
        `dimension_as_value`), inside a traced function."""
        import operator

        if _value_hook is None or not isinstance(
                other, (float, complex, np.ndarray, np.floating, np.complexfloating,
                        _value_hook[0])):
            return NotImplemented
        v = _value_hook[1](self)
        f = getattr(operator, op)
        return f(other, v) if reflected else f(v, other)

    def _combine(self, other, sign):
        if not _is_dimlike(other):
            return self._value_op(other, "add" if sign > 0 else "sub")
        acc = {}
        for m, c in self._terms:
            acc[m] = acc.get(m, 0) + c
        for m, c in DimExpr._lift(other, self._scope):
            acc[m] = acc.get(m, 0) + sign * c
        return DimExpr._normalize(acc, self._scope)

    def __add__(self, other):
        return self._combine(other, 1)

    def __radd__(self, other):
        if not _is_dimlike(other):
            return self._value_op(other, "add", reflected=True)
        return self._combine(other, 1)

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        if not _is_dimlike(other):
            return self._value_op(other, "sub", reflected=True)
        return (-self)._combine(other, 1)

    def __neg__(self):
        return DimExpr._normalize({m: -c for m, c in self._terms}, self._scope)

    def __pos__(self):
        return self

    def __mul__(self, other):
        if not _is_dimlike(other):
            return self._value_op(other, "mul")
        acc = {}
        for m1, c1 in self._terms:
            for m2, c2 in DimExpr._lift(other, self._scope):
                powers = dict(m1)
                for a, p in m2:
                    powers[a] = powers.get(a, 0) + p
                m = tuple(sorted(powers.items(), key=lambda ap: _mono_key(((ap[0], 1),))))
                acc[m] = acc.get(m, 0) + c1 * c2
        return DimExpr._normalize(acc, self._scope)

    def __rmul__(self, other):
        if not _is_dimlike(other):
            return self._value_op(other, "mul", reflected=True)
        return self.__mul__(other)

    def __pow__(self, k):
        if not isinstance(k, int) or k < 0:
            return NotImplemented
        out = 1
        for _ in range(k):
            out = out * self
        return out

    def _divmod(self, divisor):
        """(quotient, remainder) when exact for every value: a polynomial
        divided by a constant that divides each coefficient, or by an
        expression it is a multiple of (`2*b*n // b`)."""
        if isinstance(divisor, int):
            # Exact when every coefficient but the constant's is a multiple:
            # (2*b + 1) // 2 is b, remainder 1.
            if divisor != 0 and all(c % divisor == 0 for m, c in self._terms if m):
                const = sum(c for m, c in self._terms if not m)
                q = {m: c // divisor for m, c in self._terms if m}
                q[()] = const // divisor
                return DimExpr._normalize(q, self._scope), const % divisor
            return None
        if isinstance(divisor, DimExpr) and len(divisor._terms) == 1:
            (dm, dc), = divisor._terms
            acc = {}
            for m, c in self._terms:
                powers = dict(m)
                for a, p in dm:
                    if powers.get(a, 0) < p:
                        return None
                    powers[a] -= p
                if c % dc:
                    return None
                nm = tuple((a, p) for a, p in sorted(
                    powers.items(), key=lambda ap: _mono_key(((ap[0], 1),))) if p)
                acc[nm] = acc.get(nm, 0) + c // dc
            return DimExpr._normalize(acc, self._scope), 0
        return None

    def _div_or_atom(self, other, kind):
        """`self // other` (kind "floordiv") or `self % other` ("mod"): the
        exact result when there is one, else the atom for a positive
        constant divisor."""
        if not _is_dimlike(other):
            return NotImplemented
        exact = self._divmod(other if isinstance(other, DimExpr) else int(other))
        if exact is not None:
            return exact[0 if kind == "floordiv" else 1]
        if isinstance(other, DimExpr) or int(other) <= 0:
            raise InconclusiveDimensionOperation(
                f"Symbolic dimension {kind} '{self}' {'//' if kind == 'floordiv' else '%'} "
                f"'{other}': Ember divides symbolic dimensions by positive constants or by "
                "their exact factors only")
        return DimExpr._atom((kind, self, int(other)), self._scope)

    def __floordiv__(self, other):
        return self._div_or_atom(other, "floordiv")

    def __rtruediv__(self, other):
        return self._value_op(other if not _is_dimlike(other) else float(other), "truediv",
                              reflected=True)

    def __rfloordiv__(self, other):
        if isinstance(other, int) and other == 0:
            return 0
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension division '{other}' // '{self}' is not supported")

    def __mod__(self, other):
        return self._div_or_atom(other, "mod")

    def __divmod__(self, other):
        return self // other, self % other

    def __truediv__(self, other):
        # JAX: an exact division gives the dimension; otherwise an error.
        if not _is_dimlike(other):
            return self._value_op(other, "truediv")
        q = self._divmod(other if isinstance(other, DimExpr) else int(other))
        if q is None or q[1] != 0:
            raise InconclusiveDimensionOperation(
                f"Cannot divide '{self}' by '{other}' evenly for every value of the "
                "symbolic dimensions")
        return q[0]

    # ---- comparisons
    def _sign_of(self, e):
        """+1 if e >= 0 always, -1 if e < 0 always, else None."""
        if isinstance(e, int):
            return 1 if e >= 0 else -1
        lo, hi = e._bounds()
        if lo >= 0:
            return 1
        if hi < 0:
            return -1
        for c in self._scope.constraints if self._scope else ():
            d = e - c
            if isinstance(d, int):
                if d >= 0:
                    return 1
            elif d._bounds()[0] >= 0:
                return 1
        return None

    def __eq__(self, other):
        if not _is_dimlike(other):
            return NotImplemented
        if isinstance(other, DimExpr) and other._scope is not self._scope:
            return False
        d = self._combine(other, -1)
        return isinstance(d, int) and d == 0

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self):
        if self._hash is None:
            self._hash = hash(self._terms)
        return self._hash

    def _ge(self, other, op, lhs, rhs):
        if not _is_dimlike(other):
            return NotImplemented
        s = self._sign_of(self._combine(other, -1))
        if s is None:
            raise _inconclusive(lhs, op, rhs)
        return s > 0

    def __ge__(self, other):
        return self._ge(other, ">=", self, other)

    def __lt__(self, other):
        r = self._ge(other, "<", self, other)
        return r if r is NotImplemented else not r

    def __le__(self, other):
        if not _is_dimlike(other):
            return NotImplemented
        s = self._sign_of(-self._combine(other, -1))  # other - self >= 0
        if s is None:
            raise _inconclusive(self, "<=", other)
        return s > 0

    def __gt__(self, other):
        r = self.__le__(other)
        return r if r is NotImplemented else not r

    # ---- conversions
    def __int__(self):
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used where an integer is needed; its value is "
            f"not known until the program runs. Please see {_DOC} for more details.")

    __index__ = __int__

    def __bool__(self):
        return True  # a dimension is >= 1

    def __float__(self):
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used where a float is needed")

    # ---- evaluation
    def _eval(self, env):
        total = 0
        for m, c in self._terms:
            v = c
            for a, p in m:
                v = v * _eval_atom(a, env) ** p
            total = total + v
        return total

    def _bounds(self):
        lo_t, hi_t = 0, 0
        for m, c in self._terms:
            lo, hi = 1, 1
            for a, p in m:
                alo, ahi = _atom_bounds(a, self._scope)
                for _ in range(p):
                    lo, hi = _imul((lo, hi), (alo, ahi))
            lo, hi = _imul((lo, hi), (c, c))
            lo_t, hi_t = lo_t + lo, hi_t + hi
        return lo_t, hi_t

    def variables(self):
        out = []
        for m, _ in self._terms:
            for a, _ in m:
                for v in _atom_vars(a):
                    if v not in out:
                        out.append(v)
        return out

    def is_single_var(self):
        return (len(self._terms) == 1 and self._terms[0][1] == 1 and
                len(self._terms[0][0]) == 1 and self._terms[0][0][0][1] == 1 and
                isinstance(self._terms[0][0][0][0], str))

    # ---- printing (parsable by `parse_dim`)
    def __str__(self):
        def mono_str(m):
            return "*".join(_atom_str(a) + (f"^{p}" if p > 1 else "") for a, p in m)

        def order(mc):
            # JAX's order: higher degree first, then by the factors, largest
            # name first (`n + b`, `b*n^2 + b^2*n`); the constant last.
            m, _ = mc
            factors = sorted(((1, _atom_str(a)) if not isinstance(a, str) else (0, a), p)
                             for a, p in m)
            return (sum(p for _, p in m), factors[::-1])

        out = ""
        for m, c in sorted(self._terms, key=order, reverse=True):
            if not m:
                body = str(abs(c))
            elif abs(c) == 1:
                body = mono_str(m)
            else:
                body = f"{abs(c)}*{mono_str(m)}"
            if not out:
                out = ("- " if c < 0 else "") + body
            else:
                out += (" - " if c < 0 else " + ") + body
        return out

    __repr__ = __str__


def _imul(a, b):
    prods = []
    for x in a:
        for y in b:
            if (x == 0 and math.isinf(y)) or (y == 0 and math.isinf(x)):
                prods.append(0)
            else:
                prods.append(x * y)
    return min(prods), max(prods)


def _atom_str(a):
    if isinstance(a, str):
        return a
    kind, x, y = a
    return f"{kind}({x}, {y})"


def _atom_vars(a):
    if isinstance(a, str):
        return [a]
    out = []
    for x in a[1:]:
        if isinstance(x, DimExpr):
            out += x.variables()
    return out


def _eval_atom(a, env):
    if isinstance(a, str):
        return env[a]
    kind, x, y = a
    x = x._eval(env) if isinstance(x, DimExpr) else x
    y = y._eval(env) if isinstance(y, DimExpr) else y
    if kind == "floordiv":
        return x // y
    if kind == "mod":
        return x % y
    if kind == "max":
        return dim_max(x, y)
    return dim_min(x, y)


def _atom_bounds(a, scope):
    if isinstance(a, str):
        return scope.bounds.get(a, (1, math.inf)) if scope else (1, math.inf)
    kind, x, y = a
    bx = x._bounds() if isinstance(x, DimExpr) else (x, x)
    by = y._bounds() if isinstance(y, DimExpr) else (y, y)
    if kind == "floordiv":
        return (bx[0] // y if not math.isinf(bx[0]) else bx[0],
                bx[1] // y if not math.isinf(bx[1]) else bx[1])
    if kind == "mod":
        return 0, y - 1
    if kind == "max":
        return max(bx[0], by[0]), max(bx[1], by[1])
    return min(bx[0], by[0]), min(bx[1], by[1])


def _is_dimlike(x):
    import numpy as np

    return isinstance(x, (int, np.integer, DimExpr)) and not isinstance(x, bool)


def is_symbolic_dim(d):
    return isinstance(d, DimExpr)


def is_constant_shape(shape):
    return not any(isinstance(d, DimExpr) for d in shape)


def _scope_of(*xs):
    for x in xs:
        if isinstance(x, DimExpr):
            return x._scope
    return None


def dim_max(x, y):
    """max of two dimensions (JAX's `core.max_dim`): decided when the bounds
    decide it, else the atom `max(x, y)`."""
    return _dim_extreme(x, y, "max")


def dim_min(x, y):
    return _dim_extreme(x, y, "min")


def _dim_extreme(x, y, kind):
    if not isinstance(x, DimExpr) and not isinstance(y, DimExpr):
        return max(x, y) if kind == "max" else min(x, y)
    if _nonneg(x - y):
        return x if kind == "max" else y
    if _nonneg(y - x):
        return y if kind == "max" else x
    return DimExpr._atom((kind, x, y), _scope_of(x, y))


def _nonneg(e):
    """Whether e >= 0 for every value of the variables (False when unknown)."""
    return e >= 0 if isinstance(e, int) else e._sign_of(e) == 1


def variables_of(d):
    return d.variables() if isinstance(d, DimExpr) else []


def _eval_dim(d, env):
    return d._eval(env) if isinstance(d, DimExpr) else d


def evaluate(d, env):
    """The value of dimension `d` for the variables' values in `env` (ints,
    or expressions when substituting one scope into another)."""
    return d._eval(env) if isinstance(d, DimExpr) else d


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z_0-9]*)|(//|\.\.\.|[-+*%^(),]))")


class _Parser:
    def __init__(self, text, scope):
        self.text, self.scope = text, scope
        self.toks = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                self.error(f"unexpected character at position {pos}")
            self.toks.append(m.group(1) or m.group(2) or m.group(3))
            pos = m.end()
        self.i = 0

    def error(self, why):
        raise ValueError(f"syntax error in symbolic shape {self.text!r}: {why}")

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, want=None):
        t = self.peek()
        if t is None or (want is not None and t != want):
            self.error(f"expected {want or 'more'}, found {t or 'the end'}")
        self.i += 1
        return t

    def shape(self):
        dims = []
        paren = self.peek() == "("
        if paren:
            self.take("(")
        while self.peek() not in (None, ")"):
            if self.peek() == "...":
                self.take()
                dims.append(...)
            else:
                dims.append(self.expr())
            if self.peek() == ",":
                self.take()
            elif self.peek() not in (None, ")"):
                self.error(f"expected ',' found {self.peek()}")
        if paren:
            self.take(")")
        if self.peek() is not None:
            self.error(f"unexpected {self.peek()}")
        return tuple(dims)

    def expr_only(self):
        e = self.expr()
        if self.peek() is not None:
            self.error(f"unexpected {self.peek()}")
        return e

    def expr(self):
        e = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            t = self.term()
            e = e + t if op == "+" else e - t
        return e

    def term(self):
        e = self.factor()
        while self.peek() in ("*", "//", "%"):
            op = self.take()
            f = self.factor()
            e = e * f if op == "*" else e // f if op == "//" else e % f
        return e

    def factor(self):
        if self.peek() == "-":
            self.take()
            return -self.factor()
        base = self.atom()
        if self.peek() == "^":
            self.take()
            k = self.take()
            if not k.isdigit():
                self.error("a power must be an integer")
            base = base ** int(k)
        return base

    def atom(self):
        t = self.take()
        if t.isdigit():
            return int(t)
        if t == "(":
            e = self.expr()
            self.take(")")
            return e
        if t in ("max", "min", "floordiv", "mod") and self.peek() == "(":
            self.take("(")
            a = self.expr()
            self.take(",")
            b = self.expr()
            self.take(")")
            return (dim_max(a, b) if t == "max" else dim_min(a, b) if t == "min"
                    else a // b if t == "floordiv" else a % b)
        if t[0].isalpha() or t[0] == "_":
            return self.scope._var(t)
        self.error(f"unexpected {t}")


def parse_dim(text, scope):
    """One dimension expression (as `str(DimExpr)` prints it) in `scope`."""
    return _Parser(text, scope).expr_only()


def parse_shape(text, scope):
    """A shape string ("b, 2*n, 4"); `...` stays as Ellipsis."""
    return _Parser(text, scope).shape()


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None):
    """JAX's `export.symbolic_shape`: a tuple of dimensions (ints and
    `DimExpr`s) for a spec such as `"b, 2*n, 4"`; variables are >= 1,
    `constraints` (`"b >= 16"`, `"b <= 64"`, `"a + b >= 2*c"`) narrow them.
    `like` fills `_` dims and checks constant dims against a concrete shape."""
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`")
    if shape_spec is None:
        shape_spec = "..."
    dims = parse_shape(str(shape_spec), scope)
    if like is not None:
        like = tuple(like)
        if ... in dims:
            k = dims.index(...)
            dims = dims[:k] + like[k:k + len(like) - len(dims) + 1] + dims[k + 1:]
        if len(dims) != len(like):
            raise ValueError(f"symbolic shape {shape_spec!r} has {len(dims)} dimensions, "
                             f"the array {len(like)}")
        for d, c in zip(dims, like):
            if isinstance(d, int) and c is not None and d != c:
                raise ValueError(f"symbolic shape {shape_spec!r}: dimension {d} does not "
                                 f"match the array's {c}")
    elif ... in dims:
        raise ValueError(f"symbolic shape {shape_spec!r}: '...' needs the array's shape "
                         "(use symbolic_args_specs)")
    return dims

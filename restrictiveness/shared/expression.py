"""Nonlinear formulas: safe parsing, symbolic derivatives and compiled residuals.

A nonlinear formula such as ``"ce ~ z_lo + (z_hi - z_lo) * exp(-beta * (-log(p))**alpha)"``
names a response, covariate columns and parameters. It is read with Python's :mod:`ast` and
checked against an allow-list — numbers, names, ``+ - * / **``, unary minus, the functions in
:data:`FUNCTIONS`, and comparisons joined by ``&``, ``|``, ``~``, ``and``, ``or``, ``not`` only
as the condition of ``where(condition, a, b)`` — and anything else (attribute access, subscripts,
other calls, keyword arguments, lambdas, dunder names, strings) is refused with a
:class:`~restrictiveness.shared.exceptions.FormulaError` that names the offending token. The
user's text is never evaluated: the checked tree is translated node by node into a sympy
expression, differentiated symbolically with respect to every parameter, and printed by this
module's own printer as a scalar loop that numba compiles (names become ``v0, v1, …`` for
columns and ``t0, t1, …`` for parameters, numbers are printed from their float values).

Two numerical details of the generated code:

* ``b**e · log b`` (the derivative of a power with respect to its exponent) is evaluated as
  ``xlogy(b**e, b)``, 0 where ``b**e`` is 0, so a zero prize raised to a utility curvature has
  the derivative 0 it has in the limit instead of ``0 · (−∞) = NaN``;
* ``abs``, ``minimum``, ``maximum``, ``clip`` and ``where`` become piecewise expressions, whose
  derivatives are piecewise (one-sided at the kinks); ``minimum``, ``maximum`` and ``clip`` are
  numpy's, NaN where an argument is NaN and ``clip(x, lo, hi) = minimum(maximum(x, lo), hi)``.

The compiled callback ``resjac(x, (X, y, logscale), want_jac) -> (r, J)`` returns the residuals
``f(X; θ) − y`` and their Jacobian with respect to the *internal* parameters ``x``: parameter
``k`` is ``θ_k = exp(x_k)`` when ``logscale[k]`` is nonzero (a positive parameter searched on the
log scale) and ``θ_k = x_k`` otherwise. Its numba type is :func:`callback_type`, the callback
:func:`restrictiveness.shared._multistart_nb.multistart_for`.
:meth:`CompiledExpression.numpy_functions` gives an independent NumPy evaluation (sympy's own
printer) that tests compare it with.
"""

from __future__ import annotations

import ast
import functools
import keyword
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from . import pyast
from .exceptions import FormulaError
from .forksafe import ForkSafeLock

__all__ = ["FUNCTIONS", "NonlinearFormula", "parse_nonlinear", "CompiledExpression",
           "compile_expression", "callback_type", "linear_parameters"]

#: Functions a nonlinear formula may call, with their number of arguments.
FUNCTIONS: dict[str, int] = {
    "exp": 1, "log": 1, "log1p": 1, "expm1": 1, "log2": 1, "log10": 1, "sqrt": 1, "abs": 1,
    "sin": 1, "cos": 1, "tan": 1, "arcsin": 1, "arccos": 1, "arctan": 1, "sinh": 1, "cosh": 1,
    "tanh": 1, "arcsinh": 1, "arctanh": 1, "expit": 1,
    "minimum": 2, "maximum": 2, "power": 2, "clip": 3, "where": 3,
}
#: Named constants (a parameter of the same name takes precedence; a data column of the same
#: name is refused, as the formula could mean either).
CONSTANTS = {"pi": math.pi}

_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_CMPOPS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


@dataclass(frozen=True)
class NonlinearFormula:
    """A checked nonlinear formula ``response ~ expression``.

    Attributes
    ----------
    text : str
        The formula as written.
    response : str
        The left-hand side column.
    params : tuple of str
        The declared parameters, in declaration order.
    variables : tuple of str
        Names the expression uses that are not parameters (data columns), in order of first
        appearance.
    expression : str
        The right-hand side, normalised (``ast.unparse`` of the checked tree).
    constants : tuple of str
        Named constants (:data:`CONSTANTS`) the expression uses.

    Examples
    --------
    >>> f = parse_nonlinear("ce ~ z_lo + (z_hi - z_lo) * p**gamma", ["gamma"])
    >>> f.response, f.params, f.variables
    ('ce', ('gamma',), ('z_lo', 'z_hi', 'p'))
    """

    text: str
    response: str
    params: tuple[str, ...]
    variables: tuple[str, ...]
    expression: str
    tree: ast.Expression = field(repr=False, compare=False)
    constants: tuple[str, ...] = ()

    def check_columns(self, columns: Sequence[str], response: str | None = None) -> None:
        """Refuse a formula whose names are not columns, or whose parameters collide with them.

        Raises
        ------
        FormulaError
            Naming the first name that is neither a column nor a declared parameter, or a
            column that has the name of a constant the formula uses (``pi``).
        """
        columns = list(columns)
        both = [c for c in self.constants if c in columns]
        if both:  # a column 'pi' was replaced by 3.14159... without a word
            raise FormulaError(
                f"formula {self.text!r}: {both} name both a data column and a constant "
                f"({', '.join(f'{c} = {CONSTANTS[c]!r}' for c in both)}), so which one the formula "
                "means cannot be told; rename the column")
        for name in self.variables:
            if name not in columns:
                raise FormulaError(
                    f"formula {self.text!r}: {name!r} is neither a data column nor a declared "
                    f"parameter; columns are {columns}, parameters {list(self.params)} (declare "
                    "a parameter by giving it bounds)")
        clash = [q for q in self.params if q in columns]
        if clash:
            raise FormulaError(f"formula {self.text!r}: {clash} name both a parameter and a data "
                               "column; rename the parameter")
        if response is not None and response != self.response:
            raise FormulaError(f"formula {self.text!r} explains {self.response!r}, but the "
                               f"response is {response!r}")


def parse_nonlinear(text: str, params: Sequence[str]) -> NonlinearFormula:
    """Parse and check a nonlinear formula without evaluating any of it.

    Parameters
    ----------
    text : str
        ``"response ~ expression"``.
    params : sequence of str
        The parameters; every other name is a data column.

    Returns
    -------
    NonlinearFormula

    Raises
    ------
    FormulaError
        Naming the token that is not allowed.

    Examples
    --------
    >>> parse_nonlinear("y ~ a * exp(-b * x)", ["a", "b"]).variables
    ('x',)
    >>> parse_nonlinear("y ~ x.__class__", ["a"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.FormulaError: ... attribute access 'x.__class__' is not ...
    """
    if not isinstance(text, str) or text.count("~") != 1:
        raise FormulaError(f"a nonlinear formula is one string 'response ~ expression', got "
                           f"{text!r}")
    lhs, rhs = (s.strip() for s in text.split("~"))
    if not lhs.isidentifier() or lhs.startswith("__"):
        raise FormulaError(f"formula {text!r}: the response must be a single column name, "
                           f"got {lhs!r}")
    params = tuple(params)
    for q in params:
        if not (isinstance(q, str) and q.isidentifier()) or q.startswith("__"):
            raise FormulaError(f"parameter names must be identifiers, got {q!r}")
        if q in FUNCTIONS:
            raise FormulaError(f"parameter {q!r} has the name of a function; rename it")
    try:
        tree = pyast.parse(rhs, mode="eval")
        names: list[str] = []
        _check(tree.body, text, set(params), names, boolean=False)
    except SyntaxError as exc:
        # a parameter or column 'lambda' (loss aversion) was only 'invalid syntax'
        words = [w for w in re.findall(r"[^\W\d]\w*", rhs)
                 if keyword.iskeyword(w) and w not in ("and", "or", "not")]
        hint = f": {words[0]!r} is a Python keyword, which a formula cannot use as a name; " \
            f"rename the parameter or column (e.g. {words[0] + '_'!r})" if words else ""
        raise FormulaError(f"formula {text!r} cannot be parsed: {exc.msg}{hint}") from None
    except RecursionError:  # e.g. a sum of thousands of terms
        raise FormulaError(f"formula {text[:60]!r}... is too long or too deeply nested to "
                           "check; write it with fewer terms") from None
    if lhs in names:  # y ~ a * y fitted the response on itself
        raise FormulaError(f"formula {text!r}: the response {lhs!r} also appears on the "
                           "right-hand side")
    if lhs in params:
        raise FormulaError(f"formula {text!r}: the response {lhs!r} is also a parameter")
    constants = tuple(dict.fromkeys(
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in CONSTANTS
        and n.id not in params))
    return NonlinearFormula(text=text, response=lhs, params=params, variables=tuple(names),
                            expression=ast.unparse(tree), tree=tree, constants=constants)


def _refuse(node: ast.AST, text: str, what: str) -> FormulaError:
    return FormulaError(f"formula {text!r}: {what} {ast.unparse(node)!r} is not allowed")


def _check(node: ast.AST, text: str, params: set[str], names: list[str], boolean: bool) -> None:
    """Walk the tree against the allow-list; ``boolean`` says a condition is expected."""
    is_bool = _is_condition(node)
    if boolean and not is_bool:
        raise FormulaError(f"formula {text!r}: the condition of where() must be a comparison, "
                           f"got {ast.unparse(node)!r}")
    if not boolean and is_bool:
        raise FormulaError(f"formula {text!r}: the comparison {ast.unparse(node)!r} can only be "
                           "the condition of where(condition, a, b)")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise _refuse(node, text, "the constant")
        if not math.isfinite(_constant(node) or 0.0):  # 400 digits overflowed in compiling
            raise FormulaError(f"formula {text!r}: the constant {ast.unparse(node)[:40]!r} is "
                               "not a finite real number")
        return
    if isinstance(node, ast.Name):
        if node.id.startswith("__"):
            raise _refuse(node, text, "the name")
        if node.id in FUNCTIONS:
            raise FormulaError(f"formula {text!r}: the function {node.id!r} must be called "
                               f"({node.id}(...)); a data column named {node.id!r} must be "
                               "renamed to be used")
        if node.id not in params and node.id not in CONSTANTS and node.id not in names:
            names.append(node.id)
        return
    if isinstance(node, ast.BinOp):
        op = type(node.op)
        if boolean and op in (ast.BitAnd, ast.BitOr):
            pass
        elif op not in _BINOPS:
            raise FormulaError(f"formula {text!r}: the operator in {ast.unparse(node)!r} is "
                               "not allowed (use + - * / **)")
        _check(node.left, text, params, names, boolean)
        _check(node.right, text, params, names, boolean)
        if op is ast.Pow:  # sympy would compute 10 ** 10 ** 10 exactly, for ever
            value = _constant(node)
            if value is not None and not math.isfinite(value):
                raise FormulaError(f"formula {text!r}: the constant {ast.unparse(node)!r} is "
                                   "not a finite real number")
        return
    if isinstance(node, ast.UnaryOp):
        if boolean and isinstance(node.op, ast.Not | ast.Invert):
            _check(node.operand, text, params, names, True)
            return
        if not isinstance(node.op, ast.USub | ast.UAdd):
            raise _refuse(node, text, "the operator in")
        _check(node.operand, text, params, names, False)
        return
    if isinstance(node, ast.BoolOp) and boolean:
        for v in node.values:
            _check(v, text, params, names, True)
        return
    if isinstance(node, ast.Compare) and boolean:
        if not all(isinstance(o, _CMPOPS) for o in node.ops):
            raise _refuse(node, text, "the comparison")
        for v in (node.left, *node.comparators):
            _check(v, text, params, names, False)
        return
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            if isinstance(node.func, ast.Attribute):
                raise FormulaError(
                    f"formula {text!r}: attribute access {ast.unparse(node.func)!r} is not "
                    "allowed; call the functions by their bare names (exp, log, ...)")
            raise _refuse(node.func, text, "the call of")
        fname = node.func.id
        if fname not in FUNCTIONS:
            raise FormulaError(f"formula {text!r}: the function {fname!r} is not allowed; "
                               f"allowed functions are {sorted(FUNCTIONS)}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise FormulaError(f"formula {text!r}: {fname}() takes positional arguments only")
        if len(node.args) != FUNCTIONS[fname]:
            raise FormulaError(f"formula {text!r}: {fname}() takes {FUNCTIONS[fname]} "
                               f"argument(s), got {len(node.args)}")
        for k, a in enumerate(node.args):
            _check(a, text, params, names, fname == "where" and k == 0)
        return
    if isinstance(node, ast.Attribute):
        raise FormulaError(f"formula {text!r}: attribute access {ast.unparse(node)!r} is not "
                           "allowed; call the functions by their bare names (exp, log, ...)")
    kind = {ast.Subscript: "the subscript", ast.Lambda: "the lambda",
            ast.IfExp: "the conditional expression (use where())"}.get(type(node), "the term")
    raise _refuse(node, text, kind)


def _constant(node: ast.AST) -> float | None:
    """The value of a subexpression made of numbers only (inf or nan where the arithmetic
    overflows or divides by zero), or None when it involves a name.

    Examples
    --------
    >>> _constant(ast.parse("2 ** -1", mode="eval").body)
    0.5
    >>> _constant(ast.parse("2 * a", mode="eval").body) is None
    True
    >>> _constant(ast.parse("10 ** 10 ** 10", mode="eval").body)
    inf
    """
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        try:
            return float(node.value)
        except OverflowError:
            return math.inf
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _constant(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _constant(node.left), _constant(node.right)
        if a is None or b is None:
            return None
        try:
            if isinstance(node.op, ast.Pow):
                v = a ** b
                return math.nan if isinstance(v, complex) else v
            if isinstance(node.op, ast.Div):
                return a / b
            return a + b if isinstance(node.op, ast.Add) else a - b \
                if isinstance(node.op, ast.Sub) else a * b
        except (OverflowError, ZeroDivisionError):
            return math.inf
    return None


def _is_condition(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare | ast.BoolOp):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.Invert):
        return True
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd | ast.BitOr)


# ---------------------------------------------------------------------------------------------
# symbolic translation (sympy is imported only here, when a model is compiled)
# ---------------------------------------------------------------------------------------------

def _sympy():
    import sympy

    return sympy


def _xlogy_class():
    sp = _sympy()

    class xlogy(sp.Function):  # noqa: N801 - the name sympy's NumPy printer looks up
        """``a · log b``, 0 where ``a`` is 0 (``a`` is ``b**e``, so ``b = 0`` gives 0)."""

        nargs = 2

    return xlogy


_XLOGY = None


def _to_sympy(node: ast.AST, symbols: dict):
    sp = _sympy()
    from sympy.codegen.cfunctions import expm1, log1p, log2, log10

    if isinstance(node, ast.Constant):
        return sp.Integer(node.value) if isinstance(node.value, int) else sp.Float(node.value)
    if isinstance(node, ast.Name):
        if node.id in symbols:
            return symbols[node.id]
        return sp.pi if node.id == "pi" else sp.Float(CONSTANTS[node.id])
    if isinstance(node, ast.BinOp):
        a, b = _to_sympy(node.left, symbols), _to_sympy(node.right, symbols)
        op = type(node.op)
        return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                ast.Div: lambda: a / b, ast.Pow: lambda: a ** b,
                ast.BitAnd: lambda: sp.And(a, b), ast.BitOr: lambda: sp.Or(a, b)}[op]()
    if isinstance(node, ast.UnaryOp):
        v = _to_sympy(node.operand, symbols)
        if isinstance(node.op, ast.USub):
            return -v
        return sp.Not(v) if isinstance(node.op, ast.Not | ast.Invert) else v
    if isinstance(node, ast.BoolOp):
        vals = [_to_sympy(v, symbols) for v in node.values]
        return sp.And(*vals) if isinstance(node.op, ast.And) else sp.Or(*vals)
    if isinstance(node, ast.Compare):
        rel = {ast.Lt: sp.StrictLessThan, ast.LtE: sp.LessThan, ast.Gt: sp.StrictGreaterThan,
               ast.GtE: sp.GreaterThan, ast.Eq: sp.Eq, ast.NotEq: sp.Ne}
        terms = [_to_sympy(v, symbols) for v in (node.left, *node.comparators)]
        return sp.And(*[rel[type(o)](terms[k], terms[k + 1]) for k, o in enumerate(node.ops)])
    # _check admitted nothing else
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    f = node.func.id
    a = [_to_sympy(v, symbols) for v in node.args]
    unary = {"exp": sp.exp, "log": sp.log, "log1p": log1p, "expm1": expm1, "log2": log2,
             "log10": log10, "sqrt": sp.sqrt, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan,
             "arcsin": sp.asin, "arccos": sp.acos, "arctan": sp.atan, "sinh": sp.sinh,
             "cosh": sp.cosh, "tanh": sp.tanh, "arcsinh": sp.asinh, "arctanh": sp.atanh}
    if f in unary:
        return unary[f](a[0])
    if f == "expit":
        return 1 / (1 + sp.exp(-a[0]))
    if f == "power":
        return a[0] ** a[1]
    if f == "abs":
        return sp.Piecewise((a[0], a[0] >= 0), (-a[0], True))
    if f in ("minimum", "maximum", "clip"):
        return _extremum(f, a)
    return sp.Piecewise((a[1], a[0]), (a[2], True))  # where


def _extremum(f: str, a: list):
    """numpy's ``minimum``, ``maximum`` and ``clip`` as piecewise expressions.

    Plus :func:`_nanguard` of the arguments, so a NaN in any argument gives NaN as numpy's do
    (``minimum(log(x - a), 1)`` was 1 where the log is undefined: sympy folds the last branch's
    condition to True, which NaN takes); ``clip(x, lo, hi)`` is numpy's
    ``minimum(maximum(x, lo), hi)``, so ``hi`` when ``lo > hi`` (it was ``lo``).
    """
    sp = _sympy()
    if f == "minimum":
        value = sp.Piecewise((a[0], a[0] <= a[1]), (a[1], True))
    elif f == "maximum":
        value = sp.Piecewise((a[0], a[0] >= a[1]), (a[1], True))
    else:
        value = sp.Piecewise((a[2], sp.Or(a[0] > a[2], a[1] > a[2])), (a[1], a[0] < a[1]),
                             (a[0], True))
    return value + _nanguard()(*a)


_NANGUARD = None


def _nanguard():
    """``nanguard(a, b, ...)``: 0, or NaN where an argument is NaN; its derivative is 0."""
    global _NANGUARD
    if _NANGUARD is None:
        sp = _sympy()

        class nanguard(sp.Function):  # noqa: N801 - printed by name
            def fdiff(self, argindex=1):
                return sp.Integer(0)

        _NANGUARD = nanguard
    return _NANGUARD


def _with_xlogy(expr):
    """Rewrite products ``b**e · log(b) · …`` as ``xlogy(b**e, b) · …`` (see module notes)."""
    sp = _sympy()
    global _XLOGY
    if _XLOGY is None:
        _XLOGY = _xlogy_class()
    if expr.is_Atom:
        return expr
    args = [_with_xlogy(a) for a in expr.args]
    if isinstance(expr, sp.Mul):
        args = list(args)
        for i, fac in enumerate(args):
            if isinstance(fac, sp.log):
                base = fac.args[0]
                for j, other in enumerate(args):
                    if j != i and isinstance(other, sp.Pow) and other.base == base \
                            and not other.exp.is_negative:
                        args[j] = _XLOGY(other, base)
                        args[i] = sp.Integer(1)
                        break
        return sp.Mul(*args)
    return expr.func(*args) if args != list(expr.args) else expr


# ---------------------------------------------------------------------------------------------
# printing the scalar loop
# ---------------------------------------------------------------------------------------------

_MATH = {"exp": "math.exp", "log": "math.log", "log1p": "math.log1p", "expm1": "math.expm1",
         "log2": "math.log2", "log10": "math.log10", "sin": "math.sin", "cos": "math.cos",
         "tan": "math.tan", "asin": "math.asin", "acos": "math.acos", "atan": "math.atan",
         "sinh": "math.sinh", "cosh": "math.cosh", "tanh": "math.tanh", "asinh": "math.asinh",
         "atanh": "math.atanh"}


class _Printer:
    """Python source of a sympy expression for a scalar numba loop (names mapped in advance)."""

    def __init__(self, names: dict) -> None:
        self.names = names
        self.sp = _sympy()

    def __call__(self, e) -> str:  # noqa: C901 - one branch per node type
        sp = self.sp
        if e in self.names:
            return self.names[e]
        if e is sp.true or e is sp.false:
            return "True" if e is sp.true else "False"
        if e.is_Number:
            if e.is_Integer:
                return repr(float(int(e)))
            if e.is_finite is False or e is sp.nan:
                raise FormulaError("the formula evaluates to an infinite or undefined constant "
                                   f"({e}); check divisions by zero")
            return repr(float(e))
        if e is sp.pi:
            return repr(math.pi)
        if e is sp.E:
            return repr(math.e)
        if isinstance(e, sp.Add):
            return "(" + " + ".join(self(a) for a in e.args) + ")"
        if isinstance(e, sp.Mul):
            return "(" + " * ".join(self(a) for a in e.args) + ")"
        if isinstance(e, sp.Pow):
            b, x = e.args
            if x == sp.Rational(1, 2):
                return f"math.sqrt({self(b)})"
            if x == sp.Rational(-1, 2):
                return f"(1.0 / math.sqrt({self(b)}))"
            if x == -1:
                return f"(1.0 / {self(b)})"
            if x.is_Integer and -8 <= int(x) < 0:  # numba's 0.0 ** -2 raises ZeroDivisionError
                return f"(1.0 / ({self(b)} ** {-int(x)}))"  # whatever the error model; 1/0 = inf
            if x.is_Integer and abs(int(x)) <= 8:
                return f"({self(b)} ** {int(x)})"
            return f"({self(b)} ** {self(x)})"
        if e.func.__name__ == "nanguard":
            ok = " and ".join(f"{v} == {v}" for v in (self(x) for x in e.args))  # NaN != NaN
            return f"(0.0 if {ok} else math.nan)"
        if e.func.__name__ == "xlogy":
            a, b = (self(v) for v in e.args)
            return f"(0.0 if {a} == 0.0 else {a} * math.log({b}))"
        if isinstance(e, sp.Abs):  # sympy's own, from sqrt(x**2) of a real x
            return f"abs({self(e.args[0])})"
        if isinstance(e, sp.sign):  # the derivative of Abs
            z = self(e.args[0])
            return f"(1.0 if {z} > 0.0 else (-1.0 if {z} < 0.0 else ({z} * 0.0)))"
        if e.func.__name__ in _MATH:
            return f"{_MATH[e.func.__name__]}({self(e.args[0])})"
        if isinstance(e, sp.Piecewise):
            out = "math.nan"
            for value, cond in reversed(e.args):
                out = (self(value) if cond is sp.true
                       else f"({self(value)} if {self(cond)} else {out})")
            return out
        if isinstance(e, sp.core.relational.Relational):
            return f"({self(e.lhs)} {e.rel_op} {self(e.rhs)})"
        if isinstance(e, sp.And | sp.Or):
            op = " and " if isinstance(e, sp.And) else " or "
            return "(" + op.join(self(a) for a in e.args) + ")"
        if isinstance(e, sp.Not):
            return f"(not {self(e.args[0])})"
        if isinstance(e, sp.ITE):  # sympy's fold of a piecewise inside a condition
            c, a, b = (self(v) for v in e.args)
            return f"({a} if {c} else {b})"
        raise FormulaError(f"the term {e} of the formula cannot be compiled")


# ---------------------------------------------------------------------------------------------
# compilation
# ---------------------------------------------------------------------------------------------

@functools.cache
def callback_type():
    """numba type of the compiled callbacks, ``(x, (X, y, logscale), want_jac) -> (r, J)``."""
    import numba

    arr1, arr2 = numba.float64[::1], numba.float64[:, ::1]
    args = numba.types.Tuple((arr2, arr1, numba.int64[::1]))
    return numba.types.FunctionType(numba.types.Tuple((arr1, arr2))(arr1, args, numba.boolean))


@dataclass
class CompiledExpression:
    """A formula's value and Jacobian compiled for a scalar loop.

    Attributes
    ----------
    formula : NonlinearFormula
    resjac : numba dispatcher
        ``resjac(x, (X, y, logscale), want_jac) -> (r, J)`` (module notes); ``X`` holds the
        formula's variables as columns, in :attr:`NonlinearFormula.variables` order.
    source : str
        The generated Python source (for inspection; it contains no user text).
    value, derivatives : sympy expressions
        ``f`` and ``∂f/∂θ_k`` in the parameters' natural scale.
    linear : tuple of bool
        Per parameter, whether it is in a set of parameters the formula is jointly linear in
        (:func:`linear_parameters`).
    """

    formula: NonlinearFormula
    resjac: Callable[..., tuple[np.ndarray, np.ndarray]]
    source: str
    value: object
    derivatives: list
    linear: tuple[bool, ...] = ()

    def values(self, theta: np.ndarray, X: np.ndarray, jacobian: bool = False):
        """``f(X; θ)`` (and ``∂f/∂θ`` with ``jacobian=True``) at natural-scale ``θ``."""
        # numba types read-only arrays apart: contiguous writable float64 (copies if needed)
        X = np.require(X, float, ["C", "W"])
        args = (X, np.zeros(X.shape[0]), np.zeros(len(self.formula.params), dtype=np.int64))
        f, J = self.resjac(np.require(theta, float, ["C", "W"]), args, jacobian)
        return (f, J) if jacobian else f

    def numpy_functions(self):
        """Independent NumPy evaluation, ``(f(θ, X), J(θ, X))`` by sympy's NumPy printer (tests)."""
        sp = _sympy()
        import scipy.special

        thetas = [self._symbols[q] for q in self.formula.params]
        xs = [self._symbols[v] for v in self.formula.variables]
        def nanguard(*v):
            return sum(np.where(np.isnan(a), np.nan, 0.0) for a in v)

        mods = [{"xlogy": scipy.special.xlogy, "nanguard": nanguard}, "numpy"]
        f = sp.lambdify([thetas, xs], self.value, modules=mods)
        d = sp.lambdify([thetas, xs], self.derivatives, modules=mods)

        def rows(theta, X):  # parameters as columns too: numpy's logical_or of a scalar
            X = np.asarray(X, float)  # and an array (a condition on both) fails
            return [np.full(len(X), float(t)) for t in theta], list(X.T)

        def value(theta, X):
            return np.broadcast_to(f(*rows(theta, X)), len(X)) * 1.0

        def jac(theta, X):
            cols = d(*rows(theta, X))
            return np.stack([np.broadcast_to(c, len(X)) * 1.0 for c in cols], axis=1)

        return value, jac

    _symbols: dict = field(default_factory=dict, repr=False)


_CACHE: dict[tuple, CompiledExpression] = {}
_LOCK = ForkSafeLock()


def compile_expression(formula: NonlinearFormula) -> CompiledExpression:
    """Differentiate and compile a checked formula (cached per process by its content).

    Examples
    --------
    >>> import numpy as np
    >>> c = compile_expression(parse_nonlinear("y ~ a * exp(b * x)", ["a", "b"]))
    >>> f, J = c.values(np.array([2.0, 0.5]), np.array([[0.0], [2.0]]), jacobian=True)
    >>> f.round(4).tolist(), J[1].round(4).tolist()
    ([2.0, 5.4366], [2.7183, 10.8731])
    """
    key = (formula.expression, formula.params, formula.variables)
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = _compile(formula)
        return _CACHE[key]


def _compile(formula: NonlinearFormula) -> CompiledExpression:
    import numba

    sp = _sympy()
    symbols = {q: sp.Symbol(f"t{k}", real=True) for k, q in enumerate(formula.params)}
    symbols.update({v: sp.Symbol(f"v{j}", real=True) for j, v in enumerate(formula.variables)})
    value = _to_sympy(formula.tree.body, symbols)
    if not isinstance(value, sp.Expr):
        raise FormulaError(f"formula {formula.text!r} does not define a number")
    if value.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise FormulaError(f"formula {formula.text!r} evaluates to an infinite or undefined "
                           "constant; check divisions by zero")
    if value.has(sp.I):  # log(-2) is log(2) + iπ to sympy
        raise FormulaError(f"formula {formula.text!r} has a complex constant (e.g. the log or "
                           "square root of a negative number); a model's values must be real")
    derivs = [_with_xlogy(sp.diff(value, symbols[q])) for q in formula.params]
    for q, d in zip(formula.params, derivs, strict=True):
        if d == 0:
            raise FormulaError(f"formula {formula.text!r}: its derivative with respect to "
                               f"parameter {q!r} is zero everywhere (the parameter is unused, "
                               "or appears only in a condition); least squares cannot move it")
    names = {s: str(s) for s in symbols.values()}
    p = len(formula.params)
    lines = ["def resjac(x, args, want_jac):",
             "    X, y, logscale = args",
             "    n = X.shape[0]",
             "    r = np.empty(n)"]
    for k in range(p):
        lines.append(f"    t{k} = math.exp(x[{k}]) if logscale[{k}] != 0 else x[{k}]")
        lines.append(f"    s{k} = t{k} if logscale[{k}] != 0 else 1.0")
    for full in (True, False):
        exprs = [value, *derivs] if full else [value]
        reps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols("c"), optimizations=None)
        pr = _Printer({**names, **{s: str(s) for s, _ in reps}})
        lines.append("    if want_jac:" if full else "    else:")
        lines.append(f"        J = np.empty(({'n' if full else '0'}, {p}))")
        lines.append("        for i in range(n):")
        for j in range(len(formula.variables)):
            lines.append(f"            v{j} = X[i, {j}]")
        for s, e in reps:
            lines.append(f"            {s} = {pr(e)}")
        lines.append(f"            r[i] = {pr(reduced[0])} - y[i]")
        if full:
            for k in range(p):
                lines.append(f"            J[i, {k}] = {pr(reduced[1 + k])} * s{k}")
    lines.append("    return r, J")
    source = "\n".join(lines) + "\n"
    namespace = {"math": math, "np": np}
    exec(compile(source, f"<nonlinear formula {formula.text!r}>", "exec"), namespace)  # noqa: S102 - generated source, no user text
    # error_model="numpy": 1/0 is inf (a derivative at a bound, sqrt(a) at a = 0), not
    # ZeroDivisionError, so such points are skipped as not finite rather than end the fit
    resjac = numba.njit(callback_type().signature, error_model="numpy")(namespace["resjac"])
    out = CompiledExpression(formula, resjac, source, value, derivs,
                             linear_parameters(value, derivs,
                                               [symbols[q] for q in formula.params]))
    out._symbols = symbols
    return out


def linear_parameters(value, derivatives: Sequence, thetas: Sequence) -> tuple[bool, ...]:
    """A set of parameters a formula is jointly linear in, ``f = Σ_{k∈L} θ_k g_k + h`` with
    ``g_k`` and ``h`` free of ``θ_L``: no derivative ``∂f/∂θ_k``, ``k ∈ L``, contains a
    parameter of ``L`` (every second derivative within ``L`` is zero; as they are symmetric, a
    parameter joins when its own derivative is free of itself and of those taken before it),
    and no parameter of ``L`` is in a condition of a piecewise term (``where``, ``abs``,
    ``minimum``...: sympy's derivative with respect to a switch point drops the jump, so
    ``where(x > c, a, b) + c`` has ``∂f/∂c = 1``). Built greedily in declaration order, so
    maximal (no parameter can join) though not always the largest: ``a * b * exp(-c * x)`` is
    linear in ``a`` and in ``b`` but not in both, and gives ``{a}``.

    Examples
    --------
    >>> c = compile_expression(parse_nonlinear("y ~ a * exp(-b * x) + c", ["a", "b", "c"]))
    >>> linear_parameters(c.value, c.derivatives, [c._symbols[q] for q in "abc"])
    (True, False, True)
    """
    sp = _sympy()
    switches = set().union(*(c.free_symbols for pw in value.atoms(sp.Piecewise)
                             for _, c in pw.args))
    chosen: list[int] = []
    for k, d in enumerate(derivatives):
        if thetas[k] not in switches and not d.free_symbols & {thetas[j] for j in [*chosen, k]}:
            chosen.append(k)
    return tuple(k in chosen for k in range(len(derivatives)))

"""The one place that talks to patsy: response and design matrices from formulas.

Formulas are read with patsy's own parser (``ModelDesc.from_formula``) and the variables of each
factor with patsy's ``ast_names``, so transforms, splines, categorical terms and interactions
(``np.log(x1)``, ``bs(x, df=3)``, ``C(g)``, ``x1:x2``) are understood rather than guessed at:
the names a formula uses that are neither numpy (``np``) nor patsy's built-in functions
(``bs``, ``C``, ``center``, ``I``, ...) are its covariates. Designs are built in that fixed
namespace, never in the caller's, and keep the training data's state for new data (spline
knots, centring means, category levels).

Errors are translated into :class:`~restrictiveness.shared.exceptions.FormulaError` naming the
missing column, and missing values raise :class:`~restrictiveness.shared.exceptions.DataError`
instead of being dropped silently.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import patsy

from . import pyast
from .checks import numeric_column
from .exceptions import DataError, FormulaError

__all__ = ["Formula", "parse_formula", "FORMULA_ENV", "check_study_columns", "check_response"]

#: The namespace formulas are evaluated in (patsy adds its built-ins: bs, C, center, I, ...).
FORMULA_ENV = patsy.EvalEnvironment([{"np": np}])
_RESERVED = frozenset({"np", *patsy.builtins.__all__})


@dataclass(frozen=True)
class Formula:
    """A parsed ``"y ~ x1 + x2"`` formula.

    Attributes
    ----------
    text : str
        The formula as written.
    response : str or None
        The response variable (None for a one-sided formula).
    covariates : tuple of str
        Variables the right-hand side uses, in order of appearance.

    Examples
    --------
    >>> f = parse_formula("ce ~ z_hi + z_lo + p")
    >>> f.response, f.covariates
    ('ce', ('z_hi', 'z_lo', 'p'))
    """

    text: str
    response: str | None
    covariates: tuple[str, ...]

    @property
    def intercept_only(self) -> bool:
        """True when the right-hand side is the intercept alone (``y ~ 1``)."""
        return self._description().rhs_termlist == [patsy.INTERCEPT]

    @property
    def plain(self) -> bool:
        """True when every right-hand-side term is a bare column name (no transforms or
        interactions), so the design is those columns as they are."""
        return all(len(t.factors) == 1 and t.factors[0].code in self.covariates
                   for t in self._description().rhs_termlist if t != patsy.INTERCEPT)

    def _description(self, intercept: bool = True) -> patsy.ModelDesc:
        desc = patsy.ModelDesc.from_formula(self.text.split("~", 1)[-1])
        if intercept:
            return desc
        return patsy.ModelDesc([], [t for t in desc.rhs_termlist if t != patsy.INTERCEPT])

    def design(self, data: pd.DataFrame) -> np.ndarray:
        """Right-hand-side design matrix (with intercept unless the formula removes it)."""
        return np.asarray(self.design_matrix(data), dtype=float)

    def column_names(self, data: pd.DataFrame, intercept: bool = True) -> list[str]:
        """Names of the design matrix's columns, e.g. ``['Intercept', 'x1']``."""
        return list(self.design_matrix(data, intercept).design_info.column_names)

    def check_response(self, response: str) -> None:
        """Refuse a training sample whose response is not this formula's left-hand side (a
        one-sided formula fits any): :func:`check_response` with this formula's response.

        Examples
        --------
        >>> parse_formula("~ x").check_response("y")  # passes silently
        """
        check_response(self.response, response, f"formula {self.text!r}")

    def response_values(self, data: pd.DataFrame) -> np.ndarray:
        """The response column as a float array."""
        if self.response is None:
            raise FormulaError(f"formula {self.text!r} has no response (left-hand side)")
        _check_columns(data, (self.response,), self.text)
        y = np.asarray(data[self.response], dtype=float)
        if not np.isfinite(y).all():
            raise DataError(f"response {self.response!r} contains NaN or infinite values")
        return y

    def design_builder(self, data: pd.DataFrame, intercept: bool = True):
        """Design matrix on ``data`` and a function that builds the same design on new data.

        Stateful transforms (``center(x)``, ``bs(x, df=3)``, categorical levels) keep the
        training data's state. ``intercept=False`` drops the intercept term (learners that
        need no constant column: categorical terms are then coded with every level).

        Examples
        --------
        >>> import numpy as np
        >>> X, build = parse_formula("y ~ np.log(x) + center(x)").design_builder(
        ...     {"x": np.array([1.0, np.e])}, intercept=False)
        >>> build({"x": np.array([np.e ** 2])}).round(3).tolist()
        [[2.0, 5.53]]
        """
        info = self.design_matrix(data, intercept).design_info
        numeric = [c for c in self.covariates if np.asarray(data[c]).dtype.kind in "biuf"]

        def build(newdata: pd.DataFrame) -> np.ndarray:
            _check_columns(newdata, self.covariates, self.text)
            if isinstance(newdata, pd.DataFrame):
                # text in a column that was numbers in training failed inside patsy with
                # "AttributeError: 'DataFrame' object has no attribute 'dtype'"
                for c in numeric:
                    numeric_column(newdata[c], f"formula {self.text!r} at new data")
            try:
                (X,) = patsy.build_design_matrices([info], newdata, NA_action="raise")
            except patsy.PatsyError as exc:  # e.g. NaN covariates at prediction
                raise self._patsy_error(exc, newdata) from None
            return np.asarray(X, dtype=float)

        return build(data), build

    def design_matrix(self, data: pd.DataFrame, intercept: bool = True) -> patsy.DesignMatrix:
        """The patsy design matrix of the right-hand side, validated."""
        _check_columns(data, self.covariates, self.text)
        try:
            X = patsy.dmatrix(self._description(intercept), data, eval_env=FORMULA_ENV,
                              NA_action="raise")
        except patsy.PatsyError as exc:
            raise self._patsy_error(exc, data) from None
        if not np.isfinite(np.asarray(X)).all():
            raise DataError(f"formula {self.text!r}: the design matrix has infinite values")
        return X

    def _patsy_error(self, exc: patsy.PatsyError, data) -> DataError | FormulaError:
        """The package's error for a patsy failure on data: missing values, or the formula."""
        if "missing values" in str(exc):
            if not any(pd.isna(np.asarray(data[c])).any() for c in self.covariates):
                # np.log(x) at x <= 0 is NaN too: "the data contain missing values" sent the
                # user looking for NaN that the data did not have
                return DataError(f"formula {self.text!r}: a transform gives NaN on these data "
                                 "(e.g. np.log or np.sqrt of a negative number), though the "
                                 "data have no missing values")
            return DataError(f"formula {self.text!r}: the data contain missing values (NaN); "
                             "drop or impute them first")
        return FormulaError(f"formula {self.text!r} cannot be evaluated: {exc}")


def check_response(declared: str | None, response: str, who: str) -> None:
    """Refuse a training sample whose response is not the one a model declares.

    Parameters
    ----------
    declared : str or None
        The model's response (a formula's left-hand side); None fits any response.
    response : str
        The training sample's response name.
    who : str
        The model, for the message.

    Raises
    ------
    FormulaError
        Naming both responses.

    Examples
    --------
    >>> check_response("ce", "ce", "CPT")  # passes silently
    >>> check_response("z", "y", "formula 'z ~ x'")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.FormulaError: formula 'z ~ x' names the response 'z', ...
    """
    if declared is not None and declared != response:
        raise FormulaError(f"{who} names the response {declared!r}, but the training sample's "
                           f"response is {response!r}")


def parse_formula(text: str) -> Formula:
    """Parse a formula into its response and the variables its right-hand side uses.

    Parameters
    ----------
    text : str
        A patsy formula such as ``"y ~ x1 + x2"``, ``"y ~ bs(x, df=3) + C(g)"`` or ``"~ x1"``.

    Returns
    -------
    Formula

    Examples
    --------
    >>> parse_formula("y ~ bs(x, df=3) + np.log(x1):C(g)").covariates
    ('x', 'x1', 'g')
    """
    if not isinstance(text, str) or not text.strip():
        raise FormulaError("formula must be a non-empty string such as 'y ~ x1 + x2'")
    return _parse(text)


# A study parses its procedures' formulas in every fit (0.6 ms each); a Formula is immutable.
@functools.lru_cache(maxsize=512)
def _parse(text: str) -> Formula:
    if text.count("~") > 1:
        raise FormulaError(f"formula {text!r} has more than one '~'")
    try:
        desc = patsy.ModelDesc.from_formula(text)
        factors = [f for t in desc.rhs_termlist for f in t.factors]
        names: list[str] = []
        for f in factors:
            for name in [*patsy.eval.ast_names(f.code), *_quoted(f.code)]:
                if name not in _RESERVED and name not in names:
                    names.append(name)
    except (patsy.PatsyError, SyntaxError) as exc:
        raise FormulaError(f"formula {text!r} cannot be parsed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - patsy's tokenizer asserts on some input ('=')
        raise FormulaError(f"formula {text!r} cannot be parsed "
                           f"({type(exc).__name__}{': ' + str(exc) if str(exc) else ''})"
                           ) from None
    called = [n.func.id for f in factors for n in ast.walk(pyast.parse(f.code))
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
              and n.func.id not in _RESERVED]
    if called:  # 'y ~ log(x)' was "names column(s) ['log'] that the data do not have"
        numpy = f"numpy's (np.{called[0]}) or " if hasattr(np, called[0]) else "numpy's or "
        raise FormulaError(f"formula {text!r} calls {called[0]}(), which is not a formula "
                           f"function; use {numpy}patsy's (I, C, bs, cr, center, standardize, "
                           "...)")
    for f in factors:
        _check_calls(f.code, text)
    response = None
    if "~" in text and text.split("~", 1)[0].strip():
        lhs = [f.code for t in desc.lhs_termlist for f in t.factors]
        if len(lhs) != 1 or not lhs[0].isidentifier() or lhs[0] in _RESERVED:
            raise FormulaError(f"formula {text!r}: the response must be a single column name "
                               "(transform it in the data, not in the formula)")
        response = lhs[0]
        if response in names:  # y ~ y + x fitted the response on itself
            raise FormulaError(f"formula {text!r}: the response {response!r} also appears on "
                               "the right-hand side")
    return Formula(text=text, response=response, covariates=tuple(names))


def _check_calls(code: str, text: str) -> None:
    """Refuse a call that cannot succeed on any data: a numpy name numpy lacks (``np.lg``), or
    arguments the function does not take (``bs(x, dff=3)``).

    patsy finds these only when it evaluates the formula, so a study's every fit failed and
    r̂ repeated the baseline's (1.000), after all its replications.
    """
    for node in ast.walk(pyast.parse(code)):
        if not isinstance(node, ast.Call):
            continue
        chain: list[str] = []
        func = node.func
        while isinstance(func, ast.Attribute):
            chain.insert(0, func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            continue
        if func.id == "np" and chain:
            target: object = np
            for k, attr in enumerate(chain):
                if not hasattr(target, attr):
                    raise FormulaError(f"formula {text!r}: numpy has no "
                                       f"{'.'.join(['np', *chain[:k + 1]])}")
                target = getattr(target, attr)
        elif func.id in patsy.builtins.__all__ and not chain:
            target = getattr(patsy.builtins, func.id)
            stateful = getattr(target, "__patsy_stateful_transform__", None)
            if stateful is not None:  # bs, cr, center, ...: its arguments are memorize_chunk's
                target = functools.partial(stateful.memorize_chunk, None)
        else:
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) \
                or any(k.arg is None for k in node.keywords):
            continue
        try:
            signature = inspect.signature(target)  # type: ignore[arg-type]
        except (TypeError, ValueError):  # numpy's ufuncs have none
            continue
        try:
            signature.bind(*node.args, **{k.arg: k.value for k in node.keywords if k.arg})
        except TypeError as exc:
            name = ".".join([func.id, *chain])
            raise FormulaError(f"formula {text!r}: {name}() cannot take these arguments "
                               f"({exc})") from None


def _quoted(code: str) -> list[str]:
    """Column names quoted with patsy's ``Q("name")``."""
    return [n.args[0].value for n in ast.walk(pyast.parse(code))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Q"
            and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)]


def _check_columns(data, names, text: str) -> None:
    # A DataFrame, or a mapping of column name to array (patsy is ~10x faster on plain arrays,
    # which matters when a study fits a formula thousands of times).
    if not hasattr(data, "keys"):
        raise FormulaError("formula data must be a pandas DataFrame or a mapping of columns")
    missing = [c for c in names if c not in data.keys()]
    if missing:
        raise FormulaError(
            f"formula {text!r} names column(s) {missing} that the data do not have; "
            f"available columns: {list(data.keys())}"
        )
    repeated_columns(data, names, f"formula {text!r}")


def repeated_columns(data, names, who: str) -> None:
    """Refuse a DataFrame in which a column that ``names`` lists occurs more than once
    (pandas then returns both; which one is meant cannot be told)."""
    columns = getattr(data, "columns", None)
    if columns is not None and not columns.is_unique:
        twice = sorted({c for c in names if list(columns).count(c) > 1})
        if twice:
            raise DataError(f"{who}: the data have more than one column named {twice}; "
                            "rename or drop the copies")


def check_study_columns(formula: str | None, columns: Sequence[str], response: str,
                        covariates: bool = True, uses: Sequence[str] | None = None) -> None:
    """Check a procedure's formula against a study's covariates and response before any fit.

    A study runs thousands of fits; a name it lacks would fail every one of them and leave only
    the baseline's predictions, so it is refused once, up front.

    Parameters
    ----------
    formula : str or None
        The procedure's formula (None: no formula).
    columns : sequence of str
        The study's covariate names.
    response : str
        The study's response name.
    covariates : bool
        Refuse a formula without covariates (``"y ~ 1"``).
    uses : sequence of str, optional
        The covariates the procedure reads, when they are not the formula's (a model with
        default columns and no formula).

    Raises
    ------
    FormulaError
        Naming the missing columns, the study's covariates and its response.

    Examples
    --------
    >>> check_study_columns("y ~ x1 + np.log(x2)", ["x1", "x2"], "y")  # passes silently
    >>> check_study_columns("y ~ x3", ["x1", "x2"], "y")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.FormulaError: formula 'y ~ x3' names column(s) ['x3'] ...
    >>> check_study_columns(None, ["hi", "lo", "prob"], "ce", uses=("z_hi", "z_lo", "p"))
    ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.FormulaError: the procedure reads column(s) ['z_hi', ...]
    that the study does not have; ... name the columns in a formula
    """
    f = None if formula is None else parse_formula(formula)
    used = list(uses) if uses is not None else ([] if f is None else list(f.covariates))
    missing = [c for c in used if c not in columns]
    if f is not None and f.response is not None and f.response != response:
        missing.append(f.response)
    if missing:
        who = "the procedure reads" if f is None else f"formula {formula!r} names"
        hint = "; name the columns in a formula" if f is None else ""
        raise FormulaError(f"{who} column(s) {missing} that the study does not have; covariates "
                           f"are {list(columns)} and the response is {response!r}{hint}")
    if covariates and f is not None and not f.covariates:
        raise FormulaError(f"formula {formula!r} has no covariates on the right-hand side; this "
                           "procedure needs at least one")

"""The one place that talks to patsy: response and design matrices from formulas.

Errors are translated into :class:`~restrictiveness.shared.exceptions.FormulaError` naming the
missing column, and missing values raise :class:`~restrictiveness.shared.exceptions.DataError`
instead of being dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import patsy

from .exceptions import DataError, FormulaError

__all__ = ["Formula", "parse_formula"]


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

    def design(self, data: pd.DataFrame) -> np.ndarray:
        """Right-hand-side design matrix (with intercept unless the formula removes it)."""
        return np.asarray(self.design_matrix(data), dtype=float)

    def column_names(self, data: pd.DataFrame) -> list[str]:
        """Names of the design matrix's columns, e.g. ``['Intercept', 'x1']``."""
        return list(self.design_matrix(data).design_info.column_names)

    def response_values(self, data: pd.DataFrame) -> np.ndarray:
        """The response column as a float array."""
        if self.response is None:
            raise FormulaError(f"formula {self.text!r} has no response (left-hand side)")
        _check_columns(data, (self.response,), self.text)
        y = np.asarray(data[self.response], dtype=float)
        if not np.isfinite(y).all():
            raise DataError(f"response {self.response!r} contains NaN or infinite values")
        return y

    def design_builder(self, data: pd.DataFrame):
        """Design matrix on ``data`` and a function that builds the same design on new data.

        Stateful transforms (``center(x)``, categorical levels) keep the training data's state.
        """
        info = self.design_matrix(data).design_info

        def build(newdata: pd.DataFrame) -> np.ndarray:
            _check_columns(newdata, self.covariates, self.text)
            (X,) = patsy.build_design_matrices([info], newdata, NA_action="raise")
            return np.asarray(X, dtype=float)

        return build(data), build

    def design_matrix(self, data: pd.DataFrame) -> patsy.DesignMatrix:
        """The patsy design matrix of the right-hand side, validated."""
        _check_columns(data, self.covariates, self.text)
        rhs = self.text.split("~", 1)[-1]
        try:
            X = patsy.dmatrix(rhs, data, NA_action="raise")
        except patsy.PatsyError as exc:
            if "missing values" in str(exc):
                raise DataError(f"formula {self.text!r}: the data contain missing values "
                                "(NaN); drop or impute them first") from None
            raise FormulaError(f"formula {self.text!r} cannot be evaluated: {exc}") from None
        if not np.isfinite(np.asarray(X)).all():
            raise DataError(f"formula {self.text!r}: the design matrix has infinite values")
        return X


_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9.]*")
_FUNCS = {"C", "I", "Q", "np", "log", "exp", "sqrt", "center", "standardize", "scale", "bs",
          "cr", "cc", "te", "poly", "Treatment", "Sum", "Diff", "Poly", "Helmert"}


def parse_formula(text: str) -> Formula:
    """Parse a formula into its response and the variables its right-hand side uses.

    Parameters
    ----------
    text : str
        A patsy formula such as ``"y ~ x1 + x2"`` or ``"~ x1"``.

    Returns
    -------
    Formula
    """
    if not isinstance(text, str) or not text.strip():
        raise FormulaError("formula must be a non-empty string such as 'y ~ x1 + x2'")
    if text.count("~") > 1:
        raise FormulaError(f"formula {text!r} has more than one '~'")
    lhs, rhs = text.split("~", 1) if "~" in text else ("", text)
    response = lhs.strip() or None
    if response is not None and not _NAME.fullmatch(response):
        raise FormulaError(f"formula {text!r}: the response must be a single column name")
    try:
        desc = patsy.ModelDesc.from_formula(rhs)
    except patsy.PatsyError as exc:
        raise FormulaError(f"formula {text!r} cannot be parsed: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - patsy's tokenizer asserts on some input ('=')
        raise FormulaError(f"formula {text!r} cannot be parsed "
                           f"({type(exc).__name__}{': ' + str(exc) if str(exc) else ''})"
                           ) from None
    names: list[str] = []
    for term in desc.rhs_termlist:
        for factor in term.factors:
            for name in _NAME.findall(factor.name()):
                if name not in _FUNCS and name not in names and not name.startswith("np."):
                    names.append(name)
    return Formula(text=text, response=response, covariates=tuple(names))


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

"""Binary lotteries as covariates: the ``(z_hi, z_lo, p)`` matrix every lottery model reads.

A lottery pays ``z_hi`` with probability ``p`` and ``z_lo`` otherwise (SPEC §6); prizes are
normalised by the largest prize (150 in the experiment), so they lie in ``[0, 1]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..shared.checks import numeric_columns
from ..shared.exceptions import DataError, FormulaError
from ..shared.formula import parse_formula

__all__ = ["LOTTERY_COLUMNS", "lottery_matrix", "lottery_columns"]

LOTTERY_COLUMNS: tuple[str, str, str] = ("z_hi", "z_lo", "p")
"""Covariate names of a binary lottery, in the order the kernels read them."""


def lottery_columns(formula: str | None) -> tuple[str, str, str]:
    """The columns a lottery model's formula names for ``(z_hi, z_lo, p)``, in order.

    Lottery models read three columns as they are: a transform (``np.log(z_hi)``) or any other
    term cannot be honoured and is refused.

    Examples
    --------
    >>> lottery_columns("ce ~ hi + lo + prob")
    ('hi', 'lo', 'prob')
    """
    if formula is None:
        return LOTTERY_COLUMNS
    f = parse_formula(formula)
    if len(f.covariates) != 3 or not f.plain or f.intercept_only:
        raise FormulaError(f"formula {formula!r} must name three covariates playing "
                           "(z_hi, z_lo, p), in that order, as bare column names (lottery "
                           "models cannot honour transforms or other terms)")
    return f.covariates


def lottery_matrix(X: np.ndarray | pd.DataFrame, columns: Sequence[str] | None = None,
                   names: Sequence[str] = LOTTERY_COLUMNS, shift: float = 0.0) -> np.ndarray:
    """Validated contiguous ``(n, 3)`` array of ``(z_hi, z_lo, p)`` from named covariates.

    Parameters
    ----------
    X : ndarray or DataFrame
        Covariates, observations along the first axis (a DataFrame's columns are its names).
    columns : sequence of str, optional
        Names of the columns of ``X``; ``None`` means ``X`` already is ``(z_hi, z_lo, p)``.
    names : sequence of three str
        The columns that play ``z_hi``, ``z_lo`` and ``p``, in that order.
    shift : float
        Utility shift: prizes must satisfy ``z + shift ≥ 0``.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> import numpy as np
    >>> lottery_matrix(np.array([[0.5, 1.0, 0.0]]), ("p", "z_hi", "z_lo"))
    array([[1. , 0. , 0.5]])
    """
    if isinstance(X, pd.DataFrame):
        # only the lottery's own columns: another column of text (a participant's name) made
        # the whole frame's conversion fail with a bare ValueError
        missing = [c for c in names if c not in X.columns]
        if missing:
            raise FormulaError(f"the lottery covariates need column(s) {missing}; available "
                               f"columns: {list(X.columns)}")
        numeric_columns(X, names, "lottery covariates")  # a repeated one: the first was read
        X, columns = X[list(names)].to_numpy(dtype=float), list(names)
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise DataError(f"lottery covariates X must be two-dimensional, got shape {X.shape}")
    if columns is not None:
        if X.shape[1] != len(columns):  # was an IndexError below
            raise DataError(f"lottery covariates X have {X.shape[1]} columns for the "
                            f"{len(columns)} names {list(columns)}")
        missing = [c for c in names if c not in columns]
        if missing:
            raise FormulaError(f"the lottery covariates need column(s) {missing}; available "
                               f"columns: {list(columns)}")
        X = X[:, [list(columns).index(c) for c in names]]
    elif X.shape[1] != 3:
        raise DataError(f"lottery covariates X must have 3 columns (z_hi, z_lo, p), "
                        f"got {X.shape[1]}")
    if not np.isfinite(X).all():
        raise DataError("lottery covariates X contain NaN or infinite values")
    if (X[:, 2] < 0).any() or (X[:, 2] > 1).any():
        raise DataError("lottery probabilities p must lie in [0, 1]")
    swapped = np.flatnonzero(X[:, 1] > X[:, 0])
    if swapped.size:  # rank-dependent weights would go to the wrong prize, silently
        raise DataError(f"lottery low prizes z_lo exceed high prizes z_hi in {swapped.size} "
                        f"row(s) (first: row {swapped[0]}); give z_hi >= z_lo")
    if (X[:, :2] + shift < 0).any():
        raise DataError("lottery prizes must be nonnegative (z + shift >= 0); normalise them "
                        "to [0, 1]")
    return np.ascontiguousarray(X)

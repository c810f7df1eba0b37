"""Binary lotteries as covariates: the ``(z_hi, z_lo, p)`` matrix every lottery model reads.

A lottery pays ``z_hi`` with probability ``p`` and ``z_lo`` otherwise (SPEC §6); prizes are
normalised by the largest prize (150 in the experiment), so they lie in ``[0, 1]``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..shared.checks import describe_rows, numeric_columns
from ..shared.exceptions import DataError, FormulaError
from ..shared.formula import parse_formula

__all__ = ["LOTTERY_COLUMNS", "lottery_matrix", "lottery_columns", "warn_outside_prizes"]

LOTTERY_COLUMNS: tuple[str, str, str] = ("z_hi", "z_lo", "p")
"""Covariate names of a binary lottery, in the order the kernels read them."""


def lottery_columns(formula: str | None) -> tuple[str, str, str]:
    """The columns a lottery model's formula names for ``(z_hi, z_lo, p)``, in order.

    Lottery models read three columns as they are: a transform (``np.log(z_hi)``) or any other
    term cannot be honoured and is refused. The covariates play their roles by position, since
    a data set may name its prizes anything; a column named like a role (``z_hi``, ``z_lo``,
    ``p``) in another role's position (``"ce ~ z_lo + z_hi + p"``) contradicts itself and is
    refused too (it failed every fit, or fitted the prizes as probabilities).

    Examples
    --------
    >>> lottery_columns("ce ~ hi + lo + prob")
    ('hi', 'lo', 'prob')
    >>> lottery_columns("ce ~ p + z_hi + z_lo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.FormulaError: formula 'ce ~ p + z_hi + z_lo' puts ...
    """
    if formula is None:
        return LOTTERY_COLUMNS
    f = parse_formula(formula)
    if len(f.covariates) != 3 or not f.plain or f.intercept_only:
        raise FormulaError(f"formula {formula!r} must name three covariates playing "
                           "(z_hi, z_lo, p), in that order, as bare column names (lottery "
                           "models cannot honour transforms or other terms)")
    misplaced = [f"{c!r} in the position of {role!r}"
                 for c, role in zip(f.covariates, LOTTERY_COLUMNS, strict=True)
                 if c in LOTTERY_COLUMNS and c != role]
    if misplaced:
        hint = (f", '{f.response or 'ce'} ~ z_hi + z_lo + p'"
                if set(f.covariates) == set(LOTTERY_COLUMNS) else "")
        raise FormulaError(f"formula {formula!r} puts {', '.join(misplaced)}: a lottery "
                           "formula's covariates play (z_hi, z_lo, p) by position; write the "
                           "high prize, the low prize and the high prize's probability in that "
                           f"order{hint}")
    return f.covariates


def lottery_matrix(X: np.ndarray | pd.DataFrame, columns: Sequence[str] | None = None,
                   names: Sequence[str] = LOTTERY_COLUMNS, shift: float = 0.0,
                   rows: pd.Index | None = None) -> np.ndarray:
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
    rows : Index, optional
        Labels of the rows, for the errors (default: a DataFrame's index, else positions).

    Returns
    -------
    ndarray

    Raises
    ------
    DataError
        Naming the offending rows and columns: a probability outside [0, 1], a low prize above
        the high prize, a prize below ``-shift``, or a value that is not finite.

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
        rows = X.index if rows is None else rows
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
    finite = np.isfinite(X).all()
    zh, zl, p = X[:, 0], X[:, 1], X[:, 2]
    if finite and p.min(initial=0.0) >= 0 and p.max(initial=0.0) <= 1 and (zl <= zh).all() \
            and zl.min(initial=0.0) + shift >= 0:  # zl <= zh: the low prizes bound both
        return np.ascontiguousarray(X)
    # name the rows (by the data's labels) and the columns: "row 2" of a participant's subset
    # was a position, not the label df.loc finds
    hi_, lo_, p_ = (f"{c!r}" if c == role else f"{c!r} ({role})"
                    for c, role in zip(names, LOTTERY_COLUMNS, strict=True))
    below = f"below {-shift:g}" if shift else "below 0 (the models are for gains)"
    with np.errstate(invalid="ignore"):
        for bad, what in ((~np.isfinite(X).all(axis=1),
                           f"NaN or infinite values in {hi_}, {lo_} or {p_}"),
                          ((p < 0) | (p > 1), f"probabilities {p_} outside [0, 1]"),
                          (zl > zh, f"the low prize {lo_} above the high prize {hi_} "
                                    "(rank-dependent weights would go to the wrong prize)"),
                          ((X[:, :2] + shift < 0).any(axis=1), f"prizes {hi_} or {lo_} {below}")):
            if bad.any():
                raise DataError(f"lottery covariates: {what} in {describe_rows(bad, rows)}")
    return np.ascontiguousarray(X)



def warn_outside_prizes(Z: np.ndarray, y: np.ndarray, rows: pd.Index | None = None) -> None:
    """Warn when certainty equivalents ``y`` lie outside their lotteries' prizes.

    Every model of the package predicts a certainty equivalent between a lottery's prizes
    (an RDU or CPT value is a utility's inverse at a weighted mean of the prizes' utilities;
    GP regression is clipped there), so such a response is one no model can reach: fitted to
    it, a model only adds its distance to the residuals. It may be a choice the subject made
    (Bruhin et al.'s Zurich 2003 data hold none), or a sign of columns swapped or of
    responses in other units than the prizes; the fit goes on and the warning names the rows.

    Parameters
    ----------
    Z : ndarray
        ``(n, 3)`` lotteries ``(z_hi, z_lo, p)`` (from :func:`lottery_matrix`).
    y : ndarray
        ``(n,)`` certainty equivalents.
    rows : Index, optional
        Labels of the rows, for the warning (default: positions).

    Warns
    -----
    UserWarning
        Naming how many certainty equivalents lie outside and up to five of their rows.

    Examples
    --------
    >>> import warnings
    >>> Z = np.array([[1.0, 0.0, 0.5], [0.6, 0.2, 0.3], [0.9, 0.1, 0.8]])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_outside_prizes(Z, np.array([0.5, 0.7, 0.05]))
    >>> text = str(caught[0].message)
    >>> text[:17], text.split(": ")[1].split(";")[0]
    ('2 of 3 certainty ', '2 row(s) (rows [1, 2])')
    """
    # a relative margin: a response equal to a prize, rescaled like it, may differ by an ulp
    margin = 1e-12 * np.maximum(1.0, np.abs(Z[:, :2]).max(axis=1))
    outside = (y < Z[:, 1] - margin) | (y > Z[:, 0] + margin)
    if outside.any():
        warnings.warn(f"{int(outside.sum())} of {len(y)} certainty equivalents lie outside "
                      f"their lottery's prizes [z_lo, z_hi]: {describe_rows(outside, rows)}; no "
                      "model of this package predicts a value there (each predicts between "
                      "the prizes), so these responses only add to the residuals. Check the "
                      "data: prize columns swapped, or responses in other units than the "
                      "prizes", UserWarning, stacklevel=3)

"""Training samples: covariate locations with their noise-free labels."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .exceptions import DataError

__all__ = ["Sample", "as_frame", "as_columns", "merge_repeats"]


def merge_repeats(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Repeated rows of ``X`` merged into one with the mean of their values, in
    first-occurrence order.

    Draws with replacement (``FiniteSet``) repeat locations. A rule has one value per location,
    so the noise-free labels of a GP regression, or the latent draws of a pseudo-truth (which
    differ by the jitter alone), are merged before anything that treats rows as distinct points.

    Returns
    -------
    X_merged, y_merged : ndarray
        The distinct rows and the mean value of each (``X`` and ``y`` themselves when no row
        repeats).
    at : ndarray of int
        The merged row of every original row (``y_merged[at]`` spreads merged values back).

    Examples
    --------
    >>> X, y, at = merge_repeats(np.array([[1.0], [0.0], [1.0]]), np.array([2.0, 5.0, 4.0]))
    >>> X.ravel().tolist(), y.tolist(), at.tolist()
    ([1.0, 0.0], [3.0, 5.0], [0, 1, 0])
    """
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    if len(first) == len(X):
        return X, y, np.arange(len(X))
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    at = rank[inverse.ravel()]
    return X[first[order]], np.bincount(at, weights=y) / np.bincount(at), at


def as_columns(X: np.ndarray, columns: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Two-dimensional covariates as a mapping of column name to array (formula input)."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"covariates with {X.ndim} dimensions have no table form")
    return {c: X[:, k] for k, c in enumerate(columns)}


def as_frame(X: np.ndarray, columns: tuple[str, ...]) -> pd.DataFrame:
    """Two-dimensional covariates as a DataFrame with named columns.

    Examples
    --------
    >>> import numpy as np
    >>> as_frame(np.zeros((2, 2)), ("a", "b")).columns.tolist()
    ['a', 'b']
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"covariates with {X.ndim} dimensions have no table form; "
                         "procedures on structured inputs (markets) read the arrays directly")
    return pd.DataFrame(X, columns=list(columns))


@dataclass(frozen=True, eq=False)
class Sample:
    """A noise-free training sample ``{(X_i, f(X_i))}``.

    Parameters
    ----------
    X : ndarray
        Covariates: observations along the first axis, named columns along the last
        (``(n, d)`` for lotteries; ``(n_markets, J, 3)`` for markets of J products).
    y : ndarray
        Labels, observations along the first axis (``(n,)`` or ``(n_markets, J)``).
    columns : tuple of str
        Names of the last axis of ``X``.
    response : str
        Name of the label, the left-hand side of formulas.

    Raises
    ------
    DataError
        If ``X`` and ``y`` differ in their number of observations, or the last axis of ``X``
        does not match ``columns``.

    Examples
    --------
    >>> import numpy as np
    >>> s = Sample(np.array([[0.0, 1.0], [2.0, 3.0]]), np.array([1.0, 5.0]), ("a", "b"))
    >>> len(s), s.response
    (2, 'y')
    """

    X: np.ndarray
    y: np.ndarray
    columns: tuple[str, ...]
    response: str = "y"

    def __post_init__(self) -> None:
        if isinstance(self.columns, str) or len(set(self.columns)) != len(self.columns) \
                or not all(isinstance(c, str) for c in self.columns):
            raise DataError(f"Sample: columns must be distinct names, got {self.columns!r}")
        if not isinstance(self.response, str) or self.response in self.columns:
            raise DataError(f"Sample: the response must be a name other than the columns, got "
                            f"{self.response!r}")
        if np.shape(self.X)[0] != np.shape(self.y)[0]:
            raise DataError("Sample: X and y must have the same number of observations")
        if np.shape(self.X)[-1] != len(self.columns):
            raise DataError("Sample: the last axis of X must match columns")
        # a noise-free label is a number; NaN labels gave NaN fits without a word
        if not np.isfinite(np.asarray(self.y, dtype=float)).all():
            raise DataError("Sample: the labels y contain NaN or infinite values")

    def __len__(self) -> int:
        return int(np.shape(self.y)[0])

    def copy(self) -> Sample:
        """The sample with its own copies of ``X`` and ``y``.

        Studies and completeness estimates give each procedure a copy: the procedures of a
        replication share one sample (common random numbers), and a procedure that changed
        its arrays in place (standardising ``X``, say) changed what every later one saw.

        Returns
        -------
        Sample
            Equal in content and of the same class (a subclass's own fields included),
            sharing no array with this one.

        Examples
        --------
        >>> import numpy as np
        >>> s = Sample(np.array([[0.0], [2.0]]), np.array([1.0, 5.0]), ("a",))
        >>> c = s.copy()
        >>> c.X[:] = 9.0
        >>> s.X.ravel().tolist(), np.shares_memory(s.y, c.y)
        ([0.0, 2.0], False)
        """
        return copy.deepcopy(self)

    def columns_dict(self) -> dict[str, np.ndarray]:
        """Covariates and response as a mapping of name to array (fast formula input).

        Returns
        -------
        dict of str to ndarray
            One entry per column of ``X``, then the response.

        Examples
        --------
        >>> import numpy as np
        >>> s = Sample(np.array([[0.0, 1.0], [2.0, 3.0]]), np.array([1.0, 5.0]), ("a", "b"))
        >>> {k: v.tolist() for k, v in s.columns_dict().items()}
        {'a': [0.0, 2.0], 'b': [1.0, 3.0], 'y': [1.0, 5.0]}
        """
        out = as_columns(self.X, self.columns)
        out[self.response] = np.asarray(self.y, dtype=float)
        return out

    def frame(self) -> pd.DataFrame:
        """Covariates and response as one DataFrame (two-dimensional samples only).

        Returns
        -------
        DataFrame
            The columns of ``X``, then the response.

        Examples
        --------
        >>> import numpy as np
        >>> s = Sample(np.array([[0.0, 1.0], [2.0, 3.0]]), np.array([1.0, 5.0]), ("a", "b"))
        >>> s.frame()
             a    b    y
        0  0.0  1.0  1.0
        1  2.0  3.0  5.0
        """
        df = as_frame(self.X, self.columns)
        df[self.response] = np.asarray(self.y, dtype=float)
        return df

"""Cross-validation designs for completeness on real data (SPEC §5).

* :class:`CellMeansKFold` (lotteries, §3.1): K folds over observations; procedures are fitted to
  the per-cell means (25 lottery means) of the training responses and predict held-out
  individual responses; SE clustered by participant.
* :class:`RepeatedGroupKFold` (markets, §4.1): repeated K folds over groups (cities, both markets
  of a city together); loss per group averages its observations' (markets') losses; the
  repeated-fold SE of SPEC §5.

:class:`TableSample` turns rows of a data frame into a
:class:`~restrictiveness.shared.sample.Sample`; :func:`squared_error` is the default loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ...shared.checks import ids_of_one_type, is_whole, numeric_columns
from ...shared.exceptions import ConfigurationError, DataError
from ...shared.sample import Sample

__all__ = ["squared_error", "TableSample", "Fold", "CellMeansKFold", "RepeatedGroupKFold",
           "Design", "Loss", "ToSample"]

Loss = Callable[[np.ndarray, np.ndarray], np.ndarray]
ToSample = Callable[[pd.DataFrame], Sample]


def squared_error(y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Squared error per observation, averaged over any trailing axes.

    For scalar responses this is ``(y_i − ŷ_i)²``; for markets (``(n_markets, J)`` shares) it is
    the MSE over the J inside shares of each market.

    Examples
    --------
    >>> import numpy as np
    >>> squared_error(np.array([1.0, 2.0]), np.array([0.0, 2.0]))
    array([1., 0.])
    >>> squared_error(np.ones((1, 2)), np.array([[0.0, 1.0]]))
    array([0.5])
    """
    d = np.asarray(pred, dtype=float) - np.asarray(y, dtype=float)
    d = d.reshape(d.shape[0], -1)
    return np.mean(d * d, axis=1)


@dataclass(frozen=True)
class TableSample:
    """``to_sample`` for tabular data: one observation per row, named covariate columns.

    Parameters
    ----------
    covariates : tuple of str
        Columns forming ``X`` (in this order).
    response : str
        Column forming ``y``.

    Examples
    --------
    >>> import pandas as pd
    >>> s = TableSample(("z_hi", "z_lo", "p"), "ce")(
    ...     pd.DataFrame({"z_hi": [1.0], "z_lo": [0.0], "p": [0.5], "ce": [0.4]}))
    >>> s.X.shape, s.columns, s.response
    ((1, 3), ('z_hi', 'z_lo', 'p'), 'ce')
    """

    covariates: tuple[str, ...]
    response: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "covariates", tuple(self.covariates))
        if not self.covariates:
            raise ConfigurationError("TableSample: covariates must name at least one column")

    def __call__(self, frame: pd.DataFrame) -> Sample:
        missing = [c for c in (*self.covariates, self.response) if c not in frame.columns]
        if missing:
            raise DataError(f"TableSample: the data lack column(s) {missing}; "
                            f"available: {list(frame.columns)}")
        # text was parsed as numbers, complex cut to its real part, a repeated column misread
        numeric_columns(frame, (*self.covariates, self.response), "TableSample")
        X = frame[list(self.covariates)].to_numpy(dtype=float)
        y = frame[self.response].to_numpy(dtype=float)
        if not (np.isfinite(X).all() and np.isfinite(y).all()):
            raise DataError("TableSample: the data contain missing or infinite values in "
                            f"{list(self.covariates) + [self.response]}; drop or impute them")
        return Sample(X, y, self.covariates, self.response)


def _concat(samples: Sequence[Sample]) -> Sample:
    first = samples[0]
    return Sample(np.concatenate([np.asarray(s.X, dtype=float) for s in samples]),
                  np.concatenate([np.asarray(s.y, dtype=float) for s in samples]),
                  tuple(first.columns), first.response)


def _column(data: pd.DataFrame, name: str, role: str) -> np.ndarray:
    if name not in data.columns:
        raise DataError(f"the data lack the {role} column {name!r}; available: "
                        f"{list(data.columns)}")
    values = data[name]
    if values.isna().any():
        raise DataError(f"the {role} column {name!r} has missing values; every row needs one")
    ids_of_one_type(values, f"the {role} column {name!r}")
    return values.to_numpy()


def _column_name(value, role: str, design: str) -> str:
    """A design's column argument, which must name a column: a Series or an array would be
    matched to the rows by position, and a misaligned one silently so."""
    if not isinstance(value, str):
        raise ConfigurationError(f"{design}: {role} must be the name of a column of the data "
                                 f"(a str), got {type(value).__name__}; add the identifiers to "
                                 "the data as a column and name it")
    return value


@dataclass(frozen=True)
class Fold:
    """One training/test split: positional row indices into the data frame."""

    repeat: int
    fold: int
    train: np.ndarray
    test: np.ndarray


def _assign(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Random balanced fold labels 0..k−1 for n items (fold sizes differ by at most one)."""
    labels = np.empty(n, dtype=np.int64)
    labels[rng.permutation(n)] = np.arange(n) % k
    return labels


class CellMeansKFold:
    """K-fold cross-validation over observations, fitting to per-cell training means.

    Each fold's procedures receive one training observation per cell (e.g. per lottery): the
    cell's covariates and the mean response of its training observations; they predict every
    held-out observation. The SE clusters the held-out losses by ``cluster`` (SPEC §5, lotteries).

    Parameters
    ----------
    k : int
        Number of folds (10 in the paper).
    cell : str
        Column identifying cells; covariates must be constant within a cell.
    cluster : str
        Column identifying the clusters of the SE (participants).

    Examples
    --------
    >>> CellMeansKFold(k=10, cell="lottery", cluster="participant")
    CellMeansKFold(k=10, cell='lottery', cluster='participant')
    """

    se_method: Literal["clustered"] = "clustered"
    unit_name = "observation"

    def __init__(self, k: int = 10, cell: str = "lottery", cluster: str = "participant") -> None:
        if not is_whole(k) or k < 2:
            raise ConfigurationError(f"CellMeansKFold: k must be an integer >= 2, got {k!r}")
        self.k = int(k)
        self.cell = _column_name(cell, "cell", "CellMeansKFold")
        self.cluster = _column_name(cluster, "cluster", "CellMeansKFold")

    def __repr__(self) -> str:
        return f"CellMeansKFold(k={self.k}, cell={self.cell!r}, cluster={self.cluster!r})"

    @property
    def repeats(self) -> int:
        """Repetitions of the partition: always 1 (one K-fold partition)."""
        return 1

    def units(self, data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Held-out units (observations) and the cluster of each.

        Parameters
        ----------
        data : DataFrame
            The data, with the ``cell`` and ``cluster`` columns.

        Returns
        -------
        units : ndarray
            Row positions ``0, ..., n − 1``: every observation is a unit.
        clusters : ndarray
            The ``cluster`` column (participants), one per unit.

        Raises
        ------
        DataError
            A design column is missing or has missing values.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"lottery": [0, 0, 1, 1, 1, 2], "participant": [1, 2, 1, 2, 3, 3],
        ...                    "p": [0.5, 0.5, 0.9, 0.9, 0.9, 0.1],
        ...                    "ce": [1.0, 3.0, 2.0, 4.0, 6.0, 5.0]})
        >>> design = CellMeansKFold(k=3, cell="lottery", cluster="participant")
        >>> design.units(df)
        (array([0, 1, 2, 3, 4, 5]), array([1, 2, 1, 2, 3, 3]))
        """
        _column(data, self.cell, "cell")
        return np.arange(len(data)), _column(data, self.cluster, "cluster")

    def folds(self, data: pd.DataFrame, rng: np.random.Generator) -> list[Fold]:
        """A random partition of the observations into K balanced test folds.

        Parameters
        ----------
        data : DataFrame
            The data (only its length is used).
        rng : numpy.random.Generator
            Draws the partition.

        Returns
        -------
        list of Fold
            K folds; fold sizes differ by at most one and their test rows partition the data.

        Raises
        ------
        ConfigurationError
            Fewer observations than folds.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"lottery": [0, 0, 1, 1, 1, 2], "participant": [1, 2, 1, 2, 3, 3],
        ...                    "p": [0.5, 0.5, 0.9, 0.9, 0.9, 0.1],
        ...                    "ce": [1.0, 3.0, 2.0, 4.0, 6.0, 5.0]})
        >>> design = CellMeansKFold(k=3, cell="lottery", cluster="participant")
        >>> import numpy as np
        >>> folds = design.folds(df, np.random.default_rng(0))
        >>> [f.test.tolist() for f in folds]
        [[3, 4], [0, 2], [1, 5]]
        >>> folds[0].train.tolist()
        [0, 1, 2, 5]
        """
        n = len(data)
        if self.k > n:
            raise ConfigurationError(f"CellMeansKFold: k={self.k} folds need at least k "
                                     f"observations; the data have {n}")
        labels = _assign(n, self.k, rng)
        return [Fold(0, j, np.flatnonzero(labels != j), np.flatnonzero(labels == j))
                for j in range(self.k)]

    def training_sample(self, frame: pd.DataFrame, to_sample: ToSample) -> Sample:
        """One observation per cell: its covariates and the mean of its training responses.

        Parameters
        ----------
        frame : DataFrame
            The training rows.
        to_sample : callable DataFrame -> Sample
            One observation per row, in row order (e.g. :class:`TableSample`).

        Returns
        -------
        Sample
            One observation per cell present in ``frame``, cells in sorted order.

        Raises
        ------
        DataError
            Covariates vary within a cell.

        Examples
        --------
        Lottery 1's training responses 2, 4 and 6 average to 4:

        >>> import pandas as pd
        >>> df = pd.DataFrame({"lottery": [0, 0, 1, 1, 1, 2], "participant": [1, 2, 1, 2, 3, 3],
        ...                    "p": [0.5, 0.5, 0.9, 0.9, 0.9, 0.1],
        ...                    "ce": [1.0, 3.0, 2.0, 4.0, 6.0, 5.0]})
        >>> design = CellMeansKFold(k=3, cell="lottery", cluster="participant")
        >>> s = design.training_sample(df, TableSample(("p",), "ce"))
        >>> s.X.ravel().tolist(), s.y.tolist()
        ([0.5, 0.9, 0.1], [2.0, 4.0, 5.0])
        """
        s = to_sample(frame)
        if len(s) != len(frame):
            raise ConfigurationError("CellMeansKFold: to_sample must return one observation per "
                                     f"row (got {len(s)} for {len(frame)} rows)")
        cells = _column(frame, self.cell, "cell")
        _, first, inv = np.unique(cells, return_index=True, return_inverse=True)
        X, y = np.asarray(s.X, dtype=float), np.asarray(s.y, dtype=float)
        if not np.array_equal(X, X[first][inv]):
            raise DataError(f"CellMeansKFold: covariates vary within a cell of {self.cell!r}; "
                            "cell means need one covariate vector per cell")
        counts = np.bincount(inv).astype(float)
        sums = np.zeros((len(first),) + y.shape[1:])
        np.add.at(sums, inv, y)
        return Sample(X[first], sums / counts.reshape((-1,) + (1,) * (y.ndim - 1)),
                      tuple(s.columns), s.response)

    def test_sample(self, data: pd.DataFrame, rows: np.ndarray,
                    to_sample: ToSample) -> tuple[Sample, np.ndarray]:
        """Held-out observations and the unit (row position) of each.

        Parameters
        ----------
        data : DataFrame
            The whole data.
        rows : ndarray
            Positions of the held-out rows (a fold's ``test``).
        to_sample : callable DataFrame -> Sample
            One observation per row, in row order.

        Returns
        -------
        sample : Sample
            The held-out observations, individually (not averaged).
        units : ndarray
            The unit of each observation: its row position.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"lottery": [0, 0, 1, 1, 1, 2], "participant": [1, 2, 1, 2, 3, 3],
        ...                    "p": [0.5, 0.5, 0.9, 0.9, 0.9, 0.1],
        ...                    "ce": [1.0, 3.0, 2.0, 4.0, 6.0, 5.0]})
        >>> design = CellMeansKFold(k=3, cell="lottery", cluster="participant")
        >>> import numpy as np
        >>> s, units = design.test_sample(df, np.array([1, 4]), TableSample(("p",), "ce"))
        >>> s.y.tolist(), units.tolist()
        ([3.0, 6.0], [1, 4])
        """
        s = to_sample(data.iloc[rows])
        if len(s) != len(rows):
            raise ConfigurationError("CellMeansKFold: to_sample must return one observation per "
                                     f"row (got {len(s)} for {len(rows)} rows)")
        return s, np.asarray(rows)


class RepeatedGroupKFold:
    """Repeated K-fold cross-validation over groups (e.g. cities), never splitting a group.

    Procedures are fitted to ``to_sample`` of all training rows. The held-out loss of a group is
    the mean of its observations' losses (for markets: the MSE over inside shares of each market,
    averaged over the city's markets). The SE is the repeated-fold formula of SPEC §5.

    Parameters
    ----------
    repeats : int
        Repetitions R, each with a fresh random partition (5 in the paper).
    k : int
        Folds K per repetition (5 in the paper).
    group : str
        Column identifying groups (cities).

    Examples
    --------
    >>> RepeatedGroupKFold(repeats=5, k=5, group="city")
    RepeatedGroupKFold(repeats=5, k=5, group='city')
    """

    se_method: Literal["repeated-fold"] = "repeated-fold"
    unit_name = "group"

    def __init__(self, repeats: int = 5, k: int = 5, group: str = "city") -> None:
        if not is_whole(k) or k < 2:
            raise ConfigurationError(f"RepeatedGroupKFold: k must be an integer >= 2, got {k!r}")
        if not is_whole(repeats) or repeats < 1:
            raise ConfigurationError("RepeatedGroupKFold: repeats must be a positive integer, "
                                     f"got {repeats!r}")
        self.repeats, self.k = int(repeats), int(k)
        self.group = _column_name(group, "group", "RepeatedGroupKFold")

    def __repr__(self) -> str:
        return f"RepeatedGroupKFold(repeats={self.repeats}, k={self.k}, group={self.group!r})"

    def units(self, data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Held-out units (the distinct groups, sorted); each unit is its own cluster.

        Parameters
        ----------
        data : DataFrame
            The data, with the ``group`` column.

        Returns
        -------
        units : ndarray
            The sorted distinct groups.
        clusters : ndarray
            The same: the repeated-fold SE treats groups as independent.

        Raises
        ------
        DataError
            The group column is missing or has missing values.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"city": ["a", "a", "b", "b", "c", "d"],
        ...                    "price": [1.0, 2.0, 1.5, 2.5, 1.0, 3.0],
        ...                    "share": [0.3, 0.2, 0.25, 0.1, 0.4, 0.05]})
        >>> design = RepeatedGroupKFold(repeats=2, k=2, group="city")
        >>> design.units(df)[0].tolist()
        ['a', 'b', 'c', 'd']
        """
        groups = np.unique(_column(data, self.group, "group"))
        return groups, groups

    def folds(self, data: pd.DataFrame, rng: np.random.Generator) -> list[Fold]:
        """R random partitions of the groups into K folds, a group's rows always together.

        Parameters
        ----------
        data : DataFrame
            The data, with the ``group`` column.
        rng : numpy.random.Generator
            Draws the partitions.

        Returns
        -------
        list of Fold
            R × K folds (repetition-major); within a repetition the test rows partition the
            data.

        Raises
        ------
        ConfigurationError
            Fewer groups than folds.

        Examples
        --------
        Cities a (rows 0, 1) and b (rows 2, 3) are never split:

        >>> import pandas as pd
        >>> df = pd.DataFrame({"city": ["a", "a", "b", "b", "c", "d"],
        ...                    "price": [1.0, 2.0, 1.5, 2.5, 1.0, 3.0],
        ...                    "share": [0.3, 0.2, 0.25, 0.1, 0.4, 0.05]})
        >>> design = RepeatedGroupKFold(repeats=2, k=2, group="city")
        >>> import numpy as np
        >>> folds = design.folds(df, np.random.default_rng(0))
        >>> [(f.repeat, f.fold, f.test.tolist()) for f in folds]
        [(0, 0, [2, 3, 4]), (0, 1, [0, 1, 5]), (1, 0, [2, 3, 5]), (1, 1, [0, 1, 4])]
        """
        groups, codes = np.unique(_column(data, self.group, "group"), return_inverse=True)
        if self.k > len(groups):
            raise ConfigurationError(f"RepeatedGroupKFold: k={self.k} folds need at least k "
                                     f"groups; the data have {len(groups)}")
        out = []
        for r in range(self.repeats):
            labels = _assign(len(groups), self.k, rng)[codes]
            out += [Fold(r, j, np.flatnonzero(labels != j), np.flatnonzero(labels == j))
                    for j in range(self.k)]
        return out

    def training_sample(self, frame: pd.DataFrame, to_sample: ToSample) -> Sample:
        """All training rows as one sample: ``to_sample(frame)``.

        Parameters
        ----------
        frame : DataFrame
            The training rows.
        to_sample : callable DataFrame -> Sample
            May aggregate rows (e.g. a market's products into one observation).

        Returns
        -------
        Sample
            What ``to_sample`` returns.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"city": ["a", "a", "b", "b", "c", "d"],
        ...                    "price": [1.0, 2.0, 1.5, 2.5, 1.0, 3.0],
        ...                    "share": [0.3, 0.2, 0.25, 0.1, 0.4, 0.05]})
        >>> design = RepeatedGroupKFold(repeats=2, k=2, group="city")
        >>> design.training_sample(df.iloc[[2, 3, 4]], TableSample(("price",), "share")).y
        array([0.25, 0.1 , 0.4 ])
        """
        return to_sample(frame)

    def test_sample(self, data: pd.DataFrame, rows: np.ndarray,
                    to_sample: ToSample) -> tuple[Sample, np.ndarray]:
        """Held-out observations, built group by group, and the unit (group position) of each.

        Parameters
        ----------
        data : DataFrame
            The whole data.
        rows : ndarray
            Positions of the held-out rows (a fold's ``test``: whole groups).
        to_sample : callable DataFrame -> Sample
            Called on each held-out group's rows.

        Returns
        -------
        sample : Sample
            The groups' samples, concatenated in sorted group order.
        units : ndarray
            The unit of each observation: the position of its group in :meth:`units`.

        Examples
        --------
        Rows 0 and 1 are city a (unit 0), row 5 city d (unit 3):

        >>> import pandas as pd
        >>> df = pd.DataFrame({"city": ["a", "a", "b", "b", "c", "d"],
        ...                    "price": [1.0, 2.0, 1.5, 2.5, 1.0, 3.0],
        ...                    "share": [0.3, 0.2, 0.25, 0.1, 0.4, 0.05]})
        >>> design = RepeatedGroupKFold(repeats=2, k=2, group="city")
        >>> import numpy as np
        >>> s, units = design.test_sample(df, np.array([0, 1, 5]), TableSample(("price",), "share"))
        >>> s.X.ravel().tolist(), units.tolist()
        ([1.0, 2.0, 3.0], [0, 0, 3])
        """
        frame = data.iloc[rows]
        units = np.unique(_column(data, self.group, "group"))
        samples, unit_of = [], []
        for g, sub in frame.groupby(self.group, sort=True):
            s = to_sample(sub)
            samples.append(s)
            unit_of.append(np.full(len(s), np.searchsorted(units, g)))
        return _concat(samples), np.concatenate(unit_of)


Design = CellMeansKFold | RepeatedGroupKFold

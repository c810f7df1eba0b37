"""Completeness on real data (Fudenberg, Kleinberg, Liang & Mullainathan 2022; SPEC §5).

Completeness of procedure j is the share of a flexible benchmark's out-of-sample improvement over
a baseline that j achieves,

    κ_j = (loss_baseline − loss_j) / (loss_baseline − loss_benchmark),

with all losses held out under one cross-validation design common to every procedure. The engine,
:func:`estimate_completeness`, is generic: it takes a data frame, a cross-validation design, and a
``to_sample`` callable that turns any subset of the frame's rows into a
:class:`~restrictiveness.sample.Sample`. Two designs implement the paper's applications:

* :class:`CellMeansKFold` (lotteries, §3.1): K folds over observations; procedures are fitted to
  the per-cell means (25 lottery means) of the training responses and predict held-out
  individual responses; SE clustered by participant.
* :class:`RepeatedGroupKFold` (markets, §4.1): repeated K folds over groups (cities, both markets
  of a city together); loss per group averages its observations' (markets') losses; the
  repeated-fold SE of SPEC §5.

Failures follow the failure protocol of the restrictiveness studies
(:mod:`restrictiveness.failures`): a fit or prediction that raises gives the baseline's
predictions for that whole fold, a non-finite or ineligible prediction row gives the baseline's
row; both are counted, never raised.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

from ._versions import package_versions
from .constraints import Constraint
from .exceptions import BaselineError, ConfigurationError, DataError, FailureWarning
from .failures import GuardedRule, repair
from .inference import normal_interval
from .procedures import Procedure
from .sample import Sample

__all__ = [
    "squared_error",
    "TableSample",
    "Fold",
    "CellMeansKFold",
    "RepeatedGroupKFold",
    "estimate_completeness",
    "clustered_completeness",
    "repeated_fold_completeness",
    "CompletenessResults",
    "load_completeness",
]

Loss = Callable[[np.ndarray, np.ndarray], np.ndarray]
ToSample = Callable[[pd.DataFrame], Sample]
_ENGINE = "netcdf4"  # as restrictiveness.results


# -- losses and samples -------------------------------------------------------------------------
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
    return values.to_numpy()


# -- cross-validation designs -------------------------------------------------------------------
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
        if int(k) != k or k < 2:
            raise ConfigurationError(f"CellMeansKFold: k must be an integer >= 2, got {k!r}")
        self.k, self.cell, self.cluster = int(k), cell, cluster

    def __repr__(self) -> str:
        return f"CellMeansKFold(k={self.k}, cell={self.cell!r}, cluster={self.cluster!r})"

    @property
    def repeats(self) -> int:
        return 1

    def units(self, data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Unit labels (row positions) and the cluster label of each unit."""
        _column(data, self.cell, "cell")
        return np.arange(len(data)), _column(data, self.cluster, "cluster")

    def folds(self, data: pd.DataFrame, rng: np.random.Generator) -> list[Fold]:
        n = len(data)
        if self.k > n:
            raise ConfigurationError(f"CellMeansKFold: k={self.k} folds need at least k "
                                     f"observations; the data have {n}")
        labels = _assign(n, self.k, rng)
        return [Fold(0, j, np.flatnonzero(labels != j), np.flatnonzero(labels == j))
                for j in range(self.k)]

    def training_sample(self, frame: pd.DataFrame, to_sample: ToSample) -> Sample:
        """One observation per cell: its covariates and the mean of its training responses."""
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
        """Held-out observations and the unit (row position) of each."""
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
        if int(k) != k or k < 2:
            raise ConfigurationError(f"RepeatedGroupKFold: k must be an integer >= 2, got {k!r}")
        if int(repeats) != repeats or repeats < 1:
            raise ConfigurationError("RepeatedGroupKFold: repeats must be a positive integer, "
                                     f"got {repeats!r}")
        self.repeats, self.k, self.group = int(repeats), int(k), group

    def __repr__(self) -> str:
        return f"RepeatedGroupKFold(repeats={self.repeats}, k={self.k}, group={self.group!r})"

    def units(self, data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Unit labels (the sorted distinct groups); each unit is its own cluster."""
        groups = np.unique(_column(data, self.group, "group"))
        return groups, groups

    def folds(self, data: pd.DataFrame, rng: np.random.Generator) -> list[Fold]:
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
        return to_sample(frame)

    def test_sample(self, data: pd.DataFrame, rows: np.ndarray,
                    to_sample: ToSample) -> tuple[Sample, np.ndarray]:
        """Held-out observations, built group by group, and the unit (group position) of each."""
        frame = data.iloc[rows]
        units = np.unique(_column(data, self.group, "group"))
        samples, unit_of = [], []
        for g, sub in frame.groupby(self.group, sort=True):
            s = to_sample(sub)
            samples.append(s)
            unit_of.append(np.full(len(s), np.searchsorted(units, g)))
        return _concat(samples), np.concatenate(unit_of)


Design = CellMeansKFold | RepeatedGroupKFold


# -- estimators ---------------------------------------------------------------------------------
def _clustered_se(phi: np.ndarray, clusters: np.ndarray) -> float:
    """SPEC §5: φ̃_s = (S/N) Σ_{i∈s} φ_i, se² = Σ_s (φ̃_s − mean φ̃)² / (S(S−1))."""
    codes, uniques = pd.factorize(pd.Series(clusters), sort=True)
    S, N = len(uniques), len(phi)
    if S < 2:
        return float("nan")
    tilde = (S / N) * np.bincount(codes, weights=phi, minlength=S)
    return float(np.sqrt(np.sum((tilde - tilde.mean()) ** 2) / (S * (S - 1))))


def clustered_completeness(loss: np.ndarray, baseline_loss: np.ndarray,
                           benchmark_loss: np.ndarray, clusters: np.ndarray,
                           ) -> tuple[float, float, np.ndarray]:
    """Pooled completeness κ̂ = Ḡ / H̄ with its cluster-robust SE (SPEC §5, lotteries).

    Parameters
    ----------
    loss, baseline_loss, benchmark_loss : ndarray, shape (N,)
        Held-out losses of procedure j, the baseline and the benchmark per observation.
    clusters : ndarray, shape (N,)
        Cluster label of each observation (participant).

    Returns
    -------
    kappa : float
    se : float
        ``[Σ_s (φ̃_s − mean φ̃)² / (S(S−1))]^{1/2}`` with ``φ̃_s = (S/N) Σ_{i∈s} φ_i``. With one
        observation per cluster (S = N) this equals the iid delta-method SE
        ``sqrt(Var̂(φ)/N)`` (divisor N − 1) exactly, because Σ φ_i = 0.
    phi : ndarray, shape (N,)
        Influence values ``φ_i = ((G_i − Ḡ) − κ̂ (H_i − H̄)) / H̄``.

    Examples
    --------
    >>> import numpy as np
    >>> k, se, _ = clustered_completeness(np.array([1.0, 2.0]), np.array([3.0, 4.0]),
    ...                                   np.zeros(2), np.array([0, 1]))
    >>> round(k, 3), round(se, 3)
    (0.571, 0.082)
    """
    G = np.asarray(baseline_loss, dtype=float) - np.asarray(loss, dtype=float)
    H = np.asarray(baseline_loss, dtype=float) - np.asarray(benchmark_loss, dtype=float)
    Gbar, Hbar = G.mean(), H.mean()
    kappa = Gbar / Hbar
    phi = ((G - Gbar) - kappa * (H - Hbar)) / Hbar
    return float(kappa), _clustered_se(phi, np.asarray(clusters)), phi


def _fold_average(L: np.ndarray, folds: np.ndarray) -> float:
    """R̂ = (1/(RK)) Σ_r Σ_k mean_{c∈C_rk} L_rc."""
    means = []
    for r in range(L.shape[0]):
        counts = np.bincount(folds[r])
        sums = np.bincount(folds[r], weights=L[r])
        means.append(sums[counts > 0] / counts[counts > 0])
    return float(np.mean(np.concatenate(means)))


def _repeated_fold_se(psi: np.ndarray) -> float:
    """SPEC §5: se² = Σ_r Σ_c ψ_rc² / (R G²) with ψ = (a − κ̂ d) / D̂."""
    R, G = psi.shape
    return float(np.sqrt(np.sum(psi**2) / (R * G**2)))


def repeated_fold_completeness(loss: np.ndarray, baseline_loss: np.ndarray,
                               benchmark_loss: np.ndarray, folds: np.ndarray,
                               ) -> tuple[float, float, np.ndarray]:
    """Completeness under repeated K-fold cross-validation over groups (SPEC §5, markets).

    Parameters
    ----------
    loss, baseline_loss, benchmark_loss : ndarray, shape (R, G)
        Held-out loss of each group in each repetition (every group is held out once per
        repetition) for procedure j, the baseline B and the benchmark F.
    folds : ndarray of int, shape (R, G)
        The fold k of each group in each repetition.

    Returns
    -------
    kappa : float
        ``(R̂_B − R̂_j) / D̂`` with ``R̂ = (1/(RK)) Σ_r Σ_k mean_{c∈C_rk} L_rkc``, ``D̂ = R̂_B − R̂_F``.
    se : float
        ``[Σ_r Σ_k Σ_{c∈C_rk} (a_rkc − κ̂ d_rkc)² / (R G² D̂²)]^{1/2}``.
    psi : ndarray, shape (R, G)
        ``(a − κ̂ d) / D̂``, with ``a = L^B − L^j``, ``d = L^B − L^F``.

    Examples
    --------
    >>> import numpy as np
    >>> f = np.array([[0, 1]])
    >>> k, se, _ = repeated_fold_completeness(np.array([[1.0, 1.0]]), np.array([[2.0, 2.0]]),
    ...                                       np.zeros((1, 2)), f)
    >>> k, se
    (0.5, 0.0)
    """
    Lj, LB, LF = (np.asarray(a, dtype=float) for a in (loss, baseline_loss, benchmark_loss))
    folds = np.asarray(folds, dtype=np.int64)
    RB, RF, Rj = (_fold_average(L, folds) for L in (LB, LF, Lj))
    D = RB - RF
    kappa = (RB - Rj) / D
    psi = ((LB - Lj) - kappa * (LB - LF)) / D
    return float(kappa), _repeated_fold_se(psi), psi


# -- the engine ---------------------------------------------------------------------------------
def _resolve(procedures: Mapping[str, Procedure], role: str, proc: Procedure | str,
             ) -> tuple[str, Procedure | None]:
    if isinstance(proc, str):
        if proc not in procedures:
            raise ConfigurationError(f"{role}={proc!r} is not a key of procedures "
                                     f"{list(procedures)}; pass a Procedure or one of the keys")
        return proc, None
    if not hasattr(proc, "fit"):
        raise ConfigurationError(f"{role} must be a Procedure (with fit) or a key of procedures")
    label = str(getattr(proc, "label", "") or "")
    if label in ("", Procedure.label) or label in procedures:  # no label of its own, or taken
        label = role
    if label in procedures:
        raise ConfigurationError(f"{role}'s label {label!r} is already a key of procedures; "
                                 "rename one of them or pass the key as a string")
    return label, proc


def _seed_sequence(seed) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(seed)


def estimate_completeness(
    data: pd.DataFrame,
    procedures: Mapping[str, Procedure],
    *,
    baseline: Procedure | str,
    benchmark: Procedure | str,
    design: Design,
    to_sample: ToSample,
    loss: Loss = squared_error,
    seed: int | np.random.SeedSequence | None = 0,
    constraints: Sequence[Constraint] = (),
) -> CompletenessResults:
    """Cross-validated completeness of procedures against a baseline and a flexible benchmark.

    Every procedure, the baseline and the benchmark are fitted on the same training folds and
    evaluated on the same held-out data; folds come from ``seed`` alone (via
    :class:`numpy.random.SeedSequence`), so a rerun with the same seed reproduces them, and each
    fold hands every procedure a generator seeded identically (common random numbers).

    Parameters
    ----------
    data : DataFrame
        The real data, one row per record (a response; a product in a market).
    procedures : mapping of str to Procedure
        The procedures to evaluate, by label.
    baseline, benchmark : Procedure or str
        The baseline (κ = 0) and the flexible benchmark (κ = 1): a Procedure (added under its
        ``label``, or ``"baseline"``/``"benchmark"`` when that label is taken) or the key of one
        of ``procedures``. The baseline must not fail.
    design : CellMeansKFold or RepeatedGroupKFold
        The cross-validation design (it also fixes the SE formula).
    to_sample : callable DataFrame -> Sample
        Turns any subset of ``data``'s rows into a :class:`~restrictiveness.sample.Sample`. With
        :class:`CellMeansKFold` it must return one observation per row, in row order (e.g.
        :class:`TableSample`); the design averages them by cell for training. With
        :class:`RepeatedGroupKFold` it is called on the training rows and on each held-out
        group's rows, and may aggregate rows (e.g. the 24 product rows of a market into one
        observation with ``X`` of shape ``(24, 3)``).
    loss : callable (y, pred) -> ndarray
        Loss per observation (first axis); default :func:`squared_error`. κ̂ is invariant to
        rescaling it.
    seed : int, SeedSequence or None
        Seed of the folds and of the procedures' random generators (None: fresh entropy,
        recorded in the results).
    constraints : sequence of Constraint
        Restrictions used by the failure protocol: predictions are repaired (clipped) and rows
        that still fail get the baseline's.

    Returns
    -------
    CompletenessResults

    Raises
    ------
    ConfigurationError
        Inconsistent labels, too few observations or groups for the folds.
    DataError
        Missing design columns or values.
    BaselineError
        The baseline failed in some fold.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from restrictiveness.procedures import Constant, OLS
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"cell": np.repeat(np.arange(8), 5), "who": np.tile(np.arange(5), 8)})
    >>> df["x"] = df["cell"] / 8.0
    >>> df["y"] = df["x"] ** 2 + rng.normal(0, 0.1, len(df))
    >>> res = estimate_completeness(
    ...     df, {"linear": OLS("y ~ x")}, baseline=Constant(), benchmark=OLS("y ~ x + I(x**2)"),
    ...     design=CellMeansKFold(k=5, cell="cell", cluster="who"),
    ...     to_sample=TableSample(("x",), "y"))
    >>> float(res.kappa["OLS"]), float(res.kappa["constant"])
    (1.0, 0.0)
    >>> 0 < float(res.kappa["linear"]) < 1
    True
    """
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if len(data) == 0:
        raise DataError("data has no rows")
    if not isinstance(procedures, Mapping):
        raise ConfigurationError("procedures must be a mapping of label to Procedure")
    procs = {str(k): v for k, v in procedures.items()}
    for label, p in procs.items():
        if not hasattr(p, "fit"):
            raise ConfigurationError(f"procedures[{label!r}] is not a Procedure (no fit method)")
    base_label, base_proc = _resolve(procs, "baseline", baseline)
    if base_proc is not None:
        procs[base_label] = base_proc
    flex_label, flex_proc = _resolve(procs, "benchmark", benchmark)
    if flex_proc is not None:
        procs[flex_label] = flex_proc
    if base_label == flex_label:
        raise ConfigurationError("baseline and benchmark must be different procedures")
    data = data.reset_index(drop=True)
    units, clusters = design.units(data)
    ss = _seed_sequence(seed)
    fold_seq, fit_seq = ss.spawn(2)
    folds = design.folds(data, np.random.default_rng(fold_seq))
    fit_seeds = fit_seq.spawn(len(folds))

    labels = list(procs)
    P, R, K, U = len(labels), design.repeats, design.k, len(units)
    L = np.full((P, R, U), np.nan)
    assigned = np.full((R, U), -1, dtype=np.int64)
    failed = np.zeros((P, R, K), dtype=np.int64)
    invalid = np.zeros((P, R, K), dtype=np.int64)
    seconds = np.zeros((P, R, K))
    error = np.full((P, R, K), "", dtype=object)
    info = np.full((P, R, K), "{}", dtype=object)
    b = labels.index(base_label)
    order = [b] + [j for j in range(P) if j != b]  # the baseline first: others fall back on it

    for i, (fold, fit_ss) in enumerate(zip(folds, fit_seeds, strict=True)):
        r, k = fold.repeat, fold.fold
        train = design.training_sample(data.iloc[fold.train], to_sample)
        if i == 0:  # a misspelt formula is a configuration error, not a failure in every fold
            for proc in procs.values():
                if hasattr(proc, "validate"):
                    proc.validate(tuple(train.columns), train.response)
        test, unit_of = design.test_sample(data, fold.test, to_sample)
        if np.any(assigned[r, np.unique(unit_of)] >= 0):
            raise ConfigurationError(f"{design!r}: a unit is held out twice in repetition {r}")
        assigned[r, unit_of] = k
        X, columns = np.asarray(test.X, dtype=float), tuple(test.columns)
        counts = np.bincount(unit_of, minlength=U).astype(float)
        held = counts > 0
        base_fit = None
        for j in order:
            t0 = time.perf_counter()
            if j == b:
                try:
                    base_fit = procs[labels[j]].fit(train, np.random.default_rng(fit_ss))
                    pred, _ = repair(np.asarray(base_fit.predict(X), dtype=float), X,
                                     constraints, columns)
                except Exception as exc:
                    raise BaselineError(f"the baseline {base_label!r} failed in repetition {r}, "
                                        f"fold {k}: {type(exc).__name__}: {exc}") from exc
                if not np.isfinite(pred).all():
                    raise BaselineError(f"the baseline {base_label!r} returned non-finite "
                                        f"predictions in repetition {r}, fold {k}")
                info[j, r, k] = json.dumps(getattr(base_fit, "info", {}) or {}, default=str)
            else:
                # The study's failure protocol: repair, replace invalid rows with the
                # baseline's, and the whole fold when the fit or the prediction raises.
                try:
                    fitted, reason = procs[labels[j]].fit(train, np.random.default_rng(fit_ss)), ""
                    info[j, r, k] = json.dumps(getattr(fitted, "info", {}) or {}, default=str)
                except Exception as exc:  # noqa: BLE001 - any failure of user code is recorded
                    fitted, reason = None, f"{type(exc).__name__}: {exc}"
                guard = GuardedRule(fitted, base_fit, constraints, columns, reason)
                pred = guard.predict(X)
                failed[j, r, k] = int(guard.failed)
                invalid[j, r, k] = 0 if guard.failed else guard.replaced
                error[j, r, k] = guard.error
            seconds[j, r, k] = time.perf_counter() - t0
            obs = np.asarray(loss(test.y, pred), dtype=float)
            if obs.shape != (len(test),):
                raise ConfigurationError(f"loss must return one value per observation, shape "
                                         f"({len(test)},); got {obs.shape}")
            L[j, r, held] = np.bincount(unit_of, weights=obs, minlength=U)[held] / counts[held]
    if (assigned < 0).any():
        raise ConfigurationError(f"{design!r}: some units were never held out (did to_sample drop "
                                 "rows?)")
    if failed.any() or invalid.any():
        bad = [f"{labels[j]} ({int(failed[j].sum())} folds, {int(invalid[j].sum())} rows)"
               for j in range(P) if failed[j].any() or invalid[j].any()]
        warnings.warn("baseline predictions used after failures: " + "; ".join(bad),
                      FailureWarning, stacklevel=2)

    coords = {"procedure": labels, "repeat": np.arange(R), "fold": np.arange(K),
              "unit": units, "cluster": ("unit", clusters),
              "assigned_fold": (("repeat", "unit"), assigned)}
    pr = ("procedure", "repeat", "fold")
    ds = xr.Dataset(
        {"loss": (("procedure", "repeat", "unit"), L),
         "failed": (pr, failed), "invalid": (pr, invalid), "seconds": (pr, seconds),
         "error": (pr, error.astype(str)), "info": (pr, info.astype(str))},
        coords=coords,
    )
    ds["loss"].attrs["description"] = f"held-out loss per {design.unit_name}"
    ds["failed"].attrs["description"] = "fits that failed (baseline used for the whole fold)"
    ds["invalid"].attrs["description"] = "prediction rows replaced by the baseline's"
    ds["seconds"].attrs["units"] = "s"
    ds.attrs.update({
        "title": "completeness",
        "design": repr(design),
        "se_method": design.se_method,
        "unit": design.unit_name,
        "baseline": base_label,
        "benchmark": flex_label,
        "loss": getattr(loss, "__name__", repr(loss)),
        "to_sample": repr(to_sample),
        "constraints": json.dumps([repr(c) for c in constraints]),
        "procedures": json.dumps({lab: repr(p) for lab, p in procs.items()}),
        "seed": str(ss.entropy),
        "versions": json.dumps(package_versions()),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    })
    return CompletenessResults(_with_estimates(ds))


def _with_estimates(ds: xr.Dataset) -> xr.Dataset:
    """Add kappa, kappa_se, mean_loss (procedure) and influence (procedure, repeat, unit)."""
    labels = [str(p) for p in ds["procedure"].values]
    b, f = labels.index(ds.attrs["baseline"]), labels.index(ds.attrs["benchmark"])
    L = ds["loss"].transpose("procedure", "repeat", "unit").values
    assigned = ds["assigned_fold"].transpose("repeat", "unit").values
    kappa, se, mean_loss = (np.empty(len(labels)) for _ in range(3))
    infl = np.empty_like(L)
    clustered = ds.attrs["se_method"] == "clustered"
    for j in range(len(labels)):
        if clustered:
            kappa[j], se[j], phi = clustered_completeness(L[j, 0], L[b, 0], L[f, 0],
                                                          ds["cluster"].values)
            infl[j] = phi[None]
            mean_loss[j] = L[j].mean()
        else:
            kappa[j], se[j], infl[j] = repeated_fold_completeness(L[j], L[b], L[f], assigned)
            mean_loss[j] = _fold_average(L[j], assigned)
    if not mean_loss[b] > mean_loss[f]:
        warnings.warn(f"the benchmark {labels[f]!r} does not improve on the baseline "
                      f"{labels[b]!r} out of sample (mean loss {mean_loss[f]:.4g} vs "
                      f"{mean_loss[b]:.4g}); completeness is not meaningful", RuntimeWarning,
                      stacklevel=3)
    ds = ds.copy()
    ds["kappa"] = ("procedure", kappa)
    ds["kappa_se"] = ("procedure", se)
    ds["mean_loss"] = ("procedure", mean_loss)
    ds["influence"] = (("procedure", "repeat", "unit"), infl)
    ds["kappa"].attrs["description"] = "completeness (loss_base − loss_j)/(loss_base − loss_flex)"
    ds["influence"].attrs["description"] = ("φ (clustered) or ψ = (a − κd)/D (repeated-fold): "
                                            "the SE of any combination of κ's uses them")
    return ds


# -- results ------------------------------------------------------------------------------------
class CompletenessResults:
    """Completeness estimates from an :class:`xarray.Dataset` of held-out losses.

    The Dataset has dimensions ``procedure``, ``repeat``, ``fold`` and ``unit`` (held-out
    observations for :class:`CellMeansKFold`, groups for :class:`RepeatedGroupKFold`) with
    variables ``loss`` and ``influence`` (procedure, repeat, unit); ``failed``, ``invalid``,
    ``seconds``, ``error``, ``info`` (procedure, repeat, fold); ``kappa``, ``kappa_se``,
    ``mean_loss`` (procedure); coordinates ``cluster`` (unit) and ``assigned_fold``
    (repeat, unit); and attributes recording the design, baseline, benchmark, seed and versions.

    Examples
    --------
    >>> res = estimate_completeness(...)  # doctest: +SKIP
    >>> res.kappa, res.kappa_se  # doctest: +SKIP
    >>> res.difference("CPT(a,g)", "CPT(g)")  # doctest: +SKIP
    >>> print(res.summary())  # doctest: +SKIP
    """

    def __init__(self, dataset: xr.Dataset) -> None:
        self.dataset = dataset

    @property
    def procedures(self) -> list[str]:
        return [str(p) for p in self.dataset["procedure"].values]

    @property
    def kappa(self) -> pd.Series:
        """κ̂ by procedure (the baseline's is 0, the benchmark's 1)."""
        return self.dataset["kappa"].to_series().rename("kappa")

    @property
    def kappa_se(self) -> pd.Series:
        """Standard error of κ̂ by procedure (SPEC §5; the design fixes the formula)."""
        return self.dataset["kappa_se"].to_series().rename("kappa_se")

    def _procedure(self, label: str) -> int:
        if label not in self.procedures:
            raise KeyError(f"procedure {label!r} not in {self.procedures}")
        return self.procedures.index(label)

    def _se(self, influence: np.ndarray) -> float:
        if self.dataset.attrs["se_method"] == "clustered":
            return _clustered_se(influence[0], self.dataset["cluster"].values)
        return _repeated_fold_se(influence)

    def difference(self, a: str, b: str, level: float = 0.95) -> pd.Series:
        """Paired difference ``κ̂_a − κ̂_b`` with its SE from the same influence values.

        Returns
        -------
        Series
            ``estimate``, ``se``, ``lower``, ``upper`` (normal interval at ``level``).
        """
        if a == b:
            raise ValueError("difference needs two different procedures")
        ia, ib = self._procedure(a), self._procedure(b)
        infl = self.dataset["influence"].transpose("procedure", "repeat", "unit").values
        est = float(self.dataset["kappa"].values[ia] - self.dataset["kappa"].values[ib])
        se = self._se(infl[ia] - infl[ib])
        lo, hi = normal_interval(est, se, level)
        return pd.Series({"estimate": est, "se": se, "lower": float(lo), "upper": float(hi)},
                         name=f"{a} - {b}")

    def estimates(self, level: float = 0.95) -> pd.DataFrame:
        """κ̂, se, normal interval, mean held-out loss and failed folds by procedure."""
        ds = self.dataset
        df = pd.DataFrame({"kappa": self.kappa, "se": self.kappa_se})
        df["lower"], df["upper"] = normal_interval(df["kappa"], df["se"], level)
        df["mean_loss"] = ds["mean_loss"].to_series()
        df["failed_folds"] = ds["failed"].sum(("repeat", "fold")).to_series()
        df["invalid_rows"] = ds["invalid"].sum(("repeat", "fold")).to_series()
        return df

    @cached_property
    def _clusters(self) -> int:
        return int(pd.Series(self.dataset["cluster"].values).nunique())

    def summary(self, procedures: Sequence[str] | None = None) -> Summary:
        """statsmodels-style summary: κ̂ (se) per procedure, with the design and notes."""
        ds = self.dataset
        procs = list(procedures) if procedures is not None else self.procedures
        est = self.estimates()
        smry = Summary()
        top = [["Design:", ds.attrs["design"]],
               ["Baseline (κ = 0):", ds.attrs["baseline"]],
               ["Benchmark (κ = 1):", ds.attrs["benchmark"]],
               ["Loss:", ds.attrs["loss"]],
               [f"Held-out {ds.attrs['unit']}s:", str(ds.sizes["unit"])],
               ["Clusters:", str(self._clusters)],
               ["Seed:", ds.attrs["seed"]]]
        smry.tables.append(SimpleTable(top, title="Completeness"))
        rows = [[p, f"{est.loc[p, 'kappa']:.3f}", f"({est.loc[p, 'se']:.3f})",
                 f"{est.loc[p, 'mean_loss']:.5g}", str(int(est.loc[p, 'failed_folds']))]
                for p in procs]
        smry.tables.append(SimpleTable(rows, headers=["procedure", "κ̂", "(se)", "mean loss",
                                                      "failed folds"]))
        se_note = ("SE clustered by the cluster coordinate (SPEC §5, lotteries)"
                   if ds.attrs["se_method"] == "clustered"
                   else "repeated-fold SE over groups (SPEC §5, markets)")
        notes = [f"κ̂ = (loss_baseline − loss_j) / (loss_baseline − loss_benchmark) on held-out "
                 f"data; {se_note}."]
        fails = est.loc[procs]
        for p in fails.index[(fails["failed_folds"] > 0) | (fails["invalid_rows"] > 0)]:
            notes.append(f"{p}: baseline predictions used in {int(fails.loc[p, 'failed_folds'])}"
                         f" failed fold(s) and {int(fails.loc[p, 'invalid_rows'])} invalid "
                         "row(s).")
        smry.add_extra_txt([f"[{i + 1}] {t}" for i, t in enumerate(notes)])
        return smry

    def to_netcdf(self, path) -> None:
        """Write the Dataset to NetCDF-4 (reload with :func:`load_completeness`)."""
        self.dataset.to_netcdf(path, engine=_ENGINE)

    def __repr__(self) -> str:
        return (f"<CompletenessResults: {len(self.procedures)} procedures, "
                f"{self.dataset.attrs['design']}, {self.dataset.sizes['unit']} units>")

    def _repr_html_(self) -> str:
        return self.summary().as_html()


def load_completeness(path) -> CompletenessResults:
    """Load results written by :meth:`CompletenessResults.to_netcdf`.

    Examples
    --------
    >>> res = load_completeness("lottery_completeness.nc")  # doctest: +SKIP
    """
    with xr.open_dataset(path, engine=_ENGINE) as ds:
        return CompletenessResults(ds.load())

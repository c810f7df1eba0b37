"""Completeness estimators and their standard errors (SPEC §5, eqs. 10, 11, 16, 17).

:func:`clustered_completeness` (pooled held-out responses, SE clustered by participant) and
:func:`repeated_fold_completeness` (repeated K-fold over groups); :func:`with_estimates` adds
both to a Dataset of held-out losses, which is how results are built and reloaded.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["clustered_completeness", "repeated_fold_completeness", "clustered_se",
           "repeated_fold_se", "with_estimates"]

#: The benchmark's improvement on the baseline (their mean held-out losses' difference) at most
#: this fraction of the baseline's loss is zero to rounding: every κ̂ is then 0/0. A benchmark
#: equal to the baseline to rounding (OLS("y ~ 1") against Constant()) differed by 1e-17 of
#: the loss and gave κ̂ = 1.3e16 (se 2.3e16); as DEGENERATE_BASELINE for restrictiveness.
DEGENERATE_IMPROVEMENT = 1e-12


def clustered_se(phi: np.ndarray, clusters: np.ndarray) -> float:
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
    return float(kappa), clustered_se(phi, np.asarray(clusters)), phi


def _fold_average(L: np.ndarray, folds: np.ndarray) -> float:
    """R̂ = (1/(RK)) Σ_r Σ_k mean_{c∈C_rk} L_rc."""
    means = []
    for r in range(L.shape[0]):
        counts = np.bincount(folds[r])
        sums = np.bincount(folds[r], weights=L[r])
        means.append(sums[counts > 0] / counts[counts > 0])
    return float(np.mean(np.concatenate(means)))


def repeated_fold_se(psi: np.ndarray) -> float:
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
    return float(kappa), repeated_fold_se(psi), psi


def with_estimates(ds: xr.Dataset) -> xr.Dataset:
    """Add kappa, kappa_se, mean_loss (procedure) and influence (procedure, repeat, unit)."""
    labels = [str(p) for p in ds["procedure"].values]
    b, f = labels.index(ds.attrs["baseline"]), labels.index(ds.attrs["benchmark"])
    L = ds["loss"].transpose("procedure", "repeat", "unit").values
    assigned = ds["assigned_fold"].transpose("repeat", "unit").values
    kappa, se, mean_loss = (np.empty(len(labels)) for _ in range(3))
    infl = np.empty_like(L)
    clustered = ds.attrs["se_method"] == "clustered"
    for j in range(len(labels)):
        with np.errstate(divide="ignore", invalid="ignore"):  # no improvement: NaN, warned below
            if clustered:
                kappa[j], se[j], phi = clustered_completeness(L[j, 0], L[b, 0], L[f, 0],
                                                              ds["cluster"].values)
                infl[j] = phi[None]
                mean_loss[j] = L[j].mean()
            else:
                kappa[j], se[j], infl[j] = repeated_fold_completeness(L[j], L[b], L[f],
                                                                      assigned)
                mean_loss[j] = _fold_average(L[j], assigned)
    if clustered and pd.Series(ds["cluster"].values).nunique() < 2:
        warnings.warn("the held-out data come from one cluster: the clustered standard errors "
                      "need at least two, so kappa_se is NaN", RuntimeWarning, stacklevel=3)
    if abs(mean_loss[b] - mean_loss[f]) <= DEGENERATE_IMPROVEMENT * abs(mean_loss[b]):
        kappa[:], se[:], infl[:] = np.nan, np.nan, np.nan
        warnings.warn(f"completeness κ̂ is NaN for every procedure: the benchmark "
                      f"{labels[f]!r} and the baseline {labels[b]!r} have the same mean "
                      f"held-out loss to rounding ({mean_loss[f]:.6g} vs {mean_loss[b]:.6g}), "
                      "so κ̂ is 0/0; use a benchmark that improves on the baseline",
                      RuntimeWarning, stacklevel=3)
    elif not mean_loss[b] > mean_loss[f]:
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

"""Monte Carlo estimator of restrictiveness and its delta-method inference (SPEC §3).

For replications m = 1..M with procedure losses ``D_jm`` and baseline losses ``B_m``:

``r̂_j = D̄_j / B̄``, ``ψ_jm = (D_jm − r̂_j B_m) / B̄``, ``se(r̂_j) = sqrt(Var̂(ψ_j) / M)``
(sample variance with divisor M − 1). A linear combination ``Σ_j c_j r̂_j`` (paired contrasts,
contrasts of contrasts) has ``se = sqrt(Var̂(Σ_j c_j ψ_j) / M)``.

With within-function averaging the inputs are the per-replication averages over draws.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..shared.checks import probability
from ..shared.exceptions import ConfigurationError

__all__ = ["ratio_estimate", "influence", "combination_estimate", "normal_interval"]


def _check(D: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    D, B = np.asarray(D, dtype=float), np.asarray(B, dtype=float)
    if B.shape[-1] != D.shape[-1]:
        raise ValueError("D and B must have the same number of replications (last axis)")
    if B.shape[-1] < 2:
        raise ConfigurationError("at least two replications are needed for a standard error; "
                                 "these results hold one (e.g. run(replications=[0]))")
    return D, B


def influence(D: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ratio estimate and its influence values ``ψ`` along the last (replication) axis.

    Examples
    --------
    >>> import numpy as np
    >>> r, psi = influence(np.array([1.0, 3.0]), np.array([2.0, 2.0]))
    >>> float(r), psi.tolist()
    (1.0, [-0.5, 0.5])
    """
    D, B = _check(D, B)
    Bbar = B.mean(axis=-1, keepdims=True)
    r = D.mean(axis=-1, keepdims=True) / Bbar
    psi = (D - r * B) / Bbar
    return r[..., 0], psi


def ratio_estimate(D: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Restrictiveness ``r̂ = D̄ / B̄`` and its standard error (SPEC §3).

    Parameters
    ----------
    D : ndarray, (..., M)
        Procedure losses per replication.
    B : ndarray, (..., M)
        Baseline losses per replication (broadcasts against ``D``).

    Examples
    --------
    >>> import numpy as np
    >>> r, se = ratio_estimate(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0]))
    >>> float(r), float(se)
    (0.5, 0.0)
    """
    r, psi = influence(D, B)
    M = psi.shape[-1]
    return r, np.sqrt(psi.var(axis=-1, ddof=1) / M)


def combination_estimate(coefs: np.ndarray, D: np.ndarray, B: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Estimate and SE of ``Σ_j c_j r̂_j`` for procedures along the first axis of ``D``.

    Parameters
    ----------
    coefs : ndarray, (J,)
        Coefficients (e.g. ``[1, -1]`` for a paired contrast).
    D : ndarray, (J, ..., M)
        Losses of the J procedures on common draws.
    B : ndarray, (..., M)
        Baseline losses.
    """
    coefs = np.asarray(coefs, dtype=float)
    r, psi = influence(D, B)
    shape = (-1,) + (1,) * (psi.ndim - 1)
    comb = (coefs.reshape(shape) * psi).sum(axis=0)
    est = np.tensordot(coefs, r, axes=(0, 0))
    return est, np.sqrt(comb.var(axis=-1, ddof=1) / comb.shape[-1])


def normal_interval(estimate, se, level: float = 0.95):
    """Two-sided normal confidence interval ``estimate ± z se`` (``level`` in (0, 1))."""
    level = probability(level, "level")
    z = stats.norm.ppf(0.5 + level / 2)
    return np.asarray(estimate) - z * np.asarray(se), np.asarray(estimate) + z * np.asarray(se)

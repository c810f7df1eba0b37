"""Discrepancies d(fitted rule, truth) >= 0 with d(f, f) = 0 (SPEC §1).

A discrepancy receives the fitted rule (anything with ``predict(X)``) and the pseudo-truth, so a
discrepancy may evaluate the rule at perturbed inputs (price elasticities in the demand
application) as well as at the evaluation locations.
"""

from __future__ import annotations

import numpy as np

from ..eligible.truth import PseudoTruth

__all__ = ["Discrepancy", "MSE", "KL"]


class Discrepancy:
    """Base class. ``name`` labels the ``discrepancy`` coordinate of results."""

    name: str = "discrepancy"

    def __call__(self, rule, truth: PseudoTruth, n: int) -> float:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _row_mean(a: np.ndarray) -> np.ndarray:
    return a.reshape(a.shape[0], -1).mean(axis=1)


class MSE(Discrepancy):
    """Mean squared error over the evaluation locations (weighted by P_X), averaged over any
    trailing axes (e.g. the 24 inside shares of a market).

    Examples
    --------
    >>> MSE().name
    'mse'
    """

    def __init__(self, name: str = "mse") -> None:
        self.name = name

    def __call__(self, rule, truth: PseudoTruth, n: int) -> float:
        pred = np.asarray(rule.predict(truth.eval_X), dtype=float)
        err = _row_mean((pred - truth.eval_y(n)) ** 2)
        return float(truth.eval_weights @ err)


class KL(Discrepancy):
    """Kullback–Leibler divergence KL(truth || prediction) between probability vectors along the
    last axis, averaged over evaluation locations.

    With ``outside=True`` the vectors are inside shares and the outside share ``1 - sum`` is
    appended before comparing.
    """

    def __init__(self, name: str = "kl", outside: bool = True) -> None:
        self.name, self.outside = name, outside

    def _full(self, s: np.ndarray) -> np.ndarray:
        s = np.asarray(s, dtype=float)
        if self.outside:
            s = np.concatenate([s, 1.0 - s.sum(axis=-1, keepdims=True)], axis=-1)
        return s

    def __call__(self, rule, truth: PseudoTruth, n: int) -> float:
        p = self._full(truth.eval_y(n))
        q = self._full(rule.predict(truth.eval_X))
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
        kl = terms.sum(axis=-1)
        return float(truth.eval_weights @ _row_mean(kl))

"""Discrepancies d(fitted rule, truth) >= 0 with d(f, f) = 0 (SPEC §1).

A discrepancy receives the fitted rule (anything with ``predict(X)``) and the pseudo-truth, so a
discrepancy may evaluate the rule at perturbed inputs (price elasticities in the demand
application) as well as at the evaluation locations.
"""

from __future__ import annotations

import numpy as np

from ..eligible.truth import PseudoTruth
from ..shared.exceptions import ConfigurationError

__all__ = ["Discrepancy", "MSE", "KL", "NEGATIVE_LOSS", "matching"]

#: Losses below this are a broken discrepancy, not rounding (KL of a rule with itself).
NEGATIVE_LOSS = -1e-10


class Discrepancy:
    """Base class of discrepancies ``d(rule, truth) >= 0``, with ``d(f, f) = 0``.

    A subclass sets ``name`` (the label of the ``discrepancy`` coordinate of results) and
    implements ``__call__(rule, truth, n) -> float``: ``rule`` has ``predict(X)``, ``truth``
    is the pseudo-truth (``eval_X``, ``eval_y(n)``, ``eval_weights``) and ``n`` the training
    sample size (the truth at the evaluation locations may depend on it).

    It may also implement ``scale(truth, n) -> float``, the size of a loss for this truth (for
    a squared error, the mean squared truth). Results compare the mean baseline loss with it:
    a baseline whose loss is zero to rounding relative to the truths' scale makes r̂ = 0/0,
    reported as NaN with a warning. The default, NaN, means unknown and skips that check.

    Examples
    --------
    Mean absolute error, weighted by the evaluation distribution. A stand-in for a pseudo-truth
    (anything with ``eval_X``, ``eval_y(n)`` and ``eval_weights``) is enough to try it:

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from restrictiveness import FunctionRule
    >>> class MAE(Discrepancy):
    ...     name = "mae"
    ...     def __call__(self, rule, truth, n):
    ...         err = np.abs(rule.predict(truth.eval_X) - truth.eval_y(n))
    ...         return float(truth.eval_weights @ err)
    >>> truth = SimpleNamespace(eval_X=np.array([[0.0], [1.0]]), eval_weights=np.array([0.5, 0.5]),
    ...                         eval_y=lambda n: np.array([0.0, 1.0]))
    >>> MAE()(FunctionRule(lambda X: np.full(len(X), 0.25)), truth, n=10)
    0.5
    >>> MAE()
    MAE(name='mae')
    """

    name: str = "discrepancy"

    def __call__(self, rule, truth: PseudoTruth, n: int) -> float:
        raise NotImplementedError

    def scale(self, truth: PseudoTruth, n: int) -> float:
        """Size of a loss for ``truth`` at training size ``n``; NaN (unknown) unless overridden.

        Parameters
        ----------
        truth : PseudoTruth
            The pseudo-truth.
        n : int
            Training sample size.

        Returns
        -------
        float
            A positive number in the units of the loss, or NaN.

        Examples
        --------
        >>> Discrepancy().scale(None, n=10)
        nan
        """
        return float("nan")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def _row_mean(a: np.ndarray) -> np.ndarray:
    return a.reshape(a.shape[0], -1).mean(axis=1)


def matching(pred, truth: np.ndarray, name: str) -> np.ndarray:
    """Predictions as floats, refused unless shaped as the truth they are scored against.

    NumPy broadcasting read a column of predictions ``(m, 1)`` against truths ``(m,)`` as an
    ``(m, m)`` table of every prediction against every truth: a rule returning the truth
    itself as a column had MSE 0.5, not 0.

    Parameters
    ----------
    pred : array_like
        What the rule's ``predict`` returned.
    truth : ndarray
        The truth at the same locations.
    name : str
        The discrepancy, for the message.

    Returns
    -------
    ndarray
        ``pred`` as float64.

    Raises
    ------
    ValueError
        The shapes differ.

    Examples
    --------
    >>> matching([[0.0], [1.0]], np.array([0.0, 1.0]), "mse")
    Traceback (most recent call last):
    ...
    ValueError: mse: predictions have shape (2, 1), the truth (2,); a rule must return one ...
    """
    pred = np.asarray(pred, dtype=float)
    if pred.shape != np.shape(truth):
        raise ValueError(f"{name}: predictions have shape {pred.shape}, the truth "
                         f"{np.shape(truth)}; a rule must return one prediction per evaluation "
                         "location, shaped as the truth")
    return pred


class MSE(Discrepancy):
    """Mean squared error over the evaluation locations (weighted by P_X).

    Errors are averaged over any trailing axes first (e.g. the 24 inside shares of a market).

    Parameters
    ----------
    name : str
        Label of the ``discrepancy`` coordinate in results.

    Examples
    --------
    A rule predicting 0.5 where the truth is 0 and 1 (a stand-in for the pseudo-truth: anything
    with ``eval_X``, ``eval_y(n)`` and ``eval_weights``):

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from restrictiveness import FunctionRule
    >>> truth = SimpleNamespace(eval_X=np.array([[0.0], [1.0]]), eval_weights=np.array([0.5, 0.5]),
    ...                         eval_y=lambda n: np.array([0.0, 1.0]))
    >>> MSE()(FunctionRule(lambda X: np.full(len(X), 0.5)), truth, n=10)
    0.25
    >>> MSE().name
    'mse'
    """

    def __init__(self, name: str = "mse") -> None:
        self.name = name

    def __call__(self, rule, truth: PseudoTruth, n: int) -> float:
        y = np.asarray(truth.eval_y(n), dtype=float)
        err = _row_mean((matching(rule.predict(truth.eval_X), y, self.name) - y) ** 2)
        return float(truth.eval_weights @ err)

    def scale(self, truth: PseudoTruth, n: int) -> float:
        """Weighted mean of the squared truth (the loss of predicting zero).

        Parameters
        ----------
        truth : PseudoTruth
            The pseudo-truth.
        n : int
            Training sample size.

        Returns
        -------
        float
            ``Σ_i w_i mean(f(x_i)²)``.

        Examples
        --------
        Truth 0 and 1 with equal weights: (0² + 1²) / 2.

        >>> import numpy as np
        >>> from types import SimpleNamespace
        >>> truth = SimpleNamespace(eval_weights=np.array([0.5, 0.5]),
        ...                         eval_y=lambda n: np.array([0.0, 1.0]))
        >>> MSE().scale(truth, n=10)
        0.5
        """
        return float(truth.eval_weights @ _row_mean(np.asarray(truth.eval_y(n), float) ** 2))


class KL(Discrepancy):
    """Kullback–Leibler divergence KL(truth || prediction) between probability vectors.

    The vectors lie along the last axis; the divergence is averaged over evaluation locations
    (weighted by P_X).

    Parameters
    ----------
    name : str
        Label of the ``discrepancy`` coordinate in results.
    outside : bool
        The vectors are inside shares: the outside share ``1 - sum`` is appended to truth and
        prediction before comparing (as in the demand application).

    Examples
    --------
    One market with inside shares (0.2, 0.3) predicted as (0.25, 0.25); both leave 0.5 to the
    outside good, so KL = 0.2 log(0.2/0.25) + 0.3 log(0.3/0.25):

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> from restrictiveness import FunctionRule
    >>> truth = SimpleNamespace(eval_X=np.zeros((1, 2, 1)), eval_weights=np.array([1.0]),
    ...                         eval_y=lambda n: np.array([[0.2, 0.3]]))
    >>> rule = FunctionRule(lambda X: np.array([[0.25, 0.25]]))
    >>> round(KL()(rule, truth, n=10), 6)
    0.010068
    >>> round(float(0.2 * np.log(0.2 / 0.25) + 0.3 * np.log(0.3 / 0.25)), 6)
    0.010068
    """

    def __init__(self, name: str = "kl", outside: bool = True) -> None:
        if not isinstance(outside, bool | np.bool_):  # bool("no") is True
            raise ConfigurationError(f"KL: outside must be True or False, got {outside!r}")
        self.name, self.outside = name, bool(outside)

    def __repr__(self) -> str:
        # the repr is all a checkpoint and a saved file's configuration know of a discrepancy:
        # KL(outside=False) showed as KL(name='kl') and resumed KL()'s records (the default
        # stays unshown, so checkpoints written before resume)
        return f"KL(name={self.name!r}" + (")" if self.outside else ", outside=False)")

    def _full(self, s: np.ndarray) -> np.ndarray:
        s = np.asarray(s, dtype=float)
        if self.outside:
            s = np.concatenate([s, 1.0 - s.sum(axis=-1, keepdims=True)], axis=-1)
        return s

    def __call__(self, rule, truth: PseudoTruth, n: int) -> float:
        if np.ndim(truth.eval_y(n)) < 2:  # was an IndexError, reported as the baseline's
            raise ConfigurationError(f"{self.name}: KL compares probability vectors along the "
                                     "last axis (e.g. market shares), but these truths are one "
                                     "number per location; use MSE")
        y = np.asarray(truth.eval_y(n), dtype=float)
        p = self._full(y)
        q = self._full(matching(rule.predict(truth.eval_X), y, self.name))
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
        kl = terms.sum(axis=-1)
        return float(truth.eval_weights @ _row_mean(kl))

    def scale(self, truth: PseudoTruth, n: int) -> float:
        """1: probabilities have no units, so KL is on a fixed scale.

        Parameters
        ----------
        truth : PseudoTruth
            The pseudo-truth (not used).
        n : int
            Training sample size (not used).

        Returns
        -------
        float
            1.0.

        Examples
        --------
        >>> KL().scale(None, n=10)
        1.0
        """
        return 1.0

"""Evaluation distributions and the pseudo-truths they draw (SPEC §1–§3).

An :class:`EvaluationDistribution` draws one :class:`PseudoTruth` per replication. A pseudo-truth
holds

* training locations for every sample size, nested (the first ``n`` of the largest set), and
  for within-function averaging (SPEC §3, S.1.6) one such set per training *draw* ``k``;
* common evaluation locations with weights;
* the truth's values: labels of the training points and values at the evaluation points. A
  prior may construct the truth separately for each ``n`` (the lottery prior projects on each
  ``n``'s union of points), so both take ``n``.

Priors whose truth is a function (the demand prior) also implement :meth:`PseudoTruth.evaluate`,
which discrepancies use to perturb inputs (price elasticities).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..shared.exceptions import ConfigurationError
from ..shared.sample import Sample
from .constraints import Constraint

__all__ = ["EvaluationDistribution", "PseudoTruth"]


class PseudoTruth:
    """One eligible prediction rule drawn from an evaluation distribution.

    Subclasses implement :meth:`train_y` and :meth:`eval_y` (and :meth:`evaluate` when the truth
    is a function).

    Attributes
    ----------
    train_locations : list of ndarray
        One array per training draw ``k``; the first ``n`` rows are the size-``n`` sample.
    eval_X : ndarray
        Evaluation locations, common to every ``n`` and procedure.
    eval_weights : ndarray
        Weights of the evaluation locations (sum to one).
    columns, response : names of the covariates and of the label.
    """

    def __init__(self, train_locations: Sequence[np.ndarray], eval_X: np.ndarray,
                 eval_weights: np.ndarray | None, columns: tuple[str, ...],
                 response: str) -> None:
        self.train_locations = list(train_locations)
        self.eval_X = eval_X
        m = np.shape(eval_X)[0]
        self.eval_weights = (np.full(m, 1.0 / m) if eval_weights is None
                             else np.asarray(eval_weights, dtype=float))
        self.columns, self.response = tuple(columns), response

    @property
    def draws(self) -> int:
        """Number of training samples per sample size (K of SPEC §3)."""
        return len(self.train_locations)

    def train_X(self, n: int, draw: int = 0) -> np.ndarray:
        return self.train_locations[draw][:n]

    def train_y(self, n: int, draw: int = 0) -> np.ndarray:
        """Noise-free labels of the first ``n`` training locations of ``draw``."""
        raise NotImplementedError

    def eval_y(self, n: int) -> np.ndarray:
        """The truth at the evaluation locations (as constructed for sample size ``n``)."""
        raise NotImplementedError

    def evaluate(self, X: np.ndarray, n: int) -> np.ndarray:
        """The truth at arbitrary locations (only for priors whose truth is a function)."""
        raise NotImplementedError(f"{type(self).__name__} is known only on its own points")

    def sample(self, n: int, draw: int = 0) -> Sample:
        """The size-``n`` training sample of ``draw``."""
        return Sample(self.train_X(n, draw), self.train_y(n, draw), self.columns, self.response)

    def evaluation_sample(self, n: int) -> Sample:
        """The evaluation locations with their true values, for model restrictiveness (Def. 1)."""
        return Sample(self.eval_X, self.eval_y(n), self.columns, self.response)

    def diagnostics(self, n: int) -> dict[str, float]:
        """Per-draw diagnostics stored with the results (e.g. monotonicity violations)."""
        return {}


class EvaluationDistribution:
    """Base class of evaluation distributions over an eligible set.

    Attributes
    ----------
    columns : tuple of str
        Covariate names.
    response : str
        Label name.
    constraints : tuple of Constraint
        The eligible set's restrictions; the failure protocol repairs and checks predictions
        with them, and the draws satisfy every one of them (:meth:`check_constraints`).
    diagnostic_names : tuple of str
        Names of the per-draw diagnostics its pseudo-truths report.
    """

    columns: tuple[str, ...] = ()
    response: str = "y"
    constraints: tuple[Constraint, ...] = ()
    diagnostic_names: tuple[str, ...] = ()
    #: Constraint types the distribution imposes by construction (besides projectable ones).
    imposes: tuple[type, ...] = ()

    def check_constraints(self, constraints: Sequence[Constraint]) -> None:
        """Refuse a constraint the draws cannot satisfy.

        The contract: every constraint of the eligible set is imposed on the pseudo-truths, by
        construction (a type in :attr:`imposes`) or by its own
        :meth:`~restrictiveness.eligible.constraints.Constraint.project`; anything else is
        refused here, naming it, rather than ignored.

        Raises
        ------
        ConfigurationError
        """
        for c in constraints:
            if not (isinstance(c, self.imposes) or c.projectable):
                kinds = ", ".join(t.__name__ for t in self.imposes) or "nothing"
                raise ConfigurationError(
                    f"{type(self).__name__} cannot impose {c!r} on its draws: it imposes "
                    f"{kinds} by construction, and constraints that define "
                    "project(values, X, columns); give the constraint a projection, or use an "
                    "evaluation distribution that imposes it")

    def draw(self, ns: Sequence[int], rng: np.random.Generator, draws: int = 1) -> PseudoTruth:
        """Draw one pseudo-truth with training locations for every ``n`` in ``ns``
        (``draws`` independent sets of them) and common evaluation locations."""
        raise NotImplementedError

    def memory_bytes(self, ns: Sequence[int], draws: int = 1) -> int:
        """A lower bound on the memory one draw needs (0: not known); studies refuse sizes
        that cannot fit before any work."""
        return 0

    def describe(self) -> str:
        return repr(self)

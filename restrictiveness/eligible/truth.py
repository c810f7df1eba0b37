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

    Parameters
    ----------
    train_locations : sequence of ndarray
        One array per training draw ``k``, of the largest sample size; the first ``n`` rows are
        the size-``n`` sample.
    eval_X : ndarray
        Evaluation locations, common to every ``n`` and procedure.
    eval_weights : ndarray or None
        Weights of the evaluation locations, summing to one (None: equal weights).
    columns : tuple of str
        Names of the covariates.
    response : str
        Name of the label.

    Attributes
    ----------
    train_locations : list of ndarray
        As given.
    eval_X : ndarray
        As given.
    eval_weights : ndarray
        The weights (equal if none were given).
    columns, response : tuple of str, str
        As given.

    Examples
    --------
    A fixed truth ``f(x) = x^2``, known everywhere:

    >>> import numpy as np, restrictiveness as rx
    >>> class Square(rx.PseudoTruth):
    ...     def train_y(self, n, draw=0):
    ...         return self.train_X(n, draw)[:, 0] ** 2
    ...     def eval_y(self, n):
    ...         return self.eval_X[:, 0] ** 2
    ...     def evaluate(self, X, n):
    ...         return X[:, 0] ** 2
    >>> truth = Square([np.array([[1.0], [2.0], [3.0]])], np.array([[0.5], [1.5]]), None,
    ...                ("x",), "y")
    >>> truth.sample(2).y, truth.eval_weights
    (array([1., 4.]), array([0.5, 0.5]))
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
        """The first ``n`` training locations of ``draw``.

        Parameters
        ----------
        n : int
            Sample size.
        draw : int
            Training draw ``k`` (0 unless the study averages over several, SPEC §3).

        Returns
        -------
        ndarray
            Locations, observations along the first axis; nested in ``n``.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=5).draw([3, 6], np.random.default_rng(0))
        >>> truth.train_X(3).shape, np.array_equal(truth.train_X(3), truth.train_X(6)[:3])
        ((3, 1), True)
        """
        return self.train_locations[draw][:n]

    def train_y(self, n: int, draw: int = 0) -> np.ndarray:
        """Noise-free labels of the first ``n`` training locations of ``draw``.

        Parameters
        ----------
        n : int
            Sample size (a prior may construct the truth separately for each ``n``).
        draw : int
            Training draw ``k``.

        Returns
        -------
        ndarray
            ``f(X_i)`` for the locations of :meth:`train_X`.

        Examples
        --------
        A monotone-GP truth is nondecreasing in ``x`` and lies in ``[0, 1]``:

        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=5).draw([3, 6], np.random.default_rng(0))
        >>> y = truth.train_y(6)[np.argsort(truth.train_X(6)[:, 0])]
        >>> bool((np.diff(y) >= 0).all() and (0 <= y).all() and (y <= 1).all())
        True
        """
        raise NotImplementedError

    def eval_y(self, n: int) -> np.ndarray:
        """The truth at the evaluation locations, as constructed for sample size ``n``.

        Parameters
        ----------
        n : int
            Sample size.

        Returns
        -------
        ndarray
            ``f`` at :attr:`eval_X`, one value per evaluation location.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=5).draw([3, 6], np.random.default_rng(0))
        >>> truth.eval_y(6).shape, truth.eval_X.shape
        ((5,), (5, 1))
        """
        raise NotImplementedError

    def evaluate(self, X: np.ndarray, n: int) -> np.ndarray:
        """The truth at arbitrary locations (only for priors whose truth is a function).

        Discrepancies that perturb inputs (price elasticities of the demand application) need
        it; truths tabulated on their own points raise.

        Parameters
        ----------
        X : ndarray
            Locations, observations along the first axis.
        n : int
            Sample size the truth was constructed for.

        Returns
        -------
        ndarray
            ``f(X)``.

        Raises
        ------
        NotImplementedError
            If the truth is known only on its own points.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=5).draw([3, 6], np.random.default_rng(0))
        >>> truth.evaluate(np.array([[0.5]]), 6)
        Traceback (most recent call last):
        ...
        NotImplementedError: MonotoneGPTruth is known only on its own points
        """
        raise NotImplementedError(f"{type(self).__name__} is known only on its own points")

    def sample(self, n: int, draw: int = 0) -> Sample:
        """The size-``n`` training sample of ``draw``.

        Parameters
        ----------
        n : int
            Sample size.
        draw : int
            Training draw ``k``.

        Returns
        -------
        Sample
            :meth:`train_X` with the labels of :meth:`train_y`.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=5).draw([3, 6], np.random.default_rng(0))
        >>> s = truth.sample(3)
        >>> len(s), s.columns, np.array_equal(s.y, truth.train_y(3))
        (3, ('x',), True)
        """
        return Sample(self.train_X(n, draw), self.train_y(n, draw), self.columns, self.response)

    def evaluation_sample(self, n: int) -> Sample:
        """The evaluation locations with their true values, for model restrictiveness (Def. 1).

        Parameters
        ----------
        n : int
            Sample size the truth was constructed for.

        Returns
        -------
        Sample
            :attr:`eval_X` with the labels of :meth:`eval_y`.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=5).draw([3, 6], np.random.default_rng(0))
        >>> len(truth.evaluation_sample(6))
        5
        """
        return Sample(self.eval_X, self.eval_y(n), self.columns, self.response)

    def diagnostics(self, n: int) -> dict[str, float]:
        """Per-draw diagnostics stored with the results (e.g. monotonicity violations).

        Parameters
        ----------
        n : int
            Sample size.

        Returns
        -------
        dict of str to float
            One value per name in the distribution's ``diagnostic_names`` (the base class
            reports none).

        Examples
        --------
        The pairs of points where the monotone-GP truth still violates monotonicity:

        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=5).draw([3, 6], np.random.default_rng(0))
        >>> truth.diagnostics(6)
        {'violations': 0.0}
        """
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

    Examples
    --------
    Linear truths ``f(x) = b x`` with a standard-normal slope ``b`` (an eligible set without
    restrictions):

    >>> import numpy as np, restrictiveness as rx
    >>> class LinearTruth(rx.PseudoTruth):
    ...     def __init__(self, slope, *args):
    ...         super().__init__(*args)
    ...         self.slope = slope
    ...     def train_y(self, n, draw=0):
    ...         return self.slope * self.train_X(n, draw)[:, 0]
    ...     def eval_y(self, n):
    ...         return self.slope * self.eval_X[:, 0]
    >>> class RandomSlope(rx.EvaluationDistribution):
    ...     columns = ("x",)
    ...     def draw(self, ns, rng, draws=1):
    ...         train = [rng.random((max(ns), 1)) for _ in range(draws)]
    ...         return LinearTruth(rng.standard_normal(), train, np.linspace(0, 1, 5)[:, None],
    ...                            None, self.columns, self.response)
    >>> truth = RandomSlope().draw([10, 20], np.random.default_rng(0))
    >>> s = truth.sample(10)
    >>> bool(np.allclose(s.y / s.X[:, 0], truth.slope))
    True
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

        Parameters
        ----------
        constraints : sequence of Constraint
            The eligible set's restrictions.

        Raises
        ------
        ConfigurationError
            If a constraint is neither imposed by construction nor projectable.

        Examples
        --------
        >>> import restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"))
        >>> rx.MonotoneGP(F).check_constraints([rx.Simplex()])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.ConfigurationError: MonotoneGP cannot impose Simplex(...
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
        """Draw one pseudo-truth (one replication).

        Parameters
        ----------
        ns : sequence of int
            Sample sizes; the truth has training locations for each (nested: the size-``n``
            set is the first ``n`` locations of the largest).
        rng : numpy.random.Generator
            The replication's random stream.
        draws : int
            Independent sets of training locations (K of SPEC §3).

        Returns
        -------
        PseudoTruth
            Training and evaluation locations with the truth's values.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=5).draw([3, 6], np.random.default_rng(0), draws=2)
        >>> truth.draws, truth.train_X(6, draw=1).shape, truth.eval_X.shape
        (2, (6, 1), (5, 1))
        """
        raise NotImplementedError

    def memory_bytes(self, ns: Sequence[int], draws: int = 1) -> int:
        """A lower bound on the memory one draw needs; studies refuse sizes that cannot fit.

        The check happens before any work, so a study too large for the machine fails at
        once rather than after hours.

        Parameters
        ----------
        ns : sequence of int
            Sample sizes.
        draws : int
            Training draws per sample size.

        Returns
        -------
        int
            Bytes (0: not known, the base class's answer).

        Examples
        --------
        The monotone-GP prior holds a covariance matrix and its Cholesky factor over the
        evaluation and largest training set, ``2 * 8 * (1000 + 1000)^2`` bytes:

        >>> import restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"))
        >>> rx.MonotoneGP(F, n_eval=1000).memory_bytes([100, 1000])
        64000000
        """
        return 0

    def describe(self) -> str:
        """Describe the distribution in words (default: its ``repr``).

        Returns
        -------
        str

        Examples
        --------
        >>> import restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"))
        >>> print(rx.MonotoneGP(F).describe())  # doctest: +NORMALIZE_WHITESPACE
        MonotoneGP(EligibleSet(Box(x=(0.0, 1.0)), Increasing('x')), kernel=Matern32(variance=10.0,
        lengthscale=1.0), jitter=0.0001, n_eval=1000, response='y', order='row-major', tol=1e-06,
        max_sweeps=50)
        """
        return repr(self)

"""Economic restrictions on prediction rules, as small immutable value objects.

A constraint can

* ``check`` predictions at covariate locations (one flag per observation row),
* ``repair`` them where the failure protocol of SPEC §6 allows (clip to bounds),
* ``project`` values of a pseudo-truth onto the restriction, when it can be imposed by a map
  of the values at a finite set of points,
* ``describe`` itself in words.

Evaluation distributions read the same objects to build eligible pseudo-truths
(:class:`~restrictiveness.eligible.monotone_gp.MonotoneGP`), and the study runner reads them to
apply the failure protocol, so a restriction is declared once. An evaluation distribution
*imposes* every constraint of its eligible set on its draws or *refuses* it
(:meth:`~restrictiveness.eligible.truth.EvaluationDistribution.check_constraints`): a draw that
silently ignored a restriction would measure restrictiveness on the wrong eligible set.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..shared.exceptions import ConstraintError

__all__ = [
    "Constraint",
    "Between",
    "Increasing",
    "Decreasing",
    "Simplex",
    "column_values",
]

Bound = float | str


def column_values(bound: Bound, X: np.ndarray, columns: Sequence[str]) -> np.ndarray | float:
    """Resolve a bound that is a number or a column name into values per row of ``X``.

    Parameters
    ----------
    bound : float or str
        A number, or the name of a covariate column.
    X : ndarray
        Covariates, observations along the first axis and columns along the last.
    columns : sequence of str
        Names of the last axis of ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> column_values("b", np.array([[1.0, 2.0], [3.0, 4.0]]), ("a", "b"))
    array([2., 4.])
    """
    if isinstance(bound, str):
        try:
            k = list(columns).index(bound)
        except ValueError:
            raise ConstraintError(
                f"constraint bound {bound!r} is not a covariate; covariates are {list(columns)}"
            ) from None
        return np.asarray(X)[..., k]
    return float(bound)


class Constraint:
    """Base class of restrictions on prediction rules: the extension point for your own.

    A constraint is a small immutable value object (a frozen dataclass) with

    * ``check(pred, X, columns)`` — one flag per observation, True where admissible; the
      failure protocol replaces flagged predictions by the baseline's;
    * ``repair(pred, X, columns)`` — optional: predictions moved into the eligible set where
      that is well defined (the default leaves them, so ``check`` decides);
    * ``project(values, X, columns)`` — optional: values of a pseudo-truth at the points ``X``
      mapped onto the restriction. Define it only if the restriction can be imposed that way;
      an evaluation distribution then imposes it on its draws (for
      :class:`~restrictiveness.eligible.monotone_gp.MonotoneGP`: after the monotone projection
      and the link, on every sample size's points) and checks the result with ``check``.
      Without it, distributions that cannot impose the restriction refuse it
      (:class:`~restrictiveness.shared.exceptions.ConfigurationError`) rather than draw
      pseudo-truths that ignore it;
    * ``describe()`` — the restriction in words.

    Examples
    --------
    A restriction that can only be checked (concavity in one covariate): it guards predictions,
    and the monotone-GP prior refuses it because it cannot impose it.

    >>> import numpy as np, restrictiveness as rx
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Concave(rx.Constraint):
    ...     column: str
    ...     def check(self, pred, X, columns):
    ...         x = X[:, list(columns).index(self.column)]
    ...         order = np.argsort(x)
    ...         slopes = np.diff(pred[order]) / np.diff(x[order])
    ...         ok = np.ones(len(pred), dtype=bool)
    ...         ok[order[1:-1]] = np.diff(slopes) <= 1e-9
    ...         return ok
    ...     def describe(self):
    ...         return f"f concave in {self.column}"
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), Concave("x"))
    >>> try:
    ...     rx.MonotoneGP(F)
    ... except rx.ConfigurationError as refused:
    ...     print(str(refused)[:58])
    MonotoneGP cannot impose Concave(column='x') on its draws:

    A restriction that can be imposed by a projection of the values (a floor):

    >>> @dataclass(frozen=True)
    ... class Floor(rx.Constraint):
    ...     level: float
    ...     def check(self, pred, X, columns):
    ...         return pred >= self.level
    ...     def repair(self, pred, X, columns):
    ...         return np.maximum(pred, self.level)
    ...     def project(self, values, X, columns):
    ...         return np.maximum(values, self.level)
    ...     def describe(self):
    ...         return f"f >= {self.level}"
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), Floor(0.5))
    >>> truth = rx.MonotoneGP(F, n_eval=50).draw([20], np.random.default_rng(0))
    >>> bool((truth.eval_y(20) >= 0.5).all())
    True
    """

    def check(self, pred: np.ndarray, X: np.ndarray, columns: Sequence[str]) -> np.ndarray:
        """Flag the observations whose predictions satisfy the restriction.

        Parameters
        ----------
        pred : ndarray
            Predictions, observations along the first axis (``(n,)``, or ``(n, J)`` for
            markets of J products).
        X : ndarray
            Covariates of the same observations, named columns along the last axis.
        columns : sequence of str
            Names of the last axis of ``X``.

        Returns
        -------
        ndarray of bool
            One flag per observation (first axis), True where the prediction is admissible
            (the base class admits everything).

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> rx.Between(0, 1).check(np.array([0.5, 1.5, np.nan]), np.zeros((3, 1)), ("x",))
        array([ True, False, False])
        """
        return np.ones(np.shape(pred)[0], dtype=bool)

    def repair(self, pred: np.ndarray, X: np.ndarray, columns: Sequence[str]) -> np.ndarray:
        """Move predictions into the eligible set where that is well defined.

        The failure protocol (SPEC §6) repairs predictions first, then replaces those that
        :meth:`check` still refuses, and those that were not finite before the repair, by the
        baseline's.

        Parameters
        ----------
        pred : ndarray
            Predictions, observations along the first axis (``(n,)``, or ``(n, J)`` for
            markets of J products).
        X : ndarray
            Covariates of the same observations, named columns along the last axis.
        columns : sequence of str
            Names of the last axis of ``X``.

        Returns
        -------
        ndarray
            Repaired predictions, shaped like ``pred`` (the base class returns ``pred``).

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> rx.Between(0, 1).repair(np.array([-0.5, 0.5, 2.0]), np.zeros((3, 1)), ("x",))
        array([0. , 0.5, 1. ])
        """
        return pred

    def project(self, values: np.ndarray, X: np.ndarray, columns: Sequence[str]) -> np.ndarray:
        """Map the values of a pseudo-truth at ``X`` onto the restriction.

        Override it to make the constraint imposable by evaluation distributions; the base
        class cannot impose anything (:attr:`projectable` is then False).

        Parameters
        ----------
        values : ndarray
            Values of a pseudo-truth, one per row of ``X``.
        X : ndarray
            The points, named columns along the last axis.
        columns : sequence of str
            Names of the last axis of ``X``.

        Returns
        -------
        ndarray
            Values of the same shape that :meth:`check` admits.

        Raises
        ------
        NotImplementedError
            If the constraint defines no projection.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> rx.Between(0, 1).projectable
        False
        >>> rx.Between(0, 1).project(np.array([2.0]), np.zeros((1, 1)), ("x",))
        Traceback (most recent call last):
        ...
        NotImplementedError: Between(lower=0, upper=1) defines no projection
        """
        raise NotImplementedError(f"{self!r} defines no projection")

    @property
    def projectable(self) -> bool:
        """Whether the constraint defines :meth:`project`."""
        return type(self).project is not Constraint.project

    def describe(self) -> str:  # pragma: no cover - overridden
        """Describe the restriction in words (subclasses must override it).

        Returns
        -------
        str
            The restriction, e.g. for summaries and reports.

        Examples
        --------
        >>> import restrictiveness as rx
        >>> rx.Between(0, "z_hi").describe()
        '0 <= f(x) <= z_hi'
        """
        raise NotImplementedError


@dataclass(frozen=True)
class Between(Constraint):
    """Predictions lie between ``lower`` and ``upper`` (numbers or covariate names).

    Repair clips to the bounds, as the failure protocol of SPEC §6 does. In an
    :class:`~restrictiveness.eligible.monotone_gp.EligibleSet`, the monotone-GP prior maps its
    latent draws into the bounds with a logistic link.

    Parameters
    ----------
    lower, upper : float or str
        The bounds: finite numbers, or names of covariates whose values bound the prediction
        at each observation (e.g. a lottery's certainty equivalent lies between its outcomes).

    Raises
    ------
    ConstraintError
        If a bound is not finite, or numeric bounds have ``lower > upper``.

    Examples
    --------
    >>> import numpy as np
    >>> c = Between("z_lo", "z_hi")
    >>> X = np.array([[0.0, 1.0], [0.2, 0.5]])
    >>> c.repair(np.array([1.5, 0.1]), X, ("z_lo", "z_hi"))
    array([1. , 0.2])
    """

    lower: Bound
    upper: Bound

    def __post_init__(self) -> None:
        for name in ("lower", "upper"):
            v = getattr(self, name)
            if not isinstance(v, str) and (isinstance(v, bool) or not isinstance(v, numbers.Real)
                                           or not math.isfinite(v)):
                raise ConstraintError(f"Between: {name} must be a finite number or a column "
                                      f"name, got {v!r}")
        if isinstance(self.lower, str) and self.lower == self.upper:
            # every pseudo-truth was that column itself: a prior of one rule, which any
            # procedure fitting it matched exactly (r̂ = 0), whatever it rules out
            raise ConstraintError(
                f"Between: lower and upper are the same column {self.lower!r}; the only eligible "
                f"rule is f(x) = {self.lower}, so no rule is drawn at random and restrictiveness "
                "measures nothing")
        if not isinstance(self.lower, str) and not isinstance(self.upper, str):
            if float(self.lower) > float(self.upper):
                raise ConstraintError(
                    f"Between: lower={self.lower} exceeds upper={self.upper}; the eligible set "
                    "would be empty"
                )
            if float(self.lower) == float(self.upper):  # r̂ would be 0/0
                raise ConstraintError(
                    f"Between: lower equals upper ({self.lower}); the only eligible rule is "
                    "that constant, which the baseline fits exactly, so restrictiveness is "
                    "undefined")

    def bounds(self, X: np.ndarray, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bound per row of ``X``.

        Parameters
        ----------
        X : ndarray
            Covariates, observations along the first axis, named columns along the last.
        columns : sequence of str
            Names of the last axis of ``X``.

        Returns
        -------
        lower, upper : ndarray
            The bounds, one per observation.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.0, 1.0], [0.2, 0.5]])
        >>> Between(0, "z_hi").bounds(X, ("z_lo", "z_hi"))
        (array([0., 0.]), array([1. , 0.5]))
        """
        n = np.shape(X)[0]
        lo = np.broadcast_to(column_values(self.lower, X, columns), n)
        hi = np.broadcast_to(column_values(self.upper, X, columns), n)
        return lo.astype(float), hi.astype(float)

    def _broadcast(self, pred: np.ndarray, X: np.ndarray, columns: Sequence[str]):
        lo, hi = self.bounds(X, columns)
        shape = (-1,) + (1,) * (np.ndim(pred) - 1)
        return lo.reshape(shape), hi.reshape(shape)

    def check(self, pred, X, columns):
        """Flag the observations whose predictions all lie within their bounds.

        Parameters
        ----------
        pred : ndarray
            Predictions, observations along the first axis (``(n,)``, or ``(n, J)`` for
            markets of J products).
        X : ndarray
            Covariates of the same observations, named columns along the last axis.
        columns : sequence of str
            Names of the last axis of ``X``.

        Returns
        -------
        ndarray of bool
            One flag per observation; NaN predictions fail.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.0, 1.0], [0.2, 0.5]])
        >>> Between("z_lo", "z_hi").check(np.array([0.8, 0.8]), X, ("z_lo", "z_hi"))
        array([ True, False])
        """
        lo, hi = self._broadcast(pred, X, columns)
        ok = (pred >= lo) & (pred <= hi)
        return ok.reshape(ok.shape[0], -1).all(axis=1)

    def repair(self, pred, X, columns):
        """Clip predictions to their bounds (NaN stays NaN, so :meth:`check` still refuses it).

        Parameters
        ----------
        pred : ndarray
            Predictions, observations along the first axis (``(n,)``, or ``(n, J)`` for
            markets of J products).
        X : ndarray
            Covariates of the same observations, named columns along the last axis.
        columns : sequence of str
            Names of the last axis of ``X``.

        Returns
        -------
        ndarray
            ``min(max(pred, lower), upper)``, shaped like ``pred``.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.0, 1.0], [0.2, 0.5]])
        >>> Between("z_lo", "z_hi").repair(np.array([1.5, np.nan]), X, ("z_lo", "z_hi"))
        array([ 1., nan])
        """
        lo, hi = self._broadcast(pred, X, columns)
        # np.clip keeps NaN as NaN, so non-finite predictions still fail `check`.
        return np.clip(pred, lo, hi)

    def describe(self) -> str:
        """Describe the bounds in words.

        Returns
        -------
        str

        Examples
        --------
        >>> Between("z_lo", "z_hi").describe()
        'z_lo <= f(x) <= z_hi'
        """
        return f"{self.lower} <= f(x) <= {self.upper}"


@dataclass(frozen=True)
class _Monotone(Constraint):
    columns: tuple[str, ...]
    sign: ClassVar[int]  # +1 nondecreasing, -1 nonincreasing (set by each subclass)

    def __init__(self, *columns: str) -> None:
        if not columns:
            raise ConstraintError(f"{type(self).__name__} needs at least one column name")
        if not all(isinstance(c, str) for c in columns):  # a list was a bare TypeError
            raise ConstraintError(f"{type(self).__name__} takes column names as separate "
                                  f"strings, e.g. Increasing('x1', 'x2'); got {columns!r}")
        if len(set(columns)) != len(columns):
            raise ConstraintError(f"{type(self).__name__}: repeated column in {columns}")
        object.__setattr__(self, "columns", tuple(columns))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.columns))})"

    def violations(self, pred: np.ndarray, X: np.ndarray, columns: Sequence[str],
                   tol: float = 1e-9) -> int:
        """Number of ordered pairs of rows that violate the monotonicity of scalar predictions.

        Two rows are ordered when they agree on every other column and are ordered on these.

        Parameters
        ----------
        pred : ndarray
            One prediction per row of ``X``.
        X : ndarray
            Locations ``(n, d)``.
        columns : sequence of str
            The names of ``X``'s columns.
        tol : float
            Slack: a pair violates only when the order is reversed by more than ``tol``.

        Returns
        -------
        int
            The number of violating ordered pairs.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.0], [1.0], [2.0]])
        >>> Increasing("x").violations(np.array([0.0, 2.0, 1.0]), X, ["x"])   # 2 > 1
        1
        >>> Decreasing("x").violations(np.array([0.0, 2.0, 1.0]), X, ["x"])   # 0 < 2, 0 < 1
        2
        """
        from .projection import ordered_pairs

        sign = np.array([self.sign if c in self.columns else 0 for c in columns], dtype=np.int8)
        i, j = ordered_pairs(np.asarray(X, dtype=float), sign)
        return int(np.count_nonzero(pred[i] > pred[j] + tol))


class Increasing(_Monotone):
    """The rule is nondecreasing in each named covariate.

    It restricts the eligible set: evaluation distributions impose it on their draws (the
    monotone projection of :class:`~restrictiveness.eligible.monotone_gp.MonotoneGP`). A
    procedure's predictions are not checked against it (``check`` admits every row, since
    monotonicity is a property of pairs of rows); ``violations`` counts the violating pairs.

    Parameters
    ----------
    *columns : str
        Names of the covariates, at least one, each at most once.

    Raises
    ------
    ConstraintError
        If no column is named or a column is repeated.

    Examples
    --------
    >>> import numpy as np
    >>> c = Increasing("x")
    >>> X = np.array([[0.0], [0.5], [1.0]])
    >>> c.violations(np.array([0.0, 0.2, 0.1]), X, ("x",))  # f(0.5) > f(1)
    1
    """

    sign = 1

    def describe(self) -> str:
        """Describe the restriction in words.

        Returns
        -------
        str

        Examples
        --------
        >>> Increasing("z_hi", "z_lo", "p").describe()
        'f nondecreasing in z_hi, z_lo, p'
        """
        return f"f nondecreasing in {', '.join(self.columns)}"


class Decreasing(_Monotone):
    """The rule is nonincreasing in each named covariate.

    Parameters
    ----------
    *columns : str
        Names of the covariates, at least one, each at most once.

    Raises
    ------
    ConstraintError
        If no column is named or a column is repeated.

    Examples
    --------
    Market shares fall with a product's own price:

    >>> import numpy as np
    >>> c = Decreasing("price")
    >>> X = np.array([[1.0], [2.0], [3.0]])
    >>> c.violations(np.array([0.3, 0.2, 0.1]), X, ("price",))
    0
    """

    sign = -1

    def describe(self) -> str:
        """Describe the restriction in words.

        Returns
        -------
        str

        Examples
        --------
        >>> Decreasing("price").describe()
        'f nonincreasing in price'
        """
        return f"f nonincreasing in {', '.join(self.columns)}"


@dataclass(frozen=True)
class Simplex(Constraint):
    """Predictions along the last axis are positive shares.

    With ``outside=True`` (inside shares of a market with an outside good) the shares must sum to
    less than one; otherwise they must sum to one (within ``atol``). Invalid rows cannot be
    repaired: the failure protocol replaces them with the baseline's.

    Parameters
    ----------
    outside : bool
        Whether the market has an outside good (shares sum below one) or not (sum to one).
    atol : float
        Tolerance of the sum-to-one check (``outside=False`` only).

    Examples
    --------
    Two markets of two products; the second market's shares leave nothing to the outside good:

    >>> import numpy as np
    >>> shares = np.array([[0.2, 0.3], [0.6, 0.4]])
    >>> Simplex().check(shares, np.zeros((2, 2, 1)), ("price",))
    array([ True, False])
    >>> Simplex(outside=False).check(shares, np.zeros((2, 2, 1)), ("price",))
    array([False,  True])
    """

    outside: bool = True
    atol: float = 1e-8

    def __post_init__(self) -> None:
        if isinstance(self.atol, bool) or not isinstance(self.atol, numbers.Real) \
                or not 0 <= self.atol < np.inf:
            raise ConstraintError(f"Simplex: atol must be a finite number >= 0, got {self.atol!r}")

    def check(self, pred, X, columns):
        """Flag the observations (markets) whose shares are positive with an admissible sum.

        Parameters
        ----------
        pred : ndarray
            Predictions, observations along the first axis (``(n,)``, or ``(n, J)`` for
            markets of J products).
        X : ndarray
            Covariates of the same observations, named columns along the last axis.
        columns : sequence of str
            Names of the last axis of ``X``.

        Returns
        -------
        ndarray of bool
            One flag per observation: every share finite and positive, and the shares summing
            below one (``outside=True``) or to one within ``atol``.

        Examples
        --------
        >>> import numpy as np
        >>> Simplex().check(np.array([[0.2, 0.3], [0.5, -0.1]]), np.zeros((2, 2, 1)), ("p",))
        array([ True, False])
        """
        pred = np.asarray(pred, dtype=float)
        flat = pred.reshape(pred.shape[0], -1)
        total = flat.sum(axis=1)
        ok = np.isfinite(flat).all(axis=1) & (flat > 0).all(axis=1)
        if self.outside:
            return ok & (total < 1.0)
        return ok & (np.abs(total - 1.0) <= self.atol)

    def describe(self) -> str:
        """Describe the restriction in words.

        Returns
        -------
        str

        Examples
        --------
        >>> Simplex(outside=False).describe()
        'shares positive, sum to one'
        """
        return "shares positive, " + ("sum below one" if self.outside else "sum to one")

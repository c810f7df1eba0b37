"""Monotone Gaussian-process evaluation distribution on a declared eligible set (SPEC §6).

Construction of one pseudo-truth (one replication):

1. Evaluation locations (``n_eval`` from the domain, own random stream) and training locations
   for the largest ``n`` (own stream; nested: the size-``n`` set is the first ``n`` points).
2. One joint latent draw with *common random numbers across n*: points ordered
   [evaluation; training], ``L = chol(K + jitter I)``, latent ``L z`` for one standard-normal
   ``z``. The leading ``E + n`` entries are then an exact draw on the size-``n`` union, and the
   latent values at shared points coincide across ``n``.
3. For each ``n``, on the union stacked [training(n); evaluation]: the pairwise-averaging
   projection (:mod:`restrictiveness.eligible.projection`) in the increasing direction (``g₊``)
   and in the decreasing direction (``g₋``), blended as ``g̃ = (1 − w) g₊ − w g₋`` with
   ``w = e₊ / (e₊ + e₋)``, ``e± = ‖g± − g‖²`` (``−g₋`` is monotone in the required direction, so
   ``g̃`` is a convex combination of two monotone vectors).
4. The link onto a :class:`~restrictiveness.eligible.constraints.Between` constraint:
   ``f = lo + (hi − lo) / (1 + exp(−g̃))``; without one, ``f = g̃``.
5. Any other constraint of the eligible set is imposed by its own ``project`` on the union's
   values (and checked); a constraint without one is refused when the prior is built
   (:meth:`~restrictiveness.eligible.truth.EvaluationDistribution.check_constraints`).

For within-function averaging (``draws > 1``) further training sets are drawn and labelled by
GP interpolation of ``g̃`` on the union (SPEC §6 "New training samples for K > 1").
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import scipy.linalg
from scipy.special import expit

from ..shared.checks import is_whole, whole_number
from ..shared.exceptions import ConfigurationError, ConstraintError
from ..shared.sample import merge_repeats
from .constraints import Between, Constraint, Decreasing, Increasing
from .domains import Domain
from .kernels import Kernel, Matern32
from .projection import SweepOrder, count_violations, monotone_project, ordered_pairs
from .truth import EvaluationDistribution, PseudoTruth

__all__ = ["EligibleSet", "MonotoneGP", "MonotoneGPTruth"]

#: The largest jitter a MonotoneGP accepts, as a share of its kernel's variance.
JITTER_SHARE = 0.01
#: Evaluation points on which a MonotoneGP checks that its monotonicity orders some pair.
ORDER_PROBE = 2000


class EligibleSet:
    """A domain with the economic restrictions that eligible prediction rules satisfy.

    The eligible set ``F`` of the paper: rules on the covariate distribution's domain that
    satisfy every constraint. Evaluation distributions draw their pseudo-truths from it, and
    studies apply its constraints to procedures' predictions (the failure protocol, SPEC §6).

    Parameters
    ----------
    domain : Domain
        The covariate domain and distribution P_X.
    *constraints : Constraint
        The restrictions: at most one :class:`~restrictiveness.eligible.constraints.Between`,
        at most one monotonicity direction per column, and any others.

    Attributes
    ----------
    sign : ndarray of int8
        Monotonicity per column: 1 increasing, -1 decreasing, 0 unrestricted.
    between : Between or None
        The range constraint, if any.

    Raises
    ------
    ConstraintError
        If a constraint names a column the domain lacks, a column has two monotonicity
        constraints, or more than one ``Between`` is given.

    Examples
    --------
    >>> import restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1"),
    ...                    rx.Decreasing("x2"), rx.Between(0, 1))
    >>> F.sign.tolist()
    [1, -1]
    """

    def __init__(self, domain: Domain, *constraints: Constraint) -> None:
        if not isinstance(domain, Domain):
            raise ConstraintError(f"EligibleSet: the first argument must be a Domain (rx.Box, "
                                  f"rx.FiniteSet, ...), got {domain!r}")
        wrong = [c for c in constraints if not isinstance(c, Constraint)]
        if wrong:
            raise ConstraintError(f"EligibleSet: constraints must be Constraint objects "
                                  f"(rx.Increasing('x'), rx.Between(0, 1), ...), got {wrong}")
        self.domain, self.constraints = domain, tuple(constraints)
        sign = np.zeros(domain.dim, dtype=np.int8)
        for c in self.constraints:
            if isinstance(c, Increasing | Decreasing):
                for col in c.columns:
                    if col not in domain.columns:
                        raise ConstraintError(f"{c!r} names {col!r}, not a domain column "
                                              f"{list(domain.columns)}")
                    k = domain.columns.index(col)
                    if sign[k] != 0:
                        raise ConstraintError(f"column {col!r} has two monotonicity constraints")
                    sign[k] = c.sign
        self.sign = sign
        betweens = [c for c in self.constraints if isinstance(c, Between)]
        if len(betweens) > 1:
            raise ConstraintError("give at most one Between constraint")
        self.between = betweens[0] if betweens else None
        if self.between is not None:  # validates column names
            self.between.bounds(np.zeros((1, domain.dim)), domain.columns)

    @property
    def columns(self) -> tuple[str, ...]:
        """Names of the covariates, those of the domain."""
        return self.domain.columns

    def __repr__(self) -> str:
        parts = ", ".join([repr(self.domain)] + [repr(c) for c in self.constraints])
        return f"EligibleSet({parts})"


class MonotoneGPTruth(PseudoTruth):
    """A monotone-GP pseudo-truth, tabulated on its own points for each sample size."""

    def __init__(self, prior: MonotoneGP, train_locations, eval_X, eval_weights) -> None:
        super().__init__(train_locations, eval_X, eval_weights, prior.columns, prior.response)
        self.prior = prior
        self._union: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # n -> (X_union, g̃)
        self._values: dict[int, np.ndarray] = {}  # n -> f on the union [train(n); eval]
        self._violations: dict[int, int] = {}
        self._interp: dict[int, np.ndarray] = {}
        self._extra_labels: dict[tuple[int, int], np.ndarray] = {}

    def _set(self, n: int, X_union: np.ndarray, g_tilde: np.ndarray, f: np.ndarray,
             violations: int) -> None:
        self._union[n], self._values[n], self._violations[n] = (X_union, g_tilde), f, violations

    def _check_n(self, n: int) -> None:
        if n not in self._values:
            raise KeyError(f"this pseudo-truth was drawn for n in {sorted(self._values)}, not {n}")

    def train_y(self, n: int, draw: int = 0) -> np.ndarray:
        self._check_n(n)
        if draw == 0:
            return self._values[n][:n]
        key = (n, draw)
        if key not in self._extra_labels:
            self._extra_labels[key] = self.interpolate(self.train_X(n, draw), n)
        return self._extra_labels[key]

    def eval_y(self, n: int) -> np.ndarray:
        self._check_n(n)
        return self._values[n][n:]

    def interpolate(self, X: np.ndarray, n: int) -> np.ndarray:
        """Label new locations by GP interpolation of ``g̃`` on the size-``n`` union (K > 1).

        ``solve K a = g̃ − mean(g̃)``, predict ``mean + k(x, X_union) a``, then apply the link
        (SPEC §6 "New training samples for K > 1"). A location of the union itself gets the
        truth's own value there, exactly; every value lies inside the ``Between`` bounds.
        Elsewhere the interpolant is as accurate as ``K``'s conditioning allows: the solve
        reproduces the union's values to 5e-11 on the lottery prior (condition number 1e8), but
        to 6e-6 on 230 points of a line (7e14), where values at new points are accurate to 2e-5
        (measured against a 40-digit solve).

        Parameters
        ----------
        X : ndarray
            Locations ``(m, d)``.
        n : int
            The sample size whose union is interpolated.

        Returns
        -------
        ndarray
            The truth at ``X``.

        Examples
        --------
        Exact at the union's points, here on a line where ``K`` is nearly singular (condition
        number 1e15: the solve alone reproduced them to 6e-6 only):

        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> truth = rx.MonotoneGP(F, n_eval=200).draw([30], np.random.default_rng(2))
        >>> X = np.concatenate([truth.train_X(30), truth.eval_X])
        >>> y = np.concatenate([truth.train_y(30), truth.eval_y(30)])
        >>> bool(np.array_equal(truth.interpolate(X, 30), y))
        True
        """
        self._check_n(n)
        X = np.asarray(X, dtype=float)
        # The solve reproduces g̃ at the union only as well as K's conditioning allows (6e-6 on
        # 230 points of a line, 6e-4 with Matérn-5/2): the union's own points take the truth's
        # values, so a FiniteSet's further draws (its support points) are labelled exactly,
        # and without a solve.
        at = self._union_rows(n, X)
        known = at >= 0
        f = np.empty(len(X))
        f[known] = self._values[n][at[known]]
        if not known.all():
            X_union, g = self._union[n]
            if n not in self._interp:
                # (a union repeating a point has a singular K: _interpolation_weights solves it)
                self._interp[n] = _interpolation_weights(self.prior.kernel(X_union),
                                                         g - g.mean())
            new = X[~known]
            f[~known] = self.prior.link(g.mean() + self.prior.kernel(new, X_union)
                                        @ self._interp[n], new)
        return f

    def _union_rows(self, n: int, X: np.ndarray) -> np.ndarray:
        """The row of the size-``n`` union at each row of ``X`` (-1 where none)."""
        index = {row.tobytes(): k for k, row in enumerate(self._union[n][0])}
        return np.array([index.get(row.tobytes(), -1) for row in X], dtype=np.intp)

    def diagnostics(self, n: int) -> dict[str, float]:
        self._check_n(n)
        return {"violations": float(self._violations[n])}


class MonotoneGP(EvaluationDistribution):
    """Monotone Gaussian-process prior on an eligible set (SPEC §6, generalised).

    Parameters
    ----------
    eligible : EligibleSet
        Domain, monotonicity constraints (any increasing/decreasing coordinates) and an optional
        ``Between`` range for the logistic link.
    kernel : Kernel
        Latent covariance, in the domain's own coordinates (default Matérn-3/2, variance 10,
        length scale 1).
    jitter : float
        Added to the covariance diagonal before the Cholesky factorisation (absolute; at most
        1% of the kernel's variance).
    n_eval : int
        Number of evaluation locations (ignored by finite domains, which use their support).
    response : str
        Name of the label.
    order : {"row-major", "random"}
        Visiting order of the projection sweep (see :mod:`restrictiveness.eligible.projection`).
    tol, max_sweeps : float, int
        Stopping rule of the projection.

    Examples
    --------
    >>> import numpy as np, restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> truth = rx.MonotoneGP(F, n_eval=50).draw([10, 20], np.random.default_rng(0))
    >>> y = truth.eval_y(20)
    >>> bool(((0 <= y) & (y <= 1)).all())
    True
    """

    diagnostic_names = ("violations",)
    imposes = (Between, Increasing, Decreasing)

    def __init__(self, eligible: EligibleSet, kernel: Kernel | None = None,
                 jitter: float = 1e-4, n_eval: int = 1000, response: str = "y",
                 order: SweepOrder = "row-major", tol: float = 1e-6,
                 max_sweeps: int = 50) -> None:
        if not isinstance(eligible, EligibleSet):
            raise ConfigurationError(f"MonotoneGP takes an rx.EligibleSet(domain, *constraints), "
                                     f"got {eligible!r}")
        if kernel is not None and not isinstance(kernel, Kernel):
            raise ConfigurationError(f"kernel must be a Kernel (rx.Matern32, rx.Matern52, "
                                     f"rx.SquaredExponential), got {kernel!r}")
        if not isinstance(response, str) or not response or response in eligible.columns:
            raise ConfigurationError(f"response must be a name other than the covariates "
                                     f"{list(eligible.columns)}, got {response!r}")
        if not _finite(jitter) or jitter < 0:  # a negative jitter broke the Cholesky factor
            raise ConfigurationError(f"jitter must be a finite number >= 0, got {jitter!r}")
        if not _finite(tol) or tol <= 0:
            raise ConfigurationError(f"tol must be a finite number > 0, got {tol!r}")
        self.eligible = eligible
        self.columns, self.constraints = eligible.columns, eligible.constraints
        self.kernel = kernel if kernel is not None else Matern32(variance=10.0, lengthscale=1.0)
        self.kernel._lengthscales(eligible.domain.dim)  # one, or one per covariate
        # the jitter is absolute: against a small variance it would make the truths its own
        # white noise (variance 1e-30 gave truths of scale 3e-5, all jitter), without a word
        if jitter > JITTER_SHARE * self.kernel.variance:
            raise ConfigurationError(
                f"jitter={jitter!r} is more than {JITTER_SHARE:.0%} of the kernel's variance "
                f"{self.kernel.variance!r}: the truths would be mostly the jitter's white noise; "
                f"give a jitter of about 1e-5 times the variance")
        self.jitter, self.response = float(jitter), response
        self.n_eval = whole_number(n_eval, "n_eval", minimum=1)
        self.order, self.tol = order, float(tol)
        # 0 sweeps would leave the draws unprojected, i.e. not monotone
        self.max_sweeps = whole_number(max_sweeps, "max_sweeps", minimum=1)
        if order not in ("row-major", "random"):
            raise ConfigurationError("order must be 'row-major' or 'random'")
        self.check_constraints(eligible.constraints)
        self._check_link_keeps_monotonicity()
        #: constraints imposed by their own projection, after the link
        self.projected = tuple(c for c in eligible.constraints
                               if not isinstance(c, self.imposes))
        self._check_orders_points()

    def _check_link_keeps_monotonicity(self) -> None:
        """Refuse a ``Between`` bound that is a column the rule must decrease in.

        The link ``f = lo + (hi - lo) expit(g)`` keeps a monotone ``g`` monotone when the bounds
        move with the order (along ordered points, ``lo`` and ``hi`` do not fall). A bound that
        is a ``Decreasing`` column rises where ``f`` must fall: ``Decreasing("x")`` with
        ``Between(0, "x")`` on ``x`` in (1, 2) drew truths that increased in x in 20 of 20
        draws, while ``violations`` (counted on ``g``) said 0.
        """
        b = self.eligible.between
        if b is None:
            return
        sign = dict(zip(self.columns, self.eligible.sign.tolist(), strict=True))
        against = [bound for bound in (b.lower, b.upper)
                   if isinstance(bound, str) and sign.get(bound) == -1]
        if against:
            raise ConfigurationError(
                f"{type(self).__name__} cannot impose {b!r} with Decreasing({against[0]!r}): its "
                f"logistic link lo + (hi - lo) * expit(g) keeps the draws monotone only when "
                f"the bounds do not fall along the order, but the bound {against[0]!r} rises "
                f"where the rule must fall, so the draws would increase in {against[0]!r}; "
                "use numeric bounds or bounds in other columns")

    def _check_orders_points(self) -> None:
        """Refuse monotonicity that orders no two distinct points of the domain.

        Points are ordered only when they agree in every unconstrained column (SPEC §6), so
        ``Increasing("x1")`` on a continuous ``(x1, x2)`` domain orders no pair and would impose
        nothing, silently. Checked on up to :data:`ORDER_PROBE` evaluation points drawn with a
        fixed seed (the study's random streams are untouched).
        """
        sign = self.eligible.sign
        if not sign.any():
            return
        X, _ = self.eligible.domain.evaluation_points(ORDER_PROBE, np.random.default_rng(0))
        X = np.unique(np.asarray(X, dtype=float)[:ORDER_PROBE], axis=0)
        if len(ordered_pairs(X, sign)[0]) == 0:
            free = [c for c, k in zip(self.columns, sign, strict=True) if k == 0]
            monotone = [c for c, k in zip(self.columns, sign, strict=True) if k != 0]
            raise ConstraintError(
                f"the monotonicity in {monotone} orders no two of {len(X)} distinct points of the "
                f"domain: points are ordered only when they agree in the unconstrained column(s) "
                f"{free}, and no two do, so the constraint would impose nothing; constrain "
                f"{free} too (Increasing/Decreasing), or use a FiniteSet whose points share "
                f"values of {free}")

    def link(self, g: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Map latent values onto the ``Between`` range (identity without one).

        ``f = lo + (hi - lo) / (1 + exp(-g))``, with the bounds of each point (step 4 of the
        construction).

        Parameters
        ----------
        g : ndarray
            Latent values, one per row of ``X``.
        X : ndarray
            Their locations (bounds may be covariates).

        Returns
        -------
        ndarray
            Values inside the bounds.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> gp = rx.MonotoneGP(F, n_eval=5)
        >>> gp.link(np.array([0.0, np.log(3)]), np.array([[0.2], [0.7]]))
        array([0.5 , 0.75])
        """
        b = self.eligible.between
        if b is None:
            return np.asarray(g, dtype=float)
        lo, hi = b.bounds(X, self.columns)
        crossed = np.flatnonzero(lo > hi)
        if crossed.size:  # the truths would lie outside the bounds they were drawn for
            raise ConstraintError(
                f"{b!r}: the lower bound exceeds the upper bound at {crossed.size} of "
                f"{len(lo)} points of the domain, where no rule is eligible; restrict the "
                f"domain (e.g. Box(..., where=['{b.lower} <= {b.upper}']))")
        return lo + (hi - lo) * expit(g)

    def impose(self, f: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Apply the projections of the constraints imposed that way, and check them.

        Constraints other than ``Between``, ``Increasing`` and ``Decreasing`` are imposed by
        their own ``project`` after the link (step 5 of the construction).

        Parameters
        ----------
        f : ndarray
            Values of the truth after the link, one per row of ``X``.
        X : ndarray
            Their locations.

        Returns
        -------
        ndarray
            The values after every projection.

        Raises
        ------
        ConstraintError
            If a projection returns values its own ``check`` refuses, or of the wrong shape.

        Examples
        --------
        A floor at 0.5, imposed by its projection:

        >>> import numpy as np, restrictiveness as rx
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Floor(rx.Constraint):
        ...     level: float
        ...     def check(self, pred, X, columns):
        ...         return pred >= self.level
        ...     def project(self, values, X, columns):
        ...         return np.maximum(values, self.level)
        ...     def describe(self):
        ...         return f"f >= {self.level}"
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), Floor(0.5))
        >>> rx.MonotoneGP(F).impose(np.array([0.2, 0.7]), np.array([[0.1], [0.9]]))
        array([0.5, 0.7])
        """
        if not self.projected:
            return f
        # a projection must keep what the construction imposed: one that lowered values by x
        # made the truths decrease where Increasing holds, or moved them out of Between,
        # silently (the eligible set was then contradictory, or the projection wrong)
        sign, between = self.eligible.sign, self.eligible.between
        pairs = ordered_pairs(X, sign) if sign.any() else None
        before = 0 if pairs is None else count_violations(f, pairs)
        for c in self.projected:
            f = np.asarray(c.project(f, X, self.columns), dtype=float)
            if f.shape != (len(X),) or not np.all(c.check(f, X, self.columns)):
                raise ConstraintError(f"{c!r}.project returned values that its check refuses "
                                      "(or of the wrong shape); fix the projection")
            if not np.isfinite(f).all():
                broken = "returned values that are not finite"
            elif between is not None and not between.check(f, X, self.columns).all():
                broken = f"moved values outside {between!r}"
            elif pairs is not None and count_violations(f, pairs) > before:
                broken = "broke the monotonicity"
            else:
                continue
            raise ConstraintError(
                f"{c!r}.project {broken} (drawing a truth on the eligible set with constraints "
                f"{list(self.eligible.constraints)}): they cannot all hold this way; fix the "
                "projection (or the constraints)")
        return f

    def project(self, g: np.ndarray, X: np.ndarray, rng: np.random.Generator
                ) -> tuple[np.ndarray, int]:
        """Blend the increasing and decreasing projections of ``g``; count remaining violations.

        ``g̃ = (1 − w) g₊ − w g₋`` with ``w = e₊ / (e₊ + e₋)`` and ``e± = ‖g± − g‖²``
        (step 3 of the construction); ``g`` is returned unchanged when no column is monotone
        (repeated locations still get one value, the mean of their latent draws).

        Parameters
        ----------
        g : ndarray
            Latent values, one per row of ``X``.
        X : ndarray
            Their locations.
        rng : numpy.random.Generator
            Visiting order of the sweeps when ``order="random"``.

        Returns
        -------
        g_tilde : ndarray
            The blended, monotone values.
        violations : int
            Ordered pairs of points still violating monotonicity (beyond the tolerance).

        Examples
        --------
        On three ordered points, ``g₊ = (0, 1.5, 1.5)``, ``g₋ = (1, 1, 1)``,
        ``e₊ = 0.5``, ``e₋ = 2``, so ``w = 0.2`` and ``g̃ = 0.8 g₊ − 0.2 g₋``:

        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"))
        >>> X = np.array([[0.0], [0.5], [1.0]])
        >>> rx.MonotoneGP(F).project(np.array([0.0, 2.0, 1.0]), X, np.random.default_rng(0))
        (array([-0.2,  1. ,  1. ]), 0)
        """
        # Repeated locations (a FiniteSet's training draws are its support points) would be
        # ordered both ways: both projections tie them alike, e₊ = e₋ and w = ½, so the blend
        # (1 − w) g₊ − w g₋ cancels them to 0 (truths ≈ constant, measured sd 5e-7). One value
        # per location (the mean of its latent draws: they differ by the jitter alone), projected
        # in first-occurrence order, so that without repeats nothing changes. Without
        # monotonicity too: the truth is a function (training labels at a support point differed
        # from its evaluation value by the jitter, up to 1% of the truths' sd).
        X_merged, g_merged, at = merge_repeats(X, g)
        if len(X_merged) < len(X):
            g_tilde, violations = self.project(g_merged, X_merged, rng)
            return g_tilde[at], violations
        if not self.eligible.sign.any():
            return g, 0
        pairs = ordered_pairs(X, self.eligible.sign)
        g_up, _ = monotone_project(g, pairs, "increasing", order=self.order, rng=rng,
                                   tol=self.tol, max_sweeps=self.max_sweeps)
        g_down, _ = monotone_project(g, pairs, "decreasing", order=self.order, rng=rng,
                                     tol=self.tol, max_sweeps=self.max_sweeps)
        e_up, e_down = np.sum((g_up - g) ** 2), np.sum((g_down - g) ** 2)
        w = e_up / (e_up + e_down) if e_up + e_down > 0 else 0.0
        g_tilde = (1.0 - w) * g_up - w * g_down
        return g_tilde, count_violations(g_tilde, pairs)

    def memory_bytes(self, ns: Sequence[int], draws: int = 1) -> int:
        """Bytes of the covariance and its Cholesky factor, which :meth:`draw` holds at once.

        A lower bound on one draw's memory: two float64 matrices over the evaluation and the
        largest training set.

        Parameters
        ----------
        ns : sequence of int
            Sample sizes.
        draws : int
            Training draws per sample size (further draws are labelled by interpolation and
            need no larger matrices).

        Returns
        -------
        int
            ``2 * 8 * (n_eval + max(ns))^2``.

        Examples
        --------
        >>> import restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"))
        >>> rx.MonotoneGP(F, n_eval=1000).memory_bytes([100, 1000])
        64000000
        """
        points = self.n_eval + max(int(n) for n in ns)
        return 2 * 8 * points ** 2

    def draw(self, ns: Sequence[int], rng: np.random.Generator, draws: int = 1
             ) -> MonotoneGPTruth:
        """Draw one pseudo-truth, constructed separately on each sample size's points.

        Parameters
        ----------
        ns : sequence of int
            Positive sample sizes.
        rng : numpy.random.Generator
            The replication's random stream (split into evaluation, latent, sweep-order and
            training streams; the sweep-order stream of each ``n`` is keyed by ``n`` itself, so
            the truth at ``n`` does not depend on which other sizes are drawn beside it).
        draws : int
            Independent training sets; those after the first are labelled by GP interpolation
            of the latent field.

        Returns
        -------
        MonotoneGPTruth
            The truth on every ``n``'s training points and on the common evaluation points.

        Raises
        ------
        ConfigurationError
            If a size is not positive, ``draws < 1``, or ``draws > 1`` with constraints
            imposed by projection (interpolation cannot re-impose them).

        Examples
        --------
        The same stream gives the same truth; the truth is nondecreasing and inside the range:

        >>> import numpy as np, restrictiveness as rx
        >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        >>> gp = rx.MonotoneGP(F, n_eval=5)
        >>> truth = gp.draw([10], np.random.default_rng(3))
        >>> again = gp.draw([10], np.random.default_rng(3))
        >>> np.array_equal(truth.eval_y(10), again.eval_y(10))
        True
        >>> y = truth.eval_y(10)[np.argsort(truth.eval_X[:, 0])]
        >>> bool((np.diff(y) >= 0).all() and (0 < y).all() and (y < 1).all())
        True
        """
        if not all(is_whole(n) for n in ns):  # 2.5 was truncated to 2
            raise ConfigurationError(f"sample sizes n must be positive integers, got {ns!r}")
        ns = sorted({int(n) for n in ns})
        if not ns or ns[0] < 1:
            raise ConfigurationError("sample sizes n must be positive integers")
        # 1.5 was read as one draw, True as one (a Study checks its draws; direct calls did not)
        draws = whole_number(draws, "draws", minimum=1)
        if draws > 1 and self.projected:
            raise ConfigurationError(
                f"draws > 1 labels new training points by interpolating the latent field, which "
                f"cannot re-impose {list(self.projected)}; use draws=1 with these constraints")
        eval_rng, latent_rng, order_rng, *train_rngs = rng.spawn(3 + draws)
        # one visiting-order stream per n, keyed by n's value and not its position in ns, so
        # the truth at n does not depend on the other n (a spawn by position shifted every
        # stream when a smaller n was added)
        order_seq = order_rng.bit_generator.seed_seq
        assert isinstance(order_seq, np.random.SeedSequence)  # Generator.spawn makes one
        order_rngs = {n: np.random.default_rng(np.random.SeedSequence(
            order_seq.entropy, spawn_key=(*order_seq.spawn_key, n))) for n in ns}
        domain = self.eligible.domain
        eval_X, eval_w = domain.evaluation_points(self.n_eval, eval_rng)
        n_max = ns[-1]
        train = [domain.sample(n_max, r) for r in train_rngs]
        # Evaluation points first: every n's union is a leading block of one Cholesky factor.
        U = np.concatenate([eval_X, train[0]])
        K = self.kernel(U)
        K[np.diag_indices_from(K)] += self.jitter
        try:
            L = scipy.linalg.cholesky(K, lower=True)
        except np.linalg.LinAlgError:  # was numpy's bare "leading minor ... not positive definite"
            repeats = len(np.unique(U, axis=0)) < len(U)
            raise ConfigurationError(
                f"{type(self).__name__}: the covariance of the {len(U)} evaluation and training "
                f"points is not numerically positive definite with jitter={self.jitter!r} "
                f"({self.kernel!r}"
                + ("; the points repeat, as a FiniteSet's draws do" if repeats else "")
                + f"); give a jitter of about 1e-5 times the variance "
                f"({1e-5 * self.kernel.variance:.3g})") from None
        latent = L @ latent_rng.standard_normal(len(U))
        E = len(eval_X)
        truth = MonotoneGPTruth(self, train, eval_X, eval_w)
        for n in ns:
            X_union = np.concatenate([train[0][:n], eval_X])
            g = np.concatenate([latent[E:E + n], latent[:E]])
            g_tilde, violations = self.project(g, X_union, order_rngs[n])
            f = self.impose(self.link(g_tilde, X_union), X_union)
            truth._set(n, X_union, g_tilde, f, violations)
        return truth

    def __repr__(self) -> str:
        # the class's own name: a subclass drawing otherwise must not pass for MonotoneGP in
        # a checkpoint's configuration (nor in messages)
        return (f"{type(self).__name__}({self.eligible!r}, kernel={self.kernel!r}, "
                f"jitter={self.jitter!r}, "
                f"n_eval={self.n_eval}, response={self.response!r}, order={self.order!r}, "
                f"tol={self.tol!r}, max_sweeps={self.max_sweeps})")


def _interpolation_weights(K: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` with ``K a = b`` for the noise-free interpolation of a truth.

    By Cholesky; where ``K`` is numerically singular (a squared-exponential kernel on a few
    hundred points of a line: every K > 1 study stopped with LinAlgError), the minimum-norm
    solution over the eigenvalues of ``K`` above its rounding level.
    """
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(K, lower=True), b)
    except np.linalg.LinAlgError:
        w, V = scipy.linalg.eigh(K)
        keep = w > len(K) * np.finfo(float).eps * w[-1]
        return V[:, keep] @ ((V[:, keep].T @ b) / w[keep])


def _finite(value: object) -> bool:
    """Whether ``value`` is a finite real number (not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) \
        and math.isfinite(value)

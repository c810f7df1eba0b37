"""Multi-start bounded least squares for the logit family, under an evaluation budget (SPEC §7).

A model's fit on one sample is a :class:`Problem` — the compiled residual-and-Jacobian callback,
its data, the box and which parameters move — solved from several starts; the lowest objective
wins. :func:`solve` runs the starts under one of three budgets, counted in residual evaluations
(each also gives the Jacobian; scipy counts the same way):

* ``"fit"`` — at most ``max_nfev`` evaluations for the model's starts together, spent in order:
  each start may use what the earlier ones left, and starts left without any are not run;
* ``"start"`` — at most ``max_nfev`` for each start;
* ``"converge"`` — every start runs until a convergence test holds or it stalls away from a
  stationary point (status 7, not convergence; a safety cap of :data:`CONVERGE_CAP`
  evaluations per start is reported as the budget status if ever reached).

Methods: ``"lm"``, the compiled bounded Levenberg–Marquardt of
:mod:`restrictiveness.shared._lsq_nb` (no Python per iteration; tolerances :data:`GTOL`,
:data:`XTOL`, :data:`FTOL`), or scipy's ``least_squares`` with ``"trf"`` or ``"dogbox"`` and its
default tolerances (references for benchmarks and tests). Either way a start within rounding of
a bound is put on it (:data:`~restrictiveness.shared._lsq_nb.BOUND_RTOL`): scipy's dogbox
otherwise treats such a parameter as free, truncates its first step to the rounding margin and
stops after two evaluations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.optimize

from ..shared._lsq_nb import CONVERGED, STATUS, _snap
from ..shared.blas import one_thread
from ..shared.exceptions import ConfigurationError

__all__ = ["BUDGETS", "METHODS", "MAX_NFEV", "CONVERGE_CAP", "GTOL", "XTOL", "FTOL", "NOT_RUN",
           "MAX_FOLLOWUP_ROUNDS", "FOLLOWUP_GAIN",
           "Problem", "Solution", "check_options", "solve"]

BUDGETS = ("fit", "start", "converge")
METHODS = ("lm", "trf", "dogbox")
#: SPEC §7's budget: 400 residual evaluations.
MAX_NFEV = 400
#: Evaluations a start may use under ``budget="converge"`` before it is reported unconverged.
CONVERGE_CAP = 100_000
#: Convergence tolerances of the compiled solver: gradient cosine, relative step, relative
#: objective reduction (:mod:`restrictiveness.shared._lsq_nb`).
GTOL, XTOL, FTOL = 1e-10, 1e-10, 1e-12
#: Status of a start the fit's budget left no evaluation for.
NOT_RUN = -1
#: Rounds of follow-up starts (each after the first follows a relative gain of the best
#: objective above :data:`FOLLOWUP_GAIN`).
MAX_FOLLOWUP_ROUNDS, FOLLOWUP_GAIN = 4, 1e-9


def check_options(budget: str, max_nfev: int | None, method: str) -> int | None:
    """Validate a model's optimiser options; returns the evaluation budget (None: converge).

    Examples
    --------
    >>> check_options("fit", None, "lm"), check_options("converge", None, "lm")
    (400, None)
    """
    if budget not in BUDGETS:
        raise ConfigurationError(f"budget must be one of {BUDGETS} (400 evaluations for the "
                                 f"whole fit, for each start, or none), got {budget!r}")
    if method not in METHODS:
        raise ConfigurationError(f"method must be one of {METHODS} ('lm': the compiled bounded "
                                 f"Levenberg–Marquardt; 'trf'/'dogbox': scipy), got {method!r}")
    if budget == "converge":
        if max_nfev is not None:
            raise ConfigurationError("max_nfev has no effect with budget='converge' (the fit "
                                     "runs until it converges): leave it unset, or choose "
                                     "budget='fit' or 'start'")
        return None
    if max_nfev is None:
        return MAX_NFEV
    if int(max_nfev) != max_nfev or int(max_nfev) < 1:
        raise ConfigurationError(f"max_nfev must be a positive integer, got {max_nfev!r}")
    return int(max_nfev)


def _identity(x):
    return np.array(x, dtype=float)


@dataclass
class Problem:
    """One model's least-squares problem on one sample.

    ``resjac(θ, data) -> (r, J)`` is the compiled callback in the model's parameters θ, which
    ``lo``/``hi`` bound; ``free`` (int64, nonzero = moves) says what may move. The compiled
    ``solver`` may work in other coordinates ``x = encode(θ)``, ``θ = decode(x)``, with bounds
    ``x_lo``/``x_hi`` (default: θ itself); scipy's methods work in θ. An entry whose ``free``
    is :data:`~restrictiveness.shared._lsq_nb.ROOT` is, in those coordinates, the root of a
    nonnegative parameter (``θ = x²``), which the compiled solver holds near 0 as on a bound.
    """

    resjac: Callable
    solver: Callable
    data: tuple
    lo: np.ndarray
    hi: np.ndarray
    free: np.ndarray
    encode: Callable = _identity
    decode: Callable = _identity
    x_lo: np.ndarray | None = None
    x_hi: np.ndarray | None = None


@dataclass
class Solution:
    """The best start's estimate and how every start ended.

    ``starts`` holds one ``[name, cost, nfev, status]`` per start (status codes of
    :data:`~restrictiveness.shared._lsq_nb.STATUS`; :data:`NOT_RUN` for a start the fit's budget
    did not reach).
    """

    x: np.ndarray
    cost: float
    status: int
    start: str
    nfev: int
    starts: list = field(default_factory=list)

    @property
    def converged(self) -> bool:
        """Every start ran and stopped on a convergence test, not on the budget (nor away from
        a stationary point)."""
        return all(st in CONVERGED for *_, st in self.starts)

    def info(self) -> dict:
        """JSON-ready summary for ``Fitted.info``."""
        return {"cost": float(self.cost), "nfev": int(self.nfev), "start": self.start,
                "status": int(self.status), "converged": self.converged,
                "starts": [[n, float(c), int(f), int(st)] for n, c, f, st in self.starts]}


class _ScipyObjective:
    """scipy's ``fun``/``jac`` pair over the free parameters of a :class:`Problem`.

    The callback gives the Jacobian with the residuals; it is kept for the ``jac`` call scipy
    makes at the same point after an accepted step (and recomputed anywhere else).
    """

    def __init__(self, problem: Problem, x_full: np.ndarray):
        self.problem = problem
        self.full = np.array(x_full, dtype=float)
        self.mask = problem.free != 0
        self.nfev = 0
        self._x = None
        self._jac = None

    def _eval(self, z):
        x = self.full.copy()
        x[self.mask] = z
        r, J = self.problem.resjac(x, self.problem.data)
        return r, np.ascontiguousarray(J[:, self.mask])

    def fun(self, z):
        self.nfev += 1
        r, J = self._eval(z)
        self._x, self._jac = np.array(z, dtype=float), J
        return r

    def jac(self, z):
        if self._x is not None and np.array_equal(z, self._x):
            return self._jac
        return self._eval(z)[1]


def _run_start(problem: Problem, x0: np.ndarray, nfev: int, method: str):
    """One start: ``(x, cost, nfev, status)``."""
    if method == "lm":
        lo = problem.lo if problem.x_lo is None else problem.x_lo
        hi = problem.hi if problem.x_hi is None else problem.x_hi
        x, cost, used, status, _ = problem.solver(problem.encode(x0), lo, hi, problem.free,
                                                  problem.data, nfev, GTOL, XTOL, FTOL)
        return problem.decode(x), float(cost), int(used), int(status)
    x0 = x0.copy()
    _snap(x0, problem.lo, problem.hi, problem.free)
    obj = _ScipyObjective(problem, x0)
    m = obj.mask
    r = scipy.optimize.least_squares(obj.fun, x0[m], jac=obj.jac,
                                     bounds=(problem.lo[m], problem.hi[m]), method=method,
                                     max_nfev=nfev)
    x = x0.copy()
    x[m] = r.x
    # scipy: 0 budget, 1 gtol, 2 ftol, 3 xtol, 4 ftol and xtol (-1: failure, kept as budget)
    status = {1: 1, 2: 2, 3: 3, 4: 2}.get(int(r.status), 0)
    return x, float(r.cost), int(r.nfev), status


def solve(problem: Problem, starts: Sequence[tuple[str, np.ndarray]], budget: str,
          max_nfev: int | None, method: str = "lm",
          followups: Callable[[np.ndarray], list] | None = None,
          enough: Callable[[float, int], bool] | None = None) -> Solution:
    """Least squares from every start under the budget; the lowest finite objective wins.

    ``enough(cost, status)``, if given, is asked about the best start so far before each further
    start: when it holds, the remaining starts are skipped (and not recorded in
    ``Solution.starts``); follow-ups still run.

    ``followups(x)``, if given, makes further starts from the best estimate ``x`` (a list of
    ``(name, x0)``; empty when it has none): they run after the starts, under the same budget,
    and whenever one of them lowers the objective the new best gets its own follow-ups (at most
    :data:`MAX_FOLLOWUP_ROUNDS` rounds, a gain above :data:`FOLLOWUP_GAIN` relative).

    Raises ``RuntimeError`` when no start reaches a finite objective.
    """
    # max_nfev is None only with budget="converge" (check_options), where no cap is per fit
    per_start = CONVERGE_CAP if max_nfev is None else max_nfev
    left = per_start
    best, records = None, []

    def run(todo) -> bool:
        nonlocal left, best
        improved = False
        for name, x0 in todo:
            if enough is not None and best is not None and enough(best[1], best[2]):
                break
            x0 = np.asarray(x0, dtype=float)
            cap = {"converge": CONVERGE_CAP, "start": per_start}.get(budget, left)
            if cap <= 0:
                records.append((name, np.inf, 0, NOT_RUN))
                continue
            x, cost, used, status = _run_start(problem, x0, cap, method)
            if budget == "fit":
                left -= used
            records.append((name, cost, used, status))
            if np.isfinite(cost) and (best is None or cost < best[1]):
                # another round only for a real gain, not for a re-converged last digit
                improved = improved or (best is not None and cost < best[1] * (1 - FOLLOWUP_GAIN))
                best = (x, cost, status, name)
        return improved

    # one BLAS thread: the problems are small, studies parallelise over processes, and a
    # threaded BLAS on small least-squares steps is many times slower on a busy machine
    with one_thread():
        run(starts)
        enough = None          # it chooses among the starts, not the follow-ups
        for _ in range(MAX_FOLLOWUP_ROUNDS):
            if followups is None or best is None or not run(followups(best[0])):
                break
    if best is None:
        raise RuntimeError("every least-squares start failed (non-finite objective)")
    total = sum(rec[2] for rec in records)
    return Solution(best[0], best[1], best[2], best[3], total, records)


assert set(STATUS) == CONVERGED | {0, 7}   # the codes Solution.converged relies on

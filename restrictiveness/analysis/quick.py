"""One-call quick checks: how restrictive is this formula or procedure on this eligible set?"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..eligible.constraints import Between, Decreasing, Increasing
from ..eligible.domains import Box
from ..eligible.monotone_gp import EligibleSet, MonotoneGP
from ..eligible.truth import EvaluationDistribution
from ..engine.discrepancies import MSE, Discrepancy
from ..engine.protocol import Procedure
from ..engine.results import Results
from ..engine.study import Study
from ..procedures.generic import OLS, Constant, GPRegression
from ..shared.exceptions import ConfigurationError

__all__ = ["quick_check", "demo_study"]


def quick_check(procedures: str | Procedure | Sequence[str | Procedure]
                | Mapping[str, str | Procedure],
                evaluation: EvaluationDistribution, n: Sequence[int] = (50, 100),
                replications: int = 100, baseline: Procedure | None = None,
                discrepancies: Sequence[Discrepancy] = (MSE(),), seed: int = 0,
                n_jobs: int | None = 1, progress: bool | None = None) -> Results:
    """Restrictiveness of formulas or procedures in one call.

    Parameters
    ----------
    procedures : str, Procedure, or a list or mapping of label to either
        A formula string means OLS on that formula, labelled by the formula; a list labels
        each procedure by its ``label``.
    evaluation : EvaluationDistribution
        E.g. a :class:`~restrictiveness.eligible.monotone_gp.MonotoneGP` on an eligible set.
    n : sequence of int
        Training sample sizes, as in :class:`~restrictiveness.engine.study.Study`.
    replications : int
        Number of pseudo-truths.
    baseline : Procedure, optional
        Default: least squares over constants.
    discrepancies : sequence of Discrepancy
        Default: mean squared error.
    seed : int
        Root seed of the study.
    n_jobs : int or None
        Worker processes, as in :meth:`Study.run <restrictiveness.engine.study.Study.run>`.
    progress : bool, optional
        Show a progress bar (default: when standard error is a terminal).

    Returns
    -------
    Results
        With ``summary()``, ``contrast()`` and the Dataset.

    Examples
    --------
    >>> import restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1"),
    ...                    rx.Decreasing("x2"), rx.Between(0, 1))
    >>> res = rx.quick_check("y ~ x1 + x2", rx.MonotoneGP(F, n_eval=50), n=[20],
    ...                      replications=4, progress=False)
    >>> res.procedures
    ['y ~ x1 + x2']
    >>> res.restrictiveness.sel(discrepancy="mse", n=20).round(3).values
    array([0.18])
    """
    if isinstance(procedures, Mapping):
        named = dict(procedures)
    else:
        listed: Sequence = [procedures] \
            if isinstance(procedures, str) or hasattr(procedures, "fit") else procedures
        if not isinstance(listed, Sequence):
            raise ConfigurationError(f"procedures must be a formula, a Procedure, or a list or "
                                     f"mapping of them, got {procedures!r}")
        # a list was taken for one procedure labelled 'procedure' (with no fit method)
        labels = [p if isinstance(p, str) else getattr(p, "label", "procedure") for p in listed]
        if len(set(labels)) != len(labels):
            raise ConfigurationError(f"procedures share labels {labels}; pass a dict "
                                     "{label: formula or procedure} to name them")
        named = dict(zip(labels, listed, strict=True))
    procs = {label: OLS(p) if isinstance(p, str) else p for label, p in named.items()}
    study = Study(evaluation, procs, baseline or Constant(), discrepancies, n=n,
                  replications=replications, seed=seed)
    return study.run(n_jobs=n_jobs, progress=progress)


def demo_study(n: Sequence[int] = (25, 50, 100), replications: int = 50, seed: int = 0) -> Study:
    """The ``demo`` command's study: rules on [0, 1]² in [0, 1], increasing in x1 and decreasing
    in x2, a linear model and GP regression against a constant baseline."""
    eligible = EligibleSet(Box(x1=(0, 1), x2=(0, 1)), Increasing("x1"), Decreasing("x2"),
                           Between(0, 1))
    prior = MonotoneGP(eligible, n_eval=500)
    procs = {"linear": OLS("y ~ x1 + x2"),
             "GP regression": GPRegression("y ~ x1 + x2", constraints=[Between(0, 1)])}
    return Study(prior, procs, baseline=Constant(), n=n, replications=replications, seed=seed)

"""Application 1 of the paper: certainty equivalents of binary lotteries (SPEC §6).

Ready-made pieces: the lottery covariates (:mod:`.lotteries`), the eligible set and monotone-GP
prior (:mod:`.prior`), the RDU/CPT family and expected value (:mod:`.models`, with estimation on
data in :mod:`.estimation`), CPT's parameter contributions, and :func:`study`, the configuration
of the paper's Table 1. An application: may import every generic layer and the datasets, never
the other application.

Examples
--------
>>> import restrictiveness as rx
>>> cpt = rx.lottery.CPT(free=("alpha", "gamma"))
>>> study = rx.lottery.study(procedures={cpt.label: cpt}, n=[50], replications=4, n_eval=200)
>>> res = study.run(progress=False)
>>> res.procedures
['CPT(alpha,gamma)']
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ..eligible.constraints import Between
from ..eligible.kernels import Matern32
from ..engine.protocol import Procedure
from ..engine.sensitivity_results import Contributions
from ..engine.study import Study
from ..procedures.generic import GPRegression
from ..shared.checks import baseline_label, labelled
from ..shared.exceptions import DataError
from .models import (
    CPT,
    RDU,
    DisappointmentAversion,
    ExpectedUtility,
    ExpectedValue,
    LinearWeighting,
    OddsWeighting,
    PowerUtility,
    PrelecWeighting,
    ShiftedPowerUtility,
)
from .prior import COLUMNS, RESPONSE, lottery_domain, lottery_eligible_set, lottery_prior

__all__ = [
    "CPT", "RDU", "DisappointmentAversion", "ExpectedUtility", "ExpectedValue",
    "LinearWeighting", "OddsWeighting", "PowerUtility", "PrelecWeighting", "ShiftedPowerUtility",
    "COLUMNS", "RESPONSE", "lottery_domain", "lottery_eligible_set", "lottery_prior",
    "CPT_CLASSES", "gp_regression", "table1_procedures", "study", "completeness",
    "CPT_FULL", "CPT_SUBMODELS", "CONTRIBUTIONS", "CPT_CONTRIBUTIONS",
]

#: The seven CPT classes of Table 1, in the paper's order (free parameters; others fixed at 1).
CPT_CLASSES: tuple[tuple[str, ...], ...] = (
    ("alpha", "gamma", "delta"), ("gamma", "delta"), ("alpha", "delta"), ("delta",),
    ("alpha", "gamma"), ("gamma",), ("alpha",),
)

#: Label of full CPT.
CPT_FULL = "CPT(alpha,gamma,delta)"
#: The CPT submodel with parameter q fixed at one, by q (C_q = r_{−q} − r_full).
CPT_SUBMODELS = {"alpha": "CPT(gamma,delta)", "gamma": "CPT(alpha,delta)",
                 "delta": "CPT(alpha,gamma)"}
#: The contributions and their differences reported in the paper's Table A.8, in its order.
CONTRIBUTIONS = ("C_alpha", "C_gamma", "C_delta", "C_delta-C_gamma", "C_delta-C_alpha",
                 "C_gamma-C_alpha")
#: CPT's parameter contributions (SPEC §4): ``"C_alpha"`` etc. (or ``"C_α"``) in comparisons.
CPT_CONTRIBUTIONS = Contributions(CPT_FULL, CPT_SUBMODELS, CONTRIBUTIONS,
                                  symbols={"α": "alpha", "γ": "gamma", "δ": "delta"})


def gp_regression() -> GPRegression:
    """The paper's GP regression: noise-free Matérn-3/2 (variance 10, length scale 1), zero mean,
    predictions clipped to the prize interval.

    Returns
    -------
    GPRegression
        On ``ce ~ z_hi + z_lo + p``, labelled ``"GP regression"``.

    Examples
    --------
    >>> gp = gp_regression()
    >>> gp.label, gp.kernel
    ('GP regression', Matern32(variance=10.0, lengthscale=1.0))
    >>> gp.constraints
    (Between(lower='z_lo', upper='z_hi'),)
    """
    return GPRegression("ce ~ z_hi + z_lo + p", kernel=Matern32(variance=10.0, lengthscale=1.0),
                        constraints=[Between("z_lo", "z_hi")])


def table1_procedures() -> dict[str, Procedure]:
    """The procedures of Table 1 that need no language model or pretrained weights.

    Returns
    -------
    dict of str to Procedure
        The seven CPT classes of :data:`CPT_CLASSES`, labelled e.g. ``"CPT(alpha,delta)"``,
        and ``"GP regression"`` (:func:`gp_regression`).

    Examples
    --------
    >>> procs = table1_procedures()
    >>> len(procs), list(procs)[0], list(procs)[-1]
    (8, 'CPT(alpha,gamma,delta)', 'GP regression')
    """
    procs: dict[str, Procedure] = {}
    for free in CPT_CLASSES:
        model = CPT(free=free)
        procs[model.label] = model
    procs["GP regression"] = gp_regression()
    return procs


def study(procedures: Mapping[str, Procedure] | None = None, n: Sequence[int] = (50, 100, 200),
          replications: int = 100, seed: int = 0, draws: int = 1, n_eval: int = 1000,
          baseline: Procedure | None = None) -> Study:
    """A lottery restrictiveness study (SPEC §6): the CE prior, MSE over 1,000 evaluation
    lotteries, expected value as the baseline.

    When the procedures include full CPT and its three submodels, the results define CPT's
    parameter contributions (:data:`CPT_CONTRIBUTIONS`): ``results.contributions()`` and
    ``"C_delta-C_gamma"`` in sensitivity comparisons.

    Parameters
    ----------
    procedures : mapping of label to Procedure, optional
        Default: :func:`table1_procedures`.
    n, replications, seed, draws
        As in :class:`~restrictiveness.engine.study.Study` (the paper: n = 50, 100, 200; M = 100).
    n_eval : int
        Evaluation lotteries (the paper: 1,000).
    baseline : Procedure, optional
        Default: expected value (labelled ``EV``). Another baseline is named by its label
        (``"baseline"`` when it has none or a procedure has it).

    Returns
    -------
    Study
        Ready to ``run()``; nothing is drawn or fitted until then.

    Examples
    --------
    >>> st = study(n=(50,), replications=2, n_eval=100)
    >>> st.n, st.baseline_label, len(st.procedures), st.contributions is CPT_CONTRIBUTIONS
    ([50], 'EV', 8, True)
    """
    procs = labelled(procedures, table1_procedures)
    has_cpt = all(p in procs for p in (CPT_FULL, *CPT_SUBMODELS.values()))
    base = baseline if baseline is not None else ExpectedValue()
    return Study(lottery_prior(n_eval=n_eval), procs, baseline=base, n=n,
                 replications=replications, seed=seed, draws=draws,
                 baseline_label=baseline_label(base, procs),
                 contributions=CPT_CONTRIBUTIONS if has_cpt else None)


def completeness(data, procedures: Mapping[str, Procedure] | None = None, folds: int = 10,
                 seed: int = 0, benchmark: Procedure | None = None,
                 baseline: Procedure | None = None):
    """Completeness on the Bruhin et al. (2010) lottery responses (SPEC §5, §6 "Real data").

    Ten folds over responses common to all procedures; each procedure is fitted to the 25
    lottery means of the training responses and predicts held-out individual responses;
    squared error; SEs clustered by participant.

    Parameters
    ----------
    data : DataFrame or path
        :func:`restrictiveness.datasets.load_bruhin` output, or the path of ``ch03_data.csv``.
    procedures : mapping, optional
        Default: :func:`table1_procedures` (seven CPT classes and GP regression).
    folds, seed : int
        Cross-validation design.
    benchmark : Procedure, optional
        The flexible benchmark (default: :func:`gp_regression`, the paper's configuration,
        whatever procedure ``procedures`` labels "GP regression"; the paper's TabPFN, or any
        scikit-learn-style regressor through :class:`~restrictiveness.SklearnRegressor`, can be
        passed). κ is relative to the benchmark: with GP regression the paper's κ are divided by
        GP regression's 1.002 against TabPFN.
    baseline : Procedure, optional
        Default: expected value.

    Returns
    -------
    CompletenessResults

    Examples
    --------
    Eight responses of two participants to four lotteries (the Bruhin data's columns); the
    baseline's κ is 0 and the benchmark's 1 by definition:

    >>> import pandas as pd
    >>> df = pd.DataFrame({"participant": [1, 1, 1, 1, 2, 2, 2, 2], "lottery": [1, 2, 3, 4] * 2,
    ...                    "z_hi": [0.4, 0.6, 0.8, 1.0] * 2, "z_lo": [0.0, 0.1, 0.0, 0.2] * 2,
    ...                    "p": [0.2, 0.4, 0.6, 0.8] * 2,
    ...                    "ce": [0.10, 0.30, 0.45, 0.70, 0.12, 0.28, 0.50, 0.66]})
    >>> res = completeness(df, {"CPT(alpha)": CPT(free=("alpha",))}, folds=2)
    >>> res.estimates()["kappa"].round(2).to_dict()
    {'CPT(alpha)': -0.08, 'EV': 0.0, 'GP regression': 1.0}
    """
    from ..analysis.completeness.designs import CellMeansKFold, TableSample
    from ..analysis.completeness.estimate import estimate_completeness
    from ..datasets.bruhin import load_bruhin

    if not hasattr(data, "columns") and not isinstance(data, str | os.PathLike):
        # an array reached load_bruhin, whose message printed the whole array as a "path"
        raise DataError(f"completeness takes the responses as a DataFrame "
                        f"(rx.datasets.load_bruhin's output) or the path of ch03_data.csv; got "
                        f"{type(data).__name__}")
    frame = data if hasattr(data, "columns") else load_bruhin(data)
    procs = labelled(procedures, table1_procedures)
    base = baseline if baseline is not None else ExpectedValue()
    # the default benchmark is the paper's GP regression; a procedure the caller labelled
    # "GP regression" stands in for it (fitted once) only when it is that model: another one
    # under the label became the benchmark silently, changing every κ
    bench: Procedure | str = benchmark if benchmark is not None else gp_regression()
    mine = procs.get("GP regression")
    if mine is not None and (bench is mine or (benchmark is None and repr(mine) == repr(bench))):
        bench = "GP regression"
    return estimate_completeness(
        frame, procs, baseline=base, benchmark=bench, design=CellMeansKFold(k=folds),
        to_sample=TableSample(COLUMNS, RESPONSE), seed=seed, constraints=[Between("z_lo", "z_hi")])

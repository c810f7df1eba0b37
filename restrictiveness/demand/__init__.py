"""Application 2 of the paper: differentiated-product demand (SPEC §7).

Ready-made pieces: the Nevo cereal calibration (:func:`restrictiveness.datasets.load_cereal`),
the market distribution (:mod:`.markets`), the random-utility prior (:mod:`.prior`), the share
and elasticity discrepancies (:mod:`.elasticities`), the logit family (:mod:`.models`,
:mod:`.estimation`), and :func:`study`, the configuration of the paper's Tables 3–4.

Markets are arrays ``(J = 24, 3)`` with columns ``("prices", "sugar", "mushy")`` in the data's
raw units; samples of n markets have ``X (n, 24, 3)`` and inside shares ``y (n, 24)``.

Examples
--------
>>> import restrictiveness as rx
>>> study = rx.demand.study(procedures={"MNL": rx.demand.MNL()}, n=[20], replications=2,
...                         prior=rx.demand.DemandPrior(n_types=32, n_eval=5, n_train=20))
>>> study.run(progress=False).discrepancies
['shares', 'own', 'cross']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..procedures import Procedure
from ..study import Study
from .elasticities import CrossElasticityMSE, OwnElasticityMSE, SharesMSE
from .markets import MarketDistribution
from .models import MNL, Logit, MixedLogit, NestedLogit
from .prior import DemandPrior

__all__ = ["CrossElasticityMSE", "OwnElasticityMSE", "SharesMSE", "MarketDistribution",
           "MNL", "Logit", "MixedLogit", "NestedLogit", "DemandPrior", "table3_procedures",
           "study", "completeness", "market_sample"]


def table3_procedures() -> dict[str, Procedure]:
    """The structural models of Tables 3–4: MNL, nested logit (nests by mushy), mixed logit."""
    return {"MNL": MNL(), "NL": NestedLogit(nest="mushy"), "MXL": MixedLogit()}


def study(procedures: Mapping[str, Procedure] | None = None, n: Sequence[int] = (50, 100, 200),
          replications: int = 200, seed: int = 0, draws: int = 1,
          prior: DemandPrior | None = None, baseline: Procedure | None = None) -> Study:
    """A demand restrictiveness study (SPEC §7): one demand system per replication, 200 nested
    training markets, 100 evaluation markets; share, own- and cross-price elasticity MSEs;
    the common-intercept logit as the baseline (labelled ``logit``).

    Parameters
    ----------
    procedures : mapping of label to Procedure, optional
        Default: :func:`table3_procedures`.
    n, replications, seed, draws
        As in :class:`~restrictiveness.study.Study` (the paper: n = 50, 100, 200; M = 200).
    prior : DemandPrior, optional
        Default: the calibrated prior of SPEC §7.
    baseline : Procedure, optional
        Default: :class:`Logit`.
    """
    prior = prior if prior is not None else DemandPrior(n_train=max(200, max(n)))
    return Study(prior, dict(procedures) if procedures is not None else table3_procedures(),
                 baseline=baseline if baseline is not None else Logit(),
                 discrepancies=(SharesMSE(), OwnElasticityMSE(), CrossElasticityMSE()), n=n,
                 replications=replications, seed=seed, draws=draws, baseline_label="logit")

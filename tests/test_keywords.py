"""Keyword arguments passed on (``**options``, ``**estimation``) are checked where they enter.

Before, an unknown key was a ``TypeError`` naming another function than the one called
(``RDU.__init__``, ``NLSEstimator.fit``, the private ``_DemandProcedure.__init__``), and
``OLS.fit(sample, cov_type=...)`` on a training sample ignored it without a word.
"""

import numpy as np
import pandas as pd
import pytest

import restrictiveness as rx
from restrictiveness.lottery.models import CPT, DisappointmentAversion, ExpectedUtility

DF = pd.DataFrame({"ce": [0.4, 0.2, 0.7, 0.3, 0.5], "z_hi": [1.0, 0.5, 0.9, 0.6, 0.8],
                   "z_lo": [0.0, 0.1, 0.2, 0.1, 0.0], "p": [0.5, 0.3, 0.8, 0.4, 0.6]})
LINEAR = "ce ~ z_lo + a * (z_hi - z_lo) * p"
ESTIMATION = r"\['cov_type', 'groups'\]"
RDU_OPTIONS = r"\['formula', 'n_starts', 'grid', 'label'\]"


@pytest.mark.parametrize(("call", "message"), [
    (lambda: CPT(bogus=1), r"CPT: unknown keyword argument\(s\) \['bogus'\]; accepted: "
     + RDU_OPTIONS),
    (lambda: DisappointmentAversion(bogus=1), r"DisappointmentAversion: unknown keyword "
     r"argument\(s\) \['bogus'\]; accepted: " + RDU_OPTIONS),
    (lambda: ExpectedUtility(n_start=8), r"ExpectedUtility: unknown keyword argument\(s\) "
     r"\['n_start'\]; accepted: \['bounds', 'formula', 'n_starts', 'grid', 'label'\]"),
    (lambda: CPT.from_formula("ce ~ z_hi + z_lo + p", DF, fre=("alpha",)),
     r"CPT: unknown keyword argument\(s\) \['fre'\]"),
    (lambda: CPT(free=("alpha",)).fit(DF, cov="HC1"),
     r"CPT.fit: unknown keyword argument\(s\) \['cov'\]; accepted: " + ESTIMATION),
    (lambda: rx.NLS(LINEAR, bounds={"a": (0, 2)}).fit(DF, cov="HC1"),
     r"NLS.fit: unknown keyword argument\(s\) \['cov'\]; accepted: " + ESTIMATION),
    (lambda: rx.NLS.from_formula(LINEAR, DF, bounds={"a": (0, 2)}, n_start=3),
     r"NLS.from_formula: unknown keyword argument\(s\) \['n_start'\]; accepted: \['params', "
     r"'bounds', 'jac', 'response', 'start', 'scale', 'n_points', 'n_refine', 'seed', "
     r"'max_nfev', 'gtol', 'xtol', 'ftol', 'label'\]"),
    (lambda: rx.OLS("ce ~ p").fit(DF, cluster="p"),
     r"OLS.fit: unknown keyword argument\(s\) \['cluster'\]; accepted: " + ESTIMATION),
    (lambda: rx.OLS("ce ~ p").fit(rx.Sample(DF[["p"]].to_numpy(), DF["ce"].to_numpy(), ("p",),
                                            "ce"), cov_type="HC1"),
     r"OLS.fit: \['cov_type'\] apply to estimation on a DataFrame, not to fits on a training "
     r"sample"),  # was ignored: the fitted rule came back as if nothing had been asked
    (lambda: rx.demand.MNL.from_formula("shares ~ prices", pd.DataFrame(), nest="mushy"),
     r"MNL.from_formula: unknown keyword argument\(s\) \['nest'\]; accepted: \['max_nfev', "
     r"'method', 'budget'\]"),
])
def test_unknown_keywords_are_refused_by_name(call, message):
    with pytest.raises(rx.ConfigurationError, match=message):
        call()


def test_known_keywords_still_pass():
    assert CPT(n_starts=2, label="c").label == "c"
    assert ExpectedUtility(n_starts=2).label == "EU"
    fit = rx.NLS.from_formula(LINEAR, DF, bounds={"a": (0, 2)}, seed=1).fit(cov_type="HC1")
    assert fit.cov_type == "HC1" and np.isfinite(fit.bse["a"])
    assert rx.OLS("ce ~ p").fit(DF, cov_type="HC1").cov_type == "HC1"

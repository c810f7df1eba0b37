# %% [markdown]
# # Quick start: how restrictive is a model on *your* eligible set?
#
# Restrictiveness asks: if the truth were any rule satisfying the economic restrictions, how
# well would this model (or procedure) approximate it, relative to a baseline? We declare the
# eligible set with constraint objects, draw pseudo-truths from a monotone Gaussian-process
# evaluation distribution, and measure a linear model and GP regression on noise-free samples.
# Run: `python vignettes/01_quickstart.py` (about 20 seconds).

# %%
import numpy as np

import restrictiveness as rx

eligible = rx.EligibleSet(
    rx.Box(x1=(0, 1), x2=(0, 1)),   # the covariate space, uniform P_X
    rx.Increasing("x1"),             # rules increase in x1 ...
    rx.Decreasing("x2"),             # ... decrease in x2 ...
    rx.Between(0, 1),                # ... and predict in [0, 1]
)
prior = rx.MonotoneGP(eligible, kernel=rx.Matern32(variance=10, lengthscale=1), n_eval=500)

# %% [markdown]
# One pseudo-truth: monotone on every ordered pair of its points, inside the bounds.

# %%
truth = prior.draw([50], np.random.default_rng(0))
y = truth.eval_y(50)
print("range of f:", y.min().round(3), y.max().round(3),
      "| remaining violations:", truth.diagnostics(50)["violations"])

# %% [markdown]
# The study: every procedure and the constant baseline see the same pseudo-truths and samples.

# %%
study = rx.Study(prior,
                 {"linear": rx.OLS("y ~ x1 + x2"),
                  "GP regression": rx.GPRegression("y ~ x1 + x2", constraints=[rx.Between(0, 1)])},
                 baseline=rx.Constant(), n=[25, 100], replications=40, seed=1)
res = study.run(progress=False)
print(res.summary())

# %% [markdown]
# Paired contrast (SE from the covariance on common draws) and sensitivity of the comparison
# to reweighting the pseudo-truths by density ratios within [1/Γ, Γ].

# %%
print(res.contrast("linear", "GP regression").round(3))
print(res.sensitivity("linear", "GP regression", gamma=2).round(3))
print("critical Γ*:", res.critical_gamma("linear", "GP regression").to_dict())

# %% [markdown]
# Model restrictiveness (Def. 1): fit on the evaluation set itself, the n → ∞ limit.

# %%
limit = rx.Study(prior, {"linear": rx.OLS("y ~ x1 + x2")}, rx.Constant(), n=[25],
                 replications=40, seed=1, fit_on="evaluation").run(progress=False)
print("linear model, Def. 1:", float(limit.restrictiveness.squeeze()).__round__(3))

# %% [markdown]
# Results are an xarray Dataset; they round-trip through NetCDF with their configuration.

# %%
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "quickstart.nc"
    res.to_netcdf(path)
    again = rx.load(path)
    print(again, "| seed:", again.dataset.attrs["seed"])

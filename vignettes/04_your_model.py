# %% [markdown]
# # Your own model: declare it in one line, measure it, estimate it, place it on the frontier
#
# The paper's lottery models are cumulative prospect theory and its submodels. Suppose you
# prefer a *Prelec-weighted expected value*: the certainty equivalent of a binary lottery is its
# expected value under the probability weight w(p) = exp(−β(−log p)^α),
#
#     CE = z_lo + (z_hi − z_lo) · exp(−β (−log p)^α),   α ∈ [0.05, 2], β ∈ [0.05, 5].
#
# It is not in the paper. With `rx.NLS` it is one line: a formula in the data's columns and
# named parameters with their bounds (parsed safely, differentiated symbolically, compiled).
# We measure its restrictiveness on the paper's eligible set beside CPT(α,γ,δ) and GP
# regression, estimate it on the Bruhin, Fehr-Duda & Epper (2010) data with standard errors
# clustered by participant, compute its completeness and draw the frontier.
# Run: `python vignettes/04_your_model.py [path/to/ch03_data.csv]` (about a minute).

# %%
import sys
from pathlib import Path

import numpy as np

import restrictiveness as rx

try:  # figures need matplotlib (pip install "restrictiveness[plot]"); the rest does not
    import matplotlib
    matplotlib.use("Agg")
except ImportError:
    matplotlib = None
    print("matplotlib is not installed: the numbers below are computed, the figures skipped")

prelec_ev = rx.NLS("ce ~ z_lo + (z_hi - z_lo) * exp(-beta * (-log(p))**alpha)",
                   bounds={"alpha": (0.05, 2), "beta": (0.05, 5)}, label="Prelec EV")
procedures = {"Prelec EV": prelec_ev,
              "CPT(alpha,gamma,delta)": rx.lottery.CPT(free=("alpha", "gamma", "delta")),
              "GP regression": rx.lottery.gp_regression()}

# %% [markdown]
# ## Restrictiveness on the lottery eligible set
# The same pseudo-truths and samples for every procedure (common random numbers), so paired
# contrasts have small standard errors. The paper uses M = 100 replications; 20 keep this quick.

# %%
res = rx.lottery.study(procedures, n=[50, 100], replications=20, seed=0, n_eval=300).run(
    n_jobs=-1, progress=False)
print(res.summary())
print("Prelec EV - CPT(alpha,gamma,delta):")
print(res.contrast("Prelec EV", "CPT(alpha,gamma,delta)").round(3))
print("Prelec EV - GP regression:")
print(res.contrast("Prelec EV", "GP regression").round(3))

# %% [markdown]
# Every fit is recorded: where the search started, where it ended, whether it converged.

# %%
sample = rx.lottery.lottery_prior(n_eval=10).draw([100], np.random.default_rng(1)).sample(100)
fit = prelec_ev.fit(sample)
print(fit, "| converged:", fit.info["converged"], "| refinements:", len(fit.info["starts"]),
      "| evaluations:", fit.info["evaluations"], "| on a bound:", fit.info["at_bound"])

# %% [markdown]
# ## Estimation on real data
# The lottery data may be used for replication only; the package never ships them. Pass the
# path of `ch03_data.csv` (the default looks beside the repository, as the tests do).

# %%
default = Path(__file__).resolve().parents[2] / "shared/data/bruhin2010/ch03_data.csv"
path = Path(sys.argv[1]) if len(sys.argv) > 1 else default
if path.is_file():
    data = rx.datasets.load_bruhin(path)
    est = rx.NLS.from_formula(prelec_ev.formula, data, bounds=prelec_ev.bounds,
                              label="Prelec EV").fit(cov_type="cluster", groups="participant")
    print(est.summary())
    comp = rx.lottery.completeness(data, procedures, folds=10, seed=0)
    print(comp.summary())
    table = rx.frontier_table(res, comp, n=100)
    print(table.round(3).to_string())
    if matplotlib is not None:
        ax = rx.plot_frontier(table)
        ax.figure.savefig(Path.cwd() / "your_model_frontier.png", dpi=100)
else:
    print(f"lottery data not found at {path}; skipping estimation, completeness and the "
          "frontier")

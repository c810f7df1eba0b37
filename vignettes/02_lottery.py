# %% [markdown]
# # Certainty equivalents: restrictiveness and completeness of CPT (the paper's application 1)
#
# Binary lotteries (z_hi, z_lo, p); eligible certainty equivalents lie between the prizes and
# increase in each coordinate. We measure how restrictive the CPT family is on this eligible set
# (Table 1 of the paper, here with fewer replications), estimate CPT on the Bruhin, Fehr-Duda &
# Epper (2010) data if you have them, compute completeness and draw the frontier.
# Run: `python vignettes/02_lottery.py [path/to/ch03_data.csv]` (under a minute).

# %%
import sys
from pathlib import Path

import restrictiveness as rx

try:  # figures need matplotlib (pip install "restrictiveness[plot]"); the rest does not
    import matplotlib
    matplotlib.use("Agg")
except ImportError:
    matplotlib = None
    print("matplotlib is not installed: the numbers below are computed, the figures skipped")

procedures = {m.label: m for m in (rx.lottery.CPT(free=("alpha", "gamma", "delta")),
                                   rx.lottery.CPT(free=("alpha", "gamma")),
                                   rx.lottery.CPT(free=("delta",)))}
procedures["GP regression"] = rx.lottery.gp_regression()
res = rx.lottery.study(procedures, n=[50, 100], replications=30, seed=0, n_eval=500).run(
    n_jobs=-1, progress=False)
print(res.summary())
print(res.contrast("CPT(alpha,gamma)", "CPT(alpha,gamma,delta)").round(3))
if matplotlib is not None:
    ax = res.plot_profile()          # r̂ against n with 95% bands
    ax.figure.savefig(Path.cwd() / "lottery_profile.png", dpi=100)

# %% [markdown]
# ## Real data
# The lottery data may be used for replication only; the package never ships them. Pass the
# path of `ch03_data.csv` (the default looks beside the repository, as the tests do).

# %%
default = Path(__file__).resolve().parents[2] / "shared/data/bruhin2010/ch03_data.csv"
path = Path(sys.argv[1]) if len(sys.argv) > 1 else default
if path.is_file():
    data = rx.datasets.load_bruhin(path)
    fit = rx.lottery.CPT.from_formula("ce ~ z_hi + z_lo + p", data,
                                      free=("alpha", "gamma", "delta")).fit(
        cov_type="cluster", groups="participant")
    print(fit.summary())
    comp = rx.lottery.completeness(data, procedures, folds=10, seed=0)
    print(comp.summary())
    table = rx.frontier_table(res, comp, n=100)
    print(table.round(3))
    if matplotlib is not None:
        ax = rx.plot_frontier(table)
        ax.figure.savefig(Path.cwd() / "lottery_frontier.png", dpi=100)
else:
    print(f"lottery data not found at {path}; skipping the real-data part")

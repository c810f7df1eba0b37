"""Known-answer check of the Monte Carlo engine, with figures for the record.

Zero-mean GP (Matérn-3/2, variance 1, length scale 0.5, jitter 1e-4) on a finite domain of 25
points with uniform weights; OLS on (1, x1, x2) and the constant, both fitted on the evaluation
set (model restrictiveness, Def. 1). Then E[D]/E[B] = tr((I − P_X) K) / tr((I − P_1) K).
Prints the estimate at M = 2,000 against the closed form, and the ratio of the spread of r̂
across 25 independent seeds (M = 80 each) to the mean delta-method SE.

Run: ``python benchmarks/known_answer.py [-M 2000] [--seeds 25] [--seed-replications 80]``
(smaller values for a quick check).
"""

from __future__ import annotations

import argparse

import numpy as np

import restrictiveness as rx


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-M", "--replications", type=int, default=2000,
                    help="replications of the estimate compared with the closed form")
    ap.add_argument("--seeds", type=int, default=25, help="independent seeds for the spread")
    ap.add_argument("--seed-replications", type=int, default=80, help="replications per seed")
    args = ap.parse_args()
    support = np.random.default_rng(3).random((25, 2))
    kernel = rx.Matern32(variance=1.0, lengthscale=0.5)
    prior = rx.MonotoneGP(rx.EligibleSet(rx.FiniteSet(support, ("x1", "x2"))), kernel=kernel)
    K = kernel(support) + 1e-4 * np.eye(25)
    X = np.column_stack([np.ones(25), support])

    def resid_trace(A):
        return np.trace((np.eye(25) - A @ np.linalg.pinv(A)) @ K)

    expected = resid_trace(X) / resid_trace(X[:, :1])

    def run(M, seed):
        res = rx.Study(prior, {"linear": rx.OLS("y ~ x1 + x2")}, rx.Constant(), n=[5],
                       replications=M, seed=seed, fit_on="evaluation").run(progress=False)
        return float(res.restrictiveness.squeeze()), float(res.se.squeeze())

    r, se = run(args.replications, 11)
    print(f"closed form {expected:.4f} | estimate (M={args.replications}) {r:.4f} (se {se:.4f}) | "
          f"|z| = {abs(r - expected) / se:.2f}")
    draws = np.array([run(args.seed_replications, s) for s in range(args.seeds)])
    print(f"SD of r̂ across {args.seeds} seeds (M={args.seed_replications}): "
          f"{draws[:, 0].std(ddof=1):.4f} | mean SE "
          f"{draws[:, 1].mean():.4f} | ratio {draws[:, 0].std(ddof=1) / draws[:, 1].mean():.2f}")


if __name__ == "__main__":
    main()

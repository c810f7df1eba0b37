"""Benchmark: fitting CPT(α,γ,δ) by nonlinear least squares at n = 100 (SPEC §6).

For random eligible truths — half "CPT + monotone perturbation" (CEs of random CPT parameters
pushed by a smooth increasing function of the lottery, kept inside the prize interval), half
plain monotone functions between the prizes — the script

1. times our fit (grid → best grid-local minima → bounded LM in numba, multi-start included)
   and reports the median time per fit (target < 20 ms);
2. times plain ``scipy.optimize.curve_fit`` (bounded, numerical derivatives) from the *same*
   starting points (the grid is given to scipy for free) and prints the ratio;
3. checks that our objective is ≤ curve_fit's best on every draw and prints the count;
4. times each numba kernel against its NumPy twin, side by side (median CPU time over rounds
   that alternate the two), and prints the speed-ups.

With ``--truths prior`` the truths are draws of the paper's monotone-GP prior
(:func:`restrictiveness.lottery.prior.lottery_prior`) instead.

Run: ``python benchmarks/bench_cpt_fit.py [--draws 100] [--n 100] [--seed 0] [--truths prior]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.ndimage
import scipy.optimize

from restrictiveness.lottery import _rdu_nb as K
from restrictiveness.lottery.models import CPT


def lotteries(rng: np.random.Generator, n: int) -> np.ndarray:
    """Uniform lotteries on the paper's domain (z_hi ≥ z_lo)."""
    zh, zl = rng.uniform(1 / 15, 1, 3 * n), rng.uniform(0, 1 / 3, 3 * n)
    p = rng.uniform(0.05, 0.95, 3 * n)
    return np.ascontiguousarray(np.c_[zh, zl, p][zh >= zl][:n])


def truth(rng: np.random.Generator, X: np.ndarray, kind: int) -> np.ndarray:
    """An eligible CE function: in [z_lo, z_hi] and nondecreasing in (z_hi, z_lo, p)."""
    zh, zl, p = X.T
    push = rng.uniform(0, 1.5, 3) @ np.array([zh, zl, p - 0.5]) + 0.3 * np.tanh(
        8 * (p - rng.uniform(0.2, 0.8)))
    if kind == 0:   # CPT + monotone perturbation (on the logit of the CE's position)
        theta = np.array([rng.uniform(0.2, 1), rng.uniform(0.2, 1), rng.uniform(-2, 2)])
        u = (K.rdu_values(theta, X, 0.0, K.WEIGHT_ODDS)[0] - zl) / np.maximum(zh - zl, 1e-12)
        u = np.clip(u, 1e-9, 1 - 1e-9)
        g = np.log(u / (1 - u)) + push
    else:           # plain monotone function between the prizes
        g = rng.normal() + 2 * push
    return zl + (zh - zl) / (1 + np.exp(-g))


def grid_starts(model: CPT, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The starting points our fit refines (same rule as fit_rdu): best grid-local minima and
    the best grid point of each face of the parameter box."""
    lo, hi, free, grids = model._kernel_setup()
    S = K.grid_ssr(X, y, *grids, 0.0, K.WEIGHT_ODDS)
    local = S <= scipy.ndimage.minimum_filter(S, size=3, mode="nearest")
    idx = np.argwhere(local)
    chosen = [tuple(i) for i in idx[np.argsort(S[local], kind="stable")][: model.n_starts]]
    for d in range(3):          # plus the best grid point of each face of the box
        if S.shape[d] == 1:
            continue
        for end in (0, S.shape[d] - 1):
            face = np.take(S, [end], axis=d)
            i = list(np.unravel_index(face.argmin(), face.shape))
            i[d] = end
            if tuple(i) not in chosen:
                chosen.append(tuple(i))
    return np.array([[grids[0][a], grids[1][b], grids[2][c]] for a, b, c in chosen])


def curve_fit_best(X: np.ndarray, y: np.ndarray, starts: np.ndarray, lo, hi) -> float:
    """Best SSR of plain curve_fit (trf, 2-point numerical Jacobian) over the starts."""

    def model(Xt, alpha, gamma, ell):
        return K.rdu_values_numpy(np.array([alpha, gamma, ell]), X, 0.0, K.WEIGHT_ODDS)[0]

    best = np.inf
    for s in starts:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                popt, _ = scipy.optimize.curve_fit(model, X, y, p0=s, bounds=(lo, hi))
        except RuntimeError:  # curve_fit gives up after max_nfev
            continue
        r = model(X, *popt) - y
        best = min(best, float(r @ r))
    return best


def side_by_side(nb, py, reps: int, rounds: int = 7) -> tuple[float, float]:
    """Median CPU seconds per call of ``nb`` (``10·reps`` calls a round) and ``py`` (``reps``),
    the two timed in alternation, so a load that comes and goes weighs on both."""
    t_nb, t_py = [], []
    for _ in range(rounds):
        for fn, n, out in ((nb, 10 * reps, t_nb), (py, reps, t_py)):
            t = time.process_time()
            for _ in range(n):
                fn()
            out.append((time.process_time() - t) / n)
    return float(np.median(t_nb)), float(np.median(t_py))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=100)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--truths", choices=("synthetic", "prior"), default="synthetic")
    args = ap.parse_args()
    prior = None
    if args.truths == "prior":
        from restrictiveness.lottery.prior import lottery_prior

        prior = lottery_prior(n_eval=10)
    rng = np.random.default_rng(args.seed)
    model = CPT()
    lo, hi, free, grids = model._kernel_setup()
    X0 = lotteries(rng, args.n)
    model.fit_arrays(X0, truth(rng, X0, 0))  # compile / load the numba cache outside timings

    ours_t, scipy_t, ours_ssr, scipy_ssr, n_starts, at_bound = [], [], [], [], [], 0
    for d in range(args.draws):
        if prior is None:
            X = lotteries(rng, args.n)
            y = truth(rng, X, d % 2)
        else:
            draw = prior.draw([args.n], rng)
            X, y = np.ascontiguousarray(draw.train_locations[0][: args.n]), draw.train_y(args.n)
        t = time.perf_counter()
        fit = model.fit_arrays(X, y)
        ours_t.append(time.perf_counter() - t)
        at_bound += bool(fit.info["at_bound"])
        starts = grid_starts(model, X, y)
        assert len(starts) == len(fit.info["starts"])
        n_starts.append(len(starts))
        t = time.perf_counter()
        best = curve_fit_best(X, y, starts, lo, hi)
        scipy_t.append(time.perf_counter() - t)
        ours_ssr.append(fit.ssr)
        scipy_ssr.append(best)
    ours_t, scipy_t = np.array(ours_t) * 1e3, np.array(scipy_t) * 1e3
    ours_ssr, scipy_ssr = np.array(ours_ssr), np.array(scipy_ssr)
    print(f"CPT(alpha,gamma,delta), n = {args.n}, {args.draws} {args.truths} truths "
          f"(grid {len(grids[0])}x{len(grids[1])}x{len(grids[2])}; starts: {model.n_starts} "
          "best grid-local minima + best point of each face; median "
          f"{int(np.median(n_starts))} starts)")
    print(f"  ours (numba, multi-start, analytic Jacobian): median {np.median(ours_t):.2f} ms, "
          f"90% {np.quantile(ours_t, 0.9):.2f} ms per fit   [target < 20 ms]")
    print(f"  scipy curve_fit (same starts, numerical J):    median {np.median(scipy_t):.2f} ms, "
          f"90% {np.quantile(scipy_t, 0.9):.2f} ms per fit")
    print(f"  speed-up (median ratio curve_fit / ours): {np.median(scipy_t / ours_t):.1f}x")
    ok = ours_ssr <= scipy_ssr * (1 + 1e-9) + 1e-15
    rel = (scipy_ssr - ours_ssr) / np.maximum(scipy_ssr, 1e-300)
    print(f"  our SSR <= curve_fit's on {ok.sum()}/{args.draws} draws; "
          f"curve_fit worse by > 1e-6 (relative) on {(rel > 1e-6).sum()} draws; "
          f"worst case for us: {(-rel).max():.2e} relative")
    print(f"  fits with a parameter on a bound: {at_bound}/{args.draws}")

    # numba kernels against their NumPy twins
    X = lotteries(rng, args.n)
    y = truth(rng, X, 0)
    theta = np.array([0.6, 0.5, 0.2])
    args_g = (X, y, *grids, 0.0, K.WEIGHT_ODDS)
    starts = (X, y, *grids, lo, hi, free, 0.0, K.WEIGHT_ODDS, model.n_starts, 200, 1e-10)
    print("numba kernel vs NumPy twin (same inputs):")
    for name, nb, py, reps in [
        ("rdu_values", lambda: K.rdu_values(theta, X, 0.0, K.WEIGHT_ODDS),
         lambda: K.rdu_values_numpy(theta, X, 0.0, K.WEIGHT_ODDS), 500),
        ("grid_ssr", lambda: K.grid_ssr(*args_g), lambda: K.grid_ssr_numpy(*args_g), 10),
        ("fit_rdu", lambda: K.fit_rdu(*starts), lambda: K.fit_rdu_numpy(*starts), 1),
    ]:
        t_nb, t_py = side_by_side(nb, py, reps)
        print(f"  {name:11s} numba {t_nb * 1e6:10.1f} us   numpy {t_py * 1e6:12.1f} us   "
              f"speed-up {t_py / t_nb:7.1f}x")


if __name__ == "__main__":
    main()

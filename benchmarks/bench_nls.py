"""Benchmark: rx.NLS on the Prelec-weighted expected-value model at n = 100 (SPEC §6 lotteries).

``ce ~ z_lo + (z_hi - z_lo) * exp(-beta * (-log(p))**alpha)``, α ∈ [0.05, 2], β ∈ [0.05, 5],
fitted to noise-free samples of the paper's monotone-GP certainty-equivalent prior. The script

1. times ``rx.NLS`` fits (Sobol screening, refinements by the compiled bounded LM with the
   symbolic Jacobian) — wall and CPU time per fit, median and 90% [goal < 5 ms];
2. times scipy ``least_squares`` (trf) with the *same* analytic Jacobian from the *same* starts
   our fit refined (the screening is given to scipy for free), and ``curve_fit`` with numerical
   derivatives from those starts, and prints the time ratios and the SSE agreement;
3. times CPT(α,γ,δ) written as an NLS formula against the built-in CPT fitter on the same
   samples (SSE agreement and time);
4. times the compiled kernels against their NumPy twins (the multistart driver around the
   solver's twin with a sympy-printed NumPy callback; the callback alone).

Run: ``python benchmarks/bench_nls.py [--draws 50] [--n 100] [--seed 0]`` (under ``nice -n -10``
on an idle machine for timings).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import scipy.optimize

import restrictiveness as rx
from restrictiveness.lottery.models import CPT
from restrictiveness.lottery.prior import lottery_prior
from restrictiveness.procedures.nls import _screening_points
from restrictiveness.shared._multistart_nb import multistart_numpy
from restrictiveness.shared.expression import compile_expression

PRELEC = "ce ~ z_lo + (z_hi - z_lo) * exp(-beta * (-log(p))**alpha)"
BOUNDS = {"alpha": (0.05, 2.0), "beta": (0.05, 5.0)}
CPT_FORMULA = ("ce ~ ((delta*p**gamma/(delta*p**gamma + (1-p)**gamma)) * z_hi**alpha"
               " + (1 - delta*p**gamma/(delta*p**gamma + (1-p)**gamma)) * z_lo**alpha)"
               "**(1/alpha)")


def timed(fn, *args):
    """(result, wall seconds, CPU seconds) of one call ``fn(*args)``."""
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - w, time.process_time() - c


def scipy_from_starts(model, design, y, starts, jac):
    lo = np.array([b[0] for b in model.bounds.values()])
    hi = np.array([b[1] for b in model.bounds.values()])
    # least_squares needs starts strictly inside the box (ours may sit on a face)
    starts = np.clip(starts, lo + 1e-10 * (hi - lo), hi - 1e-10 * (hi - lo))
    best = np.inf
    for s in starts:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if jac:
                res = scipy.optimize.least_squares(
                    lambda t: model.values(design, t) - y, s,
                    jac=lambda t: model.values(design, t, jacobian=True)[1], bounds=(lo, hi),
                    method="trf")
                best = min(best, 2 * res.cost)
            else:
                try:
                    popt, _ = scipy.optimize.curve_fit(
                        lambda X, *t: model.values(design, np.array(t)), design, y, p0=s,
                        bounds=(lo, hi))
                except RuntimeError:
                    continue
                r = model.values(design, popt) - y
                best = min(best, float(r @ r))
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=50)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    prior = lottery_prior(n_eval=10)
    samples = [prior.draw([args.n], np.random.default_rng(args.seed + m)).sample(args.n)
               for m in range(args.draws)]
    model = rx.NLS(PRELEC, bounds=BOUNDS)
    model.fit(samples[0])                     # compile the callback, load the driver's cache

    rows = []
    for s in samples:
        fit, wall, cpu = timed(model.fit, s)
        design = model._design(s.X, s.columns)
        starts = np.array([r[:2] for r in fit.info["starts"]])
        ls, ls_wall, _ = timed(scipy_from_starts, model, design, s.y, starts, True)
        cf, cf_wall, _ = timed(scipy_from_starts, model, design, s.y, starts, False)
        rows.append((wall, cpu, fit.ssr, ls, ls_wall, cf, cf_wall, len(starts),
                     fit.info["evaluations"]))
    R = np.array(rows)
    wall, cpu, ours, ls, ls_wall, cf, cf_wall = (R[:, k] for k in range(7))
    ms = 1e3
    print(f"Prelec model, n = {args.n}, {args.draws} prior draws (load average {load:.2f} on "
          f"{os.cpu_count()} cores; median {np.median(R[:, 7]):.0f} refinements, "
          f"{np.median(R[:, 8]):.0f} evaluations per fit)")
    print(f"  rx.NLS:                         median {np.median(wall) * ms:6.2f} ms wall, "
          f"{np.median(cpu) * ms:6.2f} ms CPU; 90% {np.quantile(wall, 0.9) * ms:6.2f} ms   "
          "[goal < 5 ms]")
    print(f"  least_squares, same J and starts: median {np.median(ls_wall) * ms:6.2f} ms   "
          f"ratio {np.median(ls_wall / wall):5.1f}x")
    print(f"  curve_fit, numerical J, starts:   median {np.median(cf_wall) * ms:6.2f} ms   "
          f"ratio {np.median(cf_wall / wall):5.1f}x")
    for name, ref in (("least_squares", ls), ("curve_fit", cf)):
        rel = (ours - ref) / ref
        print(f"  SSE vs {name:13s}: ours <= theirs (1e-9 rel.) on "
              f"{(rel <= 1e-9).sum()}/{args.draws}; max (ours - theirs)/theirs {rel.max():.1e}; "
              f"theirs worse by > 1e-6 on {(rel < -1e-6).sum()}")

    # CPT as a formula against the built-in fitter
    cpt_nls, cpt = rx.NLS(CPT_FORMULA, bounds={"alpha": (0.01, 1), "gamma": (0.01, 1),
                                               "delta": (0.01, 30)}), CPT()
    cpt_nls.fit(samples[0])
    cmp = []
    for s in samples:
        a, ta, _ = timed(cpt_nls.fit, s)
        b, tb, _ = timed(cpt.fit, s)
        cmp.append(((a.ssr - b.ssr) / b.ssr, ta, tb))
    C = np.array(cmp)
    print(f"CPT(alpha,gamma,delta) as an NLS formula vs the built-in fitter ({args.draws} "
          f"draws): max (ours - builtin)/builtin SSE {C[:, 0].max():.1e}, min {C[:, 0].min():.1e};"
          f" median {np.median(C[:, 1]) * ms:.1f} ms vs {np.median(C[:, 2]) * ms:.1f} ms")

    # compiled kernels against their NumPy twins
    s = samples[1]
    design, y = model._design(s.X, s.columns), np.require(s.y, float, ["C", "W"])
    compiled = compile_expression(model._formula)
    value_np, jac_np = compiled.numpy_functions()
    logscale = model.logscale

    def callback_np(x, data, want):
        X, yy, _ = data
        f = value_np(x, X)
        return f - yy, jac_np(x, X) if want else np.empty((0, 2))

    lo, hi = model._box()
    points, group = _screening_points(tuple(lo), tuple(hi), model.n_points, model.seed)
    linear = np.array(compiled.linear, np.int64) * (1 + model.logscale)
    opts = (points, group, lo, hi, np.ones(2, np.int64), linear, model.n_refine, 0.1,
            model.max_nfev, model.gtol, model.xtol, model.ftol)
    data = (design, y, logscale)
    reps = 200
    _, t_fit, _ = timed(lambda: [model.fit(s) for _ in range(reps)])
    twin, t_twin, _ = timed(lambda: multistart_numpy(callback_np, data, *opts))
    print("compiled vs NumPy twin:")
    print(f"  multistart fit   numba {t_fit / reps * 1e6:9.1f} us   numpy {t_twin * 1e6:11.1f} us"
          f"   speed-up {t_twin / (t_fit / reps):6.1f}x   (SSE {model.fit(s).ssr:.6e} vs "
          f"{twin[1]:.6e})")
    x = np.array([0.7, 1.1])
    _, t_cb, _ = timed(lambda: [compiled.resjac(x, data, True) for _ in range(5000)])
    _, t_np, _ = timed(lambda: [callback_np(x, data, True) for _ in range(500)])
    print(f"  residuals + J    numba {t_cb / 5000 * 1e6:9.1f} us   numpy {t_np / 500 * 1e6:11.1f}"
          f" us   speed-up {(t_np / 500) / (t_cb / 5000):6.1f}x")


if __name__ == "__main__":
    main()

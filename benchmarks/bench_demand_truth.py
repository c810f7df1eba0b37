"""Benchmark: the demand prior's share kernel against its NumPy twin, and the truth's cost per
demand system (SPEC §7).

One demand system with the paper's sizes (64 features per field, 512 consumer types, 64
Gauss–Legendre nodes, 8 nodes on the perturbation piece) is evaluated on 200 training markets
(shares) and 100 evaluation markets (shares and all 2 × 24 price perturbations, i.e. every own-
and cross-price elasticity). The numba kernel runs on all 300 markets; the NumPy twin (written
from the definition, far slower) runs on a subset unless ``--full`` is given, and the speed-up is
per market of each kind. GFLOP/s count only the kernel's matrix products
(:func:`restrictiveness.demand._shares_nb.matmul_flops`).

Targets: kernel ≥ 10× the twin; truth < 1 s per demand system (one core; issue 15). Times are
reported as CPU time of this process (and wall time), since the machine may be shared.

Run: ``python benchmarks/bench_demand_truth.py [--systems 3] [--twin-markets 6] [--full]``
"""

from __future__ import annotations

import os

# One BLAS thread: the study runs one replication per core, and timings are then per core.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from restrictiveness.demand._shares_nb import matmul_flops  # noqa: E402
from restrictiveness.demand.markets import elasticities_from_shares  # noqa: E402
from restrictiveness.demand.prior import DemandPrior, DemandTruth  # noqa: E402


def _time(f, *args):
    """Result, wall seconds and CPU seconds of this process (robust to a shared machine)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = f(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=3, help="demand systems to time (median)")
    ap.add_argument("--twin-markets", type=int, default=6,
                    help="markets of each kind for the NumPy twin (ignored with --full)")
    ap.add_argument("--full", action="store_true", help="run the twin on all 300 markets")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    prior = DemandPrior()
    twin_prior = DemandPrior(prior.market, engine="numpy")
    J, D, T = prior.market.n_products, prior.n_features, prior.n_types
    Q, S = prior.n_nodes, prior.n_short_nodes
    rng = np.random.default_rng(args.seed)

    # warm-up: compile (or load the cache of) the kernel
    warm = prior.draw([1], np.random.default_rng(99))
    warm.system.perturbed_shares(warm.eval_X[:1], warm.log_price_steps[:1])

    print(f"Demand truth benchmark: J={J}, D={D} features/field, T={T} types, Q={Q} nodes, "
          f"S={S} short nodes, one BLAS thread")
    rows = []
    for s in range(args.systems):
        t0, c0 = time.perf_counter(), time.process_time()
        truth = prior.draw([200], rng)
        t_draw, c_draw = time.perf_counter() - t0, time.process_time() - c0
        X_train, X_eval, h = truth.train_locations[0], truth.eval_X, truth.log_price_steps
        y, t_train, c_train = _time(truth.system.shares, X_train)
        (base, minus, plus), t_eval, c_eval = _time(truth.system.perturbed_shares, X_eval, h)
        rows.append((t_draw, t_train, t_eval, c_draw, c_train, c_eval))
        print(f"  system {s}: draw+standardise {t_draw:6.3f} s | 200 training markets "
              f"{t_train:6.3f} s | 100 evaluation markets with elasticities {t_eval:6.3f} s | "
              f"wall {t_draw + t_train + t_eval:6.3f} s, CPU {c_draw + c_train + c_eval:6.3f} s")
    t_draw, t_train, t_eval, c_draw, c_train, c_eval = np.median(np.array(rows), axis=0)
    total, cpu = t_draw + t_train + t_eval, c_draw + c_train + c_eval
    flops_train = matmul_flops(200, J, D, T, Q, S, False)
    flops_eval = matmul_flops(100, J, D, T, Q, S, True)
    print(f"kernel (CPU time): {c_train / 200 * 1e3:.2f} ms per training market, "
          f"{c_eval / 100 * 1e3:.2f} ms per evaluation market with its 48 perturbations; "
          f"{(flops_train + flops_eval) / (c_train + c_eval) / 1e9:.1f} GFLOP/s effective "
          f"(matrix-product flops, {(flops_train + flops_eval) / 1e9:.1f} GFLOP per system, over "
          f"the whole kernel time)")
    print(f"truth per demand system (median of {args.systems}): CPU {cpu:.3f} s, wall "
          f"{total:.3f} s (target < 1 s: {'met' if cpu < 1 else 'NOT met'} in CPU time); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    # the truth as a study asks for it (training shares, evaluation shares, elasticities)
    # against the same requests before issue 15, when the evaluation shares were a separate
    # shares-only pass beside the perturbed pass that computes them too
    sysm = truth.system

    def before():
        return sysm.shares(X_train), sysm.shares(X_eval), sysm.perturbed_shares(X_eval, h)

    def now():
        t = DemandTruth(sysm, [X_train], X_eval)
        return t.train_y(200), t.eval_y(200), t.elasticities(200)

    _, w_before, c_before = _time(before)
    (y_now, e_now, E_now), w_now, c_now = _time(now)
    print(f"truth as a study asks for it (200 training + 100 evaluation markets with "
          f"elasticities): CPU {c_now:.3f} s (wall {w_now:.3f} s) against {c_before:.3f} s "
          f"(wall {w_before:.3f} s) with a separate evaluation-shares pass: "
          f"{c_before / c_now:.2f}x; same numbers: "
          f"{np.array_equal(y_now, y) and np.array_equal(e_now, base)}")

    # twin on the last system's markets
    system = truth.system
    twin = twin_prior.draw_system(np.random.default_rng(0))
    twin.fields, twin.scal = system.fields, system.scal  # the same demand system
    k = 200 if args.full else min(args.twin_markets, 100)
    y_twin, _, t_train_twin = _time(twin.shares, X_train[:k])
    k_eval = 100 if args.full else k
    (b2, m2, p2), _, t_eval_twin = _time(twin.perturbed_shares, X_eval[:k_eval], h[:k_eval])
    sp_train = (t_train_twin / k) / (c_train / 200)
    sp_eval = (t_eval_twin / k_eval) / (c_eval / 100)
    twin_total = t_train_twin / k * 200 + t_eval_twin / k_eval * 100
    E1 = elasticities_from_shares(minus[:k_eval], plus[:k_eval], h[:k_eval])
    E2 = elasticities_from_shares(m2, p2, h[:k_eval])
    print(f"NumPy twin (CPU time) on {k} training and {k_eval} evaluation markets: "
          f"{t_train_twin / k * 1e3:.1f} ms and {t_eval_twin / k_eval * 1e3:.1f} ms per market")
    print(f"speed-up (twin / kernel): training markets {sp_train:.1f}x, evaluation markets "
          f"{sp_eval:.1f}x, whole system {twin_total / (c_train + c_eval):.1f}x "
          f"(target >= 10x)")
    print(f"agreement: max rel. share difference "
          f"{np.max(np.abs(y_twin - y[:k]) / y[:k]):.1e}, max abs. elasticity difference "
          f"{np.max(np.abs(E1 - E2)):.1e}")


if __name__ == "__main__":
    main()

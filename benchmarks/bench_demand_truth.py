"""Benchmark: the demand prior's share kernel against its NumPy twin and against an earlier
version of itself, and the truth's cost per demand system (SPEC §7).

One demand system with the paper's sizes (64 features per field, 512 consumer types, 64
Gauss–Legendre nodes, 8 nodes on the perturbation piece) is evaluated on 200 training markets
(shares) and 100 evaluation markets (shares and all 2 × 24 price perturbations, i.e. every own-
and cross-price elasticity). The numba kernel runs on all 300 markets, and so does the kernel as it
was at git revision ``--before`` (loaded from ``git show`` into a temporary package), side by side
on the same markets; the NumPy twin (written from the definition, far slower) runs on a subset
unless ``--full`` is given, and the speed-up is per market of each kind. GFLOP/s count only the
kernel's matrix products (:func:`restrictiveness.demand._shares_nb.matmul_flops`).

The split of the kernel's time is measured by replaying its parts alone at the same sizes: the
matrix products (NumPy, one BLAS thread, the kernel's block shapes), the softplus-and-quadrature
pass (the kernel's own ``_subtract_integral`` on a block) and the rest by difference. The floor
is the matrix-product flops over this machine's one-thread dgemm peak (a large square product)
plus the softplus pass; float32 products are timed at the same shapes for comparison only (the
kernel is float64: the elasticities' finite differences need the shares to ~1e-12).

Targets: kernel ≥ 10× the twin; truth < 1 s per demand system (one core; issue 15). Times are
reported as CPU time of this process (and wall time), since the machine may be shared.

Run: ``python benchmarks/bench_demand_truth.py [--systems 3] [--twin-markets 6] [--full]
[--before c0f6736] [--no-split]`` (``--no-split`` leaves out the split of the kernel's time and the
floor, for a quick check).
"""

from __future__ import annotations

import os

# One BLAS thread: the study runs one replication per core, and timings are then per core.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import restrictiveness.demand.prior as prior_module  # noqa: E402
from restrictiveness.demand import _shares_nb  # noqa: E402
from restrictiveness.demand._shares_nb import matmul_flops  # noqa: E402
from restrictiveness.demand.markets import elasticities_from_shares  # noqa: E402
from restrictiveness.demand.prior import DemandPrior, DemandTruth  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _time(f, *args):
    """Result, wall seconds and CPU seconds of this process (robust to a shared machine)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = f(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


def _kernel_at(rev: str):
    """``shares_nb`` as it was at git revision ``rev``: that revision's ``_shares_nb.py``,
    ``_vecmath.py`` and ``_jit.py`` (where it has one) written into a temporary package and
    imported (compiled in this run)."""
    pkg = Path(tempfile.mkdtemp()) / "rx_before"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for path in ("restrictiveness/shared/_jit.py", "restrictiveness/shared/_vecmath.py",
                 "restrictiveness/demand/_shares_nb.py"):
        shown = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=REPO,
                               capture_output=True, text=True)
        if shown.returncode and path.endswith("_shares_nb.py"):  # no git history, no such rev
            raise subprocess.CalledProcessError(shown.returncode, shown.args, stderr=shown.stderr)
        text = shown.stdout
        if not text:  # revisions before the cache keying (_jit.py) use numba.njit directly
            continue
        for module in ("_vecmath", "_jit"):
            text = text.replace(f"from restrictiveness.shared.{module}", f"from rx_before.{module}")
        (pkg / Path(path).name).write_text(text)
    sys.path.insert(0, str(pkg.parent))
    return importlib.import_module("rx_before._shares_nb").shares_nb


@contextlib.contextmanager
def _using(kernel):
    """Demand systems call ``kernel`` instead of the current ``shares_nb`` inside the block."""
    current = prior_module.shares_nb
    prior_module.shares_nb = kernel
    try:
        yield
    finally:
        prior_module.shares_nb = current


def _truth_times(system, X_train, X_eval, h):
    """Training shares, perturbed evaluation shares and the CPU seconds of each."""
    y, _, c_train = _time(system.shares, X_train)
    pert, _, c_eval = _time(system.perturbed_shares, X_eval, h)
    return y, pert, c_train, c_eval


def _products_seconds(n_train, n_eval, J, D, H, Q, S, dtype, reps=3):
    """CPU seconds of the kernel's matrix products alone (NumPy, the kernel's block shapes)."""
    rng = np.random.default_rng(0)
    rows_b = max(1, _shares_nb._BLOCK_ROWS // Q) * Q
    rows_p = max(1, _shares_nb._BLOCK_ROWS // S) * S
    right = rng.normal(size=(D, H)).astype(dtype)
    shapes = ((J, n_train + n_eval), (rows_b, (n_train + n_eval) * J * Q // rows_b),
              (rows_p, n_eval * 2 * J * S // rows_p))
    best = np.inf
    for _ in range(reps):
        c0 = time.process_time()
        for rows, count in shapes:
            left = rng.normal(size=(rows, D)).astype(dtype)
            out = np.empty((rows, H), dtype)
            for _ in range(2 * count):  # the cos and the sin halves
                np.dot(left, right, out)
        best = min(best, time.process_time() - c0)
    return best


def _softplus_seconds(n_values, H, rows):
    """CPU seconds of the kernel's softplus-and-quadrature pass over ``n_values`` (row, type)
    values, timed on one block (the pass is compute-bound)."""
    rng = np.random.default_rng(0)
    lam_c, lam_s = rng.normal(size=(2, rows, H))
    const, weight = rng.normal(size=rows), rng.uniform(size=rows)
    out = np.zeros(2 * H)
    _shares_nb._subtract_integral(lam_c, lam_s, 0, rows, const, weight, out)
    reps = max(1, int(2e7 // (rows * 2 * H)))
    c0 = time.process_time()
    for _ in range(reps):
        _shares_nb._subtract_integral(lam_c, lam_s, 0, rows, const, weight, out)
    return (time.process_time() - c0) / (reps * rows * 2 * H) * n_values


def _dgemm_peak(dtype, size=2000, reps=3):
    """One-thread matrix-product GFLOP/s of this machine on a large square product."""
    a = np.random.default_rng(0).normal(size=(size, size)).astype(dtype)
    out = np.empty_like(a)
    np.dot(a, a, out)
    c0 = time.process_time()
    for _ in range(reps):
        np.dot(a, a, out)
    return 2.0 * size**3 * reps / (time.process_time() - c0) / 1e9


def _split(J, D, T, Q, S, flops, kernel):
    """Print where the kernel's ``kernel`` CPU seconds go, and the floor at these sizes."""
    H = T // 2
    n_sp = (200 + 100) * J * Q * T + 100 * 2 * J * S * T
    t_mm = _products_seconds(200, 100, J, D, H, Q, S, np.float64)
    t_mm32 = _products_seconds(200, 100, J, D, H, Q, S, np.float32)
    t_sp = _softplus_seconds(n_sp, H, max(1, _shares_nb._BLOCK_ROWS // Q) * Q)
    peak, peak32 = _dgemm_peak(np.float64), _dgemm_peak(np.float32)
    print(f"split of the kernel's {kernel:.3f} s: matrix products {t_mm:.3f} s "
          f"({flops / t_mm / 1e9:.1f} GFLOP/s), softplus pass {t_sp:.3f} s "
          f"({n_sp / 1e6:.0f} M values, {t_sp / n_sp * 1e9:.2f} ns each), rest (field rows, "
          f"shares) {kernel - t_mm - t_sp:.3f} s")
    print(f"floor: {flops / 1e9:.1f} GFLOP / {peak:.1f} GFLOP/s one-thread dgemm peak = "
          f"{flops / peak / 1e9:.3f} s, + softplus pass {t_sp:.3f} s = "
          f"{flops / peak / 1e9 + t_sp:.3f} s; float32 products at the kernel's shapes "
          f"{t_mm32:.3f} s ({flops / t_mm32 / 1e9:.1f} GFLOP/s, sgemm peak {peak32:.1f}) would "
          f"save {t_mm - t_mm32:.3f} s (not used: shares needed to ~1e-12)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--systems", type=int, default=3, help="demand systems to time (median)")
    ap.add_argument("--twin-markets", type=int, default=6,
                    help="markets of each kind for the NumPy twin (ignored with --full)")
    ap.add_argument("--full", action="store_true", help="run the twin on all 300 markets")
    ap.add_argument("--before", default="c0f6736",
                    help="git revision of the kernel to compare with (issue 15's starting point)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-split", action="store_true",
                    help="leave out the split of the kernel's time and the floor")
    args = ap.parse_args()

    prior = DemandPrior()
    twin_prior = DemandPrior(prior.market, engine="numpy")
    J, D, T = prior.market.n_products, prior.n_features, prior.n_types
    Q, S = prior.n_nodes, prior.n_short_nodes
    rng = np.random.default_rng(args.seed)
    label = f"revision {args.before}"
    try:
        before = _kernel_at(args.before)
    except (OSError, subprocess.CalledProcessError) as err:  # no git, or no such revision
        print(f"{label} not available ({err})")
        before, label = _shares_nb.shares_nb, "itself (the revision was not available)"

    # warm-up: compile (or load the cache of) both kernels
    warm = prior.draw([1], np.random.default_rng(99))
    warm.system.perturbed_shares(warm.eval_X[:1], warm.log_price_steps[:1])
    with _using(before):
        warm.system.perturbed_shares(warm.eval_X[:1], warm.log_price_steps[:1])

    print(f"Demand truth benchmark: J={J}, D={D} features/field, T={T} types, Q={Q} nodes, "
          f"S={S} short nodes, one BLAS thread; kernel now against {label}")
    rows, agree = [], []
    for s in range(args.systems):
        c0 = time.process_time()
        truth = prior.draw([200], rng)
        c_draw = time.process_time() - c0
        X_train, X_eval, h = truth.train_locations[0], truth.eval_X, truth.log_price_steps
        y, (base, minus, plus), c_train, c_eval = _truth_times(truth.system, X_train, X_eval, h)
        with _using(before):
            y0, (b0, m0, p0), c_train0, c_eval0 = _truth_times(truth.system, X_train, X_eval, h)
        rows.append((c_draw, c_train, c_eval, c_train0, c_eval0))
        agree.append(max(np.max(np.abs(a / b - 1)) for a, b in
                         ((y, y0), (base, b0), (minus, m0), (plus, p0))))
        print(f"  system {s}: draw+standardise {c_draw:6.3f} s | 200 training markets "
              f"{c_train:6.3f} s (before {c_train0:6.3f}) | 100 evaluation markets with "
              f"elasticities {c_eval:6.3f} s (before {c_eval0:6.3f}) | CPU "
              f"{c_draw + c_train + c_eval:6.3f} s (before {c_draw + c_train0 + c_eval0:6.3f})")
    c_draw, c_train, c_eval, c_train0, c_eval0 = np.median(np.array(rows), axis=0)
    cpu, cpu0 = c_draw + c_train + c_eval, c_draw + c_train0 + c_eval0
    flops = matmul_flops(200, J, D, T, Q, S, False) + matmul_flops(100, J, D, T, Q, S, True)
    print(f"median of {args.systems} systems (CPU s)      {'before':>10} {'now':>10} "
          f"{'speed-up':>9}")
    for label, c0_, c1_ in (("200 training markets", c_train0, c_train),
                            ("100 evaluation markets + elasticities", c_eval0, c_eval),
                            ("truth per demand system", cpu0, cpu)):
        print(f"  {label:38s} {c0_:10.3f} {c1_:10.3f} {c0_ / c1_:8.2f}x")
    print(f"  {'GFLOP/s effective (' + f'{flops / 1e9:.1f} GFLOP/system)':38s} "
          f"{flops / (c_train0 + c_eval0) / 1e9:10.1f} {flops / (c_train + c_eval) / 1e9:10.1f}")
    print(f"  same numbers: max relative difference {max(agree):.1e}; target < 1 s: "
          f"{'met' if cpu < 1 else 'NOT met'} in CPU time; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    if not args.no_split:
        _split(J, D, T, Q, S, flops, c_train + c_eval)

    # the truth as a study asks for it (training shares, evaluation shares, elasticities)
    # against the same requests before issue 15, when the evaluation shares were a separate
    # shares-only pass beside the perturbed pass that computes them too
    sysm = truth.system

    def separate_pass():
        return sysm.shares(X_train), sysm.shares(X_eval), sysm.perturbed_shares(X_eval, h)

    def now():
        t = DemandTruth(sysm, [X_train], X_eval)
        return t.train_y(200), t.eval_y(200), t.elasticities(200)

    _, w_before, c_before = _time(separate_pass)
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

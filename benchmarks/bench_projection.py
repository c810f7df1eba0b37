"""Monotone projection: numba kernel vs its NumPy twin on one lottery replication's points.

One replication at n = 200 projects on 1,200 three-dimensional points ([200 training; 1,000
evaluation]) in both directions, and enumerates their ordered pairs; each kernel is timed against
its twin side by side (median CPU time over rounds alternating the two).
Run: ``python benchmarks/bench_projection.py``.
"""

from __future__ import annotations

import time

import numpy as np

from restrictiveness.eligible._projection_nb import (
    ordered_pairs_numpy,
    sweep_project,
    sweep_project_numpy,
)
from restrictiveness.eligible.projection import ordered_pairs
from restrictiveness.lottery.prior import lottery_domain


def side_by_side(nb, py, reps_nb: int, reps_py: int, rounds: int = 5):
    """Median CPU seconds per call of ``nb`` and of ``py`` over rounds that time the two in
    alternation (so a load that comes and goes weighs on both), and their outputs."""
    times: tuple[list[float], list[float]] = ([], [])
    outs = [None, None]
    for _ in range(rounds):
        for q, (fn, reps) in enumerate(((nb, reps_nb), (py, reps_py))):
            start = time.process_time()
            for _ in range(reps):
                outs[q] = fn()
            times[q].append((time.process_time() - start) / reps)
    return float(np.median(times[0])), float(np.median(times[1])), outs[0], outs[1]


def main() -> None:
    rng = np.random.default_rng(0)
    domain = lottery_domain()
    X = np.concatenate([domain.sample(200, rng), domain.sample(1000, rng)])
    pairs = ordered_pairs(X, np.ones(3))
    g = 3.0 * rng.standard_normal(len(X))  # latent scale of the prior (variance 10)
    sweep_project(g, *pairs, 1.0, 1e-6, 50)  # compile
    print(f"points: {len(X)}, ordered pairs: {len(pairs[0])}")
    for sign, name in ((1.0, "increasing"), (-1.0, "decreasing")):
        t_nb, t_np, (a, sweeps), (b, _) = side_by_side(
            lambda s=sign: sweep_project(g, *pairs, s, 1e-6, 50),
            lambda s=sign: sweep_project_numpy(g, *pairs, s, 1e-6, 50), 20, 1)
        assert np.array_equal(a, b)
        print(f"{name:>10}: {sweeps} sweeps | numba {1e3 * t_nb:8.3f} ms | NumPy twin "
              f"{1e3 * t_np:8.1f} ms | speed-up {t_np / t_nb:6.0f}x")
    sign = np.ones(3, dtype=np.int64)
    t_nb, t_np, a, b = side_by_side(lambda: ordered_pairs(X, sign),
                                    lambda: ordered_pairs_numpy(X, sign), 20, 3)
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    print(f"ordered pairs: numba {1e3 * t_nb:8.3f} ms | NumPy twin {1e3 * t_np:8.1f} ms | "
          f"speed-up {t_np / t_nb:6.1f}x")


if __name__ == "__main__":
    main()

"""Monotone projection: numba kernel vs its NumPy twin on one lottery replication's points.

One replication at n = 200 projects on 1,200 three-dimensional points ([200 training; 1,000
evaluation]) in both directions. Run: ``python benchmarks/bench_projection.py``.
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


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    rng = np.random.default_rng(0)
    domain = lottery_domain()
    X = np.concatenate([domain.sample(200, rng), domain.sample(1000, rng)])
    pairs = ordered_pairs(X, np.ones(3))
    g = 3.0 * rng.standard_normal(len(X))  # latent scale of the prior (variance 10)
    sweep_project(g, *pairs, 1.0, 1e-6, 50)  # compile
    print(f"points: {len(X)}, ordered pairs: {len(pairs[0])}")
    for sign, name in ((1.0, "increasing"), (-1.0, "decreasing")):
        t_nb, (a, sweeps) = best_of(lambda s=sign: sweep_project(g, *pairs, s, 1e-6, 50), 20)
        t_np, (b, _) = best_of(lambda s=sign: sweep_project_numpy(g, *pairs, s, 1e-6, 50), 3)
        assert np.array_equal(a, b)
        print(f"{name:>10}: {sweeps} sweeps | numba {1e3 * t_nb:8.3f} ms | NumPy twin "
              f"{1e3 * t_np:8.1f} ms | speed-up {t_np / t_nb:6.0f}x")
    sign = np.ones(3, dtype=np.int64)
    t_nb, a = best_of(lambda: ordered_pairs(X, sign), 10)
    t_np, b = best_of(lambda: ordered_pairs_numpy(X, sign), 3)
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    print(f"ordered pairs: numba {1e3 * t_nb:8.3f} ms | NumPy twin {1e3 * t_np:8.1f} ms | "
          f"speed-up {t_np / t_nb:6.0f}x")


if __name__ == "__main__":
    main()

"""Full lottery replication (Table 1: M = 100, n = 50/100/200, seven CPT classes + GP + EV),
serial and with two worker processes, side by side; checks that both give identical numbers.

Run: ``python benchmarks/bench_lottery_replication.py [--replications 100]``.
"""

from __future__ import annotations

import argparse
import time

import xarray as xr

import restrictiveness as rx


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replications", type=int, default=100)
    args = parser.parse_args()
    study = rx.lottery.study(replications=args.replications, seed=0)
    rx.lottery.study(replications=2, seed=0).run(progress=False)  # compile / load kernels
    timings, data = {}, {}
    for jobs in (1, 2):
        start = time.perf_counter()
        res = study.run(n_jobs=jobs, progress=False)
        timings[jobs] = time.perf_counter() - start
        data[jobs] = res.dataset.drop_vars(["seconds", "baseline_seconds"]).drop_attrs()
    xr.testing.assert_identical(data[1], data[2])
    print(res.summary())
    print(res.timings().groupby(level="procedure").median().round(4).to_string())
    print(f"\nM = {args.replications}: serial {timings[1]:.1f} s | --jobs 2 {timings[2]:.1f} s | "
          f"speed-up {timings[1] / timings[2]:.2f}x | identical results: yes")


if __name__ == "__main__":
    main()

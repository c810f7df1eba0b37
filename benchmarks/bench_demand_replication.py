"""Full demand replication (Tables 3–4: M = 200 demand systems, n = 50/100/200, MNL + NL + MXL +
logit baseline) with two worker processes: wall time, per-procedure fit times, and the table
beside the paper's. The same as ``python -m restrictiveness replicate demand --jobs 2``.

Run: ``python benchmarks/bench_demand_replication.py [--replications 200] [--n 50 100 200]``.
"""

from __future__ import annotations

import argparse
import time

import restrictiveness as rx
from restrictiveness.cli import main as cli_main


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replications", type=int, default=200)
    parser.add_argument("--out", default="demand_replication.nc")
    parser.add_argument("--n", type=int, nargs="+", default=[50, 100, 200],
                        help="training sizes (default the paper's 50 100 200)")
    args = parser.parse_args()
    start = time.perf_counter()
    status = cli_main(["replicate", "demand", "-M", str(args.replications), "--jobs", "2",
                       "--no-progress", "--out", args.out, "--n", *map(str, args.n)])
    if status:  # the CLI said why; --out is missing or a previous run's
        raise SystemExit(status)
    wall = time.perf_counter() - start
    res = rx.load(args.out)
    print(res.timings().groupby(level=["procedure", "n"]).first().round(3).to_string())
    print(f"\nwall time with --jobs 2: {wall / 60:.1f} min for M = {args.replications}")


if __name__ == "__main__":
    main()

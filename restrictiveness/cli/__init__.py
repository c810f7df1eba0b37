"""Command-line front door: ``python -m restrictiveness <command> ...``.

Each command lives in a module of this package exposing ``register(subparsers)``, which adds its
parser and sets ``func(args) -> int``. Every study command prints a summary and can write its
results with ``--out FILE.nc``.

The top layer: may import every other subpackage.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main", "add_study_options"]

COMMANDS = ("demo", "replicate", "completeness", "sensitivity")


def add_study_options(parser: argparse.ArgumentParser, n: Sequence[int],
                      replications: int | str, seed: int = 0, jobs: int = 1) -> None:
    """Options every study command shares: sample sizes, replications, seed, jobs, output.

    ``replications`` is the default M, or a phrase describing per-command defaults (the option
    then defaults to None and the command resolves it).
    """
    parser.add_argument("--n", type=int, nargs="+", default=list(n), metavar="N",
                        help=f"training sample sizes (default: {' '.join(map(str, n))})")
    parser.add_argument("--replications", "-M", type=int,
                        default=replications if isinstance(replications, int) else None,
                        help=f"pseudo-truths M (default: {replications})")
    parser.add_argument("--seed", type=int, default=seed, help=f"root seed (default: {seed})")
    parser.add_argument("--jobs", "-j", type=int, default=jobs,
                        help=f"worker processes (default {jobs}; -1 for all cores, 1 serial); "
                             "results are identical for any value")
    parser.add_argument("--out", metavar="FILE.nc", help="write the results to NetCDF")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="record finished replications in DIR; rerunning the same command "
                             "resumes a killed run where it stopped")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m restrictiveness",
        description="Restrictiveness and completeness of economic models, machine learners and "
                    "AI workflows (Fudenberg, Gao & You 2026).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from ..shared.exceptions import RestrictivenessError

    try:
        return int(args.func(args) or 0)
    except RestrictivenessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

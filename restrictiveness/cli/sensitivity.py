"""``sensitivity``: bounds and critical Γ* of comparisons in saved results (SPEC §4).

``python -m restrictiveness sensitivity FILE.nc --compare "CPT(delta)-CPT(alpha,gamma,delta)"``
prints Panels A–C (uniform-weight differences, intervals at Γ, critical values) across n and,
with ``--out``, writes them as a NetCDF dataset over comparison × n.
"""

from __future__ import annotations

import argparse

from ..lottery import CPT_CONTRIBUTIONS, CPT_FULL, CPT_SUBMODELS


def register(sub) -> None:
    p = sub.add_parser(
        "sensitivity", help="sensitivity of saved results to the evaluation distribution",
        description="Bounds over density-ratio reweightings of the pseudo-truths (weights with "
                    "mean one in [1/Γ, Γ]) and critical values Γ* for comparisons of saved "
                    "results. A comparison is a procedure label (its restrictiveness), "
                    "'A-B' (r_A − r_B, split at a '-' outside parentheses), or a CPT "
                    "contribution C_alpha, C_gamma, C_delta, e.g. 'C_delta-C_gamma'.")
    p.add_argument("file", metavar="FILE.nc", help="results written by a study's --out")
    p.add_argument("--compare", nargs="+", action="extend", metavar="COMPARISON",
                   help="comparisons (default: the CPT contributions when the results have "
                        "the CPT procedures, else each procedure's own restrictiveness)")
    p.add_argument("--gamma", type=float, default=2.0,
                   help="Γ of the intervals in Panel B (default: 2)")
    p.add_argument("--gamma-max", type=float, default=3.0,
                   help="search limit of the critical values Γ* (default: 3)")
    p.add_argument("--discrepancy", help="discrepancy to use (default: the first one)")
    p.add_argument("--out", metavar="OUT.nc", help="write the sensitivity dataset to NetCDF")
    p.set_defaults(func=run)


def default_comparisons(res) -> list[str]:
    """The results' parameter contributions if they define them, else every procedure alone."""
    spec = res.contribution_spec
    return list(spec.report) if spec is not None else list(res.procedures)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..engine.results import load
    from ..shared.exceptions import DataError

    if not Path(args.file).is_file():
        raise DataError(f"FILE.nc {args.file!r} does not exist; pass results saved with --out")
    res = load(args.file)
    if res.contribution_spec is None and all(
            p in res.procedures for p in (CPT_FULL, *CPT_SUBMODELS.values())):
        res = res.with_contributions(CPT_CONTRIBUTIONS)  # lottery files saved without the spec
    comparisons = args.compare or default_comparisons(res)
    print(res.sensitivity_summary(comparisons, gamma=args.gamma, gamma_max=args.gamma_max,
                                  discrepancy=args.discrepancy))
    if args.out:
        res.sensitivity_dataset(comparisons, gamma=args.gamma, gamma_max=args.gamma_max,
                                discrepancy=args.discrepancy).to_netcdf(args.out,
                                                                         engine="netcdf4")
        print(f"\nsensitivity dataset written to {args.out}")
    return 0

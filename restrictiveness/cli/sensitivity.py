"""``sensitivity``: bounds and critical Γ* of comparisons in saved results (SPEC §4).

``python -m restrictiveness sensitivity FILE.nc --compare "CPT(delta)-CPT(alpha,gamma,delta)"``
prints Panels A–C (uniform-weight differences, intervals at Γ, critical values) across n and,
with ``--out``, writes them as a NetCDF dataset over comparison × n.
"""

from __future__ import annotations

import argparse

from ..lottery import CPT_CONTRIBUTIONS, CPT_FULL, CPT_SUBMODELS
from ..shared.exceptions import ConfigurationError
from ..shared.files import atomic_output
from .options import Outputs, add_command, add_output_options, input_file, real


def register(sub) -> None:
    p = add_command(
        sub, "sensitivity", help="sensitivity of saved results to the evaluation distribution",
        description="Bounds over density-ratio reweightings of the pseudo-truths (weights with "
                    "mean one in [1/Γ, Γ]) and critical values Γ* for comparisons of saved "
                    "results. A comparison is a procedure label (its restrictiveness), "
                    "'A-B' (r_A − r_B, split at a '-' outside parentheses), or a CPT "
                    "contribution C_alpha, C_gamma, C_delta, e.g. 'C_delta-C_gamma'.",
        examples=["sensitivity lottery.nc",
                  "sensitivity lottery.nc --compare 'CPT(delta)-CPT(alpha,gamma,delta)' "
                  "--gamma 2 --out sens.nc --plot sens.png",
                  "sensitivity demand.nc --discrepancy shares --compare MNL-NL MNL-MXL"])
    p.add_argument("file", metavar="FILE.nc", type=input_file,
                   help="results written by a study's --out")
    p.add_argument("--compare", nargs="+", action="extend", metavar="COMPARISON",
                   help="comparisons (default: the CPT contributions when the results have "
                        "the CPT procedures, else each procedure's own restrictiveness)")
    p.add_argument("--gamma", type=real(1.0, what="Γ = 1 is uniform weights"), default=2.0,
                   help="Γ ≥ 1 of the intervals in Panel B (default: 2)")
    p.add_argument("--gamma-max", type=real(1.0, inclusive=False), default=3.0,
                   help="search limit of the critical values Γ*, above 1 (default: 3)")
    p.add_argument("--discrepancy", help="discrepancy to use (default: the first one)")
    add_output_options(p, strict=False)
    p.set_defaults(func=run)


def default_comparisons(res) -> list[str]:
    """The results' parameter contributions if they define them, else every procedure alone."""
    spec = res.contribution_spec
    return list(spec.report) if spec is not None else list(res.procedures)


def run(args: argparse.Namespace) -> int:
    from ..engine.results import load

    with Outputs(args) as outputs:
        res = load(args.file)
        if res.contribution_spec is None and all(
                p in res.procedures for p in (CPT_FULL, *CPT_SUBMODELS.values())):
            res = res.with_contributions(CPT_CONTRIBUTIONS)  # lottery files saved without spec
        comparisons = args.compare or default_comparisons(res)
        if args.plot and len(comparisons) != 1:
            raise ConfigurationError("--plot draws one comparison: give exactly one --compare")
        options = dict(gamma=args.gamma, gamma_max=args.gamma_max,
                       discrepancy=args.discrepancy)
        summary = res.sensitivity_summary(comparisons, **options)
        print(summary)

        def netcdf(path) -> None:
            with atomic_output(path) as tmp:
                res.sensitivity_dataset(comparisons, **options).to_netcdf(tmp, engine="netcdf4")

        outputs.write(res, summary, netcdf=netcdf, table=lambda: res.sensitivity_dataset(
            comparisons, **options).to_dataframe(), plot=lambda ax: res.plot_sensitivity(
            comparisons[0], gamma_max=args.gamma_max, discrepancy=args.discrepancy, ax=ax))
    return 0

"""``replicate lottery|demand``: the paper's restrictiveness tables, printed beside its values."""

from __future__ import annotations

import argparse
import importlib.util
import json
from importlib import resources
from pathlib import Path

import numpy as np

from ..shared.exceptions import ConfigurationError
from . import add_study_options

#: Default replications: about a minute on 2 cores for each application.
QUICK_M = {"lottery": 100, "demand": 6}


def register(sub) -> None:
    p = sub.add_parser(
        "replicate", help="replicate the paper's restrictiveness tables (lottery or demand)",
        description="Run the paper's procedures on its evaluation distribution and print a "
                    "table of restrictiveness r̂ (se) by procedure and n beside the paper's.")
    p.add_argument("application", choices=["lottery", "demand"])
    add_study_options(p, n=(50, 100, 200), jobs=-1,
                      replications=f"lottery {QUICK_M['lottery']}, the paper's M; demand "
                                   f"{QUICK_M['demand']}, a quick run (the paper's M = 200 "
                                   "takes about half an hour on 2 cores)")
    p.add_argument("--draws", type=int, default=1, metavar="K",
                   help="training samples per pseudo-truth (within-function averaging, K)")
    p.add_argument("--procedures", metavar="FILE.py",
                   help="extra procedures: a Python file defining PROCEDURES = {label: procedure}")
    p.add_argument("--only", nargs="+", metavar="LABEL",
                   help="run only these built-in procedures (default: all)")
    p.set_defaults(func=run)


def load_procedures(path: str) -> dict:
    """The ``PROCEDURES`` dict of a user's Python file."""
    file = Path(path)
    if not file.is_file():
        raise ConfigurationError(f"--procedures: no file {path!r}")
    spec = importlib.util.spec_from_file_location(f"user_procedures_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error in the user's file is a usage error
        raise ConfigurationError(f"--procedures: running {path!r} failed: "
                                 f"{type(exc).__name__}: {exc}") from exc
    procs = getattr(module, "PROCEDURES", None)
    if not isinstance(procs, dict) or not procs:
        raise ConfigurationError(f"--procedures: {path!r} must define a nonempty dict "
                                 "PROCEDURES = {label: procedure}")
    return procs


def reference_tables() -> dict:
    """The paper's result tables as transcribed in ``restrictiveness/data``."""
    text = resources.files("restrictiveness").joinpath("data/reference_tables.json").read_text()
    return json.loads(text)


def _paper_lottery() -> dict[str, dict[int, float]]:
    ref = reference_tables()
    table = ref["table_1_restrictiveness_lottery"]
    out = {k: dict(zip(table["n"], v, strict=True)) for k, v in table["values"].items()}
    for label, row in ref["table_A3_lottery_n100"]["values"].items():
        out.setdefault(label, {})[100] = row[0]
    return out


def _paper_demand() -> dict[tuple[str, str], dict[int, float]]:
    table = reference_tables()["table_4_demand_profiles"]
    out = {}
    for model, rows in table["shares_own_cross"].items():
        for d, disc in enumerate(("shares", "own", "cross")):
            out[(model, disc)] = {n: rows[i][d] for i, n in enumerate(table["n"])}
    return out


def _comparison(res, paper: dict, discrepancy: str, key=lambda p, d: p) -> str:
    lines = [f"{'procedure':<24}" + "".join(f"{'n=' + str(n):>22}" for n in res.ns)]
    lines.append(f"{'':<24}" + "".join(f"{'ours (se) / paper':>22}" for _ in res.ns))
    for p in res.procedures:
        cells = []
        for n in res.ns:
            r = float(res.restrictiveness.sel(procedure=p, n=n, discrepancy=discrepancy))
            se = float(res.se.sel(procedure=p, n=n, discrepancy=discrepancy))
            ref = paper.get(key(p, discrepancy), {}).get(n)
            cells.append(f"{r:.3f} ({se:.3f}) / " + (f"{ref:.3f}" if ref is not None else "  -  "))
        lines.append(f"{p:<24}" + "".join(f"{c:>22}" for c in cells))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    extra = load_procedures(args.procedures) if args.procedures else {}
    if args.application == "lottery":
        from .. import lottery as app

        builtin = app.table1_procedures()
    else:
        from .. import demand as app

        builtin = app.table3_procedures()
    if args.only:
        unknown = [k for k in args.only if k not in builtin]
        if unknown:
            raise ConfigurationError(f"--only: unknown procedure(s) {unknown}; built-ins are "
                                     f"{list(builtin)}")
        builtin = {k: builtin[k] for k in args.only}
    clash = sorted(set(extra) & set(builtin))
    if clash:
        raise ConfigurationError(f"--procedures: labels {clash} clash with built-in procedures")
    replications = args.replications or QUICK_M[args.application]
    study = app.study(procedures={**builtin, **extra}, n=args.n, replications=replications,
                      seed=args.seed, draws=args.draws)
    res = study.run(n_jobs=args.jobs, progress=False if args.no_progress else None,
                    checkpoint=args.checkpoint)
    print(res.summary())
    if args.application == "lottery":
        print("\nComparison with the paper (Table 1 / Table A.3):")
        print(_comparison(res, _paper_lottery(), "mse"))
        full = {"CPT(alpha,gamma,delta)", "CPT(gamma,delta)", "CPT(alpha,delta)",
                "CPT(alpha,gamma)"}
        if full <= set(res.procedures):
            print("\nCPT parameter contributions C_q = r(-q) - r(full), paired SEs:")
            print(res.contributions().round(4).to_string())
    else:
        paper = _paper_demand()
        for disc in res.discrepancies:
            print(f"\nComparison with the paper (Table 4), discrepancy {disc}:")
            print(_comparison(res, paper, disc, key=lambda p, d: (p, d)))
        pairs = [(a, "MNL") for a in ("NL", "MXL") if a in res.procedures and
                 "MNL" in res.procedures]
        for a, b in pairs:
            for disc in res.discrepancies:
                c = res.contrast(a, b, disc)
                cells = ", ".join(f"n={n}: {c.loc[n, 'estimate']:+.3f} ({c.loc[n, 'se']:.3f})"
                                  for n in res.ns)
                print(f"{a} - {b} [{disc}]: {cells}")
    fails = res.failures()
    if fails["failed"].sum():
        print(f"\nfailed fits (baseline used): {int(fails['failed'].sum())}")
    secs = float(np.nansum(res.dataset["seconds"].values))
    print(f"\nfit time (all procedures, summed over replications): {secs:.1f} s")
    if args.out:
        res.to_netcdf(args.out)
        print(f"results written to {args.out}")
    return 0

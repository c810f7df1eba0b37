"""``replicate lottery|demand``: the paper's restrictiveness tables, printed beside its values."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from importlib import resources
from pathlib import Path

import numpy as np

from ..engine.results import all_failed
from ..shared.exceptions import ConfigurationError
from .options import (
    Outputs,
    add_command,
    add_study_options,
    check_study_args,
    count,
    estimates_table,
    input_file,
    run_study,
    study_status,
)

#: Default replications: about a minute on 2 cores for each application.
QUICK_M = {"lottery": 100, "demand": 6}


def register(sub) -> None:
    p = add_command(
        sub, "replicate", help="replicate the paper's restrictiveness tables (lottery or demand)",
        description="Run the paper's procedures on its evaluation distribution and print a "
                    "table of restrictiveness r̂ (se) by procedure and n beside the paper's, "
                    "with z = (ours − paper) / combined se.",
        examples=["replicate lottery",
                  "replicate lottery -M 100 --checkpoint ck --out lottery.nc --table latex t1.tex",
                  "replicate demand -M 200 --jobs -1 --out demand.nc",
                  "replicate lottery --only 'GP regression' --procedures my_procs.py"])
    p.add_argument("application", choices=["lottery", "demand"])
    add_study_options(p, n=(50, 100, 200), jobs_default=-1,
                      replications=f"lottery {QUICK_M['lottery']}, the paper's M; demand "
                                   f"{QUICK_M['demand']}, a quick run (the paper's M = 200 "
                                   "takes about half an hour on 2 cores)")
    p.add_argument("--draws", type=count(1), default=1, metavar="K",
                   help="training samples per pseudo-truth (within-function averaging, K)")
    p.add_argument("--procedures", metavar="FILE.py", type=input_file,
                   help="extra procedures: a Python file defining PROCEDURES = {label: procedure}")
    p.add_argument("--only", nargs="+", metavar="LABEL",
                   help="run only these built-in procedures (default: all)")
    p.set_defaults(func=run)


def load_procedures(path: str) -> dict:
    """The ``PROCEDURES`` dict of a user's Python file."""
    file, path = Path(path), str(path)
    if not file.is_file():
        raise ConfigurationError(f"--procedures: no file {path!r}")
    if file.suffix != ".py":
        raise ConfigurationError(f"--procedures: {path!r} is not a Python file (.py)")
    spec = importlib.util.spec_from_file_location(f"user_procedures_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any error in the user's file
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


#: The paper's M, for the z-scores where it publishes no standard error.
PAPER_M = {"lottery": 100, "demand": 200}


def _paper_lottery() -> dict[str, dict[int, tuple[float, float | None]]]:
    """``{label: {n: (r, se)}}``: Table 1 (no se) and Table A.3 (n = 100, with se)."""
    ref = reference_tables()
    table = ref["table_1_restrictiveness_lottery"]
    out = {k: {n: (v, None) for n, v in zip(table["n"], row, strict=True)}
           for k, row in table["values"].items()}
    for label, row in ref["table_A3_lottery_n100"]["values"].items():
        out.setdefault(label, {})[100] = (row[0], row[1])
    return out


def _paper_demand() -> dict[tuple[str, str], dict[int, tuple[float, float | None]]]:
    """``{(label, discrepancy): {n: (r, se)}}``: Table 4, with Table 3's se at n = 100."""
    ref = reference_tables()
    table, se100 = ref["table_4_demand_profiles"], ref["table_3_demand_n100"]["values"]
    out = {}
    for model, rows in table["shares_own_cross"].items():
        for d, disc in enumerate(("shares", "own", "cross")):
            out[(model, disc)] = {
                n: (rows[i][d], se100[model][2 * d + 1] if n == 100 and model in se100 else None)
                for i, n in enumerate(table["n"])}
    return out


def _comparison(res, paper: dict, discrepancy: str, paper_m: int, key=lambda p, d: p) -> str:
    """Ours beside the paper's, with z = (ours − paper) / √(se² + se_paper²). Where the paper
    publishes no se, it is taken as ours × √(M_ours / M_paper) (same estimator, its M), and the
    z is marked ``~``."""
    width = 30
    lines = [f"{'procedure':<24}" + "".join(f"{'n=' + str(n):>{width}}" for n in res.ns)]
    lines.append(f"{'':<24}" + "".join(f"{'ours (se) / paper, z':>{width}}" for _ in res.ns))
    fails = res.failures()
    for p in res.procedures:
        cells = []
        for n in res.ns:
            if all_failed(fails.loc[(p, n)]):
                cells.append("failed")
                continue
            r = float(res.restrictiveness.sel(procedure=p, n=n, discrepancy=discrepancy))
            se = float(res.se.sel(procedure=p, n=n, discrepancy=discrepancy))
            ref, ref_se = paper.get(key(p, discrepancy), {}).get(n, (None, None))
            cell = f"{r:.3f} ({se:.3f}) / "
            if ref is None:
                cells.append(cell + "  -  ")
                continue
            approx = ref_se is None
            if approx:
                ref_se = se * np.sqrt(res.replications / paper_m)
            combined = np.hypot(se, ref_se)
            z = (r - ref) / combined if combined > 0 else np.nan
            cells.append(cell + f"{ref:.3f}, {'~' if approx else ''}z={z:+.1f}")
        lines.append(f"{p:<24}" + "".join(f"{c:>{width}}" for c in cells))
    lines.append(f"z = (ours − paper) / √(se² + se_paper²); ~: the paper gives no se there, so "
                 f"se_paper = se × √(M / {paper_m}) (its M). |z| > 2 is a notable difference.")
    return "\n".join(lines)


def _procedures(args: argparse.Namespace, app) -> dict:
    """The built-in procedures (``--only``) and the user's (``--procedures``)."""
    extra = load_procedures(args.procedures) if args.procedures else {}
    builtin = app.table1_procedures() if args.application == "lottery" \
        else app.table3_procedures()
    if args.only:
        unknown = [k for k in args.only if k not in builtin]
        if unknown:
            raise ConfigurationError(f"--only: unknown procedure(s) {unknown}; built-ins are "
                                     f"{list(builtin)}")
        builtin = {k: builtin[k] for k in args.only}
    clash = sorted(set(extra) & set(builtin))
    if clash:
        raise ConfigurationError(f"--procedures: labels {clash} clash with built-in procedures")
    return {**builtin, **extra}


def run(args: argparse.Namespace) -> int:
    check_study_args(args)
    if args.application == "lottery":
        from .. import lottery as app
    else:
        from .. import demand as app
    quick = args.replications is None and args.application == "demand"
    replications = args.replications or QUICK_M[args.application]
    with Outputs(args) as outputs:
        study = app.study(procedures=_procedures(args, app), n=args.n,
                          replications=replications, seed=args.seed, draws=args.draws)
        if quick:
            print(QUICK_NOTE, file=sys.stderr)
        res = run_study(study, args)
        print(res.summary())
        _print_comparisons(res, args.application)
        if quick:
            print("\n" + QUICK_NOTE)
        secs = float(np.nansum(res.dataset["seconds"].values))
        print(f"\nfit time (all procedures, summed over replications): {secs:.1f} s")
        outputs.write(res, res.summary(), table=lambda: estimates_table(res),
                      plot=lambda ax: res.plot_profile(ax=ax))
    return study_status(res, args)


QUICK_NOTE = (f"note: replicate demand runs M = {QUICK_M['demand']} by default, a one-minute "
              "look: too few replications to match the paper's Table 4 (M = 200; run -M 200, "
              "about half an hour on 2 cores)")


def _print_comparisons(res, application: str) -> None:
    if application == "lottery":
        print("\nComparison with the paper (Table 1 / Table A.3):")
        print(_comparison(res, _paper_lottery(), "mse", PAPER_M["lottery"]))
        full = {"CPT(alpha,gamma,delta)", "CPT(gamma,delta)", "CPT(alpha,delta)",
                "CPT(alpha,gamma)"}
        if full <= set(res.procedures):
            print("\nCPT parameter contributions C_q = r(-q) - r(full), paired SEs:")
            print(res.contributions().round(4).to_string())
        return
    paper = _paper_demand()
    for disc in res.discrepancies:
        print(f"\nComparison with the paper (Table 4), discrepancy {disc}:")
        print(_comparison(res, paper, disc, PAPER_M["demand"], key=lambda p, d: (p, d)))
    pairs = [(a, "MNL") for a in ("NL", "MXL") if a in res.procedures and
             "MNL" in res.procedures]
    for a, b in pairs:
        for disc in res.discrepancies:
            c = res.contrast(a, b, disc)
            cells = ", ".join(f"n={n}: {c.loc[n, 'estimate']:+.3f} ({c.loc[n, 'se']:.3f})"
                              for n in res.ns)
            print(f"{a} - {b} [{disc}]: {cells}")

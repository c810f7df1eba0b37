"""``replicate lottery|demand``: the paper's restrictiveness tables, printed beside its values;
with ``--llm`` the language-model procedures of its Table 2 design, with their calls, tokens
and cost."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from importlib import resources
from pathlib import Path

import numpy as np

from ..engine.protocol import Procedure
from ..engine.results import all_failed
from ..shared.checks import repeated
from ..shared.exceptions import ConfigurationError
from .options import (
    Outputs,
    add_command,
    add_study_options,
    check_study_args,
    count,
    estimates_table,
    input_file,
    real,
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
                                   "takes about 20 minutes on 2 cores)")
    p.add_argument("--draws", type=count(1), default=1, metavar="K",
                   help="training samples per pseudo-truth (within-function averaging, K)")
    p.add_argument("--procedures", metavar="FILE.py", type=input_file,
                   help="extra procedures: a Python file defining PROCEDURES = {label: procedure}")
    p.add_argument("--only", nargs="+", metavar="LABEL",
                   help="run only these built-in procedures (default: all)")
    p.add_argument("--mxl", choices=["paper", "converged"],
                   help="demand: the mixed logit's fit — 'paper' (default), scipy's dogbox "
                        "under 400 evaluations per fit as in the paper, which reproduces "
                        "Tables 3-4; 'converged', the package default MixedLogit(), which "
                        "converges to the optimum (cross-price r̂ about 0.08 above the paper's)")
    add_llm_options(p)
    p.set_defaults(func=run)


#: What the language-model procedures predict, by application.
LLM_TARGETS = {"lottery": "certainty equivalents", "demand": "market shares"}
#: Default threads for language-model fits when --llm is given.
LLM_CONCURRENCY = 16


def add_llm_options(parser: argparse.ArgumentParser) -> None:
    """The options of the language-model procedures (the paper's Table 2 design)."""
    g = parser.add_argument_group(
        "language-model procedures (the paper's Table 2 design)",
        "Add Completion (one call per fit) for each prompt design, and with --agent the Agent "
        "(code execution, up to --rounds tool rounds), beside the built-ins. Model calls run "
        "on --concurrency threads; calls, tokens and cost are printed with the table.")
    g.add_argument("--llm", metavar="PROVIDER:MODEL",
                   help="openai:MODEL (OpenAI, or any OpenAI-compatible server with "
                        "--base-url) or anthropic:MODEL")
    g.add_argument("--base-url", metavar="URL", help="the endpoint (e.g. a vLLM server's "
                   "http://localhost:8000/v1); a server other than the provider's needs no key")
    g.add_argument("--api-key-env", metavar="NAME", help="environment variable holding the "
                   "API key (default OPENAI_API_KEY or ANTHROPIC_API_KEY)")
    g.add_argument("--prompts", nargs="+", metavar="DESIGN", default=None,
                   help="prompt designs of Table 2: neutral (default), econometrician, "
                        "economic-model, data-scientist, machine-learning, or all (lottery)")
    g.add_argument("--agent", action="store_true", help="also run the Agent for each design")
    g.add_argument("--rounds", type=count(1), default=None, metavar="R",
                   help="the Agent's tool-round budget (default 20, the paper's)")
    g.add_argument("--tool-protocol", choices=("auto", "native", "text"), default=None,
                   help="how the Agent runs code: the endpoint's tool calls (native; auto, "
                        "the default, uses them), or fenced code blocks (text), for a server "
                        "without tool support")
    g.add_argument("--temperature", type=real(0.0), default=None,
                   help="sampling temperature (0 to 2; anthropic: 0 to 1)")
    g.add_argument("--max-tokens", type=count(1), default=None, metavar="N",
                   help="output tokens per reply (anthropic default 32000, the paper's)")
    g.add_argument("--concurrency", type=count(1), default=None, metavar="T",
                   help=f"threads for model fits (default {LLM_CONCURRENCY} with --llm)")
    g.add_argument("--requests-per-minute", type=real(0.0, inclusive=False), default=None,
                   metavar="R",
                   help="limit on model requests per minute")
    g.add_argument("--cache", metavar="DIR", help="reply cache: a rerun makes no model calls")
    g.add_argument("--price", nargs=2, type=real(0.0), default=None, metavar=("IN", "OUT"),
                   help="dollars per million input and output tokens, for the cost")
    g.add_argument("--dry-run", action="store_true",
                   help="count the calls and estimate the tokens the run would spend, then "
                        "stop (nothing is sent to the model)")


_LLM_ONLY = ("base_url", "api_key_env", "prompts", "agent", "rounds", "tool_protocol",
             "temperature", "max_tokens", "cache", "price", "dry_run")


def llm_procedures(args: argparse.Namespace, application: str) -> dict:
    """The Completion (and Agent) procedures asked for by the --llm options."""
    from ..ai import llm

    if args.llm is None:
        given = [f"--{name.replace('_', '-')}" for name in _LLM_ONLY
                 if getattr(args, name) not in (None, False)]
        if given:
            raise ConfigurationError(f"{', '.join(given)}: only with --llm PROVIDER:MODEL")
        return {}
    provider, _, model = args.llm.partition(":")
    adapters = {"openai": llm.OpenAIChat, "anthropic": llm.AnthropicChat}
    if provider not in adapters or not model:
        raise ConfigurationError(f"--llm: expected openai:MODEL or anthropic:MODEL, got "
                                 f"{args.llm!r}")
    options = {"base_url": args.base_url, "temperature": args.temperature}
    if args.api_key_env:
        options["api_key_env"] = args.api_key_env
    if args.max_tokens is not None:
        options["max_tokens"] = args.max_tokens
    client = adapters[provider](model, **options)
    if not args.dry_run:
        try:
            client.check_api_key()
        except ConfigurationError as exc:  # "pass api_key=" means nothing on a command line
            raise ConfigurationError(str(exc).replace(
                "or pass api_key=", "(or name another with --api-key-env NAME)")) from None
    designs = args.prompts or ["neutral"]
    if "all" in designs and len(designs) > 1:  # was "unknown design(s) ['all'] ... or all"
        raise ConfigurationError(f"--prompts: 'all' names every design and stands alone, got "
                                 f"{' '.join(designs)}")
    twice = sorted(repeated(designs))
    if twice:  # each design is one procedure: it ran once, without a word
        raise ConfigurationError(f"--prompts names {twice} more than once; name each design "
                                 "once")
    designs = list(llm.PROMPTS) if designs == ["all"] else designs
    unknown = [d for d in designs if d not in llm.PROMPTS]
    if unknown:
        raise ConfigurationError(f"--prompts: unknown design(s) {unknown}; choose from "
                                 f"{list(llm.PROMPTS)} or all")
    if application == "demand" and designs != ["neutral"]:
        raise ConfigurationError("--prompts: the designs of Table 2 speak of risk preferences; "
                                 "the demand application uses the neutral prompt only")
    for option in ("rounds", "tool_protocol"):
        if getattr(args, option) is not None and not args.agent:
            raise ConfigurationError(f"--{option.replace('_', '-')}: only with --agent")
    target = LLM_TARGETS[application]
    procs: dict[str, Procedure] = {}
    for design in designs:
        suffix = "" if design == "neutral" else f" ({design})"
        procs[f"Completion{suffix}"] = llm.Completion(client, design, target=target,
                                                      cache=args.cache)
        if args.agent:
            # a server without tool support refused every native request (HTTP 400), and
            # the command line had no way to the text protocol
            procs[f"Agent{suffix}"] = llm.Agent(client, design, target=target, cache=args.cache,
                                                rounds=20 if args.rounds is None
                                                else args.rounds,
                                                tool_protocol=args.tool_protocol or "auto")
    return procs


def _prices(args: argparse.Namespace) -> dict | None:
    if args.price is None:
        return None
    return {args.llm.partition(":")[2]: tuple(args.price)}


def print_dry_run(study, args: argparse.Namespace) -> None:
    """What the run would spend on model calls (nothing is sent)."""
    from ..ai.budget import plan_calls

    # a run given a checkpoint computes only the replications it does not hold: the dry run
    # counted all of them (3 calls for a resumed run that made none)
    done = [] if args.checkpoint is None else study.finished(args.checkpoint,
                                                             args.resume_other_versions)
    held_set = set(done)
    todo = [m for m in range(study.replications) if m not in held_set]
    plan = plan_calls(study, _prices(args), replications=todo)
    held = f" ({len(done)} finished in the checkpoint)" if done else ""
    print(f"Dry run: {len(todo)} of {study.replications} replications to compute{held}, "
          f"n = {study.n}; no model was called.")
    print(plan.to_string())
    print(f"\nmodel calls: {int(plan['calls_min'].sum())} to {int(plan['calls_max'].sum())} "
          f"({int(plan['cached'].sum())} fits answered by the cache); estimated input tokens "
          f"of the first requests: {int(plan['input_tokens'].sum()):,}")
    if "cost_min" in plan:
        print(f"input cost of those requests: {dollars(plan['cost_min'].sum())} (replies and "
              "agent turns add to it)")


def check_prices(study, args: argparse.Namespace) -> None:
    """Refuse, before anything is spent, a --price that cannot price every language-model
    procedure's model (a --procedures file may add models other than --llm's)."""
    from ..engine.usage import price_per_token

    prices = _prices(args)
    if prices is None:
        return
    for label, proc in study.procedures.items():
        if hasattr(proc, "first_request"):
            try:
                price_per_token(prices, proc.model)
            except ConfigurationError as exc:
                raise ConfigurationError(f"--price prices the --llm model only, and procedure "
                                         f"{label!r} asks {proc.model!r} ({exc}); leave --price "
                                         "out, or run that procedure apart") from None


def print_usage(res, args: argparse.Namespace) -> None:
    """Calls, tokens and cost of the language-model procedures of a finished run."""
    try:
        usage = res.usage(_prices(args))
    except ConfigurationError as exc:
        # a model the price does not cover (a procedure recording usage under its own model):
        # the run is done and its results are still to be written, so no cost, and why
        print(f"\ncost not computed: {exc}")
        usage = res.usage()
    if usage.empty:
        return
    print("\nLanguage-model usage (calls made; cached replies are free):")
    table = usage.round(3)
    if "cost" in usage:  # a pilot run's $0.0004 showed as 0.000
        table["cost"] = usage["cost"].round(6)
    print(table.to_string())
    total = usage.sum(skipna=False)
    line = (f"total: {int(total['calls'])} calls ({int(total['cached_calls'])} cached, "
            f"{int(total['retries'])} retries), ")
    unreported = int(total["unreported_calls"])
    if unreported:
        # the reported counts alone would understate tokens and cost
        line += (f"tokens and cost unknown: the endpoint did not report the token counts of "
                 f"{unreported} call{'s' if unreported > 1 else ''}")
    else:
        line += (f"{int(total['input_tokens']):,} input and {int(total['output_tokens']):,} "
                 "output tokens")
        if "cost" in usage:
            line += f", {dollars(total['cost'])}"
    print(line)


def dollars(cost: float) -> str:
    """A cost in dollars: cents from a dollar up, else four decimals (a pilot run's $0.0123
    was printed as $0.01, and $0.004 as $0.00).

    Examples
    --------
    >>> dollars(1234.567), dollars(0.0123), dollars(0.0)
    ('$1,234.57', '$0.0123', '$0.00')
    """
    return f"${cost:,.2f}" if cost >= 0.995 or cost == 0 else f"${cost:.4f}"


def load_procedures(path: str) -> dict:
    """The ``PROCEDURES`` dict of a user's Python file."""
    file, path = Path(path), str(path)
    if not file.is_file():
        raise ConfigurationError(f"--procedures: no file {path!r}")
    if file.suffix != ".py":
        raise ConfigurationError(f"--procedures: {path!r} is not a Python file (.py)")
    spec = importlib.util.spec_from_file_location(f"user_procedures_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"--procedures: Python cannot load {path!r}")
    module = importlib.util.module_from_spec(spec)
    # registered, as an import would: a checkpoint fingerprints the file by its module
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - any error in the user's file
        sys.modules.pop(spec.name, None)
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
    out: dict[str, dict[int, tuple[float, float | None]]] = {
        k: {n: (v, None) for n, v in zip(table["n"], row, strict=True)}
        for k, row in table["values"].items()}
    for label, row in ref["table_A3_lottery_n100"]["values"].items():
        out.setdefault(label, {})[100] = (row[0], row[1])
    for proc, designs in ref["table_A7_prompts_lottery_n100"]["values"].items():
        for design, (value, se) in designs.items():
            if design != "neutral":  # labelled as llm_procedures labels them
                out[f"{proc} ({design})"] = {100: (value, se)}
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
    w = max(24, 2 + max(len(p) for p in res.procedures))
    rows = [["n=" + str(n) for n in res.ns], ["ours (se) / paper, z" for _ in res.ns]]
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
        rows.append(cells)
    # columns as wide as their widest cell, two spaces apart (a "~z" cell is one wider)
    width = max(len(c) for row in rows for c in row)
    lines = [f"{label:<{w}}" + "".join(f"  {c:>{width}}" for c in row)
             for label, row in zip(["procedure", "", *res.procedures], rows, strict=True)]
    lines.append(f"z = (ours − paper) / √(se² + se_paper²); ~: the paper gives no se there, so "
                 f"se_paper = se × √(M / {paper_m}) (its M). |z| > 2 is a notable difference.")
    return "\n".join(lines)


#: What the demand report says of the mixed logit's fit, by ``--mxl``.
MXL_NOTES = {
    "paper": "MXL fit: paper setting, budget-limited scipy dogbox (400 residual evaluations per "
             "fit, MixedLogit(**PAPER_MXL)); the package default MixedLogit() converges to the "
             "optimum and gives cross-price r̂ ≈ 0.48 at n = 100 (--mxl converged)",
    "converged": "MXL fit: the package default MixedLogit(), converged to the optimum; the "
                 "paper's budget-limited dogbox fits give cross-price r̂ ≈ 0.08 lower "
                 "(--mxl paper, the default here)"}


def _demand_report(res, draws: int, mxl: str = "paper") -> None:
    """Tables 3–4 beside the paper's, the NL/MXL − MNL contrasts and, with K > 1 training
    samples per system, Tables A.15–A.19."""
    from ..demand.tables import first_draw

    if "MXL" in res.procedures:
        print("\n" + MXL_NOTES[mxl])
    paper = _paper_demand()
    one = first_draw(res) if draws > 1 else res
    note = " (K = 1: each system's first training sample)" if draws > 1 else ""
    for disc in one.discrepancies:
        print(f"\nComparison with the paper (Table 4), discrepancy {disc}{note}:")
        print(_comparison(one, paper, disc, PAPER_M["demand"], key=lambda p, d: (p, d)))
    pairs = [(a, "MNL") for a in ("NL", "MXL") if a in res.procedures and
             "MNL" in res.procedures]
    for a, b in pairs:
        for disc in res.discrepancies:
            c = res.contrast(a, b, disc)
            cells = ", ".join(f"n={n}: {c.loc[n, 'estimate']:+.3f} ({c.loc[n, 'se']:.3f})"
                              for n in res.ns)
            print(f"{a} - {b} [{disc}]: {cells}")
    if draws > 1:
        _within_function_report(res, draws)


def _num(v) -> str:
    """A transcribed critical value: '> 3', '1' (already ≤ 0 at uniform weights) or 2.947."""
    return v if isinstance(v, str) else ("1" if v == 1 else f"{v:.3f}")


def _sens_cell(sel, estimate: bool = True) -> str:
    """``difference [lower, upper] Γ*`` of one comparison and n of a sensitivity Dataset."""
    from ..engine.sensitivity import format_critical

    head = f"{float(sel['estimate']):.3f} " if estimate else ""
    return (f"{head}[{float(sel['lower']):.3f}, {float(sel['upper']):.3f}] "
            f"{format_critical(float(sel['critical_gamma']))}")


def _paper_cell(p: dict, i: int | None = None) -> str:
    """The same cell from a transcribed table entry (``i``: index of n, None: one n)."""
    pick = (lambda v: v) if i is None else (lambda v: v[i])
    head = f"{pick(p['estimate']):.3f} " if "estimate" in p else ""
    lo, hi = pick(p["interval"])
    return f"{head}[{lo:.3f}, {hi:.3f}] {_num(pick(p['critical_gamma']))}"


def _within_function_report(res, draws: int) -> None:
    """Tables A.18, A.15–A.17 and A.19 (structural models) beside the paper's (K = 20)."""
    from ..demand.tables import first_draw, structural_sensitivity, within_function_table

    ref = reference_tables()
    k = f"K={draws}"
    if 100 in res.ns:
        table = within_function_table(res, n=100)
        a18 = ref["table_A18_within_function_averaging"]
        print(f"\nTable A.18 (n = 100): restrictiveness with K = 1 and {k}; ours | paper "
              "(K = 1, K = 20, change)")
        for (disc, proc), row in table.iterrows():
            p = a18.get(disc, {}).get(proc)
            paper = " | " + " ".join(f"{v:+.4f}" if i == 2 else f"{v:.4f}"
                                     for i, v in enumerate(p)) if p else ""
            print(f"  {disc:<7}{proc:<10}{row['K=1']:.4f} {row[k]:.4f} {row['change']:+.4f}"
                  + paper)
        changes = []
        one, many = first_draw(res).restrictiveness, res.restrictiveness
        for p in ("MNL", "NL", "MXL"):
            if p in res.procedures:
                changes.extend(abs(many.sel(procedure=p) - one.sel(procedure=p)).values.ravel())
        if changes:
            print(f"  |change| over the structural estimates (all n): median "
                  f"{np.median(changes):.4f}, largest {np.max(changes):.4f} (paper, 27 "
                  f"estimates: {a18['median_abs_change_27']:.4f}, {a18['max_abs_change_27']:.4f})")
    sens = ref["table_A15_A17_sensitivity_K20"]
    names = {"shares": "A.15", "own": "A.16", "cross": "A.17"}
    ours = structural_sensitivity(res)
    for disc, ds in ours.items():
        print(f"\nTable {names[disc]} ({disc}, {k}): difference, interval at Γ = 2 and Γ*; "
              "ours / paper")
        for comp in ds["comparison"].values:
            comp = str(comp)
            p = sens[disc].get(comp)
            for n in res.ns:
                cell = _sens_cell(ds.sel(comparison=comp, n=n))
                if p is not None and n in sens["n"]:
                    cell += "  /  " + _paper_cell(p, sens["n"].index(n))
                print(f"  {comp:<9} n={n:<4} {cell}")
    if 100 in res.ns:
        a19 = ref["table_A19_within_function_sensitivity"]
        ones = structural_sensitivity(first_draw(res))
        print(f"\nTable A.19 (n = 100): interval at Γ = 2 and Γ* with K = 1 and {k}; ours / "
              "paper")
        for disc, ds in ours.items():
            for comp in ds["comparison"].values:
                comp = str(comp)
                cells = [_sens_cell(view.sel(comparison=comp, n=100), estimate=False)
                         for view in (ones[disc], ds)]
                p = a19.get(disc, {}).get(comp)
                paper = ("  /  " + "   ".join(_paper_cell(p[c]) for c in ("K1", "K20"))
                         if p else "")
                print(f"  {comp + ', ' + disc:<16} K=1 {cells[0]}   {k} {cells[1]}{paper}")


def _procedures(args: argparse.Namespace, app) -> tuple[dict, bool]:
    """The built-in procedures (``--only``), the language-model ones (``--llm``) and the
    user's (``--procedures``); and whether the run has language-model procedures."""
    extra = load_procedures(args.procedures) if args.procedures else {}
    if args.application == "lottery" and args.mxl is not None:
        raise ConfigurationError("--mxl applies to replicate demand only (the mixed logit's fit)")
    builtin = app.table1_procedures() if args.application == "lottery" \
        else app.table3_procedures(args.mxl or "paper")
    if args.only:
        unknown = [k for k in args.only if k not in builtin]
        if unknown:
            raise ConfigurationError(f"--only: unknown procedure(s) {unknown}; built-ins are "
                                     f"{list(builtin)}")
        twice = sorted(repeated(args.only))
        if twice:  # run once each, without a word
            raise ConfigurationError(f"--only names {twice} more than once; name each "
                                     "procedure once")
        builtin = {k: builtin[k] for k in args.only}
    llm = llm_procedures(args, args.application)
    clash = sorted((set(extra) | set(llm)) & set(builtin) | set(extra) & set(llm))
    if clash:
        raise ConfigurationError(f"--procedures: labels {clash} clash with built-in or "
                                 "--llm procedures")
    return {**builtin, **llm, **extra}, bool(llm)


def run(args: argparse.Namespace) -> int:
    check_study_args(args)
    # imported on demand: the CLI loads only the application it runs
    app = importlib.import_module("..lottery" if args.application == "lottery" else "..demand",
                                  __package__)
    quick = args.replications is None and args.application == "demand"
    replications = args.replications or QUICK_M[args.application]
    procedures, has_llm = _procedures(args, app)
    study = app.study(procedures=procedures, n=args.n, replications=replications,
                      seed=args.seed, draws=args.draws)
    check_prices(study, args)
    if args.dry_run:
        print_dry_run(study, args)
        return 0
    concurrency = args.concurrency if args.concurrency is not None or not has_llm \
        else LLM_CONCURRENCY
    with Outputs(args) as outputs:
        if quick:
            print(QUICK_NOTE, file=sys.stderr)
        res = run_study(study, args, concurrency=concurrency,
                        requests_per_minute=args.requests_per_minute)
        print(res.summary())
        _print_comparisons(res, args.application, args.draws, args.mxl or "paper")
        print_usage(res, args)
        if quick:
            print("\n" + QUICK_NOTE)
        secs = float(np.nansum(res.timings()["total_seconds"].values))
        print(f"\nfit time (all procedures, summed over replications and draws): {secs:.1f} s")
        outputs.write(res, res.summary(), table=lambda: estimates_table(res),
                      plot=lambda ax: res.plot_profile(ax=ax))
    return study_status(res, args)


QUICK_NOTE = (f"note: replicate demand runs M = {QUICK_M['demand']} by default, a one-minute "
              "look: too few replications to match the paper's Table 4 (M = 200; run -M 200, "
              "about 20 minutes on 2 cores; --mxl converged about 10)")


def _print_comparisons(res, application: str, draws: int, mxl: str = "paper") -> None:
    if application == "lottery":
        print("\nComparison with the paper (Table 1 / Table A.3; prompt designs: Table A.7):")
        print(_comparison(res, _paper_lottery(), "mse", PAPER_M["lottery"]))
        full = {"CPT(alpha,gamma,delta)", "CPT(gamma,delta)", "CPT(alpha,delta)",
                "CPT(alpha,gamma)"}
        if full <= set(res.procedures):
            print("\nCPT parameter contributions C_q = r(-q) - r(full), paired SEs:")
            print(res.contributions().round(4).to_string())
        return
    _demand_report(res, draws, mxl)

"""The benchmarks run against the current package and print what they claim.

Nothing else runs ``benchmarks/``: a change to a private API once broke ``bench_mxl.py
--profile`` ("too many values to unpack" after ``MixedLogit._prepare`` gained a return value)
without a test noticing. Each test runs one script as a user would (``python benchmarks/x.py``,
from the repository root, at its smallest sensible size) and checks the values it prints: a
kernel and its NumPy twin agree, a kernel that must beat its twin prints a speed-up above 1, an
estimate sits within its standard errors of a closed form.

Not run here: ``check_docs_browser.py`` needs a built site and a browser (CI's side checks run
it).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import restrictiveness as rx

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
FLOAT = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN)"


def bench(script: str, *args: str, timeout: float = 180, status: int = 0) -> str:
    """Standard output of ``python benchmarks/<script> <args>`` run from the repository root;
    the exit status must be ``status``."""
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args], cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == status, (f"{script} {' '.join(args)} exited {done.returncode}:\n"
                                       f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return done.stdout + (done.stderr if status else "")


def number(pattern: str, text: str) -> float:
    """The number the first group of ``pattern`` matches in ``text`` (``{F}`` is a float)."""
    m = re.search(pattern.replace("{F}", FLOAT), text)
    assert m, f"{pattern!r} not found in:\n{text}"
    return float(m.group(1))


def numbers(pattern: str, text: str) -> list[float]:
    """Every number the groups of ``pattern`` match in ``text``, in order."""
    found = [float(g) for m in re.finditer(pattern.replace("{F}", FLOAT), text)
             for g in m.groups()]
    assert found, f"{pattern!r} not found in:\n{text}"
    return found


def test_projection_kernel_beats_and_matches_its_twin():
    out = bench("bench_projection.py")   # asserts the kernel's and the twin's output are equal
    for direction in ("increasing", "decreasing"):
        assert number(rf"{direction}: (\d+) sweeps", out) >= 1
        assert number(rf"{direction}: .*speed-up\s+{{F}}x", out) > 1
    assert number(r"ordered pairs: numba.*speed-up\s+{F}x", out) > 3   # ~10x (1.3x before)


def test_sensitivity_exact_bounds_match_the_lp_and_beat_it():
    out = bench("bench_sensitivity.py", "20", "5")
    assert "M = 20, 5 values of Γ" in out
    assert number(r"max \|exact − LP\| over bounds:\s+{F}", out) < 1e-9
    assert number(r"speed-up exact / LP:\s+{F} x", out) > 1
    assert number(r"critical Γ\* .*-> {F}", out) >= 1


def test_known_answer_estimate_is_within_its_se_of_the_closed_form():
    out = bench("known_answer.py", "-M", "200", "--seeds", "4", "--seed-replications", "40")
    # the closed form by hand: Matérn-3/2 (variance 1, length scale 0.5) on the script's points
    x = np.random.default_rng(3).random((25, 2))
    r = np.sqrt(3) * np.linalg.norm(x[:, None] - x[None], axis=-1) / 0.5
    K = (1 + r) * np.exp(-r) + 1e-4 * np.eye(25)

    def resid_trace(A):
        return np.trace((np.eye(25) - A @ np.linalg.pinv(A)) @ K)

    X = np.column_stack([np.ones(25), x])
    closed = resid_trace(X) / resid_trace(X[:, :1])
    assert number(r"closed form {F}", out) == pytest.approx(closed, abs=5e-5)
    estimate, se = number(r"estimate \(M=200\) {F}", out), number(r"\(se {F}\)", out)
    assert abs(estimate - closed) < 3 * se
    assert 1 / 3 < number(r"ratio {F}", out) < 3        # spread across seeds ≈ the SE


def test_cpt_fit_is_never_worse_than_curve_fit_and_kernels_beat_twins():
    out = bench("bench_cpt_fit.py", "--draws", "2", "--n", "50")
    assert "our SSR <= curve_fit's on 2/2 draws" in out
    assert number(r"speed-up \(median ratio curve_fit / ours\): {F}x", out) > 1
    for kernel in ("rdu_values", "grid_ssr", "fit_rdu"):   # grid_ssr: ~2x at n = 50
        assert number(rf"{kernel} .*speed-up\s+{{F}}x", out) > 1


def test_nls_matches_scipy_and_the_cpt_fitter_and_beats_its_twins():
    out = bench("bench_nls.py", "--draws", "2", "--n", "50")
    for ref in ("least_squares", "curve_fit"):
        assert re.search(rf"SSE vs {ref}\s*: ours <= theirs \(1e-9 rel\.\) on 2/2", out), out
    assert number(r"max \(ours - builtin\)/builtin SSE {F}", out) < 1e-6
    for name in ("multistart fit", "residuals \\+ J"):
        assert number(rf"{name}\s+numba.*speed-up\s+{{F}}x", out) > 1
    ours, twin = number(r"\(SSE {F} vs", out), number(r"\(SSE \S+ vs {F}\)", out)
    assert ours == pytest.approx(twin, rel=1e-9)


def test_mxl_kernels_profile_and_fits():
    """``--profile`` is where the private-API break of 33a4e35 crashed."""
    out = bench("bench_mxl.py", "--samples", "1", "--profile", "1", "--n", "30")
    shares = numbers(rf"\s{FLOAT}", out.split("shares (100 markets x 512 nodes)")[1]
                     .splitlines()[0])
    # numba ms, numpy ms, numpy/numba, pyblp ms, pyblp/numba, max |pyblp - ours|
    assert shares[2] > 1 and shares[5] < 1e-12
    jacobian = numbers(rf"\s{FLOAT}", out.split("shares + Jacobian (14 params)")[1]
                       .splitlines()[0])
    assert jacobian[2] > 1
    second = numbers(rf"\s{FLOAT}", out.split("... + second-order term")[1].splitlines()[0])
    assert second[2] > 1
    assert 0 < number(r"the exact second-order term adds (\d+)%", out) < 100
    assert number(r"median: (\d+) evaluations x", out) >= 1
    assert 0 < number(r"trial steps accepted (\d+)%", out) <= 100
    assert "lm: CPU median" in out and number(r" lm: .*converged (\d+)%", out) == 100
    assert number(r"objective lm / dogbox - 1.*worse by more than 1e-8 relative: (\d+) of 1",
                  out) == 0
    assert number(r"speed-up \(dogbox / lm, median CPU\): {F}x", out) > 1


def test_demand_truth_kernel_agrees_with_its_twin_and_beats_it_tenfold():
    """An unknown ``--before`` revision (a shallow clone) falls back to the kernel itself."""
    out = bench("bench_demand_truth.py", "--systems", "1", "--twin-markets", "1",
                "--before", "no-such-revision", "--no-split")
    assert "revision no-such-revision not available" in out
    assert "kernel now against itself" in out
    assert number(r"same numbers: max relative difference {F}", out) == 0
    assert "with a separate evaluation-shares pass" in out and out.count("same numbers: True")
    assert number(r"whole system {F}x \(target >= 10x\)", out) >= 10
    assert number(r"max rel\. share difference {F}", out) < 1e-12
    assert number(r"max abs\. elasticity difference {F}", out) < 1e-9


def test_lottery_replication_serial_and_parallel_agree():
    out = bench("bench_lottery_replication.py", "--replications", "2")
    assert "identical results: yes" in out
    assert number(r"speed-up {F}x", out) > 0
    gp = numbers(rf"GP regression\s+{FLOAT} \({FLOAT}\)\s+{FLOAT} \({FLOAT}\)\s+{FLOAT}", out)
    assert all(0 <= v < 1 for v in gp)


def test_demand_replication_reports_its_run_and_stops_when_the_run_fails(tmp_path):
    out_nc = str(tmp_path / "d.nc")
    out = bench("bench_demand_replication.py", "--replications", "2", "--n", "50",
                "--out", out_nc)
    for proc in ("MNL", "NL", "MXL"):
        assert number(rf"\n{proc}\s+50\s+{{F}}", out) > 0        # median fit seconds
    assert "for M = 2" in out
    # a failing run (M = 1) stops with the CLI's message; it read the previous run's file
    failed = bench("bench_demand_replication.py", "--replications", "1", "--n", "50",
                   "--out", out_nc, status=2)
    assert "1 is too small: give at least 2" in failed and "median_seconds" not in failed


def test_demand_budget_settings_converge_and_reach_the_best_objective(tmp_path):
    out = bench("bench_demand_budget.py", "-M", "2", "-n", "50", "--jobs", "1",
                "--out", str(tmp_path / "b.nc"))
    assert "study: 2 replications x 1 n, 1 jobs" in out
    for setting in ("fit", "start", "converge"):
        gap = numbers(rf"\n{setting} \| 50 \| {FLOAT} / {FLOAT} \|", out)
        assert all(g >= 0 for g in gap)      # against the best of the three
    assert number(r"\nconverge \| 50 \| .*? \| {F}% \|", out) == 100
    assert number(r"start vs converge: identical objective in {F}%", out) == 100


def test_demand_paper_setting_lm_is_never_worse_than_dogbox(tmp_path):
    out = bench("bench_demand_paper_setting.py", "-M", "2", "-n", "50", "--jobs", "1",
                "--out", str(tmp_path / "p.nc"))
    assert number(r"lm worse by > 1e-8 on (\d+) of 2", out) == 0
    assert number(r"lm converged in (\d+)%", out) == 100
    assert re.search(r"n =  50 MXL\[dogbox400\] − lm, paired: shares", out), out


def test_llm_endpoints_retries_concurrency_and_cache():
    out = bench("bench_llm_endpoints.py", "--delay", "0.05", "--replications", "2",
                "--threads", "2")
    assert "retries: 6 requests, 5 retries counted" in out
    assert out.count("identical losses: True") == 2
    assert number(r"rerun (\d+) requests", out) == 0
    assert number(r"first run (\d+) requests", out) == 2
    # 2 fits run 4 programs in the sandbox: their CPU time is counted under every backend
    # (under bubblewrap it was missed: 0.05 s)
    assert number(r"concurrency=1 [\d.]+ s wall \({F} s CPU\)", out) > 0.1


def _git_checkout() -> bool:
    done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True)
    return done.returncode == 0


@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox needs Linux")
def test_sandbox_startup_columns_count_the_programs_cpu():
    if not _git_checkout():
        pytest.skip("bench_sandbox.py checks out its 'before' code with git")
    out = bench("bench_sandbox.py", "--repeat", "1", "--before", "HEAD")
    rows = {line.split("|")[0].strip(): numbers(rf"{FLOAT} \(\s*{FLOAT}\)", line)
            for line in out.splitlines()[2:] if "|" in line}
    assert set(rows) == {"x = 1", "numpy", "scipy"}
    for name, cells in rows.items():
        assert len(cells) >= 6 and all(w > 0 for w in cells[0::2]), name   # wall, CPU pairs
    # importing scipy takes far more than 0.05 s of CPU: every column counts the program's
    # (under bubblewrap the column showed about 0.006 s)
    assert all(c > 0.05 for c in rows["scipy"][1::2]), out


def _case_numbers(*names: str) -> dict[str, int]:
    spec = importlib.util.spec_from_file_location("cli_cases", REPO / "benchmarks/cli_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["cli_cases"] = module     # its dataclass looks its module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["cli_cases"]
    index = {name: i for i, (_, name, _) in enumerate(module.CASES, 1)}
    return {name: index[name] for name in names}


def test_cli_cases_show_the_message_a_user_sees():
    expected = {"-M 0": "0 is too small: give at least 2",
                "--only unknown label": "unknown procedure(s) ['nope']",
                "a formula with a typo (np.lgo)": "numpy has no np.lgo",
                "--table pdf FILE (unknown format)": "format 'pdf' is not one of",
                "--version": f"restrictiveness {rx.__version__}"}
    cases = _case_numbers(*expected)
    out = bench("cli_cases.py", "--only", ",".join(map(str, cases.values())))
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].isdigit():
            rows[cells[2]] = cells
    assert set(rows) == set(expected)
    for name, message in expected.items():
        status = "0" if name == "--version" else "2"
        assert rows[name][3] == status and message in rows[name][5], rows[name]

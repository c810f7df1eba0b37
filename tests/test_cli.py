"""The command line fails fast and clearly, stops at once on Ctrl-C and shows failures."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from deadlines import within

import restrictiveness as rx
from restrictiveness.cli import main
from restrictiveness.engine.protocol import FunctionRule
from restrictiveness.shared.files import FileLock

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def _tiny_results(seed=1):
    F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1"), rx.Decreasing("x2"),
                       rx.Between(0, 1))
    procs = {"linear": rx.OLS("y ~ x1 + x2"), "x1 only": rx.OLS("y ~ x1")}
    return rx.Study(rx.MonotoneGP(F, n_eval=40), procs, rx.Constant(), n=[10, 20],
                    replications=5, seed=seed).run(progress=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A results file, a completeness file, a truncated file, a text file and a plain file."""
    d = tmp_path_factory.mktemp("files")
    _tiny_results().to_netcdf(d / "res.nc")
    data = (d / "res.nc").read_bytes()
    (d / "truncated.nc").write_bytes(data[: len(data) // 2])
    (d / "text.nc").write_text("not a netcdf file\n")
    import shutil

    shutil.copy(REPO / "tests" / "data" / "completeness_v0.nc", d / "kappa.nc")
    (d / "plain").write_text("x")
    return d


def _err_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and "unexpected" not in err, err
    assert len(err.splitlines()) == 1, err
    return err


# --------------------------------------------------------------- every option checked up front


@pytest.mark.parametrize("argv, message", [
    (["replicate", "lottery", "-M", "0"], "-M: 0 is too small: give at least 2"),
    (["replicate", "lottery", "-M", "1"], "standard errors need two"),
    (["replicate", "lottery", "-M", "ten"], "'ten' is not a whole number"),
    (["completeness", "demand", "--folds", "0"], "--folds: 0 is too small: give at least 2"),
    (["completeness", "demand", "--repeats", "0"], "--repeats: 0 is too small"),
    (["replicate", "lottery", "--jobs", "0"], "--jobs/-j: 0 workers"),
    (["replicate", "lottery", "--jobs", "-2"], "-1 for all cores"),
    (["replicate", "lottery", "--seed", "-1"], "seeds are nonnegative"),
    (["replicate", "lottery", "--seed", str(2**64)], "seeds go up to 2**63 - 1"),
    (["replicate", "lottery", "--n", "0"], "sample sizes are positive"),
    (["replicate", "lottery", "--draws", "0"], "--draws: 0 is too small"),
    (["replicate", "lottery", "--checkpoint", "{files}/plain"], "a checkpoint is a directory"),
    (["replicate", "lottery", "--checkpoint", "{files}/no/ck"], "does not exist; create it"),
    (["replicate", "lottery", "--checkpoint", ""], "'' is not a directory name"),
    (["replicate", "lottery", "--out", "{files}/missing/x.nc"], "--out: the folder"),
    (["replicate", "lottery", "--out", "{files}"], "is a directory; give a file name"),
    (["completeness", "demand", "--out", "{files}/missing/x.nc"], "does not exist"),
    (["sensitivity", "{files}/res.nc", "--out", "{files}/missing/s.nc"], "does not exist"),
    (["replicate", "lottery", "--procedures", "{files}/nope.py"], "--procedures: no file"),
    (["replicate", "lottery", "--procedures", "{files}/plain"], "is not a Python file"),
    (["replicate", "lottery", "--only", "nope"], "--only: unknown procedure(s) ['nope']"),
    (["replicate", "lottery", "-M", "2", "--n", "10", "--only", "CPT(delta)", "CPT(delta)"],
     "--only names ['CPT(delta)'] more than once"),
    (["replicate", "lottery", "--table", "pdf", "{files}/t.pdf"], "'pdf' is not one of csv"),
    (["replicate", "lottery", "--plot", "{files}/p.xyz"], "give a file ending in one of"),
    (["replicate", "lottery", "--out", "{files}/a.nc", "--table", "csv", "{files}/a.nc"],
     "--table and --out name the same file"),
    (["replicate", "lottery", "--scheduler", "tcp://localhost:8786"], "needs --backend dask"),
    (["replicate", "lottery", "--backend", "dask", "--scheduler", "nonsense"],
     "neither an existing scheduler file nor an address"),
    (["replicate", "lottery", "--backend", "dask", "--worker-timeout", "0"], "above 0"),
    (["demo", "-M", "2", "--n", "10", "--worker-timeout", "5"],
     "--worker-timeout needs --backend dask"),
    (["replicate", "lottery", "--fit-timeout", "0"], "above 0"),
    (["demo", "--fit-timeout", "inf"], "give a finite number"),
    (["replicate", "lottery", "--resume-other-versions"], "needs --checkpoint"),
    (["replicate", "lottery", "--n", "100000", "--only", "CPT(delta)"],
     "n=100000 needs at least 152.0 GiB of memory per replication"),
    (["completeness", "lottery"], "needs --data PATH"),
    (["completeness", "lottery", "--data", "{files}/nope.csv"], "--data: no file"),
    (["completeness", "lottery", "--data", "{files}/plain", "--repeats", "2"],
     "--repeats applies to completeness demand only"),
    (["completeness", "demand", "--data", "{files}/plain"], "--data applies to completeness"),
    (["sensitivity", "{files}/nope.nc"], "no file"),
    # a device was "a directory, not a file"
    (["sensitivity", "/dev/null"], "'/dev/null' is not a regular file (a device, pipe or"),
    (["completeness", "lottery", "--data", "/dev/null"], "is not a regular file"),
    (["sensitivity", "{files}/text.nc"], "is not a readable NetCDF file"),
    (["sensitivity", "{files}/truncated.nc"], "is not a readable NetCDF file"),
    (["sensitivity", "{files}/kappa.nc"], "it holds completeness results"),
    (["sensitivity", "{files}/res.nc", "--gamma", "0.5"], "Γ = 1 is uniform weights"),
    (["sensitivity", "{files}/res.nc", "--gamma", "nan"], "give a finite number"),
    (["sensitivity", "{files}/res.nc", "--compare", "nope"], "unknown procedure label"),
    (["sensitivity", "{files}/res.nc", "--discrepancy", "kl"], "discrepancy 'kl' not in"),
    (["replicate", "mars"], "invalid choice: 'mars'"),
    # argparse keeps an option's last value: --n 50 --n 100 ran n = 100 alone
    (["replicate", "lottery", "--n", "50", "--n", "100"],
     "--n: given more than once; list all values after one --n"),
    (["replicate", "lottery", "-M", "2", "--replications", "3"],
     "--replications/-M: given more than once"),
    (["sensitivity", "{files}/res.nc", "--gamma", "2", "--gamma", "3"], "--gamma: given more"),
])
def test_bad_options_fail_fast_with_one_line_and_status_2(files, capsys, argv, message):
    argv = [a.replace("{files}", str(files)) for a in argv]
    # in CPU seconds: a run takes far more, and the wall clock counts the machine's load (9 s
    # under load for --plot p.xyz, which imports matplotlib to list its formats: 0.2 s of CPU)
    start = time.process_time()
    assert main(argv) == 2
    assert time.process_time() - start < 5
    assert message in _err_line(capsys)


def _children_cpu_seconds() -> float:
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def test_out_into_a_missing_folder_fails_in_under_5_s_without_a_traceback(tmp_path):
    """Before: the whole run, then a misleading 'Permission denied' traceback. At once means
    within a few seconds of the interpreter's start and the package's import, timed here by
    ``--version``, in CPU seconds: wall-clock times taken one after the other differ with the
    machine's load between them."""
    start = _children_cpu_seconds()
    subprocess.run([sys.executable, "-m", "restrictiveness", "--version"], capture_output=True,
                   env=ENV, timeout=60, check=True)
    start_up = _children_cpu_seconds() - start
    start = _children_cpu_seconds()
    proc = subprocess.run([sys.executable, "-m", "restrictiveness", "replicate", "lottery",
                           "--out", str(tmp_path / "missing" / "x.nc")],
                          capture_output=True, text=True, env=ENV, timeout=60)
    cpu = _children_cpu_seconds() - start
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "does not exist" in proc.stderr
    assert cpu < 2 * start_up + 3, (cpu, start_up)  # the run itself takes over a minute


def test_a_second_run_writing_the_same_out_is_refused_at_once(tmp_path, capsys):
    out = tmp_path / "res.nc"
    with FileLock(tmp_path / ".res.nc.lock", remove=True):  # another run writing res.nc
        assert main(["demo", "-M", "2", "--n", "10", "--out", str(out)]) == 2
    err = _err_line(capsys)
    assert f"--out {out} is being written by another run" in err
    assert not out.exists()


def test_version_and_an_example_in_every_subcommand_help(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"restrictiveness {rx.__version__}"
    for command in ("demo", "replicate", "completeness", "sensitivity"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        assert f"examples:\n  python -m restrictiveness {command}" in text


# --------------------------------------------------------------- outputs


def test_demo_writes_netcdf_tables_and_plot(tmp_path, capsys):
    out = tmp_path / "demo.nc"
    argv = ["demo", "-M", "3", "--n", "10", "--jobs", "1", "--no-progress", "--out", str(out),
            "--plot", str(tmp_path / "p.png")]
    csv_header = "discrepancy,procedure,n,estimate,se,lower,upper,failed,fits"
    for fmt, mark in (("csv", csv_header), ("latex", "\\begin{tabular}"), ("html", "<table")):
        assert main([*argv, "--table", fmt, str(tmp_path / f"t.{fmt}")]) == 0
        assert mark in (tmp_path / f"t.{fmt}").read_text()
    printed = capsys.readouterr().out
    assert "How to read r̂: near 0" in printed and f"results written to {out}" in printed
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    res = rx.load(out)
    assert res.replications == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.nc", "p.png", "t.csv",
                                                          "t.html", "t.latex"]  # no leftovers


def test_a_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    out = tmp_path / "res.nc"
    res = _tiny_results()
    res.to_netcdf(out)
    before = out.read_bytes()

    def broken(path, **kw):
        Path(path).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(type(res.dataset), "to_netcdf", lambda self, path, **kw: broken(path))
    with pytest.raises(OSError, match="No space"):
        res.to_netcdf(out)
    assert out.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["res.nc"]



_KILLED_WRITER = """
import os, signal, sys
from restrictiveness.shared.files import atomic_output
with atomic_output(sys.argv[1]) as tmp:
    tmp.write_bytes(b"half the results")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_results_writer_killed_mid_write_leaves_nothing_after_the_next_write(tmp_path):
    """A run killed (SIGKILL) while writing --out left ``.res.nc.{pid}.{random}.tmp`` in the
    output folder for ever, as big as the results: the next write of res.nc now removes
    it. Only a dead writer's temporaries of that very file go, never a link's target."""
    out = tmp_path / "res.nc"
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(out)], env=ENV)
    assert proc.returncode == -signal.SIGKILL
    [stale] = tmp_path.glob(".res.nc.*.tmp")
    dead = int(stale.name.split(".")[3])
    live = tmp_path / f".res.nc.{os.getpid()}.ab1_cd2e.tmp"  # a writer still at work
    other = tmp_path / f".other.nc.{dead}.ab1_cd2e.tmp"  # another file's
    precious = tmp_path / "precious"
    link = tmp_path / f".res.nc.{dead}.zz9_yy8x.tmp"
    for path in (live, other, precious):
        path.write_text("keep me")
    link.symlink_to(precious)
    _tiny_results().to_netcdf(out)
    assert rx.load(out).replications == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [live.name, other.name, link.name, "precious", "res.nc"])
    assert precious.read_text() == "keep me"


_FULL_DISK = """
import resource, signal, sys
import numpy as np
import restrictiveness as rx
from restrictiveness.shared.files import atomic_write_bytes
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit then fail with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # a disk that fills midway
res = rx.load(sys.argv[1])
for write in (lambda: atomic_write_bytes(sys.argv[2], bytes(10_000)),
              lambda: res.to_netcdf(sys.argv[3])):
    try:
        write()
    except OSError as exc:
        print(f"{type(exc).__name__}|{exc.filename}|{exc}")
    except Exception as exc:
        print(f"{type(exc).__name__}|-|{exc}")
"""


def test_a_disk_that_fills_midway_names_the_file_being_written(tmp_path):
    """A full disk fails a write without a file name: a checkpoint record's error was
    'error: No space left on device', and a results file's 'unexpected RuntimeError: NetCDF:
    HDF error (a bug: please report it ...)'. Both now name the file, and leave nothing."""
    _tiny_results().to_netcdf(tmp_path / "res.nc")
    (tmp_path / "full").mkdir()
    record, out = tmp_path / "full" / "replication-000004.npz", tmp_path / "full" / "out.nc"
    proc = subprocess.run([sys.executable, "-c", _FULL_DISK, str(tmp_path / "res.nc"),
                           str(record), str(out)], env=ENV, capture_output=True, text=True,
                          check=True)
    lines = proc.stdout.splitlines()
    assert lines[0] == f"OSError|{record}|[Errno 27] File too large: '{record}'"
    assert lines[1] == (f"OSError|{out}|[Errno 5] NetCDF: HDF error while writing it (a full "
                        f"disk or quota?): '{out}'")
    assert list((tmp_path / "full").iterdir()) == []

# --------------------------------------------------------------- failures that show


class AlwaysFails(rx.Procedure):
    def fit(self, sample, rng):
        raise RuntimeError("always")


def test_an_always_failing_procedure_is_shown_as_failed():
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=30), {"ok": rx.OLS("y ~ x"), "bad": AlwaysFails()},
                     rx.Constant(), n=[10, 20], replications=3)
    with pytest.warns(rx.FailureWarning, match=r"bad failed in 6 of 6 fits.*RuntimeError: always"):
        res = study.run(progress=False)
    text = res.summary().as_text()
    bad_row = next(line for line in text.splitlines() if line.strip().startswith("bad "))
    assert bad_row.split() == ["bad", "failed", "failed"]  # before: 1.000 (0.000)
    assert "bad: failed in 6 of 6 fits (n=10: 3 of 3; n=20: 3 of 3)" in text
    assert "first error: fit: RuntimeError: always" in text
    assert "ok: failed" not in text


TYPO = "import restrictiveness as rx\nPROCEDURES = {'typo': rx.OLS('ce ~ np.lgo(z_hi)')}\n"
BROKEN = ("import restrictiveness as rx\n"
          "class Broken(rx.Procedure):\n"
          "    def fit(self, sample, rng):\n"
          "        raise ValueError('no convergence')\n"
          "PROCEDURES = {'broken': Broken()}\n")


def test_cli_refuses_a_typo_formula_before_anything_runs(tmp_path, capsys):
    """A misspelled numpy function in a procedures file is refused when the file is read
    (status 2, one line naming it), not found fit by fit."""
    path = tmp_path / "procs.py"
    path.write_text(TYPO)
    argv = ["replicate", "lottery", "-M", "2", "--n", "20", "--jobs", "1", "--no-progress",
            "--only", "CPT(delta)", "--procedures", str(path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "numpy has no np.lgo" in err[0] and err[0].startswith("error:")


def test_cli_shows_a_failing_procedure_as_failed_warns_and_strict_exits_1(tmp_path, capsys):
    path = tmp_path / "procs.py"
    path.write_text(BROKEN)
    argv = ["replicate", "lottery", "-M", "2", "--n", "20", "--jobs", "1", "--no-progress",
            "--only", "CPT(delta)", "--procedures", str(path)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    rows = [line.split() for line in captured.out.splitlines()
            if line.strip().startswith("broken")]
    assert rows[0] == ["broken", "failed"] and rows[1] == ["broken", "failed"]  # summary, paper
    warning = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "broken failed in 2 of 2 fits" in warning[0]
    assert "ValueError: no convergence" in warning[0]
    assert main([*argv, "--strict"]) == 1
    assert "error: --strict: 2 failed fit(s)" in capsys.readouterr().err


STUCK = ("import time\nimport restrictiveness as rx\n"
         "class Stuck(rx.Procedure):\n"
         "    def fit(self, sample, rng):\n"
         "        time.sleep(10 ** 6)\n"
         "PROCEDURES = {'stuck': Stuck()}\n")


def test_cli_fit_timeout_stops_a_stuck_procedure_and_shows_it_failed(tmp_path, capsys):
    """Before: no --fit-timeout, and the run hung for ever."""
    path = tmp_path / "procs.py"
    path.write_text(STUCK)
    argv = ["replicate", "lottery", "-M", "2", "--n", "20", "--jobs", "1", "--no-progress",
            "--only", "CPT(delta)", "--procedures", str(path), "--fit-timeout", "2"]
    # (2 s: the limit also bounds each pseudo-truth draw, 0.1-0.7 s for the lottery here.)
    # Fail rather than hang: the run's time is no measure, as numba's compilation of the
    # lottery kernels, which does not count against the limit, can be in it (a fresh
    # install's first use: 98 s of fits under load, against a bound of 34 s)
    with within(300):
        assert main([*argv, "--strict"]) == 1
    captured = capsys.readouterr()
    rows = [line.split() for line in captured.out.splitlines() if line.strip().startswith("stuck")]
    assert rows[0] == ["stuck", "failed"]
    warning = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "stuck failed in 2 of 2 fits" in warning[0]
    assert "fit: timed out after 2 s (fit_timeout)" in warning[0]
    assert "error: --strict: 2 failed fit(s)" in captured.err


# --------------------------------------------------------------- reading the output


def test_comparison_with_the_paper_shows_z(capsys):
    from restrictiveness.cli.replicate import _comparison, _paper_lottery

    cpt = rx.lottery.CPT(free=("delta",))
    res = rx.lottery.study({cpt.label: cpt}, n=[50, 100], replications=4, n_eval=100,
                           seed=3).run(progress=False)
    text = _comparison(res, _paper_lottery(), "mse", 100)
    r = res.restrictiveness.sel(procedure="CPT(delta)", discrepancy="mse")
    se = res.se.sel(procedure="CPT(delta)", discrepancy="mse")
    z100 = (float(r.sel(n=100)) - 0.269) / np.hypot(float(se.sel(n=100)), 0.034)  # Table A.3
    assert f"0.269, z={z100:+.1f}" in text
    assert "z = (ours − paper)" in text and "/   -" in text  # Table 1 has no CPT(delta) at 50


def test_comparison_cells_stay_apart_with_and_without_the_papers_se():
    # Table 4 prints SEs only at n = 100: the other cells are "~z" ones, a character wider; a
    # fixed column width had run "z=+0.8" into the next cell's "0.192" (seen at M = 200).
    import re

    import xarray as xr

    from restrictiveness.cli.replicate import _comparison, _paper_demand
    from restrictiveness.engine.results import Results

    ns, rng = [50, 100, 200], np.random.default_rng(0)
    base = rng.exponential(size=(1, 3, 40)) + 0.1
    loss = np.stack([f * base * rng.lognormal(0.0, 0.3, size=base.shape) for f in (0.19, 0.16)])
    pnr = ("procedure", "n", "replication")
    res = Results(xr.Dataset(
        {"loss": (("procedure", "discrepancy", "n", "replication"), loss),
         "baseline_loss": (("discrepancy", "n", "replication"), base),
         "failed": (pnr, np.zeros((2, 3, 40), int)), "invalid": (pnr, np.zeros((2, 3, 40), int)),
         "error": (pnr, np.full((2, 3, 40), ""))},
        coords={"procedure": ["MNL", "MXL"], "discrepancy": ["shares"], "n": ns,
                "replication": np.arange(40)}, attrs={"baseline": "logit"}))
    text = _comparison(res, _paper_demand(), "shares", 200, key=lambda p, d: (p, d))
    cell = r"\d\.\d{3} \(\d\.\d{3}\) / \d\.\d{3}, ~?z=[+-]\d+\.\d"
    for line in text.splitlines()[2:4]:
        label, *cells = re.split(r"\s{2,}", line.strip())
        assert label in ("MNL", "MXL") and len(cells) == 3, line
        assert all(re.fullmatch(cell, c) for c in cells), cells
        assert [c.count("~z") for c in cells] == [1, 0, 1]


def test_demand_at_its_quick_default_says_m_is_too_small(capsys, monkeypatch):
    class Ran(BaseException):
        pass

    def stop(study, args, **options):
        raise Ran

    monkeypatch.setattr("restrictiveness.cli.replicate.run_study", stop)
    with pytest.raises(Ran):
        main(["replicate", "demand", "--n", "50"])
    assert "M = 6 by default" in capsys.readouterr().err
    with pytest.raises(Ran):
        main(["replicate", "demand", "--n", "50", "-M", "200"])
    assert "M = 6" not in capsys.readouterr().err


def test_replicate_demand_fits_mxl_as_the_paper_unless_asked_to_converge(monkeypatch):
    # issue 15: the paper's Tables 3-4 come from budget-limited dogbox fits; --mxl converged
    # runs the package default, and --mxl means nothing to the lottery
    seen = []

    class Ran(BaseException):
        pass

    def stop(study, args, **options):
        seen.append(study.procedures["MXL"])
        raise Ran

    monkeypatch.setattr("restrictiveness.cli.replicate.run_study", stop)
    for extra in ([], ["--mxl", "converged"], ["--mxl", "paper"]):
        with pytest.raises(Ran):
            main(["replicate", "demand", "--n", "50"] + extra)
    assert [(m.method, m.budget, m.reflect) for m in seen] == [
        ("dogbox", "fit", False), ("lm", "fit", True), ("dogbox", "fit", False)]
    assert vars(seen[1]) == vars(rx.demand.MixedLogit())
    assert main(["replicate", "lottery", "--mxl", "paper"]) == 2


def test_compile_notice_is_printed_once_across_forked_workers(tmp_path):
    import multiprocessing

    import numba

    from restrictiveness.shared.compile_notice import CompileNotice

    log = tmp_path / "log"

    def compile_in_child(k):
        numba.njit(lambda x: x + k)(1)

    with open(log, "w", buffering=1) as fh, CompileNotice(fh):
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=compile_in_child, args=(k,)) for k in (1, 2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
        numba.njit(lambda x: x + 3)(1)  # and the parent itself
    assert log.read_text().count("compiling numerical kernels") == 1


# --------------------------------------------------------------- stop fast


def _stop_after_two_records(ck, send, jobs=1):
    """Run a 300-replication study, ``send(pid)`` a signal once two records are saved; returns
    ``(returncode, stderr, seconds from the signal to the exit, pid)``."""
    cmd = [sys.executable, "-m", "restrictiveness", "replicate", "lottery", "-M", "300",
           "--checkpoint", str(ck), "--n", "50", "--only", "GP regression", "--no-progress",
           "--jobs", str(jobs)]
    # SIG_DFL: a shell starts background jobs (e.g. a backgrounded pytest) ignoring SIGINT,
    # and the child would inherit that; PYTHONFAULTHANDLER: SIGABRT dumps its threads.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**ENV, "PYTHONFAULTHANDLER": "1"}, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while len(list(ck.glob("replication-*.npz"))) < 2 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        send(proc.pid)
        start = time.monotonic()
        _, err = proc.communicate(timeout=30)
        return proc.returncode, err, time.monotonic() - start, proc.pid
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGABRT)  # show where it hangs
        raise AssertionError(proc.communicate(timeout=30)[1][-5000:]) from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _assert_stopped_cleanly(ck, err, pid):
    """Finished work kept and summarised in one line, claims released, no worker left."""
    done = len(list(ck.glob("replication-*.npz")))
    assert 2 <= done < 300
    assert err.strip().splitlines()[-1] == (f"interrupted: {done} of 300 replications finished, "
                                            f"saved in {ck}; rerun the same command to resume")
    assert not list((ck / ".claims").iterdir())
    # the workers' own exit, which waits for the CPU on a loaded machine (one was still there
    # after 1 s at load 8 on 2 cores); a worker left behind stays for good
    deadline = time.monotonic() + 15
    while True:
        pids = subprocess.run(["pgrep", "-s", str(pid)], capture_output=True, text=True)
        if not pids.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert pids.stdout.strip() == ""  # no worker left behind


def test_sigint_stops_a_running_replication_within_5_s_and_keeps_finished_work(tmp_path):
    """Before: 19–26 s, then a traceback; with -M 300 still computing after 60 s."""
    ck = tmp_path / "ck"
    # as Ctrl-C in a terminal: the workers get it too
    status, err, elapsed, pid = _stop_after_two_records(
        ck, lambda pid: os.killpg(pid, signal.SIGINT))
    assert status == 130 and elapsed < 5, (elapsed, err)
    assert len(err.strip().splitlines()) == 1, err   # one line, no traceback
    _assert_stopped_cleanly(ck, err, pid)


@pytest.mark.parametrize("group", [False, True], ids=["parent", "process group"])
def test_sigterm_stops_like_ctrl_c_with_status_143(tmp_path, group):
    """A batch scheduler's time limit (SIGTERM to the job's processes, or to the parent alone):
    before, the process died of the signal (status -15) without a word and left its claims."""
    ck = tmp_path / "ck"
    send = (lambda pid: os.killpg(pid, signal.SIGTERM)) if group else \
        (lambda pid: os.kill(pid, signal.SIGTERM))
    status, err, _, pid = _stop_after_two_records(ck, send, jobs=2)
    assert status == 143, err
    _assert_stopped_cleanly(ck, err, pid)


# --------------------------------------------------------------- dask


class Slow(rx.Procedure):
    def fit(self, sample, rng):
        time.sleep(0.2)
        return FunctionRule(lambda X: np.full(len(X), sample.y.mean()))


def _in_process_cluster():
    """A dask cluster of one single-threaded worker in this process."""
    import distributed
    return distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                    dashboard_address=None)


def _slow_study() -> rx.Study:
    """40 replications of a procedure taking 0.2 s per fit: a run long enough to lose its
    cluster in."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    return rx.Study(rx.MonotoneGP(F, n_eval=30), {"slow": Slow()}, rx.Constant(), n=[10],
                    replications=40)


def test_a_dask_run_that_loses_every_worker_fails_within_its_timeout(tmp_path):
    import distributed
    study = _slow_study()
    cluster = _in_process_cluster()
    client = distributed.Client(cluster)
    ck = tmp_path / "ck"
    killed = {}

    def kill():
        while len(list(ck.glob("replication-*.npz"))) < 2:
            time.sleep(0.05)
        killed["at"] = time.monotonic()
        cluster.scale(0)

    threading.Thread(target=kill, daemon=True).start()
    try:
        with pytest.raises(rx.ExecutionError, match=r"no dask worker has been connected .* "
                                                    r"for 2 s, with \d+ of 40 replications"):
            study.run(backend="dask", client=client, progress=False, checkpoint=ck,
                      worker_timeout=2)
        elapsed = time.monotonic() - killed["at"]
    finally:
        client.close()
        cluster.close()
    assert 2 <= elapsed < 2 + 4  # before: waited for ever
    assert len(list(ck.glob("replication-*.npz"))) >= 2  # finished work kept


def test_a_dask_run_that_loses_its_scheduler_fails_naming_the_lost_connection(tmp_path):
    """The cluster closed mid-run (its scheduler gone): dask cancels every future, and the run
    failed with dask's own ``FuturesCancelledError`` listing every future's key, and that with
    ``ClosedClientError: Client is closed. Can't send cancel-keys message.`` from the clean-up,
    not with the package's :class:`ExecutionError` saying what to do."""
    import distributed
    study = _slow_study()
    cluster = _in_process_cluster()
    client = distributed.Client(cluster)
    ck = tmp_path / "ck"

    def close():
        while len(list(ck.glob("replication-*.npz"))) < 2:
            time.sleep(0.05)
        cluster.close()

    threading.Thread(target=close, daemon=True).start()
    try:
        with within(60), pytest.raises(rx.ExecutionError) as failed:
            study.run(backend="dask", client=client, progress=False, checkpoint=ck,
                      worker_timeout=30)
    finally:
        client.close()
    # the reason is "unknown" when the client is closed with the scheduler, and
    # "scheduler-connection-lost" with a message when the connection breaks
    assert re.fullmatch(r"dask cancelled replication \d+ \(reason: [a-z-]+\)(\.|: .+\.) Start "
                        r"the scheduler and its workers again if they are gone, and rerun \(a "
                        r"checkpoint keeps the finished replications\)", str(failed.value))
    assert len(list(ck.glob("replication-*.npz"))) >= 2  # finished work kept


_FROZEN = """
import sys, time
import distributed
import restrictiveness as rx
if __name__ == "__main__":
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=30), {"c": rx.Constant()}, rx.Constant(), n=[10],
                     replications=3)
    client = distributed.Client(sys.argv[1], timeout=120)
    print("connected", flush=True)
    sys.stdin.readline()  # the scheduler is frozen now
    start = time.monotonic()
    try:
        study.run(backend="dask", client=client, progress=False, worker_timeout=2)
    except rx.ExecutionError as exc:
        print(f"{time.monotonic() - start:.3f} {exc}", flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="freezes the scheduler with SIGSTOP")
def test_a_dask_run_whose_scheduler_stops_answering_fails_within_its_timeout():
    """A scheduler that stops answering without closing its connection (its machine frozen or
    swapping; here SIGSTOP): counting its workers waited for its answer for ever, and the run
    hung (still running after 100 s with worker_timeout=5). In a process of its own: the hung
    wait swallowed the test's alarm."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", str(port), "--dashboard-address", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run = subprocess.Popen([sys.executable, "-c", _FROZEN, f"tcp://127.0.0.1:{port}"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
    try:
        assert run.stdout.readline() == "connected\n"
        scheduler.send_signal(signal.SIGSTOP)
        out, _ = run.communicate("go\n", timeout=60)
    finally:
        run.kill()
        scheduler.send_signal(signal.SIGCONT)
        scheduler.kill()
        run.wait()
        scheduler.wait()
    elapsed, message = out.strip().splitlines()[-1].split(" ", 1)
    assert re.fullmatch(r"no dask worker has been connected to tcp://127\.0\.0\.1:\d+ for 2 s, "
                        r"with 3 of 3 replications unfinished; start workers again and rerun "
                        r"\(a checkpoint keeps the finished ones\), or allow longer with "
                        r"worker_timeout \(--worker-timeout\)", message)
    assert 2 <= float(elapsed) < 2 + 4


def test_a_dask_client_that_is_not_the_default_one_runs_the_study():
    """``Client(..., set_as_default=False)`` (a library's own client beside the user's): the
    run waited on the default client, and failed with dask's "No clients found"."""
    import distributed
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=30), {"constant": rx.Constant()}, rx.Constant(),
                     n=[10], replications=3, seed=4)
    timing = ["seconds", "baseline_seconds"]
    serial = study.run(progress=False).dataset.drop_vars(timing).drop_attrs()
    cluster = _in_process_cluster()
    try:
        with distributed.Client(cluster, set_as_default=False) as client:
            dask = study.run(backend="dask", client=client, progress=False).dataset
    finally:
        cluster.close()
    xr.testing.assert_identical(serial, dask.drop_vars(timing).drop_attrs())


def test_cli_runs_on_a_dask_scheduler_by_address_and_by_file(tmp_path, capsys, monkeypatch):
    cluster = _in_process_cluster()
    try:
        file = tmp_path / "scheduler.json"
        file.write_text(json.dumps({"address": cluster.scheduler_address}))
        outs = []
        for target in (cluster.scheduler_address, str(file)):
            out = tmp_path / f"r{len(outs)}.nc"
            assert main(["demo", "-M", "2", "--n", "10", "--no-progress", "--backend", "dask",
                         "--scheduler", target, "--out", str(out)]) == 0
            outs.append(rx.load(out))
    finally:
        cluster.close()
    from restrictiveness.analysis.quick import demo_study

    serial = demo_study(n=[10], replications=2).run(progress=False)
    for res in outs:
        np.testing.assert_array_equal(res.dataset["loss"].values, serial.dataset["loss"].values)
    capsys.readouterr()
    monkeypatch.setattr("restrictiveness.cli.options.CONNECT_TIMEOUT", 1)
    assert main(["demo", "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1",
                 "--no-progress"]) == 2
    assert "cannot reach the dask scheduler tcp://127.0.0.1:1" in _err_line(capsys)


def test_out_through_a_symbolic_link_writes_the_file_it_names(tmp_path, capsys):
    """The atomic rename replaced the link itself with the new results, and the file it names
    (say in a shared folder) kept the previous run's."""
    (tmp_path / "shared").mkdir()
    real = tmp_path / "shared" / "res.nc"
    real.write_text("the previous results")
    link = tmp_path / "res.nc"
    link.symlink_to(real)
    table = tmp_path / "t.csv"
    table.symlink_to("shared/t.csv")  # a relative link, to a file not there yet
    assert main(["demo", "-M", "3", "--n", "10", "--no-progress", "--out", str(link),
                 "--table", "csv", str(table)]) == 0
    printed = capsys.readouterr().out
    assert link.is_symlink() and link.resolve() == real and table.is_symlink()
    res = rx.load(real)
    assert [float(v) for v in res.restrictiveness.sel(discrepancy="mse", n=10).values] == [
        float(line.split(",")[3]) for line in (tmp_path / "shared" / "t.csv").read_text(
            ).splitlines()[1:]]
    assert f"linear {float(res.restrictiveness.sel(procedure='linear', n=10)[0]):.3f} (" in printed


def test_out_to_a_device_or_pipe_is_refused_before_the_run(tmp_path, capsys):
    """Run as root, ``--out /dev/null`` replaced the device itself with a regular file at the
    end of the run (a pipe here, to leave /dev/null alone)."""
    pipe = tmp_path / "pipe.nc"
    os.mkfifo(pipe)
    start = time.process_time()
    assert main(["demo", "-M", "50", "--no-progress", "--out", str(pipe)]) == 2
    assert time.process_time() - start < 2  # the run takes longer
    assert f"'{pipe}' is not a regular file (a device, pipe or socket)" in _err_line(capsys)
    assert pipe.is_fifo()
    from restrictiveness.shared.files import atomic_write_bytes

    with pytest.raises(rx.ConfigurationError, match="is not a regular file"):
        atomic_write_bytes(pipe, b"data")
    assert pipe.is_fifo()


def test_ctrl_c_while_the_package_imports_prints_one_line_and_exits_130():
    """The command line's handler is installed once the package is imported (a second or more,
    and several on a loaded machine): a Ctrl-C before it printed the 30-line traceback of the
    import under way. The signal is sent once numpy has been imported, which happens inside
    the package's import (``-X importtime`` reports each module as it finishes)."""
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "restrictiveness", "demo",
                             "-M", "4", "--n", "10", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.split("|")[-1].strip() == "numpy":
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    err = "".join(seen) + err
    assert (proc.returncode, err.splitlines()[-1], out) == (130, "interrupted", "")
    assert "Traceback" not in err

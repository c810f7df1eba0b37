"""The careless-and-hostile-user cases of issue 16, run end to end, printed as a table.

Each case runs ``python -m restrictiveness ...`` (or a short Python script) in a fresh folder
and records the exit status, the wall time and the message a user sees (the first line of
standard error, or the last line of a traceback). Pass ``--repo`` twice to compare two checkouts
side by side, e.g. the code before and after the fix::

    git archive <base> | tar -x -C /tmp/base
    python benchmarks/cli_cases.py --repo /tmp/base --repo .

``--only 17,18`` runs a subset. Lottery studies use ``--only "GP regression" --n 20`` unless a
case is about those options, so the whole table takes a few minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
FAST = ["--only", "GP regression", "--n", "20", "--no-progress"]


@dataclass
class Outcome:
    status: int | str
    seconds: float
    out: str
    err: str
    note: str = ""


class Runner:
    """Runs commands against one checkout in a scratch folder."""

    def __init__(self, repo: Path, tmp: Path) -> None:
        self.repo, self.tmp = repo, tmp
        self.env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONWARNINGS": "default"}

    def cli(self, *args: str, timeout: float = 300, env: dict | None = None) -> Outcome:
        return self.run([sys.executable, "-m", "restrictiveness", *args], timeout, env)

    def py(self, code: str, timeout: float = 300) -> Outcome:
        return self.run([sys.executable, "-c", textwrap.dedent(code)], timeout)

    def run(self, cmd: list[str], timeout: float, env: dict | None = None) -> Outcome:
        start = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               cwd=self.tmp, env={**self.env, **(env or {})})
            return Outcome(p.returncode, time.perf_counter() - start, p.stdout, p.stderr)
        except subprocess.TimeoutExpired as exc:
            return Outcome(f"killed after {timeout:g} s", time.perf_counter() - start,
                           _text(exc.stdout), _text(exc.stderr))

    def sigint(self, *args: str, records: int = 2, group: bool = True) -> Outcome:
        """Start a run, wait for ``records`` finished replications, send SIGINT (to the
        process group, as Ctrl-C does), and time the stop."""
        ck = self.tmp / "ck"
        cmd = [sys.executable, "-m", "restrictiveness", *args, "--checkpoint", str(ck)]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=self.tmp, env=self.env, start_new_session=True,
                             preexec_fn=_default_sigint)
        deadline = time.monotonic() + 300
        while _records(ck) < records and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        time.sleep(0.3)
        start = time.perf_counter()
        os.killpg(p.pid, signal.SIGINT) if group else os.kill(p.pid, signal.SIGINT)
        try:
            out, err = p.communicate(timeout=60)
            status: int | str = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            status = "still running 60 s after SIGINT"
        stop = time.perf_counter() - start
        return Outcome(status, stop, out, err, f"{_records(ck)} records on disk")


def _default_sigint() -> None:
    # A shell starts background jobs with SIGINT ignored, and the child would inherit that.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _text(b) -> str:
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def _records(ck: Path) -> int:
    return len(list(ck.glob("replication-*.npz"))) + len(list(ck.glob("replication-*.pkl")))


def _message(o: Outcome) -> str:
    err = [line for line in o.err.splitlines() if line.strip()]
    tb = next((i for i, line in enumerate(err) if line.startswith("Traceback")), None)
    if tb is not None:
        last = [line for line in err[tb:] if not line.startswith(" ")][-1]
        return "TRACEBACK " + last
    lines = [line for line in err if not line.startswith(("note:", "INFO", "20", "usage:"))
             and "Warning:" not in line]
    lines = [line for line in lines if "error:" in line] or lines
    return (lines[0] if lines else "") or o.note


# ---------------------------------------------------------------------------- damage helpers

def _lottery_ck(r: Runner, *extra: str) -> list[str]:
    args = ["replicate", "lottery", *FAST, "-M", "4", "--jobs", "1", "--checkpoint", "ck"]
    r.cli(*args, *extra)
    return args


def _first_record(r: Runner) -> Path:
    files = sorted((r.tmp / "ck").glob("replication-*.npz")) or sorted(
        (r.tmp / "ck").glob("replication-*.pkl"))
    return files[1]


def _flip_float(r: Runner) -> None:
    """Flip one bit of the first stored loss, with the checkout's own code (old records are
    pickles of its classes)."""
    file = _first_record(r)
    r.py(f"""
        import io, pickle, numpy as np
        from pathlib import Path
        file = Path({str(file)!r})
        if file.suffix == ".pkl":
            rec = pickle.loads(file.read_bytes())
            rec.loss.view(np.uint64).flat[0] ^= np.uint64(1 << 60)
            file.write_bytes(pickle.dumps(rec))
        else:
            with np.load(file, allow_pickle=False) as z:
                arrays = {{k: z[k] for k in z.files}}
            arrays["loss"].view(np.uint64).flat[0] ^= np.uint64(1 << 60)
            buf = io.BytesIO()
            np.savez(buf, **arrays)
            file.write_bytes(buf.getvalue())
    """)


class _Evil:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _damaged(kind: str):
    def case(r: Runner) -> Outcome:
        args = _lottery_ck(r)
        file = _first_record(r)
        data = file.read_bytes()
        file.write_bytes({"truncated": data[: len(data) // 2], "empty": b"",
                          "garbage": b"garbage" * 40}[kind])
        return r.cli(*args)
    return case


def case_evil_pickle(r: Runner) -> Outcome:
    args = _lottery_ck(r)
    canary = r.tmp / "CODE-WAS-RUN"
    (r.tmp / "ck" / "replication-000003.pkl").write_bytes(pickle.dumps(_Evil(str(canary))))
    for f in (r.tmp / "ck").glob("replication-000003.npz"):
        f.unlink()
    o = r.cli(*args)
    o.note = "planted pickle executed!" if canary.exists() else "planted pickle not executed"
    return o


def case_flip(r: Runner) -> Outcome:
    args = _lottery_ck(r)
    clean = r.cli(*args).out
    _flip_float(r)
    o = r.cli(*args)
    o.note = "resumed numbers differ from the clean run (bit used)" if o.out != clean \
        else "resumed numbers equal the clean run"
    return o


def case_no_study_json(r: Runner) -> Outcome:
    args = _lottery_ck(r)
    (r.tmp / "ck" / "study.json").unlink()
    o = r.cli(*[a if a != "0" else a for a in args], "--seed", "1")
    if o.status == 0:
        o.note = "seed-0 records returned as seed 1"
    return o


def case_versions(extra: tuple[str, ...]):
    def case(r: Runner) -> Outcome:
        args = _lottery_ck(r)
        meta = r.tmp / "ck" / "study.json"
        stored = json.loads(meta.read_text())
        if "versions" in stored:
            stored["versions"]["numpy"] = "0.0.1"
            meta.write_text(json.dumps(stored))
        else:
            return Outcome("-", 0, "", "", "no versions stored in the checkpoint")
        return r.cli(*args, *extra)
    return case


def case_extend_m(r: Runner) -> Outcome:
    args = _lottery_ck(r)
    o = r.cli(*[("6" if a == "4" else a) for a in args])
    o.note = f"{_records(r.tmp / 'ck')} records after -M 6"
    return o


def case_other_seed(r: Runner) -> Outcome:
    args = _lottery_ck(r)
    return r.cli(*args, "--seed", "1")


def case_old_format(r: Runner) -> Outcome:
    shutil.copytree(HERE / "tests" / "data" / "checkpoint_v0", r.tmp / "ck")
    return r.py("""
        import restrictiveness as rx
        F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        study = rx.Study(rx.MonotoneGP(F, n_eval=50),
                         {"linear": rx.OLS("y ~ x"), "quad": rx.OLS("y ~ x + I(x**2)")},
                         baseline=rx.Constant(), n=[10, 20], replications=4, seed=3)
        try:
            study.run(progress=False, checkpoint="ck"); print("resumed")
        except rx.RestrictivenessError as e:
            import sys; print("error:", e, file=sys.stderr); sys.exit(2)
    """)


def case_foreign_record(r: Runner) -> Outcome:
    args = _lottery_ck(r)
    r.cli("replicate", "lottery", *FAST, "-M", "4", "--jobs", "1", "--checkpoint", "other",
          "--seed", "9")
    src = sorted((r.tmp / "other").glob("replication-*"))[1]
    dst = _first_record(r)
    shutil.copy(src, dst)
    return r.cli(*args)


_CK = """
    import json, multiprocessing, sys, time
    import numpy as np
    import restrictiveness as rx
    from restrictiveness.engine.checkpoint import Checkpoint
    FORK = multiprocessing.get_context("fork")
    def study(seed=4, M=12):
        F = rx.EligibleSet(rx.Box(x1=(0, 1), x2=(0, 1)), rx.Increasing("x1", "x2"),
                           rx.Between(0, 1))
        return rx.Study(rx.MonotoneGP(F, n_eval=60), {"linear": rx.OLS("y ~ x1 + x2")},
                        rx.Constant(), n=[10], replications=M, seed=seed)
"""


def case_race(r: Runner) -> Outcome:
    return r.py(_CK + """
    def opener(seed, dirs, barrier, q):
        c = study(seed=seed).configuration()
        for i, d in enumerate(dirs):
            barrier.wait()
            try:
                Checkpoint(d, c); q.put((i, True))
            except Exception:
                q.put((i, False))
    dirs = [f"r{i}" for i in range(200)]
    b, q = FORK.Barrier(2), FORK.Queue()
    ps = [FORK.Process(target=opener, args=(s, dirs, b, q)) for s in (1, 2)]
    [p.start() for p in ps]
    acc = np.zeros(200, int)
    for _ in range(400):
        i, ok = q.get(); acc[i] += ok
    [p.join() for p in ps]
    both, one = int((acc == 2).sum()), int((acc == 1).sum())
    print(f"both accepted in {both} of 200 trials, exactly one in {one}", file=sys.stderr)
    sys.exit(1 if both else 0)
    """)


def case_resumers(r: Runner) -> Outcome:
    return r.py(_CK + """
    import restrictiveness.engine.study as S
    real = S.run_unit
    def logged(st, m, *rest):
        with open("log", "a") as fh: fh.write(f"{m}\\n")
        time.sleep(0.05)
        return real(st, m, *rest)
    def resume(barrier):
        S.run_unit = logged
        barrier.wait()
        study(M=16).run(progress=False, checkpoint="ck")
    study(M=16).run(progress=False, replications=[0, 3], checkpoint="ck")
    b = FORK.Barrier(2)
    ps = [FORK.Process(target=resume, args=(b,)) for _ in range(2)]
    [p.start() for p in ps]; [p.join() for p in ps]
    with open("log") as fh:
        done = [int(x) for x in fh.read().split()]
    print(f"14 missing replications: {len(done)} computations, "
          f"{len(set(done))} distinct", file=sys.stderr)
    sys.exit(0 if len(done) == len(set(done)) == 14 else 1)
    """)


def case_dask_lost(r: Runner) -> Outcome:
    return r.py("""
        import sys, threading, time
        import numpy as np
        import restrictiveness as rx
        from restrictiveness.engine.protocol import FunctionRule
        from distributed import Client, LocalCluster
        class Slow(rx.Procedure):
            def fit(self, sample, rng):
                time.sleep(0.2)
                return FunctionRule(lambda X: np.full(len(X), sample.y.mean()))
        F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
        study = rx.Study(rx.MonotoneGP(F, n_eval=30), {"slow": Slow()}, rx.Constant(), n=[10],
                         replications=40)
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                               dashboard_address=None)
        client = Client(cluster)
        t = {}
        def kill():
            time.sleep(1.5); t["kill"] = time.monotonic(); cluster.scale(0)
        threading.Thread(target=kill, daemon=True).start()
        try:
            try:
                study.run(backend="dask", client=client, progress=False, worker_timeout=5)
            except TypeError:  # no worker_timeout before the fix
                study.run(backend="dask", client=client, progress=False)
            print("finished?!", file=sys.stderr)
        except rx.RestrictivenessError as e:
            print(f"error after {time.monotonic() - t['kill']:.1f} s (timeout 5 s): {e}",
                  file=sys.stderr)
            sys.exit(1)
    """, timeout=90)


def case_same_out(r: Runner) -> Outcome:
    cmd = [sys.executable, "-m", "restrictiveness", "demo", "-M", "40", "--jobs", "1",
           "--no-progress", "--out", "same.nc"]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=r.tmp, env=r.env)
    time.sleep(5)  # the first run is working
    o = r.cli("demo", "-M", "3", "--jobs", "1", "--no-progress", "--out", "same.nc")
    first.communicate(timeout=300)
    o.note = f"first run exit {first.returncode}"
    return o


def case_plant(content: str, *extra: str):
    def case(r: Runner) -> Outcome:
        (r.tmp / "procs.py").write_text(content)
        return r.cli("replicate", "lottery", *FAST, "-M", "3", "--jobs", "1", "--procedures",
                     "procs.py", *extra)
    return case


ALWAYS_FAILS = ("import restrictiveness as rx\nclass Bad(rx.Procedure):\n"
                "    def fit(self, sample, rng):\n        raise RuntimeError('always')\n"
                "PROCEDURES = {'bad': Bad()}\n")
TYPO = "import restrictiveness as rx\nPROCEDURES = {'typo': rx.OLS('ce ~ np.lgo(z_hi)')}\n"


def _row_of(label: str):
    def show(o: Outcome) -> str:
        rows = [line.strip() for line in o.out.splitlines() if line.strip().startswith(label)]
        if not rows:  # refused before any fit: what the user sees is the error
            return _message(o)
        warn = next((line for line in o.err.splitlines() if line.startswith("warning:")), "")
        return f"row: {rows[0]}; {warn[:60]}"
    return show


def _grep(text: str):
    def show(o: Outcome) -> str:
        hit = next((line.strip() for line in (o.out + o.err).splitlines() if text in line), "")
        return hit or "(not shown) " + _message(o)
    return show


def _files(r: Runner, *names: str) -> str:
    return ", ".join(f"{n}: {'written' if (r.tmp / n).exists() else 'absent'}" for n in names)


def case_outputs(r: Runner) -> Outcome:
    o = r.cli("demo", "-M", "3", "--n", "10", "--jobs", "1", "--no-progress", "--out", "d.nc",
              "--table", "csv", "t.csv", "--plot", "p.png")
    o.note = _files(r, "d.nc", "t.csv", "p.png")
    return o


def _table(fmt: str):
    def case(r: Runner) -> Outcome:
        o = r.cli("demo", "-M", "3", "--n", "10", "--jobs", "1", "--no-progress", "--table",
                  fmt, f"t.{fmt}")
        o.note = _files(r, f"t.{fmt}")
        return o
    return case


def case_compile(r: Runner) -> Outcome:
    cache = r.tmp / "numba-cache"
    cache.mkdir()
    return r.cli("replicate", "lottery", *FAST, "-M", "2", "--jobs", "1",
                 env={"NUMBA_CACHE_DIR": str(cache)})


def _res_file(r: Runner) -> None:
    r.cli("demo", "-M", "3", "--n", "10", "--jobs", "1", "--no-progress", "--out", "res.nc")


def _with(setup, *args: str, **kw):
    def case(r: Runner) -> Outcome:
        setup(r)
        return r.cli(*args, **kw)
    return case


def _write(name: str, data: bytes | str):
    def setup(r: Runner) -> None:
        path = r.tmp / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return setup


def _truncated(r: Runner) -> None:
    _res_file(r)
    data = (r.tmp / "res.nc").read_bytes()
    (r.tmp / "trunc.nc").write_bytes(data[: len(data) // 2])


def _kappa(r: Runner) -> None:
    shutil.copy(HERE / "tests" / "data" / "completeness_v0.nc", r.tmp / "kappa.nc")


def _readonly(r: Runner) -> None:
    (r.tmp / "ro").mkdir()
    (r.tmp / "ro").chmod(0o555)


def case_readonly(r: Runner) -> Outcome:
    _readonly(r)
    o = r.cli(*LOT, "--out", "ro/x.nc")
    if os.geteuid() == 0:
        o.note = "run as root: folder permissions do not apply"
    return o


LOT = ["replicate", "lottery", *FAST, "-M", "3", "--jobs", "1"]

CASES: list[tuple[str, str, object]] = [
    # checkpoints
    ("checkpoint", "truncated record, resume", _damaged("truncated")),
    ("checkpoint", "empty record, resume", _damaged("empty")),
    ("checkpoint", "garbage record, resume", _damaged("garbage")),
    ("checkpoint", "planted malicious pickle, resume", case_evil_pickle),
    ("checkpoint", "one flipped bit in a stored float", case_flip),
    ("checkpoint", "study.json deleted, --seed 1 run", case_no_study_json),
    ("checkpoint", "2 configurations open one new dir at once (200 trials)", case_race),
    ("checkpoint", "2 concurrent resumers of one dir", case_resumers),
    ("checkpoint", "other package versions, resume", case_versions(())),
    ("checkpoint", "other versions + --resume-other-versions", case_versions(
        ("--resume-other-versions",))),
    ("checkpoint", "-M 6 after -M 4", case_extend_m),
    ("checkpoint", "other --seed on a checkpoint (fields named?)", case_other_seed),
    ("checkpoint", "old-format (pickle) checkpoint", case_old_format),
    ("checkpoint", "record of another configuration copied in", case_foreign_record),
    ("checkpoint", "--checkpoint pointing at a file", _with(_write("file", "x"), *LOT,
                                                             "--checkpoint", "file")),
    ("checkpoint", "--checkpoint in a missing folder", lambda r: r.cli(*LOT, "--checkpoint",
                                                                       "no/ck")),
    # Ctrl-C
    ("ctrl-c", "SIGINT to group: -M 300 --checkpoint (GP, n=50, 2 workers)",
     lambda r: r.sigint("replicate", "lottery", "-M", "300", "--only", "GP regression", "--n",
                        "50", "--no-progress")),
    ("ctrl-c", "SIGINT to group: same, --jobs 1 (serial)",
     lambda r: r.sigint("replicate", "lottery", "-M", "300", "--only", "GP regression", "--n",
                        "50", "--no-progress", "--jobs", "1")),
    ("ctrl-c", "SIGINT to group: -M 300, all Table 1 procedures",
     lambda r: r.sigint("replicate", "lottery", "-M", "300", "--no-progress")),
    ("ctrl-c", "SIGINT to the main process only: -M 300",
     lambda r: r.sigint("replicate", "lottery", "-M", "300", "--only", "GP regression", "--n",
                        "50", "--no-progress", group=False)),
    # paths
    ("paths", "replicate --out into a missing folder", lambda r: r.cli(*LOT, "--out",
                                                                       "missing/x.nc")),
    ("paths", "replicate --out into a read-only folder", case_readonly),
    ("paths", "completeness demand --out into a missing folder",
     lambda r: r.cli("completeness", "demand", "--folds", "2", "--repeats", "1", "--out",
                     "missing/k.nc")),
    ("paths", "sensitivity --out into a missing folder",
     _with(_res_file, "sensitivity", "res.nc", "--out", "missing/s.nc")),
    ("paths", "--out is a directory", lambda r: r.cli(*LOT, "--out", ".")),
    ("paths", "two runs writing the same --out at once", case_same_out),
    ("paths", "--out and --table name the same file",
     lambda r: r.cli(*LOT, "--out", "a.nc", "--table", "csv", "a.nc")),
    ("paths", "--data missing file", lambda r: r.cli("completeness", "lottery", "--data",
                                                     "nope.csv")),
    ("paths", "--data not a CSV", _with(_write("bad.csv", b"\x00\x01garbage"), "completeness",
                                        "lottery", "--data", "bad.csv")),
    ("paths", "completeness lottery without --data", lambda r: r.cli("completeness",
                                                                     "lottery")),
    ("paths", "--procedures missing file", lambda r: r.cli(*LOT, "--procedures", "nope.py")),
    ("paths", "--procedures with a syntax error", _with(_write("p.py", "PROCEDURES = {\n"),
                                                        *LOT, "--procedures", "p.py")),
    ("paths", "--procedures not a .py file", _with(_write("p.txt", "x"), *LOT, "--procedures",
                                                   "p.txt")),
    ("paths", "sensitivity on a non-NetCDF file", _with(_write("x.nc", "hello"), "sensitivity",
                                                        "x.nc")),
    ("paths", "sensitivity on a truncated file", _with(_truncated, "sensitivity", "trunc.nc")),
    ("paths", "sensitivity on a completeness file", _with(_kappa, "sensitivity", "kappa.nc")),
    ("paths", "sensitivity on a missing file", lambda r: r.cli("sensitivity", "nope.nc")),
    # numbers
    ("numbers", "-M 0", lambda r: r.cli(*LOT[:-4], "-M", "0", "--jobs", "1")),
    ("numbers", "-M 1", lambda r: r.cli(*LOT[:-4], "-M", "1", "--jobs", "1")),
    ("numbers", "--folds 0", lambda r: r.cli("completeness", "demand", "--folds", "0",
                                             "--repeats", "1")),
    ("numbers", "--repeats 0", lambda r: r.cli("completeness", "demand", "--repeats", "0")),
    ("numbers", "--jobs 0", lambda r: r.cli(*LOT[:-2], "--jobs", "0")),
    ("numbers", "--jobs -2", lambda r: r.cli(*LOT[:-2], "--jobs", "-2")),
    ("numbers", "--seed -1", lambda r: r.cli(*LOT, "--seed", "-1")),
    ("numbers", "--n 0", lambda r: r.cli("replicate", "lottery", "--only", "GP regression",
                                         "-M", "3", "--n", "0")),
    ("numbers", "--n 100000 (memory)", lambda r: r.cli("replicate", "lottery", "--only",
                                                       "GP regression", "-M", "3", "--n",
                                                       "100000", timeout=120)),
    ("numbers", "--draws 0", lambda r: r.cli(*LOT, "--draws", "0")),
    ("numbers", "--gamma 0.5", _with(_res_file, "sensitivity", "res.nc", "--gamma", "0.5")),
    ("numbers", "--gamma-max 1", _with(_res_file, "sensitivity", "res.nc", "--gamma-max", "1")),
    # LOT's own --only would make this "--only given more than once"
    ("numbers", "--only unknown label", lambda r: r.cli(
        "replicate", "lottery", "--only", "nope", "--n", "20", "--no-progress", "-M", "3",
        "--jobs", "1")),
    ("numbers", "sensitivity --compare unknown", _with(_res_file, "sensitivity", "res.nc",
                                                       "--compare", "nope")),
    ("numbers", "sensitivity --discrepancy unknown", _with(_res_file, "sensitivity", "res.nc",
                                                           "--discrepancy", "kl")),
    ("numbers", "--table pdf FILE (unknown format)", lambda r: r.cli(*LOT, "--table", "pdf",
                                                                     "t.pdf")),
    # dask
    ("dask", "every worker lost mid-run (Python, timeout 5 s)", case_dask_lost),
    ("dask", "--backend dask --scheduler unreachable",
     lambda r: r.cli(*LOT[:-2], "--backend", "dask", "--scheduler", "tcp://127.0.0.1:1")),
    ("dask", "--scheduler without --backend dask",
     lambda r: r.cli(*LOT[:-2], "--scheduler", "tcp://127.0.0.1:1")),
    ("dask", "--scheduler missing-file.json",
     lambda r: r.cli(*LOT[:-2], "--backend", "dask", "--scheduler", "missing.json")),
    ("dask", "--worker-timeout 0", lambda r: r.cli(*LOT[:-2], "--backend", "dask",
                                                   "--worker-timeout", "0")),
    # failures
    ("failures", "a procedure failing in every fit", case_plant(ALWAYS_FAILS)),
    ("failures", "a formula with a typo (np.lgo)", case_plant(TYPO)),
    ("failures", "--strict with failed fits", case_plant(ALWAYS_FAILS, "--strict")),
    ("failures", "first run: kernels compile (empty numba cache)", case_compile),
    # reading the output
    ("output", "summary says how to read r̂", lambda r: r.cli(*LOT)),
    ("output", "comparison with the paper shows z", lambda r: r.cli(
        "replicate", "lottery", "--only", "CPT(delta)", "--n", "100", "-M", "4", "--jobs", "1",
        "--no-progress")),
    ("output", "--table csv + --out + --plot", case_outputs),
    ("output", "--table latex FILE", _table("latex")),
    ("output", "--table html FILE", _table("html")),
    ("output", "--version", lambda r: r.cli("--version")),
    ("output", "replicate --help has an example", lambda r: r.cli("replicate", "--help")),
    ("output", "replicate demand at its quick default",
     lambda r: r.cli("replicate", "demand", "--only", "MNL", "--n", "50", "--no-progress",
                     timeout=600)),
]

SHOW = {
    "a procedure failing in every fit": _row_of("bad"),
    "a formula with a typo (np.lgo)": _row_of("typo"),
    "first run: kernels compile (empty numba cache)": _grep("compiling"),
    "summary says how to read r̂": _grep("How to read"),
    "comparison with the paper shows z": _grep("z="),
    "--version": lambda o: o.out.strip() or _message(o),
    "replicate --help has an example": _grep("replicate lottery -M 100"),
    "replicate demand at its quick default": _grep("too few"),
}


def run_all(repo: Path, only: set[int] | None) -> dict[int, Outcome]:
    results = {}
    for i, (_, name, case) in enumerate(CASES, 1):
        if only and i not in only:
            continue
        tmp = Path(tempfile.mkdtemp(prefix=f"case{i}-"))
        try:
            results[i] = case(Runner(repo, tmp))
        finally:
            (tmp / "ro").chmod(0o755) if (tmp / "ro").exists() else None
            shutil.rmtree(tmp, ignore_errors=True)
        o = results[i]
        print(f"[{i}/{len(CASES)}] {name}: {o.status} in {o.seconds:.1f} s", file=sys.stderr)
    return results


def _cell(name: str, o: Outcome) -> str:
    text = SHOW.get(name, _message)(o)
    text = text.replace("python -m restrictiveness ", "")
    text = text.split(" (see ")[0] if "--help)" in text else text
    if o.note and o.note not in text:
        text = f"[{o.note}] {text}"
    text = " ".join(text.split()).replace("|", "/")
    return f"{o.status} | {o.seconds:.1f} | {text[:150]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", action="append", type=Path,
                        help="checkout(s) to run against (default: this one)")
    parser.add_argument("--only", help="comma-separated case numbers")
    args = parser.parse_args()
    repos = [p.resolve() for p in (args.repo or [HERE])]
    only = {int(x) for x in args.only.split(",")} if args.only else None
    runs = [run_all(repo, only) for repo in repos]
    head = " | ".join(f"exit | s | message ({r.name or r})" for r in repos)
    print(f"| # | class | case | {head} |")
    print("|---|---|---|" + "---|---|---|" * len(repos))
    for i, (group, name, _) in enumerate(CASES, 1):
        if only and i not in only:
            continue
        cells = " | ".join(_cell(name, run[i]) for run in runs)
        print(f"| {i} | {group} | {name} | {cells} |")


if __name__ == "__main__":
    main()

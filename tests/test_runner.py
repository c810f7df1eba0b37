"""The study runner under stress: interrupts, dying workers, sizes that cannot fit."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from deadlines import within
from forking import held_by_another_thread

import restrictiveness as rx
from restrictiveness.engine.memory import check_memory, format_bytes
from restrictiveness.engine.protocol import FunctionRule
from restrictiveness.engine.timeouts import run_in_child, run_staged


def _prior():
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    return rx.MonotoneGP(F, n_eval=40)


class InterruptedAt(rx.Procedure):
    """Simulates Ctrl-C during the fit of one replication; ``wrapped`` the way numba reports
    it (a SystemError caused by the KeyboardInterrupt)."""

    def __init__(self, at, wrapped):
        self.calls, self.at, self.wrapped = 0, at, wrapped

    def __repr__(self):  # the same study before and after the interrupt
        return "InterruptedAt()"

    def fit(self, sample, rng):
        self.calls += 1
        if self.calls == self.at:
            if not self.wrapped:
                raise KeyboardInterrupt
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as exc:
                raise SystemError("CPUDispatcher returned a result with an exception set") \
                    from exc
        return FunctionRule(lambda X: np.full(len(X), sample.y.mean()))


@pytest.mark.parametrize("wrapped", [False, True])
def test_an_interrupt_stops_the_run_and_keeps_finished_replications(tmp_path, wrapped):
    """Before: an interrupt inside a numba kernel (SystemError) was recorded as a failed fit
    and the run went on."""
    ck = tmp_path / "ck"
    study = rx.Study(_prior(), {"p": InterruptedAt(3, wrapped)}, rx.Constant(), n=[10],
                     replications=6)
    with pytest.raises(rx.StudyInterrupted) as info:
        study.run(progress=False, checkpoint=ck)
    assert (info.value.finished, info.value.total) == (2, 6)
    assert str(info.value) == (f"interrupted: 2 of 6 replications finished, saved in {ck}; "
                               "rerun the same command to resume")
    assert isinstance(info.value, KeyboardInterrupt)
    assert sorted(p.name for p in ck.glob("replication-*.npz")) == [
        "replication-000000.npz", "replication-000001.npz"]
    assert not list((ck / ".claims").iterdir())
    res = rx.Study(_prior(), {"p": InterruptedAt(0, wrapped)}, rx.Constant(), n=[10],
                   replications=6).run(progress=False, checkpoint=ck)  # the rerun resumes
    assert int(res.dataset["failed"].sum()) == 0


def test_an_interrupt_while_the_checkpoint_opens_does_not_say_to_pass_one(tmp_path, monkeypatch):
    """A Ctrl-C while the checkpoint was being opened (fingerprinting the code) said 'not saved
    (pass a checkpoint directory to keep finished replications)' to a run given one (seen in
    a random-kill campaign)."""
    import restrictiveness.engine.checkpoint as checkpoint_module

    def interrupted(objects=()):
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint_module, "code_fingerprint", interrupted)
    ck = tmp_path / "ck"
    study = rx.Study(_prior(), {"p": InterruptedAt(3, False)}, rx.Constant(), n=[10],
                     replications=6)
    with pytest.raises(rx.StudyInterrupted) as info:
        study.run(progress=False, checkpoint=ck)
    assert str(info.value) == (f"interrupted: 0 of 6 replications finished, saved in {ck}; "
                               "rerun the same command to resume")


class DiesInWorker(rx.Procedure):
    def fit(self, sample, rng):
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's OOM killer would


def test_a_worker_that_dies_is_an_execution_error():
    study = rx.Study(_prior(), {"p": DiesInWorker()}, rx.Constant(), n=[10], replications=4)
    with pytest.raises(rx.ExecutionError, match=r"a worker process died while running "
                                                r"one of replications 0, 1, 2, 3 \(killed, or "
                                                r"out of memory"):
        study.run(n_jobs=2, progress=False)


class DiesInReplicationZero(rx.Procedure):
    """Kills its worker in replication 0 only (told apart by the sample, which is drawn from
    the replication's pseudo-truth); the other fits never end (the pool is stopped on the
    error), so all four replications of the two workers are in flight when it dies. (Fits of
    a second let the other worker finish replication 1 first when the dying one started over
    a second late under load, and replication 4 was in flight instead.)"""

    def __init__(self, first_y):
        self.first_y = first_y

    def fit(self, sample, rng):
        if sample.y[0] == self.first_y:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(600)


def test_a_dead_worker_names_the_replications_in_flight_not_an_arbitrary_one():
    """Before: the error named whichever broken future came first (e.g. replication 2 when
    replication 0 killed the worker)."""
    from restrictiveness.engine.study import replication_context

    probe = rx.Study(_prior(), {"p": rx.Constant()}, rx.Constant(), n=[10], replications=6)
    first_y = replication_context(probe, 0).samples[0, 0].y[0]
    study = rx.Study(_prior(), {"p": DiesInReplicationZero(first_y)}, rx.Constant(), n=[10],
                     replications=6)
    with pytest.raises(rx.ExecutionError) as info:
        study.run(n_jobs=2, progress=False)
    assert str(info.value) == ("a worker process died while running one of replications 0, 1, "
                               "2, 3 (killed, or out of memory?); rerun with fewer workers or "
                               "smaller n")


_ORPHAN_SCRIPT = """
import os, sys, time
import numpy as np
import restrictiveness as rx
from restrictiveness.engine.protocol import FunctionRule

class Marks(rx.Procedure):
    def fit(self, sample, rng):
        open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()
        time.sleep(2.0)
        return FunctionRule(lambda X: np.full(len(X), sample.y.mean()))

F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
rx.Study(rx.MonotoneGP(F, n_eval=40), {"p": Marks()}, rx.Constant(), n=[10],
         replications=8).run(n_jobs=2, progress=False)
"""


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_workers_of_a_killed_parent_exit(tmp_path):
    """Before: workers of a parent killed with SIGKILL finished their fits and then waited
    for work for ever (still alive 30 s later), holding their memory."""
    script = tmp_path / "run.py"
    script.write_text(_ORPHAN_SCRIPT)
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path)],
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(workers := [int(p.name) for p in tmp_path.iterdir() if p.name.isdigit()]) < 2:
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10  # a fit takes 2 s; the watch looks every 0.5 s
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [pid for pid in workers if _alive(pid)]
    for pid in alive:  # leave no process behind, whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert alive == []


def test_n_jobs_must_be_a_positive_count_or_minus_one():
    study = rx.Study(_prior(), {"ols": rx.OLS("y ~ x")}, rx.Constant(), n=[10], replications=2)
    for bad in (0, -2, 1.5):
        with pytest.raises(rx.ConfigurationError, match="n_jobs must be a positive number"):
            study.run(n_jobs=bad, progress=False)


def test_memory_estimate_refuses_sizes_that_cannot_fit():
    lottery = rx.lottery.study({"GP": rx.lottery.gp_regression()}, n=[50, 100000],
                               replications=2)
    points = 1000 + 100000
    # prior: covariance + factor of the 101,000 points; GP regression: its 100,000² pair
    assert lottery.memory_estimate() == 2 * 8 * points**2 + 2 * 8 * 100000**2
    with pytest.raises(rx.ConfigurationError,
                       match=r"n=100000 needs at least 301.0 GiB of memory per replication, "
                             r"more than the 64.0 GiB available; use smaller sample sizes"):
        check_memory(lottery, workers=1, available=64 * 2**30)
    small = rx.lottery.study({"GP": rx.lottery.gp_regression()}, n=[5000], replications=2)
    need = small.memory_estimate()
    assert check_memory(small, workers=2, available=3 * need) == need
    with pytest.raises(rx.ConfigurationError, match=r"4 workers need about .*use fewer workers"):
        check_memory(small, workers=4, available=3 * need)
    assert format_bytes(1536) == "1.5 KiB" and format_bytes(12) == "12 B"
    with pytest.raises(rx.ConfigurationError, match="n=100000 needs at least"):
        lottery.run(progress=False)  # refused before any work


def test_a_run_whose_results_cannot_fit_in_memory_is_refused_before_any_work():
    """``-M 10**12`` failed with a bare MemoryError (the CLI: "unexpected MemoryError ... a
    bug") while listing the replications; every record is held until the results are
    assembled, so M bounds the memory as n does."""
    from restrictiveness.engine.memory import RECORD_OVERHEAD, results_bytes

    study = rx.Study(_prior(), {"a": rx.OLS("y ~ x"), "b": rx.Constant()}, rx.Constant(),
                     discrepancies=[rx.MSE(), rx.MSE(name="mse2")], n=[5, 10, 20], draws=2,
                     replications=10**12)
    # (P, D, N, K) = (2, 2, 3, 2): losses 24, the baseline's 12, failures, replaced rows and
    # seconds 18, the baseline's seconds 3, the truth's scale 6 numbers; twice (records and
    # the assembled results)
    assert results_bytes(study, 1000) == 1000 * (RECORD_OVERHEAD + 2 * 8 * 63)
    per, need = RECORD_OVERHEAD + 2 * 8 * 63, study.memory_estimate()
    free = 1000 * per + need  # one worker's replication and the results of M = 1,000
    assert check_memory(study, workers=1, available=free, replications=1000) == need
    with pytest.raises(rx.ConfigurationError,
                       match=rf"the results of M=1,001 replications need at least "
                             rf"{format_bytes(1001 * per)} of memory \({format_bytes(per)} "
                             rf"each\), more than the {format_bytes(free)} available; use "
                             r"fewer replications \(-M\)"):
        check_memory(study, workers=1, available=free, replications=1001)
    with pytest.raises(rx.ConfigurationError, match=r"2 workers need about .* beside the "
                                                    r"results' .*use fewer workers"):
        check_memory(study, workers=2, available=free, replications=1000)
    start = time.process_time()
    with pytest.raises(rx.ConfigurationError, match=r"the results of M=1,000,000,000,000 "
                                                    r"replications need at least 2.7 PiB"):
        study.run(progress=False)
    assert time.process_time() - start < 5


def test_available_memory_is_the_smaller_of_memavailable_and_the_cgroups_room(monkeypatch):
    """/proc/meminfo counts in KiB; a container's room is its limit less what it uses."""
    from restrictiveness.engine import memory

    files = {"/proc/meminfo": "MemTotal:       8000000 kB\nMemAvailable:    3000000 kB\n",
             "/sys/fs/cgroup/memory.max": "2000000000\n",
             "/sys/fs/cgroup/memory.current": "500000000\n"}

    class FakePath:
        def __init__(self, path):
            self.path = str(path)

        def read_text(self):
            if self.path not in files:
                raise FileNotFoundError(self.path)
            return files[self.path]

    monkeypatch.setattr(memory, "Path", FakePath)
    assert memory.available_memory() == 1_500_000_000          # the cgroup's room
    files["/sys/fs/cgroup/memory.max"] = "max\n"                # no limit: MemAvailable
    assert memory.available_memory() == 3_000_000 * 1024
    files["/sys/fs/cgroup/memory.max"] = "9000000000\n"         # a limit above the machine's
    assert memory.available_memory() == 3_000_000 * 1024


# -- fit_timeout: a procedure that never returns --------------------------------------------

class Stuck(rx.Procedure):
    """Never returns, as a hostile or broken procedure may; first starts a process of its own
    (named by ``marker``) that must die with it."""

    def __init__(self, marker):
        self.marker = marker

    def __repr__(self):
        return f"Stuck({self.marker!r})"

    def fit(self, sample, rng):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)", self.marker])
        while True:
            time.sleep(1)


def _processes_named(marker):
    import psutil
    # the status read with the command line: a process that exits between two reads (the
    # stuck fit's own process, being killed) raised NoSuchProcess from p.status()
    return [p for p in psutil.process_iter(["cmdline", "status"])
            if marker in (p.info["cmdline"] or []) and p.info["status"] != psutil.STATUS_ZOMBIE]


def _children():
    """This process's descendants, but multiprocessing's resource tracker (started once, e.g.
    by dask's local cluster, and kept for the life of the process). One that has exited but is
    not reaped yet still counts (a zombie's command line cannot be read: that raised, and
    failed the tests polling for the stopped processes to go, under load); one gone by the
    time it is read does not."""
    import psutil
    found = set()
    for p in psutil.Process().children(recursive=True):
        try:
            command = " ".join(p.cmdline())
        except psutil.ZombieProcess:
            command = ""
        except psutil.NoSuchProcess:
            continue
        if "multiprocessing.resource_tracker" not in command:
            found.add(p.pid)
    return found


def _assert_no_process_left(before):
    """Within 10 s, no child of this process is left beyond those in ``before``."""
    deadline = time.monotonic() + 10
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _children() <= before


def _timeout_study(procedures):
    return rx.Study(_prior(), procedures, baseline=rx.Constant(), n=[10, 20], replications=3,
                    seed=7)


@pytest.mark.parametrize("backend, n_jobs, start_up, limit", [("processes", 1, 0, 1),
                                                            ("processes", 2, 0, 1),
                                                            ("dask", 2, 20, 2)])
def test_a_fit_that_never_returns_is_stopped_and_recorded_as_failed(backend, n_jobs, start_up,
                                                                    limit):
    """Before: no per-fit limit, and the run hung for ever on the stuck procedure. On dask, the
    fits' processes are forked by the dask workers (``start_up``: a local cluster's start;
    ``limit``: the pseudo-truth draws get the limit too, and in a loaded machine's fresh
    cluster 1 s was once too short for one of them)."""
    marker = f"rx-stuck-{os.getpid()}-{backend}-{n_jobs}"
    fine = {"linear": rx.OLS("y ~ x"), "quadratic": rx.OLS("y ~ x + I(x**2)")}
    reference = _timeout_study(fine).run(progress=False).dataset
    before = _children()
    start = time.monotonic()
    with pytest.warns(rx.FailureWarning, match=rf"stuck failed in 6 of 6 fits.*first error: "
                                               rf"fit: timed out after {limit} s \(fit_timeout\)"):
        ds = _timeout_study({"linear": fine["linear"], "stuck": Stuck(marker),
                             "quadratic": fine["quadratic"]}
                            ).run(n_jobs=n_jobs, backend=backend, fit_timeout=limit,
                                  progress=False).dataset
    elapsed = time.monotonic() - start
    # six stuck fits of `limit` s on n_jobs workers, plus a fork per replication and timeout
    # and the cluster's start, which wait for the CPU on a loaded machine (43 s against 36 s
    # once at load 6 on 2 cores); a hang would not end at all
    contention = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    assert elapsed < 6 * limit / n_jobs + (10 + start_up) * contention
    stuck = ds.sel(procedure="stuck")
    assert (stuck["failed"] == 1).all()
    assert all(str(e).startswith(f"fit: timed out after {limit} s")
               for e in stuck["error"].values.flat)
    assert ((stuck["seconds"] >= limit) & (stuck["seconds"] < limit + 4)).all()
    # a failed fit gets the baseline's predictions: its loss is the baseline's
    assert (stuck["loss"] == ds["baseline_loss"]).all()
    for label in fine:  # the other fits, bit for bit those of a run without the stuck one
        assert (ds["loss"].sel(procedure=label) == reference["loss"].sel(procedure=label)).all()
        assert (ds["failed"].sel(procedure=label) == 0).all()
    # nothing left behind: the fits' processes and what the stuck fit started are gone
    deadline = time.monotonic() + 5 + start_up
    while (_processes_named(marker) or _children() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _processes_named(marker)
    for p in left:
        p.kill()
    assert left == []
    assert _children() <= before


_STUCK_SCRIPT = """
import os, sys, time
import restrictiveness as rx

class Stuck(rx.Procedure):
    def fit(self, sample, rng):
        open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()
        while True:
            time.sleep(1)

F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
rx.Study(rx.MonotoneGP(F, n_eval=40), {"p": Stuck()}, rx.Constant(), n=[10],
         replications=2).run(fit_timeout=600, progress=False)
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process states from /proc")
def test_the_process_of_a_fit_dies_with_its_run(tmp_path):
    """A run killed with SIGKILL cannot stop the process running a fit; it must not be left
    running the fit for ever (the kernel kills it with its parent)."""
    script = tmp_path / "run.py"
    script.write_text(_STUCK_SCRIPT)
    parent = subprocess.Popen([sys.executable, str(script), str(tmp_path)],
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (children := [int(p.name) for p in tmp_path.iterdir() if p.name.isdigit()]):
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    assert children != [parent.pid]  # the fit runs in a process of its own
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = [pid for pid in children if _alive(pid)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert alive == []


class EndsItsProcess(rx.Procedure):
    def fit(self, sample, rng):
        os._exit(3)


def test_a_fit_that_ends_its_process_is_named_with_its_replication():
    """Under fit_timeout the error said "the process running ('killer', 0, 0) died": the
    label, the n index and the draw, not the replication."""
    study = _timeout_study({"linear": rx.OLS("y ~ x"), "killer": EndsItsProcess()})
    with pytest.raises(rx.ExecutionError, match=r"the process running the fit of procedure "
                                                r"'killer' in replication 0 \(n=10\) died "
                                                r"\(exit status 3\)"):
        study.run(fit_timeout=30, progress=False)


_DASK_KILLER = """
import os, sys, time
import numpy as np
import restrictiveness as rx

class Killer(rx.Procedure):
    def fit(self, sample, rng):
        with open(sys.argv[1], "a") as f:
            f.write(f"{time.time()}\\n")
        os.kill(os.getpid(), 9)

def run():
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=30), {"ols": rx.OLS("y ~ x"), "killer": Killer()},
                     rx.Constant(), n=[10], replications=2)
    try:
        study.run(backend="dask", n_jobs=2, progress=False)
    except rx.ExecutionError as exc:
        print(f"{time.time()} {exc}")

"""


@pytest.mark.skipif(sys.platform == "win32", reason="kills its worker with a POSIX signal")
def test_a_dask_worker_ended_by_a_fit_fails_at_once_naming_the_fit(tmp_path):
    """A procedure of the script's own (pickled by value) killing its dask worker: dask retried
    the replication on three more workers, restarted each time, and the run failed after about
    a minute with "rerun with fewer workers or smaller n", naming no procedure. Timed from the
    first death, so a loaded machine's slow cluster start does not count."""
    script, deaths = tmp_path / "run.py", tmp_path / "deaths"
    script.write_text(_DASK_KILLER + 'if __name__ == "__main__":\n    run()\n')
    temp = tmp_path / "tmp"
    temp.mkdir()
    out = subprocess.run([sys.executable, str(script), str(deaths)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "TMPDIR": str(temp)}).stdout
    failed_at, message = out.strip().splitlines()[-1].split(" ", 1)
    first_death = min(float(t) for t in deaths.read_text().split())
    assert re.match(r"a dask worker process died running replication [01], in the fit or "
                    r"predictions of procedure 'killer' \(n=10\): the code ended its process",
                    message)
    assert not list(temp.glob("rx-dask-steps-*"))  # the workers' notes are removed
    # no retries: one death per replication at most (before: four for the first, each after a
    # worker's restart); the time, from the first death to the error, includes the cluster's
    # close, hence the margin under load (before: 45-60 s)
    assert len(deaths.read_text().split()) <= 2
    assert float(failed_at) - first_death < 30


def test_a_dask_result_lost_with_the_last_worker_as_it_is_delivered_does_not_hang():
    """Replications finished on the only worker, which leaves while the first is delivered
    (``finish`` writing its record): the others, fetched only then, were computed again by a
    worker that never came, and ``Future.result()`` waited for them for ever (the run of
    ``benchmarks/cli_cases.py`` "every worker lost mid-run" hung in about 1 in 25 tries).
    Now every result that reached the client is delivered, and the rest fail within the
    timeout."""
    import distributed

    from restrictiveness.engine.study import _gather_dask

    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    client = distributed.Client(cluster)
    got: dict = {}
    try:
        futures = {client.submit(abs, -m, pure=False): m for m in range(3)}
        distributed.wait(list(futures))

        def finish(m, result):
            got[m] = result
            if len(got) == 1:  # the worker leaves, and dask marks the others lost
                cluster.scale(0)
                until = time.monotonic() + 20
                while any(f.status == "finished" for f in futures) \
                        and time.monotonic() < until:
                    time.sleep(0.01)
                assert all(f.status == "lost" for f in futures)

        with within(30):
            try:
                _gather_dask(client, futures, finish, worker_timeout=1)
            except rx.ExecutionError as exc:
                assert str(exc).startswith("no dask worker has been connected")
                assert len(got) < 3
            else:
                assert len(got) == 3
    finally:
        client.close()
        cluster.close()
    assert got == {m: m for m in got}


def test_a_dask_run_from_a_script_without_a_main_guard_says_to_add_one(tmp_path):
    """Unguarded, each spawned worker imported the script and ran the study again: pages of
    "bootstrapping phase" and "Nanny failed to start" tracebacks. Refused before any worker
    starts; a guarded script runs (the test above)."""
    script = tmp_path / "run.py"
    script.write_text(_DASK_KILLER + "run()\n")
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "deaths")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "bootstrapping" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"restrictiveness.shared.exceptions.ConfigurationError: backend='dask' starts worker "
        f"processes that import your script {str(script)!r} again, and its line "
        f"{_DASK_KILLER.count(chr(10)) + 1} would run the study again in each of them: put the "
        "script's work under a guard, `if __name__ == \"__main__\":` (or run with the "
        "processes backend, which needs none)")
    assert not (tmp_path / "deaths").exists()  # nothing ran


@pytest.mark.parametrize("test", ['__name__ == "__main__" and not dry_run',
                                  '__name__ in ("__main__",)', '"__main__" == __name__',
                                  'True'])
def test_the_main_guard_check_takes_a_guard_written_any_way(tmp_path, test):
    """Only `__name__ == "__main__"` itself was taken: a guard such as `if __name__ ==
    "__main__" and not args.dry_run:` was refused as missing (`True` is no guard)."""
    script = tmp_path / "run.py"
    script.write_text("from restrictiveness.engine.study import _check_main_guard\n"
                      f"dry_run = False\nif {test}:\n    _check_main_guard()\n"
                      "    print('passed')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120)
    if test == "True":
        assert done.returncode == 1 and "put the script's work under a guard" in done.stderr
    else:
        assert (done.returncode, done.stdout) == (0, "passed\n"), done.stderr


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), True, "5"])
def test_fit_timeout_must_be_a_positive_number_of_seconds(bad):
    study = _timeout_study({"linear": rx.OLS("y ~ x")})
    with pytest.raises(rx.ConfigurationError, match="fit_timeout must be a positive"):
        study.run(fit_timeout=bad, progress=False)
    # and where the limit is applied, for direct callers (0 timed out every unit at once)
    from restrictiveness.engine.timeouts import run_in_child
    with pytest.raises(rx.ConfigurationError, match="fit_timeout must be a positive"):
        run_in_child(lambda key: key, [1], bad, lambda key, s: None)


def test_a_fit_timeout_longer_than_a_single_wait_gives_the_numbers_of_no_limit(monkeypatch):
    """fit_timeout=1e308 is a finite number, accepted, and the run failed with "timestamp out
    of range for platform time_t" (select's limit): a long limit now waits in slices, and a
    fit is stopped only once the limit itself has passed."""
    from restrictiveness.engine import timeouts

    study = _timeout_study({"linear": rx.OLS("y ~ x"), "quadratic": rx.OLS("y ~ x + I(x**2)")})
    reference = study.run(progress=False).dataset["loss"].values
    assert study.run(fit_timeout=1e308, progress=False).dataset["loss"].values.tolist() == \
        reference.tolist()
    monkeypatch.setattr(timeouts, "_WAIT_SLICE", 1e-4)  # every wait longer than one slice
    assert study.run(fit_timeout=60, progress=False).dataset["loss"].values.tolist() == \
        reference.tolist()


def test_fit_timeout_is_refused_for_fits_on_threads():
    slow = rx.OLS("y ~ x")
    slow.io_bound = True
    study = _timeout_study({"llm": slow})
    with pytest.raises(rx.ConfigurationError, match=r"cannot stop the fits of \['llm'\]: with "
                                                    "concurrency=N they run on threads"):
        study.run(fit_timeout=5, concurrency=2, progress=False)


class Compiles(rx.OLS):
    """OLS whose fit first spends 2 s in numba compilation (numba's own event, as a kernel
    compiled on first use in the fit's process announces it)."""

    def fit(self, sample, rng):
        from numba.core import event
        with event.trigger_event("numba:compile", data={"dispatcher": None, "args": ()}):
            time.sleep(2)
        return super().fit(sample, rng)


def test_numba_compilation_does_not_count_against_fit_timeout():
    """Before: a cold numba cache timed out every compiled fit whose compilation took longer
    than the limit, one child after another (each compiling again)."""
    study = rx.Study(_prior(), {"linear": Compiles("y ~ x")}, baseline=rx.Constant(), n=[10],
                     replications=2, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("error", rx.FailureWarning)
        ds = study.run(fit_timeout=1, progress=False).dataset
    assert (ds["failed"] == 0).all()
    plain = rx.Study(_prior(), {"linear": rx.OLS("y ~ x")}, baseline=rx.Constant(), n=[10],
                     replications=2, seed=7).run(progress=False).dataset
    assert (ds["loss"].values == plain["loss"].values).all()


class StuckAfterSetUp(rx.Procedure):
    """Makes a file, then never returns; its ``finally`` removes the file (as the sandbox
    removes a program's temporary directory)."""

    def __init__(self, folder, clean_up_seconds=0.0):
        self.folder = folder
        self.clean_up_seconds = clean_up_seconds

    def __repr__(self):
        return f"StuckAfterSetUp({self.folder!r}, {self.clean_up_seconds!r})"

    def fit(self, sample, rng):
        path = os.path.join(self.folder, f"{os.getpid()}-{time.monotonic_ns()}")
        try:
            # made inside the try, as the sandbox's directory is owned (and a sweep reclaims
            # what a killed owner left): made before it, the file was seen by the test, which
            # then stopped the run, while the fit waited for the CPU short of its try, and the
            # stop request raised there, outside it (a file left in 1 of 15 runs under load)
            open(path, "w").close()
            while True:
                time.sleep(1)
        finally:
            # only the fit whose file sorts last takes its time: the other's worker exits first,
            # once that clean-up has begun (``.cleaning``), so that the executor's second
            # SIGTERM arrives during it; under load both SIGTERMs reached the slow worker
            # before its handler ran, as one, and a clean-up that the second one interrupts
            # went unseen
            files = [str(p) for p in pathlib.Path(self.folder).iterdir()
                     if not p.name.endswith(".cleaning")]
            if path != max(files):
                open(path + ".cleaning", "w").close()
                time.sleep(self.clean_up_seconds)
                os.remove(path + ".cleaning")
            elif self.clean_up_seconds and len(files) > 1:
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not any(
                        p.name.endswith(".cleaning") for p in pathlib.Path(self.folder).iterdir()):
                    time.sleep(0.01)
            os.remove(path)


def test_a_timed_out_fit_runs_its_clean_up(tmp_path):
    """Before, SIGKILL left every file a stuck fit would have removed in its ``finally`` (one
    /tmp/rx-sandbox-* directory per timed-out program fit); it is now asked to stop first."""
    study = rx.Study(_prior(), {"stuck": StuckAfterSetUp(str(tmp_path))}, baseline=rx.Constant(),
                     n=[10], replications=2, seed=7)
    with pytest.warns(rx.FailureWarning, match="timed out after 1 s"):
        ds = study.run(fit_timeout=1, progress=False).dataset
    assert (ds["failed"] == 1).all()
    assert list(tmp_path.iterdir()) == []


def test_an_interrupt_under_fit_timeout_runs_the_fits_clean_up(tmp_path, monkeypatch,
                                                               ctrl_c_raises):
    """Ctrl-C during a run with fit_timeout: the fit runs in a grandchild (a child per
    replication, a child of it per batch of fits), and both used to be SIGKILLed on the way
    out, so the fit's ``finally`` never ran (one /tmp/rx-sandbox-* directory per busy fit)."""
    import threading

    from restrictiveness.engine import timeouts

    # a clean-up may wait for the CPU for seconds on a loaded machine (the default 2 s grace
    # failed it there); the fork inherits the setting
    monkeypatch.setattr(timeouts, "STOP_GRACE", 20.0)
    study = rx.Study(_prior(), {"stuck": StuckAfterSetUp(str(tmp_path))}, baseline=rx.Constant(),
                     n=[10], replications=2, seed=7)

    def interrupt_when_the_fit_is_stuck():
        deadline = time.monotonic() + 60
        while not list(tmp_path.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_the_fit_is_stuck, daemon=True).start()
    with pytest.raises((rx.StudyInterrupted, KeyboardInterrupt)):
        study.run(fit_timeout=60, progress=False)
    assert list(tmp_path.iterdir()) == []


def _ignores_stop_requests(key):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(60)


def test_a_fit_terminated_from_outside_is_reported_as_its_process_dying():
    """A SIGTERM from outside (``kill <pid>``, a scheduler) reached the caller as the private
    exception that carries the caller's own stop requests, which no ``except Exception``
    catches; it is now the death of the fit's process, as without the handler."""
    def terminated(key):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)

    with pytest.raises(rx.ExecutionError, match="killed by signal 15"):
        run_in_child(terminated, [0], 30.0, lambda key, seconds: None)


def test_a_repeated_stop_request_does_not_interrupt_the_clean_up(tmp_path):
    """A second SIGTERM while the unit unwinds from the first (a scheduler signalling every
    process, then the caller asking its child to stop) raised again inside the ``finally``,
    and the clean-up was skipped."""
    path = tmp_path / "work"

    def unit(key):
        path.write_text("")
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(60)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
            path.unlink()

    with pytest.raises(rx.ExecutionError, match="killed by signal 15"):
        run_in_child(unit, [0], 30.0, lambda key, seconds: None)
    assert not path.exists()


def test_a_stop_request_as_the_units_process_starts_still_runs_its_clean_up(
        tmp_path, monkeypatch, ctrl_c_raises):
    """Ctrl-C (or the caller's own stop request) arriving after the fork, before the ``with``
    block held the child: the child was forked in ``__init__``, whose exception skips
    ``__exit__``, so it was never asked to stop, and died with its caller without its
    clean-up (PR_SET_PDEATHSIG's SIGKILL). Seen as a fit's file left in 3 of 40 interrupted
    runs under fit_timeout on a loaded machine, where the replication's process forked the
    fit's just before its own stop request. Here Ctrl-C comes once the unit runs, while the
    caller finishes setting the child up (its os.setpgid call)."""
    path = tmp_path / "work"

    def unit(key):
        try:
            path.write_text(str(os.getpid()))
            time.sleep(60)
        finally:
            path.unlink()

    real = os.setpgid

    def setpgid(pid, group):
        if pid != 0:  # the caller's call (the child's is setpgid(0, 0))
            deadline = time.monotonic() + 60
            while not (path.exists() and path.read_text()) and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)
        return real(pid, group)

    monkeypatch.setattr(os, "setpgid", setpgid)
    with pytest.raises(KeyboardInterrupt):
        run_in_child(unit, [0], 30.0, lambda key, seconds: None)
    left = path.exists()
    if left:  # the old code's child, still running: end it before failing
        os.kill(int(path.read_text()), signal.SIGKILL)
    assert not left


def test_a_stopped_unit_reports_the_limit_not_its_clean_up():
    """The seconds given to on_timeout are the limit's: the grace wait for a unit's clean-up
    (here a unit that ignores the request, so the full 2 s) was counted as fit time."""
    out = run_in_child(_ignores_stop_requests, [0], 0.5, lambda key, seconds: seconds)
    assert 0.5 <= out[0] < 1.5


def test_an_interrupt_during_the_grace_wait_still_kills_the_unit(tmp_path, monkeypatch,
                                                               ctrl_c_raises):
    """Ctrl-C while a unit that ignores the stop request is given its grace: the kill and the
    reap were skipped, and the unit ran on until the caller exited."""
    import threading

    from restrictiveness.engine import timeouts

    # room for a niced process on a loaded machine: the handler set within the limit, the
    # interrupt sent within the grace
    monkeypatch.setattr(timeouts, "STOP_GRACE", 30.0)

    pid_file, asked = tmp_path / "pid", tmp_path / "asked"

    def unit(key):
        # the stop request is noted, not obeyed (sleep resumes after the handler)
        signal.signal(signal.SIGTERM, lambda *_: asked.write_text("stop"))
        pid_file.write_text(str(os.getpid()))
        time.sleep(60)

    def interrupt_in_the_grace_wait():
        # once the unit was asked to stop: a timer started here (1.2 s) rang before the unit
        # existed when numba's machinery, loaded before the fork, took over a second under load
        deadline = time.monotonic() + 60
        while not asked.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        if asked.exists():
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_in_the_grace_wait, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_in_child(unit, [0], 5.0, lambda key, seconds: None)
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(pid_file.read_text()), 0)


def test_a_unit_is_stopped_where_the_platform_has_no_waitid(monkeypatch):
    """macOS has no os.waitid: every timeout raised AttributeError and left the unit running;
    there the unit is killed at once, without a grace."""
    monkeypatch.delattr(os, "waitid")
    out = run_in_child(lambda key: time.sleep(60), [0], 0.5, lambda key, seconds: "stopped")
    assert out == {0: "stopped"}


def test_a_step_that_overruns_before_its_first_stage_gets_the_first_stage():
    """The fork and the work's first lines count against the first step: a limit that ran out
    before the first start_stage arrived gave on_timeout None (a TypeError in the study)."""
    def stopped(stage, seconds):
        raise TimeoutError(f"{stage} after {seconds:.1f} s")

    with pytest.raises(TimeoutError, match="drawing after"):
        run_staged(lambda: time.sleep(60), 0.5, stopped, first_stage="drawing")


def test_concurrency_without_io_bound_procedures_warns_once():
    """concurrency only acts on io_bound procedures; asked of a study without any, it was
    ignored silently (a user expecting threaded CPU fits got none). The warning comes once
    (run and run_units both check), and requests_per_minute does not warn: it paces any fit
    that calls request_slot, io_bound or not."""
    study = rx.Study(_prior(), {"linear": rx.OLS("y ~ x")}, baseline=rx.Constant(), n=[10],
                     replications=2, seed=7)
    reference = study.run(progress=False).dataset
    with pytest.warns(RuntimeWarning, match="this study has none, so it has no effect") as seen:
        ds = study.run(progress=False, concurrency=4).dataset
    assert sum(issubclass(w.category, RuntimeWarning) for w in seen) == 1
    assert (ds["loss"] == reference["loss"]).all()
    llm = rx.OLS("y ~ x")
    llm.io_bound = True
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        study.run(progress=False, requests_per_minute=60)
        rx.Study(_prior(), {"llm": llm}, baseline=rx.Constant(), n=[10], replications=2,
                 seed=7).run(progress=False, concurrency=2)


# (2.0, None): room for the executor's second SIGTERM to arrive during the clean-up however
# slowly the other worker exits on a loaded machine
@pytest.mark.parametrize("clean_up_seconds, fit_timeout",
                         [(0.0, None), (0.5, None), (2.0, None), (1.5, 60)])
def test_workers_stopped_by_an_interrupt_run_their_clean_up(tmp_path, monkeypatch, ctrl_c_raises,
                                                            clean_up_seconds, fit_timeout):
    """Ctrl-C stops the pool with SIGTERM: the workers' fits unwind through their ``finally``
    (the sandbox removes a running program's temporary directory) and the workers exit
    instead of starting a queued replication. Before, SIGTERM's default action left one file
    (one /tmp/rx-sandbox-* directory) per worker.

    Clean-ups that take a while: the executor sees the first worker exit and sends the others
    a second SIGTERM, which interrupted their ``finally`` (a file left in 1 of ~10 CI runs with
    instant clean-ups; every time with one taking 0.5 s); and a worker was killed a second
    after the request, while a fit's process under ``fit_timeout`` may take STOP_GRACE."""
    import threading

    from restrictiveness.engine import timeouts

    # room for a clean-up waiting for the CPU on a loaded machine; the fork inherits it
    monkeypatch.setattr(timeouts, "STOP_GRACE", 20.0)
    stuck = StuckAfterSetUp(str(tmp_path), clean_up_seconds)
    study = rx.Study(_prior(), {"stuck": stuck}, baseline=rx.Constant(),
                     n=[10], replications=6, seed=7)

    def interrupt_when_both_workers_are_stuck():
        deadline = time.monotonic() + 60
        while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_both_workers_are_stuck, daemon=True).start()
    with pytest.raises(rx.StudyInterrupted):
        study.run(n_jobs=2, progress=False, fit_timeout=fit_timeout)
    assert list(tmp_path.iterdir()) == []


class SlowAfterSetUp(rx.Procedure):
    """Makes a file, then takes ``seconds`` to fit a constant."""

    def __init__(self, folder, seconds):
        self.folder, self.seconds = folder, seconds

    def __repr__(self):
        return f"SlowAfterSetUp({self.folder!r}, {self.seconds!r})"

    def fit(self, sample, rng):
        open(os.path.join(self.folder, f"{os.getpid()}-{time.monotonic_ns()}"), "w").close()
        time.sleep(self.seconds)
        return FunctionRule(lambda X: np.full(len(X), sample.y.mean()))


def test_an_interrupt_handled_on_another_thread_stops_a_pool_run_at_once(tmp_path,
                                                                        ctrl_c_raises):
    """The kernel gives a process's SIGINT to any of its threads that does not block it (the
    executor's own threads included); handled there, it only flags the interrupt for the main
    thread, which waited for the pool's next result without a timeout and saw it when a
    replication ended: here 30 s after the Ctrl-C. The signal is sent to the interrupting
    thread itself, so that its handler runs there."""
    import threading

    study = rx.Study(_prior(), {"slow": SlowAfterSetUp(str(tmp_path), 30.0)},
                     baseline=rx.Constant(), n=[10], replications=4, seed=7)
    sent = []

    def interrupt_on_this_thread_when_both_workers_fit():
        deadline = time.monotonic() + 60
        while len(list(tmp_path.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        sent.append(time.monotonic())
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    threading.Thread(target=interrupt_on_this_thread_when_both_workers_fit, daemon=True).start()
    with pytest.raises(rx.StudyInterrupted):
        study.run(n_jobs=2, progress=False)
    assert time.monotonic() - sent[0] < 10.0   # before: 30 s, when the first fit ended


class Asks(rx.Procedure):
    """An I/O-bound procedure whose fit sends ``requests`` model requests (it takes the rate
    limit's slots as the model clients do) and logs when each was asked for and when it goes
    out; ``hang=True`` then never returns."""

    io_bound = True

    def __init__(self, log, requests=1, hang=False):
        self.log, self.requests, self.hang = str(log), requests, hang

    def __repr__(self):
        return f"Asks({self.log!r}, {self.requests}, {self.hang})"

    def fit(self, sample, rng):
        from restrictiveness.engine.concurrency import request_slot
        for _ in range(self.requests):
            asked = time.monotonic()
            request_slot()
            granted = time.monotonic()
            with open(self.log, "a") as f:
                f.write(f"{asked!r} {granted!r}\n")
        while self.hang:
            time.sleep(1)
        return FunctionRule(lambda X: np.full(len(X), sample.y.mean()))


def test_a_limiter_locked_by_another_thread_at_the_fork_still_serves_the_child():
    """A thread inside acquire() when a fit's process is forked: the child's copy of the
    thread lock stayed held, and the fit waited for a slot until its limit."""
    from restrictiveness.engine.concurrency import RateLimiter

    limiter = RateLimiter(6000)
    with held_by_another_thread(limiter._lock):
        out = run_in_child(lambda key: limiter.acquire() or "served", [0], 5.0,
                           lambda key, seconds: "no slot")
    assert out == {0: "served"}
    limiter.close()
    assert limiter._file.closed


def test_a_send_lock_held_by_another_thread_at_the_fork_still_lets_the_child_report():
    """A numba compile event being sent by another thread when a fit's process is forked: the
    child's copy of the send lock stayed held, and the fit's result never came back."""
    from restrictiveness.engine import timeouts

    with held_by_another_thread(timeouts._SEND_LOCK):
        out = run_in_child(lambda key: key * 2, [21], 5.0, lambda key, seconds: "no report")
    assert out == {21: 42}


def test_keyed_once_computes_each_key_once_whichever_thread_asks():
    """A replication's pseudo-truth and baseline fits are shared by its threaded fits: a thread
    that waited while another computed a key must get that value, not compute it again."""
    from concurrent.futures import ThreadPoolExecutor

    from restrictiveness.engine.concurrency import KeyedOnce

    calls = []

    def factory(key):
        calls.append(key)
        time.sleep(0.05)  # the other threads asking for the key wait meanwhile
        return 10 * key

    once = KeyedOnce(factory)
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(once.get, [1, 2, 1, 1, 2, 3] * 3))
    assert got == [10, 20, 10, 10, 20, 30] * 3
    assert sorted(calls) == [1, 2, 3]
    once.drop(1)  # a dropped key is computed afresh
    assert once.get(1) == 10 and sorted(calls) == [1, 1, 2, 3]


def test_the_rate_limit_holds_across_the_processes_of_fits_under_fit_timeout(tmp_path):
    """Before: under fit_timeout each replication's fits ran in a forked child holding its own
    copy of the limiter, so each new child sent its first request at once: at
    requests_per_minute=120 (0.5 s apart), requests came 0.02-0.1 s apart at every new
    replication."""
    log = tmp_path / "requests.log"
    study = rx.Study(_prior(), {"asks": Asks(log)}, baseline=rx.Constant(), n=[10, 20],
                     replications=3, seed=7)
    res = study.run(fit_timeout=5, requests_per_minute=120, progress=False)
    asked, granted = np.array([line.split() for line in log.read_text().splitlines()],
                              dtype=float).T
    assert len(granted) == 6  # one per fit: 2 per replication, each replication in a child
    # The k-th slot is 0.5 k s after the first was asked for at the earliest, and a request
    # goes on no earlier than its slot, at any load (a process that runs late only goes on
    # later). The gaps between neighbours failed under load: a request late after its slot
    # leaves a short gap to the next, punctual one. Before the fix, each replication's first
    # request went on at once, about 0.5 s after the one before (1 s was due).
    np.testing.assert_array_less(0.5 * np.arange(6) - 1e-3, np.sort(granted) - asked.min())
    assert (res.dataset["failed"] == 0).all()


class Hangs(rx.Constant):
    """A baseline that never returns on samples of size ``at``."""

    def __init__(self, at):
        super().__init__()
        self.at = at

    def __repr__(self):
        return f"Hangs({self.at})"

    def fit(self, sample, rng):
        while len(sample.y) == self.at:
            time.sleep(1)
        return super().fit(sample, rng)


class HangingPrior(rx.MonotoneGP):
    """An evaluation distribution whose draw never returns."""

    def draw(self, ns, rng, draws=1):
        while True:
            time.sleep(1)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_fit_timeout_bounds_the_baseline_and_the_pseudo_truth_draw(n_jobs):
    """Before: fit_timeout bounded the procedures' fits only, and a user's baseline or
    evaluation distribution that never returned hung the run for ever. Neither has a
    fallback, so the run stops with an error naming it (a dropped replication would bias r̂)."""
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    before = _children()
    study = rx.Study(_prior(), {"linear": rx.OLS("y ~ x")}, baseline=Hangs(20), n=[10, 20],
                     replications=2, seed=7)
    start = time.monotonic()
    with within(60), pytest.raises(rx.BaselineError, match=(
            r"the baseline Hangs\(20\) did not finish within fit_timeout=1 s \(stopped after "
            r"1\.\d s; its process was killed\) in replication \d, n=20")):
        study.run(fit_timeout=1, n_jobs=n_jobs, progress=False)
    stuck = rx.Study(HangingPrior(F, n_eval=40), {"linear": rx.OLS("y ~ x")},
                     baseline=rx.Constant(), n=[10], replications=2, seed=7)
    with within(60), pytest.raises(rx.ExecutionError, match=(
            r"drawing the pseudo-truth of replication \d from HangingPrior\(.*\) did not "
            r"finish within fit_timeout=1 s")):
        stuck.run(fit_timeout=1, n_jobs=n_jobs, progress=False)
    assert time.monotonic() - start < 30
    deadline = time.monotonic() + 5
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _children() <= before  # the stopped processes are gone


# A lock below Python (OpenSSL's, taken while an I/O thread builds its HTTPS client) stood in
# for by a plain lock the threaded fit holds for a while and the pool's fit needs.
_NATIVE_LOCK = __import__("threading").Lock()
_LOCK_HELD = __import__("threading").Event()


class _HoldsTheLock(rx.Constant):
    io_bound = True

    def fit(self, sample, rng):
        with _NATIVE_LOCK:
            _LOCK_HELD.set()
            time.sleep(0.5)
        return super().fit(sample, rng)


class _NeedsTheLock(rx.Constant):
    def fit(self, sample, rng):
        with _NATIVE_LOCK:
            return super().fit(sample, rng)


def test_pool_workers_are_forked_before_the_io_threads_start(monkeypatch):
    """With concurrency and n_jobs > 1, the CPU part forked its pool workers while I/O threads
    ran: a worker forked while one of them held a lock below Python (OpenSSL's, building its
    HTTPS client) inherited it held and the study hung for ever (2 of 3 runs of a real
    language-model study with a pool procedure using the same SDK). Here the CPU part starts
    once a threaded fit holds the lock, so a fork at its start would copy it held."""
    import threading

    from restrictiveness.engine import study as study_module

    dispatch = study_module._dispatch

    def dispatch_once_the_lock_is_held(*args, **kwargs):
        _LOCK_HELD.wait(30)
        return dispatch(*args, **kwargs)

    monkeypatch.setattr(study_module, "_dispatch", dispatch_once_the_lock_is_held)
    study = rx.Study(_prior(), {"threaded": _HoldsTheLock(), "pooled": _NeedsTheLock()},
                     baseline=rx.Constant(), n=[10], replications=4, seed=7)
    out = []
    runner = threading.Thread(target=lambda: out.append(
        study.run(progress=False, n_jobs=2, concurrency=2)), daemon=True)
    runner.start()
    runner.join(60)
    assert out, "the study hung"
    assert int(out[0].dataset["failed"].sum()) == 0


class _StopsAWorkerOnce(rx.Procedure):
    """Once (``flag``: the file claiming it, which names the stopped worker's process): stops
    (``SIGSTOP``) the worker :meth:`_target` picks, then fits OLS. ``root``: the run's process,
    whose children are the workers."""

    def __init__(self, flag, root):
        self.flag, self.root = flag, root

    def __repr__(self):
        return f"{type(self).__name__}()"

    def _target(self, mine):
        raise NotImplementedError

    def fit(self, sample, rng):
        import psutil
        try:
            claim = os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass
        else:
            here = psutil.Process()  # the worker, or the fit's process under fit_timeout
            mine = next(p for p in [here, *here.parents()] if p.ppid() == self.root)
            target = self._target(mine)
            os.write(claim, str(target.pid).encode())
            os.close(claim)
            os.kill(target.pid, signal.SIGSTOP)
        return rx.OLS("y ~ x").fit(sample, rng)


class FreezesItsWorker(_StopsAWorkerOnce):
    """Stops the worker running its first fit; the fit itself, in a process of its own under
    ``fit_timeout``, goes on and returns."""

    def _target(self, mine):
        return mine


@pytest.mark.skipif(sys.platform == "win32", reason="stops its worker with a POSIX signal")
def test_a_frozen_dask_worker_fails_the_run_within_fit_timeout_naming_it(tmp_path,
                                                                         monkeypatch):
    """A worker stopped mid-fit stays connected: the run waited for the scheduler's
    worker-ttl (5 minutes) to drop it, or for ever without one. Under fit_timeout its fits run
    in processes of its own, so a worker silent for longer than a fit may take (here 2 s, 4 s
    to stop it, and a grace of 2 s for the test) is frozen: the run fails naming it, the
    procedure it was fitting and its replications, and no process is left."""
    import restrictiveness.engine.study as study_module

    monkeypatch.setattr(study_module, "FROZEN_GRACE", 2.0, raising=False)
    flag = tmp_path / "frozen"
    study = rx.Study(_prior(), {"ols": rx.OLS("y ~ x"),
                                "freezer": FreezesItsWorker(str(flag), os.getpid())},
                     rx.Constant(), n=[10], replications=4, seed=3)
    before = _children()
    try:
        with within(90), pytest.raises(rx.ExecutionError) as info:
            study.run(backend="dask", n_jobs=2, fit_timeout=2, progress=False)
        failed_at = time.time()
    finally:
        if flag.exists() and flag.read_text():  # stopped processes ignore all but SIGKILL
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(flag.read_text()), signal.SIGKILL)
    pid = int(flag.read_text())
    assert re.fullmatch(
        rf"the dask worker tcp://127\.0\.0\.1:\d+ \(process {pid}\) holding replications? "
        r"[0-3](, [0-3])?, in the fit or predictions of procedure 'freezer' \(n=10\), has not "
        r"been heard from for (8|9|1[0-2]) s, longer than a fit may take under fit_timeout=2 s: "
        r"its process is frozen \(stopped, e\.g\. by SIGSTOP or a debugger, or swapping\) or "
        r"stuck outside the fits; rerun \(a checkpoint keeps the finished replications\)",
        str(info.value))
    # timed from the freeze: 8 s of silence, then the cluster's close (4 s to kill the
    # stopped worker); before, 5 minutes
    assert failed_at - flag.stat().st_mtime < 8 + 4 + 15
    _assert_no_process_left(before)


class Sleeps(rx.Procedure):
    """OLS, after ``seconds`` of sleep."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __repr__(self):
        return f"Sleeps({self.seconds!r})"

    def fit(self, sample, rng):
        time.sleep(self.seconds)
        return rx.OLS("y ~ x").fit(sample, rng)


def test_a_busy_dask_worker_is_not_taken_for_frozen(monkeypatch):
    """The other side of the test above: a worker whose replication (eight fits of 1 s) runs
    longer than the silence that marks a frozen one (1.5 + 4 + 0.5 s) is heard from meanwhile,
    and its run ends as the serial one does."""
    import restrictiveness.engine.study as study_module

    monkeypatch.setattr(study_module, "FROZEN_GRACE", 0.5)
    study = rx.Study(_prior(), {"a": Sleeps(1.0), "b": Sleeps(1.0)}, rx.Constant(),
                     n=[10, 20, 30, 40], replications=2, seed=5)
    with within(120):
        ds = study.run(backend="dask", n_jobs=2, fit_timeout=1.5, progress=False).dataset
    assert (ds["failed"] == 0).all()
    assert (ds["seconds"] >= 1).all()
    serial = rx.Study(_prior(), {"a": rx.OLS("y ~ x"), "b": rx.OLS("y ~ x")}, rx.Constant(),
                      n=[10, 20, 30, 40], replications=2, seed=5).run(progress=False).dataset
    assert (ds["loss"] == serial["loss"]).all()


def _run_until_a_worker_is_frozen(study, flag, ck):
    """Run ``study`` in a pool of 2 under ``fit_timeout=2`` until a procedure stops a worker
    (``flag`` names it) and the run fails; returns the error's message, the stopped worker's
    process id and the seconds from the stop to the failure. The stopped worker is killed
    whatever happens (a stopped process ignores all but SIGKILL)."""
    try:
        with within(60), pytest.raises(rx.ExecutionError) as info:
            study.run(n_jobs=2, fit_timeout=2, progress=False, checkpoint=ck)
        failed_at = time.time()
    finally:
        if flag.exists() and flag.read_text():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(flag.read_text()), signal.SIGKILL)
    return str(info.value), int(flag.read_text()), failed_at - flag.stat().st_mtime


@pytest.mark.skipif(sys.platform == "win32", reason="stops its worker with a POSIX signal")
def test_a_frozen_pool_worker_fails_the_run_within_fit_timeout_naming_it(tmp_path,
                                                                         monkeypatch):
    """The process pool's side of the dask test above: a pool worker stopped mid-fit never
    reported, and the run waited for it for ever. Under fit_timeout its fits run in processes
    of its own while a thread of it beats, so one silent for longer than a fit may take (2 s,
    4 s to stop it, a grace of 2 s for the test) fails the run naming it, its replication and
    the procedure; it is killed, no process is left, and the checkpoint keeps the other
    replications."""
    import restrictiveness.engine.study as study_module

    monkeypatch.setattr(study_module, "FROZEN_GRACE", 2.0)
    flag, ck = tmp_path / "frozen", tmp_path / "ck"
    study = rx.Study(_prior(), {"ols": rx.OLS("y ~ x"),
                                "freezer": FreezesItsWorker(str(flag), os.getpid())},
                     rx.Constant(), n=[10], replications=4, seed=3)
    before = _children()
    message, pid, waited = _run_until_a_worker_is_frozen(study, flag, ck)
    found = re.fullmatch(
        rf"the worker process {pid} holding replication ([0-3]), in the fit or predictions of "
        r"procedure 'freezer' \(n=10\), has not been heard from for (8|9|10) s, longer than a "
        r"fit may take under fit_timeout=2 s: its process is frozen \(stopped, e\.g\. by "
        r"SIGSTOP or a debugger, or swapping\) or stuck outside the fits; rerun \(a "
        r"checkpoint keeps the finished replications\)", message)
    assert found, message
    # timed from the freeze: 8 s of silence, then the pool stopped (measured 8.05 s; left to the
    # pool's SIGTERM, the stopped worker took 5 s more to be killed); before, never
    assert waited < 8 + 3
    _assert_no_process_left(before)
    assert sorted(study.finished(ck)) == sorted({0, 1, 2, 3} - {int(found.group(1))})


class StopsTheOtherWorker(_StopsAWorkerOnce):
    """Stops the other pool worker once it has had no process of its own (a replication's)
    for 1 s, so that it is idle."""

    def _target(self, mine):
        import psutil
        other = next(p for p in psutil.Process(self.root).children()
                     if p.pid != mine.pid and p.cmdline() == mine.cmdline())
        quiet = time.monotonic()
        while time.monotonic() - quiet < 1:
            if other.children():
                quiet = time.monotonic()
            time.sleep(0.02)
        return other


@pytest.mark.skipif(sys.platform == "win32", reason="stops a worker with a POSIX signal")
def test_a_pool_worker_frozen_between_replications_fails_the_run_naming_it(tmp_path,
                                                                           monkeypatch):
    """A worker stopped while idle never took the request to exit, and the pool's shut-down
    waited for it for ever once every replication had finished. It fails the run as a worker
    frozen mid-fit does (2 + 4 + 2 s of silence), and no process is left; the checkpoint
    holds every replication."""
    import restrictiveness.engine.study as study_module

    monkeypatch.setattr(study_module, "FROZEN_GRACE", 2.0)
    flag, ck = tmp_path / "frozen", tmp_path / "ck"
    study = rx.Study(_prior(), {"stopper": StopsTheOtherWorker(str(flag), os.getpid())},
                     rx.Constant(), n=[10], replications=2, seed=3)
    before = _children()
    message, pid, waited = _run_until_a_worker_is_frozen(study, flag, ck)
    assert re.fullmatch(
        rf"the worker process {pid}, between replications, has not been heard from for "
        r"(8|9|10) s, longer than a fit may take under fit_timeout=2 s: its process is frozen "
        r"\(stopped, e\.g\. by SIGSTOP or a debugger, or swapping\) or stuck outside the "
        r"fits; rerun \(a checkpoint keeps the finished replications\)", message)
    assert waited < 8 + 3
    _assert_no_process_left(before)
    assert sorted(study.finished(ck)) == [0, 1]


def test_a_busy_pool_worker_is_not_taken_for_frozen(monkeypatch):
    """The other side of the test above: a pool worker whose replication (eight fits of 1 s,
    each in a child) runs longer than the silence that marks a frozen one (1.5 + 4 + 0.5 s)
    beats meanwhile, and its run ends with the numbers of a serial run without a limit."""
    import restrictiveness.engine.study as study_module

    monkeypatch.setattr(study_module, "FROZEN_GRACE", 0.5)
    study = rx.Study(_prior(), {"a": Sleeps(1.0), "b": Sleeps(1.0)}, rx.Constant(),
                     n=[10, 20, 30, 40], replications=3, seed=5)
    with within(120):
        ds = study.run(n_jobs=2, fit_timeout=1.5, progress=False).dataset
    assert (ds["failed"] == 0).all()
    assert (ds["seconds"] >= 1).all()
    serial = rx.Study(_prior(), {"a": rx.OLS("y ~ x"), "b": rx.OLS("y ~ x")}, rx.Constant(),
                      n=[10, 20, 30, 40], replications=3, seed=5).run(progress=False).dataset
    assert (ds["loss"] == serial["loss"]).all()


def test_pool_heartbeats_count_only_the_silence_the_caller_watched():
    """A run stopped and continued as a whole (Ctrl-Z, then fg) resumes its workers with it,
    and its first look must not take them for frozen for the time all were stopped: a worker
    (here a slot that never beats) is silent after 1 s watched in slices of 0.5 s, not after
    a single gap of 2.5 s, which restarts the count."""
    from restrictiveness.engine.study import _Heartbeats

    beats = _Heartbeats(2)
    beats.slots[_Heartbeats.SIZE + _Heartbeats.PID] = 4321  # the second slot, claimed
    beats.slots[_Heartbeats.SIZE + _Heartbeats.REPLICATION] = 7
    assert beats.silent(1.0) is None  # first heard of
    time.sleep(2.5)  # the caller not watching
    assert beats.silent(1.0) is None
    found = None
    for _ in range(4):
        time.sleep(0.4)
        found = found or beats.silent(1.0)
    pid, m, seconds = found
    assert (pid, m) == (4321, 7)
    assert 1.0 <= seconds < 2.0


def test_a_local_dask_cluster_that_cannot_start_fails_saying_what_failed(tmp_path):
    """A worker (its nanny) that failed to start: the run failed with dask's bare
    ``RuntimeError: Nanny failed to start.``, its cause only in the log."""
    import dask
    import distributed  # noqa: F401 - its configuration loaded first: set() would drop it after

    missing = str(tmp_path / "missing_preload.py")
    before = _children()
    with dask.config.set({"distributed.worker.preload": [missing]}), \
            pytest.raises(rx.ExecutionError) as info:
        _timeout_study({"linear": rx.OLS("y ~ x")}).run(backend="dask", n_jobs=2,
                                                         progress=False)
    assert str(info.value) == (
        "backend='dask' could not start its local cluster of 2 worker processes: Nanny failed "
        f"to start (FileNotFoundError: [Errno 2] No such file or directory: {missing!r}). "
        "Check dask's configuration of its workers (distributed.worker.*, distributed.nanny.*: "
        "a preload, a memory limit, a local directory that cannot be written), that this "
        "machine can start that many processes and has memory for them (try a smaller "
        "n_jobs); or start a cluster yourself and pass client=Client(...), or run with "
        "backend='processes'")
    _assert_no_process_left(before)


def test_a_local_dask_cluster_that_does_not_close_is_killed_and_the_results_kept(monkeypatch):
    """A worker process that does not stop when its nanny kills it (uninterruptible I/O,
    simulated: the nanny's kill never returns) hung the run's exit for ever after its results
    were in. Now the close is bounded, the workers left are killed, and the run returns its
    results (those of a serial run) with a warning."""
    import asyncio

    import distributed.nanny

    import restrictiveness.engine.study as study_module

    async def never(self, *args, **kwargs):
        await asyncio.Event().wait()

    study = _timeout_study({"linear": rx.OLS("y ~ x")})
    serial = study.run(progress=False).dataset
    monkeypatch.setattr(distributed.nanny.WorkerProcess, "kill", never)
    monkeypatch.setattr(study_module, "CLOSE_TIMEOUT", 2.0, raising=False)
    before = _children()
    start = time.monotonic()
    with within(90), pytest.warns(RuntimeWarning, match=r"the local dask cluster did not "
                                                        r"close within 2 s; its worker "
                                                        r"processes left were killed "
                                                        r"\(2 of 2\)"):
        ds = study.run(backend="dask", n_jobs=2, progress=False).dataset
    assert time.monotonic() - start < 60
    assert (ds["loss"] == serial["loss"]).all()
    _assert_no_process_left(before)

"""Warnings raised where a study's work runs in another process (a fit_timeout child, a pool
worker, a dask worker) reach the caller as they do in a serial run: same messages, categories,
locations, count and order, whatever the number of workers.

Before: they were printed on the worker's standard error or appended to a forked copy of the
caller's ``catch_warnings`` log; ``pytest.warns`` and ``-W error`` in the caller saw nothing.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pytest
from forking import held_by_another_thread

import restrictiveness as rx
from restrictiveness.engine import study as study_module
from restrictiveness.engine.protocol import FunctionRule
from restrictiveness.engine.warning_relay import RelayedWarning, collected, replay


class Noted(RuntimeWarning):
    """A warning class of the user's own (module level: it pickles)."""


def _local_class():
    class Local(UserWarning):  # defined inside a function: it cannot be pickled
        pass
    return Local


Local = _local_class()


class Warns(rx.Procedure):
    """Warns in every fit: a text that names the sample (so that the order is checked), a
    user's class, a DeprecationWarning (which fit_timeout's fork used to ignore) and NumPy's
    RuntimeWarning from C."""

    def __init__(self, local: bool = False):
        self.local = local

    def __repr__(self):
        return f"Warns({self.local})"

    def fit(self, sample, rng):
        warnings.warn(f"fit n={len(sample.y)} y0={sample.y[0]:.6f}", UserWarning, stacklevel=1)
        warnings.warn("noted", Noted, stacklevel=2)  # at the package's call
        warnings.warn("deprecated", DeprecationWarning, stacklevel=1)
        np.log(np.zeros(1))
        if self.local:
            warnings.warn("local", Local, stacklevel=1)
        return FunctionRule(lambda X: np.full(len(X), sample.y.mean()))


class WarningBaseline(rx.Constant):
    """A baseline that warns: fitted where the pseudo-truth is drawn (fit_timeout's staged
    child); ``fail`` then raises, which stops the run."""

    def __init__(self, fail: bool = False):
        super().__init__()
        self.fail = fail

    def __repr__(self):
        return f"WarningBaseline({self.fail})"

    def fit(self, sample, rng=None):
        warnings.warn(f"baseline n={len(sample.y)}", UserWarning, stacklevel=1)
        if self.fail:
            raise ValueError("the baseline gives up")
        return super().fit(sample, rng)


def _study(local=False, fail=False, replications=4):
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    return rx.Study(rx.MonotoneGP(F, n_eval=30),
                    {"warns": Warns(local), "linear": rx.OLS("y ~ x")},
                    baseline=WarningBaseline(fail), n=[10, 20], replications=replications,
                    seed=3)


def _seen(action="always", local=False, error=None, **options):
    """The warnings a run shows its caller under ``simplefilter(action)`` (and an "error"
    filter for the class ``error``), and its failures."""
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter(action)
        if error is not None:
            warnings.simplefilter("error", error)
        ds = _study(local).run(progress=False, **options).dataset
    shown = [(w.category, str(w.message), w.filename, w.lineno) for w in log]
    return shown, ds["failed"].values.tolist(), ds["error"].values.tolist()


@pytest.fixture(scope="module")
def serial():
    return _seen()


PATHS = [dict(fit_timeout=30), dict(n_jobs=2), dict(n_jobs=3),
         dict(n_jobs=2, fit_timeout=30)]


@pytest.mark.parametrize("options", PATHS, ids=str)
def test_the_caller_sees_the_warnings_of_a_serial_run(serial, options):
    shown, failed, _ = _seen(**options)
    # per replication and n: the baseline's warning and the fit's four
    assert len(serial[0]) == 4 * 2 * (1 + 4)
    assert shown == serial[0]
    assert failed == serial[1]


@pytest.mark.parametrize("processes", [True, False])
def test_the_warnings_of_dask_workers_reach_the_caller(serial, processes):
    """Worker processes relay them; worker threads of the caller's process (processes=False)
    warn there, and leave its warning filters alone."""
    import distributed  # in the test extra: a broken install fails, not skips
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=processes,
                                       dashboard_address=None)
    filters = list(warnings.filters)
    with distributed.Client(cluster) as client:
        for options in (dict(), dict(fit_timeout=30)):
            shown, failed, _ = _seen(backend="dask", client=client, **options)
            assert shown == serial[0]
            assert failed == serial[1]
    cluster.close()
    assert warnings.filters == filters


def test_the_order_is_the_serial_one_when_replications_finish_out_of_order(serial,
                                                                           monkeypatch,
                                                                           tmp_path):
    real = study_module.run_unit
    finished = []

    def last_first(study, m, *rest):  # the pool's workers are forked after the patch
        if m == 0:  # until the caller has the other worker's three (a 1 s sleep was outrun)
            deadline = time.monotonic() + 60
            while len(list(tmp_path.iterdir())) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
        return real(study, m, *rest)

    def received(record):
        finished.append(record.replication)
        (tmp_path / str(record.replication)).touch()

    monkeypatch.setattr(study_module, "run_unit", last_first)
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        _study().run_units(range(4), n_jobs=2, progress=False, on_record=received)
    assert finished[-1] == 0  # replication 0 finished last...
    shown = [(w.category, str(w.message), w.filename, w.lineno) for w in log]
    assert shown == serial[0]  # ...and its warnings still come first


@pytest.mark.parametrize("options", [dict(), *PATHS], ids=str)
def test_a_class_that_cannot_be_pickled_is_relayed_as_its_base_class(options):
    shown, failed, _ = _seen(local=True, **options)
    local = [w for w in shown if "local" in w[1]]
    assert len(local) == 4 * 2  # one per fit, none lost, nothing crashed
    assert failed == [[[0, 0, 0, 0]] * 2, [[0, 0, 0, 0]] * 2]
    if options:  # relayed from another process: the nearest base class, named
        assert all(w[0] is UserWarning and w[1] == (
            f"local ({__name__}._local_class.<locals>.Local, a warning class that cannot "
            "be pickled, raised in a worker process)") for w in local)
    else:
        assert all(w[0] is Local and w[1] == "local" for w in local)


@pytest.fixture(scope="module")
def serial_error():
    return _seen(error=Noted)


@pytest.mark.parametrize("options", PATHS, ids=str)
def test_warnings_as_errors_fail_the_fit_as_in_a_serial_run(serial_error, options):
    """An "error" filter raises inside the fit, wherever it runs, and the fit fails; the run
    goes on, and the warnings raised before the error are shown."""
    shown, failed, errors = _seen(error=Noted, **options)
    assert shown == serial_error[0]
    assert (failed, errors) == serial_error[1:]
    assert failed[0] == [[1, 1, 1, 1]] * 2 and failed[1] == [[0, 0, 0, 0]] * 2
    assert {e for row in errors[0] for e in row} == {"fit: Noted: noted"}
    fits = [w for w in shown if w[1].startswith("fit n=")]
    assert len(fits) == 8 and shown[-1][0] is rx.FailureWarning


@pytest.mark.parametrize("options", [dict(), dict(n_jobs=2), dict(n_jobs=2, fit_timeout=30)],
                         ids=str)
def test_warnings_before_an_error_that_stops_the_run_are_shown(options):
    with warnings.catch_warnings(record=True) as log, \
            pytest.raises(rx.BaselineError, match="the baseline gives up"):
        warnings.simplefilter("always")
        rx.Study(_study().evaluation, {"linear": rx.OLS("y ~ x")}, WarningBaseline(fail=True),
                 n=[10], replications=2).run(progress=False, **options)
    assert "baseline n=10" in [str(w.message) for w in log]


class WarnsThenHangs(rx.Procedure):
    def fit(self, sample, rng):
        warnings.warn("about to hang", UserWarning, stacklevel=1)
        time.sleep(10 ** 6)


def test_the_warnings_of_a_fit_that_times_out_are_shown():
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        rx.Study(_study().evaluation, {"hangs": WarnsThenHangs()}, rx.Constant(), n=[10],
                 replications=2).run(progress=False, fit_timeout=1)
    assert [str(w.message) for w in log if w.category is UserWarning] == ["about to hang"] * 2


def test_the_callers_default_filter_decides_what_is_shown_once():
    """The worker applies the caller's filters: under "always" it relays every repeat, under
    "default" a repeat only once per unit (the caller would not show it again: a fit warning
    in a loop costs one message, not thousands); the caller's registry then decides."""
    def work():
        for _ in range(500):
            warnings.warn("repeated", UserWarning, stacklevel=1)
        return "done"

    for action, sent in (("always", 500), ("default", 1)):
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter(action)
            result, relayed = collected(work)
        assert result == "done" and len(relayed) == sent and log == []  # relayed, not shown
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("default")
            replay(relayed)
            replay(relayed)  # e.g. the same fit in the next replication
        assert [(w.category, str(w.message)) for w in log] == [(UserWarning, "repeated")]
        assert log[0].filename == __file__ and log[0].lineno == relayed[0].lineno


def test_a_warning_from_a_script_read_from_standard_input_is_replayed(monkeypatch):
    """``python - < script.py``: its ``__main__`` has a loader that raises when asked for the
    source; replaying a warning raised there raised ImportError instead of warning."""
    import importlib
    import types

    stdin = types.ModuleType("rx_script_on_stdin")
    stdin.__loader__ = importlib.machinery.BuiltinImporter
    monkeypatch.setitem(sys.modules, stdin.__name__, stdin)
    relayed = RelayedWarning(UserWarning("from the script"), "<stdin>", 4, stdin.__name__)
    with warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        replay([relayed])
    assert [(w.category, str(w.message), w.filename, w.lineno) for w in log] == [
        (UserWarning, "from the script", "<stdin>", 4)]


def test_units_relaying_on_threads_of_one_worker_each_get_their_own_warnings():
    """A user's dask workers run units on several threads. Each unit's ``catch_warnings``
    saved and restored the process's state in whatever order the units ended: here the
    second unit's warning after the first ended went to the worker's standard error, and the
    state a unit left behind outlived it."""
    import threading

    from restrictiveness.engine.warning_relay import collected

    first_warned, second_warned, first_done = (threading.Event() for _ in range(3))
    got: dict[str, list[str]] = {}

    def first():
        warnings.warn("a1", UserWarning, stacklevel=1)
        first_warned.set()
        second_warned.wait(10)

    def second():
        first_warned.wait(10)
        warnings.warn("b1", UserWarning, stacklevel=1)
        second_warned.set()
        first_done.wait(10)
        warnings.warn("b2", UserWarning, stacklevel=1)

    def run(name, work):
        _, relayed = collected(work)
        got[name] = [str(w.message) for w in relayed]
        if name == "first":
            first_done.set()

    shown_before = warnings.showwarning
    with warnings.catch_warnings(record=True) as leaked:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=run, args=("first", first)),
                   threading.Thread(target=run, args=("second", second))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        warnings.warn("after", UserWarning, stacklevel=1)
    assert got == {"first": ["a1"], "second": ["b1", "b2"]}
    assert [str(w.message) for w in leaked] == ["after"]  # nothing leaked, state restored
    assert warnings.showwarning is shown_before


def test_a_relay_lock_held_by_another_thread_at_the_fork_lets_the_childs_fit_warn():
    """A unit entering or leaving the relay on another thread of a worker when a fit's child
    is forked: the child's copy of the relay's lock stayed held, and the fit's first warning
    waited for ever (recorded as timed out)."""
    from restrictiveness.engine import warning_relay
    from restrictiveness.engine.timeouts import run_in_child

    def fit(key):
        warnings.warn("from the child", UserWarning, stacklevel=1)
        return 2 * key

    with held_by_another_thread(warning_relay._lock), \
            warnings.catch_warnings(record=True) as log:
        warnings.simplefilter("always")
        out = run_in_child(fit, [21], 5.0, lambda key, seconds: "timed out")
    assert out == {21: 42}
    assert [str(w.message) for w in log] == ["from the child"]


def test_a_thread_the_unit_starts_has_its_warnings_relayed():
    """A fit that warns from a thread of its own (a thread pool): only the relaying thread's
    warnings were relayed, the helper's went to the worker's standard error."""
    import threading

    def work():
        helper = threading.Thread(target=lambda: warnings.warn("from a helper thread",
                                                               UserWarning, stacklevel=1))
        helper.start()
        helper.join()
        return 1

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        _, relayed = collected(work)
    assert [str(w.message) for w in relayed] == ["from a helper thread"]


def test_a_replay_that_raises_leaves_the_units_other_warnings_to_show():
    """A replayed warning that the caller's filters turn into an error: the unit had been
    taken off the queue whole, so its later warnings were lost."""
    from restrictiveness.engine.warning_relay import InOrder

    def relayed(text):
        return RelayedWarning(UserWarning(text), "f.py", 1, None)

    order = InOrder()
    order.expect(0)
    order.expect(1)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        warnings.filterwarnings("error", message="unit 0 a")
        with pytest.raises(UserWarning, match="unit 0 a"):
            order.put(0, [relayed("unit 0 a"), relayed("unit 0 b")])
        order.put(1, [relayed("unit 1")])
    assert [str(w.message) for w in shown] == ["unit 0 b", "unit 1"]


def test_the_warnings_of_a_unit_whose_record_cannot_be_kept_are_shown():
    """The record's keeper (a checkpoint, ``on_record``) raising: the unit's warnings were
    to be replayed after it, and were lost with the error (a serial run had shown them)."""
    def on_record(record):
        raise OSError("disk full")

    with warnings.catch_warnings(record=True) as log, pytest.raises(OSError, match="disk full"):
        warnings.simplefilter("always")
        _study(replications=2).run_units([0, 1], n_jobs=2, progress=False, on_record=on_record)
    assert any(str(w.message).startswith("fit n=10") for w in log)

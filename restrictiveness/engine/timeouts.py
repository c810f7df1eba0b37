"""Fits under a time limit: run in a forked child process that is killed when a fit overruns.

A thread cannot be stopped, and a procedure that never returns (a hostile program, an
optimiser stuck in a C loop that holds the GIL) would hang its run for ever. With a time limit,
:func:`run_in_child` forks a child process that runs the units one after another and sends
each result back through a pipe; the calling process waits for each result at most ``timeout``
seconds. A unit that overruns is first asked to stop (``SIGTERM``, which raises in the child
so that its clean-up runs: a sandboxed program's temporary directory is removed, for one), then
killed after :data:`STOP_GRACE` seconds at most (``SIGKILL`` to the child's own process group,
so whatever the unit started dies with it), and is reported through ``on_timeout``; a new
child, forked from the same state, goes on with the next unit. One fork per batch of units (a
replication), not per unit: a fork costs tens of milliseconds in a process that has loaded
NumPy and SciPy.

Numba compiles a kernel in the child on first use (up to a minute for the package's kernels
when numba's cache on disk is cold; later children load the cached kernel). Compiling is not
the unit's doing, so it does not count against the limit (up to :data:`COMPILE_ALLOWANCE` s
per unit): the child reports numba's ``"numba:compile"`` events and the caller stops the clock
meanwhile. Otherwise a limit below the compile time would time out every fit that compiles,
one child after another, each compiling again and killed before writing the cache. Numba's
first use in a process also loads its typing machinery (about a second, before any compile
event): the caller does that once before it forks (:func:`_prepare_numba`), so that a child
does not spend its unit's time on it.

:func:`run_staged` bounds the steps of one piece of work instead (a replication's pseudo-truth
draw and each of its baseline's fits): the work runs in a child and calls :func:`start_stage`
as each step begins, which gives that step the full limit, and :func:`end_stages` when the
steps left are bounded otherwise (the fits, each under :func:`run_in_child` in a child of
that child).

The child is a fork of the caller, so each unit computes exactly what it computes in the
caller, bit for bit. Its warnings are sent back as they are raised and raised again in the
caller (:mod:`~restrictiveness.engine.warning_relay`), ahead of the unit's result. A child
never outlives its caller: on Linux the kernel kills it when the caller dies
(``PR_SET_PDEATHSIG``), elsewhere a thread of the child watches the caller.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar, cast

from ..shared.checks import is_positive
from ..shared.exceptions import ConfigurationError, ExecutionError
from ..shared.forksafe import ForkSafeLock
from .failures import ignoring
from .warning_relay import caller_filters, relaying, replay

__all__ = ["run_in_child", "run_staged", "start_stage", "end_stages", "check_timeout",
           "exit_when_orphaned"]

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")

_HEADER = struct.Struct("!Q")
_PR_SET_PDEATHSIG = 1
#: Seconds of numba compilation per unit that do not count against its time limit.
COMPILE_ALLOWANCE = 600.0
#: Seconds a timed-out unit gets to run its clean-up (``finally`` blocks) before it is killed.
STOP_GRACE = 2.0


class _Stopped(BaseException):
    """Raised in a child by the caller's ``SIGTERM``: the unit ran out of time. A
    BaseException, so that a unit's ``except Exception`` does not swallow it."""


def _stop(signum, frame) -> None:
    # one request to stop unwinds once: a repeat must not interrupt the clean-up it runs
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise _Stopped


#: In a child of :func:`run_staged`: the pipe to its caller (None elsewhere, and in children
#: of :func:`run_in_child`, whose units must not move their own deadline).
_STAGE_FD: int | None = None
#: In any child: the pipe on which numba's compile events are reported (see
#: :func:`_report_compiling`); a child of a child closes the one it inherited.
_REPORT_FD: int | None = None
_REPORTING = False


def check_timeout(timeout: object) -> float | None:
    """``timeout`` as seconds (None: no limit); anything else is refused by name.

    Examples
    --------
    >>> check_timeout(2), check_timeout(None)
    (2.0, None)
    >>> check_timeout(0)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: fit_timeout must be a positive,
    finite number of seconds or None, got 0
    """
    if timeout is None:
        return None
    if not is_positive(timeout):
        raise ConfigurationError(f"fit_timeout must be a positive, finite number of seconds or "
                                 f"None, got {timeout!r}")
    if not hasattr(os, "fork"):
        raise ConfigurationError("fit_timeout runs each fit in a forked process, which this "
                                 "platform does not have; run without it")
    return float(cast(float, timeout))  # a real number, by is_positive


def run_in_child(work: Callable[[K], R], keys: Sequence[K], timeout: float,
                 on_timeout: Callable[[K, float], R],
                 describe: Callable[[K], str] = repr) -> dict[K, R]:
    """``{key: work(key)}``, each ``work(key)`` run in a child process under ``timeout`` s.

    Parameters
    ----------
    work : callable
        ``work(key)``, run in a forked child; its result must pickle. An exception it raises
        is raised here (and the remaining keys are not run).
    keys : sequence
        The units, run in this order.
    timeout : float
        Seconds each unit may take, counted from the end of the previous one.
    on_timeout : callable
        ``on_timeout(key, seconds)``, called here for a unit that overran (its child is
        already dead); its return value is that unit's result.
    describe : callable
        ``describe(key)``: the unit in errors, e.g. of a child that died (default ``repr``).

    Returns
    -------
    dict
        The result of every key.

    Raises
    ------
    ExecutionError
        A child died without reporting (killed from outside, out of memory, a crash).

    Examples
    --------
    The unit sleeping 60 s is stopped after 1 s; the next one runs in a new child:

    >>> run_in_child(lambda k: time.sleep(k) or os.getpid(), [0.1, 60, 0.2], 1.0,
    ...              lambda k, s: f"timed out after {round(s)} s")  # doctest: +ELLIPSIS
    {0.1: ..., 60: 'timed out after 1 s', 0.2: ...}
    """
    # direct callers too: 0 would time out every unit, a string fail deep in select()
    if check_timeout(timeout) is None:
        raise ConfigurationError("run_in_child needs a timeout in seconds, got None")
    _prepare_numba()
    out: dict[K, R] = {}
    todo = list(keys)
    while todo:
        with _Child(work, todo) as child:
            while todo:
                started = time.monotonic()
                got = child.receive(started + timeout, timeout, describe(todo[0]))
                key = todo.pop(0)
                if got is _TIMED_OUT:
                    seconds = time.monotonic() - started  # the limit, not the clean-up
                    child.kill(grace=STOP_GRACE)
                    out[key] = on_timeout(key, seconds)
                    break  # a new child goes on with the rest
                out[key] = got
    return out


def run_staged(work: Callable[[], R], timeout: float,
               on_timeout: Callable[[Any, float], Any], first_stage: Any = None) -> R:
    """``work()``, run in a child process whose steps each get ``timeout`` seconds.

    Parameters
    ----------
    work : callable
        Run in a forked child; its result must pickle, and an exception it raises is raised
        here. It calls :func:`start_stage` as each bounded step begins and :func:`end_stages`
        when the rest needs no limit; before its first :func:`start_stage` it has ``timeout``.
    timeout : float
        Seconds each step may take.
    on_timeout : callable
        ``on_timeout(stage, seconds)``, called here when a step overran (the child is already
        dead), with what that step's :func:`start_stage` was given; it should raise, since
        the work has no result.
    first_stage : object, optional
        What ``on_timeout`` gets for a step that overran before the first
        :func:`start_stage` arrived (the fork and the work's first lines count against it).

    Returns
    -------
    object
        What ``work()`` returned.

    Examples
    --------
    >>> def work():
    ...     start_stage("quick"); time.sleep(0.1)
    ...     start_stage("stuck"); time.sleep(60)
    >>> def stopped(stage, seconds):
    ...     raise TimeoutError(f"{stage} stopped after {round(seconds)} s")
    >>> run_staged(work, 1.0, stopped)
    Traceback (most recent call last):
    ...
    TimeoutError: stuck stopped after 1 s
    """
    if check_timeout(timeout) is None:
        raise ConfigurationError("run_staged needs a timeout in seconds, got None")
    _prepare_numba()
    with _Child(lambda _: work(), [None], staged=True) as child:
        child.stage = first_stage
        got = child.receive(time.monotonic() + timeout, timeout, None)
        if got is _TIMED_OUT:
            seconds = time.monotonic() - child.stage_started  # the limit, not the clean-up
            child.kill(grace=STOP_GRACE)
            return on_timeout(child.stage, seconds)
        return got


def start_stage(stage: Any) -> None:
    """In the work of :func:`run_staged`: a step begins, with the full time limit; ``stage``
    (picklable) says what it is, for ``on_timeout``. Does nothing elsewhere."""
    if _STAGE_FD is not None:
        _send(_STAGE_FD, pickle.dumps(("stage", stage)))


def end_stages() -> None:
    """In the work of :func:`run_staged`: the steps left are not timed (they are bounded
    otherwise). Does nothing elsewhere."""
    if _STAGE_FD is not None:
        _send(_STAGE_FD, pickle.dumps(("stage", _UNTIMED)))


_TIMED_OUT = object()
#: Longest single wait for a child's message (seconds); longer limits wait in slices.
_WAIT_SLICE = 3600.0
_UNTIMED = "<untimed>"


class _Child:
    """A forked child running ``work`` over ``keys``, sending each result as a message; the
    fork is made as the ``with`` block is entered."""

    def __init__(self, work: Callable, keys: Sequence, staged: bool = False) -> None:
        self.work, self.keys, self.staged = work, keys, staged
        self.alive = False
        # a staged child may be stopping a fit of its own child within STOP_GRACE
        self.grace = 2 * STOP_GRACE if staged else STOP_GRACE

    def __enter__(self) -> _Child:
        # Forked here, and stopped here if a stop request or Ctrl-C arrives before the with
        # block holds it: forked in __init__, a child made just before the request was left to
        # die with its caller (SIGKILL, PR_SET_PDEATHSIG) without its clean-up, as __exit__ is
        # not called for a with statement whose expression or __enter__ raised.
        try:
            self._fork()
        except BaseException:
            self.kill(grace=self.grace)
            raise
        return self

    def _fork(self) -> None:
        for stream in (sys.stdout, sys.stderr):  # else the child would print them again
            with contextlib.suppress(Exception):
                stream.flush()
        parent = os.getpid()
        filters = caller_filters()  # the caller's, not those of the fork's context below
        read, write = os.pipe()
        # a stop request or Ctrl-C arriving before the child has its own handlers would run
        # the caller's handlers in the child: blocked until then (pending ones then arrive);
        # in the caller, until the child is recorded, for __enter__ to stop it (a caller with
        # other threads can still run its handler at once: the child is recorded first thing)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        try:
            # Python >= 3.12 warns about forking a threaded process: the child only runs the
            # units, as multiprocessing's fork workers do, and never returns.
            with ignoring(DeprecationWarning):
                pid = os.fork()
            if pid == 0:  # the child: never leaves this branch
                try:
                    os.close(read)
                    _child_main(self.work, self.keys, write, parent, self.staged, mask, filters)
                finally:
                    os._exit(0)
            self.pid, self.fd, self.buffer, self.alive, self.code = pid, read, b"", True, 0
            os.close(write)
            with contextlib.suppress(OSError):  # the child does it too; whichever runs first
                os.setpgid(pid, pid)
            self.stage: Any = None
            self.stage_started = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def __exit__(self, exc_type, *exc) -> None:
        # leaving on an exception (Ctrl-C, an error): let the unit's clean-up run
        self.kill(grace=0.0 if exc_type is None else self.grace)

    def receive(self, deadline: float, timeout: float, key: str | None) -> Any:
        """The next unit's result, :data:`_TIMED_OUT` after ``deadline`` (moved back by the
        time the unit spent compiling, and to ``timeout`` after each new stage of
        :func:`run_staged`); raises what the unit raised, or :class:`ExecutionError` if the
        child died (``key`` names the unit in errors; None: the stage in a staged child)."""
        compiling_since, allowance = None, COMPILE_ALLOWANCE
        limit: float | None = deadline
        while True:
            until = limit if compiling_since is None else compiling_since + allowance
            header = self._read(_HEADER.size, until, key)
            if header is _TIMED_OUT:
                return _TIMED_OUT
            body = self._read(_HEADER.unpack(header)[0], None, key)
            try:
                kind, value = pickle.loads(body)
            except Exception as exc:  # noqa: BLE001 - e.g. an exception that cannot unpickle
                raise ExecutionError(f"the result of {self._unit(key)} could not be read back "
                                     f"from its process ({type(exc).__name__}: {exc})") from None
            if kind == "compiling" and value:
                compiling_since = time.monotonic()
            elif kind == "compiling" and compiling_since is not None:
                spent = time.monotonic() - compiling_since
                limit = None if limit is None else limit + spent
                allowance -= spent
                compiling_since = None
            elif kind == "stage":
                self.stage, self.stage_started = value, time.monotonic()
                limit = None if value == _UNTIMED else self.stage_started + timeout
                allowance = COMPILE_ALLOWANCE
            elif kind == "warning":
                replay([value])
            elif kind == "raise":
                raise value
            elif kind == "ok":
                return value

    def _read(self, size: int, deadline: float | None, key) -> Any:
        while len(self.buffer) < size:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            # in slices: select takes at most about 292 years, and fit_timeout=1e308 (a
            # finite number) failed with "timestamp out of range for platform time_t"
            ready, _, _ = select.select([self.fd], [], [],
                                        None if wait is None else min(wait, _WAIT_SLICE))
            if not ready:
                if wait is not None and wait > _WAIT_SLICE:
                    continue
                return _TIMED_OUT
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise ExecutionError(f"the process running {self._unit(key)} died "
                                     f"({self._status()}); killed, or out of memory?")
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def _unit(self, key: str | None) -> str:
        return repr(self.stage) if key is None else key

    def _status(self) -> str:
        self.kill()
        code = self.code
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def kill(self, grace: float = 0.0) -> None:
        """Kill the child and everything it started, and reap it (idempotent); with
        ``grace``, ask it to stop first and wait up to that many seconds for it to exit."""
        if not self.alive:
            return
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        try:
            # without waitid (macOS) an exit cannot be awaited unreaped: no grace there
            if grace > 0 and hasattr(os, "waitid"):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(self.pid, signal.SIGTERM)
                until = time.monotonic() + grace
                # WNOWAIT: an exited child stays unreaped, so its group id is not reused yet
                while time.monotonic() < until and os.waitid(
                        os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                    time.sleep(0.01)
        finally:  # also when Ctrl-C interrupts the wait: the child must not outlive it
            # the group before the reap: until then the zombie keeps its id from being reused
            for target in (lambda: os.killpg(self.pid, signal.SIGKILL),
                           lambda: os.kill(self.pid, signal.SIGKILL)):
                try:
                    target()
                    break
                except (ProcessLookupError, PermissionError):
                    continue
            _, status = os.waitpid(self.pid, 0)
            self.alive = False
            self.code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) \
                else os.WEXITSTATUS(status)


def _child_main(work: Callable, keys: Sequence, fd: int, parent: int, staged: bool,
                mask: set, filters: list[tuple]) -> None:
    global _STAGE_FD
    # a child of a child: close its caller's pipe, or the caller's caller would not see that
    # caller die (end of file) while this child lives
    for inherited in {pipe for pipe in (_STAGE_FD, _REPORT_FD) if pipe is not None}:
        with contextlib.suppress(OSError):
            os.close(inherited)
    _STAGE_FD = fd if staged else None
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # its own group: the caller's kill reaches what the unit starts
    _die_with(parent)
    with contextlib.suppress(ValueError, OSError):  # the caller handles Ctrl-C
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    with contextlib.suppress(ValueError, OSError):  # only the caller's stop request comes here
        signal.signal(signal.SIGTERM, _stop)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    _report_compiling(fd)
    # each warning goes to the caller as it is raised (those of a unit that times out too),
    # ahead of the unit's result: the caller shows them in the order of a run without a limit
    with relaying(lambda relayed: _send(fd, pickle.dumps(("warning", relayed))), filters):
        for key in keys:
            try:
                message: tuple = ("ok", work(key))
            except _Stopped:
                # asked to stop (the caller reads no more), or terminated from outside: die of
                # the signal, as without the handler, so that a caller still reading reports
                # a death
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
                raise
            except BaseException as exc:  # noqa: BLE001 - raised again in the caller
                message = ("raise", exc)
            try:
                data = pickle.dumps(message)
            except Exception as exc:  # noqa: BLE001 - e.g. an exception holding a lock
                what = message[1] if message[0] == "raise" else exc
                data = pickle.dumps(("raise", ExecutionError(
                    f"{key!r}: {type(what).__name__}: {what} (cannot be sent back from the "
                    "fit's process)")))
            _send(fd, data)
            if message[0] == "raise":
                break
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _send(fd: int, data: bytes) -> None:
    # one message at a time: numba's compile events may come from another thread
    with _SEND_LOCK:
        os.write(fd, _HEADER.pack(len(data)))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]


_SEND_LOCK = ForkSafeLock()


@functools.cache
def _prepare_numba() -> None:
    """Load numba's typing and target machinery in this process (once), so that the children it
    forks inherit it: a child would otherwise load it on its first kernel, about a second
    counted against its unit (measured 1.1 s; no compile event marks it)."""
    try:
        from numba.core.registry import cpu_target
    except ImportError:  # nothing to compile
        return
    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()


def _report_compiling(fd: int) -> None:
    """Tell the caller when numba starts and ends compiling (nested compilations once). The
    listener is registered once per process tree and writes to this process's pipe, so a child
    of a child does not report on its caller's caller's pipe."""
    global _REPORT_FD, _REPORTING
    _REPORT_FD = fd
    if _REPORTING:
        return
    try:
        from numba.core import event
    except ImportError:  # nothing to compile
        return

    class Report(event.Listener):
        depth = 0

        def on_start(self, ev) -> None:
            self.depth += 1
            if self.depth == 1 and _REPORT_FD is not None:
                _send(_REPORT_FD, pickle.dumps(("compiling", True)))

        def on_end(self, ev) -> None:
            self.depth -= 1
            if self.depth == 0 and _REPORT_FD is not None:
                _send(_REPORT_FD, pickle.dumps(("compiling", False)))

    event.register("numba:compile", Report())
    _REPORTING = True


def _die_with(parent: int) -> None:
    """Make the child die with its caller, whose death it could not otherwise notice."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        armed = False
    if os.getppid() != parent:  # the caller died before the signal was armed
        os._exit(1)
    if not armed:
        threading.Thread(target=exit_when_orphaned, args=(parent,), daemon=True).start()


def exit_when_orphaned(parent: int) -> None:
    """Exit this process once ``parent`` is no longer its parent (the parent died)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)

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
one child after another, each compiling again and killed before writing the cache.

The child is a fork of the caller, so each unit computes exactly what it computes in the
caller, bit for bit. A child never outlives its caller: on Linux the kernel kills it when the
caller dies (``PR_SET_PDEATHSIG``), elsewhere a thread of the child watches the caller.
"""

from __future__ import annotations

import contextlib
import ctypes
import numbers
import os
import pickle
import select
import signal
import struct
import sys
import threading
import time
import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from ..shared.exceptions import ConfigurationError, ExecutionError

__all__ = ["run_in_child", "check_timeout", "exit_when_orphaned"]

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
    raise _Stopped


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
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real) \
            or not 0 < float(timeout) < float("inf"):
        raise ConfigurationError(f"fit_timeout must be a positive, finite number of seconds or "
                                 f"None, got {timeout!r}")
    if not hasattr(os, "fork"):
        raise ConfigurationError("fit_timeout runs each fit in a forked process, which this "
                                 "platform does not have; run without it")
    return float(timeout)


def run_in_child(work: Callable[[K], R], keys: Sequence[K], timeout: float,
                 on_timeout: Callable[[K, float], R]) -> dict[K, R]:
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
    out: dict[K, R] = {}
    todo = list(keys)
    while todo:
        with _Child(work, todo) as child:
            while todo:
                started = time.monotonic()
                got = child.receive(started + timeout, todo[0])
                key = todo.pop(0)
                if got is _TIMED_OUT:
                    child.kill(grace=STOP_GRACE)
                    out[key] = on_timeout(key, time.monotonic() - started)
                    break  # a new child goes on with the rest
                out[key] = got
    return out


_TIMED_OUT = object()


class _Child:
    """A forked child running ``work`` over ``keys``, sending each result as a message."""

    def __init__(self, work: Callable, keys: Sequence) -> None:
        for stream in (sys.stdout, sys.stderr):  # else the child would print them again
            with contextlib.suppress(Exception):
                stream.flush()
        parent = os.getpid()
        read, write = os.pipe()
        with warnings.catch_warnings():
            # Python >= 3.12 warns about forking a threaded process: the child only runs the
            # units, as multiprocessing's fork workers do, and never returns to the caller.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never leaves this branch
            try:
                os.close(read)
                _child_main(work, keys, write, parent)
            finally:
                os._exit(0)
        os.close(write)
        with contextlib.suppress(OSError):  # the child does it too; whichever runs first
            os.setpgid(pid, pid)
        self.pid, self.fd, self.buffer, self.alive, self.code = pid, read, b"", True, 0

    def __enter__(self) -> _Child:
        return self

    def __exit__(self, *exc) -> None:
        self.kill()

    def receive(self, deadline: float, key) -> Any:
        """The next unit's result, :data:`_TIMED_OUT` after ``deadline`` (moved back by the
        time the unit spent compiling); raises what the unit raised, or
        :class:`ExecutionError` if the child died."""
        compiling_since, allowance = None, COMPILE_ALLOWANCE
        while True:
            until = deadline if compiling_since is None else compiling_since + allowance
            header = self._read(_HEADER.size, until, key)
            if header is _TIMED_OUT:
                return _TIMED_OUT
            body = self._read(_HEADER.unpack(header)[0], None, key)
            try:
                kind, value = pickle.loads(body)
            except Exception as exc:  # noqa: BLE001 - e.g. an exception that cannot unpickle
                raise ExecutionError(f"the result of {key!r} could not be read back from its "
                                     f"process ({type(exc).__name__}: {exc})") from None
            if kind == "compiling" and value:
                compiling_since = time.monotonic()
            elif kind == "compiling" and compiling_since is not None:
                spent = time.monotonic() - compiling_since
                deadline, allowance = deadline + spent, allowance - spent
                compiling_since = None
            elif kind == "raise":
                raise value
            elif kind == "ok":
                return value

    def _read(self, size: int, deadline: float | None, key) -> Any:
        while len(self.buffer) < size:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.fd], [], [], wait)
            if not ready:
                return _TIMED_OUT
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                raise ExecutionError(f"the process running {key!r} died "
                                     f"({self._status()}); killed, or out of memory?")
            self.buffer += chunk
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    def _status(self) -> str:
        self.kill()
        code = self.code
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def kill(self, grace: float = 0.0) -> None:
        """Kill the child and everything it started, and reap it (idempotent); with
        ``grace``, ask it to stop first and wait up to that many seconds for it to exit."""
        if not self.alive:
            return
        self.alive = False
        os.close(self.fd)
        if grace > 0:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGTERM)
            until = time.monotonic() + grace
            # WNOWAIT: an exited child stays unreaped, so its group id is not reused yet
            while time.monotonic() < until and os.waitid(
                    os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                time.sleep(0.01)
        # the group before the reap: until then the zombie keeps its id from being reused
        for target in (lambda: os.killpg(self.pid, signal.SIGKILL),
                       lambda: os.kill(self.pid, signal.SIGKILL)):
            try:
                target()
                break
            except (ProcessLookupError, PermissionError):
                continue
        _, status = os.waitpid(self.pid, 0)
        self.code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _child_main(work: Callable, keys: Sequence, fd: int, parent: int) -> None:
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # its own group: the caller's kill reaches what the unit starts
    _die_with(parent)
    with contextlib.suppress(ValueError, OSError):  # the caller handles Ctrl-C
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    with contextlib.suppress(ValueError, OSError):  # only the caller's stop request comes here
        signal.signal(signal.SIGTERM, _stop)
    _report_compiling(fd)
    for key in keys:
        try:
            message: tuple = ("ok", work(key))
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
    os.write(fd, _HEADER.pack(len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _report_compiling(fd: int) -> None:
    """Tell the caller when numba starts and ends compiling (nested compilations once)."""
    try:
        from numba.core import event
    except ImportError:  # nothing to compile
        return

    class Report(event.Listener):
        depth = 0

        def on_start(self, ev) -> None:
            self.depth += 1
            if self.depth == 1:
                _send(fd, pickle.dumps(("compiling", True)))

        def on_end(self, ev) -> None:
            self.depth -= 1
            if self.depth == 0:
                _send(fd, pickle.dumps(("compiling", False)))

    event.register("numba:compile", Report())


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

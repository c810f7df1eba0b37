"""Concurrency for I/O-bound procedures, the request-rate limit, and the picklability check.

A language-model fit spends most of its time waiting for the endpoint, so running such fits one
per CPU worker wastes the machine. A study run with ``concurrency=N`` therefore splits its work:

* procedures marked ``io_bound`` (the language-model procedures) are fitted on a pool of ``N``
  threads in the calling process, one task per fit (replication, procedure, n, draw), sharing
  each replication's pseudo-truth, samples and baseline fits (computed once per replication);
* the other procedures run as usual (serially, on the process pool or on dask), beside them;
* the two parts of a replication are merged into one record as soon as both are done.

Each fit's numbers are a pure function of the study and the fit's key (seeds are keyed by what
a fit is, not by when it runs), so the results are identical to a serial run whatever the
thread count or the order in which fits finish.

:func:`request_slot` is the rate limit: model clients call it before every HTTP request; it
waits as needed when the run was given ``requests_per_minute`` and returns at once otherwise.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import functools
import mmap
import os
import pickle
import queue
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from ..shared.exceptions import ConfigurationError
from ..shared.forksafe import ForkSafeLock

__all__ = ["RateLimiter", "request_slot", "pause", "RunStopped", "rate_limited",
           "check_picklable", "KeyedOnce", "run_with_threads", "on_io_thread", "run_stopped",
           "when_stopped", "usable_cpus"]

def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one).

    Examples
    --------
    >>> usable_cpus() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: Marks the threads of :func:`run_with_threads`'s pool.
_io_thread = threading.local()


def _mark_io_thread() -> None:
    _io_thread.marked = True


def on_io_thread() -> bool:
    """Whether this thread is one of the I/O threads that fit ``io_bound`` procedures.

    Fits there overlap by design, so they run on the process's global random states as they
    find them instead of holding them seeded (:func:`restrictiveness.shared.random_state.
    seeded_globals`), which would run them one at a time.

    Examples
    --------
    >>> on_io_thread()
    False
    """
    return getattr(_io_thread, "marked", False)


class RateLimiter:
    """At most ``requests_per_minute`` slots a minute, evenly spaced, shared by threads and by
    the processes forked from the one that made it.

    Under ``Study.run(fit_timeout=...)`` the fits run in forked children; the schedule (the
    next free slot) therefore lives in memory shared with them, so each child goes on where the
    previous one stopped instead of starting afresh with a copy, and a POSIX record lock, which
    the kernel releases when its holder dies (a fit killed at its limit), orders the
    processes.

    Examples
    --------
    >>> limiter = RateLimiter(6000)            # one slot every 10 ms
    >>> start = time.monotonic()
    >>> for _ in range(5):
    ...     limiter.acquire()
    >>> time.monotonic() - start >= 0.04
    True
    """

    def __init__(self, requests_per_minute: float) -> None:
        if not float(requests_per_minute) > 0:
            raise ConfigurationError("requests_per_minute must be positive")
        self.interval = 60.0 / float(requests_per_minute)
        self._file = tempfile.TemporaryFile()
        self._file.write(_SLOT.pack(0.0))
        self._file.flush()
        self._next = mmap.mmap(self._file.fileno(), _SLOT.size)  # MAP_SHARED: seen by forks
        self._lock = ForkSafeLock()

    def close(self) -> None:
        """Release the shared schedule's file (the limiter takes no slot after this)."""
        self._next.close()
        self._file.close()

    def acquire(self) -> None:
        """Wait for the next free slot and take it."""
        time.sleep(self.reserve())

    def reserve(self) -> float:
        """Take the next free slot; return the seconds until it (the caller waits them)."""
        # CLOCK_MONOTONIC is system-wide, so the processes compare their slots on one clock
        with self._lock:
            fcntl.lockf(self._file, fcntl.LOCK_EX)
            try:
                now = time.monotonic()
                slot = max(now, _SLOT.unpack(self._next)[0])
                self._next[:] = _SLOT.pack(slot + self.interval)
            finally:
                fcntl.lockf(self._file, fcntl.LOCK_UN)
        return slot - now


_SLOT = struct.Struct("d")


_LIMITER: contextvars.ContextVar[RateLimiter | None] = contextvars.ContextVar(
    "restrictiveness_rate_limiter", default=None)


_STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "restrictiveness_run_stop", default=None)


def _leave_the_run_in_child() -> None:
    # A process forked from a run's thread (a pool worker from the CPU part) is not one of the
    # run's threads: the parent's stop never reaches it, and the event's lock, held by a thread
    # inside wait() at the fork, would stay held for ever in the child's first request.
    _STOP.set(None)


os.register_at_fork(after_in_child=_leave_the_run_in_child)


class RunStopped(BaseException):
    """Raised in a fit on a run's thread once the run has stopped (an error or Ctrl-C in the
    caller): a thread cannot be killed, so the fit ends at its next request or wait instead of
    running on unseen, and holding up the interpreter's exit, to its end. A BaseException, so
    that a procedure's ``except Exception`` does not swallow it and go on."""


class _RunStop(threading.Event):
    """A run's stop: an event that also calls, once, what :func:`when_stopped` registered
    (an HTTP attempt in flight shuts its sockets down: a thread blocked in a receive would
    otherwise hold the run, and the interpreter's exit, until its reply or its timeout)."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._guard = ForkSafeLock()
        self._count = 0

    def register(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` when the run stops (now, if it has); returns its unregistration."""
        with self._guard:
            if not self.is_set():
                self._count += 1
                key = self._count
                self._callbacks[key] = callback

                def unregister() -> None:
                    with self._guard:
                        self._callbacks.pop(key, None)

                return unregister
        callback()
        return lambda: None

    def set(self) -> None:
        with self._guard:
            super().set()
            callbacks, self._callbacks = list(self._callbacks.values()), {}
        for callback in callbacks:
            callback()


def run_stopped() -> bool:
    """Whether the run this thread works for has stopped (False outside a run).

    Examples
    --------
    >>> run_stopped()
    False
    """
    stop = _STOP.get()
    return stop is not None and stop.is_set()


def when_stopped(callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` (from the stopping thread) when the run this thread works for stops;
    at once if it has. Returns a function that unregisters it; outside a run nothing is
    registered.

    Examples
    --------
    >>> unregister = when_stopped(lambda: print("stopped"))  # outside a run: never called
    >>> unregister()
    """
    stop = _STOP.get()
    if stop is None:
        return lambda: None
    if not isinstance(stop, _RunStop):  # a plain event: nothing to notify, only to ask
        if stop.is_set():
            callback()
        return lambda: None
    return stop.register(callback)


def request_slot() -> None:
    """Wait for the run's rate limit, if it has one (model clients call this per request).

    Raises
    ------
    RunStopped
        If the run this request belongs to has stopped.
    """
    pause(0.0)  # a stopped run sends nothing more (its limiter may be closed already)
    limiter = _LIMITER.get()
    if limiter is not None:
        pause(limiter.reserve())


def pause(seconds: float) -> None:
    """Sleep ``seconds`` (a back-off between requests), ending early if the run stops.

    Raises
    ------
    RunStopped
        If the run this call belongs to has stopped, or stops meanwhile.

    Examples
    --------
    >>> pause(0.01)  # outside a run: a plain sleep
    """
    stop = _STOP.get()
    if stop is None:
        if seconds > 0:
            time.sleep(seconds)
    elif stop.wait(max(seconds, 0.0)):
        raise RunStopped


@contextlib.contextmanager
def rate_limited(limiter: RateLimiter | None) -> Iterator[None]:
    """Apply ``limiter`` to requests made in this context (and in tasks copied from it)."""
    token = _LIMITER.set(limiter)
    try:
        yield
    finally:
        _LIMITER.reset(token)


def check_picklable(objects: Mapping[str, Any], remedy: str) -> None:
    """Raise ConfigurationError naming the first object that cannot be pickled.

    Worker processes and dask workers receive the study by pickling; a lambda or an SDK client
    inside a procedure would otherwise fail with a raw pickling error deep in the pool.
    """
    for name, obj in objects.items():
        try:
            pickle.dumps(obj)
        except Exception as exc:  # noqa: BLE001 - any pickling failure is reported the same way
            raise ConfigurationError(
                f"{name} cannot be pickled, so it cannot be sent to worker processes "
                f"({type(exc).__name__}: {exc}). {remedy}") from None


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class KeyedOnce(Generic[K, V]):
    """Compute ``factory(key)`` once per key, whichever thread asks first; others wait."""

    def __init__(self, factory: Callable[[K], V]) -> None:
        self.factory = factory
        self._values: dict[K, V] = {}
        self._locks: dict[K, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, key: K) -> V:
        with self._lock:
            if key in self._values:
                return self._values[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._values:
                    return self._values[key]
            value = self.factory(key)
            with self._lock:
                self._values[key] = value
            return value

    def drop(self, key: K) -> None:
        with self._lock:
            self._values.pop(key, None)
            self._locks.pop(key, None)


class _Stopped(Exception):
    """The run stopped (an error elsewhere); unwinds the CPU part."""


#: Seconds the main thread waits for a run's next event before looking for Ctrl-C: the kernel
#: gives a process's SIGINT to any of its threads that does not block it, and handled on another
#: thread it only flags the interrupt for the main thread, which looks at the flag when it runs;
#: a wait without a timeout slept on to the next event, the end of a fit (measured: the
#: interrupt surfaced after 300 of 300 requests, 1,993 of 2,000 in a test under load).
WAIT_SLICE = 0.1


def _next_event(events: queue.Queue) -> Any:
    """The next item of ``events``, waited for in slices of :data:`WAIT_SLICE`."""
    while True:
        try:
            return events.get(timeout=WAIT_SLICE)
        except queue.Empty:
            continue


def run_with_threads(replications: Sequence[int], tasks: Callable[[int], Sequence[K]],
                     run_task: Callable[[int, K], Any],
                     merge: Callable[[int, dict, Any], Any],
                     finish: Callable[[int, Any], None], threads: int,
                     cpu: Callable[[Callable[[int, Any], None]], None] | None = None,
                     limiter: RateLimiter | None = None) -> None:
    """Run each replication's I/O-bound tasks on ``threads`` threads beside its CPU part.

    Parameters
    ----------
    replications : sequence of int
    tasks : callable
        ``tasks(m)``: the keys of replication ``m``'s thread tasks.
    run_task : callable
        ``run_task(m, key) -> outcome`` (run on the thread pool).
    merge : callable
        ``merge(m, {key: outcome}, cpu_record) -> record`` once both parts of ``m`` are done
        (``cpu_record`` is None without a CPU part).
    finish : callable
        ``finish(m, record)``, called in this thread as replications complete.
    threads : int
        Thread-pool size.
    cpu : callable, optional
        ``cpu(done)`` runs the CPU part of every replication (blocking) and calls
        ``done(m, record)`` for each; it runs in a helper thread.
    limiter : RateLimiter, optional
        Applied to the requests of the thread tasks.
    """
    events: queue.Queue = queue.Queue()
    stop = _RunStop()
    keys = {m: list(tasks(m)) for m in replications}
    outcomes: dict[int, dict] = {m: {} for m in replications}
    cpu_records: dict[int, Any] = {}
    finished: set[int] = set()

    def cpu_done(m: int, record: Any) -> None:
        if stop.is_set():
            raise _Stopped
        events.put(("cpu", m, record))

    def run_cpu(part: Callable[[Callable[[int, Any], None]], None]) -> None:
        try:
            part(cpu_done)
        except _Stopped:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            events.put(("error", None, exc))

    def complete(m: int) -> None:
        if m in finished or len(outcomes[m]) < len(keys[m]) or \
                (cpu is not None and m not in cpu_records):
            return
        finished.add(m)
        finish(m, merge(m, outcomes.pop(m), cpu_records.pop(m, None)))

    def io_done(m: int, key: K, future: Future) -> None:
        events.put(("io", (m, key), future))

    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="rx-io",
                              initializer=_mark_io_thread)
    helper, done = None, False
    try:
        with rate_limited(limiter):
            token = _STOP.set(stop)  # the tasks' requests and waits end once it is set
            try:
                context = contextvars.copy_context()
            finally:
                _STOP.reset(token)
        for m in replications:
            for key in keys[m]:
                future = pool.submit(context.copy().run, run_task, m, key)
                future.add_done_callback(functools.partial(io_done, m, key))
        if cpu is not None:
            helper = threading.Thread(target=context.copy().run, args=(run_cpu, cpu),
                                      name="rx-cpu", daemon=True)
            helper.start()
        for m in replications:
            complete(m)  # replications without any task (and no CPU part)
        while len(finished) < len(replications):
            kind, where, payload = _next_event(events)
            if kind == "error":
                raise payload
            if kind == "cpu":
                cpu_records[where] = payload
                complete(where)
            else:
                m, key = where
                outcomes[m][key] = payload.result()  # re-raises a task's error here
                complete(m)
        if helper is not None:
            helper.join()
        done = True
    finally:
        stop.set()
        # after an error, queued fits are cancelled and running ones are not waited for (they
        # end at their next request or back-off, with RunStopped)
        pool.shutdown(wait=done, cancel_futures=True)

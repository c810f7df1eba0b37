"""Warnings raised in another process, shown by the process that asked for the work.

A fit that runs in a forked child (``fit_timeout``), a pool worker (``n_jobs > 1``) or a dask
worker warns in that process, whose ``warnings`` machinery is not the caller's: the warning was
printed on the worker's standard error or appended to a forked copy of the caller's
``catch_warnings(record=True)`` log, and ``pytest.warns``, ``-W error`` or a filter in the
caller saw nothing. Here the worker *relays* each warning instead of showing it
(:func:`relaying`), and the caller *replays* it (:func:`replay`) through
:func:`warnings.warn_explicit` with the location, module and registry of the code that raised
it, so that the caller's filters and its ``"default"``/``"once"`` registries decide what is
shown, exactly as for the same code run in the caller.

The worker applies the caller's filters (inherited through the fork, or shipped to a dask
worker) to decide what to relay. ``"ignore"`` drops the warning in the worker, and ``"error"``
raises it there, inside the fit, which then fails as it does in the caller (``-W error`` gives
the same failed fits serially and in parallel). The actions that depend on what was shown
before (``"default"``, ``"once"``, ``"module"``) run there too, on registries emptied when the
worker starts relaying: a repeat they drop is one the caller's registry drops anyway, as it
replays the unit's warnings in one go, after the first; and a fit that raises the same warning
in a loop sends it once, not thousands of times (measured: 2,000 repeats of NumPy's
``divide by zero`` took 45 ms relayed one by one, against 4 ms in the caller). A warning whose
class cannot be pickled (one defined inside a function) is relayed as its nearest picklable
base class, with the class's name in the message.

While a unit relays, the caller's filters are the worker process's (Python before 3.14 keeps
one set per process): the worker's own threads warn under them too. Units on several threads
of one worker each relay to their own sink; a thread a unit started relays to that unit's when
it is the only one relaying.

Replaying an ``"error"`` warning raises in the caller; that happens only when the caller's
filters differ from those the worker applied (changed during the run, or an entry that cannot
be shipped to a dask worker: a filter on a class that cannot be pickled).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import TypeVar, cast

from ..shared.forksafe import ForkSafeLock

__all__ = ["RelayedWarning", "caller_filters", "shippable", "relaying", "collected", "replay",
           "InOrder"]

R = TypeVar("R")

#: Registries of warnings whose module is not loaded here, by module name (or file name).
_REGISTRIES: dict[str, dict] = {}


@dataclass(frozen=True)
class RelayedWarning:
    """A warning raised in another process: what :func:`warnings.warn_explicit` needs."""

    message: Warning
    filename: str
    lineno: int
    module: str | None


def caller_filters() -> list[tuple]:
    """This process's warning filters, its default action as a last catch-all entry: what a
    worker applies (:func:`relaying`) to decide as this process would."""
    default = getattr(warnings, "defaultaction", "default")  # not in the type stubs
    return [*warnings.filters, (default, None, Warning, None, 0)]


def shippable(filters: list[tuple]) -> list[tuple]:
    """The filters that pickle, for a worker that is not a fork (the rest stay the caller's,
    applied when it replays)."""
    return [f for f in filters if _pickles(f)]


@contextlib.contextmanager
def relaying(send: Callable[[RelayedWarning], object],
             filters: list[tuple] | None = None) -> Iterator[None]:
    """In a worker: each warning the filters would show goes to ``send`` instead.

    Parameters
    ----------
    send : callable
        ``send(relayed)`` for each warning, as it is raised.
    filters : list, optional
        The caller's :func:`caller_filters` (default this process's, e.g. inherited through a
        fork).

    Examples
    --------
    >>> got = []
    >>> with relaying(got.append):
    ...     warnings.warn("shown by the caller", UserWarning)
    >>> [(type(w.message).__name__, str(w.message)) for w in got]
    [('UserWarning', 'shown by the caller')]
    """
    global _relaying, _context, _shown_before
    me = threading.get_ident()
    with _lock:
        if _relaying == 0:  # the first thread to relay sets the process's filters
            _shown_before = warnings.showwarning
            _context = warnings.catch_warnings()  # empties the registries: the caller's decide
            _context.__enter__()
            cast(list, warnings.filters)[:] = caller_filters() if filters is None else filters
            warnings.showwarning = _show
        _relaying += 1
        outer = _sinks.get(me)
        _sinks[me] = send
    try:
        yield
    finally:
        with _lock:
            if outer is None:
                _sinks.pop(me, None)
            else:
                _sinks[me] = outer
            _relaying -= 1
            if _relaying == 0:  # the last restores them, whichever thread it is
                assert _context is not None
                _context.__exit__(None, None, None)
                _context = None


# A worker that runs units on several threads (a user's dask cluster) relays them at once:
# the process's filters and ``showwarning`` are set while any thread relays (a
# ``catch_warnings`` per thread, entered and left in any order, left another thread's in
# place, or restored the original under a thread still relaying), and each warning goes to
# the sink of the thread that raised it (the filters are the first thread's: the units of a
# run share the caller's; they hold for the worker's own threads meanwhile too, as Python
# before 3.14 has one set of filters per process). A thread a unit started (a thread pool
# in a fit) has no sink: its warnings go to the one unit relaying, if only one is.
_lock = ForkSafeLock()
_sinks: dict[int, Callable[[RelayedWarning], object]] = {}  # by thread
_relaying = 0
_context: warnings.catch_warnings | None = None
_shown_before: Callable = warnings.showwarning


def _renew_after_fork() -> None:
    """In a forked child only the forking thread runs: the other threads' sinks are gone."""
    mine = _sinks.get(threading.get_ident())
    _sinks.clear()
    if mine is not None:
        _sinks[threading.get_ident()] = mine


os.register_at_fork(after_in_child=_renew_after_fork)


def _show(message, category, filename, lineno, file=None, line=None) -> None:
    with _lock:
        send = _sinks.get(threading.get_ident())
        if send is None and len(_sinks) == 1:  # a thread the one relaying unit started
            send = next(iter(_sinks.values()))
    if send is None:  # a thread that is not relaying (the worker's own)
        _shown_before(message, category, filename, lineno, file, line)
    else:
        send(_relayed(message, category, filename, lineno))


def collected(work: Callable[[], R], filters: list[tuple] | None = None
              ) -> tuple[R, list[RelayedWarning]]:
    """In a worker: ``work()`` and the warnings it raised (:func:`relaying`), for the caller to
    :func:`replay`. An exception ``work`` raises carries them, as its ``relayed_warnings``
    attribute (which pickles with it), for :meth:`InOrder.flush`.

    Examples
    --------
    >>> def work():
    ...     warnings.warn("relayed", UserWarning)
    ...     return 42
    >>> result, relayed = collected(work)
    >>> result, [str(w.message) for w in relayed]
    (42, ['relayed'])
    """
    relayed: list[RelayedWarning] = []
    try:
        with relaying(relayed.append, filters):
            return work(), relayed
    except BaseException as exc:
        with contextlib.suppress(AttributeError):  # an exception without a __dict__
            exc.relayed_warnings = relayed  # type: ignore[attr-defined]
        raise


def replay(relayed: Iterable[RelayedWarning]) -> None:
    """Raise each relayed warning here, as if the code that raised it had run here: this
    process's filters and registries decide what is shown (an ``"error"`` filter raises).

    Examples
    --------
    >>> got = []
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("always")  # e.g. the caller's filter
    ...     with relaying(got.append):
    ...         for _ in range(3):
    ...             warnings.warn("once per location", UserWarning)
    >>> len(got)
    3
    >>> with warnings.catch_warnings(record=True) as shown:
    ...     warnings.simplefilter("default")  # the caller's filters decide what is shown
    ...     replay(got)
    >>> [str(w.message) for w in shown]
    ['once per location']
    """
    for w in relayed:
        module = sys.modules.get(w.module) if w.module is not None else None
        registry = vars(module).setdefault("__warningregistry__", {}) if module is not None \
            else _REGISTRIES.setdefault(w.module or w.filename, {})
        # module=None would drop the warning (CPython's sign of an interpreter shutting down):
        # an unknown module is named after its file, as warn_explicit does without one (no
        # module_globals: warnings.warn passes none either, and the loader of a __main__ read
        # from standard input raises when asked for the source)
        name = w.module or (w.filename[:-3] if w.filename.lower().endswith(".py")
                            else w.filename or "<unknown>")
        warnings.warn_explicit(w.message, type(w.message), w.filename, w.lineno, module=name,
                               registry=registry)


class InOrder:
    """Replays the warnings of units finished in any order in the order they were started,
    so that what the caller sees does not depend on the number of workers.

    Examples
    --------
    >>> order = InOrder()
    >>> for unit in (0, 1, 2):
    ...     order.expect(unit)
    >>> def relayed(text):
    ...     return [RelayedWarning(UserWarning(text), "f.py", 1, None)]
    >>> with warnings.catch_warnings(record=True) as shown:
    ...     warnings.simplefilter("always")
    ...     order.put(2, relayed("two")); order.put(0, relayed("zero"))
    ...     order.put(1, relayed("one"))
    >>> [str(w.message) for w in shown]
    ['zero', 'one', 'two']
    """

    def __init__(self) -> None:
        self._expected: list = []
        self._done: dict = {}

    def expect(self, unit) -> None:
        """``unit`` starts now: its warnings come after those of the units started before."""
        self._expected.append(unit)

    def put(self, unit, relayed: Iterable[RelayedWarning]) -> None:
        """``unit`` finished: replay its warnings, and those of the units after it that were
        waiting for it, once every unit started before it has finished."""
        self._done[unit] = list(relayed)
        while self._expected and self._expected[0] in self._done:
            pending = self._done[self._expected[0]]
            while pending:  # one by one: if one raises, flush still has the rest
                replay([pending.pop(0)])
            del self._done[self._expected.pop(0)]

    def flush(self, error: BaseException) -> None:
        """On ``error``, which stops the work: replay the warnings of every finished unit, in
        order, then those ``error`` carries (from :func:`collected`), and drop the units that
        will not finish. A warning that an ``"error"`` filter turns into an exception is not
        raised: the error that stopped the work is the one to report."""
        units = [self._done.pop(unit) for unit in self._expected if unit in self._done]
        self._expected.clear()
        for w in [*(w for relayed in units for w in relayed),
                  *getattr(error, "relayed_warnings", ())]:
            with contextlib.suppress(Exception):
                replay([w])


def _relayed(message, category, filename: str, lineno: int) -> RelayedWarning:
    if not isinstance(message, Warning):
        message = category(message)
    if not _pickles(message):  # e.g. a class defined inside a function
        message = _as_base(message)
    return RelayedWarning(message, str(filename), int(lineno), _module_at(filename, lineno))


def _as_base(message: Warning) -> Warning:
    """A warning that cannot be pickled as its nearest base class that can (``Warning`` at
    worst), its class named in the text."""
    cls = type(message)
    text = (f"{message} ({cls.__module__}.{cls.__qualname__}, a warning class that cannot be "
            "pickled, raised in a worker process)")
    for base in cls.__mro__[1:]:
        if issubclass(base, Warning):
            with contextlib.suppress(Exception):  # a base whose __init__ wants other arguments
                candidate = base(text)
                if _pickles(candidate):
                    return candidate
    return Warning(text)


def _pickles(obj) -> bool:
    try:
        pickle.loads(pickle.dumps(obj))
    except Exception:  # noqa: BLE001 - any failure means it cannot be sent
        return False
    return True


def _module_at(filename: str, lineno: int) -> str | None:
    """The module of the code that raised the warning (its filters and registry match on it):
    the frame on the stack at that location, else the loaded module of that file."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_lineno == lineno and frame.f_code.co_filename == filename:
            return frame.f_globals.get("__name__", "<string>")  # as warnings.warn names it
        frame = frame.f_back
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) == filename:
            return name
    return None

"""The failure protocol (SPEC §6, all procedures).

Predictions are repaired with the eligible set's constraints (clipped to ``Between`` bounds);
a prediction row that is non-finite (judged before the repair, which would clip ±inf to a
bound) or still fails a constraint gets the baseline's prediction for that row; a fit or a
prediction call that raises gets the baseline's predictions everywhere.
Every replacement is counted, and studies record the counts and the first error message.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import threading
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ..eligible.constraints import Constraint
from ..shared.checks import real_predictions
from ..shared.exceptions import SandboxUnavailableError
from ..shared.forksafe import ForkSafeLock
from ..shared.random_state import seeded_globals

__all__ = ["GuardedRule", "ignoring", "repair"]

#: What a call of user code (a fit, a prediction, a discrepancy) may raise and still be recorded
#: as its failure: a ``sys.exit()`` in a procedure (a stray ``exit()``, a library that exits on
#: bad input) is that procedure's crash; left to propagate, it ended the whole study quietly,
#: with exit status 0 and nothing printed.
USER_CODE_ERRORS = (Exception, SystemExit)


#: User calls running now, by thread, and the process state the first of them found.
_user_calls: dict[int, int] = {}
_found: tuple[Any, list, str | None] | None = None
_user_calls_lock = ForkSafeLock()


def _keep_the_forking_threads_calls() -> None:
    # A forked child has only the thread that forked: other threads' calls, inherited as
    # running, would never end there, and nothing would be restored between its fits
    global _user_calls, _found
    me = threading.get_ident()
    _user_calls = {me: _user_calls[me]} if me in _user_calls else {}
    if not _user_calls:
        _found = None


os.register_at_fork(after_in_child=_keep_the_forking_threads_calls)


@contextlib.contextmanager
def user_code(seed: int | None = None) -> Iterator[None]:
    """A call of user code (a fit, a prediction) that leaves numpy's floating-point error
    state, the warning filters and the working directory as it found them.

    A procedure calling ``np.seterr(all="raise")`` or ``warnings.simplefilter("error")``
    changed how every later procedure of the process ran (their divisions by zero or their
    warnings raised and failed their fits), so a procedure's losses depended on which
    procedures ran before it; an ``os.chdir`` moved the caller's relative paths. The error
    state is each thread's own. Filters and the directory are the process's: fits on threads
    share them while they run, and the last call to end restores what the first found (a call
    restoring its own start would reinstate a change another thread's fit had made).

    With a ``seed``, the call also runs on numpy's global random state and Python's ``random``
    seeded by it, and restored after it (:func:`~restrictiveness.shared.random_state.
    seeded_globals`: one such call at a time in the process), so that a procedure drawing from
    them gives the same numbers wherever and whenever it runs.

    Parameters
    ----------
    seed : int, optional
        From :func:`~restrictiveness.shared.random_state.global_state_seed`; None leaves the
        global random states as they are.

    Examples
    --------
    >>> import warnings
    >>> with user_code():
    ...     _ = np.seterr(all="raise")
    ...     warnings.simplefilter("error")
    >>> np.geterr()["divide"], warnings.filters[0][0] == "error"
    ('warn', False)
    >>> with user_code(seed=3):
    ...     a = np.random.rand()
    >>> with user_code(seed=3):
    ...     b = np.random.rand()
    >>> a == b
    True
    """
    global _found
    me = threading.get_ident()
    with _user_calls_lock:
        if not _user_calls:
            _found = (warnings.filters, list(warnings.filters), _working_directory())
        _user_calls[me] = _user_calls.get(me, 0) + 1
    try:
        with np.errstate(), (contextlib.nullcontext() if seed is None
                             else seeded_globals(seed, user_call=True)):
            yield
    finally:
        with _user_calls_lock:
            _user_calls[me] -= 1
            if not _user_calls[me]:
                del _user_calls[me]
            if not _user_calls and _found is not None:
                _restore(*_found)
                _found = None


@contextlib.contextmanager
def ignoring(category: type[Warning]) -> Iterator[None]:
    """Ignore warnings of ``category`` in this block without racing user calls on threads.

    :class:`warnings.catch_warnings` swaps the process's one set of filters: a
    :func:`user_code` call starting on another thread meanwhile took the block's filters for
    the caller's, and the last call to end restored them for good. Here the start and the end
    of user calls wait for the block.

    Examples
    --------
    >>> import warnings
    >>> with ignoring(UserWarning):
    ...     warnings.filters[0][:3]
    ('ignore', None, <class 'UserWarning'>)
    >>> warnings.filters[0][:3] == ("ignore", None, UserWarning)
    False
    """
    with _user_calls_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore", category)
        yield


def _working_directory() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # deleted
        return None


def _restore(filters: Any, entries: list, directory: str | None) -> None:
    if warnings.filters is not filters or warnings.filters != entries:
        warnings.filters = filters
        filters[:] = entries
        # as catch_warnings does on exit: the registries' cached decisions are stale
        warnings._filters_mutated()  # type: ignore[attr-defined]
    if directory is not None and _working_directory() != directory:
        with contextlib.suppress(OSError):  # gone meanwhile: nowhere to return to
            os.chdir(directory)


class WorkerTerminated(SystemExit):
    """The parent's SIGTERM in a pool worker: the unit unwinds through its clean-up."""


def failure_text(exc: BaseException) -> str:
    """How a failed call is recorded: the exception's type and message; for a ``sys.exit``
    (whose message is only its code), what was called.

    Examples
    --------
    >>> failure_text(ValueError("no data")), failure_text(SystemExit(0))
    ('ValueError: no data', 'SystemExit: sys.exit(0) was called')
    """
    if isinstance(exc, SystemExit):
        return f"SystemExit: sys.exit({exc.code!r}) was called"
    return f"{type(exc).__name__}: {exc}"


def repair(pred: np.ndarray, X: np.ndarray, constraints: Sequence[Constraint],
           columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Repaired predictions and a validity flag per row."""
    pred = np.array(pred, dtype=float)
    # judged finite before the repair, which would clip ±inf to a bound (SPEC §6: a
    # non-finite prediction gets the baseline's), and after it (a repair may divide by 0)
    ok = np.isfinite(pred.reshape(pred.shape[0], -1)).all(axis=1)
    for c in constraints:
        pred = c.repair(pred, X, columns)
    ok &= np.isfinite(pred.reshape(pred.shape[0], -1)).all(axis=1)
    for c in constraints:
        ok &= c.check(pred, X, columns)
    return pred, ok


#: Set by the command line's SIGINT and SIGTERM handlers (:func:`note_interrupt`).
_interrupt_noted = threading.Event()


def note_interrupt(noted: bool = True) -> None:
    """Record that the process was asked to stop (or, with ``noted=False``, forget it).

    C code can turn the KeyboardInterrupt a signal handler raised inside it into another
    error: numpy comparing structured arrays (``np.unique(axis=0)``) reported "Cannot compare
    structured arrays unless they have a common dtype", and the command line ended with
    "unexpected TypeError ... (a bug: please report it)" instead of its summary (1 Ctrl-C in
    25). A handler that notes the request makes :func:`is_interrupt` see it whatever became of
    the exception.
    """
    if noted:
        _interrupt_noted.set()
    else:
        _interrupt_noted.clear()


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is or stems from a KeyboardInterrupt: Ctrl-C during a numba kernel
    surfaces as ``SystemError(... returned a result with an exception set)`` caused by it; or
    the process was asked to stop (:func:`note_interrupt`)."""
    if _interrupt_noted.is_set():
        return True
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def reraise_interrupt(exc: BaseException) -> None:
    """Raise KeyboardInterrupt if ``exc`` stems from one: an interrupt must stop the run, not
    be recorded as a failed fit."""
    if is_interrupt(exc):
        raise KeyboardInterrupt from exc


def reraise_fatal(exc: BaseException) -> None:
    """Raise ``exc`` again when it must stop the run rather than count as one failed fit: an
    interrupt, or a sandbox that cannot isolate programs on this machine (it fails closed; a
    study recording every program fit as failed, with the baseline's losses, hid that).

    Examples
    --------
    >>> from restrictiveness.shared.exceptions import SandboxUnavailableError
    >>> reraise_fatal(ValueError("a fit's own error"))  # recorded by the caller
    >>> reraise_fatal(SandboxUnavailableError("no Landlock"))
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.SandboxUnavailableError: no Landlock
    """
    reraise_interrupt(exc)
    if isinstance(exc, SandboxUnavailableError | WorkerTerminated):
        raise exc
    if isinstance(exc, SystemExit) and _from_a_signal_handler(exc):
        raise exc


def _from_a_signal_handler(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in one of this process's Python signal handlers (a script's
    ``signal.signal(SIGTERM, lambda *a: sys.exit(143))``, run during a fit): the script's own
    stop, not the fit's ``sys.exit``, which was recorded as the fit's failure and the study
    ran on past a scheduler's termination."""
    handlers = set()
    for number in signal.valid_signals():
        try:
            code = getattr(signal.getsignal(number), "__code__", None)
        except (OSError, ValueError):
            continue
        if code is not None:
            handlers.add(code)
    frame = exc.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code in handlers:
            return True
        frame = frame.tb_next
    return False


class GuardedRule:
    """A fitted rule under the failure protocol, with its baseline as the fallback.

    Parameters
    ----------
    fitted : Fitted or None
        The procedure's fitted rule (None when the fit failed).
    baseline : Fitted
        The baseline's fitted rule on the same sample.
    constraints : sequence of Constraint
        The eligible set's restrictions.
    columns : sequence of str
        Covariate names.
    error : str
        Why the fit failed, if it did.
    seed, baseline_seed : int, optional
        Seeds of the global random states for the rule's and the baseline's predictions
        (:func:`user_code`); None leaves the states as they are.

    Attributes
    ----------
    replaced : int
        Prediction rows replaced by the baseline's so far, each set of locations counted once:
        every discrepancy asks for the predictions at the evaluation points, and a failed fit
        scored by three discrepancies counted its rows three times (a rule whose repeated call
        at the same locations replaces more rows counts its largest call).
    failed : bool
        True when the fit failed or a prediction call raised.
    last_replaced : ndarray of bool or None
        Rows of the latest ``predict`` call that got the baseline's prediction; discrepancies
        that combine rows (finite-difference elasticities) use it to treat a whole group as
        invalid instead of mixing the rule's rows with the baseline's.
    """

    def __init__(self, fitted, baseline, constraints: Sequence[Constraint],
                 columns: Sequence[str], error: str = "", seed: int | None = None,
                 baseline_seed: int | None = None) -> None:
        if fitted is None and not error:  # a fit that forgot its return: say so
            error = "fit: returned None, not a fitted rule (does fit end with return?)"
        self.fitted, self.baseline = fitted, baseline
        self.constraints, self.columns = tuple(constraints), tuple(columns)
        self.error, self.failed, self.replaced = error, fitted is None, 0
        self.last_replaced: np.ndarray | None = None
        self._counted: dict[tuple, int] = {}  # digest of the locations -> rows replaced there
        self.seed, self.baseline_seed = seed, baseline_seed

    def _count(self, X: np.ndarray, rows: int) -> None:
        # keyed on the locations themselves: only calls that replace rows pay for the digest
        X = np.ascontiguousarray(X)
        key = (X.shape, X.dtype.str, hashlib.blake2b(X.tobytes(), digest_size=16).digest())
        before = self._counted.get(key, 0)
        if rows > before:
            self.replaced += rows - before
            self._counted[key] = rows

    # predict gets its own copy of X: the caller's locations are shared by every procedure of
    # a replication and are read again by the repair (bounds named by column)
    def baseline_predict(self, X: np.ndarray) -> np.ndarray:
        with user_code(self.baseline_seed):
            raw = self.baseline.predict(np.array(X))
        raw = real_predictions(raw, "the baseline").copy()
        if raw.ndim == 0 or raw.shape[0] != len(X):  # a scalar was "tuple index out of range"
            raise ValueError(f"the baseline's predictions have shape {raw.shape}; it must return "
                             f"one prediction per row of X ({len(X)} rows)")
        pred, _ = repair(raw, X, self.constraints, self.columns)
        # a non-finite baseline prediction stays non-finite (the study refuses such a
        # baseline) instead of being clipped to a bound as an eligible one
        pred[~np.isfinite(raw)] = np.nan
        return pred

    def predict(self, X: np.ndarray) -> np.ndarray:
        base = self.baseline_predict(X)
        if self.fitted is not None:
            try:
                with user_code(self.seed):
                    raw = self.fitted.predict(np.array(X))
                raw = real_predictions(raw, "predict")
                if raw.shape != base.shape:
                    raise ValueError(f"predictions have shape {raw.shape}, expected {base.shape}")
            except USER_CODE_ERRORS as exc:  # any failure of user code is recorded
                reraise_fatal(exc)
                self.failed, self.fitted = True, None
                self.error = self.error or f"predict: {failure_text(exc)}"
            else:
                pred, ok = repair(raw, X, self.constraints, self.columns)
                bad = ~ok
                if bad.any():
                    pred[bad] = base[bad]
                    self._count(X, int(bad.sum()))
                    self.error = self.error or f"{int(bad.sum())} invalid prediction row(s)"
                self.last_replaced = bad
                return pred
        self._count(X, base.shape[0])
        self.last_replaced = np.ones(base.shape[0], dtype=bool)
        return base

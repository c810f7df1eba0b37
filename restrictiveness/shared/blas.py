"""One BLAS/OpenMP thread for a block of work, without rescanning the process every time.

``threadpoolctl.threadpool_limits(1)`` finds the thread pools by reading ``/proc/self/maps``
on every call: about 10 ms in a process that has imported numba and scipy, more than a small
replication costs (a study of 2,000 replications of a 25-point model spent two thirds of its
time there). :func:`one_thread` keeps one ``ThreadpoolController`` and builds a new one only
when the process has loaded another shared library (counted with ``dl_iterate_phdr``, a few
microseconds), so the limit reaches exactly the libraries a fresh scan would find. Where that
count is unavailable (no ``dl_iterate_phdr``, e.g. macOS) every call scans afresh.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys
import threading
from typing import TYPE_CHECKING

from .forksafe import ForkSafeLock

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

__all__ = ["one_thread", "loaded_libraries"]

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
_lock = ForkSafeLock()
#: Held while :func:`loaded_libraries` swaps ``sys.unraisablehook``, the process's.
_hook_lock = ForkSafeLock()
#: (library count, controller) of the last scan
_scanned: tuple[int, ThreadpoolController] | None = None


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
    except OSError:
        return None
    return libc if hasattr(libc, "dl_iterate_phdr") else None


_LIBC = _libc()


def loaded_libraries() -> int | None:
    """The number of shared objects loaded in this process.

    Returns
    -------
    int or None
        The count from ``dl_iterate_phdr``; None where the C library lacks it.

    Examples
    --------
    >>> n = loaded_libraries()
    >>> n is None or n > 0
    True
    """
    if _LIBC is None:
        return None
    count = 0
    raised: list[BaseException] = []

    def visit(info: int | None, size: int, data: int | None) -> int:
        nonlocal count
        count += 1
        return 0

    me = threading.get_ident()

    def keep(unraisable) -> None:  # this thread's are the callback's; others' pass on
        if threading.get_ident() == me and unraisable.exc_value is not None:
            raised.append(unraisable.exc_value)
        else:
            previous(unraisable)

    # A signal handler can run inside the callback (Ctrl-C's KeyboardInterrupt, a worker's
    # SIGTERM): ctypes prints an exception raised there as "ignored" and goes on, so the
    # interrupt was lost and the run went on to its end. It is kept and raised here instead.
    with _hook_lock:
        previous = sys.unraisablehook
        sys.unraisablehook = keep
        try:
            _LIBC.dl_iterate_phdr(_CALLBACK(visit), None)
        finally:
            sys.unraisablehook = previous
    if raised:
        raise raised[0]
    return count


def one_thread() -> contextlib.AbstractContextManager:
    """A context manager limiting every BLAS and OpenMP pool of the process to one thread,
    equivalent to ``threadpoolctl.threadpool_limits(1)``.

    Returns
    -------
    contextlib.AbstractContextManager
        Entering it sets one thread; leaving it restores the previous counts.

    Examples
    --------
    >>> from threadpoolctl import threadpool_info
    >>> with one_thread():
    ...     print({pool["num_threads"] for pool in threadpool_info()} <= {1})
    True
    """
    from threadpoolctl import ThreadpoolController, threadpool_limits

    key = loaded_libraries()
    if key is None:
        return threadpool_limits(1)
    global _scanned
    with _lock:
        if _scanned is None or _scanned[0] != key:
            _scanned = (key, ThreadpoolController())
        controller = _scanned[1]
    return controller.limit(limits=1)

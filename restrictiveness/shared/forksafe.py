"""Locks that a forked child finds usable.

A process forked while another thread holds a lock gets the lock held and no thread to release
it: the child waits for ever the first time it needs it. The package forks beside threads (a
study with ``concurrency`` forks its process-pool workers from one thread while others parse
formulas, compile kernels and send results), so every lock such a child may take is either

- a :class:`ForkSafeLock`, which the child replaces by a fresh one unless the forking thread
  itself held it (that thread, the only one the child has, will release it); or
- numba's compiler lock, which :func:`os.fork` waits for instead (a compilation half done in
  another thread would leave numba's and LLVM's state half built in the child, so a fresh lock
  is not enough there).

Locks below Python (OpenSSL's, a module's import lock) can be neither renewed nor waited for
here: a study with ``concurrency`` forks its pool's workers before its I/O threads start
(:func:`restrictiveness.engine.study._start_pool`).
"""

from __future__ import annotations

import os
import threading
import weakref

from numba.core.compiler_lock import global_compiler_lock

__all__ = ["ForkSafeLock"]


class ForkSafeLock:
    """A lock (re-entrant if asked) that a forked child finds free unless its own thread held it.

    Parameters
    ----------
    reentrant : bool, default False
        Use :class:`threading.RLock` rather than :class:`threading.Lock`.

    Examples
    --------
    >>> import os, threading
    >>> lock = ForkSafeLock()
    >>> held, done = threading.Event(), threading.Event()
    >>> def hold():
    ...     with lock:
    ...         held.set()
    ...         done.wait()
    >>> threading.Thread(target=hold).start()
    >>> _ = held.wait()
    >>> pid = os.fork()
    >>> if pid == 0:  # the child: the holder is not here, and the lock is free
    ...     os._exit(0 if lock.acquire(timeout=5) else 1)
    >>> os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    0
    >>> done.set()
    """

    def __init__(self, reentrant: bool = False) -> None:
        self._factory = threading.RLock if reentrant else threading.Lock
        self._lock = self._factory()
        self._owner: int | None = None
        self._depth = 0
        _LOCKS.add(self)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Acquire the lock, as :meth:`threading.Lock.acquire`."""
        if not self._lock.acquire(blocking, timeout):
            return False
        self._owner = threading.get_ident()
        self._depth += 1
        return True

    def release(self) -> None:
        """Release the lock, as :meth:`threading.Lock.release`."""
        if self._depth == 0:  # before the count goes negative and keeps a stale owner
            raise RuntimeError("release unlocked lock")
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
        self._lock.release()

    def __enter__(self) -> ForkSafeLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def _renew_in_child(self) -> None:
        # the child runs only the forking thread: any other holder is gone for good
        if self._owner != threading.get_ident():
            self._lock, self._owner, self._depth = self._factory(), None, 0


_LOCKS: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()


def _renew_locks() -> None:
    for lock in list(_LOCKS):
        lock._renew_in_child()


os.register_at_fork(before=global_compiler_lock.acquire,
                    after_in_parent=global_compiler_lock.release,
                    after_in_child=global_compiler_lock.release)
os.register_at_fork(after_in_child=_renew_locks)

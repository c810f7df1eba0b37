"""shared.blas.one_thread: the same limit as a fresh threadpoolctl scan, restored on exit."""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from restrictiveness.shared.blas import loaded_libraries, one_thread


def _pools():
    return sorted((p["filepath"], p["num_threads"]) for p in threadpool_info())


def test_one_thread_limits_the_pools_a_fresh_scan_finds_and_restores_them():
    before = _pools()
    for _ in range(2):                      # the second call reuses the cached controller
        with one_thread():
            inside = _pools()
        with threadpool_limits(1):
            fresh = _pools()
        assert inside == fresh and {n for _, n in inside} <= {1}
        assert _pools() == before


def test_loaded_libraries_counts_a_newly_loaded_library():
    """The cache key: loading one more shared library raises the count by one."""
    maps = Path("/proc/self/maps").read_text() if Path("/proc/self/maps").exists() else ""
    names = [ctypes.util.find_library(n) for n in ("bz2", "lzma", "uuid", "sqlite3", "ffi",
                                                    "ncursesw", "readline", "expat", "gdbm")]
    new = [n for n in names if n and n not in maps]
    if loaded_libraries() is None or not new:
        pytest.skip("no dl_iterate_phdr, or every candidate library is loaded already")
    n = loaded_libraries()
    ctypes.CDLL(new[0])
    assert loaded_libraries() == n + 1


@pytest.mark.skipif(loaded_libraries() is None, reason="no dl_iterate_phdr")
def test_an_interrupt_while_the_libraries_are_counted_is_raised_not_ignored(monkeypatch):
    """Ctrl-C whose handler ran inside the count's ctypes callback was printed as "Exception
    ignored on calling ctypes callback function" and lost: the run went on to its end (the CLI's
    stop-within-5-s test exited 0 after 13.6 s)."""
    import os
    import signal

    from restrictiveness.shared import blas

    real = blas._CALLBACK

    def signalled(visit):
        def first_call_signals(*args):
            os.kill(os.getpid(), signal.SIGUSR1)
            for _ in range(1000):  # the handler runs at the next check, inside the callback
                pass
            return visit(*args)
        return real(first_call_signals)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    monkeypatch.setattr(blas, "_CALLBACK", signalled)
    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            loaded_libraries()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    monkeypatch.undo()
    assert loaded_libraries() > 0  # and the next count is a count

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

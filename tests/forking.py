"""Test helpers for code that forks while other threads run."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def held_by_another_thread(lock) -> Iterator[None]:
    """``lock`` held by another thread for the duration: a fork made meanwhile copies it held,
    and only the forked child's renewal of it lets the child take it."""
    held, release = threading.Event(), threading.Event()

    def hold():
        with lock:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)
    try:
        yield
    finally:
        release.set()
        thread.join()

"""Test helpers for code that forks while other threads run."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def held_by_another_thread(lock, release_after: float = 10.0) -> Iterator[None]:
    """``lock`` held by another thread for the duration: a fork made meanwhile copies it held,
    and only the forked child's renewal of it lets the child take it. The holder lets go after
    ``release_after`` seconds at the latest (sooner when the block ends)."""
    held, release = threading.Event(), threading.Event()

    def hold():
        with lock:
            held.set()
            release.wait(release_after)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(5)
    try:
        yield
    finally:
        release.set()
        thread.join()

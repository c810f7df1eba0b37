"""Test helper: fail, rather than hang, when the code under test never returns."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def within(seconds: int) -> Iterator[None]:
    """Raise ``TimeoutError`` in the main thread if the block takes longer than ``seconds``
    (the old code of some tests hung for ever)."""
    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)

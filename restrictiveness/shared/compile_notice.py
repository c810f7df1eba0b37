"""A one-line notice when numba compiles a kernel (the first run's long silent minute).

The package's kernels are compiled on first use and cached on disk (``cache=True``); the first
run of an application spends tens of seconds compiling with nothing on screen. numba announces
every compilation that misses its cache as a ``"numba:compile"`` event (numba's documented event
API); :class:`CompileNotice` listens for it and prints one line, once — in this process or in
any worker forked from it (the flag lives in shared memory).
"""

from __future__ import annotations

import multiprocessing
import sys
from typing import TextIO

from numba.core import event

__all__ = ["CompileNotice"]

MESSAGE = ("note: compiling numerical kernels on first use (about a minute, once; later runs "
           "load them from numba's cache)")


class CompileNotice(event.Listener):
    """While active (a ``with`` block), print ``message`` the first time numba compiles.

    Kernels loaded from the cache stay silent; the line appears at most once, whichever
    process (this one or a forked worker) compiles first.

    Parameters
    ----------
    stream : text stream, optional
        Where to print (default: standard error at the time of printing).
    message : str
        The notice.

    Examples
    --------
    >>> import io, numba
    >>> out = io.StringIO()
    >>> with CompileNotice(out):
    ...     _ = numba.njit(lambda x: x + 1)(1)
    ...     _ = numba.njit(lambda x: x + 2)(1)
    >>> out.getvalue().count("compiling numerical kernels")
    1
    """

    def __init__(self, stream: TextIO | None = None, message: str = MESSAGE) -> None:
        self.stream, self.message = stream, message
        self.shown = multiprocessing.Value("b", 0)

    def on_start(self, ev) -> None:
        with self.shown.get_lock():
            if self.shown.value:
                return
            self.shown.value = 1
        stream = self.stream if self.stream is not None else sys.stderr
        print(self.message, file=stream, flush=True)

    def on_end(self, ev) -> None:
        pass

    def __enter__(self) -> CompileNotice:
        event.register("numba:compile", self)
        return self

    def __exit__(self, *exc) -> None:
        event.unregister("numba:compile", self)

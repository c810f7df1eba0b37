"""Ctrl-C while ``python -m restrictiveness`` starts: one line, status 130.

The command line installs its own SIGINT handler once the package is imported and its options
are read (a second or more, several on a loaded machine); a Ctrl-C before it printed the
30-line traceback of the import under way. The package's ``__init__`` installs
:func:`interrupted_while_starting` first, when (and only when) the process was started as
``python -m restrictiveness``; :func:`restrictiveness.cli.main` replaces it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

__all__ = ["interrupted_while_starting", "install"]


def interrupted_while_starting(signum, frame) -> None:
    """Leave at once, in one line: nothing has been done yet (imports and option parsing)."""
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    os._exit(130)


def install() -> None:
    """Install :func:`interrupted_while_starting` if this process is ``python -m
    restrictiveness`` and SIGINT has Python's own handler (an ignored SIGINT, as in a
    background job or under nohup, stays ignored)."""
    argv = getattr(sys, "orig_argv", [])  # the command line as typed
    if "-m" in argv and argv[argv.index("-m") + 1:][:1] == ["restrictiveness"] \
            and threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupted_while_starting)

"""Command-line front door: ``python -m restrictiveness <command> ...``.

Each command lives in a module of this package exposing ``register(subparsers)``, which adds its
parser and sets ``func(args) -> int``; the options they share and their checks live in
:mod:`restrictiveness.cli.options`. Every option is checked before any work.

Exit status: 0 success; 1 the run failed (a worker died, every dask worker is gone, an output
could not be written, or ``--strict`` found failed fits); 2 a usage or input error (one line
on standard error, no traceback); 130 interrupted (Ctrl-C: workers stopped, finished
replications kept in the checkpoint); 143 terminated (SIGTERM, e.g. a batch scheduler's
time limit: handled as Ctrl-C, with the same summary).

The top layer: may import every other subpackage.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Sequence

from .options import Parser, add_study_options

__all__ = ["main", "entry", "add_study_options", "build_parser"]

COMMANDS = ("demo", "replicate", "completeness", "sensitivity")


def build_parser() -> Parser:
    from ..shared._versions import package_versions

    parser = Parser(
        prog="python -m restrictiveness",
        description="Restrictiveness and completeness of economic models, machine learners and "
                    "AI workflows (Fudenberg, Gao & You 2026).")
    parser.add_argument("--version", action="version",
                        version=f"restrictiveness {package_versions()['restrictiveness']}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def _one_line(text: object) -> str:
    # Library messages may quote multi-line context (patsy's caret diagrams, pandas' reasons).
    return " ".join(str(text).split())


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {_one_line(message)}", file=sys.stderr if file is None else file)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from ..engine.failures import is_interrupt, note_interrupt
    from ..shared.compile_notice import CompileNotice
    from ..shared.exceptions import ExecutionError, RestrictivenessError

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return int(exc.code or 0)
    terminated = False

    def on_sigterm(signum, frame) -> None:
        # A batch scheduler's time limit sends SIGTERM, then SIGKILL after a grace period:
        # stop as on Ctrl-C (workers stopped, finished work saved, the summary printed).
        nonlocal terminated
        terminated = True
        note_interrupt()
        raise KeyboardInterrupt

    def on_sigint(signum, frame) -> None:
        # as Python's own handler, and noted: C code may turn the KeyboardInterrupt into
        # another error (see note_interrupt)
        note_interrupt()
        raise KeyboardInterrupt

    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, on_sigterm) if in_main else None
    from ..shared.startup import interrupted_while_starting

    # (Python's handler, or the package's while `python -m restrictiveness` started; an
    # ignored SIGINT, as in a background job or under nohup, stays ignored)
    previous_int = signal.signal(signal.SIGINT, on_sigint) \
        if in_main and signal.getsignal(signal.SIGINT) in (
            signal.default_int_handler, interrupted_while_starting) else None
    note_interrupt(False)
    try:
        with CompileNotice(), warnings.catch_warnings():
            warnings.simplefilter("default")  # each distinct warning once
            warnings.showwarning = _one_line_warning  # restored by catch_warnings
            return int(args.func(args) or 0)
    except KeyboardInterrupt as exc:
        print(_one_line(exc) or ("terminated" if terminated else "interrupted"),
              file=sys.stderr)
        return 143 if terminated else 130
    except ExecutionError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except RestrictivenessError as exc:
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:  # an output that could not be written (disk full, ...)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"error: {where}{_one_line(exc.strerror or exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        if is_interrupt(exc):  # Ctrl-C inside a numba kernel, or turned into another error
            print("terminated" if terminated else "interrupted", file=sys.stderr)
            return 143 if terminated else 130
        if os.environ.get("RESTRICTIVENESS_TRACEBACK"):
            raise
        print(f"error: unexpected {type(exc).__name__}: {_one_line(exc)} (a bug: please report "
              "it; set RESTRICTIVENESS_TRACEBACK=1 to see the traceback)", file=sys.stderr)
        return 1
    finally:
        if previous is not None:  # None: not in the main thread, or a handler set outside Python
            signal.signal(signal.SIGTERM, previous)
        if previous_int is not None:
            signal.signal(signal.SIGINT, previous_int)
        note_interrupt(False)


def entry() -> None:
    """The process's entry point (``python -m restrictiveness`` and the ``restrictiveness``
    script): :func:`main`, then exit with its status.

    After Ctrl-C (or SIGTERM) the workers are already stopped and every finished replication
    is on disk, so the process leaves at once instead of running the interpreter's teardown
    (which joins the process pool's housekeeping threads: measured 1.5 s on a loaded machine).
    """
    status = main()
    if status in (130, 143):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    raise SystemExit(status)

"""Options every command shares, checked before any work, and what they turn into.

* :class:`Parser` prints a usage error as one line and exits with status 2.
* Option *types* (``count``, ``seed``, ``jobs``, ``input_file``, ``output_file``, ...) refuse
  a bad value while the command line is parsed, naming the option and what to do; nothing is
  silently replaced by a default (``-M 0`` is an error, not M = 100).
* ``add_study_options``, ``add_output_options`` and ``add_backend_options`` declare the
  options of the study commands; :func:`check_study_args` checks how they combine.
* :class:`Outputs` holds a lock on every output file for the whole run, so two runs cannot
  write one file (the second is refused at once), and writes each file atomically.
* :func:`run_study` runs a study with the options, and :func:`failure_status` turns failed
  fits into the exit status under ``--strict``.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..shared.checks import MAX_SEED
from ..shared.exceptions import ConfigurationError
from ..shared.files import FileLock, LockBusy, atomic_output

__all__ = ["Parser", "add_command", "count", "seed", "jobs", "real", "input_file",
           "output_file", "checkpoint_dir", "add_study_options", "add_output_options",
           "add_backend_options", "check_study_args", "Outputs", "run_study", "failure_status",
           "study_status", "estimates_table"]

#: Exit status when ``--strict`` finds failed fits (usage errors exit 2, Ctrl-C 130).
STRICT_STATUS = 1
#: Seconds to wait for a dask scheduler given by --scheduler.
CONNECT_TIMEOUT = 10


class _StoreOnce(argparse._StoreAction):
    """``store``, refusing a second occurrence: argparse keeps the last, so ``--n 50 --n 100``
    ran n = 100 alone and ``--seed 1 --seed 2`` seed 2, without a word."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = parser._given  # reset by Parser.parse_known_args, which registers this action
        if self.option_strings and self.dest in seen:
            hint = (f"; list all values after one {self.option_strings[0]}"
                    if self.nargs in ("+", "*") else "")
            parser.error(f"argument {'/'.join(self.option_strings)}: given more than once"
                         f"{hint}")
        seen.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (and exit status 2), and which
    refuses an option given twice (argparse would keep the last)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_known_args(self, args=None, namespace=None):
        self._given = set()  # the options seen, for _StoreOnce
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_command(sub, name: str, help: str, description: str, examples: Sequence[str]
                ) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` ends with runnable examples."""
    epilog = "examples:\n" + "\n".join(f"  python -m restrictiveness {e}" for e in examples)
    return sub.add_parser(name, help=help, description=description, epilog=epilog,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


# ---------------------------------------------------------------------------- option types


def count(minimum: int, why: str = "") -> Callable[[str], int]:
    """An integer of at least ``minimum``; ``why`` explains the minimum in the error."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is too small: give at least {minimum}"
                                             + (f" ({why})" if why else ""))
        return value
    return parse


def seed(text: str) -> int:
    """A root seed: a whole number from 0 to 2**63 − 1."""
    value = count(0, "seeds are nonnegative")(text)
    if value > MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} is too large: seeds go up to 2**63 - 1")
    return value


def jobs(text: str) -> int:
    """Worker processes: a positive number, or -1 for every core."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(f"{value} workers: give a positive number, or -1 for "
                                         "all cores")
    return value


def real(minimum: float, inclusive: bool = True, what: str = "") -> Callable[[str], float]:
    """A finite number of at least (or, not ``inclusive``, above) ``minimum``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or value < minimum or (not inclusive and value == minimum):
            bound = f"at least {minimum:g}" if inclusive else f"above {minimum:g}"
            raise argparse.ArgumentTypeError(f"{text} is out of range: give a finite number "
                                             f"{bound}" + (f" ({what})" if what else ""))
        return value
    return parse


def input_file(text: str) -> Path:
    """An existing, readable file."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no file {text!r}")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, not a file")
    if not path.is_file():  # /dev/null was called a directory
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular file (a device, pipe or "
                                         "socket)")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not readable (permission denied)")
    return path


def _writable_folder(path: Path, text: str) -> None:
    folder = path.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"the folder {str(folder)!r} of {text!r} does not "
                                         "exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"the folder {str(folder)!r} of {text!r} is not "
                                         "writable (permission denied)")


def output_file(text: str) -> Path:
    """A file this run may write: its folder exists and is writable; a regular file if it
    exists (a symbolic link: the file it names)."""
    path = Path(text)
    if not text or path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory; give a file name")
    # a symbolic link is written through
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    if real.exists() and not real.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a regular file (a device, pipe or "
                                         "socket): the results are written by replacing the "
                                         "file; give a file name, or leave the option out to "
                                         "write nothing")
    _writable_folder(real, text)
    if path.exists() and not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not writable")
    return path


def checkpoint_dir(text: str) -> Path:
    """A checkpoint directory: an existing writable directory, or a new one in an existing
    writable folder."""
    if not text:  # Path('') is '.': the records went into the working directory
        raise argparse.ArgumentTypeError("'' is not a directory name; give one (. for the "
                                         "working directory)")
    path = Path(text)
    if path.exists():
        if not path.is_dir():
            raise argparse.ArgumentTypeError(f"{text!r} is a file; a checkpoint is a directory "
                                             "(it is created if needed)")
        if not os.access(path, os.W_OK | os.X_OK):
            raise argparse.ArgumentTypeError(f"{text!r} is not writable (permission denied)")
        return path
    _writable_folder(path, text)
    return path


def _scheduler(text: str) -> str:
    if Path(text).is_file() or re.fullmatch(r"[a-z][a-z0-9+]*://\S+|[\w.\-\[\]:]+:\d+", text):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is neither an existing scheduler file nor an "
                                     "address such as tcp://host:8786")


class _Table(argparse.Action):
    """``--table FORMAT FILE``."""

    FORMATS = ("csv", "latex", "html")

    def __call__(self, parser, namespace, values, option_string=None):
        fmt, file = values
        if fmt not in self.FORMATS:
            parser.error(f"argument --table: format {fmt!r} is not one of "
                         f"{', '.join(self.FORMATS)}")
        try:
            setattr(namespace, self.dest, (fmt, output_file(file)))
        except argparse.ArgumentTypeError as exc:
            parser.error(f"argument --table: {exc}")


def _plot_file(text: str) -> Path:
    path = output_file(text)
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise argparse.ArgumentTypeError("plotting needs matplotlib: pip install "
                                         "'restrictiveness[plot]'") from None
    formats = Figure().canvas.get_supported_filetypes()
    if path.suffix.lstrip(".").lower() not in formats:
        raise argparse.ArgumentTypeError(f"{text!r}: give a file ending in one of "
                                         f"{', '.join('.' + f for f in sorted(formats))}")
    return path


# ---------------------------------------------------------------------------- option groups


def add_study_options(parser: argparse.ArgumentParser, n: Sequence[int],
                      replications: int | str, seed_default: int = 0, jobs_default: int = 1
                      ) -> None:
    """Options every study command shares: sample sizes, replications, seed, workers,
    checkpoint, progress, backend and outputs.

    ``replications`` is the default M, or a phrase describing per-command defaults (the option
    then defaults to None and the command resolves it).
    """
    parser.add_argument("--n", type=count(1, "sample sizes are positive"), nargs="+",
                        default=list(n), metavar="N",
                        help=f"training sample sizes (default: {' '.join(map(str, n))})")
    parser.add_argument("--replications", "-M", type=count(2, "standard errors need two"),
                        default=replications if isinstance(replications, int) else None,
                        help=f"pseudo-truths M, at least 2 (default: {replications})")
    parser.add_argument("--seed", type=seed, default=seed_default,
                        help=f"root seed, 0 to 2**63-1 (default: {seed_default})")
    parser.add_argument("--jobs", "-j", type=jobs, default=None,
                        help=f"worker processes (default {jobs_default}; -1 for all cores, 1 "
                             "serial); results are identical for any value")
    parser.set_defaults(jobs_default=jobs_default)
    parser.add_argument("--checkpoint", metavar="DIR", type=checkpoint_dir,
                        help="record finished replications in DIR; rerunning the same command "
                             "resumes a killed or interrupted run where it stopped, and "
                             "concurrent runs share the work")
    parser.add_argument("--resume-other-versions", action="store_true",
                        help="resume a checkpoint written under other package versions or "
                             "other code (this package's files, or a procedures file, edited)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    add_backend_options(parser)
    add_output_options(parser)


#: Default of --worker-timeout: seconds without a dask worker before the run fails.
WORKER_TIMEOUT = 60.0


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """``--backend``, ``--scheduler``, ``--worker-timeout`` and ``--fit-timeout``."""
    parser.add_argument("--backend", choices=("processes", "dask"), default="processes",
                        help="run replications in local processes (default) or on a "
                             "dask.distributed cluster")
    parser.add_argument("--scheduler", metavar="ADDRESS|FILE", type=_scheduler,
                        help="with --backend dask: the scheduler's address (tcp://host:8786) or "
                             "scheduler file (default: a local cluster of --jobs workers)")
    parser.add_argument("--worker-timeout", type=real(0, inclusive=False), default=None,
                        metavar="SECONDS",
                        help="with --backend dask: fail when no worker has been connected for "
                             f"this long (default {WORKER_TIMEOUT:g})")
    parser.add_argument("--fit-timeout", type=real(0, inclusive=False), default=None,
                        metavar="SECONDS",
                        help="stop a procedure's fit that takes longer and record it as a "
                             "failed fit (default: no limit); fits then run in a child process "
                             "that is killed when one overruns. A pseudo-truth draw or a "
                             "baseline fit that takes longer stops the run with an error")


def add_output_options(parser: argparse.ArgumentParser, plot: bool = True,
                       strict: bool = True) -> None:
    """``--out``, ``--table FORMAT FILE``, ``--plot FILE`` and ``--strict``."""
    parser.add_argument("--out", metavar="FILE.nc", type=output_file,
                        help="write the results to NetCDF (atomically)")
    parser.add_argument("--table", nargs=2, metavar=("FORMAT", "FILE"), action=_Table,
                        help="also write the summary table as csv, latex or html to FILE")
    if plot:
        parser.add_argument("--plot", metavar="FILE", type=_plot_file,
                            help="draw the estimates to FILE (.png, .pdf, .svg, ...)")
    if strict:
        parser.add_argument("--strict", action="store_true",
                            help="exit with status 1 if any fit failed (default: a warning)")


def check_study_args(args: argparse.Namespace) -> None:
    """How the study options combine (each was checked alone while parsing)."""
    if args.scheduler and args.backend != "dask":
        raise ConfigurationError("--scheduler needs --backend dask")
    if args.scheduler and args.jobs is not None:
        raise ConfigurationError("--jobs does not apply with --scheduler: the cluster's own "
                                 "workers run the replications")
    if args.resume_other_versions and not args.checkpoint:
        raise ConfigurationError("--resume-other-versions needs --checkpoint DIR")
    if args.worker_timeout is not None and args.backend != "dask":  # it bounds dask's waits
        raise ConfigurationError("--worker-timeout needs --backend dask")
    if args.worker_timeout is None:
        args.worker_timeout = WORKER_TIMEOUT
    if args.jobs is None:
        args.jobs = args.jobs_default


# ---------------------------------------------------------------------------- outputs


class Outputs:
    """The run's output files, each locked from the start of the run to its end, so that a
    second run naming one of them is refused at once (never clobbering a file being written),
    and each written atomically (a temporary file renamed into place).

    Use as a ``with`` block around the whole command.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.files = {"--out": getattr(args, "out", None),
                      "--table": (getattr(args, "table", None) or (None, None))[1],
                      "--plot": getattr(args, "plot", None)}
        self._locks: list[FileLock] = []

    def __enter__(self) -> Outputs:
        seen: dict[Path, str] = {}
        for option, path in self.files.items():
            if path is None:
                continue
            key = path.resolve()
            if key in seen:
                raise ConfigurationError(f"{option} and {seen[key]} name the same file {path}")
            seen[key] = option
            # beside the file written (a link's target), whichever path names it
            lock = FileLock(key.parent / f".{key.name}.lock", remove=True)
            try:
                lock.acquire(blocking=False)
            except LockBusy:
                self.release()
                raise ConfigurationError(f"{option} {path} is being written by another run; "
                                         "wait for it to finish or choose another file") from None
            self._locks.append(lock)
        return self

    def release(self) -> None:
        for lock in self._locks:
            lock.release()
        self._locks = []

    def __exit__(self, *exc) -> None:
        self.release()

    def write(self, results, summary, table: Callable[[], Any],
              plot: Callable | None = None, netcdf: Callable[[Path], None] | None = None
              ) -> None:
        """Write ``--out`` (``results.to_netcdf`` or ``netcdf``), ``--table`` (latex and html:
        ``summary``, a statsmodels Summary; csv: the tidy DataFrame ``table()``, one row per
        estimate) and ``--plot`` (``plot(ax)`` draws on a fresh axes)."""
        args = self.args
        if self.files["--out"] is not None:
            (netcdf or results.to_netcdf)(self.files["--out"])
            print(f"\nresults written to {self.files['--out']}")
        if getattr(args, "table", None):
            fmt, path = args.table
            text = {"csv": lambda: table().to_csv().rstrip("\n"), "latex": summary.as_latex,
                    "html": summary.as_html}[fmt]()
            with atomic_output(path) as tmp:
                tmp.write_text(text + "\n", encoding="utf-8")
            print(f"{fmt} table written to {path}")
        if getattr(args, "plot", None) and plot is not None:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(7, 4))
            plot(ax)
            fig.tight_layout()
            with atomic_output(args.plot) as tmp:
                fig.savefig(tmp, format=args.plot.suffix.lstrip(".").lower())
            plt.close(fig)
            print(f"plot written to {args.plot}")


# ---------------------------------------------------------------------------- running


def _dask_client(args: argparse.Namespace):
    if args.backend != "dask" or not args.scheduler:
        return None
    try:
        from distributed import Client
    except ImportError:
        raise ConfigurationError("--backend dask needs dask.distributed: pip install "
                                 "'restrictiveness[dask]'") from None
    file = Path(args.scheduler).is_file()
    try:
        if file:
            return Client(scheduler_file=args.scheduler, timeout=CONNECT_TIMEOUT)
        return Client(args.scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ConfigurationError(f"--scheduler: cannot reach the dask scheduler "
                                 f"{args.scheduler} within {CONNECT_TIMEOUT} s "
                                 f"({type(exc).__name__}: {exc})") from None


def run_study(study, args: argparse.Namespace, **options):
    """Run ``study`` as the options say (workers, checkpoint, backend, progress); ``options``
    go to :meth:`~restrictiveness.engine.study.Study.run` as well (e.g. ``concurrency``)."""
    client = _dask_client(args)
    try:
        return study.run(n_jobs=args.jobs, progress=False if args.no_progress else None,
                         checkpoint=args.checkpoint, backend=args.backend, client=client,
                         resume_other_versions=args.resume_other_versions,
                         worker_timeout=args.worker_timeout, fit_timeout=args.fit_timeout,
                         **options)
    finally:
        if client is not None:
            client.close()


def failure_status(failed: int, invalid: int, args: argparse.Namespace) -> int:
    """0, or :data:`STRICT_STATUS` when ``--strict`` and some fit failed or some prediction
    rows were replaced by the baseline's (the warning line above says which)."""
    if (failed or invalid) and getattr(args, "strict", False):
        print(f"error: --strict: {failed} failed fit(s), {invalid} replaced prediction row(s)",
              file=sys.stderr)
        return STRICT_STATUS
    return 0


def estimates_table(res):
    """A study's estimates with its failure counts: one row per discrepancy, procedure, n."""
    fails = res.failures()[["failed", "fits"]]
    return res.estimates().join(fails, on=["procedure", "n"])


def study_status(res, args: argparse.Namespace) -> int:
    """:func:`failure_status` of a study's results."""
    fails = res.failures()
    return failure_status(int(fails["failed"].sum()), int(fails["invalid_rows"].sum()), args)

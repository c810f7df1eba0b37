"""Run untrusted Python source in a fresh, isolated interpreter: :func:`run_python`.

The parent prepares the working directory, starts the child (see :mod:`.isolation`), watches
its clock, output and disk use, reads the child's setup report and any guard refusals from a
private pipe, classifies how the run ended (:data:`~.limits.REASONS`) and deletes what it must.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import shutil
import signal
import socket
import stat
import sys
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

from ...engine.concurrency import RunStopped, run_stopped, usable_cpus
from ...shared import pyast
from ...shared.exceptions import ConfigurationError, IsolationWarning
from . import isolation
from ._child.guard import admits
from ._child.protocol import EXIT_NO_ROOM, EXIT_SETUP, MARKER
from ._child.workspace import GO, MOUNTED
from .limits import (
    DEFAULT_ALLOWED_MODULES,
    REASONS,
    SandboxLimits,
    SandboxResult,
    file_contents,
    module_names,
)
from .workdir import (
    OwnedDirectory,
    copy_tree,
    held_bytes,
    load_array,
    open_directory,
    read_status,
    remove_tree,
    tree_usage,
)

__all__ = ["run_python", "workspace", "network_isolation_prefix"]

# The in-process guard is always on; the red-team tests switch it off to show that the kernel
# layers contain a program on their own.
_GUARD = True


def run_python(source: str, *, driver: str | None = None,
               inputs: Mapping[str, np.ndarray] | None = None,
               limits: SandboxLimits | None = None,
               allowed_modules: Iterable[str] | None = None,
               workdir: str | os.PathLike | None = None, run_name: str = "__main__",
               seed: int | None = None, files: Mapping[str, bytes] | None = None,
               preload: Iterable[str] | None = None,
               isolate_network: bool = True) -> SandboxResult:
    """Run untrusted ``source`` in a fresh, isolated, limited interpreter.

    Parameters
    ----------
    source : str
        The untrusted program. It is executed as a module named ``run_name`` with a private
        copy of the builtins whose import admits only ``allowed_modules``.
    driver : str, optional
        Trusted code run after the program in the same interpreter (under the same guard,
        isolation and limits). It sees ``program`` (the program's namespace, a dict),
        ``inputs`` (dict of arrays), ``save(name, array)``, ``set_value(obj)`` (JSON, under
        1 MB) and ``fail(reason, message)``.
    inputs : mapping of str to ndarray, optional
        Arrays handed to the child as ``.npy`` files (numeric dtypes only).
    limits : SandboxLimits, optional
        Resource limits and isolation level (default ``SandboxLimits()``: 600 s, 4 GiB, 1 MB of
        output, full isolation).
    allowed_modules : iterable of str, optional
        Modules the program may import (default :data:`DEFAULT_ALLOWED_MODULES`): each with
        its submodules; a dotted name (``"concurrent.futures"``) also admits the packages
        above it (``import concurrent``, ``from concurrent import futures``) but none of their
        other submodules by import. A parent admitted so is the whole module to the program
        (``"os.path"`` admits ``import os``, and so every attribute of ``os``): the list
        decides what is imported, not what is reachable; the kernel layers are the boundary.
    workdir : path, optional
        Working directory to use and keep (e.g. an agent's across tool calls); default: a
        fresh temporary directory removed afterwards.
    run_name : str
        ``__name__`` of the program ("__main__" runs its ``if __name__ == "__main__"`` block).
    seed : int, optional
        Seeds ``random`` and ``numpy.random`` before the program runs.
    files : mapping of str to bytes, optional
        Extra files written into the working directory first (flat names only).
    preload : iterable of str, optional
        Allowed third-party packages imported before the guard is installed (their import
        machinery touches files, processes or foreign code that the guard would refuse
        later). Default: numpy and the allowed third-party packages the source imports.
    isolate_network : bool
        Under ``isolation="guard-only"``, start the child in an empty network namespace when
        the system allows it (:func:`network_isolation_prefix`). Full isolation always gives
        the child a network namespace of its own.

    Returns
    -------
    SandboxResult

    Raises
    ------
    SandboxUnavailableError
        Under full isolation, when a layer cannot be set up on this machine (the message
        names it and how to get it; see :func:`~.status.sandbox_status`).

    Examples
    --------
    >>> r = run_python("import numpy as np\\nprint(np.arange(3).sum())",
    ...                limits=SandboxLimits(wall_seconds=30))
    >>> r.ok, r.stdout.strip(), r.isolation
    (True, '3', 'full')
    >>> run_python("import socket", limits=SandboxLimits(wall_seconds=30)).reason
    'forbidden'
    """
    if not sys.platform.startswith("linux"):
        raise ConfigurationError("run_python: the sandbox needs Linux (its namespaces, Landlock "
                                 "and seccomp layers are Linux's); run studies with program "
                                 "procedures on a Linux machine or container")
    limits = limits if limits is not None else SandboxLimits()
    allowed = sorted(DEFAULT_ALLOWED_MODULES if allowed_modules is None else
                     module_names(allowed_modules))
    if not isinstance(source, str):
        raise ConfigurationError("source must be a string of Python code")
    full = limits.isolation == "full"
    if full:
        _check_static_layers()
    else:
        warnings.warn("run_python: isolation='guard-only' runs untrusted code without the "
                      "kernel's isolation layers (namespaces, Landlock, seccomp); a determined "
                      "program can escape the in-process guard", IsolationWarning, stacklevel=2)
    if preload is None:
        preload = ["numpy"] + _imported_packages(source, allowed)
    owned: OwnedDirectory | None = None
    if workdir is None:
        owned = OwnedDirectory("rx-sandbox-")
        root = owned.path
    else:
        root = Path(workdir).resolve()
        root.mkdir(parents=True, exist_ok=True)
    control = root / ".sandbox"
    try:
        if owned is None:  # a kept directory: undo what an earlier run may have done to it
            os.chmod(root, 0o700)
            remove_tree(control)
        # packages whose files the child needs: the top of each allowed or preloaded name
        names = frozenset(m.partition(".")[0] for m in [*allowed, *preload])
        config: dict[str, Any] = {  # the child's JSON configuration
            "disk": int(limits.disk_bytes), "files": int(limits.max_files),
            "workdir": str(root), "program": str(root / "program.py"), "driver": driver,
            "allowed": allowed, "roots": list(_guard_roots(names)),
            "preload": [m for m in preload if admits(allowed, m)],
            "run_name": run_name, "seed": seed, "cpu": limits.cpu,
            "memory": int(limits.memory_bytes), "fsize": int(limits.file_bytes),
            "nproc": int(limits.threads), "isolation": limits.isolation, "guard": _GUARD,
        }
        if full:
            config.update(isolation.child_config(str(root), names, isolation.backend()))
        config["inputs"] = _prepare(root, control, source, inputs, files, config.get("uid"))
        # held from before the start: the child owns the working directory and may rename the
        # control directory and put a link to anywhere on this machine in its place
        control_fd = open_directory(str(control))
        try:
            with _program_slot():
                result = _supervise(control, control_fd, limits, config, isolate_network,
                                    keep=owned is None)
        finally:
            os.close(control_fd)
        # the temporary directory's random name in a traceback made the same failure read
        # differently on every run (results and reruns compare their error text)
        result.message = relative_paths(result.message, str(root))
        return result
    finally:
        if not (owned.remove() if owned is not None else remove_tree(control)):
            warnings.warn(f"run_python: could not delete {control if owned is None else root}",
                          RuntimeWarning, stacklevel=2)


#: Sandboxed programs running at once in this process: one per usable CPU. The programs of
#: fits on a run's I/O threads (``Study.run(concurrency=N)``) ran all at once, N of them on a
#: few cores, and their wall-clock limit then failed programs a serial run completes (8 of 8
#: timed out at concurrency=8 on 2 cores, 0 of 8 serially): results depended on the thread
#: count. A program's wall clock starts once it has a slot.
_SLOTS = threading.BoundedSemaphore(usable_cpus())


def _renew_slots() -> None:
    # a fork copies the count with the slots of threads that do not exist in the child
    global _SLOTS
    _SLOTS = threading.BoundedSemaphore(usable_cpus())


os.register_at_fork(after_in_child=_renew_slots)


@contextlib.contextmanager
def _program_slot() -> Iterator[None]:
    """Hold one of :data:`_SLOTS` while a program runs; waiting ends if the run stops."""
    slots = _SLOTS
    while not slots.acquire(timeout=0.25):
        if run_stopped():
            raise RunStopped
    try:
        yield
    finally:
        slots.release()


def relative_paths(text: str, workdir: str) -> str:
    """``text`` with paths inside ``workdir`` written relative to it (``workdir`` itself: ".").

    Parameters
    ----------
    text : str
        A message or output of a run in ``workdir``.
    workdir : str
        The run's working directory (absolute).

    Returns
    -------
    str
        The text as it would read from any working directory.

    Examples
    --------
    >>> relative_paths('File "/tmp/rx-sandbox-ab12/program.py", line 2 in /tmp/rx-sandbox-ab12',
    ...                "/tmp/rx-sandbox-ab12")
    'File "program.py", line 2 in .'
    """
    return text.replace(workdir + "/", "").replace(workdir, ".")


def _check_static_layers() -> None:
    """Refuse before starting a child when a layer is missing on this machine for sure."""
    if isolation.landlock_abi() < 1:
        raise isolation.unavailable("landlock", "the kernel reports no Landlock ABI")
    if isolation.libseccomp() is None:
        raise isolation.unavailable("seccomp", "the system library libseccomp was not found")
    if isolation.pyseccomp_location() is None:
        raise isolation.unavailable("seccomp", "the Python package pyseccomp is not installed")


def _prepare(root: Path, control: Path, source: str, inputs, files,
             uid: int | None) -> list[str]:
    """Write the program, inputs, files and control directories; hand the directories and
    files to ``uid``; returns the input names."""
    (control / "in").mkdir(parents=True)
    (control / "out").mkdir()
    (control / "root").mkdir()  # mount point of the built-in backend's new root
    for name, content in file_contents(files).items():
        remove_tree(root / name)
        (root / name).write_bytes(content)
    input_names = []
    for name, arr in (inputs or {}).items():
        a = np.asarray(arr)
        if not str(name).isidentifier():
            raise ConfigurationError(f"inputs: name {name!r} must be an identifier")
        if a.dtype.kind not in "biuf":
            raise ConfigurationError(f"inputs[{name!r}] must be a numeric array, got "
                                     f"dtype {a.dtype}")
        np.save(control / "in" / f"{name}.npy", a, allow_pickle=False)
        input_names.append(name)
    program = root / "program.py"
    remove_tree(program)
    program.write_text(source, encoding="utf-8")
    if uid is not None:  # root starts the child as an unprivileged uid: let it write here
        for path in [root, control, control / "out"] + [p for p in root.iterdir()
                                                        if p.is_file() and not p.is_symlink()]:
            os.chown(path, uid, uid, follow_symlinks=False)
    return input_names


@functools.lru_cache(maxsize=32)
def _guard_roots(names: frozenset) -> tuple[str, ...]:
    """Directories the guard lets the program read: the Python installation and the allowed
    packages (narrower than what the kernel layers show)."""
    import sysconfig

    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    # the interpreter's own search path entries (zip archive, lib-dynload), not the project's
    prefixes = tuple(os.path.realpath(p) + "/" for p in {sys.prefix, sys.base_prefix})
    roots |= {p for p in sys.path if p and os.path.realpath(p).startswith(prefixes)}
    roots |= set(isolation.package_locations(names))
    return tuple(sorted(os.path.realpath(r) for r in roots if r))


def _imported_packages(source: str, allowed: Iterable[str]) -> list[str]:
    """Allowed non-standard-library modules that ``source`` imports, with their submodules
    (``from scipy import optimize`` gives ``scipy`` and ``scipy.optimize``), also by name
    (``importlib.import_module("scipy.optimize")``, ``__import__("scipy")``): a package first
    imported under the guard is refused what its own import does (scipy's imports
    ``subprocess``)."""
    import ast  # only for the node types; parsing is pyast's

    third = [m for m in allowed if m.partition(".")[0] not in sys.stdlib_module_names]
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the last two: nested
        return sorted(third)  # past the parser's depth ("1+" * 300000; "-" * 10**6)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names if a.name != "*"}
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else \
                func.id if isinstance(func, ast.Name) else ""
            if called in ("import_module", "__import__"):
                names.add(node.args[0].value)
    return sorted(n for n in names if admits(third, n))


@contextlib.contextmanager
def workspace(prefix: str = "rx-sandbox-") -> Iterator[Path]:
    """A temporary working directory kept across runs (an agent's), deleted afterwards with
    the sandbox's own clean-up, which no depth of tree or lost permission stops (or, when this
    process is killed, by the next process's first sandbox use: see
    :class:`~.workdir.OwnedDirectory`).

    Parameters
    ----------
    prefix : {"rx-sandbox-", "rx-agent-"}
        Start of the directory's name (those a sweep reclaims).

    Examples
    --------
    >>> with workspace() as work:
    ...     kept = work
    ...     _ = (work / "a.txt").write_text("x")
    >>> kept.exists()
    False
    """
    owned = OwnedDirectory(prefix)
    try:
        yield owned.path
    finally:
        if not owned.remove():
            warnings.warn(f"could not delete {owned.path}", RuntimeWarning, stacklevel=3)


@functools.lru_cache(maxsize=1)
def network_isolation_prefix() -> tuple[str, ...]:
    """The command prefix that starts a process in an empty network namespace, or ``()``.

    Used under ``isolation="guard-only"`` only (full isolation builds its own namespaces).
    Tries ``unshare --net`` (root) then ``unshare --net --map-root-user`` (unprivileged user
    namespaces); the answer is probed once per process.

    Examples
    --------
    >>> isinstance(network_isolation_prefix(), tuple)
    True
    """
    import subprocess

    unshare = shutil.which("unshare") or next(
        (p for p in ("/usr/bin/unshare", "/bin/unshare") if os.path.exists(p)), None)
    if unshare is None or not sys.platform.startswith("linux"):
        return ()
    for prefix in ((unshare, "--net", "--"), (unshare, "--net", "--map-root-user", "--")):
        try:
            done = subprocess.run([*prefix, sys.executable, "-I", "-c", "pass"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return prefix
    return ()


def _child_env(root: Path) -> dict[str, str]:
    """A clean environment: nothing of the parent's (tokens, proxies) reaches the child.

    joblib (scikit-learn's ``n_jobs``) is told there is no multiprocessing, so it runs its
    tasks in order: where it found process support (guard-only, which keeps ``/dev/shm``) its
    worker processes were refused inside its own threads and ``n_jobs=2`` hung to the wall
    clock."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(root), "TMPDIR": str(root),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1",
            "PYTHONHASHSEED": "0", "JOBLIB_MULTIPROCESSING": "0"}


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exited(pid: int) -> bool:
    """Has the child ended? (Without reaping it, so its rusage stays available.)"""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


class _Watch:
    """What the parent reads from the child: stream tails, total output, the setup report and
    the first guard refusal (seen on any of the three channels)."""

    keep = 65536  # tail of each stream kept for the result

    def __init__(self) -> None:
        self.tails = {"stdout": b"", "stderr": b"", "report": b""}
        self.carry = dict.fromkeys(self.tails, b"")
        self.total = 0
        self.violation: str | None = None  # the first refused operation the child reported
        self.report, self.exit = b"", b""

    def feed(self, name: str, chunk: bytes) -> None:
        if name == "exit":
            self.exit = (self.exit + chunk)[:4096]
            return
        self.total += len(chunk)
        if name == "report":
            if len(self.report) < 2**20:  # a program may write on it too: keep a bounded head
                self.report += chunk[:2**20 - len(self.report)]
        else:
            self.tails[name] = (self.tails[name] + chunk)[-self.keep:]
        if self.violation is None:
            marker = MARKER.encode()
            text = self.carry[name] + chunk
            i = text.find(marker)
            if i >= 0:
                end = text.find(b"\n", i)
                self.violation = text[i + len(marker):end if end >= 0 else None].decode(
                    "utf-8", "replace")
            self.carry[name] = text[-(len(marker) + 400):]

    def setup(self) -> dict | None:
        """The child's setup report (its first line on the report channel), if any."""
        line = self.report.split(b"\n", 1)[0]
        try:
            record = json.loads(line.decode("utf-8"))
        except ValueError:
            return None
        return record if isinstance(record, dict) else None

    def ended(self) -> tuple[int, float, int] | None:
        """The program's (wait status, CPU seconds, peak RSS in KiB) from its relay."""
        try:
            status, cpu, rss = json.loads(self.exit.decode("ascii"))
            return int(status), float(cpu), int(rss)
        except (ValueError, TypeError):
            return None


def _supervise(control: Path, control_fd: int, limits: SandboxLimits, config: dict,
               isolate_network: bool, keep: bool = False) -> SandboxResult:
    """Start the child, watch its output, clock and disk, and classify how it ended; what
    the child wrote is read through ``control_fd``, never through a path it could redirect.

    Under full isolation the program's working directory is a tmpfs capped by the kernel
    (:mod:`._child.workspace`): the parent receives its descriptor, copies the working
    directory's files in, reads the status and outputs through it, and with ``keep`` (a
    directory kept across runs) copies its files back out at the end."""
    import selectors
    import subprocess

    root = control.parent
    full = config["isolation"] == "full"
    # The report channel is a socket, not a pipe: the write end of a pipe can be reopened for
    # reading through /proc/self/fd by a process of its owner's uid (the child's, unless root
    # started it), which could take the setup report before we read it and write its own,
    # naming another PID namespace for _end_namespace to empty. A socket cannot be reopened.
    ours, theirs = socket.socketpair()
    read_fd, write_fd = ours.detach(), theirs.detach()
    exit_read, exit_write = os.pipe()
    try:  # our ends are closed if the child never starts
        config["report_fd"], config["exit_fd"] = write_fd, exit_write
        # the child ends with this process, or a kill -9 here would leave the program running in
        # a directory the next run reclaims (bubblewrap's --die-with-parent does it under bwrap,
        # whose init is the child's parent; unshare without --fork execs, so this is the parent)
        config["parent"] = None if full and config["backend"] == "bwrap" else os.getpid()
        (control / "config.json").write_text(json.dumps(config))
        python = [sys.executable, "-I", "-B", "-c", isolation.BOOTSTRAP, str(isolation.CHILD_DIR),
                  str(control / "config.json")]
        prefix = () if full or not isolate_network else network_isolation_prefix()
        cmd = isolation.command([*prefix, *python], config)
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=root, env=_child_env(root), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, close_fds=True,
                                pass_fds=(write_fd, exit_write))
    except BaseException:
        os.close(read_fd)
        os.close(exit_read)
        raise
    finally:
        os.close(write_fd)
        os.close(exit_write)
    assert proc.stdout is not None and proc.stderr is not None  # stdout=stderr=PIPE above
    watch, killed = _Watch(), None
    tmpfs = reading = None  # the capped working directory and its control directory
    if full:
        tmpfs, early = _receive_workdir(read_fd, deadline=start + limits.wall_seconds)
        watch.feed("report", early)
        if tmpfs is not None:
            try:
                reading, killed = _fill_workdir(tmpfs, root, limits, config.get("uid"))
                if killed is None:
                    os.write(read_fd, GO)
            except BaseException:
                _kill_group(proc.pid)
                os.wait4(proc.pid, 0)
                for fd in (tmpfs, reading, read_fd, exit_read):
                    if fd is not None:
                        os.close(fd)
                proc.stdout.close()
                proc.stderr.close()
                raise
    try:  # the tmpfs's pages live as long as a descriptor of it: close ours, whatever ends
        channels: tuple[tuple[IO[bytes], str], ...] = (
            (proc.stdout, "stdout"), (proc.stderr, "stderr"),
            (os.fdopen(read_fd, "rb", buffering=0), "report"),
            (os.fdopen(exit_read, "rb", buffering=0), "exit"))
        sel = selectors.DefaultSelector()
        for stream, name in channels:
            sel.register(stream, selectors.EVENT_READ, name)
        deadline = start + limits.wall_seconds
        next_disk_check = start
        full_since: list[float] = []  # when the capped tmpfs was first seen full, if it still is

        def over_disk(final: bool = False) -> str | None:
            if tmpfs is not None:  # the kernel holds the caps: has the program reached one?
                full = _full(tmpfs)
                if final or full is None:
                    full_since.clear()
                    return full
                # a cap reached for a moment is no failure: the program may catch ENOSPC and
                # delete what it wrote (and report the refusal: killed at once, it could not)
                full_since[:] = full_since or [time.monotonic()]
                return full if time.monotonic() - full_since[0] >= _FULL_GRACE else None
            usage = tree_usage(root, limits.disk_bytes, limits.max_files)
            if usage is None:
                return "moved"
            size, count = usage
            # files deleted while open or mapped hold their blocks out of the tree's sight
            held = held_bytes(proc.pid)
            if held is None:
                return "moved"
            size += held
            return "disk" if size > limits.disk_bytes else "files" if count > limits.max_files \
                else None

        try:
            while killed is None and sel.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    killed = "timeout"
                    break
                if run_stopped():
                    # a fit on a run's thread (Study.run(concurrency=N)) whose run was stopped
                    # (Ctrl-C, an error): its program ran on to its end, up to its wall limit, and
                    # the interpreter's exit waited for it
                    killed = "stopped"
                    break
                if time.monotonic() >= next_disk_check:
                    next_disk_check = time.monotonic() + 0.25
                    killed = over_disk()
                    if killed:
                        break
                for key, _ in sel.select(timeout=min(remaining, 0.25)):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    watch.feed(key.data, chunk)
                if watch.total > limits.output_bytes:
                    killed = "output-limit"
                    break
            if killed is None:
                # pipes closed; the child may still run (it can close its own stdout)
                while not _exited(proc.pid) and time.monotonic() < deadline:
                    killed = over_disk() or ("stopped" if run_stopped() else None)
                    if killed:
                        break
                    time.sleep(0.02)
                if killed is None and not _exited(proc.pid):
                    killed = "timeout"
        finally:
            sel.close()
            # The child is unreaped (at worst a zombie), so its pid still names our process group:
            # kill whatever of the group runs, then reap. Inside the PID namespace, the init dies
            # with the group and takes every process of the namespace with it.
            _kill_group(proc.pid)
            _, status, usage = os.wait4(proc.pid, 0)
            returncode = os.waitstatus_to_exitcode(status)
            proc.returncode = returncode
            for stream, name in channels:
                _drain(stream, name, watch)
                stream.close()
        if killed == "stopped":
            raise RunStopped
        setup, ended = watch.setup(), watch.ended()
        if ended is None and setup and isinstance(setup.get("pidns"), int) and \
                setup["pidns"] != os.stat("/proc/self/ns/pid").st_ino:
            # stopped before its relay reaped it: the program may still be dying
            _end_namespace(setup["pidns"])
        # once more at the end: the last check while it ran may be 0.25 s old, and what it
        # wrote since (sparse arrays) would be loaded here
        if killed is None:
            killed = over_disk(final=True)
        if keep and tmpfs is not None and not _copy_out(tmpfs, root, limits) and killed is None:
            killed = "disk"
        return _outcome(killed, watch, returncode, usage, ended, setup, limits,
                        control_fd if reading is None else reading, config, start, prefix)
    finally:
        for fd in (reading, tmpfs):
            if fd is not None:
                os.close(fd)


def _outcome(killed, watch: _Watch, returncode: int, usage, ended, setup: dict | None,
             limits: SandboxLimits, control_fd: int, config: dict, start: float,
             prefix) -> SandboxResult:
    """The result of a run that has ended: its failure, or its status and outputs."""
    full = config["isolation"] == "full"
    cpu, max_rss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
    if ended is not None:  # the program's own end, not its wrappers'
        status, cpu, max_rss = ended
        returncode = os.waitstatus_to_exitcode(status)
    max_rss *= 1024  # kilobytes on Linux
    if full and returncode == EXIT_SETUP and setup and setup.get("setup") == "failed":
        raise isolation.unavailable(str(setup.get("layer")), str(setup.get("detail")))
    said = watch.tails["stderr"].decode("utf-8", "replace").strip()
    if full and config["backend"] == "bwrap" and killed is None and setup is None and \
            returncode != 0 and said.startswith("bwrap: "):
        # bubblewrap itself failed (no user namespaces for this user, no mount rights in a
        # container): the machine's failure, not the program's, which never ran (it runs only
        # after the setup report); it read as the program's "crash" and a study recorded it so
        raise isolation.unavailable("namespaces", f"bubblewrap could not build them: "
                                                  f"{said.splitlines()[0][:300]}")
    layers = setup.get("layers", {}) if setup and setup.get("setup") == "ready" else {}
    common = dict(stdout=watch.tails["stdout"].decode("utf-8", "replace"),
                  stderr=watch.tails["stderr"].decode("utf-8", "replace"),
                  seconds=time.monotonic() - start, cpu_seconds=cpu, returncode=returncode,
                  network_isolated="namespaces" in layers or bool(prefix),
                  isolation=config["isolation"], layers=layers)
    reason, message = _classify(killed, watch, returncode, cpu, max_rss, limits, control_fd,
                                full and not layers)
    if reason is not None:
        return SandboxResult(False, reason, message, **common)
    outputs = {}
    try:
        out_fd = open_directory("out", control_fd)
    except OSError as exc:
        return SandboxResult(False, "invalid-output", f"the output directory is not a plain "
                                                      f"directory: {exc}", **common)
    try:
        total = 0
        for name in sorted(os.listdir(out_fd)):
            if not name.endswith(".npy") or name.startswith("."):
                continue
            try:
                # sizes, not blocks: sparse files take no room in the capped tmpfs, but are
                # loaded whole (20 of 10 MiB were read as 200 MiB past a 50 MiB cap)
                total += os.stat(name, dir_fd=out_fd, follow_symlinks=False).st_size
                if total > limits.disk_bytes:
                    return SandboxResult(False, "output-limit", f"the program's outputs hold "
                                         f"more than {limits.disk_bytes} bytes", **common)
                outputs[name[:-4]] = load_array(name, limits.file_bytes, out_fd)
            except (ValueError, OSError, EOFError) as exc:
                return SandboxResult(False, "invalid-output", f"output {name[:-4]!r} is not a "
                                                              f"plain array: {exc}", **common)
    finally:
        os.close(out_fd)
    return SandboxResult(True, None, "ok", outputs=outputs, value=message, **common)


def _receive_workdir(read_fd: int, deadline: float) -> tuple[int | None, bytes]:
    """The descriptor of the run's capped tmpfs, sent by the child's set-up as the first
    message on the report channel (before any untrusted code runs), or None and what came
    instead (a failed set-up's report; nothing when the child ended or the time ran out)."""
    import select

    sock = socket.socket(fileno=read_fd)
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or run_stopped():
                return None, b""
            if select.select([read_fd], [], [], min(remaining, 0.25))[0]:
                break
        data, fds, _, _ = socket.recv_fds(sock, 4096, 4)
    finally:
        sock.detach()
    if data == MOUNTED and len(fds) == 1 and \
            stat.S_ISDIR(os.fstat(fds[0]).st_mode):
        return fds[0], b""
    for fd in fds:
        os.close(fd)
    return None, data


def _fill_workdir(tmpfs: int, root: Path, limits: SandboxLimits,
                  uid: int | None) -> tuple[int | None, str | None]:
    """Copy the working directory's files (the program, inputs, an agent's earlier files)
    into the capped tmpfs, given to ``uid``; returns the tmpfs's control directory, or a
    ``killed`` reason when they do not fit its caps."""
    host = open_directory(str(root))
    try:
        if uid is not None:
            os.fchown(tmpfs, uid, uid)
        used = copy_tree(host, tmpfs, limits.disk_bytes, uid)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        used = None
    finally:
        os.close(host)
    if used is None:
        return None, "no-room"
    return open_directory(".sandbox", tmpfs), None


#: Seconds a program may keep its working directory full before it is stopped: time to catch
#: the kernel's refusal and delete what it wrote. (A run that ends full fails all the same.)
_FULL_GRACE = 0.5


def _full(tmpfs: int) -> str | None:
    """"disk" or "files" when the program has filled the tmpfs's bytes or entries (the
    kernel refuses it any more), else None."""
    free = os.fstatvfs(tmpfs)
    return "disk" if free.f_bfree == 0 else "files" if free.f_ffree == 0 else None


def _copy_out(tmpfs: int, root: Path, limits: SandboxLimits) -> bool:
    """Replace the kept working directory's files by the tmpfs's (the control directory
    aside); False when their copies take more than the disk cap (a directory's own blocks
    count on the host: thousands of empty ones)."""
    host = open_directory(str(root))
    try:
        for name in os.listdir(host):
            if name != ".sandbox":
                remove_tree(root / name)
        return copy_tree(tmpfs, host, limits.disk_bytes, skip=frozenset({".sandbox"})) \
            is not None
    except OSError:
        return False
    finally:
        os.close(host)


def _end_namespace(inode: int, seconds: float = 10.0) -> None:
    """Kill every process left in the run's PID namespace and wait until none is.

    Killing the wrappers ends the namespace's init, and the kernel then kills the rest, but
    asynchronously: without this wait a program could still write into its working directory
    after the clean-up. (A run that ended by itself needs none of this: the program cannot
    start processes, and its relay reaped it before reporting.)
    """
    deadline = time.monotonic() + seconds
    while True:
        left = []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                try:
                    if os.stat(f"/proc/{entry.name}/ns/pid").st_ino == inode and \
                            not _zombie(entry.name):
                        left.append(int(entry.name))
                except OSError:  # gone meanwhile, or not ours to inspect
                    continue
        if not left or time.monotonic() > deadline:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def _zombie(pid: str) -> bool:
    """Has the process ended, waiting only to be reaped (by whoever inherited it)?"""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rpartition(b")")[2].split()[0] == b"Z"


def _drain(stream, name: str, watch: _Watch) -> None:
    """Read what is left in a pipe after the child's end (never blocks: the writers are dead,
    except a stray holding it, which the group kill ended)."""
    os.set_blocking(stream.fileno(), False)
    try:
        while chunk := os.read(stream.fileno(), 65536):
            watch.feed(name, chunk)
            if len(watch.report) >= 2**20 and name == "report":
                break
    except (BlockingIOError, OSError):
        pass


def _classify(killed, watch: _Watch, returncode: int, cpu: float, max_rss: int,
              limits: SandboxLimits, control_fd: int, never_ready: bool):
    """(reason, message) of a failed run, or (None, value) of a successful one."""
    if killed is not None:
        stopped = {
            "output-limit": ("output-limit", f"wrote more than {limits.output_bytes} bytes to "
                                             "stdout/stderr"),
            "disk": ("output-limit", f"wrote more than {limits.disk_bytes} bytes of files"),
            "files": ("output-limit", f"created more than {limits.max_files} files and "
                                      "directories"),
            "moved": ("output-limit", "hid part of its files from the parent's count (a "
                                      "directory moved away or made unreadable, or a deleted "
                                      "file mapped), so their size could not be bounded"),
            "timeout": ("timeout", f"ran longer than {limits.wall_seconds:g} s (wall clock)"),
        }
        if killed == "no-room":
            return "output-limit", (f"the working directory's files take more than the "
                                    f"program's {limits.disk_bytes} bytes or "
                                    f"{limits.max_files} files and directories; it did not run")
        reason, what = stopped[killed]
        return reason, f"the program {what} and was stopped"
    if never_ready:
        return "crash", ("the sandboxed interpreter ended before its isolation was in place "
                         f"(status {returncode}): {watch.tails['stderr'][-500:]!r}")
    if watch.violation is not None:
        return "forbidden", f"refused operation: {watch.violation}"
    if returncode == -signal.SIGSYS:
        return "forbidden", ("the kernel's system-call filter (seccomp) stopped the program: "
                             "it tried to start a process, trace, signal or reach outside "
                             "its namespaces")
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL) and cpu >= limits.cpu - 0.5:
        return "cpu", f"the program used more than {limits.cpu} s of CPU time and was stopped"
    status = read_status(control_fd)
    err = watch.tails["stderr"].decode("utf-8", "replace")
    if status is None:
        if returncode == EXIT_NO_ROOM or f"[Errno {errno.ENOSPC}]" in err:
            # its status had no room, or the refusal ended it (a thread's, say) before it
            # could write one; a program may exit or print so too: it fails itself
            return "output-limit", (f"the program filled its working directory (at most "
                                    f"{limits.disk_bytes} bytes and {limits.max_files} files "
                                    "and directories) and was stopped")
        if returncode == 0:
            return "crash", ("the program ended the interpreter before finishing "
                             "(os._exit or similar)")
        if "MemoryError" in err or (returncode is not None and returncode < 0 and
                                    max_rss > 0.8 * limits.memory_bytes):
            return "memory", f"the program ran out of memory (limit {limits.memory_bytes} bytes)"
        if returncode == -signal.SIGXFSZ:
            return "output-limit", (f"the program wrote a file larger than {limits.file_bytes} "
                                    "bytes and was stopped")
        if returncode is not None and returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = str(-returncode)
            return "crash", f"the interpreter was killed by signal {name}"
        return "crash", f"the interpreter exited with status {returncode}: {err.strip()[-500:]}"
    if not status.get("ok"):
        given = status.get("reason")
        return (given if given in REASONS else "crash"), str(status.get("message", ""))[:4000]
    if returncode != 0:
        return "crash", f"the interpreter exited with status {returncode}"
    return None, status.get("value")

"""Run untrusted Python source in a separate, limited interpreter (SPEC §8).

Programs returned by language models are executed here. Each run starts a fresh interpreter
(``sys.executable -I -B``) in its own temporary working directory, with stdin closed, a clean
environment and its own process session, under four kinds of guard:

* **kernel resource limits** set in the child before any untrusted code runs: CPU time
  (``RLIMIT_CPU``), address space (``RLIMIT_AS``), size of any written file (``RLIMIT_FSIZE``),
  no core files;
* **PEP 578 audit hooks** installed in the child (``sys.addaudithook``, which cannot be removed
  once added): network (``socket.*``), processes (``subprocess.Popen``, ``os.system``,
  ``os.exec*``, ``os.fork``, ``os.posix_spawn``, ``os.spawn*``, ``os.kill``), foreign code
  (``ctypes.*``), changing resource limits, opening files for reading outside the working
  directory and the Python installation, writing, renaming or deleting anything outside the
  working directory, links, and importing modules of a fixed deny-list (``socket``,
  ``subprocess``, ``multiprocessing``, ``ctypes``, ...) by anyone;
* **an import allow-list** for the program's own code: the program runs with a private copy of
  the builtins whose ``__import__`` admits only allowed top-level modules (default: numpy, math
  and harmless standard-library modules), so ``import socket``, ``__import__("socket")``,
  ``import importlib`` and ``exec("import socket")`` are refused;
* **the parent's watch**: a wall-clock deadline, a cap on the bytes written to stdout and
  stderr and on the working directory's size (the child is killed when it floods), and the
  whole process group killed at the end;
* **a private network namespace** where the system allows one (``unshare --net``, as root or
  with user namespaces): the child then has no network interface at all, whatever Python it
  runs. :attr:`SandboxResult.network_isolated` says whether this layer was in place.

A violation is reported on the child's stderr with a marker before the exception is raised,
so a program that swallows the exception is still recorded as ``"forbidden"``. Data go in and
out as ``.npy`` files (``allow_pickle=False``) and JSON in the working directory; the parent never
unpickles anything written by the child.

Audit hooks and the import allow-list run inside the child's own interpreter, so they contain
naive and careless programs (the usual failure modes of generated code), not a determined
attacker with arbitrary Python: CPython documents that audit hooks are not a sandbox. The
kernel limits and the parent's watch hold in every case. Run adversarial code inside a
container or virtual machine as well.

Failures are classified into a small fixed vocabulary, :data:`REASONS`.
"""

from __future__ import annotations

import functools
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["SandboxLimits", "SandboxResult", "run_python", "REASONS", "DEFAULT_ALLOWED_MODULES",
           "SCIENTIFIC_MODULES", "network_isolation_prefix"]

#: Why a run failed: the fixed vocabulary of :attr:`SandboxResult.reason`.
REASONS = ("timeout", "cpu", "memory", "forbidden", "crash", "invalid-output", "output-limit")

#: Top-level modules a program may import by default: numpy, math and the standard-library
#: modules that compute, format or parse without reaching the network, other processes or
#: foreign code. ``os`` and ``sys`` are admitted because their dangerous functions are stopped
#: by the audit hooks.
DEFAULT_ALLOWED_MODULES = frozenset({
    "numpy", "math", "cmath", "random", "statistics", "decimal", "fractions", "numbers",
    "itertools", "functools", "operator", "collections", "heapq", "bisect", "array", "copy",
    "dataclasses", "enum", "typing", "abc", "types", "re", "string", "textwrap", "json", "csv",
    "io", "os", "sys", "time", "datetime", "calendar", "warnings", "contextlib", "pathlib",
    "traceback", "pprint", "struct", "hashlib", "unicodedata", "__future__", "zlib", "base64",
    "difflib", "reprlib", "weakref", "inspect", "tempfile", "shutil", "glob", "fnmatch",
})

#: Extra modules the paper's Agent may use in its tool calls (not in its returned program).
SCIENTIFIC_MODULES = frozenset({"scipy", "pandas", "sklearn"})

# Modules nobody in the child may import once the guard is on, whoever asks; their operations
# are also stopped by event, this is a second line.
_DENIED_MODULES = ("socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess",
                   "multiprocessing", "_multiprocessing", "ctypes", "_ctypes", "pty", "ftplib",
                   "smtplib", "poplib", "imaplib", "nntplib", "telnetlib", "xmlrpc",
                   "socketserver", "webbrowser", "asyncio", "resource", "fcntl", "termios",
                   "http", "urllib.request", "_xxsubinterpreters", "gc", "_posixshmem",
                   "concurrent.futures.process")

# Audit events refused outright (exact names or prefixes ending in ".").
_DENIED_EVENTS = ("socket.", "ctypes.", "subprocess.", "os.system", "os.exec", "os.spawn",
                  "os.posix_spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
                  "os.startfile", "os.link", "os.symlink", "os.add_dll_directory", "pty.",
                  "resource.", "webbrowser.", "urllib.", "ftplib.", "smtplib.", "poplib.",
                  "imaplib.", "nntplib.", "telnetlib.", "http.", "signal.pthread_kill",
                  "sys.remote_exec", "gc.get_", "_winapi.", "winreg.", "msvcrt.",
                  "sqlite3.load_extension", "sqlite3.enable_load_extension",
                  "_posixsubprocess.", "os.setuid", "os.setgid", "os.mkfifo", "os.mknod")
# Events whose first argument (and second, for renames) is a path that must stay in the
# working directory.
_WRITE_EVENTS = ("os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.truncate", "os.chmod",
                 "os.chown", "os.utime", "os.chflags", "os.lchflags", "os.lchmod",
                 "shutil.rmtree", "shutil.move", "tempfile.mkstemp", "tempfile.mkdtemp",
                 "os.chdir", "os.setxattr", "os.removexattr")
# Events whose first argument is a path that may only be read inside the allowed roots.
_READ_EVENTS = ("os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.listxattr",
                "os.getxattr")

_MARKER = "\x1e[sandbox-violation] "
_EXIT_FAILURE = 86


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed run.

    Parameters
    ----------
    wall_seconds : float
        Wall-clock deadline, after which the parent kills the child ("timeout").
    cpu_seconds : float, optional
        CPU-time limit enforced by the kernel ("cpu"); default: the wall-clock limit.
    memory_bytes : int
        Address-space limit ("memory"); numpy needs a few hundred MB of address space.
    output_bytes : int
        Most bytes the child may write to stdout plus stderr; beyond it the child is killed
        ("output-limit").
    file_bytes : int
        Largest file the child may write.
    disk_bytes : int
        Most bytes the working directory may hold while the child runs; the parent checks
        a few times a second and kills the child beyond it ("output-limit").

    Examples
    --------
    >>> SandboxLimits(wall_seconds=5).cpu
    5
    """

    wall_seconds: float = 600.0
    cpu_seconds: float | None = None
    memory_bytes: int = 4 * 2**30
    output_bytes: int = 1_000_000
    file_bytes: int = 256 * 2**20
    disk_bytes: int = 2**30

    def __post_init__(self) -> None:
        from ..shared.exceptions import ConfigurationError

        for name in ("wall_seconds", "memory_bytes", "output_bytes", "file_bytes",
                     "disk_bytes"):
            if not getattr(self, name) > 0:
                raise ConfigurationError(f"SandboxLimits: {name} must be positive")
        if self.cpu_seconds is not None and not self.cpu_seconds > 0:
            raise ConfigurationError("SandboxLimits: cpu_seconds must be positive")

    @property
    def cpu(self) -> int:
        """The CPU limit in whole seconds, as the kernel counts it."""
        return max(1, math.ceil(self.cpu_seconds if self.cpu_seconds is not None
                                else self.wall_seconds))


@dataclass
class SandboxResult:
    """What a sandboxed run produced.

    Attributes
    ----------
    ok : bool
        True when the program and its driver finished and wrote their outputs.
    reason : str or None
        None when ``ok``; otherwise one of :data:`REASONS`.
    message : str
        A one-paragraph explanation (the exception, the refused operation, the limit hit).
    stdout, stderr : str
        The last 64 KiB written by the child to each stream.
    seconds : float
        Wall-clock time of the run.
    cpu_seconds : float
        CPU time used by the child.
    returncode : int or None
        The child's exit status (negative: killed by that signal).
    outputs : dict of str to ndarray
        Arrays the driver saved (loaded with ``allow_pickle=False``).
    value : object
        The JSON value the driver recorded, if any.
    network_isolated : bool
        Whether the child ran in its own network namespace (no interfaces).
    """

    ok: bool
    reason: str | None
    message: str
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    returncode: int | None = None
    outputs: dict = field(default_factory=dict)
    value: object = None
    network_isolated: bool = False

    def __repr__(self) -> str:
        status = "ok" if self.ok else f"failed: {self.reason}"
        return f"<SandboxResult {status}, {self.seconds:.2f}s: {self.message[:80]!r}>"


@functools.lru_cache(maxsize=32)
def _install_roots(names: frozenset) -> tuple[str, ...]:
    """Directories the child may read: the Python installation and the allowed packages."""
    import importlib.util
    import sysconfig

    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    # the interpreter's own search path entries (zip archive, lib-dynload), not the project's
    prefixes = tuple(os.path.realpath(p) + "/" for p in {sys.prefix, sys.base_prefix})
    roots |= {p for p in sys.path if p and os.path.realpath(p).startswith(prefixes)}
    for name in sorted(names - set(sys.stdlib_module_names)):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for loc in (spec.submodule_search_locations or []) if spec else []:
            roots.add(loc)
    return tuple(sorted(os.path.realpath(r) for r in roots if r))


def run_python(source: str, *, driver: str | None = None,
               inputs: Mapping[str, np.ndarray] | None = None,
               limits: SandboxLimits | None = None,
               allowed_modules: Iterable[str] | None = None,
               workdir: str | os.PathLike | None = None, run_name: str = "__main__",
               seed: int | None = None, files: Mapping[str, bytes] | None = None,
               preload: Iterable[str] | None = None,
               isolate_network: bool = True) -> SandboxResult:
    """Run untrusted ``source`` in a fresh limited interpreter.

    Parameters
    ----------
    source : str
        The untrusted program. It is executed as a module named ``run_name`` with a private
        copy of the builtins whose import admits only ``allowed_modules``.
    driver : str, optional
        Trusted code run after the program in the same interpreter (under the same audit hooks
        and limits). It sees ``program`` (the program's namespace, a dict), ``inputs`` (dict of
        arrays), ``save(name, array)``, ``set_value(obj)`` (JSON) and
        ``fail(reason, message)``.
    inputs : mapping of str to ndarray, optional
        Arrays handed to the child as ``.npy`` files (numeric dtypes only).
    limits : SandboxLimits, optional
        Resource limits (default ``SandboxLimits()``: 600 s, 4 GiB, 1 MB of output).
    allowed_modules : iterable of str, optional
        Top-level modules the program may import (default :data:`DEFAULT_ALLOWED_MODULES`).
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
        Start the child in an empty network namespace when the system allows it (see
        :func:`network_isolation_prefix`); the audit hooks refuse network use either way.

    Returns
    -------
    SandboxResult

    Examples
    --------
    >>> r = run_python("import numpy as np\\nprint(np.arange(3).sum())",
    ...                limits=SandboxLimits(wall_seconds=30))
    >>> r.ok, r.stdout.strip()
    (True, '3')
    >>> run_python("import socket", limits=SandboxLimits(wall_seconds=30)).reason
    'forbidden'
    """
    from ..shared.exceptions import ConfigurationError

    if not sys.platform.startswith("linux"):
        raise ConfigurationError("run_python: the sandbox needs Linux (its resource limits and "
                                 "process handling are Linux's); run studies with program "
                                 "procedures on a Linux machine or container")
    limits = limits if limits is not None else SandboxLimits()
    allowed = sorted(DEFAULT_ALLOWED_MODULES if allowed_modules is None else allowed_modules)
    if not isinstance(source, str):
        raise ConfigurationError("source must be a string of Python code")
    if preload is None:
        preload = ["numpy"] + _imported_packages(source, allowed)
    owned = workdir is None
    root = Path(tempfile.mkdtemp(prefix="rx-sandbox-") if owned else workdir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    control = root / ".sandbox"
    try:
        if not owned:  # a kept directory: undo what an earlier run may have done to it
            os.chmod(root, 0o700)
            _remove_tree(control)
        (control / "in").mkdir(parents=True)
        (control / "out").mkdir()
        for name, content in (files or {}).items():
            if os.path.basename(name) != name or name.startswith("."):
                raise ConfigurationError(f"files: {name!r} must be a plain file name")
            _remove_tree(root / name)
            (root / name).write_bytes(bytes(content))
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
        program_path = root / "program.py"
        _remove_tree(program_path)
        program_path.write_text(source, encoding="utf-8")
        config = {
            "workdir": str(root), "program": str(program_path), "driver": driver,
            "inputs": input_names, "allowed": allowed, "denied": list(_DENIED_MODULES),
            "roots": list(_install_roots(frozenset(allowed) | {m.partition(".")[0]
                                                               for m in preload})),
            "preload": [m for m in preload if m.partition(".")[0] in allowed],
            "run_name": run_name,
            "seed": seed, "cpu": limits.cpu, "memory": int(limits.memory_bytes),
            "fsize": int(limits.file_bytes),
        }
        (control / "config.json").write_text(json.dumps(config))
        return _supervise(control, limits, isolate_network)
    finally:
        _remove_tree(root if owned else control)


def _remove_tree(path: Path) -> None:
    """Delete a tree even where the program removed permissions (chmod 000)."""
    def retry(func, p, _):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):  # a file, link, FIFO or socket in the way
        os.unlink(path)
        return
    os.chmod(path, 0o700)
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            try:
                os.chmod(os.path.join(dirpath, d), 0o700, follow_symlinks=False)
            except (OSError, NotImplementedError):
                pass
    shutil.rmtree(path, onerror=retry)


def _imported_packages(source: str, allowed: Iterable[str]) -> list[str]:
    """Allowed non-standard-library modules that ``source`` imports, with their submodules
    (``from scipy import optimize`` gives ``scipy`` and ``scipy.optimize``)."""
    import ast

    third = set(allowed) - set(sys.stdlib_module_names)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return sorted(third)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names if a.name != "*"}
    return sorted(n for n in names if n.partition(".")[0] in third)


@functools.lru_cache(maxsize=1)
def network_isolation_prefix() -> tuple[str, ...]:
    """The command prefix that starts a process in an empty network namespace, or ``()``.

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
    """A clean environment: nothing of the parent's (tokens, proxies) reaches the child."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(root), "TMPDIR": str(root),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1",
            "PYTHONHASHSEED": "0"}


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exited(pid: int) -> bool:
    """Has the child ended? (Without reaping it, so its rusage stays available.)"""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _supervise(control: Path, limits: SandboxLimits, isolate_network: bool) -> SandboxResult:
    """Start the child, watch its output and clock, and classify how it ended."""
    import selectors
    import subprocess

    root = control.parent
    isolated = network_isolation_prefix() if isolate_network else ()
    cmd = [*isolated, sys.executable, "-I", "-B", os.path.abspath(__file__),
           str(control / "config.json")]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=root, env=_child_env(root), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, close_fds=True)
    keep = 65536  # tail of each stream kept for the result
    tails = {"stdout": b"", "stderr": b""}
    total, violation, carry = 0, None, b""
    killed = None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    marker = _MARKER.encode()
    deadline = start + limits.wall_seconds
    next_disk_check = start
    try:
        while sel.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed = "timeout"
                break
            if time.monotonic() >= next_disk_check:
                next_disk_check = time.monotonic() + 0.25
                if _tree_size(root, limits.disk_bytes) > limits.disk_bytes:
                    killed = "disk"
                    break
            for key, _ in sel.select(timeout=min(remaining, 0.25)):
                chunk = os.read(key.fileobj.fileno(), 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                total += len(chunk)
                tails[key.data] = (tails[key.data] + chunk)[-keep:]
                if key.data == "stderr" and violation is None:
                    text = carry + chunk
                    i = text.find(marker)
                    if i >= 0:
                        end = text.find(b"\n", i)
                        violation = text[i + len(marker):end if end >= 0 else None]
                        violation = violation.decode("utf-8", "replace")
                    carry = text[-(len(marker) + 400):]
            if total > limits.output_bytes:
                killed = "output-limit"
                break
        if killed is None:
            # pipes closed; the child may still run (it can close its own stdout)
            while not _exited(proc.pid) and time.monotonic() < deadline:
                if _tree_size(root, limits.disk_bytes) > limits.disk_bytes:
                    killed = "disk"
                    break
                time.sleep(0.02)
            if killed is None and not _exited(proc.pid):
                killed = "timeout"
    finally:
        sel.close()
        # The child is unreaped (at worst a zombie), so its pid still names our process group:
        # kill whatever of the group runs (the child if stopped, strays it left), then reap.
        _kill_group(proc.pid)
        _, status, usage = os.wait4(proc.pid, 0)
        returncode = os.waitstatus_to_exitcode(status)
        cpu = usage.ru_utime + usage.ru_stime
        max_rss = usage.ru_maxrss * 1024  # kilobytes on Linux
        proc.returncode = returncode
        proc.stdout.close()
        proc.stderr.close()
    seconds = time.monotonic() - start
    out = tails["stdout"].decode("utf-8", "replace")
    err = tails["stderr"].decode("utf-8", "replace")
    common = dict(stdout=out, stderr=err, seconds=seconds, cpu_seconds=cpu,
                  returncode=returncode, network_isolated=bool(isolated))

    def failed(reason: str, message: str) -> SandboxResult:
        return SandboxResult(False, reason, message, **common)

    if killed == "output-limit":
        return failed("output-limit", f"the program wrote more than {limits.output_bytes} "
                                      "bytes to stdout/stderr and was stopped")
    if killed == "disk":
        return failed("output-limit", f"the program wrote more than {limits.disk_bytes} bytes "
                                      "of files and was stopped")
    if killed == "timeout":
        return failed("timeout", f"the program ran longer than {limits.wall_seconds:g} s "
                                 "(wall clock) and was stopped")
    if violation is not None:
        return failed("forbidden", f"refused operation: {violation}")
    if returncode in (-signal.SIGXCPU, -signal.SIGKILL) and cpu >= limits.cpu - 0.5:
        return failed("cpu", f"the program used more than {limits.cpu} s of CPU time and "
                             "was stopped")
    status = _read_status(control / "status.json")
    if status is None:
        if returncode == 0:
            return failed("crash", "the program ended the interpreter before finishing "
                                   "(os._exit or similar)")
        if "MemoryError" in err or (returncode is not None and returncode < 0 and
                                    max_rss > 0.8 * limits.memory_bytes):
            return failed("memory", "the program ran out of memory "
                                    f"(limit {limits.memory_bytes} bytes)")
        if returncode is not None and returncode < 0:
            try:
                name = signal.Signals(-returncode).name
            except ValueError:
                name = str(-returncode)
            return failed("crash", f"the interpreter was killed by signal {name}")
        return failed("crash", f"the interpreter exited with status {returncode}: "
                               f"{err.strip()[-500:]}")
    if not status.get("ok"):
        reason = status.get("reason")
        reason = reason if reason in REASONS else "crash"
        return failed(reason, str(status.get("message", ""))[:4000])
    if returncode != 0:
        return failed("crash", f"the interpreter exited with status {returncode}")
    outputs = {}
    for path in sorted((control / "out").glob("*.npy")):
        try:
            with _open_regular(path, limits.file_bytes) as fh:
                outputs[path.stem] = np.load(fh, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            return failed("invalid-output", f"output {path.stem!r} is not a plain array: {exc}")
    return SandboxResult(True, None, "ok", outputs=outputs, value=status.get("value"), **common)


def _open_regular(path: Path, max_bytes: int):
    """Open a file the child wrote, refusing anything but a regular file of bounded size.

    A FIFO or device in its place would otherwise block or flood the parent; symlinks are
    not followed.
    """
    import stat

    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        os.close(fd)
        raise ValueError(f"{path.name} is not a regular file of at most {max_bytes} bytes")
    return os.fdopen(fd, "rb")


def _read_status(path: Path) -> dict | None:
    try:
        with _open_regular(path, 2**24) as fh:
            status = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def _tree_size(root: Path, limit: int) -> int:
    """Bytes of files under ``root`` (stops counting past ``limit``; huge trees count as
    over the limit)."""
    total, stack, entries = 0, [str(root)], 0
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    entries += 1
                    if entries > 100_000:
                        return limit + 1
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
                    if total > limit:
                        return total
        except OSError:
            continue
    return total


# --------------------------------------------------------------------------------------------
# The child side. Everything below runs in the sandboxed interpreter, started as
# ``python -I -B sandbox.py config.json``: it must import nothing from the package.
# --------------------------------------------------------------------------------------------


class SandboxViolation(PermissionError):
    """Raised in the child when the program attempts a refused operation."""


class _Failure(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _make_guard(workdir: str, roots: list[str], denied: list[str]):
    """The audit hook. Everything it uses is bound now, as default arguments, so a program
    that later replaces ``os.lstat`` or a builtin cannot change what the hook does."""
    import stat

    # this file too: tracebacks through the driver read it (it is public source code)
    # plus system facts that numerical libraries probe (CPU count, cgroup quota, time zone)
    pid = os.getpid()
    system = ["/dev/null", "/dev/urandom", "/dev/zero", "/usr/share/zoneinfo",
              "/etc/localtime", "/sys/fs/cgroup", "/sys/devices/system/cpu", "/proc/cpuinfo",
              "/proc/meminfo"] + [f"/proc/{pid}/{name}" for name in
                                  ("stat", "status", "cgroup", "mountinfo", "cpuset")]
    readable = tuple([workdir] + roots + system + [os.path.realpath(__file__)])
    protected: list = []
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def resolve(path, _getcwd=os.getcwd, _lstat=os.lstat, _readlink=os.readlink,
                _islnk=stat.S_ISLNK, _fsdecode=os.fsdecode, _fspath=os.fspath,
                _bytes=bytes, _str=str, _oserror=OSError):
        path = _fspath(path)
        if type(path) is _bytes:
            path = _fsdecode(path)
        if type(path) is not _str:
            return None
        if not path.startswith("/"):
            path = _getcwd() + "/" + path
        pending = [p for p in path.split("/") if p and p != "."]
        done: list = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == "..":
                if done:
                    done.pop()
                continue
            here = "/" + "/".join(done + [part])
            try:
                mode = _lstat(here).st_mode
            except _oserror:
                done.append(part)
                continue
            if _islnk(mode):
                hops += 1
                if hops > 40:
                    return None
                target = _readlink(here)
                if target.startswith("/"):
                    done = []
                pending = [p for p in target.split("/") if p and p != "."] + pending
                continue
            done.append(part)
        return "/" + "/".join(done)

    def inside(path, bases):
        for b in bases:
            if path == b or path.startswith(b + "/"):
                return True
        return False

    def refuse(event, detail, _write=os.write, _exc=SandboxViolation, _repr=repr,
               _marker=_MARKER):
        text = f"{event} {detail}"[:300].replace("\n", " ")
        try:
            _write(2, ("\n" + _marker + text + "\n").encode("utf-8", "replace"))
        except Exception:  # noqa: BLE001 - stderr closed by the program; still refuse
            pass
        raise _exc(f"sandbox: {text} is not allowed")

    def hook(event, args, _denied_events=_DENIED_EVENTS, _write_events=_WRITE_EVENTS,
             _read_events=_READ_EVENTS, _denied_modules=tuple(denied), _resolve=resolve,
             _inside=inside, _refuse=refuse, _readable=readable, _home=(workdir,),
             _wflags=write_flags, _protected=protected, _int=int, _str=str, _type=type,
             _len=len):
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            if _type(path) is _int:
                return
            writing = (_type(mode) is _str and ("w" in mode or "a" in mode or "x" in mode
                                                or "+" in mode)) or \
                (_type(flags) is _int and flags & _wflags != 0)
            where = _resolve(path)
            if where is None or not _inside(where, _home if writing else _readable):
                _refuse("open", f"{path!r} for {'writing' if writing else 'reading'}")
            return
        if event == "import":
            name = args[0] if _type(args[0]) is _str else ""
            for d in _denied_modules:
                if name == d or name.startswith(d + "."):
                    _refuse("import", name)
            return
        if event.startswith(_denied_events):
            _refuse(event, "")
        if event.startswith(_write_events):
            for path in tuple(args)[:2 if event in ("os.rename", "shutil.move") else 1]:
                if _type(path) is _int or path is None:
                    continue
                where = _resolve(path)
                if where is None or not _inside(where, _home):
                    _refuse(event, repr(path))
            return
        if event.startswith(_read_events):
            path = args[0] if _len(args) else None
            if path is None or _type(path) is _int:
                return
            where = _resolve(path)
            if where is None or not _inside(where, _readable):
                _refuse(event, repr(path))
            return
        if event == "object.__setattr__" and _len(args) >= 2 and args[0] in _protected:
            _refuse(event, args[1])  # rewriting the guard's own functions

    protected.extend([hook, resolve, inside, refuse])
    return hook


def _user_builtins(allowed: list[str]):
    """A private builtins dict for the program whose ``__import__`` admits allowed modules."""
    import builtins

    real_import = builtins.__import__
    allowed_set = frozenset(allowed)

    def checked_import(name, globals=None, locals=None, fromlist=(), level=0,
                       _real=real_import, _allowed=allowed_set, _mark=_MARKER_WRITE,
                       _exc=SandboxViolation, _sorted=sorted):
        top = name.partition(".")[0]
        if level != 0 or top not in _allowed:
            _mark(f"import {name}")
            raise _exc(f"sandbox: import of {name!r} is not allowed "
                       f"(allowed: {', '.join(_sorted(_allowed))})")
        return _real(name, globals, locals, fromlist, level)

    env = dict(vars(builtins))
    env["__import__"] = checked_import
    return env


def _MARKER_WRITE(text: str, _write=os.write) -> None:
    try:
        _write(2, ("\n" + _MARKER + text[:300] + "\n").encode("utf-8", "replace"))
    except Exception:  # noqa: BLE001 - stderr closed by the program
        pass


def _set_limits(cfg: dict) -> None:
    import resource

    cpu = int(cfg["cpu"])
    # soft limit: SIGXCPU; one second later the hard limit's SIGKILL, whatever the program does
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (int(cfg["memory"]), int(cfg["memory"])))
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(cfg["fsize"]), int(cfg["fsize"])))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _child_main(config_path: str) -> int:
    import builtins
    import traceback

    with open(config_path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    workdir = cfg["workdir"]
    control = os.path.join(workdir, ".sandbox")
    status_path = os.path.join(control, "status.json")
    # Bound before the program runs: a program replacing json.dump cannot forge our writes.
    _open, _dump, _save = builtins.open, json.dump, None
    _set_limits(cfg)
    for name in cfg["preload"]:
        try:
            __import__(name)
        except ImportError:  # "from pkg import function" also proposes pkg.function
            pass
    import numpy as np

    _save = np.save
    inputs = {n: np.load(os.path.join(control, "in", f"{n}.npy"), allow_pickle=False)
              for n in cfg["inputs"]}
    if cfg.get("seed") is not None:
        import random

        random.seed(int(cfg["seed"]))
        np.random.seed(int(cfg["seed"]) % 2**32)  # noqa: NPY002 - programs use the legacy API
    state: dict = {"value": None}

    def save(name: str, array) -> None:
        if not str(name).isidentifier():
            raise _Failure("invalid-output", f"output name {name!r} is not an identifier")
        arr = np.asarray(array)
        if arr.dtype == object or arr.dtype.kind not in "biufc":
            raise _Failure("invalid-output", f"output {name!r} is not a numeric array "
                                             f"(dtype {arr.dtype})")
        _save(os.path.join(control, "out", f"{name}.npy"), arr, allow_pickle=False)

    def set_value(obj) -> None:
        json.dumps(obj)
        state["value"] = obj

    def fail(reason: str, message: str) -> None:
        raise _Failure(reason, message)

    def write_status(status: dict, _remove=os.remove) -> None:
        try:  # whatever the program left there (a FIFO would block the write)
            _remove(status_path)
        except OSError:
            pass
        with _open(status_path, "w", encoding="utf-8") as fh:
            _dump(status, fh)

    with _open(cfg["program"], encoding="utf-8") as fh:
        source = fh.read()
    namespace = {"__name__": cfg["run_name"], "__file__": cfg["program"],
                 "__builtins__": _user_builtins(cfg["allowed"])}
    sys.addaudithook(_make_guard(workdir, cfg["roots"], cfg["denied"]))
    try:
        try:
            code = compile(source, cfg["program"], "exec")
        except SyntaxError as exc:
            raise _Failure("crash", f"SyntaxError: {exc.msg} (line {exc.lineno})") from None
        try:
            exec(code, namespace)
        except SystemExit as exc:
            if cfg["driver"] or exc.code not in (None, 0):
                raise _Failure("crash", f"the program called exit({exc.code!r})") from None
        if cfg["driver"]:
            exec(compile(cfg["driver"], "<driver>", "exec"),
                 {"program": namespace, "inputs": inputs, "save": save,
                  "set_value": set_value, "fail": fail, "np": np})
        status = {"ok": True, "value": state["value"]}
    except _Failure as exc:
        status = {"ok": False, "reason": exc.reason, "message": str(exc)}
    except SandboxViolation as exc:
        status = {"ok": False, "reason": "forbidden", "message": str(exc)}
    except MemoryError as exc:
        status = {"ok": False, "reason": "memory", "message": f"MemoryError: {exc}"}
    except OSError as exc:
        import errno

        reason = "output-limit" if exc.errno == errno.EFBIG else "crash"
        status = {"ok": False, "reason": reason, "message": _format_exc(traceback, exc)}
    except BaseException as exc:  # noqa: BLE001 - anything the program raises is a crash
        status = {"ok": False, "reason": "crash", "message": _format_exc(traceback, exc)}
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - the program may have closed stdout
        pass
    try:
        write_status(status)
    except BaseException:  # noqa: BLE001 - nothing left to report with
        os._exit(_EXIT_FAILURE)
    os._exit(0 if status["ok"] else _EXIT_FAILURE)


def _format_exc(traceback, exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # drop the sandbox's own frames: the program's are what a reader needs
    text = "".join(line for line in lines if "sandbox.py" not in line)
    return text[-3000:]


if __name__ == "__main__":
    _child_main(sys.argv[1])

"""The in-process guard, the sandbox's first and most informative layer (not a security boundary).

A PEP 578 audit hook refuses network, processes, foreign code (but the thread-count functions
threadpoolctl looks up), resource-limit changes, reading outside the working directory and the
Python installation, writing, renaming or deleting outside the working directory, links, and
imports of a deny-list of modules; a private copy of the builtins admits only allowed modules
to the program's own ``import``. A refusal names the operation, so a failure reads
"forbidden: ... import socket" rather than a bare crash. CPython documents that audit hooks are
no sandbox: a determined program can reach around them (object graphs, frames, C modules already
loaded), which is why the kernel layers hold the line.
"""

from __future__ import annotations

import errno
import os

from .protocol import MARKER

# Modules nobody in the child may import once the guard is on, whoever asks; their operations
# are also stopped by event, this is a second line.
_DENIED_MODULES = ("socket", "_socket", "ssl", "_ssl", "subprocess", "_posixsubprocess",
                   "multiprocessing", "_multiprocessing", "ctypes", "_ctypes", "pty", "ftplib",
                   "smtplib", "poplib", "imaplib", "nntplib", "telnetlib", "xmlrpc",
                   "socketserver", "webbrowser", "asyncio", "resource", "fcntl", "termios",
                   "http", "urllib.request", "_xxsubinterpreters", "_posixshmem",
                   "concurrent.futures.process", "readline")
# gc is not among them: gc.collect() is what a program freeing memory calls, and what reaches
# other objects (gc.get_objects, get_referrers, get_referents) is refused by event below.

# Audit events refused outright (exact names or prefixes ending in ".").
_DENIED_EVENTS = ("socket.", "ctypes.", "subprocess.", "os.system", "os.exec", "os.spawn",
                  "os.posix_spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
                  "os.startfile", "os.link", "os.symlink", "os.add_dll_directory", "pty.",
                  "resource.", "webbrowser.", "urllib.", "ftplib.", "smtplib.", "poplib.",
                  "imaplib.", "nntplib.", "telnetlib.", "http.", "signal.pthread_kill",
                  "sys.remote_exec", "gc.get_", "_winapi.", "winreg.", "msvcrt.",
                  "sqlite3.load_extension", "sqlite3.enable_load_extension",
                  "_posixsubprocess.", "os.setuid", "os.setgid", "os.mkfifo", "os.mknod",
                  "os.setns", "os.unshare")
# Process starts (all refused above too): the set-up's imports of allowed packages meet them
# before the guard is on (matplotlib asks ``fc-list`` for the system's fonts the first time).
_SPAWN_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.spawn", "os.posix_spawn",
                 "os.fork", "os.forkpty", "_posixsubprocess.")
# What threadpoolctl needs (scikit-learn's KMeans and others limit BLAS and OpenMP threads with
# it): a handle on a thread library already loaded, and its thread-count and version functions
# (see threadpoolctl's controllers). Only these names are looked up through ctypes, so no
# function that reaches the system (``syscall``, ``dlopen``) or memory is found that way; the
# MKL controller reads its version into a ``create_string_buffer``.
_OPENBLAS = ("openblas_get_num_threads", "openblas_set_num_threads", "openblas_get_config",
             "openblas_get_parallel", "openblas_get_corename")
_THREAD_SYMBOLS = frozenset(
    [f"{prefix}{name}{suffix}" for name in _OPENBLAS for prefix in ("", "scipy_")
     for suffix in ("", "64_", "_64")] +
    ["bli_thread_get_num_threads", "bli_thread_set_num_threads", "bli_info_get_version_str",
     "bli_info_get_enable_openmp", "bli_info_get_enable_pthreads", "bli_arch_query_id",
     "bli_arch_string", "flexiblas_get_num_threads", "flexiblas_set_num_threads",
     "flexiblas_get_version", "flexiblas_current_backend", "MKL_Get_Max_Threads",
     "MKL_Set_Num_Threads", "MKL_Set_Num_Threads_Local", "MKL_Get_Version_String",
     "MKL_Set_Threading_Layer", "omp_get_max_threads", "omp_set_num_threads"])
# Where such a library may be opened from: the allowed roots and the system's library
# directories, never the working directory (a library the program wrote runs its own code).
_LIB_DIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib")
# Pools of processes, and what their refusal tells an honest program reaching for one (not
# subprocess, which packages import as a matter of course: scipy, email).
_PROCESS_MODULES = ("multiprocessing", "_multiprocessing", "concurrent.futures.process")
_ONE_PROCESS = "(a sandboxed program is one process: use threads)"
# Events whose first argument (and second, for renames) is a path that must stay in the
# working directory.
_WRITE_EVENTS = ("os.mkdir", "os.remove", "os.rmdir", "os.rename", "os.truncate", "os.chmod",
                 "os.chown", "os.utime", "os.chflags", "os.lchflags", "os.lchmod",
                 "shutil.rmtree", "shutil.move", "tempfile.mkstemp", "tempfile.mkdtemp",
                 "os.chdir", "os.setxattr", "os.removexattr", "sqlite3.connect")
# SQLite opens a file with byte-range locks (refused by the seccomp layer), unless told not to
# (a URI's nolock=1 or immutable=1); held in memory it locks nothing.
_SQLITE_NO_LOCKS = ("nolock=1", "immutable=1", "mode=memory")
# Events whose first argument is a path that may only be read inside the allowed roots.
_READ_EVENTS = ("os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.listxattr",
                "os.getxattr")


class SandboxViolation(PermissionError):
    """Raised in the child when the program attempts a refused operation."""


def denied(name: str) -> bool:
    """Is the module ``name`` on the guard's deny-list?"""
    return any(name == d or name.startswith(d + ".") for d in _DENIED_MODULES)


def sqlite_without_locks(database, _fsdecode=os.fsdecode, _fspath=os.fspath, _set=set
                         ) -> str | None:
    """The URI that opens SQLite's ``database`` (a path or a ``file:`` URI) without locks, or
    None when it locks nothing as given.

    Examples
    --------
    >>> [sqlite_without_locks(d) for d in ("db.sqlite", ":memory:", "file:db.sqlite?nolock=1")]
    ['file:db.sqlite?nolock=1', None, None]
    >>> sqlite_without_locks("file:db.sqlite?mode=ro")
    'file:db.sqlite?mode=ro&nolock=1'
    """
    name = _fsdecode(_fspath(database))  # bound: the guard calls this after the program ran
    if name in ("", ":memory:"):
        return None
    if not name.startswith("file:"):
        return f"file:{name}?nolock=1"
    path, _, query = name[5:].partition("#")[0].partition("?")
    params = [p for p in query.split("&") if p]
    if path in ("", ":memory:") or _set(params) & _set(_SQLITE_NO_LOCKS):
        return None
    return f"file:{path}?" + "&".join(params + ["nolock=1"])


def sqlite_path(database, _fsdecode=os.fsdecode, _fspath=os.fspath):
    """The file SQLite's ``database`` (a path or a ``file:`` URI) names, or None in memory.

    Examples
    --------
    >>> [sqlite_path(d) for d in ("db.sqlite", "file:/tmp/x?nolock=1", "file:///tmp/y",
    ...                           "file::memory:?cache=shared", ":memory:")]
    ['db.sqlite', '/tmp/x', '/tmp/y', None, None]
    """
    name = _fsdecode(_fspath(database))  # bound: the guard calls this after the program ran
    if name.startswith("file:"):
        name = name[5:].partition("#")[0].partition("?")[0]
        if name.startswith("//"):  # an authority (empty or localhost), then the path
            name = "/" + name[2:].partition("/")[2]
    return None if name in ("", ":memory:") else name


def make_guard(workdir: str, roots: list[str], report_fd: int | None = None,
               file_locks: bool = True):
    """The audit hook, the function that records a refusal and the list of refusals.

    Without ``file_locks`` (the seccomp layer refuses byte-range locks), SQLite may open a
    file only without locks, and a connection that would lock is refused with the URI that
    does not (the lock refused later failed its first statement with "access permission
    denied", naming nothing).

    Everything the hook uses is bound now, as default arguments, so a program that later
    replaces ``os.lstat`` or a builtin cannot change what the hook does. A refusal is written
    with :data:`MARKER` to stderr and to ``report_fd`` (so redirecting stderr does not hide it)
    and appended to the list (so a swallowed exception does not either).
    """
    import stat

    # this file too: tracebacks through the driver read it (it is public source code)
    # plus system facts that numerical libraries probe (CPU count, cgroup quota, time zone)
    pid = os.getpid()
    system = ["/dev/null", "/dev/urandom", "/dev/zero", "/usr/share/zoneinfo",
              "/etc/localtime", "/sys/fs/cgroup", "/sys/devices/system/cpu", "/proc/cpuinfo",
              "/proc/meminfo"] + [f"/proc/{pid}/{name}" for name in
                                  ("stat", "status", "cgroup", "mountinfo", "cpuset",
                                   "maps")]
    readable = tuple([workdir] + roots + system + [os.path.dirname(os.path.realpath(__file__))])
    libraries = tuple(roots) + _LIB_DIRS
    protected: list = []
    violations: list = []
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
        done = []
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

    def record(text, _write=os.write, _fds=(2,) if report_fd is None else (2, report_fd),
               _violations=violations, _marker=MARKER):
        _violations.append(text)
        for fd in _fds:
            try:
                _write(fd, ("\n" + _marker + text + "\n").encode("utf-8", "replace"))
            except Exception:  # noqa: BLE001 - closed by the program; still refuse
                pass

    def refuse(event, detail, _exc=SandboxViolation, _record=record):
        text = f"{event} {detail}"[:300].replace("\n", " ")
        _record(text)
        raise _exc(f"sandbox: {text} is not allowed")

    def hook(event, args, _denied_events=_DENIED_EVENTS, _write_events=_WRITE_EVENTS,
             _read_events=_READ_EVENTS, _denied_modules=_DENIED_MODULES, _resolve=resolve,
             _inside=inside, _refuse=refuse, _readable=readable, _home=(workdir,),
             _wflags=write_flags, _protected=protected, _int=int, _str=str, _type=type,
             _len=len, _libraries=libraries, _symbols=_THREAD_SYMBOLS,
             _locks=file_locks, _unlocked=sqlite_without_locks, _sqlite_path=sqlite_path,
             _process_modules=_PROCESS_MODULES, _spawn=_SPAWN_EVENTS, _one=_ONE_PROCESS):
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
                    _refuse("import", f"{name} {_one}" if d in _process_modules else name)
            return
        if event == "ctypes.dlopen" and _len(args) and args[0] is not None:
            where = _resolve(args[0])
            if where is not None and _inside(where, _libraries) and \
                    not _inside(where, _home):
                return
            _refuse(event, repr(args[0]))
        if (event == "ctypes.dlsym" and _len(args) >= 2 and _type(args[1]) is _str and
                args[1] in _symbols) or event == "ctypes.create_string_buffer":
            return
        if event.startswith(_denied_events):
            _refuse(event, repr(args[1]) if event == "ctypes.dlsym" and _len(args) >= 2
                    else _one if event.startswith(_spawn) else "")
        if event in _write_events:  # exact: 'sqlite3.connect/handle' carries no path
            for path in tuple(args)[:2 if event in ("os.rename", "shutil.move") else 1]:
                if event == "sqlite3.connect" and path is not None:
                    path = _sqlite_path(path)  # a file: URI names its file after the scheme
                if _type(path) is _int or path is None:
                    continue
                where = _resolve(path)
                if where is None or not _inside(where, _home):
                    _refuse(event, repr(path))
            uri = _unlocked(args[0]) if event == "sqlite3.connect" and not _locks and \
                _len(args) else None
            if uri is not None:
                _refuse(event, f"{args[0]!r} (SQLite locks its files with byte-range locks, "
                               f"which the sandbox refuses: connect to {uri!r} with uri=True, "
                               "or to ':memory:')")
            return
        if event in _read_events:
            path = args[0] if _len(args) else None
            if path is None or _type(path) is _int:
                return
            where = _resolve(path)
            if where is None or not _inside(where, _readable):
                _refuse(event, repr(path))
            return
        if event == "object.__setattr__" and _len(args) >= 2 and args[0] in _protected:
            _refuse(event, args[1])  # rewriting the guard's own functions

    protected.extend([hook, resolve, inside, refuse, record])
    return hook, record, violations


def import_hook():
    """An audit hook for the set-up's imports of allowed packages (before the guard), and the
    function that switches it off.

    A process an import tries to start (matplotlib's first import runs ``fc-list`` to list
    fonts) fails with ``PermissionError``, as if the tool were missing, which libraries that
    probe a tool expect and go on without; the seccomp layer would otherwise kill the program
    before a line of it ran. Nothing is recorded: the program has not run yet. Switched off,
    the hook does nothing and the guard (added after it) sees every event.
    """
    active = [True]

    def hook(event, args, _active=active, _spawn=_SPAWN_EVENTS, _exc=PermissionError,
             _eperm=errno.EPERM):
        if _active and event.startswith(_spawn):
            raise _exc(_eperm, f"sandbox: no process may be started ({event})")

    return hook, active.clear


def admits(allowed, name: str, fromlist=()) -> bool:
    """Does the import allow-list ``allowed`` admit ``import name`` (``from name import
    *fromlist``)?

    An entry admits its module and everything beneath it (``"numpy"``: ``numpy.linalg``). A
    dotted entry also admits the packages above it, which its own import runs anyway
    (``"concurrent.futures"``: ``import concurrent``, ``from concurrent import futures``), but
    from those packages nothing else (``from concurrent import thread``, ``import *``).

    Examples
    --------
    >>> allowed = {"numpy", "concurrent.futures"}
    >>> admits(allowed, "numpy.linalg"), admits(allowed, "concurrent.futures.thread")
    (True, True)
    >>> admits(allowed, "concurrent", ("futures",)), admits(allowed, "concurrent", ("thread",))
    (True, False)
    >>> admits(allowed, "concurrent.thread"), admits(allowed, "numpyx")
    (False, False)
    """
    if any(name == a or name.startswith(a + ".") for a in allowed):
        return True
    if not any(a.startswith(name + ".") for a in allowed):
        return False
    for item in fromlist or ():  # from a package above an entry: only towards an entry
        sub = f"{name}.{item}"
        if not any(sub == a or sub.startswith(a + ".") or a.startswith(sub + ".")
                   for a in allowed):  # "*" too: no entry is named "*"
            return False
    return True


def user_builtins(allowed: list[str], record):
    """A private builtins dict for the program whose ``__import__`` admits allowed modules
    (see :func:`admits`)."""
    import builtins

    real_import = builtins.__import__
    allowed_set = frozenset(allowed)

    def checked_import(name, globals=None, locals=None, fromlist=(), level=0,
                       _real=real_import, _allowed=allowed_set, _mark=record,
                       _exc=SandboxViolation, _sorted=sorted, _admits=admits):
        if level != 0 or not _admits(_allowed, name, fromlist):
            _mark(f"import {name}")
            raise _exc(f"sandbox: import of {name!r} is not allowed "
                       f"(allowed: {', '.join(_sorted(_allowed))})")
        return _real(name, globals, locals, fromlist, level)

    env = dict(vars(builtins))
    env["__import__"] = checked_import
    return env

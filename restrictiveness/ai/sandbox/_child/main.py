"""The child's entry point: set up the isolation layers, check them from inside, report them to
the parent, then run the program (and the trusted driver) under the guard and write the status.

The trusted bootstrap forks the program's process and stays behind as its relay (in the
built-in backend, the namespace's init does), so the parent learns the program's true wait
status and resource use whatever wraps it (bubblewrap reports a signal as an exit code).

Under full isolation the first message on the report channel (a socket inherited as
``cfg["report_fd"]``) carries the descriptor of the working directory's capped tmpfs
(:mod:`.workspace`), and the parent answers once it has copied the files in. The next line
(the first otherwise) is the setup report, JSON: ``{"setup": "ready", "layers": {...}}`` or
``{"setup": "failed", "layer": ..., "detail": ...}``; it is written before any untrusted code
runs. Guard refusals follow.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import resource
import sys
import traceback

from . import BASELINE, guard, landlock, namespaces, privileges, seccomp, syscalls, workspace
from .protocol import EXIT_FAILURE, EXIT_NO_ROOM, EXIT_SETUP, STATUS_BYTES, LayerError


class _Failure(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _report(fd: int, record: dict) -> None:
    os.write(fd, (json.dumps(record) + "\n").encode())


def isolate(cfg: dict) -> dict[str, str]:
    """Set up every layer of ``isolation="full"``; returns layer -> what is in place.

    Raises :class:`LayerError` naming the first layer that failed.
    """
    layers = {}
    step = "rlimits"
    try:
        privileges.set_limits(cfg, processes=True)
        step = "capabilities"
        privileges.drop(cfg["uid"], cfg["gid"])
        step = "landlock"
        layers["landlock"] = landlock.restrict(**cfg["landlock"])
        step = "seccomp"
        layers["seccomp"] = seccomp.install(os.getpid())
    except OSError as exc:
        raise LayerError(step, str(exc)) from None
    return verify(cfg, layers)


def verify(cfg: dict, layers: dict[str, str]) -> dict[str, str]:
    """Check from inside that each layer holds (what the kernel reports, and a refused
    operation per layer), not merely that its set-up code ran."""
    status = privileges.status()

    def check(layer: str, ok: bool, text: str) -> None:
        if not ok:
            raise LayerError(layer, f"set up, but the check failed: {text}")
        layers[layer] = layers.get(layer) or text

    own = {n: os.stat(f"/proc/self/ns/{n}").st_ino for n in cfg["host_ns"]}
    same = [n for n, ino in cfg["host_ns"].items() if own[n] == ino]
    check("namespaces", not same, f"own {', '.join(sorted(own))} namespaces via "
                                  f"{cfg['backend']}" + (f" (shared: {same})" if same else ""))
    visible = [p for p in cfg["hidden"] if os.path.lexists(p)]
    check("filesystem", not visible, "only the Python installation (read-only) and the working "
                                     "directory visible" + (f"; visible: {visible}" if visible
                                                            else ""))
    here = os.statvfs(cfg["workdir"])  # the capped tmpfs, not the host's directory under it
    size = here.f_blocks * here.f_frsize
    check("filesystem", cfg["disk"] <= size < cfg["disk"] + here.f_frsize and
          here.f_files == cfg["files"] + 1,
          f"the working directory a tmpfs of {size} bytes and {here.f_files - 1} entries")
    layers["filesystem"] = ("only the Python installation (read-only) and the working "
                            f"directory visible, a tmpfs of {cfg['disk']} bytes and "
                            f"{cfg['files']} entries")
    uids = {int(u) for u in status["Uid"].split()}
    check("unprivileged-uid", 0 not in uids, f"uid {os.getuid()}")
    caps = {k: int(status[k], 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    check("capabilities", not any(caps.values()), "none (all five sets empty)")
    check("no-new-privs", status.get("NoNewPrivs") == "1", "set")
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    core = resource.getrlimit(resource.RLIMIT_CORE)
    check("rlimits", nproc == int(cfg["nproc"]) and core == (1, 1),
          f"cpu {cfg['cpu']} s, memory {cfg['memory']} B, file {cfg['fsize']} B, "
          f"{cfg['nproc']} tasks, no core dumps")
    try:
        os.close(os.open("/", os.O_RDONLY | os.O_DIRECTORY))
        listed = True
    except PermissionError:
        listed = False
    check("landlock", not listed, "")
    refused = syscalls.socket_errno(2, 1) == errno.EAFNOSUPPORT  # AF_INET, SOCK_STREAM
    check("seccomp", status.get("Seccomp") == "2" and refused, "")
    return layers


def relay(pid: int, exit_fd: int) -> None:
    """Wait for the program's process (reaping any other child, as a namespace's init must)
    and write its raw wait status, CPU seconds and peak memory to ``exit_fd``; the program
    has closed its copy, so this line cannot be forged. Never returns."""
    try:
        status, usage = None, None
        while status is None:
            try:
                done, st, ru = os.wait4(-1, 0)
            except ChildProcessError:
                break
            if done == pid:
                status, usage = st, ru
        if status is not None and usage is not None:
            record = [status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss]
            os.write(exit_fd, json.dumps(record).encode())
    finally:
        os._exit(0)


def main(config_path: str) -> None:
    with open(config_path, encoding="utf-8") as fh:
        cfg = json.load(fh)
    report_fd, full = cfg["report_fd"], cfg["isolation"] == "full"
    if cfg.get("parent") is not None:
        syscalls.prctl(syscalls.PR_SET_PDEATHSIG, 9)  # SIGKILL when the parent dies
        if os.getppid() != cfg["parent"]:  # it died before that
            os._exit(EXIT_SETUP)
    try:
        if full:
            seccomp.load_library(cfg["libseccomp"])
            if cfg["backend"] == "builtin":
                namespaces.enter(cfg["plan"], cfg["workdir"])
            workspace.mount_capped(cfg, report_fd)
            if cfg["backend"] == "bwrap":  # given for that mount only
                syscalls.drop_capability(syscalls.CAP_SYS_ADMIN)
        pid = os.fork()
        if pid:
            syscalls.prctl(syscalls.PR_SET_DUMPABLE, 0)  # the program may not trace its relay
            relay(pid, cfg["exit_fd"])
        os.close(cfg["exit_fd"])
        syscalls.prctl(syscalls.PR_SET_PDEATHSIG, 9)  # SIGKILL when the relay dies
        # not the init's undumpable flag, which a fork inherits: a parent that is not root
        # reads the program's descriptors and mappings through /proc (workdir.held_bytes),
        # which an undumpable process hides from its own uid (seccomp then keeps it so)
        syscalls.prctl(syscalls.PR_SET_DUMPABLE, 1)
        if full:
            layers = isolate(cfg)
        else:
            privileges.set_limits(cfg, processes=False)
            layers = {}
    except LayerError as exc:
        _report(report_fd, {"setup": "failed", "layer": exc.layer, "detail": exc.detail})
        os._exit(EXIT_SETUP)
    except Exception as exc:  # noqa: BLE001 - e.g. pyseccomp missing: name it
        _report(report_fd, {"setup": "failed", "layer": "seccomp" if "seccomp" in repr(exc)
                            else "setup", "detail": f"{type(exc).__name__}: {exc}"})
        os._exit(EXIT_SETUP)
    pidns = os.stat("/proc/self/ns/pid").st_ino if full else None
    _report(report_fd, {"setup": "ready", "layers": layers, "pidns": pidns})
    forget_denied()
    run(cfg, report_fd)


def forget_denied() -> None:
    """Forget the denied modules the set-up imported (ctypes.util imports subprocess), so a
    program importing one is refused by the guard as if the set-up had never run."""
    for name in [n for n in sys.modules if n not in BASELINE and guard.denied(n)]:
        del sys.modules[name]


def run(cfg: dict, report_fd: int) -> None:
    """Run the program and the driver under the guard; write the status file and exit."""
    workdir = cfg["workdir"]
    control = os.path.join(workdir, ".sandbox")
    status_path = os.path.join(control, "status.json")
    # Bound before the program runs: a program replacing json.dump cannot forge our writes.
    _open, _dump = builtins.open, json.dump
    spawn_hook, end_preload = guard.import_hook()
    sys.addaudithook(spawn_hook)
    for name in cfg["preload"]:
        try:
            __import__(name)
        except ImportError:  # "from pkg import function" also proposes pkg.function
            pass
    end_preload()
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
        if arr.nbytes > int(cfg["fsize"]):
            raise _Failure("output-limit", f"output {name!r} has {arr.nbytes} bytes, more "
                                           f"than the file limit of {cfg['fsize']} bytes")
        _save(os.path.join(control, "out", f"{name}.npy"), arr, allow_pickle=False)

    def set_value(obj) -> None:
        size = len(json.dumps(obj).encode("utf-8"))
        if size > STATUS_BYTES - 2**16:  # room for the message beside it
            raise _Failure("output-limit", f"the value has {size} bytes of JSON, more than "
                                           f"{STATUS_BYTES - 2**16}")
        state["value"] = obj

    def fail(reason: str, message: str) -> None:
        raise _Failure(reason, message)

    def write_status(status: dict, _remove=os.remove) -> None:
        if "message" in status:  # what the parent keeps of it, well inside STATUS_BYTES
            status["message"] = str(status["message"])[:4000]
        try:  # whatever the program left there (a FIFO would block the write)
            _remove(status_path)
        except OSError:
            pass
        with _open(status_path, "w", encoding="utf-8") as fh:
            _dump(status, fh)

    with _open(cfg["program"], encoding="utf-8") as fh:
        source = fh.read()
    hook, record, violations = guard.make_guard(workdir, cfg["roots"], report_fd,
                                                file_locks=cfg["isolation"] != "full")
    namespace = {"__name__": cfg["run_name"], "__file__": cfg["program"]}
    if cfg.get("guard", True):  # off only in tests of the kernel layers on their own
        namespace["__builtins__"] = guard.user_builtins(cfg["allowed"], record)
        sys.addaudithook(hook)
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
    except guard.SandboxViolation as exc:
        status = {"ok": False, "reason": "forbidden", "message": str(exc)}
    except MemoryError as exc:
        status = {"ok": False, "reason": "memory", "message": f"MemoryError: {exc}"}
    except OSError as exc:
        # EFBIG: the file-size limit; ENOSPC: the working directory's capped tmpfs
        reason = "output-limit" if exc.errno in (errno.EFBIG, errno.ENOSPC) else "crash"
        status = {"ok": False, "reason": reason, "message": _format_exc(exc)}
    except BaseException as exc:  # noqa: BLE001 - anything the program raises is a crash
        status = {"ok": False, "reason": "crash", "message": _format_exc(exc)}
    if violations and status.get("reason") != "forbidden":  # refused, then swallowed
        status = {"ok": False, "reason": "forbidden",
                  "message": f"refused operation: {violations[0]}"}
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - the program may have closed stdout
        pass
    try:
        write_status(status)
    except OSError as exc:  # nothing left to report with
        os._exit(EXIT_NO_ROOM if exc.errno == errno.ENOSPC else EXIT_FAILURE)
    except BaseException:  # noqa: BLE001
        os._exit(EXIT_FAILURE)
    os._exit(0 if status["ok"] else EXIT_FAILURE)


def _format_exc(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # drop the sandbox's own frames: the program's are what a reader needs
    here = os.path.dirname(os.path.abspath(__file__))
    return "".join(line for line in lines if here not in line)[-3000:]

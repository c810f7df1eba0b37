"""The built-in namespace layer: new PID, network, mount, IPC, UTS and cgroup namespaces (and a
user namespace when unprivileged) behind a minimal file system, without any external tool.

:func:`enter` runs in the interpreter the parent started (call it A). A unshares the namespaces
and forks B, the init (PID 1) of the new PID namespace; B builds the file system the program
will see — a read-only tmpfs holding identity bind mounts of the entries of the mount plan
(read-only, except the working directory), its own ``/proc`` and a few device nodes — pivots
into it, and forks C, which returns from :func:`enter` to run the program. A and B never return:
B reaps and hands C's wait status to A through a pipe, and A ends the same way (same exit code,
same signal), so the parent classifies C's end. When A dies B gets SIGKILL (parent-death
signal), and when B, the namespace's init, dies the kernel kills everything left inside it.
"""

from __future__ import annotations

import os
import signal

from . import syscalls as sc
from .protocol import LayerError

_ATIME = ((os.ST_NOATIME, sc.MS_NOATIME), (os.ST_NODIRATIME, sc.MS_NODIRATIME),
          (os.ST_RELATIME, sc.MS_RELATIME), (os.ST_NOSUID, sc.MS_NOSUID),
          (os.ST_NODEV, sc.MS_NODEV), (os.ST_NOEXEC, sc.MS_NOEXEC))


def enter(plan: dict, workdir: str) -> None:
    """Enter the namespaces; returns in the program's process (C) only."""
    unprivileged = os.geteuid() != 0
    flags = (sc.CLONE_NEWNS | sc.CLONE_NEWPID | sc.CLONE_NEWNET | sc.CLONE_NEWIPC
             | sc.CLONE_NEWUTS | sc.CLONE_NEWCGROUP)
    uid, gid = os.geteuid(), os.getegid()
    try:
        sc.unshare(flags | (sc.CLONE_NEWUSER if unprivileged else 0))
        if unprivileged:  # map only ourselves: the same uid inside, no other ids
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                               ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as fh:
                    fh.write(text)
    except OSError as exc:
        raise LayerError("namespaces", str(exc)) from None
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        _relay(pid, r, w)
    os.close(r)
    sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL)
    sc.prctl(sc.PR_SET_DUMPABLE, 0)  # the program may not read or trace its init
    try:
        build_root(plan, workdir)
        sc.sethostname("sandbox")
    except OSError as exc:
        raise LayerError("filesystem", str(exc)) from None
    pid = os.fork()
    if pid:
        _init(pid, w)
    os.close(w)


def _relay(pid: int, r: int, w: int) -> None:
    """A: wait for the namespace's init, then end as the program ended."""
    try:
        os.close(w)
        _, status = os.waitpid(pid, 0)
        data = os.read(r, 32)
        propagate(int(data) if data.strip().lstrip(b"-").isdigit() else status)
    finally:
        os._exit(1)


def _init(pid: int, w: int) -> None:
    """B, PID 1 of the namespace: reap until the program (C) ends, pass its status on."""
    status = None
    try:
        while status is None:
            try:
                done, st = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if done == pid:
                status = st
        os.write(w, str(status if status is not None else 1 << 8).encode())
    finally:
        os._exit(0)


def propagate(status: int) -> None:
    """End this process as a child with wait status ``status`` ended."""
    try:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig not in (signal.SIGKILL, signal.SIGSTOP):
                signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            os._exit(128 + sig)
        os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
    finally:
        os._exit(1)  # never back into the caller's code


def _locked_flags(path: str) -> int:
    """Mount flags a remount must keep (a user namespace may not clear them)."""
    f = os.statvfs(path).f_flag
    return sum(ms for st, ms in _ATIME if f & st)


def build_root(plan: dict, workdir: str) -> None:
    """Build the file system of the mount plan on ``plan["base"]`` and pivot into it.

    Entries (applied in order) are ``{"kind": "ro" | "rw" | "dev", "path": p}`` (identity bind
    mounts), ``{"kind": "symlink", "path": p, "target": t}`` and ``{"kind": "proc", "path": p}``.
    """
    base = plan["base"]
    sc.mount(None, "/", None, sc.MS_REC | sc.MS_PRIVATE)  # nothing propagates back out
    sc.mount("tmpfs", base, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "mode=0755,size=1m")
    for entry in plan["entries"]:
        kind, path = entry["kind"], entry["path"]
        dest = base + path
        if kind == "symlink":
            os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
            os.symlink(entry["target"], dest)
        elif kind == "proc":
            os.makedirs(dest, mode=0o755, exist_ok=True)
            sc.mount("proc", dest, "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
        else:
            if not os.path.lexists(dest):
                if os.path.isdir(path):
                    os.makedirs(dest, mode=0o755)
                else:
                    os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
                    os.close(os.open(dest, os.O_CREAT | os.O_WRONLY, 0o644))
            sc.mount(path, dest, None, sc.MS_BIND)
            flags = sc.MS_BIND | sc.MS_REMOUNT | sc.MS_NOSUID | _locked_flags(dest)
            flags |= sc.MS_RDONLY if kind == "ro" else 0
            flags |= 0 if kind == "dev" else sc.MS_NODEV
            sc.mount(None, dest, None, flags)
    sc.mount(None, base, None, sc.MS_REMOUNT | sc.MS_BIND | sc.MS_RDONLY | sc.MS_NOSUID
             | sc.MS_NODEV | _locked_flags(base))
    os.chdir(base)
    sc.pivot_root(".", ".")          # the old root ends up stacked on the new one...
    sc.umount2(".", sc.MNT_DETACH)   # ...and is detached: nothing of it stays reachable
    os.chdir(workdir)

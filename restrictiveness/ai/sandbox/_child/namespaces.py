"""The built-in namespace layer: new PID, network, mount, IPC, UTS and cgroup namespaces (and a
user namespace when unprivileged) behind a minimal file system, without any external tool.

:func:`enter` runs in the interpreter the parent started (call it A). A unshares the namespaces
and forks B, the init (PID 1) of the new PID namespace, and waits for it. B builds the file
system the program will see — a read-only tmpfs holding identity bind mounts of the entries of
the mount plan (read-only, except the working directory), its own ``/proc`` and a few device
nodes — pivots into it and returns from :func:`enter`; it then forks the program's process and
relays its end (:func:`main.relay`). When A dies B gets SIGKILL (parent-death signal), and when
B, the namespace's init, dies the kernel kills everything left inside it.
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
    """Enter the namespaces; returns in the namespace's init (B) only."""
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
    pid = os.fork()
    if pid:  # A: wait for the namespace's init; its relay reports the program's end
        try:
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
        finally:
            os._exit(1)
    sc.prctl(sc.PR_SET_PDEATHSIG, signal.SIGKILL)
    sc.prctl(sc.PR_SET_DUMPABLE, 0)  # the program may not read or trace its init
    try:
        build_root(plan, workdir)
        sc.sethostname("sandbox")
    except OSError as exc:
        raise LayerError("filesystem", str(exc)) from None


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

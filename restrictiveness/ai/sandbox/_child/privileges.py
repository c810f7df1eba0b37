"""Privileges and resource limits of the program's process: a new session, kernel resource
limits, an unprivileged uid (when started as root), no capabilities in any set, and
``no_new_privs``; :func:`status` reads back what the kernel reports for this process."""

from __future__ import annotations

import os
import resource

from . import syscalls as sc

#: Most open descriptors: each socket holds a few hundred KiB of kernel memory that the
#: address-space limit does not count (9000 filled socket pairs held 2 GB).
MAX_FILES_OPEN = 1024
#: Most signals queued and POSIX timers (each timer preallocates one): kernel memory the
#: machine's default (sized from its RAM, 96,363 on 24 GB: 36 MB of timers) does not bound.
MAX_SIGNALS_PENDING = 4096


def set_limits(cfg: dict, processes: bool) -> None:
    """CPU (SIGXCPU, then SIGKILL a second later), address space, file size, no core dumps,
    no real-time priority nor lower nice value, at most :data:`MAX_FILES_OPEN` descriptors and
    :data:`MAX_SIGNALS_PENDING` queued signals and timers; with ``processes``, at most
    ``cfg["nproc"]`` tasks (threads) for the sandbox's uid."""
    for limit, most in ((resource.RLIMIT_NOFILE, MAX_FILES_OPEN),
                        (resource.RLIMIT_SIGPENDING, MAX_SIGNALS_PENDING)):
        soft = resource.getrlimit(limit)[0]  # a lower limit of the caller's stays
        value = most if soft == resource.RLIM_INFINITY else min(most, soft)
        resource.setrlimit(limit, (value, value))
    cpu = int(cfg["cpu"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (int(cfg["memory"]), int(cfg["memory"])))
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(cfg["fsize"]), int(cfg["fsize"])))
    # No core dump, in any mode: a limit of 0 stops a core file, but the kernel ignores the
    # limit when core_pattern pipes to a helper (apport, systemd-coredump), which then runs as
    # root outside every namespace and reads the crashed program's memory (up to the memory
    # cap) into the host's memory and disk; every seccomp kill is such a crash. Exactly 1 is
    # the kernel's sentinel that aborts a piped dump (and is below any core file's size); the
    # seccomp layer refuses the program's lowering it to 0.
    resource.setrlimit(resource.RLIMIT_CORE, (1, 1))
    # no real-time scheduling and no nice value below the caller's, whatever the caller's
    # limits allow (the audio group's rtprio 95 and nice -19 on Debian and Ubuntu desktops):
    # a real-time busy loop per thread starves every other process of its CPU
    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
    resource.setrlimit(resource.RLIMIT_NICE, (0, 0))
    if processes:
        resource.setrlimit(resource.RLIMIT_NPROC, (int(cfg["nproc"]), int(cfg["nproc"])))


def drop(uid: int | None, gid: int | None) -> None:
    """Leave the parent's session, switch to ``uid``/``gid`` when root, empty every capability
    set (bounding and ambient included) and set ``no_new_privs``."""
    os.setsid()
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        last = int(fh.read())
    bounding = int(status()["CapBnd"], 16)
    for cap in range(last + 1):
        if bounding >> cap & 1:
            sc.prctl(sc.PR_CAPBSET_DROP, cap)
    sc.prctl(sc.PR_CAP_AMBIENT, sc.PR_CAP_AMBIENT_CLEAR_ALL)
    if os.geteuid() == 0 and uid is not None:
        os.setgroups([])
        # No gid given: the uid's own number, never root's group 0 left behind.
        gid = uid if gid is None else gid
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)  # leaving uid 0 clears the permitted and effective sets
    sc.clear_capabilities()
    sc.prctl(sc.PR_SET_NO_NEW_PRIVS, 1)


def status() -> dict[str, str]:
    """This process's ``/proc/self/status`` as a dict."""
    with open("/proc/self/status") as fh:
        return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)

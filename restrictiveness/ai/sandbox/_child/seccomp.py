"""The seccomp layer: a system-call filter built with libseccomp (through the ``pyseccomp``
package's ctypes bindings), default allow up to the newest call reviewed.

* **Killed** (SIGSYS, classified "forbidden"): new processes and programs (``fork``,
  ``vfork``, ``clone`` without ``CLONE_THREAD``, ``execve``), threads with a descriptor
  table of their own (``clone`` without ``CLONE_FILES``: the descriptor limit caps each table,
  and 40 such threads held 33,467 descriptors, 4.4 GB of socket buffers), tracing and other
  processes' memory, namespace and mount changes, ``pidfd_*``, kernel keyrings, BPF, perf,
  io_uring, handles that reopen files, module and clock changes, reboot, and the like; and
  memory the address-space limit does not count (System V shared memory, message queues and
  semaphores, ``memfd_create``, ``memfd_secret``): filled, detached, written without a
  mapping or unmapped again, it outgrew any limit (a semaphore set is kernel memory: 300 sets
  held 840 MiB under a 1 GB cap; a secret memory file keeps its pages when unmapped), and
  ``vmsplice``, whose pipe buffers hold the user pages themselves (a 4 KiB piece of a
  transparent huge page holds all 2 MiB, unmapped or not: 5 GB under a 1 GB cap in 15 s),
  and inotify, whose instances queue 16384 events each with a name (128 of them held 1.1 GB
  under a 1 GB cap in 5 s).
* **Refused with an error**: sockets of any family but ``AF_UNIX`` (EAFNOSUPPORT), from
  ``socket`` and ``socketpair`` alike (which makes both sockets, running the family's code,
  before it asks the family for a pair), and Unix
  sockets reached by name: ``bind``, ``listen``, ``connect``, ``accept``/``accept4`` and
  ``sendto`` with an address (EPERM), leaving ``socketpair``. A connection waits in its
  listener's backlog with what was sent on it after the sender closed (one descriptor held
  4096 of them: 3 listeners held 2.4 GB under a 1 GB cap in 3.5 s), and a datagram socket
  that named itself held 11 full datagrams from senders already closed; buffer sizes set
  with ``setsockopt`` (``SO_SNDBUF``, ``SO_RCVBUF`` and their ``FORCE`` forms: EPERM), since the
  cap of 1024 descriptors bounds socket memory only at the default size (a pair raised to
  ``net.core.wmem_max``, 4 MiB on a test machine, held 8 MB on one descriptor); byte-range
  locks (``fcntl`` ``F_SETLK``, ``F_SETLKW`` and their ``OFD`` forms: EPERM, ``flock`` is
  left), each a record of kernel memory with no limit on their number; signals to
  any process but itself, scheduling, priority and resource-limit changes of other processes,
  ``personality`` (EPERM); ``clone3``, whose flags a filter cannot read (ENOSYS, so the C
  library falls back to ``clone``); ``fallocate`` (EOPNOTSUPP, so the C library's
  ``posix_fallocate`` writes instead): it reserves gigabytes in microseconds, far faster than
  the parent's disk check looks, and with ``FALLOC_FL_KEEP_SIZE`` past the file-size limit and
  past the sizes the parent counts; setting extended attributes (``setxattr`` and its ``l``,
  ``f`` and ``at`` forms: EOPNOTSUPP, as on a file system without them, which ``shutil.copy2``
  expects): on tmpfs (a working directory under a tmpfs ``/tmp``, or ``/dev/shm``) their values
  are kernel memory that no file's size counts (40,000 values of 64 KiB on one file took 5.1 GB
  under a 1 GB memory cap and a 50 MB disk cap); ``splice`` and ``tee`` (EINVAL, as for a
  file that cannot be spliced, which callers meet with a plain copy): a pipe slot filled from
  a file holds the file's page-cache folio, which on file systems with large folios (XFS,
  tmpfs with ``huge=``) is up to 2 MiB per 4 KiB spliced, as ``vmsplice`` held;
  ``sendfile`` (EINVAL, which ``shutil`` and ``socket.sendfile`` meet with a plain copy) for
  the same reason: into a pipe it is a splice, and into a Unix socket each byte sent holds the
  file's folio in the socket buffer, charged one byte (ext4 has large folios since Linux 6.16:
  768 one-byte calls held 1.5 GiB out of sight of a 1 GiB memory and 50 MB disk cap, the file
  deleted after each batch);
  ``sendmsg``/``sendmmsg`` and ``landlock_add_rule`` (EPERM):
  a descriptor in flight on a Unix socket, or a file named in a Landlock rule of the program's
  own, keeps a deleted file's blocks with no descriptor or mapping left for the parent to count
  (gigabytes past the disk limit, see :func:`~..workdir.held_bytes`); ``io_setup`` (ENOSYS):
  the machine's native-AIO events (``fs.aio-max-nr``) are one pool for every process, and a
  program taking them all made every other process's ``io_setup`` fail while it ran;
  ``prctl(PR_SET_DUMPABLE)`` (EPERM): an undumpable program hides its descriptors and
  mappings, and the deleted files they hold, from a parent that is not root; a new core-dump
  limit (``setrlimit``, ``prlimit64`` of ``RLIMIT_CORE``: EPERM): at 0 instead of the
  sandbox's 1, a crash (a seccomp kill is one) is piped to the host's core-dump helper.

Other architectures' system calls (e.g. 32-bit ``int 0x80`` on x86-64, or x32's) kill the
process. The filter allows what it does not name, but only up to the newest call reviewed
(:data:`NEWEST_REVIEWED`): the next 130 numbers, calls of kernels to come, fail with ENOSYS.
``modify_ldt`` (a per-process descriptor table, a past source of kernel bugs that no Python
program uses) kills, as ``open_tree_attr`` does with the other mount calls.
A rule on an ``int`` argument (a socket option, an ``fcntl`` command, a ``prctl`` option)
compares its low 32 bits alone, as the kernel reads it: compared as 64 bits, the refused call
with a bit set above them passed.
"""

from __future__ import annotations

import ctypes.util
import errno

from .syscalls import CLONE_FILES, CLONE_THREAD, PR_SET_DUMPABLE

_AF_UNIX = 1
_SOL_SOCKET = 1
_BUFFER_SIZES = (7, 8, 32, 33)  # SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE
_RANGE_LOCKS = (6, 7, 37, 38)  # F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW
_RLIMIT_CORE = 4
# A rule on an int argument compares its low 32 bits alone: the filter sees all 64 bits of
# the register, and the same call with a bit set above them was no longer the refused one.
_LOW32 = 0xFFFFFFFF

_KILL = ("fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv",
         "process_vm_writev", "process_madvise", "process_mrelease", "kcmp", "setns", "unshare",
         "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick",
         "move_mount", "open_tree", "mount_setattr", "pidfd_open", "pidfd_send_signal",
         "pidfd_getfd", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
         "userfaultfd", "open_by_handle_at", "name_to_handle_at", "io_uring_setup",
         "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load", "init_module",
         "finit_module", "delete_module", "reboot", "swapon", "swapoff", "syslog", "acct",
         "quotactl", "quotactl_fd", "iopl", "ioperm", "settimeofday", "clock_settime",
         "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "vhangup", "uselib",
         "lookup_dcookie", "fanotify_init", "lsm_set_self_attr", "open_tree_attr", "modify_ldt",
         "shmget", "msgget",
         "semget", "memfd_create", "memfd_secret", "vmsplice", "inotify_init", "inotify_init1")
_DENY = ("tkill", "ioprio_set", "migrate_pages", "move_pages", "sendmsg", "sendmmsg",
         "landlock_add_rule", "bind", "listen", "connect", "accept", "accept4")
# Calls added since Linux 5.1 have one number on every architecture (alpha aside). A libseccomp
# older than the call does not know its name, and the rule was left out without a word
# (lsm_set_self_attr under Debian 12's libseccomp 2.5.4; memfd_secret before 2.5.2).
_UNIFIED = {"pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426,
            "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
            "fsconfig": 431, "fsmount": 432, "fspick": 433, "pidfd_open": 434, "clone3": 435,
            "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442,
            "quotactl_fd": 443, "landlock_add_rule": 445, "memfd_secret": 447,
            "process_mrelease": 448, "lsm_set_self_attr": 460, "setxattrat": 463,
            "open_tree_attr": 467}
#: The newest system call reviewed (Linux 6.18's file_setattr). The filter allows by default,
#: so a call a later kernel adds would pass unreviewed, as open_tree_attr (6.15: open_tree's
#: clone with mount_setattr's changes, both killed) passed the libseccomp that did not know
#: its name: the next numbers fail with ENOSYS ("no such call", which callers expect of an
#: older kernel) until they are reviewed here. New calls take the next free number on every
#: architecture since Linux 5.1 (the unified table).
NEWEST_REVIEWED = 469
UNREVIEWED = range(NEWEST_REVIEWED + 1, NEWEST_REVIEWED + 131)
_pyseccomp = None


def load_library(soname: str | None) -> None:
    """Import pyseccomp, telling it where libseccomp is (its own search runs ``ldconfig``,
    which costs a process and is not visible inside a sandbox)."""
    global _pyseccomp
    find = ctypes.util.find_library
    known = {"seccomp": soname, "c": "libc.so.6"}
    ctypes.util.find_library = lambda name: known.get(name) or find(name)
    try:
        import pyseccomp
    finally:
        ctypes.util.find_library = find
    _pyseccomp = pyseccomp


def install(pid: int) -> str:
    """Load the filter for this process (``pid`` as it sees itself); returns a description."""
    build(pid).load()
    return (f"{len(_KILL)} calls killed, processes, sockets and signals restricted, calls "
            f"after number {NEWEST_REVIEWED} refused")


def build(pid: int):
    """The filter for the process ``pid`` (as it sees itself), not loaded: a
    ``pyseccomp.SyscallFilter``."""
    s = _pyseccomp
    if s is None:
        raise OSError(errno.ENOSYS, "pyseccomp / libseccomp could not be loaded")
    f = s.SyscallFilter(s.ALLOW)
    f.set_attr(s.Attr.ACT_BADARCH, s.KILL_PROCESS)
    f.set_attr(s.Attr.CTL_TSYNC, 1)
    eperm = s.ERRNO(errno.EPERM)

    def rule(action, name, *args):
        try:
            number = s.resolve_syscall(s.Arch.NATIVE, name)
        except ValueError:
            number = -1
        if number < 0:  # not on this architecture, or newer than the system's libseccomp
            number = _UNIFIED.get(name, -1)
        if number >= 0:
            f.add_rule(action, number, *args)

    for name in _KILL:
        rule(s.KILL_PROCESS, name)
    for name in _DENY:
        rule(eperm, name)
    for flag in (CLONE_THREAD, CLONE_FILES):  # rules of one call: either missing kills
        rule(s.KILL_PROCESS, "clone", s.Arg(0, s.MASKED_EQ, flag, 0))
    for number in UNREVIEWED:
        f.add_rule(s.ERRNO(errno.ENOSYS), number)
    rule(s.ERRNO(errno.ENOSYS), "clone3")
    rule(s.ERRNO(errno.ENOSYS), "io_setup")
    rule(s.ERRNO(errno.EOPNOTSUPP), "fallocate")
    for name in ("setxattr", "lsetxattr", "fsetxattr", "setxattrat"):
        rule(s.ERRNO(errno.EOPNOTSUPP), name)
    for name in ("splice", "tee", "sendfile"):
        rule(s.ERRNO(errno.EINVAL), name)
    rule(s.ERRNO(errno.EAFNOSUPPORT), "socket", s.Arg(0, s.NE, _AF_UNIX))
    rule(eperm, "sendto", s.Arg(4, s.NE, 0))  # an address: send() passes none
    rule(s.ERRNO(errno.EAFNOSUPPORT), "socketpair", s.Arg(0, s.NE, _AF_UNIX))

    def low(index: int, value: int):  # an int argument: the kernel reads its low 32 bits
        return s.Arg(index, s.MASKED_EQ, _LOW32, value)

    for option in _BUFFER_SIZES:
        rule(eperm, "setsockopt", low(1, _SOL_SOCKET), low(2, option))
    for command in _RANGE_LOCKS:
        rule(eperm, "fcntl", low(1, command))
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"):
        rule(eperm, name, s.Arg(0, s.NE, pid))
    for name in ("sched_setaffinity", "sched_setparam", "sched_setscheduler", "sched_setattr",
                 "prlimit64"):
        rule(eperm, name, s.Arg(0, s.NE, 0))
    # the core-dump limit of 1 (see privileges.set_limits) lowered to 0 lets a crash reach the
    # host's core-dump helper again: refused (reading it, with no new limit, is not)
    rule(eperm, "prlimit64", low(1, _RLIMIT_CORE), s.Arg(2, s.NE, 0))
    rule(eperm, "setrlimit", low(0, _RLIMIT_CORE))
    rule(eperm, "setpriority", s.Arg(1, s.NE, 0))
    rule(eperm, "personality", s.Arg(0, s.NE, 0xFFFFFFFF))
    rule(eperm, "prctl", low(0, PR_SET_DUMPABLE))
    return f

"""The Linux system calls Python 3.11's :mod:`os` lacks, through ctypes.

Each wrapper raises :class:`OSError` with the errno on failure. Numbers are given for x86-64
and aarch64 where libc has no wrapper.
"""

from __future__ import annotations

import ctypes
import os
import platform

_LIBC = ctypes.CDLL(None, use_errno=True)
_ARCH = {"x86_64": 0, "amd64": 0, "aarch64": 1, "arm64": 1}.get(platform.machine().lower())
#: name: (x86-64, aarch64); the Landlock calls have one number on every architecture
_NUMBERS = {"pivot_root": (155, 41), "capset": (126, 91), "capget": (125, 90),
            "landlock_create_ruleset": (444, 444), "landlock_add_rule": (445, 445),
            "landlock_restrict_self": (446, 446)}

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x00020000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = (0x08000000, 0x10000000, 0x20000000,
                                                           0x40000000)
CLONE_FILES, CLONE_THREAD = 0x00000400, 0x00010000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME = (1024, 2048, 4096, 16384,
                                                                       1 << 18, 1 << 21)
MNT_DETACH = 2
CAP_SYS_ADMIN = 21
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4


def _check(result: int, name: str) -> int:
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")
    return result


def syscall(name: str, *args) -> int:
    """Call ``name`` by number (see ``_NUMBERS``)."""
    if _ARCH is None:
        raise OSError(38, f"{name}: no system call number for {platform.machine()}")
    return _check(_LIBC.syscall(ctypes.c_long(_NUMBERS[name][_ARCH]), *args), name)


def unshare(flags: int) -> None:
    _check(_LIBC.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    def enc(s):
        return None if s is None else os.fsencode(s)

    _check(_LIBC.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags),
                       enc(data)), f"mount {target}")


def umount2(target: str, flags: int) -> None:
    _check(_LIBC.umount2(os.fsencode(target), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    syscall("pivot_root", os.fsencode(new_root), os.fsencode(put_old))


def prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    return _check(_LIBC.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3),
                              ctypes.c_ulong(0), ctypes.c_ulong(0)), f"prctl({option})")


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_LIBC.sethostname(raw, ctypes.c_size_t(len(raw))), "sethostname")


def socket_errno(family: int, kind: int) -> int:
    """0 when a socket of ``family`` can be made (it is closed again), else the errno."""
    fd = _LIBC.socket(ctypes.c_int(family), ctypes.c_int(kind), ctypes.c_int(0))
    if fd == -1:
        return ctypes.get_errno()
    os.close(fd)
    return 0


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capability(cap: int) -> None:
    """Remove ``cap`` from the effective, permitted and inheritable sets (capget, capset)."""
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    syscall("capget", ctypes.byref(header), ctypes.byref(data))
    word, bit = divmod(cap, 32)
    for field in ("effective", "permitted", "inheritable"):
        setattr(data[word], field, getattr(data[word], field) & ~(1 << bit))
    syscall("capset", ctypes.byref(header), ctypes.byref(data))


def clear_capabilities() -> None:
    """Empty the effective, permitted and inheritable sets (capset, version 3)."""
    header = _CapHeader(0x20080522, 0)
    data = (_CapData * 2)()
    syscall("capset", ctypes.byref(header), ctypes.byref(data))

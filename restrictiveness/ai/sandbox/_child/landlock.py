"""The Landlock layer (Linux ≥ 5.13): a second, path-based file rule set, plus TCP and scope
rules where the kernel's Landlock ABI has them.

Three system calls (``landlock_create_ruleset``, ``landlock_add_rule``,
``landlock_restrict_self``); the ruleset handles every file access right the running ABI knows,
grants read access beneath the read-only roots, every right beneath the working directory, and
read/write on a few device nodes. With ABI ≥ 4 every TCP bind and connect is refused; with
ABI ≥ 6 the process may not signal processes outside its Landlock domain nor connect to abstract
Unix sockets created outside it.
"""

from __future__ import annotations

import ctypes
import os
import stat

from . import syscalls as sc

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
TRUNCATE, IOCTL_DEV = 1 << 14, 1 << 15
#: file-system rights handled by each ABI (bits 0-12, then REFER, TRUNCATE, IOCTL_DEV)
_HANDLED = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
_CREATE_RULESET_VERSION, _RULE_PATH_BENEATH = 1, 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    try:
        return sc.syscall("landlock_create_ruleset", None, ctypes.c_size_t(0),
                          ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0


def restrict(read: list[str], write: list[str], devices: list[str]) -> str:
    """Restrict this process (and its future threads) to the rules; returns a description.

    ``no_new_privs`` must be set first. Paths that do not exist are skipped.
    """
    version = abi()
    if version < 1:
        raise OSError(38, "Landlock is not available (kernel < 5.13, or not in the LSM list)")
    fs = _HANDLED[max(v for v in _HANDLED if v <= version)]
    net = NET_BIND_TCP | NET_CONNECT_TCP if version >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    attr = _RulesetAttr(fs, net, scoped)
    size = 8 if version < 4 else 16 if version < 6 else 24
    ruleset = sc.syscall("landlock_create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size),
                         ctypes.c_uint32(0))
    try:
        rules = [(p, READ_FILE | READ_DIR) for p in read] + [(p, fs) for p in write] + \
            [(p, READ_FILE | WRITE_FILE) for p in devices]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    rights &= _FILE_RIGHTS
                rule = _PathBeneathAttr(rights & fs, fd)
                sc.syscall("landlock_add_rule", ctypes.c_int(ruleset),
                           ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                           ctypes.c_uint32(0))
            finally:
                os.close(fd)
        sc.syscall("landlock_restrict_self", ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    extras = (["tcp bind/connect refused"] if net else []) + \
        (["signals and abstract sockets scoped"] if scoped else [])
    return f"ABI {version}: files" + "".join(f", {e}" for e in extras)

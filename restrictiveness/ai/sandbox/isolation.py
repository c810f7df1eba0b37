"""The parent's half of the kernel isolation: what the child will see (the mount plan, the
Landlock rules), which backend builds it, and the command that starts the child.

Backends: **bubblewrap** (``bwrap``, the Debian/Fedora package ``bubblewrap``), used when it is
on ``PATH``, builds the namespaces and the file system; otherwise the **built-in** backend does
the same with a few system calls through ctypes (:mod:`._child.namespaces`). Either way the
child then drops its privileges and applies Landlock and seccomp itself (:mod:`._child.main`),
and checks every layer from inside before any untrusted code runs. ``RX_SANDBOX_BACKEND``
(``bwrap`` or ``builtin``) forces a backend.
"""

from __future__ import annotations

import ctypes.util
import functools
import importlib.util
import os
import shutil
import sys
import zlib
from pathlib import Path

from ...shared.exceptions import SandboxUnavailableError
from ._child import landlock

__all__ = ["CHILD_DIR", "BOOTSTRAP", "backend", "package_locations", "read_roots", "mount_plan",
           "child_config", "command", "libseccomp", "pyseccomp_location", "REMEDIES",
           "unavailable"]

#: The directory of the code run inside the child.
CHILD_DIR = Path(__file__).resolve().parent / "_child"
#: ``python -I -B -c BOOTSTRAP CHILD_DIR config.json`` loads the child's code by path.
BOOTSTRAP = ("import importlib.util as u, sys\n"
             "s = u.spec_from_file_location('rx_sandbox_child', sys.argv[1] + '/__init__.py', "
             "submodule_search_locations=[sys.argv[1]])\n"
             "m = u.module_from_spec(s)\nsys.modules[s.name] = m\ns.loader.exec_module(m)\n"
             "from rx_sandbox_child.main import main\nmain(sys.argv[2])\n")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_LIB_DIRS = ("/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64",
             "/usr/libx32", "/usr/local/lib")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/usr/share/zoneinfo")
#: Host paths the child must not see (checked from inside when they exist here).
_HIDDEN = ("/etc/passwd", "/etc/hostname", "/home", "/var", "/root")
# uids of sandboxes started by root: one per working directory (so an agent's runs share
# files), above every uid a system hands out
_UID_BASE, _UID_SPAN = 1_800_000_000, 100_000_000


def backend() -> str:
    """``"bwrap"`` when bubblewrap is on PATH (or forced), else ``"builtin"``."""
    forced = os.environ.get("RX_SANDBOX_BACKEND", "")
    if forced in ("bwrap", "builtin"):
        return forced
    return "bwrap" if shutil.which("bwrap") else "builtin"


@functools.lru_cache(maxsize=1)
def libseccomp() -> str | None:
    """The soname of the system's libseccomp, or None."""
    return ctypes.util.find_library("seccomp")


@functools.lru_cache(maxsize=1)
def pyseccomp_location() -> str | None:
    """Where the ``pyseccomp`` module lives, or None when it is not installed."""
    spec = importlib.util.find_spec("pyseccomp")
    return os.path.realpath(spec.origin) if spec and spec.origin else None


def _within(path: str, bases) -> bool:
    return any(path == b or path.startswith(b.rstrip("/") + "/") for b in bases)


def package_locations(names: frozenset) -> list[str]:
    """Directories of the third-party packages among ``names`` (real paths)."""
    found = []
    for name in sorted(names - set(sys.stdlib_module_names)):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None:
            found += [os.path.realpath(loc) for loc in spec.submodule_search_locations or []]
    return found


@functools.lru_cache(maxsize=32)
def read_roots(names: frozenset) -> tuple[str, ...]:
    """Directories (and files) the child may read: the Python installation, allowed packages
    found outside it, the child's own code, pyseccomp and the system's shared libraries."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                              sys.base_exec_prefix)}
    roots = set(prefixes) | {str(CHILD_DIR)}
    for loc in package_locations(names):
        site = os.path.dirname(loc)  # bundled libraries (numpy.libs) sit beside a package
        roots.add(site if site.endswith(("site-packages", "dist-packages")) else loc)
    seccomp = pyseccomp_location()
    if seccomp:
        roots.add(seccomp)
    for p in _LIB_DIRS + _SYSTEM_FILES:
        if os.path.exists(p) and not os.path.islink(p):
            roots.add(p)
    present = sorted(r for r in roots if os.path.exists(r))
    return tuple(r for r in present if not _within(r, [b for b in present if b != r]))


def mount_plan(workdir: str, roots: tuple[str, ...]) -> dict:
    """The file system the child sees: ``roots`` read-only, the working directory read-write,
    the top-level symlinks the loader needs, ``/proc`` of its own and five device nodes."""
    entries = [{"kind": "ro", "path": r} for r in roots if not _within(workdir, [r])]
    for link in _LIB_DIRS + ("/etc/localtime",):
        if os.path.islink(link) and not _within(link, roots):
            entries.append({"kind": "symlink", "path": link, "target": os.readlink(link)})
    entries += [{"kind": "dev", "path": d} for d in _DEVICES if os.path.exists(d)]
    entries.append({"kind": "proc", "path": "/proc"})
    entries.append({"kind": "rw", "path": workdir})
    return {"base": os.path.join(workdir, ".sandbox", "root"), "entries": entries}


@functools.lru_cache(maxsize=1)
def _host_namespaces() -> dict[str, int]:
    names = ["pid", "net", "mnt", "ipc", "uts"] + (["user"] if os.geteuid() != 0 else [])
    return {n: os.stat(f"/proc/self/ns/{n}").st_ino for n in names}


def sandbox_uid(workdir: str) -> int | None:
    """The uid a root-started sandbox runs as (None when not root: the caller's own)."""
    if os.geteuid() != 0:
        return None
    return _UID_BASE + zlib.crc32(workdir.encode()) % _UID_SPAN


def child_config(workdir: str, names: frozenset, use: str) -> dict:
    """The isolation part of the child's configuration."""
    roots = read_roots(names)
    plan = mount_plan(workdir, roots)
    uid = sandbox_uid(workdir)
    visible = [e["path"] for e in plan["entries"]]
    hidden = [p for p in _HIDDEN if os.path.lexists(p) and not _within(p, visible)
              and not any(_within(v, [p]) for v in visible)]
    return {"backend": use, "plan": plan, "uid": uid, "gid": uid, "libseccomp": libseccomp(),
            "host_ns": _host_namespaces(), "hidden": hidden,
            "landlock": {"read": list(roots) + ["/proc"], "write": [workdir],
                         "devices": [d for d in _DEVICES if os.path.exists(d)]}}


def command(python: list[str], cfg: dict) -> list[str]:
    """The command that starts the child: ``python`` itself, or wrapped by bubblewrap."""
    if cfg.get("isolation") != "full" or cfg["backend"] != "bwrap":
        return python
    args = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--unshare-pid",
            "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "sandbox"]
    # CAP_SYS_ADMIN: the child mounts the working directory's capped tmpfs itself (bwrap's
    # --size has no nr_inodes), then drops it; CAP_SETPCAP lets it empty its bounding set
    if os.geteuid() != 0:
        args += ["--unshare-user", "--uid", str(os.getuid()), "--gid", str(os.getgid()),
                 "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]
    else:  # bwrap runs privileged; the child switches to its own uid, then drops these
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add",
                 "CAP_SETPCAP", "--cap-add", "CAP_SYS_ADMIN"]
    flag = {"ro": "--ro-bind", "rw": "--bind", "dev": "--dev-bind"}
    entries = cfg["plan"]["entries"]
    bound = [e["path"] for e in entries if e["kind"] in ("ro", "rw")]
    parents = {str(p) for e in entries for p in Path(e["path"]).parents
               if str(p) != "/" and not _within(str(p), bound)}
    for d in sorted(parents):  # bwrap would make them 0700: unreadable after the uid switch
        args += ["--perms", "0755", "--dir", d]
    for e in entries:
        if e["kind"] == "symlink":
            args += ["--symlink", e["target"], e["path"]]
        elif e["kind"] == "proc":
            args += ["--proc", e["path"]]
        else:
            args += [flag[e["kind"]], e["path"], e["path"]]
    return args + ["--remount-ro", "/", "--chdir", cfg["workdir"], "--"] + python


def landlock_abi() -> int:
    """The kernel's Landlock ABI (0: unavailable)."""
    return landlock.abi()


#: How to get each layer where it is missing.
REMEDIES = {
    "namespaces": "new PID, network, mount, IPC and UTS namespaces need root or unprivileged "
                  "user namespaces (sysctl user.max_user_namespaces > 0; Debian's "
                  "kernel.unprivileged_userns_clone=1; Ubuntu's "
                  "kernel.apparmor_restrict_unprivileged_userns=0); inside a container, allow "
                  "unshare (e.g. docker run --security-opt seccomp=unconfined) or install "
                  "bubblewrap",
    "filesystem": "building the private file system needs mount rights in the new namespace and "
                  "a /proc that is not masked (containers often mask it); installing "
                  "bubblewrap (apt-get install bubblewrap) may help",
    "unprivileged-uid": "the sandbox switches from root to an unused uid; the kernel refused",
    "capabilities": "dropping capabilities needs Linux >= 4.3 (ambient sets)",
    "no-new-privs": "no_new_privs needs Linux >= 3.5",
    "rlimits": "the kernel refused a resource limit",
    "landlock": "Landlock needs Linux >= 5.13 built with CONFIG_SECURITY_LANDLOCK=y and "
                "'landlock' in the active LSM list (the lsm= boot parameter)",
    "seccomp": "install the Python package pyseccomp (pip install pyseccomp) and the system "
               "library libseccomp (Debian/Ubuntu: apt-get install libseccomp2; Fedora: dnf "
               "install libseccomp)",
}


def unavailable(layer: str, detail: str) -> SandboxUnavailableError:
    """The error for a required layer that cannot be set up."""
    remedy = REMEDIES.get(layer, "see rx.sandbox_status()")
    return SandboxUnavailableError(
        f"the sandbox's {layer!r} isolation layer is unavailable on this machine ({detail}). "
        f"To get it: {remedy}. To run untrusted programs with weaker isolation anyway, pass "
        "SandboxLimits(isolation='guard-only') explicitly (in-process guard and resource "
        "limits only; recorded with every fit).")

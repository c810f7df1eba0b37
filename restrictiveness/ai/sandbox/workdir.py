"""The parent's handling of a run's working directory: making it with a lock that marks its
owner alive, measuring it while the child runs, opening what the child wrote without trusting
it, deleting it afterwards (iteratively, relative to directory descriptors, so neither depth
nor path length can make it fail), and reclaiming those that killed processes left."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import math
import os
import re
import stat
import tempfile
import warnings
from pathlib import Path

import numpy as np

from ...shared.exceptions import ConfigurationError
from ._child.protocol import STATUS_BYTES
from .isolation import sandbox_uid

__all__ = ["OwnedDirectory", "reclaim_stale", "PREFIXES", "tree_usage", "held_bytes", "remove_tree",
           "copy_tree", "open_regular", "open_directory", "load_array", "read_status"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Prefixes of the temporary directories the package makes (a run's, an Agent's workspace);
#: :func:`reclaim_stale` considers no other name.
PREFIXES = ("rx-sandbox-", "rx-agent-")
# a lock file as tempfile.mkstemp names it: a prefix, eight random characters, the suffix
_LOCK_NAME = re.compile("(?:" + "|".join(map(re.escape, PREFIXES)) + r")[a-z0-9_]{8}\.lock")
# (process id, temporary directory) pairs already swept: a fork inherits the set, but a fit's
# child killed at its limit may leave a directory, which the next child's first use reclaims
_swept: set[tuple[int, str]] = set()
# flock's errors on a file system that has no locks
_NO_LOCKS = {errno.EOPNOTSUPP, errno.ENOLCK, errno.ENOSYS}


class OwnedDirectory:
    """A fresh directory ``<tmp>/<prefix>XXXXXXXX`` and the lock that marks its owner alive.

    The owner holds an exclusive ``flock`` on the sibling ``<prefix>XXXXXXXX.lock``. The kernel
    drops it when the last process holding it ends, however it ends (``kill -9``, the OOM
    killer), so :func:`reclaim_stale` tells a dead owner's directory from a live one's without
    trusting process ids, which the system reuses. Forked children (``fit_timeout``'s) inherit
    the lock and keep the directory alive with it. The lock file lies beside the directory, out
    of reach of the program run inside (full isolation shows it its working directory alone).
    The first directory a process makes in a temporary directory first reclaims what killed
    processes left there.

    Parameters
    ----------
    prefix : str
        Start of the directory's name: one of :data:`PREFIXES`, the names a sweep knows
        (another would never be reclaimed, so it is refused).
    dir : str, optional
        Where to make it (default ``tempfile.gettempdir()``).

    Examples
    --------
    >>> import tempfile
    >>> owned = OwnedDirectory("rx-sandbox-", dir=tempfile.mkdtemp())
    >>> owned.path.is_dir(), owned.path.with_name(owned.path.name + ".lock").is_file()
    (True, True)
    >>> owned.remove(), owned.path.exists()
    (True, False)
    """

    def __init__(self, prefix: str, dir: str | None = None) -> None:
        if prefix not in PREFIXES:
            raise ConfigurationError(
                f"prefix {prefix!r}: the package's temporary directories are named "
                f"{' or '.join(map(repr, PREFIXES))}, the names a sweep reclaims after their "
                "process is killed")
        tmp = os.path.abspath(dir if dir is not None else tempfile.gettempdir())
        if (os.getpid(), tmp) not in _swept:
            _swept.add((os.getpid(), tmp))
            reclaim_stale(tmp)
        while True:
            fd, lock = tempfile.mkstemp(prefix=prefix, suffix=".lock", dir=tmp)
            try:
                # locked before the directory exists, so no sweep ever sees it unlocked;
                # a sweep that took the new file for an orphan deletes it: take another
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.path.samestat(os.fstat(fd), os.lstat(lock)):
                    os.mkdir(lock[:-5], 0o700)
                    break
            except (BlockingIOError, FileNotFoundError):
                pass
            except FileExistsError:  # a directory of that name is someone else's
                os.unlink(lock)
            except OSError as exc:
                if exc.errno not in _NO_LOCKS:
                    os.close(fd)
                    raise
                # a file system without locks (some FUSE and 9p mounts): a directory as
                # before, which no sweep can tell from a live one's, so none will reclaim
                os.unlink(lock)
                os.close(fd)
                warnings.warn(f"{tmp} does not support file locks: a sandbox directory there "
                              "is not reclaimed if its process is killed (set TMPDIR to a "
                              "local file system to have it reclaimed)", RuntimeWarning,
                              stacklevel=3)
                self._fd: int | None = None
                self._lock = ""
                self.path = Path(tempfile.mkdtemp(prefix=prefix, dir=tmp)).resolve()
                return
            except BaseException:
                # (Ctrl-C after the mkdir, say) the lock file stays, unheld once closed, so a
                # sweep takes the directory; without it no sweep ever would
                os.close(fd)
                raise
            os.close(fd)
        self._fd = fd
        self._lock = lock
        self.path = Path(lock[:-5]).resolve()

    def remove(self) -> bool:
        """Delete the directory, then its lock file and lock; returns whether it is gone. A
        directory that could not be deleted keeps its lock file, unheld, so that a later
        sweep (any process's first sandbox use) retries."""
        gone = remove_tree(self.path)
        if self._fd is not None:
            if gone:
                try:
                    os.unlink(self._lock)
                except OSError:
                    pass
            os.close(self._fd)
            self._fd = None
        return gone


def reclaim_stale(directory: str | os.PathLike) -> list[str]:
    """Delete the directories in ``directory`` whose owner (an :class:`OwnedDirectory`'s
    process) has ended; returns their paths.

    A candidate is named ``<prefix>XXXXXXXX`` (:data:`PREFIXES`), is a directory, not a link,
    owned by this user (or, for root, by the uid a root-started sandbox gave it), beside a
    regular lock file of this user's that no process holds: the lock is tried without
    waiting, and a held one (a study running now in another terminal) is left alone. The
    directory goes by :func:`remove_tree`, which follows no link and undoes a program's
    ``chmod 000`` and enters no mount; then the lock file, which stays (with a warning) when
    part of the tree would not go, so the next process's sweep retries. Directories without a
    lock file (made by versions before 0.1.0) are left: nothing tells whether their owner still
    runs. Never raises.

    Parameters
    ----------
    directory : str or path
        A temporary directory (``tempfile.gettempdir()`` for the package's own).

    Returns
    -------
    list of str
        The directories deleted.

    Examples
    --------
    >>> import tempfile
    >>> reclaim_stale(tempfile.mkdtemp())
    []
    """
    directory = os.path.abspath(os.fspath(directory))
    reclaimed: list[str] = []
    left: list[str] = []  # stale directories that would not go
    try:
        top = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return reclaimed
    try:
        with os.scandir(top) as it:
            locks = [entry.name for entry in it if _LOCK_NAME.fullmatch(entry.name)]
        for lock in locks:
            try:
                path = _reclaim(top, directory, lock, left)
            except OSError:  # gone meanwhile, a link, not ours
                continue
            if path is not None:
                reclaimed.append(path)
    except OSError:
        pass
    finally:
        os.close(top)
    if left:
        try:  # (warnings as errors: the sweep is clean-up, it must not fail the run)
            warnings.warn(f"could not delete {', '.join(left)}, left by processes that have "
                          "ended; the next process's sweep retries", RuntimeWarning,
                          stacklevel=2)
        except Exception:
            pass
    return reclaimed


def _reclaim(top: int, directory: str, lock: str, left: list[str]) -> str | None:
    """Delete the directory of the lock file ``lock`` (in ``top``) if its owner has ended, and
    the lock file; returns the directory's path if one was deleted (appended to ``left`` if
    it would not go)."""
    fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=top)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # its owner runs
            return None
        # the owner deletes its lock file before it lets go: one still there is the dead one's
        if not os.path.samestat(info, os.stat(lock, dir_fd=top, follow_symlinks=False)):
            return None
        name, path = lock[:-5], os.path.join(directory, lock[:-5])
        try:
            found = os.stat(name, dir_fd=top, follow_symlinks=False)
        except FileNotFoundError:  # ended between making its lock and its directory
            found = None
        if found is not None:
            if not stat.S_ISDIR(found.st_mode) or found.st_uid not in _owners(path):
                return None
            if not remove_tree(path):
                left.append(path)
                return None
        os.unlink(lock, dir_fd=top)
        return path if found is not None else None
    finally:
        os.close(fd)


def _owners(path: str) -> set[int]:
    """The uids one of our directories may have: ours, and under root the sandbox's uid,
    which the directory is handed to before its program starts."""
    uid = sandbox_uid(os.path.realpath(path))
    return {os.geteuid()} if uid is None else {os.geteuid(), uid}


def tree_usage(root: Path, max_bytes: int, max_entries: int) -> tuple[int, int] | None:
    """Bytes of files and directories and number of entries under ``root``; counting stops
    once either passes
    its limit. None when part of the tree could not be measured: a directory on the way down
    moved elsewhere, or one whose read or search right the child took away again while it was
    counted (a parent that is not root shares the child's uid, and gives those rights back to
    the owner first: see :func:`_open_counted`).

    Walked like :func:`remove_tree`, relative to directory descriptors and without following
    links, because the child is running: paths past ``PATH_MAX`` would hide what lies below
    them, and a directory swapped for a link would lead the count outside. The way back up
    (``..``) is checked against the directory that was left, since the child may move it.
    """
    count = [0, 0]  # bytes, entries

    def scan(fd: int) -> list[str] | None:
        """Count the directory ``fd``; its subdirectories, or None once past a limit."""
        subdirs = []
        try:
            with os.scandir(fd) as it:
                for entry in it:
                    count[1] += 1
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            subdirs.append(entry.name)
                        info = entry.stat(follow_symlinks=False)
                        # blocks too: space reserved past the end has no size; and a
                        # directory's own (4 KiB each on ext4: max_files empty directories
                        # held 400 MB past the default cap uncounted)
                        count[0] += max(info.st_size, info.st_blocks * 512)
                    except PermissionError:  # its search right taken away meanwhile
                        raise _Unmeasured from None
                    except OSError:
                        continue
                    if count[0] > max_bytes or count[1] > max_entries:
                        return None
        except OSError:
            pass
        return subdirs

    try:
        fd = _open_counted(str(root))
    except PermissionError:
        return None
    except OSError:
        return 0, 0
    trail: list = []
    try:
        pending = scan(fd)
        while pending is not None:
            if pending:
                try:
                    child = _open_counted(pending.pop(), fd)
                except PermissionError:
                    return None
                except OSError:  # gone meanwhile, or replaced by a link
                    continue
                info = os.fstat(fd)
                trail.append(((info.st_dev, info.st_ino), pending))
                os.close(fd)
                fd = child
                pending = scan(fd)
                continue
            if not trail:
                break
            up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = up
            left, pending = trail.pop()
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != left:
                return None
    except (OSError, _Unmeasured):
        return None
    finally:
        os.close(fd)
    return count[0], count[1]


class _Unmeasured(Exception):
    """A file of the tree could not be measured."""


def _open_counted(name: str, dir_fd: int | None = None) -> int:
    """Open the directory ``name`` (of ``dir_fd``) to count what it holds.

    A parent that is not root shares the child's uid, so a directory whose read or search
    right the program took away (``chmod 0``; ``0o400`` lists names whose sizes cannot be
    read) could not be counted, and the run of an honest program that locked a directory
    was stopped. The owner's two rights are given back first, on that very directory (a
    handle that follows no link), as the clean-up does (:func:`_enter`).
    """
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        if os.geteuid() == 0 or not hasattr(os, "O_PATH"):
            raise
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                         dir_fd=dir_fd)
        try:
            here = f"/proc/self/fd/{handle}"  # names the directory the handle holds
            os.chmod(here, stat.S_IMODE(os.fstat(handle).st_mode) | stat.S_IRUSR | stat.S_IXUSR)
            fd = os.open(here, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        finally:
            os.close(handle)
    mode = os.fstat(fd).st_mode
    if os.geteuid() != 0 and not mode & stat.S_IXUSR:
        try:
            os.fchmod(fd, stat.S_IMODE(mode) | stat.S_IXUSR)
        except OSError:
            os.close(fd)
            raise
    return fd


def held_bytes(pid: int) -> int | None:
    """Bytes of deleted files that the process ``pid`` and its descendants still hold open or
    mapped, which no directory names and :func:`tree_usage` cannot see.

    A file unlinked while open (or made with ``O_TMPFILE``, or mapped and then unlinked) keeps
    its blocks until the last reference goes: a program holding a thousand of them kept
    hundreds of times its disk limit on the host's disk while the parent counted an empty
    directory. Each task's descriptor table is read (a thread may have its own) and each
    process's mappings; every deleted regular file counts once. Processes that end or cannot
    be read meanwhile are skipped (as root, the sandbox's case, every one can be read).

    Parameters
    ----------
    pid : int
        The child the parent started (its whole tree is read).

    Returns
    -------
    int or None
        Bytes (the larger of size and allocated blocks) of the deleted files held; None when
        a deleted file that a process maps cannot be measured (a parent that is not root may
        not follow ``/proc/<pid>/map_files``), since one mapped page may hold any size.

    Examples
    --------
    >>> import os, tempfile
    >>> fd = os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR, 0o600)
    >>> _ = os.write(fd, b"x" * 5000)
    >>> held_bytes(os.getpid()) >= 5000
    True
    >>> os.close(fd)
    """
    seen: dict[tuple[int, int], int] = {}

    def count(link: str) -> bool:
        """Count the file behind ``link``; False if it may not be read."""
        try:
            info = os.stat(link)
        except PermissionError:
            return False
        except OSError:  # closed, unmapped or gone meanwhile
            return True
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 0:
            seen[info.st_dev, info.st_ino] = max(info.st_size, info.st_blocks * 512)
        return True

    pending, done = [pid], set()
    while pending:
        proc = pending.pop()
        if proc in done:
            continue
        done.add(proc)
        try:
            tasks = [int(t) for t in os.listdir(f"/proc/{proc}/task")]
        except OSError:
            continue
        tables: list[int] = []  # a task of each descriptor table read
        for task in tasks:
            base = f"/proc/{proc}/task/{task}"
            with contextlib.suppress(OSError):  # apart: its absence must not hide the table
                with open(f"{base}/children", "rb") as fh:
                    pending += [int(p) for p in fh.read().split()]
            try:
                if any(_same_files(task, other) for other in tables):
                    continue  # threads share one table as a rule: read it once, not 64 times
                for fd in os.listdir(f"{base}/fd"):
                    count(f"{base}/fd/{fd}")
                tables.append(task)
            except OSError:
                continue
        # Threads share one memory map, but a leader that ended alone (SYS_exit) shows none:
        # read it through the first task that shows one (/proc/<tid> names a thread too).
        for task in tasks:
            try:
                with open(f"/proc/{task}/maps", "rb") as fh:
                    fields = [line.split() for line in fh]
            except OSError:  # ended meanwhile, or not ours to read (the trusted relay's)
                continue
            if fields:
                break
        else:
            continue
        # one mapping per file (device and inode fields): thousands may map one
        ranges = {tuple(f[3:5]): f[0].decode() for f in fields if f[-1:] == [b"(deleted)"]}
        for (device, inode), span in ranges.items():
            if not count(f"/proc/{task}/map_files/{span}") \
                    and (_device(device), int(inode)) not in seen:
                return None  # not counted through a descriptor either
    return sum(seen.values())


def _device(field: bytes) -> int:
    """The device number of a maps line's ``major:minor`` field (hexadecimal)."""
    major, minor = field.split(b":")
    return os.makedev(int(major, 16), int(minor, 16))


# kcmp(2)'s number where it is known: elsewhere every task's table is read
_KCMP = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)
_KCMP_FILES = 2


def _same_files(a: int, b: int) -> bool:
    """Do the tasks ``a`` and ``b`` share one descriptor table? False when it cannot tell."""
    return _KCMP is not None and _libc().syscall(_KCMP, a, b, _KCMP_FILES, 0, 0) == 0


@functools.lru_cache(maxsize=1)
def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _scan(fd: int) -> list[str]:
    """Unlink the non-directories of the directory ``fd``; return its subdirectories."""
    subdirs = []
    with os.scandir(fd) as it:
        for entry in it:
            try:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.name)
                else:
                    os.unlink(entry.name, dir_fd=fd)
            except OSError:
                continue
    return subdirs


def _enter(name: str, dir_fd: int, mount: tuple | None = None) -> int:
    """Open the subdirectory ``name`` of ``dir_fd`` to empty it, giving it back the permissions
    a program may have removed (chmod 000): on that very directory, never on what a link put
    in its place would lead to (a program may still run when a dead parent's tree is swept).
    ``mount``: the tree's (:func:`_mount`, default ``dir_fd``'s), which ``name`` must be on."""
    if not hasattr(os, "O_PATH"):  # not Linux: no handle on a directory without reading it
        try:
            os.chmod(name, 0o700, dir_fd=dir_fd, follow_symlinks=False)
        except (OSError, NotImplementedError):
            pass
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    try:
        # a mount inside the tree (a bind mount made to inspect a killed run) is not the
        # tree's: emptying it would delete its source, outside
        if _mount(handle) != (_mount(dir_fd) if mount is None else mount):
            raise OSError(errno.EXDEV, f"{name} is a mount point")
        here = f"/proc/self/fd/{handle}"  # names the directory the handle holds
        try:
            os.chmod(here, 0o700)
        except FileNotFoundError:  # no /proc: a directory without permissions stays
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except OSError:  # not ours to change
            pass
        return os.open(here, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    finally:
        os.close(handle)


def _mount(fd: int) -> tuple[int, int | None]:
    """The file system and the mount (Linux's ``mnt_id``, which also tells a bind mount of the
    same file system apart) of the file ``fd`` holds."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as fh:
            mount = next((int(line.split()[1]) for line in fh if line.startswith("mnt_id:")),
                         None)
    except OSError:  # no /proc: the file system alone
        mount = None
    return os.fstat(fd).st_dev, mount


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def remove_tree(path: str | os.PathLike) -> bool:
    """Delete ``path`` (a file, link or directory tree); never raises, never follows a link.

    Depth first without recursion, holding two descriptors at a time and the names on the
    path down, so a tree thousands of levels deep or with paths past ``PATH_MAX`` goes too.
    A program still running inside (a dead parent's, see :func:`reclaim_stale`) can make it
    fail, never lead it outside: the way back up is checked like :func:`tree_usage`'s.
    Returns whether ``path`` is gone.
    """
    path = os.path.abspath(os.fspath(path))
    parent = name = fd = None
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)
            return True
        parent = os.open(os.path.dirname(path), _DIR_FLAGS)
        name = os.path.basename(path)
        mount = _mount(parent) if hasattr(os, "O_PATH") else None  # once: the whole tree's
        fd = _enter(name, parent, mount)
        pending, trail = _scan(fd), []
        while True:
            if pending:
                sub = pending.pop()
                child = _enter(sub, fd, mount)
                trail.append((sub, pending, _identity(fd)))
                os.close(fd)
                fd, pending = child, _scan(child)
                continue
            if not trail:
                break
            up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = up
            sub, pending, left = trail.pop()
            if _identity(fd) != left:  # moved meanwhile: ".." no longer leads back
                raise OSError(f"{path} changed while it was being deleted")
            os.rmdir(sub, dir_fd=fd)
        os.close(fd)
        fd = None
        os.rmdir(name, dir_fd=parent)
    except FileNotFoundError:
        pass
    except OSError:
        return not os.path.lexists(path)
    finally:
        for handle in (fd, parent):
            if handle is not None:
                os.close(handle)
    return not os.path.lexists(path)


def open_regular(path: str | os.PathLike, max_bytes: int, dir_fd: int | None = None):
    """Open a file the child wrote, refusing anything but a regular file of bounded size.

    A FIFO or device in its place would otherwise block or flood the parent; symlinks are
    not followed. ``path`` is relative to ``dir_fd`` when given (the parent's descriptor of a
    directory the child may have renamed and replaced by a link since).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC,
                 dir_fd=dir_fd)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        os.close(fd)
        raise ValueError(f"{os.path.basename(path)} is not a regular file of at most "
                         f"{max_bytes} bytes")
    return os.fdopen(fd, "rb")


def open_directory(name: str, dir_fd: int | None = None) -> int:
    """A descriptor of the directory ``name`` (relative to ``dir_fd``), never through a link."""
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def load_array(name: str, max_bytes: int, dir_fd: int) -> np.ndarray:
    """An output array the child wrote (``name`` in the directory ``dir_fd``): a ``.npy``
    file of a numeric dtype whose header agrees with its size, checked before anything is
    allocated, since a header may claim any dtype and shape. Raises ValueError or OSError."""
    with open_regular(name, max_bytes, dir_fd) as fh:
        version = np.lib.format.read_magic(fh)
        if version not in ((1, 0), (2, 0)):
            raise ValueError(f"format version {version} is not written by numpy.save")
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
            np.lib.format.read_array_header_2_0
        shape, _, dtype = read(fh)
        if dtype.kind not in "biufc":
            raise ValueError(f"dtype {dtype} is not numeric")
        data = os.fstat(fh.fileno()).st_size - fh.tell()
        if math.prod(shape) * dtype.itemsize != data:
            raise ValueError(f"its header claims shape {shape} of {dtype}, but it holds "
                             f"{data} bytes of data")
        fh.seek(0)
        return np.load(fh, allow_pickle=False)


def read_status(control_fd: int) -> dict | None:
    """The status the child's driver wrote into the control directory ``control_fd``, or
    None; one larger than :data:`~._child.protocol.STATUS_BYTES` (which the driver never
    writes: a program wrote it) reads as an output-limit failure, unparsed."""
    try:
        with open_regular("status.json", 2**62, control_fd) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > STATUS_BYTES:
                return {"ok": False, "reason": "output-limit",
                        "message": f"the program wrote a status file of {size} bytes, more "
                                   f"than the {STATUS_BYTES} the parent reads"}
            status = json.loads(fh.read(STATUS_BYTES + 1).decode("utf-8"))
        # "\ud800" escapes decode to lone surrogates, which no UTF-8 writer accepts (a study
        # with one in a failure message could not be saved): replace them
        status = json.loads(json.dumps(status, ensure_ascii=False).encode("utf-8", "replace"))
    except (OSError, ValueError, RecursionError):  # nested past the parser's depth
        return None
    return status if isinstance(status, dict) else None


def copy_tree(src: int, dst: int, max_bytes: int, uid: int | None = None,
              skip: frozenset = frozenset()) -> int | None:
    """Copy what the directory ``src`` holds into the directory ``dst``; returns the bytes
    the copies take in ``dst`` (data blocks and directories' own), or None once past
    ``max_bytes`` (the copy stops there).

    Used both ways across a run's capped tmpfs (:mod:`._child.workspace`): the working
    directory's files in before the program starts, and a kept directory's (an agent's) back
    out after its end, when the tree is the program's and nothing of it is trusted. So:
    relative to directory descriptors without recursion and without following any link (a
    tree thousands of levels deep goes like any other; the way back up is checked like
    :func:`remove_tree`'s); regular files, directories and symbolic links only (a FIFO,
    socket or device is left behind, never opened); holes stay holes (a file's size may be
    any up to the file-size limit, its data no more than the tmpfs held); every name of a
    hard-linked file becomes a copy of its own, counted as such; files get mode 0600 and
    directories 0700 (a ``chmod 000`` of the program's is not carried over), owned by ``uid``
    when given. ``skip``: names at the top of ``src`` not copied.
    """
    used = 0
    s, d = os.dup(src), os.dup(dst)
    mount = _mount(s) if hasattr(os, "O_PATH") else None
    try:
        pending = [e for e in _listing(s) if e[0] not in skip]
        trail: list = []
        while True:
            if pending:
                name, is_dir = pending.pop()
                if is_dir:
                    try:
                        child_s = _enter(name, s, mount)
                    except OSError:  # gone meanwhile, or a mount point
                        continue
                    try:
                        os.mkdir(name, 0o700, dir_fd=d)
                        child_d = os.open(name, _DIR_FLAGS, dir_fd=d)
                    except BaseException:
                        os.close(child_s)
                        raise
                    if uid is not None:
                        os.fchown(child_d, uid, uid)
                    used += os.fstat(child_d).st_blocks * 512
                    if used > max_bytes:  # no more than the cap, not one entry past it
                        os.close(child_s)
                        os.close(child_d)
                        os.rmdir(name, dir_fd=d)
                        return None
                    trail.append((pending, _identity(s), _identity(d)))
                    os.close(s)
                    os.close(d)
                    s, d, pending = child_s, child_d, _listing(child_s)
                else:
                    copied = _copy_entry(name, s, d, max_bytes - used, uid)
                    if copied is None:
                        return None
                    used += copied
                continue
            if not trail:
                return used
            for i, fd in enumerate((s, d)):
                up = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                if i == 0:
                    s = up
                else:
                    d = up
            pending, left_s, left_d = trail.pop()
            if (_identity(s), _identity(d)) != (left_s, left_d):
                raise OSError(errno.ESTALE, "a directory moved while it was copied")
    finally:
        os.close(s)
        os.close(d)


def _listing(fd: int) -> list[tuple[str, bool]]:
    """(name, is a directory) of the entries of the directory ``fd``, no link followed."""
    with os.scandir(fd) as it:
        return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in it]


def _copy_entry(name: str, src: int, dst: int, room: int, uid: int | None) -> int | None:
    """Copy the non-directory ``name`` of ``src`` into ``dst``: bytes it takes there (None
    once past ``room``); 0 for what is not copied (a FIFO, socket or device, or gone)."""
    try:
        info = os.stat(name, dir_fd=src, follow_symlinks=False)
    except FileNotFoundError:
        return 0
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(name, dir_fd=src), name, dir_fd=dst)
        if uid is not None:
            os.chown(name, uid, uid, dir_fd=dst, follow_symlinks=False)
        taken = os.stat(name, dir_fd=dst, follow_symlinks=False).st_blocks * 512
        if taken > room:
            os.unlink(name, dir_fd=dst)
            return None
        return taken
    if not stat.S_ISREG(info.st_mode):
        return 0
    try:
        fd_in = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                        dir_fd=src)
    except PermissionError:  # its read right taken away (the owner's: give it back)
        handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src)
        try:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                return 0
            os.chmod(f"/proc/self/fd/{handle}", 0o600)
            fd_in = os.open(f"/proc/self/fd/{handle}", os.O_RDONLY | os.O_NONBLOCK |
                            os.O_CLOEXEC)
        finally:
            os.close(handle)
    try:
        size = os.fstat(fd_in).st_size
        if not stat.S_ISREG(os.fstat(fd_in).st_mode):  # swapped since the stat
            return 0
        fd_out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                         os.O_CLOEXEC, 0o600, dir_fd=dst)
        copied = _copy_data(fd_in, fd_out, size, room, uid)
        if copied is None:  # no partial file past the cap left behind
            os.unlink(name, dir_fd=dst)
        return copied
    finally:
        os.close(fd_in)


def _copy_data(fd_in: int, fd_out: int, size: int, room: int, uid: int | None) -> int | None:
    """Copy the data ranges of ``fd_in`` (``size`` bytes long) into ``fd_out``, holes left
    holes; the bytes it takes there, or None once past ``room``. Closes ``fd_out``."""
    try:
        if uid is not None:
            os.fchown(fd_out, uid, uid)
        offset = 0
        while offset < size:
            try:
                start = os.lseek(fd_in, offset, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # nothing but a hole to the end
                    break
                raise
            end = min(os.lseek(fd_in, start, os.SEEK_HOLE), size)
            while start < end:
                chunk = os.pread(fd_in, min(end - start, 2**20), start)
                if not chunk:
                    break
                os.pwrite(fd_out, chunk, start)
                start += len(chunk)
                if os.fstat(fd_out).st_blocks * 512 > room:
                    return None
            offset = max(end, offset + 1)
        os.ftruncate(fd_out, size)
        taken = os.fstat(fd_out).st_blocks * 512
        return taken if taken <= room else None
    finally:
        os.close(fd_out)

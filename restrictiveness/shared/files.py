"""Files that are never seen half-written, and locks that keep two runs apart.

Every file the package writes (results, checkpoint records, tables, plots) goes through
:func:`atomic_output`: the writer fills a temporary file in the target's folder, which is then
renamed over the target in one step, so a reader (or a crash) sees the old file or the new one,
never a mixture. :class:`FileLock` is an exclusive ``fcntl.flock`` lock: checkpoints use it so
that two processes cannot both claim a directory or a replication, and the command line uses it
so that two runs cannot write the same output file. The kernel releases a lock when its holder
dies, so a killed run never leaves a stale lock behind. (``flock`` is advisory and local: it
does not protect a folder shared over NFS between machines.)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
import time
import weakref
from collections.abc import Iterator
from pathlib import Path

from .exceptions import ConfigurationError

__all__ = ["CONVENTIONS", "alive", "atomic_output", "atomic_write_bytes", "FileLock", "LockBusy"]

#: The metadata convention of every NetCDF file the package writes (CF where it fits:
#: ``long_name`` on variables, ``units`` "1" for dimensionless ratios and "s" for seconds).
CONVENTIONS = "CF-1.8"


#: Locks this process holds; a forked child drops its copies (see :func:`_drop_in_child`).
_HELD: weakref.WeakSet = weakref.WeakSet()


class LockBusy(OSError):
    """Another process holds the lock (raised by a non-blocking :meth:`FileLock.acquire`)."""


@contextlib.contextmanager
def atomic_output(target: str | os.PathLike, follow_symlinks: bool = True) -> Iterator[Path]:
    """Path of a temporary file that replaces ``target`` when the block succeeds.

    The temporary file sits in ``target``'s folder (a rename across file systems would not be
    atomic) and is removed if the block raises, so a failed or interrupted write leaves the
    previous ``target`` untouched. Its name, ``.{target name}.{pid}.{random}.tmp``, carries the
    writer's process id: a writer killed outright (SIGKILL) cannot remove it, so the next write
    of ``target`` removes the temporary files of ``target`` whose writer is dead (a killed
    ``--out`` left one in the output folder for ever, as big as the results).

    A symbolic link is written through (the file it names is replaced, the link kept), as
    ``open(target, "w")`` would, unless ``follow_symlinks`` is false (then the link itself is
    replaced: a checkpoint's own files, where a planted link must not redirect a write); a
    target that exists and is not a regular file (a device such as ``/dev/null``, a pipe) is
    refused rather than replaced.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "a.txt"
    >>> with atomic_output(out) as tmp:
    ...     _ = tmp.write_text("done")
    >>> out.read_text()
    'done'
    """
    target = given = Path(target)
    if follow_symlinks and target.is_symlink():
        # written through, as open(target, "w") writes: the rename replaced the link itself
        # with a file, and the file it names kept the previous results
        target = Path(os.path.realpath(target))
    if target.is_dir():
        raise ConfigurationError(f"cannot write {str(given)!r}: it is a folder; give a file name")
    if not target.is_symlink() and target.exists() and not target.is_file():
        # run as root, the rename replaced /dev/null itself with a regular file
        raise ConfigurationError(f"cannot write {str(given)!r}: it is not a regular file (a "
                                 "device, pipe or socket); give a file name")
    if target.parent.exists() and not target.parent.is_dir():
        raise ConfigurationError(f"cannot write {str(target)!r}: {str(target.parent)!r} is "
                                 f"a file, not a folder")
    if not target.parent.is_dir():
        raise ConfigurationError(f"cannot write {str(target)!r}: the folder "
                                 f"{str(target.parent)!r} does not exist; create it first")
    _remove_dead_writers_temporaries(target)
    try:
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.{os.getpid()}.",
                                    suffix=".tmp")
    except OSError as exc:
        # the error names the temporary file, which the caller never asked for
        raise OSError(exc.errno, f"cannot write {str(target)!r}: its folder takes no new "
                                 f"file ({exc.strerror})", str(target)) from exc
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        with open(tmp, "rb") as fh:  # on disk before the rename makes it visible
            os.fsync(fh.fileno())
        # a temporary file is its owner's alone (0600): given the mode a plain open would
        # (the replaced file's, else 0666 less the umask), results stay readable by others
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.errno is not None \
                and exc.filename in (None, name, tmp):
            # a full disk fails a write with no file name ("No space left on device"), or
            # names the temporary file: name the file being written
            raise OSError(exc.errno, exc.strerror, str(target)) from exc
        if isinstance(exc, RuntimeError) and str(exc).startswith("NetCDF:"):
            # the NetCDF library's error on a full disk names neither the file nor the cause
            # ("NetCDF: HDF error"), and was reported as a bug of this package
            raise OSError(errno.EIO, f"{exc} while writing it (a full disk or quota?)",
                          str(target)) from exc
        raise


def _mode_for(target: Path) -> int:
    """The permissions ``open(target, "w")`` would leave: the existing file's, or 0666 less
    the process's umask (read from /proc, since setting the umask to read it races with other
    threads creating files; 022 where /proc does not say)."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        pass
    umask = 0o022
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    umask = int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o666 & ~umask


def _remove_dead_writers_temporaries(target: Path) -> None:
    """Remove ``.{target name}.{pid}.{random}.tmp`` files in ``target``'s folder whose writer
    ``pid`` is dead: regular files only (a symbolic link is neither followed nor removed)."""
    pattern = re.compile(re.escape(f".{target.name}.") + r"([1-9]\d*)\.[a-z0-9_]+\.tmp")
    try:
        with os.scandir(target.parent) as entries:
            found = [(e, int(m.group(1))) for e in entries
                     if (m := pattern.fullmatch(e.name))]
    except OSError:  # an unreadable folder: the write itself reports what is wrong
        return
    for entry, pid in found:
        if entry.is_file(follow_symlinks=False) and not alive(pid):
            # gone already, or another user's in a sticky folder: tidying never fails a write
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (in doubt, it does: its file is then kept)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process; too large a number
        pass
    return True


def atomic_write_bytes(target: str | os.PathLike, data: bytes,
                       follow_symlinks: bool = True) -> None:
    """Write ``data`` to ``target`` atomically (see :func:`atomic_output`)."""
    with atomic_output(target, follow_symlinks) as tmp:
        tmp.write_bytes(data)


#: Seconds between attempts of a blocking :meth:`FileLock.acquire`.
_LOCK_POLL = 0.1


def _try_flock(fd: int) -> bool:
    """Take an exclusive ``flock`` on ``fd`` if no other open file holds one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class FileLock:
    """Exclusive advisory lock on a lock file (``fcntl.flock``), released by :meth:`release`,
    at the end of a ``with`` block, or by the kernel when the process dies.

    Parameters
    ----------
    path : str or Path
        The lock file (created if needed).
    remove : bool
        Delete the lock file on release. Safe against the unlink race: :meth:`acquire` checks
        that the file it locked is still the one at ``path`` and retries otherwise.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.lock"
    >>> with FileLock(path):
    ...     FileLock(path).acquire(blocking=False)
    Traceback (most recent call last):
    ...
    restrictiveness.shared.files.LockBusy: ...x.lock is locked by another process
    """

    def __init__(self, path: str | os.PathLike, remove: bool = False) -> None:
        self.path, self.remove = Path(path), remove
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, blocking: bool = True) -> FileLock:
        """Take the lock; without ``blocking``, raise :class:`LockBusy` if another holds it."""
        if self._fd is not None:
            return self
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                # a blocking wait polls: flock sleeping in the main thread is woken by SIGINT
                # only when the kernel gives the signal to that thread, and handled on another
                # (tqdm's monitor, a pool's threads) Ctrl-C waited for the holder to let go
                while not _try_flock(fd):
                    if not blocking:
                        raise LockBusy(f"{self.path} is locked by another process")
                    time.sleep(_LOCK_POLL)
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                _HELD.add(self)
                return self
            os.close(fd)  # its holder removed the file meanwhile: lock the new one

    def release(self) -> None:
        """Give the lock up (and delete the file when ``remove``)."""
        if self._fd is None:
            return
        if self.remove:
            self.path.unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = None
        _HELD.discard(self)

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _drop_in_child() -> None:
    # A flock belongs to the open file, which a forked worker shares: if the worker kept its
    # copy, the parent's release would not free the lock until every worker exited.
    for lock in list(_HELD):
        if lock._fd is not None:
            os.close(lock._fd)
            lock._fd = None
    _HELD.clear()


os.register_at_fork(after_in_child=_drop_in_child)

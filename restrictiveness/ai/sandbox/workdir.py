"""The parent's handling of a run's working directory: measuring it while the child runs,
opening what the child wrote without trusting it, and deleting it afterwards (iteratively,
relative to directory descriptors, so neither depth nor path length can make it fail)."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import numpy as np

__all__ = ["tree_usage", "remove_tree", "open_regular", "open_directory", "load_array",
           "read_status"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def tree_usage(root: Path, max_bytes: int, max_entries: int) -> tuple[int, int] | None:
    """Bytes of files and number of entries under ``root``; counting stops once either passes
    its limit. None when part of the tree could not be measured: a directory on the way down
    moved elsewhere, or one the child made unreadable (a parent that is not root shares its
    uid, and mode 0300 let the child write where the count could not look).

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
                        else:
                            info = entry.stat(follow_symlinks=False)
                            # blocks too: space reserved past the end has no size
                            count[0] += max(info.st_size, info.st_blocks * 512)
                    except OSError:
                        continue
                    if count[0] > max_bytes or count[1] > max_entries:
                        return None
        except OSError:
            pass
        return subdirs

    try:
        fd = os.open(root, _DIR_FLAGS)
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
                    child = os.open(pending.pop(), _DIR_FLAGS, dir_fd=fd)
                except PermissionError:
                    return None
                except OSError:  # gone meanwhile, or replaced by a link
                    continue
                info = os.fstat(fd)
                trail.append(((info.st_dev, info.st_ino), pending))
                os.close(fd)
                fd, pending = child, scan(child)
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
    except OSError:
        return None
    finally:
        os.close(fd)
    return count[0], count[1]


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


def _enter(name: str, dir_fd: int) -> int:
    try:  # a program may have removed its own permissions (chmod 000)
        os.chmod(name, 0o700, dir_fd=dir_fd)
    except OSError:
        pass
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def remove_tree(path: str | os.PathLike) -> bool:
    """Delete ``path`` (a file, link or directory tree); never raises, never follows a link.

    Depth first without recursion, holding two descriptors at a time and the names on the
    path down, so a tree thousands of levels deep or with paths past ``PATH_MAX`` goes too.
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
        fd = _enter(name, parent)
        pending, trail = _scan(fd), []
        while True:
            if pending:
                sub = pending.pop()
                child = _enter(sub, fd)
                trail.append((sub, pending))
                os.close(fd)
                fd, pending = child, _scan(child)
                continue
            if not trail:
                break
            up = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = up
            sub, pending = trail.pop()
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
    None."""
    try:
        with open_regular("status.json", 2**24, control_fd) as fh:
            status = json.loads(fh.read().decode("utf-8"))
        # "\ud800" escapes decode to lone surrogates, which no UTF-8 writer accepts (a study
        # with one in a failure message could not be saved): replace them
        status = json.loads(json.dumps(status, ensure_ascii=False).encode("utf-8", "replace"))
    except (OSError, ValueError, RecursionError):  # nested past the parser's depth
        return None
    return status if isinstance(status, dict) else None

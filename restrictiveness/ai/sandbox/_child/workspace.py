"""The program's working directory on a tmpfs of its own, capped by the kernel.

The disk and file-count caps were the parent's, polled four times a second over the host's
working directory: a single 200 MiB write or ``posix_fallocate`` passed a 50 MiB cap by up to
144 MiB, and 3,000-file caps were passed by 600 files and by 22,000 hard links. Here the
directory the program sees is a tmpfs mounted over it with ``size=`` (bytes, deleted files
still held open or mapped included) and ``nr_inodes=`` (files, directories, links), so the
kernel refuses the first write past either cap (``ENOSPC``; ``SIGBUS`` for a mapped page).

:func:`mount_capped` runs in the trusted set-up, in the run's mount namespace and before the
program's process is forked. It hands a descriptor of the new tmpfs to the parent over the
report socket (the first message on it, before any untrusted code can write there), and waits
for the parent to copy the working directory's files in and answer. The parent then reads the
status and outputs through that descriptor, and copies a kept directory (an agent's) back out.
"""

from __future__ import annotations

import array
import os

from . import syscalls as sc
from .protocol import LayerError

#: The first line on the report channel when the working directory is a capped tmpfs; the
#: message carries its descriptor (SCM_RIGHTS).
MOUNTED = b'{"workdir": "tmpfs"}\n'
#: What the parent answers once the files are in.
GO = b"g"


def options(disk_bytes: int, max_files: int) -> str:
    """The tmpfs mount options of a working directory of ``disk_bytes`` bytes and
    ``max_files`` entries (the root directory takes one inode of its own).

    >>> options(50 * 2**20, 3000)
    'mode=0700,size=52428800,nr_inodes=3001'
    """
    return f"mode=0700,size={int(disk_bytes)},nr_inodes={int(max_files) + 1}"


def mount_capped(cfg: dict, report_fd: int) -> None:
    """Mount the capped tmpfs over the working directory, send the parent its descriptor,
    wait for the parent's :data:`GO`, and make it the current directory.

    Raises :class:`LayerError` ("filesystem") when the mount or the hand-over fails.
    """
    import _socket

    workdir = cfg["workdir"]
    try:
        sc.mount("tmpfs", workdir, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV,
                 options(cfg["disk"], cfg["files"]))
        fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        # the old current directory is the host's directory under the mount: leave it, or
        # the program's relative paths would write there, past every cap
        os.chdir(fd)
        sock = _socket.socket(fileno=os.dup(report_fd))
        try:
            sock.sendmsg([MOUNTED], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS,
                                      array.array("i", [fd]).tobytes())])
        finally:
            sock.close()
        os.close(fd)
        answer = os.read(report_fd, 1)
    except OSError as exc:
        raise LayerError("filesystem", f"the working directory's capped tmpfs: {exc}") from None
    if answer != GO:  # the parent refused the copy (files past the caps) or ended
        os._exit(0)

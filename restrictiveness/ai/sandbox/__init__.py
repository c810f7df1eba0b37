"""Run untrusted Python source in an isolated, limited interpreter (SPEC §8).

Programs returned by language models — and an Agent's tool code — run here. Each run starts a
fresh interpreter (``sys.executable -I -B``) in its own working directory, with stdin closed and
a clean environment.

Threat model
------------
The program is assumed hostile: arbitrary Python, including ways around any in-process check.
Under the default ``SandboxLimits(isolation="full")`` the kernel enforces the containment, in
layers that are each checked from inside the child before the program runs:

* **namespaces** — its own PID namespace (it sees and signals no outside process; its init
  dies with the run and takes every descendant with it), network namespace (no interface up,
  not even loopback), mount, IPC, UTS and cgroup namespaces, and a user namespace when the
  caller is not root. Built by bubblewrap (``bwrap``) when it is on PATH, else by the package
  itself (a few system calls through ctypes);
* **filesystem** — a private root holding only the Python installation, the allowed packages
  and the system's shared libraries (read-only), five device nodes, its own ``/proc`` and the
  working directory (read-write); nothing else exists for the program, not even for
  ``os.stat``. The working directory is a tmpfs of its own, mounted over the host's with
  ``size=disk_bytes`` and ``nr_inodes=max_files + 1`` (:mod:`._child.workspace`): the kernel
  refuses the first byte or entry past either cap (``ENOSPC``, ``SIGBUS`` for a mapped page),
  deleted files held open or mapped and hard links included. The parent copies the files in
  before the program starts, reads the status and outputs through a descriptor of the tmpfs
  that the trusted set-up hands it, and copies a kept directory's (an agent's) back out, links
  never followed, holes kept, FIFOs and devices left behind;
* **unprivileged-uid** — started by root, the child switches to an unused uid of its own
  (one per working directory); otherwise it keeps the caller's uid inside its user namespace;
* **capabilities** — every set empty (bounding and ambient included);
* **no-new-privs** — set, so nothing it could execute gains privileges;
* **rlimits** — CPU time, address space, file size, no core dumps (a limit of 1, which
  also stops a dump piped to the host's helper, and may not be lowered), at most ``threads`` tasks
  and 1024 open descriptors (threads share one table: seccomp refuses any other), 4096
  queued signals and timers, no real-time priority nor a nice value below the caller's;
  the parent adds a wall clock and a cap on output, stops a program that keeps its working
  directory full for half a second, and kills the whole group at the end;
* **landlock** — a second file rule set (read beneath the read-only roots, everything beneath
  the working directory), TCP bind/connect refused (ABI ≥ 4), signals and abstract sockets
  scoped to the sandbox (ABI ≥ 6);
* **seccomp** — a system-call filter (libseccomp through ``pyseccomp``): new processes and
  programs, tracing, other processes' memory, namespace and mount changes, ``pidfd_*``, BPF,
  perf, keyrings, io_uring and the like kill the program ("forbidden"); non-Unix sockets,
  Unix sockets reached by name (only ``socketpair`` is left), socket buffer sizes, and
  signals, scheduling and priority changes aimed at any other process, are refused.

Every layer is required under full isolation: where one cannot be set up, :func:`run_python`
raises :class:`~restrictiveness.shared.exceptions.SandboxUnavailableError` naming it and how to
get it, and :func:`sandbox_status` lists them all.

On top, in every mode, an in-process **guard** — PEP 578 audit hooks and an import allow-list
— refuses network, processes, foreign code, files outside the working directory and imports
outside the allow-list, with a message naming the operation ("forbidden"). It is the first and
most informative layer, not a security boundary: CPython documents that audit hooks are not a
sandbox, and a determined program can switch them off. ``SandboxLimits(isolation="guard-only")``
keeps only the guard and the resource limits (plus an empty network namespace where ``unshare``
allows it); it contains careless programs, not hostile ones, warns
(:class:`~restrictiveness.shared.exceptions.IsolationWarning`) and is recorded in every result
(:attr:`SandboxResult.isolation`) and fit.

Not contained: the kernel itself (a kernel exploit escapes any of this), side channels
(timing, CPU caches), the CPU and memory the program may use within its limits, and what it
writes into its own working directory (which an agent's later runs and returned program read).
There is no memory cgroup: the address-space limit bounds the program's own memory, and kernel
memory it makes the kernel hold is bounded only by the descriptor cap and per-user kernel
limits (its 1024 descriptors filled as Unix socket pairs held 224 MiB; pipes hold about
64 MiB per user). The working directory's tmpfs pages are memory too, outside the address-space
limit: a run may hold up to ``memory_bytes + disk_bytes``, plus the kernel's memory for at most
``max_files`` inodes (user extended attributes, whose values are kernel memory on a tmpfs, were
refused on it, EOPNOTSUPP, on Linux 6.18); set the two caps so that their sum, times the
programs run at once (one per usable CPU), fits the machine. Under
``isolation="guard-only"`` there is no mount namespace to mount a tmpfs in (an unprivileged
caller may not mount in its own), nor a seccomp filter: the disk and file-count caps are then
the parent's, which counts the working directory (and the deleted files the child holds) four
times a second, so a fast writer passes them for that long (under a 50 MiB cap with the guard
switched off, one 200 MiB write was stopped at 104 MiB, ``posix_fallocate`` at 400 MiB, and
10,341 hard links were made under a 3,000-file cap).
Programs see the machine's public system libraries and Python installation, its CPU count,
memory size and kernel version. The parent never unpickles anything the child wrote: data go in
and out as ``.npy`` files (``allow_pickle=False``) and JSON.

Failures are classified into a small fixed vocabulary, :data:`REASONS`.
"""

from ._child.protocol import LAYERS
from .limits import (
    DEFAULT_ALLOWED_MODULES,
    ISOLATION,
    REASONS,
    SCIENTIFIC_MODULES,
    SandboxLimits,
    SandboxResult,
)
from .runner import network_isolation_prefix, run_python, workspace
from .status import SandboxStatus, sandbox_status

__all__ = ["SandboxLimits", "SandboxResult", "run_python", "REASONS", "ISOLATION", "LAYERS",
           "DEFAULT_ALLOWED_MODULES", "SCIENTIFIC_MODULES", "sandbox_status", "SandboxStatus",
           "workspace", "network_isolation_prefix"]

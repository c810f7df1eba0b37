"""Will a study fit in memory? A lower bound per worker, checked before any work.

Evaluation distributions and procedures may report the memory one replication (or one fit)
needs for given sample sizes through an optional ``memory_bytes`` method; a Gaussian-process
prior, for example, holds an (n + n_eval)² covariance matrix and its Cholesky factor. A study
whose workers would need more than the machine has is refused at once, with the estimate,
instead of dying minutes later in the allocator.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..shared.exceptions import ConfigurationError

__all__ = ["available_memory", "format_bytes", "check_memory"]


def format_bytes(size: float) -> str:
    """``1536`` → ``'1.5 KiB'``.

    Examples
    --------
    >>> format_bytes(76 * 2**30)
    '76.0 GiB'
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1024
    raise AssertionError  # pragma: no cover


def available_memory() -> int | None:
    """Bytes this process may still allocate: the smaller of the kernel's MemAvailable and the
    cgroup limit (containers); None when neither can be read."""
    limits = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                limits.append(int(line.split()[1]) * 1024)
    except OSError:
        try:
            limits.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            pass
    try:
        text = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if text.isdigit():
            used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
            limits.append(int(text) - int(used))
    except OSError:
        pass
    return min(limits) if limits else None


def check_memory(study, workers: int, available: int | None = None) -> int:
    """Refuse a study whose ``workers`` concurrent replications need more memory than is
    available; return the per-worker estimate (bytes, 0 when nothing reports one).

    Raises
    ------
    ConfigurationError
        With the estimate, the memory available and what to lower.
    """
    need = study.memory_estimate()
    free = available_memory() if available is None else available
    if not need or free is None or need * workers <= free:
        return need
    largest = max(study.n)
    if need <= free:
        raise ConfigurationError(
            f"{workers} workers need about {format_bytes(need * workers)} of memory "
            f"({format_bytes(need)} each at n={largest}), more than the "
            f"{format_bytes(free)} available; use fewer workers (--jobs)")
    raise ConfigurationError(
        f"n={largest} needs at least {format_bytes(need)} of memory per replication, more than "
        f"the {format_bytes(free)} available; use smaller sample sizes (--n)")

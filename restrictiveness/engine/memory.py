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

__all__ = ["available_memory", "format_bytes", "check_memory", "results_bytes"]

#: Bytes of Python objects a replication's record holds beside its numbers (array headers, the
#: record itself): measured 2.4 KB for a record of two procedures at three sample sizes.
RECORD_OVERHEAD = 2048


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


def results_bytes(study, replications: int) -> int:
    """Lower bound on the bytes the results of ``replications`` replications take in the
    process that runs the study: every finished replication's record (its numbers and
    :data:`RECORD_OVERHEAD`) is held until the results are assembled, which copy the numbers.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> study = SimpleNamespace(labels=["a"], discrepancies=[None], n=[10], draws=1)
    >>> results_bytes(study, 1000) == 1000 * (2048 + 2 * 8 * (1 + 1 + 3 + 1 + 1))
    True
    """
    P, D, N, K = len(study.labels), len(study.discrepancies), len(study.n), study.draws
    # losses, the baseline's, failures, replaced rows and seconds, the baseline's seconds and
    # the truth's scale (failure messages and fit records are counted in the overhead)
    numbers = 8 * (P * D * N * K + D * N * K + 3 * P * N + N + D * N)
    return replications * (RECORD_OVERHEAD + 2 * numbers)


def check_memory(study, workers: int, available: int | None = None,
                 replications: int = 0) -> int:
    """Refuse a study whose ``workers`` concurrent replications need more memory than is
    available, beside the results of ``replications`` replications (:func:`results_bytes`);
    return the per-worker estimate (bytes, 0 when nothing reports one).

    Raises
    ------
    ConfigurationError
        With the estimate, the memory available and what to lower.
    """
    need = study.memory_estimate()
    held = results_bytes(study, replications)
    free = available_memory() if available is None else available
    if free is None or need * workers + held <= free:
        return need
    largest = max(study.n)
    if workers and need > free:
        raise ConfigurationError(
            f"n={largest} needs at least {format_bytes(need)} of memory per replication, more "
            f"than the {format_bytes(free)} available; use smaller sample sizes (--n)")
    if held + need * min(workers, 1) > free:
        # -M 10**12 failed with a bare MemoryError (a bug report) listing the replications
        raise ConfigurationError(
            f"the results of M={replications:,} replications need at least "
            f"{format_bytes(held)} of memory ({format_bytes(held / replications)} each), more "
            f"than the {format_bytes(free)} available; use fewer replications (-M)")
    raise ConfigurationError(
        f"{workers} workers need about {format_bytes(need * workers)} of memory "
        f"({format_bytes(need)} each at n={largest}), more than the {format_bytes(free)} "
        f"available" + (f" beside the results' {format_bytes(held)}" if held else "")
        + "; use fewer workers (--jobs)")

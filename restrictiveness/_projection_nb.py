"""Numba kernel of the pairwise-averaging monotone projection (SPEC §6), and its NumPy twin.

The sweep visits the ordered pairs ``(i[k], j[k])`` in the given order; whenever the values
violate the direction (``g[i] > g[j]`` for increasing) both are replaced by their average *in
place*, so later pairs of the same sweep see the updated values. Sweeps repeat until the
Euclidean change over a sweep falls below ``tol`` or ``max_sweeps`` is reached. Because updates
are sequential, the visiting order changes the result; it is fixed by the caller.
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["sweep_project", "sweep_project_numpy"]


@numba.njit(cache=True)
def sweep_project(g: np.ndarray, first: np.ndarray, second: np.ndarray, sign: float,
                  tol: float, max_sweeps: int) -> tuple[np.ndarray, int]:
    """Project ``g`` onto the cone ``sign * g[first] <= sign * g[second]`` by pairwise averaging.

    Returns the projected copy and the number of sweeps run.
    """
    out = g.copy()
    sweeps = 0
    for _ in range(max_sweeps):
        sweeps += 1
        before = out.copy()
        for k in range(first.shape[0]):
            a = first[k]
            b = second[k]
            if sign * out[a] > sign * out[b]:
                avg = 0.5 * (out[a] + out[b])
                out[a] = avg
                out[b] = avg
        change = 0.0
        for m in range(out.shape[0]):
            change += (out[m] - before[m]) ** 2
        if np.sqrt(change) < tol:
            break
    return out, sweeps


def sweep_project_numpy(g: np.ndarray, first: np.ndarray, second: np.ndarray, sign: float,
                        tol: float, max_sweeps: int) -> tuple[np.ndarray, int]:
    """Plain-Python/NumPy twin of :func:`sweep_project` (tests and benchmarks only)."""
    out = np.array(g, dtype=float)
    sweeps = 0
    for _ in range(max_sweeps):
        sweeps += 1
        before = out.copy()
        for a, b in zip(first.tolist(), second.tolist(), strict=True):
            if sign * out[a] > sign * out[b]:
                out[a] = out[b] = 0.5 * (out[a] + out[b])
        if np.linalg.norm(out - before) < tol:
            break
    return out, sweeps

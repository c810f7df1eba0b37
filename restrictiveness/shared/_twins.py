"""NumPy twins of numba kernels from the kernels' own source.

A kernel that calls other compiled functions gets its plain-Python twin by rebinding those
globals to their Python versions: the twin runs the same source, so twin tests check compilation
and the callees rather than a second copy of the algorithm.
"""

from __future__ import annotations

import types

__all__ = ["with_globals"]


def with_globals(func, suffix: str = "_numpy", **names):
    """A copy of ``func`` whose global ``names`` are rebound.

    Examples
    --------
    >>> def area(r):
    ...     return pi * r * r
    >>> pi = 3.0
    >>> with_globals(area, pi=3.5)(2.0)
    14.0
    """
    env = dict(func.__globals__)
    env.update(names)
    twin = types.FunctionType(func.__code__, env, func.__name__ + suffix, func.__defaults__)
    twin.__doc__ = f"NumPy twin of :func:`{func.__name__.replace('_impl', '')}` (same source)."
    return twin

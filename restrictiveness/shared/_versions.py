"""Versions of the packages a result depends on, stored with every saved result."""

from __future__ import annotations

from importlib import metadata

__all__ = ["package_versions"]

_PACKAGES = ("restrictiveness", "numpy", "scipy", "numba", "pandas", "xarray", "statsmodels")


def package_versions() -> dict[str, str]:
    """``{package: version}`` of the numerical stack ('unknown' when not installed)."""
    out = {}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "unknown"
    return out

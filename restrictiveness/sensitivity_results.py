"""Sensitivity of a study's comparisons to the evaluation distribution (SPEC §4), as methods of
:class:`~restrictiveness.results.Results`."""

from __future__ import annotations

__all__ = ["SensitivityMixin"]


class SensitivityMixin:
    """Density-ratio bounds and critical Γ* for :class:`~restrictiveness.results.Results`."""

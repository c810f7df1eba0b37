"""Which isolation layers hold on this machine: :func:`sandbox_status`."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from ...shared.exceptions import SandboxUnavailableError
from ._child.protocol import GUARD, LAYERS

__all__ = ["sandbox_status", "SandboxStatus"]

@dataclass(frozen=True)
class SandboxStatus:
    """The isolation layers of this machine, as a probe run checked them from inside.

    Attributes
    ----------
    backend : str
        What builds the namespaces: "bwrap" (bubblewrap) or "builtin".
    layers : dict of str to str
        Active layers and what each holds (the in-process guard included).
    missing : dict of str to str
        Required layers that could not be set up, with the reason and the remedy.
    landlock_abi : int
        The kernel's Landlock ABI version (0: none).
    """

    backend: str
    layers: dict = field(default_factory=dict)
    missing: dict = field(default_factory=dict)
    landlock_abi: int = 0

    @property
    def ok(self) -> bool:
        """True when every layer of ``isolation="full"`` is active."""
        return not self.missing and all(layer in self.layers for layer in LAYERS)

    def __str__(self) -> str:
        rows = [f"sandbox isolation: {'full' if self.ok else 'INCOMPLETE'} "
                f"(backend {self.backend}, Landlock ABI {self.landlock_abi})"]
        for layer in LAYERS + (GUARD,):
            if layer in self.layers:
                rows.append(f"  [on]      {layer:17} {self.layers[layer]}")
            elif layer in self.missing:
                rows.append(f"  [MISSING] {layer:17} {self.missing[layer]}")
            else:
                rows.append(f"  [unknown] {layer:17} not reached (an earlier layer failed)")
        return "\n".join(rows)


@functools.lru_cache(maxsize=1)
def _probe() -> SandboxStatus:
    from . import isolation
    from .limits import SandboxLimits
    from .runner import run_python

    use = isolation.backend()
    try:
        result = run_python("x = 1", limits=SandboxLimits(wall_seconds=120))
    except SandboxUnavailableError as exc:
        layer = next((name for name in LAYERS if f"'{name}'" in str(exc)), "setup")
        return SandboxStatus(use, {GUARD: "audit hooks and import allow-list"},
                             {layer: str(exc)}, isolation.landlock_abi())
    layers = dict(result.layers)
    layers[GUARD] = "audit hooks and import allow-list (informative; not a boundary)"
    missing = {} if result.ok else {"setup": result.message}
    return SandboxStatus(use, layers, missing, isolation.landlock_abi())


def sandbox_status(refresh: bool = False) -> SandboxStatus:
    """Report which isolation layers are active on this machine.

    A probe program runs under full isolation (once per process unless ``refresh``); each
    layer is checked from inside the child (``/proc/self/status``, a refused operation per
    layer), not merely set up.

    Parameters
    ----------
    refresh : bool
        Probe again instead of returning the cached answer.

    Returns
    -------
    SandboxStatus

    Examples
    --------
    >>> status = sandbox_status()
    >>> status.backend in ("bwrap", "builtin"), "audit-guard" in status.layers
    (True, True)
    """
    if refresh:
        _probe.cache_clear()
    return _probe()

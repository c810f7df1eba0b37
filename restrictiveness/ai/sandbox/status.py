"""Which isolation layers hold on this machine: :func:`sandbox_status`, and the error that
names a missing layer and how to get it."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from ...shared.exceptions import SandboxUnavailableError
from ._child.protocol import GUARD, LAYERS

__all__ = ["sandbox_status", "SandboxStatus", "REMEDIES", "unavailable"]

#: How to get each layer where it is missing.
REMEDIES = {
    "namespaces": "new PID, network, mount, IPC and UTS namespaces need root or unprivileged "
                  "user namespaces (sysctl user.max_user_namespaces > 0; Debian's "
                  "kernel.unprivileged_userns_clone=1; Ubuntu's "
                  "kernel.apparmor_restrict_unprivileged_userns=0); inside a container, allow "
                  "unshare (e.g. docker run --security-opt seccomp=unconfined) or install "
                  "bubblewrap",
    "filesystem": "building the private file system needs mount rights in the new namespace and "
                  "a /proc that is not masked (containers often mask it); installing "
                  "bubblewrap (apt-get install bubblewrap) may help",
    "unprivileged-uid": "the sandbox switches from root to an unused uid; the kernel refused",
    "capabilities": "dropping capabilities needs Linux >= 4.3 (ambient sets)",
    "no-new-privs": "no_new_privs needs Linux >= 3.5",
    "rlimits": "the kernel refused a resource limit",
    "landlock": "Landlock needs Linux >= 5.13 built with CONFIG_SECURITY_LANDLOCK=y and "
                "'landlock' in the active LSM list (the lsm= boot parameter)",
    "seccomp": "install the Python package pyseccomp (pip install pyseccomp) and the system "
               "library libseccomp (Debian/Ubuntu: apt-get install libseccomp2; Fedora: dnf "
               "install libseccomp)",
}


def unavailable(layer: str, detail: str) -> SandboxUnavailableError:
    """The error for a required layer that cannot be set up."""
    remedy = REMEDIES.get(layer, "see rx.sandbox_status()")
    return SandboxUnavailableError(
        f"the sandbox's {layer!r} isolation layer is unavailable on this machine ({detail}). "
        f"To get it: {remedy}. To run untrusted programs with weaker isolation anyway, pass "
        "SandboxLimits(isolation='guard-only') explicitly (in-process guard and resource "
        "limits only; recorded with every fit).")


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
    >>> sorted(status.layers)[:3] if status.ok else status.missing  # doctest: +SKIP
    ['audit-guard', 'capabilities', 'filesystem']
    """
    if refresh:
        _probe.cache_clear()
    return _probe()

"""What a sandboxed run may use and what it produced: :class:`SandboxLimits`,
:class:`SandboxResult`, the failure vocabulary :data:`REASONS` and the import allow-lists."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["SandboxLimits", "SandboxResult", "REASONS", "ISOLATION", "DEFAULT_ALLOWED_MODULES",
           "SCIENTIFIC_MODULES"]

#: Why a run failed: the fixed vocabulary of :attr:`SandboxResult.reason`.
REASONS = ("timeout", "cpu", "memory", "forbidden", "crash", "invalid-output", "output-limit")

#: Isolation levels: every kernel layer (the default), or the in-process guard and resource
#: limits only (an explicit opt-in that warns and is recorded).
ISOLATION = ("full", "guard-only")

#: Top-level modules a program may import by default: numpy, math and the standard-library
#: modules that compute, format or parse without reaching the network, other processes or
#: foreign code. ``os`` and ``sys`` are admitted because their dangerous functions are stopped
#: by the guard and the kernel layers.
DEFAULT_ALLOWED_MODULES = frozenset({
    "numpy", "math", "cmath", "random", "statistics", "decimal", "fractions", "numbers",
    "itertools", "functools", "operator", "collections", "heapq", "bisect", "array", "copy",
    "dataclasses", "enum", "typing", "abc", "types", "re", "string", "textwrap", "json", "csv",
    "io", "os", "sys", "time", "datetime", "calendar", "warnings", "contextlib", "pathlib",
    "traceback", "pprint", "struct", "hashlib", "unicodedata", "__future__", "zlib", "base64",
    "difflib", "reprlib", "weakref", "inspect", "tempfile", "shutil", "glob", "fnmatch",
})

#: Extra modules the paper's Agent may use in its tool calls (not in its returned program).
SCIENTIFIC_MODULES = frozenset({"scipy", "pandas", "sklearn"})


class ModuleNames(frozenset):
    """A set of module names whose ``repr`` lists them sorted.

    A procedure's ``repr`` identifies it in a study's configuration, which a checkpoint must
    match to resume; a plain frozenset of strings shows its members in an order that changes
    with each interpreter's hash seed, so a checkpoint of an Agent (or of any procedure given
    an allow-list) was refused in every new session as written by another study.

    Examples
    --------
    >>> ModuleNames({"numpy", "math", "json"})
    frozenset({'json', 'math', 'numpy'})
    """

    def __repr__(self) -> str:
        return f"frozenset({{{', '.join(map(repr, sorted(self)))}}})" if self else "frozenset()"


def module_names(modules: Iterable[str], name: str = "allowed_modules") -> frozenset[str]:
    """An import allow-list as a set of module names; a bare string is refused.

    Parameters
    ----------
    modules : iterable of str
        Module names, e.g. ``["numpy", "math"]``.
    name : str
        The argument's name, for the message.

    Returns
    -------
    ModuleNames
        The names (a frozenset whose ``repr`` is sorted).

    Raises
    ------
    ConfigurationError
        For a string (``"numpy"`` would allow the modules ``n``, ``u``, ``m`` and ``p``), or
        an entry that is not a module name.

    Examples
    --------
    >>> sorted(module_names(["numpy", "math"]))
    ['math', 'numpy']
    >>> module_names("numpy")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: allowed_modules must be ... ["numpy"]
    """
    from ...shared.exceptions import ConfigurationError

    if isinstance(modules, (str, bytes)):
        raise ConfigurationError(f"{name} must be an iterable of module names, not the string "
                                 f"{modules!r}; for one module write [{modules!r}]".replace(
                                     "'", '"'))
    try:
        names = frozenset(modules)
    except TypeError:
        raise ConfigurationError(f"{name} must be an iterable of module names, got "
                                 f"{modules!r}") from None
    bad = sorted(repr(m) for m in names if not isinstance(m, str) or
                 not all(part.isidentifier() for part in m.split(".")))
    if bad:
        raise ConfigurationError(f"{name}: {', '.join(bad)} is not a module name")
    return ModuleNames(names)


def file_contents(files: Mapping[str, bytes] | None) -> dict[str, bytes]:
    """Files for a run's working directory, checked: plain names and bytes.

    ``bytes(5)`` is five zero bytes and ``bytes("text")`` a bare ``TypeError``, and the
    program's own ``program.py`` is written after the files, replacing one of that name: each
    is refused by name instead.

    Parameters
    ----------
    files : mapping of str to bytes, optional
        File name (no directory, not starting with a dot, not ``program.py``) to content
        (``bytes``, ``bytearray`` or ``memoryview``).

    Returns
    -------
    dict of str to bytes
        The files (empty for None).

    Raises
    ------
    ConfigurationError
        Naming the file whose name or content cannot be written as given.

    Examples
    --------
    >>> file_contents({"estimates.json": b"{}"})
    {'estimates.json': b'{}'}
    >>> file_contents({"n.txt": 5})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: files['n.txt'] must be bytes, got int ...
    """
    from ...shared.exceptions import ConfigurationError

    if files is None:
        return {}
    if not isinstance(files, Mapping):
        raise ConfigurationError(f"files must be a mapping of file names to bytes, got "
                                 f"{files!r}")
    out = {}
    for name, content in files.items():
        if not isinstance(name, str) or os.path.basename(name) != name or \
                name.startswith(".") or name in ("", "program.py"):
            raise ConfigurationError(f"files: {name!r} must be a plain file name (no folder, "
                                     "no leading dot, not program.py, which holds the program)")
        if not isinstance(content, (bytes, bytearray, memoryview)):
            raise ConfigurationError(f"files[{name!r}] must be bytes, got "
                                     f"{type(content).__name__} (encode text first)")
        out[name] = bytes(content)
    return out


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits and isolation level of one sandboxed run.

    Parameters
    ----------
    wall_seconds : float
        Wall-clock deadline, after which the parent kills the child ("timeout"); counted
        from the program's start (programs of one process run one per usable CPU at a time,
        and a wait for a free CPU does not count).
    cpu_seconds : float, optional
        CPU-time limit enforced by the kernel ("cpu"); default: the wall-clock limit.
    memory_bytes : int
        Address-space limit ("memory"); numpy needs a few hundred MB of address space.
    output_bytes : int
        Most bytes the child may write to stdout plus stderr; beyond it the child is killed
        ("output-limit").
    file_bytes : int
        Largest file the child may write (and largest output array).
    disk_bytes : int
        Most bytes the working directory may hold while the child runs, deleted files the
        child still holds open or mapped included ("output-limit"). Under full isolation
        the working directory is a tmpfs of this size: the kernel refuses the first byte
        past it, and the tmpfs's pages are memory outside ``memory_bytes`` (a run may hold
        both). Under guard-only isolation the parent counts a few times a second and kills
        the child beyond it.
    max_files : int
        Most files, directories and links the working directory may hold ("output-limit");
        the tmpfs's inode count under full isolation.
    threads : int
        Most tasks (threads) the sandbox's user may run (``RLIMIT_NPROC``, full isolation).
    isolation : {"full", "guard-only"}
        ``"full"`` (default): every kernel layer listed by :func:`sandbox_status` is
        required, and a run on a machine that lacks one raises
        :class:`~restrictiveness.shared.exceptions.SandboxUnavailableError`.
        ``"guard-only"``: the in-process guard and resource limits only, which contain
        careless programs but not a determined one; it warns
        (:class:`~restrictiveness.shared.exceptions.IsolationWarning`) and is recorded in
        every result and fit.

    Examples
    --------
    >>> SandboxLimits(wall_seconds=5).cpu
    5
    >>> SandboxLimits().isolation
    'full'
    """

    wall_seconds: float = 600.0
    cpu_seconds: float | None = None
    memory_bytes: int = 4 * 2**30
    output_bytes: int = 1_000_000
    file_bytes: int = 256 * 2**20
    disk_bytes: int = 2**30
    max_files: int = 100_000
    threads: int = 64
    isolation: Literal["full", "guard-only"] = "full"

    def __post_init__(self) -> None:
        from ...shared.checks import is_positive, whole_number
        from ...shared.exceptions import ConfigurationError

        for name in ("wall_seconds", "cpu_seconds"):
            value = getattr(self, name)
            if value is None and name == "cpu_seconds":
                continue
            # an infinite limit is no limit (a hanging program would hang the study), and a
            # string or bool failed with a bare TypeError or passed as 1 s
            if not is_positive(value):
                raise ConfigurationError(f"SandboxLimits: {name} must be positive and finite "
                                         f"seconds, got {value!r}")
        for name in ("memory_bytes", "output_bytes", "file_bytes", "disk_bytes", "max_files",
                     "threads"):
            object.__setattr__(self, name, whole_number(getattr(self, name),
                                                        f"SandboxLimits: {name}", minimum=1))
        if self.isolation not in ISOLATION:
            raise ConfigurationError(f"SandboxLimits: isolation must be one of {ISOLATION}, "
                                     f"got {self.isolation!r}")

    @property
    def cpu(self) -> int:
        """The CPU limit in whole seconds, as the kernel counts it."""
        return max(1, math.ceil(self.cpu_seconds if self.cpu_seconds is not None
                                else self.wall_seconds))


@dataclass
class SandboxResult:
    """What a sandboxed run produced.

    Attributes
    ----------
    ok : bool
        True when the program and its driver finished and wrote their outputs.
    reason : str or None
        None when ``ok``; otherwise one of :data:`REASONS`.
    message : str
        A one-paragraph explanation (the exception, the refused operation, the limit hit).
    stdout, stderr : str
        The last 64 KiB written by the child to each stream.
    seconds : float
        Wall-clock time of the run.
    cpu_seconds : float
        CPU time used by the child.
    returncode : int or None
        The child's exit status (negative: killed by that signal).
    outputs : dict of str to ndarray
        Arrays the driver saved (loaded with ``allow_pickle=False``).
    value : object
        The JSON value the driver recorded, if any.
    network_isolated : bool
        Whether the child ran in its own network namespace (no interfaces).
    isolation : str
        The isolation level of the run ("full" or "guard-only").
    layers : dict of str to str
        The isolation layers the child set up and checked from inside, with what each holds.
    """

    ok: bool
    reason: str | None
    message: str
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    returncode: int | None = None
    outputs: dict = field(default_factory=dict)
    value: object = None
    network_isolated: bool = False
    isolation: str = "full"
    layers: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        status = "ok" if self.ok else f"failed: {self.reason}"
        return f"<SandboxResult {status}, {self.seconds:.2f}s: {self.message[:80]!r}>"

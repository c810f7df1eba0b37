"""numba's disk cache, keyed on the source of every kernel module.

numba files a cached function under its own source file and, when loading it, checks only that
file's time stamp. A kernel that calls a jitted function from another module therefore keeps
that function's old machine code after only the other module changes (numba documents this
limitation of its cache). An installed release is safe, since installing rewrites every file,
but an editable install is not: after a ``git pull`` that fixed the least-squares solver in
``shared/_lsq_nb.py``, the RDU fitter, cached with the old solver inside, still divided by zero.

:func:`cached_njit` is ``numba.njit(cache=True)`` with the function filed under a name that
carries a digest of every module of its package that uses numba, so that editing any of them
compiles the kernels afresh instead of loading stale code.

A second hazard concerns results, not staleness. numba links a copy of every jitted function a
kernel calls into the kernel's own code; at run time the call goes to whichever definition was
loaded first: the callee's own compiled code (always, when the caller is compiled in the
process, since compiling it compiles the callee) or the caller's copy (when the caller comes from
the disk cache and the callee was not used before). Both copies are optimised from the same IR,
but with fast-math contraction or reassociation they may round differently, so a first run on a
new machine and every later run gave different last bits (amplified to the third digit of r̂ by
the mixed-logit fits). Hence a kernel with those flags that another kernel calls is compiled
``inline="always"`` (numba inlines it; there is no second copy), or is checked to round alike in
both places (``tests/test_kernel_cache.py`` runs the demand kernels fresh, cached and with their
callees loaded first).
"""

from __future__ import annotations

import functools
import hashlib
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numba

__all__ = ["cached_njit", "kernel_digest"]


@functools.cache
def kernel_digest(root: Path) -> str:
    """Digest of the source of every module under ``root`` that uses numba.

    Parameters
    ----------
    root : Path
        A package's directory.

    Returns
    -------
    str
        16 hexadecimal digits; any edit to such a module changes them.

    Examples
    --------
    >>> import restrictiveness
    >>> len(kernel_digest(Path(restrictiveness.__file__).parent))
    16
    """
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        source = path.read_bytes()
        if b"numba" in source:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + source)
    return digest.hexdigest()[:16]


def _package_root(func: Callable) -> Path:
    """The directory of the top-level package that defines ``func``."""
    top = sys.modules[func.__module__.partition(".")[0]]
    return Path(top.__file__).parent  # type: ignore[arg-type]


def keyed(func: Callable[..., Any]) -> types.FunctionType:
    """A copy of ``func`` whose qualified name, numba's cache key, carries the digest of its
    package's kernel modules."""
    func = cast(types.FunctionType, func)
    copy = types.FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__,
                              func.__closure__)
    copy.__qualname__ = f"{func.__qualname__}_{kernel_digest(_package_root(func))}"
    copy.__module__, copy.__doc__ = func.__module__, func.__doc__
    copy.__kwdefaults__ = func.__kwdefaults__
    return copy


def cached_njit(*signatures: Any, **options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(*signatures, cache=True, **options)``, keyed on the kernel modules' source.

    Parameters
    ----------
    *signatures
        Optional, as for :func:`numba.njit` (a list of signatures compiles eagerly).
    **options
        numba's options (``fastmath``, ``error_model``, ``inline``, ...).

    Returns
    -------
    callable
        A decorator: the function compiled by numba, cached on disk.

    Examples
    --------
    >>> from restrictiveness.shared._vecmath import exp_nb  # compiled with cached_njit
    >>> exp_nb.py_func.__qualname__ == f"exp_nb_{kernel_digest(_package_root(exp_nb.py_func))}"
    True
    """
    def compile_keyed(func: Callable[..., Any]) -> Any:
        # numba's stubs type njit's signatures and options one overload at a time
        return cast(Any, numba.njit)(*signatures, cache=True, **options)(keyed(func))
    return compile_keyed

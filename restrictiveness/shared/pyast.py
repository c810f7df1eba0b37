"""Thread-safe parsing of Python source into an :mod:`ast` tree.

CPython 3.11 (the interpreter this was seen on) keeps one recursion counter per interpreter while it
turns a parsed module into Python ``ast`` objects. If a garbage collection inside that
conversion runs a finaliser that lets another thread in, and that thread parses too, the
counter is shared and the first parse fails with ``SystemError: AST constructor recursion
depth mismatch`` (CPython gh-106905); a finaliser that parses on the parsing thread itself does
the same. The error is raised after the tree is complete and says nothing about the source.
The package parses in threads — program checks of LLM procedures fitted with
``concurrency > 1``, formulas read by procedures in a thread pool — so every parse in the
package goes through :func:`parse`, which holds one lock for its duration (no two of the
package's parses interleave) and parses again after that error (a parse elsewhere — another
library's thread, a finaliser — interleaved).
"""
from __future__ import annotations

import ast
from typing import Literal, overload

from .forksafe import ForkSafeLock

__all__ = ["parse"]

# re-entrant: a finaliser run by a collection inside a parse may itself parse on that thread
_PARSE_LOCK = ForkSafeLock(reentrant=True)
#: Parses tried before the recursion-counter error is passed on.
ATTEMPTS = 3


@overload
def parse(source: str, mode: Literal["exec"] = ...) -> ast.Module: ...
@overload
def parse(source: str, mode: Literal["eval"]) -> ast.Expression: ...
def parse(source: str, mode: Literal["exec", "eval"] = "exec") -> ast.mod:
    """Parse ``source`` as :func:`ast.parse` does, one thread at a time, again after a
    parse elsewhere interleaved (at most :data:`ATTEMPTS` parses).

    Parameters
    ----------
    source : str
        Python source text.
    mode : {"exec", "eval"}
        ``"exec"`` for a module, ``"eval"`` for a single expression.

    Returns
    -------
    ast.AST
        An :class:`ast.Module` for ``"exec"``, an :class:`ast.Expression` for ``"eval"``.

    Raises
    ------
    SyntaxError
        When ``source`` is not valid Python.
    ValueError
        When ``source`` contains a null byte.

    Examples
    --------
    >>> from restrictiveness.shared.pyast import parse
    >>> type(parse("a + b", mode="eval").body).__name__
    'BinOp'
    """
    with _PARSE_LOCK:
        for _ in range(ATTEMPTS - 1):
            try:
                return ast.parse(source, mode=mode)
            except SystemError as exc:
                if "recursion depth mismatch" not in str(exc):
                    raise
        return ast.parse(source, mode=mode)

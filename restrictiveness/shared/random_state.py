"""The process's global random states, seeded for a block of user code.

numpy's legacy global state (``np.random.rand``, an estimator with ``random_state=None``) and
Python's :mod:`random` belong to the process, not to a fit: a procedure drawing from them gave
other numbers on every rerun of a study and at every worker count, since each worker inherits or
starts its own state and a serial run carries it from one fit to the next. Seeded per call of
user code from what the call is (:func:`global_state_seed`), such a procedure gives the same
numbers wherever it runs, as the sandbox does for programs.
"""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .forksafe import ForkSafeLock

__all__ = ["seeded_globals", "global_state_seed"]

#: Spawn-key entry of the global states' seed under a fit's seed sequence: far above the
#: children a procedure would spawn itself (0, 1, ...), so their streams are not this one.
_GLOBAL_STATE_KEY = 2**31 - 1

#: Held while a block runs on seeded global random states (reentrant: a seeded fit may call
#: another seeded estimator).
_GLOBAL_STATES = ForkSafeLock(reentrant=True)


def global_state_seed(seq: np.random.SeedSequence) -> int:
    """The global states' seed for the user call whose own stream comes from ``seq``.

    Derived without drawing from ``seq`` or spawning from it, so the call's own stream and any
    children it spawns are those of before.

    Parameters
    ----------
    seq : numpy.random.SeedSequence
        The seed sequence of the call's random stream.

    Returns
    -------
    int
        In ``[0, 2**32)``, what :func:`numpy.random.seed` takes.

    Examples
    --------
    >>> import numpy as np
    >>> seq = np.random.SeedSequence(1, spawn_key=(3,))
    >>> global_state_seed(seq) == global_state_seed(np.random.SeedSequence(1, spawn_key=(3,)))
    True
    >>> seq.n_children_spawned
    0
    """
    key = (*seq.spawn_key, _GLOBAL_STATE_KEY)
    return int(np.random.SeedSequence(seq.entropy, spawn_key=key).generate_state(1)[0])


#: The thread holding the states for a study's call of user code (``user_call=True``), if any.
_user_call_owner: int | None = None


def _forget_other_threads_call() -> None:
    # a forked child has only the forking thread: another thread's call never ends there
    global _user_call_owner
    if _user_call_owner != threading.get_ident():
        _user_call_owner = None


os.register_at_fork(after_in_child=_forget_other_threads_call)


@contextmanager
def seeded_globals(seed: int, user_call: bool = False) -> Iterator[None]:
    """Run a block with numpy's global (legacy) random state and Python's ``random`` seeded by
    ``seed``, both restored after it.

    One block at a time in the process: the states are the process's, and blocks overlapping
    on threads (a dask worker with several threads) drew from each other's seeds and left the
    caller with a block's state instead of its own. A block on a thread that a study's fit
    started (``user_call`` blocks hold the states for a fit) runs on the fit's states as they
    are: waiting for the fit, which may be waiting for that thread, would never end.

    Parameters
    ----------
    seed : int
        In ``[0, 2**32)``.
    user_call : bool, default False
        The block is a study's call of user code (a fit or a prediction).

    Examples
    --------
    >>> import numpy as np
    >>> with seeded_globals(7):
    ...     a = np.random.rand()
    >>> with seeded_globals(7):
    ...     b = np.random.rand()
    >>> a == b
    True
    """
    global _user_call_owner
    me = threading.get_ident()
    if not user_call and _user_call_owner not in (None, me):
        yield
        return
    with _GLOBAL_STATES:
        owner = _user_call_owner
        if user_call:
            _user_call_owner = me
        np_state, py_state = np.random.get_state(), random.getstate()  # noqa: NPY002
        np.random.seed(seed)  # noqa: NPY002 - the global state user code reads
        random.seed(seed)
        try:
            yield
        finally:
            np.random.set_state(np_state)  # noqa: NPY002
            random.setstate(py_state)
            _user_call_owner = owner

"""Named exceptions and warnings of :mod:`restrictiveness`.

Every error's docstring is the message a user sees, remedy included.
"""

from __future__ import annotations

import functools
import os
import sys
import types

__all__ = [
    "user_stacklevel",
    "RestrictivenessError",
    "FormulaError",
    "DataError",
    "ConstraintError",
    "DomainError",
    "ConfigurationError",
    "BaselineError",
    "CheckpointError",
    "ExecutionError",
    "ModelFunctionError",
    "StudyInterrupted",
    "FailureWarning",
    "SandboxUnavailableError",
    "IsolationWarning",
    "CheckpointWarning",
]


class RestrictivenessError(Exception):
    """Base class of every error raised by :mod:`restrictiveness`.

    Examples
    --------
    One ``except`` clause catches any of the package's errors:

    >>> import restrictiveness as rx
    >>> try:
    ...     rx.Box(x=(1, 0))
    ... except rx.RestrictivenessError as err:
    ...     print(f"{type(err).__name__}: {err}")
    DomainError: Box: interval of ['x'] must be finite with low < high
    """


class FormulaError(RestrictivenessError, ValueError):
    """A formula cannot be evaluated on the data, e.g. it names a column the data lack.

    Check the spelling of the variables in the formula against ``data.columns``.

    Examples
    --------
    >>> import restrictiveness as rx
    >>> rx.parse_formula("y ~ x").design({"z": [1.0, 2.0]})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.FormulaError: formula 'y ~ x' names column(s) ['x']
    that the data do not have; available columns: ['z']
    """


class DataError(RestrictivenessError, ValueError):
    """Data are missing, malformed or contain values the method cannot use (NaN, inf, bad order).

    Clean the data (drop or impute missing values) or fix the file, then retry.

    Examples
    --------
    >>> import numpy as np, restrictiveness as rx
    >>> rx.parse_formula("y ~ x").response_values({"x": [0.0, 1.0], "y": [1.0, np.nan]})
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.DataError: response 'y' contains NaN or infinite values
    """


class ConstraintError(RestrictivenessError, ValueError):
    """A constraint is impossible or inconsistent (e.g. lower bound above upper bound).

    Fix the constraint's arguments; the message names the offending one.

    Examples
    --------
    >>> import restrictiveness as rx
    >>> rx.Between(1, 0)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConstraintError: Between: lower=1 exceeds upper=0; the
    eligible set would be empty
    """


class DomainError(RestrictivenessError, ValueError):
    """A domain cannot supply the requested locations (empty set, too many points asked).

    Relax the domain's inequality constraints or ask for fewer points.

    Examples
    --------
    Three distinct points cannot supply five draws without replacement:

    >>> import numpy as np, restrictiveness as rx
    >>> support = rx.FiniteSet(np.array([[0.0], [0.5], [1.0]]), columns=("x",), replace=False)
    >>> support.sample(5, np.random.default_rng(0))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.DomainError: cannot draw n=5 distinct locations from a
    finite set of 3 points; lower n or sample with replace=True
    """


class ConfigurationError(RestrictivenessError, ValueError):
    """A study is configured inconsistently (duplicate labels, empty sample sizes, ...).

    The message names the argument to change.

    Examples
    --------
    Standard errors need at least two replications:

    >>> import numpy as np, restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> rx.Study(rx.MonotoneGP(F, n_eval=20), {"linear": rx.OLS("y ~ x")},
    ...          baseline=rx.Constant(), n=[10], replications=1)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: replications must be at least 2
    (standard errors need 2)
    """


class BaselineError(RestrictivenessError, RuntimeError):
    """The baseline procedure failed; restrictiveness is undefined without it (and so is
    completeness, which also needs its benchmark to fit every fold).

    The baseline must fit every sample; use a simpler baseline (e.g. ``Constant``).

    Examples
    --------
    >>> import numpy as np, restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> class Broken(rx.Procedure):
    ...     def fit(self, sample, rng):
    ...         raise RuntimeError("no convergence")
    >>> study = rx.Study(rx.MonotoneGP(F, n_eval=20), {"linear": rx.OLS("y ~ x")},
    ...                  baseline=Broken(), n=[10], replications=2, seed=1)
    >>> study.run(progress=False)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.BaselineError: the baseline Broken() failed in
    replication 0, n=10: RuntimeError: no convergence
    """


class CheckpointError(RestrictivenessError, RuntimeError):
    """A checkpoint cannot be used: another configuration or package versions wrote it, its
    ``study.json`` is missing or unreadable, it is in an old format, or its path is unusable.

    Use a fresh checkpoint path, or rerun with the configuration that wrote it; the message
    names the fields that differ.

    Examples
    --------
    A checkpoint written with ``seed=1`` cannot be resumed with ``seed=2``:

    >>> import tempfile
    >>> import numpy as np, restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> def study(seed):
    ...     return rx.Study(rx.MonotoneGP(F, n_eval=20), {"linear": rx.OLS("y ~ x")},
    ...                     baseline=rx.Constant(), n=[10], replications=2, seed=seed)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> res = study(1).run(checkpoint=tmp.name, progress=False)
    >>> study(2).run(checkpoint=tmp.name, progress=False)
    ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.CheckpointError: checkpoint ... was written by a different
    study configuration (seed: 1 in the checkpoint, 2 now); use a fresh checkpoint directory or
    rerun the study that wrote it
    >>> tmp.cleanup()
    """


class ExecutionError(RestrictivenessError, RuntimeError):
    """The machinery running the replications failed: every dask worker is gone, or a worker
    process died (e.g. killed for lack of memory); or a pseudo-truth draw, which has no
    fallback, called ``sys.exit()`` (a procedure's fit that does is recorded as failed).

    Start workers again (or use fewer, or less memory) and rerun; with a checkpoint, the
    finished replications are kept and the rerun resumes.

    Examples
    --------
    It is a :class:`RuntimeError` of the package, distinct from the errors of a configuration
    (:class:`ConfigurationError`, a :class:`ValueError`) that a rerun cannot cure:

    >>> import restrictiveness as rx
    >>> issubclass(rx.ExecutionError, RuntimeError), issubclass(rx.ExecutionError, ValueError)
    (True, False)
    """


class ModelFunctionError(RestrictivenessError, RuntimeError):
    """A function the user gave as part of a model raised (an :class:`~restrictiveness.NLS`
    model function or its ``jac``).

    The message names the function, its role and the parameters it was called at; the
    function's own exception is the ``__cause__``, with its traceback. Fix the function (or
    narrow the bounds to where it is defined). ``KeyboardInterrupt`` and ``SystemExit`` are not
    wrapped.

    Examples
    --------
    >>> import numpy as np, restrictiveness as rx
    >>> def decay(data, a, b):
    ...     if b > 4:
    ...         raise ZeroDivisionError("b too large")
    ...     return a * np.exp(-b * data["x"])
    >>> model = rx.NLS(decay, bounds={"a": (0, 10), "b": (0.01, 5)}, response="y")
    >>> model.values(rx.Sample(np.ones((2, 1)), np.ones(2), ("x",)).frame(), [1.0, 4.5])
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ModelFunctionError: NLS: the model function decay raised
    ZeroDivisionError: b too large, at parameters {'a': 1.0, 'b': 4.5}
    """


class StudyInterrupted(KeyboardInterrupt):
    """A study was interrupted (Ctrl-C); its workers are stopped and the replications that
    finished are in the checkpoint, if one was given.

    A :class:`KeyboardInterrupt`, so an interrupted script still stops unless it catches this.

    Parameters
    ----------
    finished : int
        Replications finished, including those loaded from the checkpoint.
    total : int
        Replications asked for.
    checkpoint : str or None
        The checkpoint directory holding the finished replications (None: not saved).

    Attributes
    ----------
    finished, total : int
        As given.
    checkpoint : str or None
        As given.

    Examples
    --------
    >>> import restrictiveness as rx
    >>> print(rx.StudyInterrupted(37, 200, "runs/lottery"))  # doctest: +NORMALIZE_WHITESPACE
    interrupted: 37 of 200 replications finished, saved in runs/lottery;
    rerun the same command to resume
    """

    def __init__(self, finished: int, total: int, checkpoint: str | None) -> None:
        self.finished, self.total, self.checkpoint = finished, total, checkpoint
        where = (f"saved in {checkpoint}; rerun the same command to resume" if checkpoint
                 else "not saved (pass a checkpoint directory to keep finished replications)")
        super().__init__(f"interrupted: {finished} of {total} replications finished, {where}")


class FailureWarning(UserWarning):
    """Some fits failed or returned invalid predictions; the baseline was used in their place.

    The study still returns its results (SPEC §6): ``results.failures()`` lists the failed
    fits, and the summary's notes count them.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np, restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> class Broken(rx.Procedure):
    ...     def fit(self, sample, rng):
    ...         raise RuntimeError("no convergence")
    >>> study = rx.Study(rx.MonotoneGP(F, n_eval=20), {"broken": Broken()},
    ...                  baseline=rx.Constant(), n=[10], replications=2, seed=1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = study.run(progress=False)
    >>> caught[0].category.__name__, str(caught[0].message)[:58]
    ('FailureWarning', "the baseline's predictions replaced failed fits or invalid")
    """


class SandboxUnavailableError(RestrictivenessError, RuntimeError):
    """A required isolation layer of the sandbox cannot be set up on this machine.

    The message names the layer and how to get it (``rx.sandbox_status()`` lists them all).
    To run untrusted programs with weaker isolation anyway, pass
    ``SandboxLimits(isolation="guard-only")`` explicitly: the in-process guard and resource
    limits only, recorded with every fit.

    Examples
    --------
    Which layers this machine offers is machine-specific (``rx.sandbox_status()``); the error
    is one of the package's, and the weaker isolation is an explicit choice:

    >>> import restrictiveness as rx
    >>> issubclass(rx.SandboxUnavailableError, rx.RestrictivenessError)
    True
    >>> rx.SandboxLimits(isolation="guard-only").isolation
    'guard-only'
    """


class IsolationWarning(UserWarning):
    """Untrusted code runs without the kernel's isolation layers (``isolation="guard-only"``).

    Examples
    --------
    A script that must never run untrusted code with weak isolation turns the warning into an
    error, which stops :func:`~restrictiveness.run_python` before the program starts:

    >>> import warnings, restrictiveness as rx
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", rx.IsolationWarning)
    ...     rx.run_python("print(1)", limits=rx.SandboxLimits(isolation="guard-only"))
    ...     # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.IsolationWarning: run_python: isolation='guard-only' runs
    untrusted code without the kernel's isolation layers (namespaces, Landlock, seccomp); a
    determined program can escape the in-process guard
    """
class CheckpointWarning(UserWarning):
    """A checkpoint record was unreadable, failed its checksum or belongs to another
    configuration; it was moved aside (the message says where) and will be recomputed.

    Examples
    --------
    A damaged record is set aside and its replication recomputed, with the same numbers:

    >>> import tempfile, warnings
    >>> from pathlib import Path
    >>> import numpy as np, restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> study = rx.Study(rx.MonotoneGP(F, n_eval=20), {"linear": rx.OLS("y ~ x")},
    ...                  baseline=rx.Constant(), n=[10], replications=2, seed=1)
    >>> tmp = tempfile.TemporaryDirectory()
    >>> first = study.run(checkpoint=tmp.name, progress=False)
    >>> _ = (Path(tmp.name) / "replication-000000.npz").write_bytes(b"damaged")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     again = study.run(checkpoint=tmp.name, progress=False)
    >>> caught[0].category.__name__, "moved to" in str(caught[0].message)
    ('CheckpointWarning', True)
    >>> bool((again.dataset["loss"] == first.dataset["loss"]).all())
    True
    >>> tmp.cleanup()
    """


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first caller outside the package.

    Call it from the function that calls :func:`warnings.warn`. Frames of ``functools`` are
    skipped too: a ``cached_property`` sits between a property and its computation, so the
    depth at which a warning is raised depends on the path that reached it.

    Examples
    --------
    >>> user_stacklevel()  # called from outside the package: the caller itself
    1
    """
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename == functools.__file__):
        frame, level = frame.f_back, level + 1
    return level

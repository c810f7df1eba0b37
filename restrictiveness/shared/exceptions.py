"""Named exceptions and warnings of :mod:`restrictiveness`.

Every error's docstring is the message a user sees, remedy included.
"""

from __future__ import annotations

__all__ = [
    "RestrictivenessError",
    "FormulaError",
    "DataError",
    "ConstraintError",
    "DomainError",
    "ConfigurationError",
    "BaselineError",
    "CheckpointError",
    "ExecutionError",
    "StudyInterrupted",
    "FailureWarning",
    "SandboxUnavailableError",
    "IsolationWarning",
    "CheckpointWarning",
]


class RestrictivenessError(Exception):
    """Base class of every error raised by :mod:`restrictiveness`."""


class FormulaError(RestrictivenessError, ValueError):
    """A formula cannot be evaluated on the data, e.g. it names a column the data lack.

    Check the spelling of the variables in the formula against ``data.columns``.
    """


class DataError(RestrictivenessError, ValueError):
    """Data are missing, malformed or contain values the method cannot use (NaN, inf, bad order).

    Clean the data (drop or impute missing values) or fix the file, then retry.
    """


class ConstraintError(RestrictivenessError, ValueError):
    """A constraint is impossible or inconsistent (e.g. lower bound above upper bound).

    Fix the constraint's arguments; the message names the offending one.
    """


class DomainError(RestrictivenessError, ValueError):
    """A domain cannot supply the requested locations (empty set, too many points asked).

    Relax the domain's inequality constraints or ask for fewer points.
    """


class ConfigurationError(RestrictivenessError, ValueError):
    """A study is configured inconsistently (duplicate labels, empty sample sizes, ...).

    The message names the argument to change.
    """


class BaselineError(RestrictivenessError, RuntimeError):
    """The baseline procedure failed; restrictiveness is undefined without it.

    The baseline must fit every sample; use a simpler baseline (e.g. ``Constant``).
    """


class CheckpointError(RestrictivenessError, RuntimeError):
    """A checkpoint cannot be used: another configuration or package versions wrote it, its
    ``study.json`` is missing or unreadable, it is in an old format, or its path is unusable.

    Use a fresh checkpoint path, or rerun with the configuration that wrote it; the message
    names the fields that differ.
    """


class ExecutionError(RestrictivenessError, RuntimeError):
    """The machinery running the replications failed: every dask worker is gone, or a worker
    process died (e.g. killed for lack of memory).

    Start workers again (or use fewer, or less memory) and rerun; with a checkpoint, the
    finished replications are kept and the rerun resumes.
    """


class StudyInterrupted(KeyboardInterrupt):
    """A study was interrupted (Ctrl-C); its workers are stopped and the replications that
    finished are in the checkpoint, if one was given.

    Attributes
    ----------
    finished, total : int
        Replications finished (including those loaded from the checkpoint) and asked for.
    checkpoint : str or None
        The checkpoint directory holding the finished replications.
    """

    def __init__(self, finished: int, total: int, checkpoint: str | None) -> None:
        self.finished, self.total, self.checkpoint = finished, total, checkpoint
        where = (f"saved in {checkpoint}; rerun the same command to resume" if checkpoint
                 else "not saved (pass a checkpoint directory to keep finished replications)")
        super().__init__(f"interrupted: {finished} of {total} replications finished, {where}")


class FailureWarning(UserWarning):
    """Some fits failed or returned invalid predictions; the baseline was used in their place."""


class SandboxUnavailableError(RestrictivenessError, RuntimeError):
    """A required isolation layer of the sandbox cannot be set up on this machine.

    The message names the layer and how to get it (``rx.sandbox_status()`` lists them all).
    To run untrusted programs with weaker isolation anyway, pass
    ``SandboxLimits(isolation="guard-only")`` explicitly: the in-process guard and resource
    limits only, recorded with every fit.
    """


class IsolationWarning(UserWarning):
    """Untrusted code runs without the kernel's isolation layers (``isolation="guard-only"``)."""
class CheckpointWarning(UserWarning):
    """A checkpoint record was unreadable, failed its checksum or belongs to another
    configuration; it was moved aside (the message says where) and will be recomputed."""

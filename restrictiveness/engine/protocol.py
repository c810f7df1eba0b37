"""The procedure protocol: what the study runner runs.

A :class:`Procedure` maps a training sample (and internal randomness) to a fitted rule:
``fit(sample, rng) -> Fitted`` and ``Fitted.predict(X) -> predictions``. Procedures must be
picklable (studies ship them to worker processes) and must not keep state between fits.

The contract lives with the engine that runs it (as statsmodels keeps ``Model`` and ``Results``
in ``base``); concrete procedures build on it in :mod:`restrictiveness.procedures`, the
applications and the AI-workflow layer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..shared.sample import Sample

__all__ = ["Procedure", "Fitted", "FunctionRule"]


class Fitted:
    """A fitted prediction rule.

    Attributes
    ----------
    info : dict
        Optional per-fit record (parameters, a returned program, rounds used, ...) that studies
        store with the results as JSON.
    """

    info: dict = {}

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predictions at covariate locations ``X`` (observations along the first axis)."""
        raise NotImplementedError


class FunctionRule(Fitted):
    """A fitted rule given by a function of the covariate array."""

    def __init__(self, function: Callable[[np.ndarray], np.ndarray], info: dict | None = None):
        self.function, self.info = function, dict(info or {})

    def predict(self, X):
        return self.function(X)


class Procedure:
    """Base class: ``fit(sample, rng) -> Fitted``.

    Subclasses set ``label`` (a default name in results) and may set ``draws`` (how many
    training samples per pseudo-truth the procedure is run on; ``None`` uses the study's) and
    ``io_bound`` (its fits mostly wait on a remote service, e.g. a language model: a study run
    with ``concurrency=N`` fits it on N threads; such a procedure must be thread-safe).

    ``Fitted.info["usage"]``, if a fit records it, is a flat dict of counts (model calls,
    tokens, seconds) that the study sums over training draws and ``Results.usage()`` totals.
    """

    label: str = "procedure"
    draws: int | None = None
    io_bound: bool = False

    def fit(self, sample: Sample, rng: np.random.Generator) -> Fitted:
        raise NotImplementedError

    def validate(self, columns: Sequence[str], response: str) -> None:
        """Check the procedure against a study's covariates before anything runs (default: no
        check). Formula procedures raise FormulaError naming a missing column."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"

"""The procedure protocol: what the study runner runs.

A :class:`Procedure` maps a training sample (and internal randomness) to a fitted rule:
``fit(sample, rng) -> Fitted`` and ``Fitted.predict(X) -> predictions``. Procedures must be
picklable (studies ship them to worker processes) and must not keep state between fits.

The contract lives with the engine that runs it (as statsmodels keeps ``Model`` and ``Results``
in ``base``); concrete procedures build on it in :mod:`restrictiveness.procedures`, the
applications and the AI-workflow layer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import numpy as np

from ..shared.exceptions import ConfigurationError
from ..shared.sample import Sample

__all__ = ["Procedure", "Fitted", "FunctionRule", "refuse_estimator"]


class Fitted:
    """A fitted prediction rule: what :meth:`Procedure.fit` returns.

    Subclasses implement :meth:`predict`; :class:`FunctionRule` wraps a plain function.

    Attributes
    ----------
    info : dict
        Optional per-fit record (parameters, a returned program, rounds used, ...) that studies
        store with the results as JSON.

    Examples
    --------
    >>> import numpy as np
    >>> class Half(Fitted):
    ...     def predict(self, X):
    ...         return 0.5 * np.asarray(X)[:, 0]
    >>> Half().predict(np.array([[1.0], [3.0]]))
    array([0.5, 1.5])
    """

    @property
    def info(self) -> dict:
        """Optional per-fit record, stored with the results as JSON (empty unless set)."""
        # one dict per instance, made on first use: a class-level {} would be shared by every
        # rule that writes into it without assigning its own
        return self.__dict__.setdefault("_info", {})

    @info.setter
    def info(self, value: dict) -> None:
        self.__dict__["_info"] = value

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predictions at covariate locations ``X``.

        Parameters
        ----------
        X : ndarray
            Covariates, observations along the first axis (columns as in the training sample).

        Returns
        -------
        ndarray
            One prediction (or one vector of predictions, e.g. a market's shares) per row of
            ``X``.

        Examples
        --------
        >>> import numpy as np
        >>> FunctionRule(lambda X: X.sum(axis=1)).predict(np.array([[1.0, 2.0], [3.0, 4.0]]))
        array([3., 7.])
        """
        raise NotImplementedError


class FunctionRule(Fitted):
    """A fitted rule given by a function of the covariate array.

    Parameters
    ----------
    function : callable
        ``function(X) -> predictions``, ``X`` an array with observations along the first axis.
    info : dict, optional
        The fit's record (copied), stored with a study's results as JSON.

    Examples
    --------
    >>> import numpy as np
    >>> rule = FunctionRule(lambda X: 1 + 2 * X[:, 0], info={"params": [1.0, 2.0]})
    >>> rule.predict(np.array([[0.0], [0.5]])), rule.info
    (array([1., 2.]), {'params': [1.0, 2.0]})
    """

    def __init__(self, function: Callable[[np.ndarray], np.ndarray], info: dict | None = None):
        if not callable(function):  # failed only at the first predict
            raise ConfigurationError(f"FunctionRule takes a function X -> predictions, got "
                                     f"{function!r}")
        self.function, self.info = function, dict(info or {})

    def predict(self, X):
        """Predictions at covariate locations ``X``: ``function(X)``.

        Parameters
        ----------
        X : ndarray
            Covariates, observations along the first axis.

        Returns
        -------
        ndarray
            What the function returns.

        Examples
        --------
        >>> import numpy as np
        >>> FunctionRule(np.exp).predict(np.array([0.0, 1.0])).round(4)
        array([1.    , 2.7183])
        """
        return self.function(X)


class Procedure:
    """Base class of procedures: ``fit(sample, rng) -> Fitted``.

    Subclasses set ``label`` (a default name in results) and may set ``draws`` (how many
    training samples per pseudo-truth the procedure is run on; ``None`` uses the study's) and
    ``io_bound`` (its fits mostly wait on a remote service, e.g. a language model: a study run
    with ``concurrency=N`` fits it on N threads; such a procedure must be thread-safe).

    ``Fitted.info["usage"]``, if a fit records it, is a flat dict of counts (model calls,
    tokens, seconds) that the study sums over training draws and ``Results.usage()`` totals.

    Examples
    --------
    A procedure that predicts the training median, used like any other:

    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> class Median(Procedure):
    ...     label = "median"
    ...     def fit(self, sample, rng=None):
    ...         m = float(np.median(sample.y))
    ...         return FunctionRule(lambda X: np.full(len(X), m), {"params": {"median": m}})
    >>> s = Sample(np.zeros((3, 1)), np.array([1.0, 5.0, 2.0]), ("x",))
    >>> Median().fit(s, np.random.default_rng(0)).predict(np.zeros((2, 1)))
    array([2., 2.])
    >>> Median()
    Median()
    """

    label: str = "procedure"
    draws: int | None = None
    io_bound: bool = False

    def fit(self, sample: Sample, rng: np.random.Generator) -> Fitted:
        """Fit the procedure to a training sample.

        Parameters
        ----------
        sample : Sample
            The training sample (covariates ``X``, labels ``y``, column names).
        rng : numpy.random.Generator
            The procedure's own random stream (a study keys it by replication, label, n and
            draw, so fits are reproducible in any order). Code that draws from numpy's global
            random state or Python's ``random`` instead reproduces too: a study runs each fit
            and each prediction on those states seeded in the same way (one such call at a
            time in a process; except the fits of ``io_bound`` procedures on a study's I/O
            threads, which overlap).

        Returns
        -------
        Fitted
            The fitted rule.

        Examples
        --------
        >>> import numpy as np
        >>> from restrictiveness import Constant, Sample
        >>> s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))
        >>> Constant().fit(s, np.random.default_rng(0)).predict(np.zeros((1, 1)))
        array([2.])
        """
        raise NotImplementedError

    def validate(self, columns: Sequence[str], response: str) -> None:
        """Check the procedure against a study's covariates before anything runs.

        The default checks nothing; formula procedures raise
        :class:`~restrictiveness.FormulaError` naming a column the study lacks.

        Parameters
        ----------
        columns : sequence of str
            The study's covariate names.
        response : str
            The study's response name.

        Examples
        --------
        >>> from restrictiveness import OLS
        >>> OLS("y ~ x1").validate(["x1", "x2"], "y")  # passes silently
        >>> OLS("y ~ x3").validate(["x1", "x2"], "y")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        restrictiveness.shared.exceptions.FormulaError: formula 'y ~ x3' names column(s) ['x3'] ...
        """

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


def refuse_estimator(procedure: object, who: str) -> None:
    """Refuse a scikit-learn-style estimator given where a procedure is expected.

    An estimator (``fit(X, y)``, ``predict(X)``) has a ``fit``, so it passed for a procedure
    (``fit(sample, rng)``): every fit of a study failed with "float() argument must be a string
    or a real number, not 'Sample'" and r̂ only repeated the baseline's.

    Parameters
    ----------
    procedure : object
        What was given as a procedure.
    who : str
        Where it was given, for the message (e.g. ``"procedures['rf']"``).

    Raises
    ------
    ConfigurationError
        Naming the estimator and the adapter that makes it a procedure.

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> refuse_estimator(LinearRegression(), "procedures['ols']")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: procedures['ols'] is a scikit-learn...
    """
    if isinstance(procedure, Procedure) or isinstance(procedure, type) \
            or not callable(getattr(procedure, "predict", None)):
        return
    try:
        first = next(iter(inspect.signature(procedure.fit).parameters), None)  # type: ignore[attr-defined]
    except (TypeError, ValueError):  # no signature to read (a builtin): not refused
        return
    if first == "X":
        shown = " ".join(repr(procedure).split())  # a pipeline's repr spans lines
        raise ConfigurationError(
            f"{who} is a scikit-learn-style estimator with fit(X, y) ({shown}), not a procedure "
            f"with fit(sample, rng): every fit would fail; wrap it, e.g. "
            f"rx.SklearnRegressor({shown}, 'y ~ x1 + x2')")

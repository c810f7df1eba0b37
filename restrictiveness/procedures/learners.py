"""Black-box learners as procedures: scikit-learn regressors and AutoML (SPEC §8).

The paper's TabPFN, TabICL and AutoML procedures are "ordinary fitted regressors run on the same
samples" (SPEC §8):

* :class:`SklearnRegressor` — any scikit-learn-style regressor (``fit(X, y)``, ``predict(X)``),
  cloned per fit, its ``random_state`` drawn from the study's random stream.
* :class:`AutoML` — FLAML's ``AutoML`` (optional extra ``automl``) on a two-dimensional sample,
  with an iteration budget and a seed drawn from the study's random stream.

The demand application's per-product share regressors live in
:mod:`restrictiveness.demand.learners`.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Sequence

import numpy as np

from ..engine.protocol import Fitted, FunctionRule
from ..shared.checks import real_predictions, whole_number
from ..shared.exceptions import ConfigurationError, DataError
from ..shared.formula import parse_formula
from ..shared.random_state import seeded_globals
from ..shared.sample import Sample
from .generic import FormulaProcedure, training_design

__all__ = ["SklearnRegressor", "AutoML", "clone_estimator", "seed_estimator",
           "check_regressor", "global_seed", "FLAML_REGRESSION_LEARNERS"]


def clone_estimator(estimator):
    """A fresh, unfitted copy of a scikit-learn-style estimator (a deep copy without
    scikit-learn, or for estimators it cannot clone)."""
    try:
        from sklearn.base import clone

        return clone(estimator)
    except (ImportError, TypeError, RuntimeError):
        return copy.deepcopy(estimator)


def check_regressor(estimator, who: str) -> None:
    """Refuse a scikit-learn classifier where a regressor is expected.

    A classifier fails on every real-valued response ("Unknown label type: continuous"), so
    a study would run to the end with every fit failed; refused before anything runs instead.
    Estimators that scikit-learn cannot classify (no tags) pass.

    Parameters
    ----------
    estimator : object
        The estimator given.
    who : str
        The procedure, for the message.

    Raises
    ------
    ConfigurationError
        Naming the classifier.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> check_regressor(LogisticRegression(), "SklearnRegressor")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: SklearnRegressor: LogisticRegression() ...
    """
    try:
        from sklearn.base import is_classifier

        classifier = bool(is_classifier(estimator))
    except (ImportError, AttributeError, TypeError):  # no scikit-learn, or no tags to read
        classifier = getattr(estimator, "_estimator_type", None) == "classifier"
    if classifier:
        shown = " ".join(repr(estimator).split())  # a pipeline's repr spans lines
        raise ConfigurationError(f"{who}: {shown} is a classifier; it needs a regressor "
                                 "(predicting real numbers), e.g. LogisticRegression -> "
                                 "LinearRegression, RandomForestClassifier -> "
                                 "RandomForestRegressor")


def seed_estimator(estimator, rng: np.random.Generator) -> None:
    """Set every ``random_state`` parameter of ``estimator`` from ``rng``, nested ones too.

    A pipeline or meta-estimator keeps its steps' seeds as ``step__random_state``: seeding the
    top level alone left ``make_pipeline(StandardScaler(), RandomForestRegressor())`` on the
    global random state, so reruns and ``n_jobs`` runs of the same study gave other numbers.
    The top level's seed is drawn first (an estimator without nested seeds draws as before),
    then the nested ones in name order, then those of shuffling cross-validation splitters
    given as parameters (``cv=KFold(shuffle=True)``), which are not estimators.

    Parameters
    ----------
    estimator : object
        A fresh clone; estimators without ``get_params`` are left as they are.
    rng : numpy.random.Generator
        The fit's random stream.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.ensemble import RandomForestRegressor
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> pipe = make_pipeline(StandardScaler(), RandomForestRegressor())
    >>> seed_estimator(pipe, np.random.default_rng(0))
    >>> isinstance(pipe.get_params()["randomforestregressor__random_state"], int)
    True
    """
    if not hasattr(estimator, "get_params"):
        return
    try:
        params = estimator.get_params(deep=True)
    except TypeError:  # a scikit-learn-style estimator whose get_params takes no deep
        params = estimator.get_params()
    seeds = sorted(name for name in params if name.endswith("__random_state"))
    if "random_state" in params:
        seeds.insert(0, "random_state")
    for name in seeds:
        estimator.set_params(**{name: int(rng.integers(2**31 - 1))})
    # a shuffling splitter (GridSearchCV(cv=KFold(shuffle=True))) is a parameter, not an
    # estimator: its seed is no parameter of the search; the clone holds its own copy
    for name in sorted(params):
        value = params[name]
        if not hasattr(value, "get_params") and not isinstance(value, type) and \
                hasattr(value, "random_state") and getattr(value, "shuffle", True):
            value.random_state = int(rng.integers(2**31 - 1))


def global_seed(rng: np.random.Generator) -> int:
    """A seed for numpy's and Python's global random states, from the fit's stream.

    Taken from a child of the stream (:meth:`numpy.random.Generator.spawn`), which draws
    nothing from it: the ``random_state`` seeds :func:`seed_estimator` draws, and so every
    fit of an estimator that keeps to them, are those of before.

    Parameters
    ----------
    rng : numpy.random.Generator
        The fit's random stream.

    Returns
    -------
    int
        In ``[0, 2**32)``, what :func:`numpy.random.seed` takes.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> global_seed(np.random.default_rng(0)) == global_seed(np.random.default_rng(0))
    True
    >>> seed = global_seed(rng)
    >>> int(rng.integers(10)) == int(np.random.default_rng(0).integers(10))  # nothing drawn
    True
    """
    try:
        child = rng.spawn(1)[0]
    except TypeError:
        # a Generator on a bit generator with no seed sequence (a legacy RandomState's): the
        # seed is drawn from the stream itself
        return int(rng.integers(2**32))
    return int(child.integers(2**32))


def _check_table(sample, who: str) -> None:
    """Refuse markets where a regressor needs a table: one response per row of covariates.

    The demand application's markets (``X (m, J, C)``, shares ``y (m, J)``) reached the
    regressor, whose error ("Found array with dim 3") did not say what to use instead.
    """
    if isinstance(sample, Sample) and (np.ndim(sample.X) != 2 or np.ndim(sample.y) != 1):
        raise DataError(
            f"{who}: needs a table sample, covariates X (n, d) and one response y (n,); got X of "
            f"shape {np.shape(sample.X)} and y of shape {np.shape(sample.y)}. For markets of "
            "products use restrictiveness.demand.learners.LogShareRegressor(<regressor>), which "
            "fits the regressor to each product's log share ratio")


class SklearnRegressor(FormulaProcedure):
    """Any scikit-learn-style regressor as a procedure (scikit-learn is an optional extra).

    The estimator is cloned for every fit; every ``random_state`` parameter it has, those of a
    pipeline's steps or a meta-estimator's inner estimators included, is set from the study's
    random stream, and numpy's and Python's global random states are seeded from it during the
    fit and each prediction (:func:`seeded_globals`), so fits are reproducible at any worker
    count.

    Parameters
    ----------
    estimator : object
        Has ``fit(X, y)`` and ``predict(X)`` (and ``get_params`` to be cloned).
    formula : str, optional
        The covariates as a patsy formula without intercept (``"ce ~ z_hi + z_lo + p"``,
        ``"y ~ np.log(x1) + C(g)"``; default: all columns); needed to fit on a DataFrame.
    label : str, optional
        Name in results (default: the estimator's class name).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> from restrictiveness import Sample
    >>> X = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, 1.0]])
    >>> proc = SklearnRegressor(LinearRegression(), "y ~ x1 + x2")
    >>> proc.label
    'LinearRegression'
    >>> rule = proc.fit(Sample(X, 1 + X[:, 0] - 2 * X[:, 1], ("x1", "x2")))
    >>> rule.predict(np.array([[3.0, 0.0]])).round(6)
    array([4.])
    """

    def __init__(self, estimator, formula: str | None = None, label: str | None = None) -> None:
        if isinstance(estimator, type):  # the class passed for an instance
            raise ConfigurationError(f"estimator must be an instance, e.g. "
                                     f"{estimator.__name__}(), not the class itself")
        if not (hasattr(estimator, "fit") and hasattr(estimator, "predict")):
            raise ConfigurationError(f"estimator must have fit(X, y) and predict(X) methods, "
                                     f"got {estimator!r}")
        check_regressor(estimator, "SklearnRegressor")
        if formula is not None:  # as OLS and GPRegression: a typo is refused when made
            parse_formula(formula)
        self.estimator, self.formula = estimator, formula
        self.label = label or type(estimator).__name__

    def fit(self, sample, rng=None):
        """Fit a clone of the estimator to a training sample or a DataFrame.

        Parameters
        ----------
        sample : Sample or DataFrame
            A study's training sample; or data, whose response the formula names.
        rng : numpy.random.Generator, optional
            The study's stream: the clone's ``random_state`` parameters, nested ones included,
            are drawn from it (seed 0 when omitted).

        Returns
        -------
        FunctionRule
            Predicts with the fitted clone (on the formula's design at new covariates).

        Examples
        --------
        The same stream gives the same randomised fit:

        >>> import numpy as np, pandas as pd
        >>> from sklearn.ensemble import RandomForestRegressor
        >>> df = pd.DataFrame({"x": np.linspace(0, 1, 20)})
        >>> df["y"] = np.sin(6 * df["x"])
        >>> proc = SklearnRegressor(RandomForestRegressor(n_estimators=5), "y ~ x")
        >>> a = proc.fit(df, np.random.default_rng(1)).predict(df)
        >>> b = proc.fit(df, np.random.default_rng(1)).predict(df)
        >>> bool(np.array_equal(a, b)), bool(np.abs(a - df["y"]).max() < 0.5)
        (True, True)
        """
        rng = rng if rng is not None else np.random.default_rng(0)
        _check_table(sample, "SklearnRegressor")
        est = clone_estimator(self.estimator)
        seed_estimator(est, rng)
        seed = global_seed(rng)
        D, y, build, _ = training_design(self.label, self.formula, sample, intercept=False)
        with seeded_globals(seed):
            est.fit(D, y)

        def predict(X):
            with seeded_globals(seed):
                return real_predictions(est.predict(build(X)), self.label)

        return FunctionRule(predict)


def _import_flaml():
    try:
        from flaml import AutoML as FlamlAutoML
    except ImportError as exc:  # flaml missing, or flaml without its automl dependencies
        raise ImportError(
            "AutoML needs FLAML with its AutoML dependencies: install the optional extra with "
            "`pip install restrictiveness[automl]` (or `pip install \"flaml[automl]\"`)"
        ) from exc
    return FlamlAutoML


#: FLAML's regression learners on plain arrays (FLAML 2.8), checked against when FLAML is not
#: installed; with FLAML, its own registry is read.
FLAML_REGRESSION_LEARNERS = ("catboost", "enet", "extra_tree", "histgb", "kneighbor",
                             "lassolars", "lgbm", "rf", "sgd", "transformer", "transformer_ms",
                             "xgb_limitdepth", "xgboost")
# in FLAML's registry but no regression learner here: classifiers, and Spark learners (they
# take Spark data frames only)
_FLAML_CLASSIFIERS = ("lrl1", "lrl2", "svc")


def _flaml_regression_learners() -> tuple[str, ...]:
    """The learner names FLAML's regression search accepts on arrays: read from FLAML's
    registry when it is installed, else :data:`FLAML_REGRESSION_LEARNERS`."""
    try:
        from flaml.automl.task.factory import task_factory

        names = getattr(task_factory("regression"), "estimators")  # noqa: B009 - untyped
    except Exception:  # noqa: BLE001 - FLAML absent, or a version without this registry
        return FLAML_REGRESSION_LEARNERS
    return tuple(sorted(name for name in names
                        if not name.endswith("_spark") and name not in _FLAML_CLASSIFIERS))


def _plain(value):
    """JSON-friendly copy of FLAML's configuration values (NumPy scalars to Python)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class AutoML(FormulaProcedure):
    """FLAML's ``AutoML`` regression search as a procedure (optional extra ``automl``).

    Each fit runs a fresh search on the training sample: ``max_iter`` trials (FLAML's iteration
    budget), optionally capped by ``time_budget`` seconds, over ``estimator_list``, with the
    search seed drawn from the study's random stream. With ``time_budget=None`` the search is
    limited by iterations only, so the same random stream gives the same fitted rule; a time
    budget makes results depend on machine speed.

    Parameters
    ----------
    time_budget : float, optional
        Seconds per search (None: no time limit, iterations only).
    max_iter : int
        Trials per search.
    estimator_list : sequence of str, optional
        FLAML learner names, e.g. ``["lgbm", "rf", "extra_tree"]`` (default: FLAML's "auto").
    formula : str, optional
        The covariates as a patsy formula without intercept (``"ce ~ z_hi + z_lo + p"``;
        default all columns); needed to fit on a DataFrame.
    label : str
        Name in results.
    n_jobs : int
        Threads per trial (default 1: studies parallelise over replications).

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> X = np.random.default_rng(0).random((40, 2))
    >>> s = Sample(X, X.sum(axis=1), ("a", "b"))
    >>> proc = AutoML(max_iter=3, estimator_list=["rf"])
    >>> rule = proc.fit(s, np.random.default_rng(1))  # doctest: +SKIP
    >>> rule.info["best_estimator"]  # doctest: +SKIP
    'rf'
    """

    label = "AutoML (FLAML)"

    def __init__(self, time_budget: float | None = None, max_iter: int = 50,
                 estimator_list: Sequence[str] | None = None, formula: str | None = None,
                 label: str = "AutoML (FLAML)", n_jobs: int = 1) -> None:
        if time_budget is not None and (isinstance(time_budget, bool)
                                        or not isinstance(time_budget, numbers.Real)
                                        or not 0 < time_budget < math.inf):
            raise ConfigurationError(f"time_budget must be positive seconds or None, "
                                     f"got {time_budget!r}")
        try:
            trials = whole_number(max_iter, "max_iter", minimum=1)
        except ConfigurationError:  # None or 2.5 were a bare TypeError or truncated
            raise ConfigurationError(f"max_iter must be an integer of at least 1 (trials), "
                                     f"got {max_iter!r}") from None
        if estimator_list is not None and (isinstance(estimator_list, str)
                                           or not list(estimator_list)
                                           or not all(isinstance(e, str)
                                                      for e in estimator_list)):
            raise ConfigurationError(f"estimator_list must be a non-empty list of FLAML learner "
                                     f"names such as ['lgbm', 'rf'], got {estimator_list!r}")
        if estimator_list is not None:
            # an unknown name failed every fit of a study, each one after FLAML's import
            known = _flaml_regression_learners()
            unknown = [e for e in estimator_list if e not in known]
            if unknown:
                raise ConfigurationError(f"estimator_list names {unknown}, which are not FLAML "
                                         f"regression learners; FLAML's are {list(known)}")
        self.time_budget = None if time_budget is None else float(time_budget)
        self.max_iter = trials
        self.estimator_list = None if estimator_list is None else list(estimator_list)
        if formula is not None:
            parse_formula(formula)
        self.formula, self.label = formula, label
        self.n_jobs = whole_number(n_jobs, "n_jobs", minimum=-1)
        if self.n_jobs == 0:
            raise ConfigurationError("n_jobs must be a positive number of threads, or -1 for all "
                                     "cores; got 0")

    def validate(self, columns: Sequence[str], response: str) -> None:
        """Check the formula against a study's columns, and that FLAML can be imported, before
        any fit (without it every fit of a study failed and r̂ only repeated the baseline's).

        Parameters
        ----------
        columns : sequence of str
            The study's covariate names.
        response : str
            The study's response name.

        Raises
        ------
        FormulaError
            The formula names a column the study lacks.
        ImportError
            FLAML (with its AutoML dependencies) is not installed.

        Examples
        --------
        >>> AutoML(formula="ce ~ z_hi + p").validate(["z_hi", "z_lo", "p"], "ce")  # doctest: +SKIP
        """
        super().validate(columns, response)
        _import_flaml()

    def fit(self, sample: Sample, rng: np.random.Generator | None = None) -> Fitted:
        """Run a search on a training sample or a DataFrame.

        Parameters
        ----------
        sample : Sample or DataFrame
            A study's two-dimensional training sample with one response; or data, whose
            response the formula names.
        rng : numpy.random.Generator, optional
            The study's stream: the search seed is drawn from it (seed 0 when omitted).

        Returns
        -------
        FunctionRule
            Predicts with the best model found; ``info`` records ``best_estimator``,
            ``best_config``, ``best_loss`` and ``seed``.

        Raises
        ------
        ImportError
            FLAML (with its AutoML dependencies) is not installed.
        DataError
            A sample that is not two-dimensional with one response (markets), or a search
            that fitted no model (too few observations for FLAML's validation).

        Examples
        --------
        Not run by the doctests: it needs the ``automl`` extra, and importing FLAML and one
        search take about two seconds.

        >>> import numpy as np
        >>> from restrictiveness import Sample
        >>> X = np.random.default_rng(0).random((40, 2))
        >>> s = Sample(X, X.sum(axis=1), ("a", "b"))
        >>> rule = AutoML(max_iter=2, estimator_list=["rf"]).fit(s)  # doctest: +SKIP
        >>> rule.info["best_estimator"], rule.predict(X[:2]).shape  # doctest: +SKIP
        ('rf', (2,))
        """
        flaml_automl = _import_flaml()
        rng = rng if rng is not None else np.random.default_rng(0)
        _check_table(sample, "AutoML")
        X, y, build, _ = training_design(self.label, self.formula, sample, intercept=False)
        seed = int(rng.integers(2**31 - 1))
        states = global_seed(rng)
        search = flaml_automl()
        # FLAML seeds Python's random itself: the caller's state was left changed
        with seeded_globals(states):
            search.fit(X, y, task="regression", max_iter=self.max_iter,
                       time_budget=-1 if self.time_budget is None else self.time_budget,
                       estimator_list=self.estimator_list or "auto", seed=seed, verbose=0,
                       n_jobs=self.n_jobs, log_file_name="")
        if search.best_estimator is None:
            # FLAML then predicts one NaN for any query: a fit with no model must fail by name
            raise DataError(f"AutoML: FLAML's search ended without a fitted model (no trial of "
                            f"{self.max_iter} succeeded) on {len(y)} observations; give more "
                            "observations, trials (max_iter) or time (time_budget)")
        info = {"best_estimator": search.best_estimator,
                "best_config": _plain(search.best_config),
                "best_loss": float(search.best_loss), "seed": seed}
        def predict(Xq):
            with seeded_globals(states):
                return real_predictions(search.predict(build(Xq)), self.label)

        return FunctionRule(predict, info)

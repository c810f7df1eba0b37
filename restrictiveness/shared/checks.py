"""Checks of user options where they enter: an option the package cannot honour is refused by name.

``int(x)`` would turn ``2.5`` into 2, ``True`` into 1 and ``None`` into a bare ``TypeError``;
:func:`whole_number` refuses each of them with the option's name and what is allowed.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Hashable, Iterable, Mapping

import numpy as np
import pandas as pd

from .exceptions import ConfigurationError, DataError

__all__ = ["MAX_SEED", "whole_number", "is_whole", "is_positive", "flag", "probability",
           "labelled", "repeated",
           "keywords_of", "known_keywords", "numeric_column", "numeric_columns",
           "aligned_by_label", "real_predictions", "ids_of_one_type", "describe_rows"]

#: The largest root seed of a study: results store it as a 64-bit NetCDF attribute.
MAX_SEED = 2**63 - 1


def whole_number(value: object, name: str, minimum: int | None = None) -> int:
    """``value`` as an int, refused unless it is a whole number of at least ``minimum``.

    Integers, NumPy integers and integral floats (``10.0``) are accepted; booleans, strings,
    ``None``, fractions and non-finite numbers are refused.

    Parameters
    ----------
    value : object
        The option as the user gave it.
    name : str
        The option's name, for the message.
    minimum : int, optional
        The smallest allowed value.

    Returns
    -------
    int
        The value.

    Raises
    ------
    ConfigurationError
        Naming the option, the allowed values and what was given.

    Examples
    --------
    >>> whole_number(10.0, "replications", minimum=2)
    10
    >>> whole_number(2.5, "replications", minimum=2)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: replications must be a whole number
    >= 2, got 2.5
    """
    allowed = "a whole number" + ("" if minimum is None else f" >= {minimum}")
    if not is_whole(value) or (minimum is not None and value < minimum):  # type: ignore[operator]
        raise ConfigurationError(f"{name} must be {allowed}, got {value!r}")
    return int(value)  # type: ignore[call-overload]


def is_whole(value: object) -> bool:
    """Whether ``value`` is a whole number: an integer or an integral float, not a bool.

    Examples
    --------
    >>> is_whole(3), is_whole(3.0), is_whole(2.5), is_whole(True), is_whole(None)
    (True, True, False, False, False)
    """
    if isinstance(value, bool):
        return False
    return isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and float(value).is_integer())  # False for nan, inf


def flag(value: object, name: str) -> bool:
    """``value`` as a bool, refused unless it is one (``bool("no")`` is True).

    Examples
    --------
    >>> flag(False, "run_at_fit")
    False
    >>> flag("no", "run_at_fit")
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: run_at_fit must be True or False, got 'no'
    """
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigurationError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def repeated(values: Iterable[Hashable]) -> list:
    """The values that occur more than once, each once, in the order they recur.

    Examples
    --------
    >>> repeated(["a", "b", "b", "a", "c"])
    ['b', 'a']
    >>> repeated([50, 100])
    []
    """
    seen: set = set()
    again: dict = {}
    for v in values:
        if v in seen:
            again[v] = None
        seen.add(v)
    return list(again)


def describe_rows(bad, rows: pd.Index | None) -> str:
    """``"2 row(s) (index [3, 7])"``: the count of rows ``bad`` marks and up to five of their
    labels (their positions when ``rows`` is None).

    Examples
    --------
    >>> describe_rows(np.array([False, True, True]), pd.Index(["a", "b", "c"]))
    "2 row(s) (index ['b', 'c'])"
    """
    at = np.flatnonzero(bad)
    shown = [rows[i] for i in at[:5]] if rows is not None else at[:5].tolist()
    listed = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in shown)
    more = ", ..." if at.size > 5 else ""
    return f"{at.size} row(s) ({'index' if rows is not None else 'rows'} [{listed}{more}])"


def is_positive(value: object) -> bool:
    """Whether ``value`` is a finite number above 0, not a bool or a string.

    Examples
    --------
    >>> is_positive(0.05), is_positive(0), is_positive("0.05"), is_positive(True)
    (True, False, False, False)
    """
    return (not isinstance(value, bool) and isinstance(value, numbers.Real)
            and math.isfinite(value) and float(value) > 0)


def numeric_column(column: pd.Series, who: str, error: type[Exception] = DataError) -> None:
    """Refuse a data column that is not numbers (or booleans).

    ``np.asarray(column, dtype=float)`` would read the strings ``"1.5"`` as numbers and a
    categorical column as its category values, silently; a complex column would lose its
    imaginary part.

    Parameters
    ----------
    column : pandas.Series
        The column.
    who : str
        The caller, for the message.
    error : type
        The exception raised (default :class:`DataError`).

    Raises
    ------
    DataError
        Naming the column and its dtype (or ``error``).

    Examples
    --------
    >>> import pandas as pd
    >>> numeric_column(pd.Series([1, 2], name="x"), "f")  # passes silently
    >>> numeric_column(pd.Series(["1", "2"], name="x"), "f")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.DataError: f: column 'x' is not numeric ...
    """
    types = pd.api.types
    dtype = column.dtype
    if types.is_bool_dtype(dtype) or (types.is_numeric_dtype(dtype)
                                      and not types.is_complex_dtype(dtype)
                                      and not isinstance(dtype, pd.CategoricalDtype)):
        return
    hint = " (a categorical column: convert it with .astype(float) if its categories are " \
        "numbers)" if isinstance(dtype, pd.CategoricalDtype) else ""
    raise error(f"{who}: column {column.name!r} is not numeric (dtype {dtype}); convert it "
                    f"to real numbers first{hint}")


def real_predictions(values: object, who: str) -> np.ndarray:
    """Predictions as a float array, refusing what a float cast would misread.

    ``np.asarray(values, dtype=float)`` drops the imaginary part of complex predictions with
    only NumPy's ``ComplexWarning``, reads strings such as ``"0.5"`` as numbers and booleans as
    0 and 1: a rule returning them would be scored on numbers it never gave. Booleans are a
    comparison returned in place of a value (``X[:, 0] > 0.5``), not a prediction of a real
    outcome, so under the failure protocol (SPEC §6) they fail the prediction like any error;
    a rule meaning 0 and 1 returns numbers (``.astype(float)``).

    Parameters
    ----------
    values : array_like
        What a rule's ``predict`` returned.
    who : str
        The rule, for the message.

    Returns
    -------
    ndarray
        ``values`` as float64.

    Raises
    ------
    DataError
        Complex, boolean, text, date or structured predictions.

    Examples
    --------
    >>> real_predictions([1, 2.5], "rule")
    array([1. , 2.5])
    >>> real_predictions(np.array([1 + 0j]), "rule")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.DataError: rule: predictions are complex numbers; ...
    """
    array = np.asarray(values)
    kind = array.dtype.kind
    if kind == "O":  # a pandas Series of text, or mixed objects: look at the items
        odd = next((v for v in array.flat
                    if isinstance(v, str | bytes | complex | bool | np.bool_)), None)
        if odd is not None:
            kind = ("c" if isinstance(odd, complex) else "b" if isinstance(odd, bool | np.bool_)
                    else "U")
    if kind not in "iufO":
        what = ("complex numbers" if kind == "c" else "booleans (True/False)" if kind == "b"
                else f"not numbers ({array.dtype})")
        hint = " (.astype(float) if 0 and 1 are meant)" if kind == "b" else ""
        raise DataError(f"{who}: predictions are {what}; a prediction rule must return real "
                        f"numbers{hint}")
    return np.asarray(array, dtype=float)


def numeric_columns(frame: pd.DataFrame, names: Iterable[str], who: str) -> None:
    """Refuse data columns that appear twice or are not numbers (:func:`numeric_column`).

    A name the frame holds twice selects both columns: the first was read silently, or a
    reshape failed with a bare error.

    Parameters
    ----------
    frame : pandas.DataFrame
        The data (every name must be one of its columns).
    names : iterable of str
        The columns the caller reads.
    who : str
        The caller, for the message.

    Raises
    ------
    DataError
        Naming the repeated or non-numeric column.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame([[1.0, 2.0, 3.0]], columns=["x", "y", "x"])
    >>> numeric_columns(df, ["y"], "f")  # passes silently
    >>> numeric_columns(df, ["x", "y"], "f")
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.DataError: f: the data have column(s) ['x'] more than once
    """
    names = list(names)
    columns = list(frame.columns)
    twice = [c for c in names if columns.count(c) > 1]
    if twice:
        raise DataError(f"{who}: the data have column(s) {twice} more than once")
    for c in names:
        numeric_column(frame[c], who)


def ids_of_one_type(values: pd.Series, what: str) -> None:
    """Refuse identifiers of mixed types (``1`` and ``'1'``), which would be different ids.

    Parameters
    ----------
    values : pandas.Series
        A column of identifiers (markets, products, clusters).
    what : str
        The column, for the message.

    Raises
    ------
    DataError
        If an object column holds more than one type (NumPy scalars count as their Python
        kind: ``3`` and ``np.int64(3)`` are one id).

    Examples
    --------
    >>> ids_of_one_type(pd.Series([1, 2, 2]), "market_ids")  # passes silently
    >>> ids_of_one_type(pd.Series([1, "1"]), "market_ids")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.DataError: market_ids mixes types (int, str): ...
    """
    if values.dtype != object:
        return
    kinds = sorted({type(v.item() if isinstance(v, np.generic) else v).__name__
                    for v in values})
    if len(kinds) > 1:  # 1 and '1' were two groups, silently; 0 and 'a' a TypeError
        raise DataError(f"{what} mixes types ({', '.join(kinds)}): ids such as 1 and '1' "
                        "would be different; convert it to one type")


def aligned_by_label(series: pd.Series, index: pd.Index, name: str) -> np.ndarray:
    """A Series of per-row values aligned with the data's rows by index label (as pandas,
    statsmodels' formulas and linearmodels align), never by position.

    Parameters
    ----------
    series : pandas.Series
        One value per row of the data, labelled by the data's index.
    index : pandas.Index
        The data's row labels.
    name : str
        The argument, for messages (``"groups"``, ``"weights"``).

    Returns
    -------
    ndarray
        The values in the data's row order.

    Raises
    ------
    DataError
        If a row label is missing, or either index is not unique (and they differ).

    Examples
    --------
    >>> import pandas as pd
    >>> aligned_by_label(pd.Series([1, 2, 3], index=[2, 0, 1]), pd.RangeIndex(3), "w").tolist()
    [2, 3, 1]
    """
    if series.index.equals(index):
        return series.to_numpy()
    if not series.index.is_unique or not index.is_unique:
        raise DataError(f"{name} is a Series whose index differs from the data's and is not "
                        "unique (or the data's is not), so it cannot be aligned by label; give "
                        "a Series with the data's index, a column name or an array in the "
                        "data's row order")
    missing = index.difference(series.index)
    if len(missing):
        raise DataError(f"{name} is a Series whose index lacks {len(missing)} of the data's "
                        f"row labels (e.g. {missing[:5].tolist()}); it is aligned by index "
                        "label, so it must hold every row of the data")
    return series.reindex(index).to_numpy()


def probability(value: object, name: str) -> float:
    """``value`` as a float strictly between 0 and 1 (a coverage level or a test size).

    Parameters
    ----------
    value : object
        The option as the user gave it.
    name : str
        The option's name, for the message.

    Returns
    -------
    float
        The value.

    Raises
    ------
    ConfigurationError
        Unless ``value`` is a number in the open interval (0, 1).

    Examples
    --------
    >>> probability(0.95, "level")
    0.95
    >>> probability(95, "level")
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: level must lie in (0, 1), got 95
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 < value < 1:  # type: ignore[operator]
        raise ConfigurationError(f"{name} must lie in (0, 1), got {value!r}")
    return float(value)


def labelled(procedures: object, default: Callable[[], dict]) -> dict:
    """Procedures by label: a mapping copied to a dict, or ``default()`` for None.

    The applications' study and completeness helpers take ``{label: procedure}``; a list
    (``dict([proc])``) was a bare TypeError.

    Parameters
    ----------
    procedures : mapping or None
        The procedures as the user gave them.
    default : callable
        Returns the default procedures.

    Returns
    -------
    dict
        Label → procedure.

    Raises
    ------
    ConfigurationError
        If ``procedures`` is neither None nor a mapping.

    Examples
    --------
    >>> labelled(None, lambda: {"a": 1}), labelled({"b": 2}, dict)
    ({'a': 1}, {'b': 2})
    >>> labelled([2], dict)  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: procedures must be a mapping {label:
    procedure}, e.g. {'CPT': rx.lottery.CPT()}; got list
    """
    if procedures is None:
        return default()
    if not isinstance(procedures, Mapping):
        raise ConfigurationError(f"procedures must be a mapping {{label: procedure}}, e.g. "
                                 f"{{'CPT': rx.lottery.CPT()}}; got {type(procedures).__name__}")
    return dict(procedures)


def baseline_label(baseline: object, procedures: Mapping) -> str:
    """The name a study gives its baseline: the baseline's own label, or ``"baseline"`` when it
    has none or a procedure already has it (as completeness names its baseline).

    The applications' studies named any baseline the caller passed by the default's name
    (``EV``, ``logit``): a CPT baseline was summarised as "Baseline: EV = CPT(...)".

    Parameters
    ----------
    baseline : Procedure
        The study's baseline.
    procedures : mapping
        The study's procedures by label.

    Returns
    -------
    str

    Examples
    --------
    >>> class P:
    ...     label = "CPT(alpha)"
    >>> baseline_label(P(), {"GP": None}), baseline_label(P(), {"CPT(alpha)": None})
    ('CPT(alpha)', 'baseline')
    """
    label = getattr(baseline, "label", None)
    if not isinstance(label, str) or label in ("", "procedure") or label in procedures:
        return "baseline"
    return label


def keywords_of(target: Callable, skip: Iterable[str] = ()) -> list[str]:
    """The keyword arguments ``target`` accepts by name, in signature order, less ``skip``.

    Parameters
    ----------
    target : callable
        A function or class (its ``__init__``).
    skip : iterable of str
        Names the caller sets itself (or fixes), so a user may not pass them.

    Returns
    -------
    list of str

    Examples
    --------
    >>> def f(data, a, *, b=1, **rest): ...
    >>> keywords_of(f, skip=("data",))
    ['a', 'b']
    """
    skipped = set(skip)
    return [p.name for p in inspect.signature(target).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in skipped]


def known_keywords(given: Mapping[str, object], accepted: Iterable[str], who: str) -> None:
    """Refuse keyword arguments outside ``accepted`` before they are passed on.

    A ``**options`` passed to another function would fail there with a ``TypeError`` naming
    that function (or, where the receiver takes ``**`` itself, be ignored); this names the
    function the user called, the unknown keys and the accepted ones.

    Parameters
    ----------
    given : mapping
        The keyword arguments as the user gave them.
    accepted : iterable of str
        The names the receiving function takes.
    who : str
        The function the user called, for the message.

    Raises
    ------
    ConfigurationError
        Naming the unknown keys and listing the accepted ones.

    Examples
    --------
    >>> known_keywords({"cov_type": "HC1"}, ["cov_type", "groups"], "NLS.fit")
    >>> known_keywords({"cov": "HC1"}, ["cov_type", "groups"], "NLS.fit")
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: NLS.fit: unknown keyword argument(s)
    ['cov']; accepted: ['cov_type', 'groups']
    """
    names = list(accepted)
    unknown = [k for k in given if k not in names]
    if unknown:
        raise ConfigurationError(f"{who}: unknown keyword argument(s) {unknown}; accepted: "
                                 f"{names}")

"""Checks of user options where they enter: an option the package cannot honour is refused by name.

``int(x)`` would turn ``2.5`` into 2, ``True`` into 1 and ``None`` into a bare ``TypeError``;
:func:`whole_number` refuses each of them with the option's name and what is allowed.
"""

from __future__ import annotations

import numbers

from .exceptions import ConfigurationError

__all__ = ["whole_number"]


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
    whole = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and float(value).is_integer())  # False for nan, inf
    if isinstance(value, bool) or not whole \
            or (minimum is not None and value < minimum):  # type: ignore[operator]
        raise ConfigurationError(f"{name} must be {allowed}, got {value!r}")
    return int(value)  # type: ignore[call-overload]

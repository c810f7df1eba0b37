"""Usage records of fits that call paid services (language models): counts and prices.

A fit may record ``info["usage"]``, a flat dict of counts — ``calls``, ``cached_calls``,
``failed_calls``, ``unreported_calls`` (answered calls whose token counts the endpoint did not
report), ``retries``, ``input_tokens``, ``output_tokens``, ``seconds`` for the
language-model procedures. The study sums it over training draws (:func:`add_usage`) and
:meth:`Results.usage() <restrictiveness.engine.results.Results.usage>` totals it by procedure
and n, pricing tokens with a user's price table (:func:`price_per_token`). No prices ship with
the package: they change too often to be right for long.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from ..shared.exceptions import ConfigurationError

__all__ = ["USAGE_KEYS", "add_usage", "price_per_token"]

#: The counts of a usage record that are totalled.
USAGE_KEYS = ("calls", "cached_calls", "failed_calls", "unreported_calls", "retries",
              "input_tokens", "output_tokens", "seconds")


def add_usage(total: dict, usage: Mapping) -> None:
    """Add the numeric counts of ``usage`` into ``total`` (in place).

    Examples
    --------
    >>> t = {"calls": 1, "input_tokens": 10}
    >>> add_usage(t, {"calls": 2, "input_tokens": 5, "note": "x"}); t
    {'calls': 3, 'input_tokens': 15}
    """
    for key, value in usage.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value


def price_per_token(prices: Mapping[str, Sequence[float] | Mapping[str, float]],
                    model: str | None) -> tuple[float, float]:
    """Dollars per input and per output token of ``model`` from a table of dollars per
    million tokens, ``{model: (input, output)}`` or ``{model: {"input": .., "output": ..}}``.

    Examples
    --------
    >>> price_per_token({"m": (2.5, 10.0)}, "m")
    (2.5e-06, 1e-05)
    """
    if model is None or model not in prices:
        raise ConfigurationError(f"prices: no price for model {model!r}; the table prices "
                                 f"{sorted(map(str, prices))}")
    entry = prices[model]
    try:
        # other keys (a cached-input price, a typo of "output") would be ignored silently
        if isinstance(entry, Mapping) and set(entry) != {"input", "output"}:
            raise KeyError
        # a string is a sequence too: "25" was read as $2 and $5, b"12" as $49 and $50
        if isinstance(entry, (str, bytes, bytearray)) or any(
                isinstance(v, bool) for v in (entry.values() if isinstance(entry, Mapping)
                                              else entry)):
            raise TypeError
        if isinstance(entry, Mapping):
            p_in, p_out = float(entry["input"]), float(entry["output"])
        else:
            p_in, p_out = (float(v) for v in entry)
    except (KeyError, TypeError, ValueError):
        raise ConfigurationError(f"prices[{model!r}] must be (input, output) dollars per "
                                 f"million tokens, got {entry!r}") from None
    if not (0 <= p_in < math.inf and 0 <= p_out < math.inf):  # a NaN cost summed to $0.00
        raise ConfigurationError(f"prices[{model!r}] must be finite and nonnegative, got "
                                 f"{entry!r}")
    return p_in / 1e6, p_out / 1e6

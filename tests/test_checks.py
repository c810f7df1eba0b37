"""The option checks every public constructor uses (restrictiveness.shared.checks), at the edges
of what they accept: the minimum itself, booleans (``int(True)`` is 1), the ends of (0, 1)."""

from __future__ import annotations

import numpy as np
import pytest

from restrictiveness.shared.checks import is_whole, probability, whole_number
from restrictiveness.shared.exceptions import ConfigurationError


@pytest.mark.parametrize(("value", "minimum", "expected"), [
    (2, 2, 2), (2.0, 2, 2), (np.int64(0), 0, 0), (-1, -1, -1), (7, None, 7)])
def test_whole_numbers_at_the_minimum_are_accepted(value, minimum, expected):
    out = whole_number(value, "draws", minimum=minimum)
    assert out == expected and type(out) is int


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 1.5, float("inf"),
                                   float("nan"), "3", None, 1 + 0j])
def test_non_whole_numbers_are_refused_by_name(value):
    assert not is_whole(value)
    with pytest.raises(ConfigurationError, match=r"draws must be a whole number, got "):
        whole_number(value, "draws")


def test_values_below_the_minimum_are_refused():
    with pytest.raises(ConfigurationError, match="draws must be a whole number >= 1, got 0"):
        whole_number(0, "draws", minimum=1)


@pytest.mark.parametrize("value", [0, 1, 0.0, 1.0, -0.5, 1.5, True, float("nan"), "0.5"])
def test_probabilities_outside_the_open_interval_are_refused(value):
    with pytest.raises(ConfigurationError, match=r"level must lie in \(0, 1\)"):
        probability(value, "level")


@pytest.mark.parametrize("value", [1e-12, 0.5, np.float64(0.95), 1 - 1e-12])
def test_probabilities_inside_the_open_interval_are_accepted(value):
    assert probability(value, "level") == float(value)

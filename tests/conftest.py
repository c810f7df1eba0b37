"""Shared fixtures and paths for the test suite."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
#: --doctest-modules imports every module under tests/; this script would rewrite the fixtures
#: made before the layout change with the current code.
collect_ignore = ["data/make_v0_fixtures.py"]
#: The lottery data are never shipped: tests read them from the shared folder beside the repo.
BRUHIN_CSV = REPO.parent / "shared" / "data" / "bruhin2010" / "ch03_data.csv"


def pytest_sessionstart(session) -> None:
    """Under CI=true a missing data file fails the run: skipped tests would hide it."""
    if os.environ.get("CI", "").lower() == "true" and not BRUHIN_CSV.is_file():
        raise pytest.UsageError(f"CI=true but the Bruhin lottery data are missing at {BRUHIN_CSV}; "
                                "put ch03_data.csv there (tests needing it are skipped only "
                                "outside CI)")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)

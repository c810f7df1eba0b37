"""Shared fixtures and paths for the test suite."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
#: --doctest-modules imports every module under tests/; this script would rewrite the fixtures
#: made before the layout change with the current code.
collect_ignore = ["data/make_v0_fixtures.py"]
#: The lottery data are never shipped: tests read them from the shared folder beside the repo.
BRUHIN_CSV = REPO.parent / "shared" / "data" / "bruhin2010" / "ch03_data.csv"


def shared_data(path: Path) -> Path:
    """``path`` if the file exists. Otherwise the test is skipped on a developer's machine and
    *fails* under ``CI=true``, so a green CI run shows that the real-data tests ran."""
    if path.is_file():
        return path
    message = f"real data not found at {path}"
    if os.environ.get("CI", "").strip().lower() in ("true", "1"):
        pytest.fail(f"{message}; CI=true requires it (put the shared folder beside the "
                    "repository, or unset CI to skip real-data tests)", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def bruhin_csv() -> Path:
    """The Bruhin et al. (2010) lottery data (see :func:`shared_data`)."""
    return shared_data(BRUHIN_CSV)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt in the test, as in an interactive session: a shell starts
    a backgrounded pytest with SIGINT ignored, and Python then leaves it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)

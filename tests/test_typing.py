"""mypy on the package (configured in pyproject.toml), against a baseline that may only
shrink: a file with more errors than ``mypy_baseline.json`` allows fails, and so does a file
whose count fell without the baseline being lowered. Slow (a cold run takes minutes), so it is
run on demand and in CI: ``python -m pytest -m slow tests/test_typing.py``."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parents[1]
BASELINE = Path(__file__).parent / "mypy_baseline.json"


def mypy_errors() -> dict[str, int]:
    """Error count by file from ``python -m mypy`` at the repository root."""
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                         text=True, check=False).stdout
    counts = collections.Counter(m.group(1) for m in
                                 re.finditer(r"^(\S+\.py):\d+: error:", out, re.MULTILINE))
    return dict(sorted(counts.items()))


@pytest.mark.slow
def test_mypy_no_new_errors():
    found, allowed = mypy_errors(), json.loads(BASELINE.read_text())
    worse = {f: (n, allowed.get(f, 0)) for f, n in found.items() if n > allowed.get(f, 0)}
    better = {f: (found.get(f, 0), n) for f, n in allowed.items() if found.get(f, 0) < n}
    assert not worse, f"new mypy errors (found, allowed) by file: {worse}"
    assert not better, f"fewer mypy errors than {BASELINE.name} allows; lower it: {better}"

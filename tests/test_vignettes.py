"""Vignettes are executed, not just read: each must run to the end."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

VIGNETTES = sorted((Path(__file__).resolve().parents[1] / "vignettes").glob("*.py"))


@pytest.mark.parametrize("path", VIGNETTES, ids=[p.stem for p in VIGNETTES])
def test_vignette_runs(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(path)])
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "Restrictiveness r̂ (se)" in out

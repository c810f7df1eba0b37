"""The suite does not hide what it cannot run: no ``pytest.importorskip`` of a package that the
test extra installs (issue 18), so a broken install fails the tests instead of skipping them."""

from __future__ import annotations

import ast
import configparser
import importlib.metadata
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def extra_modules(setup_cfg: Path = ROOT / "setup.cfg") -> set[str]:
    """Top-level modules the test extra installs: its distributions' and their extras'."""
    parser = configparser.ConfigParser()
    parser.read(setup_cfg)
    dists: set[str] = set()
    for line in parser["options.extras_require"]["test"].splitlines():
        line = line.split("#")[0].split(";")[0].strip()
        if not line:
            continue
        m = re.match(r"([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?", line)
        assert m, line
        dists.add(_canonical(m.group(1)))
        dists.update(_canonical(e) for e in (m.group(2) or "").split(",") if e.strip())
    return {module for module, owners in importlib.metadata.packages_distributions().items()
            if any(_canonical(d) in dists for d in owners)}


def skips_of_installed_packages(sources: dict[str, str], installed: set[str]) -> list[str]:
    """``importorskip`` calls whose module the extra installs, or that name it by a variable
    (which cannot be checked)."""
    found = []
    for name, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                    node.func, "id", None)) == "importorskip" and node.args:
                arg = node.args[0]
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    found.append(f"{name}:{node.lineno}: importorskip of a variable")
                elif arg.value.split(".")[0] in installed:
                    found.append(f"{name}:{node.lineno}: importorskip({arg.value!r})")
    return found


def test_the_checker_flags_installed_and_unnamed_modules():
    installed = {"numpy", "openai"}
    sources = {"a.py": 'import pytest\nnp = pytest.importorskip("numpy.linalg")\n',
               "b.py": 'from pytest import importorskip\nfor m in ["x"]:\n    importorskip(m)\n',
               "c.py": 'import pytest\npytest.importorskip("cupy")\n'}
    assert skips_of_installed_packages(sources, installed) == [
        "a.py:2: importorskip('numpy.linalg')", "b.py:3: importorskip of a variable"]


def test_the_test_extra_covers_the_sdks_dask_and_psutil():
    modules = extra_modules()
    assert {"openai", "anthropic", "distributed", "dask", "psutil", "flaml", "numpydoc",
            "hypothesis", "sklearn"} <= modules


def test_no_importorskip_of_a_package_the_test_extra_installs():
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
               for p in sorted((ROOT / "tests").glob("*.py"))}
    sources["conftest.py"] = (ROOT / "conftest.py").read_text(encoding="utf-8")
    assert skips_of_installed_packages(sources, extra_modules()) == []

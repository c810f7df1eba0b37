"""Sphinx configuration: numpydoc API pages, the vignettes executed by sphinx-gallery.

Build: ``python -m sphinx -W -b html docs docs/_build/html`` (after ``pip install -e ".[docs]"``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS))  # _gallery.py (the figure scraper)

import restrictiveness  # noqa: E402

project = "restrictiveness"
author = "Restrictiveness authors"
copyright = "2026, Restrictiveness authors"
release = version = restrictiveness.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

html_theme = "pydata_sphinx_theme"
html_title = f"restrictiveness {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
# The build works offline (no intersphinx): CI machines may have no network.
exclude_patterns = ["_build", "_vignettes", "_gallery.py"]
templates_path: list[str] = []

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
# numpydoc renders the docstrings; its own class member tables would duplicate autosummary's.
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False
# The package's docstrings use `x` for inline code (STYLE.md); render it as literal text.
default_role = "literal"
nitpicky = False

# -- the vignettes ---------------------------------------------------------------------------
# vignettes/*.py are percent-format scripts with Markdown text cells (they run as plain
# `python vignettes/NN_x.py`). sphinx-gallery reads reStructuredText, so each build writes a
# copy to docs/_vignettes/ with the text cells converted (headings underlined, `code` literal)
# and __file__ pointing at the original, then executes that copy: the code run is the
# vignette's, unchanged.


def _md_to_rst(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        m = re.match(r"^(#{1,3}) (.*)$", line)
        if m:
            title = _inline(m.group(2))
            out += [title, "=-~"[len(m.group(1)) - 1] * len(title), ""]
        else:
            out.append(_inline(line))
    return out


def _inline(text: str) -> str:
    return re.sub(r"(?<!`)`([^`]+)`(?!`)", r"``\1``", text)


def convert_vignette(src: Path, dst: Path) -> None:
    """Write the sphinx-gallery form of one percent-format vignette."""
    cells: list[tuple[str, list[str]]] = []
    for line in src.read_text().splitlines():
        if line.startswith("# %%"):
            cells.append(("md" if "[markdown]" in line else "code", []))
        elif cells:
            cells[-1][1].append(line)
    parts: list[str] = []
    for i, (kind, lines) in enumerate(cells):
        if kind == "md":
            text = _md_to_rst([ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in lines])
            if i == 0:
                parts.append('"""\n' + "\n".join(text).strip() + '\n"""\n')
            else:
                parts.append("# %%\n" + "\n".join(("# " + t).rstrip() for t in text).rstrip()
                             + "\n")
        else:
            code = "\n".join(lines).replace("Path(__file__)", f"Path({str(src)!r})")
            parts.append(code.strip("\n") + "\n")
    dst.write_text("\n".join(parts))


VIGNETTES = DOCS / "_vignettes"
VIGNETTES.mkdir(exist_ok=True)
(VIGNETTES / "README.rst").write_text(
    "Vignettes\n=========\n\nThe scripts in ``vignettes/``, executed when these pages were "
    "built; their output and figures are shown as produced. The lottery data are read from "
    "``../shared/data/bruhin2010/ch03_data.csv`` when present; without them the real-data "
    "parts print a line saying they were skipped.\n")
for _src in sorted((ROOT / "vignettes").glob("[0-9]*.py")):
    convert_vignette(_src, VIGNETTES / f"plot_{_src.name}")

sphinx_gallery_conf = {
    "examples_dirs": str(VIGNETTES),
    "gallery_dirs": "vignettes",
    "filename_pattern": r"plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("_gallery.tight_matplotlib_scraper",),
    "abort_on_example_error": True,
}

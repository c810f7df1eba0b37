"""The Python examples of README.md and docs/*.rst run as written (at small sizes).

The docstrings' examples run as doctests; these pages' code blocks were run by nothing, and one
used a name it never defined (``data``) and gave its completeness run other labels than its
study, so its frontier silently left out GP regression. Each page's blocks run in order in one
namespace, as a reader would paste them, with every study cut to 2 replications at n = 20;
blocks that call a language model's API are left out (their objects have their own tests).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import restrictiveness as rx
from restrictiveness.engine.study import Study

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md",
         *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.rst"))]


def python_blocks(page: str) -> list[str]:
    """The page's Python code blocks (Markdown fences or reStructuredText code-block)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    if page.endswith(".md"):
        return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)
    blocks = []
    for m in re.finditer(r"^\.\. code-block:: python\n\n((?:(?: {3}.*)?\n)+)", text, flags=re.M):
        blocks.append("\n".join(line[3:] for line in m.group(1).splitlines()))
    return blocks


def runnable(block: str) -> bool:
    return "rx.llm" not in block and '"Completion"' not in block


def test_the_pages_have_python_examples_to_run():
    counts = {page: sum(map(runnable, python_blocks(page))) for page in PAGES}
    assert counts["README.md"] == 2 and counts["docs/your_model.rst"] == 3, counts
    assert counts["docs/getting_started.rst"] == 1, counts


@pytest.mark.parametrize("page", [p for p in PAGES if any(map(runnable, python_blocks(p)))])
def test_the_pages_python_examples_run(page, bruhin_csv, tmp_path, monkeypatch):
    init = Study.__init__

    def small(self, *args, **kwargs):
        kwargs.update(replications=2, n=[20])
        init(self, *args, **kwargs)

    monkeypatch.setattr(Study, "__init__", small)
    monkeypatch.chdir(tmp_path)   # the examples write their files where they run
    namespace: dict = {}
    for block in filter(runnable, python_blocks(page)):
        code = block.replace("PATH/ch03_data.csv", bruhin_csv.as_posix())
        exec(compile(code, f"{page} example", "exec"), namespace)
    if "comp" in namespace:
        # the frontier of the page's procedures: every one of the study's is on it
        table = rx.frontier_table(namespace["res"], namespace["comp"])
        assert sorted(table.index) == sorted(namespace["res"].procedures)

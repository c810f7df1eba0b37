"""The package's architecture: layers as subpackages, imports pointing one way, no cycles, and
files saved before the layout changed still loading.

The import graph is read from the source with :mod:`ast` (every ``import`` statement, including
those inside functions), so a lazy import counts as much as a top-level one.
"""

from __future__ import annotations

import ast
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

import restrictiveness as rx

PACKAGE = Path(rx.__file__).resolve().parent
DATA = Path(__file__).resolve().parent / "data"

#: What each layer may import besides itself (bottom up). The engine runs procedures through
#: the protocol it owns (engine/protocol.py), so it needs no concrete procedure; the
#: applications use every generic layer but not each other; the CLI and the package's
#: front door (``root``) sit on top.
ALLOWED: dict[str, set[str]] = {
    "shared": set(),
    "datasets": {"shared"},
    "eligible": {"shared"},
    "engine": {"shared", "eligible"},
    "procedures": {"shared", "eligible", "engine"},
    "ai": {"shared", "eligible", "engine", "procedures"},
    "analysis": {"shared", "eligible", "engine", "procedures"},
    "lottery": {"shared", "datasets", "eligible", "engine", "procedures", "ai", "analysis"},
    "demand": {"shared", "datasets", "eligible", "engine", "procedures", "ai", "analysis"},
    "cli": {"shared", "datasets", "eligible", "engine", "procedures", "ai", "analysis",
            "lottery", "demand"},
}
ALLOWED["root"] = set(ALLOWED) | {"cli"}


# ------------------------------------------------------------------------- the graph


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _is_module(name: str) -> bool:
    base = PACKAGE.parent / name.replace(".", "/")
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module → package modules it imports (``from a import b`` counts ``a.b`` when ``b`` is a
    module, else ``a``)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name, is_package = _module_name(path)
        here = name.split(".") if is_package else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.split(".")[0] == root.name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(here[:len(here) - node.level + 1]
                                    + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                if base.split(".")[0] != root.name:
                    continue
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    deps.add(full if _is_module(full) else base)
        graph[name] = deps - {name}
    return graph


def layer_of(module: str, package: str = "restrictiveness") -> str:
    parts = module.split(".")
    if parts[0] != package:
        raise ValueError(f"{module} is outside {package}")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else "root"


def layering_violations(graph: dict[str, set[str]], layer=layer_of,
                        allowed: dict[str, set[str]] = ALLOWED) -> list[str]:
    """Edges that import against the layer order, as readable strings."""
    out = []
    for module, deps in sorted(graph.items()):
        mine = layer(module)
        for dep in sorted(deps):
            theirs = layer(dep)
            if theirs != mine and theirs not in allowed[mine]:
                out.append(f"{module} ({mine}) imports {dep} ({theirs})")
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


# ------------------------------------------------------------------------- the checks


def test_the_checker_catches_an_upward_import_and_a_cycle():
    graph = {
        "restrictiveness.shared.exceptions": set(),
        "restrictiveness.engine.study": {"restrictiveness.shared.exceptions"},
        "restrictiveness.procedures.generic": {"restrictiveness.engine.study"},
    }
    assert layering_violations(graph) == []
    assert cycles(graph) == []
    # The engine reaching up into a concrete procedure is refused, and so is a cycle.
    graph["restrictiveness.engine.study"].add("restrictiveness.procedures.generic")
    assert layering_violations(graph) == [
        "restrictiveness.engine.study (engine) imports restrictiveness.procedures.generic "
        "(procedures)"]
    assert cycles(graph) == [["restrictiveness.engine.study",
                              "restrictiveness.procedures.generic"]]
    # Applications must not use each other.
    app = {"restrictiveness.lottery.models": {"restrictiveness.demand.models"},
           "restrictiveness.demand.models": set()}
    assert layering_violations(app) == [
        "restrictiveness.lottery.models (lottery) imports restrictiveness.demand.models (demand)"]


def test_the_checker_reads_lazy_and_relative_imports(tmp_path):
    pkg = tmp_path / "restrictiveness"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "procedures").mkdir()
    for d in (pkg, pkg / "engine", pkg / "procedures"):
        (d / "__init__.py").write_text("")
    (pkg / "procedures" / "generic.py").write_text("X = 1\n")
    (pkg / "engine" / "study.py").write_text(
        "def run():\n    from ..procedures import generic\n    return generic.X\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, pkg
    try:
        graph = import_graph(pkg)
    finally:
        PACKAGE = saved
    assert graph["restrictiveness.engine.study"] == {"restrictiveness.procedures.generic"}
    assert layering_violations(graph) == [
        "restrictiveness.engine.study (engine) imports restrictiveness.procedures.generic "
        "(procedures)"]


def test_package_imports_follow_the_layers():
    graph = import_graph()
    assert len(graph) > 50  # the whole package was read
    assert layering_violations(graph) == []


def test_package_has_no_import_cycles():
    assert cycles(import_graph()) == []


def test_every_subpackage_says_what_lives_there():
    for init in sorted(PACKAGE.glob("*/**/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc) > 80, f"{init} needs a docstring saying what lives there"
        assert "import" in doc.lower(), f"{init} must say what the subpackage may import"


def test_public_names_resolve():
    for name in rx.__all__:
        assert getattr(rx, name) is not None, name
    for app in (rx.lottery, rx.demand):
        for name in app.__all__:
            assert hasattr(app, name), f"{app.__name__}.{name}"


# ------------------------------------------------------------------- files made before the move

#: sha256 prefixes of the files make_v0_fixtures.py wrote with the pre-layout code (commit
#: c3871fc): a rewritten fixture would test the new code against itself.
FIXTURES = {
    "results_v0.nc": "b5f74250ae915af6",
    "completeness_v0.nc": "263b314624e77b95",
    "checkpoint_v0/replication-000000.pkl": "16570195bff23712",
    "checkpoint_v0/replication-000001.pkl": "2e134ac1c62c4ea1",
    "checkpoint_v0/replication-000002.pkl": "7fc79d591eac938e",
    "checkpoint_v0/replication-000003.pkl": "27b9ba1bda6382b4",
    "checkpoint_v0/study.json": "a3cfb65afebfa05f",
}


def test_fixtures_are_the_files_the_old_code_wrote():
    import hashlib

    for name, digest in FIXTURES.items():
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest()[:16] == digest, name


def test_results_saved_before_the_move_still_load():
    res = rx.load(DATA / "results_v0.nc")
    # values printed by tests/data/make_v0_fixtures.py when it made the file
    np.testing.assert_allclose(res.restrictiveness.sel(procedure="linear").squeeze().values,
                               [0.04344742078128425, 0.07763811038716308], rtol=1e-14)
    assert res.procedures == ["linear", "quad"]
    comp = rx.load_completeness(DATA / "completeness_v0.nc")
    assert comp.kappa["linear"] == pytest.approx(0.9573736882006391, rel=1e-14)
    assert comp.kappa_se["linear"] == pytest.approx(0.024970690210288176, rel=1e-14)


def test_pickle_checkpoint_written_before_the_move_is_refused_clearly(tmp_path, monkeypatch):
    """Checkpoints of the old format hold pickles; unpickling a file can run code, so they are
    refused with a message that says why and what to do, and never unpickled."""
    ck = tmp_path / "ck"
    shutil.copytree(DATA / "checkpoint_v0", ck)
    F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    study = rx.Study(rx.MonotoneGP(F, n_eval=50),
                     {"linear": rx.OLS("y ~ x"), "quad": rx.OLS("y ~ x + I(x**2)")},
                     baseline=rx.Constant(), n=[10, 20], replications=4, seed=3)

    def refuse(*args, **kwargs):
        raise AssertionError("the old checkpoint was unpickled")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "Unpickler", refuse)
    with pytest.raises(rx.CheckpointError,
                       match=r"older version of restrictiveness \(pickled records such as "
                             r"replication-000000.pkl\).*unpickling a file can run arbitrary "
                             r"code.*fresh checkpoint directory"):
        study.run(progress=False, checkpoint=ck)
    assert sorted(p.name for p in ck.iterdir() if not p.name.startswith(".")) == [
        f"replication-00000{m}.pkl" for m in range(4)] + ["study.json"]  # left untouched


# ------------------------------------------------------------------------- packaging


def test_package_data_lives_in_packages_setuptools_finds():
    # restrictiveness/data had no __init__.py: setuptools put the cereal data and the reference
    # tables in the wheel only by a deprecated fallback ("Package would be ignored"), so a later
    # setuptools would build a wheel whose load_cereal() fails
    import configparser

    from setuptools import find_packages

    root = PACKAGE.parent
    parser = configparser.ConfigParser()
    parser.read(root / "setup.cfg")
    assert parser["options"]["packages"].strip() == "find:"
    found = set(find_packages(str(root), include=["restrictiveness*"]))
    patterns = [p.strip() for p in parser["options.package_data"]["restrictiveness"].split(",")]
    for pattern in patterns:
        folder = pattern.rpartition("/")[0]
        package = ".".join(["restrictiveness", *filter(None, folder.split("/"))])
        assert package in found, f"package_data {pattern!r}: {package} is not a package"
        assert list(root.joinpath(*package.split(".")).glob(pattern.rpartition("/")[2])), pattern

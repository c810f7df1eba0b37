"""numpydoc validation of the public API: every public function and class (and their public
methods and properties, inherited ones included when the package defines them) in
``rx.__all__``, ``rx.llm``, ``rx.lottery``, ``rx.demand``, ``rx.datasets`` and
``rx.procedures``, and the estimators and results that public constructors return
(``CPT.from_formula(...)``, ``MNL.from_formula(...)`` and their ``fit()``, the fitted
share function ``MNL().fit(sample)`` returns, and the demand truth ``DemandPrior().draw()``
returns).

Checks (numpydoc's codes):

* GL08 — the object has a docstring;
* SS01, SS02, SS03 — a one-line summary, starting with a capital, ending with a period;
* PR01, PR02 — every parameter documented, and only real parameters;
* RT01 — a Returns section on functions that return something;
* EX01 — an Examples section (the doctests themselves run under ``--doctest-modules``).

Every public object passes; a new one that does not fails the test, naming it and its codes.
"""

from __future__ import annotations

import functools
import importlib
import inspect

import numpydoc.validate as numpydoc_validate

import restrictiveness as rx

CHECKS = {"GL08", "SS01", "SS02", "SS03", "PR01", "PR02", "RT01", "EX01"}
MODULES = ("", "llm", "lottery", "demand", "datasets", "procedures")
#: Classes a user holds without importing them: what the public ``from_formula`` and ``fit``
#: return.
RETURNED = ("restrictiveness.lottery.estimation.LotteryNLS",
            "restrictiveness.lottery.estimation.LotteryNLSResults",
            "restrictiveness.demand.estimation.DemandModel",
            "restrictiveness.demand.estimation.DemandResults",
            "restrictiveness.demand.models.DemandFit",
            "restrictiveness.demand.prior.DemandSystem",
            "restrictiveness.demand.prior.DemandTruth")


def _members(path: str, cls: type) -> list[str]:
    """``path.attr`` for the public methods and properties of ``cls``: its own and those it
    inherits from the package (rx.NLSResults.cov_params is LeastSquaresResults')."""
    names = []
    for attr in dir(cls):
        owner = next((k for k in cls.__mro__ if attr in vars(k)), None)
        if attr.startswith("_") or owner is None \
                or not owner.__module__.startswith("restrictiveness"):
            continue
        member = vars(owner)[attr]
        if isinstance(member, (classmethod, staticmethod)):
            member = member.__func__
        if inspect.isfunction(member) or isinstance(member, (property, functools.cached_property)):
            names.append(f"{path}.{attr}")
    return names


def _public_objects():
    names = []
    for mod_name in MODULES:
        mod = getattr(rx, mod_name) if mod_name else rx
        prefix = f"restrictiveness.{mod_name}." if mod_name else "restrictiveness."
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            names.append(prefix + name)
            if inspect.isclass(obj):
                names += _members(prefix + name, obj)
    for path in RETURNED:
        module, _, name = path.rpartition(".")
        names += [path, *_members(path, getattr(importlib.import_module(module), name))]
    return sorted(set(names))


def _violations():
    out = {}
    for name in _public_objects():
        try:
            result = numpydoc_validate.validate(name)
        except Exception as exc:  # noqa: BLE001 - an object numpydoc cannot import/inspect
            out[name] = [f"error: {type(exc).__name__}"]
            continue
        codes = sorted({code for code, _ in result["errors"] if code in CHECKS})
        # RT01 does not apply to properties (they document their value in the summary).
        if result.get("type") in ("property", "cached_property"):
            codes = [c for c in codes if c not in ("RT01", "PR01", "EX01")]
        if codes:
            out[name] = codes
    return out


def test_public_api_docstrings():
    found = _violations()
    assert not found, f"docstring violations (numpydoc codes) by object: {found}"


def _api_reference_names() -> set[str]:
    """Fully qualified names docs/api.rst lists in its autosummary tables."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).parents[1] / "docs" / "api.rst").read_text(encoding="utf-8")
    names, module = set(), "restrictiveness"
    for line in text.splitlines():
        current = re.match(r"\.\. currentmodule:: (\S+)", line)
        if current:
            module = current.group(1)
        entry = re.fullmatch(r" {3}(~?)([A-Za-z_][\w.]*)", line)
        if entry:
            name = entry.group(2)
            names.add(name if entry.group(1) else f"{module}.{name}")
    return names


def test_the_api_reference_lists_every_public_name():
    # rx.demand.PAPER_MXL and MXL_FITS (the README's MixedLogit(**rx.demand.PAPER_MXL)) had no
    # page, nor had the results a user holds after MNL.from_formula(...).fit()
    documented = _api_reference_names()
    missing = []
    for mod_name in ("", "llm", "lottery", "demand", "datasets"):
        mod = getattr(rx, mod_name) if mod_name else rx
        for name in mod.__all__:
            if inspect.ismodule(getattr(mod, name)) or name == "__version__":
                continue  # the namespaces are the sections; the version is in the text
            if f"{mod.__name__}.{name}" not in documented:
                missing.append(f"{mod.__name__}.{name}")
    missing += [path for path in RETURNED if path not in documented]
    assert not missing, f"docs/api.rst has no entry for {missing}"

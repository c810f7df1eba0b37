"""numpydoc validation of the public API: every public function and class (and their public
methods and properties, inherited ones included when the package defines them) in
``rx.__all__``, ``rx.llm``, ``rx.lottery``, ``rx.demand`` and ``rx.datasets``.

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
import inspect

import numpydoc.validate as numpydoc_validate

import restrictiveness as rx

CHECKS = {"GL08", "SS01", "SS02", "SS03", "PR01", "PR02", "RT01", "EX01"}
MODULES = ("", "llm", "lottery", "demand", "datasets")


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
                for attr in dir(obj):
                    # what a user calls on the class: its own members and those it inherits
                    # from the package (rx.NLSResults.cov_params is LeastSquaresResults')
                    owner = next((k for k in obj.__mro__ if attr in vars(k)), None)
                    if attr.startswith("_") or owner is None \
                            or not owner.__module__.startswith("restrictiveness"):
                        continue
                    member = vars(owner)[attr]
                    if isinstance(member, (classmethod, staticmethod)):
                        member = member.__func__
                    if inspect.isfunction(member) \
                            or isinstance(member, (property, functools.cached_property)):
                        names.append(f"{prefix}{name}.{attr}")
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

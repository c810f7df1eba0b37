"""Property-based tests (hypothesis): any input to a loader, a parser or the command line gives
a result or one of the package's errors with a one-line message — never another exception,
a traceback or a hang (each example has a deadline)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import string
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import restrictiveness as rx
from restrictiveness.cli import main
from restrictiveness.datasets import load_bruhin
from restrictiveness.engine.sensitivity_results import parse_comparison
from restrictiveness.lottery import CPT_CONTRIBUTIONS

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
#: More examples for a long hunt: HYPOTHESIS_EXAMPLES=2000 python -m pytest tests/test_properties.py
SETTINGS = settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 100)), deadline=2000,
                    database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _one_line(exc: Exception) -> None:
    assert isinstance(exc, rx.RestrictivenessError), repr(exc)
    assert str(exc) and "\n" not in str(exc).strip() or isinstance(exc, rx.FormulaError)


# ---------------------------------------------------------------------------- parsers

FORMULA_CHARS = string.ascii_letters[:8] + string.digits[:3] + " ~+-*/:()._,^|=[]{}'\"\\!@#"


@SETTINGS
@given(st.one_of(st.text(alphabet=FORMULA_CHARS, max_size=40), st.text(max_size=30)))
def test_parse_formula_gives_a_formula_or_a_formula_error(text):
    try:
        f = rx.parse_formula(text)
    except rx.FormulaError as exc:
        assert str(exc)
    else:
        assert isinstance(f.covariates, tuple)


LABELS = ["CPT(alpha,gamma,delta)", "CPT(gamma,delta)", "CPT(alpha,delta)", "CPT(alpha,gamma)",
          "CPT(delta)", "GP regression", "GPT-4o-mini", "a-b", "f(a-b)"]


@SETTINGS
@given(st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(LABELS + ["C_alpha", "C_δ", "C_gamma", "-", " ", "(", ")", "C_"]),
             max_size=5).map("".join)),
    st.lists(st.text(min_size=1, max_size=8), max_size=4),
    st.booleans())
def test_parse_comparison_gives_weights_or_a_configuration_error(text, extra, contributions):
    procedures = LABELS + extra
    try:
        weights = parse_comparison(text, procedures,
                                   CPT_CONTRIBUTIONS if contributions else None)
    except rx.ConfigurationError as exc:
        assert str(exc)
    else:
        assert weights and set(weights) <= set(procedures)
        assert all(w != 0 for w in weights.values())


# ---------------------------------------------------------------------------- loaders

CELL = st.one_of(st.integers(-5, 200), st.floats(allow_nan=True, allow_infinity=True),
                 st.text(alphabet=string.printable, max_size=6), st.just(""))
COLUMNS = st.lists(st.sampled_from(["id", "lottery", "z1", "z2", "p1", "ce", "female", "x"]),
                   min_size=0, max_size=8)


@SETTINGS
@given(COLUMNS, st.lists(st.lists(CELL, min_size=8, max_size=8), max_size=6),
       st.binary(max_size=40), st.booleans())
def test_load_bruhin_gives_a_frame_or_a_data_error(columns, rows, junk, binary):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "ch03_data.csv"
        if binary:
            path.write_bytes(junk)
        else:
            lines = [",".join(columns)] + [",".join(str(c) for c in row[: len(columns)])
                                           for row in rows]
            path.write_text("\n".join(lines))
        try:
            df = load_bruhin(path)
        except rx.DataError as exc:
            _one_line(exc)
        else:
            assert {"participant", "lottery", "z_hi", "z_lo", "p", "ce"} <= set(df.columns)
            assert ((df["p"] >= 0) & (df["p"] <= 1)).all() and (df["z_hi"] >= df["z_lo"]).all()


NC_FILES = ["results_v0.nc", "completeness_v0.nc"]


# Some flipped bytes send HDF5 searching for ~7 s before it gives up: slow, but not a hang.
@settings(SETTINGS, deadline=30_000)
@given(st.sampled_from(NC_FILES), st.sampled_from(["truncate", "flip", "junk", "whole"]),
       st.floats(0, 1), st.binary(min_size=1, max_size=64))
def test_results_loaders_give_results_or_a_data_error(name, damage, where, junk):
    data = (DATA / name).read_bytes()
    cut = int(where * (len(data) - 1))
    damaged = {"truncate": data[:cut], "flip": data[:cut] + bytes([data[cut] ^ 0xFF])
               + data[cut + 1:], "junk": junk, "whole": data}[damage]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "file.nc"
        path.write_bytes(damaged)
        for loader in (rx.load, rx.load_completeness):
            try:
                res = loader(path)
            except rx.DataError as exc:
                _one_line(exc)
                if damage == "whole":  # an intact file of the other kind says what it is
                    assert "it holds" in str(exc)
            else:
                repr(res)  # a loaded file is usable


# ---------------------------------------------------------------------------- the command line


class _Ran(BaseException):
    """Raised in place of the work: the options were accepted."""


@pytest.fixture(scope="module")
def workdir():
    d = Path(tempfile.mkdtemp())
    shutil.copy(DATA / "results_v0.nc", d / "res.nc")
    shutil.copy(DATA / "completeness_v0.nc", d / "kappa.nc")
    (d / "procs.py").write_text("import restrictiveness as rx\n"
                                "PROCEDURES = {'mine': rx.OLS('ce ~ z_hi')}\n")
    (d / "ck").mkdir()
    (d / "file").write_text("x")
    yield d
    shutil.rmtree(d, ignore_errors=True)


VALUES = ["0", "1", "2", "-1", "-2", "3.5", "nan", "inf", "1e9", "100000", "x", "", "-",
          "--", "{d}/res.nc", "{d}/kappa.nc", "{d}/procs.py", "{d}/ck", "{d}/file",
          "{d}/missing/x.nc", "{d}/out.nc", "{d}", "csv", "latex", "pdf", "{d}/p.png",
          "dask", "processes", "tcp://127.0.0.1:1", "linear", "quad", "linear-quad",
          "GP regression", "mse", "lottery", "demand"]
OPTIONS = ["--n", "-M", "--seed", "--jobs", "--out", "--checkpoint", "--draws", "--procedures",
           "--only", "--table", "--plot", "--strict", "--no-progress", "--backend",
           "--scheduler", "--worker-timeout", "--fit-timeout", "--resume-other-versions",
           "--data", "--folds", "--repeats", "--compare", "--gamma", "--gamma-max",
           "--discrepancy", "--help", "--version", "--bogus"]
COMMANDS = [["demo"], ["replicate", "lottery"], ["replicate", "demand"],
            ["completeness", "lottery"], ["completeness", "demand"], ["sensitivity", "{d}/res.nc"],
            ["sensitivity", "{d}/kappa.nc"], ["sensitivity"], ["replicate"], [], ["nope"]]


@SETTINGS
@given(st.sampled_from(COMMANDS),
       st.lists(st.tuples(st.sampled_from(OPTIONS), st.lists(st.sampled_from(VALUES),
                                                             max_size=2)), max_size=4))
def test_cli_options_give_work_or_a_one_line_error(workdir, monkeypatch, command, options):
    def ran(*args, **kwargs):
        raise _Ran

    monkeypatch.chdir(workdir)  # relative output paths land there
    monkeypatch.setattr("restrictiveness.engine.study.Study.run", ran)
    monkeypatch.setattr("restrictiveness.lottery.completeness", ran)
    monkeypatch.setattr("restrictiveness.demand.completeness", ran)
    argv = [a.replace("{d}", str(workdir)) for a in command]
    for option, values in options:
        argv += [option] + [v.replace("{d}", str(workdir)) for v in values]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    except _Ran:
        return  # every option was accepted and the work would start
    text = err.getvalue()
    assert "Traceback" not in text and "unexpected" not in text, (argv, text)
    if status == 0:
        assert "--help" in argv or "--version" in argv or "sensitivity" in argv, argv
    else:
        assert status == 2, (argv, status, text)
        lines = [line for line in text.splitlines() if not line.startswith("warning:")]
        assert len(lines) == 1 and "error:" in lines[0], (argv, text)

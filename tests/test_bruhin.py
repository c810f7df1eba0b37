"""Loader of the Bruhin, Fehr-Duda & Epper (2010) lottery data (SPEC §6, "Real data").

The data are never copied into the project: the real-file tests read them from the shared folder
beside the repository (``<repo>/../shared/data/bruhin2010/ch03_data.csv``, the ``bruhin_csv``
fixture: skipped when absent, failed under ``CI=true``); malformed-file tests write small
synthetic CSVs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from restrictiveness.datasets.bruhin import load_bruhin
from restrictiveness.shared.exceptions import DataError


def test_gains_subset_matches_the_paper(bruhin_csv):
    df = load_bruhin(bruhin_csv)
    # Paper §3.1: 4,459 certainty equivalents from 179 participants on 25 lotteries.
    assert len(df) == 4459
    assert df["participant"].nunique() == 179
    assert df["lottery"].nunique() == 25
    assert list(df.columns[:6]) == ["participant", "lottery", "z_hi", "z_lo", "p", "ce"]
    assert {"female", "semester", "highincome"} <= set(df.columns)


def test_scaling_and_order_against_raw_file(bruhin_csv):
    raw = pd.read_csv(bruhin_csv)
    gains = raw[(raw.z1 >= 0) & (raw.z2 >= 0)].sort_values(["id", "lottery"])
    df = load_bruhin(bruhin_csv)
    np.testing.assert_array_equal(df["participant"], gains["id"])
    np.testing.assert_allclose(df["z_hi"], gains["z1"] / 150)
    np.testing.assert_allclose(df["z_lo"], gains["z2"] / 150)
    np.testing.assert_allclose(df["ce"], gains["ce"] / 150)
    np.testing.assert_allclose(df["p"], gains["p1"])
    assert df["z_hi"].max() == 1.0  # the largest prize is 150
    assert (df["z_hi"] >= df["z_lo"]).all()
    # SPEC §6 domain: z_hi in [1/15, 1], z_lo in [0, 1/3], p in [0.05, 0.95].
    assert df["z_hi"].min() >= 1 / 15 - 1e-12 and df["z_lo"].max() <= 1 / 3 + 1e-12
    assert df["p"].between(0.05, 0.95).all()


def test_all_lotteries_and_custom_scale(bruhin_csv):
    raw = pd.read_csv(bruhin_csv)
    df = load_bruhin(bruhin_csv, gains_only=False, scale=1.0)
    assert len(df) == len(raw)
    assert df["z_lo"].min() < 0
    np.testing.assert_allclose(np.sort(df["ce"]), np.sort(raw["ce"]))


def _write(tmp_path, text, name="ch03_data.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = ('"id","lottery","z1","z2","p1","ce","female"\n'
        "1,1,10,0,0.1,1.75,1\n1,2,150,50,0.5,80,1\n2,1,10,0,0.1,2,0\n2,3,0,-10,0.5,-4,0\n")


def test_synthetic_file_round_trip(tmp_path):
    df = load_bruhin(_write(tmp_path, GOOD))
    assert len(df) == 3  # the loss lottery 3 is dropped
    assert df["participant"].tolist() == [1, 1, 2]
    np.testing.assert_allclose(df["z_hi"], [10 / 150, 1.0, 10 / 150])
    np.testing.assert_allclose(df["ce"], [1.75 / 150, 80 / 150, 2 / 150])
    assert df["female"].tolist() == [1, 1, 0]


def test_missing_file_says_where_and_that_it_is_not_shipped(tmp_path):
    missing = tmp_path / "nowhere" / "ch03_data.csv"
    with pytest.raises(DataError, match="not shipped") as err:
        load_bruhin(missing)
    assert str(missing) in str(err.value)


def test_wrong_columns(tmp_path):
    path = _write(tmp_path, "id,lottery,high,low,p1,ce\n1,1,10,0,0.1,1\n")
    with pytest.raises(DataError, match=r"lacks column\(s\) \['z1', 'z2'\]"):
        load_bruhin(path)


def test_non_numeric_values(tmp_path):
    path = _write(tmp_path, GOOD.replace("1,2,150,50,0.5,80,1", "1,2,150,50,0.5,eighty,1"))
    with pytest.raises(DataError, match=r"column 'ce'.*non-numeric.*line\(s\) \[3\]"):
        load_bruhin(path)


def test_missing_values(tmp_path):
    path = _write(tmp_path, GOOD.replace("2,1,10,0,0.1,2,0", "2,1,,0,0.1,2,0"))
    with pytest.raises(DataError, match="column 'z1'"):
        load_bruhin(path)


def test_prizes_out_of_order(tmp_path):
    path = _write(tmp_path, GOOD.replace("1,2,150,50", "1,2,50,150"))
    with pytest.raises(DataError, match="high prize z1 below the low prize z2.*line 3"):
        load_bruhin(path)


def test_probability_outside_unit_interval(tmp_path):
    path = _write(tmp_path, GOOD.replace("0.5,80", "1.5,80"))
    with pytest.raises(DataError, match="'p1'.*outside"):
        load_bruhin(path)


@pytest.mark.parametrize("ce, line", [("800", 3), ("-3", 4)])
def test_a_certainty_equivalent_outside_its_prizes_is_refused(tmp_path, ce, line):
    # 800 for a lottery over [50, 150] (a typo), -3 for one over [0, 10] (a sign slip) were
    # kept, scaled to 5.33 and -0.02, and moved every completeness estimate
    row = {3: "1,2,150,50,0.5,80,1", 4: "2,1,10,0,0.1,2,0"}[line]
    path = _write(tmp_path, GOOD.replace(row, row.rsplit(",", 2)[0] + f",{ce},"
                                         + row.rsplit(",", 1)[1]))
    with pytest.raises(DataError, match=rf"1 row\(s\) .* certainty equivalent outside the "
                                        rf"prizes \[z2, z1\] \(first at file line {line}: ce "
                                        rf"{ce}"):
        load_bruhin(path)
    # the bounds themselves are certainty equivalents: ce = z2 and ce = z1 load
    edges = GOOD.replace("1,2,150,50,0.5,80", "1,2,150,50,0.5,150").replace(
        "2,1,10,0,0.1,2", "2,1,10,0,0.1,0")
    np.testing.assert_allclose(load_bruhin(_write(tmp_path, edges))["ce"],
                               [1.75 / 150, 1.0, 0.0])


def test_inconsistent_lottery_identifier(tmp_path):
    path = _write(tmp_path, GOOD.replace("2,1,10,0,0.1,2,0", "2,1,20,0,0.1,2,0"))
    with pytest.raises(DataError, match=r"lottery identifier\(s\) \[1\]"):
        load_bruhin(path)


def test_empty_and_bad_scale(tmp_path):
    with pytest.raises(DataError, match="not a readable CSV"):
        load_bruhin(_write(tmp_path, ""))
    for scale in (0, "150", True):  # "150" was numpy's TypeError, True a scale of 1
        with pytest.raises(DataError, match=f"scale must be a positive number, got {scale!r}"):
            load_bruhin(_write(tmp_path, GOOD), scale=scale)
    assert load_bruhin(_write(tmp_path, GOOD), scale=np.float32(10.0))["z_hi"].max() == 15.0


@pytest.mark.parametrize("ci, outcome, code", [("true", "1 error", 1), ("", "1 skipped", 0)])
def test_missing_real_data_fails_under_ci_and_skips_otherwise(tmp_path, ci, outcome, code):
    """The suite's conftest in a checkout without the shared folder beside it."""
    tests = tmp_path / "repo" / "tests"
    tests.mkdir(parents=True)
    shutil.copy(Path(__file__).with_name("conftest.py"), tests)
    (tests / "test_real.py").write_text("def test_real(bruhin_csv):\n    pass\n")
    env = {**os.environ, "CI": ci}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-o", "addopts=", "-rs", str(tests)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == code and outcome in proc.stdout, proc.stdout
    assert "real data not found at" in proc.stdout

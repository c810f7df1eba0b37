"""Certainty equivalents of binary lotteries: Bruhin, Fehr-Duda & Epper (2010), Zurich 2003.

The completeness exercise of SPEC §6 ("Real data") uses the 25 lotteries with nonnegative prizes
of the Zurich 2003 experiment: 4,459 certainty equivalents from 179 participants. The data's
licence restricts their use to replication, so the package does not ship them: download the
authors' online supplement and pass the path of ``ch03_data.csv`` to :func:`load_bruhin`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..shared.checks import is_positive
from ..shared.exceptions import DataError

__all__ = ["load_bruhin", "BRUHIN_COLUMNS", "BRUHIN_SCALE"]

#: Columns the replication file must have (raw names in the file).
BRUHIN_COLUMNS: tuple[str, ...] = ("id", "lottery", "z1", "z2", "p1", "ce")
#: Largest prize in the gains lotteries; prizes and CEs are divided by it (SPEC §6).
BRUHIN_SCALE: float = 150.0

_RENAME = {"id": "participant", "z1": "z_hi", "z2": "z_lo", "p1": "p"}


def load_bruhin(path: str | os.PathLike, gains_only: bool = True,
                scale: float = BRUHIN_SCALE) -> pd.DataFrame:
    """Read the Bruhin, Fehr-Duda & Epper (2010) Zurich 2003 certainty equivalents.

    Parameters
    ----------
    path : str or path-like
        Location of the authors' ``ch03_data.csv`` (columns ``id, lottery, z1, z2, p1, ce``, where
        ``z1`` is the high prize, ``z2`` the low prize and ``p1`` the probability of ``z1``). The
        file is not shipped with the package (its licence allows replication only).
    gains_only : bool
        Keep only lotteries whose two prizes are nonnegative (the 25 gains lotteries of the
        paper). ``False`` keeps the loss and mixed lotteries too.
    scale : float
        Prizes and certainty equivalents are divided by this (default 150, the largest prize).

    Returns
    -------
    DataFrame
        One row per response with columns ``participant``, ``lottery``, ``z_hi``, ``z_lo``,
        ``p``, ``ce`` (prizes and CEs divided by ``scale``), followed by the file's other
        columns unchanged (``female``, ``semester``, ``highincome``, ...), sorted by participant
        and lottery. For the published file and ``gains_only=True``: 4,459 rows, 179
        participants, 25 lotteries.

    Raises
    ------
    DataError
        If the file is missing, lacks a required column, holds non-numeric or missing values,
        has a probability outside [0, 1], a high prize below the low prize (``z1 < z2``), a
        certainty equivalent outside its prizes ``[z2, z1]``, or a lottery identifier whose
        prizes or probability differ between rows.

    Examples
    --------
    >>> df = load_bruhin("../shared/data/bruhin2010/ch03_data.csv")  # doctest: +SKIP
    >>> df.shape[0], df["participant"].nunique(), df["lottery"].nunique()  # doctest: +SKIP
    (4459, 179, 25)
    """
    if not isinstance(path, str | os.PathLike):  # None was a TypeError from pathlib
        raise DataError(f"load_bruhin takes the path of ch03_data.csv, got {path!r}")
    if not isinstance(gains_only, bool | np.bool_):  # bool("no") is True
        raise DataError(f"load_bruhin: gains_only must be True or False, got {gains_only!r}")
    path = Path(path)
    if not is_positive(scale):  # "150" was a TypeError from numpy
        raise DataError(f"load_bruhin: scale must be a positive number, got {scale!r}")
    if not path.is_file():
        raise DataError(
            f"load_bruhin: no file at {str(path)!r}. The Bruhin, Fehr-Duda & Epper (2010) data "
            "are not shipped with restrictiveness (their licence restricts use to replication): "
            "download the authors' online supplement and pass the path of ch03_data.csv, "
            "e.g. load_bruhin('<supplement>/ch03_data.csv')."
        )
    try:
        raw = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        reason = " ".join(str(err).split())  # pandas' messages end in a newline
        raise DataError(f"load_bruhin: {str(path)!r} is not a readable CSV file ({reason})"
                        ) from err
    missing = [c for c in BRUHIN_COLUMNS if c not in raw.columns]
    if missing:
        raise DataError(
            f"load_bruhin: {str(path)!r} lacks column(s) {missing}; expected the replication "
            f"file ch03_data.csv with columns {list(BRUHIN_COLUMNS)} (found {list(raw.columns)})"
        )
    data = raw.copy()
    for c in BRUHIN_COLUMNS:
        values = pd.to_numeric(data[c], errors="coerce")
        bad = values.isna() | ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            rows = (np.flatnonzero(bad.to_numpy()) + 2).tolist()[:5]  # +2: header, 1-based
            raise DataError(
                f"load_bruhin: column {c!r} of {str(path)!r} has {int(bad.sum())} missing or "
                f"non-numeric value(s), first at file line(s) {rows}; fix or remove those rows"
            )
        data[c] = values
    p = data["p1"].to_numpy(dtype=float)
    if ((p < 0) | (p > 1)).any():
        raise DataError(f"load_bruhin: column 'p1' of {str(path)!r} has probabilities outside "
                        "[0, 1]")
    order = data["z1"] < data["z2"]
    if order.any():
        first = int(np.flatnonzero(order.to_numpy())[0]) + 2
        raise DataError(
            f"load_bruhin: {int(order.sum())} row(s) of {str(path)!r} have the high prize z1 "
            f"below the low prize z2 (first at file line {first}); z1 must be the high prize"
        )
    # A certainty equivalent lies between the prizes (every one of the published file does): a
    # typo such as 1e6 or a sign slip moved every κ̂ silently.
    outside = (data["ce"] < data["z2"]) | (data["ce"] > data["z1"])
    if outside.any():
        first = int(np.flatnonzero(outside.to_numpy())[0])
        raise DataError(
            f"load_bruhin: {int(outside.sum())} row(s) of {str(path)!r} have a certainty "
            f"equivalent outside the prizes [z2, z1] (first at file line {first + 2}: ce "
            f"{data['ce'].iloc[first]:g}, prizes [{data['z2'].iloc[first]:g}, "
            f"{data['z1'].iloc[first]:g}]); fix or remove those rows"
        )
    # A lottery identifier must name one lottery: the cell means of completeness rely on it.
    spread = data.groupby("lottery")[["z1", "z2", "p1"]].nunique()
    inconsistent = spread.index[(spread > 1).any(axis=1)].tolist()
    if inconsistent:
        raise DataError(
            f"load_bruhin: lottery identifier(s) {inconsistent[:5]} of {str(path)!r} have "
            "different prizes or probabilities in different rows"
        )
    if gains_only:
        data = data[(data["z1"] >= 0) & (data["z2"] >= 0)]
        if data.empty:
            raise DataError(f"load_bruhin: {str(path)!r} has no lottery with nonnegative prizes")
    data = data.rename(columns=_RENAME)
    for c in ("z_hi", "z_lo", "ce"):
        data[c] = data[c].astype(float) / scale
    data["p"] = data["p"].astype(float)
    for c in ("participant", "lottery"):
        if (data[c] == data[c].round()).all():
            data[c] = data[c].astype(np.int64)
    leading = ["participant", "lottery", "z_hi", "z_lo", "p", "ce"]
    data = data[leading + [c for c in data.columns if c not in leading]]
    return data.sort_values(["participant", "lottery"], kind="stable").reset_index(drop=True)

"""The Nevo (2000) fake cereal data, shipped with the package (SPEC §7).

The calibration data of the demand application: 94 markets (47 cities × 2 quarters) of the same
24 products, with inside market shares, prices, sugar content (grams) and a "mushy" indicator.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

__all__ = ["load_cereal", "CEREAL_COLUMNS"]

#: Columns of the vendored file, in order.
CEREAL_COLUMNS = ("market_ids", "city_ids", "quarter", "product_ids", "shares", "prices",
                  "sugar", "mushy")


def load_cereal() -> pd.DataFrame:
    """Load the Nevo (2000) fake cereal data: 2,256 product–market rows.

    The file is a trimmed copy of ``pyblp.data.NEVO_PRODUCTS_LOCATION`` (pyblp, MIT licence;
    Conlon & Gortmaker 2020), keeping the columns in :data:`CEREAL_COLUMNS`; see
    ``restrictiveness/data/NEVO_CEREAL_LICENSE.md``. Rows are grouped by market in pyblp's
    order (the first quarter's 47 markets by city, then the second quarter's, so ``C65Q1``
    precedes ``C01Q2``), with products sorted within each market.

    Returns
    -------
    pandas.DataFrame
        One row per product and market: ``market_ids`` (str, e.g. ``"C01Q1"``), ``city_ids``
        (int), ``quarter`` (1 or 2), ``product_ids`` (str), ``shares`` (inside market share),
        ``prices`` (float, the data's units), ``sugar`` (grams, float) and ``mushy`` (0/1, float).

    References
    ----------
    Nevo, A. (2000). A practitioner's guide to estimation of random-coefficients logit models of
    demand. *Journal of Economics & Management Strategy* 9(4), 513–548.

    Conlon, C. and Gortmaker, J. (2020). Best practices for differentiated products demand
    estimation with PyBLP. *RAND Journal of Economics* 51(4), 1108–1161.

    Examples
    --------
    >>> df = load_cereal()
    >>> df.market_ids.nunique(), df.city_ids.nunique(), df.product_ids.nunique()
    (94, 47, 24)
    >>> df.market_ids.unique()[[0, 46, 47]].tolist()
    ['C01Q1', 'C65Q1', 'C01Q2']
    """
    with resources.files("restrictiveness.data").joinpath("nevo_cereal.csv").open("rb") as fh:
        df = pd.read_csv(fh, dtype={"market_ids": str, "product_ids": str})
    df["sugar"] = df["sugar"].astype(float)
    df["mushy"] = df["mushy"].astype(float)
    return df

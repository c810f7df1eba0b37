"""The market distribution P_X of the demand application (SPEC §7).

A market holds J = 24 products ``x_j = (p_j, s_j, m_j)`` drawn iid: the mushy indicator
``m_j ~ Bernoulli(1/3)`` and, given ``m_j``, the (price, sugar) pair uniform on the convex hull of
the calibration data's (price, sugar) pairs with that mushy status. Markets are arrays
``(J, 3)`` with columns ``("prices", "sugar", "mushy")`` in the data's raw units; a sample of
``n`` markets has shape ``(n, J, 3)``.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.spatial import ConvexHull, QhullError

from ..shared.checks import is_whole, numeric_columns, probability, whole_number
from ..shared.exceptions import DataError, DomainError

__all__ = ["MarketDistribution", "ConvexPolygon", "MARKET_COLUMNS", "perturbed_markets",
           "elasticities_from_shares"]

#: Names of the last axis of a market array.
MARKET_COLUMNS = ("prices", "sugar", "mushy")


class ConvexPolygon:
    """The convex hull of planar points, sampled uniformly by area-weighted triangles.

    Parameters
    ----------
    points : ndarray, shape (k, 2)
        Points whose convex hull is the polygon (at least three, not collinear).

    Attributes
    ----------
    vertices : ndarray, shape (v, 2)
        Hull vertices in counter-clockwise order.
    equations : ndarray, shape (v, 3)
        Half-spaces ``a x + b y + c <= 0`` whose intersection is the polygon (scipy's
        ``ConvexHull.equations``, outward unit normals).
    triangles : ndarray, shape (v - 2, 3, 2)
        A fan triangulation of the polygon.
    area : float

    Examples
    --------
    >>> import numpy as np
    >>> square = ConvexPolygon(np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]]))
    >>> float(square.area), square.interval(np.array([0.25]))
    (1.0, (array([0.]), array([1.])))
    """

    def __init__(self, points: np.ndarray) -> None:
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[1] != 2 or len(points) < 3:
            raise DomainError("ConvexPolygon: points must have shape (k, 2) with k >= 3")
        try:
            hull = ConvexHull(points)
        except QhullError as err:  # collinear or repeated points: scipy's multi-line message
            raise DomainError("ConvexPolygon: the points are collinear; the hull has no "
                              "area") from err
        self.vertices = points[hull.vertices]
        self.equations = hull.equations
        v = self.vertices
        self.triangles = np.stack([np.broadcast_to(v[0], v[1:-1].shape), v[1:-1], v[2:]], axis=1)
        e1 = self.triangles[:, 1] - self.triangles[:, 0]
        e2 = self.triangles[:, 2] - self.triangles[:, 0]
        self.triangle_areas = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0])
        self.area = float(self.triangle_areas.sum())
        if not self.area > 0:
            raise DomainError("ConvexPolygon: the points are collinear; the hull has no area")

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` points uniform on the polygon, shape ``(size, 2)``.

        A triangle is chosen with probability proportional to its area, then a point uniform in
        it by reflecting a uniform point of the unit square into the lower-left triangle.
        """
        k = rng.choice(len(self.triangles), size=size, p=self.triangle_areas / self.area)
        u = rng.random((size, 2))
        flip = u.sum(axis=1) > 1.0
        u[flip] = 1.0 - u[flip]
        t = self.triangles[k]
        return t[:, 0] + u[:, :1] * (t[:, 1] - t[:, 0]) + u[:, 1:] * (t[:, 2] - t[:, 0])

    def contains(self, xy: np.ndarray, tol: float = 1e-12) -> np.ndarray:
        """Whether each row of ``xy`` (shape ``(k, 2)``) lies in the polygon (within ``tol``)."""
        xy = np.asarray(xy, dtype=float)
        return (xy @ self.equations[:, :2].T + self.equations[:, 2] <= tol).all(axis=-1)

    def interval(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The section of the polygon at second coordinate ``y``: ``(low, high)`` of the first.

        From the half-space representation: facet ``a x + b y + c <= 0`` bounds ``x`` above when
        ``a > 0`` and below when ``a < 0``; facets with ``a = 0`` bound ``y`` only. Outside the
        polygon's ``y`` range the interval is empty (``low > high``).
        """
        y = np.asarray(y, dtype=float)[..., None]
        a, b, c = self.equations[:, 0], self.equations[:, 1], self.equations[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = -(b * y + c) / a
        upper = np.where(a > 1e-14, bound, np.inf).min(axis=-1)
        lower = np.where(a < -1e-14, bound, -np.inf).max(axis=-1)
        return lower, upper


class MarketDistribution:
    """Markets of ``J`` iid products calibrated to the Nevo (2000) cereal data (SPEC §7).

    Parameters
    ----------
    data : pandas.DataFrame, optional
        Calibration data with columns ``prices``, ``sugar``, ``mushy`` (default: the shipped
        cereal data, :func:`restrictiveness.datasets.cereal.load_cereal`).
    n_products : int
        Products per market, J (24).
    p_mushy : float
        Probability that a product is mushy (1/3, the share in the data).

    Attributes
    ----------
    hulls : dict of int to ConvexPolygon
        The (price, sugar) hull for each mushy status.
    price_mean, price_sd, sugar_mean, sugar_sd : float
        Pooled calibration moments (standard deviations with ``ddof=0``) that standardise price
        and sugar.

    Examples
    --------
    >>> import numpy as np
    >>> md = MarketDistribution()
    >>> X = md.sample(5, np.random.default_rng(0))
    >>> X.shape
    (5, 24, 3)
    """

    columns = MARKET_COLUMNS

    def __init__(self, data: pd.DataFrame | None = None, n_products: int = 24,
                 p_mushy: float = 1.0 / 3.0) -> None:
        if data is None:
            from ..datasets.cereal import load_cereal

            data = load_cereal()
        if not isinstance(data, pd.DataFrame):  # an array was an AttributeError
            raise DataError(f"MarketDistribution: data must be a DataFrame with columns "
                            f"{list(MARKET_COLUMNS)}, got {type(data).__name__}")
        missing = [c for c in MARKET_COLUMNS if c not in data.columns]
        if missing:
            raise DataError(f"MarketDistribution: data lack the columns {missing}")
        n_products = whole_number(n_products, "n_products", minimum=1)  # int() took 2.5 as 2
        p_mushy = probability(p_mushy, "p_mushy")  # float() took the string "0.5"
        # text was parsed as numbers, complex cut to its real part
        numeric_columns(data, MARKET_COLUMNS, "MarketDistribution")
        values = data[list(MARKET_COLUMNS)].to_numpy(dtype=float)
        if not np.isfinite(values).all():
            raise DataError("MarketDistribution: data contain missing or infinite values")
        if not (values[:, 0] > 0).all():
            # elasticities are in log price: such markets failed only once a study ran
            raise DataError("MarketDistribution: prices must be positive (elasticities are "
                            "differences in log price)")
        self.n_products, self.p_mushy = int(n_products), float(p_mushy)
        self.calibration = values
        mushy = values[:, 2]
        if not np.isin(mushy, (0.0, 1.0)).all():
            raise DataError("MarketDistribution: mushy must be 0 or 1")
        few = [m for m in (0, 1) if (mushy == m).sum() < 3]
        if few:  # was ConvexPolygon's "points must have shape (k, 2)", naming neither
            raise DataError(f"MarketDistribution: fewer than 3 products with mushy = {few[0]}; "
                            "each mushy status needs a (price, sugar) hull")
        self.hulls = {m: ConvexPolygon(values[mushy == m, :2]) for m in (0, 1)}
        self.price_mean, self.price_sd = float(values[:, 0].mean()), float(values[:, 0].std())
        self.sugar_mean, self.sugar_sd = float(values[:, 1].mean()), float(values[:, 1].std())

    def sample(self, n_markets: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n_markets`` markets, shape ``(n_markets, J, 3)`` (raw units).

        Markets are drawn one after another from ``rng``, so the first ``k`` markets of a draw
        of ``n > k`` are a draw of ``k`` (nested samples).

        Parameters
        ----------
        n_markets : int
            Markets to draw (nonnegative).
        rng : Generator
            The random stream.

        Returns
        -------
        ndarray
            ``(n_markets, J, 3)``: price, sugar and mushy (0 or 1) of each product, with
            (price, sugar) uniform on the hull of the product's mushy status.

        Examples
        --------
        >>> import numpy as np
        >>> md = MarketDistribution()
        >>> X3, X5 = md.sample(3, np.random.default_rng(1)), md.sample(5, np.random.default_rng(1))
        >>> X5.shape, bool(np.array_equal(X3, X5[:3]))
        ((5, 24, 3), True)
        >>> soggy = X5[X5[..., 2] == 1]
        >>> bool(md.hulls[1].contains(soggy[:, :2]).all())
        True
        """
        if not is_whole(n_markets) or n_markets < 0:  # int() took 2.5 markets as 2
            raise DomainError(f"n_markets must be a nonnegative whole number, got {n_markets!r}")
        n_markets = int(n_markets)
        X = np.empty((n_markets, self.n_products, 3))
        for i in range(n_markets):
            m = (rng.random(self.n_products) < self.p_mushy).astype(float)
            for status in (0, 1):
                sel = m == status
                X[i, sel, :2] = self.hulls[status].sample(int(sel.sum()), rng)
            X[i, :, 2] = m
        return X

    def standardize(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Standardised price and sugar ``(z^p, z^s)`` of markets ``X`` (shape ``(..., 3)``).

        Parameters
        ----------
        X : ndarray
            Markets ``(..., 3)`` in raw units (price, sugar, mushy).

        Returns
        -------
        zp, zs : ndarray
            ``(price − price_mean) / price_sd`` and ``(sugar − sugar_mean) / sugar_sd``, each
            of shape ``X.shape[:-1]``.

        Examples
        --------
        >>> md = MarketDistribution()
        >>> zp, zs = md.standardize(md.calibration)
        >>> abs(round(float(zp.mean()), 12)), round(float(zs.std()), 12)
        (0.0, 1.0)
        """
        X = np.asarray(X, dtype=float)
        return ((X[..., 0] - self.price_mean) / self.price_sd,
                (X[..., 1] - self.sugar_mean) / self.sugar_sd)

    def price_interval(self, sugar: np.ndarray, mushy: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Feasible price interval ``(L, U)`` at a sugar level inside the hull of that mushy status.

        Parameters
        ----------
        sugar, mushy : array_like
            Same shape; ``mushy`` is 0 or 1.

        Returns
        -------
        (L, U) : tuple of ndarray
            Arrays of the common shape; ``L > U`` where the sugar level is outside the hull.

        Examples
        --------
        >>> md = MarketDistribution()
        >>> L, U = md.price_interval([5.0], [0.0])
        >>> bool(L[0] < U[0])
        True
        """
        sugar = np.asarray(sugar, dtype=float)
        mushy = np.asarray(mushy, dtype=float)
        if sugar.shape != mushy.shape:
            raise DomainError("price_interval: sugar and mushy must have the same shape")
        if not np.isin(mushy, (0.0, 1.0)).all():
            raise DomainError("price_interval: mushy must be 0 or 1")
        lo = np.empty(sugar.shape)
        hi = np.empty(sugar.shape)
        for status in (0, 1):
            sel = mushy == status
            lo[sel], hi[sel] = self.hulls[status].interval(sugar[sel])
        return lo, hi

    def log_price_steps(self, X: np.ndarray, h_max: float = 0.01) -> np.ndarray:
        """Finite-difference steps ``h_k = min{h_max, ½ log(U_k/p_k), ½ log(p_k/L_k)}`` (SPEC §7).

        ``[L_k, U_k]`` is product ``k``'s feasible price interval at its sugar level, so both
        perturbed prices ``p_k e^{±h_k}`` stay inside the hull.

        Parameters
        ----------
        X : ndarray, shape (..., J, 3)
            Markets in raw units.
        h_max : float
            Largest step (0.01).

        Returns
        -------
        ndarray, shape (..., J)
            Positive steps.

        Raises
        ------
        DomainError
            A price outside its hull, or on its boundary (no two-sided step).

        Examples
        --------
        >>> import numpy as np
        >>> md = MarketDistribution()
        >>> h = md.log_price_steps(md.sample(3, np.random.default_rng(0)))
        >>> h.shape, bool((h > 0).all() and (h <= 0.01).all())
        ((3, 24), True)
        """
        X = np.asarray(X, dtype=float)
        if X.shape[-1] != 3:
            raise DomainError("log_price_steps: X must have the columns (prices, sugar, mushy)")
        if not float(h_max) > 0:
            raise DomainError(f"h_max must be positive, got {h_max}")
        if not np.isfinite(X).all():  # a NaN price or sugar was reported as on the boundary
            raise DomainError("log_price_steps: markets contain missing or infinite values")
        p = X[..., 0]
        lo, hi = self.price_interval(X[..., 1], X[..., 2])
        if (p <= 0).any() or (p < lo - 1e-12).any() or (p > hi + 1e-12).any():
            raise DomainError("log_price_steps: prices must be positive and inside the hull")
        with np.errstate(divide="ignore"):
            h = np.minimum(float(h_max), np.minimum(0.5 * np.log(hi / p), 0.5 * np.log(p / lo)))
        if not (h > 0).all():
            # a price on the hull's boundary has no two-sided step: its elasticities would be
            # 0/0 (NaN losses), so it is refused here rather than there
            raise DomainError("log_price_steps: a price lies on the boundary of its hull at its "
                              "sugar level (h_k = 0); finite-difference elasticities need "
                              "prices strictly inside")
        return h

    def __repr__(self) -> str:
        # checkpoints identify a study by its reprs: calibration data other than the shipped
        # cereal data are named by a digest, so a run on them does not resume one on those
        tag = _calibration_digest(self.calibration)
        data = "" if tag == _shipped_digest() else f"data=<{len(self.calibration)} rows, " \
                                                   f"sha256 {tag}>, "
        return (f"MarketDistribution({data}n_products={self.n_products}, "
                f"p_mushy={self.p_mushy!r})")


def _calibration_digest(values: np.ndarray) -> str:
    """SHA-256 prefix of calibration rows, whatever their order (the hulls and moments are)."""
    rows = np.ascontiguousarray(values[np.lexsort(values.T[::-1])], dtype=float)
    return hashlib.sha256(rows.tobytes()).hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _shipped_digest() -> str:
    from ..datasets.cereal import load_cereal

    return _calibration_digest(load_cereal()[list(MARKET_COLUMNS)].to_numpy(dtype=float))


def perturbed_markets(X: np.ndarray, h: np.ndarray) -> np.ndarray:
    """All ``2 × J`` price perturbations of every market: shape ``(n, 2, J, J, 3)``.

    Entry ``[i, 0, k]`` is market ``i`` with ``p_k`` set to ``p_k e^{-h_k}``, entry ``[i, 1, k]``
    with ``p_k e^{+h_k}``; all other products are unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.ones((1, 2, 3))
    >>> P = perturbed_markets(X, np.full((1, 2), 0.1))
    >>> P.shape, float(P[0, 1, 0, 0, 0]), float(P[0, 1, 0, 1, 0])
    ((1, 2, 2, 2, 3), 1.1051709180756477, 1.0)
    """
    X = np.asarray(X, dtype=float)
    h = np.asarray(h, dtype=float)
    n, J, _ = X.shape
    if h.shape != (n, J):
        raise DomainError(f"perturbed_markets: h must have shape {(n, J)}, got {h.shape}")
    P = np.broadcast_to(X[:, None, None], (n, 2, J, J, 3)).copy()
    k = np.arange(J)
    P[:, 0, k, k, 0] = X[:, :, 0] * np.exp(-h)
    P[:, 1, k, k, 0] = X[:, :, 0] * np.exp(h)
    return P


def elasticities_from_shares(minus: np.ndarray, plus: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Symmetric finite-difference elasticities ``E[i, j, k] = ∂ log g_j / ∂ log p_k``.

    Parameters
    ----------
    minus, plus : ndarray, shape (n, J, J)
        ``[i, k, j]``: share of product ``j`` in market ``i`` with ``p_k`` lowered / raised.
    h : ndarray, shape (n, J)
        Log-price steps.

    Returns
    -------
    ndarray, shape (n, J, J)
        ``[i, j, k] = (log plus[i, k, j] - log minus[i, k, j]) / (2 h[i, k])``.

    Examples
    --------
    >>> import numpy as np
    >>> s = np.full((1, 1, 1), 0.5)
    >>> E = elasticities_from_shares(s, s * np.exp(-0.2), np.full((1, 1), 0.1))
    >>> round(float(E[0, 0, 0]), 12)
    -1.0
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.log(plus) - np.log(minus)
    return np.swapaxes(d, 1, 2) / (2.0 * np.asarray(h, dtype=float)[:, None, :])


def _nest_index(X: np.ndarray, columns: Sequence[str], nest: str) -> np.ndarray:
    """The nest (0 or 1) of every product, −1 for the absent products of padded markets (rows
    of NaN); another value is refused, naming those found."""
    g = X[:, :, list(columns).index(nest)]
    absent = np.isnan(X).all(axis=2)
    if not np.isin(g[~absent], (0.0, 1.0)).all():
        found = np.unique(g[~absent])
        shown = ", ".join(f"{v:g}" for v in found[:6]) + (", ..." if len(found) > 6 else "")
        raise DataError(f"the nest column {nest!r} must be 0 or 1 for every product "
                        f"(NestedLogit has two nests, with rho[{nest}=0] and rho[{nest}=1]); it "
                        f"holds {len(found)} distinct value(s): {shown}. Recode two nests as "
                        f"0/1 (e.g. df[{nest!r}] = (df[{nest!r}] == <second nest>).astype(float)); "
                        "more than two nests are not supported")
    return np.where(absent, -1, g).astype(np.int64)

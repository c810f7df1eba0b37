"""Covariate domains: where prediction rules are evaluated and training locations come from.

A domain samples covariate locations (``sample``) and supplies evaluation locations with
weights (``evaluation_points``). :class:`Box` is a product of intervals cut by linear
inequalities, sampled by scrambled Sobol points with rejection (SPEC §6); :class:`ConvexHull` is
the convex hull of points (e.g. the observed covariates), a box cut by the hull's facets;
:class:`FiniteSet` is a finite support with probability weights.
"""

from __future__ import annotations

import ast
import hashlib
import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.spatial import ConvexHull as _Qhull
from scipy.spatial import QhullError
from scipy.stats import qmc

from ..shared import pyast
from ..shared.checks import aligned_by_label, numeric_column
from ..shared.exceptions import ConfigurationError, DomainError

__all__ = ["Domain", "Box", "ConvexHull", "FiniteSet", "LinearInequality"]


class Domain:
    """Base class: a covariate distribution P_X with named columns.

    A subclass sets ``columns`` and implements :meth:`sample`; :meth:`evaluation_points`
    defaults to an equally weighted sample.

    Examples
    --------
    The uniform distribution on the unit interval:

    >>> import numpy as np, restrictiveness as rx
    >>> class Unit(rx.Domain):
    ...     columns = ("x",)
    ...     def sample(self, size, rng):
    ...         return rng.random((size, 1))
    >>> dom = Unit()
    >>> X, w = dom.evaluation_points(4, np.random.default_rng(0))
    >>> dom.dim, X.shape, w.tolist()
    (1, (4, 1), [0.25, 0.25, 0.25, 0.25])
    """

    columns: tuple[str, ...]

    @property
    def dim(self) -> int:
        """Number of covariates (columns)."""
        return len(self.columns)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw training locations from P_X.

        The first ``k`` rows of a draw of ``n > k`` are a valid draw of ``k``, so training
        samples are nested in ``n``.

        Parameters
        ----------
        size : int
            Number of locations.
        rng : numpy.random.Generator
            The random stream.

        Returns
        -------
        ndarray
            Locations, shape ``(size, dim)``.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> rx.Box(x=(0, 1), y=(0, 2)).sample(3, np.random.default_rng(0)).shape
        (3, 2)
        """
        raise NotImplementedError

    def evaluation_points(self, size: int, rng: np.random.Generator
                          ) -> tuple[np.ndarray, np.ndarray]:
        """Evaluation locations and weights summing to one.

        Discrepancies are weighted averages over these points, the estimate of an expectation
        over P_X. The default is an equally weighted :meth:`sample`.

        Parameters
        ----------
        size : int
            Number of locations (domains with a finite support may use the whole support
            instead).
        rng : numpy.random.Generator
            The random stream.

        Returns
        -------
        X : ndarray
            Locations, shape ``(m, dim)``.
        weights : ndarray
            Their weights, shape ``(m,)``, summing to one.

        Examples
        --------
        >>> import numpy as np, restrictiveness as rx
        >>> X, w = rx.Box(x=(0, 1)).evaluation_points(4, np.random.default_rng(0))
        >>> X.shape, w.tolist()
        ((4, 1), [0.25, 0.25, 0.25, 0.25])
        """
        X = self.sample(size, rng)
        return X, np.full(len(X), 1.0 / len(X))


class LinearInequality:
    """``sum_k coef[k] * x[k] <= rhs`` over named columns.

    Build it from a dict of coefficients or parse it from text such as ``"z_lo <= z_hi"`` or
    ``"x1 + 2*x2 >= 1"``.

    Parameters
    ----------
    coefs : mapping of str to float
        Coefficient of each column; zero coefficients are dropped.
    rhs : float
        The right-hand side.

    Raises
    ------
    DomainError
        If every coefficient is zero.

    Examples
    --------
    >>> LinearInequality({"x1": 1.0, "x2": 2.0}, rhs=1.0)
    LinearInequality('x1 + 2*x2 <= 1')
    >>> LinearInequality.parse("z_lo <= z_hi")
    LinearInequality('z_lo - z_hi <= 0')
    """

    def __init__(self, coefs: Mapping[str, float], rhs: float = 0.0) -> None:
        values = {**coefs, "rhs": rhs}
        bad = {k: v for k, v in values.items() if isinstance(v, bool)
               or not isinstance(v, numbers.Real) or not math.isfinite(v)}
        if bad:
            raise DomainError(f"a linear inequality needs finite numbers as coefficients and "
                              f"right-hand side, got {bad}")
        self.coefs = {k: float(v) for k, v in coefs.items() if v != 0}
        self.rhs = float(rhs) + 0.0  # + 0.0 turns -0.0 into 0.0 for printing
        if not self.coefs:
            raise DomainError("a linear inequality needs at least one nonzero coefficient")

    @classmethod
    def parse(cls, text: str) -> LinearInequality:
        """Parse an inequality between linear expressions of the columns.

        Parameters
        ----------
        text : str
            ``"lhs <= rhs"`` or ``"lhs >= rhs"`` (``<`` and ``>`` read as ``<=`` and ``>=``),
            each side a sum of numbers, column names and products of a number and a name.

        Returns
        -------
        LinearInequality
            The same inequality as ``sum_k coef[k] * x[k] <= rhs``.

        Raises
        ------
        DomainError
            If the text is not a linear inequality.

        Examples
        --------
        >>> LinearInequality.parse("x1 + 2*x2 >= 1")
        LinearInequality('- x1 - 2*x2 <= -1')
        """
        try:
            node = pyast.parse(text, mode="eval").body
        except SyntaxError:
            raise DomainError(f"cannot parse inequality {text!r}") from None
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1
                and isinstance(node.ops[0], ast.LtE | ast.GtE | ast.Lt | ast.Gt)):
            raise DomainError(f"inequality {text!r} must have the form 'lhs <= rhs' or "
                              "'lhs >= rhs'")
        lhs, rhs = _linear(node.left, text), _linear(node.comparators[0], text)
        sign = 1.0 if isinstance(node.ops[0], ast.LtE | ast.Lt) else -1.0
        coefs: dict[str, float] = {}
        for name, c in lhs.items():
            coefs[name] = coefs.get(name, 0.0) + sign * c
        for name, c in rhs.items():
            coefs[name] = coefs.get(name, 0.0) - sign * c
        const = coefs.pop("", 0.0)
        return cls(coefs, -const)

    def satisfied(self, X: np.ndarray, columns: Sequence[str]) -> np.ndarray:
        """Flag the rows of ``X`` that satisfy the inequality (to within 1e-12).

        Parameters
        ----------
        X : ndarray
            Points, shape ``(m, len(columns))``.
        columns : sequence of str
            Names of the columns of ``X``; they must include every name of the inequality.

        Returns
        -------
        ndarray of bool
            One flag per row.

        Examples
        --------
        >>> import numpy as np
        >>> X = np.array([[0.1, 0.5], [0.6, 0.5]])
        >>> LinearInequality.parse("z_lo <= z_hi").satisfied(X, ("z_lo", "z_hi"))
        array([ True, False])
        """
        total = np.zeros(len(X))
        for name, c in self.coefs.items():
            if name not in columns:
                raise DomainError(f"inequality names {name!r}, not a domain column {list(columns)}")
            total += c * X[:, list(columns).index(name)]
        return total <= self.rhs + 1e-12

    def __repr__(self) -> str:
        terms = " ".join(
            f"{'+' if c > 0 else '-'} {'' if abs(c) == 1 else f'{abs(c):g}*'}{k}"
            for k, c in self.coefs.items()
        ).lstrip("+ ")
        return f"LinearInequality('{terms} <= {self.rhs:g}')"


def _linear(node: ast.AST, text: str) -> dict[str, float]:
    """Coefficients of a linear expression; the constant term is keyed by ''."""
    if isinstance(node, ast.Name):
        return {node.id: 1.0}
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return {"": float(node.value)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return {k: -v for k, v in _linear(node.operand, text).items()}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        return _linear(node.operand, text)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
        left, right = _linear(node.left, text), _linear(node.right, text)
        s = 1.0 if isinstance(node.op, ast.Add) else -1.0
        out = dict(left)
        for k, v in right.items():
            out[k] = out.get(k, 0.0) + s * v
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Div):
        left, right = _linear(node.left, text), _linear(node.right, text)
        if isinstance(node.op, ast.Mult) and set(left) == {""}:
            return {k: left[""] * v for k, v in right.items()}
        if set(right) == {""}:
            if isinstance(node.op, ast.Div) and right[""] == 0:  # was a bare ZeroDivisionError
                raise DomainError(f"inequality {text!r} divides by zero")
            f = right[""] if isinstance(node.op, ast.Mult) else 1.0 / right[""]
            return {k: f * v for k, v in left.items()}
    raise DomainError(f"inequality {text!r} is not linear in the domain's columns")


def _frame_columns(df, columns: Sequence[str], who: str) -> np.ndarray:
    """Numeric columns of a DataFrame as a finite float matrix (named errors otherwise)."""
    if not hasattr(df, "columns"):
        raise DomainError(f"{who}: df must be a pandas DataFrame")
    if isinstance(columns, str):
        raise DomainError(f"{who}: columns must be a sequence of names, not the string "
                          f"{columns!r}")
    columns = list(columns)
    missing = [c for c in columns if c not in df.columns]
    if not columns or missing:
        raise DomainError(f"{who}: columns {missing or columns} are not in the data; available: "
                          f"{list(df.columns)}")
    twice = sorted({c for c in columns if columns.count(c) > 1
                    or list(df.columns).count(c) > 1})
    if twice:  # a Box merged the two into one interval; a repeated data column crashed
        raise DomainError(f"{who}: {twice} occur more than once in columns or in the data")
    for c in columns:  # "1.5" or a categorical's categories were read as numbers
        numeric_column(df[c], who, DomainError)
    X = df[columns].to_numpy(dtype=float)
    if len(X) == 0 or not np.isfinite(X).all():
        raise DomainError(f"{who}: the columns must have rows and no missing or infinite values")
    return X


#: Sampling by rejection gives up when fewer than this share of Sobol points is admissible.
MIN_ACCEPTANCE = 1e-3


def _sobol_rejection(domain: Box | ConvexHull, size: int, rng: np.random.Generator) -> np.ndarray:
    """The first ``size`` admissible points of a scrambled Sobol sequence in the domain's
    bounding box ``[lower, upper]`` (the sampler of :class:`Box` and :class:`ConvexHull`)."""
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise DomainError(f"cannot sample {size!r} points; size must be a whole number >= 0")
    size = int(size)
    sobol = qmc.Sobol(domain.dim, scramble=True, seed=rng)
    kept: list[np.ndarray] = []
    have = drawn = 0
    log2_batch = max(int(np.ceil(np.log2(max(size, 1) * 1.25))), 4)
    while have < size:
        # Batches that double the points drawn keep every total a power of two, so scipy
        # has no balance warning to give: silencing it would swap the process's filters,
        # which a fit on another thread shares (Study(concurrency=N)).
        U = sobol.random_base2(log2_batch)
        drawn += 1 << log2_batch
        log2_batch = int(np.log2(drawn))
        X = domain.lower + U * (domain.upper - domain.lower)
        X = X[domain.admissible(X)]
        kept.append(X)
        have += len(X)
        if have < size and have < MIN_ACCEPTANCE * drawn:
            raise DomainError(
                f"the domain admits only {have} of {drawn} Sobol points of its bounding box; "
                f"its inequalities leave (almost) no volume, so {size} locations cannot be "
                "drawn"
            )
    return np.concatenate(kept)[:size] if kept else np.empty((0, domain.dim))


class Box(Domain):
    """A box of named intervals, optionally cut by linear inequalities; uniform P_X.

    Locations are a scrambled Sobol sequence rescaled to the box, with points that violate an
    inequality discarded (rejection); the first ``n`` admissible points are kept, so samples are
    nested in ``n``.

    Parameters
    ----------
    ranges : mapping of str to (low, high), optional
        The intervals, in column order; or give them as keywords, ``Box(x1=(0, 1), x2=(0, 1))``.
    where : sequence of str or LinearInequality, optional
        Inequalities that admissible points satisfy, e.g. ``["z_lo <= z_hi"]``.
    **intervals : (float, float)
        Intervals given as keywords, after those of ``ranges``.

    Raises
    ------
    DomainError
        If no interval is given, an interval is not finite with ``low < high``, or an
        inequality names a column the box does not have.

    Examples
    --------
    >>> import numpy as np
    >>> box = Box({"z_hi": (1 / 15, 1), "z_lo": (0, 1 / 3), "p": (0.05, 0.95)},
    ...           where=["z_lo <= z_hi"])
    >>> X = box.sample(50, np.random.default_rng(0))
    >>> X.shape, bool((X[:, 1] <= X[:, 0]).all())
    ((50, 3), True)
    """

    def __init__(self, ranges: Mapping[str, tuple[float, float]] | None = None,
                 where: Sequence[str | LinearInequality] = (),
                 **intervals: tuple[float, float]) -> None:
        twice = sorted(set(ranges or {}) & set(intervals))
        if twice:
            raise DomainError(f"Box: {twice} given both in ranges and as keyword arguments")
        ranges = {**(ranges or {}), **intervals}
        if not ranges:
            raise DomainError("Box needs at least one named interval")
        for c, r in ranges.items():  # "01" or (0, 1, 2) used to pass as (0, 1)
            if isinstance(r, str | bytes) or np.shape(r) != (2,):
                raise DomainError(f"Box: the interval of {c!r} must be a pair (low, high), "
                                  f"got {r!r}")
        self.columns = tuple(ranges)
        self.lower = np.array([float(ranges[c][0]) for c in self.columns])
        self.upper = np.array([float(ranges[c][1]) for c in self.columns])
        bad = [c for c, lo, hi in zip(self.columns, self.lower, self.upper, strict=True)
               if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi)]
        if bad:
            raise DomainError(f"Box: interval of {bad} must be finite with low < high")
        if isinstance(where, str | LinearInequality):  # 'a <= b' was read letter by letter
            raise DomainError(f"Box: where takes a list of inequalities, e.g. [{where!r}], got "
                              f"one inequality {where!r}")
        self.where = tuple(w if isinstance(w, LinearInequality) else LinearInequality.parse(w)
                           for w in where)
        for w in self.where:
            w.satisfied(self.lower[None, :], self.columns)  # validates column names

    @classmethod
    def from_frame(cls, df, columns: Sequence[str], pad: float = 0.0,
                   where: Sequence[str | LinearInequality] = ()) -> Box:
        """The box spanned by data: each column's range, widened by ``pad`` times its width on
        both sides.

        Parameters
        ----------
        df : DataFrame
            The data.
        columns : sequence of str
            Numeric columns, in the domain's column order.
        pad : float
            Fraction of each range added below and above (0: the observed range).
        where : sequence, optional
            Linear inequalities, as in :class:`Box`.

        Examples
        --------
        >>> import pandas as pd
        >>> Box.from_frame(pd.DataFrame({"a": [0.0, 2.0], "b": [1.0, 3.0]}), ["a", "b"], pad=0.5)
        Box(a=(-1.0, 3.0), b=(0.0, 4.0))
        """
        X = _frame_columns(df, columns, "Box.from_frame")
        if isinstance(pad, bool) or not isinstance(pad, numbers.Real) \
                or not (math.isfinite(pad) and pad >= 0):
            raise DomainError(f"Box.from_frame: pad must be a nonnegative number, got {pad!r}")
        lo, hi = X.min(axis=0), X.max(axis=0)
        flat = [c for c, a, b in zip(columns, lo, hi, strict=True) if not a < b]
        if flat:
            raise DomainError(f"Box.from_frame: column(s) {flat} are constant in the data; a box "
                              "needs an interval (drop them or use FiniteSet.from_frame)")
        width = hi - lo
        return cls({c: (float(a - pad * w), float(b + pad * w))
                    for c, a, b, w in zip(columns, lo, hi, width, strict=True)}, where=where)

    def admissible(self, X: np.ndarray) -> np.ndarray:
        """Flag the points that satisfy every inequality of the box.

        Parameters
        ----------
        X : ndarray
            Points in the box's column order, shape ``(m, dim)``.

        Returns
        -------
        ndarray of bool
            One flag per row (points outside the intervals are not flagged: only the
            inequalities are checked).

        Examples
        --------
        >>> import numpy as np
        >>> box = Box(z_hi=(0, 1), z_lo=(0, 1), where=["z_lo <= z_hi"])
        >>> box.admissible(np.array([[0.5, 0.2], [0.2, 0.5]]))
        array([ True, False])
        """
        ok = np.ones(len(X), dtype=bool)
        for w in self.where:
            ok &= w.satisfied(X, self.columns)
        return ok

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw admissible locations: scrambled Sobol points in the box, by rejection.

        Parameters
        ----------
        size : int
            Number of locations.
        rng : numpy.random.Generator
            Seeds the scrambling.

        Returns
        -------
        ndarray
            Locations, shape ``(size, dim)``; with the same ``rng`` state, the draw of ``k``
            is the first ``k`` rows of a draw of ``n > k``.

        Raises
        ------
        DomainError
            If ``size`` is negative, or the inequalities admit (almost) no Sobol point.

        Examples
        --------
        >>> import numpy as np
        >>> box = Box(z_hi=(0, 1), z_lo=(0, 1), where=["z_lo <= z_hi"])
        >>> X = box.sample(20, np.random.default_rng(0))
        >>> bool((X[:, 1] <= X[:, 0]).all())
        True
        >>> np.array_equal(box.sample(5, np.random.default_rng(0)), X[:5])
        True
        """
        return _sobol_rejection(self, size, rng)

    def __repr__(self) -> str:
        r = ", ".join(f"{c}=({lo!r}, {hi!r})" for c, lo, hi in
                      zip(self.columns, self.lower.tolist(), self.upper.tolist(), strict=True))
        w = f", where={[repr(x) for x in self.where]}" if self.where else ""
        return f"Box({r}{w})"


class ConvexHull(Domain):
    """The convex hull of points, with the uniform distribution on it as P_X.

    The natural domain for a model of data: rules are evaluated where the data's covariates
    lie, not on the corners of their bounding box where no observation is. The hull is the
    bounding box of the points cut by the hull's facets (from Qhull), so it samples as a
    :class:`Box` does: scrambled Sobol points in the bounding box, those outside the hull
    discarded, samples nested in ``n``.

    Parameters
    ----------
    points : ndarray
        Points whose convex hull is the domain, shape ``(k, len(columns))``, finite, spanning
        every column (not all on one hyperplane).
    columns : sequence of str
        Names of the covariates.
    where : sequence of str or LinearInequality, optional
        Further linear inequalities that admissible points satisfy, as in :class:`Box`.

    Attributes
    ----------
    vertices : ndarray
        The points that are vertices of the hull, shape ``(v, len(columns))``.
    equations : ndarray
        The facets ``a·x + c <= 0`` as rows ``(a, c)`` with unit outward normals ``a``, shape
        ``(f, len(columns) + 1)``.
    volume : float
        The hull's volume (its length in one dimension, its area in two).

    Raises
    ------
    DomainError
        If the points are not finite, have the wrong shape, are constant in a column, or lie on
        a hyperplane (the hull has no volume).

    Notes
    -----
    The hull's facets multiply with the dimension, and the share of its bounding box it fills
    falls: for normal data, 363 facets and 19% in 4 columns (500 points), 7,301 and 3% in 6
    (300 points; 1,000 locations in 0.5 s), 162,293 and 0.3% in 8 (300 points; 20 s to build,
    24 s per 1,000 locations). Beyond about six columns, consider a :class:`Box` with the
    inequalities that matter, or a :class:`FiniteSet` of the data.

    Examples
    --------
    The triangle below the diagonal of the unit square:

    >>> import numpy as np
    >>> tri = ConvexHull(np.array([[0, 0], [1, 0], [0, 1], [0.2, 0.2]]), columns=("x", "y"))
    >>> tri.volume, len(tri.vertices)
    (0.5, 3)
    >>> X = tri.sample(1000, np.random.default_rng(0))
    >>> bool((X.sum(axis=1) <= 1).all()), X.mean(axis=0).round(2).tolist()
    (True, [0.33, 0.33])
    """

    def __init__(self, points: np.ndarray, columns: Sequence[str],
                 where: Sequence[str | LinearInequality] = ()) -> None:
        if isinstance(columns, str) or len(set(columns)) != len(columns) or len(columns) == 0 \
                or not all(isinstance(c, str) for c in columns):
            raise DomainError(f"ConvexHull: columns must be distinct names, got {columns!r}")
        columns = tuple(str(c) for c in columns)  # numpy's str_ prints as np.str_('a')
        points = np.asarray(points, dtype=float)
        d = len(columns)
        if points.ndim != 2 or points.shape[1] != d:
            raise DomainError(f"ConvexHull: points must have shape (k, {d}) for columns "
                              f"{list(columns)}, got {points.shape}")
        if not np.isfinite(points).all():
            raise DomainError("ConvexHull: points must be finite (no missing or infinite values)")
        lo, hi = points.min(axis=0), points.max(axis=0)
        flat = [c for c, a, b in zip(columns, lo, hi, strict=True) if not a < b]
        if flat:
            raise DomainError(f"ConvexHull: column(s) {flat} are constant in the points; a hull "
                              "needs volume (drop them or use FiniteSet)")
        # the bounding box and the further inequalities, checked as a Box checks them
        box = Box({c: (float(a), float(b)) for c, a, b in zip(columns, lo, hi, strict=True)},
                  where=where)
        self.columns, self.lower, self.upper, self.where = box.columns, lo, hi, box.where
        self._box = box
        self.points = points
        if d == 1:  # Qhull needs two dimensions; the hull of points on a line is their range
            self.vertices = np.array([lo, hi])
            self.equations = np.array([[-1.0, lo[0]], [1.0, -hi[0]]])
            self.volume = float(hi[0] - lo[0])
        else:
            try:
                hull = _Qhull(points)
            except QhullError as err:  # scipy's message is a page of Qhull options
                raise DomainError(
                    f"ConvexHull: the {len(points)} points lie on a hyperplane of the "
                    f"{d}-dimensional space of {list(columns)} (or are fewer than {d + 1}), so "
                    "their hull has no volume; drop a column that is a linear function of the "
                    "others, or use FiniteSet") from err
            self.vertices = points[hull.vertices]
            self.equations = hull.equations
            self.volume = float(hull.volume)
        # The points themselves must be admissible: a facet through them evaluates to rounding
        # errors of the size of its terms, which exceed LinearInequality's absolute 1e-12 for
        # data in the thousands.
        reach = np.abs(self.equations[:, :-1]) @ np.abs(points).max(axis=0)
        slack = 1e-12 + 64 * np.finfo(float).eps * (reach + np.abs(self.equations[:, -1]))
        # Facets that cut off most of the bounding box first: most Sobol points of a hull in
        # several dimensions lie outside it (97% for 300 normal points in 6-D, with 7,301
        # facets), and a point is dropped at the first facet block it violates.
        pilot = self.lower + qmc.Sobol(d, scramble=False).random_base2(10) * (hi - lo)
        E = self.equations
        cut = np.concatenate([(pilot @ E[i:i + 4096, :-1].T + E[i:i + 4096, -1]
                               > slack[i:i + 4096]).sum(axis=0) for i in range(0, len(E), 4096)])
        order = np.argsort(-cut, kind="stable")
        self.equations, self._slack = self.equations[order], slack[order]

    @classmethod
    def from_frame(cls, df, columns: Sequence[str],
                   where: Sequence[str | LinearInequality] = ()) -> ConvexHull:
        """The convex hull of the rows of data.

        Parameters
        ----------
        df : DataFrame
            The data.
        columns : sequence of str
            Numeric columns, in the domain's column order.
        where : sequence, optional
            Further linear inequalities, as in :class:`Box`.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"a": [0.0, 2.0, 0.0, 0.5], "b": [0.0, 0.0, 2.0, 0.5]})
        >>> ConvexHull.from_frame(df, ["a", "b"]).volume
        2.0
        """
        return cls(_frame_columns(df, columns, "ConvexHull.from_frame"), columns, where=where)

    def admissible(self, X: np.ndarray) -> np.ndarray:
        """Flag the points inside the hull that satisfy every inequality of ``where``.

        Parameters
        ----------
        X : ndarray
            Points in the domain's column order, shape ``(m, dim)``.

        Returns
        -------
        ndarray of bool
            One flag per row (points on a facet, to rounding, are inside).

        Examples
        --------
        >>> import numpy as np
        >>> tri = ConvexHull(np.array([[0, 0], [1, 0], [0, 1]]), columns=("x", "y"))
        >>> tri.admissible(np.array([[0.5, 0.5], [0.6, 0.6], [-0.1, 0.5]]))
        array([ True, False, False])
        """
        X = np.asarray(X, dtype=float)
        ok = self._box.admissible(X)
        A, c = self.equations[:, :-1], self.equations[:, -1] - self._slack
        alive = np.flatnonzero(ok)
        start, block = 0, 32
        while start < len(c) and alive.size:  # blocks of facets, each on the points left
            stop = start + block
            inside = (X[alive] @ A[start:stop].T + c[start:stop] <= 0).all(axis=1)
            ok[alive[~inside]] = False
            alive = alive[inside]
            start, block = stop, min(2 * block, max(32, 2**20 // max(alive.size, 1)))
        return ok

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw locations uniform on the hull: scrambled Sobol points in its bounding box, by
        rejection.

        Parameters
        ----------
        size : int
            Number of locations.
        rng : numpy.random.Generator
            Seeds the scrambling.

        Returns
        -------
        ndarray
            Locations, shape ``(size, dim)``; with the same ``rng`` state, the draw of ``k``
            is the first ``k`` rows of a draw of ``n > k``.

        Raises
        ------
        DomainError
            If ``size`` is negative, or the hull fills (almost) none of its bounding box.

        Examples
        --------
        >>> import numpy as np
        >>> tri = ConvexHull(np.array([[0, 0], [1, 0], [0, 1]]), columns=("x", "y"))
        >>> X = tri.sample(8, np.random.default_rng(0))
        >>> bool(tri.admissible(X).all())
        True
        """
        return _sobol_rejection(self, size, rng)

    def __repr__(self) -> str:
        # the digest identifies the points (checkpoints compare reprs)
        digest = hashlib.sha256(self.points.tobytes()).hexdigest()[:16]
        w = f", where={[repr(x) for x in self.where]}" if self.where else ""
        return f"ConvexHull({len(self.points)} points, columns={self.columns}{w}, sha256={digest})"


class FiniteSet(Domain):
    """A finite support with probability weights.

    Training locations are drawn iid from the weights (with replacement unless
    ``replace=False``); evaluation uses the whole support with its weights, so discrepancies are
    exact expectations over P_X.

    Parameters
    ----------
    points : ndarray
        The support, shape ``(size, len(columns))``, finite.
    columns : sequence of str
        Names of the covariates.
    weights : ndarray, optional
        Nonnegative weight of each point, not all zero; normalised to sum to one (default:
        equal weights).
    replace : bool
        Draw training locations with replacement (iid draws from P_X); without replacement a
        sample cannot be larger than the support.

    Raises
    ------
    DomainError
        If the support is empty, not finite or of the wrong shape, or the weights are invalid.
    ConfigurationError
        If fewer than two distinct points have positive weight: restrictiveness needs variation
        in the covariates (on one location a constant baseline fits every rule exactly, and r̂
        would be 0/0).

    Examples
    --------
    >>> import numpy as np
    >>> dom = FiniteSet(np.linspace(0, 1, 5)[:, None], columns=("x",))
    >>> X, w = dom.evaluation_points(0, np.random.default_rng(0))
    >>> X.shape, float(w.sum())
    ((5, 1), 1.0)
    """

    def __init__(self, points: np.ndarray, columns: Sequence[str],
                 weights: np.ndarray | None = None, replace: bool = True) -> None:
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[1] != len(columns):
            raise DomainError("FiniteSet: points must be (size, len(columns))")
        if len(points) == 0:
            raise DomainError("FiniteSet: the support is empty")
        if not np.isfinite(points).all():
            raise DomainError("FiniteSet: points must be finite")
        if isinstance(columns, str) or len(set(columns)) != len(columns):
            raise DomainError(f"FiniteSet: columns must be distinct names, got {columns!r}")
        w = np.ones(len(points)) if weights is None else np.asarray(weights, dtype=float)
        if w.shape != (len(points),) or not np.isfinite(w).all() or (w < 0).any() \
                or w.sum() <= 0:
            raise DomainError("FiniteSet: weights must be finite and nonnegative, one per point, "
                              "not all 0")
        distinct = len(np.unique(points[w > 0], axis=0))
        if distinct < 2:
            # every rule is one number on one location: a constant baseline fits it exactly, so
            # r̂ would be 0/0 made of rounding errors (it came out as 1.000 (0.000))
            raise ConfigurationError(
                f"FiniteSet: restrictiveness needs variation in the covariates, but the support "
                f"has {distinct} distinct point with positive weight (of {len(points)} given); "
                "on one location every rule is a single number that a constant baseline fits "
                "exactly, so r̂ would be 0/0; give at least two distinct points")
        self.points, self.weights, self.columns = points, w / w.sum(), tuple(columns)
        if not isinstance(replace, bool | np.bool_):  # bool("no") is True
            raise DomainError(f"FiniteSet: replace must be True or False, got {replace!r}")
        self.replace = bool(replace)

    @classmethod
    def from_frame(cls, df, columns: Sequence[str], weights: str | np.ndarray | None = None,
                   replace: bool = True) -> FiniteSet:
        """The empirical covariate distribution of data as P_X.

        With ``replace=True``, rows with the same covariates are merged into one support point
        whose weight is their total weight (the distribution of iid draws is unchanged, and
        evaluation, which uses the whole support, costs the number of distinct rows rather than
        of rows). With ``replace=False`` the rows are kept as they are: a draw without
        replacement is a subsample of the rows, in which repeated rows can appear together.

        Parameters
        ----------
        df : DataFrame
            The data.
        columns : sequence of str
            Numeric columns, in the domain's column order.
        weights : str or array_like, optional
            A column of ``df`` or one nonnegative weight per row (default: equal weights); a
            :class:`pandas.Series` is aligned with the rows by index label, not position.
        replace : bool
            Draw training locations with replacement (as iid draws from P_X), or without
            (subsamples of the rows).

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"x": [0.0, 1.0, 1.0, 2.0]})
        >>> dom = FiniteSet.from_frame(df, ["x"])
        >>> dom.points.ravel().tolist(), dom.weights.tolist()
        ([0.0, 1.0, 2.0], [0.25, 0.5, 0.25])
        """
        X = _frame_columns(df, columns, "FiniteSet.from_frame")
        if weights is None:
            w = np.ones(len(X))
        elif isinstance(weights, str):
            if weights not in df.columns:
                raise DomainError(f"FiniteSet.from_frame: weights names column {weights!r} "
                                  "that the data do not have")
            numeric_column(df[weights], "FiniteSet.from_frame", DomainError)
            w = df[weights].to_numpy(dtype=float)
        elif isinstance(weights, pd.Series):  # by row label, as pandas aligns, not position
            w = np.asarray(aligned_by_label(weights, df.index, "weights"), dtype=float)
        else:
            w = np.asarray(weights, dtype=float)
        if w.shape != (len(X),) or not np.isfinite(w).all() or (w < 0).any():
            raise DomainError("FiniteSet.from_frame: weights must be finite, nonnegative and "
                              "one per row")
        if not replace:  # (the constructor refuses a replace that is not a bool)
            # merged rows were drawn at most once: x = [0, 1, 1, 2] never gave the subsample
            # (1, 1), and n = 4 was refused ("3 points")
            return cls(X, columns, w, replace=replace)
        support, inverse = np.unique(X, axis=0, return_inverse=True)
        return cls(support, columns, np.bincount(inverse.ravel(), weights=w,
                                                 minlength=len(support)), replace=replace)

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw training locations from the support with its weights.

        Parameters
        ----------
        size : int
            Number of locations.
        rng : numpy.random.Generator
            The random stream.

        Returns
        -------
        ndarray
            Locations, shape ``(size, dim)``.

        Raises
        ------
        DomainError
            If ``size`` is not a whole number >= 0, or ``replace=False`` and ``size`` exceeds
            the points of positive weight.

        Examples
        --------
        >>> import numpy as np
        >>> dom = FiniteSet(np.array([[0.0], [1.0], [2.0]]), ("x",),
        ...                 weights=np.array([0.0, 1.0, 1.0]))
        >>> sorted(set(dom.sample(20, np.random.default_rng(0)).ravel().tolist()))
        [1.0, 2.0]
        """
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
            raise DomainError(f"cannot sample {size!r} points; size must be a whole number >= 0")
        # points of weight 0 are never drawn: numpy's bare "Fewer non-zero entries in p than
        # size" was the error when n exceeded the points of positive weight
        positive = int(np.count_nonzero(self.weights))
        if not self.replace and size > positive:
            raise DomainError(
                f"cannot draw n={size} distinct locations from a finite set of "
                f"{len(self.points)} points"
                + (f", {positive} of positive weight" if positive < len(self.points) else "")
                + "; lower n or sample with replace=True"
            )
        idx = rng.choice(len(self.points), size=size, replace=self.replace, p=self.weights)
        return self.points[idx]

    def evaluation_points(self, size, rng):
        """The whole support with its weights (exact expectations over P_X).

        Parameters
        ----------
        size : int
            Ignored: the support is used whatever its size.
        rng : numpy.random.Generator
            Ignored.

        Returns
        -------
        X : ndarray
            The support, shape ``(size of the support, dim)``.
        weights : ndarray
            The normalised weights.

        Examples
        --------
        >>> import numpy as np
        >>> dom = FiniteSet(np.array([[0.0], [1.0]]), ("x",), weights=np.array([1.0, 3.0]))
        >>> X, w = dom.evaluation_points(1000, np.random.default_rng(0))
        >>> X.ravel().tolist(), w.tolist()
        ([0.0, 1.0], [0.25, 0.75])
        """
        return self.points, self.weights

    def __repr__(self) -> str:
        # the digest identifies the support and weights (checkpoints compare reprs)
        digest = hashlib.sha256(self.points.tobytes() + self.weights.tobytes()).hexdigest()[:16]
        return (f"FiniteSet({len(self.points)} points, columns={self.columns}, "
                f"replace={self.replace}, sha256={digest})")

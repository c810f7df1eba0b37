"""Sensitivity of a study's comparisons to the evaluation distribution (SPEC §4), as methods of
:class:`~restrictiveness.engine.results.Results`.

A *comparison* is a linear combination ``Σ_j c_j r_j`` of restrictiveness values on common
pseudo-truths, written as a string and held as weights ``{label: c_j}``:

* ``"CPT(delta)"`` — one procedure's own restrictiveness (weights ``{label: 1}``);
* ``"CPT(delta)-CPT(alpha,gamma,delta)"`` — a paired difference, split on the top-level ``-``
  (outside parentheses, so labels may contain parentheses, commas and hyphens);
* ``"C_q"`` — the contribution of parameter ``q`` to a nested model family,
  ``C_q = r_{−q} − r_full`` (the submodel with ``q`` fixed minus the full model), when the
  results carry a :class:`Contributions` specification (the lottery study's are CPT's
  ``C_alpha``, ``C_gamma``, ``C_delta``), and contrasts such as ``"C_delta-C_gamma" =
  r_{−δ} − r_{−γ}`` (the full model cancels).

Reweighting the M pseudo-truths by ``w ∈ W_{Γ,M}`` turns the comparison into
``Σ_m w_m (Σ_j c_j D̃_jm) / Σ_m w_m B̃_m``, bounded exactly by :func:`.sensitivity.bounds` with
numerator ``Σ_j c_j D̃_j`` (D̃, B̃ are within-function averages over training draws, S.1.6).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr
from numpy.typing import ArrayLike

from ..shared.checks import repeated
from ..shared.exceptions import ConfigurationError
from ..shared.files import CONVENTIONS
from ..shared.plotting import greek, new_axes
from . import sensitivity as _sens

if TYPE_CHECKING:  # pragma: no cover
    from statsmodels.iolib.summary import Summary

__all__ = ["SensitivityMixin", "Contributions", "parse_comparison"]

_OPEN, _CLOSE = "([{", ")]}"
@dataclass(frozen=True)
class Contributions:
    """Parameter contributions of a nested model family (SPEC §4).

    The contribution of parameter ``q`` is ``C_q = r_{−q} − r_full``: the restrictiveness of
    the submodel with ``q`` fixed minus that of the full model. Results that carry a
    specification (a study's ``contributions=``) accept ``"C_q"`` terms in comparisons and
    report them with :meth:`SensitivityMixin.contributions`.

    Parameters
    ----------
    full : str
        Label of the full model.
    submodels : mapping of str to str
        Label of the submodel with each parameter fixed, by parameter name.
    report : sequence of str
        The comparisons :meth:`~SensitivityMixin.contributions` reports, in order (default:
        each ``C_q``).
    symbols : mapping of str to str
        Other spellings of parameter names in ``C_q`` terms (e.g. ``{"α": "alpha"}``).

    Examples
    --------
    >>> spec = Contributions("M(a,b)", {"a": "M(b)", "b": "M(a)"})
    >>> parse_comparison("C_a-C_b", ["M(a,b)", "M(b)", "M(a)"], spec)
    {'M(b)': 1.0, 'M(a)': -1.0}
    """

    full: str
    submodels: Mapping[str, str]
    report: tuple[str, ...] = ()
    symbols: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.submodels, Mapping):  # a string was a bare ValueError
            raise ConfigurationError(f"Contributions: submodels must be a mapping {{parameter: "
                                     f"procedure label}}, got {self.submodels!r}")
        if not self.submodels:
            raise ConfigurationError("Contributions: submodels must name at least one parameter")
        object.__setattr__(self, "submodels", dict(self.submodels))
        object.__setattr__(self, "symbols", dict(self.symbols))
        if isinstance(self.report, str):  # "C_a" was read letter by letter
            raise ConfigurationError(f"Contributions: report must be a sequence of comparisons, "
                                     f"e.g. ({self.report!r},), got the string {self.report!r}")
        object.__setattr__(self, "report", tuple(self.report)
                           or tuple(f"C_{q}" for q in self.submodels))
        twice = sorted(repeated(self.report))
        if twice:  # the contributions table showed them once, silently
            raise ConfigurationError(f"Contributions: report names {twice} more than once "
                                     f"{list(self.report)}; give each comparison once")
        # C_q = r_{-q} - r_full: the full model as its own submodel gave C_q = 0 exactly, and
        # one label for two parameters C_q = C_s, both typos passing silently
        if self.full in self.submodels.values():
            raise ConfigurationError(f"Contributions: the full model {self.full!r} is also given "
                                     f"as a submodel {self.submodels}; each parameter's submodel "
                                     "is the model with that parameter fixed")
        twice = sorted(repeated(self.submodels.values()))
        if twice:
            raise ConfigurationError(f"Contributions: submodel(s) {twice} are given for more than "
                                     f"one parameter in {self.submodels}; each parameter has its "
                                     "own submodel")
        unknown = [v for v in self.symbols.values() if v not in self.submodels]
        if unknown:
            raise ConfigurationError(f"Contributions: symbols map to unknown parameter(s) "
                                     f"{unknown}; parameters are {list(self.submodels)}")

    def parameter(self, term: str) -> str | None:
        """The parameter a contribution term names.

        Parameters
        ----------
        term : str
            A term of a comparison: ``C_q``, ``Cq`` or ``C_{q}``, ``q`` a parameter name or
            one of its ``symbols``.

        Returns
        -------
        str or None
            The parameter's name, or None when the term names no parameter of this family.

        Examples
        --------
        >>> spec = Contributions("CPT", {"alpha": "CPT(g,d)", "gamma": "CPT(a,d)"},
        ...                      symbols={"α": "alpha"})
        >>> spec.parameter("C_α"), spec.parameter("C_{gamma}"), spec.parameter("C_delta")
        ('alpha', 'gamma', None)
        """
        match = re.match(r"^C_?\{?(.+?)\}?$", term)
        if match is None:
            return None
        q = self.symbols.get(match.group(1), match.group(1))
        return q if q in self.submodels else None

    def to_json(self) -> str:
        """The specification as JSON (how results files store it).

        Returns
        -------
        str
            A JSON object with ``full``, ``submodels``, ``report`` and ``symbols``;
            :meth:`from_json` reads it back.

        Examples
        --------
        >>> spec = Contributions("M(a,b)", {"a": "M(b)", "b": "M(a)"})
        >>> json.loads(spec.to_json())["report"]
        ['C_a', 'C_b']
        >>> Contributions.from_json(spec.to_json()) == spec
        True
        """
        return json.dumps({"full": self.full, "submodels": self.submodels,
                           "report": list(self.report), "symbols": self.symbols})

    @classmethod
    def from_json(cls, text: str) -> Contributions:
        """Read a specification written by :meth:`to_json`.

        Parameters
        ----------
        text : str
            The JSON text (e.g. a results file's ``contributions`` attribute).

        Returns
        -------
        Contributions
            Equal to the specification that wrote it.

        Examples
        --------
        >>> text = '{"full": "M(a,b)", "submodels": {"a": "M(b)"}, "report": [], "symbols": {}}'
        >>> Contributions.from_json(text).report
        ('C_a',)
        """
        d = json.loads(text)
        return cls(d["full"], d["submodels"], tuple(d["report"]), d["symbols"])


# Summary tables: comparisons left-aligned in the stub, numbers right-aligned.
_RIGHT = {"data_aligns": "r", "stub_align": "l", "header_align": "r"}
_LEFT = {"data_aligns": "l", "stub_align": "l"}


# ---------------------------------------------------------------------------- parsing


def _top_level_minus(text: str) -> list[int]:
    """Positions of '-' outside every bracket pair."""
    depth, out = 0, []
    for i, ch in enumerate(text):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(depth - 1, 0)
        elif ch == "-" and depth == 0:
            out.append(i)
    return out


def _term(text: str, procedures: Sequence[str], contributions: Contributions | None
          ) -> dict[str, float] | None:
    """Weights of one term (a label or C_q), or None when it names nothing known."""
    text = text.strip()
    if not text:
        return None
    if text in procedures:
        return {text: 1.0}
    # Spaces inside a label are a typing accident only when they pick out a unique label.
    squeezed = "".join(text.split())
    loose = [p for p in procedures if "".join(p.split()) == squeezed]
    if len(loose) == 1:
        return {loose[0]: 1.0}
    q = contributions.parameter(squeezed) if contributions is not None else None
    if q is None or contributions is None:
        return None
    sub, full = contributions.submodels[q], contributions.full
    missing = [p for p in (sub, full) if p not in procedures]
    if missing:
        raise ConfigurationError(
            f"comparison term {text!r} is the contribution C_{q} = r[{sub}] − r[{full}]"
            f", but the results have no procedure {missing}; procedures are {list(procedures)}")
    return {sub: 1.0, full: -1.0}


def _c_hint(contributions: Contributions | None) -> str:
    if contributions is None:
        return ""
    return ", and " + ", ".join(f"C_{q}" for q in contributions.submodels) + " name contributions"


def parse_comparison(text: str, procedures: Sequence[str],
                     contributions: Contributions | None = None) -> dict[str, float]:
    """Weights ``{label: coefficient}`` of a comparison string.

    Parameters
    ----------
    text : str
        ``"A"`` (restrictiveness of A), ``"A-B"`` (r_A − r_B; the split is at a ``-`` outside
        parentheses, and a label containing ``-`` is matched whole first), or, with
        ``contributions``, parameter contributions ``"C_q"`` (``C_q = r_{−q} − r_full``) on
        either side, e.g. ``"C_delta-C_gamma"``. Whitespace around terms is ignored;
        whitespace inside a label is ignored when it still identifies one label.
    procedures : sequence of str
        The labels available (e.g. ``Results.procedures``).
    contributions : Contributions, optional
        Defines the ``C_q`` terms (e.g. :data:`restrictiveness.lottery.CPT_CONTRIBUTIONS`).

    Returns
    -------
    dict
        Nonzero coefficients by procedure label, in order of appearance.

    Raises
    ------
    ConfigurationError
        Unknown labels (named in the message), ambiguous splits, a C_q form whose
        procedures are missing, or a comparison that cancels to zero.

    Examples
    --------
    >>> procs = ["CPT(alpha,gamma,delta)", "CPT(gamma,delta)", "CPT(alpha,delta)",
    ...          "CPT(alpha,gamma)", "CPT(delta)"]
    >>> parse_comparison("CPT(delta)-CPT(alpha,gamma,delta)", procs)
    {'CPT(delta)': 1.0, 'CPT(alpha,gamma,delta)': -1.0}
    >>> cpt = Contributions("CPT(alpha,gamma,delta)", {"alpha": "CPT(gamma,delta)",
    ...                     "gamma": "CPT(alpha,delta)", "delta": "CPT(alpha,gamma)"})
    >>> parse_comparison("C_delta-C_gamma", procs, cpt)
    {'CPT(alpha,gamma)': 1.0, 'CPT(alpha,delta)': -1.0}
    """
    if not isinstance(text, str):
        raise ConfigurationError(f"comparison must be a string; got {type(text).__name__}")
    procedures = [str(p) for p in procedures]
    text = text.strip()
    whole = _term(text, procedures, contributions)
    if whole is not None:
        return whole
    cuts = _top_level_minus(text)
    found = []
    for i in cuts:
        left = _term(text[:i], procedures, contributions)
        right = _term(text[i + 1:], procedures, contributions)
        if left is not None and right is not None:
            found.append((i, left, right))
    if len(found) > 1:
        splits = [f"{text[:i].strip()!r} − {text[i + 1:].strip()!r}" for i, _, _ in found]
        raise ConfigurationError(
            f"comparison {text!r} is ambiguous: it splits as {' or '.join(splits)}; rename "
            "the procedures so that labels do not end or start with another label and '-'")
    if not found:
        ends = [-1] + cuts + [len(text)]
        pieces = [text[a + 1:b] for a, b in zip(ends[:-1], ends[1:], strict=True)]
        unknown = [p.strip() for p in pieces if _term(p, procedures, contributions) is None]
        raise ConfigurationError(
            f"comparison {text!r} names unknown procedure label(s) {unknown or [text]}; "
            f"procedures are {procedures}{_c_hint(contributions)}; write 'A-B' for r_A − r_B")
    _, left, right = found[0]
    weights = dict(left)
    for label, c in right.items():
        weights[label] = weights.get(label, 0.0) - c
    weights = {k: v for k, v in weights.items() if v != 0.0}
    if not weights:
        raise ConfigurationError(f"comparison {text!r} cancels to zero; compare different terms")
    return weights


def _distinct(weights: Mapping[str, Mapping[str, float]]) -> None:
    """Refuse comparisons that are one comparison typed two ways ('A-B' and 'A - B', 'C_q' and
    its procedures): the tables showed the same row twice under two labels."""
    seen: dict[tuple, str] = {}
    for comp, w in weights.items():
        key = tuple(sorted(w.items()))
        if key in seen:
            raise ConfigurationError(
                f"comparisons {seen[key]!r} and {comp!r} are the same comparison "
                f"{dict(w)}; give each comparison once")
        seen[key] = comp


# ---------------------------------------------------------------------------- formatting


def _fmt(x: float) -> str:
    """Three decimals as in the paper; one significant digit when that would print 0.000."""
    if not np.isfinite(x):
        return str(x)
    if x != 0 and abs(x) < 0.0005:
        return np.format_float_positional(x, precision=1, unique=False, fractional=False,
                                          trim="-")
    return f"{x:.3f}"


def _interval(lo: float, hi: float) -> str:
    return f"[{_fmt(lo)}, {_fmt(hi)}]"


# ---------------------------------------------------------------------------- mixin


class SensitivityMixin:
    """Density-ratio bounds and critical Γ* for :class:`~restrictiveness.engine.results.Results`.

    Every method takes a comparison (see :func:`parse_comparison`) and works on the
    per-replication losses of one discrepancy, averaged over training draws with ``nanmean``
    (procedures may have run fewer draws than the baseline; their missing draws are NaN).
    """

    dataset: xr.Dataset

    if TYPE_CHECKING:  # provided by the host class (Results); declared for the type checker
        def __init__(self, dataset: xr.Dataset) -> None: ...
        @property
        def ns(self) -> list[int]: ...
        @property
        def draws_per_truth(self) -> int: ...
        def _discrepancy(self, discrepancy: str | None) -> str: ...
        def losses(self) -> tuple[xr.DataArray, xr.DataArray]: ...
        def combination(self, weights: Mapping[str, float], discrepancy: str | None = None,
                        level: float = 0.95) -> pd.DataFrame: ...
        def degenerate_baseline(self) -> xr.DataArray: ...
        def _warn_degenerate(self, what: str, discrepancy: str, ns: Sequence[int]) -> None: ...

    @property
    def contribution_spec(self) -> Contributions | None:
        """The parameter contributions these results define (None: no ``C_q`` terms)."""
        text = self.dataset.attrs.get("contributions")
        return Contributions.from_json(text) if text else None

    def with_contributions(self, spec: Contributions):
        """The same results with a contribution specification (for files saved without one,
        e.g. ``rx.load(path).with_contributions(rx.lottery.CPT_CONTRIBUTIONS)``).

        Parameters
        ----------
        spec : Contributions
            The full model and its submodels, which must be procedures of these results.

        Returns
        -------
        Results
            A copy whose ``C_q`` terms (:meth:`contributions`, comparisons such as
            ``"C_a-C_b"``) use ``spec``; a saved copy keeps it.

        Examples
        --------
        Here ``quadratic`` nests ``linear``; the contribution of its square term is their
        difference in r̂:

        >>> import restrictiveness as rx
        >>> spec = rx.Contributions("quadratic", {"sq": "linear"})
        >>> with_c = res.with_contributions(spec)
        >>> res.contribution_spec is None, with_c.contribution_spec == spec
        (True, True)
        """
        if not isinstance(spec, Contributions):
            raise ConfigurationError(f"with_contributions takes an rx.Contributions(full, "
                                     f"submodels), got {spec!r}")
        missing = [p for p in (spec.full, *spec.submodels.values())
                   if p not in self.dataset["procedure"].values]
        if missing:
            raise ConfigurationError(f"contributions name procedure(s) {missing} that the "
                                     f"results do not have")
        ds = self.dataset.copy()
        ds.attrs["contributions"] = spec.to_json()
        return type(self)(ds)

    # -- inputs ---------------------------------------------------------------------------
    def _weights(self, a: str | Mapping[str, float], b: str | Mapping[str, float] | None = None
                 ) -> dict[str, float]:
        procs = [str(p) for p in self.dataset["procedure"].values]

        def one(x, name):
            if isinstance(x, Mapping):
                unknown = [k for k in x if k not in procs]
                if unknown:
                    raise ConfigurationError(f"{name} names unknown procedure label(s) "
                                             f"{unknown}; procedures are {procs}")
                bad = {k: v for k, v in x.items() if isinstance(v, bool)
                       or not isinstance(v, int | float | np.integer | np.floating)
                       or not np.isfinite(v)}
                if bad:  # "a" was a bare ValueError, NaN blamed on the losses
                    raise ConfigurationError(f"{name} has coefficients that are not finite "
                                             f"numbers: {bad}")
                return {str(k): float(v) for k, v in x.items() if v != 0}
            return parse_comparison(x, procs, self.contribution_spec)

        w = one(a, "a")
        if b is not None:
            w = dict(w)
            for k, v in one(b, "b").items():
                w[k] = w.get(k, 0.0) - v
            w = {k: v for k, v in w.items() if v != 0.0}
            if not w:
                raise ConfigurationError("a − b cancels to zero; compare different procedures")
        if not w:  # {} or all-zero coefficients bounded 0 by [-0, 0]
            raise ConfigurationError(f"the comparison {a!r} has no nonzero coefficient; give "
                                     "at least one procedure a nonzero weight")
        return w

    def _sens_losses(self, weights: Mapping[str, float], discrepancy: str | None
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Numerator Σ c_j D̃_j and denominator B̃, each (n, replication), from the
        draw-averaged losses of :meth:`Results.losses` (finite: the results refuse others)."""
        disc = self._discrepancy(discrepancy)
        labels = list(weights)
        D_all, B_all = self.losses()
        D = D_all.sel(discrepancy=disc, procedure=labels).transpose(
            "procedure", "n", "replication").values.astype(float)
        B = B_all.sel(discrepancy=disc).transpose("n", "replication").values.astype(float)
        coefs = np.array([weights[p] for p in labels], dtype=float)
        return np.tensordot(coefs, D, axes=(0, 0)), B

    def _degenerate_ns(self, what: str, discrepancy: str | None) -> np.ndarray:
        """Boolean by n: the baseline's loss is zero to rounding there (warned, as in r̂)."""
        disc = self._discrepancy(discrepancy)
        bad = self.degenerate_baseline().sel(discrepancy=disc).values
        if bad.any():
            self._warn_degenerate(what, disc, np.asarray(self.ns)[bad].tolist())
        return bad

    # -- bounds ---------------------------------------------------------------------------
    def sensitivity(self, a: str | Mapping[str, float], b: str | Mapping[str, float] | None = None,
                    gamma: ArrayLike = 2.0, discrepancy: str | None = None) -> pd.DataFrame:
        """Uniform-weight estimate and its lower and upper bounds over W_{Γ,M}, by n.

        Parameters
        ----------
        a : str or mapping
            A procedure label or comparison string (see :func:`parse_comparison`), or
            weights ``{label: coefficient}``.
        b : str or mapping, optional
            Subtracted from ``a``; omitted, ``a`` alone is bounded (a single label gives that
            procedure's own restrictiveness bounds).
        gamma : float or array_like, default 2.0
            Γ ≥ 1, or a 1-D grid of them.
        discrepancy : str, optional
            Default: the first discrepancy of the study.

        Returns
        -------
        DataFrame
            Columns ``estimate`` (uniform weights, Γ = 1), ``lower``, ``upper``; index ``n``,
            or ``(n, gamma)`` for a grid.

        Examples
        --------
        >>> from restrictiveness.analysis.quick import demo_study
        >>> res = demo_study(n=[25], replications=10).run(progress=False)
        >>> tab = res.sensitivity("linear", "GP regression", gamma=2.0)
        >>> bool(((tab["lower"] <= tab["estimate"]) & (tab["estimate"] <= tab["upper"])).all())
        True
        """
        weights = self._weights(a, b)
        num, den = self._sens_losses(weights, discrepancy)
        g, scalar = _sens._gammas(gamma)
        values, counts = np.unique(g, return_counts=True)
        repeated = values[counts > 1]
        if repeated.size:  # the (n, gamma) index held the same rows twice
            raise ConfigurationError(f"gamma repeats {repeated.tolist()} in {g.tolist()}; each "
                                     "Γ of the grid is one row, give it once")
        ns = self.ns
        bad = self._degenerate_ns(f"the sensitivity bounds of {weights}", discrepancy)
        with np.errstate(divide="ignore", invalid="ignore"):  # B̄ = 0: NaN and warned above
            est = num.mean(axis=1) / den.mean(axis=1)
        est[bad] = np.nan
        lo, hi = np.full((len(ns), g.size), np.nan), np.full((len(ns), g.size), np.nan)
        for i in np.flatnonzero(~bad):
            lo[i], hi[i] = _sens.bounds(num[i], None, den[i], g)
        if scalar:
            index = pd.Index(ns, name="n")
            return pd.DataFrame({"estimate": est, "lower": lo[:, 0], "upper": hi[:, 0]},
                                index=index)
        index = pd.MultiIndex.from_product([ns, g], names=["n", "gamma"])
        return pd.DataFrame({"estimate": np.repeat(est, g.size), "lower": lo.ravel(),
                             "upper": hi.ravel()}, index=index)

    def critical_gamma(self, a: str | Mapping[str, float],
                       b: str | Mapping[str, float] | None = None,
                       discrepancy: str | None = None, gamma_max: float = 3.0) -> pd.Series:
        """Critical Γ*: smallest Γ at which the lower bound is ≤ 0, by n.

        Parameters
        ----------
        a, b, discrepancy
            As in :meth:`sensitivity`.
        gamma_max : float, default 3.0
            End of the search; ``inf`` means the lower bound stays positive through it.

        Returns
        -------
        Series
            Float Γ* by n (``1.0`` when the uniform-weight estimate is already ≤ 0); format
            with :func:`~restrictiveness.engine.sensitivity.format_critical`.

        Examples
        --------
        >>> from restrictiveness.analysis.quick import demo_study
        >>> res = demo_study(n=[25], replications=10).run(progress=False)
        >>> res.critical_gamma("linear").tolist()  # a positive ratio stays positive
        [inf]
        """
        weights = self._weights(a, b)
        num, den = self._sens_losses(weights, discrepancy)
        bad = self._degenerate_ns(f"the critical Γ* of {weights}", discrepancy)
        out = [np.nan if bad[i] else _sens.critical_gamma(num[i], None, den[i],
                                                          gamma_max=gamma_max)
               for i in range(num.shape[0])]
        return pd.Series(out, index=pd.Index(self.ns, name="n"), name="critical_gamma",
                         dtype=float)

    # -- parameter contributions ---------------------------------------------------------
    def contributions(self, discrepancy: str | None = None, level: float = 0.95) -> pd.DataFrame:
        """Parameter contributions C_q and their differences, with delta-method SEs.

        ``C_q = r_{−q} − r_full`` where ``r_{−q}`` is the restrictiveness of the submodel with q
        fixed and ``r_full`` that of the full model, as the results' :class:`Contributions`
        define them (the lottery study: CPT's C_α, C_γ, C_δ); the differences
        ``C_q − C_s = r_{−q} − r_{−s}`` (SPEC §4). Estimates and SEs come from
        :meth:`Results.combination` on common draws.

        Parameters
        ----------
        discrepancy : str, optional
            Default: the first discrepancy.
        level : float, default 0.95
            Level of the normal confidence interval.

        Returns
        -------
        DataFrame
            Index ``(contribution, n)`` with the rows of the specification's ``report``;
            columns ``estimate``, ``se``, ``lower``, ``upper``.

        Examples
        --------
        The quadratic's curvature: the linear model is the quadratic with it fixed at 0, so
        ``C_curv`` is the linear model's r̂ minus the quadratic's (the contrast of the two).

        >>> spec = Contributions("quadratic", {"curv": "linear"})
        >>> tab = res.with_contributions(spec).contributions()
        >>> tab.loc[("C_curv", 10)].round(3).to_dict()
        {'estimate': 0.203, 'se': 0.05, 'lower': 0.105, 'upper': 0.3}
        >>> bool(np.allclose(tab.loc["C_curv"], res.contrast("linear", "quadratic")))
        True
        """
        spec = self.contribution_spec
        if spec is None:
            raise ConfigurationError(
                "these results define no parameter contributions; add them with "
                "results.with_contributions(rx.Contributions(...)) (the lottery's: "
                "rx.lottery.CPT_CONTRIBUTIONS)")
        disc = self._discrepancy(discrepancy)
        weights = {c: self._weights(c) for c in spec.report}
        _distinct(weights)  # 'C_a' and 'C_{a}' were two rows of one contribution
        tables = {c: self.combination(w, disc, level) for c, w in weights.items()}
        return pd.concat(tables, names=["contribution", "n"])

    # -- reporting ------------------------------------------------------------------------
    def sensitivity_dataset(self, comparisons: Sequence[str], gamma: float = 2.0,
                            gamma_max: float = 3.0, discrepancy: str | None = None
                            ) -> xr.Dataset:
        """Estimate, bounds at Γ and critical Γ* of several comparisons, as a Dataset.

        Parameters
        ----------
        comparisons : sequence of str
            Comparison strings (see :func:`parse_comparison`); they label the ``comparison``
            coordinate as typed.
        gamma : float, default 2.0
            Γ of the bounds (a scalar).
        gamma_max : float, default 3.0
            Search limit of Γ*.
        discrepancy : str, optional
            Default: the first discrepancy.

        Returns
        -------
        xarray.Dataset
            Variables ``estimate``, ``lower``, ``upper``, ``critical_gamma`` over
            ``comparison × n``; attributes ``gamma``, ``gamma_max``, ``discrepancy`` and the
            weights of each comparison (JSON).

        Examples
        --------
        >>> from restrictiveness.analysis.quick import demo_study
        >>> res = demo_study(n=[25], replications=10).run(progress=False)
        >>> ds = res.sensitivity_dataset(["linear", "linear-GP regression"])
        >>> sorted(ds.data_vars)
        ['critical_gamma', 'estimate', 'lower', 'upper']
        """
        comparisons = self._comparison_list(comparisons)
        weights = {comp: self._weights(comp) for comp in comparisons}
        _distinct(weights)
        if np.ndim(gamma) != 0:
            raise ConfigurationError(f"gamma must be a scalar here; got shape "
                                     f"{np.shape(gamma)} (use sensitivity() for a grid)")
        (g,), _ = _sens._gammas(gamma)  # "2" was read as 2.0 here but refused by sensitivity()
        disc = self._discrepancy(discrepancy)
        ns = self.ns
        cols = {k: np.empty((len(comparisons), len(ns))) for k in
                ("estimate", "lower", "upper", "critical_gamma")}
        for i, comp in enumerate(comparisons):
            tab = self.sensitivity(weights[comp], gamma=float(g), discrepancy=disc)
            for k in ("estimate", "lower", "upper"):
                cols[k][i] = tab[k].to_numpy()
            cols["critical_gamma"][i] = self.critical_gamma(weights[comp], discrepancy=disc,
                                                            gamma_max=gamma_max).to_numpy()
        dims = ("comparison", "n")
        coords = {"comparison": np.array(comparisons, dtype=str),
                  "n": np.asarray(ns, dtype=np.int64)}
        ds = xr.Dataset({k: (dims, v) for k, v in cols.items()}, coords=coords)
        ds["estimate"].attrs["description"] = "comparison under uniform weights (Γ = 1)"
        ds["lower"].attrs["description"] = f"lower bound over W_Γ,M at Γ = {float(g):g}"
        ds["upper"].attrs["description"] = f"upper bound over W_Γ,M at Γ = {float(g):g}"
        ds["critical_gamma"].attrs["description"] = (
            f"smallest Γ with lower bound ≤ 0; inf: positive through Γ = {gamma_max:g}")
        for k, long_name in (("estimate", "comparison under uniform weights"),
                             ("lower", "lower sensitivity bound"),
                             ("upper", "upper sensitivity bound"),
                             ("critical_gamma", "critical density-ratio bound Γ*")):
            ds[k].attrs.update({"long_name": long_name, "units": "1"})
        ds.attrs.update({"Conventions": CONVENTIONS,
                         "title": "sensitivity to the evaluation distribution (SPEC §4)",
                         "gamma": float(g), "gamma_max": float(gamma_max),
                         "discrepancy": disc, "weights": json.dumps(weights)})
        return ds

    def _comparison_list(self, comparisons: Sequence[str] | str) -> list[str]:
        if isinstance(comparisons, str):
            comparisons = [comparisons]
        comparisons = list(comparisons)
        if not comparisons:
            raise ConfigurationError("comparisons is empty; give at least one comparison string")
        odd = [c for c in comparisons if not isinstance(c, str)]
        if odd:  # a mapping was "unhashable type: 'dict'"; the table labels rows as typed
            raise ConfigurationError(f"comparisons are strings such as 'A-B' (they label the "
                                     f"rows as typed), got {odd}; bound weights {{label: "
                                     f"coefficient}} with sensitivity() and critical_gamma()")
        if len(set(comparisons)) != len(comparisons):
            raise ConfigurationError(f"comparisons has duplicates: {comparisons}")
        return comparisons

    def sensitivity_summary(self, comparisons: Sequence[str], gamma: float = 2.0,
                            gamma_max: float = 3.0, discrepancy: str | None = None) -> Summary:
        """Panels A–C of the paper's sensitivity tables (A.8–A.10, A.15–A.17) for comparisons.

        Panel A: differences under uniform weights; Panel B: sensitivity intervals at ``gamma``
        as ``[lower, upper]``; Panel C: critical values Γ* (``"> 3"`` when the lower bound is
        positive through ``gamma_max``, ``"1"`` when the difference is ≤ 0 under uniform
        weights). Columns are the sample sizes n.

        Parameters
        ----------
        comparisons : sequence of str
            Comparison strings (see :func:`parse_comparison`), shown as typed.
        gamma, gamma_max, discrepancy
            As in :meth:`sensitivity_dataset`.

        Returns
        -------
        statsmodels.iolib.summary.Summary
            With ``as_text()``, ``as_html()``, ``as_latex()``.

        Examples
        --------
        >>> from restrictiveness.analysis.quick import demo_study
        >>> res = demo_study(n=[25], replications=10).run(progress=False)
        >>> "Panel C" in res.sensitivity_summary(["linear-GP regression"]).as_text()
        True
        """
        from statsmodels.iolib.summary import Summary
        from statsmodels.iolib.table import SimpleTable

        ds = self.sensitivity_dataset(comparisons, gamma, gamma_max, discrepancy)
        comps = [str(c) for c in ds["comparison"].values]
        ns = [int(n) for n in ds["n"].values]
        headers = [f"n={n}" for n in ns]
        attrs = self.dataset.attrs
        smry = Summary()
        top = {"Discrepancy:": ds.attrs["discrepancy"],
               "Baseline:": str(attrs.get("baseline", "")),
               "Replications M:": str(self.dataset.sizes["replication"]),
               # fitted on the evaluation set, each truth's fit is one whatever the draws
               "Draws per truth K:": str(self.draws_per_truth),
               "Γ (Panel B):": f"{gamma:g}", "Γ max (Panel C):": f"{gamma_max:g}"}
        smry.tables.append(SimpleTable([[v] for v in top.values()], stubs=list(top),
                                       title="Sensitivity to the evaluation distribution",
                                       txt_fmt=_LEFT))

        def panel(title, cell):
            rows = [[cell(c, n) for n in ns] for c in comps]
            smry.tables.append(SimpleTable(rows, headers=headers, stubs=comps, title=title,
                                           txt_fmt=_RIGHT))

        def at(var, c, n):
            return float(ds[var].sel(comparison=c, n=n))

        panel("Panel A: Differences under uniform weights",
              lambda c, n: _fmt(at("estimate", c, n)))
        panel(f"Panel B: Sensitivity intervals at Γ = {gamma:g}",
              lambda c, n: _interval(at("lower", c, n), at("upper", c, n)))
        def critical(c, n):
            value = at("critical_gamma", c, n)  # NaN where the baseline is degenerate (warned)
            return _fmt(value) if np.isnan(value) else _sens.format_critical(value, gamma_max)

        panel("Panel C: Critical values Γ*", critical)
        notes = [
            "Bounds are the min and max of Σ w_m Σ_j c_j D_jm / Σ w_m B_m over density-ratio "
            "weights with mean one in [1/Γ, Γ] (SPEC §4); losses averaged over draws.",
            f"Γ* is the smallest Γ at which the lower bound is ≤ 0; '> {gamma_max:g}': "
            f"positive through Γ = {gamma_max:g}; '1': ≤ 0 under uniform weights.",
            "A single label is that procedure's restrictiveness; 'A-B' is r_A − r_B; "
            "C_q = r[model without q] − r[full model].",
        ]
        smry.add_extra_txt([f"[{i + 1}] {t}" for i, t in enumerate(notes)])
        return smry

    def plot_sensitivity(self, comparison: str | Mapping[str, float], gamma_max: float = 3.0,
                         ax=None, discrepancy: str | None = None, points: int = 101):
        """Lower and upper bounds of a comparison against Γ, one colour per n (Figure A.1).

        Bounds are drawn as lines (two per n, in ``ax.lines``); the uniform-weight estimates
        (dotted) and zero (solid black) are horizontal reference segments (``ax.collections``).

        Parameters
        ----------
        comparison : str or mapping
            As ``a`` in :meth:`sensitivity`.
        gamma_max : float, default 3.0
            Right end of the Γ axis.
        ax : matplotlib Axes, optional
            Drawn into; a new figure's Axes otherwise.
        discrepancy : str, optional
            Default: the first discrepancy.
        points : int, default 101
            Γ grid size on ``[1, gamma_max]``.

        Returns
        -------
        matplotlib.axes.Axes

        Raises
        ------
        ImportError
            matplotlib is missing (install the ``plot`` extra).

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> spec = Contributions("quadratic", {"curv": "linear"})
        >>> ax = res.with_contributions(spec).plot_sensitivity("C_curv")
        >>> [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
        ['n=10', 'n=20']
        """
        gmax = _sens._gamma_max(gamma_max)
        if gmax == 1.0:  # an axis of one point (matplotlib's singular-limits warning)
            raise ConfigurationError("gamma_max must be above 1 to draw the bounds against Γ")
        if int(points) != points or points < 2:
            raise ConfigurationError(f"points must be an integer >= 2; got {points}")
        grid = np.linspace(1.0, gmax, int(points))
        tab = self.sensitivity(comparison, gamma=grid, discrepancy=discrepancy)
        ax = new_axes(ax)
        ns = self.ns
        estimates = []
        for i, n in enumerate(ns):
            part = tab.xs(n, level="n")
            color = f"C{i % 10}"
            ax.plot(grid, part["lower"].to_numpy(), color=color, label=f"n={n}")
            ax.plot(grid, part["upper"].to_numpy(), color=color)
            estimates.append((float(part["estimate"].iloc[0]), color))
        ax.hlines([e for e, _ in estimates], 1.0, gmax, colors=[c for _, c in estimates],
                  linestyles="dotted", linewidth=1.0)
        ax.hlines(0.0, 1.0, gmax, colors="black", linewidth=0.8)
        # Γ*: where the lower bound first reaches 0 (marked only inside the drawn range).
        crit = self.critical_gamma(comparison, discrepancy=discrepancy, gamma_max=gmax)
        for i, n in enumerate(ns):
            g = float(crit.loc[n])
            if np.isfinite(g) and 1.0 <= g <= gmax:
                ax.scatter([g], [0.0], marker="v", s=40, color=f"C{i % 10}", zorder=3,
                           label=f"Γ* = {g:.2f} (n={n})")
        ax.set_xlim(1.0, gmax)
        ax.set_xlabel("Γ, bound on the density ratio of the evaluation distribution")
        what = (greek(comparison) if isinstance(comparison, str) else
                " ".join(f"{c:+g}·{greek(k)}" for k, c in comparison.items()))
        ax.set_ylabel(f"{what}: lower and upper bounds")
        ax.set_title(f"Sensitivity of {what} to the evaluation distribution")
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
        return ax

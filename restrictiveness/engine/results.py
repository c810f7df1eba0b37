"""Results of a restrictiveness study: an :class:`xarray.Dataset` inside, estimates outside.

The Dataset has dimensions ``procedure``, ``discrepancy``, ``n``, ``replication`` (and ``draw``
when the study used K > 1 training samples per pseudo-truth) and variables

* ``loss`` (procedure, discrepancy, n, replication[, draw]) — d(Â, f_m), NaN for draws a
  procedure did not run;
* ``baseline_loss`` (discrepancy, n, replication[, draw]);
* ``truth_scale`` (discrepancy, n, replication) — the size of a loss for the truth
  (:meth:`Discrepancy.scale <restrictiveness.engine.discrepancies.Discrepancy.scale>`), NaN where
  unknown; files written before it existed lack it;
* ``failed`` (procedure, n, replication) — fits (over draws) that failed and used the baseline;
* ``invalid`` (procedure, n, replication) — prediction rows replaced by the baseline's, over
  the locations the discrepancies asked for, each set counted once however many discrepancies
  asked for it (the elasticities ask for each evaluation market and its 48 perturbed copies, so
  a bad market counts many times);
* ``seconds`` (procedure, n, replication) — mean wall time of one fit;
* ``error`` and ``fit_info`` (procedure, n, replication) — first failure message, JSON fit record;
* ``truth_<name>`` (n, replication) — the evaluation distribution's diagnostics;

and attributes holding the study's configuration, seed and package versions, so a saved file
says how it was made (``to_netcdf``) and reloads exactly (:func:`load`).
"""

from __future__ import annotations

import json
import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd
import xarray as xr
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

from ..shared._versions import package_versions
from ..shared.checks import repeated
from ..shared.exceptions import ConfigurationError, DataError, user_stacklevel
from ..shared.files import CONVENTIONS, atomic_output
from ..shared.plotting import greek, interval_label, new_axes
from .discrepancies import NEGATIVE_LOSS
from .inference import combination_estimate, normal_interval, ratio_estimate
from .sensitivity_results import SensitivityMixin
from .usage import USAGE_KEYS, price_per_token

__all__ = ["Results", "load"]

NETCDF_ENGINE: Final = "netcdf4"

#: A mean baseline loss at most this fraction of the truths' mean scale is zero to rounding
#: (r̂ = 0/0). Scale-free: legitimate studies measured 1e-2 to 1 (a Matern32 prior of variance
#: 1e-30 has losses of 1e-31 and a ratio of 1), an interpolating baseline 3e-31.
DEGENERATE_BASELINE: Final = 1e-12


class Results(SensitivityMixin):
    """Restrictiveness estimates, contrasts and summaries from a study's Dataset.

    Parameters
    ----------
    dataset : xarray.Dataset
        As built by :meth:`Study.run <restrictiveness.engine.study.Study.run>` (see module
        docstring).

    Examples
    --------
    A linear and a quadratic model of rules on [0, 1] that are increasing and in [0, 1]; the
    method examples of this class use this ``res``:

    >>> import restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> res = rx.Study(rx.MonotoneGP(F, n_eval=50),
    ...                {"linear": rx.OLS("y ~ x"), "quadratic": rx.OLS("y ~ x + I(x**2)")},
    ...                baseline=rx.Constant(), n=[10, 20], replications=4).run(progress=False)
    >>> res
    <Results: 2 procedures × n=[10, 20] × 4 replications; discrepancies ['mse']>
    >>> r = res.restrictiveness.sel(discrepancy="mse").round(3)
    >>> r.to_pandas()  # doctest: +NORMALIZE_WHITESPACE
    n             10     20
    procedure
    linear     0.266  0.231
    quadratic  0.064  0.058
    """

    def __init__(self, dataset: xr.Dataset) -> None:
        if not isinstance(dataset, xr.Dataset) or "loss" not in dataset.variables \
                or "baseline_loss" not in dataset.variables:
            raise DataError("Results wraps the xarray Dataset of a study (variables 'loss' and "
                            "'baseline_loss'); run a Study, or read a saved file with rx.load")
        _check_layout(dataset)
        unique_procedures(dataset)
        for name in ("loss", "baseline_loss"):
            negative = dataset[name].values < NEGATIVE_LOSS  # d(f, g) >= 0 (SPEC §1)
            if negative.any():
                raise DataError(f"{name} has {int(negative.sum())} negative values (smallest "
                                f"{float(dataset[name].min()):.3g}); a discrepancy is >= 0, "
                                "and r̂ of negative losses means nothing")
        self.dataset = dataset
        for name, values in zip(("loss", "baseline_loss"), self.losses(), strict=True):
            # NaN or inf would pass into r̂ and its se with nothing said; a study's draws
            # beyond a procedure's own are NaN and averaged away, so what is left is missing
            missing = ~np.isfinite(values.to_numpy())
            if missing.any():
                first = {d: values[d].values[i].item() for d, i in
                         zip(values.dims, np.argwhere(missing)[0], strict=True)}
                raise DataError(f"{name} is NaN or infinite in {int(missing.sum())} cells "
                                f"(averaged over draws), first at {first}; r̂ needs a finite "
                                "loss for every procedure, n and replication (select the "
                                "others first, e.g. ds.drop_sel(procedure=[...]))")

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_records(cls, study, records: Sequence) -> Results:
        """Assemble the Dataset from replication records.

        Parameters
        ----------
        study : Study
            The study that made the records (its labels, sizes, configuration and seed).
        records : sequence of ReplicationRecord
            One per replication, in replication order, e.g. from :meth:`Study.run_units
            <restrictiveness.engine.study.Study.run_units>` or a checkpoint.

        Returns
        -------
        Results
            As :meth:`Study.run <restrictiveness.engine.study.Study.run>` returns for those
            replications.

        Examples
        --------
        Records of two replications run one by one (``study`` from the :class:`Study
        <restrictiveness.engine.study.Study>` example) give the results of those two:

        >>> records = study.run_units([0, 1])
        >>> part = Results.from_records(study, records)
        >>> part.replications, part.dataset["replication"].values.tolist()
        (2, [0, 1])
        """
        reps = [r.replication for r in records]
        coords = {"procedure": study.labels, "discrepancy": [d.name for d in study.discrepancies],
                  "n": np.asarray(study.n, dtype=np.int64), "replication": np.asarray(reps)}
        K = study.draws
        loss = np.stack([r.loss for r in records], axis=3)  # (P, D, N, M, K)
        base = np.stack([r.baseline_loss for r in records], axis=2)  # (D, N, M, K)
        ldims: tuple[str, ...]
        bdims: tuple[str, ...]
        if K > 1:
            coords["draw"] = np.arange(K)
            ldims = ("procedure", "discrepancy", "n", "replication", "draw")
            bdims = ("discrepancy", "n", "replication", "draw")
        else:
            loss, base = loss[..., 0], base[..., 0]
            ldims = ("procedure", "discrepancy", "n", "replication")
            bdims = ("discrepancy", "n", "replication")
        pnm = ("procedure", "n", "replication")

        def stack(name, dtype=None):
            arr = np.stack([getattr(r, name) for r in records], axis=-1)
            return arr.astype(dtype) if dtype is not None else arr

        data = {
            "loss": (ldims, loss),
            "baseline_loss": (bdims, base),
            "truth_scale": (("discrepancy", "n", "replication"), np.stack(
                [np.full(r.baseline_loss.shape[:2], np.nan) if r.truth_scale is None
                 else r.truth_scale for r in records], axis=-1)),
            "failed": (pnm, stack("failed")),
            "invalid": (pnm, stack("invalid")),
            "seconds": (pnm, stack("seconds")),
            "baseline_seconds": (("n", "replication"), stack("baseline_seconds")),
            "error": (pnm, stack("error", str)),
            "fit_info": (pnm, stack("info", str)),
        }
        for name in study.evaluation.diagnostic_names:
            data[f"truth_{name}"] = (("n", "replication"),
                                     np.stack([r.diagnostics[name] for r in records], axis=-1))
        ds = xr.Dataset(data, coords=coords)
        params = fitted_params(ds["fit_info"])
        if params is not None:
            ds["params"] = params
        describe(ds, VARIABLE_ATTRS)
        for name in study.evaluation.diagnostic_names:
            ds[f"truth_{name}"].attrs["long_name"] = (f"pseudo-truth diagnostic {name!r} of the "
                                                      "evaluation distribution")
        ds["loss"].attrs["description"] = "discrepancy between the fitted rule and the truth"
        ds["failed"].attrs["description"] = "fits that failed (baseline used everywhere)"
        ds["invalid"].attrs["description"] = ("prediction rows replaced by the baseline's, over "
                                              "the locations the discrepancies requested, each "
                                              "set counted once")
        ds.attrs.update({
            "Conventions": CONVENTIONS,
            "title": "restrictiveness study",
            "configuration": json.dumps(study.configuration()),
            "seed": study.seed,
            "baseline": study.baseline_label,
            "fit_on": study.fit_on,
            "versions": json.dumps(package_versions()),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        })
        if getattr(study, "contributions", None) is not None:
            ds.attrs["contributions"] = study.contributions.to_json()
        return cls(ds)

    # -- storage --------------------------------------------------------------------------
    def to_netcdf(self, path) -> None:
        """Write the Dataset to NetCDF-4 atomically (reload with :func:`restrictiveness.load`).

        A reader never sees a half-written file, and a failed write keeps the old one.

        Parameters
        ----------
        path : str or path-like
            The file to write (replaced if it exists).

        Examples
        --------
        >>> import tempfile, pathlib, restrictiveness as rx
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     res.to_netcdf(pathlib.Path(tmp) / "study.nc")
        ...     back = rx.load(pathlib.Path(tmp) / "study.nc")
        >>> back.restrictiveness.equals(res.restrictiveness), back.configuration["n"]
        (True, [10, 20])
        """
        with atomic_output(path) as tmp:
            self.dataset.to_netcdf(tmp, engine=NETCDF_ENGINE)

    # -- accessors ------------------------------------------------------------------------
    @property
    def procedures(self) -> list[str]:
        """Procedure labels, in the study's order (e.g. ``['linear', 'quadratic']``)."""
        return [str(p) for p in self.dataset["procedure"].values]

    @property
    def discrepancies(self) -> list[str]:
        """Discrepancy names, in the study's order (e.g. ``['mse']``)."""
        return [str(d) for d in self.dataset["discrepancy"].values]

    @property
    def ns(self) -> list[int]:
        """Training sample sizes of the profile, ascending (e.g. ``[10, 20]``)."""
        return [int(n) for n in self.dataset["n"].values]

    @property
    def replications(self) -> int:
        """Number of pseudo-truths M."""
        return int(self.dataset.sizes["replication"])

    @property
    def draws_per_truth(self) -> int:
        """Training samples K per pseudo-truth that the losses average (S.1.6): the ``draw``
        dimension's size, and 1 for model restrictiveness (fitted once, on the evaluation set,
        whatever the draws)."""
        if self.dataset.attrs.get("fit_on") == "evaluation":
            return 1
        return int(self.dataset.sizes.get("draw", 1))

    @property
    def configuration(self) -> dict:
        """The study's configuration (:meth:`Study.configuration
        <restrictiveness.engine.study.Study.configuration>`), as stored in the file."""
        if "configuration" not in self.dataset.attrs:  # was a bare KeyError, from summary()
            raise DataError("the Dataset has no 'configuration' attribute (what the study was), "
                            "so it cannot be summarised; results of Study.run or rx.load "
                            "have it")
        return json.loads(self.dataset.attrs["configuration"])

    def losses(self) -> tuple[xr.DataArray, xr.DataArray]:
        """Per-replication losses of the procedures and of the baseline (SPEC §3).

        Returns
        -------
        D : xarray.DataArray
            Procedure losses (procedure, discrepancy, n, replication), averaged over training
            draws when the study used several.
        B : xarray.DataArray
            Baseline losses (discrepancy, n, replication), averaged likewise.

        Notes
        -----
        A loss a little below zero (rounding, down to ``-1e-10``; anything lower is refused
        when the results are built) is read as 0.

        Examples
        --------
        r̂ is the ratio of the mean losses over replications:

        >>> D, B = res.losses()
        >>> D.dims
        ('procedure', 'discrepancy', 'n', 'replication')
        >>> r = D.mean("replication") / B.mean("replication")
        >>> bool(abs(r - res.restrictiveness).max() < 1e-12)
        True
        """
        # rounding below zero (above NEGATIVE_LOSS, the construction's tolerance) is zero, so
        # that the sensitivity bounds, which need B >= 0, take what r̂ takes
        D, B = self.dataset["loss"].clip(min=0), self.dataset["baseline_loss"].clip(min=0)
        if "draw" in D.dims:
            with warnings.catch_warnings():  # an all-NaN cell stays NaN; callers check
                warnings.simplefilter("ignore", RuntimeWarning)
                D, B = D.mean("draw", skipna=True), B.mean("draw", skipna=True)
        return D, B

    def _discrepancy(self, discrepancy: str | None) -> str:
        if discrepancy is None:
            return self.discrepancies[0]
        if discrepancy not in self.discrepancies:
            raise ConfigurationError(f"discrepancy {discrepancy!r} not in {self.discrepancies}")
        return discrepancy

    def _procedure(self, label: str) -> str:
        if label not in self.procedures:
            baseline = (f"; {label!r} is the baseline: its r̂ is 1 by definition and its losses "
                        "are baseline_loss" if label == self.dataset.attrs.get("baseline") else "")
            raise ConfigurationError(f"procedure {label!r} not in {self.procedures}{baseline}")
        return label

    def degenerate_baseline(self) -> xr.DataArray:
        """Where the baseline's mean loss is zero to rounding relative to the truths' scale.

        r̂ = D̄ / B̄ is then 0/0 (e.g. a baseline that interpolates every pseudo-truth), and
        :attr:`restrictiveness`, :meth:`combination` and the sensitivity bounds report NaN
        there with a RuntimeWarning. The test is scale-free: B̄ ≤ 1e-12 × the mean
        ``truth_scale``, by discrepancy and n. Where the scale is unknown (a discrepancy
        without ``scale``, or a file written before ``truth_scale`` existed) only a B̄ of
        exactly zero counts: D̄ / 0 is undefined at any scale.

        Returns
        -------
        xarray.DataArray
            Boolean, (discrepancy, n).

        Examples
        --------
        >>> res.degenerate_baseline().values.tolist()
        [[False, False]]
        """
        return self._degenerate

    @cached_property
    def _degenerate(self) -> xr.DataArray:
        _, B = self.losses()
        Bbar = B.mean("replication").transpose("discrepancy", "n")
        # B̄ = 0 exactly (losses are clipped at 0) is 0/0 whatever the scale: without a scale
        # r̂ was inf or NaN with numpy's bare divide warnings, and the bounds a DataError
        degenerate = Bbar <= 0
        if "truth_scale" in self.dataset:
            scale = self.dataset["truth_scale"].mean("replication")
            degenerate = degenerate | (Bbar <= DEGENERATE_BASELINE * scale)
        # Named, so ``to_dataframe()`` works as on every other DataArray the results return.
        return degenerate.rename("degenerate_baseline").assign_attrs(
            long_name="baseline loss zero to rounding (r̂ is 0/0)")

    def _warn_degenerate(self, what: str, discrepancy: str, ns: Sequence[int]) -> None:
        _, B = self.losses()
        Bbar = float(B.sel(discrepancy=discrepancy, n=list(ns)).mean("replication").max())
        scale = (float(self.dataset["truth_scale"].sel(discrepancy=discrepancy, n=list(ns))
                       .mean("replication").min()) if "truth_scale" in self.dataset else np.nan)
        # a Dataset built by hand has no configuration: its baseline is the label, if any
        config = json.loads(self.dataset.attrs.get("configuration", "{}")).get("baseline")
        baseline = (", ".join(config.values()) if isinstance(config, dict)
                    else str(self.dataset.attrs.get("baseline", "")))
        size = (f"zero to rounding relative to the truths' scale (mean baseline loss "
                f"{Bbar:.3g}, truths' scale {scale:.3g})" if Bbar > 0 or np.isfinite(scale)
                else "zero in every replication")
        warnings.warn(f"{what} is NaN for discrepancy {discrepancy!r} at n={list(ns)}: the "
                      f"baseline {baseline}'s loss is {size}, so D̄ / B̄ is 0/0; use a "
                      "baseline that does not reproduce the pseudo-truths (e.g. rx.Constant())",
                      RuntimeWarning, stacklevel=user_stacklevel())

    # -- estimates ------------------------------------------------------------------------
    @cached_property
    def _estimates(self) -> tuple[xr.DataArray, xr.DataArray]:
        D, B = self.losses()
        D = D.transpose("procedure", "discrepancy", "n", "replication")
        B = B.transpose("discrepancy", "n", "replication")
        with np.errstate(divide="ignore", invalid="ignore"):  # B̄ = 0: NaN and warned below
            r, se = ratio_estimate(D.values, B.values[None])
        bad = self.degenerate_baseline().values
        r[:, bad], se[:, bad] = np.nan, np.nan
        for d, disc in enumerate(self.discrepancies):
            if bad[d].any():
                self._warn_degenerate(f"restrictiveness r̂ (and se) of {self.procedures}", disc,
                                      np.asarray(self.ns)[bad[d]].tolist())
        dims = ("procedure", "discrepancy", "n")
        coords = {d: D[d] for d in dims}
        # Named, with attributes, so ``to_dataframe()`` and ``xr.merge`` work as in xarray.
        return (xr.DataArray(r, coords, dims, name="restrictiveness",
                             attrs={"long_name": "restrictiveness r̂ = D̄ / B̄", "units": "1"}),
                xr.DataArray(se, coords, dims, name="se",
                             attrs={"long_name": "delta-method standard error of r̂",
                                    "units": "1"}))

    @property
    def restrictiveness(self) -> xr.DataArray:
        """Restrictiveness r̂ = D̄ / B̄ by procedure, discrepancy and n (a DataArray named
        ``restrictiveness``)."""
        return self._estimates[0]

    @property
    def se(self) -> xr.DataArray:
        """Delta-method standard errors of :attr:`restrictiveness` (a DataArray named ``se``)."""
        return self._estimates[1]

    @property
    def params(self) -> xr.DataArray | None:
        """Fitted parameters of the first training draw, by procedure, parameter, n and
        replication (NaN where a procedure lacks the parameter), or None when no procedure
        reports named parameters. Files written before this variable existed derive it from
        ``fit_info``."""
        if "params" in self.dataset:
            return self.dataset["params"]
        return fitted_params(self.dataset["fit_info"])

    def estimates(self, level: float = 0.95) -> pd.DataFrame:
        """Tidy table of r̂, se and the normal confidence interval: one row per
        (discrepancy, procedure, n), one column per statistic.

        Parameters
        ----------
        level : float
            Coverage of the normal interval (columns ``lower``, ``upper``).

        Returns
        -------
        pandas.DataFrame
            Index (discrepancy, procedure, n), in the study's order of each; columns
            ``estimate``, ``se``, ``lower``, ``upper`` (``reset_index()`` gives a flat long
            table).

        Examples
        --------
        >>> est = res.estimates()
        >>> est.reset_index().columns.tolist()
        ['discrepancy', 'procedure', 'n', 'estimate', 'se', 'lower', 'upper']
        >>> est.loc[("mse", "linear", 10)].round(3).tolist()
        [0.266, 0.063, 0.142, 0.39]
        """
        r = self.restrictiveness.to_series().rename("estimate")
        se = self.se.to_series().rename("se")
        df = pd.concat([r, se], axis=1).reorder_levels(["discrepancy", "procedure", "n"])
        df["lower"], df["upper"] = normal_interval(df["estimate"], df["se"], level)
        # grouped by discrepancy in the study's order, as the summary's tables (sorting the
        # level put the demand's ['shares', 'own', 'cross'] in alphabetical order in the csv)
        return df.reindex(self.discrepancies, level="discrepancy")

    def combination(self, weights: Mapping[str, float], discrepancy: str | None = None,
                    level: float = 0.95) -> pd.DataFrame:
        """Estimate and SE of a linear combination ``Σ c_j r̂_j`` on common draws, by n.

        The SE is the delta method's on the paired losses, so it accounts for the covariance of
        the procedures' estimates over common pseudo-truths and samples.

        Parameters
        ----------
        weights : mapping of procedure label to coefficient
            E.g. ``{"CPT(delta)": 1, "CPT(gamma)": -1}``.
        discrepancy : str, optional
            Default: the first.
        level : float
            Coverage of the normal interval (columns ``lower``, ``upper``).

        Returns
        -------
        pandas.DataFrame
            Index ``n``; columns ``estimate``, ``se``, ``lower``, ``upper``.

        Examples
        --------
        The average of the two procedures' r̂:

        >>> mean = res.combination({"linear": 0.5, "quadratic": 0.5})
        >>> mean.round(3)  # doctest: +NORMALIZE_WHITESPACE
            estimate     se  lower  upper
        n
        10     0.165  0.039  0.089  0.241
        20     0.145  0.024  0.098  0.192
        """
        disc = self._discrepancy(discrepancy)
        if not isinstance(weights, Mapping) or not weights:
            raise ConfigurationError(f"weights must be a non-empty mapping {{procedure label: "
                                     f"coefficient}}, got {weights!r}")
        labels = [self._procedure(p) for p in weights]
        bad = {p: c for p, c in weights.items() if isinstance(c, bool)
               or not isinstance(c, numbers.Real) or not math.isfinite(c)}
        if bad:
            raise ConfigurationError(f"weights must be finite numbers, got {bad}")
        D, B = self.losses()
        D = D.sel(discrepancy=disc, procedure=labels).transpose("procedure", "n", "replication")
        B = B.sel(discrepancy=disc).transpose("n", "replication")
        with np.errstate(divide="ignore", invalid="ignore"):  # B̄ = 0: NaN and warned below
            est, se = combination_estimate(np.array([weights[p] for p in labels]), D.values,
                                           B.values)
        zero = self._degenerate_ns(f"the combination {dict(weights)} of r̂", disc)
        est[zero], se[zero] = np.nan, np.nan
        lo, hi = normal_interval(est, se, level)
        return pd.DataFrame({"estimate": est, "se": se, "lower": lo, "upper": hi},
                            index=pd.Index(self.ns, name="n"))

    def contrast(self, a: str, b: str, discrepancy: str | None = None,
                 level: float = 0.95) -> pd.DataFrame:
        """Paired contrast ``r̂_a − r̂_b`` by n, with SE from the covariance on common draws.

        Parameters
        ----------
        a, b : str
            Procedure labels (different).
        discrepancy : str, optional
            Default: the first.
        level : float
            Coverage of the normal interval (columns ``lower``, ``upper``).

        Returns
        -------
        pandas.DataFrame
            Index ``n``; columns ``estimate``, ``se``, ``lower``, ``upper``: the
            :meth:`combination` with weights ``{a: 1, b: -1}``.

        Examples
        --------
        The linear model is more restrictive than the quadratic one, clearly so at both n:

        >>> res.contrast("linear", "quadratic").round(3)  # doctest: +NORMALIZE_WHITESPACE
            estimate     se  lower  upper
        n
        10     0.203  0.050  0.105   0.30
        20     0.174  0.024  0.127   0.22
        """
        if a == b:
            raise ConfigurationError("contrast needs two different procedures")
        return self.combination({a: 1.0, b: -1.0}, discrepancy, level)

    def failures(self) -> pd.DataFrame:
        """Failed fits, fits run, replaced prediction rows and the first error, by procedure and n.

        Returns
        -------
        pandas.DataFrame
            Index (procedure, n); columns ``failed`` (fits that failed: the baseline's
            predictions took their place), ``fits`` (fits run: replications × the procedure's
            draws), ``invalid_rows`` (prediction rows replaced by the baseline's) and
            ``first_error`` ('' when none).

        Examples
        --------
        >>> res.failures()[["failed", "fits", "invalid_rows"]]  # doctest: +NORMALIZE_WHITESPACE
                     failed  fits  invalid_rows
        procedure n
        linear    10       0     4             0
                  20       0     4             0
        quadratic 10       0     4             0
                  20       0     4             0
        """
        ds = self.dataset
        missing = [v for v in ("failed", "invalid", "error") if v not in ds.variables]
        if missing:  # was a bare KeyError, from summary() too
            raise DataError(f"the Dataset lacks the study's records of failed fits {missing}, "
                            "so failures (and the summary, which reports them) are unknown; "
                            "results of Study.run or rx.load have them")
        loss = ds["loss"].isel(discrepancy=0)
        fits = loss.notnull().sum([d for d in loss.dims if d in ("replication", "draw")])
        errors = ds["error"].transpose("procedure", "n", "replication").values
        messages = [[next((str(e) for e in errors[i, j] if str(e)), "")
                     for j in range(errors.shape[1])] for i in range(errors.shape[0])]
        first = xr.DataArray(np.array(messages, dtype=object), dims=("procedure", "n"),
                             coords={"procedure": ds["procedure"], "n": ds["n"]})
        return pd.DataFrame({
            "failed": ds["failed"].sum("replication").to_series(),
            "fits": fits.to_series(),
            "invalid_rows": ds["invalid"].sum("replication").to_series(),
            "first_error": first.to_series(),
        })

    def _failure_notes(self, procedures: Sequence[str]) -> list[tuple[str, str]]:
        """``(label, description)`` of each procedure with failed fits or replaced rows."""
        fail = self.failures()
        out = []
        for p in procedures:
            f = fail.xs(p, level="procedure")
            failed, fits, rows = int(f["failed"].sum()), int(f["fits"].sum()), \
                int(f["invalid_rows"].sum())
            if not failed and not rows:
                continue
            parts = []
            if failed:
                per_n = "; ".join(f"n={n}: {int(f.loc[n, 'failed'])} of {int(f.loc[n, 'fits'])}"
                                  for n in self.ns)
                parts.append(f"failed in {failed} of {fits} fits ({per_n})"
                             + (", every fit: its r̂ only repeats the baseline's"
                                if failed == fits else ""))
            if rows and failed < fits:
                parts.append(f"{rows} invalid prediction rows replaced")
            errors = [e for e in f["first_error"] if e]
            if errors:
                parts.append(f"first error: {_short(' '.join(errors[0].split()), 200)}")
            out.append((p, "; ".join(parts)))
        return out

    def failure_report(self) -> str | None:
        """One line naming the procedures with failures and each one's first error.

        A study warns with it (:class:`~restrictiveness.FailureWarning`) after running.

        Returns
        -------
        str or None
            The line, or None when no fit failed and no prediction was replaced.

        Examples
        --------
        >>> res.failure_report() is None
        True
        """
        notes = self._failure_notes(self.procedures)
        if not notes:
            return None
        return ("the baseline's predictions replaced failed fits or invalid predictions: "
                + " | ".join(f"{p} {text}" for p, text in notes)
                + " (see the summary notes and results.failures())")

    def timings(self) -> pd.DataFrame:
        """Wall time of the fits by procedure and n: of one fit, and of all of them.

        Returns
        -------
        pandas.DataFrame
            Index (procedure, n); columns ``median_seconds`` (of one fit, the median over
            replications) and ``total_seconds`` (of all fits: every replication's training
            draws), in seconds of wall time.

        Examples
        --------
        >>> t = res.timings()
        >>> t.index.tolist()
        [('linear', 10), ('linear', 20), ('quadratic', 10), ('quadratic', 20)]
        >>> bool((t["total_seconds"] >= t["median_seconds"]).all())
        True
        """
        s = self.dataset["seconds"]  # the mean over a replication's draws
        # with K training draws a replication ran K fits: the sum of the means was a K-th
        # of the time ("fit time 355.8 s" for a K = 20 demand run whose fits took ~2 h)
        total = (s * self._fits_per_record()).sum("replication")
        return pd.DataFrame({"median_seconds": s.median("replication").to_series(),
                             "total_seconds": total.to_series()})

    def _fits_per_record(self) -> xr.DataArray:
        """The fits behind each (procedure, n, replication) record: its training draws that
        were scored (a record holds their mean time and their summed usage)."""
        scored = self.dataset["loss"].isel(discrepancy=0).notnull()
        return scored.sum("draw") if "draw" in scored.dims else scored

    def usage(self, prices: Mapping[str, Sequence[float] | Mapping[str, float]] | None = None
              ) -> pd.DataFrame:
        """Model calls, tokens, retries and call seconds by procedure and n (language models).

        Totals of the ``"usage"`` record of each fit (summed over training draws by the study):
        ``fits`` (fits with a usage record, each training draw one), ``calls`` (requests
        actually made, including ``failed_calls``; cached replies are counted in
        ``cached_calls`` and cost nothing),
        ``unreported_calls`` (answered calls whose token counts the endpoint did not report),
        ``retries``,
        ``input_tokens``, ``output_tokens`` and ``seconds`` (wall time of the calls). Only
        procedures that record usage appear. Where any call did not report its tokens, the
        token totals and the cost of that row are NaN (unknown), never the smaller sum of
        the counts that were reported.

        Parameters
        ----------
        prices : mapping, optional
            US dollars per million tokens by model id, as ``(input, output)`` or
            ``{"input": ..., "output": ...}``; adds a ``cost`` column. Every model used must
            be priced.

        Returns
        -------
        pandas.DataFrame
            Index (procedure, n); columns ``fits``, the usage counts and ``cost`` (with
            ``prices``). Empty when no fit recorded usage.

        Examples
        --------
        The least-squares fits of ``res`` record no usage; fits of a language-model procedure
        record it in their ``fit_info``, here two calls of 1,000 input and 200 output tokens:

        >>> res.usage().empty
        True
        >>> import xarray as xr, restrictiveness as rx
        >>> info = ('{"model": "gpt-4o", "usage": {"calls": 2, "input_tokens": 1000, '
        ...         '"output_tokens": 200}}')
        >>> llm = rx.Results(res.dataset.assign(
        ...     fit_info=xr.full_like(res.dataset["fit_info"], info, dtype=object)))
        >>> use = llm.usage(prices={"gpt-4o": (2.5, 10.0)})
        >>> use.loc[("linear", 10), ["fits", "calls", "input_tokens", "cost"]].round(3).tolist()
        [4.0, 8.0, 4000.0, 0.018]
        """
        rows = []
        ds = self.dataset
        # a record holds the usage of its replication's draws (summed by the study): it counts
        # as that many fits, as in failures() (it counted as one, so K = 3 draws showed a third)
        drawn = self._fits_per_record()
        for label in self.procedures:
            cells = ds["fit_info"].sel(procedure=label).transpose("n", "replication").values
            counts = drawn.sel(procedure=label).transpose("n", "replication").values
            for n, row, fits in zip(self.ns, cells, counts, strict=True):
                for m, text, count in zip(ds["replication"].values, row, fits, strict=True):
                    info = json.loads(str(text) or "{}")
                    usage = info.get("usage") if isinstance(info, dict) else None
                    if not isinstance(usage, dict):
                        continue
                    totals = {k: _usage_count(usage.get(k, 0), k, label, n, m)
                              for k in USAGE_KEYS}
                    record = {"procedure": label, "n": n, "fits": int(count), **totals}
                    if prices is not None:
                        p_in, p_out = price_per_token(prices, info.get("model"))
                        record["cost"] = totals["input_tokens"] * p_in + \
                            totals["output_tokens"] * p_out
                    rows.append(record)
        columns = ["fits", *USAGE_KEYS] + (["cost"] if prices is not None else [])
        if not rows:
            index = pd.MultiIndex.from_arrays([[], []], names=["procedure", "n"])
            return pd.DataFrame(columns=columns, index=index)
        out = pd.DataFrame(rows).groupby(["procedure", "n"], sort=False)[columns].sum()
        # a total missing some calls' counts would understate tokens and cost (an endpoint
        # without usage fields read as $0.00): unknown instead
        unknown = (out["unreported_calls"] > 0).to_numpy()
        if unknown.any():
            for c in ("input_tokens", "output_tokens", "cost"):
                if c in out:
                    out[c] = out[c].astype(float).where(~unknown, np.nan)
        return out

    # -- reporting ------------------------------------------------------------------------
    def plot_profile(self, discrepancy: str | None = None,
                     procedures: Sequence[str] | None = None, ax=None, level: float = 0.95,
                     log_n: bool = False):
        """Learning-curve profiles: r̂ against n for each procedure, with confidence bands.

        Parameters
        ----------
        discrepancy : str, optional
            Default: the first.
        procedures : sequence of str, optional
            Default: all.
        ax : matplotlib Axes, optional
            Drawn into; a new figure's Axes otherwise.
        level : float
            Coverage of the normal bands (stated in the legend's title).
        log_n : bool
            Sample sizes on a logarithmic axis.

        Returns
        -------
        matplotlib Axes
            Lines: one per procedure (labelled with Greek letters), then the baseline's
            r = 1 reference line.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> ax = res.plot_profile(log_n=True)
        >>> ax.get_xscale(), list(ax.lines[-1].get_ydata())
        ('log', [1.0, 1.0])
        >>> [line.get_label() for line in ax.lines]
        ['linear', 'quadratic', 'baseline, r = 1 (baseline)']
        """
        if not 0 < level < 1:
            raise ConfigurationError(f"level must lie in (0, 1); got {level}")
        disc = self._discrepancy(discrepancy)
        labels = [self._procedure(p) for p in (procedures or self.procedures)]
        ax = new_axes(ax)
        est = self.estimates(level).xs(disc, level="discrepancy")
        for label in labels:
            e = est.xs(label, level="procedure")
            line, = ax.plot(e.index, e["estimate"], marker="o", label=greek(label))
            ax.fill_between(e.index, e["lower"], e["upper"], color=line.get_color(), alpha=0.15)
        ax.axhline(1.0, color="black", lw=0.8, ls="--",
                   label=f"baseline, r = 1 ({self.dataset.attrs.get('baseline', 'baseline')})")
        if log_n:
            ax.set_xscale("log")
            ax.minorticks_off()
        ax.set_xlabel("training sample size n" + (" (log scale)" if log_n else ""))
        ax.set_ylabel(f"restrictiveness r̂ ({disc})")
        ax.set_xticks(self.ns, [str(n) for n in self.ns])
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5),
                  title=f"bands: {interval_label(level)}", title_fontsize=8)
        return ax

    def summary(self, discrepancy: str | Sequence[str] | None = None,
                procedures: Sequence[str] | None = None) -> Summary:
        """Summary in the statsmodels style: r̂ (se) by procedure × n, one table per discrepancy.

        Parameters
        ----------
        discrepancy : str or sequence of str, optional
            Which discrepancies to show, each once (default: all).
        procedures : str or sequence of str, optional
            Rows, in order, each once (default: all).

        Returns
        -------
        statsmodels.iolib.summary.Summary
            A header table (evaluation, baseline, replications, draws, seed, what was fitted),
            one table per discrepancy and numbered notes; ``as_text()``, ``as_html()`` and
            ``as_latex()`` export it.

        Examples
        --------
        >>> smry = res.summary()
        >>> print(smry.tables[1])  # doctest: +NORMALIZE_WHITESPACE
        Restrictiveness r̂ (se), discrepancy: mse
        =====================================
        procedure      n=10          n=20
        -------------------------------------
           linear 0.266 (0.063) 0.231 (0.036)
        quadratic 0.064 (0.015) 0.058 (0.012)
        -------------------------------------
        """
        discs = (self.discrepancies if discrepancy is None
                 else [discrepancy] if isinstance(discrepancy, str) else list(discrepancy))
        discs = [self._discrepancy(d) for d in discs]  # an unknown name was xarray's KeyError
        procs = (self.procedures if procedures is None
                 else [procedures] if isinstance(procedures, str) else list(procedures))
        procs = [self._procedure(p) for p in procs]
        if not discs or not procs:  # an empty table with nothing said
            raise ConfigurationError(f"summary needs at least one discrepancy and one procedure "
                                     f"(default: all), got discrepancy={discrepancy!r}, "
                                     f"procedures={procedures!r}")
        no_repeats(discs, "discrepancy")  # a table, and rows, printed twice
        no_repeats(procs, "procedures")
        ds = self.dataset
        model = ds.attrs.get("fit_on") == "evaluation"
        smry = Summary()
        top = [
            ["Evaluation:", _short(self.configuration.get("evaluation", ""))],
            ["Baseline:", _short(self._baseline_text())],
            ["Replications:", str(self.replications)],
            ["Draws per truth:", str(self.draws_per_truth)],
            ["Seed:", str(ds.attrs.get("seed", ""))],
            ["Fitted on:", "evaluation set (model restrictiveness, Def. 1)" if model
             else "training samples (procedural restrictiveness)"],
        ]
        smry.tables.append(SimpleTable(top, title="Restrictiveness study"))
        fail = self.failures()
        for disc in discs:
            r = self.restrictiveness.sel(discrepancy=disc)
            se = self.se.sel(discrepancy=disc)
            rows = [[p] + [_cell(float(r.sel(procedure=p, n=n)), float(se.sel(procedure=p, n=n)),
                                 fail.loc[(p, n)]) for n in self.ns]
                    for p in procs]
            headers = ["procedure"] + [f"n={n}" for n in self.ns]
            smry.tables.append(SimpleTable(rows, headers=headers,
                                           title=f"Restrictiveness r̂ (se), discrepancy: {disc}"))
        notes = [READING,
                 "r̂ = mean procedure loss / mean baseline loss over common pseudo-truths; "
                 "se by the delta method (SPEC §3)."]
        failures = self._failure_notes(procs)
        if failures:
            notes.append("'failed': every fit failed, so the baseline's predictions were used "
                         "throughout; '*': some fits failed or predictions were replaced by the "
                         "baseline's, pulling r̂ toward 1.")
        notes += [f"{p}: {text}." for p, text in failures]
        if self.degenerate_baseline().sel(discrepancy=discs).values.any():
            notes.append("nan: the baseline's mean loss is zero to rounding relative to the "
                         "truths' scale, so r̂ = D̄ / B̄ is 0/0 (Results.degenerate_baseline).")
        smry.add_extra_txt([f"[{i + 1}] {t}" for i, t in enumerate(notes)])
        return smry

    def _baseline_text(self) -> str:
        """The baseline's label and what it is (its repr from the configuration): the label
        alone, by default the word 'baseline', did not say what r̂ is relative to."""
        label = str(self.dataset.attrs.get("baseline", ""))
        config = self.configuration.get("baseline")
        shown = config.get(label) if isinstance(config, dict) else None
        return label if not shown or shown == label else f"{label} = {shown}"

    def __repr__(self) -> str:
        return (f"<Results: {len(self.procedures)} procedures × n={self.ns} × "
                f"{self.replications} replications; discrepancies {self.discrepancies}>")

    def _repr_html_(self) -> str:
        """The summary as HTML tables (Jupyter's rich display)."""
        return self.summary().as_html()


#: ``long_name`` and ``units`` of the study Dataset's variables.
VARIABLE_ATTRS = {
    "loss": ("discrepancy d(Â, f) between the fitted rule and the truth", None),
    "baseline_loss": ("discrepancy d(baseline, f) of the baseline rule", None),
    "truth_scale": ("size of a loss for the truth (Discrepancy.scale; NaN: unknown)", None),
    "failed": ("fits that failed and used the baseline", "1"),
    "invalid": ("prediction rows replaced by the baseline's", "1"),
    "seconds": ("mean wall time of one fit", "s"),
    "baseline_seconds": ("wall time of the baseline fit", "s"),
    "error": ("first failure message", None),
    "fit_info": ("JSON record of the first training draw's fit", None),
    "params": ("fitted parameter (first training draw)", None),
}


def describe(ds: xr.Dataset, attrs: Mapping[str, tuple[str, str | None]]) -> None:
    """Set ``long_name`` (and ``units`` when given) on the variables of ``ds`` named in
    ``attrs``; variables ``ds`` lacks are skipped.

    Parameters
    ----------
    ds : xarray.Dataset
        Changed in place.
    attrs : mapping of variable name to (long_name, units or None)
        The descriptions.

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset({"seconds": ("n", [1.0])})
    >>> describe(ds, {"seconds": ("wall time", "s")})
    >>> ds["seconds"].attrs
    {'long_name': 'wall time', 'units': 's'}
    """
    for name, (long_name, units) in attrs.items():
        if name in ds.variables:
            ds[name].attrs["long_name"] = long_name
            if units is not None:
                ds[name].attrs["units"] = units


#: Dimensions of the losses (each also a coordinate); both may add ``draw``.
_LOSS_DIMS = {"loss": ("procedure", "discrepancy", "n", "replication"),
              "baseline_loss": ("discrepancy", "n", "replication")}


def _check_layout(ds: xr.Dataset) -> None:
    """Refuse losses whose dimensions or coordinates the estimates would misread.

    Estimates select by coordinate label: a Dataset without the ``n`` coordinate was read as
    n = 0, 1, ... without a word, and repeated labels picked the first of them.
    """
    for name, dims in _LOSS_DIMS.items():
        have = set(ds[name].dims) - {"draw"}
        if have != set(dims):
            raise DataError(f"{name} has dimensions {list(ds[name].dims)}; results need "
                            f"{list(dims)} (and optionally 'draw')")
    for dim in ("procedure", "discrepancy", "n", "replication"):
        if dim not in ds.coords:
            raise DataError(f"the Dataset has no {dim!r} coordinate; results select by its "
                            "labels (a study's Dataset, or rx.load of a saved file, has them)")
        if dim != "procedure":  # procedures: unique_procedures names the repeats
            values = pd.Index(ds[dim].values)
            if values.has_duplicates:
                raise DataError(f"{dim} labels repeat: "
                                f"{values[values.duplicated()].unique().tolist()}")


def unique_procedures(ds: xr.Dataset) -> None:
    """Refuse a Dataset whose ``procedure`` labels repeat.

    Every estimate selects procedures by label, so a repeated label silently picked the first
    of them (or failed deep in pandas).

    Parameters
    ----------
    ds : xarray.Dataset
        With a ``procedure`` coordinate (a Dataset without one passes).

    Raises
    ------
    DataError
        Some label appears more than once.

    Examples
    --------
    >>> import xarray as xr
    >>> unique_procedures(xr.Dataset(coords={"procedure": ["a", "a"]}))
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.DataError: procedure labels repeat: ['a']; ...
    """
    if "procedure" not in ds.coords:
        return
    labels = pd.Series([str(p) for p in ds["procedure"].values])
    repeated = labels[labels.duplicated()].unique().tolist()
    if repeated:
        raise DataError(f"procedure labels repeat: {repeated}; every procedure needs its own "
                        "label (estimates select procedures by label)")


def no_repeats(labels: Sequence[str], what: str) -> None:
    """Refuse a selection of table rows (or tables) that names one of them twice.

    A summary printed a repeated label's row (or a repeated discrepancy's table) twice, as if
    it were another estimate.

    Parameters
    ----------
    labels : sequence of str
        The selection, in the order given.
    what : str
        The argument, for the message.

    Raises
    ------
    ConfigurationError
        Some label appears more than once.

    Examples
    --------
    >>> no_repeats(["a", "b"], "procedures")
    >>> no_repeats(["a", "b", "a"], "procedures")
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: procedures names 'a' more than once ...
    """
    twice = repeated(labels)
    if twice:
        raise ConfigurationError(f"{what} names {', '.join(map(repr, twice))} "
                                 f"more than once ({list(labels)}); each would be shown twice")


def fitted_params(fit_info: xr.DataArray) -> xr.DataArray | None:
    """Numeric ``params`` (procedure, parameter, n, replication) from the JSON fit records.

    Only named parameters (``info["params"]`` a mapping) are collected; a procedure without
    them, or a failed fit, has NaN.

    Parameters
    ----------
    fit_info : xarray.DataArray
        JSON strings, first dimension ``procedure``.

    Returns
    -------
    xarray.DataArray or None
        Named ``params``, with a ``parameter`` dimension after the first; None when no fit has
        named parameters.

    Examples
    --------
    >>> import xarray as xr
    >>> info = xr.DataArray([['{"params": {"a": 1.5}}', '{}']], dims=("procedure", "n"),
    ...                     coords={"procedure": ["m"], "n": [10, 20]})
    >>> fitted_params(info).sel(parameter="a").values.tolist()
    [[1.5, nan]]
    """
    records = [json.loads(str(t) or "{}") for t in fit_info.values.ravel()]
    dicts = [r.get("params") if isinstance(r, dict) else None for r in records]
    names: list[str] = []
    for d in dicts:
        if isinstance(d, dict):
            names += [k for k in d if k not in names]
    if not names:
        return None
    values = np.full((len(dicts), len(names)), np.nan)
    for i, d in enumerate(dicts):
        if isinstance(d, dict):
            for j, k in enumerate(names):
                v = d.get(k)
                values[i, j] = float(v) if isinstance(v, (int, float)) else np.nan
    values = np.moveaxis(values.reshape(*fit_info.shape, len(names)), -1, 1)
    dims = (fit_info.dims[0], "parameter", *fit_info.dims[1:])
    coords = {d: fit_info[d] for d in fit_info.dims if d in fit_info.coords}
    return xr.DataArray(values, coords={**coords, "parameter": names}, dims=dims, name="params",
                        attrs={"long_name": VARIABLE_ATTRS["params"][0]})


#: How to read the estimates: the first note of every summary.
READING = ("How to read r̂: near 0, the procedure approximates almost any eligible rule "
           "(unrestrictive); near 1, it does no better than the baseline (restrictive).")


#: More than any fit's calls, tokens or seconds (a reply may report up to 1e9 tokens).
_MAX_USAGE = 1e15


def _usage_count(value, key: str, label: str, n, m) -> float:
    """A count of a fit's usage record, refused unless a number >= 0 (whole, but for
    ``seconds``): a procedure's record of -5 or 1e30 tokens, NaN or text was summed into the
    totals and priced."""
    whole = key != "seconds"
    number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) \
        else math.nan
    if not 0 <= number <= _MAX_USAGE or (whole and not number.is_integer()):
        raise DataError(f"the usage record of procedure {label!r} (n={n}, replication {m}) "
                        f"says {key} = {value!r}, not a {'count' if whole else 'time'}: "
                        f"each must be a {'whole ' if whole else ''}number from 0 to "
                        f"{_MAX_USAGE:.0e}")
    return int(number) if whole else number


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def all_failed(fail: pd.Series) -> bool:
    """Whether a row of :meth:`Results.failures` had every fit fail."""
    return bool(fail["fits"]) and fail["failed"] == fail["fits"]


def _cell(r: float, se: float, fail: pd.Series) -> str:
    if all_failed(fail):
        return "failed"
    mark = "*" if fail["failed"] or fail["invalid_rows"] else ""
    return f"{r:.3f} ({se:.3f}){mark}"


def read_netcdf(path, what: str, required: Sequence[str], loader: str) -> xr.Dataset:
    """Read a NetCDF file this package wrote, or raise :class:`DataError` saying what it is.

    ``what`` names the expected content (e.g. "restrictiveness results"), ``required`` the
    variables it must have and ``loader`` the function that reads it (for the message).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{loader}: no file {str(path)!r}")
    try:
        with xr.open_dataset(path, engine=NETCDF_ENGINE) as ds:
            ds = ds.load()
    except Exception as exc:  # noqa: BLE001 - netCDF4/HDF5 raise many types for a bad file
        raise DataError(f"{loader}: {str(path)!r} is not a readable NetCDF file of "
                        f"{what} ({type(exc).__name__}: {_short(str(exc), 100)})") from None
    missing = [v for v in required if v not in ds.variables]
    if missing:
        # another kind of file, named; a damaged file of this kind is told what it lacks
        kind = next((k for k, marks in _KINDS.items() if all(m in ds.variables for m in marks)
                     and not k.startswith(what)), None)
        found = f"it holds {kind}" if kind else f"it lacks {missing}"
        raise DataError(f"{loader}: {str(path)!r} is not a file of {what}: {found}")
    return ds


#: Variables that identify each kind of file the package writes, and how to read it.
_KINDS = {
    "restrictiveness results (read them with rx.load)": ("loss", "baseline_loss"),
    "completeness results (read them with rx.load_completeness)": ("kappa", "influence"),
    "a sensitivity dataset (open it with xarray.open_dataset)": ("critical_gamma",),
}


def load(path) -> Results:
    """Load results written by :meth:`Results.to_netcdf`.

    Parameters
    ----------
    path : str or path-like
        A NetCDF file written by :meth:`Results.to_netcdf` (any version of the package).

    Returns
    -------
    Results
        The study's results, as when they were written.

    Raises
    ------
    DataError
        If the file is missing, is not NetCDF, is truncated, or holds something else (the
        message says what, e.g. completeness results).

    Examples
    --------
    >>> import os, tempfile
    >>> import restrictiveness as rx
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     res.to_netcdf(os.path.join(folder, "study.nc"))
    ...     back = rx.load(os.path.join(folder, "study.nc"))
    >>> back.procedures == res.procedures, bool(back.restrictiveness.equals(res.restrictiveness))
    (True, True)
    """
    ds = read_netcdf(path, "restrictiveness results",
                     ("loss", "baseline_loss", "failed", "invalid", "error"), "load")
    if "configuration" not in ds.attrs:
        raise DataError(f"load: {str(path)!r} has the variables of restrictiveness results but "
                        "not their configuration attribute; it was not written by to_netcdf")
    return Results(ds)

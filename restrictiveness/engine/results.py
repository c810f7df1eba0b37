"""Results of a restrictiveness study: an :class:`xarray.Dataset` inside, estimates outside.

The Dataset has dimensions ``procedure``, ``discrepancy``, ``n``, ``replication`` (and ``draw``
when the study used K > 1 training samples per pseudo-truth) and variables

* ``loss`` (procedure, discrepancy, n, replication[, draw]) — d(Â, f_m), NaN for draws a
  procedure did not run;
* ``baseline_loss`` (discrepancy, n, replication[, draw]);
* ``failed`` (procedure, n, replication) — fits (over draws) that failed and used the baseline;
* ``invalid`` (procedure, n, replication) — prediction rows replaced by the baseline's, over
  every prediction the discrepancies asked for (elasticities ask for 48 perturbed copies of each
  evaluation market, so a bad market counts many times);
* ``seconds`` (procedure, n, replication) — mean wall time of one fit;
* ``error`` and ``fit_info`` (procedure, n, replication) — first failure message, JSON fit record;
* ``truth_<name>`` (n, replication) — the evaluation distribution's diagnostics;

and attributes holding the study's configuration, seed and package versions, so a saved file
says how it was made (``to_netcdf``) and reloads exactly (:func:`load`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cached_property

import numpy as np
import pandas as pd
import xarray as xr
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

from ..shared._versions import package_versions
from ..shared.exceptions import ConfigurationError
from .inference import combination_estimate, normal_interval, ratio_estimate
from .sensitivity_results import SensitivityMixin
from .usage import USAGE_KEYS, price_per_token

__all__ = ["Results", "load"]

NETCDF_ENGINE = "netcdf4"


class Results(SensitivityMixin):
    """Restrictiveness estimates, contrasts and summaries from a study's Dataset.

    Parameters
    ----------
    dataset : xarray.Dataset
        As built by :meth:`Study.run <restrictiveness.engine.study.Study.run>` (see module
        docstring).

    Examples
    --------
    >>> import restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> res = rx.Study(rx.MonotoneGP(F, n_eval=100), {"linear": rx.OLS("y ~ x")},
    ...                baseline=rx.Constant(), n=[20], replications=5).run(progress=False)
    >>> float(res.restrictiveness.sel(procedure="linear", n=20, discrepancy="mse")) < 1
    True
    """

    def __init__(self, dataset: xr.Dataset) -> None:
        self.dataset = dataset

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_records(cls, study, records: Sequence) -> Results:
        """Assemble the Dataset from replication records (in replication order)."""
        reps = [r.replication for r in records]
        coords = {"procedure": study.labels, "discrepancy": [d.name for d in study.discrepancies],
                  "n": np.asarray(study.n, dtype=np.int64), "replication": np.asarray(reps)}
        K = study.draws
        loss = np.stack([r.loss for r in records], axis=3)  # (P, D, N, M, K)
        base = np.stack([r.baseline_loss for r in records], axis=2)  # (D, N, M, K)
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
        ds["loss"].attrs["description"] = "discrepancy between the fitted rule and the truth"
        ds["failed"].attrs["description"] = "fits that failed (baseline used everywhere)"
        ds["invalid"].attrs["description"] = ("prediction rows replaced by the baseline's, over "
                                              "all predictions the discrepancies requested")
        ds["seconds"].attrs["units"] = "s"
        ds.attrs.update({
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
        """Write the Dataset to NetCDF-4 (reload with :func:`restrictiveness.load`)."""
        self.dataset.to_netcdf(path, engine=NETCDF_ENGINE)

    # -- accessors ------------------------------------------------------------------------
    @property
    def procedures(self) -> list[str]:
        return [str(p) for p in self.dataset["procedure"].values]

    @property
    def discrepancies(self) -> list[str]:
        return [str(d) for d in self.dataset["discrepancy"].values]

    @property
    def ns(self) -> list[int]:
        return [int(n) for n in self.dataset["n"].values]

    @property
    def replications(self) -> int:
        return int(self.dataset.sizes["replication"])

    @property
    def configuration(self) -> dict:
        return json.loads(self.dataset.attrs["configuration"])

    def losses(self) -> tuple[xr.DataArray, xr.DataArray]:
        """Per-replication losses ``(D, B)``, averaged over training draws (SPEC §3)."""
        D, B = self.dataset["loss"], self.dataset["baseline_loss"]
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
            raise ConfigurationError(f"procedure {label!r} not in {self.procedures}")
        return label

    # -- estimates ------------------------------------------------------------------------
    @cached_property
    def _estimates(self) -> tuple[xr.DataArray, xr.DataArray]:
        D, B = self.losses()
        D = D.transpose("procedure", "discrepancy", "n", "replication")
        B = B.transpose("discrepancy", "n", "replication")
        r, se = ratio_estimate(D.values, B.values[None])
        dims = ("procedure", "discrepancy", "n")
        coords = {d: D[d] for d in dims}
        return xr.DataArray(r, coords, dims), xr.DataArray(se, coords, dims)

    @property
    def restrictiveness(self) -> xr.DataArray:
        """r̂ = D̄ / B̄ by procedure, discrepancy and n."""
        return self._estimates[0]

    @property
    def se(self) -> xr.DataArray:
        """Delta-method standard errors of :attr:`restrictiveness`."""
        return self._estimates[1]

    def estimates(self, level: float = 0.95) -> pd.DataFrame:
        """Long table of r̂, se and the normal confidence interval.

        Index: (discrepancy, procedure, n).
        """
        r = self.restrictiveness.to_series().rename("estimate")
        se = self.se.to_series().rename("se")
        df = pd.concat([r, se], axis=1).reorder_levels(["discrepancy", "procedure", "n"])
        df["lower"], df["upper"] = normal_interval(df["estimate"], df["se"], level)
        return df.sort_index(level=["discrepancy"], sort_remaining=False)

    def combination(self, weights: Mapping[str, float], discrepancy: str | None = None,
                    level: float = 0.95) -> pd.DataFrame:
        """Estimate and SE of ``Σ c_j r̂_j`` on common draws, by n.

        Parameters
        ----------
        weights : mapping of procedure label to coefficient
            E.g. ``{"CPT(delta)": 1, "CPT(gamma)": -1}``.
        """
        disc = self._discrepancy(discrepancy)
        labels = [self._procedure(p) for p in weights]
        D, B = self.losses()
        D = D.sel(discrepancy=disc, procedure=labels).transpose("procedure", "n", "replication")
        B = B.sel(discrepancy=disc).transpose("n", "replication")
        est, se = combination_estimate(np.array([weights[p] for p in labels]), D.values, B.values)
        lo, hi = normal_interval(est, se, level)
        return pd.DataFrame({"estimate": est, "se": se, "lower": lo, "upper": hi},
                            index=pd.Index(self.ns, name="n"))

    def contrast(self, a: str, b: str, discrepancy: str | None = None,
                 level: float = 0.95) -> pd.DataFrame:
        """Paired contrast ``r̂_a − r̂_b`` by n, with SE from the covariance on common draws."""
        if a == b:
            raise ValueError("contrast needs two different procedures")
        return self.combination({a: 1.0, b: -1.0}, discrepancy, level)

    def failures(self) -> pd.DataFrame:
        """Failed fits and replaced prediction rows by procedure and n."""
        ds = self.dataset
        return pd.DataFrame({
            "failed": ds["failed"].sum("replication").to_series(),
            "invalid_rows": ds["invalid"].sum("replication").to_series(),
        })

    def timings(self) -> pd.DataFrame:
        """Median and total wall time of one fit by procedure and n."""
        s = self.dataset["seconds"]
        return pd.DataFrame({"median_seconds": s.median("replication").to_series(),
                             "total_seconds": s.sum("replication").to_series()})

    def usage(self, prices: Mapping[str, Sequence[float] | Mapping[str, float]] | None = None
              ) -> pd.DataFrame:
        """Model calls, tokens, retries and call seconds by procedure and n (language models).

        Totals of the ``"usage"`` record of each fit (summed over training draws by the study):
        ``fits`` (fits with a usage record), ``calls`` (requests actually made, including
        ``failed_calls``; cached replies are counted in ``cached_calls`` and cost nothing),
        ``retries``,
        ``input_tokens``, ``output_tokens`` and ``seconds`` (wall time of the calls). Only
        procedures that record usage appear.

        Parameters
        ----------
        prices : mapping, optional
            US dollars per million tokens by model id, as ``(input, output)`` or
            ``{"input": ..., "output": ...}``; adds a ``cost`` column. Every model used must
            be priced.

        Examples
        --------
        >>> res.usage(prices={"gpt-4o": (2.5, 10.0)})  # doctest: +SKIP
        """
        rows = []
        ds = self.dataset
        for label in self.procedures:
            cells = ds["fit_info"].sel(procedure=label).transpose("n", "replication").values
            for n, row in zip(self.ns, cells, strict=True):
                for text in row:
                    info = json.loads(str(text) or "{}")
                    usage = info.get("usage") if isinstance(info, dict) else None
                    if not isinstance(usage, dict):
                        continue
                    record = {"procedure": label, "n": n, "fits": 1,
                              **{k: usage.get(k, 0) for k in USAGE_KEYS}}
                    if prices is not None:
                        p_in, p_out = price_per_token(prices, info.get("model"))
                        record["cost"] = record["input_tokens"] * p_in + \
                            record["output_tokens"] * p_out
                    rows.append(record)
        columns = ["fits", *USAGE_KEYS] + (["cost"] if prices is not None else [])
        if not rows:
            index = pd.MultiIndex.from_arrays([[], []], names=["procedure", "n"])
            return pd.DataFrame(columns=columns, index=index)
        return pd.DataFrame(rows).groupby(["procedure", "n"], sort=False)[columns].sum()

    # -- reporting ------------------------------------------------------------------------
    def plot_profile(self, discrepancy: str | None = None,
                     procedures: Sequence[str] | None = None, ax=None, level: float = 0.95):
        """Learning-curve profiles: r̂ against n for each procedure, with confidence bands.

        Parameters
        ----------
        discrepancy : str, optional
            Default: the first.
        procedures : sequence of str, optional
            Default: all.
        ax : matplotlib Axes, optional
        level : float
            Coverage of the normal bands.

        Returns
        -------
        matplotlib Axes
        """
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("plotting needs matplotlib: pip install 'restrictiveness[plot]'"
                              ) from exc
        disc = self._discrepancy(discrepancy)
        labels = [self._procedure(p) for p in (procedures or self.procedures)]
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        est = self.estimates(level).xs(disc, level="discrepancy")
        for label in labels:
            e = est.xs(label, level="procedure")
            line, = ax.plot(e.index, e["estimate"], marker="o", label=label)
            ax.fill_between(e.index, e["lower"], e["upper"], color=line.get_color(), alpha=0.15)
        ax.set_xlabel("training sample size n")
        ax.set_ylabel(f"restrictiveness r̂ ({disc})")
        ax.set_xticks(self.ns)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
        return ax

    def summary(self, discrepancy: str | Sequence[str] | None = None,
                procedures: Sequence[str] | None = None) -> Summary:
        """statsmodels-style summary: r̂ (se) by procedure × n, one table per discrepancy.

        Parameters
        ----------
        discrepancy : str or sequence of str, optional
            Which discrepancies to show (default: all).
        procedures : sequence of str, optional
            Rows, in order (default: all).
        """
        discs = (self.discrepancies if discrepancy is None
                 else [discrepancy] if isinstance(discrepancy, str) else list(discrepancy))
        procs = list(procedures) if procedures is not None else self.procedures
        ds = self.dataset
        model = ds.attrs.get("fit_on") == "evaluation"
        smry = Summary()
        top = [
            ["Evaluation:", _short(self.configuration.get("evaluation", ""))],
            ["Baseline:", str(ds.attrs.get("baseline", ""))],
            ["Replications:", str(self.replications)],
            ["Draws per truth:", str(ds.sizes.get("draw", 1))],
            ["Seed:", str(ds.attrs.get("seed", ""))],
            ["Fitted on:", "evaluation set (model restrictiveness, Def. 1)" if model
             else "training samples (procedural restrictiveness)"],
        ]
        smry.tables.append(SimpleTable(top, title="Restrictiveness study"))
        for disc in discs:
            r = self.restrictiveness.sel(discrepancy=disc)
            se = self.se.sel(discrepancy=disc)
            rows = [[p] + [f"{float(r.sel(procedure=p, n=n)):.3f} "
                           f"({float(se.sel(procedure=p, n=n)):.3f})" for n in self.ns]
                    for p in procs]
            headers = ["procedure"] + [f"n={n}" for n in self.ns]
            smry.tables.append(SimpleTable(rows, headers=headers,
                                           title=f"Restrictiveness r̂ (se), discrepancy: {disc}"))
        notes = ["r̂ = mean procedure loss / mean baseline loss over common pseudo-truths; "
                 "se by the delta method (SPEC §3)."]
        fail = self.failures()
        for p in procs:
            f = fail.xs(p, level="procedure")
            if f["failed"].sum() or f["invalid_rows"].sum():
                per_n = ", ".join(f"n={n}: {int(f.loc[n, 'failed'])} fits, "
                                  f"{int(f.loc[n, 'invalid_rows'])} rows" for n in self.ns)
                notes.append(f"{p}: baseline used after failures ({per_n}).")
        smry.add_extra_txt([f"[{i + 1}] {t}" for i, t in enumerate(notes)])
        return smry

    def __repr__(self) -> str:
        return (f"<Results: {len(self.procedures)} procedures × n={self.ns} × "
                f"{self.replications} replications; discrepancies {self.discrepancies}>")

    def _repr_html_(self) -> str:
        return self.summary().as_html()


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def load(path) -> Results:
    """Load results written by :meth:`Results.to_netcdf`.

    Examples
    --------
    >>> import restrictiveness as rx
    >>> res = rx.load("lottery.nc")  # doctest: +SKIP
    """
    with xr.open_dataset(path, engine=NETCDF_ENGINE) as ds:
        return Results(ds.load())

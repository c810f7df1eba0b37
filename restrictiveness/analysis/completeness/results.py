"""Completeness results: estimates, paired differences, summaries and NetCDF files."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np
import pandas as pd
import xarray as xr
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

from ...engine.inference import normal_interval
from ...engine.results import (
    NETCDF_ENGINE,
    describe,
    no_repeats,
    read_netcdf,
    unique_procedures,
)
from ...shared.exceptions import ConfigurationError, DataError
from ...shared.files import CONVENTIONS, atomic_output
from ...shared.plotting import new_axes
from .inference import clustered_se, repeated_fold_se

__all__ = ["CompletenessResults", "load_completeness"]


class CompletenessResults:
    """Completeness estimates from an :class:`xarray.Dataset` of held-out losses.

    The Dataset has dimensions ``procedure``, ``repeat``, ``fold`` and ``unit`` (held-out
    observations for :class:`CellMeansKFold`, groups for :class:`RepeatedGroupKFold`) with
    variables ``loss`` and ``influence`` (procedure, repeat, unit); ``failed``, ``invalid``,
    ``seconds``, ``error``, ``info`` (procedure, repeat, fold); ``kappa``, ``kappa_se``,
    ``mean_loss`` (procedure); coordinates ``cluster`` (unit) and ``assigned_fold``
    (repeat, unit); and attributes recording the design, baseline, benchmark, seed and versions.

    Parameters
    ----------
    dataset : xarray.Dataset
        As built by :func:`~restrictiveness.estimate_completeness` or read by
        :func:`load_completeness` (``long_name``/``units`` are added to a shallow copy).

    Examples
    --------
    Responses to eight lotteries by five participants, quadratic in the lottery's covariate;
    a linear and a quadratic model against a constant baseline and a Gaussian process that
    interpolates the cell means (the benchmark). The method examples of this class use this
    ``comp``:

    >>> import numpy as np, pandas as pd, restrictiveness as rx
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"cell": np.repeat(np.arange(8), 5), "who": np.tile(np.arange(5), 8)})
    >>> df["x"] = df["cell"] / 8.0
    >>> df["y"] = df["x"] ** 2 + rng.normal(0, 0.1, len(df))
    >>> comp = rx.estimate_completeness(
    ...     df, {"linear": rx.OLS("y ~ x"), "quadratic": rx.OLS("y ~ x + I(x**2)")},
    ...     baseline=rx.Constant(), benchmark=rx.GPRegression(),
    ...     design=rx.CellMeansKFold(k=5, cell="cell", cluster="who"),
    ...     to_sample=rx.TableSample(("x",), "y"))
    >>> comp
    <CompletenessResults: 4 procedures, CellMeansKFold(k=5, cell='cell', cluster='who'), 40 units>
    >>> comp.kappa.round(3).to_dict()
    {'linear': 0.918, 'quadratic': 1.017, 'constant': 0.0, 'GP regression': 1.0}
    """

    def __init__(self, dataset: xr.Dataset) -> None:
        if not isinstance(dataset, xr.Dataset):
            raise DataError(f"CompletenessResults wraps an xarray Dataset, got "
                            f"{type(dataset).__name__}")
        # A Dataset without its procedure labels was relabelled 0, 1, ... silently; one
        # without the cluster, an estimate or the design's attributes was a KeyError later.
        missing = ([f"coordinate {c!r}" for c in _COORDS if c not in dataset.coords]
                   + [f"variable {v!r}" for v in _VARIABLES if v not in dataset.data_vars]
                   + [f"attribute {a!r}" for a in _ATTRIBUTES if a not in dataset.attrs])
        if missing:
            raise DataError(f"CompletenessResults: the Dataset lacks {', '.join(missing)}; "
                            "build it with rx.estimate_completeness or read a saved file with "
                            "rx.load_completeness")
        unique_procedures(dataset)
        # CF descriptions on a shallow copy, so a written file and these results agree.
        self.dataset = dataset.copy()
        describe(self.dataset, COMPLETENESS_ATTRS)
        self.dataset.attrs.setdefault("Conventions", CONVENTIONS)

    @property
    def procedures(self) -> list[str]:
        """Procedure labels, baseline and benchmark included (e.g. ``['linear', 'constant']``)."""
        return [str(p) for p in self.dataset["procedure"].values]

    @property
    def kappa(self) -> pd.Series:
        """Completeness κ̂ by procedure (the baseline's is 0, the benchmark's 1)."""
        return self.dataset["kappa"].to_series().rename("kappa")

    @property
    def kappa_se(self) -> pd.Series:
        """Standard error of κ̂ by procedure (SPEC §5; the design fixes the formula)."""
        return self.dataset["kappa_se"].to_series().rename("kappa_se")

    def _procedure(self, label: str) -> int:
        if label not in self.procedures:
            raise ConfigurationError(f"procedure {label!r} not in {self.procedures}")
        return self.procedures.index(label)

    def _se(self, influence: np.ndarray) -> float:
        if self.dataset.attrs["se_method"] == "clustered":
            return clustered_se(influence[0], self.dataset["cluster"].values)
        return repeated_fold_se(influence)

    def difference(self, a: str, b: str, level: float = 0.95) -> pd.Series:
        """Paired difference ``κ̂_a − κ̂_b`` with its SE from the same influence values.

        Both procedures are evaluated on the same held-out data, so the SE of the difference is
        computed from the difference of their influence values (not from the two SEs).

        Parameters
        ----------
        a, b : str
            Procedure labels (different).
        level : float
            Coverage of the normal interval.

        Returns
        -------
        Series
            ``estimate``, ``se``, ``lower``, ``upper`` (normal interval at ``level``).

        Examples
        --------
        The quadratic model is more complete than the linear one:

        >>> comp.difference("quadratic", "linear").round(3).to_dict()
        {'estimate': 0.099, 'se': 0.036, 'lower': 0.029, 'upper': 0.169}
        """
        if a == b:
            raise ConfigurationError("difference needs two different procedures")
        ia, ib = self._procedure(a), self._procedure(b)
        infl = self.dataset["influence"].transpose("procedure", "repeat", "unit").values
        est = float(self.dataset["kappa"].values[ia] - self.dataset["kappa"].values[ib])
        se = self._se(infl[ia] - infl[ib])
        lo, hi = normal_interval(est, se, level)
        return pd.Series({"estimate": est, "se": se, "lower": float(lo), "upper": float(hi)},
                         name=f"{a} - {b}")

    def estimates(self, level: float = 0.95) -> pd.DataFrame:
        """Completeness estimates in one table: κ̂, se, interval, loss and failures by procedure.

        Parameters
        ----------
        level : float
            Coverage of the normal interval (columns ``lower``, ``upper``).

        Returns
        -------
        DataFrame
            Index ``procedure``; columns ``kappa``, ``se``, ``lower``, ``upper``,
            ``mean_loss`` (held out), ``failed_folds`` and ``invalid_rows``.

        Examples
        --------
        >>> est = comp.estimates()
        >>> est.columns.tolist()
        ['kappa', 'se', 'lower', 'upper', 'mean_loss', 'failed_folds', 'invalid_rows']
        >>> est.loc["linear", ["kappa", "se", "lower", "upper"]].round(3).tolist()
        [0.918, 0.04, 0.84, 0.996]
        """
        ds = self.dataset
        df = pd.DataFrame({"kappa": self.kappa, "se": self.kappa_se})
        df["lower"], df["upper"] = normal_interval(df["kappa"], df["se"], level)
        df["mean_loss"] = ds["mean_loss"].to_series()
        df["failed_folds"] = ds["failed"].sum(("repeat", "fold")).to_series()
        df["invalid_rows"] = ds["invalid"].sum(("repeat", "fold")).to_series()
        return df

    @cached_property
    def _clusters(self) -> int:
        return int(pd.Series(self.dataset["cluster"].values).nunique())

    def summary(self, procedures: Sequence[str] | None = None) -> Summary:
        """Summary in the statsmodels style: κ̂ (se) per procedure, with the design and notes.

        Parameters
        ----------
        procedures : str or sequence of str, optional
            Rows, in order, each once (default: all, baseline and benchmark included).

        Returns
        -------
        statsmodels.iolib.summary.Summary
            A header table (design, baseline, benchmark, loss, units, clusters, seed), the
            estimates and numbered notes; ``as_text()``, ``as_html()`` and ``as_latex()``
            export it.

        Examples
        --------
        >>> print(comp.summary(["linear", "quadratic"]).tables[1])  # doctest: +NORMALIZE_WHITESPACE
        ==============================================
        procedure   κ̂    (se)  mean loss failed folds
        ----------------------------------------------
           linear 0.918 (0.040)  0.015243            0
        quadratic 1.017 (0.005) 0.0080039            0
        ----------------------------------------------
        """
        ds = self.dataset
        # a label as a string was read letter by letter, an unknown one was pandas' KeyError,
        # a repeated one printed its row twice and none an empty table
        procs = (self.procedures if procedures is None
                 else [procedures] if isinstance(procedures, str) else list(procedures))
        for p in procs:
            self._procedure(p)
        if not procs:
            raise ConfigurationError(f"summary needs at least one procedure (default: all), got "
                                     f"procedures={procedures!r}")
        no_repeats(procs, "procedures")
        est = self.estimates()
        smry = Summary()
        top = [["Design:", ds.attrs["design"]],
               ["Baseline (κ = 0):", ds.attrs["baseline"]],
               ["Benchmark (κ = 1):", ds.attrs["benchmark"]],
               ["Loss:", ds.attrs["loss"]],
               [f"Held-out {ds.attrs['unit']}s:", str(ds.sizes["unit"])],
               ["Clusters:", str(self._clusters)],
               ["Seed:", ds.attrs["seed"]]]
        smry.tables.append(SimpleTable(top, title="Completeness"))
        rows = [[p, f"{est.loc[p, 'kappa']:.3f}", f"({est.loc[p, 'se']:.3f})",
                 f"{est.loc[p, 'mean_loss']:.5g}", str(int(est.loc[p, 'failed_folds']))]
                for p in procs]
        smry.tables.append(SimpleTable(rows, headers=["procedure", "κ̂", "(se)", "mean loss",
                                                      "failed folds"]))
        se_note = ("SE clustered by the cluster coordinate (SPEC §5, lotteries)"
                   if ds.attrs["se_method"] == "clustered"
                   else "repeated-fold SE over groups (SPEC §5, markets)")
        notes = [f"κ̂ = (loss_baseline − loss_j) / (loss_baseline − loss_benchmark) on held-out "
                 f"data; {se_note}."]
        if est["kappa"].isna().all():
            notes.append("nan: the benchmark's mean held-out loss equals the baseline's to "
                         "rounding, so κ̂ is 0/0.")
        fails = est.loc[procs]
        for p in fails.index[(fails["failed_folds"] > 0) | (fails["invalid_rows"] > 0)]:
            notes.append(f"{p}: baseline predictions used in {int(fails.loc[p, 'failed_folds'])}"
                         f" failed fold(s) and {int(fails.loc[p, 'invalid_rows'])} invalid "
                         "row(s).")
        smry.add_extra_txt([f"[{i + 1}] {t}" for i, t in enumerate(notes)])
        return smry

    def plot_estimates(self, ax=None, level: float = 0.95):
        """Plot κ̂ by procedure with normal confidence intervals.

        The baseline (κ = 0) and the benchmark (κ = 1) are marked by vertical reference lines.

        Parameters
        ----------
        ax : matplotlib Axes, optional
            Drawn into; a new figure's Axes otherwise.
        level : float
            Coverage of the intervals (stated in the horizontal axis label).

        Returns
        -------
        matplotlib Axes
            One error bar per procedure, in :attr:`procedures` order from the bottom.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> ax = comp.plot_estimates(level=0.9)
        >>> [t.get_text() for t in ax.get_yticklabels()], ax.get_xlabel()
        (['linear', 'quadratic', 'constant', 'GP regression'], 'completeness κ̂ (90% interval)')
        """
        ax = new_axes(ax)
        est = self.estimates(level)
        y = np.arange(len(est))
        ax.errorbar(est["kappa"], y, xerr=[est["kappa"] - est["lower"],
                                           est["upper"] - est["kappa"]], fmt="o", capsize=3)
        ax.axvline(0.0, color="grey", lw=0.8)
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_yticks(y, est.index)
        ax.set_xlabel(f"completeness κ̂ ({level:.0%} interval)")
        return ax

    def to_netcdf(self, path) -> None:
        """Write the Dataset to NetCDF-4 atomically (reload with :func:`load_completeness`),
        with its CF ``long_name``/``units`` and ``Conventions`` attribute.

        Parameters
        ----------
        path : str or path-like
            The file to write (replaced atomically).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     comp.to_netcdf(pathlib.Path(tmp) / "completeness.nc")
        ...     back = load_completeness(pathlib.Path(tmp) / "completeness.nc")
        >>> back.kappa.equals(comp.kappa)
        True
        """
        with atomic_output(path) as tmp:
            self.dataset.to_netcdf(tmp, engine=NETCDF_ENGINE)

    def __repr__(self) -> str:
        return (f"<CompletenessResults: {len(self.procedures)} procedures, "
                f"{self.dataset.attrs['design']}, {self.dataset.sizes['unit']} units>")

    def _repr_html_(self) -> str:
        """The summary as HTML tables (Jupyter's rich display)."""
        return self.summary().as_html()


#: What every method reads: the coordinates, variables and attributes of a completeness Dataset.
_COORDS = ("procedure", "cluster")
_VARIABLES = ("loss", "influence", "failed", "invalid", "kappa", "kappa_se", "mean_loss")
_ATTRIBUTES = ("se_method", "design", "baseline", "benchmark", "loss", "unit", "seed")

#: ``long_name`` and ``units`` of the completeness Dataset's variables.
COMPLETENESS_ATTRS = {
    "loss": ("held-out loss of the procedure", None),
    "influence": ("influence value of each held-out unit on κ̂", "1"),
    "failed": ("folds whose fit failed and used the baseline", "1"),
    "invalid": ("prediction rows replaced by the baseline's", "1"),
    "seconds": ("wall time of one fit", "s"),
    "error": ("first failure message", None),
    "info": ("JSON record of the fit", None),
    "kappa": ("completeness κ̂", "1"),
    "kappa_se": ("standard error of κ̂", "1"),
    "mean_loss": ("mean held-out loss", None),
}


def load_completeness(path) -> CompletenessResults:
    """Load results written by :meth:`CompletenessResults.to_netcdf`.

    Parameters
    ----------
    path : str or path-like
        A NetCDF file written by :meth:`CompletenessResults.to_netcdf`.

    Returns
    -------
    CompletenessResults
        The completeness estimates, as when they were written.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     comp.to_netcdf(os.path.join(folder, "completeness.nc"))
    ...     back = load_completeness(os.path.join(folder, "completeness.nc"))
    >>> bool(back.kappa.equals(comp.kappa)), bool(back.kappa_se.equals(comp.kappa_se))
    (True, True)

    Raises
    ------
    DataError
        If the file is missing, is not NetCDF, is truncated, or holds something else.
    """
    return CompletenessResults(read_netcdf(
        path, "completeness results", ("kappa", "kappa_se", "influence", "loss", "failed"),
        "load_completeness"))

"""Completeness on real data (Fudenberg, Kleinberg, Liang & Mullainathan 2022; SPEC §5).

Completeness of procedure j is the share of a flexible benchmark's out-of-sample improvement over
a baseline that j achieves,

    κ_j = (loss_baseline − loss_j) / (loss_baseline − loss_benchmark),

with all losses held out under one cross-validation design common to every procedure. The engine,
:func:`estimate_completeness`, is generic: it takes a data frame, a cross-validation design, and a
``to_sample`` callable that turns any subset of the frame's rows into a
:class:`~restrictiveness.shared.sample.Sample`. Two designs implement the paper's applications:

* :class:`CellMeansKFold` (lotteries, §3.1): K folds over observations; procedures are fitted to
  the per-cell means (25 lottery means) of the training responses and predict held-out
  individual responses; SE clustered by participant.
* :class:`RepeatedGroupKFold` (markets, §4.1): repeated K folds over groups (cities, both markets
  of a city together); loss per group averages its observations' (markets') losses; the
  repeated-fold SE of SPEC §5.

Failures follow the failure protocol of the restrictiveness studies
(:mod:`restrictiveness.engine.failures`): a fit or prediction that raises gives the baseline's
predictions for that whole fold, a non-finite or ineligible prediction row gives the baseline's
row; both are counted, never raised.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import xarray as xr

from ...eligible.constraints import Between, Constraint
from ...engine import memory
from ...engine.failures import (
    USER_CODE_ERRORS,
    GuardedRule,
    failure_text,
    reraise_fatal,
    user_code,
)
from ...engine.protocol import Procedure, refuse_estimator
from ...shared._versions import package_versions
from ...shared.checks import whole_number
from ...shared.exceptions import BaselineError, ConfigurationError, DataError, FailureWarning
from ...shared.random_state import global_state_seed
from .designs import Design, Loss, ToSample, squared_error
from .inference import with_estimates
from .results import CompletenessResults

__all__ = ["estimate_completeness"]


def _resolve(procedures: Mapping[str, Procedure], role: str, proc: Procedure | str,
             ) -> tuple[str, Procedure | None]:
    if isinstance(proc, str):
        if proc not in procedures:
            raise ConfigurationError(f"{role}={proc!r} is not a key of procedures "
                                     f"{list(procedures)}; pass a Procedure or one of the keys")
        return proc, None
    if not hasattr(proc, "fit"):
        raise ConfigurationError(f"{role} must be a Procedure (with fit) or a key of procedures")
    refuse_estimator(proc, role)
    label = str(getattr(proc, "label", "") or "")
    if label in ("", Procedure.label) or label in procedures:  # no label of its own, or taken
        label = role
    if label in procedures:
        raise ConfigurationError(f"{role}'s label {label!r} is already a key of procedures; "
                                 "rename one of them or pass the key as a string")
    return label, proc


def _seed_sequence(seed) -> np.random.SeedSequence:
    if isinstance(seed, np.random.SeedSequence):
        # a copy: spawning from the caller's own advanced its child counter, so the same
        # SeedSequence gave other folds at every call, all recorded under the same seed
        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key,
                                      pool_size=seed.pool_size)
    if seed is not None:  # numpy's own refusals of -1 and 2.5 named no option
        seed = whole_number(seed, "seed", minimum=0)
    return np.random.SeedSequence(seed)


def _check_memory(design, rows: int, procedures: int, units: int) -> None:
    """Refuse a design whose folds and losses cannot fit in memory, before any work: every
    fold holds its rows' indices (8 bytes a row), and the losses and fold records are kept
    for every repetition (``--repeats 100000`` on the cereal data took 9 GiB in 30 s, and
    more until the process was killed)."""
    R, K = int(design.repeats), int(design.k)
    need = R * (K * (8 * rows + _FOLD_OVERHEAD) + 8 * units * (procedures + 1)
                + 40 * K * procedures)
    free = memory.available_memory()
    if free is not None and need > free:
        raise ConfigurationError(
            f"{design!r}: {R:,} repetitions of {K} folds need at least "
            f"{memory.format_bytes(need)} of memory (each fold's row indices and every "
            f"repetition's losses), more than the {memory.format_bytes(free)} available; use "
            "fewer repetitions (--repeats)")


#: Bytes of a fold's Python objects beside its row indices (the Fold and two arrays).
_FOLD_OVERHEAD = 300


def estimate_completeness(
    data: pd.DataFrame,
    procedures: Mapping[str, Procedure],
    *,
    baseline: Procedure | str,
    benchmark: Procedure | str,
    design: Design,
    to_sample: ToSample,
    loss: Loss = squared_error,
    seed: int | np.random.SeedSequence | None = 0,
    constraints: Sequence[Constraint] = (),
) -> CompletenessResults:
    """Cross-validated completeness of procedures against a baseline and a flexible benchmark.

    Every procedure, the baseline and the benchmark are fitted on the same training folds and
    evaluated on the same held-out data; folds come from ``seed`` alone (via
    :class:`numpy.random.SeedSequence`), so a rerun with the same seed reproduces them, and each
    fold hands every procedure a generator seeded identically (common random numbers).

    Parameters
    ----------
    data : DataFrame
        The real data, one row per record (a response; a product in a market).
    procedures : mapping of str to Procedure
        The procedures to evaluate, by label.
    baseline, benchmark : Procedure or str
        The baseline (κ = 0) and the flexible benchmark (κ = 1): a Procedure (added under its
        ``label``, or ``"baseline"``/``"benchmark"`` when that label is taken) or the key of one
        of ``procedures``. Neither may fail.
    design : CellMeansKFold or RepeatedGroupKFold
        The cross-validation design (it also fixes the SE formula).
    to_sample : callable DataFrame -> Sample
        Turns any subset of ``data``'s rows into a
        :class:`~restrictiveness.shared.sample.Sample`. With :class:`CellMeansKFold` it must
        return one observation per row, in row order (e.g. :class:`TableSample`); the design
        averages them by cell for training. With
        :class:`RepeatedGroupKFold` it is called on the training rows and on each held-out
        group's rows, and may aggregate rows (e.g. the 24 product rows of a market into one
        observation with ``X`` of shape ``(24, 3)``).
    loss : callable (y, pred) -> ndarray
        Loss per observation (first axis); default :func:`squared_error`. κ̂ is invariant to
        rescaling it.
    seed : int, SeedSequence or None
        Seed of the folds and of the procedures' random generators (None: fresh entropy,
        recorded in the results). A SeedSequence is read, not spawned from: passing the same
        one again reproduces the folds.
    constraints : sequence of Constraint
        Restrictions used by the failure protocol: predictions are repaired (clipped) and rows
        that still fail get the baseline's.

    Returns
    -------
    CompletenessResults

    Raises
    ------
    ConfigurationError
        Inconsistent labels, too few observations or groups for the folds.
    DataError
        Missing design columns or values.
    BaselineError
        The baseline or the benchmark failed in some fold (κ is undefined without either).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from restrictiveness import OLS, CellMeansKFold, Constant, TableSample
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"cell": np.repeat(np.arange(8), 5), "who": np.tile(np.arange(5), 8)})
    >>> df["x"] = df["cell"] / 8.0
    >>> df["y"] = df["x"] ** 2 + rng.normal(0, 0.1, len(df))
    >>> res = estimate_completeness(
    ...     df, {"linear": OLS("y ~ x")}, baseline=Constant(), benchmark=OLS("y ~ x + I(x**2)"),
    ...     design=CellMeansKFold(k=5, cell="cell", cluster="who"),
    ...     to_sample=TableSample(("x",), "y"))
    >>> float(res.kappa["OLS"]), float(res.kappa["constant"])
    (1.0, 0.0)
    >>> 0 < float(res.kappa["linear"]) < 1
    True
    """
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if len(data) == 0:
        raise DataError("data has no rows")
    if not isinstance(procedures, Mapping):
        raise ConfigurationError("procedures must be a mapping of label to Procedure")
    procs = {str(k): v for k, v in procedures.items()}
    if len(procs) != len(procedures):  # {1: A, "1": B} kept B alone, silently
        raise ConfigurationError(f"procedures has keys that are the same label as strings: "
                                 f"{list(procedures)}; give each procedure its own label")
    for label, p in procs.items():
        if not hasattr(p, "fit"):
            raise ConfigurationError(f"procedures[{label!r}] is not a Procedure (no fit method)")
        refuse_estimator(p, f"procedures[{label!r}]")
    base_label, base_proc = _resolve(procs, "baseline", baseline)
    if base_proc is not None:
        procs[base_label] = base_proc
    flex_label, flex_proc = _resolve(procs, "benchmark", benchmark)
    if flex_proc is not None:
        procs[flex_label] = flex_proc
    if base_label == flex_label:
        raise ConfigurationError("baseline and benchmark must be different procedures")
    if not all(hasattr(design, a) for a in ("units", "folds", "repeats", "k")):
        raise ConfigurationError(f"design must be a cross-validation design such as "
                                 f"rx.CellMeansKFold(k=10) or rx.RepeatedGroupKFold(5, 5), got "
                                 f"{design!r}")
    if not callable(to_sample):
        raise ConfigurationError(f"to_sample must turn a DataFrame into a Sample (e.g. "
                                 f"rx.TableSample(columns, response)), got {to_sample!r}")
    # a string or one constraint was a TypeError, later reported as the baseline failing
    if isinstance(constraints, Constraint | str) \
            or not all(isinstance(c, Constraint) for c in constraints):
        raise ConfigurationError(f"constraints must be a sequence of Constraint objects, e.g. "
                                 f"[rx.Between(0, 1)], got {constraints!r}")
    constraints = tuple(constraints)
    for c in constraints:  # Increasing('x') was accepted and changed nothing
        if type(c).check is Constraint.check and type(c).repair is Constraint.repair:
            raise ConfigurationError(
                f"completeness applies constraints to predictions (repair, then check), and "
                f"{c!r} does neither: it restricts pseudo-truths (evaluation distributions "
                "impose it on their draws), so here it would be ignored; leave it out")
    data = data.reset_index(drop=True)
    units, clusters = design.units(data)
    _check_memory(design, len(data), len(procs), len(units))
    ss = _seed_sequence(seed)
    fold_seq, fit_seq = ss.spawn(2)
    folds = design.folds(data, np.random.default_rng(fold_seq))
    fit_seeds = fit_seq.spawn(len(folds))

    labels = list(procs)
    P, R, K, U = len(labels), design.repeats, design.k, len(units)
    L = np.full((P, R, U), np.nan)
    assigned = np.full((R, U), -1, dtype=np.int64)
    failed = np.zeros((P, R, K), dtype=np.int64)
    invalid = np.zeros((P, R, K), dtype=np.int64)
    seconds = np.zeros((P, R, K))
    error = np.full((P, R, K), "", dtype=object)
    info = np.full((P, R, K), "{}", dtype=object)
    b, f = labels.index(base_label), labels.index(flex_label)
    order = [b] + [j for j in range(P) if j != b]  # the baseline first: others fall back on it

    for i, (fold, fit_ss) in enumerate(zip(folds, fit_seeds, strict=True)):
        # the fold's global random states, for procedures that draw from them
        global_seed = global_state_seed(fit_ss)
        r, k = fold.repeat, fold.fold
        train = design.training_sample(data.iloc[fold.train], to_sample)
        if i == 0:  # a misspelt formula is a configuration error, not a failure in every fold
            for proc in procs.values():
                if hasattr(proc, "validate"):
                    proc.validate(tuple(train.columns), train.response)
            for c in constraints:  # a bound naming no covariate was "the baseline failed"
                if isinstance(c, Between):
                    c.bounds(np.zeros((1, len(train.columns))), tuple(train.columns))
        test, unit_of = design.test_sample(data, fold.test, to_sample)
        if np.any(assigned[r, np.unique(unit_of)] >= 0):
            raise ConfigurationError(f"{design!r}: a unit is held out twice in repetition {r}")
        assigned[r, unit_of] = k
        X, columns = np.asarray(test.X, dtype=float), tuple(test.columns)
        counts = np.bincount(unit_of, minlength=U).astype(float)
        held = counts > 0
        base_fit = None
        for j in order:
            t0 = time.perf_counter()
            if j == b:
                try:
                    # a copy: the fold's procedures share its training sample
                    with user_code(global_seed):
                        base_fit = procs[labels[j]].fit(train.copy(),
                                                        np.random.default_rng(fit_ss))
                    # repaired as at the study's baseline (its own copy of X; ±inf not clipped)
                    pred = GuardedRule(base_fit, base_fit, constraints, columns,
                                       baseline_seed=global_seed).baseline_predict(X)
                except USER_CODE_ERRORS as exc:
                    reraise_fatal(exc)  # as at the study's baseline: an interrupt, no sandbox
                    raise BaselineError(f"the baseline {base_label!r} failed in repetition {r}, "
                                        f"fold {k}: {failure_text(exc)}") from exc
                if not np.isfinite(pred).all():
                    raise BaselineError(f"the baseline {base_label!r} returned non-finite "
                                        f"predictions in repetition {r}, fold {k}")
                info[j, r, k] = json.dumps(getattr(base_fit, "info", {}) or {}, default=str)
            else:
                # The study's failure protocol: repair, replace invalid rows with the
                # baseline's, and the whole fold when the fit or the prediction raises.
                try:
                    with user_code(global_seed):
                        fitted, reason = procs[labels[j]].fit(
                            train.copy(), np.random.default_rng(fit_ss)), ""
                    info[j, r, k] = json.dumps(getattr(fitted, "info", {}) or {}, default=str)
                except USER_CODE_ERRORS as exc:  # any failure of user code is recorded
                    reraise_fatal(exc)
                    fitted, reason = None, failure_text(exc)
                guard = GuardedRule(fitted, base_fit, constraints, columns, reason, global_seed,
                                    global_seed)
                pred = guard.predict(X)
                if j == f and guard.failed:
                    # κ is a ratio to the benchmark's improvement: with the baseline's
                    # predictions in its place that improvement shrank and every κ grew (one
                    # zero cereal share took MNL's κ from 0.21 to 0.49, with a warning only)
                    raise BaselineError(f"the benchmark {flex_label!r} failed in repetition {r}, "
                                        f"fold {k}: {guard.error}; κ is relative to the "
                                        "benchmark's improvement over the baseline, so the "
                                        "benchmark must fit every fold")
                failed[j, r, k] = int(guard.failed)
                invalid[j, r, k] = 0 if guard.failed else guard.replaced
                error[j, r, k] = guard.error
            seconds[j, r, k] = time.perf_counter() - t0
            # the loss gets its own copy of the responses, as each fit does of the samples
            obs = np.asarray(loss(np.array(test.y), pred), dtype=float)
            if obs.shape != (len(test),):
                raise ConfigurationError(f"loss must return one value per observation, shape "
                                         f"({len(test)},); got {obs.shape}")
            if not np.isfinite(obs).all():  # κ̂ was NaN, blamed on the benchmark
                raise ConfigurationError(f"loss returned a non-finite value for {labels[j]!r} in "
                                         f"repetition {r}, fold {k} (predictions are finite); "
                                         "it must be finite wherever the predictions are")
            L[j, r, held] = np.bincount(unit_of, weights=obs, minlength=U)[held] / counts[held]
    if (assigned < 0).any():
        raise ConfigurationError(f"{design!r}: some units were never held out (did to_sample drop "
                                 "rows?)")
    if failed.any() or invalid.any():
        bad = [f"{labels[j]} ({int(failed[j].sum())} folds, {int(invalid[j].sum())} rows)"
               for j in range(P) if failed[j].any() or invalid[j].any()]
        warnings.warn("baseline predictions used after failures: " + "; ".join(bad),
                      FailureWarning, stacklevel=2)

    coords = {"procedure": labels, "repeat": np.arange(R), "fold": np.arange(K),
              "unit": units, "cluster": ("unit", clusters),
              "assigned_fold": (("repeat", "unit"), assigned)}
    pr = ("procedure", "repeat", "fold")
    ds = xr.Dataset(
        {"loss": (("procedure", "repeat", "unit"), L),
         "failed": (pr, failed), "invalid": (pr, invalid), "seconds": (pr, seconds),
         "error": (pr, error.astype(str)), "info": (pr, info.astype(str))},
        coords=coords,
    )
    ds["loss"].attrs["description"] = f"held-out loss per {design.unit_name}"
    ds["failed"].attrs["description"] = "fits that failed (baseline used for the whole fold)"
    ds["invalid"].attrs["description"] = "prediction rows replaced by the baseline's"
    ds["seconds"].attrs["units"] = "s"
    ds.attrs.update({
        "title": "completeness",
        "design": repr(design),
        "se_method": design.se_method,
        "unit": design.unit_name,
        "baseline": base_label,
        "benchmark": flex_label,
        "loss": getattr(loss, "__name__", repr(loss)),
        "to_sample": repr(to_sample),
        "constraints": json.dumps([repr(c) for c in constraints]),
        "procedures": json.dumps({lab: repr(p) for lab, p in procs.items()}),
        # a child sequence's entropy alone is its parent's, which draws other folds
        "seed": str(ss.entropy) + (f" spawn_key={ss.spawn_key}" if ss.spawn_key else ""),
        "versions": json.dumps(package_versions()),
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
    })
    return CompletenessResults(with_estimates(ds))

"""The Monte Carlo study runner (SPEC §3).

A :class:`Study` is a picklable configuration: an evaluation distribution, labelled procedures,
a baseline, discrepancies, sample sizes, replications, a seed and the number of training draws
per pseudo-truth. Its unit of work, :func:`run_replication`, is a *pure function* of the study
and a replication index: it draws the pseudo-truth, builds the samples, fits every procedure
and the baseline on the same samples (common random numbers), applies the failure protocol and
returns a small :class:`ReplicationRecord`. Seeds derive from
``numpy.random.SeedSequence(seed, spawn_key=...)`` keyed by replication, procedure label, ``n``
and draw, so a replication's numbers do not depend on the backend, the worker count, the order
of the procedures or which other procedures run beside it.

Backends: serial (``n_jobs=1``) or a local process pool; records are assembled in replication
order, so a parallel run's Dataset is identical to the serial one, and the workers' warnings
are raised in the caller in that order too. Checkpoints and remote
(dask) execution ship the same units, after a check that everything shipped pickles. With
``concurrency=N``, I/O-bound procedures (language-model fits) run on N threads in this process
beside the workers (:mod:`restrictiveness.engine.concurrency`); a replication's record is then
assembled from per-fit outcomes (:func:`fit_outcome`) that are the same numbers.
"""

from __future__ import annotations

import contextlib
import copy
import json
import multiprocessing
import multiprocessing.connection
import numbers
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import types
import uuid
import warnings
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Literal, NoReturn, TypeGuard

import numpy as np

from ..eligible.truth import EvaluationDistribution, PseudoTruth
from ..shared.blas import one_thread
from ..shared.checks import MAX_SEED, is_positive, is_whole, repeated, whole_number
from ..shared.exceptions import (
    BaselineError,
    CheckpointWarning,
    ConfigurationError,
    ExecutionError,
    FailureWarning,
    StudyInterrupted,
    user_stacklevel,
)
from ..shared.random_state import global_state_seed
from . import timeouts
from .concurrency import (
    WAIT_SLICE,
    KeyedOnce,
    RateLimiter,
    check_picklable,
    on_io_thread,
    rate_limited,
    run_with_threads,
    usable_cpus,
)
from .discrepancies import MSE, NEGATIVE_LOSS, Discrepancy
from .failures import (
    USER_CODE_ERRORS,
    GuardedRule,
    WorkerTerminated,
    failure_text,
    is_interrupt,
    reraise_fatal,
    user_code,
)
from .memory import check_memory
from .protocol import FunctionRule, Procedure, refuse_estimator
from .records import ReplicationRecord
from .sensitivity_results import Contributions
from .timeouts import (
    check_timeout,
    end_stages,
    exit_when_orphaned,
    run_in_child,
    run_staged,
    start_stage,
)
from .usage import add_usage
from .warning_relay import InOrder, caller_filters, collected, shippable

__all__ = ["Study", "ReplicationRecord", "run_replication", "run_unit", "procedure_rng",
           "ReplicationContext", "FitOutcome", "replication_context", "fit_outcome",
           "assemble_record"]

BASELINE = "__baseline__"


def _fit_seeds(seed: int, replication: int, label: str, n: int, draw: int
               ) -> np.random.SeedSequence:
    return np.random.SeedSequence(seed, spawn_key=(replication, 1, zlib.crc32(label.encode()),
                                                   n, draw))


def procedure_rng(seed: int, replication: int, label: str, n: int, draw: int
                  ) -> np.random.Generator:
    """The random stream of one fit, keyed by what the fit is (not by when it runs)."""
    return np.random.default_rng(_fit_seeds(seed, replication, label, n, draw))


def _global_seed(seed: int, replication: int, label: str, n: int, draw: int) -> int | None:
    """The seed of the global random states for one fit and its rule's predictions, keyed as
    its stream; None on the I/O threads, whose fits overlap by design (held seeded, they would
    run one at a time)."""
    if on_io_thread():
        return None
    return global_state_seed(_fit_seeds(seed, replication, label, n, draw))


def truth_rng(seed: int, replication: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(replication, 0)))


def _json(info) -> str:
    try:
        return json.dumps(info or {}, default=lambda o: np.asarray(o).tolist())
    except (TypeError, ValueError):
        return json.dumps({"repr": repr(info)})


class Study:
    """Procedural restrictiveness of several procedures on common draws (SPEC §2–§3).

    Parameters
    ----------
    evaluation : EvaluationDistribution
        Draws the pseudo-truths.
    procedures : mapping of str to Procedure, or sequence of Procedure
        Labelled procedures (a sequence is labelled by each procedure's ``label``).
    baseline : Procedure
        The normalising procedure, fitted on the same samples.
    discrepancies : sequence of Discrepancy
        Default: mean squared error over the evaluation locations.
    n : sequence of int
        Training sample sizes (the learning-curve profile), each once; they are stored in
        increasing order.
    replications : int
        Number of pseudo-truths M.
    seed : int
        Root seed, 0 to 2**63 − 1 (results store it as a 64-bit attribute); the same seed gives
        the same numbers whatever the backend.
    draws : int
        Training samples per pseudo-truth and n (K of SPEC §3); a procedure whose ``draws``
        attribute is set (e.g. 1 for an expensive language-model procedure) uses that many.
    fit_on : {"training", "evaluation"}
        ``"evaluation"`` fits every procedure on the evaluation locations themselves, giving
        *model* restrictiveness (Def. 1, the n → ∞ limit); the ``n`` coordinate then indexes the
        pseudo-truth construction only. The evaluation points must then be equally
        weighted (procedures fit unweighted samples); unequal weights are refused.
    baseline_label : str
        Name of the baseline in results and summaries.
    contributions : Contributions, optional
        Parameter contributions of nested procedures (SPEC §4), e.g. CPT's ``C_alpha``; the
        results then report them and accept ``"C_q"`` terms in comparisons.

    Examples
    --------
    A linear and a quadratic model of rules on [0, 1] that are increasing and in [0, 1]; the
    method examples of this class use this ``study``:

    >>> import restrictiveness as rx
    >>> F = rx.EligibleSet(rx.Box(x=(0, 1)), rx.Increasing("x"), rx.Between(0, 1))
    >>> study = rx.Study(rx.MonotoneGP(F, n_eval=50),
    ...                  {"linear": rx.OLS("y ~ x"), "quadratic": rx.OLS("y ~ x + I(x**2)")},
    ...                  baseline=rx.Constant(), n=[10, 20], replications=4)
    >>> res = study.run(progress=False)
    >>> res.dataset["loss"].dims
    ('procedure', 'discrepancy', 'n', 'replication')
    >>> res.restrictiveness.sel(discrepancy="mse", n=20).round(3).values.tolist()
    [0.231, 0.058]
    """

    def __init__(self, evaluation: EvaluationDistribution,
                 procedures: Mapping[str, Procedure] | Sequence[Procedure],
                 baseline: Procedure, discrepancies: Sequence[Discrepancy] = (MSE(),),
                 n: Sequence[int] = (50, 100, 200), replications: int = 100, seed: int = 0,
                 draws: int = 1, fit_on: Literal["training", "evaluation"] = "training",
                 baseline_label: str = "baseline",
                 contributions: Contributions | None = None) -> None:
        if not isinstance(procedures, Mapping):
            if hasattr(procedures, "fit") or not isinstance(procedures, Iterable) \
                    or isinstance(procedures, str):  # was "'OLS' object is not iterable"
                raise ConfigurationError(f"procedures must be a mapping {{label: procedure}} "
                                         f"or a list of procedures, got {procedures!r}")
            labels = [getattr(p, "label", type(p).__name__) for p in procedures]
            if len(set(labels)) != len(labels):
                raise ConfigurationError(f"procedures share labels {labels}; pass a dict "
                                         "{label: procedure} to name them")
            procedures = dict(zip(labels, procedures, strict=True))
        if not procedures:
            raise ConfigurationError("procedures: give at least one procedure")
        if not all(hasattr(evaluation, a) for a in ("columns", "response", "draw")):
            raise ConfigurationError(f"evaluation must be an evaluation distribution (e.g. "
                                     f"rx.MonotoneGP(eligible_set)), got {evaluation!r}")
        self.procedures = dict(procedures)
        for label, p in self.procedures.items():
            if not isinstance(label, str) or not label:
                raise ConfigurationError(f"procedure labels must be non-empty strings, got "
                                         f"{label!r}")
            if not hasattr(p, "fit"):
                raise ConfigurationError(f"procedures[{label!r}] has no fit(sample, rng) method")
            refuse_estimator(p, f"procedures[{label!r}]")
            if getattr(p, "draws", None) is not None:  # 0 gave r̂ = NaN, 1.5 one draw
                whole_number(p.draws, f"procedures[{label!r}].draws", minimum=1)
        for p in [*self.procedures.values(), baseline]:
            if hasattr(p, "validate"):
                p.validate(evaluation.columns, evaluation.response)
        if not hasattr(baseline, "fit"):
            raise ConfigurationError("baseline has no fit(sample, rng) method")
        refuse_estimator(baseline, "baseline")
        if not isinstance(baseline_label, str) or not baseline_label \
                or baseline_label in self.procedures:  # summaries would name two "linear"s
            raise ConfigurationError(f"baseline_label must be a non-empty string other than the "
                                     f"procedure labels {list(self.procedures)}, got "
                                     f"{baseline_label!r}")
        self.evaluation, self.baseline, self.baseline_label = evaluation, baseline, baseline_label
        if isinstance(discrepancies, str) or not isinstance(discrepancies, Iterable) \
                or not all(callable(d) and isinstance(getattr(d, "name", None), str)
                           for d in discrepancies):
            raise ConfigurationError(f"discrepancies must be a sequence of Discrepancy objects "
                                     f"(e.g. [rx.MSE()]) each named by a string, got "
                                     f"{discrepancies!r}")
        self.discrepancies = tuple(discrepancies)
        names = [d.name for d in self.discrepancies]
        if not names or len(set(names)) != len(names):
            raise ConfigurationError(f"discrepancies need distinct names, got {names}")
        if isinstance(n, str | bytes) or not isinstance(n, Iterable):
            raise ConfigurationError(f"n must be positive integers, got {n!r}")
        try:
            sizes = [whole_number(v, "n", minimum=1) for v in n]
        except ConfigurationError:
            raise ConfigurationError(f"n must be positive integers, got {n!r}") from None
        if not sizes:
            raise ConfigurationError(f"n must be positive integers, got {n!r}")
        if len(set(sizes)) != len(sizes):  # a repeat would be dropped without a word
            twice = sorted(repeated(sizes))
            raise ConfigurationError(f"n lists the sample size(s) {twice} more than once: "
                                     f"{list(n)!r}; give each size once")
        self.n = sorted(sizes)
        self.replications = whole_number(replications, "replications")
        if self.replications < 2:
            raise ConfigurationError("replications must be at least 2 (standard errors need 2)")
        self.seed = whole_number(seed, "seed", minimum=0)
        if self.seed > MAX_SEED:  # the run finished, then to_netcdf failed on the attribute
            raise ConfigurationError(f"seed must be at most 2**63 - 1 (results store it as a "
                                     f"64-bit NetCDF attribute), got {seed!r}")
        self.draws = whole_number(draws, "draws", minimum=1)
        if fit_on not in ("training", "evaluation"):
            raise ConfigurationError("fit_on must be 'training' or 'evaluation'")
        self.fit_on = fit_on
        if contributions is not None:
            missing = [p for p in (contributions.full, *contributions.submodels.values())
                       if p not in self.procedures]
            if missing:
                raise ConfigurationError(f"contributions name procedure(s) {missing} that the "
                                         f"study does not run; procedures are {self.labels}")
        self.contributions = contributions

    # -- configuration --------------------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        """Procedure labels, in order (the ``procedure`` coordinate of the results)."""
        return list(self.procedures)

    def procedure_draws(self, label: str) -> int:
        """Training samples per pseudo-truth and n that a procedure is fitted on.

        The study's ``draws``, capped by the procedure's own ``draws`` attribute; 1 when
        fitting on the evaluation set (``fit_on="evaluation"``).

        Parameters
        ----------
        label : str
            A procedure label.

        Returns
        -------
        int
            The number of fits per pseudo-truth and n.

        Examples
        --------
        >>> import restrictiveness as rx
        >>> dear = rx.OLS("y ~ x")
        >>> dear.draws = 1  # e.g. an expensive language-model procedure
        >>> three = rx.Study(study.evaluation, {"cheap": rx.OLS("y ~ x"), "dear": dear},
        ...                  baseline=rx.Constant(), draws=3)
        >>> three.procedure_draws("cheap"), three.procedure_draws("dear")
        (3, 1)
        """
        own = getattr(self.procedures[label], "draws", None)
        k = self.draws if own is None else min(int(own), self.draws)
        return 1 if self.fit_on == "evaluation" else k

    def configuration(self) -> dict:
        """Describe the study for the results' attributes (JSON-serialisable).

        A checkpoint resumes only a study with the same configuration.

        Returns
        -------
        dict
            The ``repr`` of the evaluation distribution, procedures, baseline and discrepancies,
            and ``n``, ``replications``, ``seed``, ``draws`` and ``fit_on``.

        Examples
        --------
        >>> config = study.configuration()
        >>> config["procedures"]
        {'linear': "OLS(formula='y ~ x')", 'quadratic': "OLS(formula='y ~ x + I(x**2)')"}
        >>> config["n"], config["replications"], config["seed"]
        ([10, 20], 4, 0)
        """
        return {
            "evaluation": repr(self.evaluation),
            "procedures": {k: repr(v) for k, v in self.procedures.items()},
            "baseline": {self.baseline_label: repr(self.baseline)},
            "discrepancies": [repr(d) for d in self.discrepancies],
            "n": self.n, "replications": self.replications, "seed": self.seed,
            "draws": self.draws, "fit_on": self.fit_on,
        }

    def _open_checkpoint(self, checkpoint, resume_other_versions: bool):
        from .checkpoint import Checkpoint

        # the code of every object the run names, not only their reprs (an edited fit under
        # an unchanged repr would mix two codes' replications)
        return Checkpoint(checkpoint, self.configuration(), resume_other_versions,
                          code=[self.evaluation, self.baseline, *self.procedures.values(),
                                *self.discrepancies])

    def finished(self, checkpoint, resume_other_versions: bool = False) -> list[int]:
        """The replications ``checkpoint`` already holds for this study: those a run given it
        does not compute again (a dry run counts the others).

        Parameters
        ----------
        checkpoint : str or Path
            A checkpoint directory; one that does not exist yet (or holds no ``study.json``)
            holds none, and is not created.
        resume_other_versions : bool
            As for :meth:`run`.

        Returns
        -------
        list of int
            Finished replications, in order.

        Raises
        ------
        CheckpointError
            The checkpoint was written by another study (or other versions or code), as
            :meth:`run` would raise.

        Examples
        --------
        >>> import tempfile
        >>> study.finished(tempfile.mkdtemp() + "/not-yet")
        []
        """
        from pathlib import Path

        if not (Path(checkpoint) / "study.json").exists():
            return []
        store = self._open_checkpoint(checkpoint, resume_other_versions)
        try:
            return sorted(m for m in store.done() if 0 <= m < self.replications)
        finally:
            store.close()

    def memory_estimate(self) -> int:
        """Lower bound on the bytes one replication needs.

        The evaluation distribution's draw plus the hungriest procedure's fit at the largest n,
        as each reports with ``memory_bytes``; :meth:`run` refuses, before any work, a run
        whose workers together would need more than the free memory.

        Returns
        -------
        int
            Bytes; 0 when neither the evaluation distribution nor any procedure reports its
            needs.

        Examples
        --------
        GP regression needs two 20 × 20 float64 matrices at the largest n = 20 (6,400 bytes),
        on top of the evaluation distribution's draw:

        >>> import restrictiveness as rx
        >>> gp = rx.Study(study.evaluation, {"GP": rx.GPRegression()}, baseline=rx.Constant(),
        ...               n=[10, 20])
        >>> gp.memory_estimate() - study.memory_estimate()
        6400
        """
        need = self.evaluation.memory_bytes(self.n, self.draws) \
            if hasattr(self.evaluation, "memory_bytes") else 0
        fits = [p.memory_bytes(max(self.n)) for p in [*self.procedures.values(), self.baseline]
                if hasattr(p, "memory_bytes")]
        return int(need) + max(fits, default=0)

    # -- execution ------------------------------------------------------------------------
    def run(self, n_jobs: int | None = 1, progress: bool | None = None,
            replications: Sequence[int] | None = None, checkpoint=None,
            backend: Literal["processes", "dask"] = "processes", client=None,
            concurrency: int | None = None, requests_per_minute: float | None = None,
            resume_other_versions: bool = False, worker_timeout: float = 60.0,
            fit_timeout: float | None = None):
        """Run every replication and return :class:`~restrictiveness.engine.results.Results`.

        Parameters
        ----------
        n_jobs : int or None
            Worker processes (None or -1: all cores; 1: serial, in-process and debuggable).
        progress : bool, optional
            Show a progress bar (default: when standard error is a terminal).
        replications : sequence of int, optional
            Run only these replication indices (as a distributed run does).
        checkpoint : str or Path, optional
            Directory recording each finished replication; a rerun with the same configuration
            skips them, and concurrent runs share the work (see
            :mod:`restrictiveness.engine.checkpoint`).
        backend : {"processes", "dask"}
            A local process pool, or a ``dask.distributed`` cluster (``client``: the user's
            client, e.g. for a SLURM or Kubernetes cluster; default a local cluster). Results are
            identical either way. The local cluster's workers import the calling script again,
            so its run must be under an ``if __name__ == "__main__":`` guard (refused
            otherwise); a procedure that ends its worker's process fails the run at once,
            naming it. A local cluster that cannot start fails the run with
            :class:`~restrictiveness.ExecutionError` saying why; at the end of the run, it gets
            10 s to close before the worker processes left are killed (with a
            ``RuntimeWarning``; the results are returned). On hangs: a worker that stays
            connected but is frozen (its process stopped, e.g. by ``SIGSTOP``, mid-fit) fails
            the run with :class:`~restrictiveness.ExecutionError` naming it once it has not
            been heard from for ``fit_timeout`` plus 34 s (4 s to stop a fit, 30 s of grace),
            with ``fit_timeout`` set. Without ``fit_timeout``, fits run in the worker's own
            process, which may be silent for as long as one takes, so only dask's bound
            applies: the scheduler drops a worker it has not heard from for its
            ``worker-ttl`` (config ``distributed.scheduler.worker-ttl``, 5 minutes by
            default, never if unset); the run's own local cluster then fails the run naming
            the replication, and a ``client``'s cluster computes it on another worker. A fit
            that never returns (its worker still heard from) holds the run for ever. The
            process pool keeps the same bound: under ``fit_timeout``, a worker process frozen
            (stopped, or stuck outside the fits) fails the run with
            :class:`~restrictiveness.ExecutionError` naming it (its process id, replication
            and procedure) once it has not been heard from for ``fit_timeout`` plus 34 s, and
            is killed; without ``fit_timeout`` a fit runs in the worker's process and may take
            any time, so a frozen worker, like a fit that never returns, holds the run for
            ever.
        client : distributed.Client, optional
            For ``backend="dask"`` only (refused with ``"processes"``).
        concurrency : int, optional
            Fit I/O-bound procedures (language-model procedures) on this many threads in this
            process, beside the other procedures' workers (see
            :mod:`restrictiveness.engine.concurrency`); results are identical to a serial run.
        requests_per_minute : float, optional
            Limit on model requests per minute, for fits run in this process (serially or on
            the ``concurrency`` threads) and in the processes it forks for ``fit_timeout``,
            which share its schedule.
        resume_other_versions : bool
            Resume a checkpoint written under other package versions or other code (this
            package's files, or the module file of a class the study names, such as your own
            procedure's, edited since; default: refuse).
        worker_timeout : float
            ``backend="dask"``: seconds without any connected worker before the run fails with
            :class:`~restrictiveness.ExecutionError` (dask alone would wait for ever).
        fit_timeout : float, optional
            Seconds each procedure's fit (with the scoring of its predictions) may take; a fit
            that takes longer is stopped and recorded as a failed fit ("timed out after N s")
            under the failure protocol, and the run goes on. To be stopped for real, fits then
            run in a child process forked by whichever process runs the replication (this one
            when serial, a pool or dask worker otherwise; one fork per replication, tens of
            milliseconds), which is stopped when a fit overruns (asked first, so that the fit's
            clean-up runs, then killed with whatever it started within 2 s); a new child goes
            on with the next fit. The other fits' numbers are those of a run
            without a limit, on any backend. Each pseudo-truth draw and each of the baseline's
            fits gets the same limit (in a child too); as neither has a fallback (and dropping
            a replication would select pseudo-truths by how hard they are), one that takes
            longer stops the run with :class:`~restrictiveness.ExecutionError` or
            :class:`~restrictiveness.BaselineError` naming it (finished replications stay in
            the checkpoint). Not with ``concurrency`` for I/O-bound procedures: their fits
            run on threads, which cannot be stopped (they bound their own requests and
            programs). Time numba spends compiling kernels in the child does not count (see
            :mod:`restrictiveness.engine.timeouts`). A checkpoint keeps a timed-out fit as
            failed when resumed with another limit. It also bounds how long a frozen worker
            holds the run, on the pool and on dask (see ``backend``). Default: no limit.

        Returns
        -------
        Results
            Losses of every procedure and the baseline by discrepancy, n and replication, with
            the estimates derived from them.

        Raises
        ------
        StudyInterrupted
            On Ctrl-C: the workers are stopped at once and the finished replications are in
            the checkpoint. Ctrl-C stops Python code: serially (``n_jobs=1``) without
            ``fit_timeout`` the fits run in this process, and one stuck in compiled code that
            never returns to the interpreter (a numba kernel's endless loop, a C extension's)
            or that catches ``KeyboardInterrupt`` itself cannot be stopped (only killing the
            process ends it). Run a procedure that may hang so with ``fit_timeout`` (its fits
            run in a child process, which is killed) or ``n_jobs`` of 2 or more (a worker that
            does not stop when asked is killed within about 5 s).
        BaselineError
            The baseline failed to fit a sample, or took longer than ``fit_timeout``.
        ExecutionError
            A worker died, a worker froze under ``fit_timeout``, or a pseudo-truth draw took
            longer than ``fit_timeout``; on dask, every worker left for ``worker_timeout``, or
            the local cluster could not start.

        Warns
        -----
        FailureWarning
            When fits failed or predictions were replaced by the baseline's (the
            :meth:`Results.failure_report
            <restrictiveness.engine.results.Results.failure_report>`).
        Warning
            What the procedures, the baseline and the evaluation distribution raise, here,
            also when they run in worker processes (``n_jobs``, dask, ``fit_timeout``): the
            same warnings, in the same order (by replication) as a serial run, under this
            process's filters (:mod:`restrictiveness.engine.warning_relay`). (Units on the
            threads of a dask cluster in this process warn directly, in the threads' order.)

        Examples
        --------
        The same seed gives the same numbers, whichever replications run where:

        >>> res = study.run(progress=False)
        >>> res.restrictiveness.sel(procedure="linear", discrepancy="mse").round(3).values
        array([0.266, 0.231])
        >>> half = study.run(replications=[2, 3], progress=False)
        >>> bool((half.dataset["loss"] == res.dataset["loss"].sel(replication=[2, 3])).all())
        True

        A procedure that never returns is stopped after ``fit_timeout`` seconds and shows as
        failed; the other procedures' numbers are unchanged:

        >>> import time, warnings
        >>> import restrictiveness as rx
        >>> class Stuck(rx.Procedure):
        ...     def fit(self, sample, rng):
        ...         time.sleep(10 ** 6)
        >>> stuck = rx.Study(study.evaluation, {**study.procedures, "stuck": Stuck()},
        ...                  baseline=rx.Constant(), n=study.n, replications=2)
        >>> with warnings.catch_warnings(record=True):
        ...     bounded = stuck.run(fit_timeout=1, progress=False)
        >>> print(bounded.failure_report())  # doctest: +ELLIPSIS
        the baseline's ... stuck failed in 4 of 4 fits ... fit: timed out after 1 s (fit_timeout)...
        >>> bool((bounded.dataset["loss"].sel(procedure="linear", replication=[0, 1])
        ...       == res.dataset["loss"].sel(procedure="linear", replication=[0, 1])).all())
        True
        """
        from .results import Results

        # a range until the memory is checked (M = 10**12 was a MemoryError listing it)
        reps: Sequence[int] = range(self.replications) if replications is None \
            else self._replication_indices(replications)
        if not isinstance(resume_other_versions, bool | np.bool_):  # bool("no") is True
            raise ConfigurationError(f"resume_other_versions must be True or False, got "
                                     f"{resume_other_versions!r}")
        # warnings once, from run_units
        self._check_shipping(n_jobs, backend, concurrency, requests_per_minute, client, progress,
                             fit_timeout, worker_timeout, warn=False)
        workers = _worker_count(n_jobs, len(reps))
        # a user's cluster has its own memory; the results are held here whatever the backend
        local = backend == "processes" or client is None
        check_memory(self, workers if local else 0, replications=len(reps))
        finished: dict[int, ReplicationRecord] = {}
        store = None
        try:
            if checkpoint is not None:
                store = self._open_checkpoint(checkpoint, resume_other_versions)
                _warn_hidden_state(self, store.path)
                wanted = set(reps)
                finished.update({m: r for m, r in store.done().items() if m in wanted})
            options = dict(n_jobs=n_jobs, progress=progress, backend=backend, client=client,
                           concurrency=concurrency, requests_per_minute=requests_per_minute,
                           worker_timeout=worker_timeout, fit_timeout=fit_timeout)
            self._run_missing(reps, finished, store, options)
        except BaseException as exc:
            # (any error: C code can turn an interrupt into another one, see note_interrupt)
            if isinstance(exc, StudyInterrupted) or not is_interrupt(exc):
                raise
            # (a Ctrl-C while the checkpoint opens has no store yet, but one was given: the
            # message must not say to pass one)
            raise StudyInterrupted(len(finished), len(reps),
                                   None if checkpoint is None else str(checkpoint)) from None
        finally:
            if store is not None:
                store.close()
        res = Results.from_records(self, [finished[m] for m in reps])
        report = res.failure_report()
        if report:
            warnings.warn(report, FailureWarning, stacklevel=2)
        return res

    def _run_missing(self, reps: Sequence[int], finished: dict, store, options: dict) -> None:
        """Compute the replications not in ``finished``. With a checkpoint, each is claimed
        before it starts; those another run claimed are awaited and loaded (or computed here
        if that run stopped without them)."""
        def keep(record: ReplicationRecord) -> None:
            if store is not None:
                store.save(record)
            finished[record.replication] = record

        todo = [m for m in reps if m not in finished]
        while todo:
            self.run_units(todo, on_record=keep,
                           claim=None if store is None else store.claim, **options)
            if store is None:
                return
            todo = []
            for m in (m for m in reps if m not in finished):
                record = store.wait_for(m)
                if record is None:
                    todo.append(m)
                else:
                    finished[m] = record

    def run_units(self, replications: Sequence[int], n_jobs: int | None = 1,
                  progress: bool | None = None, on_record=None,
                  backend: Literal["processes", "dask"] = "processes",
                  client=None, concurrency: int | None = None,
                  requests_per_minute: float | None = None,
                  claim: Callable[[int], bool] | None = None,
                  worker_timeout: float = 60.0,
                  fit_timeout: float | None = None) -> list[ReplicationRecord]:
        """Run the given replications and return their records, in the order given.

        The building block of :meth:`run` (which adds checkpoints and assembles
        :class:`~restrictiveness.engine.results.Results`); records are what checkpoints store
        and :meth:`Results.from_records
        <restrictiveness.engine.results.Results.from_records>` assembles.

        Parameters
        ----------
        replications : sequence of int
            Replication indices to run.
        n_jobs : int or None
            Worker processes, as in :meth:`run`.
        progress : bool, optional
            Show a progress bar (default: when standard error is a terminal).
        on_record : callable, optional
            ``on_record(record)`` is called in this process as each replication finishes (a
            checkpoint saves it there).
        backend : {"processes", "dask"}
            ``"dask"`` submits the units to a ``dask.distributed`` client (``client``, or a
            local cluster of ``n_jobs`` single-threaded worker processes).
        client : distributed.Client, optional
            For ``backend="dask"``.
        concurrency : int, optional
            As in :meth:`run`.
        requests_per_minute : float, optional
            As in :meth:`run`.
        claim : callable, optional
            ``claim(m)`` is asked just before replication ``m`` starts; False skips it (another
            run computes it).
        worker_timeout : float
            As in :meth:`run`.
        fit_timeout : float, optional
            As in :meth:`run`.

        Returns
        -------
        list of ReplicationRecord
            The records of the replications run here (all of them unless ``claim`` refused
            some), in the order of ``replications``.

        Examples
        --------
        >>> records = study.run_units([3, 1], claim=lambda m: m != 1)
        >>> [r.replication for r in records]
        [3]
        >>> records[0].loss.shape  # (procedure, discrepancy, n, draw)
        (2, 1, 2, 1)
        """
        from tqdm.auto import tqdm

        workers = _worker_count(n_jobs, len(replications))
        self._check_shipping(workers, backend, concurrency, requests_per_minute, client,
                             progress, fit_timeout, worker_timeout)
        limiter = RateLimiter(requests_per_minute) if requests_per_minute is not None else None
        show = sys.stderr.isatty() if progress is None else bool(progress)
        bar = tqdm(total=len(replications), desc="replications", disable=not show)
        out: dict[int, ReplicationRecord] = {}

        def finish(m: int, record: ReplicationRecord) -> None:
            out[m] = record
            if on_record is not None:
                on_record(record)
            bar.update()

        io = [label for label, p in self.procedures.items() if getattr(p, "io_bound", False)]
        try:
            if concurrency is not None and io and replications:
                # Threads interleave the fits of many replications, so claim them all first.
                mine = [m for m in replications if claim is None or claim(m)]
                # one BLAS thread for the fits of this process, as run_unit does in workers
                with one_thread():
                    # (fit_timeout was refused for fits on threads)
                    self._run_threaded(mine, io, workers, backend, client,
                                       int(concurrency), limiter, finish, worker_timeout)
            else:
                with rate_limited(limiter):
                    _dispatch(self, replications, workers, backend, client, finish, claim,
                              worker_timeout, fit_timeout)
        finally:
            bar.close()
            if limiter is not None:
                limiter.close()
        return [out[m] for m in replications if m in out]

    def _replication_indices(self, replications) -> list[int]:
        """Distinct replication indices in ``range(self.replications)``: an int, a negative
        or fractional index, an empty list or a repeat failed inside numpy or was run twice."""
        if isinstance(replications, str) or not isinstance(replications, Iterable):
            raise ConfigurationError(f"replications must be a sequence of replication indices, "
                                     f"got {replications!r}")
        reps = list(replications)
        if not reps or len(set(reps)) != len(reps) or not all(
                is_whole(m) and 0 <= m < self.replications for m in reps):
            raise ConfigurationError(f"replications must be distinct indices in "
                                     f"0..{self.replications - 1}, got {reps!r}")
        return [int(m) for m in reps]

    def _check_shipping(self, n_jobs, backend, concurrency, requests_per_minute,
                        client=None, progress=None, fit_timeout=None, worker_timeout=60.0,
                        warn=True) -> None:
        """Refuse, before any work, a run that cannot be carried out as asked (and warn, unless
        ``warn`` is false, of an option that has no effect)."""
        if backend not in ("processes", "dask"):
            raise ConfigurationError("backend must be 'processes' or 'dask'")
        if isinstance(worker_timeout, bool) or not isinstance(worker_timeout, numbers.Real) \
                or not float(worker_timeout) > 0:
            # checked whatever the backend: -1 or "60" passed unread with processes (and "60"
            # failed with a bare TypeError on dask, True waited 1 s)
            raise ConfigurationError(f"worker_timeout must be a positive number of seconds, got "
                                     f"{worker_timeout!r}")
        if client is not None and not hasattr(client, "submit"):  # e.g. an address string
            raise ConfigurationError(f"client must be a dask.distributed Client (e.g. "
                                     f"Client('tcp://host:8786')), got {client!r}")
        if client is not None and backend != "dask":  # ran on the local pool without a word
            raise ConfigurationError("a dask client was given with backend='processes', which "
                                     "runs on a local process pool and would not use it; pass "
                                     "backend='dask' to run on the client's cluster, or drop "
                                     "client")
        if progress is not None and not isinstance(progress, bool):  # bool('no') is True
            raise ConfigurationError(f"progress must be True, False or None, got {progress!r}")
        if concurrency is not None and (not isinstance(concurrency, (int, np.integer))
                                        or isinstance(concurrency, bool) or concurrency < 1):
            raise ConfigurationError(f"concurrency must be a positive integer (threads for "
                                     f"I/O-bound fits) or None, got {concurrency!r}")
        if requests_per_minute is not None and not is_positive(requests_per_minute):
            # True was 1 a minute, "60" and 1e400 (inf, no limit) went through as well
            raise ConfigurationError(f"requests_per_minute must be a positive, finite number "
                                     f"(None: no limit), got {requests_per_minute!r}")
        n_jobs = _worker_count(n_jobs, 2)
        io = {label for label, p in self.procedures.items() if getattr(p, "io_bound", False)}
        if warn and not io and concurrency is not None:
            # a user asking for threads for fits they never apply to would otherwise get none,
            # without a word (requests_per_minute still paces any fit that calls request_slot)
            warnings.warn("concurrency applies to I/O-bound procedures (io_bound = True: the "
                          "language-model procedures), and this study has none, so it has no "
                          "effect; the fits run on n_jobs worker processes", RuntimeWarning,
                          stacklevel=user_stacklevel())
        threaded = io if concurrency is not None else set()
        if check_timeout(fit_timeout) is not None and threaded:
            raise ConfigurationError(
                f"fit_timeout cannot stop the fits of {sorted(threaded)}: with concurrency=N "
                "they run on threads, and a thread cannot be killed (these procedures bound "
                "their own requests and programs). Drop fit_timeout, or drop concurrency to "
                "fit them in processes under the limit")
        remote = backend == "dask" or n_jobs > 1
        if requests_per_minute is not None and remote and io - threaded:
            raise ConfigurationError(
                "requests_per_minute limits requests made in this process, but the language-"
                f"model procedures {sorted(io)} would run in worker processes; pass "
                "concurrency=N (they then run on threads here) or n_jobs=1")
        if remote:
            shipped: dict[str, object] = {f"procedure {label!r}": p
                                          for label, p in self.procedures.items()
                                          if label not in threaded}
            if shipped:
                shipped.update({f"baseline {self.baseline_label!r}": self.baseline,
                                "the evaluation distribution": self.evaluation,
                                "the discrepancies": self.discrepancies})
            check_picklable(shipped, _PICKLE_REMEDY)

    def _run_threaded(self, replications, io, n_jobs, backend, client, threads, limiter,
                      finish, worker_timeout) -> None:
        """I/O-bound fits on threads here, the rest through the usual backend (module
        :mod:`~restrictiveness.engine.concurrency`)."""
        cpu_labels = [label for label in self.labels if label not in io]
        contexts: KeyedOnce[int, ReplicationContext] = KeyedOnce(
            lambda m: replication_context(self, m))

        def tasks(m):
            return [(label, c, k) for c in range(len(self.n)) for label in io
                    for k in range(self.procedure_draws(label))]

        def merge(m, outcomes, cpu_record):
            part = (cpu_labels, cpu_record) if cpu_record is not None else None
            record = assemble_record(self, contexts.get(m), outcomes, part)
            contexts.drop(m)
            return record

        cpu, pool = None, None
        if cpu_labels:
            sub = _subset(self, cpu_labels)
            if backend != "dask" and n_jobs > 1:  # forked before the I/O threads start
                pool = _start_pool(n_jobs, now=True)

            def cpu(done):
                _dispatch(sub, replications, n_jobs, backend, client, done, None,
                          worker_timeout, pool=pool)

        try:
            run_with_threads(replications, tasks,
                             lambda m, key: fit_outcome(self, contexts.get(m), *key), merge,
                             finish, threads, cpu=cpu, limiter=limiter)
        except BaseException:
            if pool is not None:  # the CPU part may not have started (or ended) with it
                _stop_pool(pool)
            raise


_PICKLE_REMEDY = ("Make it picklable (for a language model use rx.llm.OpenAIChat or "
                  "rx.llm.AnthropicChat, or a module-level function or class instead of a "
                  "lambda, closure or SDK client object), run serially (n_jobs=1), or fit "
                  "language-model procedures on threads in this process with concurrency=N.")


def _dispatch(study: Study, replications: Sequence[int], workers: int, backend: str, client,
              finish: Callable, claim: Callable[[int], bool] | None,
              worker_timeout: float, fit_timeout: float | None = None,
              pool: ProcessPoolExecutor | None = None) -> None:
    """Run the units of ``study`` serially, on a process pool (``pool`` if given, started by
    :func:`_start_pool`) or on dask; ``finish(m, record)`` is called in the calling thread as
    each completes (replications ``claim`` refuses are skipped). The workers' warnings are
    raised here, in the order of ``replications``, as a serial run raises them (module
    :mod:`~restrictiveness.engine.warning_relay`)."""
    if backend != "dask" and workers == 1:
        for m in replications:
            if claim is None or claim(m):
                finish(m, run_unit(study, m, fit_timeout))
        return
    order = InOrder()
    filters = shippable(caller_filters())

    def claim_next(m: int) -> bool:
        if claim is None or claim(m):
            order.expect(m)
            return True
        return False

    def done(m: int, result: tuple) -> None:
        record, relayed = result
        order.put(m, relayed)  # raised during the unit serially: before its record is kept
        finish(m, record)

    try:
        if backend == "dask":
            _run_dask(study, replications, workers, client, done, claim_next, worker_timeout,
                      fit_timeout, filters)
        else:
            _run_pool(study, replications, workers, done, claim_next, fit_timeout, filters,
                      pool)
    except BaseException as exc:
        order.flush(exc)
        raise


def _warn_hidden_state(study: Study, path) -> None:
    """Warn about procedures whose repr, the checkpoint's only view of them, hides their
    state: ``Shrink(a=0.5)`` storing ``a`` as ``self._a`` shows as ``Shrink()``, and a
    checkpoint of it would silently feed its records to a run with ``Shrink(a=1.0)``."""
    items = {**study.procedures, study.baseline_label: study.baseline}
    hidden = []
    for label, p in items.items():
        shown = type(p).__repr__
        if shown is object.__repr__ or (shown is Procedure.__repr__ and any(
                k.startswith("_") for k in getattr(p, "__dict__", {}))):
            hidden.append(label)
    if hidden:
        warnings.warn(f"checkpoint {path}: the repr of {hidden} does not show all of its "
                      "attributes, and the repr is all a checkpoint knows of a procedure: "
                      "records of the same class with other settings would be resumed as "
                      "this study's. Give it a __repr__ that shows its settings",
                      CheckpointWarning, stacklevel=3)


def _worker_count(n_jobs: int | None, units: int) -> int:
    """Workers for ``units`` replications: ``n_jobs`` (None or -1: the usable cores)."""
    if n_jobs is None or n_jobs == -1:
        n_jobs = usable_cpus()
    elif not isinstance(n_jobs, int | np.integer) or isinstance(n_jobs, bool) or n_jobs < 1:
        raise ConfigurationError(f"n_jobs must be a positive number of workers, or -1 (or None) "
                                 f"for all cores; got {n_jobs!r}")
    return max(1, min(int(n_jobs), units))


def _exit_worker(signum, frame) -> None:
    # The first SIGTERM starts the unwind; a second one would interrupt the clean-up it runs
    # (the executor sends every worker another when it sees the first one exit).
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise WorkerTerminated(128 + signum)


#: This process among all (a pid alone repeats across hosts and containers; a fork inherits
#: the token but not the pid).
_PROCESS_TOKEN = uuid.uuid4().hex


def _this_process() -> tuple[str, int]:
    return _PROCESS_TOKEN, os.getpid()


#: In a worker of a local dask cluster, or of a pool under fit_timeout: the file naming the
#: step it runs (see _note_step).
_STEP_NOTE: str | None = None


def _note_step(step: tuple) -> None:
    """Record the step a local dask or pool worker begins, ``("truth", m, None)``,
    ``("baseline", m, n)`` or ``(label, m, n)``: a fit that ends the worker's process cannot
    say so, and the caller reads it back to name the procedure (:func:`_ended_step`)."""
    if _STEP_NOTE is not None:
        # a note that cannot be written (a full disk) only costs the name in a later error
        with contextlib.suppress(OSError), open(_STEP_NOTE, "w", encoding="utf-8") as f:
            f.write(json.dumps(list(step)))


def _ended_step(notes: str | None, m: int) -> str:
    """The step replication ``m`` was running when its worker died or froze, from the notes of
    :func:`_note_step` (empty when unknown)."""
    if notes is None:
        return ""
    for name in os.listdir(notes):
        try:
            with open(os.path.join(notes, name), encoding="utf-8") as f:
                what, replication, n = json.load(f)
        except (OSError, ValueError, TypeError):  # a note the death cut short
            continue
        if replication == m:
            if what == "truth":
                return ", in its pseudo-truth draw"
            if what == "baseline":
                return f", in the baseline's fit (n={n})"
            return f", in the fit or predictions of procedure {what!r} (n={n})"
    return ""


def _remote_unit(study: Study, m: int, fit_timeout: float | None, filters: list[tuple],
                 caller: tuple[str, int], notes: str | None = None
                 ) -> tuple[ReplicationRecord, list]:
    """:func:`run_unit` in a worker process (pool or dask), with the warnings it raised under
    the caller's ``filters``, for the caller to raise. A dask worker thread in the caller's
    own process (``caller``: :func:`_this_process` there) warns there already, and must not
    swap the process's filters under the caller's threads. ``notes``: the directory of
    :func:`_note_step` (of a local dask cluster, or of a pool under ``fit_timeout``)."""
    if _this_process() == caller:
        return run_unit(study, m, fit_timeout), []
    if notes is not None:
        global _STEP_NOTE
        _STEP_NOTE = os.path.join(notes, str(os.getpid()))
    return collected(lambda: run_unit(study, m, fit_timeout), filters)


def _pool_unit(study: Study, m: int, fit_timeout: float | None, filters: list[tuple],
               caller: tuple[str, int], notes: str | None = None
               ) -> tuple[ReplicationRecord, list]:
    """:func:`_remote_unit` in a pool worker, which exits once a SIGTERM has unwound the unit:
    the executor would report the exception and start the next queued replication. A worker
    with a heartbeat (:class:`_Heartbeats`) says which replication it runs."""
    if _HEARTBEAT is not None:
        _HEARTBEAT[0][_HEARTBEAT[1] + _Heartbeats.REPLICATION] = m
    try:
        return _remote_unit(study, m, fit_timeout, filters, caller, notes)
    except WorkerTerminated as exc:
        os._exit(int(exc.code or 1))
    finally:
        if _HEARTBEAT is not None:
            _HEARTBEAT[0][_HEARTBEAT[1] + _Heartbeats.REPLICATION] = -1


#: Seconds between a pool worker's heartbeats (:class:`_Heartbeats`).
BEAT_INTERVAL = 0.5
#: In a pool worker with a heartbeat: the shared array and the start of this worker's slot.
_HEARTBEAT: tuple[Any, int] | None = None


class _Heartbeats:
    """Shared memory in which the workers of a process pool under ``fit_timeout`` say they are
    alive, for :func:`_run_pool` to see one that is frozen (its process stopped, e.g. by
    ``SIGSTOP``): the fits run in processes of their own, so a worker's own process only waits
    for them, and a thread of it beats every :data:`BEAT_INTERVAL` seconds whatever a fit does.

    Each worker claims a slot as it starts (:func:`_init_worker`) and keeps there its process
    id, its count of beats, and the replication it runs (-1: none). The caller tracks when
    each count last changed on its own clock (:meth:`silent`). Forked children of a worker
    (its fits) have no beating thread, so a fit cannot beat for a frozen worker."""

    PID, BEATS, REPLICATION, SIZE = 0, 1, 2, 3

    def __init__(self, workers: int) -> None:
        ctx = _pool_context()
        self.slots = ctx.RawArray("q", workers * self.SIZE)  # no lock: one writer per field
        self.claimed = ctx.Value("i", 0)
        self.heard: dict[int, tuple[int, float]] = {}
        self.checked = time.monotonic()

    def silent(self, after: float) -> tuple[int, int, float] | None:
        """``(pid, replication, seconds)`` of a worker not heard from for ``after`` seconds of
        this process's watch, else None. Time this process did not watch (itself stopped, or
        busy saving a record) does not count: its workers, stopped with it, beat again."""
        now = time.monotonic()
        if now - self.checked > 4 * BEAT_INTERVAL:
            self.heard = {}
        self.checked = now
        # not the count of claimed slots: reading it takes a lock a frozen worker may hold
        for start in range(0, len(self.slots), self.SIZE):
            if not self.slots[start + self.PID]:  # not claimed yet
                continue
            count = self.slots[start + self.BEATS]
            if start not in self.heard or self.heard[start][0] != count:
                self.heard[start] = (count, now)
            quiet = now - self.heard[start][1]
            if quiet >= after:
                return (self.slots[start + self.PID], self.slots[start + self.REPLICATION],
                        quiet)
        return None

    def forget(self, pid: int) -> None:
        """Stop watching the worker ``pid``, which has exited."""
        for start in range(0, len(self.slots), self.SIZE):
            if self.slots[start + self.PID] == pid:
                self.slots[start + self.PID] = 0


def _beat(slots, at: int) -> None:
    """A pool worker's heartbeat thread: count beats at ``slots[at]``."""
    while True:
        slots[at] += 1
        time.sleep(BEAT_INTERVAL)


def _init_worker(slots=None, claimed=None) -> None:
    # Workers leave Ctrl-C to the parent, which stops them; otherwise every worker of a
    # terminal's process group prints its own KeyboardInterrupt traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The parent stops the pool with SIGTERM (and SIGKILL seconds later): the worker exits
    # through its clean-up, so that, e.g., the sandbox removes the temporary directory of a
    # program it was running (the default action left one per worker on Ctrl-C). It replaces
    # the command line's handler, inherited through the fork.
    signal.signal(signal.SIGTERM, _exit_worker)
    # A parent killed outright (SIGKILL, the OOM killer) cannot stop its workers, and they
    # would wait for work for ever, holding their memory: they exit once it is gone.
    parent = os.getppid()
    threading.Thread(target=exit_when_orphaned, args=(parent,), daemon=True,
                     name="rx-parent-watch").start()
    if slots is not None:  # a pool under fit_timeout watches its workers (_Heartbeats)
        with claimed.get_lock():
            start, claimed.value = claimed.value * _Heartbeats.SIZE, claimed.value + 1
        if start < len(slots):  # the pool starts no more workers than slots
            global _HEARTBEAT
            slots[start + _Heartbeats.PID] = os.getpid()
            slots[start + _Heartbeats.REPLICATION] = -1
            _HEARTBEAT = (slots, start)
            threading.Thread(target=_beat, args=(slots, start + _Heartbeats.BEATS),
                             daemon=True, name="rx-heartbeat").start()


def _pool_context():
    # fork: workers inherit imported modules and compiled kernels, and user scripts need no
    # __main__ guard; spawn where fork does not exist.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def _start_pool(workers: int, now: bool = False, beats: _Heartbeats | None = None
                ) -> ProcessPoolExecutor:
    """A process pool; with ``now``, its workers are all started before this returns; with
    ``beats``, they beat there.

    A worker forked while another thread holds a lock below Python (OpenSSL's, as an I/O
    thread builds its HTTPS client) or a module's import lock inherits it held, and waits for
    it for ever; a study with ``concurrency`` therefore forks its workers (``now``) before its
    I/O threads run. (With fork, the pool starts every worker at its first task.)"""
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context(),
                               initializer=_init_worker,
                               initargs=() if beats is None else (beats.slots, beats.claimed))
    if now:
        pool.submit(int).result()
    return pool


def _run_pool(study: Study, replications: Sequence[int], workers: int,
              finish: Callable, claim: Callable[[int], bool] | None,
              fit_timeout: float | None, filters: list[tuple],
              pool: ProcessPoolExecutor | None = None) -> None:
    """Run replications on a local process pool (``pool``, or one started here), two per
    worker in flight (claimed only as they are submitted, so concurrent runs share the rest).
    On any exception, Ctrl-C included, the workers are terminated at once rather than waited
    for.

    Under ``fit_timeout`` the pool started here watches its workers (:class:`_Heartbeats`):
    one not heard from for ``fit_timeout`` plus the time to stop a fit plus
    :data:`FROZEN_GRACE` is frozen (as on dask, :func:`_gather_dask`), and the run fails
    naming it, its replication and the step it was in; before, the run waited for it for
    ever, and the shut-down for one frozen between replications (:func:`_await_workers`
    watches that too). Without ``fit_timeout`` the fits run in the worker's own process,
    which may hold it (and its heartbeat) for as long as a fit takes, so no worker is taken
    for frozen."""
    beats = notes = None
    if pool is None:
        if fit_timeout is not None:
            beats = _Heartbeats(workers)
            notes = tempfile.mkdtemp(prefix="rx-pool-steps-")
        pool = _start_pool(workers, beats=beats)
    pending, running = iter(replications), {}

    def submit_next() -> None:
        for m in pending:
            if claim is None or claim(m):
                running[pool.submit(_pool_unit, study, m, fit_timeout, filters,
                                    _this_process(), notes)] = m
                return

    try:
        for _ in range(2 * workers):
            submit_next()
        while running:
            # in slices, to see a Ctrl-C handled on another thread (WAIT_SLICE), and a frozen
            # worker
            done, _ = wait(running, timeout=WAIT_SLICE, return_when=FIRST_COMPLETED)
            if beats is not None and fit_timeout is not None:
                _fail_if_frozen(beats, fit_timeout, notes)
            for fut in done:
                m = running.pop(fut)
                try:
                    record = fut.result()
                except BrokenProcessPool:
                    # A dead worker breaks every future at once, so which of the replications
                    # in flight killed it is unknown: name them all, not an arbitrary one.
                    flight = sorted([m, *running.values()])
                    which = f"replication {m}" if len(flight) == 1 else \
                        "one of replications " + ", ".join(map(str, flight))
                    raise ExecutionError(
                        f"a worker process died while running {which} (killed, or out of "
                        "memory?); rerun with fewer workers or smaller n") from None
                finish(m, record)
                submit_next()
        if beats is not None and fit_timeout is not None:
            _await_workers(pool, beats, fit_timeout, notes)
    except BaseException:
        _stop_pool(pool)
        raise
    finally:
        if notes is not None:
            shutil.rmtree(notes, ignore_errors=True)
    pool.shutdown()


def _await_workers(pool: ProcessPoolExecutor, beats: _Heartbeats, fit_timeout: float,
                   notes: str | None) -> None:
    """Shut ``pool`` down and wait for its workers to exit, failing on one frozen (by
    :func:`_fail_if_frozen`): a worker stopped between replications never takes the request
    to exit, and ``shutdown()`` waited for it for ever."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    waiting = {p.sentinel: p.pid for p in processes}
    pool.shutdown(wait=False)
    try:
        while waiting:
            for ready in multiprocessing.connection.wait(list(waiting), timeout=WAIT_SLICE):
                beats.forget(waiting.pop(ready))  # gone: silent, and its pid free for reuse
            _fail_if_frozen(beats, fit_timeout, notes)
    except BaseException:
        _end_processes(processes)  # the shut-down pool no longer lists them for _stop_pool
        raise


def _fail_if_frozen(beats: _Heartbeats, fit_timeout: float, notes: str | None) -> None:
    """Kill a pool worker not heard from for longer than a fit may take under ``fit_timeout``
    (plus :data:`FROZEN_GRACE`), and raise :class:`ExecutionError` naming it."""
    frozen = beats.silent(fit_timeout + 2 * timeouts.STOP_GRACE + FROZEN_GRACE)
    if frozen is None:
        return
    pid, m, silent = frozen
    error = _frozen_error(f"the worker process {pid}", [] if m < 0 else [m], notes, silent,
                          fit_timeout, "rerun")
    # stopped, it would take _stop_pool's SIGTERM only once continued
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    raise error


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Terminate a pool's workers now: waiting for the replications they run could take
    minutes, and a shut-down pool would even start the queued ones first."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    _end_processes(processes)


def _end_processes(processes: Sequence) -> None:
    """Terminate pool worker ``processes``, and kill those still running after the time a
    worker needs to stop its fit's process."""
    for p in processes:
        p.terminate()
    # A worker unwinding under fit_timeout gives its fit's process up to twice STOP_GRACE for
    # its clean-up (a staged child's own child); killed sooner, both would skip theirs.
    until = time.monotonic() + 2 * timeouts.STOP_GRACE + 1.0
    for p in processes:
        p.join(timeout=max(0.0, until - time.monotonic()))
        if p.is_alive():
            p.kill()


def _run_dask(study: Study, replications: Sequence[int], workers: int, client,
              finish: Callable, claim: Callable[[int], bool] | None,
              worker_timeout: float, fit_timeout: float | None, filters: list[tuple]) -> None:
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise ImportError("backend='dask' needs dask.distributed: "
                          "pip install 'restrictiveness[dask]'") from exc
    own = client is None
    notes = None  # the local workers' notes of their steps, to name what ended one
    if own:
        _check_main_guard()
        client = _start_local_cluster(Client, LocalCluster, workers)
        notes = tempfile.mkdtemp(prefix="rx-dask-steps-")
    futures = {}
    try:
        for m in replications:
            if claim is None or claim(m):
                futures[client.submit(_remote_unit, study, m, fit_timeout, filters,
                                      _this_process(), notes, pure=False)] = m
        _gather_dask(client, futures, finish, worker_timeout, notes, fit_timeout)
    except BaseException:
        # a client closed with its scheduler has nothing left to cancel, and refuses to: its
        # ClosedClientError replaced the run's error, which says what happened
        with contextlib.suppress(Exception):
            client.cancel(list(futures))
        raise
    finally:
        if own:
            try:
                _close_local_cluster(client)
            finally:
                if notes is not None:
                    shutil.rmtree(notes, ignore_errors=True)


#: Seconds the run's own local dask cluster gets to close (its client, then its nannies and
#: workers) before the worker processes left are killed (stated in :meth:`Study.run`).
CLOSE_TIMEOUT = 10.0


def _start_local_cluster(client_class: Callable, cluster_class: Callable, workers: int):
    """A client of the run's own local cluster of ``workers`` single-threaded worker
    processes, or :class:`ExecutionError` saying what failed: dask's own error was a bare
    ``RuntimeError: Nanny failed to start.``, the cause only in the log above it."""
    cluster = None
    try:
        # no retries: a replication that ended its worker's process ends the next one's too,
        # and dask's three retries (with restarts) took a minute to report it. The scheduler
        # serves its HTTP routes even without a dashboard, on dask's port 8787 by default:
        # with another cluster on the machine, every run warned that the port was taken.
        cluster = cluster_class(n_workers=workers, threads_per_worker=1, processes=True,
                                dashboard_address=None,
                                scheduler_kwargs={"allowed_failures": 0,
                                                  "dashboard_address": "127.0.0.1:0"})
        return client_class(cluster)
    except Exception as exc:  # noqa: BLE001 - whatever dask raised, said in the message
        if cluster is not None:  # started, but no client could connect to it
            with contextlib.suppress(Exception):
                cluster.close(timeout=CLOSE_TIMEOUT)
        why = str(exc).rstrip(".") or type(exc).__name__
        cause = exc.__cause__ or exc.__context__
        if cause is not None:
            why += f" ({type(cause).__name__}: {cause})"
        raise ExecutionError(
            f"backend='dask' could not start its local cluster of {workers} worker "
            f"process{'es' if workers > 1 else ''}: {why}. Check dask's configuration of "
            "its workers (distributed.worker.*, distributed.nanny.*: a preload, a memory "
            "limit, a local directory that cannot be written), that this machine can start "
            "that many processes and has memory for them (try a smaller n_jobs); or start a "
            "cluster yourself and pass client=Client(...), or run with "
            "backend='processes'") from exc


def _close_local_cluster(client) -> None:
    """Close the run's own local cluster within :data:`CLOSE_TIMEOUT` seconds; then kill the
    worker processes left, rather than hang the run's exit (its results are in) on a worker
    that does not stop. Warns if it had to."""
    cluster = client.cluster
    processes = [process for _, process in _local_workers(cluster)]  # a closed nanny forgets
    deadline = time.monotonic() + CLOSE_TIMEOUT
    closed = True
    try:
        client.close(timeout=CLOSE_TIMEOUT)
    except Exception:  # noqa: BLE001 - the cluster is closed (and its workers killed) below
        closed = False
    try:
        cluster.close(timeout=max(1.0, deadline - time.monotonic()))
    except Exception:  # noqa: BLE001 - a timeout, or a close that failed: killed below
        closed = False
    left = _kill_workers(processes)
    if not closed or left:
        warnings.warn(f"the local dask cluster did not close within {CLOSE_TIMEOUT:g} s; its "
                      f"worker processes left were killed ({left} of {len(processes)})",
                      RuntimeWarning, stacklevel=user_stacklevel())


def _local_workers(cluster) -> list[tuple[str | None, Any]]:
    """A local cluster's workers started so far: their addresses (None until connected) and
    processes (dask's ``AsyncProcess``: ``pid``, ``is_alive()``). Empty for a cluster of other
    machines."""
    found = []
    for nanny in list(getattr(cluster, "workers", {}).values()):
        process = getattr(getattr(nanny, "process", None), "process", None)
        if process is not None and hasattr(process, "is_alive"):
            found.append((getattr(nanny, "worker_address", None), process))
    return found


def _kill_workers(processes: Sequence) -> int:
    """Kill those of a local cluster's worker ``processes`` still running (a stopped one
    too), and wait up to 5 s for them to end; how many were running. Dask's thread watching
    each process reaps it (``is_alive()`` is false only then, so its pid is still ours)."""
    left = [p for p in processes if p.is_alive()]
    for p in left:
        with contextlib.suppress(OSError):
            os.kill(p.pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    until = time.monotonic() + 5
    while any(p.is_alive() for p in left) and time.monotonic() < until:
        time.sleep(0.02)
    return len(left)


def _check_main_guard() -> None:
    """Refuse a local dask cluster started from a script's top level without a ``__main__``
    guard.

    Its workers are started by ``spawn``, which imports the script again in each: unguarded,
    each worker ran the study again and tried to start a cluster of its own, and the run
    failed with pages of tracebacks ("bootstrapping phase", "Nanny failed to start"). The
    script's line running now is looked up in its syntax tree; a script that cannot be read
    (an interactive session, a notebook) is not imported again, and passes.
    """
    import ast

    import dask

    method = dask.config.get("distributed.worker.multiprocessing-method", "spawn")
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    name = getattr(getattr(main, "__spec__", None), "name", None) or ""
    # as multiprocessing's spawn: a package's __main__ (python -m restrictiveness) is not
    # imported again, nor is a session without a file
    if method == "fork" or not path or name.endswith(".__main__"):
        return
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>"
                                     and frame.f_globals.get("__name__") == "__main__"):
        frame = frame.f_back
    if frame is None:
        return
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return

    def is_guard(node: ast.AST) -> TypeGuard[ast.If]:
        # any test of __name__ against "__main__" (`... and not args.dry_run`, `in (...)`):
        # refusing a guard written otherwise would stop a script that is right
        if not isinstance(node, ast.If):
            return False
        parts = list(ast.walk(node.test))
        return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in parts)
                and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in parts))

    line = frame.f_lineno
    if any(is_guard(node) and node.body[0].lineno <= line <= (node.body[-1].end_lineno or line)
           for node in ast.walk(tree)):
        return
    raise ConfigurationError(
        f"backend='dask' starts worker processes that import your script {path!r} again, "
        f"and its line {line} would run the study again in each of them: put the script's "
        "work under a guard, `if __name__ == \"__main__\":` (or run with the processes "
        "backend, which needs none)")


#: Seconds of silence, beyond ``fit_timeout`` and the time to stop a fit, after which a dask
#: or pool worker under ``fit_timeout`` counts as frozen (:func:`_gather_dask`,
#: :func:`_run_pool`; :meth:`Study.run` states the sum, 34 s). A loaded machine delays
#: heartbeats by seconds.
FROZEN_GRACE = 30.0


def _gather_dask(client, futures: dict, finish: Callable, worker_timeout: float,
                 notes: str | None = None, fit_timeout: float | None = None) -> None:
    """Deliver dask futures as they finish. Dask waits for ever for workers that are gone; this
    raises :class:`ExecutionError` once no worker has been connected for ``worker_timeout``
    seconds.

    With ``fit_timeout``, the fits run in child processes of the workers, whose own thread
    only waits for them: a worker holding one of the replications that the scheduler has not
    heard from for longer than ``fit_timeout`` plus the time to stop a fit plus
    :data:`FROZEN_GRACE` is frozen (its process stopped, e.g. by ``SIGSTOP``), and the run
    fails naming it. Dask alone waited for the scheduler's ``worker-ttl`` (5 minutes by
    default, for ever if unset) to drop it.

    No call here waits on dask without a bound. A replication that finished on a worker which
    then left before its result was fetched is computed again, by a worker that may never
    come: ``Future.result()`` waited for it for ever (2 of about 100 runs that lost their last
    worker mid-run hung, 7 of 32 with quicker replications). The results are fetched on the
    client's event loop (``as_completed``), and collected here while the workers are counted;
    the count waits for the scheduler's answer at most until the deadline."""
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    # the run's client's loop: without loop=, distributed.wait() and as_completed() take the
    # default client's, and beside a client made with set_as_default=False there was none
    # ("No clients found")
    arriving = as_completed(futures, loop=client.loop, with_results=True, raise_errors=False)
    step = min(1.0, worker_timeout / 4)
    alone_since: float | None = None
    checked = time.monotonic()
    silent_after = None if fit_timeout is None else \
        fit_timeout + 2 * timeouts.STOP_GRACE + FROZEN_GRACE
    heard: dict[str, tuple[float, float]] = {}
    listened = checked
    while not arriving.is_empty():
        if arriving.has_ready():
            fut, result = next(arriving)
            m = futures[fut]
            if fut.status == "error":
                try:
                    fut.result(timeout=worker_timeout)  # raises the unit's own exception
                except KilledWorker as exc:
                    raise ExecutionError(
                        f"a dask worker process died running replication {m}"
                        f"{_ended_step(notes, m)}: the code ended its process (os._exit, a "
                        "signal, a crash), it ran out of memory, or it was frozen (stopped, "
                        "e.g. by SIGSTOP) until the scheduler's worker-ttl dropped it. Run with "
                        "fit_timeout to fit in processes of their own, which names the "
                        "procedure on any cluster (and a frozen worker sooner), or with fewer "
                        "workers or smaller n if memory is short "
                        f"(dask: {exc})") from None
            if fut.cancelled():  # the scheduler was lost, or another caller cancelled it
                reason = getattr(result, "reason", None) or "none given"
                msg = getattr(result, "msg", None)
                raise ExecutionError(
                    f"dask cancelled replication {m} (reason: {reason})"
                    f"{': ' + msg if msg else '.'} Start the scheduler and its workers again "
                    "if they are gone, and rerun (a checkpoint keeps the finished replications)")
            finish(m, result)
            alone_since = None
            continue
        time.sleep(0.02)
        if time.monotonic() - checked < step:
            continue
        checked = time.monotonic()
        # a scheduler that does not answer counts as one without workers, by the deadline
        bound = worker_timeout if alone_since is None else \
            max(step, alone_since + worker_timeout - checked)
        if _dask_workers(client, bound):
            alone_since = None
            # a tenth of the bound apart: the scheduler's answer lists every worker's metrics
            if silent_after is not None and checked - listened >= silent_after / 10:
                listened = checked
                _check_heard(client, futures, heard, silent_after, fit_timeout, notes, step)
            continue
        if alone_since is None:
            alone_since = checked
        if time.monotonic() - alone_since >= worker_timeout:
            raise ExecutionError(
                f"no dask worker has been connected to {client.scheduler.address} for "
                f"{worker_timeout:g} s, with {arriving.count()} of {len(futures)} replications "
                "unfinished; start workers again and rerun (a checkpoint keeps the finished "
                "ones), or allow longer with worker_timeout (--worker-timeout)")


def _check_heard(client, futures: dict, heard: dict[str, tuple[float, float]],
                 silent_after: float, fit_timeout, notes: str | None, timeout: float) -> None:
    """Raise :class:`ExecutionError` naming a worker that holds one of ``futures`` unfinished
    and that the scheduler has not heard from for ``silent_after`` seconds. ``heard`` keeps,
    by worker, the scheduler's time it was last heard from and the time here that changed
    (the scheduler's clock may be another machine's)."""
    try:
        info = client.sync(client.scheduler.identity, callback_timeout=timeout)
        held = client.sync(client.scheduler.processing, workers=None,
                           callback_timeout=timeout)
    except Exception:  # noqa: BLE001 - a scheduler that does not answer is counted elsewhere
        return
    now = time.monotonic()
    unfinished = {f.key: m for f, m in futures.items() if not f.done()}
    for address, worker in info.get("workers", {}).items():
        last = worker.get("last_seen")
        if address not in heard or heard[address][0] != last:
            heard[address] = (last, now)
        silent = now - heard[address][1]
        mine = sorted(unfinished[key] for key in held.get(address, ()) if key in unfinished)
        if not mine or silent < silent_after:
            continue
        pid = next((p.pid for a, p in _local_workers(getattr(client, "cluster", None))
                    if a == address), None)
        # notes: the run's own cluster, closed (its workers killed) as the error leaves
        remedy = "rerun" if notes is not None else "restart or remove that worker and rerun"
        raise _frozen_error(f"the dask worker {address}{f' (process {pid})' if pid else ''}",
                            mine, notes, silent, fit_timeout, remedy)


def _frozen_error(worker: str, mine: Sequence[int], notes: str | None, silent: float,
                  fit_timeout: float, remedy: str) -> ExecutionError:
    """The error naming a frozen ``worker`` (dask or pool) holding replications ``mine`` (none:
    between two), with the step it was in from ``notes`` (:func:`_ended_step`)."""
    if mine:
        which = f"replication {mine[0]}" if len(mine) == 1 else \
            "replications " + ", ".join(map(str, mine))
        step = next((s + "," for s in (_ended_step(notes, m) for m in mine) if s), "")
        held = f" holding {which}{step}"
    else:
        held = ", between replications,"
    return ExecutionError(
        f"{worker}{held} has not been heard from for {silent:.0f} s, longer than a fit may "
        f"take under fit_timeout={fit_timeout:g} s: its process is frozen (stopped, e.g. by "
        f"SIGSTOP or a debugger, or swapping) or stuck outside the fits; {remedy} (a "
        "checkpoint keeps the finished replications)")


def _dask_workers(client, timeout: float) -> int:
    """The number of workers of ``client``'s scheduler, 0 if it gives no answer within
    ``timeout`` seconds."""
    try:
        return len(client.nthreads(callback_timeout=timeout))
    except Exception:  # noqa: BLE001 - an unreachable scheduler counts as no worker
        return 0


def _subset(study: Study, labels: Sequence[str]) -> Study:
    """The study restricted to some procedures: their rows of every replication are the full
    study's (seeds are keyed by label, not position)."""
    sub = copy.copy(study)
    sub.procedures = {label: study.procedures[label] for label in labels}
    sub.contributions = None
    return sub


def run_unit(study: Study, replication: int, fit_timeout: float | None = None
             ) -> ReplicationRecord:
    """:func:`run_replication` with one BLAS thread, wherever it runs (in-process, a pool
    worker or a dask worker): multithreaded BLAS sums in another order, and results must agree
    to the last bit whatever the backend; n_jobs workers with OpenBLAS's default threads also
    oversubscribe the cores (measured: 40x slower)."""
    with one_thread():
        return run_replication(study, replication, fit_timeout)


def _fit_guarded(study: Study, label: str, procedure: Procedure, sample, base_rule,
                 m: int, n: int, k: int) -> tuple[GuardedRule, float, dict]:
    rng = procedure_rng(study.seed, m, label, n, k)
    seed = _global_seed(study.seed, m, label, n, k)
    _note_step((label, m, n))  # its predictions too, until the next step
    start = time.perf_counter()
    try:
        # its own copy: the replication's procedures share the sample
        with user_code(seed):
            fitted, error = procedure.fit(sample.copy(), rng), ""
    except USER_CODE_ERRORS as exc:  # a failing procedure is recorded, not raised
        reraise_fatal(exc)
        fitted, error = None, f"fit: {failure_text(exc)}"
    seconds = time.perf_counter() - start
    info = getattr(fitted, "info", {}) if fitted is not None else {}
    guard = GuardedRule(fitted, base_rule, study.evaluation.constraints,
                        study.evaluation.columns, error, seed,
                        _global_seed(study.seed, m, BASELINE, n, k))
    return guard, seconds, info


@dataclass
class ReplicationContext:
    """What every fit of one replication shares: the pseudo-truth, the training samples and
    the baseline's fits and losses, by (n index, draw)."""

    replication: int
    truth: PseudoTruth
    samples: dict
    base_rules: dict
    base_loss: np.ndarray       # (discrepancy, n, draw)
    base_seconds: np.ndarray    # (n,)
    truth_scale: np.ndarray     # (discrepancy, n): Discrepancy.scale of the truth


@dataclass
class FitOutcome:
    """One procedure fitted on one sample: its losses (by discrepancy) and its record."""

    loss: np.ndarray
    seconds: float
    failed: bool
    replaced: int
    error: str
    info: dict


def _check_equal_weights(weights, evaluation) -> None:
    """Refuse model restrictiveness on unequally weighted evaluation points.

    ``fit_on="evaluation"`` fits every procedure to the evaluation points as an (unweighted)
    sample, while the discrepancy weights them: on a FiniteSet with weights (0.7, 0.1, 0.1,
    0.1) a linear model's r̂ came out 0.387 where Def. 1's min over the weighted discrepancy is
    0.344. Procedures take no weights, so such a study is refused.
    """
    w = np.asarray(weights, dtype=float)
    if w.size and np.ptp(w) > 1e-12 * np.max(np.abs(w)):
        raise ConfigurationError(
            f"fit_on='evaluation' fits every procedure to the evaluation points as an "
            f"unweighted sample, but {evaluation!r} weights them unequally ({w.min():.3g} to "
            f"{w.max():.3g}), so the fits would not minimise the weighted discrepancy of Def. 1 "
            "and r̂ would be too high; give each point equal weight (e.g. repeat rows: "
            "FiniteSet.from_frame(..., replace=False) keeps one point per data row)")


def replication_context(study: Study, replication: int) -> ReplicationContext:
    """Draw replication ``m``'s pseudo-truth and samples and fit the baseline on each."""
    m, ns, discs = replication, study.n, study.discrepancies
    k_base = max(study.procedure_draws(label) for label in study.labels)
    start_stage(("truth", m, None))  # the next step's limit, under fit_timeout
    _note_step(("truth", m, None))
    try:
        truth = study.evaluation.draw(ns, truth_rng(study.seed, m),
                                      draws=1 if study.fit_on == "evaluation" else study.draws)
    except SystemExit as exc:
        # Left to propagate, a sys.exit() in a user's evaluation distribution ended the study
        # quietly with exit status 0 (cf. PEP 479's StopIteration -> RuntimeError)
        reraise_fatal(exc)
        raise ExecutionError(f"the evaluation distribution {study.evaluation!r} called "
                             f"sys.exit({exc.code!r}) while drawing replication {m}'s "
                             f"pseudo-truth") from exc
    if study.fit_on == "evaluation":
        _check_equal_weights(truth.eval_weights, study.evaluation)
    base_loss = np.full((len(discs), len(ns), study.draws), np.nan)
    base_seconds = np.zeros(len(ns))
    samples, rules = {}, {}
    for c, n in enumerate(ns):
        for k in range(k_base):
            start_stage(("baseline", m, n))
            _note_step(("baseline", m, n))
            sample = truth.evaluation_sample(n) if study.fit_on == "evaluation" \
                else truth.sample(n, k)
            rng = procedure_rng(study.seed, m, BASELINE, n, k)
            seed = _global_seed(study.seed, m, BASELINE, n, k)
            start = time.perf_counter()
            scoring = ""
            try:
                with user_code(seed):
                    base_rule = study.baseline.fit(sample.copy(), rng)
                # the baseline's own rule, repaired with the eligible set's constraints
                repaired = FunctionRule(GuardedRule(
                    base_rule, base_rule, study.evaluation.constraints,
                    study.evaluation.columns, baseline_seed=seed).baseline_predict)
                for d, disc in enumerate(discs):
                    # a discrepancy's own bug surfaces here first, so the message names it
                    scoring = f", while discrepancy {disc.name!r} scored its predictions"
                    base_loss[d, c, k] = loss_value(disc, repaired, truth, n)
            except USER_CODE_ERRORS as exc:
                reraise_fatal(exc)
                if isinstance(exc, ConfigurationError):  # the study's set-up, not the baseline
                    raise
                raise BaselineError(
                    f"the baseline {study.baseline!r} failed in replication {m}, n={n}"
                    f"{scoring}: {failure_text(exc)}") from exc
            _check_losses(discs, base_loss[:, c, k], "the baseline", m, n, BaselineError)
            base_seconds[c] += (time.perf_counter() - start) / k_base
            samples[c, k], rules[c, k] = sample, base_rule
    # after the baseline's losses, so that any truth computed lazily is computed as before
    scale = np.array([[d.scale(truth, n) for n in ns] for d in discs], dtype=float).reshape(
        len(discs), len(ns))
    return ReplicationContext(m, truth, samples, rules, base_loss, base_seconds, scale)


def loss_value(disc: Discrepancy, rule, truth: PseudoTruth, n: int) -> float:
    """``disc(rule, truth, n)``, refused unless it is one real number: text such as "0.5" was
    read as 0.5, and an array was "setting an array element with a sequence".

    Parameters
    ----------
    disc : Discrepancy
        The discrepancy.
    rule : Fitted
        Anything with ``predict(X)``.
    truth : PseudoTruth
        The pseudo-truth.
    n : int
        The training sample size.

    Returns
    -------
    float
        The loss.

    Raises
    ------
    ConfigurationError
        The discrepancy returned something other than one real number.
    """
    value = disc(rule, truth, n)
    if isinstance(value, bool) or np.ndim(value) != 0 \
            or not isinstance(np.asarray(value).item(), numbers.Real):
        shown = _short(" ".join(repr(value).split()))
        raise ConfigurationError(f"discrepancy {disc.name!r} returned {shown}; a discrepancy "
                                 "returns one real number, the loss")
    return float(value)


def _short(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _check_losses(discs, losses, who: str, m: int, n: int,
                  non_finite: type[Exception] = ConfigurationError) -> None:
    """Refuse a loss that is not a finite number >= 0 (d(f, g) >= 0, SPEC §1).

    The predictions scored are finite (the failure protocol sees to that), so a NaN or an
    infinite loss would pass into r̂ as NaN or inf with nothing said; a procedure's is the
    discrepancy's doing (e.g. KL of a zero probability where the truth has mass), a baseline's
    is raised as ``non_finite`` (restrictiveness is undefined without the baseline).
    """
    values = dict(zip([d.name for d in discs], np.asarray(losses, float).tolist(), strict=True))
    non_finite_names = [name for name, v in values.items() if not np.isfinite(v)]
    if non_finite_names:
        raise non_finite(f"discrepancy {non_finite_names} gave a non-finite loss for {who} in "
                         f"replication {m}, n={n} ({values}); a loss must be a finite number "
                         ">= 0 (a discrepancy infinite at finite predictions, such as KL where "
                         "a predicted probability is 0, needs predictions kept inside its "
                         "domain)")
    negative = [name for name, v in values.items() if v < NEGATIVE_LOSS]
    if negative:
        raise ConfigurationError(f"discrepancy {negative} gave a negative loss for {who} in "
                                 f"replication {m}, n={n}; a discrepancy must be >= 0")


def fit_outcome(study: Study, ctx: ReplicationContext, label: str, c: int, k: int
                ) -> FitOutcome:
    """Fit procedure ``label`` on sample ``(n index c, draw k)`` of the context and score it
    under the failure protocol."""
    guard, secs, fit_info = _fit_guarded(study, label, study.procedures[label],
                                         ctx.samples[c, k], ctx.base_rules[c, k],
                                         ctx.replication, study.n[c], k)
    return _score(study, ctx, label, c, guard, secs, fit_info)


def _score(study: Study, ctx: ReplicationContext, label: str, c: int, guard: GuardedRule,
           secs: float, fit_info: dict) -> FitOutcome:
    """The outcome of a guarded fit: its losses under the failure protocol."""
    n, discs, truth = study.n[c], study.discrepancies, ctx.truth
    had_fit = guard.fitted is not None
    loss = np.full(len(discs), np.nan)
    for d, disc in enumerate(discs):
        try:
            loss[d] = loss_value(disc, guard, truth, n)
        except USER_CODE_ERRORS as exc:  # broken discrepancy input
            reraise_fatal(exc)
            guard.failed = True
            guard.error = guard.error or f"discrepancy {disc.name}: {failure_text(exc)}"
            guard.fitted = None
            loss[d] = loss_value(disc, guard, truth, n)
    if had_fit and guard.fitted is None:
        # The rule failed partway: every discrepancy of this fit uses the baseline,
        # not only those computed after the failure; its rows are counted once, as for a
        # failed fit (the guard counts the locations the calls before asked for once)
        loss[:] = [loss_value(disc, guard, truth, n) for disc in discs]
    _check_losses(discs, loss, f"procedure {label!r}", ctx.replication, n)
    return FitOutcome(loss, secs, bool(guard.failed), int(guard.replaced), guard.error,
                      fit_info)


def assemble_record(study: Study, ctx: ReplicationContext, outcomes: Mapping,
                    part: tuple[Sequence[str], ReplicationRecord] | None = None
                    ) -> ReplicationRecord:
    """The replication's record from fit outcomes keyed ``(label, c, k)``, plus the rows of
    ``part = (labels, record)``, a record of the same replication made by a study of those
    procedures only.

    ``fit_info`` keeps the first draw's record, with its ``"usage"`` counts (e.g. model tokens)
    summed over the draws.
    """
    labels, discs = study.labels, study.discrepancies
    P, D, N, K = len(labels), len(discs), len(study.n), study.draws
    loss = np.full((P, D, N, K), np.nan)
    failed = np.zeros((P, N), dtype=np.int64)
    invalid = np.zeros((P, N), dtype=np.int64)
    seconds = np.zeros((P, N))
    error = np.full((P, N), "", dtype=object)
    info = np.full((P, N), "{}", dtype=object)
    for p, label in enumerate(labels):
        k_p = study.procedure_draws(label)
        for c in range(N):
            first: dict | None = None
            for k in range(k_p):
                o = outcomes.get((label, c, k))
                if o is None:
                    continue
                loss[p, :, c, k] = o.loss
                seconds[p, c] += o.seconds / k_p
                failed[p, c] += int(o.failed)
                invalid[p, c] += o.replaced
                if o.error and not error[p, c]:
                    error[p, c] = o.error
                if k == 0:
                    first = dict(o.info or {})
                    if isinstance(first.get("usage"), dict):
                        first["usage"] = dict(first["usage"])
                elif first is not None and isinstance((o.info or {}).get("usage"), dict):
                    add_usage(first.setdefault("usage", {}), o.info["usage"])
            if first is not None:
                info[p, c] = _json(first)
    if part is not None:  # rows fitted elsewhere, e.g. by the process pool
        part_labels, rec = part
        for i, label in enumerate(part_labels):
            p = labels.index(label)
            loss[p], failed[p], invalid[p] = rec.loss[i], rec.failed[i], rec.invalid[i]
            seconds[p], error[p], info[p] = rec.seconds[i], rec.error[i], rec.info[i]
    diagnostics = {name: np.array([ctx.truth.diagnostics(n).get(name, np.nan) for n in study.n])
                   for name in study.evaluation.diagnostic_names}
    return ReplicationRecord(ctx.replication, loss, ctx.base_loss.copy(), failed, invalid,
                             seconds, ctx.base_seconds.copy(), error, info, diagnostics,
                             ctx.truth_scale.copy())


def _timed_out(study: Study, ctx: ReplicationContext, key: tuple[str, int, int],
               seconds: float, limit: float) -> FitOutcome:
    """The outcome of a fit stopped after ``limit`` seconds: a failed fit (the baseline's
    predictions everywhere), saying why."""
    label, c, k = key
    guard = GuardedRule(None, ctx.base_rules[c, k], study.evaluation.constraints,
                        study.evaluation.columns,
                        f"fit: timed out after {limit:g} s (fit_timeout); its process was killed",
                        baseline_seed=_global_seed(study.seed, ctx.replication, BASELINE,
                                                   study.n[c], k))
    return _score(study, ctx, label, c, guard, seconds, {})


def _sendable(outcome: FitOutcome) -> FitOutcome:
    """The outcome with its ``info`` as JSON values, so that it pickles back from a child
    process; the record stores ``info`` as JSON anyway, and the text is the same."""
    outcome.info = json.loads(_json(outcome.info))
    return outcome


def run_replication(study: Study, replication: int, fit_timeout: float | None = None
                    ) -> ReplicationRecord:
    """One replication: a pseudo-truth, its samples, and every procedure's losses for every n.

    A pure function of ``(study, replication)``. With ``fit_timeout``, the fits run in a child
    process and a fit that takes longer is recorded as failed (see :meth:`Study.run`).
    """
    if fit_timeout is not None:
        # the pseudo-truth draw and the baseline's fits are user code too (a user's own
        # evaluation distribution or baseline): each gets the same limit, in a child
        return run_staged(lambda: _replication(study, replication, fit_timeout), fit_timeout,
                          lambda stage, secs: _stage_timed_out(study, stage, secs, fit_timeout),
                          first_stage=("truth", replication, None))
    return _replication(study, replication, None)


def _replication(study: Study, replication: int, fit_timeout: float | None
                 ) -> ReplicationRecord:
    ctx = replication_context(study, replication)
    keys = [(label, c, k) for c in range(len(study.n)) for k in range(study.draws)
            for label in study.labels if k < study.procedure_draws(label)]
    if fit_timeout is None:
        outcomes = {key: fit_outcome(study, ctx, *key) for key in keys}
    else:
        end_stages()  # each fit is bounded in a child of its own
        outcomes = run_in_child(lambda key: _sendable(fit_outcome(study, ctx, *key)), keys,
                                fit_timeout,
                                lambda key, secs: _timed_out(study, ctx, key, secs, fit_timeout),
                                lambda key: _fit_name(study, replication, key))
    return assemble_record(study, ctx, outcomes)


def _fit_name(study: Study, replication: int, key: tuple[str, int, int]) -> str:
    """A fit of :func:`fit_outcome` in errors: ('killer', 0, 0) did not say the replication."""
    label, c, k = key
    draw = f", draw {k}" if study.draws > 1 else ""
    return f"the fit of procedure {label!r} in replication {replication} (n={study.n[c]}{draw})"


def _stage_timed_out(study: Study, stage: tuple, seconds: float, limit: float) -> NoReturn:
    """Raise for a pseudo-truth draw or a baseline fit stopped after ``limit`` seconds: unlike
    a procedure's fit, neither has a fallback, and dropping the replication would select the
    pseudo-truths by how hard they are."""
    what, m, n = stage
    killed = (f"did not finish within fit_timeout={limit:g} s (stopped after {seconds:.1f} s; "
              f"its process was killed)")
    if what == "truth":
        raise ExecutionError(f"drawing the pseudo-truth of replication {m} from "
                             f"{study.evaluation!r} {killed}; the evaluation distribution must "
                             "draw within the limit: fix it, or raise fit_timeout")
    raise BaselineError(f"the baseline {study.baseline!r} {killed} in replication {m}, n={n}; "
                        "every procedure falls back on the baseline, so it must fit every "
                        "sample within the limit: use a simpler baseline, or raise fit_timeout")

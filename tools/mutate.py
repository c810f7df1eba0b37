# ruff: noqa: E501 - the mutants quote source lines verbatim, indentation included
"""Mutation testing of the core over a curated list of plausible bugs.

Each mutant is one textual edit (``old`` -> ``new``, ``old`` unique in its file) of the kind a
tired author makes: an operator swapped, an off-by-one, a weight dropped, a wrong quantile, a
wrong sign or axis, a random-stream key changed. General tools (mutmut, cosmic-ray) rewrite
modules at import time or through a trampoline, which numba's ``@njit(cache=True)`` kernels
defeat (the kernel is compiled from the file on disk and served from its on-disk cache), so
the edits here are made on disk, in a private copy of the repository, with the copy's numba
caches for the mutated module removed before and after each run: a stale cache would run the
unmutated kernel and report a false kill or survival.

For each mutant the tests most related to the mutated module run first with ``-x``; a failure
there is a kill. Only survivors then run the whole fast suite with ``-x``. The working tree is
never modified.

Usage (from the repository root)::

    nice -n 10 python tools/mutate.py              # every mutant; the score table at the end
    python tools/mutate.py --list                  # the mutants, checked to apply
    python tools/mutate.py --only inference        # mutants whose module name contains this
    python tools/mutate.py --only failures,results # ... or any of these
    python tools/mutate.py --quick                 # related tests only (no full-suite pass)
    python tools/mutate.py --why "upper bound"     # mutants whose description says this
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = "restrictiveness"


@dataclass(frozen=True)
class Mutant:
    path: str          # relative to restrictiveness/
    old: str
    new: str
    why: str
    tests: tuple[str, ...]  # related test files (run first)


# Related tests, fastest and most targeted first (pytest -x stops at the first failure).
STUDY = ("tests/test_study_values.py", "tests/test_study.py")
FAIL = ("tests/test_failures.py", *STUDY)
INFER = ("tests/test_inference.py",)
PROJ = ("tests/test_projection.py",)
GP = ("tests/test_eligible_sets.py",)
# the value tests of the estimation results first: the whole files take minutes under load
LOTTERY_SE = ("tests/test_lottery_models.py::test_standard_errors_match_statsmodels_on_the_"
              "linearised_problem", "tests/test_lottery_models.py::test_delta_method_for_delta_and_eta")
LSQ = ("tests/test_nls.py::test_inference_equals_statsmodels_ols_on_a_linear_model",
       "tests/test_nls.py::test_standard_errors_match_statsmodels_on_the_jacobian_and_curve_fit",
       *LOTTERY_SE, "tests/test_nls.py", "tests/test_lottery_models.py")
LOTTERY = ("tests/test_lottery_models.py", "tests/test_formulas.py")
LOTTERY_ORDER = ("tests/test_lottery_models.py::test_a_lottery_formula_with_its_roles_out_of_"
                 "order_is_refused_up_front", "tests/test_lottery_models.py::test_lottery_data_"
                 "errors_name_the_rows_and_columns", "tests/test_lottery_models.py")
RESPONSE = ("tests/test_formulas.py::test_a_fit_to_a_sample_refuses_a_formula_naming_another_"
            "response",)
DEMAND = ("tests/test_demand_models.py",)
SENS = ("tests/test_sensitivity.py",)
# (its closed-form and edge tests come first in the file: pytest runs a file in its order)
LM = ("tests/test_lsq.py",)
STALE = ("tests/test_nls.py::test_a_refinement_that_says_converged_is_at_a_stationary_point_of_"
         "a_badly_scaled_model",)
MULTI = ("tests/test_multistart.py",)
# NIST StRD known answers (one file, about 25 s); the damping floor's test is first in it (an
# alarm stops the endless loop in the solver's twin, before any compiled fit could loop)
NIST = ("tests/test_nls_nist.py",)
# the twin tests of the kernels first: the whole demand files take minutes
MXL = ("tests/test_demand_models.py::test_kernels_match_numpy_twins",
       "tests/test_demand_fitting.py::test_residual_callbacks_match_their_numpy_twins",
       "tests/test_demand_models.py", "tests/test_demand_fitting.py")
UNBALANCED = ("tests/test_demand_unbalanced.py",)
NL = ("tests/test_demand_fitting.py::test_residual_callbacks_match_their_numpy_twins",
      "tests/test_demand_fitting.py", "tests/test_demand_models.py")
PRIOR = ("tests/test_demand_prior.py::test_kernel_matches_numpy_twin",
         "tests/test_demand_prior.py")
KERNELS = ("tests/test_primitives.py", "tests/test_adapters.py")
CHECKS = ("tests/test_checks.py", "restrictiveness/shared/checks.py",
          "tests/test_nls.py::test_options_are_refused_by_name",
          "tests/test_study.py::test_study_options_that_int_would_truncate_are_refused",
          "tests/test_study.py::test_results_refuse_levels_weights_and_paths_they_cannot_honour",
          "tests/test_demand_models.py::test_demand_helpers_refuse_inputs_they_cannot_use")
# the budget and option tests of the demand fits first (seconds), then the whole file
FIT = ("tests/test_demand_fitting.py::test_budget_options_are_checked",
       "tests/test_demand_fitting.py::test_only_a_real_gain_earns_another_round_of_followups",
       "tests/test_demand_fitting.py::test_scipy_objective_gives_the_jacobian_of_the_point_"
       "asked_for",
       "tests/test_demand_fitting.py::test_budgets_count_evaluations_as_documented",
       "tests/test_demand_fitting.py::test_followups_share_the_budget_and_run_only_after_"
       "improvements",
       "tests/test_demand_fitting.py::test_scipy_methods_give_the_same_optimum_as_the_compiled_one",
       "tests/test_demand_fitting.py")
# the adaptive second MXL start: its rule in solve, then on a prior sample
ADAPTIVE = ("tests/test_demand_fitting.py::test_enough_skips_the_remaining_starts_but_not_the_"
            "followups",
            "tests/test_demand_fitting.py::test_adaptive_mxl_runs_the_second_start_only_when_"
            "needed", "tests/test_demand_fitting.py")
# the demand tests of inputs, starts, bounds and elasticities (the whole files take minutes)
SIZES = ("tests/test_demand_prior.py::test_market_and_prior_sizes_must_be_whole_numbers",
         "tests/test_demand_prior.py::test_a_missing_price_or_sugar_is_named_not_put_on_the_hull_"
         "boundary")
DEMAND_FIT = ("tests/test_demand_models.py::test_bad_inputs_raise_clear_errors",
              "tests/test_demand_models.py::test_at_bounds_names_exactly_the_parameters_on_a_"
              "bound",
              "tests/test_demand_models.py::test_mxl_box_in_the_solver_coordinates_maps_onto_the_"
              "parameter_box",
              "tests/test_demand_models.py::test_shares_must_leave_the_outside_good_a_positive_"
              "share",
              "tests/test_demand_fitting.py::test_baseline_and_berry_starts_are_their_closed_forms",
              "tests/test_demand_models.py::test_nested_logit_estimate_on_its_bound_is_flagged",
              "tests/test_demand_models.py::test_analytic_elasticities_match_finite_differences",
              "tests/test_demand_models.py::test_mxl_keeps_the_mnl_fit_as_a_candidate",
              "tests/test_demand_models.py::test_mnl_recovers_parameters_exactly",
              "tests/test_demand_models.py::test_mxl_recovers_means_and_diagonal_cholesky",
              "tests/test_demand_fitting.py::test_mxl_with_zero_covariance_and_nl_with_zero_rho_"
              "fit_as_mnl",
              "tests/test_demand_fitting.py::test_compiled_mxl_fit_reaches_scipys_optimum",
              "tests/test_demand_fitting.py::test_reflection_lowers_a_fit_that_ended_with_a_"
              "diagonal_at_zero")
LOTTERY_BOUNDS = ("tests/test_lottery_models.py::test_bounds_and_grids_are_checked_at_both_ends",
                  "tests/test_lottery_models.py::test_delta_on_its_lower_bound_is_the_bound_exactly",
                  "tests/test_lottery_models.py::test_estimates_land_exactly_on_bounds",
                  "tests/test_lottery_models.py::test_invalid_arguments_raise_named_errors",
                  "tests/test_lottery_models.py::test_a_weighting_code_or_parameter_the_kernel_lacks_is_refused",
                  "restrictiveness/lottery/models.py")
# the learners' global random states, FLAML learner names and table samples
LEARNERS = ("tests/test_adapters.py::test_an_estimator_on_the_global_random_state_is_"
            "reproducible_at_any_worker_count",
            "tests/test_adapters.py::test_unknown_flaml_learners_are_refused_at_construction",
            "tests/test_adapters.py::test_sklearn_regressor_on_markets_names_the_market_learner",
            "tests/test_adapters.py::test_automl_leaves_the_callers_random_states_as_they_were",
            "restrictiveness/procedures/learners.py")
# a dask worker or a fit's process ended by a procedure, a script without a __main__ guard
ENDED = ("tests/test_runner.py::test_a_fit_that_ends_its_process_is_named_with_its_replication",
         "tests/test_runner.py::test_a_dask_run_from_a_script_without_a_main_guard_says_to_add_one",
         "tests/test_runner.py::test_a_dask_worker_ended_by_a_fit_fails_at_once_naming_the_fit")
# a dask cluster lost mid-run: its last worker, its scheduler; a client not the default one
LOST = ("tests/test_runner.py::test_a_dask_result_lost_with_the_last_worker_as_it_is_delivered_does_not_hang",
        "tests/test_cli.py::test_a_dask_run_that_loses_its_scheduler_fails_naming_the_lost_connection",
        "tests/test_cli.py::test_a_dask_client_that_is_not_the_default_one_runs_the_study",
        "tests/test_cli.py::test_a_dask_run_whose_scheduler_stops_answering_fails_within_its_timeout",
        "tests/test_cli.py::test_a_dask_run_that_loses_every_worker_fails_within_its_timeout")
# the run's own local dask cluster: one that cannot start, or close
OWN_CLUSTER = ("tests/test_runner.py::test_a_local_dask_cluster_that_cannot_start_fails_saying_what_failed",
               "tests/test_runner.py::test_a_local_dask_cluster_that_does_not_close_is_killed_and_the_results_kept")
# a dask worker frozen under fit_timeout (and one only busy)
FROZEN = ("tests/test_runner.py::test_a_frozen_dask_worker_fails_the_run_within_fit_timeout_naming_it",
          "tests/test_runner.py::test_a_busy_dask_worker_is_not_taken_for_frozen")
# a pool worker frozen under fit_timeout (and one only busy)
POOL_FROZEN = ("tests/test_runner.py::test_pool_heartbeats_count_only_the_silence_the_caller_watched",
               "tests/test_runner.py::test_a_frozen_pool_worker_fails_the_run_within_fit_timeout_naming_it",
               "tests/test_runner.py::test_a_busy_pool_worker_is_not_taken_for_frozen",
               "tests/test_runner.py::test_a_pool_worker_frozen_between_replications_fails_the_run_naming_it")
# the parent's checks of limits and of what the child wrote (each run spawns a sandbox)
SANDBOX = ("tests/test_sandbox.py::test_cpu_limit_is_positive_and_rounded_up",
           "tests/test_sandbox.py::test_parent_reads_only_arrays_whose_header_matches_the_file",
           "tests/test_sandbox.py::test_stream_tails_keep_the_last_bytes",
           "restrictiveness/ai/sandbox/limits.py",
           "tests/test_sandbox.py::test_limits_validate_arguments",
           "tests/test_sandbox.py::test_forged_results_are_refused_not_raised",
           "tests/test_sandbox.py::test_printing_megabytes_is_stopped",
           "tests/test_sandbox.py::test_runs_and_returns_arrays_exactly")
ELAST = ("tests/test_demand_app.py::test_demand_discrepancies_are_weighted_means_over_markets",
         "tests/test_demand_app.py::test_a_market_with_a_zero_share_gets_zero_elasticities",
         "tests/test_demand_app.py::test_a_market_with_a_replaced_perturbation_gets_zero_"
         "elasticities",
         "tests/test_demand_app.py::test_a_market_with_invalid_shares_at_its_own_prices_gets_"
         "zero_elasticities",
         "tests/test_demand_app.py::test_baseline_elasticity_loss_is_the_mean_squared_true_"
         "elasticity",
         "tests/test_demand_prior.py::test_finite_differences_match_analytic_logit",
         "tests/test_demand_prior.py::test_truth_predictor_has_zero_loss",
         "tests/test_demand_prior.py::test_elasticity_cache_and_generic_truth",
         "tests/test_demand_app.py", "restrictiveness/demand/elasticities.py")

# fit_timeout: the direct tests of run_in_child and run_staged first (seconds), then the studies
RUNNER = "tests/test_runner.py::test_"
TIMEOUTS = ("restrictiveness/engine/timeouts.py",
            RUNNER + "a_send_lock_held_by_another_thread_at_the_fork_still_lets_the_child_report",
            RUNNER + "a_stopped_unit_reports_the_limit_not_its_clean_up",
            RUNNER + "a_fit_terminated_from_outside_is_reported_as_its_process_dying",
            RUNNER + "a_unit_is_stopped_where_the_platform_has_no_waitid",
            RUNNER + "an_interrupt_during_the_grace_wait_still_kills_the_unit",
            RUNNER + "a_step_that_overruns_before_its_first_stage_gets_the_first_stage",
            RUNNER + "a_timed_out_fit_runs_its_clean_up",
            RUNNER + "numba_compilation_does_not_count_against_fit_timeout",
            RUNNER + "the_process_of_a_fit_dies_with_its_run",
            # (on dask, a local cluster's start-up under load broke its time bound)
            RUNNER + "a_fit_that_never_returns_is_stopped_and_recorded_as_failed[processes-1-0-1]",
            RUNNER + "fit_timeout_bounds_the_baseline_and_the_pseudo_truth_draw")
LIMITER = ("restrictiveness/engine/concurrency.py",
           RUNNER + "keyed_once_computes_each_key_once_whichever_thread_asks",
           RUNNER + "a_limiter_locked_by_another_thread_at_the_fork_still_serves_the_child",
           RUNNER + "the_rate_limit_holds_across_the_processes_of_fits_under_fit_timeout")
FORKSAFE = ("tests/test_forksafe.py",
            RUNNER + "a_send_lock_held_by_another_thread_at_the_fork_still_lets_the_child_report",
            RUNNER + "a_limiter_locked_by_another_thread_at_the_fork_still_serves_the_child")
STOP = ("tests/test_llm_clients.py::test_a_back_off_wait_ends_once_the_run_has_failed",
        "tests/test_llm_clients.py::test_a_process_forked_from_a_runs_thread_makes_requests_of_"
        "its_own",
        "tests/test_llm_clients.py::test_fits_asking_a_plain_callable_stop_at_their_next_call_"
        "once_the_run_is_interrupted",
        "tests/test_llm_clients.py::test_fits_on_threads_stop_at_their_next_request_once_the_"
        "run_is_interrupted")
FINGERPRINT = ("tests/test_checkpoint.py::test_code_held_deeper_than_an_attribute_is_fingerprinted",
               "tests/test_checkpoint.py::test_state_an_object_builds_as_it_is_used_is_not_"
               "fingerprinted")
NLS_JAC = ("tests/test_nls.py::test_a_jac_that_is_not_the_derivative_is_refused",
           "tests/test_nls.py::test_a_jac_a_few_percent_off_is_refused",
           "tests/test_nls.py::test_a_function_model_on_a_bound_has_the_formulas_standard_errors",
           "tests/test_nls.py::test_an_exact_jac_is_kept_when_the_differences_round",
           "tests/test_nls.py::test_function_models_match_the_formula",
           "tests/test_nls.py::test_function_models_taking_a_parameter_vector",
           "tests/test_nls.py::test_truth_outside_the_box_gives_the_constrained_optimum_exactly_"
           "on_the_bound",
           "tests/test_nls.py::test_an_estimate_on_a_log_scale_lower_bound_is_the_bound_exactly")
CKPT = ("tests/test_checkpoint.py::test_a_saved_replication_is_not_claimed_again",
        "tests/test_checkpoint.py::test_a_record_under_another_replications_name_is_moved_aside_"
        "and_recomputed",
        "tests/test_checkpoint.py")
JIT = ("restrictiveness/shared/_jit.py",
       "tests/test_kernel_cache.py::test_the_digest_follows_kernel_modules_in_subpackages_and_"
       "any_use_of_numba", "tests/test_kernel_cache.py")
# (the tests that time real waits, and the whole file, fail the unmutated copy under load)
CLIENT = ("restrictiveness/ai/clients.py",
          "tests/test_llm_clients.py::test_client_errors_are_not_retried_and_retries_are_bounded",
          "tests/test_llm_clients.py::test_the_endpoints_x_should_retry_header_decides_as_in_the_"
          "sdks",
          "tests/test_llm_clients.py::test_retry_after_waits_are_capped_and_garbage_falls_back_"
          "to_backoff",
          "tests/test_llm_clients.py::test_a_call_budget_refuses_the_request_past_its_limit",
          "tests/test_llm_clients.py::test_a_token_budget_counts_reported_or_estimated_tokens",
          "tests/test_llm_clients.py::test_a_call_budget_refuses_requests_from_a_forked_copy")
LOOKUP = ("restrictiveness/ai/clients.py",
          "tests/test_llm_clients.py::test_a_resolver_that_does_not_answer_times_out_with_the_"
          "attempt",
          "tests/test_llm_clients.py::test_every_address_of_a_host_is_tried_in_the_resolvers_"
          "order")
USAGE = ("restrictiveness/engine/usage.py",
         "tests/test_llm_clients.py::test_usage_totals_add_counts_not_flags",
         "tests/test_llm_clients.py::test_a_price_table_gives_dollars_per_token_and_refuses_"
         "what_it_cannot_price", "tests/test_llm.py")
PLAN = ("restrictiveness/ai/budget.py",
        "tests/test_llm.py::test_plan_calls_counts_fits_calls_tokens_and_cost")
MEMORY = ("restrictiveness/engine/memory.py",
          RUNNER + "available_memory_is_the_smaller_of_memavailable_and_the_cgroups_room",
          RUNNER + "memory_estimate_refuses_sizes_that_cannot_fit",
          RUNNER + "a_run_whose_results_cannot_fit_in_memory_is_refused_before_any_work")
LLM = ("restrictiveness/ai/llm.py", "tests/test_llm.py::test_a_cached_reply_adds_no_usage",
       "tests/test_llm.py")
PROGRAMS = ("restrictiveness/ai/programs.py",
            "tests/test_sandbox.py::test_predictions_cached_per_query",
            "tests/test_sandbox.py::test_cached_predictions_are_keyed_on_the_query_shape",
            "tests/test_sandbox.py")

RELAY = ("tests/test_warning_relay.py",)
SWEEP = ("tests/test_sandbox_sweep.py",)
ALLOW = ("tests/test_sandbox.py::test_a_dotted_allowed_name_admits_that_module_and_its_parents_import",)
COUNT = ("tests/test_sandbox.py::test_disk_count_gives_back_the_rights_the_child_took_away",)
BWRAP_FAILS = ("tests/test_sandbox.py::test_namespaces_the_system_refuses_raise_under_either_backend",)
PRIORITY = ("tests/test_sandbox.py::test_the_child_may_not_raise_its_priority_whatever_the_caller_may",)
# the child's filter: the attacks it alone stops, without the guard (one backend)
_ATTACK = "tests/test_sandbox_attacks.py::test_attack_is_contained[kernel-only-builtin-"
SECCOMP = tuple(_ATTACK + name + "]" for name in (
    "high-bits-undumpable", "high-bits-socket-buffer-size", "high-bits-byte-range-locks",
    "socketpair-other-families", "xattr-values-on-tmpfs"))

# the working directory's capped tmpfs: writers and entry floods past the caps, a kept directory
CAPS = ("tests/test_sandbox_caps.py",)

COPIES = ("tests/test_study.py::test_a_procedure_writing_into_its_inputs_changes_no_other_"
          "numbers", "tests/test_completeness.py::test_a_procedure_writing_into_its_inputs_"
          "changes_no_other_losses")

FENCES = ("tests/test_llm.py::test_extract_code", "tests/test_llm.py::test_final_marker",
          "tests/test_llm.py::test_extract_code_takes_linear_time_on_unclosed_and_nested_fences")
BASE_INF = ("tests/test_study.py::test_a_baseline_with_non_finite_predictions_is_an_error",
            "tests/test_completeness.py::test_a_baseline_predicting_inf_is_refused_not_clipped")

MUTANTS: list[Mutant] = [
    # -- engine/study.py ---------------------------------------------------------------------
    Mutant("engine/study.py", "spawn_key=(replication, 1, zlib.crc32(label.encode()),",
           "spawn_key=(0, 1, zlib.crc32(label.encode()),",
           "procedure stream ignores the replication", STUDY),
    Mutant("engine/study.py", "                                                   n, draw))",
           "                                                   n, 0))",
           "procedure stream ignores the draw", STUDY),
    Mutant("engine/study.py", "spawn_key=(replication, 1, zlib.crc32(label.encode()),",
           "spawn_key=(replication, 1, 0,",
           "procedure stream ignores the label", STUDY),
    Mutant("engine/study.py", "spawn_key=(replication, 0)))", "spawn_key=(0, 0)))",
           "pseudo-truth the same in every replication", STUDY),
    Mutant("engine/study.py", "        fitted, error = procedure.fit(sample.copy(), rng), \"\"",
           "        fitted, error = procedure.fit(sample, rng), \"\"",
           "procedures share the replication's sample arrays", COPIES),
    Mutant("engine/study.py", "                base_rule = study.baseline.fit(sample.copy(), rng)",
           "                base_rule = study.baseline.fit(sample, rng)",
           "the baseline fitted on the shared sample arrays", COPIES),
    Mutant("engine/failures.py",
           "                    raw = self.fitted.predict(np.array(X))",
           "                    raw = self.fitted.predict(X)",
           "rules predict on the shared evaluation locations", COPIES),
    Mutant("analysis/completeness/estimate.py",
           "                        train.copy(), np.random.default_rng(fit_ss)), \"\"",
           "                        train, np.random.default_rng(fit_ss)), \"\"",
           "a fold's procedures share its training arrays", COPIES),
    Mutant("analysis/completeness/estimate.py",
           "        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key,",
           "        return seed\n        return np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key,",
           "completeness spawns from the caller's SeedSequence, advancing it",
           ("tests/test_completeness.py::test_a_seed_sequence_reproduces_its_folds_every_time",)),
    Mutant("analysis/completeness/estimate.py", "                if j == f and guard.failed:",
           "                if j == b and guard.failed:",
           "a failed benchmark replaced by the baseline, inflating every κ",
           ("tests/test_demand_app.py::test_a_benchmark_that_fails_a_fold_is_an_error_not_the_"
            "baseline_in_its_place",)),
    Mutant("engine/study.py", "                failed[p, c] += int(o.failed)",
           "                failed[p, c] = int(o.failed)",
           "failure counts overwritten across draws", STUDY),
    Mutant("engine/study.py", "                invalid[p, c] += o.replaced",
           "                invalid[p, c] = o.replaced",
           "replaced-row counts overwritten across draws", STUDY),
    Mutant("engine/study.py", "                seconds[p, c] += o.seconds / k_p",
           "                seconds[p, c] += o.seconds",
           "fit time summed, not averaged, over draws", STUDY),
    Mutant("engine/study.py", "                else truth.sample(n, k)",
           "                else truth.sample(n, 0)",
           "every draw trains on sample 0", STUDY),
    Mutant("engine/study.py", "                    base_loss[d, c, k] = loss_value(disc, repaired, truth, n)",
           "                    base_loss[d, c, k] = loss_value(disc, base_rule, truth, n)",
           "baseline losses without the constraint repair", STUDY),
    Mutant("engine/study.py", "        k = self.draws if own is None else min(int(own), self.draws)",
           "        k = self.draws if own is None else int(own)",
           "procedure draws not capped by the study's", STUDY),
    Mutant("engine/study.py", "        return 1 if self.fit_on == \"evaluation\" else k",
           "        return k",
           "fit_on='evaluation' fits K identical samples", STUDY),
    Mutant("engine/study.py", "        loss[:] = [loss_value(disc, guard, truth, n) for disc in discs]",
           "        pass",
           "partial failure keeps the losses computed before it", STUDY),
    Mutant("engine/study.py", "                if o.error and not error[p, c]:",
           "                if o.error:",
           "last, not first, error message kept", STUDY),
    # -- engine/inference.py -----------------------------------------------------------------
    Mutant("engine/inference.py", "    psi = (D - r * B) / Bbar", "    psi = (D - B) / Bbar",
           "influence without the ratio", INFER),
    Mutant("engine/inference.py", "    psi = (D - r * B) / Bbar", "    psi = (D - r * B)",
           "influence not divided by B-bar", INFER),
    Mutant("engine/inference.py", "    return r, np.sqrt(psi.var(axis=-1, ddof=1) / M)",
           "    return r, np.sqrt(psi.var(axis=-1, ddof=0) / M)",
           "SE with divisor M", INFER),
    Mutant("engine/inference.py", "    return r, np.sqrt(psi.var(axis=-1, ddof=1) / M)",
           "    return r, np.sqrt(psi.var(axis=-1, ddof=1) / (2 * M))",
           "SE off by sqrt 2", INFER),
    Mutant("engine/inference.py", "    comb = (coefs.reshape(shape) * psi).sum(axis=0)",
           "    comb = (np.abs(coefs.reshape(shape)) * psi).sum(axis=0)",
           "contrast SE ignores the signs", INFER),
    Mutant("engine/inference.py", "    z = stats.norm.ppf(0.5 + level / 2)",
           "    z = stats.norm.ppf(level)", "one-sided quantile (90% labelled 95%)", INFER),
    Mutant("engine/inference.py", "    if B.shape[-1] < 2:", "    if B.shape[-1] < 1:",
           "one replication accepted", INFER),
    Mutant("engine/inference.py", "    est = np.tensordot(coefs, r, axes=(0, 0))",
           "    est = np.tensordot(np.abs(coefs), r, axes=(0, 0))",
           "contrast estimate sums instead of differencing", INFER),
    # -- engine/failures.py ------------------------------------------------------------------
    Mutant("engine/failures.py", "        if fitted is None and not error:  # a fit that forgot its return: say so",
           "        if fitted is None and error is None:  # a fit that forgot its return: say so",
           "a fit that returned None fails with no first error",
           ("tests/test_failures.py::test_a_fit_that_returns_none_fails_saying_so",)),
    Mutant("engine/failures.py", "    with _user_calls_lock, warnings.catch_warnings():",
           "    with warnings.catch_warnings():",
           "a warning silenced beside fits on threads: a fit starting meanwhile keeps its filters",
           ("tests/test_failures.py::test_ignoring_a_warning_category_makes_user_calls_on_other_"
            "threads_wait",)),
    Mutant("eligible/domains.py", "        log2_batch = int(np.log2(drawn))",
           "        pass",
           "Box.sample's later Sobol batches unbalanced (scipy warns; silencing it swaps filters)",
           ("tests/test_eligible_sets.py::test_box_sampling_leaves_the_process_warning_filters_"
            "alone",)),
    Mutant("engine/failures.py", "        pred[~np.isfinite(raw)] = np.nan",
           "        pass", "a baseline's ±inf clipped to a bound and scored", BASE_INF),
    Mutant("engine/failures.py", "                    pred[bad] = base[bad]",
           "                    pass", "invalid rows not replaced", FAIL),
    Mutant("engine/failures.py", "            self.replaced += rows - before",
           "            self.replaced = rows",
           "replaced rows overwritten across calls", FAIL),
    Mutant("engine/failures.py", "        self._count(X, base.shape[0])",
           "        self._count(X, 1)", "failed fit counts one row", FAIL),
    Mutant("engine/failures.py", "        if rows > before:\n            self.replaced += rows - before\n            self._counted[key] = rows",
           "        self.replaced += rows",
           "replaced rows counted once per discrepancy asking for them", FAIL),
    Mutant("engine/failures.py", "        key = (X.shape, X.dtype.str, hashlib.blake2b(X.tobytes(), digest_size=16).digest())",
           "        key = (X.shape, X.dtype.str)",
           "replaced rows at other locations of the same shape not counted", FAIL),
    Mutant("engine/failures.py", "        if rows > before:\n            self.replaced += rows - before",
           "        if not before:\n            self.replaced += rows - before",
           "a repeated call replacing more rows at the same locations counts the first call's",
           ("tests/test_failures.py::test_replaced_rows_at_the_same_locations_count_once_the_most_"
            "replaced",)),
    Mutant("engine/failures.py", "    ok = np.isfinite(pred.reshape(pred.shape[0], -1)).all(axis=1)",
           "    ok = np.isfinite(pred.reshape(pred.shape[0], -1)).any(axis=1)",
           "row valid if any entry finite", FAIL),
    Mutant("engine/failures.py", "        ok &= c.check(pred, X, columns)", "        pass",
           "constraints never checked", FAIL),
    Mutant("engine/failures.py", "        pred = c.repair(pred, X, columns)", "        pass",
           "predictions never repaired", FAIL),
    Mutant("engine/failures.py", "        self.error, self.failed, self.replaced = error, fitted is None, 0",
           "        self.error, self.failed, self.replaced = error, False, 0",
           "failed fit not flagged", FAIL),
    Mutant("engine/failures.py", "USER_CODE_ERRORS = (Exception, SystemExit)",
           "USER_CODE_ERRORS = (Exception,)",
           "a procedure's sys.exit() ends the study quietly", ("tests/test_study.py",)),
    Mutant("engine/failures.py", "    if isinstance(exc, SandboxUnavailableError | WorkerTerminated):",
           "    if isinstance(exc, SandboxUnavailableError):",
           "a pool worker's SIGTERM recorded as a failed fit",
           ("tests/test_failures.py::test_a_pool_workers_termination_stops_the_run_whatever_"
            "handler_is_registered_by_then", "tests/test_runner.py", "tests/test_study.py")),
    Mutant("engine/failures.py", "                _restore(*_found)", "                pass",
           "a procedure's warning filters and chdir leak into later procedures",
           ("tests/test_study.py",)),
    Mutant("engine/failures.py", "        with np.errstate(), (contextlib.nullcontext() if seed is None",
           "        with (contextlib.nullcontext() if seed is None",
           "a procedure's np.seterr leaks into later procedures",
           ("tests/test_study.py", "tests/test_completeness.py")),
    Mutant("engine/failures.py", "os.register_at_fork(after_in_child=_keep_the_forking_threads_calls)\n", "",
           "a forked child counts its parent's other threads' user calls as running for ever",
           ("tests/test_study.py::test_a_forked_child_restores_the_state_between_its_own_user_calls",)),
    Mutant("engine/failures.py", "    if isinstance(exc, SystemExit) and _from_a_signal_handler(exc):",
           "    if False:", "a script's own signal handler's sys.exit during a fit is recorded as the fit's failure",
           ("tests/test_study.py::test_a_scripts_own_signal_handler_exiting_during_a_fit_stops_the_study",)),
    Mutant("engine/study.py", "        parts = list(ast.walk(node.test))", "        parts = [node.test]",
           "a __main__ guard written with `and` or `in` is refused as missing",
           ("tests/test_runner.py::test_the_main_guard_check_takes_a_guard_written_any_way",)),
    Mutant("shared/files.py", "        os.chmod(tmp, _mode_for(target))\n", "",
           "written files keep their temporary file's 0600",
           ("tests/test_checkpoint.py::test_written_files_have_the_mode_a_plain_open_gives",)),
    Mutant("shared/blas.py", "    if raised:\n        raise raised[0]\n", "",
           "an interrupt inside the library count's ctypes callback is ignored",
           ("tests/test_blas.py",)),
    Mutant("engine/checkpoint.py", "        self._claims[replication] = lock\n        if self._file(replication).exists():\n            self.release(replication)\n            return False\n        return True\n",
           "        if self._file(replication).exists():\n            lock.release()\n            return False\n        self._claims[replication] = lock\n        return True\n",
           "a claim interrupted before it is kept stays behind",
           ("tests/test_checkpoint.py::test_an_interrupt_while_a_claim_is_made_leaves_no_claim_behind",)),
    Mutant("engine/failures.py", "    if _interrupt_noted.is_set():\n        return True\n", "",
           "an interrupt that C code turned into another error is reported as that error",
           ("tests/test_study.py::test_an_interrupt_turned_into_another_error_still_stops_the_study_as_one",)),
    # -- engine/discrepancies.py -------------------------------------------------------------
    Mutant("engine/discrepancies.py",
           "        err = _row_mean((matching(rule.predict(truth.eval_X), y, self.name) - y) ** 2)\n"
           "        return float(truth.eval_weights @ err)",
           "        err = _row_mean((matching(rule.predict(truth.eval_X), y, self.name) - y) ** 2)\n"
           "        return float(err.mean())", "MSE ignores the evaluation weights", STUDY),
    Mutant("engine/discrepancies.py", "        return f\"KL(name={self.name!r}\" + (\")\" if self.outside else \", outside=False)\")",
           "        return f\"KL(name={self.name!r})\"",
           "KL(outside=False) shown as KL(): a checkpoint of one resumes as the other",
           ("tests/test_checkpoint.py::test_kl_without_the_outside_share_is_not_resumed_as_kl_with_it",)),
    Mutant("engine/results.py", "        if self.dataset.attrs.get(\"fit_on\") == \"evaluation\":\n            return 1\n",
           "",
           "the summary of model restrictiveness shows the study's draws, not its one fit",
           ("tests/test_study.py::test_the_summary_of_model_restrictiveness_says_one_fit_per_truth_"
            "whatever_the_draws",)),
    Mutant("engine/discrepancies.py", "    if pred.shape != np.shape(truth):",
           "    if pred.shape[:1] != np.shape(truth)[:1]:",
           "predictions checked by rows only: a column broadcast against the truth",
           ("tests/test_study_values.py::test_predictions_shaped_otherwise_than_the_truth_are_"
            "refused_not_broadcast",)),
    Mutant("engine/discrepancies.py", "        return float(truth.eval_weights @ _row_mean(kl))",
           "        return float(_row_mean(kl).mean())", "KL ignores the evaluation weights",
           STUDY),
    Mutant("engine/discrepancies.py",
           "            s = np.concatenate([s, 1.0 - s.sum(axis=-1, keepdims=True)], axis=-1)",
           "            s = np.concatenate([s, 1.0 - s.sum(axis=0, keepdims=True)], axis=-1)",
           "outside share summed over the wrong axis", STUDY),
    Mutant("engine/discrepancies.py",
           "            terms = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)",
           "            terms = np.where(p > 0, q * (np.log(q) - np.log(p)), 0.0)",
           "KL the wrong way round", STUDY),
    Mutant("engine/discrepancies.py", "    return a.reshape(a.shape[0], -1).mean(axis=1)",
           "    return a.reshape(a.shape[0], -1).sum(axis=1)",
           "trailing axes summed, not averaged", STUDY),
    # -- eligible/projection.py, _projection_nb.py, monotone_gp.py ----------------------------
    Mutant("eligible/projection.py", "    sign = 1.0 if direction == \"increasing\" else -1.0",
           "    sign = 1.0", "direction ignored", PROJ),
    Mutant("eligible/projection.py", "        first, second = first[perm], second[perm]",
           "        first, second = first[perm], second", "random order breaks the pairs", PROJ),
    Mutant("eligible/projection.py", "    return int(np.count_nonzero(g[i] > g[j] + tol))",
           "    return int(np.count_nonzero(g[i] > g[j] - tol))", "violation count tolerance sign",
           PROJ),
    Mutant("eligible/_projection_nb.py", "                avg = 0.5 * (out[a] + out[b])",
           "                avg = 0.5 * (out[a] + out[a])", "average of the wrong pair", PROJ),
    Mutant("eligible/_projection_nb.py", "            if sign * out[a] > sign * out[b]:\n"
           "                avg", "            if sign * out[a] < sign * out[b]:\n                avg",
           "kernel fixes the wrong violations", PROJ),
    Mutant("eligible/_projection_nb.py", "        if np.sqrt(change) < tol:\n            break\n"
           "    return out, sweeps\n\n\ndef sweep_project_numpy",
           "        if np.sqrt(change) < 1e3:\n            break\n"
           "    return out, sweeps\n\n\ndef sweep_project_numpy",
           "kernel stops after one sweep", PROJ),
    Mutant("eligible/_projection_nb.py", "        equal[k] = sign[k] == 0",
           "        equal[k] = False", "unconstrained coordinates ignored in the order", PROJ),
    Mutant("eligible/_projection_nb.py", "        out[j] = 1\n    out[i] = 0",
           "        out[j] = 1\n    out[i] = 1", "ordered pairs include i == j", PROJ),
    Mutant("eligible/_projection_nb.py", "        s = -1.0 if sign[k] < 0 else 1.0",
           "        s = 1.0", "decreasing coordinates ordered as increasing", PROJ),
    Mutant("eligible/_projection_nb.py", "                out[j] &= c[j] >= v",
           "                out[j] &= not c[j] < v", "a NaN coordinate ordered with every point", PROJ),
    Mutant("eligible/monotone_gp.py", "        g_tilde = (1.0 - w) * g_up - w * g_down",
           "        g_tilde = (1.0 - w) * g_up + w * g_down", "blend adds the decreasing part",
           GP),
    Mutant("eligible/monotone_gp.py",
           "        w = e_up / (e_up + e_down) if e_up + e_down > 0 else 0.0",
           "        w = e_down / (e_up + e_down) if e_up + e_down > 0 else 0.0",
           "blend weight on the wrong projection", GP),
    Mutant("eligible/monotone_gp.py",
           "        e_up, e_down = np.sum((g_up - g) ** 2), np.sum((g_down - g) ** 2)",
           "        e_up, e_down = np.sum(np.abs(g_up - g)), np.sum(np.abs(g_down - g))",
           "blend weight from L1 distances", GP),
    Mutant("eligible/monotone_gp.py",
           "                   if isinstance(bound, str) and sign.get(bound) == -1]",
           "                   if isinstance(bound, str) and sign.get(bound) == 1]",
           "Between bound in a Decreasing column accepted by the link", GP),
    Mutant("eligible/domains.py", "        positive = int(np.count_nonzero(self.weights))",
           "        positive = len(self.points)",
           "draws without replacement counted over points of weight 0", GP),
    Mutant("eligible/monotone_gp.py", "        if len(X_merged) < len(X):\n            g_tilde, violations",
           "        if len(X_merged) < len(X) and self.eligible.sign.any():\n"
           "            g_tilde, violations",
           "repeated locations merged only under monotonicity", GP),
    Mutant("analysis/completeness/estimate.py",
           "        if type(c).check is Constraint.check and type(c).repair is Constraint.repair:",
           "        if type(c).check is Constraint.check and type(c).repair is Constraint.repair "
           "and False:",
           "completeness accepts a constraint it ignores (Increasing)",
           ("tests/test_completeness.py::test_constraints_completeness_cannot_apply_are_refused_"
            "up_front",)),
    Mutant("eligible/monotone_gp.py", '        draws = whole_number(draws, "draws", minimum=1)',
           "        draws = int(draws)", "a fractional number of draws truncated", GP),
    Mutant("engine/sensitivity_results.py", "        if self.full in self.submodels.values():",
           "        if self.full in self.submodels:",
           "full model given as its own submodel accepted (parameter names checked)",
           ("tests/test_sensitivity_results.py::test_contributions_of_any_nested_family",)),
    Mutant("engine/sensitivity_results.py",
           "        twice = sorted(repeated(self.submodels.values()))",
           "        twice = sorted(repeated(self.submodels))",
           "one submodel for two parameters accepted",
           ("tests/test_sensitivity_results.py::test_contributions_of_any_nested_family",)),
    Mutant("engine/study.py", "        _check_equal_weights(truth.eval_weights, study.evaluation)",
           "        pass",
           "model restrictiveness on unequal evaluation weights accepted",
           ("tests/test_study.py::test_model_restrictiveness_on_unequal_weights_is_refused",)),
    # -- procedures/estimation.py ------------------------------------------------------------
    Mutant("procedures/estimation.py", "        return pd.Series(2 * scipy.stats.t.sf(np.abs(self.tvalues), self.df_inference),",
           "        return pd.Series(scipy.stats.t.sf(np.abs(self.tvalues), self.df_inference),",
           "one-sided p-values", LSQ),
    Mutant("procedures/estimation.py", "        q = scipy.stats.t.ppf(1 - alpha / 2, self.df_inference)",
           "        q = scipy.stats.t.ppf(1 - alpha, self.df_inference)",
           "one-sided conf_int quantile", LSQ),
    Mutant("procedures/estimation.py", "        q = scipy.stats.t.ppf(1 - alpha / 2, self.df_inference)",
           "        q = scipy.stats.norm.ppf(1 - alpha / 2)", "normal instead of t", LSQ),
    Mutant("procedures/estimation.py", "            s2 = self.ssr / self.df_resid if self.df_resid > 0 else np.nan",
           "            s2 = self.ssr / self.nobs if self.df_resid > 0 else np.nan",
           "s^2 with divisor N", LSQ),
    Mutant("procedures/estimation.py", "            factor = N / (N - k) if N > k else np.nan",
           "            factor = 1.0 if N > k else np.nan", "HC0 labelled HC1", LSQ),
    Mutant("procedures/estimation.py", "        factor = G / (G - 1) * (N - 1) / (N - k) if N > k else np.nan",
           "        factor = G / (G - 1) if N > k else np.nan", "cluster factor without (N-1)/(N-k)",
           LSQ),
    Mutant("procedures/estimation.py", "            return self.n_clusters - 1",
           "            return self.df_resid", "cluster inference with N - k df", LSQ),
    Mutant("procedures/estimation.py", "        return pd.DataFrame(D @ self._cov_estimated @ D.T, index=self._names,",
           "        return pd.DataFrame(self._cov_estimated, index=self._names,",
           "delta method dropped", LSQ),
    Mutant("procedures/estimation.py", "        return 1.0 - self.ssr / tss if tss > 0 else np.nan",
           "        return self.ssr / tss if tss > 0 else np.nan", "R^2 is SSR/TSS", LSQ),
    # -- lottery/estimation.py ---------------------------------------------------------------
    Mutant("lottery/estimation.py",
           "        free = [a for a, q in enumerate((\"alpha\", \"gamma\", \"delta\")) if q in rdu.free]",
           "        free = [a for a, q in enumerate((\"alpha\", \"delta\", \"gamma\")) if q in rdu.free]",
           "Jacobian columns of the wrong parameters",
           (*LOTTERY_SE, *LOTTERY)),
    Mutant("lottery/estimation.py",
           "        return self.model.model._reported_jacobian(self.fitted.theta)",
           "        return np.eye(self.df_model)", "log-delta SE not carried to delta",
           (*LOTTERY_SE, *LOTTERY)),
    Mutant("lottery/estimation.py", "        if self.nobs <= k:  # as NLS: every standard error was NaN, with no word of why",
           "        if self.nobs < k:  # as NLS: every standard error was NaN, with no word of why",
           "lottery estimation with as many observations as parameters (NaN standard errors)",
           ("tests/test_lottery_models.py::test_estimation_refuses_no_more_observations_than_parameters",
            *LOTTERY)),
    Mutant("lottery/estimation.py", "        return self.fitted.predict(lottery_matrix(exog, shift=shift))",
           "        return self.fitted.predict(lottery_matrix(exog))",
           "lottery results' predict ignores the utility shift (refuses prizes it was fitted on)",
           ("tests/test_lottery_models.py::test_estimation_results_predict_where_the_shifted_utility_was_estimated",
            *LOTTERY)),
    Mutant("lottery/models.py", "        warn_outside_prizes(Z, y, rows)\n", "",
           "lottery data with certainty equivalents outside the prizes fitted without a word",
           ("tests/test_lottery_models.py::test_certainty_equivalents_outside_the_prizes_are_fitted_with_a_warning_naming_them",)),
    Mutant("lottery/lotteries.py", "    outside = (y < Z[:, 1] - margin) | (y > Z[:, 0] + margin)",
           "    outside = (y < Z[:, 1] - margin)",
           "certainty equivalents above the high prize not warned of", ("tests/test_lottery_models.py::test_certainty_equivalents_outside_the_prizes_are_fitted_with_a_warning_naming_them",)),
    Mutant("lottery/lotteries.py", "    outside = (y < Z[:, 1] - margin) | (y > Z[:, 0] + margin)",
           "    outside = (y <= Z[:, 1]) | (y >= Z[:, 0])",
           "a certainty equivalent equal to a prize warned of as outside", ("tests/test_lottery_models.py::test_certainty_equivalents_outside_the_prizes_are_fitted_with_a_warning_naming_them",)),
    Mutant("lottery/estimation.py", "                                       rows=None if self.data is None else self.data.index)",
           "                                       rows=None)",
           "certainty equivalents outside the prizes named by position, not the data's labels",
           ("tests/test_lottery_models.py::test_certainty_equivalents_outside_the_prizes_are_fitted_with_a_warning_naming_them",)),
    Mutant("lottery/models.py", "        Z = lottery_matrix(X, self.columns, self.names, _ANY_PRIZE)",
           "        Z = lottery_matrix(X, self.columns, self.names)",
           "the expected value refuses to predict a lottery with a loss", ("tests/test_lottery_models.py::test_expected_value_takes_losses_the_utility_models_refuse",)),
    Mutant("lottery/models.py", "            lottery_matrix(sample, None, names, _ANY_PRIZE)",
           "            lottery_matrix(sample, None, names)",
           "the expected value refuses a DataFrame of lotteries with a loss", ("tests/test_lottery_models.py::test_expected_value_takes_losses_the_utility_models_refuse",)),
    Mutant("lottery/models.py", "        lottery_matrix(sample.X, sample.columns, names, _ANY_PRIZE)",
           "        lottery_matrix(sample.X, sample.columns, names)",
           "the expected value refuses a training sample of lotteries with a loss", ("tests/test_lottery_models.py::test_expected_value_takes_losses_the_utility_models_refuse",)),
    # -- demand/estimation.py ----------------------------------------------------------------
    # (its covariance, p-values and intervals are LeastSquaresResults', mutated above)
    Mutant("demand/estimation.py", "                      cov_type, codes, fitted.at_bounds())",
           "                      \"HC1\", codes, fitted.at_bounds())",
           "demand SEs robust, not the classical NLS ones", DEMAND),
    Mutant("demand/estimation.py", "                      cov_type, codes, fitted.at_bounds())",
           "                      cov_type, codes, [])",
           "parameters on a bound not flagged", DEMAND),
    Mutant("demand/estimation.py", "                      cov_type, codes, fitted.at_bounds())",
           "                      \"nonrobust\", None, fitted.at_bounds())",
           "demand fit's cov_type and clusters ignored (classical SEs whatever was asked)",
           ("tests/test_demand_models.py::test_robust_standard_errors_are_the_sandwich_of_the_"
            "share_jacobian", *DEMAND)),
    Mutant("demand/estimation.py", "        self.converged = int(fitted.info.get(\"status\", 0)) in CONVERGED",
           "        self.converged = int(fitted.info.get(\"status\", 0)) in CONVERGED | {0}",
           "a demand fit out of its budget reported as converged",
           ("tests/test_demand_models.py::test_a_fit_that_ran_out_of_evaluations_says_so",)),
    Mutant("demand/estimation.py", "    ordered = data.iloc[_market_order(data, market_ids)]",
           "    ordered = data", "rows of unsorted markets not grouped", DEMAND),
    Mutant("demand/estimation.py", "    out[rows] = grouped", "    out[:] = grouped",
           "per-row demand results left grouped by market, not in the data's row order",
           ("tests/test_demand_models.py::test_per_row_results_follow_the_rows_of_the_data",)),
    Mutant("demand/estimation.py", "            _nest_index(self.X, columns, nest)",
           "            pass", "a nest column other than 0/1 refused only at fit, not when built",
           ("tests/test_demand_models.py::test_a_nest_column_other_than_0_1_is_refused_when_the_"
            "model_is_built",)),
    Mutant("demand/estimation.py", "    twice = data.duplicated([market_ids, product_ids], keep=False)",
           "    twice = data.duplicated([product_ids], keep=False) & False",
           "a product listed twice in a market read as another product",
           ("tests/test_demand_models.py::test_a_product_listed_twice_in_a_market_is_refused",)),
    Mutant("demand/estimation.py",
           "        return pd.Series(_data_order(self.fitted.predict(X).ravel()[keep], rows), index=index,",
           "        return pd.Series(self.fitted.predict(X).ravel()[keep], index=index,",
           "demand results' predict gives shares by sorted market under the data's row labels",
           ("tests/test_demand_models.py::test_results_predict_and_elasticities_take_and_give_"
            "long_product_data",)),
    Mutant("demand/estimation.py",
           "        return pd.DataFrame(_data_order(E.reshape(-1, E.shape[2])[keep], rows), index=index,",
           "        return pd.DataFrame(_data_order(np.swapaxes(E, 1, 2).reshape(-1, E.shape[2])[keep], "
           "rows), index=index,",
           "demand results' elasticities transposed (row: the price's product, not the share's)",
           ("tests/test_demand_models.py::test_results_predict_and_elasticities_take_and_give_"
            "long_product_data", "tests/test_demand_models.py::test_nested_logit_results_"
            "elasticities_match_pyblp")),
    Mutant("demand/__init__.py", "            if nest != \"mushy\":",
           "            if nest not in MARKET_COLUMNS:",
           "a demand study's nested logit on a continuous column runs (every fit fails)",
           ("tests/test_demand_app.py::test_a_nested_logit_on_a_column_that_is_not_0_1_is_"
            "refused_before_the_run",)),
    Mutant("demand/__init__.py", "            other = frame[nest][~frame[nest].isin([0, 1])].unique()",
           "            other = frame[nest][~frame[nest].isin([0, 1, 2])].unique()",
           "completeness's nested logit on a nest column of 1/2 runs (every fold fails)",
           ("tests/test_demand_app.py::test_a_nested_logit_on_a_column_that_is_not_0_1_is_"
            "refused_before_the_run",)),
    Mutant("demand/__init__.py", "    if short:\n",
           "    if False:\n",
           "market_sample takes a market with fewer products (a bare reshape error)",
           ("tests/test_demand_app.py::test_market_sample_refuses_markets_with_fewer_products_"
            "by_name",)),
    # -- numba kernels (besides the projection's) -------------------------------------------------
    # (the softplus switch moved only to t > 0.5 is equivalent: |u| <= 0.2 keeps the series
    # error below 4e-18, and the results differ from the original in rounding only)
    Mutant("lottery/_rdu_nb.py", "    return w, -math.expm1(-e), -e * w, h",
           "    return w, -math.expm1(-e), e * w, h", "Prelec weight derivative sign", LOTTERY),
    Mutant("lottery/_rdu_nb.py", "        J[i, 1] = dFdw * dwdt * h", "        J[i, 1] = dFdw * dwdt",
           "gamma column of the Jacobian drops h(p)", LOTTERY),
    Mutant("lottery/_rdu_nb.py", "            w, wc = 1.0 / (1.0 + e), e / (1.0 + e)",
           "            w, wc = e / (1.0 + e), 1.0 / (1.0 + e)",
           "odds weight branch swapped", LOTTERY),
    Mutant("shared/_vecmath.py", "    k = 1.0 if t > 0.41421356237309503 else 0.0",
           "    k = 1.0 if t > 0.9 else 0.0", "softplus series switch moved (error 1e-13)",
           ("tests/test_vecmath.py",)),
    Mutant("shared/_vecmath.py", "    x = min(max(x, -700.0), 700.0)",
           "    x = min(max(x, -70.0), 70.0)", "exp clamp too tight", ("tests/test_vecmath.py",)),
    Mutant("shared/_vecmath.py", "    k = (bits >> 52) - (1077 if sub else 1023)",
           "    k = (bits >> 52) - (1023 if sub else 1023)", "log of a subnormal not rescaled",
           ("tests/test_vecmath.py",)),
    Mutant("shared/_vecmath.py", "    r = -np.inf if x == 0.0 else r\n",
           "", "log(0) not -inf", ("tests/test_vecmath.py",)),
    Mutant("shared/_vecmath.py", "    r = s * (hfsq + (t1 + t2)) + dk * _LN2LO - hfsq + f + dk * _LN2HI",
           "    r = s * (hfsq + (t1 + t2)) - hfsq + f + dk * _LN2HI",
           "log drops the low part of k ln2 (error 2e-10 k)", ("tests/test_vecmath.py",)),
    Mutant("lottery/_rdu_nb.py", "                    W[i, j * nl + k] = d if t >= 0.0 else e * d",
           "                    W[i, j * nl + k] = d", "grid's odds weight wrong for t < 0",
           LOTTERY),
    Mutant("lottery/_rdu_nb.py", "                r = (f if pos else 0.0) - shift - yi",
           "                r = f - shift - yi",
           "grid's CE with both utilities 0 not the zero prize", LOTTERY),
    Mutant("lottery/_rdu_nb.py", "            h = math.log(-math.log(p))\n            for j",
           "            h = math.log(-math.log1p(-p))\n            for j",
           "grid's Prelec h(p) of the complement", LOTTERY),
    # -- results (engine/results.py) ----------------------------------------------------------
    Mutant("engine/study.py", "    non_finite_names = [name for name, v in values.items() if not np.isfinite(v)]",
           "    non_finite_names = [name for name, v in values.items() if np.isnan(v) and False]",
           "a NaN or infinite loss carried into r̂", STUDY),
    Mutant("engine/results.py", "        if dim != \"procedure\":  # procedures: unique_procedures names the repeats",
           "        if dim == \"discrepancy\":",
           "results accept repeated n or replication labels", STUDY),
    Mutant("engine/results.py", "            missing = ~np.isfinite(values.to_numpy())",
           "            missing = np.isinf(values.to_numpy())",
           "hand-built results with NaN losses accepted", STUDY),
    Mutant("engine/results.py", "self.dataset[\"loss\"].clip(min=0), self.dataset[\"baseline_loss\"].clip(min=0)",
           "self.dataset[\"loss\"].clip(min=0), self.dataset[\"baseline_loss\"]",
           "rounding below zero kept in the baseline's losses", STUDY),
    Mutant("engine/results.py", "        df[\"lower\"], df[\"upper\"] = normal_interval(df[\"estimate\"], df[\"se\"], level)",
           "        df[\"lower\"], df[\"upper\"] = normal_interval(df[\"estimate\"], df[\"se\"], 0.95)",
           "estimates() ignores level", INFER),
    Mutant("engine/results.py",
           "            est, se = combination_estimate(np.array([weights[p] for p in labels]), D.values,",
           "            est, se = combination_estimate(np.ones(len(labels)), D.values,",
           "combination ignores its weights", INFER),
    Mutant("engine/results.py",
           "                D, B = D.mean(\"draw\", skipna=True), B.mean(\"draw\", skipna=True)",
           "                D, B = D.mean(\"draw\", skipna=True), B.isel(draw=0, drop=True)",
           "baseline loss of the first training draw only", INFER),
    Mutant("engine/results.py", "            return self.discrepancies[0]",
           "            return self.discrepancies[-1]", "default discrepancy the last, not the first",
           INFER),
    # -- engine/sensitivity.py ---------------------------------------------------------------
    Mutant("engine/sensitivity.py", "    k = np.minimum(np.floor(s), m - 1).astype(np.intp)",
           "    k = np.minimum(np.ceil(s), m - 1).astype(np.intp)",
           "vertex with one unit too many at Γ", SENS),
    Mutant("engine/sensitivity.py", "        order = np.argsort(-c, axis=1, kind=\"stable\")",
           "        order = np.argsort(c, axis=1, kind=\"stable\")",
           "Dinkelbach step puts Γ on the smallest units", SENS),
    Mutant("engine/sensitivity.py", "    if _min_weighted_sum(a_sorted, 1.0) <= 0:",
           "    if _min_weighted_sum(a_sorted, 1.0) < 0:", "Δ̂ = 0 not critical at Γ = 1", SENS),
    Mutant("engine/sensitivity.py", "    a_sorted = np.sort(a)", "    a_sorted = np.sort(a)[::-1]",
           "critical Γ from the largest weighted sum, not the smallest", SENS),
    Mutant("engine/sensitivity.py", "    lower[g == 1.0] = upper[g == 1.0] = est",
           "    pass", "Γ = 1 bounds from the vertex search, an ulp off the estimate", SENS),
    Mutant("engine/sensitivity.py", "    upper = np.maximum(_max_ratio(a, b, w_rank), est)",
           "    upper = _max_ratio(a, b, w_rank)",
           "upper bound not clamped to bracket the uniform-weight estimate", SENS),
    Mutant("engine/sensitivity.py", "    if np.ndim(value) != 0:  # [2, 3] was a bare",
           "    if np.ndim(value) > 1:  # [2, 3] was a bare",
           "a grid of gamma_max passes to a bare unpacking error",
           ("tests/test_sensitivity_results.py::test_a_grid_as_gamma_max_is_refused_by_name",)),
    Mutant("engine/sensitivity_results.py",
           "            return _fmt(value) if np.isnan(value) else _sens.format_critical(value, gamma_max)",
           "            return _sens.format_critical(value, gamma_max)",
           "Panel C formats a degenerate baseline's NaN critical value and raises",
           ("tests/test_degenerate_baseline.py::test_sensitivity_tables_of_an_interpolating_"
            "baseline_print_nan",)),
    # -- shared/_lsq_nb.py: the bounded Levenberg–Marquardt -----------------------------------
    Mutant("shared/_lsq_nb.py", "            if (k > 0 and _optimality(G, g, ssr, idx, k) > STATIONARY",
           "            if (k > 0 and _optimality(G, g, ssr, idx, k) > 2.0",
           "a step or objective stop away from a stationary point is taken as convergence",
           STALE),
    Mutant("shared/_lsq_nb.py", "            if probing and mu >= PROBE_MU:",
           "            if probing and mu >= MU0:",
           "one failed step after a restart makes a stop with a stale scaling convergence",
           STALE),
    Mutant("shared/_lsq_nb.py", "        if v - lo[a] <= BOUND_RTOL * max(1.0, abs(lo[a])):",
           "        if v - lo[a] <= BOUND_RTOL * abs(lo[a]):",
           "no snapping margin at a zero lower bound", LM),
    Mutant("shared/_lsq_nb.py", "                    near = mu <= 1.0 and not newly",
           "                    near = mu <= 1.0",
           "a step cut at a new bound taken as convergence", LM),
    Mutant("shared/_lsq_nb.py",
           "    tau = min(1.0, abs(ssh) / abs(sSs)) if sSs != 0.0 else 1.0",
           "    tau = 1.0", "secant update without NL2SOL's sizing", LM),
    Mutant("shared/_lsq_nb.py", "                v2 -= M[c, e] * M[q, e]",
           "                v2 -= M[c, e] * M[c, e]", "Cholesky factor's off-diagonal update", LM),
    Mutant("shared/_lsq_nb.py",
           "                        mu = max(mu * max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3), MU_MIN)",
           "                        mu = mu * max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)",
           "damping without its floor underflows to 0 (an endless loop)", NIST),
    Mutant("shared/_lsq_nb.py", "                second = False\n                for a in range(p):\n"
           "                    for c in range(p):\n                        H[a, c] = G[a, c]\n"
           "                continue\n",
           "                pass\n",
           "a failed step of the secant model is damped instead of retried as Gauss-Newton",
           NIST),
    Mutant("shared/_lsq_nb.py", "            if second and nu > 2.0:",
           "            if second and nu >= 2.0:",
           "a failed step of the secant model is retried as Gauss-Newton after its first failure, not its second",
           LM),
    Mutant("shared/_lsq_nb.py",
           "        if free[a] == ROOT and x[a] * x[a] <= BOUND_RTOL and x[a] * g[a] >= 0.0:",
           "        if free[a] == ROOT and x[a] * x[a] <= BOUND_RTOL:",
           "a root entry near 0 is held even where the gradient pushes it out", LM),
    Mutant("shared/_lsq_nb.py",
           "        if free[a] == ROOT and x[a] * x[a] <= BOUND_RTOL and x[a] * g[a] >= 0.0:",
           "        if free[a] == ROOT and x[a] * x[a] <= 0.0 and x[a] * g[a] >= 0.0:",
           "a root entry is held only at exactly 0 (a futile restart after every such fit)", LM),
    Mutant("demand/models.py", "    free[d] = ROOT              # held near η_a = 0 as on the bound L_aa = 0\n",
           "", "the MXL Cholesky diagonals are plain free entries of the solver", DEMAND),
    Mutant("shared/_lsq_nb.py", "                        if exact:\n                            S[:, :] = Sn\n",
           "                        if False:\n                            S[:, :] = Sn\n",
           "the exact second-order term computed but the secant estimate kept", LM),
    Mutant("shared/_lsq_nb.py", "                    if EXACT and second:\n",
           "                    if EXACT:\n",
           "the exact second-order term computed at every trial point, Gauss-Newton steps too",
           LM),
    Mutant("shared/_lsq_nb.py", "                    if near and small_f:\n                        status = 2\n",
           "                    if False:\n                        status = 2\n",
           "the objective test only on accepted steps (not lmder's)", LM),
    Mutant("shared/_lsq_nb.py",
           "                    small_f = (abs(actual) <= ftol * ssr and 0.0 < pred <= ftol * ssr",
           "                    small_f = (abs(actual) <= ftol * ssr and 0.0 < pred",
           "the objective test without the predicted reduction's bound", LM),
    # -- shared/_multistart_nb.py ------------------------------------------------------------
    Mutant("shared/_multistart_nb.py",
           "                d += ((points[s, a] - points[chosen[c], a]) / width[a]) ** 2",
           "                d += (points[s, a] - points[chosen[c], a]) ** 2",
           "start distances not in box-width units", MULTI),
    Mutant("shared/_multistart_nb.py", "        if nc >= n_refine or not sse[s] < np.inf:",
           "        if nc > n_refine or not sse[s] < np.inf:", "one refinement too many", MULTI),
    Mutant("shared/_multistart_nb.py", "        if project and group[s] == 0:",
           "        if project:", "face and corner points projected on the linear entries too",
           MULTI),
    Mutant("shared/_multistart_nb.py", "    delta = np.linalg.lstsq(A, -r, 1e-12)[0]",
           "    delta = np.linalg.lstsq(A, r, 1e-12)[0]",
           "variable projection steps away from the least-squares amplitudes", MULTI),
    Mutant("shared/_multistart_nb.py",
           "                A[i, q] = J[i, a] / theta[q] if linear[a] == 2 else J[i, a]",
           "                A[i, q] = J[i, a]",
           "a log-scale linear entry projected with its log-scale Jacobian", MULTI),
    Mutant("shared/expression.py",
           "        if thetas[k] not in switches and not d.free_symbols & {thetas[j] for j in [*chosen, k]}:",
           "        if thetas[k] not in switches and thetas[k] not in d.free_symbols:",
           "linear parameters taken one by one, not jointly", ("tests/test_nls.py",)),
    Mutant("shared/expression.py",
           "        if thetas[k] not in switches and not d.free_symbols & {thetas[j] for j in [*chosen, k]}:",
           "        if not d.free_symbols & {thetas[j] for j in [*chosen, k]}:",
           "a switch point of a piecewise formula taken as a linear parameter", ("tests/test_nls.py",)),
    Mutant("procedures/nls.py",
           "            linear = np.array(compiled.linear, dtype=np.int64) * (1 + self.logscale)",
           "            linear = np.array(compiled.linear, dtype=np.int64)",
           "a linear parameter searched on the log scale projected as if on the linear scale",
           ("tests/test_nls.py",)),
    Mutant("procedures/nls.py", "                if records[c, 2 * k] <= ssr * (1 + START_TIE):",
           "                if records[c, 2 * k] <= ssr:",
           "the user's start wins exact ties only (rounding picks among equivalent optima)",
           ("tests/test_nls.py",)),
    Mutant("procedures/nls.py", "                if records[c, 2 * k] <= ssr * (1 + START_TIE):",
           "                if True:",
           "the user's start wins even where another optimum is lower", ("tests/test_nls.py",)),
    # -- demand/_logit_nb.py: mixed-logit shares and Jacobian ---------------------------------
    Mutant("demand/_logit_nb.py", "        bound += wmax * numax[a]",
           "        bound = max(bound, wmax * numax[a])",
           "overflow bound on |μ| the largest term, not the sum", MXL),
    Mutant("demand/_logit_nb.py",
           "            jac_m[j, K + q] = (Wm[j, ridx[lrow[q]]] * P[j, zr + lcol[q]]",
           "            jac_m[j, K + q] = (Wm[j, ridx[lcol[q]]] * P[j, zr + lcol[q]]",
           "L_ab column uses the design column of b, not a", MXL),
    Mutant("demand/_logit_nb.py", "    r, jac = mxl_resjac(_squared(eta, diag), data)\n    for i in diag:\n"
           "        jac[:, i] *= 2.0 * eta[i]",
           "    r, jac = mxl_resjac(_squared(eta, diag), data)\n    for i in diag:\n"
           "        jac[:, i] *= eta[i]", "chain rule of L_aa = η² without the 2", MXL),
    Mutant("demand/_logit_nb.py", "            acc[r] += u[r] - ha[r] * wb[r] - wa[r] * hb[r]",
           "            acc[r] += u[r] - 2.0 * ha[r] * wb[r]",
           "second-order term's cross product not symmetrised", MXL),
    Mutant("demand/_logit_nb.py", "            wj[r] = sj[r] * (e - rho[r])",
           "            wj[r] = sj[r] * e",
           "second-order term without the node's weighted residual ρ (the outside good)", MXL),
    Mutant("demand/_logit_nb.py", "        second[i, i] += 2.0 * g",
           "        second[i, i] += g",
           "chain rule of L_aa = η² in the second-order term: half the 2 ∂f/∂θ term", MXL),
    Mutant("demand/_logit_nb.py", "            for m in range(W.shape[0]):\n                for j in range(nprod[m]):",
           "            for m in range(1):\n                for j in range(nprod[m]):",
           "distinct product columns compared on the first market only", DEMAND),
    Mutant("demand/_logit_nb.py", "            for m in range(W.shape[0]):\n                for j in range(nprod[m]):",
           "            for m in range(W.shape[0]):\n                for j in range(W.shape[1]):",
           "distinct product columns compared on absent products too", DEMAND),
    Mutant("demand/_logit_nb.py", "        ia[K + q], ic[K + q] = ridx[lrow[q]], 1 + K + lcol[q]",
           "        ia[K + q], ic[K + q] = ridx[lcol[q]], 1 + K + lcol[q]",
           "second-order term: L_ab's design column taken from b, not a", MXL),
    # -- demand/_nested_nb.py ----------------------------------------------------------------
    Mutant("demand/_nested_nb.py", "            c = rho[m] / lam[m]", "            c = rho[m]",
           "within-nest term of ∂s/∂β not divided by λ", NL),
    Mutant("demand/_nested_nb.py",
           "                outer = ns[q] * (ubar[q] - logD[q]) if ns[q] > 0.0 else 0.0",
           "                outer = ns[q] * (logD[q] - ubar[q]) if ns[q] > 0.0 else 0.0",
           "∂s/∂ρ nest-share term with the wrong sign", NL),
    # -- demand: markets with different numbers of products (padded) ------------------------
    Mutant("demand/_logit_nb.py",
           "    _market_probabilities(d, Wr_m, nuT, numax, mu, den, Sm, Jm)",
           "    _market_probabilities(d, Wr_m, nuT, numax, mu, den, Sm, J)",
           "MXL Jacobian kernel counts a padded market's absent rows as products", UNBALANCED),
    Mutant("demand/_nested_nb.py", """            if m < 0:
                continue
            s[j] = math.exp(u[j] - rho[m] * logD[m] - logden)""",
           """            s[j] = math.exp(u[j] - rho[m] * logD[m] - logden)""",
           "NL kernel adds an absent product (g = −1) to the last nest's sums", UNBALANCED),
    Mutant("demand/models.py", """        else:                                   # −1: absent
            g = np.where(present, 0, -1).astype(np.int64)""",
           """        else:                                   # −1: absent
            g = np.zeros(W.shape[:2], dtype=np.int64)""",
           "MNL problem fits the absent products of padded markets as products", UNBALANCED),
    Mutant("demand/models.py", """    absent = _absent(X)
    if absent is not None:
        E[absent[:, :, None] | absent[:, None, :]] = np.nan""",
           """    absent = _absent(X)
    if absent is not None:
        E[absent[:, :, None] & absent[:, None, :]] = np.nan""",
           "elasticities of absent products NaN only between two absent ones", UNBALANCED),
    Mutant("demand/estimation.py", """        keep = ~np.isnan(X[:, :, 0]).ravel()
        return pd.Series(""", """        keep = np.isnan(X[:, :, 0]).ravel() | True
        return pd.Series(""",
           "predict on unbalanced product data keeps the padding rows", UNBALANCED),
    # -- demand/_shares_nb.py: the demand prior's share kernel -------------------------------
    Mutant("demand/_shares_nb.py", "                z1 = z_lo[i, k] if g < J else z_hi[i, k]",
           "                z1 = z_lo[i, k] if g <= J else z_hi[i, k]",
           "first raised price perturbation lowered instead", PRIOR),
    Mutant("demand/_shares_nb.py",
           "                    inv_g[g, t] = 1.0 / (den[t] - E[k, t] + ek[t])",
           "                    inv_g[g, t] = 1.0 / (den[t] + ek[t])",
           "perturbed denominator keeps the unperturbed product", PRIOR),
    # -- eligible/kernels.py: GP covariance kernels -------------------------------------------
    Mutant("eligible/kernels.py", "    c = rng.chisquare(2 * nu, size=(size, 1))",
           "    c = rng.chisquare(2 * nu, size=(size, dim))",
           "Matérn frequencies with one chi-square per coordinate", KERNELS),
    Mutant("eligible/kernels.py", "        X1 = np.atleast_2d(np.asarray(X1, dtype=float)) / ls",
           "        X1 = np.atleast_2d(np.asarray(X1, dtype=float))",
           "first argument not divided by the length scales", KERNELS),
    Mutant("eligible/kernels.py", "        if len(shape) > 1 or shape == (0,):",
           "        if shape == (0,):",
           "a (1, d) lengthscale array accepted (bare TypeError)", KERNELS),
    Mutant("eligible/constraints.py", "        if isinstance(self.lower, str) and self.lower == self.upper:",
           "        if isinstance(self.lower, str) and self.lower != self.upper and False:",
           "Between with the same column as both bounds accepted (r̂ = 0/0)", KERNELS),
    Mutant("eligible/monotone_gp.py", "        f[known] = self._values[n][at[known]]",
           "        pass",
           "K > 1 interpolation not exact at the union's own points", GP),
    Mutant("procedures/generic.py", "                    c.bounds(row, columns)",
           "                    pass",
           "GPRegression constraint naming a column the study lacks accepted", GP),
    Mutant("procedures/generic.py", "        except np.linalg.LinAlgError:  # was numpy's bare \"leading",
           "        except ZeroDivisionError:  # was numpy's bare \"leading",
           "GPRegression on a singular kernel matrix left as numpy's bare LinAlgError",
           ("tests/test_adapters.py::test_gp_regression_on_a_singular_kernel_matrix_names_the_"
            "noise",)),
    Mutant("eligible/monotone_gp.py", "        except np.linalg.LinAlgError:  # was numpy's bare",
           "        except ZeroDivisionError:  # was numpy's bare",
           "a covariance that is not positive definite left as numpy's bare LinAlgError", GP),
    Mutant("shared/formula.py", "        _check_calls(f.code, text)", "        pass",
           "formula calls numpy lacks (np.lg) or with arguments they do not take accepted",
           ("tests/test_formulas.py::test_a_call_that_cannot_succeed_is_refused_before_a_study_"
            "runs", "tests/test_formulas.py")),
    Mutant("shared/formula.py", "                target = functools.partial(stateful.memorize_chunk, None)",
           "                pass",
           "stateful transform arguments (bs(x, dff=3)) not checked",
           ("tests/test_formulas.py::test_a_call_that_cannot_succeed_is_refused_before_a_study_"
            "runs", "tests/test_formulas.py")),
    Mutant("procedures/generic.py", "        if f is None or f.plain:",
           "        if f is not None and f.plain:",
           "GPRegression without a formula: length scales not checked against the columns", GP),
    Mutant("procedures/nls.py", "    if named or len(required) > 1:",
           "    if len(required) > 1:",
           "NLS function naming some parameters but not all called with the vector",
           ("tests/test_nls.py::test_a_function_whose_arguments_cannot_take_the_parameters_"
            "is_refused",)),
    Mutant("procedures/nls.py",
           "        covariates = data.drop(columns=model.response) if model._formula is None else data",
           "        covariates = data",
           "NLS function model sees the response column in estimation (fits it exactly)",
           ("tests/test_nls.py::test_a_function_model_does_not_see_the_response_in_estimation",)),
    # -- shared/_lsq_nb.py (continued): bounds, budget, damping, convergence tests ----------------
    Mutant("shared/_lsq_nb.py", "        elif hi[a] - v <= BOUND_RTOL * max(1.0, abs(hi[a])):",
           "        elif hi[a] - v <= BOUND_RTOL * max(1.0, abs(lo[a])):",
           "upper snapping margin scaled by the lower bound", LM),
    Mutant("shared/_lsq_nb.py", "        if free[a] == 0:\n            continue\n        v = min(max(x[a], lo[a]), hi[a])",
           "        v = min(max(x[a], lo[a]), hi[a])",
           "fixed entries clipped and snapped to the box", LM),
    Mutant("shared/_lsq_nb.py", "        if (x[a] <= lo[a] and g[a] > 0.0) or (x[a] >= hi[a] and g[a] < 0.0):",
           "        if (x[a] <= lo[a] and g[a] > 0.0) or (x[a] >= hi[a] and g[a] > 0.0):",
           "held on the upper bound by the inward gradient", LM),
    Mutant("shared/_lsq_nb.py", "        if (x[a] <= lo[a] and g[a] > 0.0) or (x[a] >= hi[a] and g[a] < 0.0):",
           "        if (x[a] <= lo[a] and g[a] > 0.0) or (x[a] > hi[a] and g[a] < 0.0):",
           "never held on an upper bound (strict comparison)", LM),
    Mutant("shared/_lsq_nb.py", "            opt = max(opt, abs(g[a]) / math.sqrt(scale))",
           "            opt = max(opt, g[a] / math.sqrt(scale))",
           "gradient cosine without its absolute value", LM),
    Mutant("shared/_lsq_nb.py", "        if nfev >= max_nfev:\n            break\n        for a in range(p):",
           "        if nfev > max_nfev:\n            break\n        for a in range(p):",
           "one evaluation over the budget", LM),
    Mutant("shared/_lsq_nb.py", "                    if nfev >= max_nfev:\n                        break\n",
           "", "rejected steps go on past the budget", LM),
    Mutant("shared/_lsq_nb.py", "                        small_x = math.sqrt(step) <= xtol * (xtol + math.sqrt(xnorm))",
           "                        small_x = step <= xtol * (xtol + math.sqrt(xnorm))",
           "step test on the squared step length", LM),
    Mutant("shared/_lsq_nb.py", "                        pred -= 2.0 * g[a] * dx[a]",
           "                        pred -= g[a] * dx[a]",
           "predicted reduction with half the gradient term", LM),
    Mutant("shared/_lsq_nb.py", "MU0 = 1e-3", "MU0 = 1e-2", "initial damping 1e-2, not 1e-3", LM),
    Mutant("shared/_lsq_nb.py",
           "                        mu = max(mu * max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3), MU_MIN)",
           "                        mu = max(mu * min(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3), MU_MIN)",
           "Nielsen's damping update with min, not max", LM),
    Mutant("shared/_lsq_nb.py", "                M[q, q] += mu * max(d2[idx[q]], floor)",
           "                M[q, q] += mu", "damping not scaled by D² (Levenberg, not Marquardt)", LM),
    Mutant("shared/_lsq_nb.py", "                    if dx[a] != 0.0 and (xn[a] == lo[a] or xn[a] == hi[a]):",
           "                    if dx[a] != 0.0 and xn[a] == lo[a]:",
           "a step cut at a new upper bound taken as convergence", LM),
    Mutant("shared/_lsq_nb.py", "                        _secant_update(S, dx, gn - g, gn - np.dot(J.T, rn))",
           "                        _secant_update(S, dx, gn - np.dot(J.T, rn), gn - g)",
           "secant update with y and y# swapped", LM),
    Mutant("shared/_lsq_nb.py", "                        second = actual < SWITCH * ssr",
           "                        second = actual > SWITCH * ssr",
           "second-order model after fast, not slow, progress", LM),
    # -- shared/checks.py ----------------------------------------------------------------------
    Mutant("shared/checks.py", "    if not is_whole(value) or (minimum is not None and value < minimum):",
           "    if not is_whole(value) or (minimum is not None and value <= minimum):",
           "the minimum itself refused", CHECKS),
    Mutant("shared/checks.py", "    if isinstance(value, bool):\n        return False\n", "",
           "booleans accepted as whole numbers", CHECKS),
    Mutant("shared/checks.py", "            or not 0 < value < 1:", "            or not 0 < value <= 1:",
           "probability 1 accepted", CHECKS),
    Mutant("shared/checks.py", "    if not isinstance(procedures, Mapping):",
           "    if not hasattr(procedures, \"__iter__\"):",
           "any iterable taken for a mapping of procedures", CHECKS),
    # -- demand/fitting.py ---------------------------------------------------------------------
    Mutant("demand/fitting.py", "    if int(max_nfev) != max_nfev or int(max_nfev) < 1:",
           "    if int(max_nfev) != max_nfev or int(max_nfev) < 0:",
           "max_nfev = 0 accepted", FIT),
    Mutant("demand/fitting.py", "            cap = {\"converge\": CONVERGE_CAP, \"start\": per_start}.get(budget, left)",
           "            cap = {\"converge\": CONVERGE_CAP, \"start\": per_start}.get(budget, per_start)",
           "budget='fit' gives every start the whole budget", FIT),
    Mutant("demand/fitting.py", "            if cap <= 0:", "            if cap < 0:",
           "a start left with no evaluation still runs", FIT),
    Mutant("demand/fitting.py", "                improved = improved or (best is not None and cost < best[1] * (1 - FOLLOWUP_GAIN))",
           "                improved = improved or (best is not None and cost < best[1] * (1 + FOLLOWUP_GAIN))",
           "a re-converged last digit counts as a gain", FIT),
    Mutant("demand/fitting.py", "    status = {1: 1, 2: 2, 3: 3, 4: 2}.get(int(r.status), 0)",
           "    status = {1: 1, 2: 2, 3: 3, 4: 2}.get(int(r.status), 1)",
           "scipy's budget stop reported as convergence", FIT),
    Mutant("demand/fitting.py", "        if self._x is not None and np.array_equal(z, self._x):",
           "        if self._x is not None:",
           "scipy's Jacobian served from the last residual call, wherever asked", FIT),
    Mutant("demand/fitting.py", "    x0 = x0.copy()\n    _snap(x0, problem.lo, problem.hi, problem.free)",
           "    x0 = x0.copy()", "scipy's start not put on a bound within rounding",
           (*FIT, "tests/test_demand_fitting.py::test_the_stalled_sample_fits_below_mnl")),
    Mutant("demand/fitting.py", "        enough = None          # it chooses among the starts, not the follow-ups\n",
           "", "the rule that skips further starts also skips the follow-ups", ADAPTIVE),
    Mutant("demand/models.py", "                return status in CONVERGED and cost < mnl.cost * (1 - FOLLOWUP_GAIN)",
           "                return cost < mnl.cost * (1 - FOLLOWUP_GAIN)",
           "a first MXL start out of budget skips the second start", ADAPTIVE),
    Mutant("demand/models.py", "                return status in CONVERGED and cost < mnl.cost * (1 - FOLLOWUP_GAIN)",
           "                return status in CONVERGED",
           "a first MXL start ending at the MNL objective skips the second start", ADAPTIVE),
    # -- demand/models.py ----------------------------------------------------------------------
    Mutant("demand/models.py", "            beta[names.index(\"Intercept\")] = np.log(b / (1 - J * b))",
           "            beta[names.index(\"Intercept\")] = np.log(b / (1 - b))",
           "baseline start from a one-product market", DEMAND_FIT),
    Mutant("demand/models.py", "        lhs = np.log(np.where(ok, y, 1.0) / s0)[ok]",
           "        lhs = np.log(np.where(ok, y, 1.0))[ok]",
           "Berry regression on log s_j, not log(s_j/s_0)", DEMAND_FIT),
    Mutant("demand/models.py", "                hit = abs(abs(v) - CHOL_BOUND) < tol or (row == col and v <= tol)",
           "                hit = abs(abs(v) - CHOL_BOUND) < tol or abs(v) <= tol",
           "an off-diagonal L at 0 flagged as on a bound", DEMAND_FIT),
    Mutant("demand/models.py", "                hit = abs(abs(v) - CHOL_BOUND) < tol or (row == col and v <= tol)",
           "                hit = abs(abs(v) - CHOL_BOUND) < tol or (row == col and v == 0)",
           "an MXL variance driven to 0 in the limit (L_aa = 2e-16) not flagged on its bound",
           ("tests/test_demand_models.py::test_at_bounds_names_exactly_the_parameters_on_a_bound",
            "tests/test_demand_models.py::test_a_mixed_logit_variance_driven_to_zero_is_flagged_"
            "on_its_bound")),
    Mutant("demand/models.py", "                hit = v <= tol or v >= RHO_MAX - tol",
           "                hit = v <= tol", "ρ on its upper bound 0.99 not flagged", DEMAND_FIT),
    Mutant("demand/models.py", "    x_lo[d], x_hi[d] = -np.sqrt(CHOL_BOUND), np.sqrt(CHOL_BOUND)",
           "    x_lo[d], x_hi[d] = -CHOL_BOUND, CHOL_BOUND",
           "η = √L_aa bounded by L_aa's bound, not its square root", DEMAND_FIT),
    Mutant("demand/models.py", "        if float(jac[:, K + q] @ r) < 0.0:",
           "        if float(jac[:, K + q] @ r) > 0.0:",
           "reflected start screened by the wrong slope sign",
           ("tests/test_demand_fitting.py::test_reflected_start_has_the_same_covariance_and_is_"
            "screened_by_its_slope", *DEMAND_FIT)),
    Mutant("demand/models.py", "    if (y < 0).any() or (y.sum(axis=1) >= 1).any():",
           "    if (y < 0).any() or (y.sum(axis=1) > 1).any():",
           "inside shares summing to exactly 1 accepted", DEMAND_FIT),
    Mutant("demand/models.py", "    g = design.price_derivative(X) @ params * _price(X, design)     # ∂δ_k/∂log p_k",
           "    g = design.price_derivative(X) @ params     # ∂δ_k/∂log p_k",
           "MNL elasticities in price, not log price", DEMAND_FIT),
    # -- demand/elasticities.py ------------------------------------------------------------------
    Mutant("demand/elasticities.py", "    valid = np.isfinite(rows).all(axis=1) & (rows > 0).all(axis=1)",
           "    valid = np.isfinite(rows).all(axis=1)", "zero shares not refused", ELAST),
    Mutant("demand/elasticities.py", "    ok = valid[:m].reshape(n, 2 * J).all(axis=1) & valid[m:]",
           "    ok = valid[:m].reshape(n, 2 * J).any(axis=1) & valid[m:]",
           "a market falls back only when every perturbed copy was replaced", ELAST),
    Mutant("demand/elasticities.py", "    if h.shape != (n, J) or not (np.isfinite(h) & (h > 0)).all():",
           "    if h.shape != (n, J):",
           "a zero finite-difference step gives NaN elasticities",
           ("tests/test_demand_prior.py::test_rule_elasticities_refuse_steps_that_cannot_"
            "difference",)),
    Mutant("demand/elasticities.py", "    return float(truth.eval_weights @ err)",
           "    return float(err.mean())", "demand discrepancies ignore the evaluation weights",
           ELAST),
    Mutant("demand/elasticities.py", "        err = ((pred - y) ** 2).reshape(len(pred), -1).mean(axis=1)",
           "        err = ((pred - y) ** 2).reshape(len(pred), -1).sum(axis=1)",
           "share MSE summed over products, not averaged", ELAST),
    Mutant("demand/elasticities.py", "        return np.eye(J, dtype=bool) if self.own else ~np.eye(J, dtype=bool)",
           "        return np.eye(J, dtype=bool) if self.own else np.ones((J, J), dtype=bool)",
           "cross-price MSE includes the own elasticities", ELAST),
    # -- demand/markets.py and demand/prior.py: what a market draw refuses -----------------------
    Mutant("demand/markets.py", "        if not is_whole(n_markets) or n_markets < 0:  # int() took 2.5 markets as 2",
           "        if int(n_markets) < 0:  # int() took 2.5 markets as 2",
           "a fractional number of markets truncated", SIZES),
    Mutant("demand/prior.py", "        draws = whole_number(draws, \"draws\", minimum=1)",
           "        draws = int(draws)", "1.5 training draws taken as 1", SIZES),
    Mutant("demand/prior.py", "        if not sizes or not all(is_whole(n) and n >= 1 for n in sizes):",
           "        if not sizes or not all(n >= 1 for n in sizes):",
           "a sample size of 2.5 taken as 2", SIZES),
    Mutant("demand/prior.py", "        if isinstance(rho, bool) or not isinstance(rho, numbers.Real) \\",
           "        if isinstance(rho, bool) \\",
           "a mushy correlation given as text read as a number",
           ("tests/test_demand_prior.py::test_prior_shape_options_are_numbers_or_refused_by_name",)),
    Mutant("demand/markets.py", "        tag = _calibration_digest(self.calibration)",
           "        tag = _shipped_digest()",
           "a market distribution on other calibration data resumes the shipped data's checkpoint",
           ("tests/test_demand_prior.py::test_a_checkpoint_on_other_calibration_data_is_not_"
            "resumed",)),
    Mutant("demand/markets.py", "        if not np.isfinite(X).all():  # a NaN price or sugar was reported as on the boundary",
           "        if False:  # a NaN price or sugar was reported as on the boundary",
           "a NaN price reported as a price on the hull's boundary", SIZES),
    # -- ai/sandbox: the parent's side -----------------------------------------------------------
    Mutant("ai/sandbox/limits.py", "        return max(1, math.ceil(self.cpu_seconds if self.cpu_seconds is not None",
           "        return max(1, int(self.cpu_seconds if self.cpu_seconds is not None",
           "fractional CPU limit truncated, not rounded up", SANDBOX),
    Mutant("ai/sandbox/limits.py", "            if not is_positive(value):",
           "            if not (is_positive(value) or value == 0):",
           "cpu_seconds = 0 accepted", SANDBOX),
    Mutant("ai/sandbox/workdir.py", "        if math.prod(shape) * dtype.itemsize != data:",
           "        if math.prod(shape) * dtype.itemsize > data:",
           "an array file longer than its header says accepted", SANDBOX),
    Mutant("ai/sandbox/workdir.py", "    return status if isinstance(status, dict) else None",
           "    return status", "a status that is not a JSON object passed on", SANDBOX),
    Mutant("ai/sandbox/runner.py", "            self.tails[name] = (self.tails[name] + chunk)[-self.keep:]",
           "            self.tails[name] = (self.tails[name] + chunk)[:self.keep]",
           "the head of a stream kept, not its tail", SANDBOX),
    # -- ai/sandbox: the disk and file-count caps are the kernel's (a capped tmpfs) -------------
    Mutant("ai/sandbox/_child/workspace.py", '    return f"mode=0700,size={int(disk_bytes)},nr_inodes={int(max_files) + 1}"',
           '    return f"mode=0700,size={int(disk_bytes)}"',
           "the working directory's tmpfs without an inode cap: files past max_files", CAPS),
    Mutant("ai/sandbox/_child/workspace.py", "        os.chdir(fd)\n", "",
           "the program left in the host's directory under its tmpfs, where no cap holds", CAPS),
    Mutant("ai/sandbox/runner.py", '    return "disk" if free.f_bfree == 0 else "files" if free.f_ffree == 0 else None',
           '    return "files" if free.f_ffree == 0 else None',
           "a program that filled its capped tmpfs and carried on read as ok", CAPS),
    Mutant("ai/sandbox/runner.py", '        return None, "no-room"',
           '        return open_directory(".sandbox", tmpfs), None',
           "a program run with only part of its files, those that fit its caps", CAPS),
    Mutant("ai/sandbox/runner.py", "        if returncode == EXIT_NO_ROOM or f\"[Errno {errno.ENOSPC}]\" in err:",
           "        if False:",
           "a program whose status had no room in its full tmpfs read as a crash", CAPS),
    Mutant("ai/sandbox/runner.py", '        return copy_tree(tmpfs, host, limits.disk_bytes, skip=frozenset({".sandbox"})) \\',
           "        return copy_tree(tmpfs, host, limits.disk_bytes) \\",
           "a kept directory's copy back out collides with its control directory", CAPS),
    Mutant("ai/sandbox/workdir.py", "        while offset < size:\n            try:\n                start = os.lseek(fd_in, offset, os.SEEK_DATA)\n            except OSError as exc:\n                if exc.errno == errno.ENXIO:  # nothing but a hole to the end\n                    break\n                raise\n            end = min(os.lseek(fd_in, start, os.SEEK_HOLE), size)\n",
           "        while offset < size:\n            start, end = offset, size\n",
           "a sparse file copied out of the tmpfs with its holes written as zeros", CAPS),
    Mutant("ai/sandbox/workdir.py", "        info = os.stat(name, dir_fd=src, follow_symlinks=False)",
           "        info = os.stat(name, dir_fd=src)",
           "a link in the program's tmpfs followed by the parent's copy", CAPS),
    Mutant("ai/sandbox/workdir.py", "                         os.O_CLOEXEC, 0o600, dir_fd=dst)",
           "                         os.O_CLOEXEC, stat.S_IMODE(info.st_mode), dir_fd=dst)",
           "a file the program locked (mode 000) copied out locked", CAPS),
    Mutant("ai/sandbox/runner.py", "                if total > limits.disk_bytes:",
           "                if False:",
           "sparse output arrays past the disk cap loaded whole by the parent",
           ("tests/test_sandbox_attacks.py::test_what_the_child_leaves_at_its_end_is_counted",)),
    # -- lottery/models.py: bounds, grids and the reported δ ----------------------------------------
    Mutant("lottery/models.py", "        if ell <= np.log(lo):\n            return lo\n", "",
           "δ on its lower bound reported as exp(log δ), an ulp off", LOTTERY_BOUNDS),
    Mutant("lottery/models.py", "                if free[a] and (theta[a] <= lo[a] or theta[a] >= hi[a])]",
           "                if free[a] and (theta[a] <= lo[a] or theta[a] > hi[a])]",
           "estimates on an upper bound not flagged", LOTTERY_BOUNDS),
    Mutant("lottery/models.py", "            if q in (\"alpha\", \"delta\") and lo <= 0:",
           "            if q in (\"alpha\", \"delta\") and lo < 0:",
           "a lower bound of 0 accepted for α and δ", LOTTERY_BOUNDS),
    Mutant("lottery/models.py", "            if not self.grid[q] or min(self.grid[q]) < lo or max(self.grid[q]) > hi:",
           "            if not self.grid[q] or min(self.grid[q]) < lo:",
           "start grid beyond the upper bound accepted", LOTTERY_BOUNDS),
    Mutant("lottery/models.py", "            if q == \"gamma\" and lo < 0:",
           "            if q == \"gamma\" and lo < -1:",
           "a negative lower bound accepted for γ", LOTTERY_BOUNDS),
    Mutant("lottery/models.py", "            if getattr(part, \"kind\", None) != kind or part.parameters != parameters:",
           "            if part.parameters != parameters:",
           "a weighting code the kernel lacks computed as Prelec's", LOTTERY_BOUNDS),
    # -- lottery/lotteries.py: roles by position, errors naming rows ------------------------------
    Mutant("lottery/lotteries.py", "                 if c in LOTTERY_COLUMNS and c != role]",
           "                 if c in LOTTERY_COLUMNS and c != role and False]",
           "a role's name in another role's position accepted (ce ~ z_lo + z_hi + p)",
           LOTTERY_ORDER),
    Mutant("lottery/lotteries.py", "p.max(initial=0.0) <= 1 and (zl <= zh).all() \\",
           "p.max(initial=0.0) <= 1 \\",
           "swapped prizes pass the lotteries' fast check", LOTTERY_ORDER),
    Mutant("lottery/lotteries.py", "        rows = X.index if rows is None else rows\n", "",
           "a DataFrame's bad rows named by position, not by its index labels", LOTTERY_ORDER),
    Mutant("lottery/estimation.py", "        fitted.names = self.names[1:]\n", "",
           "an estimate's fitted rule reads new frames by z_hi, z_lo, p, not the formula's columns",
           ("tests/test_lottery_models.py::test_the_fitted_rule_of_an_estimate_reads_new_data_by_"
            "the_formula_columns", "tests/test_lottery_models.py")),
    Mutant("lottery/models.py", "        if abs(delta - bound) <= 1e-12 * bound:\n            return bound",
           "        if abs(delta - bound) <= 1e-12 * bound:\n            return delta",
           "a DA grid on eta's documented bound -29/30 refused (delta 30.000000000000007)",
           ("tests/test_lottery_models.py::test_disappointment_aversion_takes_a_grid_on_the_"
            "bounds_of_eta", "tests/test_lottery_models.py")),
    Mutant("procedures/estimation.py", "        bread = (Vt[kept].T / S[kept] ** 2) @ Vt[kept]  # (JᵀJ)⁺ from J's SVD, not JᵀJ's",
           "        bread = np.linalg.pinv(J.T @ J)",
           "standard errors from pinv(JᵀJ): small ones for barely identified parameters",
           ("tests/test_nls.py::test_standard_errors_of_a_nearly_collinear_model_equal_"
            "statsmodels", "tests/test_lottery_models.py::test_parameters_the_data_barely_"
            "inform_get_no_small_standard_error", *LSQ)),
    Mutant("procedures/estimation.py", "        rows = data.index if data is not None and len(data.index) == nobs else None",
           "        rows = None",
           "missing cluster identifiers named by position, not the data's labels",
           ("tests/test_cluster_groups.py",)),
    # -- engine/timeouts.py: fits under fit_timeout ----------------------------------------------
    Mutant("engine/timeouts.py", "                if wait is not None and wait > _WAIT_SLICE:\n                    continue\n", "",
           "a fit that outlasts one wait slice is stopped before its limit",
           ("tests/test_runner.py::test_a_fit_timeout_longer_than_a_single_wait_gives_the_numbers_"
            "of_no_limit",)),
    Mutant("engine/timeouts.py", "                    seconds = time.monotonic() - started  # the limit, not the clean-up\n                    child.kill(grace=STOP_GRACE)",
           "                    child.kill(grace=STOP_GRACE)\n                    seconds = time.monotonic() - started",
           "a timed-out unit's seconds include the clean-up's grace", TIMEOUTS),
    Mutant("engine/timeouts.py", "            self._fork()\n        except BaseException:\n            self.kill(grace=self.grace)\n            raise",
           "            self._fork()\n        except BaseException:\n            raise",
           "a child forked just before a stop request is left to die without its clean-up",
           ("tests/test_runner.py::test_a_stop_request_as_the_units_process_starts_still_runs_its_clean_up",)),
    Mutant("engine/timeouts.py", "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    raise _Stopped",
           "    raise _Stopped",
           "a repeated stop request interrupts the unit's clean-up",
           ("tests/test_runner.py::test_a_repeated_stop_request_does_not_interrupt_the_clean_up",)),
    Mutant("engine/study.py", "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    raise WorkerTerminated",
           "    raise WorkerTerminated",
           "the executor's second SIGTERM interrupts a stopping worker's clean-up",
           ("tests/test_runner.py::test_workers_stopped_by_an_interrupt_run_their_clean_up",)),
    Mutant("engine/study.py", "                                scheduler_kwargs={\"allowed_failures\": 0,\n                                                  \"dashboard_address\": \"127.0.0.1:0\"})",
           "                                scheduler_kwargs={\"allowed_failures\": 0})",
           "the study's own dask scheduler serves on port 8787 and warns when it is taken",
           ("tests/test_study.py::test_a_local_dask_cluster_does_not_warn_that_port_8787_is_taken",)),
    Mutant("engine/study.py", "    until = time.monotonic() + 2 * timeouts.STOP_GRACE + 1.0",
           "    until = time.monotonic() + 1.0",
           "pool workers killed before their fits' processes finish their clean-up",
           ("tests/test_runner.py::test_workers_stopped_by_an_interrupt_run_their_clean_up",)),
    Mutant("engine/timeouts.py", "            if grace > 0 and hasattr(os, \"waitid\"):",
           "            if grace < 0 and hasattr(os, \"waitid\"):",
           "no SIGTERM grace: a timed-out unit's clean-up never runs", TIMEOUTS),
    Mutant("engine/timeouts.py", "    signal.pthread_sigmask(signal.SIG_SETMASK, mask)\n    _report_compiling(fd)",
           "    _report_compiling(fd)",
           "the child keeps SIGTERM blocked: stop requests never arrive", TIMEOUTS),
    Mutant("engine/timeouts.py", "                limit = None if limit is None else limit + spent",
           "                limit = limit",
           "numba's compile time counted against the limit", TIMEOUTS),
    Mutant("engine/timeouts.py", "                limit = None if value == _UNTIMED else self.stage_started + timeout",
           "                limit = self.stage_started + timeout",
           "end_stages ignored: a replication's fits bounded by one limit together", TIMEOUTS),
    Mutant("engine/timeouts.py", "        armed = libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0",
           "        armed = True",
           "child not armed to die with its caller (believed armed)", TIMEOUTS),
    Mutant("engine/timeouts.py", "            for target in (lambda: os.killpg(self.pid, signal.SIGKILL),",
           "            for target in (lambda: os.kill(self.pid, signal.SIGKILL),",
           "the child killed, not its process group (what a unit started lives on)", TIMEOUTS),
    # -- engine/concurrency.py: the rate limiter -------------------------------------------------
    # -- shared/forksafe.py: locks a forked child inherits ------------------------------------------
    Mutant("shared/forksafe.py", "os.register_at_fork(after_in_child=_renew_locks)", "",
           "a lock another thread held at the fork stays held in the child", FORKSAFE),
    Mutant("shared/forksafe.py", "        if self._owner != threading.get_ident():",
           "        if True:",
           "the forking thread's own lock renewed under it in the child", FORKSAFE),
    Mutant("shared/forksafe.py", "os.register_at_fork(before=global_compiler_lock.acquire,\n                    after_in_parent=global_compiler_lock.release,\n                    after_in_child=global_compiler_lock.release)\n", "",
           "a fork does not wait for another thread's numba compilation", FORKSAFE),
    Mutant("engine/concurrency.py", "            return events.get(timeout=WAIT_SLICE)",
           "            return events.get()",
           "Ctrl-C handled on another thread is seen only at the next fit's end",
           ("tests/test_llm_clients.py::test_an_interrupt_handled_on_another_thread_stops_a_threaded_run_at_once",)),
    Mutant("engine/study.py",
           "            done, _ = wait(running, timeout=WAIT_SLICE, return_when=FIRST_COMPLETED)",
           "            done, _ = wait(running, return_when=FIRST_COMPLETED)",
           "a pool run sees Ctrl-C handled on another thread only when a replication ends",
           ("tests/test_runner.py::test_an_interrupt_handled_on_another_thread_stops_a_pool_run_"
            "at_once",)),
    Mutant("shared/files.py", "                    time.sleep(_LOCK_POLL)\n",
           "                    fcntl.flock(fd, fcntl.LOCK_EX)\n                    break\n",
           "a lock's blocking wait sleeps in flock (Ctrl-C on another thread unseen)",
           ("tests/test_checkpoint.py::test_waiting_for_a_lock_sees_an_interrupt_handled_on_"
            "another_thread",)),
    Mutant("engine/concurrency.py", "    pause(0.0)  # a stopped run sends nothing more (its limiter may be closed already)\n", "",
           "a fit of a stopped run sends its next request", STOP),
    Mutant("engine/concurrency.py", "os.register_at_fork(after_in_child=_leave_the_run_in_child)\n", "",
           "a process forked from a run's thread keeps the run's stop event", STOP),
    Mutant("engine/concurrency.py", "            token = _STOP.set(stop)", "            token = _STOP.set(None)",
           "the run's stop not seen by its thread tasks", STOP),
    Mutant("engine/concurrency.py", "    elif stop.wait(max(seconds, 0.0)):", "    elif time.sleep(max(seconds, 0.0)) or stop.is_set():",
           "a back-off wait sleeps through the run's stop", STOP),
    Mutant("engine/concurrency.py", "                self._next[:] = _SLOT.pack(slot + self.interval)",
           "                self._next[:] = _SLOT.pack(now + self.interval)",
           "next slot counted from now, not from the slot taken", LIMITER),
    Mutant("engine/concurrency.py", "        self.interval = 60.0 / float(requests_per_minute)",
           "        self.interval = 1.0 / float(requests_per_minute)",
           "requests per minute taken as per second", LIMITER),
    Mutant("engine/concurrency.py", "        self._next = mmap.mmap(self._file.fileno(), _SLOT.size)  # MAP_SHARED: seen by forks",
           "        self._next = mmap.mmap(self._file.fileno(), _SLOT.size, flags=mmap.MAP_PRIVATE)",
           "the schedule copied, not shared, by forked fits", LIMITER),
    Mutant("engine/concurrency.py", "            with self._lock:\n                if key in self._values:\n                    return self._values[key]\n            value = self.factory(key)",
           "            value = self.factory(key)",
           "KeyedOnce: a thread that waited for the key computes it again", LIMITER),
    # -- procedures/nls.py: function models and their jac ------------------------------------------
    Mutant("procedures/nls.py", "            if self.jac is not None and math.isfinite(ssr):",
           "            if self.jac is not None and not math.isfinite(ssr):",
           "a user's jac not checked against differences", NLS_JAC),
    Mutant("procedures/nls.py", "               if not e <= 1e-3 * s + r + 1e-8]",
           "               if not e <= 1e-1 * s + r + 1e-8]",
           "a jac 10% off accepted", NLS_JAC),
    Mutant("procedures/nls.py", "        rounding = 100 * eps * np.abs(f).max(initial=0.0) / (",
           "        rounding = 0 * eps * np.abs(f).max(initial=0.0) / (",
           "the jac check ignores the differences' rounding", NLS_JAC),
    Mutant("procedures/nls.py", "            J[:, k] = (f_up - f_down) / (up[k] - down[k])",
           "            J[:, k] = (f_up - f_down) / (2 * h)",
           "one-sided differences at a bound divided by 2h", NLS_JAC),
    Mutant("procedures/nls.py", "        return f - y, J * np.where(logscale != 0, theta, 1.0)",
           "        return f - y, J",
           "function-model Jacobian without the log scale's chain rule", NLS_JAC),
    Mutant("procedures/nls.py", "            if x[k] <= lo[k]:\n                theta[k] = self.bounds[q][0]",
           "            if x[k] < lo[k]:\n                theta[k] = self.bounds[q][0]",
           "an estimate on its lower bound reported as exp(log lo)", NLS_JAC),
    # -- engine/checkpoint.py: resuming --------------------------------------------------------------
    Mutant("engine/checkpoint.py", "_CARRIER_DEPTH, _CARRIER_LIMIT = 6, 20_000", "_CARRIER_DEPTH, _CARRIER_LIMIT = 1, 20_000",
           "the fingerprint follows attributes one level only", FINGERPRINT),
    Mutant("engine/checkpoint.py", "            and (top or not (name.startswith(\"_\") or name.endswith(\"_\")))]",
           "            ]", "the fingerprint follows private and fitted state", FINGERPRINT),
    Mutant("engine/checkpoint.py", "_NOT_HASHED = (\"replications\",)",
           "_NOT_HASHED = (\"replications\", \"seed\")",
           "the configuration hash omits the seed", CKPT),
    Mutant("engine/checkpoint.py", "            if record.replication != replication:",
           "            if record.replication < 0:",
           "a record filed under another replication's name used", CKPT),
    Mutant("engine/checkpoint.py", "        if self._file(replication).exists():\n            self.release(replication)\n            return False",
           "",
           "a replication another run finished is claimed and computed again", CKPT),
    Mutant("engine/checkpoint.py", "            if not entry.is_file(follow_symlinks=False) or alive(int(match.group(2))):",
           "            if not entry.is_file(follow_symlinks=False):",
           "a live writer's temporary file removed", CKPT),
    Mutant("engine/checkpoint.py", "        changed = {k: (v, self.versions.get(k)) for k, v in stored.get(\"versions\", {}).items()\n                   if self.versions.get(k) != v}",
           "        changed = {k: (v, self.versions.get(k)) for k, v in stored.get(\"versions\", {}).items()\n                   if k in self.versions and self.versions.get(k) != v}",
           "a package version absent now not counted as changed", CKPT),
    Mutant("engine/checkpoint.py", "        if not isinstance(path, str | os.PathLike) or not str(path):",
           "        if not isinstance(path, str | os.PathLike):",
           "checkpoint='' read as the working directory",
           ("tests/test_checkpoint.py::test_an_empty_checkpoint_path_is_refused_not_read_as_the_"
            "working_directory",)),
    Mutant("engine/checkpoint.py", "        self.order = list(procedures) if isinstance(procedures, dict) else None",
           "        self.order = sorted(procedures) if isinstance(procedures, dict) else None",
           "the procedure order kept sorted, as the hash reads it: a reordered study resumed",
           ("tests/test_checkpoint.py::test_a_checkpoint_resumed_with_the_procedures_reordered_is_"
            "refused_not_relabelled",)),
    Mutant("engine/checkpoint.py", "        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)",
           "        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)",
           "a record that is a symbolic link followed (to /dev/zero: until the memory runs out)",
           ("tests/test_checkpoint.py::test_a_record_that_is_not_a_regular_file_is_moved_aside_"
            "not_read",)),
    Mutant("engine/checkpoint.py", "    if not regular:", "    if False:",
           "a record that is a pipe or folder read as a file",
           ("tests/test_checkpoint.py::test_a_record_that_is_not_a_regular_file_is_moved_aside_"
            "not_read",)),
    Mutant("engine/checkpoint.py", "                          if k == \"procedure_order\" or not allow_other_versions}",
           "                          if k == \"procedure_order\"}",
           "a record copied from a checkpoint of other versions or code used",
           ("tests/test_checkpoint.py::test_a_record_copied_from_a_checkpoint_of_other_versions_"
            "is_rejected_unless_asked_for",)),
    Mutant("engine/checkpoint.py", "                          if k == \"procedure_order\" or not allow_other_versions}",
           "                          if not allow_other_versions}",
           "a record copied from a checkpoint in another procedure order used when resuming "
           "other versions",
           ("tests/test_checkpoint.py::test_a_record_copied_from_a_checkpoint_with_the_"
            "procedures_in_another_order_is_rejected",)),
    Mutant("engine/checkpoint.py", "        if folder_record:\n            target = Path(tempfile.mkdtemp(prefix=prefix, suffix=\".npz\", dir=folder))\n        else:\n            fd, name = tempfile.mkstemp(prefix=prefix, suffix=\".npz\", dir=folder)\n            os.close(fd)\n            target = Path(name)",
           "        target = folder / f\"{prefix[:-1]}.npz\"",
           "a rejected record named by the second replaces one rejected in that second",
           ("tests/test_checkpoint.py::test_two_rejections_of_a_record_within_a_second_keep_both_"
            "files",)),
    Mutant("engine/checkpoint.py", "        if folder_record:\n            target = Path(tempfile.mkdtemp(", "        if False:\n            target = Path(tempfile.mkdtemp(",
           "a folder in a record's place cannot be moved to rejected/ (a file holds its name)",
           ("tests/test_checkpoint.py::test_a_record_that_is_not_a_regular_file_is_moved_aside_"
            "not_read",)),
    Mutant("shared/files.py", "        if entry.is_file(follow_symlinks=False) and not alive(pid):",
           "        if entry.is_file(follow_symlinks=False):",
           "a live writer's temporary file of an output removed",
           ("tests/test_cli.py::test_a_results_writer_killed_mid_write_leaves_nothing_after_the_"
            "next_write",)),
    Mutant("shared/files.py", "                and exc.filename in (None, name, tmp):",
           "                and exc.filename in (name, tmp):",
           "a full disk's error without a file name not given the file",
           ("tests/test_cli.py::test_a_disk_that_fills_midway_names_the_file_being_written",)),
    Mutant("shared/files.py", "    if follow_symlinks and target.is_symlink():", "    if False:",
           "an output through a symbolic link replaces the link, not the file it names",
           ("tests/test_cli.py::test_out_through_a_symbolic_link_writes_the_file_it_names",)),
    Mutant("shared/files.py", "    if not target.is_symlink() and target.exists() and not target.is_file():",
           "    if False:",
           "an output onto a device or pipe replaces it with a regular file",
           ("tests/test_cli.py::test_out_to_a_device_or_pipe_is_refused_before_the_run",)),
    Mutant("cli/options.py", "    if real.exists() and not real.is_file():", "    if False:",
           "--out onto a device or pipe is found only after the run",
           ("tests/test_cli.py::test_out_to_a_device_or_pipe_is_refused_before_the_run",)),
    Mutant("engine/study.py", "                                   None if checkpoint is None else str(checkpoint)) from None",
           "                                   None if store is None else str(store.path)) from None",
           "an interrupt while the checkpoint opens says to pass one",
           ("tests/test_runner.py::test_an_interrupt_while_the_checkpoint_opens_does_not_say_to_"
            "pass_one",)),
    # -- shared/_jit.py: the kernel digest -----------------------------------------------------------
    Mutant("shared/_jit.py", "    for path in sorted(root.rglob(\"*.py\")):",
           "    for path in sorted(root.glob(\"*.py\")):",
           "the digest leaves out the subpackages' modules", JIT),
    Mutant("shared/_jit.py", "        if b\"numba\" in source:",
           "        if b\"njit\" in source:",
           "the digest leaves out modules that use numba without njit", JIT),
    Mutant("shared/_jit.py", "    copy.__qualname__ = f\"{func.__qualname__}_{kernel_digest(_package_root(func))}\"",
           "    copy.__qualname__ = func.__qualname__",
           "the cache key without the digest", JIT),
    # -- ai/clients.py: retries and the call budget ----------------------------------------------------
    Mutant("ai/clients.py", "    mounts = {pattern: None if url is None else Transport(url)",
           "    mounts = {pattern: None if url is None else httpx.HTTPTransport(proxy=url)",
           "requests through an environment proxy are not bounded in all",
           ("tests/test_llm_clients.py::test_the_proxy_environment_is_honoured_and_bounded",)),
    Mutant("ai/clients.py", "            attempt = _ATTEMPT.current = _Attempt(timeout)",
           "            attempt = _ATTEMPT.current = _Attempt(3600.0)",
           "an HTTP attempt is not bounded in all, only each read (a trickled head runs on)",
           ("tests/test_llm_clients.py::test_headers_trickled_byte_by_byte_time_out_in_all",)),
    Mutant("ai/clients.py", "            if not self._done:\n                self.expired = True",
           "            if True:\n                self.expired = True",
           "a watchdog timer firing after its attempt finished shuts the pooled sockets down",
           ("tests/test_llm_clients.py::test_the_attempt_watchdog_wakes_a_blocked_receive_at_the_deadline",)),
    Mutant("ai/clients.py", "        self._timer.cancel()\n        self._unhook()",
           "        self._unhook()",
           "a finished attempt's watchdog timer is left running",
           ("tests/test_llm_clients.py::test_the_attempt_watchdog_wakes_a_blocked_receive_at_the_deadline",)),
    Mutant("ai/clients.py", "                if not retry or retries >= self.max_retries:",
           "                if not retry or retries > self.max_retries:",
           "one retry more than max_retries", CLIENT),
    Mutant("ai/clients.py", "                told != \"false\" and (status in RETRY_STATUSES or status >= 500))",
           "                told != \"false\" and (status in RETRY_STATUSES or status > 500))",
           "HTTP 500 not retried", CLIENT),
    Mutant("ai/clients.py", "                told != \"false\" and (status in RETRY_STATUSES or status >= 500))",
           "                (status in RETRY_STATUSES or status >= 500))",
           "x-should-retry: false ignored (a recurring 429 retried to the end)", CLIENT),
    Mutant("ai/clients.py", "            retry = (told == \"true\" and not 300 <= status < 400) or (",
           "            retry = (",
           "x-should-retry: true ignored (a 400 the endpoint asks to retry is not)", CLIENT),
    Mutant("ai/clients.py", "              for name in (\"cache_creation_input_tokens\", \"cache_read_input_tokens\")]",
           "              for name in ()]",
           "Anthropic's cached prompt tokens left out of the input tokens",
           ("tests/test_llm_clients.py::test_anthropic_input_tokens_include_the_prompt_cache",)),
    Mutant("ai/clients.py", "    if not (is_whole(value) and 0 <= value <= _MAX_REPLY_TOKENS):",
           "    if not (is_whole(value) and 0 <= value):",
           "a reply claiming 1e30 tokens summed into usage and priced",
           ("tests/test_llm_clients.py::test_token_counts_that_are_not_counts_are_a_malformed_reply",)),
    Mutant("ai/clients.py", "    if not (is_whole(value) and 0 <= value <= _MAX_REPLY_TOKENS):",
           "    if not (is_whole(value) and value <= _MAX_REPLY_TOKENS):",
           "a reply claiming a negative token count summed into usage",
           ("tests/test_llm_clients.py::test_token_counts_that_are_not_counts_are_a_malformed_reply",)),
    Mutant("ai/clients.py", "        if unknown and not text and not calls:", "        if False:",
           "an Anthropic reply of content blocks of unknown types only read as an empty answer",
           ("tests/test_llm_clients.py::test_anthropic_content_blocks_of_unknown_types_alone_are_"
            "a_malformed_reply",)),
    Mutant("ai/clients.py", "        if unknown and not text and not calls:", "        if unknown:",
           "an Anthropic reply with text refused for a content block of an unknown type beside it",
           ("tests/test_llm_clients.py::test_anthropic_content_blocks_of_unknown_types_alone_are_"
            "a_malformed_reply",)),
    Mutant("ai/clients.py", "                if m[\"role\"] == \"assistant\" and not text.strip():",
           "                if False:", "an empty assistant turn sent to Anthropic as blank text",
           ("tests/test_llm_clients.py::test_anthropic_requests_hold_no_blank_text_block",)),
    Mutant("ai/clients.py", "        if parts.query or parts.fragment or self.base_url.endswith((\"?\", \"#\")):",
           "        if parts.fragment:", "a base URL with a query (an API key) taken",
           ("tests/test_llm_clients.py::test_a_base_url_with_a_query_is_refused_without_quoting_it",)),
    Mutant("ai/clients.py", "        if not (is_whole(n) and n == 1):", "        if not is_whole(n):",
           "OpenAIChat takes extra_body={'n': 3} and drops two of the replies",
           ("tests/test_llm_clients.py::test_openai_refuses_extra_body_asking_for_several_replies",)),
    Mutant("ai/clients.py", "            elif block.type == \"thinking\":", "            elif False:",
           "Anthropic's thinking blocks dropped (a tool turn refused without them)",
           ("tests/test_llm_clients.py::test_anthropic_thinking_blocks_go_back_with_their_tool_"
            "calls",)),
    Mutant("ai/clients.py", "        if api_key is not None and not isinstance(api_key, str):",
           "        if False:", "an api_key that is not text taken (every call a bare TypeError)",
           ("tests/test_llm_clients.py::test_adapters_refuse_options_they_would_misuse",)),
    Mutant("ai/clients.py", "            content, stop = refusal, \"refusal\"", "            pass",
           "an OpenAI refusal read as an empty answer",
           ("tests/test_llm_clients.py::test_openai_content_parts_and_refusals_are_read",)),
    Mutant("engine/study.py", "            or not isinstance(np.asarray(value).item(), numbers.Real):",
           "            or False:",
           "a discrepancy returning the text '0.5' read as the loss 0.5",
           ("tests/test_study_values.py::test_a_discrepancy_that_is_not_one_number_or_raises_is_named",)),
    Mutant("engine/study.py", "        if not isinstance(resume_other_versions, bool | np.bool_):  # bool(\"no\") is True",
           "        if False:  # bool(\"no\") is True",
           "resume_other_versions='no' read as True",
           ("tests/test_study.py::test_a_lone_procedure_and_a_resume_flag_that_is_not_a_bool_are_"
            "refused_by_name",)),
    Mutant("engine/failures.py", "        if raw.ndim == 0 or raw.shape[0] != len(X):  # a scalar was \"tuple index out of range\"",
           "        if raw.ndim == 0:  # a scalar was \"tuple index out of range\"",
           "a baseline's short vector of predictions not refused by its shape",
           ("tests/test_failures.py::test_a_baseline_without_one_prediction_per_row_is_refused_"
            "naming_its_shape",)),
    Mutant("eligible/domains.py", "        if isinstance(where, str | LinearInequality):  # 'a <= b' was read letter by letter",
           "        if isinstance(where, LinearInequality):  # 'a <= b' was read letter by letter",
           "Box(where='a <= b') read letter by letter",
           ("tests/test_primitives.py::test_box_refuses_one_inequality_given_as_where_instead_of_a_"
            "list",)),
    Mutant("analysis/quick.py", "            if isinstance(procedures, str) or hasattr(procedures, \"fit\") else procedures",
           "            if isinstance(procedures, str | list) or hasattr(procedures, \"fit\") else procedures",
           "quick_check takes a list of formulas for one procedure",
           ("tests/test_study.py::test_quick_check_takes_a_list_of_formulas_as_study_takes_a_list",)),
    Mutant("cli/options.py", "    if args.worker_timeout is not None and args.backend != \"dask\":  # it bounds dask's waits",
           "    if False:  # it bounds dask's waits",
           "--worker-timeout ignored on the process pool",
           ("tests/test_cli.py::test_bad_options_fail_fast_with_one_line_and_status_2",)),
    Mutant("cli/replicate.py", "    return f\"${cost:,.2f}\" if cost >= 0.995 or cost == 0 else f\"${cost:.4f}\"",
           "    return f\"${cost:,.2f}\"", "a cost under a dollar printed in cents ($0.004 as $0.00)",
           ("tests/test_llm_clients.py::test_table_2_command_line",)),
    Mutant("ai/clients.py", "        return urllib.parse.urlsplit(self.base_url).hostname == \"api.openai.com\"",
           "        return False", "max_tokens sent to OpenAI's API, which refuses it for reasoning models",
           ("tests/test_llm_clients.py::test_openai_api_gets_max_completion_tokens_other_servers_"
            "max_tokens",)),
    Mutant("ai/clients.py", "        if self.temperature is not None and self.temperature > 1:",
           "        if self.temperature is not None and self.temperature > 2:",
           "AnthropicChat takes OpenAI's temperature range [0, 2]",
           ("tests/test_llm_clients.py::test_anthropic_refuses_a_temperature_outside_its_range",)),
    Mutant("ai/clients.py", "RETRY_STATUSES = frozenset({408, 409, 429})",
           "RETRY_STATUSES = frozenset({408, 409})", "rate limits (429) not retried", CLIENT),
    Mutant("ai/clients.py", "            if self.max_requests is not None and self.requests >= self.max_requests:",
           "            if self.max_requests is not None and self.requests > self.max_requests:",
           "the call budget lets one request too many through", CLIENT),
    Mutant("ai/clients.py", "            if self.max_tokens is not None and self.tokens >= self.max_tokens:",
           "            if self.max_tokens is not None and self.tokens > self.max_tokens:",
           "a token budget used up exactly still sends", CLIENT),
    Mutant("ai/clients.py", "                self.budget.charge(_spent_tokens(reply, messages))",
           "                self.budget.charge(reply.output_tokens or 0)",
           "the token budget charged the output tokens only", CLIENT),
    Mutant("ai/clients.py", "    d = min(cap, base * 2.0 ** retry)", "    d = min(cap, base * 2.0 ** retry) / 2",
           "backoff halved", CLIENT),
    Mutant("ai/clients.py", "    if not done.wait(timeout):", "    if not done.wait(None):",
           "the host-name lookup not bounded by the attempt", LOOKUP),
    Mutant("ai/clients.py", "            *others, last = addresses",
           "            others, last = [], addresses[0]",
           "only the host's first address tried", LOOKUP),
    # -- engine/usage.py, ai/budget.py: usage, prices and the call plan -------------------------------
    Mutant("engine/results.py", "                    totals = {k: _usage_count(usage.get(k, 0), k, label, n, m)\n",
           "                    totals = {k: usage.get(k, 0)\n",
           "a usage record's -5, 1e30, NaN or text tokens totalled and priced", ("tests/test_llm_clients.py::test_a_usage_record_holding_what_is_not_a_count_is_refused_not_totalled",)),
    Mutant("engine/results.py", "    if not 0 <= number <= _MAX_USAGE or (whole and not number.is_integer()):",
           "    if not number <= _MAX_USAGE or (whole and not number.is_integer()):",
           "a usage record's negative token count totalled", ("tests/test_llm_clients.py::test_a_usage_record_holding_what_is_not_a_count_is_refused_not_totalled",)),
    Mutant("engine/usage.py", "    return p_in / 1e6, p_out / 1e6", "    return p_in / 1e3, p_out / 1e3",
           "prices per 1k, not per 1M, tokens", USAGE),
    Mutant("ai/llm.py", "        self.model = None if self.identity is None else self.identity.get(\"model\") or None",
           "        self.model = None if self.identity is None else self.identity.get(\"model\")",
           "a client identity with an empty model id takes a cache",
           ("tests/test_llm.py::test_a_cache_needs_a_model_id",)),
    Mutant("engine/usage.py", "        if isinstance(entry, (str, bytes, bytearray)) or any(",
           "        if any(", "a price string read as its characters (\"25\": $2 in, $5 out)",
           USAGE),
    Mutant("engine/usage.py", "        if isinstance(value, (int, float)) and not isinstance(value, bool):",
           "        if isinstance(value, (int, float)):", "booleans summed as counts", USAGE),
    Mutant("engine/usage.py", "    if not (0 <= p_in < math.inf and 0 <= p_out < math.inf):",
           "    if not (0 <= p_in < math.inf):", "an output price NaN or negative accepted", USAGE),
    Mutant("ai/budget.py", "        weight = 1 if caches else len(reps)  # without a cache, replication 0 stands for all",
           "        weight = 1", "without a cache, one replication planned for all", PLAN),
    Mutant("ai/budget.py", "                    row[\"calls_max\"] += weight * proc.max_calls",
           "                    row[\"calls_max\"] += weight", "an agent's later turns left out of calls_max", PLAN),
    Mutant("ai/budget.py", "                        if proc.max_calls > 1:  # an agent's later turns are not known\n                            row[\"calls_max\"] += proc.max_calls - 1",
           "                        if proc.max_calls > 1:  # an agent's later turns are not known\n                            row[\"calls_max\"] += proc.max_calls",
           "a cached agent fit's first call counted in calls_max", PLAN),
    Mutant("ai/budget.py", "price_per_token(prices, llm[label].model)[0]",
           "price_per_token(prices, llm[label].model)[1]", "input tokens priced as output", PLAN),
    # -- engine/memory.py ------------------------------------------------------------------------------
    Mutant("engine/memory.py", "    if free is None or need * workers + held <= free:",
           "    if free is None or need + held <= free:", "memory check ignores the workers", MEMORY),
    Mutant("engine/memory.py", "    if free is None or need * workers + held <= free:",
           "    if free is None or need * workers <= free:",
           "memory check ignores the results of M replications", MEMORY),
    Mutant("shared/startup.py", "        signal.signal(signal.SIGINT, interrupted_while_starting)", "        pass",
           "a Ctrl-C while python -m restrictiveness imports prints the import's traceback",
           ("tests/test_cli.py::test_ctrl_c_while_the_package_imports_prints_one_line_and_"
            "exits_130",)),
    Mutant("analysis/completeness/estimate.py", "    if free is not None and need > free:",
           "    if False:",
           "completeness repetitions whose folds cannot fit in memory run until killed",
           ("tests/test_completeness.py::test_repetitions_whose_folds_cannot_fit_in_memory_are_"
            "refused_before_any_work",)),
    Mutant("engine/study.py", "        check_memory(self, workers if local else 0, replications=len(reps))",
           "        check_memory(self, workers if local else 0)",
           "a run's M not checked against the memory (MemoryError listing 10**12 replications)",
           MEMORY),
    Mutant("engine/memory.py", "                limits.append(int(line.split()[1]) * 1024)",
           "                limits.append(int(line.split()[1]))", "MemAvailable read as bytes, not KiB", MEMORY),
    Mutant("engine/memory.py", "    return min(limits) if limits else None",
           "    return max(limits) if limits else None",
           "the larger of MemAvailable and the cgroup's room taken", MEMORY),
    # -- ai/llm.py: code fences -----------------------------------------------------------------
    Mutant("ai/llm.py", "    for line in re.sub(r\"\\r\\n?\", \"\\n\", text).splitlines(keepends=True):",
           "    for line in text.replace(\"\\r\\n\", \"\\n\").splitlines(keepends=True):",
           "lone CR line endings kept", FENCES),
    Mutant("ai/llm.py", "        blocks.extend(inner)", "        blocks.extend([])",
           "an unterminated wrapper loses the blocks it closed", FENCES),
    Mutant("ai/llm.py", "        if inner is not None and (lang in _MARKDOWN or inner[0]):",
           "        if inner is not None and lang in _MARKDOWN:",
           "an unlabelled wrapper run whole as the program", FENCES),
    Mutant("ai/llm.py", "_MAX_NESTING = 4", "_MAX_NESTING = 10**6",
           "nesting read without a bound (quadratic time)", FENCES),
    # -- ai/llm.py, ai/programs.py: rounds, usage and the program's predictions -------------------------
    Mutant("ai/llm.py", "        if self.used >= self.agent.rounds or \\",
           "        if self.used > self.agent.rounds or \\", "an agent gets one round more", LLM),
    Mutant("ai/llm.py", "        usage = {\"calls\": len(live), \"cached_calls\": len(self.calls) - len(live),",
           "        usage = {\"calls\": len(self.calls), \"cached_calls\": len(self.calls) - len(live),",
           "cached replies counted as calls", LLM),
    Mutant("ai/llm.py", "                 \"retries\": sum(c[\"retries\"] for c in live),",
           "                 \"retries\": sum(c[\"retries\"] for c in self.calls),",
           "a cached reply's old retries counted again", LLM),
    Mutant("ai/llm.py", "            if exc.sent and not (isinstance(exc, BudgetExhausted) and exc.retries == 0):",
           "            if not (isinstance(exc, BudgetExhausted) and exc.retries == 0):",
           "a call refused for want of an API key counted as made",
           ("tests/test_llm_clients.py::test_a_call_refused_for_want_of_a_key_is_not_counted_as_"
            "made",)),
    Mutant("cli/replicate.py", "    if twice:  # each design is one procedure: it ran once, without a word",
           "    if False:  # each design is one procedure: it ran once, without a word",
           "--prompts naming a design twice runs it once quietly",
           ("tests/test_llm_clients.py::test_command_line_refuses_inconsistent_llm_options",)),
    Mutant("ai/llm.py", "            if calls[-1].get(\"stop_reason\") in (\"length\", \"max_tokens\"):",
           "            if calls[0].get(\"stop_reason\") in (\"length\", \"max_tokens\"):",
           "a reply cut at the token limit read from the first call, not the last",
           ("tests/test_llm_clients.py::test_a_reply_cut_at_the_token_limit_says_so",)),
    Mutant("engine/results.py", "                    record = {\"procedure\": label, \"n\": n, \"fits\": int(count),",
           "                    record = {\"procedure\": label, \"n\": n, \"fits\": 1,",
           "usage counts a replication's K training draws as one fit",
           ("tests/test_llm.py::test_usage_counts_every_training_draw_as_a_fit",)),
    Mutant("ai/llm.py", "        self.run_at_fit = flag(run_at_fit, \"run_at_fit\")  # \"no\" was True",
           "        self.run_at_fit = bool(run_at_fit)  # \"no\" was True",
           "run_at_fit='no' read as True",
           ("tests/test_llm.py::test_language_model_options_it_cannot_honour_are_refused",)),
    Mutant("ai/clients.py", "                self.api_key_env == DEFAULT_KEY_ENVS[self.provider]:",
           "                True:", "an unset key variable the user named sends a placeholder",
           ("tests/test_llm_clients.py::test_an_unset_key_variable_named_by_the_user_is_an_error_"
            "at_any_endpoint",)),
    Mutant("ai/clients.py", "        self._unhook = when_stopped(self._expire)",
           "        self._unhook = lambda: None",
           "a request in flight runs on to its reply after the run stops (Ctrl-C waits)",
           ("tests/test_llm_clients.py::test_a_request_in_flight_ends_once_the_run_is_"
            "interrupted",)),
    Mutant("ai/sandbox/runner.py", "            if run_stopped():", "            if False:",
           "a sandboxed program runs on to its end after the run stops (Ctrl-C waits)",
           ("tests/test_llm_clients.py::test_a_program_running_ends_once_the_run_is_"
            "interrupted",)),
    Mutant("ai/clients.py", "        calls = tuple(ToolCall(c.id, c.function.name, _tool_input(c.function.arguments))",
           "        calls = tuple(ToolCall(c.id, c.function.name, _json_arguments(c.function.arguments))",
           "OpenAI tool arguments sent as an object fail the fit as a malformed reply",
           ("tests/test_llm_clients.py::test_openai_tool_arguments_sent_as_an_object_are_run",)),
    Mutant("ai/llm.py", "    if modules is None or set(modules) == set(default):", "    if True:",
           "the task names the default modules whatever allowed_modules / tool_modules admit",
           ("tests/test_llm.py::test_the_task_names_the_modules_the_sandbox_admits",)),
    Mutant("cli/replicate.py", "    plan = plan_calls(study, _prices(args), replications=todo)",
           "    plan = plan_calls(study, _prices(args))",
           "a dry run counts the replications its checkpoint already holds",
           ("tests/test_llm_clients.py::test_a_dry_run_counts_only_what_a_checkpoint_leaves_to_"
            "compute",)),
    Mutant("ai/clients.py", "    return None if value is None else str(value)", "    return str(value)",
           "a cached tool call without an id reads back as 'None' (a cached rerun asks again)",
           ("tests/test_llm_clients.py::test_a_cached_agent_rerun_asks_nothing_of_a_server_giving_"
            "tool_calls_no_id",)),
    Mutant("cli/replicate.py", "    check_prices(study, args)", "    pass",
           "a --price missing a procedure's model fails the CLI after the paid run",
           ("tests/test_llm_clients.py::test_a_price_that_cannot_price_every_model_loses_no_"
            "paid_run",)),
    Mutant("cli/replicate.py", "    except ConfigurationError as exc:\n        # a model the price",
           "    except KeyError as exc:\n        # a model the price",
           "a usage record the price cannot cover loses the finished run's --out",
           ("tests/test_llm_clients.py::test_a_price_that_cannot_price_every_model_loses_no_"
            "paid_run",)),
    Mutant("ai/sandbox/runner.py", "            with _program_slot():", "            with contextlib.nullcontext():",
           "sandboxed programs of a run's threads all run at once (wall limits fail them)",
           ("tests/test_llm_clients.py::test_sandboxed_programs_on_a_runs_threads_run_no_more_at_"
            "once_than_cpus",)),
    Mutant("cli/replicate.py", "                                                tool_protocol=args.tool_protocol or \"auto\")",
           "                                                tool_protocol=\"auto\")",
           "--tool-protocol text ignored: the agent offers tools to a server without them",
           ("tests/test_llm_clients.py::test_the_command_line_runs_the_agent_in_text_for_a_"
            "server_without_tools",)),
    Mutant("ai/sandbox/limits.py", "    return ModuleNames(names)", "    return names",
           "allow-lists shown in hash-seed order: an Agent's checkpoint never resumes",
           ("tests/test_llm.py::test_a_study_of_agents_has_the_same_configuration_in_every_"
            "session",)),
    Mutant("ai/programs.py", "    h = hashlib.sha256(repr((X.shape, X.dtype.str)).encode())",
           "    h = hashlib.sha256()", "the prediction cache's key leaves out X's shape", PROGRAMS),
    Mutant("ai/programs.py", "            return self._cache[key].copy()",
           "            return self._cache[key]", "a cached prediction returned uncopied", PROGRAMS),
    # -- engine/warning_relay.py: workers' warnings shown by the caller --------------------------
    Mutant("engine/warning_relay.py", "        while self._expected and self._expected[0] in self._done:\n            pending = self._done[self._expected[0]]\n            while pending:  # one by one: if one raises, flush still has the rest\n                replay([pending.pop(0)])\n            del self._done[self._expected.pop(0)]",
           "        replay(self._done.pop(unit))\n        self._expected.remove(unit)",
           "workers' warnings shown in the order units finish, not in replication order", RELAY),
    Mutant("engine/warning_relay.py", "    if not _pickles(message):  # e.g. a class defined inside a function",
           "    if False:  # e.g. a class defined inside a function",
           "a warning class that cannot be pickled sent as it is", RELAY),
    Mutant("engine/warning_relay.py", "            cast(list, warnings.filters)[:] = caller_filters() if filters is None else filters\n",
           "", "the worker's own filters decide what is relayed, not the caller's", RELAY),
    Mutant("engine/warning_relay.py", "                               registry=registry)",
           "                               registry={})",
           "replayed warnings bypass the caller's once-per-location registry", RELAY),
    # -- ai/sandbox/_child/seccomp.py: the system-call filter's argument rules ----------------
    Mutant("ai/sandbox/_child/seccomp.py", '    for name in ("splice", "tee", "sendfile"):', '    for name in ("tee", "sendfile"):',
           "splice lets a program pin file pages in pipes", ("tests/test_sandbox_attacks.py::test_attack_is_contained",)),
    Mutant("ai/sandbox/_child/seccomp.py", '    for name in ("splice", "tee", "sendfile"):', '    for name in ("splice", "tee"):',
           "sendfile lets a program pin file folios in pipes and socket buffers", ("tests/test_sandbox_attacks.py::test_attack_is_contained",)),
    Mutant("ai/sandbox/_child/seccomp.py", "    for number in UNREVIEWED:\n        f.add_rule(s.ERRNO(errno.ENOSYS), number)\n", "",
           "system calls of kernels newer than the review allowed", ("tests/test_sandbox.py::test_system_calls_newer_than_the_review_are_refused",)),
    Mutant("ai/sandbox/_child/seccomp.py", '            "open_tree_attr": 467}', "            }",
           "open_tree_attr passes a libseccomp that does not know its name", (_ATTACK + "open-tree-attr-clone]",)),
    Mutant("ai/sandbox/workdir.py", "            if size > STATUS_BYTES:", "            if False:",
           "a status file of any size parsed in the parent", ("tests/test_sandbox.py::test_a_status_file_a_program_inflates_is_not_parsed_in_the_parent",)),
    Mutant("ai/sandbox/runner.py", "    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the last two: nested\n        return sorted(third)",
           "    except (SyntaxError, ValueError):\n        return sorted(third)",
           "a program nested past the parser's depth raises out of run_python", ("tests/test_sandbox.py::test_a_program_nested_past_the_parsers_depth_fails_in_the_child_not_the_parent",)),
    Mutant("ai/programs.py", "    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the last two: nested\n        out[\"syntax_ok\"] = False",
           "    except (SyntaxError, ValueError):\n        out[\"syntax_ok\"] = False",
           "a program nested past the parser's depth raises out of describe_program", ("tests/test_sandbox.py::test_a_program_nested_past_the_parsers_depth_fails_in_the_child_not_the_parent",)),
    Mutant("ai/sandbox/_child/seccomp.py", '    rule(eperm, "prlimit64", low(1, _RLIMIT_CORE), s.Arg(2, s.NE, 0))\n', "",
           "the program lowers its core-dump limit to 0 with prlimit64", (_ATTACK + "core-dump-reaches-the-host-helper]",)),
    Mutant("ai/sandbox/_child/seccomp.py", '    rule(eperm, "setrlimit", low(0, _RLIMIT_CORE))\n', "",
           "the program lowers its core-dump limit to 0 with setrlimit", (_ATTACK + "core-dump-reaches-the-host-helper]",)),
    Mutant("ai/sandbox/_child/privileges.py", "    resource.setrlimit(resource.RLIMIT_CORE, (1, 1))", "    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))",
           "a core-dump limit of 0, which a piped core_pattern ignores", (_ATTACK + "core-dump-reaches-the-host-helper]",)),
    Mutant("ai/sandbox/_child/seccomp.py", "        return s.Arg(index, s.MASKED_EQ, _LOW32, value)",
           "        return s.Arg(index, s.EQ, value)",
           "an int argument compared as 64 bits: a high bit set passes the refused call", SECCOMP),
    Mutant("ai/sandbox/_child/seccomp.py", '    rule(s.ERRNO(errno.EAFNOSUPPORT), "socketpair", s.Arg(0, s.NE, _AF_UNIX))\n',
           "", "socketpair makes sockets of any family", SECCOMP),
    Mutant("ai/sandbox/_child/seccomp.py", '    for name in ("setxattr", "lsetxattr", "fsetxattr", "setxattrat"):\n        rule(s.ERRNO(errno.EOPNOTSUPP), name)\n',
           "", "extended attributes set (kernel memory on tmpfs)", SECCOMP),
    Mutant("ai/sandbox/runner.py", '            returncode != 0 and said.startswith("bwrap: "):',
           '            returncode != 0 and said.startswith("bwrap: ") and False:',
           "bubblewrap's own failure returned as the program's crash, not raised", BWRAP_FAILS),
    Mutant("ai/sandbox/_child/privileges.py", "    resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))\n", "",
           "the caller's real-time priority limit passed on to the program", PRIORITY),
    # -- ai/sandbox/_child/guard.py: the import allow-list -------------------------------------
    Mutant("ai/sandbox/_child/guard.py", "    if not any(a.startswith(name + \".\") for a in allowed):\n        return False\n", "",
           "a module above no allowed entry admitted", ALLOW),
    Mutant("ai/sandbox/_child/guard.py", "        if not any(sub == a or sub.startswith(a + \".\") or a.startswith(sub + \".\")",
           "        if not any(sub == a or sub.startswith(a + \".\")",
           "from a package above an entry, the way towards the entry refused", ALLOW),
    Mutant("ai/sandbox/_child/guard.py", "            return False\n    return True\n", "            pass\n    return True\n",
           "from a package above an entry, its other submodules admitted", ALLOW),
    Mutant("ai/sandbox/workdir.py", "    if os.geteuid() != 0 and not mode & stat.S_IXUSR:",
           "    if False:", "an unsearchable directory's sizes skipped by a parent that is not root", COUNT),
    Mutant("ai/sandbox/workdir.py", "                    except PermissionError:  # its search right taken away meanwhile\n                        raise _Unmeasured from None\n",
           "", "an entry whose size cannot be read skipped by the count", COUNT),
    # -- ai/sandbox/workdir.py: reclaiming what killed runs left ---------------------------------
    Mutant("ai/sandbox/workdir.py", "        try:\n            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n        except BlockingIOError:  # its owner runs",
           "        try:\n            pass\n        except BlockingIOError:  # its owner runs",
           "a live owner's directory swept (its lock not tried)", SWEEP),
    Mutant("ai/sandbox/workdir.py", "        if _mount(handle) != (_mount(dir_fd) if mount is None else mount):",
           "        if False:", "the removal enters a mount inside the tree", SWEEP),
    Mutant("ai/sandbox/workdir.py", "        if (os.getpid(), tmp) not in _swept:",
           "        if tmp not in {swept for _, swept in _swept}:",
           "forked fit children inherit 'already swept' and never reclaim", SWEEP),
    Mutant("shared/expression.py", "        both = [c for c in self.constants if c in columns]",
           "        both = [c for c in self.constants if c in self.variables]",
           "a data column named like a constant (pi) is read as the constant",
           ("tests/test_nls.py::test_a_column_named_like_a_constant_is_refused_not_replaced_by_it",
            "tests/test_nls.py")),
    Mutant("demand/_shares_nb.py", "@cached_njit(error_model=\"numpy\", fastmath=_FM, inline=\"always\")\ndef _node_rows(",
           "@cached_njit(error_model=\"numpy\", fastmath=_FM)\ndef _node_rows(",
           "the truth's field rows called (two copies that round apart), not inlined",
           ("tests/test_kernel_cache.py::test_fast_math_kernels_called_by_kernels_are_the_ones_"
            "checked_for_equal_rounding",
            "tests/test_kernel_cache.py::test_fresh_and_cached_kernels_give_the_same_demand_truth_"
            "and_fits")),
    Mutant("demand/_shares_nb.py", "            plus[t] = (plus[t] - first) - second\n",
           "            plus[t] -= first + second\n",
           "the eight-row softplus pass sums its halves before subtracting (other bits)",
           ("tests/test_demand_prior.py::test_softplus_pass_sums_in_blocks_of_four_whatever_the_"
            "pass_length",)),
    Mutant("demand/_shares_nb.py", "    if r + 4 <= end:\n        c0, c1",
           "    if r + 5 <= end:\n        c0, c1",
           "four rows left after the eight-row passes go one at a time (other bits)",
           ("tests/test_demand_prior.py::test_softplus_pass_sums_in_blocks_of_four_whatever_the_"
            "pass_length",)),
    Mutant("eligible/domains.py", "        A, c = self.equations[:, :-1], self.equations[:, -1] - self._slack",
           "        A, c = self.equations[:, :-1], self.equations[:, -1]",
           "ConvexHull refuses the data's own points on its facets (rounding)",
           ("tests/test_eligible_sets.py::test_a_convex_hull_is_the_set_qhulls_triangulation_"
            "covers",)),
    Mutant("ai/clients.py", "    text = error.get(\"message\") if isinstance(error, dict) else None\n",
           "    text = None\n", "an error sent with status 200 reported as its dict, not its message",
           ("tests/test_llm_clients.py::test_an_error_sent_with_status_200_is_reported_by_its_"
            "message",)),
    Mutant("ai/clients.py", "        if any(getattr(c, \"function\", None) is None for c in raw_calls):",
           "        if False:", "an OpenAI tool call that is not a function call dropped unread",
           ("tests/test_llm_clients.py::test_openai_tool_calls_the_adapter_cannot_read_are_a_"
            "malformed_reply",)),
    Mutant("eligible/domains.py", "            ok[alive[~inside]] = False\n",
           "            pass\n", "ConvexHull keeps the points a facet block rejects",
           ("tests/test_eligible_sets.py::test_a_convex_hull_is_the_set_qhulls_triangulation_"
            "covers",)),
    Mutant("eligible/domains.py", "        ok = self._box.admissible(X)\n",
           "        ok = np.ones(len(X), dtype=bool)\n", "ConvexHull ignores its further inequalities (where)",
           ("tests/test_eligible_sets.py::test_a_convex_hull_from_data_with_further_"
            "inequalities_and_one_column",)),
    Mutant("eligible/domains.py", "            self.equations = np.array([[-1.0, lo[0]], [1.0, -hi[0]]])",
           "            self.equations = np.empty((0, 2))",
           "a one-column ConvexHull admits points outside its interval",
           ("tests/test_eligible_sets.py::test_a_convex_hull_from_data_with_further_"
            "inequalities_and_one_column",)),
    Mutant("eligible/domains.py", "        if not replace:  # (the constructor refuses a replace that is not a bool)",
           "        if replace is None:",
           "FiniteSet.from_frame without replacement merges repeated rows (drawn at most once)",
           ("tests/test_eligible_sets.py::test_finite_set_from_frame_without_replacement_"
            "subsamples_the_rows", *GP)),
    Mutant("shared/expression.py", "    return value + _nanguard()(*a)", "    return value",
           "a formula's minimum/maximum/clip take a NaN argument for a number",
           ("tests/test_nls.py::test_minimum_maximum_and_clip_are_numpys",)),
    Mutant("shared/expression.py", "sp.Or(a[0] > a[2], a[1] > a[2])", "a[0] > a[2]",
           "clip(x, lo, hi) with lo > hi gives lo, not numpy's hi",
           ("tests/test_nls.py::test_minimum_maximum_and_clip_are_numpys",)),
    Mutant("shared/expression.py", "            if x.is_Integer and -8 <= int(x) < 0:",
           "            if x.is_Integer and -8 <= int(x) < -8:",
           "a negative integer power at 0 raises numba's ZeroDivisionError",
           ("tests/test_nls.py::test_forms_sympy_rewrites_compile_and_keep_numpys_values",)),
    Mutant("shared/expression.py", '(1.0 if {z} > 0.0 else (-1.0 if {z} < 0.0 else',
           '(1.0 if {z} > 0.0 else (1.0 if {z} < 0.0 else',
           "the derivative of sympy's Abs has the wrong sign below zero",
           ("tests/test_nls.py::test_forms_sympy_rewrites_compile_and_keep_numpys_values",)),
    Mutant("procedures/learners.py", "        if formula is not None:  # as OLS and GPRegression: a typo is refused when made\n            parse_formula(formula)\n",
           "", "SklearnRegressor keeps a formula it cannot read until its first fit",
           ("tests/test_formulas.py::test_a_formula_that_cannot_be_read_is_refused_when_the_"
            "procedure_is_made",)),
    Mutant("shared/formula.py", "    if called:  # 'y ~ log(x)' was", "    if False:  # 'y ~ log(x)' was",
           "a formula calling an unknown function is taken to name a column",
           ("tests/test_formulas.py::test_a_function_patsy_does_not_know_is_named_as_a_function_"
            "not_a_column",)),
    Mutant("procedures/generic.py", "            if type(c).repair is Constraint.repair:",
           "            if False:",
           "GPRegression keeps a constraint without a repair (Increasing) and ignores it",
           ("tests/test_formulas.py::test_gp_regression_refuses_a_constraint_it_cannot_impose_"
            "on_its_predictions",)),
    Mutant("procedures/generic.py", "        return build_frame(pd.DataFrame(table) if not f.covariates else table)",
           "        return build_frame(table)",
           "OLS('y ~ 1') predicts from a mapping of columns patsy cannot count the rows of",
           ("tests/test_formulas.py::test_ols_on_the_intercept_alone_fits_a_sample_as_the_"
            "constant_does",)),
    # -- shared/random_state.py, procedures/learners.py: global random states, FLAML, tables --
    Mutant("engine/failures.py", "                             else seeded_globals(seed, user_call=True)):",
           "                             else contextlib.nullcontext()):",
           "a study's fits run on the caller's global random states (reruns differ)",
           ("tests/test_study.py::test_a_procedure_drawing_from_the_global_random_states_"
            "reproduces_at_any_worker_count",)),
    Mutant("shared/random_state.py", "    if not user_call and _user_call_owner not in (None, me):",
           "    if False:",
           "an adapter on a thread a fit waits for waits for the fit's seeded states (hangs)",
           ("tests/test_study.py::test_a_fit_waiting_for_its_own_thread_that_seeds_the_global_"
            "states_does_not_hang",)),
    Mutant("analysis/completeness/estimate.py",
           "                guard = GuardedRule(fitted, base_fit, constraints, columns, reason, global_seed,",
           "                guard = GuardedRule(fitted, base_fit, constraints, columns, reason, None,",
           "completeness predictions run on the caller's global random state",
           ("tests/test_completeness.py::test_a_procedure_drawing_from_the_global_random_state_"
            "gets_the_same_kappa_on_every_run",)),
    Mutant("shared/random_state.py", "    with _GLOBAL_STATES:\n", "    if True:\n",
           "seeded fits overlapping on threads share the global states",
           ("tests/test_adapters.py::test_seeded_fits_overlapping_on_threads_keep_their_own_draws",)),
    Mutant("shared/random_state.py", "        np.random.seed(seed)  # noqa: NPY002 - the global state user code reads\n", "",
           "numpy's global random state not seeded for an estimator's fit", LEARNERS),
    Mutant("shared/random_state.py", "            np.random.set_state(np_state)  # noqa: NPY002\n", "",
           "the caller's global random state not restored after a fit", LEARNERS),
    Mutant("procedures/learners.py", "                        if not name.endswith(\"_spark\") and name not in _FLAML_CLASSIFIERS)",
           "                        if not name.endswith(\"_spark\"))",
           "FLAML's classifiers accepted as regression learners", LEARNERS),
    Mutant("procedures/learners.py", "    if isinstance(sample, Sample) and (np.ndim(sample.X) != 2 or np.ndim(sample.y) != 1):",
           "    if isinstance(sample, Sample) and np.ndim(sample.X) > 3:",
           "markets passed to a table regressor", LEARNERS),
    Mutant("procedures/learners.py", "        with seeded_globals(states):\n            search.fit(",
           "        if True:\n            search.fit(",
           "FLAML's search changes the caller's random state", LEARNERS),
    Mutant("demand/learners.py", "        if isinstance(regressor, type):  # every fit failed (\"get_params() missing 'self'\")",
           "        if False:  # every fit failed (\"get_params() missing 'self'\")",
           "LogShareRegressor takes an estimator class for an instance (every fit fails)",
           ("tests/test_adapters.py::test_logshare_rejects_bad_samples_and_queries",)),
    Mutant("lottery/__init__.py", "                 baseline_label=baseline_label(base, procs),",
           "                 baseline_label=\"EV\",",
           "the lottery study names any baseline it is given EV",
           ("tests/test_lottery_models.py::test_a_study_names_the_baseline_it_was_given",)),
    Mutant("demand/__init__.py", "                 baseline_label=baseline_label(base, procs))",
           "                 baseline_label=\"logit\")",
           "the demand study names any baseline it is given logit",
           ("tests/test_lottery_models.py::test_a_study_names_the_baseline_it_was_given",)),
    Mutant("shared/checks.py", "    if not isinstance(label, str) or label in (\"\", \"procedure\") or label in procedures:",
           "    if not isinstance(label, str) or label in (\"\", \"procedure\"):",
           "a study's baseline takes a label a procedure has (the study refuses it)",
           ("tests/test_lottery_models.py::test_a_study_names_the_baseline_it_was_given",)),
    Mutant("shared/formula.py", "                for c in numeric:\n",
           "                for c in ():\n",
           "text at prediction in a formula column that was numbers fails inside patsy (AttributeError)",
           ("tests/test_formulas.py::test_text_at_prediction_in_a_column_that_was_numbers_is_named",)),
    Mutant("engine/protocol.py", "    if first == \"X\":", "    if first == \"sample\":",
           "a bare scikit-learn estimator passes for a procedure (every fit fails)",
           ("tests/test_adapters.py::test_a_bare_estimator_given_as_a_procedure_is_refused_naming_the_adapter",)),
    Mutant("engine/study.py", "            refuse_estimator(p, f\"procedures[{label!r}]\")\n", "",
           "a study takes a bare scikit-learn estimator as a procedure",
           ("tests/test_adapters.py::test_a_bare_estimator_given_as_a_procedure_is_refused_naming_the_adapter",)),
    Mutant("analysis/completeness/estimate.py", "    refuse_estimator(proc, role)\n", "",
           "completeness takes a bare scikit-learn estimator as its benchmark",
           ("tests/test_adapters.py::test_a_bare_estimator_given_as_a_procedure_is_refused_naming_the_adapter",)),
    Mutant("procedures/learners.py", "        super().validate(columns, response)\n        _import_flaml()\n",
           "        super().validate(columns, response)\n",
           "a study with AutoML but no FLAML runs with every fit failed",
           ("tests/test_adapters.py::test_automl_without_flaml_names_the_extra",)),
    Mutant("analysis/frontier.py", "    if not common and procedures is None:", "    if False:",
           "frontier_table with no label in common says 'procedures [] are not in both results'",
           ("tests/test_frontier.py::test_errors_and_plot",)),
    # -- engine/study.py: a dask cluster lost mid-run ------------------------------------------
    Mutant("engine/study.py", "            finish(m, result)\n", "            finish(m, fut.result())\n",
           "a dask result lost with the last worker as it is fetched waits for ever", LOST),
    Mutant("engine/study.py", "    arriving = as_completed(futures, loop=client.loop, with_results=True, raise_errors=False)",
           "    arriving = as_completed(futures, with_results=True, raise_errors=False)",
           "dask results awaited on the default client, not the run's", LOST),
    Mutant("engine/study.py", "            if fut.cancelled():  # the scheduler was lost, or another caller cancelled it",
           "            if False:  # the scheduler was lost, or another caller cancelled it",
           "a dask replication cancelled with its scheduler delivered as a record", LOST),
    Mutant("engine/study.py", "        with contextlib.suppress(Exception):\n            client.cancel(list(futures))",
           "        if True:\n            client.cancel(list(futures))",
           "the clean-up's cancel on a closed dask client replaces the run's error", LOST),
    Mutant("engine/study.py", "        return len(client.nthreads(callback_timeout=timeout))",
           "        return len(client.nthreads())",
           "counting the workers of a dask scheduler that stopped answering waits for ever", LOST),
    Mutant("engine/study.py", "    silent_after = None if fit_timeout is None else \\\n",
           "    silent_after = None if True else \\\n",
           "a frozen dask worker holds a run under fit_timeout until dask's worker-ttl", FROZEN),
    Mutant("engine/study.py", "        if address not in heard or heard[address][0] != last:",
           "        if address not in heard:",
           "a busy dask worker heard from is taken for frozen after fit_timeout + 34 s", FROZEN),
    Mutant("engine/study.py", "        if not mine or silent < silent_after:",
           "        if not mine or silent < 2 * silent_after:",
           "a frozen dask worker is named only after twice its bound", FROZEN),
    Mutant("engine/study.py", "            if beats is not None and fit_timeout is not None:",
           "            if False:",
           "a frozen pool worker holds a run under fit_timeout for ever", POOL_FROZEN),
    Mutant("engine/study.py", "        slots[at] += 1\n",
           "        slots[at] += 0\n",
           "a busy pool worker whose heartbeat never changes is taken for frozen", POOL_FROZEN),
    Mutant("engine/study.py", "            if start not in self.heard or self.heard[start][0] != count:",
           "            if start not in self.heard:",
           "a busy pool worker heard from is taken for frozen after fit_timeout + 34 s", POOL_FROZEN),
    Mutant("engine/study.py", "    frozen = beats.silent(fit_timeout + 2 * timeouts.STOP_GRACE + FROZEN_GRACE)",
           "    frozen = beats.silent(2 * (fit_timeout + 2 * timeouts.STOP_GRACE + FROZEN_GRACE))",
           "a frozen pool worker is named only after twice its bound", POOL_FROZEN),
    Mutant("engine/study.py", "        os.kill(pid, signal.SIGKILL)\n",
           "        pass\n",
           "a frozen pool worker is left to the pool's SIGTERM, which a stopped process takes only once continued", POOL_FROZEN),
    Mutant("engine/study.py", "        if now - self.checked > 4 * BEAT_INTERVAL:\n",
           "        if False:\n",
           "a pool run stopped and continued as a whole takes its workers for frozen", POOL_FROZEN),
    Mutant("engine/study.py", "            _await_workers(pool, beats, fit_timeout, notes)\n",
           "            pass\n",
           "a pool worker frozen between replications holds the pool's shut-down for ever", POOL_FROZEN),
    Mutant("engine/study.py", "        _end_processes(processes)  # the shut-down pool",
           "        pass  # the shut-down pool",
           "a pool worker frozen between replications is killed but the others outlive the run", POOL_FROZEN),
    Mutant("engine/study.py", "        cause = exc.__cause__ or exc.__context__\n",
           "        cause = None\n",
           "a local dask cluster that cannot start does not say why", OWN_CLUSTER),
    Mutant("engine/study.py", "        cluster.close(timeout=max(1.0, deadline - time.monotonic()))",
           "        cluster.close()",
           "a local dask cluster that does not close hangs the run's exit", OWN_CLUSTER),
    Mutant("engine/study.py", "    left = _kill_workers(processes)",
           "    left = 0",
           "the workers of a local dask cluster that did not close are left running", OWN_CLUSTER),
    # -- engine/study.py: a process ended by a fit, the __main__ guard of a dask script ----------
    Mutant("engine/study.py", "                                scheduler_kwargs={\"allowed_failures\": 0,\n",
           "                                scheduler_kwargs={\n",
           "dask retries a replication that ended its worker", ENDED),
    Mutant("engine/study.py", "        _check_main_guard()\n", "",
           "a dask script without a __main__ guard not refused", ENDED),
    Mutant("engine/study.py", "    if any(is_guard(node) and node.body[0].lineno <= line <= (node.body[-1].end_lineno or line)",
           "    if any(is_guard(node) and node.body[0].lineno < line <= (node.body[-1].end_lineno or line)",
           "a run on the guard's first line taken for an unguarded one", ENDED),
    Mutant("engine/study.py", "                                lambda key: _fit_name(study, replication, key))",
           "                                )",
           "a fit whose process died named without its replication", ENDED),
    Mutant("engine/study.py", "    _note_step((label, m, n))  # its predictions too, until the next step\n", "",
           "a dask worker ended by a fit blamed on the step before it", ENDED),
    Mutant("shared/formula.py", "    if declared is not None and declared != response:",
           "    if declared is not None and declared == 'never':",
           "a formula naming another response fits the sample's labels quietly", RESPONSE),
    Mutant("procedures/generic.py", "        f.check_response(data.response)\n", "",
           "OLS on a sample ignores the formula's response", RESPONSE),
    Mutant("demand/models.py", "        parse_formula(self.formula).check_response(sample.response)\n",
           "", "a demand model on a sample ignores the formula's response", RESPONSE),
    Mutant("engine/results.py", '        total = (s * self._fits_per_record()).sum("replication")',
           '        total = s.sum("replication")',
           "total fit time counts one draw of K", ("tests/test_study_values.py",)),
    Mutant("cli/options.py", '        self.register("action", None, _StoreOnce)\n', "",
           "an option given twice keeps its last value quietly",
           ("tests/test_cli.py::test_bad_options_fail_fast_with_one_line_and_status_2",)),
    # -- results layer, third pass: summaries showing a row twice, boolean predictions --------
    Mutant("engine/results.py", '        no_repeats(procs, "procedures")\n', "",
           "a study summary prints a procedure named twice twice",
           ("tests/test_study.py::test_a_summary_refuses_a_procedure_or_discrepancy_named_twice",)),
    Mutant("engine/results.py", '        no_repeats(discs, "discrepancy")  # a table, and rows, printed twice\n',
           "", "a study summary prints a discrepancy named twice twice",
           ("tests/test_study.py::test_a_summary_refuses_a_procedure_or_discrepancy_named_twice",)),
    Mutant("analysis/completeness/results.py", '        no_repeats(procs, "procedures")\n', "",
           "a completeness summary prints a procedure named twice twice",
           ("tests/test_completeness.py::test_the_summary_refuses_rows_it_cannot_show_once",)),
    Mutant("engine/sensitivity_results.py", "        _distinct(weights)\n", "",
           "a sensitivity table shows one comparison typed two ways twice",
           ("tests/test_sensitivity_results.py::test_one_comparison_typed_two_ways_is_refused_not_shown_twice",)),
    Mutant("shared/checks.py", '    if kind not in "iufO":', '    if kind not in "biufO":',
           "boolean predictions scored as 0 and 1",
           ("tests/test_failures.py::test_boolean_predictions_fail_the_fit_instead_of_being_scored_as_0_and_1",)),
    Mutant("engine/results.py", "        degenerate = Bbar <= 0\n", "        degenerate = Bbar < 0\n",
           "a baseline loss of exactly zero without the truths' scale gives inf and a DataError",
           ("tests/test_degenerate_baseline.py::test_a_baseline_loss_of_exactly_zero_is_degenerate_whatever_the_scale",)),
    Mutant("engine/results.py", '        if "configuration" not in self.dataset.attrs:  # was a bare KeyError, from summary()',
           "        if False:", "summary of a hand-made Dataset fails with KeyError 'configuration'",
           ("tests/test_inference.py::test_a_summary_of_a_dataset_without_the_study_records_names_what_it_lacks",)),
    Mutant("engine/results.py", '        return df.reindex(self.discrepancies, level="discrepancy")',
           '        return df.sort_index(level=["discrepancy"], sort_remaining=False)',
           "estimates() sorts the discrepancies alphabetically, unlike the summary",
           ("tests/test_inference.py::test_estimates_keep_the_studys_order_of_discrepancies_as_the_summary_does",)),
    Mutant("engine/sensitivity_results.py", '               "Draws per truth K:": str(self.draws_per_truth),',
           '               "Draws per truth K:": str(self.dataset.sizes.get("draw", 1)),',
           "the sensitivity panels of model restrictiveness say K draws per truth",
           ("tests/test_study.py::test_the_sensitivity_summary_of_model_restrictiveness_says_one_fit_per_truth_too",)),
    Mutant("engine/sensitivity_results.py", "        repeated = values[counts > 1]\n",
           "        repeated = values[counts > 2]\n",
           "a Γ grid repeating a value gives the (n, gamma) table its rows twice",
           ("tests/test_sensitivity_results.py::test_a_grid_repeating_a_gamma_is_refused_not_shown_twice",)),
    Mutant("analysis/completeness/inference.py",
           "    if abs(mean_loss[b] - mean_loss[f]) <= DEGENERATE_IMPROVEMENT * abs(mean_loss[b]):",
           "    if mean_loss[b] == mean_loss[f] == 0:",
           "a benchmark equal to the baseline to rounding gives κ̂ of 1e16",
           ("tests/test_completeness.py::test_a_benchmark_no_better_than_the_baseline_to_rounding_gives_nan_not_1e16",)),
    Mutant("engine/sensitivity_results.py",
           "        _distinct(weights)  # 'C_a' and 'C_{a}' were two rows of one contribution\n", "",
           "the contributions table shows one contribution typed two ways twice",
           ("tests/test_sensitivity_results.py::test_a_contribution_reported_twice_is_refused_not_shown_twice_or_dropped",)),
    # -- study engine, mutation review: keys, M, the merge of threaded runs, failure notes ----
    Mutant("engine/study.py",
           "    return global_state_seed(_fit_seeds(seed, replication, label, n, draw))",
           "    return global_state_seed(_fit_seeds(seed, replication, label, n, 0))",
           "the global random states the same in every training draw (K copies of one start)",
           ("tests/test_study_values.py::test_the_global_random_states_of_draw_k_are_keyed_by_draw_k",
            *STUDY)),
    Mutant("engine/study.py",
           "            return sorted(m for m in store.done() if 0 <= m < self.replications)",
           "            return sorted(m for m in store.done() if 0 <= m <= self.replications)",
           "finished() counts replication M of a checkpoint of a larger M as done",
           ("tests/test_checkpoint.py::test_finished_lists_the_checkpoints_replications_below_this_studys_m",
            *CKPT)),
    Mutant("engine/study.py",
           "            loss[p], failed[p], invalid[p] = rec.loss[i], rec.failed[i], rec.invalid[i]",
           "            loss[p], failed[p] = rec.loss[i], rec.failed[i]",
           "a run with concurrency drops the replaced rows of the procedures fitted beside its threads",
           ("tests/test_study_values.py::test_the_rows_fitted_beside_the_threads_keep_their_counts_and_messages",
            *STUDY)),
    Mutant("engine/results.py", "            if rows and failed < fits:",
           "            if rows:",
           "the failure report counts the rows of a procedure whose every fit failed as replaced predictions",
           ("tests/test_failures.py::test_a_rule_failing_in_predict_counts_the_rows_a_failed_fit_counts",
            *FAIL)),
    Mutant("engine/results.py", '        return pd.DataFrame({"median_seconds": s.median("replication").to_series(),',
           '        return pd.DataFrame({"median_seconds": s.mean("replication").to_series(),',
           "timings() reports the mean fit time as the median",
           ("tests/test_inference.py::test_timings_are_the_median_fit_and_the_total_of_every_draws_fits",
            "tests/test_study_values.py")),
    Mutant("engine/checkpoint.py", '    return json.loads(re.sub(r" at 0x[0-9a-fA-F]+", "", text))',
           "    return json.loads(text)",
           "a memory address in a procedure's repr hashed: its checkpoint never resumes in another session",
           ("tests/test_checkpoint.py::test_a_memory_address_in_a_repr_does_not_change_the_configuration",
            *CKPT)),
    Mutant("engine/results.py", '        messages = [[next((str(e) for e in errors[i, j] if str(e)), "")',
           '        messages = [[str(errors[i, j][0])',
           "failures() names replication 0's error only: a later replication's first error is lost",
           ("tests/test_inference.py::test_failures_count_fits_over_draws_and_name_the_first_error_of_any_replication",
            *FAIL)),
    # the benchmarks, run by tests/test_benchmarks.py and checked by the values they print
    Mutant("demand/_logit_nb.py", "    nuT = np.ascontiguousarray(np.asarray(nu, dtype=float).T)\n",
           "    nuT = np.ascontiguousarray(np.asarray(nu, dtype=float)[:, ::-1].T)\n",
           "MXL taste shocks paired with the wrong random coefficients in both twins (bench_mxl: shares no longer pyblp's)",
           ("tests/test_benchmarks.py::test_mxl_kernels_profile_and_fits",)),
    Mutant("ai/sandbox/runner.py", "        status, cpu, max_rss = ended\n",
           "        status, _, max_rss = ended\n",
           "a sandbox result's CPU time is its wrapper's, not the program's its relay measured (under bubblewrap near 0: bench_llm_endpoints' CPU)",
           ("tests/test_benchmarks.py::test_llm_endpoints_retries_concurrency_and_cache",)),
    Mutant("lottery/_rdu_nb.py",
           "    x, cost, nfev, _, _ = solve(theta0, lo, hi, free, (X, y, shift, kind), 2 * maxit, tol,",
           "    x, cost, nfev, _, _ = solve(theta0, lo, hi, free, (X, y, shift, kind), maxit // 50, tol,",
           "the CPT refinement stops after a few evaluations (bench_cpt_fit: our SSR above curve_fit's from the same starts)",
           ("tests/test_benchmarks.py::test_cpt_fit_is_never_worse_than_curve_fit_and_kernels_beat_twins",)),
]


def _clear_numba_cache(root: Path, rel: str) -> None:
    """Remove numba's on-disk cache (``<stem>.*.nbi`` / ``.nbc``) of one module and of every
    module that imports it: a kernel compiled against a shared kernel (``shared/_vecmath.py``)
    holds that kernel's code in its own cache entry, which numba does not invalidate when only
    the imported file changes."""
    src = root / PKG / rel
    for module in [src, *(f for f in (root / PKG).rglob("*.py")
                          if f != src and src.stem in f.read_text())]:
        cache = module.parent / "__pycache__"
        if cache.is_dir():
            for f in cache.glob(f"{module.stem}.*.nb[ic]"):
                f.unlink()


def _apply(root: Path, m: Mutant) -> str:
    """Write the mutant into the copy; return the original text (raises if it does not apply)."""
    path = root / PKG / m.path
    text = path.read_text()
    if text.count(m.old) != 1:
        raise LookupError(f"{m.path}: {m.why!r}: the original text occurs "
                          f"{text.count(m.old)} times (must be once)")
    path.write_text(text.replace(m.old, m.new))
    return text


def _pytest(root: Path, files: tuple[str, ...] | None, env: dict,
            timeout: float | None = None, parallel: bool = False,
            why: bool = False) -> tuple[bool, float, str]:
    """Run pytest in the copy: (killed, seconds, the first failing test's id or "", with
    ``why`` its line of the short summary, the message included).

    The related tests run in one process (``-n 0``): pytest-xdist, on by default in the
    project's addopts, would spread them over workers and lose the "fastest and most targeted
    first" order that ``-x`` relies on. ``parallel`` keeps xdist for runs where order does not
    matter (the full suite, which xdist also stops at the first failure; 6 min on 2 cores
    against 12-13 min in one process).

    A run still going after ``timeout`` seconds is stopped and counts as a kill: a mutant
    that makes the code loop for ever (a damping factor that turns negative never grows past
    its cap) is caught, by the hang, as a user would catch it."""
    args = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
            "--no-header", "-rfE", *(() if parallel else ("-n", "0"))]
    args += list(files or [])
    start = time.perf_counter()
    try:
        proc = subprocess.run(args, cwd=root, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return True, time.perf_counter() - start, f"a hang (no end within {timeout:g} s)"
    # exit 1: a test failed; 2: collection errors (an import broken by the mutant);
    # 4 (usage error: a test id not found) and 5 (nothing collected) are errors of this
    # script's test lists, not kills
    if proc.returncode in (4, 5):
        raise RuntimeError(f"pytest exit {proc.returncode} (tests not found) for {files}")
    # the short summary names the failure: "FAILED tests/x.py::test_y - message"
    # (a parametrised id may hold spaces: cut at the " - " before the message)
    first = next((line if why else line.split(" ", 1)[1].split(" - ", 1)[0]
                  for line in proc.stdout.splitlines()
                  if line.startswith(("FAILED ", "ERROR "))), "")
    return proc.returncode != 0, time.perf_counter() - start, first


def _copy_repo(dest: Path) -> Path:
    root = dest / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".git", "*.egg-info", ".mutants",
                                    "_build")
    root.mkdir()
    # docs and conftest.py: tests read docs/api.rst and conftest.py
    for item in ("restrictiveness", "tests", "setup.cfg", "pyproject.toml", "vignettes",
                 "benchmarks", "README.md", "docs", "conftest.py"):
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, root / item, ignore=ignore)
        elif src.exists():
            shutil.copy2(src, root / item)
    # the tests read the shared data beside the repository
    shared = REPO.parent / "shared"
    if shared.exists():
        (dest / "shared").symlink_to(shared.resolve())
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="list the mutants and check they apply")
    ap.add_argument("--only", default="",
                    help="only mutants whose module path contains this (comma-separated: any)")
    ap.add_argument("--why", default="",
                    help="only mutants whose description contains this (comma-separated: any)")
    ap.add_argument("--exclude", default=None,
                    help="skip mutants whose module path contains this (to split a run)")
    ap.add_argument("--timeout", type=float, default=1200.0,
                    help="seconds after which a mutant's related-test run counts as a hang "
                         "(a kill; default 1200, the full-suite pass gets three times as long)")
    ap.add_argument("--quick", action="store_true",
                    help="related tests only: survivors do not get the full-suite pass")
    opts = ap.parse_args(argv)
    # a plain `kill` must still remove the private copy (TemporaryDirectory cleans on exceptions)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # a run started in the background (`... &`) inherits SIGINT ignored, and so would the
    # tests, whose own Ctrl-C (os.kill(os.getpid(), SIGINT)) would then never arrive: a handler
    # of ours is reset to the default in the pytest processes
    signal.signal(signal.SIGINT, signal.default_int_handler)
    only = opts.only.split(",")
    why = opts.why.split(",")
    mutants = [m for m in MUTANTS if any(o in m.path for o in only)
               and any(w in m.why for w in why)
               and (opts.exclude is None or opts.exclude not in m.path)]
    if not mutants:  # no related tests would have run the whole suite in the copy
        print(f"no mutant matches --only {opts.only!r} and --why {opts.why!r}")
        return 2
    with tempfile.TemporaryDirectory(prefix="rx-mutants-") as tmp:
        root = _copy_repo(Path(tmp))
        for m in mutants:  # check every mutant applies before spending any time
            original = _apply(root, m)
            (root / PKG / m.path).write_text(original)
        if opts.list:
            for m in mutants:
                print(f"{m.path:32s} {m.why}")
            print(f"{len(mutants)} mutants apply")
            return 0
        env = dict(os.environ, PYTHONPATH=str(root))
        # the unmutated copy must pass every related test, or each mutant would look killed
        related = tuple(dict.fromkeys(f for m in mutants for f in m.tests))
        # in one process and in order, as each mutant's run: tests that hold alone and under
        # -n 0 failed under xdist's interleaving on a loaded machine (signals, fork timings)
        failing, _, by = _pytest(root, related, env, why=True)
        if failing:
            print(f"the unmutated copy fails its related tests {related}:\n{by}\nfix them first")
            return 1
        results: dict[str, list[tuple[Mutant, bool]]] = defaultdict(list)
        for i, m in enumerate(mutants, 1):
            _clear_numba_cache(root, m.path)
            original = _apply(root, m)
            try:
                killed, secs, by = _pytest(root, m.tests, env, opts.timeout)
                where = "related"
                if not killed and not opts.quick:
                    killed, more, by = _pytest(root, None, env, 3 * opts.timeout, parallel=True)
                    secs += more
                    where = "full suite"
            finally:
                (root / PKG / m.path).write_text(original)
                _clear_numba_cache(root, m.path)
            verdict = "killed" if killed else "SURVIVED"
            print(f"[{i:2d}/{len(mutants)}] {verdict:8s} ({where}, {secs:5.0f} s) "
                  f"{m.path}: {m.why}" + (f"\n        by {by}" if by else ""), flush=True)
            results[m.path].append((m, killed))
    print("\nmodule                           mutants  killed  survived")
    total = caught = 0
    for path, rows in sorted(results.items()):
        k = sum(killed for _, killed in rows)
        total, caught = total + len(rows), caught + k
        print(f"{path:32s} {len(rows):7d} {k:7d} {len(rows) - k:9d}")
    print(f"{'total':32s} {total:7d} {caught:7d} {total - caught:9d}   "
          f"score {100 * caught / max(total, 1):.0f}%")
    survivors = [m for rows in results.values() for m, killed in rows if not killed]
    if survivors:
        print("\nsurvivors:")
        for m in survivors:
            print(f"  {m.path}: {m.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

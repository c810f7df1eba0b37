"""Fitting the logit family (restrictiveness.demand.fitting, the compiled residual callbacks):
the callbacks against their NumPy twins, the compiled optimiser at scipy's optimum inside the box
and with active bounds, the budgets, and the stalled sample of the demand replication."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from restrictiveness.demand import _logit_nb, _nested_nb
from restrictiveness.demand.fitting import (
    CONVERGE_CAP,
    MAX_NFEV,
    NOT_RUN,
    Problem,
    _ScipyObjective,
    check_options,
    solve,
)
from restrictiveness.demand.models import (
    BETA_BOUND,
    DEFAULT_FORMULA,
    MARKET_COLUMNS,
    MNL,
    PAPER_MXL,
    REFLECT_DIAGONAL,
    DemandFit,
    MixedLogit,
    NestedLogit,
    _Design,
    _problem,
    _reflections,
)
from restrictiveness.shared.exceptions import ConfigurationError
from restrictiveness.shared.sample import Sample


def markets(n, seed, J=24):
    rng = np.random.default_rng(seed)
    return np.stack([rng.uniform(0.05, 0.2, (n, J)), rng.uniform(0, 20, (n, J)),
                     rng.integers(0, 2, (n, J)).astype(float)], axis=2)


def mxl_truth(X, params, random, nodes=64):
    proc = MixedLogit(random=random, nodes=nodes)
    d = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)
    ex = proc._extra(d.names)
    return DemandFit("MXL", np.asarray(params, float), proc.parameter_names(d.names), d,
                     MARKET_COLUMNS, extra={k: ex[k] for k in ("K", "ridx", "lrow", "lcol", "z")})


def noisy(y, seed, scale=0.05):
    """Shares perturbed multiplicatively (a pseudo-truth no model in the family fits exactly)."""
    rng = np.random.default_rng(seed)
    return y * np.exp(scale * rng.standard_normal(y.shape))


def scipy_converged(prob: Problem, x0):
    """scipy's trf from the same start, run to convergence on the same residuals."""
    m = prob.free != 0

    def full(z):
        x = x0.copy()
        x[m] = z
        return x

    r = scipy.optimize.least_squares(
        lambda z: prob.resjac(full(z), prob.data)[0], x0[m],
        jac=lambda z: prob.resjac(full(z), prob.data)[1][:, m], bounds=(prob.lo[m], prob.hi[m]),
        method="trf", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=20_000)
    return full(r.x), r.cost


# --------------------------------------------------------------------------- callbacks


def test_residual_callbacks_match_their_numpy_twins():
    X = markets(6, 0)
    W = np.ascontiguousarray(_Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)(X))
    y = np.full((6, 24), 0.02)
    g = X[:, :, 2].astype(np.int64)
    for theta in (np.r_[-3, -10, 0.05, 0.3, 0.3, 0.6], np.r_[-3, -10, 0.05, 0.3, 0.0, 0.0],
                  np.r_[4, -50, 2, -3, 0.99, 0.0]):
        a, b = _nested_nb.nl_resjac(theta, (W, g, y)), _nested_nb.nl_resjac_numpy(theta, (W, g, y))
        np.testing.assert_allclose(a[0], b[0], rtol=1e-12, atol=1e-16)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-9, atol=1e-14)
    fit = mxl_truth(X, np.r_[-3, -10, 0.05, 0.3, 0.5, 0.2, 1.0], ["Intercept", "prices"])
    prob = _problem("MXL", W, y, {**fit.extra})
    a = _logit_nb.mxl_resjac(fit.params, prob.data)
    b = _logit_nb.mxl_resjac_numpy(fit.params, prob.data)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-12, atol=1e-16)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(a[0], (fit.predict(X) - y).ravel(), rtol=1e-12, atol=1e-16)


# --------------------------------------------------------------------------- scipy's optimum


MXL_RANDOM = ["Intercept", "prices"]


def mxl_problem(seed, binding):
    """A noisy MXL sample (1% multiplicative noise, 30 markets, random intercept and price
    coefficient); ``binding`` makes the mean price response steeper than the bound allows, so
    β_price = −50 binds."""
    X = markets(30, seed)
    rng = np.random.default_rng(seed + 100)
    beta = np.array([-2.5, -12.0, 0.05, 0.3]) * rng.uniform(0.8, 1.2, 4)
    if binding:
        beta[1] = -55.0
    L = np.r_[rng.uniform(0.4, 1.2), rng.uniform(-0.3, 0.3), rng.uniform(0.4, 1.2)]
    truth = mxl_truth(X, np.r_[beta, L], MXL_RANDOM)
    y = noisy(truth.predict(X), seed, 0.01)
    W = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)(X)
    prob = _problem("MXL", W, y, dict(truth.extra))
    x0 = np.r_[beta * 0.9, 0.5, 0.0, 0.5]
    return prob, np.clip(x0, prob.lo, prob.hi)


@pytest.mark.parametrize("binding", [False, True])
def test_compiled_mxl_fit_reaches_scipys_optimum(binding):
    """Twelve samples each inside the box and with an active bound (24 in all): the compiled
    optimiser run to convergence reaches the objective of scipy's trf run to convergence from
    the same start (or a lower one), with the same fitted shares. (The parameters themselves
    are weakly identified with two random coefficients on 64 nodes: equal objectives to 1e-14
    at estimates 0.1–0.7 apart.)"""
    lower = 0
    for seed in range(12):
        prob, x0 = mxl_problem(seed, binding)
        sol = solve(prob, [("start", x0)], "converge", None)
        x_ref, cost_ref = scipy_converged(prob, x0)
        assert sol.converged, sol.starts
        assert sol.cost <= cost_ref * (1 + 1e-9), (seed, sol.cost, cost_ref)
        lower += sol.cost < cost_ref * (1 - 1e-9)
        if sol.cost >= cost_ref * (1 - 1e-9):
            r, _ = prob.resjac(sol.x, prob.data)
            r_ref, _ = prob.resjac(x_ref, prob.data)
            np.testing.assert_allclose(r, r_ref, atol=1e-6 * np.abs(prob.data[2]).max())
        assert np.all((sol.x >= prob.lo) & (sol.x <= prob.hi))
        if binding:
            assert sol.x[1] == -BETA_BOUND
    assert lower <= (12 if binding else 2)


def test_compiled_nl_fit_reaches_scipys_optimum():
    for seed in range(10):
        X = markets(20, seed)
        W = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)(X)
        g = X[:, :, 2].astype(np.int64)
        rho = np.array([0.3, 0.995 if seed % 2 else 0.6])       # odd seeds: ρ_1 binds at 0.99
        y = noisy(_nested_nb.nl_shares(W @ [-3.0, -10.0, 0.05, 0.3], g, rho), seed)
        prob = _problem("NL", W, y, {"g": g})
        x0 = np.r_[-2.0, -8.0, 0.0, 0.0, 0.5, 0.5]
        sol = solve(prob, [("start", x0)], "converge", None)
        x_ref, cost_ref = scipy_converged(prob, x0)
        assert sol.converged and sol.cost <= cost_ref * (1 + 1e-9)
        np.testing.assert_allclose(sol.x, x_ref, rtol=1e-5, atol=1e-6)
        if seed % 2:
            assert sol.x[-1] == prob.hi[-1]


# --------------------------------------------------------------------------- nesting


def test_mxl_with_zero_covariance_and_nl_with_zero_rho_fit_as_mnl():
    """On MNL data the MNL fit is exact: NL ends at ρ = 0 and MXL at Σ = 0, at MNL's estimate."""
    X = markets(15, 3)
    W = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)(X)
    beta = np.array([-3.0, -10.0, 0.05, 0.3])
    e = np.exp(W @ beta)
    y = e / (1 + e.sum(axis=1, keepdims=True))
    s = Sample(X, y, MARKET_COLUMNS, "shares")
    mnl = MNL().fit(s)
    nl = NestedLogit().fit(s)
    mxl = MixedLogit(random=["sugar"], nodes=64).fit(s)
    np.testing.assert_allclose(mnl.params, beta, rtol=1e-8)
    np.testing.assert_allclose(nl.params[-2:], 0.0, atol=1e-6)
    np.testing.assert_allclose(nl.params[:4], beta, rtol=1e-5)
    np.testing.assert_allclose(mxl.params, np.r_[beta, 0.0], rtol=1e-8, atol=1e-6)
    np.testing.assert_allclose(nl.predict(X), mnl.predict(X), rtol=1e-5)
    np.testing.assert_allclose(mxl.predict(X), mnl.predict(X), rtol=1e-8)


# --------------------------------------------------------------------------- budgets


def budget_problem():
    prob, x0 = mxl_problem(5, False)
    starts = [("a", x0), ("b", np.r_[x0[:4], x0[4:] * 2])]
    return prob, starts


def test_budgets_count_evaluations_as_documented():
    prob, starts = budget_problem()
    conv = solve(prob, starts, "converge", None)
    used = [rec[2] for rec in conv.starts]
    assert conv.converged and all(u > 5 for u in used)
    # per start: every start gets the budget
    per = solve(prob, starts, "start", 5)
    assert [rec[2] for rec in per.starts] == [5, 5] and not per.converged
    # per fit: the starts share it, in order; a start left with nothing is not run
    fit = solve(prob, starts, "fit", used[0] + 3)
    assert [rec[2] for rec in fit.starts] == [used[0], 3]
    fit = solve(prob, starts, "fit", used[0] - 1)
    assert fit.starts[1][3] == NOT_RUN and fit.nfev == used[0] - 1 and not fit.converged
    # a budget that never binds gives the converged fit
    same = solve(prob, starts, "fit", sum(used))
    assert same.cost == conv.cost and same.converged
    assert CONVERGE_CAP >= 10_000


def test_enough_skips_the_remaining_starts_but_not_the_followups():
    prob, starts = budget_problem()
    both = solve(prob, starts, "converge", None)
    asked = []

    def enough(cost, status):
        asked.append((cost, status))
        return True

    one = solve(prob, starts, "converge", None, enough=enough)
    # asked once, about the first start's end; the second start is neither run nor recorded
    assert asked == [(both.starts[0][1], both.starts[0][3])]
    assert one.starts == both.starts[:1] and one.nfev == both.starts[0][2]
    never = solve(prob, starts, "converge", None, enough=lambda cost, status: False)
    assert never.starts == both.starts and never.cost == both.cost
    # follow-ups are not starts: they still run after a start that was enough
    follow = solve(prob, starts, "converge", None, followups=lambda x: [("f", x * 1.01)],
                   enough=enough)
    assert [rec[0] for rec in follow.starts][:2] == ["a", "f"]


def test_adaptive_mxl_runs_the_second_start_only_when_needed():
    """Replication 3 of seed 0 at n = 100: the L = 0.5·I start converges far below MNL, so the
    default fit is that start's (the same point and evaluations as in the two-start fit): it
    saves exactly the other starts' evaluations (43 against 78 in all). A first start out of
    budget, or converged at the MNL objective, is followed by the second."""
    sample = replication_sample(3)
    both = MixedLogit(starts="both").fit(sample)
    fit = MixedLogit().fit(sample)
    assert [rec[0] for rec in both.info["starts"]] == ["MNL+0.5I", "MNL+1.0I"]
    assert fit.info["starts"] == both.info["starts"][:1]
    assert fit.info["cost"] == both.info["starts"][0][1] < 0.9 * fit.info["mnl_cost"]
    assert fit.info["nfev"] == both.info["starts"][0][2]
    assert both.info["nfev"] - fit.info["nfev"] == sum(rec[2] for rec in both.info["starts"][1:])
    assert len(both.info["starts"]) > 1 and both.info["starts"][1][2] > 0
    # a first start stopped by its budget calls for the second, even below the MNL objective
    short = MixedLogit(budget="start", max_nfev=20).fit(sample)
    assert [rec[0] for rec in short.info["starts"]][:2] == ["MNL+0.5I", "MNL+1.0I"]
    assert [rec[2:] for rec in short.info["starts"][:2]] == [[20, 0], [20, 0]]
    assert short.info["starts"][0][1] < 0.9 * short.info["mnl_cost"]
    # so does one ending at the MNL objective: with noisy MNL shares the best random price
    # coefficient is L = 0, where the first start converges (to 4e-13 relative)
    X = markets(10, 0)
    e = np.exp(_Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)(X) @ [-1.0, -10.0, 0.05, 0.3])
    y = noisy(e / (1 + e.sum(axis=1, keepdims=True)), 0, 0.01)
    at_mnl = MixedLogit(random=["prices"], nodes=16).fit(Sample(X, y, MARKET_COLUMNS, "shares"))
    first, second = at_mnl.info["starts"][:2]
    assert (first[0], second[0]) == ("MNL+0.5I", "MNL+1.0I")
    assert first[3] > 0 and first[1] == pytest.approx(at_mnl.info["mnl_cost"], rel=1e-9)
    assert at_mnl.info["nfev"] == first[2] + second[2]


def test_budget_options_are_checked():
    assert check_options("start", 50, "lm") == 50
    with pytest.raises(ConfigurationError, match="budget"):
        MixedLogit(budget="per-fit")
    with pytest.raises(ConfigurationError, match="no effect"):
        MixedLogit(budget="converge", max_nfev=400)
    with pytest.raises(ConfigurationError, match="max_nfev"):
        MNL(max_nfev=0)
    with pytest.raises(ConfigurationError, match="method"):
        NestedLogit(method="lbfgs")
    with pytest.raises(ConfigurationError, match="starts must be one of"):
        MixedLogit(starts="spec")


def test_scipy_methods_give_the_same_optimum_as_the_compiled_one():
    prob, starts = budget_problem()
    lm = solve(prob, starts[:1], "converge", None)
    trf = solve(prob, starts[:1], "converge", None, method="trf")
    assert trf.cost == pytest.approx(lm.cost, rel=1e-6)
    assert trf.converged and trf.starts[0][3] > 0
    # scipy stopped by its budget (its status 0) is the budget status, not convergence
    for method in ("trf", "dogbox"):
        short = solve(prob, starts[:1], "start", 3, method=method)
        assert short.starts[0][3] == 0 and short.nfev <= 3 and not short.converged


def test_scipy_objective_gives_the_jacobian_of_the_point_asked_for():
    """scipy asks for the Jacobian after the residuals at the same point, which the objective
    keeps; asked at any other point (an earlier iterate) it is the Jacobian there, over the
    free parameters."""
    prob, starts = budget_problem()
    x0 = starts[0][1]
    obj = _ScipyObjective(prob, x0)
    m = prob.free != 0
    z0, z1 = x0[m], x0[m] + 0.05
    for z in (z0, z1):
        r = obj.fun(z)
        np.testing.assert_array_equal(r, prob.resjac(z, prob.data)[0])
    np.testing.assert_array_equal(obj.jac(z1), prob.resjac(z1, prob.data)[1][:, m])
    np.testing.assert_array_equal(obj.jac(z0), prob.resjac(z0, prob.data)[1][:, m])
    assert obj.nfev == 2


def test_baseline_and_berry_starts_are_their_closed_forms():
    """The baseline start is the common-intercept logit's fit ``γ = log(b / (1 − J b))`` with b
    the mean inside share; the Berry start is the OLS of ``log(s_j / s_0)`` on ``w_j``, which on
    noise-free MNL shares is β itself."""
    X = markets(12, 4)
    d = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)
    W = d(X)
    beta = np.array([-3.0, -10.0, 0.05, 0.3])
    e = np.exp(W @ beta)
    y = e / (1 + e.sum(axis=1, keepdims=True))
    b = y.mean()
    np.testing.assert_allclose(MNL._baseline_beta(W, y, d.names),
                               [np.log(b / (1 - 24 * b)), 0, 0, 0], rtol=1e-14)
    np.testing.assert_allclose(MNL._berry_beta(W, y), beta, rtol=1e-10)


# --------------------------------------------------------------------------- the stall


def replication_sample(m, n=100, seed=0):
    """The size-n training sample of replication m of ``rx.demand.study(seed=seed)``."""
    from restrictiveness.demand.prior import DemandPrior
    from restrictiveness.engine.study import truth_rng

    truth = DemandPrior().draw([50, 100, 200], truth_rng(seed, m))
    return Sample(truth.train_locations[0][:n], truth.train_y(n), MARKET_COLUMNS, "shares")


def test_the_stalled_sample_fits_below_mnl():
    """Replication 30 of seed 0 at n = 100: MNL's price coefficient sits on its bound −50 (scipy's
    trf left it 7e-15 inside), from where scipy's dogbox took a 1e-14 step and stopped, so MXL
    ended at MNL's objective 1.623. Both MXL starts now get far below it, also when the start
    carries the old few-ulps gap."""
    sample = replication_sample(30)
    mnl = MNL().fit(sample)
    assert mnl.params[1] == -BETA_BOUND
    mxl = MixedLogit().fit(sample)
    assert mxl.info["start"] != "MNL (L = 0)"
    assert mxl.info["cost"] < 0.8 * mnl.info["cost"]
    assert all(cost < 0.8 * mnl.info["cost"] for _, cost, _, _ in mxl.info["starts"])
    d = _Design(DEFAULT_FORMULA, sample.X, MARKET_COLUMNS)
    proc = MixedLogit()
    ex = proc._extra(d.names)
    prob = _problem("MXL", d(sample.X), sample.y, ex)
    x0 = np.r_[mnl.params, np.where(ex["lrow"] == ex["lcol"], 0.5, 0.0)]
    x0[1] += 7.105e-15                                   # the gap scipy's trf left
    gap = solve(prob, [("MNL+0.5I", x0)], "fit", 400)
    assert gap.cost < 0.8 * mnl.info["cost"]
    # scipy's dogbox from the same start, put on the bound first, no longer stalls either
    dog = solve(prob, [("MNL+0.5I", x0)], "start", 60, method="dogbox")
    assert dog.nfev > 2 and dog.cost < 0.8 * mnl.info["cost"]


@pytest.mark.slow
def test_mxl_ends_at_mnl_in_at_most_one_of_forty_replications():
    """Before the fix, 7 of the first 40 replications of seed 0 at n = 100 ended exactly at MNL's
    objective (five stalls at the price bound, two exhausted budgets)."""
    at_mnl = []
    for m in range(40):
        fit = MixedLogit().fit(replication_sample(m))
        if fit.info["cost"] >= fit.info["mnl_cost"]:
            at_mnl.append(m)
    assert len(at_mnl) <= 1, at_mnl


# --------------------------------------------------------------------------- reflected starts


def test_reflected_start_has_the_same_covariance_and_is_screened_by_its_slope():
    """A diagonal at 0 gives a follow-up start with the same Σ = LLᵀ up to the small diagonal
    (only that column's sign changes), and only where the objective decreases in L_aa there
    (checked against a finite difference of the objective)."""
    X = markets(20, 3)
    truth = mxl_truth(X, np.r_[-2.5, -12, 0.05, 0.3, 0.8, -0.6, 0.0], MXL_RANDOM)
    W = _Design(DEFAULT_FORMULA, X, MARKET_COLUMNS)(X)
    theta = np.r_[-2.4, -11.0, 0.05, 0.3, 0.0, -0.5, 0.7]     # L[Intercept, Intercept] = 0
    seen = set()
    for scale in (0.8, 1.25):
        y = noisy(truth.predict(X), 5, 0.05) * scale
        prob = _problem("MXL", W, y, dict(truth.extra))
        K, lrow, lcol = 4, truth.extra["lrow"], truth.extra["lcol"]
        starts = _reflections(theta, prob, K, lrow, lcol)
        mirror = theta.copy()
        mirror[5] *= -1.0                                   # L[prices, Intercept]
        cost = [0.5 * np.sum(prob.resjac(np.r_[mirror[:4], h, mirror[5:]], prob.data)[0] ** 2)
                for h in (0.0, 1e-6)]
        assert len(starts) == int(cost[1] < cost[0])        # the slope decides
        seen.add(len(starts))
        for name, x0 in starts:
            assert name == "reflect[0]" and x0[4] == REFLECT_DIAGONAL
            L0, L1 = np.zeros((2, 2)), np.zeros((2, 2))
            L0[lrow, lcol], L1[lrow, lcol] = theta[K:], np.r_[0.0, x0[K + 1:]]
            np.testing.assert_allclose(L0 @ L0.T, L1 @ L1.T)
    # no diagonal on its bound, or one with nothing below it to reflect: nothing
    assert _reflections(np.r_[theta[:4], 0.7, -0.5, 0.7], prob, K, lrow, lcol) == []
    assert _reflections(np.r_[theta[:4], 0.7, -0.5, 0.0], prob, K, lrow, lcol) == []
    assert seen == {0, 1}, "both slopes should occur on these two samples"


def test_followups_share_the_budget_and_run_only_after_improvements():
    prob, starts = budget_problem()
    conv = solve(prob, starts, "converge", None)
    calls = []

    def more(x):
        calls.append(x.copy())
        return [("again", x + 0.3)]

    fit = solve(prob, starts, "fit", 400, followups=more)
    assert fit.nfev <= 400 and fit.starts[2][0] == "again"
    # the follow-up from a converged best does not improve it, so there is one round only
    assert len(calls) == 1 and fit.cost == pytest.approx(conv.cost, rel=1e-9)
    tight = solve(prob, starts, "fit", conv.nfev, followups=more)
    assert tight.starts[-1][3] == NOT_RUN and tight.nfev == conv.nfev


def test_only_a_real_gain_earns_another_round_of_followups():
    """A follow-up that lowers the best objective by more than FOLLOWUP_GAIN (relative) earns
    the new best its own follow-ups; one that re-converges to the last digits (a gain of 1e-12)
    does not, and the rounds stop at MAX_FOLLOWUP_ROUNDS. A scripted solver returns the cost
    its start names, in x0[0]."""
    from restrictiveness.demand.fitting import FOLLOWUP_GAIN, MAX_FOLLOWUP_ROUNDS

    def solver(x0, lo, hi, free, data, nfev, gtol, xtol, ftol):
        return x0, x0[0], 1, 1, 0.0

    prob = Problem(None, solver, (), np.zeros(1), np.full(1, 10.0), np.ones(1, np.int64))
    last = MAX_FOLLOWUP_ROUNDS
    for factor, rounds in ((1 - 1e-12, 1), (1 - 0.1 * FOLLOWUP_GAIN, 1),
                           (1 - 10 * FOLLOWUP_GAIN, last), (0.5, last)):
        calls = []

        def more(x, factor=factor, calls=calls):
            calls.append(x[0])
            return [("again", x * factor)]

        sol = solve(prob, [("start", np.array([1.0]))], "converge", None, followups=more)
        assert len(calls) == rounds, (factor, calls)
        assert sol.cost == pytest.approx(factor ** rounds, rel=1e-15)


def test_reflection_lowers_a_fit_that_ended_with_a_diagonal_at_zero():
    """Replication 47 of seed 0 at n = 100: both MXL starts ended at L[prices, prices] = 0 with
    an objective 6% above scipy dogbox's; the reflected start gets below dogbox's (0.23966)."""
    sample = replication_sample(47)
    plain = MixedLogit(reflect=False).fit(sample)
    names = plain.names
    assert plain.params[names.index("L[prices,prices]")] <= 1e-9
    fit = MixedLogit().fit(sample)
    assert fit.info["start"].startswith("reflect")
    assert fit.info["cost"] < 0.95 * plain.info["cost"]
    assert fit.info["nfev"] <= 400
    diag = [fit.params[names.index(f"L[{t},{t}]")] for t in
            ("Intercept", "prices", "sugar", "mushy")]
    assert min(diag) >= 0.0
    dog = MixedLogit(method="dogbox", budget="start", max_nfev=400, reflect=False,
                     starts="both").fit(sample)
    assert fit.info["cost"] <= dog.info["cost"] * (1 + 1e-8)


@pytest.mark.slow
def test_converged_fit_is_lower_than_the_budget_limited_dogbox():
    """SPEC §7's reading of the paper's fit — scipy's dogbox, analytic Jacobian, at most 400
    evaluations for the fit's starts together — exhausts its budget in most samples, and from
    the same starts the compiled LM, which converges, ends lower: on the first 20 replications
    of seed 0 at n = 100, by 4% in the median, and above dogbox (by more than 1e-8 relative) in
    at most one (replication 18, where the two end in different basins, LM 0.07% above; 0.9%
    with both starts always). Issue 15; the r̂ this difference makes is measured by
    ``benchmarks/bench_demand_paper_setting.py``.
    """
    exhausted, rel = 0, []
    for m in range(20):
        sample = replication_sample(m)
        lm = MixedLogit().fit(sample)
        dog = MixedLogit(**PAPER_MXL).fit(sample)
        assert dog.info["nfev"] <= MAX_NFEV
        rel.append(lm.info["cost"] / dog.info["cost"] - 1)
        exhausted += dog.info["nfev"] == MAX_NFEV
    assert sum(r > 1e-8 for r in rel) <= 1, rel
    assert np.median(rel) < -1e-2 and exhausted >= 16

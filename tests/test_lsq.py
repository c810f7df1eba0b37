"""The compiled bounded Levenberg–Marquardt (restrictiveness.shared._lsq_nb): its NumPy twin,
scipy's least_squares at the optimum (inside the box and with active bounds), the stall at a
bound it was written to remove (snapping margins, steps cut by a new bound), the evaluation
budget, the fixed entries, and its Cholesky solve and secant update against closed forms."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
import scipy.linalg
import scipy.optimize

from restrictiveness.shared._lsq_nb import BOUND_RTOL, ROOT, STATUS, compile_lm, python_lm
from restrictiveness.shared.exceptions import ConfigurationError


def _decay_with(exp):
    def decay(theta, data):
        """Residuals of y ≈ a e^{−b t} + c and their Jacobian."""
        t, y = data
        e = exp(-theta[1] * t)
        r = theta[0] * e + theta[2] - y
        J = np.empty((t.shape[0], 3))
        J[:, 0] = e
        J[:, 1] = -theta[0] * t * e
        J[:, 2] = 1.0
        return r, J
    return decay


_decay = _decay_with(np.exp)
decay_nb = numba.njit(_decay)
SOLVE = compile_lm(decay_nb, "test_decay", cache=False)


def _decay_second_with(exp, decay):
    def decay_second(theta, data):
        """:func:`decay` and ``S = Σ r_i ∇²r_i``: ``∂²r/∂a∂b = −t e``, ``∂²r/∂b² = a t² e``."""
        r, J = decay(theta, data)
        t = data[0]
        e = exp(-theta[1] * t)
        S = np.zeros((3, 3))
        S[0, 1] = S[1, 0] = -np.sum(r * t * e)
        S[1, 1] = theta[0] * np.sum(r * t * t * e)
        return r, J, S
    return decay_second


SOLVE_EXACT = compile_lm(decay_nb, "test_decay_exact", cache=False,
                         second_order=numba.njit(_decay_second_with(np.exp, decay_nb)))
# The twin's residuals take the C library's exp, which the compiled ones call: numpy's own
# (SIMD, AVX-512 here) differs from it in the last bit for about 5% of arguments, and a
# convergence test at its threshold then stopped the two one evaluation apart (6 against 7)
_libm_exp = np.vectorize(math.exp, otypes=[float])
TWIN = python_lm(_decay_with(_libm_exp))
TWIN_EXACT = python_lm(_decay_with(_libm_exp), "lm_exact_numpy",
                       _decay_second_with(_libm_exp, _decay_with(_libm_exp)))
TOL = (1e-12, 1e-12, 1e-12)     # gtol, xtol, ftol: run to convergence


def problem(seed, noise=0.05):
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 4, 40)
    a, b, c = rng.uniform(0.5, 3), rng.uniform(0.3, 2), rng.uniform(-1, 1)
    y = a * np.exp(-b * t) + c + noise * rng.standard_normal(t.size)
    return t, y


FREE = np.ones(3, dtype=np.int64)
WIDE = (np.full(3, -10.0), np.full(3, 10.0))


def scipy_optimum(x0, lo, hi, data, method="trf"):
    return scipy.optimize.least_squares(lambda x: _decay(x, data)[0], x0,
                                        jac=lambda x: _decay(x, data)[1], bounds=(lo, hi),
                                        method=method, xtol=1e-15, ftol=1e-15, gtol=1e-15,
                                        max_nfev=10_000)


# the closed forms and edges first: a mutant fails here in seconds (mutate.py runs this
# file with -x), before the comparisons with scipy, where a broken damping can loop for ever


def test_each_bound_has_its_own_relative_margin():
    """The margin of an upper bound is ``BOUND_RTOL·max(1, |hi|)`` whatever the lower bound:
    with the amplitude in [0, 1000] a start 5e-7 below 1000 (within 1e-6) is put on it, one
    2e-6 below is not."""
    data = problem(5)
    lo, hi = np.array([0.0, 0.0, -10.0]), np.array([1000.0, 10.0, 10.0])
    for gap, on in ((5e-7, True), (2e-6, False)):
        x0 = np.array([1000.0 - gap, 1.0, 0.0])
        x = SOLVE(x0, lo, hi, FREE, data, 1, *TOL)[0]
        assert x[0] == (1000.0 if on else x0[0])


def test_first_two_iterations_follow_the_documented_formulas():
    """Two iterations on a one-parameter problem, by hand from the module docstring:
    ``(H + μD²) s = −g`` with ``μ₀ = 1e-3`` and ``D² = max diag(JᵀJ)``; the accepted first step
    multiplies μ by ``max(1/3, 1 − (2ρ − 1)³)`` with ρ the actual over the predicted reduction
    of ``Σ r²``; it reduces the objective by less than 20%, so the second step's model is
    ``JᵀJ + S`` with S the secant update (in one dimension ``S = y#/dx``,
    ``y# = (J₁ − J₀)ᵀ r₁``). The start, 0.3, is where these branches are taken (asserted)."""
    t, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.5, 2.0])

    def resjac(theta, data):
        e = np.exp(theta[0] * data[0])
        return e - data[1], (data[0] * e)[:, None]

    def rj(x):
        r, J = resjac(np.array([x]), (t, y))
        return r, J[:, 0]

    x0 = 0.3
    r0, j0 = rj(x0)
    g0, G0, ssr0 = j0 @ r0, j0 @ j0, r0 @ r0
    s0 = -g0 / (G0 + 1e-3 * G0)
    x1 = x0 + s0
    r1, j1 = rj(x1)
    g1, G1, ssr1 = j1 @ r1, j1 @ j1, r1 @ r1
    rho = (ssr0 - ssr1) / (-2 * g0 * s0 - G0 * s0**2)
    assert ssr1 < ssr0 and 0 < rho < 0.9                  # accepted; μ's update not clamped
    assert ssr0 - ssr1 < 0.2 * ssr0 and s0 * (g1 - g0) > 0  # slow: G + S next; S updated
    mu1 = 1e-3 * max(1 / 3, 1 - (2 * rho - 1) ** 3)
    S = (g1 - j0 @ r1) / s0
    x2 = x1 - g1 / (G1 + S + mu1 * max(G0, G1))
    assert rj(x2)[0] @ rj(x2)[0] < ssr1                   # the second step is accepted too
    solve = python_lm(resjac, "lm_one_parameter")
    box = (np.array([-5.0]), np.array([5.0]), np.ones(1, np.int64), (t, y))
    for budget, expected in ((2, x1), (3, x2)):
        # zero tolerances: no convergence test stops the run before the budget
        x, cost, nfev, status, opt = solve(np.array([x0]), *box, budget, 0.0, 0.0, 0.0)
        assert nfev == budget and status == 0
        assert x[0] == pytest.approx(expected, rel=1e-13)


def test_an_exact_second_order_term_is_used_from_the_points_evaluated_with_it():
    """With ``second_order`` bound, the trial points of steps whose model has ``S`` are
    evaluated by it, and an accepted one's exact ``S`` replaces the secant estimate. By hand on
    the problem of the test above: the first step (Gauss–Newton) is slow, so the second uses
    ``JᵀJ + S`` with the secant ``S`` (no exact term at ``x₁``: it was evaluated for a
    Gauss–Newton step) and its trial ``x₂`` is evaluated with the exact term; that step is slow
    too (asserted), so the third is ``x₂ − g₂/(G₂ + S(x₂) + μ₂D²)`` with the exact
    ``S(x₂) = Σ r_i t_i² e^{θ t_i}`` (not the secant update from ``x₁``, asserted to differ)."""
    t, y = np.array([0.0, 1.0, 2.0]), np.array([1.0, 3.5, 2.0])
    seen = []

    def resjac(theta, data):
        seen.append(("resjac", theta[0]))
        e = np.exp(theta[0] * data[0])
        return e - data[1], (data[0] * e)[:, None]

    def second_order(theta, data):
        seen.append(("second_order", theta[0]))
        e = np.exp(theta[0] * data[0])
        r = e - data[1]
        return r, (data[0] * e)[:, None], np.array([[np.sum(r * data[0] ** 2 * e)]])

    def rj(x):
        e = np.exp(x * t)
        r, j = e - y, t * e
        return r, j, j @ r, j @ j, r @ r, np.sum(r * t ** 2 * e)

    x0 = 0.3
    r0, j0, g0, G0, ssr0, _ = rj(x0)
    x1 = x0 - g0 / (G0 + 1e-3 * G0)
    r1, j1, g1, G1, ssr1, _ = rj(x1)
    rho1 = (ssr0 - ssr1) / (-2 * g0 * (x1 - x0) - G0 * (x1 - x0) ** 2)
    assert 0.8 * ssr0 < ssr1 < ssr0                         # accepted, slow: G + S next
    mu1 = 1e-3 * max(1 / 3, 1 - (2 * rho1 - 1) ** 3)
    S1 = (g1 - j0 @ r1) / (x1 - x0)                          # the secant term at x₁
    D2 = max(G0, G1)
    x2 = x1 - g1 / (G1 + S1 + mu1 * D2)
    r2, j2, g2, G2, ssr2, S2 = rj(x2)
    s1 = x2 - x1
    rho2 = (ssr1 - ssr2) / (-2 * g1 * s1 - (G1 + S1) * s1 ** 2)
    assert 0.8 * ssr1 < ssr2 < ssr1 and abs(S2 - S1) > 0.1 * abs(S1)
    mu2 = mu1 * max(1 / 3, 1 - (2 * rho2 - 1) ** 3)
    x3 = x2 - g2 / (G2 + S2 + mu2 * max(D2, G2))
    solve = python_lm(resjac, "lm_exact_second_order", second_order)
    box = (np.array([-5.0]), np.array([5.0]), np.ones(1, np.int64), (t, y))
    # zero tolerances: no convergence test stops the run before the budget
    x, cost, nfev, status, opt = solve(np.array([x0]), *box, 4, 0.0, 0.0, 0.0)
    assert nfev == 4 and status == 0
    assert [name for name, _ in seen] == ["resjac", "resjac", "second_order", "second_order"]
    np.testing.assert_allclose([v for _, v in seen], [x0, x1, x2, x3], rtol=1e-13)


def test_the_exact_second_order_term_converges_in_fewer_evaluations_on_large_residuals():
    """Misspecified fits (a decay curve through a parabola and two cosines: large, systematic
    residuals, where Gauss–Newton converges slowly and the model uses ``S``) from three starts
    each: the solver with the exact term reaches scipy's optimum in fewer evaluations in all
    than with the secant estimate (123 against 146 when written), and equals its NumPy twin."""
    t = np.linspace(0, 4, 40)
    exact_total = secant_total = 0
    for y in ((t - 2) ** 2, np.cos(2 * t) + 0.5, 2 * np.cos(3 * t)):
        for x0 in ([1.0, 1.0, 0.0], [2.0, 0.5, 0.5], [0.5, 2.0, -0.5]):
            x0 = np.array(x0)
            x, cost, nfev, status, opt = SOLVE_EXACT(x0, *WIDE, FREE, (t, y), 500, *TOL)
            ref = scipy_optimum(x0, *WIDE, (t, y))
            assert status > 0 and cost <= ref.cost * (1 + 1e-12)
            np.testing.assert_allclose(x, ref.x, rtol=1e-6, atol=1e-8)
            twin = TWIN_EXACT(x0, *WIDE, FREE, (t, y), 500, *TOL)
            np.testing.assert_allclose(twin[0], x, rtol=1e-12, atol=1e-14)
            assert twin[2:4] == (nfev, status)
            exact_total += nfev
            secant_total += SOLVE(x0, *WIDE, FREE, (t, y), 500, *TOL)[2]
    assert exact_total < 0.9 * secant_total, (exact_total, secant_total)


def test_a_step_failing_by_rounding_at_the_optimum_ends_the_fit():
    """MINPACK's objective test holds on a failed step too: a Newton step (exact second-order
    term) reaches the optimum to rounding, the next step changes the objective by less than
    ``ftol`` relative and fails, and the fit ends there (status 2), one evaluation after its
    last decrease, at scipy's optimum. Tested on failed steps only after accepted ones, the
    damping grew for about ten more evaluations until "no decrease at any damping"."""
    costs = []
    decay = _decay_with(_libm_exp)
    decay_second = _decay_second_with(_libm_exp, decay)

    def resjac(theta, data):
        r, J = decay(theta, data)
        costs.append(r @ r)
        return r, J

    def second_order(theta, data):
        r, J, S = decay_second(theta, data)
        costs.append(r @ r)
        return r, J, S

    data = problem(0, noise=3.0)
    x0 = np.array([1.0, 1.0, 0.0])
    x, cost, nfev, status, opt = python_lm(resjac, "lm_rounding_stop", second_order)(
        x0, *WIDE, FREE, data, 500, *TOL)
    ref = scipy_optimum(x0, *WIDE, data)
    assert status == 2 and cost <= ref.cost * (1 + 1e-12)
    assert costs[-1] >= min(costs[:-1]) and costs[-2] < min(costs[:-2])   # failed, after a decrease
    assert abs(costs[-1] / costs[-2] - 1) <= TOL[2]


def test_a_failed_step_the_model_expected_much_from_is_not_convergence():
    """The objective test on a failed step needs the *predicted* reduction within ``ftol`` too:
    ``r = sin θ`` from ``θ₀ ≈ 1.1661``, where Gauss–Newton's step lands just past ``−θ₀`` (the
    objective up by 1e-6 relative, a failed step) although the model predicted the whole
    objective away. With ``ftol = 0.5`` the change alone would pass; the fit goes on to the exact
    fit ``θ = 0`` (status 4)."""
    def resjac(theta, data):
        return np.array([np.sin(theta[0])]), np.array([[np.cos(theta[0])]])

    t0 = 1.1660874735096819        # the damped step's objective 1e-6 above the start's
    r0, j0 = math.sin(t0), math.cos(t0)
    t1 = t0 - j0 * r0 / (j0 * j0 * (1 + 1e-3))
    assert 0 < math.sin(t1) ** 2 / r0 ** 2 - 1 < 0.5
    x, cost, nfev, status, opt = python_lm(resjac, "lm_overshoot")(
        np.array([t0]), np.array([-5.0]), np.array([5.0]), np.ones(1, np.int64), (), 50,
        0.0, 0.0, 0.5)
    assert status == 4 and cost == 0.0 and nfev > 2


def test_a_failed_secant_step_is_retried_with_more_damping_before_gauss_newton():
    """The model ``JᵀJ + S`` is given up for Gauss–Newton only after its *second* failure (module
    docstring): after one failed step the damping doubles (``μ ← νμ``, ``ν = 2``) and the next
    trial is the same model's step; it failing too, Gauss–Newton is tried at that damping. A
    one-parameter problem, ``r_i = sin(θ u_i) − z_i``, where the first step is accepted with a
    slow reduction (so the second uses ``JᵀJ + S``, with ``S = y#/dx`` in one dimension) and the
    secant steps at ``μ₁`` and ``2μ₁`` both fail (asserted): the callback records the points the
    solver evaluates, which must be, by hand, ``x₀, x₁, x₁ − g₁/(G₁ + S + μ₁D²),
    x₁ − g₁/(G₁ + S + 2μ₁D²), x₁ − g₁/(G₁ + 2μ₁D²)``. Retrying Gauss–Newton after the first
    failure would evaluate ``x₁ − g₁/(G₁ + μ₁D²)`` third (a decrease, asserted: the two orders
    part ways there)."""
    u, z = np.array([1.0, 2.0, 3.0]), np.array([0.5, -0.25, 0.75])
    seen = []

    def resjac(theta, data):
        seen.append(theta[0])
        return np.sin(theta[0] * data[0]) - data[1], (data[0] * np.cos(theta[0] * data[0]))[:, None]

    def rj(x):
        r, J = np.sin(x * u) - z, u * np.cos(x * u)
        return r, J, J @ r, J @ J, r @ r

    x0 = -1.75
    r0, j0, g0, G0, ssr0 = rj(x0)
    x1 = x0 - g0 / (G0 + 1e-3 * G0)
    r1, j1, g1, G1, ssr1 = rj(x1)
    rho = (ssr0 - ssr1) / (-2 * g0 * (x1 - x0) - G0 * (x1 - x0) ** 2)
    assert 0.8 * ssr0 < ssr1 < ssr0 and (x1 - x0) * (g1 - g0) > 0   # slow: G + S next; S updated
    mu1 = 1e-3 * max(1 / 3, 1 - (2 * rho - 1) ** 3)
    S, D2 = (g1 - j0 @ r1) / (x1 - x0), max(G0, G1)
    x2 = x1 - g1 / (G1 + S + mu1 * D2)
    x3 = x1 - g1 / (G1 + S + 2 * mu1 * D2)
    x4 = x1 - g1 / (G1 + 2 * mu1 * D2)
    assert G1 + S + mu1 * D2 > 0 and rj(x2)[4] >= ssr1 and rj(x3)[4] >= ssr1   # both fail
    assert rj(x1 - g1 / (G1 + mu1 * D2))[4] < ssr1      # Gauss–Newton at μ₁ would succeed
    solve = python_lm(resjac, "lm_failed_secant_step")
    box = (np.array([-5.0]), np.array([5.0]), np.ones(1, np.int64), (u, z))
    # zero tolerances: no convergence test stops the run before the budget
    x, cost, nfev, status, opt = solve(np.array([x0]), *box, 5, 0.0, 0.0, 0.0)
    assert nfev == 5 and status == 0
    np.testing.assert_allclose(seen, [x0, x1, x2, x3, x4], rtol=1e-13)


def test_compiled_solver_equals_its_numpy_twin():
    for seed in range(5):
        data = problem(seed)
        x0 = np.array([1.0, 1.0, 0.0])
        lo, hi = np.array([0.0, 0.5, -0.2]), np.array([5.0, 5.0, 0.2])
        a = SOLVE(x0, lo, hi, FREE, data, 200, *TOL)
        b = TWIN(x0, lo, hi, FREE, data, 200, *TOL)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-12, atol=1e-14)
        assert a[1] == pytest.approx(b[1], rel=1e-12)
        assert a[2:4] == b[2:4]


@pytest.mark.parametrize("seed", range(24))
def test_matches_scipy_least_squares_inside_the_box(seed):
    data = problem(seed)
    x0 = np.array([1.0, 1.0, 0.0])
    x, cost, nfev, status, opt = SOLVE(x0, *WIDE, FREE, data, 500, *TOL)
    ref = scipy_optimum(x0, *WIDE, data)
    assert status > 0, STATUS[status]
    assert cost <= ref.cost * (1 + 1e-10)
    np.testing.assert_allclose(x, ref.x, rtol=1e-6, atol=1e-8)
    assert np.all((x > WIDE[0]) & (x < WIDE[1]))


@pytest.mark.parametrize("seed", range(24))
def test_matches_scipy_least_squares_with_active_bounds(seed):
    data = problem(seed)
    # boxes that cut off the unconstrained optimum in the rate and the offset
    free_x = SOLVE(np.array([1.0, 1.0, 0.0]), *WIDE, FREE, data, 500, *TOL)[0]
    lo = np.array([0.0, free_x[1] + 0.3, -10.0])
    hi = np.array([10.0, 10.0, free_x[2] - 0.1])
    x0 = np.clip(np.array([1.0, 1.0, 0.0]), lo, hi)
    x, cost, nfev, status, opt = SOLVE(x0, lo, hi, FREE, data, 500, *TOL)
    ref = scipy_optimum(x0, lo, hi, data)
    assert status > 0, STATUS[status]
    assert cost <= ref.cost * (1 + 1e-10)
    np.testing.assert_allclose(x, ref.x, rtol=1e-6, atol=1e-8)
    # both cuts bind, exactly
    assert x[1] == lo[1] and x[2] == hi[2]


def test_a_start_within_rounding_of_a_bound_does_not_stall():
    """A parameter a few ulps (or trf's 1e-10 margin) inside a bound that binds at the optimum
    is put on it: treated as inactive, every step towards the bound would be truncated to the
    margin, and the step and objective tests would stop the fit where it started."""
    data = problem(3)
    free_x = SOLVE(np.array([1.0, 1.0, 0.0]), *WIDE, FREE, data, 500, *TOL)[0]
    lo, hi = np.array([0.0, free_x[1] + 0.3, -10.0]), np.full(3, 10.0)
    best = SOLVE(np.array([1.0, 5.0, 0.0]), lo, hi, FREE, data, 500, *TOL)
    assert best[0][1] == lo[1]
    for margin in (4e-16, 1e-10 * max(1, abs(lo[1]))):
        x0 = np.array([1.0, lo[1] + margin, 0.0])
        x, cost, *_ = SOLVE(x0, lo, hi, FREE, data, 500, *TOL)
        assert cost == pytest.approx(best[1], rel=1e-10)
        # the start itself is put on the bound (seen with a budget of one evaluation)
        assert SOLVE(x0, lo, hi, FREE, data, 1, *TOL)[0][1] == lo[1]
    far = np.array([1.0, lo[1] + 10 * BOUND_RTOL * lo[1], 0.0])
    assert SOLVE(far, lo, hi, FREE, data, 1, *TOL)[0][1] == far[1]


def test_evaluation_budget_is_respected():
    data = problem(1)
    x0 = np.array([9.0, 9.0, 5.0])
    full = SOLVE(x0, *WIDE, FREE, data, 10_000, *TOL)
    assert full[3] > 0 and full[2] > 10
    for budget in (1, 2, 5, full[2] - 1):
        x, cost, nfev, status, opt = SOLVE(x0, *WIDE, FREE, data, budget, *TOL)
        assert nfev <= budget
        assert status == 0
    # every budget is respected (a rejected step at the last evaluation included), and the
    # cost never increases with the budget
    runs = [SOLVE(x0, *WIDE, FREE, data, b, *TOL) for b in range(1, full[2] + 3)]
    assert all(run[2] <= b for b, run in enumerate(runs, 1))
    assert np.all(np.diff([run[1] for run in runs]) <= 0)


@pytest.mark.parametrize("seed", range(4))
def test_the_step_test_stops_on_a_step_as_short_as_documented(seed):
    # gradient and objective tests off: the fit stops on the step test (status 3), after an
    # accepted step no longer than xtol (xtol + |θ|), θ the point the step started from
    data, xtol = problem(seed), 1e-4
    accepted = []

    def recording(x, data):
        r, J = _decay(x, data)
        if not accepted or r @ r < accepted[-1][1]:      # a strict decrease is accepted
            accepted.append((x.copy(), r @ r))
        return r, J

    x, cost, nfev, status, opt = python_lm(recording, "lm_step_test")(
        np.array([1.0, 1.0, 0.0]), *WIDE, FREE, data, 500, 0.0, xtol, 0.0)
    assert status == 3 and np.array_equal(accepted[-1][0], x)
    before = accepted[-2][0]
    assert np.linalg.norm(x - before) <= xtol * (xtol + np.linalg.norm(before))


def test_fixed_entries_stay_put():
    data = problem(2)
    free = np.array([1, 0, 1], dtype=np.int64)
    x0 = np.array([1.0, 0.7, 0.0])
    x, cost, nfev, status, opt = SOLVE(x0, *WIDE, free, data, 500, *TOL)
    assert x[1] == 0.7
    # with the rate fixed the model is linear in (a, c): ordinary least squares
    t, y = data
    X = np.stack([np.exp(-0.7 * t), np.ones_like(t)], axis=1)
    coef, ssr = np.linalg.lstsq(X, y, rcond=None)[:2]
    # the objective to rounding; the coefficients to what an objective test at ftol = 1e-12
    # determines (√ftol times their scale, here 2e-9 relative)
    assert cost == pytest.approx(0.5 * ssr[0], rel=1e-14)
    np.testing.assert_allclose(x[[0, 2]], coef, rtol=1e-8)
    none = SOLVE(x0, *WIDE, np.zeros(3, np.int64), data, 500, *TOL)
    assert none[3] == 5 and np.array_equal(none[0], x0)
    # a fixed entry is neither clipped to the box nor put on a bound it is within rounding of
    for rate in (WIDE[1][1] + 1.0, WIDE[0][1] + 0.5 * BOUND_RTOL * abs(WIDE[0][1])):
        x0 = np.array([1.0, rate, 0.0])
        x = SOLVE(x0, *WIDE, free, data, 500, *TOL)[0]
        assert x[1] == rate


def _squared_slope(x, data):
    """Residuals of y ≈ θ u + b with the slope θ = x₀² ≥ 0 (a ROOT entry), and the Jacobian."""
    u, y = data
    J = np.empty((u.shape[0], 2))
    J[:, 0] = 2.0 * x[0] * u
    J[:, 1] = 1.0
    return x[0] * x[0] * u + x[1] - y, J


SQUARED = compile_lm(numba.njit(_squared_slope), "test_squared_slope", cache=False)
ROOT_FREE = np.array([ROOT, 1], dtype=np.int64)
ROOT_BOX = (np.array([-10.0, -10.0]), np.array([10.0, 10.0]))


def squared_slope_data(slope, seed=0):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0, 1, 30)
    return u, 0.4 + slope * u + 0.05 * rng.standard_normal(30)


def test_a_root_entry_pulled_to_zero_is_held_there_as_on_a_bound():
    # the least-squares slope is negative: the optimum has θ = 0 and b = mean(y), where the
    # gradient test's cosine in x (the one in θ, scale-free) is large; without the hold the fit
    # took that for a stop away from a stationary point and restarted its scaling
    data = squared_slope_data(-1.0)
    u, y = data
    assert np.polyfit(u, y, 1)[0] < 0
    x0 = np.array([1.0, 0.0])
    x, cost, nfev, status, opt = SQUARED(x0, *ROOT_BOX, ROOT_FREE, data, 500, *TOL)
    assert x[0] ** 2 <= BOUND_RTOL and status in (1, 2, 3) and opt < 1e-8
    assert x[1] == pytest.approx(y.mean(), rel=1e-9)
    plain = SQUARED(x0, *ROOT_BOX, np.ones(2, np.int64), data, 500, *TOL)
    assert plain[1] == pytest.approx(cost, rel=1e-9) and plain[4] > 0.5 and nfev < plain[2]
    twin = python_lm(_squared_slope, "lm_squared_slope")(x0, *ROOT_BOX, ROOT_FREE, data, 500,
                                                          *TOL)
    np.testing.assert_array_equal(twin[0], x)
    assert twin[2:4] == (nfev, status)


def test_a_root_entry_near_zero_that_the_gradient_pushes_out_moves():
    # the slope is positive: from θ = 1e-12 (within BOUND_RTOL of 0) the gradient points away
    # from 0, so the entry is not held and the fit reaches least squares' slope
    data = squared_slope_data(2.0)
    slope, intercept = np.polyfit(*data, 1)
    x = SQUARED(np.array([1e-6, 0.0]), *ROOT_BOX, ROOT_FREE, data, 500, *TOL)[0]
    np.testing.assert_allclose([x[0] ** 2, x[1]], [slope, intercept], rtol=1e-9)


def test_exact_fit_and_non_finite_start():
    t = np.linspace(0, 4, 30)
    data = (t, 2 * np.exp(-0.5 * t) + 0.1)
    x, cost, nfev, status, opt = SOLVE(np.array([1.0, 1.0, 0.0]), *WIDE, FREE, data, 500, *TOL)
    np.testing.assert_allclose(x, [2, 0.5, 0.1], rtol=1e-9)
    assert cost < 1e-20
    bad = (t, np.full_like(t, np.nan))
    x, cost, nfev, status, opt = SOLVE(np.ones(3), *WIDE, FREE, bad, 500, *TOL)
    assert nfev == 1 and status == 0 and not np.isfinite(cost)


def test_names_key_the_cache_and_must_be_unique():
    with pytest.raises(ConfigurationError, match="already bound"):
        compile_lm(numba.njit(lambda x, d: (x, x)), "test_decay", cache=False)
    with pytest.raises(ConfigurationError, match="identifier"):
        compile_lm(decay_nb, "not a name", cache=False)


def test_secant_update_satisfies_the_secant_equation():
    """The Dennis–Gay–Welsch update makes the new S symmetric with S·dx = y# (after sizing),
    and leaves S alone without curvature along the step."""
    from restrictiveness.shared._lsq_nb import _secant_update

    rng = np.random.default_rng(0)
    for _ in range(20):
        p = rng.integers(2, 8)
        B = rng.standard_normal((p, p))
        S = B + B.T
        dx, ysharp = rng.standard_normal(p), rng.standard_normal(p)
        y = dx + 0.1 * rng.standard_normal(p)          # dxᵀy > 0
        if dx @ y <= 0:
            continue
        S1 = S.copy()
        _secant_update(S1, dx, y, ysharp)
        np.testing.assert_allclose(S1, S1.T, atol=1e-12)
        np.testing.assert_allclose(S1 @ dx, ysharp, rtol=1e-10, atol=1e-10)
        S2 = S.copy()
        _secant_update(S2, dx, -y, ysharp)              # dxᵀy < 0: skipped
        np.testing.assert_array_equal(S2, S)


def test_secant_update_skips_a_step_whose_curvature_underflows():
    """dxᵀy > 0 but (dxᵀy)² = 0 in floating point (a step of 1e-170 at the end of an exact
    fit): S is left alone rather than divided by zero (a ZeroDivisionError in numba)."""
    from restrictiveness.shared._lsq_nb import _secant_update

    dx = np.array([1e-100, 2e-100])
    y = np.array([1e-63, 1e-63])
    assert dx @ y > 0.0 and (dx @ y) ** 2 == 0.0
    S = np.array([[1.0, 0.5], [0.5, 2.0]])
    S1 = S.copy()
    with np.errstate(all="raise"):
        _secant_update(S1, dx, y, np.array([1.0, -1.0]))
    np.testing.assert_array_equal(S1, S)


@pytest.mark.parametrize("side", [-1, 1])
def test_a_step_that_reaches_a_new_bound_does_not_end_the_fit(side):
    """With ``‖θ‖ ≈ 1000`` the step test accepts steps up to xtol·‖θ‖ = 1e-7, far above the
    snapping margin of a rate near 1 (1e-9). A bound on the rate 2e-9 beyond the free optimum
    (a lower bound above it, ``side = 1``, or an upper bound below it, ``side = -1``) is reached
    by a step that short, cut by the bound: the fit must go on with the rate held, to the
    optimum on the bound, which is linear least squares in (a, c) at the bound's rate."""
    rng = np.random.default_rng(0)
    t = np.linspace(0, 4, 40)
    y = 1000 * np.exp(-0.7 * t) + 3 + 5 * rng.standard_normal(40)
    lo, hi = np.array([-1e4, -10.0, -1e4]), np.array([1e4, 10.0, 1e4])
    free_x = SOLVE(np.array([900.0, 1.0, 0.0]), lo, hi, FREE, (t, y), 500, *TOL)[0]
    bound = lo if side > 0 else hi
    bound[1] = free_x[1] + side * 2e-9
    X = np.stack([np.exp(-bound[1] * t), np.ones_like(t)], axis=1)
    a, c = np.linalg.lstsq(X, y, rcond=None)[0]
    for beyond in (1, 2, 5, 10):
        x0 = free_x.copy()
        x0[1] = bound[1] + side * beyond * 2e-9
        x, cost, nfev, status, opt = SOLVE(x0, lo, hi, FREE, (t, y), 500, 1e-10, 1e-10, 1e-12)
        assert x[1] == bound[1] and nfev > 2
        np.testing.assert_allclose(x[[0, 2]], [a, c], rtol=1e-8)


def test_a_zero_bound_has_an_absolute_margin():
    """The rounding margin is ``BOUND_RTOL·max(1, |b|)``: at a bound of 0 it is BOUND_RTOL, not
    zero, so a start a few 1e-10 above a lower bound of 0 (trf's margin) is put on it."""
    data = problem(5)
    lo, hi = np.array([0.0, 0.0, 0.0]), np.full(3, 10.0)
    for margin in (4e-16, 1e-10, 0.5 * BOUND_RTOL):
        x0 = np.array([1.0, 1.0, margin])
        assert SOLVE(x0, lo, hi, FREE, data, 1, *TOL)[0][2] == 0.0
    x0 = np.array([1.0, 1.0, 2 * BOUND_RTOL])
    assert SOLVE(x0, lo, hi, FREE, data, 1, *TOL)[0][2] == 2 * BOUND_RTOL


def test_secant_update_shrinks_s_by_the_nl2sol_factor():
    """Along a direction z orthogonal to y the rank-two correction vanishes, so
    zᵀS₊z = τ zᵀSz with τ = min(1, |dxᵀy#| / |dxᵀS dx|): 0.3 when y# = 0.3 S dx, 1 (no growth)
    when y# = 3 S dx."""
    from restrictiveness.shared._lsq_nb import _secant_update

    rng = np.random.default_rng(1)
    for _ in range(10):
        p = 5
        B = rng.standard_normal((p, p))
        S = B @ B.T + np.eye(p)                         # dxᵀS dx > 0
        dx = rng.standard_normal(p)
        y = dx + 0.1 * rng.standard_normal(p)
        z = scipy.linalg.null_space(y[None])[:, 0]      # zᵀy = 0
        for factor, tau in ((0.3, 0.3), (3.0, 1.0)):
            S1 = S.copy()
            _secant_update(S1, dx, y, factor * S @ dx)
            assert z @ S1 @ z == pytest.approx(tau * (z @ S @ z), rel=1e-10)


def test_cholesky_solve_equals_numpy_on_the_moving_set():
    """The in-place Cholesky solve of ``M[:k, :k] s = −g[idx]`` against numpy.linalg.solve, and
    False for a matrix that is not positive definite."""
    from restrictiveness.shared._lsq_nb import _cholesky_solve

    rng = np.random.default_rng(2)
    p = 6
    for k in range(1, p + 1):
        A = rng.standard_normal((k, k))
        Mk = A @ A.T + 0.1 * np.eye(k)
        idx = np.zeros(p, dtype=np.int64)
        idx[:k] = rng.permutation(p)[:k]
        g = rng.standard_normal(p)
        M = np.zeros((p, p))
        M[:k, :k] = Mk
        s = np.zeros(p)
        assert _cholesky_solve(M, g, idx, k, s)
        np.testing.assert_allclose(s[:k], np.linalg.solve(Mk, -g[idx[:k]]), rtol=1e-10)
    M = np.diag([1.0, -1.0, 1.0])
    assert not _cholesky_solve(M, np.ones(3), np.arange(3, dtype=np.int64), 3, np.zeros(3))


def test_large_residuals_converge_to_scipys_optimum():
    """Noisy data (large residuals), where Gauss–Newton converges slowly: the same optimum as
    scipy's converged trf."""
    for seed in (0, 1, 2, 4, 5):
        data = problem(seed, noise=1.0)
        x0 = np.array([1.0, 1.0, 0.0])
        x, cost, nfev, status, opt = SOLVE(x0, *WIDE, FREE, data, 500, *TOL)
        ref = scipy_optimum(x0, *WIDE, data)
        assert status > 0
        assert cost <= ref.cost * (1 + 1e-12)
        np.testing.assert_allclose(x, ref.x, rtol=1e-6, atol=1e-8)

"""AI-workflow procedures scored in a restrictiveness study beside the built-ins (offline, with
scripted clients that return fixed programs)."""

from __future__ import annotations

import numpy as np
import pytest
from scripted import Scripted, fenced

import restrictiveness as rx
from restrictiveness.ai.sandbox import SandboxLimits

LIMITS = SandboxLimits(wall_seconds=60)

GP_PROGRAM = """import numpy as np

def _k(A, B):
    r = np.sqrt(((A[:, None, :] - B[None, :, :]) ** 2).sum(axis=2))
    return 10.0 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)

def predict(X_train, y_train, X):
    alpha = np.linalg.solve(_k(X_train, X_train), y_train)
    return np.clip(_k(X, X_train) @ alpha, X[:, 1], X[:, 0])
"""

RDU_GRID_PROGRAM = """import numpy as np

def _ce(a, g, d, X):
    zh, zl, p = X[:, 0], X[:, 1], X[:, 2]
    w = d * p**g / (d * p**g + (1 - p)**g)
    return (w * zh**a + (1 - w) * zl**a) ** (1 / a)

def predict(X_train, y_train, X):
    # an RDU (CPT) fit by brute-force least squares on a grid: numpy only, as the paper allows
    best = None
    for a in np.linspace(0.1, 1.0, 10):
        for g in np.linspace(0.1, 1.0, 10):
            for d in np.exp(np.linspace(np.log(0.1), np.log(10.0), 15)):
                ssr = ((_ce(a, g, d, X_train) - y_train) ** 2).sum()
                if best is None or ssr < best[0]:
                    best = (ssr, a, g, d)
    return _ce(*best[1:], X)
"""


def _study(procs):
    return rx.lottery.study({"GP regression": rx.lottery.gp_regression(), **procs}, n=[20],
                            replications=2, seed=3, n_eval=100)


def test_completion_and_agent_returning_gp_match_builtin_gp(tmp_path):
    completion = rx.Completion(Scripted(fenced(GP_PROGRAM)), limits=LIMITS,
                               cache=rx.ResponseCache(tmp_path / "c"), label="Completion")
    agent = rx.Agent(Scripted(fenced("print(1 + 1)\n"), fenced(GP_PROGRAM, final=True)),
                     limits=LIMITS, label="Agent")
    res = _study({"Completion": completion, "Agent": agent}).run(progress=False)
    loss = res.dataset["loss"].sel(discrepancy="mse")
    for label in ("Completion", "Agent"):
        np.testing.assert_allclose(loss.sel(procedure=label), loss.sel(procedure="GP regression"),
                                   rtol=1e-6)
    assert int(res.dataset["failed"].sum()) == 0
    info = res.dataset["fit_info"].sel(procedure="Agent").values[0, 0]
    assert '"rounds_used": 1' in info


def test_rdu_program_fits_and_broken_programs_fall_back_to_ev(tmp_path):
    procs = {"RDU program": rx.Completion(Scripted(fenced(RDU_GRID_PROGRAM)),
                                                    limits=LIMITS),
             "syntax error": rx.Completion(Scripted(fenced("def predict(:\n")), limits=LIMITS),
             "no predict": rx.Completion(Scripted(fenced("x = 1\n")), limits=LIMITS)}
    with pytest.warns(rx.FailureWarning):
        res = _study(procs).run(progress=False)
    ds = res.dataset
    base = ds["baseline_loss"].sel(discrepancy="mse")
    for label in ("syntax error", "no predict"):
        np.testing.assert_array_equal(ds["loss"].sel(procedure=label, discrepancy="mse"), base)
        assert int(ds["failed"].sel(procedure=label).sum()) == 2
    r = res.restrictiveness.sel(discrepancy="mse", n=20)
    assert 0 < float(r.sel(procedure="RDU program")) < 0.9  # a CPT fit beats EV
    assert "SyntaxError" in str(ds["error"].sel(procedure="syntax error").values[0, 0])


def test_rerun_with_cache_issues_no_client_calls(tmp_path):
    client = Scripted(fenced(GP_PROGRAM))
    cache = rx.ResponseCache(tmp_path / "cache")
    first = _study({"C": rx.Completion(client, limits=LIMITS, cache=cache)}).run(progress=False)
    calls = client.calls
    assert calls == 2  # one per replication (one n)
    second = _study({"C": rx.Completion(client, limits=LIMITS, cache=cache)}).run(progress=False)
    assert client.calls == calls
    np.testing.assert_array_equal(first.dataset["loss"], second.dataset["loss"])


def test_language_model_procedures_use_one_draw_when_others_use_k():
    completion = rx.Completion(Scripted(fenced(GP_PROGRAM)), limits=LIMITS, label="Completion")
    study = rx.lottery.study({"GP regression": rx.lottery.gp_regression(),
                              "Completion": completion}, n=[20], replications=2, n_eval=100,
                             draws=3)
    # (how a study averages a procedure's fewer draws: test_study_values)
    assert study.procedure_draws("Completion") == 1
    assert study.procedure_draws("GP regression") == 3

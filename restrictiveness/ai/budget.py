"""What a study's language-model procedures would ask, counted before anything is spent.

:func:`plan_calls` builds the first request of every language-model fit the study would make
(the same messages the fits send), looks each up in the procedure's reply cache, and counts:

* ``fits`` — fits of the procedure (replications × sample sizes × its draws);
* ``cached`` — fits whose first request the cache already answers (a Completion then makes no
  call at all; an Agent's later requests depend on the replies, so only its first is known);
* ``calls_min``, ``calls_max`` — model requests the run would make: one per uncached
  Completion fit; between one and ``rounds + 1`` per uncached Agent fit (retries not counted);
* ``input_tokens`` — estimated tokens of the uncached first requests (:func:`estimate_tokens`);
  an Agent's later requests resend the growing conversation, so its total is larger;
* ``cost_min`` — with a price table, the input cost of those tokens (a lower bound: replies
  and later agent turns cost more).

Samples come from the study's own seeds. With a cache, every replication's samples are drawn
(the truth draws take a moment each); without one, the first replication's prompt sizes stand
for all (prompts differ between replications only in the digits of the data).

:func:`plan_calls` predicts; a :class:`~restrictiveness.ai.clients.CallBudget` given to a client
(``rx.llm.OpenAIChat(..., budget=rx.llm.CallBudget(max_requests=500))``) enforces a limit on
requests and tokens while the study runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..engine.study import Study, truth_rng
from ..engine.usage import price_per_token
from .clients import estimate_tokens
from .llm import ResponseCache

__all__ = ["plan_calls", "estimate_tokens"]

def _message_tokens(messages: Sequence[Mapping]) -> int:
    return sum(estimate_tokens(str(m.get("content") or "")) + 4 for m in messages)


def plan_calls(study: Study, prices: Mapping | None = None,
               replications: Sequence[int] | None = None) -> pd.DataFrame:
    """Calls and tokens the study's language-model procedures would spend (see module).

    Parameters
    ----------
    study : Study
    prices : mapping, optional
        Dollars per million tokens by model id (as ``Results.usage``); adds ``cost_min``.
    replications : sequence of int, optional
        Replications to plan (default: all of the study's).

    Returns
    -------
    DataFrame
        One row per language-model procedure (procedures with a ``first_request`` method).

    Examples
    --------
    >>> import restrictiveness as rx
    >>> llm = rx.llm.OpenAIChat("some-model", base_url="http://localhost:8000/v1")
    >>> study = rx.lottery.study({"Completion": rx.Completion(llm)}, n=[50], replications=3,
    ...                          n_eval=100)
    >>> plan_calls(study).loc["Completion", ["fits", "cached", "calls_min", "calls_max"]].tolist()
    [3, 0, 3, 3]
    """
    reps = list(range(study.replications)) if replications is None else list(replications)
    # Language-model procedures, found by duck typing (first_request, cache, identity,
    # max_calls, model): not part of the Procedure protocol, so typed as Any.
    llm: dict[str, Any] = {label: p for label, p in study.procedures.items()
                           if hasattr(p, "first_request")}
    caches = {label: ResponseCache(p.cache) for label, p in llm.items()
              if getattr(p, "cache", None) is not None}
    drawn = reps if caches else reps[:1]
    rows = {label: {"fits": 0, "cached": 0, "calls_min": 0, "calls_max": 0, "input_tokens": 0}
            for label in llm}
    for m in drawn:
        truth = study.evaluation.draw(study.n, truth_rng(study.seed, m),
                                      draws=1 if study.fit_on == "evaluation" else study.draws)
        weight = 1 if caches else len(reps)  # without a cache, replication 0 stands for all
        for n in study.n:
            for label, proc in llm.items():
                for k in range(study.procedure_draws(label)):
                    sample = truth.evaluation_sample(n) if study.fit_on == "evaluation" \
                        else truth.sample(n, k)
                    messages, request = proc.first_request(sample)
                    row = rows[label]
                    row["fits"] += weight
                    cache = caches.get(label)
                    if cache is not None and \
                            cache.get(proc.identity, messages, request) is not None:
                        row["cached"] += 1
                        if proc.max_calls > 1:  # an agent's later turns are not known
                            row["calls_max"] += proc.max_calls - 1
                        continue
                    row["calls_min"] += weight
                    row["calls_max"] += weight * proc.max_calls
                    row["input_tokens"] += weight * _message_tokens(messages)
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[
        "fits", "cached", "calls_min", "calls_max", "input_tokens"])
    frame.index.name = "procedure"
    if prices is not None:
        frame["cost_min"] = [row["input_tokens"] * price_per_token(prices, llm[label].model)[0]
                             for label, row in rows.items()]
    return frame

"""Benchmark: language-model procedures against a local endpoint — retries, cache, concurrency.

A scripted OpenAI-compatible server on 127.0.0.1 (``tests/llm_server.py``) answers every
request with a GP-regression program after ``--delay`` seconds. The script prints

1. retries: a call meeting 429 (Retry-After: 1), 500, a reply slower than the timeout, a
   dropped connection and 503 — requests made, retries counted, wall time;
2. concurrency: a lottery study of Completion fits (``--replications`` at n = 20) with
   ``concurrency=1`` and ``concurrency=--threads``: wall and CPU time (this process and its
   sandbox children), the speed-up, and whether the losses are identical;
3. cache: the same study rerun with a reply cache — HTTP requests of the first run and of the
   rerun, and whether the losses are identical.

Each Completion fit runs its returned program in the sandbox twice (at fit time and at the
evaluation points; ``--no-run-at-fit`` saves the first): that CPU work, not the model's
latency, bounds the speed-up on a small machine.

Run: ``python benchmarks/bench_llm_endpoints.py [--delay 0.5] [--replications 16]
[--threads 8] [--no-run-at-fit]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from llm_server import ChatServer  # noqa: E402
from test_ai_studies import GP_PROGRAM  # noqa: E402

import restrictiveness as rx  # noqa: E402
from restrictiveness.ai import programs  # noqa: E402
from restrictiveness.ai.sandbox import SandboxLimits  # noqa: E402

QUICK = {"backoff": 0.01, "backoff_max": 0.05}

#: CPU seconds of sandboxed programs that RUSAGE_CHILDREN does not see: bubblewrap's pid
#: namespace hides them, so they are taken from the sandbox's own measurement.
_hidden = [0.0]
_hidden_lock = threading.Lock()


def _counting(run):
    def run_python(*args, **kwargs):
        result = run(*args, **kwargs)
        if "via bwrap" in result.layers.get("namespaces", ""):
            with _hidden_lock:
                _hidden[0] += result.cpu_seconds
        return result
    return run_python


programs.run_python = _counting(programs.run_python)


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + _hidden[0]


def timed(study, **kwargs):
    wall, cpu = time.perf_counter(), cpu_seconds()
    res = study.run(progress=False, **kwargs)
    return res, time.perf_counter() - wall, cpu_seconds() - cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=0.5)
    ap.add_argument("--replications", type=int, default=16)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--no-run-at-fit", action="store_true")
    args = ap.parse_args()
    reply = f"FINAL PROGRAM\n```python\n{GP_PROGRAM}```"

    script = [("status", 429, {"Retry-After": "1"}), ("status", 500), ("slow", 2.0), ("drop",),
              ("status", 503)]
    with ChatServer("openai", lambda body: reply, script=script) as server:
        llm = rx.llm.OpenAIChat("gp-model", base_url=server.base_url, timeout=0.5, **QUICK)
        start = time.perf_counter()
        out = llm.chat([{"role": "user", "content": "hi"}])
        print(f"retries: {len(server.requests)} requests, {out.retries} retries counted, "
              f"{time.perf_counter() - start:.2f} s (Retry-After 1 s + timeout 0.5 s)")

    limits = SandboxLimits(wall_seconds=60)
    with ChatServer("openai", lambda body: reply, delay=args.delay) as server, \
            tempfile.TemporaryDirectory() as tmp:
        llm = rx.llm.OpenAIChat("gp-model", base_url=server.base_url, **QUICK)

        def study(cache=None):
            proc = rx.Completion(llm, limits=limits, cache=cache,
                                 run_at_fit=not args.no_run_at_fit)
            return rx.lottery.study({"Completion": proc}, n=[20], n_eval=100, seed=3,
                                    replications=args.replications)

        study().run(progress=False, replications=[0])  # warm-up: imports, compilation
        serial, w1, c1 = timed(study(), concurrency=1)
        threaded, wt, ct = timed(study(), concurrency=args.threads)
        same = np.array_equal(serial.dataset["loss"], threaded.dataset["loss"])
        print(f"concurrency: {args.replications} fits, reply delay {args.delay} s, run_at_fit="
              f"{not args.no_run_at_fit}: concurrency=1 {w1:.2f} s wall ({c1:.2f} s CPU), "
              f"concurrency={args.threads} {wt:.2f} s wall ({ct:.2f} s CPU), speed-up "
              f"{w1 / wt:.1f}x, identical losses: {same}")
        before = len(server.requests)
        first, w_first, _ = timed(study(Path(tmp) / "cache"), concurrency=args.threads)
        middle = len(server.requests)
        again, w_again, _ = timed(study(Path(tmp) / "cache"), concurrency=args.threads)
        print(f"cache: first run {middle - before} requests ({w_first:.2f} s), rerun "
              f"{len(server.requests) - middle} requests ({w_again:.2f} s), identical losses: "
              f"{np.array_equal(first.dataset['loss'], again.dataset['loss'])}")


if __name__ == "__main__":
    main()

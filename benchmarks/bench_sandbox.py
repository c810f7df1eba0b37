"""Sandbox start-up: the time to run a trivial program, a numpy program and a scipy program,
before (the sandbox at a git ref, default ``main``) and after (this checkout), side by side.

"After" is measured under each isolation the machine offers: full isolation with the built-in
namespace backend, full isolation with bubblewrap (when ``bwrap`` is on PATH) and guard-only.
Each figure is the median of ``--repeat`` runs (after one warm-up): wall seconds of
``run_python`` in the parent, and the CPU seconds the parent's process tree used for it.

Run: ``python benchmarks/bench_sandbox.py [--before main] [--repeat 15]`` from the repository
root (the "before" code is checked out into a temporary git worktree).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

PROGRAMS = {
    "x = 1": "x = 1\n",
    "numpy": "import numpy as np\nA = np.random.default_rng(0).normal(size=(200, 200))\n"
             "x = np.linalg.solve(A @ A.T + np.eye(200), np.ones(200))\n",
    "scipy": "import numpy as np\nfrom scipy.optimize import minimize\n"
             "x = minimize(lambda b: ((b - 3.0) ** 2).sum(), np.zeros(2)).x\n",
}


def _cpu() -> float:
    self_, kids = resource.getrusage(resource.RUSAGE_SELF), \
        resource.getrusage(resource.RUSAGE_CHILDREN)
    return self_.ru_utime + self_.ru_stime + kids.ru_utime + kids.ru_stime


def measure(repeat: int, isolation: str | None) -> dict:
    """Median wall and CPU seconds per program with the importable ``restrictiveness``."""
    from restrictiveness.ai import sandbox

    kwargs = {"wall_seconds": 120}
    if isolation is not None:
        kwargs["isolation"] = isolation
    limits = sandbox.SandboxLimits(**kwargs)
    out = {}
    for name, source in PROGRAMS.items():
        allowed = set(sandbox.DEFAULT_ALLOWED_MODULES) | {"scipy"}
        walls, cpus = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(repeat + 1):
                c0, t0 = _cpu(), time.perf_counter()
                r = sandbox.run_python(source, limits=limits, allowed_modules=allowed)
                wall, cpu = time.perf_counter() - t0, _cpu() - c0
                if not r.ok:
                    raise RuntimeError(f"{name}: {r.reason}: {r.message}")
                if "via bwrap" in str(getattr(r, "layers", {}).get("namespaces", "")):
                    # bubblewrap's pid namespace hides the program from this process's
                    # RUSAGE_CHILDREN: add the CPU time its relay measured
                    cpu += r.cpu_seconds
                if i:  # the first run warms the file cache
                    walls.append(wall)
                    cpus.append(cpu)
        out[name] = (statistics.median(walls), statistics.median(cpus))
    return out


def _run_measure(pythonpath: str, repeat: int, isolation: str | None,
                 backend: str | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    if backend:
        env["RX_SANDBOX_BACKEND"] = backend
    cmd = [sys.executable, __file__, "--measure", "--repeat", str(repeat)]
    if isolation:
        cmd += ["--isolation", isolation]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git ref of the 'before' sandbox")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--isolation", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.repeat, args.isolation)))
        return
    repo = Path(__file__).resolve().parent.parent
    columns = {}
    with tempfile.TemporaryDirectory(prefix="rx-bench-") as tmp:
        before = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", "-q",
                        str(before), args.before], check=True)
        try:
            columns[f"before ({args.before})"] = _run_measure(str(before), args.repeat, None)
        finally:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force",
                            str(before)], check=True)
    columns["after: full, built-in"] = _run_measure(str(repo), args.repeat, "full", "builtin")
    if shutil.which("bwrap"):
        columns["after: full, bwrap"] = _run_measure(str(repo), args.repeat, "full", "bwrap")
    columns["after: guard-only"] = _run_measure(str(repo), args.repeat, "guard-only")
    print(f"sandbox start-up, median of {args.repeat} runs: wall s (CPU s of the process tree)")
    print(f"{'program':>8} | " + " | ".join(f"{c:>22}" for c in columns))
    for name in PROGRAMS:
        cells = [f"{columns[c][name][0]:8.3f} ({columns[c][name][1]:6.3f})" for c in columns]
        print(f"{name:>8} | " + " | ".join(f"{cell:>22}" for cell in cells))


if __name__ == "__main__":
    main()

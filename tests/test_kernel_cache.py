"""numba's disk cache must not serve a kernel compiled against an older version of a kernel it
calls from another module (restrictiveness.shared._jit)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import restrictiveness
from restrictiveness.shared._jit import kernel_digest

PACKAGE = Path(restrictiveness.__file__).parent
JIT = PACKAGE / "shared" / "_jit.py"


def _package(root: Path, user_decorator: str) -> None:
    """A package whose ``user.twice`` calls the jitted ``dep.value`` of another module."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "dep.py").write_text(textwrap.dedent("""
        import numba

        @numba.njit(cache=True)
        def value():
            return 1.0
    """))
    (pkg / "user.py").write_text(textwrap.dedent(f"""
        import importlib.util
        import numba
        from pkg.dep import value

        # the module alone (it needs only numba): importing the whole package takes seconds
        spec = importlib.util.spec_from_file_location("jit", {str(JIT)!r})
        jit = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(jit)
        cached_njit = jit.cached_njit

        @{user_decorator}
        def twice():
            return 2.0 * value()
    """))


def _twice(root: Path) -> float:
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("NUMBA_CACHE_DIR", None)  # the cache beside the sources, as in an editable install
    out = subprocess.run([sys.executable, "-c", "from pkg.user import twice; print(twice())"],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    return float(out.stdout)


def _edit_dependency(root: Path) -> None:
    dep = root / "pkg" / "dep.py"
    dep.write_text(dep.read_text().replace("return 1.0", "return 3.0"))
    stamp = dep.stat().st_mtime + 10  # a new time stamp even on a coarse file system
    os.utime(dep, (stamp, stamp))


@pytest.mark.parametrize(("decorator", "after_edit"), [
    ("cached_njit()", 6.0),
    # numba's own cache keeps the old machine code of the callee: the hazard itself, so that
    # this test shows it can tell a stale kernel from a fresh one
    ("numba.njit(cache=True)", 2.0),
])
def test_editing_a_called_kernel_recompiles_its_callers(tmp_path, decorator, after_edit):
    _package(tmp_path, decorator)
    assert _twice(tmp_path) == 2.0
    assert _twice(tmp_path) == 2.0  # now from the disk cache
    _edit_dependency(tmp_path)
    assert _twice(tmp_path) == after_edit


def test_the_digest_follows_the_modules_that_use_numba(tmp_path):
    _package(tmp_path, "cached_njit()")
    root = tmp_path / "pkg"
    before = kernel_digest(root)
    (root / "notes.py").write_text("x = 1\n")  # a module without numba does not count
    kernel_digest.cache_clear()
    assert kernel_digest(root) == before
    _edit_dependency(tmp_path)
    kernel_digest.cache_clear()
    assert kernel_digest(root) != before


def test_every_cached_kernel_of_the_package_is_keyed_on_the_kernel_sources():
    # a kernel cached by numba.njit(cache=True) directly would be served stale after an edit of
    # a kernel it calls from another module
    direct = re.compile(r"njit\([^)]*cache\s*=\s*True")
    offenders = [f"{path.relative_to(PACKAGE)}:{number}"
                 for path in sorted(PACKAGE.rglob("*.py")) if path.name != "_jit.py"
                 for number, line in enumerate(path.read_text().splitlines(), 1)
                 if direct.search(line)]
    assert offenders == []
    from restrictiveness.demand._shares_nb import shares_nb
    from restrictiveness.lottery._rdu_nb import fit_rdu
    digest = kernel_digest(PACKAGE)
    assert shares_nb.py_func.__qualname__ == f"shares_nb_{digest}"
    assert fit_rdu.py_func.__qualname__ == f"_fit_impl_{digest}"


def test_the_digest_follows_kernel_modules_in_subpackages_and_any_use_of_numba(tmp_path):
    """The package's kernels live in subpackages (shared/_lsq_nb.py), and a kernel may call a
    numba function made otherwise than with njit (a vectorize ufunc): an edit of either must
    change the digest, or its callers are served stale."""
    _package(tmp_path, "cached_njit()")
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir()
    (sub / "__init__.py").write_text("")
    (sub / "kernel.py").write_text("import numba\n\n\n@numba.njit(cache=True)\n"
                                   "def k():\n    return 1.0\n")
    (sub / "ufunc.py").write_text("import numba\n\n\n@numba.vectorize\n"
                                  "def u(x):\n    return x\n")
    for edited in (sub / "kernel.py", sub / "ufunc.py"):
        kernel_digest.cache_clear()
        before = kernel_digest(tmp_path / "pkg")
        edited.write_text(edited.read_text().replace("return", "return 2 *"))
        kernel_digest.cache_clear()
        assert kernel_digest(tmp_path / "pkg") != before, edited.name


# Demand truth (with price perturbations) and the three structural fits on its shares, written
# to an .npz; with "preload", the kernels that others call are first run from Python, so that
# numba has their own compiled copies loaded when a caller's code is linked to them.
_DEMAND_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import restrictiveness as rx
    from restrictiveness.demand import MARKET_COLUMNS
    from restrictiveness.demand.prior import DemandPrior
    from restrictiveness.engine.study import truth_rng
    from restrictiveness.shared.sample import Sample

    if sys.argv[2] == "preload":
        from restrictiveness.demand import _logit_nb, _shares_nb
        rng = np.random.default_rng(0)
        D, J, H, Kr = 64, 24, 8, 4
        P = rng.normal(size=(4, 9, D))
        x = np.polynomial.legendre.leggauss(8)[0]
        _shares_nb._node_rows(P, 0.4, 0.4, 0.7, 1, x, np.zeros((8, D)), np.zeros((8, D)),
                              np.zeros(8), 0, np.empty((4, D)), np.empty(D), np.empty(D))
        _shares_nb._row(P, 0, 1, 0.3, 0.7, 1, np.zeros((2, D)), np.zeros((2, D)), 1,
                        np.empty(D))
        _shares_nb._subtract_integral(rng.normal(size=(4, H)), rng.normal(size=(4, H)), 0, 4,
                                      np.zeros(4), np.ones(4), np.zeros(2 * H))
        z = rng.normal(size=(H, Kr))
        lrow, lcol = np.tril_indices(Kr)
        _logit_nb.mxl_jacobian(rng.normal(size=(2, J)), rng.normal(size=(2, J, Kr)),
                               np.arange(Kr), 0.3 * z, z, lrow, lcol)
        _logit_nb.mxl_shares(rng.normal(size=(2, J)), rng.normal(size=(2, J, Kr)),
                             np.arange(Kr), 0.3 * z)
        args = _logit_nb._jacobian_args(rng.normal(size=(2, J)), rng.normal(size=(2, J, Kr)),
                                        np.arange(Kr), 0.3 * z, z, lrow, lcol, None)
        _logit_nb.shares_jacobian_second_nb(*args, np.full((2, J), 0.01))
    prior = DemandPrior(n_train=30, n_eval=2)
    truth = prior.draw([30], truth_rng(0, 0))
    out = {"train": truth.train_y(30), "eval": truth.eval_y(30),
           "perturbed": truth.system.perturbed_shares(truth.eval_X, np.full((2, 24), 0.01))[2]}
    sample = Sample(truth.train_locations[0], out["train"], MARKET_COLUMNS, "shares")
    for name, model in {"MNL": rx.demand.MNL(), "NL": rx.demand.NestedLogit(),
                        "MXL": rx.demand.MixedLogit()}.items():
        out[name] = np.asarray(model.fit(sample, None).params, dtype=float)
    np.savez(sys.argv[1], **out)
""")


def test_fresh_and_cached_kernels_give_the_same_demand_truth_and_fits(tmp_path):
    """numba links a copy of every kernel a kernel calls into the caller's code, and at run time
    a call goes to whichever copy was loaded first: the callee's own (always, when the caller is
    compiled in this process) or the caller's (when it is loaded from the disk cache). With
    fast-math contraction the copies can round differently: the demand truth's field rows did,
    by one ulp, and the mixed-logit fits amplified it, so a first run on a new machine printed
    other r̂ than every later run of the same command (MXL 0.190 against 0.189 at M = 2). That
    helper (_node_rows) is now inlined into the truth's kernel; its other helpers and the fits'
    kernels are checked here."""
    script = tmp_path / "demand.py"
    script.write_text(_DEMAND_SCRIPT)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), OPENBLAS_NUM_THREADS="1")
    runs = {}
    for run in ("fresh", "cached", "preload"):  # compiled here, then loaded from the cache
        subprocess.run([sys.executable, str(script), str(tmp_path / f"{run}.npz"), run],
                       env=env, check=True, timeout=600, capture_output=True)
        runs[run] = dict(np.load(tmp_path / f"{run}.npz"))
    for run in ("cached", "preload"):
        for key, value in runs["fresh"].items():
            np.testing.assert_array_equal(runs[run][key], value, err_msg=f"{run}: {key}")


def _kernels_called_by_kernels() -> set[tuple[str, str]]:
    """``(caller, callee)`` pairs of the package's jitted functions where the callee is compiled
    with fast-math flags and not inlined by numba (a second, separately optimised copy of it
    lives in the caller's code)."""
    import ast

    decorated: dict[str, dict[str, ast.FunctionDef]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        decorated[path.stem] = {
            node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)
            and any(isinstance(d, ast.Call) and getattr(d.func, "id", "") == "cached_njit"
                    for d in node.decorator_list)}

    def options(node: ast.FunctionDef) -> dict[str, ast.expr]:
        return {k.arg: k.value for d in node.decorator_list if isinstance(d, ast.Call)
                for k in d.keywords if k.arg}

    hazardous = set()
    for kernels in decorated.values():
        for name, node in kernels.items():
            opts = options(node)
            fast = "fastmath" in opts and not (isinstance(opts["fastmath"], ast.Constant)
                                               and opts["fastmath"].value is False)
            inlined = isinstance(opts.get("inline"), ast.Constant) and \
                opts["inline"].value == "always"
            if fast and not inlined:
                hazardous.add(name)
    pairs = set()
    for kernels in decorated.values():
        for name, node in kernels.items():
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                        and call.func.id in hazardous:
                    pairs.add((name, call.func.id))
    return pairs


def test_fast_math_kernels_called_by_kernels_are_the_ones_checked_for_equal_rounding():
    """A new kernel calling a fast-math kernel without inlining it must be added to the check
    above (and here), or inlined: its copy of the callee may round otherwise. (The truth's
    field-row helper _node_rows did, and is inlined.)"""
    assert _kernels_called_by_kernels() == {
        ("shares_nb", "_row"),
        ("shares_nb", "_subtract_integral"),
        ("_market_shares", "_market_probabilities"),
        ("_market_jacobian", "_market_probabilities"),   # inlined into the two kernels below
        ("mean_probabilities_nb", "_market_shares"),
        ("node_probabilities_nb", "_market_shares"),
        ("_market_jacobian", "_dot_nt"),
        ("mxl_resjac", "shares_jacobian_nb"),
        ("mxl_resjac_second", "shares_jacobian_second_nb"),
    }

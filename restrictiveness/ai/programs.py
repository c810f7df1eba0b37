"""Program procedures: a Python program, run in the sandbox, as a prediction procedure (SPEC §8).

A *program* is Python source text (typically returned by a language model) that defines its
prediction rule in one of two interfaces:

``interface="predict"`` (the default, and the one the LLM prompts ask for)::

    import numpy as np

    def predict(X_train, y_train, X):
        # X_train: (n, d) training covariates, y_train: (n,) labels, X: (m, d) query points
        beta, *_ = np.linalg.lstsq(np.c_[np.ones(len(X_train)), X_train], y_train, rcond=None)
        return np.c_[np.ones(len(X)), X] @ beta

``interface="fit_predict"``::

    def fit(X_train, y_train):
        return {"mean": float(y_train.mean())}      # any Python object: it stays in the child

    def predict(state, X):
        return [state["mean"]] * len(X)

or, with the program keeping its fitted state itself (``fit(X, y)`` then ``predict(X)``)::

    def fit(X_train, y_train):
        global MEAN
        MEAN = float(y_train.mean())

    def predict(X):
        return [MEAN] * len(X)

(a ``predict`` that cannot take two arguments is called as ``predict(X)``).

Arrays keep their shapes: covariates have observations along the first axis and named columns
along the last (``(n, d)`` for lotteries, ``(markets, J, 3)`` for demand); predictions must have
shape ``(m,) + y_train.shape[1:]`` (an ``(m, 1)`` column is accepted for ``(m,)``).

Every call of :meth:`Fitted.predict` starts a fresh sandboxed interpreter that runs the whole
program (training included) on the training sample and the requested points, as the paper runs
returned programs; results are cached per query array. A sandbox failure — timeout, CPU,
memory, refused operation, exception, missing function, unusable output — raises a
:class:`ProgramError` whose message starts with the reason, so the study runner records a
failure and uses the baseline (SPEC §6).
"""

from __future__ import annotations

import ast
import hashlib
import re
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np

from ..engine.protocol import Fitted, Procedure
from ..shared import pyast
from ..shared.checks import flag
from ..shared.exceptions import ConfigurationError, RestrictivenessError
from ..shared.sample import Sample
from .sandbox import SandboxLimits, SandboxResult, run_python
from .sandbox.limits import file_contents, module_names

__all__ = ["ProgramProcedure", "ProgramRule", "ProgramError", "describe_program",
           "INTERFACES", "run_limits"]

INTERFACES = ("predict", "fit_predict")

_DRIVERS = {
    "predict": """
f = program.get("predict")
if not callable(f):
    fail("crash", "the program defines no function predict(X_train, y_train, X)")
save("pred", f(inputs["X_train"], inputs["y_train"], inputs["X"]))
""",
    "fit_predict": """
fit, predict = program.get("fit"), program.get("predict")
if not callable(fit):
    fail("crash", "the program defines no function fit(X_train, y_train)")
if not callable(predict):
    fail("crash", "the program defines no function predict(state, X) or predict(X)")
try:  # predict(X) only: the program keeps its fitted state itself (scikit-learn's fit, predict)
    import inspect
    inspect.signature(predict).bind(None, None)
    keeps_state = False
except TypeError:
    keeps_state = True
except ValueError:  # no signature to read: the documented predict(state, X)
    keeps_state = False
state = fit(inputs["X_train"], inputs["y_train"])
save("pred", predict(inputs["X"]) if keeps_state else predict(state, inputs["X"]))
""",
}


def run_limits(timeout: float | None, limits: SandboxLimits | None, default: float = 600.0,
               names: tuple[str, str] = ("timeout", "limits")) -> SandboxLimits:
    """The limits of a program's runs from a wall clock in seconds or full limits.

    Both together were resolved by ignoring ``timeout`` (``timeout=60`` beside
    ``limits=SandboxLimits(memory_bytes=...)`` ran with 600 s): a timeout that differs from
    ``limits.wall_seconds`` is refused.

    Parameters
    ----------
    timeout : float or None
        Wall-clock seconds per run (None: ``default``, or those of ``limits``).
    limits : SandboxLimits or None
        Full limits of each run.
    default : float
        Seconds when neither is given.
    names : tuple of str
        The two arguments' names, for the message.

    Returns
    -------
    SandboxLimits

    Raises
    ------
    ConfigurationError
        Limits that are not a ``SandboxLimits``, or a timeout that contradicts them.

    Examples
    --------
    >>> run_limits(60, None).wall_seconds
    60
    >>> run_limits(None, SandboxLimits(wall_seconds=30)).wall_seconds
    30
    >>> run_limits(60, SandboxLimits(wall_seconds=30))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.shared.exceptions.ConfigurationError: timeout=60 contradicts ...
    """
    if limits is None:
        return SandboxLimits(wall_seconds=default if timeout is None else timeout)
    if not isinstance(limits, SandboxLimits):
        raise ConfigurationError(f"{names[1]} must be a SandboxLimits, got {limits!r}")
    if timeout is not None and timeout != limits.wall_seconds:
        raise ConfigurationError(f"{names[0]}={timeout!r} contradicts {names[1]}, whose "
                                 f"wall_seconds is {limits.wall_seconds!r}; give the wall clock "
                                 f"in SandboxLimits(wall_seconds=...) and leave {names[0]} unset")
    return limits


class ProgramError(RestrictivenessError, RuntimeError):
    """A program run in the sandbox failed; the message starts with the reason.

    The reason is one of :data:`restrictiveness.ai.sandbox.REASONS` ("timeout", "cpu",
    "memory", "forbidden", "crash", "invalid-output", "output-limit"), or "client" when a
    language-model procedure could not obtain a program (the model call failed). In a study the
    failure is recorded and the baseline's predictions are used; to debug, run the program with
    :func:`restrictiveness.ai.sandbox.run_python` and read ``stdout``/``stderr``.

    Parameters
    ----------
    reason : str
        The failure reason.
    message : str
        What happened (the exception, the refused operation, the limit hit).

    Attributes
    ----------
    reason : str
        The failure reason.

    Examples
    --------
    Predicting with the rule of a language model whose reply held no code:

    >>> import numpy as np
    >>> from restrictiveness import Completion, Sample
    >>> s = Sample(np.zeros((2, 1)), np.array([1.0, 3.0]), ("x",))
    >>> rule = Completion(lambda messages: "I cannot help.", model="fake").fit(
    ...     s, np.random.default_rng(0))
    >>> rule.predict(s.X)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    restrictiveness.ai.programs.ProgramError: invalid-output: the response contains no Python ...
    >>> ProgramError("timeout", "ran longer than 600 s").reason
    'timeout'
    """

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(f"{reason}: {message}")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _key(X: np.ndarray) -> str:
    h = hashlib.sha256(repr((X.shape, X.dtype.str)).encode())
    h.update(np.ascontiguousarray(X).tobytes())
    return h.hexdigest()


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(: .*)?$")


def _exception_first(message: str) -> str:
    """A traceback led by its exception line (``RuntimeError: too many``): failure reports and
    summaries shorten messages to their start, which showed ``Traceback (most recent call
    last): File ...`` and cut off what the program raised."""
    if "Traceback (most recent call last):" not in message and '  File "' not in message:
        return message  # not a traceback (a long one is kept by its end)
    lines = [line for line in message.splitlines() if _EXCEPTION_LINE.match(line)]
    named = [line for line in lines if ": " in line] or lines
    return f"{named[-1]}\n{message}" if named and not message.startswith(named[-1]) \
        else message


class ProgramRule(Fitted):
    """The fitted rule of a :class:`ProgramProcedure`: the program plus its training sample.

    ``predict(X)`` runs the program in the sandbox on the training sample and ``X`` (cached
    per ``X``). ``info`` records the source, its sha256, the interface, the outcome
    (``reason`` is None on success), run count and seconds, the sandbox's isolation level
    (``"full"`` or ``"guard-only"``) and the kernel layers that held, and the static
    description of :func:`describe_program`.
    """

    def __init__(self, procedure: ProgramProcedure, sample: Sample, seed: int,
                 info: Mapping | None = None) -> None:
        self.procedure, self.seed = procedure, int(seed)
        self.X_train = np.asarray(sample.X, dtype=float)
        self.y_train = np.asarray(sample.y, dtype=float)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.error: ProgramError | None = None
        self.info = {"program": procedure.source, "sha256": _sha256(procedure.source),
                     "interface": procedure.interface, "reason": None, "message": "",
                     "runs": 0, "seconds": 0.0, "isolation": procedure.limits.isolation,
                     **describe_program(procedure.source),
                     **dict(info or {})}

    def _fail(self, reason: str, message: str) -> ProgramError:
        message = _exception_first(message)
        self.error = ProgramError(reason, message)
        self.info["reason"], self.info["message"] = reason, message[:2000]
        return self.error

    def _check(self, result: SandboxResult, m: int) -> np.ndarray:
        if not result.ok:
            raise self._fail(result.reason or "crash", result.message)
        if "pred" not in result.outputs:
            raise self._fail("invalid-output", "the program produced no predictions")
        pred = np.asarray(result.outputs["pred"])
        if pred.dtype.kind == "c":
            raise self._fail("invalid-output", "predictions are complex numbers")
        if pred.dtype.kind == "b":  # a comparison returned in place of values, read as 0/1
            raise self._fail("invalid-output", "predictions are booleans (True/False), not "
                                               "numbers")
        pred = pred.astype(float)
        shape = (m,) + self.y_train.shape[1:]
        if pred.shape != shape:
            if pred.size == int(np.prod(shape)) and pred.ndim >= 1 and pred.shape[0] == m:
                pred = pred.reshape(shape)
            else:
                raise self._fail("invalid-output", f"predictions have shape {pred.shape}, "
                                                   f"expected {shape}")
        finite = np.isfinite(pred)
        if not finite.any() or (not self.procedure.allow_nonfinite and not finite.all()):
            raise self._fail("invalid-output", f"{int((~finite).sum())} of {pred.size} "
                                               "predictions are NaN or infinite")
        return pred

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Run the program on the training sample and ``X``; raises :class:`ProgramError`."""
        if self.error is not None:
            raise self.error
        X = np.asarray(X, dtype=float)
        key = _key(X)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key].copy()
        proc = self.procedure
        start = time.perf_counter()
        result = run_python(proc.source, driver=_DRIVERS[proc.interface],
                            inputs={"X_train": self.X_train, "y_train": self.y_train, "X": X},
                            limits=proc.limits, allowed_modules=proc.allowed_modules,
                            run_name="program", seed=self.seed, files=proc.files)
        self.info["runs"] += 1
        self.info["seconds"] += time.perf_counter() - start
        if result.layers:
            self.info["layers"] = sorted(result.layers)
        pred = self._check(result, X.shape[0])
        self._cache[key] = pred
        while len(self._cache) > 16:
            self._cache.popitem(last=False)
        return pred.copy()


class ProgramProcedure(Procedure):
    """A Python program, run in the sandbox, as a procedure.

    Parameters
    ----------
    source : str
        The program (see the module docstring for the two interfaces).
    interface : {"predict", "fit_predict"}
        ``predict(X_train, y_train, X)``, or ``fit(X_train, y_train) -> state`` with
        ``predict(state, X)`` (or ``fit(X_train, y_train)`` then ``predict(X)``, the program
        keeping its state).
    timeout : float, optional
        Wall-clock seconds per run (default 600, as the paper allows).
    limits : SandboxLimits, optional
        Full resource limits of each run (its ``wall_seconds`` is the wall clock; a different
        ``timeout`` beside it is refused).
    allowed_modules : iterable of str, optional
        Modules the program may import (default: numpy, math and harmless standard library,
        as the paper).
    label : str
        Name in results.
    run_at_fit : bool
        Run the program once at fit time (predicting the training points), so a failing
        program is detected and described in ``info`` when the study records the fit.
    allow_nonfinite : bool
        Let NaN/inf predictions through to the study's failure protocol, which replaces those
        rows by the baseline's (as the paper); an output with no finite value at all is still
        an "invalid-output" failure. With False any non-finite value fails the fit.
    files : mapping of str to bytes, optional
        Files placed in the program's working directory (e.g. estimates an agent saved).

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness import Sample
    >>> src = "def predict(X_train, y_train, X):\\n    return [y_train.mean()] * len(X)\\n"
    >>> s = Sample(np.zeros((3, 1)), np.array([1.0, 2.0, 3.0]), ("x",))
    >>> rule = ProgramProcedure(src, timeout=60).fit(s, np.random.default_rng(0))
    >>> rule.predict(np.zeros((2, 1)))
    array([2., 2.])
    """

    label = "program"

    def __init__(self, source: str, interface: Literal["predict", "fit_predict"] = "predict",
                 *, timeout: float | None = None, limits: SandboxLimits | None = None,
                 allowed_modules: Iterable[str] | None = None, label: str | None = None,
                 run_at_fit: bool = True, allow_nonfinite: bool = True,
                 files: Mapping[str, bytes] | None = None) -> None:
        if not isinstance(source, str):
            raise ConfigurationError("source must be a string of Python code")
        if interface not in INTERFACES:
            raise ConfigurationError(f"interface must be one of {INTERFACES}, got {interface!r}")
        self.source, self.interface = source, interface
        self.limits = run_limits(timeout, limits)
        self.allowed_modules = None if allowed_modules is None else \
            module_names(allowed_modules)
        self.run_at_fit = flag(run_at_fit, "run_at_fit")  # "no" was True
        self.allow_nonfinite = flag(allow_nonfinite, "allow_nonfinite")
        self.files = file_contents(files) or None  # refused here, not in every fit
        if label is not None:
            self.label = label

    def fit(self, sample: Sample, rng: np.random.Generator, info: Mapping | None = None
            ) -> ProgramRule:
        """A :class:`ProgramRule` on ``sample``; failures surface when it predicts.

        With ``run_at_fit`` the program is run once now; a failure is recorded in ``info`` and
        re-raised by every ``predict`` call, so studies keep the program and the reason.

        Parameters
        ----------
        sample : Sample
            The training sample the program is run on.
        rng : Generator
            Draws the seed of the program's runs.
        info : mapping, optional
            Entries added to the rule's ``info`` (e.g. the model calls that produced the
            program).

        Returns
        -------
        ProgramRule

        Examples
        --------
        >>> import numpy as np
        >>> from restrictiveness import Sample
        >>> src = "def predict(X_train, y_train, X):\\n    return [y_train.mean()] * len(X)\\n"
        >>> s = Sample(np.zeros((3, 1)), np.array([1.0, 2.0, 3.0]), ("x",))
        >>> proc = ProgramProcedure(src, run_at_fit=False)
        >>> rule = proc.fit(s, np.random.default_rng(0), info={"model": "hand-written"})
        >>> rule.info["runs"], rule.info["model"], rule.info["reason"] is None
        (0, 'hand-written', True)
        """
        rule = ProgramRule(self, sample, int(rng.integers(2**31 - 1)), info)
        if self.run_at_fit:
            try:
                rule.predict(sample.X)
            except ProgramError:
                pass  # recorded in rule.info; predict raises it again
        return rule


# -------------------------------------------------------------------------------------------
# Static description of a program: classification hooks (SPEC §8; paper S.1.3, App. D).
# -------------------------------------------------------------------------------------------

# Calls that estimate coefficients or tuning parameters from data: optimisation, least
# squares, linear solves (the paper's "numerical estimation").
_ESTIMATION_CALLS = frozenset({
    "minimize", "minimize_scalar", "least_squares", "curve_fit", "leastsq", "fmin",
    "fmin_bfgs", "fmin_l_bfgs_b", "fmin_powell", "differential_evolution", "basinhopping",
    "dual_annealing", "shgo", "brute", "brentq", "newton", "root", "root_scalar", "fsolve",
    "lstsq", "solve", "inv", "pinv", "polyfit", "cho_solve", "lu_solve", "nnls", "lsq_linear",
    "fit",
})
_SCIPY_OPTIMIZE = ("scipy.optimize", "optimize")


def _call_name(node: ast.Call) -> str:
    """Dotted name of a call's function, e.g. ``np.linalg.lstsq``; a method of a call's
    result keeps the call, e.g. ``LinearRegression().fit`` (a method, not a bare ``fit``)."""
    parts = []
    f = node.func
    while isinstance(f, ast.Attribute):
        parts.append(f.attr)
        f = f.value
    if isinstance(f, ast.Name):
        parts.append(f.id)
    elif isinstance(f, ast.Call):
        parts.append(_call_name(f) + "()")
    return ".".join(reversed(parts))


def _loop_optimises(loop: ast.AST) -> bool:
    """A loop that keeps a best value (``if loss < best: best = loss``) or steps a gradient."""
    for node in ast.walk(loop):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and any(
                isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.test.ops):
            names = {n.id.lower() for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            if any(k in name for name in names for k in ("best", "min", "opt")):
                return True
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Sub):
            names = {n.id.lower() for n in ast.walk(node.value) if isinstance(n, ast.Name)}
            if any(k in name for name in names for k in ("grad", "lr", "step", "learning")):
                return True
    return False


def describe_program(source: str) -> dict:
    """Static classification hooks for a program (heuristics, recorded in ``Fitted.info``).

    Returns
    -------
    dict
        ``syntax_ok``; ``imports`` (top-level modules); ``defines`` (top-level functions and
        classes); ``estimation_calls`` (calls that fit coefficients: scipy.optimize routines,
        least squares, linear solves, ``.fit``); ``loop_optimisation`` (a loop keeping a best
        value or stepping a gradient); ``estimates_parameters`` (either of the two — the
        paper's "numerical estimation"); ``uses_training_data`` (the prediction function's
        training arguments are read); ``subsets_training_data`` (the training arguments are
        sliced, e.g. ``X_train[:20]``); ``reads_files``.

    Examples
    --------
    >>> src = "from scipy.optimize import minimize\\n" \\
    ...       "def predict(X_train, y_train, X):\\n" \\
    ...       "    b = minimize(lambda b: ((y_train - b) ** 2).sum(), 0.0).x\\n" \\
    ...       "    return [b[0]] * len(X)\\n"
    >>> d = describe_program(src)
    >>> d["estimates_parameters"], d["estimation_calls"], d["uses_training_data"]
    (True, ['minimize'], True)
    """
    out = {"syntax_ok": True, "imports": [], "defines": [], "estimation_calls": [],
           "loop_optimisation": False, "estimates_parameters": False,
           "uses_training_data": False, "subsets_training_data": False, "reads_files": False}
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the last two: nested
        out["syntax_ok"] = False  # past the parser's depth ("1+" * 300000; "-" * 10**6)
        return out
    imports, calls = set(), set()
    from_optimize = False
    # functions imported by name (from numpy.linalg import solve; ... import minimize as m):
    # a bare call of one is the library's, not a function of the program's own
    imported = {a.asname or a.name: a.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports |= {a.name.partition(".")[0] for a in node.names}
            from_optimize |= any(a.name.startswith(_SCIPY_OPTIMIZE[0]) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imports.add(node.module.partition(".")[0])
            from_optimize |= node.module.startswith(_SCIPY_OPTIMIZE[0])
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            last = imported.get(name, name.rpartition(".")[2])
            if last in _ESTIMATION_CALLS and (last not in ("solve", "inv", "root", "fit",
                                                           "newton", "brute")
                                              or "." in name or name in imported):
                calls.add(last)
            if last in ("open", "load", "loadtxt", "genfromtxt", "read_csv", "fromfile"):
                out["reads_files"] = True
        elif isinstance(node, (ast.For, ast.While)) and _loop_optimises(node):
            out["loop_optimisation"] = True
    out["imports"] = sorted(imports)
    out["defines"] = [n.name for n in tree.body
                      if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
    out["estimation_calls"] = sorted(calls)
    out["uses_scipy_optimize"] = from_optimize
    out["estimates_parameters"] = bool(calls) or out["loop_optimisation"]
    # training arguments: the first two parameters of predict(X_train, y_train, X) or fit(X, y)
    train_names: set[str] = set()
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and n.name in ("predict", "fit"):
            params = [a.arg for a in n.args.args]
            if n.name == "fit" or len(params) >= 3:
                train_names |= set(params[:2])
    if train_names:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in train_names and \
                    isinstance(node.ctx, ast.Load):
                out["uses_training_data"] = True
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                    node.value.id in train_names and isinstance(node.slice, ast.Slice) and \
                    (node.slice.lower is not None or node.slice.upper is not None):
                out["subsets_training_data"] = True
    return out

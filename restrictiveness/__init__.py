"""restrictiveness: could this model — or this AI workflow — have fit anything?

Restrictiveness (Fudenberg, Gao & You 2026) measures how well a model class or a black-box
prediction procedure approximates prediction rules drawn from an economically meaningful
eligible set, relative to a baseline, as a learning-curve profile over sample sizes.
"""

from __future__ import annotations

__version__ = "0.1.0"

# first: a Ctrl-C during the imports below leaves in one line (under python -m restrictiveness)
from .shared import startup as _startup

_startup.install()

# The public names of every layer (the layer order is in tests/test_layout.py), imported after
# the start-up handler above on purpose:
# ruff: noqa: E402
from . import datasets, demand, lottery
from .ai import llm
from .ai.llm import PROMPTS, Agent, Completion, ResponseCache, extract_code
from .ai.programs import ProgramError, ProgramProcedure
from .ai.sandbox import SandboxLimits, run_python, sandbox_status
from .analysis.completeness import (
    CellMeansKFold,
    CompletenessResults,
    RepeatedGroupKFold,
    TableSample,
    estimate_completeness,
    load_completeness,
)
from .analysis.frontier import frontier_table, plot_frontier
from .analysis.quick import quick_check
from .demand.learners import GridGP, LogShareRegressor
from .eligible.constraints import Between, Constraint, Decreasing, Increasing, Simplex
from .eligible.domains import Box, ConvexHull, Domain, FiniteSet, LinearInequality
from .eligible.kernels import Matern32, Matern52, SquaredExponential
from .eligible.monotone_gp import EligibleSet, MonotoneGP
from .eligible.truth import EvaluationDistribution, PseudoTruth
from .engine.discrepancies import KL, MSE, Discrepancy
from .engine.protocol import Fitted, FunctionRule, Procedure
from .engine.results import Results, load
from .engine.sensitivity_results import Contributions
from .engine.study import Study
from .procedures import NLS, OLS, AutoML, Constant, GPRegression, NLSResults, SklearnRegressor
from .shared.exceptions import (
    BaselineError,
    CheckpointError,
    CheckpointWarning,
    ConfigurationError,
    ConstraintError,
    DataError,
    DomainError,
    ExecutionError,
    FailureWarning,
    FormulaError,
    IsolationWarning,
    ModelFunctionError,
    RestrictivenessError,
    SandboxUnavailableError,
    StudyInterrupted,
)
from .shared.formula import parse_formula
from .shared.sample import Sample

__all__ = [
    "__version__",
    "Between", "Constraint", "Decreasing", "Increasing", "Simplex",
    "KL", "MSE", "Discrepancy",
    "Box", "ConvexHull", "Domain", "FiniteSet", "LinearInequality",
    "BaselineError", "CheckpointError", "ConfigurationError", "ConstraintError", "DataError",
    "DomainError", "FailureWarning", "FormulaError", "RestrictivenessError",
    "IsolationWarning", "SandboxUnavailableError",
    "CheckpointWarning", "ExecutionError", "ModelFunctionError", "StudyInterrupted",
    "parse_formula",
    "Matern32", "Matern52", "SquaredExponential",
    "NLS", "NLSResults", "OLS", "Constant", "Fitted", "FunctionRule", "GPRegression",
    "Procedure", "SklearnRegressor",
    "datasets", "demand", "lottery", "llm",
    "CellMeansKFold", "CompletenessResults", "RepeatedGroupKFold", "TableSample",
    "AutoML", "GridGP", "LogShareRegressor",
    "PROMPTS", "Agent", "Completion", "ResponseCache", "extract_code", "ProgramError",
    "ProgramProcedure", "SandboxLimits", "run_python", "sandbox_status",
    "estimate_completeness", "load_completeness", "frontier_table", "plot_frontier",
    "EligibleSet", "MonotoneGP", "quick_check", "Results", "load", "Sample", "Study",
    "EvaluationDistribution", "PseudoTruth", "Contributions",
]

"""restrictiveness: could this model — or this AI workflow — have fit anything?

Restrictiveness (Fudenberg, Gao & You 2026) measures how well a model class or a black-box
prediction procedure approximates prediction rules drawn from an economically meaningful
eligible set, relative to a baseline, as a learning-curve profile over sample sizes.
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import datasets, demand, lottery  # noqa: E402  (the applications build on the names above)
from .adapters import AutoML, GridGP, LogShareRegressor
from .completeness import (
    CellMeansKFold,
    CompletenessResults,
    RepeatedGroupKFold,
    TableSample,
    estimate_completeness,
    load_completeness,
)
from .constraints import Between, Constraint, Decreasing, Increasing, Simplex
from .discrepancies import KL, MSE, Discrepancy
from .domains import Box, Domain, FiniteSet, LinearInequality
from .exceptions import (
    BaselineError,
    CheckpointError,
    ConfigurationError,
    ConstraintError,
    DataError,
    DomainError,
    FailureWarning,
    FormulaError,
    RestrictivenessError,
)
from .formula import parse_formula
from .frontier import frontier_table, plot_frontier
from .kernels import Matern32, Matern52, SquaredExponential
from .llm import PROMPTS, Agent, Completion, ResponseCache, extract_code
from .monotone_gp import EligibleSet, MonotoneGP
from .procedures import (
    OLS,
    Constant,
    Fitted,
    FunctionRule,
    GPRegression,
    Procedure,
    SklearnRegressor,
)
from .programs import ProgramError, ProgramProcedure
from .quick import quick_check
from .results import Results, load
from .sample import Sample
from .sandbox import SandboxLimits, run_python
from .study import Study
from .truth import EvaluationDistribution, PseudoTruth

__all__ = [
    "__version__",
    "Between", "Constraint", "Decreasing", "Increasing", "Simplex",
    "KL", "MSE", "Discrepancy",
    "Box", "Domain", "FiniteSet", "LinearInequality",
    "BaselineError", "CheckpointError", "ConfigurationError", "ConstraintError", "DataError",
    "DomainError", "FailureWarning", "FormulaError", "RestrictivenessError",
    "parse_formula",
    "Matern32", "Matern52", "SquaredExponential",
    "OLS", "Constant", "Fitted", "FunctionRule", "GPRegression", "Procedure", "SklearnRegressor",
    "datasets", "demand", "lottery",
    "CellMeansKFold", "CompletenessResults", "RepeatedGroupKFold", "TableSample",
    "AutoML", "GridGP", "LogShareRegressor",
    "PROMPTS", "Agent", "Completion", "ResponseCache", "extract_code", "ProgramError",
    "ProgramProcedure", "SandboxLimits", "run_python",
    "estimate_completeness", "load_completeness", "frontier_table", "plot_frontier",
    "EligibleSet", "MonotoneGP", "quick_check", "Results", "load", "Sample", "Study",
    "EvaluationDistribution", "PseudoTruth",
]

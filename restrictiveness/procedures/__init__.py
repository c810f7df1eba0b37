"""Procedures: the protocol (defined by the engine and re-exported here), generic procedures
(:class:`Constant`, :class:`OLS`, :class:`GPRegression`), nonlinear least-squares models from a
formula (:class:`NLS`, with statsmodels-style estimation results shared with the applications'
models in :mod:`.estimation`) and black-box learners (:class:`SklearnRegressor`,
:class:`AutoML`).

May import the shared, eligible and engine layers.
"""

from ..engine.protocol import Fitted, FunctionRule, Procedure
from .generic import OLS, Constant, GPRegression
from .learners import AutoML, SklearnRegressor
from .nls import NLS, NLSEstimator, NLSFitted, NLSResults

__all__ = ["Procedure", "Fitted", "FunctionRule", "Constant", "OLS", "GPRegression",
           "SklearnRegressor", "AutoML", "NLS", "NLSEstimator", "NLSFitted", "NLSResults"]

"""Procedures: the protocol (defined by the engine and re-exported here), generic procedures
(:class:`Constant`, :class:`OLS`, :class:`GPRegression`) and black-box learners
(:class:`SklearnRegressor`, :class:`AutoML`).

May import the shared, eligible and engine layers.
"""

from ..engine.protocol import Fitted, FunctionRule, Procedure
from .generic import OLS, Constant, GPRegression
from .learners import AutoML, SklearnRegressor

__all__ = ["Procedure", "Fitted", "FunctionRule", "Constant", "OLS", "GPRegression",
           "SklearnRegressor", "AutoML"]

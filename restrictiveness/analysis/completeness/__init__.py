"""Completeness on real data (Fudenberg, Kleinberg, Liang & Mullainathan 2022; SPEC §5):
cross-validation designs (:mod:`.designs`), estimators and standard errors (:mod:`.inference`),
the engine that fits every procedure on common folds (:mod:`.estimate`) and the results object
(:mod:`.results`). Part of the analysis layer, with its imports.
"""

from .designs import CellMeansKFold, RepeatedGroupKFold, TableSample, squared_error
from .estimate import estimate_completeness
from .inference import clustered_completeness, repeated_fold_completeness
from .results import CompletenessResults, load_completeness

__all__ = ["CellMeansKFold", "RepeatedGroupKFold", "TableSample", "squared_error",
           "estimate_completeness", "clustered_completeness", "repeated_fold_completeness",
           "CompletenessResults", "load_completeness"]

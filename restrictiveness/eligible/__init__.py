"""Eligible sets and evaluation distributions over them: constraints, covariate domains,
covariance kernels, the monotone projection (with its numba kernel) and the generic monotone-GP
prior, plus the protocol every evaluation distribution implements (:mod:`.truth`).

May import :mod:`restrictiveness.shared` only.
"""

"""The lottery application's eligible set and certainty-equivalent prior (SPEC §6).

Lotteries x = (z_hi, z_lo, p) with prizes normalised by the largest observed prize (150):
z_hi ∈ [1/15, 1], z_lo ∈ [0, 1/3], p ∈ [0.05, 0.95], z_lo ≤ z_hi, uniform P_X. Eligible
certainty equivalents lie between the prizes and are nondecreasing in z_hi, z_lo and p.
"""

from __future__ import annotations

from ..eligible.constraints import Between, Increasing
from ..eligible.domains import Box
from ..eligible.kernels import Matern32
from ..eligible.monotone_gp import EligibleSet, MonotoneGP
from ..eligible.projection import SweepOrder

__all__ = ["COLUMNS", "RESPONSE", "lottery_domain", "lottery_eligible_set", "lottery_prior"]

COLUMNS = ("z_hi", "z_lo", "p")
RESPONSE = "ce"


def lottery_domain() -> Box:
    """Binary lotteries in normalised prizes: the box of SPEC §6 with ``z_lo <= z_hi``.

    Returns
    -------
    Box
        Over :data:`COLUMNS` ``(z_hi, z_lo, p)``; its ``sample`` is uniform on the domain.

    Examples
    --------
    >>> import numpy as np
    >>> X = lottery_domain().sample(1000, np.random.default_rng(0))
    >>> X.shape, bool((X[:, 1] <= X[:, 0]).all()), bool((X[:, 2] >= 0.05).all())
    ((1000, 3), True, True)
    """
    return Box(z_hi=(1 / 15, 1.0), z_lo=(0.0, 1 / 3), p=(0.05, 0.95), where=["z_lo <= z_hi"])


def lottery_eligible_set() -> EligibleSet:
    """Certainty equivalents between the prizes, nondecreasing in z_hi, z_lo and p.

    Returns
    -------
    EligibleSet
        :func:`lottery_domain` with ``Between("z_lo", "z_hi")`` and
        ``Increasing("z_hi", "z_lo", "p")``.

    Examples
    --------
    >>> F = lottery_eligible_set()
    >>> F.constraints
    (Between(lower='z_lo', upper='z_hi'), Increasing('z_hi', 'z_lo', 'p'))
    >>> F.sign.tolist()
    [1, 1, 1]
    """
    return EligibleSet(lottery_domain(), Between("z_lo", "z_hi"), Increasing("z_hi", "z_lo", "p"))


def lottery_prior(n_eval: int = 1000, order: SweepOrder = "row-major", variance: float = 10.0,
                  lengthscale: float | tuple[float, ...] = 1.0, jitter: float = 1e-4
                  ) -> MonotoneGP:
    """The monotone-GP certainty-equivalent prior of SPEC §6.

    Matérn-3/2 (variance 10, length scale 1) in the domain's own coordinates, 1e-4 jitter, common
    random numbers across n (evaluation points first in one Cholesky factor), the row-major
    projection sweep over [training; evaluation] in both directions with the e₊/e₋ blend, and the
    logistic link onto the prize interval; 1,000 evaluation lotteries.

    Parameters
    ----------
    n_eval : int
        Evaluation lotteries per pseudo-truth.
    order : {"row-major", "random"}
        Sweep order of the monotone projection.
    variance : float
        The Matérn-3/2 kernel's variance.
    lengthscale : float or tuple of float
        Its length scale: one, or one per covariate (z_hi, z_lo, p).
    jitter : float
        Added to the kernel matrix's diagonal before its Cholesky factorisation.

    Returns
    -------
    MonotoneGP

    Examples
    --------
    >>> import numpy as np
    >>> truth = lottery_prior(n_eval=200).draw([50], np.random.default_rng(0))
    >>> X, y = truth.eval_X, truth.eval_y(50)
    >>> bool(((X[:, 1] <= y) & (y <= X[:, 0])).all())
    True
    """
    return MonotoneGP(lottery_eligible_set(),
                      kernel=Matern32(variance=variance, lengthscale=lengthscale),
                      jitter=jitter, n_eval=n_eval, response=RESPONSE, order=order)

"""The random-utility evaluation distribution of the demand application (SPEC §7).

Each replication draws one *demand system*: four independent zero-mean Gaussian fields, each a
sum of random Fourier features of a Matérn-3/2 kernel,

* ``H_C(z^s, m)`` and ``H_I(z^s, m, ν)`` make the utility level ``L``,
* ``G_C(v, z^s, m)`` and ``G_I(v, z^s, m, ν)`` make the price sensitivity ``a = softplus(Λ)/c``,

with ``ν ~ N(0, I_4)`` the consumer type, standardised on a fixed reference grid (the 2,256
calibration observations × 128 reference types). Utility is
``V_j(ν) = −log 24 + L(z^s_j, m_j, ν) − ∫_0^{z^p_j} a(v, z^s_j, m_j, ν) dv`` and shares average the
logit probabilities over 512 antithetic consumer types. The truth is a function of the market,
so training and evaluation markets are simply drawn from :class:`MarketDistribution` and price
elasticities are available by perturbing prices.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Literal, cast

import numpy as np
from scipy.stats import norm, qmc

from ..eligible.constraints import Simplex
from ..eligible.kernels import Matern32
from ..eligible.truth import EvaluationDistribution, PseudoTruth
from ..shared.blas import one_thread
from ..shared.checks import is_positive, is_whole, whole_number
from ..shared.exceptions import ConfigurationError, DomainError
from ._shares_nb import shares_nb, shares_numpy
from .markets import MARKET_COLUMNS, MarketDistribution, elasticities_from_shares, perturbed_markets

__all__ = ["DemandPrior", "DemandSystem", "DemandTruth", "sobol_normals"]

# Order and inputs of the four fields: (has price argument v, has consumer type ν).
_FIELDS = (("H_C", False, False), ("H_I", False, True), ("G_C", True, False),
           ("G_I", True, True))


def sobol_normals(half: int, dim: int, seed: int) -> np.ndarray:
    """``2 half`` antithetic standard-normal points: ``half`` scrambled-Sobol draws and their
    negatives, shape ``(2 half, dim)``.

    Examples
    --------
    >>> z = sobol_normals(64, 4, seed=1)
    >>> z.shape, bool(np.allclose(z.mean(axis=0), 0))
    ((128, 4), True)
    """
    u = qmc.Sobol(dim, scramble=True, seed=np.random.default_rng(seed)).random(int(half))
    z = norm.ppf(u)
    return np.concatenate([z, -z])


def _grid_field(p: np.ndarray, v: np.ndarray, s: np.ndarray, m: np.ndarray,
                nu: np.ndarray | None) -> np.ndarray:
    """A field at N points (and R types): ``(N,)`` or ``(N, R)``, by cos(α + β) products."""
    alpha = v[:, None] * p[:, 0] + s[:, None] * p[:, 1] + p[:, 6]  # (N, D)
    w = np.where(m[:, None] == 1.0, p[:, 8], p[:, 7])
    if nu is None:
        return (w * np.cos(alpha)).sum(axis=1)
    beta = nu @ p[:, 2:6].T  # (R, D)
    return (w * np.cos(alpha)) @ np.cos(beta).T - (w * np.sin(alpha)) @ np.sin(beta).T


class DemandSystem:
    """One demand system: standardised field parameters and the fixed integration rules.

    Built by :meth:`DemandPrior.draw_system`. ``fields`` has shape ``(4, D, 9)`` in the layout of
    :mod:`restrictiveness.demand._shares_nb` (weights folded with the grid standardisation) and
    ``scal = [l0, λ0, 1/c]`` with ``L = l0 + H_C + H_I`` standardised to mean 0 and s.d. 1 on the
    reference grid (the ``−log J`` of utility is added when computing shares).

    Parameters
    ----------
    fields : ndarray, shape (4, D, 9)
        The four standardised random-Fourier-feature fields.
    scal : ndarray, shape (3,)
        ``[l0, λ0, 1/c]``.
    market : MarketDistribution
        P_X (its moments standardise price and sugar).
    nu : ndarray, shape (R, 4)
        Antithetic consumer types (the second half the negatives of the first).
    nodes, short_nodes : tuple of ndarray
        Gauss–Legendre nodes and weights of the price integral and of a perturbation's piece.
    engine : {"numba", "numpy"}
        The share kernel or its NumPy twin.

    Examples
    --------
    >>> import numpy as np
    >>> prior = DemandPrior(n_types=64, n_reference_types=32)
    >>> system = prior.draw_system(np.random.default_rng(0))
    >>> s = system.shares(prior.market.sample(2, np.random.default_rng(1)))
    >>> s.shape, bool((s > 0).all() and (s.sum(axis=1) < 1).all())
    ((2, 24), True)
    """

    def __init__(self, fields: np.ndarray, scal: np.ndarray, market: MarketDistribution,
                 nu: np.ndarray, nodes: tuple[np.ndarray, np.ndarray],
                 short_nodes: tuple[np.ndarray, np.ndarray],
                 engine: Literal["numba", "numpy"] = "numba") -> None:
        self.fields = np.ascontiguousarray(fields, dtype=float)
        self.scal = np.ascontiguousarray(scal, dtype=float)
        self.market, self.engine = market, engine
        self.nu = np.ascontiguousarray(nu, dtype=float)
        H = len(self.nu) // 2
        if len(self.nu) % 2 or not np.array_equal(self.nu[H:], -self.nu[:H]):
            raise ConfigurationError("consumer types nu must be antithetic: the second half "
                                     "the negatives of the first")
        self.nu_half = np.ascontiguousarray(self.nu[:H])
        self.gx, self.gw = (np.ascontiguousarray(a, dtype=float) for a in nodes)
        self.sx, self.sw = (np.ascontiguousarray(a, dtype=float) for a in short_nodes)
        for name, x in (("nodes", self.gx), ("short_nodes", self.sx)):
            # the kernel takes the features at both nodes of a pair ±x from one angle
            if not np.array_equal(x[::-1], -x):
                raise ConfigurationError(f"{name} must be antisymmetric (x[-1 - q] = -x[q]), as "
                                         f"Gauss-Legendre nodes are")
        if engine not in ("numba", "numpy"):
            raise ConfigurationError(f"engine must be 'numba' or 'numpy', got {engine!r}")

    def _inputs(self, X: np.ndarray):
        X = np.asarray(X, dtype=float)
        J = self.market.n_products
        if X.ndim != 3 or X.shape[1:] != (J, 3):
            raise DomainError(f"markets must have shape (n, {J}, 3) with columns "
                              f"{MARKET_COLUMNS}, got {X.shape}")
        if not np.isfinite(X).all():
            raise DomainError("markets contain non-finite values")
        if not np.isin(X[..., 2], (0.0, 1.0)).all():
            raise DomainError("the mushy column of markets must be 0 or 1")
        zp, zs = self.market.standardize(X)
        return X, np.ascontiguousarray(zp), np.ascontiguousarray(zs), np.ascontiguousarray(
            X[..., 2])

    def _run(self, zp, zs, m, z_lo, z_hi, perturb):
        scal = self.scal.copy()
        scal[0] -= np.log(self.market.n_products)
        f = shares_nb if self.engine == "numba" else shares_numpy
        # One BLAS thread: the kernel makes thousands of mid-size products in a loop, and a
        # threaded BLAS waiting for a busy core made 100 markets take 74 s instead of 0.9 s.
        with one_thread():
            return f(zp, zs, m, z_lo, z_hi, self.fields, scal, self.nu_half, self.gx, self.gw,
                     self.sx, self.sw, perturb)

    def shares(self, X: np.ndarray) -> np.ndarray:
        """Inside shares of markets ``X`` (shape ``(n, J, 3)``, raw units): ``(n, J)``.

        Parameters
        ----------
        X : array_like, shape (n, J, 3)
            Markets: price, sugar, mushy (0 or 1).

        Returns
        -------
        ndarray, shape (n, J)
            Positive inside shares summing to less than 1 in each market.

        Examples
        --------
        >>> import numpy as np
        >>> prior = DemandPrior(n_types=16, n_reference_types=16, n_eval=2, n_train=5)
        >>> truth = prior.draw([5], np.random.default_rng(0))
        >>> s = truth.system.shares(truth.eval_X)
        >>> bool(np.array_equal(s, truth.eval_y(5))), bool((s.sum(axis=1) < 1).all())
        (True, True)
        """
        X, zp, zs, m = self._inputs(X)
        return self._run(zp, zs, m, zp, zp, False)[0]

    def perturbed_shares(self, X: np.ndarray, h: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Base shares ``(n, J)`` and shares with each price lowered / raised by the log-steps
        ``h`` (shape ``(n, J)``): ``minus[i, k, j]``, ``plus[i, k, j]`` of shape ``(n, J, J)``.

        Parameters
        ----------
        X : array_like, shape (n, J, 3)
            Markets in raw units.
        h : array_like, shape (n, J)
            Log-price steps: product ``k``'s price becomes ``p_k e^{∓h_k}``.

        Returns
        -------
        base, minus, plus : ndarray
            ``base[i, j]`` as :meth:`shares`; ``minus[i, k, j]`` / ``plus[i, k, j]``: product
            ``j``'s share with ``p_k`` lowered / raised.

        Examples
        --------
        Raising a price lowers that product's share (utility falls in own price):

        >>> import numpy as np
        >>> prior = DemandPrior(n_types=16, n_reference_types=16, n_eval=2, n_train=5)
        >>> truth = prior.draw([5], np.random.default_rng(0))
        >>> base, minus, plus = truth.system.perturbed_shares(truth.eval_X, np.full((2, 24), .01))
        >>> bool((np.diagonal(plus, axis1=1, axis2=2) < base).all())
        True
        """
        X, zp, zs, m = self._inputs(X)
        h = np.asarray(h, dtype=float)
        if h.shape != zp.shape or not np.isfinite(h).all():
            raise DomainError(f"h must be finite with shape {zp.shape}, got {h.shape}")
        p = X[..., 0]
        z_lo = np.ascontiguousarray((p * np.exp(-h) - self.market.price_mean)
                                    / self.market.price_sd)
        z_hi = np.ascontiguousarray((p * np.exp(h) - self.market.price_mean)
                                    / self.market.price_sd)
        base, pert = self._run(zp, zs, m, z_lo, z_hi, True)
        return base, pert[:, 0], pert[:, 1]

    def latent_fields(self, v: np.ndarray, zs: np.ndarray, mushy: np.ndarray,
                      nu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Standardised utility level ``L`` and price-sensitivity index ``Λ`` at N points
        (price argument ``v``, standardised sugar ``zs``, ``mushy``) and R types ``nu``:
        two arrays ``(N, R)``. On the reference grid both have mean 0 and s.d. 1.

        Parameters
        ----------
        v, zs, mushy : array_like, shape (N,)
            Standardised price argument, standardised sugar and mushy status of each point.
        nu : ndarray, shape (R, 4)
            Consumer types.

        Returns
        -------
        L, Lambda : ndarray, shape (N, R)

        Examples
        --------
        See :meth:`DemandPrior.draw_system`, which checks both moments on the grid.

        >>> import numpy as np
        >>> prior = DemandPrior(n_features=8, n_types=16, n_reference_types=16, n_train=20)
        >>> system = prior.draw_system(np.random.default_rng(0))
        >>> L, lam = system.latent_fields([0.0], [0.5], [1.0], prior.reference_types)
        >>> L.shape, lam.shape
        ((1, 16), (1, 16))
        """
        v, zs, mushy = (np.asarray(a, dtype=float).ravel() for a in (v, zs, mushy))
        f = self.fields
        L = (self.scal[0] + _grid_field(f[0], v, zs, mushy, None)[:, None]
             + _grid_field(f[1], v, zs, mushy, nu))
        lam = (self.scal[1] + _grid_field(f[2], v, zs, mushy, None)[:, None]
               + _grid_field(f[3], v, zs, mushy, nu))
        return L, lam

    def price_sensitivity(self, v, zs, mushy, nu) -> np.ndarray:
        """``a = softplus(Λ)/c`` at N points and R types, ``(N, R)``.

        Parameters
        ----------
        v, zs, mushy : array_like, shape (N,)
            As in :meth:`latent_fields`.
        nu : ndarray, shape (R, 4)
            Consumer types.

        Returns
        -------
        ndarray, shape (N, R)
            Positive price sensitivities (mean 1 on the reference grid).

        Examples
        --------
        >>> import numpy as np
        >>> prior = DemandPrior(n_features=8, n_types=16, n_reference_types=16, n_train=20)
        >>> system = prior.draw_system(np.random.default_rng(0))
        >>> bool((system.price_sensitivity([0.0, 1.0], [0.5, 0.5], [0.0, 1.0], prior.types) > 0)
        ...      .all())
        True
        """
        return np.logaddexp(0.0, self.latent_fields(v, zs, mushy, nu)[1]) * self.scal[2]


class DemandPrior(EvaluationDistribution):
    """Random-utility evaluation distribution over share functions (SPEC §7).

    Parameters
    ----------
    market : MarketDistribution, optional
        P_X (default: calibrated to the shipped Nevo cereal data).
    n_features : int
        Random Fourier features per field (64).
    lengthscales : tuple of float
        Matérn-3/2 length scales of (standardised price, standardised sugar, each ν
        coordinate): ``(0.66, 1.25, 1.0)``.
    mushy_correlation : float
        Correlation of a field across mushy status (0.5: ``B = [[1, .5], [.5, 1]]``).
    n_nodes, n_short_nodes : int
        Gauss–Legendre nodes of the price integral (64) and of the small piece added by a price
        perturbation (8).
    n_types, n_reference_types : int
        Consumer types for the shares (512) and for the reference grid (128); both antithetic
        scrambled-Sobol normals, fixed across replications.
    type_seed, reference_seed : int
        Seeds of those two fixed sets.
    n_train, n_eval : int
        Training markets per replication (200; at least the largest ``n`` asked for) and
        evaluation markets (100).
    engine : {"numba", "numpy"}
        The share kernel or its (slow) NumPy twin.

    Examples
    --------
    >>> import numpy as np
    >>> prior = DemandPrior(n_types=64, n_reference_types=32, n_eval=5)
    >>> truth = prior.draw([10, 20], np.random.default_rng(0))
    >>> truth.train_y(10).shape, truth.eval_y(10).shape
    ((10, 24), (5, 24))
    """

    columns = MARKET_COLUMNS
    response = "shares"
    constraints = (Simplex(outside=True),)
    diagnostic_names = ("outside_share",)

    def __init__(self, market: MarketDistribution | None = None, n_features: int = 64,
                 lengthscales: tuple[float, float, float] = (0.66, 1.25, 1.0),
                 mushy_correlation: float = 0.5, n_nodes: int = 64, n_short_nodes: int = 8,
                 n_types: int = 512, n_reference_types: int = 128, type_seed: int = 20260207,
                 reference_seed: int = 20000128, n_train: int = 200, n_eval: int = 100,
                 engine: Literal["numba", "numpy"] = "numba") -> None:
        self.market = MarketDistribution() if market is None else market
        if not isinstance(self.market, MarketDistribution):  # was an AttributeError
            raise ConfigurationError(f"market must be a MarketDistribution (the calibrated "
                                     f"P_X), got {type(market).__name__}")
        for name, value in (("n_features", n_features), ("n_nodes", n_nodes),
                            ("n_short_nodes", n_short_nodes), ("n_train", n_train),
                            ("n_eval", n_eval)):
            whole_number(value, name, minimum=1)  # None was a bare TypeError, 2.5 truncated
        for name, value in (("n_types", n_types), ("n_reference_types", n_reference_types)):
            if not is_whole(value) or value < 2 or value % 2:
                raise ConfigurationError(f"{name} must be a positive even number (antithetic "
                                         f"pairs), got {value!r}")
        # a string of three characters was a bare TypeError, "0.5" was read as 0.5
        given: object = lengthscales
        scales = [] if isinstance(given, str) or not np.iterable(given) \
            else list(given)
        if len(scales) != 3 or not all(is_positive(v) for v in scales):
            raise ConfigurationError(f"lengthscales must be three positive numbers "
                                     f"(price, sugar, consumer type), got {lengthscales!r}")
        rho: object = mushy_correlation  # as given: the annotation does not stop a string
        if isinstance(rho, bool) or not isinstance(rho, numbers.Real) \
                or not -1.0 < float(rho) < 1.0:
            raise ConfigurationError(f"mushy_correlation must be a number in (-1, 1), got "
                                     f"{mushy_correlation!r}")
        if engine not in ("numba", "numpy"):
            raise ConfigurationError(f"engine must be 'numba' or 'numpy', got {engine!r}")
        self.n_features, self.n_nodes, self.n_short_nodes = (int(n_features), int(n_nodes),
                                                             int(n_short_nodes))
        self.lengthscales = tuple(float(v) for v in scales)
        self.mushy_correlation = float(mushy_correlation)
        self.n_types, self.n_reference_types = int(n_types), int(n_reference_types)
        self.type_seed, self.reference_seed = int(type_seed), int(reference_seed)
        self.n_train, self.n_eval, self.engine = int(n_train), int(n_eval), engine
        self.types = sobol_normals(self.n_types // 2, 4, self.type_seed)
        self.reference_types = sobol_normals(self.n_reference_types // 2, 4, self.reference_seed)
        self.nodes = np.polynomial.legendre.leggauss(self.n_nodes)
        self.short_nodes = np.polynomial.legendre.leggauss(self.n_short_nodes)
        cal = self.market.calibration
        self.grid_zp, self.grid_zs = self.market.standardize(cal)
        self.grid_mushy = cal[:, 2].copy()
        B = np.array([[1.0, self.mushy_correlation], [self.mushy_correlation, 1.0]])
        self._chol_B = np.linalg.cholesky(B)

    def _draw_fields(self, rng: np.random.Generator) -> np.ndarray:
        D = self.n_features
        l_p, l_s, l_nu = self.lengthscales
        fields = np.zeros((4, D, 9))
        for f, (_, has_v, has_nu) in enumerate(_FIELDS):
            cols = ([0] if has_v else []) + [1] + ([2, 3, 4, 5] if has_nu else [])
            ls = ([l_p] if has_v else []) + [l_s] + ([l_nu] * 4 if has_nu else [])
            # Student-t frequencies (one chi-square per vector), phases, and two independent
            # weight columns mixed by chol(B) so the mushy statuses correlate by B.
            fields[f, :, cols] = Matern32(lengthscale=tuple(ls)).spectral_frequencies(
                len(ls), D, rng).T
            fields[f, :, 6] = rng.uniform(0.0, 2.0 * np.pi, D)
            fields[f, :, 7:9] = np.sqrt(2.0 / D) * rng.standard_normal((D, 2)) @ self._chol_B.T
        return fields

    def standardize_fields(self, fields: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fold the reference-grid standardisation into raw field parameters.

        Returns the rescaled ``fields`` and ``scal = [l0, λ0, 1/c]`` such that
        ``L = (H̃_C + H̃_I)/s_L`` and ``Λ = (G̃_C + G̃_I)/s_Λ`` have mean 0 and s.d. 1 on the grid
        (``ddof=0``; the price fields take each observation's own standardised price as ``v``)
        and ``softplus(Λ)/c`` has mean 1 there.

        Parameters
        ----------
        fields : ndarray
            Raw random-Fourier-feature parameters of the four fields ``(H_C, H_I, G_C, G_I)``.

        Returns
        -------
        fields : ndarray
            A rescaled copy.
        scal : ndarray
            ``[l0, λ0, 1/c]``.

        Examples
        --------
        The fields of a drawn system are standardised already, so standardising them again
        changes nothing:

        >>> import numpy as np
        >>> prior = DemandPrior(n_features=8, n_types=16, n_reference_types=16, n_train=20)
        >>> system = prior.draw_system(np.random.default_rng(0))
        >>> fields, scal = prior.standardize_fields(system.fields)
        >>> bool(np.allclose(fields, system.fields) and np.allclose(scal, system.scal))
        True
        """
        fields = np.array(fields, dtype=float)
        zp, zs, m, nu = self.grid_zp, self.grid_zs, self.grid_mushy, self.reference_types
        zero = np.zeros_like(zp)
        offsets = []
        for fc, fi, v in ((0, 1, zero), (2, 3, zp)):
            c_raw = _grid_field(fields[fc], v, zs, m, None)
            i_raw = _grid_field(fields[fi], v, zs, m, nu)
            # H_C is constant across types, so its grid moments are those over observations.
            mc, sc = c_raw.mean(), c_raw.std()
            mi, si = i_raw.mean(), i_raw.std()
            s_sum = ((c_raw[:, None] - mc) / sc + (i_raw - mi) / si).std()
            fields[fc, :, 7:9] /= sc * s_sum
            fields[fi, :, 7:9] /= si * s_sum
            offsets.append(-(mc / sc + mi / si) / s_sum)
        lam = (offsets[1] + _grid_field(fields[2], zp, zs, m, None)[:, None]
               + _grid_field(fields[3], zp, zs, m, nu))
        c = np.logaddexp(0.0, lam).mean()
        return fields, np.array([offsets[0], offsets[1], 1.0 / c])

    def draw_system(self, rng: np.random.Generator) -> DemandSystem:
        """Draw one demand system (the four fields), standardised on the reference grid.

        Parameters
        ----------
        rng : Generator
            The random stream (the fields' random Fourier features).

        Returns
        -------
        DemandSystem

        Examples
        --------
        On the reference grid the utility field ``L`` has mean 0 and s.d. 1, and the price
        sensitivity mean 1:

        >>> import numpy as np
        >>> prior = DemandPrior(n_features=8, n_types=16, n_reference_types=16, n_train=20)
        >>> system = prior.draw_system(np.random.default_rng(0))
        >>> grid = (prior.grid_zp, prior.grid_zs, prior.grid_mushy, prior.reference_types)
        >>> L, _ = system.latent_fields(*grid)
        >>> round(abs(float(L.mean())), 9), round(float(L.std()), 9)
        (0.0, 1.0)
        >>> round(float(system.price_sensitivity(*grid).mean()), 9)
        1.0
        """
        fields, scal = self.standardize_fields(self._draw_fields(rng))
        return DemandSystem(fields, scal, self.market, self.types, self.nodes, self.short_nodes,
                            self.engine)

    def memory_bytes(self, ns: Sequence[int], draws: int = 1) -> int:
        """At least the training markets' characteristics and shares (float64; 24 products).

        Parameters
        ----------
        ns : sequence of int
            The study's sample sizes.
        draws : int
            Training draws per replication.

        Returns
        -------
        int
            Bytes: ``8 × max(n_train, max(ns)) × draws × 24 × 4``.

        Examples
        --------
        >>> prior = DemandPrior(n_features=8, n_types=16, n_reference_types=16, n_train=20)
        >>> prior.memory_bytes([50, 100], draws=2)  # 8 bytes × 100 markets × 2 × 24 × 4
        153600
        """
        size = max(self.n_train, max(int(n) for n in ns))
        return 8 * size * int(draws) * 24 * (len(MARKET_COLUMNS) + 1)

    def draw(self, ns: Sequence[int], rng: np.random.Generator, draws: int = 1) -> DemandTruth:
        """One demand system, ``draws`` nested sequences of training markets (the first ``n``
        are the size-``n`` sample) and ``n_eval`` evaluation markets.

        Parameters
        ----------
        ns : sequence of int
            The sample sizes (training markets) the truth must serve.
        rng : Generator
            The replication's random stream.
        draws : int
            Training samples per size.

        Returns
        -------
        DemandTruth

        Examples
        --------
        >>> import numpy as np
        >>> prior = DemandPrior(n_features=8, n_types=16, n_reference_types=16, n_train=20,
        ...                     n_eval=5)
        >>> truth = prior.draw([10, 20], np.random.default_rng(0))
        >>> bool(np.array_equal(truth.train_X(20)[:10], truth.train_X(10))), truth.eval_X.shape
        (True, (5, 24, 3))
        """
        sizes = list(np.atleast_1d(ns))
        if not sizes or not all(is_whole(n) and n >= 1 for n in sizes):
            # int() took a size of 2.5 as 2 and 1.5 draws as 1
            raise ConfigurationError(f"ns must be positive whole sample sizes, got {ns!r}")
        ns = [int(n) for n in sizes]
        draws = whole_number(draws, "draws", minimum=1)
        system = self.draw_system(rng)
        eval_X = self.market.sample(self.n_eval, rng)
        size = max(self.n_train, max(ns))
        train = [self.market.sample(size, rng) for _ in range(draws)]
        return DemandTruth(system, train, eval_X)

    def describe(self) -> str:
        """A one-line description for summaries.

        Returns
        -------
        str

        Examples
        --------
        >>> DemandPrior(n_features=8, n_types=16, n_reference_types=16).describe()[:60]
        'random-utility demand prior: 8 Matérn-3/2 features per field'
        """
        return (f"random-utility demand prior: {self.n_features} Matérn-3/2 features per field, "
                f"length scales {self.lengthscales}, {self.n_types} consumer types, "
                f"{self.n_nodes} Gauss–Legendre nodes; {self.market!r}")

    def __repr__(self) -> str:
        # every argument: checkpoints identify a study by its reprs
        return (f"DemandPrior(market={self.market!r}, n_features={self.n_features}, "
                f"lengthscales={self.lengthscales}, mushy_correlation={self.mushy_correlation!r}, "
                f"n_nodes={self.n_nodes}, n_short_nodes={self.n_short_nodes}, "
                f"n_types={self.n_types}, n_reference_types={self.n_reference_types}, "
                f"type_seed={self.type_seed}, reference_seed={self.reference_seed}, "
                f"n_train={self.n_train}, n_eval={self.n_eval}, engine={self.engine!r})")


class DemandTruth(PseudoTruth):
    """A share function drawn from :class:`DemandPrior`, with its markets.

    The truth does not depend on ``n``; values are computed once and cached (training shares per
    draw, evaluation shares, and the evaluation markets' elasticities, which the own- and
    cross-price discrepancies share across procedures). Nothing is computed twice or unasked:

    * training shares are computed for the first ``n`` markets a call asks for and extended when
      a larger ``n`` asks (a study whose largest ``n`` is below the 200 drawn markets does not
      pay for the rest);
    * the evaluation shares come with the evaluation markets' elasticities, from one pass of the
      kernel's perturbed path (which computes the base shares on the way, bit for bit as the
      shares-only path): the demand discrepancies ask for both, and computing the shares apart
      would run the base of every evaluation market twice (about a quarter of a demand system's
      truth time).

    Parameters
    ----------
    system : DemandSystem
        The share function.
    train_locations : sequence of ndarray
        One ``(size, J, 3)`` stack of training markets per draw (nested: the first ``n`` are the
        size-``n`` sample).
    eval_X : ndarray, shape (n_eval, J, 3)
        The evaluation markets.

    Attributes
    ----------
    system : DemandSystem
        The share function.
    market : MarketDistribution
        P_X, whose hulls give the finite-difference steps.

    Examples
    --------
    >>> import numpy as np
    >>> prior = DemandPrior(n_types=16, n_eval=2, n_train=5)
    >>> truth = prior.draw([5], np.random.default_rng(0))
    >>> E = truth.elasticities(5)
    >>> E.shape, bool((np.diagonal(E, axis1=1, axis2=2) < 0).all())
    ((2, 24, 24), True)
    """

    def __init__(self, system: DemandSystem, train_locations: Sequence[np.ndarray],
                 eval_X: np.ndarray) -> None:
        super().__init__(train_locations, eval_X, None, MARKET_COLUMNS, "shares")
        self.system, self.market = system, system.market
        self._train: dict[int, np.ndarray] = {}
        self._eval: np.ndarray | None = None
        self._elasticities: np.ndarray | None = None
        self._steps: np.ndarray | None = None
        self._perturbed: np.ndarray | None = None

    def train_y(self, n: int, draw: int = 0) -> np.ndarray:
        """Inside shares of the first ``n`` training markets of ``draw``, ``(n, J)``.

        Parameters
        ----------
        n : int
            Sample size.
        draw : int
            Training draw.

        Returns
        -------
        ndarray, shape (n, J)
            Computed once per market and kept (a larger ``n`` extends them).

        Examples
        --------
        >>> import numpy as np
        >>> prior = DemandPrior(n_types=16, n_reference_types=16, n_eval=2, n_train=5)
        >>> truth = prior.draw([5], np.random.default_rng(0))
        >>> bool(np.array_equal(truth.train_y(5), truth.system.shares(truth.train_X(5))))
        True
        """
        X = self.train_locations[draw]
        done = self._train.get(draw, np.empty((0, self.market.n_products)))
        if len(done) < min(n, len(X)):
            # each market's shares are computed on their own: a prefix extends bit for bit
            more = self.system.shares(X[len(done):n])
            self._train[draw] = done = np.concatenate([done, more])
        return done[:n]

    def eval_y(self, n: int) -> np.ndarray:
        """Inside shares of the evaluation markets, ``(n_eval, J)`` (the same for every ``n``).

        Parameters
        ----------
        n : int
            Sample size (the truth does not depend on it).

        Returns
        -------
        ndarray, shape (n_eval, J)

        Examples
        --------
        >>> import numpy as np
        >>> prior = DemandPrior(n_types=16, n_reference_types=16, n_eval=2, n_train=5)
        >>> truth = prior.draw([5], np.random.default_rng(0))
        >>> truth.eval_y(5).shape, bool(np.array_equal(truth.eval_y(5), truth.eval_y(50)))
        ((2, 24), True)
        """
        if self._eval is None:
            self.elasticities(n)          # the same pass sets the evaluation shares
        return cast(np.ndarray, self._eval)

    def evaluate(self, X: np.ndarray, n: int) -> np.ndarray:
        """Inside shares at any markets ``X``, ``(m, J)``.

        Parameters
        ----------
        X : array_like, shape (m, J, 3)
            Markets in raw units.
        n : int
            Sample size (unused: the truth does not depend on it).

        Returns
        -------
        ndarray, shape (m, J)

        Examples
        --------
        >>> import numpy as np
        >>> prior = DemandPrior(n_types=16, n_reference_types=16, n_eval=2, n_train=5)
        >>> truth = prior.draw([5], np.random.default_rng(0))
        >>> bool(np.array_equal(truth.evaluate(truth.eval_X, 5), truth.eval_y(5)))
        True
        """
        return self.system.shares(X)

    @property
    def log_price_steps(self) -> np.ndarray:
        """Finite-difference log-price steps of the evaluation markets, ``(n_eval, J)``."""
        if self._steps is None:
            self._steps = self.market.log_price_steps(self.eval_X)
        return self._steps

    @property
    def perturbed_eval_X(self) -> np.ndarray:
        """All price perturbations of the evaluation markets, ``(n_eval, 2, J, J, 3)``."""
        if self._perturbed is None:
            self._perturbed = perturbed_markets(self.eval_X, self.log_price_steps)
        return self._perturbed

    def elasticities(self, n: int) -> np.ndarray:
        """True price elasticities at the evaluation markets, ``E[i, j, k]``, by the kernel's
        perturbed path (computed once).

        Parameters
        ----------
        n : int
            Sample size (the truth does not depend on it).

        Returns
        -------
        ndarray, shape (n_eval, J, J)
            ``E[i, j, k] = ∂ log s_j / ∂ log p_k`` in market ``i`` by symmetric differences with
            the steps :attr:`log_price_steps`.

        Examples
        --------
        >>> import numpy as np
        >>> prior = DemandPrior(n_types=16, n_reference_types=16, n_eval=2, n_train=5)
        >>> truth = prior.draw([5], np.random.default_rng(0))
        >>> E = truth.elasticities(5)
        >>> bool((E[:, ~np.eye(24, dtype=bool)] > 0).all())   # substitutes
        True
        """
        if self._elasticities is None:
            h = self.log_price_steps
            base, minus, plus = self.system.perturbed_shares(self.eval_X, h)
            self._eval = base
            self._elasticities = elasticities_from_shares(minus, plus, h)
        return self._elasticities

    def diagnostics(self, n: int) -> dict[str, float]:
        """The mean outside share of the evaluation markets (stored with the results).

        Parameters
        ----------
        n : int
            Sample size.

        Returns
        -------
        dict of str to float
            ``{"outside_share": ...}``.

        Examples
        --------
        >>> import numpy as np
        >>> prior = DemandPrior(n_types=16, n_reference_types=16, n_eval=2, n_train=5)
        >>> truth = prior.draw([5], np.random.default_rng(0))
        >>> d = truth.diagnostics(5)
        >>> bool(np.isclose(d["outside_share"], 1 - truth.eval_y(5).sum(axis=1).mean()))
        True
        """
        return {"outside_share": float(1.0 - self.eval_y(n).sum(axis=1).mean())}

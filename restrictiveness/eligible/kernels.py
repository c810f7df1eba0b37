"""Stationary covariance kernels: Matérn-3/2, Matérn-5/2 and squared exponential.

Each kernel has a variance and a (per-dimension) length scale, evaluates covariance matrices
(``kernel(X1, X2)``), and draws random-Fourier-feature frequencies from its spectral density
(used by the demand prior, SPEC §7).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist

from ..shared.exceptions import ConfigurationError

__all__ = ["Kernel", "Matern32", "Matern52", "SquaredExponential"]


@dataclass(frozen=True)
class Kernel:
    """Base class: ``k(x, x') = variance * rho(||(x - x') / lengthscale||)``."""

    variance: float = 1.0
    lengthscale: float | tuple[float, ...] = 1.0

    def __post_init__(self) -> None:
        name = type(self).__name__
        # a (1, d) array or nested tuple was a bare TypeError at construction (or, as a tuple,
        # accepted and then a numpy broadcasting error at evaluation); () a kernel of no scale
        # (ragged nesting is an object array of shape (k,), refused below as not numbers)
        shape = np.shape(np.asarray(self.lengthscale, dtype=object))
        if len(shape) > 1 or shape == (0,):
            raise ConfigurationError(
                f"{name}: lengthscale must be one number or a flat sequence of one per "
                f"covariate, got {self.lengthscale!r} of shape {shape}")
        values = np.atleast_1d(np.asarray(self.lengthscale, dtype=object)).ravel()
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                   for v in (self.variance, *values)):  # "1" would pass float() but not math
            raise ConfigurationError(f"{name}: variance and lengthscale must be numbers, got "
                                     f"variance={self.variance!r}, "
                                     f"lengthscale={self.lengthscale!r}")
        ls = np.atleast_1d(np.asarray(self.lengthscale, dtype=float))
        if self.variance <= 0 or not np.isfinite(self.variance):
            raise ConfigurationError(f"{name}: variance must be a positive finite number")
        if (ls <= 0).any() or not np.isfinite(ls).all():
            raise ConfigurationError(f"{name}: lengthscale must be positive and finite")
        if isinstance(self.lengthscale, list | np.ndarray):
            object.__setattr__(self, "lengthscale", tuple(float(v) for v in ls))

    def _lengthscales(self, dim: int) -> np.ndarray:
        """The length scale of each of ``dim`` coordinates (refused if their number differs)."""
        ls = np.atleast_1d(np.asarray(self.lengthscale, dtype=float))
        if ls.size not in (1, dim):
            raise ConfigurationError(f"{type(self).__name__}: lengthscale has {ls.size} values "
                                     f"for {dim} covariates; give one, or one per covariate")
        return np.broadcast_to(ls, dim)

    def distance(self, X1: np.ndarray, X2: np.ndarray) -> np.ndarray:
        """Euclidean distance between rows after dividing each coordinate by its length scale.

        Parameters
        ----------
        X1, X2 : ndarray
            Points ``(n1, d)`` and ``(n2, d)`` (a single point may be 1-D).

        Returns
        -------
        ndarray
            ``(n1, n2)`` scaled distances, the argument of the kernel's correlation.

        Examples
        --------
        >>> Matern32(lengthscale=(1.0, 2.0)).distance([[0.0, 0.0]], [[3.0, 8.0]])
        array([[5.]])
        """
        ls = self._lengthscales(np.shape(np.atleast_2d(X1))[-1])
        X1 = np.atleast_2d(np.asarray(X1, dtype=float)) / ls
        X2 = np.atleast_2d(np.asarray(X2, dtype=float)) / ls
        return cdist(X1, X2)

    def correlation(self, r: np.ndarray) -> np.ndarray:  # pragma: no cover - overridden
        raise NotImplementedError

    def __call__(self, X1: np.ndarray, X2: np.ndarray | None = None) -> np.ndarray:
        """Covariance matrix between the rows of ``X1`` and ``X2`` (default ``X1``).

        Examples
        --------
        >>> import numpy as np
        >>> K = Matern32(variance=10, lengthscale=1)(np.zeros((1, 3)), np.ones((1, 3)))
        >>> r = np.sqrt(3)
        >>> bool(np.isclose(K[0, 0], 10 * (1 + np.sqrt(3) * r) * np.exp(-np.sqrt(3) * r)))
        True
        """
        r = self.distance(X1, X1 if X2 is None else X2)
        return self.variance * self.correlation(r)

    def spectral_frequencies(self, dim: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """Frequencies ``(size, dim)`` of random Fourier features for this kernel's correlation.

        ``sqrt(2 variance / size) * cos(X @ omega.T + b)`` with ``b ~ U[0, 2 pi)`` then has this
        kernel's covariance in expectation.
        """
        raise NotImplementedError


def _student_frequencies(nu: float, dim: int, size: int, rng: np.random.Generator,
                         lengthscale) -> np.ndarray:
    # Matérn-nu spectral density is multivariate Student-t with 2 nu degrees of freedom: one
    # chi-square draw is shared by all coordinates of a frequency vector (SPEC §7).
    y = rng.standard_normal((size, dim))
    c = rng.chisquare(2 * nu, size=(size, 1))
    return y * np.sqrt(2 * nu / c) / lengthscale


@dataclass(frozen=True)
class Matern32(Kernel):
    """Matérn-3/2 covariance: ``variance * (1 + sqrt(3) r) exp(-sqrt(3) r)``.

    ``r`` is the Euclidean distance after dividing each coordinate by its length scale. Draws
    are once mean-square differentiable.

    Parameters
    ----------
    variance : float
        ``k(x, x)``, positive.
    lengthscale : float or tuple of float
        One length scale, or one per covariate; positive.

    Raises
    ------
    ConfigurationError
        If the variance or a length scale is not positive and finite (and, when the kernel is
        evaluated, if the number of length scales is neither one nor the number of covariates).

    Examples
    --------
    >>> import numpy as np
    >>> k = Matern32(variance=2.0, lengthscale=0.5)
    >>> K = k(np.array([[0.0], [0.5]]))  # r = 1 between the two points
    >>> bool(np.isclose(K[0, 1], 2 * (1 + np.sqrt(3)) * np.exp(-np.sqrt(3)))), float(K[0, 0])
    (True, 2.0)
    """

    def correlation(self, r):
        """The correlation at scaled distances ``r``.

        ``rho(r) = (1 + sqrt(3) r) exp(-sqrt(3) r)``.

        Parameters
        ----------
        r : ndarray
            Distances after dividing each coordinate by its length scale.

        Returns
        -------
        ndarray
            ``rho(r)``, shaped like ``r``; ``rho(0) = 1``.

        Examples
        --------
        >>> import numpy as np
        >>> rho = Matern32().correlation(np.array([0.0, 1.0]))
        >>> float(rho[0]), bool(np.isclose(rho[1], (1 + np.sqrt(3)) * np.exp(-np.sqrt(3))))
        (1.0, True)
        """
        s = np.sqrt(3.0) * r
        return (1.0 + s) * np.exp(-s)

    def spectral_frequencies(self, dim, size, rng):
        """Draw frequencies of random Fourier features for this kernel.

        The Matérn-3/2 spectral density is multivariate Student-t with 3 degrees of freedom,
        divided coordinatewise by the length scales (SPEC §7).

        Parameters
        ----------
        dim : int
            Number of covariates.
        size : int
            Number of frequencies (features).
        rng : numpy.random.Generator
            The random stream.

        Returns
        -------
        ndarray
            Frequencies ``omega``, shape ``(size, dim)``, with ``E cos(omega . d) = rho(r)``.

        Examples
        --------
        ``E cos(omega d)`` is the correlation at distance ``d`` (here ``r = 1``):

        >>> import numpy as np
        >>> k = Matern32(lengthscale=0.5)
        >>> omega = k.spectral_frequencies(1, 200_000, np.random.default_rng(0))
        >>> round(float(np.cos(omega[:, 0] * 0.5).mean()), 2), round(float(k.correlation(1.0)), 2)
        (0.48, 0.48)
        """
        return _student_frequencies(1.5, dim, size, rng, self._lengthscales(dim))


@dataclass(frozen=True)
class Matern52(Kernel):
    """Matérn-5/2 covariance: ``variance * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)``.

    ``r`` is the Euclidean distance after dividing each coordinate by its length scale. Draws
    are twice mean-square differentiable.

    Parameters
    ----------
    variance : float
        ``k(x, x)``, positive.
    lengthscale : float or tuple of float
        One length scale, or one per covariate; positive.

    Raises
    ------
    ConfigurationError
        If the variance or a length scale is not positive and finite (and, when the kernel is
        evaluated, if the number of length scales is neither one nor the number of covariates).

    Examples
    --------
    >>> import numpy as np
    >>> k = Matern52(lengthscale=(1.0, 2.0))
    >>> K = k(np.array([[0.0, 0.0]]), np.array([[0.6, 1.6]]))  # r = sqrt(0.36 + 0.64) = 1
    >>> bool(np.isclose(K[0, 0], (1 + np.sqrt(5) + 5 / 3) * np.exp(-np.sqrt(5))))
    True
    """

    def correlation(self, r):
        """The correlation at scaled distances ``r``.

        ``rho(r) = (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)``.

        Parameters
        ----------
        r : ndarray
            Distances after dividing each coordinate by its length scale.

        Returns
        -------
        ndarray
            ``rho(r)``, shaped like ``r``; ``rho(0) = 1``.

        Examples
        --------
        >>> import numpy as np
        >>> rho = Matern52().correlation(np.array([0.0, 1.0]))
        >>> float(rho[0]), bool(np.isclose(rho[1], (1 + np.sqrt(5) + 5 / 3) * np.exp(-np.sqrt(5))))
        (1.0, True)
        """
        s = np.sqrt(5.0) * r
        return (1.0 + s + s * s / 3.0) * np.exp(-s)

    def spectral_frequencies(self, dim, size, rng):
        """Draw frequencies of random Fourier features for this kernel.

        The Matérn-5/2 spectral density is multivariate Student-t with 5 degrees of freedom,
        divided coordinatewise by the length scales (SPEC §7).

        Parameters
        ----------
        dim : int
            Number of covariates.
        size : int
            Number of frequencies (features).
        rng : numpy.random.Generator
            The random stream.

        Returns
        -------
        ndarray
            Frequencies ``omega``, shape ``(size, dim)``, with ``E cos(omega . d) = rho(r)``.

        Examples
        --------
        ``E cos(omega d)`` is the correlation at distance ``d`` (here ``r = 1``):

        >>> import numpy as np
        >>> k = Matern52(lengthscale=0.5)
        >>> omega = k.spectral_frequencies(1, 200_000, np.random.default_rng(0))
        >>> round(float(np.cos(omega[:, 0] * 0.5).mean()), 2), round(float(k.correlation(1.0)), 2)
        (0.52, 0.52)
        """
        return _student_frequencies(2.5, dim, size, rng, self._lengthscales(dim))


@dataclass(frozen=True)
class SquaredExponential(Kernel):
    """Squared-exponential covariance: ``variance * exp(-r^2 / 2)``.

    ``r`` is the Euclidean distance after dividing each coordinate by its length scale. Draws
    are infinitely differentiable.

    Parameters
    ----------
    variance : float
        ``k(x, x)``, positive.
    lengthscale : float or tuple of float
        One length scale, or one per covariate; positive.

    Raises
    ------
    ConfigurationError
        If the variance or a length scale is not positive and finite (and, when the kernel is
        evaluated, if the number of length scales is neither one nor the number of covariates).

    Examples
    --------
    >>> import numpy as np
    >>> K = SquaredExponential(variance=3.0)(np.zeros((1, 2)), np.array([[1.0, 1.0]]))
    >>> bool(np.isclose(K[0, 0], 3 * np.exp(-1.0)))  # r^2 = 2
    True
    """

    def correlation(self, r):
        """The correlation at scaled distances ``r``.

        ``rho(r) = exp(-r^2 / 2)``.

        Parameters
        ----------
        r : ndarray
            Distances after dividing each coordinate by its length scale.

        Returns
        -------
        ndarray
            ``rho(r)``, shaped like ``r``; ``rho(0) = 1``.

        Examples
        --------
        >>> import numpy as np
        >>> rho = SquaredExponential().correlation(np.array([0.0, 1.0]))
        >>> float(rho[0]), bool(np.isclose(rho[1], np.exp(-0.5)))
        (1.0, True)
        """
        return np.exp(-0.5 * r * r)

    def spectral_frequencies(self, dim, size, rng):
        """Draw frequencies of random Fourier features for this kernel.

        The squared-exponential spectral density is normal with standard deviation
        ``1 / lengthscale`` in each coordinate.

        Parameters
        ----------
        dim : int
            Number of covariates.
        size : int
            Number of frequencies (features).
        rng : numpy.random.Generator
            The random stream.

        Returns
        -------
        ndarray
            Frequencies ``omega``, shape ``(size, dim)``, with ``E cos(omega . d) = rho(r)``.

        Examples
        --------
        ``E cos(omega d)`` is the correlation at distance ``d`` (here ``r = 1``):

        >>> import numpy as np
        >>> k = SquaredExponential(lengthscale=0.5)
        >>> omega = k.spectral_frequencies(1, 200_000, np.random.default_rng(0))
        >>> round(float(np.cos(omega[:, 0] * 0.5).mean()), 2), round(float(k.correlation(1.0)), 2)
        (0.61, 0.61)
        """
        return rng.standard_normal((size, dim)) / self._lengthscales(dim)

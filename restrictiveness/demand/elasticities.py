"""Discrepancies of the demand application: shares, own- and cross-price elasticities (SPEC §7).

All three average over the evaluation markets (weighted by ``truth.eval_weights``):

* ``"shares"`` — mean squared error of the J inside shares;
* ``"own"`` — mean squared error of the J own-price elasticities;
* ``"cross"`` — mean squared error of the J (J − 1) cross-price elasticities.

Elasticities are symmetric finite differences in log price,
``E_jk = [log g_j(X^{+k}) − log g_j(X^{−k})] / (2 h_k)`` with ``X^{±k}`` setting ``p_k`` to
``p_k e^{±h_k}`` and ``h_k = min{0.01, ½ log(U_k/p_k), ½ log(p_k/L_k)}`` (so both perturbed
prices stay in the hull). The fitted rule's elasticities come from one ``predict`` call on all
``2 J`` perturbed copies of every evaluation market and the markets themselves; the truth's
come from the share kernel's perturbed path and are cached on the pseudo-truth, so the
discrepancies share them across procedures.

Failure protocol: in a market where the rule's shares are not valid (non-finite or not
positive, or replaced by the study's failure protocol) at the market itself or at some perturbed
price vector, its elasticities are those of the common-intercept baseline, zero (SPEC §7: invalid
share predictions get the fitted baseline's shares *and* elasticities).
"""

from __future__ import annotations

import contextlib
import weakref

import numpy as np

from ..eligible.truth import PseudoTruth
from ..engine.discrepancies import Discrepancy, matching
from ..shared.exceptions import ConfigurationError, DomainError
from .markets import elasticities_from_shares, perturbed_markets

__all__ = ["SharesMSE", "OwnElasticityMSE", "CrossElasticityMSE", "rule_elasticities",
           "truth_elasticities", "price_steps"]


def price_steps(truth: PseudoTruth) -> np.ndarray:
    """Log-price steps of the truth's evaluation markets, ``(n_eval, J)`` (cached on ``truth``).

    Uses ``truth.log_price_steps`` when the truth provides it, otherwise the hull of
    ``truth.market`` (a :class:`~restrictiveness.demand.markets.MarketDistribution`).

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness.demand.prior import DemandPrior
    >>> truth = DemandPrior(n_types=16, n_eval=2, n_train=5).draw([5], np.random.default_rng(0))
    >>> h = price_steps(truth)
    >>> h.shape, bool((h > 0).all() and (h <= 0.01).all())
    ((2, 24), True)
    """
    steps = getattr(truth, "log_price_steps", None)
    if steps is not None:
        return steps
    cache = truth.__dict__.setdefault("_demand_cache", {})
    if "steps" not in cache:
        market = getattr(truth, "market", None)
        if market is None:
            raise ConfigurationError("elasticity discrepancies need a truth with a `market` "
                                     "(MarketDistribution) to find feasible price steps")
        cache["steps"] = market.log_price_steps(truth.eval_X)
    return cache["steps"]


def _perturbed(truth: PseudoTruth) -> np.ndarray:
    P = getattr(truth, "perturbed_eval_X", None)
    if P is not None:
        return P
    cache = truth.__dict__.setdefault("_demand_cache", {})
    if "perturbed" not in cache:
        cache["perturbed"] = perturbed_markets(truth.eval_X, price_steps(truth))
    return cache["perturbed"]


def rule_elasticities(rule, X: np.ndarray, h: np.ndarray,
                      perturbed: np.ndarray | None = None) -> np.ndarray:
    """Finite-difference elasticities ``E[i, j, k]`` of a share rule at markets ``X``.

    Parameters
    ----------
    rule : object with ``predict(X) -> (m, J)``
        A fitted share function.
    X : ndarray, shape (n, J, 3)
        Markets (raw units).
    h : ndarray, shape (n, J)
        Log-price steps.
    perturbed : ndarray, optional
        ``perturbed_markets(X, h)`` if already built.

    Returns
    -------
    ndarray, shape (n, J, J)
        Markets whose predictions are invalid at the market itself or at a perturbed copy get
        zeros (the baseline's elasticities).

    Examples
    --------
    >>> import numpy as np
    >>> class Logit:  # plain logit, utility -2 * price: E_jj = -2 p_j (1 - s_j)
    ...     def predict(self, X):
    ...         e = np.exp(-2 * X[..., 0])
    ...         return e / (1 + e.sum(axis=-1, keepdims=True))
    >>> X = np.stack([np.array([[1.0, 0, 0], [2.0, 0, 0]])])
    >>> E = rule_elasticities(Logit(), X, np.full((1, 2), 1e-4))
    >>> s = Logit().predict(X)[0]
    >>> bool(np.allclose(np.diag(E[0]), -2 * X[0, :, 0] * (1 - s), atol=1e-6))
    True
    """
    X = np.asarray(X, dtype=float)
    n, J, d = X.shape
    h = np.asarray(h, dtype=float)
    if h.shape != (n, J) or not (np.isfinite(h) & (h > 0)).all():
        # a zero step (a price on its hull's edge) made every elasticity of the market NaN
        raise DomainError(f"rule_elasticities: h must hold positive finite log-price steps of "
                          f"shape {(n, J)} (MarketDistribution.log_price_steps), got shape "
                          f"{h.shape} with {int((~(np.isfinite(h) & (h > 0))).sum())} invalid")
    P = perturbed_markets(X, h) if perturbed is None else perturbed
    m = n * 2 * J
    # The markets themselves ride along (after the perturbed copies): a market whose own shares
    # are invalid gets the baseline's shares in the share loss, so it gets its elasticities too.
    both = np.asarray(rule.predict(np.concatenate([P.reshape(m, J, d), X])), dtype=float)
    rows = both.reshape(m + n, J)
    valid = np.isfinite(rows).all(axis=1) & (rows > 0).all(axis=1)
    # Under the failure protocol a replaced row holds the baseline's shares; differencing it
    # against the rule's would be meaningless, so such a market gets the baseline's (zero)
    # elasticities as a whole.
    replaced = getattr(rule, "last_replaced", None)
    if replaced is not None:
        valid &= ~np.asarray(replaced, dtype=bool).reshape(m + n)
    ok = valid[:m].reshape(n, 2 * J).all(axis=1) & valid[m:]
    pred = np.where(ok[:, None, None, None], both[:m].reshape(n, 2, J, J), 1.0)
    return elasticities_from_shares(pred[:, 0], pred[:, 1], h)


def truth_elasticities(truth: PseudoTruth, n: int) -> np.ndarray:
    """The truth's elasticities at its evaluation markets, ``(n_eval, J, J)``, cached.

    Uses ``truth.elasticities(n)`` when the truth provides it (the demand prior's kernel path),
    otherwise finite differences of ``truth.evaluate`` memoised on the truth object.

    Examples
    --------
    >>> import numpy as np
    >>> from restrictiveness.demand.prior import DemandPrior
    >>> truth = DemandPrior(n_types=16, n_eval=2, n_train=5).draw([5], np.random.default_rng(0))
    >>> truth_elasticities(truth, 5) is truth_elasticities(truth, 5)
    True
    """
    if hasattr(truth, "elasticities"):
        return truth.elasticities(n)
    cache = truth.__dict__.setdefault("_demand_cache", {})
    key = ("elasticities", n)
    if key not in cache:

        class _Truth:
            def predict(self, X):
                return truth.evaluate(X, n)

        cache[key] = rule_elasticities(_Truth(), truth.eval_X, price_steps(truth),
                                       _perturbed(truth))
    return cache[key]


#: The elasticities last computed for each rule: ``rule -> (truth, fit id, elasticities)``.
#: The own- and cross-price losses of a fit share one computation (2J + 1 predictions per
#: market: 0.13 s of a mixed logit's 1 s fit); an entry goes with its rule.
_RULE_ELASTICITIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _shared_rule_elasticities(rule, truth: PseudoTruth) -> np.ndarray:
    """:func:`rule_elasticities` at the truth's evaluation markets, computed once per rule and
    truth. The rule's fit is part of the key: a rule of the failure protocol whose fit failed
    in between predicts the baseline's shares. Rules that cannot be weakly referenced or
    hashed are computed each time."""
    fit = id(getattr(rule, "fitted", rule))
    try:
        hit = _RULE_ELASTICITIES.get(rule)
    except TypeError:
        hit = None
    if hit is not None and hit[0]() is truth and hit[1] == fit:
        return hit[2]
    E = rule_elasticities(rule, truth.eval_X, price_steps(truth), _perturbed(truth))
    with contextlib.suppress(TypeError):
        _RULE_ELASTICITIES[rule] = (weakref.ref(truth), fit, E)
    return E


def _weighted(err: np.ndarray, truth: PseudoTruth) -> float:
    return float(truth.eval_weights @ err)


class SharesMSE(Discrepancy):
    """Mean squared error of the inside shares, averaged over the evaluation markets.

    Examples
    --------
    >>> SharesMSE().name
    'shares'
    """

    name = "shares"

    def __call__(self, rule, truth: PseudoTruth, n: int) -> float:
        y = np.asarray(truth.eval_y(n), dtype=float)
        pred = matching(rule.predict(truth.eval_X), y, self.name)
        err = ((pred - y) ** 2).reshape(len(pred), -1).mean(axis=1)
        return _weighted(err, truth)

    def scale(self, truth: PseudoTruth, n: int) -> float:
        """Mean squared true share (the loss of predicting zero shares).

        Parameters
        ----------
        truth : PseudoTruth
            The pseudo-truth (markets at ``eval_X``, inside shares from ``eval_y(n)``).
        n : int
            Training sample size.

        Returns
        -------
        float
            The weighted mean over markets of the mean squared inside share.

        Examples
        --------
        >>> import numpy as np
        >>> from types import SimpleNamespace
        >>> truth = SimpleNamespace(eval_weights=np.array([1.0]),
        ...                         eval_y=lambda n: np.array([[0.2, 0.4]]))
        >>> round(SharesMSE().scale(truth, n=10), 12)  # (0.2² + 0.4²) / 2
        0.1
        """
        y = np.asarray(truth.eval_y(n), dtype=float)
        return _weighted((y ** 2).reshape(len(y), -1).mean(axis=1), truth)


class _ElasticityMSE(Discrepancy):
    own: bool

    def _mask(self, J: int) -> np.ndarray:
        if not self.own and J < 2:  # the mean over no entries was NaN, blamed on the baseline
            raise ConfigurationError(f"{self.name}: cross-price elasticities need at least two "
                                     f"products per market; these markets have {J}")
        return np.eye(J, dtype=bool) if self.own else ~np.eye(J, dtype=bool)

    def __call__(self, rule, truth: PseudoTruth, n: int) -> float:
        E_true = truth_elasticities(truth, n)
        E_rule = _shared_rule_elasticities(rule, truth)
        err = ((E_rule - E_true)[:, self._mask(E_true.shape[-1])] ** 2).mean(axis=1)
        return _weighted(err, truth)

    def scale(self, truth: PseudoTruth, n: int) -> float:
        """Mean squared true elasticity (the loss of predicting zero elasticities).

        Parameters
        ----------
        truth : PseudoTruth
            The pseudo-truth (its elasticities at the evaluation markets).
        n : int
            Training sample size.

        Returns
        -------
        float
            The weighted mean over markets of the mean squared own (or cross) elasticity.

        Examples
        --------
        >>> import numpy as np
        >>> from types import SimpleNamespace
        >>> E = np.array([[[-2.0, 0.5], [0.3, -1.0]]])      # one market, J = 2
        >>> truth = SimpleNamespace(eval_weights=np.array([1.0]), elasticities=lambda n: E)
        >>> OwnElasticityMSE().scale(truth, n=10)              # ((-2)² + (-1)²) / 2
        2.5
        >>> round(CrossElasticityMSE().scale(truth, n=10), 12)  # (0.5² + 0.3²) / 2
        0.17
        """
        E_true = truth_elasticities(truth, n)
        return _weighted((E_true[:, self._mask(E_true.shape[-1])] ** 2).mean(axis=1), truth)


class OwnElasticityMSE(_ElasticityMSE):
    """Mean squared error of the J own-price elasticities, averaged over evaluation markets.

    Examples
    --------
    >>> OwnElasticityMSE().name
    'own'
    """

    name = "own"
    own = True


class CrossElasticityMSE(_ElasticityMSE):
    """Mean squared error of the J (J − 1) cross-price elasticities, averaged over evaluation
    markets.

    Examples
    --------
    >>> CrossElasticityMSE().name
    'cross'
    """

    name = "cross"
    own = False

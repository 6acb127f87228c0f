"""The effectiveness predictor p_eff: P(a group of k is mixed | n rollouts, s successes), exactly.

Beta(a0, b0) prior on the prompt's success rate; after n rollouts with s successes the posterior is
Beta(a0 + s, b0 + n - s).  With m = k - n rollouts to come:

* mixed prefix (0 < s < n):   p_eff = 1
* all-fail prefix (s = 0 < n): p_eff = 1 - P(the m others fail too)  = 1 - B(a0, b0+k) / B(a0, b0+n)
* all-pass prefix (s = n > 0): p_eff = 1 - B(a0+k, b0) / B(a0+n, b0)
* empty prefix (n = 0):        p_eff = 1 - P(all fail) - P(all pass)

Why a tail sum instead of lgamma differences: B(a, b+n)/B(a, b+k) = prod_{j=n}^{k-1} (1 + a/(b+j)),
so -log P(rest fail) = S = sum_j log1p(a/(b+j)), a sum of positive terms (relative error ~1e-13 even
for k = 10_000 and a0 = 1e-3).  The lgamma form loses ~|lgamma(k)| * eps absolute error, which is
too much when S is small; we use it only when its error estimate is below 1e-11 * S.

>>> round(float(p_eff(2, 0, 8)), 12)      # uniform prior: (k - n) / (k + 1)
0.666666666667
>>> float(p_eff(3, 1, 8))                  # mixed prefix
1.0
>>> round(float(p_eff(0, 0, 2)), 12)       # uniform prior, empty prefix: 1 - 2/(k+1)
0.333333333333
"""

import math

import numpy as np
from numba import njit, vectorize

from .errors import K_LIMIT, ParameterError, check_prior

_EPS = 2.220446049250313e-16


@njit(cache=True)
def log_tail(a, b, n, k):
    """S = sum_{j=n}^{k-1} log1p(a / (b + j)) = log B(a, b+n) - log B(a, b+k) >= 0.

    exp(-S) is the posterior-predictive probability that rollouts n+1..k all fail after n fails
    (prior Beta(a, b)); swap a and b for the all-pass side."""
    m = k - n
    if m <= 0:
        return 0.0
    if m > 32:
        # O(1) lgamma form, used only when its absolute error is negligible against S.
        t1 = math.lgamma(a + b + k)
        t2 = math.lgamma(b + k)
        t3 = math.lgamma(a + b + n)
        t4 = math.lgamma(b + n)
        s_lg = (t1 - t2) - (t3 - t4)
        err = 8.0 * _EPS * (abs(t1) + abs(t2) + abs(t3) + abs(t4) + 1.0)
        if s_lg > 0.0 and err <= 1e-11 * s_lg:
            return s_lg
    total = 0.0
    for j in range(k - 1, n - 1, -1):  # small terms first
        total += math.log1p(a / (b + j))
    return total


@njit(cache=True)
def p_eff_jit(n, s, k, a0, b0):
    """Jitted scalar p_eff (no validation; NaN for an impossible state). Kernels call this."""
    if k < 1 or n < 0 or s < 0 or s > n or n > k:
        return math.nan
    if 0 < s < n:
        return 1.0
    if n == 0:
        sf = log_tail(a0, b0, 0, k)
        sp = log_tail(b0, a0, 0, k)
        # 1 - P(all fail) - P(all pass); subtract the smaller from the accurate complement.
        if sf <= sp:
            p = -math.expm1(-sf) - math.exp(-sp)
        else:
            p = -math.expm1(-sp) - math.exp(-sf)
        return p if p > 0.0 else 0.0
    if s == 0:
        return -math.expm1(-log_tail(a0, b0, n, k))
    return -math.expm1(-log_tail(b0, a0, n, k))


@vectorize(["float64(int64, int64, int64, float64, float64)"], cache=True)
def p_eff_ufunc(n, s, k, a0, b0):
    """numpy ufunc form of p_eff_jit (broadcasts over arrays)."""
    return p_eff_jit(n, s, k, a0, b0)


def p_eff(n, s, k, alpha0=1.0, beta0=1.0):
    """Posterior-predictive probability that the full group of k is mixed (validated; arrays ok).

    >>> [round(float(x), 4) for x in p_eff(np.arange(1, 9), 0, 8)]
    [0.7778, 0.6667, 0.5556, 0.4444, 0.3333, 0.2222, 0.1111, 0.0]
    """
    arrays = []
    for name, x in (("n", n), ("s", s), ("k", k)):
        x = np.asarray(x)
        ok = np.issubdtype(x.dtype, np.integer)
        if not ok and np.issubdtype(x.dtype, np.floating):  # integral floats: 8.0 is 8
            ok = bool(np.all(np.isfinite(x)) and np.all(x == np.round(x)))
        if not ok:  # bool, strings, objects, nan, 2.5
            raise ParameterError(name, f"must be integers, got {x!r}")
        if x.size and np.abs(x).max() > K_LIMIT:
            raise ParameterError(name, f"must be integers <= 2**53, got {x!r}")
        arrays.append(x)
    n, s, k = arrays
    if np.any(k < 1):
        raise ParameterError("k", f"must be >= 1, got {k!r}")
    if np.any(n < 0) or np.any(n > k):
        raise ParameterError("n", "must satisfy 0 <= n <= k")
    if np.any(s < 0) or np.any(s > n):
        raise ParameterError("s", "must satisfy 0 <= s <= n")
    a0, b0 = check_prior((alpha0, beta0), "alpha0/beta0")
    out = p_eff_ufunc(n.astype(np.int64), s.astype(np.int64), k.astype(np.int64), a0, b0)
    return out[()] if np.ndim(out) == 0 else out

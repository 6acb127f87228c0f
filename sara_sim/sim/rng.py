"""A small, explicit random generator for the Numba kernels, and exact samplers on top of it.

Each replicate owns one xoshiro256++ state (four uint64 words, ``rng[r]``), seeded from the run's
seed and the replicate index by ``numpy.random.SeedSequence`` and carried from step to step — one
deterministic sequence per replicate, independent of thread count or scheduling, so results are
bit-for-bit reproducible given the seed.  (Numba's built-in generator keeps hidden per-thread
state, which ``prange`` would scramble.)

Samplers (all exact): ``uniform``; ``beta`` (Joehnk for a, b < 1, else a ratio of Marsaglia–Tsang
gammas; uniform for Beta(1, 1)); ``binomial`` (direct for n <= 16, inversion for n p < 10,
Hoermann's BTRS transformed rejection otherwise — O(1) expected work for any n); ``urn_draw``
(without replacement); ``shuffle``.

>>> a, b = seed_state(3, 1), seed_state(3, 1)
>>> draws = [int(binomial(a, 1000, 0.5)) for _ in range(3)]
>>> draws == [int(binomial(b, 1000, 0.5)) for _ in range(3)]
True
>>> 0.0 <= uniform(a) < 1.0
True
"""

import math

import numpy as np
from numba import njit
from scipy.special import gammaln

_R23, _R41, _R45, _R19 = np.uint64(23), np.uint64(41), np.uint64(45), np.uint64(19)
_S17, _S11 = np.uint64(17), np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53
_LOGFACT = gammaln(np.arange(256) + 1.0)  # log n! for n < 256 (a compile-time constant)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def seed_state(seed, replicate):
    """The xoshiro256++ state of one replicate (uint64[4])."""
    return np.random.SeedSequence([int(seed), int(replicate)]).generate_state(4, np.uint64)


def seed_states(seed, replicates):
    return np.stack([seed_state(seed, r) for r in range(replicates)]).astype(np.uint64)


@njit(cache=True, inline="always")
def next_u64(s):
    s0, s1, s2, s3 = s[0], s[1], s[2], s[3]
    t0 = s0 + s3
    out = ((t0 << _R23) | (t0 >> _R41)) + s0
    t = s1 << _S17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << _R45) | (s3 >> _R19)
    s[0], s[1], s[2], s[3] = s0, s1, s2, s3
    return out


@njit(cache=True, inline="always")
def uniform(s):
    """U[0, 1) with 53 random bits."""
    return (next_u64(s) >> _S11) * _TO_UNIT


@njit(cache=True)
def randint(s, n):
    """Uniform integer in [0, n) (n >= 1; bias < 2^-53 n, immaterial here)."""
    return min(int(uniform(s) * n), n - 1)


@njit(cache=True)
def shuffle(s, a):
    for i in range(len(a) - 1, 0, -1):
        j = randint(s, i + 1)
        a[i], a[j] = a[j], a[i]


@njit(cache=True)
def normal(s):
    """Standard normal (Marsaglia's polar method)."""
    while True:
        u = 2.0 * uniform(s) - 1.0
        v = 2.0 * uniform(s) - 1.0
        q = u * u + v * v
        if 0.0 < q < 1.0:
            return u * math.sqrt(-2.0 * math.log(q) / q)


@njit(cache=True)
def gamma_variate(s, a):
    """Gamma(a, 1) draw for a >= 1 (Marsaglia–Tsang; the squeeze accepts ~98% at once)."""
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = normal(s)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(s)
        if u < 1.0 - 0.0331 * x * x * x * x:
            return d * v
        if u > 0.0 and math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v


@njit(cache=True)
def _log_gamma_variate(s, a):
    """log of a Gamma(a, 1) draw, any a > 0 (log space: tiny shapes do not underflow)."""
    if a >= 1.0:
        return math.log(gamma_variate(s, a))
    return math.log(gamma_variate(s, a + 1.0)) + math.log(1.0 - uniform(s)) / a


@njit(cache=True)
def beta(s, a, b):
    """Beta(a, b) draw."""
    if a == 1.0 and b == 1.0:
        return uniform(s)
    if a < 1.0 and b < 1.0:  # Joehnk: U^(1/a) / (U^(1/a) + V^(1/b)) given the sum <= 1
        while True:
            x = math.exp(math.log(1.0 - uniform(s)) / a)
            y = math.exp(math.log(1.0 - uniform(s)) / b)
            if x + y <= 1.0:
                if x + y > 1e-300:
                    return x / (x + y)
                break  # both underflowed (shapes ~1e-3): redo in log space
    if a >= 1.0 and b >= 1.0:
        x = gamma_variate(s, a)
        return x / (x + gamma_variate(s, b))
    lx = _log_gamma_variate(s, a)
    ly = _log_gamma_variate(s, b)
    return 1.0 / (1.0 + math.exp(ly - lx))


@njit(cache=True)
def log_factorial(n):
    if n < 256:
        return _LOGFACT[n]
    x = n + 1.0  # Stirling series for lgamma(x), x >= 257: error < 1e-16 relative
    return (x - 0.5) * math.log(x) - x + _HALF_LOG_2PI + 1.0 / (12.0 * x) - 1.0 / (360.0 * x**3)


@njit(cache=True)
def _binv(s, n, p):
    """Inversion, p <= 0.5 and n p < 10 (one uniform, O(n p) steps)."""
    q = 1.0 - p
    ratio = p / q
    a = (n + 1) * ratio
    r0 = math.exp(n * math.log1p(-p))
    while True:
        u = uniform(s)
        r = r0
        x = 0
        while u > r:
            u -= r
            x += 1
            if x > n:
                break
            r *= a / x - ratio
        if x <= n:
            return x


@njit(cache=True)
def _btrs(s, n, p):
    """Transformed rejection with squeeze (Hoermann 1993, BTRS); p <= 0.5, n p >= 10."""
    q = 1.0 - p
    spq = math.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / q)
    m = int(math.floor((n + 1) * p))
    h = log_factorial(m) + log_factorial(n - m)
    while True:
        u = uniform(s) - 0.5
        v = uniform(s)
        us = 0.5 - abs(u)
        x = int(math.floor((2.0 * a / us + b) * u + c))
        if x < 0 or x > n:
            continue
        if us >= 0.07 and v <= v_r:
            return x
        if v <= 0.0:
            continue
        lv = math.log(v * alpha / (a / (us * us) + b))
        if lv <= h - log_factorial(x) - log_factorial(n - x) + (x - m) * lpq:
            return x


@njit(cache=True)
def binomial(s, n, p):
    """Exact Binomial(n, p) draw, O(1) expected work for any n."""
    if n <= 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    if n <= 16:
        x = 0
        for _ in range(n):
            if uniform(s) < p:
                x += 1
        return x
    flip = p > 0.5
    pp = 1.0 - p if flip else p
    x = _binv(s, n, pp) if n * pp < 10.0 else _btrs(s, n, pp)
    return n - x if flip else x


@njit(cache=True)
def urn_draw(s, good, total, m):
    """Successes among m draws without replacement from `good` successes among `total`."""
    x = 0
    for _ in range(m):
        if good <= 0:
            break
        if uniform(s) * total < good:
            x += 1
            good -= 1
        total -= 1
    return x

"""p_eff against brute-force Beta-Binomial enumeration and a 50-digit reference."""

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sara_sim import ParameterError, p_eff


def brute_p_eff(k, a0, b0):
    """P(the full group is mixed | prefix) for every prefix (n, s) of a group of k, from the
    Beta-Binomial law of the k - n rollouts to come: (n, s, p) arrays, one entry per state."""
    n, s = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
    keep = s <= n
    n, s = n[keep], s[keep]
    x = np.arange(k + 1)  # successes among the rollouts to come (beyond k - n: probability 0)
    m = (k - n)[:, None]
    pmf = stats.betabinom.pmf(x, m, a0 + s[:, None], b0 + (n - s)[:, None])
    total = s[:, None] + x
    return n, s, np.sum(np.where((x <= m) & (total > 0) & (total < k), pmf, 0.0), axis=1)


def test_p_eff_matches_betabinom_for_every_state_up_to_64():
    rng = np.random.default_rng(7)
    priors = [(1.0, 1.0)] + [tuple(np.exp(rng.uniform(-3, 3, 2))) for _ in range(4)]
    worst = 0.0
    for a0, b0 in priors:
        for k in range(2, 65):
            n, s, want = brute_p_eff(k, a0, b0)
            got = p_eff(n, s, k, a0, b0)
            worst = max(worst, float(np.max(np.abs(got - want))))
    assert worst < 1e-10, worst


def test_uniform_prior_all_fail_identity():
    for k in (2, 8, 64, 1000):
        n = np.arange(1, k + 1)
        np.testing.assert_allclose(p_eff(n, 0, k), (k - n) / (k + 1), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(p_eff(n, n, k), (k - n) / (k + 1), rtol=1e-13, atol=1e-15)


def _reference(n, s, k, a, b):
    a, b = mp.mpf(a), mp.mpf(b)
    if 0 < s < n:
        return mp.mpf(1)
    if n == 0:
        return 1 - mp.beta(a, b + k) / mp.beta(a, b) - mp.beta(a + k, b) / mp.beta(a, b)
    aa, bb, m = a + s, b + n - s, k - n
    if s == 0:
        return 1 - mp.beta(aa, bb + m) / mp.beta(aa, bb)
    return 1 - mp.beta(aa + m, bb) / mp.beta(aa, bb)


def test_high_precision_up_to_k_10000_and_tiny_priors():
    mp.mp.dps = 50
    worst = 0.0
    priors = [(1e-3, 1e-3), (1e-3, 1.0), (1.0, 1e-3), (1.0, 1.0), (50.0, 3.0), (0.3, 700.0)]
    for a0, b0 in priors:
        for k in (2, 8, 33, 100, 1000, 10_000):
            for n in sorted({min(x, k) for x in (0, 1, 2, 5, k // 3, k - 1, k)}):
                for s in {0, n}:
                    ref = float(_reference(n, s, k, a0, b0))
                    got = float(p_eff(n, s, k, a0, b0))
                    if ref == 0.0:
                        assert got == 0.0
                        continue
                    worst = max(worst, abs(got - ref) / ref)
    assert worst < 1e-9, worst


@settings(max_examples=200, deadline=None)
@given(
    k=st.integers(2, 300),
    a0=st.floats(1e-3, 100.0),
    b0=st.floats(1e-3, 100.0),
)
def test_properties_unit_interval_and_monotone_along_unmixed_prefixes(k, a0, b0):
    n = np.arange(0, k + 1)
    for s in (np.zeros_like(n), n):
        v = p_eff(n, s, k, a0, b0)
        assert np.all((v >= 0.0) & (v <= 1.0))
        assert np.all(np.diff(v[1:]) <= 1e-15)  # falls as the prefix grows
        assert v[-1] == 0.0  # a full unmixed group is saturated


@pytest.mark.parametrize(
    "args, name",
    [
        ((3, 4, 8), "s"),
        ((9, 0, 8), "n"),
        ((-1, 0, 8), "n"),
        ((2, 0, 0), "k"),
        ((1.5, 0, 8), "n"),
        ((2, 0, 8, 0.0, 1.0), "alpha0/beta0"),
        ((2, 0, 8, 1.0, float("nan")), "alpha0/beta0"),
    ],
)
def test_bad_input_names_the_parameter(args, name):
    with pytest.raises(ParameterError) as info:
        p_eff(*args)
    assert info.value.parameter == name

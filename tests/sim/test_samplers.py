"""The kernels' random sources are exact: samplers and run-length summaries against their laws."""

import numpy as np
import pytest
from numba import njit
from scipy import stats

from sara_sim.sim.rng import beta, binomial, seed_state, urn_draw
from sara_sim.sim.sources import run_rate, run_urn


@njit(cache=True)
def _binomials(rs, m, p, n):
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = binomial(rs, m, p)
    return out


@njit(cache=True)
def _betas(rs, a, b, n):
    out = np.empty(n)
    for i in range(n):
        out[i] = beta(rs, a, b)
    return out


@njit(cache=True)
def _runs(rs, g, k, n):
    out = np.empty((n, 2), np.int64)
    for i in range(n):
        out[i, 0], out[i, 1] = run_rate(rs, g, k)
    return out


@njit(cache=True)
def _urn_runs(rs, c, total, k, n):
    out = np.empty((n, 3), np.int64)
    for i in range(n):
        o, run, cl, nl = run_urn(rs, c, total, k)
        out[i, 0], out[i, 1] = o, run
        out[i, 2] = o * run + (1 - o if run < k else 0) + urn_draw(rs, cl, nl, k - min(run + 1, k))
    return out


def chi2_pvalue(counts, probs):
    exp = probs * counts.sum()
    keep = exp > 5
    chi = ((counts[keep] - exp[keep]) ** 2 / exp[keep]).sum()
    return stats.chi2.sf(chi, keep.sum() - 1)


@pytest.mark.parametrize(
    "m,p", [(6, 0.3), (16, 0.9), (30, 0.2), (120, 0.3), (1000, 0.5), (5000, 0.999), (128, 0.05)]
)
def test_binomial_is_exact(m, p):
    x = _binomials(seed_state(1, m), m, p, 200_000)
    counts = np.bincount(x, minlength=m + 1)
    assert chi2_pvalue(counts, stats.binom.pmf(np.arange(m + 1), m, p)) > 1e-4


@pytest.mark.parametrize(
    "a,b", [(1.0, 1.0), (0.3, 0.3), (0.5, 2.0), (2.0, 3.0), (0.2, 0.3), (5.0, 0.7)]
)
def test_beta_is_exact(a, b):
    x = _betas(seed_state(2, 0), a, b, 100_000)
    assert np.all((x >= 0) & (x <= 1))
    assert stats.kstest(x, stats.beta(a, b).cdf).pvalue > 1e-4


def test_beta_with_tiny_shapes_does_not_underflow():
    """Shapes ~1e-2: most draws sit within 1e-13 of 0 or 1 (many round to 1.0 exactly)."""
    a, b = 0.01, 0.02
    x = _betas(seed_state(2, 1), a, b, 200_000)
    assert not np.isnan(x).any()
    p_hi = stats.beta(a, b).sf(0.5)
    assert abs((x > 0.5).mean() - p_hi) < 4 * np.sqrt(p_hi * (1 - p_hi) / len(x))
    lo = x[x < 0.5]  # the lower tail in log space: P(X < t) = t^a / (a B(a, b)) near 0
    t = 1e-40
    assert abs((lo < t).mean() * len(lo) / len(x) - stats.beta(a, b).cdf(t)) < 0.01


@pytest.mark.parametrize("g,k", [(0.3, 8), (0.02, 64), (0.97, 128), (0.5, 4)])
def test_run_length_is_the_opening_run_of_bernoulli_draws(g, k):
    runs = _runs(seed_state(3, k), g, k, 200_000)
    o, run = runs[:, 0], runs[:, 1]
    assert abs(o.mean() - g) < 4 * np.sqrt(g * (1 - g) / len(o))
    for side, q in ((1, g), (0, 1 - g)):
        r = run[o == side]
        ell = np.arange(1, k + 1)
        pmf = np.where(ell < k, q ** (ell - 1) * (1 - q), q ** (k - 1))
        assert chi2_pvalue(np.bincount(r, minlength=k + 1)[1:], pmf) > 1e-4


@pytest.mark.parametrize("c,total,k", [(3, 8, 8), (0, 8, 4), (8, 8, 8), (5, 8, 6)])
def test_urn_run_and_fill_are_draws_without_replacement(c, total, k):
    rng = np.random.default_rng(0)
    ref = np.array(
        [rng.permutation(np.r_[np.ones(c), np.zeros(total - c)])[:k] for _ in range(100_000)]
    )
    got = _urn_runs(seed_state(4, c), c, total, k, 100_000)
    first_ref = ref[:, 0]
    run_ref = np.array([np.argmax(r != r[0]) if (r != r[0]).any() else k for r in ref])
    for col, a, b in (
        (0, got[:, 0], first_ref),
        (1, got[:, 1], run_ref),
        (2, got[:, 2], ref.sum(axis=1)),
    ):
        ca, cb = (
            np.bincount(a.astype(int), minlength=k + 1),
            np.bincount(b.astype(int), minlength=k + 1),
        )
        table = np.array([ca, cb])
        table = table[:, table.sum(axis=0) > 0]
        if table.shape[1] > 1:
            assert stats.chi2_contingency(table)[1] > 1e-4, col

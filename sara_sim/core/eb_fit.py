"""The empirical-Bayes prior: the Beta(a, b) maximising the beta-binomial likelihood of decided
prompts' (successes, trials), weighted by how often each pair occurs — one solver for the
simulator's refits (``sim.strategies.fit_prior_counts``), the collectors' and the informed
priors' (``difficulty.fit_beta_binomial``).

Projected Newton in log space on the box log a, log b in [-7, 7], with a trust region and a
backtracking line search. Every operation is element-wise or a sum taken exactly
(``math.fsum``), and the 2x2 Newton system is solved by hand: no BLAS / LAPACK call, whose
kernels OpenBLAS picks per CPU (an AMD EPYC and an Intel Xeon rounded the old L-BFGS-B and
``np.linalg.solve`` path differently, by 1e-5 in the fitted prior, enough to flip later
decisions). So the same input gives the same bits on any x86-64 machine.

>>> a, b = fit_weighted([0, 4, 8, 2], [8, 8, 8, 8], [30, 12, 40, 9])  # Nelder-Mead: same
>>> round(a, 6), round(b, 6)
(0.129824, 0.105923)
"""

import math

import numpy as np
from scipy.special import betaln, digamma, polygamma

LO, HI = -7.0, 7.0  # the box on log a, log b


def fit_weighted(s, n, w, init=(1.0, 1.0), tol=1e-10, max_iter=100):
    """Beta(a, b) maximising sum_j w_j log BetaBinomial(s_j | n_j, a, b) (records with n_j > 0);
    from `init`, to a Newton step below `tol` in log a, log b."""
    s, n, w = (np.asarray(x, float) for x in (s, n, w))

    def loglik(th):
        a, b = math.exp(th[0]), math.exp(th[1])
        return math.fsum(w * (betaln(a + s, b + n - s) - betaln(a, b)))

    th = [min(max(math.log(float(x)), LO), HI) for x in init]
    cur = loglik(th)
    for _ in range(max_iter):
        step = _projected_step(th, *_grad_hess(th, s, n, w))
        big = max(abs(step[0]), abs(step[1]))
        if big < tol:
            break
        scale = min(1.0, 0.5 / big)  # trust region: a, b change by < e^0.5 a step
        step = [x * scale for x in step]
        t = 1.0
        while t > 1e-12:
            cand = [min(max(th[i] + t * step[i], LO), HI) for i in (0, 1)]
            val = loglik(cand)
            if val >= cur - 1e-12 * abs(cur):
                break
            t *= 0.5
        moved = max(abs(cand[0] - th[0]), abs(cand[1] - th[1]))
        th, cur = cand, val
        if moved < tol:
            break
    return math.exp(th[0]), math.exp(th[1])


def _grad_hess(th, s, n, w):
    """Gradient (g_a, g_b) and Hessian (h_aa, h_ab, h_bb) of the weighted log-likelihood in
    th = log (a, b)."""
    a, b = math.exp(th[0]), math.exp(th[1])
    d_ab = digamma(a + b) - digamma(a + b + n)
    d1_ab = polygamma(1, a + b) - polygamma(1, a + b + n)
    la = math.fsum(w * (digamma(a + s) - digamma(a) + d_ab))
    lb = math.fsum(w * (digamma(b + n - s) - digamma(b) + d_ab))
    laa = math.fsum(w * (polygamma(1, a + s) - polygamma(1, a) + d1_ab))
    lbb = math.fsum(w * (polygamma(1, b + n - s) - polygamma(1, b) + d1_ab))
    lab = math.fsum(w * d1_ab)
    g = (a * la, b * lb)
    h = (a * a * laa + a * la, a * b * lab, b * b * lbb + b * lb)
    return g, h


def _projected_step(th, g, h):
    """Newton step on the coordinates not held at the box; a scaled gradient step where the
    Hessian there is not negative definite."""
    free = [not ((th[i] <= LO and g[i] < 0) or (th[i] >= HI and g[i] > 0)) for i in (0, 1)]
    h_aa, h_ab, h_bb = h
    if free[0] and free[1]:
        det = h_aa * h_bb - h_ab * h_ab
        if h_aa < 0 and det > 0:  # negative definite (2x2: a negative pivot, positive det)
            return [-(h_bb * g[0] - h_ab * g[1]) / det, -(h_aa * g[1] - h_ab * g[0]) / det]
        top = max(abs(g[0]), abs(g[1]), 1.0)
        return [g[0] / top, g[1] / top]
    step = [0.0, 0.0]
    for i, hii in ((0, h_aa), (1, h_bb)):
        if free[i]:
            step[i] = -g[i] / hii if hii < 0 else g[i] / max(abs(g[i]), 1.0)
    return step

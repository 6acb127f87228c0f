"""Where simulated rewards come from: laws as arrays, run-length summaries, the prompt source.

Everything here is Numba-jitted, draws from the replicate's own generator ``rs`` (``rng.py``) and
is called by the kernels (``kernels.py``, ``peers.py``).

**Run-length sampling.** Under the stopping rule a prompt's fate depends only on its first outcome
o and the length L of the run of identical outcomes that opens its sequence (capped at k): while
n <= L its prefix is (n, o*n), after that it is mixed.  So one uniform decides o and one more
decides L (geometric with ratio g or 1 - g; for a recorded history the negative-hypergeometric run
of an urn).  A committed group's final success count is then o*L + (1 - o) + Binomial(k - L - 1, g)
(a draw without replacement from what is left of the urn, for a history) — O(1) random draws per
prompt for any k, whatever the schedule of rounds.

**Laws as arrays** (``Law``, built by ``laws.encode_law``).  Kinds: RATES (a Beta/point
mixture; a fresh prompt per pull, or a fixed pool revisited pass after pass), HISTORY (records
rec_c / rec_n [prompt, epoch]; an urn per visit), DRIFT (a pool whose logit rates move, see
``laws.DriftLaw``), SEQUENCES (pre-drawn outcome rows, for the identity test; with seq_pool > 0
row i is a visit of prompt i % seq_pool in epoch i // seq_pool).  A replicate's position in its
prompt sequence is a ``PromptSource``.

>>> from sara_sim.sim.rng import seed_state
>>> rs = seed_state(0, 0)
>>> o, run = run_rate(rs, 1.0, 8)        # a prompt that always passes: one run of k passes
>>> int(o), int(run)
(1, 8)
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .rng import beta, binomial, shuffle, uniform, urn_draw

RATES, HISTORY, DRIFT, SEQUENCES = 0, 1, 2, 3
COMP_BETA, COMP_POINT = 0, 1


class Law(NamedTuple):
    kind: int  # RATES, HISTORY, DRIFT or SEQUENCES
    pool: int  # prompts in a revisited pool (0: a fresh prompt per pull)
    n_epochs: int  # HISTORY: recorded epochs
    cum_weights: np.ndarray  # mixture components: cumulative weights, kind, a, b
    comp_kind: np.ndarray
    comp_a: np.ndarray
    comp_b: np.ndarray
    rec_c: np.ndarray  # HISTORY: [prompt, epoch] passes / samples (-1: no record)
    rec_n: np.ndarray
    drift: np.ndarray  # DRIFT: [rate per step, boost per time trained]
    seq: np.ndarray  # SEQUENCES: pre-drawn outcome rows
    seq_pool: int  # SEQUENCES: prompts the rows revisit (0: each row its own prompt)


class PromptSource(NamedTuple):
    """One replicate's place in its prompt source (arrays updated in place)."""

    st: np.ndarray  # [position in pass, pass index, fresh-prompt counter]
    perm: np.ndarray  # the pool's order in this pass
    pool_x: np.ndarray  # the pool's rates (DRIFT: logits at step 0)
    trained: np.ndarray  # DRIFT: times each pool prompt entered a batch as an effective group


@njit(cache=True)
def pick_component(rs, cw):
    """Index of the mixture component of the next rate (cumulative weights cw; no draw for one)."""
    i = 0
    if len(cw) > 1:
        u = uniform(rs)
        while i < len(cw) - 1 and u >= cw[i]:
            i += 1
    return i


@njit(cache=True)
def component_rate(rs, kind, a, b):
    """One success rate from a single Beta(a, b) / point-a component."""
    if kind == COMP_POINT:
        return a
    return beta(rs, a, b)


@njit(cache=True)
def draw_rate(rs, cw, ck, ca, cb):
    """One success rate from a mixture of Beta / point components (cumulative weights cw).
    (The kernels call its two halves directly: scalar arguments are cheaper to pass.)"""
    i = pick_component(rs, cw)
    return component_rate(rs, ck[i], ca[i], cb[i])


# --- run-length summaries of a prompt's outcome sequence ---------------------------------------
@njit(cache=True)
def run_rate(rs, g, k):
    """(first outcome o, run length L <= k) of an i.i.d. Bernoulli(g) sequence: 2 uniforms."""
    o = 1 if uniform(rs) < g else 0
    q = g if o == 1 else 1.0 - g
    if q <= 0.0:
        return o, 1
    if q >= 1.0:
        return o, k
    lq = math.log(g) if o == 1 else math.log1p(-g)
    extra = math.log(1.0 - uniform(rs)) / lq  # P(extra >= j) = q^j
    if extra >= k - 1:
        return o, k
    return o, 1 + int(extra)


@njit(cache=True)
def run_urn(rs, c, total, k):
    """(o, L, passes left, draws left) for draws without replacement from c passes of `total`;
    the urn is returned as it stands after the first min(L + 1, k) draws."""
    o = 1 if uniform(rs) * total < c else 0
    same = c if o == 1 else total - c
    u = uniform(rs)
    run, surv = 1, 1.0
    while run < k:
        surv *= (same - run) / (total - run)
        if u < surv:
            run += 1
        else:
            break
    if run < k:
        return o, run, c - (o * run + 1 - o), total - run - 1
    return o, run, c - o * k, total - k


@njit(cache=True)
def run_seq(row, seq, k):
    """(o, L, successes of the full k) of a pre-drawn outcome row."""
    o = seq[row, 0]
    run = 1
    while run < k and seq[row, run] == o:
        run += 1
    s = 0
    for i in range(k):
        s += seq[row, i]
    return o, run, s


@njit(cache=True)
def rate_successes(rs, o, run, k, g):
    """Successes of the full group of k of a prompt with rate g given its opening run (o, run)."""
    if run >= k:
        return o * k
    return o * run + 1 - o + binomial(rs, k - run - 1, g)


@njit(cache=True)
def full_successes(rs, o, run, k, g, urn, row, seq):
    """Successes of the full group of k given its opening run (o, run); the rest is drawn (from
    the rate g, or without replacement from urn = (passes, size) left when size >= 0)."""
    cl, nl = urn
    if row >= 0:
        return run_seq(row, seq, k)[2]
    if nl < 0:
        return rate_successes(rs, o, run, k, g)
    if run >= k:
        return o * k
    return o * run + 1 - o + urn_draw(rs, cl, nl, k - run - 1)


@njit(cache=True)
def draw_successes(rs, m, g, urn, row, seq, pos):
    """Successes among a prompt's next m outcomes (rate g; urn = [passes, size] left, updated in
    place when urn[1] >= 0; pre-drawn row from position pos)."""
    if row >= 0:
        x = 0
        for i in range(pos, pos + m):
            x += seq[row, i]
        return x
    if urn[1] >= 0:
        m = min(m, urn[1])
        x = urn_draw(rs, urn[0], urn[1], m)
        urn[0] -= x
        urn[1] -= m
        return x
    return binomial(rs, m, g)


# --- the prompt source ---------------------------------------------------------------------------
@njit(cache=True)
def init_pool(rs, law, pool_x, perm):
    """Draw a replicate's pool (rates, or drift logits) and its first pass order."""
    n_pool = law.pool
    for p in range(n_pool):
        perm[p] = p
        if law.kind == RATES or law.kind == DRIFT:
            g = draw_rate(rs, law.cum_weights, law.comp_kind, law.comp_a, law.comp_b)
            if law.kind == DRIFT:
                g = min(max(g, 1e-9), 1.0 - 1e-9)
                g = math.log(g) - math.log1p(-g)
            pool_x[p] = g
    shuffle(rs, perm[:n_pool])


@njit(cache=True)
def pull(rs, law, source, step):
    """Next prompt of a replicate's prompt source: (prompt id, rate, urn passes, urn size); id -1
    when a finite prompt source is exhausted."""
    st, perm, n_pool, kind = source.st, source.perm, law.pool, law.kind
    if n_pool == 0:
        pid = st[2]
        st[2] += 1
        if kind == SEQUENCES:
            return (pid if pid < law.seq.shape[0] else -1), 0.0, 0, -1
        return pid, draw_rate(rs, law.cum_weights, law.comp_kind, law.comp_a, law.comp_b), 0, -1
    misses = 0
    while True:
        if st[0] >= n_pool:
            shuffle(rs, perm[:n_pool])
            st[0] = 0
            st[1] += 1
        pid = perm[st[0]]
        st[0] += 1
        if kind == HISTORY:
            e = st[1] % law.n_epochs
            c, n = law.rec_c[pid, e], law.rec_n[pid, e]
            if n <= 0:
                misses += 1
                if misses > n_pool * law.n_epochs:
                    return -1, 0.0, 0, -1
                continue
            return pid, c / n, c, n
        if kind == DRIFT:
            x = source.pool_x[pid] + law.drift[0] * step + law.drift[1] * source.trained[pid]
            return pid, 1.0 / (1.0 + math.exp(-x)), 0, -1
        return pid, source.pool_x[pid], 0, -1


@njit(cache=True)
def history_key(law, pid, st):
    """(the prompt whose history a pulled id feeds, the epoch of the visit): a pool's prompt in
    the current pass; a pre-drawn row of a revisited pool (seq_pool > 0) is prompt row % seq_pool
    in epoch row // seq_pool; -1 (no history) for fresh prompts."""
    if law.kind == SEQUENCES:
        if law.seq_pool > 0 and pid >= 0:
            return pid % law.seq_pool, float(pid // law.seq_pool)
        return -1, 0.0
    return (pid if law.pool > 0 else -1), float(st[1])

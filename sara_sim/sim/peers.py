"""Numba kernel of the one-shot and predict-then-select peers (docs/design.md §3), one step per
call.

All of them send whole groups (no per-prompt stopping), so a prompt costs one Binomial (or urn)
draw per engine call.  Strategy codes and their parameters (``prm`` vector, indices ``P_*``;
defaults and sources in ``strategies.py``):

* UNIFORM — N prompts x k rollouts, one round (fixed-budget: budget // k prompts).
* DS — verl dynamic sampling: batches of gen_batch_size prompts x k, keep std > 0 until N kept,
  surplus kept groups discarded (waste), at most max_num_gen_batches batches (``capped``).
* GRESO — DS whose batches are filled by a pre-rollout filter: a prompt whose last z visits were
  all zero-variance is skipped with probability 1 - p^z, p = p_easy (last all-pass) or p_hard
  (last all-fail); after each step p moves by dp towards the target zero-variance shares.
* MOPPS — per-prompt Beta posterior (discounted by lambda), Thompson-sample a rate for each of
  ratio x N candidates, train on the N nearest the target rate; k rollouts each.
* DPS — per-prompt state (all-fail / mixed / all-pass at its last visit), a Markov transition
  matrix counted from consecutive visits (Dirichlet(1) smoothing), train on the N candidates with
  the highest predicted P(mixed).
* KNAPSACK — budget-neutral: N prompts share N x k rollouts, allocated greedily (exact for these
  concave values) to maximise sum_i P(mixed | n_i, p_i) w(p_i), n_min <= n_i <= n_max, p_i the
  Laplace-smoothed success rate of the prompt's last visit (global rate if unseen).
* RADA — Reinforce-Ada: rounds of round_size rollouts per active prompt until it holds enough
  passes and fails (balanced: k/2 of each; positive: one pass), at most max_rounds; the group is
  down-sampled to k as balanced as possible, the rest is waste.

Prompt histories only ever see outcomes the strategy drew (pools only: a fresh-prompt source has
no history to learn from).
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from . import metrics as mt  # the metric row layout, I_*
from .rng import beta, uniform
from .sources import DRIFT, PromptSource, draw_successes, pull

UNIFORM, DS, GRESO, MOPPS, DPS, KNAPSACK, RADA = range(7)
(
    P_GEN_BATCH,
    P_MAX_GEN_BATCHES,
    P_DP,
    P_ALPHA_EASY,
    P_ALPHA_HARD,
    P_P_MIN,
    P_RATIO,
    P_TARGET,
    P_DECAY,
    P_A0,
    P_B0,
    P_N_MIN,
    P_N_MAX,
    P_WEIGHT,
    P_ROUND_SIZE,
    P_MAX_ROUNDS,
    P_EXIT,
) = range(17)
N_PRM = 17
H_LAST_S, H_LAST_N, H_Z, H_CAT = range(4)  # hist_i fields; hist_f = (alpha, beta)
G_P_EASY, G_P_HARD, G_PASSES, G_ROLLOUTS = range(4)  # glob fields (+ DPS marginal at 4..6)


class BatchConfig(NamedTuple):
    k: int
    groups: int  # N groups per step
    budget: int  # rollouts per step (uniform, knapsack); 0: fixed-yield
    prm: np.ndarray  # the strategy's parameters (P_* layout, ``strategies.batch_params``)
    lens: np.ndarray  # tokens per passing / failing rollout


class BatchState(NamedTuple):
    """Per-replicate state, leading axis R; updated in place."""

    rng: np.ndarray
    st: np.ndarray  # [R, ...] the fields of ``sources.PromptSource`` (flat: Numba's prange cannot
    perm: np.ndarray  # take a nested tuple)
    pool_x: np.ndarray
    trained: np.ndarray
    hist_i: np.ndarray  # [R, pool, H_*] last visit of each prompt
    hist_f: np.ndarray  # [R, pool, 2] MoPPS Beta posterior (alpha, beta)
    glob: np.ndarray  # [R, G_* + 3] global counters
    trans: np.ndarray  # [R, 3, 3] DPS transition counts


@njit(cache=True)
def _value(n, p, weight):
    """Knapsack value of n rollouts on a prompt of rate p: P(mixed) x (1 or p(1-p)^2)."""
    if n <= 1:
        return 0.0
    v = 1.0 - p**n - (1.0 - p) ** n
    return v * p * (1.0 - p) ** 2 if weight > 0 else v


@njit(cache=True)
def _knapsack(p_hat, caps, budget, n_min, weight, alloc):
    """Greedy marginal allocation of `budget` rollouts (optimal for concave separable values)."""
    m = len(p_hat)
    left = budget
    for i in range(m):
        alloc[i] = min(n_min, caps[i])
        left -= alloc[i]
    nxt = 0
    while left > 0:
        best, arg = 1e-300, -1
        for i in range(m):
            if alloc[i] < caps[i]:
                gain = _value(alloc[i] + 1, p_hat[i], weight) - _value(alloc[i], p_hat[i], weight)
                if gain > best:
                    best, arg = gain, i
        if arg < 0:  # no value left anywhere: spread evenly (budget-neutral)
            for _ in range(m):
                nxt = (nxt + 1) % m
                if alloc[nxt] < caps[nxt]:
                    arg = nxt
                    break
            if arg < 0:
                break
        alloc[arg] += 1
        left -= 1


@njit(cache=True)
def _observe(pid, s, n, hist_i, hist_f, glob, trans, prm):
    """Record a visit's drawn outcomes (s of n) in the prompt's history."""
    glob[G_PASSES] += s
    glob[G_ROLLOUTS] += n
    if pid < 0:
        return
    cat = 0 if s == 0 else (2 if s == n else 1)
    if hist_i[pid, H_CAT] >= 0:
        trans[hist_i[pid, H_CAT], cat] += 1
    glob[4 + cat] += 1
    hist_i[pid, H_CAT] = cat
    hist_i[pid, H_LAST_S], hist_i[pid, H_LAST_N] = s, n
    hist_i[pid, H_Z] = hist_i[pid, H_Z] + 1 if cat != 1 else 0
    lam = prm[P_DECAY]
    hist_f[pid, 0] = lam * hist_f[pid, 0] + (1.0 - lam) * prm[P_A0] + s
    hist_f[pid, 1] = lam * hist_f[pid, 1] + (1.0 - lam) * prm[P_B0] + n - s


@njit(cache=True)
def _book(out, pid, drawn, group, in_batch, lens, trained, is_drift):
    """Metrics of a prompt that drew drawn = (s_drawn passes, n_drawn rollouts); in the batch its
    group = (s passes, k_group rollouts) of them, the rest is waste.  (Scalars travel in tuples,
    the arrays apart: a tuple holding arrays made each call measurably slower.)"""
    s_drawn, n_drawn = drawn
    s, k_group = group
    out[mt.I_TOKENS] += s_drawn * lens[0] + (n_drawn - s_drawn) * lens[1]
    out[mt.I_DEC] += 1
    out[mt.I_DEC_ROLLOUTS] += n_drawn
    mixed = 0 < s < k_group
    if not in_batch:
        out[mt.I_WASTE] += n_drawn
        if not mixed:
            out[mt.I_SATURATED] += 1
        return
    out[mt.I_WASTE] += n_drawn - k_group
    out[mt.I_GROUPS] += 1
    if not mixed:
        out[mt.I_SATURATED] += 1
        return
    sig = s * (k_group - s) / float(k_group * k_group)
    out[mt.I_EFFECTIVE] += 1
    out[mt.I_PROXY] += sig
    out[mt.I_DEC_EFF] += 1
    out[mt.I_DEC_PROXY] += sig
    if is_drift and pid >= 0:
        trained[pid] += 1


@njit(cache=True)
def _greso_adapt(glob, prm, n_easy, n_hard, n_rolled):
    """Move each skip probability by dp towards its target zero-variance share."""
    for which, share, target in (
        (G_P_EASY, n_easy / n_rolled, prm[P_ALPHA_EASY]),
        (G_P_HARD, n_hard / n_rolled, prm[P_ALPHA_HARD]),
    ):
        step_p = -prm[P_DP] if share > target else prm[P_DP]
        glob[which] = min(1.0, max(prm[P_P_MIN], glob[which] + step_p))


@njit(cache=True)
def _ds_step(strategy, law, rs, step, cfg, source, mem, out):
    """DS / GRESO: batches of gen_batch_size prompts x k until N mixed groups are kept."""
    k, groups, _, prm, lens = cfg
    hist_i, hist_f, glob, trans = mem
    n_pool, seq, trained = law.pool, law.seq, source.trained  # out of the per-prompt loop
    is_drift = law.kind == DRIFT
    gbs = int(prm[P_GEN_BATCH])
    max_gb = int(prm[P_MAX_GEN_BATCHES])
    kept, batches, n_easy, n_hard, n_rolled = 0, 0, 0, 0, 0
    urn = np.empty(2, np.int64)
    while kept < groups:
        if max_gb > 0 and batches >= max_gb:
            out[mt.I_CAPPED] = 1.0
            break
        got = 0
        for _ in range(gbs):
            # the next prompt, past GRESO's pre-rollout filter; kept inline: as a function, the
            # arrays it is passed per prompt (reference counts) made DS 1.2x, GRESO 1.5x slower
            tries = 0
            while True:
                pid, g, hc, hn = pull(rs, law, source, step)
                if pid < 0:
                    break
                out[mt.I_FRESH] += 1
                hp = pid if n_pool > 0 else -1
                if strategy == GRESO and hp >= 0 and hist_i[hp, H_Z] > 0 and tries < 100000:
                    easy = hist_i[hp, H_LAST_S] > 0
                    p_e = glob[G_P_EASY] if easy else glob[G_P_HARD]
                    if uniform(rs) >= p_e ** hist_i[hp, H_Z]:
                        out[mt.I_SKIPPED] += 1
                        tries += 1
                        continue
                break
            if pid < 0:
                break
            got += 1
            urn[0], urn[1] = hc, hn
            s = draw_successes(rs, k, g, urn, pid if seq.shape[0] > 0 else -1, seq, 0)
            out[mt.I_ROLLOUTS] += k
            n_rolled += 1
            mixed = 0 < s < k
            n_easy += s == k
            n_hard += s == 0
            _book(out, pid, (s, k), (s, k), mixed and kept < groups, lens, trained, is_drift)
            kept += mixed
            _observe(hp, s, k, hist_i, hist_f, glob, trans, prm)
        if got == 0:
            break
        batches += 1
    out[mt.I_ROUNDS] = batches
    if strategy == GRESO and n_rolled > 0:
        _greso_adapt(glob, prm, n_easy, n_hard, n_rolled)


@njit(cache=True, inline="always")
def _score(strategy, rs, hp, m, mem, prm):
    """Selection score of a candidate (lower first): MoPPS distance of a Thompson draw to the
    target, DPS -P(mixed) predicted from its last state, else its arrival order m."""
    hist_i, hist_f, glob, trans = mem
    if strategy == MOPPS:
        a0 = hist_f[hp, 0] if hp >= 0 else prm[P_A0]
        b0 = hist_f[hp, 1] if hp >= 0 else prm[P_B0]
        return (beta(rs, a0, b0) - prm[P_TARGET]) ** 2
    if strategy == DPS:
        last = hist_i[hp, H_CAT] if hp >= 0 else -1
        if last >= 0:
            tot = trans[last, 0] + trans[last, 1] + trans[last, 2]
            pm = (trans[last, 1] + 1.0) / (tot + 3.0)
        else:
            pm = (glob[5] + 1.0) / (glob[4] + glob[5] + glob[6] + 3.0)
        return -pm + 1e-9 * uniform(rs)  # random tie-break
    return float(m)


@njit(cache=True)
def _select(strategy, law, rs, step, cfg, source, mem, out):
    """Pull the candidates (ratio x N for MoPPS / DPS), score them and order them; returns
    ((pid, rate, urn) per candidate, the order, how many of it are trained on)."""
    k, groups, budget, prm, _ = cfg
    n_sel = groups if budget <= 0 else budget // k
    n_cand = n_sel
    if strategy == MOPPS or strategy == DPS:
        n_cand = int(math.ceil(prm[P_RATIO] * n_sel))
    c_pid = np.empty(n_cand, np.int64)
    c_g = np.empty(n_cand)
    c_urn = np.empty((n_cand, 2), np.int64)
    score = np.empty(n_cand)
    m = 0
    for _ in range(n_cand):
        pid, g, hc, hn = pull(rs, law, source, step)
        if pid < 0:
            break
        out[mt.I_FRESH] += 1
        hp = pid if law.pool > 0 else -1
        c_pid[m], c_g[m], c_urn[m, 0], c_urn[m, 1] = pid, g, hc, hn
        score[m] = _score(strategy, rs, hp, m, mem, prm)
        m += 1
    order = np.argsort(score[:m], kind="mergesort")
    n_take = min(n_sel, m)
    out[mt.I_SKIPPED] += m - n_take
    return (c_pid, c_g, c_urn), order, n_take


@njit(cache=True)
def _allocate(strategy, law, cfg, mem, cand, order, n_take):
    """Rollouts per selected prompt: k each, or the knapsack split of n_take x k (p_i the
    Laplace-smoothed rate of the prompt's last visit, the global rate if unseen)."""
    k, _, _, prm, _ = cfg
    hist_i, glob = mem[0], mem[2]
    c_pid, _, c_urn = cand
    alloc = np.full(n_take, k, np.int64)
    if strategy != KNAPSACK:
        return alloc
    p_hat = np.empty(n_take)
    caps = np.empty(n_take, np.int64)
    gp = (glob[G_PASSES] + 1.0) / (glob[G_ROLLOUTS] + 2.0)
    for j in range(n_take):
        i = order[j]
        hp = c_pid[i] if law.pool > 0 else -1
        seen = hp >= 0 and hist_i[hp, H_LAST_N] > 0
        p_hat[j] = (hist_i[hp, H_LAST_S] + 1.0) / (hist_i[hp, H_LAST_N] + 2.0) if seen else gp
        caps[j] = int(prm[P_N_MAX])
        if c_urn[i, 1] >= 0:
            caps[j] = min(caps[j], c_urn[i, 1])
    _knapsack(p_hat, caps, n_take * k, int(prm[P_N_MIN]), prm[P_WEIGHT], alloc)
    return alloc


@njit(cache=True, inline="always")
def _rada_draws(rs, k, prm, g, urn, row, seq):
    """Reinforce-Ada rounds on one prompt until its exit rule holds; returns (passes, rollouts,
    rounds)."""
    size, max_r = int(prm[P_ROUND_SIZE]), int(prm[P_MAX_ROUNDS])
    need_pos = 1 if prm[P_EXIT] > 0 else k // 2
    need_neg = 0 if prm[P_EXIT] > 0 else k - k // 2
    pos, n, r = 0, 0, 0
    while r < max_r:
        take = size if urn[1] < 0 else min(size, urn[1])
        if row >= 0:
            take = min(take, seq.shape[1] - n)
        if take <= 0:
            break
        pos += draw_successes(rs, take, g, urn, row, seq, n)
        n += take
        r += 1
        if pos >= need_pos and n - pos >= need_neg:
            break
    return pos, n, r


@njit(cache=True)
def _batch_step(strategy, law, rs, step, cfg, source, mem, out):
    """One step of a batch strategy: (DS / GRESO) or select, allocate, draw."""
    out[:] = 0.0
    if strategy == DS or strategy == GRESO:
        _ds_step(strategy, law, rs, step, cfg, source, mem, out)
        return
    k, _, _, prm, lens = cfg
    hist_i, hist_f, glob, trans = mem
    n_pool, seq, trained = law.pool, law.seq, source.trained  # out of the per-prompt loop
    is_drift = law.kind == DRIFT
    cand, order, n_take = _select(strategy, law, rs, step, cfg, source, mem, out)
    alloc = _allocate(strategy, law, cfg, mem, cand, order, n_take)
    c_pid, c_g, c_urn = cand
    rounds = 1
    for j in range(n_take):
        i = order[j]
        pid = c_pid[i]
        hp = pid if n_pool > 0 else -1
        row = pid if seq.shape[0] > 0 else -1
        if strategy == RADA:
            pos, n, r = _rada_draws(rs, k, prm, c_g[i], c_urn[i], row, seq)
            rounds = max(rounds, r)
            out[mt.I_ROLLOUTS] += n
            s_fin = min(max(k // 2, k - (n - pos)), pos)
            _book(out, pid, (pos, n), (s_fin, min(k, n)), True, lens, trained, is_drift)
            _observe(hp, pos, n, hist_i, hist_f, glob, trans, prm)
            continue
        n = alloc[j]
        s = draw_successes(rs, n, c_g[i], c_urn[i], row, seq, 0)
        out[mt.I_ROLLOUTS] += n
        _book(out, pid, (s, n), (s, n), True, lens, trained, is_drift)
        if n > 0:
            _observe(hp, s, n, hist_i, hist_f, glob, trans, prm)
    out[mt.I_ROUNDS] = rounds if n_take > 0 else 0


@njit(cache=True, parallel=True)
def batch_steps(strategy, law, cfg, state, step0, n_steps, out):
    """Steps step0 .. step0 + n_steps - 1 of a batch strategy for every replicate (in place)."""
    for r in prange(state.rng.shape[0]):
        mine = PromptSource(state.st[r], state.perm[r], state.pool_x[r], state.trained[r])
        mem = (state.hist_i[r], state.hist_f[r], state.glob[r], state.trans[r])
        for j in range(n_steps):
            _batch_step(strategy, law, state.rng[r], step0 + j, cfg, mine, mem, out[r, j])

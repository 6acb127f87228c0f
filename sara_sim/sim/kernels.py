"""Numba kernel of SARA's round-synchronous collection (docs/design.md §2): sara, sara-eb,
sara-auto, sara-history and SPEED-RL.

``sara_steps`` runs ``n_steps`` training steps of R independent replicates (``prange`` over
replicates, each drawing from its own generator, see ``rng``).  Each step mirrors
``sara_collector.SaraCollector.collect_step`` — fills first, then continues, then
probes of fresh prompts up to the round capacity (a too-big probe is split), the same running
commit/cost rates, the same carry of surplus groups and in-progress prompts — and takes every
decision through the core's jitted ``policy.decide_plan`` / ``policy.next_request`` on the plan
the prompt was opened with and every per-round choice through ``schedule`` (one implementation;
a test feeds both the same outcome sequences and compares every decision).  Outcomes come from
run-length summaries (``sources.run_*``): O(1) draws per prompt.

Plans: sara / sara-eb / sara-auto / speed open every prompt of a step with the step's plan (from
``strategies.SaraPlanner``); SPEED-RL is the plan [CONTINUE, 1, n_init, 1, n_init] with probe
n_init (screen, then fill only the mixed).  sara-history builds each prompt's plan from its own
discounted outcomes (``schedule.history_plan``) at the stream's running price lam = rollouts /
effective groups; a visit's outcomes are dated by the epoch it was pulled in.

Arguments are named tuples: the law (``sources.Law``), the configuration (``SaraConfig``), the
per-replicate state (``SaraState``) and the outputs (``StepOutputs``).
"""

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..core.policy import ABANDON, COMMIT, CONTINUE, decide_plan, next_request
from ..core.schedule import (
    R_EFFECTIVE,
    R_ROLLOUTS,
    HistoryKnobs,
    budget_probes,
    history_plan,
    new_evidence,
    observe,
    price,
    skip_budget,
    track,
    yield_probes,
)
from . import metrics as mt  # the metric row layout, I_*
from .rng import uniform
from .sources import (
    DRIFT,
    RATES,
    SEQUENCES,
    Stream,
    component_rate,
    full_successes,
    history_key,
    pick_component,
    pull,
    rate_successes,
    run_rate,
    run_seq,
    run_urn,
)

# open-slot integer fields (F_EPOCH: the epoch the visit was pulled in); rates in a float array
F_PID, F_N, F_COMM, F_O, F_RUN, F_CL, F_NL, F_FULLMIX, F_DEL, F_EPOCH, F_PLAN = range(11)
N_FIELDS = F_PLAN + 5
EV_STEP, EV_ROUND, EV_PID, EV_DECISION, EV_N, EV_S, EV_TARGET = range(7)
C_OPEN, C_DONE, C_LOG = range(3)


class SaraConfig(NamedTuple):
    """What a run of the SARA kernel is asked to do (fixed per run)."""

    k: int
    groups: int  # N effective groups per step (fixed-yield)
    budget: int  # rollouts per step; 0: fixed-yield
    capacity: int  # rollouts per round
    probe: int  # policy.next_request's probe / increment (0: auto)
    increment: int
    max_rounds: int
    tau_low: float
    len_pass: float  # tokens per passing / failing rollout
    len_fail: float
    history: bool  # sara-history: each prompt's plan from its own evidence, with
    rho: float  # ... schedule.HistoryKnobs, flat (Numba's prange cannot take a nested tuple)
    kappa: float
    explore: float
    max_skip: float
    rule_price: bool


class SaraState(NamedTuple):
    """Per-replicate state, leading axis R (see module docstring); updated in place."""

    rng: np.ndarray
    st: np.ndarray  # [R, ...] the fields of ``sources.Stream`` (flat: see SaraConfig)
    perm: np.ndarray
    pool_x: np.ndarray
    trained: np.ndarray
    ev: np.ndarray  # [R, prompts, EV_*] evidence of sara-history (0 prompts otherwise)
    oi: np.ndarray  # [R, slots, N_FIELDS] open prompts
    og: np.ndarray  # [R, slots] their rates
    done: np.ndarray  # [R, slots, 2] carried complete groups [pid, s]
    cnt: np.ndarray  # [R, C_*]
    rates: np.ndarray  # [R, R_*]
    pop: np.ndarray  # [R, 2] sara-history's population prior


class StepOutputs(NamedTuple):
    out: np.ndarray  # [R, steps, N_METRICS]
    eb: np.ndarray  # [R, k + 1, k + 1] (n, s) of decided prompts; (R, 0, 0): not collected
    log: np.ndarray  # [R, events, EV_*] decision log


@njit(cache=True)
def _open_slot(rs, oi, og, j, pid, g, hc, hn, k, plan, row, seq):
    """Fill slot j with a fresh prompt: draw its run-length summary, copy its plan."""
    if row >= 0:
        o, run, s_full = run_seq(row, seq, k)
        cl, nl, mixed = -1, -1, 1 if 0 < s_full < k else 0
    elif hn >= 0:
        o, run, cl, nl = run_urn(rs, hc, hn, k)
        mixed = 1 if run < k else 0
    else:
        o, run = run_rate(rs, g, k)
        cl, nl, mixed = -1, -1, 1 if run < k else 0
    oi[j, F_PID], oi[j, F_N], oi[j, F_O], oi[j, F_RUN] = pid, 0, o, run
    oi[j, F_CL], oi[j, F_NL], oi[j, F_FULLMIX], oi[j, F_DEL] = cl, nl, mixed, 0
    oi[j, F_COMM] = 1 if plan[0] == COMMIT else 0
    for t in range(5):
        oi[j, F_PLAN + t] = plan[t]
    og[j] = g


@njit(cache=True)
def _compact(oi, og, n_open, req_slot, nreq):
    """Drop the decided slots of the open table, keeping insertion order; the first nreq planned
    requests follow their slot.  Returns the new number of slots."""
    j = 0
    for i in range(n_open):
        if oi[i, F_DEL] == 0:
            if j != i:
                for f in range(N_FIELDS):
                    oi[j, f] = oi[i, f]
                og[j] = og[i]
                for q in range(nreq):
                    if req_slot[q] == i:
                        req_slot[q] = j
            j += 1
    return j


@njit(cache=True)
def _full_mixed(rs, g, hc, hn, k, row, seq):
    """Would this prompt's full group of k be mixed? (simulation knows; for skipped prompts)"""
    if row >= 0:
        return 1 if 0 < run_seq(row, seq, k)[2] < k else 0
    if hn >= 0:
        return 1 if run_urn(rs, hc, hn, k)[1] < k else 0
    return 1 if run_rate(rs, g, k)[1] < k else 0


@njit(cache=True)
def _sara_step(law, rs, step, cfg, plan, state, out, eb, log, req_slot, req_n):
    stream, ev, oi, og, done, cnt, rates, pop = state
    st, trained = stream.st, stream.trained
    cw, seq = law.cum_weights, law.seq
    k, groups, budget, capacity = cfg.k, cfg.groups, cfg.budget, cfg.capacity
    probe_p, incr_p, max_rounds, history = cfg.probe, cfg.increment, cfg.max_rounds, cfg.history
    kind, n_pool = law.kind, law.pool
    blank = new_evidence()  # the evidence of a prompt without a history of its own
    hist = HistoryKnobs(cfg.rho, cfg.kappa, cfg.explore, cfg.max_skip, cfg.rule_price)
    seqmode, drift = kind == SEQUENCES, kind == DRIFT
    yield_mode = budget <= 0
    maxo = oi.shape[0]
    kk = float(k * k)
    out[:] = 0.0
    n_open = cnt[C_OPEN]  # slots in use: decided ones are dropped at the end of the step
    n_live = n_open  # undecided prompts among them
    # complete groups carried from the previous step enter this step's batch first
    n_groups = 0
    for i in range(cnt[C_DONE]):
        s = done[i, 1]
        n_groups += 1
        out[mt.I_GROUPS] += 1
        if 0 < s < k:
            out[mt.I_EFFECTIVE] += 1
            out[mt.I_PROXY] += s * (k - s) / kk
            if drift:
                trained[done[i, 0]] += 1
    n_done = 0
    budget_left = budget if not yield_mode else 1 << 62
    fresh_rates = kind == RATES and n_pool == 0  # the common stream: a fresh rate per pull
    n_comp = cw.shape[0]
    rounds = 0
    while True:
        if yield_mode and n_groups >= groups:
            break
        if rounds >= max_rounds:
            out[mt.I_CAPPED] = 1.0
            break
        # ---- plan the round (SaraCollector._plan_round) ----
        cap = min(capacity, budget_left)
        nreq, used, n_comm, n_cont, reserved = 0, 0, 0, 0, 0
        for i in range(n_open):
            if oi[i, F_DEL]:
                continue
            if oi[i, F_COMM]:
                n_comm += 1
                reserved += k - oi[i, F_N]
                m = min(k - oi[i, F_N], cap - used)
                if m > 0:
                    req_slot[nreq], req_n[nreq] = i, m
                    nreq += 1
                    used += m
            else:
                n_cont += 1
        deficit = groups - n_groups - n_comm
        if not (yield_mode and deficit <= 0):
            for i in range(n_open):
                if oi[i, F_DEL] or oi[i, F_COMM]:
                    continue
                n, o, run = oi[i, F_N], oi[i, F_O], oi[i, F_RUN]
                s = o * n if n <= run else o * run + 1 - o
                m = next_request(n, s, k, oi[i, F_PLAN : F_PLAN + 5], probe_p, incr_p)
                m = min(m, cap - used)
                if m > 0:
                    req_slot[nreq], req_n[nreq] = i, m
                    nreq += 1
                    used += m
            if yield_mode:
                want = yield_probes(rates, cfg.tau_low, deficit, n_cont)
            else:
                want = budget_probes(rates, k, budget_left, used, reserved, n_live > 0)
            skips_left = skip_budget(want)
            while want > 0 and used < cap and skips_left > 0:
                if fresh_rates:  # pull() of this stream, without its call overhead
                    pid = st[2]
                    st[2] += 1
                    c = 0 if n_comp == 1 else pick_component(rs, cw)  # draw_rate in two halves
                    g = component_rate(rs, law.comp_kind[c], law.comp_a[c], law.comp_b[c])
                    hc, hn = 0, -1
                else:
                    pid, g, hc, hn = pull(rs, law, stream, step)
                    if pid < 0:
                        break
                out[mt.I_FRESH] += 1
                hp, epoch = -1, 0.0
                if history:
                    hp, epoch = history_key(law, pid, st)
                    evp = ev[hp] if 0 <= hp < ev.shape[0] else blank
                    u = uniform(rs)
                    pl = history_plan(evp, epoch, hist, pop, k, cfg.tau_low, price(rates, k), u)
                else:
                    pl = plan  # every prompt of a step starts from the step's plan
                if pl[0] == ABANDON:  # skipped before any rollout
                    mixed = _full_mixed(rs, g, hc, hn, k, pid if seqmode else -1, seq)
                    out[mt.I_ABANDONED] += 1
                    out[mt.I_FALSE_AB] += mixed
                    out[mt.I_SKIPPED] += 1
                    out[mt.I_DEC] += 1
                    out[mt.I_DEC_AB] += 1
                    out[mt.I_DEC_FALSE] += mixed
                    skips_left -= 1
                    if history and 0 <= hp < ev.shape[0]:
                        observe(ev[hp], 0.0, 0.0, epoch, hist.rho)
                    continue
                first = k if pl[0] == COMMIT else next_request(0, 0, k, pl, probe_p, incr_p)
                m = min(first, cap - used)  # the rest of a too-big probe follows next round
                if n_open >= maxo and n_live < n_open:  # make room: drop the decided slots now
                    n_open = _compact(oi, og, n_open, req_slot, nreq)
                if n_open >= maxo:
                    out[mt.I_OVERFLOW] = 1.0
                    return
                if seqmode or hn >= 0:
                    _open_slot(rs, oi, og, n_open, pid, g, hc, hn, k, pl, pid if seqmode else -1,
                               seq)  # fmt: skip
                else:  # what _open_slot does for a prompt with a rate, without the call
                    o, run = run_rate(rs, g, k)
                    oi[n_open, F_PID], oi[n_open, F_N], oi[n_open, F_O] = pid, 0, o
                    oi[n_open, F_RUN], oi[n_open, F_CL], oi[n_open, F_NL] = run, -1, -1
                    oi[n_open, F_FULLMIX], oi[n_open, F_DEL] = 1 if run < k else 0, 0
                    oi[n_open, F_COMM] = 1 if pl[0] == COMMIT else 0
                    for t in range(5):
                        oi[n_open, F_PLAN + t] = pl[t]
                    og[n_open] = g
                oi[n_open, F_EPOCH] = int(epoch)
                req_slot[nreq], req_n[nreq] = n_open, m
                nreq += 1
                used += m
                n_open += 1
                n_live += 1
                want -= 1
        if nreq == 0:
            break
        # ---- the round: engine call, then every touched prompt is updated in request order ----
        rounds += 1
        size = 0
        for q in range(nreq):
            size += req_n[q]
        out[mt.I_ROLLOUTS] += size
        rates[R_ROLLOUTS] += size
        budget_left -= size
        for q in range(nreq):
            i = req_slot[q]
            n = oi[i, F_N] + req_n[q]
            oi[i, F_N] = n
            o, run = oi[i, F_O], oi[i, F_RUN]
            s = o * n if n <= run else o * run + 1 - o  # any mixed s decides the same
            d = COMMIT if oi[i, F_COMM] else decide_plan(n, s, k, oi[i, F_PLAN : F_PLAN + 5])
            if d == CONTINUE:
                continue
            if d == COMMIT:
                if not oi[i, F_COMM]:
                    oi[i, F_COMM] = 1
                    track(rates, True, k)
                if n < k:
                    continue
                if seqmode or oi[i, F_NL] >= 0:
                    row = oi[i, F_PID] if seqmode else -1
                    s = full_successes(rs, o, run, k, og[i], oi[i, F_CL], oi[i, F_NL], row, seq)
                else:  # what full_successes does for a prompt with a rate (scalar arguments)
                    s = rate_successes(rs, o, run, k, og[i])
            if eb.shape[0] > 0:
                eb[n, s] += 1  # outcomes actually drawn feed the EB prior
            oi[i, F_DEL] = 1
            n_live -= 1
            pid = oi[i, F_PID]
            if history:  # dated by the visit's own epoch: it may end after a later visit
                hp = history_key(law, pid, st)[0]
                if 0 <= hp < ev.shape[0]:
                    observe(ev[hp], float(s), float(n), float(oi[i, F_EPOCH]), hist.rho)
            target = 0
            out[mt.I_DEC] += 1
            out[mt.I_DEC_ROLLOUTS] += n
            if d == COMMIT:
                out[mt.I_TOKENS] += s * cfg.len_pass + (k - s) * cfg.len_fail
                mixed = 0 < s < k
                if mixed:
                    rates[R_EFFECTIVE] += 1
                    out[mt.I_DEC_EFF] += 1
                    out[mt.I_DEC_PROXY] += s * (k - s) / kk
                if yield_mode and n_groups >= groups:
                    done[n_done, 0], done[n_done, 1] = pid, s  # surplus: next step's batch
                    n_done += 1
                    target = 2
                else:
                    n_groups += 1
                    target = 1
                    out[mt.I_GROUPS] += 1
                    if mixed:
                        out[mt.I_EFFECTIVE] += 1
                        out[mt.I_PROXY] += s * (k - s) / kk
                        if drift:
                            trained[pid] += 1
            else:
                track(rates, False, n)
                out[mt.I_TOKENS] += n * (cfg.len_pass if o == 1 else cfg.len_fail)
                if d == ABANDON:
                    out[mt.I_ABANDONED] += 1
                    out[mt.I_FALSE_AB] += oi[i, F_FULLMIX]
                    out[mt.I_AB_ROLLOUTS] += n
                    out[mt.I_WASTE] += n
                    out[mt.I_DEC_AB] += 1
                    out[mt.I_DEC_FALSE] += oi[i, F_FULLMIX]
                else:
                    out[mt.I_SATURATED] += 1
                    out[mt.I_WASTE] += k
            nl = cnt[C_LOG]
            if nl < log.shape[0]:
                log[nl, EV_STEP], log[nl, EV_ROUND], log[nl, EV_PID] = step, rounds, pid
                log[nl, EV_DECISION], log[nl, EV_N], log[nl, EV_S] = d, n, s
                log[nl, EV_TARGET] = target
                cnt[C_LOG] = nl + 1
    if n_live < n_open:  # compact the open table, keeping insertion order
        n_open = _compact(oi, og, n_open, req_slot, 0)
    out[mt.I_ROUNDS] = rounds
    out[mt.I_CARRIED] = n_done
    out[mt.I_CARRIED_OPEN] = n_open
    cnt[C_OPEN], cnt[C_DONE] = n_open, n_done


@njit(cache=True, parallel=True)
def sara_steps(law, cfg, plans, state, step0, n_steps, outs):
    """Steps step0 .. step0 + n_steps - 1 for every replicate (see module docstring).

    Per-replicate state (generator state.rng[r] included) is updated in place; outs.out[r, j]
    holds step j's metrics; outs.eb[r, n, s] counts the (n, s) of prompts decided during the call
    (sara-eb / sara-auto / sara-history fit their prior on it; shape (R, 0, 0) skips it)."""
    oi = state.oi
    for r in prange(state.rng.shape[0]):
        mine = (Stream(state.st[r], state.perm[r], state.pool_x[r], state.trained[r]),
                state.ev[r], oi[r], state.og[r], state.done[r], state.cnt[r], state.rates[r],
                state.pop[r])  # fmt: skip
        req_slot = np.empty(oi.shape[1], np.int64)  # the round's requests, reused step to step
        req_n = np.empty(oi.shape[1], np.int64)
        out = outs.out[r]
        for j in range(n_steps):
            _sara_step(law, state.rng[r], step0 + j, cfg, plans[r], mine, out[j], outs.eb[r],
                       outs.log[r], req_slot, req_n)  # fmt: skip
            if out[j, mt.I_OVERFLOW] > 0:
                break

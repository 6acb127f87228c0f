"""Numba kernel of SARA's round-synchronous collection (DESIGN §2): sara, sara-eb, sara-auto,
sara-history and SPEED-RL.

``sara_steps`` runs ``n_steps`` training steps of R independent replicates (``prange`` over
replicates, each drawing from its own generator, see ``rng``).  Each step mirrors
``sara_collector.SaraCollector.collect_step`` line by line — fills first, then continues, then
probes of fresh prompts up to the round capacity (a too-big probe is split), the same running
commit/cost rates, the same carry of surplus groups and in-progress prompts — and takes every
decision through the core's jitted ``policy.decide_plan`` / ``policy.next_request`` on the plan
the prompt was opened with.  Nothing of the rule is re-implemented here: a test feeds both the
same outcome sequences and compares every decision.  Outcomes come from run-length summaries
(``sources.run_*``): O(1) draws per prompt.

Plans: sara / sara-eb / sara-auto / speed open every prompt of a step with the step's plan (from
``strategies.SaraPlanner``); SPEED-RL is the plan [CONTINUE, 1, n_init, 1, n_init] with probe
n_init (screen, then fill only the mixed).  sara-history builds each prompt's plan from its own
discounted outcomes (``informed.informed_prior`` / ``informed.informed_plan``, the core's jitted
functions) at the stream's running price lam = rollouts / effective groups.

Arguments: cfg_i = [k, groups (N), budget (0: fixed-yield), capacity, probe, increment,
max_rounds]; cfg_f = [tau_low, len_pass, len_fail, history on, rho, kappa, explore, price
rule, max_skip];
state = per-replicate arrays (leading axis R): (st, perm, pool_x, trained, ev, oi, og, done, cnt,
rates, pop) — stream position / pass order / pool rates / times trained, per-prompt evidence
[S, F, last pass, skips in a row], the open-prompt table (ints, rates), carried groups [pid, s],
counters [n_open, n_done, n_log], [commit rate, cost rate, total rollouts, total effective] and
the population prior of sara-history.
"""

import math

import numpy as np
from numba import njit, prange

from .informed import informed_plan, informed_prior
from .metrics import (
    I_AB_ROLLOUTS,
    I_ABANDONED,
    I_CAPPED,
    I_CARRIED,
    I_CARRIED_OPEN,
    I_DEC,
    I_DEC_AB,
    I_DEC_EFF,
    I_DEC_FALSE,
    I_DEC_PROXY,
    I_DEC_ROLLOUTS,
    I_EFFECTIVE,
    I_FALSE_AB,
    I_FRESH,
    I_GROUPS,
    I_OVERFLOW,
    I_PROXY,
    I_ROLLOUTS,
    I_ROUNDS,
    I_SATURATED,
    I_SKIPPED,
    I_TOKENS,
    I_WASTE,
)
from .policy import ABANDON, COMMIT, CONTINUE, decide_plan, next_request
from .rng import uniform
from .sources import (
    DRIFT,
    RATES,
    SEQUENCES,
    component_rate,
    full_successes,
    pick_component,
    pull,
    rate_successes,
    run_rate,
    run_seq,
    run_urn,
)

# open-slot integer fields; the slot's rate lives in a parallel float array
F_PID, F_N, F_COMM, F_O, F_RUN, F_CL, F_NL, F_FULLMIX, F_DEL, F_PLAN = range(10)
N_FIELDS = F_PLAN + 5
EV_STEP, EV_ROUND, EV_PID, EV_DECISION, EV_N, EV_S, EV_TARGET = range(7)
C_OPEN, C_DONE, C_LOG = range(3)
R_COMMIT, R_COST, R_ROLLOUTS, R_EFFECTIVE = range(4)


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
def _track(rates, commit, rollouts):
    c, r = float(commit), float(rollouts)
    w = 0.05
    rates[R_COMMIT] = c if math.isnan(rates[R_COMMIT]) else (1 - w) * rates[R_COMMIT] + w * c
    rates[R_COST] = r if math.isnan(rates[R_COST]) else (1 - w) * rates[R_COST] + w * r


@njit(cache=True)
def _observe(ev, pid, s, n, clock, rho):
    """PromptHistory.observe: discount the prompt's evidence by age, add what was drawn; count
    skips in a row (n = 0)."""
    if pid < 0 or pid >= ev.shape[0]:
        return
    if ev[pid, 2] < 0:
        ev[pid, 0], ev[pid, 1], ev[pid, 2], ev[pid, 3] = s, n - s, clock, 0.0 if n else 1.0
        return
    w = rho ** max(clock - ev[pid, 2], 0.0)
    ev[pid, 0], ev[pid, 1], ev[pid, 2] = w * ev[pid, 0] + s, w * ev[pid, 1] + n - s, clock
    ev[pid, 3] = 0.0 if n else ev[pid, 3] + 1.0


@njit(cache=True)
def _history_plan(rs, ev, pid, clock, k, cfg_f, pop, rates):
    """sara-history: the plan of one prompt from its own prior (PromptHistory.plan), with its
    starvation guards: never skipped without evidence of its own or after max_skip skips."""
    s_ev, f_ev, age, must = 0.0, 0.0, 0.0, True
    if 0 <= pid < ev.shape[0] and ev[pid, 2] >= 0:
        s_ev, f_ev, age = ev[pid, 0], ev[pid, 1], clock - ev[pid, 2]
        must = s_ev + f_ev == 0 or ev[pid, 3] >= cfg_f[8]
    a, b = informed_prior(s_ev, f_ev, age, cfg_f[4], pop[0], pop[1], cfg_f[5])
    eff = rates[R_EFFECTIVE]
    lam = 2.0 * k if eff == 0 else rates[R_ROLLOUTS] / eff
    u = uniform(rs)
    return informed_plan(a, b, k, cfg_f[0], lam, cfg_f[7] > 0, cfg_f[6], u, must)


@njit(cache=True)
def _sara_step(law, rs, step, cfg_i, cfg_f, plan, state, out, eb, log, req_slot, req_n):
    kind, n_pool, n_epochs, cw, ck, ca, cb, rec_c, rec_n, drift_p, seq = law
    st, perm, pool_x, trained, ev, oi, og, done, cnt, rates, pop = state
    k, groups, budget, capacity, probe_p, incr_p, max_rounds = cfg_i[:7]
    history, rho = cfg_f[3] > 0, cfg_f[4]
    n_seq = seq.shape[0]
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
        out[I_GROUPS] += 1
        if 0 < s < k:
            out[I_EFFECTIVE] += 1
            out[I_PROXY] += s * (k - s) / kk
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
            out[I_CAPPED] = 1.0
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
                cr = rates[R_COMMIT]
                rate = cr if (not math.isnan(cr) and cr != 0.0) else max(1.0 - cfg_f[0], 0.05)
                want = math.ceil(max(deficit - 0.5 * n_cont, 0.0) / max(rate, 0.05))
            else:
                cs = rates[R_COST]
                per = cs if (not math.isnan(cs) and cs != 0.0) else float(k)
                want = math.floor(max(budget_left - used - reserved, 0) / per)
                if n_live == 0 and budget_left - used >= 1:
                    want = max(want, 1)
            skips_left = 20 * max(want, 1) + 100  # a stream of skipped prompts cannot spin
            while want > 0 and used < cap and skips_left > 0:
                if fresh_rates:  # pull() of this stream, without its call overhead
                    pid = st[2]
                    st[2] += 1
                    c = 0 if n_comp == 1 else pick_component(rs, cw)  # draw_rate in two halves
                    g, hc, hn = component_rate(rs, ck[c], ca[c], cb[c]), 0, -1
                else:
                    pid, g, hc, hn = pull(rs, kind, n_pool, n_epochs, cw, ck, ca, cb, rec_c,
                                          rec_n, drift_p, n_seq, st, perm, pool_x, trained,
                                          step)  # fmt: skip
                    if pid < 0:
                        break
                out[I_FRESH] += 1
                hp = pid if n_pool > 0 else -1
                if history:
                    pl = _history_plan(rs, ev, hp, float(st[1]), k, cfg_f, pop, rates)
                else:
                    pl = plan  # every prompt of a step starts from the step's plan
                if pl[0] == ABANDON:  # skipped before any rollout
                    mixed = _full_mixed(rs, g, hc, hn, k, pid if seqmode else -1, seq)
                    out[I_ABANDONED] += 1
                    out[I_FALSE_AB] += mixed
                    out[I_SKIPPED] += 1
                    out[I_DEC] += 1
                    out[I_DEC_AB] += 1
                    out[I_DEC_FALSE] += mixed
                    skips_left -= 1
                    if history:
                        _observe(ev, hp, 0, 0, float(st[1]), rho)
                    continue
                first = k if pl[0] == COMMIT else next_request(0, 0, k, pl, probe_p, incr_p)
                m = min(first, cap - used)  # the rest of a too-big probe follows next round
                if n_open >= maxo and n_live < n_open:  # make room: drop the decided slots now
                    n_open = _compact(oi, og, n_open, req_slot, nreq)
                if n_open >= maxo:
                    out[I_OVERFLOW] = 1.0
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
        out[I_ROLLOUTS] += size
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
                    _track(rates, 1, k)
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
            if history:
                _observe(ev, pid if n_pool > 0 else -1, s, n, float(st[1]), rho)
            target = 0
            out[I_DEC] += 1
            out[I_DEC_ROLLOUTS] += n
            if d == COMMIT:
                out[I_TOKENS] += s * cfg_f[1] + (k - s) * cfg_f[2]
                mixed = 0 < s < k
                if mixed:
                    rates[R_EFFECTIVE] += 1
                    out[I_DEC_EFF] += 1
                    out[I_DEC_PROXY] += s * (k - s) / kk
                if yield_mode and n_groups >= groups:
                    done[n_done, 0], done[n_done, 1] = pid, s  # surplus: next step's batch
                    n_done += 1
                    target = 2
                else:
                    n_groups += 1
                    target = 1
                    out[I_GROUPS] += 1
                    if mixed:
                        out[I_EFFECTIVE] += 1
                        out[I_PROXY] += s * (k - s) / kk
                        if drift:
                            trained[pid] += 1
            else:
                _track(rates, 0, n)
                out[I_TOKENS] += n * (cfg_f[1] if o == 1 else cfg_f[2])
                if d == ABANDON:
                    out[I_ABANDONED] += 1
                    out[I_FALSE_AB] += oi[i, F_FULLMIX]
                    out[I_AB_ROLLOUTS] += n
                    out[I_WASTE] += n
                    out[I_DEC_AB] += 1
                    out[I_DEC_FALSE] += oi[i, F_FULLMIX]
                else:
                    out[I_SATURATED] += 1
                    out[I_WASTE] += k
            nl = cnt[C_LOG]
            if nl < log.shape[0]:
                log[nl, EV_STEP], log[nl, EV_ROUND], log[nl, EV_PID] = step, rounds, pid
                log[nl, EV_DECISION], log[nl, EV_N], log[nl, EV_S] = d, n, s
                log[nl, EV_TARGET] = target
                cnt[C_LOG] = nl + 1
    if n_live < n_open:  # compact the open table, keeping insertion order
        n_open = _compact(oi, og, n_open, req_slot, 0)
    out[I_ROUNDS] = rounds
    out[I_CARRIED] = n_done
    out[I_CARRIED_OPEN] = n_open
    cnt[C_OPEN], cnt[C_DONE] = n_open, n_done


@njit(cache=True, parallel=True)
def sara_steps(law, rng, step0, n_steps, cfg_i, cfg_f, plans, state, out, eb, log):
    """Steps step0 .. step0 + n_steps - 1 for every replicate (see module docstring).

    Per-replicate state (generator rng[r] included) is updated in place; out[r, j] holds step j's
    metrics; eb[r, n, s] counts the (n, s) of prompts decided during the call (sara-eb /
    sara-auto / sara-history fit their prior on it; shape (R, 0, 0) skips it)."""
    st, perm, pool_x, trained, ev, oi, og, done, cnt, rates, pop = state
    for r in prange(rng.shape[0]):
        mine = (st[r], perm[r], pool_x[r], trained[r], ev[r], oi[r], og[r], done[r], cnt[r],
                rates[r], pop[r])  # fmt: skip
        req_slot = np.empty(oi.shape[1], np.int64)  # the round's requests, reused step to step
        req_n = np.empty(oi.shape[1], np.int64)
        for j in range(n_steps):
            _sara_step(law, rng[r], step0 + j, cfg_i, cfg_f, plans[r], mine, out[r, j], eb[r],
                       log[r], req_slot, req_n)  # fmt: skip
            if out[r, j, I_OVERFLOW] > 0:
                break

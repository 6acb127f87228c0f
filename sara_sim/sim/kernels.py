"""Numba kernel of SARA's round-synchronous collection (docs/design.md §2): sara, sara-eb,
sara-auto, sara-history and SPEED-RL.

``sara_steps`` runs ``n_steps`` training steps of R independent replicates (``prange`` over
replicates, each drawing from its own generator, see ``rng``).  Each step is a driver of the
core's round state machine (``core/rounds.py``: fills, then continues, then probes up to the round
capacity; the running rates; the carry of surplus groups and in-progress prompts), the one the
collector (``sara_collector.SaraCollector``) drives with an engine; a test feeds both the same
outcome sequences and compares every decision.  This module only draws: which prompt comes next,
its plan, its outcomes — from run-length summaries (``sources.run_*``): O(1) draws per prompt —
and writes the metrics.

Plans: sara / sara-eb / sara-auto / speed open every prompt of a step with the step's plan (from
``strategies.SaraPlanner``); SPEED-RL is the plan [CONTINUE, 1, n_init, 1, n_init] with probe
n_init (screen, then fill only the mixed).  sara-history builds each prompt's plan from its own
discounted outcomes (``schedule.history_plan``) at the run's running price lam = rollouts /
effective groups; a visit's outcomes are dated by the epoch it was pulled in.

Arguments are named tuples: the law (``sources.Law``), the configuration (``SaraConfig``), the
per-replicate state (``SaraState``; one replicate's view: ``Replicate``) and the outputs
(``StepOutputs``).
"""

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..core.policy import ABANDON, COMMIT, CONTINUE
from ..core.rounds import (
    BATCH,
    C_CAPPED,
    C_DONE,
    C_NREQ,
    C_OPEN,
    C_ROUNDS,
    CARRIED,
    F_KEY,
    N_COUNTERS,
    NO_REFCOUNT,
    S_FIELDS,
    RoundConfig,
    Rounds,
    absorb,
    begin_step,
    end_step,
    landing,
    launch,
    note_skip,
    offer,
    plan_round,
    settle,
    wants_prompt,
)
from ..core.schedule import history_plan, new_evidence, observe, price
from . import metrics as mt  # the metric row layout, I_*
from .rng import uniform
from .sources import (
    DRIFT,
    RATES,
    SEQUENCES,
    PromptSource,
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

# the kernel's own slot fields after the state machine's (``rounds.F_*``): the opening run
# (outcome, length), the urn's passes / size (-1: a rate, in ``Rounds.vals``), the visit's epoch
F_O, F_RUN, F_CL, F_NL, F_EPOCH = range(S_FIELDS, S_FIELDS + 5)
N_FIELDS = F_EPOCH + 1
C_LOG = N_COUNTERS  # events logged, after the state machine's counters
N_COUNTS = C_LOG + 1
EV_STEP, EV_ROUND, EV_PID, EV_DECISION, EV_N, EV_S, EV_TARGET = range(7)


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
    carry: bool  # rounds.RoundConfig.carry


class SaraState(NamedTuple):
    """Per-replicate state, leading axis R (see module docstring); updated in place."""

    rng: np.ndarray
    st: np.ndarray  # [R, ...] the fields of ``sources.PromptSource`` (flat: see SaraConfig)
    perm: np.ndarray
    pool_x: np.ndarray
    trained: np.ndarray
    ev: np.ndarray  # [R, prompts, EV_*] evidence of sara-history (0 prompts otherwise)
    oi: np.ndarray  # [R, slots, N_FIELDS] open prompts (``rounds.F_*``, then F_O .. F_EPOCH)
    og: np.ndarray  # [R, slots] their rates
    done: np.ndarray  # [R, slots, 2] carried complete groups [pid, s]
    cnt: np.ndarray  # [R, N_COUNTS]: ``rounds.C_*``, then C_LOG
    rates: np.ndarray  # [R, R_*]
    pop: np.ndarray  # [R, 2] sara-history's population prior


class StepOutputs(NamedTuple):
    out: np.ndarray  # [R, steps, N_METRICS]
    eb: np.ndarray  # [R, k + 1, k + 1] (n, s) of decided prompts; (R, 0, 0): not collected
    log: np.ndarray  # [R, events, EV_*] decision log


class Replicate(NamedTuple):
    """One replicate's view of the state, as the step's phases take it."""

    rng: np.ndarray
    source: PromptSource
    ev: np.ndarray
    sm: Rounds  # the round state machine over this replicate's open table
    done: np.ndarray
    pop: np.ndarray
    plan: np.ndarray  # the step's plan (every prompt's, but sara-history's)
    blank: np.ndarray  # the evidence of a prompt without a history of its own
    eb: np.ndarray
    log: np.ndarray


@njit(**NO_REFCOUNT)
def _round_config(cfg):
    return RoundConfig(
        cfg.k,
        cfg.groups,
        cfg.budget,
        cfg.capacity,
        cfg.probe,
        cfg.increment,
        cfg.max_rounds,
        cfg.tau_low,
        cfg.carry,
        1.0,
        0,
        False,
    )


@njit(**NO_REFCOUNT)
def _successes(o, run, n):
    """Successes of the first n outcomes as far as the run summary knows (any mixed s decides
    the same)."""
    return o * n if n <= run else o * run + 1 - o


# The per-prompt work sits in the two per-round loops (``_probe``, ``_absorb_round``); what never
# allocates is compiled without reference counting (``rounds.NO_REFCOUNT``: two atomic updates
# per array passed would dominate a step at O(1) draws per prompt).  Only sara-history's plans
# allocate.  They are reached through `hist` (its ``schedule.HistoryKnobs``, None for every other
# strategy): Numba drops a branch on `hist is not None` when compiling for hist = None, so the
# step of the other strategies (``_sara_step_fast``) never allocates and compiles without
# reference counts — a function compiled without them compiles its callees without them too —
# while sara-history's step keeps them (``_sara_step``).


@njit(cache=True)
def _probe(law, cfg, rc, rep, step, out, hist):
    """Phase 3 of a round: fresh prompts, one at a time, while the state machine wants them.
    False: the open table is full (the caller retries with a larger one)."""
    sm, rs, st, k = rep.sm, rep.rng, rep.source.st, cfg.k
    fresh_rates, cw = law.kind == RATES and law.pool == 0, law.cum_weights
    while wants_prompt(sm):
        if fresh_rates:  # pull() of this prompt source, without its call overhead
            pid, hc, hn = st[2], 0, -1
            st[2] += 1
            c = 0 if cw.shape[0] == 1 else pick_component(rs, cw)  # draw_rate in two halves
            g = component_rate(rs, law.comp_kind[c], law.comp_a[c], law.comp_b[c])
        else:
            pid, g, hc, hn = pull(rs, law, rep.source, step)
            if pid < 0:
                break
        out[mt.I_FRESH] += 1
        plan, hp, epoch = rep.plan, -1, 0.0  # every prompt of a step starts from its plan ...
        if hist is not None:  # ... but sara-history's, from the prompt's own evidence
            hp, epoch = history_key(law, pid, st)
            evp = rep.ev[hp] if 0 <= hp < rep.ev.shape[0] else rep.blank
            u = uniform(rs)
            lam, pop = price(sm.rates, k), rep.pop  # pop: (A, B, w_fail, w_pass)
            plan = history_plan(evp, epoch, hist, pop, k, cfg.tau_low, lam, u, pop[2], pop[3])
        if plan[0] == ABANDON:  # skipped before any rollout
            _skipped(law, cfg, rep, (pid, g, hc, hn), hp, epoch, out)
            note_skip(sm)
            continue
        j = offer(sm, rc, plan)
        if j < 0:
            return False
        cl, nl = -1, -1
        if law.kind == SEQUENCES:
            o, run, _ = run_seq(pid, law.seq, k)
        elif hn >= 0:
            o, run, cl, nl = run_urn(rs, hc, hn, k)
        else:
            o, run = run_rate(rs, g, k)
        slots = sm.slots
        slots[j, F_KEY], slots[j, F_O], slots[j, F_RUN] = pid, o, run
        slots[j, F_CL], slots[j, F_NL], slots[j, F_EPOCH] = cl, nl, int(epoch)
        sm.vals[j] = g
    return True


@njit(**NO_REFCOUNT)
def _skipped(law, cfg, rep, fresh, hp, epoch, out):
    """A prompt abandoned before any rollout: would its full group have been mixed?"""
    pid, g, hc, hn = fresh
    k = cfg.k
    if law.kind == SEQUENCES:
        mixed = 1 if 0 < run_seq(pid, law.seq, k)[2] < k else 0
    elif hn >= 0:
        mixed = 1 if run_urn(rep.rng, hc, hn, k)[1] < k else 0
    else:
        mixed = 1 if run_rate(rep.rng, g, k)[1] < k else 0
    for i in (mt.I_ABANDONED, mt.I_SKIPPED, mt.I_DEC, mt.I_DEC_AB):
        out[i] += 1
    out[mt.I_FALSE_AB] += mixed
    out[mt.I_DEC_FALSE] += mixed
    if cfg.history and 0 <= hp < rep.ev.shape[0]:
        observe(rep.ev[hp], 0.0, 0.0, epoch, cfg.rho)


@njit(**NO_REFCOUNT)
def _absorb_round(law, cfg, rc, rep, step, out):
    """The round's outcomes, request by request in order: each touched prompt is updated; a
    decided one is booked (the EB tally, its history, the carried payload, metrics, the log)."""
    sm, rs, k = rep.sm, rep.rng, cfg.k
    slots, seqmode = sm.slots, law.kind == SEQUENCES
    for q in range(sm.cnt[C_NREQ]):
        i, n = landing(sm, q)
        o, run = slots[i, F_O], slots[i, F_RUN]
        s = _successes(o, run, n)
        d = absorb(sm, rc, q, s)
        if d == CONTINUE:
            continue
        pid, cl, nl = slots[i, F_KEY], slots[i, F_CL], slots[i, F_NL]
        if d == COMMIT:  # the rest of the group beyond the opening run is drawn now
            if seqmode or nl >= 0:
                row = pid if seqmode else -1
                s = full_successes(rs, o, run, k, sm.vals[i], (cl, nl), row, law.seq)
            else:
                s = rate_successes(rs, o, run, k, sm.vals[i])
        target = settle(sm, rc, i, d, s)
        if rep.eb.shape[0] > 0:
            rep.eb[n, s] += 1  # outcomes actually drawn feed the EB prior
        if cfg.history:  # dated by the visit's own epoch: it may end after a later visit
            hp = history_key(law, pid, rep.source.st)[0]
            if 0 <= hp < rep.ev.shape[0]:
                observe(rep.ev[hp], float(s), float(n), float(slots[i, F_EPOCH]), cfg.rho)
        if target == CARRIED:
            j = sm.cnt[C_DONE] - 1  # surplus: next step's batch
            rep.done[j, 0], rep.done[j, 1] = pid, s
        elif target == BATCH and law.kind == DRIFT and 0 < s < k:
            rep.source.trained[pid] += 1
        _decided(cfg, (d, n, s, o, run < k, target), out)
        nl = sm.cnt[C_LOG]
        if nl < rep.log.shape[0]:
            ev = rep.log[nl]
            ev[EV_STEP], ev[EV_ROUND], ev[EV_PID] = step, sm.cnt[C_ROUNDS], pid
            ev[EV_DECISION], ev[EV_N], ev[EV_S], ev[EV_TARGET] = d, n, s, target
            sm.cnt[C_LOG] = nl + 1


@njit(**NO_REFCOUNT)
def _decided(cfg, fate, out):
    """The metrics of a prompt whose fate is sealed (committed group complete, abandoned,
    saturated); full_mixed: its full group of k would have been mixed."""
    d, n, s, o, full_mixed, target = fate
    k = cfg.k
    out[mt.I_DEC] += 1
    out[mt.I_DEC_ROLLOUTS] += n
    if d == COMMIT:
        out[mt.I_TOKENS] += s * cfg.len_pass + (k - s) * cfg.len_fail
        if 0 < s < k:
            out[mt.I_DEC_EFF] += 1
            out[mt.I_DEC_PROXY] += s * (k - s) / float(k * k)
        if target == BATCH:
            _batch_group(k, s, out)
        return
    out[mt.I_TOKENS] += n * (cfg.len_pass if o == 1 else cfg.len_fail)
    if d == ABANDON:
        mixed = 1 if full_mixed else 0
        out[mt.I_ABANDONED] += 1
        out[mt.I_FALSE_AB] += mixed
        out[mt.I_AB_ROLLOUTS] += n
        out[mt.I_WASTE] += n
        out[mt.I_DEC_AB] += 1
        out[mt.I_DEC_FALSE] += mixed
    else:
        out[mt.I_SATURATED] += 1
        out[mt.I_WASTE] += k


@njit(**NO_REFCOUNT)
def _batch_group(k, s, out):
    """A complete group with s passes enters this step's batch (fresh, or carried in)."""
    out[mt.I_GROUPS] += 1
    if 0 < s < k:
        out[mt.I_EFFECTIVE] += 1
        out[mt.I_PROXY] += s * (k - s) / float(k * k)


def _step(law, cfg, rep, step, out, hist):
    """One training step of one replicate: the round state machine driven by this replicate's
    generator; out: the step's metrics row; hist: sara-history's knobs, else None."""
    sm, rc = rep.sm, _round_config(cfg)
    out[:] = 0.0
    for j in range(begin_step(sm, rc)):  # complete groups carried from the last step come first
        pid, s = rep.done[j, 0], rep.done[j, 1]
        _batch_group(cfg.k, s, out)
        if law.kind == DRIFT and 0 < s < cfg.k:
            rep.source.trained[pid] += 1
    while plan_round(sm, rc):
        if not _probe(law, cfg, rc, rep, step, out, hist):
            out[mt.I_OVERFLOW] = 1.0
            return
        size = launch(sm)
        if size == 0:
            break
        out[mt.I_ROLLOUTS] += size
        _absorb_round(law, cfg, rc, rep, step, out)
    out[mt.I_WASTE] += end_step(sm, rc)  # > 0 only without carrying
    out[mt.I_CAPPED] = sm.cnt[C_CAPPED]
    out[mt.I_ROUNDS] = sm.cnt[C_ROUNDS]
    out[mt.I_CARRIED] = sm.cnt[C_DONE]
    out[mt.I_CARRIED_OPEN] = sm.cnt[C_OPEN]


_sara_step = njit(cache=True)(_step)  # sara-history: its plans allocate
_sara_step_fast = njit(**NO_REFCOUNT)(_step)  # every other strategy (hist = None)


@njit(cache=True, parallel=True)
def sara_steps(law, cfg, plans, state, step0, n_steps, outs, hist):
    """Steps step0 .. step0 + n_steps - 1 for every replicate (see module docstring); `hist`:
    sara-history's ``schedule.HistoryKnobs``, None for every other strategy.

    Per-replicate state (generator state.rng[r] included) is updated in place; outs.out[r, j]
    holds step j's metrics; outs.eb[r, n, s] counts the (n, s) of prompts decided during the call
    (sara-eb / sara-auto / sara-history fit their prior on it; shape (R, 0, 0) skips it)."""
    oi = state.oi
    for r in prange(state.rng.shape[0]):
        req = np.empty((oi.shape[1], 2), np.int64)  # the round's requests, reused step to step
        sm = Rounds(oi[r], state.og[r], req, state.cnt[r], state.rates[r])
        source = PromptSource(state.st[r], state.perm[r], state.pool_x[r], state.trained[r])
        rep = Replicate(
            state.rng[r],
            source,
            state.ev[r],
            sm,
            state.done[r],
            state.pop[r],
            plans[r],
            new_evidence(),
            outs.eb[r],
            outs.log[r],
        )
        out = outs.out[r]
        for j in range(n_steps):
            if hist is None:  # a literal None: Numba prunes `hist is None` only for a None-typed
                # argument, so hist itself would type this call with HistoryKnobs for sara-history
                _sara_step_fast(law, cfg, rep, step0 + j, out[j], None)
            else:
                _sara_step(law, cfg, rep, step0 + j, out[j], hist)
            if out[j, mt.I_OVERFLOW] > 0:
                break

"""The streaming driver's plan (``collect/stream.py``: round-free SARA, docs/design.md §2): the
round state machine of ``rounds.py`` applied one completion at a time.

A stream has no round to plan, only the rollouts now in flight: at each completion
``plan_stream`` queues the top-ups of the open slots in the round's order (fills of committed
prompts, then continues while groups are missing, then the probe quota for fresh prompts, which
the driver opens with ``rounds.wants_prompt`` / ``rounds.offer``), and ``send`` books what was
sent, as ``rounds.launch`` books a round.  The outcomes go through ``rounds.absorb`` /
``rounds.settle`` as one-rollout requests, so the decisions are the round driver's, written once.
"""

from numba import njit

from .rounds import (
    C_BUDGET,
    C_CAP,
    C_GROUPS,
    C_NREQ,
    C_OPEN,
    C_SKIPS,
    C_USED,
    C_WANT,
    F_COMM,
    F_DEL,
    F_N,
    NO_REFCOUNT,
    held_request,
    queue_request,
)
from .schedule import R_ROLLOUTS, skip_budget, yield_probes


@njit(**NO_REFCOUNT)
def _stream_request(sm, rc, i, flying):
    """Rollouts to add to slot i's `flying` in flight: up to its plan's request (``held_request``
    counts returned rollouts only) or, with rc.max_inflight = m, up to m in flight (eager: the
    plan decides at each return and what is then in flight is cancelled).  An undecided prompt
    asks for its next stage (a continue) only once its last stage has returned, as a round does:
    asked for at the first returns of an all-pass probe, a continue would be a request too many
    whenever a later return mixed the prompt (its fill then a third request), so each stage is
    one request and E[requests] is exact theory's (``theory.plan_law``'s rounds_per_prompt).  A
    committed prompt's fill goes at once, for what the plan still lacks."""
    n = sm.slots[i, F_N]
    if rc.max_inflight > 0:
        want = rc.max_inflight - flying
    elif flying > 0 and not sm.slots[i, F_COMM]:
        return 0
    else:
        want = held_request(sm, rc, i) - flying
    return max(min(want, rc.k - n - flying), 0)  # a group never needs more than k


@njit(**NO_REFCOUNT)
def _wanted(rc, deficit):
    """The groups the stream's probe quota stands for: the missing ones, plus (over - 1) x them
    tapered by the share of the step's groups still missing (over = rc.overprovision).  A round's
    quota is spent once per round, so ``plan_round`` scales the prompts it opens; a stream
    re-plans at every completion, counting the prompts still undecided (half each), so scaling
    one completion's quota would add only a prompt or two — a standing target keeps more prompts
    in play (the engine fuller, the step's tail shorter).  The taper (x over at the step's start,
    x 1 at its end) keeps few extra prompts open when the step ends, where "abort" / "fresh" pay
    for them: on the wall-clock model an untapered x2 cost sara 6 % more rollouts per group and
    a slower wall than the tapered one (benchmarks/investigations/stream_fill/stream_fill.py;
    benchmarks/investigations/stream_real)."""
    if rc.overprovision == 1.0:  # off by default: the exact-theory streams stay bit-identical
        return deficit
    return deficit + (rc.overprovision - 1.0) * deficit * deficit / rc.groups


@njit(**NO_REFCOUNT)
def plan_stream(sm, rc, fly, room, saturate):
    """The streaming driver's plan at one completion (fixed-yield): top-ups of the open slots —
    fills, then continues while groups are missing — into sm.req (each whole while any of `room`
    is left, with rc.whole: ``queue_request``;
    slots[j, fly]: slot j's rollouts in flight, a driver field), then the probe quota for fresh
    prompts (C_WANT) for the missing groups (``_wanted``: over-provisioned by
    rc.overprovision), as ``plan_round`` orders a round.  saturate: what is in flight outlives
    the step, so nothing waits and fresh prompts fill every free slot (the surplus is carried).
    False: the step's groups are all in."""
    c, slots = sm.cnt, sm.slots
    if c[C_GROUPS] >= rc.groups:
        return False
    c[C_CAP], c[C_NREQ], c[C_USED], c[C_WANT], c[C_SKIPS] = room, 0, 0, 0, 0
    n_comm, n_cont = 0, 0
    for i in range(c[C_OPEN]):  # 1) fills
        if slots[i, F_DEL]:
            continue
        if slots[i, F_COMM]:
            n_comm += 1
            queue_request(sm, rc, i, _stream_request(sm, rc, i, slots[i, fly]))
        else:
            n_cont += 1
    deficit = rc.groups - c[C_GROUPS] - n_comm
    if deficit <= 0 and not saturate:
        return True  # enough groups are certain: undecided prompts wait, as in a round
    for i in range(c[C_OPEN]):  # 2) continues
        if not (slots[i, F_DEL] or slots[i, F_COMM]):
            queue_request(sm, rc, i, _stream_request(sm, rc, i, slots[i, fly]))
    want = 0
    if deficit > 0:  # 3) the quota stands for the missing groups (over-provisioned: _wanted)
        want = yield_probes(sm.rates, rc.tau_low, _wanted(rc, deficit), n_cont)
    if saturate:
        want = max(want, room)  # each takes >= 1 rollout: the free slots stop the probes
    c[C_WANT], c[C_SKIPS] = want, skip_budget(want)
    return True


@njit(**NO_REFCOUNT)
def send(sm, rollouts):
    """A streaming driver sent `rollouts` (cancelled ones included: they were paid for): the
    running totals that ``launch`` keeps per round."""
    sm.cnt[C_BUDGET] -= rollouts
    sm.rates[R_ROLLOUTS] += rollouts

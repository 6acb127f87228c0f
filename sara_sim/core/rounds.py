"""SARA's step as one round state machine (docs/design.md §2), written once for every driver.

A driver owns where prompts and outcomes come from; this module owns what to ask for and what
the answers mean.  Two drivers: the Numba kernel (``sim/kernels.py``) draws outcomes with its own
generator; the collector (``collect/sara_collector.py``) sends the requests to an engine's
``sample`` callback and feeds the rewards back.  Both walk this protocol over one ``Rounds``
state::

    begin_step(sm, rc)                        # the groups carried from the last step come first
    while plan_round(sm, rc):                 # 1) fills of committed prompts  2) continues
        while wants_prompt(sm):               # 3) probes of fresh prompts, one at a time:
            ... pull a prompt, find its plan  #    the driver's prompt source, plans
            offer(sm, rc, plan) or note_skip(sm)
        if launch(sm) == 0:                   # the round's requests: sm.req[:sm.cnt[C_NREQ]]
            break
        for q in range(sm.cnt[C_NREQ]):       # outcomes, in request order
            d = absorb(sm, rc, q, s)          # s: the slot's successes so far
            if d != CONTINUE:                 # decided: the driver's s of the full group
                target = settle(sm, rc, slot, d, s)
    end_step(sm, rc)                          # decided slots dropped; open prompts carried

The order fill -> continue -> probe, the capacity clipping, the probe quota and skip budget
(``schedule``), the running rates and the commit / carry / abandon bookkeeping live here only
(``tests/sim/test_identity.py`` still feeds both drivers the same outcomes and compares every
decision).

The third driver, streaming (``collect/stream.py``: a prompt planned as soon as its rollouts return,
no round barrier), uses the same pieces one completion at a time: ``stream_plan.plan_stream`` (the
round's order fill -> continue -> probe quota, for the rollouts in flight) queues the top-ups of
the open slots, ``wants_prompt`` / ``offer`` open fresh prompts, ``stream_plan.send`` books what
is sent, ``absorb`` / ``settle`` take one rollout's outcome (a one-rollout request) — each
touches only the slot it names and the counters.

Slots: ``slots[j, F_*]`` (int64) with the state machine's fields first and the driver's own from
``S_FIELDS`` on (the kernel's run-length summary), ``vals[j]`` one float of the driver's per slot
(the kernel's success rate); both move together when decided slots are dropped.  ``F_KEY`` is the
driver's name of the visit (the kernel: the prompt id; the collector: its visit number).
"""

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .policy import COMMIT, CONTINUE, decide_plan, next_request
from .schedule import (
    R_EFFECTIVE,
    R_ROLLOUTS,
    budget_probes,
    skip_budget,
    track,
    yield_probes,
)

F_KEY, F_N, F_S, F_COMM, F_DEL, F_PLAN = range(6)  # slot fields: rollouts, successes, flags, plan
S_FIELDS = F_PLAN + 5  # the driver's fields start here
# counters: slots in use, undecided among them, groups carried out / in the batch, rounds, capped,
# budget left, this round's requests / rollouts / capacity / wanted probes / skips left
C_OPEN, C_LIVE, C_DONE, C_GROUPS, C_ROUNDS, C_CAPPED = range(6)
C_BUDGET, C_NREQ, C_USED, C_CAP, C_WANT, C_SKIPS = range(6, 12)
N_COUNTERS = 12
# Numba's option to compile without reference counting, for jitted code that never allocates: each
# array a call passes (a Rounds is five) otherwise costs two atomic reference-count updates, which
# at O(1) draws per prompt took half of the simulator's speed
# (benchmarks/investigations/simulator/sim_bench.py).
NO_REFCOUNT = {"cache": True, "_nrt": False}
DROPPED, BATCH, CARRIED = 0, 1, 2  # where a decided prompt went (settle)
UNLIMITED = 1 << 62  # the budget of a fixed-yield run


class RoundConfig(NamedTuple):
    """What a step asks for (fixed per run); budget <= 0: fixed-yield (`groups` per step)."""

    k: int
    groups: int
    budget: int
    capacity: int  # rollouts per round
    probe: int  # policy.next_request's probe / increment (0: auto)
    increment: int
    max_rounds: int
    tau_low: float
    carry: bool = True  # False: end_step drops surplus and open groups, as DS drops its surplus
    # each round's probe quota x this (>= 1): fewer rounds, surplus carried (docs/design.md §2);
    # a stream's standing quota over-provisioned by it (stream_plan._wanted): a fuller engine
    overprovision: float = 1.0
    max_inflight: int = 0  # rollouts in flight per prompt at once (0: the plan's requests)
    # a request is queued whole while capacity is left, the excess waits in the engine (a
    # stream's: one engine request per plan request); False: clipped to the capacity (a round's)
    whole: bool = False


def schedule_knobs(params):
    """(overprovision, max_inflight) of a ``registry.SaraParams``, checked: RoundConfig's last
    two fields."""
    from .errors import check_float, check_int

    over = check_float(params.overprovision, "overprovision", 1.0)
    return over, check_int(params.max_inflight, "max_inflight", 0)


class Rounds(NamedTuple):
    """One collection's state; arrays, updated in place (``new_rounds`` builds one)."""

    slots: np.ndarray  # [slots, >= S_FIELDS] int64: open prompts, F_* then the driver's fields
    vals: np.ndarray  # [slots] float64: the driver's value per slot
    req: np.ndarray  # [slots, 2] int64: this round's requests (slot, rollouts)
    cnt: np.ndarray  # [>= N_COUNTERS] int64: C_* (a driver may keep its own after them)
    rates: np.ndarray  # schedule's running rates, R_*


def new_rounds(n_slots, width=S_FIELDS, extra_counters=0):
    """An empty state with room for n_slots open prompts (grow with ``grown``)."""
    from .schedule import new_rates

    return Rounds(
        np.zeros((n_slots, width), np.int64),
        np.zeros(n_slots),
        np.zeros((n_slots, 2), np.int64),
        np.zeros(N_COUNTERS + extra_counters, np.int64),
        new_rates(),
    )


def grown(sm):
    """The same state with twice the slots (a driver whose table filled up)."""
    n, width = sm.slots.shape
    slots = np.zeros((2 * n, width), np.int64)
    vals, req = np.zeros(2 * n), np.zeros((2 * n, 2), np.int64)
    slots[:n], vals[:n], req[:n] = sm.slots, sm.vals, sm.req
    return Rounds(slots, vals, req, sm.cnt, sm.rates)


@njit(**NO_REFCOUNT)
def begin_step(sm, rc):
    """Start a step: the complete groups carried from the last one enter its batch first.
    Returns how many (the driver's carried payloads 0 .. n - 1)."""
    c = sm.cnt
    n = c[C_DONE]
    c[C_GROUPS], c[C_DONE], c[C_ROUNDS], c[C_CAPPED], c[C_NREQ] = n, 0, 0, 0, 0
    c[C_LIVE] = c[C_OPEN]  # the last step dropped its decided slots
    c[C_BUDGET] = rc.budget if rc.budget > 0 else UNLIMITED
    return n


@njit(**NO_REFCOUNT)
def held_request(sm, rc, i):
    """Rollouts to request next for open slot i: the rest of the group once committed, else the
    plan's next request (``policy.next_request``)."""
    slots = sm.slots  # 2-D indexing throughout: a row view would cost two reference counts
    if slots[i, F_COMM]:
        return rc.k - slots[i, F_N]
    plan = slots[i, F_PLAN : F_PLAN + 5]
    return next_request(slots[i, F_N], slots[i, F_S], rc.k, plan, rc.probe, rc.increment)


@njit(**NO_REFCOUNT)
def bounded(rc, want):
    """`want` rollouts for one prompt at most rc.max_inflight at once (0: no bound): a round's
    requests are in flight together, a stream's until they return."""
    return min(want, rc.max_inflight) if rc.max_inflight > 0 else want


@njit(**NO_REFCOUNT)
def queue_request(sm, rc, i, want):
    """Queue up to `want` rollouts for slot i, clipped to the capacity left (a round's, or the
    room a stream has: ``stream_plan``) — or, with rc.whole, all `want` while any is left."""
    c = sm.cnt
    left = c[C_CAP] - c[C_USED]
    m = (want if left > 0 else 0) if rc.whole else min(want, left)
    if m > 0:
        q = c[C_NREQ]
        sm.req[q, 0], sm.req[q, 1] = i, m
        c[C_NREQ] = q + 1
        c[C_USED] += m
    return m


@njit(**NO_REFCOUNT)
def plan_round(sm, rc):
    """Plan the next round: fills, then continues, then the probe quota.  False: the step is over
    (enough groups, or the round cap hit: C_CAPPED)."""
    c, slots, k = sm.cnt, sm.slots, rc.k
    yield_mode = rc.budget <= 0
    if yield_mode and c[C_GROUPS] >= rc.groups:
        return False
    if c[C_ROUNDS] >= rc.max_rounds:
        c[C_CAPPED] = 1  # e.g. a law with (almost) no mixed groups: report, not hang
        return False
    c[C_CAP] = min(rc.capacity, c[C_BUDGET])
    c[C_NREQ], c[C_USED], c[C_WANT], c[C_SKIPS] = 0, 0, 0, 0
    n_comm, n_cont, reserved = 0, 0, 0
    for i in range(c[C_OPEN]):  # 1) fills: certain effective groups, never starved
        if slots[i, F_DEL]:
            continue
        if slots[i, F_COMM]:
            n_comm += 1
            reserved += k - slots[i, F_N]
            queue_request(sm, rc, i, bounded(rc, k - slots[i, F_N]))
        else:
            n_cont += 1
    deficit = rc.groups - c[C_GROUPS] - n_comm
    if yield_mode and deficit <= 0:
        return True  # enough groups are certain: in-progress prompts wait
    for i in range(c[C_OPEN]):  # 2) continues
        if not (slots[i, F_DEL] or slots[i, F_COMM]):
            queue_request(sm, rc, i, bounded(rc, held_request(sm, rc, i)))
    if yield_mode:  # 3) probes: as many as the deficit (or the budget) calls for
        want = yield_probes(sm.rates, rc.tau_low, deficit, n_cont)
        if rc.overprovision != 1.0:  # off by default: the golden rounds stay bit-identical
            want = math.ceil(want * rc.overprovision)
    else:
        want = budget_probes(sm.rates, k, c[C_BUDGET], c[C_USED], reserved, c[C_LIVE] > 0)
    c[C_WANT], c[C_SKIPS] = want, skip_budget(want)
    return True


@njit(**NO_REFCOUNT)
def wants_prompt(sm):
    """Does this round still probe a fresh prompt (quota, capacity and skip budget left)?"""
    c = sm.cnt
    return c[C_WANT] > 0 and c[C_USED] < c[C_CAP] and c[C_SKIPS] > 0


@njit(**NO_REFCOUNT)
def note_skip(sm):
    """A prompt passed over before any rollout (or a selector's batch): one skip spent."""
    sm.cnt[C_SKIPS] -= 1


@njit(**NO_REFCOUNT)
def offer(sm, rc, plan):
    """Open a fresh prompt with its plan and queue its first request (a too-big probe is clipped:
    the rest follows next round).  Returns its slot, -1 when the table is full (see ``grown``);
    the driver fills F_KEY and its own fields."""
    c, k = sm.cnt, rc.k
    first = k if plan[0] == COMMIT else next_request(0, 0, k, plan, rc.probe, rc.increment)
    first = bounded(rc, first)
    if c[C_OPEN] >= sm.slots.shape[0] and c[C_LIVE] < c[C_OPEN]:
        compact(sm)  # make room: drop the decided slots now
    j = c[C_OPEN]
    if j >= sm.slots.shape[0]:
        return -1
    slots = sm.slots
    slots[j, F_N], slots[j, F_S], slots[j, F_DEL] = 0, 0, 0
    slots[j, F_COMM] = 1 if plan[0] == COMMIT else 0
    for t in range(5):
        slots[j, F_PLAN + t] = plan[t]
    queue_request(sm, rc, j, first)
    c[C_OPEN], c[C_LIVE], c[C_WANT] = j + 1, c[C_LIVE] + 1, c[C_WANT] - 1
    return j


@njit(**NO_REFCOUNT)
def launch(sm):
    """Send the planned round: returns its rollouts (0: nothing to ask, the step is over)."""
    c = sm.cnt
    size = 0
    for q in range(c[C_NREQ]):
        size += sm.req[q, 1]
    if size == 0:
        return 0
    c[C_ROUNDS] += 1
    c[C_BUDGET] -= size
    sm.rates[R_ROLLOUTS] += size
    return size


@njit(**NO_REFCOUNT)
def landing(sm, q):
    """(slot, rollouts it will hold) of request q once its outcomes are in."""
    i = sm.req[q, 0]
    return i, sm.slots[i, F_N] + sm.req[q, 1]


@njit(**NO_REFCOUNT)
def absorb(sm, rc, q, s):
    """Request q's outcomes are in; s: the slot's successes now (any mixed s decides the same).
    Returns CONTINUE while the prompt stays open (committed ones until the group is full), else
    its decision: the driver then calls ``settle``."""
    i, n = landing(sm, q)
    slots = sm.slots
    slots[i, F_N], slots[i, F_S] = n, s
    d = COMMIT if slots[i, F_COMM] else decide_plan(n, s, rc.k, slots[i, F_PLAN : F_PLAN + 5])
    if d == COMMIT:
        if not slots[i, F_COMM]:
            slots[i, F_COMM] = 1
            track(sm.rates, True, rc.k)
        if n < rc.k:
            return CONTINUE
    return d


@njit(**NO_REFCOUNT)
def settle(sm, rc, i, d, s):
    """Close decided slot i (s: its successes, of the full group for a commit).  Returns where it
    went: BATCH (this step's groups), CARRIED (a surplus group, next step's) or DROPPED."""
    c = sm.cnt
    sm.slots[i, F_DEL] = 1
    c[C_LIVE] -= 1
    if d != COMMIT:
        track(sm.rates, False, sm.slots[i, F_N])
        return DROPPED
    if 0 < s < rc.k:
        sm.rates[R_EFFECTIVE] += 1
    if rc.budget <= 0 and c[C_GROUPS] >= rc.groups:
        c[C_DONE] += 1  # surplus: next step's batch
        return CARRIED
    c[C_GROUPS] += 1
    return BATCH


@njit(**NO_REFCOUNT)
def compact(sm):
    """Drop the decided slots, keeping insertion order; this round's requests follow their slot."""
    c, slots = sm.cnt, sm.slots
    j = 0
    for i in range(c[C_OPEN]):
        if slots[i, F_DEL] == 0:
            if j != i:
                for f in range(slots.shape[1]):  # a slice copy costs more at this size
                    slots[j, f] = slots[i, f]
                sm.vals[j] = sm.vals[i]
                for q in range(c[C_NREQ]):
                    if sm.req[q, 0] == i:
                        sm.req[q, 0] = j
            j += 1
    c[C_OPEN] = j


@njit(**NO_REFCOUNT)
def drop_open(sm):
    """Close every prompt still open (a stream's "fresh" step end: none outlives its policy
    version); the complete groups carried (C_DONE) stay.  Returns the rollouts they held."""
    c = sm.cnt
    dropped = 0
    for i in range(c[C_OPEN]):
        if sm.slots[i, F_DEL] == 0:
            dropped += sm.slots[i, F_N]
    c[C_NREQ], c[C_OPEN], c[C_LIVE] = 0, 0, 0
    return dropped


@njit(**NO_REFCOUNT)
def end_step(sm, rc):
    """Close a step: decided slots dropped; what stays open (C_OPEN) and the complete groups
    carried (C_DONE) enter the next step — unless ``rc.carry`` is off, when both are dropped
    too (their rollouts stay spent: DS's treatment of its surplus).  Returns the rollouts so
    dropped (0 when carrying)."""
    c = sm.cnt
    c[C_NREQ] = 0
    if c[C_LIVE] < c[C_OPEN]:
        compact(sm)
    if rc.carry:
        return 0
    dropped = c[C_DONE] * rc.k
    for i in range(c[C_OPEN]):
        dropped += sm.slots[i, F_N]
    c[C_DONE], c[C_OPEN], c[C_LIVE] = 0, 0, 0
    return dropped

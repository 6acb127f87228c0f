"""The wall-clock engine model (``wallclock.py``) driven live: add, abort, run to the next
completion — what a streaming collector asks of vLLM (add_request / step / abort_request).

Same engine as ``run_engine``: an iteration costs a + b * running + c * admitted + d * opened,
at most max_num_seqs sequences run, waiting requests are admitted first-in first-out at the next
iteration, a request of L tokens occupies L consecutive iterations; a request added with
``opens=False`` continues the client request of the one before it (no second ``d``).  Requests
are added or aborted only between events (the driver reacts to a completion), so between two
events the running set is constant and a block of iterations costs m * (a + b * running) in
closed form: for requests added together the times equal ``run_engine``'s
(tests/sim/test_stream.py).

An aborted request has generated one token per iteration it ran: that is its cost (``tokens``).

>>> from sara_sim.sim.wallclock import EngineConfig
>>> eng = LiveEngine(EngineConfig(a=1.0, b=0.5, c=2.0, max_num_seqs=2))
>>> r = [eng.add(n) for n in (3, 1, 2)]
>>> eng.step(), float(eng.t)        # request 1 ends after one iteration of 2 running + 2 prefills
([1], 6.0)
>>> eng.abort(0), eng.step(), float(eng.t)   # request 0 aborted after 1 token; 2 runs alone
(1, [2], 11.0)
>>> eng.tokens, eng.iterations
(4, 3)
"""

import heapq

from .wallclock import check_config


class LiveEngine:
    """One engine over a run; request ids are 0, 1, ... in the order added."""

    def __init__(self, cfg):
        self.cfg = check_config(cfg, "")
        self.t = 0.0  # end of the last iteration run [s]
        self.iterations = 0
        self.length = []  # tokens of each request
        self.opens = []  # whether it opens a client request (its d is paid when it is admitted)
        self.waiting = {}  # request -> None, in arrival order (FIFO)
        self.running = {}  # request -> the iteration it was admitted in
        self.heap = []  # (its last iteration, request); aborted entries are dropped lazily
        self.tokens = 0  # generated: completed requests' lengths and aborted ones' partials
        self.slot_iterations = 0  # running x iterations: equals tokens once nothing runs
        self.busy_slot_seconds = 0.0
        self.segments = []  # (t0, t1, running) per block of iterations

    @property
    def inflight(self):
        return len(self.waiting) + len(self.running)

    def add(self, length, opens=True):
        """Queue a request of `length` >= 1 tokens; it enters the next iteration with a free
        slot.  Returns its id."""
        rid = len(self.length)
        self.length.append(max(int(length), 1))
        self.opens.append(bool(opens))
        self.waiting[rid] = None
        return rid

    def abort(self, rid):
        """Stop request rid (waiting or running); returns the tokens it had generated."""
        if self.waiting.pop(rid, False) is None:
            return 0
        done = self.iterations - self.running.pop(rid)
        self.tokens += done
        return done

    def step(self):
        """Run to the next completion: returns the requests that finished at ``t`` (several end
        together when their last iterations coincide); [] when nothing is queued or running."""
        a, b, c, cap, d = self.cfg
        adm = opened = 0
        while self.waiting and len(self.running) < cap:
            rid = next(iter(self.waiting))
            del self.waiting[rid]
            self.running[rid] = self.iterations
            heapq.heappush(self.heap, (self.iterations + self.length[rid] - 1, rid))
            adm, opened = adm + 1, opened + self.opens[rid]
        if not self.running:
            return []
        while self.heap[0][1] not in self.running:  # aborted
            heapq.heappop(self.heap)
        r = len(self.running)
        m = self.heap[0][0] - self.iterations + 1  # iterations through the next completion
        dur = m * (a + b * r) + c * adm + d * opened
        self.segments.append((self.t, self.t + dur, r))
        self.busy_slot_seconds += dur * r
        self.t += dur
        self.iterations += m
        self.slot_iterations += m * r
        out = []
        while self.heap and self.heap[0][0] < self.iterations:
            rid = heapq.heappop(self.heap)[1]
            if self.running.pop(rid, None) is not None:
                self.tokens += self.length[rid]
                out.append(rid)
        return out

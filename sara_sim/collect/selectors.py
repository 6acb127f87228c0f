"""Predictive selection composed with SARA (``sara-mopps``, ``sara-dps``).

The selector orders the prompt source: the collector pulls `ratio` candidates per prompt it wants,
the selector ranks them, the best are probed and the rest are passed over this time (skipped, 0
rollouts).  Each probed prompt then runs SARA with its own informed prior (``informed.py``) — the
prompt's history posterior becomes its SARA prior, so the selector's forecast and SARA's in-sample
check work on the same evidence.  Both selectors see only outcomes the run drew (a visit abandoned
after 2 rollouts is 2 observations).  A prompt passed over `max_skip` times in a row is taken
first at its next visit, so selection cannot starve it forever.

* MoPPS: Thompson-sample a success rate from the prompt's Beta posterior, rank by closeness to the
  target rate 0.5.
* DPS: the prompt's state at its last visit (all-fail / mixed / all-pass prefix), a Markov
  transition matrix counted from consecutive visits of all prompts (Dirichlet(1) smoothing); rank
  by predicted P(mixed).  The HMM belief is categorical, not a Beta, so SARA's prior is the same
  discounted Beta evidence as sara-history's (documented choice).

>>> import numpy as np
>>> from sara_sim.core.informed import PromptHistory
>>> h = PromptHistory(explore=0.0)
>>> h.observe("easy", [1] * 8, 0); h.observe("mid", [1, 0] * 4, 0)
>>> sel = Selector("dps")
>>> sel.observe("easy", [1] * 8); sel.observe("easy", [1] * 8); sel.observe("mid", [1, 0] * 4)
>>> chosen, passed = sel.select(["easy", "mid"], 1, h, epoch=1)
>>> chosen, passed
(['mid'], ['easy'])
"""

import numpy as np

from ..core.errors import ParameterError, check_float, check_int, check_unit

FAIL_STATE, MIXED_STATE, PASS_STATE = 0, 1, 2


def prefix_state(rewards):
    s, n = sum(rewards), len(rewards)
    return MIXED_STATE if 0 < s < n else (FAIL_STATE if s == 0 else PASS_STATE)


class Selector:
    def __init__(self, kind, ratio=4.0, target=0.5, seed=0, unseen="transitions"):
        if kind not in ("mopps", "dps"):
            raise ParameterError("selector", f"must be 'mopps' or 'dps', got {kind!r}")
        ratio = check_float(ratio, "ratio", 1.0)  # candidates per wanted prompt
        target = check_unit(target, "target")
        check_int(seed, "seed", 0)
        if unseen not in ("transitions", "visits"):
            raise ParameterError("unseen", f"must be 'transitions' or 'visits', got {unseen!r}")
        # DPS's score of a prompt without a last state: the mixed share of the counted
        # transitions (sara-dps), or of all visits' states, first visits too (the peer's recipe,
        # as the simulator's kernel scores it; Laplace-smoothed)
        self.unseen = unseen
        self.visits = np.zeros(3)
        self.kind, self.ratio, self.target = kind, ratio, target
        self.rng = np.random.default_rng([seed, 7])
        self.last_state = {}  # prompt key -> state at its last probed visit
        self.transitions = np.ones((3, 3))  # Dirichlet(1) smoothing

    def observe(self, key, rewards):
        """A probed visit ended with these drawn outcomes (empty: passed over, nothing learnt)."""
        if not rewards:
            return
        state = prefix_state(rewards)
        self.visits[state] += 1
        if key in self.last_state:
            self.transitions[self.last_state[key], state] += 1
        self.last_state[key] = state

    def _score(self, pid, history, epoch):
        key = history.key(pid)
        if self.kind == "mopps":
            a, b = history.prior(pid, epoch)
            return -abs(self.rng.beta(a, b) - self.target)
        probs = self.transitions / self.transitions.sum(axis=1, keepdims=True)
        if key in self.last_state:
            return probs[self.last_state[key], MIXED_STATE]
        if self.unseen == "visits":
            return (self.visits[MIXED_STATE] + 1.0) / (self.visits.sum() + 3.0)
        counts = self.transitions.sum(axis=0)  # unseen: the overall share of mixed outcomes
        return counts[MIXED_STATE] / counts.sum()

    def select(self, candidates, want, history, epoch):
        """(chosen in rank order, passed over); prompts skipped max_skip times come first."""
        scores = []
        for pid in candidates:
            ev = history.evidence.get(history.key(pid))
            overdue = ev is not None and ev[3] >= history.max_skip
            scores.append((overdue, self._score(pid, history, epoch)))
        order = sorted(range(len(candidates)), key=lambda i: scores[i], reverse=True)
        chosen = [candidates[i] for i in order[:want]]
        passed = [candidates[i] for i in order[want:]]
        return chosen, passed

    def state_dict(self):
        return {
            "kind": self.kind,
            "ratio": self.ratio,
            "target": self.target,
            "rng": self.rng.bit_generator.state,
            "last_state": dict(self.last_state),
            "transitions": self.transitions.copy(),
            "unseen": self.unseen,
            "visits": self.visits.copy(),
        }

    def load_state_dict(self, state):
        self.kind, self.ratio, self.target = state["kind"], state["ratio"], state["target"]
        self.rng.bit_generator.state = state["rng"]
        self.last_state = dict(state["last_state"])
        self.transitions = np.array(state["transitions"])
        # states saved before these fields existed: sara-dps's scoring, no visit counts
        self.unseen = state.get("unseen", "transitions")
        self.visits = np.array(state.get("visits", np.zeros(3)), np.float64)

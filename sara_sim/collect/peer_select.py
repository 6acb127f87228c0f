"""The peers' predict-then-select strategies as collectors (``mopps``, ``dps``).

Each step pulls ``ratio`` x N candidates from the prompt source, ranks them with the prompt's
posterior and sends a whole group of k rollouts to each of the N best, in one round; the other
candidates are passed over (skipped, 0 rollouts).  No per-prompt stopping: a chosen group that comes
back all-pass or all-fail still enters the batch (saturated), as in the simulator's peer kernel
(``sim/peers.py``, strategy codes MOPPS / DPS).  The recipe's values (ratio 4, target rate 0.5,
Beta(1, 1) pseudo-counts, decay 1) are the registry row's (``registry.ROWS``).

The ranking and the posterior updates are those of ``selectors.Selector`` — the same objects
sara-mopps / sara-dps put in front of SARA — on a ``PromptHistory`` set to the peer's posterior:

* MoPPS: Beta(a0 + S, b0 + F), S / F the prompt's drawn passes / fails (``PromptHistory`` with
  kappa 1, population prior (a0, b0), rho = the recipe's decay, no skip override); Thompson-sample
  a rate, rank by closeness to the target.
* DPS: the prompt's state at its last visit and the pooled transition counts (Dirichlet(1)).

Differences from the Numba kernel, all in how ties and unseen prompts are scored (the kernel has
its own random generator, so decisions are not identical draw for draw): DPS scores an unseen prompt
by the mixed share of all visits, as the kernel does (``Selector(unseen="visits")``; sara-dps
keeps the pooled transitions' share), and breaks ties by pull order (the kernel: at random);
MoPPS's decay is applied per epoch since the last visit (the kernel: per visit) — the two agree
at the recipe's decay 1.  Passed-over prompts record nothing, as in the kernel, so the
selector's starvation guard (``max_skip``) never fires: the peers have none.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> rate = {}
>>> def sample(requests):
...     return [list(rng.random(r.n) < rate.setdefault(r.prompt_id % 32, rng.beta(0.5, 0.5)))
...             for r in requests]
>>> collector = PeerSelectCollector("dps", k=8, groups=4, epoch_size=32)
>>> res = collector.collect_step(iter(range(10**6)), sample)
>>> len(res.groups), res.skipped, res.rollouts
(4, 12, 32)
"""

import math

from ..core.errors import ParameterError, check_int
from ..core.informed import PromptHistory
from ..core.registry import row
from .collectors import StepResult, _Base, check_call
from .selectors import Selector


def peer_history(name, epoch_size, seed=0):
    """The peer's posterior as a ``PromptHistory`` over integer ids `epoch * epoch_size + index`."""
    d = row(name, "collector", "strategy").sim_defaults
    a0, b0 = d.get("mopps_prior", (1.0, 1.0))
    return PromptHistory.for_integer_ids(
        epoch_size, seed, rho=d.get("decay", 1.0), kappa=1.0, explore=0.0, pop_prior=(a0, b0)
    )


class PeerSelectCollector(_Base):
    """MoPPS / DPS selection of whole groups (the registry's ``peer-select`` family)."""

    def __init__(
        self,
        name,
        *,
        k,
        groups=None,
        budget=None,
        seed=0,
        epoch_size=None,
        history=None,
        selector=None,
    ):
        meta = row(name, "collector", "strategy")
        if meta.family != "peer-select":
            raise ParameterError("strategy", f"{name} is not a peer-select strategy")
        if budget is not None:
            raise ParameterError("budget", f"{name} is a fixed-yield strategy; use groups")
        super().__init__(name, k, groups, None, seed)
        if epoch_size is None:
            raise ParameterError("epoch_size", f"{name} needs the dataset size (>= 1)")
        self.epoch_size = check_int(epoch_size, "epoch_size", 1)
        d = meta.sim_defaults
        self.informed = history if history is not None else peer_history(name, epoch_size, seed)
        if selector is None:
            target = d.get("target", 0.5)
            selector = Selector(name, ratio=d["ratio"], target=target, seed=seed, unseen="visits")
        if not isinstance(selector, Selector) or selector.kind != name:
            raise ParameterError("selector", f"must be a selectors.Selector of kind {name!r}")
        self.selector = selector

    def collect_step(self, prompts, sample):
        check_call(prompts, sample)
        res = StepResult()
        cands = self._pull_some(prompts, res, math.ceil(self.selector.ratio * self.groups))
        # the epoch argument is unused: the history reads it from the id (for_integer_ids)
        chosen, passed = self.selector.select(cands, self.groups, self.informed, epoch=0)
        res.abandoned, res.skipped = list(passed), len(passed)
        for pid, r in zip(chosen, self._whole_groups(res, chosen, sample)):
            self.informed.observe(pid, r, epoch=0)
            self.selector.observe(self.informed.key(pid), r)
        return res

    def state_dict(self):
        state = dict(self.__dict__)
        state["informed"] = self.informed.state_dict()
        state["selector"] = self.selector.state_dict()
        return state

    def load_state_dict(self, state):
        state = dict(state)
        informed, selector = state.pop("informed"), state.pop("selector")
        self.__dict__.update({k: v for k, v in state.items()})
        self.informed.load_state_dict(informed)  # ours: built with the prompt ids' key functions
        self.selector.load_state_dict(selector)

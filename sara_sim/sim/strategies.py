"""The simulator's strategies (docs/design.md §3; names, defaults and their sources:
``registry.py``): their parameters checked and encoded for the kernels, and the per-step planning
that stays in Python (the empirical-Bayes fit and the Bayes-optimal plan).

=============== ======================================================================== =========
strategy        what it does (parameters, defaults)                                      kernel
=============== ======================================================================== =========
uniform         N prompts x k rollouts, one round                                        peers
ds              DAPO dynamic sampling, verl semantics (gen_batch_size = N,               peers
                max_num_gen_batches = 10: the DAPO recipe's values)
ds-verl3n       ds as verl's DAPO run scripts set it: gen_batch_size = 3N                 peers
sara            the tau rule, uniform prior (tau_low = 0.2, prior 1,1; probe/increment   kernels
                auto; capacity N x k per round; max_rounds 100)
sara-eb         tau rule, prior = beta-binomial MLE on the outcomes the run drew in its   kernels
                last eb_window = 4 steps (abandoned prompts count with their prefix only)
sara-auto       Bayes-optimal plan (``optimal.bayes_optimal``) for that fitted prior      kernels
sara-history    each prompt's own informed prior (``informed.py``: its drawn outcomes,     kernels
                discounted by rho per pass, shrunk by kappa toward the fitted population
                prior; rule / explore / max_skip): the core's cross-validated
                ``replay.INFORMED_DEFAULTS``; the epoch clock is the prompt source's pass
speed           SPEED-RL: screen n_init = 4 (at most k/2) rollouts, fill only the mixed   kernels
greso           GRESO pre-rollout skipping on top of ds: skip w.p. 1 - p^z after z zero-   peers
                variance visits; p_easy = p_hard = 0.5 at start (ours), step dp = 0.01,
                targets alpha_easy = 1/12, alpha_hard = 1/6 (25 % zero-variance in all,
                split ours), floor p_min = 0.05 (ours)
mopps           MoPPS: Beta(1,1) prompt posteriors, decay lambda = 1 (the recipe's       peers
                bandit_decay_ratio), target rate 0.5, ratio = 4 candidates per slot
                (ours; the MoPPS math recipe's ts_ratio is 16)
dps             DPS: Markov state per prompt (our reading of its HMM: the observed state  peers
                at the last visit), top-N predicted P(mixed), ratio = 4 (ours)
reinforce-ada   rounds of round_size = k rollouts, max_rounds = 4 (ours), exit 'balanced'  peers
                (k/2 passes and k/2 fails; 'positive': one pass), down-sampled to k
knapsack        Knapsack-RL, budget-neutral N x k: n_min = 2, n_max = 12 k (k = 8: 96,   peers
                the scale of the paper's 93), value P(mixed) x p(1-p)^2 ('info', our
                reading; 'mixed' drops the weight); p = Laplace-smoothed last visit
=============== ======================================================================== =========

Peer defaults come from the peers' papers and public recipes (verl DAPO / MoPPS scripts,
Reinforce-Ada's run script); where a paper leaves a choice open, or we could not check it, the
table says "ours".  Set any of them with ``simulate(..., key=value)`` / ``--param key=value``.
On a replay a visit can draw at most the record's ``samples`` outcomes, so reinforce-ada and
knapsack cannot exceed them there (at k = samples they reduce to uniform).

>>> info("speed").family, sorted(default_params("speed", k=8))
('sara', ['n_init'])
"""

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..core.difficulty import fit_beta_binomial
from ..core.eb_fit import fit_weighted
from ..core.errors import ParameterError, check_float, check_int, check_prior
from ..core.optimal import (
    check_priced_in,
    check_request_cost,
    learned_lengths,
    learned_weights,
    prior_plan,
)
from ..core.policy import CONTINUE, NO_TAU_HIGH
from ..core.registry import ROWS, names, row
from . import peers
from .peers import (
    N_PRM,
    P_A0,
    P_ALPHA_EASY,
    P_ALPHA_HARD,
    P_B0,
    P_DECAY,
    P_DP,
    P_EXIT,
    P_GEN_BATCH,
    P_MAX_GEN_BATCHES,
    P_MAX_ROUNDS,
    P_N_MAX,
    P_N_MIN,
    P_P_MIN,
    P_RATIO,
    P_ROUND_SIZE,
    P_TARGET,
    P_WEIGHT,
)


@dataclass(frozen=True)
class StrategyInfo:
    name: str
    family: str  # "sara" (kernels.sara_steps) or "batch" (peers.batch_steps)
    code: int  # peers strategy code (batch family)
    summary: str
    defaults: dict = field(default_factory=dict)


# the simulator's view of the registry (its rows with a kernel; defaults and sources there)
_INFO = tuple(
    StrategyInfo(r.name, r.kernel, getattr(peers, r.peer_code or "", -1), r.summary, r.sim_defaults)
    for r in ROWS
    if r.kernel is not None
)
STRATEGIES = names("kernel")
_BY_NAME = {s.name: s for s in _INFO}
ADAPTIVE = tuple(s.name for s in _INFO if "eb_window" in s.defaults)  # refit a prior per step


def info(name):
    """The simulator's row of `name` (unknown: a ParameterError listing the choices)."""
    return _BY_NAME[row(name, "kernel").name]


def default_params(name, k, groups=64):
    """Strategy-specific defaults with the k/N-dependent ones resolved."""
    out = dict(info(name).defaults)  # sara-history: + the informed priors' (registry.HISTORY)
    if "gen_batch_size" in out and out["gen_batch_size"] is None:
        out["gen_batch_size"] = groups * row(name).gen_batch_factor  # ds-verl3n: 3N
    if "round_size" in out and out["round_size"] is None:
        out["round_size"] = k
    if "n_max" in out and out["n_max"] is None:
        out["n_max"] = 12 * k
    if "n_init" in out:
        out["n_init"] = max(1, min(out["n_init"], k // 2))
    return out


def check_params(name, k, groups, params):
    """Each given strategy parameter has its default's type: integers stay integers, floats are
    finite, pairs are two finite numbers > 0, switches are True / False, choices are strings (their
    allowed values are checked where they are used).  Unknown keys are refused."""
    defaults = default_params(name, k, groups)
    unknown = set(params) - set(defaults)
    if unknown:
        key = sorted(unknown)[0]
        raise ParameterError(f"--{key.replace('_', '-')}", f"not a parameter of {name}")
    out = {}
    for key, v in params.items():
        flag, d = f"--{key.replace('_', '-')}", defaults[key]
        if isinstance(d, bool):
            if not isinstance(v, bool | np.bool_):
                raise ParameterError(flag, f"must be True or False, got {v!r}")
        elif isinstance(d, int):
            v = check_int(v, flag)
        elif isinstance(d, float):
            v = check_float(v, flag)
        elif isinstance(d, tuple):
            v = check_prior(v, flag)
        elif isinstance(d, str) and not isinstance(v, str):
            raise ParameterError(flag, f"must be a name, got {v!r}")
        out[key] = v
    return out


def _int_param(params, key, lo, name=None):
    return check_int(params[key], f"--{(name or key).replace('_', '-')}", lo)


def batch_params(name, k, params):
    """The float parameter vector of the batch kernel (validated)."""
    prm = np.zeros(N_PRM)
    p = params
    # each block: the strategies that have these parameters (registry.ROWS' sim_defaults)
    if "gen_batch_size" in p:
        prm[P_GEN_BATCH] = _int_param(p, "gen_batch_size", 1)
        prm[P_MAX_GEN_BATCHES] = _int_param(p, "max_num_gen_batches", 0)
    if "p_init" in p:  # greso
        for key in ("p_init", "dp", "alpha_easy", "alpha_hard", "p_min"):
            if not 0.0 <= float(p[key]) <= 1.0:
                raise ParameterError(f"--{key.replace('_', '-')}", "must be in [0, 1]")
        prm[P_DP], prm[P_P_MIN] = p["dp"], p["p_min"]
        prm[P_ALPHA_EASY], prm[P_ALPHA_HARD] = p["alpha_easy"], p["alpha_hard"]
    if "ratio" in p:  # mopps, dps
        if not float(p["ratio"]) >= 1.0:
            raise ParameterError(
                "--ratio", f"candidates per batch slot must be >= 1, got {p['ratio']}"
            )
        prm[P_RATIO] = p["ratio"]
    if "target" in p:  # mopps
        if not 0.0 <= float(p["target"]) <= 1.0 or not 0.0 <= float(p["decay"]) <= 1.0:
            raise ParameterError("--target", "target and decay must be in [0, 1]")
        prm[P_TARGET], prm[P_DECAY] = p["target"], p["decay"]
        prm[P_A0], prm[P_B0] = p["mopps_prior"]
    else:
        prm[P_DECAY], prm[P_A0], prm[P_B0] = 1.0, 1.0, 1.0
    if "n_min" in p:  # knapsack
        n_min = _int_param(p, "n_min", 0)
        n_max = _int_param(p, "n_max", max(n_min, 1))
        if n_min > k or n_max < k:
            raise ParameterError("--n-max", f"need n_min <= k={k} <= n_max (budget-neutral)")
        if p["weight"] not in ("info", "mixed"):
            raise ParameterError("--weight", f"must be 'info' or 'mixed', got {p['weight']!r}")
        prm[P_N_MIN], prm[P_N_MAX] = n_min, n_max
        prm[P_WEIGHT] = 1.0 if p["weight"] == "info" else 0.0
    if "round_size" in p:  # reinforce-ada
        prm[P_ROUND_SIZE] = _int_param(p, "round_size", 1)
        prm[P_MAX_ROUNDS] = _int_param(p, "ada_max_rounds", 1, "max_rounds")
        if p["exit"] not in ("balanced", "positive"):
            raise ParameterError("--exit", f"must be 'balanced' or 'positive', got {p['exit']!r}")
        prm[P_EXIT] = 0.0 if p["exit"] == "balanced" else 1.0
    return prm


def fit_prior_counts(counts, init=(1.0, 1.0), exact_core=False, tol=1e-10, max_iter=100):
    """Empirical-Bayes prior from a histogram counts[n, s] of decided prompts (n drawn, s passed):
    the beta-binomial MLE of ``difficulty.fit_beta_binomial`` by the same solver
    (``core.eb_fit``), on the weighted histogram instead of every record; its sums are exact, so
    the two agree to the bit.  ``exact_core=True`` calls the core's function on the expanded
    records instead.  None when there is nothing to fit.

    >>> c = np.zeros((9, 9), np.int64); c[8, :] = [30, 12, 9, 8, 8, 9, 12, 20, 40]
    >>> fit_prior_counts(c) == fit_beta_binomial(*_expand(c))
    True
    """
    s, n, w = _records(counts)
    if len(w) == 0:
        return None
    if exact_core:
        return fit_beta_binomial(*_expand(counts), init=init)
    return fit_weighted(s, n, w, init, tol, max_iter)


def _records(counts):
    n_idx, s_idx = np.nonzero(counts)
    keep = n_idx > 0
    n_idx, s_idx = n_idx[keep], s_idx[keep]
    return s_idx.astype(float), n_idx.astype(float), counts[n_idx, s_idx].astype(float)


def _expand(counts):
    s, n, w = _records(counts)
    w = w.astype(np.int64)
    return np.repeat(s, w), np.repeat(n, w)


class SaraPlanner:
    """Per-replicate plans of the SARA family, step by step, as ``SaraCollector`` makes them:
    sara / speed keep one plan; sara-eb / sara-auto refit the prior on the last eb_window steps'
    drawn outcomes before each step (keeping the last plan while nothing was decided)."""

    def __init__(
        self,
        name,
        k,
        replicates,
        tau_low,
        tau_high,
        prior,
        params,
        schedule=(0, 0),
        tokens=(2000.0, 3500.0),
    ):
        """schedule: (probe, increment) of the run (a priced request needs the auto one);
        tokens: the kernel's (pass, fail) lengths, what a plan priced in tokens learns."""
        self.name, self.k = name, k
        cost = params.get("request_cost", 0.0)
        self.request_cost = check_request_cost(name, cost, *schedule, flag="--request-cost")
        rule = params.get("rule", "tau")
        self.priced_in = check_priced_in(
            name, params.get("priced_in", "rollouts"), rule, "--priced-in"
        )
        self.tokens = tuple(float(x) for x in tokens)
        self.lengths = [None] * replicates  # per replicate: the step's learned mean lengths
        self.tau_low = tau_low
        self.tau_high = NO_TAU_HIGH if tau_high is None else tau_high
        self.prior = tuple(prior)
        self.adaptive = name in ADAPTIVE
        self.exact_core = bool(params.get("exact_core_fit", False))
        window = _int_param(params, "eb_window", 1) if self.adaptive else 1
        self.windows = [deque(maxlen=max(window, 1)) for _ in range(replicates)]
        fixed = params.get("plan")
        if fixed is not None:  # any sequential policy given as a plan, e.g. bayes_optimal's
            plan = np.asarray(fixed, np.int64)
            if plan.shape != (5,) or not (0 <= plan[0] <= 2) or (plan[1:] < 0).any():
                raise ParameterError(
                    "--plan", f"must be 5 integers (policy.py layout), got {fixed}"
                )
        elif name == "speed":
            n0 = _int_param(params, "n_init", 1)
            if n0 >= k:
                raise ParameterError("--n-init", f"must be < k={k}, got {n0}")
            plan = np.array([CONTINUE, 1, n0, 1, n0], np.int64)
        else:
            plan = self._make_plan(self.prior)
        self.plans = np.tile(plan, (replicates, 1))
        self.step_priors = np.tile(np.asarray(self.prior, float), (replicates, 1))
        # sara-history's population prior (A, B) and its price rule's (w_fail, w_pass)
        self.pop = np.concatenate([self.step_priors, np.ones((replicates, 2))], axis=1)
        # sara-history: on, rho, kappa, explore, price rule, max_skip
        self.history_cfg = (0.0, 1.0, 1.0, 0.0, 0.0, 0.0)
        if name == "sara-history":
            from ..core.informed import RULES

            rho, kappa, explore = (float(params[x]) for x in ("rho", "kappa", "explore"))
            if not (0.0 < rho <= 1.0) or not (kappa > 0.0) or not (0.0 <= explore <= 1.0):
                raise ParameterError("--rho", "need 0 < rho <= 1, kappa > 0, 0 <= explore <= 1")
            if params["rule"] not in RULES:
                raise ParameterError("--rule", f"must be one of {RULES}, got {params['rule']!r}")
            skip = _int_param(params, "max_skip", 0)
            price = float(params["rule"] == "price")
            self.history_cfg = (1.0, rho, kappa, explore, price, float(skip))

    def probe(self, params, probe):
        return int(params["n_init"]) if self.name == "speed" else probe

    def _make_plan(self, prior, lengths=None):
        return prior_plan(
            self.name, self.k, self.tau_low, self.tau_high, prior, self.request_cost, lengths
        )

    def _tally(self, counts):
        """[pass tokens, passes, fail tokens, fails] of a window's drawn outcomes counts[n, s]
        (the kernel's lengths are its TokenModel's, per outcome), as the collector tallies what
        its driver tells it; nothing (no lengths learned) unless priced in tokens."""
        if self.priced_in != "tokens":
            return (0.0, 0.0, 0.0, 0.0)
        n, s = np.indices(counts.shape)
        passes, fails = float((counts * s).sum()), float((counts * (n - s)).sum())
        return (passes * self.tokens[0], passes, fails * self.tokens[1], fails)

    def _learned(self, counts):
        """The mean lengths a plan priced in tokens learns from a window (``_tally``)."""
        return learned_lengths(self._tally(counts))

    def begin_step(self):
        if not self.adaptive:
            return
        for r, window in enumerate(self.windows):
            self.step_priors[r] = self.prior
            counts = sum(window) if window else None
            prior = fit_prior_counts(counts, self.prior, self.exact_core) if window else None
            if window:  # as the collector: the lengths of the window, whatever its prior
                self.lengths[r] = self._learned(counts)
                self.pop[r, 2:] = learned_weights(self._tally(counts))
            if prior is None:
                continue
            self.step_priors[r] = prior
            if self.name == "sara-history":
                self.pop[r, :2] = prior  # the informed priors shrink toward the fitted population
            else:
                self.plans[r] = self._make_plan(prior, self.lengths[r])

    def end_step(self, eb):
        if self.adaptive:
            for r, window in enumerate(self.windows):
                window.append(eb[r].copy())

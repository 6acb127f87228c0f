"""Run a strategy on a law for S steps x R replicates; tidy DataFrames; parquet-cached sweeps.

``simulate`` returns one row per (replicate, step) with every metric of ``metrics.METRICS``;
``summarize`` (``summary.py``, re-exported here) aggregates them with standard errors.

>>> from sara_sim.core.difficulty import BetaLaw
>>> res = simulate("sara", BetaLaw(0.5, 0.5), k=8, groups=32, steps=20, replicates=2, seed=1)
>>> s = summarize(res)
>>> s["effective_groups_per_step"], s["effective_fraction"]
(32.0, 1.0)
"""

import hashlib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..core import errors as err
from ..core.errors import ParameterError
from ..core.registry import SARA, names, row
from ..core.schedule import HistoryKnobs, new_evidence, new_rates
from .budget import check_resources
from .kernels import C_LOG, N_COUNTS, N_FIELDS, SaraConfig, SaraState, StepOutputs, sara_steps
from .laws import POOL_LIMIT, TokenModel, encode_law, law_kind
from .metrics import I_OVERFLOW, METRICS, N_METRICS
from .peers import G_P_EASY, G_P_HARD, P_A0, P_B0, BatchConfig, BatchState, batch_steps
from .rng import seed_states
from .sources import PromptSource, init_pool
from .strategies import SaraPlanner, batch_params, check_params, default_params, info
from .summary import ratio_se, summarize  # noqa: F401 (re-exported: simulate's callers)

SIM_VERSION = 2  # bump when results of a given configuration change (parquet cache key)
# 2: sara-history dates a visit by the epoch it was pulled in (pools, drift)


@dataclass
class SimResult:
    frame: pd.DataFrame
    config: dict
    events: np.ndarray | None = None
    extra: dict = field(default_factory=dict)


def _chunks(steps, bar, n=50):
    """One kernel call for the whole run, or ~n calls when a progress bar is shown."""
    size = steps if bar is None else max(1, math.ceil(steps / n))
    return [(s, min(size, steps - s)) for s in range(0, steps, size)]


class TableOverflow(RuntimeError):
    """A round opened more prompts than the open-prompt table holds: raised by simulate() only
    when its `table` keyword fixes the table's size (without it the table grows and the run is
    redone, so the size never shows in a result)."""


# simulate()'s keywords beyond the strategy's own parameters, with their defaults
OPTIONS = {
    "tau_low": SARA.tau_low,
    "tau_high": SARA.tau_high,
    "prior": SARA.prior,
    "capacity": SARA.capacity,
    "probe": SARA.probe,
    "increment": SARA.increment,
    "max_rounds": SARA.max_rounds,
    "carry": SARA.carry,
    "pool": 0,
    "tokens": None,
    "progress": False,
    "log_events": 0,
    "force": False,
    "table": None,
}


def simulate(strategy, law, k=8, groups=64, budget=None, steps=100, replicates=4, seed=0, **kwargs):
    """Simulate `strategy` (see ``strategies``) on `law` (a law object, see ``laws``).

    Fixed-yield (``groups`` = N effective groups per step) unless ``budget`` (rollouts per step)
    is given — fixed-budget applies to uniform and the SARA family.  Keywords (defaults:
    ``registry.SaraParams``): tau_low, tau_high, prior, capacity, probe, increment, max_rounds;
    pool (0), tokens
    (``laws.TokenModel``), progress, log_events; any other keyword overrides a default of the
    strategy (``strategies.default_params``).  `table` (>= 0) fixes the SARA kernel's open-prompt
    table to that size factor (64 + table x one round of probes) and raises TableOverflow when a
    round outgrows it; the default grows it as needed.  The table's size never changes a result:
    the keyword exists so that a test can show exactly that."""
    opts = {key: kwargs.pop(key, v) for key, v in OPTIONS.items()}
    size = dict(k=k, groups=groups, budget=budget, steps=steps, replicates=replicates, seed=seed)
    run = _checked(strategy, law, size, opts, kwargs)
    for slots in (4, 32, 256) if run.table is None else (run.table,):
        try:
            return _simulate(run, law, slots)
        except TableOverflow:
            if run.table is not None:
                raise
    raise TableOverflow("open-prompt table overflow")  # pragma: no cover


def _checked(strategy, law, size, opts, params):
    """Every argument validated (ParameterError naming it), as one namespace.  `size`: k, groups,
    budget, steps, replicates, seed; `opts`: OPTIONS' keys; `params`: the strategy's own."""
    k, groups, budget = size["k"], size["groups"], size["budget"]
    steps, replicates, seed = size["steps"], size["replicates"], size["seed"]
    if not isinstance(strategy, str):
        raise ParameterError("--strategy", f"must be a strategy name, got {strategy!r}")
    meta = info(strategy)
    if not callable(getattr(law, "log_moment", None)) and law_kind(law) != "sequences":
        raise ParameterError("--difficulty", f"must be a law object (laws.py), got {law!r}")
    k = err.check_k(k, "--k")
    if law.max_k is not None and k > law.max_k:
        raise ParameterError("--k", f"k={k} exceeds the {law.max_k} recorded samples per record")
    groups = err.check_int(groups, "--groups", 1)
    steps = err.check_int(steps, "--steps", 1)
    replicates = err.check_int(replicates, "--replicates", 1)
    seed = err.check_seed(seed, "--seed")
    pool = err.check_int(opts["pool"], "--pool", 0, POOL_LIMIT)
    tau_low, tau_high = err.check_unit(opts["tau_low"], "--tau-low"), opts["tau_high"]
    if tau_high is not None and err.check_unit(tau_high, "--tau-high") <= tau_low:
        raise ParameterError("--tau-high", f"must exceed tau_low={tau_low}, got {tau_high}")
    prior = err.check_prior(opts["prior"], "--prior")
    tokens = TokenModel() if opts["tokens"] is None else opts["tokens"]
    if not isinstance(tokens, TokenModel):
        raise ParameterError("tokens", f"must be a laws.TokenModel, got {tokens!r}")
    log_events = err.check_int(opts["log_events"], "log_events", 0)
    table = None if opts["table"] is None else err.check_int(opts["table"], "table", 0)
    if budget is not None:
        budget = err.check_int(budget, "--budget", k)
        if strategy not in names("kernel", fixed_budget="kernel"):
            raise ParameterError(
                "--budget", f"fixed-budget runs: uniform and the SARA family, not {strategy}"
            )
    probe, increment = err.check_schedule(opts["probe"], opts["increment"], k)
    max_rounds = err.check_int(opts["max_rounds"], "--max-rounds", 1)
    carry = opts["carry"]
    if not isinstance(carry, bool | np.bool_):
        raise ParameterError("--no-carry", f"carry must be True or False, got {carry!r}")
    if not carry and meta.family != "sara":
        raise ParameterError(
            "--no-carry", f"only the SARA kernel's strategies carry, not {strategy}"
        )
    params = check_params(strategy, k, groups, params)
    prm = {**default_params(strategy, k, groups), **params}
    capacity = opts["capacity"]
    cap = (groups * k if budget is None else budget) if capacity is None else capacity
    cap = err.check_int(cap, "--capacity", k)
    check_resources(
        strategy,
        law,
        k=k,
        groups=groups,
        budget=budget,
        steps=steps,
        replicates=replicates,
        capacity=cap,
        params={**prm, "max_rounds": max_rounds},
        force=opts["force"],
        pool=pool,
    )
    return SimpleNamespace(
        strategy=strategy,
        meta=meta,
        k=k,
        groups=groups,
        budget=budget,
        steps=steps,
        replicates=replicates,
        seed=seed,
        pool=pool,
        tau_low=tau_low,
        tau_high=tau_high,
        prior=prior,
        tokens=tokens,
        log_events=log_events,
        probe=probe,
        increment=increment,
        max_rounds=max_rounds,
        carry=bool(carry),
        prm=prm,
        cap=cap,
        progress=opts["progress"],
        table=table,
    )


def _simulate(run, law, slots):
    strategy, k, replicates, steps = run.strategy, run.k, run.replicates, run.steps
    lawt = encode_law(law, k, run.pool)
    n_pool = max(lawt.pool, 1)
    rng = seed_states(run.seed, replicates)
    st = np.zeros((replicates, 3), np.int64)
    perm = np.zeros((replicates, n_pool), np.int64)
    pool_x = np.zeros((replicates, n_pool))
    trained = np.zeros((replicates, n_pool), np.int64)
    for r in range(replicates):
        init_pool(rng[r], lawt, pool_x[r], perm[r])
    config = {
        "strategy": strategy,
        "law": str(law),
        "law_kind": law_kind(law),
        **{key: getattr(run, key) for key in ("k", "groups", "budget", "steps", "replicates")},
        **{key: getattr(run, key) for key in ("seed", "tau_low", "tau_high")},
        "prior": list(run.prior),
        "capacity": run.cap,
        "probe": run.probe,
        "increment": run.increment,
        "pool": run.pool,
        "len_pass": run.tokens.len_pass,
        "len_fail": run.tokens.len_fail,
        **{key: (list(v) if isinstance(v, tuple) else v) for key, v in run.prm.items()},
    }
    bar = None
    if run.progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=steps, desc=strategy, unit="step", leave=False)
    source = PromptSource(st, perm, pool_x, trained)
    if run.meta.family == "sara":
        outs, extra_cols, events = _run_sara(run, lawt, rng, source, slots, bar)
    else:
        outs = _run_batch(run, lawt, rng, source, bar)
        extra_cols, events = {}, None
    if bar is not None:
        bar.close()
    data = np.concatenate(outs, axis=1)
    frame = pd.DataFrame(data.reshape(-1, N_METRICS)[:, :-1], columns=list(METRICS[:-1]))
    frame.insert(0, "step", np.tile(np.arange(steps), replicates))
    frame.insert(0, "replicate", np.repeat(np.arange(replicates), steps))
    for key, column in extra_cols.items():
        frame[key] = column
    frame.insert(0, "strategy", strategy)
    return SimResult(frame, config, events)


def _run_sara(run, lawt, rng, source, slots, bar):
    from ..core.policy import next_request

    k, replicates, steps, prm = run.k, run.replicates, run.steps, run.prm
    planner = SaraPlanner(
        run.strategy,
        k,
        replicates,
        run.tau_low,
        run.tau_high,
        run.prior,
        prm,
        (run.probe, run.increment),
        (run.tokens.len_pass, run.tokens.len_fail),
    )
    probe_p = planner.probe(prm, run.probe)
    first = int(next_request(0, 0, k, planner.plans[0], probe_p, run.increment))
    maxo = slots * (run.cap // max(first, 1)) + 64  # open prompts: ~ one round of probes
    history = row(run.strategy).needs_history
    n_prompts = lawt.seq_pool if lawt.seq_pool > 0 else source.pool_x.shape[1]
    ev = np.tile(new_evidence(), (replicates, n_prompts if history else 0, 1))
    state = SaraState(
        rng,
        *source,
        ev,
        np.zeros((replicates, maxo, N_FIELDS), np.int64),  # open prompts
        np.zeros((replicates, maxo)),  # their rates
        np.zeros((replicates, maxo, 2), np.int64),  # carried groups
        np.zeros((replicates, N_COUNTS), np.int64),  # the state machine's counters, n_log
        np.tile(new_rates(), (replicates, 1)),
        planner.pop,
    )
    _, rho, kappa, explore, rule_price, max_skip = planner.history_cfg
    hist = HistoryKnobs(float(rho), float(kappa), float(explore), float(max_skip), rule_price > 0)
    cfg = SaraConfig(
        k,
        run.groups,
        run.budget or 0,
        run.cap,
        probe_p,
        run.increment,
        run.max_rounds,
        float(run.tau_low),
        float(run.tokens.len_pass),
        float(run.tokens.len_fail),
        history,
        *hist,
        run.carry,
    )
    knobs = hist if history else None  # None: the kernel's step without reference counts
    log = np.zeros((replicates, int(run.log_events), 7), np.int64)
    outs, plan_rows, prior_rows = [], [], []
    todo = [(s, 1) for s in range(steps)] if planner.adaptive else _chunks(steps, bar)
    for s0, n in todo:
        planner.begin_step()
        eb_shape = (replicates, k + 1, k + 1) if planner.adaptive else (replicates, 0, 0)
        eb = np.zeros(eb_shape, np.int64)
        out = np.zeros((replicates, n, N_METRICS))
        sara_steps(lawt, cfg, planner.plans, state, s0, n, StepOutputs(out, eb, log), knobs)
        if out[..., I_OVERFLOW].any():
            if bar is not None:
                bar.close()
            raise TableOverflow(f"more than {maxo} open prompts")
        planner.end_step(eb)
        outs.append(out)
        plan_rows.append(np.repeat(planner.plans[:, None, :], n, axis=1))
        prior_rows.append(np.repeat(planner.step_priors[:, None, :], n, axis=1))
        if bar is not None:
            bar.update(n)
    plans = np.concatenate(plan_rows, axis=1)
    priors = np.concatenate(prior_rows, axis=1)
    extra = {f"plan{j}": plans[..., j].ravel() for j in range(5)}
    extra["prior_a"], extra["prior_b"] = priors[..., 0].ravel(), priors[..., 1].ravel()
    n_log = state.cnt[:, C_LOG]
    events = [log[r, : n_log[r]].copy() for r in range(replicates)] if run.log_events else None
    return outs, extra, events


def _run_batch(run, lawt, rng, source, bar):
    replicates, n_pool, prm = run.replicates, source.pool_x.shape[1], run.prm
    prmv = batch_params(run.strategy, run.k, prm)
    hist_i = np.zeros((replicates, n_pool, 4), np.int64)
    hist_i[..., 3] = -1
    hist_f = np.empty((replicates, n_pool, 2))
    hist_f[..., 0], hist_f[..., 1] = prmv[P_A0], prmv[P_B0]  # MoPPS prior pseudo-counts
    glob = np.zeros((replicates, 8))
    glob[:, G_P_EASY] = glob[:, G_P_HARD] = prm.get("p_init", 1.0)
    trans = np.zeros((replicates, 3, 3))
    lens = np.array([run.tokens.len_pass, run.tokens.len_fail], np.float64)
    cfg = BatchConfig(run.k, run.groups, run.budget or 0, prmv, lens)
    state = BatchState(rng, *source, hist_i, hist_f, glob, trans)
    outs = []
    for s0, n in _chunks(run.steps, bar):
        out = np.zeros((replicates, n, N_METRICS))
        batch_steps(run.meta.code, lawt, cfg, state, s0, n, out)
        outs.append(out)
        if bar is not None:
            bar.update(n)
    return outs


# --- parquet-cached sweeps -----------------------------------------------------------------------
def cell_key(cell):
    blob = json.dumps({"v": SIM_VERSION, **cell}, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def sweep(cells, cache=None, make_law=None, progress=False):
    """Simulate and summarise every cell (a dict of ``simulate`` arguments with ``difficulty``
    as a spec string); one tidy row per cell.  With `cache` (a folder), each row is stored as
    ``<key>.parquet`` and reused when the same cell (and SIM_VERSION) is asked for again."""
    from .laws import parse_sim_law

    make_law = make_law or (lambda c: parse_sim_law(c["difficulty"], c.get("epoch")))
    rows = []
    cache = Path(cache) if cache else None
    if cache:
        cache.mkdir(parents=True, exist_ok=True)
    it = cells
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        it = tqdm(cells, desc="sweep", unit="cell", leave=False)
    for cell in it:
        path = cache / f"{cell_key(cell)}.parquet" if cache else None
        if path is not None and path.exists():
            rows.append(pd.read_parquet(path))
            continue
        args = {key: v for key, v in cell.items() if key not in ("difficulty", "epoch")}
        res = simulate(law=make_law(cell), **args)
        row = pd.DataFrame([{**{key: str(v) for key, v in cell.items()}, **summarize(res)}])
        if path is not None:
            row.to_parquet(path, index=False)
        rows.append(row)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()

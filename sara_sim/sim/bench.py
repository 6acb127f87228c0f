"""`sara-sim bench`: how fast the simulator is, as ratios measured on this machine, one core.

* ``sim_rollouts_per_second`` — rollouts the simulated SARA collector generates per second
  (``simulate``, fixed-yield, one replicate, Numba on one thread, end to end after warm-up);
* ``bernoulli_per_second`` — the raw per-rollout draw rate of a plain Numba loop
  (``np.random.random() < g``), the ceiling of any simulator that draws rollouts one by one;
* ``speedup_vs_bernoulli`` — their ratio (goal >= 10: run-length sampling costs O(1) draws per
  prompt, so the ratio grows with k); ``speedup_vs_bernoulli_same_rng`` uses a Bernoulli loop on
  the simulator's own generator (xoshiro256++) instead;
* ``speedup_vs_python`` — against a straightforward numpy/Python simulation of the same rule: the
  core's ``SaraCollector`` fed by ``rng.random(n) < g`` per request.

Each rate is the median of ``repeats`` timed runs after a warm-up (compiled, caches loaded), all
single-threaded; ``run_bench`` times the Bernoulli loops and the simulator in turn within each
repeat, so that load from elsewhere on the machine falls on numerator and denominator alike.
"""

import time

import numba
import numpy as np
from numba import njit

from ..collect.collectors import make_collector
from ..core.difficulty import BetaLaw
from .laws import parse_sim_law
from .rng import seed_state, uniform
from .simulate import simulate


@njit(cache=True)
def _bernoulli_np(n, g):
    hits = 0
    for _ in range(n):
        if np.random.random() < g:  # noqa: NPY002 (Numba's generator: the baseline)
            hits += 1
    return hits


@njit(cache=True)
def _bernoulli_xoshiro(rs, n, g):
    hits = 0
    for _ in range(n):
        if uniform(rs) < g:
            hits += 1
    return hits


def _rate(fn):
    """Work per second of one call of fn (fn returns the work it did)."""
    t = time.perf_counter()
    work = fn()
    return work / (time.perf_counter() - t)


def _medians(fns, repeats):
    """Median rate of each warm fn over `repeats` rounds, the fns timed in turn within a round."""
    rates = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, rates):
            out.append(_rate(fn))
    return [float(np.median(r)) for r in rates]


def _bernoulli_fn(n, same_rng=False):
    """A warm timed Bernoulli loop of n draws (returns n)."""
    if same_rng:
        rs = seed_state(0, 0)
        _bernoulli_xoshiro(rs, 10, 0.3)
        return lambda: _bernoulli_xoshiro(rs, n, 0.3) * 0 + n
    _bernoulli_np(10, 0.3)
    return lambda: _bernoulli_np(n, 0.3) * 0 + n


def _sim_fn(spec, k, tau_low, groups, steps):
    """A warm timed simulation (one replicate, end to end; returns the rollouts it simulated)."""
    law = parse_sim_law(spec)
    simulate("sara", law, k=k, groups=groups, steps=2, replicates=1, tau_low=tau_low)

    def run():
        res = simulate(
            "sara", law, k=k, groups=groups, steps=steps, replicates=1, seed=1, tau_low=tau_low
        )
        return float(res.frame["rollouts"].sum())

    return run


def bernoulli_rate(n=20_000_000, repeats=3, same_rng=False):
    return _medians([_bernoulli_fn(n, same_rng)], repeats)[0]


def sim_rate(spec="beta:0.5,0.5", k=128, tau_low=0.3, groups=64, steps=200, repeats=3):
    return _medians([_sim_fn(spec, k, tau_low, groups, steps)], repeats)[0]


def python_rate(spec="beta:0.5,0.5", k=128, tau_low=0.3, groups=64, steps=3):
    law = parse_sim_law(spec)
    rng = np.random.default_rng(0)
    rate = {}

    def sample(requests):
        return [
            list(rng.random(r.n) < rate.setdefault(r.prompt_id, law.sample(rng, 1)[0]))
            for r in requests
        ]

    collector = make_collector("sara", k=k, groups=groups, tau_low=tau_low)
    prompts = iter(range(10**9))
    t = time.perf_counter()
    total = sum(collector.collect_step(prompts, sample).rollouts for _ in range(steps))
    return total / (time.perf_counter() - t)


def run_bench(k=128, spec="beta:0.5,0.5", ks=(8, 32, 128, 512), repeats=5, quick=False):
    """All measurements as a dict (the ``--json`` contract)."""
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        target = 2_000_000 if quick else 60_000_000  # rollouts per timed run
        n = 2_000_000 if quick else 20_000_000
        kks = sorted(set(ks) | {k})
        fns = [_bernoulli_fn(n), _bernoulli_fn(n, same_rng=True)]
        fns += [_sim_fn(spec, kk, 0.3, 64, max(target // (64 * kk), 4)) for kk in kks]
        bern, bern_x, *sims = _medians(fns, 3 if quick else repeats)
        table = [
            {"k": kk, "sim_rollouts_per_second": r, "speedup_vs_bernoulli": r / bern}
            for kk, r in zip(kks, sims)
        ]
        sim = next(row["sim_rollouts_per_second"] for row in table if row["k"] == k)
        py = python_rate(spec, k, steps=1 if quick else 3)
    finally:
        numba.set_num_threads(threads)
    return {
        "law": spec,
        "k": k,
        "strategy": "sara",
        "tau_low": 0.3,
        "sim_rollouts_per_second": sim,
        "bernoulli_per_second": bern,
        "speedup_vs_bernoulli": sim / bern,
        "bernoulli_same_rng_per_second": bern_x,
        "speedup_vs_bernoulli_same_rng": sim / bern_x,
        "python_rollouts_per_second": py,
        "speedup_vs_python": sim / py,
        "goal_speedup_vs_bernoulli": 10.0,
        "by_k": table,
    }


__all__ = ["run_bench", "bernoulli_rate", "sim_rate", "python_rate", "BetaLaw"]


def bench_report(out):
    """The readable bench report (`sara-sim bench` and
    benchmarks/investigations/simulator/sim_bench.py print this)."""
    lines = [f"simulator speed, one core ({out['law']}, sara, tau_low 0.3)"]
    for key in (
        "sim_rollouts_per_second",
        "bernoulli_per_second",
        "speedup_vs_bernoulli",
        "bernoulli_same_rng_per_second",
        "speedup_vs_bernoulli_same_rng",
        "python_rollouts_per_second",
        "speedup_vs_python",
    ):
        lines.append(f"  {key:<32} {out[key]:.4g}")
    lines.append("  k      rollouts/s   x Bernoulli")
    for row in out["by_k"]:
        rate, ratio = row["sim_rollouts_per_second"], row["speedup_vs_bernoulli"]
        lines.append(f"  {row['k']:<6} {rate:11.4g}   {ratio:.2f}")
    return "\n".join(lines)

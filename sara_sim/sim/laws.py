"""Simulation laws: the core's difficulty laws plus parametric drift, encoded for the kernels,
and the token-length model.

Specs (``parse_sim_law``) — everything ``difficulty.parse_law`` accepts, plus

* ``drift:A,B[,RATE[,BOOST[,POOL]]]`` — a pool of POOL prompts (default 1024) whose logit success
  rates start as logit(Beta(A, B)) draws and move as training proceeds:
  logit g_q(t) = logit g_q(0) + RATE * t + BOOST * (times q entered a batch as an effective group),
  t = training step.  Defaults RATE = 0.01 (the whole policy improves slowly), BOOST = 0.25
  (trained-on prompts improve faster).  Exact theory sees the step-0 law Beta(A, B).

``history:PATH`` replays records epoch by epoch: the prompt source walks the prompts in a fresh
random order per pass, pass j uses epoch first + (j mod n_epochs) of the selected range, prompts
without a record in that epoch are skipped, and each visit draws its outcomes without replacement
from the record's ``correct`` of ``samples`` (k <= samples).  Static laws (beta, mix, point) draw a
fresh prompt per pull (``pool=0``) or a fixed pool of ``pool`` prompts revisited pass after pass.

**Token lengths.** A passing rollout costs ``len_pass`` tokens and a failing one ``len_fail``
(defaults 2000 and 3500: failing reasoning traces run longer, often to the length cap); tokens are
booked when a prompt is decided.  Savings in tokens therefore exceed savings in rollouts whenever
the abandoned prefixes are mostly failures.

>>> law = parse_sim_law("drift:1,3,0.02,0.5,64")
>>> law.rate, law.boost, law.pool, str(law.base)
(0.02, 0.5, 64, 'beta:1,3')
>>> TokenModel().tokens(passes=3, fails=5)
23500.0
"""

import math
from dataclasses import dataclass

import numpy as np

from ..core.difficulty import BetaLaw, HistoryLaw, MixtureLaw, PointLaw, parse_law
from ..core.errors import ParameterError, ascii_float, check_positive
from .sources import COMP_BETA, COMP_POINT, DRIFT, HISTORY, RATES, SEQUENCES, Law

# Largest prompt pool (drift POOL, --pool): 2**40 prompts already need ~100 TiB per replicate,
# so the size guard refuses far below it; the bound keeps every array size an int64.
POOL_LIMIT = 2**40


@dataclass(frozen=True)
class TokenModel:
    len_pass: float = 2000.0
    len_fail: float = 3500.0

    def __post_init__(self):
        check_positive(self.len_pass, "--len-pass")
        check_positive(self.len_fail, "--len-fail")

    def tokens(self, passes, fails):
        return float(passes * self.len_pass + fails * self.len_fail)


@dataclass(frozen=True)
class DriftLaw:
    base: BetaLaw
    rate: float = 0.01
    boost: float = 0.25
    pool: int = 1024

    @property
    def max_k(self):
        return None

    def log_moment(self, i, j):  # the law at step 0
        return self.base.log_moment(i, j)

    def __str__(self):
        return f"drift:{self.base.a:g},{self.base.b:g},{self.rate:g},{self.boost:g},{self.pool}"


@dataclass(frozen=True)
class SequenceLaw:
    """Pre-drawn outcome rows (one per visit, in the order the prompts are pulled) — for identity
    tests.  With ``pool`` > 0 the rows revisit a finite pool: row i is prompt i % pool in epoch i //
    pool (the ids ``informed.PromptHistory.for_integer_ids`` reads), so histories have evidence."""

    rows: np.ndarray
    pool: int = 0

    @property
    def max_k(self):
        return int(self.rows.shape[1])

    def sampler(self):
        """`sample(requests)` for a collector fed the same outcomes as the kernel: prompt i's
        rollouts are rows[i] in order (the collector's prompt source yields row indices).

        >>> from sara_sim.collect.collectors import Request
        >>> sample = SequenceLaw(np.array([[1, 0, 1, 1]])).sampler()
        >>> sample([Request(0, 2)]), sample([Request(0, 1)])
        ([[1, 0]], [[1]])
        """
        pos = {}

        def sample(requests):
            out = []
            for r in requests:
                i = pos.get(r.prompt_id, 0)
                out.append([int(x) for x in self.rows[r.prompt_id, i : i + r.n]])
                pos[r.prompt_id] = i + r.n
            return out

        return sample


def _parse_drift(spec):
    parts = spec.partition(":")[2].split(",")
    try:
        vals = [ascii_float(x) for x in parts]
    except ValueError:
        vals = []
    if not 2 <= len(vals) <= 5:
        raise ParameterError(
            "--difficulty", f"drift needs 'drift:A,B[,RATE[,BOOST[,POOL]]]', got {spec!r}"
        )
    a, b = vals[:2]
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ParameterError("--difficulty", f"drift Beta parameters must be > 0, got {spec!r}")
    rate = vals[2] if len(vals) > 2 else 0.01
    boost = vals[3] if len(vals) > 3 else 0.25
    pool = vals[4] if len(vals) > 4 else 1024
    if not (math.isfinite(rate) and math.isfinite(boost)):
        raise ParameterError("--difficulty", f"drift RATE and BOOST must be finite, got {spec!r}")
    if not (1 <= pool <= POOL_LIMIT) or pool != int(pool):
        raise ParameterError(
            "--difficulty", f"drift POOL must be an integer in [1, 2**40], got {spec!r}"
        )
    return DriftLaw(BetaLaw(a, b), rate, boost, int(pool))


def parse_sim_law(spec, epochs=None, epoch_flag="--epoch"):
    """parse_law plus ``drift:...`` (see module docstring)."""
    text = str(spec).strip()
    if text.startswith("drift:"):
        if epochs not in (None, "all"):
            raise ParameterError(epoch_flag, f"applies to history:PATH laws only, not {text!r}")
        return _parse_drift(text)
    return parse_law(text, epochs=epochs, epoch_flag=epoch_flag)


def law_kind(law):
    if isinstance(law, HistoryLaw):
        return "history"
    if isinstance(law, DriftLaw):
        return "drift"
    if isinstance(law, SequenceLaw):
        return "sequences"
    return "rates"


def _components(law):
    comps = list(zip(law.weights, law.components)) if isinstance(law, MixtureLaw) else [(1.0, law)]
    cw = np.cumsum([w for w, _ in comps]).astype(np.float64)
    cw[-1] = 1.0
    kind = np.array([COMP_POINT if isinstance(c, PointLaw) else COMP_BETA for _, c in comps])
    a = np.array([c.g if isinstance(c, PointLaw) else c.a for _, c in comps], np.float64)
    b = np.array([0.0 if isinstance(c, PointLaw) else c.b for _, c in comps], np.float64)
    return cw, kind.astype(np.int64), a, b


def encode_law(law, k, pool=0):
    """The kernel tuple of a law (see ``sources``).  `pool` applies to static laws only."""
    empty_i = np.zeros((0, 0), np.int64)
    seq = np.zeros((0, max(k, 1)), np.int64)
    drift = np.zeros(2, np.float64)
    n_epochs, seq_pool = 1, 0
    rec_c = rec_n = empty_i
    if isinstance(law, HistoryLaw):
        kind = HISTORY
        frame = law.frame
        ids, pid = np.unique(frame["prompt_id"].to_numpy(), return_inverse=True)
        epochs, eid = np.unique(frame["epoch"].to_numpy(), return_inverse=True)
        n_pool, n_epochs = len(ids), len(epochs)
        rec_c = np.full((n_pool, n_epochs), -1, np.int64)
        rec_n = np.full((n_pool, n_epochs), -1, np.int64)
        rec_c[pid, eid] = frame["correct"].to_numpy()
        rec_n[pid, eid] = frame["samples"].to_numpy()
        cw, ck, ca, cb = _components(PointLaw(0.5))
    elif isinstance(law, DriftLaw):
        kind, n_pool = DRIFT, law.pool
        drift[:] = (law.rate, law.boost)
        cw, ck, ca, cb = _components(law.base)
    elif isinstance(law, SequenceLaw):
        kind, n_pool = SEQUENCES, 0
        seq = np.ascontiguousarray(law.rows, np.int64)
        seq_pool = int(law.pool)
        cw, ck, ca, cb = _components(PointLaw(0.5))
    elif isinstance(law, BetaLaw | PointLaw | MixtureLaw):
        kind, n_pool = RATES, int(pool)
        cw, ck, ca, cb = _components(law)
    else:
        raise ParameterError("--difficulty", f"cannot simulate law {law!r}")
    return Law(
        int(kind), int(n_pool), int(n_epochs), cw, ck, ca, cb, rec_c, rec_n, drift, seq, seq_pool
    )

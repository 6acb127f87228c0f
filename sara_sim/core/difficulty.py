"""Difficulty laws: where a prompt's latent success rate comes from.

Every exact quantity in ``theory.py`` is a polynomial in the success rate, so a law only has to give
the probability of one *ordered* outcome sequence with i successes and j failures,
M(i, j) = E[g^i (1 - g)^j] (for a recorded history: the same without replacement).  Specs:

* ``beta:A,B`` — Beta(A, B)
* ``mix:W1*beta:A1,B1+W2*beta:A2,B2`` — a mixture; the weights are relative: each is divided
  by their sum (``mix:1*beta:1,5+1*beta:5,1`` is an even mixture; ``mix:0.3*...+0.3*...`` too),
  and every output names the law with the shares it used (``mix:0.5*beta:1,5+0.5*beta:5,1``)
* ``point:G`` — every prompt has success rate G (for checks)
* ``history:PATH`` — per-prompt outcome histories (CSV prompt_id, epoch, correct, samples); one
  record per (prompt, epoch); a group of k <= samples draws without replacement from the record.
  ``history:NAME`` with a built-in name (``BUILTIN_HISTORIES``: ``deepscaler``) reads the file
  shipped in ``sara_sim/data``; the name is reserved, so a file of that name is ``./NAME``.

>>> law = parse_law("beta:1,1")
>>> round(float(np.exp(law.log_moment(0, 3))), 12)   # E[(1-g)^3] = 1/4 under the uniform law
0.25
"""

import io
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import betaln, gammaln, logsumexp

from .eb_fit import fit_weighted
from .errors import (
    ParameterError,
    ascii_float,
    ascii_int,
    check_positive,
    check_prior,
    check_unit,
)
from .files import one_line, path_problem, read_input

HISTORY_COLUMNS = ("prompt_id", "epoch", "correct", "samples")
# token sums per outcome of each record: the columns `sara-real audit` adds to its history.csv
TOKEN_COLUMNS = ("pass_tokens", "fail_tokens")
# Histories shipped inside the package (sara_sim/data, README there): name -> file.  A name is
# reserved: the string "deepscaler" always means the packaged file, wherever the command runs;
# a user's file that happens to be called so is given as a path ("./deepscaler").
BUILTIN_HISTORIES = {"deepscaler": "deepscaler_pass_history.csv"}


# Beyond this |log B(a, b)| the difference betaln(a+i, b+j) - betaln(a, b) loses more than
# ~1e4 * eps (2e-12) to cancellation, so BetaLaw switches to the exact finite product.
_BETALN_SAFE = 1e4


_RISING = {}  # (a, b) -> cumulative log sums of _log_rising_ratio (a few laws at a time)


def _rising_sums(a, b, n):
    """Prefix sums over t < n of log((a+t)/(a+b+t)), log(b+t), log(a+b+t); cached and grown by
    doubling, so the scalar calls of theory's round loop cost O(1) (a prefix of a sequential
    cumulative sum does not depend on how far it was extended: results stay identical)."""
    got = _RISING.get((a, b))
    if got is None or len(got[0]) <= n:
        size = max(2 * n, 64)
        t = np.arange(size, dtype=np.float64)
        got = tuple(
            np.concatenate([[0.0], np.cumsum(x)])
            for x in (np.log1p(-b / (a + b + t)), np.log(b + t), np.log(a + b + t))
        )
        if len(_RISING) >= 8:
            _RISING.clear()
        _RISING[(a, b)] = got
    return got


def _log_rising_ratio(a, b, i, j):
    """log E[g^i (1-g)^j] under Beta(a, b) for integers i, j >= 0, as the exact finite product
    prod_{t<i} (a+t)/(a+b+t) * prod_{t<j} (b+t)/(a+b+i+t), summed in log space with cumulative
    sums (O(max i + max j)).  Stable for any concentration: Beta(1e15, 1e15) still gives
    E[(1-g)^8] = 0.5^8 to ~1e-14, where the betaln difference is pure rounding noise."""
    lead, log_b, log_ab = _rising_sums(a, b, int(i.max() + j.max()) + 1)
    return lead[i] + log_b[j] - (log_ab[i + j] - log_ab[i])


@dataclass(frozen=True)
class BetaLaw:
    a: float
    b: float

    def __post_init__(self):
        check_prior((self.a, self.b), "--difficulty")

    @property
    def max_k(self):
        return None

    def log_moment(self, i, j):
        i, j = np.asarray(i), np.asarray(j)
        if (
            abs(betaln(self.a, self.b)) > _BETALN_SAFE
            and np.issubdtype(i.dtype, np.integer)
            and np.issubdtype(j.dtype, np.integer)
            and i.size
            and j.size
            and i.min() >= 0
            and j.min() >= 0
        ):
            i, j = np.broadcast_arrays(i, j)
            return _log_rising_ratio(self.a, self.b, i, j)
        return betaln(self.a + i, self.b + j) - betaln(self.a, self.b)

    def sample(self, rng, size):
        return rng.beta(self.a, self.b, size)

    def __str__(self):
        return f"beta:{self.a:g},{self.b:g}"


@dataclass(frozen=True)
class PointLaw:
    g: float

    def __post_init__(self):
        check_unit(self.g, "--difficulty")

    @property
    def max_k(self):
        return None

    def log_moment(self, i, j):
        i, j = np.asarray(i, float), np.asarray(j, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            lg = np.where(i > 0, i * np.log(self.g) if self.g > 0 else -np.inf, 0.0)
            lq = np.where(j > 0, j * np.log1p(-self.g) if self.g < 1 else -np.inf, 0.0)
        return lg + lq

    def sample(self, rng, size):
        return np.full(size, self.g)

    def __str__(self):
        return f"point:{self.g:g}"


@dataclass(frozen=True)
class MixtureLaw:
    weights: tuple
    components: tuple

    def __post_init__(self):
        w = [check_positive(x, "--difficulty") for x in self.weights]
        if len(w) != len(self.components) or not w or abs(math.fsum(w) - 1.0) > 1e-9:
            raise ParameterError("--difficulty", f"mixture weights must sum to 1, got {w}")

    @property
    def max_k(self):
        return None

    def log_moment(self, i, j):
        parts = [np.log(w) + c.log_moment(i, j) for w, c in zip(self.weights, self.components)]
        return logsumexp(np.stack(np.broadcast_arrays(*parts)), axis=0)

    def sample(self, rng, size):
        which = rng.choice(len(self.weights), size=size, p=np.asarray(self.weights))
        out = np.empty(size)
        for idx, comp in enumerate(self.components):
            sel = which == idx
            out[sel] = comp.sample(rng, int(sel.sum()))
        return out

    def __str__(self):
        return "mix:" + "+".join(f"{w:g}*{c}" for w, c in zip(self.weights, self.components))


class HistoryLaw:
    """Recorded outcome counts; each (prompt, epoch) record is equally likely, and a group draws
    its outcomes without replacement from that record's `samples` outcomes."""

    def __init__(self, frame: pd.DataFrame, source: str = "history", epochs=None):
        self.frame = frame
        self.source = source
        self.epochs = epochs
        pairs = frame.groupby(["correct", "samples"]).size()
        self._c = pairs.index.get_level_values(0).to_numpy(np.float64)
        self._n = pairs.index.get_level_values(1).to_numpy(np.float64)
        self._w = pairs.to_numpy(np.float64) / pairs.sum()

    @property
    def max_k(self):
        return int(self.frame["samples"].min())

    @property
    def rates(self):
        return (self.frame["correct"] / self.frame["samples"]).to_numpy()

    def log_moment(self, i, j):
        i, j = np.broadcast_arrays(np.asarray(i, float), np.asarray(j, float))
        c, n, w = (x.reshape((-1,) + (1,) * i.ndim) for x in (self._c, self._n, self._w))
        ok = (i <= c) & (j <= n - c)
        with np.errstate(invalid="ignore"):
            lt = (
                gammaln(c + 1)
                - gammaln(np.where(ok, c - i + 1, 1))
                + gammaln(n - c + 1)
                - gammaln(np.where(ok, n - c - j + 1, 1))
                - gammaln(n + 1)
                + gammaln(n - i - j + 1 + np.where(ok, 0, 1e9))
            )
        lt = np.where(ok, lt, -np.inf) + np.log(w)
        return logsumexp(lt, axis=0)

    def __str__(self):
        ep = "all" if self.epochs is None else f"{self.epochs[0]}-{self.epochs[1]}"
        return f"history:{self.source}[epochs {ep}]"


def builtin_history(name: str) -> Path:
    """The packaged file behind a built-in history name (importlib.resources: it is found
    wherever the package is installed, not relative to a checkout)."""
    return Path(str(resources.files("sara_sim").joinpath("data", BUILTIN_HISTORIES[name])))


def history_file(source, param: str = "--difficulty") -> Path:
    """The file a history source names: a ``str`` equal to a built-in name is the packaged file,
    anything else (a str or a Path) is a path; it must be a readable regular file (otherwise the
    one-line reason of ``files.path_problem``: missing, a directory, a FIFO or device, a dangling
    symbolic link, unreadable)."""
    if isinstance(source, str) and source in BUILTIN_HISTORIES:
        p = builtin_history(source)
        if not p.is_file():  # a broken install, not a user error: say which file is missing
            raise ParameterError(param, f"built-in history {source!r} is missing at {p}")
        return p
    p = Path(source)
    problem = path_problem(p, "history CSV file")
    if problem == f"no such history CSV file: {p}":  # plainly absent: maybe a mistyped name
        names = ", ".join(BUILTIN_HISTORIES)
        problem = f"history file not found: {source} (built-in histories: {names})"
    if problem is not None:
        raise ParameterError(param, problem)
    return p


def load_history(source, param: str = "--difficulty", columns=()) -> pd.DataFrame:
    """Read and validate a history CSV (prompt_id, epoch, correct, samples): a path, or a
    built-in name such as ``"deepscaler"`` (see ``history_file``).  The one reader of history
    files: every command that takes one (theory, optimal, compare, simulate, replay, wallclock,
    figures, the audit's own history.csv) applies these rules, each refusal one line naming the
    file, the row and the rule (``HISTORY_RULES``):

    * integers everywhere (below 2**53); ``samples >= 1``, ``0 <= correct <= samples``,
      ``epoch >= 0``;
    * one record per (prompt_id, epoch): a repeated pair is refused, never merged or dropped.

    `columns`: further columns the caller needs (e.g. the audit's ``pass_tokens``,
    ``fail_tokens``), integers >= 0, kept in the frame."""
    path = source  # the messages name what the user wrote (a built-in name, or the path)
    p = history_file(source, param)
    data = read_input(p, param, "history CSV file")
    try:
        df = pd.read_csv(io.BytesIO(data))
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ParameterError(param, f"malformed history file {path}: {one_line(exc)}") from None
    need = (*HISTORY_COLUMNS, *columns)
    missing = [c for c in need if c not in df.columns]
    if missing:
        audit = " (written by sara-real audit)" if set(missing) & set(TOKEN_COLUMNS) else ""
        raise ParameterError(param, f"history file {path} lacks columns {missing}{audit}")
    df = df[list(need)]
    if len(df) == 0:
        raise ParameterError(param, f"history file {path} has no rows")
    where = _row_names(data, len(df))
    numeric = df.apply(pd.to_numeric, errors="coerce")
    for col in need:
        x = numeric[col]
        bad = x.isna() | (x != x.round()) | (x.abs() >= 2**53)
        if bad.any():
            i = int(np.argmax(bad.to_numpy()))
            raise ParameterError(
                param,
                f"history file {path} {where(i)}: {col} {df[col].iloc[i]!r} is not an integer "
                "(every column holds integers)",
            )
    df = numeric.astype(np.int64)
    for rule, bad in (
        ("samples >= 1", df["samples"] < 1),
        ("0 <= correct <= samples", (df["correct"] < 0) | (df["correct"] > df["samples"])),
        ("epoch >= 0", df["epoch"] < 0),
        *((f"{col} >= 0", df[col] < 0) for col in columns),
    ):
        if bad.any():
            i = int(np.argmax(bad.to_numpy()))
            shown = ", ".join(f"{c} {df[c].iloc[i]}" for c in need)
            raise ParameterError(param, f"history file {path} {where(i)} ({shown}): need {rule}")
    repeat = df.duplicated(["prompt_id", "epoch"], keep="first").to_numpy()
    if repeat.any():
        i = int(np.argmax(repeat))
        pid, ep = int(df["prompt_id"].iloc[i]), int(df["epoch"].iloc[i])
        first = int(np.argmax((df["prompt_id"] == pid).to_numpy() & (df["epoch"] == ep).to_numpy()))
        raise ParameterError(
            param,
            f"history file {path} {where(i)}: prompt_id {pid}, epoch {ep} repeats {where(first)}; "
            "need one record per (prompt_id, epoch) (add the two records' correct and samples "
            "into one, or drop one)",
        )
    return df


def _row_names(data: bytes, n_rows: int):
    """row index -> "row R (line L)": R counts records after the header, L is the file's line
    (blank lines, which the CSV reader skips, counted); "row R" alone when the lines cannot be
    matched to the records (a quoted field spanning lines)."""
    lines = [i for i, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    at = lines[1:] if len(lines) == n_rows + 1 else None

    def name(i: int) -> str:
        return f"row {i + 1}" + (f" (line {at[i]})" if at is not None else "")

    return name


def parse_epochs(epochs, frame: pd.DataFrame | None = None, param: str = "--epoch"):
    """None | int | 'A' | 'A-B' -> None or an inclusive (first, last) range present in the frame."""
    if epochs is None or epochs == "all":
        return None
    if isinstance(epochs, tuple):
        lo, hi = epochs
    else:
        text = str(epochs)
        try:
            lo, _, hi = text.partition("-")
            lo, hi = ascii_int(lo), ascii_int(hi or lo)
        except ValueError:
            raise ParameterError(
                param, f"must be an epoch E or a range A-B (ASCII digits), got {text!r}"
            ) from None
    if lo < 0 or hi < lo:
        raise ParameterError(param, f"need 0 <= A <= B, got {lo}-{hi}")
    if frame is not None:
        have = frame["epoch"]
        if not ((have >= lo) & (have <= hi)).any():
            raise ParameterError(
                param, f"no records in epochs {lo}-{hi} (file has {have.min()}-{have.max()})"
            )
    return lo, hi


def _beta_params(text, spec):
    try:
        a, b = (ascii_float(x) for x in text.split(","))
    except ValueError:
        raise ParameterError("--difficulty", f"beta needs 'beta:A,B', got {spec!r}") from None
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ParameterError("--difficulty", f"Beta parameters must be > 0, got {spec!r}")
    return BetaLaw(a, b)


def parse_law(spec: str, epochs=None, epoch_flag: str = "--epoch"):
    """Parse a difficulty spec (see module docstring); `epochs` selects history records (given by
    the flag `epoch_flag`: the messages name the flag the user typed)."""
    spec = str(spec).strip()
    kind, _, rest = spec.partition(":")
    if epochs not in (None, "all") and kind != "history":
        raise ParameterError(epoch_flag, f"applies to history:PATH laws only, not {spec!r}")
    if kind == "beta":
        return _beta_params(rest, spec)
    if kind == "point":
        try:
            g = ascii_float(rest)
        except ValueError:
            g = float("nan")
        if not 0.0 <= g <= 1.0:
            raise ParameterError("--difficulty", f"point needs a rate in [0, 1], got {spec!r}")
        return PointLaw(g)
    if kind == "mix":
        weights, comps = [], []
        for part in rest.split("+"):
            w, star, comp = part.partition("*")
            try:
                wv = ascii_float(w)
            except ValueError:
                wv = float("nan")
            if not star or not (wv > 0 and math.isfinite(wv)):
                raise ParameterError(
                    "--difficulty", f"mixture needs 'W*beta:A,B+...', got {spec!r}"
                )
            sub = parse_law(comp)
            if not isinstance(sub, BetaLaw | PointLaw):
                raise ParameterError("--difficulty", "mixture components must be beta or point")
            weights.append(wv)
            comps.append(sub)
        # relative weights (documented): each divided by their sum, the largest first so that
        # 1e308 + 1e308 cannot overflow; str(law) shows the shares used
        top = max(weights)
        scaled = [w / top for w in weights]
        total = math.fsum(scaled)
        return MixtureLaw(tuple(w / total for w in scaled), tuple(comps))
    if kind == "history":
        frame = load_history(rest)
        ep = parse_epochs(epochs, frame, epoch_flag)
        if ep is not None:
            frame = frame[(frame["epoch"] >= ep[0]) & (frame["epoch"] <= ep[1])]
        return HistoryLaw(frame.reset_index(drop=True), source=rest, epochs=ep)
    raise ParameterError(
        "--difficulty",
        f"unknown spec {spec!r}; use beta:A,B | mix:W*beta:A,B+... | point:G | history:PATH"
        f" | history:{'|'.join(BUILTIN_HISTORIES)}",
    )


def check_k_for_law(k: int, law, param: str = "--k") -> None:
    if law.max_k is not None and k > law.max_k:
        raise ParameterError(param, f"k={k} exceeds the {law.max_k} recorded samples per record")


def fit_beta_binomial(successes, trials, init=(1.0, 1.0)):
    """Empirical-Bayes prior: the Beta(a, b) maximising the beta-binomial likelihood of
    (successes, trials) pairs (trials may differ; records with 0 trials are ignored), by
    ``eb_fit.fit_weighted`` (the same bits on any machine: no BLAS in it).

    >>> rng = np.random.default_rng(0); g = rng.beta(2.0, 5.0, 4000)
    >>> a, b = fit_beta_binomial(rng.binomial(8, g), np.full(4000, 8))
    >>> bool(abs(a / (a + b) - 2 / 7) < 0.02)
    True
    """
    s = np.asarray(successes, float)
    t = np.asarray(trials, float)
    keep = t > 0
    s, t = s[keep], t[keep]
    if len(s) == 0:
        return tuple(map(float, init))
    # the likelihood only needs each distinct (successes, trials) pair and how often it occurs
    pairs, count = np.unique(np.stack([s, t]), axis=1, return_counts=True)
    a, b = fit_weighted(pairs[0], pairs[1], count, init)
    return float(a), float(b)

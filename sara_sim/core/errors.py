"""One error type for bad input, and the one implementation of each shared check.

A ParameterError names the parameter, the bad value and the allowed range; the CLIs print its
message as one line (no traceback) and exit 2.  Every public function validates its inputs with
these checks *before* any kernel or model starts.

Conventions: an integer is an ``int`` or a numpy integer (or an integral finite float such as
8.0); ``bool`` is never a number; every float must be finite (nan / inf are rejected).

>>> check_int(np.int64(3), "steps", lo=1)
3
>>> check_int(True, "steps")
Traceback (most recent call last):
...
sara_sim.core.errors.ParameterError: steps: must be an integer, got True
>>> check_float(float("nan"), "tau_low", 0.0, 1.0)
Traceback (most recent call last):
...
sara_sim.core.errors.ParameterError: tau_low: must be a finite number in [0, 1], got nan
"""

import math
import numbers
import re

import numpy as np

# Largest group size any function accepts: the kernels index rollouts with int64 and compute
# b + j in float64, which is exact for integers below 2**53.
K_LIMIT = 2**53
# Every seed of both CLIs (sara-sim, sara-real): a non-negative int64.
SEED_MAX = 2**63 - 1
_ASCII_INT = re.compile(r"[+-]?[0-9]+")


class ParameterError(ValueError):
    """Bad value for a named parameter, e.g. ``ParameterError("--k", "must be >= 2, got 1")``."""

    def __init__(self, parameter: str, message: str):
        self.parameter = parameter
        super().__init__(f"{parameter}: {message}")


def _range_text(lo, hi):
    if lo is not None and hi is not None:
        return f" in [{lo}, {hi}]"
    if lo is not None:
        return f" >= {lo}"
    if hi is not None:
        return f" <= {hi}"
    return ""


def check_int(v, name: str, lo=None, hi=None) -> int:
    """An integer in [lo, hi] (either bound optional); bool, 2.5, nan, '3' are rejected."""
    ok = isinstance(v, numbers.Integral | np.integer) and not isinstance(v, bool | np.bool_)
    if not ok and isinstance(v, numbers.Real | np.floating) and not isinstance(v, bool | np.bool_):
        ok = math.isfinite(v) and float(v).is_integer()
    if not ok or (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ParameterError(name, f"must be an integer{_range_text(lo, hi)}, got {v!r}")
    return int(v)


def ascii_int(text) -> int:
    """The integer a flag's text spells in ASCII digits (an optional sign, then 0-9 only).

    Python's int() also reads '٨' (Arabic-Indic), '８' (full-width), '1_0' and ' 8 '; a flag
    takes none of them, in either CLI.

    >>> ascii_int("8"), ascii_int("-3")
    (8, -3)
    >>> ascii_int("1_0")
    Traceback (most recent call last):
    ...
    ValueError: not ASCII digits: '1_0'
    """
    if not isinstance(text, str) or not _ASCII_INT.fullmatch(text):
        raise ValueError(f"not ASCII digits: {text!r}")
    return int(text)


def ascii_float(text) -> float:
    """float(text) for ASCII text without '_' or surrounding blanks ('1.5', '1e-3', 'nan', 'inf':
    the range checks refuse the last two with their own message); float() itself also reads
    '٨', '１.５' and '1_0.5'."""
    if not isinstance(text, str) or not text.isascii() or "_" in text or text != text.strip():
        raise ValueError(f"not an ASCII number: {text!r}")
    return float(text)


def check_seed(v, name: str = "--seed") -> int:
    """A seed in [0, SEED_MAX] (the one range of every seed flag of both CLIs)."""
    return check_int(v, name, 0, SEED_MAX)


def check_float(v, name: str, lo=None, hi=None, lo_open=False, hi_open=False) -> float:
    """A finite real number in [lo, hi] (an end open with lo_open / hi_open); bool and strings
    are rejected."""
    ok = isinstance(v, numbers.Real | np.floating | np.integer) and not isinstance(
        v, bool | np.bool_
    )
    try:
        x = float(v) if ok else math.nan
    except OverflowError:  # an int beyond float range, e.g. 10**400
        x = math.nan
    bad = not math.isfinite(x)
    bad = bad or (lo is not None and (x <= lo if lo_open else x < lo))
    bad = bad or (hi is not None and (x >= hi if hi_open else x > hi))
    if bad:
        if lo is not None and hi is not None:
            rng = f" in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        elif lo is not None:
            rng = f" {'>' if lo_open else '>='} {lo:g}"
        else:
            rng = "" if hi is None else f" {'<' if hi_open else '<='} {hi:g}"
        raise ParameterError(name, f"must be a finite number{rng}, got {v!r}")
    return x


def check_k(k, name: str = "k") -> int:
    try:
        return check_int(k, name, 2, K_LIMIT)
    except ParameterError:
        raise ParameterError(
            name, f"group size must be an integer in [2, 2**53], got {k!r}"
        ) from None


def check_unit(x, name: str) -> float:
    return check_float(x, name, 0.0, 1.0)


def check_positive(x, name: str) -> float:
    return check_float(x, name, 0.0, lo_open=True)


def check_prior(prior, name: str = "prior") -> tuple[float, float]:
    """A Beta prior (A0, B0): two finite numbers > 0."""
    try:
        a0, b0 = prior
    except (TypeError, ValueError):
        raise ParameterError(name, f"must be two finite numbers A0,B0 > 0, got {prior!r}") from None
    for x in (a0, b0):
        try:
            check_positive(x, name)
        except ParameterError:
            raise ParameterError(
                name, f"must be two finite numbers A0,B0 > 0, got {prior!r}"
            ) from None
    return float(a0), float(b0)


def check_schedule(probe, increment, k, prefix: str = "--") -> tuple[int, int]:
    """Round schedule: probe / increment rollouts, integers in [0, k] (0 = auto)."""
    out = []
    for name, v in (("probe", probe), ("increment", increment)):
        try:
            out.append(check_int(v, prefix + name, 0, k))
        except ParameterError:
            raise ParameterError(
                prefix + name, f"must be an integer in [0, k={k}] (0 = auto), got {v!r}"
            ) from None
    return out[0], out[1]


def check_choice(v, name: str, choices) -> str:
    if not isinstance(v, str) or v not in choices:
        raise ParameterError(name, f"must be one of {', '.join(map(str, choices))}, got {v!r}")
    return v


def check_budget(estimate: float, limit: float, name: str, what: str, force: bool) -> None:
    """Refuse a request whose estimated cost exceeds what this machine does in a few minutes.

    `estimate` and `limit` are in the same unit (rollouts, bytes, state-space cells); `what` says
    what was estimated.  ``force=True`` (the CLIs' ``--force``) runs it anyway."""
    if force or estimate <= limit:
        return
    raise ParameterError(
        name,
        f"too big for this machine: estimated {what} {estimate:.3g} > limit {limit:.3g}; "
        "lower it or pass --force",
    )


def finite_or_none(obj):
    """Every non-finite float (nan, inf) in a JSON-able structure -> None (JSON null)."""
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, dict):
        return {key: finite_or_none(val) for key, val in obj.items()}
    if isinstance(obj, list | tuple | np.ndarray):
        return [finite_or_none(val) for val in obj]
    return obj

"""One error type for bad input: it names the parameter and the allowed range.

The CLIs catch it and print its message as one line (no traceback)."""


class ParameterError(ValueError):
    """Bad value for a named parameter, e.g. ``ParameterError("--k", "must be >= 2, got 1")``."""

    def __init__(self, parameter: str, message: str):
        self.parameter = parameter
        super().__init__(f"{parameter}: {message}")


def check_k(k, name: str = "k") -> int:
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise ParameterError(name, f"group size must be an integer >= 2, got {k!r}")
    return int(k)


def check_unit(x, name: str) -> float:
    x = float(x)
    if not (0.0 <= x <= 1.0):
        raise ParameterError(name, f"must be in [0, 1], got {x!r}")
    return x


def check_positive(x, name: str) -> float:
    x = float(x)
    if not (x > 0.0 and x < float("inf")):
        raise ParameterError(name, f"must be a finite number > 0, got {x!r}")
    return x


def check_prior(prior, name: str = "prior") -> tuple[float, float]:
    try:
        a0, b0 = prior
    except (TypeError, ValueError):
        raise ParameterError(name, f"must be two numbers A0,B0 > 0, got {prior!r}") from None
    return check_positive(a0, name), check_positive(b0, name)


def check_schedule(probe, increment, k, prefix: str = "--") -> tuple[int, int]:
    """Round schedule: probe / increment rollouts, integers in [0, k] (0 = auto)."""
    for name, v in (("probe", probe), ("increment", increment)):
        if int(v) != v or not 0 <= v <= k:
            raise ParameterError(
                prefix + name, f"must be an integer in [0, k={k}] (0 = auto), got {v!r}"
            )
    return int(probe), int(increment)

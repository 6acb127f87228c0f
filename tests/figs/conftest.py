"""The toy claim-files fixture (helpers in claim_toys.py: a conftest is not importable by name
when several test folders have one)."""

import pytest
from claim_toys import ARITH, toy_meta, toy_rows, write


@pytest.fixture
def claim_files(tmp_path):
    """A folder with the claim run's files at toy size: k8 (6 strategies, seeds 0-5), k8_more
    (ds, sara, sara-dps, seeds 6-11), rloo (sara 4 points behind DS), reasoning (sara's
    tokens saved beyond its rollouts) — reinforcepp is absent, as on a clone mid-run."""
    folder = tmp_path / "claims"
    write(folder, "k8", toy_rows(ARITH, range(6)), toy_meta())
    three = {a: ARITH[a] for a in ("ds", "sara", "sara-dps")}
    write(folder, "k8_more", toy_rows(three, range(6, 12)), toy_meta())
    rloo = {"ds": ARITH["ds"], "sara": (-0.04, 312, 5.0, 1.0, 1.0)}
    write(folder, "rloo", toy_rows(rloo, range(6)), toy_meta("rloo"))
    reason = {a: ARITH[a] for a in ("ds", "sara")}

    def tokens(a, seed):  # sara: 0.8x DS's tokens per rollout, +-2 % by seed
        return 10.0 if a == "ds" else 8.0 * (1 + 0.02 * (seed % 3 - 1))

    reasoning = toy_rows(reason, range(4), tokens=tokens)
    write(folder, "reasoning", reasoning, toy_meta(task="reasoning"))
    return folder

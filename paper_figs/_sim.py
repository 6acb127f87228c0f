"""The simulated parts of the figures: thin helpers over the Numba simulator
(``sara_sim.sim.simulate``), with one seed per simulated cell derived from the figure seed."""

import math
from dataclasses import dataclass

import numpy as np

from sara_sim.sim.simulate import ratio_se, simulate, summarize

Z95 = 1.959963984540054


def cell_seed(seed, *path):
    """A reproducible 31-bit seed for one simulated cell: (figure seed, figure, cell indices)."""
    return int(np.random.SeedSequence([int(seed), *map(int, path)]).generate_state(1)[0] >> 1)


def run(strategy, law, seed, **kwargs):
    """simulate(...) -> (per-step frame, summary dict)."""
    res = simulate(strategy, law, seed=seed, **kwargs)
    return res.frame, summarize(res)


@dataclass(frozen=True)
class Cells:
    """The simulated cells of one figure: its number (for the cell seeds) and the simulator's
    sizes, so each cell is one call with only what varies."""

    figure: int
    k: int
    groups: int
    steps: int
    replicates: int

    def run(self, strategy, law, seed, cell, **kwargs):
        """Simulate cell `cell` (its indices within the figure) -> (per-step frame, summary)."""
        sizes = {
            "k": self.k,
            "groups": self.groups,
            "steps": self.steps,
            "replicates": self.replicates,
        }
        return run(strategy, law, cell_seed(seed, self.figure, *cell), **sizes, **kwargs)


def sums(frame, *cols):
    return {c: float(frame[c].sum()) for c in cols}


def ratio_ci(frame, num, den, blocks=8):
    """Ratio of sums and a 95 % half-width; units = replicate x block of consecutive steps."""
    steps = int(frame["step"].max()) + 1
    nb = max(1, min(blocks, steps))
    unit = frame["replicate"].to_numpy() * nb + (frame["step"].to_numpy() * nb) // steps
    g = frame.assign(_u=unit).groupby("_u")[[num, den]].sum()
    r, se = ratio_se(g[num], g[den])
    return r, (Z95 * se if math.isfinite(se) else math.nan)

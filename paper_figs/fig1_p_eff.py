"""Figure 1 — the effectiveness predictor p_eff along all-fail and all-pass prefixes."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from sara_sim.core.beta import p_eff

from ._common import Figure, lines

KS = (4, 8, 16, 32)
PRIORS = ((1.0, 1.0), (0.3, 0.3), (0.5, 2.0))
SIDES = ("all-fail", "all-pass")


def data():
    rows = []
    for a0, b0 in PRIORS:
        for k in KS:
            n = np.arange(1, k + 1)
            for side in SIDES:
                s = np.zeros_like(n) if side == "all-fail" else n
                closed = (k - n) / (k + 1) if (a0, b0) == (1.0, 1.0) else np.full(len(n), np.nan)
                rows.append(
                    pd.DataFrame(
                        {
                            "prior": f"Beta({a0:g},{b0:g})",
                            "alpha0": a0,
                            "beta0": b0,
                            "side": side,
                            "k": k,
                            "n": n,
                            "p_eff": p_eff(n, s, k, a0, b0),
                            "closed_form_uniform": closed,
                        }
                    )
                )
    return pd.concat(rows, ignore_index=True)


def build(seed=0, history=None):
    df = data()
    priors = list(dict.fromkeys(df["prior"]))
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.4), sharex=True, sharey=True)
    palette = dict(zip(KS, sns.color_palette("viridis", len(KS))))
    for r, side in enumerate(SIDES):
        for c, prior in enumerate(priors):
            ax = axes[r, c]
            sub = df[(df["side"] == side) & (df["prior"] == prior)]
            lines(
                ax,
                sub,
                "n",
                "p_eff",
                "k",
                palette=palette,
                markersize=4,
                legend=(r == 0 and c == 2),
            )
            if prior == "Beta(1,1)":
                for k in KS:
                    n = np.arange(1, k + 1)
                    ax.plot(
                        n,
                        (k - n) / (k + 1),
                        ls=":",
                        color="black",
                        lw=1.3,
                        label="(k−n)/(k+1)" if k == KS[0] else None,
                    )
                ax.legend(loc="upper right", fontsize=8)
            ax.set_title(f"{side} prefix, prior {prior}")
            ax.set_xlabel("rollouts observed n [rollouts]")
            ax.set_ylabel("p_eff [probability]")
            ax.set_ylim(-0.02, 1.02)
    axes[0, 2].legend(title="group size k", loc="upper right")
    fig.suptitle(
        "Predicted probability that the full group of k will be mixed, after n unmixed rollouts"
    )
    fig.tight_layout()
    caption = (
        "p_eff(n) = P(full group of k mixed | n rollouts, all failed (top) or all passed (bottom)) "
        f"for k in {list(KS)} and priors Beta(1,1), Beta(0.3,0.3), Beta(0.5,2). Under the "
        "uniform prior the curves are exactly the closed form (k-n)/(k+1) (dotted black); a "
        "polarised prior makes p_eff collapse after one or two unmixed rollouts, and an "
        "asymmetric prior treats the two sides differently. Exact (log-space Beta functions)."
    )
    return Figure(fig, df, caption)

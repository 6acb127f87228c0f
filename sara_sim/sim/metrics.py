"""The per-step metrics every kernel writes (one row per replicate and step), by index.

``decided_*`` book each fresh prompt once, when its fate is sealed (committed group complete,
abandoned, skipped, saturated): their ratios estimate the per-prompt quantities of exact theory.
"""

METRICS = (
    "rollouts",  # rollouts generated this step
    "tokens",  # tokens of the prompts decided this step (token model)
    "groups",  # groups in this step's batch
    "effective",  # mixed groups in this step's batch
    "abandoned",  # prompts abandoned (incl. skipped before any rollout)
    "false_abandons",  # abandoned, yet the full group of k would have been mixed
    "abandoned_rollouts",
    "saturated",  # full groups that never mixed (discarded, or in the batch for uniform-like)
    "waste",  # rollouts of prompts discarded this step (abandoned, saturated-dropped, surplus)
    "rounds",  # engine calls this step
    "signal_proxy",  # sum over batch groups of s(k - s)/k^2
    "fresh_prompts",  # prompts pulled from the prompt source
    "carried",  # complete groups carried to the next step
    "carried_open",  # prompts still in progress at the end of the step
    "capped",  # 1 if the step hit its round / batch cap
    "skipped",  # prompts abandoned (or filtered) before any rollout
    "decided",  # fresh prompts whose fate was sealed this step
    "decided_rollouts",  # their rollouts
    "decided_effective",  # of them: mixed groups that enter a batch
    "decided_proxy",  # their s(k - s)/k^2
    "decided_abandoned",
    "decided_false_abandons",
    "overflow",  # internal: slot table too small (the driver retries larger)
)
N_METRICS = len(METRICS)
(
    I_ROLLOUTS,
    I_TOKENS,
    I_GROUPS,
    I_EFFECTIVE,
    I_ABANDONED,
    I_FALSE_AB,
    I_AB_ROLLOUTS,
    I_SATURATED,
    I_WASTE,
    I_ROUNDS,
    I_PROXY,
    I_FRESH,
    I_CARRIED,
    I_CARRIED_OPEN,
    I_CAPPED,
    I_SKIPPED,
    I_DEC,
    I_DEC_ROLLOUTS,
    I_DEC_EFF,
    I_DEC_PROXY,
    I_DEC_AB,
    I_DEC_FALSE,
    I_OVERFLOW,
) = range(N_METRICS)

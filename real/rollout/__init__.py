"""Layer 5: rollouts: the collector's rounds driven through an engine into committed groups
(collect) and held-out evaluation (evaluation)."""

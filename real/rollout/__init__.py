"""Layer 5: rollouts: the collector's rounds driven through a sampler into committed groups
(collect) and held-out evaluation (evaluation)."""

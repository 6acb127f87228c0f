"""Layer 5: rollouts: the allocator's rounds driven through a sampler into committed groups
(collect) and held-out evaluation (evaluation)."""

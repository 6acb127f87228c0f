"""Layer 5: rollouts: the run's engine and the collector's rounds driven through it into committed
groups (collect), the same round-free (streamed), and held-out evaluation (evaluation)."""

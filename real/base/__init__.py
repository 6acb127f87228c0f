"""Layer 0: the run's settings (config: Config and its sections, the collector built from them)
and the process environment set before torch / vLLM (env)."""

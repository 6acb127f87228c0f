"""Layer 4: where rollouts are sampled: the Engine interface and in-process vLLM (engine), vLLM
servers (serve: start one; served: check one; client: sample from several) and the run's choice
between them (build)."""

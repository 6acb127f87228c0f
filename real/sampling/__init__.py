"""Layer 4: where rollouts are sampled: the Engine interface and in-process vLLM (engine), the
round-free StreamEngines (streaming, inprocess_stream, served_stream) and vLLM servers (serve:
start one; served: check one; client: sample from several)."""

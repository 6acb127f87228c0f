"""Layer 3: models: the offline tiny default (tiny), model resolution (resolve) and per-token
logprobs in torch (logprobs)."""

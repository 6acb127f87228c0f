"""Layer 3: models: the offline tiny default (tiny: its build; tiny_net: its tokenizer and
network; tiny_targets: SFT targets; tiny_sample: sampling during a build), model resolution
(resolve) and per-token logprobs in torch (logprobs)."""

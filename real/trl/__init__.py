"""Layer 6: Hugging Face TRL: SARA as GRPOTrainer's rollout_func (adapter, backends) and a sara-
real run through TRL (run). A sibling of real.train: neither imports the other."""

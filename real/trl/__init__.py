"""Layer 6: Hugging Face TRL: SARA as GRPOTrainer's rollout_func (adapter, backends) and a sara-
real run through TRL (run). A sibling of real.train: neither imports the other.

Public: `SaraRollout` (``from real.trl import SaraRollout``, also ``from real import ...``); the
modules are internal."""

from real.trl.adapter import SaraRollout

__all__ = ["SaraRollout"]

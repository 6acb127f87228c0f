"""Layer 6: our trainer: GRPO's loss and step (grpo) and the native training loop (loop). A sibling
of real.trl: neither imports the other."""

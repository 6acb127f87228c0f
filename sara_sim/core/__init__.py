"""Layer 1, the exact core: predictor (beta.p_eff), stopping rule (policy), round schedule
(schedule), theory, optimal, informed priors, difficulty laws, the strategy registry (registry),
errors. Imports nothing above it."""

"""Layer 3, the simulator: rng, prompt sources, laws, Numba kernels, simulate, replay, verify,
bench. Imports sara_sim.core and sara_sim.collect."""

"""Layer 2, the round-synchronous collectors (what real/ and trainer integrations import):
collectors.make_collector, SaraCollector, DS and uniform collectors, selectors.
Imports only sara_sim.core."""

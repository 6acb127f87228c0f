"""Layer 4, the `sara-sim` command line (the only layer that may import paper_figs, lazily)."""

from .app import main

__all__ = ["main"]

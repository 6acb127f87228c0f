"""Layer 7: what a user runs: one run (run: its checks, then its training; resume: the run
folder's checks), compare, audit, and the `sara-real` command line (cli)."""

"""Layer 7: what a user runs: the checks that need the machine (checks, resume), one run (run),
compare, audit, and the `sara-real` command line (cli, flags)."""

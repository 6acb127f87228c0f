"""`python -m sara_sim.cli` = `sara-sim`."""

from .app import main

raise SystemExit(main())

"""`python -m resource_tracker`: the command-line tool (same as `resource-tracker`)."""

from resource_tracker.cli import main

raise SystemExit(main())

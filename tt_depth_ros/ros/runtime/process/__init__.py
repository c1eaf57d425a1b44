"""The node process: entry point, signals, loopback discovery for our own harnesses, launch glue."""

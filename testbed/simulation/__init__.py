"""The simulation executor: jobs as modeled durations in virtual time."""

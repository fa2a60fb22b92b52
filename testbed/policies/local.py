"""Local scheduling (THESIS §4.4.3): up to MPL jobs per PE, never stopped; the OS schedules."""

from __future__ import annotations

from testbed.policies.base import Policy


class Local(Policy):
    """The matrix only limits how many ranks share a PE; there is no heartbeat."""

    name = "local"
    time_sliced = False
    simulable = False

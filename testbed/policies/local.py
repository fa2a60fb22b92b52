"""Local scheduling (THESIS §4.4.3): up to MPL jobs per PE, never stopped; the OS schedules."""

from __future__ import annotations

from testbed.policies.base import Policy


class Local(Policy):
    """The matrix only limits how many ranks share a PE; there is no heartbeat."""

    name = "local"

    def __init__(self, pes: int, mpl: int, timeslice: float, allocator: str) -> None:
        super().__init__(pes, mpl, None, allocator)

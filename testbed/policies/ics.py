"""Implicit coscheduling (THESIS §2.3.2): local scheduling with spin-block in every rank.

No heartbeat and no stopping: up to MPL ranks share a PE and the OS schedules them, but a rank
whose wait outlasts its spin time blocks, yielding its CPU to the others on that PE.
"""

from __future__ import annotations

from testbed.policies.config import PolicyConfig
from testbed.policies.local import Local
from testbed.policies.spin import Spin

DEFAULT_SPIN_S = 0.0005


class Ics(Local):
    """Local scheduling plus the shim's spin-block (a fixed spin time, seconds)."""

    name = "ics"
    uses_shim = True
    coscheduled = False

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self.spin = Spin("fixed", fixed_s=DEFAULT_SPIN_S if config.spin is None else config.spin)

"""What a policy says about the shim and reads back from it, as plain data (no cffi, no OS).

``Spin`` is how a rank's blocking waits spin before they block; ``Counters`` is a snapshot of a
rank's shim record (``native/shim_record.h``).  Policies use both, so they live here,
apart from the cffi binding in ``testbed.emulation.shim``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Spin:
    """How waits spin before blocking (seconds).

    ``forever``: busy-wait, never block (a coscheduled process owns its CPU);
    ``fixed``: spin ``fixed_s`` then block (ICS, and FCS's DC processes);
    ``adaptive``: spin min(max(2 * longest non-blocking wait, ``min_s``), ``max_s``) then block
    (THESIS §3.5 item 4; the floor ``min_s`` keeps the spin from collapsing below what a normal
    communication needs).
    """

    mode: str
    fixed_s: float = 0.0
    max_s: float = 0.0
    min_s: float = 0.0


@dataclass(frozen=True)
class Counters:
    """A snapshot of a shim record: counts, seconds (stopped time excluded), blocked state,
    how the sleeps of blocked waits ended (rung by a peer, or at the safety-net timeout), the
    CPU time used while blocked, and how many barriers met on the ranks' arrival counts."""

    pid: int
    attached: bool
    c_cs: int
    c_dc: int
    t_cs: float
    t_dc: float
    max_nonblock_s: float
    blocked: bool
    block_seq: int
    blocks: int
    blocked_s: float
    cpu_s: float
    spin_s: float
    stopped_s: float
    wakes_rung: int = 0
    wakes_timed: int = 0
    blocked_cpu_s: float = 0.0
    meetings: int = 0
    drains: int = 0

    def as_dict(self) -> dict[str, float | int | bool]:
        """JSON-ready fields."""
        return {k: (round(v, 6) if isinstance(v, float) else v)
                for k, v in self.__dict__.items()}

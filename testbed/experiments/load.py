"""What else used the CPUs while a run ran: load averages, other processes' CPU time and the
hypervisor's steal time, from snapshots before and after (psutil).

*Foreign* CPU time is every CPU second the host spent busy minus what this process and its
reaped descendants used (the coordinator, node managers, launchers and ranks of a run are all
that).  *Steal* is time the hypervisor gave this machine's virtual CPUs to someone else.  A run
is *disturbed* when foreign work took more than ``FOREIGN_LIMIT`` of one CPU on average, or
steal more than ``STEAL_LIMIT`` of the host's CPU time.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import asdict, dataclass
from typing import Any

import psutil

FOREIGN_LIMIT = 0.10
STEAL_LIMIT = 0.05


@dataclass(frozen=True)
class Snapshot:
    """The host's CPU counters at one moment (seconds, summed over CPUs)."""

    wall: float
    busy: float
    steal: float
    own: float
    loadavg: tuple[float, float, float]

    def as_dict(self) -> dict[str, Any]:
        """The snapshot as a plain dict."""
        return asdict(self)


def snapshot() -> Snapshot:
    """The host's busy and steal CPU time, this process tree's CPU time and the load average
    now."""
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    steal = getattr(times, "steal", 0.0)
    busy = sum(times) - idle - steal - getattr(times, "guest", 0.0) \
        - getattr(times, "guest_nice", 0.0)
    own = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        own += usage.ru_utime + usage.ru_stime
    return Snapshot(time.monotonic(), busy, steal, own, os.getloadavg())


def disturbance(before: Snapshot, after: Snapshot, cpus: int | None = None) -> dict[str, Any]:
    """What other work took between two snapshots: foreign CPU seconds and their share of one
    CPU, steal seconds and their share of the host's CPU time, the load averages, and whether
    the run counts as disturbed (with why)."""
    cpus = cpus or psutil.cpu_count() or 1
    wall = max(after.wall - before.wall, 1e-9)
    foreign = max(0.0, (after.busy - before.busy) - (after.own - before.own))
    steal = max(0.0, after.steal - before.steal)
    foreign_share, steal_share = foreign / wall, steal / (wall * cpus)
    why = []
    if foreign_share > FOREIGN_LIMIT:
        why.append(f"other processes used {foreign_share:.0%} of a CPU")
    if steal_share > STEAL_LIMIT:
        why.append(f"the hypervisor stole {steal_share:.0%} of the CPU time")
    return {"wall_s": round(wall, 3), "foreign_cpu_s": round(foreign, 3),
            "foreign_share": round(foreign_share, 4), "steal_s": round(steal, 3),
            "steal_share": round(steal_share, 4), "loadavg_before": before.loadavg,
            "loadavg_after": after.loadavg, "disturbed": bool(why), "why": "; ".join(why)}

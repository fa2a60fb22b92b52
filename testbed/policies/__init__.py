"""Scheduling policies, registered by name."""

from __future__ import annotations

from testbed.policies.base import Action, JobRequest, Launch, Policy, Run
from testbed.policies.fcfs import Fcfs
from testbed.policies.fcs import Fcs
from testbed.policies.gang import Gang
from testbed.policies.ics import Ics
from testbed.policies.local import Local

POLICIES: dict[str, type[Policy]] = {cls.name: cls for cls in (Fcfs, Gang, Local, Ics, Fcs)}


def make_policy(name: str, pes: int, mpl: int, timeslice: float, allocator: str,
                spin: float | None = None) -> Policy:
    """Build the policy called ``name``; raises ``ValueError`` naming the known ones.

    ``spin`` (seconds) is the shim's spin time for ``ics`` and its MAX_spin for ``fcs``.
    """
    try:
        cls = POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(POLICIES))
        raise ValueError(f"unknown scheduler {name!r} (known: {known})") from None
    if cls.uses_shim and spin is not None:
        return cls(pes, mpl, timeslice, allocator, spin)  # type: ignore[call-arg]
    return cls(pes, mpl, timeslice, allocator)


__all__ = ["POLICIES", "Action", "JobRequest", "Launch", "Policy", "Run", "make_policy"]

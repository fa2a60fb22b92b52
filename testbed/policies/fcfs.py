"""FCFS batch scheduling (THESIS §4.4.4): MPL 1, no time slicing, queue in arrival order."""

from __future__ import annotations

from testbed.policies.base import Policy


class Fcfs(Policy):
    """Each PE holds at most one job; a job runs from launch to end undisturbed."""

    name = "fcfs"
    fixed_mpl = 1
    time_sliced = False

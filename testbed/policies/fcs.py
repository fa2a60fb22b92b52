"""Flexible coscheduling (THESIS ch. 3, §4.4.2): the gang matrix plus per-process classes.

The machine manager's part is gang scheduling.  Each node then classifies its processes from
the shim's counters (Fig 4.3, Table 4.1 thresholds in units of the timeslice T, CPU time in
class rather than wall time) and deviates from the matrix locally (Fig 3.2):

* CS processes run their whole slot, alone on their PE;
* F processes run in their slot until they block; while they are blocked, the DC processes on
  the same PE fill the gap, and when no DC process is ready (none, or all blocked), the F and
  then the CS processes do (§3.5 item 6);
* DC processes run in DC slots, with the same fallback to F and then CS processes when none of
  them is ready; DC and F processes continue into slots that leave their PE idle (alternate
  scheduling), while CS processes stay suspended there (Fig 3.2).

Waits spin by class (§3.3, §3.5 item 4): a coscheduled CS (or INIT_CS) process owns its slot
and busy-waits; an F process spins adaptively, min(max(2 * MAX_non-block, floor), MAX_spin),
then blocks; a DC process, and any process running outside its coscheduled slot, blocks after
a short spin so that others can use the CPU.

New processes start in INIT_CS, then INIT_DC (skipped by effective fine-grained processes,
§3.5 item 2), then move between CS, F and DC; after MAX_ctime in one class they start over.
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from testbed.policies.config import PolicyConfig
from testbed.policies.gang import Gang
from testbed.policies.node import ClassChange, GangNode, Proc, ProcKey
from testbed.policies.spin import Counters, Spin

INIT_CS, INIT_DC, CS, F, DC = "INIT_CS", "INIT_DC", "CS", "F", "DC"
COSCHEDULED = (INIT_CS, CS)
DONT_CARE = (INIT_DC, DC)
MAX_SPIN_S = 0.0005
SPIN_FLOOR_S = 0.0001


@dataclass(frozen=True)
class FcsSpins:
    """The spin of each kind of wait: a coscheduled CS process busy-waits, F processes spin
    adaptively between a floor and MAX_spin, the rest spin the floor then block."""

    coscheduled: Spin
    frustrated: Spin
    short: Spin

    @classmethod
    def for_max(cls, max_s: float = MAX_SPIN_S, floor_s: float = SPIN_FLOOR_S) -> FcsSpins:
        """The spins for MAX_spin ``max_s`` and floor ``floor_s`` (seconds); the floor keeps
        the F spin (THESIS §3.5 item 4) from collapsing."""
        floor = min(floor_s, max_s)
        return cls(coscheduled=Spin("forever"),
                   frustrated=Spin("adaptive", max_s=max_s, min_s=floor),
                   short=Spin("fixed", fixed_s=floor))


@dataclass(frozen=True)
class FcsParams:
    """Table 4.1, in seconds for a timeslice T."""

    max_wdc_wcs: float
    f_thresh: float
    dc_thresh: float
    cs_thresh: float
    max_ctime: float
    min_ctime: float
    min_init_ctime: float

    @classmethod
    def for_timeslice(cls, t: float) -> FcsParams:
        """THESIS Table 4.1 expressed for timeslice ``t`` (seconds)."""
        return cls(max_wdc_wcs=2.0, f_thresh=t / 100, dc_thresh=t, cs_thresh=t / 9,
                   max_ctime=500 * t, min_ctime=2 * t, min_init_ctime=5 * t)


@dataclass(frozen=True)
class Observation:
    """What classification looks at, for one process (times in seconds)."""

    ctime: float      # CPU time in the current class
    events: int       # synchronous operations in the current class
    c_cs: int         # lifetime counts and wait times, split coscheduled / not
    t_cs: float
    c_dc: int
    t_dc: float

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields, with the derived W_CS, W_DC and granularity."""
        w_cs = self.t_cs / self.c_cs if self.c_cs else None
        w_dc = self.t_dc / self.c_dc if self.c_dc else None
        grain = self.ctime / self.events if self.events else None
        return {"ctime": round(self.ctime, 4), "events": self.events, "c_cs": self.c_cs,
                "c_dc": self.c_dc, "w_cs": w_cs and round(w_cs, 6),
                "w_dc": w_dc and round(w_dc, 6), "granularity": grain and round(grain, 6)}


def classify(cls: str, obs: Observation, p: FcsParams) -> str:
    """The class a process in ``cls`` should have now (THESIS Fig 4.3); may be ``cls``."""
    if obs.ctime < (p.min_init_ctime if cls in (INIT_CS, INIT_DC) else p.min_ctime):
        return cls
    if obs.ctime > p.max_ctime:
        return INIT_CS
    grain = obs.ctime / obs.events if obs.events else math.inf
    if cls == INIT_CS:
        return CS if grain < p.cs_thresh else INIT_DC
    w_cs = obs.t_cs / obs.c_cs if obs.c_cs else 0.0
    if grain > p.dc_thresh:
        return DC
    if w_cs > p.f_thresh:
        return F
    if grain < p.cs_thresh or not obs.c_dc:
        return CS
    w_dc = obs.t_dc / obs.c_dc
    ratio = w_dc / w_cs if w_cs > 0 else (math.inf if w_dc > 0 else 1.0)
    return CS if ratio > p.max_wdc_wcs else DC


@dataclass
class _State:
    proc: Proc
    cls: str = INIT_CS
    blocked: bool = False
    entry_cpu: float = 0.0
    entry_events: int = 0
    history: list[str] = field(default_factory=lambda: [INIT_CS])


class FcsNode(GangNode):
    """One node's FCS scheduler: classes from counters, run sets from Fig 3.2."""

    def __init__(self, params: FcsParams, spins: FcsSpins | None = None) -> None:
        super().__init__()
        self.params = params
        self.spins = spins or FcsSpins.for_max()
        self.state: dict[ProcKey, _State] = {}

    def add(self, proc: Proc) -> None:
        """A process was launched on this node; it starts INIT_CS."""
        super().add(proc)
        self.state[proc.key] = _State(proc)

    def remove(self, job: str) -> None:
        """``job`` ended: forget its processes."""
        super().remove(job)
        for key in [k for k in self.state if k[0] == job]:
            del self.state[key]

    def set_blocked(self, key: ProcKey, blocked: bool) -> None:
        """The shim reported that the process blocked (or runs again)."""
        if key in self.state:
            self.state[key].blocked = blocked

    def spin_of(self, key: ProcKey, coscheduled: bool) -> Spin | None:
        """How the process's waits spin, from its class and whether it runs coscheduled."""
        st = self.state.get(key)
        if st is None:
            return None
        if st.cls == F:
            return self.spins.frustrated
        if coscheduled and st.cls in COSCHEDULED:
            return self.spins.coscheduled
        return self.spins.short

    def classes(self) -> dict[ProcKey, list[str]]:
        """Each process's class history, oldest first."""
        return {k: list(s.history) for k, s in self.state.items()}

    def update(self, key: ProcKey, counters: Counters, cpu_s: float) -> ClassChange | None:
        """Feed fresh counters and CPU seconds for one process; reclassify it."""
        st = self.state.get(key)
        if st is None:
            return None
        events = counters.c_cs + counters.c_dc
        obs = Observation(cpu_s - st.entry_cpu, events - st.entry_events, counters.c_cs,
                          counters.t_cs, counters.c_dc, counters.t_dc)
        new = classify(st.cls, obs, self.params)
        if new == st.cls:
            return None
        change = ClassChange(key[0], key[1], st.cls, new, obs.as_dict())
        st.cls, st.entry_cpu, st.entry_events = new, cpu_s, events
        st.history.append(new)
        return change

    def decide(self) -> dict[ProcKey, bool]:
        """Processes to run now and whether each runs coscheduled (THESIS Fig 3.2)."""
        by_pe: dict[int, list[_State]] = defaultdict(list)
        for st in self.state.values():
            by_pe[st.proc.pe].append(st)
        run: dict[ProcKey, bool] = {}
        for states in by_pe.values():
            primary = next((s for s in states if s.proc.job in self.jobs), None)
            others = [s for s in states if s is not primary]
            if primary is None:
                fillers = _fill(others, ((*DONT_CARE, F),))
            elif primary.cls in COSCHEDULED:
                run[primary.proc.key] = True
                continue
            elif primary.cls == F:
                run[primary.proc.key] = True
                fillers = _fill(others, (DONT_CARE, (F,), COSCHEDULED)) if primary.blocked else []
            else:
                fillers = _fill(states, (DONT_CARE, (F,), COSCHEDULED))
            run.update({s.proc.key: False for s in fillers})
        return run


def _fill(candidates: list[_State], tiers: tuple[tuple[str, ...], ...]) -> list[_State]:
    """The processes to let the OS schedule in a DC slot or an F gap (Fig 3.2, §3.5 item 6):
    the first tier's processes, then each next tier's as long as none chosen so far is ready
    (not blocked in a wait)."""
    chosen: list[_State] = []
    for tier in tiers:
        chosen += [s for s in candidates if s.cls in tier]
        if any(not s.blocked for s in chosen):
            break
    return chosen


class Fcs(Gang):
    """Gang scheduling at the MM; FCS classes and local decisions at every node."""

    name = "fcs"
    uses_shim = True
    # Collectives are made as the blocking calls: they cost what they cost under gang
    # scheduling, but a rank waits in them by MPICH's polling, never blocks (point-to-point
    # operations and waits still spin by class).  The form must be the same on every rank of a
    # job, and ranks change class independently, so it cannot follow the class.
    native_collectives = True

    simulable = False

    def __init__(self, config: PolicyConfig) -> None:
        super().__init__(config)
        self.spins = FcsSpins.for_max(MAX_SPIN_S if config.spin is None else config.spin)
        self.spin = self.spins.coscheduled
        self.params = FcsParams.for_timeslice(config.timeslice)

    def spin_settings(self) -> dict[str, dict[str, float | str]]:
        """The spin of coscheduled CS processes, of F processes, and of all others."""
        return {"coscheduled CS": dataclasses.asdict(self.spins.coscheduled),
                "F": dataclasses.asdict(self.spins.frustrated),
                "DC and others": dataclasses.asdict(self.spins.short)}

    def node_policy(self) -> FcsNode:
        """A fresh node-level FCS scheduler."""
        return FcsNode(self.params, self.spins)

"""The driver's agenda: what is due when, in one heap (as SimPy's core keeps its events).

Entries are pushed with a time (s on the run's clock) and a kind; the kind fixes the order of
entries due at the same instant.  Two kinds are not pushed but read when needed, because their
time is a fact about someone else: the policy's own wake-up and the heartbeat.  They are
*timers*, callables returning their next time (or None), and each fires at most once a round
(a policy still due after waking waits for the next round, as a heartbeat does).
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

Timer = Callable[[], "float | None"]


class Kind(IntEnum):
    """What an entry is; entries due at the same instant are taken in this order."""

    OWNER_END = 0
    OWNER_VISIT = 1
    OWNER_ARRIVAL = 2
    ARRIVAL = 3
    WAKE = 4
    HEARTBEAT = 5
    DEADLINE = 6


@dataclass(slots=True)
class Entry:
    """A timed entry: due ``at`` (s); ``key`` orders entries of one kind due together (a PE,
    a job name), then the order they were pushed in; ``what`` is what is due."""

    at: float
    kind: Kind
    key: Any
    seq: int
    what: Any = None
    live: bool = True


class Agenda:
    """Timed entries and timers, taken round by round in time order (then kind, key, push
    order)."""

    def __init__(self, timers: dict[Kind, Timer] | None = None) -> None:
        # (at, kind, key, seq, entry): tuples compare in C, and seq is unique, so entries
        # themselves are never compared
        self.heap: list[tuple[float, Kind, Any, int, Entry]] = []
        self.timers = timers or {}
        self.seq = itertools.count()
        self.live = Counter[Kind]()

    def push(self, at: float, kind: Kind, what: Any = None, key: Any = 0) -> Entry:
        """Put ``what`` on the agenda, due at ``at`` (s); the entry (to cancel it)."""
        entry = Entry(at, kind, key, next(self.seq), what)
        heapq.heappush(self.heap, (at, kind, key, entry.seq, entry))
        self.live[kind] += 1
        return entry

    def cancel(self, entry: Entry | None) -> None:
        """Take ``entry`` off the agenda (nothing if it is None or gone already)."""
        if entry is not None and entry.live:
            entry.live = False
            self.live[entry.kind] -= 1

    def count(self, kind: Kind) -> int:
        """How many entries of ``kind`` are on the agenda."""
        return self.live[kind]

    def _top(self) -> Entry | None:
        heap = self.heap
        while heap and not heap[0][4].live:
            heapq.heappop(heap)
        return heap[0][4] if heap else None

    def due(self, now: float) -> Iterator[Entry]:
        """One round: the entries due at ``now`` (s) or before, earliest first, each taken off
        as it is yielded; entries pushed meanwhile are yielded too when due.  Timers yield
        entries of their kind (``what`` None) at most once each."""
        fired: set[Kind] = set()
        while True:
            top = self._top()
            best = top if top is not None and top.at <= now else None
            for kind, timer in self.timers.items():
                if kind in fired:
                    continue
                at = timer()
                if at is not None and at <= now and (
                        best is None or (at, kind) < (best.at, best.kind)):
                    best = Entry(at, kind, 0, -1)
            if best is None:
                return
            if best.seq < 0:
                fired.add(best.kind)
            else:
                heapq.heappop(self.heap)
                best.live = False
                self.live[best.kind] -= 1
            yield best

    def next_at(self) -> float:
        """When (s) the next entry or timer is due; infinity when nothing is."""
        top = self._top()
        at = top.at if top is not None else float("inf")
        for timer in self.timers.values():
            due = timer()
            if due is not None and due < at:
                at = due
        return at

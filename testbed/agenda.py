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
from collections import Counter, deque
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
    order).

    Entries sit in a heap, except those pushed in taking order (each no earlier than the last
    one pushed so), which wait in a plain queue: a workload's arrivals, pushed all at once,
    then cost nothing to push or take.
    """

    def __init__(self, timers: dict[Kind, Timer] | None = None) -> None:
        # (at, kind, key, seq, entry): tuples compare in C, and seq is unique, so entries
        # themselves are never compared
        self.heap: list[tuple[float, Kind, Any, int, Entry]] = []
        self.ordered: deque[tuple[float, Kind, Any, int, Entry]] = deque()
        self.timers = timers or {}
        self.seq = itertools.count()
        self.live = Counter[Kind]()
        # when the earliest live entry is due, as the last round found it (None: not known,
        # entries were pushed, cancelled or taken since)
        self.top_at: float | None = None

    def push(self, at: float, kind: Kind, what: Any = None, key: Any = 0) -> Entry:
        """Put ``what`` on the agenda, due at ``at`` (s); the entry (to cancel it)."""
        seq = next(self.seq)
        entry = Entry(at, kind, key, seq, what)
        item = (at, kind, key, seq, entry)
        ordered = self.ordered
        if not ordered or ordered[-1] < item:
            ordered.append(item)
        else:
            heapq.heappush(self.heap, item)
        self.live[kind] += 1
        self.top_at = None
        return entry

    def cancel(self, entry: Entry | None) -> None:
        """Take ``entry`` off the agenda (nothing if it is None or gone already)."""
        if entry is not None and entry.live:
            entry.live = False
            self.live[entry.kind] -= 1
            self.top_at = None

    def count(self, kind: Kind) -> int:
        """How many entries of ``kind`` are on the agenda."""
        return self.live[kind]

    def _top(self) -> tuple[float, Kind, Any, int, Entry] | None:
        """The earliest live entry's item (dead ones before it are dropped)."""
        heap, ordered = self.heap, self.ordered
        while heap and not heap[0][4].live:
            heapq.heappop(heap)
        while ordered and not ordered[0][4].live:
            ordered.popleft()
        if not heap:
            return ordered[0] if ordered else None
        return ordered[0] if ordered and ordered[0] < heap[0] else heap[0]

    def due(self, now: float) -> Iterator[Entry]:
        """One round: the entries due at ``now`` (s) or before, earliest first, each taken off
        as it is yielded; entries pushed meanwhile are yielded too when due.  Timers yield
        entries of their kind (``what`` None) at most once each."""
        timers = list(self.timers.items())
        heap, ordered, live = self.heap, self.ordered, self.live
        self.top_at = None
        heappop, popleft = heapq.heappop, ordered.popleft
        while True:
            # the earliest live entry, as _top finds it (inline: this runs once an entry)
            while heap and not heap[0][4].live:
                heappop(heap)
            while ordered and not ordered[0][4].live:
                popleft()
            if heap:
                top = ordered[0] if ordered and ordered[0] < heap[0] else heap[0]
            else:
                top = ordered[0] if ordered else None
            best = top[4] if top is not None and top[0] <= now else None
            for kind, timer in timers:
                at = timer()
                if at is not None and at <= now and (
                        best is None or (at, kind) < (best.at, best.kind)):
                    best = Entry(at, kind, 0, -1)
            if best is None:
                if top is not None:
                    self.top_at = top[0]
                return
            if best.seq < 0:
                timers.remove((best.kind, self.timers[best.kind]))
            else:
                if ordered and ordered[0] is top:
                    popleft()
                else:
                    heappop(heap)
                best.live = False
                live[best.kind] -= 1
            yield best

    def next_at(self) -> float:
        """When (s) the next entry or timer is due; infinity when nothing is."""
        at = self.top_at
        if at is None:
            top = self._top()
            at = top[0] if top is not None else float("inf")
        for timer in self.timers.values():
            due = timer()
            if due is not None and due < at:
                at = due
        return at

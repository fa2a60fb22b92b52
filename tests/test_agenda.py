"""The driver's agenda and job table, with given times."""

from __future__ import annotations

import math
import random

from testbed.agenda import Agenda, Kind
from testbed.job_table import JobTable
from testbed.workloads.files import JobSpec


def _taken(agenda: Agenda, now: float) -> list[tuple[float, str, object]]:
    return [(e.at, e.kind.name, e.what) for e in agenda.due(now)]


def test_entries_come_in_time_then_kind_then_key_order():
    agenda = Agenda()
    agenda.push(2.0, Kind.DEADLINE, "b", key="b")
    agenda.push(2.0, Kind.DEADLINE, "a", key="a")
    agenda.push(2.0, Kind.ARRIVAL, "j1")
    agenda.push(1.0, Kind.DEADLINE, "c", key="c")
    agenda.push(2.0, Kind.OWNER_END, 3, key=3)
    agenda.push(5.0, Kind.ARRIVAL, "later")
    assert _taken(agenda, 2.0) == [(1.0, "DEADLINE", "c"), (2.0, "OWNER_END", 3),
                                   (2.0, "ARRIVAL", "j1"), (2.0, "DEADLINE", "a"),
                                   (2.0, "DEADLINE", "b")]
    assert agenda.next_at() == 5.0 and agenda.count(Kind.ARRIVAL) == 1


def test_entries_of_one_kind_and_key_keep_their_push_order():
    agenda = Agenda()
    for name in ("x", "y", "z"):
        agenda.push(1.0, Kind.ARRIVAL, name)
    assert [what for _, _, what in _taken(agenda, 1.0)] == ["x", "y", "z"]


def test_a_cancelled_entry_is_never_taken_nor_counted():
    agenda = Agenda()
    gone = agenda.push(1.0, Kind.ARRIVAL, "gone")
    agenda.push(3.0, Kind.ARRIVAL, "kept")
    agenda.cancel(gone)
    agenda.cancel(gone)
    agenda.cancel(None)
    assert agenda.count(Kind.ARRIVAL) == 1
    assert agenda.next_at() == 3.0
    assert _taken(agenda, 2.0) == []


def test_entries_pushed_while_a_round_runs_are_taken_when_due():
    agenda = Agenda()
    agenda.push(1.0, Kind.ARRIVAL, "first")
    seen = []
    for entry in agenda.due(1.0):
        seen.append(entry.what)
        if entry.what == "first":
            agenda.push(1.0, Kind.ARRIVAL, "successor")      # think time 0
            agenda.push(1.5, Kind.ARRIVAL, "not yet")
    assert seen == ["first", "successor"]
    assert agenda.next_at() == 1.5


def test_the_next_time_follows_what_changed_since_the_round():
    agenda = Agenda()
    agenda.push(1.0, Kind.ARRIVAL, "a")
    second = agenda.push(2.0, Kind.ARRIVAL, "b")
    agenda.push(3.0, Kind.ARRIVAL, "c")
    assert _taken(agenda, 1.0) == [(1.0, "ARRIVAL", "a")]
    assert agenda.next_at() == 2.0
    agenda.cancel(second)
    assert agenda.next_at() == 3.0
    agenda.push(2.5, Kind.DEADLINE, "d", key="d")
    assert agenda.next_at() == 2.5
    assert _taken(agenda, 2.7) == [(2.5, "DEADLINE", "d")]
    assert agenda.next_at() == 3.0


def test_a_timer_fires_once_a_round_in_its_kind_order():
    wake = {"at": 1.0}
    agenda = Agenda({Kind.WAKE: lambda: wake["at"]})
    agenda.push(1.0, Kind.DEADLINE, "d", key="d")
    agenda.push(1.0, Kind.ARRIVAL, "a")
    kinds = [e.kind.name for e in agenda.due(1.0)]
    assert kinds == ["ARRIVAL", "WAKE", "DEADLINE"]          # still due: not again this round
    assert agenda.next_at() == 1.0
    assert [e.kind.name for e in agenda.due(1.0)] == ["WAKE"]
    wake["at"] = None
    assert agenda.next_at() == math.inf


def test_the_job_table_keeps_live_jobs_only():
    table = JobTable()
    spec = JobSpec("j1", 1, 0.0, 1, ("true",))
    record = table.enter(spec)
    assert table.state("j1") == "pending" and len(table) == 1
    table.arrived("j1", 0.5)
    assert (record.state, record.arrived_at) == ("queued", 0.5)
    table.started("j1", 1.0, (0,), 3.0)
    assert (record.state, record.pes, record.limit) == ("started", (0,), 3.0)
    assert [r.spec.id for r in table] == ["j1"]
    assert table.remove("j1") is record
    assert table.get("j1") is None and table.state("j1") is None and len(table) == 0


def test_the_job_table_makes_a_successor_pending_when_its_predecessor_ends():
    table = JobTable()
    first = JobSpec("j1", 1, 0.0, 1, ("true",), source_id=1)
    then = JobSpec("j2", 2, 0.5, 1, ("true",), after=1)
    dropped = JobSpec("j3", 3, 0.5, 1, ("true",), after=1)
    for spec in (first, then, dropped):
        table.enter(spec)
    assert [table.state(j) for j in ("j1", "j2", "j3")] == ["pending", "waiting", "waiting"]
    table.withdraw("j3")
    table.remove("j3")
    assert table.successors_waiting()
    table.remove("j1")
    assert [r.spec.id for r in table.released(1)] == ["j2"]
    assert table.state("j2") == "pending" and not table.successors_waiting()
    assert table.released(None) == []


def test_entries_pushed_in_order_or_not_come_out_as_one_sorted_agenda():
    rng = random.Random(7)
    agenda = Agenda()
    pushed = []
    for i in range(2000):
        at = i * 0.5 if rng.random() < 0.7 else rng.uniform(0, 1000)   # mostly in order
        kind = rng.choice([Kind.ARRIVAL, Kind.DEADLINE, Kind.OWNER_END])
        key = {Kind.ARRIVAL: 0, Kind.DEADLINE: f"j{rng.randrange(50)}",
               Kind.OWNER_END: rng.randrange(8)}[kind]
        entry = agenda.push(at, kind, i, key=key)
        pushed.append((at, kind, key, i, entry))
    for *_, entry in rng.sample(pushed, 300):
        agenda.cancel(entry)
    expected = [(at, kind.name, i) for at, kind, key, i, entry in sorted(pushed)
                if entry.live and at <= 700]
    assert agenda.count(Kind.ARRIVAL) + agenda.count(Kind.DEADLINE) + \
        agenda.count(Kind.OWNER_END) == sum(e.live for *_, e in pushed)
    assert _taken(agenda, 700) == expected
    assert agenda.next_at() == min(at for at, *_, e in pushed if e.live and at > 700)

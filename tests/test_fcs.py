"""FCS as pure policy: classification (THESIS Fig 4.3) and the context switch (Fig 3.2)."""

from __future__ import annotations

import pytest

from testbed.policies.fcs import (
    CS,
    DC,
    INIT_CS,
    INIT_DC,
    F,
    FcsNode,
    FcsParams,
    Observation,
    classify,
)
from testbed.policies.node import Proc
from testbed.policies.spin import Counters

T = 0.2
P = FcsParams.for_timeslice(T)


def obs(ctime, events, c_cs=0, t_cs=0.0, c_dc=0, t_dc=0.0):
    return Observation(ctime, events, c_cs, t_cs, c_dc, t_dc)


def test_table_4_1_in_units_of_the_timeslice():
    assert FcsParams(2.0, T / 100, T, T / 9, 500 * T, 2 * T, 5 * T) == P


def test_no_reclassification_before_the_minimum_cpu_time():
    assert classify(INIT_CS, obs(4.9 * T, 1000, 1000), P) == INIT_CS
    assert classify(F, obs(1.9 * T, 1000, 1000, 10.0), P) == F


def test_a_process_that_never_communicates_ends_dc():
    state = classify(INIT_CS, obs(5 * T, 0), P)
    assert state == INIT_DC
    assert classify(state, obs(5 * T, 0), P) == DC
    assert classify(DC, obs(100 * T, 0), P) == DC


def test_a_fine_grained_balanced_process_stays_cs():
    events = 200  # a synchronization every T/40
    state = classify(INIT_CS, obs(5 * T, events, events, events * 1e-5), P)
    assert state == CS
    assert classify(CS, obs(10 * T, 400, 600, 600 * 1e-5), P) == CS


def test_a_process_waiting_long_for_a_slower_peer_is_frustrated():
    # each synchronization waits half a 20 ms iteration: W_CS = 10 ms > F_thresh = 2 ms
    assert classify(CS, obs(4 * T, 40, 90, 90 * 0.01), P) == F


def test_medium_grain_process_is_cs_only_if_coscheduling_helps():
    helped = obs(6 * T, 24, 50, 50 * 0.0005, 50, 50 * 0.0015)
    assert classify(INIT_DC, helped, P) == CS
    indifferent = obs(6 * T, 24, 50, 50 * 0.0005, 50, 50 * 0.0006)
    assert classify(INIT_DC, indifferent, P) == DC


def test_class_is_reset_after_max_ctime():
    assert classify(DC, obs(501 * T, 0), P) == INIT_CS


def _counters(c_cs, t_cs):
    return Counters(1, True, c_cs, 0, t_cs, 0.0, 0.0, False, 0, 0, 0.0, 0.0, 0.0, 0.0)


def _node():
    node = FcsNode(P)
    node.add(Proc("cs", 0, pe=0, slot=0))
    node.add(Proc("f", 0, pe=1, slot=0))
    node.add(Proc("dc0", 0, pe=0, slot=1))
    node.add(Proc("dc1", 0, pe=1, slot=1))
    for key in (("dc0", 0), ("dc1", 0)):
        node.update(key, _counters(0, 0.0), 5 * T)          # INIT_CS -> INIT_DC
        node.update(key, _counters(0, 0.0), 10 * T)         # INIT_DC -> DC
    node.update(("cs", 0), _counters(500, 0.001), 5 * T)    # -> CS
    node.update(("f", 0), _counters(30, 0.0), 5 * T)        # -> INIT_DC
    node.update(("f", 0), _counters(60, 0.5), 10 * T)       # -> F (W_CS 8 ms)
    return node


def test_classes_are_tracked_per_process():
    classes = _node().classes()
    assert classes[("cs", 0)] == [INIT_CS, CS]
    assert classes[("f", 0)] == [INIT_CS, INIT_DC, F]
    assert classes[("dc0", 0)] == [INIT_CS, INIT_DC, DC]


def test_cs_runs_alone_and_dc_fills_the_gap_while_f_is_blocked():
    node = _node()
    node.heartbeat(frozenset({"cs", "f"}), 0)
    assert node.decide() == {("cs", 0): True, ("f", 0): True}
    node.set_blocked(("f", 0), True)
    assert node.decide() == {("cs", 0): True, ("f", 0): True, ("dc1", 0): False}
    node.set_blocked(("f", 0), False)
    assert ("dc1", 0) not in node.decide()


def test_dc_slot_runs_dc_processes_not_coscheduled():
    node = _node()
    node.heartbeat(frozenset({"dc0", "dc1"}), 1)
    assert node.decide() == {("dc0", 0): False, ("dc1", 0): False}


def _pe_with_every_class():
    """PE 0 holds one CS, one F and two DC processes, in rows 0, 1, 2 and 3."""
    node = FcsNode(P)
    for job, slot in (("cs", 0), ("f", 1), ("dc", 2), ("dc2", 3)):
        node.add(Proc(job, 0, pe=0, slot=slot))
    for key in (("dc", 0), ("dc2", 0)):
        node.update(key, _counters(0, 0.0), 5 * T)
        node.update(key, _counters(0, 0.0), 10 * T)
    node.update(("cs", 0), _counters(500, 0.001), 5 * T)
    node.update(("f", 0), _counters(30, 0.0), 5 * T)
    node.update(("f", 0), _counters(60, 0.5), 10 * T)
    assert {k[0]: v[-1] for k, v in node.classes().items()} == {
        "cs": CS, "f": F, "dc": DC, "dc2": DC}
    return node


def test_a_dc_slot_falls_back_to_f_then_cs_only_when_no_dc_process_is_ready():
    node = _pe_with_every_class()
    node.heartbeat(frozenset({"dc"}), 2)
    both_dc = {("dc", 0): False, ("dc2", 0): False}
    assert node.decide() == both_dc
    node.set_blocked(("dc", 0), True)
    assert node.decide() == both_dc                       # dc2 is still ready
    node.set_blocked(("dc2", 0), True)
    assert node.decide() == {**both_dc, ("f", 0): False}  # no DC ready: F next
    node.set_blocked(("f", 0), True)
    assert node.decide() == {**both_dc, ("f", 0): False, ("cs", 0): False}
    node.set_blocked(("dc2", 0), False)
    assert node.decide() == both_dc                       # a DC process is ready again


def test_an_f_gap_is_filled_by_dc_then_by_cs_when_dc_is_blocked():
    node = _pe_with_every_class()
    node.heartbeat(frozenset({"f"}), 1)
    assert node.decide() == {("f", 0): True}
    node.set_blocked(("f", 0), True)
    assert node.decide() == {("f", 0): True, ("dc", 0): False, ("dc2", 0): False}
    node.set_blocked(("dc", 0), True)
    node.set_blocked(("dc2", 0), True)
    assert node.decide() == {("f", 0): True, ("dc", 0): False, ("dc2", 0): False,
                             ("cs", 0): False}


def test_waits_spin_by_class():
    node = _pe_with_every_class()
    node.add(Proc("new", 0, pe=1, slot=0))
    spins = node.spins
    assert node.spin_of(("cs", 0), True) == node.spin_of(("new", 0), True) == spins.coscheduled
    assert spins.coscheduled.mode == "forever"
    assert node.spin_of(("f", 0), True) == node.spin_of(("f", 0), False) == spins.frustrated
    assert spins.frustrated.mode == "adaptive"
    assert 0 < spins.frustrated.min_s <= spins.frustrated.max_s
    assert node.spin_of(("dc", 0), False) == spins.short and spins.short.mode == "fixed"
    assert node.spin_of(("cs", 0), False) == spins.short  # filling a gap: do not hog the CPU
    assert node.spin_of(("gone", 0), True) is None


def test_an_empty_slot_lets_dc_and_f_continue_but_not_cs():
    node = _node()
    node.remove("dc0")
    node.remove("dc1")
    node.heartbeat(frozenset(), 1)
    assert node.decide() == {("f", 0): False}


@pytest.mark.parametrize("cls", [INIT_CS, CS])
def test_new_and_cs_processes_are_coscheduled(cls):
    node = FcsNode(P)
    node.add(Proc("a", 0, pe=0, slot=0))
    node.heartbeat(frozenset({"a"}), 0)
    if cls == CS:
        node.update(("a", 0), _counters(500, 0.0), 5 * T)
    assert node.decide() == {("a", 0): True}

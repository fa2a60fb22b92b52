"""benchmarks.overheads.wake_trace's reading of `perf script` text: the steps of each wait and where
the
waiter ran, on given lines (no perf, no processes)."""

from benchmarks.overheads.wake_trace import parse, summary, waits

SENDER, WAITER = "200", "100"


def _line(comm: str, pid: str, cpu: int, t_s: float, event: str, fields: str) -> str:
    return f"{comm:>16} {pid:>5} [{cpu:03d}] {t_s:.6f}: {event:>40}: {fields}"


def _wait(t: float, waiter_cpu: int, prev: str, reads: int) -> list[str]:
    """One wait: the sender's sleep ends at t, it wakes the waiter 10 us later, the waiter
    runs 5 us after that on ``waiter_cpu`` (after ``prev``), and reads its CPU clock
    ``reads`` times, 3 us apart, from 20 us after the switch-in."""
    lines = [
        _line("python", SENDER, 0, t, "syscalls:sys_exit_clock_nanosleep", "0x0"),
        _line("python", SENDER, 0, t + 10e-6, "sched:sched_waking",
              f"comm=python pid={WAITER} prio=120 target_cpu={waiter_cpu:03d}"),
        _line(prev, "0" if prev == "swapper/1" else "7", waiter_cpu, t + 15e-6,
              "sched:sched_switch", f"prev_comm={prev} prev_pid=7 prev_prio=120 prev_state=S "
              f"==> next_comm=python next_pid={WAITER} next_prio=120")]
    for k in range(reads):
        lines.append(_line("python", WAITER, waiter_cpu, t + (35 + 3 * k) * 1e-6,
                           "syscalls:sys_enter_clock_gettime", "which_clock: 0x00000002"))
    return lines


def test_steps_and_placement_of_each_wait():
    text = ["# a header line perf writes",
            _line("hydra_pmi_proxy", "300", 1, 0.5, "sched:sched_waking",
                  f"comm=python pid={WAITER} prio=120 target_cpu=001"),
            *_wait(1.0, 0, "python", 2), *_wait(2.0, 1, "swapper/1", 2)]
    rows = waits(parse(text), reads=2)
    assert len(rows) == 2
    first, second = rows
    assert round(first["send"], 3) == 10.0 and round(first["to_run"], 3) == 5.0
    assert round(first["to_python"], 3) == 23.0 and round(first["total"], 3) == 38.0
    assert first["same_cpu"] and not first["cpu_was_idle"]
    assert not second["same_cpu"] and second["cpu_was_idle"]


def test_reads_picks_which_clock_read_ends_the_wait():
    rows = waits(parse(_wait(1.0, 0, "python", 2)), reads=1)
    assert [round(r["to_python"], 3) for r in rows] == [20.0]


def test_a_wait_missing_its_end_is_left_out():
    text = _wait(1.0, 0, "python", 1)[:-1] + _wait(2.0, 0, "python", 1)
    assert len(waits(parse(text), reads=1)) == 1


def test_summary_groups_by_placement():
    rows = waits(parse(_wait(1.0, 0, "python", 1) + _wait(2.0, 1, "swapper/1", 1)
                       + _wait(3.0, 1, "swapper/1", 1)), reads=1)
    found = summary(rows)
    assert found["all"]["waits"] == 3
    assert found["other CPU, was idle"]["waits"] == 2
    assert found["same CPU, was busy"]["waits"] == 1
    assert round(found["all"]["total"]["p50"], 3) == 35.0


def test_no_sender_gives_no_waits():
    assert waits(parse(["nothing here"]), reads=1) == []

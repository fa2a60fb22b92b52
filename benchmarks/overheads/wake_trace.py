"""Where a blocked rank's wake-up goes, traced with the kernel's scheduler events.

Runs the wake-up cases of ``benchmarks.overheads.shim_cost`` (the shim's blocked receive, and the
operating system's floors: a pipe read and a futex wait; short 2-10 ms and long 20-50 ms
waits) under ``perf record`` (root, or a ``perf_event_paranoid`` that allows system-wide
tracepoints), and splits each wait's wake-up into its steps:

* ``send``: from the sender's return from its sleep (``clock_nanosleep``) to the kernel's
  ``sched_waking`` of the waiter: the sender's stamp, its send (for the shim: mpi4py's
  ``Send``, the shim, MPICH's ``Isend`` and the doorbell's ``FUTEX_WAKE``; for the floors a
  pipe write or a futex wake);
* ``to run``: from ``sched_waking`` to the waiter's switch-in (the scheduler's placement and
  the wait for that CPU: a waker still running there, or an idle virtual CPU to come up);
* ``to Python``: from the switch-in to the waiter's first read of its CPU clock back in
  Python (``time.process_time``; the shim's own read in ``notify`` comes first, so its second
  is taken);
* ``total``: the sum, the wake-up as the kernel sees it (``benchmarks.overheads.shim_cost`` times it
from
  the sender's stamp, a few microseconds after its sleep ends, to the waiter's stamp).

Each wait is also put in a group by where the waiter ran: on the waker's CPU or the other,
and whether that CPU was idle before (an idle virtual CPU must be woken by an interrupt).
Rounds run the cases interleaved, the order rotated a round; the figures are percentiles over
every wait of a case (the rounds pooled), descriptive, with no interval: the page says where
the time goes, ``benchmarks.overheads.shim_cost`` says how the cases compare.

Prints one JSON object; ``--markdown PAGE`` writes the page.  The trace files are written to
a temporary directory that is removed.

Usage: ``python -m benchmarks.overheads.wake_trace [--rounds 3] [--waits 300] [--markdown PAGE]``
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import Session, emit, host, markdown_table, page_head, parser

EVENTS = ("sched:sched_waking,sched:sched_switch,syscalls:sys_exit_clock_nanosleep,"
          "syscalls:sys_enter_clock_gettime")


@dataclass(frozen=True)
class Case:
    """One traced case: ``name`` in ``benchmarks.overheads.shim_cost.wakeup_cases`` (which gives the
    long waits a third as many), its CPU-clock reads between the switch-in and Python
    (``reads``), and the shim's safety net in microseconds (None: the shim's own)."""

    label: str
    name: str
    reads: int
    net_us: int | None = None


CASES = (Case("shim, 2-10 ms waits", "shim_spin_block_100us", 2),
         Case("pipe read, 2-10 ms", "os_pipe", 1),
         Case("futex, 2-10 ms", "os_futex", 1),
         Case("shim, 20-50 ms waits", "shim_long_waits_20_50ms", 2),
         Case("shim, 20-50 ms waits, a 1 s safety net", "shim_long_waits_20_50ms", 2,
              1_000_000),
         Case("pipe read, 20-50 ms", "os_pipe_20_50ms", 1),
         Case("futex, 20-50 ms", "os_futex_20_50ms", 1))

_LINE = re.compile(r"^\s*(.+?)\s+(-?\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")


@dataclass(frozen=True)
class Event:
    """One line of ``perf script``: the task (``comm``, ``pid``), its CPU, the time (us) and
    the event's name and fields."""

    comm: str
    pid: str
    cpu: int
    t_us: float
    name: str
    fields: str


def parse(lines: Iterable[str]) -> list[Event]:
    """The events of ``perf script`` output (lines it cannot read are skipped: its header
    and the events of other formats)."""
    found = []
    for line in lines:
        m = _LINE.match(line)
        if m:
            found.append(Event(m[1], m[2], int(m[3]), float(m[4]) * 1e6, m[5], m[6]))
    return found


def _pid_field(fields: str, name: str) -> str | None:
    m = re.search(rf"\b{name}=(\d+)", fields)
    return m[1] if m else None


def waits(events: list[Event], reads: int) -> list[dict[str, Any]]:
    """Each wait of a traced case: its steps (us) and where the waiter ran.  The sender is the
    Python task that returns from ``clock_nanosleep`` most often; the waiter the Python task
    it wakes most often.  A wait starts at the sender's return from its sleep and ends at the
    waiter's ``reads``-th CPU-clock read after its switch-in; a wait whose steps are not all
    seen (the first, or one the trace lost) is left out."""
    sleeps = Counter(e.pid for e in events
                     if e.name == "syscalls:sys_exit_clock_nanosleep"
                     and e.comm.startswith("python"))
    if not sleeps:
        return []
    sender = sleeps.most_common(1)[0][0]
    woken = Counter(_pid_field(e.fields, "pid") for e in events
                    if e.name == "sched:sched_waking" and e.pid == sender
                    and "comm=python" in e.fields)
    if not woken:
        return []
    waiter = woken.most_common(1)[0][0]
    rows: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for e in events:
        if e.pid == sender and e.name == "syscalls:sys_exit_clock_nanosleep":
            cur = {"sleep_end": e.t_us}
        elif cur is None:
            continue
        elif ("waking" not in cur and e.name == "sched:sched_waking" and e.pid == sender
              and _pid_field(e.fields, "pid") == waiter):
            cur.update(waking=e.t_us, waker_cpu=e.cpu)
        elif ("waking" in cur and "switch" not in cur and e.name == "sched:sched_switch"
              and _pid_field(e.fields, "next_pid") == waiter):
            idle = re.search(r"prev_comm=swapper", e.fields) is not None
            cur.update(switch=e.t_us, cpu=e.cpu, idle=idle)
        elif ("switch" in cur and e.pid == waiter
              and e.name == "syscalls:sys_enter_clock_gettime"):
            cur["reads"] = cur.get("reads", 0) + 1
            if cur["reads"] == reads:
                rows.append({"send": cur["waking"] - cur["sleep_end"],
                             "to_run": cur["switch"] - cur["waking"],
                             "to_python": e.t_us - cur["switch"],
                             "total": e.t_us - cur["sleep_end"],
                             "same_cpu": cur["cpu"] == cur["waker_cpu"],
                             "cpu_was_idle": cur["idle"]})
                cur = None
    return rows


STEPS = ("send", "to_run", "to_python", "total")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Percentiles (p50, p90, p99; us) of each step over ``rows``, for all of them and for each
    placement group (``same CPU`` or ``other CPU``, ``idle`` or ``busy`` before), with the
    number of waits in each."""
    groups: dict[str, list[dict[str, Any]]] = {"all": rows}
    for r in rows:
        where = ("same CPU" if r["same_cpu"] else "other CPU") + \
                (", was idle" if r["cpu_was_idle"] else ", was busy")
        groups.setdefault(where, []).append(r)
    return {name: {"waits": len(rs), **{
        step: {q: _percentile([r[step] for r in rs], p)
               for q, p in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))}
        for step in STEPS}} for name, rs in groups.items() if rs}


def trace(case: Case, waits_count: int, scratch: Path) -> list[dict[str, Any]]:
    """Run ``case`` once with ``waits_count`` short waits under ``perf record``: its waits
    (``waits``)."""
    data = scratch / "perf.data"
    run = [sys.executable, "-m", "benchmarks.overheads.wake_trace", "--case", case.name,
           str(waits_count),
           str(case.net_us or 0)]
    subprocess.run(["perf", "record", "-q", "-e", EVENTS, "-a", "-o", str(data), "--", *run],
                   check=True, capture_output=True)
    text = subprocess.run(["perf", "script", "-i", str(data)], check=True,
                          capture_output=True, text=True).stdout
    data.unlink()
    return waits(parse(text.splitlines()), case.reads)


def run_case(name: str, count: int, net_us: int) -> None:
    """Child side: run wake-up case ``name`` of ``benchmarks.overheads.shim_cost`` with ``count``
    short
    waits (a third as many long ones; the shim's safety net ``net_us`` microseconds, 0: its
    own)."""
    from benchmarks.overheads import shim_cost
    from testbed.emulation.mpi_info import detect_mpi
    from testbed.emulation.shim import library_path

    preload = {"LD_PRELOAD": str(library_path(detect_mpi()))}
    if net_us:
        preload["TESTBED_SAFETY_NET_US"] = str(net_us)
    shim_cost.wakeup_cases(count, preload, True)[name]()


def measure(rounds: int, waits_count: int) -> dict[str, Any]:
    """Every case once a round for ``rounds``, interleaved and rotated: each case's
    ``summary`` over its waits of every round."""
    found: dict[str, list[dict[str, Any]]] = {c.label: [] for c in CASES}
    with tempfile.TemporaryDirectory(prefix="testbed-wake-trace-") as scratch:
        for r in range(rounds):
            for case in CASES[r % len(CASES):] + CASES[:r % len(CASES)]:
                found[case.label] += trace(case, waits_count, Path(scratch))
    return {"rounds": rounds, "waits": waits_count,
            "cases": {label: summary(rows) for label, rows in found.items()}}


def markdown(result: dict[str, Any], command: str, measured: str) -> str:
    """The page: a table a case, its placement groups as rows, p50/p99 of each step."""
    lines = page_head("Where a blocked rank's wake-up goes", "benchmarks.overheads.wake_trace",
                      command,
                      result["host"], measured)
    lines += ["", f"{result['rounds']} rounds, the cases interleaved; {result['waits']} short "
              "waits a round (a third as many long ones).  Steps of each wait, from the "
              "kernel's scheduler events: send (the sender's sleep ends to the waiter's "
              "waking), to run (waking to switch-in), to Python (switch-in to back in "
              "Python), total; p50 / p99 in us over every wait of the rounds, by where the "
              "waiter ran (the waker's CPU or the other; idle or busy before).  Descriptive: "
              "no interval (see `benchmarks.overheads.shim_cost` for the comparison)."]
    for label, groups in result["cases"].items():
        rows = [[name, g["waits"], *(f"{g[s]['p50']:.0f} / {g[s]['p99']:.0f}" for s in STEPS)]
                for name, g in groups.items()]
        lines += ["", f"## {label}", "",
                  *markdown_table(["where", "waits", "send", "to run", "to Python", "total"],
                                  rows)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Trace the cases and print the figures as JSON; with ``--markdown`` write the page."""
    p = parser("benchmarks.overheads.wake_trace", __doc__, json_help=None, out_help=None, raw=True)
    p.add_argument("--rounds", type=int, default=3, help="rounds of the cases (default 3)")
    p.add_argument("--waits", type=int, default=300, help="short waits a round (default 300)")
    p.add_argument("--case", nargs=3, help="run one case (internal)")
    args = p.parse_args(argv)
    if args.case:
        run_case(args.case[0], int(args.case[1]), int(args.case[2]))
        return 0
    if shutil.which("perf") is None:
        print("wake_trace: needs `perf` (Debian: apt-get install linux-perf)", file=sys.stderr)
        return 2
    session = Session.start("benchmarks.overheads.wake_trace", argv, None, None)
    try:
        result = {"benchmark": "wake_trace", "host": host(), **measure(args.rounds, args.waits)}
    except subprocess.CalledProcessError as e:
        print(f"wake_trace: {' '.join(e.cmd[:2])} failed: {e.stderr.strip()[-300:]}",
              file=sys.stderr)
        return 2
    result["seconds"] = round(time.time() - session.started, 1)
    emit([result], True, indent=2)
    session.page(args.markdown, lambda: markdown(result, session.command, session.measured()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

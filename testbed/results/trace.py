"""A Chrome-trace JSON file (opens in ui.perfetto.dev or chrome://tracing) of a run.

One track per PE (thread ``PE k`` of process ``machine``), a slice for every interval a job ran
on that PE, instants for FCS class changes and owners' interruptions (COW), and a slice
``owner`` for each workstation owner's visit.  Suspended time shows as gaps.  Times are
microseconds of the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from testbed.events import read_events
from testbed.results.timeline import interruptions, intervals, owner_visits

MACHINE_PID = 1


def build_trace(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The trace as a JSON-ready dict."""
    start = next(ev for ev in events if ev["event"] == "run_start")
    pes = start["config"]["machine"]["pes"]
    trace: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": MACHINE_PID, "tid": 0,
         "args": {"name": f"machine ({start['config']['scheduler']})"}}]
    trace += [{"ph": "M", "name": "thread_name", "pid": MACHINE_PID, "tid": pe,
               "args": {"name": f"PE {pe}"}} for pe in range(pes)]
    for span in intervals(events):
        if not span.running:
            continue
        for pe in span.pes:
            trace.append({"ph": "X", "name": span.job, "cat": "job", "pid": MACHINE_PID,
                          "tid": pe, "ts": round(span.start * 1e6), "dur":
                          max(1, round((span.end - span.start) * 1e6)),
                          "args": {"row": span.slot}})
    placed = {ev["job"]: ev["pes"] for ev in events if ev["event"] == "start"}
    for ev in events:
        if ev["event"] == "class" and ev["job"] in placed:
            trace.append({"ph": "i", "s": "t", "name": f"{ev['job']}.{ev['rank']} -> {ev['new']}",
                          "cat": "class", "pid": MACHINE_PID, "tid": placed[ev["job"]][ev["rank"]],
                          "ts": round(ev["t"] * 1e6), "args": ev["stats"]})
    for pe, t0, t1 in owner_visits(events):
        trace.append({"ph": "X", "name": "owner", "cat": "owner", "pid": MACHINE_PID, "tid": pe,
                      "ts": round(t0 * 1e6), "dur": max(1, round((t1 - t0) * 1e6))})
    for t, pes_cut in interruptions(events):
        trace += [{"ph": "i", "s": "t", "name": "interrupted", "cat": "owner",
                   "pid": MACHINE_PID, "tid": pe, "ts": round(t * 1e6)} for pe in pes_cut]
    return {"traceEvents": trace, "displayTimeUnit": "ms"}


def write_trace(run_dir: Path) -> Path:
    """Write ``trace.json`` into the run directory."""
    path = run_dir / "trace.json"
    path.write_text(json.dumps(build_trace(read_events(run_dir / "events.jsonl"))))
    return path

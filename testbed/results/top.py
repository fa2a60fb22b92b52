"""The live view (like the T3D "gangster" display): the matrix, the current row, every job's
state and a progress bar, read from a run's ``events.jsonl`` while the run goes on."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, TextIO

from testbed.events import read_events
from testbed.results.timeline import intervals, launched_stopped, matrix_rows

FAILED = {"failed", "timeout", "killed"}
BAR = 30


def job_states(events: list[dict[str, Any]]) -> dict[str, str]:
    """Each job's state: new, waiting, running, stopped, done or failed.  A job launched into
    a row that is not current starts stopped: its first flip is a ``resume``."""
    stopped = launched_stopped(events)
    states: dict[str, str] = {}
    for ev in events:
        kind = ev["event"]
        if kind == "workload":
            states = {job["job"]: "new" for job in ev["jobs"]}
        elif kind == "arrival":
            states[ev["job"]] = "waiting"
        elif kind == "start":
            states[ev["job"]] = "stopped" if ev["job"] in stopped else "running"
        elif kind == "resume":
            states[ev["job"]] = "running"
        elif kind == "suspend":
            states[ev["job"]] = "stopped"
        elif kind == "finish":
            states[ev["job"]] = "failed" if ev["status"] in FAILED else "done"
    return states


def gangster(events: list[dict[str, Any]]) -> list[str]:
    """T3D's job summary (Fig 8) for a t3d run: class, job, PEs, state letter and execution
    time (MM:SS) of every job not ended; [] for other schedulers."""
    letters: dict[str, str] = {}
    classes: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for ev in events:
        kind = ev["event"]
        if kind == "states":
            letters.update(ev["changed"])
        elif kind == "workload":
            for job in ev["jobs"]:
                classes[job["job"]] = job.get("class") or "-"
                sizes[job["job"]] = job["pes"]
        elif kind == "job_class":
            classes[ev["job"]] = ev["new"]
        elif kind == "finish":
            letters.pop(ev["job"], None)
    if not any(ev["event"] == "states" for ev in events):
        return []
    ran: dict[str, float] = {}
    for span in intervals(events):
        if span.running:
            ran[span.job] = ran.get(span.job, 0.0) + span.end - span.start
    lines = ["CLAS         JOB    #PE  ST  MM:SS"]
    for job, letter in letters.items():
        seconds = int(ran.get(job, 0.0))
        lines.append(f"{classes.get(job, '-')[:12]:<12} {job:<6} {sizes.get(job, 0):>3}  "
                     f"{letter:>2}  {seconds // 60:02d}:{seconds % 60:02d}")
    return lines


def render(events: list[dict[str, Any]], now: float | None = None) -> str:
    """One frame of the view as text."""
    start = next((ev for ev in events if ev["event"] == "run_start"), None)
    if start is None:
        return "waiting for the run to start...\n"
    config = start["config"]
    mpl, pes = matrix_rows(events), config["machine"]["pes"]
    states = job_states(events)
    ended = next((ev for ev in events if ev["event"] == "run_end"), None)
    elapsed = ended["t"] if ended else (now if now is not None else events[-1]["t"])
    finished = sum(s in ("done", "failed") for s in states.values())
    filled = round(BAR * finished / len(states)) if states else BAR
    lines = [f"{config['scheduler']}  MPL {config['mpl'] or 'unbounded'}  {pes} PEs  "
             f"[{'#' * filled}{'-' * (BAR - filled)}] {finished}/{len(states)} jobs  "
             f"{elapsed:.1f} s" + (f"  ({ended['status']})" if ended else "")]
    rows = [["."] * pes for _ in range(mpl)]
    cells: dict[str, tuple[int, list[int]]] = {}
    for ev in events:
        if ev["event"] == "start" or (ev["event"] == "migrate" and not ev["error"]):
            cells[ev["job"]] = (ev["slot"], ev["pes"])
    for job, (slot, job_pes) in cells.items():
        if states.get(job) in ("running", "stopped"):
            for pe in job_pes:
                rows[slot][pe] = job
    current = next((ev["slot"] for ev in reversed(events) if ev["event"] == "switch"), None)
    width = max([len(c) for row in rows for c in row] + [4])
    lines.append("row  " + " ".join(f"PE{pe}".rjust(width) for pe in range(pes)))
    for slot, row in enumerate(rows):
        marker = "*" if slot == current else " "
        lines.append(f"{slot:>2}{marker}  " + " ".join(c.rjust(width) for c in row))
    by_state: dict[str, list[str]] = {}
    for job, state in states.items():
        by_state.setdefault(state, []).append(job)
    for state in ("running", "stopped", "waiting", "new", "done", "failed"):
        if by_state.get(state):
            lines.append(f"{state:>8}: {' '.join(by_state[state])}")
    lines += gangster(events)
    return "\n".join(lines) + "\n"


def follow(run_dir: Path, out: TextIO = sys.stdout, interval: float = 0.5,
           once: bool = False) -> None:
    """Redraw the view every ``interval`` seconds until the run ends (or once)."""
    clear = "\x1b[H\x1b[2J" if out.isatty() else ""
    log = run_dir / "events.jsonl"
    started = time.monotonic()
    while True:
        events = read_events(log) if log.exists() else []
        first = next((ev for ev in events if ev["event"] == "run_start"), None)
        now = time.time() - first["wall_time"] if first else time.monotonic() - started
        out.write(clear + render(events, now))
        out.flush()
        if once or any(ev["event"] == "run_end" for ev in events):
            return
        time.sleep(interval)

"""Figures of a run (matplotlib, PNG and SVG), after evalys: a Gantt chart of the PEs over
time (the Ousterhout matrix in time, THESIS Figs 2.1-2.3), runtime against work (Fig 5.5)
and wait against arrival (Fig 5.6).  For a compare directory, the schedulers side by side."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend must be chosen first)
from matplotlib.collections import PolyCollection  # noqa: E402

from testbed.results.metrics import JobRow, job_rows  # noqa: E402
from testbed.results.timeline import (  # noqa: E402
    interruptions,
    intervals,
    matrix_rows,
    owner_visits,
)

LABELLED_JOBS = 150
NAMED_PES = 32


COLOURS = plt.get_cmap("tab10").colors


def _colour(job: str) -> Any:
    digits = job.lstrip("j")
    return COLOURS[(int(digits) if digits.isdigit() else zlib.crc32(job.encode())) % len(COLOURS)]


def _lanes(pes: tuple[int, ...], merge: bool) -> list[tuple[int, int]]:
    """``pes`` as (first, count) lanes to draw: one per PE, or with ``merge`` (one matrix row
    on many PEs) runs of consecutive PEs drawn as one box."""
    if not merge:
        return [(pe, 1) for pe in sorted(pes)]
    runs: list[tuple[int, int]] = []
    for pe in sorted(pes):
        if runs and runs[-1][0] + runs[-1][1] == pe:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((pe, 1))
    return runs


def gantt(ax: Any, events: list[dict[str, Any]], title: str) -> None:
    """Draw each PE as a lane over time, PE 0 on top, and each matrix row as a sub-lane of
    it (row 0 on top, as T3D's gangster and evalys show them): a job is a box in its row's
    sub-lane of every PE it runs on, solid while running, faint and hatched while stopped.
    Workstation owners' visits (COW) are black cross-hatched boxes over their PE, and a run
    they interrupted ends in a red bar (the job's next run is its restart).  Boxes are drawn
    as collections, so that a simulated run of thousands of jobs draws in seconds (with one
    row, consecutive PEs share a box, cut by the lanes' lines); jobs are labelled and PEs
    named only while that stays legible."""
    start = next(ev for ev in events if ev["event"] == "run_start")
    mpl, pes = matrix_rows(events), start["config"]["machine"]["pes"]
    merge = mpl == 1        # a row is the whole lane: consecutive PEs can share a box
    gap = 0.08 / mpl
    spans = intervals(events)
    for running in (True, False):
        boxes, colours = [], []
        for span in spans:
            if span.running != running:
                continue
            for first, count in _lanes(span.pes, merge):
                y0 = first + span.slot / mpl + gap
                y1 = first + count - 1 + (span.slot + 1) / mpl - gap
                boxes.append([(span.start, y0), (span.end, y0), (span.end, y1), (span.start, y1)])
                colours.append(_colour(span.job))
        ax.add_collection(PolyCollection(boxes, facecolors=colours, edgecolors="none",
                                         alpha=1.0 if running else 0.3,
                                         hatch=None if running else "//"))
    visits = owner_visits(events)
    if visits:
        ax.add_collection(PolyCollection(
            [[(t0, pe), (t1, pe), (t1, pe + 1), (t0, pe + 1)] for pe, t0, t1 in visits],
            facecolors="none", edgecolors="black", linewidths=0.8, hatch="xx"))
    for t, cut in interruptions(events):
        for first, count in _lanes(cut, True):
            ax.vlines(t, first, first + count, colors="red", linewidths=2)
    starts = {(ev["job"], ev["t"]) for ev in events if ev["event"] == "start"}
    runs = [s for s in spans if (s.job, s.start) in starts]
    if len(runs) <= LABELLED_JOBS:
        for span in runs:
            for pe in sorted(span.pes) if pes <= NAMED_PES else sorted(span.pes)[:1]:
                ax.text(span.start, pe + (span.slot + 0.5) / mpl, f" {span.job}",
                        fontsize=6, va="center", clip_on=True)
    ax.set_xlim(0, max((s.end for s in spans), default=1.0) or 1.0)
    ax.set_ylim(pes, 0)
    if pes <= NAMED_PES:
        ax.set_yticks([pe + 0.5 for pe in range(pes)], [f"PE {pe}" for pe in range(pes)])
        ax.hlines(range(1, pes), 0, 1, transform=ax.get_yaxis_transform(), colors="white",
                  linewidths=1.5, zorder=3)
        ax.hlines(range(1, pes), 0, 1, transform=ax.get_yaxis_transform(), colors="grey",
                  linewidths=0.6, zorder=3)
        if mpl > 1 and pes * mpl <= 16:
            ax.set_yticks([pe + (row + 0.5) / mpl for pe in range(pes) for row in range(mpl)],
                          [f"row {row}" for _ in range(pes) for row in range(mpl)], minor=True)
            ax.tick_params(axis="y", which="minor", labelsize=6, length=0, pad=34)
    ax.set_xlabel("time (s)")
    ax.set_title(title)


def runtime_vs_work(ax: Any, rows: list[JobRow], label: str) -> None:
    """Each finished job's runtime against its work, with the line runtime = work."""
    rows = [r for r in rows if r.runtime is not None and r.work]
    ax.scatter([r.work for r in rows], [r.runtime for r in rows], s=12, label=label)
    top = max([r.runtime for r in rows] + [r.work for r in rows] + [1e-3])
    ax.plot([0, top], [0, top], color="grey", linewidth=0.8)
    ax.set_xlabel("work (s)")
    ax.set_ylabel("runtime (s)")


def wait_vs_arrival(ax: Any, rows: list[JobRow], label: str) -> None:
    """Each started job's wait against its arrival time."""
    rows = [r for r in rows if r.wait is not None]
    ax.scatter([r.arrival for r in rows], [r.wait for r in rows], s=12, label=label)
    ax.set_xlabel("arrival (s)")
    ax.set_ylabel("wait (s)")


def _save(fig: Any, base: Path) -> list[Path]:
    fig.tight_layout()
    paths = [base.with_suffix(".png"), base.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, dpi=120)
    plt.close(fig)
    return paths


def gantt_figure(runs: dict[str, list[dict[str, Any]]]) -> Any:
    """The Gantt charts of ``runs`` (events by name), one above the other on one time axis
    as long as the longest run."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(10, 2.2 + 1.6 * len(runs)),
                             squeeze=False, sharex=True)
    ends = []
    for ax, (name, events) in zip(axes[:, 0], runs.items(), strict=True):
        gantt(ax, events, name)
        ends.append(ax.get_xlim()[1])
    axes[0, 0].set_xlim(0, max(ends))     # the axes are shared: the longest run's, not the last
    return fig


def write_plots(runs: dict[str, list[dict[str, Any]]], out: Path) -> list[Path]:
    """Write gantt, runtime_vs_work and wait_vs_arrival (PNG and SVG) for one run or, with
    several, the schedulers side by side; return the files."""
    names = list(runs)
    written = _save(gantt_figure(runs), out / "gantt")
    rows = {name: job_rows(events) for name, events in runs.items()}
    for base, draw, title in (("runtime_vs_work", runtime_vs_work, "Runtime vs work"),
                              ("wait_vs_arrival", wait_vs_arrival, "Wait vs arrival")):
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for name in names:
            draw(ax, rows[name], name)
        ax.set_title(title)
        if len(names) > 1:
            ax.legend()
        ax.grid(alpha=0.3)
        written += _save(fig, out / base)
    return written

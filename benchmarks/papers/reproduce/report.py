"""The reproduction's report: a Markdown page of the claims and their verdicts (with the plots
beside it) and the same rows as JSON, assembled from the papers' parts (``parts``).
``assemble``, ``markdown`` and ``document`` are pure; ``head`` gathers what a header records
about the machine and the code."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import REPO, page_head, write_page, write_whole
from benchmarks.papers.reproduce.claims import CHECKS, VERDICTS, Row
from benchmarks.papers.reproduce.parts import Part

ROOT = REPO


def head(command: str, size: str, seconds: float, out: Path | None = None) -> dict[str, Any]:
    """What the header records: host, cores, when it started, the command, the git commit (and
    whether tracked files had changes, apart from the report's own directory ``out``, which
    the run itself rewrites), the size of the run and its wall time (s)."""
    uname = os.uname()
    return {"host": f"{uname.nodename} ({uname.sysname} {uname.release}, {uname.machine})",
            "cores": len(os.sched_getaffinity(0)),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "command": command,
            "commit": _commit(out), "size": size, "seconds": round(seconds, 1)}


def _commit(out: Path | None) -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown (not a git checkout)"
    mine = out.resolve() if out is not None else None
    inside = mine is not None and mine.is_relative_to(ROOT.resolve())
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                  *([f":(exclude){mine.relative_to(ROOT.resolve())}"] if inside else []))
    return commit + (" with uncommitted changes" if changed else "")


def assemble(parts: Sequence[Part], command: str) -> tuple[list[Row], dict[str, Any]]:
    """The report's rows (every part's, in the parts' order) and header: written by
    ``command``; the host, cores and commit the parts share (else "several", each part's
    in ``papers``); the earliest start; the size; the parts' wall times summed (s); each
    part's header by paper (``papers``); and whether the parts came from different
    invocations (``assembled``)."""
    headers = [part.header for part in parts]

    def shared(field: str, several: str) -> Any:
        values = {str(h.get(field)) for h in headers}
        return headers[0].get(field) if len(values) == 1 else several

    header = {"command": command,
              "host": shared("host", "several hosts (see each paper)"),
              "cores": shared("cores", "several"),
              "date": min((h.get("date", "") for h in headers), default=""),
              "commit": shared("commit", "several commits (see each paper)"),
              "size": shared("size", "several"),
              "seconds": round(sum(h.get("seconds", 0.0) for h in headers), 1),
              "papers": {part.name: part.header for part in parts},
              "assembled": len({(h.get("host"), h.get("began")) for h in headers}) > 1}
    return [row for part in parts for row in part.rows], header


def _paper_line(name: str, h: dict[str, Any]) -> str:
    load = h.get("load") or {}
    disturbed = f"; disturbed: {load['why']}" if load.get("disturbed") else ""
    return (f"  - {name}: started {h.get('date', '?')} on {h.get('host', '?')}, commit "
            f"{h.get('commit', '?')}, {h.get('seconds', 0.0):.0f} s{disturbed}")


def counts(rows: Sequence[Row]) -> dict[str, int]:
    """How many rows have each verdict."""
    return {v: sum(1 for r in rows if r.finding.decision.verdict == v) for v in VERDICTS}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(rows: Sequence[Row], header: dict[str, Any]) -> str:
    """The report page: the header, the tally of verdicts, one table row per claim, then per
    paper what ran and the plots."""
    tally = counts(rows)
    minutes = header["seconds"] / 60
    lines = [
        *page_head("The papers reproduced", "benchmarks.papers.reproduce", header["command"],
                   f"{header['host']}, {header['cores']} cores", header["date"]),
        f"- git commit: {header['commit']}",
        f"- size: {header['size']}; wall time {header['seconds']:.0f} s ({minutes:.1f} min)",
    ]
    each = header.get("papers") or {}
    if each:
        lines.append("- each paper (assembled from parts run at different times):"
                     if header.get("assembled") else "- each paper:")
        lines += [_paper_line(name, h) for name, h in each.items()]
    lines += [
        "",
        "Verdicts: " + ", ".join(f"{tally[v]} {v}" for v in VERDICTS) + ". A claim *agrees* "
        "only when our interval lies where the paper puts the figure, *disagrees* only when "
        "it lies where the opposite claim puts it, and otherwise we *cannot tell*; a "
        "difference between two samples also needs the rank test (p < 0.05).  Intervals are "
        "95 % unless the paper used another (T3D: 90 % batch means).", "",
        "Each row checks one of: " + "; ".join(CHECKS.values()) + ". The claim says the rule "
        "or band.", "",
        "| paper | where | claim | checks | published | ours [interval] | verdict | why |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s, f = r.spec, r.finding
        lines.append("| " + " | ".join(_cell(x) for x in (
            s.paper, s.where, s.claim, s.checks, s.published, f.ours,
            f"**{f.decision.verdict}**", f.decision.why)) + " |")
    papers = list(dict.fromkeys(r.spec.paper for r in rows))
    for paper in papers:
        mine = [r for r in rows if r.spec.paper == paper]
        setups = list(dict.fromkeys(r.finding.setup for r in mine if r.finding.setup))
        plots = list(dict.fromkeys(p for r in mine for p in r.finding.plots))
        lines += ["", f"## {paper}", ""]
        lines += [f"- {setup}" for setup in setups] or ["- nothing ran"]
        lines += [f"\n![{plot}]({plot})" for plot in plots]
    return "\n".join(lines) + "\n"


def document(rows: Sequence[Row], header: dict[str, Any]) -> dict[str, Any]:
    """The report as ``claims.json`` holds it: the header, the tally and every row."""
    return {**header, "verdicts": counts(rows), "claims": [r.as_dict() for r in rows]}


def write(rows: Sequence[Row], header: dict[str, Any], out: Path) -> None:
    """Write ``report.md`` and ``claims.json`` into ``out``, each whole or not at all (several
    processes may rebuild them: the papers' jobs under ``--slurm``)."""
    write_page(out / "report.md", lambda: markdown(rows, header))
    write_whole(out / "claims.json",
                json.dumps(document(rows, header), indent=1, ensure_ascii=False) + "\n")

"""The reproduction's report: a Markdown page of the claims and their verdicts (with the plots
beside it) and the same rows as JSON.  ``markdown`` and ``document`` are pure; ``head``
gathers what the page's header records about the machine and the code."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.reproduce.claims import CHECKS, VERDICTS, Row

ROOT = Path(__file__).resolve().parents[2]


def head(command: str, size: str, seconds: float) -> dict[str, Any]:
    """What the header records: host, cores, when it started, the command, the git commit (and
    whether tracked files had changes), the size of the run and its wall time (s)."""
    uname = os.uname()
    return {"host": f"{uname.nodename} ({uname.sysname} {uname.release}, {uname.machine})",
            "cores": len(os.sched_getaffinity(0)),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z"), "command": command,
            "commit": _commit(), "size": size, "seconds": round(seconds, 1)}


def _commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown (not a git checkout)"
    changed = git("status", "--porcelain", "--untracked-files=no")
    return commit + (" with uncommitted changes" if changed else "")


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
        "# The papers reproduced", "",
        f"Written by `{header['command']}`; do not edit by hand.", "",
        f"- host: {header['host']}, {header['cores']} cores",
        f"- started: {header['date']}",
        f"- git commit: {header['commit']}",
        f"- size: {header['size']}; wall time {header['seconds']:.0f} s ({minutes:.1f} min)",
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
    """Write ``report.md`` and ``claims.json`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(markdown(rows, header))
    (out / "claims.json").write_text(json.dumps(document(rows, header), indent=1,
                                                ensure_ascii=False) + "\n")

"""Each paper's findings in a file of its own, ``OUT/papers/NAME.json``, written as soon as the
paper is done, so that a reproduction can be run in parts (the simulated papers anywhere, the
timed ones on a quiet machine) and its report rebuilt from every part in ``OUT``.

A part holds the paper's rows (claim and finding, plots by name) and its own header: the
command, host, cores, date, git commit, size, wall time (s), when the invocation that ran it
began (``began``: parts with different ones were run at different times) and what else used
the CPUs meanwhile (``load``, ``testbed.experiments.load.disturbance``'s record).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import write_whole
from benchmarks.papers.reproduce.claims import Decision, Finding, Row, Spec

FOLDER = "papers"
ROW_FIELDS = ("key", "paper", "where", "claim", "checks", "published", "ours", "verdict",
              "why", "setup", "plots")


class PartError(ValueError):
    """A paper file that cannot be read, or does not fit with the others; the message names
    the file and the field."""


@dataclass(frozen=True)
class Part:
    """One paper's findings: its name, its header (see the module) and its rows."""

    name: str
    header: dict[str, Any]
    rows: tuple[Row, ...]

    def as_dict(self) -> dict[str, Any]:
        """The part as its file holds it."""
        return {"paper": self.name, "header": self.header,
                "claims": [row.as_dict() for row in self.rows]}


def path(out: Path, name: str) -> Path:
    """Where paper ``name``'s file lies under the report directory ``out``."""
    return out / FOLDER / f"{name}.json"


def save(out: Path, part: Part) -> Path:
    """Write ``part`` under ``out`` whole or not at all (a temporary file renamed into place);
    its path."""
    target = path(out, part.name)
    write_whole(target, json.dumps(part.as_dict(), indent=1, ensure_ascii=False) + "\n")
    return target


def row_of(record: dict[str, Any]) -> Row:
    """The ``Row`` that ``Row.as_dict`` gave ``record``; ``KeyError`` naming a missing field."""
    for name in ROW_FIELDS:
        if name not in record:
            raise KeyError(name)
    spec = Spec(record["key"], record["paper"], record["where"], record["claim"],
                record["published"], record["checks"])
    finding = Finding(record["ours"], Decision(record["verdict"], record["why"]),
                      record["setup"], tuple(record["plots"]))
    return Row(spec, finding)


def load(file: Path) -> Part:
    """The part in ``file``; ``PartError`` naming the file and the field when it is not one."""
    try:
        doc = json.loads(file.read_text())
    except (OSError, ValueError) as err:
        raise PartError(f"{file}: not a paper file: {err}") from err
    for name, kind in (("paper", str), ("header", dict), ("claims", list)):
        if not isinstance(doc.get(name) if isinstance(doc, dict) else None, kind):
            raise PartError(f"{file}: field '{name}': missing or not a {kind.__name__}")
    if not isinstance(doc["header"].get("size"), str):
        raise PartError(f"{file}: field 'header.size': missing")
    rows = []
    for number, record in enumerate(doc["claims"], 1):
        try:
            rows.append(row_of(record))
        except (KeyError, TypeError, ValueError) as err:
            raise PartError(f"{file}: field 'claims', entry {number}: {err!s} missing or "
                            "wrong") from err
    return Part(doc["paper"], doc["header"], tuple(rows))


def present(out: Path, order: Iterable[str]) -> dict[str, Part]:
    """Every part under ``out`` of the papers named in ``order``, in that order."""
    found = {}
    for name in order:
        file = path(out, name)
        if file.is_file():
            found[name] = load(file)
    return found


def mixed(parts: dict[str, Part], size: str) -> str | None:
    """Why ``parts`` cannot go into one report with a run at ``size`` (one line naming the
    first part of another size), or None when they can."""
    for name, part in parts.items():
        if part.header["size"] != size:
            return (f"{FOLDER}/{name}.json was run at size {part.header['size']}, this run is "
                    f"at size {size}: one report holds one size (use another --out, or remove "
                    "that file)")
    return None

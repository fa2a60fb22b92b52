"""The run's append-only event log, ``events.jsonl``: one JSON object a line, flushed as written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class EventLog:
    """Writes events; every event has ``t`` (seconds since the run started) and ``event``."""

    def __init__(self, path: Path) -> None:
        self.file = open(path, "x", buffering=1)  # noqa: SIM115 (open for the whole run)

    def emit(self, event: str, t: float, **fields: Any) -> None:
        """Append one event and flush it to the OS."""
        self.file.write(json.dumps({"t": round(t, 6), "event": event, **fields}) + "\n")
        self.file.flush()

    def close(self) -> None:
        """Close the file."""
        self.file.close()


def read_events(path: Path) -> list[dict[str, Any]]:
    """Read an event log; a torn last line (the writer was killed mid-write) is skipped."""
    events = []
    for line in Path(path).read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events

"""Two ways of doing the same thing timed in interleaved pairs, and what the pairs say: shared
by the wall-time benchmarks that compare two code trees (``benchmarks.overheads.versions``) or two
ways
of running (``benchmarks.reliability.slurm_experiment``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from benchmarks.harness import emit, host, median, now_iso, table
from testbed.experiments import stats


def interleaved(rounds: int, ways: dict[str, Callable[[str], float]]) -> dict[str, list[float]]:
    """Run each of the two ``ways`` (name -> a function taking a fresh output name such as
    ``"this-0"`` and returning the wall seconds it took) once a round for ``rounds`` rounds,
    which goes first alternating; the seconds by way, in round order.  Progress to stderr."""
    names = list(ways)
    walls: dict[str, list[float]] = {name: [] for name in names}
    for n in range(rounds):
        for name in names if n % 2 == 0 else reversed(names):
            walls[name].append(ways[name](f"{name}-{n}"))
            print(f"round {n + 1} {name}: {walls[name][-1]:.1f} s", file=sys.stderr)
    return walls


def figures(walls: dict[str, list[float]], this: str, base: str) -> dict[str, Any]:
    """The machine, the date, every wall (s, 2 decimals) and median by way, the paired ratio
    ``this`` / ``base`` with its interval, and the signed-rank test's p (None where the pairs
    are too few for either)."""
    ratio = stats.ratio_interval(walls[this], walls[base], paired=True)
    test = stats.signed_rank_test(walls[this], walls[base])
    record: dict[str, Any] = {"host": host(), "date": now_iso(), "rounds": len(walls[this])}
    for name, values in walls.items():
        record[f"{name}_s"] = [round(w, 2) for w in values]
        record[f"{name}_median_s"] = round(median(values), 2)
    record["ratio"] = None if ratio is None else {
        "value": ratio.value, "low": ratio.low, "high": ratio.high,
        "confidence": ratio.confidence}
    record["p"] = None if test is None else test.p
    return record


def report(walls: dict[str, list[float]], record: dict[str, Any], label: str) -> None:
    """Print the walls as a table (one row a way, headed ``label``), then ``record`` as one
    JSON object."""
    print(table([label, "median s", "each s"],
                [[w, f"{median(v):.1f}", " ".join(f"{x:.1f}" for x in v)]
                 for w, v in walls.items()]))
    emit([record], True)

"""The figures of one run that comparisons are made of: flat names over ``summary.json``.

A run's summary nests its per-job metrics by statistic and group; a comparison needs one
number per run and figure.  The names are ``makespan``, ``utilization``,
``useful_utilization``, ``cpu_s``, ``major_faults``, ``swap_in``, ``swap_out``,
``switch_latency_p50_us``, ``switch_latency_p99_us`` and ``METRIC_STAT_GROUP`` for the per-job
metrics (``response_mean_short``, ``wait_median_all``, ...).  Times are seconds of the run.
"""

from __future__ import annotations

from typing import Any

from testbed.results.metrics import GROUPS, METRICS

SYSTEM = ("makespan", "utilization", "useful_utilization", "cpu_s", "major_faults", "swap_in",
          "swap_out")
SWITCH = ("switch_latency_p50_us", "switch_latency_p99_us")
PER_JOB = tuple(f"{metric}_{stat}_{group}" for metric in METRICS for stat in ("mean", "median")
                for group in GROUPS)
NAMES = (*SYSTEM, *SWITCH, *PER_JOB)
DEFAULT = ("makespan", "utilization", "wait_mean_all", "response_mean_all",
           "response_mean_short", "response_mean_long", "slowdown_mean_all",
           "bounded_slowdown_mean_all", "switch_latency_p99_us")
UNITS = {"makespan": "s", "cpu_s": "s", "switch_latency_p50_us": "us",
         "switch_latency_p99_us": "us", **{n: "s" for n in PER_JOB
                                           if n.split("_")[0] in ("wait", "runtime", "response")}}


def run_figures(summary: dict[str, Any]) -> dict[str, float | None]:
    """Every named figure of one run's summary (None where the run has none, e.g. no switch
    under fcfs, or no short job)."""
    figures: dict[str, float | None] = {name: summary.get(name) for name in SYSTEM}
    latency = summary.get("switch_latency_us") or {}
    figures["switch_latency_p50_us"] = latency.get("p50")
    figures["switch_latency_p99_us"] = latency.get("p99")
    for metric in METRICS:
        for group in GROUPS:
            for stat in ("mean", "median"):
                figures[f"{metric}_{stat}_{group}"] = summary["metrics"][metric][group][stat]
    return figures


def check_names(names: list[str]) -> list[str]:
    """``names`` when each is a known figure; ``ValueError`` naming the first unknown one."""
    for name in names:
        if name not in NAMES:
            raise ValueError(f"unknown metric {name!r} (known: {', '.join(NAMES)})")
    return names


def label(name: str) -> str:
    """How a table names a figure: ``response_mean_short`` is "response mean (short)"."""
    unit = UNITS.get(name)
    if name in PER_JOB:
        *metric, stat, group = name.split("_")
        text = f"{' '.join(metric)} {stat} ({group})"
    else:
        text = name.removesuffix("_us").replace("_", " ")
    return f"{text} [{unit}]" if unit else text

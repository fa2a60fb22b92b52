"""Plots of an experiment's summary: one figure per metric, medians with their intervals (95 %
from 6 runs; the runs' range, of lower confidence, with fewer) as error bars.  With a numeric
setting that varies (MPL, timeslice, ...) it is the x axis and each label (and each value of
any other varied setting) is a line; otherwise each setting combination is a group of points
on a categorical axis, one per label."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from testbed.experiments.comparison import Record  # noqa: E402
from testbed.experiments.figures import label as figure_label  # noqa: E402

Part = tuple[dict[str, Any], str, list[Record]]


def _varied(parts: list[Part]) -> list[str]:
    keys: dict[str, set[str]] = {}
    for settings, _, _ in parts:
        for k, v in settings.items():
            keys.setdefault(k, set()).add(repr(v))
    return [k for k, values in keys.items() if len(values) > 1 and k not in ("code", "paired")]


def _numeric(parts: list[Part], key: str) -> bool:
    return all(isinstance(s.get(key), int | float) and not isinstance(s.get(key), bool)
               for s, _, _ in parts)


def _errors(records: list[Record]) -> list[list[float]]:
    return [[r.median - r.ci_low if r.ci_low is not None else 0.0 for r in records],
            [r.ci_high - r.median if r.ci_high is not None else 0.0 for r in records]]


def write_plots(parts: list[Part], out: Path) -> list[Path]:
    """One PNG per metric under ``out``; return their paths."""
    metrics = list(dict.fromkeys(r.metric for _, _, records in parts for r in records))
    varied = _varied(parts)
    x_key = next((k for k in varied if _numeric(parts, k)), None)
    written = []
    for metric in metrics:
        if not any(r.metric == metric and r.median is not None
                   for _, _, records in parts for r in records):
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        if x_key is None:
            _categories(ax, parts, varied, metric)
        else:
            _lines(ax, parts, varied, x_key, metric)
        ax.set_ylabel(figure_label(metric))
        ax.set_title(f"{figure_label(metric)}: median and its interval (95 % from 6 runs)",
                     fontsize=10)
        fig.tight_layout()
        path = out / f"{metric}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def _lines(ax: Any, parts: list[Part], varied: list[str], x_key: str, metric: str) -> None:
    """``metric`` against the numeric setting ``x_key``: a line per label (and value of any
    other varied setting)."""
    series: dict[str, list[tuple[Any, Record]]] = {}
    for settings, _, records in parts:
        rest = ", ".join(f"{k}={settings[k]}" for k in varied if k != x_key)
        for r in records:
            if r.metric == metric and r.median is not None:
                name = r.label if not rest else f"{r.label}, {rest}"
                series.setdefault(name, []).append((settings[x_key], r))
    for name, points in series.items():
        points.sort(key=lambda p: p[0])
        records = [p[1] for p in points]
        ax.errorbar([p[0] for p in points], [r.median for r in records],
                    yerr=_errors(records), capsize=3, marker="o", label=name)
    ax.set_xlabel(x_key)
    ax.legend(fontsize=7)


def _categories(ax: Any, parts: list[Part], varied: list[str], metric: str) -> None:
    """``metric`` with one x tick per label (per label and setting combination when other
    settings vary), each label in its own colour, from 0 up when no value is negative."""
    colours: dict[str, str] = {}
    ticks: list[str] = []
    for settings, _, records in parts:
        rest = ", ".join(f"{k}={settings[k]}" for k in varied)
        for r in records:
            if r.metric != metric or r.median is None:
                continue
            colour = colours.setdefault(r.label, f"C{len(colours) % 10}")
            ax.errorbar([len(ticks)], [r.median], yerr=_errors([r]), capsize=4, marker="o",
                        markersize=7, linestyle="none", color=colour)
            ticks.append(r.label if not rest else f"{r.label}\n{rest}")
    ax.set_xticks(range(len(ticks)), ticks, fontsize=9)
    ax.set_xlim(-0.6, len(ticks) - 0.4)
    shown = [r for _, _, records in parts for r in records
             if r.metric == metric and r.median is not None]
    low = min(r.median if r.ci_low is None else r.ci_low for r in shown)
    high = max(r.median if r.ci_high is None else r.ci_high for r in shown)
    if low >= 0:
        ax.set_ylim(0, high * 1.1 or 1.0)

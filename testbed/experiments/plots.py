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
        series: dict[str, list[tuple[Any, Record]]] = {}
        categories: list[str] = []
        for settings, _, records in parts:
            rest = ", ".join(f"{k}={settings[k]}" for k in varied if k != x_key)
            if x_key is None:
                categories.append(rest or "all")
            for r in records:
                if r.metric != metric or r.median is None:
                    continue
                name = r.label if x_key is None or not rest else f"{r.label}, {rest}"
                x = settings[x_key] if x_key is not None else len(categories) - 1
                series.setdefault(name, []).append((x, r))
        for index, (name, points) in enumerate(series.items()):
            points.sort(key=lambda p: p[0])
            shift = 0 if x_key is not None else (index - (len(series) - 1) / 2) * 0.12
            xs = [p[0] + shift for p in points]
            records = [p[1] for p in points]
            ax.errorbar(xs, [r.median for r in records], yerr=_errors(records), capsize=3,
                        marker="o", linestyle="-" if x_key is not None else "none", label=name)
        if x_key is None:
            ax.set_xticks(range(len(categories)), categories, rotation=20, ha="right",
                          fontsize=8)
        else:
            ax.set_xlabel(x_key)
        ax.set_ylabel(figure_label(metric))
        ax.set_title(f"{figure_label(metric)}: median and its interval (95 % from 6 runs)",
                     fontsize=10)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / f"{metric}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written

"""An experiment's results, derived from its run directories alone: ``results.csv`` (tidy: one
row per run and figure, every setting a column), ``summary.csv`` (medians, intervals, ratios
and calls per setting combination, label and figure), tables, and plots with error bars."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
from pathlib import Path
from typing import Any

from testbed.experiments import comparison, figures
from testbed.experiments.runner import RunResult, collect, groups_of

RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(comparison.Record))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _plan(root: Path) -> dict[str, Any]:
    try:
        return json.loads((root / "experiment.json").read_text())
    except (OSError, ValueError):
        return {}


def _setting_columns(results: list[RunResult]) -> list[str]:
    names: dict[str, None] = {}
    for r in results:
        names.update(dict.fromkeys(r.info["settings"]))
    return list(names)


def results_csv(results: list[RunResult], metrics: list[str]) -> str:
    """The tidy table: one row per run and figure (``value`` empty where the run has none)."""
    settings = _setting_columns(results)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "label", *settings, "run_seed", "repeat", "executor", "code",
                     "disturbed", "metric", "value"])
    for r in results:
        info = r.info
        for metric in metrics:
            value = r.figures.get(metric)
            writer.writerow([r.path.parent.name + "/" + r.path.name, info["label"],
                             *(info["settings"].get(s, "") for s in settings),
                             "" if info["seed"] is None else info["seed"], info["repeat"],
                             info["executor"], info["code"], int(r.disturbed), metric,
                             "" if value is None else f"{value:.6g}"])
    return out.getvalue()


Part = tuple[dict[str, Any], str, list[comparison.Record]]


def summaries(results: list[RunResult], metrics: list[str], reference: str | None,
              order: list[str] | None = None, family: str = comparison.FAMILY,
              pair_by: str = "seed") -> list[Part]:
    """For each combination of the settings other than the scheduler: those settings (with
    ``paired``), the reference label used, and the records of every label and figure, labels
    in ``order``, Holm-corrected over ``family``, runs paired as ``pair_by`` says
    (``runner.groups_of``)."""
    out = []
    for found in groups_of(results, order, pair_by):
        labels = [g.label for g in found.groups]
        ref = reference if reference in labels else labels[0]
        out.append(({**found.settings, "paired": found.paired}, ref,
                    comparison.summarize(found.groups, metrics, ref, found.paired, family)))
    return out


def summary_csv(parts: list[Part]) -> str:
    """``summary.csv``: the records of every setting combination, settings as columns."""
    columns: dict[str, None] = {}
    for settings, _, _ in parts:
        columns.update(dict.fromkeys(settings))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*columns, "reference", *RECORD_FIELDS])
    for settings, ref, records in parts:
        for record in records:
            row = record.as_dict()
            writer.writerow([*(settings.get(c, "") for c in columns), ref,
                             *("" if row[f] is None else row[f] for f in RECORD_FIELDS)])
    return out.getvalue()


def format_sweep(parts: list[Part]) -> str:
    """A table for an experiment without schedulers to compare: one row per setting
    combination (the settings that vary), one column per figure: median [95 % interval]."""
    varied = [k for k in dict.fromkeys(k for s, _, _ in parts for k in s)
              if k not in ("code", "paired")
              and len({repr(s.get(k)) for s, _, _ in parts}) > 1]
    metrics = list(dict.fromkeys(r.metric for _, _, records in parts for r in records))
    rows = [["label", *varied, "runs", *(figures.label(m) for m in metrics)]]
    for settings, _, records in parts:
        cells = {r.metric: r for r in records}
        first = records[0]
        rows.append([first.label, *(str(settings.get(k)) for k in varied), str(first.n),
                     *(comparison.interval_text(cells[m]) for m in metrics)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.append("median [95 % order-statistics interval] over the runs of each setting")
    legend = comparison.short_legend([r for _, _, records in parts for r in records])
    if legend:
        lines.append(legend)
    return "\n".join(lines)


def markdown(root: Path, tables: str) -> str:
    """A Markdown page of the experiment's tables with the machine, the date and the command
    it was run with, as its ``experiment.json`` recorded them."""
    plan = _plan(root)
    host = plan.get("host", {})
    argv = " ".join(plan.get("argv", [])) or "(not recorded)"
    return (f"# {root.name}\n\n"
            f"Measured on {host.get('hostname', '?')} ({host.get('cpus', '?')} CPUs, "
            f"{host.get('machine', '?')}, Linux {host.get('kernel', '?')}, Python "
            f"{host.get('python', '?')}), started {plan.get('started', '?')}, code "
            f"{plan.get('code', '?')}.\n\nCommand: `{argv}`\n\n```\n{tables}\n```\n")


def label_order(root: Path) -> list[str]:
    """The labels in the order the experiment lists its cells (empty without its
    ``experiment.json``)."""
    return list(dict.fromkeys(c["label"] for c in _plan(root).get("cells", [])))


def write_report(root: Path, metrics: list[str] | None = None,
                 reference: str | None = None, family: str | None = None) -> str:
    """Write ``results.csv``, ``summary.csv`` and the plots under ``root`` from its run
    directories; return the tables as text.  The figures, the reference, the family and the
    pairing are the experiment's (``experiment.json``) unless given.  ``ValueError`` when no
    run completed."""
    plan = _plan(root)
    metrics = metrics or plan.get("metrics") or list(figures.DEFAULT)
    reference = reference or plan.get("reference")
    family = family or plan.get("family") or comparison.FAMILY
    results = collect(root)
    if not results:
        raise ValueError(f"{root}: no completed run here (CELL/REPEAT/run.json)")
    parts = summaries(results, metrics, reference, label_order(root), family,
                      plan.get("pair_by", "seed"))
    _write(root / "results.csv", results_csv(results, metrics))
    _write(root / "summary.csv", summary_csv(parts))
    (root / "plots").mkdir(exist_ok=True)
    from testbed.experiments.plots import write_plots  # matplotlib: only reports need it

    write_plots(parts, root / "plots")
    if all(len({r.label for r in records}) == 1 for _, _, records in parts):
        tables = [format_sweep(parts)]
    else:
        tables = []
    for settings, ref, records in parts if not tables else []:
        shown = ", ".join(f"{k}={v}" for k, v in settings.items()
                          if k not in ("code", "paired") and v is not None)
        tables.append(f"## {shown}\n"
                      f"{comparison.format_table(records, ref, settings['paired'])}")
    codes = {s["code"] for s, _, _ in parts}
    if len(codes) > 1:
        tables.append(f"note: runs of {len(codes)} code versions are here, summed up apart: "
                      + ", ".join(sorted(codes)))
    return "\n\n".join(tables)

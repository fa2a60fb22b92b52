"""Runs a plan's cells round after round into run directories, resumably.

Layout of an experiment (or compare) directory::

    experiment.json                    the plan as run (cells, repeats, order, code version)
    CELL/                              one per cell: readable settings and the cell's key
        workload-s2.txt                the workload each run of the cell read
        1/ 2/ ...                      one complete run directory per repeat, plus
            load.json                  what else used the CPUs during the run
            run.json                   written last: the run's settings and status

A run counts as done when its ``run.json`` says it ended ``complete``; anything else in a
repeat's directory (a run cut short by Ctrl-C or a crash) is removed and run again, so
starting an interrupted experiment again skips what it completed.  The cell's key covers its
settings, its workload's content, the executor and the code version, so results of other
settings or other code never land in the same cell.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from testbed.experiments import comparison, engine, figures, load
from testbed.experiments.plan import Cell, Plan

RunOne = Callable[[Cell, Path, Path], str]
"""Runs one repeat: (cell, workload file, empty run directory) -> the driver's status."""


class Interrupted(Exception):
    """The experiment was stopped by a signal; what completed is kept."""


@dataclass(frozen=True)
class RunResult:
    """A completed run as its directory records it."""

    path: Path
    info: dict[str, Any]
    figures: dict[str, float | None]
    disturbed: bool


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def completed(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a run that ended complete."""
    try:
        return json.loads((run_dir / "run.json").read_text()).get("status") == "complete"
    except (OSError, ValueError):
        return False


def collect(root: Path) -> list[RunResult]:
    """Every completed run under ``root`` (``CELL/REPEAT/run.json``), in cell and repeat
    order."""
    out = []
    for info_path in sorted(root.glob("*/*/run.json"),
                            key=lambda p: (p.parent.parent.name, _repeat(p.parent.name))):
        run_dir = info_path.parent
        if not completed(run_dir):
            continue
        info = json.loads(info_path.read_text())
        summary = json.loads((run_dir / "summary.json").read_text())
        try:
            disturbed = json.loads((run_dir / "load.json").read_text())["disturbed"]
        except (OSError, ValueError, KeyError):
            disturbed = False
        out.append(RunResult(run_dir, info, figures.run_figures(summary), bool(disturbed)))
    return out


def _repeat(name: str) -> int:
    return int(name) if name.isdigit() else 0


@dataclass
class Comparison:
    """The groups (one per label, in the plan's order) of one combination of the settings
    other than the scheduler, and whether their runs are analysed as pairs."""

    settings: dict[str, Any]
    groups: list[comparison.Group]
    paired: bool


def groups_of(results: list[RunResult], order: list[str] | None = None,
              pair_by: str = "seed") -> list[Comparison]:
    """The completed runs as comparison groups (one per label, ordered as ``order`` lists the
    labels) for each combination of the other settings (workload, seed, options, executor,
    code).  ``pair_by`` ``seed``: runs whose workload seed changed with the repeat pair up by
    that seed (else they are not paired); ``round``: the runs of each round (repeat) pair
    up."""
    out: dict[tuple[str, ...], dict[str, comparison.Group]] = {}
    paired: dict[tuple[str, ...], bool] = {}
    settings: dict[tuple[str, ...], dict[str, Any]] = {}
    for result in results:
        info = result.info
        others = {k: v for k, v in info["settings"].items() if k != "scheduler"}
        key = (json.dumps(others, sort_keys=True), info["executor"], info["code"])
        settings[key] = {**others, "executor": info["executor"], "code": info["code"]}
        by_label = out.setdefault(key, {})
        group = by_label.setdefault(info["label"],
                                    comparison.Group(info["label"], info["settings"]["scheduler"]))
        by_round = pair_by == "round"
        group.add(result.figures, result.disturbed, info["repeat"] if by_round else info["seed"])
        paired[key] = paired.get(key, True) and (by_round or bool(info.get("varies_seed")))
    rank = {label: i for i, label in enumerate(order or [])}
    return [Comparison(settings[k], sorted(v.values(), key=lambda g: rank.get(g.label, 1 << 30)),
                       paired[k]) for k, v in out.items()]


@dataclass(frozen=True)
class Task:
    """One repeat of one cell to run into ``root``, with what its ``run.json`` records."""

    run_one: RunOne
    cell: Cell
    root: Path
    number: int
    executor: str
    code: str
    varies_seed: bool
    pes: int

    @property
    def run_dir(self) -> Path:
        """The run's directory: ``CELL/REPEAT``."""
        return self.root / self.cell.dirname(self.executor, self.code) / str(self.number)


@dataclass(frozen=True)
class Outcome:
    """How a task ended: the driver's status, its wall time (s), its seed and its load."""

    task: Task
    status: str
    wall: float
    seed: int | None
    disturbance: dict[str, Any]


def where() -> dict[str, str]:
    """The node a run ran on, and its Slurm job (``JOB`` or ``JOB_TASK``) inside one."""
    out = {"node": os.environ.get("SLURMD_NODENAME") or os.uname().nodename}
    job = os.environ.get("SLURM_ARRAY_JOB_ID")
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    if job and task:
        out["slurm_job"] = f"{job}_{task}"
    elif os.environ.get("SLURM_JOB_ID"):
        out["slurm_job"] = os.environ["SLURM_JOB_ID"]
    return out


def perform(task: Task) -> Outcome:
    """Run ``task`` into its directory (what an earlier, unfinished attempt left there is
    removed first) and write its ``load.json`` and, last, its ``run.json``; raises
    ``Interrupted`` on Ctrl-C.  Runs in the runner's process or in a worker."""
    cell, run_dir = task.cell, task.run_dir
    cell_dir = run_dir.parent
    if run_dir.exists():
        shutil.rmtree(run_dir)
    cell_dir.mkdir(parents=True, exist_ok=True)
    seed = cell.run_seed(task.number, task.varies_seed)
    workload = cell_dir / f"workload{'' if seed is None else f'-s{seed}'}.txt"
    if not workload.exists():
        _write_json(cell_dir / "cell.json", {"label": cell.label, **cell.settings(),
                                             "workload_spec": cell.workload.identity(),
                                             "executor": task.executor, "code": task.code})
        tmp = workload.with_name(f".{workload.name}.{os.getpid()}.tmp")
        tmp.write_text(cell.workload.text(seed, dict(cell.options).get("pes", task.pes)))
        os.replace(tmp, workload)
    run_dir.mkdir()
    before = load.snapshot()
    began = time.monotonic()
    try:
        status = task.run_one(cell, workload, run_dir)
    except KeyboardInterrupt:
        raise Interrupted from None
    wall = time.monotonic() - began
    disturbance = load.disturbance(before, load.snapshot())
    if task.executor == "simulation":
        disturbance.update(disturbed=False, why="simulated: virtual time, not disturbed")
    _write_json(run_dir / "load.json", disturbance)
    if status == "interrupted":
        raise Interrupted
    _write_json(run_dir / "run.json", {
        "status": status, "label": cell.label, "repeat": task.number, "seed": seed,
        "settings": cell.settings(), "executor": task.executor, "code": task.code,
        "varies_seed": task.varies_seed and seed is not None,
        "key": cell.key(task.executor, task.code), "wall_s": round(wall, 3), **where()})
    return Outcome(task, status, wall, seed, disturbance)


class Runner:
    """Runs ``plan`` into ``root`` with ``run_one``; progress goes to ``progress``.  With
    ``workers`` above 1 a simulated plan's runs go over that many processes (``run_one`` must
    then pickle); emulated runs always run one at a time, as they measure the machine."""

    def __init__(self, plan: Plan, root: Path, run_one: RunOne, code: str, pes: int,
                 progress: TextIO = sys.stderr, workers: int = 1) -> None:
        self.plan, self.root, self.run_one, self.code, self.pes = plan, root, run_one, code, pes
        self.progress = progress
        self.workers = workers if plan.executor == "simulation" else 1
        self.durations: list[float] = []
        self.stopped_by: str | None = None

    def describe(self) -> dict[str, Any]:
        """The plan as ``experiment.json`` records it."""
        p = self.plan
        uname = os.uname()
        return {"host": {"hostname": uname.nodename, "cpus": len(os.sched_getaffinity(0)),
                         "kernel": uname.release, "machine": uname.machine,
                         "python": sys.version.split()[0]},
                "started": time.strftime("%Y-%m-%d %H:%M:%S %z"), "argv": sys.argv,
                "executor": p.executor, "repeats": p.repeats, "order": p.order, "seed": p.seed,
                "reference": p.reference, "metrics": p.metrics, "varies_seed": p.varies_seed,
                "until_ci": p.until_ci, "budget": p.budget, "max_repeats": p.repeat_cap,
                "family": p.family, "pair_by": p.pair_by, "code": self.code,
                "cells": [{"dir": c.dirname(p.executor, self.code), "label": c.label,
                           **c.settings(), "workload_spec": c.workload.identity()}
                          for c in p.cells]}

    def run(self) -> list[str]:
        """Run every round (more while ``until_ci`` asks, up to the plan's cap on repeats and
        within its budget); return the ``label metric`` of figures whose interval did not
        converge (empty without ``until_ci``), with why it stopped in ``stopped_by``
        (``budget`` or ``max_repeats``).  The budget counts the wall time of every run of the
        plan completed here, in this session or an earlier one.  Raises ``Interrupted`` when
        a signal stops it."""
        self.root.mkdir(parents=True, exist_ok=True)
        _write_json(self.root / "experiment.json", self.describe())
        total = self.plan.repeats * len(self.plan.cells)
        self.run_tasks(self.tasks(range(1, self.plan.repeats + 1)), total)
        if self.plan.until_ci is None:
            return []
        number = self.plan.repeats
        while True:
            left = self.unconverged()
            if not left:
                return []
            if number >= self.plan.repeat_cap:
                self.stopped_by = "max_repeats"
                return left
            walls = self.walls()
            per_round = sum(walls) / len(walls) * len(self.plan.cells) if walls else 0.0
            if self.plan.budget is not None and sum(walls) + per_round > self.plan.budget:
                self.stopped_by = "budget"
                return left
            number += 1
            total += len(self.plan.cells)
            self.run_tasks(self.tasks([number]), total)

    def tasks(self, numbers: Iterable[int], only: int | None = None) -> list[Task]:
        """The runs of rounds ``numbers`` not yet complete, in the design's order (of round
        ``only``'s cell at that place in the round's order, when given)."""
        out = []
        for number in numbers:
            cells = self.plan.round(number)
            for cell in cells if only is None else cells[only:only + 1]:
                task = Task(self.run_one, cell, self.root, number, self.plan.executor,
                            self.code, self.plan.varies_seed, self.pes)
                if not completed(task.run_dir):
                    out.append(task)
        return out

    def run_tasks(self, tasks: list[Task], total: int) -> None:
        """Run ``tasks`` (over the workers when there are several), with a progress line
        as each ends; ``total`` is the number of runs the progress counts to."""
        done = total - len(tasks)
        try:
            with engine.spreading(min(self.workers, len(tasks))) as spread:
                for outcome in spread(perform, tasks):
                    done += 1
                    self._report(outcome, done, total)
        except (KeyboardInterrupt, BrokenProcessPool):
            raise Interrupted from None

    def walls(self) -> list[float]:
        """The wall time (s) of every completed run of the plan under ``root``, of this
        session and earlier ones."""
        return [float(r.info.get("wall_s", 0.0)) for r in self._own_results()]

    def unconverged(self) -> list[str]:
        """``label metric`` of the plan's figures whose interval is still wider than
        ``until_ci`` of its median (or states less than 95 %), over the runs done so far."""
        out = []
        for found in groups_of(self._own_results(), pair_by=self.plan.pair_by):
            labels = [g.label for g in found.groups]
            reference = self.plan.reference if self.plan.reference in labels else labels[0]
            records = comparison.summarize(found.groups, self.plan.metrics, reference,
                                           found.paired, self.plan.family)
            out += comparison.unconverged(records, self.plan.until_ci or 0.0)
        return out

    def _own_results(self) -> list[RunResult]:
        dirs = {c.dirname(self.plan.executor, self.code) for c in self.plan.cells}
        return [r for r in collect(self.root) if r.path.parent.name in dirs]

    def _report(self, outcome: Outcome, done: int, total: int) -> None:
        self.durations.append(outcome.wall)
        left = (total - done) * (sum(self.durations) / len(self.durations)) / self.workers
        task, seed, disturbance = outcome.task, outcome.seed, outcome.disturbance
        flag = f" (disturbed: {disturbance['why']})" if disturbance["disturbed"] else ""
        print(f"[{done}/{total}] {task.cell.label} run {task.number} ({task.cell.workload.name}"
              f"{'' if seed is None else f' seed {seed}'}): {outcome.status} in "
              f"{outcome.wall:.1f} s{flag}; about {duration(left)} left", file=self.progress,
              flush=True)


def duration(seconds: float) -> str:
    """``seconds`` as a short text: seconds, minutes or hours."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"

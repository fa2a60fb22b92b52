"""``testbed compare`` and ``testbed experiment``: repeated, interleaved runs and their
intervals."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from testbed import run
from testbed.cli.options import (
    DEFAULTS,
    options_of,
    owner_options,
    scheduler_options,
    simulator_options,
)
from testbed.cli.workloads import write_text
from testbed.events import read_events
from testbed.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED
from testbed.experiments import engine
from testbed.experiments import slurm as slurm_jobs
from testbed.experiments.comparison import FAMILIES, FAMILY
from testbed.experiments.figures import DEFAULT as DEFAULT_FIGURES
from testbed.experiments.figures import check_names
from testbed.experiments.plan import (
    MAX_REPEATS,
    ORDERS,
    PAIR_BY,
    Cell,
    Plan,
    PlanError,
    WorkloadSpec,
    code_version,
    labels,
    load_plan,
    parse_generator,
)
from testbed.experiments.report import markdown as experiment_markdown
from testbed.experiments.report import summaries as experiment_summaries
from testbed.experiments.report import write_report as write_experiment_report
from testbed.experiments.runner import Interrupted as ExperimentInterrupted
from testbed.experiments.runner import Runner, RunOne, collect, completed, duration
from testbed.results.report import first_runs, format_table
from testbed.run import UsageError
from testbed.run_options import CHOICES
from testbed.workloads.files import Workload

T = TypeVar("T")


def cmd_compare(args: argparse.Namespace) -> int:
    """Run a workload under several schedulers, repeated and interleaved, and compare them."""
    schedulers = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    if not schedulers:
        raise UsageError("--schedulers names no scheduler")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    spec, seed = _workload_spec(args.workload)
    options = options_of(args)
    if options.executor == "simulation" and args.pes is None:
        options = options_of(args, pes=dict(spec.params).get("pes"))
    cell_options = {s: run.Options.of(options, scheduler=s) for s in schedulers}
    for each in cell_options.values():
        pes = run.prepare(each, spec.file or Workload("<generated>", [])).pes
    try:
        metrics = check_names([m.strip() for m in args.metrics.split(",") if m.strip()])
    except ValueError as err:
        raise UsageError(f"--metrics: {err}") from None
    names = labels(schedulers)
    reference = args.reference or names[0]
    if reference not in names:
        raise UsageError(f"--reference {reference}: not one of {', '.join(names)}")
    cells = [Cell(spec, seed, s, (), lb) for s, lb in zip(schedulers, names, strict=True)]
    plan = Plan(cells, executor=args.executor, repeats=args.repeats, order=args.order,
                seed=args.order_seed, reference=reference, metrics=metrics,
                until_ci=args.until_ci, budget=args.budget, max_repeats=args.max_repeats,
                family=args.family, pair_by=args.pair_by)
    try:
        plan.check("testbed compare")
    except PlanError as err:
        raise UsageError(str(err)) from None
    out = run.new_run_dir(args.out, "compare")

    def run_one(cell: Cell, path: Path, run_dir: Path) -> str:
        return run.execute(run.prepare(cell_options[cell.scheduler], path), run_dir).status

    return _run_plan(plan, out, run_one, pes, args.json, compare=True)


def _workload_spec(text: str) -> tuple[WorkloadSpec, int | None]:
    """A workload file, or a generator spec such as ``mix:jobs=8,load=1.5,seed=2``."""
    path = Path(text)
    if path.is_file():
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", path.stem) or "workload"
        return WorkloadSpec(name, file=path.resolve()), None
    if ":" not in text:
        raise UsageError(f"{text}: no such workload file")
    try:
        return parse_generator(text)
    except PlanError as err:
        raise UsageError(str(err)) from None

def _run_plan(plan: Plan, out: Path, run_one: RunOne, pes: int, as_json: bool,
              compare: bool = False, workers: int = 1) -> int:
    """Run ``plan`` into ``out`` (simulated runs over ``workers`` processes), then print its
    tables (or ``--json`` records: then they are all that goes to standard output) and where
    the results are (on standard error); the exit code (130 when interrupted)."""
    runner = Runner(plan, out, run_one, code_version(), pes, workers=workers)
    left: list[str] = []
    interrupted = False
    try:
        left = runner.run()
    except ExperimentInterrupted:
        interrupted = True
        print("testbed: interrupted; the runs completed are kept (run it again to resume)"
              if not compare else "testbed: interrupted; the runs completed are kept",
              file=sys.stderr)
    results = collect(out)
    if not results:
        print(f"run directory: {out}", file=sys.stderr)
        return EXIT_INTERRUPTED if interrupted else EXIT_FAILED
    tables = write_experiment_report(out, plan.metrics, plan.reference, plan.family)
    single = max(sum(1 for r in results if r.info["label"] == lb)
                 for lb in {r.info["label"] for r in results}) == 1
    if as_json:
        parts = experiment_summaries(results, plan.metrics, plan.reference,
                                     [c.label for c in plan.cells], plan.family, plan.pair_by)
        print("[\n" + ",\n".join(json.dumps(r.as_dict()) for _, _, records in parts
                                  for r in records) + "\n]")
    elif single and compare:
        print(format_table({r.info["label"]: json.loads((r.path / "summary.json").read_text())
                            for r in results}))
        print("one run per scheduler: no intervals (use --repeats N)")
    else:
        print(tables)
    if left:
        why = (f"the budget ({plan.budget:g} s of runs)" if runner.stopped_by == "budget"
               else f"{plan.repeat_cap} repeats (--max-repeats)")
        print(f"did not converge within {why}: " + ", ".join(left), file=sys.stderr)
    where = sys.stderr if as_json else sys.stdout
    if compare:
        first = _draw_schedules(out)
        print(f"schedules: {out / 'gantt.png'} (each scheduler's first run, stacked)\n"
              f"           {first / 'gantt.png'} (and the like: each run's own)", file=where)
    print(f"plots:     {out / 'plots'}/ (one per figure, a point per scheduler)", file=where)
    print(f"run directory: {out} (results.csv, summary.csv)", file=where)
    return EXIT_INTERRUPTED if interrupted else 0

def _draw_schedules(out: Path) -> Path:
    """Draw the schedule (Gantt chart, runtime and wait plots) of each label's first run in
    its run directory and side by side in ``out``; the first label's run directory."""
    from testbed.results.plots import write_plots  # matplotlib: only when drawing

    firsts = first_runs(out)
    logs = {label: read_events(path / "events.jsonl") for label, path in firsts.items()}
    for label, path in firsts.items():
        write_plots({label: logs[label]}, path)
    write_plots(logs, out)
    return next(iter(firsts.values()))

def cmd_experiment_run(args: argparse.Namespace) -> int:
    """Run an experiment file (a factorial of workloads, schedulers, options and repeats),
    resuming where an earlier run of it stopped."""
    try:
        plan = load_plan(args.file)
    except PlanError as err:
        raise UsageError(str(err)) from None
    with tempfile.TemporaryDirectory(prefix="testbed-exp-") as tmp:
        for cell in plan.cells:
            options = _cell_options(args.file, plan.executor, cell)
            path = cell.workload.file or Path(tmp) / "workload.txt"
            if cell.workload.file is None:
                path.write_text(cell.workload.text(cell.run_seed(1, False), options.pes or
                                                   len(os.sched_getaffinity(0))))
            _in_cell(args.file, cell, lambda: run.prepare(options, path))  # noqa: B023
    out = args.out or Path("runs") / args.file.stem
    if out.exists() and any(out.iterdir()) and not (out / "experiment.json").exists():
        raise UsageError(f"{out}: exists, is not empty and holds no experiment")
    pes = len(os.sched_getaffinity(0))
    run_one = CellRun(args.file, plan.executor)
    if args.slurm:
        return _submit(plan, out, run_one, pes, args)
    if args.workers < 1:
        raise UsageError(f"--workers must be >= 1, got {args.workers}")
    return _run_plan(plan, out, run_one, pes, args.json, workers=args.workers)


@dataclass(frozen=True)
class CellRun:
    """Runs one repeat of a cell of experiment file ``file`` (a ``RunOne`` that pickles, for
    worker processes and Slurm jobs)."""

    file: Path
    executor: str

    def __call__(self, cell: Cell, path: Path, run_dir: Path) -> str:
        """Run ``cell`` on workload ``path`` into ``run_dir``; the driver's status."""
        options = _cell_options(self.file, self.executor, cell)
        return run.execute(run.prepare(options, path), run_dir).status


def _submit(plan: Plan, out: Path, run_one: CellRun, pes: int, args: argparse.Namespace) -> int:
    """Submit ``plan``'s blocks not done nor queued as Slurm jobs writing into ``out``."""
    try:
        settings = slurm_jobs.settings_of(args.file).merged(args.partition, args.account,
                                                            args.time, args.sbatch)
    except PlanError as err:
        raise UsageError(str(err)) from None
    runner = Runner(plan, out, run_one, code_version(), pes)
    out.mkdir(parents=True, exist_ok=True)
    experiment = slurm_jobs.Experiment(out, runner, settings)
    try:
        if not (out / "experiment.json").exists():
            runner.root.mkdir(parents=True, exist_ok=True)
            (out / "experiment.json").write_text(json.dumps(runner.describe(), indent=2,
                                                            default=str) + "\n")
        submitted = experiment.submit(run_one)
    except slurm_jobs.SlurmError as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_FAILED
    every = experiment.all_blocks()
    kind = "runs" if plan.executor == "simulation" else "rounds"
    if submitted:
        job = experiment.jobs()[-1]["job"]
        print(f"submitted {len(submitted)} of {len(every)} blocks ({kind}) as job array {job}")
    else:
        print(f"nothing to submit: every block of {len(every)} is done or queued")
    print(f"see: testbed experiment status {out}; once they are done: testbed experiment "
          f"report {out}")
    return 0


def _cell_options(where: Path, executor: str, cell: Cell) -> run.Options:
    """The run options of an experiment cell (``executor``'s; a generated workload's ``pes``
    is the simulated machine's unless the cell gives ``pes``)."""
    settings = {**dict(cell.options), "scheduler": cell.scheduler, "executor": executor}
    pes = dict(cell.workload.params).get("pes")
    if executor == "simulation" and pes is not None and "pes" not in settings:
        settings["pes"] = pes
    return _in_cell(where, cell, lambda: run.Options.from_mapping(settings))


def _in_cell(where: Path, cell: Cell, make: Callable[[], T]) -> T:
    """``make()``, its ``UsageError`` said as the experiment file's cell's."""
    try:
        return make()
    except UsageError as err:
        settings = ", ".join(f"{k}={v}" for k, v in cell.options)
        raise UsageError(f"{where}: cell {cell.label} ({settings}): {err}") from None

def cmd_experiment_report(args: argparse.Namespace) -> int:
    """Re-derive an experiment's results.csv, summary.csv, plots and tables from its runs."""
    if not args.dir.is_dir():
        raise UsageError(f"{args.dir}: no such directory")
    try:
        tables = write_experiment_report(args.dir, family=args.family)
    except ValueError as err:
        raise UsageError(str(err)) from None
    print(tables)
    if args.markdown is not None:
        write_text(experiment_markdown(args.dir, tables), args.markdown)
    print(f"results.csv, summary.csv and plots/ written under {args.dir}")
    return 0

def cmd_experiment_status(args: argparse.Namespace) -> int:
    """Show an experiment's runs: done, and with --slurm its blocks running (with their
    Slurm jobs), queued, failed (and why) and pending, and about how long is left (--wait:
    once none is queued or running)."""
    info = _experiment_json(args.dir)
    cells, repeats = info.get("cells", []), int(info.get("repeats", 0))
    runs = [args.dir / c["dir"] / str(n) for c in cells for n in range(1, repeats + 1)]
    lines = []
    if (args.dir / "slurm" / "plan.pickle").exists():
        experiment = _slurm_experiment(args.dir)
        try:
            state = experiment.status()
            while args.wait and (state["running"] or state["queued"]):
                time.sleep(1.0)
                state = experiment.status()
        except slurm_jobs.SlurmError as err:
            print(f"testbed: {err}", file=sys.stderr)
            return EXIT_FAILED
        for name, found in state.items():
            lines.append(f"{name:8} {len(found)} blocks" + (
                "" if not found or name == "done" else ":"))
            for block, note in ([] if name == "done" else found):
                where = (f"round {block.number}" if block.cell is None else
                         f"round {block.number}, cell {block.cell + 1}")
                lines.append(f"  block {block.index} ({where})" + (f": {note}" if note else ""))
    done = [r for r in runs if completed(r)]
    walls = [float(json.loads((r / "run.json").read_text()).get("wall_s", 0.0)) for r in done]
    print("\n".join([f"{len(done)} of {len(runs)} runs done", *lines]))
    if walls and len(done) < len(runs):
        print(f"about {duration(sum(walls) / len(walls) * (len(runs) - len(done)))} of runs "
              "left (the mean run so far times the runs not done)")
    return 0


def cmd_experiment_cancel(args: argparse.Namespace) -> int:
    """Cancel the queued and running Slurm jobs of an experiment run with --slurm; the runs
    they completed are kept (running the experiment again submits the rest)."""
    _experiment_json(args.dir)
    try:
        tasks = _slurm_experiment(args.dir).cancel()
    except slurm_jobs.SlurmError as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_FAILED
    print(f"cancelled {', '.join(tasks)}" if tasks else "nothing queued or running")
    return 0


def cmd_experiment_block(args: argparse.Namespace) -> int:
    """Run one block of an experiment run with --slurm (what each of its Slurm array tasks
    runs; the block is SLURM_ARRAY_TASK_ID unless --block gives it)."""
    index = args.block or int(os.environ.get("SLURM_ARRAY_TASK_ID", "0"))
    if index < 1:
        raise UsageError("no block: give --block N or run inside a Slurm array task")
    try:
        return slurm_jobs.run_block(args.dir, index, code_version())
    except slurm_jobs.SlurmError as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_FAILED
    except ExperimentInterrupted:
        print("testbed: interrupted; the runs completed are kept", file=sys.stderr)
        return EXIT_INTERRUPTED


def _experiment_json(root: Path) -> dict:
    try:
        return json.loads((root / "experiment.json").read_text())
    except OSError:
        raise UsageError(f"{root}: holds no experiment (no experiment.json)") from None
    except ValueError as err:
        raise UsageError(f"{root}/experiment.json: not JSON: {err}") from None


def _slurm_experiment(root: Path) -> slurm_jobs.Experiment:
    try:
        saved = slurm_jobs.load_submission(root)
    except slurm_jobs.SlurmError as err:
        raise UsageError(str(err)) from None
    return slurm_jobs.Experiment(root, Runner(saved["plan"], root, saved["run_one"],
                                              saved["code"], saved["pes"]))


def setup_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", help="a workload file, or a generator such as "
                                    "mix:jobs=8,load=1.5,seed=2 (lublin:... too)")
    p.add_argument("--schedulers", default="fcfs,gang,local",
                   help="comma-separated; a name given twice is run twice (an A/A comparison)")
    p.add_argument("--repeats", type=int, default=1, help="complete runs per scheduler")
    p.add_argument("--order", choices=ORDERS, default="interleaved",
                   help="interleaved (a b c a b c ...) or random (each round shuffled)")
    p.add_argument("--order-seed", type=int, default=1, help="seed of the random order")
    p.add_argument("--reference", default=None,
                   help="the label ratios are taken against (default: the first)")
    p.add_argument("--metrics", default=",".join(DEFAULT_FIGURES),
                   help="comma-separated figures to compare (default: %(default)s)")
    p.add_argument("--until-ci", type=float, default=None, metavar="F",
                   help="add rounds until every interval's half-width is within F of its "
                        "median (or the budget is spent, or --max-repeats reached)")
    p.add_argument("--budget", type=float, default=None, metavar="S",
                   help="seconds of runs the whole comparison may take with --until-ci "
                        "(every round counts, and those of an interrupted run it resumes)")
    p.add_argument("--max-repeats", type=int, default=None, metavar="N",
                   help=f"with --until-ci, add rounds up to N repeats (default "
                        f"{MAX_REPEATS}, or --repeats when more)")
    p.add_argument("--family", choices=FAMILIES, default=FAMILY,
                   help="the comparisons Holm-corrected together: all of the table "
                        "(default) or those on each figure")
    p.add_argument("--pair-by", choices=PAIR_BY, default="seed",
                   help="runs analysed as pairs: by workload seed when it changes with the "
                        "repeat (default; the simulator's), or by round")
    p.add_argument("--json", action="store_true",
                   help="print one JSON record per scheduler and metric instead of the table")
    p.add_argument("--executor", choices=CHOICES["executor"], default=DEFAULTS.executor,
                   help="real ranks (default) or the simulator (repeats differ by seed)")
    simulator_options(p, "simulation: ")
    owner_options(p)
    scheduler_options(p)

def setup_experiment_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="an experiment file (TOML)")
    p.add_argument("--out", type=Path, default=None,
                   help="the experiment's directory (default runs/NAME, NAME the file's stem); "
                        "an interrupted experiment resumes there")
    p.add_argument("--json", action="store_true", help="print the records as JSON")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help=f"simulated runs in N processes at once (this machine has "
                        f"{engine.cores()} CPUs); emulated runs stay one at a time")
    p.add_argument("--slurm", action="store_true",
                   help="submit the runs as Slurm jobs (a block, one round, per allocation "
                        "when emulated; a run per CPU when simulated) instead of running them; "
                        "again: submits what is neither done nor queued")
    p.add_argument("--partition", default=None, help="--slurm: the partition ([slurm] "
                                                      "partition)")
    p.add_argument("--account", default=None, help="--slurm: the account ([slurm] account)")
    p.add_argument("--time", default=None, metavar="LIMIT",
                   help="--slurm: each block's time limit, as sbatch --time ([slurm] time)")
    p.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                   help="--slurm: one more sbatch option (--sbatch=--constraint=ib); repeatable")


def setup_experiment_dir(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="an experiment's directory")


def setup_experiment_status(p: argparse.ArgumentParser) -> None:
    setup_experiment_dir(p)
    p.add_argument("--wait", action="store_true",
                   help="with --slurm: wait until none of its blocks is queued or running")


def setup_experiment_block(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="the directory of an experiment run with --slurm")
    p.add_argument("--block", type=int, default=None, metavar="N",
                   help="the block (default: SLURM_ARRAY_TASK_ID)")

def setup_experiment_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="an experiment's (or a compare's) directory")
    p.add_argument("--family", choices=FAMILIES, default=None,
                   help="the comparisons Holm-corrected together (default: as run)")
    p.add_argument("--markdown", type=Path, default=None, metavar="FILE",
                   help="also write the tables as Markdown with the machine, date and command")

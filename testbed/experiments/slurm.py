"""An experiment as Slurm jobs: ``testbed experiment run EXP.toml --slurm`` submits its blocks,
``experiment status`` shows them and ``experiment cancel`` cancels what is queued.

A *block* of an emulated experiment is one round of the design (every cell once, in the
design's order) and runs inside one allocation of exclusive nodes, so the runs that the
analysis pairs by round ran on the same nodes; a block of a simulated experiment is one run on
one CPU (virtual time does not depend on the node).  The blocks are the tasks of one job array
per submission (``--array`` lists the block numbers); each task runs ``testbed experiment block
DIR``, which runs its block's runs not yet complete into the experiment's directory exactly as a
local run does (``runner.perform``), recording the node and the Slurm job in each ``run.json``.

Under ``DIR/slurm/``: ``plan.pickle`` (the plan, how to run a cell, the code version and the
PEs a generated workload is made for), ``jobs.json`` (every submission: its job id and blocks),
``block.sh`` (what the tasks run) and ``log/JOB_BLOCK.out``.  A block is *done* when all its
runs are complete, *queued* or *running* while ``squeue`` lists its task (found by the job name,
which is the experiment's), and *failed* when it was submitted, is no longer queued and is not
done: the reason is Slurm's (``scontrol show job``, else ``sacct``) or, when Slurm no longer
knows the job, the last line of its log.  Submitting again submits exactly the blocks neither
done nor queued, so a failed or timed-out block runs again and nothing runs twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shlex
import subprocess
import sys
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.experiments.plan import Plan, PlanError
from testbed.experiments.runner import Runner, RunOne, completed

SLURM_FIELDS = {"partition": str, "account": str, "time": str, "options": list, "hosts": int}
CHECK_WAIT_S = 60.0


class SlurmError(RuntimeError):
    """Slurm refused or cannot do what was asked; the message says what and why."""


@dataclass(frozen=True)
class Settings:
    """What each block's ``sbatch`` asks for: partition, account, time limit (Slurm's
    ``--time`` format), extra ``sbatch`` options, and hosts per emulated run."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None
    options: tuple[str, ...] = ()
    hosts: int = 1

    def merged(self, partition: str | None, account: str | None, limit: str | None,
               options: Sequence[str]) -> Settings:
        """These settings with the command line's (which win; its options are added)."""
        return Settings(partition or self.partition, account or self.account,
                        limit or self.time, (*self.options, *options), self.hosts)


def settings_of(path: Path) -> Settings:
    """The ``[slurm]`` table of experiment file ``path`` (``PlanError`` naming the field for
    anything wrong in it); the defaults when it has none."""
    table = tomllib.loads(path.read_text()).get("slurm", {})
    if not isinstance(table, dict):
        raise PlanError(f"{path}: field 'slurm': a table")
    for name, value in table.items():
        kind = SLURM_FIELDS.get(name)
        if kind is None:
            raise PlanError(f"{path}: field 'slurm.{name}': unknown (known: "
                            f"{', '.join(SLURM_FIELDS)})")
        if isinstance(value, bool) or not isinstance(value, kind) or \
                (kind is list and not all(isinstance(v, str) for v in value)) or \
                (kind is int and value < 1):
            raise PlanError(f"{path}: field 'slurm.{name}': bad value {value!r}")
    return Settings(table.get("partition"), table.get("account"), table.get("time"),
                    tuple(table.get("options", ())), table.get("hosts", 1))


@dataclass(frozen=True)
class Block:
    """Block ``index`` (the array task id, from 1): round ``number`` of the plan, all of it
    (``cell`` None) or only the cell at place ``cell`` of that round's order."""

    index: int
    number: int
    cell: int | None


def blocks(plan: Plan, repeats: int) -> list[Block]:
    """The blocks of ``repeats`` rounds of ``plan``: a round each when emulated, a run each
    when simulated."""
    if plan.executor != "simulation":
        return [Block(n, n, None) for n in range(1, repeats + 1)]
    width = len(plan.cells)
    return [Block((n - 1) * width + i + 1, n, i) for n in range(1, repeats + 1)
            for i in range(width)]


def block_of(plan: Plan, index: int) -> Block:
    """The block whose array task id is ``index``."""
    if plan.executor != "simulation":
        return Block(index, index, None)
    width = len(plan.cells)
    return Block(index, (index - 1) // width + 1, (index - 1) % width)


@dataclass(frozen=True)
class Queued:
    """A block's task as ``squeue`` lists it: state, reason, time left and nodes."""

    state: str
    reason: str
    left: str
    nodes: str


def parse_queue(text: str) -> dict[int, tuple[str, Queued]]:
    """``squeue -h -r -o '%i|%T|%r|%L|%N'`` lines of array tasks (``JOB_TASK|...``) as
    {block index: (job id, entry)}; other lines (a whole array not yet split, ``JOB_[1-3]``)
    are expanded from the brackets."""
    out: dict[int, tuple[str, Queued]] = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5 or "_" not in parts[0]:
            continue
        job, _, tasks = parts[0].partition("_")
        entry = Queued(*parts[1:])
        for index in _indices(tasks.strip("[]").split("%")[0]):
            out[index] = (f"{job}_{index}", entry)
    return out


def _indices(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            continue
        out += range(int(low), int(high or low) + 1)
    return out


def array_spec(indices: Sequence[int]) -> str:
    """``--array`` of ``indices``: runs of consecutive numbers as ``a-b``."""
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def slurm_reason(text: str) -> str | None:
    """``STATE (Reason, exit CODE)`` from ``scontrol show job -o`` output, None without a
    JobState."""
    fields = dict(item.partition("=")[::2] for item in text.split())
    state = fields.get("JobState")
    if not state:
        return None
    reason = fields.get("Reason", "None")
    code = fields.get("ExitCode", "")
    return f"{state} ({reason}{f', exit {code}' if code else ''})"


@dataclass
class Experiment:
    """A ``--slurm`` experiment's directory and what it records of its jobs."""

    root: Path
    runner: Runner
    settings: Settings = field(default_factory=Settings)

    @property
    def dir(self) -> Path:
        """``ROOT/slurm``: what the Slurm side keeps."""
        return self.root / "slurm"

    @property
    def name(self) -> str:
        """The job name of every job of this experiment (its directory's, hashed)."""
        digest = hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:8]
        return f"testbed-{self.root.resolve().name[:40]}-{digest}"

    def all_blocks(self) -> list[Block]:
        """Every block of the plan."""
        return blocks(self.runner.plan, self.runner.plan.repeats)

    def done(self, block: Block) -> bool:
        """Whether every run of ``block`` is complete."""
        return not self.runner.tasks([block.number], block.cell)

    def jobs(self) -> list[dict[str, Any]]:
        """Every submission recorded: ``{"job", "blocks", "submitted"}``."""
        try:
            return json.loads((self.dir / "jobs.json").read_text())
        except (OSError, ValueError):
            return []

    def queue(self) -> dict[int, tuple[str, Queued]]:
        """This experiment's tasks ``squeue`` lists, by block index."""
        done = _slurm(["squeue", "-h", "-r", "-n", self.name, "-o", "%i|%T|%r|%L|%N"])
        return parse_queue(done.stdout)

    def last_job(self, index: int) -> str | None:
        """The task id (``JOB_INDEX``) block ``index`` last ran or was queued as."""
        found = [s["job"] for s in self.jobs() if index in s["blocks"]]
        return f"{found[-1]}_{index}" if found else None

    def why_failed(self, index: int) -> str:
        """Why block ``index``'s last job ended without completing its runs."""
        task = self.last_job(index)
        if task is None:
            return "never submitted"
        shown = subprocess.run(["scontrol", "show", "job", "-o", task], capture_output=True,
                               text=True)
        reason = slurm_reason(shown.stdout) if shown.returncode == 0 else None
        if reason is None:
            acct = subprocess.run(["sacct", "-n", "-P", "-X", "-j", task, "-o",
                                   "State,ExitCode"], capture_output=True, text=True)
            line = acct.stdout.strip().splitlines()[:1]
            reason = line[0].replace("|", ", exit ") if acct.returncode == 0 and line else None
        log = self.dir / "log" / f"{task}.out"
        try:
            tail = [ln for ln in log.read_text().splitlines() if ln.strip()][-1:]
        except OSError:
            tail = []
        said = f"; its log ends: {tail[0][:200]}" if tail else ""
        return f"job {task} {reason or 'ended without completing its runs'}{said} ({log})"

    def status(self) -> dict[str, list[tuple[Block, str]]]:
        """Every block as ``done``, ``queued``, ``running``, ``failed`` (submitted, no longer
        queued, not done) or ``pending`` (never submitted), each with a note: its task id and
        nodes or time left, or why it failed."""
        queue = self.queue() if self.jobs() else {}
        out: dict[str, list[tuple[Block, str]]] = {k: [] for k in ("done", "running", "queued",
                                                                    "failed", "pending")}
        for block in self.all_blocks():
            if self.done(block):
                out["done"].append((block, ""))
            elif block.index in queue:
                task, entry = queue[block.index]
                if entry.state in ("RUNNING", "COMPLETING"):
                    out["running"].append((block, f"{task} on {entry.nodes}, {entry.left} left"))
                else:
                    why = "" if entry.reason in ("None", "") else f" ({entry.reason})"
                    out["queued"].append((block, f"{task} {entry.state.lower()}{why}"))
            elif self.last_job(block.index) is not None:
                out["failed"].append((block, self.why_failed(block.index)))
            else:
                out["pending"].append((block, ""))
        return out

    def sbatch_args(self, indices: Sequence[int], after: str | None) -> list[str]:
        """The ``sbatch`` command line of a job array of blocks ``indices``."""
        s = self.settings
        args = ["sbatch", "--parsable", "--job-name", self.name,
                "--array", array_spec(indices),
                "--output", str(self.dir / "log" / "%A_%a.out")]
        args += [f"--partition={s.partition}"] if s.partition else []
        args += [f"--account={s.account}"] if s.account else []
        args += [f"--time={s.time}"] if s.time else []
        if self.runner.plan.executor == "simulation":
            args += ["--ntasks=1", "--cpus-per-task=1"]
        else:
            args += ["--exclusive", f"--nodes={s.hosts}"]
            pes = [int(dict(c.options)["pes"]) for c in self.runner.plan.cells
                   if "pes" in dict(c.options)]
            if pes and s.hosts == 1:
                args += [f"--mincpus={max(pes)}"]
        args += [f"--dependency=afterok:{after}", "--kill-on-invalid-dep=yes"] if after else []
        return [*args, *s.options, str(self.dir / "block.sh")]

    def submit(self, run_one: RunOne, progress: Any = sys.stderr) -> list[int]:
        """Submit every block neither done nor queued (saying why each failed one failed);
        return the blocks submitted.  Checks first that the compute nodes can write the
        directory."""
        plan = self.runner.plan
        if plan.until_ci is not None:
            raise SlurmError("until_ci decides on more rounds from the results of the last "
                             "ones; with --slurm give a fixed number of repeats")
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "log").mkdir(exist_ok=True)
        _write_pickle(self.dir / "plan.pickle",
                      {"plan": plan, "run_one": run_one, "code": self.runner.code,
                       "pes": self.runner.pes})
        script = self.dir / "block.sh"
        script.write_text("#!/bin/sh\n# written by testbed experiment run --slurm\nexec "
                          + shlex.join([sys.executable, "-m", "testbed.cli", "experiment",
                                        "block", str(self.root.resolve())]) + "\n")
        state = self.status()
        for block, why in state["failed"]:
            print(f"block {block.index} (round {block.number}) failed: {why}; submitted again",
                  file=progress)
        todo = [b.index for b, _ in state["failed"] + state["pending"]]
        if not todo:
            return []
        after = self.check_shared(progress)
        done = _slurm(self.sbatch_args(todo, after))
        job = done.stdout.strip().split(";")[0]
        records = self.jobs() + [{"job": job, "blocks": todo,
                                  "submitted": time.strftime("%Y-%m-%d %H:%M:%S %z")}]
        _write_text(self.dir / "jobs.json", json.dumps(records, indent=1) + "\n")
        return todo

    def check_shared(self, progress: Any) -> str | None:
        """Check that a job on the compute nodes can write this directory: a one-CPU job
        writes a mark here.  None once it did; its job id when it is still queued after
        ``CHECK_WAIT_S`` (the blocks then wait for it to succeed); ``SlurmError`` when it
        ran and left no mark."""
        token = hashlib.sha256(os.urandom(16)).hexdigest()[:12]
        mark = self.dir / f".shared-{token}"
        check = self.dir / f".shared-{token}.sh"
        check.write_text("#!/bin/sh\nexec " + shlex.join(["touch", str(mark)]) + "\n")
        s = self.settings
        args = ["sbatch", "--parsable", "--job-name", f"{self.name}-check", "--ntasks=1",
                "--cpus-per-task=1", "--time=5", "--output=/dev/null",
                *([f"--partition={s.partition}"] if s.partition else []),
                *([f"--account={s.account}"] if s.account else []), str(check)]
        job = _slurm(args).stdout.strip().split(";")[0]
        try:
            deadline = time.monotonic() + CHECK_WAIT_S
            while time.monotonic() < deadline:
                if mark.exists():
                    return None
                listed = _slurm(["squeue", "-h", "-j", job, "-o", "%T"], check=False)
                if listed.returncode == 0 and not listed.stdout.strip():
                    time.sleep(1.0)
                    if mark.exists():
                        return None
                    raise SlurmError(
                        f"{self.root.resolve()}: a job on the compute nodes (check job {job}) "
                        "could not write this directory; --slurm needs the experiment's "
                        "directory on a file system the nodes share (give --out on one)")
                time.sleep(0.5)
            print(f"the check that the nodes can write {self.root} (job {job}) is still "
                  "queued; the blocks wait for it", file=progress)
            return job
        finally:
            check.unlink(missing_ok=True)
            mark.unlink(missing_ok=True)

    def cancel(self) -> list[str]:
        """Cancel this experiment's queued and running tasks; their task ids."""
        tasks = [task for task, _ in self.queue().values()]
        if tasks:
            _slurm(["scancel", *tasks])
        return sorted(tasks)


def load_submission(root: Path) -> dict[str, Any]:
    """What ``submit`` pickled in ``root/slurm/plan.pickle``: plan, run_one, code and pes;
    ``SlurmError`` when the directory holds no ``--slurm`` experiment."""
    try:
        return pickle.loads((root / "slurm" / "plan.pickle").read_bytes())
    except OSError:
        raise SlurmError(f"{root}: not an experiment run with --slurm (no slurm/plan.pickle)"
                         ) from None


def run_block(root: Path, index: int, code: str) -> int:
    """Run block ``index`` of the ``--slurm`` experiment in ``root`` (what its array task
    runs): its runs not yet complete, in the design's order; 0 when all of them are complete
    afterwards, 1 otherwise.  ``code`` is this code's version: a block of other code refuses
    (its results would be recorded under a version that did not make them)."""
    saved = load_submission(root)
    if saved["code"] != code:
        raise SlurmError(f"{root}: submitted with code {saved['code']}, this is {code}; "
                         "submit again (testbed experiment run ... --slurm)")
    runner = Runner(saved["plan"], root, saved["run_one"], code, saved["pes"])
    block = block_of(runner.plan, index)
    tasks = runner.tasks([block.number], block.cell)
    runner.run_tasks(tasks, len(tasks))
    return 0 if all(completed(t.run_dir) for t in tasks) else 1


def _slurm(args: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise SlurmError(f"{args[0]}: not found (--slurm needs the Slurm commands; "
                         "scripts/slurm-local starts a one-host Slurm)") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{args[0]}: Slurm's controller did not answer within 60 s") from None
    if check and done.returncode != 0:
        said = done.stderr.strip() or f"exit {done.returncode}"
        raise SlurmError(said if said.startswith(f"{args[0]}:") else f"{args[0]}: {said}")
    return done


def _write_pickle(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(pickle.dumps(data))
    os.replace(tmp, path)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)

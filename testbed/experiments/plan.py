"""What an experiment runs: workloads, cells (a workload, a scheduler and run options), repeats
and their order, read from an experiment file or built by ``testbed compare``.

An experiment file is TOML::

    executor = "emulation"          # or "simulation"
    repeats = 5
    order = "interleaved"           # or "random": each round in a seeded random order
    seed = 1                        # of the random order
    reference = "gang"              # ratios are taken against this scheduler
    metrics = ["makespan", "response_mean_all"]
    family = "all"                  # or "metric": what the Holm correction runs over
    pair_by = "seed"                # or "round": which runs are analysed as pairs
    until_ci = 0.05                 # add rounds until every interval is this narrow ...
    budget = 3600                   # ... within this many seconds of runs in all
    max_repeats = 20                # ... and this many repeats

    [[workload]]
    name = "demo-mix"
    generator = "mix"               # or "lublin"; or file = "path/to/workload"
    jobs = 8
    load = 1.5
    compress = 250
    work_max = 3600
    seeds = [2]                     # each seed is a workload of its own

    [factors]                       # every combination is a cell
    scheduler = ["fcfs", "gang"]
    mpl = [2, 3]

    [options]                       # the same for every cell
    timeslice = 0.2

    [slurm]                         # with --slurm (experiments.slurm); the command line wins
    partition = "batch"
    account = "sched"
    time = "1:00:00"                # each block's limit
    options = ["--constraint=ib"]   # more sbatch options
    hosts = 1                       # hosts per emulated run (exclusive nodes per block)

Factor and option names are ``testbed run`` (or ``simulate``) options without the dashes
(``job_timeout`` is ``--job-timeout``); ``true`` gives a flag.  A generator's ``pes`` defaults
to the machine's PEs.  Under the simulation executor each repeat of a generated workload uses
the next seed (a simulated run of one workload is deterministic); under emulation every repeat
runs the same workload unless ``vary_seed = true``.  Runs of the same workload seed are
analysed as pairs when the seed changes with the repeat (``pair_by = "seed"``, the default);
``pair_by = "round"`` pairs the runs of each round instead (a block of the interleaved design:
drift between rounds cancels, but 5 pairs cannot reach p < 0.05, 6 can).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.experiments import figures
from testbed.experiments.comparison import FAMILIES, FAMILY
from testbed.workloads import lublin
from testbed.workloads.mix import MixParams, generate_mix

GENERATORS = {"mix": ("jobs", "pes", "load", "compress", "work_min", "work_max", "io_blocks"),
              "lublin": ("jobs", "pes", "load", "compress", "daily_cycle")}
EXECUTORS = ("emulation", "simulation")
ORDERS = ("interleaved", "random")
PAIR_BY = ("seed", "round")
MAX_REPEATS = 20


class PlanError(ValueError):
    """A bad experiment file or workload spec: the message names the file and field."""


@dataclass(frozen=True)
class WorkloadSpec:
    """A workload: a file, or a generator with its parameters (the seed is given per run)."""

    name: str
    file: Path | None = None
    generator: str | None = None
    params: tuple[tuple[str, Any], ...] = ()

    def text(self, seed: int | None, pes: int) -> str:
        """The workload file's text: the file's, or the generator's for ``seed`` on a machine
        of ``pes`` PEs (unless the spec gives ``pes``)."""
        if self.file is not None:
            return self.file.read_text()
        params = {"pes": pes, **dict(self.params)}
        seed = 1 if seed is None else seed
        if self.generator == "mix":
            return generate_mix(MixParams(seed=seed, load=params.pop("load", 0.75), **params))
        compress = params.pop("compress", 100.0)
        daily = params.pop("daily_cycle", True)
        jobs = lublin.generate(params["jobs"], params["pes"], seed, params.get("load"),
                               daily_cycle=daily)
        return lublin.workload_text(jobs, params["pes"], seed, params.get("load"), compress,
                                    daily_cycle=daily)

    def identity(self) -> dict[str, Any]:
        """What decides this workload's content (a file's by its bytes)."""
        if self.file is not None:
            return {"file": str(self.file),
                    "sha256": hashlib.sha256(self.file.read_bytes()).hexdigest()}
        return {"generator": self.generator, **dict(self.params)}


def parse_generator(text: str, where: str = "workload") -> tuple[WorkloadSpec, int | None]:
    """A spec written ``mix:jobs=8,load=1.5,seed=2`` (or ``lublin:...``) and its seed, if
    given; ``PlanError`` for anything else."""
    kind, _, rest = text.partition(":")
    if kind not in GENERATORS:
        raise PlanError(f"{where}: {text!r} is neither a file nor a generator "
                        f"({', '.join(GENERATORS)}:NAME=VALUE,...)")
    raw: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise PlanError(f"{where}: {item!r}: expected NAME=VALUE")
        raw[key.strip().replace("-", "_")] = _scalar(value.strip())
    seed = raw.pop("seed", None)
    if seed is not None and not isinstance(seed, int):
        raise PlanError(f"{where}: field 'seed': expected an integer, got {seed!r}")
    return _generator_spec(kind, kind, raw, where), seed


def _scalar(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def _generator_spec(name: str, kind: str, params: dict[str, Any], where: str) -> WorkloadSpec:
    known = GENERATORS[kind]
    for key, value in params.items():
        if key not in known:
            raise PlanError(f"{where}: field {key!r}: not a parameter of the {kind} generator "
                            f"(known: {', '.join(known)}, seed)")
        wanted = bool if key == "daily_cycle" else (int if key in ("jobs", "pes", "io_blocks")
                                                    else (int, float))
        if isinstance(value, bool) != (wanted is bool) or not isinstance(value, wanted):
            raise PlanError(f"{where}: field {key!r}: bad value {value!r}")
    if "jobs" not in params:
        raise PlanError(f"{where}: field 'jobs': the {kind} generator needs it")
    spec = WorkloadSpec(name, generator=kind, params=tuple(sorted(params.items())))
    try:
        spec.text(1, params.get("pes", 1) if isinstance(params.get("pes"), int) else 1)
    except (ValueError, TypeError) as err:
        raise PlanError(f"{where}: {err}") from None
    return spec


@dataclass(frozen=True)
class Cell:
    """One combination of settings: a workload (and its seed), a scheduler and run options.
    ``label`` names it in tables (a scheduler named twice gets ``gang#2``)."""

    workload: WorkloadSpec
    seed: int | None
    scheduler: str
    options: tuple[tuple[str, Any], ...]
    label: str

    def settings(self) -> dict[str, Any]:
        """The settings as plain data (what the results' columns show)."""
        return {"workload": self.workload.name, "seed": self.seed,
                "scheduler": self.scheduler, **dict(self.options)}

    def key(self, executor: str, code: str) -> str:
        """A short hash of everything that decides this cell's results: settings, the
        workload's content, the executor and the code version."""
        ident = {"settings": self.settings(), "workload": self.workload.identity(),
                 "executor": executor, "code": code, "label": self.label}
        return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()
                              ).hexdigest()[:10]

    def dirname(self, executor: str, code: str) -> str:
        """The cell's directory name: readable settings and the key."""
        parts = [self.workload.name, *([f"s{self.seed}"] if self.seed is not None else []),
                 self.label.replace("#", "-"), *(f"{k}{v}" for k, v in self.options)]
        slug = re.sub(r"[^A-Za-z0-9_.=-]+", "_", "-".join(str(p) for p in parts))[:80]
        return f"{slug}-{self.key(executor, code)}"

    def flags(self) -> list[str]:
        """The run options as command-line arguments (``--job-timeout 60``; a true flag alone)."""
        out: list[str] = []
        for name, value in self.options:
            flag = "--" + name.replace("_", "-")
            if value is True:
                out.append(flag)
            elif value is not False:
                out += [flag, str(value)]
        return out

    def run_seed(self, repeat: int, vary: bool) -> int | None:
        """The workload seed of repeat ``repeat`` (1-based): the cell's, or the cell's plus
        ``repeat - 1`` when seeds vary by repeat."""
        if self.workload.generator is None:
            return None
        base = 1 if self.seed is None else self.seed
        return base + repeat - 1 if vary else base


def _one_of(where: str, field: str, value: object, allowed: Sequence[str]) -> None:
    """``PlanError`` naming ``field`` when ``value`` is not one of ``allowed``."""
    if value not in allowed:
        raise PlanError(f"{where}: field '{field}': {value!r} is not one of "
                        f"{', '.join(allowed)}")


@dataclass
class Plan:
    """An experiment: its cells, repeats and run order, the figures it reports, and the
    reference scheduler for ratios."""

    cells: list[Cell]
    executor: str = "emulation"
    repeats: int = 3
    order: str = "interleaved"
    seed: int = 1
    reference: str | None = None
    metrics: list[str] = field(default_factory=lambda: list(figures.DEFAULT))
    vary_seed: bool | None = None
    until_ci: float | None = None
    budget: float | None = None
    max_repeats: int | None = None
    family: str = FAMILY
    pair_by: str = "seed"

    @property
    def varies_seed(self) -> bool:
        """Whether each repeat of a generated workload uses the next seed."""
        return self.executor == "simulation" if self.vary_seed is None else self.vary_seed

    @property
    def repeat_cap(self) -> int:
        """The most repeats ``until_ci`` may add rounds up to: ``max_repeats``, by default
        ``MAX_REPEATS`` (or ``repeats`` when more)."""
        return self.max_repeats if self.max_repeats is not None else max(MAX_REPEATS,
                                                                         self.repeats)

    def round(self, number: int) -> list[Cell]:
        """The cells of round ``number`` (1-based) in the order they run: as listed, or
        shuffled with a PRNG seeded by the plan's seed and the round."""
        cells = list(self.cells)
        if self.order == "random":
            random.Random(f"{self.seed}:{number}").shuffle(cells)
        return cells

    def check(self, where: str) -> None:
        """``PlanError`` for settings that cannot work together."""
        _one_of(where, "executor", self.executor, EXECUTORS)
        _one_of(where, "order", self.order, ORDERS)
        if self.repeats < 1:
            raise PlanError(f"{where}: field 'repeats': must be >= 1, got {self.repeats}")
        if self.until_ci is not None and not 0 < self.until_ci < 1:
            raise PlanError(f"{where}: field 'until_ci': a fraction in (0, 1), "
                            f"got {self.until_ci}")
        if self.budget is not None and self.budget <= 0:
            raise PlanError(f"{where}: field 'budget': seconds > 0, got {self.budget}")
        if self.max_repeats is not None and (isinstance(self.max_repeats, bool) or not
                                             isinstance(self.max_repeats, int)
                                             or self.max_repeats < self.repeats):
            raise PlanError(f"{where}: field 'max_repeats': an integer >= repeats "
                            f"({self.repeats}), got {self.max_repeats!r}")
        _one_of(where, "family", self.family, FAMILIES)
        _one_of(where, "pair_by", self.pair_by, PAIR_BY)
        try:
            figures.check_names(self.metrics)
        except ValueError as err:
            raise PlanError(f"{where}: field 'metrics': {err}") from None
        schedulers = {c.scheduler for c in self.cells}
        if self.reference is not None and self.reference not in {c.label for c in self.cells} \
                and self.reference not in schedulers:
            raise PlanError(f"{where}: field 'reference': {self.reference!r} is not a scheduler "
                            "of the experiment")
        files = [c for c in self.cells if c.workload.file is not None]
        if self.executor == "simulation" and files and (self.repeats > 1 or self.until_ci):
            raise PlanError(
                f"{where}: a simulated run of one workload file is deterministic, so its repeats "
                f"would all be equal ({files[0].workload.name}); give a generator "
                "(mix:..., lublin:...) whose seed changes with each repeat, or repeats = 1")


def labels(schedulers: list[str]) -> list[str]:
    """A label per scheduler: its name, and ``name#2``, ``name#3``... when named again."""
    seen: dict[str, int] = {}
    out = []
    for name in schedulers:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


TOP_KEYS = {"executor", "repeats", "order", "seed", "reference", "metrics", "vary_seed",
            "until_ci", "budget", "max_repeats", "family", "pair_by", "workload", "factors",
            "options", "description", "slurm"}


def load_plan(path: Path) -> Plan:
    """The plan of experiment file ``path`` (TOML); ``PlanError`` naming the file and the field
    for anything wrong in it."""
    where = str(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as err:
        raise PlanError(f"{where}: {err.strerror or err}") from None
    except tomllib.TOMLDecodeError as err:
        raise PlanError(f"{where}: not TOML: {err}") from None
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise PlanError(f"{where}: field {unknown[0]!r}: unknown (known: "
                        f"{', '.join(sorted(TOP_KEYS))})")
    workloads = _workloads(data.get("workload"), path)
    factors = data.get("factors", {})
    options = data.get("options", {})
    if not isinstance(factors, dict) or not isinstance(options, dict):
        raise PlanError(f"{where}: [factors] and [options] must be tables")
    schedulers = factors.get("scheduler")
    if not isinstance(schedulers, list) or not schedulers or \
            not all(isinstance(s, str) for s in schedulers):
        raise PlanError(f"{where}: field 'factors.scheduler': a list of scheduler names")
    varied: list[tuple[str, list[Any]]] = []
    for name, values in factors.items():
        if name == "scheduler":
            continue
        if not isinstance(values, list) or not values:
            raise PlanError(f"{where}: field 'factors.{name}': a non-empty list of values")
        if name in options:
            raise PlanError(f"{where}: field 'options.{name}': also a factor")
        varied.append((name, values))
    for name, value in [*options.items(), *((n, v) for n, vs in varied for v in vs)]:
        if not isinstance(value, str | int | float | bool):
            raise PlanError(f"{where}: field {name!r}: a value must be a string, number or "
                            f"boolean, got {value!r}")
    cells = []
    for spec, seeds in workloads:
        for seed in seeds:
            for combo in itertools.product(*(values for _, values in varied)):
                chosen = dict(zip((n for n, _ in varied), combo, strict=True))
                opts = tuple(sorted({**options, **chosen}.items()))
                for scheduler, lb in zip(schedulers, labels(schedulers), strict=True):
                    cells.append(Cell(spec, seed, scheduler, opts, lb))
    metrics = data.get("metrics", list(figures.DEFAULT))
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        raise PlanError(f"{where}: field 'metrics': a list of metric names")
    plan = Plan(cells, executor=data.get("executor", "emulation"),
                repeats=data.get("repeats", 3), order=data.get("order", "interleaved"),
                seed=data.get("seed", 1), reference=data.get("reference", schedulers[0]),
                metrics=metrics, vary_seed=data.get("vary_seed"),
                until_ci=data.get("until_ci"), budget=data.get("budget"),
                max_repeats=data.get("max_repeats"),
                family=data.get("family", FAMILY), pair_by=data.get("pair_by", "seed"))
    for name, kind in (("repeats", int), ("seed", int), ("executor", str), ("order", str)):
        value = getattr(plan, name)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise PlanError(f"{where}: field {name!r}: expected {kind.__name__}, got {value!r}")
    plan.check(where)
    return plan


def _workloads(entries: Any, path: Path) -> list[tuple[WorkloadSpec, list[int | None]]]:
    where = str(path)
    if not isinstance(entries, list) or not entries:
        raise PlanError(f"{where}: field 'workload': at least one [[workload]] table")
    out: list[tuple[WorkloadSpec, list[int | None]]] = []
    names: set[str] = set()
    for index, entry in enumerate(entries, start=1):
        at = f"{where}: workload {index}"
        entry = dict(entry)
        name = entry.pop("name", None)
        seeds = entry.pop("seeds", [entry.pop("seed")] if "seed" in entry else [None])
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise PlanError(f"{at}: field 'name': letters, digits, '_', '.' or '-'")
        if name in names:
            raise PlanError(f"{at}: field 'name': {name!r} is used twice")
        names.add(name)
        if not isinstance(seeds, list) or not seeds or \
                not all(s is None or (isinstance(s, int) and not isinstance(s, bool))
                        for s in seeds):
            raise PlanError(f"{at}: field 'seeds': a list of integers")
        if "file" in entry:
            file = (path.parent / entry.pop("file")).resolve()
            extra = next(iter(entry), "seeds" if seeds != [None] else None)
            if extra is not None:
                raise PlanError(f"{at}: field {extra!r}: a workload file takes no generator "
                                "fields or seeds")
            if not file.is_file():
                raise PlanError(f"{at}: field 'file': {file}: no such file")
            out.append((WorkloadSpec(name, file=file), [None]))
            continue
        kind = entry.pop("generator", None)
        if kind not in GENERATORS:
            raise PlanError(f"{at}: field 'generator': one of {', '.join(GENERATORS)} "
                            "(or give a file)")
        out.append((_generator_spec(name, kind, entry, at),
                    [1 if s is None else s for s in seeds]))
    return out


def code_version() -> str:
    """The testbed's version and a hash of its source (Python, C, data), so results of
    different code are never taken for each other."""
    from testbed import __version__, native

    # The package and its C sources, named as installed: a checkout keeps them in native/ beside
    # the package (testbed.native maps there), a wheel in testbed/native/.
    root = Path(__file__).resolve().parent.parent
    here = native.DIR.resolve()
    files = {path.relative_to(root).as_posix(): path for path in root.rglob("*")}
    files.update({f"native/{path.relative_to(here).as_posix()}": path for path in here.rglob("*")})
    digest = hashlib.sha256()
    for name, path in sorted(files.items()):
        if path.suffix in (".py", ".c", ".h", ".toml") and "build" not in path.parts:
            digest.update(name.encode())
            digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:12]}"

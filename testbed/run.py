"""The run library: what a run needs, checked, set up, run and taken down again.

One way to run::

    prepared = run.prepare(options, workload_path_or_workload)   # checked: UsageError
    result = run.execute(prepared, out)                          # status, run_dir, summary

``Options`` (``testbed.run_options``) holds every setting of a run, its default, text form
and choices (argparse takes them from there), made from parsed arguments (``Options.of``) or
from a mapping of plain values (``Options.from_mapping``: experiment cells, benchmarks); the
ranges are checked here, each in one place with one message.
``prepare`` checks the options and the workload against the machine (emulated) or the
simulator, and ``execute`` runs it into a new run directory, owning what the run needs on
the way (cgroups and a swap file, the service's socket, the executor, the driver) and
releasing it on every exit path.  The ``testbed`` command is a thin layer of argparse over
this module; ``testbed mpirun`` without a service, the service, experiments and the
benchmarks call it in-process.  ``drive`` runs a driver for benchmarks that bring their own
policy object or executor.  No other module builds a ``Driver``.

Exit codes are in ``testbed.exit_codes``; ``exit_code`` maps an error to its code and
``Result.exit_code`` a run's status.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import platform
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed import __version__
from testbed.class_tables import ClassTableError, load_class_table
from testbed.control import Control
from testbed.driver import Driver, new_run_id
from testbed.emulation import injection, shim
from testbed.emulation.commands import check_commands, checks_commands_here
from testbed.emulation.executor import EmulationExecutor
from testbed.emulation.memory import (
    MemorySetupError,
    NodeCgroups,
    SwapFile,
    cgroup_parent,
    remove_swap,
)
from testbed.emulation.mpi_info import MpiInfo, MpiNotFound, detect_mpi
from testbed.emulation.paging import may_page_out
from testbed.emulation.remote import NodesError
from testbed.events import EventLog, WriteFailed, read_events
from testbed.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_NO_MPI,
    EXIT_UNAVAILABLE,
    EXIT_WRITE_FAILED,
    job_exit_code,
    run_exit_code,
)
from testbed.hang import describe
from testbed.hosts import Host, HostsError, read_hostfile, slurm_hosts
from testbed.machine import Machine, build_cluster, build_machine
from testbed.memory_history import DEFAULT_PATH as DEFAULT_HISTORY
from testbed.memory_history import MemoryHistory
from testbed.owners import OwnerStream
from testbed.policies import POLICIES, MemoryAdmission, Policy, PolicyConfig, PrimeTime, make_policy
from testbed.policies.matrix import UNBOUNDED
from testbed.ports import Executor, Stalled
from testbed.results.metrics import job_rows
from testbed.results.report import write_results
from testbed.run_options import CHOICES, Options, UsageError
from testbed.simulation.executor import SimulationExecutor
from testbed.workloads.files import JobSpec, Workload, WorkloadError, load_workload
from testbed.workloads.swf import SwfError, trace_workload

SWAP_DIR = Path("/var/tmp")


def exit_code(err: BaseException) -> int | None:
    """The exit code of a run ended by ``err`` (None: not one of the run's own errors)."""
    if isinstance(err, UsageError):
        return EXIT_BAD_INPUT
    if isinstance(err, (MpiNotFound, shim.ShimBuildError)):
        return EXIT_NO_MPI
    if isinstance(err, (MemorySetupError, NodesError)):
        return EXIT_UNAVAILABLE
    if isinstance(err, WriteFailed):
        return EXIT_WRITE_FAILED
    return None


def describe_error(err: BaseException) -> str:
    """The one line that says why a run could not go on."""
    if isinstance(err, NodesError):
        return f"cannot start the node managers: {err}"
    return str(err)


def exit_with(err: Exception, prefix: str) -> int:
    """Say on stderr, in one line after ``prefix``, why a run could not go on, and return its
    exit code; an error that is not one of the run's own is raised again."""
    code = exit_code(err)
    if code is None:
        raise err
    print(f"{prefix}: {describe_error(err)}", file=sys.stderr)
    return code


def check_policy_options(options: Options, schedulers: list[str]) -> None:
    """Refuse unknown schedulers and settings out of range (``UsageError``)."""
    for name in schedulers:
        if name not in POLICIES:
            raise UsageError(f"unknown scheduler {name!r} (known: {', '.join(sorted(POLICIES))})")
    for option, words in CHOICES.items():
        if getattr(options, option) not in words:
            raise UsageError(f"--{option}: expected one of {', '.join(words)}, got "
                             f"{getattr(options, option)!r}")
    if options.mpl < 0:
        raise UsageError(f"--mpl must be a number of rows >= 1, or unbounded, got {options.mpl}")
    for option in ("timeslice", "job_timeout", "prime_shift", "prime_large_limit",
                   "prime_small_limit"):
        value = getattr(options, option)
        if value is not None and value <= 0:
            raise UsageError(f"--{option.replace('_', '-')} must be > 0, got {value}")
    for option in ("variation", "balance", "migration_delay", "defrag"):
        value = getattr(options, option)
        if value < 0 or not math.isfinite(value):
            raise UsageError(f"--{option.replace('_', '-')} must be >= 0, got {value}")
    if not 1 <= options.app_max <= options.abs_app_max:
        raise UsageError(f"need 1 <= --app-max <= --abs-app-max, got {options.app_max} and "
                         f"{options.abs_app_max}")
    for option in ("prime_large", "prime_free"):
        value = getattr(options, option)
        if value is not None and value < 0:
            raise UsageError(f"--{option.replace('_', '-')} must be >= 0, got {value}")


def history_of(options: Options) -> MemoryHistory | None:
    """The memory history the run reads and updates (default with admission), if any."""
    path = options.memory_history
    if path is None and options.memory_admission is not None:
        path = DEFAULT_HISTORY
    if path is None:
        return None
    try:
        return MemoryHistory(path)
    except ValueError as err:
        raise UsageError(str(err)) from None


def check_emulation(options: Options, schedulers: list[str]) -> Machine:
    """Check ``options`` for emulated runs under ``schedulers``; the machine they describe.
    ``UsageError`` for bad input, ``MemorySetupError`` for memory the machine cannot give."""
    check_policy_options(options, schedulers)
    if options.mpl == UNBOUNDED:
        raise UsageError("--mpl unbounded is for the simulator only: real ranks stay in memory "
                         "while stopped, so rows without limit would start every job that "
                         "arrives and measure paging rather than scheduling; give a number")
    if options.spin is not None and options.spin < 0:
        raise UsageError(f"--spin must be >= 0, got {options.spin}")
    if options.hang_after < 0 or not math.isfinite(options.hang_after):
        raise UsageError(f"--hang-after must be >= 0 (0: never), got {options.hang_after}")
    try:
        injection.describe(os.environ)
    except ValueError as err:
        raise UsageError(f"environment: {err}") from None
    if options.memory_admission is not None and options.memory_admission <= 0:
        raise UsageError(f"--memory-admission must be > 0, got {options.memory_admission}")
    history_of(options)
    if options.node_mem is not None:
        cgroup_parent()
        paged = [name for name in schedulers if POLICIES[name].pages_preempted]
        if paged and not may_page_out():
            raise MemorySetupError(
                f"--node-mem under {', '.join(paged)} moves each preempted job to swap with "
                "process_madvise(MADV_PAGEOUT), which needs CAP_SYS_NICE (root); without it "
                "run another scheduler, whose preempted jobs the kernel pages only as memory "
                "runs short")
    if options.swap is not None and os.geteuid() != 0:
        raise MemorySetupError("--swap needs root (swapon is never delegated to users; "
                               "--node-mem works without it in a delegated cgroup)")
    hosts = _hosts(options)
    if hosts is not None:
        return build_cluster(*hosts)
    try:
        return build_machine(options.pes, options.nodes)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _hosts(options: Options) -> tuple[tuple[Host, ...], str | None] | None:
    """The hosts and hydra launcher of a run across hosts (a hostfile, or the Slurm
    allocation we are in when no machine size was given), or None for one host."""
    try:
        if options.hosts is not None:
            hosts, launcher = read_hostfile(options.hosts), options.launcher
        elif (options.pes is None and options.nodes == 1
              and (found := slurm_hosts()) is not None):
            hosts, launcher = found, options.launcher or "slurm"
        else:
            return None
    except HostsError as err:
        raise UsageError(str(err)) from None
    where = f"--hosts {options.hosts}" if options.hosts else "a Slurm allocation"
    for given, what in ((options.pes is not None, "--pes"), (options.nodes != 1, "--nodes"),
                        (options.node_mem is not None, "--node-mem")):
        if given:
            raise UsageError(f"{what} cannot be combined with {where} (the hosts' slots are the "
                             "PEs; node memory is emulated on one host only)")
    return hosts, launcher


def check_simulation(options: Options, schedulers: list[str], pes: int) -> None:
    """Refuse bad policy options, negative costs and schedulers the simulator cannot run (on
    ``pes`` PEs)."""
    check_policy_options(options, schedulers)
    for option in ("switch_cost", "launch_cost"):
        if getattr(options, option) < 0:
            raise UsageError(f"--{option.replace('_', '-')} must be >= 0, "
                             f"got {getattr(options, option)}")
    for name in schedulers:
        if not POLICIES[name].simulable:
            raise UsageError(f"{name}: the simulator has no model of how real ranks "
                             "communicate and share CPUs, which this policy depends on; emulate "
                             "it with testbed run (simulable: " + ", ".join(
                                 sorted(n for n, c in POLICIES.items() if c.simulable)) + ")")
        _make_policy(name, _policy_config(options, name, pes, None))


def simulated_pes(options: Options) -> int:
    """The PEs of a simulated machine: ``pes``, else the CPUs in the affinity mask."""
    pes = options.pes if options.pes is not None else len(os.sched_getaffinity(0))
    if pes < 1:
        raise UsageError(f"--pes must be >= 1, got {pes}")
    return pes


def check_owners(options: Options, schedulers: list[str], workload: Workload) -> None:
    """Refuse owners (``owners`` or owner lines) under a scheduler without them."""
    for scheduler in schedulers:
        if POLICIES[scheduler].supports_owners:
            continue
        if options.owners is not None:
            raise UsageError(f"--owners: the {scheduler} scheduler has no workstation owners "
                             "(afcfs and lgfs have)")
        if workload.owners:
            raise UsageError(f"{workload.path}:{workload.owners[0].line}: owner lines need a "
                             f"scheduler with workstation owners (afcfs, lgfs), not {scheduler}")


def new_run_dir(out: Path | None, label: str) -> Path:
    """Make the run directory ``out``, which must not hold anything (runs are never
    overwritten); by default a new ``runs/DATE-LABEL``, with ``-2``, ``-3``... added when
    another run started in the same second took the name (the directory is made in one
    step, so two runs started at once never share one)."""
    if out is None:
        base = Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"
        base.parent.mkdir(parents=True, exist_ok=True)
        for n in itertools.count(1):
            path = base if n == 1 else base.with_name(f"{base.name}-{n}")
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return path
    assert out is not None
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out}: exists and is not empty (runs are never overwritten)")
    out.mkdir(parents=True, exist_ok=True)
    return out


def load(path: str | Path, timeslice: float, machine: Machine) -> Workload:
    """The workload file at ``path`` (``bsp`` lines inherit ``timeslice``) for an emulated run
    on ``machine``, checked to fit it, to hold jobs and, when its jobs are launched on this
    host, to name programs that exist here as the launcher will look for them (``PATH``, or
    relative to the current directory)."""
    try:
        workload = load_workload(str(path), timeslice)
        workload.check_fits(machine.pes)
        if checks_commands_here(machine):
            check_commands(workload.path, workload.jobs, os.environ, os.getcwd())
    except WorkloadError as err:
        raise UsageError(str(err)) from None
    if not workload.jobs:
        raise UsageError(f"{path}: no jobs")
    return workload


def simulated_workload(path: str | Path, options: Options, pes: int) -> Workload:
    """The workload to simulate: an SWF trace (``.swf``) or a workload file whose jobs all
    have a work (bsp ``--work``), uncompressed when asked, with perfect estimates when asked."""
    try:
        if str(path).endswith(".swf"):
            workload = trace_workload(str(path), pes, options.estimates == "perfect")
        else:
            workload = load_workload(str(path), options.timeslice)
            workload.check_fits(pes)
    except (WorkloadError, SwfError) as err:
        raise UsageError(str(err)) from None
    if not workload.jobs:
        raise UsageError(f"{path}: no jobs")
    return _for_simulation(workload, options, path)


def _for_simulation(workload: Workload, options: Options, path: str | Path) -> Workload:
    """``workload`` (read from ``path``) checked to give every job a work, uncompressed when
    asked, with perfect estimates when asked."""
    missing = next((job for job in workload.jobs if job.work is None), None)
    if missing is not None:
        raise UsageError(f"{path}:{missing.line}: field 'command': the simulator needs "
                         "each job's work (a bsp line's --work, or an SWF runtime)")
    if options.uncompress and workload.compress != 1:
        workload = _uncompressed(workload)
    return with_estimates(workload, options.estimates)


def _uncompressed(workload: Workload) -> Workload:
    factor = workload.compress

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * factor

    jobs = [dataclasses.replace(j, arrival=j.arrival * factor, work=scaled(j.work),
                                limit=scaled(j.limit), estimate=scaled(j.estimate))
            for j in workload.jobs]
    owners = [dataclasses.replace(o, arrival=o.arrival * factor, duration=o.duration * factor)
              for o in workload.owners]
    return Workload(workload.path, jobs, {**workload.meta, "compress": "1",
                                           "uncompressed_from": str(factor)}, owners)


def with_estimates(workload: Workload, how: str) -> Workload:
    """``workload`` with perfect runtime estimates (each job's work) when ``how`` says so (a
    job made with its work as its estimate already is kept as it is)."""
    if how != "perfect":
        return workload
    jobs = [j if j.estimate is j.work else dataclasses.replace(j, estimate=j.work)
            for j in workload.jobs]
    return dataclasses.replace(workload, jobs=jobs)


def _policy_config(options: Options, scheduler: str, pes: int,
                   memory: MemoryAdmission | None) -> PolicyConfig:
    prime = PrimeTime(options.prime_shift, options.prime_large, options.prime_free,
                      options.prime_large_limit, options.prime_small_limit)
    classes = None
    if scheduler == "t3d":
        try:
            classes = load_class_table(options.classes, pes)
        except ClassTableError as err:
            raise UsageError(str(err)) from None
    return PolicyConfig(pes, options.mpl, options.timeslice, options.allocator, options.spin,
                        memory, prime, options.overrun, classes, options.variation,
                        options.balance, options.migration_delay, options.app_max,
                        options.abs_app_max, options.defrag)


def _make_policy(scheduler: str, config: PolicyConfig) -> Policy:
    try:
        return make_policy(scheduler, config)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _base_config(scheduler: str, policy: Policy, workload: Workload,
                 options: Options) -> dict[str, Any]:
    """What every run records about itself, whichever executor runs it."""
    return {
        "scheduler": scheduler, "mpl": policy.mpl, "timeslice": policy.timeslice,
        "allocator": options.allocator, "job_timeout": options.job_timeout,
        "estimates": options.estimates, "overrun": options.overrun,
        "policy": policy.config.describe(),
        "workload": {"path": workload.path, "jobs": len(workload.jobs), "meta": workload.meta},
        "seed": workload.meta.get("seed"),
        "testbed": __version__, "python": platform.python_version(),
        "kernel": platform.release(), "argv": sys.argv,
    }


def _owner_stream(options: Options) -> OwnerStream | None:
    return None if options.owners is None else OwnerStream(*options.owners,
                                                           seed=options.owner_seed)


def _kills_at_estimate(policy: Policy, options: Options) -> bool:
    """Jobs are killed at their estimates under a batch policy with ``--overrun kill`` and
    estimates the users gave (perfect estimates are the truth, not a request)."""
    return policy.uses_estimates and options.overrun == "kill" and options.estimates == "given"


def _mem_total() -> int:
    """The host's memory in bytes."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def emulate(workload: Workload, options: Options, machine: Machine, run_dir: Path,
            listening: tuple[socket.socket, Path] | None = None
            ) -> tuple[str, dict[str, Any]]:
    """Run ``workload`` as real MPI jobs under ``options.scheduler`` on ``machine`` into
    ``run_dir`` (serving on ``listening``, a bound socket and its path, when given); the run's
    status and summary.  The node cgroups and swap file asked for exist only while it runs."""
    mpi = detect_mpi()
    run_id = new_run_id()
    node_memory = swap = None
    try:
        if options.swap is not None:
            swap = SwapFile(SWAP_DIR / f"testbed-{run_id}.swap", options.swap)
        if options.node_mem is not None:
            node_memory = NodeCgroups(run_id, len(machine.nodes), options.node_mem)
        return _emulate(workload, options, machine, mpi, run_dir, run_id, node_memory, swap,
                        listening)
    finally:
        if node_memory is not None:
            node_memory.remove()
        if swap is not None:
            remove_swap(str(swap.path))


def _emulate(workload: Workload, options: Options, machine: Machine, mpi: MpiInfo,
             run_dir: Path, run_id: str, node_memory: NodeCgroups | None,
             swap: SwapFile | None, listening: tuple[socket.socket, Path] | None
             ) -> tuple[str, dict[str, Any]]:
    from testbed.service.server import Service  # the service's code only when serving

    scheduler = options.scheduler
    memory = None
    if options.memory_admission is not None:
        per_node = options.node_mem or _mem_total() / len(machine.nodes)
        memory = MemoryAdmission(
            capacity_mb=(per_node / 2**20,) * len(machine.nodes),
            factor=options.memory_admission,
            node_of_pe=tuple(machine.node_of(pe).index for pe in range(machine.pes)))
    policy = _make_policy(scheduler, _policy_config(options, scheduler, machine.pes, memory))
    library = shim.library_path(mpi) if policy.uses_shim else None
    history = history_of(options)
    config = {
        **_base_config(scheduler, policy, workload, options),
        "machine": machine.describe(), "mpi": mpi.describe(),
        "shim": {"library": str(library), "spin": policy.spin_settings()} if library else None,
        "node_memory": node_memory.describe() if node_memory else None,
        "memory_admission": dataclasses.asdict(memory) if memory else None,
        "memory_history": str(history.path) if history else None,
        "swap": swap.describe() if swap else None,
        "hang_after": options.hang_after,
    }
    delays = injection.describe(os.environ)
    if delays is not None:
        config["injected_delays"] = delays
    owners = _owner_stream(options)
    if machine.hosts and (owners is not None or workload.owners):
        raise UsageError("workstation owners run on one host only (no --hosts, no Slurm hosts)")
    if owners is not None:
        config["owners"] = dataclasses.asdict(owners)
    executor = EmulationExecutor(policy, machine, mpi, run_dir, run_id, library, node_memory,
                                 swap, options.rank_priority, options.tree_width,
                                 options.hang_after)
    service = None
    if listening is not None:
        service = Service(*listening, run_dir, executor, options.timeslice)
        config["service"] = {"socket": str(listening[1])}
    try:
        driver = Driver(with_estimates(workload, options.estimates), policy, executor, run_dir,
                        config, log=EventLog(run_dir / "events.jsonl"),
                        job_timeout=options.job_timeout, history=history,
                        kill_at_estimate=_kills_at_estimate(policy, options), run_id=run_id,
                        observer=service, owners=owners)
        if service is not None:
            service.attach(Control(driver))
        status = driver.run()
    finally:
        if service is not None:
            service.close()
    return status, write_results(run_dir)


def simulate(workload: Workload, options: Options, pes: int, run_dir: Path) -> str:
    """Simulate ``workload`` under ``options.scheduler`` on ``pes`` PEs into ``run_dir`` and
    write its results; the run's status (``error`` when the simulation stalled, which is said
    on stderr)."""
    scheduler = options.scheduler
    policy = _make_policy(scheduler, _policy_config(options, scheduler, pes, None))
    owners = _owner_stream(options)
    durations = {job.id: job.work for job in workload.jobs if job.work is not None}
    config = {**_base_config(scheduler, policy, workload, options),
              "machine": {"hostname": "simulated", "pes": pes, "nodes": 1, "pes_per_node": pes,
                          "pe_cpus": None, "host_cpus": None, "oversubscribed": False}}
    executor = SimulationExecutor(durations, options.switch_cost, options.launch_cost)
    if owners is not None:
        config["owners"] = dataclasses.asdict(owners)
    driver = Driver(workload, policy, executor, run_dir, config,
                    log=EventLog(run_dir / "events.jsonl", flush_each=False),
                    job_timeout=options.job_timeout,
                    kill_at_estimate=_kills_at_estimate(policy, options), owners=owners)
    try:
        status = driver.run()
    except Stalled as err:
        print(f"testbed: {workload.path}: {err} (the run directory {run_dir} says error)",
              file=sys.stderr)
        return "error"
    write_results(run_dir)
    return status


@dataclass(frozen=True)
class Prepared:
    """A run checked and ready to execute: its options, its workload, its machine (None when
    simulated), its PEs and the label of its default run directory."""

    options: Options
    workload: Workload
    machine: Machine | None
    pes: int
    label: str


@dataclass(frozen=True)
class Result:
    """What ``execute`` gives back: the run's status (``complete``, ``interrupted``,
    ``stopped``, or ``error`` when a simulation stalled), its directory and its summary (None
    when it has none)."""

    status: str
    run_dir: Path
    summary: dict[str, Any] | None

    @property
    def exit_code(self) -> int:
        """The command's exit code for this run (``testbed.exit_codes.run_exit_code``)."""
        return run_exit_code(self.status)

    def hangs(self) -> list[str]:
        """One line for each job found hung (``hang_lines``)."""
        return hang_lines(read_events(self.run_dir / "events.jsonl"))


def prepare(options: Options, source: str | Path | Workload) -> Prepared:
    """Check ``options`` and the workload ``source`` (a workload file, an SWF trace when
    simulated, or a ``Workload`` made in code) for a run on ``options.executor``; the run,
    ready.  ``UsageError`` for bad input, ``MemorySetupError`` for memory the machine cannot
    give; nothing is made on disk."""
    schedulers = [options.scheduler]
    if options.executor == "simulation":
        machine = None
        pes = simulated_pes(options)
        check_simulation(options, schedulers, pes)
        workload = (_for_simulation(source, options, source.path)
                    if isinstance(source, Workload)
                    else simulated_workload(source, options, pes))
    else:
        machine = check_emulation(options, schedulers)
        pes = machine.pes
        workload = source if isinstance(source, Workload) else load(source, options.timeslice,
                                                                   machine)
    check_owners(options, schedulers, workload)
    label = options.scheduler if machine is not None else f"sim-{options.scheduler}"
    return Prepared(options, workload, machine, pes, label)


def execute(prepared: Prepared, out: Path | None = None, *,
            serve: tuple[socket.socket, Path] | None = None) -> Result:
    """Run ``prepared`` into the run directory ``out`` (made; it must not hold anything, and
    by default is a new ``runs/DATE-LABEL``), serving on ``serve`` (a bound socket and its
    path) when given; its result."""
    run_dir = new_run_dir(out, prepared.label)
    if prepared.machine is None:
        status = simulate(prepared.workload, prepared.options, prepared.pes, run_dir)
        summary = (None if status == "error"
                   else json.loads((run_dir / "summary.json").read_text()))
        return Result(status, run_dir, summary)
    status, summary = emulate(prepared.workload, prepared.options, prepared.machine, run_dir,
                              serve)
    return Result(status, run_dir, summary)


def drive(workload: Workload, policy: Policy, executor: Executor, run_dir: Path,
          config: dict[str, Any], *, log: EventLog, owners: OwnerStream | None = None) -> str:
    """Run ``workload`` under a ``policy`` object on an ``executor`` of the caller's into
    ``run_dir``, recording ``config`` and writing ``log``; the run's status.  For benchmarks
    that build their own policy (settings no option names) or executor (a horizon); every
    other run is ``prepare`` then ``execute``."""
    return Driver(workload, policy, executor, run_dir, config, log=log, owners=owners).run()


def exec_job(command: list[str], ranks: int, options: Options, out: Path | None = None,
             prefix: str = "testbed") -> int:
    """Run one MPI ``command`` on ``ranks`` ranks as a job (as the T3D's ``mppexec``), copy its
    output to ours and return its exit code (130 if the run was interrupted).  When that code
    is not the program's own (it could not be launched, it was killed, timed out or hung), say
    why on stderr after ``prefix``, as the service's clients do (a hang with what each rank
    was in)."""
    if not command:
        raise UsageError("exec needs a command after --")
    if ranks < 1:
        raise UsageError(f"-n must be >= 1, got {ranks}")
    workload = Workload("<exec>", [JobSpec("j1", 0, 0.0, ranks, tuple(command),
                                           limit=options.job_timeout)])
    prepared = prepare(dataclasses.replace(options, executor="emulation"), workload)
    if ranks > prepared.pes:
        raise UsageError(f"-n {ranks} is more than the machine's {prepared.pes} PEs (see --pes)")
    result = execute(dataclasses.replace(prepared, label=f"exec-{options.scheduler}"), out)
    run_dir, status = result.run_dir, result.status
    for suffix, stream in ((".out", sys.stdout), (".err", sys.stderr)):
        path = run_dir / "jobs" / f"j1{suffix}"
        if path.exists():
            stream.write(path.read_text(errors="replace"))
    if status == "interrupted":
        return EXIT_INTERRUPTED
    events = read_events(run_dir / "events.jsonl")
    row = job_rows(events)[0]
    code = job_exit_code(row.status, row.exit_code)
    hangs = hang_lines(events)
    if hangs:
        print(f"{prefix}: {hangs[0]}", file=sys.stderr)
    elif code != row.exit_code or row.status in ("killed", "timeout"):
        print(f"{prefix}: job {row.id} ended {row.status}: {row.reason or row.status}",
              file=sys.stderr)
    return code


def hang_lines(events: list[dict[str, Any]]) -> list[str]:
    """One line for each job of a run's ``events`` found hung, naming it and what each of its
    ranks was in (``job j1 hung: no MPI call returned for 30.0 s; rank 0 in ...``)."""
    return [f"job {event['job']} {describe(event)}" for event in events
            if event["event"] == "hang"]

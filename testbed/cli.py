"""The ``testbed`` command: a registry of subcommands.

Exit codes: 0 success; 1 a job or run failed; 2 bad input (nothing run, no run directory made);
3 no usable MPI (or the shim cannot be built); 4 the machine cannot provide what was asked
(node memory limits or swap without root or cgroups); 130 the run was interrupted (its partial
results are kept and say so).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from testbed import __version__
from testbed.class_tables import ClassTableError, load_class_table
from testbed.driver import Driver, OwnerStream, Stalled, new_run_id
from testbed.emulation import injection, shim
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
from testbed.emulation.procs import RankPriority
from testbed.emulation.remote import NodesError
from testbed.events import EventLog, WriteFailed, read_events
from testbed.experiments.figures import DEFAULT as DEFAULT_FIGURES
from testbed.experiments.figures import check_names
from testbed.experiments.plan import (
    ORDERS,
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
from testbed.experiments.runner import Runner, RunOne, collect
from testbed.hosts import Host, HostsError, read_hostfile, slurm_hosts
from testbed.machine import Machine, build_cluster, build_machine
from testbed.memory_history import DEFAULT_PATH as DEFAULT_HISTORY
from testbed.memory_history import MemoryHistory
from testbed.policies import (
    POLICIES,
    MemoryAdmission,
    Policy,
    PolicyConfig,
    PrimeTime,
    make_policy,
)
from testbed.results.batsim import write_batsim
from testbed.results.metrics import job_rows
from testbed.results.report import first_runs, format_table, run_dirs, write_results, write_swf
from testbed.results.top import follow
from testbed.results.trace import write_trace
from testbed.service.client import NoService, socket_path
from testbed.service.client import request as client_request
from testbed.service.protocol import (
    Cancel,
    MigrateJob,
    Queue,
    Request,
    Resume,
    SetClass,
    Shutdown,
    SubmitWorkload,
    Suspend,
    job_exit_code,
)
from testbed.service.server import Service, ServiceError, listen
from testbed.simulation.executor import SimulationExecutor
from testbed.sizes import parse_size
from testbed.workloads import lublin
from testbed.workloads.files import JobSpec, Workload, WorkloadError, load_workload
from testbed.workloads.mix import MixParams, generate_mix
from testbed.workloads.swf import (
    ImportOptions,
    SwfError,
    SwfJob,
    read_swf,
    to_workload,
    trace_workload,
)

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_NO_MPI = 3
EXIT_UNAVAILABLE = 4
EXIT_WRITE_FAILED = 5
SWAP_DIR = Path("/var/tmp")
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad input: reported as one line, exit code 2."""


class ServiceUnavailable(Exception):
    """No service answers, or it went away: reported as one line, exit code 1."""


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _policy_options(p: argparse.ArgumentParser) -> None:
    """Options of every policy, emulated or simulated."""
    p.add_argument("--mpl", type=int, default=2,
                   help="multiprogramming level (rows); fcfs and the batch policies use 1")
    p.add_argument("--timeslice", type=float, default=0.2, help="timeslice T, seconds")
    p.add_argument("--pes", type=int, default=None, help="PEs (default: CPUs in the affinity mask)")
    p.add_argument("--allocator", choices=("buddy", "first-fit"), default="buddy")
    p.add_argument("--job-timeout", type=float, default=None,
                   help="kill a job after this many seconds of runtime (limit= on a line wins)")
    p.add_argument("--estimates", choices=("given", "perfect"), default="given",
                   help="runtime estimates for the batch policies: estimate= on each line (SWF: "
                        "requested time), or each job's work (perfect knowledge, as T3D)")
    p.add_argument("--overrun", choices=("kill", "run"), default="kill",
                   help="a job outliving its given estimate under a batch policy is killed at "
                        "it (as batch systems do) or runs on")
    p.add_argument("--prime-shift", type=float, default=PrimeTime.shift_s, metavar="S",
                   help="prime: length of each shift, seconds (12 h)")
    p.add_argument("--prime-large", type=int, default=None, metavar="PES",
                   help="prime: jobs on more PEs are large (default: a quarter of the PEs)")
    p.add_argument("--prime-free", type=int, default=None, metavar="PES",
                   help="prime: PEs a small job must leave free (default: a quarter of the PEs)")
    p.add_argument("--prime-large-limit", type=float, default=PrimeTime.large_limit_s,
                   metavar="S", help="prime: longest large job in prime time, seconds (600)")
    p.add_argument("--prime-small-limit", type=float, default=PrimeTime.small_limit_s,
                   metavar="S", help="prime: longest small job in prime time, seconds (4 h)")
    p.add_argument("--classes", type=Path, default=None, metavar="FILE",
                   help="job classes of the t3d scheduler (TOML; default: T3D's daytime table "
                        "scaled to the machine)")
    p.add_argument("--variation", type=float, default=0.0, metavar="V",
                   help="T3E's adaptive slice: timeslice + switch time x V (default 0: fixed); "
                        "with --node-mem a switch pages the incoming jobs in")
    p.add_argument("--balance", type=float, default=0.0, metavar="S",
                   help="T3E psched's load balancer: seconds between passes, each moving at "
                        "most one job to free PEs of a lower row (default 0: off)")
    p.add_argument("--migration-delay", type=float, default=10.0, metavar="S",
                   help="how long a job whose migration failed or was made by hand is left "
                        "alone by the balancer (default 10 s)")
    p.add_argument("--app-max", type=int, default=1, metavar="N",
                   help="psched: normal (not prime) applications per PE (default 1, NERSC's)")
    p.add_argument("--abs-app-max", type=int, default=2, metavar="N",
                   help="psched: applications per PE in all: the matrix's rows, in place of "
                        "--mpl (default 2)")
    p.add_argument("--out", type=Path, default=None, help="run directory (must not exist)")


def _rank_priority(text: str) -> str:
    if text != "auto":
        try:
            RankPriority.parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return text


def _scheduler_options(p: argparse.ArgumentParser) -> None:
    _policy_options(p)
    p.add_argument("--nodes", type=int, default=1, help="emulated nodes the PEs are split into")
    p.add_argument("--rank-priority", type=_rank_priority, default="auto",
                   metavar="auto|normal|batch|idle|POLICY:NICE",
                   help="how ranks are scheduled beside the coordinator (default auto: as they "
                        "are beside a real-time coordinator, else idle)")
    p.add_argument("--hosts", type=Path, default=None, metavar="HOSTFILE",
                   help="hosts in hydra's NAME[:SLOTS] format, a node manager on each (default "
                        "inside a Slurm allocation: its hosts, unless --pes or --nodes is given)")
    p.add_argument("--launcher", default=None, metavar="NAME",
                   help="hydra's launcher for the hosts: fork (all hosts emulated on this "
                        "machine), ssh, slurm, ... (default: hydra's choice; slurm in Slurm)")
    p.add_argument("--spin", type=float, default=None,
                   help="shim spin time, seconds: fixed for ics, MAX_spin for fcs (0.0005)")
    p.add_argument("--node-mem", type=_size, default=None, metavar="SIZE",
                   help="memory limit of each emulated node, e.g. 512M (root, cgroups)")
    p.add_argument("--swap", type=_size, default=None, metavar="SIZE",
                   help="make a swap file of SIZE for the run and remove it after (root)")
    p.add_argument("--memory-admission", type=float, default=None, metavar="C",
                   help="admit a job only where eq. 1 holds with factor C (MEMORY §3.2)")
    p.add_argument("--memory-history", type=Path, default=None, metavar="FILE",
                   help="history of measured peaks, used for estimates and updated by every "
                        f"finished job (default with --memory-admission: {DEFAULT_HISTORY})")


def _check_policy_options(args: argparse.Namespace, schedulers: list[str]) -> None:
    for name in schedulers:
        if name not in POLICIES:
            raise UsageError(f"unknown scheduler {name!r} (known: {', '.join(sorted(POLICIES))})")
    if args.mpl < 1:
        raise UsageError(f"--mpl must be >= 1, got {args.mpl}")
    for option in ("timeslice", "job_timeout", "prime_shift", "prime_large_limit",
                   "prime_small_limit"):
        value = getattr(args, option)
        if value is not None and value <= 0:
            raise UsageError(f"--{option.replace('_', '-')} must be > 0, got {value}")
    for option in ("variation", "balance", "migration_delay"):
        value = getattr(args, option)
        if value < 0 or not math.isfinite(value):
            raise UsageError(f"--{option.replace('_', '-')} must be >= 0, got {value}")
    if not 1 <= args.app_max <= args.abs_app_max:
        raise UsageError(f"need 1 <= --app-max <= --abs-app-max, got {args.app_max} and "
                         f"{args.abs_app_max}")
    for option in ("prime_large", "prime_free"):
        value = getattr(args, option)
        if value is not None and value < 0:
            raise UsageError(f"--{option.replace('_', '-')} must be >= 0, got {value}")


def _check_common(args: argparse.Namespace, schedulers: list[str]) -> Machine:
    _check_policy_options(args, schedulers)
    if args.spin is not None and args.spin < 0:
        raise UsageError(f"--spin must be >= 0, got {args.spin}")
    try:
        injection.describe(os.environ)
    except ValueError as err:
        raise UsageError(f"environment: {err}") from None
    if args.memory_admission is not None and args.memory_admission <= 0:
        raise UsageError(f"--memory-admission must be > 0, got {args.memory_admission}")
    if args.memory_history is None and args.memory_admission is not None:
        args.memory_history = DEFAULT_HISTORY
    args.history = None
    if args.memory_history is not None:
        try:
            args.history = MemoryHistory(args.memory_history)
        except ValueError as err:
            raise UsageError(str(err)) from None
    if args.node_mem is not None:
        cgroup_parent()
        paged = [name for name in schedulers if POLICIES[name].pages_preempted]
        if paged and not may_page_out():
            raise MemorySetupError(
                f"--node-mem under {', '.join(paged)} moves each preempted job to swap with "
                "process_madvise(MADV_PAGEOUT), which needs CAP_SYS_NICE (root); without it "
                "run another scheduler, whose preempted jobs the kernel pages only as memory "
                "runs short")
    if args.swap is not None and os.geteuid() != 0:
        raise MemorySetupError("--swap needs root (swapon is never delegated to users; "
                               "--node-mem works without it in a delegated cgroup)")
    hosts = _hosts(args)
    if hosts is not None:
        return build_cluster(*hosts)
    try:
        return build_machine(args.pes, args.nodes)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _hosts(args: argparse.Namespace) -> tuple[tuple[Host, ...], str | None] | None:
    """The hosts and hydra launcher of a run across hosts (a hostfile, or the Slurm
    allocation we are in when no machine size was given), or None for one host."""
    try:
        if args.hosts is not None:
            hosts, launcher = read_hostfile(args.hosts), args.launcher
        elif args.pes is None and args.nodes == 1 and (found := slurm_hosts()) is not None:
            hosts, launcher = found, args.launcher or "slurm"
        else:
            return None
    except HostsError as err:
        raise UsageError(str(err)) from None
    where = f"--hosts {args.hosts}" if args.hosts else "a Slurm allocation"
    for given, what in ((args.pes is not None, "--pes"), (args.nodes != 1, "--nodes"),
                        (args.node_mem is not None, "--node-mem")):
        if given:
            raise UsageError(f"{what} cannot be combined with {where} (the hosts' slots are the "
                             "PEs; node memory is emulated on one host only)")
    return hosts, launcher


def _new_run_dir(out: Path | None, label: str) -> Path:
    path = out or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{label}"
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"{path}: exists and is not empty (runs are never overwritten)")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _run_one(workload: Workload, scheduler: str, machine: Machine, args: argparse.Namespace,
             run_dir: Path, listening: tuple[socket.socket, Path] | None = None
             ) -> tuple[str, dict[str, Any]]:
    mpl = 1 if scheduler == "fcfs" else args.mpl
    mpi = detect_mpi()
    run_id = new_run_id()
    node_memory = swap = None
    try:
        if args.swap is not None:
            swap = SwapFile(SWAP_DIR / f"testbed-{run_id}.swap", args.swap)
        if args.node_mem is not None:
            node_memory = NodeCgroups(run_id, len(machine.nodes), args.node_mem)
        return _run_coordinator(workload, scheduler, mpl, machine, mpi, args, run_dir, run_id,
                                node_memory, swap, listening)
    finally:
        if node_memory is not None:
            node_memory.remove()
        if swap is not None:
            remove_swap(str(swap.path))


def _policy_config(args: argparse.Namespace, scheduler: str, pes: int,
                   memory: MemoryAdmission | None) -> PolicyConfig:
    prime = PrimeTime(args.prime_shift, args.prime_large, args.prime_free,
                      args.prime_large_limit, args.prime_small_limit)
    classes = None
    if scheduler == "t3d":
        try:
            classes = load_class_table(args.classes, pes)
        except ClassTableError as err:
            raise UsageError(str(err)) from None
    return PolicyConfig(pes, args.mpl, args.timeslice, args.allocator, getattr(args, "spin", None),
                        memory, prime, args.overrun, classes, args.variation, args.balance,
                        args.migration_delay, args.app_max, args.abs_app_max)


def _base_config(scheduler: str, policy: Policy, workload: Workload,
                 args: argparse.Namespace) -> dict[str, Any]:
    """What every run records about itself, whichever executor runs it."""
    return {
        "scheduler": scheduler, "mpl": policy.mpl, "timeslice": policy.timeslice,
        "allocator": args.allocator, "job_timeout": args.job_timeout,
        "estimates": args.estimates, "overrun": args.overrun,
        "policy": policy.config.describe(),
        "workload": {"path": workload.path, "jobs": len(workload.jobs), "meta": workload.meta},
        "seed": workload.meta.get("seed"),
        "testbed": __version__, "python": platform.python_version(),
        "kernel": platform.release(), "argv": sys.argv,
    }


def _with_estimates(workload: Workload, how: str) -> Workload:
    """``workload`` with perfect runtime estimates (each job's work) when ``how`` says so."""
    if how != "perfect":
        return workload
    jobs = [dataclasses.replace(j, estimate=j.work) for j in workload.jobs]
    return dataclasses.replace(workload, jobs=jobs)


def _check_owners(args: argparse.Namespace, schedulers: list[str], workload: Workload) -> None:
    """Refuse owners (``--owners`` or owner lines) under a scheduler without them."""
    for scheduler in schedulers:
        if POLICIES[scheduler].supports_owners:
            continue
        if getattr(args, "owners", None) is not None:
            raise UsageError(f"--owners: the {scheduler} scheduler has no workstation owners "
                             "(afcfs and lgfs have)")
        if workload.owners:
            raise UsageError(f"{workload.path}:{workload.owners[0].line}: owner lines need a "
                             f"scheduler with workstation owners (afcfs, lgfs), not {scheduler}")


def _owner_stream(args: argparse.Namespace) -> OwnerStream | None:
    """The ``--owners`` stream, if given."""
    rate_mean = getattr(args, "owners", None)
    return None if rate_mean is None else OwnerStream(*rate_mean, seed=args.owner_seed)


def _run_coordinator(workload: Workload, scheduler: str, mpl: int, machine: Machine,
                     mpi: MpiInfo, args: argparse.Namespace, run_dir: Path, run_id: str,
                     node_memory: NodeCgroups | None, swap: SwapFile | None,
                     listening: tuple[socket.socket, Path] | None = None
                     ) -> tuple[str, dict[str, Any]]:
    memory = None
    if args.memory_admission is not None:
        per_node = args.node_mem or _mem_total() / len(machine.nodes)
        memory = MemoryAdmission(
            capacity_mb=(per_node / 2**20,) * len(machine.nodes), factor=args.memory_admission,
            node_of_pe=tuple(machine.node_of(pe).index for pe in range(machine.pes)))
    policy = _make_policy(scheduler, _policy_config(args, scheduler, machine.pes, memory))
    library = shim.library_path(mpi) if policy.uses_shim else None
    config = {
        **_base_config(scheduler, policy, workload, args),
        "machine": machine.describe(), "mpi": mpi.describe(),
        "shim": {"library": str(library), "spin": policy.spin_settings()} if library else None,
        "node_memory": node_memory.describe() if node_memory else None,
        "memory_admission": dataclasses.asdict(memory) if memory else None,
        "memory_history": str(args.memory_history) if args.memory_history else None,
        "swap": swap.describe() if swap else None,
    }
    delays = injection.describe(os.environ)
    if delays is not None:
        config["injected_delays"] = delays
    owners = _owner_stream(args)
    if machine.hosts and (owners is not None or workload.owners):
        raise UsageError("workstation owners run on one host only (no --hosts, no Slurm hosts)")
    if owners is not None:
        config["owners"] = dataclasses.asdict(owners)
    executor = EmulationExecutor(policy, machine, mpi, run_dir, run_id, library, node_memory,
                                 swap, args.rank_priority)
    service = None
    if listening is not None:
        service = Service(*listening, run_dir, executor, args.timeslice)
        config["service"] = {"socket": str(listening[1])}
    driver = Driver(_with_estimates(workload, args.estimates), policy, executor, run_dir,
                    config, log=EventLog(run_dir / "events.jsonl"), job_timeout=args.job_timeout,
                    history=args.history, kill_at_estimate=_kills_at_estimate(policy, args),
                    run_id=run_id, observer=service, owners=owners)
    if service is not None:
        service.attach(driver)
    try:
        status = driver.run()
    finally:
        if service is not None:
            service.close()
    return status, write_results(run_dir)


def _kills_at_estimate(policy: Policy, args: argparse.Namespace) -> bool:
    """Jobs are killed at their estimates under a batch policy with ``--overrun kill`` and
    estimates the users gave (perfect estimates are the truth, not a request)."""
    return policy.uses_estimates and args.overrun == "kill" and args.estimates == "given"


def _make_policy(scheduler: str, config: PolicyConfig) -> Policy:
    try:
        return make_policy(scheduler, config)
    except ValueError as err:
        raise UsageError(str(err)) from None


def _mem_total() -> int:
    """The host's memory in bytes."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def cmd_run(args: argparse.Namespace) -> int:
    """Run a workload under one scheduler and print its table."""
    machine = _check_common(args, [args.scheduler])
    workload = _load(args.workload, args.timeslice, machine)
    _check_owners(args, [args.scheduler], workload)
    run_dir = _new_run_dir(args.out, args.scheduler)
    viewer = None
    if args.live:
        viewer = subprocess.Popen([sys.executable, "-m", "testbed.cli", "top", str(run_dir)])
    try:
        status, summary = _run_one(workload, args.scheduler, machine, args, run_dir)
    finally:
        if viewer is not None:
            try:
                viewer.wait(timeout=5)
            except subprocess.TimeoutExpired:
                viewer.terminate()
                viewer.wait()
    print(format_table({args.scheduler: summary}))
    print(f"run directory: {run_dir}")
    return EXIT_INTERRUPTED if status == "interrupted" else 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Simulate a workload under one scheduler in virtual time and print its table."""
    pes = _simulated_pes(args)
    _check_simulation(args, [args.scheduler], pes)
    workload = _with_estimates(_simulated_workload(args, pes), args.estimates)
    _check_owners(args, [args.scheduler], workload)
    run_dir = _new_run_dir(args.out, f"sim-{args.scheduler}")
    status = _simulate_one(workload, args.scheduler, pes, args, run_dir)
    if status == "error":
        return EXIT_FAILED
    print(format_table({args.scheduler: write_results(run_dir)}))
    print(f"run directory: {run_dir}")
    return 0


def _check_simulation(args: argparse.Namespace, schedulers: list[str], pes: int) -> None:
    """Refuse bad policy options, negative costs and schedulers the simulator cannot run (on
    ``pes`` PEs)."""
    _check_policy_options(args, schedulers)
    for option in ("switch_cost", "launch_cost"):
        if getattr(args, option) < 0:
            raise UsageError(f"--{option.replace('_', '-')} must be >= 0, "
                             f"got {getattr(args, option)}")
    for name in schedulers:
        if not POLICIES[name].simulable:
            raise UsageError(f"{name}: the simulator has no model of how real ranks "
                             "communicate and share CPUs, which this policy depends on; emulate "
                             "it with testbed run (simulable: " + ", ".join(
                                 sorted(n for n, c in POLICIES.items() if c.simulable)) + ")")
        _make_policy(name, _policy_config(args, name, pes, None))


def _simulated_pes(args: argparse.Namespace) -> int:
    pes = args.pes if args.pes is not None else len(os.sched_getaffinity(0))
    if pes < 1:
        raise UsageError(f"--pes must be >= 1, got {pes}")
    return pes


def _simulate_one(workload: Workload, scheduler: str, pes: int, args: argparse.Namespace,
                  run_dir: Path) -> str:
    """Simulate ``workload`` under ``scheduler`` into ``run_dir``; return the run's status
    (``error`` when the simulation stalled, which is said on stderr)."""
    policy = _make_policy(scheduler, _policy_config(args, scheduler, pes, None))
    owners = _owner_stream(args)
    durations = {job.id: job.work for job in workload.jobs if job.work is not None}
    config = {**_base_config(scheduler, policy, workload, args),
              "machine": {"hostname": "simulated", "pes": pes, "nodes": 1, "pes_per_node": pes,
                          "pe_cpus": None, "host_cpus": None, "oversubscribed": False}}
    executor = SimulationExecutor(durations, args.switch_cost, args.launch_cost)
    if owners is not None:
        config["owners"] = dataclasses.asdict(owners)
    driver = Driver(workload, policy, executor, run_dir, config,
                    log=EventLog(run_dir / "events.jsonl", flush_each=False),
                    job_timeout=args.job_timeout,
                    kill_at_estimate=_kills_at_estimate(policy, args), owners=owners)
    try:
        status = driver.run()
    except Stalled as err:
        print(f"testbed: {workload.path}: {err} (the run directory {run_dir} says error)",
              file=sys.stderr)
        return "error"
    write_results(run_dir)
    return status


def _simulated_workload(args: argparse.Namespace, pes: int) -> Workload:
    """The workload to simulate: an SWF trace (``.swf``) or a workload file whose jobs all
    have a work (bsp ``--work``), uncompressed when asked."""
    try:
        if str(args.workload).endswith(".swf"):
            workload = trace_workload(args.workload, pes)
        else:
            workload = load_workload(args.workload, args.timeslice)
            workload.check_fits(pes)
    except (WorkloadError, SwfError) as err:
        raise UsageError(str(err)) from None
    if not workload.jobs:
        raise UsageError(f"{args.workload}: no jobs")
    missing = next((job for job in workload.jobs if job.work is None), None)
    if missing is not None:
        raise UsageError(f"{args.workload}:{missing.line}: field 'command': the simulator needs "
                         "each job's work (a bsp line's --work, or an SWF runtime)")
    if not args.uncompress or workload.compress == 1:
        return workload
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


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the coordinator as a service: jobs come from testbed mpirun/submit until stopped."""
    machine = _check_common(args, [args.scheduler])
    path = args.socket or socket_path()
    try:
        server = listen(path)
    except (ServiceError, OSError) as err:
        raise UsageError(str(err)) from None
    try:
        run_dir = _new_run_dir(args.out, f"serve-{args.scheduler}")
    except UsageError:
        server.close()
        path.unlink(missing_ok=True)
        raise
    print(f"testbed: serving {args.scheduler} on {machine.pes} PEs at {path}; "
          f"run directory {run_dir}", file=sys.stderr, flush=True)
    _, summary = _run_one(Workload("<service>", [], {}), args.scheduler, machine, args, run_dir,
                          (server, path))
    print(format_table({args.scheduler: summary}))
    print(f"run directory: {run_dir}")
    return 0


def _client_request(args: argparse.Namespace, message: Request) -> dict[str, Any]:
    path = socket_path(args.socket)
    try:
        reply = client_request(path, message)
    except (NoService, ConnectionError) as err:
        raise ServiceUnavailable(str(err)) from None
    if reply["type"] == "error":
        raise UsageError(reply["message"])
    return reply


def cmd_submit(args: argparse.Namespace) -> int:
    """Submit a workload file to the service (arrivals relative to now)."""
    try:
        lines = tuple(Path(args.workload).read_text().splitlines())
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{args.workload}: cannot read: {err}") from None
    reply = _client_request(args, SubmitWorkload(tuple(s for s in lines if s.strip()),
                                                 str(Path(args.workload).resolve())))
    for row in reply["jobs"]:
        print(f"{row['job']}  line {row['line']}  arrives in {row['arrival']:g} s")
    return 0


def cmd_queue(args: argparse.Namespace) -> int:
    """List the service's jobs (like squeue)."""
    rows = _client_request(args, Queue())["jobs"]
    header = ["JOB", "USER", "PES", "STATE", "WAIT", "RUNTIME", "CLASS", "ROW", "COMMAND"]
    cells = [header] + [[r["job"], r["user"], str(r["pes"]), r["state"],
                         "-" if r["wait"] is None else f"{r['wait']:.1f}",
                         "-" if r["runtime"] is None else f"{r['runtime']:.1f}",
                         r["class"] or "-", "-" if r["row"] is None else str(r["row"]),
                         r["command"]] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _job_command(kind: type[Cancel] | type[Suspend] | type[Resume], doc: str) -> Callable[
        [argparse.Namespace], int]:
    """The subcommand that sends ``kind(JOB)`` to the service; ``doc`` is its help."""
    def command(args: argparse.Namespace) -> int:
        _client_request(args, kind(args.job))
        return 0
    command.__doc__ = doc
    return command


def cmd_class(args: argparse.Namespace) -> int:
    """Move a job of yours to another class (the t3d scheduler; gangster)."""
    _client_request(args, SetClass(args.job, args.job_class))
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    """Move a job of yours to other PEs (T3E psched's migrate; gang-family schedulers)."""
    _client_request(args, MigrateJob(args.job, tuple(args.pes)))
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    """Stop the service: what still runs is killed, the run directory is completed."""
    _client_request(args, Shutdown())
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Run a workload under several schedulers, repeated and interleaved, and compare them."""
    schedulers = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    if not schedulers:
        raise UsageError("--schedulers names no scheduler")
    if args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    spec, seed = _workload_spec(args.workload)
    simulated = args.executor == "simulation"
    if simulated and args.pes is None:
        args.pes = dict(spec.params).get("pes")
    if simulated:
        pes = _simulated_pes(args)
        _check_simulation(args, schedulers, pes)
    else:
        pes = _check_common(args, schedulers).pes
    if spec.file is not None:
        workload = (_simulated_workload(args, pes) if simulated else
                    _load(str(spec.file), args.timeslice, _check_common(args, schedulers)))
        _check_owners(args, schedulers, workload)
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
                until_ci=args.until_ci, budget=args.budget)
    try:
        plan.check("testbed compare")
    except PlanError as err:
        raise UsageError(str(err)) from None
    out = _new_run_dir(args.out, "compare")

    def run_one(cell: Cell, path: Path, run_dir: Path) -> str:
        if simulated:
            loaded = _simulated_workload(argparse.Namespace(**{**vars(args),
                                                               "workload": str(path)}), pes)
            return _simulate_one(_with_estimates(loaded, args.estimates), cell.scheduler, pes,
                                 args, run_dir)
        machine = _check_common(args, [cell.scheduler])
        return _run_one(_load(str(path), args.timeslice, machine), cell.scheduler, machine,
                        args, run_dir)[0]

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
              compare: bool = False) -> int:
    """Run ``plan`` into ``out``, then print its tables (or ``--json`` records) and where the
    results are; the exit code (130 when interrupted)."""
    runner = Runner(plan, out, run_one, code_version(), pes)
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
        print(f"run directory: {out}")
        return EXIT_INTERRUPTED if interrupted else EXIT_FAILED
    tables = write_experiment_report(out, plan.metrics, plan.reference)
    single = max(sum(1 for r in results if r.info["label"] == lb)
                 for lb in {r.info["label"] for r in results}) == 1
    if as_json:
        parts = experiment_summaries(results, plan.metrics, plan.reference,
                                     [c.label for c in plan.cells])
        print("[\n" + ",\n".join(json.dumps(r.as_dict()) for _, _, records in parts
                                  for r in records) + "\n]")
    elif single and compare:
        print(format_table({r.info["label"]: json.loads((r.path / "summary.json").read_text())
                            for r in results}))
        print("one run per scheduler: no intervals (use --repeats N)")
    else:
        print(tables)
    if left:
        print("did not converge within the budget: " + ", ".join(left), file=sys.stderr)
    print(f"run directory: {out}" + ("" if single and compare else
                                      " (results.csv, summary.csv, plots/)"))
    return EXIT_INTERRUPTED if interrupted else 0


def cmd_experiment_run(args: argparse.Namespace) -> int:
    """Run an experiment file (a factorial of workloads, schedulers, options and repeats),
    resuming where an earlier run of it stopped."""
    try:
        plan = load_plan(args.file)
    except PlanError as err:
        raise UsageError(str(err)) from None
    simulated = plan.executor == "simulation"
    placeholder = args.file
    with tempfile.TemporaryDirectory(prefix="testbed-exp-") as tmp:
        for cell in plan.cells:
            ns = _cell_namespace(args.file, simulated, cell, placeholder)
            path = cell.workload.file or Path(tmp) / "workload.txt"
            if cell.workload.file is None:
                path.write_text(cell.workload.text(cell.run_seed(1, False), ns.pes or
                                                   len(os.sched_getaffinity(0))))
            ns.workload = str(path)
            if simulated:
                pes = _simulated_pes(ns)
                _check_simulation(ns, [cell.scheduler], pes)
                _check_owners(ns, [cell.scheduler], _simulated_workload(ns, pes))
            else:
                machine = _check_common(ns, [cell.scheduler])
                _check_owners(ns, [cell.scheduler], _load(str(path), ns.timeslice, machine))
    out = args.out or Path("runs") / args.file.stem
    if out.exists() and any(out.iterdir()) and not (out / "experiment.json").exists():
        raise UsageError(f"{out}: exists, is not empty and holds no experiment")
    pes = len(os.sched_getaffinity(0))

    def run_one(cell: Cell, path: Path, run_dir: Path) -> str:
        ns = _cell_namespace(args.file, simulated, cell, path)
        if simulated:
            cell_pes = _simulated_pes(ns)
            return _simulate_one(_with_estimates(_simulated_workload(ns, cell_pes),
                                                 ns.estimates), cell.scheduler, cell_pes, ns,
                                 run_dir)
        machine = _check_common(ns, [cell.scheduler])
        return _run_one(_load(str(path), ns.timeslice, machine), cell.scheduler, machine, ns,
                        run_dir)[0]

    return _run_plan(plan, out, run_one, pes, args.json)


class _RaisingParser(argparse.ArgumentParser):
    """An argument parser whose errors raise ``UsageError`` instead of exiting."""

    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        raise UsageError(message)


def _cell_namespace(where: Path, simulated: bool, cell: Cell, workload: Path
                    ) -> argparse.Namespace:
    """The ``testbed run`` (or ``simulate``) options of an experiment cell, parsed."""
    parser = _RaisingParser(prog="testbed simulate" if simulated else "testbed run")
    (_setup_simulate if simulated else _setup_run)(parser)
    flags = cell.flags()
    pes = dict(cell.workload.params).get("pes")
    if simulated and pes is not None and "--pes" not in flags:
        flags += ["--pes", str(pes)]
    try:
        return parser.parse_args([str(workload), "--scheduler", cell.scheduler, *flags])
    except UsageError as err:
        settings = ", ".join(f"{k}={v}" for k, v in cell.options)
        raise UsageError(f"{where}: cell {cell.label} ({settings}): {err}") from None


def cmd_experiment_report(args: argparse.Namespace) -> int:
    """Re-derive an experiment's results.csv, summary.csv, plots and tables from its runs."""
    if not args.dir.is_dir():
        raise UsageError(f"{args.dir}: no such directory")
    try:
        tables = write_experiment_report(args.dir)
    except ValueError as err:
        raise UsageError(str(err)) from None
    print(tables)
    if args.markdown is not None:
        _write_text(experiment_markdown(args.dir, tables), args.markdown)
    print(f"results.csv, summary.csv and plots/ written under {args.dir}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Re-derive results from the event logs of a run, compare or experiment directory and
    print them."""
    from testbed.results.plots import write_plots  # matplotlib: only the report needs it

    try:
        dirs = run_dirs(args.dir)
        summaries = {name: write_results(path) for name, path in dirs.items()}
    except (FileNotFoundError, NotADirectoryError, ValueError) as err:
        raise UsageError(str(err)) from None
    repeated = (args.dir / "experiment.json").exists()
    if repeated:
        try:
            tables = write_experiment_report(args.dir)
        except ValueError as err:
            raise UsageError(str(err)) from None
        firsts = first_runs(args.dir)
        if len(firsts) == len(dirs):
            tables = format_table({label: write_results(path) for label, path in firsts.items()})
        print(tables)
    else:
        print(format_table(summaries))
    logs = {name: read_events(path / "events.jsonl") for name, path in dirs.items()}
    for name, path in dirs.items():
        write_plots({name: logs[name]}, path)
        write_trace(path)
        if args.swf:
            write_swf(path)
        if args.batsim:
            write_batsim(path)
    if len(dirs) > 1:
        firsts = first_runs(args.dir) if repeated else dirs
        write_plots({name: read_events(path / "events.jsonl") for name, path in firsts.items()},
                    args.dir)
    extra = [name for name, wanted in (("jobs.swf", args.swf), ("batsim_jobs.csv", args.batsim))
             if wanted]
    print(f"figures, trace.json{''.join(', ' + e for e in extra)} written under {args.dir}")
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    """Run one MPI command as a job (like the T3D mppexec) and pass its output and exit code on."""
    if not args.command:
        raise UsageError("exec needs a command after --")
    if args.n < 1:
        raise UsageError(f"-n must be >= 1, got {args.n}")
    machine = _check_common(args, [args.scheduler])
    if args.n > machine.pes:
        raise UsageError(f"-n {args.n} is more than the machine's {machine.pes} PEs (see --pes)")
    workload = Workload("<exec>", [JobSpec("j1", 0, 0.0, args.n, tuple(args.command),
                                           limit=args.job_timeout)])
    run_dir = _new_run_dir(args.out, f"exec-{args.scheduler}")
    status, _ = _run_one(workload, args.scheduler, machine, args, run_dir)
    for suffix, stream in ((".out", sys.stdout), (".err", sys.stderr)):
        path = run_dir / "jobs" / f"j1{suffix}"
        if path.exists():
            stream.write(path.read_text(errors="replace"))
    if status == "interrupted":
        return EXIT_INTERRUPTED
    row = job_rows(read_events(run_dir / "events.jsonl"))[0]
    return job_exit_code(row.status, row.exit_code)


def cmd_mix(args: argparse.Namespace) -> int:
    """Write the THESIS §4.6 job mix to stdout or ``--output``."""
    params = MixParams(args.jobs, args.pes, args.load, args.seed, args.compress, args.work_min,
                       args.work_max, args.io_blocks)
    try:
        text = generate_mix(params)
    except ValueError as err:
        raise UsageError(str(err)) from None
    _write_text(text, args.output)
    return 0


def cmd_top(args: argparse.Namespace) -> int:
    """Show a run's matrix, current row, job states and progress, live until it ends."""
    if not args.dir.is_dir():
        raise UsageError(f"{args.dir}: no such run directory")
    try:
        follow(args.dir, interval=args.interval, once=args.once)
    except KeyboardInterrupt:
        return 0
    return 0


def cmd_shim(args: argparse.Namespace) -> int:
    """Print the path of the spin-block shim library (building it first if needed)."""
    print(shim.library_path(detect_mpi(), rebuild=args.build))
    return 0


def _write_text(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    tmp = output.with_name(f".{output.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, output)


def cmd_lublin(args: argparse.Namespace) -> int:
    """Write a Lublin-Feitelson workload (as benchmark jobs, or as SWF)."""
    try:
        jobs = lublin.generate(args.jobs, args.pes, args.seed, args.load,
                               daily_cycle=not args.no_daily_cycle)
    except ValueError as err:
        raise UsageError(str(err)) from None
    if args.format == "swf":
        cycle = "no daily cycle" if args.no_daily_cycle else "daily cycle"
        lines = ["; Version: 2.2", f"; Note: Lublin-Feitelson model, seed {args.seed}, "
                 f"load {args.load}, {cycle}; queue 1 = batch, 0 = interactive",
                 f"; MaxProcs: {args.pes}"]
        lines += [SwfJob(i, round(j.arrival), -1, round(j.runtime), j.size, -1, -1, j.size, -1,
                         -1, 1, -1, -1, -1, int(j.kind == "batch"), -1, -1, -1).line()
                  for i, j in enumerate(jobs, start=1)]
        _write_text("\n".join(lines) + "\n", args.output)
        return 0
    text = lublin.workload_text(jobs, args.pes, args.seed, args.load, args.compress,
                                daily_cycle=not args.no_daily_cycle)
    _write_text(text, args.output)
    return 0


def cmd_from_swf(args: argparse.Namespace) -> int:
    """Turn an SWF trace into a workload file of benchmark jobs."""
    if args.pes < 1 or args.compress <= 0:
        raise UsageError("--pes must be >= 1 and --compress > 0")
    try:
        _, jobs = read_swf(args.trace)
    except SwfError as err:
        raise UsageError(str(err)) from None
    options = ImportOptions(args.pes, args.compress, args.sizes, args.seed, args.granularity,
                            args.variance, args.pattern)
    text, skipped = to_workload(jobs, options, args.trace)
    if skipped:
        print(f"testbed: {skipped} of {len(jobs)} jobs skipped (no size or runtime)",
              file=sys.stderr)
    _write_text(text, args.output)
    return 0


def _load(path: str, timeslice: float, machine: Machine) -> Workload:
    try:
        workload = load_workload(path, timeslice)
        workload.check_fits(machine.pes)
    except WorkloadError as err:
        raise UsageError(str(err)) from None
    if not workload.jobs:
        raise UsageError(f"{path}: no jobs")
    return workload


def _setup_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload")
    p.add_argument("--scheduler", default="gang", help=f"one of {', '.join(sorted(POLICIES))}")
    p.add_argument("--live", action="store_true", help="show the live view while it runs")
    _owner_options(p)
    _scheduler_options(p)


def _owners(text: str) -> tuple[float, float]:
    try:
        rate, mean = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RATE:MEAN, got {text!r}") from None
    if not (rate > 0 and mean > 0 and math.isfinite(rate) and math.isfinite(mean)):
        raise argparse.ArgumentTypeError(f"RATE and MEAN must be > 0, got {text!r}")
    return rate, mean


def _owner_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--owners", type=_owners, default=None, metavar="RATE:MEAN",
                   help="workstation owners (afcfs, lgfs): Poisson arrivals at RATE per second, "
                        "each staying an exponential time of mean MEAN seconds (COW)")
    p.add_argument("--owner-seed", type=int, default=1, help="seed of the owner stream")


def _setup_simulate(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", help="a workload file (every job with a work) or an SWF trace")
    p.add_argument("--scheduler", default="gang",
                   help="one of " + ", ".join(sorted(n for n, c in POLICIES.items()
                                                     if c.simulable)))
    p.add_argument("--switch-cost", type=float, default=0.0, metavar="S",
                   help="seconds a job loses each time it is continued (default 0)")
    p.add_argument("--launch-cost", type=float, default=0.0, metavar="S",
                   help="seconds each job needs beyond its work to start (default 0)")
    p.add_argument("--uncompress", action="store_true",
                   help="undo the workload's time compression (compress= in its header)")
    _owner_options(p)
    _policy_options(p)


def _setup_top(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="a run directory (running or finished)")
    p.add_argument("--once", action="store_true", help="print one frame and exit")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between frames")


def _setup_compare(p: argparse.ArgumentParser) -> None:
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
                        "median (or the budget is spent)")
    p.add_argument("--budget", type=float, default=None, metavar="S",
                   help="seconds the whole comparison may take with --until-ci")
    p.add_argument("--json", action="store_true",
                   help="print one JSON record per scheduler and metric instead of the table")
    p.add_argument("--executor", choices=("emulation", "simulation"), default="emulation",
                   help="real ranks (default) or the simulator (repeats differ by seed)")
    p.add_argument("--switch-cost", type=float, default=0.0, metavar="S",
                   help="simulation: seconds a job loses each time it is continued")
    p.add_argument("--launch-cost", type=float, default=0.0, metavar="S",
                   help="simulation: seconds each job needs beyond its work to start")
    p.add_argument("--uncompress", action="store_true",
                   help="simulation: undo the workload's time compression")
    _owner_options(p)
    _scheduler_options(p)


def _setup_experiment_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="an experiment file (TOML)")
    p.add_argument("--out", type=Path, default=None,
                   help="the experiment's directory (default runs/NAME, NAME the file's stem); "
                        "an interrupted experiment resumes there")
    p.add_argument("--json", action="store_true", help="print the records as JSON")


def _setup_experiment_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, help="an experiment's (or a compare's) directory")
    p.add_argument("--markdown", type=Path, default=None, metavar="FILE",
                   help="also write the tables as Markdown with the machine, date and command")


def _setup_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path)
    p.add_argument("--swf", action="store_true", help="also export each run as jobs.swf")
    p.add_argument("--batsim", action="store_true",
                   help="also write each run's jobs in Batsim's jobs.csv columns "
                        "(batsim_jobs.csv, read by evalys)")


def _setup_exec(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=int, required=True, help="number of ranks")
    p.add_argument("--scheduler", default="gang")
    _scheduler_options(p)
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")


def _setup_lublin(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--pes", type=int, required=True)
    p.add_argument("--load", type=float, default=None, help="offered load (scales arrivals)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--compress", type=float, default=100.0, help="time compression factor")
    p.add_argument("--format", choices=("workload", "swf"), default="workload")
    p.add_argument("--no-daily-cycle", action="store_true",
                   help="the same arrival rate at every hour (as T3D's workload)")
    p.add_argument("--output", "-o", type=Path, default=None)


def _setup_from_swf(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace")
    p.add_argument("--pes", type=int, required=True, help="PEs of the machine to run on")
    p.add_argument("--compress", type=float, default=100.0, help="time compression factor")
    p.add_argument("--sizes", choices=("cap", "scale"), default="cap",
                   help="cap sizes at the machine, or scale them by machine / largest job")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--granularity", type=float, default=None, help="fixed G (else drawn)")
    p.add_argument("--variance", type=float, default=None, help="fixed V (else drawn)")
    p.add_argument("--pattern", choices=("none", "nn", "aa"), default=None)
    p.add_argument("--output", "-o", type=Path, default=None)


def _setup_shim(p: argparse.ArgumentParser) -> None:
    p.add_argument("--path", action="store_true", help="print the library's path (the default)")
    p.add_argument("--build", action="store_true", help="compile it again even if it exists")


def _setup_mix(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--pes", type=int, required=True)
    p.add_argument("--load", type=float, default=0.75, help="offered load")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--compress", type=float, default=100.0, help="time compression factor")
    p.add_argument("--work-min", type=float, default=10.0, help="seconds, before compression")
    p.add_argument("--work-max", type=float, default=14400.0, help="seconds, before compression")
    p.add_argument("--io-blocks", type=int, default=0, help="B for every job")
    p.add_argument("--output", "-o", type=Path, default=None)


def _setup_serve(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scheduler", default="gang", help=f"one of {', '.join(sorted(POLICIES))}")
    p.add_argument("--socket", type=Path, default=None,
                   help="the socket to listen on (default: TESTBED_SOCKET, else "
                        "$XDG_RUNTIME_DIR/testbed/coordinator.sock or "
                        "/tmp/testbed-UID/coordinator.sock)")
    _scheduler_options(p)


def _setup_client(p: argparse.ArgumentParser) -> None:
    p.add_argument("--socket", default=None, help="the service's socket (as for serve)")


def _setup_submit(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload")
    _setup_client(p)


def _setup_job(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="a job id, as testbed queue shows it (j12)")
    _setup_client(p)


def _setup_class(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="a job id, as testbed queue shows it (j12)")
    p.add_argument("job_class", metavar="CLASS", help="a class of the t3d class table")
    _setup_client(p)


def _setup_migrate(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="a job id, as testbed queue shows it (j12)")
    p.add_argument("pes", metavar="PE", type=int, nargs="+", help="the PE of each rank, in order")
    _setup_client(p)


Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]
COMMANDS: dict[str, Command] = {
    "run": (_setup_run, cmd_run),
    "simulate": (_setup_simulate, cmd_simulate),
    "serve": (_setup_serve, cmd_serve),
    "submit": (_setup_submit, cmd_submit),
    "queue": (_setup_client, cmd_queue),
    "cancel": (_setup_job, _job_command(Cancel, "Cancel a job of yours (root: any)")),
    "suspend": (_setup_job, _job_command(Suspend, "Hold a job of yours stopped (gangster)")),
    "resume": (_setup_job, _job_command(Resume, "Let a suspended job run again")),
    "class": (_setup_class, cmd_class),
    "migrate": (_setup_migrate, cmd_migrate),
    "stop": (_setup_client, cmd_stop),
    "compare": (_setup_compare, cmd_compare),
    "report": (_setup_report, cmd_report),
    "exec": (_setup_exec, cmd_exec),
    "shim": (_setup_shim, cmd_shim),
    "top": (_setup_top, cmd_top),
}
EXPERIMENT_COMMANDS: dict[str, Command] = {
    "run": (_setup_experiment_run, cmd_experiment_run),
    "report": (_setup_experiment_report, cmd_experiment_report),
}
WORKLOAD_COMMANDS: dict[str, Command] = {
    "mix": (_setup_mix, cmd_mix),
    "lublin": (_setup_lublin, cmd_lublin),
    "from-swf": (_setup_from_swf, cmd_from_swf),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``testbed`` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="testbed", description="MPI scheduling testbed")
    parser.add_argument("--version", action="version", version=f"testbed {__version__}")
    sub = parser.add_subparsers(dest="command_name", required=True)
    for name, (setup, handler) in COMMANDS.items():
        p = sub.add_parser(name, help=(handler.__doc__ or "").splitlines()[0])
        setup(p)
        p.set_defaults(handler=handler)
    for group, helptext, commands in (
            ("workload", "generate workload files", WORKLOAD_COMMANDS),
            ("experiment", "run experiment files and report on them", EXPERIMENT_COMMANDS)):
        top = sub.add_parser(group, help=helptext)
        groupsub = top.add_subparsers(dest=f"{group}_command", required=True)
        for name, (setup, handler) in commands.items():
            p = groupsub.add_parser(name, help=(handler.__doc__ or "").splitlines()[0])
            setup(p)
            p.set_defaults(handler=handler)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``testbed`` command; returns the exit code."""
    args = build_parser().parse_args(argv)
    if getattr(args, "command", None) and args.command[:1] == ["--"]:
        args.command = args.command[1:]
    try:
        return args.handler(args)
    except ServiceUnavailable as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_FAILED
    except UsageError as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (MpiNotFound, shim.ShimBuildError) as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_NO_MPI
    except MemorySetupError as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except NodesError as err:
        print(f"testbed: cannot start the node managers: {err}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except WriteFailed as err:
        print(f"testbed: {err}", file=sys.stderr)
        return EXIT_WRITE_FAILED


if __name__ == "__main__":
    sys.exit(main())

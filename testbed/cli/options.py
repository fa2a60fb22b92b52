"""The options of runs as argparse sees them, and the run library's ``Options`` made from
them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from testbed.memory_history import DEFAULT_PATH as DEFAULT_HISTORY
from testbed.policies import POLICIES
from testbed.run_options import CHOICES, TEXT_FORMS, Options

DEFAULTS = Options()


def _text(option: str) -> Callable[[str], Any]:
    """The argparse type of ``option``: the run library's parser of its text form."""
    parse = TEXT_FORMS[option]

    def parsed(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    parsed.__name__ = option
    return parsed


def policy_options(p: argparse.ArgumentParser) -> None:
    """Options of every policy, emulated or simulated."""
    p.add_argument("--mpl", type=_text("mpl"), default=DEFAULTS.mpl, metavar="N|unbounded",
                   help="multiprogramming level (rows); fcfs and the batch policies use 1; "
                        "unbounded (simulator only): a new row whenever a job fits in none")
    p.add_argument("--timeslice", type=float, default=DEFAULTS.timeslice,
                   help="timeslice T, seconds (default %(default)s)")
    p.add_argument("--pes", type=int, default=DEFAULTS.pes,
                   help="PEs (default: CPUs in the affinity mask)")
    p.add_argument("--allocator", choices=CHOICES["allocator"], default=DEFAULTS.allocator)
    p.add_argument("--job-timeout", type=float, default=DEFAULTS.job_timeout,
                   help="kill a job after this many seconds of runtime (limit= on a line wins)")
    p.add_argument("--estimates", choices=CHOICES["estimates"], default=DEFAULTS.estimates,
                   help="runtime estimates for the batch policies: estimate= on each line (SWF: "
                        "requested time), or each job's work (perfect knowledge, as T3D)")
    p.add_argument("--overrun", choices=CHOICES["overrun"], default=DEFAULTS.overrun,
                   help="a job outliving its given estimate under a batch policy is killed at "
                        "it (as batch systems do) or runs on")
    p.add_argument("--prime-shift", type=float, default=DEFAULTS.prime_shift, metavar="S",
                   help="prime: length of each shift, seconds (12 h)")
    p.add_argument("--prime-large", type=int, default=DEFAULTS.prime_large, metavar="PES",
                   help="prime: jobs on more PEs are large (default: a quarter of the PEs)")
    p.add_argument("--prime-free", type=int, default=DEFAULTS.prime_free, metavar="PES",
                   help="prime: PEs a small job must leave free (default: a quarter of the PEs)")
    p.add_argument("--prime-large-limit", type=float, default=DEFAULTS.prime_large_limit,
                   metavar="S", help="prime: longest large job in prime time, seconds (600)")
    p.add_argument("--prime-small-limit", type=float, default=DEFAULTS.prime_small_limit,
                   metavar="S", help="prime: longest small job in prime time, seconds (4 h)")
    p.add_argument("--classes", type=Path, default=DEFAULTS.classes, metavar="FILE",
                   help="job classes of the t3d scheduler (TOML; default: T3D's daytime table "
                        "scaled to the machine)")
    p.add_argument("--variation", type=float, default=DEFAULTS.variation, metavar="V",
                   help="T3E's adaptive slice: timeslice + switch time x V (default 0: fixed); "
                        "with --node-mem a switch pages the incoming jobs in")
    p.add_argument("--balance", type=float, default=DEFAULTS.balance, metavar="S",
                   help="T3E psched's load balancer: seconds between passes, each moving at "
                        "most one job to free PEs of a lower row (default 0: off)")
    p.add_argument("--migration-delay", type=float, default=DEFAULTS.migration_delay, metavar="S",
                   help="how long a job whose migration failed or was made by hand is left "
                        "alone by the balancer (default 10 s)")
    p.add_argument("--app-max", type=int, default=DEFAULTS.app_max, metavar="N",
                   help="psched: normal (not prime) applications per PE (default 1, NERSC's)")
    p.add_argument("--abs-app-max", type=int, default=DEFAULTS.abs_app_max, metavar="N",
                   help="psched: applications per PE in all: the matrix's rows, in place of "
                        "--mpl (default 2)")
    p.add_argument("--defrag", type=float, default=DEFAULTS.defrag, metavar="S",
                   help="psched-split, psched-split-gang: once the job at the head of the "
                        "queue has waited S seconds, launch nothing behind it until it "
                        "launches (NERSC's de-fragment script; default 0: never)")
    p.add_argument("--out", type=Path, default=None, help="run directory (must not exist)")

def scheduler_options(p: argparse.ArgumentParser) -> None:
    policy_options(p)
    p.add_argument("--nodes", type=int, default=DEFAULTS.nodes,
                   help="emulated nodes the PEs are split into")
    p.add_argument("--rank-priority", type=_text("rank_priority"),
                   default=DEFAULTS.rank_priority,
                   metavar="auto|normal|batch|idle|POLICY:NICE",
                   help="how ranks are scheduled beside the coordinator (default auto: as they "
                        "are beside a real-time coordinator, else idle)")
    p.add_argument("--hosts", type=Path, default=DEFAULTS.hosts, metavar="HOSTFILE",
                   help="hosts in hydra's NAME[:SLOTS] format, a node manager on each (default "
                        "inside a Slurm allocation: its hosts, unless --pes or --nodes is given)")
    p.add_argument("--launcher", default=DEFAULTS.launcher, metavar="NAME",
                   help="hydra's launcher for the hosts: fork (all hosts emulated on this "
                        "machine), ssh, slurm, ... (default: hydra's choice; slurm in Slurm)")
    p.add_argument("--tree-width", type=_text("tree_width"), default=DEFAULTS.tree_width,
                   metavar="W",
                   help="with hosts: the coordinator sends each heartbeat to at most W node "
                        "managers, each passes it on to at most W more (Slurm's TreeWidth; "
                        f"default {DEFAULTS.tree_width})")
    p.add_argument("--spin", type=float, default=DEFAULTS.spin,
                   help="shim spin time, seconds: fixed for ics, MAX_spin for fcs (0.0005)")
    p.add_argument("--hang-after", type=float, default=DEFAULTS.hang_after, metavar="S",
                   help="fail a job as hung after S seconds, not counting time it was stopped, "
                        "in which no MPI call returned and every rank waited in one (ics, "
                        "fcs) or its ranks used no CPU (default "
                        f"{DEFAULTS.hang_after:g}; 0: never)")
    p.add_argument("--node-mem", type=_text("node_mem"), default=DEFAULTS.node_mem, metavar="SIZE",
                   help="memory limit of each emulated node, e.g. 512M (root, cgroups)")
    p.add_argument("--swap", type=_text("swap"), default=DEFAULTS.swap, metavar="SIZE",
                   help="make a swap file of SIZE for the run and remove it after (root)")
    p.add_argument("--memory-admission", type=float, default=DEFAULTS.memory_admission, metavar="C",
                   help="admit a job only where eq. 1 holds with factor C (MEMORY §3.2)")
    p.add_argument("--memory-history", type=Path, default=DEFAULTS.memory_history,
                   metavar="FILE",
                   help="history of measured peaks, used for estimates and updated by every "
                        f"finished job (default with --memory-admission: {DEFAULT_HISTORY})")

def owner_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--owners", type=_text("owners"), default=DEFAULTS.owners, metavar="RATE:MEAN",
                   help="workstation owners (afcfs, lgfs): Poisson arrivals at RATE per second, "
                        "each staying an exponential time of mean MEAN seconds (COW)")
    p.add_argument("--owner-seed", type=int, default=DEFAULTS.owner_seed,
                   help="seed of the owner stream")


def scheduler_choice(p: argparse.ArgumentParser, names: list[str] | None = None) -> None:
    """``--scheduler``, one of ``names`` (default: every registered scheduler)."""
    p.add_argument("--scheduler", default=DEFAULTS.scheduler,
                   help=f"one of {', '.join(names or sorted(POLICIES))} "
                        f"(default {DEFAULTS.scheduler})")


def simulator_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """The simulator's own options (``prefix`` before each help text)."""
    p.add_argument("--switch-cost", type=float, default=DEFAULTS.switch_cost, metavar="S",
                   help=f"{prefix}seconds a job loses each time it is continued (default 0)")
    p.add_argument("--launch-cost", type=float, default=DEFAULTS.launch_cost, metavar="S",
                   help=f"{prefix}seconds each job needs beyond its work to start (default 0)")
    p.add_argument("--uncompress", action="store_true",
                   help=f"{prefix}undo the workload's time compression (compress= in its "
                        "header)")


def options_of(args: argparse.Namespace, **changes: object) -> Options:
    """The run library's options from parsed arguments (then ``changes``)."""
    return Options.of(args, **changes)

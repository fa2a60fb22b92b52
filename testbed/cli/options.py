"""The options of runs as argparse sees them, and the run library's ``Options`` made from
them."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from testbed.emulation.procs import RankPriority
from testbed.emulation.tree import DEFAULT_WIDTH
from testbed.hang import DEFAULT_HANG_AFTER
from testbed.memory_history import DEFAULT_PATH as DEFAULT_HISTORY
from testbed.policies import PrimeTime
from testbed.policies.matrix import UNBOUNDED
from testbed.run import Options
from testbed.sizes import parse_size


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None

def _mpl(text: str) -> int:
    if text == "unbounded":
        return UNBOUNDED
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of rows or 'unbounded', "
                                         f"got {text!r}") from None

def policy_options(p: argparse.ArgumentParser) -> None:
    """Options of every policy, emulated or simulated."""
    p.add_argument("--mpl", type=_mpl, default=2, metavar="N|unbounded",
                   help="multiprogramming level (rows); fcfs and the batch policies use 1; "
                        "unbounded (simulator only): a new row whenever a job fits in none")
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

def _tree_width(text: str) -> int:
    try:
        width = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if width < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {width}")
    return width

def scheduler_options(p: argparse.ArgumentParser) -> None:
    policy_options(p)
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
    p.add_argument("--tree-width", type=_tree_width, default=DEFAULT_WIDTH, metavar="W",
                   help="with hosts: the coordinator sends each heartbeat to at most W node "
                        "managers, each passes it on to at most W more (Slurm's TreeWidth; "
                        f"default {DEFAULT_WIDTH})")
    p.add_argument("--spin", type=float, default=None,
                   help="shim spin time, seconds: fixed for ics, MAX_spin for fcs (0.0005)")
    p.add_argument("--hang-after", type=float, default=DEFAULT_HANG_AFTER, metavar="S",
                   help="fail a job as hung after S seconds, not counting time it was stopped, "
                        "in which no MPI call returned and every rank waited in one (ics, "
                        "fcs) or its ranks used no CPU (default "
                        f"{DEFAULT_HANG_AFTER:g}; 0: never)")
    p.add_argument("--node-mem", type=_size, default=None, metavar="SIZE",
                   help="memory limit of each emulated node, e.g. 512M (root, cgroups)")
    p.add_argument("--swap", type=_size, default=None, metavar="SIZE",
                   help="make a swap file of SIZE for the run and remove it after (root)")
    p.add_argument("--memory-admission", type=float, default=None, metavar="C",
                   help="admit a job only where eq. 1 holds with factor C (MEMORY §3.2)")
    p.add_argument("--memory-history", type=Path, default=None, metavar="FILE",
                   help="history of measured peaks, used for estimates and updated by every "
                        f"finished job (default with --memory-admission: {DEFAULT_HISTORY})")

def _owners(text: str) -> tuple[float, float]:
    try:
        rate, mean = (float(x) for x in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RATE:MEAN, got {text!r}") from None
    if not (rate > 0 and mean > 0 and math.isfinite(rate) and math.isfinite(mean)):
        raise argparse.ArgumentTypeError(f"RATE and MEAN must be > 0, got {text!r}")
    return rate, mean

def owner_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--owners", type=_owners, default=None, metavar="RATE:MEAN",
                   help="workstation owners (afcfs, lgfs): Poisson arrivals at RATE per second, "
                        "each staying an exponential time of mean MEAN seconds (COW)")
    p.add_argument("--owner-seed", type=int, default=1, help="seed of the owner stream")


def options_of(args: argparse.Namespace, **changes: object) -> Options:
    """The run library's options from parsed arguments (then ``changes``)."""
    return Options.of(args, **changes)

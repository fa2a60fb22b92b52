"""Messages between the machine manager (MM) and the node managers (NM), THESIS §4.3.6.

On one host they are passed as objects.  With hosts, every node manager is a process of its
own (``testbed.emulation.nm_daemon``) and the same messages travel as pickles over
authenticated connections (``multiprocessing.connection``): one between the MM and each NM,
and one between each NM and each of its children in the fan-out tree
(``testbed.emulation.tree``).  The last ones below exist only there: the NM's greeting and
set-up, a request's ``Reply``, a broadcast going down the tree and what each subtree
``Gathered`` coming up, the NM's own ``Push``es (rank pids found, samples,
terminations, class changes), and ``Close``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from testbed.hang import RankSample


@dataclass(frozen=True)
class Heartbeat:
    """MM -> NMs: run exactly ``jobs`` from now on (the multi-context-switch)."""

    seq: int
    slot: int | None
    jobs: frozenset[str]
    sent: float


@dataclass(frozen=True)
class LaunchJob:
    """MM -> NMs: start ``job``'s ranks, rank i on ``pes[i]``, argv never through a shell."""

    job: str
    slot: int
    pes: tuple[int, ...]
    argv: tuple[str, ...]
    run_now: bool
    stdout: str
    stderr: str
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None


@dataclass(frozen=True)
class PidInfo:
    """NM -> MM (and MM -> the job's other NMs): the pid of every rank, by rank."""

    job: str
    pids: dict[int, int]
    seconds_after_launch: float


@dataclass(frozen=True)
class LaunchFailure:
    """NM -> MM: the job could not be started."""

    job: str
    reason: str


@dataclass(frozen=True)
class Termination:
    """NM -> MM: the job's launcher exited; ``status`` is done, failed, timeout or killed."""

    job: str
    status: str
    exit_code: int | None
    reason: str


@dataclass(frozen=True)
class KillJob:
    """MM -> NMs: kill ``job`` now (its limit expired, or the run is ending)."""

    job: str
    reason: str


@dataclass(frozen=True)
class Release:
    """MM -> NMs: ``job`` has ended everywhere; forget its processes."""

    job: str


@dataclass(frozen=True)
class JobCounters:
    """NM -> MM, in answer to ``Release``: each local rank's last sampled CPU seconds, faults
    and peak RSS (KiB), all None for a rank whose process was never found, and its final shim
    counters under ``shim`` when it had the shim."""

    job: str
    ranks: dict[int, dict[str, object]]


@dataclass(frozen=True)
class Shutdown:
    """MM -> NMs: the run is over; kill whatever is left."""

    reason: str


@dataclass(frozen=True)
class MoveJob:
    """MM -> NMs: move ``job``'s rank i to PE ``pes[i]`` (pin it to that PE's CPU) and make
    ``slot`` its home row."""

    job: str
    slot: int
    pes: tuple[int, ...]


@dataclass(frozen=True)
class MoveFailed:
    """NM -> MM: a move could not be made here, and why."""

    job: str
    reason: str


@dataclass(frozen=True)
class Paged:
    """NM -> MM: a stopped job's memory on this node was moved to swap (``out``) or back
    (``in``) during a heartbeat: seconds taken and KiB of swap its ranks used before/after."""

    job: str
    direction: str
    seconds: float
    swap_kib_before: int
    swap_kib_after: int


@dataclass(frozen=True)
class SwitchDone:
    """NM -> MM: a heartbeat was carried out (a measurement, not in THESIS's protocol).

    ``latency`` is from the heartbeat being sent to the last signal being issued (the time
    stamp is taken as its system call starts), in seconds; with no signal, to the reply.
    """

    seq: int
    node: int
    stopped: tuple[str, ...]
    continued: tuple[str, ...]
    latency: float


@dataclass(frozen=True)
class Hello:
    """NM -> MM on connecting: its node index by its launcher's numbering, host name (Slurm's
    node name inside a Slurm step), pid, the CPUs it may use and its scheduling policy
    (real-time when permitted, like the MM's), and the TCP port its parent in the tree is to
connect to."""

    index: int
    hostname: str
    pid: int
    cpus: tuple[int, ...]
    priority: str
    port: int = 0


@dataclass(frozen=True)
class NodeSetup:
    """MM -> NM after ``Hello``: what a node manager is built from (``index``: which of the
    machine's nodes it is), the MM's clock (s since the run started) when it was sent, the
    MM's ``time.monotonic()`` at the run's start, which the NM's clock starts from, the
    ``--rank-priority`` setting, and its place in the tree: its parent's index (None: the MM)
    and its children's index, host address and port, which it connects to."""

    index: int
    machine: Any
    launcher: Any
    env: dict[str, str]
    run_id: str
    policy: Any
    shim: Any
    now: float
    t0: float
    rank_priority: str
    parent: int | None = None
    children: tuple[tuple[int, str, int], ...] = ()


@dataclass(frozen=True)
class Reply:
    """NM -> MM: the replies to the one request just handled."""

    items: list[object]


@dataclass(frozen=True)
class NodeSample:
    """What a node manager sampled (pushed to the MM every sample from other hosts): per job
    with ranks there, their summed RSS (KiB) and faults, and each rank's ``RankSample`` (its
    CPU seconds and what it is doing in MPI) by rank."""

    memory: dict[str, dict[str, int]]
    activity: dict[str, dict[int, RankSample]]


@dataclass(frozen=True)
class Push:
    """NM -> MM, unasked: pids found (``PidInfo``, this host's ranks), a ``NodeSample``, a
    job's ``Termination`` (its launcher ran here) and ``ClassChange``/``Paged`` records."""

    items: list[object]


@dataclass(frozen=True)
class Close:
    """MM -> NM: the run is over and everything was released; sweep and exit."""


@dataclass(frozen=True)
class Gathered:
    """NM -> its parent, or the MM: the answers of a subtree to broadcast ``seq``.

    ``nodes`` has a bit for each node whose answers are in (``1 << index``); ``done`` is their
    ``SwitchDone`` merged into one (the jobs stopped and continued anywhere, the slowest node's
    latency; None if the message was not a heartbeat) and ``items`` their other replies, each
    with the node it came from.  ``hop`` is the slowest hop in the subtree (from a sender's
    send to the receiver ready to forward it, s) and ``send`` the largest cost per child of an
    NM's forwarding (s; None if no NM of the subtree forwarded).
    """

    seq: int
    nodes: int
    done: SwitchDone | None
    items: list[tuple[int, object]]
    hop: float
    send: float | None


@dataclass(frozen=True)
class TreeHello:
    """NM -> its child on connecting: which node the parent is."""

    parent: int


@dataclass(frozen=True)
class Orphaned:
    """NM -> MM (pushed): the connection to its parent in the tree ended; the MM sends it the
    broadcasts itself from now on."""

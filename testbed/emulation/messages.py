"""Messages between the machine manager (MM) and the node managers (NM), THESIS §4.3.6.

On one host they are passed as objects; the kinds are kept so that node managers can later live
on other hosts and receive the same messages over MPI.
"""

from __future__ import annotations

from dataclasses import dataclass


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
    and peak RSS (KiB), and its final shim counters under ``shim`` when it had the shim."""

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

    ``latency`` is from the heartbeat being sent to the last signal delivered, in seconds.
    """

    seq: int
    node: int
    stopped: tuple[str, ...]
    continued: tuple[str, ...]
    latency: float

"""The shim's cost and its spin-block behaviour, measured with small MPI programs.

* ``pingpong``: round-trip latency of 8-byte messages between two ranks, with and without the
  shim preloaded, alternating in the same invocation (the shim busy-polls here, as MPICH does,
  so the difference is the interposition itself, ringing included);
* ``wakeup``: rank 0 waits in a receive while rank 1 sleeps (2-10 ms: short waits; 20-50 ms:
  a peer descheduled for a while) and then sends its send time; with the shim set to block
  after 100 us, it reports rank 0's CPU use while waiting (fraction of a core, spinning
  included), its CPU use while blocked (``asleep_cpu_share``: CPU time over time blocked, from
  its record), how its sleeps ended (``shim``: ``wakes_rung`` by the sender's doorbell,
  ``wakes_timed`` by the safety net) and the wake-up latency from the send to the receive
  returning (p50/p99), against MPICH's busy-polling;
* ``os_pipe`` and ``os_futex``: the operating system's own wake-up, the floor under the
  shim's: a forked child sleeps as rank 1 does and writes its send time to a pipe on which
  this process is blocked in a read, or stores it beside a futex word of a shared mapping on
  which this process is blocked (no timeout) and wakes it, as the shim's doorbell does
  (``clients/futex_wake.c``); p50/p99 from the send time to the read or wait returning, and
  the waiter's CPU share, for short and long waits alike; ``os_futex_timed_2ms``: the futex
  with every sleep timing out after 2 ms and sleeping again, as the shim's safety net did
  before issue 40 (it shows what a timeout that fires costs the wake-up at the ring);
* ``collectives``: the mean time of a two-rank ``MPI_Allreduce`` of 8 bytes and of an
  ``MPI_Barrier`` (microseconds; each call in a loop of ``--iterations``, nothing else
  running; a C program, ``clients/collective_cost.c``, so that no Python stands between the
  loop and MPI), without the shim and with it set to spin-block as under ``ics``,
  alternating in the same invocation.  With the shim the allreduce takes MPICH's nonblocking path
  (``MPI_Iallreduce`` tested to completion), the cost every spin-block wait of a collective
  pays whatever the scheduling, which the same allreduce made as ``MPI_Iallreduce`` and
  ``MPI_Wait`` shows without the shim; the barrier is the ranks' meeting on arrival counts in
  their records (``native/arrival.c``).

With the shim the ranks run on shim records made for them as a node manager makes them (spin
set there, no node manager socket), so that they find and ring each other's doorbells as in
the testbed.

The wake-up cases run interleaved, each once a round, in an order rotated from round to
round; each figure is the median over the rounds with its distribution-free interval, and the
shim's p99 over the floors' is a ratio of the rounds' pairs with its interval
(``testbed.experiments.stats``).

Prints the figures as one JSON object; ``--markdown PAGE`` also writes them as a Markdown page
with the host, the date and the command that wrote it.

Usage: ``python -m benchmarks.overheads.shim_cost [--rounds 6] [--iterations 20000] [--waits 300]
[--markdown PAGE]``
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import random
import statistics
import struct
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import cffi

from benchmarks.harness import (
    CLIENTS,
    Session,
    emit,
    host,
    markdown_table,
    median,
    page_head,
    parser,
)
from benchmarks.programs.real_clients import build_c_client
from testbed.emulation import build
from testbed.emulation.mpi_info import detect_mpi
from testbed.emulation.shim import library_path
from testbed.experiments.stats import Interval, below_nominal, median_interval, ratio_interval
from testbed.policies.spin import Spin
from testbed.results.metrics import percentiles
from testbed.shim_record import Record, record_path

RANKS = 2
BUSY = Spin("forever")
BLOCK_AFTER_100US = Spin("fixed", fixed_s=0.0001)


def pingpong(iterations: int) -> dict[str, float]:
    """Rank-side: mean round-trip time of 8-byte Send/Recv, microseconds."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    buf = bytearray(8)
    peer = 1 - comm.Get_rank()
    for _ in range(iterations // 10):
        _exchange(comm, buf, peer)
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iterations):
        _exchange(comm, buf, peer)
    return {"round_trip_us": (time.perf_counter() - t0) / iterations * 1e6}


def _exchange(comm, buf, peer) -> None:  # noqa: ANN001
    if comm.Get_rank() == 0:
        comm.Send(buf, peer)
        comm.Recv(buf, peer)
    else:
        comm.Recv(buf, peer)
        comm.Send(buf, peer)


def wakeup(waits: int, low_ms: float, high_ms: float) -> dict[str, object]:
    """Rank-side: rank 0's CPU share while waiting and its wake-up latencies."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    stamp = bytearray(8)
    rng = random.Random(1)
    latency, cpu, wall = [], 0.0, 0.0
    comm.Barrier()
    for _ in range(waits):
        if comm.Get_rank() == 1:
            time.sleep(rng.uniform(low_ms, high_ms) / 1e3)
            stamp[:] = time.clock_gettime_ns(time.CLOCK_MONOTONIC).to_bytes(8, "little")
            comm.Send(stamp, 0)
        else:
            c0, w0 = time.process_time(), time.perf_counter()
            comm.Recv(stamp, 1)
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            latency.append((now - int.from_bytes(stamp, "little")) / 1e3)
    return {"cpu_share": cpu / wall if wall else 0.0, "wakeup_us": percentiles(latency)}


@contextmanager
def records(spin: Spin) -> Iterator[tuple[dict[str, str], list[Record]]]:
    """Shim records for the ranks of one ``mpiexec``, as a node manager makes them (spin
    ``spin``, no node manager socket), removed afterwards: the environment that points the
    ranks' shims at them, and the records."""
    run, job = f"shimcost{os.getpid()}", "job"
    made: list[Record] = []
    try:
        for rank in range(RANKS):
            made.append(Record.create(record_path(run, job, rank), rank, job, rank, "", spin))
        yield {"TESTBED_RUN": run, "TESTBED_JOB": job}, made
    finally:
        for record in made:
            record.remove()


def _floor(waits: int, low_ms: float, high_ms: float, send: Callable[[int], None],
           receive: Callable[[], int]) -> dict[str, object]:
    """The wake-up latency (us) of this process blocked in ``receive`` (which returns the send
    time it was given), woken by a forked child that sleeps ``low_ms`` to ``high_ms`` before
    each ``send`` of its send time, and this process's CPU share while waiting."""
    child = os.fork()
    if child == 0:
        rng = random.Random(1)
        for _ in range(waits):
            time.sleep(rng.uniform(low_ms, high_ms) / 1e3)
            send(time.clock_gettime_ns(time.CLOCK_MONOTONIC))
        os._exit(0)
    latency, cpu, wall = [], 0.0, 0.0
    try:
        for _ in range(waits):
            c0, w0 = time.process_time(), time.perf_counter()
            stamp = receive()
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            latency.append((now - stamp) / 1e3)
    finally:
        os.waitpid(child, 0)
    return {"cpu_share": cpu / wall if wall else 0.0, "wakeup_us": percentiles(latency)}


def pipe_wakeup(waits: int, low_ms: float, high_ms: float) -> dict[str, object]:
    """``_floor`` with the send time written to a pipe on which this process is blocked in a
    read: the operating system's floor under the shim's wake-up."""
    read_end, write_end = os.pipe()

    def send(stamp: int) -> None:
        os.write(write_end, stamp.to_bytes(8, "little"))

    try:
        return _floor(waits, low_ms, high_ms, send,
                      lambda: int.from_bytes(os.read(read_end, 8), "little"))
    finally:
        os.close(read_end)
        os.close(write_end)


FUTEX_API = """uint32_t futex_await(uint32_t *word, uint32_t seen, long timeout_ns);
void futex_ring(uint32_t *word);"""


STAMP_SLOTS = 1024


def futex_wakeup(waits: int, low_ms: float, high_ms: float,
                 timeout_ns: int = 0) -> dict[str, object]:
    """``_floor`` with the send time stored beside a futex word of a shared mapping on which
    this process is blocked (``clients/futex_wake.c``, built on first use), the child adding 1
    to the word and waking it: the floor of the shim's doorbell; with ``timeout_ns``, every
    sleep times out after that many nanoseconds and sleeps again, as a safety net would.  Each
    ring has its own stamp slot (ring n in slot n mod ``STAMP_SLOTS``), so that two rings that
    come before this process wakes are both taken, each with its own send time (a ring counted
    but not taken would leave the last receive waiting for a ring that never comes)."""
    ffi = cffi.FFI()
    ffi.cdef(FUTEX_API)
    futex = ffi.dlopen(str(build.library("futex_wake", [CLIENTS / "futex_wake.c"],
                                         ["cc", "-O2", "-fPIC", "-shared", "-Wall"])))
    shared = mmap.mmap(-1, 64 + 8 * STAMP_SLOTS)
    buffer = ffi.from_buffer(shared)
    word = ffi.cast("uint32_t *", buffer)
    sent, seen, pending = [0], [0], deque[int]()

    def send(stamp: int) -> None:
        struct.pack_into("=Q", shared, 64 + 8 * (sent[0] % STAMP_SLOTS), stamp)
        sent[0] += 1
        futex.futex_ring(word)

    def receive() -> int:
        if not pending:
            rung = futex.futex_await(word, seen[0], timeout_ns)
            pending.extend(struct.unpack_from("=Q", shared, 64 + 8 * (n % STAMP_SLOTS))[0]
                           for n in range(seen[0], rung))
            seen[0] = rung
        return pending.popleft()

    try:
        return _floor(waits, low_ms, high_ms, send, receive)
    finally:
        ffi.release(buffer)
        shared.close()


def _run(mode: str, count: int, env: dict[str, str], sleep_ms: str = "2:10",
         spin: Spin | None = None) -> dict[str, Any]:
    """Run ``mode`` on two ranks; with ``spin``, on records (``records``), whose rank 0
    counters are added as ``shim``."""
    mpi = detect_mpi()

    def mpiexec(extra: dict[str, str]) -> dict[str, Any]:
        out = subprocess.run([mpi.mpiexec, "-n", str(RANKS),
                              *[a for k, v in {**env, **extra}.items() for a in ("-genv", k, v)],
                              sys.executable, "-m", "benchmarks.overheads.shim_cost", "--rank",
                              mode,
                              str(count), sleep_ms], check=True, capture_output=True,
                             text=True).stdout
        return json.loads(out.strip().splitlines()[0])

    if spin is None:
        return mpiexec({})
    with records(spin) as (extra, made):
        result = mpiexec(extra)
        result["shim"] = made[0].counters().as_dict()
    return result


def _collectives(iterations: int, env: dict[str, str], spin: Spin | None = None
                 ) -> dict[str, float]:
    """Run ``clients/collective_cost.c`` (built on first use with the MPI's ``mpicc``) on two
    ranks, on records with ``spin`` if given: its figures, us a call."""
    mpi = detect_mpi()
    program = build_c_client(CLIENTS / "collective_cost.c")

    def mpiexec(extra: dict[str, str]) -> dict[str, float]:
        out = subprocess.run([mpi.mpiexec, "-n", str(RANKS),
                              *[a for k, v in {**env, **extra}.items() for a in ("-genv", k, v)],
                              str(program), "-i", str(iterations)], check=True,
                             capture_output=True, text=True).stdout
        return {name: float(value) for name, value in (line.split() for line in
                                                        out.strip().splitlines())}

    if spin is None:
        return mpiexec({})
    with records(spin) as (extra, _):
        return mpiexec(extra)


SHORT, LONG = (2, 10), (20, 50)


def wakeup_cases(waits: int, preload: dict[str, str], long_waits: bool
                 ) -> dict[str, Callable[[], dict[str, Any]]]:
    """The wake-up cases by name, each a run of ``waits`` waits (a third as many long ones):
    the shim's spin-block and the operating system's floors, short and long waits (without
    ``long_waits``, neither MPICH's busy-polling nor the long waits)."""
    long_count = max(1, waits // 3)
    cases: dict[str, Callable[[], dict[str, Any]]] = {
        "shim_spin_block_100us": lambda: _blocked(_run("wakeup", waits, preload,
                                                       spin=BLOCK_AFTER_100US)),
        "os_pipe": lambda: pipe_wakeup(waits, *SHORT),
        "os_futex": lambda: futex_wakeup(waits, *SHORT),
        "os_futex_timed_2ms": lambda: futex_wakeup(waits, *SHORT, 2_000_000)}
    if long_waits:
        cases |= {
            "mpich_busy_poll": lambda: _run("wakeup", waits, {}),
            "shim_long_waits_20_50ms": lambda: _blocked(_run("wakeup", long_count, preload,
                                                             "20:50", spin=BLOCK_AFTER_100US)),
            "os_pipe_20_50ms": lambda: pipe_wakeup(long_count, *LONG),
            "os_futex_20_50ms": lambda: futex_wakeup(long_count, *LONG)}
    return cases


FLOORS = {"shim_spin_block_100us": ("os_pipe", "os_futex"),
          "shim_long_waits_20_50ms": ("os_pipe_20_50ms", "os_futex_20_50ms")}


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One wake-up case's runs (one a round) summed up: the median over the rounds of each
    figure, with the interval of the p50 and p99 (``median_interval``), and the shim's wake
    counts added up over the rounds."""
    summary: dict[str, Any] = {"runs": runs}
    for q in ("p50", "p99"):
        iv = median_interval([r["wakeup_us"][q] for r in runs])
        summary[q] = {"median": iv.value, "low": iv.low, "high": iv.high,
                      "confidence": iv.confidence}
    summary["wakeup_us"] = {q: summary[q]["median"] for q in ("p50", "p99")}
    summary["cpu_share"] = statistics.median(r["cpu_share"] for r in runs)
    if "asleep_cpu_share" in runs[0]:
        summary["asleep_cpu_share"] = statistics.median(r["asleep_cpu_share"] for r in runs)
        summary["shim"] = {k: sum(r["shim"][k] for r in runs) for k in ("wakes_rung",
                                                                        "wakes_timed")}
    return summary


def wakeup_rounds(rounds: int, waits: int, preload: dict[str, str],
                  long_waits: bool = True) -> dict[str, Any]:
    """Each wake-up case once a round, interleaved, the order rotated by one case a round:
    every case's ``_summary``, and for the shim's cases the ratio of its p99 to each floor's
    in the same rounds (paired by round, ``ratio_interval``)."""
    cases = wakeup_cases(waits, preload, long_waits)
    names = list(cases)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            runs[name].append(cases[name]())
    result: dict[str, Any] = {"waits": waits, "rounds": rounds}
    for name in names:
        result[name] = _summary(runs[name])
    for shim, floors in FLOORS.items():
        if shim not in runs:
            continue
        for floor in floors:
            iv = ratio_interval([x["wakeup_us"]["p99"] for x in runs[shim]],
                                [x["wakeup_us"]["p99"] for x in runs[floor]], paired=True)
            result[shim][f"p99_over_{floor}"] = None if iv is None else {
                "ratio": iv.value, "low": iv.low, "high": iv.high, "confidence": iv.confidence}
    return result


def measure(rounds: int, iterations: int, waits: int,
            long_waits: bool = True) -> dict[str, object]:
    """Ping-pong with and without the shim, the wake-up test and the operating system's floors
    under it (see the module's text; without ``long_waits``, neither MPICH's busy-polling nor
    the 20-50 ms waits are run)."""
    preload = {"LD_PRELOAD": str(library_path(detect_mpi()))}
    plain, shimmed = [], []
    for _ in range(rounds):
        plain.append(_run("pingpong", iterations, {})["round_trip_us"])
        shimmed.append(_run("pingpong", iterations, preload, spin=BUSY)["round_trip_us"])
    pingpong = {"without_us": statistics.median(plain), "with_us": statistics.median(shimmed),
                "ratio": statistics.median(shimmed) / statistics.median(plain),
                "rounds": rounds, "iterations": iterations}
    return {"pingpong": pingpong, "wakeup": wakeup_rounds(rounds, waits, preload, long_waits),
            "collectives": collective_cost(rounds, iterations, preload)}


def collective_cost(rounds: int, iterations: int, preload: dict[str, str]) -> dict[str, Any]:
    """Allreduce and barrier times without the shim and with it spin-blocking (``ics``'s
    way), alternating for ``rounds``: per call and case the median over the rounds (us) and
    the ratio with to without."""
    runs: dict[str, list[dict[str, float]]] = {"without": [], "with_spin_block": []}
    for _ in range(rounds):
        runs["without"].append(_collectives(iterations, {}))
        runs["with_spin_block"].append(_collectives(iterations, preload,
                                                    spin=BLOCK_AFTER_100US))
    result: dict[str, Any] = {"rounds": rounds, "iterations": iterations}
    for call in ("allreduce_us", "iallreduce_us", "barrier_us"):
        medians = {case: median([r[call] for r in found])
                   for case, found in runs.items()}
        result[call] = {**medians, "ratio": medians["with_spin_block"] / medians["without"]}
    return result


def _blocked(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` of a wake-up run on records with ``asleep_cpu_share``: rank 0's CPU time
    while blocked over its time blocked (0 when it never blocked)."""
    shim = result["shim"]
    share = shim["blocked_cpu_s"] / shim["blocked_s"] if shim["blocked_s"] > 0 else 0.0
    return {**result, "asleep_cpu_share": share}


COLLECTIVE_CALLS = {"MPI_Allreduce, 8 bytes": "allreduce_us",
                    "MPI_Iallreduce + MPI_Wait, 8 bytes": "iallreduce_us",
                    "MPI_Barrier": "barrier_us"}
WAKEUP_CASES = {"mpich_busy_poll": "MPICH busy-polling (no shim)",
                "shim_spin_block_100us": "shim, blocking after 100 us (2-10 ms waits)",
                "os_pipe": "the OS: a process blocked in a pipe read (2-10 ms)",
                "os_futex": "the OS: a process blocked on a futex (2-10 ms)",
                "os_futex_timed_2ms": "the OS: a futex, sleeping 2 ms at a time (2-10 ms)",
                "shim_long_waits_20_50ms": "shim, blocking after 100 us (20-50 ms waits)",
                "os_pipe_20_50ms": "the OS: a pipe read (20-50 ms)",
                "os_futex_20_50ms": "the OS: a futex (20-50 ms)"}


def _with_interval(figure: dict[str, Any], value: str) -> str:
    """``figure`` (a median or ratio with ``low``, ``high`` and ``confidence``) as
    ``value [low, high]``, its confidence after it when below 95 %."""
    iv = Interval(figure[value], figure["low"], figure["high"], figure["confidence"])
    if iv.low is None or iv.high is None:
        return f"{iv.value:.3f}"
    return f"{iv.value:.3f} [{iv.low:.3f}, {iv.high:.3f}]" + below_nominal(iv.confidence)


def markdown(result: dict[str, Any], command: str, measured: str) -> str:
    """The figures of ``result`` (as ``main`` prints them) as a Markdown page."""
    ping, coll, wake = result["pingpong"], result["collectives"], result["wakeup"]
    lines = [*page_head("The shim's cost", "benchmarks.overheads.shim_cost", command,
                        result["host"],
                        measured), "",
             f"Two ranks on one host; with and without the shim alternating, {ping['rounds']} "
             "rounds; each figure the median over the rounds.", "",
             f"## Ping-pong of 8 bytes (round trip, us; {ping['iterations']} a round)", "",
             *markdown_table(["without the shim", "with it (busy-polling)", "ratio"],
                             [[ping["without_us"], ping["with_us"], ping["ratio"]]]), "",
             f"## Collectives (us a call; {coll['iterations']} a round, "
             "`clients/collective_cost.c`)", "",
             "With the shim spin-blocking as under `ics`, an allreduce takes MPICH's nonblocking "
             "path (the second row makes that path without the shim, waited for by MPICH's "
             "`MPI_Wait`, or by the shim's spin-block with it) and a barrier is the ranks' "
             "meeting on arrival counts.", "",
             *markdown_table(["call", "without the shim", "with it (spin-block)", "ratio"],
                             [[name, coll[key]["without"], coll[key]["with_spin_block"],
                               coll[key]["ratio"]]
                              for name, key in COLLECTIVE_CALLS.items()]), "",
             f"## A rank waiting for a late peer ({wake['waits']} short waits, a third as many "
             f"long ones, a round; {wake['rounds']} rounds)", "",
             "Wake-up: from the peer's send to the receive returning (the floors: to the read "
             "or futex wait returning).  The cases run interleaved, each once a round; p50 and "
             "p99 are the medians over the rounds of each round's percentile, with their 95 % "
             "intervals (a lower confidence in brackets where the rounds are too few).  CPU "
             "share: the waiting process's CPU time over its wait; asleep: over its time "
             "blocked (from its record); both medians over the rounds.  Wakes rung and timed: "
             "how the shim's sleeps ended (by the peer's ring, by the safety net), all rounds "
             "together.", ""]
    rows = []
    for key, label in WAKEUP_CASES.items():
        if key in wake:
            case = wake[key]
            shim = case.get("shim", {})
            rows.append([label, _with_interval(case["p50"], "median"),
                         _with_interval(case["p99"], "median"), case["cpu_share"],
                         case.get("asleep_cpu_share", "-"), shim.get("wakes_rung", "-"),
                         shim.get("wakes_timed", "-")])
    lines += markdown_table(["case", "p50 us", "p99 us", "CPU share", "asleep CPU share",
                             "wakes rung", "wakes timed"], rows)
    ratios = [[WAKEUP_CASES[shim]] + [_with_interval(wake[shim][f"p99_over_{floor}"], "ratio")
                                      if wake[shim].get(f"p99_over_{floor}") else "-"
                                      for floor in floors]
              for shim, floors in FLOORS.items() if shim in wake]
    lines += ["", "The shim's p99 over the floors' p99 of the same rounds (the rounds' pairs' "
              "ratio, Hodges-Lehmann, with its interval; the target is at most 1.2):", "",
              *markdown_table(["case", "over the pipe's", "over the futex's"], ratios)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures as JSON (one object); with ``--markdown`` also write
    them as a page."""
    p = parser("benchmarks.overheads.shim_cost", "shim cost and spin-block behaviour",
               json_help=None,
               out_help=None, markdown_help="also write the figures as a Markdown page")
    p.add_argument("--rounds", type=int, default=6,
                   help="alternations of with/without, and rounds of the wake-up cases")
    p.add_argument("--iterations", type=int, default=20000, help="round trips per ping-pong")
    p.add_argument("--waits", type=int, default=300, help="waits in the wake-up test")
    p.add_argument("--rank", nargs=3, metavar=("MODE", "COUNT", "SLEEP"),
                   help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rank:
        from mpi4py import MPI

        count = int(args.rank[1])
        low, high = (float(x) for x in args.rank[2].split(":"))
        result = pingpong(count) if args.rank[0] == "pingpong" else wakeup(count, low, high)
        if MPI.COMM_WORLD.Get_rank() == 0:
            print(json.dumps(result), flush=True)
        return 0
    session = Session.start("benchmarks.overheads.shim_cost", argv, None, None)
    result = {"benchmark": "shim_cost", "host": host(),
              **measure(args.rounds, args.iterations, args.waits)}
    emit([result], True, indent=2)
    session.page(args.markdown, lambda: markdown(result, session.command, session.measured()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

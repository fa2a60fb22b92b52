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
* ``os_pipe``: the operating system's own wake-up, the floor under the shim's: a forked child
  sleeps as rank 1 does and writes its send time to a pipe on which this process is blocked in
  a read (p50/p99 from the write to the read returning, and the reader's CPU share);
* ``collectives``: the mean time of a two-rank ``MPI_Allreduce`` of 8 bytes and of an
  ``MPI_Barrier`` (microseconds; each call in a loop of ``--iterations``, nothing else
  running; a C program, ``clients/collective_cost.c``, so that no Python stands between the
  loop and MPI), without the shim and with it set to spin-block as under ``ics``,
  alternating in the same invocation.  With the shim the allreduce takes MPICH's nonblocking path
  (``MPI_Iallreduce`` tested to completion), the cost every spin-block wait of a collective
  pays whatever the scheduling, which the same allreduce made as ``MPI_Iallreduce`` and
  ``MPI_Wait`` shows without the shim; the barrier is the ranks' meeting on arrival counts in
  their records (``testbed/native/arrival.c``).

With the shim the ranks run on shim records made for them as a node manager makes them (spin
set there, no node manager socket), so that they find and ring each other's doorbells as in
the testbed.

Prints the figures as one JSON object; ``--markdown PAGE`` also writes them as a Markdown page
with the host, the date and the command that wrote it.

Usage: ``python -m benchmarks.shim_cost [--rounds 5] [--iterations 20000] [--waits 300]
[--markdown PAGE]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.harness import host, invocation, markdown_table, median, now_iso, page_head
from benchmarks.real_clients import CLIENTS, build_c_client
from testbed.emulation.mpi_info import detect_mpi
from testbed.emulation.shim import library_path
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


def pipe_wakeup(waits: int, low_ms: float, high_ms: float) -> dict[str, object]:
    """The wake-up latency (us) of a process blocked in a pipe read, woken by a forked child
    that sleeps ``low_ms`` to ``high_ms`` before each write of its send time, and the reader's
    CPU share while waiting: the operating system's floor under the shim's wake-up."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read_end)
        rng = random.Random(1)
        for _ in range(waits):
            time.sleep(rng.uniform(low_ms, high_ms) / 1e3)
            os.write(write_end, time.clock_gettime_ns(time.CLOCK_MONOTONIC).to_bytes(8, "little"))
        os._exit(0)
    os.close(write_end)
    latency, cpu, wall = [], 0.0, 0.0
    try:
        for _ in range(waits):
            c0, w0 = time.process_time(), time.perf_counter()
            stamp = os.read(read_end, 8)
            now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            latency.append((now - int.from_bytes(stamp, "little")) / 1e3)
    finally:
        os.close(read_end)
        os.waitpid(child, 0)
    return {"cpu_share": cpu / wall if wall else 0.0, "wakeup_us": percentiles(latency)}


def _run(mode: str, count: int, env: dict[str, str], sleep_ms: str = "2:10",
         spin: Spin | None = None) -> dict[str, Any]:
    """Run ``mode`` on two ranks; with ``spin``, on records (``records``), whose rank 0
    counters are added as ``shim``."""
    mpi = detect_mpi()

    def mpiexec(extra: dict[str, str]) -> dict[str, Any]:
        out = subprocess.run([mpi.mpiexec, "-n", str(RANKS),
                              *[a for k, v in {**env, **extra}.items() for a in ("-genv", k, v)],
                              sys.executable, "-m", "benchmarks.shim_cost", "--rank", mode,
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


def measure(rounds: int, iterations: int, waits: int,
            long_waits: bool = True) -> dict[str, object]:
    """Ping-pong with and without the shim, the wake-up test and the operating system's floor
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
    wakeup: dict[str, object] = {}
    if long_waits:
        wakeup["mpich_busy_poll"] = _run("wakeup", waits, {})
    wakeup["shim_spin_block_100us"] = _blocked(_run("wakeup", waits, preload,
                                                    spin=BLOCK_AFTER_100US))
    if long_waits:
        wakeup["shim_long_waits_20_50ms"] = _blocked(_run("wakeup", max(1, waits // 3), preload,
                                                          "20:50", spin=BLOCK_AFTER_100US))
    wakeup["os_pipe"] = pipe_wakeup(waits, 2, 10)
    wakeup["waits"] = waits
    return {"pingpong": pingpong, "wakeup": wakeup,
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
                "shim_long_waits_20_50ms": "shim, blocking after 100 us (20-50 ms waits)",
                "os_pipe": "the OS: a process blocked in a pipe read (2-10 ms)"}


def markdown(result: dict[str, Any], command: str, measured: str) -> str:
    """The figures of ``result`` (as ``main`` prints them) as a Markdown page."""
    ping, coll, wake = result["pingpong"], result["collectives"], result["wakeup"]
    lines = [*page_head("The shim's cost", "benchmarks.shim_cost", command, result["host"],
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
             f"## A rank waiting for a late peer ({wake['waits']} waits)", "",
             "Wake-up: from the peer's send to the receive returning.  CPU share: the waiting "
             "rank's CPU time over its wait; asleep: over its time blocked (from its record).",
             ""]
    rows = []
    for key, label in WAKEUP_CASES.items():
        if key in wake:
            case = wake[key]
            shim = case.get("shim", {})
            rows.append([label, case["wakeup_us"]["p50"], case["wakeup_us"]["p99"],
                         case["cpu_share"], case.get("asleep_cpu_share", "-"),
                         shim.get("wakes_rung", "-"), shim.get("wakes_timed", "-")])
    lines += markdown_table(["case", "p50 us", "p99 us", "CPU share", "asleep CPU share",
                             "wakes rung", "wakes timed"], rows)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures as JSON (one object); with ``--markdown`` also write
    them as a page."""
    p = argparse.ArgumentParser(description="shim cost and spin-block behaviour")
    p.add_argument("--rounds", type=int, default=5, help="alternations of with/without")
    p.add_argument("--iterations", type=int, default=20000, help="round trips per ping-pong")
    p.add_argument("--waits", type=int, default=300, help="waits in the wake-up test")
    p.add_argument("--markdown", metavar="PAGE", help="also write the figures as a Markdown page")
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
    result = {"benchmark": "shim_cost", "host": host(),
              **measure(args.rounds, args.iterations, args.waits)}
    print(json.dumps(result, indent=2))
    if args.markdown:
        measured = now_iso()
        Path(args.markdown).write_text(markdown(result, invocation("benchmarks.shim_cost", argv),
                                                measured))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

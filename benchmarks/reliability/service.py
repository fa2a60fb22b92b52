"""The service's costs: what ``testbed mpirun`` adds to a job, and throughput of tiny jobs.

``python -m benchmarks.reliability.service [--repeats 30] [--rounds 5] [--jobs 100] [--clients 10]
[--against CHECKOUT] [--json] [--markdown PAGE]`` starts ``testbed serve --scheduler gang`` on
the machine's PEs with a private socket and measures, with the ``testbed`` command installed
beside this Python (what a suite's ``MPIRUN=testbed mpirun`` runs):

* overhead: the wall time of ``testbed mpirun -np 1 JOB`` through the service against plain
  ``mpiexec -n 1 JOB``, taken in turn ``--repeats`` times each; the overhead is the median of
  the paired differences (each mpirun run less the mpiexec run beside it), with its 95 %
  order-statistics interval (``testbed.experiments.stats.median_interval``), and the ratio
  (Hodges-Lehmann on the pairs) with its interval (``ratio_interval``, paired).  Two jobs:
  ``true``, which is not an MPI program (the service's ranks still load the shim, and with it
  the MPI library), and
  ``init_finalize`` (``benchmarks/clients/init_finalize.c``: MPI_Init, MPI_Finalize), the
  smallest MPI job;
* throughput: ``--jobs`` such jobs from ``--clients`` concurrent clients, each running its share
  one after another; jobs per wall second from the first submission to the last exit, in
  ``--rounds`` rounds (the median over the rounds with its interval); once with ``testbed
  mpirun`` processes, once with as many threads speaking the protocol directly, which leaves
  out starting a client per job (the service's own capacity);
* the service's own latency: submit to ``exited`` of one such job over the protocol.

``--against CHECKOUT`` also measures that checkout's installed ``testbed`` command
(``CHECKOUT/.venv/bin/testbed``) and its service, every measurement taking both sides in turn
(the order swapped every repeat), so that both meet the same machine.  ``--json`` prints the
figures and samples as JSON; ``--markdown PAGE`` writes them as a page with the host, the date
and this command.  Targets (issue 25): overhead <= 20 ms, >= 50 jobs/s from 10 clients.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.harness import CLIENTS, REPO, Session, commit_of, emit, host, page_head, parser
from benchmarks.programs.real_clients import build_c_client
from testbed.emulation.mpi_info import detect_mpi
from testbed.experiments.stats import Interval, median_interval, ratio_interval
from testbed.service import protocol
from testbed.service.native_client import LINK

MPI_JOB = CLIENTS / "init_finalize.c"
TARGET_OVERHEAD_MS = 20.0
TARGET_JOBS_PER_S = 50.0


@dataclass
class Side:
    """One ``testbed`` installation under test: its command, its running service's socket and
    the environment that points its clients there."""

    name: str
    bin_dir: Path
    socket: Path
    env: dict[str, str]

    def client(self, job: str = "true") -> list[str]:
        """The command line of one tiny job (``job``: its program) through this side's
        service."""
        return [str(self.bin_dir / "testbed"), "mpirun", "-np", "1", job]

    def compiled(self) -> bool:
        """Whether this side's ``testbed mpirun`` runs the compiled client."""
        return (self.bin_dir / LINK).exists()


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one command, which must succeed."""
    began = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - began


def direct_job(sock: Path) -> float:
    """Wall seconds from submitting ``true`` on 1 rank over the protocol to its exit reply."""
    began = time.perf_counter()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(sock))
        protocol.send(conn, protocol.Submit(("true",), 1, {}, "/", None, "", "", None,
                                            True).to_message())
        while (reply := protocol.recv(conn)) is not None and reply["type"] != "exited":
            pass
    return time.perf_counter() - began


def jobs_per_second(job: Callable[[], object], jobs: int, clients: int) -> float:
    """Jobs per wall second when ``clients`` threads run ``jobs // clients`` jobs each, one
    after another."""
    each = max(1, jobs // clients)
    began = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda _: [job() for _ in range(each)], range(clients)))
    return each * clients / (time.perf_counter() - began)


def in_turn(sides: list[Side], repeat: int) -> list[Side]:
    """The sides in the order of one repeat: as given in even repeats, reversed in odd ones."""
    return sides if repeat % 2 == 0 else sides[::-1]


@contextmanager
def serving(name: str, bin_dir: Path, tmp: Path) -> Iterator[Side]:
    """A service of the ``testbed`` command in ``bin_dir`` on a private socket under ``tmp``,
    stopped at the end."""
    sock = tmp / "sock" / "s.sock"
    env = dict(os.environ, TESTBED_SOCKET=str(sock))
    testbed = str(bin_dir / "testbed")
    server = subprocess.Popen([testbed, "serve", "--scheduler", "gang", "--out",
                               str(tmp / "run")], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        while not (tmp / "run" / "events.jsonl").exists() or not sock.exists():
            if server.poll() is not None:
                raise RuntimeError(f"{testbed} serve exited {server.returncode}")
            time.sleep(0.05)
        yield Side(name, bin_dir, sock, env)
    finally:
        subprocess.run([testbed, "stop"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        server.wait(timeout=60)


def figure(interval: Interval | None, scale: float = 1.0) -> dict[str, float | None]:
    """An interval as JSON (``value``, ``low``, ``high``), times ``scale``, rounded."""
    if interval is None:
        return {"value": None, "low": None, "high": None}
    return {key: None if v is None else round(v * scale, 2)
            for key, v in (("value", interval.value), ("low", interval.low),
                           ("high", interval.high))}


def measure(sides: list[Side], mpiexec: str, repeats: int, rounds: int, jobs: int,
            clients: int) -> dict[str, Any]:
    """Every figure of every side (see the module docstring) with its samples."""
    programs = {"true": "true", "init_finalize": str(build_c_client(MPI_JOB))}
    for side in sides:
        timed(side.client(), side.env)      # a first run builds the compiled client if needed
    mpirun = {job: {s.name: [] for s in sides} for job in programs}
    direct: dict[str, list[float]] = {job: [] for job in programs}
    for repeat in range(repeats):
        for job, program in programs.items():
            for side in in_turn(sides, repeat):
                mpirun[job][side.name].append(timed(side.client(program), side.env))
            direct[job].append(timed([mpiexec, "-n", "1", program], sides[0].env))
    through: dict[str, list[float]] = {s.name: [] for s in sides}
    protocol_rate: dict[str, list[float]] = {s.name: [] for s in sides}
    for repeat in range(rounds):
        for side in in_turn(sides, repeat):
            through[side.name].append(jobs_per_second(
                lambda side=side: timed(side.client(), side.env), jobs, clients))
        for side in in_turn(sides, repeat):
            protocol_rate[side.name].append(jobs_per_second(
                lambda side=side: direct_job(side.socket), jobs, clients))
    latency: dict[str, list[float]] = {s.name: [] for s in sides}
    for repeat in range(repeats):
        for side in in_turn(sides, repeat):
            latency[side.name].append(direct_job(side.socket))
    result: dict[str, Any] = {
        "mpiexec_ms": {job: figure(median_interval(direct[job]), 1e3) for job in programs},
        "sides": {}}
    for side in sides:
        name = side.name
        figures: dict[str, Any] = {"client": "compiled" if side.compiled() else "python"}
        for job in programs:
            differences = [a - b for a, b in zip(mpirun[job][name], direct[job], strict=True)]
            figures |= {
                f"mpirun_ms:{job}": figure(median_interval(mpirun[job][name]), 1e3),
                f"overhead_ms:{job}": figure(median_interval(differences), 1e3),
                f"ratio_to_mpiexec:{job}": figure(ratio_interval(mpirun[job][name], direct[job],
                                                                 paired=True))}
        result["sides"][name] = figures | {
            "jobs_per_s": figure(median_interval(through[name])),
            "protocol_jobs_per_s": figure(median_interval(protocol_rate[name])),
            "service_latency_ms": figure(median_interval(latency[name]), 1e3),
            "samples": {**{f"mpirun_s:{job}": mpirun[job][name] for job in programs},
                        "jobs_per_s": through[name],
                        "protocol_jobs_per_s": protocol_rate[name],
                        "service_latency_s": latency[name]},
        }
    result["samples"] = {f"mpiexec_s:{job}": direct[job] for job in programs}
    return result


def _cell(f: dict[str, float | None], unit: str = "") -> str:
    if f["value"] is None:
        return "-"
    if f["low"] is None:
        return f"{f['value']:g}{unit}"
    return f"{f['value']:g}{unit} [{f['low']:g}, {f['high']:g}]"


ROWS = (("client", "`testbed mpirun` runs the"),
        ("mpirun_ms:true", "`testbed mpirun -np 1 true`, median ms"),
        ("overhead_ms:true", "its overhead over plain `mpiexec`, median of the differences, ms"),
        ("ratio_to_mpiexec:true", "ratio of the medians, mpirun / mpiexec"),
        ("mpirun_ms:init_finalize", "`testbed mpirun -np 1 init_finalize`, median ms"),
        ("overhead_ms:init_finalize", "its overhead over plain `mpiexec`, ms"),
        ("ratio_to_mpiexec:init_finalize", "ratio of the medians, mpirun / mpiexec"),
        ("jobs_per_s", "jobs/s of `true`, `testbed mpirun` processes"),
        ("protocol_jobs_per_s", "jobs/s, threads over the protocol (no client process)"),
        ("service_latency_ms", "service latency, submit to `exited`, median ms"))


def text_table(result: dict[str, Any]) -> str:
    """The figures as plain-text lines, one a figure, a column a side."""
    names = list(result["sides"])
    lines = [f"plain mpiexec -n 1 {job}: median {_cell(f)} ms"
             for job, f in result["mpiexec_ms"].items()]
    for key, label in ROWS:
        cells = [result["sides"][n][key] for n in names]
        lines.append(f"{label}: " + "; ".join(
            f"{n} {c if isinstance(c, str) else _cell(c)}" for n, c in zip(names, cells,
                                                                           strict=True)))
    return "\n".join(lines)


def markdown(result: dict[str, Any]) -> str:
    """The figures as a Markdown page: the command, the host and date, a table with a column
    a side, and what the figures mean."""
    plan = result["plan"]
    names = list(result["sides"])
    lines = page_head("The service's costs: `testbed mpirun` against plain `mpiexec`",
                      "benchmarks.reliability.service", result["command"], result["host"],
                      result["date"])
    lines += ["- sides: " + "; ".join(f"{n}: commit {result['commits'][n]}" for n in names),
              f"- {plan['repeats']} runs of each command taken in turn; {plan['rounds']} "
              f"rounds of {plan['jobs']} jobs from {plan['clients']} concurrent clients; "
              "scheduler gang on the machine's PEs, every job on 1 rank; `init_finalize` is "
              "`benchmarks/clients/init_finalize.c` (MPI_Init, MPI_Finalize)",
              *(f"- plain `mpiexec -n 1 {job}`: median {_cell(f)} ms"
                for job, f in result["mpiexec_ms"].items()), "",
              "Median [95 % order-statistics interval].  Targets: overhead <= "
              f"{TARGET_OVERHEAD_MS:g} ms, >= {TARGET_JOBS_PER_S:g} jobs/s from 10 clients.", "",
              "| figure | " + " | ".join(names) + " |",
              "|---|" + "---:|" * len(names)]
    for key, label in ROWS:
        cells = [result["sides"][n][key] for n in names]
        lines.append(f"| {label} | " + " | ".join(
            c if isinstance(c, str) else _cell(c) for c in cells) + " |")
    lines += ["", "The overhead is what the client, the service and its node manager add to a "
              "job that does nothing: each `testbed mpirun` run less the plain `mpiexec` run "
              "beside it.  The service's latency is `true` submitted over the protocol by a "
              "thread of the benchmark, without a client process: less the plain `mpiexec` "
              "median, it is the service's share of the overhead of `true`, the rest is "
              "starting the client.  The service launches every job bound to its PEs and with "
              "the shim preloaded, and the shim links the MPI library: a program that is not "
              "an MPI program (`true`) loads that library only under the testbed, an MPI "
              "program (`init_finalize`) loads it anyway.  On a run of one host the ranks "
              "start with `UCX_MEM_EVENTS=no` (UCX's memory hooks serve network cards, which "
              "such ranks never use, and cost tens of ms at load), which plain `mpiexec` "
              "ranks do not: an MPI program can start faster under the testbed than alone."]
    return "\n".join(lines) + "\n"


def _checkout(text: str) -> Path:
    path = Path(text)
    if not (path / ".venv" / "bin" / "testbed").exists():
        raise argparse.ArgumentTypeError(f"{text}: no installed testbed command "
                                         "(.venv/bin/testbed)")
    return path


def main(argv: list[str] | None = None) -> int:
    """Serve, measure, stop; print the figures (or one JSON document) and write the page."""
    p = parser("benchmarks.reliability.service", __doc__, raw=True,
               json_help="print one JSON document",
               out_help=None)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--against", type=_checkout, default=None, metavar="CHECKOUT",
                   help="also measure this checkout's installed testbed command, in turn")
    args = p.parse_args(argv)
    here = REPO
    checkouts = {"this": here}
    if args.against is not None:
        checkouts["against"] = args.against.resolve()
    bins = {"this": Path(sys.executable).parent,
            **({"against": checkouts["against"] / ".venv" / "bin"} if args.against else {})}
    mpiexec = detect_mpi().mpiexec
    session = Session.start("benchmarks.reliability.service", argv, None, None)
    with tempfile.TemporaryDirectory(prefix="testbed-service-bench-") as tmp, ExitStack() as on:
        sides = [on.enter_context(serving(name, bins[name], Path(tmp) / name))
                 for name in bins]
        figures = measure(sides, mpiexec, args.repeats, args.rounds, args.jobs, args.clients)
    result = {"benchmark": "service", "host": host(),
              "date": time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(session.started)),
              "command": session.command,
              "commits": {name: commit_of(path) for name, path in checkouts.items()},
              "plan": {"repeats": args.repeats, "rounds": args.rounds,
                       "jobs": max(1, args.jobs // args.clients) * args.clients,
                       "clients": args.clients},
              **figures}
    session.page(args.markdown, lambda: markdown(result))
    if not emit([result], args.json, indent=2):
        print(text_table(result))
        print(f"host: {result['host']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

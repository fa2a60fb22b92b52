"""The service's costs: submission overhead and throughput of tiny jobs.

``python -m benchmarks.service [--repeats 30] [--jobs 100] [--clients 10] [--json]`` starts
``testbed serve --scheduler gang`` on the machine's PEs with a private socket and measures:

* overhead: the wall time of ``testbed mpirun -np 1 true`` through the service against plain
  ``mpiexec -n 1 true``, alternated, median of ``--repeats`` each (the difference is what the
  client, the service and the node manager add to a job that does nothing);
* throughput: ``--jobs`` such jobs submitted by ``--clients`` concurrent clients, each running
  its share one after another; jobs per wall second from the first submission to the last exit;
  once with ``testbed mpirun`` processes, once with the same number of threads speaking the
  protocol directly, which leaves out starting a Python client per job (the service's own
  capacity);
* the service's own latency: submit to ``exited`` of one such job over the protocol.

Targets (issue 10): overhead <= 50 ms over plain mpiexec, >= 20 jobs/s on 2 PEs.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.harness import host
from testbed.emulation.mpi_info import detect_mpi
from testbed.service import protocol

TESTBED = [sys.executable, "-m", "testbed"]


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


def main(argv: list[str] | None = None) -> int:
    """Serve, measure, stop; print the figures (or one JSON document)."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.service", description=__doc__)
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--jobs", type=int, default=100)
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    mpiexec = detect_mpi().mpiexec
    with tempfile.TemporaryDirectory(prefix="testbed-service-bench-") as tmp:
        sock = Path(tmp) / "sock" / "s.sock"
        env = dict(os.environ, TESTBED_SOCKET=str(sock))
        server = subprocess.Popen([*TESTBED, "serve", "--scheduler", "gang", "--out",
                                   str(Path(tmp) / "run")], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            while not (Path(tmp) / "run" / "events.jsonl").exists() or not sock.exists():
                time.sleep(0.05)
            client = [*TESTBED, "mpirun", "-np", "1", "true"]
            plain = [mpiexec, "-n", "1", "true"]
            timed(client, env)
            through, direct = [], []
            for _ in range(args.repeats):
                through.append(timed(client, env))
                direct.append(timed(plain, env))
            per_client = max(1, args.jobs // args.clients)
            began = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(lambda _: [timed(client, env) for _ in range(per_client)],
                              range(args.clients)))
            seconds = time.perf_counter() - began
            latency = [direct_job(sock) for _ in range(args.repeats)]
            began = time.perf_counter()
            with ThreadPoolExecutor(args.clients) as pool:
                list(pool.map(lambda _: [direct_job(sock) for _ in range(per_client)],
                              range(args.clients)))
            service_seconds = time.perf_counter() - began
        finally:
            subprocess.run([*TESTBED, "stop"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            server.wait(timeout=60)
    jobs = per_client * args.clients
    result = {
        "host": host(),
        "overhead": {"repeats": args.repeats,
                     "mpirun_median_ms": round(statistics.median(through) * 1e3, 1),
                     "mpiexec_median_ms": round(statistics.median(direct) * 1e3, 1),
                     "overhead_ms": round((statistics.median(through)
                                           - statistics.median(direct)) * 1e3, 1),
                     "mpirun_spread_ms": [round(min(through) * 1e3, 1),
                                          round(max(through) * 1e3, 1)],
                     "mpiexec_spread_ms": [round(min(direct) * 1e3, 1),
                                           round(max(direct) * 1e3, 1)]},
        "throughput": {"jobs": jobs, "clients": args.clients, "seconds": round(seconds, 2),
                       "jobs_per_s": round(jobs / seconds, 1),
                       "protocol_jobs_per_s": round(jobs / service_seconds, 1)},
        "service_latency_ms": {"median": round(statistics.median(latency) * 1e3, 1),
                               "min": round(min(latency) * 1e3, 1),
                               "max": round(max(latency) * 1e3, 1)},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    o, t = result["overhead"], result["throughput"]
    print(f"testbed mpirun -np 1 true: median {o['mpirun_median_ms']} ms "
          f"(min-max {o['mpirun_spread_ms']}); plain mpiexec: {o['mpiexec_median_ms']} ms "
          f"({o['mpiexec_spread_ms']}); overhead {o['overhead_ms']} ms over {o['repeats']} each")
    print(f"throughput: {t['jobs']} jobs from {t['clients']} clients in {t['seconds']} s = "
          f"{t['jobs_per_s']} jobs/s; over the protocol without client processes "
          f"{t['protocol_jobs_per_s']} jobs/s")
    s = result["service_latency_ms"]
    print(f"service latency (submit to exited, over the protocol): median {s['median']} ms "
          f"(min-max {s['min']}-{s['max']})")
    print(f"host: {result['host']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

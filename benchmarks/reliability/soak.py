"""Soak: ``testbed serve`` under steady traffic for a long while, its memory, descriptors and
threads sampled, every job accounted for at the end.

``--clients`` client threads keep the service busy until ``--minutes`` have passed, each
drawing what to do next (seeded):

* 70 %: ``testbed mpirun -np 1|2`` of ``true`` (a job that launches and ends at once) or, one
  time in five, of a small mpi4py program (a barrier), as a suite's ``MPIRUN`` would;
* 15 %: a batch job (``sleep``) submitted through the client library, then cancelled, or
  suspended and resumed, or left to run out;
* 10 %: a queue request;
* 5 %: a malformed request (bytes that are not a message, or a message that is not a
  request), which must get an error and leave the service serving.

Every 2 s a sampler reads the service's resident memory, open descriptors and threads (psutil).
At the end the service is stopped and the event log is checked: every job that arrived has
exactly one ``finish``; nothing of the run is left (as ``benchmarks.reliability.chaos`` counts it).
Memory
and descriptors follow the clients in flight (a 2-minute soak's descriptors go from 9 to 28 and
back), so growth is judged on maxima and a trend, not on two means: after warm-up (the first
fifth of the time) the samples are cut into ``BLOCKS`` blocks in time and each block's maximum
taken; growth is the last block's maximum over the first's, and it counts only when the later
half of the blocks' maxima also tend to exceed the earlier half's (the exact one-sided rank
test, ties handled, p below 0.05), as a leak raises every peak after the last.  The slope a
day is the Theil-Sen slope of every sample after warm-up.  Targets: no growth over 10 % with
a rising trend, every job accounted for, no leftovers.

Usage: ``python -m benchmarks.reliability.soak [--minutes 20] [--clients 6] [--seed 1] [--out FILE]
[--markdown PAGE] [--quick]``; ``--from FILE --markdown PAGE`` rewrites the page from a kept
JSON (growth and verdicts derived again from its samples).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from scipy import stats as scipy_stats

from benchmarks.harness import Session, emit, now_iso, page_head, parser, write_whole
from benchmarks.reliability.chaos import TESTBED, survivors
from testbed.emulation.launch_tmp import hydra_files
from testbed.events import read_events
from testbed.experiments.stats import rank_test
from testbed.service import client, protocol

BARRIER = "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"
SAMPLE_S = 2.0
GROWTH_LIMIT = 0.10
BLOCKS = 8
TREND_P = 0.05


class Traffic:
    """The clients' shared tallies."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.errors: list[str] = []

    def count(self, what: str) -> None:
        """Add one ``what``."""
        with self.lock:
            self.counts[what] += 1

    def error(self, text: str) -> None:
        """Keep a problem a client met (the first 50)."""
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append(text)


def _mpirun(sock: Path, rng: random.Random, traffic: Traffic) -> None:
    program = [sys.executable, "-c", BARRIER] if rng.random() < 0.2 else ["true"]
    done = subprocess.run([*TESTBED, "mpirun", "-np", str(rng.choice([1, 2])), *program],
                          env=dict(os.environ, TESTBED_SOCKET=str(sock)), capture_output=True,
                          text=True, timeout=300)
    traffic.count("mpirun")
    if done.returncode != 0:
        traffic.error(f"mpirun exited {done.returncode}: {done.stderr.strip()[-200:]}")


def _batch(sock: Path, rng: random.Random, traffic: Traffic) -> None:
    reply = client.request(sock, protocol.Submit(("sleep", f"{rng.uniform(0.2, 3):.1f}"), 1, {},
                                                 "/", None, "", "", None, False))
    traffic.count("batch")
    job = reply.get("job")
    if reply.get("type") != "accepted" or not isinstance(job, str):
        traffic.error(f"batch submission answered {reply}")
        return
    time.sleep(rng.uniform(0, 0.5))
    action = rng.choice(["cancel", "suspend", "leave"])
    if action == "cancel":
        client.request(sock, protocol.Cancel(job))
    elif action == "suspend":
        client.request(sock, protocol.Suspend(job))
        time.sleep(rng.uniform(0, 0.5))
        client.request(sock, protocol.Resume(job))
    traffic.count(action)


def _malformed(sock: Path, rng: random.Random, traffic: Traffic) -> None:
    body = rng.choice([b"{not json", b"[1, 2]", json.dumps({"type": "nonsense"}).encode(),
                       json.dumps({"type": "cancel", "job": 7}).encode(),
                       bytes(rng.getrandbits(8) for _ in range(40))])
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(sock))
        conn.sendall(struct.pack(">I", len(body)) + body)
        reply = protocol.recv(conn)
    traffic.count("malformed")
    if reply is None or reply.get("type") != "error":
        traffic.error(f"a malformed request was answered {reply}")


def _queue(sock: Path, rng: random.Random, traffic: Traffic) -> None:
    client.request(sock, protocol.Queue())
    traffic.count("queue")


ACTIONS = ((0.70, _mpirun), (0.15, _batch), (0.10, _queue), (0.05, _malformed))


def _client(sock: Path, seed: int, deadline: float, traffic: Traffic) -> None:
    rng = random.Random(seed)
    while time.monotonic() < deadline:
        action = rng.choices([a for _, a in ACTIONS], [share for share, _ in ACTIONS])[0]
        try:
            action(sock, rng, traffic)
        except (OSError, ConnectionError, client.NoService, subprocess.TimeoutExpired,
                protocol.ProtocolError) as err:
            traffic.error(f"{action.__name__}: {err}")


def _sample(pid: int, stop: threading.Event, samples: list[dict[str, float]]) -> None:
    process = psutil.Process(pid)
    started = time.monotonic()
    while not stop.wait(SAMPLE_S):
        try:
            with process.oneshot():
                samples.append({"t": time.monotonic() - started,
                                "rss_kib": process.memory_info().rss / 1024,
                                "fds": process.num_fds(), "threads": process.num_threads()})
        except psutil.Error:
            return


def growth(samples: list[dict[str, float]], key: str) -> dict[str, float | None]:
    """After warm-up (the first fifth of the samples), cut into ``BLOCKS`` blocks in time: the
    first and the last block's maximum, the growth (last over first, minus 1), the exact
    one-sided rank test's p-value that the later half of the block maxima exceed the earlier
    half (do they rise?), and the Theil-Sen slope of every sample projected over a day (units
    a day)."""
    kept = samples[len(samples) // 5:]
    if len(kept) < 2 * BLOCKS:
        return {"growth": None, "per_day": None, "trend_p": None}
    peaks = [max(s[key] for s in block) for block in np.array_split(np.array(kept), BLOCKS)]
    trend = rank_test(peaks[BLOCKS // 2:], peaks[:BLOCKS // 2], alternative="greater")
    slope = scipy_stats.theilslopes([s[key] for s in kept], [s["t"] for s in kept])[0]
    first, last = float(peaks[0]), float(peaks[-1])
    return {"growth": last / first - 1 if first else None, "per_day": float(slope) * 86400,
            "trend_p": None if trend is None else trend.p,
            "first": first, "last": last}


def accounted(events: list[dict[str, Any]]) -> dict[str, int]:
    """Jobs that arrived, those with exactly one ``finish``, and those with none or more."""
    arrived = {e["job"] for e in events if e["event"] == "arrival"}
    finishes = Counter(e["job"] for e in events if e["event"] == "finish")
    return {"arrived": len(arrived), "finished_once": sum(finishes[j] == 1 for j in arrived),
            "unaccounted": sum(finishes[j] != 1 for j in arrived)}


def soak(minutes: float, clients: int, seed: int) -> dict[str, Any]:
    """Run the soak; its record."""
    directory = Path(tempfile.mkdtemp(prefix="testbed-soak-"))
    sock = directory / "sock" / "s.sock"
    before = hydra_files()
    service = subprocess.Popen([*TESTBED, "serve", "--scheduler", "gang", "--socket", str(sock),
                                "--out", str(directory / "run")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        log = directory / "run" / "events.jsonl"
        while not (sock.exists() and log.exists() and read_events(log)):
            if time.monotonic() > deadline or service.poll() is not None:
                raise RuntimeError(f"the service did not start: {service.communicate()[1]}")
            time.sleep(0.05)
        run_id = read_events(log)[0]["run_id"]
        traffic, samples, stop = Traffic(), [], threading.Event()
        sampler = threading.Thread(target=_sample, args=(service.pid, stop, samples))
        sampler.start()
        started = time.monotonic()
        end = started + minutes * 60
        threads = [threading.Thread(target=_client, args=(sock, seed * 1000 + i, end, traffic))
                   for i in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stop.set()
        sampler.join()
        client.request(sock, protocol.Shutdown())
        service.communicate(timeout=120)
        elapsed = time.monotonic() - started
        events = read_events(directory / "run" / "events.jsonl")
        deadline = time.monotonic() + 5
        while any(survivors(run_id, before).values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = survivors(run_id, before)
        jobs = accounted(events)
        return {"minutes": round(elapsed / 60, 2), "clients": clients, "seed": seed,
                "requests": dict(traffic.counts), "jobs": jobs,
                "jobs_per_s": round(jobs["arrived"] / elapsed, 2),
                "status": events[-1].get("status") if events[-1]["event"] == "run_end" else None,
                "client_errors": traffic.errors,
                "survivors": {kind: len(items) for kind, items in left.items()},
                "growth": {key: growth(samples, key) for key in ("rss_kib", "fds", "threads")},
                "samples": samples}
    finally:
        if service.poll() is None:
            service.kill()
            service.communicate()
        shutil.rmtree(directory, ignore_errors=True)


def verdicts(result: dict[str, Any]) -> list[str]:
    """The targets a soak missed (none when it passed)."""
    missed = []
    if result["jobs"]["unaccounted"]:
        missed.append(f"{result['jobs']['unaccounted']} jobs without exactly one finish")
    if any(result["survivors"].values()):
        missed.append(f"left behind: {result['survivors']}")
    for key in ("rss_kib", "fds"):
        found = result["growth"][key]
        if found["growth"] is not None and found["growth"] > GROWTH_LIMIT \
                and found["trend_p"] is not None and found["trend_p"] < TREND_P:
            missed.append(f"{key} grew {found['growth']:.0%} after warm-up, its peaks rising "
                          f"(trend p = {found['trend_p']:.2g})")
    if result["status"] != "stopped":
        missed.append(f"the service ended {result['status']}, not stopped")
    return missed


def markdown(result: dict[str, Any]) -> str:
    """The soak as a Markdown page: where and when it ran, the jobs, what was left, and the
    memory, descriptor and thread curves (a row every tenth of the run).  Its head
    (``page_head``) names the command that soaked and the host as the JSON keeps them (``?``
    where an older file has none), so ``--from`` rebuilds the same page."""
    host = result.get("host", {})
    g = result["growth"]
    jobs = result["jobs"]

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:+.1%}"

    lines = [
        *page_head("Soak: the service under steady load", "benchmarks.reliability.soak",
                   result.get("command", "?"),
                   f"{host.get('hostname', '?')}, {host.get('cpus', '?')} CPUs, kernel "
                   f"{host.get('kernel', '?')}", f"{result['date']}, {result['minutes']} min"),
        "- regenerate this page with `python -m benchmarks.reliability.soak --from FILE.json "
        "--markdown "
        "PAGE.md`", "",
        f"- **{result['minutes']} minutes, {result['clients']} clients**: {jobs['arrived']} jobs "
        f"arrived ({result['jobs_per_s']} a second), {jobs['finished_once']} with exactly one "
        f"`finish`, {jobs['unaccounted']} without.",
        "- **Requests**: " + ", ".join(f"{k} {v}" for k, v in sorted(result["requests"].items()))
        + f"; {len(result['client_errors'])} client errors.",
        "- **Left behind**: " + ", ".join(f"{k} {v}" for k, v in result["survivors"].items())
        + f"; the service ended `{result['status']}`.",
        f"- **Targets missed**: {', '.join(result['missed']) or 'none'}.", "",
        f"After warm-up the samples are cut into {BLOCKS} blocks in time; growth is the last "
        "block's peak over the first's, and counts only when the peaks rise with time (the "
        "exact one-sided rank test of the later half of the peaks against the earlier half, "
        f"p below {TREND_P:g}); the slope is Theil-Sen's over every sample.", "",
        "| after warm-up | first block's peak | last block's peak | growth | trend p | "
        "slope a day |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, unit, scale in (("rss_kib", "resident memory (MiB)", 1 / 1024),
                             ("fds", "open descriptors", 1), ("threads", "threads", 1)):
        row = g[key]
        if row.get("first") is None:
            lines.append(f"| {unit} | - | - | - | - | - |")
            continue
        trend = "-" if row["trend_p"] is None else f"{row['trend_p']:.2g}"
        lines.append(f"| {unit} | {row['first'] * scale:.1f} | {row['last'] * scale:.1f} | "
                     f"{pct(row['growth'])} | {trend} | {row['per_day'] * scale:+.1f} |")
    samples = result.get("samples", [])
    if samples:
        lines += ["", "| minute | resident memory (MiB) | descriptors | threads |",
                  "|---:|---:|---:|---:|"]
        step = max(1, len(samples) // 10)
        for sample in samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else []):
            lines.append(f"| {sample['t'] / 60:.1f} | {sample['rss_kib'] / 1024:.1f} | "
                         f"{sample['fds']:.0f} | {sample['threads']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Soak the service; print a summary (stderr) and the JSON; exit 1 if a target is missed."""
    p = parser("benchmarks.reliability.soak", "the service under steady load for a long while",
               quick="20 s: shows it works", json_help=None, out_help=None,
               markdown_help="also write the figures as a Markdown page")
    p.add_argument("--minutes", type=float, default=20.0)
    p.add_argument("--clients", type=int, default=6)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    p.add_argument("--from", dest="source", type=Path, default=None, metavar="FILE",
                   help="read the JSON an earlier soak wrote (--out) instead of soaking")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.clients < 1:
        print("soak: need minutes > 0 and clients >= 1", file=sys.stderr)
        return 2
    session = Session.start("benchmarks.reliability.soak", argv, None, None)
    if args.source is not None:
        result = json.loads(args.source.read_text())
        result["growth"] = {key: growth(result["samples"], key)
                            for key in ("rss_kib", "fds", "threads")}
        result["missed"] = verdicts(result)
        session.page(args.markdown, lambda: markdown(result))
        return 1 if result["missed"] else 0
    result = soak(1 / 3 if args.quick else args.minutes, args.clients, args.seed)
    result["missed"] = verdicts(result)
    uname = os.uname()
    result = {"benchmark": "soak", "date": now_iso(),
              "host": {"hostname": uname.nodename, "cpus": len(os.sched_getaffinity(0)),
                       "kernel": uname.release},
              "command": session.command,
              **result}
    g = result["growth"]
    print(f"soak: {result['minutes']} min, {result['jobs']['arrived']} jobs "
          f"({result['jobs_per_s']}/s), {result['jobs']['unaccounted']} unaccounted; "
          f"rss growth {g['rss_kib']['growth']}, fds growth {g['fds']['growth']}; "
          f"missed: {result['missed'] or 'nothing'}", file=sys.stderr)
    emit([result], True, indent=2)
    if args.out is not None:
        write_whole(args.out, json.dumps(result, indent=2) + "\n")
    session.page(args.markdown, lambda: markdown(result))
    return 1 if result["missed"] else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Chaos for the service and the node managers: kill them at random moments while clients
submit, and count what survives.

Each trial starts ``testbed serve`` (gang, every PE of this machine; or, in a share of the
trials, two hosts emulated on this machine, each with a node manager of its own), starts
``--clients`` ``testbed mpirun`` clients of a small MPI program (a loop of barriers), and at a
random moment kills:

* ``service``: the service, by SIGKILL or SIGTERM;
* ``nm``: one node manager of the emulated hosts by SIGKILL (the first, whose host runs the
  launchers and so every job's first rank, or the second), and then the service by SIGTERM.

Then it checks what a site would:

* every client has exited, and every client whose job had not ended exited non-zero with a
  clear message (its last line from ``testbed``, no traceback);
* nothing of the run survives: no process carrying the run's marker (ranks, launchers, node
  managers, stopped ones included), no shared-memory record, no launch directory, no new
  ``/tmp/hydra_hwloc_xmlfile_*`` that no live process holds (another run's launch on the
  machine holds its own);
* ``testbed report`` works on the run directory the killed service left;
* a new service starts on the same socket and stops cleanly.

A trial passes when all of these hold.  The summary gives the trials, the survivors by kind
and the failed checks, with the seed that reproduces the trials.  The checks of survivors
wait up to 5 s, as the watchdog needs a moment after a SIGKILL.

``--markdown PAGE`` writes the summary as a page, with the host, the date and the command
recorded.

Usage: ``python -m benchmarks.reliability.chaos [--trials 100] [--seed 1] [--hosts-share 0.3]
[--clients 3] [--out FILE] [--markdown PAGE] [--quick]``
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from benchmarks.harness import (
    Session,
    emit,
    host,
    markdown_table,
    now_iso,
    page_head,
    parser,
    write_whole,
)
from testbed.emulation import procs
from testbed.emulation.launch_tmp import hydra_files, run_dirs
from testbed.events import read_events

TESTBED = [sys.executable, "-m", "testbed"]
# Rank 0 alone reads the clock and tells the others whether to go on: ranks that each read
# their own would leave the loop after different numbers of barriers, and the last one would
# wait in a barrier for ever (a job that runs to its end under a fallback coordinator hung so).
PROGRAM = """\
import sys, time
from mpi4py import MPI
comm = MPI.COMM_WORLD
end = time.monotonic() + float(sys.argv[1])
while comm.bcast(time.monotonic() < end, root=0):
    comm.Barrier()
    time.sleep(0.001)
print("done", comm.Get_rank())
"""
GRACE = 5.0


def open_files() -> set[str]:
    """The paths of the regular files some live process has open (those we may read)."""
    found = set()
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            found.update(f.path for f in proc.open_files())
    return found


def left_hydra_files(before: set[str]) -> list[str]:
    """hydra's topology files in /tmp that were not there ``before`` and that no live process
    has open: a launch's proxy and ranks keep its file open while it runs, so the files of
    other runs going on on the machine are not counted."""
    new = hydra_files() - before
    if not new:
        return []
    held = open_files()
    return sorted(name for name in new if os.path.join("/tmp", name) not in held)


def survivors(run_id: str, hydra_before: set[str]) -> dict[str, list[str]]:
    """What is left of run ``run_id``: processes carrying its marker, its shared-memory
    records, its launch directories, and hydra files that were not there before it and that
    no live process holds."""
    return {
        "processes": [str(pid) for pid in procs.marked(run_id)],
        "records": [n for n in os.listdir(procs.SHM_PREFIX) if n.startswith(f"testbed-{run_id}")],
        "launch_dirs": [path.name for path in run_dirs(run_id)],
        "hydra_files": left_hydra_files(hydra_before),
    }


def _wait_for(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _serve(directory: Path, sock: Path, hosts: Path | None, out: str) -> subprocess.Popen[str]:
    where = ["--hosts", str(hosts), "--launcher", "fork"] if hosts else []
    return subprocess.Popen([*TESTBED, "serve", "--scheduler", "gang", "--socket", str(sock),
                             *where, "--out", str(directory / out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def _node_managers(service: int) -> list[int]:
    """The node-manager processes (``nm_daemon``) the service started, in start order."""
    found = []
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(service).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "testbed.emulation.nm_daemon" in child.cmdline():
                    found.append((child.create_time(), child.pid))
    return [pid for _, pid in sorted(found)]


def trial(rng: random.Random, directory: Path, multihost: bool, clients: int) -> dict[str, Any]:
    """One trial in ``directory``; its record: what was killed when, the clients' ends, the
    survivors and the checks that failed."""
    sock = directory / "sock" / "s.sock"
    hosts = None
    if multihost:
        hosts = directory / "hosts"
        hosts.write_text("hostA:1\nhostB:1\n")
    program = directory / "barriers.py"
    program.write_text(PROGRAM)
    before = hydra_files()
    service = _serve(directory, sock, hosts, "run")
    record: dict[str, Any] = {"multihost": multihost, "failed": []}
    log = directory / "run" / "events.jsonl"
    if not _wait_for(lambda: sock.exists() and log.exists() and read_events(log), 60):
        service.kill()
        record["failed"].append(f"the service did not start: {service.communicate()[1][-300:]}")
        return record
    run_id = read_events(log)[0]["run_id"]
    env = dict(os.environ, TESTBED_SOCKET=str(sock))
    started = []
    for _ in range(clients):
        size = rng.choice([1, 2]) if not multihost else 2
        started.append(subprocess.Popen(
            [*TESTBED, "mpirun", "-np", str(size), sys.executable, str(program),
             f"{rng.uniform(0.5, 4.0):.2f}"], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True))
    served = time.monotonic()
    time.sleep(rng.uniform(0.3, 3.0))
    if multihost:
        managers = _node_managers(service.pid)
        which = rng.choice([0, 1])
        record["killed"] = f"nm{which} SIGKILL"
        if which < len(managers):
            os.kill(managers[which], signal.SIGKILL)
        else:
            record["killed"] += " (not found)"
        time.sleep(rng.uniform(0.2, 1.5))
        record["killed"] += ", service SIGTERM"
        service.send_signal(signal.SIGTERM)
    else:
        sig = rng.choice([signal.SIGKILL, signal.SIGTERM])
        record["killed"] = f"service {sig.name}"
        service.send_signal(sig)
    record["at_s"] = round(time.monotonic() - served, 3)
    try:
        service.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        service.kill()
        service.communicate()
        record["failed"].append("the service did not end within 60 s")
    ends = []
    for client in started:
        try:
            _, err = client.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            client.kill()
            _, err = client.communicate()
            record["failed"].append("a client did not exit within 60 s")
        last = err.strip().splitlines()[-1] if err.strip() else ""
        ends.append({"code": client.returncode, "last_line": last[:200]})
        if "Traceback" in err:
            record["failed"].append(f"a client printed a traceback: {last[:200]}")
        elif client.returncode != 0 and not last.startswith("testbed"):
            record["failed"].append(f"a client exited {client.returncode} without saying why "
                                    f"(its last line: {last[:200]!r})")
    record["clients"] = ends
    _wait_for(lambda: not any(survivors(run_id, before).values()), GRACE)
    left = survivors(run_id, before)
    record["survivors"] = {kind: len(items) for kind, items in left.items()}
    if any(left.values()):
        record["failed"].append(f"survivors: {left}")
        procs.kill_marked(run_id)      # so that one failed trial does not spoil the next
    report = subprocess.run([*TESTBED, "report", str(directory / "run")], capture_output=True,
                            text=True, timeout=120)
    if report.returncode != 0:
        record["failed"].append(f"report failed: {report.stderr.strip()[-300:]}")
    again = _serve(directory, sock, None, "again")
    if not _wait_for(lambda: (directory / "again" / "events.jsonl").exists(), 30):
        again.kill()
        record["failed"].append(f"no new service on the socket: {again.communicate()[1][-300:]}")
    else:
        stop = subprocess.run([*TESTBED, "stop", "--socket", str(sock)], capture_output=True,
                              text=True, timeout=60)
        again.communicate(timeout=60)
        if stop.returncode != 0 or again.returncode != 0:
            record["failed"].append(f"the new service did not stop cleanly: {stop.stderr[-200:]}")
    return record


def summarise(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Trials, passes, survivors by kind summed over the trials, and the failed checks."""
    kinds = ("processes", "records", "launch_dirs", "hydra_files")
    return {"trials": len(records), "passed": sum(not r["failed"] for r in records),
            "survivors": {k: sum(r.get("survivors", {}).get(k, 0) for r in records)
                          for k in kinds},
            "by_kill": {kill: sum(r.get("killed", "").startswith(kill) for r in records)
                        for kill in ("service SIGKILL", "service SIGTERM", "nm0", "nm1")},
            "failures": [{"trial": i, "failed": r["failed"]} for i, r in enumerate(records)
                         if r["failed"]]}


def markdown(result: dict[str, Any], command: str) -> str:
    """The page of a chaos run: the trials by what was killed, whether each passed, what
    survived, how the clients ended and every failed check."""
    clients = [c for r in result["records"] for c in r.get("clients", [])]
    told = sum(c["code"] != 0 and c["last_line"].startswith("testbed") for c in clients)
    finished = sum(c["code"] == 0 for c in clients)
    lines = [*page_head("Chaos: the service and node managers killed at random",
                        "benchmarks.reliability.chaos", command, result["host"],
                        f"{result['date']}, {result['minutes']:g} min"),
             f"- seed {result['seed']}; each trial kills the service (SIGKILL or SIGTERM) or, on "
             "two hosts emulated here, a node manager (SIGKILL, then the service by SIGTERM) "
             "while `testbed mpirun` clients run a loop of barriers", "",
             f"**{result['passed']} of {result['trials']} trials passed.**", "",
             *markdown_table(["killed", "trials"], [[kill, n] for kill, n in
                                                    result["by_kill"].items()]), "",
             *markdown_table(["left behind", "count"], [[kind, n] for kind, n in
                                                       result["survivors"].items()]), "",
             f"Clients: {len(clients)}; {told} exited non-zero with a line from `testbed` "
             f"saying why, {finished} had finished their job, "
             f"{len(clients) - told - finished} ended otherwise.", ""]
    for failure in result["failures"]:
        lines.append(f"- trial {failure['trial']}: {'; '.join(failure['failed'])}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the trials; print the summary (stderr) and the JSON; exit 1 if a trial failed."""
    p = parser("benchmarks.reliability.chaos",
               "kill the service and node managers at random; count what "
               "survives", quick="two trials: shows it works", json_help=None, out_help=None,
               markdown_help="also write the summary as a Markdown page")
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hosts-share", type=float, default=0.3,
                   help="share of trials on two emulated hosts, killing a node manager")
    p.add_argument("--clients", type=int, default=3, help="mpirun clients a trial")
    p.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = p.parse_args(argv)
    if args.trials < 1 or args.clients < 1 or not 0 <= args.hosts_share <= 1:
        print("chaos: need trials >= 1, clients >= 1, 0 <= hosts-share <= 1", file=sys.stderr)
        return 2
    trials = 2 if args.quick else args.trials
    rng = random.Random(args.seed)
    records = []
    session = Session.start("benchmarks.reliability.chaos", argv, None, None)
    for i in range(trials):
        multihost = rng.random() < args.hosts_share if not args.quick else i == 1
        directory = Path(tempfile.mkdtemp(prefix="testbed-chaos-"))
        try:
            records.append(trial(rng, directory, multihost, args.clients))
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        r = records[-1]
        print(f"chaos: trial {i + 1}/{trials} {r.get('killed', '-')}: "
              f"{'ok' if not r['failed'] else 'FAILED ' + '; '.join(r['failed'])}",
              file=sys.stderr, flush=True)
    summary = summarise(records)
    result = {"benchmark": "chaos", "host": host(), "seed": args.seed,
              "date": now_iso(),
              "minutes": round((time.time() - session.started) / 60, 1), **summary,
              "records": records}
    print(f"chaos: {summary['passed']}/{summary['trials']} trials passed; survivors "
          + ", ".join(f"{k} {v}" for k, v in summary["survivors"].items()), file=sys.stderr)
    emit([result], True, indent=2)
    if args.out is not None:
        write_whole(args.out, json.dumps(result, indent=2) + "\n")
    session.page(args.markdown, lambda: markdown(result, session.command))
    return 0 if summary["passed"] == summary["trials"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Node managers as processes, one per emulated host: heartbeat latency and launch overhead
against the number of node managers.

``python -m benchmarks.multihost [--nms 1,2,4,8] [--seconds 10] [--repeats 7] [--json]``

For each count N, N emulated hosts of one slot each run on this machine (hydra's ``fork``
launcher), each with its own node manager process.

* Heartbeat latency: two jobs of N ranks, one rank per host, gang scheduled at MPL 2 with
  0.05 s slices, so every heartbeat stops N ranks and continues N others.  The ranks are
  ``sleep`` processes, so that what is measured is the heartbeat (the MM sending it to every
  NM, each NM signalling its ranks) and not 2N CPU-bound ranks crowding the CPUs.  The latency
  of a heartbeat is from the MM sending it to the last NM's last signal (one machine shares its
  monotonic clock); p50 and p99 over the run's full switches.
* Launch overhead: ``--repeats`` jobs of N ranks running ``sleep 0.05``, one after another
  under fcfs; the median of response time (arrival to end) minus the 0.05 s, in seconds.
  (Ranks that exit at once, ``true``, sometimes make hydra's mpiexec die of SIGPIPE with 8
  fork-launched hosts, outside the testbed too.)

Prints a table, or with ``--json`` one record per N: ``{"nms", "p50_us", "p99_us",
"switches", "launch_s"}``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import events, host, jobs, median, run_workload, table
from testbed.results.metrics import percentiles

NAP = 0.05


def _run(nms: int, text: str, *options: str) -> Path:
    """Run ``text`` on ``nms`` emulated hosts; the run directory (in a temporary directory)."""
    where = Path(tempfile.mkdtemp(prefix="testbed-multihost-"))
    hostfile = where / "hosts"
    hostfile.write_text("".join(f"host{i}:1\n" for i in range(nms)))
    return run_workload(text, "--hosts", str(hostfile), "--launcher", "fork", *options,
                        out=where / "run")


def heartbeat(nms: int, seconds: float) -> dict[str, float]:
    """Latency percentiles (us) of the full switches between two jobs of ``nms`` ranks."""
    run = _run(nms, f"0 {nms} sleep {seconds:g}\n" * 2, "--scheduler", "gang", "--mpl", "2",
               "--timeslice", "0.05")
    try:
        latency = [e["latency_us"] for e in events(run)
                   if e["event"] == "switch" and e["stopped"] and e["continued"]]
    finally:
        shutil.rmtree(run.parent)
    if not latency:
        raise RuntimeError("no full switch happened")
    figures = percentiles(latency)
    return {"p50_us": figures["p50"], "p99_us": figures["p99"], "switches": len(latency)}


def launch(nms: int, repeats: int) -> float:
    """The median launch overhead (s): response time minus the 0.05 s each of ``repeats``
    jobs of ``nms`` ranks sleeps."""
    text = "".join(f"{i * 0.5:.1f} {nms} sleep {NAP}\n" for i in range(repeats))
    run = _run(nms, text, "--scheduler", "fcfs")
    try:
        rows = jobs(run)
    finally:
        shutil.rmtree(run.parent)
    done = [float(r["response"]) - NAP for r in rows if r["status"] == "done"]
    if len(done) != repeats:
        raise RuntimeError(f"only {len(done)} of {repeats} empty jobs ended done")
    return median(done)


def main(argv: list[str] | None = None) -> int:
    """Measure every count and print the table or the JSON records."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.multihost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nms", default="1,2,4,8", help="node manager counts, comma-separated")
    p.add_argument("--seconds", type=float, default=10.0, help="length of the switching run")
    p.add_argument("--repeats", type=int, default=7, help="empty jobs per count")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    records = []
    for nms in (int(n) for n in args.nms.split(",")):
        records.append({"nms": nms, **heartbeat(nms, args.seconds),
                        "launch_s": round(launch(nms, args.repeats), 4)})
    if args.json:
        for record in records:
            print(json.dumps(record))
        return 0
    print(table(["NMs", "switch p50 (us)", "p99 (us)", "switches", "launch (s)"],
                [[r["nms"], r["p50_us"], r["p99_us"], r["switches"], r["launch_s"]]
                 for r in records]))
    print(f"\nemulated hosts on {host()['cpus']} CPUs; {args.seconds:g} s of switching at "
          "0.05 s slices; launch: median of "
          f"{args.repeats} empty jobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

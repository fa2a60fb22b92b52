"""Started right after an owner interrupted job JOB: fail (exit 1) if any process of JOB is
still alive or no owner process of this run is pinned to CPU; else keep a CPU busy SECONDS.

Usage: python cow_check.py JOB CPU SECONDS
"""

import os
import sys
import time

import psutil

job, cpu, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
run = os.environ["TESTBED_RUN"]
left, owners = [], []
for proc in psutil.process_iter(["pid", "cmdline", "environ", "cpu_affinity", "status"]):
    env = proc.info["environ"] or {}
    if env.get("TESTBED_RUN") != run or proc.info["status"] == psutil.STATUS_ZOMBIE:
        continue
    if env.get("TESTBED_JOB") == job:
        left.append(proc.info["pid"])
    if "testbed.emulation.owner" in (proc.info["cmdline"] or []):
        owners.append(proc.info["cpu_affinity"])
if left or owners != [[cpu]]:
    print(f"left of {job}: {left}; owner affinities: {owners}", file=sys.stderr)
    sys.exit(1)
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    pass

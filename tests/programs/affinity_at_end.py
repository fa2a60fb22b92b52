"""Use SECONDS of CPU time, then print the CPUs this process may run on, as /proc says."""

import sys
import time

deadline = time.process_time() + float(sys.argv[1])
while time.process_time() < deadline:
    pass
with open("/proc/self/status") as status:
    print(next(line for line in status if line.startswith("Cpus_allowed_list:")).split()[1])

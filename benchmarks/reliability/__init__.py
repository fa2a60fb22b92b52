"""Benchmarks of reliability: one command each (``python -m benchmarks`` prints the whole index
with durations and pages).

* ``python -m benchmarks.reliability.chaos``: killing the service or node managers at random
  while clients submit
* ``python -m benchmarks.reliability.soak``: testbed serve under long traffic: memory,
  descriptors, threads
* ``python -m benchmarks.reliability.service``: what testbed mpirun adds to a job against plain
  mpiexec
* ``python -m benchmarks.reliability.multihost``: heartbeat, coordinator CPU and launch against
  node managers
* ``python -m benchmarks.reliability.slurm_experiment``: one small experiment run locally
  against through Slurm
"""

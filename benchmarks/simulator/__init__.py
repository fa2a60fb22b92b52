"""Benchmarks of the simulator: one command each (``python -m benchmarks`` prints the whole index
with durations and pages).

* ``python -m benchmarks.simulator.speed``: simulated jobs per wall second on a Lublin workload
* ``python -m benchmarks.simulator.derive``: seconds to derive jobs.csv and summary.json,
  against another checkout
* ``python -m benchmarks.simulator.same_logs``: whether two checkouts simulate byte-identical
  event logs
* ``python -m benchmarks.simulator.crossval``: one workload emulated and simulated per policy
"""

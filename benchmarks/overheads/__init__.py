"""Benchmarks of overheads: one command each (``python -m benchmarks`` prints the whole index with
durations and pages).

* ``python -m benchmarks.overheads.regression``: the testbed's own overheads with intervals, and
  a regression check
* ``python -m benchmarks.overheads.launch_overhead``: job launch overhead: response - work,
  outside the run and displaced
* ``python -m benchmarks.overheads.switch_latency``: gang's multi-context switch: heartbeat to
  last signal
* ``python -m benchmarks.overheads.shim_cost``: the shim: ping-pong overhead, blocked CPU,
  wake-up latency
* ``python -m benchmarks.overheads.wake_trace``: where a blocked rank's wake-up time goes, step
  by step
* ``python -m benchmarks.overheads.noise``: the regression check's false alarms and detections
* ``python -m benchmarks.overheads.versions``: one benchmark command's wall time in two code
  trees, paired
* ``python -m benchmarks.overheads.shim_trees``: one unmodified C client under two code trees'
  shims, paired

Shared by them, without a command of its own: ``paired_walls``, the paired wall-time figures
versions and derive share; ``unprivileged``, running a part of the suite as another user.
"""

"""The benchmarks, one package per thing they measure (``python -m benchmarks`` prints the
index):

* ``benchmarks.papers``: the papers
* ``benchmarks.overheads``: overheads
* ``benchmarks.programs``: real programs and MPI's semantics
* ``benchmarks.simulator``: the simulator
* ``benchmarks.reliability``: reliability
* ``benchmarks.calibration``: the statistics' calibration

``harness`` holds what they share (options, sessions, pages); ``clients`` the MPI programs they
run.
"""

"""Benchmarks of real programs and MPI's semantics: one command each (``python -m benchmarks``
prints the whole index with durations and pages).

* ``python -m benchmarks.programs.conformance``: mpi4py's test suite under every scheduler
  against plain mpiexec
* ``python -m benchmarks.programs.progress``: progress-dependent MPI patterns under every
  scheduler
* ``python -m benchmarks.programs.real_clients``: unmodified MPI programs under every scheduler,
  with intervals
* ``python -m benchmarks.programs.progress_cost``: an IMB pair under gang, ics and fcs against
  another checkout
"""

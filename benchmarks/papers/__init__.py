"""Benchmarks of the papers: one command each (``python -m benchmarks`` prints the whole index with
durations and pages).

* ``python -m benchmarks.papers.reproduce``: every published claim of the five papers,
  re-measured, a verdict each
* ``python -m benchmarks.papers.cow``: COW §3 simulated: AFCFS against LGFS with workstation
  owners
* ``python -m benchmarks.papers.cow_emulated``: COW's gangs and owners emulated against
  simulated
* ``python -m benchmarks.papers.memory_fig5``: MEMORY Fig 5: execution time against jobs, with
  and without admission
* ``python -m benchmarks.papers.memory_fig7``: MEMORY Fig 7: response and slowdown against load,
  real paging
* ``python -m benchmarks.papers.memory_queueing``: MEMORY §4.3 simulated: the share admission
  keeps queued
* ``python -m benchmarks.papers.memory_estimator``: MEMORY §2.1.3, Fig 2: the memory estimator
  replayed over a workload log (the LANL CM-5's, ``--log``)
* ``python -m benchmarks.papers.t3d_fig6``: T3D Fig 6 simulated: mean slowdown against load,
  five schedulers
* ``python -m benchmarks.papers.t3d_classes``: T3D's class mix on real processes: interactive
  response, preemption
* ``python -m benchmarks.papers.nersc``: the NERSC T3E psched configurations against plain gang
* ``python -m benchmarks.papers.fcs_classification``: THESIS §5.3: how FCS classifies six jobs'
  processes
* ``python -m benchmarks.papers.granularity``: THESIS Table 5.3: one job across granularity and
  variance
"""

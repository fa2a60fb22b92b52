"""Benchmarks of the statistics' calibration: one command each (``python -m benchmarks`` prints the
whole index with durations and pages).

* ``python -m benchmarks.calibration.coverage``: whether the comparisons' intervals cover what
  they claim
* ``python -m benchmarks.calibration.verdicts``: how often the reproduction's verdict rules
  mislead
"""

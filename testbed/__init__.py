"""testbed: a parallel MPI emulation testbed for job-scheduling research."""

__version__ = "0.1.0"

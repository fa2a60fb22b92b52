"""Workloads: the workload file, SWF traces, and the mix and model generators."""

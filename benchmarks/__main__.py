"""``python -m benchmarks``: the index of the benchmarks, grouped by what they measure.

Each group is a package of ``benchmarks``; each line is a command (``python -m
benchmarks.PACKAGE.NAME``), what it measures, how long its default
run takes on the 2-core machine where the docs say so (``-`` where they do not), and the page
of ``docs/results`` the docs write with it (``-``: none).  Every benchmark prints its figures
and JSON; ``--help`` gives its options.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One benchmark: its module, what it measures, its default run's duration on 2 cores
    (as the docs state it) and the results page it writes."""

    module: str
    measures: str
    duration: str = "-"
    page: str = "-"


GROUPS: dict[str, tuple[str, tuple[Entry, ...]]] = {
    "papers": ("the papers", (
        Entry("reproduce", "every published claim of the five papers, re-measured, a verdict "
              "each", "about 2 h; --quick about 20 min", "OUT/report.md"),
        Entry("cow", "COW §3 simulated: AFCFS against LGFS with workstation owners", "40 s",
              "cow.md"),
        Entry("cow_emulated", "COW's gangs and owners emulated against simulated", "1 min",
              "cow-emulated.md"),
        Entry("memory_fig5", "MEMORY Fig 5: execution time against jobs, with and without "
              "admission", page="memory-fig5.md"),
        Entry("memory_fig7", "MEMORY Fig 7: response and slowdown against load, real paging"),
        Entry("memory_queueing", "MEMORY §4.3 simulated: the share admission keeps queued"),
        Entry("memory_estimator", "MEMORY §2.1.3, Fig 2: the memory estimator replayed over "
              "a workload log (the LANL CM-5's, --log)"),
        Entry("t3d_fig6", "T3D Fig 6 simulated: mean slowdown against load, five schedulers",
              "13 min", "t3d-fig6.md"),
        Entry("t3d_classes", "T3D's class mix on real processes: interactive response, "
              "preemption", "5 min", "t3d-classes.md"),
        Entry("nersc", "the NERSC T3E psched configurations against plain gang",
              "4 min; --simulate 40 s", "nersc.md"),
        Entry("fcs_classification", "THESIS §5.3: how FCS classifies six jobs' processes"),
        Entry("granularity", "THESIS Table 5.3: one job across granularity and variance"),
    )),
    "overheads": ("overheads", (
        Entry("regression", "the testbed's own overheads with intervals, and a regression "
              "check", page="overheads-as-user.md"),
        Entry("launch_overhead", "job launch overhead: response - work, outside the run and "
              "displaced"),
        Entry("switch_latency", "gang's multi-context switch: heartbeat to last signal",
              page="switch-latency-unprivileged.md"),
        Entry("shim_cost", "the shim: ping-pong overhead, blocked CPU, wake-up latency",
              page="shim-cost.md"),
        Entry("wake_trace", "where a blocked rank's wake-up time goes, step by step",
              page="wake-trace.md"),
        Entry("noise", "the regression check's false alarms and detections"),
        Entry("versions", "one benchmark command's wall time in two code trees, paired"),
        Entry("shim_trees", "one unmodified C client under two code trees' shims, paired"),
    )),
    "programs": ("real programs and MPI's semantics", (
        Entry("conformance", "mpi4py's test suite under every scheduler against plain "
              "mpiexec", "30 min", "conformance.md"),
        Entry("progress", "progress-dependent MPI patterns under every scheduler",
              page="progress.md"),
        Entry("real_clients", "unmodified MPI programs under every scheduler, with intervals",
              page="real-clients.md"),
        Entry("progress_cost", "an IMB pair under gang, ics and fcs against another checkout",
              page="progress-cost.md"),
    )),
    "simulator": ("the simulator", (
        Entry("speed", "simulated jobs per wall second on a Lublin workload",
              page="simulator.md"),
        Entry("derive", "seconds to derive jobs.csv and summary.json, against another "
              "checkout"),
        Entry("same_logs", "whether two checkouts simulate byte-identical event logs"),
        Entry("crossval", "one workload emulated and simulated per policy", "4 min",
              "crossval.md"),
    )),
    "reliability": ("reliability", (
        Entry("chaos", "killing the service or node managers at random while clients submit",
              page="chaos.md"),
        Entry("soak", "testbed serve under long traffic: memory, descriptors, threads",
              "20 min", "soak.md"),
        Entry("service", "what testbed mpirun adds to a job against plain mpiexec",
              page="service.md"),
        Entry("multihost", "heartbeat, coordinator CPU and launch against node managers",
              page="multihost.md"),
        Entry("slurm_experiment", "one small experiment run locally against through Slurm"),
    )),
    "calibration": ("the statistics' calibration", (
        Entry("coverage", "whether the comparisons' intervals cover what they claim",
              "1 min", "coverage.md"),
        Entry("verdicts", "how often the reproduction's verdict rules mislead", "4 min",
              "verdicts.md"),
    )),
}


def lines() -> list[str]:
    """The index as text lines: a heading per group (its title and package), a line per
    benchmark."""
    out = []
    for package, (title, entries) in GROUPS.items():
        out.append(f"{title} (benchmarks.{package}):")
        width = max(len(e.module) for e in entries)
        for e in entries:
            page = e.page if e.page in ("-", "OUT/report.md") else f"docs/results/{e.page}"
            out.append(f"  python -m benchmarks.{package}.{e.module:<{width}}  {e.measures}"
                       f" [{e.duration}; {page}]")
        out.append("")
    return out


def commands() -> list[str]:
    """Every benchmark's module, ``benchmarks.PACKAGE.MODULE``, in the index's order."""
    return [f"benchmarks.{package}.{e.module}" for package, (_, entries) in GROUPS.items()
            for e in entries]


def main() -> int:
    """Print the index."""
    print("\n".join(lines()).rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

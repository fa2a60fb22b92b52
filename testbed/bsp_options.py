"""The BSP benchmark's options (times in seconds): one parser, shared by the benchmark
(``testbed.jobs.bsp``) and by the workload reader, which checks a ``bsp`` line's options and
takes its work, timeslice and memory from them without importing the benchmark."""

from __future__ import annotations

import argparse

from testbed.defaults import TIMESLICE_S

PATTERNS = ("none", "nn", "aa")


def _rank_value(text: str, allow_zero: bool) -> tuple[int, float]:
    rank, sep, value = text.partition(":")
    try:
        if not sep:
            raise ValueError
        parsed = int(rank), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected RANK:VALUE, got {text!r}") from None
    if parsed[0] < 0 or parsed[1] < 0 or (parsed[1] == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise argparse.ArgumentTypeError(f"RANK must be >= 0 and VALUE {bound}, got {text!r}")
    return parsed


def _imbalance(text: str) -> tuple[int, float]:
    return _rank_value(text, allow_zero=False)


def _rank_variance(text: str) -> tuple[int, float]:
    return _rank_value(text, allow_zero=True)


def _non_negative(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def build_parser(cls: type[argparse.ArgumentParser] = argparse.ArgumentParser
                 ) -> argparse.ArgumentParser:
    """Return the benchmark's argument parser (times in seconds), an instance of ``cls``."""
    p = cls(prog="python -m testbed.jobs.bsp",
            description="The synthetic BSP benchmark (THESIS Fig 4.4 and §4.5).")
    p.add_argument("--work", type=_non_negative, default=1.0, help="total work W, seconds")
    p.add_argument("--granularity", type=_positive, default=0.5,
                   help="iteration length G as a fraction of the timeslice")
    p.add_argument("--timeslice", type=_positive, default=TIMESLICE_S,
                   help="timeslice T, seconds")
    p.add_argument("--variance", type=_non_negative, default=0.0,
                   help="V: compute varies uniformly within w*(1 +- V)")
    p.add_argument("--pattern", choices=PATTERNS, default="nn")
    p.add_argument("--io-blocks", type=_count, default=0,
                   help="B: 1 KB synchronous writes per iteration")
    p.add_argument("--imbalance", type=_imbalance, action="append", default=[],
                   metavar="RANK:FACTOR", help="that rank computes FACTOR times as much")
    p.add_argument("--rank-variance", type=_rank_variance, action="append", default=[],
                   metavar="RANK:V", help="that rank's variance instead of --variance")
    p.add_argument("--mem-mb", type=_non_negative, default=0.0,
                   help="MiB of memory each rank walks over (0: no walk)")
    p.add_argument("--theta", type=float, default=1.5,
                   help="locality of the walk, 1 (least) to 2 (most)")
    p.add_argument("--accesses", type=int, default=100000, help="walk steps per iteration")
    p.add_argument("--stride", type=int, default=1024, help="bytes per walk cell")
    p.add_argument("--seed", type=int, default=0, help="seed of the per-rank PRNG streams")
    p.add_argument("--stats", help="file for the JSON records (default: stdout)")
    p.add_argument("--scratch-dir", default=None, help="where the per-rank I/O files go")
    return p

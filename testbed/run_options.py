"""A run's options: every setting with its default, its text form and its choices, in one
place (``testbed.run`` checks their ranges; argparse takes its defaults from here).

``Options`` is made from parsed arguments (``Options.of``) or from a mapping of plain values
(``Options.from_mapping``: experiment cells, benchmarks).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed.emulation.procs import RankPriority
from testbed.emulation.tree import DEFAULT_WIDTH
from testbed.hang import DEFAULT_HANG_AFTER
from testbed.policies import PolicyConfig, PrimeTime
from testbed.policies.matrix import UNBOUNDED
from testbed.sizes import parse_size

CHOICES = {"executor": ("emulation", "simulation"), "allocator": ("buddy", "first-fit"),
           "estimates": ("given", "perfect"), "overrun": ("kill", "run")}
"""The options that take one of a few words, and those words (the first is the default)."""


class UsageError(Exception):
    """Bad input: reported as one line, exit code 2."""


@dataclass(frozen=True, kw_only=True)
class Options:
    """Every setting of a run; times in seconds, sizes in bytes, None: not set.  The policy's
    settings default to ``PolicyConfig``'s."""

    scheduler: str = "gang"
    executor: str = "emulation"     # or simulation
    mpl: int = PolicyConfig.mpl     # UNBOUNDED (0): no limit (the simulator only)
    timeslice: float = PolicyConfig.timeslice
    pes: int | None = None
    allocator: str = PolicyConfig.allocator
    job_timeout: float | None = None
    estimates: str = "given"
    overrun: str = PolicyConfig.overrun
    prime_shift: float = PrimeTime.shift_s
    prime_large: int | None = None
    prime_free: int | None = None
    prime_large_limit: float = PrimeTime.large_limit_s
    prime_small_limit: float = PrimeTime.small_limit_s
    classes: Path | None = None
    variation: float = PolicyConfig.variation
    balance: float = PolicyConfig.balance_s
    migration_delay: float = PolicyConfig.migration_delay_s
    app_max: int = PolicyConfig.app_max
    abs_app_max: int = PolicyConfig.abs_app_max
    defrag: float = PolicyConfig.defrag_s
    owners: tuple[float, float] | None = None
    owner_seed: int = 1
    # emulation
    nodes: int = 1
    rank_priority: str = "auto"
    hosts: Path | None = None
    launcher: str | None = None
    tree_width: int = DEFAULT_WIDTH
    spin: float | None = None
    hang_after: float = DEFAULT_HANG_AFTER
    node_mem: int | None = None
    swap: int | None = None
    memory_admission: float | None = None
    memory_history: Path | None = None
    # simulation
    switch_cost: float = 0.0
    launch_cost: float = 0.0
    uncompress: bool = False

    @classmethod
    def of(cls, settings: Any, **changes: Any) -> Options:
        """Options from any object with some of these fields as attributes (an argparse
        namespace), the rest at their defaults, then ``changes``."""
        names = {f.name for f in dataclasses.fields(cls)}
        given = {n: getattr(settings, n) for n in names if hasattr(settings, n)}
        return cls(**{**given, **changes})

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any]) -> Options:
        """Options from plain values by field name (an experiment cell's TOML, a benchmark's
        settings): numbers, booleans, and text where the command line takes text (``mpl``
        ``unbounded``, sizes such as ``512M``, ``owners`` ``RATE:MEAN``, paths); the rest
        at their defaults.  ``UsageError`` naming the field for an unknown field or a value
        of the wrong kind (ranges are checked by ``prepare``)."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values = {}
        for name, value in settings.items():
            if name not in fields:
                raise UsageError(f"{name}: not an option of a run (known: "
                                 f"{', '.join(sorted(fields))})")
            try:
                values[name] = _from_plain(name, value, str(fields[name].type))
            except ValueError as err:
                raise UsageError(f"{name}: {err}") from None
        return cls(**values)


def parse_mpl(text: str) -> int:
    """The MPL from its text: a number of rows, or ``unbounded`` (``UNBOUNDED``)."""
    if text == "unbounded":
        return UNBOUNDED
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"expected a number of rows or 'unbounded', got {text!r}") from None


def parse_owners(text: str) -> tuple[float, float]:
    """An owner stream's ``RATE:MEAN`` (per s, s), both > 0."""
    try:
        rate, mean = (float(x) for x in text.split(":"))
    except ValueError:
        raise ValueError(f"expected RATE:MEAN, got {text!r}") from None
    if not (rate > 0 and mean > 0 and math.isfinite(rate) and math.isfinite(mean)):
        raise ValueError(f"RATE and MEAN must be > 0, got {text!r}")
    return rate, mean


def parse_rank_priority(text: str) -> str:
    """``auto`` or a rank priority (``RankPriority.parse``'s forms)."""
    if text != "auto":
        RankPriority.parse(text)
    return text


def parse_tree_width(text: str) -> int:
    """A fan-out tree's width, at least 1."""
    try:
        width = int(text)
    except ValueError:
        raise ValueError(f"expected a whole number, got {text!r}") from None
    if width < 1:
        raise ValueError(f"must be at least 1, got {width}")
    return width


TEXT_FORMS: dict[str, Callable[[str], Any]] = {
    "mpl": parse_mpl, "node_mem": parse_size, "swap": parse_size, "owners": parse_owners,
    "rank_priority": parse_rank_priority, "tree_width": parse_tree_width,
    "classes": Path, "hosts": Path, "memory_history": Path,
}
"""The options whose text form is not the plain value: what parses each (``ValueError``
saying why not), shared by argparse and ``Options.from_mapping``."""


def _from_plain(name: str, value: Any, kind: str) -> Any:
    """The option ``name``'s value from a plain ``value``; ``kind`` is its field's type as
    written (``float | None``); ``ValueError`` saying why not."""
    if name in TEXT_FORMS and isinstance(value, (str, int)) and not isinstance(value, bool):
        return TEXT_FORMS[name](str(value))
    if name == "owners" and isinstance(value, (list, tuple)):
        return parse_owners(":".join(str(v) for v in value))
    base = kind.split("|")[0].strip()
    if base == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
    if base in ("int", "float") and not isinstance(value, bool):
        number = int if base == "int" else float
        try:
            if isinstance(value, (str, int)) or (isinstance(value, float) and base == "float"):
                return number(value)
        except ValueError:
            pass
        raise ValueError(f"expected {'a whole number' if base == 'int' else 'a number'}, "
                         f"got {value!r}")
    if base == "str" and isinstance(value, str):
        return value
    raise ValueError(f"unexpected value {value!r}")

"""Workstation owners as a stream (COW §2.1): where an arriving owner sits down."""

from __future__ import annotations

import random
from dataclasses import dataclass

OWNER_PICKS = ("unowned", "idle", "any")


@dataclass(frozen=True)
class OwnerStream:
    """Workstation owners (COW §2.1): they arrive Poisson at ``rate`` (per s), each stays an
    exponential time of mean ``mean_s`` (s) at a PE drawn uniformly, as ``pick`` says, from

    * ``unowned``: the PEs without an owner, idle or running a gang (COW §2.1's redraw until
      the workstation drawn is not its owner's already);
    * ``idle``: the PEs with neither an owner nor a gang, or, when there is none, ``unowned``;
    * ``any``: all PEs (an owner drawn at a PE that has one already is dropped).

    An arrival finding every PE owned is dropped; every draw comes from ``seed``."""

    rate: float
    mean_s: float
    seed: int = 1
    pick: str = "unowned"

    def __post_init__(self) -> None:
        if self.pick not in OWNER_PICKS:
            raise ValueError(f"unknown owner pick {self.pick!r} (known: {', '.join(OWNER_PICKS)})")


def owner_pe(rng: random.Random, pick: str, pes: int, owned: set[int],
             busy: set[int]) -> int | None:
    """The PE an arriving owner takes (``OwnerStream.pick`` says how), drawn with ``rng``
    among ``pes`` PEs of which ``owned`` have an owner and ``busy`` run a gang; None when the
    owner is dropped."""
    if pick == "any":
        pe = rng.randrange(pes)
        return None if pe in owned else pe
    free = [pe for pe in range(pes) if pe not in owned]
    if pick == "idle":
        free = [pe for pe in free if pe not in busy] or free
    return rng.choice(free) if free else None

"""The hosts of a run: a hydra hostfile, or the Slurm allocation the run is inside.

A hostfile has one host a line in hydra's format, ``NAME[:SLOTS]`` (slots default to 1), with
``#`` comments.  Inside a Slurm allocation ``SLURM_JOB_NODELIST`` names the hosts (compressed,
``node[01-03,07]``) and ``SLURM_JOB_CPUS_PER_NODE`` their CPUs (``2(x3),1``); a host's slots
are its CPUs there.  Every host gets a node manager; its slots are its PEs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class HostsError(ValueError):
    """A bad hostfile line or Slurm variable: says where and what."""


@dataclass(frozen=True)
class Host:
    """One host: its name (as the launcher knows it) and its slots (PEs)."""

    name: str
    slots: int


def read_hostfile(path: Path) -> tuple[Host, ...]:
    """The hosts of a hydra hostfile; raises ``HostsError`` naming the file, line and field."""
    try:
        text = path.read_text()
    except OSError as err:
        raise HostsError(f"{path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise HostsError(f"{path}: not a text file") from None
    hosts = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, slots = line.partition(":")
        if not _NAME.fullmatch(name):
            raise HostsError(f"{path}:{number}: field 'host': not a host name: {name!r}")
        if not slots:
            count = 1
        elif slots.isdigit() and int(slots) >= 1:
            count = int(slots)
        else:
            raise HostsError(f"{path}:{number}: field 'slots': not a count >= 1: {slots!r}")
        if any(h.name == name for h in hosts):
            raise HostsError(f"{path}:{number}: field 'host': {name} is listed twice")
        hosts.append(Host(name, count))
    if not hosts:
        raise HostsError(f"{path}: no hosts")
    return tuple(hosts)


def expand_nodelist(text: str) -> list[str]:
    """Host names from Slurm's compressed list, e.g. ``a[1-3,07],b`` -> a1 a2 a3 a07 b
    (leading zeros kept, as ``scontrol show hostnames`` does)."""
    names = []
    for prefix, ranges, plain in re.findall(r"([^,\[]+)\[([^\]]*)\]|([^,\[\]]+)", text):
        if plain:
            names.append(plain)
            continue
        for part in ranges.split(","):
            low, _, high = part.partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise HostsError(f"SLURM_JOB_NODELIST: bad range {part!r} in {text!r}")
            for n in range(int(low), int(high or low) + 1):
                names.append(f"{prefix}{n:0{len(low)}d}")
    return names


def expand_counts(text: str) -> list[int]:
    """Counts from Slurm's compressed form, e.g. ``2(x3),1`` -> 2 2 2 1."""
    counts = []
    for part in text.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not match:
            raise HostsError(f"SLURM_JOB_CPUS_PER_NODE: bad entry {part!r} in {text!r}")
        counts += [int(match[1])] * int(match[2] or 1)
    return counts


def slurm_hosts(env: Mapping[str, str] | None = None) -> tuple[Host, ...] | None:
    """The hosts of the Slurm allocation this process runs in (None outside one)."""
    env = os.environ if env is None else env
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist:
        return None
    names = expand_nodelist(nodelist)
    per_node = env.get("SLURM_JOB_CPUS_PER_NODE")
    if per_node:
        counts = expand_counts(per_node)
    else:
        counts = [int(env.get("SLURM_CPUS_ON_NODE", "1"))] * len(names)
    if len(counts) != len(names):
        raise HostsError(f"SLURM_JOB_CPUS_PER_NODE gives {len(counts)} counts for "
                         f"{len(names)} hosts")
    return tuple(Host(name, count) for name, count in zip(names, counts, strict=True))

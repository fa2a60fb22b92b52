"""The MPI launchers the testbed drives: MPICH's hydra, Intel MPI's hydra, Open MPI's PRRTE and
Slurm's ``srun``.

The scheduling core never names a launcher.  A node manager asks its ``Launcher`` for the
command line and environment that start a job's ranks on given CPUs (or hosts), the executor
for the control job that starts one node manager per host, and discovery for how a process's
environment names its world rank.  Each launcher also knows the shared-memory files its MPI's
ranks leave in ``/dev/shm`` when they are killed.

Which one a run uses is probed from the ``mpiexec`` of the MPI that mpi4py loads
(``testbed.emulation.mpi_info``); ``TESTBED_MPI_LAUNCHER`` overrides it; ``config.json`` records
it.  Everything here is pure: command lines in, command lines out.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from testbed import native

# Runs a launcher's "remote" command on this machine: emulated hosts for the launchers whose
# fork bootstrap cannot start another host's daemon.
SSH_STAND_IN = native.DIR / "testbed-ssh"
HOSTNAME_ENV = "TESTBED_SSH_HOSTNAME"
OVERRIDE_ENV = "TESTBED_MPI_LAUNCHER"


def control_index(env: Mapping[str, str]) -> int | None:
    """The index, among the control job's processes, of the one with environment ``env``, as
    any of the launchers numbers them (a node manager reads it before it knows which)."""
    return _rank_of(env, ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"))


def _rank_of(env: Mapping[str, str], names: Sequence[str]) -> int | None:
    for name in names:
        value = env.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def host_spread(names: Sequence[str]) -> str:
    """``names`` (a host per rank, in rank order) as ``host:ranks`` runs, comma-separated."""
    return ",".join(f"{name}:{len(list(run))}" for name, run in itertools.groupby(names))


@dataclass(frozen=True)
class Launcher:
    """How one MPI's ``mpiexec`` (at ``mpiexec``) starts a job and names its processes.

    ``bootstrap`` is how it reaches other hosts (``fork``: hosts emulated on this machine,
    ``ssh``, ``slurm``; None: its default); ``ssh_stand_in`` is the project's stand-in for
    ``ssh`` that runs the remote command here, for launchers whose ``fork`` cannot emulate
    hosts."""

    mpiexec: str
    bootstrap: str | None = None
    ssh_stand_in: str = str(SSH_STAND_IN)

    kind: ClassVar[str] = ""
    rank_variables: ClassVar[tuple[str, ...]] = ()
    segment_prefixes: ClassVar[tuple[str, ...]] = ()

    def job(self, argv: Sequence[str], cpus: Sequence[int] | None,
            hosts: Sequence[str] | None, preload: str = "",
            env: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """The command line and the extra environment that start ``argv`` as one rank per
        entry of ``cpus`` (rank i bound to CPU ``cpus[i]``, one host) or of ``hosts`` (rank i
        on host ``hosts[i]``, each host's node manager binding its own ranks), with the
        library ``preload`` (if any) preloaded into every rank and nothing else; ``env`` is
        the environment the launch would have without the extra."""
        raise NotImplementedError

    def control(self, argv: Sequence[str], hosts: Sequence[str]) -> list[str]:
        """The command line that starts ``argv`` once on every host of ``hosts``, and keeps
        the others when one of them dies."""
        raise NotImplementedError

    def world_rank(self, env: Mapping[str, str]) -> int | None:
        """The rank, in its job's own world, of the process with environment ``env``; None
        for a launcher's process and for a process the job spawned (ranked in a world of its
        own)."""
        raise NotImplementedError

    def emulation_env(self) -> dict[str, str]:
        """The environment the launcher needs, beside its command line, to start processes
        on hosts emulated on this machine (nothing when its hosts are not emulated)."""
        return {}

    def names_rank(self, env: Mapping[str, str]) -> bool:
        """True when ``env`` is an MPI process's (a rank of the job or of one it spawned),
        not a launcher's."""
        return any(name in env for name in self.rank_variables)

    def looked_for(self) -> str:
        """What discovery looks for in a rank's environment, for messages."""
        return " or ".join(self.rank_variables)

    def describe(self) -> dict[str, object]:
        """A JSON-ready description for ``config.json``."""
        return {"kind": self.kind, "mpiexec": self.mpiexec, "bootstrap": self.bootstrap,
                "rank_variables": list(self.rank_variables),
                "segment_prefixes": list(self.segment_prefixes)}


@dataclass(frozen=True)
class Hydra(Launcher):
    """MPICH's hydra: ranks carry ``PMI_RANK`` (``PMI_SPAWNED=1`` in a spawned world); the
    binding goes in ``HYDRA_BINDING``, not as ``-bind-to``, since with ``-bind-to`` on its
    command line hydra 5.0 fails every ``MPI_Comm_spawn`` ("duplicate setting: binding")."""

    kind: ClassVar[str] = "hydra"
    rank_variables: ClassVar[tuple[str, ...]] = ("PMI_RANK",)
    segment_prefixes: ClassVar[tuple[str, ...]] = ("mpich_shm_", "ucx_shm_posix_")

    def _bootstrap(self) -> list[str]:
        return ["-launcher", self.bootstrap] if self.bootstrap else []

    def _binding(self, cpus: Sequence[int]) -> dict[str, str]:
        return {"HYDRA_BINDING": "user:" + ",".join(map(str, cpus))}

    def job(self, argv: Sequence[str], cpus: Sequence[int] | None,
            hosts: Sequence[str] | None, preload: str = "",
            env: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """See ``Launcher.job``: ``-genv LD_PRELOAD`` for the preload, ``-hosts h:n,...``
        in rank order across hosts."""
        preloads = ["-genv", "LD_PRELOAD", preload] if preload else []
        extra = self._preload_env(env or {}) if preload else {}
        if hosts is None:
            assert cpus is not None
            return ([self.mpiexec, "-n", str(len(cpus)), *preloads, *argv],
                    {**self._binding(cpus), **extra})
        return ([self.mpiexec, *self._bootstrap(), "-hosts", host_spread(hosts), "-n",
                 str(len(hosts)),
                 *preloads, *argv], extra)

    def _preload_env(self, env: Mapping[str, str]) -> dict[str, str]:
        return {}

    def control(self, argv: Sequence[str], hosts: Sequence[str]) -> list[str]:
        """See ``Launcher.control``: ``-disable-auto-cleanup -ppn 1``."""
        return [self.mpiexec, *self._bootstrap(), "-disable-auto-cleanup", "-hosts",
                ",".join(hosts), "-ppn", "1", "-n", str(len(hosts)), *argv]

    def world_rank(self, env: Mapping[str, str]) -> int | None:
        """See ``Launcher.world_rank``: ``PMI_RANK`` unless ``PMI_SPAWNED=1``."""
        if env.get("PMI_SPAWNED") == "1":
            return None
        return _rank_of(env, self.rank_variables)


@dataclass(frozen=True)
class IntelHydra(Hydra):
    """Intel MPI's hydra: hydra's command line, but it pins by its own rules unless told
    with ``I_MPI_PIN_PROCESSOR_LIST`` (``HYDRA_BINDING`` is ignored), and its ``fork``
    bootstrap cannot start proxies for other host names, so emulated hosts go through
    ``ssh`` with the project's stand-in as the ``ssh`` it runs."""

    kind: ClassVar[str] = "intel"
    segment_prefixes: ClassVar[tuple[str, ...]] = ("Intel_MPI_", "ucx_shm_posix_")

    def _bootstrap(self) -> list[str]:
        if self.bootstrap == "fork":
            return ["-launcher", "ssh", "-launcher-exec", self.ssh_stand_in]
        return super()._bootstrap()

    def _binding(self, cpus: Sequence[int]) -> dict[str, str]:
        return {"I_MPI_PIN": "1", "I_MPI_PIN_PROCESSOR_LIST": ",".join(map(str, cpus))}

    def _preload_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """With a library preloaded, Intel's ``libmpi`` is loaded before the program and
        looks for ``libfabric.so.1`` on the library path alone, where the pip wheel's is not
        (ranks on two hosts then fail in ``MPI_Init``): its ``lib/`` goes first on it."""
        lib = str(Path(self.mpiexec).resolve().parent.parent / "lib")
        rest = env.get("LD_LIBRARY_PATH", "")
        return {"LD_LIBRARY_PATH": f"{lib}:{rest}" if rest else lib}


@dataclass(frozen=True)
class Prrte(Launcher):
    """Open MPI 5's PRRTE (``mpiexec`` is ``prterun``): ranks carry ``OMPI_COMM_WORLD_RANK``
    and ``PMIX_RANK`` and their job's PMIx namespace ``<server>@<n>``, where the launched job
    is ``@1`` and every spawned world takes the next number.  It maps no more ranks than a
    host has cores unless oversubscription is allowed, which the testbed's own matrix needs
    (it places several jobs' ranks on one CPU); it binds nothing (each node manager pins the
    ranks it finds).  The preload goes in the launcher's environment, not in ``-x``: the
    worlds a job spawns get their daemon's environment, not ``-x``'s, and without the shim a
    spawned process's blocking barrier never matched its parents' nonblocking one.  Emulated
    hosts go through ``ssh`` with the project's stand-in as the agent, each under a host name
    of its own (``TESTBED_SSH_HOSTNAME``: a UTS namespace):
    Open MPI tells hosts apart by name, and with one name for all its collectives disagree
    on the layout (checked with 5.0.11: HAN's sub-communicators are made by one rank and
    not its peer, and the job hangs; two ranks on one host and one on the other fail in
    ``MPI_Init`` with "num local peers").  PRRTE, told to recover, keeps the node managers
    when one dies."""

    kind: ClassVar[str] = "prrte"
    rank_variables: ClassVar[tuple[str, ...]] = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK")
    segment_prefixes: ClassVar[tuple[str, ...]] = ("sm_segment.", "ucx_shm_posix_")

    def _bootstrap(self) -> list[str]:
        if self.bootstrap == "fork":
            return ["--prtemca", "plm_ssh_agent", self.ssh_stand_in]
        return []

    def job(self, argv: Sequence[str], cpus: Sequence[int] | None,
            hosts: Sequence[str] | None, preload: str = "",
            env: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """See ``Launcher.job``: the preload in the launcher's own environment, ``--host
        h:n,...`` across hosts (PRRTE fills each host's slots in order), ``--bind-to
        none``."""
        extra = {"LD_PRELOAD": preload} if preload else {}
        common = ["--map-by", ":OVERSUBSCRIBE", "--bind-to", "none"]
        if hosts is None:
            assert cpus is not None
            return [self.mpiexec, *common, "-n", str(len(cpus)), *argv], extra
        return ([self.mpiexec, *self._bootstrap(), *common, "--host", host_spread(hosts), "-n",
                 str(len(hosts)), *argv], {**extra, **self.emulation_env()})

    def control(self, argv: Sequence[str], hosts: Sequence[str]) -> list[str]:
        """See ``Launcher.control``: one process per host (``ppr:1:node``), recovery on."""
        return [self.mpiexec, *self._bootstrap(), "--host", ",".join(hosts), "--map-by",
                "ppr:1:node:OVERSUBSCRIBE", "--bind-to", "none", "--enable-recovery",
                "-n", str(len(hosts)), *argv]

    def emulation_env(self) -> dict[str, str]:
        """See ``Launcher.emulation_env``: a host name of its own for each emulated host."""
        return {HOSTNAME_ENV: "1"} if self.bootstrap == "fork" else {}

    def world_rank(self, env: Mapping[str, str]) -> int | None:
        """See ``Launcher.world_rank``: the rank, unless the namespace is not the launched
        job's (``...@1``)."""
        namespace = env.get("PMIX_NAMESPACE", "")
        if "@" in namespace and namespace.rpartition("@")[2] != "1":
            return None
        return _rank_of(env, self.rank_variables)


# Every launcher's segments, for a sweep that does not know which MPI left them (the watchdog).
ALL_SEGMENT_PREFIXES = tuple(dict.fromkeys(
    prefix for cls in (Hydra, IntelHydra, Prrte) for prefix in cls.segment_prefixes))


@dataclass(frozen=True)
class Srun(Launcher):
    """Slurm's ``srun`` launching the ranks itself, with the site's MPI plugin (its default,
    or ``SLURM_MPI_TYPE``, e.g. ``pmi2`` for MPICH, ``pmix`` for Open MPI): ranks carry
    ``SLURM_PROCID``; job steps overlap the node managers' step (``--overlap``) and are bound
    with ``--cpu-bind=map_cpu``.  The preload is set by ``env`` as each task's command, not in
    ``srun``'s environment (where ``srun`` would keep it over ``--export``'s): there the shim,
    and the MPI library it links, would be loaded into ``srun`` itself.  A
    world spawned under ``srun`` is not supported by most MPIs, so every process with a
    ``SLURM_PROCID`` is a rank."""

    kind: ClassVar[str] = "srun"
    rank_variables: ClassVar[tuple[str, ...]] = ("SLURM_PROCID",)
    segment_prefixes: ClassVar[tuple[str, ...]] = ALL_SEGMENT_PREFIXES

    def job(self, argv: Sequence[str], cpus: Sequence[int] | None,
            hosts: Sequence[str] | None, preload: str = "",
            env: Mapping[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """See ``Launcher.job``: the preload set by ``env`` in each task; all ranks on one
        host as one node's block; across hosts ``--nodelist`` with ``--distribution=arbitrary``
        (a host per rank).  Slurm's PMI-2 plugin describes an arbitrary layout to the ranks
        (``PMI_process_mapping``) as one rank per node, so MPICH then neither shares memory
        between ranks on one host nor keeps their addresses short: that layout is kept only
        where a host per rank cannot be said otherwise."""
        task = ["env", f"LD_PRELOAD={preload}", *argv] if preload else list(argv)
        common = ["srun", "--overlap", "--kill-on-bad-exit=1", "--export=ALL"]
        if hosts is None:
            assert cpus is not None
            return [*common, "-n", str(len(cpus)),
                    "--cpu-bind=map_cpu:" + ",".join(map(str, cpus)), *task], {}
        if len(set(hosts)) == 1:
            return [*common, "-N", "1", "-n", str(len(hosts)), "--nodelist=" + hosts[0],
                    "--cpu-bind=none", *task], {}
        return [*common, "-n", str(len(hosts)), "--distribution=arbitrary",
                "--nodelist=" + ",".join(hosts), "--cpu-bind=none", *task], {}

    def control(self, argv: Sequence[str], hosts: Sequence[str]) -> list[str]:
        """See ``Launcher.control``: one task per node, the allocation's CPUs not held."""
        return ["srun", "--overlap", "--ntasks-per-node=1", f"--nodes={len(hosts)}",
                f"--ntasks={len(hosts)}", "--nodelist=" + ",".join(hosts),
                "--kill-on-bad-exit=0", *argv]

    def world_rank(self, env: Mapping[str, str]) -> int | None:
        """See ``Launcher.world_rank``: ``SLURM_PROCID``."""
        return _rank_of(env, self.rank_variables)


LAUNCHERS: dict[str, type[Launcher]] = {cls.kind: cls for cls in (Hydra, IntelHydra, Prrte,
                                                                  Srun)}
KINDS = tuple(LAUNCHERS)


def kind_of(version_text: str) -> str | None:
    """The launcher kind ``mpiexec --version`` printed ``version_text`` for, or None."""
    if "Intel(R) MPI" in version_text:
        return "intel"
    if "HYDRA" in version_text or "hydra" in version_text:
        return "hydra"
    if "Open MPI" in version_text or "PRRTE" in version_text or "prterun" in version_text:
        return "prrte"
    if version_text.startswith("slurm"):
        return "srun"
    return None


def make(kind: str, mpiexec: str, bootstrap: str | None = None) -> Launcher:
    """The launcher of ``kind`` (one of ``KINDS``); ``ValueError`` naming the kinds if not."""
    if kind not in LAUNCHERS:
        raise ValueError(f"not a launcher: {kind!r} (one of {', '.join(KINDS)})")
    return LAUNCHERS[kind](mpiexec, bootstrap)

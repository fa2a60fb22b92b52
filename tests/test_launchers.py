"""Each MPI's launcher: its command lines and environment, how its processes name their world
rank, and which launcher an ``mpiexec --version`` text is (pure: no process is started)."""

from __future__ import annotations

import pytest

from testbed.emulation import launchers
from testbed.emulation.launchers import Hydra, IntelHydra, Prrte, Srun


def test_hydra_binds_through_its_environment_and_preloads_with_genv():
    argv, env = Hydra("/m/mpiexec").job(["prog", "-x"], [1, 0], None, "/lib/shim.so")
    assert argv == ["/m/mpiexec", "-n", "2", "-genv", "LD_PRELOAD", "/lib/shim.so", "prog", "-x"]
    assert env == {"HYDRA_BINDING": "user:1,0"}


def test_hydra_places_ranks_across_hosts_in_rank_order():
    argv, env = Hydra("mpiexec", "fork").job(["prog"], None, ["a", "a", "b", "a"])
    assert argv == ["mpiexec", "-launcher", "fork", "-hosts", "a:2,b:1,a:1", "-n", "4", "prog"]
    assert env == {}


def test_hydras_control_job_is_one_process_a_host_kept_alive():
    argv = Hydra("mpiexec", "ssh").control(["nm"], ["a", "b"])
    assert argv == ["mpiexec", "-launcher", "ssh", "-disable-auto-cleanup", "-hosts", "a,b",
                    "-ppn", "1", "-n", "2", "nm"]


def test_intel_pins_with_its_own_variables_and_emulates_hosts_through_the_stand_in():
    _, env = IntelHydra("mpiexec").job(["prog"], [0, 1], None)
    assert env == {"I_MPI_PIN": "1", "I_MPI_PIN_PROCESSOR_LIST": "0,1"}
    argv, _ = IntelHydra("mpiexec", "fork", "/t/testbed-ssh").job(["prog"], None, ["a", "b"])
    assert argv[:5] == ["mpiexec", "-launcher", "ssh", "-launcher-exec", "/t/testbed-ssh"]
    argv, _ = IntelHydra("mpiexec", "slurm", "/t/testbed-ssh").job(["prog"], None, ["a"])
    assert argv[:3] == ["mpiexec", "-launcher", "slurm"]


def test_intel_with_a_preload_puts_its_lib_first_on_the_library_path():
    _, env = IntelHydra("/i/bin/mpiexec").job(["prog"], [0], None, "/s.so",
                                             {"LD_LIBRARY_PATH": "/u/lib"})
    assert env["LD_LIBRARY_PATH"] == "/i/lib:/u/lib"
    assert "LD_LIBRARY_PATH" not in IntelHydra("/i/bin/mpiexec").job(["prog"], [0], None)[1]


def test_prrte_oversubscribes_binds_nothing_and_preloads_through_its_environment():
    argv, env = Prrte("mpiexec").job(["prog"], [0, 0, 1], None, "/lib/shim.so")
    assert argv == ["mpiexec", "--map-by", ":OVERSUBSCRIBE", "--bind-to", "none", "-n", "3",
                    "prog"]
    assert env == {"LD_PRELOAD": "/lib/shim.so"}      # spawned worlds get the daemon's
    argv, env = Prrte("mpiexec", "fork", "/t/testbed-ssh").job(["prog"], None, ["a", "b", "b"])
    assert argv[:3] == ["mpiexec", "--prtemca", "plm_ssh_agent"]
    assert env == {launchers.HOSTNAME_ENV: "1"}            # a host name of its own each
    assert Prrte("mpiexec", "ssh").job(["prog"], None, ["a"])[1] == {}
    assert argv[argv.index("--host") + 1] == "a:1,b:2"
    control = Prrte("mpiexec").control(["nm"], ["a", "b"])
    assert control[control.index("--map-by") + 1].startswith("ppr:1:node")
    assert "--enable-recovery" in control and control[-1] == "nm"


def test_srun_binds_with_a_cpu_map_and_overlaps_the_node_managers():
    argv, env = Srun("srun").job(["prog"], [3, 2], None, "/lib/shim.so")
    assert argv == ["srun", "--overlap", "--kill-on-bad-exit=1", "--export=ALL", "-n", "2",
                    "--cpu-bind=map_cpu:3,2", "env", "LD_PRELOAD=/lib/shim.so", "prog"]
    assert env == {}            # the shim (and its MPI) never loaded into srun itself
    argv, _ = Srun("srun").job(["prog"], None, ["a", "b"])
    assert "--distribution=arbitrary" in argv and "--nodelist=a,b" in argv
    assert argv[-1] == "prog" and "env" not in argv


def test_srun_puts_ranks_on_one_host_in_one_block_not_an_arbitrary_layout():
    """Slurm's PMI-2 says an arbitrary layout is one rank per node, and MPICH then treats
    ranks on one host as on different nodes (no shared memory; network addresses exchanged
    through PMI, whose long lines Slurm's PMI-1 reader cuts at 1,024 bytes)."""
    argv, _ = Srun("srun").job(["prog"], None, ["vm", "vm", "vm"])
    assert "--distribution=arbitrary" not in argv
    assert argv[argv.index("-N") + 1] == "1" and argv[argv.index("-n") + 1] == "3"
    assert "--nodelist=vm" in argv and argv[-1] == "prog"


@pytest.mark.parametrize(("launcher", "rank", "spawned", "launchers_own"), [
    (Hydra("m"), {"PMI_RANK": "3"}, {"PMI_RANK": "0", "PMI_SPAWNED": "1"}, {"PATH": "/bin"}),
    (IntelHydra("m"), {"PMI_RANK": "3"}, {"PMI_RANK": "0", "PMI_SPAWNED": "1"},
     {"I_MPI_ROOT": "/x"}),
    (Prrte("m"),
     {"OMPI_COMM_WORLD_RANK": "3", "PMIX_RANK": "3", "PMIX_NAMESPACE": "prterun-vm-9@1"},
     {"OMPI_COMM_WORLD_RANK": "0", "PMIX_RANK": "0", "PMIX_NAMESPACE": "prterun-vm-9@2"},
     {"PMIX_SERVER_URI41": "x"}),
])
def test_each_launcher_names_a_rank_a_spawned_process_and_its_own(launcher, rank, spawned,
                                                                  launchers_own):
    assert launcher.world_rank(rank) == 3
    assert launcher.world_rank(spawned) is None
    assert launcher.world_rank(launchers_own) is None
    assert launcher.names_rank(rank) and launcher.names_rank(spawned)
    assert not launcher.names_rank(launchers_own)
    assert launcher.world_rank({next(iter(rank)): "x"}) is None


def test_srun_ranks_are_slurms_task_ids():
    assert Srun("srun").world_rank({"SLURM_PROCID": "2"}) == 2
    assert Srun("srun").world_rank({"SLURM_JOB_ID": "7"}) is None


def test_the_control_jobs_index_is_read_whatever_the_launcher():
    assert launchers.control_index({"PMI_RANK": "1"}) == 1
    assert launchers.control_index({"OMPI_COMM_WORLD_RANK": "2", "PMIX_RANK": "2"}) == 2
    assert launchers.control_index({"SLURM_PROCID": "3"}) == 3
    assert launchers.control_index({}) is None


@pytest.mark.parametrize(("text", "kind"), [
    ("HYDRA build details:\n    Version: 4.2.3", "hydra"),
    ("Intel(R) MPI Library for Linux* OS, Version 2021.18.1", "intel"),
    ("mpiexec (Open MPI) 5.0.11\n\nReport bugs to https://www.open-mpi.org", "prrte"),
    ("prterun (PRRTE) 3.0.6", "prrte"),
    ("slurm 22.05.8", "srun"),
    ("something else", None),
])
def test_the_launcher_is_told_by_its_version_text(text, kind):
    assert launchers.kind_of(text) == kind


def test_a_launcher_not_known_is_refused_by_name():
    with pytest.raises(ValueError, match="hydra, intel, prrte, srun"):
        launchers.make("mvapich", "mpiexec")
    assert isinstance(launchers.make("prrte", "mpiexec"), Prrte)


def test_every_launcher_says_what_it_leaves_in_dev_shm():
    for cls in launchers.LAUNCHERS.values():
        assert cls.segment_prefixes
        assert set(cls.segment_prefixes) <= set(launchers.ALL_SEGMENT_PREFIXES)

"""Hostfiles and Slurm allocations (issue: beyond one host)."""

from __future__ import annotations

import pytest

from testbed.hosts import (
    Host,
    HostsError,
    expand_counts,
    expand_nodelist,
    read_hostfile,
    slurm_hosts,
)
from testbed.machine import build_cluster


def test_a_hostfile_in_hydras_format(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("# two hosts\nnode1:4\n\nnode2   # one slot\n")
    assert read_hostfile(path) == (Host("node1", 4), Host("node2", 1))


@pytest.mark.parametrize(("text", "where"), [
    ("node1:x\n", "hosts:1: field 'slots'"),
    ("a:1\nno/de:2\n", "hosts:2: field 'host'"),
    ("a:0\n", "hosts:1: field 'slots'"),
    ("a\na:2\n", "hosts:2: field 'host': a is listed twice"),
    ("# nothing\n", "hosts: no hosts"),
])
def test_bad_hostfiles_name_the_line_and_field(tmp_path, text, where):
    path = tmp_path / "hosts"
    path.write_text(text)
    with pytest.raises(HostsError, match=where):
        read_hostfile(path)


def test_slurms_compressed_lists():
    assert expand_nodelist("n[01-03,07],login,gpu[1-2]") == [
        "n01", "n02", "n03", "n07", "login", "gpu1", "gpu2"]
    assert expand_counts("2(x3),1") == [2, 2, 2, 1]
    assert slurm_hosts({}) is None
    env = {"SLURM_JOB_NODELIST": "c[1-2]", "SLURM_JOB_CPUS_PER_NODE": "4,2"}
    assert slurm_hosts(env) == (Host("c1", 4), Host("c2", 2))
    assert slurm_hosts({"SLURM_JOB_NODELIST": "vm", "SLURM_CPUS_ON_NODE": "2"}) == (
        Host("vm", 2),)
    with pytest.raises(HostsError, match="3 counts for 2 hosts"):
        slurm_hosts({"SLURM_JOB_NODELIST": "c[1-2]", "SLURM_JOB_CPUS_PER_NODE": "1(x3)"})


def test_emulated_hosts_share_this_machines_cpus():
    machine = build_cluster((Host("a", 1), Host("b", 2)), "fork")
    assert [n.pes for n in machine.nodes] == [(0,), (1, 2)]
    assert machine.node_of(2).index == 1
    assert machine.emulated_hosts and machine.describe()["hosts"][1] == {"name": "b", "slots": 2}
    real = build_cluster((Host("a", 2), Host("b", 2)), None)
    assert real.cpus == (0, 1, 0, 1) and not real.oversubscribed

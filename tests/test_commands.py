"""Workload commands are checked before an emulated run starts, as the launcher resolves them
(given files and directories; no process is started)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from testbed import run
from testbed.emulation.commands import check_commands, checks_commands_here, command_problem
from testbed.hosts import Host
from testbed.machine import build_cluster, build_machine
from testbed.workloads.files import WorkloadError, load_workload


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A directory with an executable ``prog``, a plain file ``data`` and a directory ``dir``,
    and ``bin/tool`` (executable) for PATH lookups."""
    (tmp_path / "prog").write_text("#!/bin/sh\n")
    (tmp_path / "prog").chmod(0o755)
    (tmp_path / "data").write_text("")
    (tmp_path / "data").chmod(0o644)
    (tmp_path / "dir").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "tool").chmod(0o755)
    return tmp_path


def test_an_emulated_run_refuses_a_program_missing_relative_to_where_it_runs(
        tmp_path, monkeypatch):
    path = tmp_path / "bad.txt"
    path.write_text("0 2 native/build/nonexistent -m 1024\n0 2 /no/such/prog\n")
    monkeypatch.chdir(tmp_path)
    assert len(load_workload(path).jobs) == 2           # the shared reader does not look
    with pytest.raises(run.UsageError) as err:
        run.load(path, 0.2, build_machine(2))
    assert str(err.value) == (f"{path}:1: field 'command': no such program "
                              f"'native/build/nonexistent' (relative to {tmp_path})")


@pytest.mark.parametrize(("argv0", "problem"), [
    ("./prog", None),
    ("dir/../prog", None),
    ("tool", None),
    ("prog", "no such program 'prog' on PATH"),          # execvp never looks in the cwd
    ("./missing", "no such program './missing' (relative to {place})"),
    ("/no/such/prog", "no such program '/no/such/prog'"),
    ("./data", "'./data' (relative to {place}) is not executable"),
    ("./dir", "'./dir' (relative to {place}) is not a file"),
    ("", "no such program '' on PATH"),
])
def test_a_command_is_resolved_as_execvp_in_the_launch_directory(place, argv0, problem):
    env = {"PATH": str(place / "bin")}
    expected = None if problem is None else problem.format(place=place)
    assert command_problem(argv0, env, str(place)) == expected


def test_without_path_the_default_search_path_is_used(place):
    assert command_problem("sh", {}, str(place)) is None
    assert command_problem("tool", {}, str(place)) == "no such program 'tool' on PATH"


def test_the_first_bad_line_in_file_order_is_named_whatever_the_arrivals(place):
    path = place / "w.txt"
    path.write_text("# a comment\n"
                    "9 1 ./prog\n"
                    "5 1 ./data --flag\n"
                    "0 1 bsp --work 1\n"
                    "0 1 missing\n")
    workload = load_workload(path)
    assert [job.line for job in workload.jobs] == [4, 5, 3, 2]      # by arrival
    with pytest.raises(WorkloadError) as err:
        check_commands(str(path), workload.jobs, {"PATH": str(place / "bin")}, str(place))
    assert str(err.value) == (f"{path}:3: field 'command': './data' (relative to {place}) "
                              "is not executable")
    good = [job for job in workload.jobs if job.line in (2, 4)]
    check_commands(str(path), good, {"PATH": str(place / "bin")}, str(place))


def test_a_job_with_a_directory_of_its_own_is_resolved_there(place, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    path = place / "w.txt"
    path.write_text("0 1 ./prog\n")
    job = load_workload(path).jobs[0]
    with pytest.raises(WorkloadError, match="relative to"):
        check_commands(str(path), [job], os.environ, str(elsewhere))
    moved = dataclasses.replace(job, cwd=str(place))
    check_commands(str(path), [moved], os.environ, str(elsewhere))


def test_commands_are_checked_where_the_jobs_are_launched():
    hosts = (Host("a", 1), Host("b", 1))
    assert checks_commands_here(build_machine(2))
    assert checks_commands_here(build_cluster(hosts, "fork"))       # emulated on this host
    assert not checks_commands_here(build_cluster(hosts, "ssh"))    # real hosts: their own

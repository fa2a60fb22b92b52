"""The run library (testbed.run) in-process: options, checks, exit codes, a simulated run."""

from __future__ import annotations

import argparse
import json

import pytest

from testbed import run
from testbed.cli.options import policy_options
from testbed.emulation.memory import MemorySetupError
from testbed.emulation.remote import NodesError
from testbed.events import WriteFailed, read_events
from testbed.policies.matrix import UNBOUNDED


def test_options_take_what_a_namespace_has_and_the_defaults_for_the_rest():
    args = argparse.Namespace(scheduler="fcfs", mpl=3, workload="w.txt", live=True)
    options = run.Options.of(args, timeslice=0.5)
    assert (options.scheduler, options.mpl, options.timeslice) == ("fcfs", 3, 0.5)
    assert options.job_timeout is None and options.allocator == "buddy"
    assert run.Options.of(options, scheduler="gang").mpl == 3
    with pytest.raises(TypeError):
        run.Options("gang")  # type: ignore[misc]      # keyword-only


@pytest.mark.parametrize(("error", "code"), [
    (run.UsageError("bad"), run.EXIT_BAD_INPUT),
    (MemorySetupError("no cgroups"), run.EXIT_UNAVAILABLE),
    (NodesError("launcher exited"), run.EXIT_UNAVAILABLE),
    (WriteFailed("/x/events.jsonl", OSError(28, "No space left on device")),
     run.EXIT_WRITE_FAILED),
    (ValueError("a bug"), None),
])
def test_each_error_of_a_run_has_one_exit_code(error, code):
    assert run.exit_code(error) == code


def test_node_managers_that_cannot_start_are_said_so():
    assert run.describe_error(NodesError("exited (3)")) == (
        "cannot start the node managers: exited (3)")


@pytest.mark.parametrize(("changes", "message"), [
    ({"mpl": -1}, "--mpl must be a number of rows >= 1, or unbounded"),
    ({"estimates": "guessed"}, "--estimates: expected one of given, perfect"),
    ({"timeslice": 0.0}, "--timeslice must be > 0"),
    ({"balance": -1.0}, "--balance must be >= 0"),
    ({"app_max": 3}, "need 1 <= --app-max <= --abs-app-max"),
])
def test_bad_options_are_refused_naming_the_option(changes, message):
    with pytest.raises(run.UsageError, match=message):
        run.check_policy_options(run.Options(**changes), ["gang"])


def test_an_unbounded_mpl_is_for_the_simulator_only():
    options = run.Options(mpl=UNBOUNDED)
    run.check_simulation(options, ["gang"], 4)
    with pytest.raises(run.UsageError, match="--mpl unbounded is for the simulator only"):
        run.check_emulation(options, ["gang"])


def test_mpl_option_takes_a_number_or_unbounded():
    parser = argparse.ArgumentParser()
    policy_options(parser)
    assert parser.parse_args(["--mpl", "unbounded"]).mpl == UNBOUNDED
    assert parser.parse_args(["--mpl", "3"]).mpl == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["--mpl", "lots"])


def test_unknown_and_unsimulable_schedulers_are_refused():
    with pytest.raises(run.UsageError, match="unknown scheduler 'nope'"):
        run.check_policy_options(run.Options(), ["nope"])
    with pytest.raises(run.UsageError, match="ics: the simulator has no model"):
        run.check_simulation(run.Options(), ["ics"], 2)


def test_a_simulated_run_in_process_writes_its_run_directory(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 2 bsp --work 2\n0.5 1 bsp --work 1\n")
    options = run.Options(scheduler="gang", mpl=2, timeslice=0.5)
    workload = run.simulated_workload(path, options, 2)
    run_dir = run.new_run_dir(tmp_path / "r", "unused")
    assert run.simulate(workload, options, 2, run_dir) == "complete"
    finishes = [ev for ev in read_events(run_dir / "events.jsonl") if ev["event"] == "finish"]
    assert sorted(ev["job"] for ev in finishes) == ["j1", "j2"]
    assert json.loads((run_dir / "summary.json").read_text())["done"] == 2
    with pytest.raises(run.UsageError, match="exists and is not empty"):
        run.new_run_dir(run_dir, "again")


def test_perfect_estimates_are_each_jobs_work(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 1 estimate=9 bsp --work 2\n")
    given = run.simulated_workload(path, run.Options(), 1)
    perfect = run.simulated_workload(path, run.Options(estimates="perfect"), 1)
    assert given.jobs[0].estimate == 9 and perfect.jobs[0].estimate == 2


def test_default_run_directories_started_in_one_second_are_each_new(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(run.time, "strftime", lambda _fmt: "20261125-120000")
    made = [run.new_run_dir(None, "exec-gang") for _ in range(3)]
    assert [p.name for p in made] == ["20261125-120000-exec-gang", "20261125-120000-exec-gang-2",
                                      "20261125-120000-exec-gang-3"]
    assert all(p.is_dir() and not any(p.iterdir()) for p in made)


def test_options_from_a_mapping_take_plain_values_and_the_command_lines_text():
    options = run.Options.from_mapping({"mpl": "unbounded", "timeslice": 1, "node_mem": "1M",
                                        "owners": "0.5:2", "uncompress": True, "pes": 4})
    assert (options.mpl, options.timeslice, options.node_mem) == (UNBOUNDED, 1.0, 2**20)
    assert (options.owners, options.uncompress, options.pes) == ((0.5, 2.0), True, 4)
    assert run.Options.from_mapping({}) == run.Options()


@pytest.mark.parametrize(("settings", "message"), [
    ({"mpl": "lots"}, "mpl: expected a number of rows or 'unbounded', got 'lots'"),
    ({"uncompress": "yes"}, "uncompress: expected true or false"),
    ({"pes": 1.5}, "pes: expected a whole number"),
    ({"live": True}, "live: not an option of a run"),
])
def test_options_from_a_mapping_refuse_a_bad_value_naming_its_field(settings, message):
    with pytest.raises(run.UsageError, match=message):
        run.Options.from_mapping(settings)


def test_the_command_line_defaults_are_the_options_defaults():
    parser = argparse.ArgumentParser()
    policy_options(parser)
    parsed = run.Options.of(parser.parse_args([]))
    assert parsed == run.Options()


def test_prepare_then_execute_makes_a_simulated_run_and_says_its_exit_code(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("0 2 bsp --work 2\n0.5 1 bsp --work 1\n")
    options = run.Options(executor="simulation", scheduler="fcfs", pes=2)
    prepared = run.prepare(options, path)
    assert (prepared.pes, prepared.machine, prepared.label) == (2, None, "sim-fcfs")
    result = run.execute(prepared, tmp_path / "r")
    assert (result.status, result.exit_code, result.summary["done"]) == ("complete", 0, 2)
    with pytest.raises(run.UsageError, match="exists and is not empty"):
        run.execute(prepared, tmp_path / "r")
    with pytest.raises(run.UsageError, match="field 'command': the simulator needs"):
        run.prepare(options, run.Workload("<code>", [run.JobSpec("j1", 1, 0.0, 1, ("x",))]))


@pytest.mark.parametrize(("status", "code"), [("complete", 0), ("stopped", 0),
                                              ("interrupted", 130), ("error", 1)])
def test_a_runs_status_gives_its_exit_code(status, code, tmp_path):
    assert run.Result(status, tmp_path, None).exit_code == code

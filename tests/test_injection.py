"""Injected slowdowns: off by default, refused when malformed, recorded, and really slower.

The real-process tests check lower bounds only (a busy wait of D makes every switch, or every
round trip, last at least D), which hold however loaded the machine is.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import events, run_testbed

from benchmarks.overheads import shim_cost
from testbed.emulation import injection
from testbed.emulation.mpi_info import detect_mpi
from testbed.emulation.shim import library_path


def test_no_variable_means_no_delay():
    assert injection.describe({}) is None
    assert injection.switch_delay_s({}) == 0.0
    assert injection.describe({injection.SWITCH_ENV: "", injection.SHIM_ENV: " "}) is None


def test_delays_are_read_in_their_units():
    env = {injection.SWITCH_ENV: "250", injection.SHIM_ENV: "40.5"}
    assert injection.switch_delay_s(env) == pytest.approx(250e-6)
    assert injection.describe(env) == {"switch_us": 250.0, "shim_ns": 40.5}
    assert injection.describe({injection.SHIM_ENV: "0"}) is None


@pytest.mark.parametrize("text", ["abc", "-1", "nan", "inf", "1e400"])
def test_a_malformed_delay_names_the_variable(text):
    with pytest.raises(ValueError, match=f"{injection.SWITCH_ENV}={text!r}"):
        injection.switch_delay_s({injection.SWITCH_ENV: text})
    with pytest.raises(ValueError, match="nanoseconds"):
        injection.describe({injection.SHIM_ENV: text})


@pytest.mark.realtime
def test_run_refuses_a_malformed_delay_before_starting(tmp_path, workload, monkeypatch):
    monkeypatch.setenv(injection.SWITCH_ENV, "soon")
    done = run_testbed("run", str(workload("0 1 bsp --work 0.1\n")), "--out",
                       str(tmp_path / "run"), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"{injection.SWITCH_ENV}='soon'" in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.realtime
def test_switch_delay_makes_every_switch_at_least_that_long_and_is_recorded(
        tmp_path, workload, monkeypatch):
    monkeypatch.setenv(injection.SWITCH_ENV, "20000")
    pes = len(os.sched_getaffinity(0))
    job = f"0 {pes} bsp --work 0.6 --pattern none\n"
    run = tmp_path / "run"
    done = run_testbed("run", str(workload(job * 2)), "--scheduler", "gang", "--mpl", "2",
                       "--timeslice", "0.1", "--out", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    switches = [e for e in events(run) if e["event"] == "switch" and (e["stopped"]
                                                                       or e["continued"])]
    assert len(switches) >= 3
    assert all(e["latency_us"] >= 20000 for e in switches)
    config = json.loads((run / "config.json").read_text())
    assert config["injected_delays"] == {"switch_us": 20000.0}


@pytest.mark.realtime
def test_shim_delay_makes_every_round_trip_at_least_two_delays():
    # Rank 0 makes two wrapped calls (send, receive) per round trip, each delayed 200 us.
    preload = {"LD_PRELOAD": str(library_path(detect_mpi()))}
    slowed = shim_cost._run("pingpong", 50, {**preload, injection.SHIM_ENV: "200000"})
    assert slowed["round_trip_us"] >= 400

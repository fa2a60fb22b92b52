"""T3E psched's adaptive slice (Blakeborough and Welcome 1999): slice = T + switch time x V."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import events, run_id, run_processes, run_testbed

from testbed.policies import PolicyConfig, make_policy


def test_the_slice_follows_the_last_switch_time():
    policy = make_policy("gang", PolicyConfig(2, timeslice=0.2, variation=20))
    policy.observe_switch(0.05)
    assert policy.timeslice == pytest.approx(0.2 + 0.05 * 20)
    policy.observe_switch(0.0001)                       # no swapping: back near T
    assert policy.timeslice == pytest.approx(0.202)
    fixed = make_policy("gang", PolicyConfig(2, timeslice=0.2))
    fixed.observe_switch(5.0)
    assert fixed.timeslice == 0.2


@pytest.mark.realtime
def test_simulated_switches_come_a_grown_slice_apart(tmp_path):
    work = tmp_path / "w.txt"
    work.write_text("0 2 bsp --work 10\n0 2 bsp --work 10\n")
    out = tmp_path / "sim"
    done = run_testbed("simulate", str(work), "--scheduler", "gang", "--pes", "2",
                       "--switch-cost", "0.1", "--variation", "10", "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    switches = [e for e in events(out) if e["event"] == "switch" and e["stopped"]]
    assert switches and all(e["slice_s"] == pytest.approx(0.2 + 0.1 * 10) for e in switches)
    gaps = [b["t"] - a["t"] for a, b in zip(switches, switches[1:], strict=False)]
    assert gaps and all(g == pytest.approx(1.2) for g in gaps)


@pytest.mark.realtime
@pytest.mark.skipif(os.geteuid() != 0, reason="--node-mem and --swap need root")
def test_switches_that_swap_lengthen_the_next_slice(tmp_path):
    work = tmp_path / "w.txt"
    work.write_text("0 2 bsp --work 2 --mem-mb 120\n"       # j1 and j2 do not fit together:
                    "0 2 bsp --work 3 --mem-mb 120\n")      # switching between them swaps
    out = tmp_path / "run"
    done = run_testbed("run", str(work), "--scheduler", "gang", "--pes", "2", "--timeslice",
                       "0.2", "--variation", "2", "--node-mem", "350M", "--swap", "1G",
                       "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    evs = events(out)
    swaps = [e for e in evs if e["event"] == "switch" and e["stopped"] and e["continued"]]
    assert swaps
    for e in swaps:                                     # slice = T + switch time x V
        assert e["slice_s"] == pytest.approx(0.2 + e["latency_us"] / 1e6 * 2, rel=1e-3)
    paged = [e for e in evs if e["event"] == "paging" and e["direction"] == "in"]
    assert any(e["swap_kib_before"] > 10 * 1024 for e in paged)    # memory was really short
    longest = max(paged, key=lambda e: e["seconds"])
    assert max(e["slice_s"] for e in swaps) >= 0.2 + 2 * longest["seconds"]
    assert run_processes(run_id(out)) == []
    assert "testbed" not in Path("/proc/swaps").read_text()

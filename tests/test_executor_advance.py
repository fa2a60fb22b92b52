"""The emulation executor's wait: a job whose launcher ended before the wait is returned
without waiting (a node manager stood in for, as in test_link: a pipe plays the pidfd)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.emulation.executor import EmulationExecutor
from testbed.emulation.link import LocalNode
from testbed.emulation.mpi_info import MpiInfo
from testbed.events import EventLog
from testbed.machine import build_machine
from testbed.policies import PolicyConfig, make_policy
from tests.test_link import _launch, _Manager


class _QuietManager(_Manager):
    """The stand-in node manager, with nothing to discover or sample."""

    def discover(self) -> list[object]:
        return []

    def sample(self) -> None:
        return None

    def awaiting_pids(self) -> bool:
        return True


def test_an_end_taken_in_before_the_wait_is_returned_without_waiting(tmp_path: Path) -> None:
    machine = build_machine(1)
    policy = make_policy("fcfs", PolicyConfig(pes=1))
    mpi = MpiInfo("MPICH", "", "", "3.1", "", "mpiexec", "hydra")
    executor = EmulationExecutor(policy, machine, mpi, tmp_path, "advance-test")
    manager = _QuietManager()
    link = LocalNode(manager)       # type: ignore[arg-type]
    executor.nms = [link]
    executor.log = EventLog(tmp_path / "events.jsonl")
    link.handle(_launch("j1"))
    executor.job_nodes["j1"] = {0}
    manager.exit("j1")              # the launcher ends while the executor is busy elsewhere

    def no_wait(timeout: float) -> None:
        pytest.fail(f"waited {timeout} s with a job's end in hand")

    executor._wait = no_wait        # type: ignore[method-assign]
    assert [end.job for end in executor.advance(executor.now() + 60.0)] == ["j1"]
    link.close()
    executor.log.close()

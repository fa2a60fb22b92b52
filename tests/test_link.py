"""The node-manager link of a node in the machine manager's process, with a node manager stood
in for (a pipe plays the launcher's pidfd: readable once the launcher has exited)."""

from __future__ import annotations

import os
import selectors
import time
from types import SimpleNamespace

from testbed.emulation.link import LocalNode
from testbed.emulation.messages import LaunchFailure, LaunchJob, Termination


class _Manager:
    """A node manager that launches by opening a pipe (its read end the pidfd) and reaps by
    closing it."""

    def __init__(self) -> None:
        self.node = SimpleNamespace(index=0, pes=(0, 1))
        self.events = None
        self.pipes: dict[str, tuple[int, int]] = {}
        self.handled: list[object] = []

    def handle(self, msg: object) -> list[object]:
        self.handled.append(msg)
        if isinstance(msg, LaunchJob):
            if msg.job == "bad":
                return [LaunchFailure(msg.job, "no such program")]
            self.pipes[msg.job] = os.pipe()
        return [("reply to", type(msg).__name__)]

    def launcher_fd(self, job: str) -> int | None:
        pipe = self.pipes.get(job)
        return pipe[0] if pipe else None

    def exit(self, job: str) -> None:
        os.write(self.pipes[job][1], b"x")

    def reap(self, job: str) -> Termination:
        for fd in self.pipes.pop(job):
            os.close(fd)
        return Termination(job, "done", 0, "")

    def close(self) -> None:
        for job in list(self.pipes):
            self.reap(job)


def _launch(job: str) -> LaunchJob:
    return LaunchJob(job, 0, (0, 1), ("true",), True, "/dev/null", "/dev/null", (), None)


def test_a_launchers_end_makes_the_link_readable_and_is_taken_once():
    manager = _Manager()
    link = LocalNode(manager)       # type: ignore[arg-type]
    assert link.handle(_launch("j1")) == [("reply to", "LaunchJob")]
    assert link.launched == {"j1"} and link.lost is None
    with selectors.DefaultSelector() as outer:
        outer.register(link, selectors.EVENT_READ)
        assert outer.select(0) == []
        manager.exit("j1")
        assert len(outer.select(1.0)) == 1
        link.pump()
        assert [t.job for t in link.take_ended()] == ["j1"] and link.take_ended() == []
        assert outer.select(0) == [] and link.launched == set()
    link.close()


def test_a_failed_launch_is_not_watched():
    link = LocalNode(_Manager())    # type: ignore[arg-type]
    assert isinstance(link.handle(_launch("bad"))[0], LaunchFailure)
    assert link.launched == set()
    link.close()


def test_await_end_reaps_a_killed_launcher_or_gives_up_at_the_deadline():
    manager = _Manager()
    link = LocalNode(manager)       # type: ignore[arg-type]
    link.handle(_launch("j1"))
    manager.exit("j1")
    assert link.await_end("j1", time.monotonic() + 1.0) == Termination("j1", "done", 0, "")
    assert link.await_end("j1", time.monotonic()) is None       # not launched here any more
    link.handle(_launch("j2"))
    started = time.monotonic()
    term = link.await_end("j2", started + 0.05)                 # did not exit: reaped anyway
    assert term is not None and term.job == "j2" and time.monotonic() - started < 5
    link.close()

"""T3E psched (Blakeborough and Welcome 1999): gang scheduling under the GRM's per-PE
application limits, with prime jobs.

* **GRM limits.** At most ``abs_app_max`` applications share a PE (the matrix has that many
  rows) and at most ``app_max`` of them are not prime.  NERSC ran app_max=1 and abs_app_max=2:
  one normal application per PE, and a prime one may join it.
* **Launch order.** Prime applications come first, then the others, each in arrival order
  (FIFO).  The first one that does not fit blocks those behind it, except that a later one is
  still launched if it fits on PEs no application occupies (the GRM launches "in FIFO order
  unless an application lower on the list will fit into unoccupied PEs").  A job goes where it
  competes least: of the placements in every row that keep to the limits, the one sharing the
  fewest PEs with prime jobs, then with any job, then the earlier row and the allocator's
  order.
* **No competition from normal work.** Every slice runs prime jobs first (those that ran least
  recently first, while their PEs are free) and only then the current row's other jobs and
  alternates on the PEs left.  Prime jobs that share a PE take turns slice by slice; a normal
  job that shares a PE with a prime job is stopped
  while the prime job runs (prime jobs "preempt non-prime work").
* The adaptive slice (``variation``) and the load balancer (``balance_s``) are gang's; a
  migration, by the balancer or by hand, must keep to the limits too.

Both rules can starve, as they did on the T3E: nothing here caps prime work (NERSC capped it
in NQS, outside psched), so a stream of prime jobs keeps the normal jobs under them stopped,
and small jobs that keep fitting on unoccupied PEs can hold back a large one at the head of
the queue (the paper's "job size entropy", which NERSC countered by priming large jobs).
"""

from __future__ import annotations

import dataclasses
import functools
import operator

from testbed.policies.base import Action, JobRequest, Launch
from testbed.policies.config import PolicyConfig
from testbed.policies.gang import Gang
from testbed.policies.matrix import Placement, mask_of


class Psched(Gang):
    """Gang scheduling with GRM application limits per PE and prime jobs (T3E psched)."""

    name = "psched"

    def __init__(self, config: PolicyConfig) -> None:
        if config.memory is not None:
            raise ValueError("the psched scheduler does not support memory admission")
        if not 1 <= config.app_max <= config.abs_app_max:
            raise ValueError(f"need 1 <= app_max <= abs_app_max, got app_max={config.app_max}, "
                             f"abs_app_max={config.abs_app_max}")
        super().__init__(dataclasses.replace(config, mpl=config.abs_app_max))
        self.prime: set[str] = set()
        self.ticks = 0
        self.last_ran: dict[str, int] = {}

    def _drains(self, head: JobRequest, now: float) -> bool:
        """Whether the blocked job at the head of the queue holds back every job behind it
        (never in the single region: the paper's psched launches later jobs that fit)."""
        return False

    def arrive(self, job: JobRequest, now: float) -> list[Action]:
        """Queue ``job`` (noting whether it is prime) and launch what the GRM allows."""
        if job.prime:
            self.prime.add(job.id)
        return super().arrive(job, now)

    def finish(self, job: str, now: float) -> list[Action]:
        """Free ``job``'s cells and launch what the GRM allows."""
        self.prime.discard(job)
        self.last_ran.pop(job, None)
        return super().finish(job, now)

    def cancel(self, job: str, now: float) -> list[Action] | None:
        """Take queued ``job`` out of the GRM queue; None if it is not queued."""
        actions = super().cancel(job, now)
        if actions is not None:
            self.prime.discard(job)
        return actions

    def running(self) -> frozenset[str]:
        """Prime jobs first (those that ran least recently first, then the current row's),
        then the current row's other jobs and alternates (those running now first), each while
        its PEs are free; held jobs take no PEs."""
        if self.slot is None:
            return frozenset()
        placed = self.matrix.placed
        here = [job for job in self.matrix.jobs_in(self.slot) if job not in self.held]
        running_now = [job for job in placed if job in self.current]
        primes = sorted((job for job in placed if job in self.prime),
                        key=lambda job: (self.last_ran.get(job, -1), job not in here))
        order = [*primes, *here, *running_now, *placed]
        busy = 0
        chosen: set[str] = set()
        for job in order:
            mask = self.matrix.masks[job]
            if job not in chosen and job not in self.held and not busy & mask:
                chosen.add(job)
                busy |= mask
        return frozenset(chosen)

    def tick(self, now: float) -> list[Action]:
        """Switch rows as gang does; remember which slice each job last ran in."""
        actions = super().tick(now)
        self.ticks += 1
        for job in self.current:
            self.last_ran[job] = self.ticks
        return actions

    def _admit(self, now: float) -> list[Action]:
        launches: list[Launch] = []
        occupied = functools.reduce(operator.or_, self.matrix.busy, 0)
        blocked = drain = False
        too_big = self.matrix.pes + 1           # the smallest size that found no free PEs
        # a stable sort: prime jobs first, each kind in arrival order
        for job in sorted(self.queue, key=lambda request: not request.prime):
            if drain:
                break
            if blocked:
                if job.size >= too_big:
                    continue
                where = self._unoccupied(job, occupied)
                if where is None:
                    too_big = job.size
                    continue
            else:
                where = self._place(job, occupied)
                if where is None:
                    blocked = True
                    drain = self._drains(job, now)
                    continue
            self.queue.remove(job)
            self.matrix.assign(job.id, *where)
            occupied |= self.matrix.masks[job.id]
            launches.append(Launch(job.id, *where))
        return self._launched(launches)

    def _place(self, job: JobRequest, occupied: int) -> tuple[int, Placement] | None:
        """Where the GRM launches the first job in line: of the placements within the limits,
        the one sharing the fewest PEs with prime jobs, then with any job, then the earliest
        row and the allocator's order."""
        primes = functools.reduce(operator.or_, (self.matrix.masks[j] for j in self.prime
                                                 if j in self.matrix.placed), 0)
        full = None if job.prime else self._full_pes(job.id)
        best: tuple[tuple[int, int], tuple[int, Placement]] | None = None
        for slot, pes in self.matrix.candidates(job.size):
            mask = mask_of(pes)
            if full is not None and mask & full:
                continue
            cost = ((mask & primes).bit_count(), (mask & occupied).bit_count())
            if best is None or cost < best[0]:
                best = (cost, (slot, pes))
                if cost == (0, 0):
                    break
        return None if best is None else best[1]

    def _unoccupied(self, job: JobRequest, occupied: int) -> tuple[int, Placement] | None:
        """The allocator's placement for ``job`` on PEs no application occupies (free in every
        row, so row 0), or None."""
        free = [pe for pe in range(self.matrix.pes) if not occupied >> pe & 1]
        if len(free) < job.size:
            return None
        pes = next(self.matrix.fit(occupied, free, self.matrix.pes, job.size), None)
        return None if pes is None else (0, pes)

    def _full_pes(self, job: str) -> int:
        """The PEs that already hold ``app_max`` normal applications besides ``job``, as a
        mask (0 when ``app_max`` equals ``abs_app_max``: the rows are the limit then)."""
        if self.config.app_max >= self.matrix.mpl:
            return 0
        at_least = [0] * (self.config.app_max + 1)     # at_least[i]: PEs with >= i normal jobs
        for slot in range(self.matrix.mpl):
            row = functools.reduce(operator.or_, (self.matrix.masks[j]
                                                  for j in self.matrix.slots[slot]
                                                  if j != job and j not in self.prime), 0)
            for i in range(self.config.app_max, 0, -1):
                at_least[i] |= at_least[i - 1] & row if i > 1 else row
        return at_least[self.config.app_max]

    def _may_move(self, job: str, pes: Placement) -> bool:
        """A migration keeps to the limits: a normal job only to PEs with room for it."""
        return job in self.prime or not mask_of(pes) & self._full_pes(job)


BATCH_SHARE = 512 / 644     # NERSC's Batch region before 2.0.4: PEs 0-511 of the 644-PE APP region
MIXED_MAX_SHARE = 64 / 644  # the largest application the Mixed region took


def batch_pes(pes: int) -> int:
    """The PEs of the Batch region of a machine of ``pes`` PEs (the first ones)."""
    return max(1, round(pes * BATCH_SHARE))


class PschedSplit(Psched):
    """T3E psched as NERSC ran it before UNICOS/mk 2.0.4 (Blakeborough and Welcome, Table 5):
    gang scheduling off (one application a PE), the load balancer the one psched feature in
    use, and the PEs split into two psched domains, Batch (the first 512/644 of them) and Mixed
    (the rest).  Every application runs wholly inside one domain: one of at most 64/644 of the
    machine in Mixed when it fits there (NERSC set close_max so that small jobs would rather
    launch there), else in Batch; the balancer moves an application only within its domain
    (psched "could not migrate applications between domains").  Launch order is psched's
    (FIFO, a later job launched when it fits on unoccupied PEs), with NERSC's de-fragmenting
    when ``defrag_s`` is set: small jobs launched past a large one starved it ("job size
    entropy"), and a script NERSC ran by hand "once or twice a day" stopped the small queues
    so that the large job could start.  Here, once the job at the head of the queue has
    waited ``defrag_s`` seconds, nothing behind it launches until it does; the script also
    checkpointed small jobs to make room at once, where this waits for them to end.  A job
    larger than the Batch region is refused (it fails at arrival)."""

    name = "psched-split"
    gang = False        # whether the GRM limits are the config's (gang on) or one a PE

    def __init__(self, config: PolicyConfig) -> None:
        limits = {} if self.gang else {"app_max": 1, "abs_app_max": 1}
        super().__init__(dataclasses.replace(config, **limits))
        batch = batch_pes(config.pes)
        self.domains = {"batch": (1 << batch) - 1,
                        "mixed": ((1 << config.pes) - 1) & ~((1 << batch) - 1)}
        self.batch_size = batch
        self.mixed_max = max(1, round(config.pes * MIXED_MAX_SHARE))

    def _drains(self, head: JobRequest, now: float) -> bool:
        """Whether ``head``, blocked at the head of the queue, has waited long enough for
        the de-fragmenting to hold back every job behind it."""
        return self.config.defrag_s > 0 and now - head.arrival >= self.config.defrag_s

    def refuse(self, request: JobRequest) -> str | None:
        """A job larger than the Batch region can never run."""
        if request.size > self.batch_size:
            return (f"needs {request.size} PEs, more than the Batch region's "
                    f"{self.batch_size}")
        return None

    def _preferred(self, job: JobRequest) -> list[int]:
        """The domains ``job`` may go to, as masks, in the order the GRM tries them."""
        batch, mixed = self.domains["batch"], self.domains["mixed"]
        return [mixed, batch] if job.size <= self.mixed_max and mixed else [batch]

    def _place(self, job: JobRequest, occupied: int) -> tuple[int, Placement] | None:
        """The allocator's first placement inside the first domain that has room."""
        for domain in self._preferred(job):
            for slot, pes in self.matrix.candidates(job.size):
                if not mask_of(pes) & ~domain:
                    return slot, pes
        return None

    def _unoccupied(self, job: JobRequest, occupied: int) -> tuple[int, Placement] | None:
        """The allocator's placement on unoccupied PEs inside the first domain with room."""
        for domain in self._preferred(job):
            free = [pe for pe in range(self.matrix.pes)
                    if domain >> pe & 1 and not occupied >> pe & 1]
            if len(free) >= job.size:
                pes = next(self.matrix.fit(occupied, free, self.matrix.pes, job.size), None)
                if pes is not None:
                    return 0, pes
        return None

    def _may_move(self, job: str, pes: Placement) -> bool:
        """A migration stays inside the domain the application runs in."""
        now = self.matrix.masks[job]
        return any(not now & ~domain and not mask_of(pes) & ~domain
                   for domain in self.domains.values())



class PschedSplitGang(PschedSplit):
    """T3E psched as NERSC ran it in the weeks after the UNICOS/mk 2.0.4 upgrade, before the
    machine became one region (Blakeborough and Welcome, Table 6's "Since 2.0.4", 83.4 %):
    2.0.4's psched, stable enough for gang scheduling, on the unchanged split Batch and Mixed
    domains.  As ``psched-split`` (domains, launch order, balancer within a domain) but with
    the config's GRM limits (``app_max``, ``abs_app_max``: the applications gang-scheduled on
    a PE) instead of one application a PE."""

    name = "psched-split-gang"
    gang = True

/* Arrival counts: how the ranks of a communicator on one host meet at a barrier.
 *
 * MPICH completes a nonblocking collective only through its general schedule engine, which on
 * shared memory costs several times its blocking form, and a spin-block wait needs the
 * nonblocking form to be able to stop waiting.  A barrier needs no MPI at all when its ranks
 * share a host: each adds 1 to its arrival count for the communicator and rings the others,
 * then waits (spinning, then blocking on its doorbell) until every other rank's count has
 * reached its own.  That is cheaper than MPICH's own blocking barrier (docs/overheads.md).
 *
 * The other collectives keep the nonblocking form.  Meeting on the counts first and then
 * making the blocking call (which finds everyone there) was tried and is faster alone on the
 * machine, but with a second job sharing the CPUs an mpi4py loop of small allreduces or
 * all-to-alls became ten times slower than with the nonblocking form: inside the blocking call
 * a rank cannot block, so once its peer is descheduled it spins out its time slice and holds
 * back the other job's rank on its CPU (docs/overheads.md).
 *
 * The counts live in the ranks' records, one per slot.  At the first barrier on an
 * intracommunicator its ranks agree, by allreduces waited for as any collective of the shim,
 * whether all of them can meet (every rank has the others' records) and on a slot free on all
 * of them, and align their counts on it to the highest, so that counts only ever grow: a rank
 * still waiting on a freed communicator's last barrier reads a count at least as high as it
 * waits for.  A slot is freed with its communicator.  Threads agreeing on slots for two
 * communicators at once may pick the same slot; a rank that finds its pick taken says so in
 * the second allreduce and all of them agree again.  When some rank cannot meet, or no slot is
 * free on every rank (more than TB_ARRIVAL_SLOTS communicators in use at once), the barrier
 * keeps the nonblocking form.  Every rank of a communicator takes the same form at the same
 * call, because they decide it together once.
 *
 * The last rank to arrive, the one that finds every other count reached, rings the others
 * (two arriving at once may both ring; seq_cst ordering keeps at least one ringing).
 *
 * MPI's own barrier drives the progress engine while it waits and receives its peers' barrier
 * messages, which come after whatever they sent before; programs count on both.  The meeting
 * makes that progress only where something can be pending, since a pass of MPICH's engine
 * costs more than the whole meeting:
 * - while it waits, unless every peer that has not arrived is already inside this barrier (its
 *   in_meetings, with no other call beside: in_calls beyond in_meetings).  A peer elsewhere
 *   may need this rank's progress to get here: a passive-target lock on its window, a send
 *   it must receive, or a request it polls with MPI_Test between computations, outside any
 *   call (benchmarks/clients/progress_patterns.py, polled_across_barrier, hung when only
 *   peers inside another call counted).  A peer that has entered the barrier needs nothing
 *   more, and in a loop of barriers the peers are almost always there;
 * - when it leaves, only when some peer made any other wrapped call since that peer's last
 *   meeting but blocking collectives that completed: a peer that made none sent nothing this
 *   rank has not already drained.  Every message of a collective is one its receiver's own
 *   call of that collective waits for, and that call completed before the receiver arrived
 *   here (a rank calls a communicator's collectives in order), so a completed collective
 *   leaves nothing pending for anyone's progress.  A rank says whether it made any other
 *   call in the low bit of its arrival word (below), which its peers read anyway; where a
 *   peer's word is already that of a later meeting, the rank drains.  (Two copies of
 *   IMB-MPI1 under ics, whose collectives alternate with barriers, spent about a second of
 *   CPU a job in drains after each barrier while every other call counted.)
 * The quiet bit and the first test's skipping of the peers' activity keep a barrier's lines
 * to its own arrival word and the peers': every other line a barrier reads or writes that a
 * peer also touches moves between the cores at each barrier, at about 0.1 us each here.
 *
 * An arrival word is (count << 1) | quiet, the count of the rank's arrivals on the slot and
 * whether it made no other wrapped call since it left its previous meeting.  Only the rank
 * writes its own words.
 * A pass is a probe on MPI_COMM_WORLD: it matches nothing, so the program never sees it, and
 * MPICH's probe runs the whole progress engine (every communicator, window and pending
 * request) when it finds no message.  A probe on a communicator of one rank (MPI_COMM_SELF or
 * a duplicate) would not: MPICH answers it from its self-messaging queue without any progress,
 * which left a peer's passive-target lock ungranted for ever.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "shim_record.h"
#include "doorbell.h"
#include "arrival.h"

#define PROGRESS_EVERY 8
#define PROGRESS_AFTER_NS 20000
#define DRAIN_PASSES 8

static uint64_t slots_used;
/* calls_done when this rank last left a meeting (UINT64_MAX: never) */
static uint64_t left_at = UINT64_MAX;
/* Blocking collectives this rank completed, in all and when it last left a meeting */
static uint64_t collectives_done, collectives_at_left;
/* This rank's own arrival words as it last wrote them: only it writes them, and reading its
 * record's copy, which its peers keep reading, would fetch that line before writing it. */
static uint32_t own_words[TB_ARRIVAL_SLOTS];
static int slot_key = MPI_KEYVAL_INVALID;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int free_slot(MPI_Comm comm, int key, void *value, void *extra) {
    (void)comm, (void)key, (void)extra;
    int slot = (int)(intptr_t)value - 1;
    if (slot >= 0) __atomic_and_fetch(&slots_used, ~(UINT64_C(1) << slot), __ATOMIC_SEQ_CST);
    return MPI_SUCCESS;
}

static void set_up(void) {
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_slot, &slot_key, NULL) !=
        MPI_SUCCESS)
        slot_key = MPI_KEYVAL_INVALID;
}

/* An allreduce of ``n`` items on ``comm``, waited for by ``wait``. */
static int allreduce(const void *in, void *out, int n, MPI_Datatype type, MPI_Op op,
                     MPI_Comm comm, tb_wait wait) {
    MPI_Request r;
    int rc = PMPI_Iallreduce(in, out, n, type, op, comm, &r);
    return rc != MPI_SUCCESS ? rc : wait(&r, comm);
}

/* Agree with the other ranks of ``comm`` whether they can all meet (``here``: this one can)
 * and on a slot free on all of them; take it and align this rank's count on it with theirs.
 * *slot: the slot, or -1 when they cannot meet. */
static int agree_slot(MPI_Comm comm, int here, struct tb_record *own, tb_wait wait,
                      int *slot) {
    for (;;) {
        uint64_t mine[2] = {__atomic_load_n(&slots_used, __ATOMIC_SEQ_CST), !here}, all[2];
        int rc = allreduce(mine, all, 2, MPI_UINT64_T, MPI_BOR, comm, wait);
        if (rc != MPI_SUCCESS) return rc;
        *slot = -1;
        for (int s = 0; s < TB_ARRIVAL_SLOTS && *slot < 0 && !all[1]; s++)
            if (!(all[0] & (UINT64_C(1) << s))) *slot = s;
        if (*slot < 0) return MPI_SUCCESS;
        uint64_t bit = UINT64_C(1) << *slot;
        uint32_t taken = (__atomic_fetch_or(&slots_used, bit, __ATOMIC_SEQ_CST) & bit) != 0;
        uint32_t state[2] = {taken, __atomic_load_n(&own->arrivals[*slot], __ATOMIC_SEQ_CST)};
        uint32_t agreed[2];
        rc = allreduce(state, agreed, 2, MPI_UINT32_T, MPI_MAX, comm, wait);
        if (rc == MPI_SUCCESS && !agreed[0]) {
            own_words[*slot] = agreed[1];
            __atomic_store_n(&own->arrivals[*slot], agreed[1], __ATOMIC_SEQ_CST);
            return MPI_SUCCESS;
        }
        if (!taken) __atomic_and_fetch(&slots_used, ~bit, __ATOMIC_SEQ_CST);
        if (rc != MPI_SUCCESS) return rc;
    }
}

/* The arrival slot of ``comm`` in *slot (-1: its barriers keep the nonblocking form), decided
 * at the first call on it (an intercommunicator, or one with processes beyond the job's world,
 * never meets) and kept on it as an attribute. */
static int slot_of(MPI_Comm comm, struct tb_record *own, tb_wait wait, int *slot) {
    pthread_once(&once, set_up);
    void *value;
    int found = 0, inter = 1;
    if (slot_key == MPI_KEYVAL_INVALID) return MPI_ERR_INTERN;
    int rc = PMPI_Comm_get_attr(comm, slot_key, &value, &found);
    if (rc != MPI_SUCCESS || found) {
        *slot = found ? (int)(intptr_t)value - 1 : -1;
        return rc;
    }
    rc = PMPI_Comm_test_inter(comm, &inter);
    if (rc != MPI_SUCCESS) return rc;
    *slot = -1;
    /* Ranks beyond the job's world (spawned or connected processes) have no record here and
     * never take part in an agreement: the job's ranks see that alike and need none. */
    if (!inter && !tb_beyond_world(comm)) {
        const int *world;
        int size, me;
        rc = agree_slot(comm, tb_members_here(comm, &world, &size, &me), own, wait, slot);
        if (rc != MPI_SUCCESS) return rc;
    }
    /* MPI_COMM_WORLD's attributes are deleted at MPI_Finalize, which frees its slot too. */
    rc = PMPI_Comm_set_attr(comm, slot_key, (void *)(intptr_t)(*slot + 1));
    if (rc != MPI_SUCCESS && *slot >= 0) free_slot(comm, slot_key, (void *)(intptr_t)(*slot + 1),
                                                   NULL);
    return rc;
}

/* The record of the ``i``-th rank of the meeting. */
static struct tb_record *member(const struct tb_arrival *a, int i) {
    return tb_peer(a->world != NULL ? a->world[i] : i);
}

/* How far arrival word ``word`` is ahead of word ``of`` in counts (negative: behind). */
static int32_t ahead(uint32_t word, uint32_t of) {
    return (int32_t)((word & ~UINT32_C(1)) - (of & ~UINT32_C(1))) / 2;
}

/* Whether every other rank of the meeting has reached the count of arrival word ``word``. */
static int all_reached(const struct tb_arrival *a, uint32_t word) {
    for (int i = 0; i < a->size; i++) {
        if (i == a->me) continue;
        struct tb_record *p = member(a, i);
        if (ahead(__atomic_load_n(&p->arrivals[a->slot], __ATOMIC_SEQ_CST), word) < 0)
            return 0;
    }
    return 1;
}

int tb_arrive(struct tb_arrival *a, struct tb_record *own, MPI_Comm comm, tb_wait wait,
              int *meet) {
    int slot = -1;
    *meet = 0;
    if (!tb_attached()) return MPI_SUCCESS;
    int rc = slot_of(comm, own, wait, &slot);
    /* A slot was agreed only if every rank had the others' records, which stay mapped. */
    if (rc != MPI_SUCCESS || slot < 0 || !tb_members_here(comm, &a->world, &a->size, &a->me))
        return rc;
    *a = (struct tb_arrival){own, comm, a->world, a->size, a->me, slot, 0, 0, 0};
    __atomic_add_fetch(&own->meetings, 1, __ATOMIC_RELAXED);
    /* The calls done then include the barrier that left it; none other but completed
     * blocking collectives: quiet. */
    uint64_t done = __atomic_load_n(&own->calls_done, __ATOMIC_RELAXED);
    uint64_t collectives = __atomic_load_n(&collectives_done, __ATOMIC_RELAXED);
    uint32_t quiet = left_at != UINT64_MAX &&
                     done == left_at + 1 + (collectives - collectives_at_left);
    a->count = ((own_words[slot] & ~UINT32_C(1)) + 2) | quiet;
    own_words[slot] = a->count;
    __atomic_store_n(&own->arrivals[slot], a->count, __ATOMIC_SEQ_CST);
    if (all_reached(a, a->count)) tb_ring_ranks(a->world, a->size);
    *meet = 1;
    return MPI_SUCCESS;
}

void tb_collective_completed(void) {
    __atomic_add_fetch(&collectives_done, 1, __ATOMIC_RELAXED);
}

/* One pass of MPI's progress engine (see the top of this file). */
static int progress(void) {
    int flag;
    return PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

/* Whether every other rank of the meeting arrived at it without any other wrapped call since
 * its last meeting (see the top of this file). */
static int peers_quiet(const struct tb_arrival *a) {
    for (int i = 0; i < a->size; i++) {
        if (i == a->me) continue;
        uint32_t word = __atomic_load_n(&member(a, i)->arrivals[a->slot], __ATOMIC_SEQ_CST);
        if (!(word & 1) || ahead(word, a->count) != 0) return 0;
    }
    return 1;
}

/* Whether a rank of the meeting that has not arrived is anywhere but inside a barrier (see
 * the top of this file). */
static int peer_elsewhere(const struct tb_arrival *a) {
    for (int i = 0; i < a->size; i++) {
        if (i == a->me) continue;
        struct tb_record *p = member(a, i);
        if (ahead(__atomic_load_n(&p->arrivals[a->slot], __ATOMIC_SEQ_CST), a->count) >= 0)
            continue;
        uint32_t meetings = __atomic_load_n(&p->in_meetings, __ATOMIC_SEQ_CST);
        if (meetings == 0 || __atomic_load_n(&p->in_calls, __ATOMIC_SEQ_CST) > meetings)
            return 1;
    }
    return 0;
}

int tb_test_arrived(void *ctx, int *done) {
    struct tb_arrival *a = ctx;
    *done = all_reached(a, a->count);
    if (*done) {
        /* What the peers sent this rank before they arrived is in its queues now; MPI's own
         * barrier would have received it all before its own message, which comes after, and a
         * program may count on that (MPI_Win_test after a peer's MPI_Win_complete and a
         * barrier).  MPICH takes one message off its shared-memory queue a pass. */
        int rc = MPI_SUCCESS;
        if (!peers_quiet(a)) {
            __atomic_add_fetch(&a->own->drains, 1, __ATOMIC_RELAXED);
            for (int i = 0; i < DRAIN_PASSES && rc == MPI_SUCCESS; i++) rc = progress();
        }
        collectives_at_left = __atomic_load_n(&collectives_done, __ATOMIC_RELAXED);
        left_at = __atomic_load_n(&a->own->calls_done, __ATOMIC_RELAXED);
        return rc;
    }
    /* MPI must progress this rank's other operations while it waits in a call: a peer may not
     * arrive before one of them completes.  Every few tests once the wait has spun 20 us
     * (coscheduled meetings end well within that, and a pass during a peer's arrival delays
     * seeing it: two copies of IMB-MPI1 under ics made 80,000-250,000 passes a rank, each
     * meeting after a collective), at every test once blocked, while a peer that has not
     * arrived is anywhere but in this barrier.  A peer that waits on this rank's progress
     * waits 20 us more at most. */
    if (!__atomic_load_n(&a->own->asleep, __ATOMIC_RELAXED)) {
        if (++a->tests % PROGRESS_EVERY) return MPI_SUCCESS;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t now_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        if (a->waiting_since_ns == 0) a->waiting_since_ns = now_ns;
        if (now_ns - a->waiting_since_ns < PROGRESS_AFTER_NS) return MPI_SUCCESS;
    }
    return peer_elsewhere(a) ? progress() : MPI_SUCCESS;
}

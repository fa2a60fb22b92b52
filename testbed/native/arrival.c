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
 * The counts live in the ranks' records, one per slot; the ranks of a communicator agree on a
 * slot free on all of them at its first barrier (two allreduces, once, waited for as any
 * collective of the shim), and align their counts on it to the highest, so that counts only
 * ever grow: a rank still waiting on a freed communicator's last barrier reads a count at least
 * as high as it waits for.  A slot is freed with its communicator.  When no slot is free on
 * every rank (more than TB_ARRIVAL_SLOTS communicators in use at once) the barrier keeps the
 * nonblocking form; so does one whose ranks are not all on this host.  Every rank of a
 * communicator takes the same form at the same call: both depend only on what all of them see
 * alike.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

#include "shim_record.h"
#include "doorbell.h"
#include "arrival.h"

#define PROGRESS_EVERY 8

static uint64_t slots_used;
static int slot_key = MPI_KEYVAL_INVALID;

static int free_slot(MPI_Comm comm, int key, void *value, void *extra) {
    (void)comm, (void)key, (void)extra;
    int slot = (int)(intptr_t)value - 1;
    if (slot >= 0) __atomic_and_fetch(&slots_used, ~(UINT64_C(1) << slot), __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

/* An allreduce of one item on ``comm``, waited for by ``wait``. */
static int allreduce(const void *in, void *out, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                     tb_wait wait) {
    MPI_Request r;
    int rc = PMPI_Iallreduce(in, out, 1, type, op, comm, &r);
    return rc != MPI_SUCCESS ? rc : wait(&r, comm);
}

/* Agree with the other ranks of ``comm`` on a slot free on all of them (-1: none), take it and
 * align this rank's count on it with theirs. */
static int agree_slot(MPI_Comm comm, struct tb_record *own, tb_wait wait) {
    uint64_t mine = __atomic_load_n(&slots_used, __ATOMIC_RELAXED), all = 0;
    if (allreduce(&mine, &all, MPI_UINT64_T, MPI_BOR, comm, wait) != MPI_SUCCESS) return -1;
    int slot = -1;
    for (int s = 0; s < TB_ARRIVAL_SLOTS && slot < 0; s++)
        if (!(all & (UINT64_C(1) << s))) slot = s;
    if (slot < 0) return -1;
    uint32_t count = __atomic_load_n(&own->arrivals[slot], __ATOMIC_RELAXED), highest = 0;
    if (allreduce(&count, &highest, MPI_UINT32_T, MPI_MAX, comm, wait) != MPI_SUCCESS)
        return -1;
    __atomic_store_n(&own->arrivals[slot], highest, __ATOMIC_RELEASE);
    __atomic_or_fetch(&slots_used, UINT64_C(1) << slot, __ATOMIC_RELAXED);
    return slot;
}

/* The arrival slot of ``comm``, whose ranks all have a record here (agreed at the first call),
 * or -1 when no slot is free on all of them. */
static int slot_of(MPI_Comm comm, struct tb_record *own, tb_wait wait) {
    if (slot_key == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_slot, &slot_key, NULL) !=
            MPI_SUCCESS)
        return -1;
    void *value;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, slot_key, &value, &found) == MPI_SUCCESS && found)
        return (int)(intptr_t)value - 1;
    int slot = agree_slot(comm, own, wait);
    /* MPI_COMM_WORLD's attributes are deleted at MPI_Finalize, which frees its slot too. */
    if (PMPI_Comm_set_attr(comm, slot_key, (void *)(intptr_t)(slot + 1)) != MPI_SUCCESS &&
        slot >= 0) {
        free_slot(comm, slot_key, (void *)(intptr_t)(slot + 1), NULL);
        return -1;
    }
    return slot;
}

int tb_arrive(struct tb_arrival *a, struct tb_record *own, MPI_Comm comm, tb_wait wait) {
    if (!tb_members_here(comm, &a->world, &a->size, &a->me)) return 0;
    int slot = slot_of(comm, own, wait);
    if (slot < 0) return 0;
    a->own = own;
    a->comm = comm;
    a->slot = slot;
    a->tests = 0;
    own->meetings++;
    a->count = __atomic_add_fetch(&own->arrivals[slot], 1, __ATOMIC_SEQ_CST);
    tb_ring_members(comm);
    return 1;
}

int tb_test_arrived(void *ctx, int *done) {
    struct tb_arrival *a = ctx;
    *done = 0;
    for (int i = 0; i < a->size; i++) {
        if (i == a->me) continue;
        struct tb_record *p = tb_peer(a->world != NULL ? a->world[i] : i);
        uint32_t theirs = __atomic_load_n(&p->arrivals[a->slot], __ATOMIC_ACQUIRE);
        if ((int32_t)(theirs - a->count) < 0) {
            /* MPI must progress this rank's other operations while it waits in a call: a
             * peer may not arrive before one of them completes.  Every few tests while
             * spinning, at every test once blocked. */
            int flag;
            int asleep = __atomic_load_n(&a->own->asleep, __ATOMIC_RELAXED);
            return a->tests++ % PROGRESS_EVERY && !asleep
                       ? MPI_SUCCESS
                       : PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, a->comm, &flag,
                                     MPI_STATUS_IGNORE);
        }
    }
    *done = 1;
    return MPI_SUCCESS;
}

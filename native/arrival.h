/* Arrival counts: the ranks of a communicator on one host meet at a barrier (arrival.c).
 * Internal to the shim library. */
#pragma GCC visibility push(hidden)

/* One rank's arrival at a barrier: the count its peers' counts must reach. */
struct tb_arrival {
    struct tb_record *own; /* this rank's record */
    MPI_Comm comm;
    const int *world; /* the ranks of comm as world ranks; NULL: MPI_COMM_WORLD */
    int size, me, slot;
    uint32_t count;   /* this rank's arrival word: the count every other rank's must reach */
    unsigned tests;
    int64_t waiting_since_ns; /* CLOCK_MONOTONIC at the first progress check; 0: none yet */
};

/* Waits for a nonblocking collective on ``comm`` to complete; an MPI error code. */
typedef int (*tb_wait)(MPI_Request *request, MPI_Comm comm);

/* Arrive at the next barrier on ``comm`` (``own``: this rank's record), ringing the others if
 * this rank is the last, and set *meet; *meet 0: ``comm`` cannot meet on arrival counts
 * (nothing done, on every rank alike).  The first call on ``comm`` decides it with
 * collectives waited for by ``wait``.  An MPI error code. */
int tb_arrive(struct tb_arrival *a, struct tb_record *own, MPI_Comm comm, tb_wait wait,
              int *meet);

/* A tb_test (doorbell.h) on a struct tb_arrival: done once every rank has arrived; polls MPI's
 * progress every few tests once it has waited 20 us, and at every test once blocked. */
int tb_test_arrived(void *ctx, int *done);

/* Count a blocking collective this rank has completed: it leaves nothing for a peer's progress,
 * so it does not end the rank's being quiet between meetings. */
void tb_collective_completed(void);

#pragma GCC visibility pop

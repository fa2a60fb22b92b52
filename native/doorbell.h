/* The shim's doorbells: how a blocked rank sleeps and how its peers wake it (doorbell.c).
 *
 * Internal to the shim library (hidden: a preloaded library must not lend its names to the
 * program).  Ranks are world ranks unless a communicator is given.
 */
#pragma GCC visibility push(hidden)

/* How a wait rings its peers and how it sleeps when blocked. */
struct tb_ringing {
    int rung;      /* the peers' rings announce what completes the wait: a long safety net */
    MPI_Comm comm; /* a collective's communicator, whose partners it rings; else MPI_COMM_NULL */
    int relay;     /* also ring the other side as the wait goes: ``peer``, else a collective's
                      partners (a collective of two ranks) */
    int peer;      /* world rank of a large message's other end, whose steps need this rank's
                      progress as this rank's need its; -1: none */
};

/* A completion test: sets *done when the awaited operation(s) completed. */
typedef int (*tb_test)(void *ctx, int *done);

/* Use ``own`` as this rank's record; with ``run`` and ``job`` (NULL outside the testbed), map
 * the other ranks' records on first need.  ``net_us`` > 0 makes the safety net of a rung wait
 * that many microseconds instead of NET_NS. */
void tb_doorbell_init(struct tb_record *own, const char *run, const char *job, double net_us);

/* Ring rank ``rank`` of ``comm`` after posting a message to it. */
void tb_ring(MPI_Comm comm, int rank);

/* Ring the source of a receive of ``comm`` that may need its progress (a large message): rank
 * ``source``, or every rank of ``comm`` for MPI_ANY_SOURCE. */
void tb_ring_source(MPI_Comm comm, int source);

/* Ring the other side of a wait that relays (struct tb_ringing), if it is asleep: a step of
 * the wait, not news. */
void tb_relay(const struct tb_ringing *ringing);

/* Ring the ranks asleep in a call that waits on this one (their record's waits_on): a wait
 * on requests the shim did not follow completed, and may have sent what they wait for. */
void tb_ring_waiting_on_me(void);

/* As tb_ring_waiting_on_me, for a program's own polling (MPI_Test*), and only while a peer
 * sleeps on a large message's steps to or from this rank (its record's step_sleepers; else
 * a fence and one load of this rank's record): each sleep of a rank is rung once at most,
 * however often this rank polls while it lasts. */
void tb_ring_sleeps_on_me(void);

/* Ring every other rank of the job (a persistent request started: its peers are not known). */
void tb_ring_world(void);

/* Ring this rank's own doorbell (another thread of it may wait on what this one completed). */
void tb_ring_self(void);

/* The world rank of rank ``rank`` of ``comm`` (-1: none, or not known). */
int tb_world_of(MPI_Comm comm, int rank);

/* Ring the ranks of ``comm`` a collective may be waiting on this one for; ``news``: this rank
 * started or finished a collective (a new operation, not a step within one). */
void tb_ring_partners(MPI_Comm comm, int news);

/* Whether rank ``rank`` of ``comm`` is asleep in a blocked wait. */
int tb_asleep(MPI_Comm comm, int rank);

/* Whether rank ``source`` of ``comm`` (every rank, for MPI_ANY_SOURCE) can ring this rank. */
int tb_can_ring_me(MPI_Comm comm, int source);

/* Whether every rank of ``comm``, an intracommunicator, can ring this rank. */
int tb_all_can_ring_me(MPI_Comm comm);

/* The number of ranks of the intracommunicator ``comm`` (0: not known, or this rank has no
 * peers to ring). */
int tb_size_of(MPI_Comm comm);

/* Whether this rank is attached to a record of the testbed and has peers to ring. */
int tb_attached(void);

/* Whether ``comm`` has a rank outside this job's MPI_COMM_WORLD (processes it spawned or
 * connected to), or its ranks are not known: the same answer on every rank of the job in it. */
int tb_beyond_world(MPI_Comm comm);

/* The record of world rank ``world`` on this host (NULL: none here, or this rank's own). */
struct tb_record *tb_peer(int world);

/* Whether ``comm`` is an intracommunicator of two or more ranks that all have a record on this
 * host; then its ranks as world ranks (*world: NULL for MPI_COMM_WORLD, whose ranks are their
 * own), its size and this rank's rank in it.  The same answer on every rank of ``comm``. */
int tb_members_here(MPI_Comm comm, const int **world, int *size, int *me);

/* Ring each of ``size`` world ranks (``world``, or 0..size-1 when NULL) that is asleep, as
 * tb_members_here gives a communicator's ranks (this rank's own is skipped). */
void tb_ring_ranks(const int *world, int size);

/* The blocked part of a wait: sleep on this rank's doorbell, test at every wake, until test()
 * reports completion (see doorbell.c); test()'s error code. */
int tb_block(tb_test test, void *ctx, const struct tb_ringing *ringing, int *done);

#pragma GCC visibility pop

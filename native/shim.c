/* testbed shim: spin-block waits and communication counters for unmodified MPI programs.
 *
 * Preloaded (LD_PRELOAD) into every rank.  Each blocking MPI call below becomes its
 * nonblocking form plus a spin-block wait: poll with PMPI_Test* for the spin time, then block
 * until the operation completes.  Both the classic and the MPI-4 large-count (_c) forms are
 * wrapped: mpi4py 4 calls the _c ones.
 *
 * A blocked rank sleeps on the doorbell in its record, and its peers ring it when they may
 * have given it something to complete (doorbell.c); a timeout on every sleep is the safety
 * net.  TESTBED_SAFETY_NET_US (unset by default) replaces the safety net of the
 * waits whose completion the rings announce (16 ms) by a timeout of that many microseconds: a
 * test sets it long to see that rings alone wake such waits.
 *
 * Every wait is counted in the rank's shared record (shim_record.h), split by the coscheduled
 * flag the node manager sets, without the time the node manager kept the process stopped;
 * blocking and unblocking are also sent as a datagram to the node manager's socket, so it
 * learns of them at once without polling.  Outside the testbed (no
 * record to attach to) the shim keeps a private record and busy-polls like MPICH unless
 * TESTBED_SPIN is "fixed:SECONDS" or "adaptive:MAX_SECONDS[:MIN_SECONDS]".
 *
 * TESTBED_DELAY_SHIM_NS (off by default) makes every wrapped call busy-wait that many
 * nanoseconds more: a known slowdown for checking that the overhead suite detects one.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "shim_record.h"
#include "doorbell.h"
#include "arrival.h"
#include "activity.h"

#define CPU_SAMPLE_MASK 1023u
#define RING_FIRST_S 1e-6

static struct tb_record private_record = {.magic = TB_MAGIC, .version = TB_VERSION,
                                          .spin_mode = TB_SPIN_FOREVER,
                                          .native_collectives = 1};
static struct tb_record *rec = &private_record;
static int nm_fd = -1;
static struct sockaddr_un nm_addr;
static socklen_t nm_len;
static unsigned calls;
static double injected_delay_s;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Whether ``comm`` was revoked (ULFM, where the build's feature check found it): every call on
 * it must then fail as the blocking call does (MPI_ERR_REVOKED), while Open MPI leaves the
 * nonblocking form the shim would make of it pending for ever. */
#if TB_HAVE_REVOKED
#include <mpi-ext.h>
static int tb_revoked(MPI_Comm comm) {
    int flag = 0;
    return comm != MPI_COMM_NULL && PMPIX_Comm_is_revoked(comm, &flag) == MPI_SUCCESS && flag;
}
#else
static int tb_revoked(MPI_Comm comm) {
    (void)comm;
    return 0;
}
#endif

static const char *rank_from_env(void) {
    const char *names[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v != NULL && *v != '\0') return v;
    }
    return NULL;
}

static void spin_from_env(void) {
    const char *spin = getenv("TESTBED_SPIN");
    if (spin == NULL) return;
    if (strncmp(spin, "fixed:", 6) == 0) {
        private_record.spin_mode = TB_SPIN_FIXED;
        private_record.native_collectives = 0;
        private_record.spin_fixed_s = atof(spin + 6);
    } else if (strncmp(spin, "adaptive:", 9) == 0) {
        private_record.spin_mode = TB_SPIN_ADAPTIVE;
        private_record.native_collectives = 0;
        char *end;
        private_record.spin_max_s = strtod(spin + 9, &end);
        if (*end == ':') private_record.spin_min_s = strtod(end + 1, NULL);
    }
}

static void connect_node_manager(void) {
    size_t len = strnlen(rec->nm_socket, sizeof rec->nm_socket);
    if (len == 0 || len + 2 > sizeof nm_addr.sun_path) return;
    nm_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (nm_fd < 0) return;
    memset(&nm_addr, 0, sizeof nm_addr);
    nm_addr.sun_family = AF_UNIX;
    memcpy(nm_addr.sun_path + 1, rec->nm_socket, len); /* abstract namespace */
    nm_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static void delay_from_env(void) {
    const char *ns = getenv("TESTBED_DELAY_SHIM_NS");
    if (ns != NULL) injected_delay_s = atof(ns) * 1e-9;
}

static struct tb_record *map_record(const char *path) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return NULL;
    void *p = mmap(NULL, sizeof(struct tb_record), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return NULL;
    struct tb_record *r = p;
    if (r->magic != TB_MAGIC || r->version != TB_VERSION) {
        munmap(p, sizeof(struct tb_record));
        return NULL;
    }
    return r;
}

/* Busy-wait the injected delay, if any. */
static void injected_delay(void) {
    if (injected_delay_s <= 0.0) return;
    double until = now() + injected_delay_s;
    while (now() < until) {
    }
}

/* Whether this process is in a world MPI_Comm_spawn started: hydra says so in PMI_SPAWNED;
 * PRRTE names the launched job's PMIx namespace "<server>@1" and each spawned world's with the
 * next number (testbed/emulation/launchers.py). */
static int spawned_world(void) {
    const char *spawned = getenv("PMI_SPAWNED"), *ns = getenv("PMIX_NAMESPACE");
    if (spawned != NULL && atoi(spawned)) return 1;
    const char *at = ns != NULL ? strrchr(ns, '@') : NULL;
    return at != NULL && strcmp(at, "@1") != 0;
}

/* Attach to this rank's record.  A process that MPI_Comm_spawn started is not one of the job's
 * ranks, though it inherits their environment and has
 * their rank numbers in a world of its own: it keeps a private record, or it would share a
 * rank's record, doorbell and arrival counts.  It takes the job's settings from rank 0's
 * record, so that its collectives take the form its parents' do (a blocking and a nonblocking
 * collective never match) and its waits spin as theirs. */
static void attach(const char *run, const char *job) {
    const char *rank = rank_from_env();
    int child = spawned_world();
    char path[256];
    if (run == NULL || job == NULL || rank == NULL ||
        snprintf(path, sizeof path, "/dev/shm/testbed-%s-%s-%s", run, job, child ? "0" : rank) >=
            (int)sizeof path)
        return;
    struct tb_record *r = map_record(path);
    if (r == NULL) return;
    if (child) {
        private_record.spin_mode = r->spin_mode;
        private_record.spin_fixed_s = r->spin_fixed_s;
        private_record.spin_max_s = r->spin_max_s;
        private_record.spin_min_s = r->spin_min_s;
        private_record.native_collectives = r->native_collectives;
        munmap(r, sizeof(struct tb_record));
        return;
    }
    rec = r;
    rec->pid = (int32_t)getpid();
    rec->attached = 1;
    connect_node_manager();
}

__attribute__((constructor)) static void tb_attach(void) {
    spin_from_env();
    delay_from_env();
    private_record.pid = (int32_t)getpid();
    const char *run = getenv("TESTBED_RUN"), *job = getenv("TESTBED_JOB");
    const char *net = getenv("TESTBED_SAFETY_NET_US");
    attach(run, job);
    tb_activity_init(rec);
    tb_doorbell_init(rec, rec == &private_record ? NULL : run, job,
                     net != NULL ? atof(net) : 0.0);
}

static void notify(uint32_t blocked) {
    rec->blocked = blocked;
    uint64_t seq = __atomic_add_fetch(&rec->block_seq, 1, __ATOMIC_RELEASE);
    rec->cpu_s = cpu_now();
    if (nm_fd >= 0) {
        struct tb_event ev = {rec->id, blocked, seq};
        (void)sendto(nm_fd, &ev, sizeof ev, MSG_DONTWAIT, (struct sockaddr *)&nm_addr, nm_len);
    }
}

static double spin_limit(void) {
    switch (rec->spin_mode) {
    case TB_SPIN_FIXED:
        return rec->spin_fixed_s;
    case TB_SPIN_ADAPTIVE: {
        double adaptive = 2.0 * rec->max_nonblock_s;
        if (adaptive < rec->spin_min_s) adaptive = rec->spin_min_s;
        return adaptive > rec->spin_max_s ? rec->spin_max_s : adaptive;
    }
    default:
        return INFINITY;
    }
}

/* The time now and the node manager's stopped-time total, read so that no stop falls between
 * the two: the total is written before SIGCONT, so a stop in between shows as a changed total. */
static double stamp(double *stopped) {
    double s, again, t;
    do {
        __atomic_load(&rec->stopped_s, &s, __ATOMIC_ACQUIRE);
        t = now();
        __atomic_load(&rec->stopped_s, &again, __ATOMIC_ACQUIRE);
    } while (again != s);
    *stopped = s;
    return t;
}

/* Seconds since (t0, s0) during which the process was not stopped. */
static double ready_since(double t0, double s0) {
    double s, t = stamp(&s);
    return (t - t0) - (s - s0);
}

/* Count one synchronous operation and its wait (seconds, not stopped), split by the flag. */
static void account(int coscheduled, double waited) {
    if (coscheduled) {
        rec->c_cs++;
        rec->t_cs += waited;
    } else {
        rec->c_dc++;
        rec->t_dc += waited;
    }
    if ((++calls & CPU_SAMPLE_MASK) == 0) rec->cpu_s = cpu_now();
    injected_delay();
}

/* Wait for test() to report completion: spin while the spin limit (re-read every poll, as the
 * node manager may change the class) exceeds the time waited, then block.  Time stopped by the
 * node manager counts neither as spinning nor as waiting.  A collective rings its partners
 * after its first test and, between two ranks, at doubling times while it spins (see
 * doorbell.c).  ``counted``: the wait is one operation's; else its time is added to the waits'
 * total alone, as part of the operation it serves. */
static int spin_block_counted(tb_test test, void *ctx, const struct tb_ringing *ringing,
                              int counted) {
    int coscheduled = rec->coscheduled;
    double s0, t0 = stamp(&s0), waited = 0.0, limit = spin_limit(), ring_at = RING_FIRST_S;
    int done = 0;
    int rc = test(ctx, &done);
    if (ringing->comm != MPI_COMM_NULL) tb_ring_partners(ringing->comm, 1);
    while (rc == MPI_SUCCESS && !done) {
        waited = ready_since(t0, s0);
        limit = spin_limit();
        if (waited >= limit) break;
        rc = test(ctx, &done);
        if (ringing->relay && waited >= ring_at) {
            tb_relay(ringing);
            ring_at *= 2;
        }
    }
    if (rc == MPI_SUCCESS && !done) {
        double sb, tb = stamp(&sb);
        rec->blocks++;
        notify(1);
        double cpu_blocked = rec->cpu_s;
        rc = tb_block(test, ctx, ringing, &done);
        double s1, t1 = stamp(&s1);
        rec->blocked_s += (t1 - tb) - (s1 - sb);
        waited = (t1 - t0) - (s1 - s0);
        notify(0);
        rec->blocked_cpu_s += rec->cpu_s - cpu_blocked;
    } else {
        waited = ready_since(t0, s0);
        if (waited > rec->max_nonblock_s) rec->max_nonblock_s = waited;
    }
    rec->spin_s = limit;
    if (counted)
        account(coscheduled, waited);
    else
        *(coscheduled ? &rec->t_cs : &rec->t_dc) += waited;
    return rc;
}

static int spin_block(tb_test test, void *ctx, const struct tb_ringing *ringing) {
    return spin_block_counted(test, ctx, ringing, 1);
}

/* A process that busy-waits anyway (spin "forever": coscheduled CS processes, and any program
 * outside the testbed) makes the blocking call itself, which MPICH completes by polling too:
 * no nonblocking detour, so it costs what the call costs without the shim.  The whole call
 * counts as the wait. */
static int busy_waits(void) { return rec->spin_mode == TB_SPIN_FOREVER; }

struct tb_call { int coscheduled; double t0, s0; };

static struct tb_call call_begin(void) {
    struct tb_call c = {rec->coscheduled, 0.0, 0.0};
    c.t0 = stamp(&c.s0);
    return c;
}

static int call_end(struct tb_call c, int rc) {
    double waited = ready_since(c.t0, c.s0);
    if (waited > rec->max_nonblock_s) rec->max_nonblock_s = waited;
    rec->spin_s = INFINITY;
    account(c.coscheduled, waited);
    return rc;
}

/* Make CALL, counting it whole as one wait. */
#define TIMED(CALL)                                                                           \
    {                                                                                         \
        struct tb_call c_ = call_begin();                                                     \
        return call_end(c_, CALL);                                                            \
    }

#define BUSY(CALL)                                                                            \
    if (busy_waits()) TIMED(CALL)

struct one { MPI_Request *req; MPI_Status *status; };
static int test_one(void *c, int *done) {
    struct one *x = c;
    return PMPI_Test(x->req, done, x->status);
}
static int wait_one(MPI_Request *req, MPI_Status *status, struct tb_ringing ringing) {
    struct one c = {req, status};
    return spin_block(test_one, &c, &ringing);
}

/* A wait that rings nobody as it goes; ``rung``: see struct tb_ringing. */
static struct tb_ringing point_to_point(int rung) {
    return (struct tb_ringing){rung, MPI_COMM_NULL, 0, -1};
}

struct all { int n; MPI_Request *reqs; MPI_Status *statuses; };
static int test_all(void *c, int *done) {
    struct all *x = c;
    return PMPI_Testall(x->n, x->reqs, done, x->statuses);
}

struct any { int n; MPI_Request *reqs; int *index; MPI_Status *status; };
static int test_any(void *c, int *done) {
    struct any *x = c;
    return PMPI_Testany(x->n, x->reqs, x->index, done, x->status);
}

struct some { int n; MPI_Request *reqs; int *outcount; int *indices; MPI_Status *statuses; };
static int test_some(void *c, int *done) {
    struct some *x = c;
    int rc = PMPI_Testsome(x->n, x->reqs, x->outcount, x->indices, x->statuses);
    *done = *x->outcount != 0;
    return rc;
}

struct probe { int source, tag; MPI_Comm comm; MPI_Message *message; MPI_Status *status; };
static int test_probe(void *c, int *done) {
    struct probe *x = c;
    return PMPI_Iprobe(x->source, x->tag, x->comm, done, x->status);
}
static int test_mprobe(void *c, int *done) {
    struct probe *x = c;
    return PMPI_Improbe(x->source, x->tag, x->comm, done, x->message, x->status);
}

/* Whether ``count`` items of ``datatype`` make a message small enough to be sent eagerly in
 * one go (MPICH's shared-memory cells hold 8 KiB), so that the sender's ring is the only one
 * its receiver needs: a larger message takes steps in which each side's progress serves the
 * other, for which both sides ring (``message``). */
#define SMALL_BYTES 4096
static int small(MPI_Count count, MPI_Datatype datatype) {
    int size;
    return count >= 0 && PMPI_Type_size(datatype, &size) == MPI_SUCCESS && size >= 0 &&
           count * (MPI_Count)size <= SMALL_BYTES;
}

/* Whether the rings announce what completes a receive of ``count`` ``datatype`` from
 * ``source`` of ``comm`` (``rung`` of struct tb_ringing). */
static int recv_rung(MPI_Count count, MPI_Datatype datatype, int source, MPI_Comm comm) {
    return small(count, datatype) && tb_can_ring_me(comm, source);
}

/* How a wait for a message of ``count`` ``datatype`` to or from rank ``peer`` of ``comm``
 * rings: a large message to or from one rank that can ring this one takes steps in which each
 * side's progress serves the other, so both sides ring each other as they go (they also ring
 * when they post it and when it completes: see SEND and RECEIVE), its wait backing off
 * (doorbell.c says why); a small one rings nobody as it goes, its completion announced by
 * rings when ``rung``. */
static struct tb_ringing message(MPI_Count count, MPI_Datatype datatype, int peer,
                                 MPI_Comm comm, int rung) {
    int other = small(count, datatype) || peer == MPI_ANY_SOURCE || !tb_can_ring_me(comm, peer)
                    ? -1
                    : tb_world_of(comm, peer);
    return (struct tb_ringing){rung, MPI_COMM_NULL, other >= 0, other};
}

/* How a collective on ``comm`` moving ``count`` ``datatype`` per message rings: its partners
 * after its first test and when it completes; between two ranks, also as it goes, and then,
 * when small, its completion is announced by rings. */
static struct tb_ringing collective(MPI_Count count, MPI_Datatype datatype, MPI_Comm comm) {
    int pair = tb_size_of(comm) == 2;
    return (struct tb_ringing){pair && small(count, datatype) && tb_all_can_ring_me(comm), comm,
                               pair, -1};
}

/* Waits on requests the program made itself: the shim does not follow them, so it cannot
 * tell whether whoever completes them rings; they keep the short safety net.  Once one
 * completes, the ranks asleep in a call that waits on this one are rung: a receive it
 * completed may have sent the acknowledgement that ends their send. */
static int waited(int rc) {
    tb_ring_waiting_on_me();
    return rc;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    TB_ENTER(-1);
    if (busy_waits()) {
        struct tb_call c_ = call_begin();
        return waited(call_end(c_, PMPI_Wait(request, status)));
    }
    return waited(wait_one(request, status, point_to_point(0)));
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status *array_of_statuses) {
    TB_ENTER(-1);
    if (busy_waits()) {
        struct tb_call c_ = call_begin();
        return waited(call_end(c_, PMPI_Waitall(count, array_of_requests, array_of_statuses)));
    }
    struct all c = {count, array_of_requests, array_of_statuses};
    return waited(spin_block(test_all, &c, &(struct tb_ringing){0, MPI_COMM_NULL, 0, -1}));
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status) {
    TB_ENTER(-1);
    if (busy_waits()) {
        struct tb_call c_ = call_begin();
        return waited(call_end(c_, PMPI_Waitany(count, array_of_requests, indx, status)));
    }
    struct any c = {count, array_of_requests, indx, status};
    return waited(spin_block(test_any, &c, &(struct tb_ringing){0, MPI_COMM_NULL, 0, -1}));
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status *array_of_statuses) {
    TB_ENTER(-1);
    if (busy_waits()) {
        struct tb_call c_ = call_begin();
        return waited(call_end(c_, PMPI_Waitsome(incount, array_of_requests, outcount,
                                                 array_of_indices, array_of_statuses)));
    }
    struct some c = {incount, array_of_requests, outcount, array_of_indices, array_of_statuses};
    return waited(spin_block(test_some, &c, &(struct tb_ringing){0, MPI_COMM_NULL, 0, -1}));
}

/* A program's own tests: the receive or send a test completed may have sent the
 * acknowledgement that ends a large message's send, or taken the message whose handshake
 * a blocked sender waits for, so once one completes, a rank asleep in a call that waits on
 * this one is rung, once a sleep however often the program tests (a test that completes
 * nothing rings nobody: the polling's other steps are left to the sleeper's safety net). */
static int tested(int rc, int done) {
    if (rc == MPI_SUCCESS && done) tb_ring_sleeps_on_me();
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    int rc = PMPI_Test(request, flag, status);
    return tested(rc, *flag);
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[]) {
    int rc = PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    return tested(rc, *flag);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *indx, int *flag,
                MPI_Status *status) {
    int rc = PMPI_Testany(count, array_of_requests, indx, flag, status);
    return tested(rc, *flag);
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]) {
    int rc = PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                           array_of_statuses);
    return tested(rc, *outcount > 0);
}

/* A probe waits for an envelope, which the sender's ring announces whatever the size. */
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    TB_ENTER(tb_world_of(comm, source));
    BUSY(PMPI_Probe(source, tag, comm, status))
    struct probe c = {source, tag, comm, NULL, status};
    struct tb_ringing ringing = point_to_point(tb_can_ring_me(comm, source));
    return spin_block(test_probe, &c, &ringing);
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
    TB_ENTER(tb_world_of(comm, source));
    BUSY(PMPI_Mprobe(source, tag, comm, message, status))
    struct probe c = {source, tag, comm, message, status};
    struct tb_ringing ringing = point_to_point(tb_can_ring_me(comm, source));
    return spin_block(test_mprobe, &c, &ringing);
}

/* Starting a persistent request, or readying a partition of a partitioned send, may give any
 * peer something to complete: ring them all. */
int MPI_Start(MPI_Request *request) {
    int rc = PMPI_Start(request);
    tb_ring_world();
    return rc;
}

int MPI_Startall(int count, MPI_Request array_of_requests[]) {
    int rc = PMPI_Startall(count, array_of_requests);
    tb_ring_world();
    return rc;
}

/* Partitioned communication is MPI-4's; Open MPI 5 declares MPI_Pready_list's array without
 * const.  The build's feature checks say which (testbed/emulation/shim.py). */
#if TB_HAVE_PARTITIONED
int MPI_Pready(int partition, MPI_Request request) {
    int rc = PMPI_Pready(partition, request);
    tb_ring_world();
    return rc;
}

int MPI_Pready_range(int partition_low, int partition_high, MPI_Request request) {
    int rc = PMPI_Pready_range(partition_low, partition_high, request);
    tb_ring_world();
    return rc;
}

int MPI_Pready_list(int length, TB_PREADY_LIST_CONST int array_of_partitions[],
                    MPI_Request request) {
    int rc = PMPI_Pready_list(length, array_of_partitions, request);
    tb_ring_world();
    return rc;
}
#endif

/* A generalized request is completed by the program, usually in another thread of the rank
 * than the one waiting on it. */
int MPI_Grequest_complete(MPI_Request request) {
    int rc = PMPI_Grequest_complete(request);
    tb_ring_self();
    return rc;
}

/* A blocking receive of COUNT DATATYPE from rank SOURCE of COMM: made as it is when the process
 * busy-waits anyway, else as its nonblocking form (which fills r_) plus a spin-block wait on
 * r_.  Blocking and nonblocking point-to-point operations match each other, so peers may
 * differ in the form.  A large message's sender needs this rank's progress (the handshake
 * that lets it send, the acknowledgement that ends its send), so the source is rung once the
 * receive is posted and once it completes (every rank of COMM for MPI_ANY_SOURCE); a process
 * that busy-waits makes the blocking call and rings after it, unless the source is asleep
 * already: then it takes the nonblocking form too, as SEND does. */
#define RECEIVE(BLOCKING, NONBLOCKING, STATUS, COUNT, DATATYPE, SOURCE, COMM)               \
    {                                                                                       \
        TB_ENTER(tb_world_of(COMM, SOURCE));                                                \
        int large_ = !small(COUNT, DATATYPE);                                               \
        if ((busy_waits() && !(large_ && tb_asleep(COMM, SOURCE))) || tb_revoked(COMM)) {   \
            struct tb_call c_ = call_begin();                                               \
            int rc_ = BLOCKING;                                                             \
            if (large_) tb_ring_source(COMM, SOURCE);                                       \
            return call_end(c_, rc_);                                                       \
        }                                                                                   \
        MPI_Request r_;                                                                     \
        int rc_ = NONBLOCKING;                                                              \
        if (rc_ != MPI_SUCCESS) return rc_;                                                 \
        if (large_) tb_ring_source(COMM, SOURCE);                                           \
        rc_ = wait_one(&r_, STATUS, message(COUNT, DATATYPE, SOURCE, COMM,                  \
                                            recv_rung(COUNT, DATATYPE, SOURCE, COMM)));     \
        if (large_) tb_ring_source(COMM, SOURCE);                                           \
        return rc_;                                                                         \
    }

/* A blocking receive of a message matched by a probe, whose source the shim does not know: a
 * large one rings every rank of the job, as RECEIVE rings its source. */
#define MATCHED_RECEIVE(BLOCKING, NONBLOCKING, STATUS, COUNT, DATATYPE)                     \
    {                                                                                       \
        TB_ENTER(-1);                                                                       \
        BUSY(BLOCKING)                                                                      \
        int large_ = !small(COUNT, DATATYPE);                                               \
        MPI_Request r_;                                                                     \
        int rc_ = NONBLOCKING;                                                              \
        if (rc_ != MPI_SUCCESS) return rc_;                                                 \
        if (large_) tb_ring_world();                                                        \
        rc_ = wait_one(&r_, STATUS, point_to_point(0));                                     \
        if (large_) tb_ring_world();                                                        \
        return rc_;                                                                         \
    }

/* A blocking send of COUNT DATATYPE to rank DEST of COMM: as a receive, and the destination
 * is rung once the message is posted and, when large, once the send completes (its last
 * step may be what the receiver waits for).  A process that busy-waits makes the blocking
 * call and rings after it (which is when an eager message is posted), unless the destination
 * is asleep already: then it takes the nonblocking form too, so that a message needing the
 * destination's progress does not wait for its safety net.  A small send that does not
 * complete at once waits for something its receiver does not ring for (the receive posted
 * by an Ssend's peer, room for a buffered message), so its wait trusts no doorbell. */
#define SEND(BLOCKING, NONBLOCKING, COUNT, DATATYPE, COMM, DEST)                            \
    {                                                                                       \
        TB_ENTER(tb_world_of(COMM, DEST));                                                  \
        if ((busy_waits() && !tb_asleep(COMM, DEST)) || tb_revoked(COMM)) {                 \
            struct tb_call c_ = call_begin();                                               \
            int rc_ = BLOCKING;                                                             \
            tb_ring(COMM, DEST);                                                            \
            return call_end(c_, rc_);                                                       \
        }                                                                                   \
        MPI_Request r_;                                                                     \
        int rc_ = NONBLOCKING;                                                              \
        if (rc_ != MPI_SUCCESS) return rc_;                                                 \
        tb_ring(COMM, DEST);                                                                \
        rc_ = wait_one(&r_, MPI_STATUS_IGNORE, message(COUNT, DATATYPE, DEST, COMM, 0));    \
        if (!small(COUNT, DATATYPE)) tb_ring(COMM, DEST);                                   \
        return rc_;                                                                         \
    }

/* A nonblocking send: posted, then its destination rung. */
#define POST_SEND(NONBLOCKING, COMM, DEST)                                                  \
    {                                                                                       \
        TB_ENTER(tb_world_of(COMM, DEST));                                                  \
        int rc_ = NONBLOCKING;                                                              \
        if (rc_ == MPI_SUCCESS) tb_ring(COMM, DEST);                                        \
        return rc_;                                                                         \
    }

/* A nonblocking receive of a message matched by a probe: posted, then, for a large message,
 * the ranks asleep in a call that waits on this one rung (its sender may wait for this
 * rank's handshake; the shim does not know the source). */
#define POST_MATCHED_RECEIVE(NONBLOCKING, COUNT, DATATYPE)                                  \
    {                                                                                       \
        TB_ENTER(-1);                                                                       \
        int rc_ = NONBLOCKING;                                                              \
        if (rc_ == MPI_SUCCESS && !small(COUNT, DATATYPE)) tb_ring_waiting_on_me();         \
        return rc_;                                                                         \
    }

/* A nonblocking receive: posted, then, for a large message, its source rung (see RECEIVE). */
#define POST_RECEIVE(NONBLOCKING, COUNT, DATATYPE, COMM, SOURCE)                            \
    {                                                                                       \
        TB_ENTER(tb_world_of(COMM, SOURCE));                                                \
        int rc_ = NONBLOCKING;                                                              \
        if (rc_ == MPI_SUCCESS && !small(COUNT, DATATYPE)) tb_ring_source(COMM, SOURCE);    \
        return rc_;                                                                         \
    }

/* How a blocking collective is made: the blocking call itself when the job's collectives are
 * native, else its nonblocking form plus a spin-block wait that rings as ``collective`` says,
 * and a ring of its partners once it completes (its last progress may have sent what they
 * wait for).  A blocking and a nonblocking collective never match (MPI-3 5.12) and the ranks
 * of one job may be in different classes, so the form is a setting of the whole job, fixed
 * before launch, never a per-process choice.  COUNT and DATATYPE: what one message of it
 * carries (COUNT -1: its messages differ in size). */
#define COLLECTIVE_MADE(BLOCKING, NONBLOCKING, COMM, COUNT, DATATYPE)                       \
    {                                                                                       \
        if (rec->native_collectives || tb_revoked(COMM)) TIMED(BLOCKING)                    \
        MPI_Request r_;                                                                     \
        int rc_ = NONBLOCKING;                                                              \
        if (rc_ != MPI_SUCCESS) return rc_;                                                 \
        rc_ = wait_one(&r_, MPI_STATUS_IGNORE, collective(COUNT, DATATYPE, COMM));          \
        tb_ring_partners(COMM, 1);                                                          \
        if (rc_ == MPI_SUCCESS) tb_collective_completed();                                  \
        return rc_;                                                                         \
    }

/* A blocking collective's wrapper: COLLECTIVE_MADE, the rank in it meanwhile. */
#define COLLECTIVE(BLOCKING, NONBLOCKING, COMM, COUNT, DATATYPE)                            \
    {                                                                                       \
        TB_ENTER(-1);                                                                       \
        COLLECTIVE_MADE(BLOCKING, NONBLOCKING, COMM, COUNT, DATATYPE)                       \
    }

/* The wait of an allreduce of one item by which a communicator's ranks agree on its arrival
 * slot, rung as such a collective (see COLLECTIVE): part of the collective that needed it. */
static int wait_agreeing(MPI_Request *request, MPI_Comm comm) {
    struct one c = {request, MPI_STATUS_IGNORE};
    struct tb_ringing ringing = collective(1, MPI_UINT64_T, comm);
    int rc = spin_block_counted(test_one, &c, &ringing, 0);
    tb_ring_partners(comm, 1);
    return rc;
}


/* The wait of a Sendrecv, ringing as ``ringing`` says: one with a large message to or from
 * a single peer as that message's (``message``), other large ones as waits the rings do not
 * announce. */
static int sendrecv_wait(MPI_Request reqs[2], MPI_Status *status, struct tb_ringing ringing) {
    MPI_Status statuses[2];
    struct all c = {2, reqs, statuses};
    int rc = spin_block(test_all, &c, &ringing);
    if (status != MPI_STATUS_IGNORE) *status = statuses[0];
    return rc;
}

/* Every wrapper in two forms: COUNT/COUNTS/DISPLS are int for the classic API and
 * MPI_Count/MPI_Count/MPI_Aint for the large-count (_c) API. */
#define WRAPPERS(S, COUNT, COUNTS, DISPLS)                                                  \
    int MPI_Send##S(const void *buf, COUNT count, MPI_Datatype datatype, int dest, int tag, \
        MPI_Comm comm)                                                                      \
        SEND(PMPI_Send##S(buf, count, datatype, dest, tag, comm),                           \
             PMPI_Isend##S(buf, count, datatype, dest, tag, comm, &r_), count,              \
             datatype, comm, dest)                                                          \
    int MPI_Ssend##S(const void *buf, COUNT count, MPI_Datatype datatype, int dest, int     \
        tag, MPI_Comm comm)                                                                 \
        SEND(PMPI_Ssend##S(buf, count, datatype, dest, tag, comm),                          \
             PMPI_Issend##S(buf, count, datatype, dest, tag, comm, &r_), count,             \
             datatype, comm, dest)                                                          \
    int MPI_Rsend##S(const void *buf, COUNT count, MPI_Datatype datatype, int dest, int     \
        tag, MPI_Comm comm)                                                                 \
        SEND(PMPI_Rsend##S(buf, count, datatype, dest, tag, comm),                          \
             PMPI_Irsend##S(buf, count, datatype, dest, tag, comm, &r_), count,             \
             datatype, comm, dest)                                                          \
    int MPI_Bsend##S(const void *buf, COUNT count, MPI_Datatype datatype, int dest, int     \
        tag, MPI_Comm comm)                                                                 \
        SEND(PMPI_Bsend##S(buf, count, datatype, dest, tag, comm),                          \
             PMPI_Ibsend##S(buf, count, datatype, dest, tag, comm, &r_), count,             \
             datatype, comm, dest)                                                          \
    int MPI_Isend##S(const void *buf, COUNT count, MPI_Datatype datatype, int dest, int     \
        tag, MPI_Comm comm, MPI_Request *request)                                           \
        POST_SEND(PMPI_Isend##S(buf, count, datatype, dest, tag, comm, request), comm, dest)\
    int MPI_Issend##S(const void *buf, COUNT count, MPI_Datatype datatype, int dest, int    \
        tag, MPI_Comm comm, MPI_Request *request)                                           \
        POST_SEND(PMPI_Issend##S(buf, count, datatype, dest, tag, comm, request), comm,     \
                  dest)                                                                     \
    int MPI_Irsend##S(const void *buf, COUNT count, MPI_Datatype datatype, int dest, int    \
        tag, MPI_Comm comm, MPI_Request *request)                                           \
        POST_SEND(PMPI_Irsend##S(buf, count, datatype, dest, tag, comm, request), comm,     \
                  dest)                                                                     \
    int MPI_Ibsend##S(const void *buf, COUNT count, MPI_Datatype datatype, int dest, int    \
        tag, MPI_Comm comm, MPI_Request *request)                                           \
        POST_SEND(PMPI_Ibsend##S(buf, count, datatype, dest, tag, comm, request), comm,     \
                  dest)                                                                     \
    int MPI_Recv##S(void *buf, COUNT count, MPI_Datatype datatype, int source, int tag,     \
        MPI_Comm comm, MPI_Status *status)                                                  \
        RECEIVE(PMPI_Recv##S(buf, count, datatype, source, tag, comm, status),              \
                PMPI_Irecv##S(buf, count, datatype, source, tag, comm, &r_), status, count, \
                datatype, source, comm)                                                     \
    int MPI_Irecv##S(void *buf, COUNT count, MPI_Datatype datatype, int source, int tag,    \
        MPI_Comm comm, MPI_Request *request)                                                \
        POST_RECEIVE(PMPI_Irecv##S(buf, count, datatype, source, tag, comm, request),       \
                     count, datatype, comm, source)                                         \
    int MPI_Mrecv##S(void *buf, COUNT count, MPI_Datatype datatype, MPI_Message *message,   \
        MPI_Status *status)                                                                 \
        MATCHED_RECEIVE(PMPI_Mrecv##S(buf, count, datatype, message, status),               \
                        PMPI_Imrecv##S(buf, count, datatype, message, &r_), status, count,  \
                        datatype)                                                           \
    int MPI_Imrecv##S(void *buf, COUNT count, MPI_Datatype datatype, MPI_Message *message,  \
        MPI_Request *request)                                                               \
        POST_MATCHED_RECEIVE(PMPI_Imrecv##S(buf, count, datatype, message, request), count, \
                             datatype)                                                      \
    int MPI_Sendrecv##S(const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, int    \
        dest, int sendtag, void *recvbuf, COUNT recvcount, MPI_Datatype recvtype, int       \
        source, int recvtag, MPI_Comm comm, MPI_Status *status) {                           \
        TB_ENTER(dest == source ? tb_world_of(comm, dest) : -1);                            \
        int large_recv = !small(recvcount, recvtype);                                       \
        if ((busy_waits() && !tb_asleep(comm, dest) &&                                      \
             !(large_recv && tb_asleep(comm, source))) || tb_revoked(comm)) {               \
            struct tb_call c_ = call_begin();                                               \
            int rc_ = PMPI_Sendrecv##S(sendbuf, sendcount, sendtype, dest, sendtag,         \
                recvbuf, recvcount, recvtype, source, recvtag, comm, status);               \
            tb_ring(comm, dest);                                                            \
            if (large_recv) tb_ring_source(comm, source);                                   \
            return call_end(c_, rc_);                                                       \
        }                                                                                   \
        MPI_Request reqs[2];                                                                \
        int rc = PMPI_Irecv##S(recvbuf, recvcount, recvtype, source, recvtag, comm, &reqs[0]);\
        if (rc != MPI_SUCCESS) return rc;                                                   \
        rc = PMPI_Isend##S(sendbuf, sendcount, sendtype, dest, sendtag, comm, &reqs[1]);    \
        if (rc != MPI_SUCCESS) {                                                            \
            PMPI_Cancel(&reqs[0]);                                                          \
            PMPI_Request_free(&reqs[0]);                                                    \
            return rc;                                                                      \
        }                                                                                   \
        tb_ring(comm, dest);                                                                \
        if (large_recv) tb_ring_source(comm, source);                                       \
        int large_send = !small(sendcount, sendtype);                                       \
        rc = sendrecv_wait(reqs, status, large_send || large_recv                           \
            ? message(large_send ? sendcount : recvcount, large_send ? sendtype : recvtype, \
                      dest, comm, 0)                                                        \
            : point_to_point(recv_rung(recvcount, recvtype, source, comm)));                \
        if (large_send) tb_ring(comm, dest);                                                \
        if (large_recv) tb_ring_source(comm, source);                                       \
        return rc;                                                                          \
    }                                                                                       \
    int MPI_Bcast##S(void *buffer, COUNT count, MPI_Datatype datatype, int root, MPI_Comm   \
        comm)                                                                               \
        COLLECTIVE(PMPI_Bcast##S(buffer, count, datatype, root, comm),                      \
            PMPI_Ibcast##S(buffer, count, datatype, root, comm, &r_), comm, count,          \
            datatype)                                                                       \
    int MPI_Reduce##S(const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype         \
        datatype, MPI_Op op, int root, MPI_Comm comm)                                       \
        COLLECTIVE(PMPI_Reduce##S(sendbuf, recvbuf, count, datatype, op, root, comm),       \
            PMPI_Ireduce##S(sendbuf, recvbuf, count, datatype, op, root, comm, &r_), comm,  \
            count, datatype)                                                                \
    int MPI_Allreduce##S(const void *sendbuf, void *recvbuf, COUNT count, MPI_Datatype      \
        datatype, MPI_Op op, MPI_Comm comm)                                                 \
        COLLECTIVE(PMPI_Allreduce##S(sendbuf, recvbuf, count, datatype, op, comm),          \
            PMPI_Iallreduce##S(sendbuf, recvbuf, count, datatype, op, comm, &r_), comm,     \
            count, datatype)                                                                \
    int MPI_Gather##S(const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void     \
        *recvbuf, COUNT recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)          \
        COLLECTIVE(PMPI_Gather##S(sendbuf, sendcount, sendtype, recvbuf, recvcount,         \
            recvtype, root, comm), PMPI_Igather##S(sendbuf, sendcount, sendtype, recvbuf,   \
            recvcount, recvtype, root, comm, &r_), comm, -1, MPI_BYTE)                      \
    int MPI_Scatter##S(const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void    \
        *recvbuf, COUNT recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)          \
        COLLECTIVE(PMPI_Scatter##S(sendbuf, sendcount, sendtype, recvbuf, recvcount,        \
            recvtype, root, comm), PMPI_Iscatter##S(sendbuf, sendcount, sendtype, recvbuf,  \
            recvcount, recvtype, root, comm, &r_), comm, -1, MPI_BYTE)                      \
    int MPI_Allgather##S(const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void  \
        *recvbuf, COUNT recvcount, MPI_Datatype recvtype, MPI_Comm comm)                    \
        COLLECTIVE(PMPI_Allgather##S(sendbuf, sendcount, sendtype, recvbuf, recvcount,      \
            recvtype, comm), PMPI_Iallgather##S(sendbuf, sendcount, sendtype, recvbuf,      \
            recvcount, recvtype, comm, &r_), comm, recvcount, recvtype)                     \
    int MPI_Alltoall##S(const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void   \
        *recvbuf, COUNT recvcount, MPI_Datatype recvtype, MPI_Comm comm)                    \
        COLLECTIVE(PMPI_Alltoall##S(sendbuf, sendcount, sendtype, recvbuf, recvcount,       \
            recvtype, comm), PMPI_Ialltoall##S(sendbuf, sendcount, sendtype, recvbuf,       \
            recvcount, recvtype, comm, &r_), comm, recvcount, recvtype)                     \
    int MPI_Gatherv##S(const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void    \
        *recvbuf, const COUNTS recvcounts[], const DISPLS displs[], MPI_Datatype recvtype,  \
        int root, MPI_Comm comm)                                                            \
        COLLECTIVE(PMPI_Gatherv##S(sendbuf, sendcount, sendtype, recvbuf, recvcounts,       \
            displs, recvtype, root, comm), PMPI_Igatherv##S(sendbuf, sendcount, sendtype,   \
            recvbuf, recvcounts, displs, recvtype, root, comm, &r_), comm, -1, MPI_BYTE)    \
    int MPI_Scatterv##S(const void *sendbuf, const COUNTS sendcounts[], const DISPLS        \
        displs[], MPI_Datatype sendtype, void *recvbuf, COUNT recvcount, MPI_Datatype       \
        recvtype, int root, MPI_Comm comm)                                                  \
        COLLECTIVE(PMPI_Scatterv##S(sendbuf, sendcounts, displs, sendtype, recvbuf,         \
            recvcount, recvtype, root, comm), PMPI_Iscatterv##S(sendbuf, sendcounts, displs,\
            sendtype, recvbuf, recvcount, recvtype, root, comm, &r_), comm, -1, MPI_BYTE)   \
    int MPI_Allgatherv##S(const void *sendbuf, COUNT sendcount, MPI_Datatype sendtype, void \
        *recvbuf, const COUNTS recvcounts[], const DISPLS displs[], MPI_Datatype recvtype,  \
        MPI_Comm comm)                                                                      \
        COLLECTIVE(PMPI_Allgatherv##S(sendbuf, sendcount, sendtype, recvbuf, recvcounts,    \
            displs, recvtype, comm), PMPI_Iallgatherv##S(sendbuf, sendcount, sendtype,      \
            recvbuf, recvcounts, displs, recvtype, comm, &r_), comm, -1, MPI_BYTE)          \
    int MPI_Alltoallv##S(const void *sendbuf, const COUNTS sendcounts[], const DISPLS       \
        sdispls[], MPI_Datatype sendtype, void *recvbuf, const COUNTS recvcounts[], const   \
        DISPLS rdispls[], MPI_Datatype recvtype, MPI_Comm comm)                             \
        COLLECTIVE(PMPI_Alltoallv##S(sendbuf, sendcounts, sdispls, sendtype, recvbuf,       \
            recvcounts, rdispls, recvtype, comm), PMPI_Ialltoallv##S(sendbuf, sendcounts,   \
            sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, &r_), comm,    \
            -1, MPI_BYTE)

WRAPPERS(, int, int, int)
/* The large-count forms are MPI-4's, and not in every MPI that reports 4.0 (Open MPI 5 has
 * none): built where the feature check found every one of them. */
#if TB_HAVE_LARGE_COUNT
WRAPPERS(_c, MPI_Count, MPI_Count, MPI_Aint)
#endif

/* A barrier on a communicator whose ranks all live on this host is their meeting on arrival
 * counts (arrival.c); elsewhere as COLLECTIVE. */
int MPI_Barrier(MPI_Comm comm) {
    TB_ENTER(-1);
    if (rec->native_collectives || tb_revoked(comm)) TIMED(PMPI_Barrier(comm))
    struct tb_arrival a;
    /* Peers waiting in a meeting make no progress for this rank while it is inside this
     * barrier and no other call (arrival.c); the agreement on a slot is made by all of them
     * alike. */
    __atomic_add_fetch(&rec->in_meetings, 1, __ATOMIC_SEQ_CST);
    int meet, rc = tb_arrive(&a, rec, comm, wait_agreeing, &meet);
    if (rc == MPI_SUCCESS && meet) {
        /* The last rank to arrive rings, so a meeting's end is announced; but the long safety
         * net is kept to two ranks, as for MPI_Ibarrier: with more, a rank's pending sends to
         * a peer that does not ring would progress only at its wakes. */
        struct tb_ringing ringing = {a.size == 2, MPI_COMM_NULL, 0, -1};
        rc = spin_block(tb_test_arrived, &a, &ringing);
    }
    __atomic_sub_fetch(&rec->in_meetings, 1, __ATOMIC_SEQ_CST);
    if (rc != MPI_SUCCESS || meet) return rc;
    COLLECTIVE_MADE(PMPI_Barrier(comm), PMPI_Ibarrier(comm, &r_), comm, 0, MPI_BYTE)
}

/* The shim's doorbells: a blocked rank sleeps on a futex word in its own record, and its peers
 * ring it when they may have given it something to complete.
 *
 * MPICH's shared-memory progress offers nothing to block on: a rank learns of a message only
 * by testing.  The shim sees both ends of every message, so it makes the wake-up itself:
 *
 * - after posting a send the sender rings the destination;
 * - a large message (more than SMALL_BYTES in shim.c) takes steps in which each side's
 *   progress serves the other (the receiver's handshake lets the sender go on, its
 *   acknowledgement ends the send), so its receiver rings the source when it posts the
 *   receive and when the receive completes (every rank of the communicator for
 *   MPI_ANY_SOURCE, of the job for a receive matched by a probe), its sender rings the
 *   destination again when the send completes, and both ring the other as their waits go, as
 *   the ranks of a collective of two do (below); a wait on requests the shim did not follow
 *   rings, once it completes, the ranks asleep in a call that waits on this one;
 * - a collective rings its partners after its first test (MPICH starts a nonblocking
 *   collective's schedule from the progress engine, so its first messages leave then) and
 *   when it completes; partners are every other rank of a communicator of up to
 *   RING_ALL_MAX ranks, beyond that the ranks at a power of two either way and across, to whom
 *   the usual algorithms (dissemination, recursive doubling, binomial trees) send;
 * - in a collective of two ranks, whose steps each need the other's progress, a rank also
 *   rings the other as its wait goes: while spinning, after tests at doubling times since the
 *   wait began, and while blocked, after the test at each wake, up to RELAYS times after each
 *   ring that announced news (a rank started or finished an operation), so that two blocked
 *   ranks cannot keep waking each other.
 *
 * Ringing a peer that is not asleep costs a fence and a load of a cache line that it writes
 * only when it blocks or unblocks; the futex wake (FUTEX_WAKE on the shared mapping, not
 * FUTEX_PRIVATE) is made only for a peer asleep.
 *
 * A blocked rank tests up to TESTS_PER_WAKE times at each wake: with MPICH 5.0 a nonblocking
 * collective of two ranks was seen to complete only at the test after the one that received
 * its last message (its schedule advances apart from the polling of the message queue), so a
 * single test per wake left it asleep until the safety net.
 *
 * A peer's record is found by its world rank (the node manager names records by run, job and
 * rank) and mapped on first need.  A rank on another host has no record here and cannot ring;
 * neither can an MPI call the shim does not wrap, nor a step inside a peer's progress that no
 * rule above rings for.  While a peer is in a call that MPI completes by polling its own
 * progress (polled.c: RMA synchronization, the collectives the shim does not wrap), a blocked
 * rank sleeps BACKOFF_MIN_NS at most, since that peer may need its progress at any moment.
 * Otherwise every sleep has a timeout, the safety net: a wait whose completion
 * the rings announce (``rung``: a small message from a rank with a record here, a small
 * collective of two such ranks) backs off from NET_FIRST_NS to NET_MAX_NS, using about no
 * CPU; any other backs
 * off from BACKOFF_MIN_NS to BACKOFF_MAX_NS, as the shim's sleep-poll did before it had
 * doorbells, and is woken early where a ring comes.  A large message to or from such a rank
 * is rung at each of its steps above, but its wait backs off too: trusting those rings with
 * the net made a blocking send whose receiver polls with MPI_Test 1.2-1.3x slower under ics
 * than backing off (benchmarks.shim_trees, overlap_test -t 2), though its sleeps ended by
 * rings.
 *
 * A rung wait's net backs off from a short first timeout.  One constant 16 ms timeout was
 * tried (a futex sleep whose timeouts fired before was measured waking later at the next
 * ring, p50 12 us against 4.5 us, and a net from 2 ms fired in waits that the ring ends
 * anyway), but some completions no ring announces: with it, two copies of IMB-MPI1 at MPL 2
 * under ics spent 3.33 s blocked against 1.25 s for 935e0ea's 2 ms first net; with that net
 * back, 1.13 s against 1.02 s (benchmarks.progress_cost, medians; issue 48).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim_record.h"
#include "doorbell.h"

#define BACKOFF_MIN_NS 20000L
#define BACKOFF_MAX_NS 650000L
#define NET_FIRST_NS 2000000L
#define NET_MAX_NS 16000000L
#define RING_ALL_MAX 8
#define RELAYS 4
#define TESTS_PER_WAKE 4

_Static_assert(offsetof(struct tb_record, doorbell) % 64 == 0,
               "the doorbell starts a cache line of its own");

static struct tb_record *own;
static long net_first_ns = NET_FIRST_NS, net_max_ns = NET_MAX_NS;

/* Peers' records by world rank, mapped on first need (peer_tried); NULL where a rank has none
 * on this host.  Only a rank attached to a record of the testbed has peers (world_size > 0). */
static int world_size;
static struct tb_record **peer_records;
static unsigned char *peer_tried;
/* Per world rank: which of its sleeps (its count of ended sleeps + 1) tb_ring_sleeps_on_me
 * last rang, so that a program's polling rings each sleep once. */
static uint64_t *rang_sleep;
static char peer_prefix[224];
static int world_all_here = -1;

static int world_size_from_env(void) {
    const char *names[] = {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v != NULL && atoi(v) > 0) return atoi(v);
    }
    return 0;
}

void tb_doorbell_init(struct tb_record *record, const char *run, const char *job,
                      double net_us) {
    own = record;
    if (net_us > 0.0) net_first_ns = net_max_ns = (long)(net_us * 1e3);
    int size = world_size_from_env();
    if (run == NULL || job == NULL || size <= 0 ||
        snprintf(peer_prefix, sizeof peer_prefix, "/dev/shm/testbed-%s-%s-", run, job) >=
            (int)sizeof peer_prefix)
        return;
    peer_records = calloc((size_t)size, sizeof *peer_records);
    peer_tried = calloc((size_t)size, 1);
    rang_sleep = calloc((size_t)size, sizeof *rang_sleep);
    if (peer_records != NULL && peer_tried != NULL && rang_sleep != NULL) world_size = size;
}

/* The record of world rank ``world`` if it has one on this host (never this rank's own). */
struct tb_record *tb_peer(int world) {
    if (world < 0 || world >= world_size || world == own->rank) return NULL;
    if (!__atomic_load_n(&peer_tried[world], __ATOMIC_ACQUIRE)) {
        char path[256];
        snprintf(path, sizeof path, "%s%d", peer_prefix, world);
        struct tb_record *r = NULL;
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            void *p = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
            r = p == MAP_FAILED ? NULL : p;
            if (r != NULL && (r->magic != TB_MAGIC || r->version != TB_VERSION)) {
                munmap(p, sizeof *r);
                r = NULL;
            }
        }
        peer_records[world] = r;
        __atomic_store_n(&peer_tried[world], 1, __ATOMIC_RELEASE);
    }
    return peer_records[world];
}

/* A communicator's ranks as world ranks (for an intercommunicator, those of the remote group,
 * which point-to-point ranks name), this rank's rank in it, and whether every rank but this
 * one has a record here.  Kept on the communicator as an attribute, so that a freed
 * communicator takes its own along; MPI_COMM_WORLD needs none. */
struct members {
    int all_here;
    int inter;
    int rank;
    int size;
    int world[];
};

static int members_key = MPI_KEYVAL_INVALID;

static int drop_members(MPI_Comm comm, int key, void *value, void *extra) {
    (void)comm, (void)key, (void)extra;
    free(value);
    return MPI_SUCCESS;
}

static struct members *build_members(MPI_Comm comm) {
    int initialized = 0, inter = 0, n = 0, rank = -1;
    MPI_Group group, world_group;
    /* Without MPI_Init (MPI sessions only) there is no MPI_COMM_WORLD to translate to. */
    if (PMPI_Initialized(&initialized) != MPI_SUCCESS || !initialized ||
        PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS ||
        PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        (inter ? PMPI_Comm_remote_group(comm, &group) : PMPI_Comm_group(comm, &group)) !=
            MPI_SUCCESS)
        return NULL;
    struct members *m = NULL;
    if (PMPI_Group_size(group, &n) == MPI_SUCCESS &&
        PMPI_Comm_group(MPI_COMM_WORLD, &world_group) == MPI_SUCCESS) {
        int *ranks = malloc(sizeof(int) * (size_t)n);
        m = malloc(sizeof *m + sizeof(int) * (size_t)n);
        if (ranks != NULL && m != NULL) {
            for (int i = 0; i < n; i++) ranks[i] = i;
            if (PMPI_Group_translate_ranks(group, n, ranks, world_group, m->world) ==
                MPI_SUCCESS) {
                *m = (struct members){.all_here = 1, .inter = inter, .rank = rank, .size = n};
                for (int i = 0; i < n && m->all_here; i++)
                    if (m->world[i] != own->rank && tb_peer(m->world[i]) == NULL) m->all_here = 0;
            } else {
                free(m);
                m = NULL;
            }
        } else {
            free(m);
            m = NULL;
        }
        free(ranks);
        PMPI_Group_free(&world_group);
    }
    PMPI_Group_free(&group);
    return m;
}

/* The members of ``comm`` (NULL for MPI_COMM_WORLD, without peers, or when not known). */
static struct members *members_of(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD || world_size == 0) return NULL;
    if (members_key == MPI_KEYVAL_INVALID &&
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, drop_members, &members_key, NULL) !=
            MPI_SUCCESS)
        return NULL;
    void *value;
    int found = 0;
    if (PMPI_Comm_get_attr(comm, members_key, &value, &found) == MPI_SUCCESS && found)
        return value;
    struct members *m = build_members(comm);
    if (m != NULL && PMPI_Comm_set_attr(comm, members_key, m) != MPI_SUCCESS) {
        free(m);
        m = NULL;
    }
    return m;
}

int tb_world_of(MPI_Comm comm, int rank) {
    if (world_size == 0 || rank < 0) return -1;
    if (comm == MPI_COMM_WORLD) return rank;
    struct members *m = members_of(comm);
    return m != NULL && rank < m->size && m->world[rank] != MPI_UNDEFINED ? m->world[rank] : -1;
}

static int world_here(void) {
    if (world_size == 0) return 0;
    if (world_all_here < 0) {
        int yes = 1;
        for (int r = 0; r < world_size && yes; r++)
            if (r != own->rank && tb_peer(r) == NULL) yes = 0;
        world_all_here = yes;
    }
    return world_all_here;
}

int tb_can_ring_me(MPI_Comm comm, int source) {
    if (world_size == 0 || source == MPI_PROC_NULL) return 0;
    if (source != MPI_ANY_SOURCE) return tb_peer(tb_world_of(comm, source)) != NULL;
    if (comm == MPI_COMM_WORLD) return world_here();
    struct members *m = members_of(comm);
    return m != NULL && !m->inter && m->all_here;
}

int tb_all_can_ring_me(MPI_Comm comm) {
    struct members *m = members_of(comm);
    return comm == MPI_COMM_WORLD ? world_here() : m != NULL && !m->inter && m->all_here;
}

int tb_attached(void) { return world_size > 0; }

int tb_beyond_world(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) return 0;
    struct members *m = members_of(comm);
    if (m == NULL) return 1;
    for (int i = 0; i < m->size; i++)
        if (m->world[i] == MPI_UNDEFINED) return 1;
    return 0;
}

int tb_members_here(MPI_Comm comm, const int **world, int *size, int *me) {
    if (world_size == 0) return 0;
    if (comm == MPI_COMM_WORLD) {
        *world = NULL;
        *size = world_size;
        *me = own->rank;
        return world_size > 1 && world_here();
    }
    struct members *m = members_of(comm);
    if (m == NULL || m->inter || !m->all_here || m->size < 2) return 0;
    *world = m->world;
    *size = m->size;
    *me = m->rank;
    return 1;
}

int tb_size_of(MPI_Comm comm) {
    if (world_size == 0) return 0;
    if (comm == MPI_COMM_WORLD) return world_size;
    struct members *m = members_of(comm);
    return m != NULL && !m->inter ? m->size : 0;
}

/* Ring one peer, if it is asleep: count the news, add 1 to its doorbell and wake it.  Callers
 * fence first: that orders what this rank posted before against the peer's asleep count, as
 * the peer orders raising the count against its last test before sleeping, so either the
 * peer's test sees what was posted or this sees the count. */
static void ring_one(struct tb_record *p, int news) {
    if (p != NULL && __atomic_load_n(&p->asleep, __ATOMIC_RELAXED)) {
        if (news) __atomic_add_fetch(&p->news, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&p->doorbell, 1, __ATOMIC_SEQ_CST);
        syscall(SYS_futex, &p->doorbell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
}

void tb_ring(MPI_Comm comm, int rank) {
    if (world_size == 0 || rank < 0) return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ring_one(tb_peer(tb_world_of(comm, rank)), 1);
}

int tb_asleep(MPI_Comm comm, int rank) {
    struct tb_record *p = world_size == 0 || rank < 0 ? NULL : tb_peer(tb_world_of(comm, rank));
    return p != NULL && __atomic_load_n(&p->asleep, __ATOMIC_SEQ_CST);
}

/* Ring each of ``size`` world ranks (``world``, or 0..size-1 when NULL) that is asleep. */
static void ring_ranks(const int *world, int size, int news) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int i = 0; i < size; i++) ring_one(tb_peer(world != NULL ? world[i] : i), news);
}

void tb_ring_world(void) { ring_ranks(NULL, world_size, 1); }

void tb_ring_source(MPI_Comm comm, int source) {
    if (world_size == 0) return;
    if (source != MPI_ANY_SOURCE) {
        tb_ring(comm, source);
        return;
    }
    struct members *m = members_of(comm);
    if (m != NULL)
        ring_ranks(m->world, m->size, 1);
    else
        ring_ranks(NULL, world_size, 1);
}

void tb_ring_waiting_on_me(void) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int r = 0; r < world_size; r++) {
        struct tb_record *p = tb_peer(r);
        if (p != NULL && __atomic_load_n(&p->waits_on, __ATOMIC_RELAXED) == own->rank)
            ring_one(p, 1);
    }
}

void tb_ring_sleeps_on_me(void) {
    if (world_size == 0) return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&own->step_sleepers, __ATOMIC_RELAXED) == 0) return;
    for (int r = 0; r < world_size; r++) {
        struct tb_record *p = tb_peer(r);
        if (p == NULL || __atomic_load_n(&p->waits_on, __ATOMIC_RELAXED) != own->rank ||
            !__atomic_load_n(&p->asleep, __ATOMIC_RELAXED))
            continue;
        /* Its sleeps so far, plus one: the sleep it is in or about to begin. */
        uint64_t sleep = __atomic_load_n(&p->wakes_rung, __ATOMIC_RELAXED) +
                         __atomic_load_n(&p->wakes_timed, __ATOMIC_RELAXED) + 1;
        if (__atomic_exchange_n(&rang_sleep[r], sleep, __ATOMIC_RELAXED) != sleep)
            ring_one(p, 1);
    }
}

void tb_relay(const struct tb_ringing *ringing) {
    if (ringing->peer < 0) {
        tb_ring_partners(ringing->comm, 0);
        return;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ring_one(tb_peer(ringing->peer), 0);
}

void tb_ring_self(void) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ring_one(own, 1);
}

/* Whether a peer on this host is in a call that MPI completes by polling (polled.c). */
static int peer_polling(void) {
    for (int r = 0; r < world_size; r++) {
        struct tb_record *p = tb_peer(r);
        if (p != NULL && __atomic_load_n(&p->polling, __ATOMIC_SEQ_CST)) return 1;
    }
    return 0;
}

void tb_ring_ranks(const int *world, int size) { ring_ranks(world, size, 1); }

void tb_ring_partners(MPI_Comm comm, int news) {
    if (world_size == 0) return;
    struct members *m = members_of(comm);
    if (comm != MPI_COMM_WORLD && (m == NULL || m->inter)) {
        ring_ranks(NULL, world_size, news); /* an intercommunicator's collectives: both groups */
        return;
    }
    int size = m != NULL ? m->size : world_size, me = m != NULL ? m->rank : own->rank;
    if (size <= RING_ALL_MAX) {
        ring_ranks(m != NULL ? m->world : NULL, size, news);
        return;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int d = 1; d < size; d *= 2) {
        int partners[3] = {(me + d) % size, (me - d + size) % size, me ^ d};
        for (int k = 0; k < 3; k++)
            if (partners[k] < size)
                ring_one(tb_peer(m != NULL ? m->world[partners[k]] : partners[k]), news);
    }
}

/* Sleep on this rank's doorbell until a peer rings it or ``ns`` nanoseconds pass, unless it
 * was rung since it read ``bell``; count how the sleep ended. */
static void sleep_on_doorbell(uint32_t bell, long ns) {
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    if (syscall(SYS_futex, &own->doorbell, FUTEX_WAIT, bell, &ts, NULL, 0) == 0 ||
        errno == EAGAIN)
        own->wakes_rung++;
    else if (errno == ETIMEDOUT)
        own->wakes_timed++;
}

int tb_block(tb_test test, void *ctx, const struct tb_ringing *ringing, int *done) {
    long ns = ringing->rung ? net_first_ns : BACKOFF_MIN_NS;
    long most = ringing->rung ? net_max_ns : BACKOFF_MAX_NS;
    uint32_t news = __atomic_load_n(&own->news, __ATOMIC_RELAXED);
    int relays = RELAYS, woke = 0, rc;
    /* A large message's other end is told that this rank may sleep on its steps (before
     * the tests below: see tb_ring_sleeps_on_me). */
    struct tb_record *other = ringing->relay ? tb_peer(ringing->peer) : NULL;
    if (other != NULL) __atomic_add_fetch(&other->step_sleepers, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&own->asleep, 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* a store-load barrier on every architecture */
    for (;;) {
        uint32_t bell = __atomic_load_n(&own->doorbell, __ATOMIC_ACQUIRE);
        rc = test(ctx, done);
        for (int k = 1; k < TESTS_PER_WAKE && rc == MPI_SUCCESS && !*done; k++)
            rc = test(ctx, done);
        if (rc != MPI_SUCCESS || *done) break;
        if (ringing->relay && woke) {
            uint32_t now = __atomic_load_n(&own->news, __ATOMIC_RELAXED);
            if (now != news) {
                news = now;
                relays = RELAYS;
            }
            if (relays > 0) {
                relays--;
                tb_relay(ringing);
            }
        }
        /* A peer polling inside MPI may need this rank's progress at any moment and cannot
         * ring for it; it rang once when it began, and raised its count before (seq_cst), so
         * a rank that sees no count here is rung. */
        sleep_on_doorbell(bell, peer_polling() ? BACKOFF_MIN_NS : ns);
        woke = 1;
        ns = ns * 2 > most ? most : ns * 2;
    }
    __atomic_sub_fetch(&own->asleep, 1, __ATOMIC_RELAXED);
    if (other != NULL) __atomic_sub_fetch(&other->step_sleepers, 1, __ATOMIC_RELAXED);
    return rc;
}

/* The per-rank shared record of the testbed shim (read by cffi's cdef too: no #include here).
 *
 * One record per rank, a file in /dev/shm created (mode 0600) and removed by the node
 * manager.  The node manager writes the settings; the shim writes the counters.  Times are in
 * seconds; wait times exclude the time the process spent stopped (THESIS §3.4), which the
 * shim learns from stopped_s.  Block and unblock events are also sent as a datagram to the node
 * manager's socket.
 *
 * A blocked rank sleeps on the doorbell at the end of its record (a futex word on this shared
 * mapping); a peer that may have given it something to complete (a send posted, a step of a
 * collective) rings it, if it is asleep: adds 1 and wakes it.  Peers map each other's records
 * by world rank (the same path with their rank); a rank on another host has no record here and
 * cannot ring, so a blocked rank also wakes at a timeout, its safety net.
 *
 * The ranks of a communicator that all live on this host make a barrier by meeting on the
 * arrival counts at the end of their records, blocking as in any wait (arrival.c).
 *
 * The last fields say which MPI call the rank is in, on whom it waits and how many calls have
 * returned, so that the node manager can tell a job whose ranks all wait and none returns (a
 * hang) from one that works.
 */
#define TB_MAGIC 1413632840
#define TB_VERSION 8
#define TB_ARRIVAL_SLOTS 64
#define TB_SPIN_FOREVER 0
#define TB_SPIN_FIXED 1
#define TB_SPIN_ADAPTIVE 2

struct tb_record {
    uint32_t magic;
    uint32_t version;
    uint32_t id;              /* the node manager's index of this record */
    int32_t rank;
    int32_t pid;              /* set by the shim when it attaches */
    int32_t attached;         /* 1 once a shim uses this record */
    char job[32];             /* the job's id in the run */
    char nm_socket[96];       /* abstract Unix datagram socket name of the node manager */
    /* written by the node manager */
    int32_t coscheduled;      /* 1 while the process is scheduled coscheduled (CS or F) */
    int32_t spin_mode;        /* TB_SPIN_FOREVER, TB_SPIN_FIXED or TB_SPIN_ADAPTIVE */
    int32_t native_collectives; /* 1: collectives are always the blocking calls (set before
                                   launch, the same for every rank of a job, never changed) */
    int32_t pad1;
    double spin_fixed_s;
    double spin_max_s;        /* MAX_spin of the adaptive rule */
    double spin_min_s;        /* floor of the adaptive rule */
    double stopped_s;         /* total time stopped by the node manager, added before SIGCONT */
    /* written by the shim */
    uint64_t c_cs;            /* synchronous operations while coscheduled */
    uint64_t c_dc;            /* synchronous operations while not coscheduled */
    double t_cs;              /* their summed wait time */
    double t_dc;
    double max_nonblock_s;    /* longest wait that completed while still spinning */
    uint32_t blocked;         /* 1 while blocked in a wait */
    uint32_t pad0;
    uint64_t block_seq;       /* incremented on every block and unblock */
    uint64_t blocks;
    double blocked_s;         /* total time spent blocked */
    double cpu_s;             /* process CPU time at the last block, unblock or 1024th call */
    double spin_s;            /* spin time in force at the last wait */
    uint64_t wakes_rung;      /* sleeps of a blocked wait ended by the doorbell */
    uint64_t wakes_timed;     /* sleeps of a blocked wait ended by the safety-net timeout */
    double blocked_cpu_s;     /* CPU time used while blocked */
    uint64_t meetings;        /* barriers made as a meeting on arrival counts */
    /* the doorbell, on a cache line of its own (offset 320): peers read it at every send */
    uint32_t doorbell;        /* futex word: peers add 1 when they ring */
    uint32_t asleep;          /* threads of the rank in a blocked wait: peers ring only then */
    uint32_t news;            /* rings that announced a new operation (not a step within one) */
    uint32_t step_sleepers;   /* peers' threads in a blocked wait for a large message to or
                                 from this rank, whose steps need this rank's progress */
    uint32_t pad3[12];
    /* arrival words, one per communicator slot agreed among its ranks (arrival.c), from
       offset 384: (count << 1) | quiet; a rank's count grows by 1 when it enters a barrier,
       quiet when it made no other wrapped call since its previous meeting; its peers wait
       until their counts have reached its own */
    uint32_t arrivals[TB_ARRIVAL_SLOTS];
    /* what the rank is doing in MPI (written by the shim; the node manager tells a hang by
       them): from offset 640 */
    uint64_t calls_done;      /* calls the shim wraps that have returned */
    uint32_t in_calls;        /* threads of the rank inside a call the shim wraps */
    uint32_t polling;         /* threads inside a call that MPI completes by polling its own
                                 progress, which may need its peers' progress (passive-target
                                 RMA, collectives the shim does not wrap): its peers then sleep
                                 only briefly in their blocked waits */
    int32_t waits_on;         /* world rank the call in progress waits on; -1: several, any
                                 or not known */
    uint32_t in_meetings;     /* threads of the rank inside a barrier made as a meeting: a
                                 rank with none, or with in_calls beyond them, may need its
                                 peers' progress */
    char call[32];            /* the MPI function last entered (in progress while in_calls) */
    uint64_t drains;          /* meetings left with progress passes for what peers sent before
                                 they arrived (arrival.c): some peer made a call since its
                                 last meeting that was not a completed blocking collective */
};

struct tb_event {
    uint32_t id;
    uint32_t blocked;
    uint64_t seq;
};

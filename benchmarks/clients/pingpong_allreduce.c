/* Ping-pong and allreduce latency in the style of osu_latency and osu_allreduce.
 *
 * 1. Ranks 0 and 1 play ping-pong with MPI_Send/MPI_Recv for message sizes 0 B, then 1 B
 *    doubling to the maximum; rank 0 prints half the mean round trip (one-way latency).
 * 2. All ranks call MPI_Allreduce (MPI_SUM over floats) for sizes 4 B doubling to the maximum,
 *    each call timed on its own and followed by an untimed barrier; rank 0 prints the mean
 *    over ranks of each rank's mean time per call.
 *
 * Every size starts with a barrier and warm-up; sizes above 8 KiB use a tenth of the
 * iterations and warm-up.  Latencies in microseconds.  Plain MPI, N >= 2 ranks.
 *
 * Usage: mpiexec -n N ./pingpong_allreduce [-i ITERATIONS] [-x WARMUP] [-m MAX_BYTES]
 *        (defaults: -i 10000 -x 1000 for the ping-pong, a tenth of them for the allreduce,
 *        -m 1048576)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LARGE_MESSAGE_SIZE 8192

static void counts(long size, long iterations, long warmup, long *iters, long *skip) {
    *iters = size > LARGE_MESSAGE_SIZE ? (iterations / 10 > 0 ? iterations / 10 : 1) : iterations;
    *skip = size > LARGE_MESSAGE_SIZE ? warmup / 10 : warmup;
}

static void pingpong(int rank, char *sbuf, char *rbuf, long max_size, long iterations,
                     long warmup) {
    if (rank == 0) {
        printf("# MPI Latency Test (osu_latency style, C)\n# %-10s%18s\n", "Size",
               "Latency (us)");
        fflush(stdout);
    }
    for (long size = 0; size <= max_size; size = size ? size * 2 : 1) {
        long iters, skip;
        counts(size, iterations, warmup, &iters, &skip);
        MPI_Barrier(MPI_COMM_WORLD);
        double t_start = 0.0;
        for (long i = 0; i < iters + skip; i++) {
            if (i == skip) t_start = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(sbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(rbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(rbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(sbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            printf("%-12ld%18.2f\n", size, (MPI_Wtime() - t_start) * 1e6 / (2.0 * iters));
            fflush(stdout);
        }
    }
}

static void allreduce(int rank, int nprocs, float *sbuf, float *rbuf, long max_size,
                      long iterations, long warmup) {
    if (rank == 0) {
        printf("# MPI Allreduce Latency Test (osu_allreduce style, C)\n# %-10s%18s\n", "Size",
               "Avg Latency(us)");
        fflush(stdout);
    }
    for (long size = sizeof(float); size <= max_size; size *= 2) {
        long iters, skip;
        counts(size, iterations, warmup, &iters, &skip);
        MPI_Barrier(MPI_COMM_WORLD);
        double timer = 0.0;
        for (long i = 0; i < iters + skip; i++) {
            double t_start = MPI_Wtime();
            MPI_Allreduce(sbuf, rbuf, (int)(size / sizeof(float)), MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
            double t_stop = MPI_Wtime();
            if (i >= skip) timer += t_stop - t_start;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double latency = timer * 1e6 / iters, total = 0.0;
        MPI_Reduce(&latency, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("%-12ld%18.2f\n", size, total / nprocs);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv) {
    long iterations = 10000, warmup = 1000, max_size = 1 << 20;
    int opt;
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((opt = getopt(argc, argv, "i:x:m:")) != -1) {
        switch (opt) {
        case 'i': iterations = atol(optarg); break;
        case 'x': warmup = atol(optarg); break;
        case 'm': max_size = atol(optarg); break;
        default:
            if (rank == 0) fprintf(stderr, "usage: %s [-i ITER] [-x WARMUP] [-m MAX]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
    }
    if (nprocs < 2 || iterations < 1 || warmup < 0 || max_size < (long)sizeof(float)) {
        if (rank == 0) fprintf(stderr, "needs >= 2 ranks, -i >= 1, -x >= 0, -m >= 4\n");
        MPI_Finalize();
        return 2;
    }
    char *sbuf = malloc(max_size), *rbuf = malloc(max_size);
    if (sbuf == NULL || rbuf == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    memset(sbuf, 'a', max_size);
    memset(rbuf, 0, max_size);
    pingpong(rank, sbuf, rbuf, max_size, iterations, warmup);
    long coll_iterations = iterations / 10 > 0 ? iterations / 10 : 1;
    allreduce(rank, nprocs, (float *)sbuf, (float *)rbuf, max_size, coll_iterations,
              warmup / 10);
    MPI_Barrier(MPI_COMM_WORLD);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}

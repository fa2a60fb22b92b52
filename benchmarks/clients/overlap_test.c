/* Communication/computation overlap in the style of OSU's overlap tests and of mpi4py loops
 * of Request.Test: rank 0 posts MPI_Irecv and polls MPI_Test with a little compute between
 * tests; rank 1 sends the message.
 *
 * 1. ``isend_wait``: rank 1 sends with MPI_Isend + MPI_Wait.
 * 2. ``send``: rank 1 sends with a blocking MPI_Send.
 *
 * Each test runs 64 KiB and then 1 MiB messages (both above MPICH's eager limit, so each
 * message needs both ranks' progress), starting each size with a barrier and warm-up; rank 0
 * prints the mean time per message in microseconds (``size time_us`` lines under a ``#``
 * heading per test).  Plain MPI, exactly 2 ranks.
 *
 * Usage: mpiexec -n 2 ./overlap_test [-i ITERATIONS] [-x WARMUP] [-c COMPUTE_US] [-t TEST]
 *        (defaults: -i 200 -x 20 -c 10: 10 us of compute between two tests; -t 1 or 2 runs
 *        only that test, 0 both)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const long SIZES[] = {64 * 1024, 1024 * 1024};

/* Busy work for ``us`` microseconds, as OSU's dummy_compute does. */
static void compute(double us) {
    double until = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < until) {
    }
}

static void overlap(int rank, int blocking_send, char *buf, long iterations, long warmup,
                    double compute_us) {
    if (rank == 0) {
        printf("# Overlap test (%s sender, receiver polls MPI_Test, %.0f us compute)\n"
               "# %-10s%18s\n", blocking_send ? "MPI_Send" : "MPI_Isend+MPI_Wait",
               compute_us, "Size", "Time (us)");
        fflush(stdout);
    }
    for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++) {
        int size = (int)SIZES[s];
        MPI_Barrier(MPI_COMM_WORLD);
        double t_start = 0.0;
        for (long i = 0; i < iterations + warmup; i++) {
            if (i == warmup) t_start = MPI_Wtime();
            if (rank == 0) {
                MPI_Request req;
                int done = 0;
                MPI_Irecv(buf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &req);
                MPI_Test(&req, &done, MPI_STATUS_IGNORE);
                while (!done) {
                    compute(compute_us);
                    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
                }
            } else if (blocking_send) {
                MPI_Send(buf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            } else {
                MPI_Request req;
                MPI_Isend(buf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        }
        double elapsed = MPI_Wtime() - t_start;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            printf("%-12d%18.2f\n", size, elapsed * 1e6 / (double)iterations);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv) {
    long iterations = 200, warmup = 20;
    double compute_us = 10.0;
    int opt, only = 0;
    while ((opt = getopt(argc, argv, "i:x:c:t:")) != -1) {
        if (opt == 'i') iterations = atol(optarg);
        else if (opt == 'x') warmup = atol(optarg);
        else if (opt == 'c') compute_us = atof(optarg);
        else if (opt == 't') only = atoi(optarg);
        else {
            fprintf(stderr, "usage: %s [-i ITERATIONS] [-x WARMUP] [-c COMPUTE_US] [-t TEST]\n",
                    argv[0]);
            return 2;
        }
    }
    if (iterations < 1 || warmup < 0 || compute_us < 0 || only < 0 || only > 2) {
        fprintf(stderr, "%s: -i must be at least 1, -x and -c at least 0, -t 0, 1 or 2\n",
                argv[0]);
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 2) {
        if (rank == 0) fprintf(stderr, "%s: needs exactly 2 ranks, got %d\n", argv[0], nprocs);
        MPI_Finalize();
        return 2;
    }
    char *buf = malloc((size_t)SIZES[sizeof SIZES / sizeof SIZES[0] - 1]);
    if (buf == NULL) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, rank, (size_t)SIZES[sizeof SIZES / sizeof SIZES[0] - 1]);
    if (only != 2) overlap(rank, 0, buf, iterations, warmup, compute_us);
    if (only != 1) overlap(rank, 1, buf, iterations, warmup, compute_us);
    free(buf);
    MPI_Finalize();
    return 0;
}

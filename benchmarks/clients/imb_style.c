/* A small MPI benchmark in the style of the Intel MPI Benchmarks (IMB-MPI1), for hosts without
 * them: PingPong between ranks 0 and 1, then Allreduce, Barrier and Alltoall on every rank,
 * message sizes 0, 1, 2, 4, ... up to 2^MAXLOG bytes, each size timed over ITER repetitions
 * after a barrier.  It prints IMB's tables ("# Benchmarking NAME", then one line per size:
 * bytes, repetitions, t_min, t_max, t_avg in microseconds; PingPong: bytes, repetitions,
 * t[usec], Mbytes/sec; Barrier without the bytes), so one reader takes both.
 *
 * Usage: imb_style [-iter N] [-msglog MAXLOG]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double timed(int iter, int (*step)(char *, char *, int, int), char *a, char *b,
                    int bytes, int peer) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iter; i++) step(a, b, bytes, peer);
    return (MPI_Wtime() - t0) * 1e6 / iter;
}

static int pingpong(char *a, char *b, int bytes, int peer) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        MPI_Send(a, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        return MPI_Recv(b, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 1) {
        MPI_Recv(b, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return MPI_Send(a, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
    }
    return MPI_SUCCESS;
}

static int allreduce(char *a, char *b, int bytes, int peer) {
    (void)peer;
    return MPI_Allreduce(a, b, bytes / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static int barrier(char *a, char *b, int bytes, int peer) {
    (void)a, (void)b, (void)bytes, (void)peer;
    return MPI_Barrier(MPI_COMM_WORLD);
}

static int alltoall(char *a, char *b, int bytes, int peer) {
    (void)peer;
    return MPI_Alltoall(a, bytes, MPI_BYTE, b, bytes, MPI_BYTE, MPI_COMM_WORLD);
}

/* Print one row: the minimum, maximum and mean over the ranks of ``t`` (us). */
static void row(const char *name, int bytes, int iter, double t, int rank, int size) {
    double lo, hi, sum;
    MPI_Reduce(&t, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank != 0) return;
    if (strcmp(name, "Barrier") == 0)
        printf("%13d %12.2f %12.2f %12.2f\n", iter, lo, hi, sum / size);
    else
        printf("%12d %13d %12.2f %12.2f %12.2f\n", bytes, iter, lo, hi, sum / size);
}

int main(int argc, char **argv) {
    int iter = 1000, maxlog = 10, rank, size;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "-iter") == 0) iter = atoi(argv[i + 1]);
        if (strcmp(argv[i], "-msglog") == 0) maxlog = atoi(argv[i + 1]);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t most = ((size_t)1 << maxlog) * (size_t)size;
    char *a = calloc(most, 1), *b = calloc(most, 1);
    if (size >= 2) {
        if (rank == 0) printf("# Benchmarking PingPong\n");
        for (int bytes = 0; bytes <= 1 << maxlog; bytes = bytes ? 2 * bytes : 1) {
            double t = timed(iter, pingpong, a, b, bytes, 1 - rank) / 2;
            if (rank == 0) printf("%12d %13d %12.2f %12.2f\n", bytes, iter, t, bytes / t);
        }
    }
    if (rank == 0) printf("# Benchmarking Allreduce\n");
    for (int bytes = 4; bytes <= 1 << maxlog; bytes *= 2)
        row("Allreduce", bytes, iter, timed(iter, allreduce, a, b, bytes, 0), rank, size);
    if (rank == 0) printf("# Benchmarking Barrier\n");
    row("Barrier", 0, iter, timed(iter, barrier, a, b, 0, 0), rank, size);
    if (rank == 0) printf("# Benchmarking Alltoall\n");
    for (int bytes = 0; bytes <= 1 << maxlog; bytes = bytes ? 2 * bytes : 1)
        row("Alltoall", bytes, iter, timed(iter, alltoall, a, b, bytes, 0), rank, size);
    free(a);
    free(b);
    return MPI_Finalize();
}

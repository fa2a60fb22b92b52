/* The time of one call of a few small collectives, in a loop: MPI_Allreduce of 8 bytes, the
 * same as MPI_Iallreduce + MPI_Wait, and MPI_Barrier.  Rank 0 prints one line per call,
 * "name microseconds" (the mean over the ranks of each rank's mean time a call).
 *
 * Plain MPI, N >= 2 ranks: mpiexec -n N collective_cost [-i ITERATIONS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static double in = 1.0, out;

static void allreduce(void) { MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); }

static void iallreduce(void) {
    MPI_Request r;
    MPI_Iallreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

static void barrier(void) { MPI_Barrier(MPI_COMM_WORLD); }

int main(int argc, char **argv) {
    long iterations = 20000;
    int opt, rank, nprocs;
    MPI_Init(&argc, &argv);
    while ((opt = getopt(argc, argv, "i:")) != -1)
        if (opt == 'i') iterations = atol(optarg);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2 || iterations < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n N>=2 %s [-i ITERATIONS>=1]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    struct { const char *name; void (*call)(void); } calls[] = {
        {"allreduce_us", allreduce}, {"iallreduce_us", iallreduce}, {"barrier_us", barrier}};
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        for (long i = 0; i < iterations / 10; i++) calls[c].call();
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < iterations; i++) calls[c].call();
        double mine = (MPI_Wtime() - t0) / (double)iterations * 1e6, total = 0.0;
        MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("%s %.4f\n", calls[c].name, total / nprocs);
    }
    MPI_Finalize();
    return 0;
}

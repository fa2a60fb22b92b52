/* The smallest MPI job: every rank initialises MPI and finalises it, nothing else.  What a
 * launcher and the testbed add to it is the cost of starting an MPI job.
 *
 * Usage: mpiexec -n N ./init_finalize
 */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Finalize();
    return 0;
}

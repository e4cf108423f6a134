/* mpi_allreduce.c: the C baseline of bench/mpi_allreduce.ad: MPI_Allreduce
 * (sum, in place) of 1 MB of float32, mean of 200 after 5 warm-ups. */
#include <mpi.h>
#include <stdio.h>

#define N 262144
static float x[N];

int main(int argc, char **argv)
{
    int r;
    double t0, t;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    for (int i = 0; i < 5; i++)
        MPI_Allreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < 200; i++)
        MPI_Allreduce(MPI_IN_PLACE, x, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t = (MPI_Wtime() - t0) / 200;
    if (r == 0)
        printf("c_mpi_allreduce_1MB 2 %.3e\n", t);
    MPI_Finalize();
    return 0;
}

/* host.c: a host program that runs MPI itself and hands its communicator to
 * addsl (docs/mpi.md, "Embedding"). It splits MPI_COMM_WORLD into two halves
 * by rank parity: each state sees only its half, and after addsl_close MPI is
 * still initialised (the library never finalises a host's MPI).
 * Run by tests/mpi/embed.sh on 4 ranks; prints one line per rank, then "ok". */
#include <addsl.h>
#include <mpi.h>
#include <stdio.h>

static int fail(addsl_state *S, const char *what)
{
    fprintf(stderr, "host: %s: %s\n", what, S ? addsl_errmsg(S) : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

int main(int argc, char **argv)
{
    int world_rank, finalized = 0, inited = 0;
    MPI_Comm half;
    addsl_config cfg;
    addsl_state *S;
    addsl_tensor *y = NULL;
    double v;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);

    addsl_config_init(&cfg);
    cfg.mpi_comm = &half;
    S = addsl_open(&cfg);
    if (!S)
        return fail(NULL, "addsl_open");
    if (addsl_mpi_size(S) != 2)
        return fail(S, "addsl_mpi_size is not the half's size");
    /* Sum of the world ranks in this half: 0+2 or 1+3. */
    char code[128];
    snprintf(code, sizeof code, "let y = allreduce(tensor([%d.0], dtype=float64)); print(mpi_rank(), mpi_size(), all_ranks=true)", world_rank);
    if (addsl_dostring(S, code, "<host>") != ADDSL_OK)
        return fail(S, "allreduce");
    if (addsl_get_tensor(S, "y", &y) != ADDSL_OK || addsl_tensor_item(S, y, &v) != ADDSL_OK)
        return fail(S, "y");
    addsl_tensor_release(S, y);
    addsl_close(S);
    if (v != (world_rank % 2 == 0 ? 2.0 : 4.0))
        return fail(NULL, "wrong sum over the half");
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return fail(NULL, "addsl_close finalised the host's MPI");
    MPI_Comm_free(&half);
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("ok\n");
    MPI_Finalize();
    return 0;
}

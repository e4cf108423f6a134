/* mpi_api.h: the function table of the loadable MPI module (addsl_mpi.so).
 *
 * libmpi and its dependencies (open-rte, open-pal, hwloc, libevent, udev)
 * cost ~2 ms of every start when linked into addsl; only the module links
 * them, and builtins/system/mpi_lazy.c opens it when a state needs MPI. The table
 * speaks plain C (no MPI type crosses it: Open MPI's handles are pointers,
 * MPICH's ints), so the core compiles without mpi.h. Every int result is an
 * MPI error code, 0 (MPI_SUCCESS) when it worked; error_string spells it. */
#ifndef ADDSL_MPI_API_H
#define ADDSL_MPI_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised when the table changes; the core refuses an older module. */
#define ADDSL_MPI_API_VERSION 1

enum { ADDSL_MPI_F32, ADDSL_MPI_F64, ADDSL_MPI_I64 };
enum { ADDSL_MPI_SUM, ADDSL_MPI_MAX, ADDSL_MPI_MIN };

/* A communicator the module allocated: the host's, or MPI_COMM_WORLD. */
typedef struct addsl_mpi_comm addsl_mpi_comm;

typedef struct addsl_mpi_api {
    int version;
    /* Whether MPI_Init ran, and whether MPI_Finalize ran. */
    void (*status)(int *initialized, int *finalized);
    /* MPI_Init_thread(FUNNELED); MPI_COMM_WORLD's errors then come back as codes. */
    int (*init)(void);
    int (*finalize)(void);
    /* A copy of the host's MPI_Comm at 'host_comm', or MPI_COMM_WORLD when it
     * is NULL; NULL when out of memory. comm_free frees the copy only. */
    addsl_mpi_comm *(*comm_new)(const void *host_comm);
    void (*comm_free)(addsl_mpi_comm *c);
    int (*rank)(addsl_mpi_comm *c, int *rank);
    int (*size)(addsl_mpi_comm *c, int *size);
    /* In place over n elements of type ADDSL_MPI_F32/F64/I64. */
    int (*allreduce)(addsl_mpi_comm *c, void *buf, int n, int type, int op);
    int (*bcast)(addsl_mpi_comm *c, void *buf, int n, int type, int root);
    /* MPI_Allgather of n int64 from each rank into recv (n * size). */
    int (*allgather_i64)(addsl_mpi_comm *c, const int64_t *send, int n, int64_t *recv);
    /* MPI_Allgatherv of rows of row_bytes bytes (at most INT_MAX): 'rows'
     * from this rank, counts[q] rows from rank q placed at row displs[q]. */
    int (*allgatherv_rows)(addsl_mpi_comm *c, const void *send, int rows, size_t row_bytes, void *recv,
                           const int *counts, const int *displs);
    /* MPI_Exscan of one int64 under sum (rank 0's result undefined). */
    int (*exscan_i64)(addsl_mpi_comm *c, const int64_t *send, int64_t *recv);
    void (*error_string)(int code, char *buf, size_t n);
    /* MPI_Abort of MPI_COMM_WORLD. */
    int (*abort_world)(int status);
} addsl_mpi_api;

const addsl_mpi_api *addsl_mpi_get_api(void);

#ifdef __cplusplus
}
#endif

#endif

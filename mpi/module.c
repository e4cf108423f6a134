/* module.c: the loadable MPI module (addsl_mpi.so): thin wrappers over MPI
 * behind the table of mpi_api.h. The policy (when to initialise, agreeing on
 * sizes before a collective, splitting counts above INT_MAX) stays in
 * builtins/bi_mpi.c, so that this file is all the code that needs mpi.h. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpi_api.h"

#define EXPORT __attribute__((visibility("default")))

struct addsl_mpi_comm { MPI_Comm comm; };

static MPI_Datatype dtype(int type) {
    return type == ADDSL_MPI_F32 ? MPI_FLOAT : type == ADDSL_MPI_F64 ? MPI_DOUBLE : MPI_INT64_T;
}

static void m_status(int *initialized, int *finalized) {
    *initialized = 0;
    *finalized = 0;
    MPI_Initialized(initialized);
    MPI_Finalized(finalized);
}

static int m_init(void) {
    int provided;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    /* Our own world: failures come back as codes, reported as script errors. */
    if (rc == MPI_SUCCESS) (void)MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return rc;
}

static int m_finalize(void) { return MPI_Finalize(); }

static addsl_mpi_comm *m_comm_new(const void *host_comm) {
    addsl_mpi_comm *c = malloc(sizeof *c);
    if (c) c->comm = host_comm ? *(const MPI_Comm *)host_comm : MPI_COMM_WORLD;
    return c;
}

static void m_comm_free(addsl_mpi_comm *c) { free(c); }

static int m_rank(addsl_mpi_comm *c, int *rank) { return MPI_Comm_rank(c->comm, rank); }
static int m_size(addsl_mpi_comm *c, int *size) { return MPI_Comm_size(c->comm, size); }

static int m_allreduce(addsl_mpi_comm *c, void *buf, int n, int type, int op) {
    MPI_Op o = op == ADDSL_MPI_MAX ? MPI_MAX : op == ADDSL_MPI_MIN ? MPI_MIN : MPI_SUM;
    return MPI_Allreduce(MPI_IN_PLACE, buf, n, dtype(type), o, c->comm);
}

static int m_bcast(addsl_mpi_comm *c, void *buf, int n, int type, int root) {
    return MPI_Bcast(buf, n, dtype(type), root, c->comm);
}

static int m_allgather_i64(addsl_mpi_comm *c, const int64_t *send, int n, int64_t *recv) {
    return MPI_Allgather(send, n, MPI_INT64_T, recv, n, MPI_INT64_T, c->comm);
}

static int m_allgatherv_rows(addsl_mpi_comm *c, const void *send, int rows, size_t row_bytes, void *recv,
                             const int *counts, const int *displs) {
    if (row_bytes > INT_MAX) return MPI_ERR_COUNT;
    MPI_Datatype row;
    int rc = MPI_Type_contiguous((int)row_bytes, MPI_BYTE, &row);
    if (rc != MPI_SUCCESS) return rc;
    rc = MPI_Type_commit(&row);
    if (rc == MPI_SUCCESS) rc = MPI_Allgatherv(send, rows, row, recv, counts, displs, row, c->comm);
    MPI_Type_free(&row);
    return rc;
}

static int m_exscan_i64(addsl_mpi_comm *c, const int64_t *send, int64_t *recv) {
    return MPI_Exscan(send, recv, 1, MPI_INT64_T, MPI_SUM, c->comm);
}

static void m_error_string(int code, char *buf, size_t n) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", code);
    snprintf(buf, n, "%s", msg);
}

static int m_abort_world(int status) { return MPI_Abort(MPI_COMM_WORLD, status); }

static const addsl_mpi_api API = {
    .version = ADDSL_MPI_API_VERSION,
    .status = m_status,
    .init = m_init,
    .finalize = m_finalize,
    .comm_new = m_comm_new,
    .comm_free = m_comm_free,
    .rank = m_rank,
    .size = m_size,
    .allreduce = m_allreduce,
    .bcast = m_bcast,
    .allgather_i64 = m_allgather_i64,
    .allgatherv_rows = m_allgatherv_rows,
    .exscan_i64 = m_exscan_i64,
    .error_string = m_error_string,
    .abort_world = m_abort_world,
};

EXPORT const addsl_mpi_api *addsl_mpi_get_api(void) { return &API; }

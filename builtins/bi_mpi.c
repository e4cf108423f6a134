/* bi_mpi.c: ranks and collectives over MPI (docs/mpi.md).
 *
 * The communicator hangs off the state: the host's (addsl_config.mpi_comm,
 * never initialised nor finalised here), MPI_COMM_WORLD when the process was
 * started by an MPI launcher (MPI is then initialised at addsl_open and
 * finalised at addsl_close), else none: one rank. MPI itself lives in a
 * module (mpi/mpi_api.h) loaded only in the first two cases, so a plain
 * process never loads libmpi. Built without MPI, every state is one rank and
 * the collectives copy their input.
 *
 * The raw builtins here are out of place and not differentiable; lib/mpi.ad
 * wraps them in ops with gradients and in the in-place allreduce/broadcast.
 * Each collective first agrees on a small header (sizes, dtype, op, root) so
 * that ranks that disagree get the same error instead of a hang or a crash. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "tensor/device.h"
#include "system/mpi_lazy.h"
#include "state.h"

#define FN_ARGS ad_state *S, ad_value *argv, int argc, ad_value *out

#ifdef HAVE_MPI
#define BUILT_WITH_MPI true
#else
#define BUILT_WITH_MPI false
#endif

struct ad_mpi {
    int rank, size;
    bool owns_init;     /* this state called MPI_Init: it calls MPI_Finalize */
    bool broken;        /* the communicator is unusable: every MPI builtin fails with 'why' */
    bool tried;         /* the module was looked for (api is NULL when it did not load) */
    const addsl_mpi_api *api;
    addsl_mpi_comm *comm; /* NULL: one rank */
    char why[512];
};

enum { RED_SUM, RED_MAX, RED_MIN, RED_MEAN };

int ad_mpi_rank(const ad_state *S) { return S->mpi ? S->mpi->rank : 0; }
int ad_mpi_size(const ad_state *S) { return S->mpi ? S->mpi->size : 1; }

int addsl_mpi_rank(addsl_state *S) { return S ? ad_mpi_rank(S) : 0; }
int addsl_mpi_size(addsl_state *S) { return S ? ad_mpi_size(S) : 1; }

/* Launchers export these to their ranks (Open MPI, MPICH/Hydra, PMIx/Slurm). */
static bool under_launcher(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

static const addsl_mpi_api *module(struct ad_mpi *m) {
    if (!m->tried) {
        m->tried = true;
        m->api = BUILT_WITH_MPI ? ad_mpi_module_load(m->why, sizeof m->why) : NULL;
    }
    return m->api;
}

static void set_broken(struct ad_mpi *m, const char *why) {
    m->broken = true;
    snprintf(m->why, sizeof m->why, "%s", why);
}

static int mpi_fail(ad_state *S, int rc, const char *what) {
    char msg[512];
    S->mpi->api->error_string(rc, msg, sizeof msg);
    return ad_error(S, "%s: MPI failed on rank %d: %s", what, ad_mpi_rank(S), msg);
}

int ad_mpi_open(ad_state *S) {
    struct ad_mpi *m = ad_calloc(S, 1, sizeof *m);
    if (!m) return ADDSL_ENOMEM;
    m->rank = 0;
    m->size = 1;
    S->mpi = m;
    /* Only a host's communicator or a launcher's ranks need MPI now. */
    if (!BUILT_WITH_MPI || (!S->cfg.mpi_comm && !under_launcher())) return ADDSL_OK;
    const addsl_mpi_api *api = module(m);
    if (!api) { m->broken = true; return ADDSL_OK; }
    int inited = 0, finalized = 0;
    api->status(&inited, &finalized);
    if (S->cfg.mpi_comm) {
        if (!inited || finalized) {
            set_broken(m, "addsl_config.mpi_comm is set but MPI is not initialised (the host calls MPI_Init first)");
            return ADDSL_OK;
        }
    } else if (inited || finalized) {
        return ADDSL_OK; /* the host runs MPI itself but gave no communicator: one rank */
    } else if (api->init() != 0) {
        set_broken(m, "MPI_Init failed: the ranks cannot talk to each other");
        return ADDSL_OK;
    } else {
        m->owns_init = true;
    }
    m->comm = api->comm_new(S->cfg.mpi_comm);
    if (!m->comm) return ADDSL_ENOMEM;
    if (api->rank(m->comm, &m->rank) != 0 || api->size(m->comm, &m->size) != 0) {
        m->rank = 0;
        m->size = 1;
        api->comm_free(m->comm);
        m->comm = NULL;
        set_broken(m, "addsl_config.mpi_comm is not a valid communicator");
    }
    return ADDSL_OK;
}

void ad_mpi_close(ad_state *S) {
    struct ad_mpi *m = S->mpi;
    if (!m) return;
    if (m->api) {
        int inited = 0, finalized = 0;
        m->api->status(&inited, &finalized);
        if (m->owns_init && !finalized) m->api->finalize();
        if (m->comm) m->api->comm_free(m->comm);
    }
    ad_free(S, m);
    S->mpi = NULL;
}

int addsl_mpi_abort(addsl_state *S, int status) {
    struct ad_mpi *m = S ? S->mpi : NULL;
    if (!m || !m->comm || m->size < 2) return ADDSL_OK;
    int inited = 0, finalized = 0;
    m->api->status(&inited, &finalized);
    if (inited && !finalized) m->api->abort_world(status);
    return ADDSL_OK;
}

static bool active(const ad_state *S) { return S->mpi && S->mpi->comm; }

static int mpi_type(ad_dtype dt) {
    return dt == AD_FLOAT32 ? ADDSL_MPI_F32 : dt == AD_FLOAT64 ? ADDSL_MPI_F64 : ADDSL_MPI_I64;
}

enum { KIND_ALLREDUCE = 1, KIND_BROADCAST, KIND_ALL_GATHER, KIND_BARRIER, KIND_OFFSET };
static const char *const kind_names[] = {"?", "allreduce", "broadcast", "all_gather", "barrier", "all_gather's backward"};

/* Every collective starts here, with the same message whatever it is, so that
 * ranks in different collectives, or in one with different sizes or
 * arguments, all get the same error instead of a hang or a crash: one
 * allreduce of (v, -v) under MAX gives both the largest and the smallest. */
static int agree(ad_state *S, int kind, int64_t a, int64_t b, int64_t c, bool *same) {
    int64_t buf[8] = {kind, a, b, c, -kind, -a, -b, -c};
    const char *fn = kind_names[kind];
    int rc = S->mpi->api->allreduce(S->mpi->comm, buf, 8, ADDSL_MPI_I64, ADDSL_MPI_MAX);
    if (rc) return mpi_fail(S, rc, fn);
    if (buf[0] != -buf[4]) {
        int hi = (int)buf[0], lo = (int)-buf[4];
        if (lo < 1 || hi > KIND_OFFSET) return ad_error(S, "%s: the ranks are not all in the same collective", fn);
        return ad_error(S, "%s: the ranks are not all in the same collective (one is in %s, another in %s)", fn,
                        kind_names[lo], kind_names[hi]);
    }
    *same = true;
    for (int i = 1; i < 4; i++) if (buf[i] != -buf[4 + i]) *same = false;
    return ADDSL_OK;
}

/* A contiguous CPU copy of t that the collective may overwrite. */
static ad_tensor *host_copy(ad_state *S, ad_tensor *t) {
    if (ad_tensor_device(t) == AD_DEV_CPU) return ad_tensor_clone(S, t);
    ad_tensor *h = ad_tensor_to_device(S, t, AD_DEV_CPU);
    if (!h) return NULL;
    ad_tensor *c = ad_tensor_contiguous(S, h);
    ad_tensor_decref(S, h);
    return c;
}

/* r (a CPU result) back on t's device; steals r. */
static int ret_on_device(ad_state *S, ad_tensor *r, const ad_tensor *like, ad_value *out) {
    if (r && ad_tensor_device(like) != AD_DEV_CPU) {
        ad_tensor *d = ad_tensor_to_device(S, r, ad_tensor_device(like));
        ad_tensor_decref(S, r);
        r = d;
    }
    return ad_ret_tensor(S, r, out);
}

static int collective_tensor(ad_state *S, ad_value v, const char *fn, ad_tensor **out) {
    int rc = ad_arg_tensor(S, v, fn, "tensor", out);
    if (rc) return rc;
    if ((*out)->dtype == AD_BOOL) {
        ad_tensor_decref(S, *out);
        return ad_error(S, "%s: a bool tensor cannot be reduced or sent (float32, float64 or int64)", fn);
    }
    return ADDSL_OK;
}

#define CHECK_BROKEN() do { if (S->mpi && S->mpi->broken) return ad_error(S, "%s", S->mpi->why); } while (0)

static int bi_mpi_rank(FN_ARGS) { (void)argv; (void)argc; CHECK_BROKEN(); *out = ad_int(ad_mpi_rank(S)); return ADDSL_OK; }
static int bi_mpi_size(FN_ARGS) { (void)argv; (void)argc; CHECK_BROKEN(); *out = ad_int(ad_mpi_size(S)); return ADDSL_OK; }

static int bi_barrier(FN_ARGS) {
    (void)argv; (void)argc;
    CHECK_BROKEN();
    if (active(S)) {
        /* An allreduce lets no rank out before every rank is in: a barrier. */
        bool same;
        int rc = agree(S, KIND_BARRIER, 0, 0, 0, &same);
        if (rc) return rc;
    }
    *out = ad_none();
    return ADDSL_OK;
}

/* mpi_allreduce(tensor, op), raw (lib/mpi.ad makes the op): a new tensor, the element-wise reduction over ranks. */
static int bi_allreduce_raw(FN_ARGS) {
    (void)argc;
    CHECK_BROKEN();
    const char *name;
    int rc = ad_arg_str(S, argv[1], "allreduce", "op", &name);
    if (rc) return rc;
    int red = !strcmp(name, "sum") ? RED_SUM : !strcmp(name, "max") ? RED_MAX : !strcmp(name, "min") ? RED_MIN
            : !strcmp(name, "mean") ? RED_MEAN : -1;
    if (red < 0) return ad_error(S, "allreduce: op must be \"sum\", \"max\", \"min\" or \"mean\", got \"%s\"", name);
    ad_tensor *t;
    if ((rc = collective_tensor(S, argv[0], "allreduce", &t))) return rc;
    if (red == RED_MEAN && !ad_dtype_is_float(t->dtype)) {
        ad_tensor_decref(S, t);
        return ad_error(S, "allreduce: op=\"mean\" needs a floating point tensor, got %s", ad_dtype_name(t->dtype));
    }
    ad_tensor *r = host_copy(S, t);
    if (r && active(S)) {
        bool same;
        rc = agree(S, KIND_ALLREDUCE, r->numel, r->dtype, red, &same);
        if (!rc && !same)
            rc = ad_error(S, "allreduce: the ranks passed tensors of different sizes or dtypes, or different ops");
        static const int ops[] = {[RED_SUM] = ADDSL_MPI_SUM, [RED_MAX] = ADDSL_MPI_MAX, [RED_MIN] = ADDSL_MPI_MIN,
                                  [RED_MEAN] = ADDSL_MPI_SUM};
        char *p = ad_tensor_data(r);
        size_t esz = ad_dtype_size(r->dtype);
        for (int64_t done = 0; !rc && done < r->numel;) {
            int n = r->numel - done > INT_MAX ? INT_MAX : (int)(r->numel - done);
            int e = S->mpi->api->allreduce(S->mpi->comm, p + (size_t)done * esz, n, mpi_type(r->dtype), ops[red]);
            if (e) rc = mpi_fail(S, e, "allreduce");
            done += n;
        }
        if (!rc && red == RED_MEAN) {
            double inv = 1.0 / S->mpi->size;
            for (int64_t i = 0; i < r->numel; i++)
                if (r->dtype == AD_FLOAT32) ((float *)p)[i] = (float)(((float *)p)[i] * inv);
                else ((double *)p)[i] *= inv;
        }
        if (rc) { ad_tensor_decref(S, r); r = NULL; }
    }
    rc = ret_on_device(S, r, t, out);
    ad_tensor_decref(S, t);
    return rc;
}

/* mpi_broadcast(tensor, root), raw: a new tensor holding root's values on every rank. */
static int bi_broadcast_raw(FN_ARGS) {
    (void)argc;
    CHECK_BROKEN();
    int64_t root;
    int rc = ad_arg_int(S, argv[1], "broadcast", "root", &root);
    if (rc) return rc;
    if (root < 0 || root >= ad_mpi_size(S))
        return ad_error(S, "broadcast: root %lld is not a rank (mpi_size() is %d)", (long long)root, ad_mpi_size(S));
    ad_tensor *t;
    if ((rc = collective_tensor(S, argv[0], "broadcast", &t))) return rc;
    ad_tensor *r = host_copy(S, t);
    if (r && active(S)) {
        bool same;
        rc = agree(S, KIND_BROADCAST, r->numel, r->dtype, root, &same);
        if (!rc && !same)
            rc = ad_error(S, "broadcast: the ranks passed tensors of different sizes or dtypes, or different roots");
        char *p = ad_tensor_data(r);
        size_t esz = ad_dtype_size(r->dtype);
        for (int64_t done = 0; !rc && done < r->numel;) {
            int n = r->numel - done > INT_MAX ? INT_MAX : (int)(r->numel - done);
            int e = S->mpi->api->bcast(S->mpi->comm, p + (size_t)done * esz, n, mpi_type(r->dtype), (int)root);
            if (e) rc = mpi_fail(S, e, "broadcast");
            done += n;
        }
        if (rc) { ad_tensor_decref(S, r); r = NULL; }
    }
    rc = ret_on_device(S, r, t, out);
    ad_tensor_decref(S, t);
    return rc;
}

static int norm_dim(ad_state *S, const char *fn, int64_t dim, int ndim, int64_t *out) {
    if (ndim == 0) return ad_error(S, "%s: a 0-d tensor has no dimension to split or join", fn);
    if (dim < -ndim || dim >= ndim)
        return ad_error(S, "Dimension out of range (expected to be in range of [%d, %d], but got %lld)", -ndim, ndim - 1,
                        (long long)dim);
    *out = dim < 0 ? dim + ndim : dim;
    return ADDSL_OK;
}

/* The concatenation along dim 0 of every rank's contiguous 'h' (same trailing shape). */
static ad_tensor *allgather_rows(ad_state *S, ad_tensor *h) {
    int size = S->mpi->size;
    int64_t head[2 + AD_MAX_DIMS] = {h->ndim, h->dtype};
    for (int i = 1; i < h->ndim; i++) head[1 + i] = h->shape[i];
    head[1 + AD_MAX_DIMS] = h->shape[0];
    int64_t *all = ad_malloc(S, sizeof head * (size_t)size);
    int *counts = ad_malloc(S, sizeof(int) * 2 * (size_t)size);
    ad_tensor *r = NULL;
    if (!all || !counts) goto done;
    int e = S->mpi->api->allgather_i64(S->mpi->comm, head, 2 + AD_MAX_DIMS, all);
    if (e) { mpi_fail(S, e, "all_gather"); goto done; }
    int64_t rows = 0;
    for (int q = 0; q < size; q++) {
        const int64_t *o = all + (size_t)q * (2 + AD_MAX_DIMS);
        if (memcmp(o, all, sizeof(int64_t) * (1 + AD_MAX_DIMS)) != 0) {
            ad_error(S, "all_gather: rank %d's tensor differs from rank 0's in dtype, rank or a size other than the "
                        "gathered dimension's", q);
            goto done;
        }
        if (o[1 + AD_MAX_DIMS] > INT_MAX) { ad_error(S, "all_gather: more than %d rows on rank %d", INT_MAX, q); goto done; }
        counts[q] = (int)o[1 + AD_MAX_DIMS];
        counts[size + q] = (int)rows;
        rows += o[1 + AD_MAX_DIMS];
        if (rows > INT_MAX) { ad_error(S, "all_gather: more than %d rows in all", INT_MAX); goto done; }
    }
    int64_t shape[AD_MAX_DIMS];
    memcpy(shape, h->shape, sizeof(int64_t) * (size_t)h->ndim);
    shape[0] = rows;
    r = ad_tensor_empty(S, h->dtype, h->ndim, shape);
    if (!r) goto done;
    int64_t row_elems = 1;
    for (int i = 1; i < h->ndim; i++) row_elems *= h->shape[i];
    if (row_elems == 0 || rows == 0) goto done;
    size_t row_bytes = (size_t)row_elems * ad_dtype_size(h->dtype);
    if (row_bytes > INT_MAX) {
        ad_error(S, "all_gather: a row of %zu bytes is too large for one MPI message", row_bytes);
        ad_tensor_decref(S, r); r = NULL;
        goto done;
    }
    e = S->mpi->api->allgatherv_rows(S->mpi->comm, ad_tensor_data(h), (int)h->shape[0], row_bytes, ad_tensor_data(r),
                                     counts, counts + size);
    if (e) { mpi_fail(S, e, "all_gather"); ad_tensor_decref(S, r); r = NULL; }
done:
    ad_free(S, all);
    ad_free(S, counts);
    return r;
}

/* all_gather(tensor, dim), raw: every rank's tensor joined along dim, on every rank. */
static int bi_all_gather_raw(FN_ARGS) {
    (void)argc;
    CHECK_BROKEN();
    int64_t dim;
    ad_tensor *t;
    int rc = ad_arg_int(S, argv[1], "all_gather", "dim", &dim);
    if (rc || (rc = collective_tensor(S, argv[0], "all_gather", &t))) return rc;
    if ((rc = norm_dim(S, "all_gather", dim, t->ndim, &dim))) { ad_tensor_decref(S, t); return rc; }
    ad_tensor *r = NULL;
    bool same = true;
    if (active(S) && !(rc = agree(S, KIND_ALL_GATHER, t->ndim, t->dtype, dim, &same)) && !same)
        rc = ad_error(S, "all_gather: the ranks passed tensors of different dtypes or numbers of dimensions, or different dims");
    if (rc) { ad_tensor_decref(S, t); return rc; }
    if (active(S)) {
        /* Gathered along dim 0 of a copy with dim moved to the front, then moved back. */
        ad_tensor *h = host_copy(S, t), *moved = NULL, *hc = NULL, *g = NULL, *back = NULL;
        if (h) moved = ad_tensor_transpose(S, h, 0, dim);
        if (moved) hc = ad_tensor_contiguous(S, moved);
        if (hc) g = allgather_rows(S, hc);
        if (g) back = ad_tensor_transpose(S, g, 0, dim);
        if (back) r = ad_tensor_contiguous(S, back);
        ad_tensor_decref(S, h); ad_tensor_decref(S, moved); ad_tensor_decref(S, hc);
        ad_tensor_decref(S, g); ad_tensor_decref(S, back);
    } else
        r = host_copy(S, t);
    rc = ret_on_device(S, r, t, out);
    ad_tensor_decref(S, t);
    return rc;
}

/* mpi_offset(n): the sum of n over the ranks before this one (0 on rank 0). */
static int bi_mpi_offset(FN_ARGS) {
    (void)argc;
    CHECK_BROKEN();
    int64_t n, before = 0;
    int rc = ad_arg_int(S, argv[0], "mpi_offset", "n", &n);
    if (rc) return rc;
    if (active(S)) {
        bool same;
        if ((rc = agree(S, KIND_OFFSET, 0, 0, 0, &same))) return rc;
        int e = S->mpi->api->exscan_i64(S->mpi->comm, &n, &before);
        if (e) return mpi_fail(S, e, "mpi_offset");
        if (S->mpi->rank == 0) before = 0; /* MPI leaves rank 0's result undefined */
    }
    *out = ad_int((double)before);
    return ADDSL_OK;
}

/* mpi_is_available(): whether this build has MPI and its module loads (a
 * script may still run as one rank). Loading does not initialise MPI. */
static int bi_mpi_is_available(FN_ARGS) {
    (void)argv; (void)argc;
    *out = ad_bool(S->mpi && module(S->mpi) != NULL);
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_mpi_defs[] = {
    {"mpi_rank", bi_mpi_rank, "",
     "This process's rank, 0 to mpi_size() - 1 (0 in a plain process without mpirun)."
     "\nExample: if mpi_rank() == 0 { print(\"first rank\") }"},
    {"mpi_size", bi_mpi_size, "",
     "The number of ranks running the script (1 in a plain process without mpirun)."
     "\nExample: print(mpi_size())"},
    {"mpi_is_available", bi_mpi_is_available, "",
     "Whether this addsl was built with MPI (configure --with-mpi); without it the collectives act as one rank."
     "\nExample: print(mpi_is_available())"},
    {"barrier", bi_barrier, "",
     "Waits until every rank has called barrier() (collective); returns none."
     "\nExample: barrier()"},
    {"mpi_allreduce", bi_allreduce_raw, "tensor, op=\"sum\""},
    {"mpi_broadcast", bi_broadcast_raw, "tensor, root=0"},
    {"all_gather", bi_all_gather_raw, "tensor, dim=0"},
    {"mpi_offset", bi_mpi_offset, "n",
     "The index at which this rank's part of n items starts when they are split as shard() "
     "splits them (torch.tensor_split's rule: the first n % size ranks get one more); 0 on one rank."
     "\nExample: mpi_offset(10)"},
    {NULL, NULL, NULL}
};

/* bi_lapack.c: the raw LAPACK factorisations behind lib/linalg_factor.ad
 * (cholesky, qr, svd, eigh, triangular solve, lu), batched, no derivatives;
 * each is reachable as ad_NAME once the library's op NAME replaces it. */
#include <math.h>
#include <string.h>

#include "system/blas_lazy.h"
#include "builtins.h"
#include "state.h"

/* LAPACK takes int dimensions; larger matrices are refused up front. */
#define LAPACK_DIM_MAX (1 << 20)

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* A batch of float matrices [..., m, n]; 'fn' is torch's "linalg.x". */
static int check_matrix(ad_state *S, const ad_tensor *a, const char *fn, bool square) {
    if (a->ndim < 2)
        return ad_error(S, "%s: The input tensor A must have at least 2 dimensions.", fn);
    int64_t r = a->shape[a->ndim - 2], c = a->shape[a->ndim - 1];
    if (square && r != c)
        return ad_error(S, "%s: A must be batches of square matrices, but they are %lld by %lld matrices",
                        fn, (long long)r, (long long)c);
    if (!ad_dtype_is_float(a->dtype))
        return ad_error(S, "%s: Expected a floating point or complex tensor as input. Got %s", fn,
                        ad_torch_dtype_name(a->dtype));
    if (r > LAPACK_DIM_MAX || c > LAPACK_DIM_MAX) return ad_error(S, "%s: matrix too large", fn);
    return ADDSL_OK;
}

/* check_matrix, then the library the factorisation calls, in 'lp'. */
static int lapack_matrix(ad_state *S, const ad_tensor *a, const char *fn, bool square,
                         const ad_blas_api **lp) {
    int rc = check_matrix(S, a, fn, square);
    if (rc) return rc;
    *lp = ad_blas_api_get(S, fn);
    return *lp ? ADDSL_OK : S->errcode;
}

static int64_t batch_of(const ad_tensor *a, int core) {
    int64_t nb = 1;
    for (int i = 0; i < a->ndim - core; i++) nb *= a->shape[i];
    return nb;
}

/* A float64 contiguous [..., n, m] copy of 't' [..., m, n]: each matrix of
 * 't' in LAPACK's column-major order. */
static ad_tensor *colmajor(ad_state *S, ad_tensor *t) {
    ad_tensor *tt = ad_tensor_transpose(S, t, -1, -2);
    if (!tt) return NULL;
    ad_tensor *c = ad_tensor_empty(S, AD_FLOAT64, tt->ndim, tt->shape);
    if (c && ad_tensor_copy_into(S, c, tt)) { ad_tensor_decref(S, c); c = NULL; }
    ad_tensor_decref(S, tt);
    return c;
}

/* A new contiguous [batch..., r, c] float64 tensor, batch dims from 'a'. */
static ad_tensor *batch_new(ad_state *S, const ad_tensor *a, int core, int nd, const int64_t *tail) {
    int64_t shp[AD_MAX_DIMS];
    int nb = a->ndim - core;
    memcpy(shp, a->shape, sizeof(int64_t) * (size_t)nb);
    if (nd) memcpy(shp + nb, tail, sizeof(int64_t) * (size_t)nd);   /* tail may be NULL for none */
    return ad_tensor_zeros(S, AD_FLOAT64, nb + nd, shp);
}

static ad_tensor *int_batch_new(ad_state *S, const ad_tensor *a, int core, int nd, const int64_t *tail) {
    int64_t shp[AD_MAX_DIMS];
    int nb = a->ndim - core;
    memcpy(shp, a->shape, sizeof(int64_t) * (size_t)nb);
    if (nd) memcpy(shp + nb, tail, sizeof(int64_t) * (size_t)nd);   /* tail may be NULL for none */
    return ad_tensor_zeros(S, AD_INT64, nb + nd, shp);
}

/* Returns the tensors as a tuple, each converted to 'dt' unless it is int64;
 * the references in 'ts' are consumed either way. */
static int ret_tuple(ad_state *S, int n, ad_tensor **ts, ad_dtype dt, ad_value *out) {
    int rc = ADDSL_OK;
    for (int i = 0; i < n && !rc; i++) {
        if (!ts[i]) { rc = ad_fail(S); break; }
        if (ts[i]->dtype == AD_INT64 || ts[i]->dtype == dt) continue;
        ad_tensor *c = ad_tensor_to(S, ts[i], dt);
        ad_tensor_decref(S, ts[i]);
        ts[i] = c;
        if (!c) rc = ad_fail(S);
    }
    ad_list *l = rc ? NULL : ad_list_new(S, AD_TTUPLE, n);
    if (!rc && !l) rc = ad_fail(S);
    if (rc) {
        for (int i = 0; i < n; i++) ad_tensor_decref(S, ts[i]);
        return rc;
    }
    for (int i = 0; i < n; i++) l->items[i] = ad_tensor_value(ts[i]);
    *out = ad_list_value(l, AD_TTUPLE);
    return ADDSL_OK;
}

static void put_all(ad_state *S, int n, ad_tensor **ts) {
    for (int i = 0; i < n; i++) { ad_tensor_decref(S, ts[i]); ts[i] = NULL; }
}

/* ---- cholesky ------------------------------------------------------------ */

/* linalg_cholesky_ex(A, upper, check_errors) -> (L or U, info): reads A's lower
 * triangle, as torch does; info > 0 names the first leading minor that is not
 * positive-definite (an error with check_errors). */
static int bi_cholesky(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *fn = "linalg.cholesky";
    ad_tensor *a, *o[2] = {NULL, NULL};
    bool upper, check;
    int rc = ad_arg_bool(S, argv[1], fn, "upper", &upper);
    if (!rc) rc = ad_arg_bool(S, argv[2], fn, "check_errors", &check);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "A", &a);
    if (rc) return rc;
    const ad_blas_api *lp;
    if ((rc = lapack_matrix(S, a, fn, true, &lp))) goto done;
    int n = (int)a->shape[a->ndim - 1], ld = imax(n, 1), info = 0;
    int64_t nb = batch_of(a, 2);
    ad_tensor *c = colmajor(S, a);
    o[1] = int_batch_new(S, a, 2, 0, NULL);
    if (!c || !o[1]) { ad_tensor_decref(S, c); rc = ad_fail(S); goto done; }
    double *d = ad_tensor_data(c);
    for (int64_t b = 0; b < nb && n; b++) {
        double *m = d + b * n * n;
        lp->dpotrf_("L", &n, m, &ld, &info);
        if (info < 0) { ad_tensor_decref(S, c); rc = ad_error(S, "LAPACK potrf failed (argument %d)", -info); goto done; }
        ad_tensor_set_flat(o[1], b, info);
        if (info > 0 && check) {
            ad_tensor_decref(S, c);
            if (nb > 1)
                rc = ad_error(S, "%s: (Batch element %lld): The factorization could not be completed because the "
                              "input is not positive-definite (the leading minor of order %d is not positive-definite).",
                              fn, (long long)b, info);
            else
                rc = ad_error(S, "%s: The factorization could not be completed because the input is not "
                              "positive-definite (the leading minor of order %d is not positive-definite).", fn, info);
            goto done;
        }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < j; i++) m[(int64_t)j * n + i] = 0;   /* strict upper part of column-major L */
    }
    /* The buffer read row-major is L^T = U. */
    if (upper) {
        o[0] = c;
    } else {
        ad_tensor *ct = ad_tensor_transpose(S, c, -1, -2);
        o[0] = ct ? ad_tensor_clone(S, ct) : NULL;
        ad_tensor_decref(S, ct);
        ad_tensor_decref(S, c);
    }
    if (!o[0]) { rc = ad_fail(S); goto done; }
    rc = ret_tuple(S, 2, o, a->dtype, out);
    o[0] = o[1] = NULL;
done:
    put_all(S, 2, o);
    ad_tensor_decref(S, a);
    return rc;
}

/* ---- qr ------------------------------------------------------------------- */

/* linalg_qr(A, mode) -> (Q, R), mode "reduced", "complete" or "r" (Q empty). */
static int bi_qr(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *fn = "linalg.qr", *mode;
    ad_tensor *a, *o[2] = {NULL, NULL}, *c = NULL;
    int rc = ad_arg_str(S, argv[1], fn, "mode", &mode);
    if (rc) return rc;
    bool complete = !strcmp(mode, "complete"), ronly = !strcmp(mode, "r");
    if (!complete && !ronly && strcmp(mode, "reduced"))
        return ad_error(S, "qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or 'complete'", mode);
    if ((rc = ad_arg_tensor(S, argv[0], fn, "A", &a))) return rc;
    double *tau = NULL, *work = NULL, *qa = NULL;
    const ad_blas_api *lp;
    if ((rc = lapack_matrix(S, a, fn, false, &lp))) goto done;
    int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = imin(m, n), ld = imax(m, 1);
    int rr = complete ? m : k, qc = complete ? m : k, info = 0, lwork = -1;
    int64_t nb = batch_of(a, 2);
    int64_t rt[2] = {rr, n}, qt[2] = {m, qc}, zero = 0;
    c = colmajor(S, a);
    o[1] = batch_new(S, a, 2, 2, rt);
    o[0] = ronly ? ad_tensor_zeros(S, AD_FLOAT64, 1, &zero) : batch_new(S, a, 2, 2, qt);
    int cols = imax(n, qc);
    tau = ad_malloc(S, sizeof(double) * (size_t)(k + 1));
    qa = ad_malloc(S, sizeof(double) * (size_t)ld * (size_t)imax(cols, 1));
    if (!c || !o[0] || !o[1] || !tau || !qa) { rc = ad_fail(S); goto done; }
    double q1 = 0, q2 = 0;
    lp->dgeqrf_(&m, &n, qa, &ld, tau, &q1, &lwork, &info);
    if (!ronly) lp->dorgqr_(&m, &qc, &k, qa, &ld, tau, &q2, &lwork, &info);
    lwork = imax(imax((int)q1, (int)q2), imax(cols, 1));
    if (!(work = ad_malloc(S, sizeof(double) * (size_t)lwork))) { rc = ad_fail(S); goto done; }
    const double *src = ad_tensor_data(c);
    double *R = ad_tensor_data(o[1]), *Q = ronly ? NULL : ad_tensor_data(o[0]);
    for (int64_t b = 0; b < nb; b++) {
        memcpy(qa, src + b * (int64_t)m * n, sizeof(double) * (size_t)m * (size_t)n);
        if (k) lp->dgeqrf_(&m, &n, qa, &ld, tau, work, &lwork, &info);
        if (info < 0) { rc = ad_error(S, "LAPACK geqrf failed (argument %d)", -info); goto done; }
        double *Rb = R + b * (int64_t)rr * n;
        for (int i = 0; i < rr; i++)
            for (int j = i; j < n; j++) Rb[(int64_t)i * n + j] = qa[(int64_t)j * m + i];
        if (ronly) continue;
        lp->dorgqr_(&m, &qc, &k, qa, &ld, tau, work, &lwork, &info);
        if (info < 0) { rc = ad_error(S, "LAPACK orgqr failed (argument %d)", -info); goto done; }
        double *Qb = Q + b * (int64_t)m * qc;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < qc; j++) Qb[(int64_t)i * qc + j] = qa[(int64_t)j * m + i];
    }
    rc = ret_tuple(S, 2, o, a->dtype, out);
    o[0] = o[1] = NULL;
done:
    ad_free(S, tau);
    ad_free(S, work);
    ad_free(S, qa);
    put_all(S, 2, o);
    ad_tensor_decref(S, c);
    ad_tensor_decref(S, a);
    return rc;
}

/* ---- the signs of singular and eigen vectors --------------------------------- */

/* LAPACK leaves each vector's sign to its algorithm; the library fixes it so
 * that other implementations (export_c's Jacobi iterations in C,
 * vm/export/lower_eig.c, which applies the same rule) give the same vectors: the
 * first component larger in magnitude than 1/(2 sqrt(n)) is positive (a unit
 * vector has one of at least 1/sqrt(n), so the rule always picks one, away
 * from the ties of "the largest component"). True: v (n components, stride
 * st) is to be negated. */
static bool sign_flip(const double *v, int64_t n, int64_t st) {
    double lim = 0.5 / sqrt((double)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++)
        if (fabs(v[i * st]) > lim) return v[i * st] < 0;
    return false;
}

/* ---- svd ------------------------------------------------------------------ */

static void set_eye(double *p, int r, int c) {
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++) p[(int64_t)i * c + j] = i == j;
}

/* linalg_svd(A, full_matrices) -> (U, S, Vh), S descending (LAPACK gesdd). */
static int bi_svd(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *fn = "linalg.svd";
    ad_tensor *a, *o[3] = {NULL, NULL, NULL}, *c = NULL;
    bool full;
    int rc = ad_arg_bool(S, argv[1], fn, "full_matrices", &full);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "A", &a);
    if (rc) return rc;
    double *work = NULL, *u = NULL, *vt = NULL;
    int *iwork = NULL;
    const ad_blas_api *lp;
    if ((rc = lapack_matrix(S, a, fn, false, &lp))) goto done;
    int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = imin(m, n);
    int uc = full ? m : k, vr = full ? n : k, ldu = imax(m, 1), ldvt = imax(vr, 1), lda = imax(m, 1);
    int info = 0, lwork = -1;
    int64_t nb = batch_of(a, 2), ut[2] = {m, uc}, st[1] = {k}, vt2[2] = {vr, n};
    c = colmajor(S, a);
    o[0] = batch_new(S, a, 2, 2, ut);
    o[1] = batch_new(S, a, 2, 1, st);
    o[2] = batch_new(S, a, 2, 2, vt2);
    u = ad_malloc(S, sizeof(double) * (size_t)imax(m * uc, 1));
    vt = ad_malloc(S, sizeof(double) * (size_t)imax(vr * n, 1));
    iwork = ad_malloc(S, sizeof(int) * (size_t)(8 * k + 1));
    if (!c || !o[0] || !o[1] || !o[2] || !u || !vt || !iwork) { rc = ad_fail(S); goto done; }
    const char *jobz = full ? "A" : "S";
    double *src = ad_tensor_data(c), *U = ad_tensor_data(o[0]), *Sv = ad_tensor_data(o[1]), *V = ad_tensor_data(o[2]);
    if (k == 0) {   /* nothing to factor: the full bases are identities */
        for (int64_t b = 0; b < nb; b++) {
            set_eye(U + b * (int64_t)m * uc, m, uc);
            set_eye(V + b * (int64_t)vr * n, vr, n);
        }
        goto finish;
    }
    double q = 0;
    lp->dgesdd_(jobz, &m, &n, src, &lda, Sv, u, &ldu, vt, &ldvt, &q, &lwork, iwork, &info);
    lwork = imax((int)q, 1);
    if (!(work = ad_malloc(S, sizeof(double) * (size_t)lwork))) { rc = ad_fail(S); goto done; }
    for (int64_t b = 0; b < nb; b++) {
        lp->dgesdd_(jobz, &m, &n, src + b * (int64_t)m * n, &lda, Sv + b * k, u, &ldu, vt, &ldvt, work, &lwork,
                iwork, &info);
        if (info < 0) { rc = ad_error(S, "LAPACK gesdd failed (argument %d)", -info); goto done; }
        if (info > 0) { rc = ad_error(S, "%s: The algorithm failed to converge because the input matrix is "
                                      "ill-conditioned or has too many repeated singular values (error code: %d).", fn, info);
            goto done; }
        double *Ub = U + b * (int64_t)m * uc, *Vb = V + b * (int64_t)vr * n;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < uc; j++) Ub[(int64_t)i * uc + j] = u[(int64_t)j * m + i];
        for (int i = 0; i < vr; i++)
            for (int j = 0; j < n; j++) Vb[(int64_t)i * n + j] = vt[(int64_t)j * vr + i];
        /* the pair (U's column j, Vh's row j) by U's column: A = U S Vh is kept */
        for (int j = 0; j < k; j++)
            if (sign_flip(Ub + j, m, uc)) {
                for (int i = 0; i < m; i++) Ub[(int64_t)i * uc + j] = -Ub[(int64_t)i * uc + j];
                for (int i = 0; i < n; i++) Vb[(int64_t)j * n + i] = -Vb[(int64_t)j * n + i];
            }
    }
finish:
    rc = ret_tuple(S, 3, o, a->dtype, out);
    o[0] = o[1] = o[2] = NULL;
done:
    ad_free(S, work);
    ad_free(S, u);
    ad_free(S, vt);
    ad_free(S, iwork);
    put_all(S, 3, o);
    ad_tensor_decref(S, c);
    ad_tensor_decref(S, a);
    return rc;
}

/* ---- eigh ----------------------------------------------------------------- */

/* linalg_eigh(A, UPLO) -> (eigenvalues ascending, eigenvectors as columns). */
static int bi_eigh(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *fn = "linalg.eigh", *uplo;
    ad_tensor *a, *o[2] = {NULL, NULL}, *c = NULL;
    int rc = ad_arg_str(S, argv[1], fn, "UPLO", &uplo);
    if (rc) return rc;
    if (strcmp(uplo, "L") && strcmp(uplo, "U") && strcmp(uplo, "l") && strcmp(uplo, "u"))
        return ad_error(S, "Expected UPLO argument to be 'L' or 'U', but got %s", uplo);
    if ((rc = ad_arg_tensor(S, argv[0], fn, "A", &a))) return rc;
    double *work = NULL;
    int *iwork = NULL;
    const ad_blas_api *lp;
    if ((rc = lapack_matrix(S, a, fn, true, &lp))) goto done;
    int n = (int)a->shape[a->ndim - 1], ld = imax(n, 1), info = 0, lwork = -1, liwork = -1, qi = 0;
    int64_t nb = batch_of(a, 2), wt[1] = {n};
    /* The column-major copy holds A itself, so UPLO means what it says. */
    char ul[2] = {(char)(uplo[0] == 'l' || uplo[0] == 'L' ? 'L' : 'U'), 0};
    c = colmajor(S, a);
    o[0] = batch_new(S, a, 2, 1, wt);
    if (!c || !o[0]) { rc = ad_fail(S); goto done; }
    double *d = ad_tensor_data(c), *w = ad_tensor_data(o[0]), q = 0;
    if (n) {
        lp->dsyevd_("V", ul, &n, d, &ld, w, &q, &lwork, &qi, &liwork, &info);
        lwork = imax((int)q, 1);
        liwork = imax(qi, 1);
        work = ad_malloc(S, sizeof(double) * (size_t)lwork);
        iwork = ad_malloc(S, sizeof(int) * (size_t)liwork);
        if (!work || !iwork) { rc = ad_fail(S); goto done; }
    }
    for (int64_t b = 0; b < nb && n; b++) {
        lp->dsyevd_("V", ul, &n, d + b * (int64_t)n * n, &ld, w + b * n, work, &lwork, iwork, &liwork, &info);
        if (info < 0) { rc = ad_error(S, "LAPACK syevd failed (argument %d)", -info); goto done; }
        if (info > 0) { rc = ad_error(S, "%s: The algorithm failed to converge because the input matrix is "
                                      "ill-conditioned or has too many repeated eigenvalues (error code: %d).", fn, info);
            goto done; }
        /* column j of the column-major result is eigenvector j */
        for (int j = 0; j < n; j++) {
            double *vj = d + b * (int64_t)n * n + (int64_t)j * n;
            if (sign_flip(vj, n, 1)) for (int i = 0; i < n; i++) vj[i] = -vj[i];
        }
    }
    ad_tensor *ct = ad_tensor_transpose(S, c, -1, -2);
    o[1] = ct ? ad_tensor_clone(S, ct) : NULL;
    ad_tensor_decref(S, ct);
    if (!o[1]) { rc = ad_fail(S); goto done; }
    rc = ret_tuple(S, 2, o, a->dtype, out);
    o[0] = o[1] = NULL;
done:
    ad_free(S, work);
    ad_free(S, iwork);
    put_all(S, 2, o);
    ad_tensor_decref(S, c);
    ad_tensor_decref(S, a);
    return rc;
}

/* ---- triangular solve ----------------------------------------------------- */

/* linalg_solve_triangular(A, B, upper, unitriangular) -> X with A X = B; A is
 * [..., n, n] and B [..., n, k] with the same batch dims (the library
 * broadcasts them). A zero on the diagonal gives inf/nan, as in torch. */
static int bi_solve_triangular(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *fn = "linalg.solve_triangular";
    ad_tensor *a = NULL, *bm = NULL, *ca = NULL, *cb = NULL, *x = NULL;
    bool upper, unit;
    int rc = ad_arg_bool(S, argv[2], fn, "upper", &upper);
    if (!rc) rc = ad_arg_bool(S, argv[3], fn, "unitriangular", &unit);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "A", &a);
    if (!rc) rc = ad_arg_tensor(S, argv[1], fn, "B", &bm);
    if (rc) goto done;
    const ad_blas_api *lp;
    if ((rc = check_matrix(S, a, fn, true)) || (rc = lapack_matrix(S, bm, fn, false, &lp))) goto done;
    if (a->dtype != bm->dtype) {
        rc = ad_error(S, "%s: Expected A and B to have the same dtype, but found A of type %s and B of type %s instead",
                      fn, ad_torch_dtype_name(a->dtype), ad_torch_dtype_name(bm->dtype));
        goto done;
    }
    int n = (int)a->shape[a->ndim - 1], k = (int)bm->shape[bm->ndim - 1];
    if (bm->ndim != a->ndim || bm->shape[bm->ndim - 2] != n ||
        !ad_shape_equal(a->ndim - 2, a->shape, bm->ndim - 2, bm->shape)) {
        rc = ad_error(S, "%s: Incompatible shapes of A and B for the equation AX = B (%lldx%lld and %lldx%lld)", fn,
                      (long long)n, (long long)n, (long long)bm->shape[bm->ndim - 2], (long long)k);
        goto done;
    }
    ca = colmajor(S, a);
    cb = colmajor(S, bm);
    if (!ca || !cb) { rc = ad_fail(S); goto done; }
    int64_t nb = batch_of(a, 2);
    int ld = imax(n, 1);
    double one = 1, *da = ad_tensor_data(ca), *db = ad_tensor_data(cb);
    for (int64_t b = 0; b < nb && n && k; b++)
        lp->dtrsm_("L", upper ? "U" : "L", "N", unit ? "U" : "N", &n, &k, &one, da + b * (int64_t)n * n, &ld,
               db + b * (int64_t)n * k, &ld);
    ad_tensor *t = ad_tensor_transpose(S, cb, -1, -2);
    x = t ? ad_tensor_empty(S, a->dtype, t->ndim, t->shape) : NULL;
    if (x && ad_tensor_copy_into(S, x, t)) { ad_tensor_decref(S, x); x = NULL; }
    ad_tensor_decref(S, t);
    if (!x) rc = ad_fail(S);
done:
    ad_tensor_decref(S, a);
    ad_tensor_decref(S, bm);
    ad_tensor_decref(S, ca);
    ad_tensor_decref(S, cb);
    if (rc) { ad_tensor_decref(S, x); return rc; }
    return ad_ret_tensor(S, x, out);
}

/* ---- lu ------------------------------------------------------------------- */

/* linalg_lu_factor_ex(A) -> (LU, pivots, info): partial pivoting, pivots 1-based as
 * LAPACK and torch give them; info > 0 marks an exactly zero pivot U[i-1, i-1]. */
static int bi_lu_factor(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *fn = "linalg.lu_factor";
    ad_tensor *a, *o[3] = {NULL, NULL, NULL};
    int rc = ad_arg_tensor(S, argv[0], fn, "A", &a);
    if (rc) return rc;
    int *piv = NULL;
    const ad_blas_api *lp;
    if ((rc = lapack_matrix(S, a, fn, false, &lp))) goto done;
    int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = imin(m, n), ld = imax(m, 1), info = 0;
    int64_t nb = batch_of(a, 2), pt[1] = {k};
    o[0] = colmajor(S, a);
    o[1] = int_batch_new(S, a, 2, 1, pt);
    o[2] = int_batch_new(S, a, 2, 0, NULL);
    piv = ad_malloc(S, sizeof(int) * (size_t)(k + 1));
    if (!o[0] || !o[1] || !o[2] || !piv) { rc = ad_fail(S); goto done; }
    double *d = ad_tensor_data(o[0]);
    for (int64_t b = 0; b < nb && k; b++) {
        lp->dgetrf_(&m, &n, d + b * (int64_t)m * n, &ld, piv, &info);
        if (info < 0) { rc = ad_error(S, "LAPACK getrf failed (argument %d)", -info); goto done; }
        for (int i = 0; i < k; i++) ad_tensor_set_flat(o[1], b * k + i, piv[i]);
        ad_tensor_set_flat(o[2], b, info);
    }
    ad_tensor *t = ad_tensor_transpose(S, o[0], -1, -2);
    ad_tensor *lu = t ? ad_tensor_clone(S, t) : NULL;
    ad_tensor_decref(S, t);
    ad_tensor_decref(S, o[0]);
    o[0] = lu;
    if (!lu) { rc = ad_fail(S); goto done; }
    rc = ret_tuple(S, 3, o, a->dtype, out);
    o[0] = o[1] = o[2] = NULL;
done:
    ad_free(S, piv);
    put_all(S, 3, o);
    ad_tensor_decref(S, a);
    return rc;
}

/* ---- geqrf ---------------------------------------------------------------- */

/* geqrf(A) -> (a, tau): LAPACK's packed QR, R on and above the diagonal and the
 * Householder vectors below it (torch.geqrf; householder_product rebuilds Q). */
static int bi_geqrf(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *fn = "geqrf";
    ad_tensor *a, *o[2] = {NULL, NULL};
    int rc = ad_arg_tensor(S, argv[0], fn, "input", &a);
    if (rc) return rc;
    double *work = NULL;
    const ad_blas_api *lp;
    if ((rc = lapack_matrix(S, a, fn, false, &lp))) goto done;
    int m = (int)a->shape[a->ndim - 2], n = (int)a->shape[a->ndim - 1], k = imin(m, n), ld = imax(m, 1);
    int info = 0, lwork = -1;
    int64_t nb = batch_of(a, 2), tt[1] = {k};
    o[0] = colmajor(S, a);
    o[1] = batch_new(S, a, 2, 1, tt);
    if (!o[0] || !o[1]) { rc = ad_fail(S); goto done; }
    double *d = ad_tensor_data(o[0]), *tau = ad_tensor_data(o[1]), q = 0;
    if (k) {
        lp->dgeqrf_(&m, &n, d, &ld, tau, &q, &lwork, &info);
        lwork = imax((int)q, imax(n, 1));
        if (!(work = ad_malloc(S, sizeof(double) * (size_t)lwork))) { rc = ad_fail(S); goto done; }
    }
    for (int64_t b = 0; b < nb && k; b++) {
        lp->dgeqrf_(&m, &n, d + b * (int64_t)m * n, &ld, tau + b * k, work, &lwork, &info);
        if (info < 0) { rc = ad_error(S, "LAPACK geqrf failed (argument %d)", -info); goto done; }
    }
    ad_tensor *t = ad_tensor_transpose(S, o[0], -1, -2);
    ad_tensor *r = t ? ad_tensor_clone(S, t) : NULL;
    ad_tensor_decref(S, t);
    ad_tensor_decref(S, o[0]);
    o[0] = r;
    if (!r) { rc = ad_fail(S); goto done; }
    rc = ret_tuple(S, 2, o, a->dtype, out);
    o[0] = o[1] = NULL;
done:
    ad_free(S, work);
    put_all(S, 2, o);
    ad_tensor_decref(S, a);
    return rc;
}

/* rs_named_tuple(type, fields, values): 'values' as a torch.return_types tuple, for
 * the library's composites that return one (svd, lu_unpack, lstsq, ...). */
#define NAMED_FIELDS_MAX 8
static int bi_named_tuple(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *type, *fields[NAMED_FIELDS_MAX];
    int rc = ad_arg_str(S, argv[0], "rs_named_tuple", "type", &type);
    if (rc) return rc;
    if ((argv[1].t != AD_TLIST && argv[1].t != AD_TTUPLE) || (argv[2].t != AD_TLIST && argv[2].t != AD_TTUPLE))
        return ad_error(S, "rs_named_tuple(): fields and values must be lists");
    ad_list *f = argv[1].u.l, *v = argv[2].u.l;
    if (f->len != v->len || f->len > NAMED_FIELDS_MAX)
        return ad_error(S, "rs_named_tuple(): %lld fields for %lld values", (long long)f->len, (long long)v->len);
    for (int64_t i = 0; i < f->len; i++)
        if ((rc = ad_arg_str(S, f->items[i], "rs_named_tuple", "fields", &fields[i]))) return rc;
    ad_list *l = ad_list_new(S, AD_TTUPLE, v->len);
    if (!l) return ad_fail(S);
    for (int64_t i = 0; i < v->len; i++) {
        ad_value_incref(v->items[i]);
        l->items[i] = v->items[i];
    }
    *out = ad_list_value(l, AD_TTUPLE);
    if ((rc = ad_tuple_name(S, l, type, fields))) { ad_value_decref(S, *out); *out = ad_none(); }
    return rc;
}

const ad_builtin_def ad_bi_lapack_defs[] = {
    {"linalg_cholesky_ex", bi_cholesky, "A, upper=false, check_errors=false"},
    {"linalg_qr", bi_qr, "A, mode=\"reduced\""},
    {"linalg_svd", bi_svd, "A, full_matrices=true, driver=none"},
    {"linalg_eigh", bi_eigh, "A, UPLO=\"L\""},
    {"linalg_solve_triangular", bi_solve_triangular, "A, B, upper, unitriangular=false"},
    {"linalg_lu_factor_ex", bi_lu_factor, "A, pivot=true, check_errors=false"},
    {"geqrf", bi_geqrf, "input"},
    {"rs_named_tuple", bi_named_tuple, "type, fields, values"},
    {NULL, NULL, NULL}
};

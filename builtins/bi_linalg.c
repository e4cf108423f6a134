/* bi_linalg.c: matrix products (matmul, mm, bmm, mv, dot, outer, addmm, ...)
 * on BLAS without copying transposed views, and small LAPACK solvers. */
#include <math.h>
#include <string.h>

#include "../cuda/traj_cuda.h"
#include "builtins.h"
#include "tensor/device.h"
#include "kernels/blas_layout.h"
#include "system/blas_lazy.h"
#include "kernel_ids.h"
#include "kernels/reduce.h"
#include "state.h"

/* The shipped gemm kernels (kernels/reduce.def), called directly: a batch calls one per
 * matrix, and through the registry's libffi path (i32 and f64 arguments) each call cost
 * about 150 ns, more than a 4x4 product. Shipped kernels cannot be replaced, so this is
 * the function the registry would call. */
static const ad_red_gemm_fn GEMM[3] = {ad_red_gemm_f32, ad_red_gemm_f64, ad_red_gemm_i64};
static const int K_DOT[3] = {AD_K_red_dot_f32, AD_K_red_dot_f64, AD_K_red_dot_i64};

/* C++ scalar names, as torch's matmul dtype message prints them. */
static const char *c_name(ad_dtype dt) {
    static const char *const names[] = {"float", "double", "long int", "bool"};
    return dt < AD_NDTYPES ? names[dt] : "?";
}

/* ---- the batched product core ------------------------------------------- */

/* Makes the last two dims of '*t' BLAS-readable, copying only when needed;
 * '*t' is replaced by a new reference. */
static int blas_operand(ad_state *S, ad_tensor **t, int *trans, int64_t *ld) {
    ad_tensor *x = *t;
    int nd = x->ndim;
    if (ad_blas_layout(x->shape[nd - 2], x->shape[nd - 1], x->strides[nd - 2], x->strides[nd - 1],
                    trans, ld)) {
        ad_tensor_incref(x);
        return ADDSL_OK;
    }
    ad_tensor *c = ad_tensor_clone(S, x);
    if (!c) return ad_fail(S);
    *t = c;
    ad_blas_layout(c->shape[nd - 2], c->shape[nd - 1], c->strides[nd - 2], c->strides[nd - 1], trans, ld);
    return ADDSL_OK;
}

/* ---- the same on the GPU -------------------------------------------------- */

/* The batch of products in one launch of the module's gemm; an operand whose
 * batch dims have no flat stride is copied first (its matrices' own strides
 * are read as they are). */
static int gemm_device(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *c, double alpha,
                       double beta) {
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    if (c->dtype != AD_FLOAT32 && c->dtype != AD_FLOAT64)
        return ad_error(S, "\"addmm_cuda\" not implemented for '%s'", ad_torch_dtype_name(c->dtype) + 6);
    int nd = c->ndim, nb = nd - 2;
    int64_t M = c->shape[nd - 2], N = c->shape[nd - 1], K = a->shape[nd - 1], nbatch = 1, sa, sb;
    for (int i = 0; i < nb; i++) nbatch *= c->shape[i];
    ad_tensor *aa = a, *bb = b;
    ad_tensor_incref(a);
    ad_tensor_incref(b);
    int rc = ADDSL_OK;
    if (!ad_flat_batch_stride(aa->strides, nb, c->shape, &sa)) {
        ad_tensor_decref(S, aa);
        aa = ad_tensor_clone(S, a);
        if (!aa) rc = ad_fail(S);
        sa = M * K;
    }
    if (!rc && !ad_flat_batch_stride(bb->strides, nb, c->shape, &sb)) {
        ad_tensor_decref(S, bb);
        bb = ad_tensor_clone(S, b);
        if (!bb) rc = ad_fail(S);
        sb = K * N;
    }
    if (!rc)
        rc = ad_cuda_check(S, api->gemm(c->dtype, nbatch, M, N, K, ad_tensor_data(aa), sa, aa->strides[nd - 2],
                                        aa->strides[nd - 1], ad_tensor_data(bb), sb, bb->strides[nd - 2],
                                        bb->strides[nd - 1], ad_tensor_data(c), alpha, beta, ad_cuda_stream(S)),
                           "matmul");
    ad_tensor_decref(S, aa);
    ad_tensor_decref(S, bb);
    return rc;
}

/* Small square float matrices go to one call for the whole batch (kernels/gemm_small.c)
 * when both operands' batches advance by one flat stride (contiguous or broadcast); false
 * when the product is not one for it. Measured against a direct BLAS call per matrix
 * ([1000, m, k] @ [1000, k, n], one thread): the kernel wins on squares up to 4 (2.6 vs
 * 23 us at 2, 7.8 vs 28 at 4) and on float64 8x8 (32 vs 56), BLAS on float32 8x8, every
 * square from 5 and every non-square shape but the tiniest, where they are level. */
static bool gemm_small(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *c, double alpha, double beta) {
    int nd = c->ndim, nb = nd - 2;
    int64_t M = c->shape[nd - 2], N = c->shape[nd - 1], K = a->shape[nd - 1], sa, sb, nbatch = 1;
    if ((c->dtype != AD_FLOAT32 && c->dtype != AD_FLOAT64) || M != N || N != K ||
        (M > AD_GEMM_SMALL_SQUARE && !(M == 2 * AD_GEMM_SMALL_SQUARE && c->dtype == AD_FLOAT64)))
        return false;
    if (!ad_flat_batch_stride(a->strides, nb, c->shape, &sa) || !ad_flat_batch_stride(b->strides, nb, c->shape, &sb)) return false;
    for (int i = 0; i < nb; i++) nbatch *= c->shape[i];
    int64_t g[10] = {nbatch, M, N, K, sa, a->strides[nd - 2], a->strides[nd - 1],
                     sb, b->strides[nd - 2], b->strides[nd - 1]};
    ad_karg args[6] = {{.p = ad_tensor_data(a)}, {.p = ad_tensor_data(b)}, {.p = ad_tensor_data(c)},
                       {.p = g}, {.f64 = alpha}, {.f64 = beta}}, r;
    ad_kreg_call(S, c->dtype == AD_FLOAT32 ? AD_K_red_gemm_small_f32 : AD_K_red_gemm_small_f64, args, &r);
    return true;
}

/* c[batch..., M, N] (contiguous, holding beta's term) = alpha a b + beta c,
 * where a is [batch..., M, K] and b [batch..., K, N] (batch already broadcast). */
static int gemm_batched(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *c, double alpha,
                        double beta) {
    if (ad_tensor_device(c) != AD_DEV_CPU) return gemm_device(S, a, b, c, alpha, beta);
    int nd = c->ndim, nb = nd - 2, ta, tb;
    int64_t M = c->shape[nd - 2], N = c->shape[nd - 1], K = a->shape[nd - 1], lda, ldb;
    if (M == 0 || N == 0) return ADDSL_OK;
    if (gemm_small(S, a, b, c, alpha, beta)) return ADDSL_OK;
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
        return ad_error(S, "matmul: a matrix dimension exceeds the BLAS limit of %d", INT32_MAX);
    /* the int64 product is ours: a script that only multiplies integers never loads BLAS */
    const ad_blas_api *blas = NULL;
    if (c->dtype != AD_INT64 && !(blas = ad_blas_api_get(S, "matmul"))) return S->errcode;
    ad_tensor *aa = a, *bb = b;
    int rc = blas_operand(S, &aa, &ta, &lda);
    if (rc) return rc;
    rc = blas_operand(S, &bb, &tb, &ldb);
    if (rc) { ad_tensor_decref(S, aa); return rc; }
    int64_t nbatch = 1;
    for (int i = 0; i < nb; i++) nbatch *= c->shape[i];
    size_t esz = ad_dtype_size(c->dtype);
    char *ad = ad_tensor_data(aa), *bd = ad_tensor_data(bb), *cd = ad_tensor_data(c);
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t ao, bo;
        ad_batch_offsets(bi, nb, c->shape, aa->strides, bb->strides, &ao, &bo);
        GEMM[c->dtype](blas, ad + ao * (int64_t)esz, bd + bo * (int64_t)esz, cd + bi * M * N * (int64_t)esz, M, N, K,
                       K ? lda : 1, K ? ldb : ad_blas_max64(N, 1), N, K ? ta : 0, K ? tb : 0, alpha, beta);
    }
    ad_tensor_decref(S, aa);
    ad_tensor_decref(S, bb);
    return ADDSL_OK;
}

int ad_linalg_gemm2d(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *c, double beta) {
    return gemm_batched(S, a, b, c, 1.0, beta);
}

static int same_device(ad_state *S, const ad_tensor *a, const ad_tensor *b) {
    if (ad_tensor_device(a) == ad_tensor_device(b)) return ADDSL_OK;
    return ad_device_mismatch(S, ad_tensor_device(a), ad_tensor_device(b));
}

static int check_dtypes(ad_state *S, const ad_tensor *a, const ad_tensor *b) {
    if (same_device(S, a, b)) return ADDSL_ERUNTIME;
    if (a->dtype != b->dtype)
        return ad_error(S, "expected m1 and m2 to have the same dtype, but got: %s != %s",
                        c_name(a->dtype), c_name(b->dtype));
    if (a->dtype == AD_BOOL) return ad_error(S, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
    return ADDSL_OK;
}

/* The beta term of addmm-like ops: 'self' broadcast to 'shape' (ignored when
 * beta is 0), on 'device'. */
static ad_tensor *beta_term(ad_state *S, ad_tensor *self, ad_dtype dt, int nd,
                            const int64_t *shape, double beta, int device, int64_t k) {
    /* with beta 0 neither gemm reads c (BLAS's rule, and the small kernel's), except
     * that an empty sum (k == 0) must still leave zeros */
    if ((!self || beta == 0) && k > 0 && device == AD_DEV_CPU) return ad_tensor_empty_on(S, dt, nd, shape, device);
    if (!self || beta == 0) return ad_tensor_full_on(S, dt, nd, shape, 0, device);
    if (ad_tensor_device(self) != device) {
        ad_device_mismatch(S, device, ad_tensor_device(self));
        return NULL;
    }
    ad_tensor *e = ad_tensor_expand(S, self, nd, shape);
    if (!e) return NULL;
    ad_tensor *c = ad_tensor_empty_on(S, dt, nd, shape, device);
    if (c && ad_tensor_copy_into(S, c, e)) { ad_tensor_decref(S, c); c = NULL; }
    ad_tensor_decref(S, e);
    return c;
}

/* alpha a b + beta self with a [.., M, K], b [.., K, N] of equal batch shape. */
static ad_tensor *product(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *self, double alpha,
                          double beta) {
    int nd = a->ndim;
    int64_t shape[AD_MAX_DIMS];
    memcpy(shape, a->shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] = b->shape[nd - 1];
    ad_tensor *c = beta_term(S, self, a->dtype, nd, shape, beta, ad_tensor_device(a), a->shape[nd - 1]);
    if (c && gemm_batched(S, a, b, c, alpha, beta)) { ad_tensor_decref(S, c); c = NULL; }
    return c;
}

static ad_tensor *mm_checked(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *self,
                             double alpha, double beta) {
    if (a->shape[1] != b->shape[0]) {
        ad_error(S, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                 (long long)a->shape[0], (long long)a->shape[1], (long long)b->shape[0],
                 (long long)b->shape[1]);
        return NULL;
    }
    return product(S, a, b, self, alpha, beta);
}

/* ---- matmul ------------------------------------------------------------- */

/* On the GPU a dot product is the 1 x n by n x 1 product. */
static ad_tensor *dot_device(ad_state *S, ad_tensor *a, ad_tensor *b) {
    ad_tensor *row = ad_tensor_unsqueeze(S, a, 0), *col = row ? ad_tensor_unsqueeze(S, b, 1) : NULL;
    ad_tensor *p = col ? product(S, row, col, NULL, 1, 0) : NULL, *r = NULL;
    if (p) r = ad_tensor_view(S, p, 0, NULL);
    ad_tensor_decref(S, row);
    ad_tensor_decref(S, col);
    ad_tensor_decref(S, p);
    return r;
}

static ad_tensor *dot_product(ad_state *S, ad_tensor *a, ad_tensor *b) {
    if (a->numel != b->numel) {
        ad_error(S, "inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the "
                 "same number of elements, but got %lld and %lld elements respectively",
                 (long long)a->numel, (long long)b->numel, (long long)a->numel, (long long)b->numel);
        return NULL;
    }
    if (same_device(S, a, b)) return NULL;
    if (ad_tensor_device(a) != AD_DEV_CPU) return dot_device(S, a, b);
    if (a->numel > INT32_MAX) {
        ad_error(S, "dot: vectors longer than %d are not supported", INT32_MAX);
        return NULL;
    }
    ad_tensor *ac = a->numel > 1 && a->strides[0] <= 0 ? ad_tensor_clone(S, a) : a;
    ad_tensor *bc = b->numel > 1 && b->strides[0] <= 0 ? ad_tensor_clone(S, b) : b;
    const ad_blas_api *blas = NULL;
    ad_tensor *o = NULL;
    if (ac && bc && (a->dtype == AD_INT64 || (blas = ad_blas_api_get(S, "dot"))))
        o = ad_tensor_empty(S, a->dtype, 0, NULL);
    if (o) {
        ad_karg args[7] = {{.p = (void *)blas}, {.p = ad_tensor_data(ac)},
                           {.i64 = a->numel > 1 ? ac->strides[0] : 1}, {.p = ad_tensor_data(bc)}, {.i64 = b->numel > 1 ? bc->strides[0] : 1},
                           {.i64 = a->numel}, {.p = ad_tensor_data(o)}}, r;
        ad_kreg_call(S, K_DOT[a->dtype], args, &r);
    }
    if (ac != a) ad_tensor_decref(S, ac);
    if (bc != b) ad_tensor_decref(S, bc);
    return o;
}

/* Batched matmul after 1-D operands were lifted to matrices: broadcasts the
 * batch dims; a contiguous batch times one matrix folds into a single gemm. */
static ad_tensor *matmul_nd(ad_state *S, ad_tensor *a, ad_tensor *b) {
    int na = a->ndim, nb = b->ndim, nbatch;
    int64_t M = a->shape[na - 2], K = a->shape[na - 1], N = b->shape[nb - 1];
    int64_t bshape[AD_MAX_DIMS], ea[AD_MAX_DIMS], eb[AD_MAX_DIMS];
    if (ad_broadcast_shapes(S, na - 2, a->shape, nb - 2, b->shape, &nbatch, bshape)) return NULL;
    if (b->shape[nb - 2] != K && nb > 2) {
        int64_t nbat = 1;
        for (int i = 0; i < nbatch; i++) nbat *= bshape[i];
        ad_error(S, "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                 "but got: [%lld, %lld].", (long long)nbat, (long long)K, (long long)nbat,
                 (long long)b->shape[nb - 2]);
        return NULL;
    }
    if (b->shape[nb - 2] != K) {
        ad_error(S, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                 (long long)(a->numel / (K ? K : 1)), (long long)K, (long long)b->shape[nb - 2],
                 (long long)N);
        return NULL;
    }
    if (nb == 2 && ad_tensor_is_contiguous(a)) {
        int64_t s2[2] = {M, K}, s3[AD_MAX_DIMS];
        for (int i = 0; i < na - 2; i++) s2[0] *= a->shape[i];
        ad_tensor *a2 = ad_tensor_view(S, a, 2, s2);
        ad_tensor *c = a2 ? product(S, a2, b, NULL, 1, 0) : NULL;
        ad_tensor_decref(S, a2);
        if (!c) return NULL;
        memcpy(s3, a->shape, sizeof(int64_t) * (size_t)na);
        s3[na - 1] = N;
        ad_tensor *r = ad_tensor_view(S, c, na, s3);
        ad_tensor_decref(S, c);
        return r;
    }
    if (nbatch + 2 > AD_MAX_DIMS) { ad_error(S, "matmul: too many dimensions"); return NULL; }
    memcpy(ea, bshape, sizeof(int64_t) * (size_t)nbatch);
    memcpy(eb, bshape, sizeof(int64_t) * (size_t)nbatch);
    ea[nbatch] = M; ea[nbatch + 1] = K;
    eb[nbatch] = K; eb[nbatch + 1] = N;
    ad_tensor *xa = ad_tensor_expand(S, a, nbatch + 2, ea);
    ad_tensor *xb = xa ? ad_tensor_expand(S, b, nbatch + 2, eb) : NULL;
    ad_tensor *c = xb ? product(S, xa, xb, NULL, 1, 0) : NULL;
    ad_tensor_decref(S, xa);
    ad_tensor_decref(S, xb);
    return c;
}

/* torch.matmul: dot, mv, vm, mm or broadcast batched mm by the operands' ranks. */
static ad_tensor *matmul(ad_state *S, ad_tensor *a, ad_tensor *b) {
    if (a->ndim == 0 || b->ndim == 0) {
        ad_error(S, "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                 a->ndim, b->ndim);
        return NULL;
    }
    if (check_dtypes(S, a, b)) return NULL;
    if (a->ndim == 1 && b->ndim == 1) return dot_product(S, a, b);
    ad_tensor *a2 = a->ndim == 1 ? ad_tensor_unsqueeze(S, a, 0) : (ad_tensor_incref(a), a);
    ad_tensor *b2 = b->ndim == 1 ? ad_tensor_unsqueeze(S, b, 1) : (ad_tensor_incref(b), b);
    ad_tensor *c = a2 && b2 ? matmul_nd(S, a2, b2) : NULL;
    ad_tensor_decref(S, a2);
    ad_tensor_decref(S, b2);
    if (c && (a->ndim == 1 || b->ndim == 1)) {
        int64_t dim = a->ndim == 1 ? c->ndim - 2 : c->ndim - 1;
        ad_tensor *sq = ad_tensor_squeeze(S, c, 1, &dim);
        ad_tensor_decref(S, c);
        c = sq;
    }
    return c;
}

int ad_bi_matmul(ad_state *S, ad_value a, ad_value b, ad_value *out) {
    ad_tensor *ta, *tb;
    int rc = ad_arg_tensor(S, a, "matmul", "input", &ta);
    if (rc) return rc;
    rc = ad_arg_tensor(S, b, "matmul", "other", &tb);
    if (rc) { ad_tensor_decref(S, ta); return rc; }
    ad_tensor *c = matmul(S, ta, tb);
    ad_tensor_decref(S, ta);
    ad_tensor_decref(S, tb);
    return ad_ret_tensor(S, c, out);
}

/* ---- builtins ----------------------------------------------------------- */

/* Fetches up to three tensor arguments argv[0..n-1]; on failure none is held. */
static int get_tensors(ad_state *S, ad_value *argv, int n, const char *fn,
                       const char *const *names, ad_tensor **t) {
    for (int i = 0; i < n; i++) {
        int rc = ad_arg_tensor(S, argv[i], fn, names[i], &t[i]);
        if (rc) {
            while (i-- > 0) ad_tensor_decref(S, t[i]);
            return rc;
        }
    }
    return ADDSL_OK;
}

static void put_tensors(ad_state *S, int n, ad_tensor **t) {
    for (int i = 0; i < n; i++) ad_tensor_decref(S, t[i]);
}

static int bi_matmul(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return ad_bi_matmul(S, argv[0], argv[1], out);
}

static const char *const SELF_MAT2[] = {"input", "mat2"};

static ad_tensor *mm(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *self, double alpha,
                     double beta) {
    if (a->ndim != 2) { ad_error(S, "self must be a matrix"); return NULL; }
    if (b->ndim != 2) { ad_error(S, "mat2 must be a matrix"); return NULL; }
    if (check_dtypes(S, a, b)) return NULL;
    if (self && self->dtype != a->dtype) {
        ad_error(S, "self and mat2 must have the same dtype, but got %s and %s",
                 ad_torch_dtype_name(self->dtype), ad_torch_dtype_name(b->dtype));
        return NULL;
    }
    return mm_checked(S, a, b, self, alpha, beta);
}

static int bi_mm(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t[2];
    int rc = get_tensors(S, argv, 2, "mm", SELF_MAT2, t);
    if (rc) return rc;
    ad_tensor *c = mm(S, t[0], t[1], NULL, 1, 0);
    put_tensors(S, 2, t);
    return ad_ret_tensor(S, c, out);
}

static ad_tensor *bmm(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *self, double alpha,
                      double beta) {
    if (a->ndim != 3) { ad_error(S, "batch1 must be a 3D tensor"); return NULL; }
    if (b->ndim != 3) { ad_error(S, "batch2 must be a 3D tensor"); return NULL; }
    if (check_dtypes(S, a, b)) return NULL;
    if (b->shape[0] != a->shape[0] || b->shape[1] != a->shape[2]) {
        ad_error(S, "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] "
                 "but got: [%lld, %lld].", (long long)a->shape[0], (long long)a->shape[2],
                 (long long)b->shape[0], (long long)b->shape[1]);
        return NULL;
    }
    if (self && self->dtype != a->dtype) {
        ad_error(S, "self and batch2 must have the same dtype, but got %s and %s",
                 ad_torch_dtype_name(self->dtype), ad_torch_dtype_name(b->dtype));
        return NULL;
    }
    return product(S, a, b, self, alpha, beta);
}

static int bi_bmm(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t[2];
    int rc = get_tensors(S, argv, 2, "bmm", SELF_MAT2, t);
    if (rc) return rc;
    ad_tensor *c = bmm(S, t[0], t[1], NULL, 1, 0);
    put_tensors(S, 2, t);
    return ad_ret_tensor(S, c, out);
}

/* mat @ vec as an N = 1 gemm; 'self' (1-D or broadcastable) for addmv. */
static ad_tensor *mv(ad_state *S, ad_tensor *m, ad_tensor *v, ad_tensor *self, double alpha,
                     double beta) {
    if (m->ndim != 2 || v->ndim != 1) {
        ad_error(S, "vector + matrix @ vector expected, got 1, %d, %d", m->ndim, v->ndim);
        return NULL;
    }
    if (m->shape[1] != v->shape[0]) {
        ad_error(S, "size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                 (long long)m->shape[0], (long long)m->shape[0], (long long)m->shape[1],
                 (long long)v->shape[0]);
        return NULL;
    }
    if (check_dtypes(S, m, v)) return NULL;
    ad_tensor *col = ad_tensor_unsqueeze(S, v, 1), *s2 = NULL, *c = NULL;
    if (col && self && self->ndim >= 1) s2 = ad_tensor_unsqueeze(S, self, self->ndim);
    else if (col && self) { ad_tensor_incref(self); s2 = self; }
    if (col && (s2 || !self)) c = product(S, m, col, s2, alpha, beta);
    ad_tensor_decref(S, col);
    ad_tensor_decref(S, s2);
    if (!c) return NULL;
    int64_t d = 1;
    ad_tensor *r = ad_tensor_squeeze(S, c, 1, &d);
    ad_tensor_decref(S, c);
    return r;
}

static int bi_mv(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char *const names[] = {"input", "vec"};
    ad_tensor *t[2];
    int rc = get_tensors(S, argv, 2, "mv", names, t);
    if (rc) return rc;
    ad_tensor *c = mv(S, t[0], t[1], NULL, 1, 0);
    put_tensors(S, 2, t);
    return ad_ret_tensor(S, c, out);
}

static int bi_dot(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char *const names[] = {"input", "tensor"};
    ad_tensor *t[2], *c = NULL;
    int rc = get_tensors(S, argv, 2, "dot", names, t);
    if (rc) return rc;
    if (t[0]->ndim != 1 || t[1]->ndim != 1)
        ad_error(S, "1D tensors expected, but got %dD and %dD tensors", t[0]->ndim, t[1]->ndim);
    else if (t[0]->dtype != t[1]->dtype)
        ad_error(S, "dot : expected both vectors to have same dtype, but found %s and %s",
                 ad_torch_dtype_name(t[0]->dtype), ad_torch_dtype_name(t[1]->dtype));
    else if (t[0]->dtype == AD_BOOL)
        ad_error(S, "\"dot\" not implemented for 'Bool'");
    else
        c = dot_product(S, t[0], t[1]);
    put_tensors(S, 2, t);
    return ad_ret_tensor(S, c, out);
}

/* outer is a broadcast multiply in torch, so it promotes dtypes like '*'. */
static int bi_outer(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char *const names[] = {"input", "vec2"};
    ad_tensor *t[2];
    int rc = get_tensors(S, argv, 2, "outer", names, t);
    if (rc) return rc;
    for (int i = 0; i < 2 && !rc; i++)
        if (t[i]->ndim != 1)
            rc = ad_error(S, "outer: Expected 1-D argument %s, but got %d-D", i ? "vec2" : "self",
                          t[i]->ndim);
    ad_tensor *col = rc ? NULL : ad_tensor_unsqueeze(S, t[0], 1);
    if (col) {
        ad_value va = ad_tensor_value(col), vb = ad_tensor_value(t[1]);
        rc = ad_bi_mul(S, va, vb, out);
        ad_tensor_decref(S, col);
    } else if (!rc) {
        rc = ad_fail(S);
    }
    put_tensors(S, 2, t);
    return rc;
}

/* addmm/addmv/addr/baddbmm: (self, m1, m2, beta, alpha). */
typedef ad_tensor *(*prod_fn)(ad_state *, ad_tensor *, ad_tensor *, ad_tensor *, double, double);

static int add_product(ad_state *S, ad_value *argv, const char *fn, const char *const *names,
                       prod_fn f, ad_value *out) {
    double beta, alpha;
    ad_tensor *t[3];
    int rc = ad_arg_double(S, argv[3], fn, "beta", &beta);
    if (!rc) rc = ad_arg_double(S, argv[4], fn, "alpha", &alpha);
    if (!rc) rc = get_tensors(S, argv, 3, fn, names, t);
    if (rc) return rc;
    ad_tensor *c = f(S, t[1], t[2], t[0], alpha, beta);
    put_tensors(S, 3, t);
    return ad_ret_tensor(S, c, out);
}

static int bi_addmm(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char *const names[] = {"input", "mat1", "mat2"};
    return add_product(S, argv, "addmm", names, mm, out);
}

static int bi_addmv(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char *const names[] = {"input", "mat", "vec"};
    return add_product(S, argv, "addmv", names, mv, out);
}

static int bi_baddbmm(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char *const names[] = {"input", "batch1", "batch2"};
    return add_product(S, argv, "baddbmm", names, bmm, out);
}

/* vec1 vec2^T as a K = 1 gemm. */
static ad_tensor *addr(ad_state *S, ad_tensor *a, ad_tensor *b, ad_tensor *self, double alpha,
                       double beta) {
    if (a->ndim != 1 || b->ndim != 1) {
        ad_error(S, "addr: Expected 1-D argument vec%d, but got %d-D", a->ndim != 1 ? 1 : 2,
                 a->ndim != 1 ? a->ndim : b->ndim);
        return NULL;
    }
    if (check_dtypes(S, a, b)) return NULL;
    ad_tensor *col = ad_tensor_unsqueeze(S, a, 1), *row = ad_tensor_unsqueeze(S, b, 0), *c = NULL;
    if (col && row) c = product(S, col, row, self, alpha, beta);
    ad_tensor_decref(S, col);
    ad_tensor_decref(S, row);
    return c;
}

static int bi_addr(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char *const names[] = {"input", "vec1", "vec2"};
    return add_product(S, argv, "addr", names, addr, out);
}

/* ---- LAPACK: solve, inv, det -------------------------------------------- */

/* Checks A is a float batch of square matrices; 'fn' is torch's "linalg.x". */
static int check_square(ad_state *S, const ad_tensor *a, const char *fn) {
    if (a->ndim < 2)
        return ad_error(S, "%s: The input tensor A must have at least 2 dimensions.", fn);
    int64_t r = a->shape[a->ndim - 2], c = a->shape[a->ndim - 1];
    if (r != c)
        return ad_error(S, "%s: A must be batches of square matrices, but they are %lld by %lld matrices",
                        fn, (long long)r, (long long)c);
    if (!ad_dtype_is_float(a->dtype))
        return ad_error(S, "%s: Expected a floating point or complex tensor as input. Got %s", fn,
                        ad_torch_dtype_name(a->dtype));
    if (r > INT32_MAX / 2) return ad_error(S, "%s: matrix too large", fn);
    return ADDSL_OK;
}

/* A new contiguous copy of 't' in dtype 'dt', whatever its layout. */
static ad_tensor *copy_as(ad_state *S, ad_tensor *t, ad_dtype dt) {
    ad_tensor *c = ad_tensor_empty(S, dt, t->ndim, t->shape);
    if (c && ad_tensor_copy_into(S, c, t)) { ad_tensor_decref(S, c); return NULL; }
    return c;
}

/* LAPACK works in double here; float32 results are rounded once at the end. */
static ad_tensor *f64_copy(ad_state *S, ad_tensor *t) { return copy_as(S, t, AD_FLOAT64); }

/* Number of matrices in a batch of n x n matrices (works for n == 0). */
static int64_t batch_count(const ad_tensor *a) {
    int64_t nb = 1;
    for (int i = 0; i < a->ndim - 2; i++) nb *= a->shape[i];
    return nb;
}

/* LU-factors each n x n matrix of 'lu' in place. Row-major data reads as
 * A^T in column-major, which has the same determinant and inverse^T. */
static int lu_batch(ad_state *S, const ad_blas_api *blas, ad_tensor *lu, int *piv, int64_t *singular) {
    int n = (int)lu->shape[lu->ndim - 1], ld = n > 1 ? n : 1, info = 0;
    int64_t nb = n ? batch_count(lu) : 0;
    double *d = ad_tensor_data(lu);
    *singular = -1;
    for (int64_t b = 0; b < nb; b++) {
        blas->dgetrf_(&n, &n, d + b * n * n, &ld, piv + b * n, &info);
        if (info > 0 && *singular < 0) *singular = info;
        if (info < 0) return ad_error(S, "LAPACK getrf failed (argument %d)", -info);
    }
    return ADDSL_OK;
}

static int bi_linalg_inv(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *a;
    int rc = ad_arg_tensor(S, argv[0], "linalg_inv", "A", &a);
    if (rc) return rc;
    ad_tensor *lu = NULL, *r = NULL;
    int *piv = NULL;
    double *work = NULL;
    if ((rc = check_square(S, a, "linalg.inv"))) goto done;
    if (!(lu = f64_copy(S, a))) { rc = ad_fail(S); goto done; }
    int n = (int)a->shape[a->ndim - 1], ld = n > 1 ? n : 1, info = 0;
    int64_t nb = batch_count(a), sing;
    piv = ad_malloc(S, sizeof(int) * (size_t)(nb * n + 1));
    work = ad_malloc(S, sizeof(double) * (size_t)(n + 1) * 64);
    if (!piv || !work) { rc = ad_fail(S); goto done; }
    const ad_blas_api *blas = ad_blas_api_get(S, "linalg_inv");
    if (!blas) { rc = S->errcode; goto done; }
    if ((rc = lu_batch(S, blas, lu, piv, &sing))) goto done;
    if (sing >= 0) {
        rc = ad_error(S, "linalg.inv: The diagonal element %lld is zero, the inversion could not be "
                      "completed because the input matrix is singular.", (long long)sing);
        goto done;
    }
    int lwork = (n + 1) * 64;
    for (int64_t b = 0; b < nb; b++)
        blas->dgetri_(&n, (double *)ad_tensor_data(lu) + b * n * n, &ld, piv + b * n, work, &lwork, &info);
    r = ad_tensor_to(S, lu, a->dtype);
    if (!r) rc = ad_fail(S);
done:
    ad_free(S, piv);
    ad_free(S, work);
    ad_tensor_decref(S, lu);
    ad_tensor_decref(S, a);
    if (rc) { ad_tensor_decref(S, r); return rc; }
    return ad_ret_tensor(S, r, out);
}

/* det and slogdet share the LU; 'mode' 0: det, 1: (sign, logabsdet). */
static int det_common(ad_state *S, ad_value *argv, int mode, const char *fn, ad_value *out) {
    ad_tensor *a, *lu = NULL, *d = NULL, *la = NULL;
    int rc = ad_arg_tensor(S, argv[0], fn, "A", &a);
    if (rc) return rc;
    int *piv = NULL;
    if ((rc = check_square(S, a, fn))) goto done;
    if (!(lu = f64_copy(S, a))) { rc = ad_fail(S); goto done; }
    int n = (int)a->shape[a->ndim - 1];
    int64_t nb = batch_count(a), sing;
    piv = ad_malloc(S, sizeof(int) * (size_t)(nb * n + 1));
    d = ad_tensor_empty(S, a->dtype, a->ndim - 2, a->shape);
    la = mode ? ad_tensor_empty(S, a->dtype, a->ndim - 2, a->shape) : NULL;
    if (!piv || !d || (mode && !la)) { rc = ad_fail(S); goto done; }
    const ad_blas_api *blas = n ? ad_blas_api_get(S, fn) : NULL;
    if (n && !blas) { rc = S->errcode; goto done; }
    if (n && (rc = lu_batch(S, blas, lu, piv, &sing))) goto done;
    const double *m = ad_tensor_data(lu);
    for (int64_t b = 0; b < nb; b++) {
        /* det = (-1)^(row swaps) * prod(diag U) */
        double sign = 1, logabs = 0, prod = 1;
        for (int i = 0; i < n; i++) {
            double u = m[b * n * n + (int64_t)i * n + i];
            if (piv[b * n + i] != i + 1) { sign = -sign; prod = -prod; }
            if (u < 0) sign = -sign;
            logabs += log(fabs(u));
            prod *= u;
        }
        if (mode == 0) {
            ad_tensor_set_flat(d, b, prod);
        } else {
            ad_tensor_set_flat(d, b, prod == 0 ? 0 : sign);
            ad_tensor_set_flat(la, b, logabs);
        }
    }
done:
    ad_free(S, piv);
    ad_tensor_decref(S, lu);
    ad_tensor_decref(S, a);
    if (rc) { ad_tensor_decref(S, d); ad_tensor_decref(S, la); return rc; }
    if (mode == 0) return ad_ret_tensor(S, d, out);
    ad_list *l = ad_list_new(S, AD_TTUPLE, 2);
    if (!l) { ad_tensor_decref(S, d); ad_tensor_decref(S, la); return ad_fail(S); }
    l->items[0] = ad_tensor_value(d);
    l->items[1] = ad_tensor_value(la);
    *out = ad_list_value(l, AD_TTUPLE);
    return ADDSL_OK;
}

/* (sign, logabsdet) as torch.return_types.slogdet / linalg_slogdet. */
static int slogdet_named(ad_state *S, ad_value *argv, const char *type, ad_value *out) {
    static const char *const fields[] = {"sign", "logabsdet"};
    int rc = det_common(S, argv, 1, "linalg.slogdet", out);
    if (!rc && (rc = ad_tuple_name(S, out->u.l, type, fields))) { ad_value_decref(S, *out); *out = ad_none(); }
    return rc;
}

static int bi_det(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return det_common(S, argv, 0, "linalg.det", out);
}

static int bi_slogdet(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return slogdet_named(S, argv, "slogdet", out);
}

static int bi_linalg_slogdet(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return slogdet_named(S, argv, "linalg_slogdet", out);
}

/* Solves A X = B for each batch; B is a batch of vectors when it has one dim
 * fewer than A (or is 1-D), as in torch.linalg.solve. Batch dims broadcast. */
static ad_tensor *solve(ad_state *S, ad_tensor *a, ad_tensor *b) {
    if (check_square(S, a, "linalg.solve")) return NULL;
    if (a->dtype != b->dtype) {
        ad_error(S, "linalg.solve: Expected A and B to have the same dtype, but found A of type "
                 "%s and B of type %s instead", ad_torch_dtype_name(a->dtype), ad_torch_dtype_name(b->dtype));
        return NULL;
    }
    int n = (int)a->shape[a->ndim - 1];
    bool vec = b->ndim == 1 || (b->ndim == a->ndim - 1 &&
                                ad_shape_equal(b->ndim - 1, b->shape, a->ndim - 2, a->shape));
    ad_tensor *bm = vec ? ad_tensor_unsqueeze(S, b, b->ndim) : (ad_tensor_incref(b), b);
    if (!bm) return NULL;
    ad_tensor *res = NULL, *ea = NULL, *bt = NULL, *lu = NULL, *x = NULL;
    int *piv = NULL;
    int64_t bsh[AD_MAX_DIMS], shp[AD_MAX_DIMS];
    int nbd;
    if (bm->shape[bm->ndim - 2] != n) {
        ad_error(S, "linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                 "(%lldx%lld and %lldx%lld)", (long long)n, (long long)n,
                 (long long)bm->shape[bm->ndim - 2], (long long)bm->shape[bm->ndim - 1]);
        goto done;
    }
    if (ad_broadcast_shapes(S, a->ndim - 2, a->shape, bm->ndim - 2, bm->shape, &nbd, bsh)) goto done;
    int64_t nrhs = bm->shape[bm->ndim - 1], nb = 1;
    for (int i = 0; i < nbd; i++) nb *= bsh[i];
    memcpy(shp, bsh, sizeof(int64_t) * (size_t)nbd);
    shp[nbd] = n; shp[nbd + 1] = n;
    if (!(ea = ad_tensor_expand(S, a, nbd + 2, shp)) || !(lu = f64_copy(S, ea))) goto done;
    /* B in column-major per batch: the row-major copy of B^T. */
    shp[nbd] = nrhs; shp[nbd + 1] = n;
    int64_t full[AD_MAX_DIMS];
    memcpy(full, bsh, sizeof(int64_t) * (size_t)nbd);
    full[nbd] = n; full[nbd + 1] = nrhs;
    ad_tensor *eb = ad_tensor_expand(S, bm, nbd + 2, full);
    bt = eb ? ad_tensor_transpose(S, eb, -1, -2) : NULL;
    ad_tensor_decref(S, eb);
    if (!bt || !(x = f64_copy(S, bt))) goto done;
    piv = ad_malloc(S, sizeof(int) * (size_t)(nb * n + 1));
    int64_t sing;
    const ad_blas_api *blas = piv ? ad_blas_api_get(S, "linalg_solve") : NULL;
    if (!piv || !blas || lu_batch(S, blas, lu, piv, &sing)) goto done;
    if (sing >= 0) {
        ad_error(S, "torch.linalg.solve: The solver failed because the input matrix is singular.");
        goto done;
    }
    int ld = n > 1 ? n : 1, nr = (int)nrhs, info = 0;
    for (int64_t i = 0; i < nb && n && nr; i++)
        blas->dgetrs_("T", &n, &nr, (double *)ad_tensor_data(lu) + i * n * n, &ld, piv + i * n,
                      (double *)ad_tensor_data(x) + i * n * nrhs, &ld, &info);
    ad_tensor *xt = ad_tensor_transpose(S, x, -1, -2);
    ad_tensor *xc = xt ? copy_as(S, xt, a->dtype) : NULL;
    ad_tensor_decref(S, xt);
    if (xc && vec) {
        int64_t last = xc->ndim - 1;
        res = ad_tensor_squeeze(S, xc, 1, &last);
        ad_tensor_decref(S, xc);
    } else {
        res = xc;
    }
done:
    ad_free(S, piv);
    ad_tensor_decref(S, ea);
    ad_tensor_decref(S, bt);
    ad_tensor_decref(S, lu);
    ad_tensor_decref(S, x);
    ad_tensor_decref(S, bm);
    return res;
}

static int bi_linalg_solve(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char *const names[] = {"A", "B"};
    ad_tensor *t[2];
    int rc = get_tensors(S, argv, 2, "linalg_solve", names, t);
    if (rc) return rc;
    ad_tensor *x = solve(S, t[0], t[1]);
    put_tensors(S, 2, t);
    return ad_ret_tensor(S, x, out);
}

const ad_builtin_def ad_bi_linalg_defs[] = {
    {"matmul", bi_matmul, "self, other"},
    {"mm", bi_mm, "self, mat2"},
    {"bmm", bi_bmm, "self, mat2"},
    {"mv", bi_mv, "self, vec"},
    {"dot", bi_dot, "self, tensor"},
    {"outer", bi_outer, "self, vec2"},
    {"addmm", bi_addmm, "self, mat1, mat2, beta=1, alpha=1"},
    {"addmv", bi_addmv, "self, mat, vec, beta=1, alpha=1"},
    {"addr", bi_addr, "self, vec1, vec2, beta=1, alpha=1"},
    {"baddbmm", bi_baddbmm, "self, batch1, batch2, beta=1, alpha=1"},
    {"linalg_solve", bi_linalg_solve, "A, B"},
    {"linalg_inv", bi_linalg_inv, "A"},
    {"inverse", bi_linalg_inv, "self"},
    {"linalg_det", bi_det, "A"},
    {"det", bi_det, "self"},
    {"linalg_slogdet", bi_linalg_slogdet, "A"},
    {"slogdet", bi_slogdet, "self"},
    {NULL, NULL, NULL}
};

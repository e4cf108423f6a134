/* bi_reduce.c: reduction, scan, softmax, sort and selection builtins (sum,
 * mean, max, var, norm, softmax, cumsum, sort, topk, ...) with PyTorch's semantics. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../cuda/traj_cuda.h"
#include "builtins.h"
#include "tensor/device.h"
#include "kernel_ids.h"
#include "kernels/reduce.h"
#include "state.h"

#define FN_ARGS ad_state *S, ad_value *argv, int argc, ad_value *out

/* Kernel ids by dtype (float32, float64, int64); bool inputs go through int64. */
static const int K_SUM[3] = {AD_K_red_sum_f32, AD_K_red_sum_f64, AD_K_red_sum_i64};
static const int K_MEAN[2] = {AD_K_red_mean_f32, AD_K_red_mean_f64};
static const int K_PROD[3] = {AD_K_red_prod_f32, AD_K_red_prod_f64, AD_K_red_prod_i64};
static const int K_AMAX[3] = {AD_K_red_amax_f32, AD_K_red_amax_f64, AD_K_red_amax_i64};
static const int K_AMIN[3] = {AD_K_red_amin_f32, AD_K_red_amin_f64, AD_K_red_amin_i64};
static const int K_ARGMAX[3] = {AD_K_red_max_f32, AD_K_red_max_f64, AD_K_red_max_i64};
static const int K_ARGMIN[3] = {AD_K_red_min_f32, AD_K_red_min_f64, AD_K_red_min_i64};
static const int K_LSE[2] = {AD_K_red_logsumexp_f32, AD_K_red_logsumexp_f64};
static const int K_NORM[2] = {AD_K_red_norm_f32, AD_K_red_norm_f64};
static const int K_VAR[2] = {AD_K_red_var_f32, AD_K_red_var_f64};
static const int K_SOFTMAX[2] = {AD_K_red_softmax_f32, AD_K_red_softmax_f64};
static const int K_LOGSOFTMAX[2] = {AD_K_red_logsoftmax_f32, AD_K_red_logsoftmax_f64};
static const int K_CUMSUM[3] = {AD_K_red_cumsum_f32, AD_K_red_cumsum_f64, AD_K_red_cumsum_i64};
static const int K_CUMPROD[3] = {AD_K_red_cumprod_f32, AD_K_red_cumprod_f64, AD_K_red_cumprod_i64};
static const int K_SORT[3] = {AD_K_red_sort_f32, AD_K_red_sort_f64, AD_K_red_sort_i64};

/* Converts and releases 't' (which may be NULL). */
static ad_tensor *cast_steal(ad_state *S, ad_tensor *t, ad_dtype dt) {
    if (!t) return NULL;
    ad_tensor *c = ad_tensor_to(S, t, dt);
    ad_tensor_decref(S, t);
    return c;
}

/* 't' as a contiguous tensor of dtype 'dt' (a new reference). */
static ad_tensor *contig_as(ad_state *S, ad_tensor *t, ad_dtype dt) {
    ad_tensor *c = ad_tensor_to(S, t, dt);
    if (!c) return NULL;
    ad_tensor *r = ad_tensor_contiguous(S, c);
    ad_tensor_decref(S, c);
    return r;
}

static void *data_of(const ad_tensor *t) { return ad_tensor_data(t); }

/* ---- reduction plans ---------------------------------------------------- */

/* A reduction seen as x[outer, n, inner] -> out[outer, inner]. */
typedef struct rplan {
    ad_tensor *x;          /* source in that layout (a new reference) */
    int64_t outer, n, inner;
    int ondim;
    int64_t oshape[AD_MAX_DIMS];
    int zero_dim;          /* first reduced dim of size 0, or -1 */
} rplan;

static int mark_dims(ad_state *S, const ad_tensor *t, int ndims, const int64_t *dims, bool *mask) {
    memset(mask, 0, AD_MAX_DIMS * sizeof *mask);
    if (ndims <= 0) { /* none or [] reduce every dim, as in torch.sum */
        for (int d = 0; d < t->ndim; d++) mask[d] = true;
        return ADDSL_OK;
    }
    for (int i = 0; i < ndims; i++) {
        int d, rc = ad_normalize_dim(S, dims[i], t->ndim, &d);
        if (rc) return rc;
        if (t->ndim == 0) continue;
        if (mask[d]) return ad_error(S, "dim %d appears multiple times in the list of dims", d);
        mask[d] = true;
    }
    return ADDSL_OK;
}

/* Reduced dims that are one run of a contiguous tensor need no copy; any
 * other set is permuted last and copied once. */
/* a * b, saturated: an empty tensor may have other sizes whose product overflows. */
static int64_t mul_sat(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static int plan_layout(ad_state *S, ad_tensor *t, const bool *mask, rplan *p) {
    int nd = t->ndim, first = -1, last = -1, count = 0;
    for (int d = 0; d < nd; d++)
        if (mask[d]) { if (first < 0) first = d; last = d; count++; }
    p->outer = p->n = p->inner = 1;
    if (count == 0 || (last - first + 1 == count && ad_tensor_is_contiguous(t))) {
        for (int d = 0; d < nd; d++) {
            if (count && d < first) p->outer = mul_sat(p->outer, t->shape[d]);
            else if (count && d <= last) p->n = mul_sat(p->n, t->shape[d]);
            else p->inner = mul_sat(p->inner, t->shape[d]);
        }
        p->x = ad_tensor_contiguous(S, t);
        return p->x ? ADDSL_OK : ad_fail(S);
    }
    int64_t perm[AD_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < nd; d++) if (!mask[d]) { perm[k++] = d; p->outer = mul_sat(p->outer, t->shape[d]); }
    for (int d = 0; d < nd; d++) if (mask[d]) { perm[k++] = d; p->n = mul_sat(p->n, t->shape[d]); }
    ad_tensor *pt = ad_tensor_permute(S, t, nd, perm);
    if (!pt) return ad_fail(S);
    p->x = ad_tensor_contiguous(S, pt);
    ad_tensor_decref(S, pt);
    return p->x ? ADDSL_OK : ad_fail(S);
}

static int plan_reduce(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims, bool keepdim,
                       rplan *p) {
    bool mask[AD_MAX_DIMS];
    int rc = mark_dims(S, t, ndims, dims, mask);
    if (rc) return rc;
    p->ondim = 0;
    p->zero_dim = -1;
    for (int d = 0; d < t->ndim; d++) {
        if (!mask[d]) p->oshape[p->ondim++] = t->shape[d];
        else if (keepdim) p->oshape[p->ondim++] = 1;
        if (mask[d] && t->shape[d] == 0 && p->zero_dim < 0) p->zero_dim = d;
    }
    return plan_layout(S, t, mask, p);
}

/* On the GPU: the module's reduction named like kernel 'kid' ("red_sum_f32"
 * runs "sum"). */
static int run_plan_device(ad_state *S, const rplan *p, ad_tensor *o, int kid) {
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    const char *kname = ad_kreg_name(S, kid);
    char op[32];
    const char *from = strncmp(kname, "red_", 4) == 0 ? kname + 4 : kname;
    const char *to = strrchr(from, '_');
    size_t n = to ? (size_t)(to - from) : strlen(from);
    snprintf(op, sizeof op, "%.*s", (int)(n < sizeof op ? n : sizeof op - 1), from);
    return ad_cuda_check(S, api->reduce(op, p->x->dtype, data_of(o), data_of(p->x), p->outer, p->n, p->inner, ad_cuda_stream(S)),
                         kname);
}

static ad_tensor *run_plan(ad_state *S, rplan *p, ad_dtype odt, int kid) {
    ad_tensor *o = ad_tensor_empty_on(S, odt, p->ondim, p->oshape, ad_tensor_device(p->x));
    if (!o) return NULL;
    if (ad_tensor_device(p->x) != AD_DEV_CPU) {
        if (run_plan_device(S, p, o, kid)) { ad_tensor_decref(S, o); return NULL; }
        return o;
    }
    ad_karg a[5] = {{.p = data_of(p->x)}, {.p = data_of(o)}, {.i64 = p->outer}, {.i64 = p->n},
                    {.i64 = p->inner}}, r;
    ad_kreg_call(S, kid, a, &r);
    return o;
}

/* Reduces 't' converted to 'cdt' with kernel 'kid' into dtype 'odt'. When
 * 'nonempty' names a function, a reduced dim of size 0 is an error. */
static ad_tensor *reduce_with(ad_state *S, ad_tensor *t, ad_dtype cdt, int ndims,
                              const int64_t *dims, bool keepdim, int kid, ad_dtype odt,
                              const char *nonempty) {
    ad_tensor *c = ad_tensor_to(S, t, cdt);
    if (!c) return NULL;
    rplan p;
    int rc = plan_reduce(S, c, ndims, dims, keepdim, &p);
    ad_tensor_decref(S, c);
    if (rc) return NULL;
    ad_tensor *o = NULL;
    if (nonempty && p.zero_dim >= 0)
        ad_error(S, "%s(): Expected reduction dim %d to have non-zero size.", nonempty, p.zero_dim);
    else
        o = run_plan(S, &p, odt, kid);
    ad_tensor_decref(S, p.x);
    return o;
}

/* Sizes before, at and after dim 'd' (0-d tensors are one element). */
static void split3(const ad_tensor *t, int d, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = *n = *inner = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (i < d) *outer = mul_sat(*outer, t->shape[i]);
        else if (i == d) *n = t->shape[i];
        else *inner = mul_sat(*inner, t->shape[i]);
    }
}

/* A same-shape map along one dim (softmax, cumsum) of 't' as dtype 'cdt'. */
static ad_tensor *map_dim(ad_state *S, ad_tensor *t, int64_t dim, ad_dtype cdt, int kid) {
    int d;
    if (ad_normalize_dim(S, dim, t->ndim, &d)) return NULL;
    ad_tensor *x = contig_as(S, t, cdt);
    if (!x) return NULL;
    ad_tensor *o = ad_tensor_empty(S, cdt, x->ndim, x->shape);
    /* No elements: nothing to map (the saturated outer/inner counts of an
     * empty tensor with huge other dims would still drive the kernel's loops). */
    if (o && o->numel > 0) {
        int64_t outer, n, inner;
        split3(x, d, &outer, &n, &inner);
        ad_karg a[5] = {{.p = data_of(x)}, {.p = data_of(o)}, {.i64 = outer}, {.i64 = n},
                        {.i64 = inner}}, r;
        ad_kreg_call(S, kid, a, &r);
    }
    ad_tensor_decref(S, x);
    return o;
}

/* ---- C entry points ----------------------------------------------------- */

static ad_dtype sum_dtype(const ad_tensor *t, int dtype) {
    if (dtype >= 0) return (ad_dtype)dtype;
    return ad_dtype_is_float(t->dtype) ? t->dtype : AD_INT64;
}

/* Sum-like reductions whose integer form runs in int64 (sum, prod). */
static ad_tensor *sum_like(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims,
                           bool keepdim, int dtype, const int *kids) {
    ad_dtype cdt = sum_dtype(t, dtype), kdt = cdt == AD_BOOL ? AD_INT64 : cdt;
    ad_tensor *o = reduce_with(S, t, kdt, ndims, dims, keepdim, kids[kdt], kdt, NULL);
    return cdt == AD_BOOL ? cast_steal(S, o, AD_BOOL) : o;
}

ad_tensor *ad_reduce_sum(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims,
                         bool keepdim, int dtype) {
    return sum_like(S, t, ndims, dims, keepdim, dtype, K_SUM);
}

ad_tensor *ad_reduce_mean(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims,
                          bool keepdim, int dtype) {
    ad_dtype cdt = dtype >= 0 ? (ad_dtype)dtype : t->dtype;
    if (!ad_dtype_is_float(cdt)) {
        ad_error(S, "mean(): could not infer output dtype. %s dtype must be either a floating "
                 "point or complex dtype. Got: %s", dtype >= 0 ? "Optional" : "Input",
                 ad_torch_dtype_name(cdt));
        return NULL;
    }
    return reduce_with(S, t, cdt, ndims, dims, keepdim, K_MEAN[cdt], cdt, NULL);
}

ad_tensor *ad_reduce_softmax(ad_state *S, ad_tensor *t, int64_t dim, bool log, const char *fn) {
    if (!ad_dtype_is_float(t->dtype)) {
        ad_error(S, "\"%s\" not implemented for '%s'", fn, ad_torch_dtype_name(t->dtype));
        return NULL;
    }
    return map_dim(S, t, dim, t->dtype, (log ? K_LOGSOFTMAX : K_SOFTMAX)[t->dtype]);
}

/* ---- builtins: sums and products ---------------------------------------- */

/* Parses (self, dim, keepdim, dtype) in that argv order; dtype index < 0: absent. */
typedef struct rargs {
    ad_tensor *t;
    int ndims;
    int64_t dims[AD_MAX_DIMS];
    bool keepdim;
    int dtype;
} rargs;

static int parse_rargs(ad_state *S, ad_value *argv, int idim, int ikeep, int idtype,
                       const char *fn, rargs *r) {
    r->t = NULL;
    r->ndims = -1;
    r->keepdim = false;
    r->dtype = -1;
    int rc = ad_arg_dims(S, argv[idim], fn, "dim", &r->ndims, r->dims);
    if (!rc && ikeep >= 0) rc = ad_arg_bool(S, argv[ikeep], fn, "keepdim", &r->keepdim);
    if (!rc && idtype >= 0) rc = ad_arg_dtype(S, argv[idtype], fn, "dtype", &r->dtype);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "input", &r->t);
    return rc;
}

typedef ad_tensor *dtype_reduce_fn(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims,
                                   bool keepdim, int dtype);

static ad_tensor *reduce_prod(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims,
                              bool keepdim, int dtype) {
    return sum_like(S, t, ndims, dims, keepdim, dtype, K_PROD);
}

/* The builtins (self, dim, keepdim, dtype) of sum, mean and prod. */
static int dtype_reduce(ad_state *S, ad_value *argv, const char *fn, dtype_reduce_fn *f, ad_value *out) {
    rargs r;
    int rc = parse_rargs(S, argv, 1, 2, 3, fn, &r);
    if (rc) return rc;
    ad_tensor *o = f(S, r.t, r.ndims, r.dims, r.keepdim, r.dtype);
    ad_tensor_decref(S, r.t);
    return ad_ret_tensor(S, o, out);
}

static int bi_sum(FN_ARGS) { (void)argc; return dtype_reduce(S, argv, "sum", ad_reduce_sum, out); }
static int bi_mean(FN_ARGS) { (void)argc; return dtype_reduce(S, argv, "mean", ad_reduce_mean, out); }
static int bi_prod(FN_ARGS) { (void)argc; return dtype_reduce(S, argv, "prod", reduce_prod, out); }

static int bool_reduce(ad_state *S, ad_value *argv, const char *fn, int kid, ad_value *out) {
    rargs r;
    int rc = parse_rargs(S, argv, 1, 2, -1, fn, &r);
    if (rc) return rc;
    ad_tensor *o = reduce_with(S, r.t, AD_BOOL, r.ndims, r.dims, r.keepdim, kid, AD_BOOL, NULL);
    ad_tensor_decref(S, r.t);
    return ad_ret_tensor(S, o, out);
}

static int bi_all(FN_ARGS) { (void)argc; return bool_reduce(S, argv, "all", AD_K_red_all_b8, out); }
static int bi_any(FN_ARGS) { (void)argc; return bool_reduce(S, argv, "any", AD_K_red_any_b8, out); }

static int bi_trace(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_tensor *t;
    int rc = ad_arg_tensor(S, argv[0], "trace", "input", &t);
    if (rc) return rc;
    ad_tensor *o = NULL;
    if (t->ndim != 2) {
        ad_error(S, "trace: expected a matrix, but got tensor with dim %d", t->ndim);
    } else {
        ad_tensor *dg = ad_tensor_diagonal(S, t, 0, 0, 1);
        if (dg) o = ad_reduce_sum(S, dg, -1, NULL, false, -1);
        ad_tensor_decref(S, dg);
    }
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, o, out);
}

/* ---- builtins: extremes ------------------------------------------------- */

static bool no_dims(int ndims) { return ndims <= 0; }

static int empty_all_error(ad_state *S, const char *fn, bool hint) {
    return ad_error(S, "%s(): Expected reduction dim to be specified for input.numel() == 0.%s", fn,
                    hint ? " Specify the reduction dim with the 'dim' argument." : "");
}

/* amax/amin over a dim set; bool runs as int64 and converts back. */
static ad_tensor *extreme_all(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims,
                              bool keepdim, bool is_max, const char *fn) {
    if (no_dims(ndims) && t->numel == 0) { empty_all_error(S, fn, true); return NULL; }
    ad_dtype kdt = t->dtype == AD_BOOL ? AD_INT64 : t->dtype;
    ad_tensor *o = reduce_with(S, t, kdt, ndims, dims, keepdim, (is_max ? K_AMAX : K_AMIN)[kdt],
                               kdt, fn);
    return t->dtype == AD_BOOL ? cast_steal(S, o, AD_BOOL) : o;
}

/* Values (when 'vals' is not NULL) and int64 indices of the extreme along dims. */
static int extreme_index(ad_state *S, ad_tensor *t, int ndims, const int64_t *dims, bool keepdim,
                         bool is_max, const char *fn, ad_tensor **vals, ad_tensor **idx) {
    if (ad_tensor_device(t) != AD_DEV_CPU)
        return ad_error(S, "%s(): indices of extremes are not implemented for CUDA tensors (move them with .cpu())", fn);
    ad_dtype kdt = t->dtype == AD_BOOL ? AD_INT64 : t->dtype;
    ad_tensor *c = ad_tensor_to(S, t, kdt);
    if (!c) return ad_fail(S);
    rplan p;
    int rc = plan_reduce(S, c, ndims, dims, keepdim, &p);
    ad_tensor_decref(S, c);
    if (rc) return rc;
    if (p.zero_dim >= 0) {
        ad_tensor_decref(S, p.x);
        return ad_error(S, "%s(): Expected reduction dim %d to have non-zero size.", fn, p.zero_dim);
    }
    ad_tensor *v = vals ? ad_tensor_empty(S, kdt, p.ondim, p.oshape) : NULL;
    ad_tensor *i = ad_tensor_empty(S, AD_INT64, p.ondim, p.oshape);
    if (i && (v || !vals)) {
        ad_karg a[6] = {{.p = data_of(p.x)}, {.p = v ? data_of(v) : NULL}, {.p = data_of(i)},
                        {.i64 = p.outer}, {.i64 = p.n}, {.i64 = p.inner}}, r;
        ad_kreg_call(S, (is_max ? K_ARGMAX : K_ARGMIN)[kdt], a, &r);
    }
    ad_tensor_decref(S, p.x);
    if (v && t->dtype == AD_BOOL) v = cast_steal(S, v, AD_BOOL);
    if (!i || (vals && !v)) {
        ad_tensor_decref(S, i);
        ad_tensor_decref(S, v);
        return ad_fail(S);
    }
    if (vals) *vals = v;
    *idx = i;
    return ADDSL_OK;
}

static int amax_amin(ad_state *S, ad_value *argv, bool is_max, const char *fn, ad_value *out) {
    rargs r;
    int rc = parse_rargs(S, argv, 1, 2, -1, fn, &r);
    if (rc) return rc;
    ad_tensor *o = extreme_all(S, r.t, r.ndims, r.dims, r.keepdim, is_max, fn);
    ad_tensor_decref(S, r.t);
    return ad_ret_tensor(S, o, out);
}

static int bi_amax(FN_ARGS) { (void)argc; return amax_amin(S, argv, true, "amax", out); }
static int bi_amin(FN_ARGS) { (void)argc; return amax_amin(S, argv, false, "amin", out); }

/* torch.max(a, b) with a tensor 'b' is torch.maximum: defer to that builtin. */
static int binary_extreme(ad_state *S, ad_value *argv, bool is_max, ad_value *out) {
    const char *name = is_max ? "maximum" : "minimum";
    for (const ad_builtin_def *d = ad_bi_elementwise_defs; d->name; d++)
        if (!strcmp(d->name, name)) return d->fn(S, argv, 2, out);
    return ad_error(S, "%s is not available", name);
}

/* max(t) is a 0-d tensor; max(t, dim) the tuple (values, indices). */
static int max_min(ad_state *S, ad_value *argv, bool is_max, const char *fn, ad_value *out) {
    if (argv[1].t == AD_TTENSOR) return binary_extreme(S, argv, is_max, out);
    if (argv[1].t == AD_TNONE) {
        ad_tensor *t;
        int rc = ad_arg_tensor(S, argv[0], fn, "input", &t);
        if (rc) return rc;
        ad_tensor *o = extreme_all(S, t, -1, NULL, false, is_max, fn);
        ad_tensor_decref(S, t);
        return ad_ret_tensor(S, o, out);
    }
    int64_t dim;
    bool keepdim;
    ad_tensor *t, *v = NULL, *i = NULL;
    int rc = ad_arg_int(S, argv[1], fn, "dim", &dim);
    if (!rc) rc = ad_arg_bool(S, argv[2], fn, "keepdim", &keepdim);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "input", &t);
    if (rc) return rc;
    rc = extreme_index(S, t, 1, &dim, keepdim, is_max, fn, &v, &i);
    ad_tensor_decref(S, t);
    if (rc) return rc;
    return ad_ret_pair(S, v, i, out);
}

static int bi_max(FN_ARGS) { (void)argc; return max_min(S, argv, true, "max", out); }
static int bi_min(FN_ARGS) { (void)argc; return max_min(S, argv, false, "min", out); }

/* argmax without dim indexes the flattened tensor. */
static int argmax_argmin(ad_state *S, ad_value *argv, bool is_max, const char *fn, ad_value *out) {
    rargs r;
    int rc = parse_rargs(S, argv, 1, 2, -1, fn, &r);
    if (rc) return rc;
    ad_tensor *i = NULL;
    if (r.ndims > 1) rc = ad_error(S, "%s(): argument 'dim' must be int, not list", fn);
    else if (r.ndims < 0 && r.t->numel == 0) rc = empty_all_error(S, fn, false);
    else rc = extreme_index(S, r.t, r.ndims, r.dims, r.keepdim, is_max, fn, NULL, &i);
    ad_tensor_decref(S, r.t);
    if (rc) return rc;
    return ad_ret_tensor(S, i, out);
}

static int bi_argmax(FN_ARGS) { (void)argc; return argmax_argmin(S, argv, true, "argmax", out); }
static int bi_argmin(FN_ARGS) { (void)argc; return argmax_argmin(S, argv, false, "argmin", out); }

/* ---- builtins: logsumexp, norms, moments -------------------------------- */

static int bi_logsumexp(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    rargs r;
    int rc = parse_rargs(S, argv, 1, 2, -1, "logsumexp", &r);
    if (rc) return rc;
    ad_dtype cdt = ad_dtype_is_float(r.t->dtype) ? r.t->dtype : AD_FLOAT32;
    ad_tensor *o = reduce_with(S, r.t, cdt, r.ndims, r.dims, r.keepdim, K_LSE[cdt], cdt, NULL);
    ad_tensor_decref(S, r.t);
    return ad_ret_tensor(S, o, out);
}

/* The order of a norm: a number, or "fro" / "inf" / "-inf". */
static int norm_order(ad_state *S, ad_value v, const char *fn, const char *pname, double *ord) {
    if (v.t == AD_TSTR) {
        const char *s = v.u.s->data;
        if (!strcmp(s, "fro")) *ord = 2;
        else if (!strcmp(s, "inf")) *ord = INFINITY;
        else if (!strcmp(s, "-inf")) *ord = -INFINITY;
        else return ad_error(S, "%s(): order '%s' is not supported", fn, s);
        return ADDSL_OK;
    }
    return ad_arg_double(S, v, fn, pname, ord);
}

static ad_tensor *vector_norm(ad_state *S, ad_tensor *t, double ord, rargs *r, bool strict_inf) {
    ad_dtype dt = t->dtype;
    rplan p;
    if (plan_reduce(S, t, r->ndims, r->dims, r->keepdim, &p)) return NULL;
    ad_tensor *o = NULL;
    if (strict_inf && isinf(ord) && p.n == 0 && p.outer * p.inner > 0)
        ad_error(S, "linalg.vector_norm cannot compute the %s norm on an empty tensor because "
                 "the operation does not have an identity", ord > 0 ? "inf" : "-inf");
    else if ((o = ad_tensor_empty(S, dt, p.ondim, p.oshape))) {
        ad_karg a[6] = {{.p = data_of(p.x)}, {.p = data_of(o)}, {.i64 = p.outer}, {.i64 = p.n},
                        {.i64 = p.inner}, {.f64 = ord}}, res;
        ad_kreg_call(S, K_NORM[dt], a, &res);
    }
    ad_tensor_decref(S, p.x);
    return o;
}

static int norm_common(ad_state *S, ad_value *argv, const char *fn, bool linalg, ad_value *out) {
    rargs r;
    double ord;
    int rc = norm_order(S, argv[1], fn, linalg ? "ord" : "p", &ord);
    if (!rc) rc = parse_rargs(S, argv, 2, 3, -1, fn, &r);
    if (rc) return rc;
    ad_tensor *o = NULL;
    if (ad_dtype_is_float(r.t->dtype))
        o = vector_norm(S, r.t, ord, &r, linalg);
    else if (linalg)
        ad_error(S, "linalg.vector_norm: Expected a floating point or complex tensor as input. Got %s",
                 ad_torch_dtype_name(r.t->dtype));
    else
        ad_error(S, "norm(): input dtype should be either floating point or complex. Got %s instead.",
                 ad_torch_dtype_name(r.t->dtype));
    ad_tensor_decref(S, r.t);
    return ad_ret_tensor(S, o, out);
}

static int bi_norm(FN_ARGS) { (void)argc; return norm_common(S, argv, "norm", false, out); }
static int bi_vector_norm(FN_ARGS) {
    (void)argc; return norm_common(S, argv, "linalg_vector_norm", true, out);
}

/* var/std and their _mean forms: params (self, dim, correction, keepdim, unbiased). */
static int moments(ad_state *S, ad_value *argv, const char *fn, bool take_sqrt, bool with_mean,
                   ad_value *out) {
    rargs r;
    double corr;
    int rc = ad_arg_double(S, argv[2], fn, "correction", &corr);
    if (!rc && argv[4].t != AD_TNONE) {
        bool unbiased;
        rc = ad_arg_bool(S, argv[4], fn, "unbiased", &unbiased);
        if (!rc) corr = unbiased ? 1 : 0;
    }
    if (!rc) rc = parse_rargs(S, argv, 1, 3, -1, fn, &r);
    if (rc) return rc;
    ad_tensor *v = NULL, *m = NULL;
    rplan p;
    if (!ad_dtype_is_float(r.t->dtype)) {
        ad_error(S, "std and var only support floating point and complex dtypes");
    } else if (!plan_reduce(S, r.t, r.ndims, r.dims, r.keepdim, &p)) {
        ad_dtype dt = r.t->dtype;
        v = ad_tensor_empty(S, dt, p.ondim, p.oshape);
        m = with_mean ? ad_tensor_empty(S, dt, p.ondim, p.oshape) : NULL;
        if (v && (m || !with_mean)) {
            ad_karg a[8] = {{.p = data_of(p.x)}, {.p = data_of(v)}, {.p = m ? data_of(m) : NULL},
                            {.i64 = p.outer}, {.i64 = p.n}, {.i64 = p.inner}, {.f64 = corr},
                            {.i32 = take_sqrt}}, res;
            ad_kreg_call(S, K_VAR[dt], a, &res);
        }
        ad_tensor_decref(S, p.x);
    }
    ad_tensor_decref(S, r.t);
    if (with_mean) return ad_ret_pair(S, v, m, out);
    return ad_ret_tensor(S, v, out);
}

static int bi_var(FN_ARGS) { (void)argc; return moments(S, argv, "var", false, false, out); }
static int bi_std(FN_ARGS) { (void)argc; return moments(S, argv, "std", true, false, out); }
static int bi_var_mean(FN_ARGS) { (void)argc; return moments(S, argv, "var_mean", false, true, out); }
static int bi_std_mean(FN_ARGS) { (void)argc; return moments(S, argv, "std_mean", true, true, out); }

/* ---- builtins: softmax and scans ---------------------------------------- */

/* (self, dim, dtype): the input is converted to 'dtype' first, as in torch. */
static int softmax_common(ad_state *S, ad_value *argv, bool log, const char *fn, ad_value *out) {
    int64_t dim;
    int dtype = -1;
    ad_tensor *t;
    int rc = ad_arg_int(S, argv[1], fn, "dim", &dim);
    if (!rc) rc = ad_arg_dtype(S, argv[2], fn, "dtype", &dtype);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "input", &t);
    if (rc) return rc;
    /* ad_tensor_to gives a new reference, t itself when the dtype is t's */
    if (dtype < 0) ad_tensor_incref(t);
    ad_tensor *c = dtype >= 0 ? ad_tensor_to(S, t, (ad_dtype)dtype) : t;
    ad_tensor *o = c ? ad_reduce_softmax(S, c, dim, log, fn) : NULL;
    ad_tensor_decref(S, c);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, o, out);
}

static int bi_softmax(FN_ARGS) { (void)argc; return softmax_common(S, argv, false, "softmax", out); }
static int bi_log_softmax(FN_ARGS) { (void)argc; return softmax_common(S, argv, true, "log_softmax", out); }

/* (self, dim, dtype): integer and bool inputs scan in int64, as torch does. */
static int scan_common(ad_state *S, ad_value *argv, const int *kids, const char *fn, ad_value *out) {
    int64_t dim;
    int dtype = -1;
    ad_tensor *t;
    int rc = ad_arg_int(S, argv[1], fn, "dim", &dim);
    if (!rc) rc = ad_arg_dtype(S, argv[2], fn, "dtype", &dtype);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "input", &t);
    if (rc) return rc;
    ad_dtype cdt = sum_dtype(t, dtype), kdt = cdt == AD_BOOL ? AD_INT64 : cdt;
    ad_tensor *o = map_dim(S, t, dim, kdt, kids[kdt]);
    if (cdt == AD_BOOL) o = cast_steal(S, o, AD_BOOL);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, o, out);
}

static int bi_cumsum(FN_ARGS) { (void)argc; return scan_common(S, argv, K_CUMSUM, "cumsum", out); }
static int bi_cumprod(FN_ARGS) { (void)argc; return scan_common(S, argv, K_CUMPROD, "cumprod", out); }

/* ---- builtins: sorting and selection ------------------------------------ */

/* Sorted rows of 't' along dim 'd' moved last (other dims keep their order):
 * contiguous values (dtype of t, bool as int64) and int64 indices. 'perm'
 * receives the permutation applied. */
static int sorted_rows(ad_state *S, ad_tensor *t, int d, bool desc, int64_t *perm,
                       ad_tensor **vals, ad_tensor **idx) {
    int nd = t->ndim, k = 0;
    for (int i = 0; i < nd; i++) if (i != d) perm[k++] = i;
    if (nd) perm[k] = d;
    ad_dtype kdt = t->dtype == AD_BOOL ? AD_INT64 : t->dtype;
    ad_tensor *pt = ad_tensor_permute(S, t, nd, perm);
    ad_tensor *x = pt ? contig_as(S, pt, kdt) : NULL;
    ad_tensor_decref(S, pt);
    if (!x) return ad_fail(S);
    int64_t n = nd ? x->shape[nd - 1] : 1, rows = n ? x->numel / n : 0;
    ad_tensor *v = ad_tensor_empty(S, kdt, nd, x->shape);
    ad_tensor *i = ad_tensor_empty(S, AD_INT64, nd, x->shape);
    int64_t *scratch = ad_malloc(S, (size_t)(n ? n : 1) * sizeof(int64_t));
    int rc = ADDSL_OK;
    if (v && i && scratch) {
        ad_karg a[7] = {{.p = data_of(x)}, {.p = data_of(v)}, {.p = data_of(i)}, {.p = scratch},
                        {.i64 = rows}, {.i64 = n}, {.i32 = desc}}, r;
        ad_kreg_call(S, K_SORT[kdt], a, &r);
    } else {
        rc = ad_fail(S);
        ad_tensor_decref(S, v);
        ad_tensor_decref(S, i);
        v = i = NULL;
    }
    ad_free(S, scratch);
    ad_tensor_decref(S, x);
    *vals = v;
    *idx = i;
    return rc;
}

/* Undoes the permutation of sorted_rows, giving a contiguous tensor; steals 'r'. */
static ad_tensor *unpermute(ad_state *S, ad_tensor *r, const int64_t *perm) {
    if (!r) return NULL;
    int64_t inv[AD_MAX_DIMS];
    for (int i = 0; i < r->ndim; i++) inv[perm[i]] = i;
    ad_tensor *p = ad_tensor_permute(S, r, r->ndim, inv);
    ad_tensor_decref(S, r);
    if (!p) return NULL;
    ad_tensor *c = ad_tensor_contiguous(S, p);
    ad_tensor_decref(S, p);
    return c;
}

/* Sorts along 'dim', keeping the first 'k' (k < 0: all) of each row. */
static int sort_select(ad_state *S, ad_tensor *t, int64_t dim, bool desc, int64_t k,
                       ad_tensor **vals, ad_tensor **idx) {
    int d;
    int64_t perm[AD_MAX_DIMS];
    int rc = ad_normalize_dim(S, dim, t->ndim, &d);
    if (rc) return rc;
    int64_t size = t->ndim ? t->shape[d] : 1;
    if (k > size) return ad_error(S, "selected index k out of range");
    ad_tensor *v, *i;
    rc = sorted_rows(S, t, d, desc, perm, &v, &i);
    if (rc) return rc;
    if (k >= 0 && k < size) {
        ad_tensor *nv = ad_tensor_narrow(S, v, -1, 0, k), *ni = ad_tensor_narrow(S, i, -1, 0, k);
        ad_tensor_decref(S, v);
        ad_tensor_decref(S, i);
        v = nv;
        i = ni;
    }
    v = unpermute(S, v, perm);
    i = unpermute(S, i, perm);
    if (v && t->dtype == AD_BOOL) v = cast_steal(S, v, AD_BOOL);
    if (!v || !i) {
        ad_tensor_decref(S, v);
        ad_tensor_decref(S, i);
        return ad_fail(S);
    }
    *vals = v;
    *idx = i;
    return ADDSL_OK;
}

/* sort and argsort(self, dim=-1, descending=false, stable=false): stable
 * either way; sort returns (values, indices), argsort the indices. */
static int sort_common(ad_state *S, ad_value *argv, const char *fn, bool with_vals, ad_value *out) {
    int64_t dim;
    bool desc;
    ad_tensor *t, *v = NULL, *i = NULL;
    int rc = ad_arg_int(S, argv[1], fn, "dim", &dim);
    if (!rc) rc = ad_arg_bool(S, argv[2], fn, "descending", &desc);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "input", &t);
    if (rc) return rc;
    rc = sort_select(S, t, dim, desc, -1, &v, &i);
    ad_tensor_decref(S, t);
    if (rc) return rc;
    if (with_vals) return ad_ret_pair(S, v, i, out);
    ad_tensor_decref(S, v);
    return ad_ret_tensor(S, i, out);
}

static int bi_sort(FN_ARGS) { (void)argc; return sort_common(S, argv, "sort", true, out); }
static int bi_argsort(FN_ARGS) { (void)argc; return sort_common(S, argv, "argsort", false, out); }

/* topk(self, k, dim=-1, largest=true, sorted=true): results are always sorted. */
static int bi_topk(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t k, dim;
    bool largest;
    ad_tensor *t, *v = NULL, *i = NULL;
    int rc = ad_arg_int(S, argv[1], "topk", "k", &k);
    if (!rc) rc = ad_arg_int(S, argv[2], "topk", "dim", &dim);
    if (!rc) rc = ad_arg_bool(S, argv[3], "topk", "largest", &largest);
    if (!rc && k < 0) rc = ad_error(S, "selected index k out of range");
    if (!rc) rc = ad_arg_tensor(S, argv[0], "topk", "input", &t);
    if (rc) return rc;
    rc = sort_select(S, t, dim, largest, k, &v, &i);
    ad_tensor_decref(S, t);
    if (rc) return rc;
    return ad_ret_pair(S, v, i, out);
}

/* Lower median of each sorted row; a row holding NaN gives its first NaN. */
static int64_t median_pos(const ad_tensor *v, int64_t row, int64_t n) {
    int64_t pos = (n - 1) / 2;
    if (!ad_dtype_is_float(v->dtype)) return pos;
    double last = ad_tensor_get_flat(v, row * n + n - 1);
    if (last == last) return pos;
    for (pos = 0; pos < n; pos++) {
        double x = ad_tensor_get_flat(v, row * n + pos);
        if (x != x) break;
    }
    return pos;
}

/* median(self, dim=none, keepdim=false) */
static int bi_median(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    bool keepdim, with_dim = argv[1].t != AD_TNONE;
    int64_t dim = 0, perm[AD_MAX_DIMS];
    ad_tensor *t, *src, *v = NULL, *i = NULL;
    int d = 0, rc = with_dim ? ad_arg_int(S, argv[1], "median", "dim", &dim) : ADDSL_OK;
    if (!rc) rc = ad_arg_bool(S, argv[2], "median", "keepdim", &keepdim);
    if (!rc) rc = ad_arg_tensor(S, argv[0], "median", "input", &t);
    if (rc) return rc;
    if (with_dim) {
        src = t;
        ad_tensor_incref(t);
        rc = ad_normalize_dim(S, dim, t->ndim, &d);
    } else {
        int64_t flat = t->numel;
        src = ad_tensor_reshape(S, t, 1, &flat);
        rc = src ? ADDSL_OK : ad_fail(S);
    }
    if (!rc && with_dim && t->ndim && t->shape[d] == 0)
        rc = ad_error(S, "median(): Expected reduction dim %d to have non-zero size.", d);
    if (!rc) rc = sorted_rows(S, src, d, false, perm, &v, &i);
    ad_tensor_decref(S, src);
    ad_tensor *mv = NULL, *mi = NULL;
    if (!rc) {
        int64_t n = v->ndim ? v->shape[v->ndim - 1] : 1, rows = n ? v->numel / n : 0;
        int64_t oshape[AD_MAX_DIMS];
        int ond = 0;
        for (int k = 0; k < t->ndim && with_dim; k++)
            if (k != d) oshape[ond++] = t->shape[k];
            else if (keepdim) oshape[ond++] = 1;
        mv = ad_tensor_empty(S, t->dtype, ond, oshape);
        mi = ad_tensor_empty(S, AD_INT64, ond, oshape);
        for (int64_t r = 0; mv && mi && r < rows; r++) {
            int64_t pos = median_pos(v, r, n);
            ad_tensor_set_flat(mv, r, ad_tensor_get_flat(v, r * n + pos));
            ad_tensor_set_flat(mi, r, ad_tensor_get_flat(i, r * n + pos));
        }
        if (mv && rows == 0) ad_tensor_fill(S, mv, NAN);
    }
    ad_tensor_decref(S, v);
    ad_tensor_decref(S, i);
    ad_tensor_decref(S, t);
    if (rc) return rc;
    if (with_dim) return ad_ret_pair(S, mv, mi, out);
    ad_tensor_decref(S, mi);
    return ad_ret_tensor(S, mv, out);
}

/* A position in each sorted row of length n (values v, original indices i)
 * for kthvalue and mode. */
typedef int64_t (*row_pick_fn)(const ad_tensor *v, const ad_tensor *i, int64_t row, int64_t n, int64_t arg);

/* The k-th smallest (arg = k - 1): the stable sort keeps ties in index order. */
static int64_t pick_kth(const ad_tensor *v, const ad_tensor *i, int64_t row, int64_t n, int64_t arg) {
    (void)v; (void)i; (void)row; (void)n;
    return arg;
}

/* The most frequent value; among equally frequent ones the smallest, and of
 * its entries the last (as torch's CPU mode: it scans the sorted row). */
static int64_t pick_mode(const ad_tensor *v, const ad_tensor *i, int64_t row, int64_t n, int64_t arg) {
    (void)i; (void)arg;
    int64_t best = 0, best_len = 0, start = 0;
    for (int64_t p = 1; p <= n; p++) {
        if (p < n && ad_tensor_get_flat(v, row * n + p) == ad_tensor_get_flat(v, row * n + start)) continue;
        if (p - start > best_len) { best_len = p - start; best = p - 1; }
        start = p;
    }
    return best;
}

/* (values, indices) of one picked entry per row along 'dim', shaped as a
 * reduction over it (keepdim keeps it as size 1). */
static int pick_rows(ad_state *S, ad_value *argv, const char *fn, ad_value vdim, ad_value vkeep,
                     row_pick_fn pick, int64_t k, ad_value *out) {
    bool keepdim;
    int64_t dim, perm[AD_MAX_DIMS];
    ad_tensor *t, *v = NULL, *i = NULL, *mv = NULL, *mi = NULL;
    int d = 0, rc = ad_arg_int(S, vdim, fn, "dim", &dim);
    if (!rc) rc = ad_arg_bool(S, vkeep, fn, "keepdim", &keepdim);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "input", &t);
    if (rc) return rc;
    rc = ad_normalize_dim(S, dim, t->ndim, &d);
    int64_t n = t->ndim ? t->shape[d] : 1;
    if (!rc && n == 0) rc = ad_error(S, "%s(): Expected reduction dim %d to have non-zero size.", fn, d);
    if (!rc && pick == pick_kth && (k < 0 || k >= n))
        rc = ad_error(S, "kthvalue(): selected number k out of range for dimension %d", d);
    if (!rc) rc = sorted_rows(S, t, d, false, perm, &v, &i);
    if (!rc) {
        int64_t rows = v->numel / n, oshape[AD_MAX_DIMS];
        int ond = 0;
        for (int a = 0; a < t->ndim; a++)
            if (a != d) oshape[ond++] = t->shape[a];
            else if (keepdim) oshape[ond++] = 1;
        mv = ad_tensor_empty(S, t->dtype, ond, oshape);
        mi = ad_tensor_empty(S, AD_INT64, ond, oshape);
        for (int64_t r = 0; mv && mi && r < rows; r++) {
            int64_t pos = pick(v, i, r, n, k);
            ad_tensor_set_flat(mv, r, ad_tensor_get_flat(v, r * n + pos));
            ad_tensor_set_flat(mi, r, ad_tensor_get_flat(i, r * n + pos));
        }
    }
    ad_tensor_decref(S, v);
    ad_tensor_decref(S, i);
    ad_tensor_decref(S, t);
    if (rc) return rc;
    return ad_ret_pair(S, mv, mi, out);
}

/* kthvalue(self, k, dim=-1, keepdim=false) */
static int bi_kthvalue(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t k;
    int rc = ad_arg_int(S, argv[1], "kthvalue", "k", &k);
    if (rc) return rc;
    return pick_rows(S, argv, "kthvalue", argv[2], argv[3], pick_kth, k - 1, out);
}

/* mode(self, dim=-1, keepdim=false) */
static int bi_mode(FN_ARGS) {
    (void)argc; return pick_rows(S, argv, "mode", argv[1], argv[2], pick_mode, 0, out);
}

const ad_builtin_def ad_bi_reduce_defs[] = {
    {"sum", bi_sum, "self, dim=none, keepdim=false, dtype=none"},
    {"mean", bi_mean, "self, dim=none, keepdim=false, dtype=none"},
    {"prod", bi_prod, "self, dim=none, keepdim=false, dtype=none"},
    {"all", bi_all, "self, dim=none, keepdim=false",
         "True where every element is non-zero, over all elements or along dim (keepdim keeps it "
         "as size 1); a bool tensor."
         "\nExample: all(tensor([true, false]))"},
    {"any", bi_any, "self, dim=none, keepdim=false",
         "True where some element is non-zero, over all elements or along dim; a bool tensor."
         "\nExample: any(tensor([0, 0, 1]))"},
    {"trace", bi_trace, "self"},
    {"amax", bi_amax, "self, dim=none, keepdim=false"},
    {"amin", bi_amin, "self, dim=none, keepdim=false"},
    {"max", bi_max, "self, dim=none, keepdim=false"},
    {"min", bi_min, "self, dim=none, keepdim=false"},
    {"argmax", bi_argmax, "self, dim=none, keepdim=false",
         "The index of the largest element: over the flattened tensor, or along dim (int64)."
         "\nExample: argmax(tensor([1.0, 5.0, 2.0]))   # 1"},
    {"argmin", bi_argmin, "self, dim=none, keepdim=false",
         "The index of the smallest element: over the flattened tensor, or along dim (int64)."
         "\nExample: argmin(tensor([[3.0, 1.0], [0.0, 4.0]]), dim=1)"},
    {"logsumexp", bi_logsumexp, "self, dim, keepdim=false"},
    {"norm", bi_norm, "self, p=2, dim=none, keepdim=false"},
    {"linalg_vector_norm", bi_vector_norm, "self, ord=2, dim=none, keepdim=false"},
    {"var", bi_var, "self, dim=none, correction=1, keepdim=false, unbiased=none"},
    {"std", bi_std, "self, dim=none, correction=1, keepdim=false, unbiased=none"},
    {"var_mean", bi_var_mean, "self, dim=none, correction=1, keepdim=false, unbiased=none"},
    {"std_mean", bi_std_mean, "self, dim=none, correction=1, keepdim=false, unbiased=none"},
    {"softmax", bi_softmax, "self, dim, dtype=none"},
    {"log_softmax", bi_log_softmax, "self, dim, dtype=none"},
    {"cumsum", bi_cumsum, "self, dim, dtype=none"},
    {"cumprod", bi_cumprod, "self, dim, dtype=none"},
    {"sort", bi_sort, "self, dim=-1, descending=false, stable=false"},
    {"argsort", bi_argsort, "self, dim=-1, descending=false, stable=false",
         "The indices that sort self along dim (ascending unless descending=true; stable=true "
         "keeps equal elements in order)."
         "\nExample: argsort(tensor([3.0, 1.0, 2.0]))"},
    {"topk", bi_topk, "self, k, dim=-1, largest=true, sorted=true"},
    {"median", bi_median, "self, dim=none, keepdim=false"},
    {"kthvalue", bi_kthvalue, "self, k, dim=-1, keepdim=false"},
    {"mode", bi_mode, "self, dim=-1, keepdim=false"},
    {NULL, NULL, NULL}
};

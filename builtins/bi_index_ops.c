/* bi_index_ops.c: forward kernels of the scans and reductions that have no
 * exact composite (cummax, cummin, logcumsumexp, scatter_reduce); lib/scans.ad
 * and lib/index_ops.ad give them their derivatives. Also _index_check, the
 * bounds check of the indexing ops that a trace records. */
#include <math.h>
#include <string.h>

#include "buf.h"
#include "builtins.h"
#include "tensor/device.h"
#include "state.h"

#define FN_ARGS ad_state *S, ad_value *argv, int argc, ad_value *out

/* A contiguous tensor seen as [outer, n, inner] around dim d. */
typedef struct rows3 { int64_t outer, n, inner; } rows3;

static rows3 rows_around(const ad_tensor *t, int d) {
    rows3 r = {1, 1, 1};
    for (int k = 0; k < t->ndim; k++) {
        if (k < d) r.outer *= t->shape[k];
        else if (k == d) r.n = t->shape[k];
        else r.inner *= t->shape[k];
    }
    return r;
}

/* The input of a scan along 'dim', made contiguous, with its normalized dim. */
static int scan_input(ad_state *S, ad_value *argv, const char *fn, ad_tensor **out, int *d) {
    ad_tensor *t;
    int64_t dim;
    int rc = ad_arg_int(S, argv[1], fn, "dim", &dim);
    if (rc || (rc = ad_arg_tensor(S, argv[0], fn, "self", &t))) return rc;
    rc = ad_normalize_dim(S, dim, t->ndim, d);
    ad_tensor *c = rc ? NULL : ad_tensor_contiguous(S, t);
    ad_tensor_decref(S, t);
    if (rc) return rc;
    if (!c) return ad_fail(S);
    *out = c;
    return ADDSL_OK;
}

/* cummax / cummin: ties take the later index and a NaN, once seen, wins the
 * rest of the row (torch's CPU kernel compares with >= / <= and isnan). */
static int cum_extreme(ad_state *S, ad_value *argv, const char *fn, bool is_max, ad_value *out) {
    ad_tensor *t;
    int d;
    int rc = scan_input(S, argv, fn, &t, &d);
    if (rc) return rc;
    ad_tensor *v = ad_tensor_empty(S, t->dtype, t->ndim, t->shape);
    ad_tensor *ix = ad_tensor_empty(S, AD_INT64, t->ndim, t->shape);
    rows3 r = rows_around(t, d);
    for (int64_t o = 0; v && ix && o < r.outer; o++)
        for (int64_t i = 0; i < r.inner; i++) {
            double best = 0.0;
            int64_t at = 0;
            for (int64_t k = 0; k < r.n; k++) {
                int64_t p = (o * r.n + k) * r.inner + i;
                double x = ad_tensor_get_flat(t, p);
                bool take = k == 0 || isnan(x) || (!isnan(best) && (is_max ? x >= best : x <= best));
                if (take) { best = x; at = k; }
                ad_tensor_set_flat(v, p, best);
                ((int64_t *)ad_tensor_data(ix))[p] = at;
            }
        }
    ad_tensor_decref(S, t);
    return ad_ret_pair(S, v, ix, out);
}

static int bi_cummax(FN_ARGS) { (void)argc; return cum_extreme(S, argv, "cummax", true, out); }
static int bi_cummin(FN_ARGS) { (void)argc; return cum_extreme(S, argv, "cummin", false, out); }

/* log(exp(a) + exp(b)) without overflow; equal infinities stay as they are. */
static double log_add_exp(double a, double b) {
    if (isnan(a) || isnan(b)) return NAN;
    double lo = a < b ? a : b, hi = a < b ? b : a;
    if (lo == hi && !isfinite(lo)) return a;
    return hi + log1p(exp(lo - hi));
}

static int bi_logcumsumexp(FN_ARGS) {
    (void)argc;
    ad_tensor *t;
    int d;
    int rc = scan_input(S, argv, "logcumsumexp", &t, &d);
    if (rc) return rc;
    if (!ad_dtype_is_float(t->dtype)) {
        rc = ad_error(S, "\"logcumsumexp_out_cpu\" not implemented for '%s'", ad_torch_dtype_name(t->dtype));
        ad_tensor_decref(S, t);
        return rc;
    }
    ad_tensor *v = ad_tensor_empty(S, t->dtype, t->ndim, t->shape);
    rows3 r = rows_around(t, d);
    for (int64_t o = 0; v && o < r.outer; o++)
        for (int64_t i = 0; i < r.inner; i++) {
            double acc = -INFINITY;
            for (int64_t k = 0; k < r.n; k++) {
                int64_t p = (o * r.n + k) * r.inner + i;
                acc = log_add_exp(acc, ad_tensor_get_flat(t, p));
                ad_tensor_set_flat(v, p, acc);
            }
        }
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, v, out);
}

/* ---- scatter_reduce ---- */

enum { RED_SUM, RED_PROD, RED_MEAN, RED_AMAX, RED_AMIN };

static int reduce_arg(ad_state *S, ad_value v, int *red) {
    static const char *const names[] = {"sum", "prod", "mean", "amax", "amin"};
    const char *s;
    int rc = ad_arg_str(S, v, "scatter_reduce", "reduce", &s);
    if (rc) return rc;
    for (int i = 0; i < 5; i++)
        if (!strcmp(s, names[i])) { *red = i; return ADDSL_OK; }
    return ad_error(S, "reduce argument must be either sum, prod, mean, amax or amin, got %s", s);
}

static double combine(int red, double acc, double x) {
    switch (red) {
    case RED_PROD: return acc * x;
    case RED_AMAX: return isnan(x) || isnan(acc) ? NAN : (x > acc ? x : acc);
    case RED_AMIN: return isnan(x) || isnan(acc) ? NAN : (x < acc ? x : acc);
    default: return acc + x;
    }
}

static int64_t offset_at(const ad_tensor *t, const int64_t *c, int dim, int64_t at) {
    int64_t off = t->offset;
    for (int k = 0; k < t->ndim; k++) off += (k == dim ? at : c[k]) * t->strides[k];
    return off;
}

static double load_at(const ad_tensor *t, int64_t off) {
    switch (t->dtype) {
    case AD_FLOAT32: return ((const float *)t->storage->data)[off];
    case AD_FLOAT64: return ((const double *)t->storage->data)[off];
    case AD_INT64: return (double)((const int64_t *)t->storage->data)[off];
    default: return ((const uint8_t *)t->storage->data)[off];
    }
}

static bool next_coord(int n, const int64_t *shape, int64_t *c) {
    for (int d = n - 1; d >= 0; d--) {
        if (++c[d] < shape[d]) return true;
        c[d] = 0;
    }
    return false;
}

static int shape_rule_error(ad_state *S, const ad_tensor *self, int d, const ad_tensor *index,
                            const ad_tensor *src) {
    ad_buf m;
    ad_buf_init(&m, S);
    ad_buf_puts(&m, "Expected index ");
    ad_buf_shape(&m, index->ndim, index->shape);
    ad_buf_puts(&m, " to be smaller than self ");
    ad_buf_shape(&m, self->ndim, self->shape);
    ad_buf_printf(&m, " apart from dimension %d and to be smaller size than src ", d);
    ad_buf_shape(&m, src->ndim, src->shape);
    int rc = m.failed ? ad_nomem(S) : ad_error(S, "%s", m.data);
    ad_buf_free(&m);
    return rc;
}

/* A 0-d tensor counts as one of shape [1] here, as in torch's checks. */
static int64_t size_at(const ad_tensor *t, int k) { return k < t->ndim ? t->shape[k] : 1; }

/* torch's gather/scatter shape rule: index no larger than src anywhere, nor
 * than self outside 'dim'; all three of one rank. */
static int check_scatter_shapes(ad_state *S, const ad_tensor *self, int d, const ad_tensor *index,
                                const ad_tensor *src) {
    if (index->dtype != AD_INT64) return ad_error(S, "scatter_reduce(): Expected dtype int64 for index");
    if (self->dtype != src->dtype)
        return ad_error(S, "scatter_reduce(): Expected self.dtype to be equal to src.dtype");
    if (index->numel == 0) return ADDSL_OK;
    int ns = self->ndim ? self->ndim : 1, ni = index->ndim ? index->ndim : 1, nr = src->ndim ? src->ndim : 1;
    if (ns != ni || nr != ni)
        return ad_error(S, "Index tensor must have the same number of dimensions as self tensor");
    for (int k = 0; k < index->ndim; k++) {
        if (index->shape[k] > size_at(src, k) || (k != d && index->shape[k] > size_at(self, k)))
            return shape_rule_error(S, self, d, index, src);
    }
    return ADDSL_OK;
}

/* The reduction itself on a contiguous copy of self ('count' holds how many
 * values each output entry received, self included). */
static int scatter_reduce_into(ad_state *S, ad_tensor *res, int d, const ad_tensor *index, const ad_tensor *src,
                               int red, bool include_self, double *count) {
    int nd = index->ndim;
    int64_t c[AD_MAX_DIMS] = {0};
    int64_t size = res->ndim ? res->shape[d] : 1;
    int64_t rstr[AD_MAX_DIMS];
    for (int k = 0; k < res->ndim; k++) rstr[k] = res->strides[k];
    if (index->numel == 0) return ADDSL_OK;
    do {
        int64_t j = (int64_t)load_at(index, offset_at(index, c, -1, 0));
        if (j < 0 || j >= size) /* torch's scatter takes no negative index either */
            return ad_error(S, "index %lld is out of bounds for dimension %d with size %lld", (long long)j, d,
                            (long long)size);
        int64_t p = nd == 0 && res->ndim ? j * rstr[0] : 0;
        for (int k = 0; k < nd; k++) p += (k == d ? j : c[k]) * rstr[k];
        double x = load_at(src, offset_at(src, c, -1, 0));
        double acc = ad_tensor_get_flat(res, p);
        bool first = !include_self && count[p] == 0;
        ad_tensor_set_flat(res, p, first ? x : combine(red, acc, x));
        count[p] += 1;
    } while (next_coord(nd, index->shape, c));
    return ADDSL_OK;
}

/* scatter_reduce(self, dim, index, src, reduce, include_self=true) */
static int bi_scatter_reduce(FN_ARGS) {
    (void)argc;
    ad_tensor *self = NULL, *index = NULL, *src = NULL, *res = NULL;
    int64_t dim;
    int d = 0, red = 0;
    bool include_self;
    double *count = NULL;
    int rc = ad_arg_int(S, argv[1], "scatter_reduce", "dim", &dim);
    if (!rc) rc = reduce_arg(S, argv[4], &red);
    if (!rc) rc = ad_arg_bool(S, argv[5], "scatter_reduce", "include_self", &include_self);
    if (!rc) rc = ad_arg_tensor(S, argv[0], "scatter_reduce", "self", &self);
    if (!rc) rc = ad_arg_tensor(S, argv[2], "scatter_reduce", "index", &index);
    if (!rc) rc = ad_arg_tensor(S, argv[3], "scatter_reduce", "src", &src);
    if (!rc) rc = ad_normalize_dim(S, dim, self->ndim, &d);
    if (!rc) rc = check_scatter_shapes(S, self, d, index, src);
    if (!rc && !(res = ad_tensor_clone(S, self))) rc = ad_fail(S);
    if (!rc && !(count = ad_calloc(S, res->numel ? (size_t)res->numel : 1, sizeof *count))) rc = ad_fail(S);
    for (int64_t i = 0; !rc && include_self && i < res->numel; i++) count[i] = 1;
    if (!rc) rc = scatter_reduce_into(S, res, d, index, src, red, include_self, count);
    bool integral = res && !ad_dtype_is_float(res->dtype);
    for (int64_t i = 0; !rc && red == RED_MEAN && i < res->numel; i++) {
        if (count[i] <= 1) continue;
        double q = ad_tensor_get_flat(res, i) / count[i];
        ad_tensor_set_flat(res, i, integral ? floor(q) : q);
    }
    ad_free(S, count);
    ad_tensor_decref(S, self);
    ad_tensor_decref(S, index);
    ad_tensor_decref(S, src);
    if (rc) { ad_tensor_decref(S, res); return rc; }
    return ad_ret_tensor(S, res, out);
}

/* _index_check(index, lo, hi, message): index itself (a new header over it)
 * when every value lies in [lo, hi], else the error 'message' with "{}"
 * replaced by the offending value (the smallest when one is below lo, else the
 * largest). The op library's bounds checks call it instead of reading
 * amin(index).item(), so a trace records the check as one call over a tensor
 * (replayed each time; export_c lowers it to clamping into [lo, hi]). */
static int bi_index_check(FN_ARGS) {
    (void)argc;
    ad_tensor *t = NULL, *h = NULL;
    int64_t lo, hi;
    const char *msg;
    int rc = ad_arg_int(S, argv[1], "_index_check", "lo", &lo);
    if (!rc) rc = ad_arg_int(S, argv[2], "_index_check", "hi", &hi);
    if (!rc) rc = ad_arg_str(S, argv[3], "_index_check", "message", &msg);
    if (!rc) rc = ad_arg_tensor(S, argv[0], "_index_check", "index", &t);
    if (rc) return rc;
    if (t->dtype != AD_INT64) {
        ad_tensor_decref(S, t);
        return ad_error(S, "_index_check(): index must be an int64 tensor, not %s", ad_dtype_name(t->dtype));
    }
    /* the values are read on the host; a GPU index is copied there first */
    if (!(h = ad_tensor_to_device(S, t, AD_DEV_CPU))) { ad_tensor_decref(S, t); return ad_fail(S); }
    int64_t mn = 0, mx = 0;
    for (int64_t i = 0; i < h->numel; i++) {
        int64_t v = (int64_t)ad_tensor_get_flat(h, i);
        if (i == 0 || v < mn) mn = v;
        if (i == 0 || v > mx) mx = v;
    }
    int64_t n = h->numel;
    ad_tensor_decref(S, h);
    if (n && (mn < lo || mx > hi)) {
        ad_tensor_decref(S, t);
        long long bad = mn < lo ? (long long)mn : (long long)mx;
        const char *at = strstr(msg, "{}");
        if (!at) return ad_error(S, "%s", msg);
        return ad_error(S, "%.*s%lld%s", (int)(at - msg), msg, bad, at + 2);
    }
    ad_tensor *r = ad_tensor_alias(S, t);
    ad_tensor_decref(S, t);
    return ad_ret_tensor(S, r, out);
}

const ad_builtin_def ad_bi_index_ops_defs[] = {
    {"_index_check", bi_index_check, "index, lo, hi, message"},
    {"cummax", bi_cummax, "self, dim"},
    {"cummin", bi_cummin, "self, dim"},
    {"logcumsumexp", bi_logcumsumexp, "self, dim"},
    {"scatter_reduce", bi_scatter_reduce, "self, dim, index, src, reduce, include_self=true"},
    {NULL, NULL, NULL},
};

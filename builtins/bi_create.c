/* bi_create.c: tensor creation builtins (tensor, zeros, arange, rand, *_like, ...)
 * and the conversions between nested lists and tensors. */
#include <math.h>
#include <string.h>

#include "builtins.h"
#include "tensor/device.h"
#include "state.h"
#include "buf.h"

/* ---- nested lists -> tensor ---- */

typedef struct scan {
    int ndim;
    int64_t shape[AD_MAX_DIMS];
    int dtype; /* promoted dtype of the leaves so far, -1 before the first */
} scan;

/* The shape follows the first element at each depth, as torch infers it. */
static int scan_shape(ad_state *S, ad_value v, scan *sc) {
    sc->ndim = 0;
    while (ad_is_seq(v)) {
        if (sc->ndim == AD_MAX_DIMS)
            return ad_error(S, "tensor(): too many dimensions (at most %d)", AD_MAX_DIMS);
        sc->shape[sc->ndim++] = v.u.l->len;
        if (v.u.l->len == 0) break;
        v = v.u.l->items[0];
    }
    return AD_OK;
}

static int leaf_dtype(ad_state *S, ad_value v, int *dt) {
    switch (v.t) {
    case AD_TINT: *dt = AD_INT64; return AD_OK;
    case AD_TNUM: *dt = AD_FLOAT32; return AD_OK;
    case AD_TBOOL: *dt = AD_BOOL; return AD_OK;
    case AD_TTENSOR:
        if (v.u.tensor->numel != 1)
            return ad_error(S, "only one element tensors can be converted to Python scalars");
        *dt = v.u.tensor->dtype;
        return AD_OK;
    case AD_TSTR: return ad_error(S, "too many dimensions 'str'");
    default: return ad_error(S, "Could not infer dtype of %s", ad_type_name(v));
    }
}

/* Checks every sequence against the inferred shape and promotes leaf dtypes. */
static int scan_check(ad_state *S, ad_value v, int depth, scan *sc) {
    if (depth == sc->ndim) {
        if (ad_is_seq(v)) return ad_error(S, "tensor(): too many dimensions at dim %d", depth);
        int dt = -1;
        int rc = leaf_dtype(S, v, &dt);
        if (rc) return rc;
        sc->dtype = sc->dtype < 0 ? dt : (int)ad_promote((ad_dtype)sc->dtype, (ad_dtype)dt);
        return AD_OK;
    }
    if (!ad_is_seq(v)) return ad_error(S, "not a sequence");
    if (v.u.l->len != sc->shape[depth])
        return ad_error(S, "expected sequence of length %lld at dim %d (got %lld)",
                        (long long)sc->shape[depth], depth, (long long)v.u.l->len);
    for (int64_t i = 0; i < v.u.l->len; i++) {
        int rc = scan_check(S, v.u.l->items[i], depth + 1, sc);
        if (rc) return rc;
    }
    return AD_OK;
}

static double leaf_number(ad_value v) {
    if (v.t == AD_TBOOL) return v.u.b ? 1.0 : 0.0;
    if (v.t == AD_TTENSOR) return ad_tensor_get_flat(v.u.tensor, 0);
    return v.u.n;
}

static void fill_from(ad_tensor *t, ad_value v, int depth, int64_t *pos) {
    if (depth == t->ndim) {
        ad_tensor_set_flat(t, (*pos)++, leaf_number(v));
        return;
    }
    for (int64_t i = 0; i < v.u.l->len; i++) fill_from(t, v.u.l->items[i], depth + 1, pos);
}

static int from_tensor(ad_state *S, ad_tensor *src, int dtype, ad_tensor **out) {
    ad_tensor *c = ad_tensor_clone(S, src);
    if (!c) return S->errcode;
    if (dtype >= 0 && dtype != (int)c->dtype) {
        ad_tensor *d = ad_tensor_to(S, c, (ad_dtype)dtype);
        ad_tensor_decref(S, c);
        if (!d) return S->errcode;
        c = d;
    }
    *out = c;
    return AD_OK;
}

int ad_tensor_from_value(ad_state *S, ad_value v, int dtype, ad_tensor **out) {
    if (v.t == AD_TTENSOR) return from_tensor(S, v.u.tensor, dtype, out);
    scan sc;
    sc.dtype = -1;
    int rc = scan_shape(S, v, &sc);
    if (rc || (rc = scan_check(S, v, 0, &sc))) return rc;
    if (dtype < 0) dtype = sc.dtype < 0 ? AD_FLOAT32 : sc.dtype;
    ad_tensor *t = ad_tensor_empty(S, (ad_dtype)dtype, sc.ndim, sc.shape);
    if (!t) return S->errcode;
    int64_t pos = 0;
    fill_from(t, v, 0, &pos);
    *out = t;
    return AD_OK;
}

/* ---- tensor -> nested lists ---- */

static ad_value scalar_value(ad_dtype dt, double x) {
    if (dt == AD_BOOL) return ad_bool(x != 0.0);
    if (dt == AD_INT64) return ad_int(x);
    return ad_num(x);
}

static int to_list(ad_state *S, const ad_tensor *t, int depth, int64_t *pos, ad_value *out) {
    if (depth == t->ndim) {
        *out = scalar_value(t->dtype, ad_tensor_get_flat(t, (*pos)++));
        return AD_OK;
    }
    ad_list *l = ad_list_new(S, AD_TLIST, t->shape[depth]);
    if (!l) return S->errcode;
    for (int64_t i = 0; i < t->shape[depth]; i++) {
        int rc = to_list(S, t, depth + 1, pos, &l->items[i]);
        if (rc) { ad_value_decref(S, ad_list_value(l, AD_TLIST)); return rc; }
    }
    *out = ad_list_value(l, AD_TLIST);
    return AD_OK;
}

int ad_tensor_to_value(ad_state *S, const ad_tensor *t, ad_value *out) {
    int64_t pos = 0;
    return to_list(S, t, 0, &pos, out);
}

/* ---- shared argument handling ---- */

/* The device a 'device=' argument names (none: dflt). */
static int device_arg(ad_state *S, ad_value v, const char *fn, int dflt, int *dev) {
    *dev = dflt;
    if (v.t == AD_TNONE) return AD_OK;
    if (v.t != AD_TSTR) return ad_error(S, "%s(): argument 'device' must be a string like \"cuda\" or \"cpu\", not %s", fn, ad_type_name(v));
    return ad_device_parse(S, v.u.s->data, dev);
}

/* rest: requires_grad, device. The tensor moves to the device asked for
 * (none: dflt) and the flag is set. */
static int finish(ad_state *S, ad_tensor *t, const ad_value *rest, int dflt, const char *fn, ad_value *out) {
    bool req = false;
    if (!t) return S->errcode;
    int dev, rc = device_arg(S, rest[1], fn, dflt, &dev);
    if (!rc && dev != ad_tensor_device(t)) {
        ad_tensor *m = ad_tensor_to_device(S, t, dev);
        ad_tensor_decref(S, t);
        if (!m) return S->errcode;
        t = m;
    }
    if (!rc) rc = ad_arg_bool(S, rest[0], fn, "requires_grad", &req);
    if (!rc && req && !ad_dtype_is_float(t->dtype))
        rc = ad_error(S, "Only Tensors of floating point and complex dtype can require gradients");
    if (rc) { ad_tensor_decref(S, t); return rc; }
    t->requires_grad = req;
    *out = ad_tensor_value(t);
    return AD_OK;
}

typedef struct shape_arg {
    int ndim;
    int64_t shape[AD_MAX_DIMS];
} shape_arg;

static int get_shape(ad_state *S, ad_value v, const char *fn, shape_arg *sh) {
    int rc = ad_arg_shape(S, v, fn, "size", &sh->ndim, sh->shape);
    if (rc) return rc;
    for (int i = 0; i < sh->ndim; i++)
        if (sh->shape[i] < 0) {
            ad_buf b;
            ad_buf_init(&b, S);
            ad_buf_shape(&b, sh->ndim, sh->shape);
            rc = ad_error(S, "Trying to create tensor with negative dimension %lld: %s",
                          (long long)sh->shape[i], b.failed ? "" : b.data);
            ad_buf_free(&b);
            return rc;
        }
    return AD_OK;
}

static int get_dtype(ad_state *S, ad_value v, const char *fn, int dflt, int *dt) {
    *dt = dflt;
    return ad_arg_dtype(S, v, fn, "dtype", dt);
}

/* ---- tensor(data, dtype=none, requires_grad=false) ---- */

static int bi_tensor(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int dt = -1;
    ad_tensor *t = NULL;
    int rc = ad_arg_dtype(S, argv[1], "tensor", "dtype", &dt);
    if (rc || (rc = ad_tensor_from_value(S, argv[0], dt, &t))) return rc;
    return finish(S, t, &argv[2], AD_DEV_CPU, "tensor", out);
}

/* ---- zeros / ones / empty / full ---- */

static int filled(ad_state *S, ad_value *argv, const char *fn, double v, bool empty, ad_value *out) {
    shape_arg sh;
    int dt;
    int rc = get_shape(S, argv[0], fn, &sh);
    if (rc || (rc = get_dtype(S, argv[1], fn, AD_FLOAT32, &dt))) return rc;
    ad_tensor *t = empty ? ad_tensor_empty(S, (ad_dtype)dt, sh.ndim, sh.shape)
                         : ad_tensor_full(S, (ad_dtype)dt, sh.ndim, sh.shape, v);
    return finish(S, t, &argv[2], AD_DEV_CPU, fn, out);
}

static int bi_zeros(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return filled(S, argv, "zeros", 0.0, false, out);
}

static int bi_ones(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return filled(S, argv, "ones", 1.0, false, out);
}

static int bi_empty(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return filled(S, argv, "empty", 0.0, true, out);
}

/* A fill value: a number, a bool or a one-element tensor; its natural dtype. */
static int fill_value(ad_state *S, ad_value v, const char *fn, double *x, int *dt) {
    if (v.t == AD_TTENSOR) {
        *dt = v.u.tensor->dtype;
        return ad_tensor_item(S, v.u.tensor, x);
    }
    if (v.t == AD_TBOOL) { *x = v.u.b; *dt = AD_BOOL; return AD_OK; }
    *dt = v.t == AD_TINT ? AD_INT64 : AD_FLOAT32;
    return ad_arg_double(S, v, fn, "fill_value", x);
}

static int bi_full(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    shape_arg sh;
    double x;
    int dt;
    int rc = get_shape(S, argv[0], "full", &sh);
    if (rc || (rc = fill_value(S, argv[1], "full", &x, &dt))) return rc;
    if ((rc = ad_arg_dtype(S, argv[2], "full", "dtype", &dt))) return rc;
    return finish(S, ad_tensor_full(S, (ad_dtype)dt, sh.ndim, sh.shape, x), &argv[3], AD_DEV_CPU, "full", out);
}

/* ---- arange / linspace / eye ---- */

static int arange_args(ad_state *S, ad_value *argv, double *a, double *b, double *st, int *dt) {
    bool ints = true;
    for (int i = 0; i < 3; i++)
        if (argv[i].t != AD_TNONE && argv[i].t != AD_TINT) ints = false;
    *dt = ints ? AD_INT64 : AD_FLOAT32;
    int rc = ad_arg_dtype(S, argv[3], "arange", "dtype", dt);
    if (rc || (rc = ad_arg_double(S, argv[0], "arange", "start", a))) return rc;
    if (argv[1].t == AD_TNONE) { *b = *a; *a = 0; }
    else if ((rc = ad_arg_double(S, argv[1], "arange", "end", b))) return rc;
    if ((rc = ad_arg_double(S, argv[2], "arange", "step", st))) return rc;
    if (*dt == AD_INT64) { /* torch does the arithmetic in the output's integer type */
        *a = trunc(*a); *b = trunc(*b); *st = trunc(*st);
    }
    return AD_OK;
}

static int bi_arange(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    double a, b, st;
    int dt;
    int rc = arange_args(S, argv, &a, &b, &st, &dt);
    if (rc) return rc;
    if (st == 0) return ad_error(S, "step must be nonzero");
    if (!isfinite(a) || !isfinite(b)) return ad_error(S, "unsupported range: %g -> %g", a, b);
    if ((st > 0 && b < a) || (st < 0 && b > a))
        return ad_error(S, "upper bound and larger bound inconsistent with step sign");
    double n = ceil((b - a) / st);
    if (n > 9.2e18) return ad_error(S, "invalid size, possible overflow?");
    int64_t len = (int64_t)n;
    ad_tensor *t = ad_tensor_empty(S, (ad_dtype)dt, 1, &len);
    if (t)
        for (int64_t i = 0; i < len; i++) ad_tensor_set_flat(t, i, a + (double)i * st);
    return finish(S, t, &argv[4], AD_DEV_CPU, "arange", out);
}

static void linspace_fill(ad_tensor *t, double a, double b, int64_t n) {
    int64_t half = n / 2;
    if (n == 1) { ad_tensor_set_flat(t, 0, a); return; }
    if (t->dtype == AD_FLOAT32) { /* torch steps in float for float32 output */
        float fa = (float)a, fb = (float)b, step = n > 1 ? (fb - fa) / (float)(n - 1) : 0.0f;
        for (int64_t i = 0; i < n; i++)
            ad_tensor_set_flat(t, i, i < half ? fa + step * (float)i : fb - step * (float)(n - i - 1));
        return;
    }
    double step = n > 1 ? (b - a) / (double)(n - 1) : 0.0;
    for (int64_t i = 0; i < n; i++)
        ad_tensor_set_flat(t, i, i < half ? a + step * (double)i : b - step * (double)(n - i - 1));
}

static int bi_linspace(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    double a, b;
    int64_t n;
    int dt = AD_FLOAT32;
    int rc = ad_arg_double(S, argv[0], "linspace", "start", &a);
    if (rc || (rc = ad_arg_double(S, argv[1], "linspace", "end", &b))) return rc;
    if ((rc = ad_arg_int(S, argv[2], "linspace", "steps", &n))) return rc;
    if ((rc = ad_arg_dtype(S, argv[3], "linspace", "dtype", &dt))) return rc;
    if (n < 0) return ad_error(S, "number of steps must be non-negative");
    ad_tensor *t = ad_tensor_empty(S, (ad_dtype)dt, 1, &n);
    if (t) linspace_fill(t, a, b, n);
    return finish(S, t, &argv[4], AD_DEV_CPU, "linspace", out);
}

static int bi_eye(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t sh[2];
    int dt = AD_FLOAT32;
    int rc = ad_arg_int(S, argv[0], "eye", "n", &sh[0]);
    if (rc) return rc;
    sh[1] = sh[0];
    if (argv[1].t != AD_TNONE && (rc = ad_arg_int(S, argv[1], "eye", "m", &sh[1]))) return rc;
    if ((rc = ad_arg_dtype(S, argv[2], "eye", "dtype", &dt))) return rc;
    if (sh[0] < 0) return ad_error(S, "n must be greater or equal to 0, got %lld", (long long)sh[0]);
    if (sh[1] < 0) return ad_error(S, "m must be greater or equal to 0, got %lld", (long long)sh[1]);
    ad_tensor *t = ad_tensor_zeros(S, (ad_dtype)dt, 2, sh);
    if (t)
        for (int64_t i = 0; i < sh[0] && i < sh[1]; i++) ad_tensor_set_flat(t, i * sh[1] + i, 1.0);
    return finish(S, t, &argv[3], AD_DEV_CPU, "eye", out);
}

/* ---- random ---- */

static void fill_uniform(ad_state *S, ad_tensor *t) {
    for (int64_t i = 0; i < t->numel; i++) {
        /* 24 bits for float32 so rounding can never produce 1.0 */
        double u = t->dtype == AD_FLOAT32 ? (double)(ad_rng_next(&S->rng) >> 40) * 0x1.0p-24
                                          : ad_rng_uniform(&S->rng);
        ad_tensor_set_flat(t, i, u);
    }
}

static void fill_normal(ad_state *S, ad_tensor *t) {
    for (int64_t i = 0; i < t->numel; i++) ad_tensor_set_flat(t, i, ad_rng_normal(&S->rng));
}

static int check_float_random(ad_state *S, int dt, bool normal) {
    if (ad_dtype_is_float((ad_dtype)dt)) return AD_OK;
    const char *tn = dt == AD_BOOL ? "Bool" : "Long";
    if (normal) return ad_error(S, "\"normal_kernel_cpu\" not implemented for '%s'", tn);
    return ad_error(S, "\"check_uniform_bounds\" not implemented for '%s'", tn);
}

static int random_new(ad_state *S, ad_value *argv, const char *fn, bool normal, ad_value *out) {
    shape_arg sh;
    int dt;
    int rc = get_shape(S, argv[0], fn, &sh);
    if (rc || (rc = get_dtype(S, argv[1], fn, AD_FLOAT32, &dt))) return rc;
    if ((rc = check_float_random(S, dt, normal))) return rc;
    ad_tensor *t = ad_tensor_empty(S, (ad_dtype)dt, sh.ndim, sh.shape);
    if (t) { if (normal) fill_normal(S, t); else fill_uniform(S, t); }
    return finish(S, t, &argv[2], AD_DEV_CPU, fn, out);
}

static int bi_rand(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return random_new(S, argv, "rand", false, out);
}

static int bi_randn(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return random_new(S, argv, "randn", true, out);
}

/* Uniform in [0, range) without modulo bias. */
static uint64_t rng_below(ad_rng *r, uint64_t range) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % range;
    uint64_t x;
    do x = ad_rng_next(r); while (x >= limit);
    return x % range;
}

/* randint(low, high, size) or randint(high, size), as torch allows. */
static int bi_randint(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t lo = 0, hi;
    ad_value size = argv[2], vlo = argv[0], vhi = argv[1];
    if (size.t == AD_TNONE) { size = argv[1]; vhi = argv[0]; vlo = ad_int(0); }
    shape_arg sh;
    int dt = AD_INT64;
    int rc = ad_arg_int(S, vlo, "randint", "low", &lo);
    if (rc || (rc = ad_arg_int(S, vhi, "randint", "high", &hi))) return rc;
    if ((rc = get_shape(S, size, "randint", &sh))) return rc;
    if ((rc = ad_arg_dtype(S, argv[3], "randint", "dtype", &dt))) return rc;
    if (lo >= hi)
        return ad_error(S, "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                        (long long)lo, (long long)hi);
    ad_tensor *t = ad_tensor_empty(S, (ad_dtype)dt, sh.ndim, sh.shape);
    uint64_t range = (uint64_t)hi - (uint64_t)lo;
    if (t)
        for (int64_t i = 0; i < t->numel; i++)
            ad_tensor_set_flat(t, i, (double)(int64_t)((uint64_t)lo + rng_below(&S->rng, range)));
    return finish(S, t, &argv[4], AD_DEV_CPU, "randint", out);
}

static int bi_manual_seed(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t seed;
    int rc = ad_arg_int(S, argv[0], "manual_seed", "seed", &seed);
    if (rc) return rc;
    ad_rng_seed(&S->rng, (uint64_t)seed);
    *out = ad_none();
    return AD_OK;
}

/* ---- *_like ---- */

enum { LIKE_ZEROS, LIKE_ONES, LIKE_EMPTY, LIKE_FULL, LIKE_RAND, LIKE_RANDN };

/* argv: self, [fill_value,] dtype, requires_grad. */
static int like(ad_state *S, ad_value *argv, const char *fn, int kind, ad_value *out) {
    ad_tensor *src;
    double x = kind == LIKE_ONES ? 1.0 : 0.0;
    int rc = ad_arg_tensor(S, argv[0], fn, "self", &src);
    if (rc) return rc;
    int dt = src->dtype, k = kind == LIKE_FULL ? 2 : 1;
    ad_tensor *t = NULL;
    if (kind == LIKE_FULL) rc = ad_arg_double(S, argv[1], fn, "fill_value", &x);
    if (!rc) rc = ad_arg_dtype(S, argv[k], fn, "dtype", &dt);
    if (!rc && kind >= LIKE_RAND) rc = check_float_random(S, dt, kind == LIKE_RANDN);
    /* Random numbers come from the host generator (the same stream on every
     * device); the rest is made where it will live. */
    int dev = AD_DEV_CPU;
    if (!rc) rc = device_arg(S, argv[k + 2], fn, ad_tensor_device(src), &dev);
    if (!rc) {
        t = kind >= LIKE_RAND ? ad_tensor_empty(S, (ad_dtype)dt, src->ndim, src->shape)
            : kind == LIKE_EMPTY ? ad_tensor_empty_on(S, (ad_dtype)dt, src->ndim, src->shape, dev)
                                 : ad_tensor_full_on(S, (ad_dtype)dt, src->ndim, src->shape, x, dev);
        if (t && kind == LIKE_RAND) fill_uniform(S, t);
        if (t && kind == LIKE_RANDN) fill_normal(S, t);
    }
    ad_tensor_decref(S, src);
    if (rc) return rc;
    return finish(S, t, &argv[k + 1], dev, fn, out);
}

static int bi_zeros_like(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return like(S, argv, "zeros_like", LIKE_ZEROS, out);
}

static int bi_ones_like(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return like(S, argv, "ones_like", LIKE_ONES, out);
}

static int bi_empty_like(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return like(S, argv, "empty_like", LIKE_EMPTY, out);
}

static int bi_full_like(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return like(S, argv, "full_like", LIKE_FULL, out);
}

static int bi_rand_like(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return like(S, argv, "rand_like", LIKE_RAND, out);
}

static int bi_randn_like(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return like(S, argv, "randn_like", LIKE_RANDN, out);
}

const ad_builtin_def ad_bi_create_defs[] = {
    {"tensor", bi_tensor, "data, dtype=none, requires_grad=false, device=none",
         "A new tensor from a number or a nested list (ints give int64, floats float32, bools "
         "bool, unless dtype says); requires_grad=true makes it a leaf that collects gradients."
         "\nExample: tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=true)"},
    {"zeros", bi_zeros, "*size, dtype=none, requires_grad=false, device=none",
         "A tensor of zeros of the given size (as a list or as separate numbers)."
         "\nExample: zeros(2, 3, dtype=float64)"},
    {"ones", bi_ones, "*size, dtype=none, requires_grad=false, device=none",
         "A tensor of ones of the given size (as a list or as separate numbers)."
         "\nExample: ones([2, 3])"},
    {"empty", bi_empty, "*size, dtype=none, requires_grad=false, device=none",
         "A tensor of the given size whose values are not to be relied on (addsl fills it with "
         "zeros), as torch.empty."
         "\nExample: empty(2, 2)"},
    {"full", bi_full, "size, fill_value, dtype=none, requires_grad=false, device=none",
         "A tensor of the given size filled with fill_value (its dtype follows the value: int64 "
         "for an int, float32 for a float, unless dtype says)."
         "\nExample: full([2, 3], 7.0)"},
    {"arange", bi_arange, "start, end=none, step=1, dtype=none, requires_grad=false, device=none",
         "Evenly spaced values in [start, end) by step; arange(n) counts from 0. Integer arguments "
         "give int64, any float float32."
         "\nExample: arange(0, 1, 0.25)"},
    {"linspace", bi_linspace, "start, end, steps, dtype=none, requires_grad=false, device=none",
         "steps values evenly spaced from start to end, both included."
         "\nExample: linspace(0, 1, 5)"},
    {"eye", bi_eye, "n, m=none, dtype=none, requires_grad=false, device=none",
         "The n x m identity matrix (m defaults to n): ones on the diagonal, zeros elsewhere."
         "\nExample: eye(3)"},
    {"rand", bi_rand, "*size, dtype=none, requires_grad=false, device=none",
         "A tensor of samples uniform in [0, 1)."
         "\nExample: rand(5)"},
    {"randn", bi_randn, "*size, dtype=none, requires_grad=false, device=none",
         "A tensor of samples of the standard normal distribution (manual_seed makes them "
         "repeatable)."
         "\nExample: randn(3, 4)"},
    {"randint", bi_randint, "low, high, size=none, dtype=none, requires_grad=false, device=none",
         "A tensor of the given size of random integers in [low, high) (int64 unless dtype says)."
         "\nExample: randint(0, 10, [5])"},
    {"manual_seed", bi_manual_seed, "seed",
         "Seeds the random number generator, so randn, rand and randint repeat."
         "\nExample: manual_seed(0)"},
    {"zeros_like", bi_zeros_like, "self, dtype=none, requires_grad=false, device=none",
         "A tensor of zeros with the shape (and, unless given, the dtype and device) of self."
         "\nExample: zeros_like(randn(2, 3))"},
    {"ones_like", bi_ones_like, "self, dtype=none, requires_grad=false, device=none",
         "A tensor of ones with the shape (and, unless given, the dtype and device) of self."
         "\nExample: ones_like(randn(2, 3))"},
    {"empty_like", bi_empty_like, "self, dtype=none, requires_grad=false, device=none",
         "An uninitialised tensor (zeros in addsl) with the shape, dtype and device of self, as "
         "torch.empty_like."
         "\nExample: empty_like(randn(4))"},
    {"full_like", bi_full_like, "self, fill_value, dtype=none, requires_grad=false, device=none",
         "A tensor with the shape of self filled with fill_value."
         "\nExample: full_like(zeros(2, 2), 3.5)"},
    {"rand_like", bi_rand_like, "self, dtype=none, requires_grad=false, device=none",
         "Uniform samples in [0, 1) with the shape of self."
         "\nExample: rand_like(zeros(3))"},
    {"randn_like", bi_randn_like, "self, dtype=none, requires_grad=false, device=none",
         "Standard normal samples with the shape of self."
         "\nExample: randn_like(zeros(3))"},
    {NULL, NULL, NULL},
};

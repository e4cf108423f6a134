/* bi_elementwise.c: the elementwise builtins and arithmetic operators, with
 * PyTorch's type promotion and broadcasting around the shipped kernels. */
#include <math.h>
#include <string.h>

#include "../cuda/traj_cuda.h"
#include "builtins.h"
#include "tensor/device.h"
#include "kernels/ew_nd.h"
#include "kernels/ew_par.h"
#include "kernel_ids.h"
#include "state.h"
#include "tensor/tensor.h"

#define NO_K (-1)
#define UNDEF_DT (-1)

/* ---- type promotion (torch.result_type) ---- */

/* torch keeps three running dtypes: tensors with dims, 0-d tensors, and
 * Python scalars; a lower class wins only by being of a higher category. */
typedef struct rt_state { int dim, zero, wrapped; } rt_state;

static int promote_u(int a, int b) {
    if (a == UNDEF_DT) return b;
    if (b == UNDEF_DT) return a;
    return (int)ad_promote((ad_dtype)a, (ad_dtype)b);
}

static void rt_update(rt_state *st, ad_value v) {
    if (v.t == AD_TTENSOR) {
        int *slot = v.u.tensor->ndim > 0 ? &st->dim : &st->zero;
        *slot = promote_u(*slot, v.u.tensor->dtype);
    } else if (v.t == AD_TBOOL) {
        st->wrapped = promote_u(st->wrapped, AD_BOOL);
    } else if (v.t == AD_TINT) {
        st->wrapped = promote_u(st->wrapped, AD_INT64);
    } else if (v.t == AD_TNUM) {
        st->wrapped = promote_u(st->wrapped, AD_FLOAT32); /* the default dtype */
    }
}

static int rt_combine(int higher, int lower) {
    if (higher != UNDEF_DT && ad_dtype_is_float((ad_dtype)higher)) return higher;
    if (higher == AD_BOOL || (lower != UNDEF_DT && ad_dtype_is_float((ad_dtype)lower)))
        return promote_u(higher, lower);
    return higher != UNDEF_DT ? higher : lower;
}

static ad_dtype result_type(int n, const ad_value *v) {
    rt_state st = {UNDEF_DT, UNDEF_DT, UNDEF_DT};
    for (int i = 0; i < n; i++) rt_update(&st, v[i]);
    int r = rt_combine(st.dim, rt_combine(st.zero, st.wrapped));
    return r == UNDEF_DT ? AD_FLOAT32 : (ad_dtype)r;
}

/* ---- operands ---- */

#define EW_MAX_OPS 3

/* Inputs of one kernel call: each contiguous in the compute dtype and either
 * the full output shape (stride 1) or a single element (stride 0). */
typedef struct ew_ops {
    int n;
    ad_value v[EW_MAX_OPS];   /* inputs; lists already turned into tensors */
    ad_tensor *own[EW_MAX_OPS];
    ad_tensor *t[EW_MAX_OPS];
    int64_t s[EW_MAX_OPS];
    int ndim;
    int64_t shape[AD_MAX_DIMS];
    int device;               /* where the kernel runs: a GPU operand brings it there */
    bool views;               /* operands may stay broadcast or strided views (set before ew_prepare) */
    bool walk;                /* some operand is such a view: the kernel runs along 'nd' */
    ew_nd nd;
} ew_ops;

static void ew_release(ad_state *S, ew_ops *o) {
    for (int i = 0; i < o->n; i++) {
        ad_tensor_decref(S, o->own[i]);
        ad_tensor_decref(S, o->t[i]);
    }
    memset(o, 0, sizeof *o);
}

/* A GPU operand runs the op on the GPU; 0-d CPU tensors may join it there
 * (as in torch), other CPU tensors may not. */
static int ew_device_of(ad_state *S, ew_ops *o) {
    for (int i = 0; i < o->n; i++)
        if (o->v[i].t == AD_TTENSOR && ad_tensor_device(o->v[i].u.tensor)) o->device = ad_tensor_device(o->v[i].u.tensor);
    if (!o->device) return AD_OK;
    for (int i = 0; i < o->n; i++) {
        const ad_tensor *t = o->v[i].t == AD_TTENSOR ? o->v[i].u.tensor : NULL;
        if (t && t->ndim > 0 && ad_tensor_device(t) != o->device)
            return ad_device_mismatch(S, o->device, ad_tensor_device(t));
    }
    return AD_OK;
}

/* Accepts tensors, numbers and bools as they are and nested lists as tensors. */
static int ew_init(ad_state *S, const char *fn, const char *const *pnames, int n, const ad_value *in, ew_ops *o) {
    memset(o, 0, sizeof *o);
    o->n = n;
    for (int i = 0; i < n; i++) {
        o->v[i] = in[i];
        if (in[i].t == AD_TTENSOR || in[i].t == AD_TBOOL || ad_is_number(in[i])) continue;
        if (!ad_is_seq(in[i]))
            return ad_error(S, "%s(): argument '%s' (position %d) must be Tensor, not %s", fn, pnames[i], i + 1,
                            ad_type_name(in[i]));
        int rc = ad_arg_tensor(S, in[i], fn, pnames[i], &o->own[i]);
        if (rc) return rc;
        o->v[i] = ad_tensor_value(o->own[i]);
    }
    return ew_device_of(S, o);
}

static double scalar_of(ad_value v) { return v.t == AD_TBOOL ? (double)v.u.b : v.u.n; }

/* Converts operand i to dtype 'dt' and lays it out against the output shape. */
/* One element broadcast everywhere (sum's and mean's gradient, expand of a
 * 0-d tensor): the kernels read it as a scalar (stride 0) instead of a copy
 * of it materialised to the full shape. */
static bool all_strides_zero(const ad_tensor *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] != 0 && t->shape[d] != 1) return false;
    return true;
}

static int ew_place(ad_state *S, ew_ops *o, int i, ad_dtype dt) {
    ad_tensor *t;
    if (o->v[i].t != AD_TTENSOR) {
        t = ad_tensor_full_on(S, dt, 0, NULL, scalar_of(o->v[i]), o->device);
    } else if (ad_tensor_device(o->v[i].u.tensor) != o->device) {
        ad_tensor *m = ad_tensor_to_device(S, o->v[i].u.tensor, o->device);
        t = m ? ad_tensor_to(S, m, dt) : NULL;
        ad_tensor_decref(S, m);
    } else {
        t = ad_tensor_to(S, o->v[i].u.tensor, dt);
    }
    if (!t) return S->errcode;
    /* unary kernels take no stride: only operands of two or more read a broadcast element */
    o->s[i] = t->numel == 1 || (o->n > 1 && all_strides_zero(t)) ? 0 : 1;
    if (o->s[i] && !(ad_shape_equal(t->ndim, t->shape, o->ndim, o->shape) && ad_tensor_is_contiguous(t))) {
        ad_tensor *e = ad_shape_equal(t->ndim, t->shape, o->ndim, o->shape) ? (ad_tensor_incref(t), t)
                                                                            : ad_tensor_expand(S, t, o->ndim, o->shape);
        ad_tensor_decref(S, t);
        if (!e) return S->errcode;
        /* On the CPU a view is walked run by run (ew_walk_plan) instead of copied. */
        if (o->views && !o->device && o->n > 1) {
            o->t[i] = e;
            o->walk = true;
            return AD_OK;
        }
        t = ad_tensor_contiguous(S, e);
        ad_tensor_decref(S, e);
        if (!t) return S->errcode;
    }
    o->t[i] = t;
    return AD_OK;
}

/* Plans the run-by-run walk over the operands that ew_place left as views;
 * an operand that the kernels cannot read along the innermost dimension (a
 * stride other than 0 or 1) is copied after all, and the plan made again. */
static int ew_walk_plan(ad_state *S, ew_ops *o, ad_dtype out_dt) {
    int64_t cstr[AD_MAX_DIMS], zero[AD_MAX_DIMS] = {0};
    const int64_t *str[EW_ND_MAX_OPS];
    size_t esz[EW_ND_MAX_OPS];
    int64_t acc = 1;
    for (int d = o->ndim - 1; d >= 0; d--) { cstr[d] = acc; acc *= o->shape[d]; }
    for (;;) {
        str[0] = cstr;
        esz[0] = ad_dtype_size(out_dt);
        for (int i = 0; i < o->n; i++) {
            const ad_tensor *t = o->t[i];
            str[i + 1] = o->s[i] == 0 ? zero : ad_tensor_is_contiguous(t) ? cstr : t->strides;
            esz[i + 1] = ad_dtype_size(t->dtype);
        }
        if (ew_nd_plan(&o->nd, o->ndim, o->shape, o->n + 1, str, esz)) return AD_OK;
        for (int i = 0; i < o->n; i++) {
            if (o->s[i] == 0 || ad_tensor_is_contiguous(o->t[i]) || o->nd.inner[i + 1] == 0 || o->nd.inner[i + 1] == 1)
                continue;
            ad_tensor *c = ad_tensor_contiguous(S, o->t[i]);
            if (!c) return S->errcode;
            ad_tensor_decref(S, o->t[i]);
            o->t[i] = c;
        }
    }
}

/* Broadcasts every operand and converts operand i to dts[i]. */
static int ew_prepare(ad_state *S, ew_ops *o, const ad_dtype *dts) {
    o->ndim = 0;
    for (int i = 0; i < o->n; i++) {
        if (o->v[i].t != AD_TTENSOR) continue;
        const ad_tensor *t = o->v[i].u.tensor;
        int rc = ad_broadcast_shapes(S, o->ndim, o->shape, t->ndim, t->shape, &o->ndim, o->shape);
        if (rc) return rc;
    }
    for (int i = 0; i < o->n; i++) {
        int rc = ew_place(S, o, i, dts[i]);
        if (rc) return rc;
    }
    return AD_OK;
}

static ad_tensor *ew_output(ad_state *S, const ew_ops *o, ad_dtype dt) {
    return ad_tensor_empty_on(S, dt, o->ndim, o->shape, o->device);
}

static int64_t numel_of(const ew_ops *o) {
    int64_t n = 1;
    for (int i = 0; i < o->ndim; i++) n *= o->shape[i];
    return n;
}

/* Calls kernel 'kid' of shape (out, a, sa, [b, sb, [c, sc,]] n [, p]) on
 * elements [lo, lo + len) of the operands. */
static void ew_call(ad_state *S, int kid, ad_tensor *out, const ew_ops *o, const double *param, int64_t lo, int64_t len) {
    ad_karg a[AD_KERNEL_MAX_ARGS];
    int k = 0;
    a[k++].p = (char *)ad_tensor_data(out) + (size_t)lo * ad_dtype_size(out->dtype);
    for (int i = 0; i < o->n; i++) {
        a[k++].p = (char *)ad_tensor_data(o->t[i]) + (size_t)(lo * o->s[i]) * ad_dtype_size(o->t[i]->dtype);
        a[k++].i64 = o->s[i];
    }
    a[k++].i64 = len;
    if (param) a[k++].f64 = *param;
    ad_kreg_call(S, kid, a, NULL);
}

/* The GPU twin of kernel 'kid' (same name in the CUDA module), on the
 * operands as ew_prepare laid them out; np parameters. */
static int ew_device(ad_state *S, int kid, ad_tensor *out, const ew_ops *o, const double *param, int np) {
    const addsl_cuda_api *api = ad_cuda(S);
    if (!api) return S->errcode;
    const void *in[EW_MAX_OPS];
    for (int i = 0; i < o->n; i++) in[i] = ad_tensor_data(o->t[i]);
    const char *name = ad_kreg_name(S, kid);
    return ad_cuda_check(S, api->ew(name, ad_tensor_data(out), o->n, in, o->s, out->numel, param, param ? np : 0, ad_cuda_stream(S)),
                         name);
}

/* The shape of every binary kernel (kernels/elementwise.h), called directly
 * on each run: runs are often ten elements long (the GMM's [K,1,D] - [1,N,D]),
 * where the registry's argument packing per call was a visible share. */
typedef void (*ew_bin_fn)(void *out, const void *a, int64_t sa, const void *b, int64_t sb, int64_t n);

typedef struct ew_walk_ctx {
    ad_state *S;
    int kid, n;
    const int64_t *inner;  /* per operand, the output first: 0 or 1 */
    const double *param;
    ew_bin_fn bin;         /* NULL: through the registry */
} ew_walk_ctx;

static void ew_walk_rows(void *vc, char *const *ptr, const int64_t *step, int64_t rows, int64_t len) {
    const ew_walk_ctx *c = vc;
    if (c->bin) {
        char *o = ptr[0], *a = ptr[1], *b = ptr[2];
        for (int64_t r = 0; r < rows; r++, o += step[0], a += step[1], b += step[2])
            c->bin(o, a, c->inner[1], b, c->inner[2], len);
        return;
    }
    ad_karg a[AD_KERNEL_MAX_ARGS];
    for (int64_t r = 0; r < rows; r++) {
        int k = 0;
        a[k++].p = ptr[0] + r * step[0];
        for (int i = 1; i <= c->n; i++) {
            a[k++].p = ptr[i] + r * step[i];
            a[k++].i64 = c->inner[i];
        }
        a[k++].i64 = len;
        if (c->param) a[k++].f64 = *c->param;
        ad_kreg_call(c->S, c->kid, a, NULL);
    }
}

/* Bytes per element of every array a call touches, for the cut (kernels/ew_par.h). */
static size_t ew_esize(const ad_tensor *out) { return ad_dtype_size(out->dtype); }

/* Runs kernel 'kid' along the innermost dimension of broadcast or strided
 * operands, in parallel (by whole runs, or by pieces of a single run) when
 * the cut of kernels/ew_par.h says so; 'membound' as there. */
static int ew_walk(ad_state *S, int kid, ad_tensor *out, ew_ops *o, const double *param, bool membound) {
    int rc = ew_walk_plan(S, o, out->dtype);
    if (rc) return rc;
    char *base[EW_ND_MAX_OPS];
    base[0] = ad_tensor_data(out);
    for (int i = 0; i < o->n; i++) base[i + 1] = ad_tensor_data(o->t[i]);
    ew_walk_ctx c = {S, kid, o->n, o->nd.inner, param, NULL};
    if (o->n == 2 && !param) c.bin = (ew_bin_fn)ad_kreg_fn(S, kid);
    int64_t runs = ew_nd_runs(&o->nd), len = ew_nd_run_len(&o->nd);
    int64_t chunks = ew_par_chunks(runs * len, ew_esize(out), o->n + 1, membound);
    if (chunks == 1) {
        ew_nd_each(&o->nd, base, 0, runs, ew_walk_rows, &c);
        return AD_OK;
    }
    if (runs == 1) {
        /* one long run: pieces of it, each operand advanced by its inner stride */
        int64_t per = ew_par_chunk_len(len, chunks);
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < chunks; k++) {
            int64_t lo = k * per, m = len - lo < per ? len - lo : per;
            if (m <= 0) continue;
            char *p[EW_ND_MAX_OPS];
            p[0] = base[0] + (size_t)lo * ad_dtype_size(out->dtype);
            for (int i = 0; i < o->n; i++)
                p[i + 1] = base[i + 1] + (size_t)(lo * o->nd.inner[i + 1]) * ad_dtype_size(o->t[i]->dtype);
            static const int64_t no_step[EW_ND_MAX_OPS] = {0};  /* one row: never advanced */
            ew_walk_rows(&c, p, no_step, 1, m);
        }
        return AD_OK;
    }
    int64_t per = (runs + chunks - 1) / chunks;
    int64_t nchunks = (runs + per - 1) / per;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < nchunks; k++)
        ew_nd_each(&o->nd, base, k * per, runs - k * per < per ? runs : k * per + per, ew_walk_rows, &c);
    return AD_OK;
}

static int ew_run_as(ad_state *S, int kid, ad_tensor *out, ew_ops *o, const double *param, bool membound) {
    if (o->device) return ew_device(S, kid, out, o, param, 1);
    if (o->walk) return ew_walk(S, kid, out, o, param, membound);
    int64_t n = numel_of(o);
    int64_t chunks = ew_par_chunks(n, ew_esize(out), o->n + 1, membound);
    if (chunks == 1) { ew_call(S, kid, out, o, param, 0, n); return AD_OK; }
    int64_t per = ew_par_chunk_len(n, chunks);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t lo = c * per;
        if (lo < n) ew_call(S, kid, out, o, param, lo, n - lo < per ? n - lo : per);
    }
    return AD_OK;
}

/* Runs the kernel into res; on failure res is dropped and NULL returned. */
static ad_tensor *ew_run_into(ad_state *S, int kid, ad_tensor *res, ew_ops *o, const double *param, bool membound) {
    if (res && ew_run_as(S, kid, res, o, param, membound)) { ad_tensor_decref(S, res); return NULL; }
    return res;
}

/* A unary or parametric kernel (param: NULL or {p, q}) over o's one operand. */
static ad_tensor *ew_unary_into(ad_state *S, int kid, ad_tensor *res, const ew_ops *o, const double *param) {
    if (!res) return NULL;
    if (o->device) {
        if (ew_device(S, kid, res, o, param, 2)) { ad_tensor_decref(S, res); return NULL; }
        return res;
    }
    ad_karg a[5] = {{.p = ad_tensor_data(res)}, {.p = ad_tensor_data(o->t[0])}, {.i64 = res->numel}};
    if (param) { a[3].f64 = param[0]; a[4].f64 = param[1]; }
    ad_kreg_call(S, kid, a, NULL);
    return res;
}

static int finish(ad_state *S, ew_ops *o, ad_tensor *res, ad_value *out) {
    ew_release(S, o);
    if (!res) return S->errcode;
    *out = ad_tensor_value(res);
    return AD_OK;
}

/* ---- binary ops ---- */

enum {
    EW_FLOAT = 1,     /* integer and bool inputs compute in float32 */
    EW_BOOL_OUT = 2,  /* comparisons: the result is bool */
    EW_INT_DIV = 4,   /* integer division: a zero divisor raises */
    EW_LOGICAL = 8,   /* inputs are read as bool */
    EW_NO_BOOL = 16,  /* subtraction refuses two bools */
    EW_MEMBOUND = 32  /* one cheap instruction per element: split across threads only while in cache (kernels/ew_par.h) */
};

typedef struct ew_binop {
    const char *name;
    int k[AD_NDTYPES];  /* kernel per compute dtype (f32, f64, i64, bool) */
    unsigned flags;
} ew_binop;

#define K3(n) {AD_K_##n##_f32, AD_K_##n##_f64, AD_K_##n##_i64, NO_K}
#define K3B(n, b) {AD_K_##n##_f32, AD_K_##n##_f64, AD_K_##n##_i64, AD_K_##b##_b8}
#define K2(n) {AD_K_##n##_f32, AD_K_##n##_f64, NO_K, NO_K}

static const ew_binop BIN_add = {"add", K3B(add, logical_or), EW_MEMBOUND};
static const ew_binop BIN_sub = {"sub", K3(sub), EW_NO_BOOL | EW_MEMBOUND};
static const ew_binop BIN_mul = {"mul", K3B(mul, logical_and), EW_MEMBOUND};
static const ew_binop BIN_div = {"div", K2(div), EW_FLOAT | EW_MEMBOUND};
static const ew_binop BIN_div_trunc = {"div", K3(div_trunc), EW_INT_DIV};
static const ew_binop BIN_div_floor = {"floor_divide", K3(div_floor), EW_INT_DIV};
static const ew_binop BIN_remainder = {"remainder", K3(remainder), EW_INT_DIV};
static const ew_binop BIN_fmod = {"fmod", K3(fmod), EW_INT_DIV};
static const ew_binop BIN_pow = {"pow", {AD_K_pow_f32, AD_K_pow_f64, AD_K_pow_i64, NO_K}, 0};
static const ew_binop BIN_atan2 = {"atan2", K2(atan2), EW_FLOAT};
static const ew_binop BIN_hypot = {"hypot", K2(hypot), EW_FLOAT};
static const ew_binop BIN_copysign = {"copysign", K2(copysign), EW_FLOAT};
static const ew_binop BIN_xlogy = {"xlogy", K2(xlogy), EW_FLOAT};
static const ew_binop BIN_logaddexp = {"logaddexp", K2(logaddexp), EW_FLOAT};
static const ew_binop BIN_logaddexp2 = {"logaddexp2", K2(logaddexp2), EW_FLOAT};
static const ew_binop BIN_xlog1py = {"xlog1py", K2(xlog1py), EW_FLOAT};
static const ew_binop BIN_sigmoid_backward = {"sigmoid_backward", K2(sigmoid_backward), EW_FLOAT};
static const ew_binop BIN_tanh_backward = {"tanh_backward", K2(tanh_backward), EW_FLOAT};
static const ew_binop BIN_maximum = {"maximum", K3B(maximum, logical_or), 0};
static const ew_binop BIN_minimum = {"minimum", K3B(minimum, logical_and), 0};
static const ew_binop BIN_fmax = {"fmax", K3B(fmax, logical_or), 0};
static const ew_binop BIN_fmin = {"fmin", K3B(fmin, logical_and), 0};
static const ew_binop BIN_eq = {"eq", K3(eq), EW_BOOL_OUT};
static const ew_binop BIN_ne = {"ne", K3(ne), EW_BOOL_OUT};
static const ew_binop BIN_lt = {"lt", K3(lt), EW_BOOL_OUT};
static const ew_binop BIN_le = {"le", K3(le), EW_BOOL_OUT};
static const ew_binop BIN_gt = {"gt", K3(gt), EW_BOOL_OUT};
static const ew_binop BIN_ge = {"ge", K3(ge), EW_BOOL_OUT};
static const ew_binop BIN_logical_and = {"logical_and", {NO_K, NO_K, NO_K, AD_K_logical_and_b8}, EW_LOGICAL | EW_BOOL_OUT};
static const ew_binop BIN_logical_or = {"logical_or", {NO_K, NO_K, NO_K, AD_K_logical_or_b8}, EW_LOGICAL | EW_BOOL_OUT};
static const ew_binop BIN_logical_xor = {"logical_xor", {NO_K, NO_K, NO_K, AD_K_logical_xor_b8}, EW_LOGICAL | EW_BOOL_OUT};

static const char *const self_other[] = {"self", "other"};

static ad_dtype compute_dtype(const ew_binop *op, ad_dtype rt) {
    if (op->flags & EW_LOGICAL) return AD_BOOL;
    if ((op->flags & EW_FLOAT) && !ad_dtype_is_float(rt)) return AD_FLOAT32;
    if (op->k[rt] == NO_K && rt == AD_BOOL) return AD_INT64;
    return rt;
}

static bool any_zero_i64(const ad_tensor *t) {
    const int64_t *p = ad_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        if (p[i] == 0) return true;
    return false;
}

static bool any_negative_i64(const ad_tensor *t) {
    const int64_t *p = ad_tensor_data(t);
    for (int64_t i = 0; i < t->numel; i++)
        if (p[i] < 0) return true;
    return false;
}

/* Errors that depend on the values: integer division by zero, negative powers. */
static int check_values(ad_state *S, const ew_binop *op, ad_dtype cdt, const ew_ops *o) {
    /* On the GPU the values stay there, as in torch (no check, no sync). */
    if (cdt != AD_INT64 || o->device) return AD_OK;
    if ((op->flags & EW_INT_DIV) && any_zero_i64(o->t[1])) return ad_error(S, "ZeroDivisionError");
    /* torch refuses only a negative Python-scalar exponent; tensors give 0. */
    if (op == &BIN_pow && o->v[1].t != AD_TTENSOR && any_negative_i64(o->t[1]))
        return ad_error(S, "Integers to negative integer powers are not allowed.");
    return AD_OK;
}

static bool is_bool_tensor(ad_value v) { return v.t == AD_TTENSOR && v.u.tensor->dtype == AD_BOOL; }

static int ew_binary(ad_state *S, const ew_binop *op, ad_value a, ad_value b, ad_value *out) {
    ew_ops o;
    ad_value in[2] = {a, b};
    int rc = ew_init(S, op->name, self_other, 2, in, &o);
    if (rc) { ew_release(S, &o); return rc; }
    ad_dtype rt = result_type(2, o.v), cdt = compute_dtype(op, rt);
    if ((op->flags & EW_NO_BOOL) && rt == AD_BOOL) {
        ew_release(S, &o);
        return ad_error(S, "Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use `logical_xor()` instead.");
    }
    /* As torch: a bool mask minus a number is a mistake for ~mask, not arithmetic. */
    if ((op->flags & EW_NO_BOOL) && (is_bool_tensor(o.v[0]) || is_bool_tensor(o.v[1]))) {
        ew_release(S, &o);
        return ad_error(S, "Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use `logical_not()` instead.");
    }
    ad_dtype dts[2] = {cdt, cdt};
    /* check_values reads the integer divisor or exponent as a flat array */
    o.views = !(cdt == AD_INT64 && ((op->flags & EW_INT_DIV) || op == &BIN_pow));
    rc = ew_prepare(S, &o, dts);
    if (!rc) rc = check_values(S, op, cdt, &o);
    if (rc) { ew_release(S, &o); return rc; }
    ad_tensor *res = ew_output(S, &o, (op->flags & EW_BOOL_OUT) ? AD_BOOL : cdt);
    res = ew_run_into(S, op->k[cdt], res, &o, NULL, (op->flags & EW_MEMBOUND) != 0);
    return finish(S, &o, res, out);
}

/* ---- unary ops ---- */

typedef enum {
    UN_FLOAT,   /* integers promote to float32 */
    UN_SAME,    /* keeps the dtype (bool computes as int64) */
    UN_ROUND,   /* float kernels; integers come back as a copy */
    UN_PRED,    /* float predicate; integers give the constant 'fill' */
    UN_LOGICAL  /* reads the input as bool */
} un_mode;

typedef struct ew_unop {
    const char *name;
    int k[AD_NDTYPES];
    un_mode mode;
    bool int_fill;  /* UN_PRED: the answer for integer inputs */
} ew_unop;

static const char *const self_only[] = {"self"};

/* The tensor of one unary input, and the dtype it computes in (or -1 when
 * the answer needs no kernel). */
static int unary_dtype(const ew_unop *op, ad_dtype dt) {
    bool fl = ad_dtype_is_float(dt);
    switch (op->mode) {
    case UN_FLOAT: return fl ? (int)dt : AD_FLOAT32;
    case UN_SAME: return dt == AD_BOOL ? AD_INT64 : dt;
    case UN_LOGICAL: return AD_BOOL;
    default: return fl ? (int)dt : UNDEF_DT;
    }
}

/* Runs a unary or parametric kernel (param: NULL or {p, q}). */
static int ew_unary_p(ad_state *S, const ew_unop *op, ad_value x, const double *param, ad_value *out) {
    ew_ops o;
    int rc = ew_init(S, op->name, self_only, 1, &x, &o);
    if (rc) { ew_release(S, &o); return rc; }
    ad_dtype rt = result_type(1, o.v);
    int cdt = unary_dtype(op, rt);
    if (rt == AD_BOOL && strcmp(op->name, "neg") == 0) {
        ew_release(S, &o);
        return ad_error(S, "Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use `logical_not()` instead.");
    }
    /* torch's sign keeps a bool tensor as it is (sign(True) is True) */
    if (rt == AD_BOOL && strcmp(op->name, "sign") == 0) cdt = UNDEF_DT;
    ad_dtype dts[1] = {cdt == UNDEF_DT ? rt : (ad_dtype)cdt};
    rc = ew_prepare(S, &o, dts);
    if (rc) { ew_release(S, &o); return rc; }
    ad_tensor *res;
    if (cdt == UNDEF_DT && op->mode == UN_PRED) {
        res = ad_tensor_full_on(S, AD_BOOL, o.ndim, o.shape, op->int_fill, o.device);
    } else if (cdt == UNDEF_DT) {
        res = ad_tensor_clone(S, o.t[0]);
    } else {
        res = ew_output(S, &o, op->mode == UN_PRED ? AD_BOOL : (ad_dtype)cdt);
        res = ew_unary_into(S, op->k[cdt], res, &o, param);
    }
    return finish(S, &o, res, out);
}

#define UN_F(n) {#n, {AD_K_##n##_f32, AD_K_##n##_f64, NO_K, NO_K}, UN_FLOAT, false}

/* One builtin per float op of the lists in kernels/ew_table.h. */
#define AD_BI_UN_FLOAT(n) \
    static int bi_##n(ad_state *S, ad_value *argv, int argc, ad_value *out) { \
        static const ew_unop op = UN_F(n); (void)argc; return ew_unary_p(S, &op, argv[0], NULL, out); }
#define AD_BI_UN_SLEEF(n, ulp) AD_BI_UN_FLOAT(n)
#define AD_BI_UN_SAME(n) \
    static int bi_##n(ad_state *S, ad_value *argv, int argc, ad_value *out) { \
        static const ew_unop op = {#n, {AD_K_##n##_f32, AD_K_##n##_f64, AD_K_##n##_i64, NO_K}, UN_SAME, false}; \
        (void)argc; return ew_unary_p(S, &op, argv[0], NULL, out); }
#define AD_BI_UN_ROUND(n) \
    static int bi_##n(ad_state *S, ad_value *argv, int argc, ad_value *out) { \
        static const ew_unop op = {#n, {AD_K_##n##_f32, AD_K_##n##_f64, NO_K, NO_K}, UN_ROUND, false}; \
        (void)argc; return ew_unary_p(S, &op, argv[0], NULL, out); }

/* adapters for kernels/ew_table.h's rows, X(name, formula...) */
#define AD_BI_UN_FLOAT_(n, ...) AD_BI_UN_FLOAT(n)
#define AD_BI_UN_SAME_(n, ...) AD_BI_UN_SAME(n)
#define AD_BI_UN_ROUND_(n, ...) AD_BI_UN_ROUND(n)

AD_EW_SLEEF_OPS(AD_BI_UN_SLEEF)
AD_EW_FLOAT_OPS(AD_BI_UN_FLOAT_)
AD_EW_SPECIAL_OPS(AD_BI_UN_FLOAT)
AD_EW_FLOAT_MODE_OPS(AD_BI_UN_FLOAT_)
AD_EW_SAME_OPS(AD_BI_UN_SAME_)
AD_EW_ROUND_OPS(AD_BI_UN_ROUND_)

static const ew_unop UN_isnan = {"isnan", K2(isnan), UN_PRED, false};
static const ew_unop UN_isinf = {"isinf", K2(isinf), UN_PRED, false};
static const ew_unop UN_isfinite = {"isfinite", K2(isfinite), UN_PRED, true};
static const ew_unop UN_logical_not = {"logical_not", {NO_K, NO_K, NO_K, AD_K_logical_not_b8}, UN_LOGICAL, false};

static int bi_isnan(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return ew_unary_p(S, &UN_isnan, argv[0], NULL, out);
}
static int bi_isinf(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return ew_unary_p(S, &UN_isinf, argv[0], NULL, out);
}
static int bi_isfinite(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return ew_unary_p(S, &UN_isfinite, argv[0], NULL, out);
}
static int bi_logical_not(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return ew_unary_p(S, &UN_logical_not, argv[0], NULL, out);
}

/* ---- parametric unary ops ---- */

static int param_op(ad_state *S, const ew_unop *op, ad_value x, ad_value p, ad_value q, const char *pn, const char *qn,
                    ad_value *out) {
    double pq[2] = {0, 0};
    int rc = pn ? ad_arg_double(S, p, op->name, pn, &pq[0]) : AD_OK;
    if (!rc && qn) rc = ad_arg_double(S, q, op->name, qn, &pq[1]);
    return rc ? rc : ew_unary_p(S, op, x, pq, out);
}

#define UN_P(n) static const ew_unop UN_##n = UN_F(n)
UN_P(leaky_relu);
UN_P(elu);
UN_P(celu);
UN_P(softplus);
UN_P(softshrink);
UN_P(hardshrink);
UN_P(logit);
UN_P(round_decimals);
UN_P(polygamma);

static int bi_leaky_relu(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return param_op(S, &UN_leaky_relu, argv[0], argv[1], argv[1], "negative_slope", NULL, out);
}
static int bi_elu(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return param_op(S, &UN_elu, argv[0], argv[1], argv[1], "alpha", NULL, out);
}
static int bi_celu(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return param_op(S, &UN_celu, argv[0], argv[1], argv[1], "alpha", NULL, out);
}
static int bi_softplus(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return param_op(S, &UN_softplus, argv[0], argv[1], argv[2], "beta", "threshold", out);
}
static int bi_softshrink(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return param_op(S, &UN_softshrink, argv[0], argv[1], argv[1], "lambd", NULL, out);
}
static int bi_hardshrink(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return param_op(S, &UN_hardshrink, argv[0], argv[1], argv[1], "lambd", NULL, out);
}

/* torch.polygamma(n, input): the order comes first. */
static int bi_polygamma(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t n;
    int rc = ad_arg_int(S, argv[0], "polygamma", "n", &n);
    if (rc) return rc;
    if (n < 0 || n > INT32_MAX) return ad_error(S, "polygamma(): n must be a non-negative integer, got %lld", (long long)n);
    double pq[2] = {(double)n, 0};
    return ew_unary_p(S, &UN_polygamma, argv[1], pq, out);
}

static int bi_logit(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[1].t == AD_TNONE) return param_op(S, &UN_logit, argv[0], ad_num(-1), argv[1], "eps", NULL, out);
    return param_op(S, &UN_logit, argv[0], argv[1], argv[1], "eps", NULL, out);
}

static int bi_round_dec(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    int64_t d;
    int rc = ad_arg_int(S, argv[1], "round", "decimals", &d);
    if (rc) return rc;
    if (d == 0) return bi_round(S, argv, 1, out);
    double pq[2] = {(double)d, pow(10.0, (double)(d < 0 ? -d : d))};
    return ew_unary_p(S, &UN_round_decimals, argv[0], pq, out);
}

static int bi_gelu(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    const char *mode;
    int rc = ad_arg_str(S, argv[1], "gelu", "approximate", &mode);
    if (rc) return rc;
    if (strcmp(mode, "none") == 0) return bi_gelu_erf(S, argv, argc, out);
    if (strcmp(mode, "tanh") == 0) return bi_gelu_tanh(S, argv, argc, out);
    return ad_error(S, "approximate argument must be either none or tanh.");
}

/* The constants of the element-wise formulas, for the derivative formulas in
 * lib/helpers_ew.ad: ew_table.h is the one place each is written. */
static int bi_ew_constant(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *name;
    int rc = ad_arg_str(S, argv[0], "_ew_constant", "name", &name);
    if (rc) return rc;
#define EW_CONST_CASE(c) if (strcmp(name, #c) == 0) { *out = ad_num((double)(c)); return 0; }
    AD_EW_CONSTS(EW_CONST_CASE)
#undef EW_CONST_CASE
    return ad_error(S, "_ew_constant(): no constant named '%s' in ew_table.h", name);
}

/* ---- clamp and friends ---- */

static const ew_unop UN_clamp = {"clamp", {AD_K_clamp_f32, AD_K_clamp_f64, AD_K_clamp_i64, NO_K}, UN_SAME, false};

/* clamp with number (or absent) bounds: one pass of the clamp kernel in the
 * dtype torch gives self with those Python scalars. */
static int clamp_scalar(ad_state *S, const char *fn, ad_value x, ad_value lo, ad_value hi, ad_value *out) {
    ad_value v[3] = {x, lo, hi};
    int n = 1;
    if (lo.t != AD_TNONE) v[n++] = lo;
    if (hi.t != AD_TNONE) v[n++] = hi;
    ew_ops o;
    int rc = ew_init(S, fn, self_only, 1, &x, &o);
    if (rc) { ew_release(S, &o); return rc; }
    v[0] = o.v[0];
    ad_dtype rt = result_type(n, v);
    if (rt == AD_BOOL) rt = AD_INT64;
    bool fl = ad_dtype_is_float(rt);
    double pq[2] = {lo.t == AD_TNONE ? (fl ? -INFINITY : -0x1p63) : scalar_of(lo),
                    hi.t == AD_TNONE ? (fl ? INFINITY : 0x1p63) : scalar_of(hi)};
    ad_dtype dts[1] = {rt};
    rc = ew_prepare(S, &o, dts);
    if (rc) { ew_release(S, &o); return rc; }
    ad_tensor *res = ew_unary_into(S, UN_clamp.k[rt], ew_output(S, &o, rt), &o, pq);
    return finish(S, &o, res, out);
}

static const ew_binop TER_clamp = {"clamp", K3(clamp_t), 0};

static int clamp_tensors(ad_state *S, const char *fn, ad_value x, ad_value lo, ad_value hi, ad_value *out) {
    static const char *const names[] = {"self", "min", "max"};
    if (hi.t == AD_TNONE) return ew_binary(S, &BIN_maximum, x, lo, out);
    if (lo.t == AD_TNONE) return ew_binary(S, &BIN_minimum, x, hi, out);
    ew_ops o;
    ad_value in[3] = {x, lo, hi};
    int rc = ew_init(S, fn, names, 3, in, &o);
    if (rc) { ew_release(S, &o); return rc; }
    ad_dtype rt = result_type(3, o.v);
    if (rt == AD_BOOL) rt = AD_INT64;
    ad_dtype dts[3] = {rt, rt, rt};
    o.views = true;
    rc = ew_prepare(S, &o, dts);
    if (rc) { ew_release(S, &o); return rc; }
    ad_tensor *res = ew_run_into(S, TER_clamp.k[rt], ew_output(S, &o, rt), &o, NULL, false);
    return finish(S, &o, res, out);
}

static bool is_scalar_or_none(ad_value v) { return v.t == AD_TNONE || v.t == AD_TBOOL || ad_is_number(v); }

static int clamp_any(ad_state *S, const char *fn, ad_value x, ad_value lo, ad_value hi, ad_value *out) {
    if (lo.t == AD_TNONE && hi.t == AD_TNONE)
        return ad_error(S, "torch.clamp: At least one of 'min' or 'max' must not be None");
    if (is_scalar_or_none(lo) && is_scalar_or_none(hi)) return clamp_scalar(S, fn, x, lo, hi, out);
    return clamp_tensors(S, fn, x, lo, hi, out);
}

static int bi_clamp(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return clamp_any(S, "clamp", argv[0], argv[1], argv[2], out);
}
static int bi_clamp_min(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return clamp_any(S, "clamp_min", argv[0], argv[1], ad_none(), out);
}
static int bi_clamp_max(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return clamp_any(S, "clamp_max", argv[0], ad_none(), argv[1], out);
}
/* hardtanh casts its bounds to the input's dtype instead of promoting. */
static int bi_hardtanh(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_value lo = argv[1], hi = argv[2];
    if (argv[0].t == AD_TTENSOR && !ad_dtype_is_float(argv[0].u.tensor->dtype)) {
        if (ad_is_number(lo)) lo = ad_int(trunc(lo.u.n));
        if (ad_is_number(hi)) hi = ad_int(trunc(hi.u.n));
    }
    return clamp_any(S, "hardtanh", argv[0], lo, hi, out);
}

/* ---- ternary ops ---- */

static int ternary(ad_state *S, const char *fn, const char *const *names, const ad_value *in, int kid_of_dt[AD_NDTYPES],
                   bool cond_first, const double *value, ad_value *out) {
    ew_ops o;
    int rc = ew_init(S, fn, names, 3, in, &o);
    if (rc) { ew_release(S, &o); return rc; }
    ad_dtype rt = cond_first ? result_type(2, o.v + 1) : result_type(3, o.v);
    if (kid_of_dt[rt] == NO_K && rt == AD_BOOL) rt = AD_INT64;
    if (kid_of_dt[rt] == NO_K) rt = AD_FLOAT32;
    ad_dtype dts[3] = {cond_first ? AD_BOOL : rt, rt, rt};
    o.views = true;
    rc = ew_prepare(S, &o, dts);
    if (rc) { ew_release(S, &o); return rc; }
    ad_tensor *res = ew_run_into(S, kid_of_dt[rt], ew_output(S, &o, rt), &o, value, false);
    return finish(S, &o, res, out);
}

static int bi_where(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    static const char *const names[] = {"condition", "input", "other"};
    int k[AD_NDTYPES] = {AD_K_where_f32, AD_K_where_f64, AD_K_where_i64, AD_K_where_b8};
    (void)argc;
    /* torch reads no truth value into a float or integer condition. */
    if (argv[0].t == AD_TTENSOR && argv[0].u.tensor->dtype != AD_BOOL)
        return ad_error(S, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                        ad_torch_dtype_name(argv[0].u.tensor->dtype));
    return ternary(S, "where", names, argv, k, true, NULL, out);
}

static int bi_lerp(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    static const char *const names[] = {"self", "end", "weight"};
    int k[AD_NDTYPES] = K2(lerp);
    (void)argc;
    return ternary(S, "lerp", names, argv, k, false, NULL, out);
}

static int addc(ad_state *S, const char *fn, int k[AD_NDTYPES], ad_value *argv, ad_value *out) {
    static const char *const names[] = {"self", "tensor1", "tensor2"};
    double value;
    int rc = ad_arg_double(S, argv[3], fn, "value", &value);
    return rc ? rc : ternary(S, fn, names, argv, k, false, &value, out);
}

static int bi_addcmul(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    int k[AD_NDTYPES] = K3(addcmul);
    (void)argc;
    return addc(S, "addcmul", k, argv, out);
}

static int bi_addcdiv(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    int k[AD_NDTYPES] = K2(addcdiv);
    (void)argc;
    ad_value v[3] = {argv[0], argv[1], argv[2]};
    for (int i = 1; i < 3; i++)
        if (v[i].t == AD_TTENSOR && !ad_dtype_is_float(v[i].u.tensor->dtype))
            return ad_error(S, "Integer division with addcdiv is no longer supported, and in a future release "
                               "addcdiv will perform a true division of tensor1 and tensor2. Use "
                               "torch.addcdiv(input, tensor1, tensor2.float(), value) instead.");
    return addc(S, "addcdiv", k, argv, out);
}

/* ---- binary builtins and operators ---- */

/* a + alpha * b: torch refuses a float alpha for integer results. */
static int add_alpha(ad_state *S, const ew_binop *op, ad_value a, ad_value b, ad_value alpha, ad_value *out) {
    if (alpha.t == AD_TINT && alpha.u.n == 1) return ew_binary(S, op, a, b, out);
    if (!ad_is_number(alpha) && alpha.t != AD_TBOOL)
        return ad_error(S, "%s(): argument 'alpha' must be Number, not %s", op->name, ad_type_name(alpha));
    ad_value ab[2] = {a, b};
    if (alpha.t == AD_TNUM && !ad_dtype_is_float(result_type(2, ab)))
        return ad_error(S, "For integral input tensors, argument alpha must not be a floating point number.");
    ad_value scaled;
    int rc = ew_binary(S, &BIN_mul, b, alpha, &scaled);
    if (rc) return rc;
    rc = ew_binary(S, op, a, scaled, out);
    ad_value_decref(S, scaled);
    return rc;
}

static int bi_add(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return add_alpha(S, &BIN_add, argv[0], argv[1], argv[2], out);
}
static int bi_sub(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc; return add_alpha(S, &BIN_sub, argv[0], argv[1], argv[2], out);
}

static int bi_div(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[2].t == AD_TNONE) return ew_binary(S, &BIN_div, argv[0], argv[1], out);
    const char *mode;
    int rc = ad_arg_str(S, argv[2], "div", "rounding_mode", &mode);
    if (rc) return rc;
    if (strcmp(mode, "trunc") == 0) return ew_binary(S, &BIN_div_trunc, argv[0], argv[1], out);
    if (strcmp(mode, "floor") == 0) return ew_binary(S, &BIN_div_floor, argv[0], argv[1], out);
    return ad_error(S, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '%s'", mode);
}

/* Plain two-operand builtins, one per descriptor. */
/* X(name, descriptor, doc): doc is the builtin row's help text (vm/value.h),
 * NULL where an op of the library replaces the name. */
#define AD_BI_PLAIN_BINARY(X) \
    X(mul, BIN_mul, NULL) \
    X(floor_divide, BIN_div_floor, "Element-wise floor(self / other), as torch.floor_divide and the // operator (ints stay " \
      "ints). Not differentiable." \
      "\nExample: floor_divide(tensor([7, -7]), 2)") \
    X(true_divide, BIN_div, NULL) \
    X(pow, BIN_pow, NULL) \
    X(remainder, BIN_remainder, NULL) \
    X(fmod, BIN_fmod, NULL) \
    X(atan2, BIN_atan2, NULL) \
    X(hypot, BIN_hypot, NULL) \
    X(copysign, BIN_copysign, NULL) \
    X(xlogy, BIN_xlogy, NULL) \
    X(logaddexp, BIN_logaddexp, NULL) \
    X(logaddexp2, BIN_logaddexp2, NULL) \
    X(xlog1py, BIN_xlog1py, NULL) \
    X(sigmoid_backward, BIN_sigmoid_backward, NULL) \
    X(tanh_backward, BIN_tanh_backward, NULL) \
    X(maximum, BIN_maximum, NULL) \
    X(minimum, BIN_minimum, NULL) \
    X(fmax, BIN_fmax, NULL) \
    X(fmin, BIN_fmin, NULL) \
    X(eq, BIN_eq, "Element-wise self == other (broadcast) as a bool tensor; the == operator." \
      "\nExample: eq(tensor([1, 2]), 2)") \
    X(ne, BIN_ne, "Element-wise self != other (broadcast) as a bool tensor; the != operator." \
      "\nExample: ne(tensor([1, 2]), 2)") \
    X(lt, BIN_lt, "Element-wise self < other (broadcast) as a bool tensor; the < operator." \
      "\nExample: lt(tensor([1, 2]), 2)") \
    X(le, BIN_le, "Element-wise self <= other (broadcast) as a bool tensor; the <= operator." \
      "\nExample: le(tensor([1, 2]), 2)") \
    X(gt, BIN_gt, "Element-wise self > other (broadcast) as a bool tensor; the > operator." \
      "\nExample: gt(tensor([1, 2]), 1)") \
    X(ge, BIN_ge, "Element-wise self >= other (broadcast) as a bool tensor; the >= operator." \
      "\nExample: ge(tensor([1, 2]), 2)") \
    X(logical_and, BIN_logical_and, "Element-wise logical and of the truth values of self and other (non-zero is true), as a " \
      "bool tensor." \
      "\nExample: logical_and(tensor([true, false]), tensor([true, true]))") \
    X(logical_or, BIN_logical_or, "Element-wise logical or of the truth values of self and other (non-zero is true), as a " \
      "bool tensor." \
      "\nExample: logical_or(tensor([true, false]), tensor([false, false]))") \
    X(logical_xor, BIN_logical_xor, "Element-wise exclusive or of the truth values of self and other (non-zero is true), as a " \
      "bool tensor." \
      "\nExample: logical_xor(tensor([true, false]), tensor([true, true]))")

#define AD_BI_BIN_FN(n, desc, doc) \
    static int bi_##n(ad_state *S, ad_value *argv, int argc, ad_value *out) { \
        (void)argc; return ew_binary(S, &desc, argv[0], argv[1], out); }
AD_BI_PLAIN_BINARY(AD_BI_BIN_FN)
#define AD_BI_SPECIAL_BIN(n) \
    static const ew_binop BIN_##n = {#n, K2(n), EW_FLOAT}; \
    AD_BI_BIN_FN(n, BIN_##n, NULL)
AD_EW_SPECIAL_BINARY_OPS(AD_BI_SPECIAL_BIN)

int ad_bi_add(ad_state *S, ad_value a, ad_value b, ad_value *out) { return ew_binary(S, &BIN_add, a, b, out); }
int ad_bi_sub(ad_state *S, ad_value a, ad_value b, ad_value *out) { return ew_binary(S, &BIN_sub, a, b, out); }
int ad_bi_mul(ad_state *S, ad_value a, ad_value b, ad_value *out) { return ew_binary(S, &BIN_mul, a, b, out); }
int ad_bi_div(ad_state *S, ad_value a, ad_value b, ad_value *out) { return ew_binary(S, &BIN_div, a, b, out); }
int ad_bi_rem(ad_state *S, ad_value a, ad_value b, ad_value *out) { return ew_binary(S, &BIN_remainder, a, b, out); }
int ad_bi_pow(ad_state *S, ad_value a, ad_value b, ad_value *out) { return ew_binary(S, &BIN_pow, a, b, out); }
int ad_bi_neg(ad_state *S, ad_value a, ad_value *out) { return bi_neg(S, &a, 1, out); }

int ad_bi_compare(ad_state *S, int cmp, ad_value a, ad_value b, ad_value *out) {
    static const ew_binop *const ops[] = {&BIN_eq, &BIN_ne, &BIN_lt, &BIN_le, &BIN_gt, &BIN_ge};
    if (cmp < AD_CMP_EQ || cmp > AD_CMP_GE) return ad_error(S, "unknown comparison %d", cmp);
    return ew_binary(S, ops[cmp], a, b, out);
}

/* ---- the table ---- */

#define AD_BI_ROW_SELF(n) {#n, bi_##n, "self"},
#define AD_BI_ROW_SELF_(n, ...) AD_BI_ROW_SELF(n)
#define AD_BI_ROW_SLEEF(n, ulp) AD_BI_ROW_SELF(n)
#define AD_BI_ROW_BIN(n, desc, doc) {#n, bi_##n, "self, other", doc},
#define AD_BI_ROW_SPECIAL(n) {#n, bi_##n, "self, other"},

/* The predicates' rows are written out below, with their docs. */
#define AD_BI_COUNT(n, ...) + 1
_Static_assert(0 AD_EW_PRED_OPS(AD_BI_COUNT) == 3, "a new AD_EW_PRED_OPS entry needs its row (and doc) in ad_bi_elementwise_defs");

const ad_builtin_def ad_bi_elementwise_defs[] = {
    AD_EW_SLEEF_OPS(AD_BI_ROW_SLEEF)
    AD_EW_FLOAT_OPS(AD_BI_ROW_SELF_)
    AD_EW_SPECIAL_OPS(AD_BI_ROW_SELF)
    AD_EW_SPECIAL_BINARY_OPS(AD_BI_ROW_SPECIAL)
    AD_EW_SAME_OPS(AD_BI_ROW_SELF_)
    {"isnan", bi_isnan, "self",
         "A bool tensor, true where self is nan."
         "\nExample: isnan(tensor([1.0, nan]))"},
    {"isinf", bi_isinf, "self",
         "A bool tensor, true where self is +inf or -inf."
         "\nExample: isinf(tensor([1.0, inf, -inf]))"},
    {"isfinite", bi_isfinite, "self",
         "A bool tensor, true where self is neither nan nor infinite."
         "\nExample: isfinite(tensor([1.0, inf, nan]))"},
    AD_BI_PLAIN_BINARY(AD_BI_ROW_BIN)
    {"floor", bi_floor, "self"},
    {"ceil", bi_ceil, "self"},
    {"trunc", bi_trunc, "self"},
    {"fix", bi_trunc, "self"},
    {"frac", bi_frac, "self"},
    {"round", bi_round_dec, "self, decimals=0"},
    {"sgn", bi_sign, "self"},
    {"absolute", bi_abs, "self"},
    {"negative", bi_neg, "self"},
    {"logical_not", bi_logical_not, "self",
         "Element-wise logical not (zero becomes true), as a bool tensor."
         "\nExample: logical_not(tensor([0, 1]))"},
    {"multiply", bi_mul, "self, other"},
    {"divide", bi_div, "self, other, rounding_mode=none"},
    {"div", bi_div, "self, other, rounding_mode=none"},
    {"add", bi_add, "self, other, alpha=1"},
    {"sub", bi_sub, "self, other, alpha=1"},
    {"subtract", bi_sub, "self, other, alpha=1"},
    {"leaky_relu", bi_leaky_relu, "self, negative_slope=0.01"},
    {"elu", bi_elu, "self, alpha=1.0"},
    {"celu", bi_celu, "self, alpha=1.0"},
    {"softplus", bi_softplus, "self, beta=1, threshold=20"},
    {"softshrink", bi_softshrink, "self, lambd=0.5"},
    {"hardshrink", bi_hardshrink, "self, lambd=0.5"},
    {"logit", bi_logit, "self, eps=none"},
    {"polygamma", bi_polygamma, "n, self"},
    {"gelu", bi_gelu, "self, approximate=\"none\""},
    {"clamp", bi_clamp, "self, min=none, max=none"},
    {"clip", bi_clamp, "self, min=none, max=none"},
    {"clamp_min", bi_clamp_min, "self, min"},
    {"clamp_max", bi_clamp_max, "self, max"},
    {"hardtanh", bi_hardtanh, "self, min_val=-1.0, max_val=1.0"},
    {"where", bi_where, "condition, input, other"},
    {"lerp", bi_lerp, "self, end, weight"},
    {"addcmul", bi_addcmul, "self, tensor1, tensor2, value=1"},
    {"addcdiv", bi_addcdiv, "self, tensor1, tensor2, value=1"},
    {"_ew_constant", bi_ew_constant, "name"},
    {NULL, NULL, NULL}
};

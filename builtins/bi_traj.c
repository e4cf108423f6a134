/* bi_traj.c: the builtins over the trajectory kernels (traj_acc_fwd/bwd,
 * traj_jerk_fwd/bwd, traj_pos_fwd/bwd): argument checks, layouts, tuples. */
#include <stdio.h>
#include <string.h>

#include "../cuda/traj_cuda.h"
#include "builtins.h"
#include "tensor/device.h"
#include "state.h"
#include "kernels/traj.h"

enum { STEP_ACC, STEP_JERK, STEP_POS };

/* The checked, contiguous operands of one call, all in the dtype of 'u'. */
typedef struct traj_call {
    const char *fn;
    int step, central;
    ad_dtype dt;
    int64_t b, H, d, B0;
    ad_tensor *u, *start[3], *grads[4];
    int64_t *sidx;   /* NULL: trajectory i starts at row i */
    void *dts;       /* H step lengths in 'dt' (acc/jerk) */
    double dt_scalar;
    bool dt_is_scalar;
    int device;      /* u's: every operand must be there */
    ad_tensor *dev_sidx, *dev_dts; /* GPU copies of sidx and dts (when needed) */
} traj_call;

static void call_free(ad_state *S, traj_call *c) {
    ad_tensor_decref(S, c->u);
    for (int i = 0; i < 3; i++) ad_tensor_decref(S, c->start[i]);
    for (int i = 0; i < 4; i++) ad_tensor_decref(S, c->grads[i]);
    ad_tensor_decref(S, c->dev_sidx);
    ad_tensor_decref(S, c->dev_dts);
    ad_free(S, c->sidx);
    ad_free(S, c->dts);
}

/* A contiguous reference to 'v' in dtype 'dt'. */
static int as_operand(ad_state *S, traj_call *c, ad_value v, const char *pname, ad_dtype dt,
                      ad_tensor **out) {
    ad_tensor *t, *x, *y;
    int rc = ad_arg_tensor(S, v, c->fn, pname, &t);
    if (rc) return rc;
    if (ad_tensor_device(t) != c->device) {
        rc = ad_error(S, "%s(): Expected all tensors to be on the same device, but found at least two devices, %s and %s! "
                      "(argument '%s')", c->fn, ad_device_name(c->device), ad_device_name(ad_tensor_device(t)), pname);
        ad_tensor_decref(S, t);
        return rc;
    }
    if (!ad_dtype_is_float(t->dtype)) {
        rc = ad_error(S, "%s(): argument '%s' must be a float32 or float64 tensor, not %s",
                      c->fn, pname, ad_dtype_name(t->dtype));
        ad_tensor_decref(S, t);
        return rc;
    }
    x = ad_tensor_to(S, t, dt);
    ad_tensor_decref(S, t);
    y = x ? ad_tensor_contiguous(S, x) : NULL;
    ad_tensor_decref(S, x);
    if (!y) return ad_fail(S);
    *out = y;
    return ADDSL_OK;
}

static int parse_u(ad_state *S, traj_call *c, ad_value v) {
    ad_tensor *t;
    int rc = ad_arg_tensor(S, v, c->fn, "u", &t);
    if (rc) return rc;
    c->dt = t->dtype;
    c->device = ad_tensor_device(t);
    ad_tensor_decref(S, t);
    if ((rc = as_operand(S, c, v, "u", c->dt, &c->u))) return rc;
    if (c->u->ndim != 3)
        return ad_error(S, "%s(): expected 'u' of shape [b, H, d], got %d dims", c->fn, c->u->ndim);
    c->b = c->u->shape[0];
    c->H = c->u->shape[1] + (c->central ? 4 : 0);
    c->d = c->u->shape[2];
    int64_t hmin = c->step != STEP_POS ? 1 : c->central ? 8 : 4;
    if (c->H < hmin)
        return ad_error(S, "%s(): the horizon must be at least %lld, got %lld", c->fn,
                        (long long)hmin, (long long)c->H);
    return ADDSL_OK;
}

static int parse_start(ad_state *S, traj_call *c, const ad_value *v) {
    static const char *const names[3] = {"start_pos", "start_vel", "start_acc"};
    for (int i = 0; i < 3; i++) {
        int rc = as_operand(S, c, v[i], names[i], c->dt, &c->start[i]);
        if (rc) return rc;
        ad_tensor *t = c->start[i];
        int64_t rows = t->ndim == 2 ? t->shape[0] : 1;
        if ((t->ndim != 1 && t->ndim != 2) || t->shape[t->ndim - 1] != c->d)
            return ad_error(S, "%s(): expected '%s' of shape [B0, %lld]", c->fn, names[i],
                            (long long)c->d);
        if (i == 0) c->B0 = rows;
        else if (rows != c->B0)
            return ad_error(S, "%s(): the start tensors must have the same number of rows", c->fn);
    }
    return ADDSL_OK;
}

/* start_idx: none (row i, or row 0 for all when B0 == 1) or int64 of length b. */
static int parse_idx(ad_state *S, traj_call *c, ad_value v) {
    if (v.t == AD_TNONE) {
        if (c->B0 == c->b) return ADDSL_OK;
        if (c->B0 != 1)
            return ad_error(S, "%s(): without start_idx the start tensors need %lld rows (or 1), got %lld",
                            c->fn, (long long)c->b, (long long)c->B0);
        c->sidx = ad_calloc(S, (size_t)(c->b ? c->b : 1), sizeof(int64_t));
        return c->sidx ? ADDSL_OK : ad_fail(S);
    }
    ad_tensor *t, *given;
    int rc = ad_arg_tensor(S, v, c->fn, "start_idx", &given);
    if (rc) return rc;
    t = ad_tensor_to_device(S, given, AD_DEV_CPU);
    ad_tensor_decref(S, given);
    if (!t) return ad_fail(S);
    if (t->dtype != AD_INT64 || t->ndim != 1 || t->shape[0] != c->b) {
        ad_tensor_decref(S, t);
        return ad_error(S, "%s(): expected 'start_idx' an int64 tensor of shape [%lld]", c->fn,
                        (long long)c->b);
    }
    c->sidx = ad_malloc(S, (size_t)(c->b ? c->b : 1) * sizeof(int64_t));
    for (int64_t i = 0; c->sidx && i < c->b && !rc; i++) {
        int64_t s = (int64_t)ad_tensor_get_flat(t, i);
        if (s < -c->B0 || s >= c->B0)
            rc = ad_error(S, "index %lld is out of bounds for dimension 0 with size %lld",
                          (long long)s, (long long)c->B0);
        c->sidx[i] = s < 0 ? s + c->B0 : s;
    }
    ad_tensor_decref(S, t);
    return c->sidx ? rc : ad_fail(S);
}

/* dt: a number or one-element tensor; acc/jerk also take H entries. */
static int parse_dt(ad_state *S, traj_call *c, ad_value v) {
    ad_tensor *t;
    int rc;
    /* a number keeps its double precision (a tensor made from it would be float32) */
    if (ad_is_number(v)) t = ad_tensor_scalar(S, AD_FLOAT64, v.u.n), rc = t ? ADDSL_OK : ad_fail(S);
    else rc = ad_arg_tensor(S, v, c->fn, "dt", &t);
    if (rc) return rc;
    int64_t n = t->numel;
    if (n != 1 && (c->step == STEP_POS || n != c->H)) {
        ad_tensor_decref(S, t);
        if (c->step == STEP_POS) return ad_error(S, "%s(): 'dt' must be a scalar", c->fn);
        return ad_error(S, "%s(): 'dt' must be a scalar or have %lld entries, got %lld", c->fn,
                        (long long)c->H, (long long)n);
    }
    ad_tensor *h = ad_tensor_to_device(S, t, AD_DEV_CPU); /* read on the host */
    ad_tensor_decref(S, t);
    if (!h) return ad_fail(S);
    t = h;
    c->dt_is_scalar = n == 1;
    c->dt_scalar = ad_tensor_get_flat(t, 0);
    c->dts = ad_malloc(S, (size_t)c->H * ad_dtype_size(c->dt));
    for (int64_t h = 0; c->dts && h < c->H; h++) {
        double x = ad_tensor_get_flat(t, n == 1 ? 0 : h);
        if (c->dt == AD_FLOAT32) ((float *)c->dts)[h] = (float)x;
        else ((double *)c->dts)[h] = x;
    }
    ad_tensor_decref(S, t);
    return c->dts ? ADDSL_OK : ad_fail(S);
}

static int parse_mode(ad_state *S, traj_call *c, ad_value v) {
    const char *m;
    int rc = ad_arg_str(S, v, c->fn, "mode", &m);
    if (rc) return rc;
    if (!strcmp(m, "central")) c->central = 1;
    else if (!strcmp(m, "backward")) c->central = 0;
    else return ad_error(S, "%s(): mode must be \"central\" or \"backward\", got \"%s\"", c->fn, m);
    return ADDSL_OK;
}

/* argv: u, start_pos, start_vel, start_acc, dt, [mode,] start_idx. */
static int parse_call(ad_state *S, traj_call *c, ad_value *argv) {
    int rc = ADDSL_OK;
    if (c->step == STEP_POS) rc = parse_mode(S, c, argv[5]);
    if (!rc) rc = parse_u(S, c, argv[0]);
    if (!rc) rc = parse_start(S, c, argv + 1);
    if (!rc) rc = parse_idx(S, c, argv[c->step == STEP_POS ? 6 : 5]);
    if (!rc) rc = parse_dt(S, c, argv[4]);
    return rc;
}

static ad_tensor *traj_out(ad_state *S, traj_call *c) {
    int64_t shape[3] = {c->b, c->H, c->d};
    return ad_tensor_empty_on(S, c->dt, 3, shape, c->device);
}

/* ---- on the GPU: the CUDA module's kernels on device pointers ---- */

/* A device copy of n host elements of dtype dt (sidx, per-step dt). */
static int upload(ad_state *S, void *host, ad_dtype dt, int64_t n, ad_tensor **out) {
    ad_tensor *h = ad_tensor_wrap(S, dt, 1, &n, host, NULL, NULL);
    *out = h ? ad_tensor_to_device(S, h, AD_DEV_CUDA) : NULL;
    ad_tensor_decref(S, h);
    return *out ? ADDSL_OK : ad_fail(S);
}

static int device_prepare(ad_state *S, traj_call *c, const addsl_cuda_api **api) {
    if (!(*api = ad_cuda(S))) return ad_fail(S);
    int rc = c->sidx ? upload(S, c->sidx, AD_INT64, c->b, &c->dev_sidx) : ADDSL_OK;
    if (!rc && !c->dt_is_scalar && c->step != STEP_POS) rc = upload(S, c->dts, c->dt, c->H, &c->dev_dts);
    return rc;
}

#define DD(t) ((t) ? ad_tensor_data(t) : NULL)

static int run_fwd_device(ad_state *S, traj_call *c, ad_tensor **o) {
    const addsl_cuda_api *api;
    int rc = device_prepare(S, c, &api);
    if (rc) return rc;
    const void *u = DD(c->u), *p0 = DD(c->start[0]), *v0 = DD(c->start[1]), *a0 = DD(c->start[2]);
    const int64_t *si = DD(c->dev_sidx);
    const void *dts = DD(c->dev_dts);
    if (c->dt == AD_FLOAT32) {
        float ds = (float)c->dt_scalar;
        float *P = DD(o[0]), *V = DD(o[1]), *A = DD(o[2]), *J = DD(o[3]);
        if (c->step == STEP_ACC) rc = api->acc_fwd_f32(u, p0, v0, a0, si, dts, ds, c->b, c->H, c->d, P, V, A, J, ad_cuda_stream(S));
        else if (c->step == STEP_JERK) rc = api->jerk_fwd_f32(u, p0, v0, a0, si, dts, ds, c->b, c->H, c->d, P, V, A, J, ad_cuda_stream(S));
        else rc = api->pos_fwd_f32(u, p0, v0, a0, si, ds, c->central, c->b, c->H, c->d, P, V, A, J, ad_cuda_stream(S));
    } else {
        double ds = c->dt_scalar;
        double *P = DD(o[0]), *V = DD(o[1]), *A = DD(o[2]), *J = DD(o[3]);
        if (c->step == STEP_ACC) rc = api->acc_fwd_f64(u, p0, v0, a0, si, dts, ds, c->b, c->H, c->d, P, V, A, J, ad_cuda_stream(S));
        else if (c->step == STEP_JERK) rc = api->jerk_fwd_f64(u, p0, v0, a0, si, dts, ds, c->b, c->H, c->d, P, V, A, J, ad_cuda_stream(S));
        else rc = api->pos_fwd_f64(u, p0, v0, a0, si, ds, c->central, c->b, c->H, c->d, P, V, A, J, ad_cuda_stream(S));
    }
    return ad_cuda_check(S, rc, c->fn);
}

static int run_bwd_device(ad_state *S, traj_call *c, ad_tensor **o) {
    const addsl_cuda_api *api;
    int rc = device_prepare(S, c, &api);
    if (rc) return rc;
    const void *g0 = DD(c->grads[0]), *g1 = DD(c->grads[1]), *g2 = DD(c->grads[2]), *g3 = DD(c->grads[3]);
    const int64_t *si = DD(c->dev_sidx);
    const void *dts = DD(c->dev_dts);
    int64_t b = c->b, B0 = c->B0, H = c->H, d = c->d;
    if (c->dt == AD_FLOAT32) {
        float ds = (float)c->dt_scalar;
        float *gu = DD(o[0]), *gp = DD(o[1]), *gv = DD(o[2]), *ga = DD(o[3]);
        if (c->step == STEP_ACC) rc = api->acc_bwd_f32(g0, g1, g2, g3, si, dts, ds, b, B0, H, d, gu, gp, gv, ga, ad_cuda_stream(S));
        else if (c->step == STEP_JERK) rc = api->jerk_bwd_f32(g0, g1, g2, g3, si, dts, ds, b, B0, H, d, gu, gp, gv, ga, ad_cuda_stream(S));
        else rc = api->pos_bwd_f32(g0, g1, g2, g3, si, ds, c->central, b, B0, H, d, gu, gp, gv, ga, ad_cuda_stream(S));
    } else {
        double ds = c->dt_scalar;
        double *gu = DD(o[0]), *gp = DD(o[1]), *gv = DD(o[2]), *ga = DD(o[3]);
        if (c->step == STEP_ACC) rc = api->acc_bwd_f64(g0, g1, g2, g3, si, dts, ds, b, B0, H, d, gu, gp, gv, ga, ad_cuda_stream(S));
        else if (c->step == STEP_JERK) rc = api->jerk_bwd_f64(g0, g1, g2, g3, si, dts, ds, b, B0, H, d, gu, gp, gv, ga, ad_cuda_stream(S));
        else rc = api->pos_bwd_f64(g0, g1, g2, g3, si, ds, c->central, b, B0, H, d, gu, gp, gv, ga, ad_cuda_stream(S));
    }
    return ad_cuda_check(S, rc, c->fn);
}

static int tuple4(ad_state *S, ad_tensor **t, ad_value *out) {
    ad_list *l = ad_list_new(S, AD_TTUPLE, 4);
    if (!l) {
        for (int i = 0; i < 4; i++) ad_tensor_decref(S, t[i]);
        return ad_fail(S);
    }
    for (int i = 0; i < 4; i++) l->items[i] = ad_tensor_value(t[i]);
    *out = ad_list_value(l, AD_TTUPLE);
    return ADDSL_OK;
}

#define D(t) ad_tensor_data(t)

static void run_fwd(traj_call *c, ad_tensor **o) {
    void *u = D(c->u), *p0 = D(c->start[0]), *v0 = D(c->start[1]), *a0 = D(c->start[2]);
    if (c->dt == AD_FLOAT32) {
        if (c->step == STEP_ACC)
            ad_traj_acc_fwd_f32(u, p0, v0, a0, c->sidx, c->dts, c->b, c->H, c->d, D(o[0]), D(o[1]), D(o[2]), D(o[3]));
        else if (c->step == STEP_JERK)
            ad_traj_jerk_fwd_f32(u, p0, v0, a0, c->sidx, c->dts, c->b, c->H, c->d, D(o[0]), D(o[1]), D(o[2]), D(o[3]));
        else
            ad_traj_pos_fwd_f32(u, p0, v0, a0, c->sidx, (float)c->dt_scalar, c->central, c->b, c->H, c->d,
                                D(o[0]), D(o[1]), D(o[2]), D(o[3]));
    } else {
        if (c->step == STEP_ACC)
            ad_traj_acc_fwd_f64(u, p0, v0, a0, c->sidx, c->dts, c->b, c->H, c->d, D(o[0]), D(o[1]), D(o[2]), D(o[3]));
        else if (c->step == STEP_JERK)
            ad_traj_jerk_fwd_f64(u, p0, v0, a0, c->sidx, c->dts, c->b, c->H, c->d, D(o[0]), D(o[1]), D(o[2]), D(o[3]));
        else
            ad_traj_pos_fwd_f64(u, p0, v0, a0, c->sidx, c->dt_scalar, c->central, c->b, c->H, c->d,
                                D(o[0]), D(o[1]), D(o[2]), D(o[3]));
    }
}

static int traj_fwd(ad_state *S, ad_value *argv, int step, const char *fn, ad_value *out) {
    traj_call c = {.fn = fn, .step = step};
    ad_tensor *o[4] = {NULL, NULL, NULL, NULL};
    int rc = parse_call(S, &c, argv);
    for (int i = 0; i < 4 && !rc; i++)
        if (!(o[i] = traj_out(S, &c))) rc = ad_fail(S);
    if (!rc && c.device != AD_DEV_CPU) rc = run_fwd_device(S, &c, o);
    else if (!rc) run_fwd(&c, o);
    if (!rc) {
        rc = tuple4(S, o, out);
    } else {
        for (int i = 0; i < 4; i++) ad_tensor_decref(S, o[i]);
    }
    call_free(S, &c);
    return rc;
}

/* The four output gradients, none read as zeros. */
static int parse_grads(ad_state *S, traj_call *c, const ad_value *g) {
    static const char *const names[4] = {"grad_pos", "grad_vel", "grad_acc", "grad_jerk"};
    int64_t shape[3] = {c->b, c->H, c->d};
    for (int i = 0; i < 4; i++) {
        if (g[i].t == AD_TNONE) {
            if (!(c->grads[i] = ad_tensor_full_on(S, c->dt, 3, shape, 0.0, c->device))) return ad_fail(S);
            continue;
        }
        int rc = as_operand(S, c, g[i], names[i], c->dt, &c->grads[i]);
        if (rc) return rc;
        if (!ad_shape_equal(c->grads[i]->ndim, c->grads[i]->shape, 3, shape))
            return ad_error(S, "%s(): expected '%s' of shape [%lld, %lld, %lld]", c->fn, names[i],
                            (long long)c->b, (long long)c->H, (long long)c->d);
    }
    return ADDSL_OK;
}

static void run_bwd(traj_call *c, ad_tensor *gu, void *gst, ad_tensor **gs) {
    void *g0 = D(c->grads[0]), *g1 = D(c->grads[1]), *g2 = D(c->grads[2]), *g3 = D(c->grads[3]);
    if (c->dt == AD_FLOAT32) {
        if (c->step == STEP_ACC) ad_traj_acc_bwd_f32(g0, g1, g2, g3, c->dts, c->b, c->H, c->d, D(gu), gst);
        else if (c->step == STEP_JERK) ad_traj_jerk_bwd_f32(g0, g1, g2, g3, c->dts, c->b, c->H, c->d, D(gu), gst);
        else ad_traj_pos_bwd_f32(g0, g1, g2, g3, (float)c->dt_scalar, c->central, c->b, c->H, c->d, D(gu), gst);
        ad_traj_scatter_start_f32(gst, c->sidx, c->b, c->B0, c->d, D(gs[0]), D(gs[1]), D(gs[2]));
    } else {
        if (c->step == STEP_ACC) ad_traj_acc_bwd_f64(g0, g1, g2, g3, c->dts, c->b, c->H, c->d, D(gu), gst);
        else if (c->step == STEP_JERK) ad_traj_jerk_bwd_f64(g0, g1, g2, g3, c->dts, c->b, c->H, c->d, D(gu), gst);
        else ad_traj_pos_bwd_f64(g0, g1, g2, g3, c->dt_scalar, c->central, c->b, c->H, c->d, D(gu), gst);
        ad_traj_scatter_start_f64(gst, c->sidx, c->b, c->B0, c->d, D(gs[0]), D(gs[1]), D(gs[2]));
    }
}

/* argv: grad_pos, grad_vel, grad_acc, grad_jerk, then the forward's arguments. */
static int traj_bwd(ad_state *S, ad_value *argv, int step, const char *fn, ad_value *out) {
    traj_call c = {.fn = fn, .step = step};
    ad_tensor *o[4] = {NULL, NULL, NULL, NULL};
    void *gst = NULL;
    int rc = parse_call(S, &c, argv + 4);
    if (!rc) rc = parse_grads(S, &c, argv);
    if (!rc && !(o[0] = ad_tensor_empty_on(S, c.dt, 3, c.u->shape, c.device))) rc = ad_fail(S);
    for (int i = 0; i < 3 && !rc; i++)
        if (!(o[i + 1] = ad_tensor_empty_on(S, c.dt, c.start[i]->ndim, c.start[i]->shape, c.device))) rc = ad_fail(S);
    if (!rc && c.device != AD_DEV_CPU) {
        rc = run_bwd_device(S, &c, o);
    } else if (!rc) {
        if (!(gst = ad_malloc(S, (size_t)(3 * (c.b ? c.b : 1) * c.d + 1) * ad_dtype_size(c.dt)))) rc = ad_fail(S);
        else run_bwd(&c, o[0], gst, o + 1);
    }
    if (!rc) {
        rc = tuple4(S, o, out);
    } else {
        for (int i = 0; i < 4; i++) ad_tensor_decref(S, o[i]);
    }
    ad_free(S, gst);
    call_free(S, &c);
    return rc;
}

static int bi_acc_fwd(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return traj_fwd(S, argv, STEP_ACC, "traj_acc_fwd", out);
}
static int bi_jerk_fwd(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return traj_fwd(S, argv, STEP_JERK, "traj_jerk_fwd", out);
}
static int bi_pos_fwd(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return traj_fwd(S, argv, STEP_POS, "traj_pos_fwd", out);
}
static int bi_acc_bwd(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return traj_bwd(S, argv, STEP_ACC, "traj_acc_bwd", out);
}
static int bi_jerk_bwd(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return traj_bwd(S, argv, STEP_JERK, "traj_jerk_bwd", out);
}
static int bi_pos_bwd(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return traj_bwd(S, argv, STEP_POS, "traj_pos_bwd", out);
}

#define FWD_PARAMS "u, start_pos, start_vel, start_acc, dt"
#define BWD_PARAMS "grad_pos, grad_vel, grad_acc, grad_jerk, " FWD_PARAMS

const ad_builtin_def ad_bi_traj_defs[] = {
    {"traj_acc_fwd", bi_acc_fwd, FWD_PARAMS ", start_idx=none"},
    {"traj_acc_bwd", bi_acc_bwd, BWD_PARAMS ", start_idx=none"},
    {"traj_jerk_fwd", bi_jerk_fwd, FWD_PARAMS ", start_idx=none"},
    {"traj_jerk_bwd", bi_jerk_bwd, BWD_PARAMS ", start_idx=none"},
    {"traj_pos_fwd", bi_pos_fwd, FWD_PARAMS ", mode=\"central\", start_idx=none"},
    {"traj_pos_bwd", bi_pos_bwd, BWD_PARAMS ", mode=\"central\", start_idx=none"},
    {NULL, NULL, NULL}
};

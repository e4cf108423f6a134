/* bi_loss.c: the loss functions of torch.nn.functional (mse, l1, smooth L1,
 * Huber, binary cross entropy, nll, cross entropy) with torch's reductions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "builtins.h"
#include "kernel_ids.h"
#include "kernels/reduce.h"
#include "state.h"

enum { RED_NONE, RED_MEAN, RED_SUM };

static const int K_POINTWISE[2] = {AD_K_loss_pointwise_f32, AD_K_loss_pointwise_f64};
static const int K_BCE[2] = {AD_K_loss_bce_f32, AD_K_loss_bce_f64};
static const int K_BCE_LOGITS[2] = {AD_K_loss_bce_logits_f32, AD_K_loss_bce_logits_f64};
static const int K_NLL[2] = {AD_K_loss_nll_f32, AD_K_loss_nll_f64};
static const int K_SMOOTH[2] = {AD_K_loss_smooth_f32, AD_K_loss_smooth_f64};
static const int K_SOFT_CE[2] = {AD_K_loss_soft_ce_f32, AD_K_loss_soft_ce_f64};

/* Room for "[a, b, ...]" of AD_MAX_DIMS sizes. */
#define SHAPE_TEXT 400

static const char *shape_text(char *buf, int ndim, const int64_t *shape) {
    size_t n = 0;
    buf[n++] = '[';
    for (int i = 0; i < ndim; i++)
        n += (size_t)snprintf(buf + n, SHAPE_TEXT - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
    snprintf(buf + n, SHAPE_TEXT - n, "]");
    return buf;
}

static int reduction_arg(ad_state *S, ad_value v, const char *fn, int *mode) {
    const char *s;
    int rc = ad_arg_str(S, v, fn, "reduction", &s);
    if (rc) return rc;
    if (!strcmp(s, "none")) *mode = RED_NONE;
    else if (!strcmp(s, "mean")) *mode = RED_MEAN;
    else if (!strcmp(s, "sum")) *mode = RED_SUM;
    else return ad_error(S, "%s is not a valid value for reduction", s);
    return ADDSL_OK;
}

/* Applies the reduction to an elementwise loss; steals 'loss'. */
static ad_tensor *reduce_loss(ad_state *S, ad_tensor *loss, int mode) {
    if (!loss || mode == RED_NONE) return loss;
    ad_tensor *r = mode == RED_SUM ? ad_reduce_sum(S, loss, -1, NULL, false, -1)
                                   : ad_reduce_mean(S, loss, -1, NULL, false, -1);
    ad_tensor_decref(S, loss);
    return r;
}

/* A contiguous copy (or reference) of 't' broadcast to 'shape' in dtype 'dt'. */
static ad_tensor *expand_as(ad_state *S, ad_tensor *t, ad_dtype dt, int nd, const int64_t *shape) {
    if (t->dtype == dt && ad_shape_equal(t->ndim, t->shape, nd, shape) && ad_tensor_is_contiguous(t)) {
        ad_tensor_incref(t);
        return t;
    }
    ad_tensor *e = ad_tensor_expand(S, t, nd, shape);
    if (!e) return NULL;
    ad_tensor *c = ad_tensor_empty(S, dt, nd, shape);
    if (c && ad_tensor_copy_into(S, c, e)) { ad_tensor_decref(S, c); c = NULL; }
    ad_tensor_decref(S, e);
    return c;
}

static void *data_or_null(const ad_tensor *t) { return t ? ad_tensor_data(t) : NULL; }

/* The float dtype both operands promote to, or an error naming 'fn'. */
static int loss_dtype(ad_state *S, const ad_tensor *x, const ad_tensor *t, const char *fn,
                      ad_dtype *dt) {
    *dt = ad_promote(x->dtype, t->dtype);
    if (!ad_dtype_is_float(*dt))
        return ad_error(S, "\"%s\" not implemented for '%s'", fn, ad_torch_dtype_name(*dt));
    return ADDSL_OK;
}

/* ---- elementwise losses ------------------------------------------------- */

/* (input, target, reduction, param): input and target broadcast, as torch does (with a warning). */
static int pointwise(ad_state *S, ad_value *argv, bool has_param, int kind, const char *fn,
                     ad_value *out) {
    int mode = RED_MEAN, nd = 0;
    double param = 0;
    int64_t shape[AD_MAX_DIMS];
    ad_tensor *x, *t, *xc = NULL, *tc = NULL, *loss = NULL;
    ad_dtype dt;
    int rc = reduction_arg(S, argv[2], fn, &mode);
    if (!rc && has_param)
        rc = ad_arg_double(S, argv[3], fn, kind == AD_LOSS_HUBER ? "delta" : "beta", &param);
    if (!rc && kind == AD_LOSS_SMOOTH_L1 && param < 0)
        rc = ad_error(S, "smooth_l1_loss does not support negative values for beta.");
    if (!rc && kind == AD_LOSS_HUBER && param <= 0)
        rc = ad_error(S, "huber_loss does not support non-positive values for delta.");
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "input", &x);
    if (rc) return rc;
    if ((rc = ad_arg_tensor(S, argv[1], fn, "target", &t))) { ad_tensor_decref(S, x); return rc; }
    if (!(rc = loss_dtype(S, x, t, fn, &dt)) &&
        !(rc = ad_broadcast_shapes(S, x->ndim, x->shape, t->ndim, t->shape, &nd, shape))) {
        xc = expand_as(S, x, dt, nd, shape);
        tc = xc ? expand_as(S, t, dt, nd, shape) : NULL;
        loss = tc ? ad_tensor_empty(S, dt, nd, shape) : NULL;
        if (loss) {
            ad_karg a[6] = {{.p = ad_tensor_data(xc)}, {.p = ad_tensor_data(tc)},
                            {.p = ad_tensor_data(loss)}, {.i64 = loss->numel}, {.i32 = kind},
                            {.f64 = param}}, r;
            ad_kreg_call(S, K_POINTWISE[dt], a, &r);
        }
    }
    ad_tensor_decref(S, xc);
    ad_tensor_decref(S, tc);
    ad_tensor_decref(S, x);
    ad_tensor_decref(S, t);
    if (rc) return rc;
    return ad_ret_tensor(S, reduce_loss(S, loss, mode), out);
}

static int bi_mse_loss(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return pointwise(S, argv, false, AD_LOSS_SQUARED, "mse_loss", out);
}

static int bi_l1_loss(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return pointwise(S, argv, false, AD_LOSS_ABS, "l1_loss", out);
}

static int bi_smooth_l1_loss(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return pointwise(S, argv, true, AD_LOSS_SMOOTH_L1, "smooth_l1_loss", out);
}

static int bi_huber_loss(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    return pointwise(S, argv, true, AD_LOSS_HUBER, "huber_loss", out);
}

/* ---- binary cross entropy ----------------------------------------------- */

/* Operands of the two BCE forms: input, target, optional weights, all
 * contiguous in one float dtype with input's shape. */
typedef struct bce_ops {
    ad_tensor *x, *t, *w, *pw;
    ad_dtype dt;
    int mode;
} bce_ops;

static void bce_release(ad_state *S, bce_ops *o) {
    ad_tensor_decref(S, o->x);
    ad_tensor_decref(S, o->t);
    ad_tensor_decref(S, o->w);
    ad_tensor_decref(S, o->pw);
}

/* argv: input, target, weight, reduction[, pos_weight]. */
static int bce_prepare(ad_state *S, ad_value *argv, bool logits, const char *fn, bce_ops *o) {
    ad_tensor *x, *t;
    char s1[SHAPE_TEXT], s2[SHAPE_TEXT];
    memset(o, 0, sizeof *o);
    int rc = reduction_arg(S, argv[3], fn, &o->mode);
    if (!rc) rc = ad_arg_tensor(S, argv[0], fn, "input", &x);
    if (rc) return rc;
    if ((rc = ad_arg_tensor(S, argv[1], fn, "target", &t))) { ad_tensor_decref(S, x); return rc; }
    if (!ad_shape_equal(x->ndim, x->shape, t->ndim, t->shape)) {
        shape_text(s1, t->ndim, t->shape);
        shape_text(s2, x->ndim, x->shape);
        rc = logits ? ad_error(S, "Target size (%s) must be the same as input size (%s)", s1, s2)
                    : ad_error(S, "Using a target size (%s) that is different to the input size (%s) "
                               "is deprecated. Please ensure they have the same size.", s1, s2);
    }
    if (!rc) rc = loss_dtype(S, x, t, fn, &o->dt);
    if (!rc && !(o->x = expand_as(S, x, o->dt, x->ndim, x->shape))) rc = ad_fail(S);
    if (!rc && !(o->t = expand_as(S, t, o->dt, x->ndim, x->shape))) rc = ad_fail(S);
    for (int k = 0; k < (logits ? 2 : 1) && !rc; k++) {
        ad_value v = argv[k ? 4 : 2];
        ad_tensor *wt;
        if (v.t == AD_TNONE) continue;
        if ((rc = ad_arg_tensor(S, v, fn, k ? "pos_weight" : "weight", &wt))) break;
        ad_tensor *e = expand_as(S, wt, o->dt, x->ndim, x->shape);
        ad_tensor_decref(S, wt);
        if (!e) rc = ad_fail(S);
        if (k) o->pw = e; else o->w = e;
    }
    ad_tensor_decref(S, x);
    ad_tensor_decref(S, t);
    if (rc) bce_release(S, o);
    return rc;
}

static int bi_bce(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    bce_ops o;
    int rc = bce_prepare(S, argv, false, "binary_cross_entropy", &o);
    if (rc) return rc;
    ad_tensor *loss = ad_tensor_empty(S, o.dt, o.x->ndim, o.x->shape);
    if (loss) {
        ad_karg a[5] = {{.p = ad_tensor_data(o.x)}, {.p = ad_tensor_data(o.t)},
                        {.p = data_or_null(o.w)}, {.p = ad_tensor_data(loss)},
                        {.i64 = loss->numel}}, r;
        ad_kreg_call(S, K_BCE[o.dt], a, &r);
        if (r.i64) {
            ad_tensor_decref(S, loss);
            loss = NULL;
            ad_error(S, "all elements of input should be between 0 and 1");
        }
    }
    bce_release(S, &o);
    return ad_ret_tensor(S, reduce_loss(S, loss, o.mode), out);
}

static int bi_bce_logits(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    bce_ops o;
    int rc = bce_prepare(S, argv, true, "binary_cross_entropy_with_logits", &o);
    if (rc) return rc;
    ad_tensor *loss = ad_tensor_empty(S, o.dt, o.x->ndim, o.x->shape);
    if (loss) {
        ad_karg a[6] = {{.p = ad_tensor_data(o.x)}, {.p = ad_tensor_data(o.t)},
                        {.p = data_or_null(o.w)}, {.p = data_or_null(o.pw)},
                        {.p = ad_tensor_data(loss)}, {.i64 = loss->numel}}, r;
        ad_kreg_call(S, K_BCE_LOGITS[o.dt], a, &r);
    }
    bce_release(S, &o);
    return ad_ret_tensor(S, reduce_loss(S, loss, o.mode), out);
}

/* ---- nll and cross entropy ---------------------------------------------- */

/* Class-index loss setup: logp as [N, C, D] and the target checked against it. */
typedef struct nll_ops {
    ad_tensor *logp, *target, *weight; /* contiguous; weight may be NULL */
    int64_t N, C, D;
    int mode;
    int64_t ignore;
} nll_ops;

static void nll_release(ad_state *S, nll_ops *o) {
    ad_tensor_decref(S, o->logp);
    ad_tensor_decref(S, o->target);
    ad_tensor_decref(S, o->weight);
}

static int nll_shapes(ad_state *S, const ad_tensor *x, const ad_tensor *t) {
    char s1[SHAPE_TEXT], s2[SHAPE_TEXT];
    if (x->ndim < 1) return ad_error(S, "input tensor should be 1D or 2D");
    if (x->ndim == 1 && t->ndim != 0)
        return ad_error(S, "0D or 1D target tensor expected, multi-target not supported");
    if (x->ndim == 2 && t->ndim != 1)
        return ad_error(S, "0D or 1D target tensor expected, multi-target not supported");
    if (x->ndim == 2 && t->shape[0] != x->shape[0])
        return ad_error(S, "Expected input batch_size (%lld) to match target batch_size (%lld).",
                        (long long)x->shape[0], (long long)t->shape[0]);
    if (x->ndim > 2) {
        int64_t want[AD_MAX_DIMS];
        want[0] = x->shape[0];
        for (int i = 2; i < x->ndim; i++) want[i - 1] = x->shape[i];
        if (!ad_shape_equal(x->ndim - 1, want, t->ndim, t->shape))
            return ad_error(S, "Expected target size %s, got %s", shape_text(s1, x->ndim - 1, want),
                            shape_text(s2, t->ndim, t->shape));
    }
    return ADDSL_OK;
}

/* Fills 'o' from already log-probability input 'x' (float) and argv's target,
 * weight, reduction, ignore_index at positions 1..4. */
static int nll_prepare(ad_state *S, ad_tensor *x, ad_value *argv, const char *fn, nll_ops *o) {
    ad_tensor *t, *w = NULL;
    memset(o, 0, sizeof *o);
    int rc = reduction_arg(S, argv[3], fn, &o->mode);
    if (!rc) rc = ad_arg_int(S, argv[4], fn, "ignore_index", &o->ignore);
    if (!rc) rc = ad_arg_tensor(S, argv[1], fn, "target", &t);
    if (rc) return rc;
    if (!ad_dtype_is_float(x->dtype))
        rc = ad_error(S, "\"%s\" not implemented for '%s'", fn, ad_torch_dtype_name(x->dtype));
    else if (t->dtype != AD_INT64)
        rc = ad_error(S, "expected scalar type Long but found %s", ad_torch_dtype_name(t->dtype));
    else
        rc = nll_shapes(S, x, t);
    if (!rc) { /* nll_shapes has checked x is at least 1-D */
        o->N = x->ndim == 1 ? 1 : x->shape[0];
        o->C = x->ndim == 1 ? x->shape[0] : x->shape[1];
        o->D = 1;
        for (int i = 2; i < x->ndim; i++) o->D *= x->shape[i];
    }
    if (!rc && argv[2].t != AD_TNONE && !(rc = ad_arg_tensor(S, argv[2], fn, "weight", &w))) {
        char s[SHAPE_TEXT];
        if (w->ndim != 1 || w->shape[0] != o->C)
            rc = ad_error(S, "weight tensor should be defined either for all %lld classes or no "
                          "classes but got weight tensor of shape: %s", (long long)o->C,
                          shape_text(s, w->ndim, w->shape));
        else if (!(o->weight = expand_as(S, w, x->dtype, 1, w->shape)))
            rc = ad_fail(S);
        ad_tensor_decref(S, w);
    }
    if (!rc && !(o->logp = ad_tensor_contiguous(S, x))) rc = ad_fail(S);
    if (!rc && !(o->target = ad_tensor_contiguous(S, t))) rc = ad_fail(S);
    ad_tensor_decref(S, t);
    if (rc) nll_release(S, o);
    return rc;
}

/* Per-element loss (target's shape) and its weight; optional label smoothing. */
static int nll_elements(ad_state *S, nll_ops *o, double smoothing, ad_tensor **loss,
                        ad_tensor **wsum) {
    ad_dtype dt = o->logp->dtype;
    const ad_tensor *t = o->target;
    ad_tensor *l = ad_tensor_empty(S, dt, t->ndim, t->shape);
    ad_tensor *w = l ? ad_tensor_empty(S, dt, t->ndim, t->shape) : NULL;
    if (!w) { ad_tensor_decref(S, l); return ad_fail(S); }
    ad_karg a[9] = {{.p = ad_tensor_data(o->logp)}, {.p = ad_tensor_data(t)},
                    {.p = data_or_null(o->weight)}, {.p = ad_tensor_data(l)},
                    {.p = ad_tensor_data(w)}, {.i64 = o->N}, {.i64 = o->C}, {.i64 = o->D},
                    {.i64 = o->ignore}}, r;
    ad_kreg_call(S, K_NLL[dt], a, &r);
    if (r.i64) {
        int64_t bad = (int64_t)ad_tensor_get_flat(t, r.i64 - 1);
        ad_tensor_decref(S, l);
        ad_tensor_decref(S, w);
        return ad_error(S, "Target %lld is out of bounds.", (long long)bad);
    }
    if (smoothing > 0) {
        ad_karg b[9] = {a[0], a[1], a[2], a[3], a[5], a[6], a[7], a[8], {.f64 = smoothing}};
        ad_kreg_call(S, K_SMOOTH[dt], b, &r);
    }
    *loss = l;
    *wsum = w;
    return ADDSL_OK;
}

/* torch's weighted mean: sum(loss) / sum(weights of the counted targets). */
static ad_tensor *nll_reduce(ad_state *S, nll_ops *o, ad_tensor *loss, ad_tensor *wsum) {
    if (o->mode != RED_MEAN) {
        ad_tensor_decref(S, wsum);
        return reduce_loss(S, loss, o->mode);
    }
    ad_tensor *sl = ad_reduce_sum(S, loss, -1, NULL, false, AD_FLOAT64);
    ad_tensor *sw = ad_reduce_sum(S, wsum, -1, NULL, false, AD_FLOAT64);
    ad_tensor *r = NULL;
    double a, b;
    if (sl && sw && !ad_tensor_item(S, sl, &a) && !ad_tensor_item(S, sw, &b))
        r = ad_tensor_scalar(S, loss->dtype, a / b);
    ad_tensor_decref(S, sl);
    ad_tensor_decref(S, sw);
    ad_tensor_decref(S, loss);
    ad_tensor_decref(S, wsum);
    return r;
}

static ad_tensor *nll_run(ad_state *S, ad_tensor *logp, ad_value *argv, double smoothing,
                          const char *fn) {
    nll_ops o;
    ad_tensor *l = NULL, *w = NULL;
    if (nll_prepare(S, logp, argv, fn, &o)) return NULL;
    ad_tensor *r = NULL;
    if (!nll_elements(S, &o, smoothing, &l, &w)) r = nll_reduce(S, &o, l, w);
    nll_release(S, &o);
    return r;
}

/* nll_loss(input, target, weight=none, reduction="mean", ignore_index=-100) */
static int bi_nll_loss(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_value args[5] = {argv[0], argv[1], argv[2], argv[3], argv[4]};
    ad_tensor *x;
    int rc = ad_arg_tensor(S, argv[0], "nll_loss", "input", &x);
    if (rc) return rc;
    ad_tensor *r = nll_run(S, x, args, 0, "nll_loss");
    ad_tensor_decref(S, x);
    return ad_ret_tensor(S, r, out);
}

/* Cross entropy against class probabilities (target shaped like input). */
static ad_tensor *soft_ce(ad_state *S, ad_tensor *logp, ad_tensor *target, ad_value wv, int mode,
                          double eps) {
    char s1[SHAPE_TEXT], s2[SHAPE_TEXT];
    if (!ad_shape_equal(logp->ndim, logp->shape, target->ndim, target->shape)) {
        ad_error(S, "Expected target size %s to match input size %s when the target holds class "
                 "probabilities", shape_text(s1, target->ndim, target->shape),
                 shape_text(s2, logp->ndim, logp->shape));
        return NULL;
    }
    ad_dtype dt = logp->dtype;
    int cd = logp->ndim == 1 ? 0 : 1, ond = 0;
    int64_t N = cd ? logp->shape[0] : 1, C = logp->shape[cd], D = 1, oshape[AD_MAX_DIMS];
    for (int i = 0; i < logp->ndim; i++) {
        if (i > 1) D *= logp->shape[i];
        if (i != cd) oshape[ond++] = logp->shape[i];
    }
    ad_tensor *tc = expand_as(S, target, dt, logp->ndim, logp->shape), *w = NULL, *wc = NULL;
    if (tc && wv.t != AD_TNONE && !ad_arg_tensor(S, wv, "cross_entropy", "weight", &w)) {
        wc = w->numel == C ? expand_as(S, w, dt, w->ndim, w->shape) : NULL;
        if (w->numel != C)
            ad_error(S, "weight tensor should be defined either for all %lld classes or no classes "
                     "but got weight tensor of shape: %s", (long long)C,
                     shape_text(s1, w->ndim, w->shape));
        ad_tensor_decref(S, w);
    }
    ad_tensor *loss = NULL;
    if (tc && (wv.t == AD_TNONE || wc) && (loss = ad_tensor_empty(S, dt, ond, oshape))) {
        ad_karg a[8] = {{.p = ad_tensor_data(logp)}, {.p = ad_tensor_data(tc)},
                        {.p = data_or_null(wc)}, {.p = ad_tensor_data(loss)}, {.i64 = N},
                        {.i64 = C}, {.i64 = D}, {.f64 = eps}}, r;
        ad_kreg_call(S, K_SOFT_CE[dt], a, &r);
    }
    ad_tensor_decref(S, tc);
    ad_tensor_decref(S, wc);
    return reduce_loss(S, loss, mode);
}

/* cross_entropy(input, target, weight=none, reduction="mean", ignore_index=-100,
 * label_smoothing=0.0): log_softmax over the class dim, then nll or soft targets. */
static int bi_cross_entropy(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    double eps = 0;
    int mode = RED_MEAN;
    ad_tensor *x, *t = NULL;
    int rc = ad_arg_double(S, argv[5], "cross_entropy", "label_smoothing", &eps);
    if (!rc && (eps < 0 || eps > 1))
        rc = ad_error(S, "label_smoothing must be between 0.0 and 1.0. Got: %g", eps);
    if (!rc) rc = reduction_arg(S, argv[3], "cross_entropy", &mode);
    if (!rc) rc = ad_arg_tensor(S, argv[0], "cross_entropy", "input", &x);
    if (rc) return rc;
    ad_tensor *r = NULL;
    if (x->ndim == 0) {
        ad_error(S, "input tensor should be 1D or 2D");
    } else {
        ad_tensor *logp = ad_reduce_softmax(S, x, x->ndim == 1 ? 0 : 1, true, "log_softmax");
        if (logp && !ad_arg_tensor(S, argv[1], "cross_entropy", "target", &t)) {
            if (ad_dtype_is_float(t->dtype)) r = soft_ce(S, logp, t, argv[2], mode, eps);
            else r = nll_run(S, logp, argv, eps, "cross_entropy");
            ad_tensor_decref(S, t);
        }
        ad_tensor_decref(S, logp);
    }
    ad_tensor_decref(S, x);
    return ad_ret_tensor(S, r, out);
}

const ad_builtin_def ad_bi_loss_defs[] = {
    {"mse_loss", bi_mse_loss, "input, target, reduction=\"mean\""},
    {"l1_loss", bi_l1_loss, "input, target, reduction=\"mean\""},
    {"smooth_l1_loss", bi_smooth_l1_loss, "input, target, reduction=\"mean\", beta=1.0"},
    {"huber_loss", bi_huber_loss, "input, target, reduction=\"mean\", delta=1.0"},
    {"binary_cross_entropy", bi_bce, "input, target, weight=none, reduction=\"mean\""},
    {"binary_cross_entropy_with_logits", bi_bce_logits,
     "input, target, weight=none, reduction=\"mean\", pos_weight=none"},
    {"nll_loss", bi_nll_loss, "input, target, weight=none, reduction=\"mean\", ignore_index=-100"},
    {"cross_entropy", bi_cross_entropy,
     "input, target, weight=none, reduction=\"mean\", ignore_index=-100, label_smoothing=0.0"},
    {NULL, NULL, NULL}
};

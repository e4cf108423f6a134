/* bi_nn.c: the sliding-window kernels behind convolution, pooling and
 * nn.functional's unfold/fold: im2col and its adjoint col2im, for 1 to 3 spatial dims. */
#include <string.h>

#include "builtins.h"
#include "state.h"

/* Spatial dims the kernels handle (conv1d..conv3d); fewer are padded with size-1 dims. */
#define NN_MAX_SPATIAL 3

/* The window geometry shared by im2col and col2im, padded to NN_MAX_SPATIAL dims. */
typedef struct {
    int nsp;                       /* spatial dims actually given */
    int64_t in[NN_MAX_SPATIAL];    /* input (image) sizes */
    int64_t k[NN_MAX_SPATIAL], d[NN_MAX_SPATIAL], p[NN_MAX_SPATIAL], s[NN_MAX_SPATIAL];
    int64_t out[NN_MAX_SPATIAL];   /* number of window positions per dim */
    int64_t ksize, lsize, insize;  /* products of k, out and in */
} nn_geom;

/* Reads one per-dim parameter list: nsp ints, or a single int repeated. */
static int geom_list(ad_state *S, ad_value v, const char *fn, const char *pname, int nsp,
                     int64_t minval, int64_t *dst) {
    int n = 0;
    int64_t vals[AD_MAX_DIMS];
    int rc = ad_arg_shape(S, v, fn, pname, &n, vals);
    if (rc) return rc;
    if (n != nsp && n != 1)
        return ad_error(S, "%s(): argument '%s' must have %d elements, got %d", fn, pname, nsp, n);
    for (int i = 0; i < nsp; i++) {
        dst[i] = vals[n == 1 ? 0 : i];
        if (dst[i] < minval)
            return ad_error(S, "%s(): argument '%s' must be %s, but got %lld", fn, pname,
                            minval ? "positive" : "non-negative", (long long)dst[i]);
    }
    return ADDSL_OK;
}

/* Fills 'g' from (kernel_size, dilation, padding, stride) given as argv[0..3]
 * and the image sizes 'in' (nsp of them); the window count must be positive. */
static int geom_init(ad_state *S, const char *fn, ad_value *argv, int nsp, const int64_t *in,
                     nn_geom *g) {
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    for (int i = 0; i < NN_MAX_SPATIAL; i++) g->in[i] = g->k[i] = g->d[i] = g->s[i] = g->out[i] = 1;
    int rc = geom_list(S, argv[0], fn, "kernel_size", nsp, 1, g->k);
    if (!rc) rc = geom_list(S, argv[1], fn, "dilation", nsp, 1, g->d);
    if (!rc) rc = geom_list(S, argv[2], fn, "padding", nsp, 0, g->p);
    if (!rc) rc = geom_list(S, argv[3], fn, "stride", nsp, 1, g->s);
    if (rc) return rc;
    g->ksize = g->lsize = g->insize = 1;
    for (int i = 0; i < nsp; i++) {
        g->in[i] = in[i];
        int64_t span = g->d[i] * (g->k[i] - 1) + 1;
        int64_t room = in[i] + 2 * g->p[i] - span;
        if (room < 0)
            return ad_error(S, "%s(): the kernel (%lld with dilation %lld) is larger than the padded "
                            "input (%lld) in spatial dim %d", fn, (long long)g->k[i], (long long)g->d[i],
                            (long long)(in[i] + 2 * g->p[i]), i);
        g->out[i] = room / g->s[i] + 1;
    }
    for (int i = 0; i < NN_MAX_SPATIAL; i++) {
        g->ksize *= g->k[i];
        g->lsize *= g->out[i];
        g->insize *= g->in[i];
    }
    return ADDSL_OK;
}

/* Flat image index of window position 'o' and kernel offset 'kk', or -1 in the padding. */
static int64_t image_index(const nn_geom *g, const int64_t *o, const int64_t *kk) {
    int64_t idx = 0;
    for (int i = 0; i < NN_MAX_SPATIAL; i++) {
        int64_t x = o[i] * g->s[i] - g->p[i] + kk[i] * g->d[i];
        if (x < 0 || x >= g->in[i]) return -1;
        idx = idx * g->in[i] + x;
    }
    return idx;
}

/* Walks every (channel, kernel offset, window position) triple; 'col' is the
 * flat index in the [C * K, L] column matrix, 'img' the one in [C, in...]
 * (-1 in the padding). Both kernels are this walk with a different body. */
#define NN_WALK(g, nchan, BODY)                                                              \
    do {                                                                                     \
        int64_t kk_[NN_MAX_SPATIAL], o_[NN_MAX_SPATIAL], col = 0;                            \
        for (int64_t c_ = 0; c_ < (nchan); c_++)                                             \
            for (kk_[0] = 0; kk_[0] < (g)->k[0]; kk_[0]++)                                   \
                for (kk_[1] = 0; kk_[1] < (g)->k[1]; kk_[1]++)                               \
                    for (kk_[2] = 0; kk_[2] < (g)->k[2]; kk_[2]++)                           \
                        for (o_[0] = 0; o_[0] < (g)->out[0]; o_[0]++)                        \
                            for (o_[1] = 0; o_[1] < (g)->out[1]; o_[1]++)                    \
                                for (o_[2] = 0; o_[2] < (g)->out[2]; o_[2]++, col++) {       \
                                    int64_t at_ = image_index((g), o_, kk_);                 \
                                    int64_t img = at_ < 0 ? -1 : c_ * (g)->insize + at_;     \
                                    BODY;                                                    \
                                }                                                        \
    } while (0)

static void im2col_f64(const nn_geom *g, int64_t nchan, const double *x, double *cols) {
    NN_WALK(g, nchan, cols[col] = img < 0 ? 0.0 : x[img]);
}

static void im2col_f32(const nn_geom *g, int64_t nchan, const float *x, float *cols) {
    NN_WALK(g, nchan, cols[col] = img < 0 ? 0.0f : x[img]);
}

static void col2im_f64(const nn_geom *g, int64_t nchan, const double *cols, double *x) {
    NN_WALK(g, nchan, if (img >= 0) x[img] += cols[col]);
}

static void col2im_f32(const nn_geom *g, int64_t nchan, const float *cols, float *x) {
    NN_WALK(g, nchan, if (img >= 0) x[img] += cols[col]);
}

/* A contiguous float tensor argument (new reference) or an error naming 'fn'. */
static int float_arg(ad_state *S, ad_value v, const char *fn, const char *pname, ad_tensor **out) {
    ad_tensor *t;
    int rc = ad_arg_tensor(S, v, fn, pname, &t);
    if (rc) return rc;
    if (!ad_dtype_is_float(t->dtype)) {
        rc = ad_error(S, "\"%s\" not implemented for '%s'", fn, ad_torch_dtype_name(t->dtype));
        ad_tensor_decref(S, t);
        return rc;
    }
    *out = ad_tensor_contiguous(S, t);
    ad_tensor_decref(S, t);
    return *out ? ADDSL_OK : ad_fail(S);
}

/* _nn_im2col(input [N, C, *in], kernel_size, dilation, padding, stride) -> [N, C * K, L]:
 * column (c, k...) holds the window entries, zero where a window reads the padding. */
static int bi_nn_im2col(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char fn[] = "im2col";
    ad_tensor *x;
    int rc = float_arg(S, argv[0], fn, "input", &x);
    if (rc) return rc;
    int nsp = x->ndim - 2;
    nn_geom g;
    if (nsp < 1 || nsp > NN_MAX_SPATIAL)
        rc = ad_error(S, "%s(): expected a 3-D to 5-D input (batch, channels, spatial...), got %d-D",
                      fn, x->ndim);
    else
        rc = geom_init(S, fn, argv + 1, nsp, x->shape + 2, &g);
    if (rc) { ad_tensor_decref(S, x); return rc; }
    int64_t n = x->shape[0], c = x->shape[1];
    int64_t shape[3] = {n, c * g.ksize, g.lsize};
    ad_tensor *r = ad_tensor_empty(S, x->dtype, 3, shape);
    if (r) {
        int64_t per_in = c * g.insize, per_out = c * g.ksize * g.lsize;
        for (int64_t b = 0; b < n; b++) {
            if (x->dtype == AD_FLOAT64)
                im2col_f64(&g, c, (const double *)ad_tensor_data(x) + b * per_in,
                           (double *)ad_tensor_data(r) + b * per_out);
            else
                im2col_f32(&g, c, (const float *)ad_tensor_data(x) + b * per_in,
                           (float *)ad_tensor_data(r) + b * per_out);
        }
    }
    ad_tensor_decref(S, x);
    return ad_ret_tensor(S, r, out);
}

/* _nn_col2im(input [N, C * K, L], output_size, kernel_size, dilation, padding, stride)
 * -> [N, C, *output_size]: the adjoint of im2col, summing overlapping windows. */
static int bi_nn_col2im(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    static const char fn[] = "col2im";
    int nsp = 0;
    int64_t osz[AD_MAX_DIMS];
    ad_tensor *x;
    int rc = ad_arg_shape(S, argv[1], fn, "output_size", &nsp, osz);
    if (rc) return rc;
    if ((rc = float_arg(S, argv[0], fn, "input", &x))) return rc;
    nn_geom g;
    if (x->ndim != 3)
        rc = ad_error(S, "%s(): expected a 3-D input (batch, channels x kernel, blocks), got %d-D",
                      fn, x->ndim);
    else if (nsp < 1 || nsp > NN_MAX_SPATIAL)
        rc = ad_error(S, "%s(): output_size must have 1 to %d elements, got %d", fn, NN_MAX_SPATIAL, nsp);
    else
        rc = geom_init(S, fn, argv + 2, nsp, osz, &g);
    if (!rc && x->shape[1] % g.ksize)
        rc = ad_error(S, "%s(): expected size of input's dimension 1 to be divisible by the product "
                      "of kernel_size, but got input.size(1)=%lld and kernel_size product %lld",
                      fn, (long long)x->shape[1], (long long)g.ksize);
    if (!rc && x->shape[2] != g.lsize)
        rc = ad_error(S, "%s(): given output_size, kernel_size, dilation, padding and stride, expected "
                      "input.size(2) to be %lld, but got %lld", fn, (long long)g.lsize,
                      (long long)x->shape[2]);
    if (rc) { ad_tensor_decref(S, x); return rc; }
    int64_t n = x->shape[0], c = x->shape[1] / g.ksize;
    int64_t shape[2 + NN_MAX_SPATIAL] = {n, c};
    for (int i = 0; i < nsp; i++) shape[2 + i] = osz[i];
    ad_tensor *r = ad_tensor_zeros(S, x->dtype, 2 + nsp, shape);
    if (r) {
        int64_t per_in = c * g.ksize * g.lsize, per_out = c * g.insize;
        for (int64_t b = 0; b < n; b++) {
            if (x->dtype == AD_FLOAT64)
                col2im_f64(&g, c, (const double *)ad_tensor_data(x) + b * per_in,
                           (double *)ad_tensor_data(r) + b * per_out);
            else
                col2im_f32(&g, c, (const float *)ad_tensor_data(x) + b * per_in,
                           (float *)ad_tensor_data(r) + b * per_out);
        }
    }
    ad_tensor_decref(S, x);
    return ad_ret_tensor(S, r, out);
}

const ad_builtin_def ad_bi_nn_defs[] = {
    {"_nn_im2col", bi_nn_im2col, "input, kernel_size, dilation, padding, stride"},
    {"_nn_col2im", bi_nn_col2im, "input, output_size, kernel_size, dilation, padding, stride"},
    {NULL, NULL, NULL}
};

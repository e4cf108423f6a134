/* export/lower_conv.c: export_c's lowering of the sliding-window kernels, _im2col
 * and its adjoint _col2im, which convolutions (and their transposes), pooling,
 * unfold and fold are made of: direct loops over the windows. */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* Spatial dims the kernels handle, as builtins/bi_nn.c. */
#define XC_MAX_SPATIAL 3

typedef struct xwin {
    int nsp;
    int64_t in[XC_MAX_SPATIAL], k[XC_MAX_SPATIAL], d[XC_MAX_SPATIAL], p[XC_MAX_SPATIAL], s[XC_MAX_SPATIAL];
    int64_t out[XC_MAX_SPATIAL], ksize, lsize, insize;
} xwin;

/* One per-dim parameter: nsp ints, or one repeated (bi_nn.c's geom_list). */
static int win_param(ad_xctx *ctx, const ad_xrec *r, int i, int nsp, int64_t minval, int64_t *dst) {
    int64_t v[AD_MAX_DIMS];
    int n = 0;
    if (!ad_xl_pints(r, i, v, &n) || (n != nsp && n != 1)) return ad_xl_fail(ctx, "needs constant window sizes");
    for (int j = 0; j < nsp; j++) {
        dst[j] = v[n == 1 ? 0 : j];
        if (dst[j] < minval) return ad_xl_fail(ctx, "has a window size out of range");
    }
    return ADDSL_OK;
}

/* The geometry from the parameters at 'first' (kernel_size, dilation, padding, stride). */
static int win_init(ad_xctx *ctx, const ad_xrec *r, int first, int nsp, const int64_t *in, xwin *g) {
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    if (nsp < 1 || nsp > XC_MAX_SPATIAL) return ad_xl_fail(ctx, "needs 1 to 3 spatial dims");
    int rc = win_param(ctx, r, first, nsp, 1, g->k);
    if (!rc) rc = win_param(ctx, r, first + 1, nsp, 1, g->d);
    if (!rc) rc = win_param(ctx, r, first + 2, nsp, 0, g->p);
    if (!rc) rc = win_param(ctx, r, first + 3, nsp, 1, g->s);
    if (rc) return rc;
    g->ksize = g->lsize = g->insize = 1;
    for (int j = 0; j < nsp; j++) {
        g->in[j] = in[j];
        int64_t room = in[j] + 2 * g->p[j] - (g->d[j] * (g->k[j] - 1) + 1);
        if (room < 0) return ad_xl_fail(ctx, "has a kernel larger than the padded input");
        g->out[j] = room / g->s[j] + 1;
        g->ksize *= g->k[j];
        g->lsize *= g->out[j];
        g->insize *= in[j];
    }
    return ADDSL_OK;
}

/* The walk of bi_nn.c's NN_WALK: batch n, channel c, kernel offsets kJ,
 * window positions oJ, with 'col' counting (c, k..., o...) and xJ the image
 * coordinates; 'inside' is set when no xJ reads the padding. */
static void open_walk(ad_buf *b, const xwin *g, int64_t nb, int64_t nchan) {
    ad_buf_printf(b, "        for (long n = 0; n < %lld; n++) {\n            long col = 0;\n", (long long)nb);
    ad_buf_printf(b, "            for (long c = 0; c < %lld; c++)\n", (long long)nchan);
    for (int j = 0; j < g->nsp; j++) ad_buf_printf(b, "            for (long k%d = 0; k%d < %lld; k%d++)\n", j, j, (long long)g->k[j], j);
    for (int j = 0; j < g->nsp; j++) ad_buf_printf(b, "            for (long o%d = 0; o%d < %lld; o%d++)\n", j, j, (long long)g->out[j], j);
    ad_buf_puts(b, "            {\n");
    for (int j = 0; j < g->nsp; j++)
        ad_buf_printf(b, "                long x%d = o%d*%lld - %lld + k%d*%lld;\n", j, j, (long long)g->s[j], (long long)g->p[j], j,
                      (long long)g->d[j]);
    ad_buf_puts(b, "                int inside = 1");
    for (int j = 0; j < g->nsp; j++) ad_buf_printf(b, " && x%d >= 0 && x%d < %lld", j, j, (long long)g->in[j]);
    ad_buf_puts(b, ";\n");
}

static void close_walk(ad_buf *b) { ad_buf_puts(b, "                col++;\n            }\n        }\n"); }

/* _im2col(input [N, C, *in], kernel_size, dilation, padding, stride) -> [N, C*K, L]. */
static int lower_im2col(ad_xctx *ctx, const ad_xrec *r) {
    int src = ad_xl_pref(r, 0), o = r->n->out.ref;
    if (src < 0 || o < 0) return ad_xl_fail(ctx, "needs a tensor input");
    const ad_xval *x = &ctx->v[src];
    if (x->dt != AD_FLOAT32 && x->dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    xwin g;
    int rc = win_init(ctx, r, 1, x->ndim - 2, x->shape + 2, &g);
    if (rc) return rc;
    char in[32], out[32];
    ad_xl_open1(ctx, src, o, in, out, "each window's entries as a column, zero in the padding");
    ad_buf *b = ctx->body;
    if (!ctx->v[o].numel) { ad_buf_printf(b, "    (void)%s; (void)%s; /* empty */\n", in, out); return ADDSL_OK; }
    ctx->v[x->base].read = true;
    ad_buf_puts(b, "    {\n");
    open_walk(b, &g, x->shape[0], x->shape[1]);
    ad_buf_printf(b, "                %s[n*%lld + col] = inside ? %s[%lld + n*%lld + c*%lld", out,
                  (long long)(x->shape[1] * g.ksize * g.lsize), in, (long long)x->off, (long long)x->st[0], (long long)x->st[1]);
    for (int j = 0; j < g.nsp; j++) ad_buf_printf(b, " + x%d*%lld", j, (long long)x->st[2 + j]);
    ad_buf_puts(b, "] : 0;\n");
    close_walk(b);
    ad_buf_puts(b, "    }\n");
    return ADDSL_OK;
}

/* _col2im(input [N, C*K, L], output_size, kernel_size, dilation, padding,
 * stride) -> [N, C, *output_size]: overlapping windows summed, in the walk's
 * order as the interpreter sums them. */
static int lower_col2im(ad_xctx *ctx, const ad_xrec *r) {
    int src = ad_xl_pref(r, 0), o = r->n->out.ref;
    if (src < 0 || o < 0) return ad_xl_fail(ctx, "needs a tensor input");
    const ad_xval *x = &ctx->v[src];
    if (x->dt != AD_FLOAT32 && x->dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    int64_t osz[AD_MAX_DIMS];
    int nsp = 0;
    if (!ad_xl_pints(r, 1, osz, &nsp)) return ad_xl_fail(ctx, "needs a constant output_size");
    if (x->ndim != 3) return ad_xl_fail(ctx, "needs a 3-D input");
    xwin g;
    int rc = win_init(ctx, r, 2, nsp, osz, &g);
    if (rc) return rc;
    if (x->shape[1] % g.ksize || x->shape[2] != g.lsize) return ad_xl_fail(ctx, "has an input of the wrong shape");
    int64_t nchan = x->shape[1] / g.ksize;
    char in[32], out[32];
    ad_xl_open1(ctx, src, o, in, out, "each column added into its window");
    ad_buf *b = ctx->body;
    int64_t n = ctx->v[o].numel;
    if (!n || !x->numel) {
        if (n) ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) %s[i] = 0;\n", (long long)n, out);
        ad_buf_printf(b, "    (void)%s; (void)%s; /* empty */\n", in, out);
        return ADDSL_OK;
    }
    ctx->v[x->base].read = true;
    ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) %s[i] = 0;\n    {\n", (long long)n, out);
    open_walk(b, &g, x->shape[0], nchan);
    ad_buf_printf(b, "                if (inside) %s[n*%lld + c*%lld", out, (long long)(nchan * g.insize), (long long)g.insize);
    int64_t p = 1;
    for (int j = g.nsp - 1; j >= 0; j--) {
        ad_buf_printf(b, " + x%d*%lld", j, (long long)p);
        p *= g.in[j];
    }
    ad_buf_printf(b, "] += %s[%lld + n*%lld + (col / %lld)*%lld + (col %% %lld)*%lld];\n", in, (long long)x->off, (long long)x->st[0],
                  (long long)g.lsize, (long long)x->st[1], (long long)g.lsize, (long long)x->st[2]);
    close_walk(b);
    ad_buf_puts(b, "    }\n");
    return ADDSL_OK;
}

int ad_export_lower_conv(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->out.sub) return AD_XL_PASS;
    int id = r->n->op;
    if (id == AD_OP__im2col || id == AD_OP__nn_im2col || id == AD_OP_ad__nn_im2col) return lower_im2col(ctx, r);
    if (id == AD_OP__col2im || id == AD_OP__nn_col2im || id == AD_OP_ad__nn_col2im) return lower_col2im(ctx, r);
    return AD_XL_PASS;
}

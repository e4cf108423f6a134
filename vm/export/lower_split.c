/* export/lower_split.c: export_c's lowering of the builtins that cut a tensor into
 * views (split, chunk, unbind: the tracer keeps them, as builtins it does not
 * know to be pure, as records with an effect; the library's split functions
 * read only their pieces' shapes) and of tuple(), which holds its items. */
#include "export/lower.h"

#include <string.h>

#include "autograd/op.h"

/* The pieces lie one after the other along dim; unbind's drop it. */
static int lower_pieces(ad_xctx *ctx, const ad_tnode *n, bool unbind) {
    if (n->nargs < 1 || n->args[0].ref < 0) return ad_xl_fail(ctx, "needs a tensor operand");
    int src = n->args[0].ref, di = unbind ? 1 : 2;
    const ad_xval *x = &ctx->v[src];
    int64_t dim = 0;
    if (n->nargs > di) {
        const ad_targ *a = &n->args[di];
        if (a->ref >= 0 || a->sub || !ad_is_number(a->c)) return ad_xl_fail(ctx, "needs an int dim");
        dim = (int64_t)a->c.u.n;
    }
    if (x->ndim == 0) return ad_xl_fail(ctx, "needs a tensor of at least one dim");
    int d = (int)(dim < 0 ? dim + x->ndim : dim);
    if (d < 0 || d >= x->ndim) return ad_xl_fail(ctx, "has a dim out of range");
    int64_t at = 0;
    for (int k = 0; k < n->out.nsub; k++) {
        int o = n->out.sub[k].ref;
        int64_t len = unbind ? 1 : (o >= 0 && ctx->v[o].ndim == x->ndim ? ctx->v[o].shape[d] : -1);
        if (len < 0) return ad_xl_fail(ctx, "has a piece that is not a tensor of its operand's rank");
        if (o >= 0) {
            ad_xval *y = &ctx->v[o];
            y->kind = AD_XV_VIEW; y->base = x->base; y->off = x->off + at * x->st[d];
            int j = 0;
            for (int e = 0; e < x->ndim; e++) {
                if (unbind && e == d) continue;
                y->shape[j] = e == d ? len : x->shape[e];
                y->st[j++] = x->st[e];
            }
            y->ndim = j;
            ad_xl_use(ctx, src);
        }
        at += len;
    }
    ad_xl_comment(ctx, "its pieces are views of the operand (index arithmetic, no copy)");
    return ADDSL_OK;
}

static int lower_tuple(ad_xctx *ctx, const ad_tnode *n) {
    const ad_targ *vals = n->nargs == 1 ? &n->args[0] : NULL, *o = &n->out;
    if (!vals || !vals->sub || vals->nsub != o->nsub) return ad_xl_fail(ctx, "needs a sequence of values");
    for (int k = 0; k < o->nsub; k++) {
        int s = vals->sub[k].ref, dst = o->sub[k].ref;
        if (dst < 0) continue;
        if (s < 0) return ad_xl_fail(ctx, "needs tensor items");
        ad_xval *y = &ctx->v[dst];
        const ad_xval *x = &ctx->v[s];
        y->kind = AD_XV_VIEW; y->base = x->base; y->off = x->off; y->ndim = x->ndim;
        for (int j = 0; j < x->ndim; j++) { y->shape[j] = x->shape[j]; y->st[j] = x->st[j]; }
        ad_xl_use(ctx, s);
    }
    ad_xl_comment(ctx, "its items are the values it holds (no copy)");
    return ADDSL_OK;
}

int ad_export_lower_split(ad_xctx *ctx, const ad_tnode *n) {
    if (n->kind != AD_TN_BUILTIN || !n->out.sub) return AD_XL_PASS;
    int id = n->op;
    if (id == AD_OP_split || id == AD_OP_chunk) return lower_pieces(ctx, n, false);
    if (id == AD_OP_unbind) return lower_pieces(ctx, n, true);
    if (id == AD_OP_tuple) return lower_tuple(ctx, n);
    return AD_XL_PASS;
}

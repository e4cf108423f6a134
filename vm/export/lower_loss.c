/* export/lower_loss.c: export_c's lowering of the loss ops whose forwards are
 * kernels: binary_cross_entropy, its logits form and nll_loss, each element as builtins/kernels/reduce.c computes it (in double,
 * rounded to the dtype), then reduced in element order. */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* Elements ($0 input, $1 target, $2 weight, $3 pos_weight; $F: libm suffix),
 * kernels/reduce.c's ad_loss_bce and ad_loss_bce_logits: torch clamps each
 * log term at -100. A C function cannot raise, so binary_cross_entropy's
 * input out of [0, 1] gives what libm gives (NaN) where the interpreter raises. */
static const char bce_elem[] = "((($1 - 1) * fmax$F(log1p$F(-$0), -100) - $1 * fmax$F(log$F($0), -100)) * $2)";
static const char bcel_elem[] =
    "(((1 - $1) * $0 + (1 + ($3 - 1) * $1) * (log1p$F(exp$F(-fabs$F($0))) + fmax$F(-$0, 0))) * $2)";

enum { RED_NONE, RED_MEAN, RED_SUM };

static int reduction(ad_xctx *ctx, const ad_xrec *r, int i, int *mode) {
    ad_value v = ad_xl_pconst(r, i);
    const char *s = v.t == AD_TSTR ? v.u.s->data : i < r->np && !r->p[i].a ? "mean" : NULL;
    if (!s) return ad_xl_fail(ctx, "needs a constant reduction");
    if (!strcmp(s, "none")) *mode = RED_NONE;
    else if (!strcmp(s, "mean")) *mode = RED_MEAN;
    else if (!strcmp(s, "sum")) *mode = RED_SUM;
    else return ad_xl_fail(ctx, "has an unknown reduction");
    return ADDSL_OK;
}

/* 'tmpl' with $k replaced by 'xk' and $F by nothing (double). */
static void expand_elem(ad_buf *b, const char *tmpl) {
    for (const char *c = tmpl; *c; c++) {
        if (c[0] == '$' && c[1] == 'F') { c++; continue; }
        if (c[0] == '$' && c[1] >= '0' && c[1] <= '9') { ad_buf_printf(b, "x%c", c[1]); c++; continue; }
        ad_buf_printf(b, "%c", *c);
    }
}

/* The two BCE forms: parameters input, target, weight, reduction[, pos_weight]. */
static int lower_bce(ad_xctx *ctx, const ad_xrec *r, bool logits) {
    int mode, rc = reduction(ctx, r, 3, &mode);
    if (rc) return rc;
    int x = ad_xl_pref(r, 0), t = ad_xl_pref(r, 1), o = r->n->out.ref;
    if (x < 0 || t < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor input and target");
    int ops[4] = {x, t, ad_xl_pref(r, 2), logits ? ad_xl_pref(r, 4) : -1};
    if ((ad_xl_pconst(r, 2).t != AD_TNONE && ops[2] < 0) || (logits && ad_xl_pconst(r, 4).t != AD_TNONE && ops[3] < 0))
        return ad_xl_fail(ctx, "has a weight that is not a tensor");
    const char *elem = logits ? bcel_elem : bce_elem;
    if (mode == RED_NONE) {
        /* absent weights as the literal 1: exact */
        ad_xrec q = *r;
        if (ops[3] >= 0) q.p[3] = r->p[4];
        for (int i = 2; i < 4; i++) {
            if (ops[i] >= 0) continue;
            q.p[i].a = NULL;
            q.p[i].c = ad_num(1);
        }
        if (q.np < 4) q.np = 4;
        return ad_xl_emit_map(ctx, &q, 4, elem, AD_FLOAT64);
    }
    const ad_xval *X = &ctx->v[x], *Y = &ctx->v[o];
    ad_xl_make_buf(ctx, o);
    ad_xl_comment(ctx, mode == RED_SUM ? "the elements' sum, in order" : "the elements' mean, summed in order");
    char on[32];
    ad_export_vname(ctx, o, on, sizeof on);
    const char *ct = ad_export_ctype(Y->dt);
    ad_buf *b = ctx->body;
    if (!X->numel) {
        char xn[32];
        ad_xl_read_name(ctx, x, xn, sizeof xn);
        /* an empty input may be a block no other statement names */
        ad_buf_printf(b, "    (void)%s;\n", xn);
        ad_buf_printf(b, "    %s[0] = (%s)%s;\n", on, ct, mode == RED_SUM ? "0" : "NAN");
        return ADDSL_OK;
    }
    ad_buf_printf(b, "    {\n        double acc = 0;\n        for (long q = 0; q < %lld; q++) {\n", (long long)X->numel);
    for (int i = 0; i < (logits ? 4 : 3); i++) {
        if (ops[i] < 0) { ad_buf_printf(b, "            double x%d = 1;\n", i); continue; }
        char nm[32];
        int64_t st[AD_MAX_DIMS];
        ad_xl_bcast_st(&ctx->v[ops[i]], X->shape, X->ndim, st);
        ad_xl_read_name(ctx, ops[i], nm, sizeof nm);
        ad_buf_printf(b, "            double x%d = (double)%s[%lld", i, nm, (long long)ctx->v[ops[i]].off);
        ad_xl_offset_terms(b, "q", X->shape, X->ndim, st, -1);
        ad_buf_puts(b, "];\n");
    }
    /* each element rounded to the dtype first, as the kernel stores it */
    ad_buf_printf(b, "            acc += %s", Y->dt == AD_FLOAT64 ? "" : "(double)(float)");
    expand_elem(b, elem);
    ad_buf_puts(b, ";\n        }\n");
    if (mode == RED_SUM) ad_buf_printf(b, "        %s[0] = (%s)acc;\n    }\n", on, ct);
    else ad_buf_printf(b, "        %s[0] = (%s)(acc / %lld);\n    }\n", on, ct, (long long)X->numel);
    return ADDSL_OK;
}

/* nll_loss(input, target, weight, reduction, ignore_index): input [C], [N, C]
 * or [N, C, d...], target [], [N] or [N, d...]; each element -weight[c] *
 * input[n, c, d...] (0 where c is ignore_index); 'mean' divides the sum by
 * the sum of the counted elements' weights (NaN when all are ignored), as
 * kernels/reduce.c's ad_loss_nll and bi_loss.c's nll_reduce. A class out of
 * range, an error in the interpreter, is clamped into range (negative ones
 * counted from the end first). */
static int lower_nll(ad_xctx *ctx, const ad_xrec *r) {
    int mode, rc = reduction(ctx, r, 3, &mode);
    if (rc) return rc;
    int x = ad_xl_pref(r, 0), t = ad_xl_pref(r, 1), w = ad_xl_pref(r, 2), o = r->n->out.ref;
    double ign = -100;
    if (x < 0 || t < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor input and target");
    if (ad_xl_pconst(r, 2).t != AD_TNONE && w < 0) return ad_xl_fail(ctx, "has a weight that is not a tensor");
    if (r->np > 4 && r->p[4].a && !ad_xl_pnum(r, 4, &ign)) return ad_xl_fail(ctx, "needs a constant ignore_index");
    const ad_xval *X = &ctx->v[x], *T = &ctx->v[t], *Y = &ctx->v[o];
    if (X->ndim < 1 || T->ndim != (X->ndim == 1 ? 0 : X->ndim - 1)) return ad_xl_fail(ctx, "has a target of unexpected rank");
    int cd = X->ndim == 1 ? 0 : 1;
    int64_t C = X->shape[cd], xst[AD_MAX_DIMS] = {0};
    /* the input's strides over the target's dims (batch, then the inner dims) */
    for (int j = 0; j < T->ndim; j++) xst[j] = X->st[j == 0 ? 0 : j + 1];
    ad_xl_make_buf(ctx, o);
    ad_xl_comment(ctx, "classes clamped into range");
    char on[32], xn[32], tn[32], wn[32] = "";
    ad_export_vname(ctx, o, on, sizeof on);
    const char *ct = ad_export_ctype(Y->dt);
    ad_buf *b = ctx->body;
    ad_xl_read_name(ctx, x, xn, sizeof xn);
    if (!T->numel) {
        /* an empty input may be a block no other statement names */
        ad_buf_printf(b, "    (void)%s;\n", xn);
        if (mode == RED_NONE) return ad_xl_empty(ctx, o);
        ad_buf_printf(b, "    %s[0] = (%s)%s;\n", on, ct, mode == RED_SUM ? "0" : "NAN");
        return ADDSL_OK;
    }
    ad_xl_read_name(ctx, t, tn, sizeof tn);
    if (w >= 0) ad_xl_read_name(ctx, w, wn, sizeof wn);
    ad_buf_puts(b, mode == RED_NONE ? "    {\n" : mode == RED_SUM ? "    {\n        double acc = 0;\n" : "    {\n        double acc = 0, wsum = 0;\n");
    ad_buf_printf(b, "        for (long q = 0; q < %lld; q++) {\n            long k = (long)%s[%lld", (long long)T->numel, tn,
                  (long long)T->off);
    ad_xl_offset_terms(b, "q", T->shape, T->ndim, T->st, -1);
    ad_buf_puts(b, "];\n            double l = 0, wc = 0;\n");
    ad_buf_printf(b, "            if (k != %lld) {\n", (long long)ign);
    ad_xl_clamp_index(b, "        ", "k", C);
    if (w >= 0) ad_buf_printf(b, "                wc = (double)%s[%lld + k*%lld];\n", wn, (long long)ctx->v[w].off,
                              (long long)(ctx->v[w].ndim ? ctx->v[w].st[0] : 0));
    else ad_buf_puts(b, "                wc = 1;\n");
    const char *rnd = Y->dt == AD_FLOAT64 ? "" : "(double)(float)";
    ad_buf_printf(b, "                l = %s(-wc * (double)%s[%lld + k*%lld", rnd, xn, (long long)X->off, (long long)X->st[cd]);
    ad_xl_offset_terms(b, "q", T->shape, T->ndim, xst, -1);
    ad_buf_printf(b, "]);\n");
    if (*rnd) ad_buf_printf(b, "                wc = %swc;\n", rnd);
    ad_buf_puts(b, "            }\n");
    if (mode == RED_NONE) ad_buf_printf(b, "            %s[q] = (%s)l;\n", on, ct);
    else ad_buf_puts(b, mode == RED_SUM ? "            acc += l;\n" : "            acc += l;\n            wsum += wc;\n");
    ad_buf_puts(b, "        }\n");
    if (mode == RED_SUM) ad_buf_printf(b, "        %s[0] = (%s)acc;\n", on, ct);
    if (mode == RED_MEAN) ad_buf_printf(b, "        %s[0] = (%s)(acc / wsum);\n", on, ct);
    ad_buf_puts(b, "    }\n");
    return ADDSL_OK;
}

int ad_export_lower_loss(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->kind != AD_TN_OP && r->n->kind != AD_TN_BUILTIN) return AD_XL_PASS;
    int id = r->n->op;
    if (id == AD_OP_binary_cross_entropy) return lower_bce(ctx, r, false);
    if (id == AD_OP_binary_cross_entropy_with_logits) return lower_bce(ctx, r, true);
    if (id == AD_OP_nll_loss) return lower_nll(ctx, r);
    return AD_XL_PASS;
}

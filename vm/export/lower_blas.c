/* export/lower_blas.c: export_c(..., blas=true): matrix products written as
 * cblas_dgemm/cblas_sgemm calls (the host links -lopenblas or -lblas). */
#include "export/nest.h"

#include <stdio.h>

/* How BLAS reads a rows x cols matrix with strides (rs, cs): row-major as it
 * is (ld = its row stride) or transposed (ld = its column stride). A dim of
 * one element may have any stride. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans, int64_t *ld) {
    int64_t minc = cols > 1 ? cols : 1, minr = rows > 1 ? rows : 1;
    if (cols == 1 || cs == 1) {
        *ld = rows == 1 ? minc : rs;
        *trans = false;
        if (*ld >= minc) return true;
    }
    if (rows == 1 || rs == 1) {
        *ld = cols == 1 ? minr : cs;
        *trans = true;
        if (*ld >= minr) return true;
    }
    return false;
}

/* The one stride that walks an operand's batch dims as a flat index (0 for a
 * broadcast operand); false when they do not line up. */
static bool batch_stride(const ad_xnest *e, int nb, const int64_t *st, int64_t *out) {
    int64_t unit = 0, p = 1;
    bool set = false;
    for (int d = nb - 1; d >= 0; d--) {
        if (e->shape[d] != 1) {
            if (!set) { unit = st[d] / (p ? p : 1); set = true; }
            if (st[d] != unit * p) return false;
        }
        p *= e->shape[d];
    }
    *out = unit;
    return true;
}

static void pointer(ad_xctx *ctx, const ad_xoperand *o, int64_t bst, int64_t nbatch, ad_buf *b) {
    char nm[32];
    ad_export_vname(ctx, o->ref, nm, sizeof nm);
    ctx->v[ctx->v[o->ref].base].read = true;
    ad_buf_puts(b, nm);
    if (o->off) ad_buf_printf(b, " + %lld", (long long)o->off);
    if (nbatch > 1 && bst) ad_buf_printf(b, " + b*%lld", (long long)bst);
}

bool ad_export_gemm(ad_xctx *ctx, ad_xnest *e, const ad_xgemm *g, const char *opname) {
    const ad_xval *O = &ctx->v[e->dest];
    if ((O->dt != AD_FLOAT32 && O->dt != AD_FLOAT64) || ctx->v[e->op[0].ref].dt != O->dt ||
        ctx->v[e->op[1].ref].dt != O->dt || !g->n || !g->m || !g->k)
        return false;
    bool ta, tb;
    int64_t lda, ldb, sa, sb, nbatch = 1;
    if (!blas_layout(g->n, g->k, g->san, g->sak, &ta, &lda) || !blas_layout(g->k, g->m, g->sbk, g->sbm, &tb, &ldb) ||
        !batch_stride(e, g->nb, e->op[0].st, &sa) || !batch_stride(e, g->nb, e->op[1].st, &sb))
        return false;
    for (int d = 0; d < g->nb; d++) nbatch *= e->shape[d];
    ad_buf *b = ctx->body;
    const ad_tnode *t = &ctx->T->nodes[ctx->node];
    bool f32 = O->dt == AD_FLOAT32;
    ad_buf_printf(b, "    /* %s:%d:%d %s: cblas_%cgemm */\n", ctx->chunk, t->line, t->col, opname, f32 ? 's' : 'd');
    if (g->bias >= 0 && g->beta != 0) {
        /* C starts as the bias (broadcast); the call adds the product to it */
        ad_xnest c = *e;
        c.nred = 0; c.init = NULL; c.nops = 1; c.op[0] = e->op[2]; c.expr = "$0";
        c.ct = c.acct = O->dt;
        ad_export_emit_nest(ctx, &c);
    }
    ad_export_use(ctx, e->op[0].ref);
    ad_export_use(ctx, e->op[1].ref);
    char dn[32];
    ad_export_vname(ctx, e->dest, dn, sizeof dn);
    if (nbatch > 1) ad_buf_printf(b, "    for (long b = 0; b < %lld; b++)\n    ", (long long)nbatch);
    ad_buf_printf(b, "    cblas_%cgemm(CblasRowMajor, %s, %s, %lld, %lld, %lld, ", f32 ? 's' : 'd',
                  ta ? "CblasTrans" : "CblasNoTrans", tb ? "CblasTrans" : "CblasNoTrans", (long long)g->n, (long long)g->m,
                  (long long)g->k);
    ad_export_literal(b, O->dt, g->alpha);
    ad_buf_puts(b, ", ");
    pointer(ctx, &e->op[0], sa, nbatch, b);
    ad_buf_printf(b, ", %lld, ", (long long)lda);
    pointer(ctx, &e->op[1], sb, nbatch, b);
    ad_buf_printf(b, ", %lld, ", (long long)ldb);
    ad_export_literal(b, O->dt, g->bias >= 0 ? g->beta : 0);
    ad_buf_printf(b, ", %s", dn);
    if (nbatch > 1) ad_buf_printf(b, " + b*%lld", (long long)(g->n * g->m));
    ad_buf_printf(b, ", %lld);\n", (long long)g->m);
    return true;
}

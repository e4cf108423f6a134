/* export/lower_scatter.c: export_c's lowering of scatter_reduce (so index_reduce),
 * whose kernel reduces values into positions held in an int64 tensor, and of
 * repeat_interleave, whose repeats must be known at export time. */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* ---- scatter_reduce ---- */

enum { RED_SUM, RED_PROD, RED_MEAN, RED_AMAX, RED_AMIN };

/* 'acc' combined with 'x' as builtins/bi_index_ops.c's combine() does. */
static const char *const combine_text[] = {
    "acc + x", "acc * x", "acc + x",
    "(isnan(x) || isnan(acc) ? (double)NAN : (x > acc ? x : acc))",
    "(isnan(x) || isnan(acc) ? (double)NAN : (x < acc ? x : acc))",
};

static int reduce_kind(ad_xctx *ctx, const ad_xrec *r, int *red) {
    static const char *const names[] = {"sum", "prod", "mean", "amax", "amin"};
    ad_value v = ad_xl_pconst(r, 4);
    if (v.t != AD_TSTR) return ad_xl_fail(ctx, "needs a constant reduce string");
    for (int i = 0; i < 5; i++)
        if (!strcmp(v.u.s->data, names[i])) { *red = i; return ADDSL_OK; }
    return ad_xl_fail(ctx, "has an unknown reduce");
}

/* scatter_reduce(self, dim, index, src, reduce, include_self): a copy of
 * self, then each src entry (read at index's coords) combined into the
 * element index names along dim, in index's row-major order as the library
 * does, in double and stored in self's dtype after each step (the same
 * roundings). A count per element (in the scratch) says whether an element
 * has received a value yet (include_self=false) and divides the means. */
static int lower_scatter_reduce(ad_xctx *ctx, const ad_xrec *r) {
    int self = ad_xl_pref(r, 0), ix = ad_xl_pref(r, 2), src = ad_xl_pref(r, 3), o = r->n->out.ref;
    double incl = 1;
    int red = 0, rc = reduce_kind(ctx, r, &red);
    if (rc) return rc;
    if (self < 0 || ix < 0 || src < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor self, index and src");
    if (r->np > 5 && r->p[5].a && !ad_xl_pnum(r, 5, &incl)) return ad_xl_fail(ctx, "needs a constant include_self");
    const ad_xval *y = &ctx->v[o], *I = &ctx->v[ix];
    int nd, ind, snd, d;
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS], ish[AD_MAX_DIMS], ist[AD_MAX_DIMS], ssh[AD_MAX_DIMS], sst[AD_MAX_DIMS];
    ad_xl_make_buf(ctx, o);
    ad_xl_dims1(y, &nd, sh, st);
    ad_xl_dims1(I, &ind, ish, ist);
    ad_xl_dims1(&ctx->v[src], &snd, ssh, sst);
    if (I->numel && (ind != nd || snd != nd)) return ad_xl_fail(ctx, "has an index or src of another rank than self");
    if ((rc = ad_xl_dim_of(ctx, r, 1, nd, &d))) return rc;
    bool counts = !incl || red == RED_MEAN;
    ad_xl_comment(ctx, "a copy, then src reduced in at the indices (clamped into range)");
    ad_xl_copy_self(ctx, r, self, o);
    char on[32], iname[32], sname[32];
    ad_export_vname(ctx, o, on, sizeof on);
    ad_xl_read_name(ctx, ix, iname, sizeof iname);
    ad_xl_read_name(ctx, src, sname, sizeof sname);
    if (!y->numel || !I->numel) {
        /* nothing reduced: index and src may be blocks no other statement names */
        ad_buf_printf(ctx->body, "    (void)%s; (void)%s;\n", iname, sname);
        return y->numel ? ADDSL_OK : ad_xl_empty(ctx, o);
    }
    const char *ct = ad_export_ctype(y->dt);
    ad_buf *b = ctx->body;
    ad_buf_puts(b, "    {\n");
    if (counts) {
        int64_t bytes = y->numel * (int64_t)sizeof(long);
        if (bytes > ctx->scratch) ctx->scratch = bytes;
        ad_buf_printf(b, "        long *cnt = (long *)(void *)scratch;\n");
        ad_buf_printf(b, "        for (long i = 0; i < %lld; i++) cnt[i] = %d;\n", (long long)y->numel, incl ? 1 : 0);
    }
    ad_buf_printf(b, "        for (long q = 0; q < %lld; q++) {\n            long k = (long)%s[%lld", (long long)I->numel, iname,
                  (long long)I->off);
    ad_xl_offset_terms(b, "q", ish, ind, ist, -1);
    ad_buf_puts(b, "];\n");
    ad_xl_clamp_index(b, "    ", "k", sh[d]);
    ad_buf_printf(b, "            long p = k*%lld", (long long)st[d]);
    ad_xl_offset_terms(b, "q", ish, ind, st, d);
    ad_buf_printf(b, ";\n            double x = (double)%s[%lld", sname, (long long)ctx->v[src].off);
    ad_xl_offset_terms(b, "q", ish, ind, sst, -1);
    ad_buf_printf(b, "];\n            double acc = (double)%s[p];\n", on);
    if (incl) ad_buf_printf(b, "            %s[p] = (%s)(%s);\n", on, ct, combine_text[red]);
    else ad_buf_printf(b, "            %s[p] = (%s)(cnt[p] == 0 ? x : %s);\n", on, ct, combine_text[red]);
    if (counts) ad_buf_puts(b, "            cnt[p] += 1;\n");
    ad_buf_puts(b, "        }\n");
    if (red == RED_MEAN) {
        bool integral = y->dt != AD_FLOAT32 && y->dt != AD_FLOAT64;
        ad_buf_printf(b, "        for (long i = 0; i < %lld; i++)\n            if (cnt[i] > 1) %s[i] = (%s)(%s((double)%s[i] / (double)cnt[i]));\n",
                      (long long)y->numel, on, ct, integral ? "floor" : "", on);
    }
    ad_buf_puts(b, "    }\n");
    return ADDSL_OK;
}

/* ---- repeat_interleave ---- */

/* How many times position i of a dim of 'size' is repeated: 'one', or from
 * the constant 'reps' (a tensor or a list), as builtins/bi_shape.c reads them. */
static int64_t reps_at(const ad_tensor *t, ad_value list, int64_t one, int64_t i) {
    if (t) return (int64_t)ad_export_elem(t, t->numel == 1 ? 0 : i);
    if (ad_is_seq(list)) {
        int64_t n = list.u.l->len;
        return (int64_t)list.u.l->items[n == 1 ? 0 : i].u.n;
    }
    return one;
}

/* repeat_interleave(self, repeats, dim=none): an index_select of self along
 * dim (of the flattened self without dim) at the positions a table written
 * at export time lists; the output's shape comes from the repeats' values,
 * so a repeats tensor computed or passed at run time is an error. */
static int lower_repeat_interleave(ad_xctx *ctx, const ad_xrec *r) {
    int self = ad_xl_pref(r, 0), o = r->n->out.ref;
    if (self < 0 || o < 0 || r->np < 2 || !r->p[1].a) return ad_xl_fail(ctx, "needs a tensor self and repeats");
    const ad_tensor *rt = ad_xl_known(ctx, r->p[1].a);
    ad_value rl = ad_xl_pconst(r, 1);
    double one = 0;
    if (r->p[1].a->ref >= 0 && !rt)
        return ad_xl_fail(ctx, "has an output whose shape depends on the repeats' values, which an exported function cannot have (pass repeats as a number, or a tensor known at export time)");
    if (!rt && !ad_is_seq(rl) && !ad_xl_pnum(r, 1, &one)) return ad_xl_fail(ctx, "needs int repeats");
    const ad_xval *x = &ctx->v[self], *y = &ctx->v[o];
    bool flat = ad_xl_pconst(r, 2).t == AD_TNONE && !(r->np > 2 && r->p[2].a && r->p[2].a->ref >= 0);
    int d = 0, nd;
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS];
    ad_xl_dims1(x, &nd, sh, st);
    if (!flat) {
        int rc = ad_xl_dim_of(ctx, r, 2, nd, &d);
        if (rc) return rc;
    }
    int64_t size = flat ? x->numel : sh[d], total = 0;
    for (int64_t i = 0; i < size; i++) total += reps_at(rt, rl, (int64_t)one, i);
    int64_t ynd = flat ? 1 : nd, ysh[AD_MAX_DIMS];
    for (int j = 0; j < ynd; j++) ysh[j] = flat ? total : (j == d ? total : sh[j]);
    if (y->numel != total * (flat || !size ? 1 : x->numel / size)) return ad_xl_fail(ctx, "has a result shape the exporter does not derive");
    ad_xl_make_buf(ctx, o);
    ad_xl_comment(ctx, "the positions repeated, a table written at export time");
    char tab[64], in[32], on[32];
    if (!y->numel) {
        /* self may be a block no other statement names */
        ad_xl_read_name(ctx, self, in, sizeof in);
        ad_buf_printf(ctx->body, "    (void)%s;\n", in);
        return ad_xl_empty(ctx, o);
    }
    snprintf(tab, sizeof tab, "%s_ri%d", ctx->name, ctx->node);
    ad_buf *dcl = ctx->decls;
    /* one element repeated needs no positions */
    bool tab_used = !(flat && x->numel == 1);
    if (tab_used) ad_buf_printf(dcl, "static const int64_t %s[%lld] = {", tab, (long long)total);
    for (int64_t i = 0, at = 0; i < size && tab_used; i++)
        for (int64_t k = reps_at(rt, rl, (int64_t)one, i); k > 0; k--, at++)
            ad_buf_printf(dcl, "%s%lld", at == 0 ? "" : (at % 16 == 0 ? ",\n    " : ", "), (long long)i);
    if (tab_used) ad_buf_puts(dcl, "};\n");
    ad_xl_read_name(ctx, self, in, sizeof in);
    ad_export_vname(ctx, o, on, sizeof on);
    ad_buf *b = ctx->body;
    int64_t p = 1;
    for (int j = (int)ynd - 1; j > d; j--) p *= ysh[j];
    ad_buf_printf(b, "    for (long q = 0; q < %lld; q++) {\n", (long long)y->numel);
    if (!tab_used) {
        ad_buf_printf(b, "        %s[q] = %s[%lld", on, in, (long long)x->off);
    } else if (flat) {
        ad_buf_printf(b, "        long k = (long)%s[q];\n        %s[q] = %s[%lld", tab, on, in, (long long)x->off);
        ad_xl_offset_terms(b, "k", x->shape, x->ndim, x->st, -1);
    } else {
        ad_buf_printf(b, "        long k = (long)%s[q / %lld %% %lld];\n", tab, (long long)p, (long long)total);
        ad_buf_printf(b, "        %s[q] = %s[%lld + k*%lld", on, in, (long long)x->off, (long long)st[d]);
        ad_xl_offset_terms(b, "q", ysh, (int)ynd, st, d);
    }
    ad_buf_puts(b, "];\n    }\n");
    return ADDSL_OK;
}

int ad_export_lower_scatter(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->kind != AD_TN_OP && r->n->kind != AD_TN_BUILTIN) return AD_XL_PASS;
    int id = r->n->op;
    if (id == AD_OP_scatter_reduce) return lower_scatter_reduce(ctx, r);
    if (id == AD_OP_repeat_interleave || id == AD_OP_ad_repeat_interleave) return lower_repeat_interleave(ctx, r);
    return AD_XL_PASS;
}

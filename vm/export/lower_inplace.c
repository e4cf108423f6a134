/* export/lower_inplace.c: export_c's lowering of the ops of in-place updates
 * (fill, inplace_fill, inplace_copy and the _inplace_write record that
 * compile()'s tracer puts after them), the strided views and scatters
 * (as_strided, as_strided_scatter), and logcumsumexp with its VJP. */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* "long NAME = OFF + unravel(IDX over shape) . st;" for a value's geometry
 * (st 0 on broadcast dims), one statement per dim so the C reads plainly. */
static void emit_at(ad_buf *b, const char *ind, const char *name, const char *idx, int nd, const int64_t *shape,
                    const int64_t *st, int64_t off) {
    ad_buf_printf(b, "%slong %s = %lld;\n", ind, name, (long long)off);
    ad_buf_printf(b, "%s{ long q = %s;", ind, idx);
    for (int d = nd - 1; d >= 0; d--) {
        if (st[d]) ad_buf_printf(b, " %s += (q %% %lld) * %lld;", name, (long long)shape[d], (long long)st[d]);
        if (d) ad_buf_printf(b, " q /= %lld;", (long long)shape[d]);
    }
    ad_buf_puts(b, " (void)q; }\n");
}

/* Strides of value x read broadcast against an nd-dim shape (numpy alignment). */
static void bcast_st(const ad_xval *x, int nd, const int64_t *shape, int64_t *st) {
    for (int d = 0; d < nd; d++) st[d] = 0;
    for (int d = 0; d < x->ndim; d++) {
        int k = nd - x->ndim + d;
        if (k >= 0 && x->shape[d] != 1 && x->shape[d] == shape[k]) st[k] = x->st[d];
    }
}

/* "(void)NAME;" for an operand an empty record does not read (constants are
 * written into the file only when read, so they need none). */
static void unread(ad_xctx *ctx, int id, const char *name) {
    if (ctx->v[ctx->v[id].base].kind != AD_XV_CONST) ad_buf_printf(ctx->body, "    (void)%s;\n", name);
}

/* fill(self, value), inplace_fill(self, value): value (a number, or a 0-d
 * tensor) in self's dtype at every element; inplace_copy(self, src): src
 * broadcast to self's shape and converted to its dtype. self is not read. */
static int lower_fill_copy(ad_xctx *ctx, const ad_xrec *r, int id) {
    int o = r->n->out.ref, v = ad_xl_pref(r, 1);
    if (o < 0) return ad_xl_fail(ctx, "has no tensor output");
    double x;
    if (v < 0 && !ad_xl_pnum(r, 1, &x)) return ad_xl_fail(ctx, "needs a number or a tensor value");
    if (v >= 0 && id != AD_OP_inplace_copy && ctx->v[v].ndim != 0) return ad_xl_fail(ctx, "needs a 0-d tensor value");
    ad_dtype dt = ctx->v[o].dt;
    /* a bool target keeps whether the value is nonzero, compared in the value's type */
    if (dt == AD_BOOL && (v < 0 || ctx->v[v].dt != AD_BOOL)) return ad_xl_emit_map(ctx, r, 2, "$1 != 0", v < 0 ? AD_FLOAT64 : ctx->v[v].dt);
    return ad_xl_emit_map(ctx, r, 2, "$1", dt);
}

/* as_strided(self, size, stride, storage_offset): the geometry counts in the
 * elements of self made contiguous (the interpreter's kernel does that first):
 * a view when self is laid out that way already, else a gather. */
static int lower_as_strided(ad_xctx *ctx, const ad_xrec *r) {
    int src = ad_xl_pref(r, 0), o = r->n->out.ref;
    if (src < 0 || o < 0) return ad_xl_fail(ctx, "has no tensor input or output");
    int64_t size[AD_MAX_DIMS], st[AD_MAX_DIMS], off = 0;
    int ns = 0, nt = 0;
    double so = 0;
    if (!ad_xl_pints(r, 1, size, &ns) || !ad_xl_pints(r, 2, st, &nt) || ns != nt || (ad_xl_pconst(r, 3).t != AD_TNONE && !ad_xl_pnum(r, 3, &so)))
        return ad_xl_fail(ctx, "needs int lists size and stride and an int storage_offset");
    off = (int64_t)so;
    const ad_xval *x = &ctx->v[src];
    int64_t cs = 1;
    bool contig = true;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (x->shape[d] != 1 && x->st[d] != cs) contig = false;
        cs *= x->shape[d];
    }
    if (contig) {
        ad_xval *y = &ctx->v[o];
        y->kind = AD_XV_VIEW; y->base = x->base; y->off = x->off + off; y->ndim = ns;
        for (int d = 0; d < ns; d++) { y->shape[d] = size[d]; y->st[d] = st[d]; }
        ad_xl_use(ctx, src);
        ad_xl_comment(ctx, "a view of the operand's elements in order (index arithmetic, no copy)");
        return ADDSL_OK;
    }
    char in[32], on[32];
    ad_xl_open1(ctx, src, o, in, on, "the elements at the geometry over the operand made contiguous (a gather)");
    ad_buf *b = ctx->body;
    const ad_xval *y = &ctx->v[o];
    if (!y->numel) { unread(ctx, src, in); ad_buf_printf(b, "    (void)%s; /* empty */\n", on); return ADDSL_OK; }
    ctx->v[x->base].read = true;
    ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) {\n", (long long)y->numel);
    emit_at(b, "        ", "k", "i", ns, size, st, off);
    emit_at(b, "        ", "at", "k", x->ndim, x->shape, x->st, x->off);
    ad_buf_printf(b, "        %s[i] = %s[at];\n    }\n", on, in);
    return ADDSL_OK;
}

/* as_strided_scatter(self, src, size, stride, storage_offset): self copied in
 * element order, then src (broadcast to size) written at the geometry's
 * positions in the order of its elements, so where positions overlap the
 * last write stays, as in the interpreter's copy. */
static int lower_as_strided_scatter(ad_xctx *ctx, const ad_xrec *r) {
    int self = ad_xl_pref(r, 0), src = ad_xl_pref(r, 1), o = r->n->out.ref;
    if (self < 0 || src < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor self and src");
    int64_t size[AD_MAX_DIMS], st[AD_MAX_DIMS], sst[AD_MAX_DIMS];
    int ns = 0, nt = 0;
    double so = 0;
    if (!ad_xl_pints(r, 2, size, &ns) || !ad_xl_pints(r, 3, st, &nt) || ns != nt || (ad_xl_pconst(r, 4).t != AD_TNONE && !ad_xl_pnum(r, 4, &so)))
        return ad_xl_fail(ctx, "needs int lists size and stride and an int storage_offset");
    const ad_xval *x = &ctx->v[self], *s = &ctx->v[src];
    bcast_st(s, ns, size, sst);
    int64_t cnt = 1;
    for (int d = 0; d < ns; d++) cnt *= size[d];
    ad_xl_make_buf(ctx, o);
    ad_xl_use(ctx, self);
    ad_xl_use(ctx, src);
    char xn[32], sn[32], on[32];
    ad_export_vname(ctx, self, xn, sizeof xn);
    ad_export_vname(ctx, src, sn, sizeof sn);
    ad_export_vname(ctx, o, on, sizeof on);
    ad_xl_comment(ctx, "self copied, then src written at the geometry's positions");
    ad_buf *b = ctx->body;
    const char *t = ad_export_ctype(ctx->v[o].dt);
    if (x->numel) {
        ctx->v[x->base].read = true;
        ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) {\n", (long long)x->numel);
        emit_at(b, "        ", "at", "i", x->ndim, x->shape, x->st, x->off);
        ad_buf_printf(b, "        %s[i] = %s[at];\n    }\n", on, xn);
    } else unread(ctx, self, xn);
    if (cnt) {
        ctx->v[s->base].read = true;
        ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) {\n", (long long)cnt);
        emit_at(b, "        ", "k", "i", ns, size, st, (int64_t)so);
        emit_at(b, "        ", "at", "i", ns, size, sst, s->off);
        ad_buf_printf(b, "        %s[k] = (%s)%s[at];\n    }\n", on, t, sn);
    } else unread(ctx, src, sn);
    if (!x->numel) ad_buf_printf(b, "    (void)%s; /* empty */\n", on);
    return ADDSL_OK;
}

/* The rows of x along dim d as outer x inner rows of n elements: 'for i'
 * over them, with 'at' the row's first element of x (stride sd). */
static void open_rows(ad_buf *b, const ad_xval *x, int d, int64_t *n, int64_t *sd, int64_t *inner) {
    int64_t outer = 1, osh[AD_MAX_DIMS], ost[AD_MAX_DIMS];
    int k = 0;
    *inner = 1;
    for (int j = 0; j < x->ndim; j++) {
        if (j < d) outer *= x->shape[j];
        else if (j > d) *inner *= x->shape[j];
        if (j != d) { osh[k] = x->shape[j]; ost[k++] = x->st[j]; }
    }
    *n = x->ndim ? x->shape[d] : 1;
    *sd = x->ndim ? x->st[d] : 0;
    ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) {\n", (long long)(outer * *inner));
    emit_at(b, "        ", "at", "i", k, osh, ost, x->off);
}

/* A record's dim parameter i over value x: 0 for a 0-d x; -1 when invalid. */
static int row_dim(const ad_xrec *r, int i, const ad_xval *x) {
    int64_t dims[AD_MAX_DIMS];
    int nd = 0;
    if (!ad_xl_pints(r, i, dims, &nd) || nd != 1) return -1;
    if (!x->ndim) return 0;
    int d = (int)(dims[0] < 0 ? dims[0] + x->ndim : dims[0]);
    return d >= 0 && d < x->ndim ? d : -1;
}

/* logcumsumexp(self, dim): each row's running log(exp(acc) + exp(x)) in
 * double, as builtins/bi_index_ops.c's log_add_exp (NaN wins; equal
 * infinities stay). */
static int lower_logcumsumexp(ad_xctx *ctx, const ad_xrec *r) {
    int src = ad_xl_pref(r, 0), o = r->n->out.ref;
    if (src < 0 || o < 0) return ad_xl_fail(ctx, "has no tensor input or output");
    const ad_xval *x = &ctx->v[src];
    if (ctx->v[o].dt != AD_FLOAT32 && ctx->v[o].dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    int d = row_dim(r, 1, x);
    if (d < 0) return ad_xl_fail(ctx, "needs one int dim in range");
    char in[32], on[32];
    ad_xl_open1(ctx, src, o, in, on, "a running log-add-exp along the dim");
    ad_buf *b = ctx->body;
    if (!x->numel) { unread(ctx, src, in); ad_buf_printf(b, "    (void)%s; /* empty */\n", on); return ADDSL_OK; }
    ctx->v[x->base].read = true;
    int64_t n, sd, inner;
    open_rows(b, x, d, &n, &sd, &inner);
    ad_buf_printf(b, "        long w = (i / %lld) * %lld + i %% %lld;\n", (long long)inner, (long long)(n * inner), (long long)inner);
    ad_buf_puts(b, "        double acc = -HUGE_VAL;\n");
    ad_buf_printf(b, "        for (long k = 0; k < %lld; k++) {\n", (long long)n);
    ad_buf_printf(b, "            double v = %s[at + k*%lld], lo = acc < v ? acc : v, hi = acc < v ? v : acc;\n", in, (long long)sd);
    ad_buf_puts(b, "            if (v != v || acc != acc) acc = NAN;\n");
    ad_buf_puts(b, "            else if (!(lo == hi && (lo == HUGE_VAL || lo == -HUGE_VAL))) acc = hi + log1p(exp(lo - hi));\n");
    ad_buf_printf(b, "            %s[w + k*%lld] = (%s)acc;\n        }\n    }\n", on, (long long)inner, ad_export_ctype(ctx->v[o].dt));
    return ADDSL_OK;
}

/* _logcumsumexp_backward(g, self, r, dim): sum_{i >= j} g_i exp(x_j - r_i),
 * and _logcumsumexp_jvp(t, self, r, dim): sum_{j <= i} t_j exp(x_j - r_i),
 * along each row, term by term (every exponent is <= 0: r_i >= x_j), where
 * the library sums the positive and negative parts in logs; a -inf x_j
 * gives 0, as the library's finite stand-in for r does. O(n^2) per row: the
 * short rows of a controller. */
static int lower_logcumsumexp_backward(ad_xctx *ctx, const ad_xrec *r, bool bw) {
    int g = ad_xl_pref(r, 0), x = ad_xl_pref(r, 1), rr = ad_xl_pref(r, 2), o = r->n->out.ref;
    if (g < 0 || x < 0 || rr < 0 || o < 0) return ad_xl_fail(ctx, "needs tensors g, self and r");
    const ad_xval *X = &ctx->v[x], *G = &ctx->v[g], *R = &ctx->v[rr];
    if (ctx->v[o].dt != AD_FLOAT32 && ctx->v[o].dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    if (G->ndim != X->ndim || R->ndim != X->ndim || G->numel != X->numel || R->numel != X->numel)
        return ad_xl_fail(ctx, "needs g, self and r of one shape");
    int d = row_dim(r, 3, X);
    if (d < 0) return ad_xl_fail(ctx, "needs one int dim in range");
    ad_xl_make_buf(ctx, o);
    ad_xl_use(ctx, g);
    ad_xl_use(ctx, x);
    ad_xl_use(ctx, rr);
    char gn[32], xn[32], rn[32], on[32];
    ad_export_vname(ctx, g, gn, sizeof gn);
    ad_export_vname(ctx, x, xn, sizeof xn);
    ad_export_vname(ctx, rr, rn, sizeof rn);
    ad_export_vname(ctx, o, on, sizeof on);
    ad_xl_comment(ctx, bw ? "sum over i >= j of g_i exp(x_j - r_i) along the dim" : "sum over j <= i of t_j exp(x_j - r_i) along the dim");
    ad_buf *b = ctx->body;
    if (!X->numel) {
        unread(ctx, g, gn); unread(ctx, x, xn); unread(ctx, rr, rn);
        ad_buf_printf(b, "    (void)%s; /* empty */\n", on);
        return ADDSL_OK;
    }
    ctx->v[G->base].read = true;
    if (!X->ndim) {
        /* the library passes a 0-d g (t) through: its r is x */
        unread(ctx, x, xn); unread(ctx, rr, rn);
        ad_buf_printf(b, "    %s[0] = (%s)%s[%lld];\n", on, ad_export_ctype(ctx->v[o].dt), gn, (long long)G->off);
        return ADDSL_OK;
    }
    ctx->v[X->base].read = ctx->v[R->base].read = true;
    int64_t n, sd, inner;
    /* g and r walk x's rows with their own strides: the same row index */
    int64_t osh[AD_MAX_DIMS], gst[AD_MAX_DIMS], rst[AD_MAX_DIMS];
    int k = 0;
    for (int j = 0; j < X->ndim; j++)
        if (j != d) { osh[k] = X->shape[j]; gst[k] = G->st[j]; rst[k++] = R->st[j]; }
    open_rows(b, X, d, &n, &sd, &inner);
    emit_at(b, "        ", "ga", "i", k, osh, gst, G->off);
    emit_at(b, "        ", "ra", "i", k, osh, rst, R->off);
    long long gs = X->ndim ? (long long)G->st[d] : 0, rs = X->ndim ? (long long)R->st[d] : 0;
    ad_buf_printf(b, "        long w = (i / %lld) * %lld + i %% %lld;\n", (long long)inner, (long long)(n * inner), (long long)inner);
    ad_buf_printf(b, "        for (long j = 0; j < %lld; j++) {\n            double s = 0;\n", (long long)n);
    if (bw)
        ad_buf_printf(b, "            double xj = %s[at + j*%lld];\n"
                         "            if (xj != -HUGE_VAL) for (long q = j; q < %lld; q++) s += %s[ga + q*%lld] * exp(xj - %s[ra + q*%lld]);\n",
                      xn, (long long)sd, (long long)n, gn, gs, rn, rs);
    else
        ad_buf_printf(b, "            for (long q = 0; q <= j; q++) {\n"
                         "                double xq = %s[at + q*%lld];\n"
                         "                if (xq != -HUGE_VAL) s += %s[ga + q*%lld] * exp(xq - %s[ra + j*%lld]);\n            }\n",
                      xn, (long long)sd, gn, gs, rn, rs);
    ad_buf_printf(b, "            %s[w + j*%lld] = (%s)s;\n        }\n    }\n", on, (long long)inner, ad_export_ctype(ctx->v[o].dt));
    return ADDSL_OK;
}

/* The value ids whose records were made (directly or through views) from
 * t's storage by view records, not by clone(): eager reads the new elements
 * through them after the write. */
static bool viewed_after(ad_xctx *ctx, int t) {
    int nv = ctx->T->nvals, base = ctx->v[t].base;
    for (int j = 0; j < ctx->node; j++) {
        const ad_tnode *m = &ctx->T->nodes[j];
        int id = m->out.ref;
        if (id < 0 || id == t || id >= nv || ctx->v[id].kind != AD_XV_VIEW || ctx->v[id].base != base) continue;
        /* copies in the interpreter, aliases in C: a later write does not reach them there */
        if (m->op == AD_OP_clone || m->op == AD_OP_contiguous || m->op == AD_OP_detach) continue;
        for (int k = ctx->rd_start[id]; k < ctx->rd_start[id + 1]; k++)
            if (ctx->rd_node[k] > ctx->node) return true;
    }
    return false;
}

/* _inplace_write(t, r, name): the write of an in-place update that compile()
 * recorded as its out-of-place op r and this record. Later records read the
 * result, which is r itself (no copy); t keeps its elements, which is what a
 * clone() of t the tracer made before the write must read. A view of t read
 * after the write would see r in the interpreter, which this cannot give. */
int ad_export_lower_inplace_write(ad_xctx *ctx, const ad_xrec *r) {
    int t = ad_xl_pref(r, 0), v = ad_xl_pref(r, 1), o = r->n->out.ref;
    if (t < 0 || v < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor self and result");
    if (viewed_after(ctx, t)) {
        ad_value nm = ad_xl_pconst(r, 2);
        char why[256];
        snprintf(why, sizeof why, "(the write of %s) writes into a tensor that a view made before the write reads afterwards, "
                 "which the exporter does not follow (take the view after the write)", nm.t == AD_TSTR ? nm.u.s->data : "an in-place update");
        return ad_xl_fail(ctx, why);
    }
    const ad_xval *s = &ctx->v[v];
    ad_xval *y = &ctx->v[o];
    y->kind = AD_XV_VIEW; y->base = s->base; y->off = s->off; y->ndim = s->ndim;
    for (int d = 0; d < s->ndim; d++) { y->shape[d] = s->shape[d]; y->st[d] = s->st[d]; }
    ad_xl_use(ctx, v);
    char what[96];
    snprintf(what, sizeof what, "the updated tensor is %%%d (no copy)", v);
    ad_xl_comment(ctx, what);
    return ADDSL_OK;
}

int ad_export_lower_inplace(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->kind != AD_TN_OP || r->n->out.sub) return AD_XL_PASS;
    int id = r->n->op;
    if (id == AD_OP_fill || id == AD_OP_inplace_fill || id == AD_OP_inplace_copy) return lower_fill_copy(ctx, r, id);
    if (id == AD_OP_as_strided) return lower_as_strided(ctx, r);
    if (id == AD_OP_as_strided_scatter) return lower_as_strided_scatter(ctx, r);
    if (id == AD_OP_logcumsumexp) return lower_logcumsumexp(ctx, r);
    if (id == AD_OP__logcumsumexp_backward) return lower_logcumsumexp_backward(ctx, r, true);
    if (id == AD_OP__logcumsumexp_jvp) return lower_logcumsumexp_backward(ctx, r, false);
    return AD_XL_PASS;
}

/* export/lower_index.c: export_c's lowering of the ops that read or write at
 * positions held in int64 tensors: gather, scatter, scatter_add,
 * index_select, and t[idx] (index_get, index_add_at, index_put) with
 * tensor indices; roll, whose positions wrap around. An index is read at
 * run time, so a C function cannot fail on one out of range as the
 * interpreter does: it is clamped into range
 * (negative ones count from the end first), and no access leaves the arrays. */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* ---- index arithmetic in the generated text ---- */

/* "(q / P % S)": coordinate j of the row-major element q of 'shape'. */
static void coord(ad_buf *b, const char *q, const int64_t *shape, int nd, int j) {
    int64_t p = 1;
    for (int k = nd - 1; k > j; k--) p *= shape[k];
    ad_buf_printf(b, "(%s", q);
    if (p != 1) ad_buf_printf(b, " / %lld", (long long)p);
    if (j > 0) ad_buf_printf(b, " %% %lld", (long long)shape[j]);
    ad_buf_puts(b, ")");
}

/* " + (q / P % S)*st" over the dims of 'shape' whose stride is not 0
 * (skip: a dim left out, or -1). */
static void offset_terms(ad_buf *b, const char *q, const int64_t *shape, int nd, const int64_t *st, int skip) {
    for (int j = 0; j < nd; j++) {
        if (j == skip || !st[j] || shape[j] == 1) continue;
        ad_buf_puts(b, " + ");
        coord(b, q, shape, nd, j);
        ad_buf_printf(b, "*%lld", (long long)st[j]);
    }
}

/* Statements that read an index into 'var' and clamp it into [0, size). */
static void clamp_index(ad_buf *b, const char *ind, const char *var, int64_t size) {
    ad_buf_printf(b, "%s        if (%s < 0) %s += %lld;\n", ind, var, var, (long long)size);
    ad_buf_printf(b, "%s        if (%s < 0) %s = 0;\n%s        if (%s > %lld) %s = %lld;\n", ind, var, var, ind, var,
                  (long long)(size - 1), var, (long long)(size - 1));
}

/* An output with no elements: no statement names it. */
static int empty(ad_xctx *ctx, int o) {
    char on[32];
    ad_export_vname(ctx, o, on, sizeof on);
    ad_buf_printf(ctx->body, "    (void)%s; /* empty */\n", on);
    return ADDSL_OK;
}

static void mark_read(ad_xctx *ctx, int id) {
    ad_xl_use(ctx, id);
    ctx->v[ctx->v[id].base].read = true;
}

/* The C name of a value the statements being written read. */
static void read_name(ad_xctx *ctx, int id, char *out, size_t n) {
    ad_export_vname(ctx, id, out, n);
    mark_read(ctx, id);
}

/* A copy of 'src' into the contiguous 'out' (the start of scatter and index_put). */
static void copy_into(ad_xctx *ctx, int src, int o) {
    const ad_xval *x = &ctx->v[src], *y = &ctx->v[o];
    char in[32], on[32];
    ad_export_vname(ctx, src, in, sizeof in);
    ad_export_vname(ctx, o, on, sizeof on);
    if (!y->numel) return;
    mark_read(ctx, src);
    int64_t st[AD_MAX_DIMS], s = 1;
    bool flat = x->ndim == y->ndim;
    for (int j = y->ndim - 1; j >= 0; j--) {
        int k = j - (y->ndim - x->ndim);
        st[j] = k >= 0 && x->shape[k] != 1 ? x->st[k] : 0;
        if (k < 0 || x->shape[k] != y->shape[j] || (y->shape[j] != 1 && st[j] != s)) flat = false;
        s *= y->shape[j];
    }
    if (flat) {
        /* the same elements in the same order; in the block 'o' took over from
         * 'src' (share_self) they are already there */
        if (y->share == x->base && x->off == 0) ad_buf_printf(ctx->body, "    if (%s != %s)\n    ", on, in);
        ad_buf_printf(ctx->body, "    for (long q = 0; q < %lld; q++) %s[q] = (%s)%s[%lld + q];\n", (long long)y->numel, on,
                      ad_export_ctype(y->dt), in, (long long)x->off);
        return;
    }
    ad_buf_printf(ctx->body, "    for (long q = 0; q < %lld; q++) %s[q] = (%s)%s[%lld", (long long)y->numel, on,
                  ad_export_ctype(y->dt), in, (long long)x->off);
    offset_terms(ctx->body, "q", y->shape, y->ndim, st, -1);
    ad_buf_puts(ctx->body, "];\n");
}

/* Whether argument 'a' of a record reads the storage of value 'b'. */
static bool reads_base(const ad_xctx *ctx, const ad_targ *a, int b) {
    if (a->ref >= 0 && ctx->v[a->ref].base == b) return true;
    for (int i = 0; i < a->nsub; i++) if (reads_base(ctx, &a->sub[i], b)) return true;
    return false;
}

/* A copy of 'self' into 'o' followed by writes at indices (scatter,
 * index_put, index_add_at) may run in self's block when self dies there
 * (export/export_c.c's plan_work): self must be that block in o's own layout (the
 * copy is then a no-op) and no other argument may read the block. */
static void share_self(ad_xctx *ctx, const ad_xrec *r, int self, int o) {
    const ad_xval *s = &ctx->v[self], *y = &ctx->v[o];
    int b = s->base;
    const ad_xval *x = &ctx->v[b];
    if (x->kind != AD_XV_BUF || x->out >= 0 || x->scalar || y->out >= 0 || s->off != 0 || s->dt != y->dt ||
        x->numel != y->numel || s->ndim != y->ndim)
        return;
    int64_t st = 1;
    for (int j = y->ndim - 1; j >= 0; j--) {
        if (s->shape[j] != y->shape[j] || (y->shape[j] != 1 && s->st[j] != st)) return;
        st *= y->shape[j];
    }
    for (int k = 1; k < r->np; k++)
        if (r->p[k].a && reads_base(ctx, r->p[k].a, b)) return;
    ctx->v[o].share = b;
}

/* A tensor value or a number for the right-hand side ('val' < 0: 'lit'). */
static void rhs(ad_xctx *ctx, ad_buf *b, int val, double lit, ad_dtype dt, const char *q, const int64_t *shape, int nd,
                const int64_t *vst, int64_t voff) {
    if (val < 0) { ad_export_literal(b, dt, lit); return; }
    char vn[32];
    ad_export_vname(ctx, val, vn, sizeof vn);
    ad_buf_printf(b, "(%s)%s[%lld", ad_export_ctype(dt), vn, (long long)voff);
    offset_terms(b, q, shape, nd, vst, -1);
    ad_buf_puts(b, "]");
}

/* Strides of 'val' broadcast against 'shape' (numpy alignment). */
static void bcast_st(const ad_xval *v, const int64_t *shape, int nd, int64_t *st) {
    for (int j = 0; j < nd; j++) {
        int k = j - (nd - v->ndim);
        st[j] = k >= 0 && v->shape[k] != 1 ? v->st[k] : 0;
    }
    (void)shape;
}

/* ---- gather, scatter, scatter_add, index_select ---- */

/* A tensor seen with at least one dim (a 0-d one as [1]). */
static void dims1(const ad_xval *x, int *nd, int64_t *sh, int64_t *st) {
    *nd = x->ndim ? x->ndim : 1;
    for (int j = 0; j < *nd; j++) { sh[j] = x->ndim ? x->shape[j] : 1; st[j] = x->ndim ? x->st[j] : 0; }
}

static int dim_of(ad_xctx *ctx, const ad_xrec *r, int i, int nd, int *d) {
    double x;
    if (!ad_xl_pnum(r, i, &x)) return ad_xl_fail(ctx, "needs an int dim");
    *d = (int)((int64_t)x < 0 ? (int64_t)x + nd : (int64_t)x);
    if (*d < 0 || *d >= nd) return ad_xl_fail(ctx, "has a dim out of range");
    return ADDSL_OK;
}

/* gather(self, dim, index): out[q] = self[q's coords, with index[q] at dim];
 * index_select(self, dim, index): the same with index (1-D or 0-d) read at
 * q's coord along dim. q walks gather's index and index_select's output. */
static int lower_take(ad_xctx *ctx, const ad_xrec *r, bool select) {
    int src = ad_xl_pref(r, 0), ix = ad_xl_pref(r, 2), o = r->n->out.ref;
    if (src < 0 || ix < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor self and index");
    const ad_xval *x = &ctx->v[src], *I = &ctx->v[ix], *Q = select ? &ctx->v[o] : I;
    if (select && I->ndim > 1) return ad_xl_fail(ctx, "needs a 1-D index");
    int nd, qnd, d;
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS], qsh[AD_MAX_DIMS], qst[AD_MAX_DIMS];
    dims1(x, &nd, sh, st);
    dims1(Q, &qnd, qsh, qst);
    if (qnd != nd) return ad_xl_fail(ctx, select ? "has an output of unexpected rank" : "has an index of another rank than self");
    int rc = dim_of(ctx, r, 1, nd, &d);
    if (rc) return rc;
    ad_xl_make_buf(ctx, o);
    ad_xl_comment(ctx, "indices clamped into range");
    if (!Q->numel) return empty(ctx, o);
    char in[32], on[32], iname[32];
    read_name(ctx, src, in, sizeof in);
    read_name(ctx, ix, iname, sizeof iname);
    ad_export_vname(ctx, o, on, sizeof on);
    ad_buf *b = ctx->body;
    ad_buf_printf(b, "    for (long q = 0; q < %lld; q++) {\n        long k = (long)%s[%lld", (long long)Q->numel, iname,
                  (long long)I->off);
    if (!select) offset_terms(b, "q", qsh, qnd, qst, -1);
    else if (I->ndim == 1 && I->shape[0] != 1) {
        ad_buf_puts(b, " + ");
        coord(b, "q", qsh, qnd, d);
        ad_buf_printf(b, "*%lld", (long long)I->st[0]);
    }
    ad_buf_puts(b, "];\n");
    clamp_index(b, "", "k", sh[d]);
    ad_buf_printf(b, "        %s[q] = %s[%lld + k*%lld", on, in, (long long)x->off, (long long)st[d]);
    offset_terms(b, "q", qsh, qnd, st, d);
    ad_buf_puts(b, "];\n    }\n");
    return ADDSL_OK;
}

/* scatter(self, dim, index, src) and scatter_add: a copy of self, then src
 * (a tensor read at index's coords, or a number) stored or added at the
 * element index names along dim; later writes win, as in the library. */
static int lower_scatter(ad_xctx *ctx, const ad_xrec *r, bool add) {
    int self = ad_xl_pref(r, 0), ix = ad_xl_pref(r, 2), val = ad_xl_pref(r, 3), o = r->n->out.ref;
    double lit = 0;
    if (self < 0 || ix < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor self and index");
    if (val < 0 && !ad_xl_pnum(r, 3, &lit)) return ad_xl_fail(ctx, "has a src that is neither a tensor nor a number");
    const ad_xval *y = &ctx->v[o], *I = &ctx->v[ix];
    int nd, ind, d;
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS], ish[AD_MAX_DIMS], ist[AD_MAX_DIMS];
    ad_xl_make_buf(ctx, o);
    dims1(y, &nd, sh, st);
    dims1(I, &ind, ish, ist);
    if (ind != nd) return ad_xl_fail(ctx, "has an index of another rank than self");
    int rc = dim_of(ctx, r, 1, nd, &d);
    if (rc) return rc;
    ad_xl_comment(ctx, add ? "a copy, then src added at the indices (clamped into range)"
                           : "a copy, then src stored at the indices (clamped into range)");
    share_self(ctx, r, self, o);
    copy_into(ctx, self, o);
    if (!I->numel) return ctx->v[o].numel ? ADDSL_OK : empty(ctx, o);
    char on[32], iname[32];
    ad_export_vname(ctx, o, on, sizeof on);
    read_name(ctx, ix, iname, sizeof iname);
    int64_t vst[AD_MAX_DIMS] = {0}, voff = 0;
    if (val >= 0) {
        int vnd;
        int64_t vsh[AD_MAX_DIMS];
        dims1(&ctx->v[val], &vnd, vsh, vst);
        if (vnd != nd) return ad_xl_fail(ctx, "has a src of another rank than self");
        voff = ctx->v[val].off;
        mark_read(ctx, val);
    }
    ad_buf *b = ctx->body;
    ad_buf_printf(b, "    for (long q = 0; q < %lld; q++) {\n        long k = (long)%s[%lld", (long long)I->numel, iname,
                  (long long)I->off);
    offset_terms(b, "q", ish, ind, ist, -1);
    ad_buf_puts(b, "];\n");
    clamp_index(b, "", "k", sh[d]);
    ad_buf_printf(b, "        %s[k*%lld", on, (long long)st[d]);
    offset_terms(b, "q", ish, ind, st, d);
    ad_buf_printf(b, "] %s ", add ? "+=" : "=");
    rhs(ctx, b, val, lit, y->dt, "q", ish, ind, vst, voff);
    ad_buf_puts(b, ";\n    }\n");
    return ADDSL_OK;
}

/* roll(self, shifts, dims): out[c] = self[(c - shift) mod n] along each
 * rolled dim; without dims, over the elements in row-major order. */
static int lower_roll(ad_xctx *ctx, const ad_xrec *r) {
    int src = ad_xl_pref(r, 0), o = r->n->out.ref;
    int64_t sh[AD_MAX_DIMS], dims[AD_MAX_DIMS];
    int ns = 0, nd = 0;
    if (src < 0 || o < 0 || !ad_xl_pints(r, 1, sh, &ns)) return ad_xl_fail(ctx, "needs a tensor and int shifts");
    bool flat = ad_xl_pconst(r, 2).t == AD_TNONE;
    if (!flat && (!ad_xl_pints(r, 2, dims, &nd) || nd != ns)) return ad_xl_fail(ctx, "needs as many dims as shifts");
    if (flat && ns != 1) return ad_xl_fail(ctx, "needs one shift without dims");
    const ad_xval *x = &ctx->v[src], *y = &ctx->v[o];
    int64_t shift[AD_MAX_DIMS] = {0};
    for (int i = 0; i < nd && x->ndim; i++) {
        int d = (int)(dims[i] < 0 ? dims[i] + x->ndim : dims[i]);
        if (d < 0 || d >= x->ndim) return ad_xl_fail(ctx, "has a dim out of range");
        shift[d] += sh[i];
    }
    ad_xl_make_buf(ctx, o);
    ad_xl_comment(ctx, NULL);
    if (!y->numel) return empty(ctx, o);
    char in[32], on[32];
    read_name(ctx, src, in, sizeof in);
    ad_export_vname(ctx, o, on, sizeof on);
    ad_buf *b = ctx->body;
    if (flat && x->numel > 1) {
        int64_t n = x->numel, s0 = ((sh[0] % n) + n) % n;
        ad_buf_printf(b, "    for (long q = 0; q < %lld; q++) {\n        long p = (q + %lld) %% %lld;\n", (long long)n,
                      (long long)(n - s0), (long long)n);
        ad_buf_printf(b, "        %s[q] = %s[%lld", on, in, (long long)x->off);
        offset_terms(b, "p", x->shape, x->ndim, x->st, -1);
        ad_buf_puts(b, "];\n    }\n");
        return ADDSL_OK;
    }
    ad_buf_printf(b, "    for (long q = 0; q < %lld; q++)\n        %s[q] = %s[%lld", (long long)y->numel, on, in, (long long)x->off);
    for (int j = 0; j < x->ndim; j++) {
        int64_t n = x->shape[j], s0 = n ? ((shift[j] % n) + n) % n : 0;
        if (n == 1 || !x->st[j]) continue;
        ad_buf_puts(b, " + ");
        if (s0) ad_buf_puts(b, "((");
        coord(b, "q", x->shape, x->ndim, j);
        if (s0) ad_buf_printf(b, " + %lld) %% %lld)", (long long)(n - s0), (long long)n);
        ad_buf_printf(b, "*%lld", (long long)x->st[j]);
    }
    ad_buf_puts(b, "];\n");
    return ADDSL_OK;
}

/* ---- t[idx] with tensor indices (PyTorch's rules, builtins/bi_index.c) ---- */

typedef struct xadv {
    int pos;                    /* the view dim it indexes */
    int ref;                    /* an int64 value read at run time, or -1: 'table' */
    char table[48];             /* a static const int64_t table (a constant index or a mask's coordinates) */
    int nd;
    int64_t shape[AD_MAX_DIMS], st[AD_MAX_DIMS], off;
} xadv;

/* The geometry t[idx] reads over a tensor 'x': after the basic indices a
 * view (vsh, vst, voff), the advanced indices on some of its dims, and
 * 0-d int tensors that select a dim at run time. */
typedef struct xix {
    int vnd;
    int64_t vsh[AD_MAX_DIMS], vst[AD_MAX_DIMS], voff;
    int nadv;
    xadv a[AD_MAX_DIMS];
    int nsel;
    int sel[AD_MAX_DIMS];
    int64_t selst[AD_MAX_DIMS], selsize[AD_MAX_DIMS];
    int nb;                     /* broadcast shape of the advanced indices */
    int64_t bshape[AD_MAX_DIMS];
    int at;                     /* where the index dims sit in the result */
    int rnd;                    /* the result */
    int64_t rshape[AD_MAX_DIMS];
    bool tensors;               /* some index is a tensor (else: basic indexing) */
} xix;

/* The tensor an index item holds at export time: an inline constant, or a
 * value the trace folded or read from outside f. */
static const ad_tensor *known_tensor(const ad_xctx *ctx, const ad_targ *a) {
    if (a->ref < 0) return a->c.t == AD_TTENSOR ? a->c.u.tensor : NULL;
    if (ctx->v[a->ref].kind != AD_XV_CONST) return NULL;
    ad_value v = ctx->T->vals[a->ref].v;
    return v.t == AD_TTENSOR ? v.u.tensor : NULL;
}

/* A file-scope table of int64 values for an index known at export time. */
static void emit_table(ad_xctx *ctx, xadv *A, int k, const int64_t *vals, int64_t n) {
    snprintf(A->table, sizeof A->table, "%s_x%d_%d", ctx->name, ctx->node, k);
    ad_buf *d = ctx->decls;
    ad_buf_printf(d, "static const int64_t %s[%lld] = {", A->table, (long long)(n ? n : 1));
    if (!n) ad_buf_puts(d, "0");
    for (int64_t i = 0; i < n; i++) {
        ad_buf_puts(d, i == 0 ? "" : (i % 12 == 0 ? ",\n    " : ", "));
        ad_export_literal(d, AD_INT64, (double)vals[i]);
    }
    ad_buf_puts(d, "};\n");
    A->ref = -1;
    A->nd = 1;
    A->shape[0] = n;
    A->st[0] = 1;
    A->off = 0;
}

static int add_adv(ad_xctx *ctx, xix *p, int pos) {
    if (p->nadv == AD_MAX_DIMS) return ad_xl_fail(ctx, "has too many tensor indices");
    memset(&p->a[p->nadv], 0, sizeof p->a[0]);
    p->a[p->nadv].pos = pos;
    p->nadv++;
    return ADDSL_OK;
}

/* A bool mask known at export time over view dims [pos, pos + ndim): its
 * nonzero coordinates, one table per dim. */
static int known_mask(ad_xctx *ctx, xix *p, const ad_tensor *m, int *pos, int slot) {
    int64_t n = 0;
    for (int64_t i = 0; i < m->numel; i++) n += ad_tensor_get_flat(m, i) != 0.0;
    int64_t *col = ad_malloc(ctx->S, (size_t)(n ? n : 1) * sizeof *col);
    if (!col) return ADDSL_ENOMEM;
    int rc = ADDSL_OK;
    for (int k = 0; k < m->ndim && !rc; k++) {
        if (*pos + k >= p->vnd || m->shape[k] != p->vsh[*pos + k]) { rc = ad_xl_fail(ctx, "has a mask of another shape than the tensor"); break; }
        int64_t at = 0, div = 1;
        for (int j = m->ndim - 1; j > k; j--) div *= m->shape[j];
        for (int64_t i = 0; i < m->numel; i++)
            if (ad_tensor_get_flat(m, i) != 0.0) col[at++] = i / div % m->shape[k];
        if (!(rc = add_adv(ctx, p, *pos + k))) emit_table(ctx, &p->a[p->nadv - 1], slot * AD_MAX_DIMS + k, col, n);
    }
    ad_free(ctx->S, col);
    *pos += m->ndim;
    return rc;
}

/* One tensor item at view dim '*pos'. */
static int tensor_item(ad_xctx *ctx, xix *p, const ad_targ *a, int *pos, int slot) {
    const ad_tensor *kt = known_tensor(ctx, a);
    ad_dtype dt = a->ref >= 0 ? ctx->v[a->ref].dt : kt->dtype;
    p->tensors = true;
    if (dt == AD_BOOL) {
        if (!kt)
            return ad_xl_fail(ctx, "with a bool mask computed at run time has a data-dependent shape, which an exported "
                                   "function cannot have (a mask known at export time is fine)");
        return known_mask(ctx, p, kt, pos, slot);
    }
    if (dt != AD_INT64) return ad_xl_fail(ctx, "needs int64 or bool index tensors");
    if (*pos >= p->vnd) return ad_xl_fail(ctx, "has too many indices");
    int nd = a->ref >= 0 ? ctx->v[a->ref].ndim : kt->ndim;
    if (nd == 0 && a->ref >= 0) {
        /* a 0-d int tensor selects, as an int does (bi_index.c's do_int) */
        p->sel[p->nsel] = a->ref;
        p->selst[p->nsel] = p->vst[*pos];
        p->selsize[p->nsel++] = p->vsh[*pos];
        for (int j = *pos; j + 1 < p->vnd; j++) { p->vsh[j] = p->vsh[j + 1]; p->vst[j] = p->vst[j + 1]; }
        p->vnd--;
        return ADDSL_OK;
    }
    int rc = add_adv(ctx, p, (*pos)++);
    if (rc) return rc;
    xadv *A = &p->a[p->nadv - 1];
    if (a->ref >= 0) {
        const ad_xval *v = &ctx->v[a->ref];
        A->ref = a->ref; A->nd = v->ndim; A->off = v->off;
        for (int j = 0; j < v->ndim; j++) { A->shape[j] = v->shape[j]; A->st[j] = v->st[j]; }
        return ADDSL_OK;
    }
    int64_t *vals = ad_malloc(ctx->S, (size_t)(kt->numel ? kt->numel : 1) * sizeof *vals);
    if (!vals) return ADDSL_ENOMEM;
    for (int64_t i = 0; i < kt->numel; i++) vals[i] = (int64_t)ad_tensor_get_flat(kt, i);
    emit_table(ctx, A, slot, vals, kt->numel);
    ad_free(ctx->S, vals);
    A->nd = kt->ndim;
    int64_t s = 1;
    for (int j = kt->ndim - 1; j >= 0; j--) { A->shape[j] = kt->shape[j]; A->st[j] = s; s *= kt->shape[j]; }
    return ADDSL_OK;
}

/* Dims of the indexed tensor that item 'a' consumes (bi_index.c's consumed()). */
static int consumes(const ad_xctx *ctx, const ad_targ *a) {
    if (a->ref >= 0) return ctx->v[a->ref].dt == AD_BOOL ? ctx->v[a->ref].ndim : 1;
    ad_value v = a->c;
    if (v.t == AD_TNONE || v.t == AD_TELLIPSIS || v.t == AD_TBOOL) return 0;
    if (v.t == AD_TTENSOR) return v.u.tensor->dtype == AD_BOOL ? v.u.tensor->ndim : 1;
    return 1;
}

/* One constant item: an int, a slice, none or '...'. */
static int basic_item(ad_xctx *ctx, xix *p, ad_value it, int *pos, int span) {
    if (it.t == AD_TNONE) {
        if (p->vnd == AD_MAX_DIMS) return ad_xl_fail(ctx, "has too many dims");
        for (int j = p->vnd; j > *pos; j--) { p->vsh[j] = p->vsh[j - 1]; p->vst[j] = p->vst[j - 1]; }
        p->vsh[*pos] = 1; p->vst[*pos] = 0;
        p->vnd++;
        for (int j = 0; j < p->nadv; j++) if (p->a[j].pos >= *pos) p->a[j].pos++;
        (*pos)++;
        return ADDSL_OK;
    }
    if (it.t == AD_TELLIPSIS) { *pos += span; return ADDSL_OK; }
    if (*pos >= p->vnd) return ad_xl_fail(ctx, "has too many indices");
    if (ad_is_number(it)) {
        int64_t v = (int64_t)it.u.n, n = p->vsh[*pos];
        if (v < 0) v += n;
        p->voff += v * p->vst[*pos];
        for (int j = *pos; j + 1 < p->vnd; j++) { p->vsh[j] = p->vsh[j + 1]; p->vst[j] = p->vst[j + 1]; }
        p->vnd--;
        return ADDSL_OK;
    }
    if (it.t != AD_TSLICE) return ad_xl_fail(ctx, "has an index kind that is not lowered");
    const ad_slice *sl = (const ad_slice *)it.u.o;
    int64_t n = p->vsh[*pos];
    int64_t step = sl->step.t == AD_TNONE ? 1 : (int64_t)sl->step.u.n;
    if (step <= 0) return ad_xl_fail(ctx, "has a slice step that is not positive");
    int64_t a;
    p->vsh[*pos] = ad_slice_span(n, sl->start.t == AD_TNONE ? 0 : (int64_t)sl->start.u.n,
                                 sl->stop.t == AD_TNONE ? n : (int64_t)sl->stop.u.n, step, &a);
    p->voff += a * p->vst[*pos];
    p->vst[*pos] *= step;
    (*pos)++;
    return ADDSL_OK;
}

/* The index of record argument 'ix' applied to a tensor of geometry 'x'. */
static int plan_index(ad_xctx *ctx, const ad_xval *x, const ad_targ *ix, xix *p) {
    memset(p, 0, sizeof *p);
    p->vnd = x->ndim;
    p->voff = x->off;
    for (int j = 0; j < x->ndim; j++) { p->vsh[j] = x->shape[j]; p->vst[j] = x->st[j]; }
    const ad_targ *items = ix;
    int n = 1;
    ad_targ cl[AD_XMAX_PARAMS];
    if (ix->sub) { items = ix->sub; n = ix->nsub; }
    else if (ix->ref < 0 && ad_is_seq(ix->c)) {
        /* a constant list of items */
        n = (int)ix->c.u.l->len;
        if (n > AD_XMAX_PARAMS) return ad_xl_fail(ctx, "has too many indices");
        memset(cl, 0, sizeof cl);
        for (int i = 0; i < n; i++) { cl[i].c = ix->c.u.l->items[i]; cl[i].ref = -1; }
        items = cl;
    }
    int used = 0;
    for (int i = 0; i < n; i++) {
        if (items[i].sub) return ad_xl_fail(ctx, "has a nested list index that is not lowered");
        if (items[i].ref < 0 && ad_is_seq(items[i].c)) return ad_xl_fail(ctx, "has a list index that is not lowered");
        used += consumes(ctx, &items[i]);
    }
    int pos = 0, span = x->ndim - used;
    for (int i = 0; i < n; i++) {
        int rc;
        const ad_targ *a = &items[i];
        if (a->ref >= 0 || a->c.t == AD_TTENSOR) rc = tensor_item(ctx, p, a, &pos, i);
        else if (a->c.t == AD_TBOOL) rc = ad_xl_fail(ctx, "with a bool index is not lowered");
        else rc = basic_item(ctx, p, a->c, &pos, span);
        if (a->ref < 0 && a->c.t == AD_TELLIPSIS) span = 0;
        if (rc) return rc;
    }
    /* broadcast the advanced indices; their dims land at the first one's
     * place when they are adjacent, else first */
    bool adjacent = true;
    for (int j = 0; j < p->nadv; j++) {
        const xadv *A = &p->a[j];
        int nb = A->nd > p->nb ? A->nd : p->nb;
        int64_t out[AD_MAX_DIMS];
        for (int k = 0; k < nb; k++) {
            int ka = k - (nb - A->nd), kb = k - (nb - p->nb);
            int64_t sa = ka >= 0 ? A->shape[ka] : 1, sb = kb >= 0 ? p->bshape[kb] : 1;
            if (sa != sb && sa != 1 && sb != 1) return ad_xl_fail(ctx, "has index tensors that do not broadcast");
            out[k] = sa == 1 ? sb : sa;
        }
        p->nb = nb;
        memcpy(p->bshape, out, sizeof out);
        if (j && A->pos != p->a[j - 1].pos + 1) adjacent = false;
    }
    p->at = adjacent && p->nadv ? p->a[0].pos : 0;
    int nrest = p->vnd - p->nadv;
    if (p->nb + nrest > AD_MAX_DIMS) return ad_xl_fail(ctx, "has a result of too many dims");
    p->rnd = p->nb + nrest;
    bool indexed[AD_MAX_DIMS] = {false};
    for (int j = 0; j < p->nadv; j++) indexed[p->a[j].pos] = true;
    for (int i = 0, r = 0, b = 0; i < p->rnd; i++) {
        if (i >= p->at && i < p->at + p->nb) { p->rshape[i] = p->bshape[b++]; continue; }
        while (indexed[r]) r++;
        p->rshape[i] = p->vsh[r++];
    }
    return ADDSL_OK;
}

/* Statements for element q of the result: 'src' (its offset in the indexed
 * tensor's storage), each index read and clamped first. */
static void emit_src_offset(ad_xctx *ctx, const xix *p, ad_buf *b) {
    bool indexed[AD_MAX_DIMS] = {false};
    for (int j = 0; j < p->nadv; j++) indexed[p->a[j].pos] = true;
    for (int s = 0; s < p->nsel; s++) {
        char nm[32];
        read_name(ctx, p->sel[s], nm, sizeof nm);
        ad_buf_printf(b, "        long s%d = (long)%s[%lld];\n", s, nm, (long long)ctx->v[p->sel[s]].off);
        char var[16];
        snprintf(var, sizeof var, "s%d", s);
        clamp_index(b, "", var, p->selsize[s]);
    }
    for (int j = 0; j < p->nadv; j++) {
        const xadv *A = &p->a[j];
        char nm[48];
        if (A->ref >= 0) read_name(ctx, A->ref, nm, sizeof nm);
        else snprintf(nm, sizeof nm, "%s", A->table);
        /* the index's coords are the result's index dims, aligned on the right */
        int64_t st[AD_MAX_DIMS] = {0};
        for (int k = 0; k < A->nd; k++)
            if (A->shape[k] != 1) st[p->at + p->nb - A->nd + k] = A->st[k];
        ad_buf_printf(b, "        long k%d = (long)%s[%lld", j, nm, (long long)A->off);
        offset_terms(b, "q", p->rshape, p->rnd, st, -1);
        ad_buf_puts(b, "];\n");
        char var[16];
        snprintf(var, sizeof var, "k%d", j);
        clamp_index(b, "", var, p->vsh[A->pos]);
    }
    int64_t st[AD_MAX_DIMS] = {0};
    for (int i = 0, r = 0; i < p->rnd; i++) {
        if (i >= p->at && i < p->at + p->nb) continue;
        while (indexed[r]) r++;
        st[i] = p->vst[r++];
    }
    ad_buf_printf(b, "        long src = %lld", (long long)p->voff);
    for (int s = 0; s < p->nsel; s++) ad_buf_printf(b, " + s%d*%lld", s, (long long)p->selst[s]);
    for (int j = 0; j < p->nadv; j++) ad_buf_printf(b, " + k%d*%lld", j, (long long)p->vst[p->a[j].pos]);
    offset_terms(b, "q", p->rshape, p->rnd, st, -1);
    ad_buf_puts(b, ";\n");
}

static int64_t numel_of(const int64_t *sh, int nd) {
    int64_t n = 1;
    for (int j = 0; j < nd; j++) n *= sh[j];
    return n;
}

/* index_get(self, idx): the elements the index names, in the result's order. */
static int lower_index_get(ad_xctx *ctx, const ad_xrec *r, const xix *p, int src) {
    int o = r->n->out.ref;
    if (o < 0) return ad_xl_fail(ctx, "has no tensor output");
    const ad_xval *y = &ctx->v[o];
    if (y->ndim != p->rnd || numel_of(p->rshape, p->rnd) != y->numel) return ad_xl_fail(ctx, "has a result shape the exporter does not derive");
    ad_xl_make_buf(ctx, o);
    ad_xl_comment(ctx, "advanced indexing, indices clamped into range");
    if (!y->numel) return empty(ctx, o);
    char in[32], on[32];
    read_name(ctx, src, in, sizeof in);
    ad_export_vname(ctx, o, on, sizeof on);
    ad_buf *b = ctx->body;
    ad_buf_printf(b, "    for (long q = 0; q < %lld; q++) {\n", (long long)y->numel);
    emit_src_offset(ctx, p, b);
    ad_buf_printf(b, "        %s[q] = %s[src];\n    }\n", on, in);
    return ADDSL_OK;
}

/* index_add_at(self, idx, value) and index_put(self, idx, value,
 * accumulate): a copy of self, then value (broadcast to the indexed shape)
 * added or stored at each element the index names; repeats add up (or the
 * last one wins), as in the library. */
static int lower_index_write(ad_xctx *ctx, const ad_xrec *r, bool add) {
    int self = ad_xl_pref(r, 0), val = ad_xl_pref(r, 2), o = r->n->out.ref;
    double lit = 0;
    if (self < 0 || o < 0 || r->np < 3 || !r->p[1].a) return ad_xl_fail(ctx, "needs a tensor self and an index");
    if (val < 0 && !ad_xl_pnum(r, 2, &lit)) return ad_xl_fail(ctx, "has a value that is neither a tensor nor a number");
    ad_xl_make_buf(ctx, o);
    const ad_xval *y = &ctx->v[o];
    xix p;
    int rc = plan_index(ctx, y, r->p[1].a, &p);
    if (rc) return rc;
    ad_xl_comment(ctx, add ? "a copy, then the value added at the index (indices clamped into range)"
                           : "a copy, then the value stored at the index (indices clamped into range)");
    share_self(ctx, r, self, o);
    copy_into(ctx, self, o);
    int64_t n = numel_of(p.rshape, p.rnd);
    if (!n) return y->numel ? ADDSL_OK : empty(ctx, o);
    int64_t vst[AD_MAX_DIMS] = {0}, voff = 0;
    if (val >= 0) {
        const ad_xval *v = &ctx->v[val];
        if (v->ndim > p.rnd) return ad_xl_fail(ctx, "has a value of more dims than the indexed shape");
        bcast_st(v, p.rshape, p.rnd, vst);
        voff = v->off;
        mark_read(ctx, val);
    }
    char on[32];
    ad_export_vname(ctx, o, on, sizeof on);
    ad_buf *b = ctx->body;
    ad_buf_printf(b, "    for (long q = 0; q < %lld; q++) {\n", (long long)n);
    emit_src_offset(ctx, &p, b);
    ad_buf_printf(b, "        %s[src] %s ", on, add ? "+=" : "=");
    rhs(ctx, b, val, lit, y->dt, "q", p.rshape, p.rnd, vst, voff);
    ad_buf_puts(b, ";\n    }\n");
    return ADDSL_OK;
}

/* ---- a gradient's slice added to a running sum ---- */

static bool same_geometry(const ad_xval *a, const ad_xval *b) {
    if (a->dt != b->dt || a->ndim != b->ndim) return false;
    for (int j = 0; j < a->ndim; j++) if (a->shape[j] != b->shape[j]) return false;
    return true;
}

/* The VJP of t[idx] is index_add_at(zeros, idx, g), which autograd adds to
 * the gradient summed so far: when record 'node' is such an index_add_at (self
 * a constant of zeros) whose value only one add(a, it) reads (alpha 1; a, the
 * value and the sum of one shape and dtype), that add's record number, else -1.
 * The index_add_at then writes nothing and the add is written as
 * index_add_at(a, idx, g): no block of zeros, no sum over all elements, and
 * with a dying there (export/export_c.c's plan_work) no block of its own either. */
static bool into_zeros(ad_xctx *ctx, int node, ad_xrec *m) {
    const ad_tnode *n = &ctx->T->nodes[node];
    if (n->kind != AD_TN_OP || n->dead || n->folded || n->op != AD_OP_index_add_at || n->out.ref < 0) return false;
    double z = 1;
    if (ad_xl_bind(ctx, n, m)) { ad_clear_error(ctx->S); return false; }
    int self = ad_xl_pref(m, 0), val = ad_xl_pref(m, 2);
    if (self < 0 || ctx->v[ctx->v[self].base].kind != AD_XV_CONST || !ad_export_splat(ctx, self, &z) || z != 0) return false;
    return val < 0 || ctx->v[val].dt == ctx->v[n->out.ref].dt;
}

static int accum_into(ad_xctx *ctx, int node) {
    ad_xrec m;
    if (!into_zeros(ctx, node, &m)) return -1;
    int b = ctx->T->nodes[node].out.ref;
    for (int k = 0; k < ctx->nouts; k++) if (ctx->outs[k] == b) return -1;
    int rd = -1;
    for (int p = ctx->rd_start[b]; p < ctx->rd_start[b + 1]; p++) {
        if (rd >= 0 && ctx->rd_node[p] != rd) return -1;
        rd = ctx->rd_node[p];
    }
    if (rd <= node) return -1;
    const ad_tnode *s = &ctx->T->nodes[rd];
    if (s->kind != AD_TN_OP || s->op != AD_OP_add || s->out.ref < 0) return -1;
    ad_xrec ar;
    double alpha = 1;
    if (ad_xl_bind(ctx, s, &ar)) { ad_clear_error(ctx->S); return -1; }
    int x0 = ad_xl_pref(&ar, 0), x1 = ad_xl_pref(&ar, 1), a = x0 == b ? x1 : x0;
    if ((x0 != b && x1 != b) || a < 0 || a == b || (ad_xl_pconst(&ar, 2).t != AD_TNONE && (!ad_xl_pnum(&ar, 2, &alpha) || alpha != 1)))
        return -1;
    if (!same_geometry(&ctx->v[a], &ctx->v[b]) || !same_geometry(&ctx->v[s->out.ref], &ctx->v[b])) return -1;
    /* the sum of two such records: the later one is written by the add, over the earlier */
    int na = ctx->T->vals[a].node;
    if (na > node && into_zeros(ctx, na, &m)) return -1;
    return rd;
}

/* The add of accum_into: index_add_at(a, idx, g) with the deferred record's idx and g. */
static int lower_accum_add(ad_xctx *ctx, const ad_xrec *r, int node) {
    ad_xrec m;
    int rc = ad_xl_bind(ctx, &ctx->T->nodes[node], &m);
    if (rc) return rc;
    int b = ctx->T->nodes[node].out.ref;
    m.n = r->n;
    m.p[0].a = ad_xl_pref(r, 0) == b ? r->p[1].a : r->p[0].a;
    ad_buf_printf(ctx->body, "    /* %%%d + %%%d, the index_add_at into zeros above, as one index_add_at: */\n",
                  m.p[0].a->ref, b);
    return lower_index_write(ctx, &m, true);
}

/* Whether an index holds a tensor (advanced indexing; else export/lower.c's views). */
static bool has_tensor(const ad_targ *ix) {
    if (ix->ref >= 0 || ix->c.t == AD_TTENSOR) return true;
    for (int i = 0; i < ix->nsub; i++) if (ix->sub[i].ref >= 0 || ix->sub[i].c.t == AD_TTENSOR) return true;
    if (!ix->sub && ad_is_seq(ix->c))
        for (int64_t i = 0; i < ix->c.u.l->len; i++) if (ix->c.u.l->items[i].t == AD_TTENSOR) return true;
    return false;
}

int ad_export_lower_index(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->kind != AD_TN_OP) return AD_XL_PASS;
    int id = r->n->op;
    if (id == AD_OP_index_add_at && accum_into(ctx, ctx->node) >= 0) {
        ad_xl_comment(ctx, "written by the add that reads it, below");
        return ADDSL_OK;
    }
    if (id == AD_OP_add) {
        for (int k = 0; k < 2; k++) {
            int b = ad_xl_pref(r, k), node = b >= 0 ? ctx->T->vals[b].node : -1;
            if (node >= 0 && node < ctx->node && accum_into(ctx, node) == ctx->node) return lower_accum_add(ctx, r, node);
        }
        return AD_XL_PASS;
    }
    if (id == AD_OP_gather) return lower_take(ctx, r, false);
    if (id == AD_OP_scatter) return lower_scatter(ctx, r, false);
    if (id == AD_OP_scatter_add) return lower_scatter(ctx, r, true);
    if (id == AD_OP_index_select) return lower_take(ctx, r, true);
    if (id == AD_OP_roll) return lower_roll(ctx, r);
    if (id == AD_OP_masked_select)
        return ad_xl_fail(ctx, "has an output whose shape depends on the mask's values, which an exported function cannot have");
    if (id == AD_OP_index_put) {
        double acc = 0;
        ad_xl_pnum(r, 3, &acc);
        return lower_index_write(ctx, r, acc != 0);
    }
    if (id != AD_OP_index_get && id != AD_OP_index_add_at) return AD_XL_PASS;
    int src = ad_xl_pref(r, 0);
    if (src < 0 || r->np < 2 || !r->p[1].a) return AD_XL_PASS;
    if (!has_tensor(r->p[1].a)) return AD_XL_PASS;
    if (id == AD_OP_index_add_at) return lower_index_write(ctx, r, true);
    xix p;
    int rc = plan_index(ctx, &ctx->v[src], r->p[1].a, &p);
    return rc ? rc : lower_index_get(ctx, r, &p, src);
}

/* ---- for the lowerings of other files (export/lower.h) ---- */

void ad_xl_offset_terms(ad_buf *b, const char *q, const int64_t *shape, int nd, const int64_t *st, int skip) {
    offset_terms(b, q, shape, nd, st, skip);
}
void ad_xl_clamp_index(ad_buf *b, const char *ind, const char *var, int64_t size) { clamp_index(b, ind, var, size); }
int ad_xl_empty(ad_xctx *ctx, int o) { return empty(ctx, o); }
void ad_xl_read_name(ad_xctx *ctx, int id, char *out, size_t n) { read_name(ctx, id, out, n); }
void ad_xl_copy_self(ad_xctx *ctx, const ad_xrec *r, int self, int o) {
    share_self(ctx, r, self, o);
    copy_into(ctx, self, o);
}
void ad_xl_dims1(const ad_xval *x, int *nd, int64_t *sh, int64_t *st) { dims1(x, nd, sh, st); }
int ad_xl_dim_of(ad_xctx *ctx, const ad_xrec *r, int i, int nd, int *d) { return dim_of(ctx, r, i, nd, d); }
const ad_tensor *ad_xl_known(const ad_xctx *ctx, const ad_targ *a) { return known_tensor(ctx, a); }
void ad_xl_bcast_st(const ad_xval *v, const int64_t *shape, int nd, int64_t *st) { bcast_st(v, shape, nd, st); }

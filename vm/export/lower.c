/* export/lower.c: export_c's lowering of one traced record to C99: the op
 * table (element-wise templates, reductions, products, views, cat/stack). */
#include "export/lower.h"
#include "export/nest.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernel_registry.h"
#include "kernel_ids.h"
#include "autograd/op.h"
#include "state.h"
#include "vm.h"

#define XMAX_PARAMS AD_XMAX_PARAMS
#define XMAX_LOOP AD_XMAX_LOOP
/* sums over at most this many elements are written out, without a loop */
#define XUNROLL_MAX 8

/* ---- names and literals ---- */

const char *ad_export_ctype(ad_dtype dt) {
    switch (dt) {
    case AD_FLOAT32: return "float";
    case AD_FLOAT64: return "double";
    case AD_INT64: return "int64_t";
    case AD_BOOL: return "unsigned char";
    default: return "?";
    }
}

void ad_export_literal(ad_buf *b, ad_dtype dt, double x) {
    if (dt == AD_BOOL) { ad_buf_puts(b, x != 0 ? "1" : "0"); return; }
    if (dt == AD_INT64) {
        /* saturated, as the int64 kernels read number bounds (ad_clamp_bound_i64) */
        if (x <= -0x1p63) { ad_buf_puts(b, "(-9223372036854775807LL - 1)"); return; }
        long long k = x >= 0x1p63 ? 9223372036854775807LL : (long long)x;
        if (k < 0) ad_buf_printf(b, k < -2147483647LL ? "(%lldLL)" : "(%lld)", k);
        else ad_buf_printf(b, k > 2147483647LL ? "%lldLL" : "%lld", k);
        return;
    }
    if (isnan(x)) { ad_buf_puts(b, "NAN"); return; }
    if (isinf(x)) { ad_buf_puts(b, x > 0 ? (dt == AD_FLOAT32 ? "HUGE_VALF" : "HUGE_VAL") : (dt == AD_FLOAT32 ? "(-HUGE_VALF)" : "(-HUGE_VAL)")); return; }
    char s[48];
    snprintf(s, sizeof s, dt == AD_FLOAT32 ? "%.9g" : "%.17g", dt == AD_FLOAT32 ? (double)(float)x : x);
    if (!strpbrk(s, ".e")) strcat(s, ".0");
    ad_buf_printf(b, signbit(x) ? "(%s%s)" : "%s%s", s, dt == AD_FLOAT32 ? "f" : "");
}

void ad_export_vname(const ad_xctx *ctx, int id, char *out, size_t n) {
    const ad_xval *x = &ctx->v[ctx->v[id].base];
    int b = ctx->v[id].base;
    if (x->kind == AD_XV_INPUT) snprintf(out, n, "in%d", x->index);
    else if (x->kind == AD_XV_CONST) snprintf(out, n, "%s_k%d", ctx->name, b);
    else if (x->kind == AD_XV_BUF && x->out >= 0) snprintf(out, n, "out%d", x->out);
    else snprintf(out, n, "v%d", b);
}

/* ---- errors ---- */

static const char *rec_name(const ad_tnode *n) {
    static const char *const cmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    switch (n->kind) {
    case AD_TN_OP: return n->fn.u.op->name;
    case AD_TN_BUILTIN: return n->fn.u.bi->name;
    case AD_TN_GETATTR: return n->attr == AD_ATTR_DATA ? "data" : "getattr";
    case AD_TN_SETATTR: return "setattr";
    case AD_TN_SETINDEX: return "setitem";
    case AD_TN_COMPARE: return n->attr >= 0 && n->attr < 6 ? cmp[n->attr] : "compare";
    case AD_TN_ACCUMGRAD: return "accumulate_grad";
    }
    return "?";
}

static int fail(ad_xctx *ctx, const char *why) {
    const ad_tnode *n = &ctx->T->nodes[ctx->node];
    return ad_error(ctx->S, "export_c(): '%s' at %s:%d:%d %s (docs/export.md lists what lowers)", rec_name(n),
                    ctx->chunk, n->line, n->col, why);
}

/* ---- binding a record's arguments to parameters ---- */

typedef ad_xrec xrec;

static int bind(ad_xctx *ctx, const ad_tnode *n, xrec *r) {
    memset(r, 0, sizeof *r);
    r->n = n;
    int np = 0, sizes = 0, ndef = 0;
    char *const *pn = NULL;
    const char *const *bpn = NULL;
    const ad_value *defs = NULL;
    if (n->kind == AD_TN_OP) {
        const ad_opdef *op = n->fn.u.op;
        np = op->nparams; pn = op->pnames; sizes = op->sizes_param; ndef = op->ndefaults; defs = op->defaults;
    } else if (n->kind == AD_TN_BUILTIN && n->fn.u.bi->nparams >= 0 && !n->fn.u.bi->varargs) {
        const ad_builtin *b = n->fn.u.bi;
        np = b->nparams; bpn = b->pnames; sizes = b->sizes_param; ndef = np; defs = b->defaults;
    } else {
        /* compare, getattr, variadic builtins: positional only */
        np = n->nargs;
        if (np > XMAX_PARAMS) return fail(ctx, "has too many arguments");
        r->np = np;
        for (int i = 0; i < np; i++) r->p[i].a = &n->args[i];
        return ADDSL_OK;
    }
    if (np > XMAX_PARAMS) return fail(ctx, "has too many parameters");
    r->np = np;
    for (int i = 0; i < np; i++) {
        r->p[i].c = ad_none();
        if (defs && i >= np - ndef) r->p[i].c = defs[i - (np - ndef)];
    }
    int nkw = n->kw ? (int)n->kw->len : 0, npos = n->nargs - nkw;
    for (int i = 0; i < npos; i++) {
        int k = i;
        if (sizes && k >= sizes - 1) {
            ad_xarg *s = &r->p[sizes - 1];
            /* expand(x, 2, 3) or expand(x, [2, 3]) */
            if (i == sizes - 1 && (npos - i > 1 || n->args[i].c.t == AD_TINT || n->args[i].c.t == AD_TNUM)) {
                s->sizes = true; s->first = i; s->count = npos - i; s->a = NULL;
                break;
            }
        }
        if (k >= np) return fail(ctx, "has more arguments than parameters");
        r->p[k].a = &n->args[i];
    }
    for (int j = 0; j < nkw; j++) {
        const char *kn = n->kw->items[j].u.s->data;
        int k = -1;
        for (int i = 0; i < np && k < 0; i++) if (strcmp(pn ? pn[i] : bpn[i], kn) == 0) k = i;
        if (k < 0) return fail(ctx, "has a keyword argument the exporter does not know");
        r->p[k].a = &n->args[npos + j];
    }
    return ADDSL_OK;
}

/* The tensor ref of parameter i, or -1. */
static int pref(const xrec *r, int i) {
    return i < r->np && r->p[i].a && r->p[i].a->ref >= 0 ? r->p[i].a->ref : -1;
}

/* The constant of parameter i (none when absent or a tensor). */
static ad_value pconst(const xrec *r, int i) {
    if (i >= r->np) return ad_none();
    if (!r->p[i].a) return r->p[i].c;
    if (r->p[i].a->ref >= 0 || r->p[i].a->sub) return ad_none();
    return r->p[i].a->c;
}

static bool pnum(const xrec *r, int i, double *x) {
    ad_value v = pconst(r, i);
    if (v.t == AD_TINT || v.t == AD_TNUM) { *x = v.u.n; return true; }
    if (v.t == AD_TBOOL) { *x = v.u.b; return true; }
    return false;
}

/* An int, or a list/tuple of ints (also the '*sizes' form); false otherwise. */
static bool pints(const xrec *r, int i, int64_t *out, int *n) {
    *n = 0;
    if (i >= r->np) return false;
    const ad_xarg *p = &r->p[i];
    if (p->sizes) {
        for (int k = 0; k < p->count; k++) {
            const ad_targ *a = &r->n->args[p->first + k];
            if (a->ref >= 0 || a->sub || !ad_is_number(a->c) || *n == AD_MAX_DIMS) return false;
            out[(*n)++] = (int64_t)a->c.u.n;
        }
        return true;
    }
    ad_value v = pconst(r, i);
    if (ad_is_number(v)) { out[(*n)++] = (int64_t)v.u.n; return true; }
    if (!ad_is_seq(v)) return false;
    for (int64_t k = 0; k < v.u.l->len; k++) {
        ad_value it = v.u.l->items[k];
        if (!ad_is_number(it) || *n == AD_MAX_DIMS) return false;
        out[(*n)++] = (int64_t)it.u.n;
    }
    return true;
}

static int wrap_dim(int64_t d, int nd) { return (int)(d < 0 ? d + nd : d); }

/* ---- values ---- */

static int out_ref(const ad_tnode *n) { return n->out.ref; }

static void contiguous_st(const ad_xval *x, int64_t *st) {
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) { st[d] = s; s *= x->shape[d]; }
}

/* Record 'id' as read by the current record (liveness of its base). */
static void use(ad_xctx *ctx, int id) {
    ad_xval *b = &ctx->v[ctx->v[id].base];
    if (b->kind == AD_XV_BUF && b->last < ctx->now) b->last = ctx->now;
}

static void make_buf(ad_xctx *ctx, int id) {
    ad_xval *x = &ctx->v[id];
    x->kind = AD_XV_BUF; x->base = id; x->off = 0; x->def = x->last = ctx->now;
    contiguous_st(x, x->st);
}

static void make_view(ad_xctx *ctx, int id, int src, int nd, const int64_t *shape, const int64_t *st, int64_t off) {
    ad_xval *x = &ctx->v[id];
    x->kind = AD_XV_VIEW; x->base = ctx->v[src].base; x->off = off;
    x->ndim = nd;
    for (int d = 0; d < nd; d++) { x->shape[d] = shape[d]; x->st[d] = st[d]; }
    use(ctx, src);
}

static bool is_contig(const ad_xval *x) {
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) {
        if (x->shape[d] != 1 && x->st[d] != s) return false;
        s *= x->shape[d];
    }
    return true;
}

/* ---- the loop-nest emitter ---- */

typedef ad_xoperand xoperand;
typedef ad_xnest xnest;

static void loopvar(const xnest *e, int k, char *s, size_t n) {
    if (k < e->nout) { if (e->flat) snprintf(s, n, "i"); else snprintf(s, n, "i%d", k); }
    else if (e->rflat) snprintf(s, n, "r");
    else snprintf(s, n, "r%d", k - e->nout);
}

/* "off + i0*s0 + ..." over the loop variables (flat forms use one stride). */
static void index_expr(const xnest *e, int64_t off, const int64_t *st, bool to_dest, ad_buf *b) {
    bool any = false;
    if (off) { ad_buf_printf(b, "%lld", (long long)off); any = true; }
    int lim = to_dest ? e->nout : e->nout + e->nred;
    for (int k = 0; k < lim; k++) {
        if (e->flat && k < e->nout && k != e->nout - 1) continue;
        if (e->rflat && k >= e->nout && k != e->nout + e->nred - 1) continue;
        if (!st[k]) continue;
        char v[24];
        loopvar(e, k, v, sizeof v);
        if (any) ad_buf_puts(b, " + ");
        if (st[k] == 1) ad_buf_puts(b, v);
        else ad_buf_printf(b, "%s*%lld", v, (long long)st[k]);
        any = true;
    }
    if (!any) ad_buf_puts(b, "0");
}

static void operand_expr(ad_xctx *ctx, const xnest *e, const xoperand *o, ad_buf *b) {
    if (o->ref < 0) { ad_export_literal(b, e->ct, o->lit); return; }
    if (o->tmp) {
        const ad_xval *t = &ctx->v[ctx->v[o->ref].base];
        if (!o->raw && t->dt != e->ct) ad_buf_printf(b, "(%s)", ad_export_ctype(e->ct));
        ad_buf_printf(b, "t%d", ctx->v[o->ref].base);
        return;
    }
    double sv;
    if (ctx->v[ctx->v[o->ref].base].kind == AD_XV_CONST && ad_export_splat(ctx, o->ref, &sv)) {
        ad_export_literal(b, o->raw ? ctx->v[o->ref].dt : e->ct, sv);
        return;
    }
    char nm[32];
    ad_export_vname(ctx, o->ref, nm, sizeof nm);
    ctx->v[ctx->v[o->ref].base].read = true;
    bool cast = !o->raw && ctx->v[o->ref].dt != e->ct;
    if (cast) ad_buf_printf(b, "(%s)", ad_export_ctype(e->ct));
    ad_buf_printf(b, "%s[", nm);
    index_expr(e, o->off, o->st, false, b);
    ad_buf_puts(b, "]");
}

static void render(ad_xctx *ctx, const xnest *e, const char *t, const char *elem, ad_buf *b) {
    for (const char *p = t; *p; p++) {
        if (*p != '$') { ad_buf_add(b, p, 1); continue; }
        char c = *++p;
        if (c >= '0' && c <= '9') operand_expr(ctx, e, &e->op[c - '0'], b);
        else if (c == 'C') { ad_export_render_c(ctx, e, p + 1, b); return; }
        else if (c == 'F') ad_buf_puts(b, e->ct == AD_FLOAT32 ? "f" : "");
        else if (c == 'T') ad_buf_puts(b, ad_export_ctype(e->ct));
        else if (c == 'A') ad_buf_puts(b, ad_export_ctype(e->acct));
        else if (c == 'E') render(ctx, e, elem, NULL, b);
        else if (c == 'N') ad_export_literal(b, e->acct, (double)e->count);
        else if (c == 'G') ad_buf_puts(b, e->acct == AD_FLOAT32 ? "f" : "");
        else if (c == 'V' && p[1] >= '0' && p[1] <= '9') {
            char v[24];
            loopvar(e, *++p - '0', v, sizeof v);
            ad_buf_puts(b, v);
        }
        else { ad_buf_add(b, p - 1, 2); }
    }
}

static void indent(ad_buf *b, int k) { for (int i = 0; i < k; i++) ad_buf_puts(b, "    "); }

static void open_loops(const xnest *e, int from, int to, int depth, ad_buf *b) {
    for (int k = from; k < to; k++) {
        bool isflat = (k < e->nout && e->flat) || (k >= e->nout && e->rflat);
        int64_t n = e->shape[k];
        if (isflat) {
            int lo = k < e->nout ? 0 : e->nout, hi = k < e->nout ? e->nout : e->nout + e->nred;
            n = 1;
            for (int j = lo; j < hi; j++) n *= e->shape[j];
            k = hi - 1;
        }
        char v[24];
        loopvar(e, k, v, sizeof v);
        indent(b, depth);
        ad_buf_printf(b, "for (long %s = 0; %s < %lld; %s++)\n", v, v, (long long)n, v);
        depth++;
    }
}

/* Whether operand strides over the dims [lo, hi) are the contiguous strides of
 * those dims (or all zero), so one loop variable can walk them. */
static bool walks_flat(const xnest *e, const int64_t *st, int lo, int hi) {
    bool zero = true;
    for (int k = lo; k < hi; k++) if (st[k]) zero = false;
    if (zero) return true;
    int64_t s = 1;
    for (int k = hi - 1; k >= lo; k--) {
        if (e->shape[k] != 1 && st[k] != s) return false;
        s *= e->shape[k];
    }
    return true;
}

/* Rewrites strides for the flat forms: the last dim of a group carries the
 * group's single variable (stride 1, or 0 for a broadcast operand). */
static void flatten_group(xnest *e, int lo, int hi, bool *flag) {
    bool ok = lo >= e->nout || walks_flat(e, e->dst, lo, hi);
    for (int i = 0; i < e->nops && ok; i++) if (e->op[i].ref >= 0) ok = walks_flat(e, e->op[i].st, lo, hi);
    if (!ok) return;
    *flag = true;
    if (lo < e->nout) {
        bool z = true;
        for (int k = lo; k < hi; k++) if (e->dst[k]) z = false;
        for (int k = lo; k < hi; k++) e->dst[k] = 0;
        e->dst[hi - 1] = z ? 0 : 1;
    }
    for (int i = 0; i < e->nops; i++) {
        bool z = true;
        for (int k = lo; k < hi; k++) if (e->op[i].st[k]) z = false;
        for (int k = lo; k < hi; k++) e->op[i].st[k] = 0;
        e->op[i].st[hi - 1] = z ? 0 : 1;
    }
}

/* A sum over a short reduced dim written out as one expression, added in the
 * loop's order ((e0 + e1) + e2 ...): no inner loop for small products. */
static bool unrolled_sum(const xnest *e) {
    if (!e->init || e->nred != 1 || strcmp(e->init, "0") != 0 || strcmp(e->comb, "acc += $E") != 0) return false;
    int64_t k = e->shape[e->nout];
    return k >= 1 && k <= XUNROLL_MAX;
}

static void render_unrolled(ad_xctx *ctx, const xnest *e, ad_buf *b) {
    for (int64_t r = 0; r < e->shape[e->nout]; r++) {
        xnest c = *e;
        for (int i = 0; i < c.nops; i++) { c.op[i].off += r * c.op[i].st[c.nout]; c.op[i].st[c.nout] = 0; }
        if (r) ad_buf_puts(b, " + ");
        render(ctx, &c, e->expr, NULL, b);
    }
}

static void emit_nest(ad_xctx *ctx, xnest *e) {
    ad_buf *b = ctx->body;
    for (int i = 0; i < e->nops; i++) if (e->op[i].ref >= 0) use(ctx, e->op[i].ref);
    if (!e->noflat) {
        ad_xnest *one = e;
        ad_export_coalesce(&one, 1);
    }
    if (e->noflat) {}
    else if (e->nout > 1) flatten_group(e, 0, e->nout, &e->flat);
    else if (e->nout == 1) e->flat = true;
    if (e->nred > 1) flatten_group(e, e->nout, e->nout + e->nred, &e->rflat);
    else if (e->nred == 1) e->rflat = true;
    char dn[32];
    if (e->dname) snprintf(dn, sizeof dn, "%s", e->dname);
    else ad_export_vname(ctx, e->dest, dn, sizeof dn);
    int depth = 1;
    open_loops(e, 0, e->nout, depth, b);
    depth += e->nout == 0 ? 0 : (e->flat ? 1 : e->nout);
    if (!e->init) {
        indent(b, depth);
        ad_buf_printf(b, "%s[", dn);
        index_expr(e, e->doff, e->dst, true, b);
        ad_buf_puts(b, "] = ");
        render(ctx, e, e->expr, NULL, b);
        ad_buf_puts(b, ";\n");
        return;
    }
    int bd = e->nout ? depth - 1 : depth, in = bd + 1;
    indent(b, bd);
    ad_buf_puts(b, "{\n");
    indent(b, in);
    render(ctx, e, "$A acc = ", NULL, b);
    if (unrolled_sum(e)) {
        render_unrolled(ctx, e, b);
        ad_buf_puts(b, ";\n");
    } else {
        render(ctx, e, e->init, NULL, b);
        ad_buf_puts(b, ";\n");
        open_loops(e, e->nout, e->nout + e->nred, in, b);
        indent(b, in + (e->nred == 0 ? 0 : (e->rflat ? 1 : e->nred)));
        render(ctx, e, e->comb, e->expr, b);
        ad_buf_puts(b, ";\n");
    }
    indent(b, in);
    ad_buf_printf(b, "%s[", dn);
    index_expr(e, e->doff, e->dst, true, b);
    ad_buf_puts(b, "] = ");
    if (e->acct != ctx->v[e->dest].dt) ad_buf_printf(b, "(%s)(", ad_export_ctype(ctx->v[e->dest].dt));
    render(ctx, e, e->fin, NULL, b);
    if (e->acct != ctx->v[e->dest].dt) ad_buf_puts(b, ")");
    ad_buf_puts(b, ";\n");
    indent(b, bd);
    ad_buf_puts(b, "}\n");
}

/* A nest writing all of 'dest' (contiguous), with no operands yet. */
static void nest_init(ad_xctx *ctx, xnest *e, int dest) {
    memset(e, 0, sizeof *e);
    const ad_xval *x = &ctx->v[dest];
    e->dest = dest;
    e->nout = x->ndim;
    for (int d = 0; d < x->ndim; d++) e->shape[d] = x->shape[d];
    contiguous_st(x, e->dst);
    e->ct = e->acct = x->dt;
}

/* Operand 'ref' broadcast against the nest's output dims (numpy alignment). */
static void add_bcast(ad_xctx *ctx, xnest *e, int ref) {
    xoperand *o = &e->op[e->nops++];
    memset(o, 0, sizeof *o);
    o->ref = ref;
    const ad_xval *x = &ctx->v[ref];
    o->off = x->off;
    for (int d = 0; d < x->ndim; d++) {
        int k = e->nout - x->ndim + d;
        if (k >= 0) o->st[k] = x->shape[d] == 1 ? 0 : x->st[d];
    }
}

static void add_lit(xnest *e, double lit) {
    xoperand *o = &e->op[e->nops++];
    memset(o, 0, sizeof *o);
    o->ref = -1; o->lit = lit;
}

static void note_text(ad_xctx *ctx, const char *what, char *s, size_t n) {
    const ad_tnode *t = &ctx->T->nodes[ctx->node];
    snprintf(s, n, "/* %s:%d:%d %s%s%s */", ctx->chunk, t->line, t->col, rec_name(t), what ? ": " : "", what ? what : "");
}

static void comment(ad_xctx *ctx, const char *what) {
    char s[AD_XFUSE_NOTE];
    note_text(ctx, what, s, sizeof s);
    ad_buf_printf(ctx->body, "    %s\n", s);
}

/* ---- element-wise ops ---- */

typedef struct ew_row {
    const char *name;
    int nparams;                /* parameters the template reads ($0..), tensors or numbers */
    const char *tf;             /* float compute type */
    const char *ti;             /* int64/bool compute type, or NULL */
} ew_row;

/* The library's ops made of others (the table's own ops are
 * vm/export/lower_ew.c's, from builtins/kernels/ew_table.h). */
static const ew_row ew_table[] = {
    {"heaviside", 2, "($0 == 0 ? $1 : ($0 > 0))", NULL},
    {"threshold", 3, "($0 > $1 ? $0 : $2)", "($0 > $1 ? $0 : $2)"},
    {NULL, 0, NULL, NULL},
};

/* A map over the output's shape: operands are the record's parameters 0..k-1
 * (tensors broadcast, numbers as literals of the compute type). */
static int emit_map(ad_xctx *ctx, const xrec *r, int k, const char *tmpl, ad_dtype ct, int rawmask) {
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    make_buf(ctx, o);
    xnest e;
    nest_init(ctx, &e, o);
    e.ct = ct;
    e.expr = tmpl;
    for (int i = 0; i < k; i++) {
        int ref = pref(r, i);
        double x;
        if (ref >= 0) add_bcast(ctx, &e, ref);
        else if (pnum(r, i, &x)) add_lit(&e, x);
        else return fail(ctx, "has an argument that is neither a tensor nor a number");
        if (rawmask & (1 << i)) e.op[e.nops - 1].raw = true;
    }
    char note[AD_XFUSE_NOTE];
    note_text(ctx, NULL, note, sizeof note);
    return ad_export_fuse_map(ctx, &e, note);
}

static int lower_ew(ad_xctx *ctx, const xrec *r, const ew_row *row) {
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    ad_dtype ct = ad_export_ew_ctype(ctx, r, row->nparams);
    bool fl = ct == AD_FLOAT32 || ct == AD_FLOAT64;
    const char *t = fl ? row->tf : row->ti;
    if (!t) return fail(ctx, "is lowered for float32 and float64 only");
    return emit_map(ctx, r, row->nparams, t, ct, 0);
}

/* add/sub(self, other, alpha) */
static int lower_addsub(ad_xctx *ctx, const xrec *r, bool sub) {
    double alpha = 1;
    if (!pnum(r, 2, &alpha)) return fail(ctx, "has an alpha that is not a number");
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    const char *t = alpha == 1 ? (sub ? "$0 - $1" : "$0 + $1") : (sub ? "$0 - $2 * $1" : "$0 + $2 * $1");
    return emit_map(ctx, r, alpha == 1 ? 2 : 3, t, ctx->v[o].dt, 0);
}

/* rsub(self, other, alpha): other - alpha * self */
static int lower_rsub(ad_xctx *ctx, const xrec *r) {
    double alpha = 1;
    if (!pnum(r, 2, &alpha)) return fail(ctx, "has an alpha that is not a number");
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    return emit_map(ctx, r, 3, alpha == 1 ? "$1 - $0" : "$1 - $2 * $0", ctx->v[o].dt, 0);
}

/* div(self, other, rounding_mode): the table's div, div_trunc, div_floor */
static int lower_div(ad_xctx *ctx, const xrec *r) {
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    ad_value m = pconst(r, 2);
    ad_dtype ct = ctx->v[o].dt;
    if (m.t == AD_TNONE) return emit_map(ctx, r, 2, "$0 / $1", ct, 0);
    if (m.t == AD_TSTR && strcmp(m.u.s->data, "trunc") == 0) return ad_export_ew_map(ctx, r, "div_trunc", ct);
    if (m.t == AD_TSTR && strcmp(m.u.s->data, "floor") == 0) return ad_export_ew_map(ctx, r, "div_floor", ct);
    return fail(ctx, "with this rounding_mode is not lowered");
}

/* Parameter i of q becomes the constant v. */
static void set_const(xrec *q, int i, ad_value v) {
    q->p[i].a = NULL;
    q->p[i].c = v;
}

/* clamp(self, min, max), each bound none, a number or a tensor: the kernels
 * the builtin picks (builtins/bi_elementwise.c clamp_any), so NaN bounds and
 * lo > hi give what eager gives. trunc: integer bounds of an integer self
 * (hardtanh casts them to its dtype). */
static int lower_clamp_bounds(ad_xctx *ctx, const xrec *r, bool trunc_int) {
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    ad_dtype ct = ctx->v[o].dt;
    bool fl = ct == AD_FLOAT32 || ct == AD_FLOAT64;
    bool tlo = pref(r, 1) >= 0, thi = pref(r, 2) >= 0;
    bool nlo = !tlo && pconst(r, 1).t == AD_TNONE, nhi = !thi && pconst(r, 2).t == AD_TNONE;
    if (nlo && nhi) return fail(ctx, "has neither bound");
    if (!tlo && !thi) {
        /* number bounds: the clamp kernel, an absent one the type's end */
        xrec q = *r;
        double lo = fl ? -INFINITY : -0x1p63, hi = fl ? INFINITY : 0x1p63;
        if (!nlo && !pnum(r, 1, &lo)) return fail(ctx, "has a min that is not a number");
        if (!nhi && !pnum(r, 2, &hi)) return fail(ctx, "has a max that is not a number");
        if (trunc_int && !fl) { lo = trunc(lo); hi = trunc(hi); } /* the type's ends are integral */
        set_const(&q, 1, ad_num(lo));
        set_const(&q, 2, ad_num(hi));
        return ad_export_ew_map(ctx, &q, "clamp", ct);
    }
    if (nhi) return ad_export_ew_map(ctx, r, "maximum", ct);
    if (nlo) {
        xrec q = *r;
        q.p[1] = q.p[2];
        return ad_export_ew_map(ctx, &q, "minimum", ct);
    }
    return ad_export_ew_map(ctx, r, "clamp_t", ct);
}

static int lower_clamp(ad_xctx *ctx, const xrec *r) { return lower_clamp_bounds(ctx, r, false); }

/* clamp_min(self, min) and clamp_max(self, max): clamp with one bound */
static int lower_clamp_one(ad_xctx *ctx, const xrec *r, bool is_max) {
    xrec q = *r;
    q.np = 3;
    if (is_max) q.p[2] = q.p[1];
    set_const(&q, is_max ? 1 : 2, ad_none());
    return lower_clamp_bounds(ctx, &q, false);
}

/* relu6(self): eager's hardtanh(self, 0, 6), so the clamp kernel with number bounds */
static int lower_relu6(ad_xctx *ctx, const xrec *r) {
    int x = pref(r, 0);
    /* a bool's 0 and 1 lie inside [0, 6] (and comparing an unsigned char
     * with 0 is a -Wtype-limits error in the C written) */
    if (x >= 0 && ctx->v[x].dt == AD_BOOL) {
        int o = out_ref(r->n);
        if (o < 0) return fail(ctx, "has no tensor output");
        return emit_map(ctx, r, 1, "$0", ctx->v[o].dt, 0);
    }
    xrec q = *r;
    q.np = 3;
    set_const(&q, 1, ad_num(0));
    set_const(&q, 2, ad_num(6));
    return lower_clamp_bounds(ctx, &q, true);
}

/* float_power(self, exponent): pow's row computed in float64, as eager
 * converts both operands */
static int lower_float_power(ad_xctx *ctx, const xrec *r) { return ad_export_ew_map(ctx, r, "pow", AD_FLOAT64); }

/* masked_fill(self, mask, value): the where row over (mask, value, self) */
static int lower_masked_fill(ad_xctx *ctx, const xrec *r) {
    xrec q = *r;
    q.np = 3;
    q.p[0] = r->p[1];
    q.p[1] = r->p[2];
    q.p[2] = r->p[0];
    return ad_export_lower_ew(ctx, &q, "where");
}

static int lower_gelu(ad_xctx *ctx, const xrec *r) {
    ad_value m = pconst(r, 1);
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    ad_dtype ct = ctx->v[o].dt;
    return ad_export_ew_map(ctx, r, m.t == AD_TSTR && strcmp(m.u.s->data, "tanh") == 0 ? "gelu_tanh" : "gelu_erf", ct);
}

/* round(self, decimals): half to even, as torch (nearbyint under the default rounding mode). */
static int lower_round(ad_xctx *ctx, const xrec *r) {
    double d = 0;
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    if (!pnum(r, 1, &d)) return fail(ctx, "has decimals that are not an int");
    ad_dtype ct = ctx->v[o].dt;
    if (ct != AD_FLOAT32 && ct != AD_FLOAT64) return emit_map(ctx, r, 1, "$0", ct, 0);
    if (d == 0) return ad_export_ew_map(ctx, r, "round", ct);
    return fail(ctx, "with decimals is not lowered");
}

/* logit(self, eps): the table's logit, whose p < 0 means no eps. */
static int lower_logit(ad_xctx *ctx, const xrec *r) {
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    xrec q = *r;
    double eps = -1;
    if (pconst(r, 1).t != AD_TNONE && !pnum(r, 1, &eps)) return fail(ctx, "has an eps that is not a number");
    q.np = 2;
    set_const(&q, 1, ad_num(eps));
    return ad_export_ew_map(ctx, &q, "logit", ctx->v[o].dt);
}

/* a < b on tensors: computed in the promoted type of the operands. */
static int lower_compare(ad_xctx *ctx, const xrec *r) {
    static const char *const t[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    int a = pref(r, 0), b = pref(r, 1);
    ad_dtype ct = a >= 0 ? ctx->v[a].dt : ctx->v[b].dt;
    if (a >= 0 && b >= 0) ct = ad_promote(ctx->v[a].dt, ctx->v[b].dt);
    else if (ct != AD_FLOAT32 && ct != AD_FLOAT64) {
        double x;
        if (pnum(r, a >= 0 ? 1 : 0, &x) && x != floor(x)) ct = AD_FLOAT64;
    }
    int at = r->n->attr;
    if (at < 0 || at > 5) return fail(ctx, "is an unknown comparison");
    return ad_export_ew_map(ctx, r, t[at], ct);
}

static int lower_named_compare(ad_xctx *ctx, const xrec *r, int at) {
    xrec q = *r;
    ad_tnode n = *r->n;
    n.attr = at;
    q.n = &n;
    int rc = lower_compare(ctx, &q);
    return rc;
}

/* float(), double(), to(dtype), type_as(): a converting copy, or an alias when
 * the dtype does not change. */
static int alias_of(ad_xctx *ctx, const xrec *r, int src) {
    int o = out_ref(r->n);
    if (o < 0 || src < 0) return fail(ctx, "has no tensor input or output");
    const ad_xval *s = &ctx->v[src];
    make_view(ctx, o, src, s->ndim, s->shape, s->st, s->off);
    char a[32], b[32];
    snprintf(a, sizeof a, "v%d", o);
    snprintf(b, sizeof b, "%%%d", src);
    ad_buf_printf(ctx->body, "    /* %s:%d:%d %s: %%%d is %%%d (no copy) */\n", ctx->chunk, r->n->line, r->n->col,
                  rec_name(r->n), o, src);
    return ADDSL_OK;
}

static int lower_convert(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), o = out_ref(r->n);
    if (src < 0 || o < 0) return fail(ctx, "has no tensor input or output");
    ad_dtype to = ctx->v[o].dt;
    if (ctx->v[src].dt == to) return alias_of(ctx, r, src);
    if (to == AD_BOOL) return emit_map(ctx, r, 1, "$0 != 0", ctx->v[src].dt, 0);
    return emit_map(ctx, r, 1, "$0", to, 0);
}

/* zeros_like, ones_like, full_like: a fill of the output. */
static int lower_fill(ad_xctx *ctx, const xrec *r, double x) {
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    make_buf(ctx, o);
    xnest e;
    nest_init(ctx, &e, o);
    e.expr = "$0";
    add_lit(&e, x);
    char note[AD_XFUSE_NOTE];
    note_text(ctx, NULL, note, sizeof note);
    return ad_export_fuse_map(ctx, &e, note);
}

/* zeros(*size), ones, empty, full(size, fill_value) made inside the program
 * (by a derivative formula): a fill of the output's traced shape. */
static int lower_create(ad_xctx *ctx, const xrec *r, int id) {
    double x = 0;
    if (id == AD_OP_ones) x = 1;
    else if (id == AD_OP_full && !pnum(r, 1, &x)) return fail(ctx, "needs a number fill value");
    return lower_fill(ctx, r, x);
}

/* tril/triu(self, diagonal): the element where column - row <= k (tril) or
 * >= k (triu), else 0; one loop variable per dim so the condition can name them. */
static int lower_tri(ad_xctx *ctx, const xrec *r, bool lower) {
    int src = pref(r, 0), o = out_ref(r->n);
    double k = 0;
    if (src < 0 || o < 0 || !pnum(r, 1, &k)) return fail(ctx, "needs a tensor and an int diagonal");
    const ad_xval *x = &ctx->v[src];
    if (x->ndim < 2 || x->ndim > 10) return fail(ctx, "needs 2 to 10 dims");
    make_buf(ctx, o);
    xnest e;
    nest_init(ctx, &e, o);
    e.noflat = true;
    add_bcast(ctx, &e, src);
    char t[96];
    snprintf(t, sizeof t, "($V%d - $V%d %s %lld ? $0 : 0)", x->ndim - 1, x->ndim - 2, lower ? "<=" : ">=", (long long)k);
    e.expr = t;
    comment(ctx, NULL);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* diag_embed(self, offset, dim1, dim2): zeros, then the input's last dim
 * written on the diagonal (dim1, dim2) of the output. */
static int lower_diag_embed(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), o = out_ref(r->n);
    double off = 0, a = -2, b = -1;
    if (src < 0 || o < 0 || !pnum(r, 1, &off) || !pnum(r, 2, &a) || !pnum(r, 3, &b)) return fail(ctx, "has arguments that are not ints");
    const ad_xval *x = &ctx->v[src];
    int rc = lower_fill(ctx, r, 0);
    if (!rc) rc = ad_export_fuse_flush(ctx); /* the zeros before the diagonal's writes */
    if (rc) return rc;
    const ad_xval *y = &ctx->v[o];
    int d1 = wrap_dim((int64_t)a, y->ndim), d2 = wrap_dim((int64_t)b, y->ndim);
    if (x->ndim < 1 || d1 < 0 || d2 < 0 || d1 >= y->ndim || d2 >= y->ndim || d1 == d2) return fail(ctx, "has dims out of range");
    int64_t yst[AD_MAX_DIMS];
    contiguous_st(y, yst);
    xnest e;
    memset(&e, 0, sizeof e);
    e.dest = o;
    e.nout = x->ndim;
    for (int d = 0; d < x->ndim; d++) e.shape[d] = x->shape[d];
    int k = 0;
    for (int j = 0; j < y->ndim; j++) if (j != d1 && j != d2) e.dst[k++] = yst[j];
    e.dst[k] = yst[d1] + yst[d2];
    int64_t of = (int64_t)off;
    e.doff = of >= 0 ? of * yst[d2] : -of * yst[d1];
    e.ct = e.acct = y->dt;
    e.expr = "$0";
    add_bcast(ctx, &e, src);
    if (x->numel) emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* ---- reductions ---- */

/* Splits the input's dims into kept (output loops) and reduced ones. */
static int reduce_nest(ad_xctx *ctx, const xrec *r, int src, const int64_t *dims, int nd, bool all, xnest *e) {
    const ad_xval *x = &ctx->v[src];
    bool red[AD_MAX_DIMS] = {false};
    for (int i = 0; i < nd; i++) {
        int d = wrap_dim(dims[i], x->ndim > 0 ? x->ndim : 1);
        if (d < 0 || d >= (x->ndim > 0 ? x->ndim : 1)) return fail(ctx, "has a dim out of range");
        if (x->ndim > 0) red[d] = true;
    }
    if (all) for (int d = 0; d < x->ndim; d++) red[d] = true;
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    make_buf(ctx, o);
    memset(e, 0, sizeof *e);
    e->dest = o;
    xoperand *op = &e->op[0];
    memset(op, 0, sizeof *op);
    op->ref = src; op->off = x->off;
    e->nops = 1;
    e->count = 1;
    int k = 0;
    for (int d = 0; d < x->ndim; d++) if (!red[d]) { e->shape[k] = x->shape[d]; op->st[k] = x->st[d]; k++; }
    e->nout = k;
    for (int d = 0; d < x->ndim; d++) if (red[d]) { e->shape[k] = x->shape[d]; op->st[k] = x->st[d]; e->count *= x->shape[d]; k++; }
    e->nred = k - e->nout;
    int64_t s = 1;
    for (int d = e->nout - 1; d >= 0; d--) { e->dst[d] = s; s *= e->shape[d]; }
    e->ct = ctx->v[o].dt;
    e->acct = e->ct == AD_FLOAT32 ? AD_FLOAT64 : e->ct;
    e->expr = "$0";
    return ADDSL_OK;
}

/* The dims parameter i of a reduction names; *all when it is none or an empty list. */
static int reduce_dims(ad_xctx *ctx, const xrec *r, int i, int64_t *dims, int *nd, bool *all) {
    ad_value dv = pconst(r, i);
    *nd = 0;
    *all = dv.t == AD_TNONE;
    if (!*all && !pints(r, i, dims, nd)) return fail(ctx, "has a dim that is not an int or a list of ints");
    if (ad_is_seq(dv) && *nd == 0) *all = true;
    return ADDSL_OK;
}

/* The nest of a reduction over the dims parameter i names (every dim when 'all'). */
static int reduce_over(ad_xctx *ctx, const xrec *r, int src, int i, bool all, xnest *e) {
    int64_t dims[AD_MAX_DIMS] = {0};
    int nd = 0, rc;
    if (!all && (rc = reduce_dims(ctx, r, i, dims, &nd, &all))) return rc;
    return reduce_nest(ctx, r, src, dims, nd, all, e);
}

/* sum, mean, prod, amax, amin, max_all, min_all, logsumexp(-free): (self, dim, keepdim, ...) */
static int lower_reduce(ad_xctx *ctx, const xrec *r, int id) {
    int src = pref(r, 0);
    if (src < 0) return fail(ctx, "has no tensor input");
    bool all = id == AD_OP_max_all || id == AD_OP_min_all || id == AD_OP_trace;
    xnest e;
    int rc = reduce_over(ctx, r, src, 1, all, &e);
    if (rc) return rc;
    switch (id) {
    case AD_OP_sum: case AD_OP_nansum: e.init = "0"; e.comb = "acc += $E"; e.fin = "acc"; break;
    case AD_OP_mean: e.init = "0"; e.comb = "acc += $E"; e.fin = "acc / $N"; break;
    case AD_OP_prod: e.init = "1"; e.comb = "acc *= $E"; e.fin = "acc"; break;
    case AD_OP_amax: case AD_OP_max_all:
        if (e.count == 0) return fail(ctx, "reduces an empty tensor");
        e.init = e.acct == AD_INT64 ? "INT64_MIN" : "-HUGE_VAL"; e.comb = "if (!(acc >= $E)) acc = $E"; e.fin = "acc";
        break;
    case AD_OP_amin: case AD_OP_min_all:
        if (e.count == 0) return fail(ctx, "reduces an empty tensor");
        e.init = e.acct == AD_INT64 ? "INT64_MAX" : "HUGE_VAL"; e.comb = "if (!(acc <= $E)) acc = $E"; e.fin = "acc";
        break;
    default: return fail(ctx, "is not lowered");
    }
    if (id == AD_OP_mean && e.acct == AD_INT64) return fail(ctx, "of an integer tensor is not lowered");
    if (e.acct == AD_BOOL) return fail(ctx, "of a bool tensor is not lowered");
    e.ct = e.acct;
    comment(ctx, NULL);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* norm(self, p, dim, keepdim), linalg_vector_norm(self, ord, dim, keepdim):
 * p = 2 (default), 1, inf, -inf, 0 or another number. */
static int lower_norm(ad_xctx *ctx, const xrec *r, bool linalg) {
    int src = pref(r, 0);
    if (src < 0) return fail(ctx, "has no tensor input");
    double p = 2;
    ad_value pv = pconst(r, 1);
    if (pv.t != AD_TNONE && !pnum(r, 1, &p)) return fail(ctx, "has an order that is not a number");
    (void)linalg;
    xnest e;
    int rc = reduce_over(ctx, r, src, 2, false, &e);
    if (rc) return rc;
    if (e.acct != AD_FLOAT64) return fail(ctx, "is lowered for float32 and float64 only");
    e.ct = e.acct;
    if (p == 2) { e.expr = "$0 * $0"; e.init = "0"; e.comb = "acc += $E"; e.fin = "sqrt(acc)"; }
    else if (p == 1) { e.expr = "fabs($0)"; e.init = "0"; e.comb = "acc += $E"; e.fin = "acc"; }
    else if (isinf(p) && p > 0) { e.expr = "fabs($0)"; e.init = "0"; e.comb = "if (!(acc >= $E)) acc = $E"; e.fin = "acc"; }
    else if (isinf(p)) {
        if (e.count == 0) return fail(ctx, "reduces an empty tensor");
        e.expr = "fabs($0)"; e.init = "HUGE_VAL"; e.comb = "if (!(acc <= $E)) acc = $E"; e.fin = "acc";
    } else if (p == 0) { e.expr = "($0 != 0)"; e.init = "0"; e.comb = "acc += $E"; e.fin = "acc"; }
    else {
        return fail(ctx, "with this order is not lowered (2, 1, 0, inf and -inf are)");
    }
    comment(ctx, NULL);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* var/std(self, dim, correction, keepdim, unbiased): Welford's one-pass update
 * in double, as the library's kernel (builtins/kernels/reduce.c), so that a
 * constant line has a variance of exactly 0 there too (std's gradient). */
static int lower_var(ad_xctx *ctx, const xrec *r, bool std) {
    int src = pref(r, 0);
    if (src < 0) return fail(ctx, "has no tensor input");
    xnest e;
    int rc = reduce_over(ctx, r, src, 1, false, &e);
    if (rc) return rc;
    double corr = 1;
    if (pconst(r, 4).t == AD_TBOOL) corr = pconst(r, 4).u.b ? 1 : 0;
    else if (!pnum(r, 2, &corr)) return fail(ctx, "has a correction that is not a number");
    if (e.acct != AD_FLOAT64) return fail(ctx, "is lowered for float32 and float64 only");
    e.ct = AD_FLOAT64;
    ad_buf *b = ctx->body;
    comment(ctx, NULL);
    use(ctx, src);
    if (e.nout > 1) flatten_group(&e, 0, e.nout, &e.flat);
    else if (e.nout == 1) e.flat = true;
    if (e.nred > 1) flatten_group(&e, e.nout, e.nout + e.nred, &e.rflat);
    else if (e.nred == 1) e.rflat = true;
    char dn[32];
    ad_export_vname(ctx, e.dest, dn, sizeof dn);
    open_loops(&e, 0, e.nout, 1, b);
    int depth = 1 + (e.nout == 0 ? 0 : (e.flat ? 1 : e.nout));
    int bd = e.nout ? depth - 1 : depth, in = bd + 1, rd = in + (e.nred == 0 ? 0 : (e.rflat ? 1 : e.nred));
    double den = (double)e.count - corr;
    indent(b, bd); ad_buf_puts(b, "{\n");
    indent(b, in); ad_buf_puts(b, "double m = 0, s = 0, k = 0;\n");
    open_loops(&e, e.nout, e.nout + e.nred, in, b);
    indent(b, rd);
    render(ctx, &e, "{ double x = $0, d = x - m; k += 1; m += d / k; s += d * (x - m); }\n", NULL, b);
    indent(b, in);
    ad_buf_printf(b, "%s[", dn);
    index_expr(&e, e.doff, e.dst, true, b);
    ad_buf_printf(b, "] = (%s)(%s(s / ", ad_export_ctype(ctx->v[e.dest].dt), std ? "sqrt" : "");
    ad_export_literal(b, AD_FLOAT64, den > 0 ? den : 0);
    ad_buf_puts(b, "));\n");
    indent(b, bd); ad_buf_puts(b, "}\n");
    return ADDSL_OK;
}

/* trace(self): the sum of the diagonal of a matrix. */
static int lower_trace(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), o = out_ref(r->n);
    if (src < 0 || o < 0 || ctx->v[src].ndim != 2) return fail(ctx, "needs a matrix");
    const ad_xval *x = &ctx->v[src];
    make_buf(ctx, o);
    xnest e;
    nest_init(ctx, &e, o);
    e.nred = 1;
    e.shape[0] = x->shape[0] < x->shape[1] ? x->shape[0] : x->shape[1];
    e.acct = e.ct = x->dt == AD_FLOAT32 ? AD_FLOAT64 : x->dt;
    e.op[0].ref = src; e.op[0].off = x->off; e.op[0].st[0] = x->st[0] + x->st[1];
    e.nops = 1;
    e.expr = "$0"; e.init = "0"; e.comb = "acc += $E"; e.fin = "acc";
    comment(ctx, NULL);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* ---- matrix products ---- */

/* out[..., i, j] = sum_k a[..., i, k] * b[..., k, j] with numpy's matmul
 * rules (1-D operands promoted then squeezed, batch dims broadcast); 'bias'
 * (or -1) is added, broadcast over the output. */
static int emit_matmul_ab(ad_xctx *ctx, const xrec *r, int a, int b, bool bt, int bias, double alpha, double beta);

static int emit_matmul(ad_xctx *ctx, const xrec *r, int a, int b, bool bt, int bias) {
    return emit_matmul_ab(ctx, r, a, b, bt, bias, 1, 1);
}

/* addmm, addmv, baddbmm(self, m1, m2, beta, alpha): beta * self + alpha * (m1 @ m2) */
static int lower_addmm(ad_xctx *ctx, const xrec *r) {
    double beta = 1, alpha = 1;
    if (!pnum(r, 3, &beta) || !pnum(r, 4, &alpha)) return fail(ctx, "has a beta or alpha that is not a number");
    int self = pref(r, 0);
    if (self < 0) return fail(ctx, "needs tensor operands");
    return emit_matmul_ab(ctx, r, pref(r, 1), pref(r, 2), false, self, alpha, beta);
}

static int emit_matmul_ab(ad_xctx *ctx, const xrec *r, int a, int b, bool bt, int bias, double alpha, double beta) {
    int o = out_ref(r->n);
    if (o < 0 || a < 0 || b < 0) return fail(ctx, "needs tensor operands");
    const ad_xval *A = &ctx->v[a], *B = &ctx->v[b];
    if (A->ndim < 1 || B->ndim < 1) return fail(ctx, "needs operands of at least one dim");
    /* geometry of b as (..., k, m), transposed when bt (linear's weight is (m, k)) */
    int64_t bsh[AD_MAX_DIMS], bst[AD_MAX_DIMS];
    int bnd = B->ndim;
    for (int d = 0; d < bnd; d++) { bsh[d] = B->shape[d]; bst[d] = B->st[d]; }
    if (bt && bnd >= 2) {
        int64_t t = bsh[bnd - 1]; bsh[bnd - 1] = bsh[bnd - 2]; bsh[bnd - 2] = t;
        t = bst[bnd - 1]; bst[bnd - 1] = bst[bnd - 2]; bst[bnd - 2] = t;
    }
    int64_t n = A->ndim >= 2 ? A->shape[A->ndim - 2] : 1, kk = A->shape[A->ndim - 1];
    int64_t san = A->ndim >= 2 ? A->st[A->ndim - 2] : 0, sak = A->st[A->ndim - 1];
    int64_t m = bnd >= 2 ? bsh[bnd - 1] : 1, sbm = bnd >= 2 ? bst[bnd - 1] : 0;
    int64_t sbk = bnd >= 2 ? bst[bnd - 2] : bst[0];
    if ((bnd >= 2 ? bsh[bnd - 2] : bsh[0]) != kk) return fail(ctx, "has operands of mismatched inner sizes");
    make_buf(ctx, o);
    xnest e;
    nest_init(ctx, &e, o);
    const ad_xval *O = &ctx->v[o];
    /* output dims: batch..., [n if A is 2-D+], [m if B is 2-D+] */
    int nb = O->ndim - (A->ndim >= 2) - (bnd >= 2);
    if (nb < 0) return fail(ctx, "has an output of unexpected rank");
    xoperand *oa = &e.op[0], *ob = &e.op[1];
    memset(oa, 0, sizeof *oa); memset(ob, 0, sizeof *ob);
    oa->ref = a; oa->off = A->off; ob->ref = b; ob->off = B->off;
    for (int d = 0; d < nb; d++) {
        int da = A->ndim - 2 - nb + d, db = bnd - 2 - nb + d;
        if (da >= 0 && A->ndim >= 3) oa->st[d] = A->shape[da] == 1 ? 0 : A->st[da];
        if (db >= 0 && bnd >= 3) ob->st[d] = bsh[db] == 1 ? 0 : bst[db];
    }
    int k = nb;
    if (A->ndim >= 2) { oa->st[k] = san; k++; }
    if (bnd >= 2) { ob->st[k] = sbm; k++; }
    e.nred = 1;
    e.shape[e.nout] = kk;
    oa->st[e.nout] = sak; ob->st[e.nout] = sbk;
    e.nops = 2;
    e.acct = O->dt == AD_FLOAT32 ? AD_FLOAT64 : O->dt;
    e.ct = e.acct;
    e.expr = "$0 * $1"; e.init = "0"; e.comb = "acc += $E"; e.fin = "acc";
    if (bias >= 0) {
        add_bcast(ctx, &e, bias);
        e.fin = "acc + $2";
        if (alpha != 1 || beta != 1) {
            add_lit(&e, alpha);
            add_lit(&e, beta);
            /* torch ignores self when beta is 0 (no nan from it) */
            e.fin = beta == 0 ? "$3 * acc" : "$3 * acc + $4 * $2";
        }
    } else if (alpha != 1) {
        add_lit(&e, 0);
        add_lit(&e, alpha);
        e.fin = "$3 * acc";
    }
    if (ctx->blas) {
        ad_xgemm g = {nb, n, m, kk, san, sak, sbk, sbm, bias, alpha, bias >= 0 ? beta : 0};
        if (ad_export_gemm(ctx, &e, &g, rec_name(r->n))) return ADDSL_OK;
    }
    comment(ctx, NULL);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

static int lower_outer(ad_xctx *ctx, const xrec *r) {
    int a = pref(r, 0), b = pref(r, 1), o = out_ref(r->n);
    if (a < 0 || b < 0 || o < 0) return fail(ctx, "needs tensor operands");
    make_buf(ctx, o);
    xnest e;
    nest_init(ctx, &e, o);
    e.op[0].ref = a; e.op[0].off = ctx->v[a].off; e.op[0].st[0] = ctx->v[a].st[0];
    e.op[1].ref = b; e.op[1].off = ctx->v[b].off; e.op[1].st[1] = ctx->v[b].st[0];
    e.nops = 2;
    e.expr = "$0 * $1";
    comment(ctx, NULL);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* ---- views ---- */

static int view_from(ad_xctx *ctx, const xrec *r, int src, int nd, const int64_t *shape, const int64_t *st, int64_t off) {
    int o = out_ref(r->n);
    if (o < 0) return fail(ctx, "has no tensor output");
    make_view(ctx, o, src, nd, shape, st, off);
    ad_buf_printf(ctx->body, "    /* %s:%d:%d %s: %%%d is a view of %%%d (index arithmetic, no copy) */\n", ctx->chunk,
                  r->n->line, r->n->col, rec_name(r->n), o, src);
    return ADDSL_OK;
}

/* The output's shape is the record's; a contiguous source is re-viewed, any
 * other is copied into the output in element order. */
static int lower_reshape(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), o = out_ref(r->n);
    if (src < 0 || o < 0) return fail(ctx, "has no tensor input or output");
    const ad_xval *x = &ctx->v[src];
    ad_xval *y = &ctx->v[o];
    if (is_contig(x)) {
        int64_t st[AD_MAX_DIMS];
        contiguous_st(y, st);
        int64_t shape[AD_MAX_DIMS];
        memcpy(shape, y->shape, sizeof shape);
        return view_from(ctx, r, src, y->ndim, shape, st, x->off);
    }
    make_buf(ctx, o);
    xnest e;
    memset(&e, 0, sizeof e);
    e.dest = o;
    e.nout = x->ndim;
    for (int d = 0; d < x->ndim; d++) e.shape[d] = x->shape[d];
    int64_t s = 1;
    for (int d = x->ndim - 1; d >= 0; d--) { e.dst[d] = s; s *= x->shape[d]; }
    e.ct = e.acct = x->dt;
    e.expr = "$0";
    add_bcast(ctx, &e, src);
    comment(ctx, "a copy in element order");
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

static int lower_permute(ad_xctx *ctx, const xrec *r, const int *perm) {
    int src = pref(r, 0);
    const ad_xval *x = &ctx->v[src];
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) { sh[d] = x->shape[perm[d]]; st[d] = x->st[perm[d]]; }
    return view_from(ctx, r, src, x->ndim, sh, st, x->off);
}

static int lower_transpose(ad_xctx *ctx, const xrec *r, bool t) {
    int src = pref(r, 0);
    if (src < 0) return fail(ctx, "has no tensor input");
    const ad_xval *x = &ctx->v[src];
    int perm[AD_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) perm[d] = d;
    if (x->ndim < 2) return lower_permute(ctx, r, perm);
    int64_t d0 = 0, d1 = 1;
    if (!t) {
        double a, b;
        if (!pnum(r, 1, &a) || !pnum(r, 2, &b)) return fail(ctx, "has dims that are not ints");
        d0 = wrap_dim((int64_t)a, x->ndim); d1 = wrap_dim((int64_t)b, x->ndim);
    }
    if (d0 < 0 || d1 < 0 || d0 >= x->ndim || d1 >= x->ndim) return fail(ctx, "has a dim out of range");
    perm[d0] = (int)d1; perm[d1] = (int)d0;
    return lower_permute(ctx, r, perm);
}

static int lower_permute_op(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0);
    if (src < 0) return fail(ctx, "has no tensor input");
    int64_t dims[AD_MAX_DIMS];
    int nd;
    const ad_xval *x = &ctx->v[src];
    if (!pints(r, 1, dims, &nd) || nd != x->ndim) return fail(ctx, "has dims that are not a permutation");
    int perm[AD_MAX_DIMS];
    for (int d = 0; d < nd; d++) perm[d] = wrap_dim(dims[d], nd);
    return lower_permute(ctx, r, perm);
}

/* expand, broadcast_to, expand_as: stride 0 on the new and the stretched dims. */
static int lower_expand(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), o = out_ref(r->n);
    if (src < 0 || o < 0) return fail(ctx, "has no tensor input or output");
    const ad_xval *x = &ctx->v[src], *y = &ctx->v[o];
    int64_t st[AD_MAX_DIMS] = {0}, sh[AD_MAX_DIMS];
    for (int d = 0; d < y->ndim; d++) {
        sh[d] = y->shape[d];
        int k = d - (y->ndim - x->ndim);
        if (k >= 0) st[d] = x->shape[k] == y->shape[d] ? x->st[k] : 0;
    }
    return view_from(ctx, r, src, y->ndim, sh, st, x->off);
}

/* movedim/moveaxis(self, source, destination): the permutation that puts
 * each source dim at its destination, the others in order. */
static int lower_movedim(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0);
    int64_t a[AD_MAX_DIMS], b[AD_MAX_DIMS];
    int na = 0, nb = 0;
    if (src < 0 || !pints(r, 1, a, &na) || !pints(r, 2, b, &nb) || na != nb) return fail(ctx, "has dims that are not ints");
    const ad_xval *x = &ctx->v[src];
    int nd = x->ndim, perm[AD_MAX_DIMS];
    bool used[AD_MAX_DIMS] = {false}, placed[AD_MAX_DIMS] = {false};
    for (int i = 0; i < nd; i++) perm[i] = -1;
    for (int i = 0; i < na; i++) {
        int s0 = wrap_dim(a[i], nd), d0 = wrap_dim(b[i], nd);
        if (s0 < 0 || d0 < 0 || s0 >= nd || d0 >= nd) return fail(ctx, "has a dim out of range");
        perm[d0] = s0; used[s0] = true; placed[d0] = true;
    }
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if (placed[d]) continue;
        while (k < nd && used[k]) k++;
        perm[d] = k++;
    }
    return lower_permute(ctx, r, perm);
}

/* repeat(self, *repeats), tile(self, *dims): each output dim d of size
 * k*n is two loop dims (k, n), so the copy stays index arithmetic. */
static int lower_repeat(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), o = out_ref(r->n);
    if (src < 0 || o < 0) return fail(ctx, "has no tensor input or output");
    const ad_xval *x = &ctx->v[src], *y = &ctx->v[o];
    if (2 * y->ndim > XMAX_LOOP) return fail(ctx, "has too many dims");
    make_buf(ctx, o);
    xnest e;
    memset(&e, 0, sizeof e);
    e.dest = o;
    e.nout = 2 * y->ndim;
    int64_t yst[AD_MAX_DIMS];
    contiguous_st(y, yst);
    xoperand *op = &e.op[0];
    op->ref = src; op->off = x->off;
    e.nops = 1;
    for (int d = 0; d < y->ndim; d++) {
        int k = d - (y->ndim - x->ndim);
        int64_t n = k >= 0 ? x->shape[k] : 1;
        int64_t reps = n ? y->shape[d] / n : 0;
        e.shape[2 * d] = reps; e.shape[2 * d + 1] = n;
        e.dst[2 * d] = n * yst[d]; e.dst[2 * d + 1] = yst[d];
        op->st[2 * d] = 0; op->st[2 * d + 1] = k >= 0 ? x->st[k] : 0;
    }
    e.ct = e.acct = y->dt;
    e.expr = "$0";
    comment(ctx, NULL);
    if (y->numel) emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* squeeze, unsqueeze: the output's shape with strides carried over. */
static int lower_squeeze_like(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), o = out_ref(r->n);
    if (src < 0 || o < 0) return fail(ctx, "has no tensor input or output");
    const ad_xval *x = &ctx->v[src], *y = &ctx->v[o];
    /* match the non-1 dims in order; 1-dims get any stride */
    int64_t st[AD_MAX_DIMS] = {0}, sh[AD_MAX_DIMS];
    int k = 0;
    for (int d = 0; d < y->ndim; d++) {
        sh[d] = y->shape[d];
        if (y->shape[d] == 1) { st[d] = 0; continue; }
        while (k < x->ndim && x->shape[k] == 1) k++;
        if (k >= x->ndim || x->shape[k] != y->shape[d]) return fail(ctx, "has shapes the exporter cannot match");
        st[d] = x->st[k++];
    }
    return view_from(ctx, r, src, y->ndim, sh, st, x->off);
}

static int lower_select(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0);
    double dd, ii;
    if (src < 0 || !pnum(r, 1, &dd) || !pnum(r, 2, &ii)) return fail(ctx, "has a dim or index that is not an int");
    const ad_xval *x = &ctx->v[src];
    int d = wrap_dim((int64_t)dd, x->ndim);
    if (d < 0 || d >= x->ndim) return fail(ctx, "has a dim out of range");
    int64_t i = (int64_t)ii < 0 ? (int64_t)ii + x->shape[d] : (int64_t)ii;
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS];
    int k = 0;
    for (int j = 0; j < x->ndim; j++) if (j != d) { sh[k] = x->shape[j]; st[k] = x->st[j]; k++; }
    return view_from(ctx, r, src, k, sh, st, x->off + i * x->st[d]);
}

/* flip(self, dims): negative strides from the last element of each flipped dim. */
static int lower_flip(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0);
    int64_t dims[AD_MAX_DIMS];
    int nd = 0;
    if (src < 0 || !pints(r, 1, dims, &nd)) return fail(ctx, "has dims that are not ints");
    const ad_xval *x = &ctx->v[src];
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS], off = x->off;
    for (int j = 0; j < x->ndim; j++) { sh[j] = x->shape[j]; st[j] = x->st[j]; }
    for (int i = 0; i < nd; i++) {
        int d = wrap_dim(dims[i], x->ndim);
        if (d < 0 || d >= x->ndim) return fail(ctx, "has a dim out of range");
        if (sh[d] > 0) off += (sh[d] - 1) * st[d];
        st[d] = -st[d];
    }
    return view_from(ctx, r, src, x->ndim, sh, st, x->numel ? off : x->off);
}

static int lower_narrow(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0);
    double dd, s0, len;
    if (src < 0 || !pnum(r, 1, &dd) || !pnum(r, 2, &s0) || !pnum(r, 3, &len)) return fail(ctx, "has arguments that are not ints");
    const ad_xval *x = &ctx->v[src];
    int d = wrap_dim((int64_t)dd, x->ndim);
    if (d < 0 || d >= x->ndim) return fail(ctx, "has a dim out of range");
    int64_t start = (int64_t)s0 < 0 ? (int64_t)s0 + x->shape[d] : (int64_t)s0;
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS];
    for (int j = 0; j < x->ndim; j++) { sh[j] = x->shape[j]; st[j] = x->st[j]; }
    sh[d] = (int64_t)len;
    return view_from(ctx, r, src, x->ndim, sh, st, x->off + start * x->st[d]);
}

static int lower_diagonal(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), o = out_ref(r->n);
    double off = 0, a = 0, b = 1;
    if (src < 0 || o < 0 || !pnum(r, 1, &off) || !pnum(r, 2, &a) || !pnum(r, 3, &b)) return fail(ctx, "has arguments that are not ints");
    const ad_xval *x = &ctx->v[src];
    int d1 = wrap_dim((int64_t)a, x->ndim), d2 = wrap_dim((int64_t)b, x->ndim);
    if (d1 < 0 || d2 < 0 || d1 >= x->ndim || d2 >= x->ndim || d1 == d2) return fail(ctx, "has dims out of range");
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS], base = x->off;
    int k = 0;
    for (int j = 0; j < x->ndim; j++) if (j != d1 && j != d2) { sh[k] = x->shape[j]; st[k] = x->st[j]; k++; }
    int64_t of = (int64_t)off;
    if (of >= 0) base += of * x->st[d2]; else base -= of * x->st[d1];
    sh[k] = ctx->v[o].shape[ctx->v[o].ndim - 1];
    st[k] = x->st[d1] + x->st[d2];
    k++;
    return view_from(ctx, r, src, k, sh, st, sh[k - 1] ? base : x->off);
}

/* diag(self, diagonal): diag_embed of a vector, the diagonal of a matrix, over dims 0 and 1. */
static int lower_diag(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0);
    if (src < 0 || r->np < 2) return fail(ctx, "has no tensor input");
    xrec q = *r;
    q.np = 4;
    q.p[2].a = q.p[3].a = NULL;
    q.p[2].c = ad_int(0);
    q.p[3].c = ad_int(1);
    return ctx->v[src].ndim == 1 ? lower_diag_embed(ctx, &q) : lower_diagonal(ctx, &q);
}

/* The view t[idx] selects of 'x' for an index of ints, slices, none and
 * '...' (basic indexing): its shape, strides and offset. */
static int basic_index_view(ad_xctx *ctx, const ad_xval *x, const ad_targ *ix, int64_t *sh, int64_t *st, int64_t *offp,
                            int *ndp) {
    if (!ix || ix->ref >= 0 || ix->sub) return fail(ctx, "with a tensor index (advanced indexing) is not lowered");
    ad_value iv = ix->c;
    int nidx = ad_is_seq(iv) ? (int)iv.u.l->len : 1;
    const ad_value *items = ad_is_seq(iv) ? iv.u.l->items : &iv;
    int used = 0;
    for (int i = 0; i < nidx; i++)
        if (items[i].t != AD_TNONE && items[i].t != AD_TELLIPSIS) used++;
    int64_t off = x->off;
    int k = 0, d = 0;
    for (int i = 0; i < nidx; i++) {
        ad_value it = items[i];
        if (it.t == AD_TNONE) { if (k == AD_MAX_DIMS) return fail(ctx, "has too many dims"); sh[k] = 1; st[k] = 0; k++; continue; }
        if (it.t == AD_TELLIPSIS) {
            for (int j = 0; j < x->ndim - used; j++, d++) { sh[k] = x->shape[d]; st[k] = x->st[d]; k++; }
            continue;
        }
        if (d >= x->ndim) return fail(ctx, "has too many indices");
        if (ad_is_number(it)) {
            int64_t v = (int64_t)it.u.n;
            if (v < 0) v += x->shape[d];
            off += v * x->st[d];
            d++;
            continue;
        }
        if (it.t != AD_TSLICE) return fail(ctx, "has an index kind that is not lowered");
        const ad_slice *sl = (const ad_slice *)it.u.o;
        int64_t n = x->shape[d];
        int64_t step = sl->step.t == AD_TNONE ? 1 : (int64_t)sl->step.u.n;
        if (step <= 0) return fail(ctx, "has a slice step that is not positive");
        int64_t a;
        sh[k] = ad_slice_span(n, sl->start.t == AD_TNONE ? 0 : (int64_t)sl->start.u.n,
                              sl->stop.t == AD_TNONE ? n : (int64_t)sl->stop.u.n, step, &a);
        st[k] = x->st[d] * step;
        off += a * x->st[d];
        k++; d++;
    }
    for (; d < x->ndim; d++) { sh[k] = x->shape[d]; st[k] = x->st[d]; k++; }
    *offp = off;
    *ndp = k;
    return ADDSL_OK;
}

/* t[idx] with ints, slices, none and '...': a view. */
static int lower_index_get(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0);
    if (src < 0 || r->np < 2) return fail(ctx, "has no tensor input");
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS], off;
    int k;
    int rc = basic_index_view(ctx, &ctx->v[src], r->p[1].a, sh, st, &off, &k);
    return rc ? rc : view_from(ctx, r, src, k, sh, st, off);
}

/* index_add_at(self, idx, value) with a basic index (the VJP of t[idx]): a
 * copy of self, then value (broadcast) added over the view self[idx]. A basic
 * index names each element once, so the add reads and writes one element. */
static int lower_index_add_at(ad_xctx *ctx, const xrec *r) {
    int src = pref(r, 0), val = pref(r, 2), o = out_ref(r->n);
    if (src < 0 || o < 0 || r->np < 3) return fail(ctx, "needs a tensor self and output");
    double lit = 0;
    if (val < 0 && !pnum(r, 2, &lit)) return fail(ctx, "has a value that is neither a tensor nor a number");
    make_buf(ctx, o);
    const ad_xval *y = &ctx->v[o];
    int64_t sh[AD_MAX_DIMS], st[AD_MAX_DIMS], off;
    int k;
    int rc = basic_index_view(ctx, y, r->p[1].a, sh, st, &off, &k);
    if (rc) return rc;
    xnest e;
    nest_init(ctx, &e, o);
    e.expr = "$0";
    add_bcast(ctx, &e, src);
    comment(ctx, "a copy, then the value added at the index");
    emit_nest(ctx, &e);
    int64_t n = 1;
    for (int d = 0; d < k; d++) n *= sh[d];
    if (!n) return ADDSL_OK;
    memset(&e, 0, sizeof e);
    e.dest = o;
    e.nout = k;
    e.doff = off;
    for (int d = 0; d < k; d++) { e.shape[d] = sh[d]; e.dst[d] = st[d]; }
    e.ct = e.acct = y->dt;
    e.expr = "$0 + $1";
    xoperand *op = &e.op[e.nops++];
    op->ref = o; op->off = off;
    for (int d = 0; d < k; d++) op->st[d] = st[d];
    if (val >= 0) add_bcast(ctx, &e, val);
    else add_lit(&e, lit);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* ---- cat, stack ---- */

static int lower_cat(ad_xctx *ctx, const xrec *r, bool stack) {
    int o = out_ref(r->n);
    const ad_targ *ts = r->np > 0 ? r->p[0].a : NULL;
    double dd = 0;
    if (o < 0 || !ts || !ts->sub || !pnum(r, 1, &dd)) return fail(ctx, "needs a list of tensors and an int dim");
    make_buf(ctx, o);
    const ad_xval *y = &ctx->v[o];
    int d = wrap_dim((int64_t)dd, y->ndim);
    if (d < 0 || d >= y->ndim) return fail(ctx, "has a dim out of range");
    comment(ctx, NULL);
    int64_t pos = 0;
    for (int i = 0; i < ts->nsub; i++) {
        int s = ts->sub[i].ref;
        if (s < 0) return fail(ctx, "has a list item that is not a tensor");
        const ad_xval *x = &ctx->v[s];
        if (!stack && x->ndim == 1 && x->shape[0] == 0 && y->ndim != 1) continue; /* legacy empty operand */
        xnest e;
        nest_init(ctx, &e, o);
        e.expr = "$0";
        xoperand *op = &e.op[0];
        memset(op, 0, sizeof *op);
        op->ref = s; op->off = x->off;
        e.nops = 1;
        int64_t len = stack ? 1 : x->shape[d];
        e.shape[d] = len;
        for (int j = 0, k = 0; j < y->ndim; j++) {
            if (stack && j == d) { op->st[j] = 0; continue; }
            op->st[j] = x->st[k++];
        }
        e.doff = pos * e.dst[d];
        pos += len;
        emit_nest(ctx, &e);
    }
    return ADDSL_OK;
}

/* ---- ops along one dim: softmax family, scans ---- */

typedef enum { ROW_SOFTMAX, ROW_LOG_SOFTMAX, ROW_LOGSUMEXP, ROW_CUMSUM, ROW_CUMPROD } row_kind;

/* One loop over the rows (every index of the other dims), each read through
 * the input's strides from 'at' and written at o*n*inner + r*inner + p. */
static int lower_rows(ad_xctx *ctx, const xrec *r, row_kind kind) {
    int src = pref(r, 0), o = out_ref(r->n);
    if (src < 0 || o < 0) return fail(ctx, "has no tensor input or output");
    const ad_xval *x = &ctx->v[src];
    int64_t dims[AD_MAX_DIMS];
    int nd = 0;
    if (!pints(r, 1, dims, &nd) || nd != 1) return fail(ctx, "needs one int dim");
    int d = x->ndim ? wrap_dim(dims[0], x->ndim) : 0;
    if (x->ndim && (d < 0 || d >= x->ndim)) return fail(ctx, "has a dim out of range");
    ad_dtype dt = ctx->v[o].dt;
    bool scan = kind == ROW_CUMSUM || kind == ROW_CUMPROD;
    if (dt != AD_FLOAT32 && dt != AD_FLOAT64 && !(scan && dt == AD_INT64)) return fail(ctx, "is lowered for float32 and float64 only");
    make_buf(ctx, o);
    char in[32], out[32];
    ad_export_vname(ctx, src, in, sizeof in);
    ad_export_vname(ctx, o, out, sizeof out);
    use(ctx, src);
    if (x->numel) ctx->v[ctx->v[src].base].read = true;
    int64_t n = x->ndim ? x->shape[d] : 1, sd = x->ndim ? x->st[d] : 0;
    int64_t outer = 1, inner = 1;
    for (int j = 0; j < x->ndim; j++) { if (j < d) outer *= x->shape[j]; else if (j > d) inner *= x->shape[j]; }
    comment(ctx, NULL);
    ad_buf *b = ctx->body;
    const char *ct = ad_export_ctype(dt);
    if (x->numel == 0) {
        /* no rows, or empty rows: logsumexp of an empty row is -inf */
        if (kind == ROW_LOGSUMEXP && ctx->v[o].numel)
            ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) %s[i] = -HUGE_VAL;\n", (long long)ctx->v[o].numel, out);
        return ADDSL_OK;
    }
    ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) {\n", (long long)(outer * inner));
    ad_buf_printf(b, "        long o = i / %lld, p = i %% %lld, at = %lld, q;\n", (long long)inner, (long long)inner,
                  (long long)x->off);
    /* the row's start: o unravelled over the dims before d, p over those after */
    ad_buf_puts(b, "        q = o;\n");
    for (int j = d - 1; j >= 0; j--)
        ad_buf_printf(b, "        at += (q %% %lld) * %lld; q /= %lld;\n", (long long)x->shape[j], (long long)x->st[j],
                      (long long)x->shape[j]);
    ad_buf_puts(b, "        q = p;\n");
    for (int j = x->ndim - 1; j > d; j--)
        ad_buf_printf(b, "        at += (q %% %lld) * %lld; q /= %lld;\n", (long long)x->shape[j], (long long)x->st[j],
                      (long long)x->shape[j]);
    ad_buf_puts(b, "        (void)q;\n");
    char dst[96];
    snprintf(dst, sizeof dst, "%s[o*%lld + r*%lld + p]", out, (long long)(n * inner), (long long)inner);
    if (scan) {
        ad_buf_printf(b, "        %s acc = %s;\n", dt == AD_INT64 ? "int64_t" : "double", kind == ROW_CUMSUM ? "0" : "1");
        ad_buf_printf(b, "        for (long r = 0; r < %lld; r++) {\n", (long long)n);
        ad_buf_printf(b, "            acc %s %s[at + r*%lld];\n", kind == ROW_CUMSUM ? "+=" : "*=", in, (long long)sd);
        ad_buf_printf(b, "            %s = (%s)acc;\n        }\n    }\n", dst, ct);
        return ADDSL_OK;
    }
    ad_buf_printf(b, "        double m = -HUGE_VAL, s = 0;\n");
    ad_buf_printf(b, "        for (long r = 0; r < %lld; r++) if (%s[at + r*%lld] > m) m = %s[at + r*%lld];\n", (long long)n, in,
                  (long long)sd, in, (long long)sd);
    ad_buf_printf(b, "        if (m == -HUGE_VAL) m = 0;\n");
    ad_buf_printf(b, "        for (long r = 0; r < %lld; r++) s += exp(%s[at + r*%lld] - m);\n", (long long)n, in, (long long)sd);
    if (kind == ROW_LOGSUMEXP)
        ad_buf_printf(b, "        %s[i] = (%s)(m + log(s));\n", out, ct);
    else if (kind == ROW_LOG_SOFTMAX)
        ad_buf_printf(b, "        for (long r = 0; r < %lld; r++) %s = (%s)(%s[at + r*%lld] - m - log(s));\n", (long long)n, dst, ct,
                      in, (long long)sd);
    else
        ad_buf_printf(b, "        for (long r = 0; r < %lld; r++) %s = (%s)(exp(%s[at + r*%lld] - m) / s);\n", (long long)n, dst, ct,
                      in, (long long)sd);
    ad_buf_puts(b, "    }\n");
    return ADDSL_OK;
}

/* mse_loss, l1_loss, huber_loss(delta), smooth_l1_loss(beta): (input, target, reduction, [param]) */
static int lower_loss(ad_xctx *ctx, const xrec *r, const char *elem, bool param) {
    ad_value red = pconst(r, 2);
    const char *m = red.t == AD_TSTR ? red.u.s->data : "mean";
    int a = pref(r, 0), b = pref(r, 1), o = out_ref(r->n);
    if (a < 0 || b < 0 || o < 0) return fail(ctx, "needs tensor operands");
    double prm = 1;
    if (param && !pnum(r, 3, &prm)) return fail(ctx, "has a parameter that is not a number");
    if (strcmp(m, "none") == 0) {
        if (!param) return emit_map(ctx, r, 2, elem, ctx->v[o].dt, 0);
        xrec q = *r;
        q.p[2] = q.p[3];
        return emit_map(ctx, &q, 3, elem, ctx->v[o].dt, 0);
    }
    const ad_xval *x = &ctx->v[a];
    if (ctx->v[b].ndim != x->ndim) return fail(ctx, "with broadcast operands is not lowered");
    for (int d = 0; d < x->ndim; d++) if (ctx->v[b].shape[d] != x->shape[d]) return fail(ctx, "with broadcast operands is not lowered");
    make_buf(ctx, o);
    xnest e;
    nest_init(ctx, &e, o);
    e.nred = x->ndim;
    e.count = x->numel;
    for (int d = 0; d < x->ndim; d++) {
        e.shape[d] = x->shape[d];
        e.op[0].st[d] = x->st[d];
        e.op[1].st[d] = ctx->v[b].st[d];
    }
    e.op[0].ref = a; e.op[0].off = x->off;
    e.op[1].ref = b; e.op[1].off = ctx->v[b].off;
    e.nops = 2;
    if (param) add_lit(&e, prm);
    e.acct = e.ct = ctx->v[o].dt == AD_FLOAT32 ? AD_FLOAT64 : ctx->v[o].dt;
    e.expr = elem; e.init = "0"; e.comb = "acc += $E";
    e.fin = strcmp(m, "sum") == 0 ? "acc" : "acc / $N";
    comment(ctx, NULL);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* ---- kernels of the host ---- */

/* An op whose forward is a kernel the host registered or a script bound with
 * 'extern', of the element-wise shape v(p out, p in..., i64 n): declared
 * extern with that signature, and called as the op's forward calls it. The
 * program that links the exported file provides the function. */
static int lower_extern(ad_xctx *ctx, const xrec *r) {
    const ad_tnode *n = r->n;
    ad_value fw = n->kind == AD_TN_OP ? n->fn.u.op->forward : ad_none();
    if (fw.t != AD_TBUILTIN || fw.u.bi->kid < AD_K_COUNT) return fail(ctx, "has no C form");
    int kid = fw.u.bi->kid, na = ad_kreg_nargs(ctx->S, kid);
    const char *kn = ad_kreg_name(ctx->S, kid);
    bool ok = na >= 2 && ad_kreg_argtype(ctx->S, kid, -1) == AD_KT_VOID && ad_kreg_argtype(ctx->S, kid, na - 1) == AD_KT_I64;
    for (int i = 0; i < na - 1 && ok; i++) ok = ad_kreg_argtype(ctx->S, kid, i) == AD_KT_PTR;
    if (!ok) return fail(ctx, "calls a kernel whose signature is not v(p, p..., i64)");
    int o = out_ref(n);
    char decl[160], call[64];
    int k = snprintf(decl, sizeof decl, "extern void %s(", kn);
    for (int i = 0; i < na && k < (int)sizeof decl; i++)
        k += snprintf(decl + k, sizeof decl - (size_t)k, "%s%s", i ? ", " : "", i == na - 1 ? "int64_t" : "void *");
    if (k < (int)sizeof decl) snprintf(decl + k, sizeof decl - (size_t)k, ");\n");
    for (int i = 0; i < na - 2; i++) {
        int ref = pref(r, i);
        if (ref < 0 || !is_contig(&ctx->v[ref])) return fail(ctx, "passes a kernel an argument that is not a contiguous tensor");
    }
    make_buf(ctx, o);
    if (!ctx->decls->data || !strstr(ctx->decls->data, decl)) ad_buf_puts(ctx->decls, decl);
    comment(ctx, "a kernel of the host, declared extern");
    ad_export_vname(ctx, o, call, sizeof call);
    ad_buf_printf(ctx->body, "    %s(%s", kn, call);
    for (int i = 0; i < na - 2; i++) {
        int ref = pref(r, i);
        char nm[32];
        ad_export_vname(ctx, ref, nm, sizeof nm);
        use(ctx, ref);
        ctx->v[ctx->v[ref].base].read = true;
        ad_buf_printf(ctx->body, ", (void *)(%s + %lld)", nm, (long long)ctx->v[ref].off);
    }
    ad_buf_printf(ctx->body, ", %lld);\n", (long long)ctx->v[o].numel);
    return ADDSL_OK;
}

/* ---- the table ---- */

/* The row of ew_table for an op id (the element-wise ops are found by name there). */
static const ew_row *ew_find(int id) {
    const char *nm = ad_op_id_name(id);
    if (!nm) return NULL;
    for (const ew_row *row = ew_table; row->name; row++) if (strcmp(row->name, nm) == 0) return row;
    return NULL;
}

/* The lowerings of the sub-lowerers (vm/export/lower_*.c), each passing
 * (AD_XL_PASS) on records it does not lower. */
static int sub_lowerers(ad_xctx *ctx, const xrec *r) {
    int xl = ad_export_lower_index(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_lower_multi(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_lower_linalg(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_lower_conv(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_lower_fft(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_lower_inplace(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_lower_special(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_lower_scatter(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_lower_loss(ctx, r);
    if (xl == AD_XL_PASS) xl = ad_export_refuse(ctx, r);
    return xl;
}

/* The ops this file lowers itself, by id (an alias's record has its op's id).
 * With ctx NULL only says which: ADDSL_OK for an id it lowers, else AD_XL_PASS. */
#define L(call) (ctx ? (call) : ADDSL_OK)
static int lower_op(ad_xctx *ctx, const xrec *r, int id) {
    double x;
    switch (id) {
    case AD_OP_add: return L(lower_addsub(ctx, r, false));
    case AD_OP_sub: return L(lower_addsub(ctx, r, true));
    case AD_OP_rsub: return L(lower_rsub(ctx, r));
    case AD_OP_div: return L(lower_div(ctx, r));
    case AD_OP_clamp: return L(lower_clamp(ctx, r));
    case AD_OP_clamp_min: return L(lower_clamp_one(ctx, r, false));
    case AD_OP_clamp_max: return L(lower_clamp_one(ctx, r, true));
    case AD_OP_hardtanh: return L(lower_clamp_bounds(ctx, r, true));
    case AD_OP_relu6: return L(lower_relu6(ctx, r));
    /* a C function cannot raise: an index out of range is clamped */
    case AD_OP__index_check: return L(lower_clamp_bounds(ctx, r, false));
    case AD_OP_float_power: return L(lower_float_power(ctx, r));
    case AD_OP_masked_fill: return L(lower_masked_fill(ctx, r));
    case AD_OP_gelu: return L(lower_gelu(ctx, r));
    case AD_OP_float: case AD_OP_double: case AD_OP_long: case AD_OP_to: case AD_OP_type_as: return L(lower_convert(ctx, r));
    case AD_OP_clone: case AD_OP_contiguous: case AD_OP_detach: return L(alias_of(ctx, r, pref(r, 0)));
    case AD_OP_zeros: case AD_OP_ones: case AD_OP_empty: case AD_OP_full: return L(lower_create(ctx, r, id));
    case AD_OP_tril: return L(lower_tri(ctx, r, true));
    case AD_OP_triu: return L(lower_tri(ctx, r, false));
    case AD_OP_diag_embed: return L(lower_diag_embed(ctx, r));
    case AD_OP_zeros_like: return L(lower_fill(ctx, r, 0));
    case AD_OP_ones_like: return L(lower_fill(ctx, r, 1));
    case AD_OP_full_like:
        if (!ctx) return ADDSL_OK;
        if (!pnum(r, 1, &x)) return fail(ctx, "needs a number fill value");
        return lower_fill(ctx, r, x);
    case AD_OP_sum: case AD_OP_nansum: case AD_OP_mean: case AD_OP_prod: case AD_OP_amax: case AD_OP_amin:
    case AD_OP_max_all: case AD_OP_min_all:
        return L(lower_reduce(ctx, r, id));
    case AD_OP_trace: return L(lower_trace(ctx, r));
    case AD_OP_addmm: case AD_OP_addmv: case AD_OP_baddbmm: return L(lower_addmm(ctx, r));
    case AD_OP_movedim: return L(lower_movedim(ctx, r));
    case AD_OP_repeat: case AD_OP_tile: return L(lower_repeat(ctx, r));
    case AD_OP_var: return L(lower_var(ctx, r, false));
    case AD_OP_std: return L(lower_var(ctx, r, true));
    case AD_OP_matmul: case AD_OP_mm: case AD_OP_bmm: case AD_OP_mv: case AD_OP_dot:
        return L(emit_matmul(ctx, r, pref(r, 0), pref(r, 1), false, -1));
    case AD_OP_linear: return L(emit_matmul(ctx, r, pref(r, 0), pref(r, 1), true, pref(r, 2)));
    case AD_OP_outer: return L(lower_outer(ctx, r));
    case AD_OP_reshape: case AD_OP_view: case AD_OP_flatten: case AD_OP_ravel: case AD_OP_unflatten:
    case AD_OP_reshape_as: case AD_OP_view_as:
        return L(lower_reshape(ctx, r));
    case AD_OP_t: return L(lower_transpose(ctx, r, true));
    case AD_OP_transpose: return L(lower_transpose(ctx, r, false));
    case AD_OP_permute: return L(lower_permute_op(ctx, r));
    case AD_OP_expand: case AD_OP_broadcast_to: case AD_OP_expand_as: return L(lower_expand(ctx, r));
    case AD_OP_squeeze: case AD_OP_unsqueeze: return L(lower_squeeze_like(ctx, r));
    case AD_OP_select: return L(lower_select(ctx, r));
    case AD_OP_narrow: return L(lower_narrow(ctx, r));
    case AD_OP_diagonal: return L(lower_diagonal(ctx, r));
    case AD_OP_diag: return L(lower_diag(ctx, r));
    case AD_OP_index_get: return L(lower_index_get(ctx, r));
    case AD_OP_index_add_at: return L(lower_index_add_at(ctx, r));
    case AD_OP_cat: return L(lower_cat(ctx, r, false));
    case AD_OP_stack: return L(lower_cat(ctx, r, true));
    case AD_OP_softmax: return L(lower_rows(ctx, r, ROW_SOFTMAX));
    case AD_OP_log_softmax: return L(lower_rows(ctx, r, ROW_LOG_SOFTMAX));
    case AD_OP_logsumexp: return L(lower_rows(ctx, r, ROW_LOGSUMEXP));
    case AD_OP_cumsum: return L(lower_rows(ctx, r, ROW_CUMSUM));
    case AD_OP_cumprod: return L(lower_rows(ctx, r, ROW_CUMPROD));
    case AD_OP_mse_loss: return L(lower_loss(ctx, r, "($0 - $1) * ($0 - $1)", false));
    case AD_OP_l1_loss: return L(lower_loss(ctx, r, "fabs$F($0 - $1)", false));
    case AD_OP_huber_loss:
        return L(lower_loss(ctx, r, "(fabs$F($0 - $1) < $2 ? 0.5$F * ($0 - $1) * ($0 - $1) : $2 * (fabs$F($0 - $1) - 0.5$F * $2))", true));
    case AD_OP_smooth_l1_loss:
        return L(lower_loss(ctx, r, "(fabs$F($0 - $1) < $2 ? 0.5$F * ($0 - $1) * ($0 - $1) / $2 : fabs$F($0 - $1) - 0.5$F * $2)", true));
    case AD_OP_round: return L(lower_round(ctx, r));
    case AD_OP_logit: return L(lower_logit(ctx, r));
    case AD_OP_norm: return L(lower_norm(ctx, r, false));
    case AD_OP_linalg_vector_norm: return L(lower_norm(ctx, r, true));
    case AD_OP_flip: return L(lower_flip(ctx, r));
    default: return AD_XL_PASS;
    }
}
#undef L

bool ad_export_lowers_id(int id) {
    /* the comparisons by name (eq(a, b)) and the table's element-wise ops */
    switch (id) {
    case AD_OP_eq: case AD_OP_ne: case AD_OP_lt: case AD_OP_le: case AD_OP_gt: case AD_OP_ge: return true;
    default: break;
    }
    const char *name = ad_op_id_name(id);
    return ew_find(id) != NULL || lower_op(NULL, NULL, id) != AD_XL_PASS || (name && ad_export_ew_has(name));
}

static int dispatch(ad_xctx *ctx, const xrec *r) {
    const ad_tnode *n = r->n;
    int xl = sub_lowerers(ctx, r);
    if (xl != AD_XL_PASS) return xl;
    if (n->kind == AD_TN_COMPARE) return lower_compare(ctx, r);
    if (n->kind == AD_TN_GETATTR) {
        if (n->attr == AD_ATTR_DATA) return alias_of(ctx, r, pref(r, 0));
        return fail(ctx, "is not lowered");
    }
    const ew_row *row = ew_find(n->op);
    if (row) return lower_ew(ctx, r, row);
    switch (n->op) {
    case AD_OP_eq: return lower_named_compare(ctx, r, 0);
    case AD_OP_ne: return lower_named_compare(ctx, r, 1);
    case AD_OP_lt: return lower_named_compare(ctx, r, 2);
    case AD_OP_le: return lower_named_compare(ctx, r, 3);
    case AD_OP_gt: return lower_named_compare(ctx, r, 4);
    case AD_OP_ge: return lower_named_compare(ctx, r, 5);
    default: break;
    }
    xl = lower_op(ctx, r, n->op);
    if (xl != AD_XL_PASS) return xl;
    const char *canon = n->op != AD_OP__NONE ? ad_op_id_name(n->op) : NULL;
    xl = ad_export_lower_ew(ctx, r, canon ? canon : rec_name(n));
    return xl != AD_XL_PASS ? xl : lower_extern(ctx, r);
}

static int lower_record(ad_xctx *ctx) {
    const ad_tnode *n = &ctx->T->nodes[ctx->node];
    bool data = n->kind == AD_TN_GETATTR && n->attr == AD_ATTR_DATA;
    /* requires_grad_ only marks a leaf for the traced gradient, whose formulas
     * are records of their own: in C it is the same array */
    if (n->kind == AD_TN_BUILTIN && n->op == AD_OP_requires_grad_ && n->out.ref >= 0) {
        xrec r;
        int rc = bind(ctx, n, &r);
        return rc ? rc : alias_of(ctx, &r, pref(&r, 0));
    }
    /* list building and constant checks of the library's helpers: no C */
    if (n->kind == AD_TN_BUILTIN && n->out.ref < 0 && !n->out.sub &&
        (n->op == AD_OP_append || n->op == AD_OP_assert))
        return ADDSL_OK;
    /* builtins the tracer keeps in place that only compute */
    bool known = false;
    if (n->kind == AD_TN_BUILTIN) switch (n->op) {
    case AD_OP_logical_and: case AD_OP_logical_or: case AD_OP_logical_xor: case AD_OP_logical_not:
    case AD_OP_isnan: case AD_OP_isinf: case AD_OP_isfinite: case AD_OP_rs_named_tuple: known = true; break;
    default: break;
    }
    if (n->random) return fail(ctx, "draws random numbers, and an exported function has no generator state (the interpreter's is in its state): make the draws outside f and pass them in");
    if (n->kind == AD_TN_BUILTIN && (n->op == AD_OP_grad || n->op == AD_OP_jvp))
        return fail(ctx, "was kept as one record: a derivative formula of the op library reads a traced value (data-dependent control flow, such as det's test for a zero determinant), which C cannot follow");
    if (n->kind == AD_TN_BUILTIN && n->op == AD_OP__inplace_write && n->out.ref >= 0) {
        xrec r;
        int rc = bind(ctx, n, &r);
        return rc ? rc : ad_export_lower_inplace_write(ctx, &r);
    }
    int sp = ad_export_lower_split(ctx, n);
    if (sp != AD_XL_PASS) return sp;
    if ((n->effect && !data && !known) || n->kind == AD_TN_SETATTR || n->kind == AD_TN_SETINDEX)
        return fail(ctx, "writes to a tensor or has a side effect, which an exported function cannot have");
    xrec r;
    int rc = n->out.sub ? bind(ctx, n, &r) : ADDSL_OK;
    if (!rc && n->out.sub && (rc = ad_export_lower_multi(ctx, &r)) == AD_XL_PASS) rc = ad_export_lower_traj(ctx, &r);
    if (n->out.sub && rc == AD_XL_PASS) rc = ad_export_lower_linalg(ctx, &r);
    if (n->out.sub && rc != AD_XL_PASS) return rc;
    if (n->out.ref < 0) return fail(ctx, "has several outputs or none, which the exporter does not lower yet");
    rc = bind(ctx, n, &r);
    if (rc) return rc;
    return dispatch(ctx, &r);
}

int ad_export_lower(ad_xctx *ctx) {
    size_t mark = ctx->body->len;
    int rc = lower_record(ctx);
    return rc ? rc : ad_export_fuse_after(ctx, mark);
}

/* Output k of the function, when 'ref' was not computed straight into it. */
int ad_export_copy_out(ad_xctx *ctx, int ref, int k) {
    const ad_xval *x = &ctx->v[ref];
    if (x->kind == AD_XV_BUF && x->out == k) return ADDSL_OK;
    if (x->kind == AD_XV_NONE) return ad_error(ctx->S, "export_c(): output %d has no C form", k);
    char dn[16];
    snprintf(dn, sizeof dn, "out%d", k);
    xnest e;
    nest_init(ctx, &e, ref);
    e.dname = dn;
    e.expr = "$0";
    add_bcast(ctx, &e, ref);
    ad_buf_printf(ctx->body, "    /* output %d is %%%d: a copy */\n", k, ref);
    emit_nest(ctx, &e);
    return ADDSL_OK;
}

/* ---- the nest writer, for vm/export/fuse.c ---- */

void ad_export_use(ad_xctx *ctx, int id) { use(ctx, id); }
void ad_export_render(ad_xctx *ctx, const ad_xnest *e, const char *t, ad_buf *b) { render(ctx, e, t, NULL, b); }
void ad_export_index(const ad_xnest *e, int64_t off, const int64_t *st, bool to_dest, ad_buf *b) {
    index_expr(e, off, st, to_dest, b);
}
void ad_export_open_loops(const ad_xnest *e, int depth, ad_buf *b) { open_loops(e, 0, e->nout, depth, b); }
bool ad_export_walks_flat(const ad_xnest *e, const int64_t *st, int lo, int hi) { return walks_flat(e, st, lo, hi); }
void ad_export_flatten(ad_xnest *e) {
    if (e->nout > 1) flatten_group(e, 0, e->nout, &e->flat);
    else if (e->nout == 1) e->flat = true;
}
void ad_export_emit_nest(ad_xctx *ctx, ad_xnest *e) { emit_nest(ctx, e); }

/* ---- for the lowerings in files of their own (export/lower.h) ---- */

const char *ad_xl_name(const ad_tnode *n) { return rec_name(n); }
int ad_xl_op_id(const ad_tnode *n) {
    if (n->kind != AD_TN_OP && n->kind != AD_TN_BUILTIN) return AD_OP__NONE;
    if (n->op != AD_OP__NONE || n->kind != AD_TN_BUILTIN) return n->op;
    const char *nm = rec_name(n);
    return strncmp(nm, "ad_", 3) ? AD_OP__NONE : ad_op_id_of(nm + 3);
}
int ad_xl_fail(ad_xctx *ctx, const char *why) { return fail(ctx, why); }
int ad_xl_bind(ad_xctx *ctx, const ad_tnode *n, ad_xrec *r) { return bind(ctx, n, r); }
int ad_xl_pref(const ad_xrec *r, int i) { return pref(r, i); }
ad_value ad_xl_pconst(const ad_xrec *r, int i) { return pconst(r, i); }
bool ad_xl_pnum(const ad_xrec *r, int i, double *x) { return pnum(r, i, x); }
bool ad_xl_pints(const ad_xrec *r, int i, int64_t *out, int *n) { return pints(r, i, out, n); }
void ad_xl_use(ad_xctx *ctx, int id) { use(ctx, id); }
void ad_xl_make_buf(ad_xctx *ctx, int id) { make_buf(ctx, id); }
void ad_xl_comment(ad_xctx *ctx, const char *what) { comment(ctx, what); }
void ad_xl_open1(ad_xctx *ctx, int src, int o, char *in, char *on, const char *what) {
    make_buf(ctx, o);
    use(ctx, src);
    ad_export_vname(ctx, src, in, 32);
    ad_export_vname(ctx, o, on, 32);
    comment(ctx, what);
}
int ad_xl_emit_map(ad_xctx *ctx, const ad_xrec *r, int k, const char *tmpl, ad_dtype ct) {
    return emit_map(ctx, r, k, tmpl, ct, 0);
}

int ad_xl_emit_map_raw(ad_xctx *ctx, const ad_xrec *r, int k, const char *tmpl, ad_dtype ct, int rawmask) {
    return emit_map(ctx, r, k, tmpl, ct, rawmask);
}

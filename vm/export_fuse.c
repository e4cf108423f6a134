/* export_fuse.c: export_c's fusion of element-wise records: a chain of maps
 * over one shape becomes one loop whose intermediates are scalar temporaries. */
#include "export_nest.h"

#include <stdio.h>
#include <string.h>

#include "state.h"

/* ---- which records read each value ---- */

static void count_arg(const ad_targ *a, int *cnt, int node, int *fill, int *rd) {
    if (a->ref >= 0) {
        if (fill) rd[fill[a->ref]++] = node;
        else cnt[a->ref]++;
    }
    for (int i = 0; i < a->nsub; i++) count_arg(&a->sub[i], cnt, node, fill, rd);
}

static void walk_nodes(const ad_trace *T, int *cnt, int *fill, int *rd) {
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *n = &T->nodes[i];
        if (n->dead || n->folded) continue;
        for (int k = 0; k < n->nargs; k++) count_arg(&n->args[k], cnt, i, fill, rd);
    }
}

int ad_export_readers(ad_xctx *ctx) {
    const ad_trace *T = ctx->T;
    int nv = T->nvals;
    int *start = ad_calloc(ctx->S, (size_t)nv + 1, sizeof *start);
    int *fill = ad_calloc(ctx->S, (size_t)nv + 1, sizeof *fill);
    if (!start || !fill) { ad_free(ctx->S, start); ad_free(ctx->S, fill); return ADDSL_ENOMEM; }
    walk_nodes(T, start + 1, NULL, NULL);
    for (int v = 0; v < nv; v++) start[v + 1] += start[v];
    int *rd = ad_malloc(ctx->S, (size_t)(start[nv] ? start[nv] : 1) * sizeof *rd);
    if (!rd) { ad_free(ctx->S, start); ad_free(ctx->S, fill); return ADDSL_ENOMEM; }
    memcpy(fill, start, (size_t)nv * sizeof *fill);
    walk_nodes(T, NULL, fill, rd);
    ad_free(ctx->S, fill);
    ctx->rd_start = start;
    ctx->rd_node = rd;
    return ADDSL_OK;
}

/* ---- the group ---- */

static int member_of(const ad_xfuse *g, int node) {
    for (int j = 0; j < g->n; j++) if (g->node[j] == node) return j;
    return -1;
}

static int member_making(const ad_xfuse *g, int value) {
    for (int j = 0; j < g->n; j++) if (g->e[j].dest == value) return j;
    return -1;
}

/* Whether value 'id' (a member's, or a view of it made inside the group) is
 * read from memory: by a record outside the group, or as an output. */
static bool read_outside(ad_xctx *ctx, int id, int depth) {
    const ad_xfuse *g = ctx->fuse;
    for (int k = 0; k < ctx->nouts; k++) if (ctx->outs[k] == id) return true;
    if (depth > 8) return true;
    for (int p = ctx->rd_start[id]; p < ctx->rd_start[id + 1]; p++) {
        int node = ctx->rd_node[p];
        if (member_of(g, node) >= 0) continue;
        /* a view made while the group was held: read outside if its readers are */
        int o = ctx->T->nodes[node].out.ref;
        bool inside = node > g->node[0] && node < ctx->node && o >= 0 && ctx->v[o].kind == AD_XV_VIEW &&
                      ctx->v[o].base == ctx->v[id].base;
        if (!inside || read_outside(ctx, o, depth + 1)) return true;
    }
    return false;
}

/* Whether operand 'o' of a nest shaped like the group's reads the element the
 * loop is at (its strides are the destination's own). */
static bool same_element(const ad_xnest *e, const ad_xoperand *o) {
    if (o->off != 0) return false;
    for (int k = 0; k < e->nout; k++) if (e->shape[k] != 1 && o->st[k] != e->dst[k]) return false;
    return true;
}

static bool same_shape(const ad_xnest *a, const ad_xnest *b) {
    if (a->nout != b->nout) return false;
    for (int k = 0; k < a->nout; k++) if (a->shape[k] != b->shape[k]) return false;
    return true;
}

static void indent(ad_buf *b, int k) { for (int i = 0; i < k; i++) ad_buf_puts(b, "    "); }

/* One member in the loop: its comment, its scalar, and its store when read
 * from memory later. */
static void write_member(ad_xctx *ctx, const ad_xnest *e, const char *note, bool store, int depth) {
    ad_buf *b = ctx->body;
    const ad_xval *x = &ctx->v[e->dest];
    indent(b, depth);
    ad_buf_printf(b, "%s\n", note);
    indent(b, depth);
    ad_buf_printf(b, "%s t%d = ", ad_export_ctype(x->dt), e->dest);
    ad_export_render(ctx, e, e->expr, b);
    ad_buf_puts(b, ";\n");
    if (!store) return;
    char dn[32];
    ad_export_vname(ctx, e->dest, dn, sizeof dn);
    indent(b, depth);
    ad_buf_printf(b, "%s[", dn);
    ad_export_index(e, e->doff, e->dst, true, b);
    ad_buf_printf(b, "] = t%d;\n", e->dest);
}

/* The held members as one loop nest: every operand and stored destination
 * walks one flat index when all of them can, else one variable per dim. */
static void write_group(ad_xctx *ctx, ad_xfuse *g) {
    bool store[AD_XFUSE_MAX], tread[AD_XFUSE_MAX] = {false};
    for (int j = 0; j < g->n; j++)
        for (int i = 0; i < g->e[j].nops; i++)
            if (g->e[j].op[i].tmp) tread[member_making(g, ctx->v[g->e[j].op[i].ref].base)] = true;
    for (int j = 0; j < g->n; j++) store[j] = !tread[j] || read_outside(ctx, g->e[j].dest, 0);
    /* the loop reads its operands and writes its stores at every step: all of
     * them live over the whole group */
    int saved = ctx->node;
    ctx->node = g->node[g->n - 1];
    for (int j = 0; j < g->n; j++) {
        ad_xval *x = &ctx->v[g->e[j].dest];
        if (store[j]) x->def = g->node[0];
        else x->scalar = true;
        for (int i = 0; i < g->e[j].nops; i++)
            if (g->e[j].op[i].ref >= 0 && !g->e[j].op[i].tmp) ad_export_use(ctx, g->e[j].op[i].ref);
    }
    ctx->node = saved;
    ad_xnest *e0 = &g->e[0];
    bool flat = true;
    for (int j = 0; j < g->n && flat && e0->nout > 1; j++) {
        const ad_xnest *e = &g->e[j];
        if (store[j] && !ad_export_walks_flat(e, e->dst, 0, e->nout)) flat = false;
        for (int i = 0; i < e->nops && flat; i++)
            if (e->op[i].ref >= 0 && !ad_export_walks_flat(e, e->op[i].st, 0, e->nout)) flat = false;
    }
    if (flat) for (int j = 0; j < g->n; j++) ad_export_flatten(&g->e[j]);
    ad_buf *b = ctx->body;
    int depth = 1;
    ad_buf_printf(b, "    /* one loop for %d element-wise records (scalars t<N> are the values %%N) */\n", g->n);
    ad_export_open_loops(e0, depth, b);
    depth += e0->nout == 0 ? 0 : (e0->flat ? 1 : e0->nout);
    indent(b, depth - 1);
    ad_buf_puts(b, "{\n");
    for (int j = 0; j < g->n; j++) write_member(ctx, &g->e[j], g->note[j], store[j], depth);
    indent(b, depth - 1);
    ad_buf_puts(b, "}\n");
}

int ad_export_fuse_flush(ad_xctx *ctx) {
    ad_xfuse *g = ctx->fuse;
    if (!g || !g->n) return ADDSL_OK;
    ad_buf *b = ctx->body;
    /* notes of views made while the group was held follow its loop */
    size_t tail = b->len - g->mark;
    char *text = NULL;
    if (tail) {
        text = ad_malloc(ctx->S, tail);
        if (!text) return ADDSL_ENOMEM;
        memcpy(text, b->data + g->mark, tail);
        b->len = g->mark;
        b->data[b->len] = 0;
    }
    if (g->n == 1) {
        ad_buf_printf(b, "    %s\n", g->note[0]);
        ad_export_emit_nest(ctx, &g->e[0]);
    } else write_group(ctx, g);
    g->n = 0;
    if (text) ad_buf_add(b, text, tail);
    ad_free(ctx->S, text);
    return b->failed ? ADDSL_ENOMEM : ADDSL_OK;
}

int ad_export_fuse_map(ad_xctx *ctx, ad_xnest *e, const char *note) {
    ad_xfuse *g = ctx->fuse;
    bool fusible = g && !e->init && !e->noflat && !e->dname && e->doff == 0 && ctx->v[e->dest].kind == AD_XV_BUF;
    if (!fusible) {
        int rc = ad_export_fuse_flush(ctx);
        if (rc) return rc;
        ad_buf_printf(ctx->body, "    %s\n", note);
        ad_export_emit_nest(ctx, e);
        return ADDSL_OK;
    }
    bool join = g->n > 0 && g->n < AD_XFUSE_MAX && same_shape(&g->e[0], e);
    for (int i = 0; i < e->nops && join; i++) {
        if (e->op[i].ref < 0 || member_making(g, ctx->v[e->op[i].ref].base) < 0) continue;
        if (same_element(e, &e->op[i])) e->op[i].tmp = true;
        else join = false;
    }
    if (!join) {
        for (int i = 0; i < e->nops; i++) e->op[i].tmp = false;
        int rc = ad_export_fuse_flush(ctx);
        if (rc) return rc;
        g->mark = ctx->body->len;
    }
    for (int i = 0; i < e->nops; i++) if (e->op[i].ref >= 0) ad_export_use(ctx, e->op[i].ref);
    g->e[g->n] = *e;
    g->node[g->n] = ctx->node;
    snprintf(g->note[g->n], AD_XFUSE_NOTE, "%s", note);
    g->n++;
    return ADDSL_OK;
}

int ad_export_fuse_after(ad_xctx *ctx, size_t mark, int held) {
    ad_xfuse *g = ctx->fuse;
    if (!g || !g->n || g->node[g->n - 1] == ctx->node) return ADDSL_OK;
    (void)held;
    /* a view (a note, no code) may sit inside the group's span */
    int o = ctx->T->nodes[ctx->node].out.ref;
    if (ctx->body->len == mark || (o >= 0 && ctx->v[o].kind == AD_XV_VIEW)) return ADDSL_OK;
    /* the record wrote code, which reads the group's values from memory: the
     * group's loop goes first */
    ad_buf *b = ctx->body;
    size_t n = b->len - mark;
    char *text = ad_malloc(ctx->S, n);
    if (!text) return ADDSL_ENOMEM;
    memcpy(text, b->data + mark, n);
    b->len = mark;
    b->data[b->len] = 0;
    int rc = ad_export_fuse_flush(ctx);
    if (!rc) rc = ad_buf_add(b, text, n) ? ADDSL_ENOMEM : ADDSL_OK;
    ad_free(ctx->S, text);
    return rc;
}

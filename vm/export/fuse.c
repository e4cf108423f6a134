/* export/fuse.c: export_c's fusion of element-wise records: a chain of maps
 * over one shape becomes one loop whose intermediates are scalar temporaries. */
#include "export/nest.h"

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

/* ---- loop shape ---- */

static void remove_dim(ad_xnest *e, int k) {
    int total = e->nout + e->nred;
    for (int j = k; j < total - 1; j++) {
        e->shape[j] = e->shape[j + 1];
        for (int i = 0; i < e->nops; i++) e->op[i].st[j] = e->op[i].st[j + 1];
    }
    for (int i = 0; i < e->nops; i++) e->op[i].st[total - 1] = 0;
    if (k < e->nout) {
        for (int j = k; j < e->nout - 1; j++) e->dst[j] = e->dst[j + 1];
        e->dst[e->nout - 1] = 0;
        e->nout--;
    } else e->nred--;
}

/* dims k and k + 1 (both output or both reduced) walked as one by all */
static bool mergeable(ad_xnest *const *es, int n, int k) {
    for (int j = 0; j < n; j++) {
        const ad_xnest *e = es[j];
        int64_t s = e->shape[k + 1];
        if (k < e->nout && e->dst[k] != e->dst[k + 1] * s) return false;
        for (int i = 0; i < e->nops; i++)
            if (e->op[i].ref >= 0 && e->op[i].st[k] != e->op[i].st[k + 1] * s) return false;
    }
    return true;
}

void ad_export_coalesce(ad_xnest **es, int n) {
    ad_xnest *e0 = es[0];
    for (int k = 0; k < e0->nout + e0->nred;) {
        if (e0->shape[k] == 1) {
            for (int j = 0; j < n; j++) remove_dim(es[j], k);
            continue;
        }
        bool out = k < e0->nout;
        int hi = out ? e0->nout : e0->nout + e0->nred;
        if (k + 1 < hi && e0->shape[k + 1] != 1 && mergeable(es, n, k)) {
            for (int j = 0; j < n; j++) {
                ad_xnest *e = es[j];
                e->shape[k] *= e->shape[k + 1];
                if (out) e->dst[k] = e->dst[k + 1];
                for (int i = 0; i < e->nops; i++) e->op[i].st[k] = e->op[i].st[k + 1];
                remove_dim(e, k + 1);
            }
            continue;
        }
        k++;
    }
}

/* ---- the groups ---- */

/* The open group whose member makes 'value', or -1. */
static int group_making(const ad_xfuse *f, int value, int *member) {
    for (int k = 0; k < f->ng; k++)
        for (int j = 0; j < f->g[k].n; j++)
            if (f->g[k].e[j].dest == value) {
                if (member) *member = j;
                return k;
            }
    return -1;
}

static bool member_of(const ad_xgroup *g, int node) {
    for (int j = 0; j < g->n; j++) if (g->node[j] == node) return true;
    return false;
}

/* Whether value 'id' (a member's, or a view of it made while the group was
 * open) is read from memory: by a record outside the group, or as an output. */
static bool read_outside(ad_xctx *ctx, const ad_xgroup *g, int id, int depth) {
    for (int k = 0; k < ctx->nouts; k++) if (ctx->outs[k] == id) return true;
    if (depth > 8) return true;
    for (int p = ctx->rd_start[id]; p < ctx->rd_start[id + 1]; p++) {
        int node = ctx->rd_node[p];
        if (member_of(g, node)) continue;
        int o = ctx->T->nodes[node].out.ref;
        bool view = node > g->node[0] && node < ctx->node && o >= 0 && ctx->v[o].kind == AD_XV_VIEW &&
                    ctx->v[o].base == ctx->v[id].base;
        if (!view || read_outside(ctx, g, o, depth + 1)) return true;
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

/* Member j of the n maps 'es' of one loop (a map alone: n = 1), which stores
 * its value: the block of an operand it may write over (export/export_c.c's
 * plan_work gives it that block when the operand dies there). Safe when
 * every read of that block in the loop is at the element being written and
 * none comes from a later member (which would read it after the store). */
static void note_share(ad_xctx *ctx, const ad_xnest *es, int n, int j) {
    ad_xval *x = &ctx->v[es[j].dest];
    if (x->kind != AD_XV_BUF || x->out >= 0 || x->scalar || es[j].doff != 0 || es[j].dname) return;
    for (int i = 0; i < es[j].nops; i++) {
        const ad_xoperand *o = &es[j].op[i];
        if (o->ref < 0 || o->tmp) continue;
        int b = ctx->v[o->ref].base;
        const ad_xval *y = &ctx->v[b];
        if (b == es[j].dest || y->kind != AD_XV_BUF || y->out >= 0 || y->scalar || y->numel != x->numel ||
            ad_dtype_size(y->dt) != ad_dtype_size(x->dt))
            continue;
        bool ok = true;
        for (int m = 0; m < n && ok; m++)
            for (int k = 0; k < es[m].nops && ok; k++) {
                const ad_xoperand *p = &es[m].op[k];
                if (p->ref < 0 || p->tmp || ctx->v[p->ref].base != b) continue;
                ok = m <= j && same_element(&es[m], p);
            }
        if (ok) { x->share = b; return; }
    }
}

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

/* A group as one loop nest: every operand and stored destination walks one
 * flat index when all of them can, else one variable per dim. */
static void write_group(ad_xctx *ctx, ad_xgroup *g) {
    if (g->n == 1) {
        note_share(ctx, g->e, 1, 0);
        ad_buf_printf(ctx->body, "    %s\n", g->note[0]);
        ad_export_emit_nest(ctx, &g->e[0]);
        return;
    }
    bool store[AD_XFUSE_MAX], tread[AD_XFUSE_MAX] = {false};
    for (int j = 0; j < g->n; j++)
        for (int i = 0; i < g->e[j].nops; i++)
            if (g->e[j].op[i].tmp)
                for (int m = 0; m < g->n; m++)
                    if (g->e[m].dest == ctx->v[g->e[j].op[i].ref].base) tread[m] = true;
    for (int j = 0; j < g->n; j++) store[j] = !tread[j] || read_outside(ctx, g, g->e[j].dest, 0);
    for (int j = 0; j < g->n; j++) if (!store[j]) ctx->v[g->e[j].dest].scalar = true;
    for (int j = 0; j < g->n; j++) if (store[j]) note_share(ctx, g->e, g->n, j);
    ad_xnest *all[AD_XFUSE_MAX];
    for (int j = 0; j < g->n; j++) all[j] = &g->e[j];
    ad_export_coalesce(all, g->n);
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
    ad_buf_printf(b, "    /* one loop for %d element-wise records (scalars t<N> are the values %%N) */\n", g->n);
    ad_export_open_loops(e0, 1, b);
    /* the block sits under the innermost loop, or alone for 0-d values */
    int loops = e0->nout == 0 ? 0 : (e0->flat ? 1 : e0->nout), bd = loops ? loops : 1;
    indent(b, bd);
    ad_buf_puts(b, "{\n");
    for (int j = 0; j < g->n; j++) write_member(ctx, &g->e[j], g->note[j], store[j], bd + 1);
    indent(b, bd);
    ad_buf_puts(b, "}\n");
}

/* Writes every open group, each after the groups it reads; the notes of
 * views made while they were open follow the loops. The loops run after the
 * record before the oldest group's first and before the record now lowered
 * (the groups' records and views are all that lie between): the k-th loop
 * written runs at that first record's time + k, where it writes the values
 * it stores and reads its operands. */
static int write_groups(ad_xctx *ctx) {
    ad_xfuse *f = ctx->fuse;
    ad_buf *b = ctx->body;
    size_t tail = b->len - f->mark;
    char *text = NULL;
    if (tail) {
        text = ad_malloc(ctx->S, tail);
        if (!text) return ADDSL_ENOMEM;
        memcpy(text, b->data + f->mark, tail);
        b->len = f->mark;
        b->data[b->len] = 0;
    }
    int start = f->g[0].node[0] * AD_XTIME, saved = ctx->now, step = 0;
    unsigned done = 0, all = (1u << f->ng) - 1;
    while (done != all) {
        int k = 0;
        while (k < f->ng && ((done >> k & 1) || (f->deps[k] & ~done))) k++;
        if (k == f->ng) break; /* not reached: joins keep the groups acyclic */
        ad_xgroup *g = &f->g[k];
        ctx->now = start + step++;
        for (int j = 0; j < g->n; j++) {
            ad_xval *x = &ctx->v[g->e[j].dest];
            x->def = ctx->now;
            if (x->last < ctx->now) x->last = ctx->now;
        }
        for (int j = 0; j < g->n; j++)
            for (int i = 0; i < g->e[j].nops; i++)
                if (g->e[j].op[i].ref >= 0 && !g->e[j].op[i].tmp) ad_export_use(ctx, g->e[j].op[i].ref);
        write_group(ctx, g);
        done |= 1u << k;
    }
    ctx->now = saved;
    f->ng = 0;
    if (text) ad_buf_add(b, text, tail);
    ad_free(ctx->S, text);
    return b->failed || done != all ? ADDSL_ENOMEM : ADDSL_OK;
}

/* The groups that group k reads, directly or through others. */
static unsigned reach(const ad_xfuse *f, unsigned set) {
    unsigned r = set, prev = 0;
    while (r != prev) {
        prev = r;
        for (int k = 0; k < f->ng; k++) if (r >> k & 1) r |= f->deps[k];
    }
    return r;
}

int ad_export_fuse_flush(ad_xctx *ctx) {
    ad_xfuse *f = ctx->fuse;
    return f && f->ng ? write_groups(ctx) : ADDSL_OK;
}

/* Whether map 'e' can join group k: it reads k's values at the element the
 * loop is at (marking those operands), and no group it reads depends on k. */
static bool can_join(ad_xctx *ctx, ad_xnest *e, int k, unsigned reads) {
    ad_xfuse *f = ctx->fuse;
    if (f->g[k].n == AD_XFUSE_MAX || !same_shape(&f->g[k].e[0], e) || (reach(f, reads & ~(1u << k)) >> k & 1)) return false;
    for (int i = 0; i < e->nops; i++) {
        e->op[i].tmp = false;
        if (e->op[i].ref < 0 || group_making(f, ctx->v[e->op[i].ref].base, NULL) != k) continue;
        if (!same_element(e, &e->op[i])) return false;
        e->op[i].tmp = true;
    }
    return true;
}

/* A map joins the latest open group of its shape that it can join (the
 * groups it reads from memory are then written before that one); else it
 * opens a group of its own. */
int ad_export_fuse_map(ad_xctx *ctx, ad_xnest *e, const char *note) {
    ad_xfuse *f = ctx->fuse;
    bool fusible = f && !e->init && !e->noflat && !e->dname && e->doff == 0 && ctx->v[e->dest].kind == AD_XV_BUF;
    if (!fusible) {
        int rc = ad_export_fuse_flush(ctx);
        if (rc) return rc;
        ad_buf_printf(ctx->body, "    %s\n", note);
        if (!e->init) note_share(ctx, e, 1, 0);
        ad_export_emit_nest(ctx, e);
        return ADDSL_OK;
    }
    unsigned reads = 0;
    for (int i = 0; i < e->nops; i++) {
        int k = e->op[i].ref >= 0 ? group_making(f, ctx->v[e->op[i].ref].base, NULL) : -1;
        if (k >= 0) reads |= 1u << k;
    }
    int into = -1;
    for (int k = f->ng - 1; k >= 0 && into < 0; k--) if (can_join(ctx, e, k, reads)) into = k;
    if (into < 0) {
        for (int i = 0; i < e->nops; i++) e->op[i].tmp = false;
        if (f->ng == AD_XFUSE_GROUPS) {
            int rc = write_groups(ctx);
            if (rc) return rc;
            reads = 0;
        }
        if (f->ng == 0) f->mark = ctx->body->len;
        into = f->ng++;
        f->g[into].n = 0;
        f->deps[into] = 0;
    }
    f->deps[into] |= reads & ~(1u << into);
    /* nothing has read the value yet: its life starts where its loop runs */
    ctx->v[e->dest].last = -1;
    ad_xgroup *g = &f->g[into];
    g->e[g->n] = *e;
    g->node[g->n] = ctx->node;
    snprintf(g->note[g->n], AD_XFUSE_NOTE, "%s", note);
    g->n++;
    f->last = ctx->node;
    return ADDSL_OK;
}

/* Whether text is comment lines only ("    / * ... * /"). */
static bool only_comments(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        while (i < n && s[i] == ' ') i++;
        if (i + 1 >= n || s[i] != '/' || s[i + 1] != '*') return false;
        const char *end = strstr(s + i, "*/");
        if (!end || (size_t)(end - s) + 2 > n) return false;
        i = (size_t)(end - s) + 2;
        if (i < n && s[i] == '\n') i++;
        else if (i < n) return false;
    }
    return true;
}

int ad_export_fuse_after(ad_xctx *ctx, size_t mark) {
    ad_xfuse *f = ctx->fuse;
    if (!f || !f->ng || f->last == ctx->node) return ADDSL_OK;
    /* a view (a note, no code) may sit between members */
    if (ctx->body->len == mark || only_comments(ctx->body->data + mark, ctx->body->len - mark)) return ADDSL_OK;
    /* the record wrote code, which reads the groups' values from memory: their
     * loops go first */
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

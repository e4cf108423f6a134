/* autograd/desugar.c: the compile-time checks on op definitions (the torchgen
 * rules plus the contract's) and their rewriting into lambdas. */
#include "autograd/desugar.h"
#include "grammar.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct octx {
    ad_arena *A;
    ad_op_error *err;
    bool failed;
    ad_node *op;
    ad_opinfo *info;
} octx;

static bool fail(octx *c, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool fail(octx *c, int line, int col, const char *fmt, ...) {
    if (c->failed) return false;
    c->failed = true;
    c->err->line = line; c->err->col = col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err->msg, sizeof c->err->msg, fmt, ap);
    va_end(ap);
    return false;
}

static const char *astr(octx *c, const char *a, const char *b) {
    size_t na = strlen(a), nb = b ? strlen(b) : 0;
    char *s = ad_arena_alloc(c->A, na + nb + 1);
    if (!s) return "";
    memcpy(s, a, na);
    if (nb) memcpy(s + na, b, nb);
    s[na + nb] = '\0';
    return s;
}

static ad_node *mkparam(octx *c, const char *name, const ad_node *at) {
    ad_node *p = ad_node_new(c->A, N_PARAM, NULL);
    p->line = at->line; p->col = at->col;
    p->str = name; p->len = strlen(name);
    return p;
}

/* A lambda with parameters 'names' returning 'body'. */
static ad_node *mklambda(octx *c, const char **names, int n, ad_node *body, const ad_node *at) {
    ad_node *lam = ad_node_new(c->A, N_LAMBDA, NULL);
    lam->line = at->line; lam->col = at->col;
    lam->list = ad_nlist_new(c->A);
    for (int i = 0; i < n; i++) lam->list = ad_nlist_add(c->A, lam->list, mkparam(c, names[i], at));
    ad_node *ret = ad_node_new(c->A, N_RETURN, NULL);
    ret->line = body->line; ret->col = body->col; ret->a = body;
    ad_node *blk = ad_node_new(c->A, N_BLOCK, NULL);
    blk->line = at->line; blk->col = at->col;
    blk->list = ad_nlist_add(c->A, NULL, ret);
    lam->b = blk;
    return lam;
}

static int param_index(const ad_opinfo *in, const char *name) {
    for (int i = 0; i < in->nparams; i++) if (strcmp(in->params[i]->str, name) == 0) return i;
    return -1;
}

static int out_index(const ad_opinfo *in, const char *name) {
    if (!in->outnames) return -1;
    for (int i = 0; i < in->nout; i++) if (strcmp(in->outnames[i], name) == 0) return i;
    return -1;
}

/* ---- name uses inside one formula ---- */

typedef enum { G_NONE, G_GRAD, G_GRADS, G_NAMED } gstyle;

typedef struct uses {
    gstyle style;
    ad_node *first_grad, *first_grads, *first_named;
    int ngrads_uses;
    bool only_grads0;   /* every use of grads is the literal grads[0] */
    ad_node *grads0_at;
} uses;

static void walk(octx *c, ad_node *n, uses *u, bool jvp);

static void walk_list(octx *c, ad_nlist *l, uses *u, bool jvp) {
    for (int i = 0; l && i < l->n; i++) walk(c, l->items[i], u, jvp);
}

static void use_name(octx *c, ad_node *n, uses *u, bool jvp) {
    ad_opinfo *in = c->info;
    const char *s = n->str;
    if (jvp) {
        int p = param_index(in, s);
        if (p >= 0 && in->kind[p] != AD_PARAM_VALUE)
            fail(c, n->line, n->col, "bare tensor parameter '%s' in a JVP formula of op '%s': use '%s_p' (primal) or '%s_t' (tangent)",
                 s, c->op->str, s, s);
        return;
    }
    if (strcmp(s, "grad") == 0) { if (!u->first_grad) u->first_grad = n; }
    else if (strcmp(s, "grads") == 0) { if (!u->first_grads) u->first_grads = n; u->ngrads_uses++; }
    else if (strncmp(s, "grad_", 5) == 0 && out_index(in, s + 5) >= 0) { if (!u->first_named) u->first_named = n; }
}

static void walk(octx *c, ad_node *n, uses *u, bool jvp) {
    if (!n || c->failed) return;
    if (n->kind == N_NAME) {
        if (!jvp && strcmp(n->str, "grads") == 0) u->only_grads0 = false;
        use_name(c, n, u, jvp);
        return;
    }
    if (n->kind == N_LAMBDA) return; /* its own scope */
    if (!jvp && n->kind == N_INDEX && n->a && n->a->kind == N_NAME && strcmp(n->a->str, "grads") == 0 &&
        n->list && n->list->n == 1 && n->list->items[0]->kind == N_NUM && n->list->items[0]->is_int) {
        int k = (int)n->list->items[0]->num;
        if (k < 0 || k >= c->info->nout) {
            fail(c, n->a->line, n->a->col, "grads[%d] is out of range: op '%s' has %d output%s", k, c->op->str,
                 c->info->nout, c->info->nout == 1 ? "" : "s");
            return;
        }
        if (k != 0) u->only_grads0 = false;
        else if (!u->grads0_at) u->grads0_at = n->a;
        use_name(c, n->a, u, jvp);
        return;
    }
    if (n->kind == N_INDEX && n->a && n->a->kind == N_NAME && strcmp(n->a->str, "grads") == 0) u->only_grads0 = false;
    walk(c, n->a, u, jvp); walk(c, n->b, u, jvp); walk(c, n->c, u, jvp);
    walk_list(c, n->list, u, jvp);
}

/* ---- one op ---- */

static bool is_name(const ad_node *e, const char *s) { return e && e->kind == N_NAME && strcmp(e->str, s) == 0; }

static bool is_kernel_call(const ad_node *e) {
    return e && e->kind == N_CALL && is_name(e->a, "kernel");
}

static int ndiff_outputs(const ad_opinfo *in) {
    int k = 0;
    for (int i = 0; i < in->nout; i++) if (in->out_diff[i]) k++;
    return k;
}

/* Names of a VJP formula's parameters (ad_op_formula_nargs order). */
static int vjp_names(octx *c, const char **names) {
    ad_opinfo *in = c->info;
    int n = 0;
    for (int i = 0; i < in->nparams; i++) names[n++] = in->params[i]->str;
    names[n++] = "grad"; names[n++] = "grads"; names[n++] = "result";
    for (int k = 0; k < in->nout; k++) { char b[24]; snprintf(b, sizeof b, "result%d", k); names[n++] = astr(c, b, NULL); }
    if (in->outnames) {
        for (int k = 0; k < in->nout; k++) names[n++] = in->outnames[k];
        for (int k = 0; k < in->nout; k++) names[n++] = astr(c, "grad_", in->outnames[k]);
    }
    names[n++] = "grad_input_mask";
    return n;
}

static int jvp_names(octx *c, const char **names) {
    ad_opinfo *in = c->info;
    int n = 0;
    for (int i = 0; i < in->nparams; i++) {
        const char *p = in->params[i]->str;
        if (in->kind[i] != AD_PARAM_VALUE) { names[n++] = astr(c, p, "_p"); names[n++] = astr(c, p, "_t"); }
        else names[n++] = p;
    }
    names[n++] = "result";
    for (int k = 0; k < in->nout; k++) { char b[24]; snprintf(b, sizeof b, "result%d", k); names[n++] = astr(c, b, NULL); }
    if (in->outnames) for (int k = 0; k < in->nout; k++) names[n++] = in->outnames[k];
    return n;
}

/* Sets seen[i - from] for each names[i] (from <= i < n) read anywhere under
 * e, nested lambdas included (a conservative test: a nested lambda's own
 * parameter of the same name counts too). */
static void mentions(const ad_node *e, const char **names, int from, int n, bool *seen) {
    if (!e) return;
    if (e->kind == N_NAME)
        for (int i = from; i < n; i++)
            if (!seen[i - from] && e->str[0] == names[i][0] && strcmp(e->str, names[i]) == 0) seen[i - from] = true;
    mentions(e->a, names, from, n, seen);
    mentions(e->b, names, from, n, seen);
    mentions(e->c, names, from, n, seen);
    const ad_nlist *ls[3] = {e->list, e->list2, e->list3};
    for (int k = 0; k < 3; k++)
        for (int i = 0; ls[k] && i < ls[k]->n; i++) mentions(ls[k]->items[i], names, from, n, seen);
}

/* Whether 'e' reads the values of 'name': a mention only as the object of
 * .shape, .dtype, .device or .ndim (or of .numel(), .dim(), .size()) reads
 * metadata, which an in-place write does not change, so backward need not
 * check that saved tensor's version. */
static bool reads_values(const ad_node *e, const char *name) {
    if (!e) return false;
    if (e->kind == N_NAME) return strcmp(e->str, name) == 0;
    if ((e->kind == N_ATTR || (e->kind == N_METHOD && (!e->list || e->list->n == 0 ||
                                                        strcmp(e->str, "size") == 0))) &&
        e->a && e->a->kind == N_NAME && strcmp(e->a->str, name) == 0) {
        static const char *const meta[] = {"shape", "dtype", "device", "ndim", "numel", "dim", "size"};
        for (size_t k = 0; k < sizeof meta / sizeof meta[0]; k++)
            if (strcmp(e->str, meta[k]) == 0) return reads_values(e->b, name) || reads_values(e->c, name);
    }
    if (reads_values(e->a, name) || reads_values(e->b, name) || reads_values(e->c, name)) return true;
    const ad_nlist *ls[3] = {e->list, e->list2, e->list3};
    for (int k = 0; k < 3; k++)
        for (int i = 0; ls[k] && i < ls[k]->n; i++) if (reads_values(ls[k]->items[i], name)) return true;
    return false;
}

/* in->vjp_reads[v] and bit v of in->vjp_reads_result from VJP formula v's body. */
static void note_value_reads(ad_opinfo *in, int v, const ad_node *body) {
    for (int i = 0; i < in->nparams; i++)
        if (reads_values(body, in->params[i]->str)) in->vjp_reads[v] |= (uint32_t)1 << i;
    char buf[32];
    bool res = reads_values(body, "result");
    for (int k = 0; k < in->nout; k++) {
        snprintf(buf, sizeof buf, "result%d", k);
        if (reads_values(body, buf) || (in->outnames && reads_values(body, in->outnames[k]))) res = true;
    }
    if (res) in->vjp_reads_result |= (uint32_t)1 << v;
}

/* own[] = names[], with each argument the formula 'body' never mentions
 * renamed AD_FORMULA_UNUSED + name: the engine then skips building it (the
 * grads list, the result tuple, grad_input_mask) for every node of the op,
 * and a node keeps only the shape of a tensor parameter no formula mentions. */
static void mark_unused(octx *c, const ad_node *body, const char **names, const char **own, int n) {
    ad_opinfo *in = c->info;
    bool seen[AD_OP_MAX_PARAMS * 2 + 3 * AD_OP_MAX_OUTS + 8] = {false};
    mentions(body, names, 0, n, seen);
    for (int i = 0; i < n; i++) {
        own[i] = names[i];
        if (!seen[i] && (i < in->nparams || param_index(in, names[i]) < 0))
            own[i] = astr(c, AD_FORMULA_UNUSED, names[i]);
    }
}

static bool later(const ad_node *a, const ad_node *b) {
    return a->line > b->line || (a->line == b->line && a->col > b->col);
}

static bool mix_error(octx *c, const ad_node *at, gstyle a, gstyle b) {
    if (a == G_NAMED || b == G_NAMED)
        return fail(c, at->line, at->col, "op '%s' mixes 'grad_NAME' with 'grad'/'grads': name output gradients one way in all formulas", c->op->str);
    return fail(c, at->line, at->col, "op '%s' mixes 'grad' and 'grads': use 'grad' for a single differentiable output, 'grads[i]' for several", c->op->str);
}

/* The torchgen rules on how VJP formulas name output gradients. */
static bool check_vjp_styles(octx *c, ad_node **exprs, int n) {
    ad_opinfo *in = c->info;
    gstyle seen = G_NONE;
    int ndiff = ndiff_outputs(in);
    bool any_grads = false, all_grads0 = true;
    ad_node *grads0_at = NULL;
    for (int i = 0; i < n; i++) {
        uses u;
        memset(&u, 0, sizeof u);
        u.only_grads0 = true;
        walk(c, exprs[i], &u, false);
        if (c->failed) return false;
        ad_node *first[3] = {u.first_grad, u.first_grads, u.first_named};
        gstyle kind[3] = {G_GRAD, G_GRADS, G_NAMED};
        int used = 0, k0 = -1, k1 = -1;
        for (int k = 0; k < 3; k++) if (first[k]) { used++; if (k0 < 0) k0 = k; else k1 = k; }
        if (used > 1) {
            ad_node *at = later(first[k0], first[k1]) ? first[k0] : first[k1];
            return mix_error(c, at, kind[k0], kind[k1]);
        }
        if (used == 1) {
            if (seen != G_NONE && seen != kind[k0]) return mix_error(c, first[k0], seen, kind[k0]);
            seen = kind[k0];
        }
        if (u.first_grads) {
            any_grads = true;
            if (!u.only_grads0) all_grads0 = false;
            if (!grads0_at) grads0_at = u.grads0_at ? u.grads0_at : u.first_grads;
        }
        if (u.first_grad && ndiff > 1)
            return fail(c, u.first_grad->line, u.first_grad->col, "op '%s' has %d differentiable outputs: 'grad' is ambiguous; use 'grads[i]' or 'grad_NAME'", c->op->str, ndiff);
    }
    if (any_grads && all_grads0 && ndiff == 1 && grads0_at)
        return fail(c, grads0_at->line, grads0_at->col, "op '%s' has one differentiable output: use 'grad' instead of 'grads[0]'", c->op->str);
    return true;
}

static bool parse_outdiff(octx *c, ad_node *e) {
    ad_opinfo *in = c->info;
    if (!e || e->kind != N_LIST || !e->list || e->list->n != in->nout)
        return fail(c, e ? e->line : c->op->line, e ? e->col : c->op->col,
                    "output_differentiability of op '%s' must be a list of %d booleans", c->op->str, in->nout);
    for (int i = 0; i < in->nout; i++) {
        ad_node *b = e->list->items[i];
        if (b->kind != N_TRUE && b->kind != N_FALSE) return fail(c, b->line, b->col, "output_differentiability entries must be true or false");
        in->out_diff[i] = b->kind == N_TRUE;
    }
    return true;
}

static bool desugar_one(octx *c, ad_node *op) {
    ad_opinfo *in = ad_arena_alloc(c->A, sizeof *in);
    if (!in) return fail(c, op->line, op->col, "out of memory");
    c->op = op; c->info = in;
    op->info = in;
    in->nparams = op->list ? op->list->n : 0;
    if (in->nparams > AD_OP_MAX_PARAMS) return fail(c, op->line, op->col, "op '%s' has too many parameters (at most %d)", op->str, AD_OP_MAX_PARAMS);
    in->params = op->list ? op->list->items : NULL;
    bool seen_default = false;
    for (int i = 0; i < in->nparams; i++) {
        ad_node *p = in->params[i];
        if (p->op == TK_STAR) {
            /* Sizes as separate numbers: the binder packs them (vm/args.c);
             * the formulas' lambdas reuse this node as a plain parameter. */
            if (in->sizes_param) return fail(c, p->line, p->col, "op '%s' has two '*' parameters", op->str);
            in->sizes_param = i + 1;
            p->op = 0;
        }
        if (p->a) { seen_default = true; in->ndefaults++; }
        else if (seen_default) return fail(c, p->line, p->col, "parameter '%s' without a default follows one with a default", p->str);
        for (int j = 0; j < i; j++)
            if (strcmp(in->params[j]->str, p->str) == 0) return fail(c, p->line, p->col, "duplicate parameter '%s'", p->str);
        in->kind[i] = p->a ? AD_PARAM_VALUE : AD_PARAM_TENSOR;
    }
    in->nout = op->list2 ? op->list2->n : 1;
    if (in->nout > AD_OP_MAX_OUTS) return fail(c, op->line, op->col, "op '%s' has too many outputs (at most %d)", op->str, AD_OP_MAX_OUTS);
    if (op->list2) {
        in->outnames = ad_arena_alloc(c->A, (size_t)in->nout * sizeof(char *));
        if (!in->outnames) return fail(c, op->line, op->col, "out of memory");
        for (int k = 0; k < in->nout; k++) in->outnames[k] = op->list2->items[k]->str;
    }
    for (int k = 0; k < in->nout; k++) in->out_diff[k] = true;

    /* Pass 1: classify entries. */
    ad_nlist *E = op->list3;
    ad_node *seen[AD_OP_MAX_PARAMS + AD_OP_MAX_OUTS + 4] = {0};
    const char *seen_names[AD_OP_MAX_PARAMS + AD_OP_MAX_OUTS + 4];
    int nseen = 0;
    ad_node *result_entry = NULL, *outjvp[AD_OP_MAX_OUTS] = {0};
    ad_node *vjp_exprs[AD_OP_MAX_PARAMS];
    int nvjp_exprs = 0;
    for (int e = 0; E && e < E->n; e++) {
        ad_node *en = E->items[e];
        for (int j = 0; j < en->list->n; j++) {
            ad_node *nm = en->list->items[j];
            for (int q = 0; q < nseen; q++)
                if (strcmp(seen_names[q], nm->str) == 0)
                    return fail(c, nm->line, nm->col, "duplicate entry for '%s' in op '%s'", nm->str, op->str);
            if (nseen < (int)(sizeof seen / sizeof seen[0])) { seen[nseen] = nm; seen_names[nseen++] = nm->str; }
        }
        const char *first = en->list->items[0]->str;
        bool single = en->list->n == 1;
        if (single && strcmp(first, "forward") == 0) { in->forward = en->a; continue; }
        if (single && strcmp(first, "output_differentiability") == 0) { if (!parse_outdiff(c, en->a)) return false; continue; }
        if (single && strcmp(first, "result") == 0 && param_index(in, "result") < 0) {
            if (in->outnames && !is_name(en->a, "auto_linear"))
                return fail(c, en->line, en->col, "op '%s' has named outputs: give a JVP formula per output name, or 'result: auto_linear'", op->str);
            result_entry = en; continue;
        }
        if (single && out_index(in, first) >= 0 && param_index(in, first) < 0) { outjvp[out_index(in, first)] = en; continue; }
        for (int j = 0; j < en->list->n; j++) {
            ad_node *nm = en->list->items[j];
            int p = param_index(in, nm->str);
            if (p < 0) return fail(c, nm->line, nm->col, "'%s' is not a parameter of op '%s'", nm->str, op->str);
        }
        ad_node *x = en->a;
        if (is_name(x, "non_differentiable") || (x->kind == N_CALL && is_name(x->a, "not_implemented"))) {
            for (int j = 0; j < en->list->n; j++) {
                int p = param_index(in, en->list->items[j]->str);
                if (is_name(x, "non_differentiable")) in->kind[p] = AD_PARAM_NONDIFF;
                else {
                    in->kind[p] = AD_PARAM_NOTIMPL;
                    ad_node *m = x->list && x->list->n ? x->list->items[0] : NULL;
                    in->notimpl[p] = m && m->kind == N_STR ? m->str : "not implemented";
                }
            }
            continue;
        }
        if (in->nvjp >= AD_OP_MAX_PARAMS) return fail(c, en->line, en->col, "too many formulas");
        int v = in->nvjp++;
        in->vjp_nnames[v] = en->list->n;
        for (int j = 0; j < en->list->n; j++) {
            int p = param_index(in, en->list->items[j]->str);
            in->vjp_params[v][j] = p;
            in->kind[p] = AD_PARAM_DIFF;
        }
        vjp_exprs[nvjp_exprs++] = x;
        in->vjp[v] = en; /* replaced by the lambda below */
    }
    if (!in->forward) return fail(c, op->line, op->col, "op '%s' has no 'forward:' entry", op->str);
    in->has_formulas = in->nvjp > 0 || result_entry != NULL;
    for (int i = 0; i < in->nparams; i++)
        if (in->kind[i] == AD_PARAM_NONDIFF || in->kind[i] == AD_PARAM_NOTIMPL) in->has_formulas = true;
    for (int k = 0; k < in->nout; k++) if (outjvp[k]) in->has_formulas = true;
    if (!check_vjp_styles(c, vjp_exprs, nvjp_exprs)) return false;

    /* JVP entries. */
    int ntensor = 0;
    for (int i = 0; i < in->nparams; i++) if (in->kind[i] != AD_PARAM_VALUE) ntensor++;
    const char *names[AD_OP_MAX_PARAMS * 2 + 3 * AD_OP_MAX_OUTS + 8];
    if (result_entry) {
        ad_node *x = result_entry->a;
        if (is_name(x, "auto_element_wise")) {
            if (ntensor > 1)
                return fail(c, x->line, x->col, "auto_element_wise needs an op with a single tensor input; op '%s' has %d", op->str, ntensor);
            if (in->nvjp == 0) return fail(c, x->line, x->col, "auto_element_wise needs a VJP formula for the input of op '%s'", op->str);
            in->jvp_kind = AD_JVP_ELEMENTWISE;
        } else if (is_name(x, "auto_linear")) {
            in->jvp_kind = AD_JVP_LINEAR;
        } else {
            uses u; memset(&u, 0, sizeof u);
            walk(c, x, &u, true);
            if (c->failed) return false;
            in->jvp_kind = AD_JVP_FORMULA;
            in->njvp = 1;
            int n = jvp_names(c, names);
            in->jvp[0] = mklambda(c, names, n, x, result_entry);
        }
    } else {
        bool any = false;
        for (int k = 0; k < in->nout; k++) if (outjvp[k]) any = true;
        if (any) {
            in->jvp_kind = AD_JVP_FORMULA;
            in->njvp = in->nout;
            int n = jvp_names(c, names);
            for (int k = 0; k < in->nout; k++) {
                ad_node *x = outjvp[k] ? outjvp[k]->a : NULL;
                if (x && (is_name(x, "auto_linear") || is_name(x, "auto_element_wise")))
                    return fail(c, x->line, x->col, "auto_linear and auto_element_wise go in a 'result:' entry");
                if (x) { uses u; memset(&u, 0, sizeof u); walk(c, x, &u, true); if (c->failed) return false; }
                ad_node *none = ad_node_new(c->A, N_NONE, NULL);
                none->line = op->line; none->col = op->col;
                in->jvp[k] = mklambda(c, names, n, x ? x : none, outjvp[k] ? outjvp[k] : op);
            }
        }
    }
    /* VJP lambdas. */
    int n = vjp_names(c, names);
    for (int v = 0; v < in->nvjp; v++) {
        ad_node *en = in->vjp[v];
        const char *own[AD_OP_MAX_PARAMS * 2 + 3 * AD_OP_MAX_OUTS + 8];
        mark_unused(c, en->a, names, own, n);
        note_value_reads(in, v, en->a);
        in->vjp[v] = mklambda(c, own, n, en->a, en);
    }
    /* The forward: a kernel(...) value, or a lambda over the parameters. */
    if (!is_kernel_call(in->forward)) {
        for (int i = 0; i < in->nparams; i++) names[i] = in->params[i]->str;
        ad_node *f = in->forward;
        in->forward = mklambda(c, names, in->nparams, f, f);
    }
    return !c->failed;
}

static bool desugar(octx *c, ad_node *n);

static bool desugar_list(octx *c, ad_nlist *l) {
    for (int i = 0; l && i < l->n; i++) if (!desugar(c, l->items[i])) return false;
    return true;
}

static bool desugar(octx *c, ad_node *n) {
    if (!n || c->failed) return !c->failed;
    if (n->kind == N_OPDEF) return desugar_one(c, n);
    switch (n->kind) {
    case N_BLOCK: return desugar_list(c, n->list);
    case N_FNDEF: case N_LAMBDA: case N_NOGRAD: case N_ANOMALY: case N_WHILE: case N_FOR: return desugar(c, n->b);
    case N_IF: return desugar(c, n->b) && desugar(c, n->c);
    default: return true;
    }
}

bool ad_desugar_ops(ad_arena *A, ad_node *root, ad_op_error *err) {
    octx c;
    memset(&c, 0, sizeof c);
    c.A = A; c.err = err;
    desugar(&c, root);
    return !c.failed;
}

/* jit/plan_into.c: x.copy_(s) records whose source s a fused group makes: the
 * group writes s into x itself, and the record only commits the write. */
#include "jit/plan_into.h"

#include <string.h>

#include "tensor/device.h"
#include "autograd/op.h"
#include "vm.h"

/* An optimiser's state update (Adam's exp_avg.copy_(...), the parameter's
 * p.copy_(...)) replayed through the seam runs inplace_copy's forward: a
 * zeros_like, an add into a new tensor, then the copy: three passes and two
 * allocations per state tensor. Written by the group that makes s, it is one
 * pass. The value written is 0 + s, as inplace_copy's forward computes it
 * (a -0.0 becomes +0.0); readers of s read s itself, stored as before. */

static const ad_tensor *tensor_of(const ad_trace *T, int v) {
    if (v < 0 || v >= T->nvals || T->vals[v].v.t != AD_TTENSOR) return NULL;
    return T->vals[v].v.u.tensor;
}

/* Record n is _inplace(x, inplace_copy, [s], "copy_") under no_grad: x and s. */
static bool is_copy(const ad_tnode *n, int *x, int *s) {
    if (n->kind != AD_TN_BUILTIN || n->fn.t != AD_TBUILTIN || n->dead || n->folded || n->kw || n->grad_enabled ||
        n->nargs != 4 || n->op != AD_OP__inplace)
        return false;
    const ad_targ *a = n->args;
    if (a[0].ref < 0 || a[0].nsub || a[1].ref >= 0 || a[1].nsub || a[1].c.t != AD_TOP ||
        a[1].c.u.op->id != AD_OP_inplace_copy || a[2].ref >= 0 || a[2].nsub != 1 || a[2].sub[0].ref < 0 ||
        a[2].sub[0].nsub || a[3].ref >= 0 || a[3].nsub)
        return false;
    *x = a[0].ref;
    *s = a[2].sub[0].ref;
    return true;
}

/* Whether value u reads x's memory: x itself, or a view of it. */
static bool reads(const ad_plinto_ctx *c, int u, int x) {
    for (int depth = 0; u >= 0 && depth < 64; depth++) {
        if (u == x) return true;
        u = c->src[u] >= 0 ? c->src[u] : c->ksrc[u];
    }
    return false;
}

static bool arg_reads(const ad_plinto_ctx *c, const ad_targ *a, int x) {
    if (a->ref >= 0 && reads(c, a->ref, x)) return true;
    for (int k = 0; k < a->nsub; k++)
        if (arg_reads(c, &a->sub[k], x)) return true;
    return false;
}

/* A record after 'from' (the record making s) and before the copy_ 'to'
 * reads x: the group's write would land before its read (a block is read
 * in place; a kernel record inside the group's span runs after it). */
static bool read_after(const ad_trace *T, const ad_plinto_ctx *c, int from, int to, int x) {
    for (int k = from + 1; k < to; k++) {
        if (c->cls[k] == c->skip) continue;
        for (int a = 0; a < T->nodes[k].nargs; a++)
            if (arg_reads(c, &T->nodes[k].args[a], x)) return true;
    }
    return false;
}

/* Record i is x.copy_(s) that group g may write: x a constant (the state the
 * program reads live) of s's dtype and shape, contiguous; s made by an
 * element-wise instruction of g over g's whole space; between g and the
 * record nothing runs but other such copies of g. */
static int candidate(const ad_trace *T, const ad_plan *P, const ad_plinto_ctx *c, int i) {
    int x, s;
    if (!is_copy(&T->nodes[i], &x, &s)) return -1;
    const ad_tensor *tx = tensor_of(T, x), *ts = tensor_of(T, s);
    if (!tx || !ts || T->vals[x].kind != AD_TV_CONST || T->vals[s].kind != AD_TV_NODE || tx->dtype != ts->dtype ||
        (tx->dtype != AD_FLOAT32 && tx->dtype != AD_FLOAT64) || ad_tensor_device(tx) != 0 ||
        !ad_tensor_is_contiguous(tx) || !ad_shape_equal(tx->ndim, tx->shape, ts->ndim, ts->shape))
        return -1;
    int j = T->vals[s].node, g = c->grp[j];
    if (g < 0 || c->cls[j] < 0 || P->vals[s].numel != P->vals[c->space[g]].numel) return -1;
    if (P->split && (j < P->split) != (i < P->split)) return -1;
    for (int k = c->last[g] + 1; k < i; k++) {
        if (c->cls[k] == c->skip || c->cls[k] == c->view || c->cls[k] == c->kview) continue;
        bool ours = false;
        for (int q = 0; q < P->ninto; q++) ours |= P->intos[q].node == k && P->intos[q].group == g;
        if (!ours) return -1;
    }
    for (int q = 0; q < P->ninto; q++)
        if (P->intos[q].group == g && P->intos[q].target == x) return -1;
    if (read_after(T, c, j, i, x)) return -1;
    return g;
}

int ad_plan_into_find(ad_state *S, const ad_trace *T, ad_plan *P, const ad_plinto_ctx *c) {
    for (int i = 0; i < T->nnodes; i++) {
        if (c->grp[i] >= 0) continue;
        int g = candidate(T, P, c, i);
        if (g < 0) continue;
        ad_plinto *p = ad_realloc(S, P->intos, (size_t)(P->ninto + 1) * sizeof *p);
        if (!p) return -1;
        P->intos = p;
        p[P->ninto++] = (ad_plinto){.node = i, .target = T->nodes[i].args[0].ref,
                                    .src = T->nodes[i].args[2].sub[0].ref, .group = g};
    }
    return 0;
}

int ad_plan_into_at(const ad_plan *P, int node) {
    for (int q = 0; q < P->ninto; q++)
        if (P->intos[q].node == node) return q;
    return -1;
}

bool ad_plan_into_holds(const ad_plan *P, int q, ad_value x) {
    if (x.t != AD_TTENSOR) return false;
    const ad_tensor *t = x.u.tensor;
    const ad_plval *p = &P->vals[P->intos[q].target];
    return t->dtype == p->dtype && !t->fw_grad && ad_tensor_device(t) == 0 && ad_tensor_is_contiguous(t) &&
           ad_shape_equal(t->ndim, t->shape, p->ndim, ad_plan_dims(P, p->dims));
}

/* Another operand of the group, or another target, over x's storage. Only x
 * itself read element for element is safe: a view of x (x.t(), x[0]) reads
 * elements a block of the group may already have written. */
static bool aliased(const ad_plan *P, const ad_plgroup *g, const ad_value *env, int q) {
    const ad_tensor *t = env[P->intos[q].target].u.tensor;
    for (int i = 0; i < g->nloads; i++) {
        int v = g->loads[i].val;
        if (v == P->intos[q].target) continue;
        while (v >= 0 && (P->vals[v].where == AD_PL_KVIEW || P->vals[v].where == AD_PL_VIEW))
            v = P->vals[v].where == AD_PL_KVIEW ? P->kviews[P->vals[v].buffer].kern.a : P->vals[v].buffer;
        if (v == P->intos[q].target) return true;
        if (v < 0 || P->vals[v].where != AD_PL_ENV) continue;
        if (env[v].t == AD_TTENSOR && env[v].u.tensor->storage == t->storage) return true;
    }
    for (int r = 0; r < P->ninto; r++) {
        if (r == q || P->intos[r].group != P->intos[q].group) continue;
        const ad_value o = env[P->intos[r].target];
        if (o.t == AD_TTENSOR && o.u.tensor->storage == t->storage) return true;
    }
    return false;
}

int ad_plan_into_dest(ad_state *S, ad_plan *P, const ad_plgroup *g, ad_value *env, int q, char **out) {
    ad_plinto *p = &P->intos[q];
    if (!ad_plan_into_holds(P, q, env[p->target])) return ad_error(S, "compiled program: the target of copy_ changed");
    if (!aliased(P, g, env, q)) {
        *out = ad_tensor_data(env[p->target].u.tensor);
        return ADDSL_OK;
    }
    /* written to a tensor of its own, copied at the record, as eager orders it */
    const ad_plval *v = &P->vals[p->target];
    if (!p->tmp && !(p->tmp = ad_tensor_empty(S, v->dtype, v->ndim, ad_plan_dims(P, v->dims))))
        return S->errcode ? S->errcode : ADDSL_ENOMEM;
    *out = ad_tensor_data(p->tmp);
    return ADDSL_OK;
}

int ad_plan_into_commit(ad_state *S, const ad_plan *P, const ad_tnode *n, int q, ad_value *env) {
    ad_plinto *p = &P->intos[q];
    ad_value x = env[p->target];
    if (x.t != AD_TTENSOR) return ad_error(S, "compiled program: the target of copy_ is gone");
    ad_tensor *t = x.u.tensor;
    if (p->tmp) {
        int rc = ad_tensor_copy_into(S, t, p->tmp);
        ad_tensor_decref(S, p->tmp);
        p->tmp = NULL;
        if (rc) return rc;
    }
    ad_tensor_bump_version(t);
    if (n->out.ref >= 0) {
        ad_value_decref(S, env[n->out.ref]);
        ad_value_incref(x);
        env[n->out.ref] = x;
    }
    for (int i = 0; i < n->nfrees; i++) {
        int v = n->frees[i];
        if (P->keep && P->keep[v]) continue;
        ad_value_decref(S, env[v]);
        env[v] = ad_none();
    }
    return ADDSL_OK;
}

void ad_plan_into_free(ad_state *S, ad_plan *P) {
    for (int q = 0; P->intos && q < P->ninto; q++)
        if (P->intos[q].tmp) ad_tensor_decref(S, P->intos[q].tmp);
    ad_free(S, P->intos);
}

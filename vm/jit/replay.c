/* jit/replay.c: runs a compiled program with its plan (vm/jit/plan.h): fused groups
 * straight on the kernels, into the arena made by the first call; the other
 * records through the op seam as before. */
#include "jit/plan.h"

#include <string.h>

#include "tensor/device.h"
#include "jit/fuse.h"
#include "jit/plan_into.h"
#include "jit/plan_ops.h"
#include "trace/trace.h"

/* A tensor the groups read from the environment still looks as planned
 * (a constant read live may have been rebound to another shape, or given
 * requires_grad, or a jvp() may be active around the call). */
static bool env_tensor_ok(const ad_plan *P, int v, ad_value x) {
    if (x.t != AD_TTENSOR) return false;
    const ad_tensor *t = x.u.tensor;
    const ad_plval *p = &P->vals[v];
    /* requiring grad where the trace saw none would need a graph node; the
     * reverse happens (records that flattening put under no_grad) and is fine */
    return t->dtype == p->dtype && (p->rg || !t->requires_grad) && !t->fw_grad && ad_tensor_device(t) == 0 &&
           ad_shape_equal(t->ndim, t->shape, p->ndim, ad_plan_dims(P, p->dims));
}

/* A view record's value is read through: its source is what memory holds. */
static int through_views(const ad_plan *P, int v) {
    while (v >= 0 && P->vals[v].where == AD_PL_KVIEW) v = P->kviews[P->vals[v].buffer].kern.a;
    return v;
}

/* Inputs and constants the groups read: checked before anything runs, so a
 * plan that cannot serve the call leaves it whole to the seam. */
static bool inputs_hold(const ad_trace *T, const ad_plan *P, ad_tensor *const *inputs) {
    for (int g = 0; g < P->ngroups; g++) {
        const ad_plgroup *x = &P->groups[g];
        for (int i = 0; i < x->nloads; i++) {
            int v = through_views(P, x->loads[i].val);
            if (v < 0 || P->vals[v].where != AD_PL_ENV) continue;
            ad_value val;
            if (v < T->ninputs) val = ad_tensor_value(inputs[v]);
            else if (T->vals[v].kind == AD_TV_CONST || T->vals[v].folded) val = T->vals[v].v;
            else continue; /* made by a record through the seam: checked when read */
            if (!env_tensor_ok(P, v, val)) return false;
        }
    }
    for (int q = 0; q < P->ninto; q++)
        if (!ad_plan_into_holds(P, q, T->vals[P->intos[q].target].v)) return false;
    return true;
}

int ad_plan_view_of(ad_state *S, const ad_trace *T, ad_plan *P, ad_value *env, int v, ad_fuview *out) {
    const ad_plval *p = &P->vals[v];
    if (p->where == AD_PL_KVIEW) return ad_plk_view(S, T, P, env, v, out);
    if (p->where == AD_PL_ARENA) {
        *out = (ad_fuview){(P->arena ? (const char *)P->arena + P->buffers[p->buffer].offset : NULL), p->ndim, ad_plan_dims(P, p->dims), NULL,
                           p->numel};
        return ADDSL_OK;
    }
    if (!env_tensor_ok(P, v, env[v]))
        return ad_error(S, "compiled program: %%%d is not the %s the trace saw", v, T->vals[v].desc);
    const ad_tensor *t = env[v].u.tensor;
    *out = (ad_fuview){ad_tensor_data(t), t->ndim, t->shape, ad_tensor_is_contiguous(t) ? NULL : t->strides,
                       t->numel};
    return ADDSL_OK;
}

/* Where value v is written: the arena, or a new tensor put in the environment. */
int ad_plan_dest_of(ad_state *S, ad_plan *P, ad_value *env, int v, char **out) {
    const ad_plval *p = &P->vals[v];
    if (p->where == AD_PL_ARENA) { *out = P->arena ? (char *)P->arena + P->buffers[p->buffer].offset : NULL; return ADDSL_OK; }
    if (p->where != AD_PL_FRESH) { *out = NULL; return ADDSL_OK; }
    ad_tensor *t = ad_tensor_empty(S, p->dtype, p->ndim, ad_plan_dims(P, p->dims));
    if (!t) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    ad_value_decref(S, env[v]);
    env[v] = ad_tensor_value(t);
    *out = ad_tensor_data(t);
    return ADDSL_OK;
}

static int run_group(ad_state *S, const ad_trace *T, ad_plan *P, ad_plgroup *g, ad_value *env) {
    if (g->kern) {
        int rc = ad_plk_run(S, T, P, g->kern, env);
        for (int i = 0; i < g->nfrees && !rc; i++) {
            ad_value_decref(S, env[g->frees[i]]);
            env[g->frees[i]] = ad_none();
        }
        return rc;
    }
    ad_fuview views[AD_PLAN_MAX_LOADS];
    for (int i = 0; i < g->nloads; i++) {
        if (g->loads[i].val < 0) continue;
        int rc = ad_plan_view_of(S, T, P, env, g->loads[i].val, &views[i]);
        if (rc) return rc;
    }
    for (int i = 0; i < g->nstores; i++) {
        int rc = g->stores[i].into ? ad_plan_into_dest(S, P, g, env, g->stores[i].target, &g->dstp[i])
                                   : ad_plan_dest_of(S, P, env, g->stores[i].val, &g->dstp[i]);
        if (rc) return rc;
    }
    char *red = NULL;
    if (g->red) {
        int rc = ad_plan_dest_of(S, P, env, g->red_val, &red);
        if (rc) return rc;
    }
    ad_fuse_run(g, ad_plan_dims(P, g->dims), views, g->dstp, red, P->arena);
    /* the liveness of the records it ran (vm/trace/trace.c): values last read here */
    for (int i = 0; i < g->nfrees; i++) {
        ad_value_decref(S, env[g->frees[i]]);
        env[g->frees[i]] = ad_none();
    }
    return ADDSL_OK;
}

/* A record through the seam, with its liveness (vm/trace/trace.c) less the
 * values that planned records read through views later: those stay until
 * the call ends. nograd: the record runs under no_grad (a program in parts). */
static int run_seam(ad_state *S, const ad_plan *P, const ad_tnode *n, int i, ad_value *env, bool nograd) {
    if (P->group_at[i] == -4) return ad_plan_into_commit(S, P, n, ad_plan_into_at(P, i), env);
    ad_tnode m = *n;
    m.nfrees = 0;
    if (nograd) m.grad_enabled = false;
    int rc = ad_trace_replay_node(S, &m, env);
    for (int i = 0; i < n->nfrees; i++) {
        int v = n->frees[i];
        if (P->keep && P->keep[v]) continue;
        ad_value_decref(S, env[v]);
        env[v] = ad_none();
    }
    return rc;
}

/* The arena and the environment are made once and kept: a later call
 * allocates only the tensors it hands to the seam or returns. */
static int prepare(ad_state *S, ad_plan *P) {
    if (!P->env && !(P->env = ad_calloc(S, (size_t)(P->nvals ? P->nvals : 1), sizeof *P->env)))
        return S->errcode ? S->errcode : ADDSL_ENOMEM;
    if (!P->arena && P->arena_bytes && !(P->arena = ad_malloc(S, (size_t)P->arena_bytes)))
        return S->errcode ? S->errcode : ADDSL_ENOMEM;
    return ADDSL_OK;
}

int ad_plan_replay(ad_state *S, const ad_trace *T, ad_tensor *const *inputs, ad_value *out) {
    ad_plan *P = T->plan;
    /* A replay inside a trace (a compiled function called while another is
     * traced, or the joint program of vm/jit/compiled_vjp.c traced from this one)
     * must make its calls through the seam, where they are recorded. */
    if (!P || P->split || P->busy || S->fw_level > 0 || S->trace || !inputs_hold(T, P, inputs)) return -1;
    int rc = prepare(S, P);
    if (rc) return rc;
    ad_value *env = P->env;
    *out = ad_none();
    P->busy = true;
    ad_plan_env_fill(T, inputs);
    bool grad = S->grad_enabled;
    for (int i = 0; i < P->nsteps && !rc; i++) {
        int s = P->steps[i];
        rc = s < 0 ? run_group(S, T, P, &P->groups[-1 - s], env) : run_seam(S, P, &T->nodes[s], s, env, false);
    }
    S->grad_enabled = grad;
    if (!rc) rc = ad_trace_result_value(S, T, env, out);
    ad_plan_env_release(S, T);
    P->busy = false;
    P->runs++;
    return rc;
}

/* The values a part's groups read that are in the environment when it
 * starts (inputs, constants, output gradients, the first part's results):
 * checked first, so a part that cannot run planned is left whole to the seam. */
static int step_node(const ad_plan *P, int i) {
    int s = P->steps[i];
    return s < 0 ? P->groups[-1 - s].first_node : s;
}

/* The first step (or group) whose record is at or after 'from': both lists
 * are in program order, and a part's call should not walk the other part. */
static int first_step(const ad_plan *P, int from) {
    int lo = 0, hi = P->nsteps;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (step_node(P, mid) < from) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int first_group(const ad_plan *P, int from) {
    int lo = 0, hi = P->ngroups;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (P->groups[mid].first_node < from) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool part_holds(const ad_trace *T, const ad_plan *P, const ad_value *env, int from, int to) {
    for (int g = first_group(P, from); g < P->ngroups && P->groups[g].first_node < to; g++) {
        const ad_plgroup *x = &P->groups[g];
        for (int i = 0; i < x->nloads; i++) {
            int v = through_views(P, x->loads[i].val);
            if (v < 0 || P->vals[v].where == AD_PL_ARENA) continue;
            const ad_tval *tv = &T->vals[v];
            if (tv->kind == AD_TV_NODE && !tv->folded && tv->node >= from) continue; /* made in this part */
            if (!env_tensor_ok(P, v, env[v])) return false;
        }
    }
    for (int q = 0; q < P->ninto; q++)
        if (P->intos[q].node >= from && P->intos[q].node < to && !ad_plan_into_holds(P, q, env[P->intos[q].target]))
            return false;
    return true;
}

/* The second part left to the seam reads the first part's views as
 * tensors: they are made now, from their sources (kept in 'env'). */
static int make_crossing_views(ad_state *S, const ad_trace *T, const ad_plan *P, ad_value *env, int from) {
    for (int k = 0; k < P->nkviews; k++) {
        const ad_plkview *kv = &P->kviews[k];
        if (!kv->cross || kv->node >= from || env[T->nodes[kv->node].out.ref].t != AD_TNONE) continue;
        ad_tnode m = T->nodes[kv->node];
        m.grad_enabled = false;
        m.nfrees = 0; /* its sources stay: the second part may read them too */
        int rc = ad_trace_replay_node(S, &m, env);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

/* The plan's own environment, lent to a call run in parts (vm/jit/compiled_vjp.c) so
 * that a call costs the values it holds, not a whole environment per program
 * value: NULL where the plan cannot serve a part (the caller makes its own). */
ad_value *ad_plan_part_env(ad_state *S, const ad_trace *T) {
    ad_plan *P = T->plan;
    if (!P || !P->split || P->busy || S->fw_level > 0 || S->trace) return NULL;
    if (prepare(S, P)) { ad_clear_error(S); return NULL; }
    return P->env;
}

/* A planned run reads, of what a call brings, only the values at envvals:
 * the call's inputs and the program's constants (a placeholder, an output
 * gradient of a part, stays none for the caller to put). */
void ad_plan_env_fill(const ad_trace *T, ad_tensor *const *inputs) {
    const ad_plan *P = T->plan;
    for (int i = 0; i < P->nenvvals; i++) {
        int v = P->envvals[i];
        if (v < T->ninputs) P->env[v] = ad_tensor_value(inputs[v]);
        else if (T->vals[v].kind != AD_TV_INPUT) P->env[v] = T->vals[v].v;
        else continue;
        ad_value_incref(P->env[v]);
    }
}

/* A planned run puts values in the environment only at envvals (inputs,
 * constants, placeholders, results of the seam and fresh values): releasing
 * those empties it. */
void ad_plan_env_release(ad_state *S, const ad_trace *T) {
    const ad_plan *P = T->plan;
    for (int i = 0; i < P->nenvvals; i++) {
        int v = P->envvals[i];
        ad_value_decref(S, P->env[v]);
        P->env[v] = ad_none();
    }
}

static int run_part(ad_state *S, const ad_trace *T, ad_plan *P, ad_value *env, int from, int to) {
    int rc = prepare(S, P);
    if (rc) return rc;
    P->busy = true;
    bool grad = S->grad_enabled;
    for (int i = first_step(P, from); i < P->nsteps && !rc; i++) {
        int s = P->steps[i];
        if (step_node(P, i) >= to) break;
        if (s < 0) { rc = run_group(S, T, P, &P->groups[-1 - s], env); continue; }
        rc = run_seam(S, P, &T->nodes[s], s, env, true);
    }
    S->grad_enabled = grad;
    P->busy = false;
    P->runs++;
    return rc;
}

int ad_plan_run_part(ad_state *S, const ad_trace *T, ad_value *env, int from, int to) {
    ad_plan *P = T->plan;
    if (!P || !P->split) return -1;
    if (P->busy || S->fw_level > 0 || S->trace || !part_holds(T, P, env, from, to)) {
        /* the caller runs the records through the seam: they read views as tensors */
        int rc = from > 0 ? make_crossing_views(S, T, P, env, from) : ADDSL_OK;
        return rc ? rc : -1;
    }
    return run_part(S, T, P, env, from, to);
}

int ad_plan_run_lent(ad_state *S, const ad_trace *T, int from, int to) {
    ad_plan *P = T->plan;
    if (P->busy || !part_holds(T, P, P->env, from, to)) return -1;
    return run_part(S, T, P, P->env, from, to);
}

/* jit/compiled_vjp.c: a call of a compiled function on inputs that require grad
 * records one graph node instead of one per op. Its VJP is a compiled
 * program: per signature, the forward program is replayed once under a new
 * trace, followed by grad() of its outputs for placeholder output gradients,
 * which flattens into records of the VJP formulas (vm/trace/trace.c). That joint
 * program is split where the backward starts: a call runs the forward part
 * without graph and keeps the values the backward part reads (the liveness
 * pass already drops the others); backward through the node runs the
 * backward part on them. With create_graph, the node's formula replays the
 * whole joint program under grad mode from the saved inputs instead, so
 * higher derivatives are exact (the forward is computed again). */
#include "jit/compiled_vjp.h"

#include <stdio.h>
#include <string.h>

#include "autograd/engine.h"
#include "buf.h"
#include "autograd/op.h"
#include "jit/plan.h"
#include "tensor/tensor.h"
#include "trace/trace.h"
#include "vm.h"

/* The joint program, owned by the formula builtin of the op. */
typedef struct cvjp {
    ad_trace *T;
    int split;                    /* first record of the backward part */
    int ninputs;
    int nout;
    int oref[AD_OP_MAX_OUTS];     /* value of each output of the node */
    int gref[AD_OP_MAX_OUTS];     /* placeholder of its gradient, or -1 (not differentiable) */
    int ndiff;
    int diff[AD_OP_MAX_PARAMS];   /* inputs that take a gradient */
} cvjp;

/* The values a call keeps for the backward part (the node's last argument):
 * a whole environment (idx NULL: the first part ran through the seam), or
 * only the values the planned first part left, value idx[i] in env[i] (a
 * 100k-record chain leaves a handful of its 200k values: zeroing, copying and
 * releasing whole environments per call cost more than the chain's kernels). */
typedef struct saved_env { ad_value *env; int nvals; int *idx; } saved_env;

static void cvjp_free(ad_state *S, void *ud) {
    cvjp *J = ud;
    if (!J) return;
    ad_trace_free(S, J->T);
    ad_free(S, J);
}

static void saved_free(ad_state *S, void *ud) {
    saved_env *e = ud;
    if (!e) return;
    for (int i = 0; i < e->nvals; i++) ad_value_decref(S, e->env[i]);
    ad_free(S, e->env);
    ad_free(S, e->idx);
    ad_free(S, e);
}

/* Puts the saved values back at their places in 'env', each with a reference. */
static void put_saved(ad_value *env, const saved_env *se) {
    for (int i = 0; i < se->nvals; i++) {
        int v = se->idx ? se->idx[i] : i;
        env[v] = se->env[i];
        ad_value_incref(env[v]);
    }
}

/* A whole environment with the saved values (the backward part through the seam). */
static ad_value *saved_whole(ad_state *S, const ad_trace *T, const saved_env *se) {
    ad_value *env = ad_calloc(S, (size_t)(T->nvals ? T->nvals : 1), sizeof *env);
    if (env) put_saved(env, se);
    return env;
}

static int stub(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argv; (void)argc; (void)out;
    return ad_error(S, "a compiled backward was called without its record");
}

static ad_builtin *new_builtin(ad_state *S, const char *name, void *ud, void (*ud_free)(ad_state *, void *)) {
    ad_builtin *b = ad_calloc(S, 1, sizeof *b);
    if (!b) return NULL;
    b->hdr.refcount = 1;
    b->name = name;
    b->fn = stub;
    b->nparams = -1;
    b->kid = -1;
    b->ud = ud;
    b->ud_free = ud_free;
    return b;
}

bool ad_cvjp_wanted(const ad_state *S, ad_tensor *const *inputs, int ninputs) {
    if (S->trace || !S->grad_enabled) return false;
    bool any = false;
    for (int i = 0; i < ninputs; i++) {
        if (inputs[i]->fw_grad) return false;
        if (inputs[i]->requires_grad) any = true;
    }
    return any;
}

/* The tensors of value v, in order; false past 'max'. */
bool ad_cvjp_collect(ad_value v, ad_tensor **outs, int *n, int max) {
    if (v.t == AD_TTENSOR) {
        if (*n >= max) return false;
        outs[(*n)++] = v.u.tensor;
        return true;
    }
    if (ad_is_seq(v))
        for (int64_t i = 0; i < v.u.l->len; i++)
            if (!ad_cvjp_collect(v.u.l->items[i], outs, n, max)) return false;
    return true;
}

static void collect_refs(const ad_targ *a, int *refs, int *n) {
    if (a->ref >= 0) { refs[(*n)++] = a->ref; return; }
    for (int i = 0; i < a->nsub; i++) collect_refs(&a->sub[i], refs, n);
}

static int grad_value(ad_state *S, ad_value *out) {
    int slot = ad_global_slot(S, "grad", false);
    if (slot < 0 || !S->globals->defined[slot]) return ad_error(S, "compile(): the builtin grad is not defined");
    *out = S->globals->values[slot];
    return ADDSL_OK;
}

static bool eligible(const ad_trace *P, char *why, size_t nwhy) {
    if (P->ninputs < 1 || P->ninputs >= AD_OP_MAX_PARAMS) {
        snprintf(why, nwhy, "%d tensor inputs (one node takes 1 to %d)", P->ninputs, AD_OP_MAX_PARAMS - 1);
        return false;
    }
    for (int i = 0; i < P->nnodes; i++) {
        const ad_tnode *n = &P->nodes[i];
        if (n->dead || n->folded) continue;
        if (n->effect || n->random) {
            snprintf(why, nwhy, "the program has effects or random draws (line %d)", n->line);
            return false;
        }
    }
    return true;
}

/* Traces P's replay and the flattened grad() of its outputs into J->T. */
static int trace_joint(ad_state *S, const ad_trace *P, ad_tensor *const *xs, cvjp *J, char *why, size_t nwhy) {
    ad_trace *T = J->T;
    ad_value y = ad_none(), gres = ad_none(), gfn;
    int rc = grad_value(S, &gfn);
    if (rc) return rc;
    ad_tensor *outs[AD_OP_MAX_OUTS + 1];
    ad_value roots = ad_none(), seeds = ad_none(), ins = ad_none();
    int nout = 0;
    rc = ad_trace_replay(S, P, xs, &y);
    if (!rc && !ad_cvjp_collect(y, outs, &nout, AD_OP_MAX_OUTS)) {
        snprintf(why, nwhy, "more than %d tensor outputs", AD_OP_MAX_OUTS);
        goto done;
    }
    if (rc) goto done;
    J->nout = nout;
    ad_list *rl = ad_list_new(S, AD_TLIST, 0), *sl = ad_list_new(S, AD_TLIST, 0), *il = ad_list_new(S, AD_TLIST, 0);
    if (rl) roots = ad_list_value(rl, AD_TLIST);
    if (sl) seeds = ad_list_value(sl, AD_TLIST);
    if (il) ins = ad_list_value(il, AD_TLIST);
    if (!rl || !sl || !il) { rc = S->errcode ? S->errcode : ADDSL_ENOMEM; goto done; }
    for (int k = 0; k < nout; k++) {
        ad_tensor *o = outs[k];
        int id = ad_trace_value_of(T, o);
        J->gref[k] = -1;
        if (id < 0 || T->vals[id].kind != AD_TV_NODE) {
            snprintf(why, nwhy, "output %d is an input or a constant", k);
            goto done;
        }
        for (int j = 0; j < k; j++)
            if (outs[j] == o) { snprintf(why, nwhy, "output %d is returned twice", k); goto done; }
        for (int i = 0; i < P->ninputs; i++)
            if (xs[i] == o) { snprintf(why, nwhy, "output %d is an input", k); goto done; }
        if (!o->requires_grad || !ad_dtype_is_float(o->dtype)) continue;
        ad_tensor *g = ad_tensor_full_like(S, o, 0.0);
        if (!g) { rc = S->errcode; goto done; }
        int gid = ad_trace_placeholder(S, T, g);
        ad_value gv = ad_tensor_value(g);
        if (gid < 0) { ad_value_decref(S, gv); rc = -gid; goto done; }
        J->gref[k] = gid;
        if ((rc = ad_list_push(S, sl, gv))) goto done;
        ad_tensor_incref(o);
        if ((rc = ad_list_push(S, rl, ad_tensor_value(o)))) goto done;
    }
    if (rl->len == 0) { snprintf(why, nwhy, "no output requires grad"); goto done; }
    for (int i = 0; i < P->ninputs; i++) {
        if (!xs[i]->requires_grad) continue;
        J->diff[J->ndiff++] = i;
        ad_tensor_incref(xs[i]);
        if ((rc = ad_list_push(S, il, ad_tensor_value(xs[i])))) goto done;
    }
    J->split = T->nnodes;
    ad_value args[6] = {roots, ins, seeds, ad_none(), ad_bool(false), ad_bool(true)};
    rc = ad_vm_call_value(S, gfn, 6, args, &gres);
    if (rc) goto done;
    if (T->fail[0] || T->note[0] || T->flattened != 1) {
        snprintf(why, nwhy, "its backward does not flatten (%s)", T->fail[0] ? T->fail : T->note[0] ? T->note : "?");
        goto done;
    }
    /* The result: f's outputs and one gradient per input (none for the others). */
    ad_list *grads = ad_list_new(S, AD_TLIST, P->ninputs);
    ad_list *pair = ad_list_new(S, AD_TTUPLE, 2);
    if (!grads || !pair) {
        if (grads) ad_value_decref(S, ad_list_value(grads, AD_TLIST));
        if (pair) ad_value_decref(S, ad_list_value(pair, AD_TTUPLE));
        rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
        goto done;
    }
    for (int j = 0; j < J->ndiff && ad_is_seq(gres) && j < gres.u.l->len; j++) {
        grads->items[J->diff[j]] = gres.u.l->items[j];
        ad_value_incref(gres.u.l->items[j]);
    }
    pair->items[0] = y; ad_value_incref(y);
    pair->items[1] = ad_list_value(grads, AD_TLIST);
    ad_value pv = ad_list_value(pair, AD_TTUPLE);
    rc = ad_trace_set_result(S, T, pv);
    ad_value_decref(S, pv);
done:
    ad_value_decref(S, y);
    ad_value_decref(S, gres);
    ad_value_decref(S, roots);
    ad_value_decref(S, seeds);
    ad_value_decref(S, ins);
    return rc;
}

static int formula(ad_state *S, ad_builtin *b, const ad_value *argv, int argc, const ad_list *kw, ad_value *out);

static ad_opdef *make_op(ad_state *S, cvjp *J, ad_tensor *const *inputs) {
    ad_opdef *op = ad_calloc(S, 1, sizeof *op);
    if (!op) return NULL;
    op->hdr.refcount = 1;
    op->nparams = J->ninputs + 1;
    op->name = ad_malloc(S, 16);
    op->pnames = ad_calloc(S, (size_t)op->nparams, sizeof *op->pnames);
    op->vjp = ad_calloc(S, 1, sizeof *op->vjp);
    bool ok = op->name && op->pnames && op->vjp;
    for (int i = 0; ok && i < op->nparams; i++) {
        op->pnames[i] = ad_malloc(S, 16);
        if (!op->pnames[i]) { ok = false; break; }
        if (i < J->ninputs) snprintf(op->pnames[i], 16, "input%d", i);
        else snprintf(op->pnames[i], 16, "saved");
    }
    ad_builtin *fb = ok ? new_builtin(S, "compiled_backward", J, cvjp_free) : NULL;
    if (!fb) { ad_opdef_free(S, op); return NULL; }
    fb->call = formula;
    snprintf(op->name, 16, "compiled");
    for (int i = 0; i < J->ninputs; i++) op->kind[i] = inputs[i]->requires_grad ? AD_PARAM_DIFF : AD_PARAM_TENSOR;
    op->kind[J->ninputs] = AD_PARAM_VALUE;
    op->nout = J->nout;
    for (int k = 0; k < J->nout; k++) op->out_diff[k] = J->gref[k] >= 0;
    op->has_formulas = true;
    op->reads_result = true; /* outputs are version-checked, as an op that saves them */
    op->nvjp = 1;
    ad_vjp_entry *v = &op->vjp[0];
    v->nnames = J->ndiff;
    for (int j = 0; j < J->ndiff; j++) {
        v->params[j] = J->diff[j];
        v->reads |= (uint32_t)1 << J->diff[j];
    }
    op->reads_args = v->reads;
    /* with create_graph the formula replays the whole program from the inputs */
    op->mentions_args = ((uint32_t)1 << J->ninputs) - 1;
    v->reads_result = true;
    v->uses = AD_VJP_USES_GRADS | AD_VJP_USES_GRADS_LIST;
    v->fn.t = AD_TBUILTIN;
    v->fn.u.bi = fb;
    op->jvp_kind = AD_JVP_NONE;
    return op;
}

int ad_cvjp_derive(ad_state *S, const ad_trace *P, ad_tensor *const *inputs, ad_opdef **opout, char *why, size_t nwhy) {
    *opout = NULL;
    why[0] = '\0';
    if (!eligible(P, why, nwhy)) return ADDSL_OK;
    cvjp *J = ad_calloc(S, 1, sizeof *J);
    ad_tensor *xs[AD_OP_MAX_PARAMS];
    int nx = 0, rc = ADDSL_OK;
    if (!J || !(J->T = ad_trace_new(S))) { ad_free(S, J); return ADDSL_ENOMEM; }
    J->ninputs = P->ninputs;
    /* Fresh leaves over the inputs' memory: the walk of grad() stays in the trace. */
    for (; nx < P->ninputs; nx++) {
        ad_tensor *a = ad_tensor_alias(S, inputs[nx]);
        if (!a) { rc = S->errcode ? S->errcode : ADDSL_ENOMEM; break; }
        a->requires_grad = inputs[nx]->requires_grad;
        xs[nx] = a;
        if ((rc = ad_trace_input(S, J->T, a))) { nx++; break; }
    }
    if (!rc) {
        ad_trace *outer = S->trace;
        bool mode = S->grad_enabled;
        S->trace = J->T;
        rc = trace_joint(S, P, xs, J, why, nwhy);
        S->trace = outer;
        S->grad_enabled = mode;
    }
    for (int i = 0; i < nx; i++) ad_tensor_decref(S, xs[i]);
    if (rc == ADDSL_ENOMEM || (rc && S->errcode == ADDSL_ENOMEM)) { cvjp_free(S, J); return ADDSL_ENOMEM; }
    if (rc) {
        /* An error replaying the program a second way: it keeps the per-op graph. */
        snprintf(why, nwhy, "tracing its backward failed: %.150s", S->errmsg);
        ad_clear_error(S);
    }
    if (why[0]) { cvjp_free(S, J); return ADDSL_OK; }
    J->T->plan_split = J->split; /* both parts planned, the environment between them */
    ad_trace_optimize(S, J->T, true);
    int refs[AD_OP_MAX_OUTS + 1], n = 0;
    collect_refs(&J->T->result.sub[0], refs, &n);
    for (int k = 0; k < n && k < J->nout; k++) J->oref[k] = refs[k];
    if (n != J->nout) { snprintf(why, nwhy, "its outputs could not be named"); cvjp_free(S, J); return ADDSL_OK; }
    ad_opdef *op = make_op(S, J, inputs);
    if (!op) { cvjp_free(S, J); return ADDSL_ENOMEM; }
    *opout = op;
    return ADDSL_OK;
}

static const cvjp *op_program(const ad_opdef *op) { return op->vjp[0].fn.u.bi->ud; }

/* An op without graph may return its input itself (contiguous): the node's
 * output gets a header of its own, as the op seam gives it when recording. */
static bool privatize(ad_state *S, ad_value *v, ad_tensor *const *inputs, int n) {
    if (v->t == AD_TTENSOR) {
        for (int i = 0; i < n; i++) {
            if (v->u.tensor != inputs[i]) continue;
            ad_tensor *a = ad_tensor_alias(S, inputs[i]);
            if (!a) return false;
            ad_tensor_decref(S, v->u.tensor);
            *v = ad_tensor_value(a);
            break;
        }
        return true;
    }
    if (ad_is_seq(*v))
        for (int64_t i = 0; i < v->u.l->len; i++)
            if (!privatize(S, &v->u.l->items[i], inputs, n)) return false;
    return true;
}

/* The first part in the plan's environment (ad_plan_part_env). Returns -1
 * (nothing left behind) where the part cannot run planned. */
static int first_part_planned(ad_state *S, const cvjp *J, ad_tensor *const *inputs) {
    const ad_trace *T = J->T;
    ad_plan_env_fill(T, inputs);
    int rc = ad_plan_run_lent(S, T, 0, J->split);
    if (rc < 0) ad_plan_env_release(S, T);
    return rc;
}

/* Moves what the first part left in the plan's environment to 'se'. */
static int keep_planned(ad_state *S, const ad_trace *T, ad_value *env, saved_env *se) {
    const ad_plan *P = T->plan;
    int n = 0;
    for (int i = 0; i < P->nenvvals; i++) n += env[P->envvals[i]].t != AD_TNONE;
    se->env = ad_malloc(S, (size_t)(n ? n : 1) * sizeof *se->env);
    se->idx = ad_malloc(S, (size_t)(n ? n : 1) * sizeof *se->idx);
    if (!se->env || !se->idx) {
        ad_plan_env_release(S, T);
        return S->errcode ? S->errcode : ADDSL_ENOMEM;
    }
    for (int i = 0; i < P->nenvvals; i++) {
        int v = P->envvals[i];
        if (env[v].t == AD_TNONE) continue;
        se->idx[se->nvals] = v;
        se->env[se->nvals++] = env[v];
        env[v] = ad_none();
    }
    return ADDSL_OK;
}

int ad_cvjp_call(ad_state *S, ad_opdef *op, ad_tensor *const *inputs, ad_value *out) {
    const cvjp *J = op_program(op);
    const ad_trace *T = J->T;
    *out = ad_none();
    saved_env *se = ad_calloc(S, 1, sizeof *se);
    if (!se) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    ad_value *env = ad_plan_part_env(S, T);
    int rc = env ? first_part_planned(S, J, inputs) : -1;
    if (rc < 0) {
        env = ad_trace_env_new(S, T, inputs);
        if (!env) { ad_free(S, se); return ADDSL_ENOMEM; }
        se->env = env;
        se->nvals = T->nvals;
        rc = ad_plan_run_part(S, T, env, 0, J->split);
        if (rc < 0) rc = ad_trace_run(S, T, env, 0, J->split, 0);
    }
    if (!rc) rc = ad_trace_build(S, T, env, &T->result.sub[0], out);
    if (!se->env) {
        /* the plan's environment: its values move to 'se' (released on an error) */
        if (!rc) rc = keep_planned(S, T, env, se);
        else ad_plan_env_release(S, T);
    }
    ad_tensor *outs[AD_OP_MAX_OUTS];
    int nout = 0;
    if (!rc && (!ad_cvjp_collect(*out, outs, &nout, AD_OP_MAX_OUTS) || nout != J->nout))
        rc = ad_error(S, "compiled program: its outputs changed since the trace");
    if (!rc && !privatize(S, out, inputs, J->ninputs)) rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
    nout = 0;
    if (!rc) ad_cvjp_collect(*out, outs, &nout, AD_OP_MAX_OUTS);
    /* The node keeps the environment; outputs in it become aliases without
     * grad_fn, which would otherwise hold the node that holds them. */
    ad_builtin *sb = rc ? NULL : new_builtin(S, "compiled_saved", se, saved_free);
    if (!rc && !sb) rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
    if (rc) {
        saved_free(S, se);
        ad_value_decref(S, *out);
        *out = ad_none();
        return rc;
    }
    for (int k = 0; k < J->nout && !rc; k++) {
        int i = J->oref[k];
        if (se->idx) for (i = 0; i < se->nvals && se->idx[i] != J->oref[k]; i++) {}
        if (i == se->nvals || se->env[i].t != AD_TTENSOR) continue;
        ad_tensor *a = ad_tensor_alias(S, se->env[i].u.tensor);
        if (!a) { rc = S->errcode ? S->errcode : ADDSL_ENOMEM; break; }
        ad_value_decref(S, se->env[i]);
        se->env[i] = ad_tensor_value(a);
    }
    ad_value sv = {.t = AD_TBUILTIN, .u.bi = sb};
    ad_value args[AD_OP_MAX_PARAMS];
    for (int i = 0; i < J->ninputs; i++) args[i] = ad_tensor_value(inputs[i]);
    args[J->ninputs] = sv;
    if (!rc) rc = ad_autograd_record(S, op, args, nout, outs);
    ad_value_decref(S, sv);
    if (rc) { ad_value_decref(S, *out); *out = ad_none(); }
    return rc;
}

static void put_grads(ad_state *S, const cvjp *J, ad_value *env, const ad_list *g) {
    for (int k = 0; k < J->nout; k++) {
        if (J->gref[k] < 0) continue;
        ad_value_decref(S, env[J->gref[k]]);
        env[J->gref[k]] = g->items[k];
        ad_value_incref(g->items[k]);
    }
}

/* The node's VJP: the backward part on the saved values and the output
 * gradients (or, with create_graph, the whole program under grad mode). */
static int formula(ad_state *S, ad_builtin *b, const ad_value *argv, int argc, const ad_list *kw, ad_value *out) {
    (void)kw;
    const cvjp *J = b->ud;
    const ad_trace *T = J->T;
    int np = J->ninputs + 1;
    *out = ad_none();
    if (argc < np + 2 || argv[np - 1].t != AD_TBUILTIN || !ad_is_seq(argv[np + 1]) || argv[np + 1].u.l->len != J->nout)
        return ad_error(S, "compiled backward: unexpected arguments");
    const saved_env *se = argv[np - 1].u.bi->ud;
    const ad_list *g = argv[np + 1].u.l;
    bool create = S->grad_enabled;
    ad_value *env = NULL;
    int rc = ADDSL_OK;
    /* planned in the plan's environment: the saved values and the output gradients only */
    bool lent = !create && se->idx && (env = ad_plan_part_env(S, T));
    if (lent) {
        put_saved(env, se);
        put_grads(S, J, env, g);
        if ((rc = ad_plan_run_lent(S, T, J->split, T->nnodes)) < 0) {
            ad_plan_env_release(S, T);
            lent = false;
            rc = ADDSL_OK;
        }
    }
    if (!lent && create) {
        ad_tensor *xs[AD_OP_MAX_PARAMS];
        for (int i = 0; i < J->ninputs; i++) {
            if (argv[i].t != AD_TTENSOR) return ad_error(S, "compiled backward: input %d was released", i);
            xs[i] = argv[i].u.tensor;
        }
        env = ad_trace_env_new(S, T, xs);
        if (!env) return ADDSL_ENOMEM;
        rc = ad_trace_run(S, T, env, 0, J->split, 1);
        if (!rc) put_grads(S, J, env, g);
        if (!rc) rc = ad_trace_run(S, T, env, J->split, T->nnodes, 1);
    } else if (!lent) {
        if (!(env = saved_whole(S, T, se))) return ADDSL_ENOMEM;
        put_grads(S, J, env, g);
        int p = ad_plan_run_part(S, T, env, J->split, T->nnodes);
        rc = p < 0 ? ad_trace_run(S, T, env, J->split, T->nnodes, 0) : p;
    }
    ad_value grads = ad_none();
    if (!rc) rc = ad_trace_build(S, T, env, &T->result.sub[1], &grads);
    if (lent) ad_plan_env_release(S, T);
    else ad_trace_env_free(S, T, env);
    if (rc) return rc;
    if (J->ndiff == 1) {
        *out = grads.u.l->items[J->diff[0]];
        ad_value_incref(*out);
        ad_value_decref(S, grads);
        return ADDSL_OK;
    }
    ad_list *l = ad_list_new(S, AD_TLIST, J->ndiff);
    if (!l) { ad_value_decref(S, grads); return S->errcode ? S->errcode : ADDSL_ENOMEM; }
    for (int j = 0; j < J->ndiff; j++) { l->items[j] = grads.u.l->items[J->diff[j]]; ad_value_incref(l->items[j]); }
    ad_value_decref(S, grads);
    *out = ad_list_value(l, AD_TLIST);
    return ADDSL_OK;
}

int ad_cvjp_print(ad_state *S, const ad_opdef *op, ad_buf *b) {
    const cvjp *J = op_program(op);
    int live = 0;
    for (int i = J->split; i < J->T->nnodes; i++) live += !J->T->nodes[i].dead && !J->T->nodes[i].folded;
    ad_buf_printf(b, "  one graph node per call with grad: its VJP runs %d backward ops (records from %d on below)\n",
                  live, J->split);
    int rc = ad_trace_print(S, J->T, b);
    return rc ? rc : b->failed ? ADDSL_ENOMEM : ADDSL_OK;
}

/* jit/compiled_jvp.c: a call of a compiled function on inputs that carry
 * forward-mode tangents runs a tangent program instead of the forward
 * program op by op with each op's JVP formula in bytecode. Per signature,
 * the forward program is replayed once under a new trace on dual inputs
 * whose tangents are inputs of that trace; the ops' JVP formulas run at the
 * recording level (vm/trace/trace.c, trace_dual_op), so the program computes the
 * outputs and their tangents with ordinary records, which the passes and
 * the plan treat like any others. A call runs it on the primals and the
 * tangents (no dual tensors, no jvp() level inside) and gives the outputs
 * their tangents at the caller's level. */
#include "jit/compiled_jvp.h"

#include <stdio.h>
#include <string.h>

#include "autograd/engine.h"
#include "buf.h"
#include "jit/compiled_vjp.h"
#include "autograd/op.h"
#include "tensor/tensor.h"
#include "trace/trace.h"

struct ad_cjvp {
    ad_trace *T;              /* inputs: the primals, then the tangents of those in 'has' */
    int ninputs;
    uint64_t has;             /* inputs that carried a tangent at the derivation */
    uint64_t rg, trg;         /* inputs, and their tangents, that required grad there */
    int ntan;
    int nout;
    bool tconst[AD_OP_MAX_OUTS]; /* tangent k is a constant of the program: copied per call */
};

static ad_tensor *active_tangent(const ad_state *S, const ad_tensor *t) {
    return S->fw_top ? ad_tensor_tangent(t, S->fw_top->id) : NULL;
}

bool ad_cjvp_wanted(const ad_state *S, ad_tensor *const *inputs, int ninputs) {
    if (S->trace || S->fw_level != 1 || !S->fw_top || ninputs > 64) return false;
    bool any = false;
    for (int i = 0; i < ninputs; i++) {
        const ad_tensor *tan = active_tangent(S, inputs[i]);
        if (!tan) continue;
        if (tan->fw_grad) return false;
        any = true;
    }
    return any;
}

/* A header over t's memory in t's graph, without its tangents: the
 * program's records build the graph of reverse over forward as eager's ops
 * would, from the caller's tensors. */
static ad_tensor *graph_alias(ad_state *S, ad_tensor *t) {
    ad_tensor *a = ad_tensor_alias(S, t);
    if (!a) return NULL;
    a->requires_grad = t->requires_grad;
    if (t->grad_fn && !t->grad_fn_weak) { a->grad_fn = t->grad_fn; t->grad_fn->refcount++; a->output_nr = t->output_nr; }
    return a;
}

void ad_cjvp_free(ad_state *S, ad_cjvp *J) {
    if (!J) return;
    ad_trace_free(S, J->T);
    ad_free(S, J);
}

/* The result of the tangent program: (f's result, [tangent or none per output tensor]). */
static int set_result(ad_state *S, ad_cjvp *J, ad_value y, uint64_t level, char *why, size_t nwhy) {
    ad_tensor *outs[AD_OP_MAX_OUTS];
    int nout = 0;
    if (!ad_cvjp_collect(y, outs, &nout, AD_OP_MAX_OUTS)) {
        snprintf(why, nwhy, "more than %d tensor outputs", AD_OP_MAX_OUTS);
        return ADDSL_OK;
    }
    J->nout = nout;
    for (int k = 0; k < nout; k++) {
        int id = ad_trace_value_of(J->T, outs[k]);
        if (id < 0 || J->T->vals[id].kind == AD_TV_CONST) {
            snprintf(why, nwhy, "output %d is not computed by the program", k);
            return ADDSL_OK;
        }
    }
    ad_list *tl = ad_list_new(S, AD_TLIST, nout), *pair = ad_list_new(S, AD_TTUPLE, 2);
    if (!tl || !pair) {
        if (tl) ad_value_decref(S, ad_list_value(tl, AD_TLIST));
        if (pair) ad_value_decref(S, ad_list_value(pair, AD_TTUPLE));
        return S->errcode ? S->errcode : ADDSL_ENOMEM;
    }
    for (int k = 0; k < nout; k++) {
        ad_tensor *tan = ad_tensor_tangent(outs[k], level);
        if (!tan) continue;
        ad_tensor_incref(tan);
        tl->items[k] = ad_tensor_value(tan);
    }
    pair->items[0] = y;
    ad_value_incref(y);
    pair->items[1] = ad_list_value(tl, AD_TLIST);
    ad_value pv = ad_list_value(pair, AD_TTUPLE);
    int rc = ad_trace_set_result(S, J->T, pv);
    ad_value_decref(S, pv);
    return rc;
}

/* Replays P on duals of the trace's inputs at a level of the derivation's
 * own, with S->trace = J->T and no other level active. */
static int trace_tangents(ad_state *S, const ad_trace *P, ad_tensor *const *xs, ad_tensor *const *ts, ad_cjvp *J,
                          char *why, size_t nwhy) {
    ad_fwlevel lv = {S->fw_ids + 1, 1, NULL};
    S->fw_ids++;
    ad_tensor *duals[64];
    int nd = 0, rc = ADDSL_OK;
    for (; nd < J->ninputs && !rc; nd++) {
        if (!(duals[nd] = ad_tensor_alias(S, xs[nd]))) { rc = S->errcode ? S->errcode : ADDSL_ENOMEM; break; }
        duals[nd]->requires_grad = xs[nd]->requires_grad;
        if (ts[nd]) rc = ad_tensor_set_tangent(S, duals[nd], lv.id, ts[nd]);
    }
    ad_value y = ad_none();
    if (!rc) {
        S->fw_top = &lv;
        S->fw_level = 1;
        J->T->soft++; /* a formula reading a value fails the derivation, not the call */
        rc = ad_trace_replay(S, P, duals, &y);
        J->T->soft--;
        S->fw_top = NULL;
        S->fw_level = 0;
    }
    for (int i = 0; i < nd; i++) ad_tensor_decref(S, duals[i]);
    if (!rc) rc = set_result(S, J, y, lv.id, why, nwhy);
    ad_value_decref(S, y);
    return rc;
}

int ad_cjvp_derive(ad_state *S, const ad_trace *P, ad_tensor *const *inputs, ad_cjvp **out, char *why, size_t nwhy) {
    *out = NULL;
    why[0] = '\0';
    ad_cjvp *J = ad_calloc(S, 1, sizeof *J);
    if (!J) return ADDSL_ENOMEM;
    J->ninputs = P->ninputs;
    /* The derivation runs with no level of the caller's active: the new
     * trace's tangents all come from its own inputs. */
    const ad_fwlevel *top = S->fw_top;
    int level = S->fw_level;
    S->fw_top = NULL;
    S->fw_level = 0;
    ad_tensor *xs[64] = {0}, *ts[64] = {0};
    int rc = (J->T = ad_trace_new(S)) ? ADDSL_OK : ADDSL_ENOMEM;
    for (int i = 0; i < P->ninputs && !rc; i++) {
        /* fresh leaves: a grad() in the program walks only the trace's nodes */
        xs[i] = ad_tensor_alias(S, inputs[i]);
        if (!xs[i]) { rc = S->errcode ? S->errcode : ADDSL_ENOMEM; break; }
        xs[i]->requires_grad = inputs[i]->requires_grad;
        if (inputs[i]->requires_grad) J->rg |= (uint64_t)1 << i;
        rc = ad_trace_input(S, J->T, xs[i]);
    }
    for (int i = 0; i < P->ninputs && !rc; i++) {
        const ad_tensor *tan = top ? ad_tensor_tangent(inputs[i], top->id) : NULL;
        if (!tan) continue;
        /* a copy: a tangent sharing its primal's memory would read as the primal */
        if (!(ts[i] = ad_tensor_clone(S, tan))) { rc = S->errcode ? S->errcode : ADDSL_ENOMEM; break; }
        ts[i]->requires_grad = tan->requires_grad;
        if (tan->requires_grad) J->trg |= (uint64_t)1 << i;
        J->has |= (uint64_t)1 << i;
        J->ntan++;
        rc = ad_trace_input(S, J->T, ts[i]);
    }
    if (!rc) {
        ad_trace *outer = S->trace;
        S->trace = J->T;
        bool mode = S->grad_enabled;
        ad_rng rng = S->rng; /* the call that follows makes the program's draws */
        rc = trace_tangents(S, P, xs, ts, J, why, nwhy);
        S->rng = rng;
        S->grad_enabled = mode;
        S->trace = outer;
    }
    S->fw_top = top;
    S->fw_level = level;
    for (int i = 0; i < P->ninputs; i++) { ad_tensor_decref(S, xs[i]); ad_tensor_decref(S, ts[i]); }
    if (rc == ADDSL_ENOMEM || (rc && S->errcode == ADDSL_ENOMEM)) { ad_cjvp_free(S, J); return ADDSL_ENOMEM; }
    if (rc) {
        snprintf(why, nwhy, "tracing its tangents failed: %.150s", S->errmsg);
        ad_clear_error(S);
    }
    if (!why[0] && J->T->fail[0]) snprintf(why, nwhy, "%s", J->T->fail);
    if (!why[0] && J->T->note[0]) snprintf(why, nwhy, "%s", J->T->note);
    if (why[0]) { ad_cjvp_free(S, J); return ADDSL_OK; }
    ad_trace_optimize(S, J->T, true);
    const ad_targ *tr = &J->T->result.sub[1];
    for (int k = 0; k < J->nout && k < tr->nsub; k++)
        J->tconst[k] = tr->sub[k].ref >= 0 && J->T->vals[tr->sub[k].ref].kind == AD_TV_CONST;
    *out = J;
    return ADDSL_OK;
}

/* The inputs of the tangent program for this call, or false when the
 * call's tangents are not as the derivation's. */
static bool call_inputs(ad_state *S, const ad_cjvp *J, ad_tensor *const *inputs, ad_tensor **ins, int *rc) {
    int n = 0, m = J->ninputs;
    for (int i = 0; i < J->ninputs; i++) {
        const ad_tensor *tan = active_tangent(S, inputs[i]);
        bool has = (J->has >> i) & 1;
        if (has != (tan != NULL) || inputs[i]->requires_grad != (bool)((J->rg >> i) & 1)) return false;
        if (tan && tan->requires_grad != (bool)((J->trg >> i) & 1)) return false;
        if (tan && (tan->dtype != inputs[i]->dtype || !ad_shape_equal(tan->ndim, tan->shape, inputs[i]->ndim, inputs[i]->shape)))
            return false;
    }
    /* Headers without tangents: the program's ops must not propagate them
     * again, and its plan reads only plain tensors. */
    for (; n < J->ninputs && !*rc; n++)
        if (!(ins[n] = graph_alias(S, inputs[n]))) *rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int i = 0; i < J->ninputs && !*rc; i++) {
        if (!((J->has >> i) & 1)) continue;
        if (!(ins[m] = graph_alias(S, active_tangent(S, inputs[i])))) *rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
        else m++;
    }
    if (*rc) {
        for (int i = 0; i < n; i++) ad_tensor_decref(S, ins[i]);
        for (int i = J->ninputs; i < m; i++) ad_tensor_decref(S, ins[i]);
    }
    return true;
}

static int give_tangents(ad_state *S, const ad_cjvp *J, ad_value y, const ad_list *tl) {
    ad_tensor *outs[AD_OP_MAX_OUTS];
    int nout = 0;
    if (!ad_cvjp_collect(y, outs, &nout, AD_OP_MAX_OUTS) || nout != J->nout || (int)tl->len != nout)
        return ad_error(S, "compiled program: its outputs changed since the trace");
    uint64_t level = S->fw_top->id;
    for (int k = 0; k < nout; k++) {
        ad_value tv = tl->items[k];
        ad_tensor *tan = tv.t != AD_TTENSOR ? ad_tensor_full_like(S, outs[k], 0.0)
                         : J->tconst[k]    ? ad_tensor_clone(S, tv.u.tensor)
                                           : (ad_tensor_incref(tv.u.tensor), tv.u.tensor);
        if (!tan) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        int rc = ad_tensor_set_tangent(S, outs[k], level, tan);
        ad_tensor_decref(S, tan);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

int ad_cjvp_call(ad_state *S, const ad_cjvp *J, ad_tensor *const *inputs, ad_value *out) {
    *out = ad_none();
    ad_tensor *ins[128];
    int rc = ADDSL_OK;
    if (!call_inputs(S, J, inputs, ins, &rc)) return -1;
    if (rc) return rc;
    const ad_fwlevel *top = S->fw_top;
    int level = S->fw_level;
    S->fw_top = NULL;
    S->fw_level = 0;
    ad_value res = ad_none();
    rc = ad_trace_replay(S, J->T, ins, &res);
    S->fw_top = top;
    S->fw_level = level;
    for (int i = 0; i < J->ninputs + J->ntan; i++) ad_tensor_decref(S, ins[i]);
    if (!rc && (res.t != AD_TTUPLE || res.u.l->len != 2 || res.u.l->items[1].t != AD_TLIST))
        rc = ad_error(S, "compiled program: its tangent program returned %s", ad_type_name(res));
    if (!rc) rc = give_tangents(S, J, res.u.l->items[0], res.u.l->items[1].u.l);
    if (!rc) { *out = res.u.l->items[0]; ad_value_incref(*out); }
    ad_value_decref(S, res);
    return rc;
}

int ad_cjvp_print(ad_state *S, const ad_cjvp *J, ad_buf *b) {
    ad_buf_printf(b, "  tangent program (calls on inputs with jvp() tangents): %d tangent input%s after the %d primal%s\n",
                  J->ntan, J->ntan == 1 ? "" : "s", J->ninputs, J->ninputs == 1 ? "" : "s");
    int rc = ad_trace_print(S, J->T, b);
    return rc ? rc : b->failed ? ADDSL_ENOMEM : ADDSL_OK;
}

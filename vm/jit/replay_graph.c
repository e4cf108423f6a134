/* jit/replay_graph.c: CUDA graphs for compiled programs on the GPU: one replay
 * through the seam captured into a graph over blocks the program owns, then
 * per call: inputs copied in, one launch, results copied out. */
#include "jit/replay_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "tensor/device.h"
#include "autograd/op.h"
#include "trace/trace.h"

struct ad_cgraph {
    bool refused;          /* runs through the seam; 'why' says why */
    char why[240];
    void *exec;            /* the instantiated graph */
    size_t nnodes;
    ad_gpool pool;         /* the blocks it reads and writes */
    ad_tensor **ins;       /* the captured inputs (held; an input given twice is one tensor) */
    int nins;
    ad_value result;       /* the captured run's result (held): copied out per call */
    uint64_t launches;
};

static const char *node_name(const ad_tnode *n) {
    if (n->fn.t == AD_TOP) return n->fn.u.op->name;
    if (n->fn.t == AD_TBUILTIN) return n->fn.u.bi->name;
    static const char *const kinds[] = {"op", "builtin", "getattr", "setattr", "setitem", "compare", "accumulate_grad"};
    return kinds[n->kind];
}

static void set_why(ad_cgraph *g, const char *msg) {
    size_t n = strlen(msg);
    if (n >= sizeof g->why) n = sizeof g->why - 1;
    memcpy(g->why, msg, n);
    g->why[n] = '\0';
}

static bool all_on_gpu(const ad_trace *T, ad_tensor *const *inputs) {
    if (T->ninputs == 0) return false;
    for (int i = 0; i < T->ninputs; i++)
        if (ad_tensor_device(inputs[i]) != AD_DEV_CUDA) return false;
    return true;
}

/* What the program does that a graph cannot repeat, or "" when nothing. */
static void static_refusal(const ad_trace *T, ad_tensor *const *inputs, char *why, size_t n) {
    /* for measuring the graph against the plain replay (bench/compile_graph_gpu.ad) */
    const char *off = getenv("ADDSL_NO_CUDA_GRAPH");
    if (off && *off && strcmp(off, "0") != 0) { snprintf(why, n, "ADDSL_NO_CUDA_GRAPH is set"); return; }
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *x = &T->nodes[i];
        if (x->dead || x->folded) continue;
        if (x->random) { snprintf(why, n, "record %d (%s) draws random numbers on the host", i, node_name(x)); return; }
        if (x->effect) {
            snprintf(why, n, "record %d (%s) has an effect (a write, a print, a .grad) a graph would not repeat", i,
                     node_name(x));
            return;
        }
    }
    for (int i = T->ninputs; i < T->nvals; i++) {
        const ad_tval *v = &T->vals[i];
        if (v->kind != AD_TV_CONST || v->folded || v->v.t != AD_TTENSOR) continue;
        if (ad_tensor_device(v->v.u.tensor) != AD_DEV_CUDA) {
            snprintf(why, n, "it reads CPU tensor %%%d live (its value would be fixed at capture)", i);
            return;
        }
    }
    for (int i = 0; i < T->ninputs; i++) {
        for (int j = 0; j < i; j++)
            if (inputs[j] != inputs[i] && inputs[j]->storage == inputs[i]->storage) {
                snprintf(why, n, "inputs %%%d and %%%d share memory", j, i);
                return;
            }
    }
    why[0] = '\0';
}

static bool owned(const ad_cgraph *g, const void *p) {
    for (int i = 0; i < g->pool.n; i++)
        if (g->pool.b[i].p == p && !g->pool.b[i].free) return true;
    return false;
}

/* The captured result may be copied out: tensors the graph writes, with no graph of their own. */
static bool result_ok(const ad_cgraph *g, ad_value v, char *why, size_t n) {
    if (v.t == AD_TTENSOR) {
        const ad_tensor *t = v.u.tensor;
        if (t->requires_grad || t->grad_fn) { snprintf(why, n, "its result carries an autograd graph"); return false; }
        if (ad_tensor_device(t) != AD_DEV_CUDA || !owned(g, t->storage->data)) {
            snprintf(why, n, "it returns a tensor it did not compute (an input, a constant or a view of one)");
            return false;
        }
        return true;
    }
    if (ad_is_seq(v))
        for (int64_t i = 0; i < v.u.l->len; i++)
            if (!result_ok(g, v.u.l->items[i], why, n)) return false;
    return true;
}

static void drop(ad_state *S, ad_cgraph *g) {
    ad_device_graph_free(S, g->exec);
    g->exec = NULL;
    ad_value_decref(S, g->result);
    g->result = ad_none();
    for (int i = 0; i < g->nins; i++) ad_tensor_decref(S, g->ins[i]);
    ad_free(S, g->ins);
    g->ins = NULL;
    g->nins = 0;
    /* after the graph and the tensors over its blocks */
    ad_device_pool_close(S, &g->pool);
}

static int stage_inputs(ad_state *S, ad_cgraph *g, const ad_trace *T, ad_tensor *const *inputs) {
    if (!(g->ins = ad_calloc(S, (size_t)T->ninputs, sizeof *g->ins))) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    g->nins = T->ninputs;
    for (int i = 0; i < T->ninputs; i++) {
        const ad_tensor *x = inputs[i];
        for (int j = 0; j < i && !g->ins[i]; j++)
            if (inputs[j] == x) { g->ins[i] = g->ins[j]; ad_tensor_incref(g->ins[i]); }
        if (g->ins[i]) continue;
        if (!(g->ins[i] = ad_tensor_empty_on(S, x->dtype, x->ndim, x->shape, AD_DEV_CUDA)))
            return S->errcode ? S->errcode : ADDSL_ENOMEM;
        /* records under grad see the leaf the trace saw; a result with a
         * graph is refused after the capture */
        g->ins[i]->requires_grad = x->requires_grad;
    }
    return ADDSL_OK;
}

static int copy_in(ad_state *S, ad_cgraph *g, ad_tensor *const *inputs) {
    for (int i = 0; i < g->nins; i++) {
        int j = 0;
        while (j < i && g->ins[j] != g->ins[i]) j++;
        if (j < i) continue; /* the same tensor given twice */
        int rc = ad_tensor_copy_into(S, g->ins[i], inputs[i]);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

/* Records one replay through the seam into the graph; what keeps it from
 * being captured refuses the program (g->refused, g->why). */
static int capture(ad_state *S, ad_cgraph *g, const ad_trace *T, ad_tensor *const *inputs) {
    static_refusal(T, inputs, g->why, sizeof g->why);
    if (g->why[0]) { g->refused = true; return ADDSL_OK; }
    int rc = stage_inputs(S, g, T, inputs);
    if (rc) return rc;
    if ((rc = ad_device_capture_begin(S, &g->pool))) return rc;
    ad_value res = ad_none();
    int rr = ad_trace_replay(S, T, g->ins, &res);
    if (rr) { set_why(g, S->errmsg); ad_clear_error(S); }
    int re = ad_device_capture_end(S, &g->exec, &g->nnodes);
    g->result = res;
    /* a result the graph cannot hand out is the reason, also when an empty
     * capture (f returning its input) did not instantiate */
    if (!rr && result_ok(g, res, g->why, sizeof g->why) && re) set_why(g, S->errmsg);
    if (re) ad_clear_error(S);
    if ((rr || re) && !g->why[0]) snprintf(g->why, sizeof g->why, "the capture failed");
    if (g->why[0]) { g->refused = true; drop(S, g); }
    return ADDSL_OK;
}

/* The captured result with each tensor copied (one copy per distinct tensor). */
static int copy_out(ad_state *S, ad_value v, ad_value *out) {
    if (v.t == AD_TTENSOR) {
        ad_tensor *c = ad_tensor_clone(S, v.u.tensor);
        if (!c) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        *out = ad_tensor_value(c);
        return ADDSL_OK;
    }
    if (!ad_is_seq(v)) { *out = v; ad_value_incref(v); return ADDSL_OK; }
    ad_list *l = ad_list_new(S, v.t, v.u.l->len);
    if (!l) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int64_t i = 0; i < v.u.l->len; i++) {
        const ad_value *items = v.u.l->items;
        int64_t k = 0;
        while (k < i && !(items[k].t == AD_TTENSOR && items[i].t == AD_TTENSOR && items[k].u.tensor == items[i].u.tensor)) k++;
        if (k < i) { l->items[i] = l->items[k]; ad_value_incref(l->items[i]); continue; }
        int rc = copy_out(S, items[i], &l->items[i]);
        if (rc) { ad_value_decref(S, ad_list_value(l, v.t)); return rc; }
    }
    if (v.u.l->names) ad_tuple_share_names(l, v.u.l->names);
    *out = ad_list_value(l, v.t);
    return ADDSL_OK;
}

int ad_cgraph_replay(ad_state *S, ad_cgraph **gp, const ad_trace *T, ad_tensor *const *inputs, ad_value *out) {
    if (S->trace || S->fw_level > 0 || !all_on_gpu(T, inputs)) return -1;
    ad_cgraph *g = *gp;
    if (!g) {
        if (!(g = ad_calloc(S, 1, sizeof *g))) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        g->result = ad_none();
        *gp = g;
        /* a capture that fails (no stream, no memory for the inputs' copies)
         * leaves the program to the seam, which raises what is really wrong */
        if (capture(S, g, T, inputs)) {
            g->refused = true;
            set_why(g, S->errmsg);
            ad_clear_error(S);
            drop(S, g);
        }
    }
    if (g->refused) return -1;
    *out = ad_none();
    int rc = copy_in(S, g, inputs);
    if (!rc) rc = ad_device_graph_launch(S, g->exec);
    if (!rc) rc = copy_out(S, g->result, out);
    if (!rc) g->launches++;
    return rc;
}

void ad_cgraph_free(ad_state *S, ad_cgraph *g) {
    if (!g) return;
    drop(S, g);
    ad_free(S, g);
}

void ad_cgraph_print(const ad_cgraph *g, ad_buf *b) {
    if (!g) return;
    if (g->refused) { ad_buf_printf(b, "  cuda graph: not used: %s\n", g->why); return; }
    ad_buf_printf(b, "  cuda graph: captured (%zu nodes, %d device blocks), replayed %llu times\n", g->nnodes,
                  g->pool.n, (unsigned long long)g->launches);
}

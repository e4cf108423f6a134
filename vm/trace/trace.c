/* trace/trace.c: the tracing mode of the op seam and the program it builds: records
 * of op and builtin calls over SSA values, the passes over them, and replay.
 *
 * A call is recorded at the outermost level only: an op's forward, a VJP
 * formula run by backward()/grad(), a builtin's own work all happen inside
 * the recorded call (depth > 0) and run again, whole, when it is replayed.
 * That keeps the replay exact: it makes the same op calls through the same
 * seam (ad_op_call), so autograd records the same nodes as the eager run. */
#include "trace/trace.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../builtins/builtins.h"
#include "ad_assert.h"
#include "autograd/engine.h"
#include "buf.h"
#include "tensor/device.h"
#include "dict.h"
#include "autograd/inplace.h"
#include "autograd/library.h"
#include "autograd/op.h"
#include "jit/plan.h"
#include "trace/containers.h"
#include "trace/simplify.h"
#include "tensor/tensor.h"
#include "vm.h"

/* ---- values and the tensor map ---- */

static size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33;
    return (size_t)x;
}

static int pm_find(const ad_ptrmap *m, const void *key) {
    if (!m->cap) return -1;
    size_t mask = (size_t)m->cap - 1;
    for (size_t i = hash_ptr(key) & mask;; i = (i + 1) & mask) {
        if (!m->keys[i]) return -1;
        if (m->keys[i] == key) return m->ids[i];
    }
}

static void pm_put_raw(const void **keys, int *ids, int cap, const void *key, int id) {
    size_t mask = (size_t)cap - 1;
    for (size_t i = hash_ptr(key) & mask;; i = (i + 1) & mask) {
        if (!keys[i] || keys[i] == key) { keys[i] = key; ids[i] = id; return; }
    }
}

static int pm_set(ad_state *S, ad_ptrmap *m, const void *key, int id) {
    if (2 * (m->n + 1) > m->cap) {
        int cap = m->cap ? 2 * m->cap : 64;
        const void **keys = ad_calloc(S, (size_t)cap, sizeof *keys);
        int *ids = ad_calloc(S, (size_t)cap, sizeof *ids);
        if (!keys || !ids) { ad_free(S, (void *)keys); ad_free(S, ids); return ADDSL_ENOMEM; }
        for (int i = 0; i < m->cap; i++)
            if (m->keys[i]) pm_put_raw(keys, ids, cap, m->keys[i], m->ids[i]);
        ad_free(S, (void *)m->keys); ad_free(S, m->ids);
        m->keys = keys; m->ids = ids; m->cap = cap;
    }
    if (pm_find(m, key) < 0) m->n++;
    pm_put_raw(m->keys, m->ids, m->cap, key, id);
    return ADDSL_OK;
}

static void pm_clear(ad_ptrmap *m) {
    if (m->cap) memset((void *)m->keys, 0, (size_t)m->cap * sizeof *m->keys);
    m->n = 0;
}

static void pm_free(ad_state *S, ad_ptrmap *m) {
    ad_free(S, (void *)m->keys); ad_free(S, m->ids);
    *m = (ad_ptrmap){0};
}

static int map_find(const ad_trace *T, const ad_tensor *t) { return pm_find(&T->tmap, t); }
static int map_set(ad_state *S, ad_trace *T, const ad_tensor *t, int id) { return pm_set(S, &T->tmap, t, id); }
/* storage -> the newest value over it; older ones chain through prev_storage. */
static int smap_find(const ad_trace *T, const void *st) { return pm_find(&T->smap, st); }
static int smap_set(ad_state *S, ad_trace *T, const void *st, int id) { return pm_set(S, &T->smap, st, id); }

static bool gnode_has(const ad_trace *T, const void *node) {
    if (!T->gcap) return false;
    size_t m = (size_t)T->gcap - 1;
    for (size_t i = hash_ptr(node) & m; T->gnodes[i]; i = (i + 1) & m)
        if (T->gnodes[i] == node) return true;
    return false;
}

static void gnode_add(ad_state *S, ad_trace *T, const void *node) {
    if (gnode_has(T, node)) return;
    if (2 * (T->gn + 1) > T->gcap) {
        int cap = T->gcap ? 2 * T->gcap : 64;
        const void **nodes = ad_calloc(S, (size_t)cap, sizeof *nodes);
        /* Without room the node stays unknown: a backward through it is kept as one record. */
        if (!nodes) { ad_clear_error(S); return; }
        for (int i = 0; i < T->gcap; i++) {
            if (!T->gnodes[i]) continue;
            size_t m = (size_t)cap - 1, j = hash_ptr(T->gnodes[i]) & m;
            while (nodes[j]) j = (j + 1) & m;
            nodes[j] = T->gnodes[i];
        }
        ad_free(S, (void *)T->gnodes);
        T->gnodes = nodes; T->gcap = cap;
    }
    if (T->nglog == T->capglog) {
        int cap = T->capglog ? 2 * T->capglog : 64;
        const void **log = ad_realloc(S, (void *)T->glog, (size_t)cap * sizeof *log);
        if (!log) { ad_clear_error(S); return; }
        T->glog = log; T->capglog = cap;
    }
    T->glog[T->nglog++] = node;
    size_t m = (size_t)T->gcap - 1, j = hash_ptr(node) & m;
    while (T->gnodes[j]) j = (j + 1) & m;
    T->gnodes[j] = node;
    T->gn++;
}

static void describe(ad_value v, char *out, size_t n) {
    if (v.t != AD_TTENSOR) { snprintf(out, n, "%s", ad_type_name(v)); return; }
    const ad_tensor *t = v.u.tensor;
    size_t k = (size_t)snprintf(out, n, "%s[", ad_dtype_name(t->dtype));
    for (int i = 0; i < t->ndim && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (k < n) k += (size_t)snprintf(out + k, n - k, "]%s", t->requires_grad ? " rg" : "");
    if (k < n && ad_tensor_device(t)) snprintf(out + k, n - k, " %s", ad_device_name(ad_tensor_device(t)));
}

/* The program is in SSA order (vm/ad_assert.h): every value an argument of
 * record 'i' names exists and, when a record made it, an earlier record did. */
static bool targ_ordered(const ad_trace *T, const ad_targ *a, int i) {
    if (a->sub) {
        if (a->ref >= 0 || a->nsub < 0 || (a->seqt != AD_TLIST && a->seqt != AD_TTUPLE)) return false;
        for (int k = 0; k < a->nsub; k++)
            if (!targ_ordered(T, &a->sub[k], i)) return false;
        return true;
    }
    if (a->ref < 0) return ad_vtype_valid(a->c.t);
    if (a->ref >= T->nvals) return false;
    const ad_tval *v = &T->vals[a->ref];
    return v->kind != AD_TV_NODE || (v->node >= 0 && v->node < i);
}

/* Record i's outputs are values it made itself. */
static bool targ_made_by(const ad_trace *T, const ad_targ *a, int i) {
    if (a->sub) {
        for (int k = 0; k < a->nsub; k++)
            if (!targ_made_by(T, &a->sub[k], i)) return false;
        return true;
    }
    return a->ref < 0 || (a->ref < T->nvals && T->vals[a->ref].kind == AD_TV_NODE && T->vals[a->ref].node == i);
}

__attribute__((unused)) static bool node_ordered(const ad_trace *T, int i) {
    const ad_tnode *n = &T->nodes[i];
    if (n->nargs < 0 || n->nargs > AD_MAX_CALL_ARGS || (n->nargs && !n->args)) return false;
    for (int k = 0; k < n->nargs; k++)
        if (!targ_ordered(T, &n->args[k], i)) return false;
    for (int k = 0; k < n->nfrees; k++)
        if (n->frees[k] < 0 || n->frees[k] >= T->nvals) return false;
    return targ_made_by(T, &n->out, i);
}

/* A new value holding 'v'; returns its id or -1. */
static int val_new(ad_state *S, ad_trace *T, ad_tval_kind kind, ad_value v, bool dep, int node) {
    ad_assert(kind == AD_TV_NODE ? node >= 0 && node == T->nnodes : node == -1 || kind == AD_TV_CONST);
    if (T->nvals == T->capvals) {
        int cap = T->capvals ? 2 * T->capvals : 64;
        ad_tval *nv = ad_realloc(S, T->vals, (size_t)cap * sizeof *nv);
        if (!nv) return -1;
        T->vals = nv; T->capvals = cap;
    }
    ad_tval *x = &T->vals[T->nvals];
    memset(x, 0, sizeof *x);
    x->kind = kind; x->dep = dep; x->node = node; x->v = v; x->prev_storage = -1;
    ad_value_incref(v);
    describe(v, x->desc, sizeof x->desc);
    if (v.t == AD_TTENSOR) {
        const void *st = v.u.tensor->storage;
        x->prev_storage = smap_find(T, st);
        if (map_set(S, T, v.u.tensor, T->nvals) || smap_set(S, T, st, T->nvals)) { ad_value_decref(S, v); return -1; }
    }
    return T->nvals++;
}

ad_trace *ad_trace_new(ad_state *S) {
    ad_trace *T = ad_calloc(S, 1, sizeof *T);
    if (T) T->result.c = ad_none(), T->result.ref = -1, T->fw_outer = S->fw_level;
    return T;
}

static void targ_free(ad_state *S, ad_targ *a) {
    if (a->sub) {
        for (int i = 0; i < a->nsub; i++) targ_free(S, &a->sub[i]);
        ad_free(S, a->sub);
    }
    if (a->names) ad_value_decref(S, ad_list_value(a->names, AD_TTUPLE));
    a->names = NULL;
    ad_value_decref(S, a->c);
    a->c = ad_none(); a->sub = NULL; a->nsub = 0; a->ref = -1;
}

static void node_free(ad_state *S, ad_tnode *n) {
    ad_free(S, n->frees);
    for (int i = 0; i < n->nargs; i++) targ_free(S, &n->args[i]);
    ad_free(S, n->args);
    targ_free(S, &n->out);
    if (!n->weak_fn) ad_value_decref(S, n->fn);
    if (n->kw) ad_value_decref(S, ad_list_value(n->kw, AD_TTUPLE));
}

void ad_trace_free(ad_state *S, ad_trace *T) {
    if (!T) return;
    for (int i = 0; i < T->nnodes; i++) node_free(S, &T->nodes[i]);
    for (int i = 0; i < T->nvals; i++) ad_value_decref(S, T->vals[i].v);
    for (int i = 0; i < T->nguards; i++) {
        ad_value_decref(S, T->guards[i].v);
        if (T->guards[i].snap) ad_value_decref(S, ad_list_value(T->guards[i].snap, AD_TLIST));
        if (T->guards[i].cell) ad_value_decref(S, (ad_value){.t = AD_TCELL, .u.cell = T->guards[i].cell});
    }
    ad_free(S, T->guards);
    for (int i = 0; i < T->capcells; i++)
        if (T->cells[i]) ad_value_decref(S, (ad_value){.t = AD_TCELL, .u.cell = T->cells[i]});
    ad_free(S, T->cells);
    targ_free(S, &T->result);
    ad_value_decref(S, T->args);
    ad_plan_free(S, T->plan);
    ad_free(S, T->nodes); ad_free(S, T->vals);
    pm_free(S, &T->tmap); pm_free(S, &T->smap);
    ad_free(S, (void *)T->gnodes); ad_free(S, (void *)T->glog);
    ad_free(S, T);
}

int ad_trace_input(ad_state *S, ad_trace *T, ad_tensor *t) {
    /* Inputs are the program's first values, before any constant or record. */
    ad_assert(T->nvals == T->ninputs && T->nnodes == 0);
    int id = val_new(S, T, AD_TV_INPUT, ad_tensor_value(t), true, -1);
    if (id < 0) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    T->ninputs++;
    return ADDSL_OK;
}

static void set_fail(ad_trace *T, const char *why) {
    if (!T->fail[0]) snprintf(T->fail, sizeof T->fail, "%s", why);
}

/* Past AD_MAX_NEST_DEPTH levels (a list holding itself) the answer is
 * "maybe", true: the walks that follow give up on the trace there. */
static bool holds_tensor_at(ad_value v, int depth) {
    if (v.t == AD_TTENSOR) return true;
    if (ad_is_seq(v)) {
        if (depth >= AD_MAX_NEST_DEPTH) return true;
        for (int64_t i = 0; i < v.u.l->len; i++) if (holds_tensor_at(v.u.l->items[i], depth + 1)) return true;
    }
    return false;
}

static bool holds_tensor(ad_value v) { return holds_tensor_at(v, 0); }

static bool is_dep_tensor(const ad_trace *T, const ad_tensor *t) {
    int id = map_find(T, t);
    return id >= 0 && T->vals[id].dep;
}

static bool holds_dep_at(const ad_trace *T, ad_value v, int depth) {
    if (v.t == AD_TTENSOR) return is_dep_tensor(T, v.u.tensor);
    if ((ad_is_seq(v) || v.t == AD_TDICT) && depth >= AD_MAX_NEST_DEPTH) return true;
    if (ad_is_seq(v))
        for (int64_t i = 0; i < v.u.l->len; i++) if (holds_dep_at(T, v.u.l->items[i], depth + 1)) return true;
    if (v.t == AD_TDICT && !v.u.d->busy) {
        bool found = false;
        v.u.d->busy = true; /* a dict that holds itself */
        for (int64_t i = 0; i < v.u.d->n && !found; i++)
            found = v.u.d->e[i].live && holds_dep_at(T, v.u.d->e[i].val, depth + 1);
        v.u.d->busy = false;
        return found;
    }
    return false;
}

static bool holds_dep(const ad_trace *T, ad_value v) { return holds_dep_at(T, v, 0); }

/* A tensor the trace never saw that shares memory with one computed from
 * the inputs came out of a path outside the seam: its replay would be stale. */
static void check_alias(ad_trace *T, const ad_tensor *t) {
    for (int i = smap_find(T, t->storage); i >= 0; i = T->vals[i].prev_storage) {
        if (T->vals[i].dep) {
            set_fail(T, "a tensor that shares memory with a traced value was made outside the op seam");
            return;
        }
    }
}

/* A header the trace never saw over the memory of a value it did, with the
 * same layout: an alias made outside the seam (a graph node's saved input or
 * output, ad_tensor_alias). It reads what the newest such value holds. */
static int alias_of(const ad_trace *T, const ad_tensor *t) {
    for (int i = smap_find(T, t->storage); i >= 0; i = T->vals[i].prev_storage) {
        ad_value v = T->vals[i].v;
        if (v.t != AD_TTENSOR) continue;
        const ad_tensor *u = v.u.tensor;
        if (u->dtype != t->dtype || u->ndim != t->ndim || u->offset != t->offset) continue;
        bool same = true;
        for (int k = 0; k < t->ndim && same; k++) same = u->shape[k] == t->shape[k] && u->strides[k] == t->strides[k];
        if (same) return i;
    }
    return -1;
}

/* A function value made while f ran may capture traced tensors: the replay
 * would call it with the trace's values. */
static void check_closure(ad_trace *T, ad_value v) {
    if (v.t != AD_TFUNC) return;
    const ad_closure *f = v.u.fn;
    for (int i = 0; i < f->nupvals; i++)
        if (f->upvals[i] && holds_dep(T, f->upvals[i]->v)) {
            set_fail(T, "a function passed to a builtin captures a traced tensor");
            return;
        }
}

/* An argument slot holding nothing yet. */
static void targ_clear(ad_targ *a) {
    a->ref = -1; a->c = ad_none(); a->sub = NULL; a->nsub = 0; a->seqt = AD_TLIST; a->names = NULL;
}

/* The shell of a list or tuple argument 'v': its kind, names and room for its items. */
static int targ_seq(ad_state *S, ad_targ *a, ad_value v) {
    int n = (int)v.u.l->len;
    a->sub = ad_calloc(S, (size_t)(n ? n : 1), sizeof *a->sub);
    if (!a->sub) return ADDSL_ENOMEM;
    a->seqt = v.t;
    if (v.t == AD_TTUPLE && v.u.l->names) { a->names = v.u.l->names; a->names->hdr.refcount++; }
    return ADDSL_OK;
}

static int make_targ(ad_state *S, ad_trace *T, ad_value v, ad_targ *a, bool *dep) {
    targ_clear(a);
    if (v.t == AD_TTENSOR) {
        int id = map_find(T, v.u.tensor);
        if (id < 0) id = alias_of(T, v.u.tensor);
        if (id < 0) {
            check_alias(T, v.u.tensor);
            if ((id = val_new(S, T, AD_TV_CONST, v, false, -1)) < 0) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        }
        a->ref = id;
        if (T->vals[id].dep) *dep = true;
        return ADDSL_OK;
    }
    if (ad_is_seq(v) && holds_tensor(v) && S->gc.nest >= AD_MAX_NEST_DEPTH)
        set_fail(T, "a list nested too deeply (or holding itself) is passed to a call or returned");
    else if (ad_is_seq(v) && holds_tensor(v)) {
        int n = (int)v.u.l->len, rc = targ_seq(S, a, v);
        if (rc) return rc;
        S->gc.nest++;
        for (int i = 0; i < n && !rc; i++) {
            a->nsub = i + 1;
            rc = make_targ(S, T, v.u.l->items[i], &a->sub[i], dep);
        }
        S->gc.nest--;
        if (rc) return rc;
        a->nsub = n;
        return ADDSL_OK;
    }
    check_closure(T, v);
    if (v.t == AD_TDICT && holds_dep(T, v)) set_fail(T, "a dict holding traced tensors is passed to a call or returned");
    /* f may change its list after the call (append), and a replayed call
     * that changes one would change it again at every call: the record
     * keeps a copy of what it held (vm/trace/containers.c). */
    if (ad_is_seq(v)) return ad_tc_copy(S, v, &a->c);
    a->c = v;
    ad_value_incref(v);
    return ADDSL_OK;
}

/* Whether argument v still holds what its record 'a' took from it. */
static bool targ_holds(const ad_targ *a, ad_value v) {
    if (a->ref >= 0) return v.t == AD_TTENSOR;
    if (!a->sub) return ad_tc_same(v, a->c);
    if (!ad_is_seq(v) || v.u.l->len != a->nsub) return false;
    for (int i = 0; i < a->nsub; i++)
        if (!targ_holds(&a->sub[i], v.u.l->items[i])) return false;
    return true;
}

/* assert() of constants (shapes, sizes: what the signature fixes) that held
 * at the trace holds at every replay. */
static bool passed_assert(const ad_tnode *n, const char *name) {
    if (strcmp(name, "assert") != 0) return false;
    for (int i = 0; i < n->nargs; i++)
        if (n->args[i].ref >= 0 || n->args[i].sub) return false;
    return true;
}

typedef enum { REACH_LOCAL, REACH_GLOBAL, REACH_ARGS } reach_kind;

/* Who can see the list 'obj' that a call changed: only f (made while
 * tracing), code through a global or captured variable f read (whose guard
 * sees the change and makes the next call trace again), or the caller,
 * through an argument (a replay would change the traced list, not the new
 * call's). Unknown counts as the caller's. */
static reach_kind reach_of(const ad_trace *T, const void *obj) {
    int64_t budget = ad_tc_budget();
    int r = ad_tc_reaches(T->args, obj, &budget);
    if (r != 0) return REACH_ARGS;
    bool maybe = false;
    for (int i = 0; i < T->nguards; i++) {
        const ad_tguard *g = &T->guards[i];
        if (g->slot == AD_GUARD_GRAD) continue;
        budget = ad_tc_budget();
        if ((r = ad_tc_reaches(g->v, obj, &budget)) == 1) return REACH_GLOBAL;
        if (r < 0) maybe = true;
    }
    return maybe ? REACH_ARGS : REACH_LOCAL;
}

/* The lists a recorded call changed (args[i] differs from the record's copy).
 * Returns 1 when the record should be dropped: it changed only lists that f
 * made, which later records read as copies taken at their own calls. */
static int changed_lists(ad_state *S, ad_trace *T, ad_tnode *n, const ad_value *args, ad_value res) {
    bool local = false;
    for (int i = 0; i < n->nargs; i++) {
        if (!ad_is_seq(args[i]) || targ_holds(&n->args[i], args[i])) continue;
        switch (reach_of(T, args[i].u.o)) {
        case REACH_ARGS: set_fail(T, "it changes a list passed to it, which a replay would not do"); return 0;
        case REACH_GLOBAL:
            /* as eager: the list itself (its guard traces again at the next call) */
            if (!n->args[i].sub) {
                ad_value_decref(S, n->args[i].c);
                n->args[i].c = args[i];
                ad_value_incref(args[i]);
            }
            break;
        case REACH_LOCAL: local = true; break;
        }
    }
    if (!local) return 0;
    if (res.t == AD_TNONE && !n->random) return 1;
    /* a plain result is fixed at the trace (record() drops the call) */
    if (!holds_tensor(res)) return 0;
    set_fail(T, "a call changes a list made by f and returns a tensor");
    return 0;
}

/* Output 'v' of node 'node': each tensor becomes a new value (an in-place
 * result, the same tensor as its input, becomes the new version of it). */
static int bind_out(ad_state *S, ad_trace *T, ad_value v, int node, bool dep, ad_targ *a) {
    targ_clear(a);
    if (v.t == AD_TTENSOR) {
        int id = val_new(S, T, AD_TV_NODE, v, dep, node);
        if (id < 0) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        a->ref = id;
        return ADDSL_OK;
    }
    if (ad_is_seq(v) && holds_tensor(v) && S->gc.nest >= AD_MAX_NEST_DEPTH)
        set_fail(T, "a call returned a list nested too deeply (or holding itself)");
    else if (ad_is_seq(v) && holds_tensor(v)) {
        int n = (int)v.u.l->len, rc = targ_seq(S, a, v);
        if (rc) return rc;
        S->gc.nest++;
        for (int i = 0; i < n && !rc; i++) {
            a->nsub = i + 1;
            rc = bind_out(S, T, v.u.l->items[i], node, dep, &a->sub[i]);
        }
        S->gc.nest--;
        return rc;
    }
    a->c = v;
    ad_value_incref(v);
    return ADDSL_OK;
}

int ad_trace_set_result(ad_state *S, ad_trace *T, ad_value v) {
    bool dep = false;
    targ_free(S, &T->result);
    return make_targ(S, T, v, &T->result, &dep);
}

/* ---- recording ---- */

static int run_call(ad_state *S, const ad_tnode *n, const ad_value *args, ad_value *out) {
    *out = ad_none();
    switch (n->kind) {
    case AD_TN_OP: return ad_op_call(S, n->fn.u.op, args, n->nargs, n->kw, out);
    case AD_TN_BUILTIN: return ad_vm_call_builtin(S, n->fn.u.bi, args, n->nargs, n->kw, out);
    case AD_TN_GETATTR: return ad_vm_get_attr(S, args[0], n->attr, out);
    case AD_TN_SETATTR: return ad_vm_set_attr(S, args[0], n->attr, args[1]);
    case AD_TN_SETINDEX: return ad_vm_set_index(S, args[0], n->nargs - 2, args + 1, args[n->nargs - 1]);
    case AD_TN_COMPARE:
        /* A program replayed while another is traced (vm/jit/compiled_vjp.c) is recorded there. */
        if (ad_trace_on(S)) return ad_trace_vm(S, AD_TN_COMPARE, n->attr, args, 2, out);
        return ad_bi_compare(S, n->attr, args[0], args[1], out);
    case AD_TN_ACCUMGRAD:
        if (args[0].t != AD_TTENSOR || args[1].t != AD_TTENSOR)
            return ad_error(S, "compiled program: accumulate_grad() needs two tensors");
        ad_tensor_incref(args[1].u.tensor);
        return ad_autograd_accum_leaf(S, args[0].u.tensor, args[1].u.tensor, args[2].t == AD_TBOOL && args[2].u.b);
    }
    return ad_error(S, "compiled program: unknown record");
}

static const char *node_name(const ad_tnode *n) {
    switch (n->kind) {
    case AD_TN_OP: return n->fn.u.op->name;
    case AD_TN_BUILTIN: return n->fn.u.bi->name;
    case AD_TN_GETATTR: return "getattr";
    case AD_TN_SETATTR: return "setattr";
    case AD_TN_SETINDEX: return "setitem";
    case AD_TN_COMPARE: return "compare";
    case AD_TN_ACCUMGRAD: return "accumulate_grad";
    }
    return "?";
}

/* Builtins whose result is a fresh tensor computed from their arguments alone
 * (_index_check: its argument, or an error): the passes may merge, fold or
 * remove them. Any other builtin is kept in place. */
static bool pure_builtin(const char *name) {
    static const char *const pure[] = {
        "zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange",
        "linspace", "logspace", "eye", "tensor", "as_tensor", "clone", "contiguous", "to", "double",
        "float", "long", "type_as", "detach", "_index_check", "repeat_interleave",
    };
    for (size_t i = 0; i < sizeof pure / sizeof pure[0]; i++) if (strcmp(name, pure[i]) == 0) return true;
    return false;
}

/* Builtins that read a tensor's metadata, not its values: fixed by the signature. */
static bool metadata_builtin(const char *name) {
    static const char *const meta[] = {
        "numel", "size", "stride", "dim", "element_size", "is_contiguous", "is_floating_point", "len",
        "type", "isinstance", "is_tensor", "nelement", "ndimension", "id", "callable", "hasattr",
    };
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++) if (strcmp(name, meta[i]) == 0) return true;
    return false;
}

static bool trailing_underscore(const char *name) {
    size_t k = strlen(name);
    return k > 1 && name[k - 1] == '_' && name[0] != '_';
}

static int record(ad_state *S, ad_tnode *n, const ad_value *args, ad_value *out);
static int data_dependent(ad_state *S, const char *what);
static int global_fn(ad_state *S, const char *name, ad_value *out);

/* Records that may run again when a replay stops at a failed guard and the
 * call traces again: they raise errors, or change only a value f made. */
static bool repeatable(const ad_trace *T, const ad_tnode *n) {
    if (!n->effect || n->dead) return true;
    if (n->random || n->kind != AD_TN_BUILTIN) return false;
    const char *name = n->fn.u.bi->name;
    if (strcmp(name, "assert") == 0 || strcmp(name, "_index_check") == 0 || strcmp(name, "_compiled_guard") == 0)
        return true;
    if (strcmp(name, "requires_grad_") == 0 && n->nargs >= 1 && n->args[0].ref >= 0)
        return T->vals[n->args[0].ref].kind == AD_TV_NODE;
    return false;
}

/* f reads the value of traced tensors (vals: the tensors among them): the
 * program guards that each holds at the call what it held at the trace
 * (_compiled_guard, vm/jit/compiled.c), so a replay takes the branch the
 * trace took or stops before any effect and the call traces again. */
static int guard_reads(ad_state *S, const ad_value *vals, int nvals, const char *what) {
    ad_trace *T = S->trace;
    /* records before guard_scan were checked by an earlier read (a rollback may have dropped some) */
    if (T->guard_scan > T->nnodes) T->guard_scan = 0;
    for (int i = T->guard_scan; i < T->nnodes; i++, T->guard_scan = i)
        if (!repeatable(T, &T->nodes[i])) {
            char why[200];
            snprintf(why, sizeof why, "data-dependent control flow (%s) after a record with an effect", what);
            set_fail(T, why);
            return ADDSL_OK;
        }
    ad_value g;
    int rc = global_fn(S, "_compiled_guard", &g);
    if (rc) return rc;
    for (int i = 0; i < nvals; i++) {
        if (vals[i].t != AD_TTENSOR || !is_dep_tensor(T, vals[i].u.tensor)) continue;
        ad_tensor *t = vals[i].u.tensor;
        if (ad_tensor_device(t)) {
            set_fail(T, "data-dependent control flow on a GPU tensor");
            return ADDSL_OK;
        }
        ad_tensor *c = ad_tensor_clone(S, t);
        if (!c) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        c->requires_grad = false;
        ad_value gargs[2] = {vals[i], ad_tensor_value(c)};
        ad_tnode n;
        memset(&n, 0, sizeof n);
        n.kind = AD_TN_BUILTIN;
        n.fn = g;
        n.nargs = 2;
        rc = record(S, &n, gargs, NULL);
        ad_tensor_decref(S, c);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

static int data_dependent_at(ad_state *S, const char *what, const ad_value *vals, int nvals) {
    ad_trace *T = S->trace;
    if (T && !T->soft && T->guard_data) {
        if (!vals) set_fail(T, "it reads a random value into control flow");
        if (T->fail[0]) return ADDSL_OK; /* the signature runs eagerly: the read is fine */
        return guard_reads(S, vals, nvals, what);
    }
    return data_dependent(S, what);
}

static int data_dependent(ad_state *S, const char *what) {
    if (S->trace && S->trace->soft) {
        /* Library code (a VJP formula, a composite's body) reads a value: the
         * flattened grad() or the composite's body is abandoned (the error
         * unwinds to it) and recorded as one call instead. A trace that
         * already failed runs eagerly anyway: the read is fine. */
        if (S->trace->fail[0]) return ADDSL_OK;
        S->trace->soft_reads++;
        snprintf(S->trace->soft_why, sizeof S->trace->soft_why, "a formula reads a traced value (%s)", what);
        return ad_error(S, "compile(): library code reads a traced value (%s)", what);
    }
    return ad_error(S, "data-dependent control flow: %s reads the value of a tensor computed from the inputs of a "
                       "compiled function, which tracing cannot follow (use tensor ops such as where(), or call "
                       "the function without compile())", what);
}

static int push_node(ad_state *S, ad_trace *T, const ad_tnode *n) {
    if (T->nnodes == T->capnodes) {
        int cap = T->capnodes ? 2 * T->capnodes : 64;
        ad_tnode *nn = ad_realloc(S, T->nodes, (size_t)cap * sizeof *nn);
        if (!nn) return ADDSL_ENOMEM;
        T->nodes = nn; T->capnodes = cap;
    }
    T->nodes[T->nnodes++] = *n;
    ad_assert(node_ordered(T, T->nnodes - 1));
    return ADDSL_OK;
}

static void note_nodes(ad_state *S, ad_trace *T, ad_value v) {
    if (v.t == AD_TTENSOR && v.u.tensor->grad_fn) gnode_add(S, T, v.u.tensor->grad_fn);
    if (ad_is_seq(v)) {
        if (S->gc.nest >= AD_MAX_NEST_DEPTH) { set_fail(T, "a call returned a list nested too deeply (or holding itself)"); return; }
        S->gc.nest++;
        for (int64_t i = 0; i < v.u.l->len; i++) note_nodes(S, T, v.u.l->items[i]);
        S->gc.nest--;
    }
}

/* Runs the call one level down (where nothing is recorded), then appends it. */
int ad_trace_fn_id(ad_value fn) {
    if (fn.t == AD_TOP) return fn.u.op->id;
    if (fn.t == AD_TBUILTIN) return ad_op_id_of(fn.u.bi->name);
    return AD_OP__NONE;
}

static int record(ad_state *S, ad_tnode *n, const ad_value *args, ad_value *out) {
    ad_trace *T = S->trace;
    const char *chunk;
    n->op = ad_trace_fn_id(n->fn);
    ad_vm_current_pos(S, &n->line, &n->col, &chunk);
    n->grad_enabled = S->grad_enabled;
    n->args = ad_calloc(S, (size_t)(n->nargs ? n->nargs : 1), sizeof *n->args);
    if (!n->args) return ADDSL_ENOMEM;
    for (int i = 0; i < n->nargs; i++) n->args[i].c = ad_none(), n->args[i].ref = -1;
    n->out.c = ad_none(); n->out.ref = -1;
    bool dep = false;
    int rc = ADDSL_OK;
    for (int i = 0; i < n->nargs && !rc; i++) rc = make_targ(S, T, args[i], &n->args[i], &dep);
    ad_value res = ad_none();
    ad_rng before = S->rng;
    /* The graph nodes an op with formulas makes save its bound arguments and
     * outputs, which the program names: a backward walk through them can be
     * flattened. (Other calls may make nodes over values they keep to themselves.) */
    bool formulas = n->kind == AD_TN_OP && n->fn.u.op->has_formulas;
    const ad_tensor *argt[8];
    const void *argfn[8];
    int nargt = 0;
    for (int i = 0; formulas && i < n->nargs && nargt < 8; i++)
        if (args[i].t == AD_TTENSOR) { argt[nargt] = args[i].u.tensor; argfn[nargt++] = args[i].u.tensor->grad_fn; }
    if (!rc) {
        T->depth++;
        rc = run_call(S, n, args, &res);
        T->depth--;
    }
    if (!rc && formulas) {
        note_nodes(S, T, res);
        for (int i = 0; i < nargt; i++)
            if (argt[i]->grad_fn && argt[i]->grad_fn != argfn[i]) gnode_add(S, T, argt[i]->grad_fn);
    }
    if (rc) { n->fn = ad_none(); n->kw = NULL; node_free(S, n); return rc; }
    /* field by field: the struct's padding (and a spare never drawn) is not initialised */
    n->random = memcmp(before.s, S->rng.s, sizeof before.s) != 0 || before.has_spare != S->rng.has_spare;
    const char *name = node_name(n);
    if (n->kind == AD_TN_BUILTIN && (changed_lists(S, T, n, args, res) || passed_assert(n, name))) {
        n->fn = ad_none();
        n->kw = NULL;
        node_free(S, n);
        if (out) *out = res;
        else ad_value_decref(S, res);
        return ADDSL_OK;
    }
    if (T->soft && n->kind == AD_TN_BUILTIN && res.t == AD_TNONE && !n->random) {
        /* Library code (a composite's body) changing a list of its own
         * (append): what the list holds is in the later records' arguments. */
        bool tensors = false;
        for (int i = 0; i < n->nargs && !tensors; i++) tensors = holds_tensor(args[i]);
        if (!tensors) { n->fn = ad_none(); n->kw = NULL; node_free(S, n); if (out) *out = res; return ADDSL_OK; }
    }
    if ((n->kind == AD_TN_OP || n->kind == AD_TN_BUILTIN) && !holds_tensor(res) && res.t != AD_TNONE) {
        /* A plain value: fixed by the signature unless it was read from the data. */
        n->fn = ad_none(); n->kw = NULL; node_free(S, n);
        if ((dep || n->random) && !metadata_builtin(name)) {
            char what[96];
            snprintf(what, sizeof what, "%s()", name);
            /* a random plain value (a draw read out) cannot be guarded */
            if ((rc = data_dependent_at(S, what, n->random ? NULL : args, n->nargs))) {
                ad_value_decref(S, res);
                return rc;
            }
        }
        if (out) *out = res; else ad_value_decref(S, res);
        return ADDSL_OK;
    }
    n->effect = n->random || res.t == AD_TNONE || trailing_underscore(name) || n->kind == AD_TN_GETATTR ||
                n->kind == AD_TN_SETATTR || n->kind == AD_TN_SETINDEX || n->kind == AD_TN_ACCUMGRAD ||
                (n->kind == AD_TN_BUILTIN && (n->fn.u.bi->call || !pure_builtin(name)));
    n->weak_fn = n->fn.t == AD_TBUILTIN && n->fn.u.bi == T->self;
    if (!n->weak_fn) ad_value_incref(n->fn);
    if (n->kw) ad_value_incref(ad_list_value(n->kw, AD_TTUPLE));
    rc = bind_out(S, T, res, T->nnodes, dep || n->random, &n->out);
    if (!rc) rc = push_node(S, T, n);
    if (rc) { node_free(S, n); ad_value_decref(S, res); return rc; }
    if (out) *out = res; else ad_value_decref(S, res);
    return ADDSL_OK;
}

/* Drops what was recorded since the trace had nnodes records, nvals values
 * and nglog known graph nodes; the maps are rebuilt from what remains. */
static int rollback(ad_state *S, ad_trace *T, int nnodes, int nvals, int nglog) {
    for (int i = nnodes; i < T->nnodes; i++) node_free(S, &T->nodes[i]);
    T->nnodes = nnodes;
    for (int i = nvals; i < T->nvals; i++) ad_value_decref(S, T->vals[i].v);
    T->nvals = nvals;
    pm_clear(&T->tmap);
    pm_clear(&T->smap);
    if (T->gcap) memset((void *)T->gnodes, 0, (size_t)T->gcap * sizeof *T->gnodes);
    T->gn = 0;
    for (int i = 0; i < nvals; i++) {
        ad_value v = T->vals[i].v;
        if (v.t != AD_TTENSOR) continue;
        if (map_set(S, T, v.u.tensor, i) || smap_set(S, T, v.u.tensor->storage, i)) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    }
    int n = T->nglog < nglog ? T->nglog : nglog;
    T->nglog = 0;
    for (int i = 0; i < n; i++) gnode_add(S, T, T->glog[i]);
    return ADDSL_OK;
}

static bool any_requires_grad(const ad_value *args, int nargs) {
    for (int i = 0; i < nargs; i++) {
        ad_value v = args[i];
        if (v.t == AD_TTENSOR && v.u.tensor->requires_grad) return true;
        if (ad_is_seq(v))
            for (int64_t j = 0; j < v.u.l->len; j++)
                if (v.u.l->items[j].t == AD_TTENSOR && v.u.l->items[j].u.tensor->requires_grad) return true;
    }
    return false;
}

/* Forward mode at the recording level: every active jvp() level was made
 * by a flattened jvp() of this trace, and an argument carries a tangent. */
static bool tangents_here(ad_state *S, const ad_value *args, int nargs) {
    return S->trace->fw_outer == 0 && ad_op_any_tangent(S, args, nargs);
}

/* Where a call whose op calls are recorded one by one started (a flattened
 * grad()/backward()/jvp(), a composite's body): what to roll back to. */
typedef struct soft_mark {
    int nnodes, nvals, nglog, reads;
    bool failed;
    ad_rng rng;
} soft_mark;

static soft_mark soft_enter(ad_state *S) {
    ad_trace *T = S->trace;
    soft_mark m = {T->nnodes, T->nvals, T->nglog, T->soft_reads, T->fail[0] != 0, S->rng};
    T->soft++;
    return m;
}

/* After the call, with its *rc: true when the call is over (done, or failed
 * on its own); false when something in it read a traced value: the engine
 * stopped before releasing anything, the records are rolled back (and the
 * draws), and the caller records the call as one. */
static bool soft_leave(ad_state *S, const soft_mark *m, int *rc) {
    ad_trace *T = S->trace;
    T->soft--;
    if (!*rc || m->failed || T->soft_reads == m->reads) return true;
    ad_clear_error(S);
    T->soft_reads = m->reads;
    if ((*rc = rollback(S, T, m->nnodes, m->nvals, m->nglog))) return true;
    S->rng = m->rng;
    return false;
}

/* An op with formulas on arguments with tangents: the forward is one record
 * (one level down, where the op leaves the tangents alone), then the JVP
 * formulas run here, so that their op calls are records too and the
 * outputs' tangents are values of the program. */
static int trace_dual_op(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    ad_trace *T = S->trace;
    ad_tnode n;
    memset(&n, 0, sizeof n);
    n.kind = AD_TN_OP;
    n.fn.t = AD_TOP; n.fn.u.op = op;
    n.nargs = nargs;
    n.kw = (ad_list *)kw;
    T->defer_tangents = true;
    ad_value res = ad_none();
    int rc = record(S, &n, args, &res);
    T->defer_tangents = false;
    if (!rc) rc = ad_op_tangents(S, op, args, nargs, kw, res);
    if (rc) { ad_value_decref(S, res); return rc; }
    if (out) *out = res; else ad_value_decref(S, res);
    return ADDSL_OK;
}

int ad_trace_op(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    bool dual = tangents_here(S, args, nargs);
    if (op->has_formulas && dual) return trace_dual_op(S, op, args, nargs, kw, out);
    if (!op->has_formulas && (dual || (S->grad_enabled && any_requires_grad(args, nargs)))) {
        /* A composite differentiated through its body: the body's op calls are
         * what the graph holds, so they are what the program records (a
         * backward inside f can then be flattened through them). */
        soft_mark m = soft_enter(S);
        int rc = ad_op_call_direct(S, op, args, nargs, kw, out);
        /* a body that reads a traced value makes the composite one record
         * again (its body runs whole at each replay), from the same draws */
        if (soft_leave(S, &m, &rc)) return rc;
    }
    ad_tnode n;
    memset(&n, 0, sizeof n);
    n.kind = AD_TN_OP;
    n.fn.t = AD_TOP; n.fn.u.op = op;
    n.nargs = nargs;
    n.kw = (ad_list *)kw;
    return record(S, &n, args, out);
}

/* grad(outputs, ...) and backward(tensors, ...) are flattened, their VJP
 * formulas recorded as op calls, when every graph node they walk was made by
 * a recorded op call; else one record runs the engine at each replay. */
static bool flattenable(ad_state *S, ad_trace *T, ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw) {
    bool is_grad = strcmp(b->name, "grad") == 0;
    if (!is_grad && strcmp(b->name, "backward") != 0) return false;
    int npos = nargs - (kw ? (int)kw->len : 0);
    const char *why = NULL;
    ad_tensor *roots[64];
    int nroots = 0;
    if (npos < 1) why = "its outputs are given by keyword";
    else if (S->anomaly) why = "detect_anomaly is on";
    else if (args[0].t == AD_TTENSOR) roots[nroots++] = args[0].u.tensor;
    else if (ad_is_seq(args[0]) && args[0].u.l->len <= 64) {
        for (int64_t i = 0; i < args[0].u.l->len && !why; i++) {
            if (args[0].u.l->items[i].t != AD_TTENSOR) why = "its outputs are not tensors";
            else roots[nroots++] = args[0].u.l->items[i].u.tensor;
        }
    } else why = "its outputs are not tensors";
    if (!why && !ad_autograd_graph_within(S, roots, nroots, ad_trace_knows_node))
        why = "the graph it walks has nodes made outside the trace (before f, or inside a builtin or in-place call)";
    if (!why) return true;
    if (!T->note[0]) snprintf(T->note, sizeof T->note, "%s() kept as one record: %s", b->name, why);
    return false;
}

/* _inplace(self, f, args, name) of a method such as mul_ on a tensor of the
 * trace that is no view, with a graph to record and no jvp() level: its op
 * call is a record of its own and the write another, so the graph node the
 * write moves self onto is one the trace made, and a backward through it
 * flattens. Views (their base is rebased in C) and tangents stay one record. */
static bool write_here(ad_state *S, ad_value self, ad_value f, ad_value fargs) {
    if (self.t != AD_TTENSOR || !ad_is_seq(fargs) || S->fw_level > 0) return false;
    if (f.t != AD_TOP || !f.u.op->has_formulas || fargs.u.l->len + 1 > AD_OP_MAX_PARAMS) return false;
    const ad_tensor *t = self.u.tensor;
    return !t->base && map_find(S->trace, t) >= 0 && ad_inplace_needs_graph(S, t, fargs);
}

static bool inplace_here(ad_state *S, const ad_value *args, int nargs, const ad_list *kw) {
    return !kw && nargs >= 3 && write_here(S, args[0], args[1], args[2]);
}

static int global_fn(ad_state *S, const char *name, ad_value *out) {
    int slot = ad_global_slot(S, name, false);
    if (slot >= 0) {
        int rc = ad_library_resolve(S, slot); /* loads its library file, untraced */
        if (rc) return rc;
    }
    if (slot < 0 || !S->globals->defined[slot]) return ad_error(S, "compile(): the function %s is not defined", name);
    *out = S->globals->values[slot];
    return ADDSL_OK;
}

/* The node n that made r saved tensors over t's memory: those a formula
 * reads get a copy of t's value before the write, made by a recorded
 * clone() (the replay copies it too, before the write, and a flattened
 * backward reads that copy), in t's place in the graph. The rest keep
 * plain aliases, as ad_inplace_commit would give them. */
static int protect_saved(ad_state *S, ad_tensor *r, const ad_tensor *t) {
    ad_node *n = S->grad_enabled && r->grad_fn && !r->grad_fn_weak ? r->grad_fn : NULL;
    if (!n) return ADDSL_OK;
    ad_value clone;
    int rc = global_fn(S, "clone", &clone);
    for (int i = 0; i < n->nargs && !rc; i++) {
        if (ad_node_args(n)[i].t != AD_TTENSOR) continue;
        ad_tensor *a = ad_node_args(n)[i].u.tensor;
        bool read = false;
        for (int e = 0; e < n->op->nvjp; e++) read |= (n->op->vjp[e].reads >> i) & 1u;
        if (a->storage != t->storage || !read) continue;
        ad_value cv = ad_none();
        bool grad = S->grad_enabled;
        S->grad_enabled = false;
        rc = ad_vm_call_value(S, clone, 1, &ad_node_args(n)[i], &cv);
        S->grad_enabled = grad;
        if (!rc && cv.t != AD_TTENSOR) rc = ad_error(S, "compile(): clone() returned %s", ad_type_name(cv));
        ad_tensor *c = rc ? NULL : ad_tensor_alias(S, cv.u.tensor);
        ad_value_decref(S, cv);
        if (!rc && !c) rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
        if (rc) break;
        c->requires_grad = a->requires_grad;
        if (a->grad_fn && !a->grad_fn_weak) { c->grad_fn = a->grad_fn; a->grad_fn->refcount++; c->output_nr = a->output_nr; }
        ad_tensor_decref(S, a);
        ad_node_args(n)[i] = ad_tensor_value(c);
        ad_node_versions(n)[i] = c->storage->version;
    }
    return rc;
}

/* self = f(self, fargs...) as two records: the op call, then _inplace_write. */
static int trace_write(ad_state *S, ad_value self, ad_value f, const ad_list *l, ad_value name, ad_value *out) {
    ad_tensor *t = self.u.tensor;
    int rc = ad_inplace_check(S, t);
    if (rc) return rc;
    ad_value cargs[AD_OP_MAX_PARAMS], rv = ad_none(), write, res = ad_none();
    cargs[0] = self;
    for (int64_t i = 0; i < l->len; i++) cargs[i + 1] = l->items[i];
    if ((rc = global_fn(S, "_inplace_write", &write))) return rc;
    if ((rc = ad_vm_call_value(S, f, (int)l->len + 1, cargs, &rv))) return rc;
    if (rv.t == AD_TTENSOR && rv.u.tensor->storage != t->storage) rc = protect_saved(S, rv.u.tensor, t);
    ad_value wargs[3] = {self, rv, name};
    if (!rc) rc = ad_vm_call_value(S, write, 3, wargs, &res);
    ad_value_decref(S, rv);
    if (out) *out = res; else ad_value_decref(S, res);
    return rc;
}

static int trace_inplace(ad_state *S, const ad_value *args, int nargs, ad_value *out) {
    return trace_write(S, args[0], args[1], args[2].u.l, nargs > 3 ? args[3] : ad_none(), out);
}

/* t[idx...] = v with a graph to record: index_put(t, [idx...], v) and the write. */
static int trace_setindex(ad_state *S, const ad_value *args, int nargs, bool *done) {
    *done = false;
    ad_value f;
    if (nargs < 2 || args[0].t != AD_TTENSOR || global_fn(S, "index_put", &f)) { ad_clear_error(S); return ADDSL_OK; }
    ad_list *idx = ad_list_new(S, AD_TLIST, nargs - 2), *fa = ad_list_new(S, AD_TLIST, 2);
    int rc = idx && fa ? ADDSL_OK : S->errcode ? S->errcode : ADDSL_ENOMEM;
    if (!rc) {
        for (int i = 0; i < nargs - 2; i++) { idx->items[i] = args[i + 1]; ad_value_incref(args[i + 1]); }
        fa->items[0] = ad_list_value(idx, AD_TLIST);
        idx = NULL;
        fa->items[1] = args[nargs - 1];
        ad_value_incref(args[nargs - 1]);
        ad_value fv = ad_list_value(fa, AD_TLIST);
        if (write_here(S, args[0], f, ad_list_value(fa, AD_TLIST))) {
            *done = true;
            ad_value nm = ad_none();
            rc = ad_string_value(S, "setitem", 7, &nm);
            if (!rc) rc = trace_write(S, args[0], f, fa, nm, NULL);
            ad_value_decref(S, nm);
        }
        ad_value_decref(S, fv);
        fa = NULL;
    }
    if (idx) ad_value_decref(S, ad_list_value(idx, AD_TLIST));
    if (fa) ad_value_decref(S, ad_list_value(fa, AD_TLIST));
    return rc;
}

/* Builtin b run with the op calls inside it recorded (grad()/backward() or
 * jvp() flattened), a success counted in *count; soft_leave's result. */
static bool soft_call(ad_state *S, ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw, ad_value *out,
                      int *count, int *rc) {
    ad_trace *T = S->trace;
    const ad_builtin *prev = T->through;
    T->through = b;
    soft_mark m = soft_enter(S);
    *rc = ad_vm_call_builtin(S, b, args, nargs, kw, out);
    T->through = prev;
    if (!*rc) (*count)++;
    return soft_leave(S, &m, rc);
}

int ad_trace_builtin(ad_state *S, ad_builtin *b, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    if (flattenable(S, S->trace, b, args, nargs, kw)) {
        ad_trace *T = S->trace;
        int rc;
        if (soft_call(S, b, args, nargs, kw, out, &T->flattened, &rc)) return rc;
        if (!T->note[0]) snprintf(T->note, sizeof T->note, "%s() kept as one record: a VJP formula reads a traced value", b->name);
    }
    if (strcmp(b->name, "jvp") == 0 && S->trace->fw_outer == 0) {
        /* jvp(g, primals, tangents) runs here: g's op calls and their JVP
         * formulas are records (forward mode flattened). A formula that
         * reads a traced value, or a tangent that must be made outside the
         * seam, rolls it back to one record, as for grad(). */
        ad_trace *T = S->trace;
        int rc;
        if (soft_call(S, b, args, nargs, kw, out, &T->fw_flattened, &rc)) return rc;
        if (!T->note[0]) snprintf(T->note, sizeof T->note, "jvp() kept as one record: %s", T->soft_why);
    }
    if (strcmp(b->name, "_inplace") == 0 && inplace_here(S, args, nargs, kw)) return trace_inplace(S, args, nargs, out);
    if (strcmp(b->name, "apply") == 0) {
        /* apply(f, args) is f(args...): the calls f makes are what the program records. */
        ad_trace *T = S->trace;
        const ad_builtin *prev = T->through;
        T->through = b;
        int rc = ad_vm_call_builtin(S, b, args, nargs, kw, out);
        T->through = prev;
        return rc;
    }
    ad_tnode n;
    memset(&n, 0, sizeof n);
    n.kind = AD_TN_BUILTIN;
    n.fn.t = AD_TBUILTIN; n.fn.u.bi = b;
    n.nargs = nargs;
    n.kw = (ad_list *)kw;
    return record(S, &n, args, out);
}

static void guard_grad(ad_state *S, ad_trace *T, ad_tensor *t);

int ad_trace_vm(ad_state *S, ad_tnode_kind kind, int attr, const ad_value *args, int nargs, ad_value *out) {
    ad_tnode n;
    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.fn = ad_none();
    n.attr = attr;
    n.nargs = nargs;
    ad_trace *T = S->trace;
    if (kind == AD_TN_GETATTR && attr == AD_ATTR_GRAD && args[0].t == AD_TTENSOR) guard_grad(S, T, args[0].u.tensor);
    if (kind == AD_TN_SETINDEX) {
        bool done = false;
        int rc = trace_setindex(S, args, nargs, &done);
        if (rc || done) return rc;
    }
    return record(S, &n, args, out);
}

bool ad_trace_knows_node(const ad_state *S, const void *node) {
    return S->trace && gnode_has(S->trace, node);
}

void ad_trace_fail(ad_state *S, const char *why) {
    if (S->trace) set_fail(S->trace, why);
}

int ad_trace_accum_grad(ad_state *S, ad_tensor *leaf, ad_value g, bool create) {
    ad_tnode n;
    memset(&n, 0, sizeof n);
    n.kind = AD_TN_ACCUMGRAD;
    n.fn = ad_none();
    n.nargs = 3;
    return record(S, &n, (ad_value[]){ad_tensor_value(leaf), g, ad_bool(create)}, NULL);
}

int ad_trace_outside_seam(ad_state *S, const ad_tensor *src, const char *what) {
    if (!ad_trace_on(S) || !is_dep_tensor(S->trace, src)) return ADDSL_OK;
    ad_trace *T = S->trace;
    if (T->soft && !T->fail[0]) {
        T->soft_reads++;
        snprintf(T->soft_why, sizeof T->soft_why, "%s", what);
        return ad_error(S, "compile(): %s outside the op seam", what);
    }
    set_fail(T, what);
    return ADDSL_OK;
}

int ad_trace_check_truth(ad_state *S, ad_value v, const char *what) {
    if (!ad_trace_on(S) || v.t != AD_TTENSOR || !is_dep_tensor(S->trace, v.u.tensor)) return ADDSL_OK;
    return data_dependent_at(S, what, &v, 1);
}

bool ad_trace_depends(const ad_state *S, const ad_tensor *t) {
    return ad_trace_on(S) && is_dep_tensor(S->trace, t);
}

static bool cell_made_here(const ad_trace *T, const ad_cell *c) {
    if (!T->capcells) return false;
    size_t m = (size_t)T->capcells - 1;
    for (size_t i = hash_ptr(c) & m; T->cells[i]; i = (i + 1) & m)
        if (T->cells[i] == c) return true;
    return false;
}

void ad_trace_new_cell(ad_state *S, ad_cell *c) {
    ad_trace *T = S->trace;
    if (2 * (T->ncells + 1) > T->capcells) {
        int cap = T->capcells ? 2 * T->capcells : 64;
        ad_cell **cells = ad_calloc(S, (size_t)cap, sizeof *cells);
        if (!cells) { ad_clear_error(S); set_fail(T, "out of memory for the trace"); return; }
        for (int i = 0; i < T->capcells; i++) {
            if (!T->cells[i]) continue;
            size_t m = (size_t)cap - 1, j = hash_ptr(T->cells[i]) & m;
            while (cells[j]) j = (j + 1) & m;
            cells[j] = T->cells[i];
        }
        ad_free(S, T->cells);
        T->cells = cells; T->capcells = cap;
    }
    size_t m = (size_t)T->capcells - 1, j = hash_ptr(c) & m;
    while (T->cells[j]) j = (j + 1) & m;
    T->cells[j] = c;
    c->hdr.refcount++;
    T->ncells++;
}

void ad_trace_cell_write(ad_state *S, ad_cell *c) {
    if (!cell_made_here(S->trace, c)) set_fail(S->trace, "it assigns a variable captured from outside, which a replay would not do");
}

/* A container's contents as a flat list, in walk order: for each container
 * a marker (its type and length), a dict's keys before their values, other
 * items as they are (held). Nested containers are walked to a depth and a
 * size that keep a guard cheap; beyond them the trace is not replayed. */
#define SNAP_DEPTH 8
#define SNAP_ITEMS 4096

static bool is_container(ad_value v) { return v.t == AD_TLIST || v.t == AD_TTUPLE || v.t == AD_TDICT; }

static ad_value snap_marker(ad_value v) {
    int64_t n = v.t == AD_TDICT ? v.u.d->len : v.u.l->len;
    return ad_num((double)v.t * 1e12 + (double)n);
}

/* Leaves compare as globals do: numbers, strings and the like by value,
 * other objects (tensors included) by identity. */
static bool same_leaf(ad_value a, ad_value b) {
    if (a.t != b.t) return false;
    if (a.t == AD_TSTR || (a.t < AD_TSTR && a.t != AD_TDTYPE)) return ad_values_equal(a, b);
    if (a.t == AD_TDTYPE) return a.u.dtype == b.u.dtype;
    return a.u.o == b.u.o;
}

/* Appends v's walk to 'out' (out != NULL), or compares it with ref from
 * *pos on. Returns false on a difference or past the limits. */
static bool snap_walk(ad_state *S, ad_value v, int depth, ad_list *out, const ad_list *ref, int64_t *pos) {
    if (*pos >= SNAP_ITEMS) return false;
    ad_value item = is_container(v) ? snap_marker(v) : v;
    if (out) {
        ad_value_incref(item);
        if (ad_list_push(S, out, item)) return false;
        (*pos)++;
    } else if (*pos >= ref->len || !same_leaf(ref->items[(*pos)++], item)) {
        return false;
    }
    if (!is_container(v)) return true;
    if (depth >= SNAP_DEPTH) return false;
    if (v.t != AD_TDICT) {
        for (int64_t i = 0; i < v.u.l->len; i++)
            if (!snap_walk(S, v.u.l->items[i], depth + 1, out, ref, pos)) return false;
        return true;
    }
    int64_t it = 0;
    ad_value k, x;
    while (ad_dict_next(v.u.d, &it, &k, &x))
        if (!snap_walk(S, k, depth + 1, out, ref, pos) || !snap_walk(S, x, depth + 1, out, ref, pos)) return false;
    return true;
}

static ad_tguard *guard_new(ad_state *S, ad_trace *T) {
    if (T->nguards == T->capguards) {
        int cap = T->capguards ? 2 * T->capguards : 8;
        ad_tguard *g = ad_realloc(S, T->guards, (size_t)cap * sizeof *g);
        if (!g) { ad_clear_error(S); set_fail(T, "out of memory for a guard"); return NULL; }
        T->guards = g; T->capguards = cap;
    }
    ad_tguard *g = &T->guards[T->nguards++];
    memset(g, 0, sizeof *g);
    return g;
}

/* Guards v's contents (v a container): the snapshot is taken when f first
 * reads it, before f changes it, so a write by f itself fails the guard at
 * the next call and that call traces again (which repeats the write). */
static void guard_contents(ad_state *S, ad_trace *T, ad_tguard *g, ad_value v) {
    if (!is_container(v)) return;
    g->snap = ad_list_new(S, AD_TLIST, 0);
    int64_t pos = 0;
    if (!g->snap) { ad_clear_error(S); set_fail(T, "out of memory for a guard"); return; }
    if (!snap_walk(S, v, 0, g->snap, NULL, &pos)) {
        ad_clear_error(S);
        set_fail(T, "it reads a list or dict too large or too deep to guard");
    }
}

void ad_trace_guard(ad_state *S, int slot, ad_cell *cell, ad_value v) {
    ad_trace *T = S->trace;
    if (cell && cell_made_here(T, cell)) return;
    if (v.t == AD_TBUILTIN && v.u.bi == T->self) return;
    if (v.t == AD_TTENSOR) {
        int id = map_find(T, v.u.tensor);
        if (id >= 0 && T->vals[id].dep) return;
    }
    for (int i = 0; i < T->nguards; i++)
        if (T->guards[i].slot == slot && T->guards[i].cell == cell) return;
    ad_tguard *g = guard_new(S, T);
    if (!g) return;
    g->slot = slot; g->cell = cell; g->v = v;
    ad_value_incref(v);
    if (cell) cell->hdr.refcount++;
    guard_contents(S, T, g, v);
}

void ad_trace_guard_object(ad_state *S, ad_value v) {
    ad_trace *T = S->trace;
    if (!T || !is_container(v)) return;
    if (v.t != AD_TDICT) {
        /* A list holding itself (or nested past the bound) cannot be guarded
         * item by item: the function runs eagerly instead. */
        if (S->gc.nest >= AD_MAX_NEST_DEPTH) { set_fail(T, "a list nested too deeply (or holding itself)"); return; }
        S->gc.nest++;
        for (int64_t i = 0; i < v.u.l->len && !T->fail[0]; i++) ad_trace_guard_object(S, v.u.l->items[i]);
        S->gc.nest--;
        return;
    }
    for (int i = 0; i < T->nguards; i++)
        if (T->guards[i].slot == AD_GUARD_OBJECT && T->guards[i].v.u.o == v.u.o) return;
    ad_tguard *g = guard_new(S, T);
    if (!g) return;
    g->slot = AD_GUARD_OBJECT; g->v = v;
    ad_value_incref(v);
    guard_contents(S, T, g, v);
}

/* Whether an earlier record of the trace set t.grad (t.grad = v, backward). */
static bool grad_set_here(const ad_trace *T, const ad_tensor *t) {
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *n = &T->nodes[i];
        bool sets = n->kind == AD_TN_ACCUMGRAD || (n->kind == AD_TN_SETATTR && n->attr == AD_ATTR_GRAD);
        if (sets && n->nargs > 0 && n->args[0].ref >= 0 && T->vals[n->args[0].ref].v.u.tensor == t) return true;
    }
    return false;
}

/* f read t.grad of a tensor whose .grad the trace did not set: the program
 * holds for as long as t has (or has not) a .grad, as when traced. */
static void guard_grad(ad_state *S, ad_trace *T, ad_tensor *t) {
    if (grad_set_here(T, t)) return;
    for (int i = 0; i < T->nguards; i++)
        if (T->guards[i].slot == AD_GUARD_GRAD && T->guards[i].v.u.tensor == t) return;
    ad_tguard *g = guard_new(S, T);
    if (!g) return;
    g->slot = AD_GUARD_GRAD;
    g->v = ad_tensor_value(t);
    ad_value_incref(g->v);
    g->had_grad = t->grad != NULL;
}

void ad_trace_global_write(ad_state *S) {
    set_fail(S->trace, "it assigns a global variable, which a replay would not do");
}

bool ad_trace_guards_hold(const ad_state *S, const ad_trace *T) {
    for (int i = 0; i < T->nguards; i++) {
        const ad_tguard *g = &T->guards[i];
        if (g->slot == AD_GUARD_GRAD) {
            if ((g->v.u.tensor->grad != NULL) != g->had_grad) return false;
            continue;
        }
        ad_value v = g->slot == AD_GUARD_OBJECT ? g->v : g->cell ? g->cell->v : S->globals->values[g->slot];
        if (!same_leaf(v, g->v)) return false;
        int64_t pos = 0;
        if (g->snap && (!snap_walk((ad_state *)S, v, 0, NULL, g->snap, &pos) || pos != g->snap->len)) return false;
    }
    return true;
}

/* ---- passes ---- */

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
    return x < y ? -1 : x > y;
}

typedef struct storages { const void **p; int n, cap; bool failed; } storages;

static void storages_add(ad_state *S, storages *s, const void *p) {
    if (s->failed) return;
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        const void **np = ad_realloc(S, (void *)s->p, (size_t)cap * sizeof *np);
        if (!np) { ad_clear_error(S); s->failed = true; return; }
        s->p = np; s->cap = cap;
    }
    s->p[s->n++] = p;
}

static void targ_storages(ad_state *S, const ad_trace *T, const ad_targ *a, storages *s) {
    if (a->ref >= 0 && T->vals[a->ref].v.t == AD_TTENSOR) storages_add(S, s, T->vals[a->ref].v.u.tensor->storage);
    for (int i = 0; i < a->nsub; i++) targ_storages(S, T, &a->sub[i], s);
}

/* Whether an output of 'a' lives in storage that some write of the program
 * touches (then merging or folding it would share that write). */
static bool targ_written(const ad_trace *T, const ad_targ *a, const storages *s) {
    if (s->failed) return true;
    if (a->ref >= 0) {
        ad_value v = T->vals[a->ref].v;
        if (v.t != AD_TTENSOR) return true;
        const void *key = v.u.tensor->storage;
        if (s->n && bsearch(&key, s->p, (size_t)s->n, sizeof *s->p, cmp_ptr)) return true;
        if (v.u.tensor->requires_grad && !v.u.tensor->grad_fn) return true; /* a new leaf */
    }
    for (int i = 0; i < a->nsub; i++) if (targ_written(T, &a->sub[i], s)) return true;
    return false;
}

static bool targ_all(const ad_trace *T, const ad_targ *a, const bool *folded) {
    if (a->ref >= 0) return folded[a->ref];
    for (int i = 0; i < a->nsub; i++) if (!targ_all(T, &a->sub[i], folded)) return false;
    return true;
}

static void targ_mark(const ad_targ *a, bool *set) {
    if (a->ref >= 0) set[a->ref] = true;
    for (int i = 0; i < a->nsub; i++) targ_mark(&a->sub[i], set);
}

static void targ_replace(ad_targ *a, const int *rep) {
    if (a->ref >= 0) a->ref = rep[a->ref];
    for (int i = 0; i < a->nsub; i++) targ_replace(&a->sub[i], rep);
}

static bool const_equal(ad_value a, ad_value b) {
    if (a.t != b.t) return false;
    if (a.t < AD_TSTR || a.t == AD_TSTR || ad_is_seq(a)) return ad_values_equal(a, b);
    return a.u.o == b.u.o;
}

static bool targ_equal(const ad_targ *a, const ad_targ *b) {
    if (a->ref != b->ref || a->nsub != b->nsub) return false;
    if (a->ref >= 0) return true;
    if (a->sub) {
        if (!b->sub || a->seqt != b->seqt) return false;
        for (int i = 0; i < a->nsub; i++) if (!targ_equal(&a->sub[i], &b->sub[i])) return false;
        return true;
    }
    return !b->sub && const_equal(a->c, b->c);
}

static bool targ_same_shape(const ad_targ *a, const ad_targ *b) {
    if ((a->ref >= 0) != (b->ref >= 0) || a->nsub != b->nsub) return false;
    for (int i = 0; i < a->nsub; i++) if (!targ_same_shape(&a->sub[i], &b->sub[i])) return false;
    return true;
}

static void targ_map(const ad_targ *from, const ad_targ *to, int *rep) {
    if (from->ref >= 0) rep[from->ref] = to->ref;
    for (int i = 0; i < from->nsub; i++) targ_map(&from->sub[i], &to->sub[i], rep);
}

static uint64_t targ_hash(const ad_targ *a, uint64_t h) {
    h = (h ^ (uint64_t)(a->ref + 2)) * 0x100000001b3ULL;
    if (a->ref < 0 && !a->sub && (a->c.t == AD_TINT || a->c.t == AD_TNUM)) {
        uint64_t bits;
        memcpy(&bits, &a->c.u.n, sizeof bits);
        h = (h ^ bits) * 0x100000001b3ULL;
    }
    for (int i = 0; i < a->nsub; i++) h = targ_hash(&a->sub[i], h);
    return h;
}

static bool kw_equal(const ad_list *a, const ad_list *b) {
    if (!a || !b) return a == b;
    return ad_values_equal(ad_list_value((ad_list *)a, AD_TTUPLE), ad_list_value((ad_list *)b, AD_TTUPLE));
}

static bool nodes_equal(const ad_tnode *a, const ad_tnode *b) {
    if (a->kind != b->kind || a->fn.u.o != b->fn.u.o || a->attr != b->attr || a->nargs != b->nargs ||
        a->grad_enabled != b->grad_enabled || !kw_equal(a->kw, b->kw) || !targ_same_shape(&a->out, &b->out))
        return false;
    for (int i = 0; i < a->nargs; i++) if (!targ_equal(&a->args[i], &b->args[i])) return false;
    return true;
}

static bool mergeable(const ad_tnode *n) {
    return !n->effect && !n->random && !n->dead && !n->folded && (n->kind == AD_TN_OP || n->kind == AD_TN_BUILTIN ||
                                                                  n->kind == AD_TN_COMPARE);
}

static void fold_constants(const ad_trace *T, ad_tnode *nodes, const storages *w, bool *folded) {
    for (int i = 0; i < T->nnodes; i++) {
        ad_tnode *n = &nodes[i];
        if (!mergeable(n) || targ_written(T, &n->out, w)) continue;
        bool all = true;
        for (int k = 0; k < n->nargs && all; k++) all = targ_all(T, &n->args[k], folded);
        if (!all) continue;
        n->folded = true;
        targ_mark(&n->out, folded);
    }
}

static bool targ_any(const ad_targ *a, const bool *set) {
    if (a->ref >= 0 && set[a->ref]) return true;
    for (int i = 0; i < a->nsub; i++) if (targ_any(&a->sub[i], set)) return true;
    return false;
}

/* A flag per value, set on those the result holds: the seed of the passes
 * below. NULL when out of memory, with the error cleared: the passes only
 * tidy the trace, and one without its flags is skipped. */
static bool *result_marks(ad_state *S, const ad_trace *T) {
    bool *m = ad_calloc(S, (size_t)(T->nvals ? T->nvals : 1), sizeof *m);
    if (!m) { ad_clear_error(S); return NULL; }
    targ_mark(&T->result, m);
    return m;
}

/* Common subexpressions, within the stretches between two writes. A record
 * whose output f returns is kept: eager returns a tensor of its own there. */
static int eliminate_common(ad_state *S, ad_trace *T, const storages *w, int *rep) {
    bool *escapes = result_marks(S, T);
    if (!escapes) return 0;
    int cap = 16;
    while (cap < 2 * T->nnodes) cap *= 2;
    int *table = ad_malloc(S, (size_t)cap * sizeof *table);
    if (!table) { ad_clear_error(S); ad_free(S, escapes); return 0; }
    for (int i = 0; i < cap; i++) table[i] = -1;
    int merged = 0;
    for (int i = 0; i < T->nnodes; i++) {
        ad_tnode *n = &T->nodes[i];
        for (int k = 0; k < n->nargs; k++) targ_replace(&n->args[k], rep);
        if (n->effect) { for (int k = 0; k < cap; k++) table[k] = -1; continue; }
        if (!mergeable(n) || targ_written(T, &n->out, w)) continue;
        uint64_t h = (uint64_t)(uintptr_t)n->fn.u.o * 31u + (uint64_t)n->kind * 7u + (uint64_t)n->attr;
        for (int k = 0; k < n->nargs; k++) h = targ_hash(&n->args[k], h);
        size_t m = (size_t)cap - 1, j = (size_t)(h ^ (h >> 29)) & m;
        for (; table[j] >= 0; j = (j + 1) & m) {
            if (nodes_equal(&T->nodes[table[j]], n)) break;
        }
        if (table[j] < 0) { table[j] = i; continue; }
        if (targ_any(&n->out, escapes)) continue;
        targ_map(&n->out, &T->nodes[table[j]].out, rep);
        n->dead = true;
        merged++;
    }
    targ_replace(&T->result, rep);
    ad_free(S, table);
    ad_free(S, escapes);
    return merged;
}

static int eliminate_dead(ad_state *S, ad_trace *T) {
    bool *live = result_marks(S, T);
    if (!live) return 0;
    int removed = 0;
    for (int i = T->nnodes - 1; i >= 0; i--) {
        ad_tnode *n = &T->nodes[i];
        if (n->dead) continue;
        bool needed = n->effect || n->random || targ_any(&n->out, live);
        if (!needed) { n->dead = true; if (!n->folded) removed++; continue; }
        if (n->folded) continue;
        for (int k = 0; k < n->nargs; k++) targ_mark(&n->args[k], live);
    }
    ad_free(S, live);
    return removed;
}

/* Whether a needed output of the record carries a graph (requires grad at
 * trace time): one that does not (detach, a comparison, an integer result)
 * links nothing back to the record's arguments, so reading it does not
 * need their graph (`return cost.detach()` after `backward(cost)`). */
static bool targ_needs_graph(const ad_trace *T, const ad_targ *a, const bool *need) {
    if (a->ref >= 0 && need[a->ref]) {
        const ad_value *v = &T->vals[a->ref].v;
        if (v->t != AD_TTENSOR || v->u.tensor->requires_grad) return true;
    }
    for (int i = 0; i < a->nsub; i++) if (targ_needs_graph(T, &a->sub[i], need)) return true;
    return false;
}

/* Op records under grad mode whose graph no one walks at replay: a
 * flattened backward already walked it at trace time, so unless an output
 * is returned, or reaches a record that is not a plain op call (an opaque
 * backward, a write, .grad), through records that keep grad mode, it runs
 * under no_grad and records no graph node. */
static int prune_graph(ad_state *S, ad_trace *T) {
    bool *need = result_marks(S, T);
    if (!need) return 0;
    int pruned = 0;
    for (int i = T->nnodes - 1; i >= 0; i--) {
        ad_tnode *n = &T->nodes[i];
        if (n->dead || n->folded) continue;
        bool plain = n->kind == AD_TN_OP && !n->effect;
        bool write = n->kind == AD_TN_BUILTIN && strcmp(n->fn.u.bi->name, "_inplace_write") == 0;
        if (n->kind == AD_TN_BUILTIN && (!n->effect || write)) {
            /* a pure builtin (clone, to, detach), or the write of an in-place
             * op: its result links back only if it carries a graph */
            if (targ_needs_graph(T, &n->out, need))
                for (int k = 0; k < n->nargs; k++) targ_mark(&n->args[k], need);
            continue;
        }
        if (!plain && n->kind != AD_TN_COMPARE) {
            for (int k = 0; k < n->nargs; k++) targ_mark(&n->args[k], need);
            continue;
        }
        if (!plain || !n->grad_enabled) continue;
        if (targ_needs_graph(T, &n->out, need)) {
            for (int k = 0; k < n->nargs; k++) targ_mark(&n->args[k], need);
            continue;
        }
        n->grad_enabled = false;
        pruned++;
    }
    ad_free(S, need);
    return pruned;
}

static void unfold_shared(ad_state *S, ad_trace *T, const ad_targ *a) {
    if (a->ref >= 0 && T->vals[a->ref].folded && T->vals[a->ref].v.t == AD_TTENSOR) {
        ad_tensor *c = ad_tensor_clone(S, T->vals[a->ref].v.u.tensor);
        if (!c) { ad_clear_error(S); set_fail(T, "out of memory copying a constant"); return; }
        ad_value_decref(S, T->vals[a->ref].v);
        T->vals[a->ref].v = ad_tensor_value(c);
    }
    for (int i = 0; i < a->nsub; i++) unfold_shared(S, T, &a->sub[i]);
}

static void targ_last_use(const ad_targ *a, int i, int *last) {
    if (a->ref >= 0) last[a->ref] = i;
    for (int k = 0; k < a->nsub; k++) targ_last_use(&a->sub[k], i, last);
}

static void targ_unused(const ad_targ *a, int i, int *last) {
    if (a->ref >= 0 && last[a->ref] < 0) last[a->ref] = i;
    for (int k = 0; k < a->nsub; k++) targ_unused(&a->sub[k], i, last);
}

/* Liveness: each node lists the values it reads for the last time (or makes
 * and no one reads), so the replay drops them as eager code drops a variable
 * it rebinds, and memory is reused while it is hot in the cache. */
static void plan_frees(ad_state *S, ad_trace *T) {
    int *last = ad_malloc(S, (size_t)(T->nvals ? T->nvals : 1) * sizeof *last);
    if (!last) { ad_clear_error(S); return; }
    for (int i = 0; i < T->nvals; i++) last[i] = -1;
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *n = &T->nodes[i];
        if (n->dead || n->folded) continue;
        for (int k = 0; k < n->nargs; k++) targ_last_use(&n->args[k], i, last);
    }
    for (int i = 0; i < T->nnodes; i++)
        if (!T->nodes[i].dead && !T->nodes[i].folded) targ_unused(&T->nodes[i].out, i, last);
    targ_last_use(&T->result, T->nnodes, last);
    for (int v = 0; v < T->nvals; v++) {
        int i = last[v];
        if (i < 0 || i >= T->nnodes) continue;
        ad_tnode *n = &T->nodes[i];
        int *f = ad_realloc(S, n->frees, (size_t)(n->nfrees + 1) * sizeof *f);
        if (!f) { ad_clear_error(S); break; }
        f[n->nfrees++] = v;
        n->frees = f;
    }
    ad_free(S, last);
}

void ad_trace_optimize(ad_state *S, ad_trace *T, bool passes) {
    T->traced_nodes = T->nnodes;
    bool *folded = ad_calloc(S, (size_t)(T->nvals ? T->nvals : 1), sizeof *folded);
    int *rep = ad_malloc(S, (size_t)(T->nvals ? T->nvals : 1) * sizeof *rep);
    storages w = {0};
    if (!folded || !rep) { ad_clear_error(S); passes = false; }
    if (passes) {
        for (int i = 0; i < T->nvals; i++) rep[i] = i;
        for (int i = 0; i < T->nnodes; i++)
            if (T->nodes[i].effect)
                for (int k = 0; k < T->nodes[i].nargs; k++) targ_storages(S, T, &T->nodes[i].args[k], &w);
        if (w.n) qsort((void *)w.p, (size_t)w.n, sizeof *w.p, cmp_ptr);
        fold_constants(T, T->nodes, &w, folded);
        T->removed_cse = eliminate_common(S, T, &w, rep);
        T->removed_dce = eliminate_dead(S, T);
        if (T->flattened) T->pruned = prune_graph(S, T);
        /* After pruning, which puts forward records under no_grad where the rules apply. Not
         * on a program run in parts (vm/jit/compiled_vjp.c): with create_graph its VJP replays it
         * whole under grad mode, where autograd would differentiate the rewritten records. */
        if (T->plan_split <= 0 && ad_simplify(S, T, folded)) T->removed_dce += eliminate_dead(S, T);
        for (int i = 0; i < T->nnodes; i++) if (T->nodes[i].folded && !T->nodes[i].dead) T->folded++;
    }
    /* before the plan, which reads a folded value's trace-time contents */
    for (int i = 0; i < T->nvals; i++)
        T->vals[i].folded = folded && folded[i] && T->vals[i].node >= 0 && !T->nodes[T->vals[i].node].dead;
    T->plan = ad_plan_build(S, T);
    /* The replay needs the trace-time values of constants and folded values only. */
    for (int i = 0; i < T->nvals; i++) {
        ad_tval *x = &T->vals[i];
        if (x->kind == AD_TV_CONST || x->folded) continue;
        ad_value_decref(S, x->v);
        x->v = ad_none();
    }
    plan_frees(S, T);
    /* The passes kept the program in SSA order, and its result names its values. */
    for (int i = 0; i < T->nnodes; i++) ad_assert(T->nodes[i].dead || node_ordered(T, i));
    ad_assert(targ_ordered(T, &T->result, T->nnodes));
    /* The traced run returned the folded results themselves to the caller, who
     * may write to them: the program keeps copies. */
    unfold_shared(S, T, &T->result);
    ad_free(S, folded);
    ad_free(S, rep);
    ad_free(S, (void *)w.p);
    /* The map's keys may dangle from now on. */
    pm_free(S, &T->tmap);
}

/* ---- replay ---- */

static int arg_value(ad_state *S, ad_value *env, const ad_targ *a, ad_value *out) {
    ad_assert(!a->sub || a->ref < 0);
    if (a->ref >= 0) { *out = env[a->ref]; ad_value_incref(*out); return ADDSL_OK; }
    if (!a->sub) { *out = a->c; ad_value_incref(*out); return ADDSL_OK; }
    ad_list *l = ad_list_new(S, a->seqt, a->nsub);
    if (!l) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int i = 0; i < a->nsub; i++) {
        int rc = arg_value(S, env, &a->sub[i], &l->items[i]);
        if (rc) { ad_value_decref(S, ad_list_value(l, a->seqt)); return rc; }
    }
    if (a->names) ad_tuple_share_names(l, a->names);
    *out = ad_list_value(l, a->seqt);
    return ADDSL_OK;
}

static int bind_replay(ad_state *S, const ad_tnode *n, ad_value *env, const ad_targ *a, ad_value v) {
    if (a->ref >= 0) {
        if (v.t != AD_TTENSOR)
            return ad_error(S, "compiled program: %s() returned %s where the trace saw a tensor", node_name(n), ad_type_name(v));
        ad_value_decref(S, env[a->ref]);
        env[a->ref] = v;
        ad_value_incref(v);
        return ADDSL_OK;
    }
    if (!a->sub) return ADDSL_OK;
    if (!ad_is_seq(v) || v.u.l->len != a->nsub)
        return ad_error(S, "compiled program: %s() returned %s, not the trace's sequence", node_name(n), ad_type_name(v));
    for (int i = 0; i < a->nsub; i++) {
        int rc = bind_replay(S, n, env, &a->sub[i], v.u.l->items[i]);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

/* f's result: a folded value is copied, since f returns a fresh tensor per call. */
static int result_value(ad_state *S, const ad_trace *T, ad_value *env, const ad_targ *a, ad_value *out) {
    if (a->ref >= 0 && T->vals[a->ref].folded && env[a->ref].t == AD_TTENSOR) {
        ad_tensor *c = ad_tensor_clone(S, env[a->ref].u.tensor);
        if (!c) return S->errcode ? S->errcode : ADDSL_ENOMEM;
        *out = ad_tensor_value(c);
        return ADDSL_OK;
    }
    /* a list f returns is the caller's to change: a new one per call */
    if (!a->sub && a->ref < 0 && ad_is_seq(a->c)) return ad_tc_copy(S, a->c, out);
    if (!a->sub) return arg_value(S, env, a, out);
    ad_list *l = ad_list_new(S, a->seqt, a->nsub);
    if (!l) return S->errcode ? S->errcode : ADDSL_ENOMEM;
    for (int i = 0; i < a->nsub; i++) {
        int rc = result_value(S, T, env, &a->sub[i], &l->items[i]);
        if (rc) { ad_value_decref(S, ad_list_value(l, a->seqt)); return rc; }
    }
    if (a->names) ad_tuple_share_names(l, a->names);
    *out = ad_list_value(l, a->seqt);
    return ADDSL_OK;
}

/* Arguments are borrowed from the environment (no call changes it while it
 * runs); only lists made for an argument are owned and released. */
static int replay_node(ad_state *S, const ad_tnode *n, ad_value *env) {
    ad_assert(!n->dead && n->nargs >= 0 && n->nargs <= AD_MAX_CALL_ARGS);
    ad_value argv[AD_MAX_CALL_ARGS];
    argv[0] = argv[1] = ad_none(); /* compare and setattr read two */
    int na = 0, rc = ADDSL_OK;
    for (; na < n->nargs; na++) {
        const ad_targ *a = &n->args[na];
        if (a->ref >= 0) argv[na] = env[a->ref];
        else if (!a->sub) argv[na] = a->c;
        else if ((rc = arg_value(S, env, a, &argv[na]))) break;
    }
    ad_value res = ad_none();
    if (!rc) {
        S->grad_enabled = n->grad_enabled;
        rc = run_call(S, n, argv, &res);
    }
    for (int i = 0; i < na; i++) if (n->args[i].sub) ad_value_decref(S, argv[i]);
    if (!rc) rc = bind_replay(S, n, env, &n->out, res);
    ad_value_decref(S, res);
    for (int i = 0; i < n->nfrees; i++) {
        ad_value_decref(S, env[n->frees[i]]);
        env[n->frees[i]] = ad_none();
    }
    return rc;
}

int ad_trace_replay_node(ad_state *S, const ad_tnode *n, ad_value *env) { return replay_node(S, n, env); }

int ad_trace_result_value(ad_state *S, const ad_trace *T, ad_value *env, ad_value *out) {
    return result_value(S, T, env, &T->result, out);
}

int ad_trace_replay(ad_state *S, const ad_trace *T, ad_tensor *const *inputs, ad_value *out) {
    int planned = ad_plan_replay(S, T, inputs, out);
    if (planned >= 0) return planned;
    *out = ad_none();
    ad_value *env = ad_calloc(S, (size_t)(T->nvals ? T->nvals : 1), sizeof *env);
    if (!env) return ADDSL_ENOMEM;
    for (int i = 0; i < T->ninputs; i++) { env[i] = ad_tensor_value(inputs[i]); ad_tensor_incref(inputs[i]); }
    for (int i = T->ninputs; i < T->nvals; i++) { env[i] = T->vals[i].v; ad_value_incref(env[i]); }
    bool grad = S->grad_enabled;
    int rc = ADDSL_OK;
    for (int i = 0; i < T->nnodes && !rc; i++) {
        const ad_tnode *n = &T->nodes[i];
        if (n->dead || n->folded) continue;
        ad_assert(node_ordered(T, i));
        rc = replay_node(S, n, env);
    }
    S->grad_enabled = grad;
    if (!rc) rc = result_value(S, T, env, &T->result, out);
    for (int i = 0; i < T->nvals; i++) ad_value_decref(S, env[i]);
    ad_free(S, env);
    return rc;
}

/* ---- pieces of the replay, for a program run in parts (vm/jit/compiled_vjp.c) ---- */

int ad_trace_placeholder(ad_state *S, ad_trace *T, ad_tensor *t) {
    int id = val_new(S, T, AD_TV_INPUT, ad_tensor_value(t), true, -1);
    return id < 0 ? -(S->errcode ? S->errcode : ADDSL_ENOMEM) : id;
}

int ad_trace_value_of(const ad_trace *T, const ad_tensor *t) { return map_find(T, t); }

ad_value *ad_trace_env_new(ad_state *S, const ad_trace *T, ad_tensor *const *inputs) {
    ad_value *env = ad_calloc(S, (size_t)(T->nvals ? T->nvals : 1), sizeof *env);
    if (!env) return NULL;
    for (int i = 0; i < T->ninputs; i++) { env[i] = ad_tensor_value(inputs[i]); ad_tensor_incref(inputs[i]); }
    for (int i = T->ninputs; i < T->nvals; i++)
        if (T->vals[i].kind != AD_TV_INPUT) { env[i] = T->vals[i].v; ad_value_incref(env[i]); }
    return env;
}

void ad_trace_env_free(ad_state *S, const ad_trace *T, ad_value *env) {
    if (!env) return;
    for (int i = 0; i < T->nvals; i++) ad_value_decref(S, env[i]);
    ad_free(S, env);
}

int ad_trace_run(ad_state *S, const ad_trace *T, ad_value *env, int from, int to, int grad) {
    ad_assert(env && from >= 0 && from <= to && to <= T->nnodes);
    bool mode = S->grad_enabled;

    int rc = ADDSL_OK;
    for (int i = from; i < to && !rc; i++) {
        const ad_tnode *n = &T->nodes[i];
        if (n->dead || n->folded) continue;
        if (grad < 0) { rc = replay_node(S, n, env); continue; }
        ad_tnode m = *n;
        m.grad_enabled = grad > 0;
        rc = replay_node(S, &m, env);
    }
    S->grad_enabled = mode;
    return rc;
}

int ad_trace_build(ad_state *S, const ad_trace *T, ad_value *env, const ad_targ *a, ad_value *out) {
    return result_value(S, T, env, a, out);
}

/* ---- printing ---- */

static void print_targ(const ad_trace *T, const ad_targ *a, ad_buf *b) {
    if (a->ref >= 0) { ad_buf_printf(b, "%%%d", a->ref); return; }
    if (a->sub) {
        ad_buf_puts(b, a->seqt == AD_TTUPLE ? "(" : "[");
        for (int i = 0; i < a->nsub; i++) { if (i) ad_buf_puts(b, ", "); print_targ(T, &a->sub[i], b); }
        ad_buf_puts(b, a->seqt == AD_TTUPLE ? ")" : "]");
        return;
    }
    if (a->c.t == AD_TFUNC || a->c.t == AD_TBUILTIN || a->c.t == AD_TOP) { ad_buf_printf(b, "<%s>", ad_type_name(a->c)); return; }
    ad_value_format(b->S, a->c, b, true);
}

static void print_outs(const ad_trace *T, const ad_targ *a, ad_buf *b) {
    if (a->ref >= 0) { ad_buf_printf(b, "%%%d %s", a->ref, T->vals[a->ref].desc); return; }
    if (!a->sub) { ad_buf_puts(b, "_"); return; }
    ad_buf_puts(b, "(");
    for (int i = 0; i < a->nsub; i++) { if (i) ad_buf_puts(b, ", "); print_outs(T, &a->sub[i], b); }
    ad_buf_puts(b, ")");
}

static const char *attr_label(const ad_tnode *n) {
    if (n->kind == AD_TN_COMPARE) {
        static const char *const cmp[] = {"eq", "ne", "lt", "le", "gt", "ge"};
        return n->attr >= 0 && n->attr < 6 ? cmp[n->attr] : "?";
    }
    return ad_attr_name(n->attr);
}

int ad_trace_print(ad_state *S, const ad_trace *T, ad_buf *b) {
    (void)S;
    int live = 0;
    for (int i = 0; i < T->nnodes; i++) live += !T->nodes[i].dead && !T->nodes[i].folded;
    ad_buf_printf(b, "  %d ops (traced %d; removed: dead %d, common %d; folded %d)\n", live, T->traced_nodes,
                  T->removed_dce, T->removed_cse, T->folded);
    if (T->flattened)
        ad_buf_printf(b, "  backward flattened: %d grad()/backward() call%s; %d forward op%s without graph\n", T->flattened,
                      T->flattened == 1 ? "" : "s", T->pruned, T->pruned == 1 ? "" : "s");
    if (T->fw_flattened)
        ad_buf_printf(b, "  forward mode flattened: %d jvp() call%s; the tangents are records\n", T->fw_flattened,
                      T->fw_flattened == 1 ? "" : "s");
    ad_simplify_print(T, b);
    if (T->note[0]) ad_buf_printf(b, "  note: %s\n", T->note);
    for (int i = 0; i < T->nvals; i++) {
        const ad_tval *x = &T->vals[i];
        if (x->kind == AD_TV_INPUT) ad_buf_printf(b, "  %%%d = input %s\n", i, x->desc);
        else if (x->kind == AD_TV_CONST) ad_buf_printf(b, "  %%%d = const %s\n", i, x->desc);
        else if (x->folded) ad_buf_printf(b, "  %%%d = const %s (folded)\n", i, x->desc);
    }
    for (int i = 0; i < T->nnodes; i++) {
        const ad_tnode *n = &T->nodes[i];
        if (n->dead || n->folded) continue;
        ad_buf_puts(b, "  ");
        print_outs(T, &n->out, b);
        ad_buf_puts(b, " = ");
        int nkw = n->kw ? (int)n->kw->len : 0, npos = n->nargs - nkw;
        if (n->kind == AD_TN_GETATTR || n->kind == AD_TN_SETATTR || n->kind == AD_TN_COMPARE)
            ad_buf_printf(b, "%s.%s(", node_name(n), attr_label(n));
        else ad_buf_printf(b, "%s(", node_name(n));
        for (int k = 0; k < n->nargs; k++) {
            if (k) ad_buf_puts(b, ", ");
            if (k >= npos) ad_buf_printf(b, "%s=", n->kw->items[k - npos].u.s->data);
            print_targ(T, &n->args[k], b);
        }
        ad_buf_printf(b, ")%s%s%s", n->grad_enabled ? "" : " no_grad", n->effect ? " effect" : "",
                      n->random ? " random" : "");
        ad_plan_print_tag(T->plan, i, b);
        ad_buf_printf(b, "  # %d:%d\n", n->line, n->col);
    }
    ad_buf_puts(b, "  return ");
    print_targ(T, &T->result, b);
    ad_buf_puts(b, "\n");
    ad_plan_print(T, T->plan, b);
    return b->failed ? ADDSL_ENOMEM : ADDSL_OK;
}

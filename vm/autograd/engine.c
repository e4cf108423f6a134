/* autograd/engine.c: graph nodes and the reverse-mode engine. A node is recorded
 * per call of an op with formulas; backward walks the nodes reachable from
 * the roots in dependency order and runs each node's VJP closures. */
#include "autograd/engine.h"
#include "autograd/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../builtins/builtins.h"
#include "../../builtins/kernels/ew_par.h"
#include "../../builtins/kernels/elementwise.h"
#include "ad_assert.h"
#include "buf.h"
#include "tensor/device.h"
#include "tensor/heap.h"
#include "autograd/library.h"
#include "autograd/op.h"
#include "state.h"
#include "tensor/tensor.h"
#include "trace/trace.h"
#include "vm.h"

/* ---- nodes ---- */

static void edge_release(ad_state *S, ad_edge *e, ad_node **keep);

static void node_release_saved(ad_state *S, ad_node *n) {
    if (n->released) return;
    n->released = true;
    ad_value *args = ad_node_args(n);
    for (int i = 0; i < n->nargs; i++) ad_value_decref(S, args[i]);
    for (int i = 0; i < n->nout && n->saves_outs; i++) {
        ad_tensor **o = &ad_node_outs_raw(n)[i];
        if (!*o) continue;
        /* A saved output points back at this node without holding it. */
        ad_assert(!(*o)->grad_fn || ((*o)->grad_fn == n && (*o)->grad_fn_weak));
        (*o)->grad_fn = NULL; /* the weak back pointer must not outlive us */

        ad_tensor_decref(S, *o);
        *o = NULL;
    }
}

const ad_edge ad_no_edge;

#define META_ALIGN 8

/* Where the metadata of the parameters in meta_mask starts (8-aligned). */
static char *node_meta_start(const ad_node *n) {
    uintptr_t p = (uintptr_t)(ad_node_out_versions(n) + (n->saves_outs ? n->nout : 0));
    return (char *)((p + META_ALIGN - 1) & ~(uintptr_t)(META_ALIGN - 1));
}

static size_t meta_size(int ndim) { return sizeof(ad_node_meta) + (size_t)ndim * sizeof(int64_t); }

/* The metadata of parameter i (in meta_mask): sizes follow it. */
static const ad_node_meta *node_meta(const ad_node *n, int i) {
    char *p = node_meta_start(n);
    for (int j = 0; j < i; j++)
        if ((n->meta_mask >> j) & 1u) p += meta_size(((const ad_node_meta *)p)->ndim);
    return (const ad_node_meta *)p;
}

/* A node and its arrays, one header (the size release gives back): see autograd/engine.h. */
static size_t node_size(size_t na, size_t no, int nedges, bool saves_outs, size_t meta) {
    size_t so = saves_outs ? no : 0;
    size_t s = sizeof(ad_node) + (na + no) * sizeof(ad_value) + (size_t)nedges * sizeof(ad_edge)
               + so * sizeof(ad_tensor *) + (na + so) * sizeof(uint32_t);
    if (meta) s = ((s + META_ALIGN - 1) & ~(size_t)(META_ALIGN - 1)) + meta;
    return s;
}

/* A node's counts agree with its op and with each other (vm/ad_assert.h):
 * one argument per parameter of the op, an edge per bit of edge_mask and
 * bits only for parameters, outputs within the op's limit. */
static bool node_ok(const ad_node *n) {
    return n->op && n->op->hdr.refcount > 0 && n->nargs == n->op->nparams &&
           n->nargs <= AD_OP_MAX_PARAMS && n->nout <= AD_OP_MAX_OUTS &&
           n->nedges == ad_popcount32(n->edge_mask) &&
           (n->nargs == 32 || (n->edge_mask >> n->nargs) == 0) &&
           (n->nargs == 32 || (n->meta_mask >> n->nargs) == 0);
}

/* An edge into a node names one of that node's outputs. */
__attribute__((unused)) static bool edge_ok(const ad_edge *e) {
    if (e->nsub < 0 || (e->nsub && !e->sub)) return false;
    if (e->node && (e->nr < 0 || e->nr >= e->node->nout || e->node->refcount <= 0)) return false;
    for (int j = 0; j < e->nsub; j++)
        if (!edge_ok(&e->sub[j])) return false;
    return !e->leaf || e->leaf->refcount > 0;
}

static size_t node_meta_bytes(const ad_node *n) {
    if (!n->meta_mask) return 0;
    const char *p = node_meta_start(n), *start = p;
    for (int j = 0; j < n->nargs; j++)
        if ((n->meta_mask >> j) & 1u) p += meta_size(((const ad_node_meta *)p)->ndim);
    return (size_t)(p - start);
}

void ad_node_decref(ad_state *S, ad_node *n) {
    /* Long chains are freed iteratively: each node's first edge is followed
     * in the loop instead of recursing, which keeps deep graphs off the C stack. */
    while (n) {
        ad_assert(n->refcount > 0); /* released more often than referenced */
        if (--n->refcount != 0) break;
        ad_node *next = NULL;
        ad_assert(node_ok(n));
        node_release_saved(S, n);
        int ne = ad_node_nedges(n);
        for (int i = 0; i < ne; i++) edge_release(S, &ad_node_edges(n)[i], &next);
        for (int i = 0; i < n->nout; i++) ad_value_decref(S, ad_node_gbuf(n)[i]);
        ad_value opv; opv.t = AD_TOP; opv.u.op = n->op;
        ad_value_decref(S, opv);
        ad_heap_release_header(S, n, node_size(n->nargs, n->nout, ne, n->saves_outs, node_meta_bytes(n)));
        n = next;
    }
}

static bool requires_grad(ad_value v) {
    if (v.t == AD_TTENSOR) return v.u.tensor->requires_grad;
    if (ad_is_seq(v))
        for (int64_t i = 0; i < v.u.l->len; i++)
            if (v.u.l->items[i].t == AD_TTENSOR && v.u.l->items[i].u.tensor->requires_grad) return true;
    return false;
}

static bool edge_live(const ad_edge *e) { return e->node || e->leaf || e->nsub; }

static void edge_set(ad_edge *e, ad_tensor *t) {
    ad_assert(!edge_live(e)); /* each edge is set once */
    if (!t->requires_grad) return;
    ad_assert(!t->grad_fn || (t->output_nr >= 0 && t->output_nr < t->grad_fn->nout));
    if (t->grad_fn) { e->node = t->grad_fn; e->nr = t->output_nr; t->grad_fn->refcount++; }
    else { e->leaf = t; ad_tensor_incref(t); }
}

static void edge_release(ad_state *S, ad_edge *e, ad_node **keep) {
    if (e->leaf) ad_tensor_decref(S, e->leaf);
    if (e->node) {
        if (keep && !*keep) *keep = e->node;
        else ad_node_decref(S, e->node);
    }
    for (int j = 0; j < e->nsub; j++) edge_release(S, &e->sub[j], NULL);
    ad_free(S, e->sub);
}

static bool diff_param(const ad_opdef *op, int i) {
    return op->kind[i] == AD_PARAM_DIFF || op->kind[i] == AD_PARAM_NOTIMPL;
}

bool ad_autograd_needs_record(ad_state *S, const ad_opdef *op, const ad_value *args) {
    if (!S->grad_enabled) return false;
    for (int i = 0; i < op->nparams; i++)
        if (diff_param(op, i) && requires_grad(args[i])) return true;
    return false;
}

/* A node keeps a saved tensor as an alias of its own, not the caller's
 * header, when the tensor is a view or no formula reads its values: an
 * in-place write may later rebase that header (or a view's base) onto a node
 * that reaches this one, and holding it would close a reference cycle. A read
 * value keeps its place in the graph (and tangents) for double backward; an
 * unread one is only metadata (.shape for the formulas and the engine). */
static ad_value saved_view(ad_state *S, ad_tensor *t, bool read) {
    ad_tensor *a = ad_tensor_alias(S, t);
    if (a && read) {
        a->requires_grad = t->requires_grad;
        if (t->grad_fn && !t->grad_fn_weak) { a->grad_fn = t->grad_fn; t->grad_fn->refcount++; a->output_nr = t->output_nr; }
        /* forward-over-reverse reads the saved value's tangents */
        if (t->fw_grad && ad_tensor_copy_tangents(S, a, t, UINT64_MAX)) { ad_tensor_decref(S, a); a = NULL; }
    }
    ad_tensor_decref(S, t); /* the reference taken for n->args */
    return ad_tensor_value(a);
}

/* Which parameters get an edge (a tensor or list that requires grad) and
 * (of those, which are lists: cat's, stack's), and which are kept as metadata
 * only (a tensor no formula mentions: the engine needs its shape and dtype,
 * nobody its header); the metadata's bytes. */
static void node_plan(const ad_opdef *op, const ad_value *args, uint32_t *edges, uint32_t *lists, uint32_t *meta,
                      size_t *meta_bytes) {
    *edges = *lists = *meta = 0;
    *meta_bytes = 0;
    for (int i = 0; i < op->nparams; i++) {
        if (diff_param(op, i) && requires_grad(args[i])) {
            *edges |= (uint32_t)1 << i;
            if (args[i].t != AD_TTENSOR) *lists |= (uint32_t)1 << i;
        }
        if (args[i].t == AD_TTENSOR && !((op->mentions_args >> i) & 1u)) {
            *meta |= (uint32_t)1 << i;
            *meta_bytes += meta_size(args[i].u.tensor->ndim);
        }
    }
}

static void meta_fill(ad_node *n, const ad_value *args) {
    char *p = node_meta_start(n);
    for (int i = 0; i < n->nargs; i++) {
        if (!((n->meta_mask >> i) & 1u)) continue;
        const ad_tensor *t = args[i].u.tensor;
        ad_node_meta *m = (ad_node_meta *)p;
        m->ndim = t->ndim;
        m->dtype = (int32_t)t->dtype;
        if (t->ndim) memcpy(m + 1, t->shape, (size_t)t->ndim * sizeof(int64_t));
        p += meta_size(t->ndim);
    }
}

/* A header-only stand-in for parameter i kept as metadata: what fit_to reads. */
static void meta_like(const ad_node *n, int i, ad_tensor *like) {
    const ad_node_meta *m = node_meta(n, i);
    memset(like, 0, sizeof *like);
    like->ndim = m->ndim;
    like->dtype = (ad_dtype)m->dtype;
    like->shape = (int64_t *)(m + 1);
    like->numel = 1;
    for (int d = 0; d < m->ndim; d++) like->numel *= like->shape[d];
}

int ad_autograd_record(ad_state *S, ad_opdef *op, const ad_value *args, int nout, ad_tensor **outs) {
    /* One allocation per node, from the heap's pool of headers: recording a
     * long chain of small ops is dominated by allocator calls otherwise. */
    ad_assert(op->nparams >= 0 && op->nparams <= AD_OP_MAX_PARAMS && nout >= 1 && nout <= AD_OP_MAX_OUTS);
    size_t na = (size_t)op->nparams, no = (size_t)nout;
    uint32_t edge_mask, list_mask, meta_mask;
    size_t meta_bytes;
    node_plan(op, args, &edge_mask, &list_mask, &meta_mask, &meta_bytes);
    /* a single output that no formula reads is not kept (see below) */
    bool saves_outs = !(nout == 1 && !op->reads_result);
    int nedges = ad_popcount32(edge_mask);
    size_t size = node_size(na, no, nedges, saves_outs, meta_bytes);
    ad_node *n = ad_heap_alloc_header(S, size);
    if (!n) return ADDSL_ENOMEM;
    memset(n, 0, size); /* arguments and gradient buffers none (zero bits), edges empty */
    n->refcount = 1;
    n->op = op; op->hdr.refcount++;
    n->nargs = (uint8_t)op->nparams;
    n->nout = (uint8_t)nout;
    n->edge_mask = edge_mask;
    n->nedges = (uint8_t)nedges;
    n->meta_mask = meta_mask;
    n->saves_outs = saves_outs;
    if (meta_mask) meta_fill(n, args);
    ad_vm_current_pos(S, &n->line, &n->col, &n->chunk);
    ad_value *nargs = ad_node_args(n);
    uint32_t *versions = ad_node_versions(n);
    for (int i = 0; i < n->nargs; i++) {
        if (args[i].t == AD_TTENSOR && (edge_mask >> i) & 1u) edge_set(ad_node_edge(n, i), args[i].u.tensor);
        if ((meta_mask >> i) & 1u) continue;
        nargs[i] = args[i];
        ad_value_incref(args[i]);
        if (args[i].t != AD_TTENSOR) continue;
        ad_tensor *t = args[i].u.tensor;
        versions[i] = t->storage->version;
        bool read = (op->reads_args >> i) & 1u;
        if ((t->base || !read) && !(nargs[i] = saved_view(S, t, read)).u.tensor) {
            nargs[i] = ad_none();
            ad_node_decref(S, n);
            return S->errcode;
        }
    }
    for (uint32_t m = list_mask; m; m &= m - 1) {
        int i = __builtin_ctz(m);
        const ad_list *l = args[i].u.l;
        ad_edge *e = ad_node_edge(n, i);
        e->sub = ad_calloc(S, (size_t)l->len, sizeof(ad_edge));
        if (!e->sub) { ad_node_decref(S, n); return ADDSL_ENOMEM; }
        e->nsub = (int)l->len;
        for (int64_t j = 0; j < l->len; j++)
            if (l->items[j].t == AD_TTENSOR) edge_set(&e->sub[j], l->items[j].u.tensor);
    }
    for (int k = 0; k < nout; k++) {
        ad_tensor *o = outs[k];
        if (!o) continue;
        bool diff = op->out_diff[k] && ad_dtype_is_float(o->dtype);
        if (!saves_outs) {
            /* Nothing reads the output back: keep no alias, so an in-place
             * write to it later does not invalidate this node. */
            if (!diff) continue;
            o->grad_fn = n; n->refcount++;
            o->output_nr = 0;
            o->requires_grad = true;
            continue;
        }
        ad_tensor *alias = ad_tensor_alias(S, o);
        if (!alias) { ad_node_decref(S, n); return S->errcode; }
        ad_node_outs_raw(n)[k] = alias;
        ad_node_out_versions(n)[k] = o->storage->version;
        if (!diff) continue; /* saved for the formulas (e.g. indices), but no gradient flows */
        alias->grad_fn = n; alias->grad_fn_weak = true; alias->output_nr = k; alias->requires_grad = true;
        o->grad_fn = n; n->refcount++;
        o->output_nr = k;
        o->requires_grad = true;
    }
    ad_assert(n->refcount > 0 && node_ok(n));
    for (int i = 0; i < n->nedges; i++) ad_assert(edge_ok(&ad_node_edges(n)[i]));
    ad_node_decref(S, n); /* the outputs hold it now */
    return ADDSL_OK;
}

/* ---- the engine ---- */

static bool grow_arr(ad_state *S, void **arr, int *cap, int n, size_t elem) {
    if (n < *cap) return true;
    int nc = *cap ? *cap * 2 : 32;
    void *p = ad_realloc(S, *arr, (size_t)nc * elem);
    if (!p) return false;
    *arr = p; *cap = nc;
    return true;
}

static const char freed_msg[] =
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call backward() or grad(). "
    "Specify retain_graph=true if you need to backward through the graph a second time or if you need to "
    "access saved tensors after calling backward.";

static int discover(ad_engine *E, ad_node *root) {
    ad_state *S = E->S;
    if (root->epoch == E->epoch) return ADDSL_OK;
    ad_node **stack = NULL;
    int ns = 0, cap = 0;
    root->epoch = E->epoch; root->deps = 0;
    if (!grow_arr(S, (void **)&stack, &cap, ns, sizeof *stack)) return ad_nomem(S);
    stack[ns++] = root;
    int rc = ADDSL_OK;
    while (ns > 0 && !rc) {
        ad_node *n = stack[--ns];
        ad_assert(n->epoch == E->epoch && n->refcount > 0 && node_ok(n));

        if (n->released) { rc = ad_error(S, "%s", freed_msg); break; }
        if (!grow_arr(S, (void **)&E->nodes, &E->cap, E->n, sizeof *E->nodes)) { rc = ad_nomem(S); break; }
        E->nodes[E->n++] = n;
        for (int i = 0; i < n->nout; i++) { ad_value_decref(S, ad_node_gbuf(n)[i]); ad_node_gbuf(n)[i] = ad_none(); }
        for (int i = 0; i < n->nargs && !rc; i++) {
            ad_edge *e = ad_node_edge(n, i);
            int m = e->nsub ? e->nsub : 1;
            for (int j = 0; j < m; j++) {
                ad_node *c = e->nsub ? e->sub[j].node : e->node;
                if (!c) continue;
                if (c->epoch != E->epoch) {
                    c->epoch = E->epoch; c->deps = 0;
                    if (!grow_arr(S, (void **)&stack, &cap, ns, sizeof *stack)) { rc = ad_nomem(S); break; }
                    stack[ns++] = c;
                }
                c->deps++;
            }
        }
    }
    ad_free(S, stack);
    return rc;
}

int ad_autograd_call_global(ad_state *S, const char *name, int argc, const ad_value *argv, ad_value *out) {
    int slot = ad_global_slot(S, name, false);
    if (slot >= 0) {
        int rc = ad_library_resolve(S, slot);
        if (rc) return rc;
    }
    if (slot < 0 || !S->globals->defined[slot]) return ad_error(S, "autograd needs the function '%s'", name);
    return ad_vm_call_value(S, S->globals->values[slot], argc, argv, out);
}

/* An expanded number (the gradient of a sum: its seed expanded to the input's shape). */
static bool all_strides_zero(const ad_tensor *t) {
    for (int i = 0; i < t->ndim; i++)
        if (t->strides[i] != 0) return false;
    return true;
}

/* Whether a += b can write into a: a float tensor no one else can see
 * (its header and storage referenced only from the buffer), laid out like b
 * or b an expanded number. */
static bool can_add_into(ad_value a, ad_value b) {
    if (a.t != AD_TTENSOR || b.t != AD_TTENSOR) return false;
    ad_tensor *x = a.u.tensor, *y = b.u.tensor;
    if (x->refcount != 1 || x->storage->refcount != 1 || x->grad_fn || x->requires_grad || x->fw_grad) return false;
    if (y->grad_fn || y->requires_grad || y->fw_grad) return false; /* its graph or tangent would be lost */
    if (x->dtype != y->dtype || (x->dtype != AD_FLOAT32 && x->dtype != AD_FLOAT64)) return false;
    if (x->storage->release || x->storage->device != AD_DEV_CPU || y->storage->device != AD_DEV_CPU) return false;
    return ad_shape_equal(x->ndim, x->shape, y->ndim, y->shape) && ad_tensor_is_contiguous(x) &&
           (ad_tensor_is_contiguous(y) || all_strides_zero(y));
}

/* a += b in place (see can_add_into), as torch's engine accumulates. */
static void add_into(ad_tensor *a, const ad_tensor *b) {
    ew_par_add_into(ad_tensor_data(a), ad_tensor_data(b), ad_tensor_is_contiguous(b) ? 1 : 0, a->numel,
                    a->dtype == AD_FLOAT64);
    a->storage->version++;
}

/* *acc += g (g's reference is taken). Differentiable when create_graph. */
static int accumulate(ad_engine *E, ad_value *acc, ad_value g) {
    if (g.t == AD_TNONE) return ADDSL_OK;
    if (acc->t == AD_TNONE) { *acc = g; return ADDSL_OK; }
    /* A flattened backward (compile()) records the sum as an add op; a write
     * in place would be invisible to the program. */
    bool traced = ad_trace_on(E->S);
    if (!E->create_graph && !traced && can_add_into(*acc, g)) {
        add_into(acc->u.tensor, g.u.tensor);
        ad_value_decref(E->S, g);
        return ADDSL_OK;
    }
    ad_value sum = ad_none(), args[2] = {*acc, g};
    int rc = E->create_graph || traced ? ad_autograd_call_global(E->S, "add", 2, args, &sum) : ad_bi_add(E->S, *acc, g, &sum);
    ad_value_decref(E->S, g);
    if (rc) return rc;
    ad_value_decref(E->S, *acc);
    *acc = sum;
    return ADDSL_OK;
}

/* The gradient 'g' for an input shaped like 'like': summed over broadcast
 * dimensions and converted to its dtype, as PyTorch's engine does. */
static int fit_to(ad_engine *E, ad_value g, const ad_tensor *like, ad_value *out) {
    ad_state *S = E->S;
    *out = ad_none();
    ad_tensor *t = NULL;
    int rc = ad_arg_tensor(S, g, "backward", "grad", &t);
    if (rc) return rc;
    ad_value cur = ad_tensor_value(t);
    if (!ad_shape_equal(t->ndim, t->shape, like->ndim, like->shape)) {
        int lead = t->ndim - like->ndim;
        ad_list *dims = ad_list_new(S, AD_TLIST, 0);
        if (!dims) { ad_value_decref(S, cur); return S->errcode; }
        bool ok = lead >= 0;
        for (int i = 0; ok && i < t->ndim; i++) {
            if (i < lead) rc = ad_list_push(S, dims, ad_int(i));
            else if (like->shape[i - lead] == 1 && t->shape[i] != 1) rc = ad_list_push(S, dims, ad_int(i));
            else if (like->shape[i - lead] != t->shape[i] && t->shape[i] != 1) ok = false;
            if (rc) break;
        }
        ad_value dv = ad_list_value(dims, AD_TLIST);
        if (!rc && ok && dims->len > 0) {
            ad_value args[3] = {cur, dv, ad_bool(true)}, r;
            rc = ad_autograd_call_global(S, "sum", 3, args, &r);
            if (!rc) { ad_value_decref(S, cur); cur = r; }
        }
        ad_value_decref(S, dv);
        if (!rc) {
            ad_tensor *c = cur.u.tensor;
            if (c->numel == like->numel) {
                ad_list *shp = ad_list_new(S, AD_TLIST, like->ndim);
                if (!shp) rc = S->errcode;
                for (int i = 0; !rc && i < like->ndim; i++) shp->items[i] = ad_int((double)like->shape[i]);
                if (!rc) {
                    ad_value sv = ad_list_value(shp, AD_TLIST), args[2] = {cur, sv}, r;
                    rc = ad_autograd_call_global(S, "reshape", 2, args, &r);
                    ad_value_decref(S, sv);
                    if (!rc) { ad_value_decref(S, cur); cur = r; }
                }
            } else {
                ad_buf b1, b2;
                ad_buf_init(&b1, S); ad_buf_init(&b2, S);
                ad_buf_shape(&b1, c->ndim, c->shape); ad_buf_shape(&b2, like->ndim, like->shape);
                rc = ad_error(S, "gradient of shape %s does not match the input's shape %s", b1.data ? b1.data : "?", b2.data ? b2.data : "?");
                ad_buf_free(&b1); ad_buf_free(&b2);
            }
        }
        if (rc) { ad_value_decref(S, cur); return rc; }
    }
    if (cur.u.tensor->dtype != like->dtype && ad_dtype_is_float(like->dtype)) {
        ad_value args[2] = {cur, ad_dtype_value(like->dtype)}, r;
        rc = ad_autograd_call_global(S, "to", 2, args, &r);
        ad_value_decref(S, cur);
        if (rc) return rc;
        cur = r;
    }
    *out = cur;
    return ADDSL_OK;
}

static int leaf_accumulate(ad_engine *E, ad_tensor *leaf, ad_value g) {
    ad_assert(leaf->refcount > 0 && ad_vtype_valid(g.t));
    for (int i = 0; i < E->nleaves; i++)
        if (E->leaves[i].leaf == leaf) return accumulate(E, &E->leaves[i].g, g);
    if (!grow_arr(E->S, (void **)&E->leaves, &E->capleaves, E->nleaves, sizeof *E->leaves)) {
        ad_value_decref(E->S, g);
        return ad_nomem(E->S);
    }
    E->leaves[E->nleaves].leaf = leaf;
    E->leaves[E->nleaves].g = g;
    E->nleaves++;
    return ADDSL_OK;
}

/* The saved values that the formulas about to run read ('reads', 'result')
 * must be as they were when saved. */
static int check_versions(ad_state *S, const ad_node *n, uint32_t reads, bool result) {
    for (int i = 0; i < n->nargs; i++) {
        if (ad_node_args(n)[i].t != AD_TTENSOR || !(reads & ((uint32_t)1 << i))) continue;
        const ad_tensor *t = ad_node_args(n)[i].u.tensor;
        if (t->storage->version == ad_node_versions(n)[i]) continue;
        ad_buf b;
        ad_buf_init(&b, S);
        ad_buf_shape(&b, t->ndim, t->shape);
        int rc = ad_error(S, "one of the variables needed for gradient computation has been modified by an inplace "
                          "operation: [%s %s], input '%s' of op '%s', is at version %u; expected version %u instead",
                          ad_dtype_name(t->dtype), b.data ? b.data : "", n->op->pnames[i], n->op->name,
                          t->storage->version, ad_node_versions(n)[i]);
        ad_buf_free(&b);
        return rc;
    }
    for (int k = 0; k < n->nout && result; k++) {
        const ad_tensor *t = ad_node_out(n, k);
        if (t && t->storage->version != ad_node_out_versions(n)[k])
            return ad_error(S, "one of the variables needed for gradient computation has been modified by an inplace "
                            "operation: output %d of op '%s' is at version %u; expected version %u instead",
                            k, n->op->name, t->storage->version, ad_node_out_versions(n)[k]);
    }
    return ADDSL_OK;
}

static bool has_nonfinite(ad_state *S, ad_tensor *t) {
    if (!ad_dtype_is_float(t->dtype)) return false;
    if (ad_tensor_device(t) != AD_DEV_CPU) { /* checked on a host copy: anomaly mode is for debugging */
        ad_tensor *h = ad_tensor_to_device(S, t, AD_DEV_CPU);
        bool bad = h ? has_nonfinite(S, h) : false;
        ad_tensor_decref(S, h);
        return bad;
    }
    for (int64_t i = 0; i < t->numel; i++) if (!isfinite(ad_tensor_get_flat(t, i))) return true;
    return false;
}

static int anomaly_check(ad_engine *E, const ad_node *n, int param, ad_value g) {
    if (!E->S->anomaly || g.t != AD_TTENSOR || !has_nonfinite(E->S, g.u.tensor)) return ADDSL_OK;
    return ad_error(E->S, "detect_anomaly: the gradient of op '%s' for input '%s' contains nan or inf; "
                    "the op was called at %s:%d:%d", n->op->name, n->op->pnames[param],
                    n->chunk ? n->chunk : "?", n->line, n->col);
}

/* The gradient of each output of n for the formulas (new references in g):
 * zeros for an output that got none when a formula reads the gradients. */
static int output_grads(ad_state *S, const ad_node *n, unsigned uses, ad_value *g) {
    for (int k = 0; k < n->nout; k++) {
        g[k] = ad_node_gbuf(n)[k];
        ad_value_incref(g[k]);
        if (g[k].t != AD_TNONE || !ad_node_out(n, k) || !(uses & AD_VJP_USES_GRADS)) continue;
        ad_tensor *z = ad_tensor_full_like(S, ad_node_out(n, k), 0.0);
        if (!z) { for (int j = 0; j < k; j++) ad_value_decref(S, g[j]); return S->errcode; }
        g[k] = ad_tensor_value(z);
    }
    return ADDSL_OK;
}

/* A list (kind) of the n values v, each with a new reference, into *out. */
static int list_of(ad_state *S, ad_vtype kind, int n, const ad_value *v, ad_value *out) {
    ad_list *l = ad_list_new(S, kind, n);
    if (!l) return S->errcode;
    for (int k = 0; k < n; k++) { l->items[k] = v[k]; ad_value_incref(v[k]); }
    *out = ad_list_value(l, kind);
    return ADDSL_OK;
}

/* Builds the formula arguments of node n (see ad_op_formula_nargs) into
 * args[0..*nargs), new references the caller releases. The arguments that
 * cost an allocation are built only when a formula to run reads them
 * ('uses', AD_VJP_USES_*), and are none otherwise. */
static int formula_args(ad_engine *E, ad_node *n, unsigned uses, ad_value *args, int *nargs) {
    ad_state *S = E->S;
    int np = n->nargs, no = n->nout;
    bool named = n->op->outnames != NULL;
    int total = ad_op_formula_nargs(np, no, named);
    for (int i = 0; i < total; i++) args[i] = ad_none();
    *nargs = total;
    for (int i = 0; i < np; i++) { args[i] = ad_node_args(n)[i]; ad_value_incref(args[i]); }
    ad_value g[AD_OP_MAX_OUTS], outs[AD_OP_MAX_OUTS];
    int rc = output_grads(S, n, uses, g);
    if (rc) return rc;
    for (int k = 0; k < no; k++) outs[k] = ad_node_out(n, k) ? ad_tensor_value(ad_node_out(n, k)) : ad_none();
    /* 'grad' is the gradient of the one differentiable output, whichever it is. */
    int gi = 0;
    while (gi < no - 1 && !n->op->out_diff[gi]) gi++;
    args[np] = g[gi]; ad_value_incref(g[gi]);                             /* grad */
    if (uses & AD_VJP_USES_GRADS_LIST) rc = list_of(S, AD_TLIST, no, g, &args[np + 1]);
    if (no == 1) { args[np + 2] = outs[0]; ad_value_incref(outs[0]); }      /* result */
    else if (!rc && (uses & AD_VJP_USES_RESULT_TUPLE)) rc = list_of(S, AD_TTUPLE, no, outs, &args[np + 2]);
    for (int k = 0; k < no; k++) {
        args[np + 3 + k] = outs[k]; ad_value_incref(outs[k]);              /* resultK */
        if (!named) continue;
        args[np + 3 + no + k] = outs[k]; ad_value_incref(outs[k]);         /* output names */
        args[np + 3 + 2 * no + k] = g[k]; ad_value_incref(g[k]);           /* grad_NAME */
    }
    for (int k = 0; k < no; k++) ad_value_decref(S, g[k]);
    if (!rc && (uses & AD_VJP_USES_MASK)) {
        ad_list *mask = ad_list_new(S, AD_TLIST, np);
        if (!mask) return S->errcode;
        for (int i = 0; i < np; i++) mask->items[i] = ad_bool(edge_live(ad_node_edge(n, i)));
        args[total - 1] = ad_list_value(mask, AD_TLIST);
    }
    return rc;
}

static int route_to(ad_engine *E, ad_node *n, int param, ad_edge *e, ad_value arg, ad_value g);
static int index_grad_into_acc(ad_engine *E, ad_node *n, bool *done);
static int matmul_grad_direct(ad_engine *E, ad_node *n, bool *done);

static int route(ad_engine *E, ad_node *n, int param, ad_value g) {
    ad_state *S = E->S;
    if (g.t == AD_TNONE) return ADDSL_OK;
    ad_edge *e = ad_node_edge(n, param);
    if (!edge_live(e)) { ad_value_decref(S, g); return ADDSL_OK; }
    if (!e->nsub) return route_to(E, n, param, e, ad_node_args(n)[param], g);
    /* A list argument takes a list of gradients, one per element. */
    if (!ad_is_seq(g) || g.u.l->len != e->nsub) {
        ad_value_decref(S, g);
        return ad_error(S, "op '%s': the gradient for list input '%s' must be a list of %d gradients", n->op->name,
                        n->op->pnames[param], e->nsub);
    }
    int rc = ADDSL_OK;
    for (int j = 0; j < e->nsub && !rc; j++) {
        ad_value gj = g.u.l->items[j];
        ad_value_incref(gj);
        rc = route_to(E, n, param, &e->sub[j], ad_node_args(n)[param].u.l->items[j], gj);
    }
    ad_value_decref(S, g);
    return rc;
}

static int route_to(ad_engine *E, ad_node *n, int param, ad_edge *e, ad_value arg, ad_value g) {
    ad_state *S = E->S;
    if (g.t == AD_TNONE) return ADDSL_OK;
    if (!e->node && !e->leaf) { ad_value_decref(S, g); return ADDSL_OK; }
    int rc = anomaly_check(E, n, param, g);
    if (rc) { ad_value_decref(S, g); return rc; }
    ad_value fitted;
    ad_tensor meta;
    if (arg.t == AD_TNONE && ((n->meta_mask >> param) & 1u)) { meta_like(n, param, &meta); arg = ad_tensor_value(&meta); }
    if (arg.t == AD_TTENSOR) {
        rc = fit_to(E, g, arg.u.tensor, &fitted);
        ad_value_decref(S, g);
        if (rc) return rc;
    } else {
        fitted = g;
    }
    if (e->leaf) return leaf_accumulate(E, e->leaf, fitted);
    return accumulate(E, &ad_node_gbuf(e->node)[e->nr], fitted);
}

/* Whether a gradient sent along edge e can reach one of grad()'s inputs: a
 * not_implemented parameter is an error only then, as in torch, where
 * grad(loss, [x]) works with a class weight that requires grad. A depth-first
 * walk with a visited list; it runs only for a live not_implemented edge. On
 * an allocation failure it answers true (the error is raised, as before). */
static bool edge_reaches_inputs(ad_engine *E, const ad_edge *e) {
    ad_state *S = E->S;
    for (int j = 0; j < e->nsub; j++)
        if (edge_reaches_inputs(E, &e->sub[j])) return true;
    if (e->leaf)
        for (int i = 0; i < E->ninputs; i++)
            if (E->inputs[i] == e->leaf) return true;
    if (!e->node) return false;
    ad_node **stack = NULL, **seen = NULL;
    int nstack = 0, capstack = 0, nseen = 0, capseen = 0;
    bool found = false, oom = false;
    if (!grow_arr(S, (void **)&stack, &capstack, nstack, sizeof *stack)) return true;
    stack[nstack++] = e->node;
    while (nstack > 0 && !found && !oom) {
        ad_node *n = stack[--nstack];
        bool visited = false;
        for (int k = 0; k < nseen && !visited; k++) visited = seen[k] == n;
        if (visited) continue;
        if (!grow_arr(S, (void **)&seen, &capseen, nseen, sizeof *seen)) { oom = true; break; }
        seen[nseen++] = n;
        for (int i = 0; i < E->ninputs && !found; i++)
            if (E->inputs[i]->grad_fn == n) found = true;
        for (int a = 0; a < n->nargs && !found && !oom; a++) {
            const ad_edge *x = ad_node_edge(n, a);
            int nx = x->nsub ? x->nsub : 1;
            for (int j = 0; j < nx && !found; j++) {
                const ad_edge *y = x->nsub ? &x->sub[j] : x;
                if (y->leaf)
                    for (int i = 0; i < E->ninputs; i++)
                        if (E->inputs[i] == y->leaf) found = true;
                if (y->node && !found) {
                    if (!grow_arr(S, (void **)&stack, &capstack, nstack, sizeof *stack)) { oom = true; break; }
                    stack[nstack++] = y->node;
                }
            }
        }
    }
    ad_free(S, stack);
    ad_free(S, seen);
    return found || oom;
}

static int apply_node(ad_engine *E, ad_node *n) {
    ad_state *S = E->S;
    ad_opdef *op = n->op;
    bool any = false;
    for (int k = 0; k < n->nout; k++) if (ad_node_gbuf(n)[k].t != AD_TNONE) any = true;
    /* grad() of a non-leaf input: its gradient is what reached this node. */
    for (int i = 0; i < E->ninputs; i++) {
        ad_tensor *t = E->inputs[i];
        if (t->grad_fn == n && ad_node_gbuf(n)[t->output_nr].t != AD_TNONE && E->captured[i].t == AD_TNONE) {
            E->captured[i] = ad_node_gbuf(n)[t->output_nr];
            ad_value_incref(E->captured[i]);
        }
    }
    if (!any) return ADDSL_OK;
    for (int i = 0; i < n->nargs; i++)
        if (op->kind[i] == AD_PARAM_NOTIMPL && edge_live(ad_node_edge(n, i)) &&
            (!E->only_inputs || edge_reaches_inputs(E, ad_node_edge(n, i))))
            return ad_error(S, "the derivative of op '%s' for input '%s' is not implemented: %s", op->name,
                            op->pnames[i], op->notimpl[i] ? op->notimpl[i] : "");
    bool done = false;
    int rc = index_grad_into_acc(E, n, &done);
    if (!rc && !done) rc = matmul_grad_direct(E, n, &done);
    if (rc || done) return rc;
    /* The formulas whose inputs want a gradient, and what they read. */
    bool needed[AD_OP_MAX_PARAMS];
    unsigned uses = 0;
    uint32_t reads = 0;
    bool reads_result = false;
    for (int e = 0; e < op->nvjp; e++) {
        needed[e] = false;
        for (int j = 0; j < op->vjp[e].nnames; j++)
            if (edge_live(ad_node_edge(n, op->vjp[e].params[j]))) needed[e] = true;
        if (!needed[e]) continue;
        uses |= op->vjp[e].uses;
        reads |= op->vjp[e].reads;
        reads_result |= op->vjp[e].reads_result;
    }
    rc = check_versions(S, n, reads, reads_result);
    if (rc) return rc;
    ad_value args[AD_OP_MAX_PARAMS + 4 + 3 * AD_OP_MAX_OUTS];
    int na = 0;
    rc = formula_args(E, n, uses, args, &na);
    for (int e = 0; !rc && e < op->nvjp; e++) {
        ad_vjp_entry *v = &op->vjp[e];
        if (!needed[e]) continue;
        ad_value r = ad_none();
        done = false;
        rc = ad_formula_fast_call(S, &v->fast, v->fn, args, &done, &r);
        if (!rc && !done) rc = ad_vm_call_value(S, v->fn, na, args, &r);
        if (rc) break;
        if (v->nnames == 1) { rc = route(E, n, v->params[0], r); continue; }
        if (!ad_is_seq(r) || r.u.l->len != v->nnames) {
            ad_value_decref(S, r);
            rc = ad_error(S, "op '%s': a formula for %d inputs must return a list of %d gradients", op->name, v->nnames, v->nnames);
            break;
        }
        for (int j = 0; j < v->nnames && !rc; j++) {
            ad_value gj = r.u.l->items[j];
            ad_value_incref(gj);
            rc = route(E, n, v->params[j], gj);
        }
        ad_value_decref(S, r);
    }
    for (int i = 0; i < na; i++) ad_value_decref(S, args[i]);
    return rc;
}

void ad_autograd_run_free(ad_engine *E) {
    ad_state *S = E->S;
    for (int i = 0; i < E->n; i++) {
        ad_node *n = E->nodes[i];
        for (int k = 0; k < n->nout; k++) { ad_value_decref(S, ad_node_gbuf(n)[k]); ad_node_gbuf(n)[k] = ad_none(); }
        ad_node_decref(S, n);
    }
    for (int i = 0; i < E->nleaves; i++) ad_value_decref(S, E->leaves[i].g);
    ad_free(S, E->nodes); ad_free(S, E->ready); ad_free(S, E->leaves);
}

int ad_autograd_run(ad_engine *E, int nroots, ad_tensor **roots, ad_value *seeds) {
    ad_state *S = E->S;
    E->epoch = ++S->grad_epoch;
    int rc = ADDSL_OK;
    for (int i = 0; i < nroots && !rc; i++) {
        if (roots[i]->grad_fn) {
            int before = E->n;
            rc = discover(E, roots[i]->grad_fn);
            for (int j = before; j < E->n; j++) E->nodes[j]->refcount++; /* held until ad_autograd_run_free */
        }
    }
    if (rc) return rc;
    for (int i = 0; i < nroots && !rc; i++) {
        ad_value_incref(seeds[i]);
        ad_assert(!roots[i]->grad_fn || roots[i]->output_nr < roots[i]->grad_fn->nout);
        if (roots[i]->grad_fn) rc = accumulate(E, &ad_node_gbuf(roots[i]->grad_fn)[roots[i]->output_nr], seeds[i]);
        else rc = leaf_accumulate(E, roots[i], seeds[i]);
    }
    for (int i = 0; i < E->n && !rc; i++) {
        if (E->nodes[i]->deps != 0) continue;
        if (!grow_arr(S, (void **)&E->ready, &E->capready, E->nready, sizeof *E->ready)) return ad_nomem(S);
        E->ready[E->nready++] = E->nodes[i];
    }
    bool grad_mode = S->grad_enabled;
    S->grad_enabled = E->create_graph;
    /* A backward being flattened (compile()) may be abandoned half-way and
     * run again as one record: the saved values go only once it is done. */
    bool traced = ad_trace_on(S);
    while (E->nready > 0 && !rc) {
        ad_node *n = E->ready[--E->nready];
        rc = apply_node(E, n);
        if (rc) break;
        for (int k = 0; k < n->nout; k++) { ad_value_decref(S, ad_node_gbuf(n)[k]); ad_node_gbuf(n)[k] = ad_none(); }
        for (int i = 0; i < n->nargs && !rc; i++) {
            ad_edge *e = ad_node_edge(n, i);
            int m = e->nsub ? e->nsub : 1;
            for (int j = 0; j < m; j++) {
                ad_node *c = e->nsub ? e->sub[j].node : e->node;
                if (!c || c->epoch != E->epoch) continue;
                ad_assert(c->deps > 0); /* a node becomes ready once, after its last consumer */
                if (--c->deps == 0) {

                    if (!grow_arr(S, (void **)&E->ready, &E->capready, E->nready, sizeof *E->ready)) { rc = ad_nomem(S); break; }
                    E->ready[E->nready++] = c;
                }
            }
        }
        if (!E->retain && !traced) node_release_saved(S, n);
    }
    for (int i = 0; traced && !rc && !E->retain && i < E->n; i++) node_release_saved(S, E->nodes[i]);
    S->grad_enabled = grad_mode;
    return rc;
}

int ad_autograd_accum_leaf(ad_state *S, ad_tensor *leaf, ad_tensor *gt, bool create) {
    if (!create && gt->grad_fn) {
        ad_tensor *d = ad_tensor_alias(S, gt);
        ad_tensor_decref(S, gt);
        if (!d) return S->errcode;
        gt = d;
    }
    if (!leaf->grad) { leaf->grad = gt; return ADDSL_OK; }
    /* in place when no one else sees .grad, as torch's AccumulateGrad does */
    if (!create && can_add_into(ad_tensor_value(leaf->grad), ad_tensor_value(gt))) {
        add_into(leaf->grad, gt);
        ad_tensor_decref(S, gt);
        return ADDSL_OK;
    }
    ad_value sum;
    int rc = create ? ad_autograd_call_global(S, "add", 2, (ad_value[]){ad_tensor_value(leaf->grad), ad_tensor_value(gt)}, &sum)
                    : ad_bi_add(S, ad_tensor_value(leaf->grad), ad_tensor_value(gt), &sum);
    ad_tensor_decref(S, gt);
    if (rc) return rc;
    ad_tensor_decref(S, leaf->grad);
    leaf->grad = sum.u.tensor;
    return ADDSL_OK;
}

bool ad_autograd_graph_within(ad_state *S, ad_tensor *const *roots, int nroots, bool (*known)(const ad_state *, const void *)) {
    ad_node **stack = NULL;
    int ns = 0, caps = 0;
    bool ok = true;
    uint64_t epoch = ++S->grad_epoch;
    for (int i = 0; i < nroots && ok; i++) {
        ad_node *r = roots[i]->grad_fn;
        if (!r || r->epoch == epoch) continue;
        if (!grow_arr(S, (void **)&stack, &caps, ns, sizeof *stack)) { ok = false; break; }
        r->epoch = epoch;
        stack[ns++] = r;
    }
    while (ns > 0 && ok) {
        ad_node *n = stack[--ns];
        if (!known(S, n)) { ok = false; break; }
        for (int i = 0; i < n->nargs && ok; i++) {
            const ad_edge *e = ad_node_edge(n, i);
            int m = e->nsub ? e->nsub : 1;
            for (int j = 0; j < m; j++) {
                ad_node *c = e->nsub ? e->sub[j].node : e->node;
                if (!c || c->epoch == epoch) continue;
                if (!grow_arr(S, (void **)&stack, &caps, ns, sizeof *stack)) { ok = false; break; }
                c->epoch = epoch;
                stack[ns++] = c;
            }
        }
    }
    if (!ok) ad_clear_error(S);
    ad_free(S, stack);
    return ok;
}

/* ---- the engine's direct paths for indexing and products ---- */

/* view += value for a float view and a contiguous value of its shape and
 * dtype (the common gradient of a slice); false, untouched, otherwise. */
bool ad_autograd_add_into_view(ad_value view, ad_value value) {
    if (view.t != AD_TTENSOR || value.t != AD_TTENSOR) return false;
    ad_tensor *v = view.u.tensor, *g = value.u.tensor;
    if (v->dtype != g->dtype || (v->dtype != AD_FLOAT32 && v->dtype != AD_FLOAT64) || g->fw_grad || v->ndim < 1) return false;
    if (v->storage->device != AD_DEV_CPU || g->storage->device != AD_DEV_CPU) return false;
    if (!ad_shape_equal(v->ndim, v->shape, g->ndim, g->shape) || !ad_tensor_is_contiguous(g)) return false;
    int d = v->ndim;
    int64_t inner = v->shape[d - 1], rows = inner ? v->numel / inner : 0, idx[AD_MAX_DIMS] = {0};
    size_t es = ad_dtype_size(v->dtype);
    char *base = (char *)v->storage->data, *src = (char *)ad_tensor_data(g);
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = v->offset;
        for (int k = 0; k < d - 1; k++) off += idx[k] * v->strides[k];
        const int64_t st = v->strides[d - 1];
        if (st == 1) {
            /* the usual slice: rows of the view are contiguous, the kernel vectorises them */
            if (v->dtype == AD_FLOAT32) {
                float *x = (float *)(base + (size_t)off * es);
                ad_k_add_f32(x, x, 1, (const float *)src + r * inner, 1, inner);
            } else {
                double *x = (double *)(base + (size_t)off * es);
                ad_k_add_f64(x, x, 1, (const double *)src + r * inner, 1, inner);
            }
        } else if (v->dtype == AD_FLOAT32) {
            float *x = (float *)(base + (size_t)off * es);
            const float *y = (const float *)src + r * inner;
            for (int64_t i = 0; i < inner; i++) x[i * st] += y[i];
        } else {
            double *x = (double *)(base + (size_t)off * es);
            const double *y = (const double *)src + r * inner;
            for (int64_t i = 0; i < inner; i++) x[i * st] += y[i];
        }
        for (int k = d - 2; k >= 0 && ++idx[k] == v->shape[k]; k--) idx[k] = 0;
    }
    v->storage->version++;
    return true;
}

bool ad_autograd_basic_index(int n, const ad_value *items) {
    for (int i = 0; i < n; i++)
        if (!(ad_is_number(items[i]) || items[i].t == AD_TSLICE || items[i].t == AD_TNONE || items[i].t == AD_TELLIPSIS))
            return false;
    return true;
}

/* Whether the engine may do node n's op's work in C (index_get's and
 * matmul's gradients below): no graph to build, no trace or anomaly mode,
 * one output and the op library's own single formula (a script's op of
 * the same name keeps its own). */
static bool direct_ok(ad_engine *E, const ad_node *n) {
    ad_state *S = E->S;
    const ad_opdef *op = n->op;
    if (op->nvjp != 1 || n->nout != 1 || E->create_graph || S->anomaly || ad_trace_on(S)) return false;
    ad_value fn = op->vjp[0].fn;
    return fn.t == AD_TFUNC && fn.u.fn->p->chunk && fn.u.fn->p->chunk->library;
}

/* The buffer a gradient sent along e accumulates in when it is a plain
 * float tensor of dtype dt and the given shape that no one else sees (as
 * can_add_into asks), else NULL. */
static ad_tensor *plain_acc(ad_engine *E, const ad_edge *e, ad_dtype dt, int ndim, const int64_t *shape) {
    ad_value *acc = NULL;
    if (e->node) acc = &ad_node_gbuf(e->node)[e->nr];
    else
        for (int i = 0; i < E->nleaves && !acc; i++)
            if (E->leaves[i].leaf == e->leaf) acc = &E->leaves[i].g;
    if (!acc || acc->t != AD_TTENSOR) return NULL;
    ad_tensor *a = acc->u.tensor;
    if (a->refcount != 1 || a->storage->refcount != 1 || a->grad_fn || a->requires_grad || a->fw_grad ||
        a->dtype != dt || a->storage->release || ad_tensor_device(a) != AD_DEV_CPU || !ad_tensor_is_contiguous(a) ||
        !ad_shape_equal(a->ndim, a->shape, ndim, shape))
        return NULL;
    return a;
}

/* The gradient of t[idx] for a basic index, added straight into the buffer
 * that accumulates t's gradient, through a view at idx: the formula would
 * make zeros of t's shape, add the gradient into them and then add those
 * to the buffer whole (an LSTM's four gate slices per step: a zero fill and
 * a full-size add each), with the same bits (below). Taken with no
 * graph to build, no trace or anomaly mode, CPU float tensors, and the
 * library's formula; *done is false, nothing touched, otherwise. */
static int index_grad_into_acc(ad_engine *E, ad_node *n, bool *done) {
    ad_state *S = E->S;
    *done = false;
    ad_opdef *op = n->op;
    if (op != S->op_index || !direct_ok(E, n)) return ADDSL_OK;
    ad_edge *e = ad_node_edge(n, 0);
    ad_value self = ad_node_args(n)[0], idx = ad_node_args(n)[1], g = ad_node_gbuf(n)[0];
    if (e->nsub || (!e->node && !e->leaf) || self.t != AD_TTENSOR || g.t != AD_TTENSOR || !ad_is_seq(idx)) return ADDSL_OK;
    int ni = (int)idx.u.l->len;
    const ad_value *items = idx.u.l->items;
    ad_tensor *st = self.u.tensor, *gt = g.u.tensor;
    if (!ad_autograd_basic_index(ni, items) || gt->dtype != st->dtype || gt->grad_fn || gt->requires_grad ||
        ad_tensor_device(st) != AD_DEV_CPU)
        return ADDSL_OK;
    ad_tensor *a = plain_acc(E, e, gt->dtype, st->ndim, st->shape);
    if (!a) return ADDSL_OK;
    /* The formula's sum is buffer + (zeros with 0 + grad at idx): outside idx a -0.0
     * in the buffer becomes +0.0 (compile()'s rewrite of it, vm/trace/simplify.c, keeps
     * those bits too). So the buffer gets + 0 first; after that, + grad is + (0 + grad). */
    if (a->dtype == AD_FLOAT32) {
        const float z = 0.0f;
        float *x = ad_tensor_data(a);
        ad_k_add_f32(x, x, 1, &z, 0, a->numel);
    } else {
        const double z = 0.0;
        double *x = ad_tensor_data(a);
        ad_k_add_f64(x, x, 1, &z, 0, a->numel);
    }
    ad_value view = ad_none();
    int rc = ad_bi_index_get(S, a, ni, items, &view);
    if (rc) return rc;
    *done = ad_autograd_add_into_view(view, g);
    ad_value_decref(S, view);
    return ADDSL_OK;
}

static bool float_cpu_matrix(const ad_tensor *t, ad_dtype dt) {
    return t->ndim == 2 && t->dtype == dt && ad_tensor_device(t) == AD_DEV_CPU && !t->fw_grad;
}

/* One input's gradient of a product: x y (x or y read transposed), into
 * the buffer accumulating it when gemm can add it there (beta 1), else as
 * a new tensor routed as usual. */
static int matmul_grad_one(ad_engine *E, ad_node *n, int param, ad_edge *e, ad_tensor *x, ad_tensor *y, bool tx) {
    ad_state *S = E->S;
    ad_tensor *xv = tx ? ad_tensor_transpose(S, x, 0, 1) : (ad_tensor_incref(x), x);
    ad_tensor *yv = tx ? (ad_tensor_incref(y), y) : ad_tensor_transpose(S, y, 0, 1);
    int rc = xv && yv ? ADDSL_OK : ad_fail(S);
    int64_t shape[2] = {xv ? xv->shape[0] : 0, yv ? yv->shape[1] : 0}, K = xv ? xv->shape[1] : 0;
    /* Adding inside gemm gives the bits of a product then an add while one
     * block of the BLAS kernel covers the inner dimension, and not with the
     * small square kernel (it adds in its accumulator's precision). */
    ad_tensor *acc = NULL;
    if (!rc && K > 0 && K <= 64 && !(shape[0] == shape[1] && shape[1] == K))
        acc = plain_acc(E, e, x->dtype, 2, shape);
    if (!rc && acc) {
        rc = ad_linalg_gemm2d(S, xv, yv, acc, 1.0);
        acc->storage->version++;
    } else if (!rc) {
        ad_tensor *c = K > 0 ? ad_tensor_empty(S, x->dtype, 2, shape) : ad_tensor_zeros(S, x->dtype, 2, shape);
        if (!c) rc = ad_fail(S);
        if (!rc && K > 0) rc = ad_linalg_gemm2d(S, xv, yv, c, 0.0);
        if (rc) ad_tensor_decref(S, c);
        else rc = route_to(E, n, param, e, ad_node_args(n)[param], ad_tensor_value(c));
    }
    ad_tensor_decref(S, xv);
    ad_tensor_decref(S, yv);
    return rc;
}

/* matmul's gradient for two float matrices on the CPU, without the
 * formula's frame, list and mT views: grad other^T and self^T grad, by
 * the same gemm calls as the formula's products. */
static int matmul_grad_direct(ad_engine *E, ad_node *n, bool *done) {
    ad_state *S = E->S;
    *done = false;
    if (n->op != S->op_matmul || !direct_ok(E, n)) return ADDSL_OK;
    ad_value sv = ad_node_args(n)[0], ov = ad_node_args(n)[1], gv = ad_node_gbuf(n)[0];
    if (sv.t != AD_TTENSOR || ov.t != AD_TTENSOR || gv.t != AD_TTENSOR) return ADDSL_OK;
    ad_tensor *a = sv.u.tensor, *b = ov.u.tensor, *g = gv.u.tensor;
    ad_dtype dt = g->dtype;
    if ((dt != AD_FLOAT32 && dt != AD_FLOAT64) || !float_cpu_matrix(a, dt) || !float_cpu_matrix(b, dt) ||
        !float_cpu_matrix(g, dt) || g->grad_fn || g->requires_grad)
        return ADDSL_OK;
    ad_edge *ea = ad_node_edge(n, 0), *eb = ad_node_edge(n, 1);
    if (ea->nsub || eb->nsub) return ADDSL_OK;
    int rc = check_versions(S, n, n->op->vjp[0].reads, n->op->vjp[0].reads_result);
    if (rc) return rc;
    *done = true;
    if (edge_live(ea) && (ea->node || ea->leaf)) rc = matmul_grad_one(E, n, 0, ea, g, b, false);
    if (!rc && edge_live(eb) && (eb->node || eb->leaf)) rc = matmul_grad_one(E, n, 1, eb, a, g, true);
    return rc;
}

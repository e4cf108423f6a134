/* autograd/gradfn.c: the value a script sees as 't.grad_fn': a graph node (or a leaf's
 * AccumulateGrad) with PyTorch's name(), next_functions and variable. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../../builtins/builtins.h"
#include "autograd/engine.h"
#include "buf.h"
#include "autograd/gradfn.h"
#include "autograd/op.h"
#include "state.h"
#include "tensor/tensor.h"

/* Takes a new reference to the node or the leaf. */
static int gradfn_new(ad_state *S, ad_node *node, ad_tensor *leaf, ad_value *out) {
    ad_gradfn *g = ad_malloc(S, sizeof *g);
    if (!g) return ad_fail(S);
    g->hdr.refcount = 1;
    g->node = node;
    g->leaf = leaf;
    if (node) node->refcount++;
    if (leaf) ad_tensor_incref(leaf);
    out->t = AD_TGRADFN;
    out->u.gf = g;
    return ADDSL_OK;
}

void ad_gradfn_free(ad_state *S, ad_gradfn *g) {
    if (g->node) ad_node_decref(S, g->node);
    if (g->leaf) ad_tensor_decref(S, g->leaf);
    ad_free(S, g);
}

int ad_gradfn_of(ad_state *S, const ad_tensor *t, ad_value *out) {
    *out = ad_none();
    if (!t->grad_fn) return ADDSL_OK; /* a leaf, as torch: x.grad_fn is None */
    return gradfn_new(S, t->grad_fn, NULL, out);
}

/* PyTorch names a node after its function in CamelCase: log_softmax gives
 * LogSoftmaxBackward0 (the library's max_dim is max: MaxBackward0). */
size_t ad_gradfn_name(const ad_gradfn *g, char *buf, size_t size) {
    if (g->leaf) return (size_t)snprintf(buf, size, "AccumulateGrad");
    return ad_node_class_name(g->node, buf, size);
}

size_t ad_node_class_name(const ad_node *node, char *buf, size_t size) {
    char base[128];
    if (node->op) ad_op_public_name(node->op, base, sizeof base);
    else snprintf(base, sizeof base, "node");
    size_t n = 0;
    bool up = true;
    for (const char *p = base; *p && n + 1 < size; p++) {
        if (*p == '_') { up = true; continue; }
        buf[n++] = up ? (char)toupper((unsigned char)*p) : *p;
        up = false;
    }
    buf[n] = '\0';
    int k = snprintf(buf + n, size - n, "Backward0");
    return n + (k > 0 ? (size_t)k : 0);
}

int ad_gradfn_format(const ad_gradfn *g, ad_buf *b) {
    char name[160];
    ad_gradfn_name(g, name, sizeof name);
    return ad_buf_printf(b, "<%s>", name);
}

/* One (node, output_nr) pair of next_functions for an edge. */
static int edge_pair(ad_state *S, const ad_edge *e, ad_value *out) {
    ad_list *p = ad_list_new(S, AD_TTUPLE, 2);
    if (!p) return ad_fail(S);
    int rc = ADDSL_OK;
    if (e->node) { rc = gradfn_new(S, e->node, NULL, &p->items[0]); p->items[1] = ad_int(e->nr); }
    else if (e->leaf) { rc = gradfn_new(S, NULL, e->leaf, &p->items[0]); p->items[1] = ad_int(0); }
    else p->items[1] = ad_int(0);
    *out = ad_list_value(p, AD_TTUPLE);
    return rc;
}

static bool differentiable_param(const ad_node *n, int i) {
    if (!n->op) return true;
    return n->op->kind[i] == AD_PARAM_DIFF || n->op->kind[i] == AD_PARAM_NOTIMPL;
}

/* torch's next_functions: a pair per differentiable input (each tensor of a
 * list argument such as cat's), none where the input needs no gradient. */
static int next_functions(ad_state *S, const ad_gradfn *g, ad_value *out) {
    ad_list *l = ad_list_new(S, AD_TTUPLE, 0);
    if (!l) return ad_fail(S);
    *out = ad_list_value(l, AD_TTUPLE);
    const ad_node *n = g->node;
    for (int i = 0; n && i < n->nargs; i++) {
        if (!differentiable_param(n, i)) continue;
        const ad_edge *e = ad_node_edge(n, i);
        int m = e->nsub ? e->nsub : 1;
        for (int k = 0; k < m; k++) {
            ad_value pair;
            int rc = edge_pair(S, e->nsub ? &e->sub[k] : e, &pair);
            if (!rc) rc = ad_list_push(S, l, pair);
            else ad_value_decref(S, pair);
            if (rc) return rc;
        }
    }
    return ADDSL_OK;
}

int ad_gradfn_attr(ad_state *S, const ad_gradfn *g, const char *attr, ad_value *out) {
    *out = ad_none();
    if (strcmp(attr, "next_functions") == 0) return next_functions(S, g, out);
    if (strcmp(attr, "variable") == 0 && g->leaf) {
        ad_tensor_incref(g->leaf);
        *out = ad_tensor_value(g->leaf);
        return ADDSL_OK;
    }
    char name[160];
    ad_gradfn_name(g, name, sizeof name);
    return ad_error(S, "'%s' object has no attribute '%s'", name, attr);
}

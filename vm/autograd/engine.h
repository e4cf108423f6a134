/* autograd/engine.h: graph nodes recorded by op calls and the reverse-mode engine
 * that backward() and grad() run (builtins/bi_autograd.c, through autograd/run.h). */
#ifndef AD_AUTOGRAD_H
#define AD_AUTOGRAD_H

#include <stdbool.h>
#include <stdint.h>

#include "value.h"

struct ad_opdef;

typedef struct ad_edge {
    struct ad_node *node;   /* the input's grad_fn (owned), or NULL */
    ad_tensor *leaf;        /* a leaf requiring grad (owned), or NULL */
    struct ad_edge *sub;    /* a list argument (cat, stack): one edge per element */
    int nr;                 /* which output of that node */
    int nsub;               /* elements of sub */
} ad_edge;

/* A node is one heap header: this struct, then its arrays in this order
 * (offsets follow from the counts, so the node keeps no pointers to them):
 *   ad_value args[nargs]     the bound arguments (none for a metadata-only one)
 *   ad_value gbuf[nout]      gradient buffers (scratch of the running backward)
 *   ad_edge edges[popcount(edge_mask)]   only for parameters that needed a gradient
 *   ad_tensor *outs[nout]    saved outputs (absent unless some formula reads one; see saves_outs)
 *   uint32_t versions[nargs], out_versions[nout or 0]
 *   metadata of each parameter in meta_mask: an ad_node_meta and ndim sizes. */
typedef struct ad_node {
    int64_t refcount;
    struct ad_opdef *op;    /* owned */
    const char *chunk;      /* name of the script (owned by the chunk; may dangle after it) */
    uint64_t epoch;         /* scratch of the running backward */
    int32_t line, col;      /* where the forward call was made (anomaly reports) */
    int32_t deps;
    uint32_t edge_mask;     /* bit i: parameter i has an edge */
    uint32_t meta_mask;     /* bit i: tensor parameter i is kept as its shape and dtype only */
    uint8_t nargs;
    uint8_t nout;
    uint8_t nedges;         /* bits set in edge_mask */
    bool saves_outs : 1;    /* outs[] and out_versions[] are present */
    bool released : 1;      /* saved values freed by a backward without retain_graph */
} ad_node;

/* What a node keeps of a tensor argument that no formula mentions: the
 * engine fits that input's gradient to it. Followed by ndim int64 sizes. */
typedef struct ad_node_meta {
    int32_t ndim;
    int32_t dtype;
} ad_node_meta;

static inline ad_value *ad_node_args(const ad_node *n) { return (ad_value *)(n + 1); }
static inline ad_value *ad_node_gbuf(const ad_node *n) { return ad_node_args(n) + n->nargs; }
static inline ad_edge *ad_node_edges(const ad_node *n) { return (ad_edge *)(ad_node_gbuf(n) + n->nout); }
static inline int ad_node_nedges(const ad_node *n) { return n->nedges; }
/* Bits set in m; inline (without -mpopcnt the builtin is a libgcc call). */
static inline int ad_popcount32(uint32_t m) {
    m = m - ((m >> 1) & 0x55555555u);
    m = (m & 0x33333333u) + ((m >> 2) & 0x33333333u);
    return (int)((((m + (m >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24);
}
/* Read by every node without an edge for a parameter; never written. */
extern const ad_edge ad_no_edge;
/* Parameter i's edge; the shared empty edge (read only) when it has none. */
static inline ad_edge *ad_node_edge(const ad_node *n, int i) {
    uint32_t bit = (uint32_t)1 << i;
    if (!(n->edge_mask & bit)) return (ad_edge *)&ad_no_edge;
    return ad_node_edges(n) + ad_popcount32(n->edge_mask & (bit - 1));
}
static inline ad_tensor **ad_node_outs_raw(const ad_node *n) {
    return (ad_tensor **)(ad_node_edges(n) + ad_node_nedges(n));
}
/* Saved output k, or NULL. */
static inline ad_tensor *ad_node_out(const ad_node *n, int k) {
    return n->saves_outs ? ad_node_outs_raw(n)[k] : NULL;
}
static inline uint32_t *ad_node_versions(const ad_node *n) {
    return (uint32_t *)(ad_node_outs_raw(n) + (n->saves_outs ? n->nout : 0));
}
static inline uint32_t *ad_node_out_versions(const ad_node *n) { return ad_node_versions(n) + n->nargs; }

void ad_node_decref(ad_state *S, ad_node *n);

/* Records a node for op 'op' called with bound arguments 'args' giving
 * outputs 'outs' (replaced by fresh headers when shared); sets grad_fn on them. */
int ad_autograd_record(ad_state *S, struct ad_opdef *op, const ad_value *args, int nout, ad_tensor **outs);
/* Whether any argument of op needs a gradient (grad mode on and an input requires grad). */
bool ad_autograd_needs_record(ad_state *S, const struct ad_opdef *op, const ad_value *args);

/* leaf.grad = gt, or leaf.grad + gt (gt's reference is taken), as backward() ends. */
int ad_autograd_accum_leaf(ad_state *S, ad_tensor *leaf, ad_tensor *gt, bool create);
/* Whether every graph node reachable from the roots satisfies 'known'
 * (compile() flattens a backward only within its trace). */
bool ad_autograd_graph_within(ad_state *S, ad_tensor *const *roots, int nroots, bool (*known)(const ad_state *, const void *));

#endif

/* autograd.h: graph nodes recorded by op calls and the reverse-mode engine
 * (backward, grad), plus forward-mode tangents (jvp). */
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

typedef struct ad_node {
    /* pointers first, then the ints: no padding (104 bytes; a node is recorded per op) */
    int64_t refcount;
    struct ad_opdef *op;    /* owned */
    ad_value *args;         /* the bound arguments (owned until released) */
    uint32_t *versions;     /* storage version of each tensor argument when saved */
    ad_tensor **outs;       /* saved outputs: aliases whose grad_fn points back weakly */
    uint32_t *out_versions;
    ad_edge *edges;         /* one per parameter */
    const char *chunk;      /* name of the script (owned by the chunk; may dangle after it) */
    /* scratch of the running backward */
    uint64_t epoch;
    ad_value *gbuf;         /* nout gradient buffers */
    int nargs;
    int nout;
    int line, col;          /* where the forward call was made (anomaly reports) */
    int deps;
    bool released;          /* saved values freed by a backward without retain_graph */
} ad_node;

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

extern const ad_builtin_def ad_bi_autograd_defs[];
extern const ad_builtin_def ad_bi_autograd_index_defs[];

#endif

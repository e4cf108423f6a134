/* autograd/run.h: one reverse pass of the engine (autograd/engine.c), as the
 * builtins backward() and grad() drive it (builtins/bi_autograd.c), and the
 * engine's helpers those builtins share. */
#ifndef AD_AUTOGRAD_RUN_H
#define AD_AUTOGRAD_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "autograd/engine.h"

typedef struct ad_leafgrad { ad_tensor *leaf; ad_value g; } ad_leafgrad;

/* A pass's state: zeroed, then S, the modes and (grad()) the inputs set by
 * the caller; the rest is the engine's scratch until ad_autograd_run_free. */
typedef struct ad_engine {
    ad_state *S;
    bool create_graph, retain;
    uint64_t epoch;
    ad_node **nodes; int n, cap;
    ad_node **ready; int nready, capready;
    ad_leafgrad *leaves; int nleaves, capleaves;   /* the leaves reached, with their gradients */
    int ninputs;
    ad_tensor **inputs;       /* grad(): the tensors asked for */
    ad_value *captured;       /* their gradients */
    bool only_inputs;         /* accumulate only into 'inputs' */
} ad_engine;

/* Runs backward from roots[i] seeded with seeds[i] (references borrowed). */
int ad_autograd_run(ad_engine *E, int nroots, ad_tensor **roots, ad_value *seeds);
/* Releases what a pass holds (the nodes, the leaves' gradients left in it). */
void ad_autograd_run_free(ad_engine *E);

/* Calls the global 'name' (an op of the library, loaded if need be). */
int ad_autograd_call_global(ad_state *S, const char *name, int argc, const ad_value *argv, ad_value *out);
/* Whether every index is basic (number, slice, none, ellipsis): a view
 * without repeated positions. */
bool ad_autograd_basic_index(int n, const ad_value *items);
/* view += value for a float view and a contiguous value of its shape and
 * dtype (the common gradient of a slice); false, untouched, otherwise. */
bool ad_autograd_add_into_view(ad_value view, ad_value value);

#endif

/* jit/replay_graph.h: a compiled program whose tensors live on the GPU,
 * captured once into a CUDA graph and replayed with one launch per call. */
#ifndef AD_REPLAY_GRAPH_H
#define AD_REPLAY_GRAPH_H

#include "state.h"
#include "tensor/tensor.h"
#include "value.h"

struct ad_trace;
struct ad_buf;
typedef struct ad_cgraph ad_cgraph;

/* A replay of program T on 'inputs' through its CUDA graph: captured on the
 * first such call (*g made then), launched on every later one. Returns -1
 * when the graph is not used (CPU inputs, a trace or jvp() around the call,
 * or a program that cannot be captured: the caller replays it through the
 * seam), else the call's status with the result in *out. */
int ad_cgraph_replay(ad_state *S, ad_cgraph **g, const struct ad_trace *T, ad_tensor *const *inputs, ad_value *out);
void ad_cgraph_free(ad_state *S, ad_cgraph *g);
/* The line print_compiled shows for it (nothing for NULL). */
void ad_cgraph_print(const ad_cgraph *g, struct ad_buf *b);

#endif

/* jit/compiled_vjp.h: a call of a compiled function on inputs that require grad
 * as one graph node whose VJP is a compiled program (vm/jit/compiled_vjp.c). */
#ifndef AD_COMPILED_VJP_H
#define AD_COMPILED_VJP_H

#include <stdbool.h>

#include "state.h"
#include "value.h"

struct ad_trace;
struct ad_buf;

/* The op of the one node, per signature (struct ad_opdef): its VJP formula
 * holds the joint program (forward, then the flattened backward). */
struct ad_opdef;

/* The tensors of value v (a tensor, or lists and tuples of them), in order; false past 'max'. */
bool ad_cvjp_collect(ad_value v, struct ad_tensor **outs, int *n, int max);

/* Whether a call on these inputs can take one node: grad mode on, outside
 * any trace, some input requires grad, none carries a forward tangent. */
bool ad_cvjp_wanted(const ad_state *S, ad_tensor *const *inputs, int ninputs);
/* Derives the joint program of forward program P on 'inputs' (a call with
 * its signature). Returns the op (held), or NULL with 'why' set when P
 * cannot take one node (effects, outputs that are inputs, a backward that
 * does not flatten); an error only for a lack of memory. */
int ad_cvjp_derive(ad_state *S, const struct ad_trace *P, ad_tensor *const *inputs, struct ad_opdef **op, char *why, size_t nwhy);
/* Runs the forward part without graph and records the one node. */
int ad_cvjp_call(ad_state *S, struct ad_opdef *op, ad_tensor *const *inputs, ad_value *out);
/* Appends the joint program, as print_compiled shows it. */
int ad_cvjp_print(ad_state *S, const struct ad_opdef *op, struct ad_buf *b);

#endif

/* autograd/inplace.h: in-place writes to tensors (x.add_(y), x += y, x[i] = v) with
 * PyTorch's autograd rules: leaf checks, version counters, graph rebasing. */
#ifndef AD_INPLACE_H
#define AD_INPLACE_H

#include <stdbool.h>

#include "value.h"
#include "tensor/tensor.h"

/* self = f(self, argv...) written into self's storage ('name' for messages);
 * *out is self. Errors: a leaf (or a view of one) that requires grad while
 * grad mode is on, an overlapping self, a result that self cannot hold. */
int ad_inplace_apply(ad_state *S, ad_value self, ad_value f, int argc, const ad_value *argv, const char *name,
                     ad_value *out);
/* The second half of ad_inplace_apply: r (the out-of-place op's result,
 * borrowed) written into self, the graph and tangents moved onto it. */
int ad_inplace_commit(ad_state *S, ad_value self, ad_value r, const char *name, ad_value *out);
/* The checks ad_inplace_apply makes on self before calling its op. */
int ad_inplace_check(ad_state *S, const ad_tensor *t);
/* Whether writing v into t must be recorded (grad mode on and t, its base or v requires grad). */
bool ad_inplace_needs_graph(ad_state *S, const ad_tensor *t, ad_value v);
/* t[idx...] = v: a raw write when no graph is involved, else index_put in place. */
int ad_inplace_setindex(ad_state *S, ad_tensor *t, int n, const ad_value *idx, ad_value v);
/* a OP= b for a tensor a: calls the in-place method ("add_", ...). */
int ad_inplace_binop(ad_state *S, const char *method, ad_value a, ad_value b, ad_value *out);

extern const ad_builtin_def ad_inplace_defs[];

#endif

/* jit/plan_ops.h: the records of a compiled program's plan that are not
 * element-wise (matrix products, views, sums over dims): which ones, and how they run. */
#ifndef AD_PLAN_KERNELS_H
#define AD_PLAN_KERNELS_H

#include <stdbool.h>

#include "jit/plan.h"
#include "trace/trace.h"

/* The kernel kind (ad_plkind) record n runs as, or 0 when it is none: its
 * forward the shipped builtin, float32/float64 operands of the output's
 * dtype on the CPU, constant arguments besides, and nothing for autograd to
 * record (nograd: the program runs under no_grad, as vm/jit/plan.c's classify). */
int ad_plk_classify(const ad_trace *T, const ad_tnode *n, bool nograd);
/* Fills 'k' for record n, which ad_plk_classify accepted as 'kind'. */
void ad_plk_describe(const ad_trace *T, const ad_tnode *n, int kind, ad_plkern *k);
static inline bool ad_plk_is_view(int kind) {
    return kind == AD_PLK_TRANSPOSE || kind == AD_PLK_RESHAPE || kind == AD_PLK_INDEX;
}
/* Runs kernel record 'k' on the replay's environment: no tensor is made but
 * the output's when it is a new tensor (read by the seam or returned). */
int ad_plk_run(ad_state *S, const ad_trace *T, ad_plan *P, const ad_plkern *k, ad_value *env);
const char *ad_plk_name(int kind);
/* The memory of view value v (AD_PL_KVIEW), worked out from its source as
 * the replay holds it now (for ad_plan_view_of). */
struct ad_fuview;
int ad_plk_view(ad_state *S, const ad_trace *T, ad_plan *P, ad_value *env, int v, struct ad_fuview *out);

#endif

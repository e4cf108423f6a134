/* jit/plan_into.h: copy_ records whose source a fused group writes straight into
 * the target (vm/jit/plan_into.c): which ones, and the replay's side of them. */
#ifndef AD_PLAN_INTO_H
#define AD_PLAN_INTO_H

#include <stdbool.h>

#include "jit/plan.h"
#include "trace/trace.h"

/* What the plan builder knows when it looks for them (vm/jit/plan.c). */
typedef struct ad_plinto_ctx {
    const int *cls;        /* per record: >= 0 an element-wise instruction; skip/view/kview below */
    int skip, view, kview; /* the classes of records that run nothing */
    const int *grp;        /* per record: its group, or -1 */
    const int *last;       /* per group: its last record */
    const int *space;      /* per group: the value whose shape it iterates over */
    const int *src, *ksrc; /* per value: the source an expand or a kernel view reads, or -1 */
} ad_plinto_ctx;

/* Fills P->intos with the copy_ records that groups can write (after the
 * groups are formed, before their values are placed); -1 on failure. */
int ad_plan_into_find(ad_state *S, const ad_trace *T, ad_plan *P, const ad_plinto_ctx *c);
/* The entry of P->intos for record 'node', or -1. */
int ad_plan_into_at(const ad_plan *P, int node);
/* Whether x (the target's value at this call) can be written by the group:
 * else the call replays through the seam. */
bool ad_plan_into_holds(const ad_plan *P, int q, ad_value x);
/* Where the group writes entry q's source: the target's memory, or a tensor
 * of its own when another operand of the group shares the target's storage. */
int ad_plan_into_dest(ad_state *S, ad_plan *P, const ad_plgroup *g, ad_value *env, int q, char **out);
/* The copy_ record itself: the copy from that tensor (when one was used),
 * the target's version bumped, its result and liveness as the seam's. */
int ad_plan_into_commit(ad_state *S, const ad_plan *P, const ad_tnode *n, int q, ad_value *env);
void ad_plan_into_free(ad_state *S, ad_plan *P);

#endif

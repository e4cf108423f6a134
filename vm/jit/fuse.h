/* jit/fuse.h: fused element-wise groups (vm/jit/plan.h) run block by block: the table
 * of element-wise ops the plan can run outside the op seam, and the runner. */
#ifndef AD_FUSE_H
#define AD_FUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "jit/plan.h"

typedef void (*ad_fu_un32)(float *, const float *, int64_t);
typedef void (*ad_fu_un64)(double *, const double *, int64_t);
typedef void (*ad_fu_bin32)(float *, const float *, int64_t, const float *, int64_t, int64_t);
typedef void (*ad_fu_bin64)(double *, const double *, int64_t, const double *, int64_t, int64_t);
typedef void (*ad_fu_cmp32)(bool *, const float *, int64_t, const float *, int64_t, int64_t);
typedef void (*ad_fu_cmp64)(bool *, const double *, int64_t, const double *, int64_t, int64_t);

/* How an op's instruction runs: one or two operands of the group's dtype;
 * a comparison (two operands, a bool result); where (a bool condition, two
 * operands of the group's dtype). */
typedef enum { AD_FU_UNARY, AD_FU_BINARY, AD_FU_COMPARE, AD_FU_WHERE } ad_fu_kind;

/* An op whose forward is the shipped kernel builtin 'name' ("add" for
 * kernel("ad_add")), with 'nin' tensor-or-number parameters and no others
 * ('nparams' in the op's definition, the rest left at their defaults). */
typedef struct ad_fuop {
    int id; /* ad_op_id (trace/op_ids.h) */
    const char *name;
    int nin;
    int nparams;
    ad_fu_un32 u32;
    ad_fu_un64 u64;
    ad_fu_bin32 b32;
    ad_fu_bin64 b64;
    ad_fu_kind kind;
    ad_fu_cmp32 c32;
    ad_fu_cmp64 c64;
} ad_fuop;

/* Index of the element-wise op of ad_op_id 'id' in the table, or -1. The
 * comparisons (records of `a < b`, vm/trace/trace.h's AD_TN_COMPARE) are
 * AD_OP_eq .. AD_OP_ge. */
int ad_fuse_find(int id);
const ad_fuop *ad_fuse_op(int i);

/* A tensor operand as a group reads it: data, geometry in elements. */
typedef struct ad_fuview {
    const char *data;
    int ndim;
    const int64_t *shape;
    const int64_t *strides;  /* NULL: contiguous; in elements of the load's dtype (bool: bytes) */
    int64_t numel;
} ad_fuview;

/* Runs group 'g' over its iteration space. views[i]: the operand of load i
 * (ignored for number loads); dst[i]: where store i writes (contiguous, the
 * value's numel); red: where the reduction's one element goes (or NULL).
 * 'scratch' holds g->nregs registers of AD_PLAN_BLOCK_BYTES. */
void ad_fuse_run(ad_plgroup *g, const int64_t *space, const ad_fuview *views, char *const *dst, char *red,
                 char *scratch);

#endif

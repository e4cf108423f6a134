/* autograd/desugar.h: checks and desugaring of `op` definitions. Each formula of
 * an op becomes an ordinary lambda whose parameters are the names in scope
 * for that kind of formula, so the rest of the compiler needs nothing new. */
#ifndef AD_COMPILE_OP_H
#define AD_COMPILE_OP_H

#include <stdbool.h>

#include "ast.h"
#include "autograd/op.h"

typedef struct ad_opinfo {
    int nparams;
    ad_node **params;               /* N_PARAM nodes (defaults in ->a) */
    int ndefaults;
    int sizes_param;                /* 1 + index of the parameter written '*NAME'; 0: none */
    int nout;
    const char **outnames;          /* NULL for a single unnamed output */
    uint8_t kind[AD_OP_MAX_PARAMS];
    const char *notimpl[AD_OP_MAX_PARAMS];
    bool out_diff[AD_OP_MAX_OUTS];
    bool has_formulas;
    ad_node *forward;               /* a lambda over the parameters, or a kernel(...) call */
    int nvjp;
    ad_node *vjp[AD_OP_MAX_PARAMS];
    int vjp_nnames[AD_OP_MAX_PARAMS];
    int vjp_params[AD_OP_MAX_PARAMS][AD_OP_MAX_PARAMS];
    ad_jvp_kind jvp_kind;
    int njvp;
    ad_node *jvp[AD_OP_MAX_OUTS];
    uint32_t vjp_reads[AD_OP_MAX_PARAMS]; /* per VJP formula, bit i: it reads parameter i's values (not only .shape ...) */
    uint32_t vjp_reads_result;      /* bit v: VJP formula v reads an output's values */
} ad_opinfo;

typedef struct ad_op_error {
    int line, col;
    char msg[256];
} ad_op_error;

/* Checks and desugars every op definition under 'root'; false with *err set on the first error. */
bool ad_desugar_ops(ad_arena *A, ad_node *root, ad_op_error *err);

#endif

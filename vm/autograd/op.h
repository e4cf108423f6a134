/* autograd/op.h: differentiable ops defined in the language (`op NAME(...) { ... }`):
 * the op record with its forward and formula closures, the op call that runs
 * the forward and records a graph node, and the forward-mode tangent rule. */
#ifndef AD_OP_H
#define AD_OP_H

#include <stdbool.h>

#include "autograd/formula_fast.h"
#include "value.h"
#include "vm.h"

typedef enum {
    AD_PARAM_VALUE,     /* a plain value (has a default and no entry) */
    AD_PARAM_DIFF,      /* a tensor input with a VJP formula */
    AD_PARAM_NONDIFF,   /* a tensor input marked non_differentiable */
    AD_PARAM_NOTIMPL,   /* a tensor input whose gradient is not implemented */
    AD_PARAM_TENSOR     /* a tensor input without any entry (no gradient) */
} ad_param_kind;

typedef enum { AD_JVP_NONE, AD_JVP_FORMULA, AD_JVP_ELEMENTWISE, AD_JVP_LINEAR } ad_jvp_kind;

#define AD_OP_MAX_PARAMS 32
#define AD_OP_MAX_OUTS 8

/* The desugarer names a formula parameter that the formula never reads
 * AD_FORMULA_UNUSED + its name ("~grads"), which no script can spell. */
#define AD_FORMULA_UNUSED "~"

/* The optional VJP formula arguments that cost an allocation per node, as
 * bits of ad_vjp_entry.uses: built only for formulas that read them. */
enum {
    AD_VJP_USES_GRADS = 1,          /* grad, grads or grad_NAME (zeros for outputs without a gradient) */
    AD_VJP_USES_GRADS_LIST = 2,     /* grads */
    AD_VJP_USES_RESULT_TUPLE = 4,   /* result of an op with several outputs */
    AD_VJP_USES_MASK = 8            /* grad_input_mask */
};

typedef struct ad_vjp_entry {
    int nnames;
    int params[AD_OP_MAX_PARAMS];   /* parameter index per name */
    ad_value fn;                    /* closure over the formula */
    unsigned uses;                  /* AD_VJP_USES_* bits */
    /* What the formula reads of the saved values (not metadata such as .shape):
     * backward version-checks only those of the formulas it runs. */
    uint32_t reads;                 /* bit i: parameter i */
    bool reads_result;              /* an output */
    ad_formula_fast fast;           /* how backward may run fn without a frame */
} ad_vjp_entry;

typedef struct ad_opdef {
    ad_obj hdr;
    char *name;                     /* the name it is called by (an alias's own, for its errors) */
    int id;                         /* ad_op_id of the library op it is (trace/op_ids.h), AD_OP__NONE for others */
    struct ad_opdef *target;        /* the op an alias stands for (held), whose name grad_fn shows; else NULL */
    int nparams;
    char **pnames;
    int ndefaults;                  /* the last ndefaults parameters have defaults */
    ad_value *defaults;
    int sizes_param;                /* 1 + index of the parameter written '*NAME' (sizes as separate numbers); 0: none */
    uint8_t kind[AD_OP_MAX_PARAMS]; /* ad_param_kind */
    char *notimpl[AD_OP_MAX_PARAMS];
    int nout;                       /* 1 for a single output */
    char **outnames;                /* nout names (NULL for a single unnamed output) */
    bool out_diff[AD_OP_MAX_OUTS];
    ad_value forward;               /* closure or builtin */
    bool has_formulas;              /* records one node; else differentiated through its body */
    bool reads_result;              /* some VJP formula reads an output (else a single output is not kept) */
    uint32_t reads_args;            /* bit i: some VJP formula reads parameter i's values */
    uint32_t mentions_args;         /* bit i: some VJP formula mentions parameter i (else a node keeps its shape only) */
    int nvjp;
    ad_vjp_entry *vjp;
    ad_jvp_kind jvp_kind;
    ad_value jvp[AD_OP_MAX_OUTS];   /* JVP formula per output (AD_JVP_FORMULA) */
    ad_value test_inputs;           /* a function giving sample arguments, or none */
    ad_list *result_names;          /* with output names: the named tuple's names (vm/value.h), else NULL */
} ad_opdef;

/* What the compiler knows of an op definition; NEWOP turns it plus the
 * closures computed at run time into an ad_opdef. */
typedef struct ad_optemplate {
    char *name;
    int nparams;
    char **pnames;
    int ndefaults;
    int sizes_param;
    uint8_t kind[AD_OP_MAX_PARAMS];
    char *notimpl[AD_OP_MAX_PARAMS];
    int nout;
    char **outnames;                /* NULL for a single unnamed output */
    bool out_diff[AD_OP_MAX_OUTS];
    bool has_formulas;
    uint32_t vjp_reads[AD_OP_MAX_PARAMS];  /* see ad_vjp_entry.reads */
    uint32_t vjp_reads_result;
    int nvjp;
    int vjp_nnames[AD_OP_MAX_PARAMS];
    int vjp_params[AD_OP_MAX_PARAMS][AD_OP_MAX_PARAMS];
    ad_jvp_kind jvp_kind;
    int njvp;                       /* JVP closures, one per output */
} ad_optemplate;

void ad_optemplate_free(ad_state *S, ad_optemplate *t);
/* Builds an op from a template and R[0] = forward, R[1..] = VJP closures,
 * then JVP closures, then defaults. */
int ad_op_new(ad_state *S, const ad_optemplate *t, const ad_value *regs, ad_value *out);
/* 'op NAME = OTHER' (grammar.y): an op that is 'op' under another name, sharing its
 * forward, formulas and defaults; its id and grad_fn name are op's, its errors say 'name'. */
int ad_op_alias(ad_state *S, ad_opdef *op, const char *name, ad_value *out);

/* The argument list every formula closure takes, in this order: the op's
 * parameters; grad, grads, result; result0..result{n-1}; the output names;
 * grad_<output name> for each; grad_input_mask. JVP formulas take: for each
 * parameter P, P_p and P_t when P is a tensor parameter, else P; then result
 * and the output names. */
int ad_op_formula_nargs(int nparams, int nout, bool named);

void ad_opdef_free(ad_state *S, ad_opdef *op);
/* The op's name as PyTorch names the function: without the '_dim'/'_all' of
 * the library's split forms (max_dim is max), an alias's target's name (concat is cat).
 * Writes it to buf; returns its length. */
size_t ad_op_public_name(const ad_opdef *op, char *buf, size_t size);
/* Calls the op with arguments (kw: names of the trailing nkw arguments). */
int ad_op_call(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out);
/* The same, past the tracing hook (compile() running a composite's body at the recording level). */
int ad_op_call_direct(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value *out);
/* The forward-mode tangents of 'out', made by op's call on these arguments:
 * each active jvp() level's formula run at the caller's level, so that a
 * trace records its op calls (vm/trace/trace.c). */
int ad_op_tangents(ad_state *S, ad_opdef *op, const ad_value *args, int nargs, const ad_list *kw, ad_value out);
/* Whether a jvp() level is active and one of the arguments (or a list item) carries a tangent. */
bool ad_op_any_tangent(ad_state *S, const ad_value *args, int nargs);
/* Looks up global ops used by operators after the library loads. */
int ad_ops_bind_operators(ad_state *S);
void ad_ops_unbind_operators(ad_state *S);

#endif

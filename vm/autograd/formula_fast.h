/* autograd/formula_fast.h: VJP formulas whose body is one call or one operator on
 * their parameters (most of the op library's: `grad * other`,
 * `tanh_backward(grad, result)`, `grad`, `index_backward(grad, self.shape,
 * self.dtype, idx)`), run by the backward engine without binding the
 * formula's arguments into a frame of registers. */
#ifndef AD_FORMULA_FAST_H
#define AD_FORMULA_FAST_H

#include <stdbool.h>
#include <stdint.h>

#include "value.h"
#include "vm.h"

#define AD_FF_MAX_ARGS AD_VM_FRAME_CALL_MAX_ARGS

typedef enum {
    AD_FF_NONE = 0,   /* run the closure */
    AD_FF_PARAM,      /* returns one of its parameters */
    AD_FF_ARITH,      /* one arithmetic operator on two parameters */
    AD_FF_CALL        /* one call of a global on parameters and their attributes */
} ad_ff_kind;

typedef struct ad_formula_fast {
    uint8_t kind;       /* ad_ff_kind */
    uint8_t opcode;     /* AD_FF_ARITH: the operator's opcode */
    bool shadowable;    /* AD_FF_CALL: read with GETGLOBALS (a script's own binding wins) */
    uint8_t nargs;
    int pc;             /* the instruction that may raise an error */
    int slot;           /* AD_FF_CALL: the callee's global slot */
    uint8_t args[AD_FF_MAX_ARGS]; /* the formula parameter each argument is (or is an attribute of) */
    bool has_attrs;     /* AD_FF_CALL: some argument is an attribute (self.shape) */
    int16_t attrs[AD_FF_MAX_ARGS];   /* its attribute (ad_attr), -1: the parameter itself */
    int attr_pcs[AD_FF_MAX_ARGS];    /* the GETATTR reading it */
} ad_formula_fast;

/* What the compiled formula p (taking nformula arguments) does, into *ff
 * (kind AD_FF_NONE when it is anything else). */
void ad_formula_fast_plan(const ad_proto *p, int nformula, ad_formula_fast *ff);

/* Runs formula fn on its arguments as its closure would, with the same
 * result and error (traceback included). *done is false when it must run
 * as a closure after all (a name not yet loaded, a trace being recorded). */
int ad_formula_fast_call(ad_state *S, const ad_formula_fast *ff, ad_value fn, const ad_value *args, bool *done,
                         ad_value *out);

#endif

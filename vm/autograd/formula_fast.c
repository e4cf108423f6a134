/* autograd/formula_fast.c: a formula that is one call or one operator on its
 * parameters, recognised in its bytecode when the op is built and run
 * directly by the backward engine (vm/autograd/engine.c). A formula frame costs
 * binding ~8 arguments into registers and clearing them again, for a body
 * of two to six instructions; that was a third of the engine's overhead
 * per formula on an LSTM's backward. */
#include "autograd/formula_fast.h"

#include "state.h"

static bool is_arith(ad_opcode op) {
    switch (op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_MATMUL: return true;
    default: return false;
    }
}

/* The register a value ends in is returned: RETURN r 1, directly or after MOVE d r. */
static bool returns(const ad_proto *p, int i, int r) {
    if (i < p->ncode && AD_OP(p->code[i]) == OP_MOVE && AD_B(p->code[i]) == r) { r = AD_A(p->code[i]); i++; }
    return i < p->ncode && AD_OP(p->code[i]) == OP_RETURN && AD_A(p->code[i]) == r && AD_B(p->code[i]) == 1;
}

void ad_formula_fast_plan(const ad_proto *p, int nformula, ad_formula_fast *ff) {
    ff->kind = AD_FF_NONE;
    int np = p->nparams;
    if (np != nformula || p->nupvals || p->ncode < 2) return;
    ad_instr i0 = p->code[0];
    ad_opcode o0 = AD_OP(i0);
    /* `grad`: MOVE d p; RETURN d 1 */
    if (o0 == OP_MOVE && AD_B(i0) < np && returns(p, 0, AD_B(i0))) {
        ff->kind = AD_FF_PARAM; ff->nargs = 1; ff->args[0] = (uint8_t)AD_B(i0);
        return;
    }
    /* `grad * other`: MUL d a b; RETURN d 1 */
    if (is_arith(o0) && AD_B(i0) < np && AD_C(i0) < np && returns(p, 1, AD_A(i0))) {
        ff->kind = AD_FF_ARITH; ff->opcode = (uint8_t)o0; ff->pc = 0; ff->nargs = 2;
        ff->args[0] = (uint8_t)AD_B(i0); ff->args[1] = (uint8_t)AD_C(i0);
        return;
    }
    /* `f(grad, self.shape)`: GETGLOBAL(S) r g; MOVE r+1 a or GETATTR r+1 a attr; ...; CALL r n 0;
     * [MOVE d r;] RETURN d 1 */
    if (o0 != OP_GETGLOBAL && o0 != OP_GETGLOBALS) return;
    int r = AD_A(i0), n = 0, i = 1;
    ff->has_attrs = false;
    while (i < p->ncode && (AD_OP(p->code[i]) == OP_MOVE || AD_OP(p->code[i]) == OP_GETATTR) &&
           AD_A(p->code[i]) == r + 1 + n) {
        if (AD_B(p->code[i]) >= np || n == AD_FF_MAX_ARGS) return;
        bool attr = AD_OP(p->code[i]) == OP_GETATTR;
        ff->attrs[n] = attr ? (int16_t)AD_C(p->code[i]) : -1;
        ff->attr_pcs[n] = i;
        ff->has_attrs |= attr;
        ff->args[n++] = (uint8_t)AD_B(p->code[i]);
        i++;
    }
    if (i >= p->ncode) return;
    ad_instr c = p->code[i];
    if (AD_OP(c) != OP_CALL || AD_A(c) != r || AD_B(c) != n || AD_C(c) != 0 || !returns(p, i + 1, r)) return;
    ff->kind = AD_FF_CALL; ff->shadowable = o0 == OP_GETGLOBALS; ff->slot = AD_BX(i0);
    ff->pc = i; ff->nargs = (uint8_t)n;
}

int ad_formula_fast_call(ad_state *S, const ad_formula_fast *ff, ad_value fn, const ad_value *args, bool *done,
                         ad_value *out) {
    *done = false;
    *out = ad_none();
    /* A trace guards the globals it reads: the closure's GETGLOBAL does that. */
    if (ff->kind == AD_FF_NONE || fn.t != AD_TFUNC || S->trace) return ADDSL_OK;
    ad_value argv[AD_FF_MAX_ARGS];
    for (int i = 0; i < ff->nargs; i++) argv[i] = args[ff->args[i]];
    ad_value callee = ad_none();
    if (ff->kind == AD_FF_PARAM) {
        *done = true;
        *out = argv[0];
        ad_value_incref(*out);
        return ADDSL_OK;
    }
    if (ff->kind == AD_FF_CALL) {
        /* As GETGLOBAL(S) reads it; a name not loaded yet goes the closure's way. */
        ad_globals *G = S->globals;
        int slot = ff->slot;
        if (ff->shadowable && G->shadow[slot] && G->defined[G->shadow[slot] - 1]) slot = G->shadow[slot] - 1;
        if (!G->defined[slot]) return ADDSL_OK;
        callee = G->values[slot];
        if (callee.t != AD_TBUILTIN && callee.t != AD_TOP && callee.t != AD_TFUNC) return ADDSL_OK;
    }
    *done = true;
    bool attrs = ff->kind == AD_FF_CALL && ff->has_attrs;
    return ad_vm_call_in_frame(S, fn.u.fn, ff->pc, ff->kind == AD_FF_CALL ? OP_CALL : ff->opcode, callee,
                               ff->nargs, argv, attrs ? ff->attrs : NULL, attrs ? ff->attr_pcs : NULL, out);
}

/* trace/simplify.h: algebraic simplification, a pass of compile() (vm/trace/trace.c):
 * identities left by the VJP formulas (x ** 1, x * 1, -(-x), a + -b), exact. */
#ifndef AD_SIMPLIFY_H
#define AD_SIMPLIFY_H

#include <stdbool.h>

#include "trace/trace.h"

/* The rules, as counted in ad_trace.simplified. */
enum {
    AD_SIMP_POW1,   /* pow(x, 1) -> x */
    AD_SIMP_POW2,   /* pow(x, 2) -> mul(x, x), floats */
    AD_SIMP_MUL1,   /* mul(x, 1), mul(1, x) -> x */
    AD_SIMP_DIV1,   /* div(x, 1) -> x */
    AD_SIMP_ADD0,   /* sub(x, 0), add(x, -0.0) -> x; add(x, 0) -> x for integers */
    AD_SIMP_NEGNEG, /* neg(neg(x)) -> x */
    AD_SIMP_NEGADD, /* add(a, neg(b)) -> sub(a, b), add(neg(a), b) -> sub(b, a), sub(a, neg(b)) -> add(a, b) */
    AD_SIMP_PADADD, /* add(a, index_add_at(zeros, i, v)) -> index_add_at(a, i, v), a never -0.0 (cat/split VJPs) */
    AD_SIMP_NRULES
};

struct ad_buf;

/* Runs the rules over the live records under no_grad, with the trace-time
 * values still held ('folded': per value, made by constant folding);
 * replaced records are marked dead, their readers read the replacement.
 * Returns how many records changed (dead code is left to the caller). */
int ad_simplify(ad_state *S, ad_trace *T, const bool *folded);
/* The "simplified N records: ..." line of the printed program, or nothing. */
void ad_simplify_print(const ad_trace *T, struct ad_buf *b);

#endif

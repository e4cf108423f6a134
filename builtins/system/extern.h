/* extern.h: script access to the kernel registry: extern_fn, kernel() and
 * call_kernel(), and the call of one kernel with script values as arguments. */
#ifndef AD_EXTERN_H
#define AD_EXTERN_H

#include "../../vm/value.h"

/* extern_fn(lib, name, sig), kernel(name), call_kernel(name, ...). Registered
 * after ad_bi_autograd_defs so its 'kernel' row replaces the older one. */
extern const ad_builtin_def ad_bi_extern_defs[];

/* Calls kernel 'kid' with script values: numbers for i32/i64/f32/f64, tensors
 * (their contiguous data), strings or none for p. With two arguments fewer than
 * a "v(p,p,...,i64)" kernel takes, the kernel runs out of place: a new output
 * shaped like the first tensor goes first and the element count last, and the
 * output is the result. 'fname' names the function in errors. */
int ad_kernel_invoke(ad_state *S, int kid, const char *fname, const ad_value *argv, int argc, ad_value *out);

/* The script value calling kernel 'kid' (a new reference), made on first use. */
int ad_kernel_callable(ad_state *S, int kid, ad_value *out);

#endif

/* jit/compiled_jvp.h: a call of a compiled function on inputs that carry
 * forward-mode tangents runs a compiled tangent program (vm/jit/compiled_jvp.c). */
#ifndef AD_COMPILED_JVP_H
#define AD_COMPILED_JVP_H

#include <stdbool.h>
#include <stddef.h>

#include "state.h"
#include "value.h"

struct ad_trace;
struct ad_buf;

/* The tangent program of one signature: the forward program replayed on
 * dual inputs under a trace, its JVP formulas flattened into records. */
typedef struct ad_cjvp ad_cjvp;

/* Whether a call on these inputs can run the tangent program: outside any
 * trace, exactly one jvp() level active, some input carrying its tangent,
 * and no reverse mode to serve (grad mode off, or nothing requires grad). */
bool ad_cjvp_wanted(const ad_state *S, ad_tensor *const *inputs, int ninputs);
/* Derives the tangent program of forward program P for a call on 'inputs'.
 * *out is NULL with 'why' set when P cannot have one (outputs that are not
 * computed, a formula that reads a value); an error only for a lack of memory. */
int ad_cjvp_derive(ad_state *S, const struct ad_trace *P, ad_tensor *const *inputs, ad_cjvp **out, char *why,
                   size_t nwhy);
/* Runs it: f's result, its tensors carrying their tangents at the active
 * level. Returns -1 (nothing done) when the inputs' tangents are not as at
 * the derivation (another input carries one, another dtype or shape). */
int ad_cjvp_call(ad_state *S, const ad_cjvp *J, ad_tensor *const *inputs, ad_value *out);
void ad_cjvp_free(ad_state *S, ad_cjvp *J);
/* Appends the tangent program, as print_compiled shows it. */
int ad_cjvp_print(ad_state *S, const ad_cjvp *J, struct ad_buf *b);

#endif

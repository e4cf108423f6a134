/* repl/suggest.h: "did you mean" for misspelt names: a weighted edit distance and
 * the nearest of a set of candidates (locals, globals, attributes, parameters). */
#ifndef AD_SUGGEST_H
#define AD_SUGGEST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct addsl_state ad_state;

/* The running nearest candidate to 'name'. Candidates are borrowed: 'best'
 * points at the string last passed to ad_suggest_add that won. */
typedef struct ad_suggest {
    const char *name;
    const char *best; /* NULL while no candidate is close enough */
    int cost;         /* best's distance (weighted units, see repl/suggest.c) */
} ad_suggest;

void ad_suggest_init(ad_suggest *s, const char *name);
/* Keeps 'cand' when it is closer than the best so far (ties keep the earlier). */
void ad_suggest_add(ad_suggest *s, const char *cand);
/* Feeds the better of 'other' into s (used to merge a compile-time local guess). */
void ad_suggest_merge(ad_suggest *s, const ad_suggest *other);
/* Weighted distance of a and b; -1 when either is too long to compare. */
int ad_suggest_distance(const char *a, const char *b);

/* Feeds the state's global names: the script's first, then the library's;
 * with 'callable_only', only functions, builtins and ops. */
void ad_suggest_globals(ad_suggest *s, ad_state *S, bool callable_only);
/* Whether global 'name' is bound (or will be: declared, or in the library). */
bool ad_suggest_global_exists(ad_state *S, const char *name);
/* Whether global 'name' holds (or, for a lazily loaded library name, will hold)
 * something that can be called. */
bool ad_suggest_global_callable(ad_state *S, const char *name);

/* Appends "; did you mean 'X'?" to the message in buf (size n) when s has a candidate. */
void ad_suggest_append(const ad_suggest *s, char *buf, size_t n);

/* The unknown-keyword error of a call, with the nearest parameter name:
 * "f() got an unexpected keyword argument 'dimm'; did you mean 'dim'?". */
int ad_error_unknown_kw(ad_state *S, const char *fname, const char *kw, const char *const *pnames, int np);

#endif

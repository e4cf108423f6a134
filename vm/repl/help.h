/* repl/help.h: help(), dir() and quit() for the REPL, the echo that keeps '_', and the name
 * lists (names in scope, attributes and methods of a value) that completion shares. */
#ifndef AD_HELP_H
#define AD_HELP_H

#include <stdbool.h>

#include "value.h"

/* A growing list of borrowed names (valid while what holds them lives). */
typedef struct ad_names {
    ad_state *S;
    const char **v;
    int n, cap;
    bool failed;
} ad_names;

void ad_names_init(ad_names *l, ad_state *S);
void ad_names_free(ad_names *l);
int ad_names_add(ad_names *l, const char *name);
void ad_names_sort(ad_names *l); /* sorted, duplicates dropped */
/* A list of strings of the names (a new reference in *out). */
int ad_names_to_list(ad_state *S, const ad_names *l, ad_value *out);

/* The library's helpers and generated names no script calls (rs_*, ew_*,
 * optim_*, *_backward, names with \001 or '$', ...): dir() and all_ops() hide them. */
bool ad_help_internal(const char *name);
/* Public global names in scope, sorted; with the language's keywords when asked. */
int ad_help_scope(ad_state *S, ad_names *l, bool with_keywords);
/* Attributes and methods of 'v', sorted (dir(v)). */
int ad_help_attrs(ad_state *S, ad_value v, ad_names *l);
/* Keyword parameter names of a callable (none added for other values). */
int ad_help_params(ad_value fn, ad_names *l);

/* The REPL's echo of an expression statement's value (not none): prints it
 * and binds it to '_'; a bare exit or quit says how to call it. */
int ad_repl_echo(ad_state *S, ad_value v);

extern const ad_builtin_def ad_help_defs[];

#endif

/* fstring.h: f"..." literals, split at parse time into text and fields.
 * Each field is parsed as an expression of its own and becomes a call to the hidden '$format'. */
#ifndef AD_FSTRING_H
#define AD_FSTRING_H

#include "ast.h"

/* The tree for the FSTRING token t: a string literal, one '$format(expr, spec,
 * conv)' call, or '$concat(parts...)'. On an error in the literal or in a field,
 * sets P->error with the file's line:col and returns a placeholder node. */
ad_node *ad_fstring_parse(ad_parse *P, const ad_token *t);

#endif

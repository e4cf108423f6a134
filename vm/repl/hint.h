/* repl/hint.h: advice on Python and PyTorch habits in error messages: undefined
 * names ('True', 'torch.sum'), unknown attributes, and syntax ('def', ':' before a block). */
#ifndef AD_HINT_H
#define AD_HINT_H

#include <stdbool.h>
#include <stddef.h>

#include "ast.h"
#include "repl/suggest.h"

/* Every message is "PROBLEM" or "PROBLEM; ADVICE", written into out (size n). */

/* "name 'x' is not defined" (or "unknown method 'x'" for x.f()) with a habit hint or
 * the nearest name. 'src' (may be NULL) is the chunk's text, read around line:col for
 * what follows the name; 'near' (may be NULL) is the nearest local the compiler saw. */
void ad_hint_undefined(ad_state *S, const char *src, size_t len, int line, int col,
                       const char *name, bool method, const ad_suggest *near, char *out, size_t n);
/* When 'name' at line:col is a 'torch.' / 'np.' / 'math.' ... prefix, writes the
 * undefined-name message that says which name to use instead and returns true. */
bool ad_hint_namespace(ad_state *S, const char *src, size_t len, int line, int col,
                       const char *name, char *out, size_t n);
/* "unknown attribute 'x'" with the nearest attribute, or the method call when a
 * callable 'x' exists. */
void ad_hint_attribute(ad_state *S, const char *name, char *out, size_t n);

/* The parse driver's last tokens, to explain a syntax error by what came before. */
typedef struct ad_hint_ctx {
    ad_token p1, p2;   /* the last two tokens the parser accepted */
    int ntok;          /* how many of p1, p2 are set (up to 2) */
    bool p1_starts;    /* p1 began a statement */
    bool at_start;     /* the next token begins a statement */
    ad_token kw;       /* the statement's last block keyword (if, while, for, else, fn) */
    bool have_kw;
} ad_hint_ctx;

void ad_hint_init(ad_hint_ctx *h);
/* Call after the parser accepted t. */
void ad_hint_track(ad_hint_ctx *h, const ad_token *t);
/* Call before pushing t: catches 'x++' (which would parse as x + +NEXT) and
 * sets P's error; returns true if it did. */
bool ad_hint_before(const ad_hint_ctx *h, const ad_token *t, ad_parse *P);
/* Call after the parser reported an error at t: rewrites P's message (and
 * position, to the habit's token) when a Python habit explains it. */
void ad_hint_syntax(const ad_hint_ctx *h, const ad_token *t, ad_parse *P);
/* Call after a lexical error at t: '&&', '||' and '!' get their keyword. */
void ad_hint_lex(const ad_token *t, const char *lim, ad_parse *P);

#endif

/* lexer.h: the re2c scanner's interface: tokens with file:line:col.
 * Newlines inside ( ), [ ] and a dict's { } are dropped here, so the grammar never sees them. */
#ifndef AD_LEXER_H
#define AD_LEXER_H

#include <stdbool.h>
#include <stddef.h>

#define AD_LEX_MAX_NEST 256

typedef struct ad_token {
    int type;          /* a TK_ code from grammar.h; 0 at end of input */
    const char *start; /* into the source text */
    int len;
    int line, col;     /* 1-based */
    double num;        /* TK_NUMBER */
    bool is_int;       /* TK_NUMBER written without fraction or exponent */
} ad_token;

typedef struct ad_lexer {
    const char *src, *cur, *lim, *mar, *tok;
    const char *line_start;
    int line;
    char nest[AD_LEX_MAX_NEST]; /* open brackets: '(', '[', '{' (a block), 'd' (a dict) */
    int depth;
    int last_type;     /* to drop redundant newlines */
    const char *error; /* message of a lexical error, or NULL */
    bool mismatched;   /* a closing bracket did not match the innermost open one */
} ad_lexer;

void ad_lex_init(ad_lexer *lx, const char *src, size_t len);
/* Next token; on a lexical error returns TK_ERROR-like code -1 with lx->error set. */
int ad_lex_next(ad_lexer *lx, ad_token *t);

#endif

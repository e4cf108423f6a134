/* lexer.re: the re2c scanner for addsl source text.
 * Tracks bracket nesting so newlines inside ( ), [ ] and dict braces are not statement ends. */
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "vm/lexer.h"

void ad_lex_init(ad_lexer *lx, const char *src, size_t len) {
    memset(lx, 0, sizeof *lx);
    lx->src = lx->cur = lx->line_start = src;
    lx->lim = src + len;
    lx->line = 1;
    lx->last_type = TK_NEWLINE;
}

static int newline_ignored(const ad_lexer *lx) {
    if (lx->depth > 0 && lx->nest[lx->depth - 1] != '{') return 1;
    /* A line ending in an operator, '=>', '=' or ',' continues on the next line. */
    switch (lx->last_type) {
    case TK_ARROW: case TK_RARROW: case TK_PLUS: case TK_MINUS: case TK_STAR: case TK_SLASH:
    case TK_PERCENT: case TK_AT: case TK_POW: case TK_EQ: case TK_NE: case TK_LT: case TK_LE:
    case TK_GT: case TK_GE: case TK_AND: case TK_OR: case TK_NOT: case TK_ASSIGN: case TK_ADDEQ:
    case TK_SUBEQ: case TK_MULEQ: case TK_DIVEQ: case TK_DSLASH: case TK_DSLASHEQ: case TK_MODEQ: case TK_POWEQ:
    case TK_COMMA: case TK_DOT:
        return 1;
    default:
        return 0;
    }
}

static int lex_fail(ad_lexer *lx, ad_token *t, const char *msg) {
    lx->error = msg;
    t->type = -1;
    return -1;
}

static int open_bracket(ad_lexer *lx, ad_token *t, char c, int type) {
    if (lx->depth >= AD_LEX_MAX_NEST) return lex_fail(lx, t, "brackets nested too deeply");
    lx->nest[lx->depth++] = c;
    return type;
}

/* A '{' where an expression is expected (after '=', '(', ',', ':', an
 * operator, 'return', 'in', ...) opens a dict; anywhere else (a statement's
 * start, after 'if x', 'else', ')') it opens a block. */
static int open_brace(ad_lexer *lx, ad_token *t) {
    switch (lx->last_type) {
    case TK_ASSIGN: case TK_ADDEQ: case TK_SUBEQ: case TK_MULEQ: case TK_DIVEQ: case TK_DSLASHEQ:
    case TK_MODEQ: case TK_POWEQ: case TK_DSLASH: case TK_LPAREN: case TK_LBRACKET: case TK_LDICT: case TK_COMMA: case TK_COLON:
    case TK_ARROW: case TK_RETURN: case TK_IN: case TK_IF: case TK_WHILE: case TK_PLUS: case TK_MINUS: case TK_STAR:
    case TK_SLASH: case TK_PERCENT: case TK_AT: case TK_POW: case TK_EQ: case TK_NE:
    case TK_LT: case TK_LE: case TK_GT: case TK_GE: case TK_AND: case TK_OR: case TK_NOT:
        return open_bracket(lx, t, 'd', TK_LDICT);
    default:
        return open_bracket(lx, t, '{', TK_LBRACE);
    }
}

/* A closer that does not match the innermost opener is marked, so the REPL
 * reports it at once instead of waiting for more lines (the parser raises it). */
static int close_bracket(ad_lexer *lx, int type) {
    char want = type == TK_RPAREN ? '(' : type == TK_RBRACKET ? '[' : '{';
    char open = lx->depth > 0 ? lx->nest[lx->depth - 1] : 0;
    if (open != want && !(want == '{' && open == 'd')) lx->mismatched = true;
    if (lx->depth > 0) lx->depth--;
    return type;
}

/*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:define:YYCURSOR = "lx->cur";
    re2c:define:YYLIMIT = "lx->lim";
    re2c:define:YYMARKER = "lx->mar";
    re2c:yyfill:enable = 0;
    re2c:eof = 0;

    digits = [0-9]+;
    ident = [a-zA-Z_][a-zA-Z_0-9]*;
    exp = [eE] [+-]? digits;
*/

static int scan(ad_lexer *lx, ad_token *t) {
    for (;;) {
        lx->tok = lx->cur;
        t->start = lx->cur;
        t->line = lx->line;
        t->col = (int)(lx->cur - lx->line_start) + 1;
    /*!re2c
        $ { return 0; }
        [ \t\r]+ { continue; }
        "#" [^\n\x00]* { continue; }
        "\\" [ \t\r]* "\n" { lx->line++; lx->line_start = lx->cur; continue; }
        "\n" {
            lx->line++; lx->line_start = lx->cur;
            if (newline_ignored(lx)) continue;
            return TK_NEWLINE;
        }
        digits { t->is_int = 1; t->num = strtod(lx->tok, NULL); return TK_NUMBER; }
        (digits "." [0-9]* | "." digits) exp? | digits exp {
            t->is_int = 0; t->num = strtod(lx->tok, NULL); return TK_NUMBER;
        }
        ["] ([^"\\\n\x00] | "\\" [^\n\x00])* ["] { return TK_STRING; }
        [fF] ["] ([^"\\\n\x00] | "\\" [^\n\x00])* ["] { return TK_FSTRING; }
        [fF] ["] { return lex_fail(lx, t, "unterminated string"); }
        ["] { return lex_fail(lx, t, "unterminated string"); }
        "let" { return TK_LET; }
        "fn" { return TK_FN; }
        "return" { return TK_RETURN; }
        "if" { return TK_IF; }
        "else" { return TK_ELSE; }
        "while" { return TK_WHILE; }
        "for" { return TK_FOR; }
        "in" { return TK_IN; }
        "break" { return TK_BREAK; }
        "continue" { return TK_CONTINUE; }
        "no_grad" { return TK_NOGRAD; }
        "detect_anomaly" { return TK_ANOMALY; }
        "op" { return TK_OP; }
        "extern" { return TK_EXTERN; }
        "import" { return TK_IMPORT; }
        "true" { return TK_TRUE; }
        "false" { return TK_FALSE; }
        "none" { return TK_NONE; }
        "and" { return TK_AND; }
        "or" { return TK_OR; }
        "not" { return TK_NOT; }
        ident { return TK_NAME; }
        "(" { return open_bracket(lx, t, '(', TK_LPAREN); }
        ")" { return close_bracket(lx, TK_RPAREN); }
        "[" { return open_bracket(lx, t, '[', TK_LBRACKET); }
        "]" { return close_bracket(lx, TK_RBRACKET); }
        "{" { return open_brace(lx, t); }
        "}" { return close_bracket(lx, TK_RBRACE); }
        "," { return TK_COMMA; }
        ";" { return TK_SEMI; }
        ":" { return TK_COLON; }
        "..." { return TK_ELLIPSIS; }
        "." { return TK_DOT; }
        "=>" { return TK_ARROW; }
        "->" { return TK_RARROW; }
        "==" { return TK_EQ; }
        "!=" { return TK_NE; }
        "<=" { return TK_LE; }
        ">=" { return TK_GE; }
        "<" { return TK_LT; }
        ">" { return TK_GT; }
        "=" { return TK_ASSIGN; }
        "+=" { return TK_ADDEQ; }
        "-=" { return TK_SUBEQ; }
        "*=" { return TK_MULEQ; }
        "/=" { return TK_DIVEQ; }
        "//=" { return TK_DSLASHEQ; }
        "%=" { return TK_MODEQ; }
        "**=" { return TK_POWEQ; }
        "//" { return TK_DSLASH; }
        "+" { return TK_PLUS; }
        "-" { return TK_MINUS; }
        "**" { return TK_POW; }
        "*" { return TK_STAR; }
        "/" { return TK_SLASH; }
        "%" { return TK_PERCENT; }
        "@" { return TK_AT; }
        * { return lex_fail(lx, t, "unexpected character"); }
    */
    }
}

int ad_lex_next(ad_lexer *lx, ad_token *t) {
    for (;;) {
        t->is_int = 0;
        t->num = 0;
        int type = scan(lx, t);
        t->len = (int)(lx->cur - t->start);
        t->type = type;
        /* Collapse runs of newlines: the grammar only needs one separator. */
        if (type == TK_NEWLINE && lx->last_type == TK_NEWLINE) continue;
        if (type == TK_NEWLINE && lx->last_type == TK_RBRACE) {
            /* "}" newline "else": the else continues the if statement. */
            ad_lexer peek = *lx;
            ad_token nt;
            int next;
            do { next = scan(&peek, &nt); } while (next == TK_NEWLINE);
            if (next == TK_ELSE) { *lx = peek; *t = nt; t->len = (int)(lx->cur - t->start); t->type = next; lx->last_type = next; return next; }
        }
        if (type > 0) lx->last_type = type;
        return type;
    }
}

/* ast.h: syntax tree nodes built by the parser, owned by one arena per compile.
 * Nothing in the tree is freed alone, so a syntax error cannot leak. */
#ifndef AD_AST_H
#define AD_AST_H

#include <stdbool.h>
#include <stddef.h>

#include "lexer.h"

typedef struct addsl_state ad_state;

typedef enum {
    /* expressions */
    N_NUM, N_STR, N_TRUE, N_FALSE, N_NONE, N_NAME, N_LIST, N_TUPLE,
    N_BINOP, N_UNOP, N_AND, N_OR, N_NOT, N_CALL, N_METHOD, N_INDEX,
    N_SLICE, N_ELLIPSIS, N_ATTR, N_LAMBDA, N_KWARG, N_PARAM,
    N_DICT, N_DICTENTRY, N_LISTCOMP, N_DICTCOMP, N_COMPFOR, N_COMPIF,
    /* statements */
    N_LET, N_LETDESTR, N_ASSIGN, N_FNDEF, N_RETURN, N_IF, N_WHILE, N_FOR,
    N_BREAK, N_CONTINUE, N_NOGRAD, N_BLOCK, N_EXPRSTMT,
    N_OPDEF, N_OPENTRY, N_ANOMALY, N_IMPORT
} ad_nkind;

typedef struct ad_nlist {
    int n, cap;
    struct ad_node **items;
} ad_nlist;

typedef struct ad_node {
    ad_nkind kind;
    int line, col;
    int op;                 /* N_BINOP/N_UNOP/N_ASSIGN: a TK_ code (0: plain '='); N_PARAM: TK_STAR for '*NAME' */
    struct ad_node *a, *b, *c;
    ad_nlist *list;
    ad_nlist *list2;        /* N_OPDEF: output names; N_OPENTRY: unused */
    ad_nlist *list3;        /* N_OPDEF: entries */
    const char *str;        /* names (NUL-terminated copy) and string contents (unescaped) */
    size_t len;
    double num;
    bool is_int;
    /* filled by the resolver */
    void *info;             /* N_OPDEF: its ad_opinfo (vm/autograd/desugar.c) */
    bool captured;          /* a declaration captured by an inner function */
    int slot;
} ad_node;


typedef struct ad_arena_block {
    struct ad_arena_block *next;
    size_t used, cap;
    char data[];
} ad_arena_block;

typedef struct ad_arena {
    ad_state *S;
    ad_arena_block *head;
    bool failed;
    ad_node dummy; /* handed out after an allocation failure; the parse then fails */
} ad_arena;

void ad_arena_init(ad_arena *a, ad_state *S);
void ad_arena_free(ad_arena *a);
void *ad_arena_alloc(ad_arena *a, size_t n);

ad_node *ad_node_new(ad_arena *a, ad_nkind kind, const ad_token *at);
ad_nlist *ad_nlist_new(ad_arena *a);
ad_nlist *ad_nlist_add(ad_arena *a, ad_nlist *l, ad_node *n);
/* Copies a NAME token's text; unescapes a STRING token's contents. */
void ad_node_set_name(ad_arena *a, ad_node *n, const ad_token *t);
void ad_node_set_string(ad_arena *a, ad_node *n, const ad_token *t);

/* What the parser fills in; one per parse. */
typedef struct ad_parse {
    ad_arena *arena;
    ad_node *root;          /* N_BLOCK of top-level statements */
    bool error;
    int err_line, err_col;
    char err_msg[256];
} ad_parse;

/* Parses 'src' into P->root; returns false with P->err_* set on a syntax error. */
bool ad_parse_source(ad_parse *P, const char *src, size_t len);
/* Parses a piece of a larger source (an f-string field) whose first byte sits on
 * 'line', a line that starts at 'line_start', so positions are the file's. */
bool ad_parse_fragment(ad_parse *P, const char *src, size_t len, int line, const char *line_start);

#endif

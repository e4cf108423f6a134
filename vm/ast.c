/* ast.c: arena allocation and construction of syntax tree nodes, and the
 * driver that pushes tokens from the lexer into the Lemon parser. */
#include "ast.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "repl/hint.h"
#include "state.h"

void ad_arena_init(ad_arena *a, ad_state *S) { a->S = S; a->head = NULL; a->failed = false; }

void ad_arena_free(ad_arena *a) {
    ad_arena_block *b = a->head;
    while (b) { ad_arena_block *n = b->next; ad_free(a->S, b); b = n; }
    a->head = NULL;
}

void *ad_arena_alloc(ad_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->used + n > a->head->cap) {
        size_t cap = n > 16384 ? n : 16384;
        ad_arena_block *b = ad_malloc(a->S, sizeof *b + cap);
        if (!b) { a->failed = true; return NULL; }
        b->next = a->head; b->used = 0; b->cap = cap;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    memset(p, 0, n);
    return p;
}

ad_node *ad_node_new(ad_arena *a, ad_nkind kind, const ad_token *at) {
    ad_node *n = ad_arena_alloc(a, sizeof *n);
    if (!n) { memset(&a->dummy, 0, sizeof a->dummy); return &a->dummy; }
    n->kind = kind;
    if (at) { n->line = at->line; n->col = at->col; }
    n->slot = -1;
    return n;
}

ad_nlist *ad_nlist_new(ad_arena *a) {
    ad_nlist *l = ad_arena_alloc(a, sizeof *l);
    return l;
}

ad_nlist *ad_nlist_add(ad_arena *a, ad_nlist *l, ad_node *n) {
    if (!l) l = ad_nlist_new(a);
    if (!l) return NULL;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        ad_node **items = ad_arena_alloc(a, (size_t)cap * sizeof *items);
        if (!items) return l;
        if (l->n) memcpy(items, l->items, (size_t)l->n * sizeof *items);
        l->items = items; l->cap = cap;
    }
    l->items[l->n++] = n;
    return l;
}

void ad_node_set_name(ad_arena *a, ad_node *n, const ad_token *t) {
    char *s = ad_arena_alloc(a, (size_t)t->len + 1);
    if (!s || n == &a->dummy) return;
    memcpy(s, t->start, (size_t)t->len);
    s[t->len] = '\0';
    n->str = s; n->len = (size_t)t->len;
}

void ad_node_set_string(ad_arena *a, ad_node *n, const ad_token *t) {
    char *s = ad_arena_alloc(a, (size_t)t->len + 1);
    if (!s || n == &a->dummy) return;
    size_t k = 0;
    for (int i = 1; i < t->len - 1; i++) {
        char c = t->start[i];
        if (c == '\\' && i + 1 < t->len - 1) {
            char e = t->start[++i];
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case '0': c = '\0'; break;
            default: c = e; break; /* \" \\ and unknown escapes keep the character */
            }
        }
        s[k++] = c;
    }
    s[k] = '\0';
    n->str = s; n->len = k;
}

/* Lemon's generated entry points (grammar.c); the parser's fixed-size stack
 * lives in memory from the state's allocator. */
void ad_parserInit(void *p, ad_parse *P);
void ad_parserFinalize(void *p);
void ad_parser(void *p, int major, ad_token minor);
size_t ad_parser_size(void);

static const char *token_text(const ad_token *t, char *buf, size_t n) {
    if (t->type == 0) return "end of input";
    if (t->type == TK_NEWLINE) return "newline";
    int len = t->len > 40 ? 40 : t->len;
    snprintf(buf, n, "'%.*s'", len, t->start);
    return buf;
}

static bool parse_tokens(ad_parse *P, ad_lexer *lx);

bool ad_parse_source(ad_parse *P, const char *src, size_t len) {
    ad_lexer lx;
    ad_lex_init(&lx, src, len);
    return parse_tokens(P, &lx);
}

bool ad_parse_fragment(ad_parse *P, const char *src, size_t len, int line, const char *line_start) {
    /* The scanner stops at a NUL sentinel, so it reads a NUL-terminated copy
     * of the line up to the fragment's end; columns count from the copy's start. */
    size_t off = (size_t)(src - line_start);
    char *copy = ad_arena_alloc(P->arena, off + len + 1);
    if (!copy) { P->error = true; snprintf(P->err_msg, sizeof P->err_msg, "out of memory"); return false; }
    memcpy(copy, line_start, off + len);
    copy[off + len] = '\0';
    ad_lexer lx;
    ad_lex_init(&lx, copy + off, len);
    lx.line = line;
    lx.line_start = copy;
    return parse_tokens(P, &lx);
}

static bool parse_tokens(ad_parse *P, ad_lexer *lexer) {
    ad_lexer lx = *lexer;
    void *parser = ad_malloc(P->arena->S, ad_parser_size());
    if (!parser) { P->error = true; snprintf(P->err_msg, sizeof P->err_msg, "out of memory"); return false; }
    ad_parserInit(parser, P);
    ad_token t;
    ad_hint_ctx hint;
    ad_hint_init(&hint);
    for (;;) {
        int type = ad_lex_next(&lx, &t);
        if (type < 0) {
            P->error = true; P->err_line = t.line; P->err_col = t.col;
            snprintf(P->err_msg, sizeof P->err_msg, "%s", lx.error);
            ad_hint_lex(&t, lx.lim, P);
            break;
        }
        if (ad_hint_before(&hint, &t, P)) break;
        if (type == 0) {
            /* A final separator lets the last statement end without a newline. */
            ad_token nl = t; nl.type = TK_NEWLINE;
            if (lx.last_type != TK_NEWLINE && lx.depth == 0) ad_parser(parser, TK_NEWLINE, nl);
            if (!P->error) ad_parser(parser, 0, t);
            if (P->error && P->err_msg[0] == '\0') {
                char buf[64];
                snprintf(P->err_msg, sizeof P->err_msg, "unexpected %s", token_text(&t, buf, sizeof buf));
            }
            if (P->error) ad_hint_syntax(&hint, &t, P);
            break;
        }
        ad_parser(parser, type, t);
        /* the stack overflow handler sees no token: the error is at this one */
        if (P->error && P->err_line == 0) { P->err_line = t.line; P->err_col = t.col; }
        if (P->error) { ad_hint_syntax(&hint, &t, P); break; }
        ad_hint_track(&hint, &t);
    }
    ad_parserFinalize(parser);
    ad_free(P->arena->S, parser);
    if (P->arena->failed && !P->error) {
        P->error = true; snprintf(P->err_msg, sizeof P->err_msg, "out of memory");
    }
    return !P->error;
}

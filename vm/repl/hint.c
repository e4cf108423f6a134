/* repl/hint.c: advice on Python and PyTorch habits in error messages: undefined
 * names ('True', 'torch.sum'), unknown attributes, and syntax ('def', ':' before a block). */
#include "repl/hint.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "grammar.h"
#include "state.h"
#include "vm.h"

static void append(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *out, size_t n, const char *fmt, ...) {
    size_t len = strlen(out);
    if (len + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + len, n - len, fmt, ap);
    va_end(ap);
}

/* ---- source text around a name ---- */

/* The byte at line:col (1-based) of src, or NULL when outside it. */
static const char *src_at(const char *src, size_t len, int line, int col) {
    if (!src || line < 1 || col < 1) return NULL;
    const char *p = src, *end = src + len;
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return NULL;
        p = nl + 1;
    }
    if ((size_t)(col - 1) > (size_t)(end - p)) return NULL;
    return p + col - 1;
}

static size_t ident_len(const char *p, const char *end) {
    size_t k = 0;
    if (p >= end || !(isalpha((unsigned char)*p) || *p == '_')) return 0;
    while (p + k < end && (isalnum((unsigned char)p[k]) || p[k] == '_')) k++;
    return k;
}

/* Where 'name' stands at line:col in src, or NULL (no source, or another text there). */
static const char *name_at(const char *src, size_t len, int line, int col, const char *name) {
    const char *p = src_at(src, len, line, col);
    size_t nl = strlen(name);
    if (!p || (size_t)(src + len - p) < nl || memcmp(p, name, nl) != 0) return NULL;
    return p;
}

/* 'x = ...' or 'x += ...': the name is assigned, which needs a 'let' first. */
static bool followed_by_assign(const char *src, size_t len, int line, int col, const char *name) {
    const char *p = name_at(src, len, line, col, name);
    if (!p) return false;
    const char *end = src + len;
    p += strlen(name);
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p < end && *p == '=') return p + 1 >= end || p[1] != '=';
    if (p + 1 < end && strchr("+-*/", *p) && p[1] == '=') return true;
    return p + 2 < end && p[0] == '/' && p[1] == '/' && p[2] == '=';
}

/* ---- names ---- */

typedef struct name_hint { const char *name; const char *advice; } name_hint;

static const name_hint name_hints[] = {
    {"True", "use 'true' (addsl's constants are lowercase: true, false, none)"},
    {"False", "use 'false' (addsl's constants are lowercase: true, false, none)"},
    {"None", "use 'none' (addsl's constants are lowercase: true, false, none)"},
    {"pass", "an empty block is written '{ }' and needs no 'pass'"},
    {"def", "functions are declared with 'fn name(args) { ... }'"},
};

/* Module names a PyTorch script puts before an op; the first is what the
 * user writes first, the rest may follow it ('torch.nn.functional.relu'). */
static const char *const first_namespaces[] = {"torch", "nn", "F", "np", "numpy", "math"};
static const char *const inner_namespaces[] = {"nn", "functional", "special", "F"};

static bool in_list(const char *const *list, size_t count, const char *s, size_t len) {
    for (size_t i = 0; i < count; i++)
        if (strlen(list[i]) == len && memcmp(list[i], s, len) == 0) return true;
    return false;
}

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

bool ad_hint_namespace(ad_state *S, const char *src, size_t len, int line, int col,
                       const char *name, char *out, size_t n) {
    if (!in_list(first_namespaces, COUNT(first_namespaces), name, strlen(name))) return false;
    const char *p = name_at(src, len, line, col, name);
    if (!p) return false;
    const char *end = src + len, *seg = p + strlen(name);
    if (seg >= end || *seg != '.') return false;
    seg++;
    const char *prefix_end = seg; /* just past the last namespace's '.' */
    size_t sl = ident_len(seg, end);
    while (sl && in_list(inner_namespaces, COUNT(inner_namespaces), seg, sl) && seg + sl < end && seg[sl] == '.') {
        seg += sl + 1;
        prefix_end = seg;
        sl = ident_len(seg, end);
    }
    /* torch.linalg.X is the op linalg_X. */
    char member[AD_SUGGEST_MAX_LEN + 8] = "";
    if (sl == 6 && memcmp(seg, "linalg", 6) == 0 && seg + 6 < end && seg[6] == '.') {
        size_t ml = ident_len(seg + 7, end);
        if (ml && ml < AD_SUGGEST_MAX_LEN) snprintf(member, sizeof member, "linalg_%.*s", (int)ml, seg + 7);
    } else if (sl && sl < AD_SUGGEST_MAX_LEN) {
        snprintf(member, sizeof member, "%.*s", (int)sl, seg);
    }
    int plen = (int)(prefix_end - p);
    if (plen > 60) plen = 60;
    snprintf(out, n, "name '%s' is not defined; drop the '%.*s' prefix: ", name, plen, p);
    if (member[0] && ad_suggest_global_exists(S, member)) append(out, n, "write '%s' (ops have no namespace)", member);
    else append(out, n, "ops have no namespace%s", strcmp(name, "torch") == 0 ? " (torch.linalg.X is linalg_X)" : "");
    return true;
}

void ad_hint_undefined(ad_state *S, const char *src, size_t len, int line, int col,
                       const char *name, bool method, const ad_suggest *near, char *out, size_t n) {
    if (method) {
        snprintf(out, n, "unknown method '%.200s'", name);
        if (ad_attr_lookup(name) >= 0) {
            append(out, n, "; '%s' is an attribute: write 'x.%s' without ()", name, name);
            return;
        }
    } else {
        for (size_t i = 0; i < COUNT(name_hints); i++)
            if (strcmp(name, name_hints[i].name) == 0) {
                snprintf(out, n, "name '%s' is not defined; %s", name, name_hints[i].advice);
                return;
            }
        if (ad_hint_namespace(S, src, len, line, col, name, out, n)) return;
        snprintf(out, n, "name '%.200s' is not defined", name);
    }
    ad_suggest s;
    ad_suggest_init(&s, name);
    if (near) ad_suggest_merge(&s, near);
    ad_suggest_globals(&s, S, method);
    if (s.best) { ad_suggest_append(&s, out, n); return; }
    if (!method && followed_by_assign(src, len, line, col, name))
        append(out, n, "; declare it first: 'let %.100s = ...'", name);
}

void ad_hint_attribute(ad_state *S, const char *name, char *out, size_t n) {
    snprintf(out, n, "unknown attribute '%.200s'", name);
    /* Only a method that exists is worth calling: 'x.pi' must not become 'x.pi()'. */
    if (ad_suggest_global_callable(S, name)) {
        append(out, n, "; for a method, call it: 'x.%.100s()'", name);
        return;
    }
    ad_suggest s;
    ad_suggest_init(&s, name);
    for (int i = 0; i < AD_ATTR__COUNT; i++) ad_suggest_add(&s, ad_attr_name(i));
    ad_suggest_append(&s, out, n);
}

/* ---- syntax ---- */

static bool tok_is(const ad_token *t, const char *s) {
    size_t n = strlen(s);
    return t->len >= 0 && (size_t)t->len == n && memcmp(t->start, s, n) == 0;
}

static void syntax_error_at(ad_parse *P, const ad_token *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void syntax_error_at(ad_parse *P, const ad_token *at, const char *fmt, ...) {
    P->error = true;
    P->err_line = at->line;
    P->err_col = at->col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->err_msg, sizeof P->err_msg, fmt, ap);
    va_end(ap);
}

void ad_hint_init(ad_hint_ctx *h) {
    memset(h, 0, sizeof *h);
    h->at_start = true;
}

void ad_hint_track(ad_hint_ctx *h, const ad_token *t) {
    h->p2 = h->p1;
    h->p1 = *t;
    if (h->ntok < 2) h->ntok++;
    h->p1_starts = h->at_start;
    if (h->at_start) h->have_kw = false;
    switch (t->type) {
    case TK_IF: case TK_WHILE: case TK_FOR: case TK_ELSE: h->kw = *t; h->have_kw = true; break;
    case TK_FN: if (h->at_start) { h->kw = *t; h->have_kw = true; } break;
    default: break;
    }
    h->at_start = t->type == TK_NEWLINE || t->type == TK_SEMI || t->type == TK_LBRACE;
}

bool ad_hint_before(const ad_hint_ctx *h, const ad_token *t, ad_parse *P) {
    if (h->ntok < 2 || h->p1.type != h->p2.type || (h->p1.type != TK_PLUS && h->p1.type != TK_MINUS)) return false;
    if (h->p2.start + 1 != h->p1.start || h->p1_starts) return false;
    /* '+ +' then the statement ends: the newline after an operator continues
     * the line, so 'x++' would silently add the next statement's value. */
    bool ends = t->type == 0 || t->type == TK_NEWLINE || t->type == TK_SEMI || t->type == TK_RPAREN ||
                t->type == TK_RBRACKET || t->type == TK_RBRACE || t->line > h->p1.line;
    if (!ends) return false;
    bool inc = h->p1.type == TK_PLUS;
    syntax_error_at(P, &h->p2, "unexpected '%s'; write 'x %s= 1'", inc ? "++" : "--", inc ? "+" : "-");
    return true;
}

static const char *block_form(int type) {
    switch (type) {
    case TK_IF: return "if COND { ... }";
    case TK_WHILE: return "while COND { ... }";
    case TK_FOR: return "for x in XS { ... }";
    case TK_ELSE: return "else { ... }";
    default: return "fn name(args) { ... }";
    }
}

void ad_hint_syntax(const ad_hint_ctx *h, const ad_token *t, ad_parse *P) {
    if (strncmp(P->err_msg, "unexpected", 10) != 0) return;
    const ad_token *p1 = h->ntok >= 1 ? &h->p1 : NULL;
    bool p1_starts = p1 && h->p1_starts;
    if (tok_is(t, "elif") || (p1 && tok_is(p1, "elif"))) {
        syntax_error_at(P, tok_is(t, "elif") ? t : p1, "unexpected 'elif'; write 'else if'");
    } else if (p1_starts && tok_is(p1, "def")) {
        syntax_error_at(P, p1, "unexpected 'def'; functions are declared with 'fn name(args) { ... }'");
    } else if (p1 && tok_is(p1, "lambda")) {
        syntax_error_at(P, p1, "unexpected 'lambda'; a lambda is written 'fn(x) => EXPR'");
    } else if (p1_starts && (tok_is(p1, "import") || tok_is(p1, "from")) && t->type == TK_NAME) {
        syntax_error_at(P, p1, "no need to import '%.*s'; addsl has PyTorch's ops built in: write 'sum(x)', not 'torch.sum(x)'",
                        t->len > 40 ? 40 : t->len, t->start);
    } else if (p1_starts && tok_is(p1, "class")) {
        syntax_error_at(P, p1, "unexpected 'class'; addsl has no classes: write functions ('fn name(args) { ... }')");
    } else if (p1_starts && tok_is(p1, "with")) {
        syntax_error_at(P, p1, "unexpected 'with'; code without gradients is written 'no_grad { ... }'");
    } else if (t->type == TK_NAME && tok_is(t, "is")) {
        syntax_error_at(P, t, "unexpected 'is'; compare with '==' ('is not' is '!=')");
    } else if ((t->type == TK_STAR || t->type == TK_POW) && p1 && (p1->type == TK_LPAREN || p1->type == TK_COMMA)) {
        syntax_error_at(P, t, "unexpected '%s'; '*args' and '**kwargs' are not supported: pass a list, or name each parameter with a default",
                        t->type == TK_STAR ? "*" : "**");
    } else if (t->type == TK_COLON && h->have_kw && !h->at_start) {
        syntax_error_at(P, t, "unexpected ':'; blocks use braces: '%s' (no ':')", block_form(h->kw.type));
    }
}

void ad_hint_lex(const ad_token *t, const char *lim, ad_parse *P) {
    const char *p = t->start;
    if (!p || p >= lim || strcmp(P->err_msg, "unexpected character") != 0) return;
    /* A single '&' or '|' is PyTorch's elementwise and/or on masks, not a
     * habit with a keyword; only C's doubled forms and '!' are. */
    bool twice = p + 1 < lim && p[1] == p[0];
    if (*p == '&' && twice) syntax_error_at(P, t, "unexpected '&&'; write 'and'");
    else if (*p == '|' && twice) syntax_error_at(P, t, "unexpected '||'; write 'or'");
    else if (*p == '!') syntax_error_at(P, t, "unexpected '!'; write 'not'");
}

/* fstring.c: f"..." literals, split at parse time into text and fields.
 * A field's expression is parsed again from the file's own text, so its errors carry the file's line:col. */
#include "fstring.h"

#include <stdio.h>
#include <string.h>

#include "format.h"

/* Arguments in one '$concat' call; longer f-strings nest calls (a call takes at most 255). */
#define FSTR_MAX_ARGS 200

typedef struct {
    ad_parse *P;
    const ad_token *t;
    const char *line_start; /* start of the token's line in the source */
} fscan;

static int col_of(const fscan *f, const char *p) { return (int)(p - f->line_start) + 1; }

static bool fail(fscan *f, const char *at, const char *msg) {
    ad_parse *P = f->P;
    if (!P->error) {
        P->error = true;
        P->err_line = f->t->line;
        P->err_col = col_of(f, at);
        snprintf(P->err_msg, sizeof P->err_msg, "%.200s", msg);
    }
    return false;
}

static ad_node *node_at(fscan *f, ad_nkind k, const char *at) {
    ad_token tk = *f->t;
    tk.col = col_of(f, at);
    return ad_node_new(f->P->arena, k, &tk);
}

static ad_node *str_node(fscan *f, const char *at, const char *s, size_t n) {
    ad_node *nd = node_at(f, N_STR, at);
    char *c = ad_arena_alloc(f->P->arena, n + 1);
    if (!c || nd == &f->P->arena->dummy) return nd;
    memcpy(c, s, n);
    c[n] = '\0';
    nd->str = c;
    nd->len = n;
    return nd;
}

/* A call of one of the hidden builtins ('$' keeps scripts from shadowing them). */
static ad_node *call_node(fscan *f, const char *at, const char *fname, ad_nlist *args) {
    ad_node *fn = node_at(f, N_NAME, at);
    fn->str = fname;
    fn->len = strlen(fname);
    ad_node *call = node_at(f, N_CALL, at);
    call->a = fn;
    call->list = args ? args : ad_nlist_new(f->P->arena);
    return call;
}

/* One node for the parts: "", the single part, or their concatenation. */
static ad_node *join(fscan *f, const char *at, ad_nlist *parts) {
    if (!parts || parts->n == 0) return str_node(f, at, "", 0);
    if (parts->n == 1) return parts->items[0];
    if (parts->n > FSTR_MAX_ARGS) {
        ad_nlist *outer = NULL;
        for (int i = 0; i < parts->n; i += FSTR_MAX_ARGS) {
            ad_nlist *chunk = NULL;
            for (int k = i; k < parts->n && k < i + FSTR_MAX_ARGS; k++) chunk = ad_nlist_add(f->P->arena, chunk, parts->items[k]);
            outer = ad_nlist_add(f->P->arena, outer, join(f, at, chunk));
        }
        return join(f, at, outer);
    }
    return call_node(f, at, "$concat", parts);
}

static char unescape(char e) {
    switch (e) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '0': return '\0';
    default: return e; /* \" \\ and unknown escapes keep the character, as in plain strings */
    }
}

static const char *skip_space(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    return p;
}

/* Checks a literal spec now, so a typo fails before anything runs. */
static bool check_spec(fscan *f, const char *at, const ad_node *spec) {
    char err[200], msg[300];
    ad_fmtspec fs;
    if (!ad_format_spec_parse(spec->str, spec->len, '?', &fs, err, sizeof err)) {
        snprintf(msg, sizeof msg, "f-string: %s", err);
        return fail(f, at, msg);
    }
    if (fs.type && !strchr("bcdeEfFgGnosxX%", fs.type)) {
        snprintf(msg, sizeof msg, "f-string: Unknown format code '%c' in format spec '%.60s'", fs.type, spec->str);
        return fail(f, at, msg);
    }
    return true;
}

static bool scan_text(fscan *f, const char *s, const char *e, int depth, ad_nlist **parts);

/* The expression of the field whose '{' is at o, up to its ':', '!' or '}'.
 * A trailing '=' ({x=}) asks for the text "x=" before the value: *dbg says so. */
static ad_node *field_expr(fscan *f, const char *o, const char *e, const char **stop, bool *dbg) {
    const char *x0 = o + 1, *j = x0;
    int nest = 0;
    for (; j < e; j++) {
        char ch = *j;
        if (ch == '\\') { fail(f, j, "f-string: a backslash cannot appear inside the braces"); return NULL; }
        if (ch == '(' || ch == '[' || ch == '{') nest++;
        else if (ch == ')' || ch == ']' || ch == '}') { if (nest == 0 && ch == '}') break; if (nest) nest--; }
        else if (nest == 0 && ch == ':') break;
        else if (nest == 0 && ch == '!' && !(j + 1 < e && j[1] == '=')) break;
    }
    if (j >= e) { fail(f, o, "f-string: '{' was never closed (write '{{' for a literal brace)"); return NULL; }
    *stop = j;
    const char *x1 = j;
    while (x1 > x0 && (x1[-1] == ' ' || x1[-1] == '\t')) x1--;
    *dbg = x1 > x0 && x1[-1] == '=' && !(x1 - 1 > x0 && strchr("=!<>", x1[-2]));
    if (*dbg) x1--;
    const char *first = skip_space(x0, x1);
    if (first == x1) { fail(f, o, "f-string: empty expression not allowed"); return NULL; }
    ad_parse Q;
    memset(&Q, 0, sizeof Q);
    Q.arena = f->P->arena;
    if (!ad_parse_fragment(&Q, x0, (size_t)(x1 - x0), f->t->line, f->line_start)) {
        ad_parse *P = f->P;
        if (!P->error) {
            P->error = true;
            P->err_line = Q.err_line;
            P->err_col = Q.err_col;
            /* out of memory stays that message, which the compiler turns into ENOMEM */
            if (strcmp(Q.err_msg, "out of memory") == 0) snprintf(P->err_msg, sizeof P->err_msg, "out of memory");
            else snprintf(P->err_msg, sizeof P->err_msg, "f-string: %.200s", Q.err_msg);
        }
        return NULL;
    }
    ad_node *root = Q.root;
    if (!root || !root->list || root->list->n != 1 || root->list->items[0]->kind != N_EXPRSTMT) {
        fail(f, first, "f-string: expected an expression inside the braces");
        return NULL;
    }
    return root->list->items[0]->a;
}

/* The field whose '{' is at o: a '$format(expr, spec, conv)' call; *end is its '}'. */
static ad_node *scan_field(fscan *f, const char *o, const char *e, int depth, const char **end, const char **dbg_end) {
    const char *j;
    bool dbg;
    ad_node *ex = field_expr(f, o, e, &j, &dbg);
    if (!ex) return NULL;
    *dbg_end = dbg ? j : NULL;
    bool explicit_conv = false;
    int conv = dbg ? AD_CONV_REPR : AD_CONV_NONE;
    if (*j == '!') {
        if (j + 1 >= e || !strchr("sra", j[1]) || j[1] == '\0')
            return fail(f, j + 1 < e ? j + 1 : j, "f-string: invalid conversion character: expected 's', 'r', or 'a'"), NULL;
        conv = j[1] == 's' ? AD_CONV_STR : AD_CONV_REPR;
        explicit_conv = true;
        j += 2;
        if (j >= e) return fail(f, o, "f-string: '{' was never closed (write '{{' for a literal brace)"), NULL;
        if (*j != ':' && *j != '}') return fail(f, j, "f-string: expecting '}'"), NULL;
    }
    ad_node *spec;
    if (*j == ':') {
        const char *s0 = j + 1, *k = s0;
        int lvl = 0;
        for (; k < e; k++) {
            if (*k == '{') lvl++;
            else if (*k == '}') { if (lvl == 0) break; lvl--; }
        }
        if (k >= e) return fail(f, o, "f-string: '{' was never closed (write '{{' for a literal brace)"), NULL;
        const char *inner = memchr(s0, '{', (size_t)(k - s0));
        if (depth >= 1 && inner) return fail(f, inner, "f-string: expressions nested too deeply"), NULL;
        ad_nlist *sp = NULL;
        if (!scan_text(f, s0, k, depth + 1, &sp)) return NULL;
        spec = join(f, s0, sp);
        if (spec->kind == N_STR && spec->str && !check_spec(f, s0, spec)) return NULL;
        /* {x=:spec} formats the value itself, as Python does. */
        if (dbg && !explicit_conv) conv = AD_CONV_NONE;
        j = k;
    } else {
        spec = str_node(f, j, "", 0);
    }
    *end = j;
    ad_node *cv = node_at(f, N_NUM, j);
    cv->num = conv;
    cv->is_int = true;
    ad_nlist *args = ad_nlist_add(f->P->arena, NULL, ex);
    args = ad_nlist_add(f->P->arena, args, spec);
    args = ad_nlist_add(f->P->arena, args, cv);
    /* At the expression, so a runtime error (a bad spec for that value) points there. */
    ad_node *call = call_node(f, o + 1, "$format", args);
    call->line = ex->line;
    call->col = ex->col;
    return call;
}

/* Literal text and fields of s[0..e) appended to *parts. */
static bool scan_text(fscan *f, const char *s, const char *e, int depth, ad_nlist **parts) {
    ad_arena *A = f->P->arena;
    char *lit = ad_arena_alloc(A, (size_t)(e - s) + 1);
    if (!lit) return false; /* the arena reports out of memory */
    size_t n = 0;
    const char *lit_at = s;
    for (const char *p = s; p < e;) {
        char c = *p;
        if (c == '\\' && p + 1 < e) { lit[n++] = unescape(p[1]); p += 2; continue; }
        if ((c == '{' || c == '}') && p + 1 < e && p[1] == c) { lit[n++] = c; p += 2; continue; }
        if (c == '}') return fail(f, p, "f-string: single '}' is not allowed (write '}}' for a literal brace)");
        if (c != '{') { lit[n++] = c; p++; continue; }
        const char *end, *dbg_end;
        ad_node *call = scan_field(f, p, e, depth, &end, &dbg_end);
        if (!call) return false;
        if (dbg_end) { memcpy(lit + n, p + 1, (size_t)(dbg_end - p - 1)); n += (size_t)(dbg_end - p - 1); }
        if (n) *parts = ad_nlist_add(A, *parts, str_node(f, lit_at, lit, n));
        *parts = ad_nlist_add(A, *parts, call);
        n = 0;
        p = end + 1;
        lit_at = p;
    }
    if (n) *parts = ad_nlist_add(A, *parts, str_node(f, lit_at, lit, n));
    return true;
}

ad_node *ad_fstring_parse(ad_parse *P, const ad_token *t) {
    fscan f = {P, t, t->start - (t->col - 1)};
    const char *s = t->start + 2, *e = t->start + t->len - 1;
    ad_nlist *parts = NULL;
    if (!scan_text(&f, s, e, 0, &parts)) return str_node(&f, t->start, "", 0);
    return join(&f, t->start, parts);
}

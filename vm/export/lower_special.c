/* export/lower_special.c: export_c's lowering of the special functions (digamma,
 * polygamma, erfinv, i0/i0e/i1/i1e, erfcx, ndtri, log_ndtr, zeta, igamma,
 * igammac, entr, mvlgamma) to element-wise maps that call the library's own
 * scalar functions, builtins/kernels/special_math.h, whose text the build embeds
 * (vm/export/special_math_text.c): the file gets the header's macros and the
 * functions it calls (with those they call), verbatim, each under a guard.
 * The functions of kernels/scalar_math.h that the element-wise table's
 * formulas call come the same way (ad_export_need_fn). */
#include "export/lower.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* builtins/kernels/special_math.h and scalar_math.h, verbatim (tools/embed_text.sh). */
extern const char ad_special_math_text[];
extern const char ad_scalar_math_text[];

/* The header's functions; it has about 40. */
#define XS_MAX_FNS 128
#define XS_NAME 64
/* The largest order (polygamma's n, mvlgamma's p) written as a C int
 * literal; polygamma gives NaN past order 100 at negative x anyway. */
#define XS_MAX_ORDER 100000

static const char XS_FN_MARK[] = "AD_SPECIAL_FN ";

/* One function of the header: its text from its comment to its closing brace. */
typedef struct xs_fn {
    char name[XS_NAME];
    const char *from, *def, *end;   /* comment (or def), 'AD_SPECIAL_FN' line, past '}' */
} xs_fn;

static bool is_id(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

static const char *line_start(const char *text, const char *p) {
    while (p > text && p[-1] != '\n') p--;
    return p;
}

/* Where the comment right above the line at 'def' starts (def when none). */
static const char *comment_above(const char *text, const char *def) {
    if (def == text) return def;
    const char *prev = line_start(text, def - 1), *e = def - 1;
    while (e > prev && (e[-1] == ' ')) e--;
    if (e - prev < 2 || e[-2] != '*' || e[-1] != '/') return def;
    for (const char *l = prev;; l = line_start(text, l - 1)) {
        const char *s = l;
        while (*s == ' ') s++;
        if (s[0] == '/' && s[1] == '*') return l;
        if (l == text) return def;
    }
}

/* The headers' functions, in their order (callees come before callers there). */
static int scan_text(const char *text, xs_fn *fs, int n, int max) {
    size_t ml = strlen(XS_FN_MARK);
    for (const char *p = text; *p && n < max;) {
        if (strncmp(p, XS_FN_MARK, ml) != 0) {
            const char *nl = strchr(p, '\n');
            if (!nl) break;
            p = nl + 1;
            continue;
        }
        const char *paren = strchr(p, '(');
        const char *nl = strchr(p, '\n');
        if (!paren || (nl && paren > nl)) { p = nl ? nl + 1 : p + strlen(p); continue; }
        const char *ne = paren, *nb = paren;
        while (nb > p && is_id(nb[-1])) nb--;
        xs_fn *f = &fs[n];
        snprintf(f->name, sizeof f->name, "%.*s", (int)(ne - nb), nb);
        f->def = p;
        f->from = comment_above(text, p);
        int depth = 0;
        bool opened = false;
        const char *q = p;
        for (; *q; q++) {
            if (*q == '{') { depth++; opened = true; }
            else if (*q == '}' && --depth == 0 && opened) { q++; break; }
        }
        if (*q == '\n') q++;
        f->end = q;
        n++;
        p = q;
    }
    return n;
}

static int scan_fns(xs_fn *fs, int max) {
    int n = scan_text(ad_special_math_text, fs, 0, max);
    return scan_text(ad_scalar_math_text, fs, n, max);
}

static int find_fn(const xs_fn *fs, int n, const char *name, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(fs[i].name) == len && strncmp(fs[i].name, name, len) == 0) return i;
    return -1;
}

static bool emitted(ad_buf *d, const char *guard) {
    char g[XS_NAME + 32];
    snprintf(g, sizeof g, "#define %s\n", guard);
    return d->data && strstr(d->data, g);
}

/* The header's preprocessor lines (its macros, with continuations), but for
 * its include guard: once per file. */
static void need_defs(ad_xctx *ctx) {
    ad_buf *d = ctx->prelude;
    if (emitted(d, "XC_SPECIAL_MATH_DEFS")) return;
    ad_buf_puts(d, "\n#ifndef XC_SPECIAL_MATH_DEFS /* builtins/kernels/special_math.h of the library that wrote this file: its\n"
                   " * macros, then the functions this file calls, verbatim */\n#define XC_SPECIAL_MATH_DEFS\n");
    bool cont = false;
    for (const char *p = ad_special_math_text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        bool take = cont || p[0] == '#';
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)len, p);
        if (take && !strstr(line, "AD_SPECIAL_MATH_H")) {
            ad_buf_add(d, p, len);
            ad_buf_puts(d, "\n");
        }
        cont = take && len > 0 && p[len - 1] == '\\';
        if (!nl) break;
        p = nl + 1;
    }
    ad_buf_puts(d, "#endif\n");
}

/* Function i of the header, after the functions it calls; 'stack' stops a
 * cycle (the header has none: its functions run on the GPU too). */
static void need_fn(ad_xctx *ctx, const xs_fn *fs, int n, int i, unsigned char *stack) {
    char guard[XS_NAME + 8];
    snprintf(guard, sizeof guard, "XC_SP_%s", fs[i].name);
    if (stack[i] || emitted(ctx->prelude, guard)) return;
    stack[i] = 1;
    /* the identifiers of its parameters and body, comments skipped */
    for (const char *p = strchr(fs[i].def, '('); p < fs[i].end;) {
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e && e < fs[i].end ? e + 2 : fs[i].end;
            continue;
        }
        if (p[0] == '/' && p[1] == '/') {
            const char *e = strchr(p, '\n');
            p = e && e < fs[i].end ? e : fs[i].end;
            continue;
        }
        if (!is_id(*p) || (p > fs[i].def && is_id(p[-1]))) { p++; continue; }
        const char *s = p;
        while (p < fs[i].end && is_id(*p)) p++;
        int k = find_fn(fs, n, s, (size_t)(p - s));
        if (k >= 0 && k != i) need_fn(ctx, fs, n, k, stack);
    }
    ad_buf_printf(ctx->prelude, "\n#ifndef %s\n#define %s\n", guard, guard);
    ad_buf_add(ctx->prelude, fs[i].from, (size_t)(fs[i].end - fs[i].from));
    ad_buf_puts(ctx->prelude, "#endif\n");
    stack[i] = 0;
}

/* The headers' function 'name' (and what it calls) in the file's prelude. */
static int need(ad_xctx *ctx, const char *name) {
    xs_fn fs[XS_MAX_FNS];
    unsigned char stack[XS_MAX_FNS] = {0};
    int n = scan_fns(fs, XS_MAX_FNS);
    int i = find_fn(fs, n, name, strlen(name));
    if (i < 0) return ad_xl_fail(ctx, "calls a function that builtins/kernels/special_math.h or scalar_math.h does not define");
    need_defs(ctx);
    need_fn(ctx, fs, n, i, stack);
    return ADDSL_OK;
}

int ad_export_need_fn(ad_xctx *ctx, const char *name) { return need(ctx, name); }

/* mvlgamma(x, p) = sum_{j < p} lgamma(x - j / 2) + p (p - 1) / 4 log(pi), as
 * lib/special.ad's sp_mvlgamma: the terms in the element's type, summed in
 * double as the library's sum does, the constant added in the element's type.
 * Its check that x > (p - 1) / 2 raises in the interpreter; C cannot raise. */
static void need_mvlgamma(ad_xctx *ctx, bool f32) {
    const char *g = f32 ? "XC_MVLGAMMA_F32" : "XC_MVLGAMMA_F64";
    if (emitted(ctx->prelude, g)) return;
    const char *t = f32 ? "float" : "double", *s = f32 ? "f" : "";
    ad_buf_printf(ctx->prelude,
                  "\n#ifndef %s\n#define %s\n"
                  "/* mvlgamma of dimension p (lib/special.ad's sp_mvlgamma; the interpreter raises where\n"
                  " * x <= (p - 1) / 2) */\n"
                  "static %s xc_mvlgamma_%s(%s x, int p) {\n"
                  "    double s = 0;\n"
                  "    for (int j = 0; j < p; j++) s += lgamma%s(x + (%s)j * -0.5%s);\n"
                  "    return (%s)s + (%s)((double)p * (p - 1) / 4 * 1.1447298858494002);\n"
                  "}\n#endif\n",
                  g, g, t, f32 ? "f32" : "f64", t, s, t, s, t, t);
}

/* Ops calling one function of the header on their tensors (float32: the
 * operands as float, the function in double, the result rounded, as the
 * interpreter's kernels do). */
typedef struct xs_row {
    int op;                     /* ad_op_id (a special_ alias has its op's) */
    const char *fn;             /* the header's function, NULL for none */
    int np;                     /* tensor or number parameters, $0.. */
    int order;                  /* the parameter that must be an int at export time, or -1 */
    const char *f64, *f32;      /* templates (emit_map keeps them: literals) */
} xs_row;

#define XS_UN(op, fn) {op, fn, 1, -1, fn "($0)", "(float)" fn "((float)$0)"}
#define XS_BIN(op, fn) {op, fn, 2, -1, fn "($0, $1)", "(float)" fn "((float)$0, (float)$1)"}

static const xs_row xs_rows[] = {
    XS_UN(AD_OP_digamma, "ad_digamma"),
    XS_UN(AD_OP_erfinv, "ad_erfinv"),
    XS_UN(AD_OP_i0, "ad_sp_i0"), XS_UN(AD_OP_i0e, "ad_sp_i0e"), XS_UN(AD_OP_i1, "ad_sp_i1"), XS_UN(AD_OP_i1e, "ad_sp_i1e"),
    XS_UN(AD_OP_erfcx, "ad_sp_erfcx"), XS_UN(AD_OP_ndtri, "ad_sp_ndtri"), XS_UN(AD_OP_log_ndtr, "ad_sp_log_ndtr"),
    XS_BIN(AD_OP_zeta, "ad_sp_zeta"), XS_BIN(AD_OP_igamma, "ad_sp_igamma"), XS_BIN(AD_OP_igammac, "ad_sp_igammac"),
    /* polygamma(n, self): n an int, a literal of the map */
    {AD_OP_polygamma, "ad_polygamma", 2, 0, "ad_polygamma((int)$0, $1)", "(float)ad_polygamma((int)$0, (float)$1)"},
    /* entr(x) = -x log x, 0 at 0, -inf below, NaN kept (lib/special.ad's sp_entr) */
    {AD_OP_entr, NULL, 1, -1, "($0 != $0 ? $0 : ($0 > 0 ? -$0 * log($0) : ($0 == 0 ? 0 : -HUGE_VAL)))",
     "($0 != $0 ? $0 : ($0 > 0 ? -$0 * logf($0) : ($0 == 0 ? 0 : -HUGE_VALF)))"},
    {AD_OP_mvlgamma, NULL, 2, 1, "xc_mvlgamma_f64($0, (int)$1)", "xc_mvlgamma_f32($0, (int)$1)"},
    {AD_OP__NONE, NULL, 0, -1, NULL, NULL},
};

int ad_export_lower_special(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->kind != AD_TN_OP) return AD_XL_PASS;
    const xs_row *row = xs_rows;
    while (row->op != AD_OP__NONE && row->op != r->n->op) row++;
    if (row->op == AD_OP__NONE) return AD_XL_PASS;
    int o = r->n->out.ref;
    if (o < 0) return ad_xl_fail(ctx, "has no tensor output");
    ad_dtype ct = ctx->v[o].dt;
    if (ct != AD_FLOAT32 && ct != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    double x;
    if (row->order >= 0 && (ad_xl_pref(r, row->order) >= 0 || !ad_xl_pnum(r, row->order, &x) || x < 0 ||
                            x > XS_MAX_ORDER || x != floor(x)))
        return ad_xl_fail(ctx, "needs its order (n, p) as an int at export time");
    if (row->fn) {
        int rc = need(ctx, row->fn);
        if (rc) return rc;
    }
    if (row->op == AD_OP_mvlgamma) need_mvlgamma(ctx, ct == AD_FLOAT32);
    return ad_xl_emit_map(ctx, r, row->np, ct == AD_FLOAT32 ? row->f32 : row->f64, ct);
}

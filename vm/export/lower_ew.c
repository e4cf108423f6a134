/* export/lower_ew.c: export_c's lowering of the ops of the element-wise table
 * (builtins/kernels/ew_table.h): each row's formula, stringified, is the
 * template of an element-wise map, its operand names, T and constants filled
 * in and the float suffix added to its math functions for float32 (as
 * <tgmath.h> picks them in the CPU kernels); the kernels/scalar_math.h and
 * kernels/special_math.h functions it calls are copied into the file. */
#include "export/lower.h"
#include "export/nest.h"

#include <stdio.h>
#include <string.h>

#include "kernels/ew_table.h"

#define XE_STR_(x) #x
#define XE_STR(x) XE_STR_(x)
#define XE_NAME 48

/* One op: its kernel's name, its float and int64 formulas ("$C" and the
 * table's text; NULL where the kernel is float-only). */
typedef struct xe_row {
    const char *name, *tf, *ti;
} xe_row;

#define XE_F(name, EXPR) {#name, "$C" #EXPR, NULL},
#define XE_FI(name, EXPR, IEXPR) {#name, "$C" #EXPR, "$C" #IEXPR},
#define XE_ANY(name, EXPR) {#name, "$C" #EXPR, "$C" #EXPR},
#define XE_SLEEF(name, ulp) {#name, "$C" #name "(v)", NULL},
static const xe_row xe_rows[] = {
    AD_EW_SLEEF_OPS(XE_SLEEF)
    AD_EW_FLOAT_OPS(XE_F)
    AD_EW_FLOAT_MODE_OPS(XE_F)
    AD_EW_SAME_OPS(XE_FI)
    AD_EW_ROUND_OPS(XE_F)
    AD_EW_PARAM_OPS(XE_F)
    AD_EW_CLAMP(XE_FI)
    AD_EW_PRED_OPS(XE_FI)
    AD_EW_BINARY_ALL_OPS(XE_FI)
    AD_EW_BINARY_FLOAT_OPS(XE_F)
    /* the formulas hold for every dtype, bools read as integers */
    AD_EW_LOGICAL_OPS(XE_ANY)
    AD_EW_COMPARE_OPS(XE_ANY)
    AD_EW_LOGICAL_NOT(XE_ANY)
    AD_EW_WHERE(XE_ANY)
    AD_EW_LERP(XE_F)
    AD_EW_CLAMP_T(XE_FI)
    AD_EW_ADDCMUL(XE_FI)
    AD_EW_ADDCDIV(XE_F)
    {NULL, NULL, NULL},
};

/* Library ops that are not aliases ('op A = B' gives an alias its op's id, so
 * dispatch asks for the canonical name) but run the same kernel as another. */
static const char *const xe_alias[][2] = {
    {"sgn", "sign"}, {"true_divide", "div"},
};

#define XE_CONST(n) {#n, XE_STR(n)},
static const char *const xe_consts[][2] = {AD_EW_CONSTS(XE_CONST)};

/* The math functions of <math.h> the formulas may call, which take an 'f'
 * for float32. */
static const char *const xe_libm[] = {
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "lgamma", "fabs", "floor", "ceil", "trunc",
    "nearbyint", "fmod", "pow", "atan2", "hypot", "copysign", "fmin", "fmax",
};

/* kernels/scalar_math.h's type-generic names, written with their _f32/_f64 suffix. */
static const char *const xe_generic[] = {"ad_pow", "ad_fremainder", "ad_logit"};

static bool is_id0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_id(char c) { return is_id0(c) || (c >= '0' && c <= '9'); }

static bool id_is(const char *s, size_t n, const char *w) { return strlen(w) == n && strncmp(s, w, n) == 0; }

static bool in_list(const char *s, size_t n, const char *const *list, size_t count) {
    for (size_t i = 0; i < count; i++) if (id_is(s, n, list[i])) return true;
    return false;
}

/* The operand an identifier of a formula names, or -1. */
static int operand(const char *s, size_t n) {
    if (id_is(s, n, "v") || id_is(s, n, "a")) return 0;
    if (id_is(s, n, "b") || id_is(s, n, "P") || id_is(s, n, "p")) return 1;
    if (id_is(s, n, "c") || id_is(s, n, "Q") || id_is(s, n, "q")) return 2;
    if (id_is(s, n, "val")) return 3;
    return -1;
}

/* The next identifier of a formula from p (numbers skipped), its length in
 * *n; NULL at the end. */
static const char *next_id(const char *p, size_t *n) {
    while (*p) {
        if (*p >= '0' && *p <= '9') {
            while (is_id(*p) || *p == '.') p++;
            continue;
        }
        if (!is_id0(*p)) { p++; continue; }
        const char *s = p;
        while (is_id(*p)) p++;
        *n = (size_t)(p - s);
        return s;
    }
    return NULL;
}

void ad_export_render_c(ad_xctx *ctx, const ad_xnest *e, const char *t, ad_buf *b) {
    bool f32 = e->ct == AD_FLOAT32;
    for (const char *p = t; *p;) {
        const char *s = p;
        if (*p >= '0' && *p <= '9') {
            /* a number, exponent sign included */
            while (is_id(*p) || *p == '.' || ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E'))) p++;
            ad_buf_add(b, s, (size_t)(p - s));
            continue;
        }
        if (!is_id0(*p)) { ad_buf_add(b, p++, 1); continue; }
        while (is_id(*p)) p++;
        size_t n = (size_t)(p - s);
        int k = operand(s, n);
        if (k >= 0) {
            const char op[3] = {'$', (char)('0' + k), 0};
            ad_export_render(ctx, e, op, b);
            continue;
        }
        if (id_is(s, n, "T")) { ad_export_render(ctx, e, "$T", b); continue; }
        bool done = false;
        for (size_t i = 0; i < sizeof xe_consts / sizeof xe_consts[0] && !done; i++)
            if (id_is(s, n, xe_consts[i][0])) { ad_buf_printf(b, "(%s)", xe_consts[i][1]); done = true; }
        if (done) continue;
        ad_buf_add(b, s, n);
        if (*p == '(' && f32 && in_list(s, n, xe_libm, sizeof xe_libm / sizeof xe_libm[0])) ad_buf_puts(b, "f");
        if (in_list(s, n, xe_generic, sizeof xe_generic / sizeof xe_generic[0])) ad_buf_puts(b, f32 ? "_f32" : "_f64");
    }
}

/* Operands formula t reads: one past the highest. */
static int operands(const char *t) {
    int np = 0;
    size_t n;
    for (const char *s = next_id(t, &n); s; s = next_id(s + n, &n)) {
        int k = operand(s, n);
        if (k + 1 > np) np = k + 1;
    }
    return np;
}

/* The library functions formula t calls, copied into the file. */
static int need_calls(ad_xctx *ctx, const char *t, bool f32) {
    size_t n;
    for (const char *s = next_id(t, &n); s; s = next_id(s + n, &n)) {
        if (n <= 3 || n >= XE_NAME || strncmp(s, "ad_", 3) != 0) continue;
        char fn[XE_NAME + 8];
        bool gen = in_list(s, n, xe_generic, sizeof xe_generic / sizeof xe_generic[0]);
        snprintf(fn, sizeof fn, "%.*s%s", (int)n, s, gen ? (f32 ? "_f32" : "_f64") : "");
        int rc = ad_export_need_fn(ctx, fn);
        if (rc) return rc;
    }
    return ADDSL_OK;
}

static const xe_row *find(const char *name) {
    for (size_t i = 0; i < sizeof xe_alias / sizeof xe_alias[0]; i++)
        if (!strcmp(name, xe_alias[i][0])) name = xe_alias[i][1];
    for (const xe_row *r = xe_rows; r->name; r++)
        if (!strcmp(r->name, name)) return r;
    return NULL;
}

bool ad_export_ew_has(const char *name) { return find(name) != NULL; }

const char *ad_export_ew_formula(const char *kernel, bool fl) {
    const xe_row *row = find(kernel);
    return !row ? NULL : fl ? row->tf : row->ti;
}

ad_dtype ad_export_ew_ctype(const ad_xctx *ctx, const ad_xrec *r, int np) {
    ad_dtype ct = ctx->v[r->n->out.ref].dt;
    if (ct != AD_BOOL) return ct;
    /* a predicate: computed in its operands' type */
    bool any = false;
    for (int i = 0; i < np; i++) {
        int ref = ad_xl_pref(r, i);
        if (ref < 0) continue;
        ct = any ? ad_promote(ct, ctx->v[ref].dt) : ctx->v[ref].dt;
        any = true;
    }
    return ct;
}

/* Formula t over the record's first np operands, computed in ct; rawmask:
 * operands read in their own type. */
static int emit(ad_xctx *ctx, const ad_xrec *r, const char *t, int np, ad_dtype ct, int rawmask) {
    if (!t) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    int rc = need_calls(ctx, t + 2, ct == AD_FLOAT32);
    return rc ? rc : ad_xl_emit_map_raw(ctx, r, np, t, ct, rawmask);
}

int ad_export_ew_map(ad_xctx *ctx, const ad_xrec *r, const char *kernel, ad_dtype ct) {
    const char *t = ad_export_ew_formula(kernel, ct == AD_FLOAT32 || ct == AD_FLOAT64);
    return emit(ctx, r, t, t ? operands(t + 2) : 0, ct, 0);
}

int ad_export_lower_ew(ad_xctx *ctx, const ad_xrec *r, const char *name) {
    const xe_row *row = find(name);
    if (!row) return AD_XL_PASS;
    if (r->n->out.ref < 0) return ad_xl_fail(ctx, "has no tensor output");
    /* the operands of the float formula (an int64 one reads the same or none) */
    int np = operands(row->tf + 2);
    ad_dtype ct = ad_export_ew_ctype(ctx, r, np);
    bool fl = ct == AD_FLOAT32 || ct == AD_FLOAT64;
    /* where's condition is read as it is */
    return emit(ctx, r, fl ? row->tf : row->ti, np, ct, !strcmp(row->name, "where") ? 1 : 0);
}

/* bi_format.c: the builtins of text formatting and of Python's conversions:
 * format, f-strings' hidden helpers, str.format, int, float(number or string), bool(x). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../vm/buf.h"
#include "../vm/format.h"
#include "../vm/state.h"
#include "../vm/vm.h"
#include "builtins.h"

static int ret_buf(ad_state *S, ad_buf *b, int rc, ad_value *out) {
    if (!rc && b->failed) rc = ad_nomem(S);
    if (!rc) rc = ad_string_value(S, b->data ? b->data : "", b->len, out);
    ad_buf_free(b);
    return rc;
}

/* format(value, spec=""): Python's format(). */
static int bi_format(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    const char *spec;
    int rc = ad_arg_str(S, argv[1], "format", "spec", &spec);
    if (rc) return rc;
    ad_buf b;
    ad_buf_init(&b, S);
    rc = ad_format_value(S, argv[0], spec, argv[1].u.s->len, AD_CONV_NONE, &b);
    return ret_buf(S, &b, rc, out);
}

/* $format(value, spec, conv): one f-string field (vm/fstring.c makes the calls). */
static int bi_fstring_field(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    if (argv[1].t != AD_TSTR) return ad_error(S, "f-string: a format spec must be a string, not %s", ad_type_name(argv[1]));
    if (argv[0].t == AD_TSTR && argv[1].u.s->len == 0 && argv[2].u.n == AD_CONV_NONE) {
        *out = argv[0];
        ad_value_incref(*out);
        return ADDSL_OK;
    }
    ad_buf b;
    ad_buf_init(&b, S);
    int rc = ad_format_value(S, argv[0], argv[1].u.s->data, argv[1].u.s->len, (int)argv[2].u.n, &b);
    return ret_buf(S, &b, rc, out);
}

/* $concat(strings...): the pieces of an f-string, joined with one allocation. */
static int bi_concat(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    size_t n = 0;
    for (int i = 0; i < argc; i++) {
        if (argv[i].t != AD_TSTR) return ad_error(S, "$concat(): argument %d is %s, not a string", i + 1, ad_type_name(argv[i]));
        n += argv[i].u.s->len;
        if (n > AD_MAX_STRING) return ad_error(S, "string too long (%zu bytes; the limit is %zu)", n, (size_t)AD_MAX_STRING);
    }
    ad_str *r = ad_str_alloc(S, n);
    if (!r) return S->errcode;
    size_t k = 0;
    for (int i = 0; i < argc; i++) {
        memcpy(r->data + k, argv[i].u.s->data, argv[i].u.s->len);
        k += argv[i].u.s->len;
    }
    r->data[n] = '\0';
    out->t = AD_TSTR;
    out->u.s = r;
    return ADDSL_OK;
}

/* x.format(...): str.format on a string; on anything else, format(x, spec). */
static int bi_str_format(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    if (argc < 1) return ad_error(S, "format() missing required argument 'self'");
    if (argv[0].t == AD_TSTR) return ad_format_method(S, argv[0].u.s, argv + 1, argc - 1, out);
    if (argc > 2) return ad_error(S, "format() takes 2 arguments but %d were given", argc);
    const char *spec = "";
    size_t len = 0;
    if (argc == 2) {
        int rc = ad_arg_str(S, argv[1], "format", "spec", &spec);
        if (rc) return rc;
        len = argv[1].u.s->len;
    }
    ad_buf b;
    ad_buf_init(&b, S);
    int rc = ad_format_value(S, argv[0], spec, len, AD_CONV_NONE, &b);
    return ret_buf(S, &b, rc, out);
}

/* ---- conversions ---- */

/* 'text' as Python's repr() writes a string, for messages. */
static void py_repr(ad_buf *b, const char *s, size_t n) {
    bool dq = memchr(s, '\'', n) && !memchr(s, '"', n);
    char q = dq ? '"' : '\'';
    ad_buf_add(b, &q, 1);
    for (size_t i = 0; i < n && i < 200; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\') ad_buf_puts(b, "\\\\");
        else if (c == '\n') ad_buf_puts(b, "\\n");
        else if (c == '\t') ad_buf_puts(b, "\\t");
        else if (c == '\r') ad_buf_puts(b, "\\r");
        else if (c == (unsigned char)q) { ad_buf_puts(b, "\\"); ad_buf_add(b, (const char *)&c, 1); }
        else if (c < 0x20 || c == 0x7f) ad_buf_printf(b, "\\x%02x", c);
        else ad_buf_add(b, (const char *)&c, 1);
    }
    ad_buf_add(b, &q, 1);
}

static int bad_literal(ad_state *S, const char *what, const ad_str *s) {
    ad_buf b;
    ad_buf_init(&b, S);
    py_repr(&b, s->data, s->len);
    int rc = b.failed ? ad_nomem(S) : ad_error(S, "%s%s", what, b.data);
    ad_buf_free(&b);
    return rc;
}

static bool py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* The text without Python's surrounding whitespace. */
static void strip(const ad_str *s, const char **p, const char **e) {
    *p = s->data;
    *e = s->data + s->len;
    while (*p < *e && py_space(**p)) (*p)++;
    while (*e > *p && py_space((*e)[-1])) (*e)--;
}

static int digit_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'z') return c - 'a' + 10;
    if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
    return 99;
}

/* int(text, base): Python's integer literal rules (sign, 0x/0o/0b prefix, '_' between digits). */
static bool parse_int(const char *p, const char *e, int base, double *out) {
    bool neg = false;
    if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    if (e - p >= 2 && p[0] == '0') {
        char c = (char)tolower((unsigned char)p[1]);
        int pb = c == 'x' ? 16 : c == 'o' ? 8 : c == 'b' ? 2 : 0;
        if (pb && (base == 0 || base == pb)) {
            base = pb;
            p += 2;
            if (p < e && *p == '_') p++;
        }
    }
    bool auto_dec = base == 0;
    if (auto_dec) base = 10;
    if (p >= e) return false;
    const char *first = p;
    double v = 0;
    bool nonzero = false;
    for (; p < e; p++) {
        if (*p == '_') {
            if (p == first || p + 1 >= e || p[-1] == '_') return false;
            continue;
        }
        int d = digit_value(*p);
        if (d >= base) return false;
        nonzero |= d != 0;
        v = v * base + d;
    }
    /* Base 0 refuses "010", as Python 3 does (octal needs 0o). */
    if (auto_dec && *first == '0' && nonzero) return false;
    *out = neg ? -v : v;
    return true;
}

static int number_to_int(ad_state *S, double x, ad_value *out) {
    if (isnan(x)) return ad_error(S, "cannot convert float NaN to integer");
    if (isinf(x)) return ad_error(S, "cannot convert float infinity to integer");
    *out = ad_int(trunc(x) == 0 ? 0.0 : trunc(x));
    return ADDSL_OK;
}

/* A one-element tensor's item, as int(), float() and bool() read it. */
static int tensor_scalar(ad_state *S, const ad_tensor *t, double *x) {
    if (t->numel != 1) return ad_error(S, "only one element tensors can be converted to Python scalars");
    return ad_tensor_item(S, t, x);
}

/* int(x=0, base=none): Python's int() on numbers, bools, strings and one-element tensors. */
static int bi_int(ad_state *S, ad_value *argv, int argc, ad_value *out) {
    (void)argc;
    ad_value v = argv[0];
    if (argv[1].t != AD_TNONE) {
        int64_t base;
        int rc = ad_arg_int(S, argv[1], "int", "base", &base);
        if (rc) return rc;
        if (v.t != AD_TSTR) return ad_error(S, "int() can't convert non-string with explicit base");
        if (base != 0 && (base < 2 || base > 36)) return ad_error(S, "int() base must be >= 2 and <= 36, or 0");
        const char *p, *e;
        double x;
        strip(v.u.s, &p, &e);
        if (!parse_int(p, e, (int)base, &x)) {
            char what[64];
            snprintf(what, sizeof what, "invalid literal for int() with base %d: ", (int)base);
            return bad_literal(S, what, v.u.s);
        }
        *out = ad_int(x);
        return ADDSL_OK;
    }
    switch (v.t) {
    case AD_TINT: case AD_TNUM: return number_to_int(S, v.u.n, out);
    case AD_TBOOL: *out = ad_int(v.u.b); return ADDSL_OK;
    case AD_TSTR: {
        const char *p, *e;
        double x;
        strip(v.u.s, &p, &e);
        if (!parse_int(p, e, 10, &x)) return bad_literal(S, "invalid literal for int() with base 10: ", v.u.s);
        *out = ad_int(x);
        return ADDSL_OK;
    }
    case AD_TTENSOR: {
        double x;
        int rc = tensor_scalar(S, v.u.tensor, &x);
        return rc ? rc : number_to_int(S, x, out);
    }
    default:
        return ad_error(S, "int() argument must be a string, a number or a one-element tensor, not %s", ad_type_name(v));
    }
}

/* float(text): Python's float literal rules ('_' between digits, inf, nan). */
static bool parse_float(const char *p, const char *e, double *out) {
    char buf[128];
    size_t n = 0;
    const char *q = p;
    if (q < e && (*q == '+' || *q == '-')) buf[n++] = *q++;
    size_t rest = (size_t)(e - q);
    static const char *const words[] = {"inf", "infinity", "nan"};
    for (int w = 0; w < 3; w++)
        if (rest == strlen(words[w]) && strncasecmp(q, words[w], rest) == 0) {
            double x = w == 2 ? NAN : INFINITY;
            *out = n && buf[0] == '-' ? -x : x;
            return true;
        }
    bool digits = false, dot = false, exp = false;
    char prev = 0;
    for (; q < e; q++) {
        char c = *q;
        if (n >= sizeof buf - 1) return false;
        if (c == '_') {
            if (!isdigit((unsigned char)prev) || q + 1 >= e || !isdigit((unsigned char)q[1])) return false;
            prev = c;
            continue;
        }
        if (isdigit((unsigned char)c)) digits = true;
        else if (c == '.' && !dot && !exp) dot = true;
        else if ((c == 'e' || c == 'E') && digits && !exp) {
            exp = true;
            buf[n++] = c;
            prev = c;
            if (q + 1 < e && (q[1] == '+' || q[1] == '-')) { buf[n++] = *++q; prev = *q; }
            if (q + 1 >= e || !isdigit((unsigned char)q[1])) return false;
            continue;
        } else return false;
        buf[n++] = c;
        prev = c;
    }
    if (!digits) return false;
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    return true;
}

int ad_bi_float_value(ad_state *S, ad_value v, ad_value *out) {
    switch (v.t) {
    case AD_TINT: case AD_TNUM: *out = ad_num(v.u.n); return ADDSL_OK;
    case AD_TBOOL: *out = ad_num(v.u.b); return ADDSL_OK;
    case AD_TSTR: {
        const char *p, *e;
        double x;
        strip(v.u.s, &p, &e);
        if (!parse_float(p, e, &x)) return bad_literal(S, "could not convert string to float: ", v.u.s);
        *out = ad_num(x);
        return ADDSL_OK;
    }
    default:
        return ad_error(S, "float() argument must be a string or a number, not %s", ad_type_name(v));
    }
}

int ad_bi_truth(ad_state *S, const ad_value *args, int nargs, const ad_list *kw, ad_value *out) {
    if (kw && kw->len) return ad_error(S, "bool() takes no keyword arguments");
    if (nargs > 1) return ad_error(S, "bool() takes at most 1 argument (%d given)", nargs);
    if (nargs == 0) { *out = ad_bool(false); return ADDSL_OK; }
    ad_value v = args[0];
    if (v.t == AD_TTENSOR) {
        const ad_tensor *t = v.u.tensor;
        if (t->numel == 0) return ad_error(S, "Boolean value of Tensor with no values is ambiguous");
        if (t->numel > 1) return ad_error(S, "Boolean value of Tensor with more than one value is ambiguous");
        double x;
        int rc = ad_tensor_item(S, t, &x);
        if (rc) return rc;
        *out = ad_bool(x != 0);
        return ADDSL_OK;
    }
    *out = ad_bool(ad_truthy(v));
    return ADDSL_OK;
}

const ad_builtin_def ad_bi_format_defs[] = {
    {"format", bi_format, "value, spec=\"\"",
         "The text of value under a format spec, as Python's format() and f-strings (\".2f\", \">8\", "
         "\"e\", \",\", ...)."
         "\nExample: format(3.14159, \".2f\")"},
    {"int", bi_int, "x=0, base=none",
         "An int from a number (truncated toward zero), a bool, a one-element tensor or a string "
         "(in base, default 10), as Python's int()."
         "\nExample: int(\"ff\", 16)   # 255"},
    {"$format", bi_fstring_field, "value, spec, conv"},
    {"$concat", bi_concat, "*"},
    {"$str_format", bi_str_format, "*"},
    {NULL, NULL, NULL},
};

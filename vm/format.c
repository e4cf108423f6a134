/* format.c: Python's format-spec mini-language, printf-style '%' and str.format.
 * Behaviour and messages follow CPython 3.11 (Python/formatter_unicode.c, Objects/unicodeobject.c). */
#include "format.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ad_limits.h"
#include "buf.h"
#include "state.h"
#include "tensor/tensor.h"

/* Widths and precisions beyond these are refused rather than allocated. */
#define FMT_MAX_DIGITS 18                 /* a width or precision of more digits is an error */
#define FMT_MAX_PREC ((int64_t)1 << 20)   /* digits after the point */

static bool is_align(char c) { return c == '<' || c == '>' || c == '=' || c == '^'; }

/* Bytes in the UTF-8 sequence that starts with c (1 for stray bytes). */
static int utf8_len(unsigned char c) {
    if (c >= 0xF0 && c < 0xF8) return 4;
    if (c >= 0xE0) return c < 0xF0 ? 3 : 1;
    if (c >= 0xC0) return 2;
    return 1;
}

/* Code points in s[0..n): widths and precisions count characters, as in Python. */
static size_t count_chars(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* Bytes of the first 'chars' code points of s[0..n). */
static size_t prefix_bytes(const char *s, size_t n, int64_t chars) {
    size_t i = 0;
    for (int64_t c = 0; c < chars && i < n; c++) {
        i += (size_t)utf8_len((unsigned char)s[i]);
        if (i > n) i = n;
    }
    return i;
}

static bool seterr(char *err, size_t errn, const char *fmt, const char *a, const char *b) {
    if (err && errn) snprintf(err, errn, fmt, a, b);
    return false;
}

/* A run of digits; false when it has more than FMT_MAX_DIGITS. */
static bool digits_at(const char *s, size_t len, size_t *pos, int64_t *out) {
    int64_t v = 0;
    size_t start = *pos;
    while (*pos < len && s[*pos] >= '0' && s[*pos] <= '9') {
        if (*pos - start >= FMT_MAX_DIGITS) return false;
        v = v * 10 + (s[*pos] - '0');
        (*pos)++;
    }
    *out = *pos > start ? v : -1;
    return true;
}

static const char *default_type_name(char t) { return t == 's' ? "str" : t == 'd' ? "int" : "float"; }

bool ad_format_spec_parse(const char *spec, size_t len, char default_type, ad_fmtspec *out, char *err, size_t errn) {
    ad_fmtspec f = {.fill = " ", .fill_len = 1, .width = -1, .prec = -1};
    bool unknown = default_type == '?'; /* a check before the value is known (f-strings) */
    if (unknown) default_type = 0;
    size_t pos = 0;
    bool fill_given = false, align_given = false;
    int k = len ? utf8_len((unsigned char)spec[0]) : 0;
    if (len > (size_t)k && k > 0 && is_align(spec[k])) {
        memcpy(f.fill, spec, (size_t)k);
        f.fill[k] = '\0';
        f.fill_len = k;
        f.align = spec[k];
        fill_given = align_given = true;
        pos = (size_t)k + 1;
    } else if (len && is_align(spec[0])) {
        f.align = spec[0];
        align_given = true;
        pos = 1;
    }
    if (pos < len && (spec[pos] == '+' || spec[pos] == '-' || spec[pos] == ' ')) f.sign = spec[pos++];
    if (pos < len && spec[pos] == 'z') { f.no_neg_zero = true; pos++; }
    if (pos < len && spec[pos] == '#') { f.alt = true; pos++; }
    /* '0' before the width: zero padding after the sign (numbers) or zero fill (strings). */
    if (!fill_given && pos < len && spec[pos] == '0') {
        strcpy(f.fill, "0");
        f.fill_len = 1;
        if (!align_given && default_type != 's') f.align = '=';
        pos++;
    }
    if (!digits_at(spec, len, &pos, &f.width))
        return seterr(err, errn, "Too many decimal digits in format string%s%s", "", "");
    if (pos < len && spec[pos] == ',') { f.group = ','; pos++; }
    if (pos < len && spec[pos] == '_') {
        if (f.group) return seterr(err, errn, "Cannot specify both ',' and '_'.%s%s", "", "");
        f.group = '_';
        pos++;
    }
    if (pos < len && spec[pos] == ',' && f.group == '_')
        return seterr(err, errn, "Cannot specify both ',' and '_'.%s%s", "", "");
    if (pos < len && spec[pos] == '.') {
        pos++;
        if (!digits_at(spec, len, &pos, &f.prec))
            return seterr(err, errn, "Too many decimal digits in format string%s%s", "", "");
        if (f.prec < 0) return seterr(err, errn, "Format specifier missing precision%s%s", "", "");
        if (f.prec > FMT_MAX_PREC) return seterr(err, errn, "precision too big%s%s", "", "");
    }
    if (len - pos > 1) {
        char s[64];
        snprintf(s, sizeof s, "%.*s", (int)(len > 60 ? 60 : len), spec);
        if (unknown) return seterr(err, errn, "Invalid format specifier '%s'%s", s, "");
        return seterr(err, errn, "Invalid format specifier '%s' for object of type '%s'", s, default_type_name(default_type));
    }
    f.type = len - pos == 1 ? spec[pos] : default_type;
    if (f.group) {
        const char *ok = f.group == ',' ? "defgEGF%" : "defgEGF%boxX";
        if (f.type && !strchr(ok, f.type)) {
            char a[2] = {f.group, 0}, b[2] = {f.type, 0};
            return seterr(err, errn, "Cannot specify '%s' with '%s'.", a, b);
        }
    }
    if (f.width > (int64_t)AD_MAX_STRING) return seterr(err, errn, "format width too large%s%s", "", "");
    *out = f;
    return true;
}

/* ---- layout ---- */

static int pad(ad_buf *b, const ad_fmtspec *f, int64_t n) {
    for (int64_t i = 0; i < n; i++) ad_buf_add(b, f->fill, (size_t)f->fill_len);
    return b->failed ? ADDSL_ENOMEM : ADDSL_OK;
}

/* Digits with a separator every 'g' of them, zero-padded to 'min_width' the way
 * CPython does it (a group never starts with a separator: '08,' of 1234 is 0,001,234). */
static int group_digits(ad_buf *out, const char *d, size_t nd, char sep, int g, int64_t min_width) {
    char tmp[512];
    char *buf = tmp;
    size_t cap = (size_t)(min_width > 0 ? min_width : 0) + nd * 2 + 8;
    if (cap > sizeof tmp) { buf = ad_malloc(out->S, cap); if (!buf) return ADDSL_ENOMEM; }
    size_t w = cap; /* written right to left */
    int64_t remaining = (int64_t)nd, mw = min_width;
    bool sep_next = false;
    for (;;) {
        int64_t l = remaining > mw ? remaining : mw;
        if (l < 1) l = 1;
        if (l > g) l = g;
        int64_t zeros = l - remaining > 0 ? l - remaining : 0;
        int64_t chars = remaining < l ? remaining : l;
        if (chars < 0) chars = 0;
        if (sep_next) buf[--w] = sep;
        for (int64_t i = 0; i < chars; i++) buf[--w] = d[remaining - 1 - i];
        for (int64_t i = 0; i < zeros; i++) buf[--w] = '0';
        sep_next = true;
        remaining -= chars;
        mw -= l;
        if (remaining <= 0 && mw <= 0) break;
        mw -= 1;
    }
    int rc = ad_buf_add(out, buf + w, cap - w);
    if (buf != tmp) ad_free(out->S, buf);
    return rc ? ADDSL_ENOMEM : ADDSL_OK;
}

/* sign, prefix, digits (grouped), rest, padded to the width by the alignment. */
static int layout_number(ad_buf *b, const ad_fmtspec *f, const char *sign, const char *prefix,
                         const char *digits, size_t nd, const char *rest, size_t nrest, int gsize) {
    ad_buf body;
    ad_buf_init(&body, b->S);
    size_t ns = strlen(sign), np = strlen(prefix);
    int rc = ADDSL_OK;
    if (f->group) {
        int64_t mw = 0;
        if (f->align == '=' && f->fill_len == 1 && f->fill[0] == '0' && f->width > 0)
            mw = f->width - (int64_t)(ns + np + count_chars(rest, nrest));
        rc = group_digits(&body, digits, nd, f->group, gsize, mw);
    } else {
        ad_buf_add(&body, digits, nd);
    }
    ad_buf_add(&body, rest, nrest);
    if (!rc && body.failed) rc = ADDSL_ENOMEM;
    if (rc) { ad_buf_free(&body); return rc; }
    int64_t total = (int64_t)(ns + np + count_chars(body.data ? body.data : "", body.len));
    int64_t n = f->width > total ? f->width - total : 0;
    char align = f->align ? f->align : '>';
    const char *bd = body.data ? body.data : "";
    if (align == '>') pad(b, f, n);
    if (align == '^') pad(b, f, n / 2);
    ad_buf_puts(b, sign);
    ad_buf_puts(b, prefix);
    if (align == '=') pad(b, f, n);
    ad_buf_add(b, bd, body.len);
    if (align == '<') pad(b, f, n);
    if (align == '^') pad(b, f, n - n / 2);
    ad_buf_free(&body);
    return b->failed ? ADDSL_ENOMEM : ADDSL_OK;
}

static const char *sign_text(const ad_fmtspec *f, bool negative) {
    if (negative) return "-";
    return f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
}

/* ---- strings ---- */

static int format_string(ad_state *S, const ad_fmtspec *f, const char *s, size_t n, ad_buf *b) {
    if (f->type != 's') return ad_error(S, "Unknown format code '%c' for object of type 'str'", f->type);
    if (f->sign) return ad_error(S, f->sign == ' ' ? "Space not allowed in string format specifier"
                                                   : "Sign not allowed in string format specifier");
    if (f->no_neg_zero) return ad_error(S, "Negative zero coercion (z) not allowed in string format specifier");
    if (f->alt) return ad_error(S, "Alternate form (#) not allowed in string format specifier");
    if (f->align == '=') return ad_error(S, "'=' alignment not allowed in string format specifier");
    if (f->prec >= 0) n = prefix_bytes(s, n, f->prec);
    int64_t chars = (int64_t)count_chars(s, n);
    int64_t p = f->width > chars ? f->width - chars : 0;
    char align = f->align ? f->align : '<';
    if (align == '>') pad(b, f, p);
    if (align == '^') pad(b, f, p / 2);
    ad_buf_add(b, s, n);
    if (align == '<') pad(b, f, p);
    if (align == '^') pad(b, f, p - p / 2);
    return b->failed ? ad_nomem(S) : ADDSL_OK;
}

/* ---- integers ---- */

static int utf8_encode(char *out, long cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Digits of the integral |x| in base 2, 8 or 16; exact, since dividing an
 * integral double by a power of two is exact. */
static int base_digits(ad_buf *b, double ax, int base, bool upper) {
    const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char tmp[1100];
    size_t w = sizeof tmp;
    do {
        double q = floor(ax / base);
        int r = (int)(ax - q * base);
        tmp[--w] = dig[r];
        ax = q;
    } while (ax > 0 && w > 0);
    return ad_buf_add(b, tmp + w, sizeof tmp - w);
}

static int format_float(ad_state *S, const ad_fmtspec *fs, double x, const char *tname, ad_buf *b);

static int format_int(ad_state *S, const ad_fmtspec *f, double x, const char *tname, ad_buf *b) {
    if (f->type && strchr("eEfFgG%", f->type)) return format_float(S, f, x, tname, b); /* as float(x) */
    if (!f->type || !strchr("bcdnoxX", f->type))
        return ad_error(S, "Unknown format code '%c' for object of type '%s'", f->type, tname);
    if (f->prec >= 0) return ad_error(S, "Precision not allowed in integer format specifier");
    if (f->no_neg_zero) return ad_error(S, "Negative zero coercion (z) not allowed in integer format specifier");
    bool neg = x < 0;
    double ax = fabs(x);
    ad_buf d;
    ad_buf_init(&d, S);
    const char *prefix = "";
    int gsize = 3, rc = ADDSL_OK;
    switch (f->type) {
    case 'c': {
        if (f->alt) { rc = ad_error(S, "Alternate form (#) not allowed with integer format specifier 'c'"); break; }
        if (f->sign) { rc = ad_error(S, "Sign not allowed with integer format specifier 'c'"); break; }
        if (x < 0 || x > 0x10FFFF) { rc = ad_error(S, "%%c arg not in range(0x110000)"); break; }
        char u[4];
        int n = utf8_encode(u, (long)x);
        rc = layout_number(b, f, "", "", "", 0, u, (size_t)n, 3);
        ad_buf_free(&d);
        return rc ? ad_nomem(S) : ADDSL_OK;
    }
    case 'd': case 'n': ad_buf_printf(&d, "%.0f", ax); break;
    case 'x': case 'X': base_digits(&d, ax, 16, f->type == 'X'); prefix = f->type == 'X' ? "0X" : "0x"; gsize = 4; break;
    case 'o': base_digits(&d, ax, 8, false); prefix = "0o"; gsize = 4; break;
    case 'b': base_digits(&d, ax, 2, false); prefix = "0b"; gsize = 4; break;
    case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case '%':
        ad_buf_free(&d);
        return format_float(S, f, x, tname, b);
    default:
        rc = ad_error(S, "Unknown format code '%c' for object of type '%s'", f->type, tname);
    }
    if (!rc && d.failed) rc = ad_nomem(S);
    if (!rc) {
        rc = layout_number(b, f, sign_text(f, neg), f->alt ? prefix : "", d.data ? d.data : "", d.len, "", 0, gsize);
        if (rc) rc = ad_nomem(S);
    }
    ad_buf_free(&d);
    return rc;
}

/* ---- floats ---- */

/* Drops trailing zeros of the fraction (and a bare '.') before any exponent. */
static void strip_zeros(ad_buf *d) {
    char *s = d->data;
    if (!s) return;
    char *dot = strchr(s, '.');
    if (!dot) return;
    char *e = strpbrk(s, "eE");
    char *end = e ? e : s + d->len;
    char *p = end;
    while (p > dot + 1 && p[-1] == '0') p--;
    if (p == dot + 1) p = dot;
    size_t tail = (size_t)(s + d->len - end);
    memmove(p, end, tail + 1);
    d->len = (size_t)(p - s) + tail;
}

/* Python's float format with no type and a precision: 'g', but scientific
 * from exponent p-1 on and at least one digit after the point. */
static void general_dot0(ad_buf *d, double ax, int64_t prec, bool alt) {
    int p = prec == 0 ? 1 : (int)prec;
    char probe[64];
    snprintf(probe, sizeof probe, "%.*e", p - 1 < 40 ? p - 1 : 40, ax);
    int exp10 = atoi(strchr(probe, 'e') + 1);
    if (exp10 < -4 || exp10 >= p - 1) {
        ad_buf_printf(d, alt ? "%#.*e" : "%.*e", p - 1, ax);
        if (!alt) strip_zeros(d);
    } else {
        ad_buf_printf(d, alt ? "%#.*f" : "%.*f", p - 1 - exp10, ax);
        if (!alt) strip_zeros(d);
        if (d->data && !strchr(d->data, '.')) ad_buf_puts(d, ".0");
    }
}

static bool all_zero_digits(const char *s) {
    for (; *s && *s != 'e' && *s != 'E'; s++)
        if (*s >= '1' && *s <= '9') return false;
    return true;
}

static int format_float(ad_state *S, const ad_fmtspec *fs, double x, const char *tname, ad_buf *b) {
    ad_fmtspec f = *fs;
    char t = f.type;
    bool integral = isfinite(x) && x == floor(x);
    if (t && strchr("dboxX", t)) { /* an integral number formats as an integer */
        if (integral) return format_int(S, &f, x, tname, b);
        return ad_error(S, "Unknown format code '%c' for object of type '%s'", t, tname);
    }
    if (t == 'n') t = 'g';
    if (t && !strchr("eEfFgG%", t)) return ad_error(S, "Unknown format code '%c' for object of type '%s'", t, tname);
    bool neg = signbit(x) && !isnan(x);
    double ax = fabs(x);
    bool upper = t == 'E' || t == 'F' || t == 'G';
    int64_t prec = f.prec < 0 ? 6 : f.prec;
    ad_buf d;
    ad_buf_init(&d, S);
    if (!isfinite(x)) {
        f.group = 0; /* no digits to group: zero padding is plain fill */
        const char *w = isnan(x) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf");
        ad_buf_puts(&d, w);
        if (t == '%') ad_buf_puts(&d, "%");
    } else if (t == 0 && f.prec < 0) {
        /* No type and no precision: the text print() uses. */
        char num[64];
        ad_format_number(num, sizeof num, ax);
        ad_buf_puts(&d, num);
        if (ax == 0) neg = false;
    } else if (t == 0) {
        general_dot0(&d, ax, f.prec, f.alt);
    } else if (t == 'f' || t == 'F') {
        ad_buf_printf(&d, f.alt ? "%#.*f" : "%.*f", (int)prec, ax);
    } else if (t == 'e' || t == 'E') {
        ad_buf_printf(&d, f.alt ? "%#.*e" : "%.*e", (int)prec, ax);
        if (upper && d.data) { char *e = strchr(d.data, 'e'); if (e) *e = 'E'; }
    } else if (t == 'g' || t == 'G') {
        ad_buf_printf(&d, f.alt ? "%#.*g" : "%.*g", (int)(prec == 0 ? 1 : prec), ax);
        if (upper && d.data) { char *e = strchr(d.data, 'e'); if (e) *e = 'E'; }
    } else { /* '%' */
        ad_buf_printf(&d, f.alt ? "%#.*f" : "%.*f", (int)prec, ax * 100);
        ad_buf_puts(&d, "%");
    }
    if (d.failed) { ad_buf_free(&d); return ad_nomem(S); }
    if (neg && f.no_neg_zero && isfinite(x) && all_zero_digits(d.data)) neg = false;
    /* The integer part is grouped; the rest (point, fraction, exponent, '%') follows. */
    size_t nd = 0;
    while (nd < d.len && d.data[nd] >= '0' && d.data[nd] <= '9') nd++;
    int rc = layout_number(b, &f, sign_text(&f, neg), "", d.data, nd, d.data + nd, d.len - nd, 3);
    ad_buf_free(&d);
    return rc ? ad_nomem(S) : ADDSL_OK;
}

/* ---- values ---- */

/* Text of v as str() (repr when 'repr') into b. */
static int value_text(ad_state *S, ad_value v, bool repr, ad_buf *b) {
    int rc = ad_value_format(S, v, b, repr);
    if (!rc && b->failed) rc = ad_nomem(S);
    return rc;
}

static int spec_error(ad_state *S, const char *spec, size_t len, char default_type) {
    char err[200];
    ad_fmtspec f;
    if (!ad_format_spec_parse(spec, len, default_type, &f, err, sizeof err)) return ad_error(S, "%s", err);
    return ADDSL_OK;
}

int ad_format_value(ad_state *S, ad_value v, const char *spec, size_t len, int conv, ad_buf *b) {
    if (conv != AD_CONV_NONE) {
        ad_buf t;
        ad_buf_init(&t, S);
        int rc = value_text(S, v, conv == AD_CONV_REPR, &t);
        if (!rc) {
            ad_value sv;
            rc = ad_string_value(S, t.data ? t.data : "", t.len, &sv);
            if (!rc) { rc = ad_format_value(S, sv, spec, len, AD_CONV_NONE, b); ad_value_decref(S, sv); }
        }
        ad_buf_free(&t);
        return rc;
    }
    double x = 0;
    int kind; /* 's' string, 'd' integer, 0 float */
    const char *tname;
    if (v.t == AD_TTENSOR) {
        ad_tensor *t = v.u.tensor;
        if (len == 0 && t->ndim != 0) return value_text(S, v, false, b);
        if (t->numel != 1) {
            ad_buf sh;
            ad_buf_init(&sh, S);
            ad_buf_shape(&sh, t->ndim, t->shape);
            int rc = ad_error(S, "unsupported format string '%.*s' for a tensor of shape %s: only 0-d and one-element "
                              "tensors take a format spec (format t.item() or str(t))",
                              (int)(len > 60 ? 60 : len), spec, sh.data ? sh.data : "?");
            ad_buf_free(&sh);
            return rc;
        }
        int rc = ad_tensor_item(S, t, &x);
        if (rc) return rc;
        /* As PyTorch: a 0-d tensor formats its item(). */
        if (t->dtype == AD_BOOL) v = ad_bool(x != 0);
        else if (t->dtype == AD_INT64) v = ad_int(x);
        else v = ad_num(x);
    }
    if (len == 0) return value_text(S, v, false, b);
    switch (v.t) {
    case AD_TSTR: kind = 's'; tname = "str"; break;
    case AD_TBOOL: kind = 'd'; tname = "bool"; x = v.u.b; break;
    case AD_TINT: kind = 'd'; tname = "int"; x = v.u.n; break;
    case AD_TNUM: kind = 0; tname = "float"; x = v.u.n; break;
    default:
        return ad_error(S, "unsupported format string '%.*s' for a %s (format str(x) instead)",
                        (int)(len > 60 ? 60 : len), spec, ad_type_name(v));
    }
    ad_fmtspec f;
    if (!ad_format_spec_parse(spec, len, (char)kind, &f, NULL, 0)) {
        if (kind == 'd' && v.t == AD_TBOOL) {
            /* Python names the bool in the messages of its int formatting. */
            char err[200];
            ad_format_spec_parse(spec, len, 'd', &f, err, sizeof err);
            char *p = strstr(err, "type 'int'");
            if (p) return ad_error(S, "%.*stype 'bool'%s", (int)(p - err), err, p + 10);
            return ad_error(S, "%s", err);
        }
        return spec_error(S, spec, len, (char)kind);
    }
    if (kind == 's') return format_string(S, &f, v.u.s->data, v.u.s->len, b);
    if (kind == 'd') return format_int(S, &f, x, tname, b);
    return format_float(S, &f, x, tname, b);
}

/* ---- '%' formatting ---- */

/* Items of the right operand: a tuple spreads, anything else is one value. */
typedef struct { const ad_value *items; int64_t n, next; } pargs;

static int next_arg(ad_state *S, pargs *a, ad_value *out) {
    if (a->next >= a->n) return ad_error(S, "not enough arguments for format string");
    *out = a->items[a->next++];
    return ADDSL_OK;
}

/* A number from v for %d/%f: numbers, bools and one-element tensors. */
static int percent_number(ad_state *S, ad_value v, char conv, bool need_int, double *x, bool *is_int) {
    if (v.t == AD_TTENSOR && v.u.tensor->numel == 1) {
        int rc = ad_tensor_item(S, v.u.tensor, x);
        if (rc) return rc;
        *is_int = v.u.tensor->dtype != AD_FLOAT32 && v.u.tensor->dtype != AD_FLOAT64;
    } else if (ad_is_number(v)) {
        *x = v.u.n;
        *is_int = v.t == AD_TINT || (isfinite(v.u.n) && v.u.n == floor(v.u.n));
    } else if (v.t == AD_TBOOL) {
        *x = v.u.b;
        *is_int = true;
    } else {
        return ad_error(S, "%%%c format: %s is required, not %s", conv, need_int ? "an integer" : "a real number",
                        ad_type_name(v));
    }
    if (need_int && !*is_int)
        return ad_error(S, "%%%c format: an integer is required, not float", conv);
    return ADDSL_OK;
}

/* One '%' conversion; *i is at the conversion character on return. One function,
 * longer than most, because the flags, width and precision parsed at its top
 * feed every conversion below, each mapped onto the format-spec engine. */
static int percent_one(ad_state *S, const char *s, size_t n, size_t *i, pargs *a, ad_buf *b) {
    ad_fmtspec f = {.fill = " ", .fill_len = 1, .width = -1, .prec = -1};
    bool left = false, zero = false;
    size_t p = *i;
    if (p < n && s[p] == '(') return ad_error(S, "format requires a mapping");
    for (; p < n && strchr("-+ #0", s[p]); p++) {
        if (s[p] == '-') left = true;
        else if (s[p] == '+') f.sign = '+';
        else if (s[p] == ' ') { if (f.sign != '+') f.sign = ' '; }
        else if (s[p] == '#') f.alt = true;
        else zero = true;
    }
    for (int part = 0; part < 2; part++) {
        int64_t *dst = part ? &f.prec : &f.width;
        if (part) { if (p < n && s[p] == '.') { p++; f.prec = 0; } else break; }
        if (p < n && s[p] == '*') {
            ad_value w;
            double x;
            bool ii;
            int rc = next_arg(S, a, &w);
            if (!rc && !ad_is_number(w)) rc = ad_error(S, "* wants int");
            if (!rc) rc = percent_number(S, w, '*', true, &x, &ii);
            if (rc) return rc;
            if (!part && x < 0) { left = true; x = -x; }
            *dst = x < 0 ? 0 : (int64_t)x;
            p++;
        } else {
            int64_t v;
            if (!digits_at(s, n, &p, &v)) return ad_error(S, "width too big");
            if (v >= 0) *dst = v;
        }
    }
    if (f.width > (int64_t)AD_MAX_STRING || f.prec > FMT_MAX_PREC) return ad_error(S, "width or precision too big");
    while (p < n && (s[p] == 'h' || s[p] == 'l' || s[p] == 'L')) p++;
    if (p >= n) return ad_error(S, "incomplete format");
    char c = s[p];
    *i = p;
    if (c == '%') return ad_buf_puts(b, "%") ? ad_nomem(S) : ADDSL_OK;
    f.align = left ? '<' : '>';
    ad_value v;
    int rc = next_arg(S, a, &v);
    if (rc) return rc;
    if (c == 's' || c == 'r' || c == 'a') {
        ad_buf t;
        ad_buf_init(&t, S);
        rc = value_text(S, v, c != 's', &t);
        f.type = 's';
        if (!rc) rc = format_string(S, &f, t.data ? t.data : "", t.len, b);
        ad_buf_free(&t);
        return rc;
    }
    if (c == 'c') {
        f.type = 's';
        if (v.t == AD_TSTR) {
            if (count_chars(v.u.s->data, v.u.s->len) != 1) return ad_error(S, "%%c requires int or char");
            return format_string(S, &f, v.u.s->data, v.u.s->len, b);
        }
        double x;
        bool ii;
        if (!ad_is_number(v) || (rc = percent_number(S, v, 'c', true, &x, &ii)) != 0)
            return rc ? rc : ad_error(S, "%%c requires int or char");
        if (x < 0 || x > 0x10FFFF) return ad_error(S, "%%c arg not in range(0x110000)");
        char u[4];
        int k = utf8_encode(u, (long)x);
        return format_string(S, &f, u, (size_t)k, b);
    }
    if (!strchr("diuoxXeEfFgG", c))
        return ad_error(S, "unsupported format character '%c' (0x%x) at index %zu", c, (unsigned)(unsigned char)c, p);
    if (zero && !left) { strcpy(f.fill, "0"); f.align = '='; }
    double x;
    bool is_int;
    bool need_int = strchr("oxX", c) != NULL;
    rc = percent_number(S, v, c, need_int, &x, &is_int);
    if (rc) return rc;
    if (strchr("diuoxX", c)) {
        if (isnan(x)) return ad_error(S, "cannot convert float NaN to integer");
        if (isinf(x)) return ad_error(S, "cannot convert float infinity to integer");
        x = trunc(x);
        f.type = c == 'i' || c == 'u' ? 'd' : c;
        int64_t prec = f.prec;
        f.prec = -1;
        if (prec <= 0) return format_int(S, &f, x, "int", b);
        /* "%.3d": at least prec digits, as C. */
        ad_fmtspec g = f;
        g.width = -1;
        g.align = 0;
        g.sign = 0;
        strcpy(g.fill, " ");
        ad_buf d;
        ad_buf_init(&d, S);
        rc = format_int(S, &g, fabs(x), "int", &d);
        if (!rc) {
            const char *ds = d.data ? d.data : "";
            size_t skip = f.alt && c != 'd' && c != 'i' && c != 'u' ? 2 : 0;
            int64_t nz = prec - (int64_t)(d.len - skip);
            ad_buf z;
            ad_buf_init(&z, S);
            for (int64_t k = 0; k < nz; k++) ad_buf_puts(&z, "0");
            ad_buf_add(&z, ds + skip, d.len - skip);
            f.group = 0;
            rc = layout_number(b, &f, sign_text(&f, x < 0), skip ? (c == 'X' ? "0X" : c == 'x' ? "0x" : "0o") : "",
                               z.data ? z.data : "", z.len, "", 0, 3);
            if (rc || z.failed) rc = ad_nomem(S);
            ad_buf_free(&z);
        }
        ad_buf_free(&d);
        return rc;
    }
    f.type = c;
    if (f.prec < 0) f.prec = 6;
    return format_float(S, &f, x, "float", b);
}

int ad_format_percent(ad_state *S, const ad_str *fmt, ad_value args, ad_value *out) {
    pargs a = {&args, 1, 0};
    if (args.t == AD_TTUPLE) { a.items = args.u.l->items; a.n = args.u.l->len; }
    ad_buf b;
    ad_buf_init(&b, S);
    const char *s = fmt->data;
    size_t n = fmt->len;
    int rc = ADDSL_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        if (s[i] != '%') { ad_buf_add(&b, s + i, 1); continue; }
        i++;
        rc = percent_one(S, s, n, &i, &a, &b);
    }
    if (!rc && a.next < a.n) rc = ad_error(S, "not all arguments converted during string formatting");
    if (!rc && b.failed) rc = ad_nomem(S);
    if (!rc) rc = ad_string_value(S, b.data ? b.data : "", b.len, out);
    ad_buf_free(&b);
    return rc;
}

/* ---- str.format ---- */

typedef struct {
    const ad_value *args;
    int nargs;
    int auto_next; /* -1 once a manual index was used */
    bool manual;
} fargs;

static int field_value(ad_state *S, fargs *fa, const char *name, size_t n, ad_value *out) {
    int64_t idx;
    if (n == 0) {
        if (fa->manual) return ad_error(S, "cannot switch from manual field specification to automatic field numbering");
        idx = fa->auto_next++;
    } else {
        if (fa->auto_next > 0) return ad_error(S, "cannot switch from automatic field numbering to manual field specification");
        size_t p = 0;
        if (!digits_at(name, n, &p, &idx) || p != n || idx < 0)
            return ad_error(S, "format(): named field '{%.*s}' needs a keyword argument, which .format() does not take; "
                            "use an f-string: f\"{%.*s}\"", (int)(n > 40 ? 40 : n), name, (int)(n > 40 ? 40 : n), name);
        fa->manual = true;
    }
    if (idx >= fa->nargs) return ad_error(S, "Replacement index %lld out of range for positional args tuple", (long long)idx);
    *out = fa->args[idx];
    return ADDSL_OK;
}

static int format_method_text(ad_state *S, const char *s, size_t n, fargs *fa, int depth, ad_buf *b);

/* One replacement field s[0..n) (between the braces). */
static int format_field(ad_state *S, const char *s, size_t n, fargs *fa, int depth, ad_buf *b) {
    size_t p = 0;
    while (p < n && s[p] != '!' && s[p] != ':') p++;
    ad_value v;
    int rc = field_value(S, fa, s, p, &v);
    if (rc) return rc;
    int conv = AD_CONV_NONE;
    if (p < n && s[p] == '!') {
        if (p + 1 >= n) return ad_error(S, "end of string while looking for conversion specifier");
        char c = s[p + 1];
        if (c == 'r' || c == 'a') conv = AD_CONV_REPR;
        else if (c == 's') conv = AD_CONV_STR;
        else return ad_error(S, "Unknown conversion specifier %c", c);
        p += 2;
        if (p < n && s[p] != ':') return ad_error(S, "expected ':' after conversion specifier");
    }
    const char *spec = "";
    size_t slen = 0;
    ad_buf sb;
    ad_buf_init(&sb, S);
    if (p < n) {
        /* The spec may hold fields of its own: {:{width}.{prec}f}. */
        if (depth >= 1 && memchr(s + p + 1, '{', n - p - 1)) { ad_buf_free(&sb); return ad_error(S, "Max string recursion exceeded"); }
        rc = format_method_text(S, s + p + 1, n - p - 1, fa, depth + 1, &sb);
        if (rc) { ad_buf_free(&sb); return rc; }
        spec = sb.data ? sb.data : "";
        slen = sb.len;
    }
    rc = ad_format_value(S, v, spec, slen, conv, b);
    ad_buf_free(&sb);
    return rc;
}

static int format_method_text(ad_state *S, const char *s, size_t n, fargs *fa, int depth, ad_buf *b) {
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '}') {
            if (i + 1 < n && s[i + 1] == '}') { ad_buf_add(b, "}", 1); i++; continue; }
            return ad_error(S, "Single '}' encountered in format string");
        }
        if (c != '{') { ad_buf_add(b, &c, 1); continue; }
        if (i + 1 < n && s[i + 1] == '{') { ad_buf_add(b, "{", 1); i++; continue; }
        size_t j = i + 1;
        int level = 1;
        while (j < n) {
            if (s[j] == '{') level++;
            else if (s[j] == '}' && --level == 0) break;
            j++;
        }
        if (j >= n) return ad_error(S, "Single '{' encountered in format string");
        int rc = format_field(S, s + i + 1, j - i - 1, fa, depth, b);
        if (rc) return rc;
        i = j;
    }
    return b->failed ? ad_nomem(S) : ADDSL_OK;
}

int ad_format_method(ad_state *S, const ad_str *fmt, const ad_value *args, int nargs, ad_value *out) {
    fargs fa = {args, nargs, 0, false};
    ad_buf b;
    ad_buf_init(&b, S);
    int rc = format_method_text(S, fmt->data, fmt->len, &fa, 0, &b);
    if (!rc) rc = ad_string_value(S, b.data ? b.data : "", b.len, out);
    ad_buf_free(&b);
    return rc;
}

/* system/textload.c: load() of .csv and .txt files of numbers: one row per line,
 * errors that name the file, line and column of the bad field. */
#include "system/textload.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

/* The parsed numbers, as doubles for float dtypes and as int64 for int64, so
 * that integers beyond 2^53 keep every digit. */
typedef union num { double d; int64_t i; } num;
typedef struct numbuf { num *v; int64_t n, cap; ad_dtype dt; } numbuf;

static int push(ad_state *S, numbuf *b, num x) {
    if (b->n == b->cap) {
        int64_t nc = b->cap ? b->cap * 2 : 256;
        num *p = ad_realloc(S, b->v, (size_t)nc * sizeof *p);
        if (!p) return ADDSL_ENOMEM;
        b->v = p;
        b->cap = nc;
    }
    b->v[b->n++] = x;
    return ADDSL_OK;
}

static int read_all(ad_state *S, const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return ad_error_code(S, ADDSL_EIO, "load(): cannot open '%s': %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = ad_malloc(S, cap);
    int rc = buf ? ADDSL_OK : ADDSL_ENOMEM;
    while (!rc) {
        if (n + 1 >= cap) {
            if (S->cfg.memory_limit && cap > S->cfg.memory_limit) {
                rc = ad_error(S, "load('%s'): the file is larger than the memory limit", path);
                break;
            }
            char *p = ad_realloc(S, buf, cap * 2);
            if (!p) { rc = ADDSL_ENOMEM; break; }
            buf = p;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) rc = ad_error_code(S, ADDSL_EIO, "load(): cannot read '%s'", path);
            break;
        }
    }
    fclose(f);
    if (rc) { ad_free(S, buf); return rc; }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return ADDSL_OK;
}

static bool all_digits(const char *s) {
    if (*s == '+' || *s == '-') s++;
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

/* One field [s, e) of line 'line' starting at column 'col': a number (what
 * Python's float() reads: decimal, exponent, inf, nan; not C's hex floats or
 * nan(...)) or an error. An int64 field is read exactly. */
static int field(ad_state *S, const char *path, int64_t line, int64_t col, const char *s, const char *e, ad_dtype dt,
                 num *x) {
    while (s < e && isspace((unsigned char)*s)) { s++; col++; }
    while (e > s && isspace((unsigned char)e[-1])) e--;
    char tmp[128];
    size_t n = (size_t)(e - s);
    if (n == 0) return ad_error(S, "load('%s'): line %lld, column %lld: an empty field where a number was expected",
                                path, (long long)line, (long long)col);
    /* The copy below would end the field at a NUL and read "2\0" as 2. */
    const char *nul = memchr(s, '\0', n);
    if (nul) return ad_error(S, "load('%s'): line %lld, column %lld: a NUL byte in a field", path, (long long)line,
                             (long long)(col + (nul - s)));
    if (n >= sizeof tmp) n = sizeof tmp - 1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    bool too_long = (size_t)(e - s) >= sizeof tmp;
    char *end = NULL;
    errno = 0;
    if (dt == AD_INT64 && !too_long && all_digits(tmp)) {
        x->i = strtoll(tmp, &end, 10);
        if (errno == ERANGE)
            return ad_error(S, "load('%s'): line %lld, column %lld: %s is out of the range of int64", path,
                            (long long)line, (long long)col, tmp);
        return ADDSL_OK;
    }
    double d = strtod(tmp, &end);
    if (end == tmp || *end || too_long || strpbrk(tmp, "xX("))
        return ad_error(S, "load('%s'): line %lld, column %lld: could not convert '%.40s' to a number", path,
                        (long long)line, (long long)col, tmp);
    if (dt == AD_INT64) {
        /* 2^63 is the first double past int64's range. */
        if (d != floor(d) || !(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
            return ad_error(S, "load('%s'): line %lld, column %lld: '%.40s' is not an integer (dtype=int64)", path,
                            (long long)line, (long long)col, tmp);
        x->i = (int64_t)d;
    } else {
        x->d = d;
    }
    return ADDSL_OK;
}

/* Parses one line [s, e) into b; *ncols is its number of fields. */
static int parse_line(ad_state *S, const char *path, int64_t line, const char *s, const char *e, char delim,
                      numbuf *b, int64_t *ncols) {
    const char *start = s;
    *ncols = 0;
    while (s < e) {
        const char *f = s, *fe;
        if (delim) {
            fe = memchr(s, delim, (size_t)(e - s));
            if (!fe) fe = e;
        } else {
            while (f < e && isspace((unsigned char)*f)) f++;
            if (f == e) break;
            fe = f;
            while (fe < e && !isspace((unsigned char)*fe)) fe++;
        }
        num x;
        int rc = field(S, path, line, (int64_t)(f - start) + 1, f, fe, b->dt, &x);
        if (!rc) rc = push(S, b, x);
        if (rc) return rc;
        (*ncols)++;
        s = fe;
        if (delim && s < e) {
            s++;
            if (s == e) return field(S, path, line, (int64_t)(s - start) + 1, s, e, b->dt, &x); /* a trailing separator */
        }
    }
    return ADDSL_OK;
}

static int parse_text(ad_state *S, const char *path, const char *text, size_t len, char delim, int64_t skip,
                      numbuf *b, int64_t *rows, int64_t *cols) {
    const char *p = text, *end = text + len;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3; /* a UTF-8 byte order mark (spreadsheets write one) */
    int64_t line = 0, first = 0;
    *rows = 0;
    *cols = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line++;
        const char *content_end = memchr(p, '#', (size_t)(le - p));
        if (!content_end) content_end = le;
        while (content_end > p && (content_end[-1] == '\r' || isspace((unsigned char)content_end[-1]))) content_end--;
        const char *q = p;
        while (q < content_end && isspace((unsigned char)*q)) q++;
        if (line > skip && q < content_end) {
            int64_t n = 0;
            int rc = parse_line(S, path, line, p, content_end, delim, b, &n);
            if (rc) return rc;
            if (*rows == 0) { *cols = n; first = line; }
            else if (n != *cols)
                return ad_error(S, "load('%s'): line %lld has %lld columns, but line %lld has %lld", path,
                                (long long)line, (long long)n, (long long)first, (long long)*cols);
            (*rows)++;
        }
        p = nl ? nl + 1 : end;
    }
    return ADDSL_OK;
}

int ad_text_load(ad_state *S, const char *path, char delim, int64_t skip, ad_dtype dt, ad_tensor **out) {
    char *text = NULL;
    size_t len = 0;
    int rc = read_all(S, path, &text, &len);
    if (rc) return rc;
    numbuf b = {NULL, 0, 0, dt};
    int64_t rows = 0, cols = 0;
    rc = parse_text(S, path, text, len, delim, skip, &b, &rows, &cols);
    ad_free(S, text);
    if (!rc) {
        /* No data is numpy.loadtxt(ndmin=2)'s shape (0, 1). */
        int64_t shape[2] = {rows, rows ? cols : 1};
        ad_tensor *t = ad_tensor_empty(S, dt, 2, shape);
        if (!t) rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
        else if (dt == AD_INT64)
            for (int64_t i = 0; i < b.n; i++) ((int64_t *)ad_tensor_data(t))[i] = b.v[i].i;
        else if (dt == AD_FLOAT64)
            for (int64_t i = 0; i < b.n; i++) ((double *)ad_tensor_data(t))[i] = b.v[i].d;
        else
            for (int64_t i = 0; i < b.n; i++) ((float *)ad_tensor_data(t))[i] = (float)b.v[i].d;
        if (!rc) *out = t;
    }
    ad_free(S, b.v);
    return rc;
}

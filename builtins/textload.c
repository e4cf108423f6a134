/* textload.c: load() of .csv and .txt files of numbers: one row per line,
 * errors that name the file, line and column of the bad field. */
#include "textload.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

typedef struct numbuf { double *v; int64_t n, cap; } numbuf;

static int push(ad_state *S, numbuf *b, double x) {
    if (b->n == b->cap) {
        int64_t nc = b->cap ? b->cap * 2 : 256;
        double *p = ad_realloc(S, b->v, (size_t)nc * sizeof *p);
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

/* One field [s, e) of line 'line' starting at column 'col': a number or an error. */
static int field(ad_state *S, const char *path, int64_t line, int64_t col, const char *s, const char *e, double *x) {
    while (s < e && isspace((unsigned char)*s)) { s++; col++; }
    while (e > s && isspace((unsigned char)e[-1])) e--;
    char tmp[128];
    size_t n = (size_t)(e - s);
    if (n == 0) return ad_error(S, "load('%s'): line %lld, column %lld: an empty field where a number was expected",
                                path, (long long)line, (long long)col);
    if (n >= sizeof tmp) n = sizeof tmp - 1;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end = NULL;
    *x = strtod(tmp, &end);
    if (end == tmp || *end || (size_t)(e - s) >= sizeof tmp)
        return ad_error(S, "load('%s'): line %lld, column %lld: could not convert '%.40s' to a number", path,
                        (long long)line, (long long)col, tmp);
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
        double x;
        int rc = field(S, path, line, (int64_t)(f - start) + 1, f, fe, &x);
        if (!rc) rc = push(S, b, x);
        if (rc) return rc;
        (*ncols)++;
        s = fe;
        if (delim && s < e) {
            s++;
            if (s == e) return field(S, path, line, (int64_t)(s - start) + 1, s, e, &x); /* a trailing separator */
        }
    }
    return ADDSL_OK;
}

static int parse_text(ad_state *S, const char *path, const char *text, size_t len, char delim, int64_t skip,
                      numbuf *b, int64_t *rows, int64_t *cols) {
    const char *p = text, *end = text + len;
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
    numbuf b = {NULL, 0, 0};
    int64_t rows = 0, cols = 0;
    rc = parse_text(S, path, text, len, delim, skip, &b, &rows, &cols);
    ad_free(S, text);
    if (!rc) {
        int64_t shape[2] = {rows, cols};
        ad_tensor *t = ad_tensor_empty(S, dt, 2, shape);
        if (!t) rc = S->errcode ? S->errcode : ADDSL_ENOMEM;
        for (int64_t i = 0; !rc && i < b.n; i++) {
            if (dt == AD_INT64 && b.v[i] != floor(b.v[i])) {
                rc = ad_error(S, "load('%s'): %g is not an integer (dtype=int64)", path, b.v[i]);
                break;
            }
            ad_tensor_set_flat(t, i, b.v[i]);
        }
        if (rc) ad_tensor_decref(S, t); else *out = t;
    }
    ad_free(S, b.v);
    return rc;
}

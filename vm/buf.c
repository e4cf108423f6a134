/* buf.c: growable text buffer on the state's allocator.
 * Appends after a failure are no-ops so callers can check once at the end. */
#include "buf.h"

#include <stdio.h>
#include <string.h>

#include "state.h"

void ad_buf_init(ad_buf *b, ad_state *S) {
    b->S = S; b->data = NULL; b->len = 0; b->cap = 0; b->failed = 0;
}

void ad_buf_free(ad_buf *b) {
    ad_free(b->S, b->data);
    b->data = NULL; b->len = b->cap = 0;
}

static int buf_reserve(ad_buf *b, size_t extra) {
    if (b->failed) return ADDSL_ENOMEM;
    if (b->len + extra + 1 <= b->cap) return ADDSL_OK;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1) {
        if (cap > AD_MAX_STRING) { b->failed = 1; return ad_error_code(b->S, ADDSL_ENOMEM, "string too long"); }
        cap *= 2;
    }
    char *p = ad_realloc(b->S, b->data, cap);
    if (!p) { b->failed = 1; return ADDSL_ENOMEM; }
    b->data = p; b->cap = cap;
    return ADDSL_OK;
}

int ad_buf_add(ad_buf *b, const char *s, size_t n) {
    int rc = buf_reserve(b, n);
    if (rc) return rc;
    if (n) memcpy(b->data + b->len, s, n);  /* an empty buffer's data may be NULL */
    b->len += n;
    b->data[b->len] = '\0';
    return ADDSL_OK;
}

int ad_buf_puts(ad_buf *b, const char *s) { return ad_buf_add(b, s, strlen(s)); }

int ad_buf_vprintf(ad_buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return ad_error(b->S, "bad format");
    int rc = buf_reserve(b, (size_t)n);
    if (rc) return rc;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return ADDSL_OK;
}

int ad_buf_printf(ad_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = ad_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int ad_buf_shape(ad_buf *b, int ndim, const int64_t *shape) {
    ad_buf_puts(b, "[");
    for (int i = 0; i < ndim; i++)
        ad_buf_printf(b, i ? ", %lld" : "%lld", (long long)shape[i]);
    return ad_buf_puts(b, "]");
}

/* state.c: errors, the allocator and output of an addsl_state.
 * Out of memory uses a fixed message so reporting it never allocates. */
#include "state.h"

#include "c_locale.h"

#include <stdio.h>
#include <string.h>

int ad_verror(ad_state *S, int code, const char *fmt, va_list ap) {
    vsnprintf(S->errmsg, sizeof S->errmsg, fmt, ap);
    S->errcode = code;
    return code;
}

int ad_error_code(ad_state *S, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ad_verror(S, code, fmt, ap);
    va_end(ap);
    return code;
}

int ad_error(ad_state *S, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ad_verror(S, ADDSL_ERUNTIME, fmt, ap);
    va_end(ap);
    return ADDSL_ERUNTIME;
}

int ad_nomem(ad_state *S) {
    static const char msg[] = "out of memory";
    memcpy(S->errmsg, msg, sizeof msg);
    S->errcode = ADDSL_ENOMEM;
    return ADDSL_ENOMEM;
}

void ad_clear_error(ad_state *S) {
    if (S->errcode == ADDSL_ENOMEM) S->nomem_cleared++;
    S->errmsg[0] = '\0';
    S->errcode = ADDSL_OK;
}

void *ad_realloc(ad_state *S, void *p, size_t n) {
    if (n == 0) n = 1;
    void *q = S->cfg.alloc(S->cfg.alloc_ud, p, n);
    if (!q) ad_nomem(S);
    return q;
}

void *ad_malloc(ad_state *S, size_t n) { return ad_realloc(S, NULL, n); }

void *ad_calloc(ad_state *S, size_t count, size_t size) {
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) { ad_nomem(S); return NULL; }
    void *p = ad_malloc(S, n);
    if (p) memset(p, 0, n);
    return p;
}

void ad_free(ad_state *S, void *p) {
    if (p) S->cfg.alloc(S->cfg.alloc_ud, p, 0);
}

/* The write callback is the host's code: it runs in the host's locale. */
void ad_write(ad_state *S, const char *text, size_t len, int is_err) {
    locale_t lib = ad_c_locale_host(S);
    if (S->bar_shown && !is_err && len) {
        /* Normal output while a progress bar is drawn: wipe the bar first so
         * the text starts its own line (the next step draws the bar again). */
        S->bar_shown = false;
        S->cfg.write(S->cfg.write_ud, "\r\033[K", 4, 1);
    }
    S->cfg.write(S->cfg.write_ud, text, len, is_err);
    uselocale(lib); /* (locale_t)0, outside an entry point, changes nothing */
}

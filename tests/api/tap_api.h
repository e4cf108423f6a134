/* tap_api.h: a tiny TAP producer for the C API tests, which see only
 * include/addsl.h (no internal headers). */
#ifndef ADDSL_TAP_API_H
#define ADDSL_TAP_API_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_run, tap_failed;

static inline void ok(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void ok(int pass, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tap_run++;
    if (!pass) tap_failed++;
    printf("%sok %d - ", pass ? "" : "not ", tap_run);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

static inline int tap_done(void) {
    printf("1..%d\n", tap_run);
    return tap_failed ? 1 : 0;
}

static inline int contains(const char *s, const char *sub) { return s && strstr(s, sub) != NULL; }

#endif

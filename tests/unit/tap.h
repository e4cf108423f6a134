/* tap.h: a tiny TAP producer for the C unit tests, plus a hand-built state
 * so module tests can run without the rest of the interpreter. */
#ifndef AD_TAP_H
#define AD_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/heap.h"
#include "state.h"

typedef struct tap {
    int planned, run, failed;
} tap;

static tap tap_state;

static inline void plan(int n) {
    tap_state.planned = n;
    printf("1..%d\n", n);
}

static inline int tap_vreport(int pass, const char *fmt, va_list ap) {
    tap_state.run++;
    if (!pass) tap_state.failed++;
    printf("%sok %d - ", pass ? "" : "not ", tap_state.run);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    return pass;
}

static inline int ok(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int ok(int pass, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tap_vreport(pass, fmt, ap);
    va_end(ap);
    return pass;
}

static inline int is_double(double got, double want, double tol, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int is_double(double got, double want, double tol, const char *fmt, ...) {
    int pass = fabs(got - want) <= tol || (isnan(got) && isnan(want)) || got == want;
    va_list ap;
    va_start(ap, fmt);
    tap_vreport(pass, fmt, ap);
    va_end(ap);
    if (!pass) printf("#   got %.17g, want %.17g\n", got, want);
    return pass;
}

/* Compares strings, printing both on a mismatch. */
static inline int is_str(const char *got, const char *want, const char *name) {
    int pass = got && strcmp(got, want) == 0;
    ok(pass, "%s", name);
    if (!pass) printf("#   got:  [%s]\n#   want: [%s]\n", got ? got : "(null)", want);
    return pass;
}

/* Exit status for the test program. */
static inline int done_testing(void) {
    if (tap_state.planned != tap_state.run)
        printf("# planned %d tests but ran %d\n", tap_state.planned, tap_state.run);
    return tap_state.failed || tap_state.planned != tap_state.run;
}

static inline void *test_alloc(void *ud, void *p, size_t n) {
    (void)ud;
    if (n == 0) { free(p); return NULL; }
    return realloc(p, n);
}

/* A state with just an allocator and a heap: enough for vm/ modules. */
static inline ad_state *test_state(size_t limit) {
    ad_state *S = calloc(1, sizeof *S);
    if (!S) return NULL;
    ad_gc_init(&S->gc); /* containers link into its lists (vm/gc.h) */
    S->cfg.alloc = test_alloc;
    S->cfg.memory_limit = limit;
    S->cfg.max_depth = AD_DEFAULT_MAX_DEPTH;
    S->grad_enabled = true;
    S->heap = ad_heap_new(S);
    if (!S->heap) { free(S); return NULL; }
    return S;
}

static inline void test_state_close(ad_state *S) {
    if (!S) return;
    ad_heap_free(S, S->heap);
    free(S);
}

#endif

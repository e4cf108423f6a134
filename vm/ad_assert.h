/* ad_assert.h: checks of the interpreter's own invariants (refcounts, value
 * tags, register bounds, heap classes, view bounds, trace and plan links).
 *
 * A failed check is a bug in addsl, never a script's error: scripts get
 * ad_error. So the checks run only in a build configured with
 * --enable-debug, --enable-asserts or --enable-asan (configure defines
 * AD_DEBUG), where a failure prints file:line, the function and the broken
 * condition and aborts, so the debugger or the sanitizer's report stops at
 * the bug. A release build compiles them out: the condition is never
 * evaluated (sizeof keeps it type-checked and its variables used), and the
 * library never aborts. */
#ifndef AD_ASSERT_H
#define AD_ASSERT_H

#ifdef AD_DEBUG
#include <stdio.h>
#include <stdlib.h>

/* Out of line in each file that fails, cold so the checks cost the hot
 * loops one predicted branch each. */
__attribute__((noreturn, cold, unused)) static void ad_assert_fail(const char *file, int line, const char *fn,
                                                                   const char *what) {
    fprintf(stderr, "%s:%d: %s: addsl internal check failed: %s\n", file, line, fn, what);
    fflush(stderr);
    abort();
}
#define ad_assert(cond) (__builtin_expect(!!(cond), 1) ? (void)0 : ad_assert_fail(__FILE__, __LINE__, __func__, #cond))
/* A check that walks a whole structure (every link of a list): the same
 * as ad_assert, named so that a reader sees its cost. */
#define ad_assert_slow(cond) ad_assert(cond)
#define AD_ASSERTS_ON 1
#else
#define ad_assert(cond) ((void)sizeof(!(cond)))
#define ad_assert_slow(cond) ((void)sizeof(!(cond)))
#define AD_ASSERTS_ON 0
#endif

#endif

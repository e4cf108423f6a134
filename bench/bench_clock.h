/* bench_clock.h: the wall clock and the median's comparison the C timers in
 * bench/ share; included by its path beside them, so their .sh scripts need
 * no -I. Static inline: a file that uses one of the two is still -Wall clean. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock (_POSIX_C_SOURCE 199309L before any include). */
static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* qsort's order for doubles. */
static inline int cmp_double(const void *x, const void *y) {
    double d = *(const double *)x - *(const double *)y;
    return (d > 0) - (d < 0);
}

#endif

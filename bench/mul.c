/* mul.c: plain C baseline for bench/run.sh, c[i] = a[i] * b[i] over 1e7 float32.
 * Prints "mul_c_alloc SECONDS" (fresh result buffer per run, as `a * b` makes) and
 * "mul_c_prealloc SECONDS" (one reused buffer), medians of REPS after a warm-up. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

enum { N = 10000000, REPS = 7 };

static void mul(float *restrict c, const float *restrict a, const float *restrict b, long n)
{
    for (long i = 0; i < n; i++)
        c[i] = a[i] * b[i];
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

/* Keeps the product observable so the compiler cannot drop the loop. */
static volatile float sink;

static double run_alloc(const float *a, const float *b)
{
    double t0 = now();
    float *c = malloc(sizeof(float) * N);
    if (!c)
        return -1.0;
    mul(c, a, b, N);
    double dt = now() - t0;
    sink = c[N / 2];
    free(c);
    return dt;
}

static double run_prealloc(float *c, const float *a, const float *b)
{
    double t0 = now();
    mul(c, a, b, N);
    double dt = now() - t0;
    sink = c[N / 3];
    return dt;
}

int main(void)
{
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N);
    float *c = malloc(sizeof(float) * N);
    double t[REPS];
    if (!a || !b || !c) {
        fputs("mul.c: out of memory\n", stderr);
        return 1;
    }
    srand(0);
    for (long i = 0; i < N; i++) {
        a[i] = (float)rand() / (float)RAND_MAX - 0.5f;
        b[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    }
    run_alloc(a, b);
    for (int r = 0; r < REPS; r++)
        t[r] = run_alloc(a, b);
    printf("mul_c_alloc %.9g\n", median(t, REPS));
    run_prealloc(c, a, b);
    for (int r = 0; r < REPS; r++)
        t[r] = run_prealloc(c, a, b);
    printf("mul_c_prealloc %.9g\n", median(t, REPS));
    free(a);
    free(b);
    free(c);
    return 0;
}

/* sgemm.c: C baseline for bench/run.sh, one 1000x1000 float32 cblas_sgemm from OpenBLAS.
 * Prints "matmul_c SECONDS" and "blas_threads N", the median of REPS after a warm-up. */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

enum { M = 1000, REPS = 7 };

static double once(const float *a, const float *b, float *c)
{
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, M, M,
                1.0f, a, M, b, M, 0.0f, c, M);
    return now() - t0;
}

int main(void)
{
    size_t n = (size_t)M * M;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    float *c = malloc(sizeof(float) * n);
    double t[REPS];
    if (!a || !b || !c) {
        fputs("sgemm.c: out of memory\n", stderr);
        return 1;
    }
    srand(0);
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)rand() / (float)RAND_MAX - 0.5f;
        b[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    }
    once(a, b, c);
    for (int r = 0; r < REPS; r++)
        t[r] = once(a, b, c);
    qsort(t, REPS, sizeof *t, cmp_double);
    printf("matmul_c %.9g\n", t[REPS / 2]);
    printf("blas_threads %d\n", openblas_get_num_threads());
    free(a);
    free(b);
    free(c);
    return 0;
}

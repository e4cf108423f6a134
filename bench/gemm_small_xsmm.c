/* gemm_small_xsmm.c: batched small matrix products, addsl's hand kernel (kernels/gemm_small.c)
 * against libxsmm's JIT kernels and a cblas call per matrix; built by bench/gemm_small_xsmm.sh
 * only where libxsmm is installed (never by make check). Prints one line per size and dtype:
 * microseconds per batch of BATCH products (median of REPS) and the largest difference. */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <libxsmm.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"
#include "kernels/reduce.h"

enum { BATCH = 1000, REPS = 21 };

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return t[n / 2];
}

/* Row-major c = a b for BATCH contiguous n x n matrices, one way each. */
typedef enum { HAND, XSMM, XSMM_DISPATCH, BLAS, NWAYS } way;
static const char *const WAY_NAMES[NWAYS] = {"hand", "xsmm", "xsmm+dispatch", "cblas/matrix"};

/* libxsmm is column-major: the row-major c = a b is the column-major c' = b' a', so the
 * kernel gets b where it expects A and a where it expects B. */
#define DEF_RUN(SUF, T, XT, DISPATCH, CBLAS)                                                   \
    static void run_##SUF(way w, int n, const T *a, const T *b, T *c) {                       \
        const int64_t g[10] = {BATCH, n, n, n, (int64_t)n * n, n, 1, (int64_t)n * n, n, 1};   \
        const T alpha = 1, beta = 0;                                                           \
        const int flags = LIBXSMM_GEMM_FLAG_NONE;                                              \
        static XT cached;                                                                      \
        static int cached_n;                                                                   \
        switch (w) {                                                                           \
        case HAND: ad_red_gemm_small_##SUF(a, b, c, g, 1.0, 0.0); break;                      \
        case XSMM:                                                                             \
            if (cached_n != n) {                                                               \
                cached = DISPATCH(n, n, n, NULL, NULL, NULL, &alpha, &beta, &flags, NULL);     \
                cached_n = n;                                                                  \
            }                                                                                  \
            for (int t = 0; t < BATCH; t++)                                                    \
                cached(b + (size_t)t * n * n, a + (size_t)t * n * n, c + (size_t)t * n * n);   \
            break;                                                                             \
        case XSMM_DISPATCH: {                                                                  \
            XT f = DISPATCH(n, n, n, NULL, NULL, NULL, &alpha, &beta, &flags, NULL);           \
            for (int t = 0; t < BATCH; t++)                                                    \
                f(b + (size_t)t * n * n, a + (size_t)t * n * n, c + (size_t)t * n * n);        \
            break;                                                                             \
        }                                                                                      \
        default:                                                                               \
            for (int t = 0; t < BATCH; t++)                                                    \
                CBLAS(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, alpha,               \
                      a + (size_t)t * n * n, n, b + (size_t)t * n * n, n, beta,                \
                      c + (size_t)t * n * n, n);                                               \
        }                                                                                      \
    }                                                                                          \
    static void bench_##SUF(const char *dn, int n) {                                           \
        size_t sz = (size_t)BATCH * n * n;                                                     \
        T *a = malloc(sz * sizeof *a), *b = malloc(sz * sizeof *b), *c = malloc(sz * sizeof *c); \
        double *ref = malloc(sz * sizeof *ref);                                                \
        if (!a || !b || !c || !ref) { fprintf(stderr, "out of memory\n"); exit(1); }          \
        for (size_t i = 0; i < sz; i++) {                                                      \
            a[i] = (T)(rand() / (double)RAND_MAX - 0.5);                                       \
            b[i] = (T)(rand() / (double)RAND_MAX - 0.5);                                       \
        }                                                                                      \
        /* the naive product in double, to check every way against */                         \
        for (int t = 0; t < BATCH; t++)                                                        \
            for (int i = 0; i < n; i++)                                                        \
                for (int j = 0; j < n; j++) {                                                  \
                    double s = 0;                                                              \
                    for (int p = 0; p < n; p++)                                                \
                        s += (double)a[(size_t)t * n * n + i * n + p] * b[(size_t)t * n * n + p * n + j]; \
                    ref[(size_t)t * n * n + i * n + j] = s;                                    \
                }                                                                              \
        printf("%-4s %3d", dn, n);                                                             \
        for (int w = 0; w < NWAYS; w++) {                                                      \
            double ts[REPS], err = 0;                                                          \
            run_##SUF((way)w, n, a, b, c);                                                     \
            for (int r = 0; r < REPS; r++) {                                                   \
                double t0 = now();                                                             \
                run_##SUF((way)w, n, a, b, c);                                                 \
                ts[r] = now() - t0;                                                            \
            }                                                                                  \
            for (size_t i = 0; i < sz; i++) err = fmax(err, fabs((double)c[i] - ref[i]));     \
            printf("  %10.2f %8.1e", median(ts, REPS) * 1e6, err);                             \
        }                                                                                      \
        printf("\n");                                                                          \
        free(a); free(b); free(c); free(ref);                                                  \
    }

DEF_RUN(f64, double, libxsmm_dmmfunction, libxsmm_dmmdispatch, cblas_dgemm)
DEF_RUN(f32, float, libxsmm_smmfunction, libxsmm_smmdispatch, cblas_sgemm)

int main(void) {
    static const int sizes[] = {2, 3, 4, 8, 16, 32};
    libxsmm_init();
    printf("us per batch of %d row-major n x n products (median of %d) and max |error| against a\n"
           "naive double product\n%-8s", BATCH, REPS, "dt   n");
    for (int w = 0; w < NWAYS; w++) printf("  %19s", WAY_NAMES[w]);
    printf("\n");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) bench_f64("f64", sizes[i]);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) bench_f32("f32", sizes[i]);
    libxsmm_finalize();
    return 0;
}

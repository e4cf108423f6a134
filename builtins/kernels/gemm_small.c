/* kernels/gemm_small.c: batched products of small matrices (up to AD_GEMM_SMALL_MAX on a side)
 * in one call for the whole batch, reading strided and broadcast operands in place. */
#include <string.h>

#include "kernels/reduce.h"
#include "kernels/kernel_limits.h"
#include "kernels/par_for.h"

/* The build's -O2 leaves these loops scalar; O3's vectoriser is what they are written for. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
/* One BLAS call per 4x4 matrix costs more in call set-up than the 64 multiply-adds it does:
 * [1000, 4, 4] @ [1000, 4, 4] went from 172 us (a dgemm per matrix) to the figures in
 * bench/RESULTS.md. The fixed sizes below let the compiler unroll the whole product into
 * registers; the generic path keeps a row of C in a local array so its inner loop is
 * contiguous whatever B's layout. */

/* c[m, n] (contiguous) = alpha * a b + beta * c, a read at (ars, acs), b at (brs, 1): each
 * row of c is a sum of rows of b scaled by a's entries, an inner loop over contiguous
 * memory that vectorises. beta == 0 never reads c (it may hold NaN, as BLAS allows).
 * Called with literal sizes, the loops unroll completely. float32 accumulates in double: the
 * product is then the correctly rounded one in nearly every case (BLAS's float sums are not),
 * at no cost that shows next to the call overhead this kernel removes. */
#define DEF_ONE(SUF, T, ACC)                                                                  \
    static inline __attribute__((always_inline)) void one_##SUF(                             \
        const T *restrict a, int64_t ars, int64_t acs, const T *restrict b, int64_t brs,        \
        T *restrict c, int64_t m, int64_t n, int64_t k, ACC alpha, ACC beta) {                 \
        for (int64_t i = 0; i < m; i++) {                                                      \
            ACC row[AD_GEMM_SMALL_MAX];                                                        \
            for (int64_t j = 0; j < n; j++) row[j] = 0;                                        \
            for (int64_t p = 0; p < k; p++) {                                                  \
                const ACC x = a[i * ars + p * acs];                                            \
                const T *restrict bp = b + p * brs;                                            \
                _Pragma("omp simd")                                                            \
                for (int64_t j = 0; j < n; j++) row[j] += x * (ACC)bp[j];                      \
            }                                                                                  \
            T *restrict ci = c + i * n;                                                        \
            if (beta == 0)                                                                     \
                for (int64_t j = 0; j < n; j++) ci[j] = (T)(alpha * row[j]);                   \
            else                                                                               \
                for (int64_t j = 0; j < n; j++) ci[j] = (T)(alpha * row[j] + beta * ci[j]);    \
        }                                                                                      \
    }                                                                                          \
    /* b with a column stride (a transposed view, as backward passes): its k x n entries    \
     * are gathered into contiguous rows first, k * n copies against m * n * k products. */ \
    static inline __attribute__((always_inline)) void any_##SUF(                             \
        const T *a, int64_t ars, int64_t acs, const T *b, int64_t brs, int64_t bcs, T *c,      \
        int64_t m, int64_t n, int64_t k, ACC alpha, ACC beta) {                                \
        if (bcs == 1) {                                                                        \
            one_##SUF(a, ars, acs, b, brs, c, m, n, k, alpha, beta);                           \
            return;                                                                            \
        }                                                                                      \
        T bl[AD_GEMM_SMALL_MAX * AD_GEMM_SMALL_MAX];                                           \
        for (int64_t p = 0; p < k; p++)                                                        \
            for (int64_t j = 0; j < n; j++) bl[p * n + j] = b[p * brs + j * bcs];              \
        one_##SUF(a, ars, acs, bl, n, c, m, n, k, alpha, beta);                                \
    }

/* The build targets baseline x86-64 (SSE2, two doubles a vector); a copy per wider ISA,
 * picked once at load time, halved the 8x8 products (bench/gemm_small_xsmm.sh). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define AD_GEMM_SMALL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef AD_GEMM_SMALL_CLONES
#define AD_GEMM_SMALL_CLONES
#endif

/* g: {nbatch, m, n, k, batch stride of a, ars, acs, batch stride of b, brs, bcs}. The
 * common square sizes get their own copies of the loop with the sizes as constants. */
#define SQUARE_CASE(SUF, D)                                                                   \
    case D:                                                                                   \
        PAR_FOR(par, for (int64_t t = 0; t < nb; t++)                                         \
            any_##SUF(a + t * sa, ars, acs, b + t * sb, brs, bcs, c + t * D * D, D, D, D,     \
                      alpha, beta););                                                         \
        return;

#define DEF_BATCHED(SUF, T, ACC)                                                              \
    DEF_ONE(SUF, T, ACC)                                                                      \
    AD_GEMM_SMALL_CLONES void ad_red_gemm_small_##SUF(const void *ap, const void *bp, void *cp, const int64_t *g,  \
                                 double alpha_d, double beta_d) {                             \
        const T *a = ap, *b = bp;                                                             \
        T *c = cp;                                                                            \
        const ACC alpha = (ACC)alpha_d, beta = (ACC)beta_d;                                   \
        const int64_t nb = g[0], m = g[1], n = g[2], k = g[3], sa = g[4], ars = g[5],         \
                      acs = g[6], sb = g[7], brs = g[8], bcs = g[9];                          \
        const int par = nb * m * n * (k ? k : 1) >= 64 * AD_OMP_THRESHOLD;                    \
        if (m == n && n == k) {                                                               \
            switch (m) {                                                                      \
                SQUARE_CASE(SUF, 2)                                                           \
                SQUARE_CASE(SUF, 3)                                                           \
                SQUARE_CASE(SUF, 4)                                                           \
                SQUARE_CASE(SUF, 8)                                                           \
            default: break;                                                                   \
            }                                                                                 \
        }                                                                                     \
        PAR_FOR(par, for (int64_t t = 0; t < nb; t++)                                         \
            any_##SUF(a + t * sa, ars, acs, b + t * sb, brs, bcs, c + t * m * n, m, n, k,     \
                      alpha, beta););                                                         \
    }

DEF_BATCHED(f32, float, double)
DEF_BATCHED(f64, double, double)

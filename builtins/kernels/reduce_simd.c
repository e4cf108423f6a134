/* kernels/reduce_simd.c: the float sums behind sum and mean (see kernels/reduce_simd.h). */
#include "kernels/reduce_simd.h"

#include <stdbool.h>
#include <string.h>

/* An AVX2 copy of each kernel beside the SSE2 baseline, picked at load time.
 * Both add the same numbers in the same order (16 lanes, combined the same
 * way), so a sum has the same bits on every CPU. An AVX-512 form (8-float
 * conversions) was measured slower on the bench machine (Zen 4): 154 against
 * 90 us for 1e4 rows of 100 float32, 96 against 81 us for their column sums.
 * Static functions only, so clang's naming of clones (see kernels/ew_simd.h) cannot bite. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define RS_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef RS_CLONES
#define RS_CLONES
#endif

typedef double rs_v4d __attribute__((vector_size(32)));

#define RS_SUM_LANES 16
#define RS_SUM_BLOCK 4096
/* Rows of a column block summed before the accumulators go back to memory:
 * the block's lines stay in L1 while its columns are walked. */
#define RS_COL_ROWS 64

/* Macros, not functions: a function returning a vector changes ABI between the clones. */
/* One vector of acc's type loaded from p (unaligned) and added to acc. */
#define RS_ADD_LOAD(acc, p)                                                        \
    do {                                                                           \
        __typeof__(acc) v_;                                                        \
        memcpy(&v_, (p), sizeof v_);                                               \
        (acc) += v_;                                                               \
    } while (0)
#define RS_ADD4_f64 RS_ADD_LOAD
#define RS_ADD4_f32(acc, p)                                                        \
    do {                                                                           \
        const float *p_ = (p);                                                     \
        (acc) += (rs_v4d){p_[0], p_[1], p_[2], p_[3]};                             \
    } while (0)

/* Lane l sums elements k + l; at the end the lanes are combined as
 * ((l + (l+4)) + ((l+8) + (l+12))) for l < 4, then ((0 + 1) + (2 + 3)), and
 * the n % 16 last elements, summed in order, come last. */
#define RS_BLOCKSUM(SUF, T)                                                        \
    static inline __attribute__((always_inline)) double blockbody_##SUF(const T *x, int64_t n) { \
        rs_v4d a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;                       \
        int64_t k = 0;                                                             \
        for (; k + RS_SUM_LANES <= n; k += RS_SUM_LANES) {                         \
            RS_ADD4_##SUF(a0, x + k);                                              \
            RS_ADD4_##SUF(a1, x + k + 4);                                          \
            RS_ADD4_##SUF(a2, x + k + 8);                                          \
            RS_ADD4_##SUF(a3, x + k + 12);                                         \
        }                                                                          \
        a0 = (a0 + a1) + (a2 + a3);                                                \
        double t = 0;                                                              \
        for (; k < n; k++) t += (double)x[k];                                      \
        return ((a0[0] + a0[1]) + (a0[2] + a0[3])) + t;                            \
    }                                                                              \
    RS_CLONES static double blocksum_##SUF(const T *x, int64_t n) { return blockbody_##SUF(x, n); } \
    /* many short rows in one call: a call per row of 100 float32 was a tenth \
     * of the instructions */                                                   \
    RS_CLONES static void shortrows_##SUF(const T *x, int64_t rows, int64_t n, bool mean, T *o) { \
        for (int64_t r = 0; r < rows; r++) {                                       \
            const double a = blockbody_##SUF(x + r * n, n);                        \
            o[r] = (T)(mean ? a / (double)n : a);                                  \
        }                                                                          \
    }
/* Column sums: 16 (then 4, then 1) columns at a time in registers down
 * RS_COL_ROWS rows, then back to a[] (a store and a load of a double change
 * nothing), so each column is the plain sum in row order. */
#define RS_COLSUM(SUF, T)                                                          \
    RS_CLONES static void colsum_##SUF(const T *x, int64_t n, int64_t inner,       \
                                       int64_t m, double *a) {                     \
        for (int64_t k0 = 0; k0 < n; k0 += RS_COL_ROWS) {                          \
            const int64_t k1 = n - k0 < RS_COL_ROWS ? n : k0 + RS_COL_ROWS;        \
            int64_t j = 0;                                                         \
            for (; j + 16 <= m; j += 16) {                                         \
                rs_v4d s0, s1, s2, s3;                                             \
                memcpy(&s0, a + j, sizeof s0);                                     \
                memcpy(&s1, a + j + 4, sizeof s1);                                 \
                memcpy(&s2, a + j + 8, sizeof s2);                                 \
                memcpy(&s3, a + j + 12, sizeof s3);                                \
                for (int64_t k = k0; k < k1; k++) {                                \
                    const T *r = x + k * inner + j;                                \
                    RS_ADD4_##SUF(s0, r);                                          \
                    RS_ADD4_##SUF(s1, r + 4);                                      \
                    RS_ADD4_##SUF(s2, r + 8);                                      \
                    RS_ADD4_##SUF(s3, r + 12);                                     \
                }                                                                  \
                memcpy(a + j, &s0, sizeof s0);                                     \
                memcpy(a + j + 4, &s1, sizeof s1);                                 \
                memcpy(a + j + 8, &s2, sizeof s2);                                 \
                memcpy(a + j + 12, &s3, sizeof s3);                                \
            }                                                                      \
            for (; j + 4 <= m; j += 4) {                                           \
                rs_v4d s;                                                          \
                memcpy(&s, a + j, sizeof s);                                       \
                for (int64_t k = k0; k < k1; k++) RS_ADD4_##SUF(s, x + k * inner + j); \
                memcpy(a + j, &s, sizeof s);                                       \
            }                                                                      \
            for (; j < m; j++) {                                                   \
                double s = a[j];                                                   \
                for (int64_t k = k0; k < k1; k++) s += (double)x[k * inner + j];   \
                a[j] = s;                                                          \
            }                                                                      \
        }                                                                          \
    }

/* float32 rows add in float lanes and only a chunk's partials in double:
 * converting every element to double cost two instructions per four floats,
 * and torch (which sums float in float) was 1.2x ahead on [1e4, 100] rows.
 * A lane adds at most RS_F32_CHUNK / 32 = 8 floats (11 in a last chunk)
 * before its chunk is folded into double, so the error does not grow with the
 * row's length. Chunks of 512 (16 floats a lane) were 2-3 ulps off on 1e6
 * copies of 0.1 where torch's cascade is 1; 256 is within 1 ulp there and at
 * or under torch's error on random and 1e8-plus-ones inputs (see the note of
 * commit "sum f32 in float lanes"). */
typedef float rs_v8f __attribute__((vector_size(32)));
#define RS_F32_CHUNK 256

/* The order (tests/unit/test_ew_simd.c repeats it): chunks of 256 elements,
 * the last one shorter. In a chunk, float lane l < 32 adds x[c + 32 r + l]
 * for each whole row r of 32; in the last chunk, whole rows of 8 after those
 * add into lanes 0..7. The chunk folds to g[l] = (a[l] + a[l+8]) + (a[l+16] +
 * a[l+24]) in float, and double lane l < 8 adds g[l]. The last n % 8 elements
 * are summed in order in double (t); the result is ((q0 + q1) + (q2 + q3)) + t
 * with q[l] = D[l] + D[l+4]. */
static inline __attribute__((always_inline)) double blockbody_f32(const float *x, int64_t n) {
    rs_v4d d0 = {0, 0, 0, 0}, d1 = d0;
    int64_t k = 0;
    while (n - k >= 8) {
        const int64_t end = n - k > RS_F32_CHUNK ? k + RS_F32_CHUNK : n;
        rs_v8f a0 = {0, 0, 0, 0, 0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
        for (; k + 32 <= end; k += 32) {
            RS_ADD_LOAD(a0, x + k);
            RS_ADD_LOAD(a1, x + k + 8);
            RS_ADD_LOAD(a2, x + k + 16);
            RS_ADD_LOAD(a3, x + k + 24);
        }
        for (; k + 8 <= end; k += 8) RS_ADD_LOAD(a0, x + k);
        const rs_v8f g = (a0 + a1) + (a2 + a3);
        d0 += (rs_v4d){g[0], g[1], g[2], g[3]};
        d1 += (rs_v4d){g[4], g[5], g[6], g[7]};
    }
    double t = 0;
    for (; k < n; k++) t += (double)x[k];
    const rs_v4d q = d0 + d1;
    return ((q[0] + q[1]) + (q[2] + q[3])) + t;
}
RS_CLONES static double blocksum_f32(const float *x, int64_t n) { return blockbody_f32(x, n); }
RS_CLONES static void shortrows_f32(const float *x, int64_t rows, int64_t n, bool mean, float *o) {
    for (int64_t r = 0; r < rows; r++) {
        const double a = blockbody_f32(x + r * n, n);
        o[r] = (float)(mean ? a / (double)n : a);
    }
}
RS_COLSUM(f32, float)

double ad_rs_rowsum_f32(const float *x, int64_t n) { return blocksum_f32(x, n); }
void ad_rs_rowsums_f32(const float *x, int64_t rows, int64_t n, bool mean, float *o) {
    shortrows_f32(x, rows, n, mean, o);
}
void ad_rs_colsum_f32(const float *x, int64_t n, int64_t inner, int64_t m, double *a) {
    colsum_f32(x, n, inner, m, a);
}

#define RS_DEF(SUF, T)                                                             \
    RS_BLOCKSUM(SUF, T)                                                            \
    RS_COLSUM(SUF, T)                                                              \
    double ad_rs_rowsum_##SUF(const T *x, int64_t n) {                             \
        if (n <= RS_SUM_BLOCK) return blocksum_##SUF(x, n); \
        int64_t h = (n / RS_SUM_BLOCK + 1) / 2 * RS_SUM_BLOCK;                     \
        return ad_rs_rowsum_##SUF(x, h) + ad_rs_rowsum_##SUF(x + h, n - h);        \
    }                                                                              \
    void ad_rs_rowsums_##SUF(const T *x, int64_t rows, int64_t n, bool mean, T *o) { \
        if (n <= RS_SUM_BLOCK) { shortrows_##SUF(x, rows, n, mean, o); return; }  \
        for (int64_t r = 0; r < rows; r++) {                                       \
            const double a = ad_rs_rowsum_##SUF(x + r * n, n);                     \
            o[r] = (T)(mean ? a / (double)n : a);                                  \
        }                                                                          \
    }                                                                              \
    void ad_rs_colsum_##SUF(const T *x, int64_t n, int64_t inner, int64_t m, double *a) { \
        colsum_##SUF(x, n, inner, m, a);                 \
    }
RS_DEF(f64, double)

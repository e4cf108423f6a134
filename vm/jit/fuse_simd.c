/* jit/fuse_simd.c: copies of the element-wise kernels that fused groups run most
 * (add, sub, mul, div, relu, the comparisons, where, the sigmoid/tanh VJPs), with an AVX2 clone. */
#include "jit/fuse_simd.h"

#include <string.h>

/* The shipped kernels (builtins/kernels/elementwise.c) are built for the
 * SSE2 baseline; these are the same formulas, so the values are the same
 * bits (no contraction: ISO C mode leaves fp-contract off), with twice the
 * lanes where the CPU has AVX2, picked at load time as kernels/reduce.c does. */
/* GCC only: clang (14) exports a cloned function under its ".ifunc" name, so
 * callers in other files that see a plain declaration fail to link. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define FU_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef FU_CLONES
#define FU_CLONES
#endif

#define FU_FOR(n) _Pragma("omp simd") for (int64_t i = 0; i < (n); i++)

/* Strides are 1 or 0 (a register read as one element). */
#define FU_BIN(name, T, sfx, OT, EXPR)                                                                  \
    FU_CLONES void ad_fu_##name##_##sfx(OT *out, const T *pa, int64_t sa, const T *pb, int64_t sb, int64_t n) { \
        if (sa && sb) { FU_FOR(n) { const T a = pa[i], b = pb[i]; out[i] = (OT)(EXPR); } }              \
        else if (sb) { const T a = pa[0]; FU_FOR(n) { const T b = pb[i]; out[i] = (OT)(EXPR); } }       \
        else if (sa) { const T b = pb[0]; FU_FOR(n) { const T a = pa[i]; out[i] = (OT)(EXPR); } }       \
        else if (n > 0) { const T a = pa[0], b = pb[0]; out[0] = (OT)(EXPR); for (int64_t i = 1; i < n; i++) out[i] = out[0]; } \
    }

#define FU_BOTH(name, EXPR) FU_BIN(name, float, f32, float, EXPR) FU_BIN(name, double, f64, double, EXPR)
#define FU_CMP(name, EXPR) FU_BIN(name, float, f32, bool, EXPR) FU_BIN(name, double, f64, bool, EXPR)

FU_BOTH(add, a + b)
FU_BOTH(sub, a - b)
FU_BOTH(mul, a * b)
FU_BOTH(div, a / b)
/* the VJPs of sigmoid and tanh from their output (an LSTM's backward) */
FU_BOTH(sigmoid_backward, a * b * (1 - b))
FU_BOTH(tanh_backward, a * (1 - b * b))
FU_CMP(eq, a == b)
FU_CMP(ne, a != b)
FU_CMP(lt, a < b)
FU_CMP(le, a <= b)
FU_CMP(gt, a > b)
FU_CMP(ge, a >= b)

/* relu keeps nan and -0.0, as the shipped one does. */
#define FU_RELU(T, sfx) \
    FU_CLONES void ad_fu_relu_##sfx(T *out, const T *x, int64_t n) { FU_FOR(n) { const T v = x[i]; out[i] = v < 0 ? (T)0 : v; } }
FU_RELU(float, f32)
FU_RELU(double, f64)

/* A loop per operand layout; the condition read as bytes and both sides
 * loaded unconditionally, so that the loops vectorise as selects (a bool
 * operand or a conditional load keeps GCC from it). */
#define FU_WHERE(T, sfx)                                                                                      \
    FU_CLONES void ad_fu_where_##sfx(T *out, const bool *cb, int64_t sc, const T *a, int64_t sa, const T *b,    \
                                     int64_t sb, int64_t n) {                                                   \
        const unsigned char *c = (const unsigned char *)cb;                                                    \
        if (!sc) {                                                                                             \
            const T *p = c[0] ? a : b;                                                                         \
            if (c[0] ? sa : sb) memmove(out, p, (size_t)n * sizeof(T));                                         \
            else for (int64_t i = 0; i < n; i++) out[i] = p[0];                                                \
        } else if (sa && sb) {                                                                                 \
            FU_FOR(n) { T x = a[i], y = b[i]; out[i] = c[i] ? x : y; }                                        \
        } else if (sb) {                                                                                       \
            const T x = a[0];                                                                                  \
            FU_FOR(n) { T y = b[i]; out[i] = c[i] ? x : y; }                                                  \
        } else if (sa) {                                                                                       \
            const T y = b[0];                                                                                  \
            FU_FOR(n) { T x = a[i]; out[i] = c[i] ? x : y; }                                                  \
        } else {                                                                                               \
            const T x = a[0], y = b[0];                                                                        \
            FU_FOR(n) out[i] = c[i] ? x : y;                                                                   \
        }                                                                                                      \
    }
FU_WHERE(float, f32)
FU_WHERE(double, f64)

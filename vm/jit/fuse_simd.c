/* jit/fuse_simd.c: the fused groups' where, a loop per operand layout that
 * vectorises as selects, with an AVX2 clone (the other ops are the shipped
 * kernels, which have theirs: kernels/elementwise.c). */
#include "jit/fuse_simd.h"

#include <string.h>

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

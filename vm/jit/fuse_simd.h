/* jit/fuse_simd.h: the fused groups' where (vm/jit/fuse_simd.c), with an AVX2
 * clone picked at load. */
#ifndef AD_FUSE_SIMD_H
#define AD_FUSE_SIMD_H

#include <stdbool.h>
#include <stdint.h>

/* where(c, a, b) over n elements, each operand with stride 1 or 0 */
void ad_fu_where_f32(float *out, const bool *c, int64_t sc, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n);
void ad_fu_where_f64(double *out, const bool *c, int64_t sc, const double *a, int64_t sa, const double *b, int64_t sb,
                     int64_t n);

#endif

/* jit/fuse_simd.h: the fused groups' copies of the hottest element-wise kernels
 * (vm/jit/fuse_simd.c): the shipped formulas, with an AVX2 clone picked at load. */
#ifndef AD_FUSE_SIMD_H
#define AD_FUSE_SIMD_H

#include <stdbool.h>
#include <stdint.h>

#define AD_FU_BIN_PROTO(name, T, sfx, OT) \
    void ad_fu_##name##_##sfx(OT *out, const T *pa, int64_t sa, const T *pb, int64_t sb, int64_t n);
#define AD_FU_BIN_OPS(X) X(add) X(sub) X(mul) X(div) X(sigmoid_backward) X(tanh_backward)
#define AD_FU_CMP_OPS(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)
#define AD_FU_PROTO2(name) AD_FU_BIN_PROTO(name, float, f32, float) AD_FU_BIN_PROTO(name, double, f64, double)
#define AD_FU_PROTO_CMP(name) AD_FU_BIN_PROTO(name, float, f32, bool) AD_FU_BIN_PROTO(name, double, f64, bool)
AD_FU_BIN_OPS(AD_FU_PROTO2)
AD_FU_CMP_OPS(AD_FU_PROTO_CMP)
void ad_fu_relu_f32(float *out, const float *x, int64_t n);
void ad_fu_relu_f64(double *out, const double *x, int64_t n);
/* where(c, a, b) over n elements, each operand with stride 1 or 0 */
void ad_fu_where_f32(float *out, const bool *c, int64_t sc, const float *a, int64_t sa, const float *b, int64_t sb, int64_t n);
void ad_fu_where_f64(double *out, const bool *c, int64_t sc, const double *a, int64_t sa, const double *b, int64_t sb,
                     int64_t n);

#endif

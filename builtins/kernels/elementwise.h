/* kernels/elementwise.h: the prototypes of the elementwise kernels, from the op
 * lists (X-macros) of kernels/ew_table.h, which drive the kernels, their
 * kernels.def rows and the builtins. */
#ifndef AD_KERNELS_ELEMENTWISE_H
#define AD_KERNELS_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/ew_table.h"
#include "kernels/special.h"

/* Kernel shapes (see kernels/elementwise.def):
 *   unary   (out, x, n)
 *   param   (out, x, n, p, q)                 two scalar parameters
 *   binary  (out, a, sa, b, sb, n)            sa, sb: 1 (array) or 0 (a[0] broadcast)
 *   ternary (out, a, sa, b, sb, c, sc, n)
 *   addc    (out, a, sa, b, sb, c, sc, n, value) */
#define AD_EW_SIG_UNARY "v(p,p,i64)"
#define AD_EW_SIG_PARAM "v(p,p,i64,f64,f64)"
#define AD_EW_SIG_BINARY "v(p,p,i64,p,i64,i64)"
#define AD_EW_SIG_TERNARY "v(p,p,i64,p,i64,p,i64,i64)"
#define AD_EW_SIG_ADDC "v(p,p,i64,p,i64,p,i64,i64,f64)"

/* The op lists, each row an op with its formula, are kernels/ew_table.h's;
 * the macros here and in kernels/elementwise.def name their kernels. */
#define AD_EW_PROTO_UNARY(name, T, sfx, OT) void ad_k_##name##_##sfx(OT *out, const T *x, int64_t n);
#define AD_EW_PROTO_PARAM(name, T, sfx) void ad_k_##name##_##sfx(T *out, const T *x, int64_t n, double p, double q);
#define AD_EW_PROTO_BINARY(name, T, sfx, OT) \
    void ad_k_##name##_##sfx(OT *out, const T *a, int64_t sa, const T *b, int64_t sb, int64_t n);

#define AD_EW_PROTO_F(name) AD_EW_PROTO_UNARY(name, float, f32, float) AD_EW_PROTO_UNARY(name, double, f64, double)
#define AD_EW_PROTO_FI(name) AD_EW_PROTO_F(name) AD_EW_PROTO_UNARY(name, int64_t, i64, int64_t)
#define AD_EW_PROTO_P(name) AD_EW_PROTO_PARAM(name, float, f32) AD_EW_PROTO_PARAM(name, double, f64)
#define AD_EW_PROTO_PRED(name) AD_EW_PROTO_UNARY(name, float, f32, bool) AD_EW_PROTO_UNARY(name, double, f64, bool)
#define AD_EW_PROTO_BF(name) AD_EW_PROTO_BINARY(name, float, f32, float) AD_EW_PROTO_BINARY(name, double, f64, double)
#define AD_EW_PROTO_BFI(name) AD_EW_PROTO_BF(name) AD_EW_PROTO_BINARY(name, int64_t, i64, int64_t)
#define AD_EW_PROTO_CMP(name) \
    AD_EW_PROTO_BINARY(name, float, f32, bool) AD_EW_PROTO_BINARY(name, double, f64, bool) \
    AD_EW_PROTO_BINARY(name, int64_t, i64, bool)
#define AD_EW_PROTO_LOGIC(name) AD_EW_PROTO_BINARY(name, bool, b8, bool)

/* Adapters for the table's rows, X(name, formula...). */
#define AD_EW_PROTO_F_(name, ...) AD_EW_PROTO_F(name)
#define AD_EW_PROTO_FI_(name, ...) AD_EW_PROTO_FI(name)
#define AD_EW_PROTO_P_(name, ...) AD_EW_PROTO_P(name)
#define AD_EW_PROTO_PRED_(name, ...) AD_EW_PROTO_PRED(name)
#define AD_EW_PROTO_BF_(name, ...) AD_EW_PROTO_BF(name)
#define AD_EW_PROTO_BFI_(name, ...) AD_EW_PROTO_BFI(name)
#define AD_EW_PROTO_CMP_(name, ...) AD_EW_PROTO_CMP(name)
#define AD_EW_PROTO_LOGIC_(name, ...) AD_EW_PROTO_LOGIC(name)
#define AD_EW_PROTO_SLEEF(name, ulp) AD_EW_PROTO_F(name)
AD_EW_SLEEF_OPS(AD_EW_PROTO_SLEEF)
AD_EW_FLOAT_OPS(AD_EW_PROTO_F_)
AD_EW_SPECIAL_OPS(AD_EW_PROTO_F)
AD_EW_FLOAT_MODE_OPS(AD_EW_PROTO_F_)
AD_EW_SAME_OPS(AD_EW_PROTO_FI_)
AD_EW_ROUND_OPS(AD_EW_PROTO_F_)
AD_EW_PARAM_OPS(AD_EW_PROTO_P_)
AD_EW_PRED_OPS(AD_EW_PROTO_PRED_)
AD_EW_BINARY_ALL_OPS(AD_EW_PROTO_BFI_)
AD_EW_BINARY_FLOAT_OPS(AD_EW_PROTO_BF_)
AD_EW_SPECIAL_BINARY_OPS(AD_EW_PROTO_BF)
AD_EW_COMPARE_OPS(AD_EW_PROTO_CMP_)
AD_EW_LOGICAL_OPS(AD_EW_PROTO_LOGIC_)

void ad_k_pow_i64(int64_t *out, const int64_t *a, int64_t sa, const int64_t *b, int64_t sb, int64_t n);
void ad_k_logical_not_b8(bool *out, const bool *x, int64_t n);
void ad_k_clamp_f32(float *out, const float *x, int64_t n, double lo, double hi);
void ad_k_clamp_f64(double *out, const double *x, int64_t n, double lo, double hi);
void ad_k_clamp_i64(int64_t *out, const int64_t *x, int64_t n, double lo, double hi);

/* Ternary kernels. where: (out, cond, sc, a, sa, b, sb, n). */
#define AD_EW_PROTO_TERN(name, T, sfx, CT) \
    void ad_k_##name##_##sfx(T *out, const CT *a, int64_t sa, const T *b, int64_t sb, const T *c, int64_t sc, int64_t n);
AD_EW_PROTO_TERN(where, float, f32, bool)
AD_EW_PROTO_TERN(where, double, f64, bool)
AD_EW_PROTO_TERN(where, int64_t, i64, bool)
AD_EW_PROTO_TERN(where, bool, b8, bool)
AD_EW_PROTO_TERN(lerp, float, f32, float)
AD_EW_PROTO_TERN(lerp, double, f64, double)
AD_EW_PROTO_TERN(clamp_t, float, f32, float)
AD_EW_PROTO_TERN(clamp_t, double, f64, double)
AD_EW_PROTO_TERN(clamp_t, int64_t, i64, int64_t)
#define AD_EW_PROTO_ADDC(name, T, sfx) \
    void ad_k_##name##_##sfx(T *out, const T *a, int64_t sa, const T *b, int64_t sb, const T *c, int64_t sc, int64_t n, double value);
AD_EW_PROTO_ADDC(addcmul, float, f32)
AD_EW_PROTO_ADDC(addcmul, double, f64)
AD_EW_PROTO_ADDC(addcmul, int64_t, i64)
AD_EW_PROTO_ADDC(addcdiv, float, f32)
AD_EW_PROTO_ADDC(addcdiv, double, f64)

#endif

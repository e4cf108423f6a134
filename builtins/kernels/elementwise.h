/* kernels/elementwise.h: the op lists (X-macros) that drive the elementwise
 * kernels, their kernels.def rows and the builtins, plus the kernel prototypes. */
#ifndef AD_KERNELS_ELEMENTWISE_H
#define AD_KERNELS_ELEMENTWISE_H

#include <stdbool.h>
#include <stdint.h>

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

/* Float functions with SLEEF vector forms, X(name, sleef accuracy suffix);
 * f32/f64 kernels, integer inputs promote to float32. */
#define AD_EW_SLEEF_OPS(X) \
    X(exp, u10) X(exp2, u10) X(expm1, u10) X(log, u10) X(log2, u10) X(log10, u10) \
    X(log1p, u10) X(sqrt, u05) X(sin, u10) X(cos, u10) X(tan, u10) X(asin, u10) \
    X(acos, u10) X(atan, u10) X(sinh, u10) X(cosh, u10) X(tanh, u10) X(asinh, u10) \
    X(acosh, u10) X(atanh, u10) X(erf, u10) X(erfc, u15) X(lgamma, u10)

/* Other float-only unary functions (f32/f64; integers promote to float32). */
#define AD_EW_FLOAT_OPS(X) \
    X(rsqrt) X(sigmoid) X(silu) X(mish) X(selu) X(hardsigmoid) X(hardswish) X(log_sigmoid) X(reciprocal) X(sinc) X(erfinv) X(digamma)

/* Float-only kernels behind one builtin with a mode (gelu's 'approximate'). */
#define AD_EW_FLOAT_MODE_OPS(X) X(gelu_erf) X(gelu_tanh)

/* Unary ops that keep the dtype, integers included (f32/f64/i64). */
#define AD_EW_SAME_OPS(X) X(abs) X(neg) X(sign) X(square) X(relu)

/* Rounding ops: f32/f64 kernels; an integer input is returned as a copy. */
#define AD_EW_ROUND_OPS(X) X(floor) X(ceil) X(round) X(trunc) X(frac)

/* Unary ops with two scalar parameters (p, q), float-only. */
#define AD_EW_PARAM_OPS(X) \
    X(leaky_relu) X(elu) X(celu) X(softplus) X(softshrink) X(hardshrink) X(logit) \
    X(round_decimals) X(polygamma)

/* Float predicates giving bool (f32/f64 -> bool). */
#define AD_EW_PRED_OPS(X) X(isnan) X(isinf) X(isfinite)

/* Binary ops over one dtype (f32/f64/i64). */
#define AD_EW_BINARY_ALL_OPS(X) \
    X(add) X(sub) X(mul) X(maximum) X(minimum) X(remainder) X(fmod) X(div_trunc) X(div_floor)

/* Binary float-only ops (f32/f64). */
#define AD_EW_BINARY_FLOAT_OPS(X) \
    X(div) X(pow) X(atan2) X(hypot) X(copysign) X(xlogy) X(logaddexp) \
    X(sigmoid_backward) X(tanh_backward)

/* Comparisons (f32/f64/i64 -> bool). */
#define AD_EW_COMPARE_OPS(X) X(eq) X(ne) X(lt) X(le) X(gt) X(ge)

/* Logical ops over bool (b8). */
#define AD_EW_LOGICAL_OPS(X) X(logical_and) X(logical_or) X(logical_xor)

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

#define AD_EW_PROTO_SLEEF(name, ulp) AD_EW_PROTO_F(name)
AD_EW_SLEEF_OPS(AD_EW_PROTO_SLEEF)
AD_EW_FLOAT_OPS(AD_EW_PROTO_F)
AD_EW_SPECIAL_OPS(AD_EW_PROTO_F)
AD_EW_FLOAT_MODE_OPS(AD_EW_PROTO_F)
AD_EW_SAME_OPS(AD_EW_PROTO_FI)
AD_EW_ROUND_OPS(AD_EW_PROTO_F)
AD_EW_PARAM_OPS(AD_EW_PROTO_P)
AD_EW_PRED_OPS(AD_EW_PROTO_PRED)
AD_EW_BINARY_ALL_OPS(AD_EW_PROTO_BFI)
AD_EW_BINARY_FLOAT_OPS(AD_EW_PROTO_BF)
AD_EW_SPECIAL_BINARY_OPS(AD_EW_PROTO_BF)
AD_EW_COMPARE_OPS(AD_EW_PROTO_CMP)
AD_EW_LOGICAL_OPS(AD_EW_PROTO_LOGIC)

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

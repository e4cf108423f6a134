/* kernels/scalar_math.h: scalar functions with one definition for the CPU kernels
 * (builtins/kernels/elementwise.c), the CUDA module (cuda/tensor_kernels.cu)
 * and the C that export_c writes, so all compute the same values: Python's
 * integer and float floor division and remainder, integer powers, the exact
 * float powers, logit. The formulas of kernels/ew_table.h call them.
 *
 * export_c copies the functions an exported program calls into the file it
 * writes (vm/export/lower_special.c), as it does special_math.h's: keep every
 * function 'AD_SPECIAL_FN type name(...) {' up to its matching '}', plain C99
 * over <math.h> and <stdint.h>. */
#ifndef AD_SCALAR_MATH_H
#define AD_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>

/* AD_SPECIAL_FN, digamma and polygamma: there, in the text export_c copies
 * into the C it writes */
#include "kernels/special_math.h"

/* A number bound of int64 clamp as an int64: past the type's range it clamps
 * nothing. The builtin passes integral values. */
AD_SPECIAL_FN int64_t ad_clamp_bound_i64(double b) {
    return b <= -0x1p63 ? INT64_MIN : b >= 0x1p63 ? INT64_MAX : (int64_t)b;
}

/* a ** b for the exponents torch computes without pow (2, 3, 1, 0.5, -0.5, -1, -2): a product,
 * a square root or a reciprocal; returns 0 (and leaves *r) for any other b, which goes to pow.
 * x ** 2 and its backward's x ** 1 then cost a multiply: a GMM gradient spent 70 M
 * instructions in libm's pow before (callgrind). */
AD_SPECIAL_FN int ad_pow_exact_f64(double a, double b, double *r) {
    if (b == 2) *r = a * a;
    else if (b == 1) *r = a;
    else if (b == 3) *r = a * a * a;
    else if (b == 0.5) *r = sqrt(a);
    else if (b == -1) *r = 1 / a;
    else if (b == -2) *r = 1 / (a * a);
    else if (b == -0.5) *r = 1 / sqrt(a);
    else return 0;
    return 1;
}
AD_SPECIAL_FN int ad_pow_exact_f32(float a, float b, float *r) {
    if (b == 2) *r = a * a;
    else if (b == 1) *r = a;
    else if (b == 3) *r = a * a * a;
    else if (b == 0.5f) *r = sqrtf(a);
    else if (b == -1) *r = 1 / a;
    else if (b == -2) *r = 1 / (a * a);
    else if (b == -0.5f) *r = 1 / sqrtf(a);
    else return 0;
    return 1;
}

/* -v without signed overflow: INT64_MIN stays INT64_MIN, as in torch. */
AD_SPECIAL_FN int64_t ad_wrap_neg(int64_t v) { return (int64_t)(0 - (uint64_t)v); }

/* base^e with wrap-around; a negative e gives 1, -1 or 0 (torch's choice). */
AD_SPECIAL_FN int64_t ad_ipow(int64_t base, int64_t e) {
    if (e < 0) return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    for (; e; e >>= 1, b *= b)
        if (e & 1) r *= b;
    return (int64_t)r;
}

/* Python's a % b: the sign of b. b == 0 is refused before the call on the CPU;
 * here it gives 0 rather than a trap. */
AD_SPECIAL_FN int64_t ad_iremainder(int64_t a, int64_t b) {
    if (b == -1 || b == 0) return 0;
    int64_t r = a % b;
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

/* Python's a // b (towards minus infinity); INT64_MIN // -1 wraps. */
AD_SPECIAL_FN int64_t ad_ifloordiv(int64_t a, int64_t b) {
    if (b == -1) return ad_wrap_neg(a);
    if (b == 0) return 0;
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Python/torch floor division of floats: exact quotient of (a - fmod) / b,
 * corrected towards the floor; division by zero follows IEEE a / b. */
AD_SPECIAL_FN double ad_floordiv(double a, double b) {
    if (b == 0) return a / b;
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return copysign(0.0, a / b);
    double fl = floor(div);
    return div - fl > 0.5 ? fl + 1 : fl;
}

/* Python's a % b for floats: the sign of b. */
AD_SPECIAL_FN float ad_fremainder_f32(float a, float b) {
    float r = fmodf(a, b);
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}
AD_SPECIAL_FN double ad_fremainder_f64(double a, double b) {
    double r = fmod(a, b);
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

/* pow: the exponents of ad_pow_exact without libm; the branch on b is
 * predicted when b is one scalar for the whole loop. */
AD_SPECIAL_FN float ad_pow_f32(float a, float b) {
    float r;
    return ad_pow_exact_f32(a, b, &r) ? r : powf(a, b);
}
AD_SPECIAL_FN double ad_pow_f64(double a, double b) {
    double r;
    return ad_pow_exact_f64(a, b, &r) ? r : pow(a, b);
}

/* log(z / (1 - z)), z the input clamped to [eps, 1 - eps]; eps < 0 means no eps. */
AD_SPECIAL_FN float ad_logit_f32(float v, float eps) {
    float z = eps < 0 ? v : v < eps ? eps : v > 1 - eps ? 1 - eps : v;
    return logf(z / (1 - z));
}
AD_SPECIAL_FN double ad_logit_f64(double v, double eps) {
    double z = eps < 0 ? v : v < eps ? eps : v > 1 - eps ? 1 - eps : v;
    return log(z / (1 - z));
}

/* The type-generic names kernels/ew_table.h's formulas call: overloads in the
 * CUDA module, _Generic in C; export_c writes the _f32/_f64 name itself. */
#ifdef __cplusplus
#define AD_SCALAR_OVERLOAD AD_SPECIAL_FN /* not a line export_c copies */
AD_SCALAR_OVERLOAD float ad_fremainder(float a, float b) { return ad_fremainder_f32(a, b); }
AD_SCALAR_OVERLOAD double ad_fremainder(double a, double b) { return ad_fremainder_f64(a, b); }
AD_SCALAR_OVERLOAD float ad_pow(float a, float b) { return ad_pow_f32(a, b); }
AD_SCALAR_OVERLOAD double ad_pow(double a, double b) { return ad_pow_f64(a, b); }
AD_SCALAR_OVERLOAD float ad_logit(float v, float eps) { return ad_logit_f32(v, eps); }
AD_SCALAR_OVERLOAD double ad_logit(double v, double eps) { return ad_logit_f64(v, eps); }
#else
#define ad_fremainder(a, b) _Generic((a), float: ad_fremainder_f32, default: ad_fremainder_f64)(a, b)
#define ad_pow(a, b) _Generic((a), float: ad_pow_f32, default: ad_pow_f64)(a, b)
#define ad_logit(v, eps) _Generic((v), float: ad_logit_f32, default: ad_logit_f64)(v, eps)
#endif

#endif /* AD_SCALAR_MATH_H */

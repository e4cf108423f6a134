/* kernels/scalar_math.h: scalar functions with one definition for the CPU kernels
 * (builtins/kernels/elementwise.c) and the CUDA module (cuda/tensor_kernels.cu),
 * so both devices compute the same values: Python's integer and float floor
 * division and remainder, integer powers, the exact float powers. */
#ifndef AD_SCALAR_MATH_H
#define AD_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>

/* AD_SPECIAL_FN, digamma and polygamma: there, in the text export_c copies
 * into the C it writes */
#include "kernels/special_math.h"

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

#endif /* AD_SCALAR_MATH_H */

/* scalar_math.h: scalar functions with one definition for the CPU kernels
 * (builtins/kernels_elementwise.c) and the CUDA module (cuda/tensor_kernels.cu),
 * so both devices compute the same values: Python's integer and float floor
 * division and remainder, integer powers, the exact float powers, digamma and polygamma. */
#ifndef AD_SCALAR_MATH_H
#define AD_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define AD_SPECIAL_FN static __host__ __device__ inline
#else
#define AD_SPECIAL_FN static inline
#endif /* AD_SCALAR_MATH_H */

#define AD_SPECIAL_PI 3.14159265358979323846

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

/* The highest order the reflection for negative x handles (its cotangent
 * derivative polynomial has AD_POLYGAMMA_MAX_REFLECT + 2 coefficients). */
#define AD_POLYGAMMA_MAX_REFLECT 100

/* Digamma by reflection (x < 0), upward recurrence to x >= 10, then the
 * asymptotic series; poles give -inf at 0 (signed like torch) and nan below. */
AD_SPECIAL_FN double ad_digamma(double x) {
    if (x == 0) return signbit(x) ? INFINITY : -INFINITY;
    double refl = 0;
    if (x < 0) {
        if (x == floor(x)) return NAN;
        refl = AD_SPECIAL_PI / tan(AD_SPECIAL_PI * x);
        x = 1 - x;
    }
    double acc = 0;
    while (x < 10) { acc -= 1 / x; x += 1; }
    double f = 1 / (x * x);
    double series = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132 - f * (691.0 / 32760))))));
    return acc + log(x) - 0.5 / x - series - refl;
}

/* Hurwitz zeta(s, x) for x > 0 and s = n + 1 >= 2: the first terms summed
 * until x >= 10 + s (or until they no longer count), then the Euler-Maclaurin
 * tail, whose Bernoulli terms shrink like ((s + 2j) / (2 pi x))^2 there. */
AD_SPECIAL_FN double ad_zeta_tail(double s, double x) {
    /* B_2j / (2j)! for j = 1..8 */
    const double b[8] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
                         -691.0 / 1307674368000.0, 1.0 / 74724249600.0, -3617.0 / 10670622842880000.0};
    double sum = 0;
    while (x < 10 + s) {
        double t = pow(x, -s);
        sum += t;
        x += 1;
        /* For large s the terms fall off geometrically: stop once neither the
         * next terms nor the tail (below x^(1-s)/(s-1) + ...) can change sum. */
        if (t <= sum * 1e-18 && x * pow(x, -s) / (s - 1) <= sum * 1e-18) return sum;
    }
    double xs = pow(x, -s);
    double tail = x * xs / (s - 1) + 0.5 * xs;
    double r = s * xs / x;
    for (int j = 1; j <= 8; j++) {
        tail += b[j - 1] * r;
        r *= (s + 2 * j - 1) * (s + 2 * j) / (x * x);
    }
    return sum + tail;
}

/* polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 1, digamma for
 * n = 0. Negative x uses the reflection
 *   psi_n(x) = (-1)^n psi_n(1 - x) - pi d^n/dx^n cot(pi x),
 * the derivative being pi^n P_n(cot(pi x)) with P_0(c) = c and
 * P_{k+1}(c) = -(1 + c^2) P_k'(c). Poles (x = 0, -1, ...) give the sign of
 * the limit from the right times inf; +inf gives 0, -inf and nan give nan;
 * n above AD_POLYGAMMA_MAX_REFLECT at negative x gives nan. */
AD_SPECIAL_FN double ad_polygamma(int n, double x) {
    if (n <= 0) return ad_digamma(x);
    double sign = (n & 1) ? 1.0 : -1.0;
    if (isnan(x) || x == -INFINITY) return NAN;
    if (x <= 0 && x == floor(x)) return sign * INFINITY;
    if (x == INFINITY) return 0.0;
    double fact = 1;
    for (int k = 2; k <= n && !isinf(fact); k++) fact *= k;
    if (x > 0) return sign * fact * ad_zeta_tail(n + 1.0, x);
    if (n > AD_POLYGAMMA_MAX_REFLECT) return NAN;
    double p[AD_POLYGAMMA_MAX_REFLECT + 2] = {0};
    int deg = 1;
    p[1] = 1; /* P_0(c) = c, coefficients by power of c */
    for (int k = 0; k < n; k++) {
        /* P' then times -(1 + c^2): degree deg - 1 + 2 */
        double d[AD_POLYGAMMA_MAX_REFLECT + 2] = {0};
        for (int i = 1; i <= deg; i++) d[i - 1] = i * p[i];
        for (int i = 0; i <= deg + 1; i++) p[i] = 0;
        for (int i = 0; i < deg; i++) { p[i] -= d[i]; p[i + 2] -= d[i]; }
        deg += 1;
    }
    /* cot has period 1: reducing x first (exactly) keeps pi x from losing
     * the fraction when x is large */
    double c = 1 / tan(AD_SPECIAL_PI * (x - floor(x))), v = 0;
    for (int i = deg; i >= 0; i--) v = v * c + p[i];
    double reflected = sign * fact * ad_zeta_tail(n + 1.0, 1 - x);
    return ((n & 1) ? -reflected : reflected) - pow(AD_SPECIAL_PI, n + 1) * v;
}

#endif /* AD_SCALAR_MATH_H */

/* kernels/special_math.h: the special functions of lib/special.ad and lib/math.ad
 * (digamma, polygamma, erfinv, modified Bessel I0/I1, erfcx, ndtri, log_ndtr,
 * Hurwitz zeta, regularized incomplete gamma, frexp), one definition for the CPU
 * kernels, the CUDA module and the C that export_c writes, so all three agree.
 *
 * Every function works in double; float32 kernels round the double result, which
 * is what the CUDA twins do as well. The methods are the textbook ones: power
 * series where their terms are all positive, asymptotic expansions past the point
 * where their smallest term is below double precision, Newton/Halley refinement
 * for the inverses.
 *
 * export_c copies this text into the files it writes (vm/export/lower_special.c), the
 * functions an exported program calls and those they call, each under a guard
 * of its own; so keep it plain C99 over <math.h> (no other include, no
 * file-scope objects), every function 'AD_SPECIAL_FN type name(...) {' up to
 * its matching '}', and every macro a '#define' line (or lines ending in '\\'). */
#ifndef AD_SPECIAL_MATH_H
#define AD_SPECIAL_MATH_H

#include <math.h>

#ifndef AD_SPECIAL_FN
#ifdef __CUDACC__
#define AD_SPECIAL_FN static __host__ __device__ inline
#else
#define AD_SPECIAL_FN static inline
#endif
#endif

#define AD_SP_PI 3.14159265358979323846
#define AD_SP_SQRT2 1.41421356237309504880
#define AD_SP_SQRT1_2 0.70710678118654752440
#define AD_SP_SQRT1_2_LO (-4.8336466567264567e-17) /* 1/sqrt(2) - AD_SP_SQRT1_2 in double */
#define AD_SP_SQRT_PI 1.77245385090551602730      /* sqrt(pi) */
#define AD_SP_SQRT_2PI 2.50662827463100050242     /* sqrt(2 pi) */
#define AD_SP_SQRT_PI_2 1.25331413731550025121    /* sqrt(pi / 2) */
#define AD_SP_EPS 1.1102230246251565e-16           /* 2^-53: a term below this relative size adds nothing */

/* Past this |x| the Bessel asymptotic series reaches double precision before
 * its terms start growing (its smallest term is about exp(-2x)). */
#define AD_SP_BESSEL_ASYMPTOTIC 30.0
/* erfcx: exp(x^2) erfc(x) is used below this, the asymptotic series above. */
#define AD_SP_ERFCX_ASYMPTOTIC 10.0
/* Incomplete gamma: Stirling's form of the prefactor from this a on, and the
 * most series / continued-fraction steps (enough for a up to about 1e8). */
#define AD_SP_IGAMMA_STIRLING 20.0
#define AD_SP_IGAMMA_MAX_ITER 200000
/* From this a on, x within 30% of a goes to Temme's expansion (the series
 * would need about 9 sqrt(a) steps; the expansion's error is about a^-1.5). */
#define AD_SP_IGAMMA_TEMME 1e8
/* zeta at negative q sums its first terms up to this many, then reflects. */
#define AD_SP_ZETA_MAX_SHIFT 1e5

/* The highest order the reflection for negative x handles (its cotangent
 * derivative polynomial has AD_POLYGAMMA_MAX_REFLECT + 2 coefficients). */
#define AD_POLYGAMMA_MAX_REFLECT 100

/* ---- modified Bessel functions of the first kind, orders 0 and 1 ---- */

/* sum_k (x^2/4)^k / (k! (k + nu)!) for nu = 0 or 1 (the series of I_nu(x)
 * without its (x/2)^nu factor); every term is positive, so summing is exact to
 * rounding. */
AD_SPECIAL_FN double ad_sp_bessel_series(double x, int nu) {
    double q = 0.25 * x * x, term = 1, sum = 1;
    for (int k = 1; k < 500; k++) {
        term *= q / ((double)k * (double)(k + nu));
        sum += term;
        if (term < sum * AD_SP_EPS) break;
    }
    return sum;
}

/* sqrt(2 pi x) e^-x I_nu(x) for large x > 0: the Hankel expansion
 * sum_k (-1)^k a_k(nu) / x^k, a_k = prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! 8^k),
 * stopped once its terms are negligible. */
AD_SPECIAL_FN double ad_sp_bessel_asym(double x, int nu) {
    double mu = 4.0 * nu * nu, term = 1, sum = 1;
    for (int k = 1; k < 200; k++) {
        double odd = 2.0 * k - 1;
        term *= -(mu - odd * odd) / (8.0 * k * x);
        sum += term;
        if (fabs(term) < fabs(sum) * AD_SP_EPS) break;
    }
    return sum;
}

/* I_nu(|x|) times exp(-|x|) when 'scaled', for nu = 0, 1 (the sign of I1 is the
 * caller's). Large x: e^x / sqrt(2 pi x) is formed as two half exponentials so
 * that the values up to the overflow threshold (about 713.9) stay finite. */
AD_SPECIAL_FN double ad_sp_bessel_i(double x, int nu, int scaled) {
    double ax = fabs(x);
    if (isnan(x)) return x;
    if (ax < AD_SP_BESSEL_ASYMPTOTIC) {
        double v = ad_sp_bessel_series(ax, nu) * (nu ? 0.5 * ax : 1.0);
        return scaled ? v * exp(-ax) : v;
    }
    if (isinf(ax)) return scaled ? 0.0 : INFINITY;
    double s = ad_sp_bessel_asym(ax, nu) / sqrt(2 * AD_SP_PI * ax);
    if (scaled) return s;
    double h = exp(0.5 * ax);
    return (s * h) * h;
}

AD_SPECIAL_FN double ad_sp_i0(double x) { return ad_sp_bessel_i(x, 0, 0); }
AD_SPECIAL_FN double ad_sp_i0e(double x) { return ad_sp_bessel_i(x, 0, 1); }
AD_SPECIAL_FN double ad_sp_i1(double x) { double v = ad_sp_bessel_i(x, 1, 0); return x < 0 ? -v : v; }
AD_SPECIAL_FN double ad_sp_i1e(double x) { double v = ad_sp_bessel_i(x, 1, 1); return x < 0 ? -v : v; }

/* ---- digamma, polygamma, the inverse error function ---- */

/* Digamma by reflection (x < 0), upward recurrence to x >= 10, then the
 * asymptotic series; poles give -inf at 0 (signed like torch) and nan below. */
AD_SPECIAL_FN double ad_digamma(double x) {
    if (x == 0) return signbit(x) ? INFINITY : -INFINITY;
    double refl = 0;
    if (x < 0) {
        if (x == floor(x)) return NAN;
        refl = AD_SP_PI / tan(AD_SP_PI * x);
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
    double c = 1 / tan(AD_SP_PI * (x - floor(x))), v = 0;
    for (int i = deg; i >= 0; i--) v = v * c + p[i];
    double reflected = sign * fact * ad_zeta_tail(n + 1.0, 1 - x);
    return ((n & 1) ? -reflected : reflected) - pow(AD_SP_PI, n + 1) * v;
}

/* Inverse error function: a rational first guess refined by two Newton steps
 * on erf, which brings it to double precision. */
AD_SPECIAL_FN double ad_erfinv(double y) {
    if (isnan(y) || y < -1 || y > 1) return NAN;
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    double w = -log((1 - y) * (1 + y)), x;
    if (w < 5) {
        w -= 2.5;
        x = 2.81022636e-08;
        x = 3.43273939e-07 + x * w; x = -3.5233877e-06 + x * w; x = -4.39150654e-06 + x * w;
        x = 0.00021858087 + x * w; x = -0.00125372503 + x * w; x = -0.00417768164 + x * w;
        x = 0.246640727 + x * w; x = 1.50140941 + x * w;
    } else {
        w = sqrt(w) - 3;
        x = -0.000200214257;
        x = 0.000100950558 + x * w; x = 0.00134934322 + x * w; x = -0.00367342844 + x * w;
        x = 0.00573950773 + x * w; x = -0.0076224613 + x * w; x = 0.00943887047 + x * w;
        x = 1.00167406 + x * w; x = 2.83297682 + x * w;
    }
    x *= y;
    for (int k = 0; k < 2; k++) x -= (erf(x) - y) / (2 / sqrt(AD_SP_PI) * exp(-x * x));
    return x;
}

/* ---- scaled complementary error function and the normal distribution ---- */

/* exp(x^2) with x^2 split as hi^2 + (2 hi lo + lo^2), hi holding the top bits
 * of x so that hi^2 is exact: the rounding of x * x would otherwise cost
 * x^2 ulps (400 at x = 20). */
AD_SPECIAL_FN double ad_sp_exp_x2(double x) {
    double hi = floor(x * 4096.0 + 0.5) / 4096.0, lo = x - hi;
    return exp(hi * hi) * exp((2 * hi + lo) * lo);
}

/* erfcx(x) = exp(x^2) erfc(x). Small x: the product; large x: the asymptotic
 * series 1 / (x sqrt(pi)) sum_n (-1)^n (2n - 1)!! / (2 x^2)^n, whose smallest
 * term at x = 10 is far below double precision; negative x: the reflection
 * 2 exp(x^2) - erfcx(-x), infinite once exp(x^2) overflows. */
AD_SPECIAL_FN double ad_sp_erfcx_nonneg(double x) {
    if (x < AD_SP_ERFCX_ASYMPTOTIC) return ad_sp_exp_x2(x) * erfc(x);
    if (isinf(x)) return 0.0;
    double r = 1 / (2 * x * x), term = 1, sum = 1;
    for (int n = 1; n < 60; n++) {
        term *= -(2.0 * n - 1) * r;
        sum += term;
        if (fabs(term) < sum * AD_SP_EPS) break;
    }
    return sum / (x * AD_SP_SQRT_PI);
}

/* (no recursion: the CUDA twin runs the same code) */
AD_SPECIAL_FN double ad_sp_erfcx(double x) {
    if (isnan(x)) return x;
    if (x >= 0) return ad_sp_erfcx_nonneg(x);
    if (x < -26.7) return INFINITY;
    return 2 * ad_sp_exp_x2(x) - ad_sp_erfcx_nonneg(-x);
}

/* log of the standard normal CDF: log1p(-ndtr(-x)) above 0, where ndtr is close
 * to 1; below, log(erfcx(-x / sqrt 2) / 2) - x^2 / 2, which never underflows. */
AD_SPECIAL_FN double ad_sp_log_ndtr(double x) {
    if (isnan(x)) return x;
    if (x == INFINITY) return 0.0;
    if (x > 0) {
        /* erfc(t) falls like exp(-t^2): the rounding d of t = x / sqrt 2 would
         * cost a relative 2 t d (1e-14 at x = 10), so it is put back as
         * erfc(t + d) = erfc(t) exp(-2 t d) to first order. */
        double t = x * AD_SP_SQRT1_2, d = fma(x, AD_SP_SQRT1_2, -t) + x * AD_SP_SQRT1_2_LO;
        return log1p(-0.5 * erfc(t) * exp(-2 * t * d));
    }
    return log(0.5 * ad_sp_erfcx(-x * AD_SP_SQRT1_2)) - 0.5 * x * x;
}

/* Inverse of the standard normal CDF: a rational first guess (error below
 * 5e-4) refined by Halley steps on ndtr. Below p = 0.25 the residual is written
 * through erfcx and log p, so that tiny p (down to the subnormals) neither
 * underflow nor cancel; between 0.25 and 0.75 through erf of p - 1/2, which is
 * exact there; above 0.75 by the symmetry ndtri(p) = -ndtri(1 - p). */
AD_SPECIAL_FN double ad_sp_ndtri_to_075(double p) {
    double pp = p < 0.5 ? p : 1 - p, t = sqrt(-2 * log(pp));
    double x = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
    if (p < 0.5) x = -x;
    double q = p - 0.5, lp = log(p);
    for (int k = 0; k < 3; k++) {
        double dx; /* (ndtr(x) - p) / ndtr'(x) */
        if (p < 0.25)
            dx = AD_SP_SQRT_PI_2 * ad_sp_erfcx(-x * AD_SP_SQRT1_2) - AD_SP_SQRT_2PI * exp(lp + 0.5 * x * x);
        else
            dx = (0.5 * erf(x * AD_SP_SQRT1_2) - q) * AD_SP_SQRT_2PI * exp(0.5 * x * x);
        x -= dx / (1 + 0.5 * x * dx);
    }
    return x;
}

AD_SPECIAL_FN double ad_sp_ndtri(double p) {
    if (isnan(p) || p < 0 || p > 1) return NAN;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    if (p == 0.5) return 0.0;
    return p > 0.75 ? -ad_sp_ndtri_to_075(1 - p) : ad_sp_ndtri_to_075(p);
}

/* ---- Hurwitz zeta ---- */

/* zeta(s, q) = sum_{k >= 0} (q + k)^-s, as torch.special.zeta: s == 1 and the
 * poles q = 0, -1, ... give inf, s < 1 gives nan, and so does q < 0 with a
 * non-integer s (the powers of negative bases are not real). Negative q is
 * shifted past 0 by its first terms; the rest is the
 * Euler-Maclaurin sum (ad_zeta_tail, exact for any real s > 1). */
AD_SPECIAL_FN double ad_sp_zeta(double s, double q) {
    if (isnan(s) || isnan(q)) return NAN;
    if (s == 1) return INFINITY;
    if (s < 1) return NAN;
    if (q <= 0) {
        if (q == floor(q)) return INFINITY;
        if (s != floor(s) || isinf(q)) return NAN;
    }
    if (q == INFINITY) return 0.0;
    if (isinf(s)) return q == 1 ? 1.0 : q > 1 ? 0.0 : q > 0 ? INFINITY : NAN;
    if (q < -AD_SP_ZETA_MAX_SHIFT) {
        /* too many terms to shift by: zeta(n + 1, q) = (-1)^(n+1) psi_n(q) / n!,
         * the polygamma reflection (orders up to AD_POLYGAMMA_MAX_REFLECT) */
        int n = (int)s - 1;
        double fact = 1;
        if (n > AD_POLYGAMMA_MAX_REFLECT) return NAN;
        for (int k = 2; k <= n; k++) fact *= k;
        return ((n & 1) ? 1.0 : -1.0) * ad_polygamma(n, q) / fact;
    }
    double head = 0;
    while (q < 0) { head += pow(q, -s); q += 1; }
    return head + ad_zeta_tail(s, q);
}

/* ---- regularized incomplete gamma ---- */

/* log(1 + t) - t without the cancellation near t = 0 (its series there). */
AD_SPECIAL_FN double ad_sp_log1pmx(double t) {
    if (fabs(t) > 0.3) return log1p(t) - t;
    double pw = t * t, sum = 0;
    for (int k = 2; k < 60; k++) {
        double term = pw / k;
        sum += (k & 1) ? term : -term;
        if (fabs(term) < fabs(sum) * AD_SP_EPS) break;
        pw *= t;
    }
    return sum;
}

/* x^a e^-x / Gamma(a). For large a, Stirling's Gamma turns it into
 * exp(a (log1p(t) - t)) sqrt(a / 2 pi) e^-c(a), t = (x - a) / a, which keeps
 * its accuracy where a log x and x are both huge and nearly cancel. */
AD_SPECIAL_FN double ad_sp_igamma_prefactor(double a, double x) {
    if (a < AD_SP_IGAMMA_STIRLING) return exp(a * log(x) - x - lgamma(a));
    double r = 1 / a, r2 = r * r;
    /* ln Gamma(a) - Stirling's approximation: 1/12a - 1/360a^3 + 1/1260a^5 - 1/1680a^7 + 1/1188a^9 */
    double c = r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 / 1188))));
    return exp(a * ad_sp_log1pmx((x - a) / a) - c) * sqrt(a / (2 * AD_SP_PI));
}

/* P(a, x) by its series e^-x x^a / Gamma(a + 1) sum_n x^n / ((a + 1)...(a + n)). */
AD_SPECIAL_FN double ad_sp_igamma_series(double a, double x) {
    double term = 1, sum = 1;
    for (int n = 1; n < AD_SP_IGAMMA_MAX_ITER; n++) {
        term *= x / (a + n);
        sum += term;
        if (term < sum * AD_SP_EPS) break;
    }
    return ad_sp_igamma_prefactor(a, x) / a * sum;
}

/* Q(a, x) by Legendre's continued fraction
 * e^-x x^a / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)),
 * evaluated forwards with the modified Lentz method. */
AD_SPECIAL_FN double ad_sp_igammac_cf(double a, double x) {
    const double tiny = 1e-300;
    double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
    for (int n = 1; n < AD_SP_IGAMMA_MAX_ITER; n++) {
        double an = -n * (n - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < tiny) d = tiny;
        c = b + an / c;
        if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < AD_SP_EPS) break;
    }
    return ad_sp_igamma_prefactor(a, x) * h;
}

/* The edge values torch gives (a or x negative or nan: nan; a = 0: the limit
 * for x > 0; x = 0 or infinite; a infinite); returns 1 with *v set when
 * (a, x) is one of them, for P (upper = 0) or Q (upper = 1). */
AD_SPECIAL_FN int ad_sp_igamma_edge(double a, double x, int upper, double *v) {
    if (isnan(a) || isnan(x) || a < 0 || x < 0) { *v = NAN; return 1; }
    if (a == 0) { *v = x > 0 ? (upper ? 0.0 : 1.0) : NAN; return 1; }
    if (x == 0) { *v = upper ? 1.0 : 0.0; return 1; }
    if (isinf(a)) { *v = isinf(x) ? NAN : (upper ? 1.0 : 0.0); return 1; }
    if (isinf(x)) { *v = upper ? 0.0 : 1.0; return 1; }
    return 0;
}

/* Very large a with x near a, where the series and the continued fraction
 * would need more than AD_SP_IGAMMA_MAX_ITER steps: Temme's uniform expansion
 * to its first correction,
 *   Q = erfc(eta sqrt(a / 2)) / 2 + exp(-a eta^2 / 2) / sqrt(2 pi a) (1 / mu - 1 / eta),
 * mu = x / a - 1, eta^2 / 2 = mu - log(1 + mu) (eta with the sign of mu); the
 * next term is smaller by 1 / a. P likewise, from erfc(-eta sqrt(a / 2)). */
AD_SPECIAL_FN double ad_sp_igamma_temme(double a, double x, int upper) {
    double mu = (x - a) / a, eta = sqrt(-2 * ad_sp_log1pmx(mu));
    if (mu < 0) eta = -eta;
    /* 1/mu - 1/eta cancels near mu = 0: its series there */
    double c0 = fabs(mu) < 1e-3 ? -1.0 / 3 + mu / 12 - 23.0 / 540 * mu * mu : 1 / mu - 1 / eta;
    double r = exp(-0.5 * a * eta * eta) / sqrt(2 * AD_SP_PI * a) * c0;
    double y = eta * sqrt(0.5 * a);
    return upper ? 0.5 * erfc(y) + r : 0.5 * erfc(-y) - r;
}

/* Which method P and Q take at (a, x): 0 the series (P), 1 the continued
 * fraction (Q), 2 Temme's expansion. */
AD_SPECIAL_FN int ad_sp_igamma_method(double a, double x) {
    if (a > AD_SP_IGAMMA_TEMME && fabs(x - a) < 0.3 * a) return 2;
    return x < a + 1 ? 0 : 1;
}

/* torch.igamma / special.gammainc: the lower regularized P(a, x). */
AD_SPECIAL_FN double ad_sp_igamma(double a, double x) {
    double v;
    if (ad_sp_igamma_edge(a, x, 0, &v)) return v;
    int m = ad_sp_igamma_method(a, x);
    return m == 2 ? ad_sp_igamma_temme(a, x, 0) : m == 0 ? ad_sp_igamma_series(a, x) : 1 - ad_sp_igammac_cf(a, x);
}

/* torch.igammac / special.gammaincc: the upper regularized Q(a, x) = 1 - P. */
AD_SPECIAL_FN double ad_sp_igammac(double a, double x) {
    double v;
    if (ad_sp_igamma_edge(a, x, 1, &v)) return v;
    int m = ad_sp_igamma_method(a, x);
    return m == 2 ? ad_sp_igamma_temme(a, x, 1) : m == 0 ? 1 - ad_sp_igamma_series(a, x) : ad_sp_igammac_cf(a, x);
}

/* ---- frexp ---- */

/* The mantissa and the exponent of frexp, one kernel each (a kernel has one
 * output). A float32 value is exact in double and has the same frexp there.
 * inf and nan keep their value with exponent 0, as glibc (and so torch) gives. */
AD_SPECIAL_FN double ad_sp_frexp_mantissa(double x) {
    int e;
    return isfinite(x) ? frexp(x, &e) : x;
}
AD_SPECIAL_FN double ad_sp_frexp_exponent(double x) {
    int e = 0;
    if (isfinite(x)) frexp(x, &e);
    return (double)e;
}

/* ---- binary kernels, by result type T ---- */

#define AD_SP_B_zeta(T, a, b) ((T)ad_sp_zeta((double)(a), (double)(b)))
#define AD_SP_B_igamma(T, a, b) ((T)ad_sp_igamma((double)(a), (double)(b)))
#define AD_SP_B_igammac(T, a, b) ((T)ad_sp_igammac((double)(a), (double)(b)))
/* nextafter steps in T's own precision */
#define AD_SP_B_nextafter(T, a, b) \
    (sizeof(T) == sizeof(float) ? (T)nextafterf((float)(a), (float)(b)) : (T)nextafter((double)(a), (double)(b)))

#endif /* AD_SPECIAL_MATH_H */

/* kernels/ew_table.h: the element-wise table, one row per op with its scalar
 * formula written once. The rows expand into the CPU kernels
 * (kernels/elementwise.c), their kernels.def rows (kernels/elementwise.def),
 * the builtins (builtins/bi_elementwise.c), the CUDA functors
 * (cuda/tensor_kernels.cu) and the C that export_c writes (vm/export/lower.c
 * stringifies each formula and fills in its operands); compile()'s fuser calls
 * the CPU kernels. The op's definition with its VJP/JVP stays in the .ad files of lib/.
 *
 * A formula is a C expression (C++ in the CUDA functors) over:
 *   v              the element of a unary op
 *   a, b, c        the elements of a binary or ternary op (where: a the bool condition)
 *   P, Q           a parameter op's two parameters in the element type; p, q as doubles
 *   val            addcmul/addcdiv's value, in the element type
 *   T              the element type (float or double; int64_t in an integer form)
 * Math functions take arguments of type T only (constants cast to T): the CPU
 * kernels call them through <tgmath.h>, the CUDA file through float/double
 * overloads and export_c appends the float suffix (expf) for float32, so all
 * three pick the same single- or double-precision function. Functions named
 * ad_* are those of kernels/scalar_math.h and kernels/special_math.h, plain C99
 * that export_c copies into the files it writes; ad_pow, ad_fremainder and
 * ad_logit are type-generic names for their _f32/_f64 forms. Named constants
 * are the AD_EW_* macros below, listed in AD_EW_CONSTS for export_c.
 *
 * Adding an op: a row in the list of its shape (unary float, parameter,
 * binary...), then the op in lib/ calling kernel("ad_NAME"); the kernel, its
 * builtin, the CUDA functor and the export row follow. Keep each list's order:
 * the kernel ids follow it. */
#ifndef AD_KERNELS_EW_TABLE_H
#define AD_KERNELS_EW_TABLE_H

#define AD_EW_PI 3.14159265358979323846
#define AD_EW_DEG2RAD (AD_EW_PI / 180)
#define AD_EW_RAD2DEG (180 / AD_EW_PI)
#define AD_EW_LOG2E 1.44269504088896340736  /* 1 / log(2) */
#define AD_EW_SQRT1_2 0.70710678118654752440
#define AD_EW_SQRT_2_PI 0.79788456080286535588  /* sqrt(2 / pi) */
#define AD_EW_SELU_ALPHA 1.6732632423543772848170429916717
#define AD_EW_SELU_SCALE 1.0507009873554804934193349852946
/* mish's softplus is x past this, as torch's softplus default threshold */
#define AD_EW_SOFTPLUS_THRESHOLD 20
#define AD_EW_CONSTS(X) \
    X(AD_EW_PI) X(AD_EW_DEG2RAD) X(AD_EW_RAD2DEG) X(AD_EW_LOG2E) X(AD_EW_SQRT1_2) X(AD_EW_SQRT_2_PI) X(AD_EW_SELU_ALPHA) X(AD_EW_SELU_SCALE) X(AD_EW_SOFTPLUS_THRESHOLD)

/* Float functions with SLEEF vector forms, X(name, sleef accuracy suffix):
 * the formula is the function; f32/f64 kernels, integers promote to float32. */
#define AD_EW_SLEEF_OPS(X) \
    X(exp, u10) X(exp2, u10) X(expm1, u10) X(log, u10) X(log2, u10) X(log10, u10) \
    X(log1p, u10) X(sqrt, u05) X(sin, u10) X(cos, u10) X(tan, u10) X(asin, u10) \
    X(acos, u10) X(atan, u10) X(sinh, u10) X(cosh, u10) X(tanh, u10) X(asinh, u10) \
    X(acosh, u10) X(atanh, u10) X(erf, u10) X(erfc, u15) X(lgamma, u10)

/* Other float-only unary functions, X(name, formula of v) (f32/f64; integers
 * promote to float32). */
#define AD_EW_FLOAT_OPS(X) \
    X(rsqrt, (T)1 / sqrt(v)) \
    X(sigmoid, (T)1 / ((T)1 + exp(-v))) \
    X(silu, v / ((T)1 + exp(-v))) \
    X(mish, v * tanh(v > AD_EW_SOFTPLUS_THRESHOLD ? v : log1p(exp(v)))) \
    X(selu, (T)AD_EW_SELU_SCALE * (v > 0 ? v : (T)AD_EW_SELU_ALPHA * expm1(v))) \
    X(hardsigmoid, v <= -3 ? (T)0 : v >= 3 ? (T)1 : v / (T)6 + (T)0.5) \
    X(hardswish, v * fmin(fmax(v + (T)3, (T)0), (T)6) / (T)6) \
    X(log_sigmoid, fmin(v, (T)0) - log1p(exp(-fabs(v)))) \
    X(reciprocal, (T)1 / v) \
    X(sinc, v == 0 ? (T)1 : sin((T)AD_EW_PI * v) / ((T)AD_EW_PI * v)) \
    X(erfinv, (T)ad_erfinv(v)) \
    X(digamma, (T)ad_digamma(v)) \
    X(angle, isnan(v) ? v : v < 0 ? (T)AD_EW_PI : (T)0) /* a real number's argument */ \
    X(softsign, v / ((T)1 + fabs(v))) \
    X(tanhshrink, v - tanh(v)) \
    X(deg2rad, v * (T)AD_EW_DEG2RAD) \
    X(rad2deg, v * (T)AD_EW_RAD2DEG)

/* Float-only kernels behind one builtin with a mode (gelu's 'approximate'). */
#define AD_EW_FLOAT_MODE_OPS(X) \
    X(gelu_erf, (T)0.5 * v * ((T)1 + erf(v * (T)AD_EW_SQRT1_2))) \
    X(gelu_tanh, (T)0.5 * v * ((T)1 + tanh((T)AD_EW_SQRT_2_PI * (v + (T)0.044715 * v * v * v))))

/* Unary ops that keep the dtype, integers included (f32/f64/i64):
 * X(name, float formula, int64 formula). */
#define AD_EW_SAME_OPS(X) \
    X(abs, fabs(v), v < 0 ? ad_wrap_neg(v) : v) \
    X(neg, -v, ad_wrap_neg(v)) \
    X(sign, (T)((v > 0) - (v < 0)), (v > 0) - (v < 0)) /* torch: sign(nan) is 0 */ \
    X(square, v * v, (int64_t)((uint64_t)v * (uint64_t)v)) \
    X(relu, v < 0 ? (T)0 : v, v > 0 ? v : 0) /* keeps nan and -0.0 */

/* Rounding ops: f32/f64 kernels; an integer input is returned as a copy. */
#define AD_EW_ROUND_OPS(X) \
    X(floor, floor(v)) X(ceil, ceil(v)) X(round, nearbyint(v)) X(trunc, trunc(v)) X(frac, v - trunc(v))

/* Unary ops with two scalar parameters (p, q), float-only. */
#define AD_EW_PARAM_OPS(X) \
    X(leaky_relu, v > 0 ? v : v * P) \
    X(elu, v > 0 ? v : P * expm1(v)) \
    X(celu, v > 0 ? v : P * expm1(v / P)) /* keeps nan, as torch */ \
    X(softplus, v * P > Q ? v : log1p(exp(v * P)) / P) \
    X(softshrink, v > P ? v - P : v < -P ? v + P : (T)0) \
    X(hardshrink, v >= -P && v <= P ? (T)0 : v) \
    X(logit, ad_logit(v, P)) /* p < 0 means no eps */ \
    /* p is the number of decimals, q 10^|p|; negative rounds to tens, hundreds... */ \
    X(round_decimals, p >= 0 ? nearbyint(v * Q) / Q : nearbyint(v / Q) * Q) \
    /* p is the order n, a non-negative integer checked by the builtin */ \
    X(polygamma, ad_polygamma((int)p, (double)v))

/* clamp with number bounds P (min) and Q (max), an absent bound being -inf
 * or inf: X(name, float formula, int64 formula). NaN passes through like
 * torch.clamp; a NaN bound clamps nothing (fmin/fmax). The int64 form reads
 * bounds saturated to int64 (ad_clamp_bound_i64). */
#define AD_EW_CLAMP(X) X(clamp, isnan(v) ? v : fmin(fmax(v, P), Q), v < P ? P : v > Q ? Q : v)

/* Float predicates giving bool (f32/f64 -> bool), X(name, formula, the
 * answer for an integer tensor, which has no kernel). */
#define AD_EW_PRED_OPS(X) X(isnan, isnan(v) != 0, 0) X(isinf, isinf(v) != 0, 0) X(isfinite, isfinite(v) != 0, 1)

/* Binary ops over one dtype (f32/f64/i64): X(name, float formula, int64 formula). */
#define AD_EW_BINARY_ALL_OPS(X) \
    X(add, a + b, (int64_t)((uint64_t)a + (uint64_t)b)) \
    X(sub, a - b, (int64_t)((uint64_t)a - (uint64_t)b)) \
    X(mul, a * b, (int64_t)((uint64_t)a * (uint64_t)b)) \
    X(maximum, isnan(a) ? a : isnan(b) ? b : a > b ? a : b, a > b ? a : b) \
    X(minimum, isnan(a) ? a : isnan(b) ? b : a < b ? a : b, a < b ? a : b) \
    /* NaN ignored unless both are; ties (and -0.0 vs 0.0) give a */ \
    X(fmax, a >= b || isnan(b) ? a : b, a >= b ? a : b) \
    X(fmin, a <= b || isnan(b) ? a : b, a <= b ? a : b) \
    X(remainder, ad_fremainder(a, b), ad_iremainder(a, b)) \
    X(fmod, fmod(a, b), b == 0 || b == -1 ? 0 : a % b) \
    X(div_trunc, trunc(a / b), b == -1 ? ad_wrap_neg(a) : b == 0 ? 0 : a / b) \
    X(div_floor, (T)ad_floordiv(a, b), ad_ifloordiv(a, b))

/* Binary float-only ops (f32/f64). pow's int64 kernel is ad_ipow. */
#define AD_EW_BINARY_FLOAT_OPS(X) \
    X(div, a / b) X(pow, ad_pow(a, b)) X(atan2, atan2(a, b)) X(hypot, hypot(a, b)) X(copysign, copysign(a, b)) \
    X(xlogy, isnan(b) ? b : a == 0 ? (T)0 : a * log(b)) \
    X(logaddexp, isinf(a) && a == b ? a : fmax(a, b) + log1p(exp(-fabs(a - b)))) \
    X(logaddexp2, isinf(a) && a == b ? a : fmax(a, b) + log1p(exp2(-fabs(a - b))) * (T)AD_EW_LOG2E) \
    X(xlog1py, isnan(b) ? b : a == 0 ? (T)0 : a * log1p(b)) \
    /* the VJPs of sigmoid and tanh from their output (grad a, output b): one \
     * pass instead of three ops, as in torch */ \
    X(sigmoid_backward, a * b * ((T)1 - b)) \
    X(tanh_backward, a * ((T)1 - b * b))

/* Comparisons (f32/f64/i64 -> bool). */
#define AD_EW_COMPARE_OPS(X) X(eq, a == b) X(ne, a != b) X(lt, a < b) X(le, a <= b) X(gt, a > b) X(ge, a >= b)

/* Logical ops over bool (b8); the formulas hold for any dtype (export_c). */
#define AD_EW_LOGICAL_OPS(X) \
    X(logical_and, a && b) X(logical_or, a || b) X(logical_xor, (a != 0) != (b != 0))
#define AD_EW_LOGICAL_NOT(X) X(logical_not, !v)

/* Ternary ops; their kernels are listed by dtype in kernels/elementwise.h.
 * where(cond, a, b): every dtype. lerp: torch's two-sided form keeps it exact
 * at both ends. clamp_t(x, lo, hi): NaN anywhere passes through. */
#define AD_EW_WHERE(X) X(where, a ? b : c)
#define AD_EW_LERP(X) X(lerp, fabs(c) < 0.5 ? a + c * (b - a) : b - (b - a) * (1 - c))
#define AD_EW_CLAMP_T(X) \
    X(clamp_t, isnan(a) ? a : isnan(b) ? b : isnan(c) ? c : fmin(fmax(a, b), c), a < b ? b : a > c ? c : a)
/* a + value * b * c (f32/f64/i64) and a + value * b / c (f32/f64) */
#define AD_EW_ADDCMUL(X) \
    X(addcmul, a + val * b * c, (int64_t)((uint64_t)a + (uint64_t)val * (uint64_t)b * (uint64_t)c))
#define AD_EW_ADDCDIV(X) X(addcdiv, a + val * b / c)

#endif

/* kernels/elementwise.c: the elementwise kernels over contiguous arrays,
 * generated per dtype from the op lists of kernels/elementwise.h. */
#include "kernels/elementwise.h"

#include <string.h>
#include <tgmath.h>
#ifdef _OPENMP
#include <omp.h>
#define AD_IN_TEAM() omp_in_parallel()
#else /* the fuzz build has no OpenMP */
#define AD_IN_TEAM() 0
#endif

#include "kernels/kernel_limits.h"
#include "kernels/ew_par.h"
#include "kernels/ew_simd.h"
#include "kernels/scalar_math.h"
#include "kernels/special_math.h"

/* Elements handed to one SLEEF block call: small enough to stay in L1/L2,
 * large enough that the per-block dispatch is free. */
#define AD_EW_BLOCK 4096

#define AD_PI 3.14159265358979323846
#define AD_SQRT1_2 0.70710678118654752440
#define AD_SQRT_2_PI 0.79788456080286535588  /* sqrt(2 / pi) */
#define AD_SELU_ALPHA 1.6732632423543772848170429916717
#define AD_SELU_SCALE 1.0507009873554804934193349852946
#define AD_SOFTPLUS_THRESHOLD 20

/* One vectorisable loop over n elements with 'i' in scope. Parallelism is
 * the caller's (bi_elementwise.c splits large calls into chunks): an OpenMP
 * region here, even one disabled by an if clause, costs a team set-up and
 * futex traffic on every call, which dominated small-tensor ops. */
#define AD_EW_FOR(n) \
    _Pragma("omp simd") \
    for (int64_t i = 0; i < n; i++)

/* ---- SLEEF-backed unary functions ---- */

typedef void (*ad_ew_blk)(void *out, const void *x, int64_t n);

/* A call whose serial time is estimated past this many nanoseconds goes to
 * the OpenMP team. On the 2-core bench machine, team hot, best of 301: tanh
 * of 4300 float32 6.8 us on one thread, 4.9 on two; exp of 6100 float64 7.0
 * and 4.8 (torch splits tanh of 1e4 elements too). The crossover is lower,
 * but a busy machine makes each region a gamble on the second thread. */
#define AD_EW_PAR_NS 6000.0

/* Splits n elements into blocks for 'f', in parallel once n elements at 'ns'
 * nanoseconds each pass AD_EW_PAR_NS. Every element is computed by the same
 * code wherever a block starts, so the cut cannot change a value; the block
 * count is even so that two threads get equal shares. */
static void ad_ew_blocks(ad_ew_blk f, void *out, const void *x, int64_t n, size_t esize, double ns) {
    /* inside a team already (bi_elementwise.c cut a large call): this thread's share */
    if ((double)n * ns < AD_EW_PAR_NS || n < 2 * EW_PAR_ALIGN || AD_IN_TEAM()) { f(out, x, n); return; }
    const int64_t nb = 2 * ((n + 2 * AD_EW_BLOCK - 1) / (2 * AD_EW_BLOCK));
    const int64_t per = ((n + nb - 1) / nb + EW_PAR_ALIGN - 1) / EW_PAR_ALIGN * EW_PAR_ALIGN;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        int64_t lo = b * per, len = n - lo < per ? n - lo : per;
        if (len > 0) f((char *)out + (size_t)lo * esize, (const char *)x + (size_t)lo * esize, len);
    }
}

/* Nanoseconds per element of each SLEEF function (float32, float64) in its
 * AVX-512 form on the bench machine (an AMD EPYC, Zen 4; the AVX2 forms take
 * about 1.5 times as long), for the cut above. */
#define AD_EW_NS_exp 0.27, 0.99
#define AD_EW_NS_exp2 0.22, 0.80
#define AD_EW_NS_expm1 1.17, 2.38
#define AD_EW_NS_log 0.52, 1.20
#define AD_EW_NS_log2 0.57, 1.32
#define AD_EW_NS_log10 0.53, 1.29
#define AD_EW_NS_log1p 0.72, 1.90
#define AD_EW_NS_sqrt 0.47, 1.06
#define AD_EW_NS_sin 0.51, 1.19
#define AD_EW_NS_cos 0.67, 1.40
#define AD_EW_NS_tan 0.95, 1.93
#define AD_EW_NS_asin 0.70, 1.66
#define AD_EW_NS_acos 0.87, 2.10
#define AD_EW_NS_atan 0.87, 2.24
#define AD_EW_NS_sinh 1.26, 2.57
#define AD_EW_NS_cosh 1.25, 2.56
#define AD_EW_NS_tanh 1.42, 3.15
#define AD_EW_NS_asinh 2.28, 5.83
#define AD_EW_NS_acosh 2.11, 5.31
#define AD_EW_NS_atanh 1.22, 3.28
#define AD_EW_NS_erf 2.29, 6.20
#define AD_EW_NS_erfc 3.04, 7.69
#define AD_EW_NS_lgamma 4.99, 11.93
#define AD_EW_NS_F32_(f32, f64) (f32)
#define AD_EW_NS_F64_(f32, f64) (f64)
#define AD_EW_NS_F32(pair) AD_EW_NS_F32_(pair)
#define AD_EW_NS_F64(pair) AD_EW_NS_F64_(pair)

#if defined(__x86_64__) && defined(__GNUC__)

typedef float ad_v4f __attribute__((vector_size(16)));
typedef float ad_v8f __attribute__((vector_size(32)));
typedef float ad_v16f __attribute__((vector_size(64)));
typedef double ad_v2d __attribute__((vector_size(16)));
typedef double ad_v4d __attribute__((vector_size(32)));
typedef double ad_v8d __attribute__((vector_size(64)));

#define AD_ISA512 __attribute__((target("avx512f")))
#define AD_ISA256 __attribute__((target("avx2,fma")))

/* Full vectors straight through; the tail goes through a zero-padded vector
 * so every element is computed by the same code whatever its position. */
#define AD_EW_VLOOP(VT, T, F) { \
        T *o_ = out; const T *x_ = x; \
        const int64_t w_ = (int64_t)(sizeof(VT) / sizeof(T)); \
        int64_t i_ = 0; \
        for (; i_ + w_ <= n; i_ += w_) { VT v_; memcpy(&v_, x_ + i_, sizeof v_); v_ = F(v_); memcpy(o_ + i_, &v_, sizeof v_); } \
        if (i_ < n) { \
            VT v_ = {0}; size_t r_ = (size_t)(n - i_) * sizeof(T); \
            memcpy(&v_, x_ + i_, r_); v_ = F(v_); memcpy(o_ + i_, &v_, r_); } }

/* Declares the SLEEF entry points of one function under local names (asm
 * labels) because sleef.h hides the AVX ones unless the whole file is built
 * for AVX, and defines the three block functions per type. */
#define AD_EW_SLEEF_DEF(name, ulp) \
    extern ad_v16f ad_sl_##name##_f16(ad_v16f) __asm__("Sleef_" #name "f16_" #ulp "avx512f") AD_ISA512; \
    extern ad_v8f ad_sl_##name##_f8(ad_v8f) __asm__("Sleef_" #name "f8_" #ulp "avx2") AD_ISA256; \
    extern ad_v4f ad_sl_##name##_f4(ad_v4f) __asm__("Sleef_" #name "f4_" #ulp); \
    extern ad_v8d ad_sl_##name##_d8(ad_v8d) __asm__("Sleef_" #name "d8_" #ulp "avx512f") AD_ISA512; \
    extern ad_v4d ad_sl_##name##_d4(ad_v4d) __asm__("Sleef_" #name "d4_" #ulp "avx2") AD_ISA256; \
    extern ad_v2d ad_sl_##name##_d2(ad_v2d) __asm__("Sleef_" #name "d2_" #ulp); \
    AD_ISA512 static void ad_b512_##name##_f32(void *out, const void *x, int64_t n) AD_EW_VLOOP(ad_v16f, float, ad_sl_##name##_f16) \
    AD_ISA256 static void ad_b256_##name##_f32(void *out, const void *x, int64_t n) AD_EW_VLOOP(ad_v8f, float, ad_sl_##name##_f8) \
    static void ad_b128_##name##_f32(void *out, const void *x, int64_t n) AD_EW_VLOOP(ad_v4f, float, ad_sl_##name##_f4) \
    AD_ISA512 static void ad_b512_##name##_f64(void *out, const void *x, int64_t n) AD_EW_VLOOP(ad_v8d, double, ad_sl_##name##_d8) \
    AD_ISA256 static void ad_b256_##name##_f64(void *out, const void *x, int64_t n) AD_EW_VLOOP(ad_v4d, double, ad_sl_##name##_d4) \
    static void ad_b128_##name##_f64(void *out, const void *x, int64_t n) AD_EW_VLOOP(ad_v2d, double, ad_sl_##name##_d2) \
    void ad_k_##name##_f32(float *out, const float *x, int64_t n) { \
        ad_ew_blocks(ad_ew_pick(ad_b512_##name##_f32, ad_b256_##name##_f32, ad_b128_##name##_f32), out, x, n, sizeof(float), AD_EW_NS_F32(AD_EW_NS_##name)); } \
    void ad_k_##name##_f64(double *out, const double *x, int64_t n) { \
        ad_ew_blocks(ad_ew_pick(ad_b512_##name##_f64, ad_b256_##name##_f64, ad_b128_##name##_f64), out, x, n, sizeof(double), AD_EW_NS_F64(AD_EW_NS_##name)); }

/* The widest block function this CPU runs (the check is a load of a word
 * libgcc fills at startup, so it is done per call, not cached). */
static ad_ew_blk ad_ew_pick(ad_ew_blk f512, ad_ew_blk f256, ad_ew_blk f128) {
    if (__builtin_cpu_supports("avx512f")) return f512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return f256;
    return f128;
}

#else /* portable fallback: libm through <tgmath.h> */

#define AD_EW_SLEEF_DEF(name, ulp) \
    void ad_k_##name##_f32(float *out, const float *x, int64_t n) { AD_EW_FOR(n) out[i] = name(x[i]); } \
    void ad_k_##name##_f64(double *out, const double *x, int64_t n) { AD_EW_FOR(n) out[i] = name(x[i]); }

#endif

/* SLEEF's asinh and acosh overflow in x * x past sqrt(max) (asinh(1e200) gave
 * inf): their generated kernels are renamed and wrapped below. */
#define ad_k_asinh_f32 ad_k_asinh_sleef_f32
#define ad_k_asinh_f64 ad_k_asinh_sleef_f64
#define ad_k_acosh_f32 ad_k_acosh_sleef_f32
#define ad_k_acosh_f64 ad_k_acosh_sleef_f64
void ad_k_asinh_sleef_f32(float *out, const float *x, int64_t n);
void ad_k_asinh_sleef_f64(double *out, const double *x, int64_t n);
void ad_k_acosh_sleef_f32(float *out, const float *x, int64_t n);
void ad_k_acosh_sleef_f64(double *out, const double *x, int64_t n);
AD_EW_SLEEF_OPS(AD_EW_SLEEF_DEF)
#undef ad_k_asinh_f32
#undef ad_k_asinh_f64
#undef ad_k_acosh_f32
#undef ad_k_acosh_f64

/* Past these |x|, asinh(x) = sign(x) (log|x| + log 2) and acosh(x) = log x + log 2
 * to double (float) precision, and x * x would overflow. */
#define AD_EW_HUGE_F64 1e150
#define AD_EW_HUGE_F32 1e18f
#define AD_LN2 0.69314718055994530942

#define AD_EW_ARC_HYP(T, sfx, HUGE) \
    void ad_k_asinh_##sfx(T *out, const T *x, int64_t n) { \
        ad_k_asinh_sleef_##sfx(out, x, n); \
        for (int64_t i = 0; i < n; i++) \
            if (fabs(x[i]) > HUGE) out[i] = copysign(log(fabs(x[i])) + (T)AD_LN2, x[i]); } \
    void ad_k_acosh_##sfx(T *out, const T *x, int64_t n) { \
        ad_k_acosh_sleef_##sfx(out, x, n); \
        for (int64_t i = 0; i < n; i++) \
            if (x[i] > HUGE) out[i] = log(x[i]) + (T)AD_LN2; }
AD_EW_ARC_HYP(float, f32, AD_EW_HUGE_F32)
AD_EW_ARC_HYP(double, f64, AD_EW_HUGE_F64)

/* ---- unary ops from expressions over 'v' of type T ---- */

#define AD_EW_MAP(name, T, sfx, OT, EXPR) \
    void ad_k_##name##_##sfx(OT *out, const T *x, int64_t n) { \
        AD_EW_FOR(n) { const T v = x[i]; out[i] = (OT)(EXPR); } }

/* exp in the element's own precision: a float32 sigmoid through double exp
 * was the single hottest function of an LSTM step. */
#define EXP_T(T, x) (sizeof(T) == sizeof(float) ? (T)expf((float)(x)) : (T)exp((double)(x)))
#define F_rsqrt(T, v) ((T)1 / sqrt(v))
#define F_sigmoid(T, v) ((T)1 / ((T)1 + EXP_T(T, -(v))))
#define F_silu(T, v) ((v) / ((T)1 + EXP_T(T, -(v))))
#define F_softplus1(T, v) ((v) > AD_SOFTPLUS_THRESHOLD ? (v) : log1p(exp(v)))
#define F_mish(T, v) ((v) * tanh(F_softplus1(T, v)))
#define F_selu(T, v) ((T)AD_SELU_SCALE * ((v) > 0 ? (v) : (T)AD_SELU_ALPHA * expm1(v)))
#define F_gelu_erf(T, v) ((T)0.5 * (v) * ((T)1 + erf((v) * (T)AD_SQRT1_2)))
#define F_gelu_tanh(T, v) \
    ((T)0.5 * (v) * ((T)1 + tanh((T)AD_SQRT_2_PI * ((v) + (T)0.044715 * (v) * (v) * (v)))))
#define F_hardsigmoid(T, v) ((v) <= -3 ? (T)0 : (v) >= 3 ? (T)1 : (v) / (T)6 + (T)0.5)
#define F_hardswish(T, v) ((v) * fmin(fmax((v) + (T)3, (T)0), (T)6) / (T)6)
#define F_log_sigmoid(T, v) (fmin((v), (T)0) - log1p(exp(-fabs(v))))
#define F_reciprocal(T, v) ((T)1 / (v))
#define F_sinc(T, v) ((v) == 0 ? (T)1 : sin((T)AD_PI * (v)) / ((T)AD_PI * (v)))
#define F_erfinv(T, v) ((T)ad_erfinv(v))
#define F_digamma(T, v) ((T)ad_digamma(v))
#define F_abs(T, v) fabs(v)
#define F_neg(T, v) (-(v))
#define F_sign(T, v) ((T)(((v) > 0) - ((v) < 0)))  /* torch: sign(nan) is 0 */
#define F_square(T, v) ((v) * (v))
#define F_relu(T, v) ((v) < 0 ? (T)0 : (v))  /* keeps nan and -0.0 */
#define F_floor(T, v) floor(v)
#define F_ceil(T, v) ceil(v)
#define F_round(T, v) nearbyint(v)
#define F_trunc(T, v) trunc(v)
#define F_frac(T, v) ((v) - trunc(v))
#define I_abs(v) ((v) < 0 ? ad_wrap_neg(v) : (v))
#define I_neg(v) ad_wrap_neg(v)
#define I_sign(v) (((v) > 0) - ((v) < 0))
#define I_square(v) ((int64_t)((uint64_t)(v) * (uint64_t)(v)))
#define I_relu(v) ((v) > 0 ? (v) : 0)

#define AD_EW_GEN_F(name) \
    AD_EW_MAP(name, float, f32, float, F_##name(float, v)) \
    AD_EW_MAP(name, double, f64, double, F_##name(double, v))
#define AD_EW_GEN_FI(name) AD_EW_GEN_F(name) AD_EW_MAP(name, int64_t, i64, int64_t, I_##name(v))
#define AD_EW_GEN_PRED(name) AD_EW_MAP(name, float, f32, bool, name(v)) AD_EW_MAP(name, double, f64, bool, name(v))

AD_EW_FLOAT_OPS(AD_EW_GEN_F)
#define AD_EW_GEN_SPECIAL(name) \
    AD_EW_MAP(name, float, f32, float, ad_sp_##name((double)v)) AD_EW_MAP(name, double, f64, double, ad_sp_##name(v))
AD_EW_SPECIAL_OPS(AD_EW_GEN_SPECIAL)
AD_EW_FLOAT_MODE_OPS(AD_EW_GEN_F)
AD_EW_SAME_OPS(AD_EW_GEN_FI)
AD_EW_ROUND_OPS(AD_EW_GEN_F)
AD_EW_PRED_OPS(AD_EW_GEN_PRED)
AD_EW_MAP(logical_not, bool, b8, bool, !v)

/* ---- unary ops with parameters p, q ---- */

#define AD_EW_MAP_P(name, T, sfx, EXPR) \
    void ad_k_##name##_##sfx(T *out, const T *x, int64_t n, double p, double q) { \
        const T P = (T)p, Q = (T)q; (void)P; (void)Q; \
        AD_EW_FOR(n) { const T v = x[i]; out[i] = (T)(EXPR); } }

#define P_leaky_relu(T) (v > 0 ? v : v * P)
#define P_elu(T) (v > 0 ? v : P * expm1(v))
#define P_celu(T) (v > 0 ? v : P * expm1(v / P))  /* keeps nan, as torch */
#define P_softplus(T) (v * P > Q ? v : log1p(exp(v * P)) / P)
#define P_softshrink(T) (v > P ? v - P : v < -P ? v + P : (T)0)
#define P_hardshrink(T) (v >= -P && v <= P ? (T)0 : v)
/* p < 0 means no eps. */
#define P_logit(T) (ad_logit_##T(v, P))
/* p is the number of decimals; negative rounds to tens, hundreds... */
#define P_round_decimals(T) (p >= 0 ? nearbyint(v * Q) / Q : nearbyint(v / Q) * Q)
/* p is the order n, a non-negative integer checked by the builtin. */
#define P_polygamma(T) ad_polygamma((int)p, (double)v)

static inline float ad_logit_float(float v, float eps) {
    float z = eps < 0 ? v : v < eps ? eps : v > 1 - eps ? 1 - eps : v;
    return logf(z / (1 - z));
}
static inline double ad_logit_double(double v, double eps) {
    double z = eps < 0 ? v : v < eps ? eps : v > 1 - eps ? 1 - eps : v;
    return log(z / (1 - z));
}

#define AD_EW_GEN_P(name) AD_EW_MAP_P(name, float, f32, P_##name(float)) AD_EW_MAP_P(name, double, f64, P_##name(double))
AD_EW_PARAM_OPS(AD_EW_GEN_P)

/* NaN passes through like torch.clamp. */
AD_EW_MAP_P(clamp, float, f32, isnan(v) ? v : fmin(fmax(v, P), Q))
AD_EW_MAP_P(clamp, double, f64, isnan(v) ? v : fmin(fmax(v, P), Q))
void ad_k_clamp_i64(int64_t *out, const int64_t *x, int64_t n, double p, double q) {
    /* Bounds beyond int64 clamp nothing; the builtin passes integral values. */
    const int64_t lo = p <= -0x1p63 ? INT64_MIN : (int64_t)p, hi = q >= 0x1p63 ? INT64_MAX : (int64_t)q;
    AD_EW_FOR(n) { int64_t v = x[i] < lo ? lo : x[i]; out[i] = v > hi ? hi : v; }
}

/* ---- binary ops: a op b with a or b possibly a broadcast scalar ---- */

/* Four loops so the common cases keep unit strides and vectorize; an AVX2
 * copy of each, as torch dispatches on the CPU (the SSE2 baseline has half
 * the lanes). */
#define AD_EW_BIN(name, T, sfx, OT, EXPR) \
    AD_SIMD_CLONES void ad_k_##name##_##sfx(OT *out, const T *pa, int64_t sa, const T *pb, int64_t sb, int64_t n) { \
        if (sa && sb) { AD_EW_FOR(n) { const T a = pa[i], b = pb[i]; out[i] = (OT)(EXPR); } } \
        else if (sb) { const T a = pa[0]; AD_EW_FOR(n) { const T b = pb[i]; out[i] = (OT)(EXPR); } } \
        else if (sa) { const T b = pb[0]; AD_EW_FOR(n) { const T a = pa[i]; out[i] = (OT)(EXPR); } } \
        else if (n > 0) { const T a = pa[0], b = pb[0]; out[0] = (OT)(EXPR); for (int64_t i = 1; i < n; i++) out[i] = out[0]; } }

#define F_add(T) (a + b)
#define F_sub(T) (a - b)
#define F_mul(T) (a * b)
#define F_maximum(T) (isnan(a) ? a : isnan(b) ? b : a > b ? a : b)
#define F_minimum(T) (isnan(a) ? a : isnan(b) ? b : a < b ? a : b)
#define F_remainder(T) ad_fremainder_##T(a, b)
#define F_fmod(T) fmod(a, b)
#define F_div_trunc(T) trunc(a / b)
#define F_div_floor(T) ((T)ad_floordiv(a, b))
#define F_div(T) (a / b)
#define F_pow(T) ad_pow_##T(a, b)
#define F_atan2(T) atan2(a, b)
#define F_hypot(T) hypot(a, b)
#define F_copysign(T) copysign(a, b)
#define F_xlogy(T) (isnan(b) ? b : a == 0 ? (T)0 : a * log(b))
#define F_logaddexp(T) (isinf(a) && a == b ? a : fmax(a, b) + log1p(exp(-fabs(a - b))))
/* The VJPs of sigmoid and tanh from their output (grad a, output b): one
 * pass instead of three ops, as in torch. */
#define F_sigmoid_backward(T) (a * b * ((T)1 - b))
#define F_tanh_backward(T) (a * ((T)1 - b * b))
#define I_add(T) ((int64_t)((uint64_t)a + (uint64_t)b))
#define I_sub(T) ((int64_t)((uint64_t)a - (uint64_t)b))
#define I_mul(T) ((int64_t)((uint64_t)a * (uint64_t)b))
#define I_maximum(T) (a > b ? a : b)
#define I_minimum(T) (a < b ? a : b)
#define I_remainder(T) ad_iremainder(a, b)
#define I_fmod(T) (b == 0 || b == -1 ? 0 : a % b)
#define I_div_trunc(T) (b == -1 ? ad_wrap_neg(a) : b == 0 ? 0 : a / b)
#define I_div_floor(T) ad_ifloordiv(a, b)

/* pow: the exponents of kernels/scalar_math.h's ad_pow_exact without libm; the branch on b is
 * predicted when b is one scalar for the whole loop. float keeps pow in double. */
static inline double ad_pow_double(double a, double b) {
    double r;
    return ad_pow_exact_f64(a, b, &r) ? r : pow(a, b);
}
static inline float ad_pow_float(float a, float b) {
    float r;
    return ad_pow_exact_f32(a, b, &r) ? r : (float)pow(a, b);
}

static inline float ad_fremainder_float(float a, float b) {
    float r = fmodf(a, b);
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}
static inline double ad_fremainder_double(double a, double b) {
    double r = fmod(a, b);
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

#define AD_EW_GEN_BF(name) \
    AD_EW_BIN(name, float, f32, float, F_##name(float)) AD_EW_BIN(name, double, f64, double, F_##name(double))
#define AD_EW_GEN_BFI(name) AD_EW_GEN_BF(name) AD_EW_BIN(name, int64_t, i64, int64_t, I_##name(int64_t))
AD_EW_BINARY_ALL_OPS(AD_EW_GEN_BFI)
/* pow's generated loops become the general case of the kernels below */
#define ad_k_pow_f32 ad_k_pow_any_f32
#define ad_k_pow_f64 ad_k_pow_any_f64
void ad_k_pow_any_f32(float *out, const float *pa, int64_t sa, const float *pb, int64_t sb, int64_t n);
void ad_k_pow_any_f64(double *out, const double *pa, int64_t sa, const double *pb, int64_t sb, int64_t n);
AD_EW_BINARY_FLOAT_OPS(AD_EW_GEN_BF)
#undef ad_k_pow_f32
#undef ad_k_pow_f64
AD_EW_BIN(pow, int64_t, i64, int64_t, ad_ipow(a, b))
#define AD_EW_GEN_SPECIAL_BF(name) \
    AD_EW_BIN(name, float, f32, float, AD_SP_B_##name(float, a, b)) AD_EW_BIN(name, double, f64, double, AD_SP_B_##name(double, a, b))
AD_EW_SPECIAL_BINARY_OPS(AD_EW_GEN_SPECIAL_BF)

/* x ** 2 and x ** 1 with one scalar exponent (the square in a loss and its backward) get a
 * loop of their own that vectorises; every other case is the general loop. */
#define AD_EW_POW_FAST(T, sfx)                                                                 \
    void ad_k_pow_##sfx(T *out, const T *pa, int64_t sa, const T *pb, int64_t sb, int64_t n) { \
        if (sa && !sb && pb[0] == 2) { AD_EW_FOR(n) out[i] = pa[i] * pa[i]; return; }          \
        if (sa && !sb && pb[0] == 1) { AD_EW_FOR(n) out[i] = pa[i]; return; }                  \
        ad_k_pow_any_##sfx(out, pa, sa, pb, sb, n);                                            \
    }
AD_EW_POW_FAST(float, f32)
AD_EW_POW_FAST(double, f64)

#define C_eq (a == b)
#define C_ne (a != b)
#define C_lt (a < b)
#define C_le (a <= b)
#define C_gt (a > b)
#define C_ge (a >= b)
#define AD_EW_GEN_CMP(name) \
    AD_EW_BIN(name, float, f32, bool, C_##name) AD_EW_BIN(name, double, f64, bool, C_##name) \
    AD_EW_BIN(name, int64_t, i64, bool, C_##name)
AD_EW_COMPARE_OPS(AD_EW_GEN_CMP)

#define L_logical_and (a && b)
#define L_logical_or (a || b)
#define L_logical_xor (a != b)
#define AD_EW_GEN_LOGIC(name) AD_EW_BIN(name, bool, b8, bool, L_##name)
AD_EW_LOGICAL_OPS(AD_EW_GEN_LOGIC)

/* ---- ternary ops: general strides (0 or 1) on all three inputs ---- */

#define AD_EW_TERN(name, T, sfx, CT, EXPR) \
    void ad_k_##name##_##sfx(T *out, const CT *pa, int64_t sa, const T *pb, int64_t sb, const T *pc, int64_t sc, int64_t n) { \
        AD_EW_FOR(n) { const CT a = pa[i * sa]; const T b = pb[i * sb], c = pc[i * sc]; out[i] = (T)(EXPR); } }

AD_EW_TERN(where, float, f32, bool, a ? b : c)
AD_EW_TERN(where, double, f64, bool, a ? b : c)
AD_EW_TERN(where, int64_t, i64, bool, a ? b : c)
AD_EW_TERN(where, bool, b8, bool, a ? b : c)
/* torch's two-sided form keeps lerp exact at both ends. */
#define T_lerp (fabs(c) < 0.5 ? a + c * (b - a) : b - (b - a) * (1 - c))
AD_EW_TERN(lerp, float, f32, float, T_lerp)
AD_EW_TERN(lerp, double, f64, double, T_lerp)
#define T_clamp (isnan(a) ? a : isnan(b) ? b : isnan(c) ? c : fmin(fmax(a, b), c))
AD_EW_TERN(clamp_t, float, f32, float, T_clamp)
AD_EW_TERN(clamp_t, double, f64, double, T_clamp)
AD_EW_TERN(clamp_t, int64_t, i64, int64_t, a < b ? b : a > c ? c : a)

#define AD_EW_ADDC(name, T, sfx, EXPR) \
    void ad_k_##name##_##sfx(T *out, const T *pa, int64_t sa, const T *pb, int64_t sb, const T *pc, int64_t sc, int64_t n, double value) { \
        const T val = (T)value; \
        AD_EW_FOR(n) { const T a = pa[i * sa], b = pb[i * sb], c = pc[i * sc]; out[i] = (T)(EXPR); } }

AD_EW_ADDC(addcmul, float, f32, a + val * b * c)
AD_EW_ADDC(addcmul, double, f64, a + val * b * c)
AD_EW_ADDC(addcmul, int64_t, i64, (int64_t)((uint64_t)a + (uint64_t)val * (uint64_t)b * (uint64_t)c))
AD_EW_ADDC(addcdiv, float, f32, a + val * b / c)
AD_EW_ADDC(addcdiv, double, f64, a + val * b / c)

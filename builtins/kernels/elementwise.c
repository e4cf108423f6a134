/* kernels/elementwise.c: the elementwise kernels over contiguous arrays,
 * generated per dtype from the rows of kernels/ew_table.h. */
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

/* ---- unary ops from the table's formulas over 'v' of type T ---- */

/* T is a typedef in each kernel because the formula is a macro argument,
 * where a macro parameter named T would not reach; <tgmath.h> then picks
 * the float or double function from T as the CUDA overloads and export_c do. */
#define AD_EW_MAP(name, TT, sfx, OT, EXPR) \
    void ad_k_##name##_##sfx(OT *out, const TT *x, int64_t n) { \
        typedef TT T; (void)sizeof(T); \
        AD_EW_FOR(n) { const T v = x[i]; out[i] = (OT)(EXPR); } }
/* The same with an AVX2 copy (the simple ops that vectorise; compile()'s
 * fuser calls these too). */
#define AD_EW_MAP_SIMD(name, TT, sfx, OT, EXPR) AD_SIMD_CLONES AD_EW_MAP(name, TT, sfx, OT, EXPR)

#define AD_EW_GEN_F(name, EXPR) AD_EW_MAP(name, float, f32, float, EXPR) AD_EW_MAP(name, double, f64, double, EXPR)
#define AD_EW_GEN_FI(name, EXPR, IEXPR) \
    AD_EW_MAP_SIMD(name, float, f32, float, EXPR) AD_EW_MAP_SIMD(name, double, f64, double, EXPR) \
    AD_EW_MAP_SIMD(name, int64_t, i64, int64_t, IEXPR)
#define AD_EW_GEN_PRED(name, EXPR, IEXPR) AD_EW_MAP(name, float, f32, bool, EXPR) AD_EW_MAP(name, double, f64, bool, EXPR)

AD_EW_FLOAT_OPS(AD_EW_GEN_F)
#define AD_EW_GEN_SPECIAL(name) \
    AD_EW_MAP(name, float, f32, float, ad_sp_##name((double)v)) AD_EW_MAP(name, double, f64, double, ad_sp_##name(v))
AD_EW_SPECIAL_OPS(AD_EW_GEN_SPECIAL)
AD_EW_FLOAT_MODE_OPS(AD_EW_GEN_F)
AD_EW_SAME_OPS(AD_EW_GEN_FI)
AD_EW_ROUND_OPS(AD_EW_GEN_F)
AD_EW_PRED_OPS(AD_EW_GEN_PRED)
#define AD_EW_GEN_NOT(name, EXPR) AD_EW_MAP(name, bool, b8, bool, EXPR)
AD_EW_LOGICAL_NOT(AD_EW_GEN_NOT)

/* ---- unary ops with parameters p, q ---- */

#define AD_EW_MAP_P(name, TT, sfx, EXPR) \
    void ad_k_##name##_##sfx(TT *out, const TT *x, int64_t n, double p, double q) { \
        typedef TT T; const T P = (T)p, Q = (T)q; (void)P; (void)Q; (void)q; \
        AD_EW_FOR(n) { const T v = x[i]; out[i] = (T)(EXPR); } }

#define AD_EW_GEN_P(name, EXPR) AD_EW_MAP_P(name, float, f32, EXPR) AD_EW_MAP_P(name, double, f64, EXPR)
AD_EW_PARAM_OPS(AD_EW_GEN_P)

#define AD_EW_GEN_CLAMP(name, EXPR, IEXPR) \
    AD_EW_MAP_P(name, float, f32, EXPR) AD_EW_MAP_P(name, double, f64, EXPR) \
    void ad_k_##name##_i64(int64_t *out, const int64_t *x, int64_t n, double p, double q) { \
        const int64_t P = ad_clamp_bound_i64(p), Q = ad_clamp_bound_i64(q); \
        AD_EW_FOR(n) { const int64_t v = x[i]; out[i] = IEXPR; } }
AD_EW_CLAMP(AD_EW_GEN_CLAMP)

/* ---- binary ops: a op b with a or b possibly a broadcast scalar ---- */

/* Four loops so the common cases keep unit strides and vectorize; an AVX2
 * copy of each, as torch dispatches on the CPU (the SSE2 baseline has half
 * the lanes). compile()'s fuser (vm/jit/fuse.c) calls these. */
#define AD_EW_BIN(name, TT, sfx, OT, EXPR) \
    AD_SIMD_CLONES void ad_k_##name##_##sfx(OT *out, const TT *pa, int64_t sa, const TT *pb, int64_t sb, int64_t n) { \
        typedef TT T; (void)sizeof(T); \
        if (sa && sb) { AD_EW_FOR(n) { const T a = pa[i], b = pb[i]; out[i] = (OT)(EXPR); } } \
        else if (sb) { const T a = pa[0]; AD_EW_FOR(n) { const T b = pb[i]; out[i] = (OT)(EXPR); } } \
        else if (sa) { const T b = pb[0]; AD_EW_FOR(n) { const T a = pa[i]; out[i] = (OT)(EXPR); } } \
        else if (n > 0) { const T a = pa[0], b = pb[0]; out[0] = (OT)(EXPR); for (int64_t i = 1; i < n; i++) out[i] = out[0]; } }

#define AD_EW_GEN_BF(name, EXPR) AD_EW_BIN(name, float, f32, float, EXPR) AD_EW_BIN(name, double, f64, double, EXPR)
#define AD_EW_GEN_BFI(name, EXPR, IEXPR) AD_EW_GEN_BF(name, EXPR) AD_EW_BIN(name, int64_t, i64, int64_t, IEXPR)
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

#define AD_EW_GEN_CMP(name, EXPR) \
    AD_EW_BIN(name, float, f32, bool, EXPR) AD_EW_BIN(name, double, f64, bool, EXPR) AD_EW_BIN(name, int64_t, i64, bool, EXPR)
AD_EW_COMPARE_OPS(AD_EW_GEN_CMP)

#define AD_EW_GEN_LOGIC(name, EXPR) AD_EW_BIN(name, bool, b8, bool, EXPR)
AD_EW_LOGICAL_OPS(AD_EW_GEN_LOGIC)

/* ---- ternary ops: general strides (0 or 1) on all three inputs ---- */

#define AD_EW_TERN(name, TT, sfx, CT, EXPR) \
    void ad_k_##name##_##sfx(TT *out, const CT *pa, int64_t sa, const TT *pb, int64_t sb, const TT *pc, int64_t sc, int64_t n) { \
        typedef TT T; (void)sizeof(T); \
        AD_EW_FOR(n) { const CT a = pa[i * sa]; const T b = pb[i * sb], c = pc[i * sc]; out[i] = (T)(EXPR); } }

#define AD_EW_GEN_WHERE(name, EXPR) \
    AD_EW_TERN(name, float, f32, bool, EXPR) AD_EW_TERN(name, double, f64, bool, EXPR) \
    AD_EW_TERN(name, int64_t, i64, bool, EXPR) AD_EW_TERN(name, bool, b8, bool, EXPR)
AD_EW_WHERE(AD_EW_GEN_WHERE)
#define AD_EW_GEN_TERN_F(name, EXPR) AD_EW_TERN(name, float, f32, float, EXPR) AD_EW_TERN(name, double, f64, double, EXPR)
#define AD_EW_GEN_TERN_FI(name, EXPR, IEXPR) AD_EW_GEN_TERN_F(name, EXPR) AD_EW_TERN(name, int64_t, i64, int64_t, IEXPR)
AD_EW_LERP(AD_EW_GEN_TERN_F)
AD_EW_CLAMP_T(AD_EW_GEN_TERN_FI)

#define AD_EW_ADDC(name, TT, sfx, EXPR) \
    void ad_k_##name##_##sfx(TT *out, const TT *pa, int64_t sa, const TT *pb, int64_t sb, const TT *pc, int64_t sc, int64_t n, double value) { \
        typedef TT T; const T val = (T)value; \
        AD_EW_FOR(n) { const T a = pa[i * sa], b = pb[i * sb], c = pc[i * sc]; out[i] = (T)(EXPR); } }
#define AD_EW_GEN_ADDC_F(name, EXPR) AD_EW_ADDC(name, float, f32, EXPR) AD_EW_ADDC(name, double, f64, EXPR)
#define AD_EW_GEN_ADDC_FI(name, EXPR, IEXPR) AD_EW_GEN_ADDC_F(name, EXPR) AD_EW_ADDC(name, int64_t, i64, IEXPR)
AD_EW_ADDCMUL(AD_EW_GEN_ADDC_FI)
AD_EW_ADDCDIV(AD_EW_GEN_ADDC_F)

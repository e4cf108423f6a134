// tensor_kernels.cu: the generic tensor kernels of the CUDA module (elementwise
// ops by CPU kernel name, strided copies and fills, reductions); tensor_cuda.h.
//
// The elementwise functors and the name table are generated from the rows of
// builtins/kernels/ew_table.h, the formulas the CPU kernels are made of (a
// float32 op calls the single-precision function, as <tgmath.h> picks it
// there), so a row added to the table gets its device functor with it.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../builtins/kernels/elementwise.h"
#include "../builtins/kernels/scalar_math.h"
#include "../builtins/kernels/special_math.h"
#include "tensor_cuda.h"

namespace {

typedef unsigned char b8; // addsl's bool: one byte, 0 or 1

const int EW_THREADS = 256;
// Grid-stride kernels need no more blocks than fill the GPU a few times over;
// past that each thread loops.
const int64_t EW_MAX_BLOCKS = 4096;

int ew_grid(int64_t n) {
    int64_t g = (n + EW_THREADS - 1) / EW_THREADS;
    return (int)(g > EW_MAX_BLOCKS ? EW_MAX_BLOCKS : (g < 1 ? 1 : g));
}

#define GRID_STRIDE(t, n)                                                                 \
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < (n);            \
         t += (int64_t)gridDim.x * blockDim.x)

// ---- the math functions the table's formulas call ------------------------------
//
// Float and double overloads under the C names, in a namespace of their own:
// a formula's unqualified call finds these first, as <tgmath.h> picks the
// float function for a float argument on the CPU.
namespace ewm {

#define M1(fn)                                                                            \
    __device__ __forceinline__ float fn(float x) { return ::fn##f(x); }                  \
    __device__ __forceinline__ double fn(double x) { return ::fn(x); }
#define M1_SLEEF(fn, ulp) M1(fn)
AD_EW_SLEEF_OPS(M1_SLEEF)
M1(fabs)
M1(floor)
M1(ceil)
M1(trunc)
M1(nearbyint)
#define M2(fn)                                                                            \
    __device__ __forceinline__ float fn(float a, float b) { return ::fn##f(a, b); }      \
    __device__ __forceinline__ double fn(double a, double b) { return ::fn(a, b); }
M2(fmod)
M2(atan2)
M2(hypot)
M2(copysign)
M2(fmin)
M2(fmax)

// ---- unary functors: f(v), with an int64_t overload where the op has one ------

#define U_OP(name, EXPR)                                                                  \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T v) { return (T)(EXPR); }              \
    };
#define UI_OP(name, EXPR, IEXPR)                                                          \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T v) { return (T)(EXPR); }              \
        __device__ static int64_t f(int64_t v) { return IEXPR; }                         \
    };
#define U_SLEEF(name, ulp) U_OP(name, name(v))
AD_EW_SLEEF_OPS(U_SLEEF)
AD_EW_FLOAT_OPS(U_OP)
#define U_SPECIAL(name) U_OP(name, ad_sp_##name((double)v))
AD_EW_SPECIAL_OPS(U_SPECIAL)
AD_EW_FLOAT_MODE_OPS(U_OP)
AD_EW_ROUND_OPS(U_OP)
AD_EW_SAME_OPS(UI_OP)

#define PRED_OP(name, EXPR, IEXPR)                                                        \
    struct op_##name {                                                                    \
        template <class T> __device__ static bool f(T v) { return EXPR; }                \
    };
AD_EW_PRED_OPS(PRED_OP)
#define NOT_OP(name, EXPR)                                                                \
    struct op_##name {                                                                    \
        __device__ static bool f(b8 v) { return EXPR; }                                  \
    };
AD_EW_LOGICAL_NOT(NOT_OP)

// ---- unary functors with parameters: f(v, p, q) -------------------------------

#define P_OP(name, EXPR)                                                                  \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T v, double p, double q) {              \
            const T P = (T)p, Q = (T)q;                                                   \
            (void)P;                                                                      \
            (void)Q;                                                                      \
            (void)q;                                                                      \
            return (T)(EXPR);                                                             \
        }                                                                                 \
    };
AD_EW_PARAM_OPS(P_OP)

#define CLAMP_OP(name, EXPR, IEXPR)                                                       \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T v, double p, double q) {              \
            const T P = (T)p, Q = (T)q;                                                   \
            return (T)(EXPR);                                                             \
        }                                                                                 \
        __device__ static int64_t f(int64_t v, double p, double q) {                      \
            const int64_t P = ad_clamp_bound_i64(p), Q = ad_clamp_bound_i64(q);          \
            return IEXPR;                                                                 \
        }                                                                                 \
    };
AD_EW_CLAMP(CLAMP_OP)

// ---- binary functors: f(a, b) -------------------------------------------------

#define B_OP(name, EXPR)                                                                  \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T a, T b) { return (T)(EXPR); }         \
    };
#define BI_OP(name, EXPR, IEXPR)                                                          \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T a, T b) { return (T)(EXPR); }         \
        __device__ static int64_t f(int64_t a, int64_t b) { return IEXPR; }              \
    };
AD_EW_BINARY_ALL_OPS(BI_OP)
AD_EW_BINARY_FLOAT_OPS(B_OP)
// pow's int64 form is a kernel of its own on the CPU too
struct op_pow_i64 {
    __device__ static int64_t f(int64_t a, int64_t b) { return ad_ipow(a, b); }
};
#define B_SPECIAL(name) B_OP(name, AD_SP_B_##name(T, a, b))
AD_EW_SPECIAL_BINARY_OPS(B_SPECIAL)

#define C_OP(name, EXPR)                                                                  \
    struct op_##name {                                                                    \
        template <class T> __device__ static bool f(T a, T b) { return EXPR; }           \
    };
AD_EW_COMPARE_OPS(C_OP)
AD_EW_LOGICAL_OPS(C_OP)

// ---- ternary functors: f(a, b, c), and addc: f(a, b, c, value) -----------------

#define W_OP(name, EXPR)                                                                  \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(b8 a, T b, T c) { return EXPR; }        \
    };
AD_EW_WHERE(W_OP)
#define T_OP(name, EXPR)                                                                  \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T a, T b, T c) { return (T)(EXPR); }    \
    };
#define TI_OP(name, EXPR, IEXPR)                                                          \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T a, T b, T c) { return (T)(EXPR); }    \
        __device__ static int64_t f(int64_t a, int64_t b, int64_t c) { return IEXPR; }   \
    };
AD_EW_LERP(T_OP)
AD_EW_CLAMP_T(TI_OP)
#define A_OP(name, EXPR)                                                                  \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T a, T b, T c, T val) { return (T)(EXPR); } \
    };
#define AI_OP(name, EXPR, IEXPR)                                                          \
    struct op_##name {                                                                    \
        template <class T> __device__ static T f(T a, T b, T c, T val) { return (T)(EXPR); } \
        __device__ static int64_t f(int64_t a, int64_t b, int64_t c, int64_t val) { return IEXPR; } \
    };
AD_EW_ADDCMUL(AI_OP)
AD_EW_ADDCDIV(A_OP)

} // namespace ewm

// ---- kernels, one per shape -----------------------------------------------------

template <class Op, class T, class OT> __global__ void k_unary(OT *out, const T *x, int64_t n) {
    GRID_STRIDE(i, n) out[i] = (OT)Op::f(x[i]);
}

template <class Op, class T>
__global__ void k_param(T *out, const T *x, int64_t n, double p, double q) {
    GRID_STRIDE(i, n) out[i] = Op::f(x[i], p, q);
}

template <class Op, class T, class OT>
__global__ void k_binary(OT *out, const T *a, int64_t sa, const T *b, int64_t sb, int64_t n) {
    GRID_STRIDE(i, n) out[i] = (OT)Op::f(a[i * sa], b[i * sb]);
}

template <class Op, class CT, class T>
__global__ void k_ternary(T *out, const CT *a, int64_t sa, const T *b, int64_t sb, const T *c,
                          int64_t sc, int64_t n) {
    GRID_STRIDE(i, n) out[i] = Op::f(a[i * sa], b[i * sb], c[i * sc]);
}

template <class Op, class T>
__global__ void k_addc(T *out, const T *a, int64_t sa, const T *b, int64_t sb, const T *c,
                       int64_t sc, int64_t n, T val) {
    GRID_STRIDE(i, n) out[i] = Op::f(a[i * sa], b[i * sb], c[i * sc], val);
}

// ---- launchers: one signature for the name table --------------------------------

typedef cudaError_t (*ew_launch)(void *out, const void *const *in, const int64_t *s, int64_t n,
                                 const double *p, cudaStream_t st);

template <class Op, class T, class OT>
cudaError_t l_unary(void *out, const void *const *in, const int64_t *, int64_t n, const double *,
                    cudaStream_t st) {
    k_unary<Op, T, OT><<<ew_grid(n), EW_THREADS, 0, st>>>((OT *)out, (const T *)in[0], n);
    return cudaGetLastError();
}

template <class Op, class T>
cudaError_t l_param(void *out, const void *const *in, const int64_t *, int64_t n, const double *p,
                    cudaStream_t st) {
    k_param<Op, T><<<ew_grid(n), EW_THREADS, 0, st>>>((T *)out, (const T *)in[0], n, p[0], p[1]);
    return cudaGetLastError();
}

template <class Op, class T, class OT>
cudaError_t l_binary(void *out, const void *const *in, const int64_t *s, int64_t n,
                     const double *, cudaStream_t st) {
    k_binary<Op, T, OT><<<ew_grid(n), EW_THREADS, 0, st>>>((OT *)out, (const T *)in[0], s[0],
                                                           (const T *)in[1], s[1], n);
    return cudaGetLastError();
}

template <class Op, class CT, class T>
cudaError_t l_ternary(void *out, const void *const *in, const int64_t *s, int64_t n,
                      const double *, cudaStream_t st) {
    k_ternary<Op, CT, T><<<ew_grid(n), EW_THREADS, 0, st>>>(
        (T *)out, (const CT *)in[0], s[0], (const T *)in[1], s[1], (const T *)in[2], s[2], n);
    return cudaGetLastError();
}

template <class Op, class T>
cudaError_t l_addc(void *out, const void *const *in, const int64_t *s, int64_t n, const double *p,
                   cudaStream_t st) {
    k_addc<Op, T><<<ew_grid(n), EW_THREADS, 0, st>>>((T *)out, (const T *)in[0], s[0],
                                                     (const T *)in[1], s[1], (const T *)in[2],
                                                     s[2], n, (T)p[0]);
    return cudaGetLastError();
}

// ---- the name table, rows as in builtins/kernels/elementwise.def ----------------

enum ew_shape { SH_UNARY, SH_PARAM, SH_BINARY, SH_TERNARY, SH_ADDC };
const int SHAPE_NIN[] = {1, 1, 2, 3, 3};
const int SHAPE_NP[] = {0, 2, 0, 0, 1};

struct ew_row {
    const char *name;
    ew_shape shape;
    ew_launch fn;
};

#define ROW(name, sfx, shape, fn) {#name "_" #sfx, shape, fn},
#define ROWS_F(name)                                                                      \
    ROW(name, f32, SH_UNARY, (l_unary<ewm::op_##name, float, float>))                          \
    ROW(name, f64, SH_UNARY, (l_unary<ewm::op_##name, double, double>))
#define ROWS_SLEEF(name, ulp) ROWS_F(name)
#define ROWS_FI(name) ROWS_F(name) ROW(name, i64, SH_UNARY, (l_unary<ewm::op_##name, int64_t, int64_t>))
#define ROWS_P(name)                                                                      \
    ROW(name, f32, SH_PARAM, (l_param<ewm::op_##name, float>))                                 \
    ROW(name, f64, SH_PARAM, (l_param<ewm::op_##name, double>))
#define ROWS_PRED(name)                                                                   \
    ROW(name, f32, SH_UNARY, (l_unary<ewm::op_##name, float, b8>))                             \
    ROW(name, f64, SH_UNARY, (l_unary<ewm::op_##name, double, b8>))
#define ROWS_BF(name)                                                                     \
    ROW(name, f32, SH_BINARY, (l_binary<ewm::op_##name, float, float>))                        \
    ROW(name, f64, SH_BINARY, (l_binary<ewm::op_##name, double, double>))
#define ROWS_BFI(name)                                                                    \
    ROWS_BF(name) ROW(name, i64, SH_BINARY, (l_binary<ewm::op_##name, int64_t, int64_t>))
#define ROWS_CMP(name)                                                                    \
    ROW(name, f32, SH_BINARY, (l_binary<ewm::op_##name, float, b8>))                           \
    ROW(name, f64, SH_BINARY, (l_binary<ewm::op_##name, double, b8>))                          \
    ROW(name, i64, SH_BINARY, (l_binary<ewm::op_##name, int64_t, b8>))
#define ROWS_LOGIC(name) ROW(name, b8, SH_BINARY, (l_binary<ewm::op_##name, b8, b8>))
// adapters for kernels/ew_table.h's rows, X(name, formula...)
#define ROWS_F_(name, ...) ROWS_F(name)
#define ROWS_FI_(name, ...) ROWS_FI(name)
#define ROWS_P_(name, ...) ROWS_P(name)
#define ROWS_PRED_(name, ...) ROWS_PRED(name)
#define ROWS_BF_(name, ...) ROWS_BF(name)
#define ROWS_BFI_(name, ...) ROWS_BFI(name)
#define ROWS_CMP_(name, ...) ROWS_CMP(name)
#define ROWS_LOGIC_(name, ...) ROWS_LOGIC(name)

const ew_row EW_ROWS[] = {
    AD_EW_SLEEF_OPS(ROWS_SLEEF)
    AD_EW_FLOAT_OPS(ROWS_F_)
    AD_EW_SPECIAL_OPS(ROWS_F)
    AD_EW_FLOAT_MODE_OPS(ROWS_F_)
    AD_EW_SAME_OPS(ROWS_FI_)
    AD_EW_ROUND_OPS(ROWS_F_)
    AD_EW_PARAM_OPS(ROWS_P_)
    AD_EW_PRED_OPS(ROWS_PRED_)
    AD_EW_BINARY_ALL_OPS(ROWS_BFI_)
    AD_EW_BINARY_FLOAT_OPS(ROWS_BF_)
    AD_EW_SPECIAL_BINARY_OPS(ROWS_BF)
    AD_EW_COMPARE_OPS(ROWS_CMP_)
    AD_EW_LOGICAL_OPS(ROWS_LOGIC_)
    ROW(pow, i64, SH_BINARY, (l_binary<ewm::op_pow_i64, int64_t, int64_t>))
    ROW(logical_not, b8, SH_UNARY, (l_unary<ewm::op_logical_not, b8, b8>))
    ROW(clamp, f32, SH_PARAM, (l_param<ewm::op_clamp, float>))
    ROW(clamp, f64, SH_PARAM, (l_param<ewm::op_clamp, double>))
    ROW(clamp, i64, SH_PARAM, (l_param<ewm::op_clamp, int64_t>))
    ROW(where, f32, SH_TERNARY, (l_ternary<ewm::op_where, b8, float>))
    ROW(where, f64, SH_TERNARY, (l_ternary<ewm::op_where, b8, double>))
    ROW(where, i64, SH_TERNARY, (l_ternary<ewm::op_where, b8, int64_t>))
    ROW(where, b8, SH_TERNARY, (l_ternary<ewm::op_where, b8, b8>))
    ROW(lerp, f32, SH_TERNARY, (l_ternary<ewm::op_lerp, float, float>))
    ROW(lerp, f64, SH_TERNARY, (l_ternary<ewm::op_lerp, double, double>))
    ROW(clamp_t, f32, SH_TERNARY, (l_ternary<ewm::op_clamp_t, float, float>))
    ROW(clamp_t, f64, SH_TERNARY, (l_ternary<ewm::op_clamp_t, double, double>))
    ROW(clamp_t, i64, SH_TERNARY, (l_ternary<ewm::op_clamp_t, int64_t, int64_t>))
    ROW(addcmul, f32, SH_ADDC, (l_addc<ewm::op_addcmul, float>))
    ROW(addcmul, f64, SH_ADDC, (l_addc<ewm::op_addcmul, double>))
    ROW(addcmul, i64, SH_ADDC, (l_addc<ewm::op_addcmul, int64_t>))
    ROW(addcdiv, f32, SH_ADDC, (l_addc<ewm::op_addcdiv, float>))
    ROW(addcdiv, f64, SH_ADDC, (l_addc<ewm::op_addcdiv, double>))
};

const ew_row *ew_find(const char *name) {
    for (size_t k = 0; k < sizeof EW_ROWS / sizeof EW_ROWS[0]; k++)
        if (strcmp(EW_ROWS[k].name, name) == 0) return &EW_ROWS[k];
    return NULL;
}

} // namespace

extern "C" int addsl_cuda_ew(const char *kname, void *out, int nin, const void *const *in,
                             const int64_t *s, int64_t n, const double *p, int np, void *stream) {
    const ew_row *row = kname ? ew_find(kname) : NULL;
    if (!row) return ADDSL_CUDA_ENOKERNEL;
    const int want_in = SHAPE_NIN[row->shape], want_p = SHAPE_NP[row->shape];
    if (nin != want_in || np != want_p || n < 0 || (want_p && !p)) return ADDSL_CUDA_EARG;
    if (n == 0) return 0;
    if (!out || !in) return ADDSL_CUDA_EARG;
    for (int k = 0; k < nin; k++) {
        if (!in[k]) return ADDSL_CUDA_EARG;
        // a stride other than 0/1 would read past the input
        if (row->shape >= SH_BINARY && (!s || (s[k] != 0 && s[k] != 1))) return ADDSL_CUDA_EARG;
    }
    return (int)row->fn(out, in, s, n, p, (cudaStream_t)stream);
}

// ---- strided copies and fills ---------------------------------------------------

namespace {

// Shape and strides by value: a kernel parameter, so no device copy is needed.
struct dims {
    int nd;
    int64_t shape[ADDSL_CUDA_MAX_DIMS], ds[ADDSL_CUDA_MAX_DIMS], ss[ADDSL_CUDA_MAX_DIMS];
};

// Drops size-1 dims and merges dims contiguous with each other in both
// operands (as vm/tensor/tensor.c's coalesce), so most copies become one flat loop
// without divisions. Returns the element count.
int64_t dims_make(dims *D, int ndim, const int64_t *shape, const int64_t *ds, const int64_t *ss) {
    int64_t numel = 1;
    D->nd = 0;
    for (int k = 0; k < ndim; k++) {
        numel *= shape[k];
        if (shape[k] == 1) continue;
        const int m = D->nd;
        const int64_t sk = ss ? ss[k] : 0;
        if (m > 0 && D->ds[m - 1] == ds[k] * shape[k] && D->ss[m - 1] == sk * shape[k]) {
            D->shape[m - 1] *= shape[k];
            D->ds[m - 1] = ds[k];
            D->ss[m - 1] = sk;
            continue;
        }
        D->shape[m] = shape[k];
        D->ds[m] = ds[k];
        D->ss[m] = sk;
        D->nd = m + 1;
    }
    return numel;
}

// Storage offsets (in elements) of flat element i in dst and src.
__device__ __forceinline__ void unravel(const dims &D, int64_t i, int64_t *od, int64_t *os) {
    int64_t d = 0, s = 0;
    for (int k = D.nd - 1; k >= 0 && i; k--) {
        int64_t n = D.shape[k], c = i % n;
        i /= n;
        d += c * D.ds[k];
        s += c * D.ss[k];
    }
    *od = d;
    *os = s;
}

// vm/tensor/tensor.c's conversions: float -> int64 truncates, NaN and out of range
// give INT64_MIN; int64 -> float is the direct (rounded) cast; -> bool is != 0.
__device__ __host__ __forceinline__ int64_t to_i64(double v) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}
template <class D> struct conv {
    template <class S> __device__ static D f(S v) { return (D)v; }
};
template <> struct conv<int64_t> {
    __device__ static int64_t f(float v) { return to_i64(v); }
    __device__ static int64_t f(double v) { return to_i64(v); }
    __device__ static int64_t f(int64_t v) { return v; }
    __device__ static int64_t f(b8 v) { return v; }
};
template <> struct conv<b8> {
    template <class S> __device__ static b8 f(S v) { return v != 0; }
};

template <class DT, class ST>
__global__ void k_copy(DT *dst, const ST *src, dims D, int64_t n) {
    if (D.nd == 1) {
        const int64_t sd = D.ds[0], ss = D.ss[0];
        GRID_STRIDE(i, n) dst[i * sd] = conv<DT>::f(src[i * ss]);
        return;
    }
    GRID_STRIDE(i, n) {
        int64_t od, os;
        unravel(D, i, &od, &os);
        dst[od] = conv<DT>::f(src[os]);
    }
}

template <class DT, class ST>
cudaError_t copy_launch(void *dst, const void *src, const dims &D, int64_t n, cudaStream_t st) {
    k_copy<DT, ST><<<ew_grid(n), EW_THREADS, 0, st>>>((DT *)dst, (const ST *)src, D, n);
    return cudaGetLastError();
}

template <class DT>
cudaError_t copy_from(int sdt, void *dst, const void *src, const dims &D, int64_t n,
                      cudaStream_t st) {
    switch (sdt) {
    case 0: return copy_launch<DT, float>(dst, src, D, n, st);
    case 1: return copy_launch<DT, double>(dst, src, D, n, st);
    case 2: return copy_launch<DT, int64_t>(dst, src, D, n, st);
    default: return copy_launch<DT, b8>(dst, src, D, n, st);
    }
}

template <class T> __global__ void k_fill(T *dst, dims D, int64_t n, T v) {
    if (D.nd == 1) {
        const int64_t sd = D.ds[0];
        GRID_STRIDE(i, n) dst[i * sd] = v;
        return;
    }
    GRID_STRIDE(i, n) {
        int64_t od, os;
        unravel(D, i, &od, &os);
        dst[od] = v;
    }
}

template <class T> cudaError_t fill_launch(void *dst, const dims &D, int64_t n, T v, cudaStream_t st) {
    k_fill<T><<<ew_grid(n), EW_THREADS, 0, st>>>((T *)dst, D, n, v);
    return cudaGetLastError();
}

bool bad_dims(int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > ADDSL_CUDA_MAX_DIMS || (ndim > 0 && !shape)) return true;
    for (int k = 0; k < ndim; k++)
        if (shape[k] < 0) return true;
    return false;
}

} // namespace

extern "C" int addsl_cuda_copy_strided(void *dst, int ddt, const int64_t *dstride, const void *src,
                                       int sdt, const int64_t *sstride, int ndim,
                                       const int64_t *shape, void *stream) {
    if (ddt < 0 || ddt > 3 || sdt < 0 || sdt > 3 || bad_dims(ndim, shape)) return ADDSL_CUDA_EARG;
    if (ndim > 0 && (!dstride || !sstride)) return ADDSL_CUDA_EARG;
    dims D;
    const int64_t n = dims_make(&D, ndim, shape, dstride, sstride);
    if (n == 0) return 0;
    if (!dst || !src) return ADDSL_CUDA_EARG;
    if (D.nd == 0) { // every dim of size 1: one element
        D.nd = 1;
        D.shape[0] = 1;
        D.ds[0] = D.ss[0] = 0;
    }
    cudaStream_t st = (cudaStream_t)stream;
    switch (ddt) {
    case 0: return (int)copy_from<float>(sdt, dst, src, D, n, st);
    case 1: return (int)copy_from<double>(sdt, dst, src, D, n, st);
    case 2: return (int)copy_from<int64_t>(sdt, dst, src, D, n, st);
    default: return (int)copy_from<b8>(sdt, dst, src, D, n, st);
    }
}

extern "C" int addsl_cuda_fill(void *dst, int dt, const int64_t *stride, int ndim,
                               const int64_t *shape, double v, void *stream) {
    if (dt < 0 || dt > 3 || bad_dims(ndim, shape) || (ndim > 0 && !stride)) return ADDSL_CUDA_EARG;
    dims D;
    const int64_t n = dims_make(&D, ndim, shape, stride, NULL);
    if (n == 0) return 0;
    if (!dst) return ADDSL_CUDA_EARG;
    if (D.nd == 0) {
        D.nd = 1;
        D.shape[0] = 1;
        D.ds[0] = D.ss[0] = 0;
    }
    cudaStream_t st = (cudaStream_t)stream;
    switch (dt) {
    case 0: return (int)fill_launch<float>(dst, D, n, (float)v, st);
    case 1: return (int)fill_launch<double>(dst, D, n, v, st);
    case 2: return (int)fill_launch<int64_t>(dst, D, n, to_i64(v), st);
    default: return (int)fill_launch<b8>(dst, D, n, (b8)(v != 0), st);
    }
}

// ---- reductions -------------------------------------------------------------------

namespace {

// Shapes: a thread per output when each output has few elements, or when
// enough outputs lie along 'inner' that neighbouring threads read neighbouring
// addresses; otherwise a block per output, and a few outputs over long rows
// cut their rows into fixed chunks (two passes through a stream-ordered
// scratch: no atomics, so the result does not depend on scheduling).
const int RED_THREADS = 256;
const int64_t RED_SMALL_R = 32;
const int64_t RED_COALESCED_INNER = 32;
const int64_t RED_MANY_OUT = 4096;
const int64_t RED_CHUNK = 4096;
const int64_t RED_TARGET_BLOCKS = 1024;
const int64_t RED_MAX_CHUNKS = 1024;
const int64_t RED_MAX_BLOCKS = (int64_t)1 << 20;

// Float sums and products accumulate in double (torch's CPU acc_type);
// integer ones in uint64_t so overflow wraps.
template <class T> struct acc_of {
    typedef double type;
};
template <> struct acc_of<int64_t> {
    typedef uint64_t type;
};

template <class T> struct r_sum {
    typedef T type;
    typedef typename acc_of<T>::type A;
    __device__ static A init() { return 0; }
    __device__ static A step(A a, A v) { return a + v; }
    __device__ static T fin(A a, double) { return (T)a; }
};
template <class T> struct r_mean : r_sum<T> {
    __device__ static T fin(double a, double count) { return (T)(a / count); }
};
template <class T> struct r_prod {
    typedef T type;
    typedef typename acc_of<T>::type A;
    __device__ static A init() { return 1; }
    __device__ static A step(A a, A v) { return a * v; }
    __device__ static T fin(A a, double) { return (T)a; }
};

template <class T> __device__ __forceinline__ T lowest() { return -INFINITY; }
template <> __device__ __forceinline__ int64_t lowest<int64_t>() { return INT64_MIN; }
template <class T> __device__ __forceinline__ T highest() { return INFINITY; }
template <> __device__ __forceinline__ int64_t highest<int64_t>() { return INT64_MAX; }

// NaN wins wherever it sits, so it propagates through the tree as torch.amax.
template <class T> struct r_amax {
    typedef T type;
    typedef T A;
    __device__ static A init() { return lowest<T>(); }
    __device__ static A step(A a, A v) { return (v > a || v != v) ? v : a; }
    __device__ static T fin(A a, double) { return a; }
};
template <class T> struct r_amin {
    typedef T type;
    typedef T A;
    __device__ static A init() { return highest<T>(); }
    __device__ static A step(A a, A v) { return (v < a || v != v) ? v : a; }
    __device__ static T fin(A a, double) { return a; }
};

template <class R>
__global__ void k_red_thread(const typename R::type *x, typename R::type *out, int64_t r,
                             int64_t inner, int64_t nout, double count) {
    typedef typename R::A A;
    GRID_STRIDE(oi, nout) {
        const int64_t o = oi / inner, i = oi - o * inner;
        const typename R::type *row = x + o * r * inner + i;
        A a = R::init();
        for (int64_t j = 0; j < r; j++) a = R::step(a, (A)row[j * inner]);
        out[oi] = R::fin(a, count);
    }
}

// A block per task (output oi, chunk c of its row). FINAL: the finished value
// into out[oi] (one chunk per output); else the raw accumulator into part[task].
template <class R, class IN, bool FINAL>
__global__ void k_red_block(const IN *x, void *dst, int64_t r, int64_t inner, int64_t chunk,
                            int64_t nchunk, int64_t ntask, double count) {
    typedef typename R::A A;
    __shared__ A buf[RED_THREADS];
    const int tid = threadIdx.x;
    for (int64_t task = blockIdx.x; task < ntask; task += gridDim.x) {
        const int64_t oi = task / nchunk, c = task - oi * nchunk;
        const int64_t o = oi / inner, i = oi - o * inner;
        const IN *row = x + o * r * inner + i;
        const int64_t lo = c * chunk, hi = lo + chunk < r ? lo + chunk : r;
        A a = R::init();
        for (int64_t j = lo + tid; j < hi; j += blockDim.x) a = R::step(a, (A)row[j * inner]);
        buf[tid] = a;
        __syncthreads();
        for (int w = blockDim.x / 2; w > 0; w >>= 1) {
            if (tid < w) buf[tid] = R::step(buf[tid], buf[tid + w]);
            __syncthreads();
        }
        if (tid == 0) {
            if (FINAL) ((typename R::type *)dst)[oi] = R::fin(buf[0], count);
            else ((A *)dst)[task] = buf[0];
        }
        __syncthreads(); // buf is reused by the next task
    }
}

// A power of two from 32 to RED_THREADS giving each thread about 8 elements.
int red_threads(int64_t per_block) {
    int t = 32;
    while (t < RED_THREADS && (int64_t)t * 8 < per_block) t *= 2;
    return t;
}

int red_grid(int64_t ntask) { return (int)(ntask > RED_MAX_BLOCKS ? RED_MAX_BLOCKS : ntask); }

template <class R>
cudaError_t red_run(void *out, const void *xv, int64_t outer, int64_t r, int64_t inner,
                    cudaStream_t st) {
    typedef typename R::type T;
    typedef typename R::A A;
    const T *x = (const T *)xv;
    const int64_t nout = outer * inner;
    const double count = (double)r;
    if (r <= RED_SMALL_R || (inner >= RED_COALESCED_INNER && nout >= RED_MANY_OUT)) {
        k_red_thread<R><<<ew_grid(nout), EW_THREADS, 0, st>>>(x, (T *)out, r, inner, nout, count);
        return cudaGetLastError();
    }
    int64_t nchunk = 1;
    if (nout < RED_TARGET_BLOCKS && r > 2 * RED_CHUNK) {
        nchunk = (r + RED_CHUNK - 1) / RED_CHUNK;
        const int64_t fill = (RED_TARGET_BLOCKS + nout - 1) / nout;
        if (nchunk > fill) nchunk = fill;
        if (nchunk > RED_MAX_CHUNKS) nchunk = RED_MAX_CHUNKS;
    }
    if (nchunk <= 1) {
        k_red_block<R, T, true><<<red_grid(nout), red_threads(r), 0, st>>>(x, out, r, inner, r, 1,
                                                                           nout, count);
        return cudaGetLastError();
    }
    const int64_t chunk = (r + nchunk - 1) / nchunk, ntask = nout * nchunk;
    A *part = NULL;
    cudaError_t e = cudaMallocAsync((void **)&part, (size_t)ntask * sizeof(A), st);
    if (e != cudaSuccess) return e;
    k_red_block<R, T, false><<<red_grid(ntask), red_threads(chunk), 0, st>>>(
        x, part, r, inner, chunk, nchunk, ntask, count);
    e = cudaGetLastError();
    if (e == cudaSuccess) {
        k_red_block<R, A, true><<<red_grid(nout), red_threads(nchunk), 0, st>>>(
            part, out, nchunk, 1, nchunk, 1, nout, count);
        e = cudaGetLastError();
    }
    cudaError_t e2 = cudaFreeAsync(part, st);
    return e != cudaSuccess ? e : e2;
}

// dt is 0..2 here; INT: whether the op has an int64 kernel ('mean' has none).
template <template <class> class R, bool INT = true>
int red_dtype(int dt, void *out, const void *x, int64_t outer, int64_t r, int64_t inner,
              cudaStream_t st) {
    switch (dt) {
    case 0: return (int)red_run<R<float>>(out, x, outer, r, inner, st);
    case 1: return (int)red_run<R<double>>(out, x, outer, r, inner, st);
    default:
        if constexpr (INT) return (int)red_run<R<int64_t>>(out, x, outer, r, inner, st);
        else return ADDSL_CUDA_ENOKERNEL;
    }
}

} // namespace

extern "C" int addsl_cuda_reduce(const char *op, int dt, void *out, const void *x, int64_t outer,
                                 int64_t r, int64_t inner, void *stream) {
    if (!op || dt < 0 || dt > 3 || outer < 0 || r < 0 || inner < 0) return ADDSL_CUDA_EARG;
    enum { SUM, MEAN, PROD, AMAX, AMIN, NONE } k = NONE;
    static const char *const names[] = {"sum", "mean", "prod", "amax", "amin"};
    for (int i = 0; i < NONE; i++)
        if (strcmp(op, names[i]) == 0) k = (decltype(k))i;
    if (k == NONE) return ADDSL_CUDA_ENOKERNEL;
    if (dt == 3 || (k == MEAN && dt == 2)) return ADDSL_CUDA_ENOKERNEL;
    if ((k == AMAX || k == AMIN) && r == 0) return ADDSL_CUDA_EARG;
    if (outer == 0 || inner == 0) return 0;
    if (!out || (r > 0 && !x)) return ADDSL_CUDA_EARG;
    cudaStream_t st = (cudaStream_t)stream;
    switch (k) {
    case SUM: return red_dtype<r_sum>(dt, out, x, outer, r, inner, st);
    case MEAN: return red_dtype<r_mean, false>(dt, out, x, outer, r, inner, st);
    case PROD: return red_dtype<r_prod>(dt, out, x, outer, r, inner, st);
    case AMAX: return red_dtype<r_amax>(dt, out, x, outer, r, inner, st);
    default: return red_dtype<r_amin>(dt, out, x, outer, r, inner, st);
    }
}

/* test_tensor_cuda.c: the generic CUDA tensor kernels of tensor_cuda.h against
 * the CPU kernels (every elementwise kernel, the reductions) and vm/tensor/tensor.c's
 * conversion rules (copies, fills); TAP, 77 without a GPU. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/elementwise.h"
#include "kernels/reduce.h"
#include "tensor_cuda.h"
#include "traj_cuda.h"
#include "test_cuda_util.h"

/* Every shipped elementwise kernel, as the CPU registry lists it. */
typedef struct krow { const char *name; void (*fn)(void); const char *sig; } krow;
static const krow KROWS[] = {
#define AD_KERNEL(id, fn, sig) {#id, (void (*)(void))fn, sig},
#include "kernels/elementwise.def"
#undef AD_KERNEL
};

typedef void (*cpu_unary)(void *, const void *, int64_t);
typedef void (*cpu_param)(void *, const void *, int64_t, double, double);
typedef void (*cpu_binary)(void *, const void *, int64_t, const void *, int64_t, int64_t);
typedef void (*cpu_ternary)(void *, const void *, int64_t, const void *, int64_t, const void *,
                            int64_t, int64_t);
typedef void (*cpu_addc)(void *, const void *, int64_t, const void *, int64_t, const void *,
                         int64_t, int64_t, double);

enum { DT_F32, DT_F64, DT_I64, DT_B8 };
static const char *const DT_NAME[] = {"float32", "float64", "int64", "bool"};
static const size_t DT_SIZE[] = {4, 8, 8, 1};

/* Kernels whose result is the same IEEE operations on both sides (no library
 * function whose last bit may differ): compared exactly. */
static const char *const EXACT_OPS[] = {
    "abs", "neg", "sign", "square", "relu", "floor", "ceil", "round", "trunc", "frac",
    "reciprocal", "rsqrt", "hardsigmoid", "hardswish", "leaky_relu", "softshrink", "hardshrink",
    "round_decimals", "clamp", "add", "sub", "mul", "div", "maximum", "minimum", "remainder",
    "fmod", "div_trunc", "div_floor", "copysign", "where", "lerp", "clamp_t", "addcmul",
    "addcdiv", NULL};

#define NAME_STR(name, ...) #name,
static const char *const BOOL_OUT_OPS[] = {AD_EW_PRED_OPS(NAME_STR) AD_EW_COMPARE_OPS(NAME_STR) NULL};

static const double F_SPECIAL[] = {0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.0, -3.0,
                                   0.25, 0.75, 1e-3, -1e-3, 0.999, 25.0, -25.0, 1e-30, 7.0,
                                   NAN, INFINITY, -INFINITY};
#define N_FSPEC (sizeof F_SPECIAL / sizeof F_SPECIAL[0])
static const int64_t I_SPECIAL[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 62, 63, 64,
                                    INT64_MAX, INT64_MIN, (int64_t)1 << 40, -((int64_t)1 << 40)};
#define N_ISPEC (sizeof I_SPECIAL / sizeof I_SPECIAL[0])

/* Element count of an elementwise case: every pair of specials, then randoms. */
#define EW_N (N_FSPEC * N_FSPEC + 1001)
/* Past the launch's block cap (4096 x 256 threads), so the grid-stride loops iterate. */
#define BIG_N 5000001




static double getv(const void *p, int dt, size_t i) {
    switch (dt) {
    case DT_F32: return ((const float *)p)[i];
    case DT_F64: return ((const double *)p)[i];
    case DT_I64: return (double)((const int64_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

static void fmt_elem(char *buf, size_t n, const void *p, int dt, size_t i) {
    if (dt == DT_I64) snprintf(buf, n, "%lld", (long long)((const int64_t *)p)[i]);
    else snprintf(buf, n, "%.9g", getv(p, dt, i));
}

static int in_list(const char *const *list, const char *s) {
    for (; *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

static int ntest, nfail;

static void report(int ok, const char *name, const char *what) {
    ntest++;
    nfail += !ok;
    printf("%s %d - %s %s\n", ok ? "ok" : "not ok", ntest, name, what);
}

/* ---- elementwise -------------------------------------------------------------- */

typedef struct ewcase {
    const krow *k;
    char base[64];
    int dt, out_dt, shape, nin, np, exact;
} ewcase;

enum { SH_UNARY, SH_PARAM, SH_BINARY, SH_TERNARY, SH_ADDC };

static int parse_case(const krow *k, ewcase *c) {
    static const char *const SFX[] = {"_f32", "_f64", "_i64", "_b8"};
    memset(c, 0, sizeof *c);
    c->k = k;
    c->dt = -1;
    size_t len = strlen(k->name);
    for (int d = 0; d < 4; d++) {
        size_t ls = strlen(SFX[d]);
        if (len > ls && strcmp(k->name + len - ls, SFX[d]) == 0 && len - ls < sizeof c->base) {
            c->dt = d;
            memcpy(c->base, k->name, len - ls);
            c->base[len - ls] = 0;
        }
    }
    if (c->dt < 0) return -1;
    static const char *const SIGS[] = {AD_EW_SIG_UNARY, AD_EW_SIG_PARAM, AD_EW_SIG_BINARY,
                                       AD_EW_SIG_TERNARY, AD_EW_SIG_ADDC};
    static const int NIN[] = {1, 1, 2, 3, 3}, NP[] = {0, 2, 0, 0, 1};
    c->shape = -1;
    for (int s = 0; s < 5; s++)
        if (strcmp(k->sig, SIGS[s]) == 0) c->shape = s;
    if (c->shape < 0) return -1;
    c->nin = NIN[c->shape];
    c->np = NP[c->shape];
    c->out_dt = in_list(BOOL_OUT_OPS, c->base) ? DT_B8 : c->dt;
    c->exact = c->dt >= DT_I64 || c->out_dt == DT_B8 || in_list(EXACT_OPS, c->base);
    return 0;
}

static void put_f(void *p, int dt, size_t i, double v) {
    if (dt == DT_F32) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

/* Input k of a case: the first N_FSPEC^2 elements pair every special with
 * every other across inputs; half-integers among the randoms test rounding. */
static void make_input(void *p, int dt, int k, size_t n, uint64_t *rng) {
    for (size_t i = 0; i < n; i++) {
        size_t sel = k == 0 ? i % N_FSPEC : k == 1 ? i / N_FSPEC : (i * 7 + 3) % N_FSPEC;
        int spec = i < N_FSPEC * N_FSPEC;
        if (dt == DT_B8) ((uint8_t *)p)[i] = (uint8_t)(rng_next(rng) & 1);
        else if (dt == DT_I64)
            ((int64_t *)p)[i] = spec ? I_SPECIAL[sel % N_ISPEC] : (int64_t)(rng_next(rng) % 101) - 50;
        else if (spec) put_f(p, dt, i, F_SPECIAL[sel]);
        else {
            double v = 8 * rng_unit(rng) - 4;
            put_f(p, dt, i, (rng_next(rng) & 7) == 0 ? floor(v) + 0.5 : v);
        }
    }
}

/* Parameter sets (p, q) per kernel; value sets of addcmul/addcdiv. */
static int param_sets(const ewcase *c, double ps[][2]) {
    const char *b = c->base;
    if (c->shape == SH_ADDC) {
        ps[0][0] = c->dt == DT_I64 ? 3 : 0.5;
        ps[1][0] = -2;
        return 2;
    }
    if (strcmp(b, "clamp") == 0 && c->dt == DT_I64) {
        static const double s[][2] = {{-3, 5}, {-1e300, 1e300}, {0, 0}};
        memcpy(ps, s, sizeof s);
        return 3;
    }
    if (strcmp(b, "clamp") == 0) {
        static const double s[][2] = {{-0.5, 0.7}, {NAN, 0.7}, {-0.5, NAN}};
        memcpy(ps, s, sizeof s);
        return 3;
    }
    if (strcmp(b, "round_decimals") == 0) {
        static const double s[][2] = {{2, 100}, {-1, 10}, {0, 1}};
        memcpy(ps, s, sizeof s);
        return 3;
    }
    if (strcmp(b, "logit") == 0) {
        static const double s[][2] = {{0.1, 0}, {-1, 0}};
        memcpy(ps, s, sizeof s);
        return 2;
    }
    if (strcmp(b, "polygamma") == 0) {   /* the order n: a non-negative integer */
        static const double s[][2] = {{0, 0}, {1, 0}, {3, 0}};
        memcpy(ps, s, sizeof s);
        return 3;
    }
    if (strcmp(b, "softplus") == 0) {
        static const double s[][2] = {{1, 20}, {2, 1}};
        memcpy(ps, s, sizeof s);
        return 2;
    }
    static const double s[][2] = {{0.3, 2.0}, {1.5, 0.5}};
    memcpy(ps, s, sizeof s);
    return 2;
}

static void run_cpu_ew(const ewcase *c, void *out, void *const *in, const int64_t *s, size_t n,
                       const double *p) {
    switch (c->shape) {
    case SH_UNARY: ((cpu_unary)c->k->fn)(out, in[0], (int64_t)n); break;
    case SH_PARAM: ((cpu_param)c->k->fn)(out, in[0], (int64_t)n, p[0], p[1]); break;
    case SH_BINARY: ((cpu_binary)c->k->fn)(out, in[0], s[0], in[1], s[1], (int64_t)n); break;
    case SH_TERNARY:
        ((cpu_ternary)c->k->fn)(out, in[0], s[0], in[1], s[1], in[2], s[2], (int64_t)n);
        break;
    default: ((cpu_addc)c->k->fn)(out, in[0], s[0], in[1], s[1], in[2], s[2], (int64_t)n, p[0]);
    }
}

/* Float tolerance of the library-function kernels, relative to max(|expected|, 1):
 * near 0 only the absolute error means anything for functions like gelu's
 * 1 + tanh(...) that cancel. */
#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* Whether g matches e; *ratio grows to the error over the tolerance. */
static int elem_ok(const ewcase *c, double g, double e, double *ratio) {
    if (isnan(e)) return isnan(g);
    if (c->exact || isinf(e)) return g == e;
    double tol = c->out_dt == DT_F32 ? TOL_F32 : TOL_F64;
    double r = fabs(g - e) / (tol * fmax(fabs(e), 1.0));
    *ratio = fmax(*ratio, r);
    return r <= 1;
}

typedef struct ewbufs {
    void *host_in[3], *cpu_out, *gpu_out, *dev_in[3], *dev_out;
} ewbufs;

/* One launch against the CPU; prints up to 3 mismatches. Returns 1 if equal. */
static int ew_compare(const ewcase *c, ewbufs *B, const int64_t *s, size_t n, const double *p,
                      double *ratio) {
    const size_t osz = DT_SIZE[c->out_dt];
    CK(addsl_cuda_memset(B->dev_out, 0xff, n * osz)); /* unwritten elements show */
    const void *const din[3] = {B->dev_in[0], B->dev_in[1], B->dev_in[2]};
    int rc = addsl_cuda_ew(c->k->name, B->dev_out, c->nin, din, s, (int64_t)n, p, c->np, NULL);
    if (!rc) rc = addsl_cuda_synchronize();
    if (rc) {
        printf("# %s: launch returned %d (%s)\n", c->k->name, rc,
               rc > 0 ? addsl_cuda_error_string(rc) : "addsl error");
        return 0;
    }
    CK(addsl_cuda_to_host(B->gpu_out, B->dev_out, n * osz));
    run_cpu_ew(c, B->cpu_out, B->host_in, s, n, p);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = getv(B->gpu_out, c->out_dt, i), e = getv(B->cpu_out, c->out_dt, i);
        int ok = c->out_dt == DT_I64 ? ((int64_t *)B->gpu_out)[i] == ((int64_t *)B->cpu_out)[i]
                                      : elem_ok(c, g, e, ratio);
        if (ok) continue;
        if (bad++ < 3) {
            char gs[40], es[40], xs[3][40] = {"", "", ""};
            fmt_elem(gs, sizeof gs, B->gpu_out, c->out_dt, i);
            fmt_elem(es, sizeof es, B->cpu_out, c->out_dt, i);
            for (int k = 0; k < c->nin; k++) {
                int idt = c->shape == SH_TERNARY && k == 0 && strcmp(c->base, "where") == 0 ? DT_B8 : c->dt;
                fmt_elem(xs[k], sizeof xs[k], B->host_in[k], idt, (size_t)(s ? (int64_t)i * s[k] : (int64_t)i));
            }
            printf("# %s strides (%lld,%lld,%lld) p=(%g,%g) index %zu: got %s expected %s (inputs %s %s %s)\n",
                   c->k->name, s ? (long long)s[0] : 1LL, s && c->nin > 1 ? (long long)s[1] : 1LL,
                   s && c->nin > 2 ? (long long)s[2] : 1LL, p ? p[0] : 0.0,
                   p && c->np > 1 ? p[1] : 0.0, i, gs, es, xs[0], xs[1], xs[2]);
        }
    }
    if (bad > 3) printf("# %s: %d mismatches in all\n", c->k->name, bad);
    return bad == 0;
}

static void test_ew_kernel(const ewcase *c, ewbufs *B, uint64_t *rng) {
    const size_t n = EW_N;
    for (int k = 0; k < c->nin; k++) {
        int idt = c->shape == SH_TERNARY && k == 0 && strcmp(c->base, "where") == 0 ? DT_B8 : c->dt;
        make_input(B->host_in[k], idt, k, n, rng);
        CK(addsl_cuda_to_device(B->dev_in[k], B->host_in[k], n * DT_SIZE[idt]));
    }
    double ps[4][2] = {{0, 0}};
    int nps = c->np ? param_sets(c, ps) : 1;
    int ncomb = c->shape >= SH_BINARY ? 1 << c->nin : 1, ok = 1;
    double ratio = 0;
    for (int comb = 0; comb < ncomb; comb++) {
        int64_t s[3] = {1, 1, 1};
        for (int k = 0; k < c->nin && c->shape >= SH_BINARY; k++) s[k] = (comb >> k) & 1;
        for (int j = 0; j < nps; j++) ok &= ew_compare(c, B, s, n, c->np ? ps[j] : NULL, &ratio);
    }
    char what[160], how[48] = "exact";
    if (!c->exact) snprintf(how, sizeof how, "max err %.3g of tol", ratio);
    snprintf(what, sizeof what, "(%s, %d stride pattern%s, %d parameter set%s, %s)",
             DT_NAME[c->dt], ncomb, ncomb > 1 ? "s" : "", nps, nps > 1 ? "s" : "", how);
    char name[96];
    snprintf(name, sizeof name, "ew %s", c->k->name);
    report(ok, name, what);
}

static void test_ew_all(uint64_t *rng) {
    ewbufs B;
    const size_t bytes = EW_N * 8;
    for (int k = 0; k < 3; k++) {
        B.host_in[k] = xmalloc(bytes);
        CK(addsl_cuda_malloc(&B.dev_in[k], bytes));
    }
    B.cpu_out = xmalloc(bytes);
    B.gpu_out = xmalloc(bytes);
    CK(addsl_cuda_malloc(&B.dev_out, bytes));
    for (size_t r = 0; r < sizeof KROWS / sizeof KROWS[0]; r++) {
        ewcase c;
        if (parse_case(&KROWS[r], &c)) {
            report(0, KROWS[r].name, "(unknown kernel shape or dtype in the test)");
            continue;
        }
        test_ew_kernel(&c, &B, rng);
    }
    for (int k = 0; k < 3; k++) {
        free(B.host_in[k]);
        CK(addsl_cuda_free(B.dev_in[k]));
    }
    free(B.cpu_out);
    free(B.gpu_out);
    CK(addsl_cuda_free(B.dev_out));
}

/* One call per error path of the interface, and a long add through the grid-stride loop. */
static void test_ew_args(uint64_t *rng) {
    const void *in[3] = {NULL, NULL, NULL};
    int64_t s[3] = {1, 1, 1};
    double p[2] = {0, 0};
    int ok = addsl_cuda_ew("no_such_kernel_f32", NULL, 1, in, s, 0, NULL, 0, NULL) == ADDSL_CUDA_ENOKERNEL &&
             addsl_cuda_ew("add_b8", NULL, 2, in, s, 0, NULL, 0, NULL) == ADDSL_CUDA_ENOKERNEL &&
             addsl_cuda_ew("add_f32", NULL, 3, in, s, 0, NULL, 0, NULL) == ADDSL_CUDA_EARG &&
             addsl_cuda_ew("leaky_relu_f32", NULL, 1, in, s, 0, p, 1, NULL) == ADDSL_CUDA_EARG &&
             addsl_cuda_ew("add_f32", NULL, 2, in, s, 0, NULL, 0, NULL) == 0;
    report(ok, "ew arguments", "(unknown name or dtype, wrong nin/np, n == 0)");

    const size_t n = BIG_N;
    float *a = xmalloc(n * 4), *b = xmalloc(n * 4), *e = xmalloc(n * 4), *g = xmalloc(n * 4);
    void *da, *db, *dout;
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)rng_unit(rng);
        b[i] = (float)rng_unit(rng);
    }
    CK(addsl_cuda_malloc(&da, n * 4));
    CK(addsl_cuda_malloc(&db, n * 4));
    CK(addsl_cuda_malloc(&dout, n * 4));
    CK(addsl_cuda_to_device(da, a, n * 4));
    CK(addsl_cuda_to_device(db, b, n * 4));
    CK(addsl_cuda_memset(dout, 0xff, n * 4));
    const void *din[2] = {da, db};
    int rc = addsl_cuda_ew("mul_f32", dout, 2, din, s, (int64_t)n, NULL, 0, NULL);
    if (!rc) rc = addsl_cuda_synchronize();
    ad_k_mul_f32(e, a, 1, b, 1, (int64_t)n);
    size_t bad = rc ? n : 0, first = n;
    if (!rc) {
        CK(addsl_cuda_to_host(g, dout, n * 4));
        for (size_t i = 0; i < n; i++)
            if (g[i] != e[i] && bad++ == 0) first = i;
    }
    if (bad && first < n) printf("# mul_f32 n=%zu index %zu: got %.9g expected %.9g\n", n, first, g[first], e[first]);
    char what[64];
    snprintf(what, sizeof what, "(n=%zu, grid-stride loop)", n);
    report(bad == 0, "ew mul_f32 long", what);
    free(a);
    free(b);
    free(e);
    free(g);
    CK(addsl_cuda_free(da));
    CK(addsl_cuda_free(db));
    CK(addsl_cuda_free(dout));
}

/* ---- strided copies and fills ---------------------------------------------------- */

/* vm/tensor/tensor.c's rules: float -> int64 truncates, NaN and out of range give
 * INT64_MIN; int64 -> float is one rounding; anything -> bool is != 0. */
static int64_t ref_to_i64(double v) {
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

static void ref_convert(void *dst, int ddt, int64_t di, const void *src, int sdt, int64_t si) {
    switch (ddt) {
    case DT_F32:
        if (sdt == DT_F32) ((float *)dst)[di] = ((const float *)src)[si];
        else if (sdt == DT_F64) ((float *)dst)[di] = (float)((const double *)src)[si];
        else if (sdt == DT_I64) ((float *)dst)[di] = (float)((const int64_t *)src)[si];
        else ((float *)dst)[di] = ((const uint8_t *)src)[si];
        break;
    case DT_F64:
        if (sdt == DT_F32) ((double *)dst)[di] = ((const float *)src)[si];
        else if (sdt == DT_F64) ((double *)dst)[di] = ((const double *)src)[si];
        else if (sdt == DT_I64) ((double *)dst)[di] = (double)((const int64_t *)src)[si];
        else ((double *)dst)[di] = ((const uint8_t *)src)[si];
        break;
    case DT_I64:
        if (sdt == DT_F32) ((int64_t *)dst)[di] = ref_to_i64(((const float *)src)[si]);
        else if (sdt == DT_F64) ((int64_t *)dst)[di] = ref_to_i64(((const double *)src)[si]);
        else if (sdt == DT_I64) ((int64_t *)dst)[di] = ((const int64_t *)src)[si];
        else ((int64_t *)dst)[di] = ((const uint8_t *)src)[si];
        break;
    default:
        ((uint8_t *)dst)[di] = sdt == DT_I64 ? ((const int64_t *)src)[si] != 0 : getv(src, sdt, (size_t)si) != 0;
    }
}

static const double CP_FSPECIAL[] = {0.0, -0.0, 2.5, -2.5, 0.7, -0.7, 1e30, -1e30, 9.3e18, -9.3e18,
                                     -9223372036854775808.0, 9007199254740993.0, 1.0, NAN,
                                     INFINITY, -INFINITY};
static const int64_t CP_ISPECIAL[] = {0, 1, -1, INT64_MAX, INT64_MIN, ((int64_t)1 << 53) + 1,
                                      ((int64_t)1 << 24) + 1, -((int64_t)1 << 62) - 1, 2};

static void fill_src(void *p, int dt, size_t n, uint64_t *rng) {
    for (size_t i = 0; i < n; i++) {
        if (dt == DT_B8) ((uint8_t *)p)[i] = (uint8_t)(rng_next(rng) & 1);
        else if (dt == DT_I64)
            ((int64_t *)p)[i] = i < sizeof CP_ISPECIAL / 8 ? CP_ISPECIAL[i] : (int64_t)(rng_next(rng) % 2001) - 1000;
        else {
            double v = i < sizeof CP_FSPECIAL / 8 ? CP_FSPECIAL[i] : 200 * rng_unit(rng) - 100;
            put_f(p, dt, i, v);
        }
    }
}

/* One strided view: 'ndim', 'shape', strides in elements, and the offset of
 * element 0 inside a buffer of 'span' elements. */
typedef struct view {
    int ndim;
    int64_t shape[ADDSL_CUDA_MAX_DIMS], dstr[ADDSL_CUDA_MAX_DIMS], sstr[ADDSL_CUDA_MAX_DIMS];
    int64_t doff, soff, dspan, sspan;
    const char *what;
} view;

static int same_elem(const void *a, const void *b, int dt, size_t i) {
    if (dt == DT_I64) return ((const int64_t *)a)[i] == ((const int64_t *)b)[i];
    double x = getv(a, dt, i), y = getv(b, dt, i);
    return x == y || (isnan(x) && isnan(y));
}

/* Runs 'V' through the GPU (copy when fill is NULL, else fill with *fill) and
 * a reference walk; every destination element, written or not, is compared. */
static int check_view(const view *V, int ddt, int sdt, const double *fill, uint64_t *rng) {
    const size_t dsz = DT_SIZE[ddt], ssz = DT_SIZE[sdt];
    void *src = xmalloc((size_t)V->sspan * ssz), *ref = xmalloc((size_t)V->dspan * dsz);
    void *got = xmalloc((size_t)V->dspan * dsz);
    void *dsrc = NULL, *ddst;
    fill_src(src, sdt, (size_t)V->sspan, rng);
    memset(ref, 0x5a, (size_t)V->dspan * dsz);
    CK(addsl_cuda_malloc(&ddst, (size_t)V->dspan * dsz));
    CK(addsl_cuda_to_device(ddst, ref, (size_t)V->dspan * dsz));
    int rc;
    if (fill) {
        rc = addsl_cuda_fill((char *)ddst + V->doff * dsz, ddt, V->dstr, V->ndim, V->shape, *fill, NULL);
    } else {
        CK(addsl_cuda_malloc(&dsrc, (size_t)V->sspan * ssz));
        CK(addsl_cuda_to_device(dsrc, src, (size_t)V->sspan * ssz));
        rc = addsl_cuda_copy_strided((char *)ddst + V->doff * dsz, ddt, V->dstr,
                                     (char *)dsrc + V->soff * ssz, sdt, V->sstr, V->ndim, V->shape, NULL);
    }
    if (!rc) rc = addsl_cuda_synchronize();
    int64_t numel = 1;
    for (int k = 0; k < V->ndim; k++) numel *= V->shape[k];
    const double fv = fill ? *fill : 0;
    for (int64_t i = 0; i < numel; i++) {
        int64_t rem = i, di = V->doff, si = V->soff;
        for (int k = V->ndim - 1; k >= 0; k--) {
            int64_t c = rem % V->shape[k];
            rem /= V->shape[k];
            di += c * V->dstr[k];
            si += c * V->sstr[k];
        }
        if (fill) ref_convert(ref, ddt, di, &fv, DT_F64, 0);
        else ref_convert(ref, ddt, di, src, sdt, si);
    }
    int bad = 0;
    if (rc) {
        printf("# %s %s <- %s: returned %d (%s)\n", V->what, DT_NAME[ddt], DT_NAME[sdt], rc,
               rc > 0 ? addsl_cuda_error_string(rc) : "addsl error");
        bad = 1;
    } else {
        CK(addsl_cuda_to_host(got, ddst, (size_t)V->dspan * dsz));
        for (int64_t i = 0; i < V->dspan; i++) {
            if (same_elem(got, ref, ddt, (size_t)i)) continue;
            if (bad++ < 3) {
                char gs[40], es[40];
                fmt_elem(gs, sizeof gs, got, ddt, (size_t)i);
                fmt_elem(es, sizeof es, ref, ddt, (size_t)i);
                printf("# %s %s <- %s: dst element %lld: got %s expected %s\n", V->what,
                       DT_NAME[ddt], fill ? "fill" : DT_NAME[sdt], (long long)i, gs, es);
            }
        }
    }
    free(src);
    free(ref);
    free(got);
    CK(addsl_cuda_free(dsrc));
    CK(addsl_cuda_free(ddst));
    return bad == 0;
}

/* The views of the copy tests: transpose, broadcast, reversed source into a
 * strided destination, a scalar, 16 unmergeable dims, and an empty shape. */
static int make_views(view *V) {
    int nv = 0;
    view *v = &V[nv++]; /* transpose: dst [53, 37] contiguous <- src [37, 53] */
    memset(v, 0, sizeof *v);
    v->what = "transpose";
    v->ndim = 2;
    v->shape[0] = 53, v->shape[1] = 37;
    v->dstr[0] = 37, v->dstr[1] = 1;
    v->sstr[0] = 1, v->sstr[1] = 53;
    v->dspan = v->sspan = 53 * 37;
    v = &V[nv++]; /* broadcast: src [7, 9] along a new leading dim of 5 */
    memset(v, 0, sizeof *v);
    v->what = "broadcast";
    v->ndim = 3;
    v->shape[0] = 5, v->shape[1] = 7, v->shape[2] = 9;
    v->dstr[0] = 63, v->dstr[1] = 9, v->dstr[2] = 1;
    v->sstr[0] = 0, v->sstr[1] = 9, v->sstr[2] = 1;
    v->dspan = 315, v->sspan = 63;
    v = &V[nv++]; /* negative: src reversed in both dims, dst every other column */
    memset(v, 0, sizeof *v);
    v->what = "negative strides";
    v->ndim = 2;
    v->shape[0] = 6, v->shape[1] = 11;
    v->sstr[0] = -11, v->sstr[1] = -1, v->soff = 65, v->sspan = 66;
    v->dstr[0] = 22, v->dstr[1] = 2, v->dspan = 132;
    v = &V[nv++]; /* dst reversed too, with a size-1 dim in the middle */
    memset(v, 0, sizeof *v);
    v->what = "negative dst";
    v->ndim = 3;
    v->shape[0] = 4, v->shape[1] = 1, v->shape[2] = 300;
    v->dstr[0] = -300, v->dstr[1] = 5, v->dstr[2] = -1, v->doff = 1199, v->dspan = 1200;
    v->sstr[0] = 300, v->sstr[1] = 7, v->sstr[2] = 1, v->sspan = 1200;
    v = &V[nv++]; /* scalar */
    memset(v, 0, sizeof *v);
    v->what = "0-dim";
    v->dspan = v->sspan = 1;
    v = &V[nv++]; /* 16 dims of 2, src strides reversed: nothing merges */
    memset(v, 0, sizeof *v);
    v->what = "16 dims";
    v->ndim = ADDSL_CUDA_MAX_DIMS;
    for (int k = 0; k < ADDSL_CUDA_MAX_DIMS; k++) {
        v->shape[k] = 2;
        v->dstr[k] = (int64_t)1 << (ADDSL_CUDA_MAX_DIMS - 1 - k);
        v->sstr[k] = (int64_t)1 << k;
    }
    v->dspan = v->sspan = (int64_t)1 << ADDSL_CUDA_MAX_DIMS;
    v = &V[nv++]; /* empty */
    memset(v, 0, sizeof *v);
    v->what = "empty";
    v->ndim = 2;
    v->shape[0] = 3, v->shape[1] = 0;
    v->dstr[0] = v->sstr[0] = 1, v->dstr[1] = v->sstr[1] = 1;
    v->dspan = v->sspan = 4;
    return nv;
}

static void test_copy_fill(uint64_t *rng) {
    view V[8];
    int nv = make_views(V);
    for (int ddt = 0; ddt < 4; ddt++)
        for (int sdt = 0; sdt < 4; sdt++) {
            int ok = 1;
            for (int k = 0; k < nv; k++) ok &= check_view(&V[k], ddt, sdt, NULL, rng);
            char name[64];
            snprintf(name, sizeof name, "copy_strided %s <- %s", DT_NAME[ddt], DT_NAME[sdt]);
            report(ok, name, "(transpose, broadcast, negative strides, 0-dim, 16 dims, empty)");
        }
    static const double FILLS[] = {2.5, -2.5, 0.0, 1.0, -1e300, 1e300, NAN, 9.3e18};
    view big;
    memset(&big, 0, sizeof big);
    big.what = "contiguous";
    big.ndim = 1;
    big.shape[0] = BIG_N;
    big.dstr[0] = 1;
    big.dspan = BIG_N;
    big.sspan = 1;
    for (int dt = 0; dt < 4; dt++) {
        int ok = 1;
        for (size_t f = 0; f < sizeof FILLS / sizeof FILLS[0]; f++)
            for (int k = 0; k < nv; k++) ok &= check_view(&V[k], dt, DT_F64, &FILLS[f], rng);
        ok &= check_view(&big, dt, DT_F64, &FILLS[0], rng);
        char name[64];
        snprintf(name, sizeof name, "fill %s", DT_NAME[dt]);
        report(ok, name, "(2.5, -2.5, 0, 1, +-1e300, nan, 9.3e18 over the copy views; 5M contiguous)");
    }
    int64_t shape[ADDSL_CUDA_MAX_DIMS + 1] = {0}, str[ADDSL_CUDA_MAX_DIMS + 1] = {0};
    int ok = addsl_cuda_copy_strided(NULL, 0, str, NULL, 4, str, 1, shape, NULL) == ADDSL_CUDA_EARG &&
             addsl_cuda_copy_strided(NULL, 0, str, NULL, 0, str, ADDSL_CUDA_MAX_DIMS + 1, shape, NULL) == ADDSL_CUDA_EARG &&
             addsl_cuda_fill(NULL, -1, str, 1, shape, 0, NULL) == ADDSL_CUDA_EARG;
    report(ok, "copy/fill arguments", "(unknown dtype, rank 17)");
}

/* ---- reductions ------------------------------------------------------------------ */

typedef void (*cpu_red)(const void *, void *, int64_t, int64_t, int64_t);
static const char *const RED_OPS[] = {"sum", "mean", "prod", "amax", "amin"};
static const cpu_red RED_CPU[5][3] = {
    {ad_red_sum_f32, ad_red_sum_f64, ad_red_sum_i64},
    {ad_red_mean_f32, ad_red_mean_f64, NULL},
    {ad_red_prod_f32, ad_red_prod_f64, ad_red_prod_i64},
    {ad_red_amax_f32, ad_red_amax_f64, ad_red_amax_i64},
    {ad_red_amin_f32, ad_red_amin_f64, ad_red_amin_i64},
};

/* Data per op: products of values near 1 (so 2M of them stay finite), sums
 * of signed values; 'nan_at' >= 0 plants a NaN (float only). */
static void red_data(void *x, int dt, int op, size_t n, int64_t nan_at, uint64_t *rng) {
    for (size_t i = 0; i < n; i++) {
        if (dt == DT_I64) {
            static const int64_t PF[] = {1, 1, 1, 1, 1, -1, 2, 3};
            ((int64_t *)x)[i] = op == 2 ? PF[rng_next(rng) & 7] : (int64_t)(rng_next(rng) % 2001) - 1000;
        } else {
            double u = rng_unit(rng);
            put_f(x, dt, i, op == 2 ? 0.999 + 0.002 * u : 2 * u - 1);
        }
    }
    if (nan_at >= 0 && dt != DT_I64) put_f(x, dt, (size_t)nan_at, NAN);
}

/* The GPU accumulates float sums and products in double. The CPU does too,
 * except float32 sums and means, which add runs of a few floats in float
 * lanes before folding them into double (builtins/kernels/reduce_simd.c): with
 * |x| <= 1 their error is a few float eps times r, so a cancelling sum of
 * 224 elements may differ from the GPU's in its sixth digit. float64 results
 * differ by the reassociation (a few eps times r). amax and amin are exact. */
static int red_elem_ok(int op, int dt, double g, double e, int64_t r) {
    if (isnan(e) || isnan(g)) return isnan(e) && isnan(g);
    if (isinf(e) || op >= 3) return g == e;
    double rel = dt == DT_F32 ? 1e-6 : op == 2 ? 1e-10 : 1e-12;
    double eps = dt == DT_F32 && op <= 1 ? (double)FLT_EPSILON : 1e-13;
    double abs_ = eps * (op == 1 ? 1.0 : (double)r);
    return fabs(g - e) <= rel * fabs(e) + abs_;
}

typedef struct rshape { int64_t outer, r, inner, nan_at; const char *what; } rshape;

static int red_case(int op, int dt, const rshape *S, uint64_t *rng, double *gpu_ms) {
    const size_t es = DT_SIZE[dt], nx = (size_t)(S->outer * S->r * S->inner);
    const size_t no = (size_t)(S->outer * S->inner);
    void *x = xmalloc(nx * es), *e = xmalloc(no * es), *g = xmalloc(no * es), *dx, *dout;
    red_data(x, dt, op, nx, S->nan_at, rng);
    CK(addsl_cuda_malloc(&dx, nx * es));
    CK(addsl_cuda_malloc(&dout, no * es));
    CK(addsl_cuda_to_device(dx, x, nx * es));
    CK(addsl_cuda_memset(dout, 0xff, no * es));
    CK(addsl_cuda_synchronize());
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = addsl_cuda_reduce(RED_OPS[op], dt, dout, dx, S->outer, S->r, S->inner, NULL);
    if (!rc) rc = addsl_cuda_synchronize();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *gpu_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
    int bad = 0;
    if (rc) {
        printf("# reduce %s %s %s: returned %d (%s)\n", RED_OPS[op], DT_NAME[dt], S->what, rc,
               rc > 0 ? addsl_cuda_error_string(rc) : "addsl error");
        bad = 1;
    } else {
        RED_CPU[op][dt](x, e, S->outer, S->r, S->inner);
        CK(addsl_cuda_to_host(g, dout, no * es));
        for (size_t i = 0; i < no; i++) {
            int ok = dt == DT_I64 ? ((int64_t *)g)[i] == ((int64_t *)e)[i]
                                  : red_elem_ok(op, dt, getv(g, dt, i), getv(e, dt, i), S->r);
            if (ok) continue;
            if (bad++ < 3) {
                char gs[40], xs[40];
                fmt_elem(gs, sizeof gs, g, dt, i);
                fmt_elem(xs, sizeof xs, e, dt, i);
                printf("# reduce %s %s [%lld, %lld, %lld] (%s) output %zu: got %s expected %s\n",
                       RED_OPS[op], DT_NAME[dt], (long long)S->outer, (long long)S->r,
                       (long long)S->inner, S->what, i, gs, xs);
            }
        }
    }
    free(x);
    free(e);
    free(g);
    CK(addsl_cuda_free(dx));
    CK(addsl_cuda_free(dout));
    return bad == 0;
}

static void test_reduce(uint64_t *rng) {
    /* The shapes of a trajectory cost (b=10000, H=32, d=7), and the edges. */
    static const rshape SHAPES[] = {
        {10000, 224, 1, -1, "per trajectory, r=H*d"},
        {1, 2240000, 1, -1, "everything, r=b*H*d"},
        {1, 2240000, 1, 1234567, "everything, one nan"},
        {10000, 7, 1, -1, "per step, r=d"},
        {1, 10000, 7, -1, "over the batch, inner=d"},
        {3, 5000, 1, 7003, "rows, nan in row 1"},
        {4, 1000, 33, -1, "inner=33"},
        {64, 100, 64, -1, "many outputs along inner"},
        {3, 0, 4, -1, "r=0"},
        {5, 1, 3, -1, "r=1"},
        {0, 10, 3, -1, "no outputs"},
    };
    const size_t nshape = sizeof SHAPES / sizeof SHAPES[0];
    for (int op = 0; op < 5; op++)
        for (int dt = 0; dt < 3; dt++) {
            if (!RED_CPU[op][dt]) continue;
            int ok = 1;
            double worst_ms = 0, big_ms = 0;
            for (size_t k = 0; k < nshape; k++) {
                if (SHAPES[k].r == 0 && op >= 3) continue; /* amax/amin of nothing: refused below */
                double ms = 0;
                ok &= red_case(op, dt, &SHAPES[k], rng, &ms);
                worst_ms = fmax(worst_ms, ms);
                if (k == 1) big_ms = ms;
            }
            char name[64], what[96];
            snprintf(name, sizeof name, "reduce %s %s", RED_OPS[op], DT_NAME[dt]);
            snprintf(what, sizeof what, "(%zu shapes; 2.24M elements in %.3f ms incl. sync)", nshape, big_ms);
            report(ok, name, what);
        }
    int ok = addsl_cuda_reduce("mean", DT_I64, NULL, NULL, 1, 1, 1, NULL) == ADDSL_CUDA_ENOKERNEL &&
             addsl_cuda_reduce("median", DT_F32, NULL, NULL, 1, 1, 1, NULL) == ADDSL_CUDA_ENOKERNEL &&
             addsl_cuda_reduce("sum", DT_B8, NULL, NULL, 1, 1, 1, NULL) == ADDSL_CUDA_ENOKERNEL &&
             addsl_cuda_reduce("sum", 9, NULL, NULL, 1, 1, 1, NULL) == ADDSL_CUDA_EARG &&
             addsl_cuda_reduce("amax", DT_F32, NULL, NULL, 2, 0, 1, NULL) == ADDSL_CUDA_EARG &&
             addsl_cuda_reduce("sum", DT_F32, NULL, NULL, 1, -1, 1, NULL) == ADDSL_CUDA_EARG;
    report(ok, "reduce arguments", "(mean of int64, unknown op, bool, bad dtype, amax of nothing, r < 0)");
}

int main(void) {
    int status;
    if (skip_without_gpu(&status)) return status;
    const char *seed_env = getenv("TENSOR_CUDA_SEED");
    uint64_t rng = seed_env && *seed_env ? strtoull(seed_env, NULL, 0) : 0x7e5a11cafeull;
    printf("# seed %llu\n", (unsigned long long)rng);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    test_ew_all(&rng);
    test_ew_args(&rng);
    test_copy_fill(&rng);
    test_reduce(&rng);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("# %.2f s\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    printf("1..%d\n", ntest);
    printf("# %d passed, %d failed\n", ntest - nfail, nfail);
    return nfail ? 1 : 0;
}

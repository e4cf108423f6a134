/* test_kernel.c: TAP tests of the kernel registry (signatures, shared cifs,
 * calls with every argument type, replacement) and of elementwise kernels. */
#include "tap.h"

#include "kernel_ids.h"

/* Host kernels, one per argument type. */
static int32_t k_i32(int32_t a, int32_t b) { return a * b; }
static int64_t k_i64(int64_t a) { return a + 5000000000LL; }
static float k_f32(float a, double b) { return a * (float)b; }
static double k_f64(double a, double b) { return a - b; }
static void k_ptr(double *out, int64_t n) { for (int64_t i = 0; i < n; i++) out[i] = (double)i; }
static double k_f64_other(double a, double b) { return a + b; }

static void test_signatures(ad_state *S) {
    static const struct { const char *sig, *msg; } bad[] = {
        {"v", "missing '('"},
        {"(p)", "missing return type"},
        {"q(p)", "unknown return type 'q'"},
        {"v(p", "missing ')'"},
        {"v(p,)", "empty argument type"},
        {"v(p,v)", "'v' is only allowed as the return type"},
        {"v(i16)", "unknown type 'i16'"},
        {"v(p) ", "unexpected text after ')'"},
        {"v( p)", "unknown type ' p'"},
        {"v(p,p,p,p,p,p,p,p,p,p,p,p,p,p,p,p,p)", "more than 16 arguments"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ad_clear_error(S);
        int id = ad_kreg_add(S, "badk", (void (*)(void))k_ptr, bad[i].sig);
        ok(id < 0 && strstr(S->errmsg, bad[i].msg) && strstr(S->errmsg, "badk"),
           "signature '%s' rejected: %s", bad[i].sig, S->errmsg);
    }
    ok(ad_kreg_find(S, "badk") == -1, "a rejected kernel is not registered");
    ok(ad_kreg_add(S, "noargs", (void (*)(void))k_ptr, "v()") >= 0, "v() is a valid signature");
}

static void test_calls(ad_state *S) {
    int nsig0 = ad_kreg_nsigs(S);
    int a = ad_kreg_add(S, "h_mul_i32", (void (*)(void))k_i32, "i32(i32,i32)");
    int b = ad_kreg_add(S, "h_add_i64", (void (*)(void))k_i64, "i64(i64)");
    int c = ad_kreg_add(S, "h_mul_f32", (void (*)(void))k_f32, "f32(f32,f64)");
    int d = ad_kreg_add(S, "h_sub_f64", (void (*)(void))k_f64, "f64(f64,f64)");
    int e = ad_kreg_add(S, "iota", (void (*)(void))k_ptr, "v(p,i64)");
    ok(a >= AD_K_COUNT && b > a && c > b && d > c && e > d, "host kernels get ids after the shipped ones (%d..%d)", a, e);
    ok(ad_kreg_nsigs(S) == nsig0 + 4, "one new cif per new signature (v(p,i64) already known)");
    ad_karg args[2], ret;
    args[0].i32 = -6; args[1].i32 = 7;
    ad_kreg_call(S, a, args, &ret);
    ok(ret.i32 == -42, "i32 call");
    args[0].i64 = 1;
    ad_kreg_call(S, b, args, &ret);
    ok(ret.i64 == 5000000001LL, "i64 call");
    args[0].f32 = 1.5f; args[1].f64 = 4.0;
    ad_kreg_call(S, c, args, &ret);
    is_double(ret.f32, 6.0, 0, "f32 call");
    args[0].f64 = 1.25; args[1].f64 = 0.5;
    ad_kreg_call(S, d, args, &ret);
    is_double(ret.f64, 0.75, 0, "f64 call");
    double buf[5] = {0};
    args[0].p = buf; args[1].i64 = 5;
    ad_kreg_call(S, e, args, NULL);
    is_double(buf[4], 4.0, 0, "pointer call");
    ok(ad_kreg_nargs(S, c) == 2 && ad_kreg_argtype(S, c, -1) == AD_KT_F32 && ad_kreg_argtype(S, c, 1) == AD_KT_F64,
       "argument and return types");
    ok(strcmp(ad_kreg_name(S, d), "h_sub_f64") == 0 && strcmp(ad_kreg_sig(S, d), "f64(f64,f64)") == 0, "name and sig");

    int nsig1 = ad_kreg_nsigs(S), count = ad_kreg_count(S);
    int d2 = ad_kreg_add(S, "h_sub_f64", (void (*)(void))k_f64_other, "f64(f64,f64)");
    ok(d2 == d && ad_kreg_count(S) == count && ad_kreg_nsigs(S) == nsig1, "replacing keeps the id and the cif");
    args[0].f64 = 1.25; args[1].f64 = 0.5;
    ad_kreg_call(S, d, args, &ret);
    is_double(ret.f64, 1.75, 0, "the replacement is called");
}

static void test_registry(ad_state *S) {
    ok(ad_kreg_count(S) == AD_K_COUNT, "every shipped kernel registered (%d)", AD_K_COUNT);
    ok(ad_kreg_find(S, "tanh_f32") == AD_K_tanh_f32 && ad_kreg_find(S, "add_i64") == AD_K_add_i64,
       "shipped ids equal AD_K_ constants");
    ok(ad_kreg_find(S, "no_such_kernel") == -1, "unknown name gives -1");
    ok(ad_kreg_nsigs(S) < AD_K_COUNT / 4, "shipped kernels share cifs (%d for %d)", ad_kreg_nsigs(S), AD_K_COUNT);
    ok(ad_kreg_sig(S, AD_K_add_f32) == ad_kreg_sig(S, AD_K_mul_f64), "same signature string, same interned cif");
    /* Many host kernels force the name table to grow. */
    char name[32];
    int fails = 0;
    for (int i = 0; i < 600; i++) {
        snprintf(name, sizeof name, "host_%d", i);
        if (ad_kreg_add(S, name, (void (*)(void))k_ptr, "v(p,i64)") < 0) fails++;
    }
    ok(fails == 0 && ad_kreg_find(S, "host_599") >= 0 && ad_kreg_find(S, "host_0") >= 0 &&
       ad_kreg_find(S, "sin_f64") == AD_K_sin_f64, "lookups survive table growth");
}

/* ---- kernels against libm ---- */

typedef void (*unary_f32)(float *, const float *, int64_t);
typedef void (*unary_f64)(double *, const double *, int64_t);

/* Largest error over n inputs spread over [lo, hi], in units of 'scale'
 * relative error (absolute near zero). */
static double max_rel_err_f32(unary_f32 k, double (*ref)(double), int64_t n, double lo, double hi) {
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * (double)i / (double)(n > 1 ? n - 1 : 1));
    k(y, x, n);
    for (int64_t i = 0; i < n; i++) {
        double want = ref(x[i]), err = fabs(y[i] - want) / fmax(fabs(want), 1e-30);
        if (!(err <= worst)) worst = err;
    }
    free(x);
    free(y);
    return worst;
}

static double max_rel_err_f64(unary_f64 k, double (*ref)(double), int64_t n, double lo, double hi) {
    double *x = malloc(sizeof(double) * (size_t)n), *y = malloc(sizeof(double) * (size_t)n);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (double)i / (double)(n > 1 ? n - 1 : 1);
    k(y, x, n);
    for (int64_t i = 0; i < n; i++) {
        double want = ref(x[i]), err = fabs(y[i] - want) / fmax(fabs(want), 1e-300);
        if (!(err <= worst)) worst = err;
    }
    free(x);
    free(y);
    return worst;
}

static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }

static void test_unary_kernels(void) {
    static const int64_t lens[] = {1, 3, 7, 15, 17, 33, 4099, 100003};
    static const struct { const char *name; unary_f32 f; unary_f64 d; double (*ref)(double); double lo, hi; } ops[] = {
        {"exp", ad_k_exp_f32, ad_k_exp_f64, exp, -20, 20},
        {"log", ad_k_log_f32, ad_k_log_f64, log, 1e-3, 1e3},
        {"tanh", ad_k_tanh_f32, ad_k_tanh_f64, tanh, -9, 9},
        {"sin", ad_k_sin_f32, ad_k_sin_f64, sin, -10, 10},
        {"erf", ad_k_erf_f32, ad_k_erf_f64, erf, -3, 3},
        {"sqrt", ad_k_sqrt_f32, ad_k_sqrt_f64, sqrt, 0, 1e4},
        {"sigmoid", ad_k_sigmoid_f32, ad_k_sigmoid_f64, ref_sigmoid, -30, 30},
    };
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        double wf = 0, wd = 0;
        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
            wf = fmax(wf, max_rel_err_f32(ops[o].f, ops[o].ref, lens[l], ops[o].lo, ops[o].hi));
            wd = fmax(wd, max_rel_err_f64(ops[o].d, ops[o].ref, lens[l], ops[o].lo, ops[o].hi));
        }
        ok(wf < 3e-7, "%s f32 within ~2 ulp over tails and the parallel path (%.3g)", ops[o].name, wf);
        ok(wd < 1e-15, "%s f64 within a few ulp (%.3g)", ops[o].name, wd);
    }
}

static void test_binary_kernels(void) {
    enum { N = 100003 };
    float *a = malloc(sizeof(float) * N), *b = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) { a[i] = (float)(i % 97) - 48.5f; b[i] = (float)(i % 13) + 0.25f; }
    float two = 2.0f;
    int bad = 0;
    ad_k_mul_f32(y, a, 1, b, 1, N);
    for (int i = 0; i < N; i++) bad += y[i] != a[i] * b[i];
    ad_k_mul_f32(y, a, 1, &two, 0, N);
    for (int i = 0; i < N; i++) bad += y[i] != a[i] * 2.0f;
    ad_k_sub_f32(y, &two, 0, b, 1, N);
    for (int i = 0; i < N; i++) bad += y[i] != 2.0f - b[i];
    ok(bad == 0, "mul/sub f32 with array and broadcast operands");
    int64_t ia[7] = {-7, -7, 7, 7, 0, INT64_MIN, 5}, ib[7] = {2, -2, 2, -2, 3, -1, 1}, iy[7];
    int64_t rem[7] = {1, -1, 1, -1, 0, 0, 0}, fdiv[7] = {-4, 3, 3, -4, 0, INT64_MIN, 5};
    ad_k_remainder_i64(iy, ia, 1, ib, 1, 7);
    ok(memcmp(iy, rem, sizeof rem) == 0, "int64 remainder takes the divisor's sign");
    ad_k_div_floor_i64(iy, ia, 1, ib, 1, 7);
    ok(memcmp(iy, fdiv, sizeof fdiv) == 0, "int64 floor division (INT64_MIN / -1 wraps)");
    bool by[4];
    double da[4] = {1, NAN, 3, -0.0}, db[4] = {1, NAN, 2, 0.0};
    ad_k_eq_f64(by, da, 1, db, 1, 4);
    ok(by[0] && !by[1] && !by[2] && by[3], "eq: nan != nan, -0 == 0");
    free(a);
    free(b);
    free(y);
}

int main(void) {
    plan(48);
    ad_state *S = test_state(0);
    if (!S) return 1;
    S->kernels = ad_kreg_new(S);
    ok(S->kernels && ad_kernels_register_builtin(S) == ADDSL_OK, "shipped kernels register");
    test_registry(S);
    test_signatures(S);
    test_calls(S);
    test_unary_kernels();
    test_binary_kernels();
    ad_kreg_free(S, S->kernels);
    test_state_close(S);
    return done_testing();
}

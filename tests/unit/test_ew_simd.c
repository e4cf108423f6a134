/* test_ew_simd.c: TAP tests of the vectorised kernels of issue 13 against
 * plain loops, element for element and bit for bit: the binary kernels (an
 * AVX2 copy where the CPU has it) at every length around the vector widths
 * and with each operand broadcast; SLEEF calls cut across the OpenMP team
 * against the same calls in small serial pieces; the float sums of
 * kernels/reduce_simd.c against loops that add in their documented order. */
#include "tap.h"

#include <omp.h>

#include "kernels/elementwise.h"
#include "kernels/reduce_simd.h"

#define NMAX 4099

/* Deterministic values in [-8, 8) with a fraction, never 0 (div). */
static double val(int64_t i, int salt) {
    uint64_t h = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)salt * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    return ((double)(h % 2048) - 1024.0) / 128.0 + 1.0 / 1024.0;
}

typedef void (*bin_f32)(float *, const float *, int64_t, const float *, int64_t, int64_t);
typedef void (*bin_f64)(double *, const double *, int64_t, const double *, int64_t, int64_t);

/* The scalar reference of op 0..5 (add sub mul div max min), per dtype. */
#define REF_FN(name, T)                                                            \
    static T name(int op, T a, T b) {                                              \
        switch (op) {                                                              \
        case 0: return a + b;                                                      \
        case 1: return a - b;                                                      \
        case 2: return a * b;                                                      \
        case 3: return a / b;                                                      \
        case 4: return a > b ? a : b;                                              \
        default: return a < b ? a : b;                                             \
        }                                                                          \
    }
REF_FN(ref_f32, float)
REF_FN(ref_f64, double)

static const char *const op_names[] = {"add", "sub", "mul", "div", "maximum", "minimum"};

/* Lengths 0..67 (every tail of a 4-, 8- and 16-lane loop) and a few long ones. */
static int64_t length(int k) {
    static const int64_t longs[] = {255, 1000, 4096, NMAX};
    return k < 68 ? k : longs[k - 68];
}
#define NLENGTHS 72

static void test_binary(void) {
    /* operands start up to 3 elements in (unaligned): NMAX + 3 readable */
    static float af[NMAX + 3], bf[NMAX + 3], of[NMAX + 1];
    static double ad[NMAX + 3], bd[NMAX + 3], od[NMAX + 1];
    for (int i = 0; i < NMAX + 3; i++) {
        af[i] = (float)val(i, 1); bf[i] = (float)val(i, 2);
        ad[i] = val(i, 3) / 3.0; bd[i] = val(i, 4) / 7.0;
    }
    const bin_f32 kf[] = {ad_k_add_f32, ad_k_sub_f32, ad_k_mul_f32, ad_k_div_f32, ad_k_maximum_f32, ad_k_minimum_f32};
    const bin_f64 kd[] = {ad_k_add_f64, ad_k_sub_f64, ad_k_mul_f64, ad_k_div_f64, ad_k_maximum_f64, ad_k_minimum_f64};
    for (int op = 0; op < 6; op++) {
        /* strides (1, 1), (0, 1), (1, 0), (0, 0): a 0 reads element 0 for all */
        for (int s = 0; s < 4; s++) {
            const int64_t sa = s == 0 || s == 2, sb = s == 0 || s == 1;
            int bad32 = 0, bad64 = 0;
            for (int k = 0; k < NLENGTHS; k++) {
                const int64_t n = length(k);
                /* one past the end is a guard: a kernel must not write it */
                of[n] = 12345.0f; od[n] = 12345.0;
                /* odd offsets: unaligned operands */
                kf[op](of, af + (k & 1), sa, bf + (k & 3), sb, n);
                kd[op](od, ad + (k & 1), sa, bd + (k & 3), sb, n);
                for (int64_t i = 0; i < n; i++) {
                    float wf = ref_f32(op, af[(k & 1) + i * sa], bf[(k & 3) + i * sb]);
                    double wd = ref_f64(op, ad[(k & 1) + i * sa], bd[(k & 3) + i * sb]);
                    bad32 += memcmp(&of[i], &wf, sizeof wf) != 0;
                    bad64 += memcmp(&od[i], &wd, sizeof wd) != 0;
                }
                bad32 += of[n] != 12345.0f;
                bad64 += od[n] != 12345.0;
            }
            ok(bad32 == 0, "%s f32 strides (%d, %d): every length equals the plain loop", op_names[op], (int)sa, (int)sb);
            ok(bad64 == 0, "%s f64 strides (%d, %d): every length equals the plain loop", op_names[op], (int)sa, (int)sb);
        }
    }
}

/* A SLEEF call on n elements (cut across the team past its cost threshold)
 * against the same kernel on pieces of 64, which each run inline. */
static void test_sleef_cut(void) {
    enum { N = 30011 };
    static float xf[N], of[N], pf[N];
    static double xd[N], od[N], pd[N];
    for (int i = 0; i < N; i++) { xf[i] = (float)(val(i, 5) / 4); xd[i] = val(i, 6) / 4; }
    const int64_t sizes[] = {0, 1, 127, 4000, 4500, 10000, N};
    int bad = 0;
    for (int t = 1; t <= 3; t++) {
        omp_set_num_threads(t);
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            const int64_t n = sizes[k];
            ad_k_tanh_f32(of, xf, n); ad_k_tanh_f64(od, xd, n);
            for (int64_t lo = 0; lo < n; lo += 64) {
                int64_t m = n - lo < 64 ? n - lo : 64;
                ad_k_tanh_f32(pf + lo, xf + lo, m); ad_k_tanh_f64(pd + lo, xd + lo, m);
            }
            bad += n && (memcmp(of, pf, (size_t)n * sizeof *of) || memcmp(od, pd, (size_t)n * sizeof *od));
            ad_k_exp_f64(od, xd, n);
            for (int64_t lo = 0; lo < n; lo += 64) ad_k_exp_f64(pd + lo, xd + lo, n - lo < 64 ? n - lo : 64);
            bad += n && memcmp(od, pd, (size_t)n * sizeof *od);
        }
    }
    ok(bad == 0, "tanh f32/f64 and exp f64 cut across 1, 2 and 3 threads equal the serial pieces");
    is_double(od[1], exp(xd[1]), 4e-16 * exp(xd[1]), "exp f64 value");
    is_double(pf[2], tanh(xf[2]), 2e-7, "tanh f32 value");
}

/* The documented order: lane l sums elements l, l + 16, ...; lanes combine
 * as ((l + (l+4)) + ((l+8) + (l+12))), then ((0 + 1) + (2 + 3)); the tail of
 * n % 16 in order comes last; above 4096 elements, two halves pairwise. */
static double ref_rowsum(const double *x, int64_t n) {
    if (n > 4096) {
        int64_t h = (n / 4096 + 1) / 2 * 4096;
        return ref_rowsum(x, h) + ref_rowsum(x + h, n - h);
    }
    double lane[16] = {0};
    int64_t k = 0;
    for (; k + 16 <= n; k += 16)
        for (int l = 0; l < 16; l++) lane[l] += x[k + l];
    double q[4];
    for (int l = 0; l < 4; l++) q[l] = (lane[l] + lane[l + 4]) + (lane[l + 8] + lane[l + 12]);
    double t = 0;
    for (; k < n; k++) t += x[k];
    return ((q[0] + q[1]) + (q[2] + q[3])) + t;
}

/* float32 rows (kernels/reduce_simd.c): float lanes over chunks of 256, rows of 32
 * then (last chunk) rows of 8 into lanes 0..7, folded
 * (a[l] + a[l+8]) + (a[l+16] + a[l+24]) into 8 double lanes; n % 8 last in
 * double; ((q0 + q1) + (q2 + q3)) + t with q[l] = D[l] + D[l+4]. */
static double ref_rowsum_f32(const float *x, int64_t n) {
    double d[8] = {0};
    int64_t k = 0;
    while (n - k >= 8) {
        const int64_t end = n - k > 256 ? k + 256 : n;
        float a[32] = {0};
        for (; k + 32 <= end; k += 32)
            for (int l = 0; l < 32; l++) a[l] += x[k + l];
        for (; k + 8 <= end; k += 8)
            for (int l = 0; l < 8; l++) a[l] += x[k + l];
        for (int l = 0; l < 8; l++) d[l] += (double)((a[l] + a[l + 8]) + (a[l + 16] + a[l + 24]));
    }
    double t = 0;
    for (; k < n; k++) t += (double)x[k];
    double q[4];
    for (int l = 0; l < 4; l++) q[l] = d[l] + d[l + 4];
    return ((q[0] + q[1]) + (q[2] + q[3])) + t;
}

static void test_sums(void) {
    enum { R = 70, C = 300 };
    static float xf[R * C + 9000];
    static double xd[R * C + 9000], xw[R * C + 9000];  /* 4 rows of 4100 fit */
    for (int i = 0; i < R * C + 9000; i++) {
        xd[i] = val(i, 7) * 1.3e-3 + 1.0 / 3.0;
        xf[i] = (float)xd[i];
        xw[i] = (double)xf[i];
    }
    int bad32 = 0, bad64 = 0;
    const int64_t ns[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 100, 255, 256, 257, 264, 287, 1031, 4096, 4097, 9000};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        double gf = ad_rs_rowsum_f32(xf + 1, ns[k]), wf = ref_rowsum_f32(xf + 1, ns[k]);
        double gd = ad_rs_rowsum_f64(xd + 3, ns[k]), wd = ref_rowsum(xd + 3, ns[k]);
        bad32 += memcmp(&gf, &wf, sizeof gf) != 0;
        bad64 += memcmp(&gd, &wd, sizeof gd) != 0;
    }
    ok(bad32 == 0, "row sums f32 in the documented order");
    ok(bad64 == 0, "row sums f64 in the documented order");
    /* many rows in one call, summed or averaged, in the output dtype */
    bad32 = bad64 = 0;
    const int64_t widths[] = {0, 17, 100, 520, 4100};
    for (size_t k = 0; k < sizeof widths / sizeof widths[0]; k++)
        for (int mean = 0; mean < 2; mean++) {
            const int64_t n = widths[k], rows = 4;
            float of[4];
            double od[4];
            ad_rs_rowsums_f32(xf, rows, n, mean, of);
            ad_rs_rowsums_f64(xd, rows, n, mean, od);
            for (int64_t r = 0; r < rows; r++) {
                double wf = ref_rowsum_f32(xf + r * n, n), wd = ref_rowsum(xd + r * n, n);
                float wf32 = (float)(mean ? wf / (double)n : wf);
                double wd64 = mean ? wd / (double)n : wd;
                bad32 += memcmp(&of[r], &wf32, sizeof wf32) != 0;
                bad64 += memcmp(&od[r], &wd64, sizeof wd64) != 0;
            }
        }
    ok(bad32 == 0, "rows of [4, n] f32 summed and averaged in one call");
    ok(bad64 == 0, "rows of [4, n] f64 summed and averaged in one call");
    /* column sums over m columns of rows 'inner' apart, added into a[] */
    bad32 = bad64 = 0;
    const int64_t ms[] = {0, 1, 3, 4, 5, 16, 17, 21, 100, 256};
    const int64_t rows[] = {0, 1, 63, 64, 65, 70};
    static double af[C], wf[C], adv[C], wd[C];
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof rows / sizeof rows[0]; b++) {
            const int64_t m = ms[a], n = rows[b], inner = C;
            for (int64_t j = 0; j < m; j++) af[j] = wf[j] = adv[j] = wd[j] = 0.25 * (double)j;
            ad_rs_colsum_f32(xf + 2, n, inner, m, af);
            ad_rs_colsum_f64(xd + 2, n, inner, m, adv);
            for (int64_t k = 0; k < n; k++)
                for (int64_t j = 0; j < m; j++) { wf[j] += xw[2 + k * inner + j]; wd[j] += xd[2 + k * inner + j]; }
            bad32 += m && memcmp(af, wf, (size_t)m * sizeof *af);
            bad64 += m && memcmp(adv, wd, (size_t)m * sizeof *adv);
        }
    ok(bad32 == 0, "column sums f32 equal the row-order loop for every width and height");
    ok(bad64 == 0, "column sums f64 equal the row-order loop for every width and height");
}

/* float32 sums of 1e6 and 1e7 elements against a compensated long double
 * sum: within one float ulp of the exact total plus 1/64 of a float rounding
 * of the sum of magnitudes (cancelling inputs). A float accumulator walked in
 * order misses by thousands of ulps here; torch's cascade by up to 27 (normal
 * data) and 7 (0.1 x 1e7). Inputs: uniform [0, 1), normal-ish with
 * cancellation, 0.1 repeated, ones with one 1e8, magnitudes 1e-4..1e4. */
static void test_sum_accuracy(void) {
    const int64_t N = 10000000;
    float *x = malloc((size_t)N * sizeof *x);
    if (!x) { ok(0, "float32 sum accuracy: no memory"); return; }
    int bad = 0;
    double worst = 0;
    for (int kind = 0; kind < 5; kind++)
        for (int64_t n = 1000000; n <= N; n *= 10) {
            for (int64_t i = 0; i < n; i++) {
                const double u = (val(i, kind) + 8.0) / 16.0, v = val(i, kind + 9);
                switch (kind) {
                case 0: x[i] = (float)u; break;
                case 1: x[i] = (float)(v * u * 0.37); break;
                case 2: x[i] = 0.1f; break;
                case 3: x[i] = i == n / 3 ? 1e8f : 1.0f; break;
                default: x[i] = (float)((u - 0.3) * pow(10.0, (double)((int64_t)(v + 8.0) % 9 - 4))); break;
                }
            }
            long double s = 0, c = 0, mag = 0;
            for (int64_t i = 0; i < n; i++) {
                const long double y = (long double)x[i] - c, t = s + y;
                c = (t - s) - y;
                s = t;
                mag += fabsl((long double)x[i]);
            }
            const float got = (float)ad_rs_rowsum_f32(x, n);
            const double ex = (double)s, ulp = nextafterf(fabsf((float)ex), INFINITY) - fabsf((float)ex);
            const double err = fabs((double)got - ex), bound = ulp + ldexp((double)mag, -30);
            bad += !(err <= bound);
            if (err / ulp > worst) worst = err / ulp;
        }
    free(x);
    ok(bad == 0, "float32 sums of 1e6 and 1e7 within an ulp of the compensated sum (worst %.2f ulps)", worst);
}

int main(void) {
    plan(6 * 4 * 2 + 3 + 6 + 1);
    test_binary();
    test_sleef_cut();
    test_sums();
    test_sum_accuracy();
    return done_testing();
}

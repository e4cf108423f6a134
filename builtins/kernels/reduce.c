/* kernels/reduce.c: plain C kernels over contiguous data for reductions,
 * scans, softmax, sorting, matrix products and losses (rows of kernels/reduce.def). */
#include <math.h>
#include <string.h>

#include "kernels/reduce.h"
#include "kernels/blas_api.h"
#include "kernels/kernel_limits.h"
#include "kernels/par_for.h"
#include "kernels/reduce_simd.h"

/* Columns reduced together in the strided case: their accumulators stay in
 * registers/L1 while successive rows stream past. */
#define CHUNK 256
/* A single long row is cut into this many fixed blocks to reduce in parallel. */
#define ROW_BLOCKS 64

/* Float sums accumulate in double (torch's CPU acc_type); integer sums and
 * products go through uint64_t so overflow wraps as in torch instead of being UB. */

/* 'omp simd' lets the compiler keep several partial sums in vector lanes. */
#define DEF_ROWSUM(NAME, T, ACC)                                                   \
    static inline ACC NAME(const T *x, int64_t n) {                                \
        ACC a = 0;                                                                 \
        _Pragma("omp simd reduction(+:a)")                                         \
        for (int64_t k = 0; k < n; k++) a += (ACC)x[k];                            \
        return a;                                                                  \
    }

#define DEF_ROW(NAME, T, ACC, INIT, STEP)                                          \
    static inline ACC NAME(const T *x, int64_t n) {                                \
        ACC a = INIT;                                                              \
        for (int64_t k = 0; k < n; k++) a = STEP(a, x[k]);                         \
        return a;                                                                  \
    }

/* One long row: PART[b] is ROWFN over block b of ROW_BLOCKS fixed blocks of
 * X[0..N) (EMPTY for a block past the end). The blocks depend on N only, so
 * the result is independent of the number of threads. */
#define ROW_PARTS(PART, X, N, ROWFN, EMPTY)                                        \
    do {                                                                           \
        const int64_t blk = ((N) + ROW_BLOCKS - 1) / ROW_BLOCKS;                   \
        _Pragma("omp parallel for schedule(static)")                               \
        for (int b = 0; b < ROW_BLOCKS; b++) {                                     \
            int64_t lo = b * blk, hi = lo + blk < (N) ? lo + blk : (N);            \
            PART[b] = lo < hi ? ROWFN(X + lo, hi - lo) : EMPTY;                    \
        }                                                                          \
    } while (0)

/* Defines FN(x, out, outer, n, inner): x is [outer, n, inner], out [outer, inner]. */
#define DEF_REDUCE(FN, T, ACC, ROWFN, INIT, STEP, FIN)                             \
    void FN(const void *xp, void *op, int64_t outer, int64_t n, int64_t inner) {   \
        const T *x = xp;                                                           \
        T *o = op;                                                                 \
        const int par = outer * n * inner >= AD_OMP_THRESHOLD;                     \
        if (inner == 1 && outer == 1 && par) {                                     \
            ACC part[ROW_BLOCKS], a = INIT;                                        \
            ROW_PARTS(part, x, n, ROWFN, INIT);                                    \
            for (int b = 0; b < ROW_BLOCKS; b++) a = STEP(a, part[b]);             \
            o[0] = FIN(a);                                                         \
            return;                                                                \
        }                                                                          \
        if (inner == 1) {                                                          \
            PAR_FOR(par, for (int64_t r = 0; r < outer; r++) {                     \
                ACC a = ROWFN(x + r * n, n);                                       \
                o[r] = FIN(a);                                                     \
            });                                                                    \
            return;                                                                \
        }                                                                          \
        const int64_t nch = (inner + CHUNK - 1) / CHUNK;                           \
        PAR_FOR(par, for (int64_t task = 0; task < outer * nch; task++) {          \
            int64_t ob = task / nch, i0 = task % nch * CHUNK;                      \
            int64_t m = inner - i0 < CHUNK ? inner - i0 : CHUNK;                   \
            ACC a[CHUNK];                                                          \
            for (int64_t j = 0; j < m; j++) a[j] = INIT;                           \
            const T *base = x + ob * n * inner + i0;                               \
            for (int64_t k = 0; k < n; k++) {                                      \
                const T *row = base + k * inner;                                   \
                _Pragma("omp simd")                                                \
                for (int64_t j = 0; j < m; j++) a[j] = STEP(a[j], row[j]);         \
            }                                                                      \
            for (int64_t j = 0; j < m; j++) o[ob * inner + i0 + j] = FIN(a[j]);    \
        });                                                                        \
    }

#define ADD(a, v) ((a) + (v))
#define MUL(a, v) ((a) * (v))
#define UADD(a, v) ((a) + (uint64_t)(v))
#define UMUL(a, v) ((a) * (uint64_t)(v))
/* NaN wins so that a NaN anywhere propagates, as torch.amax does. */
#define FMAX(a, v) (((v) > (a) || (v) != (v)) ? (v) : (a))
#define FMIN(a, v) (((v) < (a) || (v) != (v)) ? (v) : (a))
#define IMAX(a, v) ((v) > (a) ? (v) : (a))
#define IMIN(a, v) ((v) < (a) ? (v) : (a))
#define AND(a, v) ((a) && (v))
#define OR(a, v) ((a) || (v))
#define SAME(a) (a)
#define TO_I64(a) ((int64_t)(a))
#define MEAN(a) ((a) / (double)n)

DEF_ROWSUM(rowsum_i64, int64_t, uint64_t)
DEF_ROW(rowprod_f32, float, double, 1.0, MUL)
DEF_ROW(rowprod_f64, double, double, 1.0, MUL)
DEF_ROW(rowprod_i64, int64_t, uint64_t, 1u, UMUL)
DEF_ROW(rowmax_f32, float, float, -INFINITY, FMAX)
DEF_ROW(rowmax_f64, double, double, -INFINITY, FMAX)
DEF_ROW(rowmax_i64, int64_t, int64_t, INT64_MIN, IMAX)
DEF_ROW(rowmin_f32, float, float, INFINITY, FMIN)
DEF_ROW(rowmin_f64, double, double, INFINITY, FMIN)
DEF_ROW(rowmin_i64, int64_t, int64_t, INT64_MAX, IMIN)
DEF_ROW(rowall_b8, uint8_t, int, 1, AND)
DEF_ROW(rowany_b8, uint8_t, int, 0, OR)

DEF_REDUCE(ad_red_sum_i64, int64_t, uint64_t, rowsum_i64, 0u, UADD, TO_I64)
DEF_REDUCE(ad_red_prod_f32, float, double, rowprod_f32, 1.0, MUL, SAME)
DEF_REDUCE(ad_red_prod_f64, double, double, rowprod_f64, 1.0, MUL, SAME)
DEF_REDUCE(ad_red_prod_i64, int64_t, uint64_t, rowprod_i64, 1u, UMUL, TO_I64)
DEF_REDUCE(ad_red_amax_f32, float, float, rowmax_f32, -INFINITY, FMAX, SAME)
DEF_REDUCE(ad_red_amax_f64, double, double, rowmax_f64, -INFINITY, FMAX, SAME)
DEF_REDUCE(ad_red_amax_i64, int64_t, int64_t, rowmax_i64, INT64_MIN, IMAX, SAME)
DEF_REDUCE(ad_red_amin_f32, float, float, rowmin_f32, INFINITY, FMIN, SAME)
DEF_REDUCE(ad_red_amin_f64, double, double, rowmin_f64, INFINITY, FMIN, SAME)
DEF_REDUCE(ad_red_amin_i64, int64_t, int64_t, rowmin_i64, INT64_MAX, IMIN, SAME)
DEF_REDUCE(ad_red_all_b8, uint8_t, int, rowall_b8, 1, AND, SAME)
DEF_REDUCE(ad_red_any_b8, uint8_t, int, rowany_b8, 0, OR, SAME)

/* Float sums and means (issue 13). Against torch's vectorised kernels the
 * 'omp simd' rows above were latency-bound on one vector accumulator of two
 * SSE2 lanes, and a column reduction with a single chunk of columns ran on
 * one thread. */

/* The row and column sums themselves, vectorised per instruction set, are
 * in kernels/reduce_simd.c. */
#define rowsum_f32 ad_rs_rowsum_f32
#define rowsum_f64 ad_rs_rowsum_f64
#define colsum_f32 ad_rs_colsum_f32
#define colsum_f64 ad_rs_colsum_f64

/* A column reduction with fewer (outer, chunk) tasks than this also cuts
 * its rows into blocks, so that both cores get work. */
#define COL_TASKS 8
/* Runs of whole rows a row reduction is cut into (each one call of the
 * row kernel), enough for both cores to share evenly. */
#define ROW_TASKS 64
/* At most this many row blocks; their partials are added in block order,
 * and their number depends on the shape only, never on the team size. */
#define COL_BLOCKS 8

#define DEF_SUMRED(FN, SUF, T, FIN, ISMEAN)                                                \
    void FN(const void *xp, void *op, int64_t outer, int64_t n, int64_t inner) {   \
        const T *x = xp;                                                           \
        T *o = op;                                                                 \
        const int par = outer * n * inner >= AD_OMP_THRESHOLD;                     \
        if (inner == 1 && outer == 1 && par) {                                     \
            double part[ROW_BLOCKS];                                               \
            ROW_PARTS(part, x, n, rowsum_##SUF, 0.0);                              \
            for (int w = ROW_BLOCKS / 2; w > 0; w /= 2)                            \
                for (int b = 0; b < w; b++) part[b] += part[b + w];                \
            o[0] = (T)FIN(part[0]);                                                \
            return;                                                                \
        }                                                                          \
        if (inner == 1) {                                                          \
            /* up to ROW_TASKS runs of whole rows; a row's sum does not depend on \
             * the cut */                                                          \
            const int64_t per = (outer + ROW_TASKS - 1) / ROW_TASKS;               \
            PAR_FOR(par, for (int64_t lo = 0; lo < outer; lo += per) {             \
                ad_rs_rowsums_##SUF(x + lo * n, outer - lo < per ? outer - lo : per, n, ISMEAN, o + lo); \
            });                                                                    \
            return;                                                                \
        }                                                                          \
        const int64_t nch = (inner + CHUNK - 1) / CHUNK;                           \
        if (par && outer * nch < COL_TASKS && n >= 2 * COL_BLOCKS) {               \
            const int64_t blk = (n + COL_BLOCKS - 1) / COL_BLOCKS;                 \
            for (int64_t task = 0; task < outer * nch; task++) {                   \
                int64_t ob = task / nch, i0 = task % nch * CHUNK;                  \
                int64_t m = inner - i0 < CHUNK ? inner - i0 : CHUNK;               \
                const T *base = x + ob * n * inner + i0;                           \
                double part[COL_BLOCKS][CHUNK];                                    \
                _Pragma("omp parallel for schedule(static)")                       \
                for (int b = 0; b < COL_BLOCKS; b++) {                             \
                    int64_t lo = b * blk, hi = lo + blk < n ? lo + blk : n;        \
                    for (int64_t j = 0; j < m; j++) part[b][j] = 0;                \
                    if (lo < hi) colsum_##SUF(base + lo * inner, hi - lo, inner, m, part[b]); \
                }                                                                  \
                for (int64_t j = 0; j < m; j++) {                                  \
                    double a = part[0][j];                                         \
                    for (int b = 1; b < COL_BLOCKS; b++) a += part[b][j];          \
                    o[ob * inner + i0 + j] = (T)FIN(a);                            \
                }                                                                  \
            }                                                                      \
            return;                                                                \
        }                                                                          \
        PAR_FOR(par, for (int64_t task = 0; task < outer * nch; task++) {          \
            int64_t ob = task / nch, i0 = task % nch * CHUNK;                      \
            int64_t m = inner - i0 < CHUNK ? inner - i0 : CHUNK;                   \
            double a[CHUNK];                                                       \
            for (int64_t j = 0; j < m; j++) a[j] = 0;                              \
            colsum_##SUF(x + ob * n * inner + i0, n, inner, m, a);                 \
            for (int64_t j = 0; j < m; j++) o[ob * inner + i0 + j] = (T)FIN(a[j]); \
        });                                                                        \
    }
DEF_SUMRED(ad_red_sum_f32, f32, float, SAME, false)
DEF_SUMRED(ad_red_sum_f64, f64, double, SAME, false)
DEF_SUMRED(ad_red_mean_f32, f32, float, MEAN, true)
DEF_SUMRED(ad_red_mean_f64, f64, double, MEAN, true)

/* The remaining kernels walk one "line" (n elements 'inner' apart) per
 * output; PAR_LINES runs its block once per line with 'line' in scope. */
#define PAR_LINES(...)                                                             \
    PAR_FOR(outer * n * inner >= AD_OMP_THRESHOLD,                                 \
            for (int64_t line = 0; line < outer * inner; line++) __VA_ARGS__)

#define LINE_BASE(line) ((line) / inner * n * inner + (line) % inner)

/* Largest element of a line; NaN if there is one. */
#define DEF_LINEMAX(NAME, T)                                                       \
    static inline double NAME(const T *x, int64_t n, int64_t s) {                  \
        double m = -INFINITY;                                                      \
        for (int64_t k = 0; k < n; k++) m = FMAX(m, (double)x[k * s]);             \
        return m;                                                                  \
    }
DEF_LINEMAX(linemax_f32, float)
DEF_LINEMAX(linemax_f64, double)

/* float32 exponentials in float (as torch computes them), sums in double. */
#define EXP_f32(v) ((double)expf((float)(v)))
#define EXP_f64(v) exp(v)

/* torch.logsumexp substitutes 0 for an infinite max so that all -inf gives
 * -inf and any +inf gives +inf instead of NaN. */
#define DEF_LOGSUMEXP(SUF, T)                                                      \
    void ad_red_logsumexp_##SUF(const void *xp, void *op, int64_t outer,           \
                                int64_t n, int64_t inner) {                        \
        const T *x = xp;                                                           \
        T *o = op;                                                                 \
        PAR_LINES({                                                                \
            const T *xl = x + LINE_BASE(line);                                     \
            double m = linemax_##SUF(xl, n, inner), s = 0;                         \
            if (isinf(m)) m = 0;                                                   \
            for (int64_t k = 0; k < n; k++) s += EXP_##SUF((double)xl[k * inner] - m); \
            o[line] = (T)(log(s) + m);                                             \
        });                                                                        \
    }
DEF_LOGSUMEXP(f32, float)
DEF_LOGSUMEXP(f64, double)

#define DEF_SOFTMAX(SUF, T)                                                        \
    void ad_red_softmax_##SUF(const void *xp, void *op, int64_t outer, int64_t n,  \
                              int64_t inner) {                                     \
        const T *x = xp;                                                           \
        T *o = op;                                                                 \
        PAR_LINES({                                                                \
            int64_t b = LINE_BASE(line);                                           \
            double m = linemax_##SUF(x + b, n, inner), s = 0;                      \
            for (int64_t k = 0; k < n; k++) {                                      \
                double e = EXP_##SUF((double)x[b + k * inner] - m);                \
                o[b + k * inner] = (T)e;                                           \
                s += e;                                                            \
            }                                                                      \
            for (int64_t k = 0; k < n; k++) o[b + k * inner] = (T)(o[b + k * inner] / s); \
        });                                                                        \
    }                                                                              \
    void ad_red_logsoftmax_##SUF(const void *xp, void *op, int64_t outer,          \
                                 int64_t n, int64_t inner) {                       \
        const T *x = xp;                                                           \
        T *o = op;                                                                 \
        PAR_LINES({                                                                \
            int64_t b = LINE_BASE(line);                                           \
            double m = linemax_##SUF(x + b, n, inner), s = 0;                      \
            for (int64_t k = 0; k < n; k++) s += EXP_##SUF((double)x[b + k * inner] - m); \
            double lse = m + log(s);                                               \
            for (int64_t k = 0; k < n; k++) o[b + k * inner] = (T)((double)x[b + k * inner] - lse); \
        });                                                                        \
    }
DEF_SOFTMAX(f32, float)
DEF_SOFTMAX(f64, double)

/* Norm of one line by order p; the empty line is refused by the caller for +-inf. */
#define DEF_NORM(SUF, T)                                                           \
    static double normline_##SUF(const T *x, int64_t n, int64_t s, double p) {     \
        double a = 0;                                                              \
        if (isinf(p)) {                                                            \
            a = p > 0 ? 0 : INFINITY;                                              \
            for (int64_t k = 0; k < n; k++) {                                      \
                double v = fabs((double)x[k * s]);                                 \
                a = p > 0 ? FMAX(a, v) : FMIN(a, v);                               \
            }                                                                      \
        } else if (p == 0) {                                                       \
            for (int64_t k = 0; k < n; k++) a += x[k * s] != 0;                    \
        } else if (p == 1) {                                                       \
            for (int64_t k = 0; k < n; k++) a += fabs((double)x[k * s]);           \
        } else if (p == 2) {                                                       \
            for (int64_t k = 0; k < n; k++) a += (double)x[k * s] * x[k * s];      \
            a = sqrt(a);                                                           \
        } else {                                                                   \
            for (int64_t k = 0; k < n; k++) a += pow(fabs((double)x[k * s]), p);   \
            a = pow(a, 1.0 / p);                                                   \
        }                                                                          \
        return a;                                                                  \
    }                                                                              \
    void ad_red_norm_##SUF(const void *xp, void *op, int64_t outer, int64_t n,     \
                           int64_t inner, double ord) {                            \
        const T *x = xp;                                                           \
        T *o = op;                                                                 \
        PAR_LINES({ o[line] = (T)normline_##SUF(x + LINE_BASE(line), n, inner, ord); }); \
    }
DEF_NORM(f32, float)
DEF_NORM(f64, double)

/* Welford's update in double, as torch: the textbook one-pass formula cancels
 * badly, and a two-pass one leaves the rounding error of sum/n in every
 * deviation, so a constant line (an expanded input) got a variance of 1e-32
 * instead of 0 and std's gradient there was O(1) garbage instead of 0. The
 * mean output stays sum/n, the value mean() gives. */
#define DEF_VAR(SUF, T)                                                            \
    void ad_red_var_##SUF(const void *xp, void *vp, void *mp, int64_t outer,       \
                          int64_t n, int64_t inner, double correction,             \
                          int32_t take_sqrt) {                                     \
        const T *x = xp;                                                           \
        T *v = vp, *mo = mp;                                                       \
        double dof = (double)n - correction;                                       \
        if (dof < 0) dof = 0;                                                      \
        PAR_LINES({                                                                \
            const T *xl = x + LINE_BASE(line);                                     \
            double wm = 0, ss = 0, sum = 0;                                        \
            for (int64_t k = 0; k < n; k++) {                                      \
                double xk = xl[k * inner];                                         \
                double d = xk - wm;                                                \
                wm += d / (double)(k + 1);                                         \
                ss += d * (xk - wm);                                               \
                sum += xk;                                                         \
            }                                                                      \
            double r = ss / dof;                                                   \
            v[line] = (T)(take_sqrt ? sqrt(r) : r);                                \
            if (mo) mo[line] = (T)(sum / (double)n);                               \
        });                                                                        \
    }
DEF_VAR(f32, float)
DEF_VAR(f64, double)

/* First extreme wins ties; the first NaN wins over everything (torch.max).
 * With inner > 1, CHUNK columns advance together so rows are read in order. */
#define DEF_ARGEXT(NAME, T, BETTER)                                                \
    void NAME(const void *xp, void *vp, void *ip, int64_t outer, int64_t n,        \
              int64_t inner) {                                                     \
        const T *x = xp;                                                           \
        T *vals = vp;                                                              \
        int64_t *idx = ip;                                                         \
        const int par = outer * n * inner >= AD_OMP_THRESHOLD;                     \
        const int64_t nch = (inner + CHUNK - 1) / CHUNK;                           \
        PAR_FOR(par, for (int64_t task = 0; task < outer * nch; task++) {          \
            int64_t ob = task / nch, i0 = task % nch * CHUNK;                      \
            int64_t m = inner - i0 < CHUNK ? inner - i0 : CHUNK;                   \
            const T *base = x + ob * n * inner + i0;                               \
            T best[CHUNK];                                                         \
            int64_t bi[CHUNK];                                                     \
            for (int64_t j = 0; j < m; j++) { best[j] = base[j]; bi[j] = 0; }      \
            for (int64_t k = 1; k < n; k++) {                                      \
                const T *row = base + k * inner;                                   \
                for (int64_t j = 0; j < m; j++) {                                  \
                    T v = row[j];                                                  \
                    if (best[j] == best[j] && (v != v || v BETTER best[j])) {      \
                        best[j] = v;                                               \
                        bi[j] = k;                                                 \
                    }                                                              \
                }                                                                  \
            }                                                                      \
            for (int64_t j = 0; j < m; j++) {                                      \
                if (vals) vals[ob * inner + i0 + j] = best[j];                     \
                idx[ob * inner + i0 + j] = bi[j];                                  \
            }                                                                      \
        });                                                                        \
    }
DEF_ARGEXT(ad_red_max_f32, float, >)
DEF_ARGEXT(ad_red_max_f64, double, >)
DEF_ARGEXT(ad_red_max_i64, int64_t, >)
DEF_ARGEXT(ad_red_min_f32, float, <)
DEF_ARGEXT(ad_red_min_f64, double, <)
DEF_ARGEXT(ad_red_min_i64, int64_t, <)

#define DEF_SCAN(NAME, T, ACC, INIT, STEP)                                         \
    void NAME(const void *xp, void *op, int64_t outer, int64_t n, int64_t inner) { \
        const T *x = xp;                                                           \
        T *o = op;                                                                 \
        PAR_LINES({                                                                \
            int64_t b = LINE_BASE(line);                                           \
            ACC a = INIT;                                                          \
            for (int64_t k = 0; k < n; k++) {                                      \
                a = STEP(a, x[b + k * inner]);                                     \
                o[b + k * inner] = (T)a;                                           \
            }                                                                      \
        });                                                                        \
    }
DEF_SCAN(ad_red_cumsum_f32, float, double, 0.0, ADD)
DEF_SCAN(ad_red_cumsum_f64, double, double, 0.0, ADD)
DEF_SCAN(ad_red_cumsum_i64, int64_t, uint64_t, 0u, UADD)
DEF_SCAN(ad_red_cumprod_f32, float, double, 1.0, MUL)
DEF_SCAN(ad_red_cumprod_f64, double, double, 1.0, MUL)
DEF_SCAN(ad_red_cumprod_i64, int64_t, uint64_t, 1u, UMUL)

/* Bottom-up merge sort of indices by key: stable, so equal keys keep their
 * order (torch's CPU sort is stable too); NaN counts as the largest value. */
#define DEF_SORT(SUF, T)                                                           \
    static inline int before_##SUF(T a, T b, int desc) {                           \
        if (desc) return a > b || (a != a && b == b);                              \
        return a < b || (b != b && a == a);                                        \
    }                                                                              \
    static void msort_##SUF(const T *key, int64_t *idx, int64_t *tmp, int64_t n,   \
                            int desc) {                                            \
        int64_t *src = idx, *dst = tmp;                                            \
        for (int64_t w = 1; w < n; w *= 2) {                                       \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                            \
                int64_t mid = lo + w < n ? lo + w : n;                             \
                int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;                      \
                int64_t i = lo, j = mid, d = lo;                                   \
                while (i < mid && j < hi)                                          \
                    dst[d++] = before_##SUF(key[src[j]], key[src[i]], desc) ? src[j++] : src[i++]; \
                while (i < mid) dst[d++] = src[i++];                               \
                while (j < hi) dst[d++] = src[j++];                                \
            }                                                                      \
            int64_t *t = src; src = dst; dst = t;                                  \
        }                                                                          \
        if (src != idx) memcpy(idx, src, (size_t)n * sizeof *idx);                 \
    }                                                                              \
    void ad_red_sort_##SUF(const void *xp, void *vp, void *ip, void *scratch,      \
                           int64_t rows, int64_t n, int32_t descending) {          \
        const T *x = xp;                                                           \
        T *vals = vp;                                                              \
        int64_t *idx = ip;                                                         \
        for (int64_t r = 0; r < rows; r++) {                                       \
            int64_t *ir = idx + r * n;                                             \
            for (int64_t k = 0; k < n; k++) ir[k] = k;                             \
            msort_##SUF(x + r * n, ir, scratch, n, descending);                    \
            for (int64_t k = 0; k < n; k++) vals[r * n + k] = x[r * n + ir[k]];    \
        }                                                                          \
    }
DEF_SORT(f32, float)
DEF_SORT(f64, double)
DEF_SORT(i64, int64_t)

/* OpenBLAS (Debian's 0.3.21) runs a product of up to about 2^20 multiply-adds on one
 * thread and threads bigger ones itself, which pays from about 2^23 only. Between the
 * two, rows cut into pieces of at most GEMM_PIECE multiply-adds, one single-threaded
 * call each on the OpenMP team, were faster (two cores, medians of 301 calls: 100^3
 * float32 17.7 -> 11.0 us, float64 34.8 -> 21.0; 200^3 110 -> 83 and 201 -> 150; 256^3
 * level). A piece stays under OpenBLAS's own threading cut because a call it would
 * thread ran 1.5-20x slower inside a parallel region. The cut depends on the shape
 * only, never on the team, so a result's bits do not depend on OMP_NUM_THREADS. */
#define GEMM_SPLIT_MIN (1 << 17)
#define GEMM_SPLIT_MAX (1 << 23)
#define GEMM_PIECE 1000000
#define GEMM_PIECE_MIN_ROWS 8

/* Where OpenBLAS runs on one thread (ad_blas_api.foreign_omp_set_num_threads), a product over
 * GEMM_SPLIT_MAX is cut into this many pieces of at least GEMM_PIECE_MIN_ROWS
 * rows, so the team still shares it. */
#define GEMM_ONE_THREAD_PIECES 32

/* Rows per piece of an m x n x k product, or 0 to leave it whole: a cut where a
 * piece of GEMM_PIECE multiply-adds holds at least GEMM_PIECE_MIN_ROWS rows, into
 * an even count of pieces of equal rows but the last. 'one_thread': OpenBLAS
 * does not thread, so no product is left whole for it to thread. */
static int64_t gemm_piece_rows(int64_t m, int64_t n, int64_t k, int one_thread) {
    double mnk = (double)m * (double)n * (double)k;
    if (mnk < GEMM_SPLIT_MIN) return 0;
    int64_t rows = GEMM_PIECE / (n * k);
    if (mnk > GEMM_SPLIT_MAX) {
        if (!one_thread) return 0;
        rows = (m + GEMM_ONE_THREAD_PIECES - 1) / GEMM_ONE_THREAD_PIECES;
    }
    if (rows < GEMM_PIECE_MIN_ROWS) {
        if (!one_thread) return 0;
        rows = GEMM_PIECE_MIN_ROWS;
    }
    int64_t pieces = (m + rows - 1) / rows;
    if (pieces < 2) pieces = 2;
    pieces += pieces & 1; /* two threads get equal halves */
    rows = (m + pieces - 1) / pieces;
    return rows < m ? rows : 0;
}

/* A product left whole is one piece of m rows, run inline. */
#define DEF_GEMM(SUF, T, CALL)                                                                      \
    void ad_red_gemm_##SUF(const ad_blas_api *blas, const void *a, const void *b, void *c, int64_t m, \
                           int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,               \
                           int32_t trans_a, int32_t trans_b, double alpha, double beta) {             \
        const enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;                       \
        const enum CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;                       \
        void (*const one_thread)(int) = blas->foreign_omp_set_num_threads;                          \
        const int64_t cut = gemm_piece_rows(m, n, k, one_thread != NULL);                           \
        const int64_t rows = cut ? cut : m;                                                         \
        const int64_t pieces = cut ? (m + rows - 1) / rows : 1, a_step = trans_a ? 1 : lda;         \
        PAR_FOR(pieces > 1, for (int64_t p = 0; p < pieces; p++) {                                  \
            const int64_t r0 = p * rows, mp = m - r0 < rows ? m - r0 : rows;                        \
            if (one_thread) one_thread(1); /* this thread's count, in OpenBLAS's runtime */          \
            blas->CALL(CblasRowMajor, ta, tb, (blasint)mp, (blasint)n, (blasint)k, (T)alpha,        \
                       (const T *)a + r0 * a_step, (blasint)lda, b, (blasint)ldb, (T)beta,          \
                       (T *)c + r0 * ldc, (blasint)ldc);                                            \
        });                                                                                         \
    }
DEF_GEMM(f32, float, cblas_sgemm)
DEF_GEMM(f64, double, cblas_dgemm)

/* BLAS has no integer gemm; i-k-j order keeps the inner loop contiguous in C. */
void ad_red_gemm_i64(const ad_blas_api *blas, const void *ap, const void *bp, void *cp, int64_t m, int64_t n,
                     int64_t k, int64_t lda, int64_t ldb, int64_t ldc, int32_t trans_a, int32_t trans_b,
                     double alpha, double beta) {
    (void)blas;
    const int64_t *a = ap, *b = bp;
    int64_t *c = cp;
    const uint64_t al = (uint64_t)(int64_t)alpha, be = (uint64_t)(int64_t)beta;
    const int64_t asr = trans_a ? 1 : lda, asc = trans_a ? lda : 1;
    const int64_t bsr = trans_b ? 1 : ldb, bsc = trans_b ? ldb : 1;
    const int par = m * n * k >= AD_OMP_THRESHOLD;
    PAR_FOR(par, for (int64_t i = 0; i < m; i++) {
        uint64_t *ci = (uint64_t *)(c + i * ldc);
        for (int64_t j = 0; j < n; j++) ci[j] = be ? be * ci[j] : 0;
        for (int64_t p = 0; p < k; p++) {
            uint64_t aip = al * (uint64_t)a[i * asr + p * asc];
            const int64_t *bp_row = b + p * bsr;
            for (int64_t j = 0; j < n; j++) ci[j] += aip * (uint64_t)bp_row[j * bsc];
        }
    });
}

void ad_red_dot_f32(const ad_blas_api *blas, const void *a, int64_t stride_a, const void *b, int64_t stride_b,
                    int64_t n, void *out) {
    *(float *)out = blas->cblas_sdot((blasint)n, a, (blasint)stride_a, b, (blasint)stride_b);
}

void ad_red_dot_f64(const ad_blas_api *blas, const void *a, int64_t stride_a, const void *b, int64_t stride_b,
                    int64_t n, void *out) {
    *(double *)out = blas->cblas_ddot((blasint)n, a, (blasint)stride_a, b, (blasint)stride_b);
}

void ad_red_dot_i64(const ad_blas_api *blas, const void *ap, int64_t stride_a, const void *bp, int64_t stride_b,
                    int64_t n, void *out) {
    (void)blas;
    const int64_t *a = ap, *b = bp;
    uint64_t s = 0;
    for (int64_t i = 0; i < n; i++) s += (uint64_t)a[i * stride_a] * (uint64_t)b[i * stride_b];
    *(int64_t *)out = (int64_t)s;
}

static inline double pointwise_loss(double d, int32_t kind, double param) {
    double ad = fabs(d);
    switch (kind) {
    case AD_LOSS_SQUARED: return d * d;
    case AD_LOSS_ABS: return ad;
    case AD_LOSS_SMOOTH_L1:
        if (param == 0) return ad;
        return ad < param ? 0.5 * d * d / param : ad - 0.5 * param;
    default: /* AD_LOSS_HUBER */
        return ad < param ? 0.5 * d * d : param * (ad - 0.5 * param);
    }
}

/* torch clamps each log term of binary cross entropy at -100 so that a
 * prediction of exactly 0 or 1 gives a large finite loss, not inf. */
#define BCE_LOG_MIN (-100.0)

#define DEF_LOSSES(SUF, T)                                                         \
    void ad_loss_pointwise_##SUF(const void *xp, const void *tp, void *op,         \
                                 int64_t n, int32_t kind, double param) {          \
        const T *x = xp, *t = tp;                                                  \
        T *o = op;                                                                 \
        const int par = n >= AD_OMP_THRESHOLD;                                     \
        PAR_FOR(par, for (int64_t i = 0; i < n; i++)                               \
            o[i] = (T)pointwise_loss((double)x[i] - (double)t[i], kind, param););  \
    }                                                                              \
    int64_t ad_loss_bce_##SUF(const void *xp, const void *tp, const void *wp,      \
                              void *op, int64_t n) {                               \
        const T *x = xp, *t = tp, *w = wp;                                         \
        T *o = op;                                                                 \
        for (int64_t i = 0; i < n; i++) {                                          \
            double xi = x[i], ti = t[i];                                           \
            if (!(xi >= 0 && xi <= 1)) return 1;                                   \
            double l1 = fmax(log1p(-xi), BCE_LOG_MIN), l0 = fmax(log(xi), BCE_LOG_MIN); \
            double l = (ti - 1) * l1 - ti * l0;                                    \
            o[i] = (T)(w ? l * w[i] : l);                                          \
        }                                                                          \
        return 0;                                                                  \
    }                                                                              \
    void ad_loss_bce_logits_##SUF(const void *xp, const void *tp, const void *wp,  \
                                  const void *pwp, void *op, int64_t n) {          \
        const T *x = xp, *t = tp, *w = wp, *pw = pwp;                              \
        T *o = op;                                                                 \
        const int par = n >= AD_OMP_THRESHOLD;                                     \
        PAR_FOR(par, for (int64_t i = 0; i < n; i++) {                             \
            double xi = x[i], ti = t[i];                                           \
            double sp = log1p(exp(-fabs(xi))) + fmax(-xi, 0.0); /* -log_sigmoid */ \
            double lw = pw ? 1 + (pw[i] - 1.0) * ti : 1.0;                         \
            double l = (1 - ti) * xi + lw * sp;                                    \
            o[i] = (T)(w ? l * w[i] : l);                                          \
        });                                                                        \
    }                                                                              \
    int64_t ad_loss_nll_##SUF(const void *lp, const void *tp, const void *wp,      \
                              void *op, void *wsp, int64_t nbatch, int64_t nclass, \
                              int64_t inner, int64_t ignore_index) {               \
        const T *logp = lp, *w = wp;                                               \
        const int64_t *target = tp;                                                \
        T *loss = op, *ws = wsp;                                                   \
        for (int64_t i = 0; i < nbatch * inner; i++) {                             \
            int64_t c = target[i], b = i / inner, d = i % inner;                   \
            if (c == ignore_index) { loss[i] = 0; ws[i] = 0; continue; }           \
            if (c < 0 || c >= nclass) return 1 + i;                                \
            double wc = w ? (double)w[c] : 1.0;                                    \
            loss[i] = (T)(-wc * (double)logp[(b * nclass + c) * inner + d]);       \
            ws[i] = (T)wc;                                                         \
        }                                                                          \
        return 0;                                                                  \
    }                                                                              \
    void ad_loss_smooth_##SUF(const void *lp, const void *tp, const void *wp,      \
                              void *op, int64_t nbatch, int64_t nclass,            \
                              int64_t inner, int64_t ignore_index, double eps) {   \
        const T *logp = lp, *w = wp;                                               \
        const int64_t *target = tp;                                                \
        T *loss = op;                                                              \
        for (int64_t i = 0; i < nbatch * inner; i++) {                             \
            if (target[i] == ignore_index) continue;                               \
            const T *l = logp + i / inner * nclass * inner + i % inner;            \
            double sm = 0;                                                         \
            for (int64_t c = 0; c < nclass; c++)                                   \
                sm -= (w ? (double)w[c] : 1.0) * (double)l[c * inner];             \
            loss[i] = (T)((1 - eps) * (double)loss[i] + eps / (double)nclass * sm); \
        }                                                                          \
    }                                                                              \
    void ad_loss_soft_ce_##SUF(const void *lp, const void *tp, const void *wp,     \
                               void *op, int64_t nbatch, int64_t nclass,           \
                               int64_t inner, double eps) {                        \
        const T *logp = lp, *target = tp, *w = wp;                                 \
        T *loss = op;                                                              \
        for (int64_t i = 0; i < nbatch * inner; i++) {                             \
            int64_t base = i / inner * nclass * inner + i % inner;                 \
            double s = 0;                                                          \
            for (int64_t c = 0; c < nclass; c++) {                                 \
                double t = (double)target[base + c * inner] * (1 - eps) + eps / (double)nclass; \
                s -= (w ? (double)w[c] : 1.0) * t * (double)logp[base + c * inner]; \
            }                                                                      \
            loss[i] = (T)s;                                                        \
        }                                                                          \
    }
DEF_LOSSES(f32, float)
DEF_LOSSES(f64, double)

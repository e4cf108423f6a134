/* test_traj_cuda.c: the CUDA trajectory kernels against the CPU kernels of
 * builtins/kernels/traj.c on random inputs, outputs and gradients; TAP, 77 without a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/traj.h"
#include "traj_cuda.h"
#include "test_cuda_util.h"

enum { ST_ACC, ST_JERK, ST_CENTRAL, ST_BACKWARD };
static const char *const STEP_NAME[] = {"acc", "jerk", "pos-central", "pos-backward"};
enum { SI_NONE, SI_REPEATED, SI_PERMUTED };
static const char *const SIDX_NAME[] = {"none", "repeated", "permuted"};

typedef struct tcase {
    int f64, step, vec_dt, smode;
    int64_t b, H, d, B0, A; /* A: action rows */
} tcase;

/* Host and device copies of one case's buffers; index 0..3 inputs (u, p0, v0,
 * a0), 4..7 outputs, 8..11 output gradients, 12 gu, 13..15 start grads. */
enum { NBUF = 16 };
typedef struct bufs {
    size_t n[NBUF];
    void *cpu[NBUF], *gpu_back[NBUF], *dev[NBUF];
    int64_t *sidx, *dsidx;
    void *dt, *ddt, *gstart;
    double dts;
} bufs;



static void put(void *p, size_t i, double x, int f64) {
    if (f64) ((double *)p)[i] = x;
    else ((float *)p)[i] = (float)x;
}
static double get(const void *p, size_t i, int f64) {
    return f64 ? ((const double *)p)[i] : (double)((const float *)p)[i];
}


static void make_bufs(const tcase *c, bufs *B, uint64_t *rng) {
    const size_t es = c->f64 ? 8 : 4, n = (size_t)(c->b * c->H * c->d);
    const size_t nu = (size_t)(c->b * c->A * c->d), ns = (size_t)(c->B0 * c->d);
    size_t sz[NBUF] = {nu, ns, ns, ns, n, n, n, n, n, n, n, n, nu, ns, ns, ns};
    memset(B, 0, sizeof *B);
    for (int k = 0; k < NBUF; k++) {
        B->n[k] = sz[k];
        B->cpu[k] = xmalloc(sz[k] * es);
        B->gpu_back[k] = xmalloc(sz[k] * es);
        CK(addsl_cuda_malloc(&B->dev[k], sz[k] * es));
        int is_input = k < 4 || (k >= 8 && k < 12);
        for (size_t i = 0; is_input && i < sz[k]; i++) put(B->cpu[k], i, 2 * rng_unit(rng) - 1, c->f64);
        if (is_input) CK(addsl_cuda_to_device(B->dev[k], B->cpu[k], sz[k] * es));
        else CK(addsl_cuda_memset(B->dev[k], 0xff, sz[k] * es)); /* NaN: every element must be written */
    }
    B->gstart = xmalloc((size_t)(c->b * 3 * c->d) * es);
    B->dts = 0.01 + 0.04 * rng_unit(rng);
    B->dt = xmalloc((size_t)c->H * es);
    for (int64_t h = 0; h < c->H; h++)
        put(B->dt, (size_t)h, c->vec_dt ? 0.01 + 0.04 * rng_unit(rng) : B->dts, c->f64);
    B->ddt = NULL;
    if (c->vec_dt) {
        CK(addsl_cuda_malloc(&B->ddt, (size_t)c->H * es));
        CK(addsl_cuda_to_device(B->ddt, B->dt, (size_t)c->H * es));
    }
    B->sidx = NULL;
    B->dsidx = NULL;
    if (c->smode != SI_NONE) {
        B->sidx = xmalloc((size_t)c->b * sizeof(int64_t));
        for (int64_t i = 0; i < c->b; i++)
            B->sidx[i] = c->smode == SI_REPEATED ? (int64_t)(rng_next(rng) % (uint64_t)c->B0) : i;
        for (int64_t i = c->b - 1; c->smode == SI_PERMUTED && i > 0; i--) {
            int64_t j = (int64_t)(rng_next(rng) % (uint64_t)(i + 1)), t = B->sidx[i];
            B->sidx[i] = B->sidx[j];
            B->sidx[j] = t;
        }
        CK(addsl_cuda_malloc((void **)&B->dsidx, (size_t)c->b * sizeof(int64_t)));
        CK(addsl_cuda_to_device(B->dsidx, B->sidx, (size_t)c->b * sizeof(int64_t)));
    }
}

static void free_bufs(bufs *B) {
    for (int k = 0; k < NBUF; k++) {
        free(B->cpu[k]);
        free(B->gpu_back[k]);
        CK(addsl_cuda_free(B->dev[k]));
    }
    free(B->gstart);
    free(B->dt);
    free(B->sidx);
    CK(addsl_cuda_free(B->ddt));
    CK(addsl_cuda_free(B->dsidx));
}

#define ARGS4(a, k) a[k], a[k + 1], a[k + 2], a[k + 3]

static void run_cpu(const tcase *c, bufs *B) {
    void **x = B->cpu;
    const int64_t b = c->b, H = c->H, d = c->d;
    if (c->f64) {
        const double *dt = B->dt;
        if (c->step == ST_ACC) {
            ad_traj_acc_fwd_f64(ARGS4(x, 0), B->sidx, dt, b, H, d, ARGS4(x, 4));
            ad_traj_acc_bwd_f64(ARGS4(x, 8), dt, b, H, d, x[12], B->gstart);
        } else if (c->step == ST_JERK) {
            ad_traj_jerk_fwd_f64(ARGS4(x, 0), B->sidx, dt, b, H, d, ARGS4(x, 4));
            ad_traj_jerk_bwd_f64(ARGS4(x, 8), dt, b, H, d, x[12], B->gstart);
        } else {
            int cen = c->step == ST_CENTRAL;
            ad_traj_pos_fwd_f64(ARGS4(x, 0), B->sidx, B->dts, cen, b, H, d, ARGS4(x, 4));
            ad_traj_pos_bwd_f64(ARGS4(x, 8), B->dts, cen, b, H, d, x[12], B->gstart);
        }
        ad_traj_scatter_start_f64(B->gstart, B->sidx, b, c->B0, d, x[13], x[14], x[15]);
    } else {
        const float *dt = B->dt;
        if (c->step == ST_ACC) {
            ad_traj_acc_fwd_f32(ARGS4(x, 0), B->sidx, dt, b, H, d, ARGS4(x, 4));
            ad_traj_acc_bwd_f32(ARGS4(x, 8), dt, b, H, d, x[12], B->gstart);
        } else if (c->step == ST_JERK) {
            ad_traj_jerk_fwd_f32(ARGS4(x, 0), B->sidx, dt, b, H, d, ARGS4(x, 4));
            ad_traj_jerk_bwd_f32(ARGS4(x, 8), dt, b, H, d, x[12], B->gstart);
        } else {
            int cen = c->step == ST_CENTRAL;
            ad_traj_pos_fwd_f32(ARGS4(x, 0), B->sidx, (float)B->dts, cen, b, H, d, ARGS4(x, 4));
            ad_traj_pos_bwd_f32(ARGS4(x, 8), (float)B->dts, cen, b, H, d, x[12], B->gstart);
        }
        ad_traj_scatter_start_f32(B->gstart, B->sidx, b, c->B0, d, x[13], x[14], x[15]);
    }
}

/* Forward then backward on the device; the scalar-dt cases pass a NULL dt. */
static int run_gpu(const tcase *c, bufs *B) {
    void **x = B->dev;
    const int64_t b = c->b, H = c->H, d = c->d, B0 = c->B0;
    int rc = 0;
    if (c->f64) {
        const double *dt = B->ddt;
        if (c->step == ST_ACC) {
            rc = addsl_cuda_traj_acc_fwd_f64(ARGS4(x, 0), B->dsidx, dt, B->dts, b, H, d, ARGS4(x, 4), NULL);
            if (!rc) rc = addsl_cuda_traj_acc_bwd_f64(ARGS4(x, 8), B->dsidx, dt, B->dts, b, B0, H, d, x[12], x[13], x[14], x[15], NULL);
        } else if (c->step == ST_JERK) {
            rc = addsl_cuda_traj_jerk_fwd_f64(ARGS4(x, 0), B->dsidx, dt, B->dts, b, H, d, ARGS4(x, 4), NULL);
            if (!rc) rc = addsl_cuda_traj_jerk_bwd_f64(ARGS4(x, 8), B->dsidx, dt, B->dts, b, B0, H, d, x[12], x[13], x[14], x[15], NULL);
        } else {
            int cen = c->step == ST_CENTRAL;
            rc = addsl_cuda_traj_pos_fwd_f64(ARGS4(x, 0), B->dsidx, B->dts, cen, b, H, d, ARGS4(x, 4), NULL);
            if (!rc) rc = addsl_cuda_traj_pos_bwd_f64(ARGS4(x, 8), B->dsidx, B->dts, cen, b, B0, H, d, x[12], x[13], x[14], x[15], NULL);
        }
    } else {
        const float *dt = B->ddt;
        const float dts = (float)B->dts;
        if (c->step == ST_ACC) {
            rc = addsl_cuda_traj_acc_fwd_f32(ARGS4(x, 0), B->dsidx, dt, dts, b, H, d, ARGS4(x, 4), NULL);
            if (!rc) rc = addsl_cuda_traj_acc_bwd_f32(ARGS4(x, 8), B->dsidx, dt, dts, b, B0, H, d, x[12], x[13], x[14], x[15], NULL);
        } else if (c->step == ST_JERK) {
            rc = addsl_cuda_traj_jerk_fwd_f32(ARGS4(x, 0), B->dsidx, dt, dts, b, H, d, ARGS4(x, 4), NULL);
            if (!rc) rc = addsl_cuda_traj_jerk_bwd_f32(ARGS4(x, 8), B->dsidx, dt, dts, b, B0, H, d, x[12], x[13], x[14], x[15], NULL);
        } else {
            int cen = c->step == ST_CENTRAL;
            rc = addsl_cuda_traj_pos_fwd_f32(ARGS4(x, 0), B->dsidx, dts, cen, b, H, d, ARGS4(x, 4), NULL);
            if (!rc) rc = addsl_cuda_traj_pos_bwd_f32(ARGS4(x, 8), B->dsidx, dts, cen, b, B0, H, d, x[12], x[13], x[14], x[15], NULL);
        }
    }
    if (!rc) rc = addsl_cuda_synchronize();
    return rc;
}

static const char *const OUT_NAME[NBUF] = {"", "", "", "", "pos", "vel", "acc", "jerk", "", "", "",
                                           "", "grad_u", "grad_start_pos", "grad_start_vel",
                                           "grad_start_acc"};

/* Largest |gpu - cpu| / (tol * max|cpu|) over the outputs; NaN (unwritten or
 * not finite) counts as infinite. 'worst' names the output. */
static double compare(const tcase *c, bufs *B, double tol, const char **worst) {
    const size_t es = c->f64 ? 8 : 4;
    double score = 0;
    *worst = "";
    for (int k = 4; k < NBUF; k++) {
        if (k >= 8 && k < 12) continue;
        CK(addsl_cuda_to_host(B->gpu_back[k], B->dev[k], B->n[k] * es));
        double mx = 0, err = 0;
        for (size_t i = 0; i < B->n[k]; i++) {
            double r = get(B->cpu[k], i, c->f64), g = get(B->gpu_back[k], i, c->f64);
            mx = fmax(mx, fabs(r));
            double e = fabs(g - r);
            if (!(e == e) || isinf(e)) e = INFINITY;
            err = fmax(err, e);
        }
        double s = err / (tol * (mx > 0 ? mx : 1));
        if (!(s <= score)) {
            score = s;
            *worst = OUT_NAME[k];
        }
    }
    return score;
}

int main(void) {
    int status;
    if (skip_without_gpu(&status)) return status;
    static const int64_t HS[] = {8, 9, 32, 99, 1024}, DS[] = {1, 7, 12}, BS[] = {1, 16, 400};
    /* step configurations: (step, per-step dt) */
    static const int CFG[][2] = {{ST_ACC, 1}, {ST_ACC, 0}, {ST_JERK, 1}, {ST_JERK, 0},
                                 {ST_CENTRAL, 0}, {ST_BACKWARD, 0}};
    /* TRAJ_CUDA_QUICK=1: small sizes only (for runs under compute-sanitizer) */
    const char *quick_env = getenv("TRAJ_CUDA_QUICK");
    const int quick = quick_env && *quick_env && strcmp(quick_env, "0") != 0;
    const char *seed_env = getenv("TRAJ_CUDA_SEED");
    uint64_t rng = seed_env && *seed_env ? strtoull(seed_env, NULL, 0) : 0x5eed1234abcdull;
    printf("# seed %llu%s\n", (unsigned long long)rng, quick ? ", quick sizes" : "");
    int ntest = 0, nfail = 0;
    double worst_ratio[2] = {0, 0};
    for (int f64 = 0; f64 < 2; f64++)
        for (size_t g = 0; g < sizeof CFG / sizeof CFG[0]; g++)
            for (size_t hi = 0; hi < 5; hi++)
                for (size_t di = 0; di < 3; di++)
                    for (size_t bi = 0; bi < 3; bi++) {
                        if (quick && (HS[hi] > 99 || BS[bi] > 16)) continue;
                        tcase c = {f64, CFG[g][0], CFG[g][1], 0, BS[bi], HS[hi], DS[di], 0, 0};
                        c.A = c.step == ST_CENTRAL ? c.H - 4 : c.H;
                        const double tol = f64 ? 1e-12 : 1e-5;
                        double score = 0;
                        const char *worst = "", *wsidx = "";
                        for (int sm = 0; sm < 3; sm++) {
                            c.smode = sm;
                            c.B0 = sm == SI_REPEATED ? (c.b + 2) / 3 : c.b;
                            bufs B;
                            make_bufs(&c, &B, &rng);
                            run_cpu(&c, &B);
                            int rc = run_gpu(&c, &B);
                            const char *w = "launch";
                            double s = rc ? INFINITY : compare(&c, &B, tol, &w);
                            if (rc) printf("# %s\n", addsl_cuda_error_string(rc));
                            if (!(s <= score)) {
                                score = s;
                                worst = w;
                                wsidx = SIDX_NAME[sm];
                            }
                            free_bufs(&B);
                        }
                        int ok = score <= 1;
                        worst_ratio[f64] = fmax(worst_ratio[f64], score);
                        ntest++;
                        nfail += !ok;
                        printf("%s %d - %s %s dt=%s H=%lld d=%lld b=%lld, start_idx none/repeated/"
                               "permuted: max err %.3g of tol",
                               ok ? "ok" : "not ok", ntest, f64 ? "float64" : "float32",
                               STEP_NAME[c.step], c.vec_dt ? "per-step" : "scalar", (long long)c.H,
                               (long long)c.d, (long long)c.b, score);
                        if (!ok) printf(" (worst: %s, start_idx %s)", worst, wsidx);
                        printf("\n");
                    }
    printf("# worst error / tolerance: float32 %.3g (tol 1e-5 of max|x|), float64 %.3g (tol 1e-12)\n",
           worst_ratio[0], worst_ratio[1]);
    printf("1..%d\n", ntest);
    printf("# %d passed, %d failed\n", ntest - nfail, nfail);
    return nfail ? 1 : 0;
}

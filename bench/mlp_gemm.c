/* mlp_gemm.c: the five matrix products of bench/autograd_mlp.ad's step (784-256-10 MLP,
 * batch 256, float32), as the compiled program calls them (OpenBLAS, transposes as flags):
 * the floor under row c5 of bench/compile_rows.sh. Prints "mlp_gemm SECONDS" (the five
 * together, median of REPS), "mlp_gemm_gflops G" and "mlp_gemm_flop N" (their floating-point
 * operations, which rows c5p and c5dp divide by bench/fma_peak.c's peak); threads as OpenBLAS
 * reads them. */
#define _POSIX_C_SOURCE 199309L
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

enum { B = 256, D = 784, H = 256, C = 10, REPS = 21 };

static float *filled(size_t n, unsigned seed) {
    float *p = malloc(n * sizeof *p);
    if (!p) return NULL;
    srand(seed);
    for (size_t i = 0; i < n; i++) p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

/* Forward x @ W1 and h @ W2; backward g @ W2^T, h^T @ g, x^T @ dh (the gradient of x,
 * which does not require grad, is not computed: the compiled program prunes it). */
static void step(const float *x, const float *w1, const float *w2, const float *g, float *h, float *o, float *dh,
                 float *dw2, float *dw1) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, H, D, 1.0f, x, D, w1, H, 0.0f, h, H);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, C, H, 1.0f, h, H, w2, C, 0.0f, o, C);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, H, C, 1.0f, g, C, w2, C, 0.0f, dh, H);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, C, B, 1.0f, h, H, g, C, 0.0f, dw2, C);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, D, H, B, 1.0f, x, D, dh, H, 0.0f, dw1, H);
}

int main(void) {
    float *x = filled((size_t)B * D, 1), *w1 = filled((size_t)D * H, 2), *w2 = filled((size_t)H * C, 3);
    float *g = filled((size_t)B * C, 4), *h = filled((size_t)B * H, 5), *o = filled((size_t)B * C, 6);
    float *dh = filled((size_t)B * H, 7), *dw2 = filled((size_t)H * C, 8), *dw1 = filled((size_t)D * H, 9);
    if (!x || !w1 || !w2 || !g || !h || !o || !dh || !dw2 || !dw1) {
        fputs("mlp_gemm.c: out of memory\n", stderr);
        return 1;
    }
    double t[REPS];
    step(x, w1, w2, g, h, o, dh, dw2, dw1);
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        step(x, w1, w2, g, h, o, dh, dw2, dw1);
        t[r] = now() - t0;
    }
    qsort(t, REPS, sizeof *t, cmp_double);
    double flops = 2.0 * ((double)B * H * D + (double)B * C * H + (double)B * H * C + (double)H * C * B + (double)D * H * B);
    printf("mlp_gemm %.9g\n", t[REPS / 2]);
    printf("mlp_gemm_gflops %.4g\n", flops / t[REPS / 2] * 1e-9);
    printf("mlp_gemm_flop %.0f\n", flops);
    free(x); free(w1); free(w2); free(g); free(h); free(o); free(dh); free(dw2); free(dw1);
    return 0;
}

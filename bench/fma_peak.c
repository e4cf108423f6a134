/* fma_peak.c: this CPU's float32 multiply-add peak, on one thread and on every thread of
 * OpenMP's team: the ceiling no product can pass, so that a product row can say how close
 * to it each side runs and what a ratio target asks of the hardware (rows c5p, c5dp of
 * compile_rows.sh, and the matmul line of run.sh).
 * Prints "fma_peak_1 GFLOPS" and "fma_peak_all GFLOPS" (best of ROUNDS) and "fma_threads N".
 * Build: cc -O2 -march=native -ffp-contract=fast -fopenmp (a build without -march=native
 * measures the baseline ISA's peak, which is lower than the kernels BLAS picks at run time). */
#define _POSIX_C_SOURCE 199309L
#include <omp.h>
#include <stdio.h>

#include "bench_clock.h"

/* 64-byte vectors: one AVX-512 register, or two AVX2 ones, whichever the target has. */
typedef float vf __attribute__((vector_size(64)));
enum { LANES = 16, CHAINS = 12, ROUNDS = 5 };
#define ITERS 20000000L

/* CHAINS independent multiply-add chains cover the latency of two FMA pipes; each starts
 * from its own value so that the compiler cannot merge them. */
static float chains(float seed) {
    vf acc[CHAINS];
    for (int c = 0; c < CHAINS; c++)
        for (int l = 0; l < LANES; l++) acc[c][l] = seed + (float)c + 0.01f * (float)l;
    const vf m = (vf){0} + 0.999999f, a = (vf){0} + 1e-7f;
    for (long i = 0; i < ITERS; i++) {
#pragma GCC unroll 16
        for (int c = 0; c < CHAINS; c++) acc[c] = acc[c] * m + a;
    }
    float s = 0;
    for (int c = 0; c < CHAINS; c++)
        for (int l = 0; l < LANES; l++) s += acc[c][l];
    return s;
}

int main(void) {
    volatile float seed = 1.0f; /* not a constant: the loop must run */
    const double flop = 2.0 * LANES * CHAINS * (double)ITERS;
    double best1 = 0, best_all = 0, sink = 0;
    int team = 1;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        sink += chains(seed);
        double g = flop / (now() - t0) / 1e9;
        if (g > best1) best1 = g;
        t0 = now();
#pragma omp parallel reduction(+ : sink)
        {
            sink += chains(seed);
#pragma omp single
            team = omp_get_num_threads();
        }
        g = team * flop / (now() - t0) / 1e9;
        if (g > best_all) best_all = g;
    }
    printf("fma_peak_1 %.4g\nfma_peak_all %.4g\nfma_threads %d\n", best1, best_all, team);
    return sink == 0.12345 ? 1 : 0; /* uses sink; never true */
}

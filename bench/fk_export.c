/* fk_export.c: times fk_vjp, bench/fk_chain.ad's 7-joint cost at batch 1 exported by
 * export_c (bench/export_rows.sh writes fk.c and fk.h, then builds this with cc -O2).
 * Usage: fk_export            prints the gradient and "fk_b1_export SECONDS" (median per call
 *                             over 7 batches), as bench/fk_adolc.cpp prints its row
 *        fk_export b1 CALLS   calls fk_vjp CALLS times only, for callgrind */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "fk.h"

#define J 7
#define REPS 20000

/* the caller's scratch, as a controller would hold it: static, aligned as a double */
static double work[FK_WORK_BYTES / sizeof(double) + 1];

int main(int argc, char **argv) {
    double q[J], g[J], cost, one = 1.0;
    /* q[j] = sin(1 + j): fk_chain.ad's q_of(1) and fk_adolc.cpp's q_of(0, j) */
    for (int j = 0; j < J; j++) q[j] = sin(1.0 + (double)j);
    if (argc > 2) {
        long calls = atol(argv[2]);
        fk_vjp(q, &one, g, work);
        for (long i = 0; i < calls; i++) fk_vjp(q, &one, g, work);
        return g[0] == g[0] ? 0 : 1;
    }
    fk(q, &cost, work);
    fk_vjp(q, &one, g, work);
    printf("fk_b1_cost_export %.17g\nfk_b1_grad_export [", cost);
    for (int j = 0; j < J; j++) printf("%s\"%.17g\"", j ? ", " : "", g[j]);
    printf("]\n");
    double ts[7];
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        for (int i = 0; i < REPS; i++) fk_vjp(q, &one, g, work);
        ts[r] = (now() - t0) / REPS;
    }
    for (int a = 1; a < 7; a++)
        for (int b = a; b > 0 && ts[b - 1] > ts[b]; b--) { double t = ts[b]; ts[b] = ts[b - 1]; ts[b - 1] = t; }
    printf("fk_b1_export %.9g\nfk_export_work_bytes %d\n", ts[3], (int)FK_WORK_BYTES);
    return 0;
}

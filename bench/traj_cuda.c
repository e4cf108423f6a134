/* traj_cuda.c: times one fused forward+backward trajectory step on the
 * GPU (H=32, d=7, b in {16, 1000, 10000}) and its achieved memory bandwidth. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "traj_cuda.h"

#define CK(call)                                                                              \
    do {                                                                                      \
        int rc_ = (int)(call);                                                                \
        if (rc_) {                                                                            \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                     \
                    addsl_cuda_error_string(rc_));                                            \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

enum { ST_ACC, ST_JERK, ST_CENTRAL, ST_BACKWARD };
static const char *const NAME[] = {"acc", "jerk", "pos_central", "pos_backward"};

typedef struct bench {
    int step, f64, use_sidx;
    int64_t b, H, d, A;
    void *x[16]; /* u p0 v0 a0 | pos vel acc jerk | gp gv ga gj | gu gsp gsv gsa */
    void *dt;
    int64_t *sidx;
    cudaStream_t st;
} bench;

static void fill(void *dev, size_t n, int f64, uint64_t *s) {
    size_t es = f64 ? 8 : 4;
    void *h = malloc(n * es);
    if (!h) exit(1);
    for (size_t i = 0; i < n; i++) {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        double x = (double)(*s >> 11) * 0x1.0p-53 * 2 - 1;
        if (f64) ((double *)h)[i] = x;
        else ((float *)h)[i] = (float)x;
    }
    CK(cudaMemcpy(dev, h, n * es, cudaMemcpyHostToDevice));
    free(h);
}

/* One forward then one backward, enqueued on the bench's stream. */
static int step(bench *B) {
    void **x = B->x;
    const int64_t b = B->b, H = B->H, d = B->d;
    const int64_t *si = B->use_sidx ? B->sidx : NULL;
    int rc;
    if (B->f64) return 1; /* the figures asked for are float32 */
    switch (B->step) {
    case ST_ACC:
        rc = addsl_cuda_traj_acc_fwd_f32(x[0], x[1], x[2], x[3], si, B->dt, 0, b, H, d, x[4], x[5], x[6], x[7], B->st);
        return rc ? rc : addsl_cuda_traj_acc_bwd_f32(x[8], x[9], x[10], x[11], si, B->dt, 0, b, b, H, d, x[12], x[13], x[14], x[15], B->st);
    case ST_JERK:
        rc = addsl_cuda_traj_jerk_fwd_f32(x[0], x[1], x[2], x[3], si, B->dt, 0, b, H, d, x[4], x[5], x[6], x[7], B->st);
        return rc ? rc : addsl_cuda_traj_jerk_bwd_f32(x[8], x[9], x[10], x[11], si, B->dt, 0, b, b, H, d, x[12], x[13], x[14], x[15], B->st);
    default: {
        int cen = B->step == ST_CENTRAL;
        rc = addsl_cuda_traj_pos_fwd_f32(x[0], x[1], x[2], x[3], si, 0.02f, cen, b, H, d, x[4], x[5], x[6], x[7], B->st);
        return rc ? rc : addsl_cuda_traj_pos_bwd_f32(x[8], x[9], x[10], x[11], si, 0.02f, cen, b, b, H, d, x[12], x[13], x[14], x[15], B->st);
    }
    }
}

/* The fewest bytes a fused forward+backward must move: each input read once,
 * each output written once. */
static double min_bytes(const bench *B) {
    const double n = (double)(B->b * B->H * B->d), nu = (double)(B->b * B->A * B->d),
                 ns = (double)(B->b * B->d), es = B->f64 ? 8 : 4;
    double fwd = nu + 3 * ns + 4 * n + (B->step <= ST_JERK ? (double)B->H : 0);
    double bwd = 4 * n + nu + 3 * ns;
    return (fwd + bwd) * es + (B->use_sidx ? 2.0 * 8 * (double)B->b : 0);
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median over 'rounds' of the mean time of 'reps' steps, in microseconds;
 * graph: the step is captured once and replayed (no launch gaps). */
static float time_steps(bench *B, int graph, int reps, int rounds) {
    cudaEvent_t e0, e1;
    cudaGraphExec_t ge = NULL;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    if (graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(B->st, cudaStreamCaptureModeThreadLocal));
        for (int r = 0; r < reps; r++) CK(step(B));
        CK(cudaStreamEndCapture(B->st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        CK(cudaGraphDestroy(g));
    }
    float ts[64];
    for (int k = -2; k < rounds; k++) { /* two warm-up rounds */
        CK(cudaEventRecord(e0, B->st));
        if (graph) CK(cudaGraphLaunch(ge, B->st));
        else
            for (int r = 0; r < reps; r++) CK(step(B));
        CK(cudaEventRecord(e1, B->st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (k >= 0) ts[k] = ms * 1000 / reps;
    }
    if (ge) CK(cudaGraphExecDestroy(ge));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    qsort(ts, (size_t)rounds, sizeof ts[0], cmp_f);
    return ts[rounds / 2];
}

/* Device-to-device copy of 'bytes': the bandwidth ceiling, counting read + write. */
static double copy_ceiling(size_t bytes) {
    void *a, *b;
    cudaEvent_t e0, e1;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 1, bytes));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int k = 0; k < 12; k++) {
        CK(cudaEventRecord(e0, 0));
        CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
        CK(cudaEventRecord(e1, 0));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (k >= 2 && ms < best) best = ms;
    }
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return 2.0 * (double)bytes / (best * 1e-3);
}

int main(int argc, char **argv) {
    if (addsl_cuda_device_count() <= 0) {
        printf("no CUDA device: nothing to time\n");
        return 77;
    }
    int use_sidx = argc > 1 && !strcmp(argv[1], "--start-idx");
    char name[256];
    CK(addsl_cuda_device_name(name, sizeof name));
    const double ceil_bw = copy_ceiling((size_t)1 << 30);
    printf("device: %s; copy ceiling %.0f GB/s (1 GiB device-to-device, read + write)\n", name,
           ceil_bw / 1e9);
    printf("float32, H=32, d=7, per-step dt for acc/jerk, start_idx %s; us per fused fwd+bwd "
           "(median of 15 rounds)\n",
           use_sidx ? "given (repeated rows, atomics)" : "none");
    printf("%-13s %6s %10s %10s %10s %9s %8s\n", "step", "b", "launch_us", "graph_us", "MB_moved",
           "GB/s", "of_copy");
    static const int64_t BS[] = {16, 1000, 10000};
    uint64_t seed = 42;
    for (int s = 0; s < 4; s++)
        for (int bi = 0; bi < 3; bi++) {
            bench B;
            memset(&B, 0, sizeof B);
            B.step = s, B.f64 = 0, B.use_sidx = use_sidx;
            B.b = BS[bi], B.H = 32, B.d = 7, B.A = s == ST_CENTRAL ? B.H - 4 : B.H;
            const size_t n = (size_t)(B.b * B.H * B.d), nu = (size_t)(B.b * B.A * B.d),
                         ns = (size_t)(B.b * B.d);
            const size_t sz[16] = {nu, ns, ns, ns, n, n, n, n, n, n, n, n, nu, ns, ns, ns};
            for (int k = 0; k < 16; k++) {
                CK(cudaMalloc(&B.x[k], sz[k] * 4));
                if (k < 4 || (k >= 8 && k < 12)) fill(B.x[k], sz[k], 0, &seed);
            }
            CK(cudaMalloc(&B.dt, (size_t)B.H * 4));
            float hdt[32]; /* varied steps, as a per-step dt would be */
            for (int h = 0; h < 32; h++) hdt[h] = 0.02f + 0.001f * (float)h;
            CK(cudaMemcpy(B.dt, hdt, sizeof hdt, cudaMemcpyHostToDevice));
            int64_t *hs = malloc((size_t)B.b * sizeof *hs);
            if (!hs) return 1;
            for (int64_t i = 0; i < B.b; i++) hs[i] = (i * 7) % B.b / 2; /* repeated rows */
            CK(cudaMalloc((void **)&B.sidx, (size_t)B.b * sizeof *hs));
            CK(cudaMemcpy(B.sidx, hs, (size_t)B.b * sizeof *hs, cudaMemcpyHostToDevice));
            free(hs);
            CK(cudaStreamCreateWithFlags(&B.st, cudaStreamNonBlocking));
            const int reps = 50;
            float tl = time_steps(&B, 0, reps, 15), tg = time_steps(&B, 1, reps, 15);
            const double mb = min_bytes(&B), t = (tg < tl ? tg : tl) * 1e-6;
            printf("%-13s %6lld %10.2f %10.2f %10.2f %9.0f %7.0f%%\n", NAME[s], (long long)B.b,
                   tl, tg, mb / 1e6, mb / t / 1e9, 100 * mb / t / ceil_bw);
            for (int k = 0; k < 16; k++) CK(cudaFree(B.x[k]));
            CK(cudaFree(B.dt));
            CK(cudaFree(B.sidx));
            CK(cudaStreamDestroy(B.st));
        }
    printf("GB/s: the fewest bytes a fused fwd+bwd must move (inputs read once, outputs written "
           "once) over the faster of the two times\n");
    return 0;
}

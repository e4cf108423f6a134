// traj_kernels.cu: CUDA kernels of the trajectory steps (acceleration, jerk,
// position clique) and their exact adjoints, mirroring builtins/kernels/traj.c.
//
// Recurrences (acc, jerk) run one thread per (trajectory, dof) down the
// horizon, so H is unbounded and nothing is held per step; the clique steps
// run one thread per output (or action) element, dof fastest, so a warp reads
// and writes consecutive addresses. The arithmetic follows the CPU kernels
// term by term, so the two differ only by rounding (and contraction to FMA).
#include <cuda_runtime.h>
#include <stdint.h>

#include "traj_cuda.h"

namespace {

// Recurrence launches have only b*d threads: small blocks spread them over
// more multiprocessors.
const int REC_THREADS = 64;
const int EW_THREADS = 256;
const int64_t MAX_BLOCKS = (int64_t)1 << 30;

int grid_for(int64_t n, int threads) {
    int64_t g = (n + threads - 1) / threads;
    return (int)(g > MAX_BLOCKS ? MAX_BLOCKS : (g < 1 ? 1 : g));
}

// Stencil weights, already scaled by powers of 1/dt: [pos, vel, acc, jerk][tap].
// Central: tap t reads P_{h+t}; backward: tap o reads Q_{h-o} (4 taps).
template <typename T> struct Stencil {
    T w[4][5];
};

const double CEN[4][5] = {{0, 0, 1, 0, 0},
                          {1.0 / 12, -2.0 / 3, 0, 2.0 / 3, -1.0 / 12},
                          {-1.0 / 12, 4.0 / 3, -5.0 / 2, 4.0 / 3, -1.0 / 12},
                          {-0.5, 1, 0, -1, 0.5}};
const double BWD[4][5] = {{1, 0, 0, 0, 0}, {1, -1, 0, 0, 0}, {1, -2, 1, 0, 0}, {1, -3, 3, -1, 0}};

// Same rounding as the CPU's stencil_init: weight (in T) times iota^q (in T).
template <typename T> Stencil<T> make_stencil(int central, T dt) {
    const T i1 = (T)1 / dt, i2 = i1 * i1, i3 = i2 * i1;
    const T sc[4] = {(T)1, i1, i2, i3};
    Stencil<T> s;
    for (int q = 0; q < 4; q++)
        for (int t = 0; t < 5; t++) {
            T w = (T)(central ? CEN[q][t] : BWD[q][t]);
            s.w[q][t] = q == 0 ? w : w * sc[q];
        }
    return s;
}

template <typename T> __device__ __forceinline__ T step_len(const T *dt, T dts, int64_t h) {
    return dt ? dt[h] : dts;
}

// Start gradients of trajectory i: a plain store without start_idx, else an
// atomic sum into the shared row (the rows were zeroed by the launcher).
template <typename T>
__device__ __forceinline__ void put_start(const int64_t *sidx, int64_t i, int64_t d, int64_t k,
                                          T gp0, T gv0, T ga0, T *gsp, T *gsv, T *gsa) {
    if (sidx) {
        int64_t r = sidx[i] * d + k;
        atomicAdd(gsp + r, gp0);
        atomicAdd(gsv + r, gv0);
        atomicAdd(gsa + r, ga0);
    } else {
        int64_t r = i * d + k;
        gsp[r] = gp0;
        gsv[r] = gv0;
        gsa[r] = ga0;
    }
}

#define GRID_STRIDE(t, n)                                                                 \
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < (n);            \
         t += (int64_t)gridDim.x * blockDim.x)

// The recurrences load CH steps ahead into registers before using them, so
// each thread keeps CH loads in flight instead of one (the chain through p, v
// and a is short; memory latency is what bounds a lone thread).
const int CH = 8;

// ---- acceleration step --------------------------------------------------------

template <typename T> struct AccState {
    T p, v, a;
    // a_h = u_{h-1}; returns j_h
    __device__ __forceinline__ T advance(T an, T st) {
        const T j = (an - a) / st;
        v = v + an * st;
        p = p + v * st;
        a = an;
        return j;
    }
};

template <typename T>
__global__ void acc_fwd(const T *__restrict__ u, const T *__restrict__ p0,
                        const T *__restrict__ v0, const T *__restrict__ a0,
                        const int64_t *__restrict__ sidx, const T *__restrict__ dt, T dts,
                        int64_t b, int64_t H, int64_t d, T *__restrict__ pos,
                        T *__restrict__ vel, T *__restrict__ acc, T *__restrict__ jerk) {
    GRID_STRIDE(t, b * d) {
        const int64_t i = t / d, k = t - i * d, s = (sidx ? sidx[i] : i) * d + k;
        AccState<T> z = {p0[s], v0[s], a0[s]};
        int64_t o = i * H * d + k;
        pos[o] = z.p, vel[o] = z.v, acc[o] = z.a, jerk[o] = 0;
        const T *ur = u + o - d; // ur[h*d] = u_{h-1}
        int64_t h = 1;
        for (; h + CH <= H; h += CH) {
            T x[CH], st[CH];
#pragma unroll
            for (int q = 0; q < CH; q++) x[q] = ur[(h + q) * d], st[q] = step_len(dt, dts, h + q);
#pragma unroll
            for (int q = 0; q < CH; q++) {
                const T j = z.advance(x[q], st[q]);
                o += d;
                pos[o] = z.p, vel[o] = z.v, acc[o] = z.a, jerk[o] = j;
            }
        }
        for (; h < H; h++) {
            const T j = z.advance(ur[h * d], step_len(dt, dts, h));
            o += d;
            pos[o] = z.p, vel[o] = z.v, acc[o] = z.a, jerk[o] = j;
        }
    }
}

// Reverse sweep: P, V are the running adjoints of p_h, v_h; a_h = u_{h-1}
// feeds v_h, j_h and j_{h+1} (gjn / tn: the term of j_{h+1}).
template <typename T> struct AccAdj {
    T P, V, gjn, tn;
    __device__ __forceinline__ T back(T gp, T gv, T ga, T gj, T st) {
        P = P + gp;
        V = V + gv + P * st;
        const T g = ga + gj / st - gjn / tn + V * st;
        gjn = gj, tn = st;
        return g;
    }
};

template <typename T>
__global__ void acc_bwd(const T *__restrict__ gp, const T *__restrict__ gv,
                        const T *__restrict__ ga, const T *__restrict__ gj,
                        const int64_t *__restrict__ sidx, const T *__restrict__ dt, T dts,
                        int64_t b, int64_t H, int64_t d, T *__restrict__ gu, T *__restrict__ gsp,
                        T *__restrict__ gsv, T *__restrict__ gsa) {
    GRID_STRIDE(t, b * d) {
        const int64_t i = t / d, k = t - i * d, base = i * H * d + k;
        AccAdj<T> z = {0, 0, 0, 1};
        gu[base + (H - 1) * d] = 0;
        int64_t h = H - 1;
        for (; h - CH >= 0; h -= CH) {
            T xp[CH], xv[CH], xa[CH], xj[CH], st[CH];
#pragma unroll
            for (int q = 0; q < CH; q++) {
                const int64_t e = base + (h - q) * d;
                xp[q] = gp[e], xv[q] = gv[e], xa[q] = ga[e], xj[q] = gj[e];
                st[q] = step_len(dt, dts, h - q);
            }
#pragma unroll
            for (int q = 0; q < CH; q++)
                gu[base + (h - q - 1) * d] = z.back(xp[q], xv[q], xa[q], xj[q], st[q]);
        }
        for (; h >= 1; h--) {
            const int64_t e = base + h * d;
            gu[e - d] = z.back(gp[e], gv[e], ga[e], gj[e], step_len(dt, dts, h));
        }
        // gjn / tn is gj_1 / dt_1 now (0 / 1 when H == 1)
        put_start(sidx, i, d, k, z.P + gp[base], z.V + gv[base], ga[base] - z.gjn / z.tn, gsp,
                  gsv, gsa);
    }
}

// ---- jerk step ----------------------------------------------------------------

template <typename T> struct JerkState {
    T p, v, a;
    __device__ __forceinline__ void advance(T j, T st) {
        a = a + j * st;
        v = v + a * st;
        p = p + v * st;
    }
};

template <typename T>
__global__ void jerk_fwd(const T *__restrict__ u, const T *__restrict__ p0,
                         const T *__restrict__ v0, const T *__restrict__ a0,
                         const int64_t *__restrict__ sidx, const T *__restrict__ dt, T dts,
                         int64_t b, int64_t H, int64_t d, T *__restrict__ pos,
                         T *__restrict__ vel, T *__restrict__ acc, T *__restrict__ jerk) {
    GRID_STRIDE(t, b * d) {
        const int64_t i = t / d, k = t - i * d, s = (sidx ? sidx[i] : i) * d + k;
        JerkState<T> z = {p0[s], v0[s], a0[s]};
        int64_t o = i * H * d + k;
        pos[o] = z.p, vel[o] = z.v, acc[o] = z.a, jerk[o] = 0;
        const T *ur = u + o - d;
        int64_t h = 1;
        for (; h + CH <= H; h += CH) {
            T x[CH], st[CH];
#pragma unroll
            for (int q = 0; q < CH; q++) x[q] = ur[(h + q) * d], st[q] = step_len(dt, dts, h + q);
#pragma unroll
            for (int q = 0; q < CH; q++) {
                z.advance(x[q], st[q]);
                o += d;
                pos[o] = z.p, vel[o] = z.v, acc[o] = z.a, jerk[o] = x[q];
            }
        }
        for (; h < H; h++) {
            const T j = ur[h * d];
            z.advance(j, step_len(dt, dts, h));
            o += d;
            pos[o] = z.p, vel[o] = z.v, acc[o] = z.a, jerk[o] = j;
        }
    }
}

template <typename T> struct JerkAdj {
    T P, V, A;
    __device__ __forceinline__ T back(T gp, T gv, T ga, T gj, T st) {
        P = P + gp;
        V = V + gv + P * st;
        A = A + ga + V * st;
        return gj + A * st;
    }
};

template <typename T>
__global__ void jerk_bwd(const T *__restrict__ gp, const T *__restrict__ gv,
                         const T *__restrict__ ga, const T *__restrict__ gj,
                         const int64_t *__restrict__ sidx, const T *__restrict__ dt, T dts,
                         int64_t b, int64_t H, int64_t d, T *__restrict__ gu,
                         T *__restrict__ gsp, T *__restrict__ gsv, T *__restrict__ gsa) {
    GRID_STRIDE(t, b * d) {
        const int64_t i = t / d, k = t - i * d, base = i * H * d + k;
        JerkAdj<T> z = {0, 0, 0};
        gu[base + (H - 1) * d] = 0;
        int64_t h = H - 1;
        for (; h - CH >= 0; h -= CH) {
            T xp[CH], xv[CH], xa[CH], xj[CH], st[CH];
#pragma unroll
            for (int q = 0; q < CH; q++) {
                const int64_t e = base + (h - q) * d;
                xp[q] = gp[e], xv[q] = gv[e], xa[q] = ga[e], xj[q] = gj[e];
                st[q] = step_len(dt, dts, h - q);
            }
#pragma unroll
            for (int q = 0; q < CH; q++)
                gu[base + (h - q - 1) * d] = z.back(xp[q], xv[q], xa[q], xj[q], st[q]);
        }
        for (; h >= 1; h--) {
            const int64_t e = base + h * d;
            gu[e - d] = z.back(gp[e], gv[e], ga[e], gj[e], step_len(dt, dts, h));
        }
        put_start(sidx, i, d, k, z.P + gp[base], z.V + gv[base], z.A + ga[base], gsp, gsv, gsa);
    }
}

// ---- position clique ----------------------------------------------------------

// Padded sample m of the central sequence for one dof: start padding below 4,
// then the actions (ub[r*d] = u_r), the last one held.
template <typename T>
__device__ __forceinline__ T central_sample(int64_t m, const T *ub, int64_t A, int64_t d, T p, T v,
                                            T a, T dt) {
    if (m >= 4) return ub[(m - 4 < A ? m - 4 : A - 1) * d];
    const T dd = dt * dt;
    switch (m) {
    case 0: return p - (T)3 * dt * v - (T)1.5 * dd * a;
    case 1: return p - (T)2 * dt * v - (T)2 * dd * a;
    case 2: return p - dt * v - (T)1.5 * dd * a;
    default: return p;
    }
}

// Padded sample m >= -2 of the backward-difference sequence: Q_m = u_{m-1}.
template <typename T>
__device__ __forceinline__ T backward_sample(int64_t m, const T *ub, int64_t d, T p, T v, T a,
                                             T dt) {
    if (m >= 1) return ub[(m - 1) * d];
    if (m == 0) return p;
    const T vb = v - a * dt / (T)2;
    return m == -1 ? p - dt * vb : p - (T)2 * dt * vb;
}

template <typename T>
__global__ void pos_fwd(const T *__restrict__ u, const T *__restrict__ p0,
                        const T *__restrict__ v0, const T *__restrict__ a0,
                        const int64_t *__restrict__ sidx, T dt, const Stencil<T> s, int central,
                        int64_t b, int64_t H, int64_t d, T *__restrict__ pos,
                        T *__restrict__ vel, T *__restrict__ acc, T *__restrict__ jerk) {
    const int64_t A = central ? H - 4 : H;
    GRID_STRIDE(e, b * H * d) {
        const int64_t r = e / d, k = e - r * d, i = r / H, h = r - i * H;
        const T *ub = u + i * A * d + k;
        T x[5];
        if (central) {
            if (h >= 4 && h <= H - 5) {
#pragma unroll
                for (int q = 0; q < 5; q++) x[q] = ub[(h - 4 + q) * d];
            } else {
                const int64_t st = (sidx ? sidx[i] : i) * d + k;
                const T p = p0[st], v = v0[st], a = a0[st];
#pragma unroll
                for (int q = 0; q < 5; q++) x[q] = central_sample(h + q, ub, A, d, p, v, a, dt);
            }
        } else {
            if (h >= 4) {
#pragma unroll
                for (int q = 0; q < 4; q++) x[q] = ub[(h - 1 - q) * d];
            } else {
                const int64_t st = (sidx ? sidx[i] : i) * d + k;
                const T p = p0[st], v = v0[st], a = a0[st];
                if (h == 0) { // the start state itself
                    pos[e] = p, vel[e] = v, acc[e] = a, jerk[e] = 0;
                    continue;
                }
#pragma unroll
                for (int q = 0; q < 4; q++) x[q] = backward_sample(h - q, ub, d, p, v, a, dt);
            }
            x[4] = 0;
        }
        T o[4] = {0, 0, 0, 0};
        const int taps = central ? 5 : 4;
#pragma unroll
        for (int q = 0; q < 5; q++)
            if (q < taps)
#pragma unroll
                for (int c = 0; c < 4; c++) o[c] += s.w[c][q] * x[q];
        pos[e] = o[0], vel[e] = o[1], acc[e] = o[2], jerk[e] = o[3];
    }
}

// Weighted sum of the four output gradients at row h (element offset gb + h*d).
template <typename T>
__device__ __forceinline__ T tap_adjoint(const Stencil<T> &s, int q, const T *gp, const T *gv,
                                         const T *ga, const T *gj, int64_t e) {
    return s.w[0][q] * gp[e] + s.w[1][q] * gv[e] + s.w[2][q] * ga[e] + s.w[3][q] * gj[e];
}

// Adjoint of padded sample m: central, sample m feeds rows h = m - q (0 <= h < H);
// backward, rows h = m + q (1 <= h < H).
template <typename T>
__device__ __forceinline__ T sample_adjoint(const Stencil<T> &s, int central, int64_t m,
                                            const T *gp, const T *gv, const T *ga, const T *gj,
                                            int64_t gb, int64_t H, int64_t d) {
    T acc = 0;
#pragma unroll
    for (int q = 0; q < 5; q++) {
        if (!central && q == 4) break;
        const int64_t h = central ? m - q : m + q;
        if (h >= (central ? 0 : 1) && h < H) acc += tap_adjoint(s, q, gp, gv, ga, gj, gb + h * d);
    }
    return acc;
}

// One thread per action element (i, a, k); the threads of a == 0 also write
// the start gradients of (i, k) through the padding formulas.
template <typename T>
__global__ void pos_bwd(const T *__restrict__ gp, const T *__restrict__ gv,
                        const T *__restrict__ ga, const T *__restrict__ gj,
                        const int64_t *__restrict__ sidx, T dt, const Stencil<T> s, int central,
                        int64_t b, int64_t H, int64_t d, T *__restrict__ gu,
                        T *__restrict__ gsp, T *__restrict__ gsv, T *__restrict__ gsa) {
    const int64_t A = central ? H - 4 : H;
    GRID_STRIDE(e, b * A * d) {
        const int64_t r = e / d, k = e - r * d, i = r / A, a = r - i * A, gb = i * H * d + k;
        T g = 0;
        if (central) {
            if (a < A - 1) {
                const int64_t m = a + 4; // rows m-4 .. m, all inside
#pragma unroll
                for (int q = 0; q < 5; q++) g += tap_adjoint(s, q, gp, gv, ga, gj, gb + (m - q) * d);
            } else { // the last action is held over P_{H-1} .. P_{H+3}
                for (int64_t m = H - 1; m <= H + 3; m++)
                    g += sample_adjoint(s, 1, m, gp, gv, ga, gj, gb, H, d);
            }
        } else if (a < H - 1) {
            g = sample_adjoint(s, 0, a + 1, gp, gv, ga, gj, gb, H, d);
        }
        gu[e] = g;
        if (a != 0) continue;
        T sp, sv, sa;
        if (central) {
            const T b0 = sample_adjoint(s, 1, 0, gp, gv, ga, gj, gb, H, d);
            const T b1 = sample_adjoint(s, 1, 1, gp, gv, ga, gj, gb, H, d);
            const T b2 = sample_adjoint(s, 1, 2, gp, gv, ga, gj, gb, H, d);
            const T b3 = sample_adjoint(s, 1, 3, gp, gv, ga, gj, gb, H, d);
            sp = b0 + b1 + b2 + b3;
            sv = -dt * ((T)3 * b0 + (T)2 * b1 + b2);
            sa = -(dt * dt) * ((T)1.5 * b0 + (T)2 * b1 + (T)1.5 * b2);
        } else {
            const T qm2 = sample_adjoint(s, 0, -2, gp, gv, ga, gj, gb, H, d);
            const T qm1 = sample_adjoint(s, 0, -1, gp, gv, ga, gj, gb, H, d);
            const T q0 = sample_adjoint(s, 0, 0, gp, gv, ga, gj, gb, H, d);
            const T vb = -dt * qm1 - (T)2 * dt * qm2;
            sp = gp[gb] + q0 + qm1 + qm2;
            sv = gv[gb] + vb;
            sa = ga[gb] - dt / (T)2 * vb;
        }
        put_start(sidx, i, d, k, sp, sv, sa, gsp, gsv, gsa);
    }
}

// ---- launchers ----------------------------------------------------------------

int launched() { return (int)cudaGetLastError(); }

template <typename T>
int zero_start(const int64_t *sidx, int64_t B0, int64_t d, T *gsp, T *gsv, T *gsa,
               cudaStream_t st) {
    if (!sidx) return 0;
    const size_t n = (size_t)(B0 * d) * sizeof(T);
    T *rows[3] = {gsp, gsv, gsa};
    for (int c = 0; c < 3; c++) {
        cudaError_t rc = cudaMemsetAsync(rows[c], 0, n, st);
        if (rc != cudaSuccess) return (int)rc;
    }
    return 0;
}

template <typename T>
int rec_fwd(int jerk_step, const T *u, const T *p0, const T *v0, const T *a0, const int64_t *sidx,
            const T *dt, T dts, int64_t b, int64_t H, int64_t d, T *pos, T *vel, T *acc, T *jerk,
            void *stream) {
    if (b <= 0 || H <= 0 || d <= 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    const int g = grid_for(b * d, REC_THREADS);
    if (jerk_step)
        jerk_fwd<T><<<g, REC_THREADS, 0, st>>>(u, p0, v0, a0, sidx, dt, dts, b, H, d, pos, vel, acc, jerk);
    else
        acc_fwd<T><<<g, REC_THREADS, 0, st>>>(u, p0, v0, a0, sidx, dt, dts, b, H, d, pos, vel, acc, jerk);
    return launched();
}

template <typename T>
int rec_bwd(int jerk_step, const T *gp, const T *gv, const T *ga, const T *gj, const int64_t *sidx,
            const T *dt, T dts, int64_t b, int64_t B0, int64_t H, int64_t d, T *gu, T *gsp,
            T *gsv, T *gsa, void *stream) {
    cudaStream_t st = (cudaStream_t)stream;
    int rc = zero_start(sidx, B0, d, gsp, gsv, gsa, st);
    if (rc || b <= 0 || H <= 0 || d <= 0) return rc;
    const int g = grid_for(b * d, REC_THREADS);
    if (jerk_step)
        jerk_bwd<T><<<g, REC_THREADS, 0, st>>>(gp, gv, ga, gj, sidx, dt, dts, b, H, d, gu, gsp, gsv, gsa);
    else
        acc_bwd<T><<<g, REC_THREADS, 0, st>>>(gp, gv, ga, gj, sidx, dt, dts, b, H, d, gu, gsp, gsv, gsa);
    return launched();
}

template <typename T>
int clique_fwd(const T *u, const T *p0, const T *v0, const T *a0, const int64_t *sidx, T dt,
               int central, int64_t b, int64_t H, int64_t d, T *pos, T *vel, T *acc, T *jerk,
               void *stream) {
    if (H < (central ? 8 : 4)) return (int)cudaErrorInvalidValue;
    if (b <= 0 || d <= 0) return 0;
    const int g = grid_for(b * H * d, EW_THREADS);
    pos_fwd<T><<<g, EW_THREADS, 0, (cudaStream_t)stream>>>(
        u, p0, v0, a0, sidx, dt, make_stencil<T>(central, dt), central, b, H, d, pos, vel, acc, jerk);
    return launched();
}

template <typename T>
int clique_bwd(const T *gp, const T *gv, const T *ga, const T *gj, const int64_t *sidx, T dt,
               int central, int64_t b, int64_t B0, int64_t H, int64_t d, T *gu, T *gsp, T *gsv,
               T *gsa, void *stream) {
    if (H < (central ? 8 : 4)) return (int)cudaErrorInvalidValue;
    cudaStream_t st = (cudaStream_t)stream;
    int rc = zero_start(sidx, B0, d, gsp, gsv, gsa, st);
    if (rc || b <= 0 || d <= 0) return rc;
    const int64_t A = central ? H - 4 : H;
    const int g = grid_for(b * A * d, EW_THREADS);
    pos_bwd<T><<<g, EW_THREADS, 0, st>>>(gp, gv, ga, gj, sidx, dt, make_stencil<T>(central, dt),
                                         central, b, H, d, gu, gsp, gsv, gsa);
    return launched();
}

} // namespace

// ---- C entry points -------------------------------------------------------------

#define REC_ENTRIES(NAME, JERK, T, SFX)                                                        \
    extern "C" int addsl_cuda_traj_##NAME##_fwd_##SFX(                                         \
        const T *u, const T *p0, const T *v0, const T *a0, const int64_t *sidx, const T *dt,   \
        T dts, int64_t b, int64_t H, int64_t d, T *pos, T *vel, T *acc, T *jerk, void *st) {   \
        return rec_fwd<T>(JERK, u, p0, v0, a0, sidx, dt, dts, b, H, d, pos, vel, acc, jerk,   \
                          st);                                                                 \
    }                                                                                          \
    extern "C" int addsl_cuda_traj_##NAME##_bwd_##SFX(                                         \
        const T *gp, const T *gv, const T *ga, const T *gj, const int64_t *sidx, const T *dt,  \
        T dts, int64_t b, int64_t B0, int64_t H, int64_t d, T *gu, T *gsp, T *gsv, T *gsa,     \
        void *st) {                                                                            \
        return rec_bwd<T>(JERK, gp, gv, ga, gj, sidx, dt, dts, b, B0, H, d, gu, gsp, gsv, gsa, \
                          st);                                                                 \
    }

REC_ENTRIES(acc, 0, float, f32)
REC_ENTRIES(acc, 0, double, f64)
REC_ENTRIES(jerk, 1, float, f32)
REC_ENTRIES(jerk, 1, double, f64)

#define POS_ENTRIES(T, SFX)                                                                    \
    extern "C" int addsl_cuda_traj_pos_fwd_##SFX(const T *u, const T *p0, const T *v0,          \
                                                 const T *a0, const int64_t *sidx, T dt,       \
                                                 int central, int64_t b, int64_t H, int64_t d, \
                                                 T *pos, T *vel, T *acc, T *jerk, void *st) {  \
        return clique_fwd<T>(u, p0, v0, a0, sidx, dt, central, b, H, d, pos, vel, acc, jerk,  \
                             st);                                                              \
    }                                                                                          \
    extern "C" int addsl_cuda_traj_pos_bwd_##SFX(                                              \
        const T *gp, const T *gv, const T *ga, const T *gj, const int64_t *sidx, T dt,         \
        int central, int64_t b, int64_t B0, int64_t H, int64_t d, T *gu, T *gsp, T *gsv,       \
        T *gsa, void *st) {                                                                    \
        return clique_bwd<T>(gp, gv, ga, gj, sidx, dt, central, b, B0, H, d, gu, gsp, gsv,    \
                             gsa, st);                                                         \
    }

POS_ENTRIES(float, f32)
POS_ENTRIES(double, f64)

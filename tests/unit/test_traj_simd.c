/* test_traj_simd.c: the trajectory kernels with TRAJ_SIMD as the library
 * defines it (an OpenMP simd pragma, builtins/kernels/traj.c) give the same bits as
 * with TRAJ_SIMD empty, which is how export_c writes them into generated C
 * (vm/export/lower_traj.c). An exported step is promised to be the library's step. */
#include <stdint.h>

#include "tap.h"

/* One copy of the header per type and per TRAJ_SIMD: v (simd), p (plain). */
#define TRAJ_SIMD _Pragma("omp simd")
#define TRAJ_T float
#define TRAJ_FN(n) n##_vf32
#include "../../include/addsl/traj_kernels.h"
#undef TRAJ_T
#undef TRAJ_FN
#define TRAJ_T double
#define TRAJ_FN(n) n##_vf64
#include "../../include/addsl/traj_kernels.h"
#undef TRAJ_T
#undef TRAJ_FN
#undef TRAJ_SIMD

#define TRAJ_T float
#define TRAJ_FN(n) n##_pf32
#include "../../include/addsl/traj_kernels.h"
#undef TRAJ_T
#undef TRAJ_FN
#define TRAJ_T double
#define TRAJ_FN(n) n##_pf64
#include "../../include/addsl/traj_kernels.h"
#undef TRAJ_T
#undef TRAJ_FN

/* A small LCG: the inputs only need to be varied and the same on both sides. */
static double next_unit(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

enum { MAXH = 64, MAXD = 16, MAXN = MAXH * MAXD };

/* CHECK_TYPE(T, V, P): run the vectorised (V) and plain (P) copies of every
 * step's forward and adjoint on the same inputs and compare the bytes. */
#define CHECK_TYPE(T, V, P, tname)                                                                              \
    static int check_##tname(int64_t H, int64_t d, uint64_t seed) {                                           \
        static T u[MAXN], p0[MAXD], v0[MAXD], a0[MAXD], dt[MAXH], g[4][MAXN];                                 \
        static T outv[4][MAXN], outp[4][MAXN], guv[MAXN], gup[MAXN], stv[3 * MAXD], stp[3 * MAXD];            \
        const int64_t n = H * d;                                                                              \
        for (int64_t i = 0; i < n; i++) u[i] = (T)next_unit(&seed);                                           \
        for (int64_t k = 0; k < d; k++) {                                                                     \
            p0[k] = (T)next_unit(&seed);                                                                      \
            v0[k] = (T)next_unit(&seed);                                                                      \
            a0[k] = (T)next_unit(&seed);                                                                      \
        }                                                                                                     \
        for (int64_t h = 0; h < H; h++) dt[h] = (T)(0.01 + 0.02 * (next_unit(&seed) + 1));                    \
        for (int j = 0; j < 4; j++)                                                                           \
            for (int64_t i = 0; i < n; i++) g[j][i] = (T)next_unit(&seed);                                    \
        int same = 1;                                                                                         \
        /* acceleration and jerk steps (per-row dt) */                                                        \
        for (int jerk = 0; jerk < 2; jerk++) {                                                                \
            memset(outv, 0, sizeof outv);                                                                     \
            memset(outp, 0, sizeof outp);                                                                     \
            if (jerk) {                                                                                       \
                traj_jerk_fwd_one_##V(u, p0, v0, a0, dt, H, d, outv[0], outv[1], outv[2], outv[3]);           \
                traj_jerk_fwd_one_##P(u, p0, v0, a0, dt, H, d, outp[0], outp[1], outp[2], outp[3]);           \
                traj_jerk_bwd_one_##V(g[0], g[1], g[2], g[3], dt, H, d, guv, stv);                            \
                traj_jerk_bwd_one_##P(g[0], g[1], g[2], g[3], dt, H, d, gup, stp);                            \
            } else {                                                                                          \
                traj_acc_fwd_one_##V(u, p0, v0, a0, dt, H, d, outv[0], outv[1], outv[2], outv[3]);            \
                traj_acc_fwd_one_##P(u, p0, v0, a0, dt, H, d, outp[0], outp[1], outp[2], outp[3]);            \
                traj_acc_bwd_one_##V(g[0], g[1], g[2], g[3], dt, H, d, guv, stv);                             \
                traj_acc_bwd_one_##P(g[0], g[1], g[2], g[3], dt, H, d, gup, stp);                             \
            }                                                                                                 \
            same &= !memcmp(outv, outp, sizeof outv) && !memcmp(guv, gup, (size_t)n * sizeof(T)) &&           \
                    !memcmp(stv, stp, (size_t)(3 * d) * sizeof(T));                                           \
        }                                                                                                     \
        /* position step (one dt), central and backward cliques */                                            \
        for (int central = 0; central < 2; central++) {                                                       \
            if (central && H < 5) continue;                                                                   \
            traj_stencil_##V sv;                                                                              \
            traj_stencil_##P sp;                                                                              \
            traj_stencil_init_##V(&sv, central, dt[1]);                                                       \
            traj_stencil_init_##P(&sp, central, dt[1]);                                                       \
            memset(outv, 0, sizeof outv);                                                                     \
            memset(outp, 0, sizeof outp);                                                                     \
            memset(guv, 0, sizeof guv);                                                                       \
            memset(gup, 0, sizeof gup);                                                                       \
            traj_pos_fwd_one_##V(&sv, central, u, p0, v0, a0, dt[1], H, d, outv[0], outv[1], outv[2], outv[3]); \
            traj_pos_fwd_one_##P(&sp, central, u, p0, v0, a0, dt[1], H, d, outp[0], outp[1], outp[2], outp[3]); \
            traj_pos_bwd_one_##V(&sv, central, g[0], g[1], g[2], g[3], dt[1], H, d, guv, stv);                \
            traj_pos_bwd_one_##P(&sp, central, g[0], g[1], g[2], g[3], dt[1], H, d, gup, stp);                \
            same &= !memcmp(outv, outp, sizeof outv) && !memcmp(guv, gup, sizeof guv) &&                      \
                    !memcmp(stv, stp, (size_t)(3 * d) * sizeof(T));                                           \
        }                                                                                                     \
        return same;                                                                                          \
    }

CHECK_TYPE(float, vf32, pf32, f32)
CHECK_TYPE(double, vf64, pf64, f64)

int main(void) {
    static const int64_t Hs[] = {2, 5, 9, 33, 64};
    static const int64_t ds[] = {1, 3, 7, 16};
    const int nh = (int)(sizeof Hs / sizeof Hs[0]), nd = (int)(sizeof ds / sizeof ds[0]);
    plan(2 * nh * nd);
    uint64_t seed = 12345;
    for (int i = 0; i < nh; i++)
        for (int j = 0; j < nd; j++) {
            ok(check_f32(Hs[i], ds[j], seed++), "float32 H=%lld d=%lld: simd and plain kernels agree bit for bit",
               (long long)Hs[i], (long long)ds[j]);
            ok(check_f64(Hs[i], ds[j], seed++), "float64 H=%lld d=%lld: simd and plain kernels agree bit for bit",
               (long long)Hs[i], (long long)ds[j]);
        }
    return tap_state.failed ? 1 : 0;
}

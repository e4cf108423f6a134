/* traj.c: CPU kernels of the trajectory integration steps and their exact
 * adjoints over a batch; one trajectory's step is in include/addsl/traj_kernels.h
 * (shared with the C that export_c writes). The body below TRAJ_T is
 * compiled once per float dtype. */
#ifndef TRAJ_T

#include <stddef.h>
#include <string.h>

#include "kernels/traj.h"

/* Below this many output elements per call a parallel region costs more
 * than it saves. */
#define TRAJ_OMP_MIN 32768
/* the kernels' flat loops vectorised (gcc's -O2 cost model leaves them scalar) */
#define TRAJ_SIMD _Pragma("omp simd")

#define TRAJ_T float
#define FN(n) n##_f32
#define TRAJ_FN(n) n##_f32
#include "../../include/addsl/traj_kernels.h"
#include "kernels/traj.c"
#undef TRAJ_T
#undef FN
#undef TRAJ_FN

#define TRAJ_T double
#define FN(n) n##_f64
#define TRAJ_FN(n) n##_f64
#include "../../include/addsl/traj_kernels.h"
#include "kernels/traj.c"
#undef TRAJ_T
#undef FN
#undef TRAJ_FN

#else /* the dtype-generic body */

#define T TRAJ_T

/* The batch loops of the acceleration and jerk steps, which differ only in
 * the one-trajectory kernel: TRAJ_BATCH(acc) defines ad_traj_acc_fwd and
 * ad_traj_acc_bwd over traj_acc_fwd_one and traj_acc_bwd_one. A macro, not a
 * function pointer, so each loop still calls its kernel directly. */
#define TRAJ_BATCH(step)                                                                            \
    void FN(ad_traj_##step##_fwd)(const T *u, const T *p0, const T *v0, const T *a0,                \
                                  const int64_t *sidx, const T *dt, int64_t b, int64_t H, int64_t d, \
                                  T *pos, T *vel, T *acc, T *jerk) {                                \
        const int64_t n = H * d;                                                                    \
        _Pragma("omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)")                     \
        for (int64_t i = 0; i < b; i++) {                                                           \
            int64_t s = sidx ? sidx[i] : i;                                                         \
            FN(traj_##step##_fwd_one)(u + i * n, p0 + s * d, v0 + s * d, a0 + s * d, dt, H, d,      \
                                      pos + i * n, vel + i * n, acc + i * n, jerk + i * n);         \
        }                                                                                           \
    }                                                                                               \
                                                                                                    \
    void FN(ad_traj_##step##_bwd)(const T *gp, const T *gv, const T *ga, const T *gj, const T *dt,  \
                                  int64_t b, int64_t H, int64_t d, T *gu, T *gstart) {              \
        const int64_t n = H * d;                                                                    \
        _Pragma("omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)")                     \
        for (int64_t i = 0; i < b; i++)                                                             \
            FN(traj_##step##_bwd_one)(gp + i * n, gv + i * n, ga + i * n, gj + i * n, dt, H, d,     \
                                      gu + i * n, gstart + i * 3 * d);                              \
    }

TRAJ_BATCH(acc)
TRAJ_BATCH(jerk)
#undef TRAJ_BATCH

void FN(ad_traj_pos_fwd)(const T *u, const T *p0, const T *v0, const T *a0, const int64_t *sidx,
                         T dt, int central, int64_t b, int64_t H, int64_t d, T *pos, T *vel,
                         T *acc, T *jerk) {
    FN(traj_stencil) s;
    FN(traj_stencil_init)(&s, central, dt);
    const int64_t n = H * d, nu = (central ? H - 4 : H) * d;
#pragma omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)
    for (int64_t i = 0; i < b; i++) {
        int64_t st = sidx ? sidx[i] : i;
        FN(traj_pos_fwd_one)(&s, central, u + i * nu, p0 + st * d, v0 + st * d, a0 + st * d, dt, H, d,
                             pos + i * n, vel + i * n, acc + i * n, jerk + i * n);
    }
}

void FN(ad_traj_pos_bwd)(const T *gp, const T *gv, const T *ga, const T *gj, T dt, int central,
                         int64_t b, int64_t H, int64_t d, T *gu, T *gstart) {
    FN(traj_stencil) s;
    FN(traj_stencil_init)(&s, central, dt);
    const int64_t n = H * d, nu = (central ? H - 4 : H) * d;
#pragma omp parallel for schedule(static) if (b * n >= TRAJ_OMP_MIN)
    for (int64_t i = 0; i < b; i++)
        FN(traj_pos_bwd_one)(&s, central, gp + i * n, gv + i * n, ga + i * n, gj + i * n, dt, H, d,
                             gu + i * nu, gstart + i * 3 * d);
}

void FN(ad_traj_scatter_start)(const T *gstart, const int64_t *sidx, int64_t b, int64_t B0,
                               int64_t d, T *gsp, T *gsv, T *gsa) {
    memset(gsp, 0, (size_t)(B0 * d) * sizeof(T));
    memset(gsv, 0, (size_t)(B0 * d) * sizeof(T));
    memset(gsa, 0, (size_t)(B0 * d) * sizeof(T));
    /* serial: several trajectories may share a start row */
    for (int64_t i = 0; i < b; i++) {
        int64_t s = sidx ? sidx[i] : i;
        FN(traj_add_start)(gstart + i * 3 * d, d, gsp + s * d, gsv + s * d, gsa + s * d);
    }
}

#undef T
#endif

/* traj.h: CPU kernels of the trajectory integration steps (acceleration,
 * jerk, position clique) and their exact adjoints, float32 and float64. */
#ifndef AD_TRAJ_H
#define AD_TRAJ_H

#include <stdint.h>

/* Layout (docs/trajectory.md): trajectories [b, H, d] contiguous; start
 * rows [B0, d]; 'sidx' (length b, may be NULL: row i) picks the start row of
 * trajectory i; 'dt' has H entries (dt[h] ends at output h; dt[0] unused).
 * The forward kernels fill 'pos', 'vel', 'acc', 'jerk' ([b, H, d]).
 *
 * The backward kernels take the four output gradients ([b, H, d], none NULL)
 * and write the action gradient 'gu' (shaped like u) and the per-trajectory
 * start gradients into 'gstart' ([b, 3, d]: position, velocity, acceleration);
 * traj_scatter_start then sums those rows into the [B0, d] start gradients
 * through 'sidx' (repeated rows accumulate). */

/* u [b, H, d]; a_h = u_{h-1}. */
void ad_traj_acc_fwd_f32(const float *u, const float *p0, const float *v0, const float *a0,
                         const int64_t *sidx, const float *dt, int64_t b, int64_t H, int64_t d,
                         float *pos, float *vel, float *acc, float *jerk);
void ad_traj_acc_fwd_f64(const double *u, const double *p0, const double *v0, const double *a0,
                         const int64_t *sidx, const double *dt, int64_t b, int64_t H, int64_t d,
                         double *pos, double *vel, double *acc, double *jerk);
void ad_traj_acc_bwd_f32(const float *gp, const float *gv, const float *ga, const float *gj,
                         const float *dt, int64_t b, int64_t H, int64_t d, float *gu, float *gstart);
void ad_traj_acc_bwd_f64(const double *gp, const double *gv, const double *ga, const double *gj,
                         const double *dt, int64_t b, int64_t H, int64_t d, double *gu, double *gstart);

/* u [b, H, d]; j_h = u_{h-1}. */
void ad_traj_jerk_fwd_f32(const float *u, const float *p0, const float *v0, const float *a0,
                          const int64_t *sidx, const float *dt, int64_t b, int64_t H, int64_t d,
                          float *pos, float *vel, float *acc, float *jerk);
void ad_traj_jerk_fwd_f64(const double *u, const double *p0, const double *v0, const double *a0,
                          const int64_t *sidx, const double *dt, int64_t b, int64_t H, int64_t d,
                          double *pos, double *vel, double *acc, double *jerk);
void ad_traj_jerk_bwd_f32(const float *gp, const float *gv, const float *ga, const float *gj,
                          const float *dt, int64_t b, int64_t H, int64_t d, float *gu, float *gstart);
void ad_traj_jerk_bwd_f64(const double *gp, const double *gv, const double *ga, const double *gj,
                          const double *dt, int64_t b, int64_t H, int64_t d, double *gu, double *gstart);

/* Position clique, scalar dt. central: u [b, H-4, d], H >= 8; backward
 * (central == 0): u [b, H, d], H >= 4. */
void ad_traj_pos_fwd_f32(const float *u, const float *p0, const float *v0, const float *a0,
                         const int64_t *sidx, float dt, int central, int64_t b, int64_t H, int64_t d,
                         float *pos, float *vel, float *acc, float *jerk);
void ad_traj_pos_fwd_f64(const double *u, const double *p0, const double *v0, const double *a0,
                         const int64_t *sidx, double dt, int central, int64_t b, int64_t H, int64_t d,
                         double *pos, double *vel, double *acc, double *jerk);
void ad_traj_pos_bwd_f32(const float *gp, const float *gv, const float *ga, const float *gj,
                         float dt, int central, int64_t b, int64_t H, int64_t d, float *gu, float *gstart);
void ad_traj_pos_bwd_f64(const double *gp, const double *gv, const double *ga, const double *gj,
                         double dt, int central, int64_t b, int64_t H, int64_t d, double *gu, double *gstart);

/* gsp/gsv/gsa [B0, d] are zeroed, then receive gstart's rows through 'sidx'. */
void ad_traj_scatter_start_f32(const float *gstart, const int64_t *sidx, int64_t b, int64_t B0,
                               int64_t d, float *gsp, float *gsv, float *gsa);
void ad_traj_scatter_start_f64(const double *gstart, const int64_t *sidx, int64_t b, int64_t B0,
                               int64_t d, double *gsp, double *gsv, double *gsa);

#endif

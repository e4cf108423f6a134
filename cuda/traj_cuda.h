/* traj_cuda.h: C entry points of the optional CUDA module (addsl_cuda.so):
 * trajectory step kernels on device pointers, and the device helpers a caller needs. */
#ifndef ADDSL_TRAJ_CUDA_H
#define ADDSL_TRAJ_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every pointer below is a device pointer; 'stream' is a cudaStream_t (NULL:
 * the default stream). Launches are asynchronous; each function returns 0 or
 * a cudaError_t code (addsl_cuda_error_string names it) and never copies to
 * the host.
 *
 * Layout and equations: docs/trajectory-cuda.md and the CPU kernels in
 * builtins/kernels/traj.h, which these mirror. Trajectories are [b, H, d] contiguous,
 * start rows [B0, d]; 'sidx' (length b, int64, NULL: row i, B0 == b) picks
 * the start row of trajectory i. acc/jerk: 'dt' has H entries (dt[h] ends at
 * output h), or is NULL and every step is 'dt_scalar'.
 *
 * The backward functions take the four output gradients and write the action
 * gradient 'gu' (every row, unused rows 0) and the start gradients gsp, gsv,
 * gsa [B0, d]; with 'sidx' they are zeroed and accumulated atomically
 * (repeated rows sum; float order is then not deterministic). */

int addsl_cuda_traj_acc_fwd_f32(const float *u, const float *p0, const float *v0, const float *a0,
                                const int64_t *sidx, const float *dt, float dt_scalar, int64_t b,
                                int64_t H, int64_t d, float *pos, float *vel, float *acc,
                                float *jerk, void *stream);
int addsl_cuda_traj_acc_fwd_f64(const double *u, const double *p0, const double *v0,
                                const double *a0, const int64_t *sidx, const double *dt,
                                double dt_scalar, int64_t b, int64_t H, int64_t d, double *pos,
                                double *vel, double *acc, double *jerk, void *stream);
int addsl_cuda_traj_acc_bwd_f32(const float *gp, const float *gv, const float *ga, const float *gj,
                                const int64_t *sidx, const float *dt, float dt_scalar, int64_t b,
                                int64_t B0, int64_t H, int64_t d, float *gu, float *gsp,
                                float *gsv, float *gsa, void *stream);
int addsl_cuda_traj_acc_bwd_f64(const double *gp, const double *gv, const double *ga,
                                const double *gj, const int64_t *sidx, const double *dt,
                                double dt_scalar, int64_t b, int64_t B0, int64_t H, int64_t d,
                                double *gu, double *gsp, double *gsv, double *gsa, void *stream);

int addsl_cuda_traj_jerk_fwd_f32(const float *u, const float *p0, const float *v0,
                                 const float *a0, const int64_t *sidx, const float *dt,
                                 float dt_scalar, int64_t b, int64_t H, int64_t d, float *pos,
                                 float *vel, float *acc, float *jerk, void *stream);
int addsl_cuda_traj_jerk_fwd_f64(const double *u, const double *p0, const double *v0,
                                 const double *a0, const int64_t *sidx, const double *dt,
                                 double dt_scalar, int64_t b, int64_t H, int64_t d, double *pos,
                                 double *vel, double *acc, double *jerk, void *stream);
int addsl_cuda_traj_jerk_bwd_f32(const float *gp, const float *gv, const float *ga,
                                 const float *gj, const int64_t *sidx, const float *dt,
                                 float dt_scalar, int64_t b, int64_t B0, int64_t H, int64_t d,
                                 float *gu, float *gsp, float *gsv, float *gsa, void *stream);
int addsl_cuda_traj_jerk_bwd_f64(const double *gp, const double *gv, const double *ga,
                                 const double *gj, const int64_t *sidx, const double *dt,
                                 double dt_scalar, int64_t b, int64_t B0, int64_t H, int64_t d,
                                 double *gu, double *gsp, double *gsv, double *gsa, void *stream);

/* Position clique, scalar dt. central != 0: u [b, H-4, d], H >= 8;
 * central == 0 (backward differences): u [b, H, d], H >= 4. */
int addsl_cuda_traj_pos_fwd_f32(const float *u, const float *p0, const float *v0, const float *a0,
                                const int64_t *sidx, float dt, int central, int64_t b, int64_t H,
                                int64_t d, float *pos, float *vel, float *acc, float *jerk,
                                void *stream);
int addsl_cuda_traj_pos_fwd_f64(const double *u, const double *p0, const double *v0,
                                const double *a0, const int64_t *sidx, double dt, int central,
                                int64_t b, int64_t H, int64_t d, double *pos, double *vel,
                                double *acc, double *jerk, void *stream);
int addsl_cuda_traj_pos_bwd_f32(const float *gp, const float *gv, const float *ga, const float *gj,
                                const int64_t *sidx, float dt, int central, int64_t b, int64_t B0,
                                int64_t H, int64_t d, float *gu, float *gsp, float *gsv,
                                float *gsa, void *stream);
int addsl_cuda_traj_pos_bwd_f64(const double *gp, const double *gv, const double *ga,
                                const double *gj, const int64_t *sidx, double dt, int central,
                                int64_t b, int64_t B0, int64_t H, int64_t d, double *gu,
                                double *gsp, double *gsv, double *gsa, void *stream);

/* Device helpers (cuda/module.c). addsl_cuda_device_count returns the number
 * of usable GPUs, 0 when there is none or no driver (never an error). */
int addsl_cuda_device_count(void);
int addsl_cuda_device_name(char *buf, size_t n);
const char *addsl_cuda_error_string(int code);
int addsl_cuda_malloc(void **p, size_t bytes);
int addsl_cuda_free(void *p);
int addsl_cuda_to_device(void *dst, const void *src, size_t bytes);
int addsl_cuda_to_host(void *dst, const void *src, size_t bytes);
int addsl_cuda_copy(void *dst, const void *src, size_t bytes);
int addsl_cuda_memset(void *p, int byte, size_t bytes);
int addsl_cuda_synchronize(void);
/* CUDA graphs (cuda/graph.c): a stream of the caller's, capture of what is
 * launched on it into an instantiated graph (*exec; *nnodes its nodes), the
 * graph's launch on a stream (NULL: the default one) and its release. */
int addsl_cuda_stream_create(void **s);
int addsl_cuda_stream_destroy(void *s);
int addsl_cuda_capture_begin(void *s);
int addsl_cuda_capture_end(void *s, void **exec, size_t *nnodes);
int addsl_cuda_graph_launch(void *exec, void *stream);
int addsl_cuda_graph_destroy(void *exec);

/* The table a dlopen()ing core looks up by one symbol name, so that it needs
 * no prototypes beyond this header; 'version' grows when fields are added. */
#define ADDSL_CUDA_API_VERSION 4
typedef struct addsl_cuda_api {
    int version;
    int (*device_count)(void);
    const char *(*error_string)(int);
    int (*malloc_)(void **, size_t);
    int (*free_)(void *);
    int (*to_device)(void *, const void *, size_t);
    int (*to_host)(void *, const void *, size_t);
    int (*copy)(void *, const void *, size_t);
    int (*memset_)(void *, int, size_t);
    int (*synchronize)(void);
    int (*acc_fwd_f32)(const float *, const float *, const float *, const float *, const int64_t *,
                       const float *, float, int64_t, int64_t, int64_t, float *, float *, float *,
                       float *, void *);
    int (*acc_fwd_f64)(const double *, const double *, const double *, const double *,
                       const int64_t *, const double *, double, int64_t, int64_t, int64_t,
                       double *, double *, double *, double *, void *);
    int (*acc_bwd_f32)(const float *, const float *, const float *, const float *, const int64_t *,
                       const float *, float, int64_t, int64_t, int64_t, int64_t, float *, float *,
                       float *, float *, void *);
    int (*acc_bwd_f64)(const double *, const double *, const double *, const double *,
                       const int64_t *, const double *, double, int64_t, int64_t, int64_t, int64_t,
                       double *, double *, double *, double *, void *);
    int (*jerk_fwd_f32)(const float *, const float *, const float *, const float *,
                        const int64_t *, const float *, float, int64_t, int64_t, int64_t, float *,
                        float *, float *, float *, void *);
    int (*jerk_fwd_f64)(const double *, const double *, const double *, const double *,
                        const int64_t *, const double *, double, int64_t, int64_t, int64_t,
                        double *, double *, double *, double *, void *);
    int (*jerk_bwd_f32)(const float *, const float *, const float *, const float *,
                        const int64_t *, const float *, float, int64_t, int64_t, int64_t, int64_t,
                        float *, float *, float *, float *, void *);
    int (*jerk_bwd_f64)(const double *, const double *, const double *, const double *,
                        const int64_t *, const double *, double, int64_t, int64_t, int64_t,
                        int64_t, double *, double *, double *, double *, void *);
    int (*pos_fwd_f32)(const float *, const float *, const float *, const float *, const int64_t *,
                       float, int, int64_t, int64_t, int64_t, float *, float *, float *, float *,
                       void *);
    int (*pos_fwd_f64)(const double *, const double *, const double *, const double *,
                       const int64_t *, double, int, int64_t, int64_t, int64_t, double *,
                       double *, double *, double *, void *);
    int (*pos_bwd_f32)(const float *, const float *, const float *, const float *, const int64_t *,
                       float, int, int64_t, int64_t, int64_t, int64_t, float *, float *, float *,
                       float *, void *);
    int (*pos_bwd_f64)(const double *, const double *, const double *, const double *,
                       const int64_t *, double, int, int64_t, int64_t, int64_t, int64_t, double *,
                       double *, double *, double *, void *);
    /* version 2: the generic tensor kernels of tensor_cuda.h */
    int (*ew)(const char *, void *, int, const void *const *, const int64_t *, int64_t,
              const double *, int, void *);
    int (*copy_strided)(void *, int, const int64_t *, const void *, int, const int64_t *, int,
                        const int64_t *, void *);
    int (*fill)(void *, int, const int64_t *, int, const int64_t *, double, void *);
    int (*reduce)(const char *, int, void *, const void *, int64_t, int64_t, int64_t, void *);
    /* version 3: batched matrix products */
    int (*gemm)(int, int64_t, int64_t, int64_t, int64_t, const void *, int64_t, int64_t, int64_t,
                const void *, int64_t, int64_t, int64_t, void *, double, double, void *);
    /* version 4: CUDA graphs */
    int (*stream_create)(void **);
    int (*stream_destroy)(void *);
    int (*capture_begin)(void *);
    int (*capture_end)(void *, void **, size_t *);
    int (*graph_launch)(void *, void *);
    int (*graph_destroy)(void *);
} addsl_cuda_api;

const addsl_cuda_api *addsl_cuda_get_api(void);

#ifdef __cplusplus
}
#endif

#endif

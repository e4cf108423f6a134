/* module.c: the device helpers and the function table of the loadable CUDA
 * module (addsl_cuda.so), so a caller can drive the kernels through C alone. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "tensor_cuda.h"
#include "traj_cuda.h"

#define EXPORT __attribute__((visibility("default")))

/* A machine without a GPU or driver answers 0, never an error: that is the
 * "skip" case of every caller. */
EXPORT int addsl_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n;
}

EXPORT int addsl_cuda_device_name(char *buf, size_t n) {
    struct cudaDeviceProp prop;
    int dev = 0;
    cudaError_t rc = cudaGetDevice(&dev);
    if (rc == cudaSuccess) rc = cudaGetDeviceProperties(&prop, dev);
    if (rc != cudaSuccess) return (int)rc;
    snprintf(buf, n, "%s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor,
             prop.multiProcessorCount);
    return 0;
}

EXPORT const char *addsl_cuda_error_string(int code) {
    return cudaGetErrorString((cudaError_t)code);
}

EXPORT int addsl_cuda_malloc(void **p, size_t bytes) {
    *p = NULL;
    return (int)cudaMalloc(p, bytes ? bytes : 1);
}

EXPORT int addsl_cuda_free(void *p) { return p ? (int)cudaFree(p) : 0; }

EXPORT int addsl_cuda_to_device(void *dst, const void *src, size_t bytes) {
    return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}

EXPORT int addsl_cuda_to_host(void *dst, const void *src, size_t bytes) {
    return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}

EXPORT int addsl_cuda_copy(void *dst, const void *src, size_t bytes) {
    return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice);
}

EXPORT int addsl_cuda_memset(void *p, int byte, size_t bytes) {
    return (int)cudaMemset(p, byte, bytes);
}

EXPORT int addsl_cuda_synchronize(void) { return (int)cudaDeviceSynchronize(); }

static const addsl_cuda_api API = {
    ADDSL_CUDA_API_VERSION,
    addsl_cuda_device_count,
    addsl_cuda_error_string,
    addsl_cuda_malloc,
    addsl_cuda_free,
    addsl_cuda_to_device,
    addsl_cuda_to_host,
    addsl_cuda_copy,
    addsl_cuda_memset,
    addsl_cuda_synchronize,
    addsl_cuda_traj_acc_fwd_f32,
    addsl_cuda_traj_acc_fwd_f64,
    addsl_cuda_traj_acc_bwd_f32,
    addsl_cuda_traj_acc_bwd_f64,
    addsl_cuda_traj_jerk_fwd_f32,
    addsl_cuda_traj_jerk_fwd_f64,
    addsl_cuda_traj_jerk_bwd_f32,
    addsl_cuda_traj_jerk_bwd_f64,
    addsl_cuda_traj_pos_fwd_f32,
    addsl_cuda_traj_pos_fwd_f64,
    addsl_cuda_traj_pos_bwd_f32,
    addsl_cuda_traj_pos_bwd_f64,
    addsl_cuda_ew,
    addsl_cuda_copy_strided,
    addsl_cuda_fill,
    addsl_cuda_reduce,
    addsl_cuda_gemm,
    addsl_cuda_stream_create,
    addsl_cuda_stream_destroy,
    addsl_cuda_capture_begin,
    addsl_cuda_capture_end,
    addsl_cuda_graph_launch,
    addsl_cuda_graph_destroy,
};

EXPORT const addsl_cuda_api *addsl_cuda_get_api(void) { return &API; }

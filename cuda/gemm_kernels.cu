// gemm_kernels.cu: the batched matrix product of the CUDA module
// (addsl_cuda_gemm in tensor_cuda.h). A plain shared-memory tiled kernel:
// the module links nothing but the CUDA runtime (cuBLAS would add hundreds
// of megabytes to what a GPU host must install), and the products a
// trajectory cost needs are small.
#include <cuda_runtime.h>
#include <stdint.h>

#include "tensor_cuda.h"

namespace {

const int TILE = 16;
// Grid limits of y and z are 65535: larger batches and row counts loop.
const int64_t MAX_GRID_YZ = 65535;

// C[t] = alpha A[t] B[t] (+ beta C[t] unless beta is 0, which never reads C,
// as BLAS) for t < batch. A[t] is M x K at a + t * sab with element strides
// (ars, acs), B[t] K x N likewise; C is contiguous [batch, M, N]. One TILE x
// TILE block of C per thread block, K walked in tiles through shared memory,
// accumulated in T (as the CPU's BLAS does).
template <class T>
__global__ void gemm_kernel(int64_t batch, int64_t M, int64_t N, int64_t K, const T *a, int64_t sab,
                            int64_t ars, int64_t acs, const T *b, int64_t sbb, int64_t brs,
                            int64_t bcs, T *c, T alpha, T beta) {
    __shared__ T As[TILE][TILE];
    __shared__ T Bs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t col = (int64_t)blockIdx.x * TILE + tx;
    // The loop bounds depend on the block only, so every thread reaches each
    // __syncthreads().
    for (int64_t t = blockIdx.z; t < batch; t += gridDim.z) {
        const T *A = a + t * sab, *B = b + t * sbb;
        for (int64_t r0 = (int64_t)blockIdx.y * TILE; r0 < M; r0 += (int64_t)gridDim.y * TILE) {
            const int64_t row = r0 + ty;
            T acc = 0;
            for (int64_t k0 = 0; k0 < K; k0 += TILE) {
                const int64_t ka = k0 + tx, kb = k0 + ty;
                As[ty][tx] = row < M && ka < K ? A[row * ars + ka * acs] : T(0);
                Bs[ty][tx] = kb < K && col < N ? B[kb * brs + col * bcs] : T(0);
                __syncthreads();
#pragma unroll
                for (int kk = 0; kk < TILE; kk++) acc += As[ty][kk] * Bs[kk][tx];
                __syncthreads();
            }
            if (row < M && col < N) {
                T *out = c + (t * M + row) * N + col;
                *out = beta == T(0) ? alpha * acc : alpha * acc + beta * *out;
            }
        }
    }
}

template <class T>
int launch(int64_t batch, int64_t M, int64_t N, int64_t K, const void *a, int64_t sab, int64_t ars,
           int64_t acs, const void *b, int64_t sbb, int64_t brs, int64_t bcs, void *c,
           double alpha, double beta, cudaStream_t stream) {
    int64_t gx = (N + TILE - 1) / TILE, gy = (M + TILE - 1) / TILE;
    if (gx > INT32_MAX) return ADDSL_CUDA_EARG;
    dim3 grid((unsigned)gx, (unsigned)(gy < MAX_GRID_YZ ? gy : MAX_GRID_YZ),
              (unsigned)(batch < MAX_GRID_YZ ? batch : MAX_GRID_YZ));
    dim3 block(TILE, TILE);
    gemm_kernel<T><<<grid, block, 0, stream>>>(batch, M, N, K, (const T *)a, sab, ars, acs,
                                               (const T *)b, sbb, brs, bcs, (T *)c, (T)alpha,
                                               (T)beta);
    return (int)cudaGetLastError();
}

} // namespace

extern "C" int addsl_cuda_gemm(int dt, int64_t batch, int64_t m, int64_t n, int64_t k,
                               const void *a, int64_t sab, int64_t ars, int64_t acs, const void *b,
                               int64_t sbb, int64_t brs, int64_t bcs, void *c, double alpha,
                               double beta, void *stream) {
    if (batch < 0 || m < 0 || n < 0 || k < 0) return ADDSL_CUDA_EARG;
    if (batch == 0 || m == 0 || n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    switch (dt) {
    case 0: return launch<float>(batch, m, n, k, a, sab, ars, acs, b, sbb, brs, bcs, c, alpha, beta, s);
    case 1: return launch<double>(batch, m, n, k, a, sab, ars, acs, b, sbb, brs, bcs, c, alpha, beta, s);
    case 2: case 3: return ADDSL_CUDA_ENOKERNEL;
    default: return ADDSL_CUDA_EARG;
    }
}

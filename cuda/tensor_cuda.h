/* tensor_cuda.h: the generic tensor kernels of the CUDA module (elementwise
 * ops by kernel name, strided copies and fills, reductions) that let GPU
 * tensors run the same ops as CPU ones, with the CPU kernels' semantics. */
#ifndef ADDSL_TENSOR_CUDA_H
#define ADDSL_TENSOR_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every pointer is a device pointer; every launch is asynchronous on
 * 'stream' (NULL: the default stream) and nothing is copied to the host.
 * dtype codes are addsl's: 0 float32, 1 float64, 2 int64, 3 bool (one byte,
 * 0 or 1). Each function returns 0, a cudaError_t code (the launch's, from
 * cudaGetLastError; a fault inside a kernel shows at the next synchronizing
 * call), or one of the codes below. Nothing is launched for zero elements
 * (the data pointers may then be NULL). Implementation: cuda/tensor_kernels.cu. */
#define ADDSL_CUDA_ENOKERNEL (-1) /* no device kernel of that name or dtype */
#define ADDSL_CUDA_EARG (-2)      /* bad argument (rank > 16, unknown dtype, ...) */
#define ADDSL_CUDA_MAX_DIMS 16

/* The elementwise kernel that builtins/kernels/elementwise.def names 'kname'
 * ("add_f32", "gt_f64", "where_f32", "leaky_relu_f64", "logical_not_b8"...),
 * with the same arguments and the same results:
 *   unary   nin 1, np 0       out[i] = f(in0[i])
 *   param   nin 1, np 2       out[i] = f(in0[i]; p[0], p[1])
 *   binary  nin 2, np 0       out[i] = f(in0[i*s0], in1[i*s1])
 *   ternary nin 3, np 0       where/lerp/clamp_t
 *   addc    nin 3, np 1       addcmul/addcdiv with value p[0]
 * s[k] is 1 (n elements) or 0 (in_k[0] for every i); it is read only for the
 * binary, ternary and addc shapes, and any other value is EARG. The output
 * dtype is the CPU kernel's (bool for comparisons and predicates). Every name
 * of kernels/elementwise.def has a device kernel (the table is generated from
 * the same op lists); another name gives ENOKERNEL, a wrong nin or np EARG.
 * Float results match the CPU's to the last bit for arithmetic, rounding,
 * comparisons, clamps and the like, to a few ulp for library functions
 * (exp, tanh, pow...: CUDA's against SLEEF's). */
int addsl_cuda_ew(const char *kname, void *out, int nin, const void *const *in, const int64_t *s,
                  int64_t n, const double *p, int np, void *stream);

/* dst[idx] = src[idx] converted from dtype sdt to ddt (as vm/tensor/tensor.c's
 * copies: float -> int64 truncates, NaN and out-of-range give INT64_MIN;
 * anything -> bool is != 0) for every idx of 'shape'. dst and src point at
 * element 0 of their views; strides are in elements and may be 0 (src
 * broadcast) or negative; the two views must not overlap. ndim 0 is one
 * element; ndim > ADDSL_CUDA_MAX_DIMS, a negative size or an unknown dtype
 * is EARG. */
int addsl_cuda_copy_strided(void *dst, int ddt, const int64_t *dstride, const void *src, int sdt,
                            const int64_t *sstride, int ndim, const int64_t *shape, void *stream);

/* dst[idx] = v (converted to dtype dt by the same rules) for every idx of
 * 'shape'. */
int addsl_cuda_fill(void *dst, int dt, const int64_t *stride, int ndim, const int64_t *shape,
                    double v, void *stream);

/* x is contiguous [outer, r, inner]; out[o, i] = op over j of x[o, j, i]
 * (out contiguous [outer, inner], same dtype as x). op: "sum", "mean",
 * "prod", "amax", "amin"; dtypes float32, float64, int64 ("mean" float only).
 * Float sums and products accumulate in double, integer ones wrap. amax/amin
 * propagate NaN. r == 0: sum 0, prod 1, mean NaN; amax/amin of nothing is
 * EARG (the caller refuses it first, as torch does). An unknown op, "mean" of
 * int64 or any bool reduction is ENOKERNEL. The order of the float sum is
 * fixed by the shape alone, so results are reproducible run to run; rows too
 * long for one block take two passes through a scratch buffer allocated
 * with cudaMallocAsync on 'stream' (an allocation failure is returned). */
int addsl_cuda_reduce(const char *op, int dt, void *out, const void *x, int64_t outer, int64_t r,
                      int64_t inner, void *stream);

/* c[t] = alpha a[t] b[t] + beta c[t] for t < batch (dtype 0 float32 or 1
 * float64; int64 and bool are ENOKERNEL, as torch has no CUDA integer
 * matmul). a[t] is m x k at a + t * sab (elements) with row and column
 * strides ars, acs (any, 0 included: broadcast and transposed views need no
 * copy); b[t] is k x n likewise; c is contiguous [batch, m, n]. beta == 0
 * never reads c. Accumulates in the dtype, like the CPU's BLAS.
 * Implementation: cuda/gemm_kernels.cu. */
int addsl_cuda_gemm(int dt, int64_t batch, int64_t m, int64_t n, int64_t k, const void *a,
                    int64_t sab, int64_t ars, int64_t acs, const void *b, int64_t sbb, int64_t brs,
                    int64_t bcs, void *c, double alpha, double beta, void *stream);

#ifdef __cplusplus
}
#endif

#endif

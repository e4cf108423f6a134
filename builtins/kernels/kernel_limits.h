/* kernels/kernel_limits.h: the limits and thresholds the pure kernels read.
 * The kernels are a leaf (no include of vm/, tests/cli/kernels-leaf.sh), so
 * their numbers live here; vm/ad_limits.h includes this file, and every
 * other limit of addsl is defined there. Change a number here, not at its
 * point of use. */
#ifndef AD_KERNEL_LIMITS_H
#define AD_KERNEL_LIMITS_H

#define AD_MAX_DIMS 16              /* tensor rank limit */
#define AD_OMP_THRESHOLD 32768      /* elements before a kernel goes parallel */
#define AD_OMP_MEMBOUND_MIN ((double)(512 << 10)) /* bytes an add or multiply reads and writes before it goes parallel
                                                    (bench/RESULTS.md: 2 threads won from 64K float32 elements up to 1e7) */
#define AD_GEMM_SMALL_MAX 32        /* the batched small-product kernel reads matrices up to this on a side */
#define AD_GEMM_SMALL_SQUARE 4      /* it is chosen for square products up to this side (8 in float64): a direct
                                       BLAS call per matrix wins above (measured, bench/RESULTS.md) */

#endif

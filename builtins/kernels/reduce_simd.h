/* kernels/reduce_simd.h: the float32/float64 sums under sum and mean (kernels/reduce.c),
 * float64 accumulated in double, float32 rows in float lanes folded into double
 * every 256 elements, with an AVX2 copy picked at load time. */
#ifndef AD_REDUCE_SIMD_H
#define AD_REDUCE_SIMD_H

#include <stdbool.h>
#include <stdint.h>

/* The sum of x[0..n). float64: 16 lanes over blocks of up to RS_SUM_BLOCK
 * elements, pairwise above, so the rounding error grows with log(n) rather
 * than n. float32: 32 float lanes over chunks of 256 elements whose folded
 * partials add in 8 double lanes (the order is spelled out in kernels/reduce_simd.c).
 * The order of the additions depends on n only (not on the CPU or the team). */
double ad_rs_rowsum_f32(const float *x, int64_t n);
double ad_rs_rowsum_f64(const double *x, int64_t n);

/* o[r] = the sum of row r of x ([rows, n], contiguous) as ad_rs_rowsum gives
 * it, divided by n when 'mean', in the output's dtype. */
void ad_rs_rowsums_f32(const float *x, int64_t rows, int64_t n, bool mean, float *o);
void ad_rs_rowsums_f64(const double *x, int64_t rows, int64_t n, bool mean, double *o);

/* a[j] += x[0 * inner + j] + ... + x[(n - 1) * inner + j] for j < m, each
 * column added in row order, as a plain loop over the rows would. */
void ad_rs_colsum_f32(const float *x, int64_t n, int64_t inner, int64_t m, double *a);
void ad_rs_colsum_f64(const double *x, int64_t n, int64_t inner, int64_t m, double *a);

#endif

/* kernels/special.h: the op lists of the special-function kernels (lib/special.ad),
 * spliced into the element-wise lists' consumers; the functions are kernels/special_math.h's. */
#ifndef AD_KERNELS_SPECIAL_H
#define AD_KERNELS_SPECIAL_H

/* Float-only unary kernels (f32/f64; integers promote to float32), each
 * ad_sp_NAME(double) of kernels/special_math.h. */
#define AD_EW_SPECIAL_OPS(X) \
    X(i0) X(i0e) X(i1) X(i1e) X(erfcx) X(ndtri) X(log_ndtr) X(frexp_mantissa) X(frexp_exponent)

/* Float-only binary kernels (f32/f64), each AD_SP_B_NAME(T, a, b) of kernels/special_math.h. */
#define AD_EW_SPECIAL_BINARY_OPS(X) X(zeta) X(igamma) X(igammac) X(nextafter)

#endif

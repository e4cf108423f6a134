/* kernels/blas_layout.h: how a matrix or a batch of them is read in place by BLAS.
 * Shared by the eager products (bi_linalg.c) and compile()'s planned ones
 * (vm/jit/plan_ops.c), which must pick the same calls to give the same bits. */
#ifndef ADDSL_BLAS_LAYOUT_H
#define ADDSL_BLAS_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

static inline int64_t ad_blas_max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* A rows x cols matrix with row stride rs and column stride cs, read as
 * row-major (trans 0) or as the transpose of one (trans 1) with leading
 * dimension ld; false when neither fits (the caller copies). */
static inline bool ad_blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *trans, int64_t *ld) {
    if (cols <= 1 || cs == 1) {
        *ld = rows <= 1 ? ad_blas_max64(cols, 1) : rs;
        *trans = 0;
        if (*ld >= ad_blas_max64(cols, 1) && *ld <= INT32_MAX) return true;
    }
    if (rows <= 1 || rs == 1) {
        *ld = cols <= 1 ? ad_blas_max64(rows, 1) : cs;
        *trans = 1;
        if (*ld >= ad_blas_max64(rows, 1) && *ld <= INT32_MAX) return true;
    }
    return false;
}

/* The one stride s with which the batch dims (strides 'strides', shape
 * 'bshape', nb dims) advance as a flat batch index does (offset = index * s):
 * contiguous batches and broadcast ones (s = 0) have it, most other views do not. */
static inline bool ad_flat_batch_stride(const int64_t *strides, int nb, const int64_t *bshape, int64_t *s) {
    int64_t span = 1;
    bool found = false;
    *s = 0;
    for (int i = nb - 1; i >= 0; i--) {
        if (bshape[i] == 1) continue;
        if (!found) {
            if (strides[i] % span) return false;
            *s = strides[i] / span;
            found = true;
        } else if (strides[i] != *s * span) {
            return false;
        }
        span *= bshape[i];
    }
    return true;
}

/* The offsets, in elements, of batch 'bi' (a flat index over the batch shape
 * 'bshape', nb dims) in two operands whose batch dims have strides sa and sb. */
static inline void ad_batch_offsets(int64_t bi, int nb, const int64_t *bshape, const int64_t *sa,
                                    const int64_t *sb, int64_t *ao, int64_t *bo) {
    int64_t rem = bi;
    *ao = *bo = 0;
    for (int i = nb - 1; i >= 0; i--) {
        int64_t ix = rem % bshape[i];
        rem /= bshape[i];
        *ao += ix * sa[i];
        *bo += ix * sb[i];
    }
}

#endif

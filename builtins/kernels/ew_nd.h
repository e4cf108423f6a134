/* kernels/ew_nd.h: walks an element-wise op over broadcast and strided operands as
 * runs along the innermost dimension, so that no expanded copy is made. */
#ifndef AD_EW_ND_H
#define AD_EW_ND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernel_limits.h"

#define EW_ND_MAX_OPS 4  /* the output and up to three inputs */

/* Dimensions after merging those that every operand walks as one (and
 * dropping sizes of 1); the innermost is last and is what a kernel runs
 * over. inner[i] is operand i's element stride along it (0 or 1, what the
 * kernels take); step[i][d] its byte stride along outer dimension d. */
typedef struct ew_nd {
    int nops, ndim;
    int64_t shape[AD_MAX_DIMS];
    int64_t inner[EW_ND_MAX_OPS];
    int64_t step[EW_ND_MAX_OPS][AD_MAX_DIMS];
} ew_nd;

/* Plans the walk of 'nops' operands over 'shape' (ndim dims); strides[i] are
 * operand i's element strides against that shape (0 on broadcast dims) and
 * esize[i] its element size. False when an operand's innermost stride is
 * neither 0 nor 1 (a transposed operand): the caller copies it instead. */
bool ew_nd_plan(ew_nd *p, int ndim, const int64_t *shape, int nops, const int64_t *const *strides,
                const size_t *esize);

/* Number of runs (the product of the outer dimensions) and their length. */
int64_t ew_nd_runs(const ew_nd *p);
int64_t ew_nd_run_len(const ew_nd *p);

/* Called on 'rows' consecutive runs of 'len' elements: run r of operand i
 * starts at ptr[i] + r * step[i] (bytes). Handing over a row of runs at a
 * time keeps the walk's own cost off runs as short as ten elements. */
typedef void (*ew_nd_fn)(void *ctx, char *const *ptr, const int64_t *step, int64_t rows, int64_t len);

/* Calls fn on runs [r0, r1) of the walk, base[i] being operand i's start. */
void ew_nd_each(const ew_nd *p, char *const *base, int64_t r0, int64_t r1, ew_nd_fn fn, void *ctx);

#endif

/* kernels/ew_par.h: how an element-wise call over n elements is cut into chunks for
 * the OpenMP team. The cut depends on n and the element size only, never on
 * the team, so a result never depends on OMP_NUM_THREADS. */
#ifndef AD_EW_PAR_H
#define AD_EW_PAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernel_limits.h"

/* Chunk starts are multiples of this many elements, so that each chunk's
 * vector loop meets the elements at the alignment the serial call does, and
 * only the last chunk has a tail. */
#define EW_PAR_ALIGN 64

/* Chunks for a call over n elements of esize bytes (1: run it inline).
 * 'membound' ops (one add or multiply per element) pay for a second thread
 * from AD_OMP_MEMBOUND_MIN bytes read and written per call ('nops' arrays:
 * the inputs and the output); the others from AD_OMP_THRESHOLD elements.
 * About AD_OMP_THRESHOLD elements a chunk, an even number of them (at
 * least two), so that a team of two gets equal halves. */
int64_t ew_par_chunks(int64_t n, size_t esize, int nops, bool membound);

/* Elements in each chunk but the last of a cut into 'chunks' pieces. */
static inline int64_t ew_par_chunk_len(int64_t n, int64_t chunks) {
    int64_t per = (n + chunks - 1) / chunks;
    return (per + EW_PAR_ALIGN - 1) / EW_PAR_ALIGN * EW_PAR_ALIGN;
}

/* x[i] += y[i * sy] (sy 0 or 1) for n contiguous float32 (or, with f64,
 * float64) elements, cut as a membound call: the engine's in-place
 * gradient accumulation. */
void ew_par_add_into(void *x, const void *y, int64_t sy, int64_t n, bool f64);

#endif

/* kernels/ew_par.c: the cut of an element-wise call into chunks for the OpenMP team
 * (see kernels/ew_par.h for the rule and bench/RESULTS.md for the measurements). */
#include "kernels/ew_par.h"

#include "kernels/elementwise.h"

int64_t ew_par_chunks(int64_t n, size_t esize, int nops, bool membound) {
    if (membound ? (double)n * (double)esize * nops < AD_OMP_MEMBOUND_MIN : n <= AD_OMP_THRESHOLD) return 1;
    int64_t chunks = (n + AD_OMP_THRESHOLD - 1) / AD_OMP_THRESHOLD;
    /* An even count: a static schedule over an odd one gave one of two
     * threads a chunk more (31 chunks at 1e6: 517k against 483k elements,
     * 3.4% on the critical path of a memory-bound call). */
    return chunks < 2 ? 2 : chunks + (chunks & 1);
}

/* The float32 and float64 binary kernels of kernels/elementwise.h. */
typedef void (*ew_par_bin)(void *out, const void *a, int64_t sa, const void *b, int64_t sb, int64_t n);

void ew_par_add_into(void *x, const void *y, int64_t sy, int64_t n, bool f64) {
    const size_t es = f64 ? sizeof(double) : sizeof(float);
    const ew_par_bin k = f64 ? (ew_par_bin)ad_k_add_f64 : (ew_par_bin)ad_k_add_f32;
    const int64_t chunks = ew_par_chunks(n, es, 3, true);
    if (chunks == 1) { k(x, x, 1, y, sy, n); return; }
    const int64_t per = ew_par_chunk_len(n, chunks);
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t lo = c * per;
        if (lo >= n) continue;
        char *p = (char *)x + (size_t)lo * es;
        k(p, p, 1, (const char *)y + (size_t)(lo * sy) * es, sy, n - lo < per ? n - lo : per);
    }
}

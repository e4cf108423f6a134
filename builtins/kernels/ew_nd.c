/* kernels/ew_nd.c: the run-by-run walk of an element-wise op over broadcast and
 * strided operands (see kernels/ew_nd.h). */
#include "kernels/ew_nd.h"

bool ew_nd_plan(ew_nd *p, int ndim, const int64_t *shape, int nops, const int64_t *const *strides,
                const size_t *esize) {
    /* merged dims in element strides, innermost first */
    int64_t sz[AD_MAX_DIMS], st[EW_ND_MAX_OPS][AD_MAX_DIMS];
    int m = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] == 1) continue;
        bool merge = m > 0;
        for (int i = 0; i < nops && merge; i++) merge = strides[i][d] == st[i][m - 1] * sz[m - 1];
        if (merge) { sz[m - 1] *= shape[d]; continue; }
        sz[m] = shape[d];
        for (int i = 0; i < nops; i++) st[i][m] = strides[i][d];
        m++;
    }
    if (m == 0) {  /* one element */
        sz[0] = 1;
        for (int i = 0; i < nops; i++) st[i][0] = 1;
        m = 1;
    }
    p->nops = nops;
    p->ndim = m;
    bool ok = true;
    for (int i = 0; i < nops; i++) {
        p->inner[i] = st[i][0];
        ok = ok && (st[i][0] == 0 || st[i][0] == 1);
    }
    if (!ok) return false;
    /* outer dims outermost first, so that the last one varies fastest */
    for (int d = 0; d < m; d++) {
        p->shape[d] = sz[m - 1 - d];
        for (int i = 0; i < nops; i++) p->step[i][d] = st[i][m - 1 - d] * (int64_t)esize[i];
    }
    return true;
}

int64_t ew_nd_runs(const ew_nd *p) {
    int64_t r = 1;
    for (int d = 0; d < p->ndim - 1; d++) r *= p->shape[d];
    return r;
}

int64_t ew_nd_run_len(const ew_nd *p) { return p->shape[p->ndim - 1]; }

void ew_nd_each(const ew_nd *p, char *const *base, int64_t r0, int64_t r1, ew_nd_fn fn, void *ctx) {
    if (r0 >= r1) return;  /* also an empty walk, whose zero-sized dims would divide by zero below */
    const int n = p->nops;
    const int64_t len = p->shape[p->ndim - 1];
    char *ptr[EW_ND_MAX_OPS];
    int64_t step[EW_ND_MAX_OPS] = {0};
    for (int i = 0; i < n; i++) ptr[i] = base[i];
    if (p->ndim == 1) {
        fn(ctx, ptr, step, 1, len);
        return;
    }
    /* dimension 'row' is handed to fn whole; the ones above it are an odometer */
    const int row = p->ndim - 2;
    const int64_t nrow = p->shape[row];
    for (int i = 0; i < n; i++) step[i] = p->step[i][row];
    int64_t idx[AD_MAX_DIMS], r = r0;
    for (int d = row; d >= 0; d--) {
        idx[d] = r % p->shape[d];
        r /= p->shape[d];
        for (int i = 0; i < n; i++) ptr[i] += idx[d] * p->step[i][d];
    }
    for (int64_t k = r0; k < r1;) {
        int64_t cnt = nrow - idx[row] < r1 - k ? nrow - idx[row] : r1 - k;
        fn(ctx, ptr, step, cnt, len);
        k += cnt;
        if (k == r1) break;
        /* the row is finished: rewind it and carry into the dims above */
        for (int i = 0; i < n; i++) ptr[i] -= idx[row] * step[i];
        idx[row] = 0;
        for (int d = row - 1; d >= 0; d--) {
            for (int i = 0; i < n; i++) ptr[i] += p->step[i][d];
            if (++idx[d] < p->shape[d]) break;
            idx[d] = 0;
            for (int i = 0; i < n; i++) ptr[i] -= p->shape[d] * p->step[i][d];
        }
    }
}

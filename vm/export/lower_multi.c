/* export/lower_multi.c: export_c's lowering of the ops with a values and an int64
 * indices output along one dim (max/min with dim, sort, topk, kthvalue,
 * median, nanmedian, mode, cummax/cummin), (nan)median over all elements,
 * and frexp's (mantissa, exponent). */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* Rows up to this long find ranks by counting (n^2 comparisons, no memory,
 * one loop nest: the short rows of a controller); longer ones are sorted by a
 * merge sort over positions in the scratch (n log n, 16 bytes per element). */
#define XM_COUNT_ROW 32

typedef enum { XM_MAX, XM_MIN, XM_SORT, XM_TOPK, XM_KTH, XM_MEDIAN, XM_NANMEDIAN, XM_MODE, XM_CUMMAX, XM_CUMMIN } xm_kind;

/* One row-wise op: the input, the dim, and the C spellings it is written with. */
typedef struct xm {
    ad_xctx *ctx;
    int src, vals, idx;         /* values, refs */
    const ad_xval *x;
    int d;                      /* the dim (0 for a 0-d input) */
    int64_t n, sd, outer, inner;/* row length and stride, rows as outer x inner */
    bool fl;                    /* float elements: NaN rules apply */
    char in[32], vo[32], io[32];
    const char *t;              /* the element's C type */
} xm;

/* Opens 'for (i over rows)' with 'at', the row's first element in the
 * input's storage, and 'o', 'c' its outer and inner numbers. */
static void open_rows(xm *m, ad_buf *b) {
    const ad_xval *x = m->x;
    ad_buf_printf(b, "    for (long i = 0; i < %lld; i++) {\n", (long long)(m->outer * m->inner));
    ad_buf_printf(b, "        long o = i / %lld, c = i %% %lld, at = %lld, q;\n", (long long)m->inner,
                  (long long)m->inner, (long long)x->off);
    ad_buf_puts(b, "        q = o;\n");
    for (int j = m->d - 1; j >= 0; j--)
        ad_buf_printf(b, "        at += (q %% %lld) * %lld; q /= %lld;\n", (long long)x->shape[j], (long long)x->st[j],
                      (long long)x->shape[j]);
    ad_buf_puts(b, "        q = c;\n");
    for (int j = x->ndim - 1; j > m->d; j--)
        ad_buf_printf(b, "        at += (q %% %lld) * %lld; q /= %lld;\n", (long long)x->shape[j], (long long)x->st[j],
                      (long long)x->shape[j]);
    ad_buf_puts(b, "        (void)q; (void)o; (void)c;\n");
}

/* "a comes before b" in the library's stable sort: NaN is the largest value. */
static void before(const xm *m, ad_buf *b, const char *a, const char *c, bool desc) {
    if (!m->fl) ad_buf_printf(b, "(%s %s %s)", a, desc ? ">" : "<", c);
    else if (desc) ad_buf_printf(b, "(%s > %s || (%s != %s && %s == %s))", a, c, a, a, c, c);
    else ad_buf_printf(b, "(%s < %s || (%s != %s && %s == %s))", a, c, c, c, a, a);
}

/* max/min with dim: the first extreme, or the first NaN (ad_red_max_*). */
static void emit_extreme(xm *m, ad_buf *b, bool is_max) {
    ad_buf_printf(b, "        %s best = %s[at];\n        long bi = 0;\n", m->t, m->in);
    ad_buf_printf(b, "        for (long k = 1; k < %lld; k++) {\n", (long long)m->n);
    ad_buf_printf(b, "            %s v = %s[at + k*%lld];\n", m->t, m->in, (long long)m->sd);
    if (m->fl) ad_buf_printf(b, "            if (best == best && (v != v || v %s best)) { best = v; bi = k; }\n", is_max ? ">" : "<");
    else ad_buf_printf(b, "            if (v %s best) { best = v; bi = k; }\n", is_max ? ">" : "<");
    ad_buf_printf(b, "        }\n        %s[i] = best;\n        %s[i] = bi;\n", m->vo, m->io);
}

/* cummax/cummin: ties take the later index; a NaN, once met, stays. */
static void emit_cum(xm *m, ad_buf *b, bool is_max) {
    ad_buf_printf(b, "        %s best = 0;\n        long bi = 0;\n", m->t);
    ad_buf_printf(b, "        for (long k = 0; k < %lld; k++) {\n", (long long)m->n);
    ad_buf_printf(b, "            %s v = %s[at + k*%lld];\n", m->t, m->in, (long long)m->sd);
    if (m->fl)
        ad_buf_printf(b, "            if (k == 0 || v != v || (best == best && v %s best)) { best = v; bi = k; }\n",
                      is_max ? ">=" : "<=");
    else ad_buf_printf(b, "            if (k == 0 || v %s best) { best = v; bi = k; }\n", is_max ? ">=" : "<=");
    ad_buf_printf(b, "            %s[o*%lld + k*%lld + c] = best;\n", m->vo, (long long)(m->n * m->inner), (long long)m->inner);
    ad_buf_printf(b, "            %s[o*%lld + k*%lld + c] = bi;\n        }\n", m->io, (long long)(m->n * m->inner),
                  (long long)m->inner);
}

/* The stable rank 'rk' of element k of the row among all n: how many come
 * before it in the library's stable sort (ties keep index order). */
static void emit_rank(xm *m, ad_buf *b, bool desc) {
    ad_buf_printf(b, "        for (long k = 0; k < %lld; k++) {\n", (long long)m->n);
    ad_buf_printf(b, "            %s xk = %s[at + k*%lld];\n            long rk = 0;\n", m->t, m->in, (long long)m->sd);
    ad_buf_printf(b, "            for (long j = 0; j < %lld; j++) {\n", (long long)m->n);
    ad_buf_printf(b, "                %s xj = %s[at + j*%lld];\n                rk += ", m->t, m->in, (long long)m->sd);
    before(m, b, "xj", "xk", desc);
    ad_buf_puts(b, " || (j < k && !");
    before(m, b, "xk", "xj", desc);
    ad_buf_puts(b, ");\n            }\n");
}

/* mode: the most frequent value, the smallest among equally frequent ones,
 * and the last index holding it; NaNs count once each (ad's pick_mode). */
static void emit_mode(xm *m, ad_buf *b) {
    ad_buf_printf(b, "        %s bv = %s[at];\n        long bc = 0, bi = 0;\n", m->t, m->in);
    ad_buf_printf(b, "        for (long k = 0; k < %lld; k++) {\n", (long long)m->n);
    ad_buf_printf(b, "            %s xk = %s[at + k*%lld];\n            long cnt = 0, last = k;\n", m->t, m->in, (long long)m->sd);
    if (m->fl) ad_buf_puts(b, "            if (xk != xk) continue;\n");
    ad_buf_printf(b, "            for (long j = 0; j < %lld; j++) if (%s[at + j*%lld] == xk) { cnt++; last = j; }\n",
                  (long long)m->n, m->in, (long long)m->sd);
    ad_buf_puts(b, "            if (cnt > bc || (cnt == bc && xk < bv)) { bc = cnt; bv = xk; bi = last; }\n        }\n");
    ad_buf_printf(b, "        %s[i] = bv;\n        %s[i] = bi;\n", m->vo, m->io);
}

/* ---- rows longer than XM_COUNT_ROW: a merge sort ---- */

/* The C name suffix of an element type, for the sort helper's name. */
static const char *sfx_of(ad_dtype dt) {
    switch (dt) {
    case AD_FLOAT32: return "f32";
    case AD_FLOAT64: return "f64";
    case AD_INT64: return "i64";
    default: return "b8";
    }
}

/* xc_msort_<sfx>(v, sd, n, desc, p, tmp), once per file and element type
 * (the guard lets exported files share a translation unit): p[0..n) becomes
 * the positions of v[0], v[sd], ... in the order of the library's stable sort
 * (NaN the largest, ties in position order), by a bottom-up merge sort that
 * moves positions between p and tmp; an element is taken from the right run
 * only when it comes strictly before the left one, which keeps ties stable. */
static void embed_msort(ad_xctx *ctx, ad_dtype dt) {
    ad_buf *d = ctx->prelude;
    const char *sfx = sfx_of(dt), *t = ad_export_ctype(dt);
    char guard[32];
    snprintf(guard, sizeof guard, "XC_MSORT_%s", sfx);
    if (d->data && strstr(d->data, guard)) return;
    bool fl = dt == AD_FLOAT32 || dt == AD_FLOAT64;
    ad_buf_printf(d, "\n#ifndef %s /* the op library's stable sort order (NaN largest) by a merge sort of positions */\n"
                     "#define %s\n", guard, guard);
    ad_buf_printf(d, "static void xc_msort_%s(const %s *v, long sd, long n, int desc, long *p, long *tmp) {\n", sfx, t);
    ad_buf_puts(d, "    long *a = p, *b = tmp;\n"
                   "    for (long k = 0; k < n; k++) a[k] = k;\n"
                   "    for (long w = 1; w < n; w *= 2) {\n"
                   "        for (long lo = 0; lo < n; lo += 2 * w) {\n"
                   "            long mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;\n"
                   "            long i = lo, j = mid, k = lo;\n"
                   "            while (i < mid && j < hi) {\n");
    ad_buf_printf(d, "                %s x = v[a[j] * sd], y = v[a[i] * sd];\n", t);
    if (fl)
        ad_buf_puts(d, "                int first = desc ? (x > y || (x != x && y == y)) : (x < y || (y != y && x == x));\n");
    else ad_buf_puts(d, "                int first = desc ? x > y : x < y;\n");
    ad_buf_puts(d, "                b[k++] = first ? a[j++] : a[i++];\n"
                   "            }\n"
                   "            while (i < mid) b[k++] = a[i++];\n"
                   "            while (j < hi) b[k++] = a[j++];\n"
                   "        }\n"
                   "        long *s = a;\n        a = b;\n        b = s;\n"
                   "    }\n"
                   "    if (a != p) for (long k = 0; k < n; k++) p[k] = a[k];\n"
                   "}\n#endif\n");
}

/* Scratch for a merge sort of n positions: p at 0, tmp after it (8 bytes
 * each, as long is at most 8 bytes wide), then 'extra' bytes. */
static int64_t msort_scratch(ad_xctx *ctx, int64_t n, int64_t extra) {
    int64_t need = 16 * n + extra;
    if (need > ctx->scratch) ctx->scratch = need;
    return 16 * n;
}

/* One row sorted by xc_msort_*: 'p' holds its positions in sorted order. */
static void emit_msort(xm *m, ad_buf *b, bool desc) {
    embed_msort(m->ctx, m->x->dt);
    msort_scratch(m->ctx, m->n, 0);
    ad_buf_printf(b, "        long *p = (long *)(scratch + 0), *tmp = (long *)(scratch + %lld);\n", (long long)(8 * m->n));
    ad_buf_printf(b, "        xc_msort_%s(%s + at, %lld, %lld, %d, p, tmp);\n", sfx_of(m->x->dt), m->in, (long long)m->sd,
                  (long long)m->n, desc ? 1 : 0);
}

/* mode over a sorted row: the longest run of equal values (the first, so the
 * smallest, of equally long ones; NaNs never count), its first element's value
 * and its last position, as the counting form (emit_mode) finds them. */
static void emit_mode_sorted(xm *m, ad_buf *b) {
    long long sd = (long long)m->sd, n = (long long)m->n;
    emit_msort(m, b, false);
    ad_buf_printf(b, "        %s bv = %s[at];\n        long bc = 0, bi = 0;\n", m->t, m->in);
    ad_buf_printf(b, "        for (long r = 0, e; r < %lld; r = e) {\n", n);
    ad_buf_printf(b, "            %s xr = %s[at + p[r]*%lld];\n", m->t, m->in, sd);
    ad_buf_printf(b, "            for (e = r + 1; e < %lld && %s[at + p[e]*%lld] == xr; e++) {}\n", n, m->in, sd);
    ad_buf_puts(b, m->fl ? "            if (xr == xr && e - r > bc) { bc = e - r; bv = xr; bi = p[e - 1]; }\n        }\n"
                         : "            if (e - r > bc) { bc = e - r; bv = xr; bi = p[e - 1]; }\n        }\n");
    ad_buf_printf(b, "        %s[i] = bv;\n        %s[i] = bi;\n", m->vo, m->io);
}

/* 'want' of a kthvalue/median row (the rank to report), as emit_row's counting form. */
static void emit_want(xm *m, ad_buf *b, xm_kind kind, int64_t k) {
    long long n = (long long)m->n;
    if (kind == XM_KTH) ad_buf_printf(b, "        long want = %lld;\n", (long long)k);
    else if (!m->fl) ad_buf_printf(b, "        long want = %lld;\n", (n - 1) / 2);
    else if (kind == XM_NANMEDIAN) {
        /* the lower median of the entries that are not NaN (sorted first); all NaN: the first */
        ad_buf_printf(b, "        long want = 0;\n        for (long k = 0; k < %lld; k++) want += %s[at + k*%lld] == %s[at + k*%lld];\n",
                      n, m->in, (long long)m->sd, m->in, (long long)m->sd);
        ad_buf_puts(b, "        want = want > 0 ? (want - 1) / 2 : 0;\n");
    } else {
        /* the lower median; a row holding NaN gives its first NaN (sorted last) */
        ad_buf_printf(b, "        long want = 0;\n        for (long k = 0; k < %lld; k++) want += %s[at + k*%lld] == %s[at + k*%lld];\n",
                      n, m->in, (long long)m->sd, m->in, (long long)m->sd);
        ad_buf_printf(b, "        if (want == %lld) want = %lld;\n", n, (n - 1) / 2);
    }
}

/* A row of sort, topk, kthvalue, median or mode longer than XM_COUNT_ROW. */
static void emit_row_sorted(xm *m, ad_buf *b, xm_kind kind, int64_t k, bool desc) {
    long long n = (long long)m->n, inner = (long long)m->inner, sd = (long long)m->sd;
    if (kind == XM_MODE) { emit_mode_sorted(m, b); return; }
    if (kind == XM_SORT || kind == XM_TOPK) {
        long long kk = kind == XM_SORT ? n : (long long)k;
        emit_msort(m, b, desc);
        ad_buf_printf(b, "        for (long r = 0; r < %lld; r++) {\n", kk);
        ad_buf_printf(b, "            %s[o*%lld + r*%lld + c] = %s[at + p[r]*%lld];\n", m->vo, kk * inner, inner, m->in, sd);
        ad_buf_printf(b, "            %s[o*%lld + r*%lld + c] = p[r];\n        }\n", m->io, kk * inner, inner);
        return;
    }
    emit_want(m, b, kind, k);
    emit_msort(m, b, false);
    ad_buf_printf(b, "        %s[i] = %s[at + p[want]*%lld];\n        %s[i] = p[want];\n", m->vo, m->in, sd, m->io);
}

/* The body of one row for 'kind'. */
static void emit_row(xm *m, ad_buf *b, xm_kind kind, int64_t k, bool desc) {
    long long n = (long long)m->n, inner = (long long)m->inner;
    switch (kind) {
    case XM_MAX: case XM_MIN: emit_extreme(m, b, kind == XM_MAX); return;
    case XM_CUMMAX: case XM_CUMMIN: emit_cum(m, b, kind == XM_CUMMAX); return;
    case XM_MODE: emit_mode(m, b); return;
    case XM_SORT: case XM_TOPK: {
        long long kk = kind == XM_SORT ? n : (long long)k;
        emit_rank(m, b, desc);
        /* every rank of a sort is kept; topk keeps the first k */
        const char *in = kind == XM_SORT ? "            " : "                ";
        if (kind == XM_TOPK) ad_buf_printf(b, "            if (rk < %lld) {\n", kk);
        ad_buf_printf(b, "%s%s[o*%lld + rk*%lld + c] = xk;\n", in, m->vo, kk * inner, inner);
        ad_buf_printf(b, "%s%s[o*%lld + rk*%lld + c] = k;\n", in, m->io, kk * inner, inner);
        ad_buf_puts(b, kind == XM_TOPK ? "            }\n        }\n" : "        }\n");
        return;
    }
    case XM_KTH: case XM_MEDIAN: case XM_NANMEDIAN:
        emit_want(m, b, kind, k);
        emit_rank(m, b, false);
        ad_buf_printf(b, "            if (rk == want) { %s[i] = xk; %s[i] = k; }\n        }\n", m->vo, m->io);
        return;
    }
}

static int kind_of(int id, xm_kind *k) {
    switch (id) {
    case AD_OP_max_dim: *k = XM_MAX; return 1;
    case AD_OP_min_dim: *k = XM_MIN; return 1;
    case AD_OP_sort: *k = XM_SORT; return 1;
    case AD_OP_topk: *k = XM_TOPK; return 1;
    case AD_OP_kthvalue: *k = XM_KTH; return 1;
    case AD_OP_median_dim: *k = XM_MEDIAN; return 1;
    case AD_OP_nanmedian_dim: *k = XM_NANMEDIAN; return 1;
    case AD_OP_mode: *k = XM_MODE; return 1;
    case AD_OP_cummax: *k = XM_CUMMAX; return 1;
    case AD_OP_cummin: *k = XM_CUMMIN; return 1;
    default: return 0;
    }
}

/* Parameters (dim, k, descending) of each kind, from its op's signature. */
static int params(ad_xctx *ctx, const ad_xrec *r, xm_kind kind, int64_t *dim, int64_t *k, bool *desc) {
    double x = 0, y = 0;
    *k = 0;
    *desc = false;
    int idim = kind == XM_TOPK || kind == XM_KTH ? 2 : 1;
    if (!ad_xl_pnum(r, idim, &x)) return ad_xl_fail(ctx, "needs an int dim");
    *dim = (int64_t)x;
    if (kind == XM_TOPK || kind == XM_KTH) {
        if (!ad_xl_pnum(r, 1, &y)) return ad_xl_fail(ctx, "needs an int k");
        *k = (int64_t)y - (kind == XM_KTH ? 1 : 0);
    }
    if (kind == XM_SORT && ad_xl_pnum(r, 2, &y)) *desc = y != 0;
    if (kind == XM_TOPK) *desc = !ad_xl_pnum(r, 3, &y) || y != 0;
    return ADDSL_OK;
}

static int lower_rows(ad_xctx *ctx, const ad_xrec *r, xm_kind kind) {
    const ad_targ *out = &r->n->out;
    xm m;
    memset(&m, 0, sizeof m);
    m.ctx = ctx;
    m.src = ad_xl_pref(r, 0);
    if (m.src < 0 || out->nsub != 2 || out->sub[0].ref < 0 || out->sub[1].ref < 0)
        return ad_xl_fail(ctx, "needs a tensor input and (values, indices) outputs");
    m.vals = out->sub[0].ref;
    m.idx = out->sub[1].ref;
    m.x = &ctx->v[m.src];
    int64_t dim = 0, k = 0;
    bool desc = false;
    int rc = params(ctx, r, kind, &dim, &k, &desc);
    if (rc) return rc;
    const ad_xval *x = m.x;
    m.d = x->ndim ? (int)(dim < 0 ? dim + x->ndim : dim) : 0;
    if (x->ndim && (m.d < 0 || m.d >= x->ndim)) return ad_xl_fail(ctx, "has a dim out of range");
    m.n = x->ndim ? x->shape[m.d] : 1;
    m.sd = x->ndim ? x->st[m.d] : 0;
    m.outer = m.inner = 1;
    for (int j = 0; j < x->ndim; j++) { if (j < m.d) m.outer *= x->shape[j]; else if (j > m.d) m.inner *= x->shape[j]; }
    if (ctx->v[m.idx].dt != AD_INT64) return ad_xl_fail(ctx, "has indices that are not int64");
    m.fl = x->dt == AD_FLOAT32 || x->dt == AD_FLOAT64;
    m.t = ad_export_ctype(x->dt);
    if (ctx->v[m.vals].dt != x->dt) return ad_xl_fail(ctx, "has values of another dtype than its input");
    ad_xl_make_buf(ctx, m.vals);
    ad_xl_make_buf(ctx, m.idx);
    ad_xl_use(ctx, m.src);
    ad_export_vname(ctx, m.src, m.in, sizeof m.in);
    ad_export_vname(ctx, m.vals, m.vo, sizeof m.vo);
    ad_export_vname(ctx, m.idx, m.io, sizeof m.io);
    bool linear = kind == XM_MAX || kind == XM_MIN || kind == XM_CUMMAX || kind == XM_CUMMIN;
    bool sorted = !linear && m.n > XM_COUNT_ROW;
    ad_xl_comment(ctx, linear || !x->numel || !m.n ? NULL : sorted ? "a merge sort of each row (stable, NaN largest)"
                                              : "ranks by counting along the dim (stable, NaN largest)");
    if (x->numel == 0 || m.n == 0) {
        ad_buf_printf(ctx->body, "    (void)%s; (void)%s; /* empty */\n", m.vo, m.io);
        return ADDSL_OK;
    }
    ctx->v[ctx->v[m.src].base].read = true;
    ad_buf *b = ctx->body;
    open_rows(&m, b);
    if (sorted) emit_row_sorted(&m, b, kind, k, desc);
    else emit_row(&m, b, kind, k, desc);
    ad_buf_puts(b, "    }\n");
    return ADDSL_OK;
}

/* "off + (q / P) % S * st + ...": element q (row-major) of x in its storage. */
static void flat_offset(ad_buf *b, const ad_xval *x, const char *q) {
    ad_buf_printf(b, "%lld", (long long)x->off);
    int64_t p = 1;
    for (int j = x->ndim - 1; j >= 0; j--) {
        if (x->shape[j] != 1) {
            ad_buf_printf(b, " + (%s", q);
            if (p != 1) ad_buf_printf(b, " / %lld", (long long)p);
            if (j > 0) ad_buf_printf(b, " %% %lld", (long long)x->shape[j]);
            ad_buf_printf(b, ")*%lld", (long long)x->st[j]);
        }
        p *= x->shape[j];
    }
}

/* median_all(self): the lower median of all elements (NaN when one is NaN,
 * or when there are none); nanmedian_all: of those that are not NaN. */
static int lower_median_all(ad_xctx *ctx, const ad_xrec *r, bool nan_skip) {
    int src = ad_xl_pref(r, 0), o = r->n->out.ref;
    if (src < 0 || o < 0) return ad_xl_fail(ctx, "has no tensor input or output");
    const ad_xval *x = &ctx->v[src];
    bool fl = x->dt == AD_FLOAT32 || x->dt == AD_FLOAT64;
    if (!fl) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    const char *t = ad_export_ctype(x->dt);
    long long n = (long long)x->numel;
    bool sorted = n > XM_COUNT_ROW;
    char in[32], out[32];
    ad_xl_open1(ctx, src, o, in, out,
                sorted ? "a merge sort of the elements (stable, NaN largest)"
                       : "the rank of each element by counting (stable, NaN largest)");
    ad_buf *b = ctx->body;
    if (!n) { ad_buf_printf(b, "    %s[0] = NAN;\n", out); return ADDSL_OK; }
    ctx->v[ctx->v[src].base].read = true;
    ad_buf_puts(b, "    {\n        long want = 0;\n");
    ad_buf_printf(b, "        for (long k = 0; k < %lld; k++) { %s v = %s[", n, t, in);
    flat_offset(b, x, "k");
    ad_buf_puts(b, "]; want += v == v; }\n");
    if (nan_skip) ad_buf_puts(b, "        want = want > 0 ? (want - 1) / 2 : 0;\n");
    else ad_buf_printf(b, "        if (want == %lld) want = %lld;\n", n, (n - 1) / 2);
    if (sorted) {
        /* the elements copied in row-major order after the positions, then sorted */
        embed_msort(ctx, x->dt);
        int64_t at = msort_scratch(ctx, n, n * 8);
        ad_buf_printf(b, "        long *p = (long *)(scratch + 0), *tmp = (long *)(scratch + %lld);\n", 8 * n);
        ad_buf_printf(b, "        %s *e = (%s *)(scratch + %lld);\n", t, t, (long long)at);
        ad_buf_printf(b, "        for (long k = 0; k < %lld; k++) e[k] = %s[", n, in);
        flat_offset(b, x, "k");
        ad_buf_puts(b, "];\n");
        ad_buf_printf(b, "        xc_msort_%s(e, 1, %lld, 0, p, tmp);\n        %s[0] = e[p[want]];\n    }\n", sfx_of(x->dt), n, out);
        return ADDSL_OK;
    }
    ad_buf_printf(b, "        for (long k = 0; k < %lld; k++) {\n            %s xk = %s[", n, t, in);
    flat_offset(b, x, "k");
    ad_buf_puts(b, "];\n            long rk = 0;\n");
    ad_buf_printf(b, "            for (long j = 0; j < %lld; j++) {\n                %s xj = %s[", n, t, in);
    flat_offset(b, x, "j");
    ad_buf_puts(b, "];\n                rk += (xj < xk || (xk != xk && xj == xj)) || (j < k && !(xk < xj || (xj != xj && xk == xk)));\n");
    ad_buf_printf(b, "            }\n            if (rk == want) %s[0] = xk;\n        }\n    }\n", out);
    return ADDSL_OK;
}

/* frexp(self) -> (mantissa, exponent): C's frexp, with 0, inf and NaN kept
 * at exponent 0 (C leaves the exponent of inf and NaN unspecified). */
static int lower_frexp(ad_xctx *ctx, const ad_xrec *r) {
    const ad_targ *out = &r->n->out;
    int src = ad_xl_pref(r, 0);
    if (src < 0 || out->nsub != 2 || out->sub[0].ref < 0 || out->sub[1].ref < 0)
        return ad_xl_fail(ctx, "needs a tensor input and (mantissa, exponent) outputs");
    const ad_xval *x = &ctx->v[src];
    int mo = out->sub[0].ref, eo = out->sub[1].ref;
    if ((x->dt != AD_FLOAT32 && x->dt != AD_FLOAT64) || ctx->v[mo].dt != x->dt || ctx->v[eo].dt != AD_INT64)
        return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    ad_xl_make_buf(ctx, mo);
    ad_xl_make_buf(ctx, eo);
    ad_xl_use(ctx, src);
    char in[32], mn[32], en[32];
    ad_export_vname(ctx, src, in, sizeof in);
    ad_export_vname(ctx, mo, mn, sizeof mn);
    ad_export_vname(ctx, eo, en, sizeof en);
    ad_xl_comment(ctx, NULL);
    ad_buf *b = ctx->body;
    if (!x->numel) { ad_buf_printf(b, "    (void)%s; (void)%s; /* empty */\n", mn, en); return ADDSL_OK; }
    ctx->v[ctx->v[src].base].read = true;
    ad_buf_printf(b, "    for (long k = 0; k < %lld; k++) {\n        %s v = %s[", (long long)x->numel, ad_export_ctype(x->dt), in);
    flat_offset(b, x, "k");
    ad_buf_printf(b, "];\n        int e = 0;\n        %s[k] = isfinite(v) ? frexp%s(v, &e) : v;\n        %s[k] = e;\n    }\n", mn,
                  x->dt == AD_FLOAT32 ? "f" : "", en);
    return ADDSL_OK;
}

int ad_export_lower_multi(ad_xctx *ctx, const ad_xrec *r) {
    int id = r->n->op;
    xm_kind kind;
    if (r->n->kind != AD_TN_OP) return AD_XL_PASS;
    if (id == AD_OP_median_all && r->n->out.ref >= 0) return lower_median_all(ctx, r, false);
    if (id == AD_OP_nanmedian_all && r->n->out.ref >= 0) return lower_median_all(ctx, r, true);
    if (id == AD_OP_frexp && r->n->out.sub) return lower_frexp(ctx, r);
    if (!r->n->out.sub || !kind_of(id, &kind)) return AD_XL_PASS;
    return lower_rows(ctx, r, kind);
}

/* export/lower_eig.c: export_c's lowering of the symmetric eigendecomposition
 * (linalg_eigh, linalg_eigvalsh) and the singular value decomposition
 * (linalg_svd, linalg_svdvals) to Jacobi iterations over each matrix of a
 * batch, in double, with no allocation. The interpreter calls LAPACK
 * (syevd, gesdd); the values agree to rounding, and the vectors' signs follow
 * the rule both sides apply (builtins/bi_lapack.c's sign_flip). */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* The C helpers, each written once per file under a guard (and only those
 * the file calls: an unused static function is a warning). */
static const char sign_text[] =
    "/* The sign rule of builtins/bi_lapack.c: the first component of v (n of them,\n"
    " * stride st) larger in magnitude than 1/(2 sqrt(n)) is made positive. 1: v negated. */\n"
    "static int xc_la_signfix(double *v, long n, long st) {\n"
    "    double lim = 0.5 / sqrt((double)(n > 0 ? n : 1));\n"
    "    for (long i = 0; i < n; i++)\n"
    "        if (fabs(v[i*st]) > lim) {\n"
    "            if (v[i*st] > 0) return 0;\n"
    "            for (long j = 0; j < n; j++) v[j*st] = -v[j*st];\n"
    "            return 1;\n"
    "        }\n"
    "    return 0;\n"
    "}\n";
static const char eigh_text[] =
    "/* The eigenvalues (ascending, into w) and eigenvectors (columns of the n x n\n"
    " * 'v') of the symmetric n x n 'a' (destroyed) by cyclic Jacobi rotations: an\n"
    " * entry below 1e-17 of its diagonal pair (beneath rounding) is set to zero,\n"
    " * and a sweep that rotates nothing ends it (at most 100). */\n"
    "static void xc_la_eigh(double *a, long n, double *w, double *v) {\n"
    "    for (long i = 0; i < n*n; i++) v[i] = (i % (n + 1)) == 0;\n"
    "    for (int sweep = 0; sweep < 100; sweep++) {\n"
    "        int rotated = 0;\n"
    "        for (long p = 0; p < n - 1; p++)\n"
    "            for (long q = p + 1; q < n; q++) {\n"
    "                double apq = a[p*n + q];\n"
    "                if (apq == 0) continue;\n"
    "                if (fabs(apq) <= 1e-17 * (fabs(a[p*n + p]) + fabs(a[q*n + q]))) { a[p*n + q] = a[q*n + p] = 0; continue; }\n"
    "                rotated = 1;\n"
    "                double th = (a[q*n + q] - a[p*n + p]) / (2 * apq);\n"
    "                double t = (th >= 0 ? 1.0 : -1.0) / (fabs(th) + hypot(th, 1.0));\n"
    "                double c = 1 / sqrt(t*t + 1), s = t * c;\n"
    "                for (long k = 0; k < n; k++) {\n"
    "                    double x = a[k*n + p], y = a[k*n + q];\n"
    "                    a[k*n + p] = c*x - s*y;\n"
    "                    a[k*n + q] = s*x + c*y;\n"
    "                }\n"
    "                for (long k = 0; k < n; k++) {\n"
    "                    double x = a[p*n + k], y = a[q*n + k];\n"
    "                    a[p*n + k] = c*x - s*y;\n"
    "                    a[q*n + k] = s*x + c*y;\n"
    "                }\n"
    "                a[p*n + q] = a[q*n + p] = 0;\n"
    "                for (long k = 0; k < n; k++) {\n"
    "                    double x = v[k*n + p], y = v[k*n + q];\n"
    "                    v[k*n + p] = c*x - s*y;\n"
    "                    v[k*n + q] = s*x + c*y;\n"
    "                }\n"
    "            }\n"
    "        if (!rotated) break;\n"
    "    }\n"
    "    for (long i = 0; i < n; i++) w[i] = a[i*n + i];\n"
    "    for (long i = 0; i < n; i++) {\n"
    "        long m = i;\n"
    "        for (long j = i + 1; j < n; j++) if (w[j] < w[m]) m = j;\n"
    "        if (m != i) {\n"
    "            double t = w[i]; w[i] = w[m]; w[m] = t;\n"
    "            for (long k = 0; k < n; k++) { t = v[k*n + i]; v[k*n + i] = v[k*n + m]; v[k*n + m] = t; }\n"
    "        }\n"
    "        xc_la_signfix(v + i, n, n);\n"
    "    }\n"
    "}\n";
static const char svd_text[] =
    "/* One-sided Jacobi (Hestenes) on the columns of the m x n 'u' (m >= n; A in,\n"
    " * U out), with the n x n 'v' accumulating the rotations until every pair of\n"
    " * columns is orthogonal to 1e-15 (at most 100 sweeps): A = U diag(s) V^T,\n"
    " * s descending, U's columns by the sign rule (V's follow). */\n"
    "static void xc_la_svd_tall(double *u, long m, long n, double *s, double *v) {\n"
    "    for (long i = 0; i < n*n; i++) v[i] = (i % (n + 1)) == 0;\n"
    "    for (int sweep = 0; sweep < 100; sweep++) {\n"
    "        int rotated = 0;\n"
    "        for (long p = 0; p < n - 1; p++)\n"
    "            for (long q = p + 1; q < n; q++) {\n"
    "                double al = 0, be = 0, ga = 0;\n"
    "                for (long k = 0; k < m; k++) { al += u[k*n + p] * u[k*n + p]; be += u[k*n + q] * u[k*n + q]; ga += u[k*n + p] * u[k*n + q]; }\n"
    "                if (ga == 0 || !(fabs(ga) > 1e-15 * sqrt(al * be))) continue;\n"
    "                rotated = 1;\n"
    "                double ze = (be - al) / (2 * ga);\n"
    "                double t = (ze >= 0 ? 1.0 : -1.0) / (fabs(ze) + hypot(ze, 1.0));\n"
    "                double c = 1 / sqrt(t*t + 1), sn = t * c;\n"
    "                for (long k = 0; k < m; k++) {\n"
    "                    double x = u[k*n + p], y = u[k*n + q];\n"
    "                    u[k*n + p] = c*x - sn*y;\n"
    "                    u[k*n + q] = sn*x + c*y;\n"
    "                }\n"
    "                for (long k = 0; k < n; k++) {\n"
    "                    double x = v[k*n + p], y = v[k*n + q];\n"
    "                    v[k*n + p] = c*x - sn*y;\n"
    "                    v[k*n + q] = sn*x + c*y;\n"
    "                }\n"
    "            }\n"
    "        if (!rotated) break;\n"
    "    }\n"
    "    for (long j = 0; j < n; j++) {\n"
    "        double z = 0;\n"
    "        for (long k = 0; k < m; k++) z += u[k*n + j] * u[k*n + j];\n"
    "        s[j] = sqrt(z);\n"
    "        if (s[j] > 0) for (long k = 0; k < m; k++) u[k*n + j] /= s[j];\n"
    "    }\n"
    "    for (long i = 0; i < n; i++) {\n"
    "        long b = i;\n"
    "        for (long j = i + 1; j < n; j++) if (s[j] > s[b]) b = j;\n"
    "        if (b != i) {\n"
    "            double t = s[i]; s[i] = s[b]; s[b] = t;\n"
    "            for (long k = 0; k < m; k++) { t = u[k*n + i]; u[k*n + i] = u[k*n + b]; u[k*n + b] = t; }\n"
    "            for (long k = 0; k < n; k++) { t = v[k*n + i]; v[k*n + i] = v[k*n + b]; v[k*n + b] = t; }\n"
    "        }\n"
    "        if (xc_la_signfix(u + i, m, n)) for (long k = 0; k < n; k++) v[k*n + i] = -v[k*n + i];\n"
    "    }\n"
    "}\n";

static void need(ad_xctx *ctx, const char *guard, const char *text) {
    ad_buf *d = ctx->prelude;
    if (d->data && strstr(d->data, guard)) return;
    ad_buf_printf(d, "\n#ifndef %s\n#define %s\n%s#endif\n", guard, guard, text);
}

static void need_text(ad_xctx *ctx, bool svd) {
    need(ctx, "XC_LA_SIGNFIX", sign_text);
    if (svd) need(ctx, "XC_LA_SVD", svd_text);
    else need(ctx, "XC_LA_EIGH", eigh_text);
}

static int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }

/* One record: its operand A (the last two dims a matrix, the others a batch,
 * which the outputs share) and the C names. */
typedef struct xeig {
    ad_xctx *ctx;
    int a;
    int64_t m, n, nb, scr;
    char an[32];
} xeig;

static int begin(ad_xctx *ctx, const ad_xrec *r, xeig *x) {
    memset(x, 0, sizeof *x);
    x->ctx = ctx;
    x->a = ad_xl_pref(r, 0);
    if (x->a < 0) return ad_xl_fail(ctx, "needs a tensor A");
    const ad_xval *A = &ctx->v[x->a];
    if (A->ndim < 2) return ad_xl_fail(ctx, "needs a matrix (or a batch of them)");
    if (A->dt != AD_FLOAT32 && A->dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    x->m = A->shape[A->ndim - 2];
    x->n = A->shape[A->ndim - 1];
    x->nb = 1;
    for (int j = 0; j < A->ndim - 2; j++) x->nb *= A->shape[j];
    ad_export_vname(ctx, x->a, x->an, sizeof x->an);
    ad_xl_use(ctx, x->a);
    return ADDSL_OK;
}

/* 'double *name' of n elements in the scratch. */
static void scratch(xeig *x, const char *name, int64_t n) {
    ad_buf_printf(x->ctx->body, "        double *%s = (double *)(scratch + %lld);\n", name, (long long)x->scr);
    x->scr += align16((n ? n : 1) * 8);
}

/* Opens the batch loop with matrix 'bi' of A in the m x n double array 'a'
 * (transposed when tr); for eigh, the triangle read mirrored. */
static void open_load(xeig *x, bool tr, int tri) {
    ad_buf *b = x->ctx->body;
    const ad_xval *A = &x->ctx->v[x->a];
    x->ctx->v[A->base].read = true;
    int nd = A->ndim;
    int64_t sr = A->st[nd - 2], sc = A->st[nd - 1];
    ad_buf_printf(b, "        for (long bi = 0; bi < %lld; bi++) {\n", (long long)x->nb);
    ad_buf_printf(b, "            long at = %lld;\n            { long q = bi;", (long long)A->off);
    for (int j = nd - 3; j >= 0; j--)
        ad_buf_printf(b, " at += (q %% %lld) * %lld; q /= %lld;", (long long)A->shape[j], (long long)A->st[j], (long long)A->shape[j]);
    ad_buf_puts(b, " (void)q; }\n");
    long long m = (long long)x->m, n = (long long)x->n;
    if (tri)
        ad_buf_printf(b, "            for (long i = 0; i < %lld; i++) for (long j = 0; j < %lld; j++)\n"
                         "                a[i*%lld + j] = %s[at + (%s)*%lld + (%s)*%lld];\n",
                      n, n, n, x->an, tri > 0 ? "i >= j ? i : j" : "i <= j ? i : j", (long long)sr,
                      tri > 0 ? "i >= j ? j : i" : "i <= j ? j : i", (long long)sc);
    else if (!tr)
        ad_buf_printf(b, "            for (long i = 0; i < %lld; i++) for (long j = 0; j < %lld; j++) a[i*%lld + j] = %s[at + i*%lld + j*%lld];\n",
                      m, n, n, x->an, (long long)sr, (long long)sc);
    else
        ad_buf_printf(b, "            for (long i = 0; i < %lld; i++) for (long j = 0; j < %lld; j++) a[j*%lld + i] = %s[at + i*%lld + j*%lld];\n",
                      m, n, m, x->an, (long long)sr, (long long)sc);
}

static int out_of(ad_xctx *ctx, const ad_xrec *r, int k, int nout, int *o) {
    const ad_targ *t = &r->n->out;
    if (nout == 1) { *o = t->ref; return *o >= 0 ? ADDSL_OK : ad_xl_fail(ctx, "needs one tensor output"); }
    if (!t->sub || t->nsub != nout) return ad_xl_fail(ctx, "needs its tuple of outputs");
    *o = t->sub[k].ref;
    return ADDSL_OK;
}

static void close_all(xeig *x) {
    ad_buf_puts(x->ctx->body, "        }\n    }\n");
    if (x->scr > x->ctx->scratch) x->ctx->scratch = x->scr;
}

static void finish_empty(xeig *x, const int *outs, int nout) {
    ad_buf *b = x->ctx->body;
    if (x->ctx->v[x->ctx->v[x->a].base].kind != AD_XV_CONST) ad_buf_printf(b, "        (void)%s;\n", x->an);
    for (int k = 0; k < nout; k++) {
        if (outs[k] < 0) continue;
        char on[32];
        ad_export_vname(x->ctx, outs[k], on, sizeof on);
        ad_buf_printf(b, "        (void)%s; /* empty */\n", on);
    }
    ad_buf_puts(b, "    }\n");
}

/* "for i < rows, j < cols: OUT[bi*rows*cols + i*cols + j] = (T)EXPR;" */
static void store(xeig *x, int ref, int64_t rows, int64_t cols, const char *expr) {
    if (ref < 0) return;
    char on[32];
    ad_export_vname(x->ctx, ref, on, sizeof on);
    ad_buf_printf(x->ctx->body, "            for (long i = 0; i < %lld; i++) for (long j = 0; j < %lld; j++) %s[bi*%lld + i*%lld + j] = (%s)(%s);\n",
                  (long long)rows, (long long)cols, on, (long long)(rows * cols), (long long)cols,
                  ad_export_ctype(x->ctx->v[ref].dt), expr);
}

/* linalg_eigh(A, UPLO) -> (eigenvalues, eigenvectors); linalg_eigvalsh(A, UPLO). */
static int lower_eigh(ad_xctx *ctx, const ad_xrec *r, bool vectors) {
    xeig x;
    int rc = begin(ctx, r, &x);
    if (rc) return rc;
    if (x.m != x.n) return ad_xl_fail(ctx, "needs square matrices");
    ad_value ul = ad_xl_pconst(r, 1);
    bool lower = true;
    if (ul.t == AD_TSTR) lower = ul.u.s->data[0] == 'L' || ul.u.s->data[0] == 'l';
    else if (ul.t != AD_TNONE) return ad_xl_fail(ctx, "needs UPLO \"L\" or \"U\"");
    int outs[2] = {-1, -1}, nout = vectors ? 2 : 1;
    for (int k = 0; k < nout; k++) if ((rc = out_of(ctx, r, k, nout, &outs[k]))) return rc;
    for (int k = 0; k < nout; k++) if (outs[k] >= 0) ad_xl_make_buf(ctx, outs[k]);
    need_text(ctx, false);
    ad_xl_comment(ctx, lower ? "cyclic Jacobi rotations of the lower triangle mirrored (xc_la_eigh)"
                             : "cyclic Jacobi rotations of the upper triangle mirrored (xc_la_eigh)");
    ad_buf_puts(ctx->body, "    {\n");
    int64_t n = x.n;
    if (!x.nb || !n) { finish_empty(&x, outs, nout); return ADDSL_OK; }
    scratch(&x, "a", n * n);
    scratch(&x, "w", n);
    scratch(&x, "v", n * n);
    open_load(&x, false, lower ? 1 : -1);
    ad_buf_printf(ctx->body, "            xc_la_eigh(a, %lld, w, v);\n", (long long)n);
    store(&x, outs[0], 1, n, "w[j]");
    if (vectors) {
        char e[48];
        snprintf(e, sizeof e, "v[i*%lld + j]", (long long)n);
        store(&x, outs[1], n, n, e);
    }
    close_all(&x);
    return ADDSL_OK;
}

/* linalg_svd(A, full_matrices) -> (U, S, Vh); linalg_svdvals(A). A wide
 * matrix is factored as its transpose, whose U and V are A's V and U. */
static int lower_svd(ad_xctx *ctx, const ad_xrec *r, bool vectors) {
    xeig x;
    int rc = begin(ctx, r, &x);
    if (rc) return rc;
    int64_t m = x.m, n = x.n, k = m < n ? m : n;
    bool wide = m < n;
    if (vectors) {
        ad_value fm = ad_xl_pconst(r, 1);
        bool full = fm.t == AD_TNONE || (fm.t == AD_TBOOL && fm.u.b) || (ad_is_number(fm) && fm.u.n != 0);
        if (full && m != n)
            return ad_xl_fail(ctx, "with full_matrices=true on a non-square matrix has basis vectors past min(m, n) that are LAPACK's arbitrary completion, which no other algorithm reproduces (use full_matrices=false)");
    }
    int outs[3] = {-1, -1, -1}, nout = vectors ? 3 : 1;
    for (int j = 0; j < nout; j++) if ((rc = out_of(ctx, r, j, nout, &outs[j]))) return rc;
    for (int j = 0; j < nout; j++) if (outs[j] >= 0) ad_xl_make_buf(ctx, outs[j]);
    need_text(ctx, true);
    ad_xl_comment(ctx, wide ? "one-sided Jacobi rotations of the transpose's columns (xc_la_svd_tall)"
                            : "one-sided Jacobi rotations of the columns (xc_la_svd_tall)");
    ad_buf_puts(ctx->body, "    {\n");
    if (!x.nb || !k) {
        /* the empty factors; a matrix with no rows or columns has none */
        finish_empty(&x, outs, nout);
        return ADDSL_OK;
    }
    int64_t tm = wide ? n : m;   /* the tall matrix factored: tm x k */
    scratch(&x, "a", tm * k);
    scratch(&x, "s", k);
    scratch(&x, "v", k * k);
    open_load(&x, wide, 0);
    ad_buf_printf(ctx->body, "            xc_la_svd_tall(a, %lld, %lld, s, v);\n", (long long)tm, (long long)k);
    if (wide) {
        /* A^T = U' S V'^T: A's U is V' (k x k), its Vh is U'^T (k x n); the sign
         * rule is on A's U, which the tall factor gave to V' */
        ad_buf_printf(ctx->body, "            for (long j = 0; j < %lld; j++)\n"
                                 "                if (xc_la_signfix(v + j, %lld, %lld)) for (long i = 0; i < %lld; i++) a[i*%lld + j] = -a[i*%lld + j];\n",
                      (long long)k, (long long)k, (long long)k, (long long)tm, (long long)k, (long long)k);
    }
    store(&x, outs[vectors ? 1 : 0], 1, k, "s[j]");
    if (vectors) {
        char eu[48], ev[48];
        if (!wide) {
            snprintf(eu, sizeof eu, "a[i*%lld + j]", (long long)k);
            snprintf(ev, sizeof ev, "v[j*%lld + i]", (long long)k);
        } else {
            snprintf(eu, sizeof eu, "v[i*%lld + j]", (long long)k);
            snprintf(ev, sizeof ev, "a[j*%lld + i]", (long long)k);
        }
        store(&x, outs[0], m, k, eu);
        store(&x, outs[2], k, n, ev);
    }
    close_all(&x);
    return ADDSL_OK;
}

int ad_export_lower_eig(ad_xctx *ctx, const ad_xrec *r) {
    int id = ad_xl_op_id(r->n);
    if (id == AD_OP__NONE) return AD_XL_PASS;
    bool multi = r->n->out.sub != NULL;
    if (multi && id == AD_OP_linalg_eigh) return lower_eigh(ctx, r, true);
    if (!multi && id == AD_OP_linalg_eigvalsh) return lower_eigh(ctx, r, false);
    if (multi && id == AD_OP_linalg_svd) return lower_svd(ctx, r, true);
    if (!multi && id == AD_OP_linalg_svdvals) return lower_svd(ctx, r, false);
    return AD_XL_PASS;
}

/* export/lower_linalg.c: export_c's lowering of small dense linear algebra (det,
 * inverse, solve, triangular solve, slogdet, cholesky, lu_factor, qr) to
 * loops over each matrix of a batch, in double, with no allocation. */
#include "export/lower.h"

#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* The helpers the generated code calls, written once per file (under a guard
 * that lets several exported files share a translation unit). They work in
 * double on row-major matrices in the scratch, as the interpreter hands
 * LAPACK double copies and rounds float32 results once at the end. */
typedef struct xla_helper {
    const char *guard;
    int dep;                    /* a helper this one calls, -1 none */
    const char *text;
} xla_helper;

enum { XH_LU, XH_LUSOLVE, XH_DET, XH_INV, XH_TRSOLVE, XH_CHOL, XH_QR, XH_EXPM };

static const xla_helper helpers[] = {
    [XH_LU] = {"XC_LA_LU", -1,
        "/* LU with partial pivoting of the m x n row-major 'a' in place (LAPACK's getf2):\n"
        " * L (unit diagonal) below, U on and above; row j was swapped with row piv[j].\n"
        " * Returns 0, or 1 + the first column whose pivot is exactly zero. */\n"
        "static long xc_la_lu(double *a, long m, long n, long *piv) {\n"
        "    long k = m < n ? m : n, info = 0;\n"
        "    for (long j = 0; j < k; j++) {\n"
        "        long p = j;\n"
        "        double best = fabs(a[j*n + j]);\n"
        "        for (long i = j + 1; i < m; i++) if (fabs(a[i*n + j]) > best) { best = fabs(a[i*n + j]); p = i; }\n"
        "        piv[j] = p;\n"
        "        if (a[p*n + j] != 0) {\n"
        "            if (p != j) for (long c = 0; c < n; c++) { double t = a[j*n + c]; a[j*n + c] = a[p*n + c]; a[p*n + c] = t; }\n"
        "            for (long i = j + 1; i < m; i++) a[i*n + j] /= a[j*n + j];\n"
        "        } else if (!info) info = j + 1;\n"
        "        for (long i = j + 1; i < m; i++)\n"
        "            for (long c = j + 1; c < n; c++) a[i*n + c] -= a[i*n + j] * a[j*n + c];\n"
        "    }\n"
        "    return info;\n"
        "}\n"},
    [XH_LUSOLVE] = {"XC_LA_LUSOLVE", XH_LU,
        "/* Solves A X = B in place in the n x k 'b', given xc_la_lu's factors of A. */\n"
        "static void xc_la_lusolve(const double *a, long n, const long *piv, double *b, long k) {\n"
        "    for (long j = 0; j < n; j++)\n"
        "        if (piv[j] != j) for (long c = 0; c < k; c++) { double t = b[j*k + c]; b[j*k + c] = b[piv[j]*k + c]; b[piv[j]*k + c] = t; }\n"
        "    for (long i = 0; i < n; i++)\n"
        "        for (long j = 0; j < i; j++) for (long c = 0; c < k; c++) b[i*k + c] -= a[i*n + j] * b[j*k + c];\n"
        "    for (long i = n - 1; i >= 0; i--) {\n"
        "        for (long j = i + 1; j < n; j++) for (long c = 0; c < k; c++) b[i*k + c] -= a[i*n + j] * b[j*k + c];\n"
        "        for (long c = 0; c < k; c++) b[i*k + c] /= a[i*n + i];\n"
        "    }\n"
        "}\n"},
    [XH_DET] = {"XC_LA_DET", XH_LU,
        "/* The determinant of the n x n 'a' (destroyed) as sign and log|det|, and as a product. */\n"
        "static double xc_la_det(double *a, long n, long *piv, double *sign, double *logabs) {\n"
        "    double s = 1, l = 0, p = 1;\n"
        "    xc_la_lu(a, n, n, piv);\n"
        "    for (long i = 0; i < n; i++) {\n"
        "        double u = a[i*n + i];\n"
        "        if (piv[i] != i) { s = -s; p = -p; }\n"
        "        if (u < 0) s = -s;\n"
        "        l += log(fabs(u));\n"
        "        p *= u;\n"
        "    }\n"
        "    *sign = p == 0 ? 0 : s;\n"
        "    *logabs = l;\n"
        "    return p;\n"
        "}\n"},
    [XH_INV] = {"XC_LA_INV", XH_LUSOLVE,
        "/* The inverse of the n x n 'a' (destroyed) into 'x'; singular: inf or nan. */\n"
        "static void xc_la_inv(double *a, long n, long *piv, double *x) {\n"
        "    xc_la_lu(a, n, n, piv);\n"
        "    for (long i = 0; i < n; i++) for (long j = 0; j < n; j++) x[i*n + j] = i == j;\n"
        "    xc_la_lusolve(a, n, piv, x, n);\n"
        "}\n"},
    [XH_TRSOLVE] = {"XC_LA_TRSOLVE", -1,
        "/* Solves A X = B in place in the n x k 'b' for the upper or lower triangle of\n"
        " * the n x n 'a' (its diagonal taken as ones when unit), as LAPACK's trsm. */\n"
        "static void xc_la_trsolve(const double *a, long n, double *b, long k, int upper, int unit) {\n"
        "    for (long s = 0; s < n; s++) {\n"
        "        long i = upper ? n - 1 - s : s;\n"
        "        long lo = upper ? i + 1 : 0, hi = upper ? n : i;\n"
        "        for (long j = lo; j < hi; j++) for (long c = 0; c < k; c++) b[i*k + c] -= a[i*n + j] * b[j*k + c];\n"
        "        if (!unit) for (long c = 0; c < k; c++) b[i*k + c] /= a[i*n + i];\n"
        "    }\n"
        "}\n"},
    [XH_CHOL] = {"XC_LA_CHOL", -1,
        "/* The Cholesky factor L of the n x n 'a' (its lower triangle read) in place,\n"
        " * zeros above; returns 0, or the order of the first leading minor that is not\n"
        " * positive-definite (L is not valid then). */\n"
        "static long xc_la_chol(double *a, long n) {\n"
        "    long info = 0;\n"
        "    for (long j = 0; j < n; j++) {\n"
        "        double d = a[j*n + j];\n"
        "        for (long c = 0; c < j; c++) d -= a[j*n + c] * a[j*n + c];\n"
        "        if (!(d > 0) && !info) info = j + 1;\n"
        "        d = sqrt(d);\n"
        "        a[j*n + j] = d;\n"
        "        for (long i = j + 1; i < n; i++) {\n"
        "            double s = a[i*n + j];\n"
        "            for (long c = 0; c < j; c++) s -= a[i*n + c] * a[j*n + c];\n"
        "            a[i*n + j] = s / d;\n"
        "        }\n"
        "        for (long i = 0; i < j; i++) a[i*n + j] = 0;\n"
        "    }\n"
        "    return info;\n"
        "}\n"},
    [XH_QR] = {"XC_LA_QR", -1,
        "/* Householder QR of the m x n 'a' in place (LAPACK's geqr2: R on and above the\n"
        " * diagonal, the reflectors' vectors below, their scales in 'tau'), then Q's\n"
        " * first qc columns into the m x qc 'q' (orgqr) unless q is null. */\n"
        "static void xc_la_qr(double *a, long m, long n, double *tau, double *q, long qc) {\n"
        "    long k = m < n ? m : n;\n"
        "    for (long j = 0; j < k; j++) {\n"
        "        double alpha = a[j*n + j], xn = 0;\n"
        "        for (long i = j + 1; i < m; i++) xn += a[i*n + j] * a[i*n + j];\n"
        "        tau[j] = 0;\n"
        "        if (xn == 0) continue;\n"
        "        double beta = -copysign(hypot(alpha, sqrt(xn)), alpha);\n"
        "        tau[j] = (beta - alpha) / beta;\n"
        "        for (long i = j + 1; i < m; i++) a[i*n + j] *= 1 / (alpha - beta);\n"
        "        a[j*n + j] = beta;\n"
        "        for (long c = j + 1; c < n; c++) {\n"
        "            double w = a[j*n + c];\n"
        "            for (long i = j + 1; i < m; i++) w += a[i*n + j] * a[i*n + c];\n"
        "            w *= tau[j];\n"
        "            a[j*n + c] -= w;\n"
        "            for (long i = j + 1; i < m; i++) a[i*n + c] -= w * a[i*n + j];\n"
        "        }\n"
        "    }\n"
        "    if (!q) return;\n"
        "    for (long i = 0; i < m; i++) for (long c = 0; c < qc; c++) q[i*qc + c] = i == c;\n"
        "    for (long j = k - 1; j >= 0; j--) {\n"
        "        if (tau[j] == 0) continue;\n"
        "        for (long c = 0; c < qc; c++) {\n"
        "            double w = q[j*qc + c];\n"
        "            for (long i = j + 1; i < m; i++) w += a[i*n + j] * q[i*qc + c];\n"
        "            w *= tau[j];\n"
        "            q[j*qc + c] -= w;\n"
        "            for (long i = j + 1; i < m; i++) q[i*qc + c] -= w * a[i*n + j];\n"
        "        }\n"
        "    }\n"
        "}\n"},
    [XH_EXPM] = {"XC_LA_EXPM", -1,
        "/* The n x n product c = a b (c apart from a and b), summed in k's order. */\n"
        "static void xc_la_mm(const double *a, const double *b, double *c, long n) {\n"
        "    for (long i = 0; i < n; i++)\n"
        "        for (long j = 0; j < n; j++) {\n"
        "            double s = 0;\n"
        "            for (long k = 0; k < n; k++) s += a[i*n + k] * b[k*n + j];\n"
        "            c[i*n + j] = s;\n"
        "        }\n"
        "}\n"
        "/* The largest column sum of |a| (the 1-norm), at least 'm'. */\n"
        "static double xc_la_norm1(const double *a, long n, double m) {\n"
        "    for (long j = 0; j < n; j++) {\n"
        "        double s = 0;\n"
        "        for (long i = 0; i < n; i++) s += fabs(a[i*n + j]);\n"
        "        if (s > m) m = s;\n"
        "    }\n"
        "    return m;\n"
        "}\n"
        "/* exp(a) into e as lib/linalg_factor.ad's rs_matrix_exp_fwd: a scaled by 2^-s,\n"
        " * Taylor terms to degree 'deg', then s squarings (t, u: n x n room). */\n"
        "static void xc_la_expm(const double *a, long n, long s, int deg, double *e, double *t, double *u) {\n"
        "    double sc = 1;\n"
        "    for (long k = 0; k < s; k++) sc *= 2;\n"
        "    for (long i = 0; i < n * n; i++) e[i] = t[i] = (i % (n + 1)) == 0;\n"
        "    for (int k = 1; k <= deg; k++) {\n"
        "        for (long i = 0; i < n; i++)\n"
        "            for (long j = 0; j < n; j++) {\n"
        "                double v = 0;\n"
        "                for (long q = 0; q < n; q++) v += t[i*n + q] * (a[q*n + j] / sc);\n"
        "                u[i*n + j] = v / k;\n"
        "            }\n"
        "        for (long i = 0; i < n * n; i++) { t[i] = u[i]; e[i] += u[i]; }\n"
        "    }\n"
        "    for (long k = 0; k < s; k++) {\n"
        "        xc_la_mm(e, e, u, n);\n"
        "        for (long i = 0; i < n * n; i++) e[i] = u[i];\n"
        "    }\n"
        "}\n"},
};

static void need(ad_xctx *ctx, int h) {
    ad_buf *d = ctx->prelude;
    if (d->data && strstr(d->data, helpers[h].guard)) return;
    if (helpers[h].dep >= 0) need(ctx, helpers[h].dep);
    ad_buf_printf(d, "\n#ifndef %s\n#define %s\n%s#endif\n", helpers[h].guard, helpers[h].guard, helpers[h].text);
}

/* A matrix operand: the last two dims (rows x cols, or a vector as n x 1) of
 * a value, its batch dims aligned right with the record's batch. */
typedef struct xmat {
    int ref;
    int nbd;                    /* its batch dims */
    int64_t bsh[AD_MAX_DIMS], bst[AD_MAX_DIMS];
    int64_t r, c, sr, sc, off;
    char nm[32];
} xmat;

/* One record: the batch the outputs share and the scratch taken so far. */
typedef struct xla {
    ad_xctx *ctx;
    ad_buf *b;
    int nbd;
    int64_t bsh[AD_MAX_DIMS], nb;
    int64_t scr;
    char ins[2][32];            /* the operands, voided when the record is empty */
    int nins;
} xla;

/* lib/linalg_factor.ad's RS_EXPM_DEGREE. */
#define XLA_EXPM_DEGREE 18

static int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }

static int mat_of(xla *x, int ref, bool vec, bool tr, xmat *m) {
    ad_xctx *ctx = x->ctx;
    if (ref < 0) return ad_xl_fail(ctx, "needs tensor operands");
    const ad_xval *v = &ctx->v[ref];
    int core = vec ? 1 : 2;
    if (v->ndim < core) return ad_xl_fail(ctx, "needs a matrix operand");
    if (v->dt != AD_FLOAT32 && v->dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    memset(m, 0, sizeof *m);
    m->ref = ref;
    m->nbd = v->ndim - core;
    for (int j = 0; j < m->nbd; j++) { m->bsh[j] = v->shape[j]; m->bst[j] = v->st[j]; }
    int d = v->ndim - core;
    m->r = v->shape[d];
    m->sr = v->st[d];
    m->c = vec ? 1 : v->shape[d + 1];
    m->sc = vec ? 0 : v->st[d + 1];
    if (tr) {
        int64_t t = m->r; m->r = m->c; m->c = t;
        t = m->sr; m->sr = m->sc; m->sc = t;
    }
    m->off = v->off;
    ad_export_vname(ctx, ref, m->nm, sizeof m->nm);
    if (x->nins < 2) snprintf(x->ins[x->nins++], sizeof x->ins[0], "%s", m->nm);
    ad_xl_use(ctx, ref);
    if (v->numel) ctx->v[v->base].read = true;
    return ADDSL_OK;
}

/* The record's batch: the operands' batch shapes broadcast. */
static int batch_of(xla *x, const xmat *ms, int n) {
    x->nbd = 0;
    for (int k = 0; k < n; k++) if (ms[k].nbd > x->nbd) x->nbd = ms[k].nbd;
    for (int j = 0; j < x->nbd; j++) x->bsh[j] = 1;
    for (int k = 0; k < n; k++)
        for (int j = 0; j < ms[k].nbd; j++) {
            int64_t s = ms[k].bsh[j], *t = &x->bsh[x->nbd - ms[k].nbd + j];
            if (s != 1 && *t != 1 && s != *t) return ad_xl_fail(x->ctx, "has batch dims that do not broadcast");
            if (s != 1) *t = s;
        }
    x->nb = 1;
    for (int j = 0; j < x->nbd; j++) x->nb *= x->bsh[j];
    return ADDSL_OK;
}

/* 'double *name' (or 'long *name') of n elements in the scratch. */
static void scratch(xla *x, const char *type, const char *name, int64_t n) {
    ad_buf_printf(x->b, "        %s *%s = (%s *)(scratch + %lld);\n", type, name, type, (long long)x->scr);
    x->scr += align16((n ? n : 1) * 8);
}

/* Inside the batch loop: matrix 'bi' of m into the double array 'name'. */
static void load(xla *x, const xmat *m, const char *name) {
    ad_buf *b = x->b;
    ad_buf_printf(b, "            { long at = %lld", (long long)m->off);
    int64_t p = 1;
    for (int j = x->nbd - 1; j >= 0; j--) {
        int k = j - (x->nbd - m->nbd);
        if (k >= 0 && m->bsh[k] != 1 && m->bst[k])
            ad_buf_printf(b, " + (bi / %lld %% %lld)*%lld", (long long)p, (long long)x->bsh[j], (long long)m->bst[k]);
        p *= x->bsh[j];
    }
    ad_buf_printf(b, ";\n              for (long i = 0; i < %lld; i++) for (long j = 0; j < %lld; j++) %s[i*%lld + j] = %s[at + i*%lld + j*%lld]; }\n",
                  (long long)m->r, (long long)m->c, name, (long long)m->c, m->nm, (long long)m->sr, (long long)m->sc);
}

/* Inside the batch loop: the r x c double array 'name' (read transposed when
 * tr) into batch entry 'bi' of output value 'ref', in its dtype. */
static void store(xla *x, int ref, const char *name, int64_t r, int64_t c, bool tr) {
    char on[32];
    ad_export_vname(x->ctx, ref, on, sizeof on);
    const char *t = ad_export_ctype(x->ctx->v[ref].dt);
    long long rr = (long long)r, cc = (long long)c;
    if (!tr)
        ad_buf_printf(x->b, "            for (long i = 0; i < %lld; i++) %s[bi*%lld + i] = (%s)%s[i];\n", rr * cc, on, rr * cc, t, name);
    else
        ad_buf_printf(x->b, "            for (long i = 0; i < %lld; i++) for (long j = 0; j < %lld; j++) %s[bi*%lld + i*%lld + j] = (%s)%s[j*%lld + i];\n",
                      cc, rr, on, rr * cc, rr, t, name, cc);
}

static void open_batch(xla *x) { ad_buf_printf(x->b, "        for (long bi = 0; bi < %lld; bi++) {\n", (long long)x->nb); }
static void close_all(xla *x) {
    ad_buf_puts(x->b, "        }\n    }\n");
    if (x->scr > x->ctx->scratch) x->ctx->scratch = x->scr;
}

static bool pbool(const ad_xrec *r, int i, bool *v) {
    ad_value c = ad_xl_pconst(r, i);
    if (c.t != AD_TBOOL) return false;
    *v = c.u.b;
    return true;
}

/* Starts the record: outputs made, comment, block, nothing to do when empty. */
static bool begin(xla *x, const int *outs, int nout, const char *what) {
    for (int k = 0; k < nout; k++) ad_xl_make_buf(x->ctx, outs[k]);
    ad_xl_comment(x->ctx, what);
    ad_buf_puts(x->b, "    {\n");
    return x->nb > 0;
}

static int finish_empty(xla *x, const int *outs, int nout) {
    for (int k = 0; k < x->nins; k++) ad_buf_printf(x->b, "        (void)%s;\n", x->ins[k]);
    for (int k = 0; k < nout; k++) {
        char on[32];
        ad_export_vname(x->ctx, outs[k], on, sizeof on);
        ad_buf_printf(x->b, "        (void)%s; /* empty */\n", on);
    }
    ad_buf_puts(x->b, "    }\n");
    return ADDSL_OK;
}

static void init(xla *x, ad_xctx *ctx) {
    memset(x, 0, sizeof *x);
    x->ctx = ctx;
    x->b = ctx->body;
}

static int square(xla *x, const xmat *a) {
    return a->r == a->c ? ADDSL_OK : ad_xl_fail(x->ctx, "needs square matrices");
}

/* det, slogdet (sign, logabsdet) and the inverse, from one LU per matrix. */
static int lower_det_inv(ad_xctx *ctx, const ad_xrec *r, int kind) {
    xla x;
    init(&x, ctx);
    xmat a;
    int rc = mat_of(&x, ad_xl_pref(r, 0), false, false, &a);
    if (!rc) rc = square(&x, &a);
    if (!rc) rc = batch_of(&x, &a, 1);
    if (rc) return rc;
    int outs[2] = {-1, -1}, nout = kind == 1 ? 2 : 1;
    if (kind == 1) {
        const ad_targ *o = &r->n->out;
        if (o->nsub != 2 || o->sub[0].ref < 0 || o->sub[1].ref < 0) return ad_xl_fail(ctx, "needs (sign, logabsdet) outputs");
        outs[0] = o->sub[0].ref;
        outs[1] = o->sub[1].ref;
    } else {
        if (r->n->out.ref < 0) return ad_xl_fail(ctx, "needs one tensor output");
        outs[0] = r->n->out.ref;
    }
    need(ctx, kind == 2 ? XH_INV : XH_DET);
    int64_t n = a.r;
    if (!begin(&x, outs, nout, kind == 2 ? "LU with partial pivoting, then n solves (xc_la_inv)" : "LU with partial pivoting (xc_la_det)"))
        return finish_empty(&x, outs, nout);
    scratch(&x, "double", "a", n * n);
    scratch(&x, "long", "piv", n);
    if (kind == 2) scratch(&x, "double", "xi", n * n);
    open_batch(&x);
    load(&x, &a, "a");
    char o0[32], o1[32];
    ad_export_vname(ctx, outs[0], o0, sizeof o0);
    const char *t = ad_export_ctype(ctx->v[outs[0]].dt);
    if (kind == 0) {
        ad_buf_printf(x.b, "            double s, l;\n            %s[bi] = (%s)xc_la_det(a, %lld, piv, &s, &l);\n", o0, t, (long long)n);
    } else if (kind == 1) {
        ad_export_vname(ctx, outs[1], o1, sizeof o1);
        ad_buf_printf(x.b, "            double s, l;\n            (void)xc_la_det(a, %lld, piv, &s, &l);\n", (long long)n);
        ad_buf_printf(x.b, "            %s[bi] = (%s)s;\n            %s[bi] = (%s)l;\n", o0, t, o1, t);
    } else {
        ad_buf_printf(x.b, "            xc_la_inv(a, %lld, piv, xi);\n", (long long)n);
        store(&x, outs[0], "xi", n, n, false);
    }
    close_all(&x);
    return ADDSL_OK;
}

/* linalg_solve(A, B): B a batch of vectors when it has one dim fewer than A
 * with A's leading sizes (or is 1-D), as the interpreter reads it. */
static int lower_solve(ad_xctx *ctx, const ad_xrec *r) {
    xla x;
    init(&x, ctx);
    int ra = ad_xl_pref(r, 0), rb = ad_xl_pref(r, 1), o = r->n->out.ref;
    if (ra < 0 || rb < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor A and B");
    const ad_xval *A = &ctx->v[ra], *B = &ctx->v[rb];
    bool vec = B->ndim == 1;
    if (B->ndim == A->ndim - 1 && A->ndim >= 2) {
        vec = true;
        for (int j = 0; j < B->ndim - 1; j++) if (B->shape[j] != A->shape[j]) vec = false;
    }
    xmat m[2];
    int rc = mat_of(&x, ra, false, false, &m[0]);
    if (!rc) rc = mat_of(&x, rb, vec, false, &m[1]);
    if (!rc) rc = square(&x, &m[0]);
    if (!rc && m[1].r != m[0].r) rc = ad_xl_fail(ctx, "has operands of incompatible shapes");
    if (!rc) rc = batch_of(&x, m, 2);
    if (rc) return rc;
    need(ctx, XH_LUSOLVE);
    int64_t n = m[0].r, k = m[1].c;
    if (!begin(&x, &o, 1, "LU with partial pivoting, then the triangular solves (xc_la_lusolve)") || !n || !k)
        return finish_empty(&x, &o, 1);
    scratch(&x, "double", "a", n * n);
    scratch(&x, "long", "piv", n);
    scratch(&x, "double", "xb", n * k);
    open_batch(&x);
    load(&x, &m[0], "a");
    load(&x, &m[1], "xb");
    ad_buf_printf(x.b, "            xc_la_lu(a, %lld, %lld, piv);\n            xc_la_lusolve(a, %lld, piv, xb, %lld);\n",
                  (long long)n, (long long)n, (long long)n, (long long)k);
    store(&x, o, "xb", n, k, false);
    close_all(&x);
    return ADDSL_OK;
}

/* linalg_solve_triangular(A, B, upper, left, unitriangular): X A = B is
 * solved as A^T X^T = B^T, the other triangle. */
static int lower_trsolve(ad_xctx *ctx, const ad_xrec *r) {
    xla x;
    init(&x, ctx);
    bool upper, left = true, unit = false;
    if (!pbool(r, 2, &upper)) return ad_xl_fail(ctx, "needs a bool 'upper'");
    if ((ad_xl_pconst(r, 3).t != AD_TNONE && !pbool(r, 3, &left)) || (ad_xl_pconst(r, 4).t != AD_TNONE && !pbool(r, 4, &unit)))
        return ad_xl_fail(ctx, "needs bool 'left' and 'unitriangular'");
    int o = r->n->out.ref;
    if (o < 0) return ad_xl_fail(ctx, "needs one tensor output");
    xmat m[2];
    int rc = mat_of(&x, ad_xl_pref(r, 0), false, !left, &m[0]);
    if (!rc) rc = mat_of(&x, ad_xl_pref(r, 1), false, !left, &m[1]);
    if (!rc) rc = square(&x, &m[0]);
    if (!rc && m[1].r != m[0].r) rc = ad_xl_fail(ctx, "has operands of incompatible shapes");
    if (!rc) rc = batch_of(&x, m, 2);
    if (rc) return rc;
    need(ctx, XH_TRSOLVE);
    int64_t n = m[0].r, k = m[1].c;
    if (!begin(&x, &o, 1, "substitution (xc_la_trsolve)") || !n || !k) return finish_empty(&x, &o, 1);
    scratch(&x, "double", "a", n * n);
    scratch(&x, "double", "xb", n * k);
    open_batch(&x);
    load(&x, &m[0], "a");
    load(&x, &m[1], "xb");
    ad_buf_printf(x.b, "            xc_la_trsolve(a, %lld, xb, %lld, %d, %d);\n", (long long)n, (long long)k, left ? upper : !upper, unit);
    store(&x, o, "xb", n, k, !left);
    close_all(&x);
    return ADDSL_OK;
}

/* An int64 output written per batch entry from a long expression. */
static void store_int(xla *x, int ref, const char *expr, int64_t per, const char *idx) {
    char on[32];
    ad_export_vname(x->ctx, ref, on, sizeof on);
    if (idx) ad_buf_printf(x->b, "            for (long i = 0; i < %lld; i++) %s[bi*%lld + i] = (int64_t)(%s);\n", (long long)per, on,
                           (long long)per, expr);
    else ad_buf_printf(x->b, "            %s[bi] = (int64_t)(%s);\n", on, expr);
}

static int two_or_three_outs(ad_xctx *ctx, const ad_xrec *r, int n, int *outs) {
    const ad_targ *o = &r->n->out;
    if (o->nsub != n) return ad_xl_fail(ctx, "has an unexpected number of outputs");
    for (int k = 0; k < n; k++) if ((outs[k] = o->sub[k].ref) < 0) return ad_xl_fail(ctx, "needs tensor outputs");
    return ADDSL_OK;
}

/* linalg_cholesky_ex(A, upper, check_errors) -> (L, info). C cannot raise
 * check_errors' error: info says where the factor is not valid. */
static int lower_cholesky(ad_xctx *ctx, const ad_xrec *r) {
    xla x;
    init(&x, ctx);
    bool upper = false;
    if (ad_xl_pconst(r, 1).t != AD_TNONE && !pbool(r, 1, &upper)) return ad_xl_fail(ctx, "needs a bool 'upper'");
    int outs[2] = {-1, -1};
    xmat a;
    int rc = two_or_three_outs(ctx, r, 2, outs);
    if (!rc) rc = mat_of(&x, ad_xl_pref(r, 0), false, false, &a);
    if (!rc) rc = square(&x, &a);
    if (!rc) rc = batch_of(&x, &a, 1);
    if (rc) return rc;
    if (ctx->v[outs[1]].dt != AD_INT64) return ad_xl_fail(ctx, "needs an int64 info");
    need(ctx, XH_CHOL);
    int64_t n = a.r;
    if (!begin(&x, outs, 2, "Cholesky (xc_la_chol)")) return finish_empty(&x, outs, 2);
    scratch(&x, "double", "a", n * n);
    open_batch(&x);
    load(&x, &a, "a");
    ad_buf_printf(x.b, "            long info = xc_la_chol(a, %lld);\n", (long long)n);
    store(&x, outs[0], "a", n, n, upper);
    store_int(&x, outs[1], "info", 1, NULL);
    close_all(&x);
    return ADDSL_OK;
}

/* linalg_lu_factor_ex(A) -> (LU, pivots, info), pivots 1-based as getrf's. */
static int lower_lu_factor(ad_xctx *ctx, const ad_xrec *r) {
    xla x;
    init(&x, ctx);
    bool pivot = true;
    if (ad_xl_pconst(r, 1).t != AD_TNONE && (!pbool(r, 1, &pivot) || !pivot))
        return ad_xl_fail(ctx, "is lowered with pivot=true only");
    int outs[3] = {-1, -1, -1};
    xmat a;
    int rc = two_or_three_outs(ctx, r, 3, outs);
    if (!rc) rc = mat_of(&x, ad_xl_pref(r, 0), false, false, &a);
    if (!rc) rc = batch_of(&x, &a, 1);
    if (rc) return rc;
    if (ctx->v[outs[1]].dt != AD_INT64 || ctx->v[outs[2]].dt != AD_INT64) return ad_xl_fail(ctx, "needs int64 pivots and info");
    need(ctx, XH_LU);
    int64_t m = a.r, n = a.c, k = m < n ? m : n;
    if (!begin(&x, outs, 3, "LU with partial pivoting (xc_la_lu)")) return finish_empty(&x, outs, 3);
    scratch(&x, "double", "a", m * n);
    scratch(&x, "long", "piv", k);
    open_batch(&x);
    load(&x, &a, "a");
    ad_buf_printf(x.b, "            long info = xc_la_lu(a, %lld, %lld, piv);\n", (long long)m, (long long)n);
    store(&x, outs[0], "a", m, n, false);
    store_int(&x, outs[1], "piv[i] + 1", k, "i");
    store_int(&x, outs[2], "info", 1, NULL);
    close_all(&x);
    return ADDSL_OK;
}

/* linalg_qr(A, mode) -> (Q, R): "reduced", "complete" or "r" (Q empty). */
static int lower_qr(ad_xctx *ctx, const ad_xrec *r) {
    xla x;
    init(&x, ctx);
    ad_value mv = ad_xl_pconst(r, 1);
    const char *mode = mv.t == AD_TSTR ? mv.u.s->data : mv.t == AD_TNONE ? "reduced" : "";
    bool complete = !strcmp(mode, "complete"), ronly = !strcmp(mode, "r");
    if (!complete && !ronly && strcmp(mode, "reduced")) return ad_xl_fail(ctx, "needs mode \"reduced\", \"complete\" or \"r\"");
    int outs[2] = {-1, -1};
    xmat a;
    int rc = two_or_three_outs(ctx, r, 2, outs);
    if (!rc) rc = mat_of(&x, ad_xl_pref(r, 0), false, false, &a);
    if (!rc) rc = batch_of(&x, &a, 1);
    if (rc) return rc;
    need(ctx, XH_QR);
    int64_t m = a.r, n = a.c, k = m < n ? m : n, rr = complete ? m : k, qc = complete ? m : k;
    if (!begin(&x, outs, 2, "Householder QR (xc_la_qr)")) return finish_empty(&x, outs, 2);
    scratch(&x, "double", "a", m * n);
    scratch(&x, "double", "tau", k);
    if (!ronly) scratch(&x, "double", "q", m * qc);
    char rn[32];
    ad_export_vname(ctx, outs[1], rn, sizeof rn);
    if (ronly) {
        char qn[32];
        ad_export_vname(ctx, outs[0], qn, sizeof qn);
        ad_buf_printf(x.b, "        (void)%s; /* mode \"r\": Q is empty */\n", qn);
    }
    open_batch(&x);
    load(&x, &a, "a");
    ad_buf_printf(x.b, "            xc_la_qr(a, %lld, %lld, tau, %s, %lld);\n", (long long)m, (long long)n, ronly ? "0" : "q", (long long)qc);
    ad_buf_printf(x.b, "            for (long i = 0; i < %lld; i++) for (long j = 0; j < %lld; j++) %s[bi*%lld + i*%lld + j] = (%s)(j < i ? 0 : a[i*%lld + j]);\n",
                  (long long)rr, (long long)n, rn, (long long)(rr * n), (long long)n, ad_export_ctype(ctx->v[outs[1]].dt),
                  (long long)n);
    if (!ronly) store(&x, outs[0], "q", m, qc, false);
    close_all(&x);
    return ADDSL_OK;
}

/* linalg_matrix_exp(A): one scaling for the whole batch (the largest 1-norm,
 * as the library's amax over every matrix), then each matrix. */
static int lower_expm(ad_xctx *ctx, const ad_xrec *r) {
    xla x;
    init(&x, ctx);
    xmat a;
    int o = r->n->out.ref;
    if (o < 0) return ad_xl_fail(ctx, "needs one tensor output");
    int rc = mat_of(&x, ad_xl_pref(r, 0), false, false, &a);
    if (!rc) rc = square(&x, &a);
    if (!rc) rc = batch_of(&x, &a, 1);
    if (rc) return rc;
    need(ctx, XH_EXPM);
    int64_t n = a.r;
    if (!begin(&x, &o, 1, "scaling and squaring of a degree-18 Taylor polynomial (xc_la_expm)") || !n) return finish_empty(&x, &o, 1);
    scratch(&x, "double", "a", n * n);
    scratch(&x, "double", "e", n * n);
    scratch(&x, "double", "t", n * n);
    scratch(&x, "double", "u", n * n);
    ad_buf_puts(x.b, "        double norm = 0;\n        long s = 0;\n");
    open_batch(&x);
    load(&x, &a, "a");
    ad_buf_printf(x.b, "            norm = xc_la_norm1(a, %lld, norm);\n        }\n", (long long)n);
    ad_buf_puts(x.b, "        while (norm > 0.5) { norm = norm / 2; s++; }\n");
    open_batch(&x);
    load(&x, &a, "a");
    ad_buf_printf(x.b, "            xc_la_expm(a, %lld, s, %d, e, t, u);\n", (long long)n, XLA_EXPM_DEGREE);
    store(&x, o, "e", n, n, false);
    close_all(&x);
    return ADDSL_OK;
}

/* addr(self, vec1, vec2, beta, alpha): beta self + alpha vec1 vec2^T, self
 * broadcast (not read when beta is 0, as BLAS does not read C). */
static int lower_addr(ad_xctx *ctx, const ad_xrec *r) {
    int s = ad_xl_pref(r, 0), a = ad_xl_pref(r, 1), b = ad_xl_pref(r, 2), o = r->n->out.ref;
    double beta = 1, alpha = 1;
    if (s < 0 || a < 0 || b < 0 || o < 0) return ad_xl_fail(ctx, "needs tensor operands");
    if ((ad_xl_pconst(r, 3).t != AD_TNONE && !ad_xl_pnum(r, 3, &beta)) || (ad_xl_pconst(r, 4).t != AD_TNONE && !ad_xl_pnum(r, 4, &alpha)))
        return ad_xl_fail(ctx, "needs number beta and alpha");
    const ad_xval *S = &ctx->v[s], *A = &ctx->v[a], *B = &ctx->v[b], *O = &ctx->v[o];
    if (O->dt != AD_FLOAT32 && O->dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    if (A->ndim != 1 || B->ndim != 1 || O->ndim != 2 || S->ndim > 2) return ad_xl_fail(ctx, "needs 1-D vectors");
    int64_t ss[2] = {0, 0};
    for (int j = 0; j < S->ndim; j++) {
        int d = 2 - S->ndim + j;
        ss[d] = S->shape[j] == 1 ? 0 : S->st[j];
    }
    ad_xl_make_buf(ctx, o);
    char sn[32], an[32], bn[32], on[32];
    ad_export_vname(ctx, s, sn, sizeof sn);
    ad_export_vname(ctx, a, an, sizeof an);
    ad_export_vname(ctx, b, bn, sizeof bn);
    ad_export_vname(ctx, o, on, sizeof on);
    ad_xl_use(ctx, a);
    ad_xl_use(ctx, b);
    ad_xl_comment(ctx, beta == 0 ? "alpha outer(vec1, vec2)" : "beta self + alpha outer(vec1, vec2)");
    ad_buf *bf = ctx->body;
    const char *t = ad_export_ctype(O->dt);
    if (!O->numel) {
        ad_buf_printf(bf, "    (void)%s; (void)%s; (void)%s; (void)%s; /* empty */\n", sn, an, bn, on);
        return ADDSL_OK;
    }
    ctx->v[A->base].read = ctx->v[B->base].read = true;
    if (beta != 0) { ad_xl_use(ctx, s); ctx->v[S->base].read = true; }
    else ad_buf_printf(bf, "    (void)%s;\n", sn);
    ad_buf_printf(bf, "    for (long i = 0; i < %lld; i++)\n        for (long j = 0; j < %lld; j++)\n", (long long)O->shape[0],
                  (long long)O->shape[1]);
    ad_buf_printf(bf, "            %s[i*%lld + j] = (%s)", on, (long long)O->shape[1], t);
    ad_export_literal(bf, O->dt, alpha);
    ad_buf_printf(bf, " * (%s[%lld + i*%lld] * %s[%lld + j*%lld])", an, (long long)A->off, (long long)A->st[0], bn, (long long)B->off,
                  (long long)B->st[0]);
    if (beta != 0) {
        ad_buf_puts(bf, " + ");
        ad_export_literal(bf, O->dt, beta);
        ad_buf_printf(bf, " * %s[%lld + i*%lld + j*%lld]", sn, (long long)S->off, (long long)ss[0], (long long)ss[1]);
    }
    ad_buf_puts(bf, ";\n");
    return ADDSL_OK;
}

/* rs_named_tuple(type, fields, values): the library's named tuples (lu_unpack,
 * qr, ...) hold the same arrays as 'values': each output is its item. */
static int lower_named_tuple(ad_xctx *ctx, const ad_xrec *r) {
    const ad_targ *vals = r->np > 2 ? r->p[2].a : NULL, *o = &r->n->out;
    if (!vals || !vals->sub || vals->nsub != o->nsub) return ad_xl_fail(ctx, "needs a tuple of values");
    for (int k = 0; k < o->nsub; k++) {
        int src = vals->sub[k].ref, dst = o->sub[k].ref;
        if (dst < 0) continue;
        if (src < 0) return ad_xl_fail(ctx, "needs tensor items");
        ad_xval *d = &ctx->v[dst];
        const ad_xval *s = &ctx->v[src];
        d->kind = AD_XV_VIEW;
        d->base = s->base;
        d->off = s->off;
        d->ndim = s->ndim;
        for (int j = 0; j < s->ndim; j++) { d->shape[j] = s->shape[j]; d->st[j] = s->st[j]; }
        ad_xl_use(ctx, src);
    }
    ad_xl_comment(ctx, "its items are the values it names (no copy)");
    return ADDSL_OK;
}

int ad_export_lower_linalg(ad_xctx *ctx, const ad_xrec *r) {
    int id = ad_xl_op_id(r->n);
    if (id == AD_OP__NONE) return AD_XL_PASS;
    bool multi = r->n->out.sub != NULL;
    if (multi && r->n->kind == AD_TN_BUILTIN && id == AD_OP_rs_named_tuple) return lower_named_tuple(ctx, r);
    if (!multi && (id == AD_OP_det || id == AD_OP_linalg_det)) return lower_det_inv(ctx, r, 0);
    if (multi && (id == AD_OP_slogdet || id == AD_OP_linalg_slogdet)) return lower_det_inv(ctx, r, 1);
    if (!multi && (id == AD_OP_inverse || id == AD_OP_linalg_inv)) return lower_det_inv(ctx, r, 2);
    if (!multi && id == AD_OP_linalg_solve) return lower_solve(ctx, r);
    if (!multi && id == AD_OP_linalg_solve_triangular) return lower_trsolve(ctx, r);
    if (multi && id == AD_OP_linalg_cholesky_ex) return lower_cholesky(ctx, r);
    if (multi && id == AD_OP_linalg_lu_factor_ex) return lower_lu_factor(ctx, r);
    if (multi && id == AD_OP_linalg_qr) return lower_qr(ctx, r);
    if (!multi && id == AD_OP_linalg_matrix_exp) return lower_expm(ctx, r);
    if (!multi && id == AD_OP_addr) return lower_addr(ctx, r);
    return ad_export_lower_eig(ctx, r);
}

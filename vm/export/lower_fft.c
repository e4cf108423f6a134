/* export/lower_fft.c: export_c's lowering of _fft_c2c, the one transform kernel the
 * FFTs of lib/fft.ad are made of: builtins/bi_fft.c's mixed-radix
 * Cooley-Tukey recursion in double, written out in C99 with libm only. */
#include "export/lower.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "autograd/op.h"

/* bi_fft.c's transform for the lines of one dim: the same unit roots (exact
 * at the quarter turns), factorisation order and butterflies, so the C gives
 * the interpreter's values; lengths with a prime factor above 61, which the
 * interpreter does by Bluestein's algorithm, use the generic radix-p
 * butterfly here (the same transform, rounded differently). */
static const char fft_text[] =
    "typedef struct xc_cpx { double re, im; } xc_cpx;\n"
    "/* e^{-2 pi i j/n}, from the nearest quarter turn and an angle within pi/4 */\n"
    "static xc_cpx xc_fft_root(long j, long n) {\n"
    "    long q = (4 * j + n / 2) / n;\n"
    "    double phi = 1.57079632679489661923 * (double)(4 * j - q * n) / (double)n;\n"
    "    double c = cos(phi), s = sin(phi);\n"
    "    xc_cpx r;\n"
    "    switch (q & 3) {\n"
    "    case 0: r.re = c; r.im = -s; break;\n"
    "    case 1: r.re = -s; r.im = -c; break;\n"
    "    case 2: r.re = -c; r.im = s; break;\n"
    "    default: r.re = s; r.im = c; break;\n"
    "    }\n"
    "    return r;\n"
    "}\n"
    "static xc_cpx xc_cmul(xc_cpx a, xc_cpx b) {\n"
    "    xc_cpx r;\n"
    "    r.re = a.re * b.re - a.im * b.im;\n"
    "    r.im = a.re * b.im + a.im * b.re;\n"
    "    return r;\n"
    "}\n"
    "/* Decimation in time: out[q*m + k] the length-m transform of the q-th\n"
    " * subsequence, then radix-r butterflies in place (tw: the N roots, t: room\n"
    " * for the largest factor). */\n"
    "static void xc_fft_run(const long *fac, const xc_cpx *tw, long N, xc_cpx *t, xc_cpx *out, const xc_cpx *in, long n, long is, int f) {\n"
    "    long r = fac[f], m = n / r, tws = N / n, root = m * tws;\n"
    "    if (m == 1) for (long q = 0; q < r; q++) out[q] = in[q * is];\n"
    "    else for (long q = 0; q < r; q++) xc_fft_run(fac, tw, N, t, out + q * m, in + q * is, m, is * r, f + 1);\n"
    "    for (long k = 0; k < m; k++) {\n"
    "        t[0] = out[k];\n"
    "        for (long q = 1; q < r; q++) t[q] = xc_cmul(out[q * m + k], tw[q * k * tws]);\n"
    "        if (r == 2) {\n"
    "            out[k].re = t[0].re + t[1].re; out[k].im = t[0].im + t[1].im;\n"
    "            out[m + k].re = t[0].re - t[1].re; out[m + k].im = t[0].im - t[1].im;\n"
    "            continue;\n"
    "        }\n"
    "        if (r == 4) {\n"
    "            xc_cpx a0, a1, a2, a3;\n"
    "            a0.re = t[0].re + t[2].re; a0.im = t[0].im + t[2].im;\n"
    "            a1.re = t[0].re - t[2].re; a1.im = t[0].im - t[2].im;\n"
    "            a2.re = t[1].re + t[3].re; a2.im = t[1].im + t[3].im;\n"
    "            a3.re = t[1].im - t[3].im; a3.im = t[3].re - t[1].re;\n"
    "            out[k].re = a0.re + a2.re; out[k].im = a0.im + a2.im;\n"
    "            out[m + k].re = a1.re + a3.re; out[m + k].im = a1.im + a3.im;\n"
    "            out[2 * m + k].re = a0.re - a2.re; out[2 * m + k].im = a0.im - a2.im;\n"
    "            out[3 * m + k].re = a1.re - a3.re; out[3 * m + k].im = a1.im - a3.im;\n"
    "            continue;\n"
    "        }\n"
    "        for (long s = 0; s < r; s++) {\n"
    "            xc_cpx acc = t[0];\n"
    "            for (long q = 1; q < r; q++) {\n"
    "                xc_cpx v = xc_cmul(t[q], tw[(q * s % r) * root]);\n"
    "                acc.re += v.re;\n"
    "                acc.im += v.im;\n"
    "            }\n"
    "            out[s * m + k] = acc;\n"
    "        }\n"
    "    }\n"
    "}\n"
    "/* Every line of the complex array 'buf' (outer x n x inner) along its middle\n"
    " * dim: forward, or inverse as conj(F(conj(x))) (sign -1). */\n"
    "static void xc_fft_dim(xc_cpx *buf, long outer, long n, long inner, const long *fac, xc_cpx *tw, xc_cpx *t, xc_cpx *line, double sign) {\n"
    "    for (long j = 0; j < n; j++) tw[j] = xc_fft_root(j, n);\n"
    "    for (long o = 0; o < outer; o++)\n"
    "        for (long i = 0; i < inner; i++) {\n"
    "            xc_cpx *x = buf + o * n * inner + i;\n"
    "            for (long k = 0; k < n; k++) { line[k].re = x[k * inner].re; line[k].im = sign * x[k * inner].im; }\n"
    "            xc_fft_run(fac, tw, n, t, line + n, line, n, 1, 0);\n"
    "            for (long k = 0; k < n; k++) { x[k * inner].re = line[n + k].re; x[k * inner].im = sign * line[n + k].im; }\n"
    "        }\n"
    "}\n";

static void embed(ad_xctx *ctx) {
    ad_buf *d = ctx->prelude;
    if (d->data && strstr(d->data, "XC_FFT_KERNELS")) return;
    ad_buf_printf(d, "\n#ifndef XC_FFT_KERNELS /* builtins/bi_fft.c's transform */\n#define XC_FFT_KERNELS\n%s#endif\n", fft_text);
}

/* bi_fft.c's factorize: radix 4 first, then primes in increasing order. */
static int factorize(int64_t n, int64_t *fac, int64_t *largest) {
    int nf = 0;
    *largest = 1;
    while (n >= 4 && n % 4 == 0) { fac[nf++] = 4; n /= 4; *largest = 4; }
    for (int64_t p = 2; n > 1; p = p == 2 ? 3 : p + 2) {
        if (p * p > n) p = n;
        while (n % p == 0) {
            fac[nf++] = p;
            n /= p;
            if (p > *largest) *largest = p;
        }
    }
    return nf;
}

static int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }

/* "off + (q / P) % S * st + ...": element q (row-major) of x in its storage. */
static void flat_offset(ad_buf *b, const ad_xval *x, const char *q) {
    ad_buf_printf(b, "%lld", (long long)x->off);
    int64_t p = 1;
    for (int j = x->ndim - 1; j >= 0; j--) {
        if (x->shape[j] != 1 && x->st[j]) {
            ad_buf_printf(b, " + (%s", q);
            if (p != 1) ad_buf_printf(b, " / %lld", (long long)p);
            if (j > 0) ad_buf_printf(b, " %% %lld", (long long)x->shape[j]);
            ad_buf_printf(b, ")*%lld", (long long)x->st[j]);
        }
        p *= x->shape[j];
    }
}

/* _fft_c2c(self [..., 2], dim, normalization, forward). */
static int lower_c2c(ad_xctx *ctx, const ad_xrec *r) {
    int src = ad_xl_pref(r, 0), o = r->n->out.ref;
    if (src < 0 || o < 0) return ad_xl_fail(ctx, "needs a tensor input");
    const ad_xval *x = &ctx->v[src];
    if (x->dt != AD_FLOAT32 && x->dt != AD_FLOAT64) return ad_xl_fail(ctx, "is lowered for float32 and float64 only");
    if (x->ndim == 0 || x->shape[x->ndim - 1] != 2) return ad_xl_fail(ctx, "needs a [..., 2] complex input");
    int cnd = x->ndim - 1;
    int64_t dims[AD_MAX_DIMS];
    int nd = 0;
    double norm = 0, fwd = 0;
    if (ad_xl_pconst(r, 1).t == AD_TNONE) {
        nd = cnd;
        for (int k = 0; k < cnd; k++) dims[k] = k;
    } else if (!ad_xl_pints(r, 1, dims, &nd)) return ad_xl_fail(ctx, "needs constant dims");
    if (!ad_xl_pnum(r, 2, &norm) || !ad_xl_pnum(r, 3, &fwd)) return ad_xl_fail(ctx, "needs a constant normalization and direction");
    for (int k = 0; k < nd; k++) {
        if (dims[k] < 0) dims[k] += cnd;
        if (dims[k] < 0 || dims[k] >= cnd) return ad_xl_fail(ctx, "has a dim out of range");
    }
    int64_t count = x->numel / 2, maxn = 1, maxf = 1;
    double size = 1;
    for (int k = 0; k < nd; k++) {
        int64_t n = x->shape[dims[k]], fac[64], lg;
        size *= (double)n;
        if (n > maxn) maxn = n;
        if (n > 1) { factorize(n, fac, &lg); if (lg > maxf) maxf = lg; }
    }
    double scale = norm == 2 ? 1.0 / size : norm == 1 ? 1.0 / sqrt(size) : 1.0;
    embed(ctx);
    char in[32], out[32];
    ad_xl_open1(ctx, src, o, in, out, "mixed-radix FFT in double per line (xc_fft_dim)");
    ad_buf *b = ctx->body;
    if (!count) { ad_buf_printf(b, "    (void)%s; (void)%s; /* empty */\n", in, out); return ADDSL_OK; }
    ctx->v[x->base].read = true;
    int64_t scr = 0, cs = (int64_t)(2 * sizeof(double));
    ad_buf_printf(b, "    {\n        xc_cpx *buf = (xc_cpx *)(scratch + %lld);\n", (long long)scr);
    scr += align16(count * cs);
    ad_buf_printf(b, "        xc_cpx *tw = (xc_cpx *)(scratch + %lld);\n", (long long)scr);
    scr += align16(maxn * cs);
    ad_buf_printf(b, "        xc_cpx *t = (xc_cpx *)(scratch + %lld);\n", (long long)scr);
    scr += align16(maxf * cs);
    ad_buf_printf(b, "        xc_cpx *line = (xc_cpx *)(scratch + %lld);\n", (long long)scr);
    scr += align16(2 * maxn * cs);
    ad_buf_printf(b, "        for (long j = 0; j < %lld; j++) {\n            buf[j].re = %s[", (long long)count, in);
    flat_offset(b, x, "(2*j)");
    ad_buf_printf(b, "];\n            buf[j].im = %s[", in);
    flat_offset(b, x, "(2*j + 1)");
    ad_buf_puts(b, "];\n        }\n");
    for (int k = 0; k < nd; k++) {
        int64_t n = x->shape[dims[k]], outer = 1, inner = 1, fac[64], lg;
        for (int j = 0; j < cnd; j++) { if (j < dims[k]) outer *= x->shape[j]; else if (j > dims[k]) inner *= x->shape[j]; }
        if (n <= 1 || !outer || !inner) continue;
        int nf = factorize(n, fac, &lg);
        ad_buf_puts(b, "        {\n            static const long fac[] = {");
        for (int j = 0; j < nf; j++) ad_buf_printf(b, "%s%lld", j ? ", " : "", (long long)fac[j]);
        ad_buf_printf(b, "};\n            xc_fft_dim(buf, %lld, %lld, %lld, fac, tw, t, line, %s);\n        }\n", (long long)outer,
                      (long long)n, (long long)inner, fwd != 0 ? "1.0" : "-1.0");
    }
    const char *ct = ad_export_ctype(ctx->v[o].dt);
    ad_buf_printf(b, "        for (long j = 0; j < %lld; j++) {\n", (long long)count);
    if (scale == 1.0) {
        ad_buf_printf(b, "            %s[2*j] = (%s)buf[j].re;\n            %s[2*j + 1] = (%s)buf[j].im;\n        }\n", out, ct, out, ct);
        ad_buf_puts(b, "        (void)tw; (void)t; (void)line;\n    }\n");
    } else {
        ad_buf_printf(b, "            %s[2*j] = (%s)(buf[j].re * ", out, ct);
        ad_export_literal(b, AD_FLOAT64, scale);
        ad_buf_printf(b, ");\n            %s[2*j + 1] = (%s)(buf[j].im * ", out, ct);
        ad_export_literal(b, AD_FLOAT64, scale);
        ad_buf_puts(b, ");\n        }\n        (void)tw; (void)t; (void)line;\n    }\n");
    }
    if (scr > ctx->scratch) ctx->scratch = scr;
    return ADDSL_OK;
}

int ad_export_lower_fft(ad_xctx *ctx, const ad_xrec *r) {
    if (r->n->out.sub) return AD_XL_PASS;
    int id = r->n->op;
    if (id == AD_OP__fft_c2c || id == AD_OP_ad__fft_c2c) return lower_c2c(ctx, r);
    return AD_XL_PASS;
}
